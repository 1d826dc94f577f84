"""Memory under sustained accelerated load levels off (issue 34, item 5): 66 -> 104 ->
174 -> 228 -> 263 MB at 0 / 9.6k / 37k / 85k / 131k jobs, every job finished. Nothing was
kept per job (the objects the collector tracks stayed flat, tracemalloc's total too):
the C heap grew, its free space fragmented between long-lived objects once glibc had
raised its mmap threshold for the large blocks a daemon frees (snapshot pickles, result
chunks, journal batches). A scaled-down run: the rings and caches are made small
(environment) so that they fill in the first quarter, snapshots come often (the largest
blocks), and the RSS growth over the second half of the jobs is compared with the growth
over the quarter before it, within the same run."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from daemon_proc import DaemonProc, rss_kb

from schedd.v1 import scheduler_pb2 as pb

JOBS = 12_000
SMALL = {"SCHEDD_EVENT_RING": "4000", "SCHEDD_REQUESTS_IN_MEMORY": "500",
         "SCHEDD_RECORD_IN_MEMORY": "500", "SCHEDD_RESULTS_IN_MEMORY": "500",
         "SCHEDD_SNAPSHOT_EVERY": "300"}


def test_rss_levels_off_under_a_long_accelerated_replay(tmp_path: Path) -> None:
    trace = tmp_path / "w.swf"
    subprocess.run([sys.executable, "-m", "schedd", "workload", "lublin", "--jobs",
                    str(JOBS), "-o", str(trace)], check=True, capture_output=True)
    with DaemonProc("--clock", "accelerated", "--speedup", "1000000", "--cluster",
                    "nodes:320", "--state-db", str(tmp_path / "j.sqlite"), env=SMALL,
                    timeout=60) as d:
        stub = d.stub()
        samples: list[tuple[int, int]] = []  # (finished jobs, RSS kB)
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.5):
                finished = stub.GetCluster(pb.GetClusterRequest(), timeout=30).finished
                samples.append((finished, rss_kb(d.proc.pid)))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        run = subprocess.run([sys.executable, "-m", "schedd_clients.replay", str(trace),
                              "--server", d.address, "--no-progress", "--no-compare",
                              "-o", str(tmp_path / "out")],
                             capture_output=True, text=True, timeout=900)
        done.set()
        sampler.join()
        assert run.returncode == 0, run.stderr
        samples.append((JOBS, rss_kb(d.proc.pid)))  # every job finished, queue empty

    def rss_around(share: float) -> int:
        """The median RSS over the samples within 5% of the jobs of `share` of them (one
        sample can catch a snapshot's pickle in flight)."""
        near = sorted(kb for n, kb in samples if abs(n - share * JOBS) <= 0.05 * JOBS)
        return near[len(near) // 2]

    quarter, half, end = rss_around(0.25), rss_around(0.5), rss_around(0.95)
    print(f"RSS MiB at 1/4, 1/2, 95% of the jobs: {quarter / 1024:.1f}, {half / 1024:.1f}, "
          f"{end / 1024:.1f}")
    # The second half has about twice the jobs of the quarter before it: a daemon that
    # keeps something per job grows by about twice the quarter's growth there, one that
    # keeps nothing by about nothing (it grew 6 and 8 MiB before, 1.5 and 0.5 after).
    assert end - half < max(half - quarter, 1024), [(n, kb // 1024) for n, kb in samples]
