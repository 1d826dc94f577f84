"""The text of a block of table rows, built a whole column at a time in NumPy.

The result files (jobs.swf, jobs.csv, segments.csv, timeseries.csv) are numbers and short
words. Formatting them cell by cell in Python cost over a quarter of a `schedd simulate`
run; here every column becomes a matrix of cells (one row per table row, uint8, NUL bytes
where a cell is shorter than the widest), the columns and separators are laid side by side
in one matrix, and the rows' text is that matrix with the NULs dropped (no cell holds one).
`join_rows` gives the bytes of a block of rows (a bytearray; UTF-8, a newline ending each).
The writers call it through schedd.row_text, whose C formatter makes the same bytes faster
where it is built: this module is its fallback and its reference.

Numbers are formatted as `column_text` formats them, byte for byte: integers as `str(int)`,
whole floats as integers, other floats with `f"{v:.3f}"`, a constant column from its first
value. What the vectorised path cannot prove exact (a rounding within a hair of a tie,
nan, inf, magnitudes of 2**53 and more, other dtypes) is formatted by `column_text`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

Cells = np.ndarray  # (rows, width) uint8: each row one cell's text, NUL bytes as padding

# Rows the writers format at a time. A block's cells, their side-by-side matrix and its
# text are each a few times the block's bytes; `schedd simulate` writes two files at once
# (sim.write_outputs), so the blocks of both are held together. At 65,536 rows a KTH run
# peaked at 80 MB with 18,000 page faults of fresh memory, at 16,384 at 68 MB with 15,000
# for 1% more instructions (docs/benchmarks.md); a million-job run at 801-815 MiB
# against 840-845.
BLOCK_ROWS = 16_384

_ZERO, _MINUS, _POINT, _NEWLINE = ord("0"), ord("-"), ord("."), ord("\n")
_POWERS_64 = np.array([10**k for k in range(1, 20)], dtype=np.uint64)
_NO_ROWS = np.empty(0, np.int64)
_EXACT = 2.0**53  # floats below this are exact integers when whole, with room for .3f


def fmt_number(value: float) -> str:
    """Integral values as integers, others with millisecond precision (deterministic)."""
    if value.is_integer():
        return str(int(value))
    return f"{value:.3f}"


def column_text(col: np.ndarray) -> list[str]:
    """A column as text, one Python string per cell: the reference `number_cells` follows,
    and its fallback for what it does not vectorise."""
    if len(col) > 1 and bool((col == col[0]).all()):  # all zeros, all -1 ...: format once
        return column_text(col[:1]) * len(col)
    if col.dtype.kind in "iu":
        return list(map(str, col.tolist()))
    if bool(np.all(np.floor(col) == col)):  # the common case: whole seconds
        return list(map(str, col.astype(np.int64).tolist()))
    return [fmt_number(v) for v in col.tolist()]


def number_cells(col: np.ndarray) -> Cells:
    """A numeric column's cells, the text `column_text` gives."""
    n = len(col)
    if n > 1 and bool((col == col[0]).all()):  # all zeros, all -1 ...: format once
        one = number_cells(col[:1])
        return np.broadcast_to(one, (n, one.shape[1]))
    if col.dtype.kind in "iu":
        return integer_cells(col)
    if col.dtype.kind != "f" or col.dtype.itemsize > 8:
        return string_cells(column_text(col))
    x = col.astype(np.float64, copy=False)
    if n and not float(np.abs(x).max()) < _EXACT:  # nan, inf or huge: as Python has it
        return string_cells(column_text(col))
    as_int = x.astype(np.int64)
    if bool((as_int == x).all()):  # the common case: whole seconds
        return integer_cells(as_int)
    return _fractional_cells(x)


def integer_cells(values: np.ndarray) -> Cells:
    """An integer column's cells, as `str(int)` writes them."""
    negative = values < 0
    if values.dtype.kind == "u" or not negative.any():
        return _decimal(values, None)
    magnitude = values.astype(np.uint64)
    np.negative(magnitude, out=magnitude, where=negative)  # modulo 2**64: right for -2**63
    return _decimal(magnitude, negative)


