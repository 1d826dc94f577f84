"""`schedd-replay` (also `schedctl replay`): drive a running daemon with a trace.

Two ways to drive it:
* `--lockstep`: the daemon runs `--clock lockstep`; the client submits a window of jobs
  (with their trace submit times, ahead of the clock), sends the notices and elastic
  control commands due by the window's last submit time, then AdvanceClock to that time,
  and at the end AdvanceClock(until_idle). The engine sees exactly what `schedd simulate`
  feeds it, so jobs.swf is byte-identical.
* accelerated (default): jobs are submitted when the daemon's virtual clock reaches their
  (shifted) trace time, paced by `--speedup K` (default: the daemon's own). A job that
  reaches the daemon late gets a later submit time; the client measures this lag, and with
  `--compare` (default) runs `schedd simulate` in-process on the same trace and settings
  and reports how far the live run diverged.

Time: by default the trace's first submit time is mapped to the daemon's current virtual
time (a shift either way: a trace with Unix timestamps starts now, not in 53 years; with
`--lockstep` the clock jumps ahead for free, so the trace keeps its times unless the
daemon is already past them); `--at T` maps it to T instead and `--no-rebase` keeps the
trace's own times (a daemon started with `--start-time`). `--from/--until` (trace time)
and `--limit` select jobs. Before sending anything it prints one line: jobs, span,
speed-up, expected wall time.

Ids: jobs keep their trace numbers plus an offset that puts them above every id the
daemon already holds (0 on an empty daemon), checked by the daemon (ALREADY_EXISTS moves
the offset up for the jobs not yet sent), so a manual submission or another replay never
collides; the results name jobs by their trace numbers again.

Machine: the trace's MaxNodes/MaxProcs and largest job are checked against the daemon's
cluster; a mismatch is refused unless `--force` (jobs too large are then dropped and
counted).

Either way it waits until every job it submitted has finished, then writes DIR/jobs.swf,
DIR/jobs.csv and DIR/summary.json as `schedd simulate` does (summary.json gains a `replay`
section). Every submission carries a request id derived from the trace and job id, so a
retry after a lost connection or a daemon restart can neither lose nor duplicate a job.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from functools import partial
from typing import Any, TypeVar

import grpc
import numpy as np

from schedd.core.job import JobSpec
from schedd.core.results import COLUMNS
from schedd.suggest import SuggestingParser
from schedd.trace_options import add_trace_selection, procs_per_node_line
from schedd.v1 import scheduler_pb2 as pb

from .common import add_connection_arguments, aio_channel, metadata, rpc_error_text, stub
from .replay_status import Snapshot, Status

PB_CLASS = {"B": pb.JOB_CLASS_BATCH, "R": pb.JOB_CLASS_REALTIME, "O": pb.JOB_CLASS_ON_DEMAND,
            "M": pb.JOB_CLASS_MALLEABLE, "D": pb.JOB_CLASS_DEDICATED}
PB_ECC = {"ET": pb.ECC_KIND_ET, "RT": pb.ECC_KIND_RT, "EP": pb.ECC_KIND_EP,
          "RP": pb.ECC_KIND_RP}
T = TypeVar("T")


class ReplayError(RuntimeError):
    """The replay cannot go on (one sentence)."""


def build_parser() -> argparse.ArgumentParser:
    p = SuggestingParser(
        prog="schedd-replay",
        description="Replay an SWF/CWF trace into a running schedd daemon and write the same "
        "DIR/jobs.swf, jobs.csv and summary.json as `schedd simulate`.")
    p.add_argument("trace", nargs="?", default=None,
                   help="SWF or CWF trace (default: the bundled 1,000-job Lublin excerpt)")
    p.add_argument("-o", "--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--lockstep", action="store_true",
                   help="drive the daemon's lockstep clock (results equal `schedd simulate`)")
    p.add_argument("--speedup", type=float, default=None, metavar="K",
                   help="accelerated: trace seconds per wall second (default: the daemon's)")
    p.add_argument("--lead", type=float, default=5.0, metavar="S",
                   help="accelerated: send each job at least S wall seconds before its trace "
                   "time, stamped with that time (held pending until then), so that a "
                   "loaded machine's delays do not make it late; grows to 3x the slowest "
                   "submission seen (default 5; 0 = send when due, never grows)")
    p.add_argument("--window", type=int, default=500, metavar="N",
                   help="lockstep: jobs per window before each AdvanceClock (default 500)")
    p.add_argument("--at", type=float, default=None, metavar="T",
                   help="map the trace's first submit time to daemon virtual time T "
                   "(default: the daemon's current time)")
    p.add_argument("--no-rebase", action="store_true",
                   help="keep the trace's own submit times (a daemon started with "
                   "--start-time near them)")
    add_trace_selection(p, verb="replay only")
    p.add_argument("--force", action="store_true",
                   help="replay even if the daemon's cluster does not match the trace "
                   "(jobs larger than the machine are dropped and counted)")
    p.add_argument("--lenient", action="store_true", help="skip malformed trace lines")
    p.add_argument("--compare", action=argparse.BooleanOptionalAction, default=None,
                   help="run `schedd simulate` in-process and report the divergence "
                   "(default: on when accelerated)")
    p.add_argument("--retry-timeout", type=float, default=120.0, metavar="S",
                   help="how long to keep retrying while the daemon is unreachable (default "
                   "120)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar or status lines (warnings are still printed)")
    p.add_argument("--status-every", type=float, default=10.0, metavar="S",
                   help="without a terminal: a status line every S wall seconds (default "
                   "10; 0: none)")
    p.add_argument("--stall-after", type=float, default=5.0, metavar="S",
                   help="say why nothing moves after S wall seconds without progress "
                   "(default 5)")
    p.add_argument("--idle-after", type=float, default=30.0, metavar="S",
                   help="say so at once when nothing is due for more than S wall seconds "
                   "(default 30)")
    add_connection_arguments(p)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from schedd.traces import TraceError

    try:
        summary = asyncio.run(Replay(args).run())
    except (ReplayError, TraceError, OSError) as err:
        print(f"schedd-replay: {err}", file=sys.stderr)
        return 1
    except grpc.RpcError as err:
        print(f"schedd-replay: {rpc_error_text(err)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C: one line, no traceback, as `schedd` commands
        print("schedd-replay: interrupted", file=sys.stderr)
        return 130
    replay = summary["replay"]
    print(f"replayed {replay['jobs']} jobs ({replay['mode']}) in {replay['wall_s']:.1f} s; "
          f"wrote {args.out}/jobs.swf, jobs.csv, summary.json")
    if "divergence" in replay:
        d = replay["divergence"]
        print(f"divergence from simulate: {d['identical_start_frac']:.1%} of jobs started at "
              f"the same time; mean |wait diff| {d['mean_abs_wait_diff_s']:.1f} s; mean wait "
              f"{d['mean_wait_replay_s']:.1f} s (replay) vs {d['mean_wait_simulate_s']:.1f} s "
              f"(simulate); {d['late_submissions']} late submissions")
    return 0


class Replay:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.meta = metadata(args.token)
        self.channel: grpc.aio.Channel | None = None
        self.stub: Any = None
        self.late = 0
        self.max_lag = 0.0
        self.submitted = 0
        self.status: Status | None = None
        self.offset = 0  # daemon id = trace id + offset (moved up on a collision)
        self.ids: dict[int, int] = {}  # trace id -> daemon id, of submitted jobs
        self.run_id = uuid.uuid4().hex[:12]  # request ids: retries match, runs don't
        self.finished_before = 0  # finished jobs the daemon had before this replay
        self.max_clock_lag = 0.0  # largest Clock.lag seen (virtual s the engine is behind)
        self.lead = float(args.lead)  # wall seconds ahead; grows with slow submissions

    # ------------------------------------------------------------------ retries
    async def _call(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Retry while the daemon is unavailable (restart after a crash), then give up."""
        deadline = time.monotonic() + self.args.retry_timeout
        delay = 0.2
        while True:
            try:
                return await fn()
            except grpc.aio.AioRpcError as err:
                if err.code() not in (grpc.StatusCode.UNAVAILABLE,
                                      grpc.StatusCode.DEADLINE_EXCEEDED):
                    raise
                if time.monotonic() > deadline:
                    raise ReplayError(f"the daemon at {self.args.server} stayed unreachable "
                                      f"for {self.args.retry_timeout:g} s") from None
                if delay == 0.2:  # the first retry of this outage: say it at once
                    print(f"schedd-replay: the daemon at {self.args.server} does not answer "
                          f"({err.code().name}); retrying for up to "
                          f"{self.args.retry_timeout:g} s (--retry-timeout)", file=sys.stderr,
                          flush=True)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)

    async def _cluster(self) -> Any:
        return await self._call(lambda: self.stub.GetCluster(pb.GetClusterRequest(),
                                                             metadata=self.meta, timeout=10))

    async def _clock(self) -> Any:
        return await self._call(lambda: self.stub.GetClock(pb.GetClockRequest(),
                                                           metadata=self.meta, timeout=10))

    # ------------------------------------------------------------------ run
    async def run(self) -> dict[str, Any]:
        from schedd.outputs import UsageError, staged_dir, writable_dir

        started = time.monotonic()
        self.channel = aio_channel(self.args)
        self.stub = stub(self.channel)
        try:
            info = await self._cluster()
            path = self.args.trace or _sample_path()
            trace = self._load(path, info)
            specs = list(trace.specs())
            if not specs:
                raise ReplayError(f"{path} has no job to replay")
            try:
                writable_dir(self.args.out)  # before sending anything, not after the replay
            except UsageError as err:
                raise ReplayError(str(err)) from None
            clock = info.clock
            if self.args.lockstep and clock.mode != "lockstep":
                raise ReplayError(f"--lockstep needs a daemon with --clock lockstep; this one "
                                  f"runs {clock.mode}")
            if not self.args.lockstep and clock.mode == "lockstep":
                raise ReplayError("the daemon runs a lockstep clock: replay with --lockstep")
            speedup = self.args.speedup or clock.speedup or 1.0
            clock = await self._clock()  # fresh: reading the trace took a while
            # Accelerated: the first job --lead wall seconds ahead, so that it is not late.
            margin = 0.0 if self.args.lockstep else max(self.lead, 0.05) * speedup
            shift = self._shift(specs, clock.now + margin)
            self.offset = max(0, info.next_job_id - min(s.id for s in specs))
            self.finished_before = info.finished
            print(self._plan(path, specs, shift, speedup), flush=True)
            self._open_status(len(specs), speedup, specs[-1].submit + shift)
            try:
                if self.args.lockstep:
                    await self._lockstep(specs, trace, shift)
                else:
                    await self._accelerated(specs, trace, shift, clock, speedup)
                await self._wait_done(len(specs))
            finally:
                if self.status is not None:
                    self.status.close()
            results = await self._results()
            record = await self._record()
            info = await self._cluster()
        finally:
            await self.channel.close()
        # Written aside and renamed when complete: a replay that fails leaves no new or
        # half-written folder (issue 34; writable_dir above only probed).
        with staged_dir(self.args.out) as out:
            summary = self._write(out, path, trace, specs, results, info, shift,
                                  time.monotonic() - started)
            self._write_run_files(out, path, record, results, info, shift)
        return summary

    def _load(self, path: str, info: Any) -> Any:
        """The trace, checked against the daemon's machine, selected, said in one line
        per decision (processors per node, jobs not replayed)."""
        from schedd.traces import normalize, read_trace
        from schedd.traces.normalize import drop_line, select

        a = self.args
        # strict: a value beyond the daemon's limits (docs/daemon.md) is refused here, at
        # its line, not by the daemon in the middle of the replay
        raw = read_trace(path, lenient=a.lenient, strict=True)
        trace = normalize(raw, procs_per_node=a.procs_per_node, lenient=a.lenient)
        said = procs_per_node_line("schedd-replay", path, raw, trace, a.procs_per_node)
        if said:
            print(said, file=sys.stderr)
        mismatch = _machine_mismatch(raw.header, trace, info)
        if mismatch and not a.force:
            raise ReplayError(f"{mismatch}; start the daemon with --cluster "
                              f"nodes:{trace.max_nodes}, or replay anyway with --force "
                              "(larger jobs are dropped)")
        if mismatch:
            print(f"schedd-replay: warning: {mismatch} (--force)", file=sys.stderr)
        trace = normalize(raw, max_nodes=info.max_job_nodes,
                          procs_per_node=trace.procs_per_node, lenient=a.lenient)
        trace = select(trace, start=a.start, until=a.until, limit=a.limit)
        line = drop_line(trace, path, selected=False)
        if line:
            print(f"schedd-replay: warning: {line}", file=sys.stderr)
        return trace

    def _shift(self, specs: list[JobSpec], now: float) -> float:
        """Daemon time minus trace time; a whole number of seconds when the trace's times
        are, so that shifting there and back is exact."""
        if self.args.no_rebase:
            return 0.0
        if self.args.at is None and self.args.lockstep:
            # A lockstep clock jumps ahead for free: keep the trace's times unless the
            # daemon is already past them (same times as `schedd simulate`, whose
            # failure draws start at time 0 too).
            return float(max(0.0, math.ceil(now - specs[0].submit)))
        target = now if self.args.at is None else self.args.at
        shift = target - specs[0].submit
        return float(math.ceil(shift)) if specs[0].submit == int(specs[0].submit) else shift

    def _plan(self, path: str, specs: list[JobSpec], shift: float, speedup: float) -> str:
        from schedd.durations import format_duration

        first, last = specs[0].submit, specs[-1].submit
        span = last - first
        where = (f"daemon time {first + shift:,.0f} to {last + shift:,.0f}"
                 + (f", shift {shift:+,.0f} s" if shift else ""))
        if self.args.lockstep:
            pace = "lockstep: as fast as the daemon goes"
        else:
            pace = (f"at {speedup:g}x: about {format_duration(span / speedup)} of wall time "
                    "to submit them all, then the running jobs drain")
        ids = f"; job ids = trace ids + {self.offset:,}" if self.offset else ""
        return (f"replaying {len(specs):,} jobs of {os.path.basename(path)}, a trace span of "
                f"{format_duration(span)} ({where}), {pace}{ids}")

    # ------------------------------------------------------------------ lockstep
    async def _lockstep(self, specs: list[JobSpec], trace: Any, shift: float) -> None:
        notices = _notices(specs)
        eccs = list(trace.eccs)
        n, i, ni, ei = len(specs), 0, 0, 0
        while i < n:
            j = min(i + self.args.window, n)
            while j < n and specs[j].submit == specs[j - 1].submit:
                j += 1  # all jobs of one instant go in the same window
            horizon = specs[j - 1].submit
            ni = await self._send_notices(notices, ni, horizon, shift)
            await self._submit(specs[i:j], shift)
            ei = await self._send_eccs(eccs, ei, horizon, shift)
            await self._advance(to=horizon + shift)
            i = j
        await self._send_notices(notices, ni, math.inf, shift)
        await self._send_eccs(eccs, ei, math.inf, shift)
        await self._advance(until_idle=True)

    async def _advance(self, to: float | None = None, until_idle: bool = False) -> None:
        now = (await self._clock()).now
        if to is not None and to < now:
            return
        request = (pb.AdvanceClockRequest(until_idle=True) if until_idle
                   else pb.AdvanceClockRequest(to=to))
        clock = await self._call(lambda: self.stub.AdvanceClock(request, metadata=self.meta))
        self._progress(clock)

    # ------------------------------------------------------------------ accelerated
    async def _accelerated(self, specs: list[JobSpec], trace: Any, shift: float,
                           clock: Any, speedup: float) -> None:
        if self.args.speedup and abs(self.args.speedup - clock.speedup) > 1e-9:
            print(f"schedd-replay: pacing at {speedup:g}x while the daemon's clock runs at "
                  f"{clock.speedup:g}x", file=sys.stderr)
        notices = _notices(specs)
        eccs = list(trace.eccs)
        ref_v, ref_w = clock.now, time.monotonic()
        last_sync = ref_w
        i = ni = ei = 0
        n = len(specs)
        while i < n or ni < len(notices) or ei < len(eccs):
            nexts = [t for t in (specs[i].submit if i < n else None,
                                 notices[ni][1].time if ni < len(notices) else None,
                                 eccs[ei].time if ei < len(eccs) else None) if t is not None]
            if time.monotonic() - last_sync > 1.0:  # follow the daemon's clock (pauses, jumps)
                due = min(nexts) + shift if nexts else None
                if self.status is not None and self.status.wants_counts():
                    info = await self._cluster()  # a status line is due: with job counts
                    c = info.clock
                    self._progress(c, next_due=due,
                                   running=sum(x.jobs for x in info.running_by_class),
                                   finished=info.finished - self.finished_before)
                else:
                    c = await self._clock()
                    self._progress(c, next_due=due)
                ref_v, ref_w = c.now, time.monotonic()
                last_sync = ref_w
            v = ref_v + speedup * (time.monotonic() - ref_w)
            trace_now = v - shift + speedup * self.lead  # the horizon sent ahead
            ni = await self._send_notices(notices, ni, trace_now, shift)
            j = i
            while j < n and specs[j].submit <= trace_now:
                j += 1
            if j > i:
                for s in specs[i:j]:
                    self.max_lag = max(self.max_lag, v - (s.submit + shift))
                sent = time.monotonic()
                await self._submit(specs[i:j], shift)
                self._grow_lead(time.monotonic() - sent)
                i = j
            ei = await self._send_eccs(eccs, ei, trace_now, shift)
            if nexts:
                wait = (min(nexts) - trace_now) / speedup
                await asyncio.sleep(min(max(wait, 0.001), 0.25))

    def _grow_lead(self, rpc_wall: float) -> None:
        """A submission that took long (a loaded machine starves the daemon or this
        client) would make the next ones late: keep the lead at 3x the slowest one."""
        if self.lead > 0 and 3.0 * rpc_wall > self.lead:
            self.lead = min(3.0 * rpc_wall, 60.0)

    # ------------------------------------------------------------------ sending
    async def _submit(self, specs: Sequence[JobSpec], shift: float) -> None:
        name = os.path.basename(self.args.trace or "sample")
        while True:
            requests = [_submit_request(s, shift, s.id + self.offset,
                                        f"replay:{name}:{self.run_id}:{s.id}")
                        for s in specs]

            async def send(requests: list[pb.SubmitJobRequest] = requests) -> Any:
                async def stream() -> AsyncIterator[pb.SubmitJobsRequest]:
                    for lo in range(0, len(requests), 1000):  # many jobs per message
                        yield pb.SubmitJobsRequest(jobs=requests[lo:lo + 1000])

                return await self.stub.SubmitJobs(stream(), metadata=self.meta)

            try:
                response = await self._call(send)
                break
            except grpc.aio.AioRpcError as err:
                # Someone else took an id of ours meanwhile (the stream is all or nothing):
                # move the offset above every id the daemon holds now, and send again.
                if err.code() != grpc.StatusCode.ALREADY_EXISTS or "job id" not in (
                        err.details() or ""):
                    raise
                info = await self._cluster()
                moved = max(self.offset + 1, info.next_job_id - min(s.id for s in specs))
                print(f"schedd-replay: {err.details()}: job ids are now trace ids + "
                      f"{moved:,} (were + {self.offset:,})", file=sys.stderr)
                self.offset = moved
        for s, r, job_id in zip(specs, requests, response.job_ids, strict=True):
            if r.job_id != job_id:
                raise ReplayError(f"the daemon gave job {r.job_id} the id {job_id}")
            self.ids[s.id] = job_id
        self.submitted += len(requests)

    async def _send_notices(self, notices: list[tuple[int, Any]], k: int, horizon: float,
                            shift: float = 0.0) -> int:
        while k < len(notices) and notices[k][1].time <= horizon:
            job_id, n = notices[k]
            request = pb.AdvanceNoticeRequest(
                request_id=f"notice:{self.run_id}:{job_id}", job_id=job_id + self.offset,
                expected_arrival=n.est_arrival + shift, nodes=n.nodes, walltime=n.walltime,
                notice_time=n.time + shift)
            await self._call(partial(self.stub.AdvanceNotice, request, metadata=self.meta))
            k += 1
        return k

    async def _send_eccs(self, eccs: list[Any], k: int, horizon: float,
                         shift: float = 0.0) -> int:
        while k < len(eccs) and eccs[k].time <= horizon:
            e = eccs[k]
            request = pb.ElasticControlRequest(
                request_id=f"ecc:{self.run_id}:{e.job_id}:{e.line}:{k}",
                job_id=self.ids.get(e.job_id, e.job_id + self.offset), kind=PB_ECC[e.kind],
                amount=e.amount, time=e.time + shift)
            try:
                await self._call(partial(self.stub.ElasticControl, request,
                                         metadata=self.meta))
            except grpc.aio.AioRpcError as err:  # e.g. the job has already finished
                if err.code() != grpc.StatusCode.FAILED_PRECONDITION:
                    raise
            k += 1
        return k

    # ------------------------------------------------------------------ completion
    async def _wait_done(self, n: int) -> None:
        """Until the daemon has nothing left to run and has finished our n jobs."""
        while True:
            info = await self._cluster()
            queued = sum(c.jobs for c in info.queue_by_class)
            running = sum(c.jobs for c in info.running_by_class)
            finished = info.finished - self.finished_before
            self.max_clock_lag = max(self.max_clock_lag, info.clock.lag)
            if info.pending == 0 and queued == 0 and running == 0 and finished >= n:
                self._progress(info.clock, running=running, finished=finished)
                return
            if self.status is not None:
                c = info.clock
                snap = Snapshot(c.now, c.engine_time, c.paused, self.submitted,
                                min(n, running + finished), min(n, finished))
                next_end = await self._next_end() if running and not queued else None
                self.status.draining(snap, running, queued, next_end)
            await asyncio.sleep(0.2)

    async def _next_end(self) -> float | None:
        """Earliest predicted end of a running job (asked only while nothing else waits)."""
        if self.status is None or "idle" in self.status.warned:
            return None
        r = await self._call(lambda: self.stub.ListJobs(
            pb.ListJobsRequest(states=[pb.JOB_STATE_RUNNING], page_size=1000),
            metadata=self.meta, timeout=10))
        ends = [j.predicted_end for j in r.jobs if j.HasField("predicted_end")]
        return min(ends) if ends else None

    async def _results(self) -> dict[str, np.ndarray]:
        """Our jobs' result columns, named by their trace ids again."""
        async def fetch() -> dict[str, list[float]]:
            cols: dict[str, list[float]] = {name: [] for name in COLUMNS}
            async for chunk in self.stub.GetResults(pb.GetResultsRequest(),
                                                    metadata=self.meta):
                for col in chunk.columns:
                    cols[col.name].extend(col.values)
            return cols

        cols = await self._call(fetch)
        arrays = {name: np.asarray(cols[name], dtype=np.int64 if code == "q" else np.float64)
                  for name, code in COLUMNS.items()}
        n = len(self.ids)
        daemon_ids = np.fromiter(self.ids.values(), dtype=np.int64, count=n)
        trace_ids = np.fromiter(self.ids.keys(), dtype=np.int64, count=n)
        keep = np.isin(arrays["id"], daemon_ids)
        arrays = {k: v[keep] for k, v in arrays.items()}
        if len(arrays["id"]) != n or len(np.unique(arrays["id"])) != n:
            raise ReplayError(f"the daemon reported {len(arrays['id'])} results for "
                              f"{n} jobs")
        order = np.argsort(daemon_ids)
        arrays["id"] = trace_ids[order][np.searchsorted(daemon_ids, arrays["id"],
                                                        sorter=order)]
        return arrays

    async def _record(self) -> dict[str, dict[str, np.ndarray]]:
        """The daemon's run record (segments, waits, levels: docs/results.md)."""
        from schedd.run_files import RECORD_TABLES

        async def fetch(table: str) -> dict[str, np.ndarray]:
            cols: dict[str, list[float]] = {name: [] for name, _, _ in RECORD_TABLES[table]}
            async for chunk in self.stub.GetResults(pb.GetResultsRequest(table=table),
                                                    metadata=self.meta):
                for col in chunk.columns:
                    cols[col.name].extend(col.values)
            return {name: np.asarray(cols[name], dtype=np.int64 if integer else np.float64)
                    for name, _, integer in RECORD_TABLES[table]}

        out = {}
        for table in RECORD_TABLES:
            out[table] = await self._call(lambda t=table: fetch(t))  # type: ignore[misc]
        return out

    # ------------------------------------------------------------------ output
    def _write_run_files(self, out: str, path: str, record: dict[str, dict[str, np.ndarray]],
                         results: dict[str, np.ndarray], info: Any, shift: float) -> None:
        """segments.csv (our jobs, by trace id) and timeseries.csv (the whole machine), on
        the trace's time axis, written as `schedd simulate` writes them."""
        from schedd.core.cluster_spec import parse_cluster
        from schedd.run_files import recorder_from_tables
        from schedd.sim import write_run_files

        seg = dict(record["segments"])
        daemon_ids = np.fromiter(self.ids.values(), dtype=np.int64, count=len(self.ids))
        trace_ids = np.fromiter(self.ids.keys(), dtype=np.int64, count=len(self.ids))
        ours = np.isin(seg["job"], daemon_ids)
        seg = {k: v[ours] for k, v in seg.items()}
        order = np.argsort(daemon_ids)
        seg["job"] = trace_ids[order][np.searchsorted(daemon_ids, seg["job"], sorter=order)]
        tables = {"segments": seg, "waits": dict(record["waits"]),
                  "levels": dict(record["levels"])}
        for table, col in (("segments", "start"), ("segments", "end"), ("waits", "start"),
                           ("waits", "end"), ("levels", "time")):
            tables[table][col] = tables[table][col] - shift
        write_run_files(out, recorder_from_tables(tables),
                        parse_cluster(info.cluster), results, os.path.basename(path))

    def _write(self, out: str, path: str, trace: Any, specs: list[JobSpec],
               results: dict[str, np.ndarray], info: Any, shift: float,
               wall: float) -> dict[str, Any]:
        from schedd.metrics import MetricOptions, summarize
        from schedd.sim import sort_results, write_results

        for name in ("submit", "first_start", "end"):  # back onto the trace's time axis
            col = results[name]
            col[col >= 0] -= shift
        sort_results(results)
        policy = json.loads(info.policy_spec or "{}")
        engine_options = json.loads(info.engine_options or "{}")
        summary = summarize(results, total_nodes=info.total_nodes, options=MetricOptions())
        description = {
            "trace": os.path.basename(path), "kept_jobs": len(specs),
            "dropped": dict(trace.dropped), "cluster": info.cluster,
            "total_nodes": info.total_nodes, "policy": info.policy,
            "policy_options": dict(info.policy_options), "seed": info.seed,
            "engine_options": engine_options,
        }
        description["procs_per_node"] = trace.procs_per_node
        replay: dict[str, Any] = {
            "mode": "lockstep" if self.args.lockstep else "accelerated",
            "jobs": len(specs), "wall_s": wall, "shift_s": shift, "id_offset": self.offset,
            "late_submissions": int(np.sum(results["submit"] > _trace_submits(specs, results)
                                           + 1e-9)),
            "max_submit_lag_s": self.max_lag, "max_clock_lag_s": self.max_clock_lag,
            "lead_s": self.lead,
            "server": self.args.server,
            "fallback": policy.get("fallback"), "budget_s": policy.get("budget"),
        }
        compare = self.args.compare if self.args.compare is not None else not self.args.lockstep
        if compare:
            replay["divergence"] = _divergence(trace, results, info, policy, engine_options)
            replay["divergence"]["late_submissions"] = replay["late_submissions"]
        summary["replay"] = replay
        return write_results(out, trace, results, summary, description,
                             {k: int(v) for k, v in info.counters.items()})

    # ------------------------------------------------------------------ progress
    def _open_status(self, total: int, speedup: float, end_v: float) -> None:
        a = self.args
        self.status = Status(total, speedup, end_v, every=0.0 if a.no_progress
                             else a.status_every, stall_after=a.stall_after,
                             bar=not a.no_progress and sys.stderr.isatty(),
                             lockstep=a.lockstep, lead=self.lead, idle_after=a.idle_after)

    def _progress(self, clock: Any, next_due: float | None = None,
                  running: int | None = None, finished: int | None = None) -> None:
        self.max_clock_lag = max(self.max_clock_lag, clock.lag)
        if self.status is None:
            return
        started = None if running is None or finished is None else running + finished
        self.status.update(Snapshot(clock.now, clock.engine_time, clock.paused,
                                    self.submitted, started, finished), next_due_v=next_due)


