"""Real MQTT brokers for the tests (never a mock).

`mqtt_broker` (session): the broker on 127.0.0.1:1883 if one answers, else a Mosquitto
started on a free port, else an embedded amqtt broker in a subprocess.
`private_broker` (per test): a broker the test owns and can stop and start again on the
same port, for outage tests (Mosquitto, else amqtt).
`secured_broker` (per test): a private Mosquitto running deploy/mosquitto.conf, .passwd
and .acl as shipped (skipped where Mosquitto is not installed).

conftest.py imports the fixtures: `from mqtt_broker import mqtt_broker, ...`.
SCHEDD_TEST_MQTT=mosquitto|amqtt forces that kind of broker (the 1883 one is not used),
to check the fallbacks.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

DEFAULT = ("127.0.0.1", 1883)
START_TIMEOUT = 10.0
DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
# The demo logins of deploy/mosquitto.passwd (fake, public: see its header).
PASSWORDS = {name: f"EXAMPLE-mqtt-{name}-not-secret" for name in ("schedd", "admin",
                                                                    "alice", "bob")}

AMQTT_SCRIPT = '''\
"""An embedded amqtt broker on 127.0.0.1:PORT (argv[1]), for tests."""
import asyncio
import sys

from amqtt.broker import Broker


async def main(port: int) -> None:
    broker = Broker({
        "listeners": {"default": {"type": "tcp", "bind": f"127.0.0.1:{port}"}},
        "plugins": {"amqtt.plugins.authentication.AnonymousAuthPlugin":
                    {"allow_anonymous": True}},
    })
    await broker.start()
    await asyncio.Event().wait()


asyncio.run(main(int(sys.argv[1])))
'''


def accepts(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def mosquitto_binary() -> str | None:
    found = shutil.which("mosquitto")
    if found:
        return found
    return "/usr/sbin/mosquitto" if os.access("/usr/sbin/mosquitto", os.X_OK) else None


def amqtt_available() -> bool:
    try:
        import amqtt.broker  # noqa: F401
    except ImportError:
        return False
    return True


class BrokerProcess:
    """A broker subprocess on a fixed port that can be stopped and started again."""

    def __init__(self, kind: str, workdir: Path, port: int | None = None,
                 conf: Path | None = None):
        self.kind = kind  # "mosquitto" or "amqtt"
        self.persistent = kind == "mosquitto"  # sessions survive stop() and start()
        self.host = "127.0.0.1"
        self.port = port or free_port()
        self.workdir = workdir
        self.conf = conf  # Mosquitto: this configuration instead of an open broker
        self.log = workdir / f"{kind}.log"
        self._proc: subprocess.Popen[bytes] | None = None

    def _command(self) -> list[str]:
        if self.kind == "mosquitto" and self.conf is not None:
            return [str(mosquitto_binary()), "-c", str(self.conf)]
        if self.kind == "mosquitto":
            binary = mosquitto_binary()
            if binary is None:
                raise RuntimeError("mosquitto is not installed")
            conf = self.workdir / "mosquitto.conf"
            # Persistence keeps persistent sessions (clean_session=False) across stop()
            # and start(), so an outage test's subscriber misses nothing. `user root`:
            # when the tests run as root, do not drop privileges (the files are ours).
            conf.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\n"
                            f"persistence true\npersistence_location {self.workdir}/\n"
                            "user root\n")
            return [binary, "-c", str(conf)]
        script = self.workdir / "amqtt_broker.py"
        script.write_text(AMQTT_SCRIPT)
        return [sys.executable, str(script), str(self.port)]

    def start(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            return
        with self.log.open("ab") as out:
            self._proc = subprocess.Popen(self._command(), stdout=out, stderr=out,
                                          stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT
        while not accepts(self.host, self.port, timeout=0.2):
            if self._proc.poll() is not None:
                raise RuntimeError(f"{self.kind} exited with {self._proc.returncode}: "
                                   f"{self.log.read_text(errors='replace')[-2000:]}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{self.kind} did not listen on port {self.port} "
                                   f"within {START_TIMEOUT} s")
            time.sleep(0.05)

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None


def _start_any(workdir: Path) -> BrokerProcess | None:
    kinds = (["mosquitto"] if mosquitto_binary() else []) + (
        ["amqtt"] if amqtt_available() else [])
    forced = os.environ.get("SCHEDD_TEST_MQTT")
    if forced:
        kinds = [forced]
    errors = []
    for kind in kinds:
        broker = BrokerProcess(kind, workdir)
        try:
            broker.start()
        except (OSError, RuntimeError) as exc:
            errors.append(f"{kind}: {exc}")
            continue
        return broker
    if errors:
        pytest.skip("no MQTT broker could be started: " + "; ".join(errors))
    return None


_shared_kind = "none"


def shared_broker_kind() -> str:
    """What `mqtt_broker` runs: "external" (1883), "mosquitto" or "amqtt".

    amqtt forwards messages at the subscription's QoS, not min(publish, subscription)
    as MQTT 3.1.1 says, so QoS-0 assertions only hold for the others.
    """
    return _shared_kind


@pytest.fixture(scope="session")
def mqtt_broker() -> Iterator[tuple[str, int]]:
    """(host, port) of a running broker shared by the whole session."""
    global _shared_kind
    if not os.environ.get("SCHEDD_TEST_MQTT") and accepts(*DEFAULT):
        _shared_kind = "external"
        yield DEFAULT
        return
    with tempfile.TemporaryDirectory(prefix="schedd-mqtt-") as tmp:
        broker = _start_any(Path(tmp))
        if broker is None:
            pytest.skip("no MQTT broker on 127.0.0.1:1883, and neither mosquitto nor "
                        "amqtt is installed")
        _shared_kind = broker.kind
        try:
            yield broker.host, broker.port
        finally:
            broker.stop()


def shipped_mosquitto(workdir: Path) -> BrokerProcess:
    """A Mosquitto (not started) with deploy/'s config, password file and ACL as shipped;
    only the listener's port and address, the file paths and persistence (off) are
    adapted to the test. Skips the test where Mosquitto is not installed."""
    if mosquitto_binary() is None:
        pytest.skip("mosquitto is not installed (.ci/run installs it): cannot check the "
                    "shipped broker config")
    port = free_port()
    for name in ("mosquitto.acl", "mosquitto.passwd"):
        shutil.copy(DEPLOY / name, workdir / name)
        (workdir / name).chmod(0o600)  # mosquitto 2.0.18+ warns about readable secrets
    lines = []
    for line in (DEPLOY / "mosquitto.conf").read_text().splitlines():
        words = line.split()
        if words[:1] == ["listener"]:
            line = f"listener {port} 127.0.0.1"
        elif words[:1] in (["password_file"], ["acl_file"]):
            line = f"{words[0]} {workdir / Path(words[1]).name}"
        elif words[:1] in (["persistence"], ["persistence_location"]):
            continue
        lines.append(line)
    if os.geteuid() == 0:
        lines.append("user root")  # do not drop privileges: the files are ours
    conf = workdir / "shipped.conf"
    conf.write_text("\n".join(lines) + "\n")
    return BrokerProcess("mosquitto", workdir, port=port, conf=conf)


@pytest.fixture
def secured_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A private Mosquitto running deploy/'s config, password file and ACL as shipped
    (`shipped_mosquitto`), for one test."""
    broker = shipped_mosquitto(tmp_path)
    try:
        broker.start()
    except RuntimeError as err:
        pytest.fail(f"the shipped mosquitto.conf does not start: {err}")
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def private_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker this test owns: `.stop()` and `.start()` (same port) simulate an outage."""
    broker = _start_any(tmp_path)
    if broker is None:
        pytest.skip("neither mosquitto nor amqtt is installed: no broker to take down")
    try:
        yield broker
    finally:
        broker.stop()
