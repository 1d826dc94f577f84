"""The hybrid policy in a real `schedd serve` (lockstep clock, gRPC on loopback): an advance
notice over gRPC earmarks nodes (CUA), an on-demand arrival shrinks a malleable job (SPAA),
and the completion of the on-demand job grows the malleable job back."""

from __future__ import annotations

import grpc
import pytest
from daemon_proc import DaemonProc

from schedd.v1 import scheduler_pb2 as pb
from schedd.v1 import scheduler_pb2_grpc

TIMEOUT = 10.0


def _now(stub) -> float:
    return stub.GetClock(pb.GetClockRequest(), timeout=TIMEOUT).now


def _advance(stub, by: float) -> None:
    stub.AdvanceClock(pb.AdvanceClockRequest(by=by), timeout=TIMEOUT)


def _job(stub, job_id: int) -> pb.Job:
    return stub.GetJob(pb.GetJobRequest(job_id=job_id), timeout=TIMEOUT)


@pytest.fixture(scope="module")
def stub():
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:64", "--policy", "hybrid",
                    "--opt", "notice=cua", "--opt", "arrival=spaa") as d, d.channel() as ch:
        yield scheduler_pb2_grpc.SchedulerStub(ch)


def test_notice_earmarks_then_arrival_shrinks_then_completion_expands(stub) -> None:
    # A batch job on 16 nodes ends at t0+100; a malleable job holds the other 48.
    stub.SubmitJob(pb.SubmitJobRequest(job_id=1, nodes=16, walltime=100), timeout=TIMEOUT)
    stub.SubmitJob(pb.SubmitJobRequest(job_id=2, nodes=48, min_nodes=12, walltime=10_000,
                                       job_class=pb.JOB_CLASS_MALLEABLE), timeout=TIMEOUT)
    _advance(stub, 1)
    t0 = _now(stub)
    assert _job(stub, 2).alloc_nodes == 48
    # Notice: 40 nodes expected at t0+600. CUA collects the 16 nodes job 1 releases.
    stub.AdvanceNotice(pb.AdvanceNoticeRequest(job_id=3, expected_arrival=t0 + 600,
                                               nodes=40, walltime=300), timeout=TIMEOUT)
    _advance(stub, 200)
    assert _job(stub, 1).state == pb.JOB_STATE_COMPLETED
    # A batch job that would fit in the freed nodes stays queued: they are earmarked.
    stub.SubmitJob(pb.SubmitJobRequest(job_id=4, nodes=16, walltime=5_000), timeout=TIMEOUT)
    _advance(stub, 1)
    assert _job(stub, 4).state == pb.JOB_STATE_QUEUED
    # The on-demand job arrives: 16 earmarked nodes + 24 from shrinking job 2 to 24.
    _advance(stub, t0 + 600 - _now(stub))
    stub.SubmitJob(pb.SubmitJobRequest(job_id=3, nodes=40, walltime=300, runtime=300,
                                       job_class=pb.JOB_CLASS_ON_DEMAND), timeout=TIMEOUT)
    _advance(stub, 1)
    od = _job(stub, 3)
    assert od.state == pb.JOB_STATE_RUNNING and od.first_start == od.submit_time
    assert _job(stub, 2).alloc_nodes == 24
    # The on-demand job ends: 24 of its nodes go back to job 2 first, job 4 gets the rest.
    _advance(stub, 400)
    assert _job(stub, 3).state == pb.JOB_STATE_COMPLETED
    assert _job(stub, 2).alloc_nodes == 48
    assert _job(stub, 4).state == pb.JOB_STATE_RUNNING


def test_notice_for_an_arrived_on_demand_job_is_refused(stub) -> None:
    stub.SubmitJob(pb.SubmitJobRequest(job_id=10, nodes=1, walltime=100,
                                       job_class=pb.JOB_CLASS_ON_DEMAND), timeout=TIMEOUT)
    with pytest.raises(grpc.RpcError) as err:
        stub.AdvanceNotice(pb.AdvanceNoticeRequest(job_id=10, expected_arrival=_now(stub) + 60,
                                                   nodes=1, walltime=100), timeout=TIMEOUT)
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
