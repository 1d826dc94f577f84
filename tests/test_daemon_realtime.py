"""The `wcjs` real-time policy in a real `schedd serve` (lockstep clock, gRPC on loopback),
with JIT checkpoints (real-time paper §6, Table 1).

Two 512-node batch jobs fill `bgq:2` (midplanes M00 and M01); a 512-node real-time job
(RTJ) with a 600 s walltime arrives at S. Its narrow-short threshold 1.1 is crossed at
S + 0.1 x 600 = S + 60: it becomes high priority and, the machine being full, preempts
the batch job whose partition costs least (nodes x W_done x W_ckpt x W_sd). Both batch
jobs are alike except their age: the one on M00 has computed an hour without a checkpoint
(W_ckpt = 1 + ln(3660 / 900) ~ 2.4), the one on M01 a minute (W_ckpt = 1), so the victim
is the M01 job — although ties would go to M00, the first partition by name. With
`--agents external` the victim writes its checkpoint until its agent says `CheckpointDone`,
however long that takes, and the RTJ starts only then; with the virtual agents, after the
modelled write time of a 512-node checkpoint, 16 GB x 512 / (4 GB/s x 512 / 128) = 512 s.
"""

from __future__ import annotations

import json
import subprocess
import sys

import grpc
import pytest
from daemon_proc import DaemonProc, read_events, repo_root

from schedd.v1 import scheduler_pb2 as pb
from schedd.v1 import scheduler_pb2_grpc

TIMEOUT = 10.0
OLD, YOUNG, RTJ = 1, 2, 3  # job ids: batch on M00 (an hour old), batch on M01, the RTJ
BATCH_WALLTIME = 36_000.0
RTJ_WALLTIME, RTJ_RUNTIME = 600.0, 300.0
CROSSING = 60.0  # (1.1 - 1) x 600 s after the RTJ's submission
CKPT_S = 512.0  # modelled JIT checkpoint write (and restart read) of a 512-node job
SERVE = ("--clock", "lockstep", "--cluster", "bgq:2", "--policy", "wcjs", "--opt", "ckpt=jit")


def _now(stub) -> float:
    return stub.GetClock(pb.GetClockRequest(), timeout=TIMEOUT).now


def _advance_to(stub, t: float) -> None:
    stub.AdvanceClock(pb.AdvanceClockRequest(to=t), timeout=TIMEOUT)


def _job(stub, job_id: int) -> pb.Job:
    return stub.GetJob(pb.GetJobRequest(job_id=job_id), timeout=TIMEOUT)


def _states(stub) -> tuple[int, ...]:
    """States of the old batch job, the young one and the RTJ."""
    return tuple(_job(stub, j).state for j in (OLD, YOUNG, RTJ))


def _events(stub, job_id: int, n: int) -> list[pb.Event]:
    """The first n events of a job (the ring keeps them all here)."""
    return read_events(stub, pb.WatchEventsRequest(from_seq=1, job_id=job_id), n,
                       timeout=TIMEOUT)


def _fill_and_submit_rtj(stub) -> float:
    """The old batch job at 0, the young one and the RTJ an hour later; returns S."""
    stub.SubmitJob(pb.SubmitJobRequest(job_id=OLD, nodes=512, walltime=BATCH_WALLTIME,
                                       runtime=BATCH_WALLTIME), timeout=TIMEOUT)
    _advance_to(stub, 3600.0)
    stub.SubmitJob(pb.SubmitJobRequest(job_id=YOUNG, nodes=512, walltime=BATCH_WALLTIME,
                                       runtime=BATCH_WALLTIME), timeout=TIMEOUT)
    s = stub.SubmitJob(pb.SubmitJobRequest(job_id=RTJ, nodes=512, walltime=RTJ_WALLTIME,
                                           runtime=RTJ_RUNTIME,
                                           job_class=pb.JOB_CLASS_REALTIME),
                       timeout=TIMEOUT).submit_time
    assert s == 3600.0
    _advance_to(stub, s + 1)
    old, young, rtj = (_job(stub, j) for j in (OLD, YOUNG, RTJ))
    assert (old.state, old.block) == (pb.JOB_STATE_RUNNING, "M00")
    assert (young.state, young.block) == (pb.JOB_STATE_RUNNING, "M01")
    assert rtj.state == pb.JOB_STATE_QUEUED and rtj.job_class == pb.JOB_CLASS_REALTIME
    # Low priority until the crossing: nothing is preempted a second before it.
    _advance_to(stub, s + CROSSING - 1)
    assert _states(stub) == (pb.JOB_STATE_RUNNING, pb.JOB_STATE_RUNNING, pb.JOB_STATE_QUEUED)
    return s


@pytest.fixture(scope="module")
def external():
    # A checkpoint timeout well past the waits below: the victim is never killed here.
    with DaemonProc(*SERVE, "--agents", "external", "--checkpoint-timeout", "3600") as d, \
            d.channel() as ch:
        yield scheduler_pb2_grpc.SchedulerStub(ch)


