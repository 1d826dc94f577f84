"""schedd.gym (issue 36): the PickJob environment on the engine, the `agent` policy that
replays its choices everywhere a policy runs, the scoring functions and the learner."""

from __future__ import annotations

import json
import math

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedd.gym
from schedd.cli import main as schedd_main
from schedd.core.engine import Engine
from schedd.core.exec_state import Ecc
from schedd.core.job import JobClass, Notice
from schedd.gym import sequences
from schedd.gym.env import PickJob
from schedd.gym.learn import CemConfig, cem, mean_bsld, serial
from schedd.policies import PolicyError, make_policy
from schedd.policies.agent import AgentOptions, AgentPolicy
from schedd.policies.scoring import (
    HEURISTICS,
    JOB_FEATURES,
    NODES,
    PRESENT,
    SUBMIT,
    WAIT,
    WALLTIME,
    linear,
    load_model,
    mlp,
    mlp_size,
    save_model,
)
from schedd.sim import feed_engine, simulate

# id submit wait run procs cpu mem req_procs req_time req_mem status user group exe queue
# partition prev think: three jobs at t=0 on a 4-node machine.
THREE = """; MaxNodes: 4
1 0 -1 100 3 -1 -1 3 100 -1 1 1 1 -1 1 -1 -1 -1
2 0 -1 50 2 -1 -1 2 50 -1 1 2 1 -1 1 -1 -1 -1
3 0 -1 10 1 -1 -1 1 10 -1 1 3 1 -1 1 -1 -1 -1
"""


@pytest.fixture
def three(tmp_path):
    path = tmp_path / "three.swf"
    path.write_text(THREE)
    return str(path)


def play(env: PickJob, actions: list[int], seed: int | None = None
         ) -> tuple[list[int], float, dict]:
    """Step through `actions` (job ids to pick, looked up in the window); returns the
    window sizes seen, the final reward and the last info."""
    obs, info = env.reset(seed=seed, options={"start": 0})
    sizes = []
    for job_id in actions:
        n = int(info["action_mask"].sum())
        sizes.append(n)
        ids = env.window_ids()
        assert len(ids) == n
        obs, reward, done, truncated, info = env.step(ids.index(job_id))
        assert not truncated
    assert done
    return sizes, reward, info


def starts(env: PickJob) -> dict[int, float]:
    r = env.results()
    return {int(i): float(s + w) for i, s, w in zip(r["id"], r["submit"], r["wait"],
                                                      strict=True)}


# ---------------------------------------------------------------------- hand-worked
def test_three_jobs_fcfs_picks_without_backfill(three):
    """Pick 1, then 2: job 1 (3 nodes) starts at 0, job 2 (2 nodes) does not fit and stays
    chosen; without backfilling job 3 waits too. At 100 job 1 ends, job 2 starts, and the
    third choice (job 3, 1 node) starts with it."""
    env = PickJob(trace=three, jobs=3, backfill=False)
    sizes, reward, info = play(env, [1, 2, 3])
    assert sizes == [3, 2, 1]
    assert starts(env) == {1: 0.0, 2: 100.0, 3: 100.0}
    # bounded slowdowns: 1, (100+50)/50 = 3, (100+10)/10 = 11
    assert reward == pytest.approx(-(1 + 3 + 11) / 3)
    assert info["metrics"]["mean_bounded_slowdown"] == pytest.approx((1 + 3 + 11) / 3)


def test_three_jobs_fcfs_picks_with_easy_backfill(three):
    """The same picks with EASY: job 2's reservation is at 100; job 3 ends at 10 <= 100,
    so it is backfilled at 0 and is never a choice."""
    env = PickJob(trace=three, jobs=3)
    sizes, reward, _ = play(env, [1, 2])
    assert sizes == [3, 2]
    assert starts(env) == {1: 0.0, 2: 100.0, 3: 0.0}
    assert reward == pytest.approx(-(1 + 3 + 1) / 3)


