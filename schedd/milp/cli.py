"""`schedd milp`: solve the real-time paper's offline MILP on a small trace; `schedd milp
generate`: write the Table 3 logs (docs/milp.md).

    schedd milp --trace FILE [--cluster bgq:16] [--threshold 1.2] [--time-limit 60]
                [--resume same|any] [--json OUT]
    schedd milp generate --out DIR [--count 20] [--seed S] [--batch 5] [--realtime 2]

`add_parser(subparsers)` adds the `milp` command to a parent parser, `run(args)` runs it;
`python -m schedd.milp.cli ...` works the same without the parent. Errors a user can
cause end with one sentence on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from schedd.milp.common import (
    DEFAULT_MIN_FRACTION,
    DEFAULT_RESUME,
    DEFAULT_SEED,
    DEFAULT_THRESHOLD,
    DEFAULT_TOLERANCE,
    RESUME_MODES,
    MilpError,
)
from schedd.options import _at_least, _within

if TYPE_CHECKING:  # the model loads HiGHS: imported where a solve needs it
    from schedd.milp.model import MilpJob, MilpResult

DEFAULT_CLUSTER = "bgq:16"
DEFAULT_MAX_JOBS = 30


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add `milp` (and `milp generate`) to the subparsers of a parent parser."""
    p = subparsers.add_parser(
        "milp", help="optimal offline schedule of a small real-time trace (MILP, HiGHS)",
        description="Solve the real-time paper's offline MILP (§5, corrected; docs/milp.md) "
        "for a small trace of batch (class B) and real-time (class R, field 22) jobs: "
        "minimise the mean batch slowdown subject to the mean real-time slowdown <= "
        "--threshold; if that is infeasible, search upward for the smallest feasible "
        "threshold. Prints every job's partition, pieces and slowdown. Subcommand "
        "`generate` writes the Table 3 random logs.")
    p.add_argument("--trace", default=None, metavar="FILE",
                   help="SWF / extended SWF trace (field 4 runtime, field 9 walltime, "
                   "field 22 class R = real-time)")
    p.add_argument("--cluster", default=DEFAULT_CLUSTER,
                   help=f"partitioned machine: bgq:M, mira or mira-blocks (default "
                   f"{DEFAULT_CLUSTER})")
    p.add_argument("--threshold", type=_at_least(0, strict=True), default=DEFAULT_THRESHOLD,
                   metavar="SD", help=f"bound on the mean real-time slowdown, eq. 37 "
                   f"(default {DEFAULT_THRESHOLD:g}, Table 3)")
    p.add_argument("--tolerance", type=_at_least(0, strict=True), default=DEFAULT_TOLERANCE,
                   metavar="D", help="precision of the upward threshold search "
                   f"(default {DEFAULT_TOLERANCE:g})")
    p.add_argument("--lexicographic", action="store_true",
                   help="minimise the mean real-time slowdown first, then the mean batch "
                   "slowdown subject to it (+1e-6); ignores --threshold")
    p.add_argument("--time-limit", type=_at_least(0, strict=True), default=60.0, metavar="S",
                   help="seconds per HiGHS solve (default 60); a solve stopped by it "
                   "reports its MIP gap")
    p.add_argument("--min-piece", type=_within(0.0, 0.5, "a fraction"),
                   default=DEFAULT_MIN_FRACTION, metavar="F",
                   help="least share of the work in each piece of a preempted batch job"
                   f", eq. 51 (default {DEFAULT_MIN_FRACTION:g})")
    p.add_argument("--no-preemption", action="store_true",
                   help="no batch job may be preempted")
    p.add_argument("--resume", choices=RESUME_MODES, default=DEFAULT_RESUME,
                   help="where a preempted batch job resumes: on the same partition block "
                   "(the paper's model, default) or on any block of its size")
    p.add_argument("--seed", type=_at_least(0, int), default=0,
                   help="HiGHS random_seed (default 0); HiGHS runs on one thread")
    p.add_argument("--max-jobs", type=_at_least(1, int), default=DEFAULT_MAX_JOBS, metavar="N",
                   help=f"refuse traces with more jobs (default {DEFAULT_MAX_JOBS}): the "
                   "model grows with the square of the job count")
    p.add_argument("--json", default=None, metavar="OUT", help="also write the result here")
    p.add_argument("--lenient", action="store_true", help="skip malformed trace lines")
    sub = p.add_subparsers(dest="milp_command", metavar="{generate}")
    g = sub.add_parser(
        "generate", help="write the Table 3 random logs",
        description="Write COUNT random logs of BATCH batch and REALTIME real-time jobs "
        "(Table 3: 5 + 2 on 8,192 nodes, sizes uniform from 512-8192). Submit times "
        "uniform on [0, 3600] s, runtimes uniform on [600, 7200] s, walltime = runtime x "
        "U(1, 1.5) rounded up to whole minutes. Same seed, same files.")
    g.add_argument("--out", required=True, metavar="DIR", help="output directory")
    g.add_argument("--count", type=_at_least(1, int), default=20, help="logs (default 20)")
    g.add_argument("--seed", type=_at_least(0, int), default=DEFAULT_SEED,
                   help=f"random seed (default {DEFAULT_SEED})")
    g.add_argument("--batch", type=_at_least(0, int), default=5, help="BJs per log (default 5)")
    g.add_argument("--realtime", type=_at_least(0, int), default=2,
                   help="RTJs per log (default 2)")
    g.add_argument("--cluster", default=DEFAULT_CLUSTER,
                   help=f"machine; sizes are the Table 3 sizes it has (default "
                   f"{DEFAULT_CLUSTER})")
    return p