def _fractional_cells(x: np.ndarray) -> Cells:
    """Cells of a column with some non-integral values: `f"{v:.3f}"` for those, integers
    for the others. Thousandths are rounded from the exact fraction (|v| - floor|v| is
    exact below 2**52) times 1000; where that product lies within its rounding error of a
    tie (.5), NumPy's rounding might differ from Python's correctly rounded one, so those
    few values are formatted by Python."""
    magnitude = np.abs(x)
    whole = np.floor(magnitude)
    fraction = magnitude - whole
    thousandths = fraction * 1000.0
    rounded = np.rint(thousandths)
    near_tie = np.abs(thousandths - np.floor(thousandths) - 0.5) <= np.spacing(thousandths)
    carry = rounded == 1000.0  # 2.9996 -> 3.000
    milli = np.where(carry, 0.0, rounded).astype(np.uint16)
    cells = _decimal(whole.astype(np.uint64) + carry, x < 0, tail=4)
    tail = cells[:, -4:]
    tail[:, 0] = _POINT
    tail[:, 1] = milli // 100 + _ZERO
    tail[:, 2] = milli // 10 % 10 + _ZERO
    tail[:, 3] = milli % 10 + _ZERO
    tail[fraction == 0.0] = 0  # integral values have no decimals
    python = np.flatnonzero(near_tie & (fraction != 0.0))
    if len(python):
        cells = _put_rows(cells, python, [f"{v:.3f}" for v in x[python].tolist()])
    return cells


def _decimal(magnitude: np.ndarray, negative: np.ndarray | None, tail: int = 0) -> Cells:
    """Unsigned integers' decimal digits, right-aligned, with '-' before those negative
    (and `tail` columns after, left for the caller to fill)."""
    n = len(magnitude)
    top = int(magnitude.max()) if n else 0
    n_digits = len(str(top))
    minus = np.flatnonzero(negative) if negative is not None else _NO_ROWS
    lead = 1 if len(minus) else 0
    cells = np.empty((n, lead + n_digits + tail), np.uint8)
    cells[:, :lead] = 0
    # The narrowest type that holds the values: small integers divide several times faster.
    m: np.ndarray = magnitude.astype(np.min_scalar_type(top))
    for j in range(lead + n_digits - 1, lead - 1, -1):
        quotient = m // 10
        digit = m - quotient * 10 + _ZERO
        if j < lead + n_digits - 1:
            digit *= m != 0  # a leading zero: blank
        cells[:, j] = digit
        m = quotient
    if lead:  # '-' just before the first digit
        first = lead + n_digits - 1 - np.searchsorted(_POWERS_64, magnitude[minus], side="right")
        cells[minus, first - 1] = _MINUS
    return cells


def _put_rows(cells: Cells, rows: np.ndarray, texts: list[str]) -> Cells:
    """`cells` with the given rows replaced by texts (widened if one is wider)."""
    replacement = string_cells(texts)
    width = max(cells.shape[1], replacement.shape[1])
    if width > cells.shape[1]:
        cells = np.concatenate([np.zeros((len(cells), width - cells.shape[1]), np.uint8),
                                cells], axis=1)
    cells[rows] = 0
    cells[rows, :replacement.shape[1]] = replacement
    return cells


def string_cells(texts: Sequence[str]) -> Cells:
    """Short strings' cells (padded to the longest: for numbers' fallback and words)."""
    encoded = [t.encode() for t in texts]
    width = max(map(len, encoded), default=0)
    if any(b"\0" in e for e in encoded):
        raise ValueError("a cell of text holds a NUL byte")
    return np.array(encoded, dtype=f"S{max(width, 1)}").view(np.uint8).reshape(
        len(encoded), max(width, 1))[:, :width]


