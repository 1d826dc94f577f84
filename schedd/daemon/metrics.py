"""Prometheus metrics of the daemon (docs/daemon.md lists them with their meaning).

Counters and histograms are updated as things happen; gauges that describe the current
state (jobs by state, queue length, nodes, utilisation, clock lag) are read from the
daemon's job table when Prometheus scrapes, by a collector, so they cost nothing between
scrapes. Each daemon has its own registry (tests run several daemons in one process).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    Info,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

PREFIX = "schedd_"

# Wait times span seconds to days; slowdowns 1 to thousands.
WAIT_BUCKETS = (0, 10, 60, 300, 900, 1800, 3600, 7200, 14400, 28800, 86400, 172800,
                float("inf"))
SLOWDOWN_BUCKETS = (1, 1.5, 2, 3, 5, 10, 20, 50, 100, 500, 1000, float("inf"))
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
    clock_lag: float = 0.0
    mqtt_connected: float = 0.0


class _StateCollector(Collector):
    def __init__(self, snapshot: Callable[[], StateSnapshot]):
        self._snapshot = snapshot

    def describe(self) -> Iterable[Metric]:
        """The families without reading live state (called at registration)."""
        return self._families(StateSnapshot())

    def collect(self) -> Iterable[Metric]:
        return self._families(self._snapshot())

    def _families(self, s: StateSnapshot) -> Iterable[Metric]:
        jobs = GaugeMetricFamily(PREFIX + "jobs", "Jobs known to the daemon, by state and "
                                 "class.", labels=["state", "class"])
        for (state, cls), n in sorted(s.jobs.items()):
            jobs.add_metric([state, cls], n)
        queue = GaugeMetricFamily(PREFIX + "queue_length", "Waiting jobs (queued or "
                                  "preempted), by class.", labels=["class"])
        for cls, n in sorted(s.queue.items()):
            queue.add_metric([cls], n)
        oldest = GaugeMetricFamily(PREFIX + "queue_oldest_wait_seconds", "Virtual seconds "
                                   "the longest-waiting job of each class has waited so far.",
                                   labels=["class"])
        for cls, wait in sorted(s.oldest_wait.items()):
            oldest.add_metric([cls], wait)
        nodes = GaugeMetricFamily(PREFIX + "nodes", "Nodes by status: busy (held by a "
                                  "job), free, down (failed), reserved (idle in a "
                                  "reservation).", labels=["status"])
        for status, n in sorted(s.nodes.items()):
            nodes.add_metric([status], n)
        yield jobs
        yield queue
        yield oldest
        yield nodes
        yield GaugeMetricFamily(PREFIX + "utilisation", "Busy nodes over nodes that are up.",
                                value=s.utilisation)
        yield GaugeMetricFamily(PREFIX + "virtual_time_seconds", "The daemon clock's "
                                "virtual time.", value=s.virtual_time)
        yield GaugeMetricFamily(PREFIX + "engine_time_seconds", "Virtual time up to which "
                                "the engine has handled events.", value=s.engine_time)
        yield GaugeMetricFamily(PREFIX + "clock_lag_seconds", "Virtual seconds the engine "
                                "is behind the clock's speed-up schedule.", value=s.clock_lag)
        yield GaugeMetricFamily(PREFIX + "mqtt_connected", "1 while the MQTT broker is "
                                "connected.", value=s.mqtt_connected)


class DaemonMetrics:
    """Every metric the daemon exports; `names()` lists them for docs and tests."""

    def __init__(self, snapshot: Callable[[], StateSnapshot] | None = None):
        self.registry = CollectorRegistry(auto_describe=True)
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
        self.wait = Histogram(PREFIX + "wait_seconds", "Wait from submission to first start "
                              "(virtual seconds), by class.", ["class"],
                              buckets=WAIT_BUCKETS, registry=r)
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
        self.engine_failures = Counter(PREFIX + "engine_failures", "Exceptions that escaped "
                                       "an engine step or a policy pass; each one stops "
                                       "the daemon (exit status 3) for a restart.",
                                       registry=r)
        if snapshot is not None:
            r.register(_StateCollector(snapshot))
            # The usual process_* and python_info series (CPU, memory, start time).
            ProcessCollector(registry=r)
            PlatformCollector(registry=r)

    def names(self) -> set[str]:
        """Every series name a scrape can show, labelled children or not yet."""
        suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"),
                    "gauge": ("",), "info": ("_info",)}
        return {metric.name + suffix for metric in self.registry.collect()
                for suffix in suffixes.get(metric.type, ("",))}
