"""The sweep's tidy table: one row per cell, input columns (in_*) first, then status and
every summary figure, as CSV and Parquet."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

_FIRST = ("key", "status", "error")


def columns(rows: list[dict[str, Any]]) -> list[str]:
    """Input columns, then key/status/error, then figures; each group in first-seen order
    (the same rows always give the same columns)."""
    seen: dict[str, None] = {}
    for r in rows:
        for k in r:
            seen.setdefault(k, None)
    inputs = [k for k in seen if k.startswith("in_")]
    figures = [k for k in seen if not k.startswith("in_") and k not in _FIRST and k != "where"]
    return inputs + [k for k in _FIRST if k in seen or k != "error"] + figures


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    names = columns(rows)
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(names)
        for r in rows:
            w.writerow([_text(r.get(k)) for k in names])


def _text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    return str(v)


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = columns(rows)
    data = {}
    for k in names:
        values = [r.get(k) for r in rows]
        kinds = {type(v) for v in values if v is not None}
        if kinds <= {int, float, bool} and kinds and kinds != {bool}:
            values = [float(v) if v is not None else None for v in values] \
                if float in kinds else values
        elif kinds - {str}:
            values = [None if v is None else str(v) for v in values]
        data[k] = values
    pq.write_table(pa.table(data), path)
