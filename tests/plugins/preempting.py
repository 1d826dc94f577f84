"""Test-only policy, loaded with `--plugin tests/plugins/preempting.py`.

`rt-jit-toy`: a waiting real-time job that does not fit makes the largest running batch
jobs checkpoint (JIT) and stop; it starts once their nodes are back. Otherwise easy. It
exercises the daemon's checkpoint path (control commands, CheckpointDone, timeouts)
before the real-time policies of the papers exist.
"""

from __future__ import annotations

from schedd.core.decisions import Decision, Preempt, PreemptMode, Start
from schedd.core.job import JobClass, JobState
from schedd.core.view import View
from schedd.policies import register
from schedd.policies.backfill import Easy
from schedd.policies.base import Policy


@register
class RtJitToy(Policy):
    name = "rt-jit-toy"
    summary = "test policy: real-time jobs preempt batch jobs with JIT checkpoints"

    def __init__(self, options, cluster):  # type: ignore[no-untyped-def]
        super().__init__(options, cluster)
        self._easy = Easy(Easy.Options(), cluster)

    def schedule(self, view: View) -> list[Decision]:
        free = view.free_nodes
        for job in view.queue:
            if job.job_class is not JobClass.REALTIME:
                continue
            if job.nodes <= free:  # real-time first; the rest waits for the next pass
                return [Start(job.id)]
            coming = sum(j.alloc_nodes for j in view.running.values()
                         if j.state is JobState.CHECKPOINTING)
            need = job.nodes - free - coming
            decisions: list[Decision] = []
            for victim in sorted(view.running.values(), key=lambda j: (-j.alloc_nodes, j.id)):
                if need <= 0:
                    break
                if (victim.state is JobState.RUNNING and victim.checkpointable
                        and victim.job_class is not JobClass.REALTIME):
                    decisions.append(Preempt(victim.id, PreemptMode.JIT))
                    need -= victim.alloc_nodes
            return decisions  # it starts when the checkpoints are done
        return self._easy.schedule(view)
