"""What the daemon reads back from the journal instead of keeping it in memory: result
rows of finished jobs, ids in use, request ids answered (docs/daemon.md, Guarantees)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.results import ROW_DTYPE
from ..run_files import RECORD_TABLES

if TYPE_CHECKING:
    from .journal import Journal

ROW = ROW_DTYPE  # one result row, as the results store keeps it
REQUESTS_IN_MEMORY = 20_000


def pack_rows(arrays: dict[str, np.ndarray], lo: int, hi: int,
              dtype: np.dtype = ROW) -> list[bytes]:
    """Rows lo..hi of the columns, one fixed-size record each."""
    rows = np.empty(hi - lo, dtype=dtype)
    for name in dtype.names or ():
        rows[name] = arrays[name][lo:hi]
    data = rows.tobytes()
    size = dtype.itemsize
    return [data[i * size:(i + 1) * size] for i in range(hi - lo)]


def unpack_rows(blobs: list[bytes], dtype: np.dtype = ROW) -> dict[str, np.ndarray]:
    rows = np.frombuffer(b"".join(blobs), dtype=dtype)
    return {name: rows[name].astype(np.int64 if dtype[name].kind == "i" else np.float64)
            for name in dtype.names or ()}


# The run record's tables (segments.csv / timeseries.csv come from them), row by row.
RECORD_ROWS = {table: np.dtype([(name, "<i8" if integer else "<f8")
                                for name, _, integer in cols])
               for table, cols in RECORD_TABLES.items()}


def stored_chunks(journal: Journal, below: int, chunk: int) -> Iterator[dict[str, np.ndarray]]:
    for blobs in journal.result_rows(below, chunk):
        yield unpack_rows(blobs)


def stored_record(journal: Journal, table: str, below: int, chunk: int
                  ) -> Iterator[dict[str, np.ndarray]]:
    for blobs in journal.record_rows(table, below, chunk):
        yield unpack_rows(blobs, RECORD_ROWS[table])


class IdsInUse(set[int]):
    """Job ids in use, all held in the set (a daemon without a results store)."""

    def highest(self) -> int:
        """The largest id in use (0: none)."""
        return max(self, default=0)

    def first_free(self, cursor: int) -> int:
        """The first id from `cursor` on that is not in use: one call per assigned id,
        not an `in` per id tried (issue 21)."""
        while cursor in self:
            cursor += 1
        return cursor


class KnownIds(IdsInUse):
    """Job ids in use: live ones in the set, finished ones found in the results store."""

    def __init__(self, ids: set[int], journal: Journal):
        super().__init__(ids)
        self._journal = journal
        # No stored job has a larger id: the assigned-id cursor, above it, asks no query.
        self._stored_max = journal.max_finished_id()

    def __contains__(self, job_id: object) -> bool:
        if super().__contains__(job_id):
            return True
        return isinstance(job_id, int) and self._stored(job_id)

    def first_free(self, cursor: int) -> int:
        live = set.__contains__  # the set's own test: not the interpreted one above
        while live(self, cursor) or self._stored(cursor):
            cursor += 1
        return cursor

    def highest(self) -> int:
        """The largest id in use, live or finished (finished jobs keep their ids)."""
        return max(super().highest(), self._stored_max)

    def _stored(self, job_id: int) -> bool:
        """In the results store (no query above the largest id stored)."""
        return job_id <= self._stored_max and self._journal.finished_record(job_id) is not None

    def discard(self, job_id: object) -> None:
        """A job leaves memory: moved to the results store (or its submission failed)."""
        if isinstance(job_id, int):
            self._stored_max = max(self._stored_max, job_id)
        super().discard(job_id)  # type: ignore[arg-type]


class RequestMemo(dict[str, tuple[str, int, dict[str, Any]]]):
    """request id -> (fingerprint, stimulus seq, answer): the latest in memory, every
    older one read back from the journal (so that a retry is answered, never re-applied)."""

    def __init__(self, journal: Journal, capacity: int = REQUESTS_IN_MEMORY):
        super().__init__()
        self._journal = journal
        self._capacity = capacity

    def __setitem__(self, key: str, value: tuple[str, int, dict[str, Any]]) -> None:
        super().__setitem__(key, value)
        while len(self) > self._capacity:  # the oldest is in the journal already
            super().__delitem__(next(iter(self)))

    def _stored(self, key: str) -> tuple[str, int, dict[str, Any]] | None:
        found = self._journal.request(key)
        if found is None:
            return None
        seq, response = found
        return (response.get("_fp", ""), seq, response)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        value = super().get(key)
        if value is None:
            value = self._stored(key)
        return default if value is None else value

    def __contains__(self, key: object) -> bool:
        return super().__contains__(key) or (isinstance(key, str)
                                             and self._stored(key) is not None)
