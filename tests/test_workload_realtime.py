"""Real-time jobs in a trace (`schedd workload realtime`, docs/workloads.md)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedd.cli import main
from schedd.core.job import JobClass
from schedd.traces import TraceError, normalize, read_trace, write_trace
from schedd.traces.realtime import (
    PARTITION_SIZES,
    RealtimeParams,
    aps_count,
    aps_walltime,
    load_aps_runtimes,
    make_realtime,
    partition_size,
    scale_sizes,
    share_count,
)

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
MIRA = SHARED / "mira_2018_wk1_cobalt2swf.swf"
APS = SHARED / "aps_runtimes_seconds.txt"
NAMES = ["job_id", "submit", "wait", "runtime", "procs", "cpu", "mem", "req_procs", "req_time",
         "req_mem", "status", "user", "group", "app", "queue", "partition", "prev_job", "think"]


def schedd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "schedd", *args], capture_output=True,
                          text=True, timeout=120)


def run_main(capsys, *args: str) -> tuple[int | str | None, str]:
    """`schedd ARGS` in this process (the error paths; end-to-end runs use `schedd`):
    exit status and stderr. An uncaught exception fails the test as a traceback would."""
    try:
        code: int | str | None = main(list(args))
    except SystemExit as exit_:
        code = exit_.code
    return code, capsys.readouterr().err


def swf(path: Path, rows: list[dict], max_nodes: int | None = 49152) -> Path:
    header = "" if max_nodes is None else f"; MaxNodes: {max_nodes}\n"
    lines = [" ".join(str(row.get(name, -1)) for name in NAMES) for row in rows]
    path.write_text(header + "\n".join(lines) + "\n")
    return path


def random_rows(n: int = 300, seed: int = 5, max_nodes: int = 49152) -> list[dict]:
    """Jobs with walltimes around 90 minutes, plus lines the simulator drops: runtime 0
    (every 37th) and a size above the machine (every 41st)."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(1_000, 900_000, n))
    runtime = rng.integers(60, 12_000, n)
    req_time = runtime + rng.integers(0, 3600, n)
    nodes = rng.choice([512, 1024, 2048, 4096, 8192], n)
    rows = []
    for i in range(n):
        row = dict(job_id=i + 1, submit=int(submit[i]), runtime=int(runtime[i]),
                   procs=int(nodes[i]), req_procs=int(nodes[i]), req_time=int(req_time[i]),
                   status=1, queue=int(i % 3))
        if i % 37 == 5:
            row["runtime"] = 0
        if i % 41 == 7:
            row["procs"] = row["req_procs"] = max_nodes + 512
        rows.append(row)
    return rows


@pytest.fixture
def trace_path(tmp_path: Path) -> Path:
    return swf(tmp_path / "in.swf", random_rows())


@pytest.fixture
def aps_path(tmp_path: Path) -> Path:
    path = tmp_path / "aps.txt"
    path.write_text("# runtimes in seconds\n59\n93\n110\n150\n300\n\n705\n1234.5\n")
    return path


@pytest.fixture
def mira():
    if not MIRA.exists() or not APS.exists():
        pytest.skip(f"shared traces not found at {SHARED}")
    return read_trace(MIRA)


def marked(path: Path, runtimes=None, **kwargs):
    trace = read_trace(path)
    out, stats = make_realtime(trace, RealtimeParams(**kwargs), runtimes)
    return trace, out, stats


def kept_mask(cols, target: int = 49152) -> np.ndarray:
    nodes = np.where(cols["req_procs"] > 0, cols["req_procs"], cols["procs"])
    return (cols["runtime"] > 0) & (nodes >= 1) & (nodes <= target)


def walltime(cols) -> np.ndarray:
    return np.where(cols["req_time"] > 0, cols["req_time"], cols["runtime"])


RUNTIMES = np.array([59.0, 93.0, 110.0, 150.0, 300.0, 705.0, 1234.5])


# ----------------------------------------------------------------------------- determinism


