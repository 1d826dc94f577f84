"""`schedd workload`: make workloads for experiments (transformed or generated traces).
Its subcommands are listed in WORKLOAD_COMMANDS and built only when named, so `schedd
workload lublin` does not import the hybrid and real-time tools."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .commands import Command, LazySubParsersAction, add_commands, load
from .options import _at_least
from .options import probability as _probability
from .outputs import UsageError
from .outputs import writable_file as _writable_file

WORKLOAD_COMMANDS: tuple[Command, ...] = (
    Command("accuracy", "set the accuracy of runtime estimates",
            "schedd.workload_cli:add_accuracy_parser", "schedd.workload_cli:run_accuracy"),
    Command("lublin", "generate a Lublin-Feitelson CWF workload (LOS paper, Sec. IV-D)",
            "schedd.workload_cli:add_lublin_parser", "schedd.workload_cli:run_lublin"),
    Command("hybrid", "mark a trace as a hybrid on-demand / rigid / malleable workload "
            "(hybrid paper, Sec. IV-A/B)",
            "schedd.workload_cli:add_hybrid_parser", "schedd.workload_cli:run_hybrid"),
    Command("realtime", "mark or add real-time jobs (RTJs) in a trace (real-time paper, "
            "Sec. 7.1.2-7.1.3)",
            "schedd.workload_cli:add_realtime_parser", "schedd.workload_cli:run_realtime"),
)


def add_parser(sub: Any) -> argparse.ArgumentParser:
    wl = sub.add_parser("workload", help="make workloads for experiments",
                        description="Write transformed or generated traces (CWF/SWF).")
    wl_sub = wl.add_subparsers(dest="workload_command", required=True,
                               action=LazySubParsersAction)
    add_commands(wl_sub, WORKLOAD_COMMANDS)
    return wl


def run(args: argparse.Namespace) -> int:
    _writable_file(args.out)  # before the work: an unwritable path is one sentence
    command = next(c for c in WORKLOAD_COMMANDS if c.name == args.workload_command)
    return load(command.run)(args)


def add_accuracy_parser(wl_sub: Any) -> None:
    acc = wl_sub.add_parser(
        "accuracy", help="set the accuracy of runtime estimates",
        description="Rewrite requested times as t_sch = t_run + alpha x (t_req - t_run) (the "
        "checkpoint-backfilling paper, §4.2): alpha 0 gives exact estimates, 1 the trace's.")
    acc.add_argument("input", nargs="?", metavar="INPUT", help="SWF/CWF trace, plain or .gz")
    acc.add_argument("--trace", dest="old_trace", default=None, help=argparse.SUPPRESS)
    acc.add_argument("--alpha", type=_at_least(0), required=True, metavar="A",
                     help="0 = actual runtimes, 1 = unchanged")
    acc.add_argument("-o", "--out", required=True, metavar="OUTPUT",
                     help="output trace (.gz: gzip)")
    acc.add_argument("--lenient", action="store_true",
                     help="skip malformed trace lines (and report how many) instead of "
                     "stopping")


def add_lublin_parser(wl_sub: Any) -> None:
    lub = wl_sub.add_parser(
        "lublin", help="generate a Lublin-Feitelson CWF workload (LOS paper, Sec. IV-D)",
        description="Generate jobs from the Lublin-Feitelson model as the LOS paper "
        "parameterises it (Tables I and II): sizes in units of --unit processors, small (1-3 "
        "units) with probability P_S; hyper-Gamma runtimes correlated with size; Gamma "
        "arrivals with beta_arr solved for the target load; dedicated jobs with requested "
        "start times; ET/RT elastic control commands only when asked (--ecc, --pe, --pr). "
        "Writes CWF and prints the target and achieved load. See docs/workloads.md.")
    lub.add_argument("--jobs", type=_at_least(1, int), default=500, metavar="N",
                     help="number of jobs (default 500)")
    lub.add_argument("--seed", type=_at_least(0, int), default=0,
                     help="random seed (default 0); same inputs and seed give the same file")
    target = lub.add_mutually_exclusive_group()
    target.add_argument("--load", type=_at_least(0, strict=True), default=0.9, metavar="L",
                        help="target load sum(size x runtime) / (procs x last arrival); "
                        "beta_arr is solved for it (default 0.9)")
    target.add_argument("--beta-arr", type=_at_least(0, strict=True), default=None,
                        metavar="B", help="use this beta_arr instead of a target load (the "
                        "paper sweeps 0.4101-0.6101)")
    lub.add_argument("--procs", type=_at_least(1, int), default=320, metavar="M",
                     help="processors of the machine, a multiple of --unit (default 320)")
    lub.add_argument("--unit", type=_at_least(1, int), default=32, metavar="K",
                     help="allocation unit in processors (default 32)")
    lub.add_argument("--ps", type=_probability, default=0.5, metavar="P",
                     help="P_S, probability of a small job (default 0.5)")
    lub.add_argument("--pd", type=_probability, default=0.0, metavar="P",
                     help="P_D, probability of a dedicated job (default 0: batch only)")
    lub.add_argument("--ecc", action="store_true",
                     help="add the paper's elastic control commands (P_E 0.2, P_R 0.1, its "
                     "elastic experiments); without it, --pe or --pr, the workload has none")
    lub.add_argument("--pe", type=_probability, default=None, metavar="P",
                     help="P_E, probability of a runtime extension (ET) command (default 0; "
                     "0.2 with --ecc)")
    lub.add_argument("--pr", type=_probability, default=None, metavar="P",
                     help="P_R, probability of a runtime reduction (RT) command (default 0; "
                     "0.1 with --ecc)")
    lub.add_argument("--lead", type=_at_least(0), default=3600.0, metavar="S",
                     help="mean seconds from a dedicated job's submission to its requested "
                     "start, exponential (default 3600)")
    lub.add_argument("--ecc-mean", type=_at_least(0), default=0.25, metavar="F",
                     help="mean ECC amount as a fraction of the job's requested time, "
                     "exponential (default 0.25)")
    lub.add_argument("--overestimate", type=_at_least(1), default=1.0, metavar="F",
                     help="requested time = runtime x U(1, F) (default 1: exact estimates)")
    lub.add_argument("-o", "--out", required=True, metavar="OUTPUT",
                     help="output CWF trace (.gz: gzip)")


def _add_transform_io(parser: argparse.ArgumentParser) -> None:
    """INPUT, -o/--out and --lenient of the trace-rewriting workload commands."""
    parser.add_argument("input", metavar="INPUT", help="SWF/CWF trace, plain or .gz")
    parser.add_argument("-o", "--out", required=True, metavar="OUTPUT",
                        help="output trace (.gz: gzip)")
    parser.add_argument("--lenient", action="store_true",
                        help="skip malformed trace lines (and report how many) instead of "
                        "stopping")


def _read_input(args: argparse.Namespace) -> Any:
    """The trace of a workload command's INPUT; says how many lines --lenient skipped."""
    from .traces import read_trace

    trace = read_trace(args.input, lenient=args.lenient)
    if trace.skipped:
        print(f"schedd: skipped {trace.skipped} malformed line(s) of {args.input}",
              file=sys.stderr)
    return trace


