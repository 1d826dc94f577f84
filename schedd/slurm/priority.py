"""Job priority as Slurm 22.05 sets it: priority/basic (first come, first served) or
priority/multifactor (src/plugins/priority/multifactor/priority_multifactor.c,
`_get_priority_internal` and `set_priority_factors`):

    priority = int(W_age x age + W_fairshare x fairshare + W_jobsize x jobsize
                   + W_partition x partition + W_qos x qos), at least 1

age = min(now - eligible, PriorityMaxAge) / PriorityMaxAge (0 until the job is eligible);
fairshare = the user association's Fair Tree factor (or 2^(-U/S) classic); jobsize =
(nodes / machine nodes + CPUs / machine CPUs) / 2, or one minus that with
PriorityFavorSmall, or divided by the time limit with SMALL_RELATIVE_TO_TIME; partition =
the partition's PriorityJobFactor over the largest; the CPUs are those asked for (one
per node for a whole-node job) until the backfill scheduler has tried to place the job,
then what the placement holds, as Slurm reads them (min_cpus, then total_cpus);
qos = the QOS's priority over the largest (from `sacctmgr --parsable2 show qos`,
--slurm-qos; without it 0).
"""

from __future__ import annotations

from .assoc import Assoc
from .conf import SlurmConf
from .jobs import SlurmJob


class PriorityModel:
    def __init__(self, conf: SlurmConf, qos: dict[str, int] | None = None):
        self.conf = conf
        self.qos = qos or {}
        self.qos_top = max(self.qos.values(), default=0)
        p = conf.priority
        self.p = p
        self.nodes = len(conf.node_cpus)
        self.cpus = conf.total_cpus
        top = max((part.priority_job_factor for part in conf.partitions), default=0)
        self.part_norm = [part.priority_job_factor / top if top else 0.0
                          for part in conf.partitions]

    def qos_factor(self, job: SlurmJob) -> float:
        priority = self.qos.get(job.qos, 0)
        if not priority or not self.p.weight_qos:
            return 0.0
        if self.p.no_normal_qos:
            return float(priority)
        return priority / self.qos_top if self.qos_top else 0.0

    def factors(self, job: SlurmJob, assoc: Assoc | None, eligible: float | None,
                now: float, tested: bool = False) -> tuple[float, float, float, float]:
        """(age, fairshare, jobsize, partition) factors in [0, 1]. `tested`: the backfill
        scheduler has tried to place the job, which sets Slurm's total_cpus to what the
        placement holds (every CPU of its nodes for a whole-node job)."""
        p = self.p
        age = 0.0
        if p.weight_age and eligible is not None and p.max_age > 0:
            diff = max(now - eligible, 0.0)
            age = 1.0 if diff >= p.max_age else diff / p.max_age
        fs = assoc.fs_factor if (assoc is not None and p.weight_fairshare) else 0.0
        js = 0.0
        if p.weight_job_size:
            # total_cpus once a placement was tried (cons_common _job_test), else min_cpus.
            cpus = job.cpus if tested else job.asked_cpus
            if p.small_relative_to_time:
                size = max(job.min_nodes * self.cpus / self.nodes, float(cpus))
                minutes = max(job.time_limit / 60.0, 1.0) if job.time_limit != float("inf") \
                    else 1.0
                js = size / minutes / self.cpus
                if p.favor_small:
                    js = 1.0 - js
            elif p.favor_small:
                js = ((self.nodes - job.min_nodes) / self.nodes
                      + (self.cpus - cpus) / self.cpus) / 2
            else:
                js = (job.min_nodes / self.nodes + cpus / self.cpus) / 2
            js = min(max(js, 0.0), 1.0)
        part = 0.0
        if p.weight_partition:
            if p.no_normal_part:
                part = float(self.conf.partitions[job.partition].priority_job_factor)
            else:
                part = self.part_norm[job.partition]
        return age, fs, js, part

    def priority(self, job: SlurmJob, assoc: Assoc | None, eligible: float | None,
                 now: float, tested: bool = False) -> int:
        p = self.p
        age, fs, js, part = self.factors(job, assoc, eligible, now, tested)
        value = (p.weight_age * age + p.weight_fairshare * fs + p.weight_job_size * js
                 + p.weight_partition * part + p.weight_qos * self.qos_factor(job))
        return max(int(value), 1) if value < 0xFFFFFFFF else 0xFFFFFFFF
