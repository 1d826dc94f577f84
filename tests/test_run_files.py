"""segments.csv and timeseries.csv: the engine's recorder against hand-worked runs, the
files against the result columns (property tests), and the CLI end to end."""

from __future__ import annotations

import csv
import subprocess
import sys

import numpy as np
import pytest
from engine_steps import finish
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedd.core.bgq import BgqCluster
from schedd.core.checkpoint import CheckpointPolicy
from schedd.core.cluster import NodePool
from schedd.core.decisions import Preempt, PreemptMode, Release, Reserve, Resize, Start
from schedd.core.engine import Engine, EngineOptions
from schedd.core.job import JobClass, JobSpec
from schedd.core.recorder import RunRecorder
from schedd.policies import make_policy
from schedd.run_files import (
    SEGMENT_COLUMNS,
    interval_set,
    interval_set_cells,
    pool_placement,
    segment_table,
    texts_of,
    timeseries_table,
    write_segments_csv,
    write_timeseries_csv,
)


def recorded(nodes: int = 8, policy=None, **opts) -> Engine:
    ckpt = opts.pop("checkpoint", CheckpointPolicy(periodic="trace"))
    e = Engine(NodePool(nodes), policy, options=EngineOptions(checkpoint=ckpt, **opts))
    e.recorder = RunRecorder()
    return e


def segments(e: Engine) -> list[tuple[int, float, float, int, str]]:
    t = segment_table(e.recorder, e.cluster, e.results.arrays())
    from schedd.core.recorder import END_REASONS
    return [(int(j), float(s), float(x), int(n), END_REASONS[int(r)])
            for j, s, x, n, r in zip(t["job"], t["start"], t["end"], t["nodes"], t["reason"],
                                     strict=True)]


def test_hand_worked_preemption_and_resize():
    # nodes:8. Job 1 (4 nodes, 100 s) starts at 0; job 2 (malleable 2..6, 300 s of work at
    # 6 nodes) starts at 0 on 4 nodes, shrinks to 2 at 10 and is preempted (restart) at 20;
    # job 1 ends at 100; job 2 restarts at 100 on 6 nodes and runs 300 s to 400.
    e = recorded(8)
    e.submit(JobSpec(1, 0, 100, 4, 200))
    e.submit(JobSpec(2, 0, 300, 6, 1000, job_class=JobClass.MALLEABLE, min_nodes=2))
    e.run(until=0)
    e.apply(Start(1, nodes=4))
    e.apply(Start(2, nodes=4))
    e.run(until=10)
    e.apply(Resize(2, 2))
    e.run(until=20)
    e.apply(Preempt(2, PreemptMode.RESTART))
    e.run(until=100)
    e.apply(Start(2, nodes=6))
    finish(e)
    assert segments(e) == [
        (1, 0.0, 100.0, 4, "completed"),
        (2, 0.0, 10.0, 4, "resized"),
        (2, 10.0, 20.0, 2, "preempted"),
        (2, 100.0, 400.0, 6, "completed"),
    ]


def easy_example() -> Engine:
    cluster = NodePool(8)
    e = Engine(cluster, make_policy("easy", [], cluster), options=EngineOptions())
    e.recorder = RunRecorder()
    e.submit(JobSpec(1, 0, 100, 4, 100))
    e.submit(JobSpec(2, 0, 50, 6, 50))
    e.submit(JobSpec(3, 10, 30, 2, 40))
    return finish(e)


def test_hand_worked_timeseries_under_easy():
    # nodes:8, EASY. J1 (4 nodes, 100 s) starts at 0; J2 (6 nodes, walltime 50) waits
    # with a reservation at 100; J3 (2 nodes, walltime 40, runs 30) arrives at 10 and is
    # backfilled (ends 40 <= 100); J1 ends at 100 and J2 runs 100-150.
    e = easy_example()
    ts = timeseries_table(e.recorder)
    rows = list(zip(ts["time"].tolist(), ts["busy_nodes"].tolist(),
                    ts["queue_length"].tolist(), ts["queued_node_s"].tolist(),
                    ts["running_jobs"].tolist(), strict=True))
    assert rows == [
        (0.0, 4, 1, 300.0, 1),  # J2 waits: 6 nodes x 50 s
        (10.0, 6, 1, 300.0, 2),
        (40.0, 4, 1, 300.0, 1),
        (100.0, 6, 0, 0.0, 1),
        (150.0, 0, 0, 0.0, 0),
    ]
    assert segments(e) == [(1, 0.0, 100.0, 4, "completed"), (3, 10.0, 40.0, 2, "completed"),
                           (2, 100.0, 150.0, 6, "completed")]