@pytest.mark.parametrize("mode", ["default", "short", "aps"])
def test_same_seed_is_byte_identical_and_another_seed_differs(tmp_path, trace_path, mode):
    files = []
    for i, seed in enumerate((3, 3, 4)):
        _, out, _ = marked(trace_path, RUNTIMES, percent=15, mode=mode, seed=seed,
                           non_checkpointable=0.2)
        write_trace(tmp_path / f"{i}.swf", out)
        files.append((tmp_path / f"{i}.swf").read_bytes())
    assert files[0] == files[1]
    assert files[0] != files[2]


# ----------------------------------------------------------------------------- counts


def test_counts_are_exact_floors():
    assert share_count(10, 2147) == 214
    assert share_count(33.3, 1000) == 333  # the decimal, not the double below it
    assert share_count(29, 100) == 29  # 0.29 x 100 is 28.999... in floating point
    assert share_count(5, 19) == 0
    assert aps_count(10, 2147) == 238  # 2147 / 9 = 238.6
    assert aps_count(20, 100) == 25
    assert aps_count(50, 7) == 7
    assert aps_count(5, 19) == 1


@pytest.mark.parametrize("percent", [5, 10, 15, 20, 37.5])
def test_default_marks_exactly_p_percent_of_the_kept_jobs(trace_path, percent):
    trace, out, stats = marked(trace_path, percent=percent, seed=1)
    cols = out.columns
    kept = kept_mask(trace.columns)
    n = int(kept.sum())
    assert n < len(trace)  # the fixture has lines the simulator drops
    expected = math.floor(percent * n / 100)
    is_rt = cols["job_class"] == "R"
    assert int(is_rt.sum()) == stats["realtime"] == stats["wanted"] == expected
    assert not (is_rt & ~kept).any()
    assert stats["kept"] == stats["eligible"] == n
    assert stats["batch"] == n - expected == int((cols["job_class"][kept] == "B").sum())
    assert stats["jobs"] == len(trace) and stats["added"] == 0 and stats["scale"] == 1.0
    for name in ("job_id", "submit", "runtime", "procs", "req_procs", "req_time", "queue"):
        assert np.array_equal(cols[name], trace.columns[name]), name


def test_kept_jobs_are_reset_and_dropped_lines_copied(tmp_path):
    rows = [dict(job_id=1, submit=0, runtime=10, procs=512),
            dict(job_id=2, submit=5, runtime=0, procs=512),
            dict(job_id=3, submit=9, runtime=10, procs=512)]
    path = swf(tmp_path / "in.swf", rows)
    text = path.read_text().splitlines()
    # job 1 already R and not checkpointable, job 2 (dropped: runtime 0) too
    ext = " -1 S -1 R 0" + " -1" * 8
    path.write_text("\n".join([text[0], text[1] + ext, text[2] + ext, text[3]]) + "\n")
    _, out, stats = marked(path, percent=50, seed=0)
    cols = out.columns
    assert stats["kept"] == 2 and stats["realtime"] == 1
    assert cols["job_class"][1] == "R" and cols["checkpointable"][1] == 0  # copied as is
    assert sorted(cols["job_class"][[0, 2]].tolist()) == ["B", "R"]
    assert cols["checkpointable"][[0, 2]].tolist() == [-1, -1]


def test_short_mode_marks_only_short_jobs(trace_path):
    trace, out, stats = marked(trace_path, percent=10, mode="short", seed=2)
    cols = trace.columns
    kept = kept_mask(cols)
    eligible = kept & (walltime(cols) <= 5400)
    is_rt = out.columns["job_class"] == "R"
    assert stats["eligible"] == int(eligible.sum())
    assert int(is_rt.sum()) == stats["realtime"] == math.floor(10 * kept.sum() / 100)
    assert not (is_rt & ~eligible).any()
    # the paper's text: runtime instead of walltime, and another limit
    _, out, stats = marked(trace_path, percent=10, mode="short", short_by="runtime",
                           short_max_s=3000.0, seed=2)
    is_rt = out.columns["job_class"] == "R"
    assert stats["eligible"] == int((kept & (cols["runtime"] <= 3000)).sum())
    assert (cols["runtime"][is_rt] <= 3000).all()
    assert (walltime(cols)[is_rt] > 3000).any()  # walltime was not the test


