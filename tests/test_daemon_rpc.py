"""Bad input for every RPC of a real `schedd serve`, and idempotency.

Each refusal must carry the documented status and one sentence naming the problem. One
lockstep daemon (nodes:64) is shared by the module; every test uses its own job ids (and a
`user` number of its own where it counts jobs), so the tests do not see each other's jobs.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator

import grpc
import pytest
from daemon_proc import DaemonProc, read_events
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from schedd.v1 import scheduler_pb2 as pb
from schedd.v1 import scheduler_pb2_grpc

TIMEOUT = 10.0
INVALID = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND = grpc.StatusCode.NOT_FOUND
PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION
EXISTS = grpc.StatusCode.ALREADY_EXISTS

# Explicit ids count down from 10**9: ids the daemon assigns (job_id 0) count up from the
# highest id in use, so the two never meet.
_ids = itertools.count(10**9, -1)
_users = itertools.count(70_000)


def new_id() -> int:
    return next(_ids)


def new_user() -> int:
    return next(_users)


# ---------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def daemon() -> Iterator[DaemonProc]:
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:64") as d:
        yield d


# ---------------------------------------------------------------------------- helpers
def assert_sentence(details: str | None) -> str:
    """A refusal's details: one short sentence, no traceback."""
    assert details, "no details"
    text = details.strip()
    assert "\n" not in text and "Traceback" not in text, text
    assert ". " not in text.rstrip("."), f"more than one sentence: {text!r}"
    assert len(text) < 300, text
    return text


def refused(call, request, code: grpc.StatusCode, *words: str, **kw) -> str:
    """Call, expect `code`; the details must be one sentence containing every word."""
    with pytest.raises(grpc.RpcError) as err:
        call(request, timeout=TIMEOUT, **kw)
    got = err.value
    assert got.code() == code, f"{got.code()}: {got.details()}"
    text = assert_sentence(got.details())
    for word in words:
        assert word.lower() in text.lower(), f"{word!r} not in {text!r}"
    return text


def job(job_id: int = 0, nodes: int = 1, walltime: float = 10.0, **kw) -> pb.SubmitJobRequest:
    return pb.SubmitJobRequest(job_id=job_id, nodes=nodes, walltime=walltime, **kw)


def submit(stub, job_id: int = 0, nodes: int = 1, walltime: float = 10.0,
           **kw) -> pb.SubmitJobResponse:
    return stub.SubmitJob(job(job_id, nodes, walltime, **kw), timeout=TIMEOUT)


def advance(stub, by: float = 1.0) -> pb.Clock:
    return stub.AdvanceClock(pb.AdvanceClockRequest(by=by), timeout=TIMEOUT)


def settle(stub) -> pb.Clock:
    """Run every job to its end (lockstep): the machine is empty afterwards."""
    return stub.AdvanceClock(pb.AdvanceClockRequest(until_idle=True), timeout=TIMEOUT)


def get(stub, job_id: int) -> pb.Job:
    return stub.GetJob(pb.GetJobRequest(job_id=job_id), timeout=TIMEOUT)


def absent(stub, job_id: int) -> None:
    refused(stub.GetJob, pb.GetJobRequest(job_id=job_id), NOT_FOUND, str(job_id))


def running_job(stub, walltime: float = 1000.0) -> int:
    """A job that runs now (on the emptied machine)."""
    settle(stub)
    job_id = new_id()
    submit(stub, job_id, nodes=2, walltime=walltime)
    advance(stub)
    assert get(stub, job_id).state == pb.JOB_STATE_RUNNING
    return job_id


def finished_job(stub) -> int:
    job_id = new_id()
    submit(stub, job_id, nodes=1, walltime=5)
    settle(stub)
    assert get(stub, job_id).state == pb.JOB_STATE_COMPLETED
    return job_id


def queued_job(stub) -> int:
    """A dedicated job waiting for its requested start far ahead: queued, not running."""
    job_id = new_id()
    now = stub.GetClock(pb.GetClockRequest(), timeout=TIMEOUT).now
    submit(stub, job_id, nodes=1, walltime=10, job_class=pb.JOB_CLASS_DEDICATED,
           requested_start=now + 1e6)
    advance(stub)
    assert get(stub, job_id).state == pb.JOB_STATE_QUEUED
    return job_id


def list_all(stub, **filters) -> list[pb.Job]:
    jobs: list[pb.Job] = []
    token = ""
    while True:
        page = stub.ListJobs(pb.ListJobsRequest(page_token=token, **filters), timeout=TIMEOUT)
        jobs.extend(page.jobs)
        token = page.next_page_token
        if not token:
            return jobs


