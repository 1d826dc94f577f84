"""Hybrid on-demand / rigid / malleable scheduling on Theta (the hybrid paper's §V-A and
§V-C): `easy` against the six mechanisms of `hybrid` on the workloads W1..W5.

    .venv/bin/python experiments/hybrid.py [PART ...] [--seeds N] [--fail-seeds N]
                                           [--trace SWF] [--workers W] [--markdown FILE]
                                           [--scheduler ADDR] [--cache DIR]

PART is any of `main`, `failures`, `overhead`, `saturated` (default: all, in that order):

* main (§V-A, Figs. 6 and Table III): workloads W1..W5 (Table II) made from the trace by
  `schedd.traces.hybrid.make_hybrid` with seeds 1..N; on each, `easy` (FCFS + EASY, on-demand
  jobs as ordinary jobs: the paper's baseline) and `hybrid` with notice=n|cua|cup x
  arrival=paa|spaa over `easy`. No failures.
* failures (§V-C, Fig. 8 at Daly's interval): W5 with node failures at a system MTBF of
  5 h and of 50 h (MTTR 6 h, exponential), seeds 1..--fail-seeds, the same 7 policies;
  rigid jobs checkpoint at Daly's optimum for that MTBF.
* overhead: W5, seeds 1..N, the six mechanisms with the preemption order by overhead
  seconds (`overhead=time`, the default and the main part's) against overhead seconds x
  nodes (`overhead=node-time`): the paper orders by "preemption overheads" without saying
  whether a job's size counts.
* saturated: W5, seeds 1..--fail-seeds, the 7 policies with Daly's interval for a 5 h MTBF
  but no failures: checkpoints then add about 12% of the machine to Theta's 84% load, `easy`
  runs at 95% busy, and every node-hour an interruption wastes lengthens the makespan.
* utilisation: W5, seeds 1..--fail-seeds, the 7 policies recording segments and the
  machine's time series, and the utilisation measured four ways (busy or less the waste;
  over the makespan or over the submission window, `utilization_window`) plus the
  unweighted mean over state changes that a per-event utilisation log gives: where the
  paper's +5 points could come from (docs/hybrid_experiments.md, "Paper vs ours").

The job model is the paper's (`schedd simulate --ckpt daly --ckpt-cost hybrid
--no-restart-read --daly-mtbf 50`): rigid jobs checkpoint at Daly's optimum (for an MTBF of
`--daly-mtbf` hours without failures, default 50: the paper does not say which MTBF its
default runs assume, and only a long one reproduces its baseline — easy at about 84%
utilisation, 15.6 h turnaround, 22.7% instant start; see the saturated part),
600 s per checkpoint below 1,024 nodes and 1,200 s otherwise, a resumed job pays its setup
and no checkpoint read; malleable jobs get the 120 s warning. The machine is a node pool of
the trace's MaxNodes. The engine seed (failures) is the workload seed. Every policy of a
(mix, seed) runs on the same workload, so comparisons are paired; W1..W5 of one seed share
their jobs and differ only in the notices.

Metrics (summary keys of `schedd.metrics`): prompt = on-demand jobs started within the
120 s warning of their arrival (the paper's "instant start", which ignores the time to
vacate nodes); instant = started at their arrival exactly; utilisation = the paper's
(busy node-time minus what interruptions wasted, over the machine's capacity for the
makespan: `utilization_excl_waste`); productive = kept compute only (setup, checkpoints and
waste left out); turnaround = end - submit of started jobs, overall and per class (rigid =
class B, "batch"); preempted = share of rigid / malleable jobs preempted at least once.
Seed means; "min" is the lowest seed.

Acceptance (issue 8): for every workload, every mechanism's mean prompt ratio > 90% and
its mean utilisation no more than 2 points below easy's.

One simulation takes 0.35 s (easy) to about 2 s (CUP) on a quiet core of this machine. The
default run (10 seeds, as the paper's ten traces; 350 + 42 + 60 = 452 simulations) took
15 minutes on 2 processes with other work on the machine (load average about 3), about 10
on a quiet one; `--seeds 1 --fail-seeds 1` (55 simulations) about 1.5 minutes. The
workloads run through `schedd.sweep.tasks` (docs/sweep.md): a local Dask cluster of
--workers processes (0: in this process) or an existing one (--scheduler); with --cache
DIR each workload's results are kept, so a rerun or an added part simulates only what is
missing.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from schedd.core.checkpoint import CheckpointPolicy  # noqa: E402
from schedd.core.cluster import NodePool  # noqa: E402
from schedd.core.decisions import Decision, Preempt, Start  # noqa: E402
from schedd.core.engine import EngineOptions  # noqa: E402
from schedd.core.results import CLASS_CODES  # noqa: E402
from schedd.policies import make_policy  # noqa: E402
from schedd.run_files import timeseries_table  # noqa: E402
from schedd.sim import simulate  # noqa: E402
from schedd.sweep.dask_client import where  # noqa: E402
from schedd.sweep.tasks import TaskRunner, add_task_arguments  # noqa: E402
from schedd.traces import normalize, read_trace  # noqa: E402
from schedd.traces.hybrid import MIXES, HybridParams, make_hybrid  # noqa: E402

TRACE = ROOT.parent / "shared" / "traces" / "theta_2023.swf"
PARTS = ("main", "failures", "overhead", "saturated", "utilisation")
MECHANISMS = tuple((n, a) for n in ("n", "cua", "cup") for a in ("paa", "spaa"))
MTBFS_H = (5.0, 50.0)
DALY_MTBF_H = 50.0  # Daly's interval without failures (--daly-mtbf)
SATURATED_DALY_H = 5.0
MTTR_H = 6.0
ARRIVAL_SCALES = (1.0, 0.9, 0.8)  # utilisation part: the trace, then its arrivals compressed
GRACE_S = 120.0  # the malleable jobs' warning: the prompt-start grace
RELEASE_AFTER_S = 600.0  # hybrid's release_after (the paper's 10 minutes)
OFTEN = 5  # "preempted often": at least this many preemptions of one job
QUICK_S = 3600.0  # a preemption this soon after the job's (re)start counts as quick
PROMPT_TARGET = 0.90
UTIL_LOSS_MAX = 0.02
COUNTERS = ("served_at_arrival", "waited", "preempted_rigid", "preempted_malleable",
            "shrinks", "cup_preemptions", "loans", "loans_preempted", "expired_claims",
            "returned_restarts", "returned_expands")


@dataclass(frozen=True)
class Run:
    """One simulation on a workload: a label, the policy and its options, failures."""

    label: str
    policy: str
    opts: tuple[str, ...] = ()
    mtbf_h: float = 0.0  # failures (0: none)
    daly_h: float = DALY_MTBF_H  # the MTBF Daly's interval assumes without failures
    record: bool = False  # keep segments and the time series (the utilisation part)


def mech_label(notice: str, arrival: str) -> str:
    return f"{notice.upper()}&{arrival.upper()}"


def mech_runs(overhead: str = "time", suffix: str = "", mtbf_h: float = 0.0
              ) -> tuple[Run, ...]:
    return tuple(Run(mech_label(n, a) + suffix, "hybrid",
                     (f"notice={n}", f"arrival={a}", f"overhead={overhead}"), mtbf_h)
                 for n, a in MECHANISMS)


ALL_POLICIES = (Run("easy", "easy"),) + mech_runs()
POLICY_LABELS = tuple(r.label for r in ALL_POLICIES)
MECH_LABELS = POLICY_LABELS[1:]


def engine_options(run: Run) -> EngineOptions:
    """The paper's job model; as `schedd simulate --ckpt daly --ckpt-cost hybrid
    --no-restart-read --daly-mtbf D [--mtbf H --mttr 6]` sets it (with failures, Daly's
    interval is the one for their MTBF)."""
    return EngineOptions(
        checkpoint=CheckpointPolicy(periodic="daly", cost_model="hybrid", restart_read=False,
                                    daly_mtbf=(run.mtbf_h or run.daly_h) * 3600.0),
        mtbf_s=run.mtbf_h * 3600.0, mttr_s=MTTR_H * 3600.0)


# ----------------------------------------------------------------------------- workers

_TRACES: dict[str, Any] = {}  # per worker process: the input trace, read once


def _workload(trace_path: str, mix: str, seed: int, scale: float = 1.0):
    """The hybrid workload of (mix, seed); with `scale` < 1 the trace's submit times are
    first multiplied by it (every inter-arrival shrinks alike: offered load / scale)."""
    if trace_path not in _TRACES:
        _TRACES[trace_path] = read_trace(trace_path)
    raw = _TRACES[trace_path]
    if scale != 1.0:
        submit = raw.columns["submit"]
        t0 = float(submit.min())
        raw = replace(raw, columns=dict(raw.columns, submit=t0 + (submit - t0) * scale))
    marked, stats = make_hybrid(raw, HybridParams(mix=mix, seed=seed))
    return normalize(marked), stats


def run_task(trace_path: str, mix: str, seed: int, runs: tuple[Run, ...], scale: float = 1.0
             ) -> tuple[dict[str, Any], dict[str, dict]]:
    """Every run on the workload (mix, seed[, arrival scale]), generated once: the
    workload's figures and each run's metrics by label (plain data, as tasks return)."""
    trace, wstats = _workload(trace_path, mix, seed, scale)
    submit = trace.columns["submit"]
    span = float(submit.max() - submit.min())
    wstats = dict(wstats, offered_load=sum(wstats["node_hours_by_class"].values()) * 3600.0
                  / (trace.max_nodes * span))
    out: dict[str, dict] = {}
    for run in runs:
        cluster = NodePool(trace.max_nodes)
        policy = make_policy(run.policy, list(run.opts), cluster)
        watch = Watch(policy)
        started = time.perf_counter()
        result = simulate(trace, cluster, policy, seed=seed,
                          engine_options=engine_options(run), record=run.record)
        m = run_metrics(result.summary, result.results, cluster.total_nodes, trace.columns)
        if result.recorder is not None:
            m.update(utilisation_views(result.summary, result.results, result.recorder,
                                       cluster.total_nodes))
        m["seconds"] = time.perf_counter() - started
        m["quick"] = watch.quick
        stats = getattr(policy, "stats", None)
        m["counters"] = dict(stats()) if stats is not None else {}
        out[run.label] = m
    return wstats, out


class Watch:
    """Counts preemptions of jobs that started (or restarted) less than QUICK_S before:
    the policy's decisions as they pass to the engine (which applies them all)."""

    def __init__(self, policy: Any):
        self.inner = policy.schedule
        self.last_start: dict[int, float] = {}
        self.quick = 0
        policy.schedule = self.schedule  # the engine calls policy.schedule(view)

    def schedule(self, view: Any) -> list[Decision]:
        decisions = self.inner(view)
        now = view.now
        for d in decisions:
            if isinstance(d, Start):
                self.last_start[d.job_id] = now
            elif isinstance(d, Preempt) and now - self.last_start.get(d.job_id, -QUICK_S) \
                    < QUICK_S:
                self.quick += 1
        return decisions


def run_metrics(s: dict[str, Any], res: dict[str, np.ndarray], total: int,
                trace_cols: dict[str, np.ndarray]) -> dict[str, Any]:
    by = s["stats"]["by_class"]
    pre = s["preemption_ratio_by_class"]
    capacity = total * s["makespan_s"]

    def response(cls: str) -> float:
        return float(by[cls]["response_s"]["mean"]) if cls in by else float("nan")

    rigid = res["job_class"] == CLASS_CODES.index("B")
    preemptions = res["preemptions"]
    return {
        "prompt": float(s["ondemand_prompt_start_ratio"]),
        "instant": float(s["ondemand_instant_start_ratio"]),
        "util": float(s["utilization_excl_waste"]),
        "productive": float(s["productive_utilization"]),
        "busy": float(s["utilization"]),
        "waste": float(s["utilization"] - s["utilization_excl_waste"]),
        "lost": float(s["lost_node_h"]) * 3600.0 / capacity,
        "makespan": float(s["makespan_s"]),
        "resp": float(s["mean_response_s"]),
        "resp_rigid": response("batch"),
        "resp_mall": response("malleable"),
        "resp_od": response("ondemand"),
        "pre_rigid": float(pre.get("batch", 0.0)),
        "pre_mall": float(pre.get("malleable", 0.0)),
        "often_rigid": int(np.count_nonzero(preemptions[rigid] >= OFTEN)),
        "often_mall": int(np.count_nonzero(preemptions[~rigid] >= OFTEN)),
        "most": int(preemptions.max(initial=0)),
        "failures": int(s["failures"]),
        "killed": int(s["final_states"]["killed"]),
        "not_completed": int(s["jobs"] - s["final_states"]["completed"]),
        **late_ondemand(res, total, trace_cols),
    }


def utilisation_views(s: dict[str, Any], res: dict[str, np.ndarray], rec: Any, total: int
                      ) -> dict[str, float]:
    """The ways a paper could have measured utilisation (the utilisation part):
    * window: busy node-time inside [first submit, last submit] over that window's
      capacity (exact, from the segments), and the same less the waste (all interruptions
      happen while jobs arrive, so the waste is all inside the window);
    * events: the mean of busy nodes / N over the instants at which the machine's state
      changed, unweighted by how long each state lasted (a simulator that logs the
      utilisation at every event, as CQSim's .ult log does, and averages the lines), over
      the whole run and over the submission window."""
    lo, hi = float(res["submit"].min()), float(res["submit"].max())
    waste = float(res["waste_node_s"].sum()) / (total * (hi - lo))
    series = timeseries_table(rec)  # the state after every instant it changed
    t = series["time"]
    busy = series["busy_nodes"].astype(np.float64) / total
    inside = (t >= lo) & (t <= hi)
    return {"window": float(s["utilization_window"]),
            "window_excl_waste": float(s["utilization_window"]) - waste,
            "events": float(busy.mean()), "events_window": float(busy[inside].mean()),
            "instants": float(len(t))}


def late_ondemand(res: dict[str, np.ndarray], total: int, cols: dict[str, np.ndarray]
                  ) -> dict[str, Any]:
    """On-demand jobs not started within the grace: how many, their mean delay, and why no
    mechanism could have started them at once: `bound` arrived while the on-demand jobs
    present (submitted, not ended; this one included) wanted more than the machine;
    `claimed` did not, but with the nodes of the noticed on-demand jobs not yet arrived
    (whose claims CUA and CUP keep until 600 s past the estimated arrival) they did."""
    is_o = res["job_class"] == CLASS_CODES.index("O")
    sub, first, end = res["submit"][is_o], res["first_start"][is_o], res["end"][is_o]
    nodes = res["nodes"][is_o]
    order = np.argsort(cols["job_id"], kind="stable")
    take = order[np.searchsorted(cols["job_id"], res["id"][is_o], sorter=order)]
    notice, est = cols["notice_time"][take], cols["est_arrival"][take]
    est_nodes = np.where(cols["est_nodes"][take] > 0, cols["est_nodes"][take], nodes)
    delay = np.where(first >= 0, first - sub, end - sub)
    late = np.flatnonzero((first < 0) | (delay > GRACE_S))
    bound = claimed = 0
    for i in late.tolist():
        t = sub[i]
        present = (sub <= t) & (end > t)
        present[i] = True
        demand = int(nodes[present].sum())
        noticed = (notice >= 0) & (notice <= t) & (sub > t) & (t < est + RELEASE_AFTER_S)
        if demand > total:
            bound += 1
        elif demand + int(est_nodes[noticed].sum()) > total:
            claimed += 1
    return {"od_jobs": int(is_o.sum()), "late": len(late),
            "late_delay": float(delay[late].mean()) if len(late) else 0.0,
            "late_bound": bound, "late_claimed": claimed}


# ----------------------------------------------------------------------------- tables


@dataclass
class Table:
    title: str
    head: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # paragraphs after the title


Block = str | Table  # a str is a heading ("#..." markdown level) or a paragraph


def render(blocks: list[Block], markdown: bool) -> list[str]:
    out: list[str] = []
    for b in blocks:
        if isinstance(b, Table):
            out += ["", f"**{b.title}**" if markdown else f"--- {b.title}"]
            for note in b.notes:
                out += ["", note]
            out.append("")
            out += md_table(b) if markdown else fixed_table(b)
        elif b.startswith("#"):
            level, _, text = b.partition(" ")
            rule = ("=" if len(level) <= 2 else "-") * len(text)
            out += ["", b if markdown else f"{text}\n{rule}"]
        else:
            out += ["", b]
    return out


def md_table(t: Table) -> list[str]:
    return (["| " + " | ".join(t.head) + " |", "|---" * len(t.head) + "|"]
            + ["| " + " | ".join(r) + " |" for r in t.rows])


def fixed_table(t: Table) -> list[str]:
    widths = [max(len(r[k]) for r in [t.head] + t.rows) for k in range(len(t.head))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if k == 0 else c.rjust(w)
                         for k, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    return [line(t.head), "  ".join("-" * w for w in widths)] + [line(r) for r in t.rows]


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def hours(x: float) -> str:
    return f"{x / 3600:.1f}"


def mean(per_seed: list[dict[str, dict]], label: str, key: str) -> float:
    return float(np.mean([r[label][key] for r in per_seed]))


def low(per_seed: list[dict[str, dict]], label: str, key: str) -> float:
    return float(np.min([r[label][key] for r in per_seed]))


def counter(per_seed: list[dict[str, dict]], label: str, key: str) -> float:
    return float(np.mean([r[label]["counters"].get(key, 0) for r in per_seed]))


PERF_HEAD = ["policy", "prompt %", "(min)", "instant %", "(min)", "util %", "productive %",
             "turnaround h", "rigid h", "malleable h", "on-demand h", "rigid preempted %",
             "malleable preempted %"]


def perf_rows(per_seed: list[dict[str, dict]], labels: tuple[str, ...],
              first: str | None = None) -> list[list[str]]:
    rows = []
    for lab in labels:
        def m(k: str, lab: str = lab) -> float:
            return mean(per_seed, lab, k)

        rows.append(([first] if first is not None else []) + [
            lab, pct(m("prompt")), pct(low(per_seed, lab, "prompt")), pct(m("instant")),
            pct(low(per_seed, lab, "instant")), pct(m("util")), pct(m("productive")),
            hours(m("resp")), hours(m("resp_rigid")), hours(m("resp_mall")),
            hours(m("resp_od")), pct(m("pre_rigid")), pct(m("pre_mall"))])
    return rows


COUNTER_HEAD = ["workload", "mechanism", "waited", "late", "late: OD > machine",
                "late: with claims", "late delay min", "preempted rigid",
                "preempted malleable", "< 1 h after a start", f"rigid >= {OFTEN}x",
                f"malleable >= {OFTEN}x", "most of one job", "shrinks", "CUP preemptions",
                "loans", "loans preempted", "expired claims", "returned restarts",
                "returned expands"]


def counter_row(first: str, per_seed: list[dict[str, dict]], lab: str) -> list[str]:
    def c(k: str) -> str:
        return f"{counter(per_seed, lab, k):.1f}"

    def m(k: str) -> str:
        return f"{mean(per_seed, lab, k):.1f}"

    return [first, lab, c("waited"), m("late"), m("late_bound"), m("late_claimed"),
            f"{mean(per_seed, lab, 'late_delay') / 60:.1f}", c("preempted_rigid"),
            c("preempted_malleable"), m("quick"), m("often_rigid"), m("often_mall"), m("most"),
            c("shrinks"), c("cup_preemptions"), c("loans"), c("loans_preempted"),
            c("expired_claims"), c("returned_restarts"), c("returned_expands")]


def main_part(data: dict[str, list[dict[str, dict]]], wstats: dict[int, dict],
              seeds: list[int], blocks: list[Block]) -> list[tuple[str, str, bool, bool]]:
    """Per-workload tables, the counters and the acceptance check; returns the checks."""
    blocks.append("## 1. Overall performance (§V-A, Fig. 6, Table III)")
    shares = Table("Workloads (W1..W5 of one seed share their jobs)",
                   ["seed", "jobs", "projects", "on-demand jobs", "rigid jobs",
                    "malleable jobs", "on-demand node-h %", "rigid node-h %",
                    "malleable node-h %", "offered load %"],
                   notes=["node-h = nodes x uninterrupted runtime (setup included); offered "
                          "load = all of it over the machine's capacity from the first to the "
                          "last submission (checkpoints not counted)."])
    for seed in seeds:
        w = wstats[seed]
        nh = w["node_hours_by_class"]
        tot = sum(nh.values())
        jobs = w["jobs_by_class"]
        shares.rows.append([str(seed), f"{w['jobs']:,}", f"{w['projects']:,}",
                            f"{jobs['ondemand']:,}", f"{jobs['rigid']:,}",
                            f"{jobs['malleable']:,}", pct(nh["ondemand"] / tot),
                            pct(nh["rigid"] / tot), pct(nh["malleable"] / tot),
                            pct(w["offered_load"])])
    blocks.append(shares)
    for mix in MIXES:
        per_seed = data[mix]
        split = "/".join(f"{100 * f:g}" for f in MIXES[mix])
        blocks.append(Table(
            f"{mix}: on-demand jobs without notice / accurate / early / late = {split} %",
            PERF_HEAD, perf_rows(per_seed, POLICY_LABELS),
            [f"Means over seeds {seeds[0]}..{seeds[-1]}; (min) = the lowest seed."]))
    counters = Table("Mechanisms' counters (hybrid.stats(), per run, means over seeds)",
                     COUNTER_HEAD,
                     notes=["waited = on-demand jobs the mechanism could not serve at their "
                            "arrival (they wait at the queue front); late = on-demand jobs not "
                            "started within 120 s of arrival; late: OD > machine = of those, "
                            "the ones that arrived while the on-demand jobs present (submitted "
                            "and not ended, itself included) asked for more than the machine's "
                            "nodes; late: with claims = the others that arrived while those "
                            "plus the noticed on-demand jobs not yet arrived (within 600 s of "
                            "their estimate: CUA and CUP keep nodes for them) asked for more; "
                            "late delay = the late jobs' mean start delay (min). "
                            "< 1 h after a start = preemptions of a job that had (re)started "
                            "less than an hour before; "
                            f"rigid / malleable >= {OFTEN}x = jobs preempted at least "
                            f"{OFTEN} times; most of one job = the largest number of "
                            "preemptions of one job. The other columns are the policy's "
                            "counters (preempted = preemption decisions, a job may count "
                            "several times)."])
    for mix in MIXES:
        for lab in MECH_LABELS:
            counters.rows.append(counter_row(mix, data[mix], lab))
    counters.rows += [counter_row(mix, data[mix], "easy") for mix in ("W5",)]
    blocks.append(counters)
    checks = []
    acc = Table("Acceptance: prompt start > 90% and utilisation >= easy's - 2 points, per "
                "workload (seed means)",
                ["workload", "mechanism", "prompt %", "(min)", "util %", "easy util %",
                 "difference (points)", "waste (points)", "of which lost compute",
                 "makespan vs easy %", "prompt > 90%", "util loss <= 2", "result"],
                notes=["waste = busy minus the paper's utilisation, in points of the capacity "
                       "(node-time of interrupted runs: lost compute since the last checkpoint, "
                       "the setup paid again at every resume, 120 s warnings). The waste still "
                       "occupies nodes: where the machine has no idle time to absorb it, it "
                       "lengthens the makespan, and the paper's utilisation (waste left out, "
                       "over the longer span) falls by about easy's utilisation x the "
                       "makespan growth."])
    for mix in MIXES:
        per_seed = data[mix]
        base = mean(per_seed, "easy", "util")
        span = mean(per_seed, "easy", "makespan")
        for lab in MECH_LABELS:
            prompt, util = mean(per_seed, lab, "prompt"), mean(per_seed, lab, "util")
            ok_p = prompt > PROMPT_TARGET
            ok_u = util >= base - UTIL_LOSS_MAX
            checks.append((mix, lab, ok_p, ok_u))
            acc.rows.append([mix, lab, pct(prompt), pct(low(per_seed, lab, "prompt")),
                             pct(util), pct(base), f"{100 * (util - base):+.1f}",
                             pct(mean(per_seed, lab, "waste")),
                             pct(mean(per_seed, lab, "lost")),
                             f"{100 * (mean(per_seed, lab, 'makespan') / span - 1):+.1f}",
                             "yes" if ok_p else "no", "yes" if ok_u else "no",
                             "PASS" if ok_p and ok_u else "MISS"])
    blocks.append(acc)
    blocks.append(killed_note([r for ps in data.values() for r in ps]))
    missed = [c for c in checks if not (c[2] and c[3])]
    blocks.append(f"Acceptance: {len(checks) - len(missed)} of {len(checks)} (workload, "
                  f"mechanism) pairs PASS" + (": all." if not missed else "; MISS: " + ", ".join(
                      f"{m} {lab}" for m, lab, _, _ in missed) + "."))
    return checks


def killed_note(runs: list[dict[str, dict]]) -> str:
    """How many jobs per run did not complete (the trace's jobs that ran to their limit
    end killed: setup and checkpoints push them past their walltime)."""
    killed = sorted({m["killed"] for r in runs for m in r.values()})
    other = sum(m["not_completed"] - m["killed"] for r in runs for m in r.values())
    span = f"{killed[0]:,}" if len(killed) == 1 else f"{killed[0]:,} to {killed[-1]:,}"
    return (f"Jobs killed at their walltime per run: {span} (jobs of the trace that ran to "
            "their limit; setup and checkpoints take them past it under every policy); other "
            f"jobs not completed: {other}.")


def failures_part(data: dict[float, list[dict[str, dict]]], seeds: list[int],
                  blocks: list[Block]) -> None:
    blocks.append("## 2. Node failures (§V-C, Fig. 8 at Daly's interval)")
    head = ["MTBF"] + PERF_HEAD + ["failures"]
    t = Table(f"W5 with failures, MTTR {MTTR_H:g} h; rigid jobs checkpoint at Daly's optimum "
              "for the MTBF", head,
              notes=[f"Means over seeds {seeds[0]}..{seeds[-1]} (engine seed = workload "
                     "seed, so every policy of a seed sees the same failure times); failures "
                     "= job interruptions by failures per run."])
    for mtbf, per_seed in data.items():
        rows = perf_rows(per_seed, POLICY_LABELS, first=f"{mtbf:g} h")
        for row, lab in zip(rows, POLICY_LABELS, strict=True):
            row.append(f"{mean(per_seed, lab, 'failures'):.0f}")
        t.rows += rows
    blocks.append(t)
    blocks.append(killed_note([r for ps in data.values() for r in ps]))


def overhead_part(per_seed: list[dict[str, dict]], seeds: list[int], blocks: list[Block]
                  ) -> None:
    blocks.append("## 3. Preemption order: overhead seconds vs overhead node-seconds (W5)")
    t = Table("W5, each mechanism with overhead=time (seconds lost) and overhead=node-time "
              "(seconds lost x nodes)", ["order"] + PERF_HEAD + ["preempted rigid",
                                                                  "preempted malleable"],
              notes=[f"Means over seeds {seeds[0]}..{seeds[-1]}; the last two columns are the "
                     "policy's preemption counters per run."])
    for lab in MECH_LABELS:
        for order, key in (("time", lab), ("node-time", lab + " node-time")):
            row = perf_rows(per_seed, (key,), first=order)[0]
            row[1] = lab
            row += [f"{counter(per_seed, key, 'preempted_rigid'):.1f}",
                    f"{counter(per_seed, key, 'preempted_malleable'):.1f}"]
            t.rows.append(row)
    blocks.append(t)


def saturated_part(per_seed: list[dict[str, dict]], seeds: list[int], blocks: list[Block]
                   ) -> None:
    blocks.append(f"## 4. A saturated machine: Daly's interval for a {SATURATED_DALY_H:g} h "
                  "MTBF without failures (W5)")
    t = Table(f"W5, no failures, rigid jobs checkpoint at Daly's optimum for a "
              f"{SATURATED_DALY_H:g} h MTBF", ["Daly MTBF"] + PERF_HEAD + ["busy %",
                                                                         "makespan vs easy %"],
              notes=[f"Means over seeds {seeds[0]}..{seeds[-1]}. Checkpoints every ~70–100 "
                     "min of compute (600/1,200 s each) add about 12% of the machine to the "
                     "trace's 84% load: easy is busy about 95% of the time, so the node-time "
                     "interruptions waste (setup paid again at every resume, lost compute, "
                     "warnings) lengthens the makespan, and the paper's utilisation, taken "
                     "over that longer span, falls by 2–3 points."])
    rows = perf_rows(per_seed, POLICY_LABELS, first=f"{SATURATED_DALY_H:g} h")
    easy_span = mean(per_seed, "easy", "makespan")
    for row, lab in zip(rows, POLICY_LABELS, strict=True):
        row += [pct(mean(per_seed, lab, "busy")),
                f"{100.0 * (mean(per_seed, lab, 'makespan') / easy_span - 1.0):+.1f}"]
    t.rows += rows
    blocks.append(t)


def utilisation_part(data: dict[float, list[dict[str, dict]]], seeds: list[int],
                     blocks: list[Block]) -> None:
    blocks.append("## 5. Utilisation measured four ways, and against load: the paper's +5 "
                  "points (W5)")
    head = ["arrivals x", "offered load %", "policy", "busy % (makespan)",
            "paper's % (makespan, waste out)", "busy % (window)",
            "paper's % (window, waste out)", "event mean % (run)", "event mean % (window)",
            "makespan vs easy %", "turnaround h", "prompt %"]
    t = Table("W5, no failures: utilisation over the makespan and over the submission "
              "window, with and without the waste, and averaged over events; the trace's "
              "arrivals as they are and compressed", head,
              notes=[f"Means over seeds {seeds[0]}..{seeds[-1]}. arrivals x F = every submit "
                     "time (and so every notice) multiplied by F from the first one, which "
                     "divides the offered load by F. Makespan figures divide by nodes x "
                     "(last end - first submit); window figures count the node-time inside "
                     "[first submit, last submit] (`utilization_window`, exact from the "
                     "segments) over nodes x that span; event means average busy nodes / N "
                     "over the instants at which the machine's state changed, each instant "
                     "weighing the same however long it lasted (the average of a per-event "
                     "utilisation log such as CQSim's). In brackets: the difference to easy "
                     "at the same load, in points."])
    for scale, per_seed in sorted(data.items(), reverse=True):
        easy = {k: mean(per_seed, "easy", k) for k in ("busy", "util", "window",
                                                       "window_excl_waste", "events",
                                                       "events_window", "makespan")}
        offered = pct(mean(per_seed, "easy", "offered"))
        for lab in POLICY_LABELS:
            def cell(key: str, lab: str = lab, easy: dict[str, float] = easy,
                     per_seed: list[dict[str, dict]] = per_seed) -> str:
                v = mean(per_seed, lab, key)
                return pct(v) if lab == "easy" else f"{pct(v)} ({100 * (v - easy[key]):+.1f})"

            span = mean(per_seed, lab, "makespan") / easy["makespan"] - 1
            t.rows.append([f"{scale:g}", offered, lab, cell("busy"), cell("util"),
                           cell("window"), cell("window_excl_waste"), cell("events"),
                           cell("events_window"), f"{100 * span:+.1f}",
                           hours(mean(per_seed, lab, "resp")),
                           pct(mean(per_seed, lab, "prompt"))])
    blocks.append(t)


# ----------------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("parts", nargs="*", metavar="PART",
                    help=f"any of {', '.join(PARTS)} (default: all)")
    ap.add_argument("--seeds", type=int, default=10,
                    help="workload seeds 1..N for main and overhead (default 10)")
    ap.add_argument("--fail-seeds", type=int, default=3,
                    help="workload seeds 1..N for failures (default 3)")
    ap.add_argument("--trace", default=str(TRACE), help="SWF trace (default: theta_2023.swf)")
    add_task_arguments(ap)
    ap.add_argument("--daly-mtbf", type=float, default=DALY_MTBF_H, metavar="HOURS",
                    help=f"MTBF Daly's interval assumes without failures (default "
                    f"{DALY_MTBF_H:g})")
    ap.add_argument("--arrival-scales", type=float, nargs="+", default=list(ARRIVAL_SCALES),
                    metavar="F", help="utilisation part: submit times x F, one run set per F "
                    "(default " + " ".join(f"{f:g}" for f in ARRIVAL_SCALES) + ")")
    ap.add_argument("--markdown", default=None, metavar="PATH",
                    help="also write the tables as Markdown here")
    args = ap.parse_args()
    parts = args.parts or list(PARTS)
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        ap.error(f"unknown part(s) {', '.join(unknown)}; choose from {', '.join(PARTS)}")
    if args.seeds < 1 or args.fail_seeds < 1 or args.workers < 0:
        ap.error("--seeds and --fail-seeds must be at least 1, --workers at least 0")
    if not args.daly_mtbf > 0:
        ap.error("--daly-mtbf must be a positive number of hours")
    daly = args.daly_mtbf
    seeds = list(range(1, args.seeds + 1))
    fail_seeds = list(range(1, args.fail_seeds + 1))
    started = time.perf_counter()

    # (mix, seed, runs) tasks; W5's main task also runs the node-time orders when the
    # overhead part is on, so its workload is made once.
    # Keys: (mix, seed, failure MTBF, Daly's MTBF without failures).
    Key = tuple[str, int, float, float]
    tasks: dict[Key, tuple[Run, ...]] = {}

    def with_mtbf(runs: tuple[Run, ...], mtbf_h: float, daly_h: float) -> tuple[Run, ...]:
        return tuple(Run(r.label, r.policy, r.opts, mtbf_h, daly_h) for r in runs)

    if "main" in parts:
        for mix in MIXES:
            for seed in seeds:
                tasks[(mix, seed, 0.0, daly)] = with_mtbf(ALL_POLICIES, 0.0, daly)
    if "overhead" in parts:
        for seed in seeds:
            key = ("W5", seed, 0.0, daly)
            have = tasks.get(key, ())
            extra = mech_runs() if not have else ()
            tasks[key] = have + with_mtbf(extra + mech_runs("node-time", " node-time"),
                                          0.0, daly)
    if "failures" in parts:
        for mtbf in MTBFS_H:
            for seed in fail_seeds:
                tasks[("W5", seed, mtbf, mtbf)] = with_mtbf(ALL_POLICIES, mtbf, mtbf)
    if "saturated" in parts:
        for seed in fail_seeds:
            tasks[("W5", seed, 0.0, SATURATED_DALY_H)] = with_mtbf(ALL_POLICIES, 0.0,
                                                                   SATURATED_DALY_H)
    # The utilisation part records (segments, time series) and compresses the arrivals:
    # its own tasks, by (seed, arrival scale).
    util_runs = tuple(Run(r.label, r.policy, r.opts, 0.0, daly, record=True)
                      for r in ALL_POLICIES)
    util_keys = [(seed, scale) for scale in args.arrival_scales for seed in fail_seeds] \
        if "utilisation" in parts else []
    total_runs = sum(len(r) for r in tasks.values()) + len(util_keys) * len(util_runs)

    head = [
        "# Hybrid workload scheduling on Theta (hybrid paper §V)",
        f"machine: {platform.machine()}, {platform.system()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, NumPy {np.__version__}; "
        f"simulations on {where(args.workers, args.scheduler)}",
        "command: `" + " ".join([Path(sys.executable).name]
                                + [Path(sys.argv[0]).as_posix()] + sys.argv[1:]) + "`",
        f"Trace {Path(args.trace).name} on a node pool of its MaxNodes; job model `--ckpt "
        f"daly --ckpt-cost hybrid --no-restart-read --daly-mtbf {daly:g}` (with failures, "
        "Daly's interval is the one for their MTBF), 120 s malleable warning, `hybrid` "
        "over `easy`, release_after 600 s. "
        f"Parts: {', '.join(parts)}; seeds 1..{args.seeds} (failures 1..{args.fail_seeds}); "
        f"{total_runs} simulations.",
        "Columns: prompt = on-demand jobs started within 120 s of their arrival (the "
        "paper's instant start, which ignores the time to vacate nodes); instant = at their "
        "arrival exactly; util = the paper's utilisation (`utilization_excl_waste`); "
        "productive = kept compute only (`productive_utilization`); turnaround = mean end - "
        "submit (h), overall and per class (rigid = class B); preempted = share of the "
        "class's jobs preempted at least once.",
        "Paper, Theta 2019 (ten traces, Table III and Fig. 6): easy 15.6 h turnaround, "
        "83.93% utilisation, 22.69% instant start; the mechanisms > 98% instant start, "
        "utilisation up by more than 5 points, turnaround about 22 h.",
    ]
    blocks: list[Block] = list(head)
    for line in render(blocks, markdown=False):
        print(line, flush=True)
    shown = len(blocks)

    def flush() -> None:
        nonlocal shown
        for line in render(blocks[shown:], markdown=False):
            print(line, flush=True)
        shown = len(blocks)

    results: dict[Key, dict[str, dict]] = {}
    wstats: dict[int, dict] = {}
    sim_seconds = 0.0
    keys = list(tasks)
    argsets = [(args.trace, key[0], key[1], runs) for key, runs in tasks.items()]
    argsets += [(args.trace, "W5", seed, util_runs, scale) for seed, scale in util_keys]
    with TaskRunner(cache=args.cache, workers=args.workers, scheduler=args.scheduler,
                    prog="hybrid") as runner:
        outputs = runner.map(run_task, argsets, what="workloads", depends_on=[args.trace])
    for key, (ws, out) in zip(keys, outputs, strict=False):
        results[key] = out
        wstats.setdefault(key[1], ws)
        sim_seconds += sum(m["seconds"] for m in out.values())

    if "main" in parts:
        data = {mix: [results[(mix, s, 0.0, daly)] for s in seeds] for mix in MIXES}
        main_part(data, wstats, seeds, blocks)
        flush()
    if "failures" in parts:
        fdata = {mtbf: [results[("W5", s, mtbf, mtbf)] for s in fail_seeds]
                 for mtbf in MTBFS_H}
        failures_part(fdata, fail_seeds, blocks)
        flush()
    if "overhead" in parts:
        overhead_part([results[("W5", s, 0.0, daly)] for s in seeds], seeds, blocks)
        flush()
    if "saturated" in parts:
        saturated_part([results[("W5", s, 0.0, SATURATED_DALY_H)] for s in fail_seeds],
                       fail_seeds, blocks)
        flush()
    if "utilisation" in parts:
        util: dict[float, list[dict[str, dict]]] = {}
        for (_, scale), (ws, out) in zip(util_keys, outputs[len(keys):], strict=True):
            sim_seconds += sum(m["seconds"] for m in out.values())
            out["easy"]["offered"] = ws["offered_load"]
            util.setdefault(scale, []).append(out)
        utilisation_part(util, fail_seeds, blocks)
        flush()
    blocks.append(f"({total_runs} simulations, {sim_seconds:.0f} s of simulation; wall time "
                  f"{time.perf_counter() - started:.0f} s, {runner.ran} of {len(argsets)} "
                  "workloads simulated now, the others read from --cache)")
    flush()
    if args.markdown:
        Path(args.markdown).write_text("\n".join(render(blocks, markdown=True)).lstrip("\n")
                                       + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
