"""Slurm's node choice (cons_tres `_eval_nodes`), its will-run test and Fair Tree on
hand-worked examples, and the node bookkeeping against a plain per-node list."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedd.slurm import fairshare
from schedd.slurm.assoc import Assoc, Associations
from schedd.slurm.select import Nodes, Placement, Request, Running, runs_of, will_run


def nodes_with(total: list[int], used: dict[int, int]) -> Nodes:
    nodes = Nodes(total)
    for node, cpus in used.items():
        full = 1 << node if cpus == total[node] else 0
        nodes.take(Placement(full, () if full else ((node, cpus),)))
    return nodes


ALL4 = 0b1111


def test_runs_of_a_mask() -> None:
    assert runs_of(0b1101101) == [(0, 1), (2, 2), (5, 2)]
    assert runs_of(0) == []


def test_a_per_core_job_takes_the_fullest_node_that_holds_it() -> None:
    # 4 nodes of 4 CPUs, node 1 has 2 free: 3 CPUs go to the first node with the fewest
    # free CPUs that still hold 3 (node 0); 2 CPUs to node 1, an exact fit.
    nodes = nodes_with([4, 4, 4, 4], {1: 2})
    three = nodes.place(Request(3, 1, 3, False), ALL4)
    assert three is not None and three.place([4] * 4) == ((0, 3),)
    two = nodes.place(Request(2, 1, 2, False), ALL4)
    assert two is not None and two.place([4] * 4) == ((1, 2),)


def test_a_per_core_job_too_big_for_one_node_fills_nodes_in_index_order() -> None:
    nodes = nodes_with([4, 4, 4, 4], {1: 2})
    six = nodes.place(Request(6, 1, 6, False), ALL4)
    assert six is not None and six.place([4] * 4) == ((0, 4), (1, 2))


def test_an_exclusive_job_takes_the_tightest_run_of_idle_nodes() -> None:
    nodes = nodes_with([4, 4, 4, 4], {1: 2})  # idle: 0 and 2-3
    two = nodes.place(Request(2, 2, 2, True), ALL4)
    assert two is not None and two.full == 0b1100 and not two.partial  # [2,3] holds 2
    one = nodes.place(Request(1, 1, 1, True), ALL4)
    assert one is not None and one.full == 0b0001  # [0] is the tightest that holds 1
    # No run holds three: the largest run first, then the next.
    three = nodes.place(Request(3, 3, 3, True), ALL4)
    assert three is not None and three.full == 0b1101
    assert nodes.place(Request(4, 4, 4, True), ALL4) is None


def test_usable_nodes_restrict_the_choice() -> None:
    nodes = Nodes([4, 4, 4, 4])
    two = nodes.place(Request(2, 2, 2, True), 0b1010)
    assert two is not None and two.full == 0b1010


def test_will_run_releases_jobs_in_windows_and_reports_the_last_end() -> None:
    # Three busy nodes ending at 100, 140 and 250. One node is free at 100, but the first
    # window (30 s past 100 rounded up to 120, i.e. up to 150) releases 100 and 140 together:
    # Slurm's expected start is 140.
    nodes = nodes_with([1, 1, 1], {0: 1, 1: 1, 2: 1})
    running = [Running(100.0, Placement(0b001), 100.0), Running(140.0, Placement(0b010), 140),
               Running(250.0, Placement(0b100), 250.0)]
    one = Request(1, 1, 1, True)
    assert will_run(nodes, 0b111, one, running, now=0.0)[0] == 140.0
    # Three nodes: the next window is 60 s (120 + 60 = 180 < 250), then 120 s: 250.
    three = Request(3, 3, 3, True)
    start, at = will_run(nodes, 0b111, three, running, now=0.0)
    assert start == 250.0 and at.full == 0b111
    # Fits now: now.
    free = Nodes([1, 1, 1])
    assert will_run(free, 0b111, one, running, now=5.0)[0] == 5.0
    # Never on these nodes: None; now_only and busy: None.
    assert will_run(nodes, 0b111, Request(4, 4, 4, True), running, now=0.0) is None
    assert will_run(nodes, 0b111, one, running, now=0.0, now_only=True) is None


def test_will_run_skips_a_job_off_the_usable_nodes_without_closing_the_window() -> None:
    # job_test.c `_will_run_test` walks every running job in end order: after each
    # release it peeks at the next one and closes the group if it ends past the window,
    # but a job on none of the usable nodes is skipped before that check. Four nodes;
    # the job may use nodes 1-3 only (node 0 is another partition's). Running: node 1
    # until 78, node 2 until 90, node 0 (not usable) until 102, node 3 until 150.
    # The first window: 78 rounded up to 90, + 30 s = 120. After node 2's release (90)
    # the peek is node 0's job (102 <= 120), so the group goes on; that job is skipped,
    # and the next, node 3's (150), is released in the same group: three nodes at 150.
    # (In the partitions reference runs, Slurm reserved a long job at 150 s on this
    # path, which ends its first group by 120 s if the skipped job is left out.)
    nodes = nodes_with([1, 1, 1, 1], {0: 1, 1: 1, 2: 1, 3: 1})
    running = [Running(78.0, Placement(0b0010), 108.0), Running(90.0, Placement(0b0100), 120),
               Running(102.0, Placement(0b0001), 132.0),
               Running(150.0, Placement(0b1000), 180.0)]
    two = Request(2, 2, 2, True)
    start, at = will_run(nodes, 0b1110, two, running, now=0.0)
    assert start == 150.0 and at.full == 0b0110
    # Without the job on node 0 the group closes at node 3's job (150 > 120): 90.
    start, at = will_run(nodes, 0b1110, two, running[:2] + running[3:], now=0.0)
    assert start == 90.0 and at.full == 0b0110
    # A skipped job past the window closes nothing: the group already closed at its peek.
    late = [running[0], running[1], Running(125.0, Placement(0b0001), 155.0), running[3]]
    assert will_run(nodes, 0b1110, two, late, now=0.0)[0] == 90.0


def test_jobs_ending_in_the_same_second_are_walked_in_submission_order() -> None:
    # `_will_run_test` sorts slurmctld's job list, which is in submission order, by
    # end_time with glibc's qsort (a stable merge sort): jobs ending in the same second
    # keep their submission order, whatever order they started in. Four nodes of one
    # CPU, exclusive jobs; now 0, records of 10 s. Before the cycle, node 3 is busy
    # until 200 and node 2 until 300. The cycle starts job 2 (usable: node 0) and then
    # job 1 (node 1), both until 100: job 2 is first by priority (another partition's
    # tier, say), job 1 by submission. Job 9 may use nodes 0 and 2, for 50 s.
    # Node 2 alone gives 300; job 2's reservation holds node 0 until 100, so 100 is
    # tried. The walk (job 1, job 2, node 3's, node 2's): job 1 has no usable node and
    # is skipped; job 2 is released, the window is 100 rounded up to 120 plus 30 s, and
    # the peek, node 3's job (200), closes the group: node 0 at 100.
    from schedd.slurm.backfill import Candidate, backfill_cycle
    from schedd.slurm.select import by_end_then_submission

    nodes = nodes_with([1, 1, 1, 1], {2: 1, 3: 1})
    one = Request(1, 1, 1, True)
    running = [Running(200.0, Placement(0b1000), 200.0, 3),
               Running(300.0, Placement(0b0100), 300.0, 4)]
    candidates = [Candidate(2, 0b0001, 100.0, one, False),
                  Candidate(1, 0b0010, 100.0, one, False),
                  Candidate(9, 0b0101, 50.0, one, False)]

    def start(job: Candidate, at: Placement) -> Running:
        nodes.take(at)
        return Running(job.limit, at, job.limit, job.id)  # submission order = id here

    plans: list[tuple[float, int, float, int]] = []
    # exhaustive: job 9 is planned though nothing can start after it (the cycle's own
    # shortcut stops there, the plan changing nothing then)
    backfill_cycle(0.0, candidates, nodes, running, ALL4, 10, 1000.0, 100, 0, 0, 0.0,
                   start, exhaustive=True, plans=plans)
    assert [run.seq for run in running] == [1, 2, 3, 4]
    assert plans == [(0.0, 9, 100.0, 0b0001)]
    # In the order they started (job 2, then job 1), the peek after job 2's release
    # is job 1 (100, inside the window): the group goes on past node 3's job to node
    # 2's, and the start is 300 — where Slurm planned 100.
    started = sorted(running, key=lambda run: run.end)
    started[0], started[1] = started[1], started[0]
    assert [run.seq for run in started] == [2, 1, 3, 4]
    assert will_run(nodes, 0b0101, one, started, now=0.0)[0] == 300.0
    assert will_run(nodes, 0b0101, one, sorted(started, key=by_end_then_submission),
                    now=0.0)[0] == 100.0


def test_will_run_past_a_jobs_limit_guesses_its_end() -> None:
    nodes = nodes_with([1], {0: 1})
    running = [Running(50.0, Placement(0b1), 80.0)]  # end 50 passed: killed by 80
    assert will_run(nodes, 0b1, Request(1, 1, 1, True), running, now=60.0)[0] == 80.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 8), min_size=1, max_size=12), st.data())
def test_bookkeeping_matches_a_per_node_list(total: list[int], data: st.DataObject) -> None:
    nodes = Nodes(total)
    free = list(total)
    held: list[Placement] = []
    for _ in range(30):
        if held and data.draw(st.booleans()):
            at = held.pop(data.draw(st.integers(0, len(held) - 1)))
            nodes.give(at)
            for node, cpus in at.place(total):
                free[node] += cpus
        else:
            exclusive = data.draw(st.booleans())
            cpus = data.draw(st.integers(1, sum(total)))
            n = data.draw(st.integers(1, len(total)))
            req = Request(n if exclusive else cpus, n if exclusive else 1,
                          n if exclusive else cpus, exclusive)
            usable = data.draw(st.integers(1, (1 << len(total)) - 1))
            at = nodes.place(req, usable)
            if at is None:
                continue
            place = at.place(total)
            for node, c in place:
                assert usable >> node & 1 and c <= free[node]
                assert not exclusive or c == free[node] == total[node]
                free[node] -= c
            assert sum(c for _, c in place) >= (n * min(total) if exclusive else cpus)
            nodes.take(at)
            held.append(at)
        assert [nodes.free_of(i) for i in range(len(total))] == free
        assert nodes.cpus_in((1 << len(total)) - 1) == sum(free)


def tree(usage: dict[str, float]) -> Associations:
    """root -> A (1 share: users a1, a2), B (1 share: user b1); usage in CPU-seconds."""
    root = Assoc("root", None, 1)
    a, b = Assoc("A", None, 1, parent=root), Assoc("B", None, 1, parent=root)
    root.children = [a, b]
    a1, a2 = Assoc("A", "a1", 1, parent=a), Assoc("A", "a2", 1, parent=a)
    b1 = Assoc("B", "b1", 1, parent=b)
    a.children, b.children = [a1, a2], [b1]
    assocs = Associations(root)
    for assoc in (a1, a2, b1):
        fairshare.charge(assoc, 1, 1.0, 1.0)  # a placeholder, reset below
    for assoc in assocs.walk():
        assoc.usage_raw = 0.0
    for name, used in usage.items():
        user = next(x for x in assocs.user_assocs if x.user == name)
        fairshare.charge(user, 1, used, 1.0)
    return assocs


def test_fair_tree_ranks_accounts_then_users_by_shares_over_usage() -> None:
    # A used 60 of 100 (level fs 0.5/0.6), B 40 (0.5/0.4): B first, so b1 ranks highest.
    # In A, a2 used nothing (fs infinite) and ranks above a1.
    assocs = tree({"a1": 60.0, "b1": 40.0})
    fairshare.fair_tree(assocs)
    fs = {a.user: a.fs_factor for a in assocs.user_assocs}
    assert fs == {"b1": pytest.approx(1.0), "a2": pytest.approx(2 / 3),
                  "a1": pytest.approx(1 / 3)}


def test_fair_tree_ties_share_a_rank() -> None:
    assocs = tree({})  # nobody used anything: every level is tied
    fairshare.fair_tree(assocs)
    assert {a.fs_factor for a in assocs.user_assocs} == {1.0}


def test_classic_fairshare_is_two_to_the_minus_usage_over_shares() -> None:
    assocs = tree({"a1": 60.0, "b1": 40.0})
    fairshare.classic(assocs)
    fs = {a.user: a.fs_factor for a in assocs.user_assocs}
    # b1: shares 0.5 x 1 = 0.5; usage_norm 0.4; B's effective usage 0.4 + (1 - 0.4) x 0.5
    # = 0.7, then b1's 0.4 + (0.7 - 0.4) x 1 = 0.7: 2 ** (-0.7 / 0.5).
    assert fs["b1"] == pytest.approx(2 ** (-0.7 / 0.5))
    assert fs["a2"] > fs["a1"]


def test_decay_halves_usage_at_the_half_life_as_slurm_approximates_it() -> None:
    f = fairshare.decay_factor(600.0)
    assert f == 1 - 0.693 / 600
    assert f ** 600 == pytest.approx(0.5, abs=2e-3)
    assert fairshare.decay_factor(0.0) == 1.0
    assocs = tree({"a1": 100.0})
    fairshare.decay(assocs, f, 600.0)
    assert assocs.root.usage_raw == pytest.approx(100 * f ** 600)
    # A running job's share of a period carries Slurm's decay of its own length.
    b1 = next(x for x in assocs.user_assocs if x.user == "b1")
    fairshare.charge(b1, 4, 60.0, f)
    assert b1.usage_raw == pytest.approx(60 * f ** 60 * 4)
    assert not math.isnan(assocs.root.usage_raw)


def test_fair_tree_reproduces_a_real_slurms_sshare() -> None:
    """The usage and shares of a real Slurm 22.05's `sshare -a -l` snapshot (the
    multifactor reference run at 607 s, tests/data/slurm/) ranked by our Fair Tree give
    Slurm's own FairShare column, user by user."""
    from pathlib import Path

    from schedd.slurm.assoc import read_associations

    here = Path(__file__).parent / "data" / "slurm"
    assocs = read_associations(here / "multifactor-assoc.txt")
    rows = [line.split("\t") for line in (here / "sshare-607s.tsv").read_text().splitlines()]
    head = rows[0]
    col = {name: k for k, name in enumerate(head)}
    expected = {}
    for row in rows[1:]:
        account, user = row[col["Account"]].strip(), row[col["User"]].strip()
        usage = float(row[col["RawUsage"]])
        node = next(a for a in assocs.walk()
                    if a.account == account and (a.user or "") == user)
        node.usage_raw = usage
        if user:
            expected[(account, user)] = float(row[col["FairShare"]])
    fairshare.fair_tree(assocs)
    got = {(a.account, a.user): a.fs_factor for a in assocs.user_assocs}
    assert got == pytest.approx(expected, abs=1e-6)


