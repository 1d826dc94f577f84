"""schedctl: the command-line client of the schedd daemon.

One subcommand per job or cluster action (submit, cancel, status, list, notice, ecc,
checkpoint-done, watch, cluster, clock) plus `replay`, which hands its arguments to
schedd-replay. Human-readable output by default, `--json` for scripts. Exit status: 0 on
success, 1 when the daemon refuses a request or cannot be reached, 2 for bad usage.
docs/schedctl.md has examples.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message

from schedd.durations import DurationError, parse_duration
from schedd.outputs import UsageError
from schedd.suggest import SuggestingParser, did_you_mean
from schedd.v1 import scheduler_pb2 as pb

from .common import DEFAULT_SERVER, add_connection_arguments, channel, metadata, stub

PROG = "schedctl"
RPC_TIMEOUT = 10.0  # seconds; `clock advance` and `watch` wait as long as they must

CLASSES = {"batch": pb.JOB_CLASS_BATCH, "realtime": pb.JOB_CLASS_REALTIME,
           "ondemand": pb.JOB_CLASS_ON_DEMAND, "malleable": pb.JOB_CLASS_MALLEABLE,
           "dedicated": pb.JOB_CLASS_DEDICATED}
CLASS_ALIASES = {"on-demand": "ondemand", "on_demand": "ondemand"}
STATES = {name[len("JOB_STATE_"):].lower(): value
          for name, value in pb.JobState.items() if value != pb.JOB_STATE_UNSPECIFIED}
ECC_KINDS = {"ET": pb.ECC_KIND_ET, "RT": pb.ECC_KIND_RT, "EP": pb.ECC_KIND_EP,
             "RP": pb.ECC_KIND_RP}
GLOBAL_VALUE_OPTIONS = ("--server", "--token", "--tls-ca", "--timeout", "--wait")
UNREACHABLE = re.compile(r"failed to connect|connect failed|connection refused|"
                         r"dns resolution failed|name resolution|errors resolving|no route to host|"
                         r"network is unreachable|handshake failed|connection reset",
                         re.IGNORECASE)


class Unreachable(Exception):
    """The daemon did not answer at the transport level."""


# ---------------------------------------------------------------------- formatting
def fmt_num(value: float) -> str:
    """Seconds (or any number) with at most 3 decimals: 10, 10.5, 10.125."""
    if not math.isfinite(value):
        return str(value)
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def fmt_time(value: float) -> str:
    """A job's virtual time; negative (the API's -1, "not yet") as `-`."""
    return "-" if value < 0 else fmt_num(value)


def class_name(value: int) -> str:
    if value == pb.JOB_CLASS_UNSPECIFIED:
        return "batch"
    return pb.JobClass.Name(value)[len("JOB_CLASS_"):].lower().replace("_", "")


def state_name(value: int) -> str:
    if value == pb.JOB_STATE_UNSPECIFIED:
        return "-"
    return pb.JobState.Name(value)[len("JOB_STATE_"):].lower()


def as_dict(msg: Message) -> dict[str, Any]:
    return json_format.MessageToDict(msg, preserving_proto_field_name=True,
                                     always_print_fields_with_no_presence=True,
                                     unquote_int64_if_possible=True)


def print_json(obj: Any) -> None:
    print(json.dumps(obj, sort_keys=False), flush=True)


def table(rows: Sequence[Sequence[str]], right: Iterable[int] = ()) -> str:
    """Columns padded to their widest cell; columns in `right` right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    right = set(right)
    lines = []
    for row in rows:
        cells = [cell.rjust(w) if i in right else cell.ljust(w)
                 for i, (cell, w) in enumerate(zip(row, widths, strict=True))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def fields(pairs: Sequence[tuple[str, str]]) -> str:
    width = max(len(k) for k, _ in pairs)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in pairs)


def trace_id(value: int) -> str:
    return "-" if value < 0 else str(value)


def optional_time(j: pb.Job, name: str) -> str:
    """A Job field that is absent until it has a value (API 1.1; older daemons sent -1)."""
    return fmt_time(getattr(j, name)) if j.HasField(name) else "-"


