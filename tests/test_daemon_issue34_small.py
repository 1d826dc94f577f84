"""The small ones of issue 34, each against a real daemon on loopback: `next_job_id` above
every id the daemon ever held (a replay into a daemon whose jobs had finished collided
with job 1), `AdvanceClock(by=...)` of any positive amount on a running clock, runtime
extensions held to the walltime bound, and event times that never go backwards in the
stream, each at the time it happened."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import grpc
from daemon_proc import DaemonProc, read_events, wait_until

from schedd.v1 import scheduler_pb2 as pb


def test_next_job_id_stays_above_finished_jobs_and_a_replay_keeps_its_ids(
        tmp_path: Path) -> None:
    journal = str(tmp_path / "j.sqlite")
    args = ("--clock", "lockstep", "--cluster", "nodes:320", "--state-db", journal)
    with DaemonProc(*args) as d:
        stub = d.stub()
        assert stub.SubmitJob(pb.SubmitJobRequest(nodes=1, walltime=60,
                                                  runtime=10)).job_id == 1
        stub.AdvanceClock(pb.AdvanceClockRequest(until_idle=True))
        info = stub.GetCluster(pb.GetClusterRequest())
        assert info.finished == 1 and info.next_job_id == 2  # was 1: job 1 is finished
    with DaemonProc(*args) as d:  # a restart reads the finished job back
        assert d.stub().GetCluster(pb.GetClusterRequest()).next_job_id == 2
        trace = tmp_path / "t.swf"
        subprocess.run([sys.executable, "-m", "schedd", "workload", "lublin", "--jobs", "20",
                        "-o", str(trace)], check=True, capture_output=True)
        run = subprocess.run([sys.executable, "-m", "schedd_clients.replay", str(trace),
                              "--server", d.address, "--lockstep", "--no-progress",
                              "--no-compare", "-o", str(tmp_path / "out")],
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        assert "already in use" not in run.stderr
        info = d.stub().GetCluster(pb.GetClusterRequest())
        assert info.finished == 21 and info.next_job_id == 22


def test_advance_clock_by_a_microsecond_on_a_running_clock() -> None:
    with DaemonProc("--clock", "accelerated", "--speedup", "1000") as d:
        stub = d.stub()
        before = stub.GetClock(pb.GetClockRequest()).now
        for _ in range(20):  # the clock moves about 1 virtual s per wall ms meanwhile
            after = stub.AdvanceClock(pb.AdvanceClockRequest(by=1e-6)).now
            assert after >= before
            before = after
        with grpc.insecure_channel(d.address) as ch:  # a backward `to` is still refused
            from schedd.v1 import scheduler_pb2_grpc as pb_grpc
            try:
                pb_grpc.SchedulerStub(ch).AdvanceClock(pb.AdvanceClockRequest(to=1.0))
                raise AssertionError("moving back was accepted")
            except grpc.RpcError as err:
                assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert "cannot move back" in (err.details() or "")


def test_runtime_extensions_stop_at_the_walltime_bound() -> None:
    with DaemonProc("--clock", "lockstep", "--policy", "easy-e") as d:
        stub = d.stub()
        job = stub.SubmitJob(pb.SubmitJobRequest(nodes=1, walltime=3600,
                                                 runtime=3600)).job_id
        stub.AdvanceClock(pb.AdvanceClockRequest(by=10))
        for _ in range(30):
            stub.ElasticControl(pb.ElasticControlRequest(job_id=job, kind=pb.ECC_KIND_ET,
                                                         amount=1e9))
        stub.AdvanceClock(pb.AdvanceClockRequest(by=10))
        assert stub.GetJob(pb.GetJobRequest(job_id=job)).walltime <= 1e9  # was 3e10
        outcomes = [e.cause for e in read_events(
            stub, pb.WatchEventsRequest(from_seq=1, kinds=["ecc"]), 30)]
        assert len(outcomes) == 30
        assert all(c.startswith("ET:rejected: walltime would be ") and "above 1e+09 s" in c
                   for c in outcomes), outcomes[:3]


def test_event_times_never_go_backwards_and_submitted_is_the_submit_time() -> None:
    """At 100,000x a journal commit takes hundreds of virtual seconds: the `submitted`
    event used to carry the clock after the commit, later than the job's own submit time,
    at which the engine then queued and started it (README: event 1 at t=82253.1,
    events 2-3 at t=81991.9)."""
    with DaemonProc("--clock", "accelerated", "--speedup", "100000", "--cluster",
                    "nodes:64") as d:
        stub = d.stub()
        submits = {}
        for i in range(40):
            r = stub.SubmitJob(pb.SubmitJobRequest(nodes=1 + i % 8, walltime=600,
                                                   runtime=30 + 10 * i))
            submits[r.job_id] = r.submit_time
            time.sleep(0.005)
        wait_until("every job to finish", lambda: stub.GetCluster(
            pb.GetClusterRequest()).finished == 40, timeout=60)
        events = read_events(stub, pb.WatchEventsRequest(from_seq=1), 100_000, timeout=2)
    times = [e.time for e in events]
    assert times == sorted(times), [(e.seq, e.kind, e.time) for e in events][:20]
    submitted = {e.job_id: e.time for e in events if e.kind == "submitted"}
    assert submitted == submits
    queued = {e.job_id: e.time for e in events if e.kind == "queued"}
    assert all(queued[j] >= submitted[j] for j in submits)


def test_the_demo_says_the_utilisation_gauge_is_now_not_the_run() -> None:
    """`make demo` printed `schedd_utilization_ratio 0.0` under a summary of utilisation
    0.707: the gauge is the busy share at the scrape, after the replay drained the queue."""
    from schedd_clients.demo import shown_metrics

    scrape = ("# HELP schedd_utilization_ratio Busy nodes over nodes that are up (0 to 1).\n"
              "schedd_utilization_ratio 0.0\n"
              'schedd_completions_total{class="batch",state="completed"} 1000.0\n'
              'schedd_completions_total{class="batch",state="killed"} 0.0\n')
    shown = shown_metrics(scrape)
    assert shown == [
        "schedd_utilization_ratio 0.0   # busy nodes now / nodes up (the run's is under "
        "utilisation)",
        'schedd_completions_total{class="batch",state="completed"} 1000.0']
