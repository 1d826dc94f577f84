"""Parse the `--cluster` option: `nodes:N`, `mira`, `bgq:M`, `mira-blocks`."""

from __future__ import annotations

import re

from .bgq import MAX_MIDPLANES, BgqCluster
from .cluster import Cluster, ClusterError, NodePool

CLUSTER_FORMS = (
    "nodes:N (N >= 1 identical nodes, any subset runs a job), "
    "mira (Blue Gene/Q, 96 midplanes = 49,152 nodes, aligned partitions), "
    f"bgq:M (aligned Blue Gene/Q of M = 1..{MAX_MIDPLANES} midplanes of 512 nodes), "
    "mira-blocks (Mira's 294 real partitions, midplane and switch conflicts)"
)

_FORM = re.compile(r"(nodes|bgq):([0-9]+)")


def parse_cluster(spec: str) -> Cluster:
    """The cluster a spec names; ClusterError (listing the valid forms) otherwise."""
    text = spec.strip().lower()
    if text == "mira":
        return BgqCluster(MAX_MIDPLANES, "mira")
    if text == "mira-blocks":
        # Imported here: its block list is a package resource (importlib.resources and
        # tempfile, about 6 ms), which no other cluster needs (issue 21).
        from .mira_blocks import MiraBlocksCluster

        return MiraBlocksCluster()
    match = _FORM.fullmatch(text)
    if match:
        kind, count = match.group(1), int(match.group(2))
        if kind == "nodes" and count >= 1:
            return NodePool(count)
        if kind == "bgq" and 1 <= count <= MAX_MIDPLANES:
            return BgqCluster(count)
    raise ClusterError(f"unknown cluster {spec!r}; valid forms are {CLUSTER_FORMS}.")
