"""`schedd serve` options and its TOML config file.

A config file holds the same options as the command line, under their long names
(`metrics-port = 9464`, `opt = ["k=v"]`, `tls = false`...). It is turned into command-line
words placed before the real ones, so the same argparse types validate both and the
command line wins.
"""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path
from typing import Any

from .. import limits
from ..durations import DurationError, parse_duration
from ..options import add_policy_arguments

DEFAULT_LISTEN = "127.0.0.1:50051"


class ConfigError(ValueError):
    """A config file that cannot be used; the message is one sentence."""


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {limits.shown(text)}")
    return host, int(port)


def _client_id(text: str) -> str:
    """An MQTT client id: not empty (a persistent session needs one), no NUL, at most
    limits.MAX_NAME characters."""
    if not text or "\0" in text or len(text) > limits.MAX_NAME:
        raise argparse.ArgumentTypeError(
            f"expected 1 to {limits.MAX_NAME} characters without NUL, got "
            f"{limits.shown(text)}")
    return text


def _limited(name: str, kind: type = float) -> Any:
    """An argparse type: a number within the shared limits of `name` (schedd/limits.py)."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            if kind is not float or limits.LIMITS[name].unit != "s":
                raise argparse.ArgumentTypeError(
                f"expected a number, got {limits.shown(text)}") from None
            try:  # seconds also as H:MM:SS or 1h30m
                value = parse_duration(text)
            except DurationError as err:
                raise argparse.ArgumentTypeError(str(err)) from None
        why = limits.problem(name, value, "the value")
        if why is not None:
            raise argparse.ArgumentTypeError(why)
        return value

    return parse


# Engine options (schedd/options.py, shared with `simulate`) -> their row in the table.
ENGINE_LIMITS = {"ckpt_interval": "ckpt_interval_option", "ckpt_seconds": "ckpt_seconds",
                 "warning": "warning", "mtbf": "mtbf", "daly_mtbf": "daly_mtbf",
                 "mttr": "mttr", "app_overhead": "app_overhead", "ecc_max": "ecc_max"}


def check_engine_limits(args: argparse.Namespace) -> None:
    """The engine options within the shared limits, else ConfigError (one sentence)."""
    for attr, name in ENGINE_LIMITS.items():
        value = getattr(args, attr, None)
        if value is None:
            continue
        why = limits.problem(name, value, "--" + attr.replace("_", "-"))
        if why is not None:
            raise ConfigError(why)


def add_serve_parser(sub: Any) -> argparse.ArgumentParser:
    from ..core.cluster_spec import CLUSTER_FORMS
    from ..options import add_engine_arguments

    p = sub.add_parser(
        "serve",
        help="run the live daemon (gRPC API, MQTT events, Prometheus metrics)",
        description="Run the scheduler as a daemon on a virtual cluster: jobs arrive over "
        "gRPC (and notices over MQTT), the policy runs at each scheduling iteration under a "
        "wall-clock budget, events go out over MQTT and WatchEvents, metrics on /metrics. "
        "docs/daemon.md has the details.",
    )
    p.add_argument("--config", metavar="FILE",
                   help="TOML file with any of these options under their long names; the "
                   "command line wins")
    p.add_argument("--listen", type=_host_port, default=_host_port(DEFAULT_LISTEN),
                   metavar="HOST:PORT", help=f"gRPC address (default {DEFAULT_LISTEN}; port "
                   "0 picks a free one, printed at start)")
    p.add_argument("--cluster", default="nodes:256", help=f"machine: {CLUSTER_FORMS} "
                   "(default nodes:256)")
    p.add_argument("--name", default=None,
                   help="cluster name in MQTT topics and metrics (default: from --cluster)")
    add_policy_arguments(p, "; replaces --cluster")
    p.add_argument("--seed", type=_limited("seed", int), default=0,
                   help="seed of the engine's RNG")
    p.add_argument("--budget", type=_limited("budget"), default=1.0, metavar="S",
                   help="wall-clock budget of one policy pass; an overrun is cut off and the "
                   "fallback policy decides (default 1)")
    p.add_argument("--fallback", default="easy", metavar="POLICY",
                   help="policy used when the budget is overrun (default easy)")
    p.add_argument("--clock", default="realtime",
                   choices=["realtime", "accelerated", "lockstep"],
                   help="realtime: virtual = wall time; accelerated: virtual = K x wall; "
                   "lockstep: virtual time moves only by AdvanceClock (default realtime)")
    p.add_argument("--speedup", type=_limited("speedup"), default=1.0, metavar="K",
                   help="speed-up factor of --clock accelerated (default 1)")
    p.add_argument("--start-time", type=_limited("start_time"), default=0.0, metavar="S",
                   help="virtual time at start (default 0; ignored when recovering)")
    p.add_argument("--tick", type=_limited("tick"), default=0.5, metavar="S",
                   help="longest wall time between iterations when nothing happens "
                   "(default 0.5)")
    p.add_argument("--state-db", default=":memory:", metavar="PATH",
                   help="SQLite journal; the daemon recovers from it after a crash "
                   "(default :memory:, nothing survives)")
    p.add_argument("--metrics-port", type=_limited("port", int), default=9464, metavar="N",
                   help="Prometheus /metrics port (default 9464; 0 = off)")
    p.add_argument("--metrics-host", default="127.0.0.1", help="metrics address")
    p.add_argument("--mqtt", type=_host_port, default=None, metavar="HOST:PORT",
                   help="MQTT broker for events, job control and notices (default: none)")
    p.add_argument("--mqtt-user", metavar="NAME",
                   help="broker user name of the daemon (Mosquitto password_file); "
                   "deploy/mosquitto.acl lets user 'schedd' publish events")
    p.add_argument("--mqtt-password-file", metavar="FILE",
                   help="file whose first line is the --mqtt-user password")
    p.add_argument("--mqtt-client-id", type=_client_id, metavar="ID",
                   help="MQTT client id, under which the broker keeps the daemon's session "
                   "(notices published while it is down); one per daemon on a broker "
                   "(default schedd-<name>; a broker that takes the login as the id, as "
                   "deploy/mosquitto.conf does, ignores it)")
    p.add_argument("--agents", default="virtual", choices=["virtual", "external"],
                   help="who answers JIT checkpoint requests: the in-process virtual agent "
                   "after the modelled time (default), or external agents via CheckpointDone")
    p.add_argument("--checkpoint-timeout", type=_limited("checkpoint_timeout"), default=600.0,
                   metavar="S",
                   help="external agents: virtual seconds after the modelled checkpoint end "
                   "before a silent job is killed and requeued (default 600; 0 = never)")
    p.add_argument("--tls-cert", metavar="FILE", help="PEM certificate (enables TLS)")
    p.add_argument("--tls-key", metavar="FILE", help="PEM private key of --tls-cert")
    p.add_argument("--tokens", metavar="FILE",
                   help="bearer tokens, one 'TOKEN ROLE USER' line each (ROLE user or "
                   "operator); without it every caller is an operator")
    p.add_argument("--log-format", default="auto", choices=["auto", "json", "console"],
                   help="auto: console on a terminal, JSON lines otherwise")
    p.add_argument("--log-level", default="info",
                   choices=["debug", "info", "warning", "error"])
    p.add_argument("--validate", action="store_true",
                   help="check the engine's invariants after every event (slow; for tests): "
                   "a broken one is an engine failure")
    p.add_argument("--check-config", action="store_true",
                   help="validate the options (and config file), print them, exit")
    add_engine_arguments(p)
    return p


def expand_config(argv: list[str]) -> list[str]:
    """`serve --config FILE ...` -> `serve <words from FILE> ...`."""
    if not argv or argv[0] != "serve":
        return argv
    path = None
    for i, word in enumerate(argv):
        if word == "--config" and i + 1 < len(argv):
            path = argv[i + 1]
        elif word.startswith("--config="):
            path = word.partition("=")[2]
    if path is None:
        return argv
    return [argv[0], *config_words(path), *argv[1:]]


def config_words(path: str | Path) -> list[str]:
    try:
        data = tomllib.loads(Path(path).read_text())
    except OSError as err:
        raise ConfigError(f"cannot read config file {path}: {err.strerror}") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"config file {path} is not valid TOML: {err}") from None
    if isinstance(data.get("serve"), dict):  # either top level or a [serve] table
        data = data["serve"]
    words: list[str] = []
    for key, value in data.items():
        if key == "config":
            raise ConfigError(f"config file {path}: 'config' cannot name another file")
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            if value:
                words.append(flag)
        elif isinstance(value, list):
            for item in value:
                words += [flag, str(item)]
        elif isinstance(value, int | float | str):
            words += [flag, str(value)]
        else:
            raise ConfigError(f"config file {path}: {key} must be a string, number, boolean "
                              "or list")
    return words
