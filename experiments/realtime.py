"""Real-time paper experiments (docs/realtime.md), on every Mira week of ../shared/traces.

    .venv/bin/python experiments/realtime.py [--trials 10] [--workers 2] [--markdown FILE]

1. The acceptance run (issue 18): every Mira week (`mira_*.swf`) on `mira-blocks` (Mira's
   real block list, as the authors ran) and `mira` (aligned partitions), 10% RTJs, seeds
   1000..1009 pooled, over all jobs and over the paper's window-trimmed set. Baseline
   `easy-wfp2` against wcjs + JIT with its default `blocking=authors`, and for comparison
   `blocking=strict` (Algorithm 1's text), `blocking=backfill` and `--requeue-remaining`.
   Target on every week: RTJ mean bounded slowdown (600 s) <= 0.65x and BJ <= 1.10x the
   baseline.
2. How congested each week is: the real Mira queue (the trace's recorded waits and
   utilisation) and the baseline's, beside the paper's figures.
3. Where wcjs's gain and cost come from, job by job (the threshold floor of the RTJs'
   slowdown; the preempted batch jobs' share of the batch cost).
4. Every scheme of the paper at 5-20% RTJs, the paper's other RTJ variants, the weights
   and thresholds, non-checkpointable batch jobs: mira_2018_wk1 (the paper's own week) on
   `mira-blocks`, in its window.

The paper's window: the authors count only jobs whose start and end *as recorded in the
log* fall inside a window (bqsim.py tests log_start_time / log_end_time), the same jobs
for every policy; the 5-day one written into bqsim.py for this week is 2018-01-23 + 5
days (docs/realtime.md has the 7-day variant of their scripts). Here: the five whole UTC
days before the day of the trace's last submission, which gives exactly that window on
their week. Same trials and seeds give the same output.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from schedd.compare import DEFAULT_RUNS, Task, compare, markdown, parse_run  # noqa: E402
from schedd.compare import _simulate as simulate_task  # noqa: E402
from schedd.core.cluster_spec import parse_cluster  # noqa: E402
from schedd.policies.rt_common import THRESHOLD_PRESETS, category  # noqa: E402
from schedd.traces import read_trace  # noqa: E402

TRACES = ROOT.parent / "shared" / "traces"
PAPER_WEEK = TRACES / "mira_2018_wk1_cobalt2swf.swf"
APS = TRACES / "aps_runtimes_seconds.txt"
CLUSTERS = ("mira-blocks", "mira")
DAY = 86400.0
WINDOW_DAYS = 5
BASELINE = "easy-wfp2"
WCJS = "wcjs ckpt=jit"  # blocking=authors, the default
STRICT = "wcjs ckpt=jit blocking=strict"
BACKFILL = "wcjs ckpt=jit blocking=backfill"
REQUEUE = "wcjs ckpt=jit --requeue-remaining"
ACCEPTANCE = (BASELINE, WCJS, STRICT, BACKFILL, REQUEUE)
RT_TARGET, BJ_TARGET = 0.65, 1.10
# The paper's Fig. 3, all jobs at 10% RTJs, JIT-CKPT (means read off the figure, §7.2).
PAPER = {"rt_base": 1.94, "bj_base": 2.26, "rt": 1.25, "bj": 2.51}
SENSITIVITY = (
    WCJS, STRICT, BACKFILL, REQUEUE,
    "wcjs ckpt=jit w_done=1",
    "wcjs ckpt=jit w_done=20",
    "wcjs ckpt=jit ckpt_scale_s=300",
    "wcjs ckpt=jit ckpt_scale_s=3600",
    "wcjs ckpt=jit sd_offset=8",
    "wcjs ckpt=jit hp_order=esd",
    "wcjs ckpt=jit thresholds=curie",
    "wcjs ckpt=jit rt_thresholds=1,1,1,1",
    "wcjs ckpt=jit rt_thresholds=1.5,1.5,3,2.5",
    "wcjs ckpt=jit bj_thresholds=100,100,100,100",
    "wcjs ckpt=jit bj_thresholds=1.2,1.2,4,2",
)


def mira_weeks() -> list[Path]:
    return sorted(TRACES.glob("mira_*.swf"))


def week_name(path: Path) -> str:
    return path.stem.removesuffix("_cobalt2swf")


def paper_window(trace: Any) -> tuple[float, float]:
    """The five whole UTC days before the day of the last submission, in trace seconds."""
    origin = float(trace.header.unix_start_time or 0)
    last = origin + float(trace.columns["submit"].max())
    end = last // DAY * DAY
    return end - WINDOW_DAYS * DAY - origin, end - origin


def utc(origin: float, t: float) -> str:
    return datetime.fromtimestamp(origin + t, UTC).strftime("%Y-%m-%d")


def bsld(result: dict[str, Any], label: str, cls: str, key: str = "bounded_slowdown_600"
         ) -> float:
    return float(result["results"]["10"][label]["stats"]["by_class"][cls][key]["mean"])


def row_of(result: dict[str, Any], label: str) -> dict[str, Any]:
    return result["results"]["10"][label]  # type: ignore[no-any-return]


def log_congestion(trace: Any, window: tuple[float, float]) -> dict[str, float]:
    """The real Mira queue in the window: mean recorded wait of the jobs that started in
    it, and busy node-seconds inside it over its capacity."""
    cols = trace.columns
    start = cols["submit"] + np.maximum(cols["wait"], 0.0)
    end = start + np.maximum(cols["runtime"], 0.0)
    nodes = np.where(cols["req_procs"] > 0, cols["req_procs"], cols["procs"])
    lo, hi = window
    inside = (start >= lo) & (start < hi)
    busy = np.clip(np.minimum(end, hi) - np.maximum(start, lo), 0.0, None) * nodes
    capacity = float(trace.header.max_nodes or 49152) * (hi - lo)
    return {"wait_h": float(np.mean(cols["wait"][inside])) / 3600.0,
            "util": float(busy.sum()) / capacity, "started": int(inside.sum())}


def _bsld600(res: dict[str, np.ndarray], wait: np.ndarray) -> np.ndarray:
    run = np.maximum(res["executed"], 600.0)
    return (wait + run) / run


def diagnose(path: Path, cluster: str, window: tuple[float, float], trials: int
             ) -> dict[str, float]:
    """Where wcjs's gain and cost come from, job by job against the baseline (same marked
    trace and seed, jobs in the window):

    * RTJ floor: an RTJ gets preemption rights only once its ESD reaches its threshold,
      i.e. after (threshold - 1) x walltime in the queue, so its wait is at best
      min(baseline wait, that delay). The floor is the RTJ mean BSD with those waits (it
      even ignores the JIT checkpoint wait): the best the thresholds allow.
    * BJ cost: the share of the batch jobs' summed BSD increase borne by the jobs wcjs
      preempted, and how many they are."""
    rt_thr = THRESHOLD_PRESETS["mira"][0]
    acc: dict[str, list[np.ndarray]] = {k: [] for k in (
        "rt_base", "rt_wcjs", "rt_floor", "rt_floor_jit", "rt_prompt", "bj_base", "bj_wcjs",
        "bj_pre")}
    machine = parse_cluster(cluster)
    # The shortest JIT write an RTJ can wait for: its victims hold at least one partition
    # of the smallest size (eq. 34: 512 s on Mira).
    jit_s = machine.checkpoint_model.seconds(min(getattr(machine, "sizes", (1,))))
    for t in range(trials):
        out = {}
        for label in (BASELINE, WCJS):
            task = Task(str(path), cluster, 10.0, "default", 1000 + t, None, parse_run(label),
                        window, 0.0, "log")
            res = simulate_task(task)[0]
            order = np.argsort(res["id"])
            out[label] = {k: v[order] for k, v in res.items()}
        base, wcjs = out[BASELINE], out[WCJS]
        assert np.array_equal(base["id"], wcjs["id"])
        wait_b = base["first_start"] - base["submit"]
        wait_w = wcjs["first_start"] - wcjs["submit"]
        rt = base["job_class"] == 1  # CLASS_CODES index of "R"
        thr = np.array([rt_thr[category(int(n), float(w), 4096, 7200.0)]
                        for n, w in zip(base["alloc_nodes"], base["orig_walltime"],
                                        strict=True)])
        delay = (thr - 1.0) * base["orig_walltime"]
        acc["rt_base"].append(_bsld600(base, wait_b)[rt])
        acc["rt_wcjs"].append(_bsld600(wcjs, wait_w)[rt])
        acc["rt_floor"].append(_bsld600(base, np.minimum(wait_b, delay))[rt])
        acc["rt_floor_jit"].append(_bsld600(base, np.minimum(wait_b, delay + jit_s))[rt])
        acc["rt_prompt"].append((wait_b < 60.0)[rt])
        acc["bj_base"].append(_bsld600(base, wait_b)[~rt])
        acc["bj_wcjs"].append((wcjs["end"] - wcjs["submit"] - wcjs["executed"]
                               + np.maximum(wcjs["executed"], 600.0))[~rt]
                              / np.maximum(wcjs["executed"], 600.0)[~rt])
        acc["bj_pre"].append(wcjs["preemptions"][~rt] > 0)
    a = {k: np.concatenate(v) for k, v in acc.items()}
    rise = a["bj_wcjs"] - a["bj_base"]
    return {"rt_base": float(a["rt_base"].mean()), "rt_wcjs": float(a["rt_wcjs"].mean()),
            "rt_floor": float(a["rt_floor"].mean()),
            "rt_floor_jit": float(a["rt_floor_jit"].mean()),
            "rt_prompt": float(a["rt_prompt"].mean()),
            "bj_base": float(a["bj_base"].mean()), "bj_wcjs": float(a["bj_wcjs"].mean()),
            "bj_pre_share": float(a["bj_pre"].mean()),
            "bj_rise_pre": float(rise[a["bj_pre"]].sum() / rise.sum()) if rise.sum() else 0.0,
            "bj_pre_jobs": float(a["bj_pre"].sum()) / trials}


def paper_vs_ours(ours: dict[str, Any], why: list[str], hpq: dict[str, float],
                  trials: int) -> list[str]:
    """The section comparing the paper's Fig. 3 with ours on its own week."""
    if not ours:
        return []
    floor = next((r for r in why if "mira_2018_wk1 | `mira-blocks`" in r), "")
    cells = [c.strip() for c in floor.strip("|").split("|")] if floor else []
    hpq_text = (f"`rt-hpq`, which never preempts and only puts RTJs first, costs batch "
                f"jobs {hpq['batch']:.2f}x too (RTJ {hpq['realtime']:.2f}x; part 4a, 10%)"
                if hpq else "")
    return [
        "## Paper vs ours", "",
        "| | paper (§7.2, Fig. 3, all jobs, 10% RTJs, JIT-CKPT) | ours |",
        "|---|---|---|",
        "| trace | one Mira week, the authors' `wk1.log` (Jan 2018) | the same log: "
        "`mira_2018_wk1_cobalt2swf.swf` |",
        "| machine | the real Mira block list (294 blocks) | `mira-blocks` (the same list) |",
        "| RTJs | 10% of the jobs at random, seeds 1000 + trial, trials pooled | the same, "
        f"{trials} trials |",
        "| jobs counted | recorded start and end in the 5-day window (bqsim.py) | "
        f"the same rule: {ours['span']} |",
        "| baseline | Cobalt's wfp2 order with backfilling, every job as batch | "
        "`easy-wfp2` |",
        "| heuristic | WCJS + JIT, the authors' weights and thresholds | `wcjs ckpt=jit` "
        "(`blocking=authors`) |",
        f"| RTJ mean BSD | {PAPER['rt_base']} -> {PAPER['rt']} "
        f"({PAPER['rt'] / PAPER['rt_base'] - 1:+.0%}) | {ours['rt0']:.2f} -> "
        f"{ours['rt']:.2f} ({ours['rt'] / ours['rt0'] - 1:+.0%}) |",
        f"| BJ mean BSD | {PAPER['bj_base']} -> {PAPER['bj']} "
        f"({PAPER['bj'] / PAPER['bj_base'] - 1:+.0%}) | {ours['bj0']:.2f} -> "
        f"{ours['bj']:.2f} ({ours['bj'] / ours['bj0'] - 1:+.0%}) |", "",
        "The command (window in the trace's seconds):", "", "```sh",
        ".venv/bin/python -m schedd compare --trace ../shared/traces/"
        "mira_2018_wk1_cobalt2swf.swf --cluster mira-blocks --percent 10 --trials "
        f"{trials} --run easy-wfp2 --run 'wcjs ckpt=jit' --window "
        f"{ours['lo']:.0f},{ours['hi']:.0f} --window-by log", "```", "",
        "Where the two differ:", "",
        f"* **Baselines agree**: RTJ / BJ {ours['rt0']:.2f} / {ours['bj0']:.2f} against "
        f"{PAPER['rt_base']} / {PAPER['bj_base']} read off the figure.",
        "* **RTJs gain a little less** than the paper's -35% (its text). The thresholds "
        "bound the gain: an RTJ may preempt only once its ESD reaches its threshold, and on "
        f"this lightly loaded week {cells[8] if cells else '?'} of the RTJs start at once "
        "in the baseline anyway. Part 3 cuts each RTJ's baseline wait to its threshold "
        f"delay plus the shortest JIT write: {cells[6] if cells else '?'} "
        f"({cells[7] if cells else '?'}x the baseline). Even a scheduler that preempted for "
        "every RTJ at its crossing would only just reach 0.65x, and wcjs cannot (batch jobs "
        "over their thresholds are protected); on the congested 2014-12 week the same floor "
        "is far lower and the target is met with room.",
        "* **Batch jobs pay more** than the paper's +10% (its text). Part 3: the preempted "
        "batch jobs "
        f"carry only {cells[12] if cells else '?'} of the batch jobs' summed slowdown "
        "increase; the rest is the RTJs' priority (high-priority RTJs take free partitions "
        "before the batch queue, ahead of its head's reservation). "
        f"{hpq_text}. Issue 18 reports the authors' own simulator on this week and window "
        "at RTJ -36% / BJ +15%: the batch cost on this week is the heuristic's, not ours.",
        "",
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--markdown", default=str(ROOT / "docs" / "realtime_experiments.md"))
    ap.add_argument("--skip-part3", action="store_true", help="only parts 1 and 2")
    args = ap.parse_args()
    weeks = mira_weeks()
    if not weeks:
        print(f"no mira_*.swf in {TRACES}", file=sys.stderr)
        return 2
    t0 = time.time()
    common = {"trials": args.trials, "workers": args.workers}
    check: list[str] = []
    summary = ["| week | cluster | jobs counted | run | RTJ BSD | x baseline | BJ BSD | "
               "x baseline | preemptions | target |", "|---|---|---:|---|---:|---:|---:|---:|"
               "---:|---|"]
    congestion = ["| week | jobs | window (UTC) | Mira's recorded mean wait, h | Mira's "
                  "recorded utilisation | cluster | `easy-wfp2` mean wait, h (window) | "
                  "`easy-wfp2` RTJ / BJ BSD (window) |",
                  "|---|---:|---|---:|---:|---|---:|---|"]
    details: list[str] = []
    paper_row: dict[str, Any] = {}
    why = ["| week | cluster | RTJ BSD baseline | wcjs | threshold floor | x baseline | "
           "floor + JIT write | x baseline | RTJs started at once by the baseline | BJ BSD "
           "baseline | wcjs | BJs preempted per trial | share of the BJ increase on "
           "preempted BJs |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for path in weeks:
        trace = read_trace(str(path))
        window = paper_window(trace)
        origin = float(trace.header.unix_start_time or 0)
        span = f"{utc(origin, window[0])} .. {utc(origin, window[1])}"
        real = log_congestion(trace, window)
        for cluster in CLUSTERS:
            for scope, win in (("all jobs", None), (f"window {span}", window)):
                result = compare(str(path), cluster, [parse_run(r) for r in ACCEPTANCE],
                                 [10.0], window=win, window_by="log", **common)
                name = week_name(path)
                details += [f"### {name} on `{cluster}`, {scope}", "", markdown(result)]
                rt0, bj0 = bsld(result, BASELINE, "realtime"), bsld(result, BASELINE, "batch")
                if path == PAPER_WEEK and cluster == "mira-blocks" and win is not None:
                    paper_row.update(rt0=rt0, bj0=bj0, rt=bsld(result, WCJS, "realtime"),
                                     bj=bsld(result, WCJS, "batch"), lo=win[0], hi=win[1],
                                     span=span)
                counted = sum(row_of(result, BASELINE)["stats"]["by_class"][c][
                    "bounded_slowdown_600"]["count"] for c in ("realtime", "batch"))
                for label in ACCEPTANCE:
                    rt, bj = bsld(result, label, "realtime"), bsld(result, label, "batch")
                    ok = rt <= RT_TARGET * rt0 and bj <= BJ_TARGET * bj0
                    verdict = "" if label == BASELINE else ("met" if ok else "**missed**")
                    summary.append(
                        f"| {name} | `{cluster}` | {counted // args.trials} | `{label}` | "
                        f"{rt:.3f} | {rt / rt0:.2f} | {bj:.3f} | {bj / bj0:.2f} | "
                        f"{row_of(result, label)['preemptions']:.1f} | {verdict} |")
                    if label == WCJS:
                        check.append(f"* {name} `{cluster}` {scope}: RTJ {rt0:.3f} -> {rt:.3f} "
                                     f"({rt / rt0:.2f}x), BJ {bj0:.3f} -> {bj:.3f} "
                                     f"({bj / bj0:.2f}x): {verdict}")
                if win is not None:
                    d = diagnose(path, cluster, win, args.trials)
                    why.append(
                        f"| {name} | `{cluster}` | {d['rt_base']:.3f} | {d['rt_wcjs']:.3f} | "
                        f"{d['rt_floor']:.3f} | {d['rt_floor'] / d['rt_base']:.2f} | "
                        f"{d['rt_floor_jit']:.3f} | {d['rt_floor_jit'] / d['rt_base']:.2f} | "
                        f"{d['rt_prompt']:.0%} | {d['bj_base']:.3f} | {d['bj_wcjs']:.3f} | "
                        f"{d['bj_pre_jobs']:.1f} | {d['bj_rise_pre']:.0%} |")
                    wait = row_of(result, BASELINE)["stats"]["by_class"]
                    n = {c: wait[c]["wait_s"]["count"] for c in ("realtime", "batch")}
                    mean_wait = sum(wait[c]["wait_s"]["mean"] * n[c] for c in n) / sum(
                        n.values()) / 3600.0
                    congestion.append(
                        f"| {name} | {len(trace.columns['submit'])} | {span} | "
                        f"{real['wait_h']:.2f} | {real['util']:.3f} | `{cluster}` | "
                        f"{mean_wait:.2f} | {rt0:.2f} / {bj0:.2f} |")
                print(f"{name} {cluster} {scope}: done at {time.time() - t0:.0f} s", flush=True)
    parts: list[str] = []
    hpq: dict[str, float] = {}
    if not args.skip_part3 and PAPER_WEEK.exists():
        trace = read_trace(str(PAPER_WEEK))
        window = paper_window(trace)
        kw: dict[str, Any] = {"window": window, "window_by": "log", **common}

        def run(title: str, runs: tuple[str, ...], percents: list[float], **more: Any
                ) -> dict[str, Any]:
            result = compare(str(PAPER_WEEK), "mira-blocks", [parse_run(r) for r in runs],
                             percents, **kw, **more)
            parts.extend([f"### {title}", "", markdown(result)])
            print(f"{title}: done at {time.time() - t0:.0f} s", flush=True)
            return result

        refs = ("easy", BASELINE)
        schemes = run("4a. Every scheme, 5-20% RTJs",
                      (*DEFAULT_RUNS[:-1], WCJS, STRICT, BACKFILL), [5.0, 10.0, 15.0, 20.0])
        hpq = {c: bsld(schemes, "rt-hpq", c) / bsld(schemes, BASELINE, c)
               for c in ("realtime", "batch")}
        run("4b. RTJs only among jobs of at most 90 minutes",
            (*refs, "rt-hpq", "rt-preempt ckpt=jit", WCJS), [10.0], mode="short")
        if APS.exists():
            run("4c. RTJs added from the APS runtimes",
                (*refs, "rt-hpq", "rt-preempt ckpt=jit", WCJS), [10.0], mode="aps",
                aps_runtimes=str(APS))
        run("4d. wcjs + JIT: blocking, requeue, weights and thresholds",
            (BASELINE, *SENSITIVITY), [10.0])
        for share in (0.25, 0.5):
            run(f"4e. {share:.0%} of batch jobs cannot checkpoint",
                (BASELINE, "rt-preempt ckpt=jit", WCJS, STRICT, BACKFILL), [10.0],
                non_checkpointable=share)
    elapsed = time.time() - t0
    out = [
        "# Real-time experiments (generated)", "",
        f"`.venv/bin/python experiments/realtime.py --trials {args.trials}` (the same "
        "output for any number of workers). Summary and discussion: "
        "[realtime.md](realtime.md#experiments). The paper's setup against ours: "
        "[Paper vs ours](#paper-vs-ours).", "",
        "## 1. The target on every Mira week (10% RTJs, JIT)", "",
        f"RTJ and BJ mean bounded slowdown (600 s), {args.trials} trials pooled (seeds "
        f"1000..{999 + args.trials}); `x baseline` is against `{BASELINE}` in the same "
        f"rows; target RTJ <= {RT_TARGET}x and BJ <= {BJ_TARGET}x. `window` counts the jobs "
        "whose recorded start and end fall in the paper's 5-day window (`schedd compare "
        "--window LO,HI --window-by log`); `jobs counted` is per trial.", "",
        *summary, "", *check, "",
        "## 2. How congested each week is", "",
        "Mira's recorded figures come from the trace itself (wait field; busy node-seconds "
        "inside the window over 49,152 nodes x 5 days). The paper reports, at 10% RTJs, "
        f"baseline RTJ / BJ BSD {PAPER['rt_base']} / {PAPER['bj_base']} (Fig. 3).", "",
        *congestion, "",
        "## 3. Where the gain and the cost come from (window, wcjs + JIT against "
        "`easy-wfp2`, job by job)", "",
        "Threshold floor: each RTJ's wait cut to min(baseline wait, (RTJ threshold - 1) x "
        "walltime), the earliest wcjs may preempt for it: about the best RTJ mean the "
        "authors' thresholds allow. `+ JIT write`: the same with the shortest checkpoint "
        "write the RTJ then waits for (512 s on Mira) added to the threshold delay. The last "
        "column: the preempted batch jobs' share of the summed BSD increase of all batch "
        "jobs.", "",
        *why, "",
        *paper_vs_ours(paper_row, why, hpq, args.trials),
        "## 4. mira_2018_wk1 (the paper's week) on `mira-blocks`, in the window", "",
        *parts,
        "## Appendix: every table of part 1", "", *details,
    ]
    Path(args.markdown).write_text("\n".join(out).rstrip("\n") + "\n")
    print("\n".join(check))
    print(f"wrote {args.markdown} in {elapsed:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
