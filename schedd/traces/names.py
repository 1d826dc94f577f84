"""The names header of a trace: `; schedd-names KIND: 1=alice 2=bob` (docs/trace-format.md).

Imported logs (Slurm, PBS) name their users, accounts, partitions, QOS and states; a trace
stores numbers in its fields and the names in one header comment per kind, so the file
stays self-describing and any SWF reader still sees only comments. A name is
percent-encoded where it holds a blank, `=`, `%` or a control character.

This module only turns lines into mappings and back; the reader decides what a malformed
line means (an error at its line, or skipped with --lenient).
"""

from __future__ import annotations

import re
from urllib.parse import unquote

NAMES_PREFIX = "schedd-names"
# The kinds the importers write; others are kept as read (a later kind stays readable).
KINDS = ("user", "account", "partition", "queue", "qos", "state")
MAX_NUMBER = 2**53  # numbers travel through float64 columns

_START = re.compile(r"\s*;\s*schedd-names(?=[\s:]|$)")
_LINE = re.compile(r"\s*;\s*schedd-names\s+([a-z][a-z0-9_]*)\s*:(.*)")
_PAIR = re.compile(r"(\d+)=((?:[^%]|%[0-9A-Fa-f]{2})+)")


class NamesError(ValueError):
    """A malformed names line; the message is the 'expected ..., found ...' part."""


def is_names_line(line: str) -> bool:
    return _START.match(line) is not None


def parse_names_line(line: str) -> tuple[str, dict[int, str]]:
    """(kind, number -> name) of one names line; NamesError if it is malformed."""
    m = _LINE.fullmatch(line)
    if m is None:
        raise NamesError("expected a names line '; schedd-names KIND: NUMBER=NAME ...' "
                         f"with KIND in lower case, found {_cut(line)!r}")
    kind, body = m.group(1), m.group(2)
    names: dict[int, str] = {}
    for tok in body.split():
        pair = _PAIR.fullmatch(tok)
        if pair is None:
            raise NamesError(f"expected NUMBER=NAME (NAME percent-encoded) in the {kind} "
                             f"names, found {_cut(tok)!r}")
        number = int(pair.group(1))
        if number > MAX_NUMBER:
            raise NamesError(f"expected a number at most 2^53 in the {kind} names, found "
                             f"{_cut(pair.group(1))!r}")
        if number in names:
            raise NamesError(f"expected each number once in the {kind} names, found {number} "
                             "twice")
        names[number] = unquote(pair.group(2), errors="surrogateescape")
    return kind, names


def parse_names(lines: list[str]) -> tuple[dict[str, dict[int, str]], tuple[str, str] | None]:
    """The names of every well-formed names line, and (the first malformed names line,
    why) or None. A kind given on a second line is malformed."""
    out: dict[str, dict[int, str]] = {}
    problem: tuple[str, str] | None = None
    for line in lines:
        if not is_names_line(line):
            continue
        try:
            kind, names = parse_names_line(line)
            if kind in out:
                raise NamesError(f"expected one names line per kind, found a second {kind} "
                                 "line")
        except NamesError as e:
            problem = problem or (line, str(e))
            continue
        out[kind] = names
    return out, problem


def names_line(kind: str, names: dict[int, str]) -> str:
    """The header line for one kind, numbers in increasing order."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", kind):
        raise ValueError(f"a names kind is a lower-case word, got {kind!r}")
    pairs = " ".join(f"{int(n)}={encode_name(names[n])}" for n in sorted(names))
    return f"; {NAMES_PREFIX} {kind}: {pairs}".rstrip()


def encode_name(name: str) -> str:
    """`name` with blanks, `=`, `%` and control characters percent-encoded (UTF-8)."""
    if not name:
        raise ValueError("a name in a names header is not empty")
    if not any(_needs_escape(ch) for ch in name):
        return name
    return "".join(
        "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogateescape"))
        if _needs_escape(ch) else ch
        for ch in name
    )


def _needs_escape(ch: str) -> bool:
    return ch in "%=" or ch.isspace() or not ch.isprintable()


def _cut(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."