def test_three_jobs_picking_the_middle_one_first(three):
    """Pick 2 (starts at 0, 2 nodes left), then 1 (3 nodes: waits for job 2's end at 50,
    shadow 50, extra 1); job 3 ends at 10 <= 50 and is backfilled at 0."""
    env = PickJob(trace=three, jobs=3)
    sizes, reward, _ = play(env, [2, 1])
    assert sizes == [3, 2]
    assert starts(env) == {1: 50.0, 2: 0.0, 3: 0.0}
    assert reward == pytest.approx(-(1.5 + 1 + 1) / 3)
    # Without backfilling job 3 starts only after job 1, at 50, as the third choice.
    env = PickJob(trace=three, jobs=3, backfill=False)
    sizes, _, _ = play(env, [2, 1, 3])
    assert sizes == [3, 2, 1]
    assert starts(env) == {1: 50.0, 2: 0.0, 3: 50.0}


def test_other_rewards_of_the_same_schedule(three):
    for kind, value in (("wait", -(0 + 100 + 100) / 3),
                        ("slowdown", -(1 + 3 + 11) / 3)):
        env = PickJob(trace=three, jobs=3, backfill=False, reward=kind)
        _, reward, _ = play(env, [1, 2, 3])
        assert reward == pytest.approx(value)
    env = PickJob(trace=three, jobs=3, backfill=False, reward="utilisation")
    _, reward, _ = play(env, [1, 2, 3])
    # busy node-seconds 300 + 100 + 10 over 4 nodes x makespan 150
    assert reward == pytest.approx(410 / 600)


def test_shaping_adds_up_to_minus_the_first_potential(three):
    """Potential-based shaping: the per-step terms telescope; at the first choice (t=0)
    nothing has waited, so the episode's shaped total equals the unshaped one."""
    plain = PickJob(trace=three, jobs=3, backfill=False)
    shaped = PickJob(trace=three, jobs=3, backfill=False, shaping=5.0)
    total = {}
    for env in (plain, shaped):
        env.reset(options={"start": 0})
        total[id(env)], done = 0.0, False
        while not done:
            _, r, done, _, info = env.step(0)
            total[id(env)] += r
    assert total[id(shaped)] == pytest.approx(total[id(plain)])


def test_observation_rows_hand_checked(three):
    env = PickJob(trace=three, jobs=3, running=2)
    obs, info = env.reset(options={"start": 0})
    jobs = obs["jobs"]
    assert jobs.shape == (128, len(JOB_FEATURES))
    assert jobs[:3, PRESENT].tolist() == [1, 1, 1] and not jobs[3:].any()
    assert jobs[:3, NODES].tolist() == [3, 2, 1]
    assert jobs[:3, WALLTIME].tolist() == [100, 50, 10]
    assert jobs[:3, WAIT].tolist() == [0, 0, 0]
    assert info["action_mask"][:4].tolist() == [1, 1, 1, 0]
    assert env.action_masks().sum() == 3
    # machine: now, free, total, waiting, running, then (seconds to end, nodes) x 2
    assert obs["machine"].tolist() == [0, 4, 4, 3, 0, 0, 0, 0, 0]
    obs, *_ = env.step(0)  # job 1 starts; job 2 and 3 wait, 1 node free
    assert obs["machine"].tolist() == [0, 1, 4, 2, 1, 100, 3, 0, 0]
    assert obs["jobs"][:2, -1].tolist() == [0, 1]  # fits now: job 3 only


class _CheckedAgent(AgentPolicy):
    """Checks every observation, built from the last one's rows (agent_rows.align), against
    one built from scratch off the jobs themselves, and picks at random."""

    def __init__(self, options, cluster, seed):
        super().__init__(options, cluster)
        self.rng = np.random.default_rng(seed)
        self.checked = 0
        self.chooser = lambda jobs, machine, n: int(self.rng.integers(n))

    def observe(self, view, rest, started, free, state):
        jobs, machine, n = super().observe(view, rest, started, free, state)
        want = np.zeros_like(jobs)
        for i, job in enumerate(rest[:n]):
            notice = view.notices.get(job.id)
            want[i] = (1.0, view.now - job.submit, job.nodes, job.walltime,
                       job.walltime if notice is None else notice.walltime, job.submit,
                       job.user, job.project, job.queue, list(JobClass).index(job.job_class),
                       job.nodes <= free)
        np.testing.assert_array_equal(jobs, want)
        ends = sorted([(end - view.now, view.running[jid].alloc_nodes)
                       for end, jid in view.running_by_end()][:self.options.running]
                      + [(j.walltime, j.nodes) for j in started])[:self.options.running]
        assert machine[:5].tolist() == [view.now, free, view.cluster.total_nodes, len(rest),
                                        len(view.running) + len(started)]
        assert machine[5:5 + 2 * len(ends)].tolist() == [x for e in ends for x in e]
        assert not machine[5 + 2 * len(ends):].any()
        self.checked += 1
        return jobs, machine, n


