"""Output paths checked before the work, so that an unwritable `--out` is one sentence at
the start, not a traceback (or lost work) at the end. Imports nothing from schedd."""

from __future__ import annotations

import os


class UsageError(Exception):
    """A command line that cannot work: an unwritable output, a missing input (one
    sentence)."""


def writable_dir(path: str) -> str:
    """`path`, created if needed; UsageError naming it if it cannot be written to."""
    try:
        os.makedirs(path, exist_ok=True)
        probe = os.path.join(path, ".schedd-write-test")
        with open(probe, "w"):
            pass
        os.remove(probe)
    except OSError as err:
        raise UsageError(f"cannot write to the output directory {path} "
                         f"({err.strerror or err})") from None
    return path


def writable_file(path: str) -> str:
    """`path`'s directory exists (or is made) and takes files; UsageError otherwise."""
    if os.path.isdir(path):
        raise UsageError(f"cannot write {path}: it is a directory")
    try:
        writable_dir(os.path.dirname(path) or ".")
    except UsageError as err:
        why = str(err).rpartition(" (")[2].rstrip(")")
        raise UsageError(f"cannot write {path} ({why})") from None
    return path
