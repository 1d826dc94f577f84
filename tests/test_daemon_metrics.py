"""The daemon's Prometheus metrics read right (docs/metrics.md, "Daemon metrics").

Names and units, series present at 0 from the start, buckets that fit their quantities,
an exposition `promtool check metrics` accepts, and the shipped Grafana dashboard
evaluated by a real Prometheus scraping a real daemon every second.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from daemon_proc import DaemonProc, free_port
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from schedd.daemon.metrics import (
    ALIASES,
    SLOWDOWN_BUCKETS,
    WAIT_BUCKETS,
    DaemonMetrics,
    StateSnapshot,
)
from schedd.v1 import scheduler_pb2 as pb

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "deploy" / "grafana" / "dashboards" / "schedd.json"
PLUGIN = str(ROOT / "tests" / "plugins" / "preempting.py")
OP = (("authorization", "Bearer op-token"),)


def scrape(d: DaemonProc) -> str:
    return urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/metrics",
                                  timeout=5).read().decode()


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(text: str, name: str, **labels: str) -> float:
    return samples(text)[(name, tuple(sorted(labels.items())))]


def workload(s: Any, metadata: Any = None) -> None:
    """Jobs that run at once (bounded slowdown 1), jobs that wait, a real-time job that
    makes a batch job checkpoint (rt-jit-toy), a notice, refused requests."""
    for i in range(1, 7):
        s.SubmitJob(pb.SubmitJobRequest(job_id=i, nodes=1, walltime=200, runtime=100),
                    metadata=metadata)
    s.SubmitJob(pb.SubmitJobRequest(job_id=10, nodes=8, walltime=2000, runtime=1000),
                metadata=metadata)
    s.AdvanceClock(pb.AdvanceClockRequest(to=300), metadata=metadata)
    s.SubmitJob(pb.SubmitJobRequest(job_id=11, nodes=8, walltime=100, runtime=50,
                                    job_class=pb.JOB_CLASS_REALTIME), metadata=metadata)
    s.AdvanceNotice(pb.AdvanceNoticeRequest(job_id=20, expected_arrival=5000, nodes=2,
                                            walltime=100), metadata=metadata)
    with pytest.raises(grpc.RpcError):
        s.GetJob(pb.GetJobRequest(job_id=999), metadata=metadata)
    s.AdvanceClock(pb.AdvanceClockRequest(until_idle=True), metadata=metadata)


# --------------------------------------------------------------------------- units

def test_buckets_fit_their_quantities() -> None:
    # Bounded slowdown >= 1: the jobs at exactly 1 fill (floor, 1], an empty bucket below.
    assert SLOWDOWN_BUCKETS[0] < 1 == SLOWDOWN_BUCKETS[1] < SLOWDOWN_BUCKETS[2]
    assert SLOWDOWN_BUCKETS[0] >= 0.999999
    # Waits: 0 (started at once) up to a week, in virtual seconds.
    assert WAIT_BUCKETS[0] == 0 and 604800 in WAIT_BUCKETS and math.isinf(WAIT_BUCKETS[-1])
    m = DaemonMetrics()
    for bsld in (1.0, 1.0, 1.0, 2.5):
        m.bounded_slowdown.labels("batch").observe(bsld)
    text = generate_latest(m.registry).decode()
    floor = f"{SLOWDOWN_BUCKETS[0]}"
    assert value(text, "schedd_bounded_slowdown_bucket", **{"class": "batch", "le": floor}) == 0
    assert value(text, "schedd_bounded_slowdown_bucket", **{"class": "batch", "le": "1.0"}) == 3
    # Prometheus' histogram_quantile for p50: rank 2 of 4 falls in (floor, 1], 2 of its 3
    # observations: floor + (1 - floor) * 2/3, which reads 1.0000 (it read 0.67 when le=1
    # was the lowest bucket, interpolated from 0).
    p50 = SLOWDOWN_BUCKETS[0] + (1 - SLOWDOWN_BUCKETS[0]) * 2 / 3
    assert round(p50, 4) == 1.0


def test_renamed_series_keep_their_old_names_with_the_same_values() -> None:
    snap = StateSnapshot(utilisation=0.25, virtual_time=7200.0, engine_time=6000.0,
                         clock_lag=1200.0, oldest_wait={"batch": 30.0})
    m = DaemonMetrics(snapshot=lambda: snap, speedup=60.0)
    m.wait.labels("batch").observe(45.0)
    text = generate_latest(m.registry).decode()
    got = {k: v for k, v in samples(text).items()
           if not k[0].endswith("_created")}  # creation times differ by microseconds
    for old, new in ALIASES.items():
        new_rows = {(n.replace(new, old, 1), labels): v for (n, labels), v in got.items()
                    if n == new or n.startswith(new + "_")}
        old_rows = {k: v for k, v in got.items() if k[0] == old or k[0].startswith(old + "_")}
        assert new_rows and new_rows == old_rows, old
        assert f"Deprecated alias of {new}." in text
    assert value(text, "schedd_utilization_ratio") == 0.25
    assert value(text, "schedd_wait_virtual_seconds_count", **{"class": "batch"}) == 1
    # Lag: 1200 virtual seconds at 60x are 20 wall seconds.
    assert value(text, "schedd_clock_lag_virtual_seconds") == 1200.0
    assert value(text, "schedd_clock_lag_seconds") == 20.0
    lockstep = DaemonMetrics(snapshot=lambda: snap, speedup=0.0)
    assert value(generate_latest(lockstep.registry).decode(), "schedd_clock_lag_seconds") == 0


def test_labelled_series_exist_at_zero_from_the_start(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("op-token operator root\n")
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:8", "--policy", "easy",
                    "--fallback", "fcfs", metrics=True) as d:
        text = scrape(d)
    zero = [("schedd_budget_overruns_total", {"policy": "easy"}),
            ("schedd_budget_overruns_total", {"policy": "fcfs"}),
            ("schedd_policy_pass_seconds_count", {"policy": "fcfs"}),
            ("schedd_preemptions_total", {"class": "batch", "cause": "preempt"}),
            ("schedd_preemptions_total", {"class": "malleable", "cause": "preempt:warning"}),
            ("schedd_checkpoints_total", {"kind": "checkpoint"}),
            ("schedd_eccs_total", {"kind": "EP", "outcome": "rejected"}),
            ("schedd_notices_total", {"source": "mqtt"}),
            ("schedd_completions_total", {"class": "realtime", "state": "killed"}),
            ("schedd_wait_virtual_seconds_count", {"class": "ondemand"}),
            ("schedd_bounded_slowdown_count", {"class": "dedicated"}),
            ("schedd_rpc_requests_total", {"method": "SubmitJob", "code": "PERMISSION_DENIED"}),
            ("schedd_mqtt_published_total", {"kind": "rejection"}),
            ("schedd_mqtt_rejected_total", {"reason": "permission"}),
            ("schedd_journal_write_errors_total", {}),
            ("schedd_engine_failures_total", {})]
    for name, labels in zero:
        assert value(text, name, **labels) == 0, (name, labels)


def test_exposition_is_clean_for_promtool() -> None:
    promtool = shutil.which("promtool")
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:8", "--plugin", PLUGIN,
                    "--policy", "rt-jit-toy", metrics=True) as d:
        workload(d.stub())
        text = scrape(d)
    families = {f.name for f in text_string_to_metric_families(text)}
    assert {"schedd_utilization_ratio", "schedd_wait_virtual_seconds"} <= families
    if promtool is None:
        pytest.skip("promtool is not installed (Debian package prometheus; .ci/run "
                    "installs it): the exposition was only parsed")
    check = subprocess.run([promtool, "check", "metrics"], input=text, text=True,
                           capture_output=True, timeout=30)
    assert check.returncode == 0 and not (check.stdout + check.stderr).strip(), (
        check.stdout + check.stderr)


# --------------------------------------------------------------------------- a real Prometheus

class Prometheus:
    """`prometheus` scraping one target every second, on a free port, in a temp dir."""

    def __init__(self, binary: str, target: str, workdir: Path):
        self.port = free_port()
        config = workdir / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: schedd\n    scrape_timeout: 900ms\n"
            f"    static_configs:\n      - targets: ['{target}']\n")
        self.log = (workdir / "prometheus.log").open("w")
        self.proc = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={workdir / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def api(self, path: str, **params: str) -> Any:
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as reply:
            body = json.loads(reply.read())
        assert body["status"] == "success", body
        return body["data"]

    def wait_scraped(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            assert self.proc.poll() is None, "prometheus exited"
            try:
                if self.api("query", query='up{job="schedd"}')["result"]:
                    return
            except OSError:
                pass
            assert time.monotonic() < deadline, "prometheus never scraped the daemon"
            time.sleep(0.2)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture
def prometheus_binary() -> str:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("prometheus is not installed (Debian package prometheus; .ci/run "
                    "installs it): the dashboard cannot be checked against a real scrape")
    return binary


def dashboard_queries() -> list[tuple[str, str]]:
    board = json.loads(DASHBOARD.read_text())
    found = []

    def walk(panels: list[dict[str, Any]]) -> None:
        for panel in panels:
            walk(panel.get("panels", []))
            for target in panel.get("targets", []):
                found.append((panel["title"], target["expr"]))

    walk(board["panels"])
    return found


def grafana_vars(expr: str) -> str:
    """The dashboard's variables as Grafana would fill them for a 1 s scrape."""
    return (expr.replace("$instance", ".*").replace("$__rate_interval", "5s")
            .replace("$window", "1m"))


