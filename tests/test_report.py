"""`schedd report`: the page builds for every policy family from the test traces, a
headless Chromium loads it with every figure decoded and no console error, and the
figures' inputs are right (binning keeps areas, the summary reads summary.json)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from schedd.cli import main as schedd_main
from schedd.report.figures import _binned
from schedd.report.page import ReportError, build_report, build_sweep_report
from schedd.report.runs import load_run, unique_names

SAMPLE = str(Path(__file__).resolve().parents[1] / "schedd" / "data"
             / "sample-lublin256-1000.swf")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def simulate(out: Path, *argv: str, trace: str = SAMPLE) -> Path:
    assert schedd_main(["simulate", "--trace", trace, "--out", str(out), "--no-progress",
                        "--quiet", *argv]) == 0
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """One run per policy family, on the bundled Lublin excerpt (300 jobs) or workloads
    made from it: baseline, LOS, plan-based, checkpoint backfilling, hybrid, real-time."""
    d = tmp_path_factory.mktemp("runs")
    lim = ("--limit", "300")
    out = {
        "easy": simulate(d / "easy", *lim),
        "fcfs": simulate(d / "fcfs", "--policy", "fcfs", *lim),
        "los": simulate(d / "los", "--policy", "delayed-los", *lim),
        "plan": simulate(d / "plan", "--policy", "plan-sa", "--opt", "evals=200", *lim),
        "ckpt": simulate(d / "ckpt", "--policy", "ckpt-backfill", "--ckpt-cost", "fixed",
                         "--ckpt-seconds", "60", *lim),
    }
    hybrid = d / "hybrid.cwf"
    assert schedd_main(["workload", "hybrid", SAMPLE, "-o", str(hybrid)]) == 0
    out["hybrid"] = simulate(d / "hyb", "--policy", "hybrid", "--opt", "notice=cua", *lim,
                             trace=str(hybrid))
    rt = d / "rt.swf"
    assert schedd_main(["workload", "realtime", SAMPLE, "-o", str(rt), "--percent", "10",
                        "--normalize-from", "256"]) == 0
    out["wcjs"] = simulate(d / "wcjs", "--policy", "wcjs", "--opt", "ckpt=jit",
                           "--cluster", "bgq:16", *lim, trace=str(rt))
    return out


def test_every_family_builds(runs, tmp_path):
    for name, run in runs.items():
        page = build_report([str(run)], tmp_path / name)
        text = page.read_text()
        images = re.findall(r'<img src="([^"]+)"', text)
        assert "utilisation_queue.png" in images and "distributions.png" in images
        assert any(i.startswith("gantt_") for i in images), name
        for image in images:
            assert (page.parent / image).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_side_by_side_has_a_heatmap_per_other_run(runs, tmp_path):
    page = build_report([str(runs["fcfs"]), str(runs["easy"]), str(runs["los"])], tmp_path)
    text = page.read_text()
    assert "wait_ratio_1.png" in text and "wait_ratio_2.png" in text
    assert text.count("<th>") >= 3  # one column per run in the summary table


def test_summary_table_reads_summary_json(runs, tmp_path):
    run = load_run(runs["easy"])
    page = build_report([str(runs["easy"])], tmp_path).read_text()
    mean_wait_h = run.summary["mean_wait_s"] / 3600
    assert f"<td>{mean_wait_h:.2f}</td>" in page
    assert f"<td>{int(run.summary['jobs']):,}</td>" in page


def test_bgq_gantt_uses_midplanes(runs):
    run = load_run(runs["wcjs"])
    assert run.segments is not None
    assert all(p.startswith("BGQ") or p for p in run.segments["partition"])
    mids = {int(x) for a in run.allocations for part in a.split() for x in part.split("-")}
    assert max(mids) < 16  # bgq:16: midplane numbers, not nodes


def test_binning_keeps_the_area():
    t = np.array([0.0, 1.0, 5.0, 6.0, 10.0])
    v = np.array([2.0, 0.0, 4.0, 1.0, 1.0])
    left, (means,) = _binned(t, (v,), 5)
    assert left.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
    # [0,2): 2 for 1 s, 0 for 1 s -> 1; [4,6): 0 for 1 s, 4 for 1 s -> 2; [6,8): 1.
    assert means.tolist() == [1.0, 0.0, 2.0, 1.0, 1.0]
    assert float(np.sum(means * 2.0)) == pytest.approx(float(np.sum(v[:-1] * np.diff(t))))


def test_names_are_unique():
    assert unique_names(["a/run", "b/run", "c"]) == ["a/run", "b/run", "c"]


def test_bad_inputs_are_one_sentence(tmp_path, capsys):
    with pytest.raises(ReportError, match="no summary.json"):
        build_report([str(tmp_path)], tmp_path / "out")
    assert schedd_main(["report", str(tmp_path / "nothing"), "-o", str(tmp_path / "o")]) == 2
    assert "not a run directory" in capsys.readouterr().err
    with pytest.raises(ReportError, match="no such sweep table"):
        build_sweep_report(tmp_path / "missing.csv", tmp_path / "o", ["mean_wait_s"], [])


def test_cli_end_to_end(runs, tmp_path):
    done = subprocess.run([sys.executable, "-m", "schedd", "report", str(runs["easy"]),
                           str(runs["ckpt"]), "-o", str(tmp_path / "rep")],
                          capture_output=True, text=True, check=True)
    assert "index.html" in done.stdout
    assert (tmp_path / "rep" / "wait_ratio_1.png").is_file()


def chromium_load(page: Path) -> tuple[str, str]:
    """The DOM after load and Chromium's log, from a headless run."""
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
         "--v=0", "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120)
    return done.stdout, done.stderr


def console_errors(log: str) -> list[str]:
    return [line for line in log.splitlines() if "CONSOLE" in line
            and ("Uncaught" in line or "rror" in line)]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian package "
                    "chromium; .ci/run installs it)")
def test_headless_browser_renders_every_figure(runs, tmp_path):
    page = build_report([str(runs["fcfs"]), str(runs["easy"]), str(runs["wcjs"])], tmp_path)
    dom, log = chromium_load(page)
    total = re.search(r'data-figures="(\d+)"', dom)
    loaded = re.search(r'data-figures-loaded="(\d+)"', dom)
    assert total and loaded, "the page's load script did not run"
    assert int(total.group(1)) == len(re.findall(r"<img ", page.read_text())) >= 6
    assert loaded.group(1) == total.group(1)
    assert console_errors(log) == []


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_headless_check_sees_a_broken_page(tmp_path):
    # The same checks fail on a page with a missing image and a script error.
    page = tmp_path / "broken.html"
    good = build_report([SAMPLE_RUN(tmp_path)], tmp_path / "good").read_text()
    page.write_text(good.replace('src="distributions.png"', 'src="missing.png"')
                    .replace("</body>", "<script>undefinedFunction();</script></body>"))
    for png in (tmp_path / "good").glob("*.png"):
        shutil.copy(png, tmp_path / png.name)
    dom, log = chromium_load(page)
    total = re.search(r'data-figures="(\d+)"', dom)
    loaded = re.search(r'data-figures-loaded="(\d+)"', dom)
    assert total and loaded and int(loaded.group(1)) == int(total.group(1)) - 1
    assert console_errors(log)


def SAMPLE_RUN(tmp_path: Path) -> str:  # noqa: N802
    return str(simulate(tmp_path / "sample", "--limit", "100"))