def job_fields(j: pb.Job) -> list[tuple[str, str]]:
    pairs = [("job", str(j.job_id)), ("state", state_name(j.state)),
             ("class", class_name(j.job_class)), ("nodes", str(j.nodes))]
    if j.job_class == pb.JOB_CLASS_MALLEABLE:
        pairs.append(("min nodes", str(j.min_nodes) if j.HasField("min_nodes") else "-"))
    pairs += [("allocated", str(j.alloc_nodes)), ("walltime", fmt_num(j.walltime)),
              ("submitted", fmt_time(j.submit_time)),
              ("first start", optional_time(j, "first_start")),
              ("last start", optional_time(j, "last_start")),
              ("predicted end", optional_time(j, "predicted_end")),
              ("ended", optional_time(j, "end_time")),
              ("wait", fmt_time(j.wait)), ("executed", fmt_num(j.executed)),
              ("preemptions", str(j.preemptions)), ("checkpoints", str(j.checkpoints))]
    if j.job_class == pb.JOB_CLASS_DEDICATED or j.HasField("requested_start"):
        pairs.append(("requested start", optional_time(j, "requested_start")))
    if j.block:
        pairs.append(("block", j.block))
    pairs += [("owner", j.owner or "-"), ("user", trace_id(j.user)),
              ("project", trace_id(j.project)), ("queue", trace_id(j.queue))]
    return pairs


JOB_COLUMNS = ("ID", "CLASS", "STATE", "NODES", "ALLOC", "SUBMIT", "START", "WAIT", "OWNER")


def job_row(j: pb.Job) -> list[str]:
    return [str(j.job_id), class_name(j.job_class), state_name(j.state), str(j.nodes),
            str(j.alloc_nodes), fmt_time(j.submit_time), optional_time(j, "first_start"),
            fmt_time(j.wait), j.owner or "-"]


def job_table(jobs: Sequence[pb.Job]) -> str:
    return table([list(JOB_COLUMNS), *(job_row(j) for j in jobs)],
                 right=(0, 3, 4, 5, 6, 7))


def clock_line(c: pb.Clock) -> str:
    mode = c.mode + (f" x{fmt_num(c.speedup)}" if c.mode == "accelerated" else "")
    flags = [mode] + (["paused"] if c.paused else []) + (["idle"] if c.idle else [])
    engine = f"engine at t={fmt_num(c.engine_time)}"
    if c.lag > 0:
        engine += f", {fmt_num(c.lag)} s behind"
    return f"t={fmt_num(c.now)} ({', '.join(flags)}); {engine}"


def event_line(e: pb.Event) -> str:
    job = str(e.job_id) if e.job_id else "-"
    line = (f"{e.seq:>7}  t={fmt_num(e.time):<12} {e.kind:<14} job {job:>6}  "
            f"{state_name(e.state):<13} {e.cause or '-'}")
    if e.nodes:
        line += f"  nodes={e.nodes}"
    return line.rstrip()


def counts(items: Sequence[pb.ClassCount]) -> str:
    if not items:
        return "none"
    return ", ".join(f"{class_name(c.job_class)} {c.jobs} job{'s' if c.jobs != 1 else ''} "
                     f"({c.nodes} nodes)" for c in items)


def cluster_text(c: pb.ClusterInfo) -> str:
    queued = sum(x.jobs for x in c.queue_by_class)
    running = sum(x.jobs for x in c.running_by_class)
    options = ", ".join(f"{k}={v}" for k, v in sorted(c.policy_options.items()))
    policy = c.policy + (f" ({options})" if options else "")
    try:
        spec = json.loads(c.policy_spec) if c.policy_spec else {}
    except ValueError:
        spec = {}
    if isinstance(spec, dict) and spec.get("fallback") not in (None, "", c.policy):
        policy += f", fallback {spec['fallback']}"
    if isinstance(spec, dict) and isinstance(spec.get("budget"), int | float):
        policy += f", budget {fmt_num(spec['budget'])} s"
    machine = f"{c.name} ({c.cluster})" if c.cluster and c.cluster != c.name else c.name
    pairs = [
        ("cluster", f"{machine}: {c.total_nodes} nodes (largest job {c.max_job_nodes})"),
        ("nodes", f"free {c.free_nodes}, busy {c.busy_nodes}, down {c.down_nodes}, "
                  f"reserved {c.reserved_nodes}"),
        ("utilisation", f"{c.utilisation * 100:.1f}%"),
        ("jobs", f"queued {queued}, running {running}, pending {c.pending}, "
                 f"finished {c.finished}"),
        ("queued", counts(c.queue_by_class)),
        ("running", counts(c.running_by_class)),
        ("policy", f"{policy}, seed {c.seed}"),
        ("clock", clock_line(c.clock)),
    ]
    text = fields(pairs)
    if c.partitions:
        rows = [["BLOCK", "NODES", "JOB"]] + [[p.block, str(p.nodes), str(p.job_id)]
                                              for p in c.partitions]
        text += f"\npartitions ({len(c.partitions)} in use):\n"
        text += "\n".join("  " + line for line in table(rows, right=(1, 2)).splitlines())
    return text


