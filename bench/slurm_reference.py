"""Reference runs on a real Slurm: a workload submitted to slurmctld at its submit times,
and what Slurm did with it, as sacct says.

    python bench/slurm_reference.py run WORKLOAD.tsv --conf TEMPLATE.conf \
        [--accounts ACCOUNTS.tsv] -o RUN_DIR
    python bench/slurm_reference.py workload KIND --seed N -o WORKLOAD.tsv
    python bench/slurm_reference.py check      # can a Slurm run here? (exit 0: yes)

`run` needs root and Slurm 22.05's Debian packages (slurmctld slurmd slurmdbd
slurm-client munge) and MariaDB on its local socket. In a temporary directory it starts
munged, slurmdbd (a database of its own), slurmctld and one `slurmd -N` per node, all on
free ports; adds the accounts and users (`useradd -M` for users that do not exist); submits
each job as `sleep R` at its submit time (`sbatch --uid`), cancels and chains jobs as the
workload says; snapshots `sprio` every few seconds under priority/multifactor; waits for
every job to end and reach the accounting database; and writes to RUN_DIR:

    sacct.txt    sacct --parsable2 (header included): one line per job
    slurm.conf   the configuration it ran with (the template, filled in)
    assoc.txt    sacctmgr --parsable2 show associations
    sshare.txt   sshare -a -l --parsable2 at the end
    sprio.tsv    the sprio snapshots (multifactor only)
    timeline.tsv slurmctld's own instants, to the millisecond, from its log: each job's
                 submission, start (main scheduler or backfill), end, time-limit kill
                 and, with DebugFlags TraceJobs, the release of its nodes (COMPLETING
                 cleared); with Backfill, each backfill cycle's beginning and each
                 job's expected start and nodes as the cycle planned them (reserve)
    jobmap.tsv   workload job number -> Slurm job id
    run.json     versions, host, start time, command

`--debug-flags` (default TraceJobs,Backfill) adds slurm.conf's DebugFlags for those
lines; they only add log lines. `--debug-flags ''` leaves the template as it is.

Every daemon it started is stopped and its database dropped, whatever happens.

A workload (TSV, header first) has one job per line: `job submit user account partition
nodes cpus exclusive limit_min sleep cancel_after after`: submitted `submit` s after the
run starts; `nodes` whole nodes (`-N nodes --exclusive` when exclusive is 1) or `cpus`
cores (`-n cpus`); a time limit of `limit_min` minutes; `sleep` s of work (longer than the
limit: Slurm kills it, TIMEOUT); `scancel` `cancel_after` s after submission (empty:
never); `--dependency=afterok:` the Slurm id of workload job `after` (empty: none). An
accounts file (TSV) lists `account parent fairshare users` (users comma-separated).
bench/slurm_harness/ holds the templates, workloads and accounts of the committed runs
(bench/slurm_reference/runs; docs/slurm.md).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime
import json
import math
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HARNESS = Path(__file__).resolve().parent / "slurm_harness"
DAEMONS = ("munged", "slurmdbd", "slurmctld", "slurmd")
SACCT_FIELDS = ("JobIDRaw,JobName,User,Account,Partition,QOS,Submit,Eligible,Start,End,"
                "Elapsed,Timelimit,NNodes,NCPUS,ReqNodes,ReqCPUS,State,Priority,Flags,"
                "ExitCode,NodeList,SubmitLine")
SPRIO_EVERY = 3.0  # s between sprio snapshots
DEBUG_FLAGS = "TraceJobs,Backfill"  # the log lines timeline.tsv needs beyond info level
MAX_DRAIN = 3600.0  # s a run may take after its last submission before it is given up
WORKLOAD_FIELDS = ("job", "submit", "user", "account", "partition", "nodes", "cpus",
                   "exclusive", "limit_min", "sleep", "cancel_after", "after")


class HarnessError(RuntimeError):
    """A reference run that cannot go on; the message says which step and why."""


# --- workloads ----------------------------------------------------------------------------

@dataclass(frozen=True)
class WorkloadJob:
    job: int
    submit: float
    user: str
    account: str
    partition: str
    nodes: int
    cpus: int
    exclusive: bool
    limit_min: int
    sleep: int
    cancel_after: float | None
    after: int | None


def read_workload(path: Path) -> list[WorkloadJob]:
    jobs = []
    with open(path, newline="") as f:
        rows = csv.DictReader(f, delimiter="\t")
        missing = set(WORKLOAD_FIELDS) - set(rows.fieldnames or ())
        if missing:
            raise HarnessError(f"{path}: columns missing: {', '.join(sorted(missing))}")
        for number, row in enumerate(rows, start=2):
            try:
                jobs.append(WorkloadJob(
                    int(row["job"]), float(row["submit"]), row["user"], row["account"],
                    row["partition"], int(row["nodes"] or 0), int(row["cpus"] or 0),
                    row["exclusive"] == "1", int(row["limit_min"]), int(row["sleep"]),
                    float(row["cancel_after"]) if row["cancel_after"] else None,
                    int(row["after"]) if row["after"] else None))
            except ValueError as e:
                raise HarnessError(f"{path}:{number}: {e}") from None
    return sorted(jobs, key=lambda j: (j.submit, j.job))


def write_workload(path: Path, jobs: list[WorkloadJob]) -> None:
    with open(path, "w", newline="") as f:
        out = csv.writer(f, delimiter="\t", lineterminator="\n")
        out.writerow(WORKLOAD_FIELDS)
        for j in jobs:
            out.writerow([j.job, f"{j.submit:g}", j.user, j.account, j.partition, j.nodes,
                          j.cpus, int(j.exclusive), j.limit_min, j.sleep,
                          "" if j.cancel_after is None else f"{j.cancel_after:g}",
                          "" if j.after is None else j.after])


# Each kind: jobs, the span of submissions (s), nodes, CPUs a node, accounts/users and
# partitions; the mix of sizes and lengths keeps a queue of a few minutes on the machine.
KINDS = {
    "basic": dict(jobs=120, span=300, nodes=16, cpus=4, users=[("u1", "a1")],
                  partitions=["batch"]),
    "multifactor": dict(jobs=120, span=300, nodes=16, cpus=4,
                        users=[("u1", "a1"), ("u2", "a1"), ("u3", "a2"), ("u4", "a3"),
                               ("u5", "a4")],
                        partitions=["batch"]),
    "partitions": dict(jobs=120, span=300, nodes=16, cpus=4,
                       users=[("u1", "a1"), ("u2", "a2"), ("u3", "a3")],
                       partitions=["short", "long"],
                       part_nodes={"short": 12, "long": 12}),  # partitions.conf
    "tiny": dict(jobs=14, span=20, nodes=4, cpus=4, users=[("u1", "a1"), ("u2", "a2")],
                 partitions=["batch"]),
}


def make_workload(kind: str, seed: int) -> list[WorkloadJob]:
    """A workload of `kind` (KINDS) drawn from `seed`: node-exclusive and per-core jobs,
    some that outlive their limit, a few cancelled, a few chained by afterok."""
    spec = KINDS[kind]
    rng = random.Random(f"{kind}-{seed}")
    n, span, nodes = spec["jobs"], spec["span"], spec["nodes"]
    tiny = kind == "tiny"
    submits = sorted(round(rng.uniform(0, span)) for _ in range(n))
    jobs = []
    for k, submit in enumerate(submits, start=1):
        user, account = rng.choice(spec["users"])
        partition = rng.choice(spec["partitions"])
        exclusive = rng.random() < 0.6
        if exclusive:
            size = rng.choice([1, 1, 1, 2, 2, 3, 4, 4, 6, 8, nodes // 2, nodes])
            size = min(size, spec.get("part_nodes", {}).get(partition, nodes))
            ncpus = 0
        else:
            size, ncpus = 0, rng.choice([1, 1, 2, 3, 4, 6, 8])
        # 3-15 s (tiny), 5-81 s
        sleep = rng.randint(3, 15) if tiny else int(round(math.exp(rng.uniform(1.6, 4.4))))
        limit = max(1, -(-sleep // 60) + rng.choice([0, 0, 1, 2]))
        if partition == "short":
            limit = min(limit, 2)
            sleep = min(sleep, 110)
        timeout = not tiny and rng.random() < 0.05
        if timeout:
            limit, sleep = 1, 400  # killed at its limit (60-90 s: Slurm checks every 30 s)
            size, ncpus = (min(size, 2), 0) if exclusive else (0, min(ncpus, 4))
        cancel = None
        if rng.random() < 0.04:
            cancel = float(rng.choice([5, 20, 45, 90]))
        after = None
        if k > 5 and rng.random() < (0.05 if not tiny else 0.2):
            # only on a job that ends well: Slurm keeps a job whose afterok can never be
            # met pending for ever (without kill_invalid_depend)
            done = [j.job for j in jobs[-6:]
                    if j.cancel_after is None and j.sleep < 60 * j.limit_min]
            after = rng.choice(done) if done else None
        jobs.append(WorkloadJob(k, float(submit), user, account, partition, size, ncpus,
                                exclusive, limit, sleep, cancel, after))
    return jobs


# --- the cluster ---------------------------------------------------------------------------

def free_ports(count: int) -> int:
    """The first of `count` consecutive free TCP ports on this host."""
    rng = random.Random(os.getpid() ^ time.time_ns())
    for _ in range(200):
        base = rng.randrange(20000, 60000 - count)
        socks = []
        try:
            for port in range(base, base + count):
                s = socket.socket()
                socks.append(s)
                s.bind(("0.0.0.0", port))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise HarnessError(f"no {count} consecutive free ports found")


def check() -> list[str]:
    """What keeps a real Slurm from running here (empty: nothing)."""
    missing = []
    if os.geteuid() != 0:
        missing.append("not root (slurmd and sbatch --uid need root)")
    for tool in ("slurmctld", "slurmd", "slurmdbd", "sbatch", "sacct", "sacctmgr",
                 "munged", "mungekey", "mysql", "useradd"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            missing.append(f"{tool} not found (apt-get install slurmctld slurmd slurmdbd "
                           "slurm-client munge)")
    if not missing:
        probe = subprocess.run(["mysql", "-e", "select 1"], capture_output=True, text=True)
        if probe.returncode != 0:
            missing.append("MariaDB does not answer root on its socket: "
                           + probe.stderr.strip())
    return missing


def tool(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def with_debug_flags(conf: str, flags: str) -> str:
    """slurm.conf with DebugFlags `flags` and SlurmctldDebug raised to verbose: Slurm logs
    a debug flag's lines (`log_flag`) at the verbose level."""
    kept = [line for line in conf.splitlines()
            if not line.strip().startswith(("DebugFlags=", "SlurmctldDebug="))]
    return "\n".join(kept + ["SlurmctldDebug=verbose", f"DebugFlags={flags}"]) + "\n"


