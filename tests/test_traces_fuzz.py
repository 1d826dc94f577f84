"""Bad trace files (issue 17, item 8) and a fuzz of the SWF/CWF reader.

Every bad value is a one-line error naming the file and the line, or with --lenient a
skipped line that is counted and reported; what the reader accepts is within the limits
of schedd/limits.py, so a simulation of it runs (with its invariants checked) instead of
failing deep in the engine.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedd.core.cluster import NodePool
from schedd.policies import make_policy
from schedd.sim import simulate
from schedd.traces import TraceError, normalize, read_trace
from schedd.traces import swf as swf_module

GOOD = "1 0 0 100 4 -1 -1 4 200 -1 1 1 1 1 1 1 -1 -1"


def job(job_id: int = 1, submit: str = "0", runtime: str = "100",
        req_time: str = "200") -> str:
    return f"{job_id} {submit} 0 {runtime} 4 -1 -1 4 {req_time} -1 1 1 1 1 1 1 -1 -1"


def schedd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "schedd", *args], capture_output=True,
                          text=True, timeout=120)


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


# ---------------------------------------------------------------- the four files
@pytest.mark.parametrize(("lines", "where", "words"), [
    ([job(1), job(2, submit="1e308", runtime="1e308", req_time="1e308")], ":2:",
     ["field 2 (submit)", "1e308"]),
    ([job(1, runtime="1e308")], ":1:", ["field 4 (runtime)", "1e308"]),
    (["; MaxNodes: 1e20", job(1)], ":1:", ["MaxNodes", "1e20"]),
    (["; Note: x", "; MaxNodes: 100000000000000000000", job(1)], ":2:", ["MaxNodes"]),
    (["; MaxProcs: 12.5", job(1)], ":1:", ["MaxProcs", "12.5"]),
])
def test_bad_values_are_one_line_naming_file_and_line(tmp_path, lines, where, words):
    path = tmp_path / "bad.swf"
    path.write_text("\n".join(lines) + "\n")
    line = one_error_line(schedd("simulate", "--trace", str(path), "--out",
                                 str(tmp_path / "out"), "--no-progress"))
    assert line.startswith(f"schedd: error: {path}{where} "), line
    for word in words:
        assert word in line, line


def test_a_negative_submit_is_kept_counted_and_not_simulated(tmp_path):
    """-50 used to fail deep in the engine (issue 17), then was refused; a real log's -1
    (unknown) must not refuse the file (issue 33): the job is counted and not simulated,
    and --strict refuses the file at the line, as before."""
    path = tmp_path / "neg.swf"
    path.write_text("\n".join([job(1, submit="-50"), job(2, submit="10")]) + "\n")
    out = tmp_path / "out"
    done = schedd("simulate", "--trace", str(path), "--out", str(out), "--no-progress",
                  "--quiet")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "schedd: 1 value of neg.swf outside the usual range of its field, kept as given "
        "(--strict refuses them): 1 in field 2 (submit): -50 s",
        "schedd: warning: 1 of 2 jobs of neg.swf not simulated: 1 with a negative (unknown) "
        "submit time"]
    assert (out / "jobs.swf").read_text().splitlines()[2].split()[0] == "2"
    line = one_error_line(schedd("simulate", "--trace", str(path), "--out", str(out),
                                 "--no-progress", "--strict"))
    assert line == (f"schedd: error: {path}:1: expected a number in [0, 1e+10] s in field 2 "
                    "(submit), found '-50'")


def test_empty_file_names_the_file(tmp_path):
    path = tmp_path / "empty.swf"
    path.write_text("")
    line = one_error_line(schedd("simulate", "--trace", str(path), "--out",
                                 str(tmp_path / "out"), "--no-progress"))
    assert line.startswith(f"schedd: error: {path}: "), line
    assert "job line" in line


def test_lenient_skips_count_and_report(tmp_path):
    path = tmp_path / "bad.swf"
    path.write_text("\n".join(["; MaxNodes: 1e20", job(1, submit="-50"), job(2),
                               job(3, runtime="1e308"), job(4)]) + "\n")
    trace = read_trace(path, lenient=True)
    assert len(trace) == 3 and trace.skipped == 2  # the header line and job 3 (1e308)
    assert trace.unusual == {2: (1, -50.0, -50.0)}  # job 1: kept as given
    assert trace.header.max_nodes is None
    done = schedd("simulate", "--trace", str(path), "--lenient", "--out",
                  str(tmp_path / "out"), "--no-progress")
    assert done.returncode == 0, done.stderr
    assert "3" in done.stderr and "malformed" in done.stderr, done.stderr


def test_ecc_amount_beyond_the_limit(tmp_path):
    path = tmp_path / "bad.cwf"
    tail = " -1 S -1 B 1 -1 -1 -1 -1 -1 -1 -1 -1"
    path.write_text(GOOD + tail + "\n" + "1 50 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1"
                    " -1 ET 1e300\n")
    with pytest.raises(TraceError, match=r"bad\.cwf:2: .*ET command.*found '1e\+300'"):
        read_trace(path)


# ---------------------------------------------------------------- fuzz
EXTREME = ["-50", "-1", "0", "1e308", "-1e308", "1e10", "1e11", "5e-324", "1e20", "nan", "inf",
           "-0", "2147483648", "9007199254740993", "0.5", "²", "١", "\u00a0", "x", "1e-400",
           "", "S", "ET", "EP", "B", "Q"]


@st.composite
def trace_lines(draw) -> str:
    if draw(st.integers(0, 6)) == 0:
        key = draw(st.sampled_from(["MaxNodes", "MaxProcs", "UnixStartTime", "Note"]))
        return f"; {key}: {draw(st.sampled_from(EXTREME + ['64', '128']))}"
    width = draw(st.sampled_from([18, 18, 31, 40, 20, 5]))
    toks = [draw(st.sampled_from(["1", "2", "3", "4"]))]
    for i in range(1, width):
        if i == swf_module.TYPE_FIELD:
            toks.append(draw(st.sampled_from(["S", "-1", "ET", "RT", "EP", "RP"])))
        elif i == swf_module.CLASS_FIELD:
            toks.append(draw(st.sampled_from(["B", "R", "O", "M", "D", "-1"])))
        elif i in swf_module._CODE_FIELDS:
            toks.append(draw(st.sampled_from(["-1", "0", "1"])))
        else:
            toks.append(draw(st.sampled_from(["-1", "1", "4", "100", "3600"])))
    for _ in range(draw(st.integers(0, 2))):  # spoil a field or two with extreme values
        toks[draw(st.integers(0, width - 1))] = draw(st.sampled_from(EXTREME)) or "-1"
    if draw(st.integers(0, 20)) == 0:
        toks.append(draw(st.text(max_size=5)))
    return " ".join(toks)


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(trace_lines(), min_size=0, max_size=8), lenient=st.booleans())
def test_reader_parses_or_names_file_and_line(lines, lenient):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.swf"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        try:
            trace = read_trace(path, lenient=lenient)
        except TraceError as err:
            assert not lenient, err
            text = str(err)
            assert "\n" not in text, text
            m = re.match(rf"{re.escape(str(path))}:(\d+): expected ", text)
            assert m and 1 <= int(m.group(1)) <= len(lines), text
            return
        # Accepted: every range-checked column is within the shared limits, or, in a
        # field a real log fills, within 2^53 and counted in trace.unusual...
        for col in swf_module.COLUMNS:
            limit = swf_module._FIELD_LIMITS.get(col.field)
            if limit is None:
                continue
            outside = [float(v) for v in trace.columns[col.name]
                       if not limit.accepts(float(v))]
            if col.field not in swf_module.KEPT_FIELDS:
                assert not outside, col
            elif outside:
                assert all(abs(v) <= 2**53 for v in outside), col
                assert trace.unusual[col.field + 1] == (len(outside), min(outside),
                                                        max(outside)), col
        # ... and a simulation of it runs with the invariants checked after every event.
        try:
            norm = normalize(trace, lenient=True)
        except TraceError as err:
            assert "fuzz.swf" in str(err) and "\n" not in str(err)
            return
        if len(norm) == 0:
            return
        cluster = NodePool(norm.max_nodes)
        simulate(norm, cluster, make_policy("easy", [], cluster), check_invariants=True)


# ---------------------------------------------------------------- found by the fuzz above
def malleable(job_id: int, min_nodes: str) -> str:
    """A 4-node malleable job (class M in field 22, min_nodes in field 25)."""
    return job(job_id) + f" -1 S -1 M -1 -1 {min_nodes} -1 -1 -1 -1 -1 -1"


def test_malleable_min_above_nodes_is_an_error_at_its_line(tmp_path):
    path = tmp_path / "m.swf"
    path.write_text("\n".join([malleable(1, "2"), malleable(2, "8")]) + "\n")
    with pytest.raises(TraceError, match=r"m\.swf:2: expected min_nodes \(field 25\) of "
                       r"malleable job 2 at most its 4 nodes, found 8"):
        normalize(read_trace(path))
    norm = normalize(read_trace(path), lenient=True)  # dropped and counted
    assert list(norm.columns["job_id"]) == [1] and norm.dropped["malformed"] == 1


def test_malleable_without_min_is_rigid_and_simulates(tmp_path):
    path = tmp_path / "m.swf"
    path.write_text(malleable(1, "-1") + "\n")
    norm = normalize(read_trace(path))
    assert list(norm.columns["min_nodes"]) == [4]
    cluster = NodePool(norm.max_nodes)
    run = simulate(norm, cluster, make_policy("easy", [], cluster), check_invariants=True)
    assert list(run.results["id"]) == [1]
