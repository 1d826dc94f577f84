"""Pickling of the engine's frozen dataclasses (daemon snapshots pickle the engine).

Compiled by mypyc, a frozen slotted dataclass has no `__setstate__`, and pickle's default
rebuild by attribute assignment fails on it; rebuilding by the constructor works compiled
or not."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from operator import attrgetter
from typing import Any

# One getter of all the fields per class: `dataclasses.fields()` rebuilds its tuple at every
# call, and a daemon snapshot reduces every queued job's specification (docs/benchmarks.md).
_FIELD_GETTERS: dict[type, Callable[[Any], tuple[Any, ...]]] = {}


def by_fields(obj: Any) -> tuple[Any, ...]:
    """`__reduce__` of a dataclass: its class and its fields in constructor order."""
    cls = type(obj)
    getter = _FIELD_GETTERS.get(cls)
    if getter is None:
        getter = _FIELD_GETTERS[cls] = _fields_getter([f.name for f in dataclasses.fields(obj)])
    return (cls, getter(obj))


def _fields_getter(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    if len(names) != 1:
        return attrgetter(*names)  # one C call, a tuple of the values
    name = names[0]  # attrgetter of one name gives the value itself, not a 1-tuple

    def one(obj: Any) -> tuple[Any, ...]:
        return (getattr(obj, name),)

    return one
