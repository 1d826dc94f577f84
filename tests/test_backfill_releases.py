"""The merge of releases behind EASY's shadow on a node pool (schedd/policies/backfill.py
`_release_counts`, compiled) against heapq.merge, the reference it replaced: the same
(end, nodes) in the same order, ties between equal ends broken by job id."""

from __future__ import annotations

import heapq

from hypothesis import given, settings
from hypothesis import strategies as st

from schedd.core.job import Job, JobClass
from schedd.policies.backfill import _release_counts, shadow_and_extra


def holding(job_id: int, nodes: int) -> Job:
    return Job(job_id, 0.0, nodes, 100.0, 0, 0, JobClass.BATCH, -1, True, -1.0, -1,
               alloc_nodes=nodes)


ends_of = st.lists(st.sampled_from([0.0, 5.0, 5.0, 10.0, 30.0, 1e9]), max_size=8)


@settings(max_examples=200, deadline=None)
@given(ends_of, ends_of, st.integers(0, 3), st.integers(1, 64), st.integers(0, 64))
def test_the_merge_is_heapq_merge(run_ends: list[float], more_ends: list[float],
                                  fresh_count: int, need: int, free: int) -> None:
    ids = iter(range(1, 100))
    ends = sorted((e, next(ids)) for e in run_ends)  # running jobs, by predicted end
    more = sorted((e, next(ids)) for e in more_ends)  # started now or checkpointing
    fresh = {jid: 1 + jid % 7 for _, jid in more[:fresh_count]}
    running = {jid: holding(jid, 2 + jid % 5) for _, jid in ends + more[fresh_count:]}
    nodes = {**{jid: j.alloc_nodes for jid, j in running.items()}, **fresh}
    want = [(end, nodes[jid]) for end, jid in heapq.merge(ends, more)]
    got = list(_release_counts(ends, more, fresh, running))
    assert got == want
    assert shadow_and_extra(iter(got), need, free) == shadow_and_extra(iter(want), need, free)
