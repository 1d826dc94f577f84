"""Hybrid on-demand / rigid / malleable workloads (`schedd workload hybrid`, docs/workloads.md)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedd.core.job import JobClass
from schedd.traces import normalize, read_trace, write_trace
from schedd.traces.hybrid import (
    KINDS,
    MIXES,
    HybridParams,
    make_hybrid,
    notice_kinds,
    resolve_project_source,
    split_counts,
)

THETA = Path(__file__).resolve().parents[1].parent / "shared" / "traces" / "theta_2023.swf"


def schedd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "schedd", *args], capture_output=True,
                          text=True, timeout=300)


def swf(path: Path, rows: list[dict], header: str = "; MaxNodes: 1024\n") -> Path:
    """Write job lines (SWF fields by name, the rest -1) and return the path."""
    names = ["job_id", "submit", "wait", "runtime", "procs", "cpu", "mem", "req_procs",
             "req_time", "req_mem", "status", "user", "group", "app", "queue", "partition",
             "prev_job", "think"]
    lines = [" ".join(str(row.get(name, -1)) for name in names) for row in rows]
    path.write_text(header + "\n".join(lines) + "\n")
    return path


def random_rows(n: int = 400, seed: int = 5, users: int = 12, groups: int = 40) -> list[dict]:
    """A trace with projects (groups), single-node jobs and a few odd lines."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(100_000, 3_000_000, n))
    runtime = rng.integers(1, 40_000, n)
    runtime[rng.random(n) < 0.02] = 0  # odd lines are kept, with setup 0
    nodes = np.where(rng.random(n) < 0.15, 1, rng.integers(2, 1024, n))
    return [dict(job_id=i + 1, submit=int(submit[i]), runtime=int(runtime[i]),
                 procs=int(nodes[i]), req_procs=int(nodes[i]),
                 req_time=int(runtime[i] + rng.integers(0, 3600)),
                 user=int(rng.integers(0, users)), group=int(rng.integers(0, groups)))
            for i in range(n)]


@pytest.fixture
def trace_path(tmp_path: Path) -> Path:
    return swf(tmp_path / "in.swf", random_rows())


@pytest.fixture
def theta():
    if not THETA.exists():
        pytest.skip(f"shared trace not found at {THETA}")
    return read_trace(THETA)


def marked(path: Path, **kwargs):
    trace = read_trace(path)
    out, stats = make_hybrid(trace, HybridParams(**kwargs))
    return trace, out, stats


def file_bytes(tmp_path: Path, trace, name: str) -> bytes:
    write_trace(tmp_path / name, trace)
    return (tmp_path / name).read_bytes()


def single_letters(values) -> set[str]:
    return {str(v) for v in values}


# ----------------------------------------------------------------------------- determinism


def test_same_seed_is_byte_identical_and_another_seed_differs(tmp_path, trace_path):
    runs = [file_bytes(tmp_path, marked(trace_path, seed=s)[1], f"{i}.swf")
            for i, s in enumerate((3, 3, 4))]
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_mixes_of_one_seed_share_projects_types_and_setups(trace_path):
    outs = [marked(trace_path, mix=m, seed=2)[1].columns for m in MIXES]
    for cols in outs[1:]:
        for name in ("group", "job_class", "setup", "runtime", "min_nodes"):
            assert np.array_equal(cols[name], outs[0][name]), name


def test_marking_a_marked_trace_again_changes_nothing(tmp_path, trace_path):
    _, once, _ = marked(trace_path, seed=7)
    write_trace(tmp_path / "once.swf", once)
    _, twice, stats = marked(tmp_path / "once.swf", seed=7)
    assert stats["project_source"] == "group"
    for name, col in once.columns.items():
        assert np.array_equal(np.asarray(col), np.asarray(twice.columns[name])), name


# ----------------------------------------------------------------------------- projects


