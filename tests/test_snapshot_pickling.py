"""Daemon snapshots (schedd/daemon/snapshot.py): named objects and the owner's methods are
stored by name and put back into the restarting daemon's objects; snapshots stored by an
earlier version (persistent ids) still restore; a real engine with queued jobs round-trips.
"""

from __future__ import annotations

import dataclasses
import io
import pickle
import types
from typing import Any

import pytest

from schedd.core.cluster import NodePool
from schedd.core.engine import Engine
from schedd.core.job import JobSpec
from schedd.core.pickling import by_fields
from schedd.daemon.snapshot import dumps, restore
from schedd.policies import make_policy


class Owner:
    """Stands for the daemon's budget wrapper, whose methods the policies hold."""

    def hook(self) -> str:
        return f"hook of {id(self)}"


class Holder:
    def __init__(self, owner: Owner | None = None, peer: Any = None):
        self.hook = owner.hook if owner is not None else None
        self.peer = peer
        self.data = {"jobs": [1, 2.5, "x", (3, 4)], "nested": [[1], {"a": None}]}


def pair(owner: Owner) -> dict[str, Any]:
    first = Holder(owner)
    second = Holder(owner, peer=first)
    first.peer = second
    return {"first": first, "second": second}


def test_references_by_name_are_put_back_into_the_restarting_objects():
    old_owner = Owner()
    old = pair(old_owner)
    old["first"].data["jobs"].append(99)
    data = dumps(old, {"results_base": 7}, owner=old_owner)

    new_owner = Owner()
    new = pair(new_owner)
    new["first"].peer = None
    extra = restore(data, new, owner=new_owner)

    assert extra == {"results_base": 7}
    assert new["first"].data["jobs"][-1] == 99
    assert new["first"].peer is new["second"] and new["second"].peer is new["first"]
    assert new["first"].hook.__self__ is new_owner  # the new daemon's method, not a copy
    assert new["first"].hook() == new_owner.hook()


def test_a_snapshot_stored_with_persistent_ids_still_restores():
    """Earlier versions stored the references as persistent ids (pickle's persistent_id)."""

    class OldPickler(pickle.Pickler):
        def __init__(self, f: io.BytesIO, objects: dict[str, Any], owner: object):
            super().__init__(f, protocol=pickle.HIGHEST_PROTOCOL)
            self._names = {id(obj): name for name, obj in objects.items()}
            self._objects, self._owner = objects, owner

        def persistent_id(self, obj: Any) -> Any:
            name = self._names.get(id(obj))
            if name is not None and self._objects[name] is obj:
                return ("object", name)
            if isinstance(obj, types.MethodType) and obj.__self__ is self._owner:
                return ("owner-method", obj.__func__.__name__)
            return None

    owner = Owner()
    objects = pair(owner)
    payload = {"states": {name: (type(obj).__qualname__, obj.__getstate__())
                          for name, obj in objects.items()}, "extra": {"k": 1}}
    f = io.BytesIO()
    OldPickler(f, {**objects, "owner": owner}, owner).dump(payload)

    new_owner = Owner()
    new = pair(new_owner)
    assert restore(f.getvalue(), new, owner=new_owner) == {"k": 1}
    assert new["second"].peer is new["first"]
    assert new["second"].hook.__self__ is new_owner


def test_a_snapshot_is_not_loadable_as_a_plain_pickle():
    owner = Owner()
    data = dumps(pair(owner), {}, owner=owner)
    with pytest.raises(pickle.UnpicklingError, match="belongs inside a snapshot"):
        pickle.loads(data)


def test_a_snapshot_of_another_set_of_objects_is_refused():
    owner = Owner()
    data = dumps(pair(owner), {}, owner=owner)
    with pytest.raises(ValueError, match="holds"):
        restore(data, {**pair(owner), "third": Holder(owner)}, owner=owner)
    with pytest.raises(pickle.UnpicklingError, match="unknown reference"):
        restore(data, {"first": Holder(owner)}, owner=owner)  # 'second' is not there


def test_an_engine_with_queued_jobs_round_trips():
    def engine() -> Engine:
        pool = NodePool(8)
        return Engine(pool, make_policy("easy", [], pool), seed=3)

    old = engine()
    for i in range(1, 41):
        old.submit(JobSpec(id=i, submit=float(i % 5), runtime=100.0 + i, nodes=1 + i % 8,
                           walltime=200.0 + i, user=i % 3))
    for _ in range(4):
        old.step()
    data = dumps({"engine": old, "primary": old.policy}, {})

    new = engine()
    restore(data, {"engine": new, "primary": new.policy})
    assert new.now == old.now
    assert sorted(new.jobs) == sorted(old.jobs)
    assert [j.id for j in new.running.values()] == [j.id for j in old.running.values()]
    while old.step():
        assert new.step()
    assert not new.step()
    assert new.results.arrays(copy=True)["wait"].tolist() == \
        old.results.arrays(copy=True)["wait"].tolist()


@dataclasses.dataclass(frozen=True)
class One:
    value: int


@dataclasses.dataclass(frozen=True)
class Two:
    a: int
    b: str


def test_by_fields_rebuilds_by_the_constructor_whatever_the_field_count():
    for obj in (One(5), Two(1, "x"), JobSpec(id=3, submit=1.0, runtime=2.0, nodes=4,
                                               walltime=5.0)):
        cls, args = by_fields(obj)
        assert cls is type(obj) and cls(*args) == obj
        assert args == tuple(getattr(obj, f.name) for f in dataclasses.fields(obj))


def test_every_decision_pickles_through_its_constructor():
    """decisions.py is compiled (setup.py): a compiled frozen dataclass rebuilds only by
    its constructor, so each decision class has to say so."""
    from schedd.core import decisions as d

    samples = [d.Start(1), d.Start(2, nodes=3, block=4, reservation="r"),
               d.Preempt(5, d.PreemptMode.JIT), d.Resize(6, 7), d.Reserve("k", 8),
               d.Reserve("b", block=2), d.Release("k"), d.WakeAt(9.5)]
    assert {type(s) for s in samples} == set(d.Decision.__args__)  # every kind, once at least
    for decision in samples:
        again = pickle.loads(pickle.dumps(decision))
        assert type(again) is type(decision) and again == decision


def test_start_written_out_is_still_a_frozen_dataclass():
    import dataclasses as dc

    from schedd.core.decisions import Start

    s = Start(3, block=2)
    assert (s.job_id, s.nodes, s.block, s.reservation) == (3, None, 2, None)
    assert s == Start(3, None, 2) and hash(s) == hash(Start(3, None, 2)) and s != Start(4)
    assert [f.name for f in dc.fields(Start)] == ["job_id", "nodes", "block", "reservation",
                                                 "place"]
    assert repr(Start(1)) == ("Start(job_id=1, nodes=None, block=None, reservation=None, "
                              "place=None)")
    with pytest.raises(dc.FrozenInstanceError):
        s.job_id = 5  # type: ignore[misc]
