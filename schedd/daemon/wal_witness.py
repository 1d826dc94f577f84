"""SQLite's own index of the write-ahead log, read as a witness of what the log held.

After a crash (kill -9; a clean stop folds the log into the file and removes both),
SQLite leaves `FILE-shm`, its wal-index. Its header (two copies, checksummed) records the
last committed frame of the log (`mxFrame`), the salts of the log's generation, that
frame's checksum, and how many frames were already copied into the file (`nBackfill`).
The next connection to open the journal throws that index away and rebuilds it from the
log, silently stopping at the first frame that does not check out: a log cut in half
loses its tail without a word (issue 34). Read before any connection opens the journal,
the index says what the log must still hold: every frame up to `mxFrame`, each with a
valid checksum chain, the last one with the checksum the index recorded. So a truncated
or damaged log is caught even without `FILE-acked`.

Formats: https://sqlite.org/fileformat2.html#the_write_ahead_log and
https://sqlite.org/walformat.html (stable since SQLite 3.7.0). Nothing here writes.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

import numpy as np

INDEX_VERSION = 3007000
WAL_MAGIC = (0x377F0682, 0x377F0683)  # checksums over little- / big-endian words
WAL_HEADER = 32
FRAME_HEADER = 24
# iVersion, unused, iChange, isInit, bigEndCksum, szPage, mxFrame, nPage, aFrameCksum[2],
# aSalt (raw bytes of the log header), aCksum[2]: native byte order.
_INDEX = struct.Struct("=IIIBBHIIII8sII")
_BACKFILL = struct.Struct("=I")  # WalCkptInfo.nBackfill, after the two header copies
_CHUNK = 1024  # frames checked at once


@dataclass(frozen=True)
class WalIndex:
    """The header of a `-shm` file that passed SQLite's own validity test."""

    page_size: int
    last_frame: int  # mxFrame: the last frame of the last committed transaction
    frame_checksum: tuple[int, int]
    salt: bytes
    backfilled: int  # nBackfill: frames already copied into the database file


def read_index(shm: str) -> WalIndex | None:
    """The wal-index header of `shm`, or None when it is missing or not valid (SQLite
    then rebuilds it from the log; it witnesses nothing)."""
    try:
        with open(shm, "rb") as f:
            data = f.read(136)
    except OSError:
        return None
    if len(data) < 100 or data[:48] != data[48:96]:
        return None
    (version, _, _, is_init, _, size_code, last, _, ck0, ck1, salt, sum0,
     sum1) = _INDEX.unpack(data[:48])
    native = "<" if struct.pack("=I", 1) == struct.pack("<I", 1) else ">"
    if (version != INDEX_VERSION or is_init != 1
            or _checksum(data[:40], native, (0, 0)) != (sum0, sum1)):
        return None
    page_size = (size_code & 0xFE00) + ((size_code & 0x0001) << 16)
    backfilled = _BACKFILL.unpack(data[96:100])[0]
    return WalIndex(page_size, last, (ck0, ck1), salt, min(backfilled, last))


def _checksum(data: bytes, order: str, seed: tuple[int, int]) -> tuple[int, int]:
    """SQLite's log checksum (walChecksumBytes), for a few words."""
    s0, s1 = seed
    words = np.frombuffer(data, dtype=f"{order}u4").tolist()
    for a, b in zip(words[0::2], words[1::2], strict=True):
        s0 = (s0 + a + s1) & 0xFFFFFFFF
        s1 = (s1 + b + s0) & 0xFFFFFFFF
    return s0, s1


def log_problem(path: str) -> str | None:
    """What is wrong with the journal's write-ahead log against the index SQLite left
    next to it, in a sentence; None when the index is missing or invalid, or the log
    holds every frame the index records."""
    index = read_index(f"{path}-shm")
    if index is None or index.last_frame == 0:
        return None
    pending = index.last_frame - index.backfilled  # committed, not yet in the file
    wal, shm = f"{os.path.basename(path)}-wal", f"{os.path.basename(path)}-shm"
    try:
        with open(f"{path}-wal", "rb") as f:
            header = f.read(WAL_HEADER)
            valid = _valid_frames(f, header, index)
    except FileNotFoundError:
        header, valid = b"", -1
    if valid is None:  # not a log of this generation: SQLite would ignore it or misapply it
        if not header:
            if pending == 0:
                return None  # every committed frame is in the file already
            return (f"its write-ahead log {wal} is missing or empty but SQLite's index "
                    f"of it ({shm}) records {pending} committed frames not yet copied "
                    "into the file")
        return (f"its write-ahead log {wal} is not the log SQLite's index of it ({shm}) "
                f"records ({index.last_frame} committed frames): it was replaced or its "
                "header is damaged")
    if valid == -1:
        if pending == 0:
            return None
        return (f"its write-ahead log {wal} is missing but SQLite's index of it ({shm}) "
                f"records {pending} committed frames not yet copied into the file")
    if valid < index.last_frame:
        return (f"its write-ahead log {wal} was truncated or damaged: SQLite's index of it "
                f"({shm}) records {index.last_frame} committed frames, the log holds "
                f"{valid} valid ones")
    return None


