"""What an episode earns: one of schedd's metrics of the finished sequence (as
summary.json gives it for the same jobs), and optional potential-based shaping per step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..metrics import MetricOptions, headline, headline_all_started, summarize

# reward name -> (summary key, sign): the reward is sign * summary[key].
REWARDS: dict[str, tuple[str, float]] = {
    "bsld": ("mean_bounded_slowdown", -1.0),
    "wait": ("mean_wait_s", -1.0),
    "slowdown": ("mean_slowdown", -1.0),
    "utilisation": ("utilization", 1.0),
}


def episode_summary(results: dict[str, np.ndarray], total_nodes: int,
                    warning_s: float) -> dict[str, Any]:
    """schedd.metrics' summary of the episode's results (as `simulate` computes it)."""
    return summarize(results, total_nodes=total_nodes,
                     options=MetricOptions(prompt_grace_s=warning_s))


def episode_headline(results: dict[str, np.ndarray], total_nodes: int,
                     warning_s: float) -> dict[str, Any]:
    """The summary's figures a reward is made of (`metrics.HEADLINE_KEYS`), equal to
    `episode_summary`'s, at a fraction of its cost (it is computed at every episode's end)."""
    return headline(results, total_nodes=total_nodes,
                    options=MetricOptions(prompt_grace_s=warning_s))


def plain_headline(cols: dict[str, np.ndarray], total_nodes: int,
                   warning_s: float) -> dict[str, Any]:
    """`episode_headline` of a fast-path episode, from its own columns
    (`PlainEpisode.headline_columns`), before the result rows exist."""
    return headline_all_started(cols, total_nodes=total_nodes,
                                options=MetricOptions(prompt_grace_s=warning_s))


def final_reward(summary: dict[str, Any], kind: str) -> float:
    key, sign = REWARDS[kind]
    value = summary.get(key)
    return 0.0 if value is None else sign * float(value)


def waiting_potential(now: float, waiting: int, submit_sum: float, jobs: int) -> float:
    """Minus the hours waited so far by the waiting jobs, per job of the sequence: the
    potential whose differences are the shaping rewards (Ng et al. 1999: adding them
    leaves the best policy unchanged; it is 0 once nothing waits, at the end)."""
    return -(waiting * now - submit_sum) / (3600.0 * max(jobs, 1))