# ---------------------------------------------------------------------------- SubmitJob
NAN, INF = math.nan, math.inf
BAD_SUBMISSIONS = [
    pytest.param(dict(nodes=0), ("nodes", "0"), id="nodes-0"),
    pytest.param(dict(nodes=-3), ("nodes", "-3"), id="nodes-negative"),
    pytest.param(dict(nodes=65), ("65", "64"), id="nodes-more-than-machine"),
    pytest.param(dict(walltime=0.0), ("walltime",), id="walltime-0"),
    pytest.param(dict(walltime=-5.0), ("walltime", "-5"), id="walltime-negative"),
    pytest.param(dict(walltime=NAN), ("walltime", "nan"), id="walltime-nan"),
    pytest.param(dict(walltime=INF), ("walltime", "inf"), id="walltime-inf"),
    pytest.param(dict(walltime=-INF), ("walltime",), id="walltime-minus-inf"),
    pytest.param(dict(runtime=-1.0), ("runtime", "-1"), id="runtime-negative"),
    pytest.param(dict(runtime=NAN), ("runtime",), id="runtime-nan"),
    pytest.param(dict(setup=-2.0), ("setup", "-2"), id="setup-negative"),
    pytest.param(dict(setup=INF), ("setup",), id="setup-inf"),
    pytest.param(dict(nodes=4, job_class=pb.JOB_CLASS_MALLEABLE, min_nodes=8),
                 ("min_nodes", "8"), id="malleable-min-above-nodes"),
    pytest.param(dict(nodes=4, job_class=pb.JOB_CLASS_MALLEABLE, min_nodes=-1),
                 ("min_nodes",), id="malleable-min-negative"),
    pytest.param(dict(nodes=4, min_nodes=2), ("min_nodes", "malleable"),
                 id="min-nodes-on-batch"),
    pytest.param(dict(job_class=pb.JOB_CLASS_DEDICATED), ("dedicated", "requested_start"),
                 id="dedicated-without-start"),
    pytest.param(dict(job_class=pb.JOB_CLASS_DEDICATED, requested_start=-10.0),
                 ("requested_start", "-10"), id="requested-start-negative"),
    pytest.param(dict(job_class=pb.JOB_CLASS_DEDICATED, requested_start=NAN),
                 ("requested_start",), id="requested-start-nan"),
    pytest.param(dict(job_class=99), ("class", "99"), id="unknown-class"),
    pytest.param(dict(submit_time=NAN), ("submit_time",), id="submit-time-nan"),
    pytest.param(dict(ckpt_interval=0.0), ("ckpt_interval",), id="ckpt-interval-0"),
    pytest.param(dict(ckpt_gb_per_node=-1.0), ("ckpt_gb_per_node",), id="ckpt-gb-negative"),
]


@pytest.mark.parametrize(("fields", "words"), BAD_SUBMISSIONS)
def test_submit_job_invalid(stub, fields, words):
    job_id = new_id()
    request = job(job_id, **{"nodes": 1, "walltime": 10.0, **fields})
    refused(stub.SubmitJob, request, INVALID, *words)
    absent(stub, job_id)  # nothing was created


def test_submit_job_negative_id(stub):
    refused(stub.SubmitJob, job(-7), INVALID, "job_id", "-7")


def test_submit_job_id_in_use(stub):
    job_id = new_id()
    submit(stub, job_id)
    refused(stub.SubmitJob, job(job_id, nodes=3), EXISTS, str(job_id))
    assert get(stub, job_id).nodes == 1  # the first one stands


def test_submit_job_zero_id_is_assigned(stub):
    a = submit(stub, 0, user=new_user())
    b = submit(stub, 0, user=new_user())
    assert a.job_id > 0 and b.job_id > 0 and a.job_id != b.job_id
    assert not a.duplicate and a.stimulus_id > 0
    assert get(stub, a.job_id).job_id == a.job_id
    refused(stub.SubmitJob, job(a.job_id), EXISTS, str(a.job_id))  # an assigned id is taken


def test_submit_job_request_id_is_idempotent(stub):
    user = new_user()
    request = job(0, nodes=2, walltime=30, user=user, request_id=f"rid-{user}")
    first = stub.SubmitJob(request, timeout=TIMEOUT)
    again = stub.SubmitJob(request, timeout=TIMEOUT)
    assert not first.duplicate and again.duplicate
    assert again.job_id == first.job_id and again.stimulus_id == first.stimulus_id
    assert again.submit_time == first.submit_time
    assert [j.job_id for j in list_all(stub, user=user)] == [first.job_id]  # one job only


