"""Shared executor (filled in by the next step)."""


class SharedRun:
    def __init__(self, queries, prep, *, numeric="int64"):
        raise NotImplementedError
