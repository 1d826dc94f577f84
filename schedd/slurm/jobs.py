"""What the Slurm policy knows of each job beyond its size and time: its partition,
user, account and QOS, how many nodes it asks for and whether it wants them whole, its
dependency and begin time. `SlurmJob` is built from a trace's columns and names
(`table_from_trace`), or with defaults for a job that arrives without them (`default_job`,
e.g. over gRPC).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .conf import SlurmConf

AFTEROK, AFTERANY, AFTERNOTOK = 1, 2, 3
DEPENDENCY_KINDS = {AFTEROK: "afterok", AFTERANY: "afterany", AFTERNOTOK: "afternotok"}


@dataclass(frozen=True, slots=True)
class SlurmJob:
    cpus: int  # CPUs the job needs: its size on the CPU-node machine
    min_nodes: int
    max_nodes: int
    exclusive: bool
    partition: int  # index in SlurmConf.partitions
    user: str
    account: str
    qos: str
    time_limit: float  # s (the partition's default or maximum when the job gave none)
    begin: float = -1.0  # not eligible before (a --begin time); -1: at submit
    dep_kind: int = 0  # AFTEROK, AFTERANY, AFTERNOTOK; 0: none
    dep_on: int = -1  # the job it depends on
    req_cpus: int = 0  # CPUs asked for (Slurm's min_cpus: one per node for -N k --exclusive)

    @property
    def asked_cpus(self) -> int:
        """The CPU count Slurm's job-size factor reads before a job starts (min_cpus)."""
        if self.req_cpus > 0:
            return self.req_cpus
        return self.min_nodes if self.exclusive else self.cpus


