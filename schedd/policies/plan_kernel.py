"""Compiled kernel of `plan-sa`: decoding permutations onto an availability profile and the
simulated-annealing loop (Zheng et al., §IV-C, Algorithm 1).

A profile is the paper's list of (time, free nodes) tuples held in two arrays: `T[k]` is a
breakpoint and `F[k]` the nodes free from `T[k]` until `T[k + 1]` (the last entry holds until
forever). A permutation is decoded by placing each job, in order, at the earliest breakpoint
where it fits for its whole walltime.

Speed (the issue's heart; figures in docs/benchmarks.md):
* incremental decoding: the profile after every `stride`-th position is kept, so a move
  (remove the job at i, reinsert it at j) re-decodes only from the snapshot at or before
  min(i, j); each snapshot row lives in one of two buffers (`owner`) so that accepting a
  move flips ownership instead of copying;
* convergence: once past max(i, j), a candidate whose profile at a snapshot equals the
  current plan's has the same future, so its cost is known without decoding the rest;
* early rejection: the acceptance threshold is drawn before decoding; every cost here is a
  sum of non-negative terms (or a running maximum), so decoding stops as soon as the cost so
  far plus a lower bound for the jobs still to place passes the threshold;
* numba compiles it (`cache=True`: compiled once per machine, then loaded). With
  NUMBA_DISABLE_JIT=1 the same functions run as Python, with identical results.

The random draws (move positions and log-uniforms) come in as arrays, so the compiled and
the interpreted kernel make the same choices.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .plan_metrics import METRIC_MAKESPAN, METRIC_WAIT, METRIC_WAIT2

# Indexes into the `scalars` array the annealing loop updates in place.
CUR_COST, BEST_COST, EVALS, ACCEPTED, IMPROVED, ABORTED, CONVERGED = range(7)
N_SCALARS = 7


@njit(cache=True)
def fit(T, F, L, nodes, walltime, first):  # noqa: N803 — T/F: the paper's (t, a) tuples
    """Earliest breakpoint index k >= first where `nodes` are free over [T[k], T[k] +
    walltime), and the first index at or after that interval's end (L if none). The last
    entry holds the capacity left when everything has ended, so a job that fits there is
    always placed (when first < L)."""
    k = first
    while k < L:
        if F[k] < nodes:
            k += 1
            continue
        end = T[k] + walltime
        j = k + 1
        while j < L and T[j] < end:
            if F[j] < nodes:
                break
            j += 1
        if j < L and T[j] < end:
            k = j + 1  # the job cannot span the shortage at j: start after it
            continue
        return k, j
    return -1, -1


@njit(cache=True)
def place(T, F, L, k, j, end, nodes):  # noqa: N803
    """Take `nodes` from [T[k], end); inserts a breakpoint at `end` if there is none.
    Returns the new length."""
    if j == L or T[j] != end:
        for q in range(L, j, -1):
            T[q] = T[q - 1]
            F[q] = F[q - 1]
        T[j] = end
        F[j] = F[j - 1]
        L += 1
    for q in range(k, j):
        F[q] -= nodes
    return L


@njit(cache=True)
def term(metric, start, end, submit):
    if metric == METRIC_WAIT:
        return start - submit
    if metric == METRIC_WAIT2:
        w = start - submit
        return w * w
    return end


@njit(cache=True)
def initial_profile(T0, F0, L0, cap):  # noqa: N803
    """Working arrays of `cap` entries holding the running jobs' profile."""
    T = np.empty(cap, np.float64)
    F = np.empty(cap, np.int64)
    T[:L0] = T0[:L0]
    F[:L0] = F0[:L0]
    return T, F


@njit(cache=True)
def decode(order, T0, F0, L0, nodes, walltime, submit, metric, base_cost,  # noqa: N803
           not_now, starts):
    """Decode a whole permutation from the initial profile: fills `starts` (by job index,
    +inf for a job that never fits) and returns the cost. A job with `not_now` set may not
    start at the first breakpoint (now): the engine could not give it a partition."""
    T, F = initial_profile(T0, F0, L0, L0 + len(order) + 1)
    L = L0
    cost = base_cost
    for q in range(len(order)):
        job = order[q]
        k, j = fit(T, F, L, nodes[job], walltime[job], 1 if not_now[job] else 0)
        if k < 0:
            starts[job] = np.inf
            continue
        start = T[k]
        end = start + walltime[job]
        L = place(T, F, L, k, j, end, nodes[job])
        starts[job] = start
        c = term(metric, start, end, submit[job])
        if metric == METRIC_MAKESPAN:
            cost = max(cost, c)
        else:
            cost += c
    return cost


@njit(cache=True)
def _job_at(perm, q, i, j):
    """The job at position q after moving the job at position i to position j."""
    if i < j:
        if q < i or q > j:
            return perm[q]
        if q == j:
            return perm[i]
        return perm[q + 1]
    if q < j or q > i:
        return perm[q]
    if q == j:
        return perm[i]
    return perm[q - 1]


@njit(cache=True)
def _apply_move(perm, i, j):
    x = perm[i]
    if i < j:
        for q in range(i, j):
            perm[q] = perm[q + 1]
    else:
        for q in range(i, j, -1):
            perm[q] = perm[q - 1]
    perm[j] = x


