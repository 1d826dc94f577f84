"""Engine options shared by every command that runs an engine (`simulate`, `serve`,
`compare`, `milp`): the argparse number types, the checkpoint/failure/elastic option
group, and the conversion to `EngineOptions`. It sits below every command module so
that none of them reaches back up into `schedd.cli`."""

from __future__ import annotations

import argparse
from typing import Any

from .durations import duration_type


def _at_least(low: float, kind: type = float, strict: bool = False):
    """An argparse type: a number >= low (> low when strict), else a one-sentence error."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if value != value or value < low or (strict and value == low):  # NaN too
            raise argparse.ArgumentTypeError(
                f"expected a number {'>' if strict else '>='} {low:g}, got {text}")
        return value

    return parse


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """Checkpoint, failure and elastic-command options, shared by `simulate` and `serve`."""
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                        help="import a module (dotted name or .py file) that registers more "
                        "policies with schedd.policies.register; repeatable")
    ck = parser.add_argument_group(
        "checkpoints, failures and elastic commands",
        "Durations (S) take seconds, [D-]H:MM:SS or units (1h30m); HOURS options take a "
        "plain number as hours and the other forms too (90m = 1.5).")
    ck.add_argument("--ckpt", default=None, choices=["none", "trace", "sys", "app", "daly"],
                    help="periodic checkpoints: none; per-job interval from the trace; "
                    "SYS-CKPT universal interval; APP-CKPT x%% rule; Daly's optimum (default: "
                    "what the policy's preemption scheme needs, e.g. wcjs ckpt=app -> app; "
                    "otherwise trace)")
    ck.add_argument("--ckpt-interval", type=duration_type(0, strict=True), default=3600.0,
                    metavar="S",
                    help="SYS-CKPT interval in compute seconds (default 3600)")
    ck.add_argument("--app-overhead", type=_at_least(0, strict=True), default=10.0,
                    metavar="PCT",
                    help="APP-CKPT overhead budget in %% of walltime (default 10)")
    ck.add_argument("--ckpt-cost", default="io", choices=["io", "hybrid", "fixed"],
                    help="checkpoint time: io = eq. 34 bandwidth model (16 GB/node, 4 GB/s per "
                    "128 nodes, 216 GB/s cap); hybrid = 600 s below 1K nodes, else 1,200 s; "
                    "fixed = --ckpt-seconds for every job")
    ck.add_argument("--ckpt-seconds", type=duration_type(0), default=0.0, metavar="S",
                    help="with --ckpt-cost fixed: seconds per checkpoint write and per restart "
                    "read (the checkpoint paper's T_delay; its T_extend is twice this)")
    ck.add_argument("--no-restart-read", action="store_true",
                    help="a job resuming from a checkpoint pays only its setup, no checkpoint "
                    "read (the hybrid paper's model)")
    ck.add_argument("--mtbf", type=duration_type(0, unit=3600.0), default=0.0, metavar="HOURS",
                    help="inject node failures with this system MTBF (0 = none); also the "
                    "MTBF of --ckpt daly unless --daly-mtbf is given")
    ck.add_argument("--daly-mtbf", type=duration_type(0, strict=True, unit=3600.0), default=None,
                    metavar="HOURS",
                    help="MTBF that Daly's interval (--ckpt daly) assumes (default: --mtbf, "
                    "or 5 without failures)")
    ck.add_argument("--mttr", type=duration_type(0, strict=True, unit=3600.0), default=6.0,
                    metavar="HOURS", help="mean repair time (default 6)")
    ck.add_argument("--no-requeue-on-failure", action="store_true",
                    help="a job hit by a failure ends FAILED instead of being requeued")
    ck.add_argument("--warning", type=duration_type(0), default=120.0, metavar="S",
                    help="malleable jobs' pre-preemption warning (default 120)")
    ck.add_argument("--requeue-remaining", action="store_true",
                    help="a preempted job waits with the walltime it has left (its request "
                    "less the work it keeps), which changes its queue order, estimated "
                    "slowdown and category, as in the real-time authors' simulator "
                    "(default: it keeps its request)")
    ck.add_argument("--ecc-max", type=_at_least(0, int), default=0, metavar="N",
                    help="ECC processor: at most N elastic control commands per job, later "
                    "ones are refused (default 0: no limit)")



def add_policy_arguments(parser: argparse.ArgumentParser, slurm_machine: str) -> None:
    """--policy, --slurm-conf, --slurm-assoc, --slurm-qos and --opt, as `simulate` and
    `serve` share them; `slurm_machine` ends --slurm-conf's help (what the slurm.conf's
    machine stands in for)."""
    parser.add_argument("--policy", default=None,
                        help="policy name (see `schedd policies`; default easy, or slurm "
                        "with --slurm-conf)")
    parser.add_argument("--slurm-conf", default=None, metavar="FILE",
                        help="a slurm.conf: the machine (its nodes and CPUs, partitions) "
                        "and, unless --policy says otherwise, Slurm's scheduling by it "
                        f"(policy slurm; docs/slurm.md){slurm_machine}")
    parser.add_argument("--slurm-assoc", default=None, metavar="FILE",
                        help="`sacctmgr --parsable2 show associations` output: accounts, "
                        "users and their fair-share shares (with --slurm-conf)")
    parser.add_argument("--slurm-qos", default=None, metavar="FILE",
                        help="`sacctmgr --parsable2 show qos` output: QOS priorities for "
                        "PriorityWeightQOS (with --slurm-conf)")
    parser.add_argument("--opt", action="append", default=[], metavar="KEY=VALUE",
                        help="policy option, repeatable")


def periodic_mode(args: argparse.Namespace, policy: Any = None) -> Any:
    """`--ckpt`, or what the policy's preemption scheme needs when it is not given; a
    clash between the two is the user's error (one sentence)."""
    from .policies import PolicyError

    needed = policy.periodic_checkpoints() if policy is not None else None
    if args.ckpt is None:
        return needed or "trace"
    if needed is not None and args.ckpt != needed:
        raise PolicyError(f"policy {policy.name} with these options preempts assuming "
                          f"--ckpt {needed}, not --ckpt {args.ckpt}; drop --ckpt or change "
                          "the policy's ckpt option")
    return str(args.ckpt)


def engine_options_from(args: argparse.Namespace, policy: Any = None, **extra: Any) -> Any:
    from .core.checkpoint import CheckpointPolicy
    from .core.engine import EngineOptions

    return EngineOptions(
        checkpoint=CheckpointPolicy(
            periodic=periodic_mode(args, policy), sys_interval=args.ckpt_interval,
            app_overhead_pct=args.app_overhead, cost_model=args.ckpt_cost,
            fixed_s=args.ckpt_seconds, daly_mtbf=(args.daly_mtbf or args.mtbf or 5.0) * 3600.0,
            restart_read=not args.no_restart_read,
        ),
        warning_s=args.warning,
        requeue_on_failure=not args.no_requeue_on_failure,
        mtbf_s=args.mtbf * 3600.0,
        mttr_s=args.mttr * 3600.0,
        ecc_max_per_job=args.ecc_max,
        requeue_remaining=args.requeue_remaining,
        **extra,
    )


def _within(low: float, high: float, what: str) -> Any:
    """An argparse type: a number in [low, high] (`what` names it), else one sentence."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not low <= value <= high:  # NaN too
            raise argparse.ArgumentTypeError(
                f"expected {what} in [{low:g}, {high:g}], got {text}")
        return value

    return parse


probability = _within(0.0, 1.0, "a probability")