def check_one_type_per_project(cols) -> None:
    nodes = np.where(cols["req_procs"] > 0, cols["req_procs"], cols["procs"])
    letters, project = cols["job_class"], cols["group"]
    assert not ((letters == "M") & (nodes == 1)).any()  # single-node jobs cannot shrink
    for p in np.unique(project):
        mine = project == p
        wide = single_letters(letters[mine & (nodes != 1)])
        narrow = single_letters(letters[mine & (nodes == 1)])
        assert len(wide) <= 1
        if wide == {"M"} or not wide:  # re-assigned per job: rigid or on-demand
            assert narrow <= {"B", "O"}
        else:
            assert narrow <= wide


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_project_has_one_type(trace_path, seed):
    _, out, stats = marked(trace_path, seed=seed)
    check_one_type_per_project(out.columns)
    assert stats["project_source"] == "group"
    assert stats["projects"] == len(np.unique(out.columns["group"]))


def test_single_node_jobs_of_malleable_projects_are_split_between_rigid_and_ondemand(
        trace_path):
    trace, out, stats = marked(trace_path, od_share=0.0, rigid_share=0.0)
    single = trace.columns["req_procs"] == 1
    letters = out.columns["job_class"]
    assert stats["single_node_reassigned"] == int(single.sum()) > 20
    assert (letters[~single] == "M").all()
    assert 0.25 < (letters[single] == "O").mean() < 0.75
    assert single_letters(letters[single]) == {"B", "O"}


def test_sessions_split_by_signature_and_gap(tmp_path):
    day = 86400
    rows = [  # (submit, procs, req_procs, runtime, req_time) -> expected project
        dict(job_id=1, submit=0, runtime=100, procs=128, req_procs=128, req_time=3600),
        dict(job_id=2, submit=500, runtime=100, procs=256, req_procs=256, req_time=3600),
        dict(job_id=3, submit=1000, runtime=100, procs=9, req_procs=128, req_time=3600),
        dict(job_id=4, submit=2000, runtime=100, procs=128, req_procs=128, req_time=7200),
        dict(job_id=5, submit=1000 + day, runtime=100, procs=128, req_procs=128,
             req_time=3600),  # exactly one gap after job 3: a new session
        dict(job_id=6, submit=1000 + 2 * day - 1, runtime=100, procs=128, req_procs=128,
             req_time=3600),  # just under a gap after job 5: same session as 5
        dict(job_id=7, submit=300, runtime=50, procs=64, req_time=-1),  # nodes from field 5
        dict(job_id=8, submit=400, runtime=50, procs=64, req_procs=-1, req_time=50),
        dict(job_id=9, submit=450, runtime=60, procs=64, req_time=-1),  # other runtime
    ]
    _, out, stats = marked(swf(tmp_path / "s.swf", rows))
    assert stats["project_source"] == "session"
    assert out.columns["group"].tolist() == [1, 4, 1, 5, 6, 6, 2, 2, 3]
    assert stats["projects"] == 6


def test_session_gap_is_a_parameter(tmp_path):
    rows = [dict(job_id=i + 1, submit=1000 * i, runtime=10, procs=4) for i in range(4)]
    path = swf(tmp_path / "g.swf", rows)
    assert marked(path, session_gap=1000.0)[1].columns["group"].tolist() == [1, 2, 3, 4]
    assert marked(path, session_gap=1000.5)[1].columns["group"].tolist() == [1, 1, 1, 1]


def test_groups_are_numbered_by_first_submission_and_unknowns_get_sessions(tmp_path):
    rows = [
        dict(job_id=1, submit=50, runtime=10, procs=4, group=70, user=1),
        dict(job_id=2, submit=10, runtime=10, procs=4, group=30, user=1),  # submitted first
        dict(job_id=3, submit=60, runtime=10, procs=4, group=70, user=2),
        dict(job_id=4, submit=70, runtime=10, procs=8, group=-1, user=2),
        dict(job_id=5, submit=80, runtime=10, procs=8, group=-1, user=2),  # same session as 4
        dict(job_id=6, submit=90, runtime=10, procs=16, group=-1, user=2),
        dict(job_id=7, submit=95, runtime=10, procs=4, group=9, user=2),
    ]
    path = swf(tmp_path / "p.swf", rows)
    _, out, stats = marked(path)
    assert stats["project_source"] == "group"
    assert out.columns["group"].tolist() == [2, 1, 2, 3, 3, 4, 5]
    by_user = marked(path, projects="user")[1].columns["group"]
    assert by_user.tolist() == [1, 1, 2, 2, 2, 2, 2]


