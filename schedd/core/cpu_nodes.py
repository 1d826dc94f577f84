"""A machine of named nodes with CPUs each, allocated by CPU: Slurm's model.

`CpuNodes` is the cluster a slurm.conf describes (`schedd simulate --slurm-conf`): nodes
`n1..nK` with `cpus[i]` CPUs each. Its unit of size is the CPU, Slurm's own accounting
unit: a job's `nodes` on this cluster counts CPUs, an exclusive job on k nodes holds every
CPU of those nodes, and the engine's busy-node figures are busy CPUs.

Where a job runs is named by a placement: `((node, cpus), ...)`, which the Slurm policy
chooses as Slurm's select plugin would and the engine validates here (`allocate_place`).
`allocate(n)` is the rule for policies that only give a size: the fewest nodes, fullest
first (a best fit), lowest index on ties. Failure units are nodes.
"""

from __future__ import annotations

from collections.abc import Sequence

from .cluster import Allocation, Cluster, ClusterError, ClusterState

Place = tuple[tuple[int, int], ...]


class CpuNodes(Cluster):
    def __init__(self, cpus: Sequence[int], names: Sequence[str] | None = None,
                 name: str = "slurm"):
        if not cpus:
            raise ClusterError("a machine needs at least one node")
        if any(c < 1 for c in cpus):
            raise ClusterError("every node needs at least 1 CPU")
        self.cpus = tuple(int(c) for c in cpus)
        self.node_names = tuple(names) if names is not None else tuple(
            f"n{i + 1}" for i in range(len(self.cpus)))
        if len(self.node_names) != len(self.cpus):
            raise ClusterError("one name per node")
        self.name = name
        self.total_nodes = sum(self.cpus)  # CPUs: this machine's unit of size
        self.failure_units = len(self.cpus)
        from .cluster import CheckpointModel

        self.checkpoint_model = CheckpointModel()

    @property
    def node_count(self) -> int:
        return len(self.cpus)

    def alloc_size(self, nodes: int) -> int | None:
        return nodes if 1 <= nodes <= self.total_nodes else None

    def new_state(self) -> CpuNodesState:
        return CpuNodesState(self.cpus)

    def describe(self) -> str:
        return (f"{self.name}: {self.node_count} nodes, {self.total_nodes} CPUs "
                f"({_cpu_summary(self.cpus)})")


def _cpu_summary(cpus: tuple[int, ...]) -> str:
    kinds = sorted(set(cpus))
    if len(kinds) == 1:
        return f"{kinds[0]} CPUs each"
    return ", ".join(f"{cpus.count(k)} x {k} CPUs" for k in kinds)


class CpuNodesState(ClusterState):
    """Free CPUs per node; a down node has none free and is marked down."""

    __slots__ = ("cpus", "free", "down", "_free_total")

    def __init__(self, cpus: tuple[int, ...], free: list[int] | None = None,
                 down: set[int] | None = None):
        self.cpus = cpus
        self.free = list(cpus) if free is None else free
        self.down = set() if down is None else down
        self._free_total = sum(self.free)

    @property
    def free_nodes(self) -> int:
        return self._free_total

    def copy(self) -> CpuNodesState:
        return CpuNodesState(self.cpus, list(self.free), set(self.down))

    def idle(self, node: int) -> bool:
        """Whether every CPU of `node` is free (an exclusive job may take it)."""
        return self.free[node] == self.cpus[node] and node not in self.down

    def fits(self, nodes: int) -> bool:
        return 1 <= nodes <= self._free_total

    def best_fit(self, cpus: int) -> Place | None:
        """The placement `allocate(cpus)` takes: one node if any can hold the request (the
        fullest such node), else the fewest nodes, largest free first."""
        if not 1 <= cpus <= self._free_total:
            return None
        single = [(f, i) for i, f in enumerate(self.free) if f >= cpus]
        if single:
            _, node = min(single)
            return ((node, cpus),)
        order = sorted((-f, i) for i, f in enumerate(self.free) if f > 0)
        out = []
        left = cpus
        for neg, i in order:
            take = min(-neg, left)
            out.append((i, take))
            left -= take
            if left == 0:
                break
        return tuple(sorted(out))

    def allocate(self, nodes: int) -> Allocation | None:
        place = self.best_fit(nodes)
        return None if place is None else self.allocate_place(place)

    def allocate_place(self, place: Place) -> Allocation | None:
        """Take exactly `place`; None (nothing taken) if a node lacks the CPUs."""
        seen = set()
        total = 0
        for node, cpus in place:
            if not 0 <= node < len(self.cpus):
                raise ClusterError(f"no node {node} (the machine has {len(self.cpus)})")
            if cpus < 1 or node in seen:
                raise ClusterError(f"bad placement {place!r}")
            seen.add(node)
            if self.free[node] < cpus:
                return None
            total += cpus
        mask = 0
        for node, cpus in place:
            self.free[node] -= cpus
            mask |= 1 << node
        self._free_total -= total
        return Allocation(total, mask=mask, place=tuple(place))

    def allocate_block(self, block: int) -> Allocation | None:
        raise ClusterError("a CPU-node machine has no named partitions; start the job by a "
                           "placement or a CPU count")

    def release(self, alloc: Allocation) -> None:
        for node, cpus in alloc.place:
            if self.free[node] + cpus > self.cpus[node]:
                raise ClusterError(f"releasing {cpus} CPUs would exceed node {node}")
        for node, cpus in alloc.place:
            self.free[node] += cpus
        self._free_total += alloc.nodes

    def carve(self, alloc: Allocation) -> ClusterState:
        raise ClusterError("reservations are not supported on a CPU-node machine")

    def merge_back(self, sub: ClusterState, alloc: Allocation) -> None:
        raise ClusterError("reservations are not supported on a CPU-node machine")

    def unit_down(self, unit: int) -> bool:
        if unit in self.down or self.free[unit] != self.cpus[unit]:
            return False
        self.down.add(unit)
        self.free[unit] = 0
        self._free_total -= self.cpus[unit]
        return True

    def unit_up(self, unit: int) -> None:
        if unit not in self.down:
            raise ClusterError(f"node {unit} is not down")
        self.down.discard(unit)
        self.free[unit] = self.cpus[unit]
        self._free_total += self.cpus[unit]

    def problems(self) -> list[str]:
        out = []
        for i, (f, c) in enumerate(zip(self.free, self.cpus, strict=True)):
            if not 0 <= f <= c:
                out.append(f"node {i}: {f} free CPUs outside [0, {c}]")
        if sum(self.free) != self._free_total:
            out.append(f"free CPU total {self._free_total} != {sum(self.free)}")
        return out
