"""Results stay byte-identical across an engine change: run every policy family on the
test traces through `schedd simulate` and save, or compare with a saved run, the output
files (issue 21: "every change keeps results byte-identical").

    python bench/identical.py save DIR      # before the change
    python bench/identical.py check DIR     # after it: exit 1 and name every file that differs

Each case is one whole `schedd simulate` process with the interpreter running this script
(so a mypyc build is checked as users run it). Compared: jobs.swf, jobs.csv, segments.csv
and timeseries.csv (summary.json carries the run's options, which may gain fields).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "traces"
FILES = ("jobs.swf", "jobs.csv", "segments.csv", "timeseries.csv")


def workloads(work: Path) -> dict[str, Path]:
    """The test traces and the derived workloads the cases run on (made here, seeded)."""
    lublin, kth = TRACES / "lublin_256.swf", TRACES / "KTH-SP2-1996-2.swf"
    made = {
        "lublin-ecc": ["workload", "lublin", "--jobs", "2000", "--seed", "3", "--procs", "256",
                       "--ecc", "--pd", "0.1", "-o"],
        "hybrid": ["workload", "hybrid", str(lublin), "--seed", "2", "-o"],
        "realtime": ["workload", "realtime", str(TRACES / "mira_2018_wk1_cobalt2swf.swf"),
                     "--percent", "10", "--seed", "1", "-o"],
    }
    out = {"lublin": lublin, "kth": kth}
    for name, args in made.items():
        path = work / f"{name}.swf"
        if not path.exists():
            _schedd([*args, str(path)], work)
        out[name] = path
    return out


# name -> (workload, schedd simulate arguments)
CASES: dict[str, tuple[str, list[str]]] = {
    "easy-lublin": ("lublin", ["--policy", "easy"]),
    "easy-kth": ("kth", ["--policy", "easy"]),
    "easy-bestfit-lublin": ("lublin", ["--policy", "easy-bestfit"]),
    "easy-failures": ("lublin", ["--policy", "easy", "--mtbf", "50", "--seed", "4",
                                 "--ckpt", "sys", "--ckpt-interval", "1800"]),
    "easy-mira": ("realtime", ["--policy", "easy", "--cluster", "mira"]),
    "fcfs-lublin": ("lublin", ["--policy", "fcfs"]),
    "conservative-lublin": ("lublin", ["--policy", "conservative", "--limit", "3000"]),
    "ckpt-backfill-lublin": ("lublin", ["--policy", "ckpt-backfill", "--ckpt", "sys"]),
    "delayed-los-ecc": ("lublin-ecc", ["--policy", "delayed-los"]),
    "los-ecc": ("lublin-ecc", ["--policy", "los-de"]),
    "hybrid": ("hybrid", ["--policy", "hybrid"]),
    "wcjs-realtime": ("realtime", ["--policy", "wcjs", "--cluster", "mira"]),
    "rt-preempt-realtime": ("realtime", ["--policy", "rt-preempt", "--cluster", "mira"]),
    "plan-sa-small": ("lublin", ["--policy", "plan-sa", "--limit", "300"]),
}


def _schedd(args: list[str], cwd: Path) -> None:
    # Run from the work directory: `-m` puts the current directory first on sys.path, and
    # the build under test is the one the interpreter has installed.
    proc = subprocess.run([sys.executable, "-m", "schedd", *args], capture_output=True,
                          text=True, cwd=cwd)
    if proc.returncode != 0:
        raise SystemExit(f"schedd {' '.join(args)} failed:\n{proc.stderr}")


def digests(work: Path, only: list[str] | None) -> dict[str, dict[str, str]]:
    traces = workloads(work)
    out: dict[str, dict[str, str]] = {}
    for name, (workload, args) in CASES.items():
        if only and name not in only:
            continue
        run_dir = work / "runs" / name
        _schedd(["simulate", "--trace", str(traces[workload]), "--out", str(run_dir),
                 "--no-progress", "--quiet", *args], work)
        out[name] = {f: hashlib.sha256((run_dir / f).read_bytes()).hexdigest() for f in FILES}
        print(f"{name}: {out[name]['jobs.swf'][:16]}", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("save", "check"))
    parser.add_argument("dir", help="where the digests (digests.json) and work files live")
    parser.add_argument("--case", action="append", help="run only this case (repeatable)")
    args = parser.parse_args()
    work = Path(args.dir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    saved_path = work / "digests.json"
    if args.mode == "save":
        saved_path.write_text(json.dumps(digests(work, args.case), indent=1) + "\n")
        return
    saved = json.loads(saved_path.read_text())
    now = digests(work, args.case)
    differ = [f"{case}/{f}" for case, files in now.items() for f, digest in files.items()
              if saved.get(case, {}).get(f) != digest]
    if differ:
        raise SystemExit("differ from the saved run: " + ", ".join(differ))
    print(f"identical: {len(now)} cases x {len(FILES)} files")


if __name__ == "__main__":
    main()