def test_auto_falls_back_from_group_to_user_to_session():
    def cols(group, user):
        return {"group": np.array(group), "user": np.array(user)}

    assert resolve_project_source(cols([1, 2, 1], [0, 0, 0]), "auto") == "group"
    assert resolve_project_source(cols([1, 1, -1], [3, 4, 3]), "auto") == "user"
    assert resolve_project_source(cols([-1, 5, -1], [-1, 0, 0]), "auto") == "session"
    assert resolve_project_source(cols([1, 2], [3, 4]), "user") == "user"


# ----------------------------------------------------------------------------- notices


def test_split_counts_is_largest_remainder_with_ties_to_the_earlier_kind():
    assert split_counts(10, MIXES["W5"]) == [3, 3, 2, 2]
    assert split_counts(10, MIXES["W1"]) == [7, 1, 1, 1]
    assert split_counts(7, MIXES["W1"]) == [5, 1, 1, 0]  # 4.9, 0.7, 0.7, 0.7
    assert split_counts(7, MIXES["W4"]) == [1, 1, 0, 5]
    assert split_counts(0, MIXES["W3"]) == [0, 0, 0, 0]
    for n in range(200):
        for mix in MIXES.values():
            counts = split_counts(n, mix)
            assert sum(counts) == n
            assert all(abs(c - f * n) < 1 for c, f in zip(counts, mix, strict=True))


def kinds_from_fields(cols, late_max: float = 1800.0, lead=(900.0, 1800.0)) -> dict[str, int]:
    """Classify every on-demand job by its timing fields, checking each kind's rules."""
    od = cols["job_class"] == "O"
    t, notice, est = cols["submit"][od], cols["notice_time"][od], cols["est_arrival"][od]
    nodes = np.where(cols["req_procs"] > 0, cols["req_procs"], cols["procs"])[od]
    wall = np.where(cols["req_time"] > 0, cols["req_time"], cols["runtime"])[od]
    none = notice < 0
    accurate, early, late = ~none & (est == t), ~none & (est > t), ~none & (est < t)
    assert (est[none] == -1).all() and (cols["est_nodes"][od][none] == -1).all()
    assert (cols["est_runtime"][od][none] == -1).all()
    gap = est - notice
    assert ((gap >= lead[0]) & (gap <= lead[1]))[~none].all()
    assert ((notice < t) & (t < est))[early].all()
    assert ((est < t) & (t <= est + late_max))[late].all()
    assert (cols["est_nodes"][od][~none] == nodes[~none]).all()
    assert (cols["est_runtime"][od][~none] == wall[~none]).all()
    assert not (cols["notice_time"][~od] != -1).any()
    assert not (cols["est_arrival"][~od] != -1).any()
    return {"none": int(none.sum()), "accurate": int(accurate.sum()),
            "early": int(early.sum()), "late": int(late.sum())}


@pytest.mark.parametrize("mix", list(MIXES))
def test_kind_counts_follow_the_mix_exactly_and_timings_their_rules(trace_path, mix):
    _, out, stats = marked(trace_path, mix=mix, od_share=0.5, rigid_share=0.3, seed=9)
    n_od = int((out.columns["job_class"] == "O").sum())
    expected = dict(zip(KINDS, split_counts(n_od, MIXES[mix]), strict=True))
    assert stats["ondemand_by_kind"] == expected
    assert kinds_from_fields(out.columns) == expected
    derived = notice_kinds(out.columns)
    assert {k: int((derived == k).sum()) for k in KINDS} == expected
    assert (derived[out.columns["job_class"] != "O"] == "").all()
    assert stats["clamped_notices"] == 0


