"""ListJobs with a page token no daemon gives (beyond every job id, or above SQLite's
largest integer) is INVALID_ARGUMENT with a sentence, not INTERNAL (issue 34)."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from daemon_proc import DaemonProc

from schedd.v1 import scheduler_pb2 as pb


def test_page_tokens_beyond_every_job_id_are_invalid_argument(tmp_path: Path) -> None:
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:4", "--state-db",
                    str(tmp_path / "j.sqlite")) as d:
        s = d.stub()
        s.SubmitJob(pb.SubmitJobRequest(job_id=1, nodes=1, walltime=10, runtime=5),
                    timeout=10)
        s.AdvanceClock(pb.AdvanceClockRequest(to=20), timeout=10)  # one in the store
        for token in (str(2**63), str(2**64), "-1", str(2**53 + 1), "9" * 20):
            with pytest.raises(grpc.RpcError) as err:
                s.ListJobs(pb.ListJobsRequest(page_token=token), timeout=10)
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (token, err.value)
            assert "page_token" in err.value.details()
        # The largest job id is a token like any other.
        page = s.ListJobs(pb.ListJobsRequest(page_token=str(2**53)), timeout=10)
        assert list(page.jobs) == [] and page.total == 1
        assert [j.job_id for j in s.ListJobs(pb.ListJobsRequest(page_token="0"),
                                             timeout=10).jobs] == [1]
