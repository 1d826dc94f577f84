"""One daemon per journal: an advisory lock on `FILE-lock`, held for the process's life.

`flock` on a file next to the journal (not on the journal itself, which SQLite locks with
POSIX record locks of its own). The kernel drops the lock when the process ends, however
it ends (`kill -9` included), so a stale lock never blocks a restart. The daemon takes it
exclusively and, once the journal passed its check, writes its pid into the file (for a
refusal's sentence); `schedd journal
check|export` take it shared, to know that no daemon is writing (else they look at the
live journal as a reader among others), and `compact` exclusively. The file is left in
place: removing a lock file races with the next process opening it. Local file systems
only (on NFS `flock` may not reach other hosts).
"""

from __future__ import annotations

import contextlib
import fcntl
import os


def lock_path(path: str) -> str:
    return f"{path}-lock"


class LockHeld(RuntimeError):
    """Another process holds the journal's lock (one sentence, naming it if known)."""

    def __init__(self, path: str, pid: int | None):
        self.pid = pid
        who = (f"process {pid}" if pid else
               "another process (a daemon or a `schedd journal` command)")
        super().__init__(f"the journal {path} is in use by {who}, which holds "
                         f"{lock_path(path)}")


class JournalLock:
    """A lock taken on `FILE-lock`; `release()` (or the process's end) gives it back."""

    def __init__(self, fd: int, created: bool):
        self._fd: int | None = fd
        self.created = created  # this process made the lock file

    @classmethod
    def take(cls, path: str, *, shared: bool = False,
             create: bool = True) -> JournalLock | None:
        """The lock, or None when there is no lock file and `create` is false (no
        daemon of this version has used the journal). Raises LockHeld."""
        name = lock_path(path)
        created = False
        try:
            fd = os.open(name, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            if not create:
                return None
            fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            created = True
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _holder(fd)
            os.close(fd)
            raise LockHeld(path, pid) from None
        except OSError:
            os.close(fd)
            raise
        return cls(fd, created)

    def sign(self) -> None:
        """Write this process's pid into the lock file (for a refused second daemon's
        sentence), once the journal is accepted: a refused start changes nothing."""
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, f"{os.getpid()}\n".encode(), 0)

    def release(self, remove: bool = False, path: str = "") -> None:
        """Give the lock back; `remove` (with the journal's path) also deletes a lock
        file this process made (a start that created nothing else)."""
        if self._fd is None:
            return
        if remove and self.created and path:
            with contextlib.suppress(OSError):
                os.unlink(lock_path(path))
        os.close(self._fd)
        self._fd = None


def _holder(fd: int) -> int | None:
    """The pid written in the lock file, if that process is alive."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    if not text.isdigit():
        return None
    pid = int(text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None  # a shared holder (`schedd journal check`) after that daemon ended
    except PermissionError:
        pass  # alive, another user's
    return pid
