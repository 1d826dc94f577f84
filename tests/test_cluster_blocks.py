"""`mira-blocks`: Mira's real block table, midplane + switch conflicts, shipped data."""

from __future__ import annotations

from collections import Counter
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedd.core.bgq import BlockState
from schedd.core.cluster import ClusterError
from schedd.core.mira_blocks import MiraBlocksCluster, parse_table, shipped_rows

SHARED = Path("/work/shared/clusters/mira-blocks.tsv")
MB = MiraBlocksCluster()
ROWS = {r.name: r for r in shipped_rows()}


def idx(name: str) -> int:
    return MB.block_index(name)


def conflict_by_names(a: str, b: str) -> bool:
    """Independent of the bitmasks: share a midplane or a switch, by name."""
    ra, rb = ROWS[a], ROWS[b]
    return bool(set(ra.midplanes) & set(rb.midplanes) or set(ra.switches) & set(rb.switches))


def test_block_count_and_histogram():
    assert len(MB.blocks) == 294
    assert dict(sorted(Counter(b.nodes for b in MB.blocks).items())) == {
        512: 96,
        1024: 96,
        2048: 27,
        4096: 33,
        8192: 9,
        12288: 12,
        16384: 10,
        24576: 3,
        32768: 7,
        49152: 1,
    }
    assert (MB.total_nodes, MB.failure_units, MB.name) == (49152, 96, "mira-blocks")


def test_table_sorted_by_size_then_name():
    keys = [(b.nodes, b.name) for b in MB.blocks]
    assert keys == sorted(keys)


def test_midplane_bits_in_sorted_order():
    assert len(MB.midplane_names) == 96
    assert MB.midplane_names[:3] == ("R00-M0", "R00-M1", "R01-M0")
    assert MB.midplane_names[-1] == "R2F-M1"
    assert MB.unit_index("R0F-M1") == 31 and MB.unit_index("R10-M0") == 32
    r26 = MB.allocs[idx("MIR-08800-3BB31-512")]  # R26-M0 = row 2 col 6 -> 2*32 + 6*2
    assert r26.covers_unit(76) and not r26.covers_unit(77)
    assert r26.mask & MB.unit_mask == 1 << 76


@pytest.mark.parametrize(
    ("nodes", "size"),
    [(1, 512), (512, 512), (513, 1024), (2049, 4096), (8193, 12288), (40000, 49152), (49153, None)],
)
def test_alloc_size(nodes, size):
    assert MB.alloc_size(nodes) == size


def test_conflict_through_a_switch_only():
    # MIR-08880-3BBF1-1024 uses R27's midplanes but R26's switches too (it passes through).
    a, b = "MIR-08880-3BBF1-1024", "MIR-08800-3BB31-512"
    assert not set(ROWS[a].midplanes) & set(ROWS[b].midplanes)
    assert MB.masks[idx(a)] & MB.masks[idx(b)]
    s = MB.new_state()
    s.allocate_block(idx(a))
    assert not s.is_usable(idx(b))
    assert s.free_nodes == 49152 - 1024  # R26-M0 is idle, just not usable


def test_conflict_by_midplane():
    assert MB.masks[idx("MIR-08800-3BB31-512")] & MB.masks[idx("MIR-08000-3BFF1-8192")]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("MIR-40CC0-73FF1-512", "MIR-40C40-73F71-512"),  # R0B-M0 vs R0A-M1
        ("MIR-08C00-3BF71-1-1024", "MIR-08880-3BBF1-1024"),
    ],  # R22 vs R27 (+R26 switches)
)
def test_non_conflicting_pairs(a, b):
    assert not MB.masks[idx(a)] & MB.masks[idx(b)]
    s = MB.new_state()
    assert s.allocate_block(idx(a)) is not None and s.allocate_block(idx(b)) is not None