# slurmctld's log lines for timeline.tsv (Slurm 22.05, where %pJ prints "JobId=N"):
# event, pattern (job id, then the nodes where the line names them).
TIMELINE_LINES = (
    ("submit", re.compile(r"_slurm_rpc_submit_batch_job: JobId=(\d+)")),
    ("start_main", re.compile(r"sched: Allocate JobId=(\d+) NodeList=(\S+)")),
    ("start_backfill", re.compile(r"Started JobId=(\d+) in \S+ on (\S+)")),
    ("end", re.compile(r"_job_complete: JobId=(\d+) done")),
    ("timeout", re.compile(r"Time limit exhausted for JobId=(\d+)")),
    ("release", re.compile(r"cleanup_completing: JobId=(\d+)")),  # TraceJobs
    ("backfill_cycle", re.compile(r"(?:backfill|_attempt_backfill): beginning")),  # Backfill
    # A job's expected start and nodes as the cycle just planned them (DebugFlags
    # Backfill): the job, its nodes, its expected start.
    ("reserve", re.compile(r"_dump_job_sched: JobId=(\d+) to start at (\S+), end at \S+ "
                           r"on nodes (\S+) in partition")),
)


def timeline(log: Path) -> list[tuple[float, str, str, str, str]]:
    """(Unix time, event, Slurm job id, nodes, expected start) for each line of
    slurmctld's log that TIMELINE_LINES knows, in the log's order; its stamps are local
    time to the millisecond (LogTimeFormat's default, iso8601_ms). The expected start
    (Unix time, whole seconds) is a reservation's only."""
    out = []
    with open(log, errors="replace") as f:
        for line in f:
            if line[:1] != "[" or "]" not in line:
                continue
            stamp, _, text = line[1:].partition("] ")
            for event, pattern in TIMELINE_LINES:
                found = pattern.search(text)
                if found is None:
                    continue
                try:
                    at = datetime.datetime.fromisoformat(stamp).timestamp()
                except ValueError:
                    break
                groups = found.groups()
                if event == "reserve":
                    try:
                        start = datetime.datetime.fromisoformat(groups[1]).timestamp()
                    except ValueError:
                        break
                    out.append((at, event, groups[0], groups[2], f"{start:.0f}"))
                    break
                out.append((at, event, groups[0] if groups else "",
                            groups[1] if len(groups) > 1 else "", ""))
                break
    return out


