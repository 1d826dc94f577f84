"""The limits on every field (schedd/limits.py) as a real `schedd serve` applies them, job-id
exhaustion, bounded strings and messages, and a fatal engine failure.

Every value the engine would choke on is refused with INVALID_ARGUMENT and one sentence
naming the field before it is acknowledged; the engine keeps running afterwards.
"""

from __future__ import annotations

import itertools
import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from daemon_proc import DaemonProc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from schedd import limits
from schedd.v1 import scheduler_pb2 as pb

TIMEOUT = 10.0
INVALID = grpc.StatusCode.INVALID_ARGUMENT
PLUGIN = str(Path(__file__).parent / "plugins" / "failing_policy.py")
_ids = itertools.count(5_000_000)


@pytest.fixture(scope="module")
def daemon() -> Iterator[DaemonProc]:
    # --ckpt trace: jobs checkpoint at their own ckpt_interval (the 5e-324 case);
    # --ckpt-cost io: the transfer time uses ckpt_gb_per_node (the 1e308 case).
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:64", "--ckpt", "trace",
                    metrics=True) as d:
        yield d


def healthy(daemon: DaemonProc) -> int:
    stub = health_pb2_grpc.HealthStub(daemon.channel())
    return stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=TIMEOUT).status


def refused(call, request, code: grpc.StatusCode, *words: str) -> str:
    with pytest.raises(grpc.RpcError) as err:
        answer = call(request, timeout=TIMEOUT)
        if hasattr(answer, "__next__"):  # a server stream: the status comes with it
            list(answer)
    got = err.value
    assert got.code() == code, f"{got.code()}: {got.details()}"
    text = got.details()
    assert "\n" not in text and len(text) < 300, text
    for word in words:
        assert word in text, f"{word!r} not in {text!r}"
    return text


def engine_alive(stub) -> None:
    """A job submitted now starts once the clock moves: the engine task is running."""
    job_id = next(_ids)
    stub.SubmitJob(pb.SubmitJobRequest(job_id=job_id, nodes=1, walltime=5), timeout=TIMEOUT)
    stub.AdvanceClock(pb.AdvanceClockRequest(by=1), timeout=TIMEOUT)
    assert stub.GetJob(pb.GetJobRequest(job_id=job_id), timeout=TIMEOUT).state in (
        pb.JOB_STATE_RUNNING, pb.JOB_STATE_COMPLETED)


# ---------------------------------------------------------------- the two requests
@pytest.mark.parametrize("field,value", [("ckpt_interval", 5e-324),
                                         ("ckpt_gb_per_node", 1e308)])
def test_engine_killing_values_are_refused(daemon, stub, field, value):
    request = pb.SubmitJobRequest(job_id=next(_ids), nodes=4, walltime=1000, **{field: value})
    refused(stub.SubmitJob, request, INVALID, field)
    engine_alive(stub)
    assert healthy(daemon) == health_pb2.HealthCheckResponse.SERVING


# ---------------------------------------------------------------- one row per field
SUBMIT_BAD = [
    ("walltime", 2e9), ("walltime", 0.0), ("runtime", 1e300), ("runtime", -1.0),
    ("setup", 1e12), ("submit_time", 1e11), ("submit_time", -5.0),
    ("requested_start", 1e308), ("ckpt_interval", 0.5), ("ckpt_interval", 1e10),
    ("ckpt_gb_per_node", 1e5), ("ckpt_gb_per_node", -1.0), ("user", 2**40),
    ("project", -7), ("queue", 2**31),
]


@pytest.mark.parametrize("field,value", SUBMIT_BAD)
def test_submit_field_out_of_range(stub, field, value):
    request = pb.SubmitJobRequest(job_id=next(_ids), nodes=1, walltime=10)
    setattr(request, field, value)
    text = refused(stub.SubmitJob, request, INVALID, field)
    assert "must be" in text


def test_limits_at_the_edges_are_accepted(stub):
    edge = pb.SubmitJobRequest(job_id=next(_ids), nodes=1, walltime=limits.MAX_DURATION,
                               runtime=5.0, setup=0.0, ckpt_interval=limits.MIN_CKPT_INTERVAL,
                               ckpt_gb_per_node=limits.MAX_CKPT_GB_PER_NODE,
                               user=limits.MAX_ACCOUNT, project=-1)
    assert stub.SubmitJob(edge, timeout=TIMEOUT).job_id == edge.job_id
    engine_alive(stub)


