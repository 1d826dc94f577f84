"""What each of the four C modules gains over the Python or NumPy path it runs ahead of,
measured in one process on one trace (issue 35, item 4: does a module's gain pay for its
risk?).

    .venv/bin/python bench/native.py [--trace PATH] [--rounds 7]

For each module, the work it speeds up is done with the module and with it switched off
(its caller's `native` attribute set to None, as where it is not built), alternating,
`--rounds` times; reported: the best CPU time of each (time.process_time, the least
disturbed by a shared machine) and the ratio. Both ways must give the same bytes or
numbers, which is checked on the way.

* `_whole_numbers.c`: `read_trace` of the trace (NumPy's loadtxt without it).
* `_easy_plain.c`: `simulate` with `easy` on a node pool (the plain-EASY fast path; the
  mypyc-compiled Python loop without it).
* `_row_text.c`: writing jobs.swf and jobs.csv, and all four files (the NumPy cell
  matrices without it; in one thread here, where simulate writes with two).
* `_lowest_first.c`: writing segments.csv (node_numbers.LowestFirst without it; the rows'
  text by the C formatter both ways).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT.parent / "shared" / "traces" / "KTH-SP2-1996-2.swf"


def best(work: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(rounds):
        t0 = time.process_time()
        result = work()
        times.append(time.process_time() - t0)
    return min(times), result


def compare(name: str, module: Any, attribute: str, work: Callable[[], Any], rounds: int,
            same: Callable[[Any, Any], bool]) -> tuple[str, float, float]:
    """`work` with `module.attribute` as built and as None, alternating rounds."""
    native = getattr(module, attribute)
    if native is None:
        raise SystemExit(f"{name} is not built here")
    with_c, without = [], []
    results: list[Any] = [None, None]
    for _ in range(rounds):
        for off in (False, True):
            setattr(module, attribute, None if off else native)
            try:
                t, results[off] = best(work, 1)
            finally:
                setattr(module, attribute, native)
            (without if off else with_c).append(t)
    if not same(results[0], results[1]):
        raise SystemExit(f"{name}: the two paths differ")
    return name, min(with_c), min(without)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", default=str(DEFAULT))
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    import numpy as np

    from schedd import row_text, run_files
    from schedd.core.cluster import NodePool
    from schedd.policies import easy_plain, make_policy
    from schedd.sim import simulate, write_jobs_csv, write_jobs_swf
    from schedd.traces import normalize, read_trace, swf

    raw = read_trace(args.trace)
    trace = normalize(raw)
    cluster = NodePool(trace.max_nodes)

    def run() -> Any:
        return simulate(trace, cluster, make_policy("easy", [], cluster), record=True)

    done = run()
    folder = Path(tempfile.mkdtemp(prefix="bench-native-"))

    def job_files() -> bytes:
        write_jobs_swf(folder / "jobs.swf", trace, done.results, [])
        write_jobs_csv(folder / "jobs.csv", done.results, trace)
        return (folder / "jobs.swf").read_bytes() + (folder / "jobs.csv").read_bytes()

    def all_files() -> bytes:
        run_files.write_timeseries_csv(folder / "timeseries.csv", done.recorder, 0.0)
        return job_files() + segments() + (folder / "timeseries.csv").read_bytes()

    def segments() -> bytes:
        run_files.write_segments_csv(folder / "segments.csv", done.recorder, cluster,
                                     done.results, Path(args.trace).name)
        return (folder / "segments.csv").read_bytes()

    def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
        return a.keys() == b.keys() and all(
            np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f") for k in a)

    def same_columns(a: Any, b: Any) -> bool:
        return same(a.columns, b.columns)

    def same_run(a: Any, b: Any) -> bool:
        return same(a.results, b.results)

    rows = [
        compare("_whole_numbers.c: read_trace", swf, "native",
                lambda: read_trace(args.trace), args.rounds, same_columns),
        compare("_easy_plain.c: simulate easy", easy_plain, "native", run, args.rounds,
                same_run),
        compare("_row_text.c: jobs.swf + jobs.csv", row_text, "native", job_files,
                args.rounds, lambda a, b: a == b),
        compare("_row_text.c: all four files", row_text, "native", all_files,
                args.rounds, lambda a, b: a == b),
        compare("_lowest_first.c: segments.csv", run_files, "native_fit", segments,
                args.rounds, lambda a, b: a == b),
    ]
    print(f"{Path(args.trace).name}: {len(trace)} jobs; best CPU time of {args.rounds} "
          "alternating rounds")
    print("| module: work | with C ms | without ms | speed-up |")
    print("|---|---|---|---|")
    for name, c, py in rows:
        print(f"| {name} | {c * 1e3:.1f} | {py * 1e3:.1f} | {py / c:.1f}x |")


if __name__ == "__main__":
    main()
