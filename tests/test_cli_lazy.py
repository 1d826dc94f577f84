"""`schedd`'s subcommands are listed from a table and their parsers built only when named
(schedd/commands.py, issue 21): the listing must stay argparse's own, the table's help
lines the parsers' own, and only the named command's parser may be built. Which modules a
command line loads is tested in tests/test_import_graph.py."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

from schedd.cli import build_parser, main
from schedd.commands import COMMANDS, LazySubParsersAction, load
from schedd.suggest import SuggestingParser
from schedd.workload_cli import WORKLOAD_COMMANDS


@pytest.fixture(autouse=True)
def _fixed_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps help to the terminal's width


def subcommands(parser: argparse.ArgumentParser) -> LazySubParsersAction:
    return next(a for a in parser._actions if isinstance(a, LazySubParsersAction))


def test_every_command_is_listed_with_the_help_its_parser_gives():
    top = subcommands(build_parser())
    for command in COMMANDS:
        top.choices[command.name]  # builds it
    assert top.built_help == {c.name: c.help for c in COMMANDS}
    assert list(top.choices) == [c.name for c in COMMANDS]
    workload = subcommands(top.choices["workload"])
    for command in WORKLOAD_COMMANDS:
        workload.choices[command.name]
    assert workload.built_help == {c.name: c.help for c in WORKLOAD_COMMANDS}


def test_the_listing_is_what_argparse_prints_for_parsers_built_up_front():
    lazy = build_parser()
    eager = SuggestingParser(prog=lazy.prog, description=lazy.description)
    sub = eager.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        load(command.parser)(sub)
    assert lazy.format_help() == eager.format_help()
    assert lazy.format_usage() == eager.format_usage()
    built = subcommands(lazy).choices
    for name, parser in sub.choices.items():
        assert built[name].format_help() == parser.format_help(), name


def test_only_the_named_command_is_built():
    parser = build_parser()
    args = parser.parse_args(["workload", "lublin", "-o", "x.swf"])
    assert (args.command, args.workload_command, args.jobs) == ("workload", "lublin", 500)
    top = subcommands(parser)
    assert set(top.built_help) == {"workload"}
    assert set(subcommands(top.choices["workload"]).built_help) == {"lublin"}


def test_an_unknown_command_is_argparses_error_with_every_choice(capsys):
    parser = build_parser()
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["simulat", "--out", "x"])
    assert exit_.value.code == 2
    names = ", ".join(repr(c.name) for c in COMMANDS)
    assert (f"schedd: error: argument command: invalid choice: 'simulat' (choose from "
            f"{names}) (did you mean 'simulate'?)") in capsys.readouterr().err
    assert not subcommands(parser).built_help


def test_help_lists_every_command_and_a_commands_help_is_its_own(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in COMMANDS:
        assert f"    {command.name:20}{command.help}" in out.replace("\n" + " " * 24, " ")
    with pytest.raises(SystemExit):
        main(["cluster", "--help"])
    assert capsys.readouterr().out.startswith("usage: schedd cluster [-h] spec\n")


def test_a_user_error_in_a_command_is_one_sentence(capsys):
    assert main(["cluster", "bogus:3"]) == 2
    assert capsys.readouterr().err.startswith("schedd: error: unknown cluster 'bogus:3'")


def test_a_builder_must_add_the_parser_it_is_listed_for():
    parser = argparse.ArgumentParser(prog="p")
    sub = parser.add_subparsers(dest="command", action=LazySubParsersAction)
    sub.add_lazy("a", "the a command", lambda action: action.add_parser("b"))
    sub.add_parser("c", help="an ordinary subparser")
    assert parser.parse_args(["c"]).command == "c"
    with pytest.raises(RuntimeError, match="builder of 'a'"):
        parser.parse_args(["a"])
    with pytest.raises(argparse.ArgumentError, match="conflicting subparser: c"):
        sub.add_lazy("c", "again", lambda action: None)


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")
@pytest.mark.parametrize("setting", [None, "2"])
def test_the_command_line_keeps_numpy_to_one_blas_thread_unless_told(setting):
    """OpenBLAS starts a thread per core when NumPy loads (about 0.1 CPU s a process); the
    command line asks for one unless the user set OPENBLAS_NUM_THREADS themselves."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if setting is not None:
        env["OPENBLAS_NUM_THREADS"] = setting
    code = ("import os, schedd.cli, numpy; "
            "print(os.environ['OPENBLAS_NUM_THREADS'], len(os.listdir('/proc/self/task')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=True)
    told, threads = done.stdout.split()
    assert told == (setting or "1")
    if setting is None:
        assert threads == "1"  # no OpenBLAS worker threads next to the main one
