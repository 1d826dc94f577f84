""""Did you mean ...?" for misspelt names: subcommands, options, policies, policy options.

`SuggestingParser` is an argparse.ArgumentParser whose errors add the closest valid name;
every command (`schedd`, `schedctl`, `schedd-replay`) builds its parser from it."""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Iterable
from typing import NoReturn

_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")
_UNRECOGNIZED = re.compile(r"unrecognized arguments: (.*)")


def closest(word: str, choices: Iterable[str]) -> str | None:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """" (did you mean 'x'?)" for the closest of `choices`, or "" if none is close."""
    best = closest(word, choices)
    return f" (did you mean {best!r}?)" if best else ""


class SuggestingParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        m = _INVALID_CHOICE.search(message)
        if m:
            choices = re.findall(r"'([^']*)'", m.group(2))
            message += did_you_mean(m.group(1), choices)
        m = _UNRECOGNIZED.search(message)
        if m:
            options = set(_all_option_strings(self))
            for word in m.group(1).split():
                if word.startswith("-"):
                    best = closest(word.split("=", 1)[0], options)
                    if best:
                        message += f" (did you mean {best!r} for {word!r}?)"
        super().error(message)


def _all_option_strings(parser: argparse.ArgumentParser) -> Iterable[str]:
    """Every option string of the parser and of its subcommands, recursively."""
    for action in parser._actions:
        yield from (s for s in action.option_strings if s.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _all_option_strings(sub)
