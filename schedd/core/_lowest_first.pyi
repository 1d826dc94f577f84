"""Types of the lowest-first fit in C (schedd/core/_lowest_first.c)."""

from typing_extensions import Buffer

class LowestFirst:
    def __init__(self, total: int, ends: Buffer, by_end: Buffer) -> None: ...
    def place(self, starts: Buffer, sizes: Buffer, /) -> tuple[bytearray, bytearray]: ...