def test_notice_parameters_are_honoured(trace_path):
    params = dict(od_share=1.0, rigid_share=0.0, notice_lead=(60.0, 120.0), late_max=30.0)
    _, out, _ = marked(trace_path, **params)
    kinds_from_fields(out.columns, late_max=30.0, lead=(60.0, 120.0))


def test_notices_before_time_zero_are_clamped_and_counted(tmp_path):
    rows = [dict(job_id=i + 1, submit=10 * i, runtime=100, procs=4, group=i)
            for i in range(40)]
    _, out, stats = marked(swf(tmp_path / "z.swf", rows), mix="W2", od_share=1.0,
                           rigid_share=0.0)
    notice = out.columns["notice_time"]
    assert stats["clamped_notices"] == int((notice == 0).sum()) > 10
    assert ((notice == -1) | (notice >= 0)).all()
    assert (out.columns["est_arrival"][notice >= 0] >= 0).all()


# ----------------------------------------------------------------------------- setup, sizes


def test_setup_is_carved_out_of_the_runtime(trace_path):
    trace, out, _ = marked(trace_path, seed=4)
    cols, r = out.columns, trace.columns["runtime"]
    setup, letters = cols["setup"], cols["job_class"]
    positive = r > 0
    assert np.array_equal(cols["runtime"][positive] + setup[positive], r[positive])
    assert (setup[~positive] == 0).all() and np.array_equal(cols["runtime"][~positive],
                                                            r[~positive])
    assert (cols["runtime"][positive] > 0).all()
    assert (setup == np.floor(setup)).all()
    for letter, (low, high) in (("B", (0.05, 0.10)), ("M", (0.0, 0.05))):
        mine = positive & (letters == letter)
        assert mine.sum() > 20
        assert (setup[mine] <= high * r[mine]).all()
        assert (setup[mine] > low * r[mine] - 1).all()
    assert (setup[letters == "O"] == 0).all()
    assert np.array_equal(cols["req_time"], trace.columns["req_time"])  # walltime unchanged


def test_setup_ranges_are_parameters(trace_path):
    trace, out, _ = marked(trace_path, rigid_setup=(0.2, 0.2), malleable_setup=(0.0, 0.0))
    r, cols = trace.columns["runtime"], out.columns
    rigid = cols["job_class"] == "B"
    assert np.array_equal(cols["setup"][rigid], np.floor(0.2 * np.maximum(r[rigid], 0)))
    assert (cols["setup"][cols["job_class"] == "M"] == 0).all()


@pytest.mark.parametrize("fraction", [0.2, 0.5, 1.0])
def test_malleable_minimum_size(trace_path, fraction):
    _, out, _ = marked(trace_path, min_fraction=fraction)
    cols = out.columns
    malleable = cols["job_class"] == "M"
    expected = np.maximum(1, np.ceil(fraction * cols["req_procs"][malleable]))
    assert np.array_equal(cols["min_nodes"][malleable], expected)
    assert (cols["min_nodes"][~malleable] == -1).all()
    assert (cols["min_nodes"][malleable] <= cols["req_procs"][malleable]).all()


def test_stats_add_up(trace_path):
    trace, out, stats = marked(trace_path, seed=6)
    cols = out.columns
    assert stats["jobs"] == len(trace) == sum(stats["jobs_by_class"].values())
    work = np.maximum(trace.columns["runtime"], 0) * cols["req_procs"] / 3600.0
    for name, letter in (("ondemand", "O"), ("rigid", "B"), ("malleable", "M")):
        assert stats["jobs_by_class"][name] == int((cols["job_class"] == letter).sum())
        assert math.isclose(stats["node_hours_by_class"][name],
                            float(work[cols["job_class"] == letter].sum()))
    share = stats["node_hours_by_class"]["ondemand"] / float(work.sum())
    assert math.isclose(stats["ondemand_node_hour_share"], share)
    assert sum(stats["ondemand_by_kind"].values()) == stats["jobs_by_class"]["ondemand"]