def write_timeline(rows: list[tuple[float, str, str, str, str]], path: Path) -> None:
    with open(path, "w") as f:
        f.write("time\tevent\tjob\tnodes\texpected_start\n")
        for at, event, job, nodes, start in rows:
            f.write(f"{at:.3f}\t{event}\t{job}\t{nodes}\t{start}\n")


@dataclass
class Cluster:
    """The daemons of one run, on their own ports, in their own directory."""

    root: Path
    template: str
    accounts: list[tuple[str, str, int, list[str]]]
    name: str = ""
    procs: list[subprocess.Popen] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    database: str = ""
    node_names: list[str] = field(default_factory=list)
    debug_flags: str = ""  # slurm.conf DebugFlags to add (and the verbose level they log at)

    def render(self) -> tuple[str, str]:
        """slurm.conf (the template filled in) and slurmdbd.conf for this run."""
        host = socket.gethostname().split(".")[0]
        self.name = "r" + format(time.time_ns() % 36**6, "x")[-6:]
        nodes = 0
        for line in self.template.splitlines():
            if line.strip().startswith("NodeName=") and "@NODES@" in line:
                nodes = int(line.split("@NODES@", 1)[1].split()[0].lstrip(":"))
        if nodes <= 0:
            raise HarnessError("the template needs NodeName=@NODES@:COUNT ...")
        base = free_ports(nodes + 2)
        self.node_names = [f"n{k}" for k in range(1, nodes + 1)]
        self.database = f"slurm_ref_{self.name}"
        values = {
            "CLUSTER": self.name, "HOST": host, "DIR": str(self.root),
            "CTLD_PORT": str(base), "DBD_PORT": str(base + 1),
            "NODE_PORTS": f"[{base + 2}-{base + 1 + nodes}]",
        }
        text = self.template.replace(f"@NODES@:{nodes}", f"n[1-{nodes}]")
        for key, value in values.items():
            text = text.replace(f"@{key}@", value)
        if "@" in "".join(x.split("#")[0] for x in text.splitlines()):
            raise HarnessError("the template has a placeholder this harness does not know")
        if self.debug_flags:
            text = with_debug_flags(text, self.debug_flags)
        dbd_conf = (
            f"AuthType=auth/munge\nAuthInfo=socket={self.root}/munge.sock\n"
            f"DbdHost=localhost\nDbdPort={base + 1}\nSlurmUser=root\n"
            f"StorageType=accounting_storage/mysql\nStorageHost=localhost\n"
            f"StorageUser=root\nStorageLoc={self.database}\n"
            f"PidFile={self.root}/slurmdbd.pid\nLogFile={self.root}/log/slurmdbd.log\n"
            "DebugLevel=info\n")
        return text, dbd_conf

    def start(self) -> None:
        for sub in ("state", "log", "spool"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        conf, dbd_conf = self.render()
        (self.root / "slurm.conf").write_text(conf)
        dbd = self.root / "slurmdbd.conf"
        dbd.write_text(dbd_conf)
        dbd.chmod(0o600)
        self.env = {**os.environ, "SLURM_CONF": str(self.root / "slurm.conf")}
        self.env.pop("SLURM_TIME_FORMAT", None)  # sacct's own format, as a centre has it
        key = self.root / "munge.key"
        run([tool("mungekey"), "-c", "-f", "-k", str(key)])
        key.chmod(0o600)
        self.spawn("munged", [tool("munged"), "-F", "--force", "-S",
                              str(self.root / "munge.sock"), "--key-file", str(key),
                              "--pid-file", str(self.root / "munged.pid"),
                              "--log-file", str(self.root / "log" / "munged.log"),
                              "--seed-file", str(self.root / "munge.seed")])
        wait_for(lambda: (self.root / "munge.sock").exists(), 10, "munged's socket")
        self.spawn("slurmdbd", [tool("slurmdbd"), "-D"])
        wait_for(lambda: self.sacctmgr_ok(), 30, "slurmdbd to answer sacctmgr")
        self.sacctmgr("add", "cluster", self.name)
        for account, parent, share, users in self.accounts:
            self.sacctmgr("add", "account", account, f"parent={parent}",
                          f"fairshare={share}", f"cluster={self.name}")
            for user in users:
                ensure_user(user)
                self.sacctmgr("add", "user", user, f"account={account}",
                              f"cluster={self.name}")
        self.spawn("slurmctld", [tool("slurmctld"), "-D", "-i"])
        for node in self.node_names:
            (self.root / "spool" / node).mkdir(exist_ok=True)
            self.spawn(f"slurmd-{node}", [tool("slurmd"), "-D", "-N", node])
        wait_for(self.nodes_idle, 60, "every node to be idle")

    def spawn(self, label: str, argv: list[str]) -> None:
        with open(self.root / "log" / f"{label}.out", "w") as log:
            self.procs.append(subprocess.Popen(argv, env=self.env, stdout=log,
                                               stderr=subprocess.STDOUT,
                                               start_new_session=True))
        time.sleep(0.2)
        if self.procs[-1].poll() is not None:
            raise HarnessError(f"{label} exited at start ({self.procs[-1].returncode}); "
                               f"see {self.root}/log/{label}.out")

    def cmd(self, *argv: str, check: bool = True) -> str:
        done = subprocess.run(list(argv), env=self.env, capture_output=True, text=True,
                              timeout=60)
        if check and done.returncode != 0:
            raise HarnessError(f"{' '.join(argv)}: {done.stderr.strip() or done.stdout}")
        return done.stdout

    def sacctmgr(self, *args: str) -> str:
        return self.cmd("sacctmgr", "-i", *args)

    def sacctmgr_ok(self) -> bool:
        done = subprocess.run(["sacctmgr", "-n", "show", "cluster"], env=self.env,
                              capture_output=True, text=True, timeout=30)
        return done.returncode == 0

    def nodes_idle(self) -> bool:
        done = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], env=self.env,
                              capture_output=True, text=True, timeout=30)
        states = [line.split()[1] for line in done.stdout.splitlines() if line.strip()]
        return done.returncode == 0 and len(states) >= len(self.node_names) \
            and all(s == "idle" for s in states)

    def sick_nodes(self) -> list[str]:
        """Nodes drained or down, with Slurm's reason (a job that could not launch)."""
        text = self.cmd("sinfo", "-h", "-N", "-o", "%N|%t|%E", check=False)
        return [line for line in text.splitlines()
                if line.count("|") == 2 and line.split("|")[1].rstrip("*~#!%$@^-")
                in ("drain", "drng", "down", "fail", "failg")]

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for proc in self.procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        # A job's script runs in a session of its own under slurmstepd, which may outlive
        # slurmd: whatever runs from this run's spool goes, with its session (the sleep).
        found = subprocess.run(["pgrep", "-f", str(self.root)], capture_output=True,
                               text=True).stdout.split()
        own = os.getpgid(0)
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                group = os.getpgid(int(pid))
                if group != own:
                    os.killpg(group, signal.SIGKILL)
        if self.database:
            subprocess.run(["mysql", "-e", f"DROP DATABASE IF EXISTS `{self.database}`"],
                           capture_output=True, check=False)


