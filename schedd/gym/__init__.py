"""Learning environments on schedd's own engine (issue 36).

`PickJob` (registered with Gymnasium as ``schedd/PickJob-v0`` when this package is
imported) hands a learner the engine's choice of the next job to start, out of a window of
the first K waiting jobs in queue order; the rest of each pass is the engine's (EASY
backfilling around the chosen job by default). The choice is made by
`schedd.policies.agent.AgentPolicy`, the same policy `schedd simulate --policy agent` runs,
so an environment's episode and a simulation of the same jobs with the same agent give the
same schedule, job for job. This package holds the environment (env.py), episode
sequences (sequences.py), rewards (rewards.py) and a NumPy-only learner (learn.py). It
may import core, traces, policies, metrics and sim, and Gymnasium; nothing below it
imports it.
"""

from __future__ import annotations

import gymnasium

ENV_ID = "schedd/PickJob-v0"

if ENV_ID not in gymnasium.registry:
    gymnasium.register(id=ENV_ID, entry_point="schedd.gym.env:PickJob")

__all__ = ["ENV_ID"]