def add_hybrid_parser(wl_sub: Any) -> None:
    from .traces.hybrid import MIXES, PROJECT_SOURCES

    hyb = wl_sub.add_parser(
        "hybrid", help="mark a trace as a hybrid on-demand / rigid / malleable workload "
        "(hybrid paper, Sec. IV-A/B)",
        description="Group the jobs of INPUT into projects and give every project one type: "
        "on-demand (O), rigid (B) or malleable (M). Rigid and malleable jobs get a setup time "
        "carved out of their runtime, malleable jobs a minimum size, on-demand jobs advance "
        "notices split into no notice / accurate / early / late as in the paper's Table II. "
        "Same input, options and seed give a byte-identical file. See docs/workloads.md.")
    _add_transform_io(hyb)
    hyb.add_argument("--mix", choices=list(MIXES), default="W5",
                     help="Table II split of on-demand jobs into no notice / accurate / early "
                     "/ late: W1-W4 70%% of one kind and 10%% of the others, W5 25%% each "
                     "(default W5)")
    hyb.add_argument("--seed", type=_at_least(0, int), default=0,
                     help="random seed (default 0)")
    hyb.add_argument("--od-share", type=_probability, default=0.1, metavar="P",
                     help="probability that a project is on-demand (default 0.1)")
    hyb.add_argument("--rigid-share", type=_probability, default=0.6, metavar="P",
                     help="probability that a project is rigid (default 0.6); the rest are "
                     "malleable")
    hyb.add_argument("--min-fraction", type=_probability, default=0.2, metavar="P",
                     help="malleable minimum size as a fraction of the requested size, "
                     "rounded up (default 0.2)")
    hyb.add_argument("--rigid-setup", type=_at_least(0), nargs=2, default=[5.0, 10.0],
                     metavar=("MIN", "MAX"),
                     help="rigid setup, uniform in %% of the runtime (default 5 10)")
    hyb.add_argument("--malleable-setup", type=_at_least(0), nargs=2, default=[0.0, 5.0],
                     metavar=("MIN", "MAX"),
                     help="malleable setup, uniform in %% of the runtime (default 0 5)")
    hyb.add_argument("--projects", choices=PROJECT_SOURCES, default="auto",
                     help="what a project is: field 13 (group), field 12 (user), or sessions "
                     "of same-size, same-walltime jobs (session); auto takes group, else user, "
                     "whichever has two or more known values, else session (default auto)")
    hyb.add_argument("--session-gap", type=_at_least(0, strict=True), default=24.0,
                     metavar="HOURS",
                     help="a pause this long between two jobs of one signature starts a new "
                     "session (default 24)")
    hyb.add_argument("--notice-lead", type=_at_least(0, strict=True), nargs=2,
                     default=[15.0, 30.0], metavar=("MIN", "MAX"),
                     help="minutes from an advance notice to the estimated arrival, uniform "
                     "(default 15 30)")
    hyb.add_argument("--late-max", type=_at_least(0), default=30.0, metavar="MINUTES",
                     help="a late on-demand job arrives up to this long after its estimate "
                     "(default 30)")