def run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise HarnessError(f"{' '.join(argv)}: {done.stderr.strip()}")


def ensure_user(name: str) -> None:
    if subprocess.run(["id", "-u", name], capture_output=True).returncode != 0:
        run(["useradd", "-M", "-N", "-s", "/usr/sbin/nologin", name])


def wait_for(ready, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if ready():
                return
        except (subprocess.TimeoutExpired, OSError):
            pass
        time.sleep(0.5)
    raise HarnessError(f"gave up waiting {seconds:g} s for {what}")


def read_accounts(path: Path | None) -> list[tuple[str, str, int, list[str]]]:
    if path is None:
        return [("a1", "root", 1, ["u1"])]
    out = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            out.append((row["account"], row["parent"] or "root", int(row["fairshare"]),
                        [u for u in row["users"].split(",") if u]))
    return out


# --- a run ---------------------------------------------------------------------------------

def submit_argv(job: WorkloadJob, after_id: str | None) -> list[str]:
    argv = ["sbatch", "--parsable", f"--uid={job.user}", f"--account={job.account}",
            f"--partition={job.partition}", f"--time={job.limit_min}",
            f"--job-name=w{job.job}", "--output=/dev/null", "--chdir=/tmp"]
    if job.nodes:
        argv += [f"--nodes={job.nodes}"] + (["--exclusive"] if job.exclusive else [])
    else:
        argv += [f"--ntasks={job.cpus}"]
    if after_id:
        argv.append(f"--dependency=afterok:{after_id}")
    return argv + ["--wrap", f"sleep {job.sleep}"]


def drive(cluster: Cluster, jobs: list[WorkloadJob], out: Path,
          multifactor: bool, log=print) -> dict[int, str]:
    """Submit, cancel and snapshot in real time; returns workload job -> Slurm job id."""
    ids: dict[int, str] = {}
    cancels = sorted((j.submit + j.cancel_after, j.job) for j in jobs
                     if j.cancel_after is not None)
    with contextlib.ExitStack() as stack:
        sprio = stack.enter_context(open(out / "sprio.tsv", "w")) if multifactor else None
        if sprio:
            # sprio's %A %F %J %P: each factor times its PriorityWeight*, as Slurm adds them
            sprio.write("TIME\tJOBID\tAGE\tFAIRSHARE\tJOBSIZE\tPARTITION\tPRIORITY\n")
        _drive(cluster, jobs, cancels, ids, sprio, log)
    return ids


def _drive(cluster: Cluster, jobs: list[WorkloadJob], cancels: list[tuple[float, int]],
           ids: dict[int, str], sprio, log) -> None:
    t0 = time.time()
    next_sprio = t0
    pending = list(jobs)
    while pending or cancels:
        now = time.time() - t0
        while pending and pending[0].submit <= now:
            job = pending.pop(0)
            after = ids.get(job.after) if job.after is not None else None
            ids[job.job] = cluster.cmd(*submit_argv(job, after)).strip().split(";")[0]
        while cancels and cancels[0][0] <= now:
            _, number = cancels.pop(0)
            cluster.cmd("scancel", ids[number], check=False)
        if sprio and time.time() >= next_sprio:
            snapshot_sprio(cluster, sprio)
            next_sprio += SPRIO_EVERY
        upcoming = [x for x in (pending[0].submit if pending else None,
                                cancels[0][0] if cancels else None) if x is not None]
        if upcoming:
            time.sleep(max(0.0, min(0.2, min(upcoming) - (time.time() - t0))))
    log(f"  all {len(jobs)} jobs submitted by {time.time() - t0:.0f} s")
    deadline = time.time() + MAX_DRAIN
    while True:
        left = cluster.cmd("squeue", "-h", "-o", "%i %r").splitlines()
        if not left:
            break
        if time.time() > deadline:
            raise HarnessError(f"{len(left)} jobs still queued {MAX_DRAIN:g} s after "
                               f"the last submission: {'; '.join(left[:5])}")
        sick = cluster.sick_nodes()
        if sick:
            raise HarnessError(f"nodes out of service, so jobs would wait for ever: "
                               f"{'; '.join(sick[:3])} (log/slurmd-*.log)")
        if sprio and time.time() >= next_sprio:
            snapshot_sprio(cluster, sprio)
            next_sprio += SPRIO_EVERY
        time.sleep(1.0)
    log(f"  every job ended by {time.time() - t0:.0f} s")


def controller_started(log: Path) -> float | None:
    """When slurmctld started, to the millisecond, from its log's first "started" line
    (local time, as the daemons write it); None if the log does not say."""
    try:
        with open(log, errors="replace") as f:
            for line in f:
                if "slurmctld version" in line and " started" in line and line[:1] == "[":
                    stamp = line[1:line.index("]")]
                    return datetime.datetime.fromisoformat(stamp).timestamp()
    except (OSError, ValueError):
        return None
    return None


def snapshot_sprio(cluster: Cluster, out) -> None:
    now = int(time.time())
    text = cluster.cmd("sprio", "-n", "-h", "-o", "%i|%A|%F|%J|%P|%Y", check=False)
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) == 6 and cells[0].isdigit():
            out.write("\t".join([str(now)] + cells) + "\n")


