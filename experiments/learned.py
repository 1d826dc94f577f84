"""A learned job-picking policy against the scoring functions, under EASY (issue 36).

    .venv/bin/python experiments/learned.py [--seed S] [--workers W] [--tests N]
        [--train-trace FILE] [--other-trace FILE] [--other-cluster SPEC]
        [--iterations I] [--population P] [--batch B] [--kind linear|mlp]
        [--out DIR] [--markdown FILE]

Trains `schedd.gym.learn.cem` (a linear scoring function by default) on 256-job sequences
drawn from the first 70% of lublin_256's rows, then reports the mean bounded slowdown of
N held-out sequences from the last 30% of lublin_256 and of N sequences of another trace
(KTH-SP2 by default), under the `agent` policy with EASY backfilling around the chosen
job: the learned model beside FCFS (= EASY), SJF, smallest first, WFP3, UNICEF and F1-F4.
Every sequence's first row is drawn from one generator seeded by --seed; the model goes to
DIR/model.json, the table to --markdown (docs/learned.md's table) and DIR/results.json.
The same seed gives the same model and table with any --workers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from schedd.gym import sequences
from schedd.gym.learn import CemConfig, cem, mean_bsld
from schedd.policies.scoring import HEURISTICS, Model, load_model, save_model

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "traces"
_CACHE: dict[tuple[str, str | None], tuple] = {}


def _loaded(trace: str, cluster: str | None) -> tuple:
    key = (trace, cluster)
    if key not in _CACHE:
        _CACHE[key] = sequences.load(trace, cluster)
    return _CACHE[key]


def _one(args: tuple[Model, str, str | None, list[int], int]) -> float:
    model, trace, cluster, starts, jobs = args
    normal, machine = _loaded(trace, cluster)
    return float(mean_bsld(model, normal, machine, starts, jobs).mean())


def _per_sequence(args: tuple[Model, str, str | None, list[int], int]) -> list[float]:
    model, trace, cluster, starts, jobs = args
    normal, machine = _loaded(trace, cluster)
    return [float(v) for v in mean_bsld(model, normal, machine, starts, jobs)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--tests", type=int, default=30, help="held-out sequences per trace")
    p.add_argument("--jobs", type=int, default=256)
    p.add_argument("--train-trace", default=str(TRACES / "lublin_256.swf"))
    p.add_argument("--other-trace", default=str(TRACES / "KTH-SP2-1996-2.swf"))
    p.add_argument("--other-cluster", default=None)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--population", type=int, default=32)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--kind", choices=("linear", "mlp"), default="linear")
    p.add_argument("--out", default="out/learned")
    p.add_argument("--markdown", default=None)
    args = p.parse_args(argv)

    config = CemConfig(kind=args.kind, iterations=args.iterations,
                       population=args.population, batch=args.batch, jobs=args.jobs,
                       seed=args.seed)
    train, _ = _loaded(args.train_trace, None)
    other, _ = _loaded(args.other_trace, args.other_cluster)
    rng = np.random.default_rng([args.seed, 36])
    lo, hi = sequences.start_range(len(train), args.jobs, (0.7, 1.0))
    held_out = [int(s) for s in rng.integers(lo, hi + 1, size=args.tests)]
    lo, hi = sequences.start_range(len(other), args.jobs, (0.0, 1.0))
    other_starts = [int(s) for s in rng.integers(lo, hi + 1, size=args.tests)]

    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        def evaluate(models: list[Model], starts: list[int]) -> list[float]:
            return list(pool.map(_one, [(m, args.train_trace, None, starts, args.jobs)
                                        for m in models]))

        model, history = cem(config, evaluate,
                             sequences.start_range(len(train), args.jobs, (0.0, 0.7)),
                             log=lambda line: print(line, file=sys.stderr))
        train_s = time.perf_counter() - t0
        models = {"learned": model} | {name: load_model(name) for name in HEURISTICS}
        cases = [(name, m, trace, cluster, starts)
                 for name, m in models.items()
                 for trace, cluster, starts in ((args.train_trace, None, held_out),
                                                (args.other_trace, args.other_cluster,
                                                 other_starts))]
        per = list(pool.map(_per_sequence, [(m, trace, cluster, starts, args.jobs)
                                            for _, m, trace, cluster, starts in cases]))
    table: dict[str, dict[str, list[float]]] = {}
    for (name, _, trace, _, _), values in zip(cases, per, strict=True):
        table.setdefault(name, {})[Path(trace).name] = values
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    save_model(out / "model.json", model)
    results = {"seed": args.seed, "config": config.__dict__, "train_seconds": train_s,
               "held_out_starts": held_out, "other_starts": other_starts,
               "history": history, "bsld": table, "model": model.to_json()}
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    text = markdown(table, Path(args.train_trace).name, Path(args.other_trace).name,
                    args.tests)
    print(text)
    print(f"training took {train_s:.0f} s on {args.workers} workers", file=sys.stderr)
    if args.markdown:
        Path(args.markdown).write_text(text)
    return 0


def markdown(table: dict[str, dict[str, list[float]]], train: str, other: str,
             n: int) -> str:
    """Mean bounded slowdown over the sequences (and, per trace, how many of them the
    learned model beats EASY on), one row per chooser."""
    lines = [f"| chooser | {train}, {n} held-out sequences | {other}, {n} sequences |",
             "|---|---:|---:|"]
    for name, by_trace in table.items():
        cells = [f"{np.mean(by_trace[t]):.2f}" for t in (train, other)]
        lines.append(f"| {name if name != 'fcfs' else 'fcfs (= easy)'} | {cells[0]} | "
                     f"{cells[1]} |")
    wins = [sum(a < b for a, b in zip(table["learned"][t], table["fcfs"][t], strict=True))
            for t in (train, other)]
    lines.append("")
    lines.append(f"The learned model has a lower mean bounded slowdown than EASY on "
                 f"{wins[0]} of {n} held-out {train} sequences and {wins[1]} of {n} "
                 f"{other} sequences.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
