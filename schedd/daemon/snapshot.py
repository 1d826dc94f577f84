"""Snapshots of the daemon's live state: the engine, the policies, the live job records.

The engine host stores them between iterations (in the engine thread, so the state is
consistent). What is stored is the *state* of each of the daemon's long-lived objects
(the engine, the primary and fallback policies); references between them, and to the
budget hooks the daemon binds into the policies, are stored by name. Recovery puts each
state back into the object of the same name that the restarting daemon built, so every
reference to the engine stays valid, then replays only the stimuli after the snapshot.
Finished jobs are not in a snapshot: they are in the results store.
"""

from __future__ import annotations

import contextlib
import gc
import io
import pickle
import types
from collections.abc import Iterator
from typing import Any

SNAPSHOT_EVERY = 5_000  # stimuli applied between snapshots, at least (EngineHost._snapshot_due)
# Engine seconds (iterations' wall time) after which a snapshot is taken even without a
# stimulus, at least, and at least this many times the last snapshot's own seconds
# (EngineHost._work_due): recovery runs the engine again from the snapshot's time.
SNAPSHOT_WORK_SECONDS = 5.0
SNAPSHOT_WORK_RATIO = 4.0


@contextlib.contextmanager
def _live_objects_frozen() -> Iterator[None]:
    """The objects alive now are left out of the collector's walks while a snapshot is
    pickled or unpickled: the allocations this makes trigger collections, and each walked
    every live job (100,000 queued jobs: dumps 3.4 -> 2.8 CPU s). `gc.freeze`, not
    `gc.disable`: with the collector off, a SubmitJobs stream committed while a snapshot
    was taken took three times as long (bench/daemon.py, docs/benchmarks.md)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _named(kind: str, name: str) -> Any:
    """Stands for a reference by name in a snapshot; only `_Unpickler` resolves it."""
    raise pickle.UnpicklingError(f"the {kind} reference {name!r} belongs inside a snapshot")


class _Pickler(pickle.Pickler):
    """Stores the named objects, and the owner's bound methods, as `_named(kind, name)`.

    `reducer_override` rather than `persistent_id`: pickle calls `persistent_id` for every
    object, ints and strings included, and that one Python call per object was most of a
    snapshot's time (100,000 queued jobs: 7.4 CPU s, holding the GIL the acknowledgements
    need; docs/benchmarks.md); `reducer_override` is not called for exact ints, floats,
    strings, bytes, lists, tuples, dicts and sets."""

    def __init__(self, f: io.BytesIO, objects: dict[str, Any], owner: object):
        super().__init__(f, protocol=pickle.HIGHEST_PROTOCOL)
        self._names = {id(obj): name for name, obj in objects.items()}
        self._objects = objects
        self._owner = owner

    def reducer_override(self, obj: Any) -> Any:
        name = self._names.get(id(obj))
        if name is not None and self._objects[name] is obj:
            return _named, ("object", name)
        if isinstance(obj, types.MethodType) and obj.__self__ is self._owner:
            return _named, ("owner-method", obj.__func__.__name__)
        return NotImplemented


class _Unpickler(pickle.Unpickler):
    def __init__(self, f: io.BytesIO, objects: dict[str, Any], owner: object):
        super().__init__(f)
        self._objects = objects
        self._owner = owner

    def find_class(self, module: str, name: str) -> Any:
        if module == __name__ and name == "_named":
            return lambda kind, ref: self.persistent_load((kind, ref))
        return super().find_class(module, name)

    def persistent_load(self, pid: Any) -> Any:
        """A reference by name: `_named` in a snapshot of this version, a persistent id
        in one stored by an earlier version (both restore)."""
        kind, name = pid
        if kind == "object" and name in self._objects:
            return self._objects[name]
        if kind == "owner-method" and self._owner is not None:
            return getattr(self._owner, name)
        raise pickle.UnpicklingError(f"unknown reference {pid!r} in a snapshot")


def dumps(objects: dict[str, Any], extra: dict[str, Any], owner: Any = None) -> bytes:
    """The state of each named object, and `extra` (plain data). `owner` (the budget
    wrapper) is stored as a reference only, as are its methods."""
    payload = {"states": {name: (type(obj).__qualname__, obj.__getstate__())
                          for name, obj in objects.items()}, "extra": extra}
    f = io.BytesIO()
    with _live_objects_frozen():
        _Pickler(f, {**objects, "owner": owner}, owner).dump(payload)
    return f.getvalue()


def restore(data: bytes, objects: dict[str, Any], owner: Any = None) -> dict[str, Any]:
    """Put the stored states into `objects` (same names, same classes); returns extra."""
    with _live_objects_frozen():
        payload = _Unpickler(io.BytesIO(data), {**objects, "owner": owner}, owner).load()
    states = payload["states"]
    if set(states) != set(objects):
        raise ValueError(f"the snapshot holds {sorted(states)}, not {sorted(objects)}")
    for name, (cls, state) in states.items():
        target = objects[name]
        if type(target).__qualname__ != cls:
            raise ValueError(f"the snapshot's {name} is a {cls}, this daemon's a "
                             f"{type(target).__qualname__}: start with the same options")
        setstate = getattr(target, "__setstate__", None)
        if setstate is not None:  # native (mypyc) classes
            setstate(state)
        elif isinstance(state, dict):
            target.__dict__.clear()
            target.__dict__.update(state)
        elif state is not None:
            raise ValueError(f"cannot restore the {name} from a snapshot")
    extra = payload["extra"]
    if not isinstance(extra, dict):
        raise ValueError("a snapshot's extra state is a dict")
    return extra
