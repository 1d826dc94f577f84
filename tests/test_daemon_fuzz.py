"""Fuzz every RPC of one live `schedd serve --validate` on loopback.

Hypothesis draws each request message with extreme floats (NaN, infinities, 5e-324,
1e308, negative zero), huge and odd Unicode strings, unknown enum values and repeated ids.
Whatever it sends, every call must end in a typed status (never UNKNOWN or INTERNAL,
never a timeout), the daemon must stay SERVING, and the engine's invariant checker
(schedd/core/validate.py, run by --validate after every event: a broken invariant is a
fatal engine failure) must hold throughout.
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from daemon_proc import DaemonProc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedd import limits
from schedd.v1 import scheduler_pb2 as pb

TIMEOUT = 15.0
# Typed answers a fuzzed request may get; UNKNOWN, INTERNAL, UNAVAILABLE (the engine
# failed) and DEADLINE_EXCEEDED (a hang) are failures.
TYPED = {grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND,
         grpc.StatusCode.ALREADY_EXISTS, grpc.StatusCode.FAILED_PRECONDITION,
         grpc.StatusCode.OUT_OF_RANGE, grpc.StatusCode.RESOURCE_EXHAUSTED,
         grpc.StatusCode.PERMISSION_DENIED}
FUZZ = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

EXTREME = [0.0, -0.0, 5e-324, -5e-324, 1e-300, 1e308, -1e308, float("inf"), float("-inf"),
           float("nan"), 1e10, 1e10 + 1, 1e9, 2.0**53, 0.5, 1.0, 60.0]
floats = st.one_of(st.sampled_from(EXTREME), st.floats(), st.floats(0, 5000))
INT64 = [0, 1, 2, -1, 2**31 - 1, 2**31, 2**53, 2**53 + 1, 2**63 - 1, -(2**63)]
int64 = st.one_of(st.sampled_from(INT64), st.integers(-(2**63), 2**63 - 1),
                  st.integers(1, 40))
int32 = st.one_of(st.sampled_from([0, 1, 2, 8, 64, 65, -1, 2**31 - 1, -(2**31)]),
                  st.integers(-(2**31), 2**31 - 1), st.integers(1, 16))
uint64 = st.one_of(st.sampled_from([0, 1, 2**63, 2**64 - 1]), st.integers(0, 2**64 - 1))
ODD = ["", "a", "²", "١٢", "\u0000", "\ufeff", "e\u0301", "🎉" * 40, "\u202e" + "x",
       "a" * 129, "b" * 5000, "../../etc", "1", "42", "-1", "٣"]
texts = st.one_of(st.sampled_from(ODD), st.text(max_size=300))
request_ids = st.one_of(st.just(""), st.sampled_from(["r1", "r2", "dup"]), texts)
enum = st.one_of(st.integers(0, 9), st.sampled_from([99, -1, 2**31 - 1, -(2**31)]))


def _opt(strategy: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(st.none(), strategy)


@st.composite
def submit_requests(draw) -> pb.SubmitJobRequest:
    r = pb.SubmitJobRequest(
        request_id=draw(request_ids), job_id=draw(int64), nodes=draw(int32),
        walltime=draw(floats), runtime=draw(floats), job_class=draw(enum),
        min_nodes=draw(int32), user=draw(int64), project=draw(int64), queue=draw(int64),
        not_checkpointable=draw(st.booleans()), setup=draw(floats))
    for name in ("requested_start", "submit_time", "ckpt_interval", "ckpt_gb_per_node"):
        value = draw(_opt(floats))
        if value is not None:
            setattr(r, name, value)
    return r


@st.composite
def sane_submit(draw) -> pb.SubmitJobRequest:
    """Mostly acceptable jobs, so that the engine has work to get wrong."""
    r = pb.SubmitJobRequest(
        request_id=draw(request_ids), job_id=draw(st.integers(0, 60)),
        nodes=draw(st.integers(1, 64)), walltime=draw(st.floats(1, 5000)),
        runtime=draw(st.floats(0, 6000)),
        job_class=draw(st.sampled_from([0, 1, 1, 1, 2, 3, 4, 5])),
        min_nodes=draw(st.integers(0, 4)), setup=draw(st.sampled_from([0.0, 5.0])),
        not_checkpointable=draw(st.booleans()))
    if draw(st.booleans()):  # the values that used to kill the engine, and their edges
        r.ckpt_interval = draw(st.sampled_from([1.0, 30.0, 600.0, 5e-324, 1e-3, 1e308]))
    if draw(st.booleans()):
        r.ckpt_gb_per_node = draw(st.sampled_from([0.5, 16.0, 10_000.0, 1e308, 5e-324]))
    if draw(st.booleans()):
        r.requested_start = draw(st.floats(0, 20_000))
    return r


def clock_requests() -> st.SearchStrategy:
    return st.one_of(
        st.builds(pb.AdvanceClockRequest),
        st.builds(lambda v: pb.AdvanceClockRequest(to=v), floats),
        st.builds(lambda v: pb.AdvanceClockRequest(by=v), floats),
        st.builds(lambda v: pb.AdvanceClockRequest(by=v), st.floats(0.1, 500)),
        st.builds(lambda v: pb.AdvanceClockRequest(until_idle=v), st.booleans()))


def notice_requests() -> st.SearchStrategy:
    def build(rid, job_id, arrival, nodes, walltime, when):
        r = pb.AdvanceNoticeRequest(request_id=rid, job_id=job_id, expected_arrival=arrival,
                                    nodes=nodes, walltime=walltime)
        if when is not None:
            r.notice_time = when
        return r

    return st.builds(build, request_ids, int64, floats, int32, floats, _opt(floats))


def ecc_requests() -> st.SearchStrategy:
    def build(rid, job_id, kind, amount, when):
        r = pb.ElasticControlRequest(request_id=rid, job_id=job_id, kind=kind, amount=amount)
        if when is not None:
            r.time = when
        return r

    return st.builds(build, request_ids, st.one_of(st.integers(1, 60), int64), enum, floats,
                     _opt(floats))


def list_requests() -> st.SearchStrategy:
    def build(states, classes, user, owner, size, token):
        r = pb.ListJobsRequest(states=states, classes=classes, owner=owner, page_size=size,
                               page_token=token)
        if user is not None:
            r.user = user
        return r

    return st.builds(build, st.lists(enum, max_size=70), st.lists(enum, max_size=4),
                     _opt(int64), texts, int32, texts)


@pytest.fixture(scope="module")
def daemon() -> Iterator[DaemonProc]:
    # --ckpt trace and io-cost checkpoints: the job's ckpt_interval and ckpt_gb_per_node
    # reach the engine's arithmetic; ecc-capable policy so ElasticControl gets that far.
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:64", "--validate",
                    "--ckpt", "trace", "--policy", "easy") as d:
        yield d
        assert d.proc.poll() is None, "the daemon died:\n" + d.log()
        assert '"engine failed"' not in d.log(), d.log()


def serving(daemon: DaemonProc) -> None:
    health = health_pb2_grpc.HealthStub(daemon.channel())
    status = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=TIMEOUT).status
    assert status == health_pb2.HealthCheckResponse.SERVING, daemon.log()[-3000:]


def typed(call, request, **kw) -> grpc.StatusCode:
    """Make the call; its status must be typed. Streams are read to the end."""
    try:
        answer = call(request, timeout=TIMEOUT, **kw)
        if hasattr(answer, "__next__"):
            for _ in answer:
                pass
    except grpc.RpcError as err:
        code = err.code()
        assert code in TYPED, f"{code}: {err.details()} for {request!r:.300}"
        details = err.details() or ""
        assert "\n" not in details and "Traceback" not in details, details
        return code
    return grpc.StatusCode.OK


# ---------------------------------------------------------------- one test per RPC
@FUZZ
@given(request=st.one_of(submit_requests(), sane_submit()))
def test_submit_job(daemon, stub, request):
    typed(stub.SubmitJob, request)


@FUZZ
@given(batches=st.lists(st.lists(st.one_of(submit_requests(), sane_submit()), max_size=4),
                        min_size=1, max_size=3))
def test_submit_jobs(daemon, stub, batches):
    typed(stub.SubmitJobs, iter([pb.SubmitJobsRequest(jobs=b) for b in batches]))


@FUZZ
@given(job_id=st.one_of(st.integers(0, 60), int64), rid=request_ids)
def test_cancel_get_and_checkpoint_done(daemon, stub, job_id, rid):
    typed(stub.GetJob, pb.GetJobRequest(job_id=job_id))
    typed(stub.CheckpointDone, pb.CheckpointDoneRequest(job_id=job_id, request_id=rid))
    typed(stub.CancelJob, pb.CancelJobRequest(job_id=job_id, request_id=rid))


@FUZZ
@given(request=list_requests())
def test_list_jobs(daemon, stub, request):
    typed(stub.ListJobs, request)


@FUZZ
@given(request=notice_requests())
def test_advance_notice(daemon, stub, request):
    typed(stub.AdvanceNotice, request)


@FUZZ
@given(request=ecc_requests())
def test_elastic_control(daemon, stub, request):
    typed(stub.ElasticControl, request)


@FUZZ
@given(request=clock_requests())
def test_clock(daemon, stub, request):
    typed(stub.AdvanceClock, request)
    typed(stub.Pause, pb.PauseRequest())
    typed(stub.Resume, pb.ResumeRequest())
    typed(stub.GetClock, pb.GetClockRequest())


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(from_seq=uint64, kinds=st.lists(texts, max_size=70), job_id=int64)
def test_watch_events(daemon, stub, from_seq, kinds, job_id):
    request = pb.WatchEventsRequest(from_seq=from_seq, kinds=kinds, job_id=job_id)
    call = stub.WatchEvents(request, timeout=0.3)
    try:
        for _ in call:
            pass
    except grpc.RpcError as err:  # a watch ends at its deadline when nothing is wrong
        assert err.code() in TYPED | {grpc.StatusCode.DEADLINE_EXCEEDED}, err


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=st.lists(st.one_of(
    st.tuples(st.just("SubmitJob"), sane_submit()),
    st.tuples(st.just("AdvanceClock"), clock_requests()),
    st.tuples(st.just("ElasticControl"), ecc_requests()),
    st.tuples(st.just("CancelJob"), st.builds(pb.CancelJobRequest,
                                              job_id=st.integers(1, 60))),
    st.tuples(st.just("AdvanceNotice"), notice_requests())), min_size=1, max_size=8))
def test_sequences_keep_the_engine_consistent(daemon, stub, calls):
    for method, request in calls:
        typed(getattr(stub, method), request)
    # Let the engine run what was accepted (a dead engine would hang here).
    assert typed(stub.AdvanceClock, pb.AdvanceClockRequest(by=2000)) in (
        grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT)  # past the 1e10 s limit


def test_zz_daemon_still_serving_and_consistent(daemon, stub):
    """After all of the above (file order: this runs last): SERVING, the invariants held
    after every event (--validate would have stopped the daemon), results readable."""
    serving(daemon)
    typed(stub.AdvanceClock, pb.AdvanceClockRequest(until_idle=True))
    typed(stub.GetCluster, pb.GetClusterRequest())
    typed(stub.GetResults, pb.GetResultsRequest())
    # Accepted times stop at MAX_TIME; jobs may run on past it by their durations.
    now = stub.GetClock(pb.GetClockRequest(), timeout=TIMEOUT).now
    assert 0 <= now <= limits.MAX_TIME + 100 * limits.MAX_DURATION
    jobs = stub.ListJobs(pb.ListJobsRequest(page_size=1000), timeout=TIMEOUT).jobs
    for job in jobs:  # every accepted job carries values the engine can compute with
        assert 0 < job.walltime <= limits.MAX_DURATION and 1 <= job.nodes <= 64, job
        assert 0 <= job.submit_time <= limits.MAX_TIME, job
    serving(daemon)
    assert '"engine failed"' not in daemon.log()
