"""Watchers that stall (issue 34, item 4): a WatchEvents stream is a cursor into the event
ring, not a copy of it, so stalled streams keep the daemon's memory flat; a stream that
falls more than SCHEDD_WATCH_BACKLOG_BYTES behind is ended with RESOURCE_EXHAUSTED and the
sequence number to resume from; one user holds at most SCHEDD_WATCH_STREAMS_PER_USER
streams. Against a real daemon on loopback, its memory read from /proc."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import grpc
import pytest
from daemon_proc import DaemonProc, metric_value, read_events, rss_kb, wait_until

from schedd.daemon.eventlog import EventLog, Lagged, TooManyStreams, event_bytes
from schedd.v1 import scheduler_pb2 as pb
from schedd.v1 import scheduler_pb2_grpc as pb_grpc

WATCHERS = 50
BACKLOG = 64 * 1024


def lublin(path: Path, jobs: int, seed: int) -> Path:
    subprocess.run([sys.executable, "-m", "schedd", "workload", "lublin", "--jobs", str(jobs),
                    "--seed", str(seed), "-o", str(path)], check=True, capture_output=True)
    return path


def replay(d: DaemonProc, trace: Path, out: Path) -> None:
    subprocess.run([sys.executable, "-m", "schedd_clients.replay", str(trace), "--server",
                    d.address, "--lockstep", "--no-progress", "--no-compare", "-o", str(out)],
                   check=True, capture_output=True, timeout=600)


def stalled_watcher(address: str) -> tuple[grpc.Channel, grpc.Future]:
    """A stream from the oldest event that reads one event and stops reading. Its own
    connection (a shared one would stall every stream of it at once) with a fixed 64 KiB
    flow-control window (no BDP probing), so the daemon can send it only so much."""
    channel = grpc.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1),
                                                      ("grpc.http2.bdp_probe", 0)])
    call = pb_grpc.SchedulerStub(channel).WatchEvents(pb.WatchEventsRequest(from_seq=1),
                                                      timeout=600)
    next(call)
    return channel, call


def test_fifty_stalled_watchers_keep_memory_flat_and_are_cut_off(tmp_path: Path) -> None:
    first = lublin(tmp_path / "a.swf", 4000, 1)
    second = lublin(tmp_path / "b.swf", 4000, 2)
    env = {"SCHEDD_WATCH_BACKLOG_BYTES": str(BACKLOG),
           "SCHEDD_WATCH_STREAMS_PER_USER": str(WATCHERS + 2)}
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:320", "--policy", "easy",
                    "--state-db", str(tmp_path / "j.sqlite"), env=env, timeout=60,
                    metrics=True) as d:
        replay(d, first, tmp_path / "out1")  # fills the ring: about 16,000 events
        baseline = rss_kb(d.proc.pid)
        oldest_events = d.stub().GetCluster(pb.GetClusterRequest()).finished
        assert oldest_events == 4000
        watchers = [stalled_watcher(d.address) for _ in range(WATCHERS)]
        replay(d, second, tmp_path / "out2")  # 16,000 more events none of them reads
        grown = rss_kb(d.proc.pid) - baseline
        # Each stream used to copy the ring into a list of dicts (about 8 MB each here,
        # 400 MB for fifty) and queue every live event; now they hold their place only.
        assert grown < baseline // 2, (grown, baseline)
        # The daemon ends them itself, none of them reading: a stalled write is checked.
        wait_until("the daemon to end the stalled streams",
                   lambda: metric_value(d, "schedd_watch_streams") == 0)
        assert metric_value(d, "schedd_watch_cutoffs_total") == WATCHERS
        for channel, call in watchers:
            last = 0
            with pytest.raises(grpc.RpcError) as ended:
                for event in call:  # what was on its way, then the status
                    last = event.seq
            assert ended.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, ended.value
            details = ended.value.details()
            # From the event that was on its way when it was ended: again if it came.
            resume = int(re.search(r"resume with from_seq=(\d+)", details).group(1))
            assert resume in (last, last + 1), (last, details)
            assert (f"ended while event {resume} was on its way" in details
                    or f"ended after event {last}:" in details), details
            assert "SCHEDD_WATCH_BACKLOG_BYTES" in details
            channel.close()
        scrape = d.stub().GetCluster(pb.GetClusterRequest())  # still serving
        assert scrape.finished == 8000


def test_one_user_holds_a_bounded_number_of_streams(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("tok-alice user alice\ntok-bob user bob\n")
    with DaemonProc("--clock", "lockstep", "--tokens", str(tokens),
                    env={"SCHEDD_WATCH_STREAMS_PER_USER": "2"}) as d:
        stub = d.stub()
        alice = (("authorization", "Bearer tok-alice"),)
        stub.SubmitJob(pb.SubmitJobRequest(nodes=1, walltime=60), metadata=alice)

        def open_stream(token: str) -> grpc.Future:
            """A stream that has read the first event (so the daemon holds it open)."""
            call = stub.WatchEvents(pb.WatchEventsRequest(from_seq=1), timeout=60,
                                    metadata=(("authorization", f"Bearer {token}"),))
            next(call)
            return call

        held = [open_stream("tok-alice"), open_stream("tok-alice")]
        with pytest.raises(grpc.RpcError) as refused:
            open_stream("tok-alice")
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert re.search(r"alice already has 2 WatchEvents streams open, the most one "
                         r"user may hold \(SCHEDD_WATCH_STREAMS_PER_USER\); close one",
                         refused.value.details())
        bob = open_stream("tok-bob")  # another user is not affected
        held[0].cancel()
        again = wait_until("alice's stream slot to be free", lambda: _try_open(open_stream))
        for call in (held[1], bob, again):
            call.cancel()


def _try_open(open_stream: Any) -> grpc.Future | None:
    try:
        return open_stream("tok-alice")
    except grpc.RpcError as err:  # the daemon sees the cancellation a moment later
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        return None


def test_event_log_bounds_a_stream_by_the_bytes_behind_it() -> None:
    log = EventLog("c", capacity=1000, backlog_bytes=400, streams_per_user=1)
    for i in range(50):  # before the stream opened: not its backlog
        log.emit(float(i), "queued", i + 1, "queued", "submit", 1)
    w = log.watch("u", from_seq=1)
    with pytest.raises(TooManyStreams):
        log.watch("u")
    assert [r[0] for r in log.read(w, 10)] == list(range(1, 11))
    size = event_bytes(51, "started", 1, "running", "decision:start", 1, log.epoch)
    assert size == len(pb.Event(seq=51, time=1.5, kind="started", job_id=1,
                                state=pb.JOB_STATE_RUNNING, cause="decision:start",
                                nodes=1, epoch=log.epoch).SerializeToString()) + 5
    n = 400 // size + 1
    for _ in range(n):
        log.emit(60.0, "started", 1, "running", "decision:start", 1)
    assert log.backlog(w) == n * size > 400
    with pytest.raises(Lagged) as lagged:
        log.read(w)
    assert lagged.value.resume_at == 11
    assert "resume with from_seq=11 (schedctl watch --from 11)" in str(lagged.value)
    log.unwatch(w)
    log.watch("u")  # its place is free again


def accelerated_replay(d: DaemonProc, trace: Path, out: Path) -> None:
    subprocess.run([sys.executable, "-m", "schedd_clients.replay", str(trace), "--server",
                    d.address, "--no-progress", "--no-compare", "-o", str(out)],
                   check=True, capture_output=True, timeout=600)


class Reader(threading.Thread):
    """One WatchEvents stream from the first event, kept in order: (seq, time, kind,
    job_id, state, cause, nodes) per event, and the number of messages it came in."""

    def __init__(self, address: str, batch: bool, kinds: tuple[str, ...] = ()):
        super().__init__(daemon=True)
        self.channel = grpc.insecure_channel(address,
                                             options=[("grpc.use_local_subchannel_pool", 1)])
        self.call = pb_grpc.SchedulerStub(self.channel).WatchEvents(
            pb.WatchEventsRequest(from_seq=1, batch=batch, kinds=kinds), timeout=600)
        self.events: list[tuple[Any, ...]] = []
        self.messages = 0
        self.nested = 0  # `more` entries that carried a `more` of their own
        self.error: grpc.RpcError | None = None
        self.start()

    def run(self) -> None:
        try:
            for message in self.call:
                self.messages += 1
                for e in (message, *message.more):
                    self.nested += e is not message and len(e.more) > 0
                    self.events.append((e.seq, e.time, e.kind, e.job_id, e.state, e.cause,
                                        e.nodes))
        except grpc.RpcError as err:
            self.error = err

    def stop(self) -> None:
        self.call.cancel()
        self.join(30)
        self.channel.close()


def test_every_watcher_gets_every_event_in_order_batched_or_not(tmp_path: Path) -> None:
    """Watchers of every event, one event a message or batched, and filtered ones, on a
    daemon during an accelerated replay: each gets exactly what a reader of the whole
    stream afterwards gets, in order, without a gap; a batch is one message of many."""
    trace = lublin(tmp_path / "a.swf", 1500, 3)
    with DaemonProc("--clock", "accelerated", "--speedup", "1000000", "--cluster",
                    "nodes:320", "--policy", "easy", "--state-db", str(tmp_path / "j.sqlite"),
                    env={"SCHEDD_WATCH_STREAMS_PER_USER": "16"}, metrics=True,
                    timeout=60) as d:
        plain = [Reader(d.address, batch=False) for _ in range(3)]
        batched = [Reader(d.address, batch=True) for _ in range(3)]
        finished = [Reader(d.address, batch=b, kinds=("completed",)) for b in (False, True)]
        wait_until("the streams to open",
                   lambda: metric_value(d, "schedd_watch_streams") == 8)
        accelerated_replay(d, trace, tmp_path / "out")
        last = int(metric_value(d, "schedd_event_seq"))
        whole = [(e.seq, e.time, e.kind, e.job_id, e.state, e.cause, e.nodes)
                 for e in read_events(d.stub(), pb.WatchEventsRequest(from_seq=1), last,
                                      timeout=120)]
        assert [e[0] for e in whole] == list(range(1, last + 1))
        done = [e for e in whole if e[2] == "completed"]
        assert len(done) == 1500
        wait_until("every watcher to have every event", lambda: all(
            len(r.events) >= last for r in plain + batched) and all(
            len(r.events) >= len(done) for r in finished), timeout=120)
        for r in plain + batched + finished:
            r.stop()
        for r in plain + batched:
            assert r.events == whole
        for r in finished:
            assert r.events == done
        for r in plain:
            assert r.messages == last  # one event a message, as before
        for r in batched + finished[1:]:
            assert r.nested == 0
            assert r.messages < len(r.events)  # at least one message carried several
        assert d.stub().GetCluster(pb.GetClusterRequest()).finished == 1500


def test_a_batched_watcher_that_stops_reading_is_cut_off_and_others_go_on(
        tmp_path: Path) -> None:
    trace = lublin(tmp_path / "a.swf", 4000, 4)
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:320", "--policy", "easy",
                    "--state-db", str(tmp_path / "j.sqlite"), metrics=True,
                    env={"SCHEDD_WATCH_BACKLOG_BYTES": str(4 * BACKLOG)},
                    timeout=60) as d:
        channel = grpc.insecure_channel(d.address, options=[
            ("grpc.use_local_subchannel_pool", 1), ("grpc.http2.bdp_probe", 0)])
        stalled = pb_grpc.SchedulerStub(channel).WatchEvents(
            pb.WatchEventsRequest(from_seq=1, batch=True), timeout=600)
        reader = Reader(d.address, batch=True)
        wait_until("the streams to open", lambda: metric_value(d, "schedd_watch_streams") == 2)
        replay(d, trace, tmp_path / "out")  # about 16,000 events, far more than 256 KiB
        last = int(metric_value(d, "schedd_event_seq"))
        wait_until("the reading watcher to have every event",
                   lambda: len(reader.events) >= last or reader.error, timeout=120)
        assert reader.error is None, reader.error
        reader.stop()
        assert [e[0] for e in reader.events] == list(range(1, last + 1))
        wait_until("the daemon to end the stalled stream, which has not read again",
                   lambda: metric_value(d, "schedd_watch_streams") == 0)
        assert metric_value(d, "schedd_watch_cutoffs_total") == 1
        got = first_of_last = 0
        with pytest.raises(grpc.RpcError) as ended:
            for message in stalled:  # what was on the way, then the status
                first_of_last = message.seq
                got = message.more[-1].seq if message.more else message.seq
        assert ended.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, ended.value
        assert 0 < got < last
        details = ended.value.details()
        assert "fell " in details and "SCHEDD_WATCH_BACKLOG_BYTES" in details, details
        resume = int(re.search(r"resume with from_seq=(\d+)", details).group(1))
        assert resume in (first_of_last, got + 1), (first_of_last, got, details)
        channel.close()
        assert d.stub().GetCluster(pb.GetClusterRequest()).finished == 4000


def test_encoded_batches_parse_as_the_events_they_carry() -> None:
    """EncodedEvents: a span or a filtered batch is one Event whose `more` holds the rest,
    each equal to the event encoded alone; spans at different cursors share encodings."""
    from schedd.daemon.service import EncodedEvents

    log = EventLog("c", capacity=1000)
    for i in range(1, 301):
        log.emit(float(i), ("queued", "started", "completed")[i % 3], i, "queued",
                 "x" * (i % 200), i)
    enc = EncodedEvents(log, size=64)  # smaller than the log: slots are reused
    for first, last in ((1, 1), (3, 40), (10, 40), (250, 300), (2, 60)):
        message = pb.Event.FromString(enc.span(first, last))
        got = [message, *message.more]
        assert [e.seq for e in got] == list(range(first, last + 1))
        assert all(not e.more for e in message.more)
        alone = pb.Event()
        alone.CopyFrom(message)
        alone.ClearField("more")
        rows = log.rows(first, last)
        assert [e.SerializeToString() for e in (alone, *message.more)] == [
            enc.one(r) for r in rows]
        assert got[-1].cause == "x" * (last % 200) and got[0].epoch == log.epoch
    picked = [r for r in log.rows(100, 160) if r[2] == "completed"]
    message = pb.Event.FromString(enc.batch(picked))
    assert [e.seq for e in (message, *message.more)] == [r[0] for r in picked]
