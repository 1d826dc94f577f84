"""What a trace imported from a resource manager's log (fields 32-40, the names header)
carries into a run's jobs.csv and jobs.swf (docs/results.md, docs/import.md).

jobs.csv gains, after its usual columns, the user, account, partition, QOS and original
state by name and the eligible time; jobs.swf gets 40 fields (16 partition, 17 the job
depended on, 32-40 as in the trace) and the trace's names lines. A trace with neither
(every archive trace) gives exactly the files it gave before: `imported(trace)` is False.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .row_text import Column, Numbers, Words
from .traces.names import names_line
from .traces.swf import COLUMNS, N_CWF

# jobs.csv column -> (trace column, names kind or None for a number)
CSV_COLUMNS: dict[str, tuple[str, str | None]] = {
    "user_name": ("user", "user"),
    "account": ("group", "account"),
    "partition": ("partition", "partition"),
    "qos": ("qos", "qos"),
    "orig_state": ("state", "state"),
    "eligible": ("eligible", None),
}
EXTENSION = tuple(c.name for c in COLUMNS if c.field >= N_CWF)  # fields 32-40, in order


def imported(trace: Any) -> bool:
    """Whether the trace has names or uses a field beyond 31."""
    if trace.header.names:
        return True
    return any(bool((np.asarray(trace.columns[name]) != -1).any()) for name in EXTENSION)


def rows_of(trace: Any, ids: np.ndarray) -> np.ndarray:
    """The trace rows of the result rows' job ids (ids are unique among kept jobs)."""
    job_ids = trace.columns["job_id"]
    order = np.argsort(job_ids, kind="stable")
    return np.asarray(order[np.searchsorted(job_ids, ids, sorter=order)])


class CsvColumn(NamedTuple):
    """One extra jobs.csv column: numbers, or codes into `words` (names)."""

    header: str
    values: np.ndarray
    words: list[str] | None

    def cells(self, lo: int, hi: int) -> Column:
        part = self.values[lo:hi]
        return Numbers(part) if self.words is None else Words(part, self.words)


def csv_columns(trace: Any, take: np.ndarray) -> list[CsvColumn]:
    """jobs.csv's extra columns for the result rows `take` (trace rows); a number without
    a name is written as the number, an absent one (-1) as nothing."""
    out: list[CsvColumn] = []
    for header, (column, kind) in CSV_COLUMNS.items():
        values = np.asarray(trace.columns[column])[take]
        if kind is None:
            out.append(CsvColumn(header, values.astype(np.float64), None))
            continue
        names = trace.header.names.get(kind, {})
        numbers, codes = np.unique(values.astype(np.int64), return_inverse=True)
        words = [_csv_cell(names.get(n, str(n))) if n >= 0 else "" for n in numbers.tolist()]
        out.append(CsvColumn(header, codes.reshape(-1), words))
    return out


def swf_fields(trace: Any, take: np.ndarray) -> dict[int, Numbers]:
    """1-based field -> cells of the fields jobs.swf takes from the trace: 16, 17, 32-40."""
    fields = {16: "partition", 17: "prev_job"}
    fields.update({c.field + 1: c.name for c in COLUMNS if c.field >= N_CWF})
    return {f: Numbers(np.asarray(trace.columns[name])[take]) for f, name in fields.items()}


def names_lines(trace: Any) -> list[str]:
    """The trace's names header lines, for jobs.swf."""
    return [names_line(kind, mapping) for kind, mapping in trace.header.names.items()]


def _csv_cell(name: str) -> str:
    """A name as one CSV cell: quoted (RFC 4180) where it holds a comma, a quote or a line
    break; bytes that are not UTF-8 shown as U+FFFD; NUL (which no cell may hold) too."""
    text = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    text = text.replace("\0", "\ufffd")
    if any(ch in text for ch in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text
