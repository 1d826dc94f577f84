"""The machine, jobs and policy a slurm.conf makes of a trace: what `schedd simulate
--slurm-conf` and `schedd serve --slurm-conf` run.

The machine is a `CpuNodes` of the conf's nodes; a job's size on it is the CPUs Slurm would
allocate it (every CPU of its nodes when it wants them whole). Jobs that can never run on
the machine as configured (more nodes than their partition holds) are dropped, counted
and said, as archive traces' oversized jobs are.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..core.cpu_nodes import CpuNodes
from .assoc import Associations, read_associations
from .conf import SlurmConf, read_slurm_conf
from .jobs import TraceJobs, table_from_trace


def cluster_of(conf: SlurmConf) -> CpuNodes:
    return CpuNodes(conf.node_cpus, conf.node_names, conf.cluster_name)


@dataclass
class SlurmSetup:
    conf: SlurmConf
    assocs: Associations | None
    cluster: CpuNodes

    @classmethod
    def read(cls, conf_path: str, assoc_path: str | None) -> SlurmSetup:
        conf = read_slurm_conf(conf_path)
        assocs = read_associations(assoc_path) if assoc_path else None
        return cls(conf, assocs, cluster_of(conf))

    def warnings(self) -> list[str]:
        out = list(self.conf.warnings)
        if self.assocs is not None:
            out += self.assocs.warnings
        return out

    def prepare(self, trace: Any) -> tuple[Any, TraceJobs]:
        """The normalized trace with each job's size in CPUs, and the jobs that cannot run
        here dropped (counted under "nodes>max" in `trace.dropped`)."""
        jobs = table_from_trace(trace.columns, trace.header, self.conf)
        cols = dict(trace.columns)
        cols["nodes"] = jobs.cpus
        if jobs.unfit:
            keep = np.array([int(i) not in jobs.unfit for i in cols["job_id"]], dtype=bool)
            cols = {name: (col[keep] if len(col) == len(keep) and col.ndim == 1 else col)
                    for name, col in cols.items()}
            for jid in jobs.unfit:
                jobs.jobs.pop(jid, None)
            dropped = dict(trace.dropped)
            dropped["nodes>max"] = dropped.get("nodes>max", 0) + len(jobs.unfit)
            trace = replace(trace, columns=cols, dropped=dropped)
        else:
            trace = replace(trace, columns=cols)
        return trace, jobs

    def bind(self, policy: Any, jobs: TraceJobs | None) -> None:
        """Give a `slurm` policy the conf, associations and the trace's jobs."""
        policy.configure(self.conf, self.assocs, jobs.jobs if jobs is not None else None)
        if self.assocs is None and self.conf.priority.multifactor \
                and self.conf.priority.weight_fairshare:
            self.conf_warning("multifactor fair-share without an associations file "
                              "(--slurm-assoc): every account and user gets 1 share")

    def conf_warning(self, text: str) -> None:
        self.conf = replace(self.conf, warnings=self.conf.warnings + (text,))
