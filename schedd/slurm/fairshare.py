"""Fair-share as Slurm 22.05 computes it: decayed usage on the association tree, and the
Fair Tree ranking (src/plugins/priority/multifactor/fair_tree.c), or the classic formula
with PriorityFlags=NO_FAIR_TREE.

Usage is CPU-seconds charged to a job's user association and every association above it.
Slurm's decay thread runs every PriorityCalcPeriod: it multiplies every usage by
decay_factor ** elapsed, where decay_factor = 1 - 0.693 / half-life (Slurm's first-order
approximation of 2 ** (-1 / half-life)), then adds each running job's CPUs x run_delta x
decay_factor ** run_delta for the seconds since the last run — the same expression
priority_multifactor.c's `_apply_new_usage` uses, approximation included. A job that ends
between two runs is charged its last part only where AccountingStorageEnforce includes
limits; otherwise never (checked against a real Slurm's sshare: tests/test_slurm_select.py).
"""

from __future__ import annotations

import math

from .assoc import Assoc, Associations


def decay_factor(half_life: float) -> float:
    """Slurm's per-second decay factor (1: no decay)."""
    return 1.0 - 0.693 / half_life if half_life > 0 else 1.0


def decay(assocs: Associations, factor: float, seconds: float) -> None:
    """Multiply every association's usage by factor ** seconds (_apply_decay)."""
    if seconds <= 0 or factor == 1.0:
        return
    real = max(factor ** seconds, 2.2250738585072014e-308)
    for assoc in assocs.walk():
        assoc.usage_raw *= real


def charge(assoc: Assoc, cpus: int, run_delta: float, factor: float) -> None:
    """Add a running job's usage over run_delta seconds up to the root."""
    if run_delta <= 0:
        return
    usage = run_delta * factor ** run_delta * cpus
    node: Assoc | None = assoc
    while node is not None:
        node.usage_raw += usage
        node = node.parent


def fair_tree(assocs: Associations) -> None:
    """Set every user association's fs_factor by the Fair Tree ranking."""
    users = assocs.user_assocs
    count = len(users)
    if count == 0:
        return
    state = [count, count]  # rank, rank-next-tied ("rnt")
    _rank_level(list(assocs.root.children), count, state, False)


def _level_fs(assoc: Assoc) -> float:
    if assoc.shares_raw is None:  # FairShare=parent
        return math.inf if assoc.user is not None else float(0xFFFFFFFE)
    parent = assoc.fs_parent()
    parent_usage = parent.usage_raw if parent is not None else 0.0
    efctv = assoc.usage_raw / parent_usage if parent_usage else 0.0
    shares = assoc.shares_norm
    if shares == 0:
        return 0.0
    return shares / efctv if efctv else math.inf


def _rank_level(siblings: list[Assoc], count: int, state: list[int],
                account_tied: bool) -> None:
    for assoc in siblings:
        assoc.level_fs = _level_fs(assoc)
    # Higher level_fs first; on a tie, users before accounts (fair_tree.c _cmp_level_fs).
    siblings.sort(key=lambda a: (-a.level_fs, a.user is None))
    prev: float | None = None
    i = 0
    while i < len(siblings):
        assoc = siblings[i]
        tied = account_tied if i == 0 else prev == assoc.level_fs
        if assoc.user is not None:
            if not tied:
                state[0] = state[1]
            assoc.fs_factor = state[0] / count
            state[1] -= 1
        else:
            # Slurm 22.05 merges the children of accounts tied with this one; its count
            # stops at the first following account, so no account is ever merged.
            _rank_level(list(assoc.children), count, state, tied)
        prev = assoc.level_fs
        i += 1


def classic(assocs: Associations) -> None:
    """PriorityFlags=NO_FAIR_TREE: fs_factor = 2 ** (-usage_efctv / shares_norm), with
    Slurm's traditional effective usage (usage_norm plus the parent's effective usage in
    proportion of the shares) and shares normalised down the tree."""
    root = assocs.root
    total = root.usage_raw
    for assoc in assocs.walk():
        norm = assoc.usage_raw / total if total else 0.0
        assoc.level_fs = min(norm, 1.0)  # usage_norm, kept in level_fs for the walk
    _classic_level(root, 1.0, 1.0)  # the root's effective usage is 1 (init())


def _classic_level(parent: Assoc, parent_efctv: float, parent_shares: float) -> None:
    level = sum(c.shares_raw for c in parent.children if c.shares_raw is not None)
    for assoc in parent.children:
        if assoc.shares_raw is None:
            shares_norm, efctv = parent_shares, parent_efctv
        else:
            share = assoc.shares_raw / level if level else 0.0
            shares_norm = parent_shares * share
            norm = assoc.level_fs
            efctv = norm + (parent_efctv - norm) * share if level else parent_efctv
        if assoc.user is not None:
            assoc.fs_factor = 2.0 ** (-efctv / shares_norm) if shares_norm > 0 else 0.0
        else:
            _classic_level(assoc, efctv, shares_norm)