# ---------------------------------------------------------------------- helpers
def _sample_path() -> str:
    from schedd.cli import _sample_path as sample

    return sample()


def _machine_mismatch(header: Any, trace: Any, info: Any) -> str | None:
    """Why the trace was not made for the daemon's machine (one clause), or None."""
    declared = header.max_nodes
    if declared is None and header.max_procs is not None:
        declared = -(-header.max_procs // trace.procs_per_node)
    largest = int(trace.columns["nodes"].max()) if len(trace) else 0
    if declared is not None and declared != info.total_nodes:
        return (f"the trace's machine has {declared:,} nodes (header MaxNodes/MaxProcs) but "
                f"the daemon's {info.cluster or info.name} has {info.total_nodes:,}")
    if largest > info.max_job_nodes:
        return (f"the trace's largest job asks for {largest:,} nodes but the daemon's "
                f"{info.cluster or info.name} gives one job at most {info.max_job_nodes:,}")
    return None


def _submit_request(s: JobSpec, shift: float, job_id: int,
                    request_id: str) -> pb.SubmitJobRequest:
    r = pb.SubmitJobRequest(
        request_id=request_id, job_id=job_id, nodes=s.nodes, walltime=s.walltime,
        runtime=s.runtime, job_class=PB_CLASS[s.job_class.value],
        min_nodes=s.min_nodes if s.malleable else 0, user=s.user, project=s.project,
        queue=s.queue, not_checkpointable=not s.checkpointable, setup=s.setup,
        submit_time=s.submit + shift)
    if s.requested_start >= 0:
        r.requested_start = s.requested_start + shift
    if s.ckpt_interval > 0:
        r.ckpt_interval = s.ckpt_interval
    if s.ckpt_gb_per_node > 0:
        r.ckpt_gb_per_node = s.ckpt_gb_per_node
    return r


def _notices(specs: list[JobSpec]) -> list[tuple[int, Any]]:
    return sorted(((s.id, s.notice) for s in specs if s.notice is not None),
                  key=lambda p: (p[1].time, p[0]))


def _trace_submits(specs: list[JobSpec], results: dict[str, np.ndarray]) -> np.ndarray:
    by_id = {s.id: s.submit for s in specs}
    return np.array([by_id[i] for i in results["id"].tolist()], dtype=np.float64)


def _divergence(trace: Any, results: dict[str, np.ndarray], info: Any,
                policy: dict[str, Any], engine_options: dict[str, Any]) -> dict[str, Any]:
    """Run the same trace offline (schedd simulate's engine) and compare per job."""
    from schedd.core.checkpoint import CheckpointPolicy
    from schedd.core.cluster_spec import parse_cluster
    from schedd.core.engine import EngineOptions
    from schedd.policies import make_policy
    from schedd.sim import simulate

    cluster = parse_cluster(info.cluster)
    options = dict(engine_options)
    options["checkpoint"] = CheckpointPolicy(**options["checkpoint"])
    options["auto_checkpoint_done"] = True  # offline, the engine plays the agents
    run = simulate(trace, cluster, make_policy(policy.get("policy", info.policy),
                                               policy.get("options", []), cluster),
                   seed=info.seed, engine_options=EngineOptions(**options))
    ref = run.results
    order = np.argsort(ref["id"])
    pos = order[np.searchsorted(ref["id"], results["id"], sorter=order)]
    ref_wait, live_wait = ref["wait"][pos], results["wait"]
    diff = np.abs(live_wait - ref_wait)
    same = np.abs(results["first_start"] - ref["first_start"][pos]) < 1e-6
    return {
        "jobs": len(diff),
        "identical_start_frac": float(np.mean(same)) if len(diff) else 1.0,
        "mean_abs_wait_diff_s": float(np.mean(diff)) if len(diff) else 0.0,
        "max_abs_wait_diff_s": float(np.max(diff)) if len(diff) else 0.0,
        "mean_wait_replay_s": float(np.mean(live_wait)) if len(diff) else 0.0,
        "mean_wait_simulate_s": float(np.mean(ref_wait)) if len(diff) else 0.0,
    }


if __name__ == "__main__":
    sys.exit(main())