def test_submit_job_request_id_reused_for_another_request(stub):
    rid = f"rid-other-{new_id()}"
    first = submit(stub, new_id(), request_id=rid)
    other = new_id()
    refused(stub.SubmitJob, job(other, request_id=rid), EXISTS, rid)
    absent(stub, other)
    again = submit(stub, first.job_id, request_id=rid)  # the original still answers
    assert again.duplicate and again.job_id == first.job_id


def test_submit_job_refused_request_id_stays_free(stub):
    rid = f"rid-refused-{new_id()}"
    refused(stub.SubmitJob, job(new_id(), nodes=0, request_id=rid), INVALID, "nodes")
    ok = submit(stub, new_id(), request_id=rid)  # a refusal does not consume the id
    assert not ok.duplicate


# ---------------------------------------------------------------------------- SubmitJobs
def batched(jobs):
    """A SubmitJobs stream of two jobs per message (positions run across messages)."""
    jobs = list(jobs)
    return iter([pb.SubmitJobsRequest(jobs=jobs[i:i + 2]) for i in range(0, len(jobs), 2)])


def test_submit_jobs_one_bad_job_rejects_the_stream(stub):
    ids = [new_id() for _ in range(5)]
    rids = [f"stream-bad-{i}" for i in ids]
    stream = [job(i, request_id=r) for i, r in zip(ids, rids, strict=True)]
    stream[2] = job(ids[2], nodes=0, request_id=rids[2])
    refused(stub.SubmitJobs, batched(stream), INVALID, "#3", "nodes")
    for job_id in ids:
        absent(stub, job_id)
    # the ids and the request ids of the refused stream are free again
    fixed = [job(i, request_id=r) for i, r in zip(ids, rids, strict=True)]
    out = stub.SubmitJobs(batched(fixed), timeout=TIMEOUT)
    assert out.accepted == 5 and out.duplicates == 0 and list(out.job_ids) == ids


def test_submit_jobs_bad_job_first_and_last(stub):
    for bad_at in (0, 2):
        ids = [new_id() for _ in range(3)]
        stream = [job(i) for i in ids]
        stream[bad_at] = job(ids[bad_at], walltime=-1)
        refused(stub.SubmitJobs, batched(stream), INVALID, f"#{bad_at + 1}", "walltime")
        for job_id in ids:
            absent(stub, job_id)


def test_submit_jobs_non_finite_names_index(stub):
    ids = [new_id() for _ in range(3)]
    stream = [job(i) for i in ids]
    stream[1] = job(ids[1], walltime=NAN)
    refused(stub.SubmitJobs, batched(stream), INVALID, "#2", "walltime")


def test_submit_jobs_id_used_twice_in_stream(stub):
    a, b = new_id(), new_id()
    refused(stub.SubmitJobs, batched([job(a), job(b), job(a)]), EXISTS, str(a))
    absent(stub, a)
    absent(stub, b)


def test_submit_jobs_request_id_twice_in_stream(stub):
    a, b = new_id(), new_id()
    rid = f"twice-{a}"
    refused(stub.SubmitJobs, batched([job(a, request_id=rid), job(b, request_id=rid)]), INVALID,
            "#2", rid)
    absent(stub, a)


def test_submit_jobs_empty_stream(stub):
    out = stub.SubmitJobs(batched([]), timeout=TIMEOUT)
    assert out.accepted == 0 and out.duplicates == 0 and not out.job_ids


def test_submit_jobs_hundred_then_replayed(stub):
    user = new_user()
    stream = [job(0, walltime=5, user=user, request_id=f"bulk-{user}-{k}") for k in range(100)]
    out = stub.SubmitJobs(batched(stream), timeout=TIMEOUT)
    assert out.accepted == 100 and out.duplicates == 0
    assert len(set(out.job_ids)) == 100
    jobs = list_all(stub, user=user)
    assert sorted(j.job_id for j in jobs) == sorted(out.job_ids)
    again = stub.SubmitJobs(batched(stream), timeout=TIMEOUT)
    assert again.accepted == 0 and again.duplicates == 100
    assert list(again.job_ids) == list(out.job_ids)
    assert len(list_all(stub, user=user)) == 100
    settle(stub)  # run them off so they do not crowd the other tests


