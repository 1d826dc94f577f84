"""README.md runs as written: its daemon and simulate command blocks are extracted and run
by bash in a scratch copy of the project's layout (.venv and deploy/ linked, out/ fresh),
with the real traces they name cut to their first jobs (header kept) so that each block
takes seconds. The only substitutions: the daemon listens on a free port (the clients
find it through $SCHEDD_SERVER, as the README's schedctl section says) and MQTT goes to
the test broker. A change that breaks a README command breaks this test."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from daemon_proc import free_port

ROOT = Path(__file__).resolve().parents[1]
JOBS_KEPT = 150  # job lines of each trace the blocks use


def readme_block(section: str) -> str:
    """The first ```sh block under the `## section` heading of README.md."""
    text = (ROOT / "README.md").read_text()
    part = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    m = re.search(r"```sh\n(.*?)```", part, re.S)
    assert m, f"no sh block under ## {section}"
    return m.group(1)


def layout(tmp: Path, traces: Path, block: str) -> Path:
    """tmp/project (.venv, deploy linked) beside tmp/shared/traces with the traces the
    block names, each cut to its header and first JOBS_KEPT job lines."""
    project = tmp / "project"
    project.mkdir()
    for name in (".venv", "deploy"):
        (project / name).symlink_to(ROOT / name)
    (tmp / "shared" / "traces").mkdir(parents=True)
    for name in sorted(set(re.findall(r"\.\./shared/traces/([\w.\-]+)", block))):
        kept, jobs = [], 0
        for line in (traces / name).read_text().splitlines(keepends=True):
            if not line.startswith(";"):
                jobs += 1
                if jobs > JOBS_KEPT:
                    break
            kept.append(line)
        (tmp / "shared" / "traces" / name).write_text("".join(kept))
    return project


def run_block(block: str, project: Path, env: dict[str, str], timeout: float
              ) -> subprocess.CompletedProcess[str]:
    script = "set -euo pipefail\n" + block
    return subprocess.run(["bash", "-c", script], cwd=project, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **env})


def test_readme_daemon_block_runs_as_written(tmp_path, shared_traces, mqtt_broker):
    block = readme_block("The daemon")
    assert "--tokens deploy/tokens.example" in block and "SCHEDD_TOKEN=" in block
    port = free_port()
    host, mqtt_port = mqtt_broker
    runnable = block.replace("schedd serve ", f"schedd serve --listen 127.0.0.1:{port} ", 1)
    runnable = runnable.replace("--mqtt 127.0.0.1:1883", f"--mqtt {host}:{mqtt_port}")
    project = layout(tmp_path, shared_traces, block)
    proc = run_block(runnable, project, {"SCHEDD_SERVER": f"127.0.0.1:{port}"}, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert re.search(r"submitted job 1 at t=", out), out
    assert "replaying 150 jobs of theta_2023.swf" in out
    assert "wrote out/theta-live/jobs.swf, jobs.csv, summary.json" in out
    assert (project / "out" / "journal.sqlite").exists()
    assert "Traceback" not in proc.stderr


def test_readme_simulate_block_runs_as_written(tmp_path, shared_traces):
    block = readme_block("Simulate")
    project = layout(tmp_path, shared_traces, block)
    proc = run_block(block, project, {}, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    commands = block.replace("\\\n", " ").splitlines()
    for command in commands:
        m = re.search(r"(?:--out|-o) (out/[\w.\-]+)", command)
        if m:
            assert (project / m.group(1)).exists(), command
        if "schedd simulate" in command:
            assert m and (project / m.group(1) / "summary.json").exists(), command


def test_readme_figures_block_runs_as_written(tmp_path, shared_traces):
    block = readme_block("Figures and sweeps")
    project = layout(tmp_path, shared_traces, block)
    proc = run_block(block, project, {}, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert (project / "out" / "report" / "index.html").exists()
    assert (project / "out" / "report" / "gantt_1.png").exists()
    assert "12 cells, 12 ok, 0 failed" in proc.stdout
    assert (project / "out" / "sweep" / "results.parquet").exists()
    assert any((project / "out" / "sweep-report").glob("sweep_*.png"))


@pytest.mark.parametrize("section", ["The daemon", "Simulate", "Figures and sweeps"])
def test_readme_blocks_use_only_commands_that_exist(section):
    """Every command word of the blocks is an installed entry point or a shell builtin."""
    block = readme_block(section)
    words = set(re.findall(r"\.venv/bin/([\w\-]+)", block))
    assert words <= {"schedd", "schedctl", "schedd-replay", "schedd-ckpt-agent"}
    for word in words:
        assert (ROOT / ".venv" / "bin" / word).exists(), word