def dump(cluster: Cluster, ids: dict[int, str], out: Path, started: float) -> list[int]:
    """sacct (once the database holds every job's end), associations, sshare, jobmap;
    returns the workload jobs the database never got. Slurm records a job there when
    it becomes eligible: one cancelled while it waited on a dependency never is."""
    start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started - 60))

    def sacct() -> str:
        return cluster.cmd("sacct", "--parsable2", "-a", "-X", f"--clusters={cluster.name}",
                           "-S", start, "-E", "now", "-o", SACCT_FIELDS)

    seen: list[int] = []  # rows in the database at each poll

    def complete() -> bool:
        lines = [line for line in sacct().splitlines()[1:] if line.strip()]
        seen.append(len(lines))
        if not all(line.split("|")[9] not in ("", "Unknown") for line in lines):
            return False
        # every job, or no new one for 10 s (20 polls) once every row has its end
        return len(lines) >= len(ids) or (len(seen) > 20 and seen[-21] == len(lines))

    try:
        wait_for(complete, 90, "every job's end in the accounting database")
    finally:
        text = sacct()
        (out / "sacct.txt").write_text(text)
    names = {line.split("|")[1] for line in text.splitlines()[1:] if line.strip()}
    missing = [number for number in sorted(ids) if f"w{number}" not in names]
    (out / "assoc.txt").write_text(cluster.cmd(
        "sacctmgr", "--parsable2", "show", "associations", f"cluster={cluster.name}",
        "format=Cluster,Account,User,Partition,Share,ParentName,QOS"))
    (out / "sshare.txt").write_text(cluster.cmd("sshare", "-a", "-l", "--parsable2",
                                                check=False))
    with open(out / "jobmap.tsv", "w") as f:
        f.write("job\tslurm_id\n")
        for number in sorted(ids):
            f.write(f"{number}\t{ids[number]}\n")
    return missing


