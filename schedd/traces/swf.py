"""Read and write job traces: SWF, CWF and the schedd extension (docs/trace-format.md).

The file is read into memory as bytes and cut into chunks of whole lines. Each chunk first
goes through numpy's C parser (`np.loadtxt`) and a few vectorised checks; a chunk that fails
any of them is parsed again line by line, which is what produces the precise `FILE:LINE`
errors (or skips bad lines in lenient mode). The fast path accepts a subset of what the
line parser accepts and yields the same values, so it only ever changes the speed.
"""

from __future__ import annotations

import io
import math
import os
import re
import warnings
import zlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from .. import limits
from .names import is_names_line, names_line, parse_names

N_SWF = 18  # fields every job line has
N_CWF = 31  # the last field of the first schedd extension (CWF, classes, checkpoints)
N_MAX = 40  # the last field of the schedd extension (fields 32-40: imported logs)
TYPE_FIELD = 19  # 0-based index of field 20, the CWF request type
AMOUNT_FIELD = 20  # field 21, the ECC amount
CLASS_FIELD = 21  # field 22, the job class letter
CKPT_FIELD = 22  # field 23, checkpointable 1/0
CLASS_LETTERS = "BROMD"
ECC_KINDS = ("ET", "RT", "EP", "RP")
MAX_EXACT_INT = 2**53  # integers travel through float64, which is exact up to here
# Parsed a block of lines at a time. A block's parse makes several arrays of its rows'
# fields (the integers, their floats, the checks); at 1 MiB those took a KTH read 3,600
# page faults of fresh memory, at 256 KiB 2,100 (a million-line file reads as fast).
native: ModuleType | None
try:
    from . import _whole_numbers as native
except ImportError:  # not built (no C compiler, SCHEDD_PURE_PYTHON=1): NumPy parses
    native = None

CHUNK_BYTES = 1 << 18


@dataclass(frozen=True)
class _Column:
    name: str
    field: int  # 0-based field index
    kind: str  # "i" int64, "f" float64, "c" job-class letter


COLUMNS: tuple[_Column, ...] = tuple(
    _Column(*spec)
    for spec in (
        ("job_id", 0, "i"),
        ("submit", 1, "f"),
        ("wait", 2, "f"),
        ("runtime", 3, "f"),
        ("procs", 4, "i"),
        ("cpu", 5, "f"),
        ("mem", 6, "f"),
        ("req_procs", 7, "i"),
        ("req_time", 8, "f"),
        ("req_mem", 9, "f"),
        ("status", 10, "i"),
        ("user", 11, "i"),
        ("group", 12, "i"),
        ("app", 13, "i"),
        ("queue", 14, "i"),
        ("partition", 15, "i"),
        ("prev_job", 16, "i"),
        ("think", 17, "f"),
        ("req_start", 18, "f"),
        ("job_class", CLASS_FIELD, "c"),
        ("checkpointable", CKPT_FIELD, "i"),
        ("ckpt_gb", 23, "f"),
        ("min_nodes", 24, "i"),
        ("setup", 25, "f"),
        ("notice_time", 26, "f"),
        ("est_arrival", 27, "f"),
        ("est_nodes", 28, "i"),
        ("est_runtime", 29, "f"),
        ("ckpt_interval", 30, "f"),
        ("eligible", 31, "f"),
        ("cancel_time", 32, "f"),
        ("req_nodes", 33, "i"),
        ("exclusive", 34, "i"),
        ("qos", 35, "i"),
        ("dep_kind", 36, "i"),
        ("priority", 37, "f"),
        ("state", 38, "i"),
        ("started_by", 39, "i"),
    )
)
COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in COLUMNS)