def test_notice_and_ecc_and_clock_limits(stub):
    refused(stub.AdvanceNotice, pb.AdvanceNoticeRequest(
        job_id=next(_ids), expected_arrival=1e300, nodes=1, walltime=10), INVALID,
        "expected_arrival")
    refused(stub.AdvanceNotice, pb.AdvanceNoticeRequest(
        job_id=next(_ids), expected_arrival=100, nodes=1, walltime=1e300), INVALID, "walltime")
    refused(stub.AdvanceNotice, pb.AdvanceNoticeRequest(
        job_id=next(_ids), expected_arrival=100, nodes=1, walltime=10, notice_time=-1e300),
        INVALID, "notice_time")
    refused(stub.AdvanceClock, pb.AdvanceClockRequest(to=1e300), INVALID, "to")
    refused(stub.AdvanceClock, pb.AdvanceClockRequest(by=1e300), INVALID, "by")
    job_id = next(_ids)
    stub.SubmitJob(pb.SubmitJobRequest(job_id=job_id, nodes=1, walltime=100),
                   timeout=TIMEOUT)
    refused(stub.ElasticControl, pb.ElasticControlRequest(
        job_id=job_id, kind=pb.ECC_KIND_ET, amount=1e300), INVALID, "amount")
    refused(stub.ElasticControl, pb.ElasticControlRequest(
        job_id=job_id, kind=pb.ECC_KIND_EP, amount=1e9), INVALID, "amount")
    refused(stub.ElasticControl, pb.ElasticControlRequest(
        job_id=job_id, kind=pb.ECC_KIND_ET, amount=5, time=1e300), INVALID, "time")
    engine_alive(stub)


def test_a_clock_past_the_last_time_refuses_new_work():
    """Jobs may run on past MAX_TIME, so a lockstep clock can stand past it; a submission,
    a notice or an ECC dated "now" then is refused with one sentence, never accepted with
    a time outside the limits (a fresh-clone fuzz run accepted submit_time 10000000001)."""
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:16", "--policy", "easy-e",
                    "--ckpt", "trace") as d:
        stub = d.stub()
        stub.AdvanceClock(pb.AdvanceClockRequest(to=limits.MAX_TIME - 10), timeout=TIMEOUT)
        stub.SubmitJob(pb.SubmitJobRequest(job_id=1, nodes=1, walltime=200, runtime=100),
                       timeout=TIMEOUT)
        stub.SubmitJob(pb.SubmitJobRequest(job_id=2, nodes=1, walltime=500, runtime=400),
                       timeout=TIMEOUT)
        # `to` and `by` stop at MAX_TIME; running the jobs out does not.
        stub.AdvanceClock(pb.AdvanceClockRequest(until_idle=True), timeout=TIMEOUT)
        assert stub.GetClock(pb.GetClockRequest(), timeout=TIMEOUT).now > limits.MAX_TIME
        late = grpc.StatusCode.FAILED_PRECONDITION
        refused(stub.SubmitJob, pb.SubmitJobRequest(job_id=3, nodes=1, walltime=10), late,
                "latest time")
        refused(stub.SubmitJobs, iter([pb.SubmitJobsRequest(
            jobs=[pb.SubmitJobRequest(job_id=4, nodes=1, walltime=10)])]), late, "latest time")
        refused(stub.AdvanceNotice, pb.AdvanceNoticeRequest(
            job_id=5, expected_arrival=limits.MAX_TIME, nodes=1, walltime=10), late,
            "latest time")
        refused(stub.ElasticControl, pb.ElasticControlRequest(
            job_id=2, kind=pb.ECC_KIND_ET, amount=5), late, "latest time")
        jobs = stub.ListJobs(pb.ListJobsRequest(page_size=10), timeout=TIMEOUT).jobs
        assert sorted(j.job_id for j in jobs) == [1, 2]
        assert healthy(d) == health_pb2.HealthCheckResponse.SERVING


# ---------------------------------------------------------------- job ids (item 2)
def test_a_huge_explicit_id_does_not_starve_assigned_ids(stub):
    huge = stub.SubmitJob(pb.SubmitJobRequest(job_id=2**53, nodes=1, walltime=5),
                          timeout=TIMEOUT)
    assert huge.job_id == 2**53
    auto = [stub.SubmitJob(pb.SubmitJobRequest(nodes=1, walltime=5), timeout=TIMEOUT).job_id
            for _ in range(3)]
    assert len(set(auto)) == 3 and all(1 <= i < 2**53 for i in auto)
    assert auto == sorted(auto)  # assigned ids still increase
    refused(stub.SubmitJob, pb.SubmitJobRequest(job_id=2**53 + 1, nodes=1, walltime=5),
            INVALID, "job_id")
    refused(stub.SubmitJob, pb.SubmitJobRequest(job_id=-3, nodes=1, walltime=5),
            INVALID, "job_id")


