"""Elastic control commands (ET/RT/EP/RP), resizing a running job, and node failures and
repairs (fourth link of the engine chain, see engine_state.py)."""

from __future__ import annotations

from ..limits import MAX_DURATION
from .cluster import Allocation, PoolState
from .decisions import DecisionError, PreemptMode
from .engine_preempt import _Preemption
from .engine_state import CHECKPOINTING, EV_FAILURE, EV_REPAIR, FAILED, PREEMPTED, RUNNING
from .exec_state import Ecc, _Exec
from .recorder import DOWN

ECC_KINDS = ("ET", "RT", "EP", "RP")


class _Elastic(_Preemption):
    def _apply_ecc(self, ecc: Ecc) -> None:
        outcome = self._ecc_outcome(ecc)
        self.ecc_log.append((ecc, outcome))
        self.stats["eccs_applied" if outcome == "applied" else "eccs_rejected"] += 1

    def _ecc_outcome(self, ecc: Ecc) -> str:
        x = self._x.get(ecc.job_id)
        if x is None:
            return "rejected: job not live"
        if ecc.kind not in ECC_KINDS or ecc.amount <= 0:
            return f"rejected: bad command {ecc.kind} {ecc.amount}"
        if not self._eccs_on:
            return f"rejected: policy {self.policy.name} has no ECC processor"
        limit = self.options.ecc_max_per_job
        if limit and x.ecc_count >= limit:
            return f"rejected: job already had {limit} commands"
        job = x.job
        if job.state is CHECKPOINTING:
            return "rejected: job is checkpointing"
        if ecc.kind in ("ET", "RT"):
            sign = 1.0 if ecc.kind == "ET" else -1.0
            walltime = job.walltime + sign * ecc.amount
            if walltime <= 0:
                return "rejected: walltime would not stay positive"
            if walltime > MAX_DURATION:  # the bound every given walltime is held to
                return (f"rejected: walltime would be {walltime:.6g} s, above "
                        f"{MAX_DURATION:g} s")
            job.walltime = walltime
            if self.options.ecc_changes_runtime:
                x.work_total = max(x.work_total + sign * ecc.amount, 1e-9)
            if job.state is RUNNING:
                work = self._resegment(x)
                x.target = max(min(x.work_total, walltime + x.wall_done), work)
                self._schedule_finish(x)
            else:
                x.target = min(x.work_total, walltime + x.wall_done)
        else:
            delta = int(ecc.amount) if ecc.kind == "EP" else -int(ecc.amount)
            nodes = job.nodes + delta
            if self.cluster.alloc_size(nodes) is None:
                return f"rejected: {nodes} nodes do not fit {self.cluster.name}"
            if job.state is RUNNING:
                # A rigid job grows or shrinks by the amount; a malleable job only shrinks
                # if it now runs above its new maximum (growing is the policy's choice).
                size = min(x.used_nodes, nodes) if job.malleable else x.used_nodes + delta
                try:
                    if size != x.used_nodes:
                        self._resize_running(x, size)
                except DecisionError as err:
                    return f"rejected: {err}"
            job.nodes = nodes
            if job.min_nodes > nodes:
                job.min_nodes = nodes
        x.ecc_count += 1
        return "applied"

    def _resize_running(self, x: _Exec, nodes: int) -> None:
        job = x.job
        old = job.allocation
        assert isinstance(old, Allocation)
        if old.block >= 0:
            raise DecisionError(f"{self.cluster.name} cannot resize a running partition")
        if nodes < 1:
            raise DecisionError(f"job {job.id} cannot shrink below 1 node")
        res = self.reservations.get(x.res_key) if x.res_key is not None else None
        pool = res.sub if res is not None else self.state
        if nodes > old.nodes and not pool.fits(nodes - old.nodes):
            raise DecisionError(
                f"job {job.id} cannot grow by {nodes - old.nodes} nodes: "
                f"{pool.free_nodes} are free"
            )
        pool.release(old)
        new = pool.allocate(nodes)
        assert new is not None
        # A resize adds no overhead: the segment so far is accounted at the old size and
        # the rest continues at the new one.
        self._resegment(x)
        job.allocation = new
        job.alloc_nodes = nodes
        x.used_nodes = nodes
        if x.spec.malleable:
            x.speed = nodes / x.spec.nodes
        self._schedule_finish(x)
        self._emit("resize", job.id)
        if self.transitions is not None:
            self.transitions.append((self.now, job.id, RUNNING, "resize", nodes))
        if self.recorder is not None:
            self.recorder.resized(self.now, job, nodes)

    def _failure(self) -> None:
        """A node failure at a uniformly drawn failure unit (node or midplane)."""
        opts = self.options
        if not self._work_remains():
            self._failures_armed = False  # stop, or the simulation would never end
            return
        self.events.push(self.now + self.rng.expovariate(1.0 / opts.mtbf_s), EV_FAILURE, None)
        self.stats["failures"] += 1
        unit = self.rng.randrange(self.cluster.failure_units)
        owner, key = self._unit_owner(unit)
        if owner == "ignored":
            # Already down, or idle inside a reservation (its owner keeps it): documented.
            self.stats["failures_ignored"] += 1
            return
        if isinstance(owner, _Exec):
            self._fail_job(owner)
        if not self.state.unit_down(unit):
            self.stats["failures_ignored"] += 1
            return
        self._down_units[key] = self.now
        if self.recorder is not None:
            self.recorder.level(self.now, DOWN, self._unit_nodes())
        self.events.push(self.now + self.rng.expovariate(1.0 / opts.mttr_s), EV_REPAIR, key)

    def _unit_owner(self, unit: int) -> tuple[_Exec | str | None, int]:
        """(the job holding failure unit `unit`, "ignored", or None if free; repair key)."""
        if isinstance(self.state, PoolState):
            # Identical nodes have no identity: order them as down nodes, running jobs (in
            # start order), reservations, free nodes, and map the drawn index onto that.
            i = unit - self.state.down
            key = self._repair_seq = self._repair_seq + 1
            if i < 0:
                return "ignored", key
            for job in self.running.values():
                x = self._x[job.id]
                if x.res_key is None:
                    if i < job.alloc_nodes:
                        return x, key
                    i -= job.alloc_nodes
            for res in self.reservations.values():
                if i < res.nodes:
                    return "ignored", key
                i -= res.nodes
            return None, key
        if unit in self._down_units:
            return "ignored", unit
        for job in self.running.values():
            if job.allocation is not None and job.allocation.covers_unit(unit):
                return self._x[job.id], unit
        for res in self.reservations.values():
            if res.alloc.covers_unit(unit):
                return "ignored", unit
        return None, unit

    def _fail_job(self, x: _Exec) -> None:
        job = x.job
        x.failures += 1
        if job.state is CHECKPOINTING:
            spent = self.now - x.ckpt_start
            x.busy_ns += job.alloc_nodes * spent
            x.executed += spent
            x.ckpt_ns += job.alloc_nodes * spent  # the unfinished checkpoint is wasted
            x.preempt_ckpt_ns += job.alloc_nodes * spent
            x.t_ckpt += spent
            self._release_nodes(x)
        else:
            self._close_segment(x, self.now)
            self._release_nodes(x)
        if self.options.requeue_on_failure:
            self._lose_work(x, PreemptMode.LAST_CHECKPOINT)
            self._move(job, PREEMPTED, "node-failure")
            self._emit("stop", job.id)
            self._enqueue(job)
        else:
            x.lost_ns += x.since_zero_ns
            x.useful_ns = 0.0
            self._move(job, FAILED, "node-failure")
            self._emit("stop", job.id)
            self._retire(x)

    def _repair(self, key: int) -> None:
        del self._down_units[key]
        self.state.unit_up(key)
        if self.recorder is not None:
            self.recorder.level(self.now, DOWN, -self._unit_nodes())
        self.stats["repairs"] += 1