def test_submit_jobs_request_id_reused_for_another_job(stub):
    rid = f"stream-reuse-{new_id()}"
    first = stub.SubmitJobs(batched([job(new_id(), request_id=rid)]), timeout=TIMEOUT)
    assert first.accepted == 1
    other = new_id()
    refused(stub.SubmitJobs, batched([job(other, nodes=7, request_id=rid)]), EXISTS, rid)


# ---------------------------------------------------------------------------- CancelJob
def test_cancel_unknown_job(stub):
    refused(stub.CancelJob, pb.CancelJobRequest(job_id=987_654_321), NOT_FOUND, "987654321")
    refused(stub.CancelJob, pb.CancelJobRequest(job_id=0), NOT_FOUND, "0")


def test_cancel_finished_job(stub):
    job_id = finished_job(stub)
    refused(stub.CancelJob, pb.CancelJobRequest(job_id=job_id), PRECONDITION, str(job_id),
            "completed")


def test_cancel_queued_job(stub):
    job_id = queued_job(stub)
    rid = f"cancel-{job_id}"
    out = stub.CancelJob(pb.CancelJobRequest(job_id=job_id, request_id=rid), timeout=TIMEOUT)
    assert out.job_id == job_id and out.stimulus_id > 0
    again = stub.CancelJob(pb.CancelJobRequest(job_id=job_id, request_id=rid), timeout=TIMEOUT)
    assert again.stimulus_id == out.stimulus_id  # idempotent retry
    advance(stub)
    done = get(stub, job_id)
    assert done.state == pb.JOB_STATE_CANCELLED and done.end_time >= 0
    refused(stub.CancelJob, pb.CancelJobRequest(job_id=job_id), PRECONDITION, "cancelled")


def test_cancel_running_job(stub):
    job_id = running_job(stub)
    stub.CancelJob(pb.CancelJobRequest(job_id=job_id), timeout=TIMEOUT)
    advance(stub)
    assert get(stub, job_id).state == pb.JOB_STATE_CANCELLED


# ---------------------------------------------------------------------------- GetJob
def test_get_unknown_job(stub):
    refused(stub.GetJob, pb.GetJobRequest(job_id=123_456_789), NOT_FOUND, "123456789")
    refused(stub.GetJob, pb.GetJobRequest(job_id=-1), NOT_FOUND, "-1")


# ---------------------------------------------------------------------------- ListJobs
@pytest.mark.parametrize(("request_fields", "words"), [
    pytest.param(dict(page_size=5000), ("page_size", "5000"), id="page-size-5000"),
    pytest.param(dict(page_size=1001), ("page_size", "1001"), id="page-size-1001"),
    pytest.param(dict(page_size=-1), ("page_size", "-1"), id="page-size-negative"),
    pytest.param(dict(page_token="abc"), ("page_token", "abc"), id="token-abc"),
    pytest.param(dict(page_token="-5"), ("page_token",), id="token-negative"),
    pytest.param(dict(states=[99]), ("state", "99"), id="state-99"),
    pytest.param(dict(states=[pb.JOB_STATE_QUEUED, 42]), ("state", "42"), id="state-42"),
    pytest.param(dict(classes=[99]), ("class", "99"), id="class-99"),
])
def test_list_jobs_invalid(stub, request_fields, words):
    refused(stub.ListJobs, pb.ListJobsRequest(**request_fields), INVALID, *words)


def test_list_jobs_paging(stub):
    user = new_user()
    ids = sorted(submit(stub, new_id(), user=user).job_id for _ in range(7))
    submit(stub, new_id(), user=new_user())  # not ours
    seen: list[int] = []
    token, pages = "", 0
    while True:
        page = stub.ListJobs(pb.ListJobsRequest(user=user, page_size=3, page_token=token),
                             timeout=TIMEOUT)
        pages += 1
        assert page.total == 7
        assert len(page.jobs) <= 3
        seen.extend(j.job_id for j in page.jobs)
        token = page.next_page_token
        if not token:
            break
        assert pages < 10, "paging does not end"
    assert pages == 3
    assert sorted(seen) == ids and len(seen) == len(set(seen))
    assert all(j.user == user for j in list_all(stub, user=user))
    owner = stub.ListJobs(pb.ListJobsRequest(user=user, owner="nobody-at-all"), timeout=TIMEOUT)
    assert owner.total == 0 and not owner.jobs


def test_list_jobs_state_filter(stub):
    job_id = queued_job(stub)
    queued = {j.job_id for j in list_all(stub, states=[pb.JOB_STATE_QUEUED])}
    assert job_id in queued
    running = {j.job_id for j in list_all(stub, states=[pb.JOB_STATE_RUNNING])}
    assert job_id not in running
    stub.CancelJob(pb.CancelJobRequest(job_id=job_id), timeout=TIMEOUT)