_FIELD_NAMES = {c.field: c.name for c in COLUMNS}
_FIELD_NAMES[TYPE_FIELD] = "request type"
_FIELD_NAMES[AMOUNT_FIELD] = "amount"
_INT_FIELDS = tuple(c.field for c in COLUMNS if c.kind == "i")
# Fields that hold one of a few codes (0-based field -> the codes, as the message lists them).
_CODE_FIELDS: dict[int, tuple[float, ...]] = {
    CKPT_FIELD: (1.0, 0.0, -1.0),  # checkpointable
    34: (1.0, 0.0, -1.0),  # exclusive
    36: (1.0, 2.0, 3.0, -1.0),  # dep_kind: afterok, afterany, afternotok
    39: (1.0, 2.0, 3.0, -1.0),  # started_by: at submit, main scheduler, backfill
}
_NUMERIC_FIELDS = tuple(i for i in range(N_MAX) if i not in (TYPE_FIELD, CLASS_FIELD))
_CLASS_ARRAY = np.array(list(CLASS_LETTERS))
_NUMBER = re.compile(rb"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_HEADER_KEY = re.compile(r"\s*;\s*(\w+)\s*:\s*(.*?)\s*")
_HEADER_INT = re.compile(r"[+-]?\d+(?:\.0*)?")


class TraceError(Exception):
    """A trace file could not be read; str(e) is "FILE:LINE: expected ..., found ..."."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        super().__init__(message)
        self.path = path
        self.line = line

    @classmethod
    def at(cls, path: str, line: int | None, what: str) -> TraceError:
        where = path if line is None else f"{path}:{line}"
        return cls(f"{where}: {what}", path, line)


@dataclass
class TraceHeader:
    max_nodes: int | None = None
    max_procs: int | None = None
    unix_start_time: int | None = None
    lines: list[str] = field(default_factory=list)  # raw `;` lines, no line break
    # kind ("user", "account", "partition", "queue", "qos", "state") -> number -> name,
    # from the `; schedd-names KIND: 1=alice ...` lines (names.py)
    names: dict[str, dict[int, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class EccCommand:
    """An elastic control command (CWF): change the time or size of an earlier job."""

    job_id: int
    time: float  # when the command is issued
    kind: str  # ET / RT: extend / reduce time (s); EP / RP: extend / reduce processors
    amount: float
    line: int  # 1-based line in the file it was read from (0 if made in memory)


@dataclass(eq=False)
class Trace:
    """Every job line of a file, column-wise in file order (see COLUMN_NAMES)."""

    path: str
    header: TraceHeader
    columns: dict[str, np.ndarray]
    eccs: list[EccCommand]
    skipped: int = 0
    # 1-based field -> (how many values, lowest, highest) outside the field's usual range,
    # kept as given (real logs mark "unknown" or "unlimited" with -1, 2147483647, ...)
    unusual: dict[int, tuple[int, float, float]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.columns["job_id"])


class _LineError(Exception):
    """A malformed line; the message is the 'expected ..., found ...' sentence."""


# ----------------------------------------------------------------------------- reading


def read_trace(path: str | os.PathLike[str], *, lenient: bool = False,
               strict: bool = False) -> Trace:
    """Read an SWF/CWF/extended trace (gzip if the name ends in .gz).

    Raises TraceError on the first malformed line, or skips and counts such lines when
    `lenient` is true. A number outside its field's usual range in a field a real log
    fills (1-18, 32-40) is kept as given and counted in `Trace.unusual`, unless `strict`,
    which makes it an error at its line as before.
    """
    name = os.fsdecode(path)
    raw = _read_bytes(name)
    return _Reader(name, lenient, raw.count(b"\n") + 1, strict).run(raw)


def _read_bytes(name: str) -> bytes:
    try:
        with open(name, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise TraceError.at(name, None, "no such file") from None
    except OSError as e:
        raise TraceError.at(name, None, f"cannot be read ({e.strerror})") from None
    if not name.endswith(".gz"):
        return raw
    import gzip  # here: most traces are not compressed (gzip costs 2 ms to import)

    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error):
        raise TraceError.at(
            name, None, "expected gzip data (the name ends in .gz), found a corrupt file"
        ) from None


class _Reader:
    def __init__(self, path: str, lenient: bool, capacity: int, strict: bool = False):
        self.path = path
        self.lenient = lenient
        self.strict = strict
        self.unusual: dict[int, tuple[int, float, float]] = {}
        self.comments: list[str] = []
        self.eccs: list[EccCommand] = []
        self.skipped = 0
        self.seen: set[int] | None = None  # submitted job ids, built at the first ECC
        self.builder = _ColumnBuilder(capacity)

    def run(self, raw: bytes) -> Trace:
        lineno = 1
        for start, end in _chunks(raw, CHUNK_BYTES):
            chunk = raw[start:end]
            data, comments = _strip_comments(chunk)
            self.comments.extend(comments)
            block = _fast_block(data, self.strict)
            if block is None:
                self._slow_chunk(chunk, lineno)
            else:
                self._add_rows(block)
                if not self.strict:
                    for i, (n, lo, hi) in _unusual_in_block(block).items():
                        self._unusual(i, n, lo, hi)
            lineno += chunk.count(b"\n")
        self._check_header(raw)
        return Trace(
            path=self.path,
            header=parse_header(self.comments),
            columns=self.builder.finish(),
            eccs=self.eccs,
            skipped=self.skipped,
            unusual={i + 1: self.unusual[i] for i in sorted(self.unusual)},
        )

    def _unusual(self, i: int, n: int, lo: float, hi: float) -> None:
        was = self.unusual.get(i)
        self.unusual[i] = (n, lo, hi) if was is None else (
            was[0] + n, min(was[1], lo), max(was[2], hi))

    def _check_header(self, raw: bytes) -> None:
        """A header size out of range or a malformed names line is an error at its line
        (lenient: dropped, counted)."""
        while (found := header_problem(self.comments)
               or parse_names(self.comments)[1]) is not None:
            line, why = found
            if not self.lenient:
                raise TraceError.at(self.path, _comment_line_number(raw, line), why)
            self.comments.remove(line)
            self.skipped += 1

    def _add_rows(self, block: np.ndarray) -> None:
        self.builder.add(block)
        if self.seen is not None:
            self.seen.update(block[:, 0].astype(np.int64).tolist())

    def _slow_chunk(self, chunk: bytes, first_line: int) -> None:
        rows: list[list[float]] = []
        for i, line in enumerate(chunk.split(b"\n")):
            toks = line.split()
            if not toks or toks[0].startswith(b";"):
                continue
            try:
                found: list[int] | None = None if self.strict else []
                kind, values = parse_fields(toks, found)
                if found and kind != "S":  # an ECC line is schedd's own: no unusual values
                    raise _LineError(_range_problem(found[0], toks))
                for f in found or ():
                    self._unusual(f, 1, values[f], values[f])
                if kind == "S":
                    rows.append(values)
                    continue
                self._flush(rows)  # an ECC may refer to a job earlier in this chunk
                self.eccs.append(self._ecc(kind, values, len(toks), first_line + i))
            except _LineError as e:
                if not self.lenient:
                    raise TraceError.at(self.path, first_line + i, str(e)) from None
                self.skipped += 1
        self._flush(rows)

    def _flush(self, rows: list[list[float]]) -> None:
        if rows:
            self._add_rows(np.array(rows, dtype=np.float64))
            rows.clear()

    def _ecc(self, kind: str, values: list[float], nfields: int, line: int) -> EccCommand:
        job_id = int(values[0])
        if self.seen is None:
            self.seen = set(self.builder.view("job_id").tolist())
        if job_id not in self.seen:
            raise _LineError(
                f"expected a submission (type S) of job {job_id} earlier in the file "
                f"for this {kind} command, found none"
            )
        if nfields <= AMOUNT_FIELD:
            raise _LineError(f"expected an amount in field 21 for this {kind} command, found none")
        amount = values[AMOUNT_FIELD]
        nodes = kind in ("EP", "RP")
        limit = limits.LIMITS["trace.amount_nodes" if nodes else "trace.amount_seconds"]
        if not limit.accepts(amount):
            what = "whole number of processors" if nodes else "number of seconds"
            raise _LineError(
                f"expected a non-negative {what} in field 21 for this {kind} command "
                f"({limit.describe()}), found {_show_number(amount)}"
            )
        return EccCommand(job_id, values[1], kind, amount, line)


def _chunks(raw: bytes, size: int) -> list[tuple[int, int]]:
    """(start, end) byte ranges of about `size` bytes, each ending at a line break."""
    out = []
    start, n = 0, len(raw)
    while start < n:
        nl = raw.find(b"\n", start + size) if start + size < n else -1
        end = n if nl < 0 else nl + 1
        out.append((start, end))
        start = end
    return out


def _strip_comments(chunk: bytes) -> tuple[bytes, list[str]]:
    """The chunk without its `;` comment lines, and those lines as text.

    A `;` after data on the same line stays in the data: the line parser rejects it.
    """
    if b";" not in chunk:
        return chunk, []
    pieces, comments = [], []
    kept = 0  # start of the data not yet copied to pieces
    pos = chunk.find(b";")
    while pos >= 0:
        start = chunk.rfind(b"\n", 0, pos) + 1
        end = chunk.find(b"\n", pos)
        end = len(chunk) if end < 0 else end + 1
        if not chunk[start:pos].strip():
            pieces.append(chunk[kept:start])
            kept = end
            line = chunk[start:end].rstrip(b"\r\n")
            comments.append(line.decode("utf-8", "surrogateescape"))
        pos = chunk.find(b";", end)
    pieces.append(chunk[kept:])
    return b"".join(pieces), comments


def _fast_block(data: bytes, strict: bool = False) -> np.ndarray | None:
    """All job rows of a comment-free chunk as an (m, F) float64 matrix, or None.

    None means "parse this chunk line by line": an odd field count, anything non-numeric
    where a number belongs, an ECC line, or non-ASCII bytes (np.loadtxt treats some of
    those as blanks, the line parser does not).
    """
    nfields = _first_field_count(data)
    if nfields == 0:
        return np.empty((0, N_SWF))
    if not N_SWF <= nfields <= N_MAX or not data.isascii():
        return None
    letters = nfields > TYPE_FIELD
    parsed = None if letters else _whole_numbers(data)
    if parsed is None:
        parsed = _load(data, _struct_dtype(nfields) if letters else np.float64)
        if parsed is None:
            return None
    block = _letters_to_codes(parsed, nfields) if letters else parsed.reshape(-1, nfields)
    if block is None or not _valid_block(block, strict):
        return None
    return block


def _whole_numbers(data: bytes) -> np.ndarray | None:
    """The chunk as float64 if every field is written as a whole number (most traces),
    else None. NumPy parses integers about 5x faster than floats (KTH: 14 against 75 ms)
    and strictly: "1.5", "1e3", "nan" or a value beyond int64 fail the whole chunk, which
    the float parser then reads. A value comes out as the float parser's would, except
    that "-0" gives 0.0 rather than -0.0 (equal in every comparison the engine makes).
    Where it is built, a C parser (_whole_numbers.c) reads such a chunk first, about five
    times faster again; what it leaves (anything but blanks, tabs, newlines and whole
    numbers within int64, or ragged lines) goes to NumPy as before."""
    if native is not None:
        fields = native.whole_numbers(data)
        if fields is not None:  # shaped as loadtxt's ndmin=1 shapes it
            values = np.frombuffer(fields, np.float64)
            width = _first_field_count(data)
            return values if width in (0, 1, len(values)) else values.reshape(-1, width)
    ints = _load(data, np.int64)
    return None if ints is None else ints.astype(np.float64)


def _load(data: bytes, dtype: Any) -> np.ndarray | None:
    """NumPy's C parser on a comment-free chunk, or None where it refuses a value."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.loadtxt(io.BytesIO(data), dtype=dtype, comments=None, ndmin=1)
    except (ValueError, OverflowError):
        return None


def _first_field_count(data: bytes) -> int:
    pos = 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        toks = data[pos:end].split()
        if toks:
            return len(toks)
        pos = end + 1
    return 0


def _struct_dtype(nfields: int) -> np.dtype:
    letter_fields = (TYPE_FIELD, CLASS_FIELD)
    # U3 is enough: any longer token is cut to 3 characters and then fails validation
    return np.dtype([(f"f{i}", "U3" if i in letter_fields else "f8") for i in range(nfields)])


def _letters_to_codes(parsed: np.ndarray, nfields: int) -> np.ndarray | None:
    """Structured rows -> float matrix with the class letter as its code in BROMD."""
    block = np.empty((len(parsed), nfields))
    for i in range(nfields):
        if i != TYPE_FIELD and i != CLASS_FIELD:
            block[:, i] = parsed[f"f{i}"]
    kinds = parsed[f"f{TYPE_FIELD}"]
    if not ((kinds == "S") | (kinds == "-1")).all():
        return None  # ECC lines (or garbage): the line parser records their line numbers
    block[:, TYPE_FIELD] = -1.0
    if nfields > CLASS_FIELD:
        codes = _class_codes(parsed[f"f{CLASS_FIELD}"])
        if codes is None:
            return None
        block[:, CLASS_FIELD] = codes
    return block


def _class_codes(letters: np.ndarray) -> np.ndarray | None:
    codes = np.full(len(letters), -1.0)
    codes[letters == "-1"] = 0.0
    for code, letter in enumerate(CLASS_LETTERS):
        codes[letters == letter] = code
    return None if (codes < 0).any() else codes


def _valid_block(block: np.ndarray, strict: bool = False) -> bool:
    nfields = block.shape[1]
    numeric = [i for i in _NUMERIC_FIELDS if i < nfields]
    if not np.isfinite(block[:, numeric]).all():
        return False
    ints = block[:, [i for i in _INT_FIELDS if i < nfields]]
    if not ((ints == np.trunc(ints)) & (np.abs(ints) <= MAX_EXACT_INT)).all():
        return False
    for i, codes in _CODE_FIELDS.items():
        if i < nfields and not np.isin(block[:, i], codes).all():
            return False
    return _block_within_limits(block, strict)


def parse_fields(toks: list[bytes], unusual: list[int] | None = None
                 ) -> tuple[str, list[float]]:
    """One data line -> (request type, the 40 field values; class as its BROMD code).

    Absent trailing fields are -1 (class B). Raises _LineError with the reason. With
    `unusual` (a list), a value outside its usual range in a field of KEPT_FIELDS is kept
    and its 0-based field appended there instead.
    """
    if not N_SWF <= len(toks) <= N_MAX:
        raise _LineError(
            f"expected {N_SWF} to {N_MAX} whitespace-separated fields, found {len(toks)}"
        )
    for i, tok in enumerate(toks):
        if b";" in tok:
            raise _LineError(
                f"expected a comment only on a line of its own, found ';' after field {i}"
            )
    values = [-1.0] * N_MAX
    values[CLASS_FIELD] = 0.0
    kind = "S"
    for i, tok in enumerate(toks):
        if i == TYPE_FIELD:
            kind = _parse_kind(tok)
        elif i == CLASS_FIELD:
            values[i] = _parse_class(tok)
        else:
            values[i] = _parse_number(tok, i)
    for i, codes in _CODE_FIELDS.items():
        if values[i] not in codes:
            listed = ", ".join(_format_number(c) for c in codes[:-1])
            raise _LineError(f"expected {listed} or {_format_number(codes[-1])} in field "
                             f"{i + 1} ({_FIELD_NAMES[i]}), found {_show(toks[i])}")
    _check_limits(values, toks, unusual)
    return kind, values


# ----------------------------------------------------------------------------- limits
# Field (0-based) -> its row in the shared table (schedd/limits.py): a time or size the
# engine computes with must be within range, not just finite (a submit time of -50 or a
# runtime of 1e308 used to fail deep inside the simulation with a traceback).
_FIELD_LIMITS: dict[int, limits.Limit] = {
    i: limits.LIMITS[name]
    for i, name in (
        (1, "trace.submit"),
        (2, "trace.duration"), (3, "trace.duration"), (5, "trace.duration"),
        (8, "trace.duration"), (17, "trace.duration"), (25, "trace.duration"),
        (29, "trace.duration"),
        (18, "trace.time"), (26, "trace.time"), (27, "trace.time"),
        (4, "trace.procs"), (7, "trace.procs"), (24, "trace.procs"), (28, "trace.procs"),
        (23, "trace.ckpt_gb"), (30, "trace.ckpt_interval"),
        (31, "trace.time"), (32, "trace.time"), (33, "trace.procs"),
    )
}


# Fields a real log fills (SWF 1-18, the imported 32-40; 0-based): a value outside the
# usual range is kept as given and counted (Trace.unusual), as archive logs mark "unknown"
# or "unlimited" with -1, -2 or 2147483647 in any field; only a magnitude beyond 2^53,
# where whole seconds stop being exact, is still an error. The schedd extension's fields
# 19-31 drive the engine's mechanics (checkpoint intervals, notices, setup) and are
# written by schedd's own tools: their ranges stay errors.
KEPT_FIELDS = frozenset(i for i in _FIELD_LIMITS if i < N_SWF or i >= N_CWF)


def _range_problem(i: int, toks: list[bytes]) -> str:
    limit = _FIELD_LIMITS[i]
    return (f"expected {limit.describe()} in field {i + 1} ({_FIELD_NAMES[i]}), found "
            f"{_show(toks[i])}")


def _check_limits(values: list[float], toks: list[bytes], unusual: list[int] | None) -> None:
    """Raise _LineError for the first field of a parsed line outside its limits, or, with
    `unusual`, note the fields of KEPT_FIELDS whose value is outside but within 2^53."""
    for i, limit in _FIELD_LIMITS.items():
        if i < len(toks) and not limit.accepts(values[i]):
            if unusual is None or i not in KEPT_FIELDS:
                raise _LineError(_range_problem(i, toks))
            if abs(values[i]) > MAX_EXACT_INT:
                raise _LineError(f"expected a number of magnitude at most 2^53 in field "
                                 f"{i + 1} ({_FIELD_NAMES[i]}), found {_show(toks[i])}")
            unusual.append(i)


def _outside(col: np.ndarray, limit: limits.Limit) -> np.ndarray:
    ok = (col >= limit.low) & (col <= limit.high)
    if limit.low_open:
        ok &= col > limit.low
    for value in limit.absent:
        ok |= col == value
    return ~ok


def _block_within_limits(block: np.ndarray, strict: bool = False) -> bool:
    """The fast path's version of _check_limits: False sends the chunk to the line parser.
    Unless `strict`, fields of KEPT_FIELDS need only be within 2^53 (_unusual_in_block
    counts the rest)."""
    nfields = block.shape[1]
    for i, limit in _FIELD_LIMITS.items():
        if i >= nfields:
            continue
        col = block[:, i]
        if not strict and i in KEPT_FIELDS:
            if (np.abs(col) > MAX_EXACT_INT).any():
                return False
        elif _outside(col, limit).any():
            return False
    return True


def _unusual_in_block(block: np.ndarray) -> dict[int, tuple[int, float, float]]:
    """0-based field -> (count, lowest, highest) of the values outside their usual range."""
    out = {}
    nfields = block.shape[1]
    for i in sorted(KEPT_FIELDS):
        if i >= nfields:
            continue
        col = block[:, i]
        odd = _outside(col, _FIELD_LIMITS[i])
        if odd.any():
            values = col[odd]
            out[i] = (int(odd.sum()), float(values.min()), float(values.max()))
    return out


_YEAR = 365.25 * 86400
_SECONDS_FIELDS = frozenset({1, 2, 3, 5, 8, 17, 31, 32})


def unusual_line(trace: Trace) -> str | None:
    """One sentence on the values kept as given outside their usual ranges, or None."""
    if not trace.unusual:
        return None
    parts = []
    for f, (n, lo, hi) in trace.unusual.items():
        shown = _value_text(f - 1, lo) if lo == hi else \
            f"{_value_text(f - 1, lo)} to {_value_text(f - 1, hi)}"
        parts.append(f"{n:,} in field {f} ({_FIELD_NAMES[f - 1]}): {shown}")
    total = sum(n for n, _, _ in trace.unusual.values())
    what = "value" if total == 1 else "values"
    return (f"{total:,} {what} of {os.path.basename(trace.path)} outside the usual range of "
            f"{'its' if total == 1 else 'their'} field, kept as given (--strict refuses "
            f"them): " + "; ".join(parts))


def _value_text(i: int, value: float) -> str:
    text = _format_number(value)
    if i in _SECONDS_FIELDS:
        text += " s"
        if abs(value) >= _YEAR:
            text += f" ({abs(value) / _YEAR:,.0f} years)"
    return text


def header_problem(lines: list[str]) -> tuple[str, str] | None:
    """(the first header line whose MaxNodes or MaxProcs value is out of range or not a
    whole number, why), or None. Values <= 0 mean "unknown", as in parse_header."""
    seen: set[str] = set()
    for line in lines:
        m = _HEADER_KEY.fullmatch(line)
        key = m.group(1).lower() if m else ""
        if key not in _HEADER_LIMITS or key in seen:
            continue
        seen.add(key)
        text = m.group(2) if m else ""
        limit = limits.LIMITS[_HEADER_LIMITS[key]]
        try:
            value = float(text)
        except ValueError:
            continue  # not a number at all: unusable, read as absent (parse_header)
        if value <= 0:
            continue  # the reader's "absent"
        if not limit.accepts(value) or not value.is_integer():
            return line, (f"expected {_HEADER_FIELDS[key]} to be {limit.describe()}, "
                          f"found {text!r}")
    return None


_HEADER_LIMITS = {"maxnodes": "header.max_nodes", "maxprocs": "header.max_procs"}


def _comment_line_number(raw: bytes, line: str) -> int | None:
    """1-based number of the first line of `raw` that is `line` (error path only)."""
    target = line.encode("utf-8", "surrogateescape")
    for lineno, text in enumerate(raw.split(b"\n"), start=1):
        if text.rstrip(b"\r") == target:
            return lineno
    return None


def _parse_number(tok: bytes, i: int) -> float:
    where = f"field {i + 1} ({_FIELD_NAMES[i]})"
    if not _NUMBER.fullmatch(tok):
        raise _LineError(f"expected a number in {where}, found {_show(tok)}")
    value = float(tok)
    if not math.isfinite(value):
        raise _LineError(f"expected a finite number in {where}, found {_show(tok)}")
    if i in _INT_FIELDS and not (value.is_integer() and abs(value) <= MAX_EXACT_INT):
        raise _LineError(f"expected an integer in {where}, found {_show(tok)}")
    return value


def _parse_kind(tok: bytes) -> str:
    text = tok.decode("ascii", "replace")
    if text in ECC_KINDS:
        return text
    if text == "S" or _is_minus_one(tok):
        return "S"
    raise _LineError(
        f"expected a request type S, ET, RT, EP or RP (or -1) in field 20, found {_show(tok)}"
    )


def _parse_class(tok: bytes) -> float:
    text = tok.decode("ascii", "replace")
    if len(text) == 1 and text in CLASS_LETTERS:
        return float(CLASS_LETTERS.index(text))
    if _is_minus_one(tok):
        return 0.0
    raise _LineError(
        f"expected a job class letter B, R, O, M or D (or -1) in field 22, found {_show(tok)}"
    )


def _is_minus_one(tok: bytes) -> bool:
    return bool(_NUMBER.fullmatch(tok)) and float(tok) == -1.0


def _show(tok: bytes) -> str:
    return repr(tok.decode("utf-8", "replace"))


def _show_number(value: float) -> str:
    return repr(_format_number(value))


class _ColumnBuilder:
    """Fills preallocated columns block by block.

    Optional columns (fields 19-40) are only allocated once a value other than "absent"
    shows up; a column that never gets one ends as a read-only constant array.
    """

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.n = 0
        self.arrays: dict[str, np.ndarray | None] = {
            c.name: (_new_column(c, capacity) if c.field < N_SWF else None) for c in COLUMNS
        }

    def add(self, block: np.ndarray) -> None:
        m, nfields = block.shape
        lo, hi = self.n, self.n + m
        for col in COLUMNS:
            if col.field >= nfields:
                continue
            values = block[:, col.field]
            arr = self.arrays[col.name]
            if arr is None:
                if (values == _absent_code(col)).all():
                    continue
                arr = self.arrays[col.name] = _new_column(col, self.capacity)
            arr[lo:hi] = _CLASS_ARRAY[values.astype(np.intp)] if col.kind == "c" else values
        self.n = hi

    def view(self, name: str) -> np.ndarray:
        arr = self.arrays[name]
        assert arr is not None
        return arr[: self.n]

    def finish(self) -> dict[str, np.ndarray]:
        out = {}
        for col in COLUMNS:
            arr = self.arrays[col.name]
            if arr is None:
                out[col.name] = absent_column(col.name, self.n)
            else:
                arr.resize((self.n,), refcheck=False)  # in place: no second copy
                out[col.name] = arr
        return out


def _absent_code(col: _Column) -> float:
    return 0.0 if col.kind == "c" else -1.0


def _new_column(col: _Column, n: int) -> np.ndarray:
    if col.kind == "c":
        return np.full(n, "B", dtype="<U1")
    return np.full(n, -1, dtype=np.int64 if col.kind == "i" else np.float64)


def absent_column(name: str, n: int) -> np.ndarray:
    """A read-only column of n "absent" values (-1, class B) that takes no memory."""
    col = next(c for c in COLUMNS if c.name == name)
    return np.broadcast_to(_new_column(col, 1), (n,))


def parse_header(lines: list[str]) -> TraceHeader:
    """MaxNodes, MaxProcs and UnixStartTime from `; Key: value` lines (first one wins),
    and the names from the well-formed `; schedd-names` lines (the reader has refused or
    dropped the others)."""
    found: dict[str, int | None] = {}
    for line in lines:
        m = _HEADER_KEY.fullmatch(line)
        if m and m.group(1).lower() in _HEADER_FIELDS and m.group(1).lower() not in found:
            found[m.group(1).lower()] = _header_int(m.group(2))
    positive = {k: v if v is not None and v > 0 else None for k, v in found.items()}
    return TraceHeader(
        max_nodes=positive.get("maxnodes"),
        max_procs=positive.get("maxprocs"),
        unix_start_time=found.get("unixstarttime"),
        lines=list(lines),
        names=parse_names(lines)[0],
    )


_HEADER_FIELDS = {"maxnodes": "MaxNodes", "maxprocs": "MaxProcs", "unixstarttime": "UnixStartTime"}


def _header_int(text: str) -> int | None:
    return int(float(text)) if _HEADER_INT.fullmatch(text) else None


# ----------------------------------------------------------------------------- writing


def write_trace(path: str | os.PathLike[str], trace: Trace) -> None:
    """Write `trace` as SWF (18 fields), or 31 fields if any field 19-31 or ECC is used,
    or 40 if any field 32-40 is (line_width).

    Header comment lines come first, then the job lines in column order, then the ECC
    lines in list order (so every ECC follows its job's submission). gzip if .gz. The
    file takes its name only once complete, and missing folders above it are made.
    """
    name = os.fsdecode(path)
    n = len(trace)
    width = line_width(trace)
    lines = [line + "\n" for line in _header_lines(trace.header)]
    fields = [_format_column(trace.columns, col, n) for col in COLUMNS if col.field < width]
    if width > N_SWF:
        fields[TYPE_FIELD:TYPE_FIELD] = [["S"] * n, ["-1"] * n]
    lines.extend(" ".join(row) + "\n" for row in zip(*fields, strict=True))
    lines.extend(_ecc_line(e, width) + "\n" for e in trace.eccs)
    data = "".join(lines).encode("utf-8", "surrogateescape")
    if name.endswith(".gz"):
        import gzip

        data = gzip.compress(data, compresslevel=6, mtime=0)  # 9 is much slower, ~same size
    from ..outputs import staged_file  # written aside, renamed when whole (issue 34)

    with staged_file(name) as part, open(part, "wb") as f:
        f.write(data)


def uses_extension(trace: Trace) -> bool:
    """True if any job uses a field beyond 18 (or there are ECCs): write 31 or 40 fields."""
    return line_width(trace) > N_SWF


def line_width(trace: Trace) -> int:
    """Fields per job line written: 18 (plain SWF), 31 if any job uses a field 19-31 or
    there are ECCs, 40 if any job uses a field 32-40. A trace of the first two kinds is
    written exactly as before fields 32-40 existed."""
    used = [col.field for col in COLUMNS
            if col.field >= N_SWF and col.name in trace.columns and _used(trace, col)]
    if any(f >= N_CWF for f in used):
        return N_MAX
    return N_CWF if used or trace.eccs else N_SWF


def _used(trace: Trace, col: _Column) -> bool:
    values = np.asarray(trace.columns[col.name])
    return bool((values != ("B" if col.kind == "c" else -1)).any())


def _header_lines(header: TraceHeader) -> list[str]:
    """header.lines, with the MaxNodes/MaxProcs/UnixStartTime lines matching its fields,
    and one names line per kind of header.names (replaced where that kind has a line,
    else appended; kinds not in header.names leave their lines alone)."""
    lines = _names_lines(list(header.lines or []), header.names)
    wanted = {
        "maxnodes": header.max_nodes,
        "maxprocs": header.max_procs,
        "unixstarttime": header.unix_start_time,
    }
    current = parse_header(lines)
    have = {
        "maxnodes": current.max_nodes,
        "maxprocs": current.max_procs,
        "unixstarttime": current.unix_start_time,
    }
    for key, value in wanted.items():
        if value is None or have[key] == value:
            continue
        text = f"; {_HEADER_FIELDS[key]}: {value}"
        index = _header_line_index(lines, key)
        if index is None:
            lines.append(text)
        else:
            lines[index] = text
    return lines


def _names_lines(lines: list[str], names: dict[str, dict[int, str]]) -> list[str]:
    if not names:
        return lines
    written: dict[str, str | None] = {
        kind: names_line(kind, mapping) for kind, mapping in names.items()
    }
    out = []
    for line in lines:
        kind = _names_kind(line)
        if kind is None or kind not in written:
            out.append(line)
            continue
        text = written.pop(kind)
        if text is not None:
            out.append(text)
        written[kind] = None  # a second line of that kind is dropped
    out.extend(text for text in written.values() if text is not None)
    return out


def _names_kind(line: str) -> str | None:
    """The kind of a names line (well-formed or not, as far as it can be told), or None."""
    if not is_names_line(line):
        return None
    rest = line.split("schedd-names", 1)[1]
    kind = rest.split(":", 1)[0].strip()
    return kind or None


def _header_line_index(lines: list[str], key: str) -> int | None:
    for i, line in enumerate(lines):
        m = _HEADER_KEY.fullmatch(line)
        if m and m.group(1).lower() == key:
            return i
    return None


def _format_column(columns: dict[str, np.ndarray], col: _Column, n: int) -> list[str]:
    given = columns.get(col.name)
    values = absent_column(col.name, n) if given is None else np.asarray(given)
    if n and (values.strides == (0,) or (values == values[0]).all()):  # e.g. all -1
        return [_format_value(values[0], col)] * n
    if col.kind == "c":
        return [str(v) for v in values.tolist()]
    if col.kind == "i":
        return list(map(str, values.astype(np.int64).tolist()))
    whole = (values == np.trunc(values)) & (np.abs(values) <= MAX_EXACT_INT)
    if whole.all():
        return list(map(str, values.astype(np.int64).tolist()))
    return list(map(_format_number, values.tolist()))


def _format_value(value: Any, col: _Column) -> str:
    if col.kind == "c":
        return str(value)
    if col.kind == "i":
        return str(int(value))
    return _format_number(float(value))


def _format_number(value: float) -> str:
    """Whole numbers without a decimal point; others in the shortest exact form."""
    if value.is_integer() and abs(value) <= MAX_EXACT_INT:
        return str(int(value))
    return repr(value)


def _ecc_line(ecc: EccCommand, width: int) -> str:
    fields = ["-1"] * width
    fields[0] = str(int(ecc.job_id))
    fields[1] = _format_number(float(ecc.time))
    fields[TYPE_FIELD] = ecc.kind
    fields[AMOUNT_FIELD] = _format_number(float(ecc.amount))
    return " ".join(fields)
