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
