"""Fields 32-40 of the schedd extension and the names header (docs/trace-format.md)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from test_traces_helpers import assert_same_trace, ecc, ext, ext2, row, write

from schedd.traces import TraceError, TraceHeader, read_trace, write_trace
from schedd.traces.names import encode_name, names_line, parse_names_line
from schedd.traces.swf import Trace

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "traces"


def _fields(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines()
            if line.strip() and not line.lstrip().startswith(";")]


def _error(tmp_path: Path, *lines: str) -> str:
    path = write(tmp_path / "bad.swf", *lines)
    with pytest.raises(TraceError) as info:
        read_trace(path)
    return str(info.value).replace(str(tmp_path) + "/", "")


def test_fields_32_to_40_read_as_columns(tmp_path):
    tail = ext() + ext2(eligible=30, cancel_time=900.5, req_nodes=2, exclusive=1, qos=3,
                        dep_kind=1, priority=4294901758, state=5, started_by=3)
    t = read_trace(write(tmp_path / "a.swf", row(1, tail=tail), row(2, prev_job=1)))
    c = t.columns
    assert list(c["eligible"]) == [30, -1]
    assert list(c["cancel_time"]) == [900.5, -1]
    assert list(c["req_nodes"]) == [2, -1]
    assert list(c["exclusive"]) == [1, -1]
    assert list(c["qos"]) == [3, -1]
    assert list(c["dep_kind"]) == [1, -1]
    assert list(c["priority"]) == [4294901758, -1]
    assert list(c["state"]) == [5, -1]
    assert list(c["started_by"]) == [3, -1]
    for name in ("req_nodes", "exclusive", "qos", "dep_kind", "state", "started_by"):
        assert c[name].dtype == np.int64, name
    for name in ("eligible", "cancel_time", "priority"):
        assert c[name].dtype == np.float64, name


def test_a_line_may_stop_anywhere_after_field_31(tmp_path):
    t = read_trace(write(tmp_path / "a.swf", row(1, tail=ext() + (12,)),
                         row(2, tail=ext() + ext2()[:5] + (2,))))
    assert list(t.columns["eligible"]) == [12, -1]
    assert list(t.columns["dep_kind"]) == [-1, 2]


@pytest.mark.parametrize("field, name, value, listed", [
    (35, "exclusive", "2", "1, 0 or -1"),
    (37, "dep_kind", "4", "1, 2, 3 or -1"),
    (37, "dep_kind", "0", "1, 2, 3 or -1"),
    (40, "started_by", "0", "1, 2, 3 or -1"),
])
def test_code_fields_take_only_their_codes(tmp_path, field, name, value, listed):
    tail = list(ext() + ext2())
    tail[field - 19] = value
    msg = _error(tmp_path, row(1), row(2, tail=tuple(tail)))
    assert msg == f"bad.swf:2: expected {listed} in field {field} ({name}), found '{value}'"


@pytest.mark.parametrize("field, name, value, what", [
    (32, "eligible", "-5", "a number in [0, 1e+10] s or -1"),
    (33, "cancel_time", "1e11", "a number in [0, 1e+10] s or -1"),
    (34, "req_nodes", "-2", "a whole number in [0, 2147483647] or -1"),
])
def test_times_and_counts_outside_their_range_are_kept_and_counted(tmp_path, field, name,
                                                                   value, what):
    """Fields 32-40 come from real logs: as fields 1-18, a value outside the usual range
    is kept as given and counted; strict=True refuses it at its line."""
    tail = list(ext() + ext2())
    tail[field - 19] = value
    path = write(tmp_path / "bad.swf", row(1, tail=tuple(tail)))
    t = read_trace(path)
    assert t.columns[name].tolist() == [float(value)]
    assert t.unusual == {field: (1, float(value), float(value))}
    with pytest.raises(TraceError) as info:
        read_trace(path, strict=True)
    assert str(info.value) == (f"{path}:1: expected {what} in field {field} ({name}), "
                               f"found '{value}'")


def test_integer_and_finite_checks_reach_the_new_fields(tmp_path):
    tail = list(ext() + ext2())
    tail[36 - 19] = "1.5"
    assert _error(tmp_path, row(1, tail=tuple(tail))) == (
        "bad.swf:1: expected an integer in field 36 (qos), found '1.5'")
    tail[36 - 19], tail[38 - 19] = "1", "inf"
    assert _error(tmp_path, row(1, tail=tuple(tail))) == (
        "bad.swf:1: expected a number in field 38 (priority), found 'inf'")


def test_write_uses_40_fields_only_when_a_field_beyond_31_is_used(tmp_path):
    first = read_trace(write(tmp_path / "a.swf", row(1), row(2, tail=ext() + ext2(qos=1))))
    write_trace(tmp_path / "b.swf", first)
    fields = _fields(tmp_path / "b.swf")
    assert [len(f) for f in fields] == [40, 40]
    assert fields[0][19:22] == ["S", "-1", "B"] and fields[1][35] == "1"
    assert_same_trace(read_trace(tmp_path / "b.swf"), first)
    first.columns["qos"] = np.full(2, -1, dtype=np.int64)  # nothing beyond 31 any more
    write_trace(tmp_path / "c.swf", first)
    assert [len(f) for f in _fields(tmp_path / "c.swf")] == [18, 18]


def test_eccs_with_wide_lines_are_padded_to_40(tmp_path):
    src = write(tmp_path / "a.cwf", row(1, tail=ext(job_class="M") + ext2(eligible=5)),
                ecc(1, 20, "ET", 60))
    first = read_trace(src)
    write_trace(tmp_path / "b.cwf", first)
    fields = _fields(tmp_path / "b.cwf")
    assert [len(f) for f in fields] == [40, 40]
    assert fields[1][19:21] == ["ET", "60"] and fields[1][21:] == ["-1"] * 19
    again = read_trace(tmp_path / "b.cwf")
    assert_same_trace(again, first)


# ------------------------------------------------------------------------- names header


def test_names_header_is_parsed_per_kind(tmp_path):
    t = read_trace(write(
        tmp_path / "a.swf",
        "; MaxNodes: 4",
        "; schedd-names user: 1=alice 2=bob",
        ";schedd-names   qos :3=high%20prio 1=normal",
        "; schedd-names state: 1=COMPLETED 2=CANCELLED%20by%200 3=a%3Db%25c",
        "; schedd-names partition:",
        row(1, user=1),
    ))
    assert t.header.names == {
        "user": {1: "alice", 2: "bob"},
        "qos": {3: "high prio", 1: "normal"},
        "state": {1: "COMPLETED", 2: "CANCELLED by 0", 3: "a=b%c"},
        "partition": {},
    }
    assert t.header.max_nodes == 4 and len(t.header.lines) == 5


@pytest.mark.parametrize("line, why", [
    ("; schedd-names user: 1=alice bob", "expected NUMBER=NAME (NAME percent-encoded) in the "
     "user names, found 'bob'"),
    ("; schedd-names user: x=alice", "expected NUMBER=NAME (NAME percent-encoded) in the user "
     "names, found 'x=alice'"),
    ("; schedd-names user: -1=alice", "expected NUMBER=NAME (NAME percent-encoded) in the "
     "user names, found '-1=alice'"),
    ("; schedd-names user: 1=", "expected NUMBER=NAME (NAME percent-encoded) in the user "
     "names, found '1='"),
    ("; schedd-names user: 1=a%2", "expected NUMBER=NAME (NAME percent-encoded) in the user "
     "names, found '1=a%2'"),
    ("; schedd-names user: 1=a 1=b", "expected each number once in the user names, found 1 "
     "twice"),
    ("; schedd-names user: 9007199254740993=a", "expected a number at most 2^53 in the user "
     "names, found '9007199254740993'"),
    ("; schedd-names 1=alice", "expected a names line '; schedd-names KIND: NUMBER=NAME ...' "
     "with KIND in lower case, found '; schedd-names 1=alice'"),
    ("; schedd-names User: 1=a", "expected a names line '; schedd-names KIND: NUMBER=NAME "
     "...' with KIND in lower case, found '; schedd-names User: 1=a'"),
])
def test_a_malformed_names_line_is_an_error_at_its_line(tmp_path, line, why):
    assert _error(tmp_path, row(1), "; other", line, row(2)) == f"bad.swf:3: {why}"


def test_a_second_line_of_one_kind_is_an_error(tmp_path):
    msg = _error(tmp_path, "; schedd-names qos: 1=a", row(1), "; schedd-names qos: 2=b")
    assert msg == "bad.swf:3: expected one names line per kind, found a second qos line"


def test_lenient_drops_a_malformed_names_line_and_counts_it(tmp_path):
    path = write(tmp_path / "a.swf", "; schedd-names qos: 1=a", "; schedd-names user: 1=",
                 row(1))
    t = read_trace(path, lenient=True)
    assert t.header.names == {"qos": {1: "a"}} and t.skipped == 1
    assert t.header.lines == ["; schedd-names qos: 1=a"]


def test_lines_that_only_look_like_names_are_plain_comments(tmp_path):
    t = read_trace(write(tmp_path / "a.swf", "; schedd-namesake: 1", "; names: 1=a", row(1)))
    assert t.header.names == {} and len(t.header.lines) == 2


@pytest.mark.parametrize("name", [
    "alice", "a b", "a=b", "100%", "tab\there", "new\nline", "Lübin", "\u00a0nbsp", "x;y",
    "日本", "\x7f", "a\udcff",
])
def test_names_round_trip_through_their_encoding(name):
    kind, names = parse_names_line(names_line("user", {7: name, 2: "z"}))
    assert kind == "user" and names == {7: name, 2: "z"}
    assert " " not in encode_name(name) and "=" not in encode_name(name)


def test_names_are_written_back_and_kept_in_sync(tmp_path):
    first = read_trace(write(tmp_path / "a.swf", "; Note: x", "; schedd-names user: 2=b 1=a",
                             "; schedd-names queue: 1=q", row(1)))
    assert first.header.lines[1] == "; schedd-names user: 2=b 1=a"
    first.header.names["user"][3] = "c d"
    first.header.names["qos"] = {1: "normal"}
    write_trace(tmp_path / "b.swf", first)
    again = read_trace(tmp_path / "b.swf")
    assert again.header.lines == ["; Note: x", "; schedd-names user: 1=a 2=b 3=c%20d",
                                  "; schedd-names queue: 1=q", "; schedd-names qos: 1=normal"]
    assert again.header.names == {"user": {1: "a", 2: "b", 3: "c d"}, "queue": {1: "q"},
                                  "qos": {1: "normal"}}
    write_trace(tmp_path / "c.swf", again)
    assert (tmp_path / "c.swf").read_bytes() == (tmp_path / "b.swf").read_bytes()


def test_names_made_in_memory_are_written(tmp_path):
    cols = read_trace(write(tmp_path / "a.swf", row(1, user=1))).columns
    header = TraceHeader(max_nodes=4, names={"user": {1: "alice"}, "state": {1: "COMPLETED"}})
    write_trace(tmp_path / "b.swf", Trace("<memory>", header, dict(cols), []))
    assert (tmp_path / "b.swf").read_text().splitlines()[:3] == [
        "; schedd-names user: 1=alice", "; schedd-names state: 1=COMPLETED", "; MaxNodes: 4"]


# ---------------------------------------------------------------- existing traces unchanged

REAL = ["KTH-SP2-1996-2.swf", "theta_2023.swf", "mira_2018_wk1_cobalt2swf.swf"]


@pytest.mark.parametrize("name", REAL)
def test_real_traces_are_written_byte_for_byte_as_before(tmp_path, name):
    """The extension never widens a trace that does not use it: reading and writing a real
    archive trace gives 18-field lines, as before fields 32-40 existed."""
    path = TRACES / name
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared traces are not on this machine)")
    first = read_trace(path)
    write_trace(tmp_path / "a.swf", first)
    write_trace(tmp_path / "b.swf", read_trace(tmp_path / "a.swf"))
    a, b = (tmp_path / "a.swf").read_bytes(), (tmp_path / "b.swf").read_bytes()
    assert hashlib.sha256(a).digest() == hashlib.sha256(b).digest()
    widths = {len(line.split()) for line in a.decode().splitlines()[:2000]
              if line and not line.startswith(";")}
    assert widths == {18}
    assert first.header.names == {}


# ------------------------------------------------------------------------- normalisation


def test_normalize_takes_req_nodes_and_keeps_zero_runtime_cancellations(tmp_path):
    from schedd.traces import normalize
    from schedd.traces.normalize import ZERO_RUNTIME_RUN, kept_note, select

    path = write(
        tmp_path / "a.swf", "; MaxNodes: 8", "; MaxProcs: 64",
        row(1, runtime=10, procs=16, tail=ext() + ext2(req_nodes=4)),  # 4 nodes, not 2
        row(2, runtime=0, procs=8, tail=ext() + ext2(cancel_time=30)),  # kept, 1 s
        row(3, runtime=0, procs=8),  # runtime 0 and no cancel time: dropped, as before
        row(4, submit=5, runtime=0, procs=8, tail=ext() + ext2(cancel_time=40)),
    )
    norm = normalize(read_trace(path))
    assert norm.columns["job_id"].tolist() == [1, 2, 4]
    assert norm.columns["nodes"].tolist() == [4, 1, 1]
    assert norm.columns["runtime"].tolist() == [10, ZERO_RUNTIME_RUN, ZERO_RUNTIME_RUN]
    assert norm.columns["walltime"].tolist() == [10, ZERO_RUNTIME_RUN, ZERO_RUNTIME_RUN]
    assert norm.dropped["runtime<=0"] == 1 and norm.zero_runtime_cancelled == 2
    assert kept_note(norm, str(path)) == (
        "2 jobs of a.swf have runtime 0 and a cancel time (cancelled as they started, or "
        "before, with no time limit): each runs 1 s if it starts")
    assert select(norm, start=1).zero_runtime_cancelled == 1
    assert [s.runtime for s in norm.specs()] == [10, 1, 1]