def add_realtime_parser(wl_sub: Any) -> None:
    from .traces.realtime import MODES, SHORT_BY

    rt = wl_sub.add_parser(
        "realtime", help="mark or add real-time jobs (RTJs) in a trace (real-time paper, "
        "Sec. 7.1.2-7.1.3)",
        description="Make P%% of the jobs of INPUT real-time (field 22 = R). default: P%% "
        "of the kept jobs chosen at random; short: the same count, only among jobs of at "
        "most 90 minutes; aps: every trace job stays batch and new RTJs are added with "
        "runtimes from the APS log, 1-2x walltimes and Exp(2048)-node sizes rounded up to "
        "Mira partitions, so that they make P%% of the total. Optionally rescales sizes "
        "from another machine (eq. 59) and marks a fraction of the batch jobs not "
        "checkpointable. Same input, options and seed give a byte-identical file. See "
        "docs/workloads.md.")
    _add_transform_io(rt)
    rt.add_argument("--percent", type=_at_least(0, strict=True), required=True, metavar="P",
                    help="RTJ percentage, 0 < P < 100 (the paper uses 5, 10, 15, 20)")
    rt.add_argument("--mode", choices=MODES, default="default",
                    help="default: random jobs; short: random jobs of at most --short-max; "
                    "aps: add APS jobs (default: default)")
    rt.add_argument("--seed", type=_at_least(0, int), default=0,
                    help="random seed (default 0; the authors used 1000 + trial)")
    rt.add_argument("--short-max", type=_at_least(0, strict=True), default=90.0,
                    metavar="MINUTES",
                    help="short mode: longest eligible job (default 90)")
    rt.add_argument("--short-by", choices=SHORT_BY, default="walltime",
                    help="short mode: compare the walltime (the authors' simulator) or the "
                    "runtime (the paper's text) with --short-max (default walltime)")
    rt.add_argument("--aps-runtimes", default=None, metavar="FILE",
                    help="aps mode (required there, ignored otherwise): APS runtimes in "
                    "seconds, one per line, e.g. ../shared/traces/aps_runtimes_seconds.txt")
    rt.add_argument("--aps-mean-nodes", type=_at_least(0, strict=True), default=2048.0,
                    metavar="N", help="aps mode: mean of the exponential size (default 2048)")
    rt.add_argument("--non-checkpointable", type=_probability, default=0.0, metavar="F",
                    help="fraction of the batch jobs marked not checkpointable (field 23 = "
                    "0), rounded down (default 0)")
    rt.add_argument("--normalize-from", type=_at_least(1, int), default=None, metavar="NODES",
                    help="eq. 59: the trace's machine has NODES nodes; sizes become "
                    "ceil(size x target / NODES)")
    rt.add_argument("--target-nodes", type=_at_least(1, int), default=49152, metavar="NODES",
                    help="nodes of the machine the workload is for (default 49152, Mira)")