def test_assigned_ids_skip_explicit_ones(stub):
    first = stub.SubmitJob(pb.SubmitJobRequest(nodes=1, walltime=5), timeout=TIMEOUT).job_id
    taken = first + 1
    stub.SubmitJob(pb.SubmitJobRequest(job_id=taken, nodes=1, walltime=5), timeout=TIMEOUT)
    after = stub.SubmitJob(pb.SubmitJobRequest(nodes=1, walltime=5), timeout=TIMEOUT).job_id
    assert after == taken + 1


# ---------------------------------------------------------------- strings, tokens, size
def test_odd_page_token_is_invalid_argument(stub):
    for token in ("²", "١٢", "-1", "1" * 40):
        refused(stub.ListJobs, pb.ListJobsRequest(page_token=token), INVALID, "page_token")


def test_long_strings_are_refused(stub):
    refused(stub.SubmitJob, pb.SubmitJobRequest(
        request_id="r" * 1_000_000, nodes=1, walltime=5), INVALID, "request_id")
    refused(stub.CancelJob, pb.CancelJobRequest(job_id=1, request_id="é" * 129), INVALID,
            "request_id")
    refused(stub.ListJobs, pb.ListJobsRequest(owner="o" * 257), INVALID, "owner")
    refused(stub.WatchEvents, pb.WatchEventsRequest(kinds=["k" * 65]), INVALID, "kinds")
    refused(stub.WatchEvents, pb.WatchEventsRequest(kinds=["a"] * 65), INVALID, "kinds")
    batch = pb.SubmitJobsRequest(jobs=[pb.SubmitJobRequest(request_id="x" * 200, nodes=1,
                                                           walltime=5)])
    with pytest.raises(grpc.RpcError) as err:
        stub.SubmitJobs(iter([batch]), timeout=TIMEOUT)
    assert err.value.code() == INVALID and "request_id" in err.value.details()
    # A request id at the limit is fine and is echoed back as given.
    rid = "ü" * limits.MAX_REQUEST_ID
    a = stub.SubmitJob(pb.SubmitJobRequest(request_id=rid, nodes=1, walltime=5),
                       timeout=TIMEOUT)
    b = stub.SubmitJob(pb.SubmitJobRequest(request_id=rid, nodes=1, walltime=5),
                       timeout=TIMEOUT)
    assert b.duplicate and b.job_id == a.job_id


