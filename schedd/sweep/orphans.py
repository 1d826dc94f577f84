"""What a killed sweep leaves in its cache, found and cleaned by the next one.

A cell (cell_run.py) or a task result (tasks.py) is written under a hidden temporary
name and renamed when whole, so a sweep that is interrupted, or whose worker is killed,
never leaves a cell that looks cached; but a process killed outright (SIGKILL, a power
cut, an out-of-memory kill) leaves its temporary folder or file behind. Their names say
who wrote them: `.KEY.partial-HOST-PID-RANDOM`. The next sweep on the cache removes those
written on this machine by a process that is gone, and reports in one line the others
(another machine's, a live process's: another sweep may be writing them right now; or
named the older way, without an owner), which it leaves alone.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
from dataclasses import dataclass, field
from pathlib import Path

MARK = ".partial-"


def partial_prefix(key: str) -> str:
    """The prefix of a temporary name for `key`'s cell or result (mkdtemp/mkstemp add a
    random part): `.KEY.partial-HOST-PID-`."""
    return f".{key}{MARK}{_host()}-{os.getpid()}-"


def _host() -> str:
    return socket.gethostname().replace("-", "_") or "localhost"


@dataclass
class Orphans:
    removed: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)  # not provably abandoned

    def line(self, cache: str, prog: str) -> str | None:
        """One line for the user, or None when there was nothing."""
        if not self.removed and not self.left:
            return None
        parts = []
        if self.removed:
            parts.append(f"removed {len(self.removed)} unfinished cell"
                         f"{'s' if len(self.removed) != 1 else ''} a killed run left in "
                         f"{cache}")
        if self.left:
            shown = ", ".join(self.left[:3]) + (", ..." if len(self.left) > 3 else "")
            parts.append(f"{len(self.left)} unfinished cell"
                         f"{'s' if len(self.left) != 1 else ''} in {cache} left alone "
                         f"(another sweep may be writing {'them' if len(self.left) != 1 else 'it'};"
                         f" remove if none is running): {shown}")
        return f"{prog}: " + "; ".join(parts)


def clean(cache: str | Path) -> Orphans:
    """Remove the temporary folders and files of `cache`'s cells and task results whose
    writer, a process on this machine, is gone; list the others (paths relative to the
    cache)."""
    root = Path(cache)
    found = Orphans()
    for shard in (*_shards(root), *_shards(root / "tasks")):
        try:
            names = [e for e in os.scandir(shard) if e.name.startswith(".")]
        except OSError:
            continue
        for entry in names:
            rel = os.path.relpath(entry.path, root)
            if _abandoned(entry.name):
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(entry.path)
                found.removed.append(rel)
            else:
                found.left.append(rel)
    found.left.sort()
    return found


def _shards(folder: Path) -> list[str]:
    """The two-character folders a cache spreads its keys over."""
    try:
        return sorted(e.path for e in os.scandir(folder)
                      if e.is_dir(follow_symlinks=False) and len(e.name) == 2)
    except OSError:
        return []


def _abandoned(name: str) -> bool:
    """Written on this machine by a process that no longer runs."""
    _, mark, owner = name.partition(MARK)
    if not mark:
        return False
    parts = owner.split("-")  # HOST-PID-RANDOM (the host's own "-" are "_")
    if len(parts) != 3:
        return False
    host, pid_text = parts[0], parts[1]
    if host != _host() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, someone else's
        return False
    return False