def job_size(conf: SlurmConf, partition: int, cpus: int, nodes: int,
             exclusive: bool) -> tuple[int, int, int, bool]:
    """(CPUs, min nodes, max nodes, whole nodes) as the machine allocates a request of
    `cpus` CPUs on `nodes` nodes (0: as many as it takes): an exclusive job — or any job
    under select/linear or in an OverSubscribe=EXCLUSIVE partition — holds every CPU of
    its nodes; a per-core job of c CPUs may spread over up to c nodes."""
    part = conf.partitions[partition]
    per_node = conf.node_cpus_min(partition)
    if exclusive or conf.whole_nodes or part.exclusive:
        count = nodes if nodes >= 1 else max(1, -(-max(cpus, 1) // per_node))
        return count * per_node, count, count, True
    if nodes >= 1:  # -N k -n c on shared nodes: c CPUs on exactly k nodes
        return max(cpus, nodes), nodes, nodes, False
    need = max(cpus, 1)
    return need, 1, need, False


def default_job(conf: SlurmConf, cpus: int, walltime: float, user: int | str = -1,
                account: str = "", queue: int = -1) -> SlurmJob:
    """A job known only by its size and time (a gRPC submission): per-core, in the
    `queue`-th partition of the slurm.conf (1-based; otherwise the default one), its
    user's default account."""
    part = (queue - 1 if 1 <= queue <= len(conf.partitions)
            else conf.partitions.index(conf.default_partition))
    size = job_size(conf, part, cpus, 0, False)
    limit = min(walltime, conf.partitions[part].max_time)
    return SlurmJob(size[0], size[1], size[2], size[3], part, str(user), account or "",
                    "normal", limit)


@dataclass
class TraceJobs:
    """The Slurm view of a trace's kept jobs: `jobs[id]`, the CPUs each job holds
    (the engine's size for it), and the jobs that cannot run on this machine."""

    jobs: dict[int, SlurmJob]
    cpus: np.ndarray  # int64, in the trace's queue order
    unfit: dict[int, str]  # job id -> why it can never run here
    warnings: list[str]
    # When the log says jobs killed at their time limit ended (SlurmSetup.prepare then
    # lets them run past every check): the instants of Slurm's time-limit checks.
    limit_kills: np.ndarray | None = None


def _names(header: object, kind: str) -> dict[int, str]:
    names = getattr(header, "names", None) or {}
    return dict(names.get(kind, {}))


def _col(cols: dict[str, np.ndarray], name: str, n: int, fill: float = -1) -> np.ndarray:
    col = cols.get(name)
    if col is None:
        return np.full(n, fill)
    return np.asarray(col)


def table_from_trace(columns: dict[str, np.ndarray], header: object,
                     conf: SlurmConf) -> TraceJobs:
    """SlurmJobs from a normalized trace's columns (schedd extension fields 32-40 and the
    `; schedd-names` header of `schedd import slurm`; docs/trace-format.md)."""
    n = len(columns["job_id"])
    ids = np.asarray(columns["job_id"]).tolist()
    procs = _col(columns, "procs", n).tolist()
    req_procs = _col(columns, "req_procs", n).tolist()
    req_nodes = _col(columns, "req_nodes", n).tolist()
    exclusive = _col(columns, "exclusive", n).tolist()
    parts = _col(columns, "partition", n).tolist()
    users = _col(columns, "user", n).tolist()
    groups = _col(columns, "group", n).tolist()
    qos = _col(columns, "qos", n).tolist()
    prev = _col(columns, "prev_job", n).tolist()
    dep_kind = _col(columns, "dep_kind", n).tolist()
    eligible = _col(columns, "eligible", n).tolist()
    submit = np.asarray(columns["submit"]).tolist()
    walltime = np.asarray(columns["walltime"]).tolist()
    part_names = _names(header, "partition")
    user_names = _names(header, "user")
    account_names = _names(header, "account")
    qos_names = _names(header, "qos")
    by_name = {p.name: i for i, p in enumerate(conf.partitions)}
    default = conf.partitions.index(conf.default_partition)
    jobs: dict[int, SlurmJob] = {}
    cpus_out = np.zeros(n, dtype=np.int64)
    unfit: dict[int, str] = {}
    warnings: list[str] = []
    unknown_parts: dict[str, int] = {}
    part_totals: dict[int, int] = {}
    for i in range(n):
        jid = int(ids[i])
        part_no = int(parts[i])
        if part_no >= 0:
            pname = part_names.get(part_no, str(part_no))
            part = by_name.get(pname)
            if part is None:
                unknown_parts[pname] = unknown_parts.get(pname, 0) + 1
                part = default
        else:
            part = default
        cpus = int(req_procs[i]) if req_procs[i] > 0 else int(procs[i])
        nodes = int(req_nodes[i]) if req_nodes[i] > 0 else 0
        if exclusive[i] >= 0:
            excl = exclusive[i] == 1
        else:
            # Unknown (no SubmitLine, or --exclusive in the script): a job that asked for
            # its nodes' every CPU, or was given every CPU of the nodes it asked for when
            # it asked for fewer (`-N 3 --exclusive`: ReqCPUS 3, NCPUS 12), held them whole.
            per = conf.node_cpus_min(part)
            excl = nodes > 0 and (cpus == nodes * per or int(procs[i]) == nodes * per)
        # A per-core job's node count is where it landed, not what it asked for.
        size, lo, hi, whole = job_size(conf, part, cpus, nodes if excl else 0, excl)
        part_rec = conf.partitions[part]
        part_cpus = part_totals.get(part)
        if part_cpus is None:
            part_cpus = part_totals[part] = sum(conf.node_cpus[k] for k in part_rec.nodes)
        if lo > len(part_rec.nodes) or size > part_cpus:
            unfit[jid] = (f"asks for {lo} nodes / {size} CPUs; partition {part_rec.name} "
                          f"has {len(part_rec.nodes)} / {part_cpus}")
        limit = float(walltime[i])
        begin = float(eligible[i])
        kind = int(dep_kind[i]) if dep_kind[i] in (AFTEROK, AFTERANY, AFTERNOTOK) else 0
        dep_on = int(prev[i]) if kind and prev[i] > 0 else -1
        if kind or begin <= float(submit[i]) + 1.0:
            begin = -1.0  # eligible at submit, or when its dependency is met
        jobs[jid] = SlurmJob(
            size, lo, hi, whole, part, user_names.get(int(users[i]), str(int(users[i]))),
            account_names.get(int(groups[i]), str(int(groups[i])) if groups[i] >= 0
                              else ""),
            qos_names.get(int(qos[i]), "normal"), limit if limit > 0 else math.inf,
            begin, kind, dep_on, int(req_procs[i]) if req_procs[i] > 0 else 0)
        cpus_out[i] = size
    for name, count in sorted(unknown_parts.items()):
        warnings.append(f"{count} jobs name partition {name!r}, which the slurm.conf does "
                        f"not define; they run in the default partition "
                        f"{conf.default_partition.name}")
    return TraceJobs(jobs, cpus_out, unfit, warnings)
