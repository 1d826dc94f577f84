"""Keyed tasks on the sweep's machinery, for the experiments under `experiments/`.

A sweep cell is one simulation of a trace file. The paper experiments need more than a
cell expresses (generated Lublin workloads, slices of a trace, several runs sharing one
workload, policy statistics), so they hand their own task function here and get what a
sweep gets: the tasks run on dask.distributed (a LocalCluster of `workers` processes, an
existing cluster at `scheduler`, or this process with `workers=0`), every result is
cached on disk under a content hash of its inputs, and an interrupted experiment resumes
with only the tasks it had not finished.

A task's key is the SHA-256 of the function's name, the bytes of the file that defines
it, its arguments in a canonical form (dataclasses by field, floats by `repr`), and the
schedd code version (`cells.code_version`). Results must be plain data (numbers,
strings, lists, tuples, dicts, NumPy arrays): a function defined in a script's
`__main__` is shipped to the workers by value, and so would be a class of its results.
Cached results are pickles written by this code to a directory the user chose; they
are trusted as such.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import io
import json
import os
import pickle
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..progress import Progress
from . import orphans
from .cells import code_version, file_sha
from .dask_client import dask_client, where
from .orphans import partial_prefix

_MISSING = object()


class TaskFailed(RuntimeError):
    """Some tasks raised; the others finished (and are cached). One line per failure."""


def canonical(obj: Any) -> Any:
    """A JSON-able form of a task argument that is equal exactly for equal inputs."""
    if obj is None or isinstance(obj, bool | int | str):
        return obj
    if isinstance(obj, float):
        return {"float": repr(obj)}  # keeps -0.0, nan and every digit
    if isinstance(obj, Path):
        return {"path": str(obj)}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {"type": type(obj).__qualname__,
                "fields": {f.name: canonical(getattr(obj, f.name))
                           for f in dataclasses.fields(obj)}}
    if isinstance(obj, list | tuple):
        return [canonical(x) for x in obj]
    if isinstance(obj, dict):
        return {"dict": sorted(([json.dumps(canonical(k), sort_keys=True), canonical(v)]
                                for k, v in obj.items()), key=lambda kv: kv[0])}
    raise TypeError(f"a task argument of type {type(obj).__name__} has no canonical form")


def function_id(fn: Callable[..., Any]) -> tuple[str, str]:
    """The function's file name and qualified name, and a hash of that file's bytes (an
    edit of the experiment invalidates its cached results, as a schedd edit does)."""
    path = inspect.getsourcefile(fn) or ""
    data = Path(path).read_bytes() if path else b""
    return f"{Path(path).name}:{fn.__qualname__}", hashlib.sha256(data).hexdigest()[:16]


def task_key(fn: Callable[..., Any], args: tuple[Any, ...], code: str | None = None,
             data: str = "") -> str:
    return _key(function_id(fn), args, code or code_version(), data)


def _key(fn_id: tuple[str, str], args: tuple[Any, ...], code: str, data: str) -> str:
    body = {"fn": fn_id[0], "source": fn_id[1], "code": code, "data": data,
            "args": canonical(args)}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _path(cache: str, key: str) -> Path:
    return Path(cache) / "tasks" / key[:2] / f"{key}.pkl"


def load_result(cache: str, key: str) -> Any:
    try:
        with open(_path(cache, key), "rb") as f:
            return pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError):
        return _MISSING


def store_result(cache: str, key: str, result: Any) -> None:
    """Written to a temporary name and renamed: a result is cached whole or not at all."""
    final = _path(cache, key)
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=partial_prefix(key), dir=final.parent)  # orphans.py
    try:
        with os.fdopen(fd, "wb") as f:
            pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def run_tasks(fn: Callable[..., Any], argsets: Sequence[tuple[Any, ...]], *,
              cache: str | None = None, workers: int = 2, scheduler: str | None = None,
              progress: bool = True, prog: str = "experiment", what: str = "tasks",
              depends_on: Sequence[str | Path] = (),
              on_result: Callable[[int, Any], None] | None = None) -> list[Any]:
    """One batch of tasks on a TaskRunner of its own (see TaskRunner.map)."""
    with TaskRunner(cache=cache, workers=workers, scheduler=scheduler, progress=progress,
                    prog=prog) as runner:
        return runner.map(fn, argsets, what=what, depends_on=depends_on,
                          on_result=on_result)


class TaskRunner:
    """Runs batches of keyed tasks; the Dask cluster starts at the first batch that has
    something to run and stays up for the next ones until the runner is closed (an
    experiment sends dozens of batches, each depending on the one before)."""

    def __init__(self, *, cache: str | None = None, workers: int = 2,
                 scheduler: str | None = None, progress: bool = True,
                 prog: str = "experiment"):
        self.cache, self.workers, self.scheduler = cache, workers, scheduler
        self.progress, self.prog = progress, prog
        self._client_cm: Any = None
        self._client: Any = None
        self.ran = 0  # tasks simulated (not read from the cache)
        self._code: str | None = None

    def __enter__(self) -> TaskRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._client_cm is not None:
            self._client_cm.__exit__(None, None, None)
            self._client_cm = self._client = None

    def where(self) -> str:
        return where(self.workers, self.scheduler)

    def _dask(self) -> Any:
        if self._client is None:
            self._client_cm = dask_client(self.workers, self.scheduler)
            self._client = self._client_cm.__enter__()
        return self._client

    def map(self, fn: Callable[..., Any], argsets: Sequence[tuple[Any, ...]], *,
            what: str = "tasks", depends_on: Sequence[str | Path] = (),
            on_result: Callable[[int, Any], None] | None = None,
            only_cached: bool = False) -> list[Any]:
        """`fn(*args)` for every args in `argsets`, in their order, whatever order they
        finish in. Cached results are read, not run; the rest run on this runner's
        workers, each cached as it finishes (with a cache; without, nothing is kept).
        `depends_on` names the files the tasks read (traces): their bytes are part of
        every key, so a changed trace is simulated again even under the same path.
        `on_result(i, result)` is called for each task run now, as it finishes.
        `only_cached` runs nothing: the cached results, None for the others. A task
        that raises does not stop the others: after all of them, TaskFailed names every
        failed task with its arguments."""
        if self._code is None:  # the sources do not change during a run: hash them once
            self._code = code_version()
            said = orphans.clean(self.cache).line(self.cache, self.prog) if self.cache else None
            if said:  # what a killed run left in the cache
                print(said, file=sys.stderr, flush=True)
        data = hashlib.sha256("".join(file_sha(str(p)) for p in depends_on).encode()
                              ).hexdigest()
        fn_id = function_id(fn)  # reads the script once per batch, not once per task
        keys = [_key(fn_id, tuple(args), self._code, data) for args in argsets]
        cache = self.cache
        results: list[Any] = [load_result(cache, k) if cache else _MISSING for k in keys]
        todo = [i for i, r in enumerate(results) if r is _MISSING]
        same: dict[str, list[int]] = {}  # equal tasks in one batch run once
        for i in todo:
            same.setdefault(keys[i], []).append(i)
        todo = [idx[0] for idx in same.values()]
        if only_cached:
            print(f"{self.prog}: {len(keys)} {what}, {len(keys) - len(todo)} cached, "
                  f"{len(todo)} not run (only the cache is read)", file=sys.stderr, flush=True)
            return [None if r is _MISSING else r for r in results]
        print(f"{self.prog}: {len(keys)} {what}, {len(keys) - len(todo)} cached, "
              f"{len(todo)} to run on {self.where()}", file=sys.stderr, flush=True)
        failures: list[str] = []

        def done(i: int, result: Any) -> None:
            self.ran += 1
            if cache:
                store_result(cache, keys[i], result)
            for j in same[keys[i]]:
                results[j] = result
                if on_result is not None:
                    on_result(j, result)

        def failed(i: int, err: BaseException) -> None:
            failures.append(f"{fn.__qualname__}{_short(argsets[i])}: "
                            f"{type(err).__name__}: {err}")

        if todo:
            bar = Progress(len(todo), what, prog=self.prog,
                           out=sys.stderr if self.progress else io.StringIO())
            try:
                if self.scheduler is None and self.workers == 0:
                    for i in todo:
                        try:
                            done(i, fn(*argsets[i]))
                        except Exception as err:  # reported with its inputs after the rest
                            failed(i, err)
                        bar.step()
                else:
                    self._on_dask(fn, argsets, keys, todo, done, failed, bar)
            finally:
                bar.close()
        if failures:
            raise TaskFailed(f"{len(failures)} of {len(keys)} {what} failed:\n  "
                             + "\n  ".join(failures))
        return results

    def _on_dask(self, fn: Callable[..., Any], argsets: Sequence[tuple[Any, ...]],
                 keys: list[str], todo: list[int], done: Callable[[int, Any], None],
                 failed: Callable[[int, BaseException], None], bar: Progress) -> None:
        from dask.distributed import as_completed

        client = self._dask()
        futures = {client.submit(fn, *argsets[i], key=f"task-{keys[i]}", pure=False): i
                   for i in todo}
        for future in as_completed(futures):
            i = futures[future]
            try:
                result = future.result()
            except Exception as err:  # the task raised, or its worker died
                failed(i, err)
            else:
                done(i, result)
            bar.step()


def _short(args: tuple[Any, ...], limit: int = 300) -> str:
    text = repr(tuple(args))
    return text if len(text) <= limit else text[:limit - 3] + "..."


def add_task_arguments(parser: Any, *, workers: int = 2) -> None:
    """--workers, --scheduler and --cache, as every experiment takes them."""
    parser.add_argument("--workers", type=int, default=workers,
                        help=f"workers of the local Dask cluster (default {workers}; 0 = "
                             "in this process, without Dask)")
    parser.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                        help="run on an existing Dask cluster instead of a local one")
    parser.add_argument("--cache", default=None, metavar="DIR",
                        help="keep every simulation's result in DIR (docs/sweep.md): a "
                             "rerun or an interrupted run only simulates what is missing")