def test_header_records_the_parameters_and_the_engine_flags(tmp_path, trace_path):
    _, out, _ = marked(trace_path, mix="W3", seed=12)
    text = file_bytes(tmp_path, out, "h.swf").decode()
    head = [line for line in text.splitlines() if line.startswith(";")]
    assert head[0] == "; MaxNodes: 1024"
    notes = "\n".join(head)
    assert "mix W3" in notes and "seed 12" in notes
    assert "--ckpt daly --ckpt-cost hybrid --no-restart-read" in notes
    assert read_trace(tmp_path / "h.swf").header.max_nodes == 1024


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 500_000), st.integers(-1, 90_000),
                          st.integers(1, 64), st.integers(-1, 3)), min_size=1, max_size=60),
       st.sampled_from(list(MIXES)), st.integers(0, 2**32))
def test_invariants_on_any_trace(tmp_path_factory, jobs, mix, seed):
    rows = [dict(job_id=i + 1, submit=s, runtime=r, procs=n, req_procs=n, group=g)
            for i, (s, r, n, g) in enumerate(jobs)]
    path = swf(tmp_path_factory.mktemp("h") / "t.swf", rows)
    trace, out, stats = marked(path, mix=mix, seed=seed)
    cols, r = out.columns, trace.columns["runtime"]
    check_one_type_per_project(cols)
    positive = r > 0
    assert np.array_equal(cols["runtime"][positive] + cols["setup"][positive], r[positive])
    assert (cols["runtime"][positive] > 0).all()
    n_od = stats["jobs_by_class"]["ondemand"]
    assert list(stats["ondemand_by_kind"].values()) == split_counts(n_od, MIXES[mix])
    groups = sorted(set(cols["group"].tolist()))
    assert groups == list(range(1, len(groups) + 1))


# ----------------------------------------------------------------------------- Theta


def test_theta_w5_reads_back_as_job_specs(tmp_path, theta):
    out, stats = make_hybrid(theta, HybridParams(mix="W5", seed=1))
    assert stats["project_source"] == "session"  # Theta's fields 12-13 are constant
    assert 0.01 < stats["ondemand_node_hour_share"] < 0.5
    assert stats["jobs"] == len(theta) == 8401
    check_one_type_per_project(out.columns)
    assert kinds_from_fields(out.columns) == stats["ondemand_by_kind"]
    write_trace(tmp_path / "theta.swf", out)
    queue = normalize(read_trace(tmp_path / "theta.swf"))
    kinds = dict(zip(queue.columns["job_id"].tolist(), notice_kinds(queue.columns).tolist(),
                     strict=True))
    row = {int(j): i for i, j in enumerate(out.columns["job_id"])}
    classes = {"O": JobClass.ONDEMAND, "B": JobClass.BATCH, "M": JobClass.MALLEABLE}
    seen = set()
    for spec in queue.specs():
        i = row[spec.id]
        assert spec.job_class is classes[str(out.columns["job_class"][i])]
        seen.add(spec.job_class)
        assert spec.project == out.columns["group"][i]
        assert spec.setup == out.columns["setup"][i]
        assert spec.runtime + spec.setup == theta.columns["runtime"][i]
        if spec.job_class is JobClass.MALLEABLE:
            assert spec.malleable and spec.min_nodes == max(1, math.ceil(0.2 * spec.nodes))
        else:
            assert spec.min_nodes == -1 and not spec.malleable
        if kinds[spec.id] in ("", "none"):
            assert spec.notice is None
        else:
            assert spec.notice is not None
            assert spec.notice.time == out.columns["notice_time"][i]
            assert spec.notice.est_arrival == out.columns["est_arrival"][i]
            assert (spec.notice.nodes, spec.notice.walltime) == (spec.nodes, spec.walltime)
    assert seen == set(classes.values())


# ----------------------------------------------------------------------------- CLI


