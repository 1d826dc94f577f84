"""Back-pressure: with more requests waiting for the journal than SCHEDD_MAX_WAITING, the
daemon refuses new ones with RESOURCE_EXHAUSTED, a sentence and a `retry-after-ms` hint,
and journals none of them; every acknowledged one is journalled (a real daemon on
loopback with a tiny bound, a burst of concurrent submissions)."""

from __future__ import annotations

import asyncio
import sqlite3
import urllib.request
from pathlib import Path

import grpc
from daemon_proc import DaemonProc, serve_with_env

from schedd.v1 import scheduler_pb2 as pb
from schedd.v1 import scheduler_pb2_grpc as pb_grpc

BURST = 400


async def burst(address: str, ids: list[int]) -> tuple[set[int], list[grpc.aio.AioRpcError]]:
    """All `ids` submitted at once (explicit job ids); accepted ids and refusals."""
    async with grpc.aio.insecure_channel(address) as channel:
        stub = pb_grpc.SchedulerStub(channel)

        async def one(i: int) -> int | grpc.aio.AioRpcError:
            try:
                r = await stub.SubmitJob(pb.SubmitJobRequest(
                    job_id=i, nodes=1, walltime=100, request_id=f"r{i}"), timeout=60)
            except grpc.aio.AioRpcError as err:
                return err
            assert r.job_id == i
            return i

        out = await asyncio.gather(*(one(i) for i in ids))
    return ({x for x in out if isinstance(x, int)},
            [x for x in out if not isinstance(x, int)])


def listed(stub: pb_grpc.SchedulerStub) -> set[int]:
    jobs = stub.ListJobs(pb.ListJobsRequest(page_size=1000), timeout=10).jobs
    return {j.job_id for j in jobs}


def journalled(db: Path) -> list[int]:
    with sqlite3.connect(db) as con:
        return [int(i) for (i,) in con.execute(
            "SELECT json_extract(body, '$.id') FROM stimuli WHERE kind = 'submit' "
            "ORDER BY seq")]


def test_a_full_journal_queue_refuses_with_a_retry_hint_and_journals_nothing_refused(
        tmp_path: Path) -> None:
    db = tmp_path / "journal.sqlite"
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:16", "--state-db", str(db),
                    env={"SCHEDD_MAX_WAITING": "2"}, metrics=True) as d:
        accepted, refusals = asyncio.run(burst(d.address, list(range(1, BURST + 1))))
        print(f"{len(accepted)} accepted, {len(refusals)} refused at once")
        assert accepted and refusals, (len(accepted), len(refusals))
        for err in refusals:
            assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err
            assert "waiting for the journal (at most 2); nothing was recorded, retry in" \
                in err.details(), err.details()
            hint = dict(err.trailing_metadata() or ())["retry-after-ms"]
            assert int(hint) >= 10 and f"retry in {hint} ms" in err.details()
        stub = d.stub()
        assert listed(stub) == accepted  # nothing refused is known, all acknowledged are
        metrics = urllib.request.urlopen(
            f"http://127.0.0.1:{d.metrics_port}/metrics", timeout=10).read().decode()
        assert f"schedd_busy_refusals_total {float(len(refusals))}" in metrics
        # Retried after the hint, the refused ones go in (the first answer of a request id
        # that was refused is not remembered: a retry is a fresh request).
        left = sorted(set(range(1, BURST + 1)) - accepted)
        for _ in range(50):
            if not left:
                break
            ok, again = asyncio.run(burst(d.address, left))
            accepted |= ok
            left = sorted(set(left) - ok)
        assert accepted == set(range(1, BURST + 1))
        assert listed(stub) == accepted
    order = journalled(db)
    assert sorted(order) == list(range(1, BURST + 1))  # each exactly once


def test_the_bound_must_be_a_whole_number(tmp_path: Path) -> None:
    r = serve_with_env(tmp_path / "j.sqlite", {"SCHEDD_MAX_WAITING": "lots"})
    assert r.returncode == 2
    assert r.stderr.strip() == ("schedd: error: SCHEDD_MAX_WAITING must be a whole number "
                                "from 1 to 10^9, not 'lots'")


def test_known_ids_skip_the_store_above_its_largest_id_and_follow_moves(
        tmp_path: Path) -> None:
    """KnownIds asks the results store only for ids at or below the largest stored one;
    a job that moves to the store later (discard, as on_stored does) is still found."""
    from schedd.daemon.journal import Journal, Progress
    from schedd.daemon.stored import KnownIds

    def finished(job_id: int) -> tuple[int, str, str, int, str, str]:
        return (job_id, "completed", "B", 0, "", "{}")

    journal = Journal(str(tmp_path / "j.sqlite"))
    try:
        journal.mark_now(Progress([], [], 0.0, 0.0, [finished(7)]))
        ids = KnownIds({3}, journal)
        assert 3 in ids and 7 in ids and 8 not in ids and 5 not in ids
        ids.add(12)
        journal.mark_now(Progress([], [], 1.0, 1.0, [finished(12)]))
        ids.discard(12)  # moved to the store
        assert 12 in ids and 11 not in ids and 13 not in ids
        # The assigned-id cursor skips live and stored ids alike, as `in` says.
        ids.update({4, 5, 8})
        assert [ids.first_free(c) for c in (1, 3, 6, 7, 11, 12, 13)] == [1, 6, 6, 9, 11, 13, 13]
        assert all(ids.first_free(c) == next(k for k in range(c, 99) if k not in ids)
                   for c in range(1, 20))
    finally:
        journal.close()


def test_ids_in_use_give_the_first_free_id() -> None:
    from schedd.daemon.stored import IdsInUse

    ids = IdsInUse({1, 2, 3, 5})
    assert [ids.first_free(c) for c in (1, 4, 5, 6)] == [4, 4, 6, 6]
