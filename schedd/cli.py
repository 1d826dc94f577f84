"""`schedd` command line: simulate, serve, workload, import, compare, journal, milp, report,
sweep, policies, cluster.

The commands are rows of `schedd.commands.COMMANDS`; a command's parser is built, and its
module imported, only when the command line names it: `schedd --help` imports none of
them, `schedd simulate` only the simulator's.

Errors a user can cause (bad trace line, unknown policy or option, bad cluster spec) end
with one sentence on stderr and exit status 2 — never a traceback. Ctrl-C (SIGINT) ends
any command with one line on stderr and exit status 130, after its outputs have been
rolled back (schedd/outputs.py) and its workers stopped.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
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


class Terminated(KeyboardInterrupt):
    """SIGTERM (`kill PID`, a batch system's time limit) on a command other than `serve`
    (which has its own shutdown): stops it as Ctrl-C does, its outputs rolled back."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise Terminated


def main(argv: list[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    command = _command_name(words)
    try:
        if argv is None and command != "serve":  # the process's own command line
            signal.signal(signal.SIGTERM, _on_sigterm)
        return _main(words)
    except KeyboardInterrupt as err:
        return interrupted(f"schedd {command}".rstrip(), err, exiting=argv is None)


def interrupted(prog: str, err: KeyboardInterrupt, *, exiting: bool = True) -> int:
    """Ctrl-C: one line on stderr (a command may say what it kept in the interrupt's
    message) and exit status 130, as a shell gives a process stopped by SIGINT (SIGTERM:
    143). When the process is `exiting` (the command line's own run, not a call from
    Python), a second Ctrl-C while the interpreter exits (Dask's clean-up at exit, a
    thread being joined) is ignored rather than shown as a traceback."""
    if exiting:
        with contextlib.suppress(ValueError):  # not the main thread: nothing to ignore
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _handled_for_python()
    terminated = isinstance(err, Terminated)
    detail = str(err)
    print(f"{prog}: {'terminated' if terminated else 'interrupted'}"
          f"{': ' + detail if detail else ''}", file=sys.stderr, flush=True)
    return 143 if terminated else 130


def _handled_for_python() -> None:
    """Tell CPython the interrupt was handled. When a KeyboardInterrupt passes out of code
    run through PyRun_String* (as some libraries run code) before a caller catches it,
    CPython 3.11 records it as unhandled and, however the program then exits, ends the
    process by SIGINT (status -2 to a parent, 130 in a shell), without a word, after our
    one line (seen with `schedd compare` on Dask, about one Ctrl-C in five). Every
    PyRun_String* clears that record first: running one empty line clears it."""
    import ctypes

    with contextlib.suppress(Exception):  # an interpreter without the C API: as before
        ctypes.pythonapi.PyRun_SimpleString(b"")


def _command_name(words: list[str]) -> str:
    return next((w for w in words if w in {c.name for c in COMMANDS}), "")


def _main(words: list[str]) -> int:
    # A command's imports allocate many objects and free few: with CPython's thresholds
    # `schedd simulate` made about 45 collections while importing. A long run's thresholds
    # hold from the start instead (schedd/heap.py).
    heap.raise_thresholds(os.environ.get(heap.ENV, ""))
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
