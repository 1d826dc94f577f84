"""The table of `schedd`'s subcommands, and subparsers that are built only when named.

Every command is a row: its name, its one-line help, and where its parser and its run
function live ("module:function"). `schedd --help` lists the table without importing a
command's module; `schedd CMD ...` imports only CMD's (issue 21: every command paid about
0.06 CPU s to import all of them just to declare their options). A command's parser
function takes the subparsers object and calls `add_parser(NAME, help=HELP, ...)` on it as
for any argparse parent (so `python -m schedd.milp.cli` still works on its own); the help
line there and in the table must be the same (tests/test_cli_lazy.py checks).

Imports nothing from schedd: this module runs on every command.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple


class Command(NamedTuple):
    name: str
    help: str
    parser: str  # "module:function", function(subparsers) adds the command's parser
    run: str  # "module:function", function(args) -> exit status


COMMANDS: tuple[Command, ...] = (
    Command("simulate", "replay a trace through a policy on virtual time",
            "schedd.simulate_cli:add_parser", "schedd.simulate_cli:run"),
    Command("serve", "run the live daemon (gRPC API, MQTT events, Prometheus metrics)",
            "schedd.daemon.config:add_serve_parser", "schedd.daemon.server:serve_main"),
    Command("workload", "make workloads for experiments",
            "schedd.workload_cli:add_parser", "schedd.workload_cli:run"),
    Command("import", "read a Slurm (sacct, jobcomp) or PBS accounting log into a trace",
            "schedd.slurm.importers.cli:add_parser", "schedd.slurm.importers.cli:run"),
    Command("compare", "run several policies and real-time percentages on one trace",
            "schedd.compare:add_parser", "schedd.compare:run"),
    Command("journal", "check, export or compact a daemon's journal",
            "schedd.daemon.journal_cli:add_parser", "schedd.daemon.journal_cli:run"),
    Command("milp", "optimal offline schedule of a small real-time trace (MILP, HiGHS)",
            "schedd.milp.cli:add_parser", "schedd.milp.cli:run"),
    Command("report", "an HTML page with figures of one run or several side by side",
            "schedd.report.cli:add_parser", "schedd.report.cli:run"),
    Command("sweep", "parameter sweeps on Dask, cached and resumable (docs/sweep.md)",
            "schedd.sweep.cli:add_parser", "schedd.sweep.cli:run"),
    Command("policies", "list policies with their options and defaults",
            "schedd.describe_cli:add_policies_parser", "schedd.describe_cli:run_policies"),
    Command("cluster", "describe a cluster spec",
            "schedd.describe_cli:add_cluster_parser", "schedd.describe_cli:run_cluster"),
)


def load(ref: str) -> Callable[..., Any]:
    """The function that "module:function" names, importing its module."""
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


class _Parsers(dict[str, Any]):
    """The name -> parser map of a LazySubParsersAction (argparse's `choices` of the
    action): its keys are every command, in table order; a command's parser is built when
    first looked up."""

    def __init__(self, action: LazySubParsersAction) -> None:
        super().__init__()
        self._action = action

    def __getitem__(self, name: str) -> Any:
        parser = super().__getitem__(name)
        return self._action.build(name) if parser is None else parser

    def values(self) -> Iterator[Any]:  # type: ignore[override]
        return (self[name] for name in list(self))

    def items(self) -> Iterator[tuple[str, Any]]:  # type: ignore[override]
        return ((name, self[name]) for name in list(self))


class LazySubParsersAction(argparse._SubParsersAction):
    """argparse subparsers whose commands are listed by name and help line up front
    (`add_lazy`) and whose parsers are built by their builder the first time argparse
    (or anyone) looks one up: when the command line names it, or its help is asked for.
    Usage lines, help and error messages are argparse's own, unchanged.

    Use: `parser.add_subparsers(dest=..., action=LazySubParsersAction)`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._name_parser_map = self.choices = _Parsers(self)
        self._builders: dict[str, Callable[[Any], Any]] = {}
        self.built_help: dict[str, str | None] = {}  # the help each builder passed

    def add_lazy(self, name: str, help: str, build: Callable[[Any], Any]) -> None:
        """List `name` with `help`; `build(self)` adds its parser when it is first needed."""
        if name in self._name_parser_map:
            raise argparse.ArgumentError(self, f"conflicting subparser: {name}")
        self._choices_actions.append(self._ChoicesPseudoAction(name, (), help))
        dict.__setitem__(self._name_parser_map, name, None)
        self._builders[name] = build

    def build(self, name: str) -> argparse.ArgumentParser:
        """The parser of `name`, built now if it was not yet."""
        if name in self._builders:
            self._builders[name](self)
            if name in self._builders:  # the builder added no parser of that name
                raise RuntimeError(f"the builder of {name!r} did not add its parser")
        parser: argparse.ArgumentParser = dict.__getitem__(self._name_parser_map, name)
        return parser

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        if name not in self._builders:
            return super().add_parser(name, **kwargs)
        # The builder of a listed command: its help line is already listed, and its name
        # keeps its place in the map (the order of `{a,b,...}` in usage lines).
        if kwargs.pop("aliases", ()):
            raise ValueError(f"lazily built subcommand {name!r} cannot have aliases")
        self.built_help[name] = kwargs.pop("help", None)
        if kwargs.get("prog") is None:
            kwargs["prog"] = f"{self._prog_prefix} {name}"
        parser = self._parser_class(**kwargs)
        dict.__setitem__(self._name_parser_map, name, parser)
        del self._builders[name]
        return parser


def add_commands(sub: Any, commands: tuple[Command, ...]) -> None:
    """List every command of `commands` in `sub` (a LazySubParsersAction, as
    `add_subparsers(action=LazySubParsersAction)` returns it), each built by its `parser`
    function."""
    for command in commands:
        sub.add_lazy(command.name, command.help, _builder(command.parser))


def _builder(ref: str) -> Callable[[Any], Any]:
    def build(action: Any) -> Any:
        return load(ref)(action)

    return build