@pytest.mark.parametrize("window, backfill", [(8, True), (16, False), (128, True)])
def test_observations_carried_over_equal_ones_built_afresh(window, backfill):
    """The window's rows, carried from one choice to the next, are those of the jobs as
    they are now: elastic commands change waiting jobs' requested times and sizes, and
    notices their estimates, in the middle of the run."""
    trace, machine = sequences.load(None, "nodes:256")
    seq = sequences.sequence(trace, 200, 250)
    policy = _CheckedAgent(AgentOptions(window=window, running=6, backfill=backfill),
                           machine, seed=window)
    engine = Engine(machine, policy, seed=0)
    feed_engine(engine, seq)
    rng = np.random.default_rng(1)
    submits = seq.columns["submit"]
    for i in rng.choice(len(seq), size=60, replace=False):
        job_id, t = int(seq.columns["job_id"][i]), float(submits[i]) + float(rng.uniform(1, 4000))
        kind = str(rng.choice(["ET", "RT", "EP", "RP"]))
        amount = float(rng.integers(1, 3)) if kind in ("EP", "RP") else float(rng.uniform(1, 600))
        engine.elastic(Ecc(job_id, t, kind, amount))
        if i % 3 == 0:
            engine.notice(job_id, Notice(t, t, int(seq.columns["nodes"][i]),
                                         float(rng.uniform(60, 9000))))
    engine.run()
    assert policy.checked > 100
    assert engine.stats["eccs_applied"] > 10


# ---------------------------------------------------------------------- scoring
def test_scoring_functions_hand_checked():
    row = np.zeros((2, len(JOB_FEATURES)))
    row[:, PRESENT] = 1
    row[0, [WAIT, NODES, WALLTIME, SUBMIT]] = (200, 4, 100, 1000)
    row[1, [WAIT, NODES, WALLTIME, SUBMIT]] = (0, 1, 10, 1200)
    s = {name: HEURISTICS[name](row) for name in HEURISTICS}
    assert s["f1"][0] == pytest.approx(2 * 4 + 870 * 3)
    assert s["f2"][0] == pytest.approx(10 * 4 + 25600 * 3)
    assert s["f3"][0] == pytest.approx(400 + 6860000 * 3)
    assert s["f4"][0] == pytest.approx(100 * 2 + 530000 * 3)
    assert s["wfp3"][0] == pytest.approx(-8 * 4)
    assert s["unicef"][0] == pytest.approx(-200 / (2 * 100))
    machine = np.zeros(5)
    assert load_model("fcfs").choose(row, machine, 2) == 0
    assert load_model("sjf").choose(row, machine, 2) == 1
    assert load_model("smallest").choose(row, machine, 2) == 1
    assert load_model("wfp3").choose(row, machine, 2) == 0
    assert load_model("f1").choose(row, machine, 1) == 0  # only the real rows count


def test_model_files_round_trip_and_bad_ones_are_one_sentence(tmp_path):
    m = mlp(np.arange(mlp_size(3)) / 7.0, 3)
    save_model(tmp_path / "m.json", m)
    assert load_model(str(tmp_path / "m.json")) == m
    cluster = sequences.load(None, None)[1]
    (tmp_path / "bad.json").write_text(json.dumps({"format": "x"}))
    for spec in ("nonesuch", str(tmp_path / "bad.json")):
        with pytest.raises(PolicyError) as err:
            make_policy("agent", [f"model={spec}"], cluster)
        assert "\n" not in str(err.value) and "Traceback" not in str(err.value)


# ---------------------------------------------------------------------- the engine's schedule
def play_model(env: PickJob, model, seed: int) -> dict[str, np.ndarray]:
    obs, info = env.reset(seed=seed)
    done = False
    while not done:
        a = model.choose(obs["jobs"], obs["machine"], int(info["action_mask"].sum()))
        obs, _, done, _, info = env.step(a)
    return env.results()


