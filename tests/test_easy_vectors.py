"""`easy` on nodes:<MaxNodes> reproduces every wait of ../shared/traces/expected exactly."""

from __future__ import annotations

import pytest

from schedd.core.cluster import NodePool
from schedd.policies import make_policy
from schedd.sim import simulate
from schedd.traces import normalize, read_trace

VECTORS = ["lublin_256", "KTH-SP2-1996-2", "theta_2023", "mira_2018_wk1_cobalt2swf"]


@pytest.mark.parametrize("name", VECTORS)
def test_easy_waits_match_expected(shared_traces, name):
    trace = normalize(read_trace(shared_traces / f"{name}.swf"))
    cluster = NodePool(trace.max_nodes)
    run = simulate(trace, cluster, make_policy("easy", [], cluster))
    got = dict(zip(run.results["id"].tolist(), run.results["wait"].tolist(), strict=True))
    expected = [line.split() for line in (shared_traces / "expected" / f"{name}.easy.waits")
                .read_text().splitlines()]
    assert len(got) == len(expected)
    wrong = [(int(i), float(w), got.get(int(i)))
             for i, w in expected if got.get(int(i)) != float(w)]
    assert not wrong, f"{len(wrong)} waits differ, first: {wrong[:5]}"
    # Every job ran min(runtime, requested) seconds: nothing else was configured.
    cols = trace.columns
    limit = dict(zip(cols["job_id"].tolist(),
                     [min(r, w) for r, w in zip(cols["runtime"].tolist(),
                                                 cols["walltime"].tolist(), strict=True)],
                     strict=True))
    executed = dict(zip(run.results["id"].tolist(), run.results["executed"].tolist(), strict=True))
    assert executed == limit