def test_short_mode_marks_every_eligible_job_when_too_few(tmp_path):
    rows = [dict(job_id=i + 1, submit=i, runtime=100, procs=512,
                 req_time=5400 if i < 3 else 5401) for i in range(40)]
    _, out, stats = marked(swf(tmp_path / "s.swf", rows), percent=20, mode="short")
    assert stats["wanted"] == 8 and stats["eligible"] == 3 and stats["realtime"] == 3
    assert out.columns["job_class"].tolist() == ["R"] * 3 + ["B"] * 37


# ----------------------------------------------------------------------------- aps


def test_partition_sizes_round_up_and_cap():
    assert PARTITION_SIZES == (512, 1024, 2048, 4096, 8192, 12288, 16384, 24576, 32768,
                               49152)
    draws = np.array([0.0, 1.0, 512.0, 512.5, 3000.0, 12000.0, 12289.0, 40000.0, 1e6])
    assert partition_size(draws, 49152).tolist() == [512, 512, 512, 1024, 4096, 12288,
                                                     16384, 49152, 49152]
    assert partition_size(draws, 8192).tolist() == [512, 512, 512, 1024, 4096, 8192, 8192,
                                                    8192, 8192]
    assert partition_size(draws, 10000).tolist()[-3:] == [10000, 10000, 10000]


def test_aps_walltime_rounds_minutes_half_up_and_never_below_the_runtime():
    runtime = np.array([150.0, 140.0, 59.0, 10.0, 300.0, 300.0, 89.0])
    u = np.array([1.0, 1.0, 1.0, 1.0, 1.5, 1.9999, 1.0])
    wall, raised = aps_walltime(runtime, u)
    # 2.5 -> 3; 2.33 -> 2 min < 140 s -> 3; 0.98 -> 1; 0.17 -> 1 (at least); 7.5 -> 8;
    # 9.9995 -> 10; 1.48 -> 1 min < 89 s -> 2
    assert wall.tolist() == [180.0, 180.0, 60.0, 60.0, 480.0, 600.0, 120.0]
    assert raised.tolist() == [False, True, False, False, False, False, True]


def check_aps(trace, out, stats, runtimes, target=49152):
    tcols, cols = trace.columns, out.columns
    n = int(kept_mask(tcols, target).sum())
    added = aps_count(15, n)
    assert stats["added"] == stats["realtime"] == stats["wanted"] == added
    assert stats["jobs"] == len(trace) + added == len(cols["job_id"])
    assert stats["batch"] == n and stats["eligible"] is None
    ids = cols["job_id"]
    assert len(np.unique(ids)) == len(ids)
    new = np.isin(ids, tcols["job_id"], invert=True)
    assert sorted(ids[new].tolist()) == list(range(int(tcols["job_id"].max()) + 1,
                                                   int(tcols["job_id"].max()) + 1 + added))
    assert (cols["job_class"][new] == "R").all()
    assert (cols["job_class"][~new] == "B").all()  # every trace job stays batch
    order = np.lexsort((ids, cols["submit"]))
    assert np.array_equal(order, np.arange(len(ids)))  # sorted by (submit, id)
    submits = tcols["submit"][kept_mask(tcols, target)]
    s = cols["submit"][new]
    assert ((s >= submits.min()) & (s <= submits.max()) & (s == np.floor(s))).all()
    r = cols["runtime"][new]
    assert np.isin(r, runtimes).all()
    w = cols["req_time"][new]
    assert (w % 60 == 0).all() and (w >= 60).all()
    assert (w >= r).all()
    assert (w <= 60 * np.maximum(1, np.floor(2 * r / 60 + 0.5))).all()
    size = cols["procs"][new]
    assert np.array_equal(size, cols["req_procs"][new])
    assert np.isin(size, [p for p in PARTITION_SIZES if p < target] + [target]).all()
    for name in ("user", "group", "queue", "wait", "status", "checkpointable"):
        assert (cols[name][new] == -1).all(), name
    # the trace's own rows are unchanged apart from their order
    back = {int(j): i for i, j in enumerate(ids)}
    rows = [back[int(j)] for j in tcols["job_id"]]
    for name in ("submit", "runtime", "procs", "req_time", "queue"):
        assert np.array_equal(cols[name][rows], tcols[name]), name
    return new