def test_checkpointed_failed_and_cancelled_reasons():
    e = recorded(8, checkpoint=CheckpointPolicy(periodic="none"))
    e.submit(JobSpec(1, 0, 100, 4, 200))
    e.submit(JobSpec(2, 0, 100, 4, 200))
    e.run(until=0)
    e.apply(Start(1, nodes=4))
    e.apply(Start(2, nodes=4))
    e.run(until=10)
    e.apply(Preempt(1, PreemptMode.JIT))  # writes a checkpoint, then leaves
    e.run(until=30)
    e.cancel(2)
    finish(e)
    reasons = {(j, r) for j, _, _, _, r in segments(e)}
    assert reasons == {(1, "checkpointed"), (2, "cancelled")}


def test_interval_sets_and_placement():
    assert interval_set([0, 1, 2, 3, 8, 10, 11]) == "0-3 8 10-11"
    assert interval_set([]) == ""
    # Three segments on 8 nodes: a frees 0-3 at 10, c (4 nodes at 10) takes them back.
    start = np.array([0.0, 0.0, 10.0])
    end = np.array([10.0, 20.0, 20.0])
    nodes = np.array([4, 2, 4])
    assert pool_placement(start, end, nodes, 8) == ["0-3", "4-5", "0-3"]
    # Fragmented: b holds 4-5, so a 6-node segment spans 0-3 and 6-7.
    assert pool_placement(np.array([0.0, 0.0, 10.0]), np.array([10.0, 20.0, 20.0]),
                          np.array([4, 2, 6]), 8) == ["0-3", "4-5", "0-3 6-7"]


def test_interval_set_cells_by_hand():
    # Segments: one range of 4, nothing, one node, three ranges (one of a single node).
    cells = interval_set_cells([0, 4, 7, 8, 0, 2, 5, 6, 10, 12], [1, 0, 1, 3])
    assert texts_of(cells) == ["0-3", "", "7", "0-1 5 10-11"]
    assert texts_of(interval_set_cells([], [0, 0])) == ["", ""]
    assert texts_of(interval_set_cells([998, 1001, 99, 100], [2])) == ["998-1000 99"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 20_000), st.integers(1, 300)),
                         max_size=5), max_size=30))
def test_interval_set_cells_write_what_interval_set_writes(segments) -> None:
    flat, counts, expected = [], [], []
    for ranges in segments:
        for lo, size in ranges:
            flat += [lo, lo + size]
        counts.append(len(ranges))
        expected.append(" ".join(interval_set(list(range(lo, lo + size)))
                                 for lo, size in ranges))
    assert texts_of(interval_set_cells(flat, counts)) == expected


def test_placement_fed_in_blocks_is_the_placement_of_the_whole():
    """segments.csv numbers a block of rows at a time: the fit carries its free nodes and
    running segments from block to block, so every block size gives the same numbers."""
    from schedd.core.node_numbers import LowestFirst

    rng = np.random.default_rng(5)
    start = np.sort(rng.integers(0, 400, 300)).astype(np.float64)
    end = start + rng.integers(1, 60, 300)
    nodes = rng.integers(1, 9, 300)
    # The machine is exactly as large as the busiest instant: free nodes fragment.
    total = max(int(nodes[(start <= t) & (end > t)].sum()) for t in start.tolist())
    whole = pool_placement(start, end, nodes, total)
    assert any(" " in text for text in whole)  # some segments span several ranges
    by_end = np.argsort(end, kind="stable").tolist()
    for size in (1, 7, 300):
        placer = LowestFirst(total, end.tolist(), by_end)
        got: list[str] = []
        for lo in range(0, 300, size):
            got += texts_of(interval_set_cells(*placer.place(start[lo:lo + size].tolist(),
                                                             nodes[lo:lo + size].tolist())))
        assert got == whole and placer.placed == 300, size


