"""Engine registry: the paths that exist, and the one :class:`Choice` of path for a query.

The user names an *engine* (``"auto"``, ``"aseq"``, ``"greta"``,
``"reference"``); the registry turns it into a :class:`Choice`: the engine, the
physical path that runs the query (:mod:`cepvec.paths`) and why. It is
computed once per call and handed to the run, to ``explain`` and to the Arrow
kernel. Paths are asked in order of speed (:data:`NUMBA_PATHS`); a query with
qualified equivalences is run by broadcasting on top of the first path that
can run its unqualified form (:class:`cepvec.paths.qualified.Qualified`).
"""

from __future__ import annotations

import dataclasses

import polars as pl

from cepvec.errors import CepvecOverflowError, CepvecQueryError, UnsupportedByEngine
from cepvec.paths.base import Path, Run, feed
from cepvec.paths.linear import LinearPath
from cepvec.paths.match.aggregate import MatchAggPath
from cepvec.paths.linear.plan import unsupported_reason as linear_reason
from cepvec.paths.qualified import Qualified, unqualified_query
from cepvec.paths.reference.run import ReferencePath
from cepvec.paths.scan import ScanPath
from cepvec.paths.trend import TrendPath
from cepvec.paths.trend.plan import unsupported_reason as trend_reason
from cepvec.plan.ir import AggSpec, Query
from cepvec.runtime import progress
from cepvec.runtime.prepare import Prepared

ENGINES = ("auto", "aseq", "greta", "match", "reference")
#: the number types of counts and sums (``numeric=``)
NUMERIC = ("int64", "float64")
#: the Numba paths, fastest first; "aseq" and "greta" both run on them ("aseq": fixed-length patterns only)
NUMBA_PATHS: tuple[Path, ...] = (LinearPath(), TrendPath(), ScanPath())
QUALIFIED_PATHS: tuple[Path, ...] = tuple(Qualified(p) for p in NUMBA_PATHS)

#: why each Numba path is the fastest for the queries it takes (explain)
WHY = {
    "linear": "prefix counters as linear maps over a two-stack sliding-window aggregator (Numba), cost per "
              "event independent of the window",
    "trend": "GRETA per-event trend aggregates, predecessors found per transition by a Fenwick tree over ranked "
             "keys or a running sum (Numba), O(log n) per event and open window",
    "match": "the match engine builds the matches in batches (SASE+ match graph, Numba) and Polars "
             "aggregates each batch: linear in the matches (cepvec/paths/match/aggregate.py)",
    "scan": "GRETA predecessor scan: per-event trend aggregates, each event scans its predecessors and evaluates "
            "the edge predicates (Numba), O(n) per event, O(n^2) per partition",
}


@dataclasses.dataclass(frozen=True)
class Choice:
    """Which engine and path run a query, and why (see the module docstring)."""

    engine: str  # "aseq", "greta" or "reference"
    path: Path
    reason: str

    @property
    def path_name(self) -> str:
        """"linear", "trend", "scan" or "reference" (a qualified path by the path it wraps)."""
        return getattr(self.path, "inner", self.path).name

    def open(self, q: Query, schema: dict, *, w: int | None, s: int | None, numeric: str = "int64") -> Run:
        return self.path.open(q, schema, w=w, s=s, numeric=numeric)


def _candidates(q: Query) -> tuple[Path, ...]:
    return QUALIFIED_PATHS if q.qualified_equivalences else NUMBA_PATHS


def numba_path(q: Query, schema: dict | None = None) -> tuple[Path | None, str]:
    """The fastest Numba path that runs ``q`` and None, or None and why the last (most general) cannot."""
    why = ""
    for path in _candidates(q):
        why = path.supports(q, schema)
        if why is None:
            return path, ""
    return None, why


def greta_path(q: Query, schema: dict | None = None) -> str | None:
    """The name of the Numba path that runs ``q`` ("linear", "trend", "scan"), or None."""
    path, _ = numba_path(q, schema)
    return None if path is None else getattr(path, "inner", path).name


def engine_support(q: Query, engine: str, schema: dict | None = None) -> str | None:
    """None when ``engine`` can run ``q`` (on input with column types ``schema``, when known), else why not."""
    if engine == "reference":
        return None
    if engine == "aseq" and q.is_kleene:
        return "the pattern has Kleene plus; A-Seq handles fixed-length SEQ only (use engine='greta')"
    return numba_path(q, schema)[1] or None


