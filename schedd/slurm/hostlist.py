"""Slurm host lists: `n[1-16]`, `n[01-04,7],gpu1`, `rack[1-2]-n[1-3]`, `ALL`."""

from __future__ import annotations

import re

_BRACKET = re.compile(r"\[([^\]]*)\]")


def expand(text: str) -> list[str]:
    """Every name a host list expression names, in order; ValueError if malformed."""
    names: list[str] = []
    for item in _split_top(text.strip()):
        if item:
            names.extend(_expand_one(item))
    return names


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ']' in host list {text!r}")
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise ValueError(f"unbalanced '[' in host list {text!r}")
    out.append("".join(cur))
    return out


def _expand_one(item: str) -> list[str]:
    match = _BRACKET.search(item)
    if match is None:
        if "[" in item or "]" in item:
            raise ValueError(f"malformed host list {item!r}")
        return [item]
    head, tail = item[:match.start()], item[match.end():]
    out = []
    for part in match.group(1).split(","):
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"expected numbers or ranges in [{match.group(1)}] of host "
                             f"list {item!r}")
        width = len(lo) if lo.startswith("0") else 0
        first, last = int(lo), int(hi) if sep else int(lo)
        if last < first:
            raise ValueError(f"range {part} runs backwards in host list {item!r}")
        for n in range(first, last + 1):
            for rest in _expand_one(tail):
                out.append(f"{head}{n:0{width}d}{rest}")
    return out
