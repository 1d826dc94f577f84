"""PickJob's fast path on a plain node pool (schedd/policies/agent_plain.py) against the
general engine (`PickJob(plain=False)`), step by step: the same observations, masks,
window ids, rewards (with shaping) and times at every choice, and the same results at the
end, on random small traces with many ties (equal submit times, equal ends) and on
lublin_256 sequences; and the observation in C (_agent_obs.c) against its Python
reference at every choice."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedd.core.exec_state import EngineOptions
from schedd.gym.env import PickJob


def lockstep(fast: PickJob, slow: PickJob, start: int, actions: list[int]) -> int:
    """Run both environments with the same actions (cycled; a masked slot is an answer
    too) to the end, comparing everything they return; the number of steps."""
    assert fast.plain and not slow.plain
    a = fast.reset(options={"start": start})
    b = slow.reset(options={"start": start})
    assert fast._episode is not None and slow._episode is None  # the paths under test
    steps = 0
    while True:
        (obs_a, info_a), (obs_b, info_b) = (a[0], a[-1]), (b[0], b[-1])
        for name in obs_b:
            np.testing.assert_array_equal(obs_a[name], obs_b[name], err_msg=name)
            assert obs_a[name].dtype == obs_b[name].dtype
            assert obs_a[name].shape == obs_b[name].shape
        np.testing.assert_array_equal(info_a["action_mask"], info_b["action_mask"])
        assert info_a["now"] == info_b["now"]
        assert info_a.get("metrics") == info_b.get("metrics")
        np.testing.assert_array_equal(fast.action_masks(), slow.action_masks())
        episode = fast._episode
        if len(a) == 2 or not a[2]:  # a choice: the Python observation is the same
            jobs, machine = episode.jobs, episode.machine
            episode._observe_py()
            np.testing.assert_array_equal(episode.jobs, jobs)
            np.testing.assert_array_equal(episode.machine, machine)
        assert fast.window_ids() == slow.window_ids()
        if len(a) == 5:
            assert a[1:4] == b[1:4]  # reward, terminated, truncated
            if a[2]:
                break
        action = actions[steps % len(actions)] if actions else 0
        a, b = fast.step(action), slow.step(action)
        steps += 1
    ra, rb = fast.results(), slow.results()
    assert list(ra) == list(rb)
    for name in rb:
        np.testing.assert_array_equal(ra[name], rb[name], err_msg=name)
    assert fast.summary == slow.summary
    return steps


def swf(jobs: list[tuple[int, int, int, int]], nodes: int) -> str:
    """SWF text: (submit, run, procs, requested time) per job, ids in submit order."""
    lines = [f"; MaxNodes: {nodes}"]
    for i, (submit, run, procs, req) in enumerate(sorted(jobs, key=lambda j: j[0])):
        lines.append(f"{i + 1} {submit} -1 {run} {procs} -1 -1 {procs} {req} -1 1 "
                     f"{1 + i % 3} {1 + i % 2} -1 {1 + i % 2} -1 -1 -1")
    return "\n".join(lines) + "\n"


job = st.tuples(st.integers(0, 12).map(lambda x: 10 * x),  # few instants: ties
                st.sampled_from([5, 10, 20, 30, 45]), st.integers(1, 6),
                st.sampled_from([10, 20, 30, 40]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=st.lists(job, min_size=1, max_size=24),
       actions=st.lists(st.integers(0, 40), max_size=12),
       window=st.integers(1, 6), running=st.integers(0, 4), backfill=st.booleans(),
       shaping=st.sampled_from([0.0, 0.5]))
def test_fast_path_steps_as_the_general_engine(tmp_path_factory, jobs, actions, window,
                                               running, backfill, shaping):
    path = tmp_path_factory.mktemp("plain") / "t.swf"
    path.write_text(swf(jobs, 6))
    kw = dict(trace=str(path), cluster="nodes:6", jobs=len(jobs), window=window,
              running=running, backfill=backfill, shaping=shaping, reward="wait")
    lockstep(PickJob(**kw), PickJob(plain=False, **kw), 0, actions)


@pytest.mark.parametrize("backfill", [True, False])
def test_fast_path_on_lublin_sequences(backfill):
    """Whole 256-job sequences of lublin_256 with FCFS picks and with varied ones: the
    bundled 1,000-job excerpt (PickJob's default trace), so that the test runs wherever
    the project does."""
    kw = dict(trace=None, jobs=256, backfill=backfill, reward="bsld")
    fast, slow = PickJob(**kw), PickJob(plain=False, **kw)
    rng = np.random.default_rng(7)
    for start in (100, 700):
        assert lockstep(fast, slow, start, [0]) > 10
        assert lockstep(fast, slow, start, rng.integers(0, 128, 50).tolist()) > 10


def test_fast_path_only_where_it_applies():
    """A Blue Gene/Q machine, failures or a walltime check leave the episode to the
    general engine."""
    for env in (PickJob(jobs=32, cluster="bgq:1"),
                PickJob(jobs=32, engine_options=EngineOptions(mtbf_s=1e6)),
                PickJob(jobs=32, engine_options=EngineOptions(walltime_check_s=60.0))):
        env.reset(seed=1)
        assert env._episode is None
    env = PickJob(jobs=32)
    env.reset(seed=1)
    assert env._episode is not None


def test_malformed_observation_calls_are_refused():
    """_agent_obs.fill checks sizes and rows instead of writing or reading past them."""
    from schedd.policies import _agent_obs

    static = np.ones((4, 11))
    ok = dict(jobs=np.zeros((2, 11)), machine=np.zeros(7), static=static)

    def fill(jobs=None, machine=None, rows=(0, 1), ends=(), end_rows=(), picked=()):
        _agent_obs.fill(ok["jobs"] if jobs is None else jobs,
                        ok["machine"] if machine is None else machine, static, list(rows),
                        1.0, 2, 4, 2, 1, list(ends), list(end_rows), list(picked))

    fill(ends=[3.0], end_rows=[2], picked=[3])
    assert ok["machine"].tolist() == [1.0, 2.0, 4.0, 2.0, 1.0, 1.0, 1.0]
    for bad, error in ((dict(rows=(0, 1, 2)), ValueError),  # more rows than the window
                       (dict(rows=(4,)), IndexError), (dict(rows=(-1,)), IndexError),
                       (dict(ends=[1.0], end_rows=[]), ValueError),
                       (dict(ends=[1.0], end_rows=[9]), IndexError),
                       (dict(picked=[7]), IndexError),
                       (dict(jobs=np.zeros((2, 10))), ValueError),
                       (dict(machine=np.zeros(6)), ValueError),
                       (dict(machine=np.zeros(3)), ValueError),
                       (dict(jobs=np.zeros((2, 11))[:, ::-1]), (ValueError, BufferError)),
                       (dict(ends=["x"], end_rows=[0]), TypeError)):
        with pytest.raises(error):
            fill(**bad)
    with pytest.raises(TypeError):
        _agent_obs.fill(ok["jobs"], ok["machine"], static, (0,), 1.0, 2, 4, 2, 1, [], [], [])
