"""Offline MILP of the real-time paper (§5) with HiGHS: `schedd milp` (docs/milp.md)."""

from schedd.milp.model import (
    DEFAULT_MIN_FRACTION,
    DEFAULT_RESUME,
    DEFAULT_THRESHOLD,
    DEFAULT_TOLERANCE,
    RESUME_MODES,
    Instance,
    JobSchedule,
    MilpError,
    MilpJob,
    MilpResult,
    SolveOptions,
    check_schedule,
    make_instance,
    solve,
    solve_at,
)

__all__ = [
    "DEFAULT_MIN_FRACTION",
    "DEFAULT_RESUME",
    "DEFAULT_THRESHOLD",
    "DEFAULT_TOLERANCE",
    "Instance",
    "JobSchedule",
    "MilpError",
    "MilpJob",
    "MilpResult",
    "RESUME_MODES",
    "SolveOptions",
    "check_schedule",
    "make_instance",
    "solve",
    "solve_at",
]
