"""Checkpoint-based backfilling vs EASY on KTH and Theta (the checkpoint paper's §4-§5).

    .venv/bin/python experiments/ckpt_backfill.py [--traces DIR] [--out FILE]

For each trace: `easy` with the users' estimates; `easy` with actual runtimes (the paper's
"classical, actual": the trace rewritten at alpha = 0); `ckpt-backfill` with p = 0.1, 0.2,
0.5, without checkpoint overhead and with the paper's Fig. 7 overheads (T_extend = 120, 430
-- Intrepid's T_delay of 215 s per checkpoint write and per restart read --, 1,200 and
3,600 s). Prints a Markdown table
(also written to --out) with the paper's metrics, and each run's wait relative to easy.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from schedd.core.checkpoint import CheckpointPolicy  # noqa: E402
from schedd.core.cluster import NodePool  # noqa: E402
from schedd.core.engine import EngineOptions  # noqa: E402
from schedd.policies import make_policy  # noqa: E402
from schedd.sim import simulate  # noqa: E402
from schedd.traces import normalize, read_trace  # noqa: E402
from schedd.traces.workload import with_estimate_accuracy  # noqa: E402

TRACES = ("KTH-SP2-1996-2.swf", "theta_2023.swf")
# T_extend (= checkpoint write + restart read, each T_delay) as the paper's Fig. 7.
OVERHEADS = {"none": 0.0, "T_extend 120 s": 60.0, "T_extend 430 s": 215.0,
             "T_extend 1200 s": 600.0, "T_extend 3600 s": 1800.0}
COLUMNS = ("wait_s", "wait vs easy", "bsld", "bsld vs easy", "qlen", "bRatio", "pRatio",
           "cNum", "wRatio", "util")


def run(trace, policy: str, opts: list[str], ckpt_s: float) -> dict:
    cluster = NodePool(trace.max_nodes)
    options = EngineOptions(checkpoint=CheckpointPolicy(periodic="none", cost_model="fixed",
                                                         fixed_s=ckpt_s))
    result = simulate(trace, cluster, make_policy(policy, opts, cluster),
                      engine_options=options)
    return result.summary


def row(label: str, s: dict, base: dict) -> str:
    cells = [
        f"{s['mean_wait_s']:,.0f}", f"{s['mean_wait_s'] / base['mean_wait_s']:.1%}",
        f"{s['mean_bounded_slowdown']:.2f}",
        f"{s['mean_bounded_slowdown'] / base['mean_bounded_slowdown']:.1%}",
        f"{s['mean_queue_length']:.2f}", f"{s['backfill_ratio']:.3f}",
        f"{s['preemption_ratio']:.3f}", f"{s['checkpoints_per_node_day']:.3f}",
        f"{s['wasted_ratio']:.4f}", f"{s['utilization']:.4f}",
    ]
    return f"| {label} | " + " | ".join(cells) + " |"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default=str(ROOT.parent / "shared" / "traces"))
    ap.add_argument("--out", default=None, help="also write the table here")
    args = ap.parse_args()
    lines = []
    started = time.perf_counter()
    for name in TRACES:
        raw = read_trace(Path(args.traces) / name)
        trace = normalize(raw)
        actual = normalize(with_estimate_accuracy(raw, 0.0))
        base = run(trace, "easy", [], 0.0)
        lines += ["", f"**{name}** ({len(trace):,} jobs on {trace.max_nodes} nodes)", "",
                  "| run | " + " | ".join(COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|",
                  row("easy (user estimates)", base, base),
                  row("easy, actual runtimes (alpha 0)", run(actual, "easy", [], 0.0), base)]
        for overhead, ckpt_s in OVERHEADS.items():
            for p in (0.1, 0.2, 0.5):
                s = run(trace, "ckpt-backfill", [f"p={p}"], ckpt_s)
                lines.append(row(f"ckpt-backfill p={p}, overhead {overhead}", s, base))
        print("\n".join(lines[-(6 + 3 * len(OVERHEADS)):]), flush=True)
    lines.append("")
    lines.append(f"({time.perf_counter() - started:.0f} s)")
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