def test_aps_adds_jobs_by_the_authors_rules(trace_path):
    trace, out, stats = marked(trace_path, RUNTIMES, percent=15, mode="aps", seed=8)
    new = check_aps(trace, out, stats, RUNTIMES)
    size = out.columns["procs"][new]
    assert len(np.unique(size)) >= 3  # Exp(2048): mostly 512-4096, some larger
    assert np.isin(out.columns["runtime"][new], RUNTIMES).sum() == len(size)


def test_aps_sizes_are_capped_at_the_target(tmp_path):
    path = swf(tmp_path / "small.swf", random_rows(max_nodes=4096), max_nodes=4096)
    trace, out, stats = marked(path, RUNTIMES, percent=15, mode="aps", target_nodes=4096,
                               seed=2)
    new = check_aps(trace, out, stats, RUNTIMES, target=4096)
    assert out.columns["procs"][new].max() == 4096
    _, out, _ = marked(path, RUNTIMES, percent=15, mode="aps", target_nodes=4096,
                       aps_mean_nodes=1e6)
    new = out.columns["job_class"] == "R"
    assert (out.columns["procs"][new] == 4096).all()
    _, out, _ = marked(swf(tmp_path / "big.swf", random_rows()), RUNTIMES, percent=15,
                       mode="aps", aps_mean_nodes=1e9)
    assert (out.columns["procs"][out.columns["job_class"] == "R"] == 49152).all()


def test_aps_needs_runtimes(trace_path):
    with pytest.raises(ValueError, match="needs the APS runtimes"):
        marked(trace_path, None, percent=10, mode="aps")
    with pytest.raises(ValueError, match="positive numbers of seconds"):
        marked(trace_path, np.array([10.0, 0.0]), percent=10, mode="aps")


# ----------------------------------------------------------------------------- eq. 59


def test_eq59_hand_worked():
    sizes = np.array([1000, 1, 80640, 80641, -1, 0, 512])
    # ceil(1000 x 49152 / 80640) = ceil(609.52) = 610; 512 -> ceil(312.08) = 313
    assert scale_sizes(sizes, 80640, 49152).tolist() == [610, 1, 49152, 49153, -1, 0, 313]
    assert scale_sizes(np.array([3]), 4, 2).tolist() == [2]  # 1.5 up
    assert scale_sizes(np.array([2]), 4, 2).tolist() == [1]  # exact stays


def test_eq59_scales_before_marking_and_sets_the_header(tmp_path):
    rows = [dict(job_id=1, submit=0, runtime=100, procs=1000, req_procs=1000),
            dict(job_id=2, submit=1, runtime=100, procs=80640, req_procs=-1),
            dict(job_id=3, submit=2, runtime=100, procs=90000, req_procs=90000),  # too big
            dict(job_id=4, submit=3, runtime=100, procs=40000, req_procs=40000)]
    path = swf(tmp_path / "curie.swf", rows, max_nodes=80640)
    _, out, stats = marked(path, percent=50, normalize_from=80640)
    cols = out.columns
    assert cols["procs"].tolist() == [610, 49152, 54858, 24381]
    assert cols["req_procs"].tolist() == [610, -1, 54858, 24381]
    assert stats["kept"] == 3 and stats["realtime"] == 1  # job 3 exceeds the target
    assert cols["job_class"][2] == "B"
    assert stats["scale"] == pytest.approx(49152 / 80640)
    write_trace(tmp_path / "o.swf", out)
    back = read_trace(tmp_path / "o.swf")
    assert back.header.max_nodes == 49152 and back.header.max_procs == 49152
    assert "eq. 59" in "\n".join(back.header.lines)


