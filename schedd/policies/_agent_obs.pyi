"""Types of the agent's observation in C (schedd/policies/_agent_obs.c)."""

from typing_extensions import Buffer

def fill(jobs: Buffer, machine: Buffer, static: Buffer, rows: list[int], now: float, free: int,
         total: int, waiting: int, running: int, ends: list[float], end_rows: list[int],
         picked: list[int], /) -> None: ...