# ---------------------------------------------------------------------------- AdvanceNotice
def notice(job_id: int, arrival: float, nodes: int = 4, walltime: float = 100.0,
           **kw) -> pb.AdvanceNoticeRequest:
    return pb.AdvanceNoticeRequest(job_id=job_id, expected_arrival=arrival, nodes=nodes,
                                   walltime=walltime, **kw)


def test_advance_notice_invalid(stub):
    advance(stub, 5)
    now = stub.GetClock(pb.GetClockRequest(), timeout=TIMEOUT).now
    later = now + 500
    cases = [
        (notice(new_id(), now - 1), ("expected_arrival", "past")),
        (notice(new_id(), NAN), ("expected_arrival",)),
        (notice(new_id(), later, nodes=0), ("nodes", "0")),
        (notice(new_id(), later, nodes=-2), ("nodes", "-2")),
        (notice(new_id(), later, nodes=65), ("nodes", "65")),
        (notice(new_id(), later, walltime=0), ("walltime",)),
        (notice(new_id(), later, walltime=-3), ("walltime",)),
        (notice(new_id(), later, walltime=INF), ("walltime",)),
        (notice(0, later), ("job_id", "0")),
        (notice(-4, later), ("job_id", "-4")),
        (notice(new_id(), later, notice_time=NAN), ("notice_time",)),
    ]
    for request, words in cases:
        refused(stub.AdvanceNotice, request, INVALID, *words)


def test_advance_notice_for_arrived_job(stub):
    job_id = new_id()
    submit(stub, job_id)
    advance(stub)
    now = stub.GetClock(pb.GetClockRequest(), timeout=TIMEOUT).now
    refused(stub.AdvanceNotice, notice(job_id, now + 100), PRECONDITION, str(job_id),
            "arrived")


def test_advance_notice_valid(stub):
    job_id = new_id()
    now = stub.GetClock(pb.GetClockRequest(), timeout=TIMEOUT).now
    rid = f"notice-{job_id}"
    out = stub.AdvanceNotice(notice(job_id, now + 300, request_id=rid), timeout=TIMEOUT)
    assert out.stimulus_id > 0
    again = stub.AdvanceNotice(notice(job_id, now + 300, request_id=rid), timeout=TIMEOUT)
    assert again.stimulus_id == out.stimulus_id
    refused(stub.AdvanceNotice, notice(job_id, now + 999, request_id=rid), EXISTS, rid)
    events = read_events(stub, pb.WatchEventsRequest(from_seq=1, job_id=job_id,
                                                     kinds=["notice"]), 1)
    assert [e.kind for e in events] == ["notice"] and events[0].nodes == 4


def test_advance_notice_for_pending_job(stub):
    job_id = new_id()
    now = stub.GetClock(pb.GetClockRequest(), timeout=TIMEOUT).now
    submit(stub, job_id, job_class=pb.JOB_CLASS_ON_DEMAND, submit_time=now + 50)
    assert get(stub, job_id).state == pb.JOB_STATE_PENDING
    stub.AdvanceNotice(notice(job_id, now + 50), timeout=TIMEOUT)  # not arrived yet: fine


# ---------------------------------------------------------------------------- ElasticControl
def ecc(job_id: int, kind: int, amount: float, **kw) -> pb.ElasticControlRequest:
    return pb.ElasticControlRequest(job_id=job_id, kind=kind, amount=amount, **kw)


def test_elastic_control_invalid(stub):
    job_id = running_job(stub)
    cases = [
        (ecc(job_id, pb.ECC_KIND_UNSPECIFIED, 10), ("unknown", "type")),
        (ecc(job_id, 99, 10), ("unknown", "type", "99")),
        (ecc(job_id, pb.ECC_KIND_ET, 0), ("amount", "0")),
        (ecc(job_id, pb.ECC_KIND_RT, -5), ("amount", "-5")),
        (ecc(job_id, pb.ECC_KIND_ET, NAN), ("amount",)),
        (ecc(job_id, pb.ECC_KIND_EP, 1.5), ("EP", "1.5")),
        (ecc(job_id, pb.ECC_KIND_RP, 0.25), ("RP", "0.25")),
        (ecc(job_id, pb.ECC_KIND_ET, 10, time=INF), ("time",)),
    ]
    for request, words in cases:
        refused(stub.ElasticControl, request, INVALID, *words)
    assert get(stub, job_id).walltime == 1000  # nothing applied
    stub.CancelJob(pb.CancelJobRequest(job_id=job_id), timeout=TIMEOUT)


