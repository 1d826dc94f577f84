"""The real traces in /work/shared/traces: they read cleanly and normalise as the README says."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_traces_helpers import assert_same_trace

from schedd.traces import normalize, read_trace, write_trace

TRACES = Path("/work/shared/traces")
ALL = [
    "lublin_256",
    "KTH-SP2-1996-2",
    "theta_2023",
    "mira_2018_wk1_cobalt2swf",
    "mira_2014-12_wk1_cobalt2swf",
]
WITH_EXPECTED = ALL[:4]
JOBS = {  # job lines per file, from the README table
    "lublin_256": 10_000,
    "KTH-SP2-1996-2": 28_489,
    "theta_2023": 8_401,
    "mira_2018_wk1_cobalt2swf": 2_147,
    "mira_2014-12_wk1_cobalt2swf": 943,
}
MAX_NODES = {
    "lublin_256": 256,
    "KTH-SP2-1996-2": 100,
    "theta_2023": 4360,
    "mira_2018_wk1_cobalt2swf": 49152,
    "mira_2014-12_wk1_cobalt2swf": 49152,
}

pytestmark = pytest.mark.skipif(
    not TRACES.is_dir(), reason="the shared traces (/work/shared/traces) are not on this machine"
)


@pytest.mark.parametrize("name", ALL)
def test_reads_without_error(name):
    trace = read_trace(TRACES / f"{name}.swf")
    assert len(trace) == JOBS[name]
    assert trace.skipped == 0 and trace.eccs == []
    assert trace.header.max_nodes == MAX_NODES[name]
    assert (trace.columns["job_class"] == "B").all()


@pytest.mark.parametrize("name", WITH_EXPECTED)
def test_kept_jobs_match_expected_waits(name):
    expected = np.loadtxt(TRACES / "expected" / f"{name}.easy.waits", usecols=0, dtype=np.int64)
    nt = normalize(read_trace(TRACES / f"{name}.swf"))
    assert nt.max_nodes == MAX_NODES[name]  # from the header
    assert len(nt) == len(expected)
    assert sum(nt.dropped.values()) == JOBS[name] - len(expected)
    assert np.array_equal(nt.columns["job_id"], expected)  # same jobs, same queue order


def test_header_details():
    kth = read_trace(TRACES / "KTH-SP2-1996-2.swf").header
    assert (kth.max_procs, kth.unix_start_time) == (100, 843480031)
    assert kth.lines[0] == "; Version: 2.2" and kth.lines[-1] == ";"
    theta = read_trace(TRACES / "theta_2023.swf").header  # CRLF line ends
    assert theta.lines == ["; UnixStartTime: 0 ", "; MaxNodes: 4360", "; MaxProcs: 4360"]
    mira = read_trace(TRACES / "mira_2018_wk1_cobalt2swf.swf").header
    assert mira.lines[-1].startswith("; Queues: 1=backfill 2=prod-capability")  # after the jobs


def test_known_drops():
    kth = normalize(read_trace(TRACES / "KTH-SP2-1996-2.swf"))
    assert kth.dropped == {"runtime<=0": 8, "nodes<1": 0, "nodes>max": 0, "submit<0": 0,
                           "duplicate id": 0,
                           "malformed": 0}
    theta = normalize(read_trace(TRACES / "theta_2023.swf"))
    assert theta.dropped == {"runtime<=0": 0, "nodes<1": 0, "nodes>max": 8, "submit<0": 0,
                             "duplicate id": 0,
                             "malformed": 0}


@pytest.mark.parametrize("name", ALL)
def test_round_trip(tmp_path, name):
    first = read_trace(TRACES / f"{name}.swf")
    write_trace(tmp_path / f"{name}.swf.gz", first)
    assert_same_trace(read_trace(tmp_path / f"{name}.swf.gz"), first)
