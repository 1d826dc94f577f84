"""The engine's class chain and the state machine's fast legality test."""

from __future__ import annotations

from pathlib import Path

from schedd.core import engine, engine_elastic, engine_jobs, engine_preempt, engine_state
from schedd.core.job import JobState
from schedd.core.lifecycle import TRANSITIONS, legal


def test_legal_is_the_transition_table():
    for frm in JobState:
        for to in JobState:
            assert legal(frm, to) == (to in TRANSITIONS[frm]), (frm, to)


def test_engine_is_one_chain_of_single_inheritance():
    """mypyc compiles single inheritance between native classes, not multiple: each link
    of the chain adds one responsibility and lives in its own module."""
    chain = [engine.Engine, engine_elastic._Elastic, engine_preempt._Preemption,
             engine_jobs._JobLifecycle, engine_state._EngineState, object]
    assert list(engine.Engine.__mro__) == chain
    for cls in chain[:-1]:
        assert len(cls.__bases__) == 1


def test_each_engine_module_reads_in_one_sitting():
    for module in (engine, engine_elastic, engine_jobs, engine_preempt, engine_state):
        # The source beside the module (a compiled build loads engine.cpython-*.so).
        source = Path(module.__file__).parent / (module.__name__.rpartition(".")[2] + ".py")
        assert len(source.read_text().splitlines()) <= 400, source.name


def test_no_method_is_defined_twice_along_the_chain():
    """The split moved methods, it did not copy or override any."""
    seen: dict[str, str] = {}
    for cls in engine.Engine.__mro__[:-1]:
        for name, value in vars(cls).items():
            if callable(value) and not name.startswith("__"):
                assert name not in seen, f"{name} in {cls.__name__} and {seen[name]}"
                seen[name] = cls.__name__


def test_job_init_takes_every_field_by_name_in_order_with_its_default():
    """Job's __init__ is written out (so mypyc compiles it): it must stay the one the
    dataclass would generate — every field, by name and in order, with its default."""
    import dataclasses

    from schedd.core.cluster import Allocation
    from schedd.core.job import Job, JobClass

    fields = dataclasses.fields(Job)
    values = {"id": 7, "submit": 1.5, "nodes": 3, "walltime": 9.0, "user": 4, "project": 5,
              "job_class": JobClass.MALLEABLE, "min_nodes": 2, "checkpointable": False,
              "requested_start": 2.5, "queue": 6, "state": JobState.RUNNING,
              "alloc_nodes": 3, "allocation": Allocation(3), "first_start": 1.25,
              "last_start": 2.25, "predicted_end": 3.25, "end_time": 4.25,
              "preemptions": 8, "restarts": 9,
              "history": [(1.0, JobState.QUEUED, "submit")]}
    assert [f.name for f in fields] == list(values)
    for job in (Job(**values), Job(*values.values())):
        for name, value in values.items():
            assert getattr(job, name) == value and type(getattr(job, name)) is type(value)
        assert job.history is values["history"] and job.allocation is values["allocation"]
    required = [f.name for f in fields if f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING]
    bare = Job(*(values[name] for name in required))
    for f in fields[len(required):]:
        expected = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
        assert getattr(bare, f.name) == expected, f.name
    assert bare.history is not Job(*(values[name] for name in required)).history
    cls, args = Job(**values).__reduce__()
    assert cls is Job and all(getattr(cls(*args), n) == v for n, v in values.items())


def test_jobspec_init_takes_every_field_by_name_in_order_with_its_default():
    """JobSpec's __init__ is written out too (mypyc compiles it; the frozen dataclass's
    generated one ran interpreted): every field by name and in order, with its default,
    and the instance stays frozen and hashable as the dataclass made it."""
    import dataclasses

    import pytest

    from schedd.core.job import JobClass, JobSpec, Notice

    fields = dataclasses.fields(JobSpec)
    values = {"id": 7, "submit": 1.5, "runtime": 8.5, "nodes": 3, "walltime": 9.0, "user": 4,
              "project": 5, "job_class": JobClass.MALLEABLE, "min_nodes": 2,
              "checkpointable": False, "ckpt_gb_per_node": 0.75, "setup": 1.25,
              "requested_start": 2.5, "notice": Notice(0.5, 1.5, 3, 9.0), "queue": 6,
              "ckpt_interval": 60.0}
    assert [f.name for f in fields] == list(values)
    for spec in (JobSpec(**values), JobSpec(*values.values())):
        for name, value in values.items():
            assert getattr(spec, name) == value and type(getattr(spec, name)) is type(value)
    required = [f.name for f in fields if f.default is dataclasses.MISSING]
    bare = JobSpec(*(values[name] for name in required))
    for f in fields[len(required):]:
        assert getattr(bare, f.name) == f.default, f.name
    spec = JobSpec(**values)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.nodes = 4  # type: ignore[misc]
    assert spec == JobSpec(**values) and hash(spec) == hash(JobSpec(**values))
    assert spec != dataclasses.replace(spec, nodes=4)
    cls, args = spec.__reduce__()
    assert cls is JobSpec and cls(*args) == spec
