from __future__ import annotations

from pathlib import Path

import pytest
from mqtt_broker import mqtt_broker, private_broker  # noqa: F401

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
TRACES = SHARED / "traces"


@pytest.fixture
def shared_traces() -> Path:
    if not (TRACES / "README.md").exists():
        pytest.skip(f"shared traces not found at {TRACES}")
    return TRACES