@njit(cache=True)
def init_snapshots(perm, T0, F0, L0, nodes, walltime, submit, lower, metric,  # noqa: N803
                   base_cost, stride, snap_t, snap_f, snap_l, snap_c, snap_lb, owner):
    """Decode `perm` from scratch into buffer 0, recording every `stride`-th profile;
    returns the cost."""
    n = len(perm)
    T, F = initial_profile(T0, F0, L0, snap_t.shape[2])
    L = L0
    cost = base_cost
    placed_lb = 0.0
    for q in range(n):
        if q % stride == 0:
            r = q // stride
            owner[r] = 0
            snap_t[0, r, :L] = T[:L]
            snap_f[0, r, :L] = F[:L]
            snap_l[0, r] = L
            snap_c[0, r] = cost
            snap_lb[0, r] = placed_lb
        job = perm[q]
        k, j = fit(T, F, L, nodes[job], walltime[job], 0)
        start = T[k]
        end = start + walltime[job]
        L = place(T, F, L, k, j, end, nodes[job])
        c = term(metric, start, end, submit[job])
        cost = max(cost, c) if metric == METRIC_MAKESPAN else cost + c
        placed_lb += lower[job]
    return cost


@njit(cache=True)
def anneal(perm, best, T0, F0, L0, nodes, walltime, submit, lower, total_lower,  # noqa: N803
           metric, scale, stride, temps, per_level, moves_i, moves_j, log_u, e_begin, e_end,
           snap_t, snap_f, snap_l, snap_c, snap_lb, owner, scalars, T, F):
    """Run evaluations e_begin..e_end-1 of Algorithm 1 (temperature temps[e // per_level]).

    `perm` is the current permutation P with its snapshots; `best` is P_best. A candidate
    P' is accepted when cost(P') <= cost(P) - scale * T * ln(u): better or equal always,
    worse with probability exp(-(cost(P') - cost(P)) / (scale * T)) (Metropolis), where
    `scale` normalises costs to the initial plan's so that the paper's T0 = 1 means
    "a move that doubles the cost is accepted with probability 1/e".
    """
    n = len(perm)
    for e in range(e_begin, e_end):
        i = moves_i[e]
        j = moves_j[e]
        cur = scalars[CUR_COST]
        threshold = cur - scale * temps[e // per_level] * log_u[e]
        a = min(i, j)
        b = max(i, j)
        r0 = a // stride
        o = owner[r0]
        L = snap_l[o, r0]
        T[:L] = snap_t[o, r0, :L]
        F[:L] = snap_f[o, r0, :L]
        cost = snap_c[o, r0]
        placed_lb = snap_lb[o, r0]
        last_row = r0  # rows r0+1..last_row were written into the spare buffer
        converged = -1
        aborted = False
        for q in range(r0 * stride, n):
            if q % stride == 0 and q > r0 * stride:
                r = q // stride
                if q > b:
                    # Past the move: the same profile as the current plan means the same
                    # future; its cost is the current plan's remaining cost.
                    oc = owner[r]
                    same = snap_l[oc, r] == L
                    if same:
                        for x in range(L):
                            if snap_t[oc, r, x] != T[x] or snap_f[oc, r, x] != F[x]:
                                same = False
                                break
                    if same:
                        converged = r
                        if metric == METRIC_MAKESPAN:
                            cost = max(cost, cur)
                        else:
                            cost += cur - snap_c[oc, r]
                        break
                spare = 1 - owner[r]
                snap_t[spare, r, :L] = T[:L]
                snap_f[spare, r, :L] = F[:L]
                snap_l[spare, r] = L
                snap_c[spare, r] = cost
                snap_lb[spare, r] = placed_lb
                last_row = r
            job = _job_at(perm, q, i, j)
            k, jj = fit(T, F, L, nodes[job], walltime[job], 0)
            start = T[k]
            end = start + walltime[job]
            L = place(T, F, L, k, jj, end, nodes[job])
            c = term(metric, start, end, submit[job])
            if metric == METRIC_MAKESPAN:
                cost = max(cost, c)
                if cost > threshold:
                    aborted = True
                    break
            else:
                cost += c
                placed_lb += lower[job]
                if cost + (total_lower - placed_lb) > threshold:
                    aborted = True
                    break
        scalars[EVALS] += 1
        if aborted:
            scalars[ABORTED] += 1
            continue
        if converged >= 0:
            scalars[CONVERGED] += 1
        if cost > threshold:
            continue
        # Accept: P <- P'. The rows the candidate wrote become current; rows after a
        # convergence keep their profiles and shift their prefix costs.
        _apply_move(perm, i, j)
        for r in range(r0 + 1, last_row + 1):
            owner[r] = 1 - owner[r]
        if converged >= 0 and metric != METRIC_MAKESPAN:
            shift = cost - cur
            for r in range(converged, len(owner)):
                snap_c[owner[r], r] += shift
        scalars[CUR_COST] = cost
        scalars[ACCEPTED] += 1
        if cost < scalars[BEST_COST]:
            scalars[BEST_COST] = cost
            scalars[IMPROVED] += 1
            best[:] = perm
