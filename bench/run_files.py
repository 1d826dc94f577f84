"""What segments.csv and timeseries.csv cost `schedd simulate` (issue 20: at most 10%).

    .venv/bin/python bench/run_files.py [--repeat 7] [--trace PATH]

Runs the whole `schedd simulate --policy easy` process on the trace with and without
`--no-run-files`, alternating the order every round so the drift of a shared machine hits
both alike, and reports the median wall time of each and their ratio (the figure to
compare across days), plus how many segment and time-series rows the run wrote.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = ROOT.parent / "shared" / "traces" / "lublin_256.swf"


def one(trace: str, out: Path, files: bool) -> float:
    cmd = [sys.executable, "-m", "schedd", "simulate", "--trace", trace, "--out", str(out),
           "--no-progress", "--quiet"] + ([] if files else ["--no-run-files"])
    start = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--trace", default=str(DEFAULT_TRACE))
    args = ap.parse_args()
    timings: dict[bool, list[float]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeat):
            for files in ((False, True) if r % 2 == 0 else (True, False)):
                timings[files].append(one(args.trace, Path(tmp) / str(files), files))
        seg = len((Path(tmp) / "True" / "segments.csv").read_text().splitlines()) - 1
        ts = len((Path(tmp) / "True" / "timeseries.csv").read_text().splitlines()) - 1
    p, q = statistics.median(timings[False]), statistics.median(timings[True])
    print(f"{Path(args.trace).name}: {seg:,} segments, {ts:,} time-series rows; "
          f"{args.repeat} rounds of the whole schedd simulate process")
    print(f"without the files: median {p:.3f} s; with them: median {q:.3f} s; "
          f"ratio {q / p:.3f} (target <= 1.10)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