def _lowest_first_by_sets(start: list[float], end: list[float], nodes: list[int],
                          total: int) -> list[str]:
    """The fit as docs/results.md states it, on sets of node numbers: segments in start
    order (ties by row), each taking the n lowest free numbers once every segment placed
    before it that ends by its start has given its numbers back."""
    free, held = set(range(total)), []
    text = [""] * len(start)
    for i in sorted(range(len(start)), key=lambda i: (start[i], i)):
        for item in [h for h in held if h[0] <= start[i]]:
            held.remove(item)
            free |= item[1]
        taken = sorted(free)[:nodes[i]]
        free -= set(taken)
        held.append((end[i], set(taken)))
        text[i] = interval_set(taken)
    return text


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 0.0, 1.0, 2.5, 10.0]),
                          st.sampled_from([0.0, 1.0, 1.0, 4.0, 30.0, 1e-9]),
                          st.integers(1, 6)), max_size=60),
       st.integers(0, 3))
def test_placement_equals_the_fit_on_sets_of_numbers(rows, slack: int) -> None:
    """Random segments (ties of start and end, zero-length ones, starts in any row order)
    on a machine just large enough, so free numbers fragment."""
    gaps, lengths, nodes = ([r[k] for r in rows] for k in range(3))
    start = np.cumsum(gaps)[np.random.default_rng(len(rows)).permutation(len(rows))]
    end = start + np.array(lengths)
    held_at = [sum(n for s, e, n in zip(start, end, nodes, strict=True) if s <= t < e)
               for t in start.tolist()]
    total = max(held_at, default=0) + max(nodes, default=0) + slack
    assert pool_placement(start, end, np.array(nodes, dtype=np.int64), total) == \
        _lowest_first_by_sets(start.tolist(), end.tolist(), nodes, total)


def test_placement_refuses_a_segment_that_ends_before_it_starts() -> None:
    with pytest.raises(ValueError, match="ends before it starts"):
        pool_placement(np.array([0.0, 5.0]), np.array([10.0, 4.0]), np.array([1, 1]), 4)


def test_bgq_segments_name_partition_and_midplanes(tmp_path):
    cluster = BgqCluster(4)  # bgq:4: 4 midplanes of 512 nodes
    e = Engine(cluster, make_policy("easy", [], cluster), options=EngineOptions())
    e.recorder = RunRecorder()
    e.submit(JobSpec(1, 0, 50, 1024, 100))
    e.submit(JobSpec(2, 0, 50, 300, 100))
    finish(e)
    path = tmp_path / "segments.csv"
    write_segments_csv(path, e.recorder, cluster, e.results.arrays(), "w")
    rows = list(csv.DictReader(path.open()))
    by_job = {r["job_id"]: r for r in rows}
    assert by_job["1"]["nodes"] == "1024" and by_job["2"]["nodes"] == "512"
    for r in rows:
        block = cluster.blocks[cluster.block_index(r["partition"])]
        mids = [u for u in range(cluster.failure_units) if block.mask >> u & 1]
        assert r["allocated_resources"] == interval_set(mids)


def test_timeseries_step_resamples_the_state_in_force():
    # The EASY example's rows are at 0, 10, 40, 100, 150 (busy 4, 6, 4, 6, 0).
    t = timeseries_table(easy_example().recorder, step=50.0)
    assert t["time"].tolist() == [0.0, 50.0, 100.0, 150.0]
    assert t["busy_nodes"].tolist() == [4, 4, 6, 0]
    assert t["queue_length"].tolist() == [1, 1, 0, 0]


