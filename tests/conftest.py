from __future__ import annotations

from pathlib import Path

import pytest
from mqtt_broker import mqtt_broker, private_broker, secured_broker  # noqa: F401

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
TRACES = SHARED / "traces"


@pytest.fixture
def shared_traces() -> Path:
    if not (TRACES / "README.md").exists():
        pytest.skip(f"shared traces not found at {TRACES}")
    return TRACES


# A module that defines a `daemon` fixture (a DaemonProc) gets a channel and a stub on it.
@pytest.fixture(scope="module")
def channel(daemon):  # noqa: ANN001, ANN201
    ch = daemon.channel()
    yield ch
    ch.close()


@pytest.fixture(scope="module")
def stub(channel):  # noqa: ANN001, ANN201
    from schedd.v1 import scheduler_pb2_grpc

    return scheduler_pb2_grpc.SchedulerStub(channel)


@pytest.fixture()
def memory_daemon():  # noqa: ANN201
    """A `schedd serve` Daemon built in this process, not started: journal in memory,
    lockstep clock, nodes:64. For the servicer's checks with no server, engine thread or
    pass in between."""
    from schedd.cli import build_parser
    from schedd.daemon.server import Daemon

    args = build_parser().parse_args(
        ["serve", "--listen", "127.0.0.1:0", "--clock", "lockstep", "--cluster", "nodes:64",
         "--state-db", ":memory:", "--metrics-port", "0"])
    d = Daemon(args)
    yield d
    d.host.close()
    d.journal.close()