# ---------------------------------------------------------------------- argument types
def _number(text: str, what: str, ok: Callable[[float], bool]) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not ok(value):
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


def seconds(text: str) -> float:
    """A duration >= 0: seconds, [D-]H:MM:SS or 1h30m (schedd.durations)."""
    try:
        return parse_duration(text, "a duration")
    except DurationError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def positive_seconds(text: str) -> float:
    value = seconds(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a duration > 0, got {text!r}")
    return value


def amount(text: str) -> float:
    """An ECC amount: seconds (ET/RT, any duration form) or nodes (EP/RP); > 0."""
    return positive_seconds(text)


def vtime(text: str) -> float:
    return _number(text, "a virtual time in seconds", lambda v: True)


def positive_int(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def count(text: str) -> int:
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return int(text)


def trace_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def job_class(text: str) -> str:
    name = CLASS_ALIASES.get(text.lower(), text.lower())
    if name not in CLASSES:
        raise argparse.ArgumentTypeError(
            f"unknown job class {text!r}{did_you_mean(name, CLASSES)}; expected one of "
            f"{', '.join(CLASSES)}")
    return name


def job_state(text: str) -> str:
    if text.lower() not in STATES:
        raise argparse.ArgumentTypeError(
            f"unknown job state {text!r}{did_you_mean(text.lower(), STATES)}; expected one "
            f"of {', '.join(STATES)}")
    return text.lower()


def ecc_kind(text: str) -> str:
    if text.upper() not in ECC_KINDS:
        raise argparse.ArgumentTypeError(f"expected ET, RT, EP or RP, got {text!r}")
    return text.upper()


# ---------------------------------------------------------------------- commands
class Context:
    """The parsed arguments plus the daemon connection, opened on first use."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self._channel: grpc.Channel | None = None

    @property
    def json(self) -> bool:
        return bool(self.args.json)

    def connect(self) -> grpc.Channel:
        """The channel, opened on first use; with --wait, once the daemon answers."""
        if self._channel is None:
            self._channel = channel(self.args)
            if self.args.wait:
                try:
                    grpc.channel_ready_future(self._channel).result(timeout=self.args.wait)
                except grpc.FutureTimeoutError:
                    raise Unreachable(f"the daemon at {self.args.server} did not come up "
                                      f"within {fmt_num(self.args.wait)} s (--wait)") from None
        return self._channel

    def call(self, name: str, request: Message, *, wait: bool = False) -> Any:
        """Call the unary RPC `name`; `wait`: no deadline unless --timeout was given."""
        self.connect()
        method = getattr(stub(self._channel), name)
        timeout = self.args.timeout
        if timeout is None:
            timeout = None if wait else RPC_TIMEOUT
        return method(request, timeout=timeout or None, metadata=metadata(self.args.token))

    def stream(self, name: str, request: Message) -> Any:
        self.connect()
        method = getattr(stub(self._channel), name)
        return method(request, timeout=self.args.timeout or None,
                      metadata=metadata(self.args.token))

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()


def cmd_submit(ctx: Context) -> None:
    a = ctx.args
    req = pb.SubmitJobRequest(
        request_id=a.request_id or "", job_id=a.job_id or 0, nodes=a.nodes,
        walltime=a.walltime, runtime=a.runtime or 0.0, job_class=CLASSES[a.job_class],
        min_nodes=a.min_nodes or 0, user=a.user, project=a.project, queue=a.queue,
        not_checkpointable=a.not_checkpointable, setup=a.setup)
    if a.requested_start is not None:
        req.requested_start = a.requested_start
    if a.at is not None:
        req.submit_time = a.at
    if a.ckpt_interval is not None:
        req.ckpt_interval = a.ckpt_interval
    r = ctx.call("SubmitJob", req)
    if ctx.json:
        print_json(as_dict(r))
    elif r.duplicate:
        print(f"job {r.job_id} was already submitted with request id {a.request_id!r} "
              f"at t={fmt_num(r.submit_time)}")
    else:
        print(f"submitted job {r.job_id} at t={fmt_num(r.submit_time)}")


def cmd_cancel(ctx: Context) -> None:
    r = ctx.call("CancelJob", pb.CancelJobRequest(job_id=ctx.args.job_id,
                                                  request_id=ctx.args.request_id or ""))
    if ctx.json:
        print_json(as_dict(r))
    else:
        print(f"cancel of job {r.job_id} accepted")


def cmd_status(ctx: Context) -> None:
    j = ctx.call("GetJob", pb.GetJobRequest(job_id=ctx.args.job_id))
    if ctx.json:
        print_json(as_dict(j))
    else:
        print(fields(job_fields(j)))


def cmd_list(ctx: Context) -> None:
    a = ctx.args
    req = pb.ListJobsRequest(states=[STATES[s] for s in a.state or ()],
                             classes=[CLASSES[c] for c in a.job_class or ()],
                             owner=a.owner or "", page_size=a.limit or 0,
                             page_token=a.page_token or "")
    if a.user is not None:
        req.user = a.user
    r = ctx.call("ListJobs", req)
    if not a.all:
        if ctx.json:
            print_json(as_dict(r))
            return
        if r.jobs:
            print(job_table(r.jobs))
        shown = f"{len(r.jobs)} of {r.total} job{'s' if r.total != 1 else ''}"
        more = (f"; more with --page-token {r.next_page_token} or --all"
                if r.next_page_token else "")
        print(f"({shown}{more})")
        return
    jobs = list(r.jobs)
    while r.next_page_token:
        req.page_token = r.next_page_token
        r = ctx.call("ListJobs", req)
        jobs.extend(r.jobs)
    if ctx.json:
        print_json([as_dict(j) for j in jobs])
        return
    if jobs:
        print(job_table(jobs))
    print(f"({len(jobs)} job{'s' if len(jobs) != 1 else ''})")


def cmd_notice(ctx: Context) -> None:
    a = ctx.args
    req = pb.AdvanceNoticeRequest(request_id=a.request_id or "", job_id=a.job_id,
                                  expected_arrival=a.arrival, nodes=a.nodes,
                                  walltime=a.walltime)
    if a.at is not None:
        req.notice_time = a.at
    r = ctx.call("AdvanceNotice", req)
    if ctx.json:
        print_json(as_dict(r))
    else:
        print(f"notice for job {a.job_id} accepted: {a.nodes} nodes expected at "
              f"t={fmt_num(a.arrival)} (stimulus {r.stimulus_id})")


def cmd_ecc(ctx: Context) -> None:
    a = ctx.args
    req = pb.ElasticControlRequest(request_id=a.request_id or "", job_id=a.job_id,
                                   kind=ECC_KINDS[a.kind], amount=a.amount)
    if a.at is not None:
        req.time = a.at
    r = ctx.call("ElasticControl", req)
    if ctx.json:
        print_json(as_dict(r))
    else:
        unit = "s" if a.kind in ("ET", "RT") else "nodes"
        print(f"{a.kind} {fmt_num(a.amount)} {unit} for job {a.job_id} accepted "
              f"(stimulus {r.stimulus_id}); watch for its ecc event")


def cmd_checkpoint_done(ctx: Context) -> None:
    r = ctx.call("CheckpointDone", pb.CheckpointDoneRequest(
        job_id=ctx.args.job_id, request_id=ctx.args.request_id or ""))
    if ctx.json:
        print_json(as_dict(r))
    else:
        print(f"checkpoint of job {ctx.args.job_id} reported done (stimulus {r.stimulus_id})")


def cmd_watch(ctx: Context) -> None:
    a = ctx.args
    # batch: one message carries the events that follow it (Event.more), gathered for at
    # most 50 ms: a watch that replays a long history gets it a batch a message, not an
    # event a message.
    req = pb.WatchEventsRequest(from_seq=a.from_seq or 0, kinds=a.kind or (),
                                job_id=a.job_id or 0, batch=True)
    if a.count == 0:
        return
    call = ctx.stream("WatchEvents", req)
    seen = 0
    try:
        for message in call:
            for event in _events_of(message):
                if ctx.json:
                    print_json(as_dict(event))
                else:
                    print(event_line(event))
                seen += 1
                if a.count is not None and seen >= a.count:
                    return
            sys.stdout.flush()
    finally:
        call.cancel()


def _events_of(message: pb.Event) -> list[pb.Event]:
    """A batched message's events in order: itself (without `more`), then `more`."""
    if not message.more:
        return [message]
    head = pb.Event()
    head.CopyFrom(message)
    head.ClearField("more")
    return [head, *message.more]


def cmd_cluster(ctx: Context) -> None:
    c = ctx.call("GetCluster", pb.GetClusterRequest())
    if ctx.json:
        print_json(as_dict(c))
    else:
        print(cluster_text(c))


def fetch_columns(ctx: Context, table: str) -> dict[str, list[float]]:
    """One GetResults table as columns of numbers."""
    cols: dict[str, list[float]] = {}
    for chunk in ctx.stream("GetResults", pb.GetResultsRequest(table=table)):
        for col in chunk.columns:
            cols.setdefault(col.name, []).extend(col.values)
    return cols


def cmd_results(ctx: Context) -> None:
    """Download the daemon's results as `schedd simulate` writes them: jobs.csv,
    summary.json, segments.csv and timeseries.csv (docs/results.md)."""
    from schedd.outputs import staged_dir

    out = Path(ctx.args.out)
    # Written aside and renamed once all is downloaded: a daemon that goes away midway
    # leaves no new or half-written folder (issue 34).
    with staged_dir(ctx.args.out) as part:
        n_jobs, n_seg = _download_results(ctx, Path(part))
    if ctx.json:
        print_json({"out": str(out), "jobs": n_jobs, "segments": n_seg})
    else:
        print(f"wrote {out}/jobs.csv, summary.json, segments.csv, timeseries.csv: "
              f"{n_jobs:,} finished jobs, {n_seg:,} segments")


def _download_results(ctx: Context, out: Path) -> tuple[int, int]:
    """The files of cmd_results, written in `out`; the jobs and segments written."""
    import numpy as np

    from schedd.core.cluster_spec import parse_cluster
    from schedd.core.results import COLUMNS
    from schedd.metrics import MetricOptions, summarize
    from schedd.run_files import RECORD_TABLES, recorder_from_tables
    from schedd.sim import sort_results, write_jobs_csv, write_run_files

    info = ctx.call("GetCluster", pb.GetClusterRequest())
    jobs = fetch_columns(ctx, "jobs")
    results = {name: np.asarray(jobs.get(name, []), dtype=np.int64 if code == "q"
                                else np.float64) for name, code in COLUMNS.items()}
    sort_results(results)
    tables = {}
    for table, cols in RECORD_TABLES.items():
        got = fetch_columns(ctx, table)
        tables[table] = {name: np.asarray(got.get(name, []), dtype=np.int64 if integer
                                          else np.float64) for name, _, integer in cols}
    write_jobs_csv(out / "jobs.csv", results)
    summary = summarize(results, total_nodes=info.total_nodes, options=MetricOptions())
    summary["run"] = {"cluster": info.cluster, "total_nodes": info.total_nodes,
                      "policy": info.policy, "source": f"daemon {ctx.args.server}"}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
    write_run_files(out, recorder_from_tables(tables), parse_cluster(info.cluster), results,
                    f"daemon:{info.cluster}")
    return len(results["id"]), len(tables["segments"]["job"])


def cmd_clock(ctx: Context) -> None:
    a = ctx.args
    action = a.clock_action or "get"
    if action == "get":
        c = ctx.call("GetClock", pb.GetClockRequest())
    elif action == "pause":
        c = ctx.call("Pause", pb.PauseRequest())
    elif action == "resume":
        c = ctx.call("Resume", pb.ResumeRequest())
    else:
        if a.until_idle:
            req = pb.AdvanceClockRequest(until_idle=True)
        elif a.to is not None:
            req = pb.AdvanceClockRequest(to=a.to)
        else:
            req = pb.AdvanceClockRequest(by=a.by)
        c = ctx.call("AdvanceClock", req, wait=True)
    if ctx.json:
        print_json(as_dict(c))
    else:
        print(clock_line(c))


# ---------------------------------------------------------------------- parser
def _globals_parent() -> SuggestingParser:
    """The global options again for each subcommand, so they may also come after it."""
    p = SuggestingParser(add_help=False)
    g = p.add_argument_group("global options (also accepted before the subcommand)")
    g.add_argument("--server", default=argparse.SUPPRESS, metavar="HOST:PORT",
                   help="daemon address")
    g.add_argument("--token", default=argparse.SUPPRESS, help="bearer token")
    g.add_argument("--tls-ca", default=argparse.SUPPRESS, metavar="FILE",
                   help="PEM root certificate (TLS)")
    g.add_argument("--timeout", type=seconds, default=argparse.SUPPRESS, metavar="S",
                   help="deadline of each call in seconds (0: none)")
    g.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                   help="machine-readable JSON output")
    g.add_argument("--wait", type=seconds, default=argparse.SUPPRESS, metavar="S",
                   help="wait up to S for the daemon to come up")
    return p


def build_parser() -> argparse.ArgumentParser:
    parser = SuggestingParser(
        prog=PROG,
        description="Command-line client of the schedd daemon (`schedd serve`): submit and "
                    "control jobs, follow events, inspect the cluster, drive the clock. "
                    "Times are virtual seconds on the daemon's clock.",
        epilog="Exit status: 0 success, 1 the daemon refused the request (printed as "
               "`schedctl: CODE: details`) or could not be reached, 2 bad usage. "
               "`schedctl COMMAND --help` describes each command; docs/schedctl.md has "
               "examples.")
    add_connection_arguments(parser)
    parser.add_argument("--timeout", type=seconds, default=None, metavar="S",
                        help=f"deadline of each call in seconds, 0: none (default "
                             f"{RPC_TIMEOUT:g}; `clock advance` and `watch`: none)")
    parser.add_argument("--json", action="store_true",
                        help="machine-readable output: the API's messages as JSON (proto "
                             "field names); `watch` prints one object per line")
    parser.add_argument("--wait", type=seconds, default=None, metavar="S",
                        help="wait up to S (a duration) for the daemon to come up before "
                             "the command, e.g. right after starting it (default: fail at "
                             "once if it is not there)")
    parent = _globals_parent()
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, help: str, description: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=description, parents=[parent])

    p = command("submit", "submit a job",
                "Submit one job. Its runtime (how long the emulated job really runs) "
                "defaults to the walltime. Prints the job id and submit time.")
    p.add_argument("--nodes", type=positive_int, required=True, metavar="N",
                   help="nodes requested (the maximum for malleable jobs)")
    p.add_argument("--walltime", type=positive_seconds, required=True, metavar="S",
                   help="requested time: seconds, [D-]H:MM:SS or 1h30m")
    p.add_argument("--runtime", type=seconds, metavar="S",
                   help="actual runtime, as --walltime (default: the walltime)")
    p.add_argument("--class", dest="job_class", type=job_class, default="batch",
                   metavar="CLASS",
                   help=f"job class: {', '.join(CLASSES)} (default batch)")
    p.add_argument("--min-nodes", type=positive_int, metavar="N",
                   help="malleable jobs: fewest nodes the job can run on (default --nodes)")
    p.add_argument("--user", type=trace_number, default=-1, metavar="U",
                   help="numeric user id, as in traces (default -1, unknown)")
    p.add_argument("--project", type=trace_number, default=-1, metavar="P",
                   help="numeric project id (default -1, unknown)")
    p.add_argument("--queue", type=trace_number, default=-1, metavar="Q",
                   help="numeric queue id (default -1, unknown)")
    p.add_argument("--setup", type=seconds, default=0.0, metavar="S",
                   help="setup seconds at each (re)start (default 0)")
    p.add_argument("--requested-start", type=vtime, metavar="T",
                   help="dedicated jobs: virtual time the job must start at")
    p.add_argument("--ckpt-interval", type=positive_seconds, metavar="S",
                   help="periodic checkpoint interval in compute seconds (default: the "
                        "daemon's --ckpt setting)")
    p.add_argument("--at", type=vtime, metavar="T",
                   help="submit time: a future virtual time holds the job (pending) until "
                        "then (default now)")
    p.add_argument("--job-id", type=positive_int, metavar="ID",
                   help="job id to use (default: the daemon picks the next free one)")
    p.add_argument("--request-id", metavar="ID",
                   help="idempotency key: a retry with the same key gets the first answer")
    p.add_argument("--not-checkpointable", action="store_true",
                   help="the job cannot be checkpointed (it is killed, not checkpointed, "
                        "when preempted)")
    p.set_defaults(run=cmd_submit)

    p = command("cancel", "cancel a job",
                "Cancel a job that has not finished. A user may cancel only its own jobs.")
    p.add_argument("job_id", type=positive_int, metavar="JOB_ID")
    p.add_argument("--request-id", metavar="ID", help="idempotency key")
    p.set_defaults(run=cmd_cancel)

    p = command("status", "show one job",
                "Show every field of one job: state, class, nodes, times (- where not yet "
                "known), owner.")
    p.add_argument("job_id", type=positive_int, metavar="JOB_ID")
    p.set_defaults(run=cmd_status)

    p = command("list", "list jobs",
                "List jobs in id order as a table: id, class, state, nodes requested, "
                "nodes allocated, submit time, first start, wait, owner. Filters combine "
                "(a job must match all of them; repeated values of one filter are "
                "alternatives). Without --all, one page is shown.")
    p.add_argument("--state", type=job_state, nargs="+", action="extend", metavar="S",
                   help=f"only jobs in these states: {', '.join(STATES)}")
    p.add_argument("--class", dest="job_class", type=job_class, nargs="+", action="extend",
                   metavar="C", help=f"only jobs of these classes: {', '.join(CLASSES)}")
    p.add_argument("--user", type=trace_number, metavar="U",
                   help="only jobs of this numeric (trace) user")
    p.add_argument("--owner", metavar="NAME",
                   help="only jobs submitted by this principal (the USER of a token)")
    p.add_argument("--limit", type=positive_int, metavar="N",
                   help="page size, 1 to 1000 (default the daemon's, 100)")
    p.add_argument("--page-token", metavar="TOKEN",
                   help="continue after the page that gave this token")
    p.add_argument("--all", action="store_true",
                   help="follow the pages to the end (with --json: one array of jobs)")
    p.set_defaults(run=cmd_list)

    p = command("notice", "announce an on-demand job",
                "Give the advance notice of an on-demand job: the scheduler may make room "
                "for it before it arrives. Submit the job later with the same --job-id "
                "and --class ondemand.")
    p.add_argument("--job-id", type=positive_int, required=True, metavar="ID",
                   help="id the on-demand job will be submitted with")
    p.add_argument("--arrival", type=vtime, required=True, metavar="T",
                   help="expected arrival, virtual time (not in the past)")
    p.add_argument("--nodes", type=positive_int, required=True, metavar="N")
    p.add_argument("--walltime", type=positive_seconds, required=True, metavar="S")
    p.add_argument("--at", type=vtime, metavar="T",
                   help="when the notice takes effect (default now)")
    p.add_argument("--request-id", metavar="ID", help="idempotency key")
    p.set_defaults(run=cmd_notice)

    p = command("ecc", "elastic control command: change a job's time or nodes",
                "Send an elastic control command to a job: ET/RT extend/reduce its time by "
                "AMOUNT seconds, EP/RP extend/reduce its nodes by AMOUNT. The scheduler "
                "applies or rejects it; the outcome is an `ecc` event (see watch).")
    p.add_argument("job_id", type=positive_int, metavar="JOB_ID")
    p.add_argument("kind", type=ecc_kind, metavar="ET|RT|EP|RP")
    p.add_argument("amount", type=amount, metavar="AMOUNT",
                   help="a duration (ET, RT: seconds, H:MM:SS or 1h30m) or whole nodes "
                        "(EP, RP); > 0")
    p.add_argument("--at", type=vtime, metavar="T",
                   help="when it takes effect, virtual time (default now)")
    p.add_argument("--request-id", metavar="ID", help="idempotency key")
    p.set_defaults(run=cmd_ecc)

    p = command("checkpoint-done", "report a requested checkpoint as written",
                "Tell the daemon that the checkpoint it asked a job for is written (what a "
                "job's checkpoint agent does; the daemon needs --agents external). Refused "
                "with FAILED_PRECONDITION if the job is not checkpointing.")
    p.add_argument("job_id", type=positive_int, metavar="JOB_ID")
    p.add_argument("--request-id", metavar="ID", help="idempotency key")
    p.set_defaults(run=cmd_checkpoint_done)

    p = command("watch", "follow the event stream",
                "Print job and cluster events as they happen, one line each: sequence "
                "number, virtual time, kind, job, state, cause (and nodes when given). "
                "Runs until interrupted, or until --count events.")
    p.add_argument("--from", dest="from_seq", type=count, metavar="SEQ",
                   help="start with the kept events from this sequence number (default: "
                        "only new events)")
    p.add_argument("--kind", nargs="+", action="extend", metavar="K",
                   help="only these kinds: submitted, notice, queued, started, resized, "
                        "checkpointing, preempted, completed, killed, cancelled, failed, "
                        "ecc, refused")
    p.add_argument("--job-id", type=positive_int, metavar="ID", help="only this job's events")
    p.add_argument("--count", type=count, metavar="N", help="stop after N events")
    p.set_defaults(run=cmd_watch)

    p = command("cluster", "show the cluster",
                "Show the machine and its load: nodes free/busy/down/reserved, "
                "utilisation, queued and running jobs by class, Blue Gene/Q partitions in "
                "use, the policy and the clock.")
    p.set_defaults(run=cmd_cluster)

    p = command("results", "download results: jobs.csv, summary.json, segments.csv, "
                "timeseries.csv",
                "Download the daemon's results into DIR as `schedd simulate` writes them: "
                "jobs.csv (finished jobs), summary.json (their metrics), segments.csv and "
                "timeseries.csv (every execution segment and the machine's state over "
                "time; docs/results.md). `schedd report DIR` draws them.")
    p.add_argument("-o", "--out", required=True, metavar="DIR", help="output directory")
    p.set_defaults(run=cmd_results)

    p = command("clock", "show or drive the virtual clock",
                "Show the daemon's virtual clock (the default action), or drive it: "
                "advance, pause, resume (operators only).")
    p.set_defaults(run=cmd_clock, clock_action=None)
    actions = p.add_subparsers(dest="clock_action", metavar="ACTION")
    actions.add_parser("get", help="show the clock (the default)", parents=[parent],
                       description="Show the clock: virtual time, mode, engine progress.")
    adv = actions.add_parser("advance", help="move the clock and wait until the engine "
                             "is there", parents=[parent],
                             description="Move the virtual clock forward (never back) and "
                             "wait until the engine has processed everything up to there: "
                             "the only way a lockstep clock moves, a fast-forward of a "
                             "realtime or accelerated one. No deadline unless --timeout.")
    target = adv.add_mutually_exclusive_group(required=True)
    target.add_argument("--to", type=vtime, metavar="T", help="to virtual time T")
    target.add_argument("--by", type=positive_seconds, metavar="S", help="by S seconds")
    target.add_argument("--until-idle", action="store_true",
                        help="lockstep only: until nothing is left to happen (no "
                             "arrival, start or end pending)")
    actions.add_parser("pause", help="stop the clock", parents=[parent],
                       description="Pause the virtual clock (realtime/accelerated).")
    actions.add_parser("resume", help="restart the clock", parents=[parent],
                       description="Resume a paused clock.")

    sub.add_parser("replay", help="replay a trace against the daemon (schedd-replay)",
                   add_help=False,
                   description="Runs schedd-replay with the remaining arguments; "
                               "`schedctl replay --help` shows its options.")
    return parser


