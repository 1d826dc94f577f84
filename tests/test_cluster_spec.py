"""`parse_cluster`: the four --cluster forms and the error for anything else."""

from __future__ import annotations

import pytest

from schedd.core.bgq import BgqCluster
from schedd.core.cluster import ClusterError, NodePool
from schedd.core.cluster_spec import CLUSTER_FORMS, parse_cluster
from schedd.core.mira_blocks import MiraBlocksCluster


def test_nodes():
    c = parse_cluster("nodes:128")
    assert isinstance(c, NodePool) and c.total_nodes == 128 and c.name == "nodes:128"


def test_mira():
    c = parse_cluster("mira")
    assert isinstance(c, BgqCluster)
    assert (c.name, c.total_nodes, len(c.blocks)) == ("mira", 49152, 197)


@pytest.mark.parametrize(
    ("spec", "nodes", "blocks"),
    [
        ("bgq:1", 512, 1),
        ("bgq:16", 8192, 31),
        ("bgq:96", 49152, 197),
    ],
)
def test_bgq(spec, nodes, blocks):
    c = parse_cluster(spec)
    assert isinstance(c, BgqCluster)
    assert (c.name, c.total_nodes, len(c.blocks)) == (spec, nodes, blocks)


def test_mira_blocks():
    c = parse_cluster("mira-blocks")
    assert isinstance(c, MiraBlocksCluster) and len(c.blocks) == 294


def test_whitespace_and_case_are_forgiven():
    assert parse_cluster(" MIRA ").name == "mira"
    assert parse_cluster("Nodes:4").total_nodes == 4


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "mira2",
        "nodes",
        "nodes:",
        "nodes:0",
        "nodes:-3",
        "nodes:1.5",
        "nodes:1e3",
        "bgq:0",
        "bgq:97",
        "bgq:x",
        "bgq",
        "mira:96",
        "blocks",
    ],
)
def test_bad_spec_lists_valid_forms(bad):
    with pytest.raises(ClusterError) as err:
        parse_cluster(bad)
    msg = str(err.value)
    for form in ("nodes:N", "mira (", "bgq:M", "mira-blocks"):
        assert form in msg
    assert msg.endswith(".") and msg.count(". ") == 0  # one sentence
    assert "\n" not in msg


def test_forms_text_for_help():
    for form in ("nodes:N", "mira", "bgq:M", "1..96", "mira-blocks"):
        assert form in CLUSTER_FORMS
