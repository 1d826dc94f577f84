"""Policy registry: name -> class. `schedd policies` lists it."""

from __future__ import annotations

from ..core.cluster import Cluster
from ..suggest import did_you_mean
from .backfill import Easy, EasyBestFit, EasySjf
from .base import Policy, PolicyError, option_help, parse_options
from .ckpt_backfill import CkptBackfill
from .conservative import Conservative
from .fcfs import Fcfs
from .hybrid import Hybrid
from .los import TABLE_III
from .plan_sa import PlanSA
from .rt_basic import EasyWfp2, RtHpq, RtPreempt
from .wcjs import Wcjs

POLICIES: dict[str, type[Policy]] = {
    cls.name: cls for cls in (Fcfs, Easy, EasyBestFit, EasySjf, Conservative, CkptBackfill,
                                 PlanSA, *TABLE_III, Hybrid, EasyWfp2, RtHpq,
                                 RtPreempt, Wcjs)
}


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
