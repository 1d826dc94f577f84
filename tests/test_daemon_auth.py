"""Authentication, authorisation and TLS of a real `schedd serve`.

Tokens: `op-token` is the operator root, `alice-token` and `bob-token` are users. Users may
act on their own jobs only and may not move the clock; reading is open to every
authenticated caller; health checks and reflection need no token.
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from daemon_proc import DaemonProc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from schedd.v1 import scheduler_pb2 as pb
from schedd.v1 import scheduler_pb2_grpc

TIMEOUT = 10.0
TOKENS = "# test tokens\nop-token operator root\nalice-token user alice\nbob-token user bob\n"
OP = (("authorization", "Bearer op-token"),)
ALICE = (("authorization", "Bearer alice-token"),)
BOB = (("authorization", "Bearer bob-token"),)
UNAUTH = grpc.StatusCode.UNAUTHENTICATED
DENIED = grpc.StatusCode.PERMISSION_DENIED

_ids = itertools.count(5000)


def new_id() -> int:
    return next(_ids)


@pytest.fixture(scope="module")
def tokens_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("auth") / "tokens"
    path.write_text(TOKENS)
    return path


@pytest.fixture(scope="module")
def daemon(tokens_file: Path) -> Iterator[DaemonProc]:
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:64",
                    "--tokens", str(tokens_file)) as d:
        yield d


def refused(call, request, code: grpc.StatusCode, *words: str, metadata=None) -> str:
    with pytest.raises(grpc.RpcError) as err:
        result = call(request, timeout=TIMEOUT, metadata=metadata)
        if hasattr(result, "__next__"):  # a server stream fails on its first read
            next(result)
    got = err.value
    assert got.code() == code, f"{got.code()}: {got.details()}"
    text = (got.details() or "").strip()
    assert text and "\n" not in text and "Traceback" not in text, text
    for word in words:
        assert word.lower() in text.lower(), f"{word!r} not in {text!r}"
    return text


def submit(stub, job_id: int, metadata, walltime: float = 1000.0) -> pb.SubmitJobResponse:
    return stub.SubmitJob(pb.SubmitJobRequest(job_id=job_id, nodes=1, walltime=walltime),
                          timeout=TIMEOUT, metadata=metadata)


def get(stub, job_id: int, metadata=OP) -> pb.Job:
    return stub.GetJob(pb.GetJobRequest(job_id=job_id), timeout=TIMEOUT, metadata=metadata)


def advance(stub, by: float = 1.0) -> pb.Clock:
    return stub.AdvanceClock(pb.AdvanceClockRequest(by=by), timeout=TIMEOUT, metadata=OP)


def healthy(channel: grpc.Channel) -> None:
    health = health_pb2_grpc.HealthStub(channel)
    answer = health.Check(health_pb2.HealthCheckRequest(service="schedd.v1.Scheduler"),
                          timeout=TIMEOUT)
    assert answer.status == health_pb2.HealthCheckResponse.SERVING


# ---------------------------------------------------------------------------- authentication
def every_rpc(stub) -> list[tuple[str, object, object]]:
    """(name, callable, request) for each RPC; stream requests as iterators."""
    return [
        ("SubmitJob", stub.SubmitJob, pb.SubmitJobRequest(job_id=1, nodes=1, walltime=10)),
        ("SubmitJobs", stub.SubmitJobs,
         iter([pb.SubmitJobsRequest(jobs=[pb.SubmitJobRequest(job_id=2, nodes=1,
                                                              walltime=10)])])),
        ("CancelJob", stub.CancelJob, pb.CancelJobRequest(job_id=1)),
        ("GetJob", stub.GetJob, pb.GetJobRequest(job_id=1)),
        ("ListJobs", stub.ListJobs, pb.ListJobsRequest()),
        ("AdvanceNotice", stub.AdvanceNotice,
         pb.AdvanceNoticeRequest(job_id=3, expected_arrival=100, nodes=1, walltime=10)),
        ("ElasticControl", stub.ElasticControl,
         pb.ElasticControlRequest(job_id=1, kind=pb.ECC_KIND_ET, amount=10)),
        ("CheckpointDone", stub.CheckpointDone, pb.CheckpointDoneRequest(job_id=1)),
        ("WatchEvents", stub.WatchEvents, pb.WatchEventsRequest(from_seq=1)),
        ("GetCluster", stub.GetCluster, pb.GetClusterRequest()),
        ("GetResults", stub.GetResults, pb.GetResultsRequest()),
        ("GetClock", stub.GetClock, pb.GetClockRequest()),
        ("AdvanceClock", stub.AdvanceClock, pb.AdvanceClockRequest(by=1)),
        ("Pause", stub.Pause, pb.PauseRequest()),
        ("Resume", stub.Resume, pb.ResumeRequest()),
    ]


@pytest.mark.parametrize("metadata", [
    pytest.param(None, id="no-token"),
    pytest.param((("authorization", "Bearer wrong-token"),), id="wrong-token"),
    pytest.param((("authorization", "Basic xyz"),), id="basic-scheme"),
    pytest.param((("authorization", "Bearer"),), id="bearer-without-token"),
    pytest.param((("authorization", "alice-token"),), id="token-without-scheme"),
    pytest.param((("authorization", "Bearer alice-token-x"),), id="token-prefix-match"),
])
def test_unauthenticated_everywhere(stub, metadata):
    for name, call, request in every_rpc(stub):
        text = refused(call, request, UNAUTH, "authorization", metadata=metadata)
        assert "Bearer" in text, name
    for job_id in (1, 2):  # nothing got through
        refused(stub.GetJob, pb.GetJobRequest(job_id=job_id), grpc.StatusCode.NOT_FOUND,
                metadata=OP)


def test_health_and_reflection_without_token(channel):
    healthy(channel)
    reflect = reflection_pb2_grpc.ServerReflectionStub(channel)
    answers = list(reflect.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=TIMEOUT))
    names = {s.name for a in answers for s in a.list_services_response.service}
    assert "schedd.v1.Scheduler" in names


def test_scheme_is_case_insensitive(stub):
    clock = stub.GetClock(pb.GetClockRequest(), timeout=TIMEOUT,
                          metadata=(("authorization", "bearer alice-token"),))
    assert clock.mode == "lockstep"


# ---------------------------------------------------------------------------- authorisation
def test_owner_is_the_authenticated_user(stub):
    job_id = new_id()
    submit(stub, job_id, ALICE)
    assert get(stub, job_id, ALICE).owner == "alice"
    batch = pb.SubmitJobsRequest(jobs=[pb.SubmitJobRequest(job_id=new_id(), nodes=1,
                                                           walltime=5)])
    out = stub.SubmitJobs(iter([batch]), timeout=TIMEOUT, metadata=BOB)
    assert get(stub, out.job_ids[0], BOB).owner == "bob"
    op_job = new_id()
    submit(stub, op_job, OP)
    assert get(stub, op_job).owner == "root"


def test_other_users_job_is_off_limits(stub):
    job_id = new_id()
    submit(stub, job_id, ALICE)
    advance(stub)
    assert get(stub, job_id).state == pb.JOB_STATE_RUNNING
    refused(stub.CancelJob, pb.CancelJobRequest(job_id=job_id), DENIED, "alice", "bob",
            metadata=BOB)
    refused(stub.ElasticControl,
            pb.ElasticControlRequest(job_id=job_id, kind=pb.ECC_KIND_ET, amount=100), DENIED,
            "alice", metadata=BOB)
    refused(stub.ElasticControl,
            pb.ElasticControlRequest(job_id=job_id, kind=pb.ECC_KIND_RP, amount=1), DENIED,
            "alice", metadata=BOB)
    refused(stub.CheckpointDone, pb.CheckpointDoneRequest(job_id=job_id), DENIED, "alice",
            metadata=BOB)
    advance(stub)
    job = get(stub, job_id)
    assert job.state == pb.JOB_STATE_RUNNING and job.walltime == 1000  # untouched
    stub.CancelJob(pb.CancelJobRequest(job_id=job_id), timeout=TIMEOUT, metadata=ALICE)


def test_notice_for_another_users_pending_job(stub):
    job_id = new_id()
    now = stub.GetClock(pb.GetClockRequest(), timeout=TIMEOUT, metadata=ALICE).now
    stub.SubmitJob(pb.SubmitJobRequest(job_id=job_id, nodes=1, walltime=10,
                                       job_class=pb.JOB_CLASS_ON_DEMAND,
                                       submit_time=now + 100),
                   timeout=TIMEOUT, metadata=ALICE)
    notice = pb.AdvanceNoticeRequest(job_id=job_id, expected_arrival=now + 100, nodes=1,
                                     walltime=10)
    refused(stub.AdvanceNotice, notice, DENIED, "alice", metadata=BOB)
    stub.AdvanceNotice(notice, timeout=TIMEOUT, metadata=ALICE)


def test_user_cancels_own_job(stub):
    job_id = new_id()
    submit(stub, job_id, ALICE)
    stub.CancelJob(pb.CancelJobRequest(job_id=job_id), timeout=TIMEOUT, metadata=ALICE)
    advance(stub)
    assert get(stub, job_id, ALICE).state == pb.JOB_STATE_CANCELLED


def test_operator_acts_on_anyones_job(stub):
    job_id = new_id()
    submit(stub, job_id, ALICE)
    advance(stub)
    stub.ElasticControl(pb.ElasticControlRequest(job_id=job_id, kind=pb.ECC_KIND_ET,
                                                 amount=50), timeout=TIMEOUT, metadata=OP)
    stub.CancelJob(pb.CancelJobRequest(job_id=job_id), timeout=TIMEOUT, metadata=OP)
    advance(stub)
    job = get(stub, job_id, ALICE)
    assert job.state == pb.JOB_STATE_CANCELLED and job.walltime == 1050


def test_reading_is_open(stub):
    job_id = new_id()
    submit(stub, job_id, ALICE)
    job = get(stub, job_id, BOB)
    assert job.job_id == job_id and job.owner == "alice"
    listed = stub.ListJobs(pb.ListJobsRequest(owner="alice"), timeout=TIMEOUT, metadata=BOB)
    assert job_id in {j.job_id for j in listed.jobs}
    assert all(j.owner == "alice" for j in listed.jobs)
    stub.GetCluster(pb.GetClusterRequest(), timeout=TIMEOUT, metadata=BOB)
    stub.GetClock(pb.GetClockRequest(), timeout=TIMEOUT, metadata=BOB)
    list(stub.GetResults(pb.GetResultsRequest(), timeout=TIMEOUT, metadata=BOB))
    events = stub.WatchEvents(pb.WatchEventsRequest(from_seq=1, job_id=job_id),
                              timeout=TIMEOUT, metadata=BOB)
    try:
        first = next(events)
    finally:
        events.cancel()
    assert first.job_id == job_id and first.kind == "submitted"
    stub.CancelJob(pb.CancelJobRequest(job_id=job_id), timeout=TIMEOUT, metadata=ALICE)


def test_clock_control_is_for_operators(stub):
    for who, user in ((ALICE, "alice"), (BOB, "bob")):
        before = stub.GetClock(pb.GetClockRequest(), timeout=TIMEOUT, metadata=who).now
        refused(stub.AdvanceClock, pb.AdvanceClockRequest(by=10), DENIED, "AdvanceClock",
                "operator", user, metadata=who)
        refused(stub.AdvanceClock, pb.AdvanceClockRequest(until_idle=True), DENIED,
                metadata=who)
        refused(stub.Pause, pb.PauseRequest(), DENIED, "Pause", user, metadata=who)
        refused(stub.Resume, pb.ResumeRequest(), DENIED, "Resume", user, metadata=who)
        assert stub.GetClock(pb.GetClockRequest(), timeout=TIMEOUT, metadata=who).now == before
    now = stub.GetClock(pb.GetClockRequest(), timeout=TIMEOUT, metadata=OP).now
    assert advance(stub, 10).now == now + 10
    # the operator passes authorisation; lockstep itself refuses a pause
    refused(stub.Pause, pb.PauseRequest(), grpc.StatusCode.FAILED_PRECONDITION, "lockstep",
            metadata=OP)


def test_request_id_replay_by_another_user(stub):
    job_id = new_id()
    submit(stub, job_id, ALICE)
    cancel = pb.CancelJobRequest(job_id=job_id, request_id=f"cancel-{job_id}")
    stub.CancelJob(cancel, timeout=TIMEOUT, metadata=ALICE)
    refused(stub.CancelJob, cancel, DENIED, "alice", metadata=BOB)


# ---------------------------------------------------------------------------- bad tokens files
def serve(*args: str, timeout: float = 20.0) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "schedd", "serve", "--listen", "127.0.0.1:0",
         "--metrics-port", "0", "--log-format", "json", *args],
        capture_output=True, text=True, timeout=timeout)
    return proc, time.monotonic() - started


@pytest.mark.parametrize(("content", "line", "words"), [
    pytest.param("op-token operator root\nalice-token alice\n", 2, ("TOKEN ROLE USER", "2"),
                 id="two-fields"),
    pytest.param("# comment\n\nx superuser y\n", 3, ("role", "superuser"), id="unknown-role"),
    pytest.param("a user alice\na user bob\n", 2, ("twice",), id="token-twice"),
    pytest.param("a user alice extra\n", 1, ("TOKEN ROLE USER",), id="four-fields"),
])
def test_bad_tokens_file(tmp_path, content, line, words):
    path = tmp_path / "tokens"
    path.write_text(content)
    proc, took = serve("--tokens", str(path))
    assert proc.returncode == 2, proc.stderr
    assert f"{path}:{line}:" in proc.stderr
    for word in words:
        assert word in proc.stderr
    assert "Traceback" not in proc.stderr and "serving" not in proc.stderr
    assert took < 15


@pytest.mark.parametrize("content", ["", "# only a comment\n\n"])
def test_tokens_file_without_tokens(tmp_path, content):
    path = tmp_path / "tokens"
    path.write_text(content)
    proc, _ = serve("--tokens", str(path))
    assert proc.returncode == 2 and str(path) in proc.stderr and "no token" in proc.stderr


def test_missing_tokens_file(tmp_path):
    path = tmp_path / "absent"
    proc, _ = serve("--tokens", str(path))
    assert proc.returncode == 2 and str(path) in proc.stderr
    assert "Traceback" not in proc.stderr


# ---------------------------------------------------------------------------- TLS
@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not on PATH")
    where = tmp_path_factory.mktemp("tls")
    key, crt = where / "key.pem", where / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(crt), "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True, timeout=60)
    return crt, key


def secure(daemon: DaemonProc, crt: Path, token: str | None = None) -> grpc.Channel:
    creds = grpc.ssl_channel_credentials(root_certificates=crt.read_bytes())
    if token:
        creds = grpc.composite_channel_credentials(
            creds, grpc.access_token_call_credentials(token))
    return grpc.secure_channel(daemon.address, creds)


def test_tls(cert):
    crt, key = cert
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:8",
                    "--tls-cert", str(crt), "--tls-key", str(key)) as d:
        with secure(d, crt) as ch:
            clock = scheduler_pb2_grpc.SchedulerStub(ch).GetClock(pb.GetClockRequest(),
                                                                 timeout=TIMEOUT)
            assert clock.mode == "lockstep"
            healthy(ch)
        with d.channel() as plain:
            refused(scheduler_pb2_grpc.SchedulerStub(plain).GetClock, pb.GetClockRequest(),
                    grpc.StatusCode.UNAVAILABLE)
        assert d.proc.poll() is None


def test_tls_with_tokens(cert, tokens_file):
    crt, key = cert
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:8", "--tokens",
                    str(tokens_file), "--tls-cert", str(crt), "--tls-key", str(key)) as d:
        # the standard call credentials send `authorization: Bearer TOKEN`
        with secure(d, crt, token="alice-token") as ch:
            stub = scheduler_pb2_grpc.SchedulerStub(ch)
            out = stub.SubmitJob(pb.SubmitJobRequest(nodes=1, walltime=10), timeout=TIMEOUT)
            assert stub.GetJob(pb.GetJobRequest(job_id=out.job_id),
                               timeout=TIMEOUT).owner == "alice"
            refused(stub.AdvanceClock, pb.AdvanceClockRequest(by=1), DENIED, "alice")
        with secure(d, crt, token="op-token") as ch:
            stub = scheduler_pb2_grpc.SchedulerStub(ch)
            assert stub.AdvanceClock(pb.AdvanceClockRequest(by=1), timeout=TIMEOUT).now == 1
        with secure(d, crt) as ch:
            stub = scheduler_pb2_grpc.SchedulerStub(ch)
            refused(stub.GetClock, pb.GetClockRequest(), UNAUTH)
            assert stub.GetClock(pb.GetClockRequest(), timeout=TIMEOUT, metadata=OP).now == 1
            healthy(ch)


@pytest.mark.parametrize("which", ["--tls-cert", "--tls-key"])
def test_tls_needs_cert_and_key(cert, which):
    crt, key = cert
    proc, took = serve(which, str(crt if which == "--tls-cert" else key))
    assert proc.returncode == 2, proc.stderr
    assert "--tls-cert" in proc.stderr and "--tls-key" in proc.stderr
    assert "Traceback" not in proc.stderr and took < 15


def test_tls_missing_files(tmp_path):
    missing = tmp_path / "nope.pem"
    proc, _ = serve("--tls-cert", str(missing), "--tls-key", str(missing))
    assert proc.returncode == 2, proc.stderr
    assert str(missing) in proc.stderr and "Traceback" not in proc.stderr


def test_tls_garbage_files(tmp_path):
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    proc, _ = serve("--tls-cert", str(garbage), "--tls-key", str(garbage))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "garbage.pem" in proc.stderr
