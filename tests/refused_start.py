"""`schedd serve` run as a user would when it is expected to refuse to start."""

from __future__ import annotations

import subprocess
import sys


def serve_refused(*args: str) -> subprocess.CompletedProcess[str]:
    """`schedd serve ARGS` on a free port, expected to exit (status and stderr in the
    result). One that serves instead is killed at once and fails the test with its log,
    rather than running until a timeout."""
    cmd = [sys.executable, "-m", "schedd", "serve", "--listen", "127.0.0.1:0",
           "--metrics-port", "0", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:  # ends when it exits
        lines.append(line)
        if "schedd: serving" in line:
            proc.kill()
            proc.wait(10)
            raise AssertionError("it started and served:\n" + "".join(lines)[-3000:])
    return subprocess.CompletedProcess(cmd, proc.wait(60), "", "".join(lines))