def test_reserved_and_down_nodes():
    # nodes:8 by hand: a 4-node reservation at 0, released at 10; job 1 (2 nodes) runs
    # 0-30; a node fails at some point when failures are on (below).
    e = recorded(8)
    e.submit(JobSpec(1, 0, 30, 2, 60))
    e.run(until=0)
    e.apply(Reserve("r", nodes=4))
    e.apply(Start(1, nodes=2))
    e.run(until=10)
    e.apply(Release("r"))
    finish(e)
    t = timeseries_table(e.recorder)
    rows = list(zip(t["time"].tolist(), t["busy_nodes"].tolist(),
                    t["reserved_nodes"].tolist(), t["running_jobs"].tolist(), strict=True))
    assert rows == [(0.0, 2, 4, 1), (10.0, 2, 0, 1), (30.0, 0, 0, 0)]
    # Failures: every down-node row is a whole number of failure units, never negative,
    # and each failure's node comes back (repairs) by the end or is still down.
    cluster = NodePool(16)
    f = Engine(cluster, make_policy("easy", [], cluster), seed=4,
               options=EngineOptions(mtbf_s=2000.0, mttr_s=500.0))
    f.recorder = RunRecorder()
    for i in range(30):
        f.submit(JobSpec(i + 1, i * 100.0, 900.0, 1 + i % 8, 1200.0))
    finish(f, max_steps=100_000)
    down = timeseries_table(f.recorder)["down_nodes"]
    assert down.max() >= 1 and down.min() >= 0
    assert f.stats["failures"] > f.stats["failures_ignored"]


def test_write_timeseries_header(tmp_path):
    write_timeseries_csv(tmp_path / "t.csv", easy_example().recorder)
    assert (tmp_path / "t.csv").read_text().splitlines()[:2] == [
        "time,busy_nodes,down_nodes,queue_length,queued_node_s,running_jobs,reserved_nodes",
        "0,4,0,1,300,1,0"]


jobs_strategy = st.lists(
    st.tuples(st.integers(0, 200), st.integers(1, 300), st.integers(1, 16),
              st.integers(0, 200), st.booleans()),
    min_size=1, max_size=25)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=jobs_strategy, policy=st.sampled_from(["easy", "fcfs", "conservative"]),
       mtbf=st.sampled_from([0.0, 0.05]), seed=st.integers(0, 5))
def test_segments_agree_with_results_and_timeseries(jobs, policy, mtbf, seed):
    cluster = NodePool(16)
    e = Engine(cluster, make_policy(policy, [], cluster), seed=seed,
               options=EngineOptions(mtbf_s=mtbf * 3600, mttr_s=300.0))
    e.recorder = RunRecorder()
    for i, (submit, runtime, nodes, extra, _) in enumerate(sorted(jobs)):
        e.submit(JobSpec(i + 1, submit, runtime, nodes, runtime + extra))
    finish(e, max_steps=100_000)
    res = e.results.arrays()
    t = segment_table(e.recorder, cluster, res)
    # Every node-second a job held is in exactly one segment.
    held = float(np.sum(t["nodes"] * (t["end"] - t["start"])))
    assert held == pytest.approx(float(res["busy_node_s"].sum()), rel=1e-9, abs=1e-6)
    # The time series' busy nodes are the segments covering each instant.
    ts = timeseries_table(e.recorder)
    for time, busy in zip(ts["time"].tolist(), ts["busy_nodes"].tolist(), strict=True):
        covering = (t["start"] <= time) & (t["end"] > time)
        assert busy == int(t["nodes"][covering].sum())
    # The last segment of a job ended the way the job did.
    final = dict(zip(res["id"].tolist(), res["final_state"].tolist(), strict=True))
    from schedd.core.recorder import END_REASONS
    from schedd.core.results import STATE_CODES
    last: dict[int, str] = {}
    for j, r in zip(t["job"].tolist(), t["reason"].tolist(), strict=True):
        last[j] = END_REASONS[r]
    for j, reason in last.items():
        assert reason == STATE_CODES[final[j]] or STATE_CODES[final[j]] != "completed"
    # A placement never gives one node to two segments at once.
    placed = pool_placement(t["start"], t["end"], t["nodes"], cluster.total_nodes)
    owner: list[list[tuple[float, float]]] = [[] for _ in range(16)]
    for text, s, x in zip(placed, t["start"].tolist(), t["end"].tolist(), strict=True):
        for part in text.split():
            lo, _, hi = part.partition("-")
            for node in range(int(lo), int(hi or lo) + 1):
                assert all(x <= a or s >= b for a, b in owner[node])
                owner[node].append((s, x))


