"""Reading and writing trace files: fields, header, ECC lines, errors, lenient mode."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from test_traces_helpers import assert_same_trace, ecc, ext, ext2, row, write

from schedd.traces import COLUMN_NAMES, EccCommand, TraceError, read_trace, write_trace
from schedd.traces import swf as swf_module

# ----------------------------------------------------------------------------- fields


def test_swf_fields_land_in_named_columns(tmp_path):
    line = "7 100 5 3600 64 3500.5 1024 32 7200 2048 1 11 12 13 2 3 6 30"
    t = read_trace(write(tmp_path / "a.swf", line))
    assert len(t) == 1
    expected = dict(
        job_id=7, submit=100, wait=5, runtime=3600, procs=64, cpu=3500.5, mem=1024,
        req_procs=32, req_time=7200, req_mem=2048, status=1, user=11, group=12, app=13,
        queue=2, partition=3, prev_job=6, think=30,
    )  # fmt: skip
    for name, value in expected.items():
        assert t.columns[name][0] == value, name
    assert t.columns["job_class"][0] == "B"  # absent field 22 -> batch
    for name in COLUMN_NAMES[18:]:
        if name != "job_class":
            assert t.columns[name][0] == -1, name


def test_column_dtypes(tmp_path):
    t = read_trace(write(tmp_path / "a.swf", row(1)))
    ints = {"job_id", "procs", "req_procs", "status", "user", "group", "app", "queue"}
    ints |= {"partition", "prev_job", "checkpointable", "min_nodes", "est_nodes"}
    ints |= {"req_nodes", "exclusive", "qos", "dep_kind", "state", "started_by"}
    for name in COLUMN_NAMES:
        col = t.columns[name]
        if name == "job_class":
            assert col.dtype == np.dtype("<U1")
        elif name in ints:
            assert col.dtype == np.int64, name
        else:
            assert col.dtype == np.float64, name
        assert col.shape == (1,)


def test_float_times_and_minus_one_point_zero(tmp_path):
    line = "1 0.5 -1.00 12.25 4 -1 -1 -1.0 30.5 -1 1 -1 -1 -1 -1 -1 -1 -1"
    t = read_trace(write(tmp_path / "a.swf", line))
    assert t.columns["submit"][0] == 0.5
    assert t.columns["runtime"][0] == 12.25
    assert t.columns["req_procs"][0] == -1
    assert t.columns["req_time"][0] == 30.5


def test_extension_fields(tmp_path):
    tail = ext(
        req_start=500, job_class="O", checkpointable=0, ckpt_gb=2.5, min_nodes=4, setup=30,
        notice_time=50, est_arrival=90, est_nodes=8, est_runtime=600, ckpt_interval=900,
    )  # fmt: skip
    t = read_trace(write(tmp_path / "a.swf", row(1, tail=tail), row(2)))
    c = t.columns
    assert list(c["job_class"]) == ["O", "B"]
    assert list(c["req_start"]) == [500, -1]
    assert list(c["checkpointable"]) == [0, -1]
    assert list(c["ckpt_gb"]) == [2.5, -1]
    assert list(c["min_nodes"]) == [4, -1]
    assert list(c["setup"]) == [30, -1]
    assert list(c["notice_time"]) == [50, -1]
    assert list(c["est_arrival"]) == [90, -1]
    assert list(c["est_nodes"]) == [8, -1]
    assert list(c["est_runtime"]) == [600, -1]
    assert list(c["ckpt_interval"]) == [900, -1]


def test_lines_may_stop_after_19_or_21_fields_and_mix(tmp_path):
    t = read_trace(
        write(tmp_path / "a.cwf", row(1, tail=(77,)), row(2, tail=(-1, "S", -1)), row(3))
    )
    assert list(t.columns["req_start"]) == [77, -1, -1]
    assert list(t.columns["job_class"]) == ["B", "B", "B"]


def test_class_letters_and_minus_one(tmp_path):
    lines = [row(i, tail=ext(job_class=c)) for i, c in enumerate("BROMD", 1)]
    lines.append(row(6, tail=ext(job_class=-1)))
    t = read_trace(write(tmp_path / "a.swf", *lines))
    assert "".join(t.columns["job_class"]) == "BROMDB"


def test_unused_optional_fields_are_constant_readonly_columns(tmp_path):
    t = read_trace(write(tmp_path / "a.swf", row(1), row(2)))
    assert not t.columns["setup"].flags.writeable
    assert list(t.columns["setup"]) == [-1, -1]
    assert t.columns["runtime"].flags.writeable


def test_blank_lines_crlf_and_tabs(tmp_path):
    path = tmp_path / "a.swf"
    path.write_bytes(b"; MaxNodes: 8\r\n\r\n" + row(1).replace(" ", "\t").encode() + b"\r\n\n  \n")
    t = read_trace(path)
    assert len(t) == 1 and t.header.max_nodes == 8 and t.header.lines == ["; MaxNodes: 8"]


def test_empty_file(tmp_path):
    t = read_trace(write(tmp_path / "a.swf"))
    assert len(t) == 0 and t.eccs == [] and t.skipped == 0
    assert all(len(c) == 0 for c in t.columns.values())


def test_path_is_kept_as_given(tmp_path):
    path = write(tmp_path / "a.swf", row(1))
    assert read_trace(path).path == str(path)
    assert read_trace(str(path)).path == str(path)


# ----------------------------------------------------------------------------- header


def test_header_fields_and_lines(tmp_path):
    lines = ["; Version: 2.2", ";   MaxNodes: 100", "; MaxProcs:200", "; UnixStartTime: 0 "]
    t = read_trace(write(tmp_path / "a.swf", *lines, row(1), "; Queues: 1=batch"))
    h = t.header
    assert (h.max_nodes, h.max_procs, h.unix_start_time) == (100, 200, 0)
    assert h.lines == [*lines, "; Queues: 1=batch"]  # verbatim, trailing ones too


def test_header_missing_or_unusable_values_are_none(tmp_path):
    t = read_trace(write(tmp_path / "a.swf", "; MaxNodes: lots", "; MaxProcs: -1", row(1)))
    assert (t.header.max_nodes, t.header.max_procs, t.header.unix_start_time) == (None,) * 3


def test_indented_comment_line_is_header(tmp_path):
    t = read_trace(write(tmp_path / "a.swf", "   ; MaxNodes: 4", row(1)))
    assert t.header.max_nodes == 4 and t.header.lines == ["   ; MaxNodes: 4"]


def test_non_ascii_header_bytes_survive(tmp_path):
    path = tmp_path / "a.swf"
    path.write_bytes("; Acknowledge: Uri Lübin\n".encode() + b"; Bad: \xff\n" + row(1).encode())
    t = read_trace(path)
    assert t.header.lines[0] == "; Acknowledge: Uri Lübin"
    out = tmp_path / "b.swf"
    write_trace(out, t)
    assert out.read_bytes().startswith("; Acknowledge: Uri Lübin\n".encode() + b"; Bad: \xff\n")


# ----------------------------------------------------------------------------- ECC lines


def test_ecc_lines_are_commands_not_jobs(tmp_path):
    t = read_trace(
        write(
            tmp_path / "a.cwf",
            "; c",
            row(1, tail=ext()),
            ecc(1, 50, "ET", 600),
            row(2, submit=60, tail=ext()),
            ecc(2, 70, "RP", 2),
            ecc(1, 80.5, "RT", 30),
            ecc(2, 90, "EP", 4),
        )
    )
    assert list(t.columns["job_id"]) == [1, 2]
    assert t.eccs == [
        EccCommand(1, 50.0, "ET", 600.0, 3),
        EccCommand(2, 70.0, "RP", 2.0, 5),
        EccCommand(1, 80.5, "RT", 30.0, 6),
        EccCommand(2, 90.0, "EP", 4.0, 7),
    ]


def test_ecc_for_job_in_same_and_earlier_chunk(tmp_path, monkeypatch):
    monkeypatch.setattr(swf_module, "CHUNK_BYTES", 64)  # several chunks, fast and slow
    lines = [row(i, tail=ext()) for i in range(1, 20)] + [ecc(3, 5, "ET", 1)]
    t = read_trace(write(tmp_path / "a.cwf", *lines, row(20, tail=ext()), ecc(20, 6, "RT", 2)))
    assert [(e.job_id, e.line) for e in t.eccs] == [(3, 20), (20, 22)]
    assert len(t) == 20


# ----------------------------------------------------------------------------- errors


def _error(tmp_path, *lines: str, name: str = "bad.swf") -> str:
    path = write(tmp_path / name, *lines)
    with pytest.raises(TraceError) as info:
        read_trace(path)
    assert info.value.path == str(path)
    return str(info.value).replace(str(tmp_path) + "/", "")


def test_error_too_few_fields(tmp_path):
    msg = _error(tmp_path, "; h", row(1), "1 2 3 4 5 6 7")
    assert msg == "bad.swf:3: expected 18 to 40 whitespace-separated fields, found 7"


def test_error_too_many_fields(tmp_path):
    msg = _error(tmp_path, row(1, tail=ext() + ext2() + (1,)))
    assert msg == "bad.swf:1: expected 18 to 40 whitespace-separated fields, found 41"


def test_error_not_a_number(tmp_path):
    msg = _error(tmp_path, row(1), "", row(2, procs="abc"))
    assert msg == "bad.swf:3: expected a number in field 5 (procs), found 'abc'"


@pytest.mark.parametrize("token", ["nan", "inf", "0x10", "1_0", "1d5", "--1", "1.2.3"])
def test_error_odd_numbers(tmp_path, token):
    msg = _error(tmp_path, row(1, runtime=token))
    assert msg == f"bad.swf:1: expected a number in field 4 (runtime), found '{token}'"


def test_error_overflowing_number(tmp_path):
    msg = _error(tmp_path, row(1, runtime="1e999"))
    assert msg == "bad.swf:1: expected a finite number in field 4 (runtime), found '1e999'"


def test_error_fraction_in_integer_field(tmp_path):
    msg = _error(tmp_path, row(1, req_procs=2.5))
    assert msg == "bad.swf:1: expected an integer in field 8 (req_procs), found '2.5'"


def test_error_bad_class_letter(tmp_path):
    msg = _error(tmp_path, row(1, tail=ext(job_class="X")))
    assert msg == (
        "bad.swf:1: expected a job class letter B, R, O, M or D (or -1) in field 22, found 'X'"
    )


def test_error_bad_request_type(tmp_path):
    msg = _error(tmp_path, row(1, tail=(-1, "XX", -1)))
    assert msg == (
        "bad.swf:1: expected a request type S, ET, RT, EP or RP (or -1) in field 20, found 'XX'"
    )


def test_error_letter_in_numeric_field(tmp_path):
    msg = _error(tmp_path, row(1, tail=(-1, "S", "ET")))
    assert msg == "bad.swf:1: expected a number in field 21 (amount), found 'ET'"


def test_error_bad_checkpointable(tmp_path):
    msg = _error(tmp_path, row(1, tail=ext(checkpointable=2)))
    assert msg == "bad.swf:1: expected 1, 0 or -1 in field 23 (checkpointable), found '2'"


def test_error_ecc_for_unknown_job(tmp_path):
    msg = _error(tmp_path, row(1, tail=ext()), ecc(9, 5, "ET", 10))
    assert msg == (
        "bad.swf:2: expected a submission (type S) of job 9 earlier in the file "
        "for this ET command, found none"
    )


def test_error_ecc_before_its_job(tmp_path):
    msg = _error(tmp_path, ecc(1, 5, "RT", 10), row(1, tail=ext()))
    assert msg.startswith("bad.swf:1: expected a submission (type S) of job 1 earlier")


def test_error_ecc_without_amount(tmp_path):
    msg = _error(tmp_path, row(1, tail=ext()), row(1, tail=(-1, "ET")))
    assert msg == "bad.swf:2: expected an amount in field 21 for this ET command, found none"


def test_error_ecc_negative_amount(tmp_path):
    msg = _error(tmp_path, row(1, tail=ext()), ecc(1, 5, "RT", -5))
    assert msg == (
        "bad.swf:2: expected a non-negative number of seconds in field 21 "
        "for this RT command (a number in [0, 1e+09] s), found '-5'"
    )


def test_error_ecc_fractional_processors(tmp_path):
    msg = _error(tmp_path, row(1, tail=ext()), ecc(1, 5, "EP", 1.5))
    assert msg == (
        "bad.swf:2: expected a non-negative whole number of processors in field 21 "
        "for this EP command (a whole number in [0, 10000000]), found '1.5'"
    )


def test_error_inline_comment(tmp_path):
    msg = _error(tmp_path, row(1) + " ; note")
    assert (
        msg == "bad.swf:1: expected a comment only on a line of its own, found ';' after field 18"
    )


def test_error_non_ascii_in_data(tmp_path):
    path = tmp_path / "bad.swf"
    path.write_bytes(row(1, procs="\u00a01").encode())
    with pytest.raises(TraceError, match=r"bad.swf:1: expected a number in field 5 \(procs\)"):
        read_trace(path)


def test_error_line_numbers_across_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(swf_module, "CHUNK_BYTES", 100)
    lines = ["; header"] + [row(i) for i in range(1, 50)] + ["1 2 3"]
    msg = _error(tmp_path, *lines)
    assert msg == "bad.swf:51: expected 18 to 40 whitespace-separated fields, found 3"


def test_error_missing_file(tmp_path):
    path = tmp_path / "nope.swf"
    with pytest.raises(TraceError) as info:
        read_trace(path)
    assert str(info.value) == f"{path}: no such file"
    assert info.value.line is None


def test_error_corrupt_gzip(tmp_path):
    path = tmp_path / "a.swf.gz"
    path.write_bytes(row(1).encode())
    with pytest.raises(TraceError) as info:
        read_trace(path)
    assert str(info.value) == (
        f"{path}: expected gzip data (the name ends in .gz), found a corrupt file"
    )


def test_error_is_not_a_numpy_traceback(tmp_path):
    path = write(tmp_path / "bad.swf", row(1), row(2, status="x"))
    with pytest.raises(TraceError) as info:
        read_trace(path)
    assert info.value.__cause__ is None and info.value.__suppress_context__


# ----------------------------------------------------------------------------- lenient


def test_lenient_skips_and_counts(tmp_path):
    path = write(
        tmp_path / "a.swf",
        "; MaxNodes: 4",
        row(1, tail=ext()),
        "1 2 3",
        row(2, procs="x", tail=ext()),
        row(3, tail=ext(job_class="Q")),
        ecc(2, 5, "ET", 10),  # job 2 was skipped, so this one is too
        ecc(1, 6, "ET", 10),
        row(4, tail=ext()),
    )
    with pytest.raises(TraceError):
        read_trace(path)
    t = read_trace(path, lenient=True)
    assert list(t.columns["job_id"]) == [1, 4]
    assert t.skipped == 4
    assert t.eccs == [EccCommand(1, 6.0, "ET", 10.0, 7)]


def test_lenient_clean_file_skips_nothing(tmp_path):
    t = read_trace(write(tmp_path / "a.swf", row(1), row(2)), lenient=True)
    assert t.skipped == 0 and len(t) == 2


# ----------------------------------------------------------------------------- writing


def _fields(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return [line.split() for line in f if not line.startswith(";")]


@pytest.mark.parametrize("name", ["a.swf", "a.swf.gz"])
def test_round_trip_plain_swf(tmp_path, name):
    src = write(
        tmp_path / "src.swf", "; MaxNodes: 64", "; Note: x", row(1, 0.5, 12.25, 4), row(2, 3, 7)
    )
    first = read_trace(src)
    write_trace(tmp_path / name, first)
    assert all(len(f) == 18 for f in _fields(tmp_path / name))
    assert_same_trace(read_trace(tmp_path / name), first)


@pytest.mark.parametrize("name", ["a.cwf", "a.cwf.gz"])
def test_round_trip_extension_and_eccs(tmp_path, name):
    src = write(
        tmp_path / "src.cwf",
        "; MaxNodes: 64",
        row(1, tail=ext(job_class="M", min_nodes=2, setup=1.5)),
        ecc(1, 20, "RP", 2),
        row(2, tail=ext(job_class="O", notice_time=1, est_arrival=3, est_nodes=2)),
        "; trailing",
    )
    first = read_trace(src)
    write_trace(tmp_path / name, first)
    fields = _fields(tmp_path / name)
    assert [len(f) for f in fields] == [31, 31, 31]
    assert fields[0][19:22] == ["S", "-1", "M"]
    assert fields[2][:2] == ["1", "20"] and fields[2][19:21] == ["RP", "2"]
    again = read_trace(tmp_path / name)
    assert_same_trace(again, first)
    assert again.header.lines == ["; MaxNodes: 64", "; trailing"]


def test_write_uses_31_fields_if_any_job_uses_one(tmp_path):
    first = read_trace(write(tmp_path / "a.swf", row(1), row(2, tail=(5,))))
    write_trace(tmp_path / "b.swf", first)
    assert [len(f) for f in _fields(tmp_path / "b.swf")] == [31, 31]


def test_write_numbers(tmp_path):
    first = read_trace(write(tmp_path / "a.swf", row(1, 1e9, 0.1, 2), row(2, 3.0, 2.5e-7, 2)))
    first.columns["mem"][0] = 1e20  # memory has no range limit (schedd/limits.py)
    write_trace(tmp_path / "b.swf", first)
    fields = _fields(tmp_path / "b.swf")
    assert fields[0][:7] == ["1", "1000000000", "-1", "0.1", "2", "-1", "1e+20"]  # beyond 2**53
    assert fields[1][:5] == ["2", "3", "-1", "2.5e-07", "2"]


def test_write_syncs_header_fields_into_lines(tmp_path):
    first = read_trace(write(tmp_path / "a.swf", "; MaxNodes: 10", "; Other: y", row(1)))
    first.header.max_nodes = 20
    first.header.unix_start_time = 5
    write_trace(tmp_path / "b.swf", first)
    assert read_trace(tmp_path / "b.swf").header.lines == [
        "; MaxNodes: 20",
        "; Other: y",
        "; UnixStartTime: 5",
    ]


def test_write_read_write_is_byte_identical(tmp_path):
    src = write(tmp_path / "a.cwf", "; h", row(1, 0.25, tail=ext(setup=0.1)), ecc(1, 2, "ET", 3))
    write_trace(tmp_path / "b.cwf", read_trace(src))
    write_trace(tmp_path / "c.cwf", read_trace(tmp_path / "b.cwf"))
    assert (tmp_path / "b.cwf").read_bytes() == (tmp_path / "c.cwf").read_bytes()


def test_gzip_output_is_deterministic(tmp_path):
    t = read_trace(write(tmp_path / "a.swf", row(1)))
    write_trace(tmp_path / "b.swf.gz", t)
    first = (tmp_path / "b.swf.gz").read_bytes()
    write_trace(tmp_path / "b.swf.gz", t)
    assert (tmp_path / "b.swf.gz").read_bytes() == first
