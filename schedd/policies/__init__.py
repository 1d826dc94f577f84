"""Policy registry: name -> class. `schedd policies` lists it."""

from __future__ import annotations

from ..core.cluster import Cluster
from .backfill import Easy, EasyBestFit, EasySjf
from .base import Policy, PolicyError, option_help, parse_options
from .conservative import Conservative
from .fcfs import Fcfs

POLICIES: dict[str, type[Policy]] = {
    cls.name: cls for cls in (Fcfs, Easy, EasyBestFit, EasySjf, Conservative)
}


def make_policy(name: str, option_pairs: list[str], cluster: Cluster) -> Policy:
    cls = POLICIES.get(name)
    if cls is None:
        raise PolicyError(f"unknown policy {name!r}; valid policies: {', '.join(sorted(POLICIES))}")
    return cls(parse_options(name, cls.Options, option_pairs), cluster)


__all__ = ["POLICIES", "Policy", "PolicyError", "make_policy", "option_help"]