def run(args: argparse.Namespace) -> int:
    """Run `schedd milp` from parsed arguments; 0 on success, 2 on a user error."""
    from schedd.core.cluster import ClusterError
    from schedd.traces import TraceError

    try:
        if getattr(args, "milp_command", None) == "generate":
            return _generate(args)
        if args.trace is None:
            raise MilpError("--trace FILE is required (or use `schedd milp generate`)")
        return _solve(args)
    except (MilpError, TraceError, ClusterError, ValueError) as err:
        print(f"schedd: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"schedd: error: {err.filename or ''}: {err.strerror}", file=sys.stderr)
        return 2


def _block_cluster(spec: str) -> Any:
    from schedd.core.bgq import BlockCluster
    from schedd.core.cluster_spec import parse_cluster

    cluster = parse_cluster(spec)
    if not isinstance(cluster, BlockCluster):
        raise MilpError(f"the MILP needs a partitioned machine (bgq:M, mira, mira-blocks), "
                        f"not {spec}")
    return cluster


def read_jobs(path: str, cluster: Any, *, lenient: bool = False) -> list[MilpJob]:
    """The jobs of an (extended) SWF trace: class R real-time, class B batch."""
    from schedd.milp.model import MilpJob
    from schedd.sim import max_job_nodes
    from schedd.traces import normalize, read_trace

    raw = read_trace(path, lenient=lenient)
    trace = normalize(raw, max_nodes=max_job_nodes(cluster), lenient=lenient)
    too_big = trace.dropped.get("nodes>max", 0)
    if too_big:
        raise MilpError(f"{path}: {too_big} job(s) ask for more nodes than {cluster.name} "
                        f"has in one partition")
    cols = trace.columns
    jobs = []
    for k in range(len(trace)):
        letter = str(cols["job_class"][k])
        if letter not in ("B", "R"):
            raise MilpError(f"{path}: job {int(cols['job_id'][k])} has class {letter}; the "
                            f"MILP takes batch (B) and real-time (R) jobs only")
        jobs.append(MilpJob(
            id=int(cols["job_id"][k]), submit=float(cols["submit"][k]),
            runtime=float(cols["runtime"][k]), nodes=int(cols["nodes"][k]),
            realtime=letter == "R", walltime=float(cols["walltime"][k]),
            preemptable=int(cols["checkpointable"][k]) != 0,
            ckpt_gb=float(cols["ckpt_gb"][k])))
    return jobs


def _solve(args: argparse.Namespace) -> int:
    from schedd.milp.model import SolveOptions, make_instance, solve

    cluster = _block_cluster(args.cluster)
    jobs = read_jobs(args.trace, cluster, lenient=args.lenient)
    if len(jobs) > args.max_jobs:
        raise MilpError(f"{args.trace} has {len(jobs)} jobs; the MILP is meant for small "
                        f"offline instances (at most --max-jobs {args.max_jobs})")
    instance = make_instance(jobs, cluster, min_fraction=args.min_piece,
                             preemption=not args.no_preemption, resume=args.resume)
    options = SolveOptions(time_limit=args.time_limit, seed=args.seed)
    result = solve(instance, args.threshold, tolerance=args.tolerance, options=options,
                   lexicographic=args.lexicographic)
    print(format_result(result, f"{args.trace} on {cluster.name}, resume {args.resume}"))
    if args.json:
        payload = {"trace": args.trace, "cluster": cluster.name,
                   "min_piece": args.min_piece, "preemption": not args.no_preemption,
                   "resume": args.resume,
                   "time_limit": args.time_limit, "seed": args.seed,
                   "overheads": {str(j.id): c for j, c in zip(instance.jobs,
                                                               instance.overhead, strict=True)},
                   "horizon": instance.horizon, **result.as_dict()}
        with open(args.json, "w") as out:
            json.dump(payload, out, indent=2)
            out.write("\n")
        print(f"wrote {args.json}")
    return 0 if result.feasible else 1


def _num(x: float | None, digits: int = 4) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def format_result(result: MilpResult, title: str) -> str:
    """The per-job table and the summary lines `schedd milp` prints."""
    lines = [f"MILP {title}: {result.mode} mode", ""]
    head = ("job", "class", "nodes", "submit", "runtime", "block", "pieces (start-end s)",
            "preempted", "SD")
    rows = []
    for j in sorted(result.jobs, key=lambda j: (j.submit, j.id)):
        pieces = ", ".join(f"{s:.1f}-{e:.1f}" for s, e in j.pieces)
        # a BJ resumed elsewhere (resume "any") shows the block of each piece
        block = ", ".join(j.blocks) if len(set(j.blocks)) > 1 else j.block
        rows.append((str(j.id), "R" if j.realtime else "B", str(j.nodes), f"{j.submit:g}",
                     f"{j.runtime:g}", block, pieces, "yes" if j.preempted else "no",
                     f"{j.slowdown:.4f}"))
    widths = [max(len(r[k]) for r in [head, *rows]) for k in range(len(head))]
    lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip())
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    lines.append("")
    lines.append(f"mean BJ SD   {_num(result.mean_bj_sd)}")
    lines.append(f"mean RTJ SD  {_num(result.mean_rtj_sd)}")
    if result.threshold is not None and result.mode == "threshold":
        th = f"{result.threshold:.4f}"
        if result.threshold_lower is not None:
            proof = "proven" if result.threshold_proven else "not proven (time limit)"
            th += (f" (requested {result.threshold_requested:g} infeasible; searched: "
                   f"infeasible at {result.threshold_lower:.4f}, {proof})")
        lines.append(f"threshold    {th}")
    elif result.threshold is not None:
        lines.append(f"threshold    {result.threshold:.6f} (least mean RTJ SD + 1e-6)")
    status = result.status
    if result.gap is not None and result.status != "optimal":
        status += f", MIP gap {100 * result.gap:.2f}%"
    lines.append(f"status       {status}")
    lines.append(f"solves       {result.solves} ({result.solve_seconds:.2f} s)")
    lines.append(f"model        {result.binaries} binaries, {result.columns} columns, "
                 f"{result.rows} rows")
    return "\n".join(lines)


def _generate(args: argparse.Namespace) -> int:
    from schedd.milp.instances import write_table3
    from schedd.outputs import staged_dir

    cluster = _block_cluster(args.cluster)
    if args.batch + args.realtime < 1:
        raise MilpError("a log needs at least one job (--batch + --realtime >= 1)")
    with staged_dir(args.out) as out:  # all the logs or none (issue 34)
        paths = write_table3(out, cluster, count=args.count, seed=args.seed,
                             batch=args.batch, realtime=args.realtime)
    print(f"wrote {len(paths)} logs to {args.out} ({paths[0].name} .. {paths[-1].name})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="schedd")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