def test_machine_size_must_match_the_target_without_eq59(tmp_path):
    path = swf(tmp_path / "t.swf", random_rows(max_nodes=4360), max_nodes=4360)
    with pytest.raises(ValueError, match="machine has 4360 nodes but the target has 49152"):
        marked(path, percent=10)
    _, out, _ = marked(path, percent=10, target_nodes=4360)
    assert out.header.max_nodes == 4360
    _, out, _ = marked(path, percent=10, normalize_from=4360)
    assert out.header.max_nodes == 49152
    # no header: the target becomes the machine
    _, out, _ = marked(swf(tmp_path / "n.swf", random_rows(), max_nodes=None), percent=10)
    assert out.header.max_nodes == 49152


# ----------------------------------------------------------------------------- checkpointable


@pytest.mark.parametrize("mode", ["default", "short", "aps"])
def test_non_checkpointable_batch_jobs(trace_path, mode):
    trace, out, stats = marked(trace_path, RUNTIMES, percent=20, mode=mode, seed=4,
                               non_checkpointable=0.35)
    cols = out.columns
    kept = kept_mask(cols)
    batch = kept & (cols["job_class"] == "B")
    off = cols["checkpointable"] == 0
    assert stats["batch"] == int(batch.sum())
    assert int(off.sum()) == stats["non_checkpointable"] == math.floor(0.35 * batch.sum())
    assert not (off & ~batch).any()  # never an RTJ or a dropped line
    assert (cols["checkpointable"][~off] == -1).all()
    _, out, stats = marked(trace_path, RUNTIMES, percent=20, mode=mode, seed=4)
    assert stats["non_checkpointable"] == 0 and (out.columns["checkpointable"] == -1).all()


def test_read_back_as_job_specs(tmp_path, trace_path):
    _, out, stats = marked(trace_path, RUNTIMES, percent=10, mode="aps", seed=5,
                           non_checkpointable=0.5)
    write_trace(tmp_path / "rt.swf", out)
    queue = normalize(read_trace(tmp_path / "rt.swf"))
    cols = out.columns
    row = {int(j): i for i, j in enumerate(cols["job_id"])}
    classes = {JobClass.REALTIME: 0, JobClass.BATCH: 0}
    no_ckpt = 0
    for spec in queue.specs():
        i = row[spec.id]
        classes[spec.job_class] += 1
        assert spec.job_class is (JobClass.REALTIME if cols["job_class"][i] == "R"
                                  else JobClass.BATCH)
        assert spec.checkpointable is bool(cols["checkpointable"][i] != 0)
        no_ckpt += not spec.checkpointable
    assert classes == {JobClass.REALTIME: stats["realtime"], JobClass.BATCH: stats["batch"]}
    assert no_ckpt == stats["non_checkpointable"] > 0


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(-1, 20_000),
                          st.integers(-1, 60_000)), min_size=0, max_size=50),
       st.sampled_from(["default", "short", "aps"]), st.floats(0.5, 99.5),
       st.floats(0.0, 1.0), st.integers(0, 2**32))
def test_counts_on_any_trace(tmp_path_factory, jobs, mode, percent, fraction, seed):
    rows = [dict(job_id=i + 1, submit=s, runtime=r, procs=n, req_time=r + 60)
            for i, (s, r, n) in enumerate(jobs)]
    path = swf(tmp_path_factory.mktemp("rt") / "t.swf", rows)
    trace, out, stats = marked(path, RUNTIMES, percent=percent, mode=mode, seed=seed,
                               non_checkpointable=fraction)
    n = int(kept_mask(trace.columns).sum())
    if mode == "aps":
        assert stats["realtime"] == stats["added"] == aps_count(percent, n)
        assert stats["batch"] == n
    else:
        assert stats["realtime"] <= share_count(percent, n)
        assert stats["realtime"] == min(share_count(percent, n), stats["eligible"])
    assert int((out.columns["job_class"] == "R").sum()) == stats["realtime"]
    assert stats["non_checkpointable"] == math.floor(Fraction(str(fraction)) * stats["batch"])
    assert len(np.unique(out.columns["job_id"])) == len(out.columns["job_id"])