def test_simulate_cli_writes_both_files(tmp_path):
    out = tmp_path / "run"
    subprocess.run([sys.executable, "-m", "schedd", "simulate", "--out", str(out),
                    "--no-progress", "--timeseries-step", "3600"], check=True,
                   capture_output=True)
    seg = list(csv.reader((out / "segments.csv").open()))
    assert tuple(seg[0]) == SEGMENT_COLUMNS
    assert len(seg) - 1 >= 1000  # every job of the bundled 1,000-job trace ran
    ts = list(csv.DictReader((out / "timeseries.csv").open()))
    times = [float(r["time"]) for r in ts]
    assert all(t % 3600 == 0 for t in times)
    assert all(0 <= int(r["busy_nodes"]) <= 256 for r in ts)


def test_files_are_deterministic(tmp_path):
    rec_files = []
    for k in range(2):
        out = tmp_path / f"r{k}"
        subprocess.run([sys.executable, "-m", "schedd", "simulate", "--out", str(out),
                        "--no-progress", "--mtbf", "50", "--seed", "3"], check=True,
                       capture_output=True)
        rec_files.append(((out / "segments.csv").read_bytes(),
                          (out / "timeseries.csv").read_bytes()))
    assert rec_files[0] == rec_files[1]


def _small_run(tmp_path):
    from schedd.sim import simulate
    from schedd.traces import normalize, read_trace

    trace = normalize(read_trace(tmp_path / "t.swf"))
    cluster = NodePool(trace.max_nodes)
    return trace, simulate(trace, cluster, make_policy("easy", [], cluster), record=True)


def _write_small_trace(tmp_path) -> None:
    rows = [f"{j} {10 * j} -1 {50 + j} 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 -1 -1"
            for j in range(1, 9)]
    (tmp_path / "t.swf").write_text("; MaxNodes: 4\n" + "\n".join(rows) + "\n")


DESCRIPTION = {"trace": "t.swf", "policy": "easy", "cluster": "nodes:4", "total_nodes": 4}


def test_the_run_files_thread_reports_its_error_after_the_job_files(tmp_path, monkeypatch
                                                                     ) -> None:
    """segments.csv and timeseries.csv are written by a second thread: its error reaches
    the caller, and the files of the first thread are written all the same."""
    import threading

    from schedd import sim

    _write_small_trace(tmp_path)
    trace, run = _small_run(tmp_path)
    writers = []

    def failing(*args, **kwargs):
        writers.append(threading.current_thread())
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sim, "write_run_files", failing)
    with pytest.raises(OSError, match="No space left"):
        sim.write_outputs(tmp_path / "out", trace, run, DESCRIPTION)
    assert writers and writers[0] is not threading.main_thread()
    for name in ("jobs.swf", "jobs.csv", "summary.json"):
        assert (tmp_path / "out" / name).stat().st_size > 0


def test_an_error_of_the_job_files_wins_and_the_thread_is_waited_for(tmp_path, monkeypatch
                                                                      ) -> None:
    import threading

    from schedd import sim

    _write_small_trace(tmp_path)
    trace, run = _small_run(tmp_path)
    finished = threading.Event()

    def slow_and_failing(*args, **kwargs):
        threading.Event().wait(0.2)
        finished.set()
        raise OSError("the run files' error")

    def job_files_fail(*args, **kwargs):
        raise ValueError("the job files' error")

    monkeypatch.setattr(sim, "write_run_files", slow_and_failing)
    monkeypatch.setattr(sim, "write_results", job_files_fail)
    with pytest.raises(ValueError, match="job files"):
        sim.write_outputs(tmp_path / "out", trace, run, DESCRIPTION)
    assert finished.is_set()  # not left writing behind the caller's back


def test_files_written_side_by_side_equal_those_written_one_after_another(tmp_path) -> None:
    from schedd import sim

    _write_small_trace(tmp_path)
    trace, run = _small_run(tmp_path)
    sim.write_outputs(tmp_path / "both", trace, run, DESCRIPTION)
    sim.write_results(tmp_path / "one", trace, run.results, run.summary, DESCRIPTION,
                      dict(run.engine.stats), {})
    sim.write_run_files(tmp_path / "one", run.recorder, run.engine.cluster, run.results,
                        "t.swf")
    for name in ("jobs.swf", "jobs.csv", "summary.json", "segments.csv", "timeseries.csv"):
        assert (tmp_path / "both" / name).read_bytes() == \
            (tmp_path / "one" / name).read_bytes(), name
