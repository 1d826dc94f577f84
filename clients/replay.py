"""`schedd-replay` (also `schedctl replay`): drive a running daemon with a trace.

Two ways to drive it:
* `--lockstep`: the daemon runs `--clock lockstep`; the client submits a window of jobs
  (with their trace submit times, ahead of the clock), sends the notices and elastic
  control commands due by the window's last submit time, then AdvanceClock to that time,
  and at the end AdvanceClock(until_idle). The engine sees exactly what `schedd simulate`
  feeds it, so jobs.swf is byte-identical.
* accelerated (default): jobs are submitted when the daemon's virtual clock reaches their
  trace time (shifted so the first job arrives now), paced by `--speedup K` (default: the
  daemon's own). A job that reaches the daemon late gets a later submit time; the client
  measures this lag, and with `--compare` (default) runs `schedd simulate` in-process on
  the same trace and settings and reports how far the live run diverged.

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
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from functools import partial
from typing import Any, TypeVar

import grpc
import numpy as np

from schedd.core.job import JobSpec
from schedd.core.results import COLUMNS
from schedd.v1 import scheduler_pb2 as pb

from .common import add_connection_arguments, aio_channel, metadata, rpc_error_text, stub

PB_CLASS = {"B": pb.JOB_CLASS_BATCH, "R": pb.JOB_CLASS_REALTIME, "O": pb.JOB_CLASS_ON_DEMAND,
            "M": pb.JOB_CLASS_MALLEABLE, "D": pb.JOB_CLASS_DEDICATED}
PB_ECC = {"ET": pb.ECC_KIND_ET, "RT": pb.ECC_KIND_RT, "EP": pb.ECC_KIND_EP,
          "RP": pb.ECC_KIND_RP}
T = TypeVar("T")


class ReplayError(RuntimeError):
    """The replay cannot go on (one sentence)."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="schedd-replay",
        description="Replay an SWF/CWF trace into a running schedd daemon and write the same "
        "DIR/jobs.swf, jobs.csv and summary.json as `schedd simulate`.")
    p.add_argument("trace", nargs="?", default=None,
                   help="SWF or CWF trace (default: the bundled 1,000-job Lublin excerpt)")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--lockstep", action="store_true",
                   help="drive the daemon's lockstep clock (results equal `schedd simulate`)")
    p.add_argument("--speedup", type=float, default=None, metavar="K",
                   help="accelerated: trace seconds per wall second (default: the daemon's)")
    p.add_argument("--lead", type=float, default=0.1, metavar="S",
                   help="accelerated: send each job up to S wall seconds before its trace "
                   "time, stamped with that time, so RPC latency does not make it late "
                   "(default 0.1; 0 = send when due)")
    p.add_argument("--window", type=int, default=500, metavar="N",
                   help="lockstep: jobs per window before each AdvanceClock (default 500)")
    p.add_argument("--limit", type=int, default=None, metavar="N",
                   help="replay only the first N jobs of the trace")
    p.add_argument("--procs-per-node", type=int, default=1, metavar="K",
                   help="the trace counts processors; K per node")
    p.add_argument("--lenient", action="store_true", help="skip malformed trace lines")
    p.add_argument("--compare", action=argparse.BooleanOptionalAction, default=None,
                   help="run `schedd simulate` in-process and report the divergence "
                   "(default: on when accelerated)")
    p.add_argument("--retry-timeout", type=float, default=120.0, metavar="S",
                   help="how long to keep retrying while the daemon is unreachable (default "
                   "120)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
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
        self.bar: Any = None

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
        from schedd.traces import normalize, read_trace

        started = time.monotonic()
        self.channel = aio_channel(self.args)
        self.stub = stub(self.channel)
        try:
            info = await self._cluster()
            path = self.args.trace or _sample_path()
            raw = read_trace(path, lenient=self.args.lenient)
            trace = normalize(raw, max_nodes=info.max_job_nodes,
                              procs_per_node=self.args.procs_per_node, lenient=self.args.lenient)
            specs = list(trace.specs())
            if self.args.limit is not None:
                specs = specs[:self.args.limit]
                trace = _head(trace, len(specs))
            if not specs:
                raise ReplayError(f"{path} has no job to replay")
            clock = info.clock
            if self.args.lockstep and clock.mode != "lockstep":
                raise ReplayError(f"--lockstep needs a daemon with --clock lockstep; this one "
                                  f"runs {clock.mode}")
            if not self.args.lockstep and clock.mode == "lockstep":
                raise ReplayError("the daemon runs a lockstep clock: replay with --lockstep")
            self._open_bar(len(specs))
            try:
                if self.args.lockstep:
                    shift = 0.0
                    await self._lockstep(specs, trace)
                else:
                    shift = max(0.0, clock.now - specs[0].submit)
                    await self._accelerated(specs, trace, shift, clock)
                await self._wait_done(len(specs))
            finally:
                if self.bar is not None:
                    self.bar.close()
            results = await self._results({s.id for s in specs})
            info = await self._cluster()
        finally:
            await self.channel.close()
        return self._write(path, trace, specs, results, info, shift,
                           time.monotonic() - started)

    # ------------------------------------------------------------------ lockstep
    async def _lockstep(self, specs: list[JobSpec], trace: Any) -> None:
        notices = _notices(specs)
        eccs = list(trace.eccs)
        n, i, ni, ei = len(specs), 0, 0, 0
        while i < n:
            j = min(i + self.args.window, n)
            while j < n and specs[j].submit == specs[j - 1].submit:
                j += 1  # all jobs of one instant go in the same window
            horizon = specs[j - 1].submit
            ni = await self._send_notices(notices, ni, horizon)
            await self._submit(specs[i:j], shift=0.0)
            ei = await self._send_eccs(eccs, ei, horizon)
            await self._advance(to=horizon)
            i = j
        await self._send_notices(notices, ni, math.inf)
        await self._send_eccs(eccs, ei, math.inf)
        await self._advance(until_idle=True)

    async def _advance(self, to: float | None = None, until_idle: bool = False) -> None:
        now = (await self._clock()).now
        if to is not None and to < now:
            return
        request = (pb.AdvanceClockRequest(until_idle=True) if until_idle
                   else pb.AdvanceClockRequest(to=to))
        clock = await self._call(lambda: self.stub.AdvanceClock(request, metadata=self.meta))
        self._progress(clock.now)

    # ------------------------------------------------------------------ accelerated
    async def _accelerated(self, specs: list[JobSpec], trace: Any, shift: float,
                           clock: Any) -> None:
        speedup = self.args.speedup or clock.speedup or 1.0
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
            wall = time.monotonic()
            if wall - last_sync > 2.0:  # follow the daemon's clock (pauses, jumps)
                c = await self._clock()
                ref_v, ref_w, last_sync = c.now, time.monotonic(), time.monotonic()
                self._progress(c.now, lag=c.lag)
            v = ref_v + speedup * (time.monotonic() - ref_w)
            trace_now = v - shift + speedup * self.args.lead  # the horizon sent ahead
            ni = await self._send_notices(notices, ni, trace_now, shift)
            j = i
            while j < n and specs[j].submit <= trace_now:
                j += 1
            if j > i:
                for s in specs[i:j]:
                    self.max_lag = max(self.max_lag, v - (s.submit + shift))
                await self._submit(specs[i:j], shift)
                i = j
            ei = await self._send_eccs(eccs, ei, trace_now, shift)
            nexts = [t for t in (specs[i].submit if i < n else None,
                                 notices[ni][1].time if ni < len(notices) else None,
                                 eccs[ei].time if ei < len(eccs) else None) if t is not None]
            if nexts:
                wait = (min(nexts) - trace_now) / speedup
                await asyncio.sleep(min(max(wait, 0.001), 0.25))

    # ------------------------------------------------------------------ sending
    async def _submit(self, specs: Sequence[JobSpec], shift: float) -> None:
        name = os.path.basename(self.args.trace or "sample")
        requests = [_submit_request(s, shift, f"replay:{name}:{s.id}") for s in specs]

        async def send() -> Any:
            async def stream() -> AsyncIterator[pb.SubmitJobsRequest]:
                for lo in range(0, len(requests), 1000):  # many jobs per message
                    yield pb.SubmitJobsRequest(jobs=requests[lo:lo + 1000])

            return await self.stub.SubmitJobs(stream(), metadata=self.meta)

        response = await self._call(send)
        for r, job_id in zip(requests, response.job_ids, strict=True):
            if r.job_id != job_id:
                raise ReplayError(f"the daemon gave job {r.job_id} the id {job_id}")
        self.submitted += len(requests)
        if self.bar is not None:
            self.bar.update(len(requests))

    async def _send_notices(self, notices: list[tuple[int, Any]], k: int, horizon: float,
                            shift: float = 0.0) -> int:
        while k < len(notices) and notices[k][1].time <= horizon:
            job_id, n = notices[k]
            request = pb.AdvanceNoticeRequest(
                request_id=f"notice:{job_id}", job_id=job_id,
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
                request_id=f"ecc:{e.job_id}:{e.line}:{k}", job_id=e.job_id, kind=PB_ECC[e.kind],
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
        while True:
            info = await self._cluster()
            queued = sum(c.jobs for c in info.queue_by_class)
            running = sum(c.jobs for c in info.running_by_class)
            self._progress(info.clock.now, lag=info.clock.lag, running=running,
                           done=info.finished)
            if info.pending == 0 and queued == 0 and running == 0 and info.finished >= n:
                return
            await asyncio.sleep(0.2)

    async def _results(self, ids: set[int]) -> dict[str, np.ndarray]:
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
        keep = np.isin(arrays["id"], np.fromiter(ids, dtype=np.int64, count=len(ids)))
        arrays = {k: v[keep] for k, v in arrays.items()}
        if len(arrays["id"]) != len(ids) or len(np.unique(arrays["id"])) != len(ids):
            raise ReplayError(f"the daemon reported {len(arrays['id'])} results for "
                              f"{len(ids)} jobs")
        return arrays

    # ------------------------------------------------------------------ output
    def _write(self, path: str, trace: Any, specs: list[JobSpec],
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
        replay: dict[str, Any] = {
            "mode": "lockstep" if self.args.lockstep else "accelerated",
            "jobs": len(specs), "wall_s": wall, "shift_s": shift,
            "late_submissions": int(np.sum(results["submit"] > _trace_submits(specs, results)
                                           + 1e-9)),
            "max_submit_lag_s": self.max_lag, "server": self.args.server,
            "fallback": policy.get("fallback"), "budget_s": policy.get("budget"),
        }
        compare = self.args.compare if self.args.compare is not None else not self.args.lockstep
        if compare:
            replay["divergence"] = _divergence(trace, results, info, policy, engine_options)
            replay["divergence"]["late_submissions"] = replay["late_submissions"]
        summary["replay"] = replay
        return write_results(self.args.out, trace, results, summary, description,
                             {k: int(v) for k, v in info.counters.items()})

    # ------------------------------------------------------------------ progress
    def _open_bar(self, total: int) -> None:
        if self.args.no_progress or not sys.stderr.isatty():
            return
        from tqdm import tqdm

        self.bar = tqdm(total=total, unit="job", desc="submitted", file=sys.stderr)

    def _progress(self, now: float, lag: float = 0.0, running: int | None = None,
                  done: int | None = None) -> None:
        if self.bar is None:
            return
        post = {"t": f"{now:.0f}", "lag": f"{lag:.1f}"}
        if running is not None:
            post["running"] = str(running)
        if done is not None:
            post["done"] = str(done)
        self.bar.set_postfix(post, refresh=True)


# ---------------------------------------------------------------------- helpers
def _sample_path() -> str:
    from schedd.cli import _sample_path as sample

    return sample()


def _submit_request(s: JobSpec, shift: float, request_id: str) -> pb.SubmitJobRequest:
    r = pb.SubmitJobRequest(
        request_id=request_id, job_id=s.id, nodes=s.nodes, walltime=s.walltime,
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


def _head(trace: Any, n: int) -> Any:
    from dataclasses import replace

    cols = {k: v[:n] for k, v in trace.columns.items()}
    kept = set(cols["job_id"].tolist())
    return replace(trace, columns=cols, eccs=[e for e in trace.eccs if e.job_id in kept])


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
