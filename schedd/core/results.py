"""Per-job results kept in compact columns, so a million-job run stays small in memory.

The engine appends one row when a job reaches a terminal state; `ResultTable.arrays()`
turns the columns into NumPy arrays for the metrics and writers.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

# Column name -> array typecode ('q' = int64, 'd' = float64). Order is the CSV order.
COLUMNS: dict[str, str] = {
    "id": "q",
    "submit": "d",
    "first_start": "d",  # -1 if the job never started
    "end": "d",  # time it reached its terminal state
    "wait": "d",  # first_start - submit (end - submit if it never started)
    "executed": "d",  # wall seconds holding nodes, all segments (setup + work + overheads)
    "nodes": "q",  # requested nodes (maximum for malleable jobs)
    "alloc_nodes": "q",  # nodes occupied at the first start (the partition size on BG/Q)
    "walltime": "d",  # requested time at the end (after elastic control commands)
    "orig_walltime": "d",  # requested time at submission
    "user": "q",
    "project": "q",
    "queue": "q",
    "job_class": "q",  # index into CLASS_CODES
    "final_state": "q",  # index into STATE_CODES
    "preemptions": "q",
    "failures": "q",  # interruptions by node failures
    "checkpoints": "q",  # checkpoints written (periodic and preemption)
    "busy_node_s": "d",  # node-seconds held (everything below plus idle-in-warning)
    "useful_node_s": "d",  # node-seconds of compute that was kept
    "lost_node_s": "d",  # node-seconds of compute thrown away (back to the last checkpoint)
    "ckpt_node_s": "d",  # node-seconds writing checkpoints
    "restart_node_s": "d",  # node-seconds reading checkpoints at restart
    "setup_node_s": "d",  # node-seconds of setup at each (re)start
    "t_ckpt": "d",  # seconds added to the job by checkpoint writes (eqs. 6, 11, 16)
    "t_pre": "d",  # seconds added by preemption: lost work + restart reads (eqs. 2, 7, 12, 17)
    "ckpt_by_system": "q",  # 1 if the checkpoint overhead is the system's (SYS, JIT), 0 app
    "requested_start": "d",  # dedicated jobs, else -1
    "start_delay": "d",  # dedicated: first_start - requested_start, else 0
}

CLASS_CODES = ("B", "R", "O", "M", "D")
STATE_CODES = ("completed", "killed", "cancelled", "failed")


@dataclass
class ResultTable:
    """Columns plus a small buffer of recent rows (moved into the columns in bulk, which is
    much cheaper than one append per column per job)."""

    columns: dict[str, array]

    FLUSH_ROWS = 4096

    def __post_init__(self) -> None:
        self._order = [self.columns[name] for name in COLUMNS]
        self._pending: list[tuple[float, ...]] = []

    @classmethod
    def empty(cls) -> ResultTable:
        return cls({name: array(code) for name, code in COLUMNS.items()})

    def append(self, row: tuple[float, ...]) -> None:
        """One row with a value per column, in COLUMNS order."""
        self._pending.append(row)
        if len(self._pending) >= self.FLUSH_ROWS:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            for col, values in zip(self._order, zip(*self._pending, strict=True), strict=True):
                col.extend(values)
            self._pending.clear()

    def __len__(self) -> int:
        return len(self.columns["id"]) + len(self._pending)

    def arrays(self) -> dict[str, np.ndarray]:
        self._flush()
        return {name: np.frombuffer(col, dtype=col.typecode).copy() if len(col) else
                np.zeros(0, dtype="int64" if col.typecode == "q" else "float64")
                for name, col in self.columns.items()}

    def column(self, name: str) -> array:
        """One column, up to date (flushes pending rows)."""
        self._flush()
        return self.columns[name]

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> ResultTable:
        table = cls.empty()
        for name, col in table.columns.items():
            col.extend(arrays[name].tolist())
        return table