# ---------------------------------------------------------------------- main
def _replay_argv(argv: Sequence[str]) -> tuple[list[str], list[str]] | None:
    """(global options, replay's args) if the subcommand is `replay`, else None."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "replay":
            return list(argv[:i]), list(argv[i + 1:])
        if word in GLOBAL_VALUE_OPTIONS:
            i += 2
        elif word.startswith("-"):
            i += 1
        else:
            return None
    return None


def _run_replay(global_argv: list[str], rest: list[str]) -> int:
    forwarded: list[str] = []
    i = 0
    while i < len(global_argv):  # connection options given before `replay` go along
        word = global_argv[i]
        name = word.split("=", 1)[0]
        if name in ("--server", "--token", "--tls-ca"):
            forwarded += [word] if "=" in word else global_argv[i:i + 2]
            i += 1 if "=" in word else 2
            continue
        if name in ("-h", "--help"):
            build_parser().print_help()
            return 0
        i += 2 if word in GLOBAL_VALUE_OPTIONS else 1
    try:
        from . import replay
    except ModuleNotFoundError as err:
        if err.name not in (f"{__package__}.replay", "replay"):
            raise
        print(f"{PROG}: replay is not available: {err}", file=sys.stderr)
        return 1
    result = replay.main(forwarded + rest)
    return int(result or 0)


def _failure(err: grpc.RpcError, server: str) -> str:
    code = err.code() if hasattr(err, "code") else None
    details = (err.details() if hasattr(err, "details") else None) or str(err)
    if code is grpc.StatusCode.UNAVAILABLE and UNREACHABLE.search(details):
        return (f"{PROG}: cannot reach the schedd daemon at {server} ({details.strip()}). "
                "Is `schedd serve` running there? Set the address with --server or "
                "$SCHEDD_SERVER.")
    name = code.name if code is not None else "ERROR"
    text = f"{PROG}: {name}: {details}"
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        text += f" (no answer from {server} in time; --timeout sets the deadline)"
    return text


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    split = _replay_argv(argv)
    if split is not None:
        return _run_replay(*split)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 2
    args.server = args.server or os.environ.get("SCHEDD_SERVER") or DEFAULT_SERVER
    ctx = Context(args)
    try:
        args.run(ctx)
    except grpc.RpcError as err:
        print(_failure(err, args.server), file=sys.stderr)
        return 1
    except Unreachable as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `schedctl watch | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except UsageError as err:  # an --out that cannot be written
        print(f"{PROG}: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # e.g. an unreadable --tls-ca file
        print(f"{PROG}: {err.filename or ''}{': ' if err.filename else ''}"
              f"{err.strerror or err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        ctx.close()
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # `schedctl watch | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