def choose(q: Query, engine: str = "auto", schema: dict | None = None) -> Choice:
    """The :class:`Choice` for ``q`` under ``engine``; raises :class:`UnsupportedByEngine` when it cannot run."""
    if engine not in ENGINES:
        raise UnsupportedByEngine(f"unknown engine {engine!r}; choose one of: {', '.join(ENGINES)}")
    if engine == "reference":
        return Choice("reference", REFERENCE, "engine='reference' was asked for: every match is built")
    if engine == "match":
        why = MATCH_AGG.supports(q, schema)
        if why is not None:
            if why.startswith("engine="):
                raise UnsupportedByEngine(why)
            raise UnsupportedByEngine(f"engine='match' cannot run query {' '.join(q.text.split())!r}: {why}. "
                                      "Use engine='reference'")
        return Choice("match", MATCH_AGG, f"engine='match' was asked for: {WHY['match']}")
    if engine == "auto" and q.not_adjacent:  # the contract: rejected unless the caller allows matching
        message, start, end = q.not_adjacent[0]
        raise CepvecQueryError(f"{message}; pass engine='match' to aggregate over the match engine's matches "
                               "(or engine='reference'), or list them with cepvec.matches",
                               source=q.text, start=start, end=end)
    path, why = numba_path(q, schema)
    if engine == "auto":
        if path is None and MATCH_AGG.supports(q, schema) is None:
            return Choice("match", MATCH_AGG,
                          f"the online engines do not support {why}; {WHY['match']}")
        if path is None:
            return Choice("reference", REFERENCE,
                          f"the Numba engines do not support {why}; the match-constructing reference engine "
                          "answers every query but is exponential in the number of matches")
        engine = "greta" if q.is_kleene else "aseq"
    else:
        why = engine_support(q, engine, schema)
        if why is not None:
            if why.startswith("engine="):  # a path's own message about the column types
                raise UnsupportedByEngine(why)
            raise UnsupportedByEngine(
                f"engine={engine!r} cannot run query {' '.join(q.text.split())!r}: {why}. "
                "Use engine='auto' to pick an engine that can")
    return Choice(engine, path, _reason(q, engine, path))


def _reason(q: Query, engine: str, path: Path) -> str:
    inner = getattr(path, "inner", path)
    if inner.name == "linear":
        text = (("fixed-length sequence: " if engine == "aseq" else "Kleene pattern: ")
                + WHY["linear"].replace("prefix counters", "per-state trend aggregates" if engine == "greta"
                                        else "prefix counters"))
    elif inner.name == "trend":
        text = "edge predicates: " + WHY["trend"]
    else:
        base = q if inner is path else unqualified_query(q)
        why = trend_reason(base) if base.edges else linear_reason(base)
        text = f"{WHY['scan']}; the faster paths do not support {why}"
    if inner is not path:
        text += ("; qualified equivalence " + ", ".join(e.text for e in q.qualified_equivalences)
                 + ": events of the other variables are copied to every partition of their key (cepvec/paths/"
                 "qualified.py)")
    return text


def run_engine(q: Query, prep: Prepared, choice: Choice | str, *, numeric: str = "int64",
               batches: list[int] | None = None) -> pl.DataFrame:
    """Evaluate ``q`` over ``prep`` with ``choice`` (or an engine name), in batches cut at ``batches`` (tests)."""
    if isinstance(choice, str):
        choice = choose(q, choice, prep.df.schema)
    return feed(choice.open(q, prep.df.schema, w=prep.w, s=prep.s, numeric=numeric), prep, batches)


def count_matches_online(q: Query, prep: Prepared) -> int | None:
    """The (match, output row) pairs of ``q`` counted online (sum of ``COUNT(*)``), or None when no
    Numba path runs ``q`` on this input (the reference path's warning before it explodes).

    Counted with the int64 kernels, the ones a default run compiles (``numeric="float64"`` would compile
    a second family, 10-20 s on a cold cache, for a warning); a count past int64 returns
    :data:`cepvec.runtime.progress.MATCHES_PAST_INT64`."""
    if q.run_preds:  # no online path runs predicates over the run
        return None
    count = dataclasses.replace(q, aggs=(AggSpec("COUNT", (), None, "COUNT(*)"),))
    choice = choose(count, "auto", prep.df.schema)
    if choice.engine in ("reference", "match"):  # "match" would enumerate the matches to count them
        return None
    try:
        out = run_engine(count, prep, choice)
    except CepvecOverflowError:
        return progress.MATCHES_PAST_INT64
    total = sum(out["COUNT(*)"].to_list())  # Python ints: the rows' sum does not wrap
    return min(total, progress.MATCHES_PAST_INT64)


REFERENCE = ReferencePath(count_matches=count_matches_online)
#: aggregates over the match engine's matches: engine="auto" for strategies the online paths refuse
MATCH_AGG = MatchAggPath()
