"""Fuzz `schedd serve --config FILE --check-config`: any TOML file, with the real option
names and junk ones, extreme numbers (nan, inf, 1e308, -0), odd strings and wrong types,
is either accepted or refused with one error line and exit status 2 — never a traceback.
A file that is not TOML at all is refused the same way.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedd.cli import main

# Every serve option but those naming files to read or plugins to import.
OPTIONS = ["listen", "cluster", "name", "policy", "opt", "seed", "budget", "fallback", "clock",
           "speedup", "start-time", "tick", "metrics-port", "metrics-host", "mqtt", "agents",
           "checkpoint-timeout", "log-format", "log-level", "validate", "ckpt",
           "ckpt-interval", "app-overhead", "ckpt-cost", "ckpt-seconds", "no-restart-read",
           "mtbf", "daly-mtbf", "mttr", "no-requeue-on-failure", "warning", "ecc-max"]
NUMBERS = [0, 1, -1, 2**63 - 1, 2**63, -(2**63), 10**30, 0.0, -0.0, 5e-324, 1e308, -1e308,
           math.inf, -math.inf, math.nan, 0.5, 3600, 65536]
STRINGS = ["", "nodes:0", "nodes:-5", "nodes:99999999999", "mira", "bgq:97", "easy", "nope",
           "k=v", "=", "²", "127.0.0.1:0", "host:99999", ":", "lockstep", "realtime",
           "accelerated", "none", "sys", "daly", "\u0000", "🎉" * 30, "a" * 3000]


def toml_value() -> st.SearchStrategy:
    scalar = st.one_of(st.sampled_from(NUMBERS), st.integers(-(2**63), 2**63 - 1),
                       st.floats(), st.sampled_from(STRINGS), st.text(max_size=40),
                       st.booleans())
    return st.one_of(scalar, st.lists(scalar, max_size=3))


def toml_text(value: object) -> str:
    """A TOML literal for value (TOML spells nan and inf; strings as basic strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_text(v) for v in value) + "]"
    escaped = "".join(c if c.isprintable() and c not in '"\\' else f"\\u{ord(c):04x}"
                      for c in str(value))
    return f'"{escaped}"'


@st.composite
def configs(draw) -> str:
    keys = draw(st.lists(st.one_of(st.sampled_from(OPTIONS), st.sampled_from(
        ["bogus", "metrics_port", "start_time", "config"])), max_size=6, unique=True))
    lines = [f'"{key}" = {toml_text(draw(toml_value()))}' for key in keys]
    if draw(st.integers(0, 9)) == 0:
        lines.append(draw(st.sampled_from(["[serve", "x = ", "= 1", "a = [1, 'b'", "\x00"])))
    if draw(st.booleans()):
        lines.insert(0, "[serve]")
    return "\n".join(lines) + "\n"


def run(text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "schedd.toml"
        path.write_text(text)
        try:
            rc = main(["serve", "--config", str(path), "--check-config",
                       "--log-format", "json"])
        except SystemExit as stop:  # argparse refusing an option: status 2
            rc = stop.code if isinstance(stop.code, int) else 1
    return rc, capsys.readouterr().err


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=configs())
def test_any_config_is_accepted_or_one_error_line(text, capsys):
    rc, err = run(text, capsys)
    assert "Traceback" not in err, f"{text!r}\n{err}"
    if rc == 0:
        return
    assert rc == 2, f"{text!r}: {rc}\n{err}"
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1, f"{text!r}\n{err}"


@pytest.mark.parametrize(("text", "words"), [
    ("start-time = 1e308\n", ["--start-time", "1e+10"]),
    ("speedup = inf\n", ["--speedup"]),
    ("seed = -1\n", ["--seed"]),
    ("tick = nan\n", ["--tick"]),
    ("ckpt-interval = 5e-324\n", ["--ckpt-interval", "[1, 1e+09]"]),
    ("metrics-port = 70000\n", ["--metrics-port", "65535"]),
    (f'listen = "{"a" * 3000}"\n', ["--listen", "HOST:PORT", "'aaaa"]),
])
def test_config_numbers_use_the_limits_table(text, words, capsys):
    rc, err = run(text, capsys)
    assert rc == 2, err
    line = next(line for line in err.splitlines() if "error:" in line)
    for word in words:
        assert word in line, line
    assert len(line) < 200, line  # what it refuses is echoed cut short