@pytest.fixture
def scraped_daemon(prometheus_binary: str) -> Iterator[tuple[DaemonProc, Prometheus]]:
    with tempfile.TemporaryDirectory(prefix="schedd-prom-") as tmp, \
            DaemonProc("--clock", "lockstep", "--cluster", "nodes:8", "--plugin", PLUGIN,
                       "--policy", "rt-jit-toy", metrics=True) as d:
        prom = Prometheus(prometheus_binary, f"127.0.0.1:{d.metrics_port}", Path(tmp))
        try:
            prom.wait_scraped()
            time.sleep(1.5)  # a first sample of every series before anything happens
            workload(d.stub())
            time.sleep(3.0)  # scraped after it
            yield d, prom
        finally:
            prom.stop()


def test_every_dashboard_expression_returns_data(scraped_daemon: tuple[DaemonProc,
                                                                       Prometheus]) -> None:
    _, prom = scraped_daemon
    queries = dashboard_queries()
    assert len(queries) >= 37
    empty = []
    for title, expr in queries:
        result = prom.api("query", query=grafana_vars(expr))["result"]
        if not result:
            empty.append(f"{title}: {expr}")
    assert not empty, "no data:\n" + "\n".join(empty)
    # The daemon variable's query finds the daemon.
    instances = prom.api("label/instance/values",
                         **{"match[]": "schedd_utilization_ratio"})
    assert len(instances) == 1

    def one(expr: str, **labels: str) -> float:
        rows = [r for r in prom.api("query", query=grafana_vars(expr))["result"]
                if all(r["metric"].get(k) == v for k, v in labels.items())]
        assert len(rows) == 1, (expr, rows)
        return float(rows[0]["value"][1])

    quantile = ('histogram_quantile({q}, sum by (le, class) (rate('
                'schedd_bounded_slowdown_bucket{{instance=~"$instance"}}[$window])))')
    # Six of the eight batch jobs ran at once: their bounded slowdown is 1, and p50
    # reads 1 (0.58 with le=1 the lowest bucket); p95 is the waiting jobs'.
    assert 0.9999 <= one(quantile.format(q=0.5), **{"class": "batch"}) <= 1.0
    assert one(quantile.format(q=0.95), **{"class": "batch"}) > 1.0
    wait = ('histogram_quantile(0.5, sum by (le, class) (rate('
            'schedd_wait_virtual_seconds_bucket{instance=~"$instance"}[$window])))')
    assert one(wait, **{"class": "batch"}) == 0.0  # most started at once
    assert one('sum(schedd_preemptions_total)') >= 1
    assert one('sum(schedd_notices_total{source="rpc"})') == 1
    assert one('sum(schedd_rpc_requests_total{method="GetJob", code="NOT_FOUND"})') == 1
    assert one('max(schedd_clock_lag_seconds)') == 0.0  # lockstep: in wall seconds, 0
    assert re.match(r"^\d", str(one('schedd_clock_time_virtual_seconds')))