def run_accuracy(args: argparse.Namespace) -> int:
    from .traces.swf import write_trace
    from .traces.workload import with_estimate_accuracy

    if args.old_trace is not None:
        if args.input is not None:
            raise UsageError("give the input trace once: `schedd workload accuracy INPUT`")
        print("schedd: warning: `workload accuracy --trace FILE` is deprecated; write "
              "`schedd workload accuracy FILE --alpha A -o OUTPUT` (as the other workload "
              "commands)", file=sys.stderr)
        args.input = args.old_trace
    if args.input is None:
        raise UsageError("workload accuracy needs the input trace: `schedd workload "
                          "accuracy INPUT --alpha A -o OUTPUT`")
    trace = with_estimate_accuracy(_read_input(args), args.alpha)
    write_trace(args.out, trace)
    print(f"wrote {args.out}: {len(trace)} jobs, requested times at alpha {args.alpha:g}")
    return 0


def run_lublin(args: argparse.Namespace) -> int:
    from .traces.lublin import PAPER_P_EXTEND, PAPER_P_REDUCE, LublinParams, generate
    from .traces.swf import write_trace

    # No ECCs unless asked: --ecc gives the paper's rates, --pe/--pr set their own.
    p_extend = args.pe if args.pe is not None else (PAPER_P_EXTEND if args.ecc else 0.0)
    p_reduce = args.pr if args.pr is not None else (PAPER_P_REDUCE if args.ecc else 0.0)
    params = LublinParams(
        jobs=args.jobs, procs=args.procs, unit=args.unit, p_small=args.ps,
        p_dedicated=args.pd, p_extend=p_extend, p_reduce=p_reduce, load=args.load,
        beta_arr=args.beta_arr, lead=args.lead, ecc_mean=args.ecc_mean,
        overestimate=args.overestimate)
    try:
        result = generate(params, seed=args.seed)
        write_trace(args.out, result.trace)
    except ValueError as err:
        print(f"schedd: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"schedd: error: cannot write {args.out} ({err.strerror})", file=sys.stderr)
        return 2
    trace = result.trace
    dedicated = int((trace.columns["job_class"] == "D").sum())
    kinds = [e.kind for e in trace.eccs]
    print(f"wrote {args.out}: {len(trace)} jobs ({dedicated} dedicated), {len(kinds)} ECCs "
          f"({kinds.count('ET')} ET, {kinds.count('RT')} RT)")
    target = "none (--beta-arr)" if result.target is None else f"{result.target:.4f}"
    print(f"load: target {target}, achieved {result.load:.4f} (beta_arr {result.beta_arr:.6f})")
    return 0


def run_hybrid(args: argparse.Namespace) -> int:
    from .traces.hybrid import SIMULATE_FLAGS, HybridParams, make_hybrid
    from .traces.swf import write_trace

    try:
        params = HybridParams(
            mix=args.mix, od_share=args.od_share, rigid_share=args.rigid_share,
            min_fraction=args.min_fraction,
            rigid_setup=(args.rigid_setup[0] / 100.0, args.rigid_setup[1] / 100.0),
            malleable_setup=(args.malleable_setup[0] / 100.0, args.malleable_setup[1] / 100.0),
            notice_lead=(args.notice_lead[0] * 60.0, args.notice_lead[1] * 60.0),
            late_max=args.late_max * 60.0, projects=args.projects,
            session_gap=args.session_gap * 3600.0, seed=args.seed)
    except ValueError as err:
        print(f"schedd: error: {err}", file=sys.stderr)
        return 2
    hybrid, stats = make_hybrid(_read_input(args), params)
    try:
        write_trace(args.out, hybrid)
    except OSError as err:
        print(f"schedd: error: cannot write {args.out} ({err.strerror})", file=sys.stderr)
        return 2
    jobs, hours = stats["jobs_by_class"], stats["node_hours_by_class"]
    total_hours = sum(hours.values()) or 1.0
    print(f"wrote {args.out}: {stats['jobs']} jobs in {stats['projects']} projects "
          f"({stats['project_source']}), mix {args.mix}, seed {args.seed}")
    for name, letter in (("on-demand", "ondemand"), ("rigid", "rigid"),
                         ("malleable", "malleable")):
        print(f"  {name:10} {jobs[letter]:8} jobs {hours[letter]:14,.0f} node-hours "
              f"({hours[letter] / total_hours:6.1%})")
    kinds = ", ".join(f"{k} {v}" for k, v in stats["ondemand_by_kind"].items())
    print(f"  on-demand notices: {kinds}; {stats['clamped_notices']} clamped to time 0")
    print(f"  single-node jobs of malleable projects re-assigned: "
          f"{stats['single_node_reassigned']}")
    print(f"simulate with: schedd simulate --trace {args.out} {SIMULATE_FLAGS} --out DIR")
    return 0


def run_realtime(args: argparse.Namespace) -> int:
    from .policies import POLICIES
    from .traces.realtime import RealtimeParams, load_aps_runtimes, make_realtime
    from .traces.swf import write_trace

    try:
        params = RealtimeParams(
            percent=args.percent, mode=args.mode, seed=args.seed,
            short_max_s=args.short_max * 60.0, short_by=args.short_by,
            aps_mean_nodes=args.aps_mean_nodes, non_checkpointable=args.non_checkpointable,
            normalize_from=args.normalize_from, target_nodes=args.target_nodes)
        if args.mode == "aps" and args.aps_runtimes is None:
            raise ValueError("--mode aps needs --aps-runtimes FILE (the APS runtimes, e.g. "
                             "../shared/traces/aps_runtimes_seconds.txt)")
    except ValueError as err:
        print(f"schedd: error: {err}", file=sys.stderr)
        return 2
    runtimes = load_aps_runtimes(args.aps_runtimes) if args.mode == "aps" else None
    trace = _read_input(args)
    try:
        marked, stats = make_realtime(trace, params, runtimes)
        write_trace(args.out, marked)
    except ValueError as err:
        print(f"schedd: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"schedd: error: cannot write {args.out} ({err.strerror})", file=sys.stderr)
        return 2
    total = stats["batch"] + stats["realtime"]
    share = stats["realtime"] / total if total else 0.0
    print(f"wrote {args.out}: {stats['jobs']} jobs, {stats['realtime']} real-time (R, "
          f"{share:.2%}) and {stats['batch']} batch (B); mode {args.mode}, "
          f"{args.percent:g} %, seed {args.seed}")
    if args.mode == "short":
        print(f"  eligible: {stats['eligible']} jobs with {args.short_by} <= "
              f"{args.short_max:g} min; wanted {stats['wanted']}, marked {stats['realtime']}")
    if args.mode == "aps":
        print(f"  added {stats['added']} APS jobs; {stats['walltime_raised']} walltimes "
              f"raised to the runtime")
    if stats["jobs"] != total:
        print(f"  {stats['jobs'] - total} job lines copied unmarked (runtime <= 0 or nodes "
              f"outside 1..{args.target_nodes})")
    print(f"  batch jobs not checkpointable: {stats['non_checkpointable']}")
    if args.normalize_from is not None:
        print(f"  sizes x {stats['scale']:.6g} (eq. 59: {args.normalize_from} -> "
              f"{args.target_nodes} nodes, rounded up)")
    cluster = "mira" if args.target_nodes == 49152 else f"nodes:{args.target_nodes}"
    policy = "--policy wcjs --opt ckpt=jit" if "wcjs" in POLICIES else "--policy easy"
    print(f"simulate with: schedd simulate --trace {args.out} --cluster {cluster} {policy} "
          f"--out DIR")
    return 0
