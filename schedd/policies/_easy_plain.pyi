"""Types of the plain-EASY loop in C (schedd/policies/_easy_plain.c)."""

from collections.abc import Callable

from typing_extensions import Buffer

def run(submit: Buffer, nodes: Buffer, walltime: Buffer, setup: Buffer, target: Buffer,
        total: int, free: int, order: int, incremental: bool, now: float,
        progress: Callable[[int], object] | None, /
        ) -> tuple[bytearray, bytearray, bytearray, bytearray, bytearray, float, float, int,
                   int]: ...