def test_elastic_control_unknown_and_finished(stub):
    refused(stub.ElasticControl, ecc(876_543_210, pb.ECC_KIND_ET, 10), NOT_FOUND,
            "876543210")
    job_id = finished_job(stub)
    refused(stub.ElasticControl, ecc(job_id, pb.ECC_KIND_ET, 10), PRECONDITION, str(job_id),
            "completed")


def test_elastic_control_refused_by_a_policy_without_ecc_processor():
    """Table III of the LOS paper: `los` has no ECC processor, `los-e` has one."""
    for policy, applies in (("los", False), ("los-e", True)):
        with DaemonProc("--clock", "lockstep", "--cluster", "nodes:64", "--policy", policy,
                        "--opt", "unit=1") as d, d.channel() as ch:
            s = scheduler_pb2_grpc.SchedulerStub(ch)
            job_id = running_job(s, walltime=1000)
            request = ecc(job_id, pb.ECC_KIND_ET, 100)
            if applies:
                s.ElasticControl(request, timeout=TIMEOUT)
                advance(s)
                assert get(s, job_id).walltime == pytest.approx(1100)
            else:
                refused(s.ElasticControl, request, PRECONDITION, "los", "ECC processor")
                assert get(s, job_id).walltime == 1000


def test_elastic_control_extends_running_job(stub):
    job_id = running_job(stub, walltime=1000)
    out = stub.ElasticControl(ecc(job_id, pb.ECC_KIND_ET, 100), timeout=TIMEOUT)
    assert out.stimulus_id > 0
    advance(stub)
    assert get(stub, job_id).walltime == pytest.approx(1100)
    events = read_events(stub, pb.WatchEventsRequest(from_seq=1, job_id=job_id,
                                                     kinds=["ecc"]), 1)
    assert len(events) == 1 and events[0].job_id == job_id and "ET" in events[0].cause
    stub.CancelJob(pb.CancelJobRequest(job_id=job_id), timeout=TIMEOUT)


# ---------------------------------------------------------------------------- CheckpointDone
def test_checkpoint_done(stub):
    refused(stub.CheckpointDone, pb.CheckpointDoneRequest(job_id=765_432_109), NOT_FOUND,
            "765432109")
    job_id = running_job(stub)
    refused(stub.CheckpointDone, pb.CheckpointDoneRequest(job_id=job_id), PRECONDITION,
            "was not asked to checkpoint")
    stub.CancelJob(pb.CancelJobRequest(job_id=job_id), timeout=TIMEOUT)
    advance(stub)
    refused(stub.CheckpointDone, pb.CheckpointDoneRequest(job_id=job_id), PRECONDITION,
            "was not asked to checkpoint")


# ---------------------------------------------------------------------------- WatchEvents
def test_watch_events_filters_and_from_seq(stub):
    job_id = new_id()
    submit(stub, job_id, walltime=3)
    settle(stub)
    mine = read_events(stub, pb.WatchEventsRequest(from_seq=1, job_id=job_id), 4)
    assert [e.kind for e in mine] == ["submitted", "queued", "started", "completed"]
    assert all(e.job_id == job_id for e in mine)
    seqs = [e.seq for e in mine]
    assert seqs == sorted(seqs) and len(set(seqs)) == 4
    assert len({e.epoch for e in mine}) == 1 and mine[0].epoch

    # from a sequence number past the ring's start: the stream starts exactly there
    tail = read_events(stub, pb.WatchEventsRequest(from_seq=seqs[2], job_id=job_id), 2)
    assert [e.seq for e in tail] == seqs[2:]
    later = read_events(stub, pb.WatchEventsRequest(from_seq=seqs[2]), 1)
    assert later[0].seq == seqs[2]

    started = read_events(stub, pb.WatchEventsRequest(from_seq=1, kinds=["started"]), 1000,
                          timeout=0.7)
    assert started and all(e.kind == "started" for e in started)
    assert job_id in {e.job_id for e in started}
    two = read_events(stub, pb.WatchEventsRequest(from_seq=1, kinds=["queued", "completed"],
                                                  job_id=job_id), 2)
    assert [e.kind for e in two] == ["queued", "completed"]
    assert not read_events(stub, pb.WatchEventsRequest(from_seq=1, kinds=["no-such-kind"]),
                           1, timeout=0.3)


