"""Cluster models: what can be allocated, and the mutable free-resource state.

A `Cluster` is immutable machine description. A `ClusterState` is the mutable record of
which resources are free; the engine owns the live one and policies plan on cheap copies
(`copy()`), so the same allocation rule decides in a policy's plan and in the engine.

Failure units are what a node failure takes down: one node of a node pool, one midplane
(512 nodes) of a Blue Gene/Q.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass


class ClusterError(ValueError):
    """A request the cluster can never satisfy, or an inconsistent release."""


@dataclass(frozen=True, slots=True)
class Allocation:
    """Resources held by a job or a reservation.

    `block` is the partition index in the cluster's block table (-1 for a node pool);
    `mask` the bitmask of the resources it uses (0 for a node pool); `place` the
    (node, CPUs) pairs it holds on a CPU-node machine (schedd/core/cpu_nodes.py).
    """

    nodes: int
    block: int = -1
    mask: int = 0
    place: tuple[tuple[int, int], ...] = ()

    def covers_unit(self, unit: int) -> bool:
        return bool(self.mask >> unit & 1)


@dataclass(frozen=True, slots=True)
class CheckpointModel:
    """Checkpoint data size and I/O bandwidth of a machine (real-time paper eq. 34).

    Time to write (or read) a checkpoint of `nodes` nodes with `gb_per_node` each:
    ceil(nodes x gb / min(floor(nodes / nodes_per_io) x io_gbps, cap_gbps)).
    """

    gb_per_node: float = 16.0
    nodes_per_io: int = 128
    io_gbps: float = 4.0
    cap_gbps: float = 216.0

    def seconds(self, nodes: int, gb_per_node: float = -1.0) -> float:
        gb = self.gb_per_node if gb_per_node < 0 else gb_per_node
        ios = max(nodes // self.nodes_per_io, 1)  # a job smaller than one I/O group uses one
        bandwidth = min(ios * self.io_gbps, self.cap_gbps)
        data = nodes * gb
        whole = data / bandwidth
        return float(int(whole) + (whole > int(whole)))


class ClusterState(ABC):
    """Mutable free/busy/down state. All methods are O(size of the block table) or better."""

    @property
    @abstractmethod
    def free_nodes(self) -> int:
        """Nodes that could be allocated now (not busy, not down, not reserved)."""

    @abstractmethod
    def copy(self) -> ClusterState: ...

    @abstractmethod
    def fits(self, nodes: int) -> bool:
        """Whether `allocate(nodes)` would succeed now."""

    @abstractmethod
    def allocate(self, nodes: int) -> Allocation | None:
        """Take resources for a request of `nodes` by the cluster's documented rule."""

    @abstractmethod
    def allocate_block(self, block: int) -> Allocation | None:
        """Take one named partition (block index); None if it is not usable now."""

    @abstractmethod
    def release(self, alloc: Allocation) -> None: ...

    @abstractmethod
    def carve(self, alloc: Allocation) -> ClusterState:
        """A state whose universe is exactly `alloc` (already taken from self), all free.

        Used for reservations: jobs started inside a reservation allocate from it.
        """

    @abstractmethod
    def merge_back(self, sub: ClusterState, alloc: Allocation) -> None:
        """Return reservation `alloc` carved as `sub`: what is free in sub becomes free here;
        what sub still has busy stays busy here (its holders release it here later)."""

    @abstractmethod
    def unit_down(self, unit: int) -> bool:
        """Mark failure unit down; False if it already was. Busy units must be released
        by the caller first (the engine interrupts the job holding it)."""

    @abstractmethod
    def unit_up(self, unit: int) -> None: ...

    @abstractmethod
    def problems(self) -> list[str]:
        """Invariant violations of this state (empty when consistent)."""


class Cluster(ABC):
    name: str
    total_nodes: int
    failure_units: int
    checkpoint_model: CheckpointModel

    @abstractmethod
    def alloc_size(self, nodes: int) -> int | None:
        """Nodes a request of `nodes` occupies (the partition size); None if never possible."""

    @abstractmethod
    def new_state(self) -> ClusterState:
        """The state with every resource free and up."""

    def describe(self) -> str:
        return f"{self.name}: {self.total_nodes} nodes"


class NodePool(Cluster):
    """`nodes:N` — N identical nodes; any subset can run a job."""

    def __init__(self, nodes: int, checkpoint_model: CheckpointModel | None = None):
        if nodes < 1:
            raise ClusterError(f"a node pool needs at least 1 node, got {nodes}")
        self.name = f"nodes:{nodes}"
        self.total_nodes = nodes
        self.failure_units = nodes
        self.checkpoint_model = checkpoint_model or CheckpointModel()

    def alloc_size(self, nodes: int) -> int | None:
        return nodes if 1 <= nodes <= self.total_nodes else None

    def new_state(self) -> PoolState:
        return PoolState(self.total_nodes)


# A pool's allocation is its size alone, and Allocation is frozen: one object per size is
# shared by every job of that size (the frozen __init__ runs interpreted: ~2% of a run).
_POOL_ALLOCATIONS: dict[int, Allocation] = {}
_POOL_ALLOCATIONS_KEPT = 65_536  # sizes kept: bounds the memory whatever the machine


class PoolState(ClusterState):
    """Counts only: identical nodes need no identities. Failure units are counted down."""

    __slots__ = ("universe", "free", "down")

    def __init__(self, universe: int, free: int | None = None, down: int = 0):
        self.universe = universe
        self.free = universe if free is None else free
        self.down = down

    @property
    def free_nodes(self) -> int:
        return self.free

    def copy(self) -> PoolState:
        return PoolState(self.universe, self.free, self.down)

    def fits(self, nodes: int) -> bool:
        return nodes <= self.free

    def allocate(self, nodes: int) -> Allocation | None:
        if nodes > self.free or nodes < 1:
            return None
        self.free -= nodes
        alloc = _POOL_ALLOCATIONS.get(nodes)
        if alloc is None:
            alloc = Allocation(nodes)
            if len(_POOL_ALLOCATIONS) < _POOL_ALLOCATIONS_KEPT:
                _POOL_ALLOCATIONS[nodes] = alloc
        return alloc

    def allocate_block(self, block: int) -> Allocation | None:
        raise ClusterError("a node pool has no named partitions; start the job by node count")

    def release(self, alloc: Allocation) -> None:
        if self.free + alloc.nodes + self.down > self.universe:
            raise ClusterError(f"releasing {alloc.nodes} nodes would exceed the pool")
        self.free += alloc.nodes

    def carve(self, alloc: Allocation) -> PoolState:
        return PoolState(alloc.nodes)

    def merge_back(self, sub: ClusterState, alloc: Allocation) -> None:
        assert isinstance(sub, PoolState)
        self.free += sub.free

    def unit_down(self, unit: int) -> bool:
        # Counts only: the engine has already released the victim's nodes, if any.
        if self.free < 1:
            return False
        self.free -= 1
        self.down += 1
        return True

    def unit_up(self, unit: int) -> None:
        if self.down < 1:
            raise ClusterError("no node is down")
        self.down -= 1
        self.free += 1

    def problems(self) -> list[str]:
        out = []
        if not 0 <= self.free <= self.universe:
            out.append(f"free nodes {self.free} outside [0, {self.universe}]")
        if self.free + self.down > self.universe:
            out.append(f"free {self.free} + down {self.down} exceed {self.universe}")
        return out
