"""The plain-EASY loop in C (schedd/policies/_easy_plain.c) against the Python loop it
mirrors (easy_plain._loop, which runs where C is not built): every result, segment, wait,
counter, the clock and the progress reports, on random plain workloads of every EASY order
and on the real traces. test_easy_plain.py holds the fast path,
whichever loop runs, to the general engine."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from test_easy_plain import EASY_FAMILY, assert_same_run, plain_workloads, run, trace_of

from schedd.core.cluster import NodePool
from schedd.policies import easy_plain, make_policy
from schedd.sim import simulate
from schedd.traces import normalize, read_trace

needs_native = pytest.mark.skipif(easy_plain.native is None,
                                  reason="the C loop is not built here")


def test_the_c_loop_is_built_where_a_compiler_was():
    if os.environ.get("SCHEDD_PURE_PYTHON"):
        pytest.skip("a pure-Python install, by request")
    assert easy_plain.native is not None


def counting(monkeypatch) -> list[int]:  # noqa: ANN001
    """Count the C loop's runs (so that a test knows which loop it measured)."""
    calls: list[int] = []
    native = easy_plain.native
    assert native is not None

    def run_and_count(*args):  # noqa: ANN002, ANN202
        calls.append(1)
        return native.run(*args)

    monkeypatch.setattr(easy_plain, "native", SimpleNamespace(run=run_and_count))
    return calls


@needs_native
@pytest.mark.parametrize("policy", EASY_FAMILY)
@settings(max_examples=60, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(workload=plain_workloads())
def test_the_c_loop_equals_the_python_loop(policy: str, workload, monkeypatch) -> None:  # noqa: ANN001
    rows, total = workload
    trace = trace_of(rows, total)
    with monkeypatch.context() as patch:
        calls = counting(patch)
        with_c = run(trace, policy, general=False, nodes=total)
        assert calls  # the C loop ran
    with monkeypatch.context() as patch:
        patch.setattr(easy_plain, "native", None)
        assert_same_run(with_c, run(trace, policy, general=False, nodes=total))


@needs_native
def test_progress_is_reported_as_the_python_loop_reports_it(monkeypatch) -> None:  # noqa: ANN001
    """Every 2,048 instants, the jobs ended so far: the same reports from both loops (the
    C loop takes the GIL back for each), and the same results."""
    rows = [{"job_id": i + 1, "submit": 10.0 * i, "runtime": 50.0, "req_procs": 2,
             "procs": 2, "req_time": 60.0} for i in range(5000)]
    trace = trace_of(rows, 8)
    cluster = NodePool(8)
    by_c: list[int] = []
    calls = counting(monkeypatch)
    with_c = simulate(trace, cluster, make_policy("easy", [], cluster), record=True,
                      progress=by_c.append)
    assert calls and by_c and by_c[-1] == 5000
    by_python: list[int] = []
    monkeypatch.setattr(easy_plain, "native", None)
    in_python = simulate(trace, cluster, make_policy("easy", [], cluster), record=True,
                         progress=by_python.append)
    assert by_c == by_python
    assert_same_run(with_c, in_python)


@needs_native
def test_an_error_of_the_progress_callback_stops_the_run() -> None:
    rows = [{"job_id": i + 1, "submit": 10.0 * i, "runtime": 50.0, "req_procs": 2,
             "procs": 2, "req_time": 60.0} for i in range(5000)]
    trace = trace_of(rows, 8)
    cluster = NodePool(8)

    def interrupted(done: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        simulate(trace, cluster, make_policy("easy", [], cluster), progress=interrupted)


@needs_native
@pytest.mark.parametrize("name", ["lublin_256", "KTH-SP2-1996-2", "theta_2023"])
@pytest.mark.parametrize("policy", ["easy", "easy-sjf", "easy-bestfit"])
def test_the_real_traces_either_way(shared_traces, name: str, policy: str, monkeypatch
                                   ) -> None:  # noqa: ANN001
    trace = normalize(read_trace(str(shared_traces / f"{name}.swf")))
    with_c = run(trace, policy, general=False)
    monkeypatch.setattr(easy_plain, "native", None)
    assert_same_run(with_c, run(trace, policy, general=False))
