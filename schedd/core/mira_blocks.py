"""`mira-blocks` — Mira's 294 real partitions (the blocks Cobalt could boot).

The table ships as `schedd/data/mira-blocks.tsv` (name, nodes, midplanes, switches). Two
blocks conflict when they share a midplane or a switch: a block passing *through* a
midplane uses that midplane's switch without using its nodes, so midplane overlap alone
would let two blocks share wiring. Bits 0..95 are the midplanes in sorted name order
(R00-M0, R00-M1, R01-M0, ... R2F-M1); each distinct switch gets a bit from 96 upward.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

from .bgq import NODES_PER_MIDPLANE, Block, BlockCluster
from .cluster import CheckpointModel, ClusterError

TABLE_RESOURCE = "mira-blocks.tsv"
COLUMNS = ["name", "nodes", "midplanes", "switches"]


@dataclass(frozen=True, slots=True)
class BlockRow:
    """One line of the block table, as written."""

    name: str
    nodes: int
    midplanes: tuple[str, ...]
    switches: tuple[str, ...]


def parse_table(text: str) -> list[BlockRow]:
    """Rows of a block-table TSV; '#' lines are comments, the first other line the header."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    if not lines or lines[0].split("\t") != COLUMNS:
        raise ClusterError(f"block table header must be {' '.join(COLUMNS)}")
    return [_parse_row(ln, n) for n, ln in enumerate(lines[1:], start=2)]


def _parse_row(line: str, lineno: int) -> BlockRow:
    fields = line.split("\t")
    if len(fields) != len(COLUMNS):
        raise ClusterError(f"block table row {lineno}: expected {len(COLUMNS)} columns")
    name, nodes, midplanes, switches = fields
    row = BlockRow(name, int(nodes), tuple(midplanes.split(",")), tuple(switches.split(",")))
    if row.nodes != len(row.midplanes) * NODES_PER_MIDPLANE:
        raise ClusterError(f"block {name}: {row.nodes} nodes but {len(row.midplanes)} midplanes")
    return row


@cache
def shipped_rows() -> tuple[BlockRow, ...]:
    """The table shipped in package `schedd.data` (never the shared source copy)."""
    text = resources.files("schedd.data").joinpath(TABLE_RESOURCE).read_text(encoding="utf-8")
    return tuple(parse_table(text))


def build_blocks(
    rows: list[BlockRow] | tuple[BlockRow, ...],
) -> tuple[tuple[Block, ...], tuple[str, ...]]:
    """Blocks sorted by (nodes, name), and the midplane names in bit order."""
    midplanes = sorted({m for r in rows for m in r.midplanes})
    switches = sorted({s for r in rows for s in r.switches})
    bit = {m: i for i, m in enumerate(midplanes)}
    bit.update({s: len(midplanes) + i for i, s in enumerate(switches)})
    blocks = tuple(
        Block(r.name, r.nodes, sum(1 << bit[x] for x in (*r.midplanes, *r.switches)))
        for r in sorted(rows, key=lambda r: (r.nodes, r.name))
    )
    return blocks, tuple(midplanes)


class MiraBlocksCluster(BlockCluster):
    """Mira from its block table; same state and allocation rule as `BgqCluster`, with
    ties between equally blocking blocks broken by block name."""

    def __init__(self, name: str = "mira-blocks", checkpoint_model: CheckpointModel | None = None):
        blocks, midplanes = _shipped_blocks()
        self.midplane_names = midplanes
        super().__init__(name, blocks, len(midplanes), NODES_PER_MIDPLANE, checkpoint_model)

    def unit_name(self, unit: int) -> str:
        return self.midplane_names[unit]

    def unit_index(self, midplane: str) -> int:
        try:
            return self.midplane_names.index(midplane)
        except ValueError:
            raise ClusterError(f"{self.name} has no midplane {midplane!r}") from None


@cache
def _shipped_blocks() -> tuple[tuple[Block, ...], tuple[str, ...]]:
    return build_blocks(shipped_rows())