@pytest.mark.parametrize("cluster", [None, "bgq:1", "mira"])
@pytest.mark.parametrize("model", ["f1", "wfp3", "linear"])
def test_episode_equals_simulate_with_the_same_agent(cluster, model):
    """The environment's schedule under an agent is the one `simulate` makes with the
    `agent` policy and that model, job for job, column for column (a pool, a Blue Gene/Q
    midplane, Mira)."""
    m = linear([0.3, -0.5, 1.0, -2.0, -0.7, 0.0]) if model == "linear" else load_model(model)
    env = PickJob(jobs=96, window=16, cluster=cluster)
    got = play_model(env, m, seed=5)
    run = simulate(env.sequence, env.cluster,
                   AgentPolicy.with_model(m, env.cluster, AgentOptions(window=16)))
    assert list(got) == list(run.results)
    for name, col in got.items():
        np.testing.assert_array_equal(col, run.results[name], err_msg=name)


@pytest.mark.parametrize("reward", ["bsld", "wait", "slowdown", "utilisation"])
def test_end_figures_equal_the_full_summary(reward):
    """The reward and info["metrics"] come from metrics.headline at each episode's end;
    they equal, to the last bit, the full summary (made only when asked for)."""
    env = PickJob(jobs=80, window=16, reward=reward)
    obs, info = env.reset(seed=3)
    done, rng = False, np.random.default_rng(0)
    while not done:
        obs, r, done, _, info = env.step(int(rng.integers(16)))
    assert env.summary is not None
    for key, value in info["metrics"].items():
        assert value == env.summary[key], key
    key, sign = schedd.gym.rewards.REWARDS[reward]
    assert r == sign * env.summary[key]


@pytest.mark.parametrize("cluster", ["nodes:256", "bgq:1", "mira"])
def test_fcfs_agent_is_easy(cluster):
    """Choosing the queue's head each time, EASY backfilling around it, is EASY."""
    trace, machine = sequences.load(None, cluster)
    seq = sequences.sequence(trace, 100, 300)
    agent = simulate(seq, machine, make_policy("agent", ["model=fcfs"], machine))
    easy = simulate(seq, machine, make_policy("easy", [], machine))
    for name in ("id", "wait", "alloc_nodes"):
        np.testing.assert_array_equal(agent.results[name], easy.results[name])


def test_simulate_command_runs_a_saved_agent(tmp_path):
    """End to end: `schedd simulate --policy agent --opt model=FILE` on the episode's jobs
    (written out as a trace) gives the environment's waits."""
    m = linear([0.1, 0.2, 1.0, -1.0, -0.5, 0.3])
    save_model(tmp_path / "model.json", m)
    env = PickJob(jobs=64, window=32)
    got = play_model(env, m, seed=11)
    sequences.write_sequence(tmp_path / "seq.swf", None, env.sequence)  # type: ignore[arg-type]
    assert schedd_main(["simulate", "--trace", str(tmp_path / "seq.swf"), "--policy", "agent",
                        "--opt", f"model={tmp_path / 'model.json'}", "--opt", "window=32",
                        "--out", str(tmp_path / "run"), "--no-progress", "--quiet"]) in (0, None)
    rows = [line.split() for line in (tmp_path / "run" / "jobs.swf").read_text().splitlines()
            if not line.startswith(";")]
    assert [int(r[0]) for r in rows] == got["id"].tolist()
    assert [float(r[2]) for r in rows] == got["wait"].tolist()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["run"]["policy"] == "agent"
    assert math.isclose(summary["mean_bounded_slowdown"], env.summary["mean_bounded_slowdown"])


# ---------------------------------------------------------------------- gymnasium
def test_check_env_passes():
    env = PickJob(jobs=32, window=8, running=4)
    check_env(env, skip_render_check=True)


def test_registered_id_makes_the_environment():
    env = gymnasium.make(schedd.gym.ENV_ID, jobs=16, window=8)
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    assert info["action_mask"].shape == (8,)
    env.close()


def rollout_vector(vec, steps: int) -> list[tuple]:
    obs, info = vec.reset(seed=[3, 4])
    out = []
    for _ in range(steps):
        mask = info["action_mask"]
        actions = np.array([int(np.flatnonzero(m)[-1]) if m.any() else 0 for m in mask])
        obs, reward, done, trunc, info = vec.step(actions)
        out.append((obs["jobs"].copy(), reward.copy(), done.copy()))
    return out


