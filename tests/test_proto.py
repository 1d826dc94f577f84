"""The committed gRPC code is what `make proto` generates from proto/ (reproducible)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ("scheduler_pb2.py", "scheduler_pb2.pyi", "scheduler_pb2_grpc.py")


def test_generated_code_matches_proto(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{ROOT / 'proto'}",
                    f"--python_out={tmp_path}", f"--grpc_python_out={tmp_path}",
                    f"--pyi_out={tmp_path}", str(ROOT / "proto/schedd/v1/scheduler.proto")],
                   check=True, capture_output=True, text=True)
    for name in GENERATED:
        fresh = (tmp_path / "schedd" / "v1" / name).read_text()
        committed = (ROOT / "schedd" / "v1" / name).read_text()
        assert fresh == committed, f"schedd/v1/{name} is stale: run `make proto`"
