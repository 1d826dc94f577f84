"""`schedd import slurm`: sacct --parsable2 output into a trace (docs/import.md).

The fixtures in tests/data/import are written from Slurm 22.05's source (src/sacct/print.c,
src/common/parse_time.c) and its man page; tests/data/import/real/ holds output of a real
Slurm 22.05 (see its README)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pytest

from schedd.slurm.importers import Machine, import_log
from schedd.slurm.importers import fields as f
from schedd.slurm.importers.fields import FieldError, LogError
from schedd.slurm.importers.submit_line import submit_options
from schedd.traces import normalize, read_trace, write_trace

DATA = Path(__file__).resolve().parent / "data" / "import"
ODD = DATA / "sacct_oddities.txt"
T0 = 1795874400  # 2026-11-28T14:00:00Z, the earliest submit of sacct_oddities.txt


def rows(trace) -> dict[int, dict[str, float]]:
    """job id -> column -> value, for reading assertions."""
    cols = trace.columns
    return {int(j): {name: cols[name][i].item() for name in cols}
            for i, j in enumerate(cols["job_id"])}


def names(trace, kind: str, number: float) -> str:
    return trace.header.names[kind][int(number)]


@pytest.fixture(scope="module")
def odd():
    return import_log("slurm", str(ODD))


def test_jobs_kept_and_everything_else_counted(odd):
    assert sorted(rows(odd.trace)) == [10, 11, 12, 13, 14, 15, 21, 22, 30, 31, 42]
    assert odd.counts.dropped == {
        "job steps (123.batch, 123.extern, 123.0, ...)": 4,
        "records of array tasks that never started (123_[5-10])": 1,
        "not finished when the log was written (no end time)": 2,
    }
    line = odd.counts.line(len(odd.trace), str(ODD))
    assert line.startswith("11 jobs of sacct_oddities.txt; not imported: 4 job steps")
    assert "\n" not in line


def test_times_are_relative_to_the_earliest_submit(odd):
    r = rows(odd.trace)
    assert odd.trace.header.unix_start_time == T0
    assert r[10]["submit"] == 0 and r[10]["wait"] == 5 and r[10]["runtime"] == 600
    assert r[11]["eligible"] == 605  # held by its dependency until job 10 ended
    assert r[11]["runtime"] == 3603 and r[11]["req_time"] == 3600  # TIMEOUT: past its limit
    assert r[42]["submit"] == 570


def test_ids_sizes_and_names(odd):
    r, t = rows(odd.trace), odd.trace
    assert (r[10]["procs"], r[10]["req_procs"], r[10]["req_nodes"]) == (64, 2, 2)
    assert names(t, "user", r[11]["user"]) == "bob"
    assert names(t, "account", r[11]["group"]) == "chem lab"
    assert names(t, "qos", r[11]["qos"]) == "high=prio"
    assert names(t, "partition", r[12]["partition"]) == "debug"
    assert [names(t, "state", r[j]["state"]) for j in (10, 11, 12, 22)] == [
        "COMPLETED", "TIMEOUT", "CANCELLED", "FAILED"]
    assert t.header.names["user"] == {1: "alice", 2: "bob", 3: "carol", 4: "dave", 5: "frank"}
    assert [r[j]["status"] for j in (10, 11, 12, 22)] == [1, 0, 5, 0]
    assert r[10]["priority"] == 4294901759


def test_array_tasks_and_het_components_keep_jobidraw(odd):
    r = rows(odd.trace)
    assert {21, 22, 30, 31} <= set(r)  # 20_1, 20_2 are JobIDRaw 21, 22; 30+1 is 31
    assert r[22]["runtime"] == 38


def test_cancelled_before_start_holds_its_place_for_its_limit(odd):
    r = rows(odd.trace)
    assert r[12]["runtime"] == 2 * 86400 and r[12]["req_time"] == 2 * 86400
    assert r[12]["cancel_time"] == 1800 and r[12]["wait"] == -1
    assert r[13]["runtime"] == 0 and r[13]["req_time"] == -1  # UNLIMITED, never ran
    assert r[13]["cancel_time"] == 1200


def test_cancelled_while_running_keeps_its_elapsed(odd):
    r = rows(odd.trace)
    assert r[14]["runtime"] == 120 and r[14]["cancel_time"] == 301  # its End
    assert r[14]["status"] == 5


def test_limits_flags_exclusive_and_dependencies(odd):
    r = rows(odd.trace)
    assert r[14]["req_time"] == 600  # "10:00" is MM:SS
    assert r[15]["req_time"] == -1  # Partition_Limit without --max-time
    assert [r[j]["started_by"] for j in (10, 11, 12, 14)] == [2, 3, -1, 1]
    assert [r[j]["exclusive"] for j in (10, 11, 14)] == [1, 0, 0]
    assert (r[11]["prev_job"], r[11]["dep_kind"]) == (10, 1)
    assert (r[14]["prev_job"], r[14]["dep_kind"]) == (10, 2)  # first of three kept
    assert (r[13]["prev_job"], r[13]["dep_kind"]) == (-1, -1)  # singleton: not kept
    notes = odd.counts.changed
    assert notes["with more than one dependency (the first afterok, afterany or afternotok "
                 "kept)"] == 1


def test_max_time_fills_unlimited_and_partition_limits():
    done = import_log("slurm", str(ODD), machine=Machine(max_time={"debug": 900.0,
                                                                   "": 7200.0}))
    r = rows(done.trace)
    assert r[13]["req_time"] == 900 and r[13]["runtime"] == 900  # debug's, never ran
    assert r[15]["req_time"] == 7200  # batch: the default given


def test_machine_size_from_options_or_largest_job(odd):
    assert (odd.trace.header.max_nodes, odd.trace.header.max_procs) == (2, 64)
    done = import_log("slurm", str(ODD), machine=Machine(nodes=16, cpus_per_node=32))
    assert (done.trace.header.max_nodes, done.trace.header.max_procs) == (16, 512)


def test_round_trip_through_the_file(tmp_path, odd):
    path = tmp_path / "t.swf"
    write_trace(path, odd.trace)
    again = read_trace(path)
    assert again.header.names == odd.trace.header.names
    for name, col in odd.trace.columns.items():
        assert np.array_equal(again.columns[name], col), name
    assert all(len(line.split()) == 40 for line in path.read_text().splitlines()
               if not line.startswith(";"))
    write_trace(tmp_path / "u.swf", again)
    assert (tmp_path / "u.swf").read_bytes() == path.read_bytes()


def test_subset_of_columns_in_another_order_and_time_zones():
    utc = rows(import_log("slurm", str(DATA / "sacct_subset.txt")).trace)
    assert utc[8]["wait"] == 3601 and utc[8]["runtime"] == 3600  # ElapsedRaw, no End
    assert utc[7]["req_time"] == 600  # TimelimitRaw is minutes
    madrid = import_log("slurm", str(DATA / "sacct_subset.txt"), tz=f.zone("Europe/Madrid"))
    # 01:59:59 CET to 03:00:00 CEST is one second: the clocks went forward that night
    assert rows(madrid.trace)[8]["wait"] == 1
    assert madrid.trace.header.unix_start_time == 1774740600  # 00:30 CET = 23:30 UTC
    assert madrid.counts.dropped == {
        "cancelled before they started, with no end time (when is unknown)": 1}


# ------------------------------------------------------------------------- bad lines

HEADER = "JobIDRaw|Submit|Start|End|Timelimit|NNodes"
GOOD = "5|2026-11-28T14:00:00|2026-11-28T14:00:01|2026-11-28T14:00:11|00:01:00|1"


def _error(tmp_path: Path, *lines: str, lenient: bool = False) -> str:
    path = tmp_path / "sacct.txt"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(LogError) as info:
        import_log("slurm", str(path), lenient=lenient)
    return str(info.value).replace(str(tmp_path) + "/", "")


@pytest.mark.parametrize("bad, why", [
    (GOOD.replace("2026-11-28T14:00:01", "2026-13-01T00:00:00"),
     "expected a time in column Start (YYYY-MM-DDTHH:MM:SS, Unix seconds, Unknown or "
     "None), found '2026-13-01T00:00:00'"),
    (GOOD.replace("2026-11-28T14:00:00", "Unknown"),
     "expected a time in column Submit (YYYY-MM-DDTHH:MM:SS or Unix seconds), found 'Unknown'"),
    (GOOD.replace("00:01:00", "1:xx"),
     "expected a time limit D-HH:MM:SS, HH:MM:SS, MM:SS, minutes, UNLIMITED or "
     "Partition_Limit in column Timelimit, found '1:xx'"),
    (GOOD.replace("|1", "|one"),
     "expected a whole number (or one scaled by K, M, G: 2K) in column NNodes, found 'one'"),
    ("5x" + GOOD[1:], "expected a job id in column JobIDRaw (123, 123_4, 123+1, or "
     "123.batch for a step), found '5x'"),
    (GOOD + "|extra", "expected 6 '|'-separated fields as in the header, found 7"),
])
def test_a_bad_line_names_file_line_and_column(tmp_path, bad, why):
    assert _error(tmp_path, HEADER, GOOD.replace("5|", "4|", 1), bad) == f"sacct.txt:3: {why}"


def test_missing_columns_and_missing_header(tmp_path):
    assert _error(tmp_path, "JobIDRaw|Submit|Start|End|NNodes", GOOD) == (
        "sacct.txt:1: expected a column Timelimit or TimelimitRaw in the header (a job id, "
        "Submit, Start, End or Elapsed, Timelimit and NNodes or NCPUS), found none")
    assert _error(tmp_path, GOOD, GOOD).startswith(
        "sacct.txt:1: expected a header line of column names (sacct --parsable2 prints one "
        "unless --noheader), found '5|2026-11-28T14:00:00|")
    assert _error(tmp_path, "", "  ") == ("sacct.txt: expected sacct --parsable2 output "
                                          "with its header line, found an empty file")


def test_lenient_skips_and_counts(tmp_path):
    path = tmp_path / "sacct.txt"
    path.write_text("\n".join([HEADER, GOOD, GOOD.replace("5|", "6|").replace("|1", "|x"),
                               GOOD.replace("5|", "7|")]) + "\n")
    done = import_log("slurm", str(path), lenient=True)
    assert sorted(rows(done.trace)) == [5, 7] and done.counts.malformed == 1
    assert "1 malformed lines (--lenient)" in done.counts.line(2, str(path))


def test_parsable_with_trailing_bar_and_crlf(tmp_path):
    path = tmp_path / "sacct.txt"
    path.write_bytes((HEADER + "|\r\n" + GOOD + "|\r\n").encode())
    assert sorted(rows(import_log("slurm", str(path)).trace)) == [5]


def test_unix_seconds_as_sacct_writes_them_under_slurm_time_format(tmp_path):
    """SLURM_TIME_FORMAT=%s: times are Unix seconds, the same instants as the ISO ones
    read in UTC."""
    iso = tmp_path / "iso.txt"
    iso.write_text(HEADER + "\n" + GOOD + "\n")
    unix = tmp_path / "unix.txt"
    unix.write_text(HEADER + "\n5|1795874400|1795874401|1795874411|00:01:00|1\n")
    a = import_log("slurm", str(iso)).trace
    b = import_log("slurm", str(unix)).trace
    assert a.header.unix_start_time == b.header.unix_start_time == 1795874400
    for name in ("submit", "wait", "runtime"):
        assert list(a.columns[name]) == list(b.columns[name])


def test_a_log_with_no_finished_job_is_one_sentence(tmp_path):
    msg = _error(tmp_path, HEADER, GOOD.replace("2026-11-28T14:00:11", "Unknown"))
    assert msg == ("sacct.txt: expected at least one finished job, found none (0 jobs of "
                   "sacct.txt; not imported: 1 not finished when the log was written (no "
                   "end time))")


def test_a_requeued_job_listed_twice_keeps_its_last_record(tmp_path):
    path = tmp_path / "sacct.txt"
    path.write_text("\n".join([HEADER, GOOD, GOOD.replace("14:00:11", "14:00:31")]) + "\n")
    done = import_log("slurm", str(path))
    assert rows(done.trace)[5]["runtime"] == 30
    assert sum(done.counts.dropped.values()) == 1


# ------------------------------------------------------------------------- value parsers

@pytest.mark.parametrize("text, seconds", [
    ("1-02:03:04", 93784), ("02:03:04", 7384), ("03:04", 184), ("5", 300), ("2-0", 172800),
    ("2-3:30", 185400), ("0:0:0", 0), ("100-00:00:00", 8640000),
])
def test_slurm_durations(text, seconds):
    assert f.slurm_limit(text) == seconds


@pytest.mark.parametrize("text, seconds", [
    ("UNLIMITED", f.UNLIMITED), ("Partition_Limit", f.PARTITION_LIMIT), ("60", 3600),
    ("4294967295", f.UNLIMITED), ("4294967294", f.PARTITION_LIMIT),
])
def test_limits_in_minutes(text, seconds):
    assert f.slurm_limit_minutes(text) == seconds


@pytest.mark.parametrize("text", ["", "1:2:3:4", "-5", "1.5", "x", "1--2"])
def test_bad_durations(text):
    with pytest.raises(FieldError):
        f.slurm_limit(text)


def test_counts_with_units():
    assert [f.count(t) for t in ("16", "2K", "1.50K", "0")] == [16, 2048, 1536, 0]


def test_times_and_zones():
    assert f.iso_time("2026-11-28T14:00:00", dt.UTC) == T0
    assert f.iso_time("2026-11-28T15:00:00", f.zone("Europe/Madrid")) == T0
    assert f.pbs_stamp("11/28/2026 14:00:00", dt.UTC) == T0
    for bad in ("2026-02-30T00:00:00", "2026-11-28T24:00:00", "2026-11-28 14:00:00",
                "2026-11-28T14:60:00"):
        with pytest.raises(FieldError):
            f.iso_time(bad, dt.UTC)
    with pytest.raises(FieldError, match="expected a time zone name"):
        f.zone("Mars/Olympus")


@pytest.mark.parametrize("line, deps, exclusive", [
    ("sbatch --exclusive --dependency=afterok:10 --wrap 'sleep 5'", [("afterok", "10")], 1),
    ("sbatch -d afterany:3:4,afternotok:5 -s job.sh",
     [("afterany", "3"), ("afterany", "4"), ("afternotok", "5")], 0),
    ("sbatch -dafterok:7_2 --exclus x", [("afterok", "7_2")], 1),
    ("sbatch --depend singleton", [("singleton", "")], None),
    ("sbatch --dependency after:5+10?afterok:6", [("after", "5"), ("afterok", "6")], None),
    ("sbatch --wrap 'x --dependency=afterok:1 --exclusive'", [], None),
    ("sbatch --exclusive=user job.sh", [], None),
    ("srun --oversubscribe -n2 ./a.out", [], 0),
    ('sbatch --wrap "unbalanced -d afterok:3', [], None),
])
def test_submit_lines(line, deps, exclusive):
    got = submit_options(line)
    assert (got.dependencies, got.exclusive) == (deps, exclusive)


def test_an_unreadable_dependency_is_counted(tmp_path):
    path = tmp_path / "sacct.txt"
    path.write_text(HEADER + "|SubmitLine\n" + GOOD + "|sbatch --dependency=bogus:1 x\n")
    done = import_log("slurm", str(path))
    assert done.counts.changed == {"with a --dependency that could not be read (ignored)": 1}
    assert rows(done.trace)[5]["prev_job"] == -1


def test_imported_trace_normalizes_with_node_counts_and_cancellations(odd):
    norm = normalize(odd.trace)
    cols = {int(j): i for i, j in enumerate(norm.columns["job_id"])}
    assert norm.columns["nodes"][cols[10]] == 2  # field 34, not 2 CPUs / 32 per node
    assert norm.columns["runtime"][cols[13]] == 1  # runtime 0, cancelled: runs 1 s
    assert norm.zero_runtime_cancelled == 1
    assert sum(norm.dropped.values()) == 0


def test_exclusive_is_unknown_where_the_job_got_whole_nodes_unasked(tmp_path):
    """`#SBATCH --exclusive` in a script is not on the SubmitLine: a job that got more CPUs
    than it asked for may have asked there (or its partition gave whole nodes)."""
    path = tmp_path / "sacct.txt"
    path.write_text("\n".join([
        HEADER + "|NCPUS|ReqCPUS|SubmitLine",
        GOOD + "|4|1|sbatch job.sh",  # whole node, not asked on the command line
        GOOD.replace("5|", "6|", 1) + "|2|2|sbatch -n 2 job.sh",
        GOOD.replace("5|", "7|", 1) + "|4|1|sbatch --exclusive job.sh",
        GOOD.replace("5|", "8|", 1) + "|4|1|sbatch --exclusive=user job.sh",
        GOOD.replace("5|", "9|", 1) + "|4|1|"]) + "\n")
    r = rows(import_log("slurm", str(path)).trace)
    assert [r[j]["exclusive"] for j in (5, 6, 7, 8, 9)] == [-1, 0, 1, -1, -1]
