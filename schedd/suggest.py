""""Did you mean ...?" for misspelt names: subcommands, options, policies, policy options.

`SuggestingParser` is an argparse.ArgumentParser whose errors add the closest valid name;
every command (`schedd`, `schedctl`, `schedd-replay`) builds its parser from it."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable
from typing import NoReturn

_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")
_UNRECOGNIZED = re.compile(r"unrecognized arguments: (.*)")


def closest(word: str, choices: Iterable[str]) -> str | None:
    import difflib  # here: only a mistake needs it, and every command imports this module

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.5)
    return close[0] if close else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """" (did you mean 'x'?)" for the closest of `choices`, or "" if none is close."""
    best = closest(word, choices)
    return f" (did you mean {best!r}?)" if best else ""


class SuggestingParser(argparse.ArgumentParser):
    _argv: list[str] | None = None

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[no-untyped-def]
        self._argv = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        m = _INVALID_CHOICE.search(message)
        if m:
            choices = re.findall(r"'([^']*)'", m.group(2))
            message += did_you_mean(m.group(1), choices)
        m = _UNRECOGNIZED.search(message)
        if m:
            options = set(_option_strings(self, self._argv or []))
            for word in m.group(1).split():
                if word.startswith("-"):
                    best = closest(word.split("=", 1)[0], options)
                    if best:
                        message += f" (did you mean {best!r} for {word!r}?)"
        super().error(message)


def _option_strings(parser: argparse.ArgumentParser, argv: list[str]) -> Iterable[str]:
    """The long options of the parser and of the subcommands named in argv (all of them
    when argv names none), recursively."""
    for action in parser._actions:
        yield from (s for s in action.option_strings if s.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            named = [w for w in argv if w in action.choices]
            subs = [action.choices[named[0]]] if named else list(action.choices.values())
            for sub in subs:
                yield from _option_strings(sub, argv[argv.index(named[0]) + 1:]
                                           if named else [])
