"""End-to-end: run the `schedd` CLI as a user would, in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

REQUIRED_KEYS = ["jobs", "mean_wait_s", "mean_response_s", "mean_slowdown",
                 "mean_bounded_slowdown", "utilization", "productive_utilization", "makespan_s"]


def schedd(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "schedd", *args], capture_output=True,
                          text=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"schedd {' '.join(args)} failed:\n{proc.stderr}")
    return proc


def test_simulate_bundled_sample_writes_outputs(tmp_path):
    out = tmp_path / "run"
    proc = schedd("simulate", "--policy", "easy", "--out", str(out))
    summary = json.loads((out / "summary.json").read_text())
    assert f"wait (s)          mean {summary['mean_wait_s']:,.0f}, p50 " in proc.stdout
    for key in REQUIRED_KEYS:
        assert key in summary
    assert summary["jobs"] == 1000 and summary["run"]["cluster"] == "nodes:256"
    lines = [ln for ln in (out / "jobs.swf").read_text().splitlines() if not ln.startswith(";")]
    assert len(lines) == 1000 and all(len(ln.split()) == 18 for ln in lines)
    csv_lines = (out / "jobs.csv").read_text().splitlines()
    assert len(csv_lines) == 1001 and csv_lines[0].startswith("id,submit,first_start")


def test_same_inputs_give_byte_identical_outputs(tmp_path, shared_traces):
    args = ["simulate", "--trace", str(shared_traces / "mira_2018_wk1_cobalt2swf.swf"),
            "--cluster", "mira", "--policy", "easy-sjf", "--seed", "3", "--mtbf", "50",
            "--ckpt", "sys"]
    schedd(*args, "--out", str(tmp_path / "a"))
    schedd(*args, "--out", str(tmp_path / "b"))
    for name in ("jobs.swf", "jobs.csv", "summary.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["failures"] > 0  # 50 h MTBF over weeks of trace: failures happened


def test_bad_trace_line_names_file_and_line(tmp_path):
    trace = tmp_path / "bad.swf"
    trace.write_text("; MaxNodes: 8\n1 0 -1 10 2 -1 -1 2 20 -1 1 1 1 -1 0 -1 -1 -1\n"
                     "2 5 -1 10 x -1 -1 2 20 -1 1 1 1 -1 0 -1 -1 -1\n")
    proc = schedd("simulate", "--trace", str(trace), "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2
    assert f"{trace}:3:" in proc.stderr and "Traceback" not in proc.stderr
    lenient = schedd("simulate", "--trace", str(trace), "--lenient", "--out", str(tmp_path / "o"))
    assert "1 of 2 jobs of bad.swf not simulated: 1 on malformed lines (--lenient)" \
        in lenient.stderr
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["jobs"] == 1


@pytest.mark.parametrize("args, message", [
    (["--policy", "nope"],
     "unknown policy 'nope'; valid policies: agent, ckpt-backfill, conservative"),
    (["--policy", "easy", "--opt", "depth=3"], "policy easy has no option 'depth'"),
    (["--cluster", "torus:9"], "nodes:N"),
    (["--trace", "/nonexistent.swf"], "/nonexistent.swf"),
    (["--mttr", "0"], "argument --mttr: expected a duration > 0 h, got 0"),
    (["--mttr", "soon"], "argument --mttr: expected a duration (seconds (5400), [D-]H:MM:SS "
     "(1:30:00) or units (1h30m)), got 'soon'"),
    (["--procs-per-node", "0"], "argument --procs-per-node: expected a whole number >= 1, got '0'"),
])
def test_user_errors_are_one_sentence(tmp_path, args, message):
    proc = schedd("simulate", *args, "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_policies_lists_every_policy():
    out = schedd("policies").stdout
    for name in ("fcfs", "easy", "easy-bestfit", "easy-sjf", "conservative"):
        assert name in out


def test_validate_mode_on_blue_gene_with_preemption_free_policy(tmp_path, shared_traces):
    proc = schedd("simulate", "--trace", str(shared_traces / "mira_2014-12_wk1_cobalt2swf.swf"),
                  "--cluster", "mira-blocks", "--policy", "easy", "--validate",
                  "--out", str(tmp_path / "o"))
    assert "utilisation" in proc.stdout


def test_duplicate_job_id_names_the_line(tmp_path):
    trace = tmp_path / "dup.swf"
    line = "1 {} -1 10 2 -1 -1 2 20 -1 1 1 1 -1 0 -1 -1 -1\n"
    trace.write_text("; MaxNodes: 8\n" + line.format(0) + line.format(5))
    proc = schedd("simulate", "--trace", str(trace), "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2
    assert f"{trace}:3: expected a new job id, found job 1 submitted a second time" in proc.stderr
    lenient = schedd("simulate", "--trace", str(trace), "--lenient", "--out", str(tmp_path / "o"))
    assert "1 of 2 jobs of dup.swf not simulated: 1 repeating a job id" in lenient.stderr


@pytest.mark.parametrize("policy", ["easy", "conservative", "fcfs"])
def test_policies_survive_failures_with_validation(tmp_path, policy):
    """Failures take nodes down; a job wider than what is up must wait, not break a plan."""
    trace = tmp_path / "wide.swf"
    trace.write_text("; MaxNodes: 4\n" + "".join(
        f"{i} {i * 50} -1 {500 + 37 * i} 4 -1 -1 4 2000 -1 1 1 1 -1 0 -1 -1 -1\n"
        for i in range(1, 40)))
    proc = schedd("simulate", "--trace", str(trace), "--policy", policy, "--mtbf", "0.2",
                  "--mttr", "0.5", "--ckpt", "sys", "--ckpt-interval", "200", "--validate",
                  "--seed", "5", "--out", str(tmp_path / "o"))
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["jobs"] == 39 and summary["failures"] > 0, proc.stdout


def test_daly_mtbf_and_restart_read_flags_reach_the_engine_options():
    """--daly-mtbf sets Daly's MTBF apart from failures (which it defaults to, 5 h without);
    --no-restart-read drops the checkpoint read at resume."""
    from schedd.cli import build_parser
    from schedd.options import engine_options_from

    def options(*flags: str):
        args = build_parser().parse_args(["simulate", "--out", "x", *flags])
        return engine_options_from(args)

    assert options().checkpoint.daly_mtbf == 5 * 3600 and options().checkpoint.restart_read
    failing = options("--mtbf", "20")
    assert failing.checkpoint.daly_mtbf == 20 * 3600 and failing.mtbf_s == 20 * 3600
    both = options("--mtbf", "20", "--daly-mtbf", "50", "--no-restart-read")
    assert both.checkpoint.daly_mtbf == 50 * 3600 and both.mtbf_s == 20 * 3600
    assert not both.checkpoint.restart_read
    assert schedd("simulate", "--out", "x", "--daly-mtbf", "0", check=False).returncode == 2


def _pwa_trace(path, header: str, procs: list[int]):
    path.write_text(header + "".join(
        f"{i} {10 * i} -1 100 {p} -1 -1 {p} 200 -1 1 1 1 -1 0 -1 -1 -1\n"
        for i, p in enumerate(procs, start=1)))
    return path


def test_processor_header_gives_procs_per_node_in_one_line(tmp_path):
    """A PWA header with MaxNodes 4 and MaxProcs 64 (fields 5/8 count processors, like
    CEA Curie's 5,544 / 93,312): 16 processors per node, said once; nothing dropped."""
    trace = _pwa_trace(tmp_path / "curie.swf", "; MaxNodes: 4\n; MaxProcs: 64\n",
                       [64, 17, 16, 1, 48])
    proc = schedd("simulate", "--trace", str(trace), "--out", str(tmp_path / "o"))
    said = [ln for ln in proc.stderr.splitlines() if "per node" in ln]
    assert said == ["schedd: curie.swf's header gives MaxNodes 4 and MaxProcs 64: reading "
                    "its processor counts at 16 per node (--procs-per-node 16; "
                    "--procs-per-node 1 reads them as nodes)"]
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["jobs"] == 5 and summary["total_nodes"] == 4
    assert summary["run"]["procs_per_node"] == 16
    nodes = [int(ln.split()[4]) for ln in (tmp_path / "o" / "jobs.swf").read_text()
             .splitlines() if not ln.startswith(";")]
    assert nodes == [4, 2, 1, 1, 3]
    # the old reading stays an option: processors as nodes, larger jobs dropped and said
    as_nodes = schedd("simulate", "--trace", str(trace), "--procs-per-node", "1",
                      "--out", str(tmp_path / "p"))
    assert "per node" not in as_nodes.stderr
    assert "schedd: warning: 4 of 5 jobs of curie.swf not simulated: 4 larger than the " \
        "machine (4 nodes)" in as_nodes.stderr


def test_every_job_not_simulated_is_counted_warned_and_strict_refuses(tmp_path):
    trace = tmp_path / "t.swf"
    good = "{} {} -1 {} {} -1 -1 {} 200 -1 1 1 1 -1 0 -1 -1 -1\n"
    trace.write_text("; MaxNodes: 8\n" + good.format(1, 0, 100, 2, 2)
                     + good.format(2, 10, 100, 50, 50)  # larger than nodes:4
                     + good.format(3, 20, 0, 1, 1)  # runtime 0
                     + "4 30 x\n"  # malformed
                     + good.format(5, 40, 100, 4, 4) + good.format(6, 900, 100, 1, 1))
    proc = schedd("simulate", "--trace", str(trace), "--cluster", "nodes:4", "--lenient",
                  "--until", "500", "--out", str(tmp_path / "o"))
    warnings = [ln for ln in proc.stderr.splitlines() if "warning" in ln]
    assert warnings == ["schedd: warning: 4 of 6 jobs of t.swf not simulated: 1 with runtime "
                        "<= 0, 1 larger than the machine (4 nodes), 1 on malformed lines "
                        "(--lenient), 1 outside --from/--until"]
    dropped = json.loads((tmp_path / "o" / "summary.json").read_text())["run"]["dropped"]
    assert dropped == {"runtime<=0": 1, "nodes<1": 0, "nodes>max": 1, "submit<0": 0,
                       "duplicate id": 0,
                       "malformed": 1, "outside window": 1, "after limit": 0}
    strict = schedd("simulate", "--trace", str(trace), "--cluster", "nodes:4", "--lenient",
                    "--strict", "--out", str(tmp_path / "s"), check=False)
    assert strict.returncode == 2 and "Traceback" not in strict.stderr
    assert strict.stderr == ("schedd: error: 3 of 6 jobs of t.swf not simulated: 1 with "
                             "runtime <= 0, 1 larger than the machine (4 nodes), 1 on "
                             "malformed lines (--lenient) (--strict)\n")
    assert not (tmp_path / "s").exists()


def test_summary_and_table_count_node_failures_as_summary_json_does(tmp_path):
    """Failures of idle nodes hit no job: "failures" (jobs hit) stays 0, node_failures
    counts them, and both printed summaries say the same as summary.json."""
    trace = _pwa_trace(tmp_path / "idle.swf", "; MaxNodes: 64\n", [1, 1, 1])
    args = ("simulate", "--trace", str(trace), "--mtbf", "0.01", "--seed", "3")
    brief = schedd(*args, "--out", str(tmp_path / "o"))
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["node_failures"] == summary["engine"]["failures"] > 0
    assert (f"failures          {summary['node_failures']:,} node failures, "
            f"{summary['failures']:,} job interruptions by them") in brief.stdout
    # Lost node-hours are their own figure, named for what they count (issue 34: under
    # "failures" a hybrid run with no failure showed 202,432 node-hours "lost").
    lost = [ln for ln in brief.stdout.splitlines() if ln.startswith("lost work")]
    assert len(lost) == 1 and "node-hours computed, then thrown away (preempted" in lost[0]
    assert "lost" not in next(ln for ln in brief.stdout.splitlines()
                              if ln.startswith("failures"))
    full = schedd(*args, "--verbose", "--out", str(tmp_path / "v"))
    row = [ln.split() for ln in full.stdout.splitlines()
           if ln.split()[:1] == ["node_failures"]]
    assert row == [["node_failures", str(summary["node_failures"])]]


def test_summary_is_short_by_default_full_verbose_none_quiet_json_on_stdout(tmp_path):
    brief = schedd("simulate", "--out", str(tmp_path / "a")).stdout.splitlines()
    assert 10 <= len(brief) <= 16 and brief[-1].startswith("wrote ")
    keys = [ln.split("  ")[0] for ln in brief[:-1]]
    assert keys == ["run", "jobs", "makespan", "utilisation", "wait (s)", "response (s)",
                    "slowdown", "bounded slowdown", "preemptions", "failures", "lost work",
                    "final states"]
    verbose = schedd("simulate", "--verbose", "--out", str(tmp_path / "b")).stdout
    assert "per-job metrics" in verbose and len(verbose.splitlines()) > 60
    assert schedd("simulate", "--quiet", "--out", str(tmp_path / "c")).stdout == ""
    printed = json.loads(schedd("simulate", "--json", "--out", str(tmp_path / "d")).stdout)
    assert printed == json.loads((tmp_path / "d" / "summary.json").read_text())
    both = schedd("simulate", "--json", "--quiet", "--out", str(tmp_path / "e"), check=False)
    assert both.returncode == 2 and "not allowed with" in both.stderr


@pytest.mark.parametrize("out", ["/proc/x", "/proc/version/y"])
def test_unwritable_output_directory_is_one_line(out):
    proc = schedd("simulate", "--out", out, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"schedd: error: cannot write to the output directory {out}")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_workload_commands_take_input_and_o_old_spelling_warns(tmp_path, shared_traces):
    kth = str(shared_traces / "KTH-SP2-1996-2.swf")
    new = schedd("workload", "accuracy", kth, "--alpha", "0", "-o", str(tmp_path / "a.swf"))
    assert "warning" not in new.stderr
    old = schedd("workload", "accuracy", "--trace", kth, "--alpha", "0", "--out",
                 str(tmp_path / "b.swf"))
    assert old.stderr == ("schedd: warning: `workload accuracy --trace FILE` is deprecated; "
                          "write `schedd workload accuracy FILE --alpha A -o OUTPUT` (as the "
                          "other workload commands)\n")
    assert (tmp_path / "a.swf").read_bytes() == (tmp_path / "b.swf").read_bytes()
    lublin = schedd("workload", "lublin", "--jobs", "20", "-o", str(tmp_path / "l.cwf"))
    assert lublin.returncode == 0 and (tmp_path / "l.cwf").exists()
    unwritable = schedd("workload", "accuracy", kth, "--alpha", "0", "-o", "/proc/x/y.swf",
                        check=False)
    assert unwritable.returncode == 2
    assert unwritable.stderr == ("schedd: error: cannot write /proc/x/y.swf (No such file or "
                                 "directory)\n")


@pytest.mark.parametrize("args, hint", [
    (["simulat"], "invalid choice: 'simulat'"),
    (["simulate", "--polcy", "easy"], "(did you mean '--policy' for '--polcy'?)"),
    (["simulate", "--policy", "esay"], "unknown policy 'esay' (did you mean 'easy'?)"),
    (["simulate", "--policy", "plan-sa", "--opt", "metrc=wait2"],
     "policy plan-sa has no option 'metrc' (did you mean 'metric'?)"),
    (["workload", "acuracy"], "(did you mean 'accuracy'?)"),
])
def test_misspelt_names_get_did_you_mean(tmp_path, args, hint):
    proc = schedd(*args, "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2 and hint in proc.stderr and "Traceback" not in proc.stderr
    if args == ["simulat"]:
        assert "(did you mean 'simulate'?)" in proc.stderr


def test_durations_in_every_form_reach_the_engine(tmp_path):
    proc = schedd("simulate", "--ckpt", "sys", "--ckpt-interval", "1h30m", "--warning",
                  "0:02:30", "--mtbf", "90m", "--mttr", "2", "--quiet",
                  "--out", str(tmp_path / "o"))
    assert proc.stdout == ""
    eo = json.loads((tmp_path / "o" / "summary.json").read_text())["run"]["engine_options"]
    assert eo["checkpoint"]["sys_interval"] == 5400 and eo["warning_s"] == 150
    assert eo["mtbf_s"] == 5400 and eo["mttr_s"] == 7200
    serve = schedd("serve", "--budget", "1m", "--tick", "0:00:02", "--check-config")
    assert '"budget": 60.0' in serve.stdout and '"tick": 2.0' in serve.stdout