# ----------------------------------------------------------------------------- APS file


def test_load_aps_runtimes(aps_path):
    assert load_aps_runtimes(str(aps_path)).tolist() == RUNTIMES.tolist()


@pytest.mark.parametrize("text, line, found", [
    ("# c\n10\nabc\n", 3, "'abc'"),
    ("10\n\n-5\n", 3, "'-5'"),
    ("10\n0\n", 2, "'0'"),
    ("# c\nnan\n", 2, "'nan'"),
    ("12 13\n", 1, "'12 13'"),
])
def test_bad_aps_line_names_file_and_line(tmp_path, text, line, found):
    path = tmp_path / "aps.txt"
    path.write_text(text)
    with pytest.raises(TraceError) as err:
        load_aps_runtimes(str(path))
    assert str(err.value) == (f"{path}:{line}: expected a positive number of seconds, "
                              f"found {found}")
    assert err.value.line == line


def test_empty_or_missing_aps_file(tmp_path):
    path = tmp_path / "aps.txt"
    path.write_text("# only a comment\n\n")
    with pytest.raises(TraceError, match="expected at least one runtime, found none"):
        load_aps_runtimes(str(path))
    with pytest.raises(TraceError, match="no such file"):
        load_aps_runtimes(str(tmp_path / "none.txt"))


# ----------------------------------------------------------------------------- params


@pytest.mark.parametrize("kwargs, words", [
    (dict(percent=0), "percentage must be a number in (0, 100)"),
    (dict(percent=100), "percentage must be a number in (0, 100)"),
    (dict(percent=float("nan")), "percentage must be a number in (0, 100)"),
    (dict(percent=True), "percentage must be a number in (0, 100)"),
    (dict(percent=10, mode="fast"), "the mode must be default, short or aps"),
    (dict(percent=10, seed=-1), "seed must be a whole number"),
    (dict(percent=10, short_max_s=0.0), "short-job limit must be a positive number"),
    (dict(percent=10, short_by="nodes"), "short_by must be walltime or runtime"),
    (dict(percent=10, aps_mean_nodes=-1.0), "mean APS job size must be a positive number"),
    (dict(percent=10, non_checkpointable=1.5), "non-checkpointable fraction must be in"),
    (dict(percent=10, normalize_from=0), "original machine size must be a whole number"),
    (dict(percent=10, normalize_from=2.5), "original machine size must be a whole number"),
    (dict(percent=10, target_nodes=0), "target machine size must be a whole number"),
])
def test_bad_params_raise_one_sentence(kwargs, words):
    with pytest.raises(ValueError) as err:
        RealtimeParams(**kwargs)
    message = str(err.value)
    assert words in message
    assert "\n" not in message and message[0].islower()


# ----------------------------------------------------------------------------- Mira


def test_mira_modes(mira):
    runtimes = load_aps_runtimes(str(APS))
    assert len(runtimes) == 996
    assert len(mira) == 2147
    out, stats = make_realtime(mira, RealtimeParams(percent=10, seed=1000))
    assert stats["realtime"] == 214 == int((out.columns["job_class"] == "R").sum())
    out, stats = make_realtime(mira, RealtimeParams(percent=10, mode="short", seed=1000))
    assert stats["eligible"] == 1212 and stats["realtime"] == 214
    assert (walltime(out.columns)[out.columns["job_class"] == "R"] <= 5400).all()
    out, stats = make_realtime(mira, RealtimeParams(percent=10, mode="aps", seed=1000),
                                  runtimes)
    assert stats["added"] == 238 and stats["jobs"] == 2147 + 238
    new = out.columns["job_id"] > 2147
    assert np.isin(out.columns["runtime"][new], runtimes).all()
    assert np.isin(out.columns["procs"][new], PARTITION_SIZES).all()


