"""The reference path: build every match (SASE-style), then aggregate; exact, exponential, the oracle.

:func:`run_reference` evaluates a prepared input with :mod:`cepvec.paths.reference.evaluate`
and assembles the frame as every other path does; :class:`ReferenceRun` is the
streaming form (it keeps the batches and evaluates at ``finish``);
:func:`reference_progress` warns before a run that will build millions of
matches and draws progress.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from cepvec.paths.base import Path
from cepvec.paths.reference import evaluate as reference
from cepvec.plan.ir import Query
from cepvec.runtime import progress
from cepvec.runtime.output import build_output
from cepvec.runtime.prepare import Prepared
from cepvec.runtime.type_codes import type_in

# measured on the development machine: A+ over 22 events (2**22 - 1 matches) in 26 s, over 25 events in 352 s
REFERENCE_SECONDS_PER_MATCH = 1e-5


def run_reference(q: Query, prep: Prepared, *, numeric: str = "int64", count_matches=None) -> pl.DataFrame:
    """Evaluate ``q`` with the reference engine; returns the result DataFrame.

    ``count_matches(q, prep) -> int | None`` counts the matches online first (the registry passes
    one that runs a Numba path), so that a run about to explode warns before it starts.
    """
    df = prep.df
    rows = df.to_dicts()
    times = prep.times.to_list()
    with reference_progress(q, prep, "cepvec.run(engine='reference')", count_matches) as counter:
        res = reference.evaluate_query(q, rows, times, w=prep.w, s=prep.s, progress=counter)
    schema = df.schema
    is_int = {a: schema[a].is_integer() for a in q.attributes if a in schema}
    cells = reference.aggregate(q, res, numeric=numeric, attr_is_int=is_int)
    return build_output(q, prep, cells, numeric)


def reference_progress(q: Query, prep: Prepared, what: str, count_matches=None) -> progress.Progress:
    """The progress counter of a reference run of ``q`` over ``prep``; warns first when it will explode.

    When the input is large enough for the match count to explode (:func:`_match_bound`),
    an online engine counts the matches first, in one pass; past
    :data:`cepvec.runtime.progress.EXPLODE_MATCHES` (read at each call) a :class:`CepvecWarning` says how
    many there will be, before any is built. When no online engine can count
    them, the warning comes as soon as that many have been built.
    """
    expected = None
    if _match_bound(q, prep) > progress.EXPLODE_MATCHES:
        expected = count_matches(q, prep) if count_matches is not None else None
    advice = ("The reference engine builds every match (exponential); engine='auto' computes the same "
              "result online in one pass" if expected is not None else
              "The reference engine builds every match (exponential); no online engine runs this query, "
              "so shorten the input, the WITHIN window or the pattern")
    if expected is not None and expected > progress.EXPLODE_MATCHES:
        minutes = expected * REFERENCE_SECONDS_PER_MATCH / 60
        rate = 1 / REFERENCE_SECONDS_PER_MATCH
        many = f"more than {expected - 1:,}" if expected >= progress.MATCHES_PAST_INT64 else f"{expected:,}"
        progress.warn_user(f"{what} will build {many} matches on this input (about {minutes:,.1f} min "
                           f"at ~{rate:,.0f} matches/s). {advice}")
    return progress.Progress(f"{what}: matches", "match", total=None,
                             warn_after=progress.EXPLODE_MATCHES if expected is None else None,
                             warn_message=f"{what} has built {{n}} matches and is not done. {advice}")


def _match_bound(q: Query, prep: Prepared) -> float:
    """A cheap upper bound on the (match, output row) pairs the reference engine builds.

    A match binds distinct events of one partition, each to one of the positive
    occurrences that accept its type: at most ``(1 + o) ** n`` matches in a
    partition of ``n`` pattern events, ``o`` occurrences per type; a match is
    placed once per SLIDE window (``ceil(w / s)``) or EMIT time (``n``).
    """
    per_type: dict = {}
    for o in q.occs:
        if not o.negated:
            for t in o.types:
                per_type[t] = per_type.get(t, 0) + 1
    if not per_type or not len(prep.df):
        return 0.0
    log_base = math.log2(1 + max(per_type.values()))
    ev = prep.df.filter(type_in(q.type_col, per_type))
    sizes = (ev.group_by(list(q.partition_by)).len()["len"].to_list() if q.partition_by else [len(ev)])
    total = 0.0
    for n in sizes:
        placements = math.log2(max(1, -(-prep.w // prep.s))) if q.window.kind == "slide" else (
            math.log2(max(1, n)) if q.window.kind == "emit" else 0.0)
        total += 2.0 ** min(1000.0, n * log_base + placements)
    return total


class ReferenceRun:
    """Streaming form of the reference path: keeps the pushed batches, evaluates them at ``finish``."""

    def __init__(self, q: Query, numeric: str, count_matches=None):
        self.q, self.numeric, self.count_matches = q, numeric, count_matches
        self.frames: list[pl.DataFrame] = []
        self.times: list[np.ndarray] = []

    def push(self, df: pl.DataFrame, times: np.ndarray) -> None:
        if len(df):
            self.frames.append(df)
            self.times.append(np.asarray(times, np.int64))

    def finish(self, prep: Prepared) -> pl.DataFrame:
        df = pl.concat(self.frames, how="vertical_relaxed") if self.frames else prep.df.head(0)
        times = pl.Series("__t", np.concatenate(self.times) if self.times else np.zeros(0, np.int64))
        return self.evaluate(Prepared(df, times, prep.unit, prep.time_dtype, prep.w, prep.s))

    def evaluate(self, whole: Prepared) -> pl.DataFrame:
        """The result over the whole input (the match path's run reuses the buffering above)."""
        return run_reference(self.q, whole, numeric=self.numeric, count_matches=self.count_matches)


class ReferencePath(Path):
    """Every query; exponential in the number of matches (small inputs, and the tests' oracle)."""

    name = "reference"

    def __init__(self, count_matches=None):
        self.count_matches = count_matches

    def supports(self, q: Query, schema: dict | None = None) -> str | None:
        return None

    def open(self, q: Query, schema: dict, *, w: int | None, s: int | None, numeric: str = "int64") -> ReferenceRun:
        return ReferenceRun(q, numeric, self.count_matches)