def test_watch_events_new_only(stub):
    last = read_events(stub, pb.WatchEventsRequest(from_seq=1), 100_000, timeout=0.5)[-1].seq
    job_id = new_id()
    call = stub.WatchEvents(pb.WatchEventsRequest(from_seq=0, job_id=job_id), timeout=5)
    time.sleep(0.3)  # let the watch start before the job
    submit(stub, job_id)
    advance(stub)
    got: list[pb.Event] = []
    try:
        for event in call:
            got.append(event)
            if len(got) == 2:
                break
    finally:
        call.cancel()
    assert [e.kind for e in got] == ["submitted", "queued"]
    assert all(e.seq > last and e.job_id == job_id for e in got)


# ---------------------------------------------------------------------------- GetCluster
def test_get_cluster(stub):
    finished_job(stub)  # the counters below must not depend on which tests ran first
    settle(stub)
    info = stub.GetCluster(pb.GetClusterRequest(), timeout=TIMEOUT)
    assert info.total_nodes == 64 and info.max_job_nodes == 64
    assert info.cluster == "nodes:64" and info.name == "nodes-64"
    assert info.free_nodes == 64 and info.busy_nodes == 0
    assert info.down_nodes == 0 and info.utilisation == 0
    assert info.clock.mode == "lockstep" and info.clock.idle
    assert info.policy == "easy" and info.finished > 0
    assert not info.running_by_class
    job_id = running_job(stub)
    busy = stub.GetCluster(pb.GetClusterRequest(), timeout=TIMEOUT)
    assert busy.busy_nodes == 2 and busy.free_nodes + busy.busy_nodes == 64
    assert busy.utilisation == pytest.approx(2 / 64)
    assert [(c.job_class, c.jobs, c.nodes) for c in busy.running_by_class] == [
        (pb.JOB_CLASS_BATCH, 1, 2)]
    stub.CancelJob(pb.CancelJobRequest(job_id=job_id), timeout=TIMEOUT)
    settle(stub)


# ---------------------------------------------------------------------------- GetResults
def test_get_results(stub):
    ids = [new_id() for _ in range(3)]
    for job_id in ids:
        submit(stub, job_id, nodes=2, walltime=7)
    settle(stub)
    columns: dict[str, list[float]] = {}
    for chunk in stub.GetResults(pb.GetResultsRequest(), timeout=TIMEOUT):
        for col in chunk.columns:
            columns.setdefault(col.name, []).extend(col.values)
    assert {"id", "submit", "wait"} <= set(columns)
    lengths = {len(v) for v in columns.values()}
    assert len(lengths) == 1, {k: len(v) for k, v in columns.items()}
    finished = stub.GetCluster(pb.GetClusterRequest(), timeout=TIMEOUT).finished
    assert lengths.pop() == finished
    row = {int(v): i for i, v in enumerate(columns["id"])}
    assert set(ids) <= set(row)
    for job_id in ids:
        assert columns["wait"][row[job_id]] >= 0


# ---------------------------------------------------------------------------- clock
def test_advance_clock_invalid(stub):
    now = advance(stub, 5).now
    assert now >= 5
    refused(stub.AdvanceClock, pb.AdvanceClockRequest(to=now - 1), INVALID, "back")
    refused(stub.AdvanceClock, pb.AdvanceClockRequest(to=NAN), INVALID, "to")
    refused(stub.AdvanceClock, pb.AdvanceClockRequest(by=0), INVALID, "by", "0")
    refused(stub.AdvanceClock, pb.AdvanceClockRequest(by=-3), INVALID, "by", "-3")
    refused(stub.AdvanceClock, pb.AdvanceClockRequest(by=INF), INVALID, "by")
    refused(stub.AdvanceClock, pb.AdvanceClockRequest(), INVALID, "to", "by", "until_idle")
    refused(stub.AdvanceClock, pb.AdvanceClockRequest(until_idle=False), INVALID,
            "until_idle")
    assert stub.GetClock(pb.GetClockRequest(), timeout=TIMEOUT).now == now  # unmoved


def test_advance_clock_lockstep(stub):
    before = stub.GetClock(pb.GetClockRequest(), timeout=TIMEOUT)
    assert before.mode == "lockstep" and not before.paused
    to = stub.AdvanceClock(pb.AdvanceClockRequest(to=before.now + 10), timeout=TIMEOUT)
    assert to.now == before.now + 10 and to.engine_time == to.now
    job_id = new_id()
    submit(stub, job_id, walltime=50)
    idle = settle(stub)
    assert idle.idle and idle.engine_time == idle.now and idle.lag == 0
    assert get(stub, job_id).state == pb.JOB_STATE_COMPLETED
    assert idle.now >= to.now + 50


