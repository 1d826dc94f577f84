"""The interceptor's size check (schedd/daemon/interceptor.py `oversized`) on SubmitJobs
batches: the first job with a string over its limit is the one reported, whichever of a
batch's jobs it is, and a batch within every limit passes."""

from __future__ import annotations

import pytest

from schedd import limits
from schedd.daemon.interceptor import oversized
from schedd.v1 import scheduler_pb2 as pb

LIMIT = limits.STRING_LIMITS["request_id"]


def batch(request_ids: list[str]) -> pb.SubmitJobsRequest:
    return pb.SubmitJobsRequest(jobs=[pb.SubmitJobRequest(request_id=rid, nodes=1, walltime=5)
                                      for rid in request_ids])


def test_a_batch_within_the_limits_passes() -> None:
    assert oversized(batch([])) is None
    assert oversized(batch(["", "a", "ü" * LIMIT, "b" * LIMIT])) is None


@pytest.mark.parametrize("at", [0, 3, 9])
def test_the_first_long_request_id_is_named(at: int) -> None:
    rids = [f"r{k}" for k in range(10)]
    rids[at] = "x" * (LIMIT + 1 + at)
    if at < 9:
        rids[9] = "y" * (LIMIT + 50)  # a later, longer one is not the one reported
    why = oversized(batch(rids))
    assert why == f"request_id must be at most {LIMIT} characters, got {LIMIT + 1 + at}"