def reference_run(workload: Path, template: Path, accounts: Path | None, out: Path,
                  keep: Path | None = None, log=print, workdir: Path | None = None,
                  debug_flags: str = DEBUG_FLAGS) -> Path:
    """One run of `workload` on a real Slurm configured by `template`; its files in
    `out` (created; must not hold a run already). The daemons work in `workdir` (made
    and removed; default: a new temporary directory)."""
    missing = check()
    if missing:
        raise HarnessError("a real Slurm cannot run here: " + "; ".join(missing))
    jobs = read_workload(workload)
    if (out / "sacct.txt").exists():
        raise HarnessError(f"{out} holds a run already")
    if workdir is not None:
        workdir.mkdir(parents=True)
        root = workdir
    else:
        root = Path(tempfile.mkdtemp(prefix="slurm-ref-"))
    os.chmod(root, 0o755)  # jobs run as their users; slurmd's spool must be reachable
    closed = [p for p in root.parents if not os.stat(p).st_mode & 0o001]
    if closed:
        shutil.rmtree(root, ignore_errors=True)
        raise HarnessError(f"jobs run as their own users, who cannot reach {closed[0]} "
                           f"(mode {os.stat(closed[0]).st_mode & 0o777:o}); give another "
                           "directory")
    cluster = Cluster(root, template.read_text(), read_accounts(accounts),
                      debug_flags=debug_flags)
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    started = time.time()
    try:
        cluster.start()
        log(f"  Slurm cluster {cluster.name} up in {root} ({len(cluster.node_names)} nodes)")
        multifactor = "priority/multifactor" in (root / "slurm.conf").read_text()
        ids = drive(cluster, jobs, partial, multifactor, log)
        missing = dump(cluster, ids, partial, started)
        shutil.copy(root / "slurm.conf", partial / "slurm.conf")
        versions = cluster.cmd("sinfo", "-V").strip()
        (partial / "run.json").write_text(json.dumps({
            "slurm": versions, "host": socket.gethostname(), "cpus": os.cpu_count(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
            "seconds": round(time.time() - started),
            "workload": workload.name, "template": template.name,
            "accounts": accounts.name if accounts else None,
            "load_average": os.getloadavg(),
            # Unix time slurmctld started: its background thread's last pass, which the
            # first submission's main pass waits batch_sched_delay after (option boot)
            "controller_started": controller_started(root / "log" / "slurmctld.log"),
            # cancelled before they became eligible: Slurm's accounting never had them
            "not_in_accounting": missing,
        }, indent=1) + "\n")
        if not multifactor:
            (partial / "sprio.tsv").unlink(missing_ok=True)
        write_timeline(timeline(root / "log" / "slurmctld.log"), partial / "timeline.tsv")
    except BaseException as e:
        if any(partial.iterdir()):  # what was gathered is kept, to see what went wrong
            failed = out.with_name(out.name + ".failed")
            shutil.rmtree(failed, ignore_errors=True)
            partial.rename(failed)
            if isinstance(e, HarnessError):
                raise HarnessError(f"{e} (what the run gathered: {failed})") from None
        shutil.rmtree(partial, ignore_errors=True)
        raise
    finally:
        cluster.stop()
        if keep is not None:
            shutil.copytree(root / "log", keep, dirs_exist_ok=True)
        shutil.rmtree(root, ignore_errors=True)
    if out.exists():
        out.rmdir()  # an empty folder only: a run is never overwritten
    partial.rename(out)
    return out


def _stop_on_signal(number: int, _frame: object) -> None:
    raise HarnessError(f"stopped by signal {number}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="one reference run on a real Slurm")
    r.add_argument("workload", type=Path)
    r.add_argument("--conf", type=Path, required=True, help="slurm.conf template")
    r.add_argument("--accounts", type=Path, help="accounts TSV (default: a1 with u1)")
    r.add_argument("-o", "--out", type=Path, required=True, help="run directory to make")
    r.add_argument("--keep-logs", type=Path, help="copy the daemons' logs here")
    r.add_argument("--debug-flags", default=DEBUG_FLAGS, metavar="FLAGS",
                   help="DebugFlags to add to slurm.conf, for timeline.tsv's releases and "
                        "backfill cycles (default %(default)s; '' adds none)")
    w = sub.add_parser("workload", help="draw a workload")
    w.add_argument("kind", choices=sorted(KINDS))
    w.add_argument("--seed", type=int, default=1)
    w.add_argument("-o", "--out", type=Path, required=True)
    sub.add_parser("check", help="say whether a real Slurm can run here")
    args = parser.parse_args(argv)
    # A run stopped by SIGTERM (or SIGINT, which a background job ignores) still stops
    # its daemons and drops its database: the signal becomes an exception.
    signal.signal(signal.SIGTERM, _stop_on_signal)
    try:
        if args.command == "workload":
            write_workload(args.out, make_workload(args.kind, args.seed))
            return 0
        if args.command == "check":
            missing = check()
            for line in missing:
                print(line)
            return 1 if missing else 0
        out = reference_run(args.workload, args.conf, args.accounts, args.out,
                            args.keep_logs, debug_flags=args.debug_flags)
        print(f"reference run in {out}")
        return 0
    except HarnessError as e:
        print(f"slurm_reference: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