def constant_cells(text: str, n: int) -> Cells:
    """The same text in every one of n rows."""
    return np.broadcast_to(string_cells([text]), (n, len(text.encode())))


def word_cells(codes: np.ndarray, words: Sequence[str]) -> Cells:
    """Cells of words from a small vocabulary, by code (words[code], as Python indexes)."""
    return string_cells(words)[codes]


class Text(NamedTuple):
    """Cells of text of any length (interval sets of node numbers): their UTF-8 bytes end
    to end and each one's length, so that a few long cells do not widen every row."""
    data: np.ndarray  # uint8
    lengths: np.ndarray  # int64, one per cell


def text_cells(texts: Sequence[str]) -> Text:
    """Cells of any strings (without NUL), one per row."""
    joined = "".join(texts)
    if joined.isascii():  # one encode; a character is a byte
        data = joined.encode("ascii")
        lengths = np.fromiter(map(len, texts), np.int64, len(texts))
    else:
        encoded = [t.encode() for t in texts]
        data = b"".join(encoded)
        lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
    if b"\0" in data:
        raise ValueError("a cell of text holds a NUL byte")
    return Text(np.frombuffer(data, np.uint8), lengths)



def interval_set_cells(flat: Sequence[int] | np.ndarray, counts: Sequence[int] | np.ndarray
                       ) -> Text:
    """Segments' node ranges as run_files.interval_set writes them ("0-3 8 10-11"), made for a
    block of segments at once: `flat` holds every range [lo, hi) of the block end to
    end, `counts` how many ranges each segment has (node_numbers.LowestFirst.place)."""
    # np.array, not fromiter: for a list of ints it is about a third faster.
    bounds = np.array(flat, dtype=np.int64).reshape(-1, 2)
    per_segment = np.array(counts, dtype=np.int64)
    if not len(bounds):
        return Text(np.empty(0, np.uint8), np.zeros(len(counts), np.int64))
    lo, last = bounds[:, 0], bounds[:, 1] - 1
    one_node = lo == last
    firsts, lasts = integer_cells(lo), integer_cells(last)
    lasts[one_node] = 0
    # A range's text: its first node, "-" and its last unless one node, and a blank
    # unless it is its segment's last range; NULs where a part is left out.
    ends_at = np.cumsum(per_segment)  # where each segment's ranges end among all ranges
    closes = np.zeros(len(bounds), bool)
    closes[ends_at[per_segment > 0] - 1] = True
    pieces = np.concatenate([
        firsts, np.where(one_node, 0, ord("-")).astype(np.uint8)[:, None], lasts,
        np.where(closes, 0, ord(" ")).astype(np.uint8)[:, None]], axis=1)
    data = pieces[pieces != 0]
    # Each segment's text ends where its last range's does.
    ends = np.r_[0, np.cumsum(np.count_nonzero(pieces, axis=1))]
    return Text(data, np.diff(ends[np.r_[0, ends_at]]))


def join_rows(columns: Sequence[Cells | Text], sep: bytes) -> bytearray:
    """The rows' text: cells separated by `sep` (one byte), each row ended by a newline."""
    if len(sep) != 1 or sep in (b"\0", b"\n"):
        raise ValueError(f"separator must be one byte other than NUL and newline: {sep!r}")
    if not columns:
        return bytearray()
    n = len(columns[0].lengths) if isinstance(columns[0], Text) else len(columns[0])
    if not n:
        return bytearray()
    rows = np.arange(n)
    long = _long_rows(columns, rows)
    if long is None:
        # translate drops the NULs in a third less time than a boolean index (jobs.csv
        # of KTH: 3.0 against 4.7 ms), and the rows are laid out in a bytearray's own
        # memory, so no copy is made for it.
        return _side_by_side(columns, sep[0], rows)[0].translate(None, b"\0")
    return bytearray(_merge(long, _join(columns, sep[0], rows[~long]),
                            _join(columns, sep[0], rows[long]))[0])


