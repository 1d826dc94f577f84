"""Real-time paper experiments (docs/realtime.md), on the Mira traces of ../shared/traces.

    .venv/bin/python experiments/realtime.py [--trials 10] [--workers 2] [--markdown FILE]

1. The acceptance run: mira_2018_wk1 with 5, 10, 15 and 20% RTJs (default marking, seeds
   1000..1009 pooled) under every scheme of `schedd compare` (easy, easy-wfp2, rt-hpq,
   rt-preempt x NO/SYS/APP-5%/APP-10%/JIT, wcjs x APP-5%/APP-10%/JIT), and the check of
   the issue's target at 10%: wcjs+JIT cuts the RTJ mean bounded slowdown by >= 30% and
   raises the BJ mean by <= 15% against `easy` (also shown against `easy-wfp2`, the
   paper's own baseline).
2. The paper's other RTJ variants at 10%: only jobs shorter than 90 minutes, and RTJs added
   from the APS runtimes.
3. Sensitivity of wcjs+JIT to its weights and thresholds (the notes' defaults against
   alternatives) and to Algorithm 1's blocking of the low-priority queue, at 10%.
4. Non-checkpointable batch jobs (never preempted): 0, 25 and 50% of them.
5. wcjs+JIT with Algorithm 1's strict blocking against `blocking=backfill`, 5-20%.
6. The other Mira week (mira_2014-12_wk1), at 10%.

Writes every table to --markdown (default docs/realtime_experiments.md) and prints the
checks. Same trials and seeds give the same output.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from schedd.compare import DEFAULT_RUNS, compare, markdown, parse_run  # noqa: E402

TRACES = ROOT.parent / "shared" / "traces"
WEEK_2018 = TRACES / "mira_2018_wk1_cobalt2swf.swf"
WEEK_2014 = TRACES / "mira_2014-12_wk1_cobalt2swf.swf"
APS = TRACES / "aps_runtimes_seconds.txt"
REFERENCES = ("easy", "easy-wfp2")
WCJS_JIT = "wcjs ckpt=jit"
WCJS_BACKFILL = "wcjs ckpt=jit blocking=backfill"  # Algorithm 1 without its strict blocking
SENSITIVITY = (
    WCJS_JIT,
    WCJS_BACKFILL,
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


def _bsld_mean(result: dict[str, Any], percent: str, label: str, cls: str) -> float:
    return result["results"][percent][label]["stats"]["by_class"][cls][
        "bounded_slowdown_600"]["mean"]


def acceptance(result: dict[str, Any], run: str) -> list[str]:
    """The issue's target at 10% for `run` against each reference run, as Markdown lines."""
    lines = []
    for base in REFERENCES:
        rt0, bj0 = (_bsld_mean(result, "10", base, c) for c in ("realtime", "batch"))
        rt, bj = (_bsld_mean(result, "10", run, c) for c in ("realtime", "batch"))
        d_rt, d_bj = (rt / rt0 - 1) * 100, (bj / bj0 - 1) * 100
        ok = d_rt <= -30 and d_bj <= 15
        lines.append(f"* `{run}` against `{base}`: RTJ {rt0:.3f} -> {rt:.3f} ({d_rt:+.1f}%), "
                     f"BJ {bj0:.3f} -> {bj:.3f} ({d_bj:+.1f}%): "
                     f"**{'PASS' if ok else 'MISS'}** (target RTJ <= -30%, BJ <= +15%)")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--markdown", default=str(ROOT / "docs" / "realtime_experiments.md"))
    args = ap.parse_args()
    if not WEEK_2018.exists():
        print(f"needs {WEEK_2018}", file=sys.stderr)
        return 2
    t0 = time.time()
    common = {"trials": args.trials, "workers": args.workers}
    parts: list[str] = []

    def run(title: str, trace: Path, runs: tuple[str, ...], percents: list[float],
            **kw: Any) -> dict[str, Any]:
        result = compare(str(trace), "mira", [parse_run(r) for r in runs], percents,
                         **common, **kw)
        parts.extend([f"## {title}", "", markdown(result)])
        print(f"{title}: done at {time.time() - t0:.0f} s", flush=True)
        return result

    main_result = run("1. mira_2018_wk1, every scheme, 5-20% RTJs", WEEK_2018, DEFAULT_RUNS,
                      [5.0, 10.0, 15.0, 20.0])
    check = acceptance(main_result, WCJS_JIT)
    run("2a. RTJs only among jobs of at most 90 minutes", WEEK_2018,
        (*REFERENCES, "rt-hpq", "rt-preempt ckpt=jit", WCJS_JIT), [10.0], mode="short")
    if APS.exists():
        run("2b. RTJs added from the APS runtimes", WEEK_2018,
            (*REFERENCES, "rt-hpq", "rt-preempt ckpt=jit", WCJS_JIT), [10.0], mode="aps",
            aps_runtimes=str(APS))
    sensitivity = run("3. wcjs+JIT weight and threshold sensitivity", WEEK_2018,
                      (*REFERENCES, *SENSITIVITY), [10.0])
    check += acceptance(sensitivity, WCJS_BACKFILL)
    for share in (0.25, 0.5):
        run(f"4. {share:.0%} of batch jobs cannot checkpoint", WEEK_2018,
            (*REFERENCES, "rt-preempt ckpt=jit", WCJS_JIT), [10.0],
            non_checkpointable=share)
    run("5. Algorithm 1's strict blocking against backfilling, 5-20% RTJs", WEEK_2018,
        (*REFERENCES, WCJS_JIT, WCJS_BACKFILL), [5.0, 10.0, 15.0, 20.0])
    if WEEK_2014.exists():
        run("6. mira_2014-12_wk1", WEEK_2014,
            (*REFERENCES, "rt-hpq", "rt-preempt ckpt=jit", WCJS_JIT), [10.0])
    elapsed = time.time() - t0
    header = [
        "# Real-time experiments (generated)", "",
        f"`.venv/bin/python experiments/realtime.py --trials {args.trials}` "
        f"({elapsed:.0f} s on {os.cpu_count()} cores). Summary and discussion: "
        "[realtime.md](realtime.md#experiments).", "",
        "## The issue's target (wcjs + JIT at 10% RTJs, mira_2018_wk1)", "", *check, "",
    ]
    Path(args.markdown).write_text("\n".join(header + parts))
    print("\n".join(check))
    print(f"wrote {args.markdown} in {elapsed:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
