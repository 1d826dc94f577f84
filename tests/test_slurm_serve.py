"""`schedd serve --slurm-conf`: a real daemon on loopback whose machine and scheduling come
from a slurm.conf, driven over gRPC as a user would (lockstep clock)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from daemon_proc import DaemonProc

from schedd.v1 import scheduler_pb2 as pb

TIMEOUT = 20.0
CONF = """\
ClusterName=tiny
NodeName=n[1-2] CPUs=4
PartitionName=batch Nodes=ALL Default=YES MaxTime=10:00
SchedulerType=sched/builtin
"""


def test_a_daemon_schedules_as_its_slurm_conf_says(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text(CONF)
    daemon = DaemonProc("--slurm-conf", str(conf), "--clock", "lockstep")
    try:
        stub = daemon.stub()
        cluster = stub.GetCluster(pb.GetClusterRequest(), timeout=TIMEOUT)
        assert cluster.total_nodes == 8  # the machine's unit is the CPU: 2 nodes x 4
        # The whole machine, then two jobs of one node's CPUs each.
        ids = [stub.SubmitJob(pb.SubmitJobRequest(nodes=n, walltime=300, runtime=r),
                              timeout=TIMEOUT).job_id for n, r in ((8, 50), (4, 20), (4, 30))]
        stub.AdvanceClock(pb.AdvanceClockRequest(until_idle=True), timeout=TIMEOUT)
        jobs = [stub.GetJob(pb.GetJobRequest(job_id=i), timeout=TIMEOUT) for i in ids]
        # The daemon is a controller started at time 0: its background thread's first
        # pass comes batch_sched_delay (3 s) later and starts the first; the others wait
        # for its end: it exits by itself, its nodes are idle at once and the pass it
        # queues runs at the background thread's tick then (the last was at 3), which
        # starts both.
        assert [j.first_start for j in jobs] == [3.0, 53.0, 53.0]
        assert all(j.state == pb.JOB_STATE_COMPLETED for j in jobs)
    finally:
        daemon.kill()


def test_check_config_names_the_machine_and_policy(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text(CONF)
    out = subprocess.run([sys.executable, "-m", "schedd", "serve", "--slurm-conf", str(conf),
                          "--check-config"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert '"policy": "slurm"' in out.stdout and f"slurm.conf:{conf}" in out.stdout


def test_a_bad_slurm_conf_stops_the_start_in_one_line(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=n1 CPUs=lots\nPartitionName=p Nodes=ALL\n")
    out = subprocess.run([sys.executable, "-m", "schedd", "serve", "--slurm-conf", str(conf),
                          "--check-config"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0
    assert f"{conf}:1: expected a whole number for cpus" in out.stderr