def test_rtj_starts_only_after_the_victims_checkpoint_done(external) -> None:
    stub = external
    info = stub.GetCluster(pb.GetClusterRequest(), timeout=TIMEOUT)
    options = json.loads(info.engine_options)
    # --ckpt resolved from the scheme: JIT needs no periodic checkpoints.
    assert options["checkpoint"]["periodic"] == "none"
    assert options["auto_checkpoint_done"] is False
    s = _fill_and_submit_rtj(stub)

    # Past the crossing: the young job (the cheaper partition) checkpoints; the RTJ waits.
    _advance_to(stub, s + CROSSING + 1)
    assert _states(stub) == (pb.JOB_STATE_RUNNING, pb.JOB_STATE_CHECKPOINTING,
                             pb.JOB_STATE_QUEUED)
    young = _job(stub, YOUNG)
    assert young.block == "M01" and young.alloc_nodes == 512 and young.preemptions == 1
    checkpointing = _events(stub, YOUNG, 4)[-1]
    assert (checkpointing.kind, checkpointing.cause, checkpointing.time) == (
        "checkpointing", "preempt:jit", s + CROSSING)

    # Long past the modelled write time, nobody has answered: still waiting, nodes held.
    _advance_to(stub, s + CROSSING + CKPT_S + 200)
    assert _states(stub) == (pb.JOB_STATE_RUNNING, pb.JOB_STATE_CHECKPOINTING,
                             pb.JOB_STATE_QUEUED)
    assert _job(stub, YOUNG).alloc_nodes == 512
    assert not _job(stub, RTJ).HasField("first_start")  # not started: the field is absent

    # Only the victim may report: the other batch job was not asked to checkpoint.
    with pytest.raises(grpc.RpcError) as err:
        stub.CheckpointDone(pb.CheckpointDoneRequest(job_id=OLD), timeout=TIMEOUT)
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION

    # The victim's agent answers: it is requeued, the RTJ starts on its partition at once.
    done = _now(stub)
    stub.CheckpointDone(pb.CheckpointDoneRequest(job_id=YOUNG, request_id="ckpt-2"),
                        timeout=TIMEOUT)
    _advance_to(stub, done + 1)
    rtj, young = _job(stub, RTJ), _job(stub, YOUNG)
    assert rtj.state == pb.JOB_STATE_RUNNING and rtj.first_start == done
    assert rtj.block == "M01" and rtj.wait == done - s
    assert young.state == pb.JOB_STATE_PREEMPTED and young.alloc_nodes == 0
    assert _job(stub, OLD).state == pb.JOB_STATE_RUNNING
    preempted = _events(stub, YOUNG, 5)[-1]
    assert (preempted.kind, preempted.cause, preempted.time) == (
        "preempted", "checkpoint-done", done)

    # The RTJ ends after its 300 s; the victim resumes from its checkpoint: it reads it
    # back (512 s) and has 36,000 - 60 s of its walltime left (no work lost).
    _advance_to(stub, done + RTJ_RUNTIME + 1)
    rtj, young = _job(stub, RTJ), _job(stub, YOUNG)
    assert rtj.state == pb.JOB_STATE_COMPLETED and rtj.end_time == done + RTJ_RUNTIME
    assert young.state == pb.JOB_STATE_RUNNING and young.block == "M01"
    assert young.first_start == s and young.last_start == done + RTJ_RUNTIME
    assert young.preemptions == 1
    assert young.predicted_end == young.last_start + CKPT_S + BATCH_WALLTIME - CROSSING
    assert _job(stub, OLD).preemptions == 0


def test_virtual_agents_answer_after_the_modelled_write_time() -> None:
    with DaemonProc(*SERVE) as d, d.channel() as ch:
        stub = scheduler_pb2_grpc.SchedulerStub(ch)
        assert json.loads(stub.GetCluster(pb.GetClusterRequest(), timeout=TIMEOUT)
                          .engine_options)["auto_checkpoint_done"] is True
        s = _fill_and_submit_rtj(stub)
        _advance_to(stub, s + CROSSING + 1)
        assert _states(stub) == (pb.JOB_STATE_RUNNING, pb.JOB_STATE_CHECKPOINTING,
                                 pb.JOB_STATE_QUEUED)
        _advance_to(stub, s + CROSSING + CKPT_S - 1)
        assert _job(stub, RTJ).state == pb.JOB_STATE_QUEUED
        _advance_to(stub, s + CROSSING + CKPT_S + 1)
        rtj = _job(stub, RTJ)
        assert rtj.state == pb.JOB_STATE_RUNNING and rtj.block == "M01"
        assert rtj.first_start == s + CROSSING + CKPT_S
        assert _job(stub, YOUNG).state == pb.JOB_STATE_PREEMPTED


def test_a_periodic_mode_clashing_with_the_scheme_refuses_to_start() -> None:
    cmd = [sys.executable, "-m", "schedd", "serve", "--listen", "127.0.0.1:0",
           "--metrics-port", "0", "--log-format", "json", "--policy", "wcjs",
           "--opt", "ckpt=app"]
    bad = subprocess.run([*cmd, "--ckpt", "sys"], capture_output=True, text=True,
                         timeout=30, cwd=repo_root())
    assert bad.returncode == 2
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1, bad.stderr  # one sentence, no traceback
    assert lines[0].startswith("schedd: error: policy wcjs")
    assert "--ckpt app" in lines[0] and "--ckpt sys" in lines[0]
    # Without --ckpt the daemon takes the scheme's mode: APP-CKPT.
    with DaemonProc("--clock", "lockstep", "--policy", "wcjs", "--opt", "ckpt=app") as d, \
            d.channel() as ch:
        stub = scheduler_pb2_grpc.SchedulerStub(ch)
        info = stub.GetCluster(pb.GetClusterRequest(), timeout=TIMEOUT)
        assert json.loads(info.engine_options)["checkpoint"]["periodic"] == "app"