def test_cli_writes_a_workload_that_simulates(tmp_path, trace_path):
    out = tmp_path / "h.swf"
    made = schedd("workload", "hybrid", str(trace_path), "-o", str(out), "--mix", "W2",
                  "--seed", "3")
    assert made.returncode == 0, made.stderr
    assert "--ckpt daly --ckpt-cost hybrid --no-restart-read" in made.stdout
    assert "on-demand" in made.stdout and "malleable" in made.stdout
    again = tmp_path / "again.swf"
    assert schedd("workload", "hybrid", str(trace_path), "-o", str(again), "--mix", "W2",
                  "--seed", "3").returncode == 0
    assert out.read_bytes() == again.read_bytes()
    sim = schedd("simulate", "--trace", str(out), "--policy", "easy", "--ckpt", "daly",
                 "--ckpt-cost", "hybrid", "--no-restart-read", "--out", str(tmp_path / "run"),
                 "--no-progress")
    assert sim.returncode == 0, sim.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    by_class = summary["jobs_by_class"]
    assert by_class["ondemand"] > 0 and by_class["batch"] > 0 and by_class["malleable"] > 0


def test_cli_options_reach_the_params(tmp_path, trace_path):
    out = tmp_path / "o.swf"
    made = schedd("workload", "hybrid", str(trace_path), "--out", str(out), "--od-share", "1",
                  "--rigid-share", "0", "--notice-lead", "1", "2", "--late-max", "0.5",
                  "--projects", "user", "--min-fraction", "0.5")
    assert made.returncode == 0, made.stderr
    cols = read_trace(out).columns
    assert (cols["job_class"] == "O").all()
    kinds_from_fields(cols, late_max=30.0, lead=(60.0, 120.0))
    assert len(np.unique(cols["group"])) <= 12  # the users of random_rows


@pytest.mark.parametrize("args, words", [
    (["--mix", "W9"], "invalid choice"),
    (["--od-share", "1.5"], "probability"),
    (["--projects", "team"], "invalid choice"),
    (["--od-share", "0.6", "--rigid-share", "0.6"], "add up to at most 1"),
    (["--notice-lead", "30", "15"], "notice lead"),
    (["--min-fraction", "0"], "minimum fraction"),
])
def test_cli_bad_options_exit_2_with_a_sentence(tmp_path, trace_path, args, words):
    proc = schedd("workload", "hybrid", str(trace_path), "-o", str(tmp_path / "x.swf"), *args)
    assert proc.returncode == 2
    assert words in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "x.swf").exists()


def test_cli_bad_trace_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.swf"
    bad.write_text("1 0 0 10 4\n")
    proc = schedd("workload", "hybrid", str(bad), "-o", str(tmp_path / "x.swf"))
    assert proc.returncode == 2
    assert f"{bad}:1: expected 18 to 40" in proc.stderr


@pytest.mark.parametrize("kwargs, words", [
    (dict(mix="W6"), "the mix must be one of"),
    (dict(od_share=-0.1), "on-demand share must be a probability"),
    (dict(rigid_share=float("nan")), "rigid share must be a probability"),
    (dict(od_share=0.5, rigid_share=0.6), "add up to at most 1"),
    (dict(min_fraction=0.0), "minimum fraction must be in (0, 1]"),
    (dict(rigid_setup=(0.1, 0.05)), "rigid setup range"),
    (dict(malleable_setup=(0.0, 1.0)), "malleable setup range"),
    (dict(notice_lead=(0.0, 10.0)), "notice lead range"),
    (dict(notice_lead=(10.0, math.inf)), "notice lead range"),
    (dict(late_max=-1.0), "late arrival limit"),
    (dict(projects="team"), "projects must be"),
    (dict(session_gap=0.0), "session gap must be a positive number"),
    (dict(seed=-1), "seed must be a whole number"),
])
def test_bad_params_raise_one_sentence(kwargs, words):
    with pytest.raises(ValueError) as err:
        HybridParams(**kwargs)
    message = str(err.value)
    assert words in message
    assert "\n" not in message and message[0].islower()
