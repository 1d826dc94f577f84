"""Tests for schedd.metrics: every expected number is worked by hand in the comments."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedd.core.results import CLASS_CODES, COLUMNS, STATE_CODES, ResultTable
from schedd.metrics import (
    CATEGORIES,
    PERCENTILES,
    MetricOptions,
    _sorted_percentiles,
    format_summary,
    headline,
    headline_all_started,
    summarize,
)

B, R, OD, M, D = (CLASS_CODES.index(c) for c in "BROMD")  # OD: on-demand (E741 bans O)


def make_results(**given_cols: Any) -> dict[str, np.ndarray]:
    """A full result dict from a few given columns; the rest get plain defaults.

    Defaults: every job submitted at 0 and started at 0, executed = end - first_start for
    started jobs, one node, walltime = executed, busy = useful = executed x alloc_nodes,
    no overheads, batch class, completed.
    """
    n = len(next(iter(given_cols.values())))
    cols = {k: np.asarray(v, dtype="int64" if COLUMNS[k] == "q" else "float64")
            for k, v in given_cols.items()}

    def put(name: str, value: Any) -> None:
        if name not in cols:
            dtype = "int64" if COLUMNS[name] == "q" else "float64"
            cols[name] = np.broadcast_to(np.asarray(value, dtype=dtype), (n,)).copy()

    put("id", np.arange(n))
    put("submit", 0.0)
    put("first_start", cols["submit"])
    put("end", cols["first_start"])
    started = cols["first_start"] >= 0
    put("executed", np.where(started, cols["end"] - cols["first_start"], 0.0))
    put("wait", np.where(started, cols["first_start"], cols["end"]) - cols["submit"])
    put("alloc_nodes", 1)
    put("nodes", cols["alloc_nodes"])
    put("walltime", cols["executed"])
    put("orig_walltime", cols["walltime"])
    put("busy_node_s", cols["executed"] * cols["alloc_nodes"])
    put("useful_node_s", cols["busy_node_s"])
    put("requested_start", -1.0)
    for name in COLUMNS:
        put(name, 0)
    return {name: cols[name] for name in COLUMNS}


def three_jobs() -> dict[str, np.ndarray]:
    """The worked example on 10 nodes.

    job  submit start end  r    nodes busy  useful
    A    0      0     100  100  4     400   400
    B    10     50    250  200  5     1000  800   (200 node-s lost)
    C    20     100   105  5    2     10    10    (shorter than the 10 s bound)
    """
    return make_results(
        submit=[0, 10, 20],
        first_start=[0, 50, 100],
        end=[100, 250, 105],
        alloc_nodes=[4, 5, 2],
        busy_node_s=[400, 1000, 10],
        useful_node_s=[400, 800, 10],
        lost_node_s=[0, 200, 0],
    )


# --------------------------------------------------------------------------- per-job metrics


def test_three_jobs_headline_numbers() -> None:
    s = summarize(three_jobs(), total_nodes=10)
    assert s["jobs"] == 3 and s["started"] == 3
    # wait: 0, 40, 80 -> mean 40
    assert s["mean_wait_s"] == pytest.approx(40.0)
    # response: 100, 240, 85 -> mean 425/3
    assert s["mean_response_s"] == pytest.approx(425 / 3)
    # slowdown = response / r: 100/100 = 1, 240/200 = 1.2, 85/5 = 17 -> mean 19.2/3 = 6.4
    assert s["mean_slowdown"] == pytest.approx(6.4)
    # bsld(10) = max(1, resp / max(r, 10)): 1, 1.2, 85/10 = 8.5 -> mean 10.7/3
    assert s["mean_bounded_slowdown"] == pytest.approx(10.7 / 3)
    # bsld600 = (resp - r + max(r, 600)) / max(r, 600):
    #   A (100-100+600)/600 = 1, B (240-200+600)/600 = 640/600, C (85-5+600)/600 = 680/600
    #   -> mean (600+640+680)/1800 = 1920/1800
    assert s["mean_bounded_slowdown_600"] == pytest.approx(1920 / 1800)
    # makespan = max(end) - min(submit) = 250 - 0
    assert s["makespan_s"] == 250.0
    # utilisation = 1410 / (10 x 250) = 0.564; productive = 1210 / 2500 = 0.484
    assert s["utilization"] == pytest.approx(0.564)
    assert s["productive_utilization"] == pytest.approx(0.484)
    assert s["overhead_utilization"] == pytest.approx(0.08)  # 200 / 2500
    assert s["lost_node_h"] == pytest.approx(200 / 3600)


def test_headline_from_the_columns_it_reads_equals_the_summary() -> None:
    """headline_all_started (schedd.gym's fast path) from five float columns gives the
    summary's figures of the worked example, equal to the bit, as headline does."""
    res = three_jobs()
    s = summarize(res, total_nodes=10)
    cols = {name: np.asarray(res[name], np.float64)
            for name in ("submit", "first_start", "end", "executed", "busy_node_s")}
    for got in (headline(res, total_nodes=10), headline_all_started(cols, total_nodes=10)):
        assert got == {k: s[k] for k in ("mean_wait_s", "mean_slowdown",
                                         "mean_bounded_slowdown", "utilization")}
    assert headline_all_started(cols, total_nodes=10)["utilization"] == 1410 / 2500
    with pytest.raises(ValueError, match="no window"):
        headline_all_started(cols, total_nodes=10, options=MetricOptions(window=(0, 50)))


def test_three_jobs_percentiles() -> None:
    stats = summarize(three_jobs(), total_nodes=10)["stats"]["all"]
    # Linear (numpy default): sorted waits [0, 40, 80], position h = (n-1) q = 2q.
    # p5: h=0.1 -> 4; p25: h=0.5 -> 20; p50: 40; p75: h=1.5 -> 60; p95: h=1.9 -> 76
    assert stats["wait_s"] == {
        "count": 3, "mean": 40.0, "p5": 4.0, "p25": 20.0, "p50": 40.0, "p75": 60.0,
        "p95": pytest.approx(76.0),
    }
    # sorted bsld [1, 1.2, 8.5]: p50 = 1.2, p75 = 1.2 + 0.5 x 7.3 = 4.85
    assert stats["bounded_slowdown"]["p50"] == pytest.approx(1.2)
    assert stats["bounded_slowdown"]["p75"] == pytest.approx(4.85)


def test_job_shorter_than_the_bound() -> None:
    # job 0: r = 5, no wait -> response 5: slowdown 1, bsld max(1, 5/10) = 1 (clamped),
    #        bsld600 (5 - 5 + 600)/600 = 1
    # job 1: r = 5, waited 15 -> response 20: slowdown 4, bsld 20/10 = 2,
    #        bsld600 (20 - 5 + 600)/600 = 615/600
    s = summarize(make_results(submit=[0, 0], first_start=[0, 15], end=[5, 20]),
                  total_nodes=1)
    sd = s["stats"]["all"]["slowdown"]
    # sorted [1, 4], h = q: p5 = 1 + 0.05 x 3 = 1.15, p95 = 1 + 0.95 x 3 = 3.85
    assert sd["p5"] == pytest.approx(1.15) and sd["p95"] == pytest.approx(3.85)
    assert s["mean_slowdown"] == pytest.approx(2.5)
    assert s["mean_bounded_slowdown"] == pytest.approx(1.5)
    assert s["mean_bounded_slowdown_600"] == pytest.approx((1 + 615 / 600) / 2)


def test_bounds_are_options() -> None:
    # r = 5, response 20: bound 4 -> 20/5 = 4; rt bound 10 -> (20 - 5 + 10)/10 = 2.5
    opts = MetricOptions(bsld_bound_s=4, rt_bsld_bound_s=10)
    s = summarize(make_results(submit=[0], first_start=[15], end=[20]), total_nodes=1,
                  options=opts)
    assert s["mean_bounded_slowdown"] == pytest.approx(4.0)
    assert s["mean_bounded_slowdown_600"] == pytest.approx(2.5)


def test_unstarted_jobs_count_as_jobs_but_not_in_per_job_metrics() -> None:
    # job 1 never started (cancelled at 30): only job 0 (wait 10) feeds the means
    r = make_results(submit=[0, 0], first_start=[10, -1], end=[20, 30],
                     final_state=[0, STATE_CODES.index("cancelled")])
    s = summarize(r, total_nodes=1)
    assert s["jobs"] == 2 and s["started"] == 1
    assert s["mean_wait_s"] == 10.0
    assert s["makespan_s"] == 30.0  # the cancelled job's end still counts
    assert s["final_states"] == {"completed": 1, "killed": 0, "cancelled": 1, "failed": 0}


def test_zero_length_run_has_no_slowdown() -> None:
    # job 1 started and ended at once (r = 0): slowdown undefined, dropped; bounded ones
    # exist: bsld max(1, 10/10) = 1, bsld600 (10 - 0 + 600)/600
    r = make_results(submit=[0, 0], first_start=[0, 10], end=[100, 10])
    s = summarize(r, total_nodes=1)
    assert s["stats"]["all"]["slowdown"]["count"] == 1
    assert s["mean_slowdown"] == 1.0
    assert s["stats"]["all"]["bounded_slowdown"]["count"] == 2
    assert s["mean_bounded_slowdown_600"] == pytest.approx((1 + 610 / 600) / 2)
    json.dumps(s, allow_nan=False)


# --------------------------------------------------------------------------- groups


def four_category_jobs(**extra: Any) -> dict[str, np.ndarray]:
    """One job per category at the thresholds: 4096 nodes is narrow, 4608 wide;
    walltime 7200 s is short, 7201 s long. Waits 1, 2, 3, 4 tell them apart."""
    return make_results(
        submit=[0, 0, 0, 0],
        first_start=[1, 2, 3, 4],
        end=[101, 102, 103, 104],
        alloc_nodes=[4096, 4096, 4608, 4608],
        walltime=[7200, 7201, 7200, 7201],
        **extra,
    )


def test_categories_at_the_thresholds_by_walltime() -> None:
    by_cat = summarize(four_category_jobs(), total_nodes=49152)["stats"]["by_category"]
    assert list(by_cat) == list(CATEGORIES)
    waits = {name: g["wait_s"]["mean"] for name, g in by_cat.items()}
    assert waits == {"narrow-short": 1, "narrow-long": 2, "wide-short": 3, "wide-long": 4}


def test_categories_by_runtime_use_executed_not_walltime() -> None:
    # executed 7201 / 7200 swap short and long against the walltimes
    r = four_category_jobs(executed=[7201, 7200, 7201, 7200])
    opts = MetricOptions(category_by="runtime")
    by_cat = summarize(r, total_nodes=49152, options=opts)["stats"]["by_category"]
    waits = {name: g["wait_s"]["mean"] for name, g in by_cat.items()}
    assert waits == {"narrow-short": 2, "narrow-long": 1, "wide-short": 4, "wide-long": 3}


def test_class_by_category_splits_each_class_into_the_four_categories() -> None:
    # Jobs 1 and 3 real-time (narrow-short, wide-short), 2 and 4 batch.
    r = four_category_jobs(job_class=[CLASS_CODES.index(c) for c in "RBRB"])
    grid = summarize(r, total_nodes=49152)["stats"]["by_class_category"]
    assert list(grid) == ["batch", "realtime"]
    waits = {cls: {cat: g["wait_s"]["mean"] for cat, g in cats.items()}
             for cls, cats in grid.items()}
    assert waits == {
        "batch": {"narrow-short": None, "narrow-long": 2, "wide-short": None, "wide-long": 4},
        "realtime": {"narrow-short": 1, "narrow-long": None, "wide-short": 3,
                     "wide-long": None},
    }
    assert grid["realtime"]["wide-short"]["wait_s"]["count"] == 1


def test_empty_category_is_null() -> None:
    s = summarize(make_results(submit=[0], first_start=[0], end=[10]), total_nodes=1)
    wide = s["stats"]["by_category"]["wide-long"]["wait_s"]
    assert wide == {"count": 0, "mean": None, **{f"p{p}": None for p in PERCENTILES}}


def test_per_class_breakdown_only_present_classes() -> None:
    # batch waits 10, 30 (mean 20); on-demand waits 0, 0; one dedicated job never started
    r = make_results(
        submit=[0, 0, 0, 0, 0],
        first_start=[10, 30, 0, 0, -1],
        end=[20, 40, 5, 5, 50],
        job_class=[B, B, OD, OD, D],
    )
    s = summarize(r, total_nodes=4)
    assert list(s["stats"]["by_class"]) == ["batch", "ondemand", "dedicated"]
    assert s["jobs_by_class"] == {"batch": 2, "ondemand": 2, "dedicated": 1}
    assert s["stats"]["by_class"]["batch"]["wait_s"]["mean"] == 20.0
    assert s["stats"]["by_class"]["batch"]["wait_s"]["p50"] == 20.0
    assert s["stats"]["by_class"]["ondemand"]["response_s"]["mean"] == 5.0
    assert s["stats"]["by_class"]["dedicated"]["wait_s"]["count"] == 0
    assert s["stats"]["by_class"]["dedicated"]["wait_s"]["mean"] is None


def test_one_class_groups_equal_those_the_general_path_gives() -> None:
    """A run of one class reuses the run's own descriptions for that class (no second
    sort); they equal what the per-class grouping gives when another class is present
    but never started (that run takes the general path), and share no dict."""
    rng = np.random.default_rng(3)
    n = 400
    start = rng.integers(0, 5_000, n).astype(float)
    end = start + rng.integers(1, 40_000, n)
    cols = dict(submit=np.zeros(n), first_start=start, end=end,
                alloc_nodes=rng.integers(1, 300, n))
    one = summarize(make_results(**cols), total_nodes=512)["stats"]
    with_unstarted = {k: np.append(v, {"first_start": -1.0, "end": 9.0}.get(k, 1.0))
                      for k, v in cols.items()}
    two = summarize(make_results(**with_unstarted, job_class=[B] * n + [R]),
                    total_nodes=512)["stats"]
    assert list(two["by_class"]) == ["batch", "realtime"]
    for key in ("all", "by_category"):
        assert one[key] == two[key]
    assert one["by_class"] == {"batch": two["by_class"]["batch"]}
    assert one["by_class_category"] == {"batch": two["by_class_category"]["batch"]}
    assert one["by_class"]["batch"] == one["all"]
    assert one["by_class"]["batch"]["wait_s"] is not one["all"]["wait_s"]
    assert one["by_class_category"]["batch"]["wide-long"] is not one["by_category"]["wide-long"]


def test_preemption_ratio_overall_and_per_class() -> None:
    # preempted at least once: jobs 1 and 2 of 4 -> 0.5; batch 2 of 3; realtime 0 of 1
    r = make_results(end=[1, 1, 1, 1], preemptions=[0, 2, 1, 0], job_class=[B, B, B, R])
    s = summarize(r, total_nodes=1)
    assert s["preemption_ratio"] == 0.5
    assert s["preemption_ratio_by_class"] == {"batch": pytest.approx(2 / 3), "realtime": 0.0}
    assert s["preemptions"] == 3


def test_ondemand_instant_start_ratio() -> None:
    # on-demand: wait 0, wait 5, never started -> 1 of 3 instant; the batch job is ignored
    r = make_results(submit=[0, 0, 0, 0], first_start=[0, 5, -1, 0], end=[9, 9, 9, 9],
                     job_class=[OD, OD, OD, B])
    assert summarize(r, total_nodes=1)["ondemand_instant_start_ratio"] == pytest.approx(1 / 3)
    no_o = make_results(end=[1], job_class=[B])
    assert summarize(no_o, total_nodes=1)["ondemand_instant_start_ratio"] is None


def test_dedicated_delay() -> None:
    # started dedicated delays 0, 30, 90 -> 2 delayed, mean 40, mean of delayed 60, max 90;
    # the unstarted one and the batch job are ignored
    r = make_results(
        submit=[0, 0, 0, 0, 0], first_start=[0, 30, 90, -1, 0], end=[99, 99, 99, 99, 99],
        job_class=[D, D, D, D, B], start_delay=[0, 30, 90, 0, 500],
    )
    assert summarize(r, total_nodes=1)["dedicated"] == {
        "jobs": 4, "started": 3, "delayed": 2, "mean_delay_s": 40.0,
        "mean_delay_of_delayed_s": 60.0, "max_delay_s": 90.0,
    }


def test_overhead_totals_and_scheme_accounting() -> None:
    # ckpt node-s 3600 (system) + 7200 (app) -> ckpt 3 h, chr_ckpt_sys 1 h, chr_ckpt_jobs 2 h
    # t_pre x alloc = 100 x 36 + 50 x 72 = 7200 node-s -> chr_pre_sys 2 h
    r = make_results(
        end=[10, 10], alloc_nodes=[36, 72], checkpoints=[2, 3], failures=[1, 0],
        ckpt_node_s=[3600, 7200], ckpt_by_system=[1, 0], t_pre=[100, 50],
        restart_node_s=[1800, 0], setup_node_s=[0, 900], lost_node_s=[360, 0],
    )
    s = summarize(r, total_nodes=100)
    assert (s["checkpoints"], s["failures"], s["preemptions"]) == (5, 1, 0)
    assert s["ckpt_node_h"] == 3.0
    assert s["chr_ckpt_sys"] == 1.0 and s["chr_ckpt_jobs"] == 2.0
    assert s["chr_pre_sys"] == 2.0
    assert (s["restart_node_h"], s["setup_node_h"], s["lost_node_h"]) == (0.5, 0.25, 0.1)


# --------------------------------------------------------------------------- window


def test_window_keeps_jobs_that_start_and_end_inside() -> None:
    # window [100, 200]: job 0 starts before, job 1 inside (submitted at 50), job 2 ends
    # after, job 3 never started, job 4 inside at the edges (start 100, end 200)
    r = make_results(
        submit=[0, 50, 150, 120, 90],
        first_start=[90, 110, 160, -1, 100],
        end=[150, 130, 250, 140, 200],
        busy_node_s=[1, 20, 1, 0, 100],
    )
    s = summarize(r, total_nodes=2, options=MetricOptions(window=(100, 200)))
    assert s["jobs"] == 2 and s["input_rows"] == 5
    assert s["mean_wait_s"] == pytest.approx(35.0)  # (60 + 10) / 2
    # makespan over kept jobs: max end 200 - min submit 50 = 150; util 120 / (2 x 150)
    assert s["makespan_s"] == 150.0
    assert s["utilization"] == pytest.approx(0.4)
    assert s["options"]["window"] == [100.0, 200.0]


# --------------------------------------------------------------------------- percentiles


def test_percentiles_match_numpy_linear_by_hand() -> None:
    # [0, 10, 20, 30, 40]: h = 4q -> p5 h=0.2 -> 2, p25 10, p50 20, p75 30, p95 h=3.8 -> 38
    got = _sorted_percentiles(np.array([0.0, 10, 20, 30, 40]))
    assert got.tolist() == pytest.approx([2, 10, 20, 30, 38])


@given(st.lists(st.floats(-1e9, 1e9, allow_nan=False), min_size=1, max_size=60))
def test_percentiles_equal_np_percentile_default(values: list[float]) -> None:
    x = np.array(values)
    np.testing.assert_array_equal(_sorted_percentiles(np.sort(x)),
                                  np.percentile(x, PERCENTILES))


def test_group_percentiles_equal_np_percentile() -> None:
    rng = np.random.default_rng(1)
    n = 500
    submit = rng.uniform(0, 1000, n)
    start = submit + rng.exponential(100, n)
    r = make_results(submit=submit, first_start=start, end=start + rng.exponential(50, n),
                     job_class=rng.integers(0, 5, n))
    s = summarize(r, total_nodes=10)
    wait = start - submit
    for i, name in enumerate(("batch", "realtime", "ondemand", "malleable", "dedicated")):
        group = s["stats"]["by_class"][name]["wait_s"]
        expected = np.percentile(wait[r["job_class"] == i], PERCENTILES)
        assert [group[f"p{p}"] for p in PERCENTILES] == pytest.approx(expected.tolist(),
                                                                      rel=1e-12)


# --------------------------------------------------------------------------- robustness


TOP_KEYS = [
    "jobs", "started", "input_rows", "total_nodes", "mean_wait_s", "mean_response_s",
    "mean_slowdown", "mean_bounded_slowdown", "mean_bounded_slowdown_600", "utilization",
    "utilization_window", "productive_utilization", "overhead_utilization",
    "utilization_excl_waste", "makespan_s",
    "jobs_by_class",
    "final_states", "preemption_ratio", "preemption_ratio_by_class", "preemptions",
    "checkpoints", "failures", "lost_node_h", "ckpt_node_h", "restart_node_h",
    "setup_node_h", "chr_ckpt_sys", "chr_ckpt_jobs", "chr_pre_sys",
    "mean_wait_all_segments_s", "mean_queue_length", "backfill_ratio",
    "checkpoints_per_node_day", "wasted_ratio", "ondemand_instant_start_ratio",
    "ondemand_prompt_start_ratio", "dedicated", "stats",
    "options",
]


def test_empty_input_gives_nulls_not_errors() -> None:
    s = summarize(ResultTable.empty().arrays(), total_nodes=10)
    assert list(s) == TOP_KEYS
    assert s["jobs"] == 0 and s["started"] == 0 and s["makespan_s"] == 0.0
    for key in ("mean_wait_s", "mean_slowdown", "mean_bounded_slowdown_600", "utilization",
                "productive_utilization", "preemption_ratio", "ondemand_instant_start_ratio",
                "mean_queue_length", "backfill_ratio", "checkpoints_per_node_day",
                "wasted_ratio", "utilization_excl_waste", "ondemand_prompt_start_ratio",
                "utilization_window"):
        assert s[key] is None, key
    assert s["stats"]["by_class"] == {}
    assert s["stats"]["all"]["wait_s"]["p50"] is None
    json.dumps(s, allow_nan=False)
    assert "jobs 0" in format_summary(s)


def test_window_excluding_everything_is_empty() -> None:
    s = summarize(three_jobs(), total_nodes=10, options=MetricOptions(window=(1e6, 2e6)))
    assert s["jobs"] == 0 and s["utilization"] is None
    json.dumps(s, allow_nan=False)


def test_json_serialisable_and_deterministic() -> None:
    r = make_results(submit=[0, 1, 2, 3], first_start=[0, 5, -1, 3], end=[4, 5, 9, 100],
                     job_class=[B, OD, D, M], preemptions=[1, 0, 0, 0])
    a = json.dumps(summarize(r, total_nodes=8), allow_nan=False)
    copy = {k: v.copy() for k, v in r.items()}
    b = json.dumps(summarize(copy, total_nodes=8), allow_nan=False)
    assert a == b
    assert list(json.loads(a)) == TOP_KEYS


def test_works_on_a_result_table() -> None:
    table = ResultTable.from_arrays(three_jobs())
    s = summarize(table.arrays(), total_nodes=10)
    assert s["utilization"] == pytest.approx(0.564)


def test_bad_arguments_raise() -> None:
    with pytest.raises(ValueError):
        MetricOptions(category_by="queue")
    with pytest.raises(ValueError):
        MetricOptions(window=(10, 5))
    with pytest.raises(ValueError):
        summarize(three_jobs(), total_nodes=0)
    r = three_jobs()
    del r["busy_node_s"]
    with pytest.raises(KeyError, match="busy_node_s"):
        summarize(r, total_nodes=10)


def test_format_summary_is_a_fixed_width_table() -> None:
    text = format_summary(summarize(three_jobs(), total_nodes=10))
    assert "utilization_window" in text and "narrow-short" in text and "class batch" in text
    table = [ln for ln in text.splitlines() if ln.startswith("  all ")]
    assert len(table) == 5  # one row per per-job metric
    assert len({len(ln) for ln in table}) == 1


# --------------------------------------------------------------------------- property


@settings(max_examples=200)
@given(
    jobs=st.lists(
        st.tuples(
            st.floats(0, 1e6),  # submit
            st.floats(0, 1e5),  # wait
            st.floats(0, 1e5),  # run
            st.floats(0, 1),  # share of the machine-time budget
            st.floats(0, 1),  # useful fraction of busy
        ),
        min_size=1,
        max_size=40,
    ),
    total_nodes=st.integers(1, 50000),
)
def test_utilization_bounds(jobs: list[tuple[float, ...]], total_nodes: int) -> None:
    submit, wait, run, share, useful = (np.array(c) for c in zip(*jobs, strict=True))
    start = submit + wait
    end = start + run
    makespan = end.max() - submit.min()
    # Scale busy so its sum is at most N x makespan (shares sum to <= 1).
    busy = share / max(share.sum(), 1.0) * total_nodes * makespan
    r = make_results(submit=submit, first_start=start, end=end, busy_node_s=busy,
                     useful_node_s=busy * useful)
    s = summarize(r, total_nodes=total_nodes)
    if makespan == 0:
        assert s["utilization"] is None
        return
    # tiny slack: the scaled shares can sum to 1 + a few ulps
    assert 0.0 <= s["utilization"] <= 1.0 + 1e-12
    assert 0.0 <= s["productive_utilization"] <= s["utilization"] + 1e-15
    json.dumps(s, allow_nan=False)


def test_utilization_excluding_waste_and_prompt_ondemand_starts() -> None:
    """Hybrid paper §IV-D: utilisation leaves out what interruptions wasted; an on-demand
    start counts as prompt within the grace (the malleable warning), instant only at 0."""
    o = CLASS_CODES.index("O")
    res = make_results(
        submit=[0, 10, 20, 30], first_start=[0, 10, 140, 200], end=[100, 110, 240, 300],
        job_class=[0, o, o, o], busy_node_s=[400, 100, 100, 100],
        useful_node_s=[300, 100, 100, 100], waste_node_s=[60, 0, 0, 0])
    s = summarize(res, total_nodes=10)
    capacity = 10 * 300
    assert s["utilization"] == pytest.approx(700 / capacity)
    assert s["utilization_excl_waste"] == pytest.approx(640 / capacity)
    assert s["ondemand_instant_start_ratio"] == pytest.approx(1 / 3)  # job 1 only
    assert s["ondemand_prompt_start_ratio"] == pytest.approx(2 / 3)  # 120 s <= grace 120
    s = summarize(res, total_nodes=10, options=MetricOptions(prompt_grace_s=0))
    assert s["ondemand_prompt_start_ratio"] == s["ondemand_instant_start_ratio"]
    with pytest.raises(ValueError, match="prompt_grace_s"):
        MetricOptions(prompt_grace_s=-1)


# --------------------------------------------------------------------------- windowed utilisation


def test_window_utilization_three_jobs() -> None:
    # Submissions at 0, 10, 20: the window is [0, 20], capacity 10 nodes x 20 s = 200.
    # Inside it only A runs (4 nodes from 0): 4 x 20 = 80. B (starts 50) and C (starts 100)
    # are after it. 80 / 200 = 0.4, where the makespan figure is 1410 / 2500 = 0.564.
    s = summarize(three_jobs(), total_nodes=10)
    assert s["utilization_window"] == pytest.approx(0.4)
    assert s["utilization"] == pytest.approx(0.564)


def preempted_run() -> dict[str, np.ndarray]:
    """4 nodes; the last submit (Y, at 40) closes the window [0, 40], capacity 160.

    job  submit  held (segments)            nodes  busy
    X    0       [0, 30] and [50, 80]        2      120   preempted at 30, waits 30-50
    Z    10      [10, 50]                    1      40    straddles the window's end
    Y    40      [40, 100]                   2      120   starts at the window's end
    """
    return make_results(submit=[0, 10, 40], first_start=[0, 10, 40], end=[80, 50, 100],
                        executed=[60, 40, 60], alloc_nodes=[2, 1, 2],
                        busy_node_s=[120, 40, 120], preemptions=[1, 0, 0])


PREEMPTED_SEGMENTS = {"job": np.array([0, 0, 1, 2]), "start": np.array([0.0, 50, 10, 40]),
                      "end": np.array([30.0, 80, 50, 100]), "nodes": np.array([2, 2, 1, 2])}


def test_window_utilization_with_segments_is_exact() -> None:
    # Inside [0, 40]: X 2 x 30 = 60 (its second segment is after), Z 1 x 30 = 30 (its
    # last 10 s are after), Y 0. 90 / 160 = 0.5625. Makespan figure: 280 / (4 x 100).
    s = summarize(preempted_run(), total_nodes=4, segments=PREEMPTED_SEGMENTS)
    assert s["utilization_window"] == pytest.approx(90 / 160)
    assert s["utilization"] == pytest.approx(0.7)


def test_window_utilization_from_job_columns() -> None:
    # Without segments, the part after the window's end is nodes x (end - max(40, start)),
    # capped at busy: X min(2 x 40, 120) = 80, Z min(1 x 10, 40) = 10, Y min(2 x 60, 120) =
    # 120. Inside: (120 - 80) + (40 - 10) + 0 = 70 -> 70 / 160. Z (uninterrupted) is exact;
    # X was preempted and waiting at 40, so its estimate (40) is below the truth (60).
    s = summarize(preempted_run(), total_nodes=4)
    assert s["utilization_window"] == pytest.approx(70 / 160)


def test_window_utilization_follows_the_window_filter() -> None:
    # window=(0, 80) keeps X and Z (Y ends at 100): submissions 0 and 10, window [0, 10],
    # capacity 40. Segments of the kept jobs inside: X 2 x 10 = 20, Z 0 -> 0.5.
    opts = MetricOptions(window=(0, 80))
    s = summarize(preempted_run(), total_nodes=4, options=opts, segments=PREEMPTED_SEGMENTS)
    assert s["jobs"] == 2 and s["utilization_window"] == pytest.approx(0.5)


def test_window_utilization_of_one_instant_is_null() -> None:
    s = summarize(make_results(submit=[5, 5], first_start=[5, 6], end=[10, 9]), total_nodes=2)
    assert s["utilization_window"] is None  # first submit = last submit: no window
    json.dumps(s, allow_nan=False)


@settings(max_examples=100)
@given(jobs=st.lists(st.tuples(st.integers(0, 10**5), st.integers(0, 10**4),
                               st.integers(0, 10**4), st.integers(1, 8)),
                     min_size=2, max_size=30))
def test_window_utilization_exact_for_uninterrupted_jobs(
        jobs: list[tuple[int, int, int, int]]) -> None:
    """Without preemptions or resizes, the per-job figure equals the segments' figure
    (times in whole seconds, as traces give them: no cancellation below a second)."""
    submit, wait, run, nodes = (np.array(c, dtype=np.float64) for c in zip(*jobs, strict=True))
    start = submit + wait
    r = make_results(submit=submit, first_start=start, end=start + run, alloc_nodes=nodes)
    segments = {"job": r["id"], "start": start, "end": start + run, "nodes": nodes}
    a = summarize(r, total_nodes=1000)["utilization_window"]
    b = summarize(r, total_nodes=1000, segments=segments)["utilization_window"]
    if submit.max() == submit.min():
        assert a is None and b is None
    else:
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12)