def test_masks_agree_with_names_for_every_pair():
    names = [b.name for b in MB.blocks]
    for i, a in enumerate(names):
        for j in range(i):
            assert bool(MB.masks[i] & MB.masks[j]) == conflict_by_names(a, names[j])


def test_first_choice_is_least_blocking_then_name():
    s = MB.new_state()
    singles = [b.name for b in MB.blocks if b.nodes == 512]
    cost = {n: sum(conflict_by_names(n, m) for m in ROWS) for n in singles}
    want = min(singles, key=lambda n: (cost[n], n))
    assert cost[want] == 25  # several R2x singles tie at 25 overlapping blocks
    assert want == "MIR-08080-3B3B1-512"  # R21-M0, the first of them by name
    first = s.allocate(512)
    assert first is not None and MB.block_name(first.block) == want
    # its buddy R21-M1 now blocks nothing else, so it goes next
    second = s.allocate(512)
    assert second is not None and MB.block_name(second.block) == "MIR-080C0-3B3F1-512"


def test_unit_down_blocks_the_midplane_not_pass_through():
    s = MB.new_state()
    assert s.unit_down(MB.unit_index("R26-M0"))
    assert not s.is_usable(idx("MIR-08800-3BB31-512"))
    assert s.is_usable(idx("MIR-08880-3BBF1-1024"))  # uses only R26's switches
    assert s.free_nodes == 49152 - 512
    s.unit_up(MB.unit_index("R26-M0"))
    assert len(s.usable_blocks()) == 294 and s.problems() == []


def test_carve_and_merge_back_keep_switches():
    s = MB.new_state()
    res = s.allocate_block(idx("MIR-08000-3BFF1-8192"))  # R20..R27
    assert res is not None
    sub = s.carve(res)
    assert sub.free_nodes == 8192
    inside = [MB.block_name(i) for i in sub.usable_blocks()]
    assert "MIR-08880-3BBF1-1024" in inside  # its R26 switches belong to the reservation
    job = sub.allocate_block(idx("MIR-08880-3BBF1-1024"))
    assert job is not None
    s.merge_back(sub, res)
    assert s.free_nodes == 49152 - 1024 and s.problems() == []
    assert not s.is_usable(idx("MIR-08800-3BB31-512"))
    s.release(job)
    assert len(s.usable_blocks()) == 294


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.booleans(), st.sampled_from(sorted(set(MB.sizes) | {1, 600})), st.integers(0, 10**6)
        ),
        max_size=50,
    )
)
def test_busy_blocks_never_share_midplane_or_switch_by_name(ops):
    s: BlockState = MB.new_state()
    live: list[int] = []
    for is_alloc, nodes, pick in ops:
        if is_alloc:
            a = s.allocate(nodes)
            if a is not None:
                live.append(a.block)
        elif live:
            s.release(MB.allocs[live.pop(pick % len(live))])
        held = [MB.block_name(i) for i in live]
        assert not any(conflict_by_names(a, b) for k, a in enumerate(held) for b in held[:k])
        assert s.free_nodes + 512 * sum(len(ROWS[n].midplanes) for n in held) == 49152


def test_parse_table_rejects_bad_input():
    with pytest.raises(ClusterError, match="header"):
        parse_table("# c\nname\tnodes\n")
    with pytest.raises(ClusterError, match="midplanes"):
        parse_table("name\tnodes\tmidplanes\tswitches\nX\t1024\tR00-M0\tA_R00-M0\n")


def test_shipped_copy_keeps_header_comments():
    text = resources.files("schedd.data").joinpath("mira-blocks.tsv").read_text()
    assert text.startswith("# Mira (IBM Blue Gene/Q, ALCF) block list")
    assert "share a midplane or a switch" in text


@pytest.mark.skipif(not SHARED.exists(), reason="/work/shared is not available")
def test_shipped_copy_identical_to_shared():
    shipped = resources.files("schedd.data").joinpath("mira-blocks.tsv").read_bytes()
    assert shipped == SHARED.read_bytes()
