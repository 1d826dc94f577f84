"""Output paths: checked before the work, so that an unwritable `--out` is one sentence at
the start, not a traceback (or lost work) at the end; and written so that a command that
fails (an error, Ctrl-C) creates nothing (issue 34): files and folders are written under
a hidden temporary name and take their own name only when complete, and a failure removes
what it made, never what was there before. Imports nothing from schedd."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator


class UsageError(Exception):
    """A command line that cannot work: an unwritable output, a missing input (one
    sentence)."""


def writable_dir(path: str) -> str:
    """`path` can be made, or written to; UsageError naming it otherwise. Only a probe:
    what it makes to find out (the folder, its parents) it removes again, so that a
    command that fails later leaves nothing behind (the writer makes the folder)."""
    made: list[str] = []
    try:
        made = make_parents(os.path.join(path, "x"))  # `path` and the folders above it
        probe = os.path.join(path, f".schedd-write-test-{os.getpid()}")
        with open(probe, "w"):
            pass
        os.remove(probe)
    except OSError as err:
        raise UsageError(f"cannot write to the output directory {path} "
                         f"({err.strerror or err})") from None
    finally:
        remove_empty(made)
    return path


def writable_file(path: str) -> str:
    """`path`'s directory exists, or can be made, and takes files; UsageError otherwise.
    Makes nothing that stays (see writable_dir)."""
    if os.path.isdir(path):
        raise UsageError(f"cannot write {path}: it is a directory")
    try:
        writable_dir(os.path.dirname(path) or ".")
    except UsageError as err:
        why = str(err).rpartition(" (")[2].rstrip(")")
        raise UsageError(f"cannot write {path} ({why})") from None
    return path


def make_parents(path: str) -> list[str]:
    """Make the missing folders above `path`; returns them, outermost first (for
    remove_empty). On an error, removes those it made and raises it."""
    missing = []
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(parent):
        missing.append(parent)
        parent = os.path.dirname(parent)
    made: list[str] = []
    try:
        for folder in reversed(missing):
            os.mkdir(folder)
            made.append(folder)
    except BaseException:
        remove_empty(made)
        raise
    return made


def remove_empty(made: list[str]) -> None:
    """Remove the folders of `made` (outermost first), innermost first, each only while
    empty: one that something else wrote in meanwhile stays."""
    for folder in reversed(made):
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def _hidden(folder: str, name: str) -> str:
    """A new hidden name in `folder` ending in `name` (so that `.gz` stays `.gz`)."""
    n = 0
    while True:
        candidate = os.path.join(folder, f".partial-{os.getpid()}-{n}-{name}")
        if not os.path.lexists(candidate):
            return candidate
        n += 1


@contextlib.contextmanager
def staged_dir(path: str) -> Iterator[str]:
    """The folder to write the output folder `path` in: a new hidden sibling, renamed to
    `path` when the block ends without an error; when `path` is a folder already, a
    hidden folder inside it, whose files then replace theirs one by one. On an error it
    is removed, with any parent folder made for it, and `path` is as it was. Making it is
    the check that `path` can be written: UsageError naming it otherwise."""
    target = os.path.abspath(path)
    existed = os.path.isdir(target)
    made: list[str] = []
    try:
        if os.path.lexists(target) and not existed:
            raise NotADirectoryError(20, "Not a directory")
        made = [] if existed else make_parents(target)
        tmp = _hidden(target, "out") if existed else _hidden(os.path.dirname(target),
                                                              os.path.basename(target))
        os.mkdir(tmp)
    except OSError as err:
        remove_empty(made)
        raise UsageError(f"cannot write to the output directory {path} "
                         f"({err.strerror or err})") from None
    try:
        yield tmp
        if existed or not _rename_new(tmp, target):
            _merge(tmp, target)
            os.rmdir(tmp)
    except BaseException:
        import shutil  # only on a failure: it imports zlib, bz2 and lzma

        shutil.rmtree(tmp, ignore_errors=True)
        remove_empty(made)
        raise


def _rename_new(tmp: str, target: str) -> bool:
    """Rename `tmp` to `target`; False when a folder of that name appeared meanwhile."""
    try:
        os.rename(tmp, target)
    except OSError:
        if os.path.isdir(target):
            return False
        raise
    return True


def _merge(src: str, dst: str) -> None:
    """Move everything in `src` into the folder `dst`, replacing files of the same name."""
    for name in os.listdir(src):
        a, b = os.path.join(src, name), os.path.join(dst, name)
        if os.path.isdir(a) and not os.path.islink(a) and os.path.isdir(b):
            _merge(a, b)
            os.rmdir(a)
        else:
            os.replace(a, b)


@contextlib.contextmanager
def staged_file(path: str | os.PathLike[str]) -> Iterator[str]:
    """Where to write the output file `path`: a hidden sibling with the same ending that
    replaces `path` when the block ends without an error, so that no half-written file
    takes its name; on an error it is removed, with any folder made for it. A path that
    is not a regular file (a FIFO, /dev/stdout) is written directly."""
    name = os.fsdecode(path)
    real = os.path.realpath(name)  # a symbolic link is written through, not replaced
    if os.path.exists(real) and not stat.S_ISREG(os.stat(real).st_mode):
        yield name
        return
    mode = os.stat(real).st_mode if os.path.exists(real) else None
    made = make_parents(real)
    tmp = _hidden(os.path.dirname(real), os.path.basename(real))
    try:
        yield tmp
        if mode is not None:  # the file it replaces keeps its permissions
            os.chmod(tmp, stat.S_IMODE(mode))
        os.replace(tmp, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        remove_empty(made)
        raise
