"""Engine registry: which engine runs a query, and the reference engine's driver."""

from __future__ import annotations

import polars as pl

from . import reference
from .errors import UnsupportedByEngine
from .frontend import Prepared, output_schema, time_values_to_output
from .query import Query

ENGINES = ("auto", "reference")


def choose_engine(q: Query) -> tuple[str, str]:
    """The engine ``engine="auto"`` resolves to for ``q``, and why."""
    return ("reference",
            "the match-constructing reference engine answers every query (exact, exponential in the "
            "number of matches: meant for small inputs and as the oracle)")


def resolve_engine(q: Query, engine: str) -> str:
    if engine not in ENGINES:
        raise UnsupportedByEngine(
            f"unknown engine {engine!r}; choose one of: {', '.join(ENGINES)}")
    if engine == "auto":
        return choose_engine(q)[0]
    return engine


def run_reference(q: Query, prep: Prepared, *, numeric: str = "int64") -> pl.DataFrame:
    """Evaluate ``q`` with the reference engine; returns the result DataFrame."""
    df = prep.df
    rows = df.to_dicts()
    times = prep.times.to_list()
    res = reference.evaluate_query(q, rows, times, w=prep.w, s=prep.s)
    schema = df.schema
    is_int = {a: schema[a].is_integer() for a in q.attributes if a in schema}
    cells = reference.aggregate(q, res, numeric=numeric, attr_is_int=is_int)
    return build_output(q, prep, cells, numeric)


def build_output(q: Query, prep: Prepared, cells, numeric: str) -> pl.DataFrame:
    """Assemble ``[(group, window, values)]`` into the result DataFrame (sorted)."""
    out_schema = output_schema(q, prep.df.schema, prep.time_dtype, numeric)
    data: dict[str, pl.Series] = {}
    names = list(out_schema)
    k = 0
    for j, lab in enumerate(q.group_labels):
        data[lab] = pl.Series(lab, [c[0][j] for c in cells], dtype=out_schema[lab])
        k += 1
    if q.window.kind == "slide":
        data["window_start"] = time_values_to_output([c[1][0] for c in cells], prep.unit, prep.time_dtype)
        data["window_end"] = time_values_to_output([c[1][1] for c in cells], prep.unit, prep.time_dtype)
    elif q.window.kind == "emit":
        data[q.time_col] = time_values_to_output([c[1][0] for c in cells], prep.unit, prep.time_dtype)
    for j, a in enumerate(q.aggs):
        vals = [c[2][j] for c in cells]
        data[a.label] = pl.Series(a.label, vals, dtype=out_schema[a.label], strict=False)
    frame = pl.DataFrame({n: data[n].rename(n) for n in names}) if names else pl.DataFrame()
    return frame
