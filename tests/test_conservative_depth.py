"""Conservative backfilling's reservation depth (issue 21: a bound on its pass cost)."""

from __future__ import annotations

import pytest

from schedd.core.cluster import NodePool
from schedd.core.engine import Engine
from schedd.core.job import JobSpec
from schedd.policies import PolicyError, make_policy


def first_starts(depth: int) -> dict[int, float]:
    """Six nodes. A (4 nodes) runs 0-100. At t=1: B (4 nodes, 100 s) is reserved at
    [100, 200), leaving 2 nodes spare; C (6 nodes) at [200, 300) - if it gets a reservation;
    D (2 nodes, 500 s) fits now and beside B, but not beside C's reservation."""
    pool = NodePool(6)
    engine = Engine(pool, make_policy("conservative", [f"depth={depth}"], pool))
    engine.submit(JobSpec(1, 0.0, 100.0, 4, 100.0))
    engine.run(until=0.5)
    for spec in (JobSpec(2, 1.0, 100.0, 4, 100.0), JobSpec(3, 1.0, 100.0, 6, 100.0),
                 JobSpec(4, 1.0, 500.0, 2, 500.0)):
        engine.submit(spec)
    engine.run()
    res = engine.results.arrays()
    return dict(zip(res["id"].tolist(), res["first_start"].tolist(), strict=True))


def test_every_job_reserved_by_default():
    starts = first_starts(0)
    assert starts == {1: 0.0, 2: 100.0, 3: 200.0, 4: 300.0}
    assert first_starts(3) == starts  # a depth at least the queue is the same plan


def test_a_job_past_the_depth_gets_no_reservation():
    # depth 1: only B is reserved; C cannot start now and is not planned, so D starts now
    # beside B's reservation; C runs once D has ended (no reservation held its place).
    assert first_starts(1) == {1: 0.0, 2: 100.0, 3: 501.0, 4: 1.0}


def test_depth_must_be_a_count():
    with pytest.raises(PolicyError, match="depth expects int"):
        make_policy("conservative", ["depth=x"], NodePool(2))
    with pytest.raises(PolicyError, match="depth must be >= 0"):
        make_policy("conservative", ["depth=-1"], NodePool(2))
