"""Policy registry: name -> class. `schedd policies` lists it."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

from ..core.cluster import Cluster
from ..suggest import did_you_mean
from .base import Policy, PolicyError, option_help, parse_options

# Built-in policies by module: imported on first use, so a run of `easy` loads neither the
# LOS dynamic programs nor numba's plan kernel nor the real-time heuristics (issue 21).
_BUILT_IN: dict[str, str] = {
    "fcfs": "fcfs", "easy": "backfill", "easy-bestfit": "backfill", "easy-sjf": "backfill",
    "conservative": "conservative", "ckpt-backfill": "ckpt_backfill", "plan-sa": "plan_sa",
    "easy-d": "los", "easy-e": "los", "easy-de": "los", "los": "los", "los-d": "los",
    "los-e": "los", "los-de": "los", "delayed-los": "los", "delayed-los-e": "los",
    "hybrid-los": "los", "hybrid-los-e": "los", "hybrid": "hybrid", "easy-wfp2": "rt_basic",
    "rt-hpq": "rt_basic", "rt-preempt": "rt_basic", "wcjs": "wcjs", "agent": "agent",
}
# Policies that live outside this package, by module (imported on first use as well).
_ELSEWHERE: dict[str, str] = {"slurm": "schedd.slurm.policy"}


class _Registry(dict):
    """name -> policy class, a dict whose built-in entries load their module on first
    access (by name, by iteration or by a copy)."""

    def __init__(self, lazy: dict[str, str]):
        super().__init__()
        self._lazy = dict(lazy)

    def _load(self, name: str) -> None:
        where = self._lazy[name]
        module = importlib.import_module(where if "." in where else f"{__name__}.{where}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Policy) \
                    and value.__dict__.get("name") in self._lazy:
                dict.setdefault(self, value.name, value)
                self._lazy.pop(value.name, None)
        if name in self._lazy:
            raise ImportError(f"policy {name!r} is not defined in {module.__name__}")

    def _load_all(self) -> None:
        for name in list(self._lazy):
            if name in self._lazy:
                self._load(name)

    def __getitem__(self, name: str) -> type[Policy]:
        if name in self._lazy:
            self._load(name)
        return dict.__getitem__(self, name)

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    def __contains__(self, name: object) -> bool:
        return name in self._lazy or dict.__contains__(self, name)

    def __iter__(self) -> Iterator[str]:
        self._load_all()
        return dict.__iter__(self)

    def __len__(self) -> int:
        return dict.__len__(self) + len(self._lazy)

    def keys(self) -> Any:
        self._load_all()
        return dict.keys(self)

    def values(self) -> Any:
        self._load_all()
        return dict.values(self)

    def items(self) -> Any:
        self._load_all()
        return dict.items(self)

    def copy(self) -> dict[str, type[Policy]]:
        self._load_all()
        return dict(dict.items(self))

    def clear(self) -> None:
        self._lazy.clear()
        dict.clear(self)


POLICIES: dict[str, type[Policy]] = _Registry({**_BUILT_IN, **_ELSEWHERE})


def register(cls: type[Policy]) -> type[Policy]:
    """Add a policy from outside the package (a `--plugin` module calls this at import)."""
    name = getattr(cls, "name", "")
    if not name or not isinstance(name, str):
        raise PolicyError(f"policy class {cls.__name__} needs a `name`")
    if POLICIES.get(name, cls) is not cls:
        raise PolicyError(f"a policy named {name!r} is already registered")
    POLICIES[name] = cls
    return cls


def load_plugin(spec: str) -> None:
    """Import a module (dotted name, or a .py file) that registers policies."""
    import importlib
    import importlib.util
    import sys
    from pathlib import Path

    try:
        if spec.endswith(".py"):
            path = Path(spec)
            name = f"schedd_plugin_{path.stem}"
            module_spec = importlib.util.spec_from_file_location(name, path)
            if module_spec is None or module_spec.loader is None or not path.is_file():
                raise PolicyError(f"plugin file {spec} not found")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[name] = module
            module_spec.loader.exec_module(module)
        else:
            importlib.import_module(spec)
    except ImportError as err:
        raise PolicyError(f"cannot import plugin {spec!r}: {err}") from None


def make_policy(name: str, option_pairs: list[str], cluster: Cluster) -> Policy:
    cls = POLICIES.get(name)
    if cls is None:
        raise PolicyError(f"unknown policy {name!r}{did_you_mean(name, POLICIES)}; valid "
                          f"policies: {', '.join(sorted(POLICIES))}")
    return cls(parse_options(name, cls.Options, option_pairs), cluster)


__all__ = ["POLICIES", "Policy", "PolicyError", "load_plugin", "make_policy", "option_help",
           "register"]