def test_journal_write_errors_are_counted(tmp_path: Path) -> None:
    """A full disk: the refused request is counted in schedd_journal_write_errors_total
    (the alert ScheddJournalWriteErrors reads it)."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=320k", "tmpfs", str(mnt)],
                      capture_output=True).returncode != 0:
        pytest.skip("needs permission to mount a small tmpfs (a full disk)")
    try:
        with DaemonProc("--clock", "lockstep", "--cluster", "nodes:8", "--state-db",
                        str(mnt / "j.sqlite"), metrics=True) as d:
            s = d.stub()
            assert value(scrape(d), "schedd_journal_write_errors_total") == 0
            refused = None
            for i in range(1, 3000):
                try:
                    s.SubmitJob(pb.SubmitJobRequest(
                        job_id=i, nodes=1, walltime=200, runtime=100,
                        request_id=f"{i:05d}-" + "x" * 100), timeout=10)
                except grpc.RpcError as err:
                    refused = err
                    break
            assert refused is not None and refused.code() == grpc.StatusCode.UNAVAILABLE
            text = scrape(d)
            assert value(text, "schedd_journal_write_errors_total") >= 1
            assert value(text, "schedd_rpc_requests_total", method="SubmitJob",
                         code="UNAVAILABLE") == 1
            d.kill()
    finally:
        for _ in range(20):
            if subprocess.run(["umount", str(mnt)], capture_output=True).returncode == 0:
                break
            time.sleep(0.2)
