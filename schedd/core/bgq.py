"""Blue Gene/Q partitions: a fixed table of blocks, each a bitmask of the resources it uses.

`BlockCluster` / `BlockState` hold what every block-table machine shares (the aligned
`BgqCluster` here and `MiraBlocksCluster` built from Mira's real block list): a block is
usable iff its mask meets nothing busy, down or outside the state's universe, and a
request takes the *least blocking* usable block of its size (docs/clusters.md).

Speed: the simulator calls `allocate()` constantly, so everything per-block is precomputed
(conflict sets as block-index bitmasks) and a state is five ints, one of them a cached
bitmask of the usable blocks that every change updates incrementally.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from .cluster import Allocation, CheckpointModel, Cluster, ClusterError, ClusterState

NODES_PER_MIDPLANE = 512
# Partition sizes in midplanes (512 .. 49,152 nodes), real-time paper §5.2.
PARTITION_MIDPLANES = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96)
MAX_MIDPLANES = 96


@dataclass(frozen=True, slots=True)
class Block:
    """One bootable partition: `mask` has bit i set for each resource i it uses."""

    name: str
    nodes: int
    mask: int


def iter_bits(x: int) -> Iterator[int]:
    """Indices of the set bits of `x`, lowest first."""
    while x:
        low = x & -x
        yield low.bit_length() - 1
        x ^= low


class BlockCluster(Cluster):
    """A machine whose only allocatable units are the blocks of a table.

    Bits 0..units-1 of a mask are the failure units (midplanes); higher bits are extra
    shared resources (Mira's switches). `blocks` must be sorted by size; within a size
    the table order is the tie-break of the allocation rule.
    """

    def __init__(
        self,
        name: str,
        blocks: Sequence[Block],
        units: int,
        nodes_per_unit: int = NODES_PER_MIDPLANE,
        checkpoint_model: CheckpointModel | None = None,
    ):
        if not blocks:
            raise ClusterError(f"{name}: a block cluster needs at least one block")
        if any(a.nodes > b.nodes for a, b in zip(blocks, blocks[1:], strict=False)):
            raise ClusterError(f"{name}: the block table must be sorted by size")
        self.name = name
        self.blocks = tuple(blocks)
        self.failure_units = units
        self.nodes_per_unit = nodes_per_unit
        self.total_nodes = units * nodes_per_unit
        self.checkpoint_model = checkpoint_model or CheckpointModel()
        self.unit_mask = (1 << units) - 1
        self.full_mask = self.unit_mask
        for b in self.blocks:
            self.full_mask |= b.mask
        self.sizes = tuple(sorted({b.nodes for b in self.blocks}))
        self._index = {b.name: i for i, b in enumerate(self.blocks)}
        self._precompute()

    def _precompute(self) -> None:
        masks = tuple(b.mask for b in self.blocks)
        self.masks = masks
        self.allocs = tuple(Allocation(b.nodes, i, b.mask) for i, b in enumerate(self.blocks))
        size_bits: dict[int, int] = {}
        for i, b in enumerate(self.blocks):
            size_bits[b.nodes] = size_bits.get(b.nodes, 0) | 1 << i
        self.size_bits = size_bits
        # conflicts[i] includes i itself: taking i makes exactly these unusable.
        self.conflicts = tuple(tuple(j for j, mj in enumerate(masks) if mi & mj) for mi in masks)
        self.conflict_bits = tuple(sum(1 << j for j in c) for c in self.conflicts)
        self.touching = tuple(
            tuple(i for i, m in enumerate(masks) if m >> u & 1) for u in range(self.failure_units)
        )
        self.touch_bits = tuple(sum(1 << i for i in t) for t in self.touching)

    def alloc_size(self, nodes: int) -> int | None:
        if nodes < 1:
            return None
        k = bisect_left(self.sizes, nodes)
        return self.sizes[k] if k < len(self.sizes) else None

    def new_state(self) -> BlockState:
        return BlockState(self)

    def block_name(self, block: int) -> str:
        return self.blocks[block].name

    def block_index(self, name: str) -> int:
        try:
            return self._index[name]
        except KeyError:
            raise ClusterError(f"{self.name} has no block named {name!r}") from None

    def unit_name(self, unit: int) -> str:
        return f"M{unit:02d}"

    def describe(self) -> str:
        return f"{self.name}: {self.total_nodes} nodes, {len(self.blocks)} partitions"


class BlockState(ClusterState):
    """Free/busy/down record of a `BlockCluster`, as plain ints so `copy()` is cheap.

    busy/down/outside are resource masks (outside = not in this state's universe, for
    reservations); `held` has bit i set while block i is allocated; `usable` caches the
    blocks whose mask misses busy|down|outside.
    """

    __slots__ = ("cluster", "busy", "down", "outside", "held", "usable")

    def __init__(self, cluster: BlockCluster, outside: int = 0, down: int = 0):
        self.cluster = cluster
        self.busy = 0
        self.down = down
        self.outside = outside
        self.held = 0
        self.usable = self._scan()

    # -- queries -------------------------------------------------------------------------

    @property
    def blocked(self) -> int:
        return self.busy | self.down | self.outside

    @property
    def free_nodes(self) -> int:
        free_units = self.cluster.unit_mask & ~(self.busy | self.down | self.outside)
        return free_units.bit_count() * self.cluster.nodes_per_unit

    def is_usable(self, block: int) -> bool:
        return bool(self.usable >> block & 1)

    def usable_blocks(self, nodes: int | None = None) -> list[int]:
        """Usable block indices, all or only those of partition size `nodes`."""
        bits = self.usable if nodes is None else self.usable & self.cluster.size_bits.get(nodes, 0)
        return list(iter_bits(bits))

    def held_blocks(self) -> list[int]:
        return list(iter_bits(self.held))

    def blocking_cost(self, block: int) -> int:
        """How many *other* currently usable blocks taking `block` would make unusable."""
        return (self.usable & self.cluster.conflict_bits[block]).bit_count() - 1

    def fits(self, nodes: int) -> bool:
        size = self.cluster.alloc_size(nodes)
        return size is not None and bool(self.usable & self.cluster.size_bits[size])

    def copy(self) -> BlockState:
        new = BlockState.__new__(BlockState)
        new.cluster = self.cluster
        new.busy = self.busy
        new.down = self.down
        new.outside = self.outside
        new.held = self.held
        new.usable = self.usable
        return new

    # -- allocation ----------------------------------------------------------------------

    def allocate(self, nodes: int) -> Allocation | None:
        """Least-blocking block of size alloc_size(nodes); ties -> lowest table index."""
        cluster = self.cluster
        size = cluster.alloc_size(nodes)
        if size is None:
            return None
        usable = self.usable
        candidates = usable & cluster.size_bits[size]
        if not candidates:
            return None
        conflict_bits = cluster.conflict_bits
        best, best_cost = -1, 1 << 30
        while candidates:
            low = candidates & -candidates
            i = low.bit_length() - 1
            cost = (usable & conflict_bits[i]).bit_count()
            if cost < best_cost:
                best, best_cost = i, cost
                if cost == 1:  # blocks nothing but itself: no later candidate can beat it
                    break
            candidates ^= low
        return self._take(best)

    def allocate_block(self, block: int) -> Allocation | None:
        if not 0 <= block < len(self.cluster.blocks):
            raise ClusterError(f"{self.cluster.name} has no block {block}")
        return self._take(block) if self.usable >> block & 1 else None

    def _take(self, block: int) -> Allocation:
        cluster = self.cluster
        self.busy |= cluster.masks[block]
        self.held |= 1 << block
        # Every block overlapping this one (itself included) becomes unusable.
        self.usable &= ~cluster.conflict_bits[block]
        return cluster.allocs[block]

    def release(self, alloc: Allocation) -> None:
        block = self._held_block(alloc, "release")
        self.held &= ~(1 << block)
        self.busy &= ~alloc.mask
        self._recheck(self.cluster.conflicts[block])

    def _held_block(self, alloc: Allocation, what: str) -> int:
        """The block index of `alloc`, checked to be a block currently held here."""
        cluster = self.cluster
        block = alloc.block
        if not 0 <= block < len(cluster.blocks) or cluster.masks[block] != alloc.mask:
            raise ClusterError(f"cannot {what} {alloc}: not a block of {cluster.name}")
        if not self.held >> block & 1:
            raise ClusterError(f"cannot {what} block {cluster.block_name(block)}: it is not busy")
        return block

    def exclude(self, block: int) -> None:
        """Planning copies only: take `block`'s resources out of this state's universe,
        whatever holds them now, so nothing planned here can use them (a partition claimed
        for a job that starts once its current holders have left)."""
        self.outside |= self.cluster.masks[block]
        self.usable &= ~self.cluster.conflict_bits[block]

    # -- reservations --------------------------------------------------------------------

    def carve(self, alloc: Allocation) -> BlockState:
        self._held_block(alloc, "carve")
        cluster = self.cluster
        return BlockState(
            cluster, outside=cluster.full_mask & ~alloc.mask, down=self.down & alloc.mask
        )

    def merge_back(self, sub: ClusterState, alloc: Allocation) -> None:
        if not isinstance(sub, BlockState) or sub.cluster is not self.cluster:
            raise ClusterError("merge_back needs a state carved from this cluster")
        block = self._held_block(alloc, "merge back")
        if (sub.busy | sub.down) & ~alloc.mask:
            raise ClusterError("the carved state uses resources outside its reservation")
        # Jobs still running inside keep their blocks; their holders release them here.
        self.held = (self.held & ~(1 << block)) | sub.held
        self.busy = (self.busy & ~alloc.mask) | sub.busy
        self.down |= sub.down
        self._recheck(self.cluster.conflicts[block])

    # -- failures ------------------------------------------------------------------------

    def unit_down(self, unit: int) -> bool:
        """Mark midplane `unit` down; False (and nothing changes) if it already is, lies
        outside this state, or is still busy. Busy is the caller's precondition broken,
        but it happens legitimately when a reservation holds the midplane (the engine
        releases the failed job into the reservation's carved state), so no exception."""
        bit = self._unit_bit(unit)
        if (self.down | self.outside | self.busy) & bit:
            return False
        self.down |= bit
        self.usable &= ~self.cluster.touch_bits[unit]
        return True

    def unit_up(self, unit: int) -> None:
        bit = self._unit_bit(unit)
        if not self.down & bit:
            raise ClusterError(f"{self.cluster.unit_name(unit)} is not down")
        self.down &= ~bit
        self._recheck(self.cluster.touching[unit])

    def _unit_bit(self, unit: int) -> int:
        if not 0 <= unit < self.cluster.failure_units:
            raise ClusterError(f"{self.cluster.name} has no failure unit {unit}")
        return 1 << unit

    # -- usable-set maintenance ------------------------------------------------------------

    def _scan(self) -> int:
        blocked = self.busy | self.down | self.outside
        usable = 0
        for i, m in enumerate(self.cluster.masks):
            if not m & blocked:
                usable |= 1 << i
        return usable

    def _recheck(self, blocks: Sequence[int]) -> None:
        """Add back those of `blocks` that nothing blocks any more (after a resource frees)."""
        blocked = self.busy | self.down | self.outside
        masks = self.cluster.masks
        usable = self.usable
        for i in blocks:
            if not masks[i] & blocked:
                usable |= 1 << i
        self.usable = usable

    def problems(self) -> list[str]:
        out: list[str] = []
        if self.busy & self.down:
            out.append(f"busy and down overlap: {self._unit_names(self.busy & self.down)}")
        if (self.busy | self.down) & self.outside:
            out.append("busy or down resources outside this state's universe")
        out.extend(self._held_problems())
        if self.usable != self._scan():
            out.append("cached usable-block set is stale")
        return out

    def _held_problems(self) -> list[str]:
        out: list[str] = []
        cluster = self.cluster
        union = 0
        held = self.held_blocks()
        for k, i in enumerate(held):
            for j in held[:k]:
                if cluster.masks[i] & cluster.masks[j]:
                    out.append(
                        f"busy blocks {cluster.block_name(j)} and {cluster.block_name(i)} overlap"
                    )
            union |= cluster.masks[i]
        if union != self.busy:
            out.append("busy resources differ from the union of the busy blocks")
        return out

    def _unit_names(self, mask: int) -> str:
        units = [u for u in iter_bits(mask) if u < self.cluster.failure_units]
        return ", ".join(self.cluster.unit_name(u) for u in units)


class BgqCluster(BlockCluster):
    """`bgq:M` / `mira` — aligned Blue Gene/Q partitions over M midplanes.

    A partition of s midplanes (s in PARTITION_MIDPLANES, s <= M) starts at every multiple
    of s that keeps it inside the machine; bit i of its mask is midplane i.
    """

    def __init__(
        self, midplanes: int, name: str = "", checkpoint_model: CheckpointModel | None = None
    ):
        if not 1 <= midplanes <= MAX_MIDPLANES:
            raise ClusterError(f"a Blue Gene/Q has 1..{MAX_MIDPLANES} midplanes, got {midplanes}")
        self.midplanes = midplanes
        super().__init__(
            name or f"bgq:{midplanes}",
            aligned_blocks(midplanes),
            midplanes,
            NODES_PER_MIDPLANE,
            checkpoint_model,
        )


def aligned_blocks(midplanes: int) -> list[Block]:
    """The aligned partition table, sorted by (size, first midplane)."""
    blocks = []
    for s in PARTITION_MIDPLANES:
        for first in range(0, midplanes - s + 1, s):
            last = first + s - 1
            name = f"M{first:02d}" if s == 1 else f"M{first:02d}-M{last:02d}"
            blocks.append(Block(name, s * NODES_PER_MIDPLANE, ((1 << s) - 1) << first))
    return blocks
