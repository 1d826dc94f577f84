"""`schedd import jobcomp` and `schedd import pbs`, and the three formats on the logs of a
real Slurm 22.05 (tests/data/import/real/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedd.slurm.importers import import_log
from schedd.slurm.importers.fields import LogError
from schedd.traces import normalize

DATA = Path(__file__).resolve().parent / "data" / "import"
REAL = DATA / "real"


def rows(trace) -> dict[int, dict[str, float]]:
    cols = trace.columns
    return {int(j): {name: cols[name][i].item() for name in cols}
            for i, j in enumerate(cols["job_id"])}


def named(trace, kind: str, number: float) -> str:
    return trace.header.names[kind][int(number)]


# ------------------------------------------------------------------------------ jobcomp

def test_jobcomp_hand_made():
    done = import_log("jobcomp", str(DATA / "jobcomp_handmade.log"))
    r, t = rows(done.trace), done.trace
    assert sorted(r) == [100, 101, 102, 104, 105]
    assert (r[100]["procs"], r[100]["req_nodes"], r[100]["req_procs"]) == (64, 2, 64)
    assert named(t, "user", r[101]["user"]) == "bob"
    assert named(t, "qos", r[101]["qos"]) == "high"
    assert r[101]["runtime"] == 63 and r[101]["req_time"] == 60  # TIMEOUT past its limit
    # cancelled before it started, UNLIMITED: runtime 0, held until its EndTime; its size
    # is what it asked for (Tres), not the 0 nodes it got
    assert (r[102]["runtime"], r[102]["cancel_time"], r[102]["wait"]) == (0, 1800, -1)
    assert (r[102]["req_nodes"], r[102]["req_procs"], r[102]["eligible"]) == (1, 8, -1)
    assert r[104]["req_time"] == -1  # NO_VAL: the partition's limit, unknown here
    assert named(t, "user", r[105]["user"]) == "4242"  # no name looked up
    assert r[105]["status"] == 5 and r[105]["cancel_time"] == 420
    assert named(t, "account", r[105]["group"]) == "chem"


@pytest.mark.parametrize("line, why", [
    ("UserId=a(1) JobId=1", "expected a line of Key=value fields starting with JobId=, found "
     "'UserId=a(1) JobId=1'"),
    ("JobId=1 UserId=a(1) JobState=COMPLETED", "expected the field TimeLimit= on every line, "
     "found none"),
])
def test_jobcomp_bad_lines(tmp_path, line, why):
    path = tmp_path / "jobcomp.log"
    path.write_text((DATA / "jobcomp_handmade.log").read_text() + line + "\n")
    with pytest.raises(LogError) as info:
        import_log("jobcomp", str(path))
    assert str(info.value) == f"{path}:6: {why}"
    done = import_log("jobcomp", str(path), lenient=True)
    assert done.counts.malformed == 1 and len(done.trace) == 5


def test_jobcomp_bad_time_names_its_field(tmp_path):
    text = (DATA / "jobcomp_handmade.log").read_text().replace(
        "StartTime=2026-11-28T14:00:05", "StartTime=2026-11-28T25:00:05")
    path = tmp_path / "jobcomp.log"
    path.write_text(text)
    with pytest.raises(LogError, match=r"jobcomp\.log:1: expected a time in field StartTime "
                       r"\(YYYY-MM-DDTHH:MM:SS or Unknown\), found '2026-11-28T25:00:05'"):
        import_log("jobcomp", str(path))


# ------------------------------------------------------------------------------ PBS

def test_pbs_torque():
    done = import_log("pbs", str(DATA / "pbs_torque.log"))
    r, t = rows(done.trace), done.trace
    assert sorted(r) == [18, 19, 20, 22, 23, 24, 28, 29]
    assert (r[18]["procs"], r[18]["req_procs"], r[18]["req_nodes"]) == (16, 16, 2)
    assert r[18]["req_time"] == 3600 and r[18]["runtime"] == 600
    assert named(t, "queue", r[19]["queue"]) == "long"
    assert named(t, "account", r[19]["group"]) == "chem"  # group: no account= in the log
    assert r[19]["eligible"] == 100 and r[19]["wait"] == 110
    state = {j: named(t, "state", r[j]["state"]) for j in r}
    assert state == {18: "COMPLETED", 19: "TIMEOUT", 20: "CANCELLED", 22: "CANCELLED",
                     23: "KILLED", 24: "FAILED", 28: "COMPLETED", 29: "COMPLETED"}
    # deleted while queued: held for its walltime, cancelled at the D record
    assert (r[20]["runtime"], r[20]["cancel_time"], r[20]["wait"]) == (7200, 240, -1)
    # deleted while running: ran 200 s; cancelled at the D record's time (14:07:00)
    assert (r[22]["runtime"], r[22]["cancel_time"]) == (200, 420)
    assert r[22]["req_nodes"] == 1  # nodes=n004: one named host
    assert done.counts.dropped == {
        "E records of job arrays as a whole (123[]); their subjobs are jobs": 1,
        "that never started and were not cancelled": 1,
        "jobs deleted with no E record (never ran)": 1,
    }
    assert done.counts.other_records == {"A records (not job ends)": 1,
                                         "D records (not job ends)": 3,
                                         "Q records (not job ends)": 3,
                                         "S records (not job ends)": 1}
    assert done.counts.changed["array subjobs (123[4]: numbered from 28)"] == 2


def test_pbs_pro():
    done = import_log("pbs", str(DATA / "pbs_pro.log"))
    r, t = rows(done.trace), done.trace
    assert (r[1234]["procs"], r[1234]["req_procs"], r[1234]["req_nodes"]) == (16, 16, 2)
    assert named(t, "state", r[1234]["state"]) == "TIMEOUT"  # -29: JOB_EXEC_KILL_WALLTIME
    assert named(t, "account", r[1235]["group"]) == "proj y"  # quoted, account= given
    assert r[1235]["eligible"] == 200 and r[1235]["wait"] == 200


@pytest.mark.parametrize("line, why", [
    ("11/28/2026 14:20:00 E 30.m user=x", "expected a record MM/DD/YYYY HH:MM:SS;TYPE;JOBID;"
     "MESSAGE, found '11/28/2026 14:20:00 E 30.m user=x'"),
    ("11/28/2026 14:20:00;E;x.m;user=x", "expected a job id (123.server, 123[4].server) in "
     "the third field, found 'x.m'"),
    ("11/28/2026 14:20:00;E;30.m;user=x ctime=12:00", "expected a Unix time in ctime=, found "
     "'12:00'"),
    ("11/28/2026 14:20:00;E;30.m;user=x ctime=1795874400 Resource_List.walltime=1h",
     "expected a duration [[HH:]MM:]SS in Resource_List.walltime=, found '1h'"),
    ("11/28/2026 14:20:00;E;30.m;user=x", "expected a submit time ctime= (or qtime=) in this "
     "E record, found none"),
    ("13/28/2026 14:20:00;D;30.m;requestor=x", "expected a record time MM/DD/YYYY HH:MM:SS "
     "on a real date, found '13/28/2026 14:20:00'"),
])
def test_pbs_bad_records(tmp_path, line, why):
    path = tmp_path / "acct"
    path.write_text((DATA / "pbs_pro.log").read_text() + line + "\n")
    with pytest.raises(LogError) as info:
        import_log("pbs", str(path))
    assert str(info.value) == f"{path}:5: {why}"


# ------------------------------------------------------------------------------ a real Slurm

@pytest.fixture(scope="module")
def real():
    return {name: import_log(kind, str(REAL / name)) for kind, name in (
        ("slurm", "sacct_steps.txt"), ("slurm", "sacct_alloc.txt"), ("jobcomp", "jobcomp.log"))}


def test_real_sacct_with_and_without_steps_give_the_same_trace(real):
    steps, alloc = real["sacct_steps.txt"], real["sacct_alloc.txt"]
    assert steps.counts.dropped == {"job steps (123.batch, 123.extern, 123.0, ...)": 12}
    assert not alloc.counts.dropped
    for name, col in alloc.trace.columns.items():
        assert col.tolist() == steps.trace.columns[name].tolist(), name
    assert alloc.trace.header.names == steps.trace.header.names


def test_real_sacct_jobs(real):
    done = real["sacct_alloc.txt"]
    r, t = rows(done.trace), done.trace
    assert sorted(r) == [1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12]  # 2_3, 2_1, 2_2 are 2, 3, 4
    # job 6: cancelled while pending; sacct gives Start = End and NodeList "None assigned"
    assert (r[6]["runtime"], r[6]["wait"], r[6]["cancel_time"]) == (60, -1, 13)
    assert (r[12]["runtime"], r[12]["cancel_time"], r[12]["exclusive"]) == (5, 45, 0)
    assert (r[10]["runtime"], r[10]["req_time"]) == (79, 60)  # TIMEOUT, killed late
    assert (r[9]["prev_job"], r[9]["dep_kind"]) == (4, 1)  # afterok:2_2 -> JobIDRaw 4
    assert (r[7]["prev_job"], r[7]["dep_kind"], r[7]["eligible"]) == (5, 2, 34)
    assert r[7]["req_time"] == 365 * 86400  # no -t under MaxTime=INFINITE: 365-00:00:00
    assert (r[1]["exclusive"], r[1]["procs"], r[1]["req_procs"]) == (1, 4, 1)
    assert (r[5]["req_nodes"], r[5]["started_by"], r[1]["started_by"]) == (4, 2, 3)
    assert named(t, "state", r[11]["state"]) == "FAILED"


def test_real_jobcomp_agrees_with_sacct_on_every_job_both_list(real):
    sacct, comp = rows(real["sacct_alloc.txt"].trace), rows(real["jobcomp.log"].trace)
    assert set(comp) - set(sacct) == {8}  # never eligible: sacct -S/-E does not list it
    same = ("submit", "wait", "runtime", "procs", "req_procs", "req_time", "req_nodes",
            "cancel_time", "eligible")
    for job in sacct:
        assert {k: comp[job][k] for k in same} == {k: sacct[job][k] for k in same}, job
    assert comp[8]["runtime"] == 300 and comp[8]["cancel_time"] == 50  # debug's 5 min


@pytest.mark.parametrize("name", ["sacct_alloc.txt", "jobcomp.log"])
def test_real_logs_normalize_dropping_only_what_ran_no_time(real, name):
    norm = normalize(real[name].trace)
    # job 11 (exit 3) started and ended in the same second: the rule runtime <= 0 holds
    assert {k: n for k, n in norm.dropped.items() if n} == {"runtime<=0": 1}
    assert 11 not in norm.columns["job_id"].tolist()
    assert norm.max_nodes == 4