def _valid_frames(f: object, header: bytes, index: WalIndex) -> int | None:
    """How many frames from the first check out (at most the index's last frame, and
    that one must carry the recorded checksum); None when the log's header is not valid
    or is of another generation than the index."""
    read = f.read  # type: ignore[attr-defined]
    if len(header) < WAL_HEADER:
        return None
    magic, _, page_size, _, _, _, sum0, sum1 = struct.unpack(">8I", header)
    if magic not in WAL_MAGIC or page_size != index.page_size:
        return None
    order = ">" if magic & 1 else "<"
    if _checksum(header[:24], order, (0, 0)) != (sum0, sum1) or header[16:24] != index.salt:
        return None
    frame = FRAME_HEADER + page_size
    pairs = (8 + page_size) // 8
    alpha, beta, (p, q, r, s) = _chain(pairs)
    mask = 0xFFFFFFFF
    s0, s1 = sum0, sum1
    checked = 0
    while checked < index.last_frame:
        n = min(_CHUNK, index.last_frame - checked)
        data = read(n * frame)
        whole = len(data) // frame
        if whole == 0:
            return checked
        frames = np.frombuffer(data[:whole * frame], dtype=np.uint8).reshape(whole, frame)
        words = np.concatenate([frames[:, :8], frames[:, FRAME_HEADER:]], axis=1)
        words = np.ascontiguousarray(words).view(f"{order}u4").astype(np.uint64)
        # The checksum is linear in the words: each frame's part in one product.
        part = ((words[:, 0::2] @ alpha.T + words[:, 1::2] @ beta.T)
                & np.uint64(mask)).tolist()
        stored = np.ascontiguousarray(frames[:, 16:24]).view(">u4").tolist()
        salts_ok = (frames[:, 8:16] == np.frombuffer(index.salt, dtype=np.uint8)).all(axis=1)
        pages = np.ascontiguousarray(frames[:, :4]).view(">u4")[:, 0]
        good = (salts_ok & (pages != 0)).tolist()
        for i in range(whole):
            s0, s1 = (p * s0 + q * s1 + part[i][0]) & mask, (r * s0 + s * s1 + part[i][1]) & mask
            if not good[i] or [s0, s1] != stored[i]:
                return checked + i
        checked += whole
        if whole < n:
            return checked
    if (s0, s1) != index.frame_checksum:
        return checked - 1  # the last frame is not the one the index recorded
    return checked


_CHAINS: dict[int, tuple[np.ndarray, np.ndarray, tuple[int, int, int, int]]] = {}


def _chain(pairs: int) -> tuple[np.ndarray, np.ndarray, tuple[int, int, int, int]]:
    """The checksum over `pairs` word pairs as a linear map: (s0, s1) -> M^pairs (s0, s1)
    + sum_k M^(pairs-1-k) (a_k, a_k + b_k), M = [[1, 1], [1, 2]] (s0 += a + s1;
    s1 += b + s0), all modulo 2^32 (uint64 products wrap modulo 2^64, a multiple)."""
    if pairs not in _CHAINS:
        mask = 0xFFFFFFFF
        powers = [(1, 0, 0, 1)]
        for _ in range(pairs):
            p, q, r, s = powers[-1]
            powers.append(((p + r) & mask, (q + s) & mask, (p + 2 * r) & mask,
                           (q + 2 * s) & mask))
        rev = powers[pairs - 1::-1]  # M^(pairs-1-k) for k = 0 .. pairs-1
        alpha = np.array([[(m[0] + m[1]) & mask for m in rev],
                          [(m[2] + m[3]) & mask for m in rev]], dtype=np.uint64)
        beta = np.array([[m[1] for m in rev], [m[3] for m in rev]], dtype=np.uint64)
        _CHAINS[pairs] = (alpha, beta, powers[pairs])
    return _CHAINS[pairs]


def log_exists(path: str) -> bool:
    """A non-empty write-ahead log lies next to the journal."""
    try:
        return os.path.getsize(f"{path}-wal") > 0
    except OSError:
        return False
