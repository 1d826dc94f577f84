"""`schedd` command line: simulate, serve, workload, import, compare, journal, milp, report,
sweep, policies, cluster.

The commands are rows of `schedd.commands.COMMANDS`; a command's parser is built, and its
module imported, only when the command line names it: `schedd --help` imports none of
them, `schedd simulate` only the simulator's.

Errors a user can cause (bad trace line, unknown policy or option, bad cluster spec) end
with one sentence on stderr and exit status 2 — never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys

# NumPy's OpenBLAS starts one thread per core when it loads, which costs a short command
# about 0.1 CPU s (docs/benchmarks.md); schedd does no linear algebra worth a thread pool.
# Set before any command module imports NumPy; a user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from . import heap
from .commands import COMMANDS, LazySubParsersAction, add_commands, load
from .suggest import SuggestingParser

# The errors that are the user's doing, by the module that defines each: an error can only
# have been raised if its module is loaded, so they are checked without importing any.
USER_ERRORS = (
    ("schedd.traces.swf", "TraceError"),
    ("schedd.core.cluster", "ClusterError"),
    ("schedd.policies.base", "PolicyError"),
    ("schedd.core.decisions", "DecisionError"),
    ("schedd.compare", "CompareError"),
    ("schedd.sweep.cells", "SweepError"),
    ("schedd.outputs", "UsageError"),
)


def build_parser() -> argparse.ArgumentParser:
    parser = SuggestingParser(
        prog="schedd",
        description="HPC job-scheduler engine: offline simulation of scheduling policies on "
        "node pools and Blue Gene/Q partitions.",
    )
    sub = parser.add_subparsers(dest="command", required=True, action=LazySubParsersAction)
    add_commands(sub, COMMANDS)
    return parser


def is_user_error(err: BaseException) -> bool:
    """Whether `err` is one of USER_ERRORS (one sentence, exit 2)."""
    for module, name in USER_ERRORS:
        loaded = sys.modules.get(module)
        if loaded is not None and isinstance(err, getattr(loaded, name)):
            return True
    return False


def main(argv: list[str] | None = None) -> int:
    # A command's imports allocate many objects and free few: with CPython's thresholds
    # `schedd simulate` made about 45 collections while importing. A long run's thresholds
    # hold from the start instead (schedd/heap.py).
    heap.raise_thresholds(os.environ.get(heap.ENV, ""))
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["serve"]:  # only `serve` reads a config file (--config)
        from .daemon.config import ConfigError, expand_config

        try:
            words = expand_config(words)
        except ConfigError as err:
            print(f"schedd: error: {err}", file=sys.stderr)
            return 2
    args = build_parser().parse_args(words)
    run = next(command.run for command in COMMANDS if command.name == args.command)
    try:
        plugins = getattr(args, "plugin", [])
        if plugins:
            from .policies import load_plugin

            for plugin in plugins:
                load_plugin(plugin)
        return load(run)(args)
    except BrokenPipeError:
        return 1
    except Exception as err:
        if not is_user_error(err):
            raise
        print(f"schedd: error: {err}", file=sys.stderr)
        return 2


def _sample_path() -> str:
    """The bundled sample trace (`schedd simulate`'s default; clients/replay.py's too)."""
    from .simulate_cli import sample_path

    return sample_path()


if __name__ == "__main__":
    sys.exit(main())
