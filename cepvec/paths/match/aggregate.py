"""Aggregates over the matches the match engine builds: ``cepvec.run`` for what no online path runs.

The online paths (linear, trend, scan) aggregate without building matches,
but only under skip-till-any-match. For the other event selection strategies
``engine="auto"`` takes this path: the match engine enumerates the matches
in batches (:class:`cepvec.paths.match.run.MatchGraph`) and each batch is
aggregated per group with Polars, then the batches are combined. The cost
is linear in the matches (not exponential like the reference engine's
enumeration of sub-matches), and memory holds one batch of matches.
Aggregates follow the reference engine (``paths/reference/evaluate.py::aggregate``):
null and NaN values are skipped, exact int64 counts and sums raise on overflow.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from cepvec.paths.base import Path
from cepvec.paths.match.runs import matcher
from cepvec.paths.reference.run import ReferenceRun
from cepvec.plan.ir import Query
from cepvec.runtime.output import build_output, overflow_error
from cepvec.runtime.prepare import Prepared

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def aggregate_matches(q: Query, prep: Prepared, numeric: str = "int64") -> pl.DataFrame:
    """The result of ``q`` over ``prep``, aggregated over the match engine's matches."""
    df = prep.df.with_columns(pl.col(pl.Float32, pl.Float64).fill_nan(None))  # NaN is skipped, as null
    keys = list(q.group_by) or ["__all"]
    attrs = sorted({a.attr for a in q.aggs if a.attr})
    parts = []
    for match_id, _pos, rows, occ in matcher(q, prep).batches(None):
        ev = prep.df[rows].select(q.group_by) if q.group_by else pl.DataFrame({"__all": np.zeros(len(rows))})
        b = pl.concat([pl.DataFrame({"__m": match_id, "__o": occ}), ev, df[rows].select(
            [pl.col(a).alias(f"__a{attrs.index(a)}") for a in attrs])], how="horizontal")
        parts.append(b.group_by(keys).agg(_partial_aggs(q, b.schema, attrs)))
    if not parts:
        return build_output(q, prep, [], numeric)
    g = pl.concat(parts, how="vertical_relaxed").group_by(keys).agg(_combine(q, attrs))
    g = g.sort(keys, nulls_last=True)
    cols = {c: g[c].to_list() for c in g.columns}
    cells = []
    for r in range(g.height):
        group = tuple(cols[k][r] for k in q.group_by)
        vals = []
        for j, a in enumerate(q.aggs):
            if a.func == "COUNT":
                v = cols[f"__n{j}"][r]
            elif a.func in ("MIN", "MAX"):
                v = cols[f"__x{j}"][r]
            else:
                s, n = cols[f"__s{j}"][r], cols[f"__c{j}"][r]
                v = None if not n else (s if a.func == "SUM" else s / n)
            exact = a.func == "COUNT" or (a.func == "SUM" and prep.df.schema[a.attr].is_integer())
            if exact and v is not None:
                if numeric == "float64":
                    v = float(v)
                elif not INT64_MIN <= v <= INT64_MAX:
                    raise overflow_error(q, f"in {a.label} for group {group!r}")
            vals.append(v)
        cells.append((group, (), vals))
    return build_output(q, prep, cells, numeric)


def _partial_aggs(q: Query, schema, attrs) -> list[pl.Expr]:
    out = []
    for j, a in enumerate(q.aggs):
        if a.star:
            out.append(pl.col("__m").n_unique().cast(pl.Int128).alias(f"__n{j}"))
            continue
        mine = pl.col("__o").is_in(list(a.occs))
        if a.func == "COUNT":
            out.append(mine.sum().cast(pl.Int128).alias(f"__n{j}"))
            continue
        x = pl.col(f"__a{attrs.index(a.attr)}").filter(mine)
        if a.func in ("MIN", "MAX"):
            out.append((x.min() if a.func == "MIN" else x.max()).alias(f"__x{j}"))
        else:
            wide = pl.Int128 if schema[f"__a{attrs.index(a.attr)}"].is_integer() else pl.Float64
            out += [x.cast(wide).sum().alias(f"__s{j}"), x.count().cast(pl.Int128).alias(f"__c{j}")]
    return out


def _combine(q: Query, attrs) -> list[pl.Expr]:
    out = []
    for j, a in enumerate(q.aggs):
        if a.func == "COUNT":
            out.append(pl.col(f"__n{j}").sum())
        elif a.func in ("MIN", "MAX"):
            out.append(pl.col(f"__x{j}").min() if a.func == "MIN" else pl.col(f"__x{j}").max())
        else:
            out += [pl.col(f"__s{j}").sum(), pl.col(f"__c{j}").sum()]
    return out


class MatchAggRun(ReferenceRun):
    """Keeps the pushed batches (as the reference run does); at ``finish`` builds the matches and
    aggregates them."""

    def evaluate(self, whole: Prepared) -> pl.DataFrame:
        return aggregate_matches(self.q, whole, self.numeric)


class MatchAggPath(Path):
    """Aggregates over the match engine's matches (the strategies the online paths do not run)."""

    name = "match"

    def supports(self, q: Query, schema: dict | None = None) -> str | None:
        from cepvec.paths.match import match_support

        return match_support(q, schema)

    def open(self, q: Query, schema: dict, *, w: int | None, s: int | None, numeric: str = "int64") -> MatchAggRun:
        return MatchAggRun(q, numeric)
