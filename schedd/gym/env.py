"""`PickJob`: the learner picks which waiting job starts next; schedd's engine does the rest.

One step is one choice of `schedd.policies.agent.AgentPolicy`: the engine runs the
episode's sequence as `schedd simulate` would (same engine, same policy, same setup by
`sim.feed_engine`), and whenever that policy needs a choice the pass is stopped (the
chooser raises `_Choice` before the pass returned a decision), the observation goes to
the learner, and the learner's action resumes it (`Engine.run_pass`). On a plain node
pool the episode takes the engine's fast path instead (`agent_plain.PlainEpisode`, the
agent's passes on the sequence's rows, as `schedd simulate` takes easy_plain's for EASY),
with the same observations, rewards and schedule. See docs/learned.md.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from ..core.engine import Engine, EngineOptions
from ..core.results import ResultTable
from ..policies.agent import AgentOptions, AgentPolicy
from ..policies.agent_plain import PlainEpisode
from ..policies.easy_plain import plain_engine
from ..sim import feed_engine, sort_results
from ..traces import NormalizedTrace
from . import rewards, sequences


class _Choice(Exception):  # noqa: N818 - control flow, not an error
    """Raised by the environment's chooser: the pass needs the learner's answer."""


class PickJob(gymnasium.Env):
    """Options (all keyword): `trace` (a path; the bundled 1,000-job Lublin excerpt if
    None), `cluster` (`nodes:N`, `mira`, `bgq:M`, ...; a pool of the trace's MaxNodes if
    None), `jobs` (sequence length, 256), `window` (K, 128), `running` (predicted ends
    shown, 32), `backfill` (EASY around the chosen job, True), `reward` ("bsld", "wait",
    "slowdown" or "utilisation"), `shaping` (weight of the per-step shaping reward, 0),
    `split` (the fraction of the trace's rows sequences are drawn from, (0, 1)),
    `engine_seed` (the engine's seed, 0), `plain` (take the fast path, below, where it
    applies; True).

    Observation: {"jobs": (window, 11) the window's rows (`scoring.JOB_FEATURES`, zero rows
    past the queue), "machine": (5 + 2*running,) `agent.MACHINE_FEATURES` then (seconds
    to predicted end, nodes) of running jobs, earliest first}. Action: a slot; the mask
    (`info["action_mask"]`, `action_masks()`) allows the real rows; a masked slot stands
    for slot `action % n` (n real rows), so that any action is an answer. Reward: 0 per
    step (plus shaping), and at the end the chosen metric of the sequence's jobs (minus
    mean bounded slowdown by default).

    On a node pool where nothing but submissions, starts and ends can happen
    (`easy_plain.plain_engine`), an episode runs on the sequence's rows
    (`agent_plain.PlainEpisode`), the engine's instants and the agent's passes without
    the general engine's per-job objects; the reward comes from the episode's own times,
    and the engine gets the result rows, as `schedd simulate` does for plain EASY, when
    `results()` or `summary` asks for them: the same observations, masks, rewards and
    schedule (tests/test_gym_plain.py), in a fraction of the time.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, trace: str | None = None, cluster: str | None = None, jobs: int = 256,
                 window: int = 128, running: int = 32, backfill: bool = True,
                 reward: str = "bsld", shaping: float = 0.0,
                 split: tuple[float, float] = (0.0, 1.0), engine_seed: int = 0,
                 engine_options: EngineOptions | None = None, plain: bool = True):
        if reward not in rewards.REWARDS:
            raise ValueError(f"reward must be one of {', '.join(rewards.REWARDS)}, "
                             f"not {reward!r}")
        self.trace_path = trace
        self.trace, self.cluster = sequences.load(trace, cluster)
        self.jobs = jobs
        self.starts = sequences.start_range(len(self.trace), jobs, split)
        self.options = AgentOptions(window=window, running=running, backfill=backfill)
        self.reward_kind = reward
        self.shaping = float(shaping)
        self.engine_seed = engine_seed
        self.engine_options = engine_options
        self.plain = plain
        probe = AgentPolicy(self.options, self.cluster)
        self._shapes = {"jobs": (window, probe.n_features), "machine": (probe.machine_size,)}
        self.observation_space = spaces.Dict({
            name: spaces.Box(-np.inf, np.inf, shape, np.float64)
            for name, shape in self._shapes.items()})
        self.action_space = spaces.Discrete(window)
        # The mask of each count of real slots (row n: n ones), read-only, so that a new
        # count costs a lookup, not two NumPy assignments; `info` gets a copy.
        masks = np.tri(window + 1, window, -1, dtype=np.int8)
        masks.flags.writeable = False
        self._masks = list(masks)
        self._mask = self._masks[0]
        self._engine: Engine | None = None
        self._policy: AgentPolicy | None = None
        self._episode: PlainEpisode | None = None
        self._pending: int | None = None
        self._obs: dict[str, np.ndarray] = {}
        self._n = 0
        self._potential = 0.0
        self.sequence: NormalizedTrace | None = None
        self.start_row = -1
        # The finished episode's headline figures (None while it runs).
        self._finished: dict[str, Any] | None = None
        self._recorded = False  # the fast path's result rows are in the engine
        self._summary: dict[str, Any] | None = None
        self.decisions = 0

    # -- gymnasium API ------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """A new sequence: options={"start": ROW} names its first row, else it is drawn
        from the environment's RNG (`seed` makes it reproducible)."""
        super().reset(seed=seed)
        lo, hi = self.starts
        start = (options or {}).get("start")
        if start is None:
            start = int(self.np_random.integers(lo, hi + 1))
        self.start_row = int(start)
        self.sequence = sequences.sequence(self.trace, self.start_row, self.jobs)
        policy = AgentPolicy(self.options, self.cluster)
        policy.chooser = self._choose
        engine = Engine(self.cluster, policy, seed=self.engine_seed,
                        options=self.engine_options)
        engine.results = ResultTable.empty(len(self.sequence))
        self._episode = None
        # The fast path kills a job at its walltime (easy_plain._job_columns), not at a
        # periodic walltime check.
        if (self.plain and engine.options.walltime_check_s <= 0
                and plain_engine(engine, self.sequence)):
            opts = self.options
            self._episode = PlainEpisode(self.sequence.columns, self.cluster.total_nodes,
                                         opts.window, opts.running, opts.backfill,
                                         policy.n_features)
        else:
            feed_engine(engine, self.sequence)
        self._engine, self._policy = engine, policy
        self._pending = None
        self._finished = None
        self._recorded = False
        self._summary = None
        self.decisions = 0
        self._potential = 0.0
        if self._advance(resume=False):
            raise RuntimeError(f"the sequence at row {self.start_row} needed no choice")
        return self._obs, self._info()

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool,
                                         dict[str, Any]]:
        episode = self._episode
        if episode is not None and self._finished is None and not self.shaping:
            # The fast path's step without _advance's and _show's calls (a step is a few
            # microseconds, and these were a sixth of it); with shaping, theirs below.
            a = int(action)
            n = self._n
            self.decisions += 1
            before = 0.0
            done = episode.advance(a if 0 <= a < n else a % n)
            if not done:
                n = self._n = episode.n
                self._mask = self._masks[n]
                self._obs = {"jobs": episode.jobs, "machine": episode.machine}
                return self._obs, 0.0, False, False, {
                    "action_mask": self._mask.copy(), "start_row": self.start_row,
                    "now": episode.now}
        else:
            if self._engine is None or self._finished is not None:
                raise RuntimeError("step() before reset(), or after the episode ended")
            a = int(action)
            self._pending = a if 0 <= a < self._n else a % self._n
            self.decisions += 1
            before = self._potential
            done = self._advance(resume=True)
        reward = 0.0
        if done:
            engine = self._engine
            assert engine is not None
            if episode is not None:
                # The reward from the episode's own columns; the result rows are made
                # when asked for (`_result_arrays`).
                figures = rewards.plain_headline(episode.headline_columns(),
                                                 self.cluster.total_nodes,
                                                 engine.options.warning_s)
            else:
                results = engine.results.arrays(copy=False)  # views: sorted in place
                sort_results(results)
                figures = rewards.episode_headline(results, self.cluster.total_nodes,
                                                   engine.options.warning_s)
            self._finished = figures
            reward = rewards.final_reward(figures, self.reward_kind)
            self._potential = 0.0
            self._obs = {name: np.zeros(shape) for name, shape in self._shapes.items()}
            self._mask = self._masks[0]
            self._n = 0
        if self.shaping:
            reward += self.shaping * (self._potential - before)
        info = self._info()
        if done:
            info["metrics"] = {k: figures[k] for k in ("mean_bounded_slowdown", "mean_wait_s",
                                                       "mean_slowdown", "utilization")}
        return self._obs, float(reward), done, False, info

    @property
    def summary(self) -> dict[str, Any] | None:
        """schedd.metrics' summary of the finished episode (as summary.json gives it for
        the same jobs), None while it runs; made when first asked for (the reward needs
        only its headline figures, `metrics.headline`)."""
        if self._finished is None:
            return None
        if self._summary is None:
            assert self._engine is not None
            self._summary = rewards.episode_summary(self._result_arrays(),
                                                    self.cluster.total_nodes,
                                                    self._engine.options.warning_s)
        return self._summary

    def action_masks(self) -> np.ndarray:
        """The slots a learner may name now (sb3-contrib's MaskablePPO reads this)."""
        return self._mask.astype(bool)

    def window_ids(self) -> list[int]:
        """The job id in each real slot of the last observation."""
        if self._policy is None or self._n == 0:
            return []
        if self._episode is not None:
            ids = self._episode.ids
            return [ids[r] for r in self._episode.window_rows]
        return list(self._policy.window_ids)

    # -- results ------------------------------------------------------------------------
    def results(self) -> dict[str, np.ndarray]:
        """The finished episode's per-job results in queue order (schedd.core.results
        columns), as `schedd.sim.simulate` returns them for the same sequence."""
        if self._finished is None or self._engine is None:
            raise RuntimeError("the episode is not finished")
        arrays = {name: a.copy() for name, a in self._result_arrays().items()}
        sort_results(arrays)
        return arrays

    def _result_arrays(self) -> dict[str, np.ndarray]:
        """The finished episode's result columns in queue order (the engine's own arrays,
        not copies); the fast path gives the engine its rows here, the first time."""
        engine = self._engine
        assert engine is not None and self._finished is not None
        if self._episode is not None and not self._recorded:
            self._episode.record(engine)
            self._recorded = True
        return engine.results.arrays(copy=False)

    # -- the engine, step by step -------------------------------------------------------
    def _advance(self, resume: bool) -> bool:
        """Run the engine to the next choice (False) or the end of the sequence (True)."""
        engine = self._engine
        assert engine is not None
        episode = self._episode
        if episode is not None:
            slot = self._pending if resume and self._pending is not None else -1
            if episode.advance(slot):
                return True  # the results are given to the engine when asked for
            self._pending = None
            queue = episode.queue  # the engine's queue at the pass (starts come after it)
            self._show(episode.jobs, episode.machine, episode.n, episode.now, len(queue),
                       float(sum(episode.submit[r] for r in queue)) if self.shaping else 0.0)
            return False
        try:
            if resume:
                engine.run_pass()
            while engine.step():
                pass
        except _Choice:
            return False
        return True

    def _choose(self, jobs: np.ndarray, machine: np.ndarray, n: int) -> int:
        if self._pending is not None:
            slot, self._pending = self._pending, None
            return slot
        engine = self._engine
        assert engine is not None
        if self.shaping:
            queue = engine.queue
            self._show(jobs, machine, n, engine.now, len(queue),
                       float(sum(j.submit for j in queue)))
        else:
            self._show(jobs, machine, n, 0.0, 0, 0.0)
        raise _Choice

    def _show(self, jobs: np.ndarray, machine: np.ndarray, n: int, now: float,
              waiting: int, submit_sum: float) -> None:
        """A choice's observation, mask and (with shaping) potential: `waiting` jobs in
        the engine's queue, their submit times summing to `submit_sum`."""
        self._obs = {"jobs": jobs, "machine": machine}
        self._n = n
        self._mask = self._masks[n]
        if self.shaping:
            self._potential = rewards.waiting_potential(now, waiting, submit_sum, self.jobs)

    def _info(self) -> dict[str, Any]:
        return {"action_mask": self._mask.copy(), "start_row": self.start_row,
                "now": self._now()}

    def _now(self) -> float:
        if self._episode is not None:  # its clock is the engine's once recorded
            return self._episode.now
        return self._engine.now if self._engine is not None else 0.0

