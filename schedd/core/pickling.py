"""Pickling of the engine's frozen dataclasses (daemon snapshots pickle the engine).

Compiled by mypyc, a frozen slotted dataclass has no `__setstate__`, and pickle's default
rebuild by attribute assignment fails on it; rebuilding by the constructor works compiled
or not."""

from __future__ import annotations

import dataclasses
from typing import Any


def by_fields(obj: Any) -> tuple[Any, ...]:
    """`__reduce__` of a dataclass: its class and its fields in constructor order."""
    return (type(obj), tuple(getattr(obj, f.name) for f in dataclasses.fields(obj)))