def test_mira_cli_aps_simulates(tmp_path, mira):
    out = tmp_path / "mira-aps.swf"
    made = schedd("workload", "realtime", str(MIRA), "-o", str(out), "--percent", "10",
                  "--mode", "aps", "--aps-runtimes", str(APS), "--seed", "1000")
    assert made.returncode == 0, made.stderr
    assert "238 real-time" in made.stdout
    sim = schedd("simulate", "--trace", str(out), "--cluster", "mira", "--policy", "easy",
                 "--out", str(tmp_path / "run"), "--no-progress")
    assert sim.returncode == 0, sim.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["jobs_by_class"] == {"batch": 2147, "realtime": 238}


# ----------------------------------------------------------------------------- CLI


def test_cli_writes_a_workload_that_simulates(tmp_path, trace_path):
    out = tmp_path / "rt.swf"
    args = ["workload", "realtime", str(trace_path), "-o", str(out), "--percent", "20",
            "--seed", "7", "--non-checkpointable", "0.25"]
    made = schedd(*args)
    assert made.returncode == 0, made.stderr
    assert "simulate with: schedd simulate --trace" in made.stdout
    assert "--cluster mira" in made.stdout
    again = tmp_path / "again.swf"
    assert schedd(*args[:3], "-o", str(again), *args[5:]).returncode == 0
    assert out.read_bytes() == again.read_bytes()
    _, expected, stats = marked(trace_path, percent=20, seed=7, non_checkpointable=0.25)
    write_trace(tmp_path / "py.swf", expected)
    assert (tmp_path / "py.swf").read_bytes() == out.read_bytes()
    assert f"{stats['realtime']} real-time" in made.stdout
    sim = schedd("simulate", "--trace", str(out), "--cluster", "mira", "--policy", "easy",
                 "--out", str(tmp_path / "run"), "--no-progress")
    assert sim.returncode == 0, sim.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["jobs_by_class"]["realtime"] == stats["realtime"]
    assert summary["jobs_by_class"]["batch"] == stats["batch"]


def test_cli_options_reach_the_params(tmp_path, trace_path, aps_path):
    out = tmp_path / "o.swf"
    made = schedd("workload", "realtime", str(trace_path), "--out", str(out), "--percent",
                  "15", "--mode", "aps", "--aps-runtimes", str(aps_path), "--aps-mean-nodes",
                  "1e9", "--seed", "2")
    assert made.returncode == 0, made.stderr
    assert "added" in made.stdout
    cols = read_trace(out).columns
    new = cols["job_class"] == "R"
    assert (cols["procs"][new] == 49152).all() and np.isin(cols["runtime"][new],
                                                           RUNTIMES).all()
    made = schedd("workload", "realtime", str(trace_path), "-o", str(out), "--percent", "30",
                  "--mode", "short", "--short-max", "60", "--short-by", "runtime")
    assert made.returncode == 0, made.stderr
    assert "eligible" in made.stdout
    cols = read_trace(out).columns
    assert (cols["runtime"][cols["job_class"] == "R"] <= 3600).all()
    curie = swf(tmp_path / "curie.swf", [dict(job_id=1, submit=0, runtime=10, procs=1000)],
                max_nodes=80640)
    made = schedd("workload", "realtime", str(curie), "-o", str(out), "--percent", "50",
                  "--normalize-from", "80640")
    assert made.returncode == 0, made.stderr
    assert read_trace(out).columns["procs"].tolist() == [610]
    made = schedd("workload", "realtime", str(curie), "-o", str(out), "--percent", "50",
                  "--target-nodes", "80640")
    assert made.returncode == 0, made.stderr
    assert "--cluster nodes:80640" in made.stdout


@pytest.mark.parametrize("args, words", [
    (["--percent", "10", "--mode", "aps"], "--mode aps needs --aps-runtimes FILE"),
    (["--percent", "100"], "percentage must be a number in (0, 100)"),
    (["--percent", "0"], "expected a number > 0"),
    (["--percent", "ten"], "expected a number"),
    (["--mode", "aps"], "required: --percent"),
    (["--percent", "10", "--mode", "fast"], "invalid choice"),
    (["--percent", "10", "--non-checkpointable", "2"], "probability"),
    (["--percent", "10", "--target-nodes", "1024"], "the trace's machine has 49152 nodes"),
    (["--percent", "10", "--normalize-from", "0"], "expected a number >= 1"),
])
def test_cli_bad_options_exit_2_with_a_sentence(capsys, tmp_path, trace_path, args, words):
    code, err = run_main(capsys, "workload", "realtime", str(trace_path), "-o",
                         str(tmp_path / "x.swf"), *args)
    assert code == 2
    assert words in err.strip().splitlines()[-1]  # one sentence, after argparse's usage
    assert not (tmp_path / "x.swf").exists()


