"""The EASY simulator anyone would write first: the reference `bench/run.py` times
`schedd simulate` against (issue 21). A list queue, a heap of completions, one backfill
pass per instant, no mechanics: the semantics of ../shared/traces/README.md, which the
engine's `easy` on `nodes:N` follows too (bench/run.py checks every job's wait is equal).

    python bench/naive_easy.py TRACE [--waits OUT]   # prints jobs, mean wait, seconds
"""

from __future__ import annotations

import argparse
import heapq
import sys
import time


def read_swf(path: str) -> tuple[int, list[tuple[float, int, int, float, float]]]:
    """(MaxNodes, jobs as (submit, id, nodes, runtime, requested)) in queue order."""
    max_nodes = 0
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith(";"):
                if "MaxNodes:" in line:
                    max_nodes = int(line.split("MaxNodes:")[1].split()[0])
                continue
            fields = line.split()
            if len(fields) < 18:
                continue
            runtime = float(fields[3])
            nodes = int(fields[7]) if int(fields[7]) > 0 else int(fields[4])
            requested = float(fields[8]) if float(fields[8]) > 0 else runtime
            rows.append((float(fields[1]), int(fields[0]), nodes, runtime, requested))
    keep = [r for r in rows if r[3] > 0 and 1 <= r[2] <= max_nodes]
    keep.sort(key=lambda r: (r[0], r[1]))
    return max_nodes, keep


def simulate(total: int, jobs: list[tuple[float, int, int, float, float]]) -> dict[int, float]:
    """Job id -> wait."""
    free = total
    queue: list[tuple[float, int, int, float, float]] = []  # waiting, in queue order
    running: list[tuple[float, int, int]] = []  # heap of (actual end, id, nodes)
    predicted: dict[int, tuple[float, int, int]] = {}  # id -> (predicted end, id, nodes)
    waits: dict[int, float] = {}
    i = 0
    while i < len(jobs) or running:
        now = min(jobs[i][0] if i < len(jobs) else float("inf"),
                  running[0][0] if running else float("inf"))
        while running and running[0][0] == now:  # completions first
            _, jid, n = heapq.heappop(running)
            del predicted[jid]
            free += n
        while i < len(jobs) and jobs[i][0] == now:  # then submissions
            queue.append(jobs[i])
            i += 1
        # One pass: start from the head while it fits.
        while queue and queue[0][2] <= free:
            free = _start(queue.pop(0), now, free, running, predicted, waits)
        if not queue:
            continue
        # Shadow time and extra nodes for the head.
        need, spare, shadow = queue[0][2], free, float("inf")
        for end, _, n in sorted(predicted.values()):
            if end > shadow:
                break
            spare += n
            if shadow == float("inf") and spare >= need:
                shadow = end
        extra = spare - need if shadow < float("inf") else 0
        rest = []
        for job in queue[1:]:
            n = job[2]
            if n <= free and now + job[4] <= shadow:
                free = _start(job, now, free, running, predicted, waits)
            elif n <= free and n <= extra:
                extra -= n
                free = _start(job, now, free, running, predicted, waits)
            else:
                rest.append(job)
        queue[1:] = rest
    return waits


def _start(job, now, free, running, predicted, waits) -> int:  # noqa: ANN001
    submit, jid, n, runtime, requested = job
    waits[jid] = now - submit
    heapq.heappush(running, (now + min(runtime, requested), jid, n))
    predicted[jid] = (now + requested, jid, n)
    return free - n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--waits", default=None, help="write 'JOB_ID WAIT' lines here")
    args = parser.parse_args()
    start = time.perf_counter()
    total, jobs = read_swf(args.trace)
    waits = simulate(total, jobs)
    if args.waits:
        with open(args.waits, "w") as out:
            out.writelines(f"{jid} {w:.10g}\n" for jid, w in sorted(waits.items()))
    mean = sum(waits.values()) / max(len(waits), 1)
    print(f"{len(waits)} jobs, mean wait {mean:.3f} s, {time.perf_counter() - start:.3f} s",
          file=sys.stderr)


if __name__ == "__main__":
    main()
