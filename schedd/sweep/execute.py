"""Run a sweep's cells on dask.distributed: a LocalCluster by default, or an existing
cluster (`--scheduler tcp://HOST:PORT`). Cached cells are read, not run; the rest become
one task each, keyed by the cell's content hash. With `workers=0` the cells run in this
process (no Dask), which the tests and small experiments use.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

from ..progress import Progress
from . import orphans
from .cell_run import load_cached, run_cell
from .cells import Cell
from .dask_client import dask_client, where


def run_cells(cells: list[Cell], cache: str, *, workers: int = 2,
              scheduler: str | None = None, scatter: bool = False,
              progress: bool = True, prog: str = "schedd sweep", what: str = "cells",
              ) -> list[dict[str, Any]]:
    """Rows in cell order (cached or freshly run). Says on stderr how many cells are
    cached and how many run where, then their progress (schedd.progress: a bar on a
    terminal, else a line every few seconds and one at the end)."""
    Path(cache).mkdir(parents=True, exist_ok=True)
    said = orphans.clean(cache).line(cache, prog)  # what a killed sweep left
    if said:
        print(said, file=sys.stderr, flush=True)
    rows: list[dict[str, Any] | None] = [load_cached(cache, c.key) for c in cells]
    todo = [i for i, r in enumerate(rows) if r is None]
    print(f"{prog}: {len(cells)} {what}, {len(cells) - len(todo)} cached, {len(todo)} to run "
          f"on {where(workers, scheduler)}", file=sys.stderr, flush=True)
    if todo:
        bar = Progress(len(todo), what, prog=prog, out=sys.stderr if progress else io.StringIO())
        try:
            if scheduler is None and workers == 0:
                for i in todo:
                    rows[i] = run_cell(cells[i], cache)
                    bar.step()
            else:
                _run_on_dask(cells, todo, rows, cache, workers, scheduler, scatter, bar)
        except KeyboardInterrupt as err:  # Ctrl-C: say what is kept (cli.py prints it)
            # what the workers cached, whether or not its row came back before Ctrl-C
            cached = sum(1 for c in cells if load_cached(cache, c.key) is not None)
            raise type(err)(
                f"no {what} finished, none kept" if not cached else
                f"{cached} of {len(cells)} {what} cached in {cache}; the same command "
                f"runs only the other {len(cells) - cached}") from None
        finally:
            bar.close()
    return [r for r in rows if r is not None]


def _run_on_dask(cells: list[Cell], todo: list[int], rows: list[dict[str, Any] | None],
                 cache: str, workers: int, scheduler: str | None, scatter: bool,
                 bar: Progress) -> None:
    from dask.distributed import as_completed

    with dask_client(workers, scheduler) as client:
        sources: dict[str, Any] = {}
        if scatter:  # the trace bytes go to the workers once, not once per cell
            for i in todo:
                c = cells[i]
                if c.trace_sha not in sources:
                    sources[c.trace_sha] = client.scatter(Path(c.trace).read_bytes(),
                                                          broadcast=True)
        futures = {
            client.submit(run_cell, cells[i], cache, sources.get(cells[i].trace_sha),
                          key=f"cell-{cells[i].key}", pure=False): i
            for i in todo}
        for future in as_completed(futures):
            i = futures[future]
            try:
                rows[i] = future.result()
            except Exception as err:  # the worker itself died: still not fatal
                rows[i] = {"key": cells[i].key, **cells[i].inputs(), "status": "error",
                           "error": f"{type(err).__name__}: {err}"}
            bar.step()