def test_message_larger_than_the_limit_is_refused(stub, daemon):
    big = pb.SubmitJobsRequest(jobs=[pb.SubmitJobRequest(nodes=1, walltime=5, request_id="")
                                     for _ in range(limits.MAX_MESSAGE_BYTES // 4)])
    assert big.ByteSize() > limits.MAX_MESSAGE_BYTES
    with pytest.raises(grpc.RpcError) as err:
        stub.SubmitJobs(iter([big]), timeout=TIMEOUT)
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert healthy(daemon) == health_pb2.HealthCheckResponse.SERVING


def test_metrics_port_in_use_is_one_sentence(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "schedd", "serve", "--listen", "127.0.0.1:0",
             "--metrics-port", str(port), "--clock", "lockstep", "--log-format", "json"],
            capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert errors == [f"schedd: error: cannot serve metrics on 127.0.0.1:{port}: Address "
                      "already in use"], done.stderr


# ---------------------------------------------------------------- fatal engine failure
def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return r.read().decode()


def test_policy_exception_is_fatal_not_a_dead_engine():
    """A policy that raises: the pending AdvanceClock gets UNAVAILABLE (no hang), health
    goes NOT_SERVING, the log names the request, the process exits non-zero."""
    d = DaemonProc("--clock", "lockstep", "--cluster", "nodes:16", "--plugin", PLUGIN,
                   "--policy", "explode", "--opt", "nodes=7", metrics=True)
    try:
        stub = d.stub()
        assert "schedd_engine_failures_total 0.0" in scrape(d.metrics_port)
        stub.SubmitJob(pb.SubmitJobRequest(job_id=1, nodes=2, walltime=50), timeout=TIMEOUT)
        stub.AdvanceClock(pb.AdvanceClockRequest(by=1), timeout=TIMEOUT)
        # Held until t=5, so the failure comes while AdvanceClock is waiting on the engine.
        stub.SubmitJob(pb.SubmitJobRequest(job_id=2, nodes=7, walltime=50, submit_time=5,
                                           request_id="the-bad-one"), timeout=TIMEOUT)
        started = time.monotonic()
        with pytest.raises(grpc.RpcError) as err:
            stub.AdvanceClock(pb.AdvanceClockRequest(by=10), timeout=TIMEOUT)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE, err.value
        assert "engine" in err.value.details()
        assert time.monotonic() - started < TIMEOUT / 2  # answered, not timed out
        rc = d.proc.wait(TIMEOUT)
        assert rc == 3  # EXIT_ENGINE_FAILED (docs/daemon.md): systemd and compose restart it
    finally:
        d.stop()
    lines = [json.loads(line) for line in d.log().splitlines() if line.startswith("{")]
    fatal = [e for e in lines if e.get("event") == "engine failed"]
    assert len(fatal) == 1, d.log()
    assert fatal[0]["level"] == "error"
    assert "the-bad-one" in json.dumps(fatal[0]["request_ids"])
    assert "explode" in fatal[0]["error"]
    assert fatal[0]["engine_failures_total"] == 1
    assert "Traceback" not in "".join(line for line in d.log().splitlines()
                                      if not line.startswith("{"))


# ---------------------------------------------------------------- MQTT notices, same table
BAD_NOTICES = [
    ({"job_id": 1e300, "expected_arrival": 50, "nodes": 1, "walltime": 5}, "job_id"),
    ({"job_id": 3, "expected_arrival": 1e308, "nodes": 1, "walltime": 5}, "expected_arrival"),
    ({"job_id": 3, "expected_arrival": 50, "nodes": 2.5, "walltime": 5}, "nodes"),
    ({"job_id": 3, "expected_arrival": 50, "nodes": True, "walltime": 5}, "nodes"),
    ({"job_id": 3, "expected_arrival": 50, "nodes": 1, "walltime": "5"}, "walltime"),
    ({"job_id": 3, "expected_arrival": 50, "nodes": 1, "walltime": float("inf")}, "walltime"),
    ({"job_id": 3, "expected_arrival": 50, "nodes": 1, "walltime": 5,
      "notice_time": float("nan")}, "notice_time"),
]


def test_mqtt_notices_use_the_same_limits(mqtt_broker):
    import asyncio
    import contextlib
    import uuid

    import aiomqtt

    host, port = mqtt_broker
    name = f"lim{uuid.uuid4().hex[:6]}"

    async def exchange() -> list[dict]:
        got: list[dict] = []
        async with aiomqtt.Client(host, port, identifier=f"t-{name}") as c:
            await c.subscribe(f"schedd/{name}/notices/rejected", qos=1)
            for payload, _ in BAD_NOTICES:  # NaN and Infinity: Python's JSON extension
                await c.publish(f"schedd/{name}/notices", json.dumps(payload), qos=1)

            async def read() -> None:
                async for m in c.messages:
                    got.append(json.loads(m.payload))
                    if len(got) == len(BAD_NOTICES):
                        return

            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(read(), 10)
        return got

    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:8", "--name", name,
                    "--mqtt", f"{host}:{port}") as d:
        time.sleep(1.0)  # the daemon subscribes once connected
        rejected = asyncio.run(exchange())
        assert healthy(d) == health_pb2.HealthCheckResponse.SERVING
        engine_alive(d.stub())
    assert len(rejected) == len(BAD_NOTICES), rejected
    for got, (_, field) in zip(rejected, BAD_NOTICES, strict=True):
        assert field in got["error"] and "internal" not in got["error"], got


def test_schedctl_huge_job_id_does_not_block_later_submissions(daemon):
    """The issue's reproduction, end to end: `schedctl submit --job-id 2**53`, then a
    submission without an id (it used to get RESOURCE_EXHAUSTED from then on)."""

    def schedctl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "schedd_clients.schedctl", "--server",
                               daemon.address, *args], capture_output=True, text=True,
                              timeout=60)

    first = schedctl("submit", "--job-id", str(2**53 - 7), "--nodes", "1", "--walltime", "9")
    assert first.returncode == 0, first.stderr
    later = schedctl("submit", "--nodes", "1", "--walltime", "9")
    assert later.returncode == 0, later.stderr
    assert "submitted job" in later.stdout
    beyond = schedctl("submit", "--job-id", str(2**53 + 1), "--nodes", "1", "--walltime", "9")
    assert beyond.returncode == 1 and beyond.stderr == (
        "schedctl: INVALID_ARGUMENT: job_id must be a whole number in [1, 9007199254740992], "
        "got 9007199254740993\n")