def test_node_space_merges_one_pair_of_equal_neighbours_per_reservation() -> None:
    # backfill.c `_add_reservation`: after taking the nodes, the first two neighbouring
    # records with the same nodes, from the record before the reservation's to the one
    # after it, are merged — one pair per reservation ("up to one record").
    from schedd.slurm.backfill import NodeSpace

    def records(space: NodeSpace) -> list[tuple[float, float, int]]:
        return list(zip(space.begin, space.end, space.mask, strict=True))

    full = 0b1111
    space = NodeSpace(0.0, 1000.0, full, 10)
    space.reserve(100.0, 200.0, full)
    space.reserve(200.0, 300.0, full)  # [100, 200) and [200, 300) both empty: merged
    assert records(space) == [(0.0, 100.0, full), (100.0, 300.0, 0), (300.0, 1000.0, full)]
    space.reserve(300.0, 400.0, full)
    assert records(space) == [(0.0, 100.0, full), (100.0, 400.0, 0), (400.0, 1000.0, full)]
    # A job of 50 s from 120: every node is taken over [120, 170]; the merged record's
    # next frees them, so its end is the later start to try. As three records, the walk
    # would stop at the second (it begins after 170) without finding one.
    assert space.available(full, 120.0, 170.0) == (0, 400.0)
    # One merge only: two nodes taken over [100, 200), then [300, 400), then [200, 300)
    # leaves three equal records in a row; the first pair merges, the second does not.
    space = NodeSpace(0.0, 1000.0, full, 10)
    for start in (100.0, 300.0, 200.0):
        space.reserve(start, start + 100.0, 0b0011)
    assert records(space) == [(0.0, 100.0, full), (100.0, 300.0, 0b1100),
                              (300.0, 400.0, 0b1100), (400.0, 1000.0, full)]
