"""Every real archive log reads (issue 33, part 5): values that real logs use to mean
"unknown" or "unlimited" (-1, -2, 0, 2147483647) in any field are kept as given, counted
and said, never a reason to refuse the file; --strict refuses them. A trace with such
values in every field reads, normalizes and simulates under several policies, through the
general engine and the plain-EASY fast path alike."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from test_traces_helpers import write

from schedd.core.cluster import NodePool
from schedd.policies import make_policy
from schedd.sim import simulate, write_outputs
from schedd.traces import TraceError, normalize, read_trace
from schedd.traces.swf import unusual_line

BIG = 2147483647  # 2^31 - 1
TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"

ODD_LINES = [
    "; MaxNodes: 16",
    "1 0 0 100 4 -1 -1 4 200 -1 1 1 1 1 1 1 -1 -1",
    f"2 10 -1 100 4 -1 -1 4 {BIG} -1 1 1 1 1 1 1 -1 -1",  # "unlimited" request
    f"3 20 -1 {BIG} 2 -1 -1 2 -1 -1 1 1 1 1 1 1 -1 -1",  # ran "forever", no request
    f"4 30 -1 100 {BIG} -1 -1 -1 200 -1 1 1 1 1 1 1 -1 -1",  # too large: not simulated
    "5 40 -1 100 4 -1 -1 -2 200 -1 1 1 1 1 1 1 -1 -1",  # -2 requested: field 5 counts
    "6 -1 -1 100 4 -1 -1 4 200 -1 1 1 1 1 1 1 -1 -1",  # unknown submit: not simulated
    f"7 50 {BIG} 100 4 -2 {BIG} 4 200 -2 -2 {BIG} -2 0 {BIG} -2 {BIG} -2",
    "8 60 -1 0 4 -1 -1 4 200 -1 1 1 1 1 1 1 -1 -1",  # ran 0 s: not simulated
    f"9 70 -1 50 16 {BIG} -1 16 0 -1 1 1 1 1 1 1 -1 {BIG}",  # 0 requested: its runtime
    "10 80 -2 50 8 -1 -1 8 -2 -1 1 1 1 1 1 1 -1 -1",
    f"11 {BIG} -1 50 8 -1 -1 8 100 -1 1 1 1 1 1 1 -1 -1",  # year 2038
    "12 90 -1 -2 8 -1 -1 8 100 -1 1 1 1 1 1 1 -1 -1",  # runtime -2: not simulated
    f"{BIG} 100 -1 30 1 -1 -1 1 60 -1 1 1 1 1 1 1 -1 -1",
    "-2 110 0 30 1 0 0 1 60 0 0 0 0 0 0 0 0 0",
]


@pytest.fixture
def odd(tmp_path):
    return write(tmp_path / "odd.swf", *ODD_LINES)


def test_read_keeps_and_counts(odd):
    trace = read_trace(odd)
    assert len(trace) == 14 and trace.skipped == 0
    assert trace.columns["req_time"][1] == BIG and trace.columns["runtime"][2] == BIG
    assert trace.unusual == {2: (1, -1.0, -1.0), 3: (2, -2.0, BIG), 4: (2, -2.0, BIG),
                             6: (2, -2.0, BIG), 8: (1, -2.0, -2.0), 9: (2, -2.0, BIG),
                             18: (2, -2.0, BIG)}
    assert unusual_line(trace) == (
        "12 values of odd.swf outside the usual range of their field, kept as given "
        "(--strict refuses them): 1 in field 2 (submit): -1 s; 2 in field 3 (wait): -2 s to "
        "2147483647 s (68 years); 2 in field 4 (runtime): -2 s to 2147483647 s (68 years); "
        "2 in field 6 (cpu): -2 s to 2147483647 s (68 years); 1 in field 8 (req_procs): -2; "
        "2 in field 9 (req_time): -2 s to 2147483647 s (68 years); 2 in field 18 (think): "
        "-2 s to 2147483647 s (68 years)")


def test_strict_refuses_at_the_line(odd):
    with pytest.raises(TraceError, match=r"odd\.swf:3: expected a number in \[0, 1e\+09\] s "
                       r"or -1 in field 9 \(req_time\), found '2147483647'"):
        read_trace(odd, strict=True)


def test_what_cannot_be_computed_with_is_still_an_error(tmp_path):
    for value, why in (("1e16", "a number of magnitude at most 2^53"),
                       ("1e300", "a number of magnitude at most 2^53"),
                       ("inf", "a number"), ("nan", "a number")):
        path = write(tmp_path / "big.swf",
                     f"1 0 -1 {value} 4 -1 -1 4 200 -1 1 1 1 1 1 1 -1 -1")
        with pytest.raises(TraceError) as info:
            read_trace(path)
        assert str(info.value) == (f"{path}:1: expected {why} in field 4 (runtime), found "
                                   f"'{value}'")


def test_normalize_counts_what_it_cannot_simulate(odd):
    norm = normalize(read_trace(odd))
    assert norm.dropped == {"runtime<=0": 2, "nodes<1": 0, "nodes>max": 1, "submit<0": 1,
                            "duplicate id": 0, "malformed": 0}
    by_id = dict(zip(norm.columns["job_id"].tolist(), norm.columns["walltime"].tolist(),
                     strict=True))
    assert by_id[2] == BIG and by_id[3] == BIG and by_id[9] == 50 and by_id[10] == 50
    assert dict(zip(norm.columns["job_id"].tolist(), norm.columns["nodes"].tolist(),
                    strict=True))[5] == 4


@pytest.mark.parametrize("policy", ["easy", "fcfs", "conservative", "easy-sjf",
                                    "easy-bestfit", "ckpt-backfill"])
def test_simulates_under_every_policy_with_invariants(odd, tmp_path, policy):
    norm = normalize(read_trace(odd))
    cluster = NodePool(norm.max_nodes)
    run = simulate(norm, cluster, make_policy(policy, [], cluster), check_invariants=True,
                   record=True)
    assert sorted(run.results["id"].tolist()) == sorted(norm.columns["job_id"].tolist())
    assert all(math.isfinite(v) for v in _numbers(run.summary))
    summary = write_outputs(tmp_path / policy, norm, run, {"trace": "odd.swf",
                            "policy": policy, "cluster": "nodes:16", "total_nodes": 16})
    assert summary["jobs"] == 10
    ends = dict(zip(run.results["id"].tolist(), run.results["end"].tolist(), strict=True))
    assert ends[3] == 20 + BIG  # ran its 68 years, no overflow on the way


def test_fast_path_and_general_engine_agree(odd, tmp_path):
    norm = normalize(read_trace(odd))
    files = {}
    for general in (False, True):
        cluster = NodePool(norm.max_nodes)
        run = simulate(norm, cluster, make_policy("easy", [], cluster), general=general,
                       record=True)
        out = tmp_path / str(general)
        write_outputs(out, norm, run, {"trace": "odd.swf", "policy": "easy",
                                       "cluster": "nodes:16", "total_nodes": 16})
        files[general] = {n: (out / n).read_bytes() for n in ("jobs.swf", "jobs.csv",
                                                              "segments.csv", "timeseries.csv")}
    assert files[False] == files[True]
    waits = {line.split()[0]: line.split()[2] for line in
             files[False]["jobs.swf"].decode().splitlines() if not line.startswith(";")}
    assert waits["9"] == str(20 + BIG - 70)  # waits for job 3's 68 years: no overflow


@pytest.mark.skipif(not (TRACES / "KTH-SP2-1996-2.swf").exists(),
                    reason="../shared/traces is absent")
def test_a_real_log_with_one_unlimited_request_reads_and_simulates(tmp_path):
    """The issue's case: a whole archive log refused over one requested time of
    2147483647 s. Now it reads, says so, and simulates; the rest is unchanged."""
    lines = (TRACES / "KTH-SP2-1996-2.swf").read_text().splitlines()
    first = next(i for i, ln in enumerate(lines) if ln and not ln.startswith(";"))
    fields = lines[first].split()
    fields[8] = str(BIG)
    lines[first] = " ".join(fields)
    path = write(tmp_path / "kth.swf", *lines)
    trace = read_trace(path)
    assert trace.unusual == {9: (1, BIG, BIG)}
    original = read_trace(TRACES / "KTH-SP2-1996-2.swf")
    for name, col in original.columns.items():
        differs = np.flatnonzero(np.asarray(col) != np.asarray(trace.columns[name]))
        assert differs.tolist() == ([0] if name == "req_time" else []), name
    norm = normalize(trace)
    cluster = NodePool(norm.max_nodes)
    run = simulate(norm, cluster, make_policy("easy", [], cluster))
    assert len(run.results["id"]) == len(norm)


def _numbers(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _numbers(v)
    elif isinstance(value, float | int) and not isinstance(value, bool):
        yield float(value)
