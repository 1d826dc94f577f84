"""Aligned Blue Gene/Q partitions (`mira`, `bgq:M`): block table, conflicts, allocation rule,
reservations, failures, and a random-sequence property over every block cluster."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedd.core.bgq import BgqCluster, BlockCluster, BlockState
from schedd.core.cluster import Allocation, CheckpointModel, ClusterError
from schedd.core.mira_blocks import MiraBlocksCluster

MIRA = BgqCluster(96, "mira")
BGQ16 = BgqCluster(16)


def sizes(cluster: BlockCluster) -> dict[int, int]:
    return dict(sorted(Counter(b.nodes for b in cluster.blocks).items()))


def take(state: BlockState, name: str) -> Allocation:
    alloc = state.allocate_block(state.cluster.block_index(name))
    assert alloc is not None, name
    return alloc


def names(state: BlockState, blocks: list[int]) -> list[str]:
    return [state.cluster.block_name(i) for i in blocks]


def lowest_offset_first(state: BlockState, nodes: int) -> Allocation | None:
    """The rule least-blocking replaces: the usable block with the lowest first midplane."""
    size = state.cluster.alloc_size(nodes)
    usable = state.usable_blocks(size) if size else []
    return state.allocate_block(usable[0]) if usable else None


# -- block table -------------------------------------------------------------------------


def test_mira_block_counts_per_size():
    assert sizes(MIRA) == {
        512: 96,
        1024: 48,
        2048: 24,
        4096: 12,
        8192: 6,
        12288: 4,
        16384: 3,
        24576: 2,
        32768: 1,
        49152: 1,
    }
    assert len(MIRA.blocks) == 197
    assert (MIRA.total_nodes, MIRA.failure_units, MIRA.name) == (49152, 96, "mira")


def test_mira_offsets_are_aligned_and_inside():
    def firsts(nodes: int) -> list[int]:
        return [(b.mask & -b.mask).bit_length() - 1 for b in MIRA.blocks if b.nodes == nodes]

    assert firsts(32768) == [0]  # 64 midplanes: offset 64 would leave the machine
    assert firsts(24576) == [0, 48]
    assert firsts(12288) == [0, 24, 48, 72]
    assert firsts(16384) == [0, 32, 64]
    assert [b.name for b in MIRA.blocks if b.nodes == 8192][:2] == ["M00-M15", "M16-M31"]


def test_bgq16_block_counts():
    assert sizes(BGQ16) == {512: 16, 1024: 8, 2048: 4, 4096: 2, 8192: 1}
    assert len(BGQ16.blocks) == 31
    assert BGQ16.total_nodes == 8192 and BGQ16.name == "bgq:16"


def test_odd_machine_sizes():
    five = BgqCluster(5)  # sizes 1, 2, 4 midplanes: 5 + 2 + 1 blocks
    assert sizes(five) == {512: 5, 1024: 2, 2048: 1}
    twenty = BgqCluster(20)  # 16 fits once; 24 does not fit at all
    assert twenty.total_nodes == 10240 and twenty.alloc_size(8193) is None


@pytest.mark.parametrize("bad", [0, 97, -1])
def test_bad_midplane_count(bad):
    with pytest.raises(ClusterError):
        BgqCluster(bad)


@pytest.mark.parametrize(
    ("nodes", "size"),
    [
        (1, 512),
        (512, 512),
        (513, 1024),
        (1024, 1024),
        (1025, 2048),
        (3000, 4096),
        (4097, 8192),
        (8193, 12288),
        (12289, 16384),
        (16385, 24576),
        (24577, 32768),
        (32769, 49152),
        (49152, 49152),
        (49153, None),
        (0, None),
    ],
)
def test_alloc_size_mira(nodes, size):
    assert MIRA.alloc_size(nodes) == size


def test_alloc_size_bgq16_caps_at_machine():
    assert BGQ16.alloc_size(8192) == 8192
    assert BGQ16.alloc_size(8193) is None
    assert BGQ16.new_state().allocate(8193) is None
    assert not BGQ16.new_state().fits(8193)


def test_cluster_attributes():
    assert MIRA.checkpoint_model == CheckpointModel()
    assert MIRA.block_name(0) == "M00" and MIRA.block_name(96) == "M00-M01"
    assert MIRA.block_index("M48-M95") == 194  # 193 blocks of 1..32 midplanes come first
    assert MIRA.block_index("M00-M95") == 196
    with pytest.raises(ClusterError):
        MIRA.block_index("M01-M02")


# -- parent/child conflicts ----------------------------------------------------------------


def test_busy_512_blocks_all_its_parents():
    s = MIRA.new_state()
    take(s, "M05")
    unusable = sorted(set(range(197)) - set(s.usable_blocks()))
    assert names(s, unusable) == [
        "M05",
        "M04-M05",
        "M04-M07",
        "M00-M07",
        "M00-M15",
        "M00-M23",
        "M00-M31",
        "M00-M47",
        "M00-M63",
        "M00-M95",
    ]
    assert s.is_usable(MIRA.block_index("M48-M95"))
    assert s.free_nodes == 49152 - 512


def test_busy_8192_blocks_children_and_overlaps():
    s = MIRA.new_state()
    take(s, "M16-M31")
    inside = 16 + 8 + 4 + 2  # children of sizes 1, 2, 4, 8 midplanes
    parents = ["M00-M23", "M24-M47", "M00-M31", "M00-M47", "M00-M63", "M00-M95"]
    assert len(s.usable_blocks()) == 197 - 1 - inside - len(parents)
    for name in ["M16", "M30-M31", "M24-M31", *parents]:
        assert not s.is_usable(MIRA.block_index(name)), name
    assert s.fits(12288)  # M48-M71 and M72-M95 are still whole
    assert s.allocate_block(MIRA.block_index("M16")) is None


def test_release_restores_everything():
    s = MIRA.new_state()
    a = take(s, "M16-M31")
    s.release(a)
    assert len(s.usable_blocks()) == 197 and s.free_nodes == 49152 and s.problems() == []


def test_release_errors():
    s = MIRA.new_state()
    pair = take(s, "M00-M01")
    with pytest.raises(ClusterError, match="not busy"):
        s.release(MIRA.allocs[0])  # M00 lies inside the busy pair but was never taken
    s.release(pair)
    with pytest.raises(ClusterError, match="not busy"):
        s.release(pair)
    with pytest.raises(ClusterError):
        s.release(Allocation(512, 0, mask=0b10))  # mask is not block 0's
    with pytest.raises(ClusterError):
        s.allocate_block(197)


def test_allocation_fields():
    a = BGQ16.new_state().allocate(700)
    assert a == Allocation(1024, BGQ16.block_index("M00-M01"), 0b11)
    assert a is not None and a.covers_unit(1) and not a.covers_unit(2)


# -- the least-blocking rule -------------------------------------------------------------


def test_least_blocking_worked_example():
    """docs/clusters.md: bgq:4 with M02 busy; a 512 request goes to M03, not M00."""
    s = BgqCluster(4).new_state()
    take(s, "M02")
    assert {n: s.blocking_cost(s.cluster.block_index(n)) for n in ["M00", "M01", "M03"]} == {
        "M00": 1,
        "M01": 1,
        "M03": 0,  # M00/M01 would break the free pair M00-M01
    }
    assert first_names(s, 512, 1) == ["M03"]
    assert s.fits(1024)

    lowest = BgqCluster(4).new_state()
    take(lowest, "M02")
    assert lowest_offset_first(lowest, 512) == lowest.cluster.allocs[0]
    assert not lowest.fits(1024)


def first_names(state: BlockState, nodes: int, count: int) -> list[str]:
    out = []
    for _ in range(count):
        a = state.allocate(nodes)
        assert a is not None
        out.append(state.cluster.block_name(a.block))
    return out


def test_ties_go_to_lowest_midplane_and_pack_buddies():
    # bgq:16 is a perfect binary tree: every single overlaps 5 usable blocks, so the tie
    # goes to M00; then M01 breaks nothing new, M02/M03 tie at 2, ...
    assert first_names(BGQ16.new_state(), 512, 6) == ["M00", "M01", "M02", "M03", "M04", "M05"]


def test_empty_mira_starts_outside_the_64_midplane_block():
    # The only 32768 block is M00-M63: a single in M64..M95 overlaps 9 usable blocks,
    # one in M00..M63 overlaps 10, so small jobs go high and keep the 64 whole.
    s = MIRA.new_state()
    assert s.blocking_cost(MIRA.block_index("M00")) == 9
    assert s.blocking_cost(MIRA.block_index("M64")) == 8
    assert first_names(s, 512, 4) == ["M64", "M65", "M66", "M67"]
    assert first_names(s, 1024, 2) == ["M68-M69", "M70-M71"]
    assert s.fits(32768)


def test_larger_request_fills_an_already_broken_parent():
    s = MIRA.new_state()
    take(s, "M00")
    # M08-M15 breaks nothing new above it (M00-M15 is already broken); M16-M23 would
    # also break the free 8192 M16-M31.
    assert s.blocking_cost(MIRA.block_index("M08-M15")) == 14
    assert s.blocking_cost(MIRA.block_index("M16-M23")) == 15
    assert first_names(s, 4096, 1) == ["M08-M15"]


def test_least_blocking_keeps_larger_blocks_than_lowest_offset():
    """Odd midplanes 65..95 busy, then 16 single-midplane jobs arrive."""

    def prepared() -> BlockState:
        s = MIRA.new_state()
        for m in range(65, 96, 2):
            take(s, f"M{m:02d}")
        return s

    least, lowest = prepared(), prepared()
    for _ in range(16):
        assert least.allocate(512) is not None
        assert lowest_offset_first(lowest, 512) is not None
    assert least.free_nodes == lowest.free_nodes == 49152 - 32 * 512
    # least-blocking filled the holes M64, M66, ..., M94: M00-M63 stays whole
    assert least.fits(32768) and least.fits(24576)
    # lowest-offset took M00..M15: neither 48-midplane block nor the 64 survives
    assert not lowest.fits(32768) and not lowest.fits(24576)
    assert lowest.fits(16384)


# -- state mechanics ---------------------------------------------------------------------


def test_copy_is_independent():
    s = MIRA.new_state()
    c = s.copy()
    c.allocate(49152)
    assert s.free_nodes == 49152 and c.free_nodes == 0 and s.fits(49152)


def test_carve_and_merge_back():
    s = MIRA.new_state()
    res = take(s, "M16-M31")
    assert s.free_nodes == 40960
    sub = s.carve(res)
    assert sub.free_nodes == 8192 and len(sub.usable_blocks()) == 31
    assert sub.fits(8192) and not sub.fits(8193)
    job = sub.allocate(512)
    assert job is not None and MIRA.block_name(job.block) == "M16"
    done = sub.allocate(4096)
    assert done is not None and MIRA.block_name(done.block) == "M24-M31"
    sub.release(done)
    s.merge_back(sub, res)
    assert s.free_nodes == 49152 - 512  # only the job inside stays busy
    assert s.held_blocks() == [job.block] and s.problems() == []
    assert not s.fits(49152) and s.fits(24576)
    s.release(job)  # its holder releases it in the parent
    assert len(s.usable_blocks()) == 197 and s.problems() == []


def test_carve_and_merge_errors():
    s = MIRA.new_state()
    with pytest.raises(ClusterError):
        s.carve(MIRA.allocs[0])  # not taken
    res = take(s, "M00-M01")
    with pytest.raises(ClusterError):
        s.merge_back(BGQ16.new_state(), res)
    sub = s.carve(res)
    assert sub.unit_down(50) is False  # outside the reservation
    sub.merge_back(sub.carve(take(sub, "M00")), MIRA.allocs[0])  # nesting works
    assert sub.problems() == []


def test_unit_down_and_up():
    s = MIRA.new_state()
    assert s.unit_down(5) is True
    assert s.unit_down(5) is False
    assert s.free_nodes == 49152 - 512
    assert len(s.usable_blocks()) == 187  # the same 10 blocks a busy M05 would block
    assert not s.fits(49152) and s.fits(24576)
    assert "M05" not in first_names(s, 512, 95)
    assert s.allocate(512) is None
    s2 = MIRA.new_state()
    s2.unit_down(5)
    s2.unit_up(5)
    assert len(s2.usable_blocks()) == 197 and s2.problems() == []
    with pytest.raises(ClusterError, match="not down"):
        s2.unit_up(5)
    take(s2, "M04-M05")
    assert s2.unit_down(4) is False  # busy: nothing is marked down
    assert s2.down == 0 and s2.problems() == []
    with pytest.raises(ClusterError):
        s2.unit_down(96)


def test_problems_detects_corruption():
    s = MIRA.new_state()
    take(s, "M00")
    s.down |= 1
    assert any("busy and down" in p for p in s.problems())
    t = MIRA.new_state()
    t.held |= 1 << 0 | 1 << 96  # M00 and its parent M00-M01 both "held"
    t.busy |= 0b11
    assert any("overlap" in p for p in t.problems())


# -- property: random sequences ------------------------------------------------------------

CLUSTERS = {
    "mira": MIRA,
    "bgq:16": BGQ16,
    "bgq:5": BgqCluster(5),
    "mira-blocks": MiraBlocksCluster(),
}

op = st.one_of(
    st.tuples(st.just("alloc"), st.integers(1, 49152)),
    st.tuples(st.just("alloc"), st.sampled_from([1, 512, 513, 1024, 2048, 4096, 8192])),
    st.tuples(st.just("release"), st.integers(0, 10**6)),
    st.tuples(st.just("down"), st.integers(0, 95)),
    st.tuples(st.just("up"), st.integers(0, 10**6)),
)


def expected_choice(state: BlockState, nodes: int) -> int | None:
    """Brute-force least-blocking: min (cost, table index) over usable blocks of the size."""
    size = state.cluster.alloc_size(nodes)
    usable = state.usable_blocks(size) if size else []
    return min(usable, key=lambda i: (state.blocking_cost(i), i)) if usable else None


def check(state: BlockState, live: list[Allocation]) -> None:
    cluster = state.cluster
    assert state.problems() == []
    for k, a in enumerate(live):
        assert all(not a.mask & b.mask for b in live[:k])
    busy = sum(a.nodes for a in live)
    down = state.down.bit_count() * 512
    universe = (cluster.unit_mask & ~state.outside).bit_count() * 512
    assert state.free_nodes + busy + down == universe


def step(state: BlockState, live: list[Allocation], kind: str, arg: int) -> None:
    units = state.cluster.failure_units
    if kind == "alloc":
        fits, want = state.fits(arg), expected_choice(state, arg)
        a = state.allocate(arg)
        assert fits == (a is not None) and (a.block if a else None) == want
        if a is not None:
            assert a.nodes == state.cluster.alloc_size(arg)
            live.append(a)
    elif kind == "release" and live:
        state.release(live.pop(arg % len(live)))
    elif kind == "down" and arg < units:
        victims = [a for a in live if a.covers_unit(arg)]
        for v in victims:  # the engine interrupts the holder first
            live.remove(v)
            state.release(v)
        state.unit_down(arg)
    elif kind == "up" and state.down:
        downs = [u for u in range(units) if state.down >> u & 1]
        state.unit_up(downs[arg % len(downs)])


@pytest.mark.parametrize("spec", list(CLUSTERS))
@settings(max_examples=60, deadline=None)
@given(ops=st.lists(op, max_size=60))
def test_random_sequences_keep_invariants(spec, ops):
    state = CLUSTERS[spec].new_state()
    live: list[Allocation] = []
    for kind, arg in ops:
        step(state, live, kind, arg)
        check(state, live)
    for a in live:
        state.release(a)
    assert state.free_nodes + state.down.bit_count() * 512 == state.cluster.total_nodes


@settings(max_examples=40, deadline=None)
@given(
    outer=st.lists(op, max_size=20),
    inner=st.lists(op, max_size=20),
    size=st.sampled_from([1024, 4096, 8192, 16384]),
)
def test_random_sequences_through_a_reservation(outer, inner, size):
    state = MIRA.new_state()
    live: list[Allocation] = []
    for kind, arg in outer:
        step(state, live, kind, arg)
    res = state.allocate(size)
    if res is None:
        return
    sub = state.carve(res)
    inside: list[Allocation] = []
    for kind, arg in inner:
        if kind == "down" and not res.covers_unit(arg):
            continue
        step(sub, inside, kind, arg)
        check(sub, inside)
        assert all(a.mask & ~res.mask == 0 for a in inside)
    state.merge_back(sub, res)
    check(state, live + inside)
