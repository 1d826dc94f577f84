"""Offline MILP of the real-time paper (§5) with HiGHS: `schedd milp` (docs/milp.md).

The model's names are re-exported here, loaded on first use: importing the package (as
`schedd milp`'s parser does) must not load HiGHS."""

from __future__ import annotations

from typing import Any

_MODEL_NAMES = (
    "DEFAULT_MIN_FRACTION", "DEFAULT_RESUME", "DEFAULT_THRESHOLD", "DEFAULT_TOLERANCE",
    "Instance", "JobSchedule", "MilpError", "MilpJob", "MilpResult", "RESUME_MODES",
    "SolveOptions", "check_schedule", "make_instance", "solve", "solve_at",
)


def __getattr__(name: str) -> Any:
    if name in _MODEL_NAMES:
        from schedd.milp import model

        return getattr(model, name)
    raise AttributeError(f"module 'schedd.milp' has no attribute {name!r}")


__all__ = list(_MODEL_NAMES)
