"""A run of an imported trace carries its names through: jobs.csv gains the user,
account, partition, QOS and original state by name and the eligible time; jobs.swf keeps
fields 16, 17 and 32-40 and the names header. A run of any other trace writes the files it
always wrote (bench/identical.py checks the bytes on the test traces)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from schedd.cli import main
from schedd.imported_columns import CSV_COLUMNS
from schedd.slurm.importers import import_log
from schedd.traces import read_trace, write_trace

DATA = Path(__file__).resolve().parent / "data" / "import"


def simulate(trace: Path, out: Path) -> None:
    assert main(["simulate", "--trace", str(trace), "--out", str(out), "--no-progress",
                 "--quiet"]) == 0


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_names_reach_jobs_csv_and_jobs_swf(tmp_path):
    done = import_log("slurm", str(DATA / "sacct_oddities.txt"))
    trace = done.trace
    trace.header.names["account"][2] = 'chem, "lab"'  # a name that needs CSV quoting
    write_trace(tmp_path / "t.swf", trace)
    simulate(tmp_path / "t.swf", tmp_path / "out")
    rows = {r["id"]: r for r in read_csv(tmp_path / "out" / "jobs.csv")}
    header = next(iter(rows.values()))
    assert list(header)[-8:] == ["class", "state", *CSV_COLUMNS]
    assert {k: rows["11"][k] for k in CSV_COLUMNS} == {
        "user_name": "bob", "account": 'chem, "lab"', "partition": "batch",
        "qos": "high=prio", "orig_state": "TIMEOUT", "eligible": "605"}
    assert rows["13"]["orig_state"] == "CANCELLED" and rows["13"]["eligible"] == "150"
    back = read_trace(tmp_path / "out" / "jobs.swf")
    assert back.header.names == trace.header.names
    ids = trace.columns["job_id"].tolist()
    for name in ("partition", "prev_job", "eligible", "cancel_time", "req_nodes",
                 "exclusive", "qos", "dep_kind", "priority", "state", "started_by"):
        got = dict(zip(back.columns["job_id"].tolist(), back.columns[name].tolist(),
                       strict=True))
        want = dict(zip(ids, trace.columns[name].tolist(), strict=True))
        assert got == want, name


def test_a_number_without_a_name_and_an_absent_one(tmp_path):
    done = import_log("slurm", str(DATA / "sacct_subset.txt"))
    trace = done.trace
    trace.columns["user"] = np.array([7, -1], dtype=np.int64)  # no user names at all
    write_trace(tmp_path / "t.swf", trace)
    simulate(tmp_path / "t.swf", tmp_path / "out")
    rows = read_csv(tmp_path / "out" / "jobs.csv")
    assert [(r["user_name"], r["account"], r["orig_state"]) for r in rows] == [
        ("7", "", "COMPLETED"), ("", "", "COMPLETED")]


def test_other_traces_keep_their_columns(tmp_path):
    simulate(Path(__file__).resolve().parents[1] / "schedd" / "data" /
             "sample-lublin256-1000.swf", tmp_path / "out")
    first = (tmp_path / "out" / "jobs.csv").read_text().splitlines()[0]
    assert first.endswith(",class,state")
    swf = (tmp_path / "out" / "jobs.swf").read_text().splitlines()
    assert all(len(line.split()) == 18 for line in swf if not line.startswith(";"))
    assert not any("schedd-names" in line for line in swf)