def test_window_utilization_of_a_simulation_matches_its_time_series() -> None:
    """End to end: a simulated run's windowed utilisation (exact, from its segments by
    clipping) equals the busy-node time series (a cumulative sum of the same segments)
    integrated over [first submit, last submit], and the per-job estimate (no segments)
    agrees when nothing is preempted."""
    from schedd.core.cluster import NodePool
    from schedd.policies import make_policy
    from schedd.run_files import timeseries_table
    from schedd.sim import simulate
    from schedd.traces import normalize
    from schedd.traces.lublin import LublinParams, generate

    trace = normalize(generate(LublinParams(jobs=120, load=1.0, p_extend=0, p_reduce=0),
                               seed=3).trace)
    cluster = NodePool(trace.max_nodes)
    run = simulate(trace, cluster, make_policy("easy", [], cluster), record=True)
    assert run.recorder is not None
    series = timeseries_table(run.recorder)
    t, busy = series["time"], series["busy_nodes"].astype(np.float64)
    lo, hi = float(trace.columns["submit"].min()), float(trace.columns["submit"].max())
    edges = np.clip(np.append(t, t[-1]), lo, hi)  # busy[i] holds from t[i] to t[i + 1]
    inside = float((busy * np.diff(edges)).sum())
    expected = inside / (cluster.total_nodes * (hi - lo))
    assert 0.5 < expected < 1.0  # the window is busy, but not full
    assert run.summary["utilization_window"] == pytest.approx(expected, rel=1e-12)
    plain = summarize(run.results, total_nodes=cluster.total_nodes)
    assert plain["utilization_window"] == pytest.approx(expected, rel=1e-12)
