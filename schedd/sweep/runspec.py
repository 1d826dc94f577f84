"""Run specs: `POLICY [KEY=VALUE ...] [--engine-flag VALUE ...]`, e.g. `wcjs ckpt=app
--app-overhead 5` — one policy with its options and engine flags, as `schedd sweep` and
`schedd compare` take them."""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass


class RunSpecError(ValueError):
    """A bad run spec: one sentence for the user."""


@dataclass(frozen=True)
class RunSpec:
    label: str
    policy: str
    options: tuple[str, ...]
    engine_flags: tuple[str, ...]


def parse_run(text: str) -> RunSpec:
    """The spec's words; the label is the text itself, normalised to single spaces and
    quoted where a word needs it (a path with a space), so that it parses back to the
    same words: workers and caches get the label, not the words."""
    try:
        words = shlex.split(text)
    except ValueError as err:
        raise RunSpecError(f"run {text!r}: {err}") from None
    if not words or words[0].startswith("-") or "=" in words[0]:
        raise RunSpecError(f"run {text!r} must start with a policy name")
    first_flag = next((i for i, w in enumerate(words) if w.startswith("--")), len(words))
    opts = words[1:first_flag]
    bad = [w for w in opts if "=" not in w]
    if bad:
        raise RunSpecError(f"run {text!r}: {bad[0]!r} is neither KEY=VALUE nor an engine flag")
    return RunSpec(shlex.join(words), words[0], tuple(opts), tuple(words[first_flag:]))


def engine_args(run: RunSpec) -> argparse.Namespace:
    """The run's engine flags parsed as `schedd simulate` parses them."""
    from ..options import add_engine_arguments

    parser = argparse.ArgumentParser(prog="run", add_help=False, exit_on_error=False)
    add_engine_arguments(parser)
    try:
        args, extra = parser.parse_known_args(list(run.engine_flags))
    except argparse.ArgumentError as err:
        raise RunSpecError(f"run {run.label!r}: {err}") from None
    if extra:
        raise RunSpecError(f"run {run.label!r}: unknown engine flag {extra[0]!r}")
    return args