def test_sync_and_async_vector_envs_agree():
    def make():
        return PickJob(jobs=12, window=8, running=4)

    sync = gymnasium.vector.SyncVectorEnv([make, make])
    asyn = gymnasium.vector.AsyncVectorEnv([make, make])
    try:
        a, b = rollout_vector(sync, 30), rollout_vector(asyn, 30)
    finally:
        sync.close()
        asyn.close()
    assert any(d.any() for _, _, d in a)  # episodes ended (and autoreset) on the way
    for (oa, ra, da), (ob, rb, db) in zip(a, b, strict=True):
        np.testing.assert_array_equal(oa, ob)
        np.testing.assert_array_equal(ra, rb)
        np.testing.assert_array_equal(da, db)


PROPS = settings(max_examples=15, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@PROPS
@given(seed=st.integers(0, 2**31 - 1), picks=st.lists(st.integers(0, 10**6), max_size=40),
       window=st.integers(1, 12), backfill=st.booleans())
def test_mask_allows_exactly_the_real_slots(seed, picks, window, backfill):
    """Every allowed slot holds a waiting job and every waiting job in the window is
    allowed; any allowed slot is accepted; the same seed gives the same episode."""
    envs = [PickJob(jobs=24, window=window, running=3, backfill=backfill) for _ in range(2)]
    obs = [e.reset(seed=seed) for e in envs]
    np.testing.assert_array_equal(obs[0][0]["jobs"], obs[1][0]["jobs"])
    env, (o, info) = envs[0], obs[0]
    for pick in picks:
        mask = info["action_mask"].astype(bool)
        assert mask.sum() == len(env.window_ids()) >= 1
        assert len(set(env.window_ids())) == mask.sum()
        assert (o["jobs"][:, PRESENT] == 1).tolist() == mask.tolist()
        allowed = np.flatnonzero(mask)
        o, _, done, _, info = env.step(int(allowed[pick % len(allowed)]))
        o2, _, done2, _, _ = envs[1].step(int(allowed[pick % len(allowed)]))
        np.testing.assert_array_equal(o["jobs"], o2["jobs"])
        assert done == done2
        if done:
            break


# ---------------------------------------------------------------------- the learner
def test_cem_is_reproducible_and_learns_something():
    trace, cluster = sequences.load(None, None)
    cfg = CemConfig(iterations=2, population=6, batch=2, jobs=48, seed=4)
    span = sequences.start_range(len(trace), 48, (0.0, 0.7))
    a, hist = cem(cfg, serial(trace, cluster, 48), span)
    b, _ = cem(cfg, serial(trace, cluster, 48), span)
    assert a == b and a.kind == "linear" and len(hist) == 2
    assert all(h["best"] <= h["elite_mean"] for h in hist)
    assert mean_bsld(a, trace, cluster, [800], 48).shape == (1,)


def test_serve_runs_a_saved_agent_as_simulate_does(tmp_path):
    """`schedd serve --policy agent --opt model=FILE` on the lockstep clock, replayed,
    writes simulate's jobs.swf byte for byte."""
    import subprocess
    import sys

    from daemon_proc import DaemonProc

    save_model(tmp_path / "model.json", linear([0.1, 0.2, 1.0, -1.0, -0.5, 0.3]))
    opts = ("--policy", "agent", "--opt", f"model={tmp_path / 'model.json'}")
    subprocess.run([sys.executable, "-m", "schedd", "simulate", "--cluster", "nodes:256",
                    "--out", str(tmp_path / "sim"), "--no-progress", "--limit", "400", *opts],
                   check=True, capture_output=True, text=True, timeout=300)
    trace = tmp_path / "t.swf"
    sequences.write_sequence(trace, None, sequences.sequence(sequences.load(None, None)[0],
                                                             0, 400))
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:256", *opts) as d:
        proc = subprocess.run([sys.executable, "-m", "schedd_clients.replay", str(trace),
                               "--out", str(tmp_path / "replay"), "--server", d.address,
                               "--no-progress", "--lockstep"],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
    sim = [line for line in (tmp_path / "sim" / "jobs.swf").read_text().splitlines()
           if not line.startswith(";")]
    replay = [line for line in (tmp_path / "replay" / "jobs.swf").read_text().splitlines()
              if not line.startswith(";")]
    assert sim == replay and len(sim) == 400
