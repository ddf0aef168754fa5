"""SASE+'s non-overlapping output format: one match per partition and stretch of time.

SASE+ Section 2: "the non-overlap format outputs only one match among those
that belong to the same partition (for strict contiguity, treat the input
stream as a single partition) and overlap in time; that is, one match in a
partition is output only if it starts after the previous match completes".
cepvec makes the choice exact (``docs/semantics.md`` 8.1): per partition,
repeatedly keep, among the matches whose first event is later than the last
event of the match kept before, the one that **ends first**; ties go to the
one that starts last, then to the one whose events come first in the input
(compared event by event), then to the smaller variable order. This is the
match SASE+'s executor outputs first when it prunes the partition's other
runs at each output, made deterministic.
"""

from __future__ import annotations

OVERLAPS = ("all", "none")


def check_overlap(overlap, window_kind: str) -> None:
    """Raise when ``overlap`` is not a known value or cannot apply to the window."""
    from cepvec.errors import CepvecPlanError

    if overlap not in OVERLAPS:
        raise CepvecPlanError(f"overlap must be 'all' or 'none'; found {overlap!r}")
    if overlap == "none" and window_kind in ("slide", "emit"):
        raise CepvecPlanError(
            "overlap='none' chooses among the matches of a partition in time; with a SLIDE or EMIT CHANGES "
            "window a match is listed once per window, so use WITHIN (or no window) with overlap='none'")


def non_overlapping(part, first, last, keys) -> list[int]:
    """Indices (ascending) of the matches the non-overlapping format keeps (module docstring).

    ``part[j]``, ``first[j]``, ``last[j]``: partition, first and last time of match ``j``;
    ``keys[j]``: ``(input positions of its events, its occurrence ids)``, the last tie-break.
    """
    order = sorted(range(len(part)), key=lambda j: (part[j], last[j], -first[j], keys[j]))
    cutoff: dict = {}
    keep = []
    for j in order:
        c = cutoff.get(part[j])
        if c is None or first[j] > c:
            keep.append(j)
            cutoff[part[j]] = last[j]
    return sorted(keep)
