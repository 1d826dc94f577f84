"""Random Table 3 logs (real-time paper §7.3): 5 BJs and 2 RTJs on 8,192 nodes.

The paper gives only the counts and the sizes ({512, 1024, 2048, 4096, 8192} nodes,
uniform); the rest is our rule (docs/milp.md, "Table 3 logs"):

* submit times uniform on the whole seconds of [0, 3600];
* runtimes uniform on the whole seconds of [600, 7200];
* walltime = runtime x U(1, 1.5), rounded up to whole minutes;
* which `realtime` of the jobs are RTJs: uniformly at random;
* ids 1..n in (submit, draw order) order.

Instance k of seed s draws from numpy's Generator seeded with (s, k), so an instance does
not depend on how many others are generated.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from schedd.core.bgq import BlockCluster
from schedd.milp.common import DEFAULT_SEED
from schedd.milp.model import MilpJob
from schedd.traces.swf import Trace, TraceHeader, write_trace

TABLE3_SIZES = (512, 1024, 2048, 4096, 8192)
SUBMIT_RANGE = (0, 3600)
RUNTIME_RANGE = (600, 7200)
WALLTIME_FACTOR = (1.0, 1.5)


def table3_sizes(cluster: BlockCluster) -> tuple[int, ...]:
    """The Table 3 sizes this cluster has partitions of (all five on bgq:16)."""
    sizes = tuple(s for s in TABLE3_SIZES if s in cluster.sizes)
    if not sizes:
        raise ValueError(f"{cluster.name} has no partition of any Table 3 size")
    return sizes


def table3_jobs(seed: int, index: int, cluster: BlockCluster, batch: int = 5,
                realtime: int = 2) -> list[MilpJob]:
    """Instance `index` of `seed`: `batch` BJs and `realtime` RTJs."""
    if batch < 0 or realtime < 0 or batch + realtime < 1:
        raise ValueError("an instance needs at least one job")
    rng = np.random.default_rng([seed, index])
    n = batch + realtime
    sizes = table3_sizes(cluster)
    nodes = rng.choice(np.array(sizes), size=n)
    submit = rng.integers(SUBMIT_RANGE[0], SUBMIT_RANGE[1], size=n, endpoint=True)
    runtime = rng.integers(RUNTIME_RANGE[0], RUNTIME_RANGE[1], size=n, endpoint=True)
    factor = rng.uniform(WALLTIME_FACTOR[0], WALLTIME_FACTOR[1], size=n)
    rtj = np.zeros(n, dtype=bool)
    rtj[rng.choice(n, size=realtime, replace=False)] = True
    order = sorted(range(n), key=lambda k: (int(submit[k]), k))
    jobs = []
    for new_id, k in enumerate(order, start=1):
        run = float(runtime[k])
        wall = 60.0 * math.ceil(run * float(factor[k]) / 60.0)
        jobs.append(MilpJob(new_id, float(submit[k]), run, int(nodes[k]),
                            realtime=bool(rtj[k]), walltime=wall))
    return jobs


def jobs_trace(jobs: list[MilpJob], max_nodes: int, comments: list[str]) -> Trace:
    """An extended-SWF trace of the jobs (class R for RTJs, field 22)."""
    n = len(jobs)
    cols: dict[str, np.ndarray] = {
        "job_id": np.array([j.id for j in jobs], dtype=np.int64),
        "submit": np.array([j.submit for j in jobs], dtype=np.float64),
        "wait": np.full(n, -1.0),
        "runtime": np.array([j.runtime for j in jobs], dtype=np.float64),
        "procs": np.array([j.nodes for j in jobs], dtype=np.int64),
        "req_procs": np.array([j.nodes for j in jobs], dtype=np.int64),
        "req_time": np.array([j.walltime if j.walltime > 0 else j.runtime for j in jobs],
                             dtype=np.float64),
        "status": np.ones(n, dtype=np.int64),
        "job_class": np.array(["R" if j.realtime else "B" for j in jobs]),
    }
    header = TraceHeader(max_nodes=max_nodes, max_procs=max_nodes,
                         lines=[f"; {c}" for c in comments])
    return Trace(path="<table3>", header=header, columns=cols, eccs=[])


def write_table3(out_dir: str | Path, cluster: BlockCluster, *, count: int = 20,
                 seed: int = DEFAULT_SEED, batch: int = 5, realtime: int = 2) -> list[Path]:
    """Write `count` logs as OUT/log-KK.swf (the seed is in their header); returns the
    paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(count):
        jobs = table3_jobs(seed, k, cluster, batch, realtime)
        comments = [
            f"Table 3 log {k} of seed {seed} (schedd milp generate; docs/milp.md)",
            f"{batch} BJs + {realtime} RTJs (field 22 R) on {cluster.name}; sizes uniform "
            f"from {', '.join(map(str, table3_sizes(cluster)))}",
            f"submit U{{{SUBMIT_RANGE[0]}..{SUBMIT_RANGE[1]}}} s, runtime "
            f"U{{{RUNTIME_RANGE[0]}..{RUNTIME_RANGE[1]}}} s, walltime = ceil_min(runtime x "
            f"U({WALLTIME_FACTOR[0]:g}, {WALLTIME_FACTOR[1]:g}))",
        ]
        path = out / f"log-{k:02d}.swf"
        write_trace(path, jobs_trace(jobs, cluster.total_nodes, comments))
        paths.append(path)
    return paths