def _long_rows(columns: Sequence[Cells | Text], rows: np.ndarray) -> np.ndarray | None:
    """Text columns are padded to their longest cell. Where that would waste much (a few
    cells far longer than the rest), the rows of longest text (fewer than one in 8) are
    joined apart, recursively, and the two parts put back in row order: the padding then
    stays within about 8 times the text, whatever the lengths. Those rows (a mask), or
    None where padding is fine."""
    text_len = sum((c.lengths[rows] for c in columns if isinstance(c, Text)),
                   np.zeros(len(rows), np.int64))
    n = len(rows)
    longest = int(text_len.max())
    if n * longest <= 8 * int(text_len.sum()) + 64 * n:
        return None
    k = -(-n // 8)
    cap = np.partition(text_len, n - k)[n - k]  # < longest, else padding would pass
    return text_len > cap


def _join(columns: Sequence[Cells | Text], sep: int, rows: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray]:
    """The text of the given rows and where each row's text ends in it."""
    long = _long_rows(columns, rows)
    if long is not None:
        return _merge(long, _join(columns, sep, rows[~long]), _join(columns, sep, rows[long]))
    full = _side_by_side(columns, sep, rows)[1]
    keep = full != 0
    # A boolean index, not np.compress: as fast here, without compress's int64 index of
    # every byte kept (8 times the text).
    return full[keep], np.cumsum(keep.sum(axis=1))


def _side_by_side(columns: Sequence[Cells | Text], sep: int, rows: np.ndarray
                  ) -> tuple[bytearray, Cells]:
    """The rows' cells and separators side by side, NUL-padded, a newline ending each:
    a bytearray, and the matrix its memory holds."""
    n = len(rows)
    between, end = (np.broadcast_to(np.uint8(b), (n, 1)) for b in (sep, _NEWLINE))
    parts = [between] * (2 * len(columns) - 1) + [end]
    parts[::2] = [_rows_of(c, rows) for c in columns]
    text = bytearray(n * sum(part.shape[1] for part in parts))
    full = np.frombuffer(text, np.uint8).reshape(n, -1)
    np.concatenate(parts, axis=1, out=full)
    return text, full


def _rows_of(column: Cells | Text, rows: np.ndarray) -> Cells:
    """The given rows of a column as padded cells."""
    if not isinstance(column, Text):
        return column if len(rows) == len(column) else column[rows]
    every = len(rows) == len(column.lengths)
    lengths = column.lengths[rows]
    width = int(lengths.max(initial=0))
    cells = np.zeros((len(rows), width), np.uint8)
    ends = np.cumsum(lengths)
    begins = ends - lengths  # where each cell begins in the chosen cells' bytes end to end
    along = np.arange(int(ends[-1]) if len(ends) else 0)
    data = column.data
    if not every:
        starts = (np.cumsum(column.lengths) - column.lengths)[rows]
        data = data[np.repeat(starts - begins, lengths) + along]
    # Byte k of cell i goes to cells[i, k - begins[i]]: one scatter for all of them.
    cells.ravel()[np.repeat(np.arange(len(rows)) * width - begins, lengths) + along] = data
    return cells


def _merge(second: np.ndarray, first_part: tuple[np.ndarray, np.ndarray],
           second_part: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Two parts' rows back in row order (`second` marks the rows the second part holds),
    and where each row ends."""
    parts = (first_part, second_part)
    row_end = [np.r_[0, ends] for _, ends in parts]
    change = np.flatnonzero(second[1:] != second[:-1]) + 1
    bounds = np.r_[0, change, len(second)].tolist()
    taken = [0, 0]
    pieces = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        side = int(second[lo])
        a = taken[side]
        pieces.append(parts[side][0][row_end[side][a]:row_end[side][a + hi - lo]])
        taken[side] = a + hi - lo
    data = np.concatenate(pieces)
    lengths = np.empty(len(second), np.int64)
    for side, (_, ends) in enumerate(parts):
        lengths[second == bool(side)] = np.diff(np.r_[0, ends])
    return data, np.cumsum(lengths)
