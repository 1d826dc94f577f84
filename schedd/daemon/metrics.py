"""Prometheus metrics of the daemon (docs/daemon.md lists them with their meaning).

Counters and histograms are updated as things happen; gauges that describe the current
state (jobs by state, queue length, nodes, utilisation, clock lag) are read from the
daemon's job table when Prometheus scrapes, by a collector, so they cost nothing between
scrapes. Each daemon has its own registry (tests run several daemons in one process).

Names follow the Prometheus conventions: base units, `_total` counters, `_ratio` for
fractions. Quantities on the daemon's virtual clock end in `_virtual_seconds`; `_seconds`
alone is wall-clock time. Every labelled series whose label values are known in advance
is created at start, so a dashboard shows 0 rather than "no data". Names renamed since
0.1.0 are still exported, with the same values, under their old names (`ALIASES`) for
one release.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import grpc
from prometheus_client import (
    CollectorRegistry,
    Counter,
    GCCollector,
    Histogram,
    Info,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

PREFIX = "schedd_"

# Waits (virtual s) span 0 (started at once) to days: le=0 counts the jobs that did not
# wait, and histogram_quantile returns 0, not an interpolation, when the quantile is there.
WAIT_BUCKETS = (0, 1, 10, 30, 60, 300, 900, 1800, 3600, 7200, 14400, 28800, 43200, 86400,
                172800, 345600, 604800, float("inf"))
# Bounded slowdown is >= 1 and most jobs sit at exactly 1. histogram_quantile interpolates
# inside a bucket from the bucket below's bound, and from 0 inside the lowest bucket: with
# le=1 lowest, a p50 among jobs at 1 read 0.5. The empty bucket just under 1 makes the
# jobs at 1 a bucket (0.999999, 1], so every quantile reads >= 0.999999.
SLOWDOWN_FLOOR = 0.999999
SLOWDOWN_BUCKETS = (SLOWDOWN_FLOOR, 1, 1.1, 1.25, 1.5, 2, 3, 5, 10, 20, 50, 100, 200, 500,
                    1000, float("inf"))
ITERATION_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                     2.5, 5.0, 10.0, float("inf"))


@dataclass
class StateSnapshot:
    """What the scrape-time collector reads (built by the daemon on demand)."""

    jobs: dict[tuple[str, str], int] = field(default_factory=dict)  # (state, class) -> n
    queue: dict[str, int] = field(default_factory=dict)  # class -> waiting jobs
    oldest_wait: dict[str, float] = field(default_factory=dict)  # class -> longest wait now
    nodes: dict[str, int] = field(default_factory=dict)  # busy/free/down/reserved
    utilisation: float = 0.0
    virtual_time: float = 0.0
    engine_time: float = 0.0
    clock_lag: float = 0.0  # virtual seconds
    mqtt_connected: float = 0.0
    watch_streams: int = 0  # open WatchEvents streams
    event_seq: int = 0  # sequence number of the last event published


# Old name (0.1.0) -> new name; the old names go one release after the rename.
ALIASES = {
    "schedd_utilisation": "schedd_utilization_ratio",
    "schedd_wait_seconds": "schedd_wait_virtual_seconds",
    "schedd_queue_oldest_wait_seconds": "schedd_queue_oldest_wait_virtual_seconds",
    "schedd_virtual_time_seconds": "schedd_clock_time_virtual_seconds",
    "schedd_engine_time_seconds": "schedd_engine_time_virtual_seconds",
}

# Label values known before anything happens (the series start at 0).
CLASSES = ("batch", "realtime", "ondemand", "malleable", "dedicated")
FINAL_STATES = ("completed", "killed", "cancelled", "failed")
# pending: accepted, not yet in the engine (records.PENDING); then the engine's states.
JOB_STATES = ("pending", "queued", "running", "checkpointing", "preempted", *FINAL_STATES)
PREEMPT_CAUSES = ("preempt", "node-failure", "preempt:jit", "preempt:warning")
CHECKPOINT_KINDS = ("checkpoint", "warning")
ECC_KINDS = ("ET", "RT", "EP", "RP")
ECC_OUTCOMES = ("applied", "rejected")
NOTICE_SOURCES = ("rpc", "mqtt")
MQTT_KINDS = ("event", "control", "rejection")
MQTT_REJECT_REASONS = ("anonymous", "unknown_user", "unknown_command", "malformed",
                       "invalid", "permission", "internal")  # mqtt.Refusal.reason


def rpc_methods() -> tuple[str, ...]:
    from ..v1 import scheduler_pb2 as pb

    return tuple(m.name for m in pb.DESCRIPTOR.services_by_name["Scheduler"].methods)


class _StateCollector(Collector):
    def __init__(self, snapshot: Callable[[], StateSnapshot], speedup: Callable[[], float]):
        self._snapshot = snapshot
        self._speedup = speedup

    def describe(self) -> Iterable[Metric]:
        """The families without reading live state (called at registration)."""
        return self._families(StateSnapshot())

    def collect(self) -> Iterable[Metric]:
        return self._families(self._snapshot())

    def _families(self, s: StateSnapshot) -> Iterable[Metric]:
        jobs = GaugeMetricFamily(PREFIX + "jobs", "Jobs known to the daemon, by state and "
                                 "class.", labels=["state", "class"])
        # Every state and class, 0 when there is none, so that panels never say "no data".
        counts = {(state, cls): 0 for state in JOB_STATES for cls in CLASSES} | s.jobs
        for (state, cls), n in sorted(counts.items()):
            jobs.add_metric([state, cls], n)
        queue = GaugeMetricFamily(PREFIX + "queue_length", "Waiting jobs (queued or "
                                  "preempted), by class.", labels=["class"])
        for cls, n in sorted(({cls: 0 for cls in CLASSES} | s.queue).items()):
            queue.add_metric([cls], n)
        oldest = [GaugeMetricFamily(name, "Virtual seconds the longest-waiting job of each "
                                    "class has waited so far." + note, labels=["class"])
                  for name, note in _named("schedd_queue_oldest_wait_virtual_seconds")]
        for family in oldest:
            for cls, wait in sorted(({cls: 0.0 for cls in CLASSES} | s.oldest_wait).items()):
                family.add_metric([cls], wait)
        nodes = GaugeMetricFamily(PREFIX + "nodes", "Nodes by status: busy (held by a "
                                  "job), free, down (failed), reserved (idle in a "
                                  "reservation).", labels=["status"])
        for status, n in sorted(s.nodes.items()):
            nodes.add_metric([status], n)
        yield jobs
        yield queue
        yield from oldest
        yield nodes
        gauges = (
            ("schedd_utilization_ratio", "Busy nodes over nodes that are up (0 to 1).",
             s.utilisation),
            ("schedd_clock_time_virtual_seconds", "The daemon clock's virtual time.",
             s.virtual_time),
            ("schedd_engine_time_virtual_seconds", "Virtual time up to which the engine has "
             "handled events.", s.engine_time),
        )
        for new, text, value in gauges:
            for name, note in _named(new):
                yield GaugeMetricFamily(name, text + note, value=value)
        yield GaugeMetricFamily(PREFIX + "clock_lag_virtual_seconds", "Virtual seconds the "
                                "engine is behind the clock.", value=s.clock_lag)
        speedup = self._speedup()
        yield GaugeMetricFamily(PREFIX + "clock_lag_seconds", "Wall seconds the engine is "
                                "behind the clock: the virtual lag over the speed-up (0 on "
                                "a lockstep clock, which waits for the engine).",
                                value=s.clock_lag / speedup if speedup > 0 else 0.0)
        yield GaugeMetricFamily(PREFIX + "mqtt_connected", "1 while the MQTT broker is "
                                "connected.", value=s.mqtt_connected)
        yield GaugeMetricFamily(PREFIX + "watch_streams", "WatchEvents streams open.",
                                value=s.watch_streams)
        yield GaugeMetricFamily(PREFIX + "event_seq", "Sequence number of the last event "
                                "published (WatchEvents; restarts at 1 with each epoch).",
                                value=s.event_seq)


def _named(new: str) -> list[tuple[str, str]]:
    """(name, help suffix) of a series: its name, then any deprecated alias of it."""
    return [(new, "")] + [(old, f" Deprecated alias of {new}.")
                          for old, target in ALIASES.items() if target == new]


class _Aliased:
    """A counter or histogram written under its name and a deprecated old one."""

    def __init__(self, new: Any, old: Any):
        self._both = (new, old)

    def labels(self, *values: str, **named: str) -> _Aliased:
        new, old = self._both
        return _Aliased(new.labels(*values, **named), old.labels(*values, **named))

    def observe(self, value: float) -> None:
        for metric in self._both:
            metric.observe(value)


class DaemonMetrics:
    """Every metric the daemon exports; `names()` lists them for docs and tests."""

    def __init__(self, snapshot: Callable[[], StateSnapshot] | None = None,
                 speedup: float = 1.0):
        self.registry = CollectorRegistry(auto_describe=True)
        self.speedup = speedup  # of the clock: wall lag = virtual lag / speed-up
        r = self.registry
        self.submissions = Counter(PREFIX + "submissions", "Jobs accepted.", ["class"],
                                   registry=r)
        self.starts = Counter(PREFIX + "starts", "Job starts (first starts and restarts).",
                              ["class"], registry=r)
        self.completions = Counter(PREFIX + "completions", "Jobs that reached a final "
                                   "state, by class and state.", ["class", "state"],
                                   registry=r)
        self.preemptions = Counter(PREFIX + "preemptions", "Running jobs preempted (any "
                                   "scheme) or requeued by a failure.", ["class", "cause"],
                                   registry=r)
        self.checkpoints = Counter(PREFIX + "checkpoints", "Preemption checkpoints and "
                                   "warnings the scheduler asked jobs for.", ["kind"],
                                   registry=r)
        self.checkpoint_timeouts = Counter(PREFIX + "checkpoint_timeouts", "JIT checkpoints "
                                           "never reported: job killed and requeued.",
                                           registry=r)
        self.eccs = Counter(PREFIX + "eccs", "Elastic control commands handled, by kind and "
                            "outcome.", ["kind", "outcome"], registry=r)
        self.notices = Counter(PREFIX + "notices", "Advance notices accepted, by source.",
                               ["source"], registry=r)
        wait = [Histogram(name, "Wait from submission to first start (virtual seconds), "
                          "by class." + note, ["class"], buckets=WAIT_BUCKETS, registry=r)
                for name, note in _named("schedd_wait_virtual_seconds")]
        self.wait = _Aliased(*wait)
        self.bounded_slowdown = Histogram(PREFIX + "bounded_slowdown", "Bounded slowdown "
                                          "(10 s bound) of finished jobs, by class.",
                                          ["class"], buckets=SLOWDOWN_BUCKETS, registry=r)
        self.iteration = Histogram(PREFIX + "iteration_seconds", "Wall time of one "
                                   "scheduling iteration (stimuli, events and policy "
                                   "passes).", buckets=ITERATION_BUCKETS, registry=r)
        self.policy_pass = Histogram(PREFIX + "policy_pass_seconds", "Wall time of one "
                                     "policy pass, by the policy that produced the plan.",
                                     ["policy"], buckets=ITERATION_BUCKETS, registry=r)
        self.budget_overruns = Counter(PREFIX + "budget_overruns", "Policy passes cut off "
                                       "at the wall-clock budget (the fallback decided).",
                                       ["policy"], registry=r)
        self.mqtt_published = Counter(PREFIX + "mqtt_published", "MQTT messages published.",
                                      ["kind"], registry=r)
        self.mqtt_publish_failures = Counter(PREFIX + "mqtt_publish_failures", "MQTT "
                                             "messages that could not be published (broker "
                                             "down or queue full).", registry=r)
        self.mqtt_rejected = Counter(PREFIX + "mqtt_rejected", "MQTT commands refused, "
                                     "by reason (docs/mqtt.md): nothing was changed.",
                                     ["reason"], registry=r)
        self.rpc_requests = Counter(PREFIX + "rpc_requests", "gRPC calls by method and "
                                    "status code.", ["method", "code"], registry=r)
        self.rpc_seconds = Histogram(PREFIX + "rpc_seconds", "Wall time to answer a gRPC "
                                     "call (streams: until the stream ends), by method.",
                                     ["method"], buckets=ITERATION_BUCKETS, registry=r)
        self.info = Info(PREFIX + "daemon", "How this daemon runs: version, cluster, policy, "
                         "fallback, budget, clock, speed-up.", registry=r)
        self.journal_commit = Histogram(PREFIX + "journal_commit_seconds", "Wall time of one "
                                        "journal commit (a group of stimuli, synced).",
                                        buckets=ITERATION_BUCKETS, registry=r)
        self.journal_write_errors = Counter(PREFIX + "journal_write_errors", "Journal "
                                            "writes that failed (disk full, I/O error): "
                                            "a request refused with UNAVAILABLE, or a "
                                            "progress mark retried.", registry=r)
        self.busy_refusals = Counter(PREFIX + "busy_refusals", "Requests refused with "
                                     "RESOURCE_EXHAUSTED because too many were waiting for "
                                     "the journal (SCHEDD_MAX_WAITING).", registry=r)
        self.watch_cutoffs = Counter(PREFIX + "watch_cutoffs", "WatchEvents streams "
                                     "ended with RESOURCE_EXHAUSTED because they fell more "
                                     "than SCHEDD_WATCH_BACKLOG_BYTES behind.", registry=r)
        self.engine_failures = Counter(PREFIX + "engine_failures", "Exceptions that escaped "
                                       "an engine step or a policy pass; each one stops "
                                       "the daemon (exit status 3) for a restart.",
                                       registry=r)
        self._start_at_zero()
        if snapshot is not None:
            r.register(_StateCollector(snapshot, lambda: self.speedup))
            # The usual process_* and python_info series (CPU, memory, start time).
            ProcessCollector(registry=r)
            PlatformCollector(registry=r)
            GCCollector(registry=r)  # python_gc_*: collections by generation (heap.py)

    def _start_at_zero(self) -> None:
        """Create every labelled series whose label values are known now."""
        for cls in CLASSES:
            for metric in (self.submissions, self.starts, self.wait, self.bounded_slowdown):
                metric.labels(cls)
            for state in FINAL_STATES:
                self.completions.labels(cls, state)
            for cause in PREEMPT_CAUSES:
                self.preemptions.labels(cls, cause)
        for kind in CHECKPOINT_KINDS:
            self.checkpoints.labels(kind)
        for kind in ECC_KINDS:
            for outcome in ECC_OUTCOMES:
                self.eccs.labels(kind, outcome)
        for source in NOTICE_SOURCES:
            self.notices.labels(source)
        for kind in MQTT_KINDS:
            self.mqtt_published.labels(kind)
        for reason in MQTT_REJECT_REASONS:
            self.mqtt_rejected.labels(reason)
        for method in rpc_methods():  # latency (rpc_seconds) only once called
            for code in grpc.StatusCode:
                self.rpc_requests.labels(method, code.name)

    def start_policies(self, *names: str) -> None:
        """The policy series (primary and fallback) at 0, once their names are known."""
        for name in names:
            self.budget_overruns.labels(name)
            self.policy_pass.labels(name)

    def names(self) -> set[str]:
        """Every series name a scrape can show, labelled children or not yet."""
        suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"),
                    "gauge": ("",), "info": ("_info",)}
        return {metric.name + suffix for metric in self.registry.collect()
                for suffix in suffixes.get(metric.type, ("",))}
