"""The daemon's event stream: numbered events in a bounded ring, read by watchers.

Sequence numbers start at 1 in each daemon lifetime (`epoch` names the lifetime); a
watcher resumes by asking for the events from a sequence number on, as long as they are
still in the ring. The ring is columns, not objects: NumPy arrays for the numbers and
lists of references to the (shared) texts, about 55 bytes an event where a tuple per event
took about 240 (47 MB at the ring's 200,000 events, filled in the first 50,000 jobs; a
dict per event would have taken four times that).

A watcher (`WatchEvents`) is a cursor into the ring, not a copy: it reads the events after
its cursor when it can write them, so a stream that stalls holds no event of its own (one
used to copy the whole ring into a list and queue 50,000 more, about 45 MB a stream). What
bounds a stream is its *backlog*: the bytes of the events published since it opened that
it has not yet passed (counted at their encoded size, `event_bytes`). Past
`backlog_bytes` the stream is ended with a sentence naming the sequence number to resume
from (`Lagged`), as it is when its cursor falls out of the ring. A user may hold at most
`streams_per_user` streams at once (`TooManyStreams`).

Every event is emitted after the state change it announces is in the journal (the engine
host journals an iteration's progress before it emits the iteration's events), so an
event a watcher has seen is never taken back by a restart.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np

Event = dict[str, Any]
# (seq, time, kind, job_id, state, cause, nodes, bytes published before this event)
Row = tuple[int, float, str, int, str, str, int, int]

EVENT_RING = 200_000  # SCHEDD_EVENT_RING: events kept for resumption
BACKLOG_BYTES = 4 * 1024 * 1024  # SCHEDD_WATCH_BACKLOG_BYTES: about 80,000 events
STREAMS_PER_USER = 8  # SCHEDD_WATCH_STREAMS_PER_USER
BATCH_EVENTS = 4096  # events in one message of a batched stream (WatchEventsRequest.batch)
BATCH_WAIT = 0.05  # seconds a batched stream gathers events after a short batch


def event_bytes(seq: int, kind: str, job_id: int, state: str, cause: str, nodes: int,
                epoch: str) -> int:
    """The size of an event as WatchEvents encodes it (protobuf `Event`): one tag byte per
    field, varints, the double, the texts (counted in characters; they are ASCII but for
    a refusal's reason), and a few bytes of gRPC framing."""
    size = 5 + 1 + _varint(seq) + 9 + 2 + len(kind) + 2 + len(epoch)
    if job_id:
        size += 1 + _varint(job_id if job_id > 0 else job_id + (1 << 64))
    if state:
        size += 2
    if cause:
        size += 1 + _varint(len(cause)) + len(cause)
    if nodes:
        size += 1 + _varint(nodes if nodes > 0 else nodes + (1 << 64))
    return size


def _varint(n: int) -> int:
    return max(1, (n.bit_length() + 6) // 7)


class Lagged(Exception):
    """A watcher that fell too far behind: ended, with the sequence number to resume at."""

    def __init__(self, message: str, resume_at: int):
        super().__init__(message)
        self.resume_at = resume_at


class Closed(Exception):
    """The daemon is stopping: every watcher ends, told where to resume."""


class TooManyStreams(Exception):
    """A user already holds as many streams as one user may."""


class Watcher:
    """One stream's place in the ring: the next sequence number it will read, and the
    bytes published before it opened (what came before is not its backlog)."""

    __slots__ = ("user", "next_seq", "opened_at", "writing", "since", "task", "cut")

    def __init__(self, user: str, next_seq: int, opened_at: int):
        self.user = user
        self.next_seq = next_seq
        self.opened_at = opened_at
        self.writing = 0  # the first event of the message being written (0: none)
        self.since = 0.0  # when that write began (time.monotonic)
        self.task: asyncio.Task[Any] | None = None  # the stream's handler
        self.cut: Lagged | None = None  # why it was ended while its write waited


class EventLog:
    def __init__(self, cluster: str, capacity: int = EVENT_RING, *,
                 backlog_bytes: int = BACKLOG_BYTES,
                 streams_per_user: int = STREAMS_PER_USER):
        self.cluster = cluster
        self.epoch = uuid.uuid4().hex[:8]
        self.capacity = capacity
        self.backlog_bytes = backlog_bytes
        self.streams_per_user = streams_per_user
        # A ring by sequence number: event `seq` sits at seq % capacity (O(1) to reach any
        # kept event, which a deque is not), one column per field.
        self._time = np.zeros(capacity, np.float64)
        self._job = np.zeros(capacity, np.int64)
        self._nodes = np.zeros(capacity, np.int64)
        self._start = np.zeros(capacity, np.int64)  # bytes published before the event
        self._kind: list[str] = [""] * capacity
        self._state: list[str] = [""] * capacity
        self._cause: list[str] = [""] * capacity
        self._seq = 0
        self._bytes = 0  # bytes of every event published so far
        self._listeners: list[tuple[frozenset[str] | None, Callable[[Event], None]]] = []
        self._streams: dict[str, int] = {}  # user -> open streams
        self._watchers: set[Watcher] = set()
        self._changed: asyncio.Future[None] | None = None
        self._closed = False
        self.cut_off = 0  # streams ended for their backlog (schedd_watch_cutoffs_total)

    @property
    def last_seq(self) -> int:
        return self._seq

    @property
    def oldest_seq(self) -> int:
        return max(1, self._seq - self.capacity + 1)

    @property
    def watchers(self) -> int:
        return len(self._watchers)

    def streams(self) -> list[Watcher]:
        return list(self._watchers)

    def add_listener(self, listener: Callable[[Event], None],
                     kinds: frozenset[str] | None = None) -> None:
        """Called synchronously for each event (the MQTT bus and the metrics use this), or
        only for events of `kinds` when given: an event nobody listens to is only put in
        the ring, without building its dict (a stream of 20,000 submissions makes 20,000
        "submitted" events the metrics do not count)."""
        self._listeners.append((kinds, listener))

    def emit(self, time: float, kind: str, job_id: int = 0, state: str = "", cause: str = "",
             nodes: int = 0) -> None:
        self._seq = seq = self._seq + 1
        i = seq % self.capacity
        self._time[i] = time
        self._job[i] = job_id
        self._nodes[i] = nodes
        self._start[i] = self._bytes
        self._kind[i], self._state[i], self._cause[i] = kind, state, cause
        self._bytes += event_bytes(seq, kind, job_id, state, cause, nodes, self.epoch)
        event: Event | None = None
        for kinds, listener in self._listeners:
            if kinds is None or kind in kinds:
                if event is None:
                    event = self.event((seq, time, kind, job_id, state, cause, nodes, 0))
                listener(event)
        changed = self._changed
        if changed is not None:  # watchers wait on it: wake them all, once
            self._changed = None
            if not changed.done():
                changed.set_result(None)

    def since(self, seq: int) -> list[Event]:
        """Events with sequence number >= seq still in the ring (for tests and tools: a
        stream reads with `read`, a few at a time)."""
        return [self.event(row) for row in self.rows(max(seq, self.oldest_seq), self._seq)]

    def rows(self, first: int, last: int) -> list[Row]:
        """The kept events first..last, as tuples (a column slice at a time)."""
        rows: list[Row] = []
        cap = self.capacity
        seq = first
        while seq <= last:
            i = seq % cap
            n = min(last - seq + 1, cap - i)
            rows.extend(zip(range(seq, seq + n), self._time[i:i + n].tolist(),
                            self._kind[i:i + n], self._job[i:i + n].tolist(),
                            self._state[i:i + n], self._cause[i:i + n],
                            self._nodes[i:i + n].tolist(), self._start[i:i + n].tolist(),
                            strict=True))
            seq += n
        return rows

    def event(self, row: Row) -> Event:
        seq, time, kind, job_id, state, cause, nodes, _ = row
        return {"seq": seq, "time": time, "kind": kind, "job_id": job_id, "state": state,
                "cause": cause, "nodes": nodes, "cluster": self.cluster, "epoch": self.epoch}

    # ------------------------------------------------------------------ watchers
    def watch(self, user: str = "", from_seq: int = 0) -> Watcher:
        """A cursor at `from_seq` (0: the next event). Raises TooManyStreams when `user`
        already holds `streams_per_user` streams, Closed once the daemon is stopping."""
        if self._closed:
            raise Closed()
        held = self._streams.get(user, 0)
        if held >= self.streams_per_user:
            raise TooManyStreams(
                f"{user or 'this caller'} already has {held} WatchEvents streams open, the "
                f"most one user may hold (SCHEDD_WATCH_STREAMS_PER_USER); close one (or "
                "filter one stream by kind or job) and try again")
        self._streams[user] = held + 1
        watcher = Watcher(user, from_seq or self._seq + 1, self._bytes)
        self._watchers.add(watcher)
        return watcher

    def unwatch(self, watcher: Watcher) -> None:
        if watcher in self._watchers:
            self._watchers.discard(watcher)
            left = self._streams[watcher.user] - 1
            if left:
                self._streams[watcher.user] = left
            else:
                del self._streams[watcher.user]

    def backlog(self, watcher: Watcher) -> int:
        """Bytes published since the watcher opened that it has not read yet."""
        if watcher.next_seq > self._seq:
            return 0
        if watcher.next_seq < self.oldest_seq:
            return self._bytes - watcher.opened_at
        start = int(self._start[watcher.next_seq % self.capacity])
        return self._bytes - max(start, watcher.opened_at)

    def read(self, watcher: Watcher, limit: int = 256) -> list[Row]:
        """Up to `limit` events after the watcher's cursor (moving it on), or [] when it
        has read everything. Raises Lagged when its backlog is over `backlog_bytes` or its
        next event has left the ring, Closed once the daemon is stopping."""
        span = self.claim(watcher, limit)
        return self.rows(*span) if span else []

    def claim(self, watcher: Watcher, limit: int) -> tuple[int, int] | None:
        """As `read`, but the sequence numbers (first, last) of the events, or None: a
        stream whose events are already encoded for another stream needs no rows."""
        if self._closed:
            raise Closed()
        first = watcher.next_seq
        if first > self._seq:
            return None
        self.check(watcher, first)
        last = min(self._seq, first + limit - 1)
        watcher.next_seq = last + 1
        return first, last

    def check(self, watcher: Watcher, resume: int, on_its_way: bool = False) -> None:
        """Raises Lagged when the watcher's backlog is over `backlog_bytes` or its next
        event has left the ring; `resume` is the first event it may not have. A stream
        whose write is stalled (`on_its_way`) is told to resume from the first event of
        the message on its way, which may still reach it: events again, never a gap."""
        first = watcher.next_seq
        behind = self.backlog(watcher)
        if first < self.oldest_seq or behind > self.backlog_bytes:
            self.cut_off += 1
            why = (f"fell {behind:,} bytes of events behind, more than the "
                   f"{self.backlog_bytes:,} a stream may (SCHEDD_WATCH_BACKLOG_BYTES)"
                   if first >= self.oldest_seq else
                   f"fell behind the {self.capacity:,} events the daemon keeps")
            where = (f"while event {resume} was on its way (if it reached you, skip it)"
                     if on_its_way else f"after event {resume - 1}")
            raise Lagged(f"this event stream {why}; it was ended {where}: resume with "
                         f"from_seq={resume} (schedctl watch --from {resume})", resume)

    async def changed(self) -> None:
        """Returns once an event was published (or the log was closed)."""
        if self._closed:
            return
        if self._changed is None:
            self._changed = asyncio.get_running_loop().create_future()
        await asyncio.shield(self._changed)

    def close(self) -> None:
        """The daemon is stopping: every stream's next read raises Closed."""
        self._closed = True
        changed, self._changed = self._changed, None
        if changed is not None and not changed.done():
            changed.set_result(None)
