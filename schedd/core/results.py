"""Per-job results kept in compact columns, so a million-job run stays small in memory.

The engine appends one row when a job reaches a terminal state; `ResultTable.arrays()`
turns the columns into NumPy arrays for the metrics and writers.
"""

from __future__ import annotations

import struct

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
    "backfilled": "q",  # 1 if it ever started ahead of an earlier-submitted waiting job
    # node-seconds wasted by interruptions: lost work, restart reads, setup when resuming,
    # preemption checkpoints and warnings (hybrid paper §IV-D's utilisation leaves it out)
    "waste_node_s": "d",
}

CLASS_CODES = ("B", "R", "O", "M", "D")
STATE_CODES = ("completed", "killed", "cancelled", "failed")


class ResultTable:
    """Preallocated NumPy columns plus a small buffer of recent rows, moved into the columns
    in bulk (far cheaper than one store per column per job). Capacity doubles when needed;
    the simulator sizes it to the trace so a million-job run allocates each column once."""

    FLUSH_ROWS = 4096

    def __init__(self, capacity: int = 1024):
        self._capacity = max(capacity, 1)
        self._cols = {name: np.empty(self._capacity, dtype=_DTYPES[code])
                      for name, code in COLUMNS.items()}
        self._n = 0
        self._pending: list[tuple[float, ...]] = []

    @classmethod
    def empty(cls, capacity: int = 1024) -> ResultTable:
        return cls(capacity)

    def append(self, row: tuple[float, ...]) -> None:
        """One row with a value per column, in COLUMNS order."""
        self._pending.append(row)
        if len(self._pending) >= self.FLUSH_ROWS:
            self._flush()

    def _flush(self) -> None:
        pending = self._pending
        if not pending:
            return
        n, m = self._n, len(pending)
        if n + m > self._capacity:
            self._grow(max(2 * self._capacity, n + m))
        # Every row packed to its bytes by one C call (struct), the block read back as a
        # record array: each value is converted once, exactly, by its column's type.
        # Packing refuses a row of another width or a value its column cannot hold; such
        # a block goes value by value, which keeps every value exact and every error the
        # same (ValueError, OverflowError) as NumPy gives.
        try:
            block = np.frombuffer(b"".join([_ROW.pack(*row) for row in pending]),
                                  dtype=ROW_DTYPE)
        except struct.error:
            for col, values in zip(self._cols.values(), zip(*pending, strict=True),
                                   strict=True):
                col[n:n + m] = values
        else:
            for name, col in self._cols.items():
                col[n:n + m] = block[name]
        self._n = n + m
        pending.clear()

    def _grow(self, capacity: int) -> None:
        for name, col in self._cols.items():
            bigger = np.empty(capacity, dtype=col.dtype)
            bigger[:self._n] = col[:self._n]
            self._cols[name] = bigger
        self._capacity = capacity

    def __len__(self) -> int:
        return self._n + len(self._pending)

    def arrays(self, copy: bool = True) -> dict[str, np.ndarray]:
        """Every column as a NumPy array of the rows so far (views when copy=False)."""
        self._flush()
        n = self._n
        return {name: col[:n].copy() if copy else col[:n] for name, col in self._cols.items()}

    def extend(self, columns: dict[str, np.ndarray | int | float]) -> None:
        """Rows given column by column (every column of COLUMNS: arrays of equal length, or
        one value for the whole column), after the rows so far; each value is converted by
        its column's type as `append` would."""
        self._flush()
        ids = columns["id"]
        assert isinstance(ids, np.ndarray)
        n, m = self._n, len(ids)
        if n + m > self._capacity:
            self._grow(max(2 * self._capacity, n + m))
        for name, col in self._cols.items():
            col[n:n + m] = columns[name]
        self._n = n + m

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> ResultTable:
        n = len(arrays["id"])
        table = cls(n)
        for name, col in table._cols.items():
            col[:n] = arrays[name]
        table._n = n
        return table

    def column(self, name: str) -> np.ndarray:
        """One column, up to date (a view)."""
        self._flush()
        return self._cols[name][:self._n]


_DTYPES = {"q": np.int64, "d": np.float64}
# One row's bytes: little-endian int64 ('q') and float64 ('d') in COLUMNS order, no padding.
# The same row as a NumPy record (the daemon's results store keeps rows in this form too).
_ROW = struct.Struct("<" + "".join(COLUMNS.values()))
ROW_DTYPE = np.dtype([(name, "<i8" if code == "q" else "<f8") for name, code in COLUMNS.items()])
