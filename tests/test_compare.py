"""`schedd compare` (schedd/compare.py): run specs, the pooled tables, determinism across
worker counts, and the CLI end to end on a small Blue Gene/Q trace."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from schedd.compare import CompareError, compare, markdown, parse_run


def small_trace(path: Path, jobs: int = 30, seed: int = 7) -> Path:
    """A contended 2,048-node (bgq:4) workload: 512-2,048-node jobs, 10-60 min."""
    rng = np.random.default_rng(seed)
    lines = ["; MaxNodes: 2048", "; MaxProcs: 2048"]
    t = 0
    for i in range(1, jobs + 1):
        t += int(rng.integers(0, 300))
        nodes = int(rng.choice([512, 1024, 2048], p=[0.6, 0.3, 0.1]))
        run = int(rng.integers(600, 3600))
        wall = run + int(rng.integers(0, 1800))
        lines.append(f"{i} {t} -1 {run} {nodes} -1 -1 {nodes} {wall} -1 1 -1 -1 -1 -1 -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_parse_run_splits_policy_options_and_engine_flags() -> None:
    run = parse_run("wcjs  ckpt=app w_done=3 --app-overhead 5")
    assert (run.policy, run.options, run.engine_flags) == (
        "wcjs", ("ckpt=app", "w_done=3"), ("--app-overhead", "5"))
    assert run.label == "wcjs ckpt=app w_done=3 --app-overhead 5"
    for bad in ("", "--ckpt sys", "ckpt=jit", "wcjs jit"):
        with pytest.raises(CompareError):
            parse_run(bad)


def test_bad_runs_fail_before_any_simulation(tmp_path: Path) -> None:
    trace = str(small_trace(tmp_path / "t.swf"))
    for spec, words in (("nosuch", "unknown policy"), ("wcjs ckpt=bad", "must be one of"),
                        ("easy --bogus 1", "unknown engine flag"),
                        ("wcjs ckpt=sys --ckpt app", "--ckpt sys")):
        with pytest.raises(CompareError, match=words):
            compare(trace, "bgq:4", [parse_run(spec)], [20.0], 1)


def test_pools_trials_and_is_the_same_with_two_workers(tmp_path: Path) -> None:
    trace = str(small_trace(tmp_path / "t.swf"))
    runs = [parse_run(r) for r in ("easy", "wcjs ckpt=jit", "rt-preempt ckpt=none")]
    one = compare(trace, "bgq:4", runs, [20.0, 40.0], 3, workers=1)
    two = compare(trace, "bgq:4", runs, [20.0, 40.0], 3, workers=2)
    assert json.dumps(one) == json.dumps(two)
    assert one["percents"] == ["20", "40"] and one["runs"] == [r.label for r in runs]
    for percent, rtjs in (("20", 6), ("40", 12)):  # floor(p x 30) per trial, 3 trials
        for label in one["runs"]:
            by = one["results"][percent][label]["stats"]["by_class"]
            assert by["realtime"]["bounded_slowdown_600"]["count"] == 3 * rtjs
            assert by["batch"]["bounded_slowdown_600"]["count"] == 3 * (30 - rtjs)
    easy = one["results"]["20"]["easy"]
    assert easy["preemptions"] == 0 and easy["overhead_node_h"] == 0
    text = markdown(one)
    assert "### 20% real-time jobs: all jobs" in text
    assert "#### 40% real-time jobs: wide-long" in text
    assert "| `easy` |" in text and "+0.0%" in text


def test_cli_writes_markdown_and_json(tmp_path: Path) -> None:
    trace = small_trace(tmp_path / "t.swf")
    md, js = tmp_path / "c.md", tmp_path / "c.json"
    proc = subprocess.run(
        [sys.executable, "-m", "schedd", "compare", "--trace", str(trace), "--cluster", "bgq:4",
         "--percent", "20", "--trials", "2", "--workers", "1", "--run", "easy-wfp2",
         "--run", "wcjs ckpt=app --app-overhead 5", "--baseline", "easy-wfp2",
         "--markdown", str(md), "--json", str(js)],
        capture_output=True, text=True, check=False, cwd=tmp_path)  # out/compare-* there
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == md.read_text()
    data = json.loads(js.read_text())
    assert data["runs"] == ["easy-wfp2", "wcjs ckpt=app --app-overhead 5"]
    assert "changes are against `easy-wfp2`" in proc.stdout
    bad = subprocess.run([sys.executable, "-m", "schedd", "compare", "--trace", str(trace),
                          "--cluster", "bgq:4", "--percent", "100"],
                         capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and "must lie in [0, 100)" in bad.stderr
    assert "Traceback" not in bad.stderr


def _schedd(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "schedd", *args], capture_output=True,
                          text=True, check=False, cwd=cwd)


def test_refuses_policies_that_treat_the_traces_eccs_differently(tmp_path: Path) -> None:
    """easy applies elastic control commands, los and delayed-los ignore them (no ECC
    processor): on a trace with ECCs their workloads differ, so compare refuses unless
    --allow-mixed-ecc; on the same jobs without ECCs, or with policies that agree, it runs."""
    elastic, batch = tmp_path / "e.cwf", tmp_path / "b.cwf"
    for path, flags in ((elastic, ["--ecc"]), (batch, [])):
        made = _schedd("workload", "lublin", "--jobs", "30", "--seed", "2", *flags,
                       "--out", str(path))
        assert made.returncode == 0, made.stderr
    n_eccs = int(made.stdout.split(" ECCs")[0].rsplit(" ", 1)[1])
    assert n_eccs == 0  # the batch workload: no ECCs unless asked
    common = ["compare", "--cluster", "nodes:320", "--percent", "10", "--trials", "1",
              "--workers", "1", "--run", "easy", "--run", "los unit=32", "--run", "delayed-los"]
    bad = _schedd(*common, "--trace", str(elastic))
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stdout == "" and len(bad.stderr.strip().splitlines()) == 1
    assert "'easy' applies the" in bad.stderr
    assert "'los unit=32', 'delayed-los' ignore them" in bad.stderr
    assert "--allow-mixed-ecc" in bad.stderr
    forced = _schedd(*common, "--trace", str(elastic), "--allow-mixed-ecc", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert "| `delayed-los` |" in forced.stdout
    plain = _schedd(*common, "--trace", str(batch), cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    agree = _schedd("compare", "--cluster", "nodes:320", "--percent", "10", "--trials", "1",
                    "--workers", "1", "--run", "easy-e", "--run", "los-e unit=32",
                    "--trace", str(elastic), cwd=tmp_path)
    assert agree.returncode == 0, agree.stderr


def test_compare_function_refuses_mixed_ecc_handling(tmp_path: Path) -> None:
    from schedd.traces.lublin import LublinParams, generate
    from schedd.traces.swf import write_trace

    path = tmp_path / "e.cwf"
    write_trace(str(path), generate(LublinParams(jobs=20, p_extend=0.5), seed=1).trace)
    runs = [parse_run("easy-e"), parse_run("delayed-los-e"), parse_run("hybrid-los")]
    with pytest.raises(CompareError, match=r"'easy-e', 'delayed-los-e' apply the \d+ elastic"
                       r".*'hybrid-los' ignores them"):
        compare(str(path), "nodes:320", runs, [10.0], 1)
    out = compare(str(path), "nodes:320", runs, [10.0], 1, allow_mixed_ecc=True)
    assert out["runs"] == [r.label for r in runs]


def test_a_cached_comparison_reruns_nothing_and_extends_by_the_new_cells(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """compare is a preset over schedd sweep: with --cache the same comparison again
    simulates nothing, one more trial runs only its cells, and the tables are the same."""
    trace = str(small_trace(tmp_path / "t.swf"))
    runs = [parse_run(r) for r in ("easy", "wcjs ckpt=jit")]
    cache = str(tmp_path / "cache")
    first = compare(trace, "bgq:4", runs, [20.0], 2, workers=1, cache=cache)
    assert "4 simulations, 0 cached, 4 to run" in capsys.readouterr().err
    again = compare(trace, "bgq:4", runs, [20.0], 2, workers=1, cache=cache)
    assert "4 simulations, 4 cached, 0 to run" in capsys.readouterr().err
    assert json.dumps(again) == json.dumps(first)
    compare(trace, "bgq:4", runs, [20.0], 3, workers=1, cache=cache)
    assert "6 simulations, 4 cached, 2 to run" in capsys.readouterr().err
