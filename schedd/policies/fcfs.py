"""First come, first served: start jobs from the queue head while the head fits."""

from __future__ import annotations

from ..core.decisions import Decision
from ..core.view import View
from .backfill import eligible_queue, start_from_head
from .base import Policy


class Fcfs(Policy):
    name = "fcfs"
    summary = "first come, first served without backfilling"

    def schedule(self, view: View) -> list[Decision]:
        decisions: list[Decision] = []
        start_from_head(eligible_queue(view, decisions), view.free_state(), decisions)
        return decisions