def test_pause_resume_lockstep(stub):
    refused(stub.Pause, pb.PauseRequest(), PRECONDITION, "lockstep")
    refused(stub.Resume, pb.ResumeRequest(), PRECONDITION, "lockstep")


@pytest.fixture(scope="module")
def accelerated() -> Iterator[scheduler_pb2_grpc.SchedulerStub]:
    with DaemonProc("--clock", "accelerated", "--speedup", "100",
                    "--cluster", "nodes:64") as d:
        ch = d.channel()
        yield scheduler_pb2_grpc.SchedulerStub(ch)
        ch.close()


def test_pause_resume_accelerated(accelerated):
    stub = accelerated
    paused = stub.Pause(pb.PauseRequest(), timeout=TIMEOUT)
    assert paused.paused and paused.mode == "accelerated" and paused.speedup == 100
    assert stub.Pause(pb.PauseRequest(), timeout=TIMEOUT).paused  # twice: still fine
    time.sleep(0.3)
    still = stub.GetClock(pb.GetClockRequest(), timeout=TIMEOUT)
    assert still.paused and still.now == paused.now
    resumed = stub.Resume(pb.ResumeRequest(), timeout=TIMEOUT)
    assert not resumed.paused
    time.sleep(0.3)
    moving = stub.GetClock(pb.GetClockRequest(), timeout=TIMEOUT)
    assert moving.now >= paused.now + 10  # 0.3 s x 100
    refused(stub.AdvanceClock, pb.AdvanceClockRequest(until_idle=True), PRECONDITION,
            "lockstep")
    jumped = stub.AdvanceClock(pb.AdvanceClockRequest(by=1000), timeout=TIMEOUT)
    assert jumped.now >= moving.now + 1000


# ---------------------------------------------------------------------------- ids at the edge
def test_job_ids_are_bounded_so_results_stay_exact():
    """Ids travel as exact doubles (GetResults): above 2**53 is refused; an explicit id at
    the top does not use up the ids the daemon assigns (they have their own cursor)."""
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:8") as d:
        stub = d.stub()
        with pytest.raises(grpc.RpcError) as err:
            submit(stub, 2**63 - 1)
        assert err.value.code() == INVALID and "job_id" in err.value.details()
        top = 2**53
        assert submit(stub, top).job_id == top
        assert submit(stub, 0).job_id == 1
        assert len(stub.ListJobs(pb.ListJobsRequest(), timeout=TIMEOUT).jobs) == 2


# ---------------------------------------------------------------------------- malformed bytes
def raw_submit(channel: grpc.Channel):
    return channel.unary_unary("/schedd.v1.Scheduler/SubmitJob",
                               request_serializer=None, response_deserializer=None)


def test_malformed_bytes_do_not_hurt(channel, stub):
    with pytest.raises(grpc.RpcError) as err:
        raw_submit(channel)(b"\xff\xff\xff", timeout=TIMEOUT)
    assert err.value.code() != grpc.StatusCode.OK
    stream = channel.stream_unary("/schedd.v1.Scheduler/SubmitJobs",
                                  request_serializer=None, response_deserializer=None)
    with pytest.raises(grpc.RpcError):
        stream(iter([b"\x08\x01", b"\xff\xff\xff"]), timeout=TIMEOUT)
    assert_healthy(channel)
    submit(stub, new_id())  # still takes jobs


def test_malformed_bytes_status(channel):
    with pytest.raises(grpc.RpcError) as err:
        raw_submit(channel)(b"\xff\xff\xff", timeout=TIMEOUT)
    assert err.value.code() in (grpc.StatusCode.INTERNAL, INVALID), err.value
    assert_sentence(err.value.details())
    assert "<class" not in (err.value.details() or "")


# ---------------------------------------------------------------------------- still healthy
def assert_healthy(channel: grpc.Channel) -> None:
    health = health_pb2_grpc.HealthStub(channel)
    for service in ("", "schedd.v1.Scheduler"):
        answer = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=TIMEOUT)
        assert answer.status == health_pb2.HealthCheckResponse.SERVING


def test_still_healthy_with_reflection(daemon, channel):
    assert daemon.proc.poll() is None
    assert_healthy(channel)
    reflect = reflection_pb2_grpc.ServerReflectionStub(channel)
    answers = list(reflect.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=TIMEOUT))
    names = {s.name for a in answers for s in a.list_services_response.service}
    assert "schedd.v1.Scheduler" in names
    assert "grpc.health.v1.Health" in names
    assert "Traceback" not in daemon.log()
