"""deploy/: every file parses, the config goes through the real `schedd serve` parser, and
the dashboard only queries metrics the daemon exports."""

from __future__ import annotations

import configparser
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from schedd.cli import build_parser
from schedd.daemon.config import config_words
from schedd.daemon.metrics import ALIASES, DaemonMetrics, StateSnapshot

yaml = pytest.importorskip("yaml")

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
GRAFANA = DEPLOY / "grafana"
METRIC = re.compile(r"\bschedd_[A-Za-z0-9_]+")


def load_yaml(name: str) -> Any:
    return yaml.safe_load((DEPLOY / name).read_text())


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_yaml("docker-compose.yml")


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return json.loads((GRAFANA / "dashboards" / "schedd.json").read_text())


def all_panels(panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Panels, rows' nested panels included, rows themselves excluded."""
    out = []
    for panel in panels:
        if panel.get("type") == "row":
            out += all_panels(panel.get("panels", []))
        else:
            out.append(panel)
    return out


def exprs(dashboard: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in all_panels(dashboard["panels"]) for t in p["targets"]]


# --- docker-compose.yml ---------------------------------------------------------------

def test_compose_services(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert {"schedd", "mosquitto", "prometheus", "grafana"} <= set(services)
    schedd = services["schedd"]
    assert schedd["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}
    assert (DEPLOY.parent / schedd["build"]["dockerfile"]).is_file()
    assert "mosquitto" in schedd["depends_on"]
    ports = {str(p).split(":")[-1] for p in schedd["ports"]}
    assert {"50051", "9464"} <= ports
    mounts = {v.split(":")[1] for v in schedd["volumes"]}
    assert "/etc/schedd/schedd.toml" in mounts
    assert any(str(p).endswith("1883") for p in services["mosquitto"]["ports"])


def test_compose_images_pinned(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        if "image" not in service or "build" in service:
            continue
        image = service["image"]
        repo, sep, tag = image.rpartition(":")
        assert sep and repo and "/" not in tag, f"{name}: {image} has no tag"
        assert tag != "latest" and re.search(r"\d", tag), f"{name}: {image} is not pinned"


def test_compose_host_paths_exist(compose: dict[str, Any]) -> None:
    named = set(compose.get("volumes") or {})
    checked = 0
    for name, service in compose["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0] if isinstance(volume, str) else volume["source"]
            if source in named:
                continue
            assert source.startswith("."), f"{name}: unexpected mount {volume}"
            path = (DEPLOY / source).resolve()
            assert path.is_relative_to(DEPLOY), f"{name}: {source} is outside deploy/"
            assert path.exists(), f"{name}: {source} does not exist"
            checked += 1
    assert checked >= 5


def test_dockerfile() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim\b", text, re.M)
    assert "pip install --no-cache-dir -c constraints.txt ." in text
    assert 'ENTRYPOINT ["schedd", "serve", "--config", "/etc/schedd/schedd.toml"]' in text
    for line in re.findall(r"^COPY (?!--from)(.+)$", text, re.M):
        for source in line.split()[:-1]:  # build context = repository root
            assert (DEPLOY.parent / source).exists(), source


def conf_lines(name: str) -> list[list[str]]:
    return [line.split() for line in (DEPLOY / name).read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def test_mosquitto_conf(compose: dict[str, Any]) -> None:
    lines = conf_lines("mosquitto.conf")
    assert ["listener", "1883", "0.0.0.0"] in lines or ["listener", "1883"] in lines
    assert ["allow_anonymous", "false"] in lines
    assert not any(w[0] == "allow_anonymous" and w[1] != "false" for w in lines)
    settings = {w[0]: w[1] for w in lines if len(w) == 2}
    mounts = {v.split(":")[1]: v.split(":")[0] for v in
              compose["services"]["mosquitto"]["volumes"] if v.startswith("./")}
    for key, shipped in (("password_file", "mosquitto.passwd"), ("acl_file", "mosquitto.acl")):
        assert mounts[settings[key]] == f"./{shipped}", key  # the file deploy/ ships


def test_mosquitto_acl_rules() -> None:
    """Users publish only to their own command topics; only schedd publishes events.
    (tests/test_mqtt_access.py runs Mosquitto with these files.)"""
    rules, user = [], None
    for words in conf_lines("mosquitto.acl"):
        if words[0] == "user":
            user = words[1]
        else:
            rules.append((words[0] if words[0] == "pattern" else user, words[1], words[2]))
    writes = {(who, topic) for who, access, topic in rules if access in ("write", "readwrite")}
    assert writes == {("schedd", "schedd/+/events/+"), ("schedd", "schedd/+/jobs/+/control"),
                      ("schedd", "schedd/+/rejected/+"), ("schedd", "schedd/+/notices/rejected"),
                      ("pattern", "schedd/+/cmd/%u/+")}
    assert ("schedd", "read", "schedd/+/cmd/+/+") in rules


def test_mosquitto_passwords_match_the_tokens() -> None:
    users = {line.split(":")[0] for line in (DEPLOY / "mosquitto.passwd").read_text().splitlines()
             if line.strip() and not line.startswith("#")}
    token_users = {words[2] for words in conf_lines("tokens.example")}
    assert users == token_users | {"schedd"}
    assert all(line.split(":")[1].startswith("$7$")  # hashed (PBKDF2-SHA512), never plain
               for line in (DEPLOY / "mosquitto.passwd").read_text().splitlines()
               if line.strip() and not line.startswith("#"))


# --- Prometheus and Grafana provisioning ------------------------------------------------

def test_prometheus_scrapes_metrics_port() -> None:
    config = load_yaml("prometheus.yml")
    jobs = [job for job in config["scrape_configs"]
            if any(target.endswith(":9464")
                   for static in job.get("static_configs", [])
                   for target in static["targets"])]
    assert jobs, "no scrape job targets port 9464"
    assert jobs[0].get("scrape_interval", config["global"]["scrape_interval"]) == "5s"
    assert config["rule_files"] == ["alerts.yml"]


def test_alert_rules_cover_the_failures() -> None:
    rules = {r["alert"]: r["expr"] for g in load_yaml("alerts.yml")["groups"]
             for r in g["rules"]}
    wanted = {"ScheddDown": "up", "ScheddEngineFailing": "schedd_engine_failures_total",
              "ScheddClockLag": "schedd_clock_lag_seconds",
              "ScheddBudgetOverruns": "schedd_budget_overruns_total",
              "ScheddJournalWriteErrors": "schedd_journal_write_errors_total",
              "ScheddBrokerDisconnected": "schedd_mqtt_connected"}
    for alert, metric in wanted.items():
        assert re.search(rf"\b{metric}\b", rules[alert]), alert
    exported = DaemonMetrics(snapshot=StateSnapshot).names()
    used = {name for expr in rules.values() for name in METRIC.findall(expr)}
    assert used <= exported, sorted(used - exported)


def test_promtool_accepts_rules_and_config() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian package prometheus; .ci/run "
                    "installs it)")
    for args in (["check", "rules", "alerts.yml"], ["check", "config", "prometheus.yml"]):
        check = subprocess.run([promtool, *args], cwd=DEPLOY, capture_output=True,
                               text=True, timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr


def test_grafana_provisioning(compose: dict[str, Any], dashboard: dict[str, Any]) -> None:
    datasources = load_yaml("grafana/provisioning/datasources/prometheus.yml")["datasources"]
    (prometheus,) = [d for d in datasources if d["type"] == "prometheus"]
    assert prometheus["url"] == "http://prometheus:9090"
    providers = load_yaml("grafana/provisioning/dashboards/schedd.yml")["providers"]
    path = providers[0]["options"]["path"]
    mounts = dict(v.split(":")[:2] for v in compose["services"]["grafana"]["volumes"]
                  if v.startswith("."))
    assert mounts.get("./grafana/dashboards") == path
    assert mounts.get("./grafana/provisioning") == "/etc/grafana/provisioning"
    # Every panel and target uses the provisioned datasource.
    uids = {prometheus["uid"]}
    for panel in all_panels(dashboard["panels"]):
        assert panel["datasource"]["uid"] in uids, panel["title"]
        assert {t["datasource"]["uid"] for t in panel["targets"]} <= uids, panel["title"]


# --- the dashboard ----------------------------------------------------------------------

def test_dashboard_shape(dashboard: dict[str, Any]) -> None:
    assert dashboard["uid"] == "schedd"
    assert dashboard["schemaVersion"] >= 36
    panels = all_panels(dashboard["panels"])
    assert panels
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in panels:
        assert panel["type"] in {"timeseries", "stat"}, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["expr"].strip(), panel["title"]
            assert target["expr"].count("(") == target["expr"].count(")"), target["expr"]
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24


def test_dashboard_metrics_exist(dashboard: dict[str, Any]) -> None:
    exported = DaemonMetrics(snapshot=StateSnapshot).names()
    queries = exprs(dashboard) + [
        v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        for v in dashboard.get("templating", {}).get("list", []) if v["type"] == "query"]
    used = {name for q in queries for name in METRIC.findall(q)}
    assert used
    assert used <= exported, f"not exported by the daemon: {sorted(used - exported)}"
    deprecated = {name for name in used if re.sub(r"_(bucket|sum|count)$", "", name) in ALIASES}
    assert not deprecated, f"the dashboard uses deprecated names: {sorted(deprecated)}"


@pytest.mark.parametrize("topic, metric", [
    ("utilisation", "schedd_utilization_ratio"),
    ("nodes", "schedd_nodes"),
    ("queue by class", "schedd_queue_length"),
    ("jobs by state", "schedd_jobs"),
    ("waits", "schedd_wait_virtual_seconds_bucket"),
    ("slowdowns", "schedd_bounded_slowdown_bucket"),
    ("preemptions", "schedd_preemptions_total"),
    ("checkpoints", "schedd_checkpoints_total"),
    ("checkpoint timeouts", "schedd_checkpoint_timeouts_total"),
    ("iteration latency", "schedd_iteration_seconds_bucket"),
    ("policy pass latency", "schedd_policy_pass_seconds_bucket"),
    ("budget overruns", "schedd_budget_overruns_total"),
    ("clock lag", "schedd_clock_lag_seconds"),
    ("mqtt failures", "schedd_mqtt_publish_failures_total"),
    ("rpc", "schedd_rpc_requests_total"),
    ("journal", "schedd_journal_commit_seconds_bucket"),
    ("mqtt refusals", "schedd_mqtt_rejected_total"),
    ("engine failures", "schedd_engine_failures_total"),
])
def test_dashboard_covers(dashboard: dict[str, Any], topic: str, metric: str) -> None:
    used = {name for q in exprs(dashboard) for name in METRIC.findall(q)}
    assert metric in used, f"no panel on {topic}"


def test_dashboard_quantiles_by_class(dashboard: dict[str, Any]) -> None:
    for family in ("schedd_wait_virtual_seconds_bucket", "schedd_bounded_slowdown_bucket"):
        quantiles = {m.group(1) for q in exprs(dashboard) if family in q
                     for m in [re.search(r"histogram_quantile\((0\.\d+)", q)]
                     if m and re.search(r"by \(le, class\)", q)}
        assert {"0.5", "0.95"} <= quantiles, family


# --- systemd, config, tokens ------------------------------------------------------------

def test_systemd_unit() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.read_string((DEPLOY / "schedd.service").read_text())
    assert {"Unit", "Service", "Install"} <= set(unit.sections())
    service = unit["Service"]
    exec_start = service["ExecStart"].split()
    assert exec_start[0].endswith("/schedd") and exec_start[1] == "serve"
    assert exec_start[exec_start.index("--config") + 1] == "/etc/schedd/schedd.toml"
    assert service["Type"] == "simple"
    assert service["User"] == "schedd"
    assert service["Restart"] == "on-failure"
    assert service["StateDirectory"] == "schedd"
    assert service["NoNewPrivileges"] == "true"
    assert service["ProtectSystem"] == "strict"
    assert "/var/lib/schedd" in service["ReadWritePaths"].split()
    assert service["PrivateTmp"] == "true"
    assert unit["Install"]["WantedBy"]


def test_schedd_toml_parses() -> None:
    words = config_words(DEPLOY / "schedd.toml")
    args = build_parser().parse_args(["serve", *words])
    assert args.command == "serve"
    assert args.cluster == "mira"
    assert args.listen == ("0.0.0.0", 50051)
    assert args.metrics_host == "0.0.0.0" and args.metrics_port == 9464
    assert args.mqtt == ("mosquitto", 1883)
    assert args.mqtt_user == "schedd" and args.mqtt_password_file
    assert args.state_db.startswith("/var/lib/schedd/")
    assert args.log_format == "json"
    assert args.tokens


def test_config_paths_match_compose(compose: dict[str, Any]) -> None:
    args = build_parser().parse_args(["serve", *config_words(DEPLOY / "schedd.toml")])
    mounts = {v.split(":")[1] for v in compose["services"]["schedd"]["volumes"]}
    assert args.tokens in mounts
    assert args.mqtt_password_file in mounts
    assert str(Path(args.state_db).parent) in mounts


def test_tokens_example() -> None:
    roles = []
    for line in (DEPLOY / "tokens.example").read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split()
        assert len(fields) == 3, line
        assert fields[1] in {"user", "operator"}, line
        roles.append(fields[1])
    assert sorted(roles) == ["operator", "user", "user"]