def test_cli_bad_aps_line_names_file_and_line(capsys, tmp_path, trace_path):
    bad = tmp_path / "aps.txt"
    bad.write_text("# runtimes\n90\n1O0\n")
    code, err = run_main(capsys, "workload", "realtime", str(trace_path), "-o",
                         str(tmp_path / "x.swf"), "--percent", "10", "--mode", "aps",
                         "--aps-runtimes", str(bad))
    assert code == 2
    assert err == (f"schedd: error: {bad}:3: expected a positive number of seconds, found "
                   f"'1O0'\n")
    assert not (tmp_path / "x.swf").exists()


def test_cli_bad_trace_names_file_and_line(capsys, tmp_path):
    bad = tmp_path / "bad.swf"
    bad.write_text("1 0 0 10 4\n")
    code, err = run_main(capsys, "workload", "realtime", str(bad), "-o",
                         str(tmp_path / "x.swf"), "--percent", "10")
    assert code == 2
    assert f"{bad}:1: expected 18 to 40" in err


def test_non_checkpointable_draws_come_after_the_marking(trace_path):
    _, a, _ = marked(trace_path, RUNTIMES, percent=10, mode="aps", seed=3)
    _, b, _ = marked(trace_path, RUNTIMES, percent=10, mode="aps", seed=3,
                     non_checkpointable=0.5)
    for name in ("job_id", "submit", "runtime", "procs", "req_time", "job_class"):
        assert np.array_equal(a.columns[name], b.columns[name]), name
    assert not np.array_equal(a.columns["checkpointable"], b.columns["checkpointable"])
    _, a, _ = marked(trace_path, percent=10, seed=3)
    _, b, _ = marked(trace_path, percent=10, seed=3, non_checkpointable=0.9)
    assert np.array_equal(a.columns["job_class"], b.columns["job_class"])


def test_header_records_the_marking(tmp_path, trace_path):
    _, out, _ = marked(trace_path, percent=12.5, mode="short", seed=21)
    write_trace(tmp_path / "h.swf", out)
    head = [line for line in (tmp_path / "h.swf").read_text().splitlines()
            if line.startswith(";")]
    assert head[0] == "; MaxNodes: 49152"
    notes = "\n".join(head)
    assert "mode short, 12.5 %, seed 21" in notes and "walltime <= 5400 s" in notes
    assert "eq. 59" not in notes


def test_aps_submits_stay_within_a_narrow_span(tmp_path):
    rows = [dict(job_id=i + 1, submit=100 + i % 3, runtime=50, procs=512) for i in range(90)]
    rows.append(dict(job_id=91, submit=5, runtime=0, procs=512))  # dropped: not in the span
    _, out, stats = marked(swf(tmp_path / "n.swf", rows), RUNTIMES, percent=50, mode="aps",
                           seed=1)
    new = out.columns["job_class"] == "R"
    assert stats["added"] == 90
    assert set(out.columns["submit"][new].tolist()) == {100.0, 101.0, 102.0}
    rows = [dict(job_id=1, submit="5.2", runtime=50, procs=512),
            dict(job_id=2, submit="5.7", runtime=50, procs=512)]
    _, out, _ = marked(swf(tmp_path / "f.swf", rows), RUNTIMES, percent=50, mode="aps")
    # two jobs added, both at the first submit (the span lies within one second)
    assert out.columns["submit"].tolist() == [5.2, 5.2, 5.2, 5.7]
    assert out.columns["job_id"].tolist() == [1, 3, 4, 2]
