"""Input validation and output assembly shared by every local engine.

Engines receive a :class:`Prepared` input: a Polars DataFrame sorted by time
with the columns the query needs, the integer time column, and the window
resolved to integers in the time column's unit.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import polars as pl

from cepvec.errors import (CepvecDataError, CepvecPlanError, CepvecTypeError, CepvecWarning)
from cepvec.plan.ir import Query

UNIT_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000,
           "min": 60_000_000_000, "h": 3_600_000_000_000, "d": 86_400_000_000_000}
TIME_UNITS = ("s", "ms", "us", "ns")
_UNIT_WORD = {"ns": "nanoseconds", "us": "microseconds", "ms": "milliseconds", "s": "seconds",
              "min": "minutes", "h": "hours", "d": "days"}


@dataclass
class Prepared:
    df: pl.DataFrame  # sorted by time; original time column kept
    times: pl.Series  # Int64 time in ``unit``
    unit: str
    time_dtype: pl.DataType
    w: int | None
    s: int | None


def to_polars(events) -> pl.DataFrame:
    """Accept a Polars DataFrame/LazyFrame, a pyarrow Table/RecordBatch or a pandas DataFrame."""
    if isinstance(events, pl.DataFrame):
        return events
    if isinstance(events, pl.LazyFrame):
        return events.collect()
    mod = type(events).__module__
    if mod.startswith("pyarrow"):
        import pyarrow as pa

        if isinstance(events, pa.RecordBatch):
            events = pa.Table.from_batches([events])
        if isinstance(events, pa.Table):
            return pl.from_arrow(events)
    if mod.startswith("pandas"):
        return pl.from_pandas(events)
    raise CepvecTypeError(
        f"events must be a polars DataFrame, a pyarrow Table or RecordBatch, or a pandas DataFrame; "
        f"found {type(events).__name__}. Convert it with polars.DataFrame(...) first")


def duration_to_units(d, unit: str, what: str) -> int:
    """Convert a query duration to an integer number of time-column units."""
    if d is None:
        return None
    value = Fraction(str(d.value))
    src = d.unit or unit
    n = value * UNIT_NS[src] / UNIT_NS[unit]
    if n.denominator != 1:
        raise CepvecPlanError(
            f"{what} {d.value}{' ' + d.unit if d.unit else ''} is not a whole number of "
            f"{_UNIT_WORD[unit]} (the time column's unit); use a duration that is, or pass "
            f"time_unit='ms' (or 'us', 'ns') if the time column counts finer units")
    if n > MAX_DURATION:
        raise CepvecPlanError(
            f"{what} {d.value}{' ' + d.unit if d.unit else ''} is {n} {_UNIT_WORD[unit]} (the time column's "
            f"unit), longer than the longest window cepvec supports (2^61 units, about 73 years in "
            f"nanoseconds); use a shorter {what}, or drop WITHIN to count over the whole input")
    return int(n)


#: Longest WITHIN / SLIDE in time-column units: the kernels add a window to a time and keep
#: 2^62 as "infinity", so both must stay well inside int64.
MAX_DURATION = 2**61


def _kind(dt) -> str | None:
    """'num', 'str' or 'time' for a column type (None: anything, e.g. an all-null column)."""
    if dt == pl.Null:
        return None
    if dt == pl.String or isinstance(dt, (pl.Categorical, pl.Enum)):
        return "str"
    if dt.is_temporal():
        return "time"
    if dt.is_numeric() or dt == pl.Boolean:
        return "num"
    return "other"


def check_predicate_types(q: Query, schema: dict) -> None:
    """Raise :class:`CepvecTypeError` for a predicate that compares or computes across types.

    Checked on the input's schema before any engine runs, so every engine (and Spark, on the
    driver) reports the same error instead of a Polars or Numba one from inside a run.
    """
    from cepvec.lang import ast as A
    from cepvec.lang.render import render_expr

    def kind(e):
        if isinstance(e, A.Num):
            return "num"
        if isinstance(e, A.Str):
            return "str"
        if isinstance(e, A.Ref):
            return _kind(schema[e.attr]) if e.attr in schema else None
        if isinstance(e, A.Unary):
            k = kind(e.operand)
            if e.op == "-" and k not in (None, "num"):
                raise _bad(e, f"negates {_what(e.operand, k)}; '-' needs a number")
            return "num" if e.op == "-" else None
        if isinstance(e, A.Bin):
            kl, kr = kind(e.left), kind(e.right)
            for side, k in ((e.left, kl), (e.right, kr)):
                if k not in (None, "num", "time"):
                    raise _bad(e, f"computes '{e.op}' on {_what(side, k)}; arithmetic needs numbers")
            return "num" if kl == kr == "num" else None
        if isinstance(e, A.Cmp):
            kl, kr = kind(e.left), kind(e.right)
            if None not in (kl, kr) and kl != kr:
                raise _bad(e, f"compares {_what(e.left, kl)} with {_what(e.right, kr)}; compare numbers with "
                              "numbers and strings with strings, or cast the column in the input")
            return None
        if isinstance(e, A.BoolOp):
            for x in e.items:
                kind(x)
            return None
        return None

    def _what(e, k):
        name = {"num": "a number", "str": "a string", "time": "a time", "other": "a value"}[k]
        if isinstance(e, A.Ref):
            return f"column '{e.attr}' ({schema[e.attr]}, {name})"
        return f"{render_expr(e)} ({name})"

    def _bad(e, why):
        a, b = e.span  # the text as written (engines see local refs without their variable)
        text = q.text[a:b] if b > a else render_expr(e)
        return CepvecTypeError(f"predicate {text} {why}")

    exprs = [x for v in q.local.values() for x in v] + [p.expr for v in q.edges.values() for p in v]
    for x in exprs:
        kind(x)


def prepare(q: Query, events, *, time_unit: str | None = None, check_types: bool = True,
            sort: bool = True) -> Prepared:
    """Validate ``events`` for ``q`` and sort them by time (stable; ``sort=False``: leave the order)."""
    df = to_polars(events)
    cols = df.columns
    for role, col in (("type", q.type_col), ("time", q.time_col)):
        if col not in cols:
            hint = f"pass {role}_col='<name>' to cepvec.compile" if True else ""
            raise CepvecPlanError(
                f"the input has no {role} column '{col}'; columns are: {', '.join(cols)}. "
                f"Rename the column or {hint}")
    missing = [a for a in q.attributes if a not in cols]
    if missing:
        a = missing[0]
        raise CepvecPlanError(
            f"attribute '{a}' used by the query is not a column of the input; columns are: "
            f"{', '.join(cols)}. Fix the query or add the column (nulls allowed)")
    # names beginning with "__" are cepvec's own columns (ids, times, codes it adds while it runs): a
    # column the query reads must not have one; the others are not carried along
    read = dict.fromkeys([q.type_col, q.time_col, *q.attributes, *q.partition_by, *q.group_by])
    reserved = [c for c in read if c.startswith("__")]
    if reserved:
        c = reserved[0]
        raise CepvecPlanError(
            f"column '{c}' is read by the query, but names beginning with '__' are reserved for the columns "
            f"cepvec adds while it runs; rename it, e.g. events.rename({{'{c}': '{c.lstrip('_') or 'x'}'}}), "
            "and use the new name in the query")
    if any(c.startswith("__") for c in cols):
        df = df.drop([c for c in cols if c.startswith("__")])
        cols = df.columns
    wide = [a for a in q.attributes if str(df.schema[a]) in ("Int128", "UInt128")]
    if wide:
        raise CepvecTypeError(
            f"column '{wide[0]}' is {df.schema[wide[0]]}; cepvec reads integers of up to 64 bits. Cast it, "
            f"e.g. pl.col('{wide[0]}').cast(pl.Int64) (values within +-2^63) or .cast(pl.String) for keys")

    tdt = df.schema[q.type_col]
    if not (tdt == pl.String or isinstance(tdt, (pl.Categorical, pl.Enum))):
        hint = f"Cast it with pl.col('{q.type_col}').cast(pl.String)"
        if tdt.is_integer():  # type codes: an Enum of the names runs as fast as the codes would
            names = list(q.event_types)
            codes = ", ".join(f"<code of {n}>: {n!r}" for n in names)
            hint = (f"If these are type codes, map them to the query's type names as an Enum (as fast as "
                    f"the codes): pl.col('{q.type_col}').replace_strict({{{codes}}}, "
                    f"return_dtype=pl.Enum({names!r}))")
        raise CepvecTypeError(
            f"type column '{q.type_col}' must hold event type names (String, Categorical or Enum); "
            f"found {tdt}. {hint}")
    if df[q.type_col].null_count():
        first = df.with_row_index("__r").filter(pl.col(q.type_col).is_null())["__r"][0]
        raise CepvecDataError(
            f"type column '{q.type_col}' has {df[q.type_col].null_count()} null value(s) (first at row "
            f"{first}); every event needs a type. Drop or fill those rows")

    dt = df.schema[q.time_col]
    if dt.is_integer():
        unit = time_unit or "s"
        if unit not in TIME_UNITS:
            raise CepvecPlanError(f"time_unit must be one of {', '.join(TIME_UNITS)}; found {unit!r}")
        times = df[q.time_col].cast(pl.Int64, strict=False)
        if times.null_count() > df[q.time_col].null_count():  # UInt64 above 2^63 - 1
            first = int((times.is_null() & df[q.time_col].is_not_null()).arg_true()[0])
            raise CepvecDataError(
                f"time column '{q.time_col}' ({dt}) has a value above 2^63 - 1 at row {first} "
                f"({df[q.time_col][first]}); cepvec computes times as Int64. Subtract an offset "
                "(e.g. the minimum time) or use a coarser unit")
    elif isinstance(dt, pl.Datetime):
        unit = dt.time_unit
        if time_unit is not None and time_unit != unit:
            raise CepvecPlanError(
                f"time_unit={time_unit!r} was given but time column '{q.time_col}' is a timestamp in "
                f"{unit!r}; a timestamp carries its own unit, drop time_unit")
        times = df[q.time_col].dt.epoch(unit)
    elif dt == pl.Date:
        unit = "s"
        times = df[q.time_col].cast(pl.Datetime("ms")).dt.epoch("s")
    else:
        raise CepvecTypeError(
            f"time column '{q.time_col}' must be an integer or a timestamp; found {dt}. Cast it, e.g. "
            f"pl.col('{q.time_col}').cast(pl.Int64), or convert with .str.to_datetime()")
    nulls = times.null_count()
    if nulls:
        first = int(times.is_null().arg_true()[0])
        raise CepvecDataError(
            f"time column '{q.time_col}' has {nulls} null value(s) (first at row {first}); every event "
            "needs an occurrence time. Drop or fill those rows")
    times = times.rename("__time")
    if sort and len(times) > 1 and not is_sorted(times):
        # Documented: local runs sort by time (stable). Equal times never combine in one match,
        # so the order among ties cannot change a result.
        order = time_order(times.to_numpy())
        df = df[order]
        times = times[order]
    if sort and len(times) > 1:
        times = times.set_sorted()  # its minimum and maximum below are its ends

    if check_types:
        col = df[q.type_col]
        # the types of the first rows, then a scan only for a query type not among them (the
        # unique values of a whole string column cost a hash per row; the first 64 rows as a
        # Python list: 0.01 ms, where Polars' unique of 4 096 took 0.1-0.5 ms of a 10^6-event run)
        present = set(col.head(64).to_list())
        for rows in (1 << 12, 1 << 16):
            if present.issuperset(q.event_types) or len(col) <= 64:
                break
            present = set(col.head(rows).unique().drop_nulls().to_list())
            if rows >= len(col):
                break
        domain = set(tdt.categories.to_list()) if isinstance(tdt, pl.Enum) else None
        for t in q.event_types:
            if domain is not None and t not in domain:
                raise CepvecPlanError(
                    f"event type '{t}' in the query is not a category of the Enum type column "
                    f"'{q.type_col}' ({', '.join(sorted(domain))}); check the spelling")
            if domain is None and t not in present and len(df) and not (col == t).any():
                seen = ", ".join(sorted(map(str, col.unique().drop_nulls().to_list()))[:12])
                warnings.warn(
                    f"event type '{t}' named in the query does not occur in column '{q.type_col}' "
                    f"(seen: {seen}); check the spelling", CepvecWarning, stacklevel=3)

    w = duration_to_units(q.window.within, unit, "WITHIN")
    s = duration_to_units(q.window.slide, unit, "SLIDE")
    if s is not None and len(times) and times.min() < 0:
        first = int((times < 0).arg_true()[0])
        raise CepvecDataError(
            f"time column '{q.time_col}' has a negative time at row {first} ({df[q.time_col][first]}); SLIDE "
            f"windows start at time 0 (window k covers [k*SLIDE, k*SLIDE + WITHIN), k >= 0), so such events "
            "could never be counted. Shift the times (e.g. subtract the minimum) or filter those rows")
    if len(times):
        _check_time_range(q, df, times, unit, (w or 0) + (s or 0))
        if s is not None and dt.is_integer() and dt not in (pl.Int64, pl.UInt64):
            end, top = int(times.max()) // s * s + w, pl.select(dt.max()).item()  # the last window's end
            if end > top:
                raise CepvecDataError(
                    f"the last SLIDE window ends at {end}, beyond the range of time column '{q.time_col}' "
                    f"({dt}, up to {top}), the dtype of window_start / window_end; cast the time column "
                    f"to Int64: pl.col('{q.time_col}').cast(pl.Int64)")
    return Prepared(df, times, unit, dt, w, s)


#: Times and the window ends computed from them stay within +-2^61 (the kernels keep sentinels
#: and window arithmetic beyond it): in nanoseconds, 1970 +- 73 years (until 2043).
TIME_LIMIT = 1 << 61


def is_sorted(times: pl.Series) -> bool:
    """Whether the int64 ``times`` (no nulls) never descend: Polars' flag, else Polars below
    ``NUMPY_BELOW`` times, else :func:`kernels/keys.py::first_descent` on the halves in threads
    (10^6 times, the caches as a run leaves them, alternating with Polars' ``is_sorted``:
    ``prepare`` 1.59 -> 1.26 ms on two cores, 1.75 -> 1.64 ms on one)."""
    if times.flags["SORTED_ASC"]:
        return True
    from cepvec.kernels import _jit  # numba: imported for long columns only
    if len(times) < _jit.NUMPY_BELOW:
        return times.is_sorted()
    from cepvec.kernels.keys import first_descent
    from cepvec.runtime import threads
    tv = times.to_numpy()
    return all(d < 0 for d in threads.map_threads(lambda r: first_descent(tv[max(r[0] - 1, 0):r[1]]),
                                                  threads.halves(len(tv))))


def time_order(tv):
    """The stable order of the times ``tv`` (int64): NumPy's timsort below ``NUMPY_BELOW`` times or
    when they are nearly sorted (fewer than one descent per 1 000 times: a few runs to merge), else
    the radix sort of ``kernels/keys.py::stable_order`` (O(n) a pass; 10^6 times in random order:
    10.5 ms against 94 ms for the timsort)."""
    from cepvec.kernels import _jit  # numba: imported when a sort is needed
    from cepvec.kernels.keys import stable_order

    if len(tv) < _jit.NUMPY_BELOW or 1000 * np.count_nonzero(tv[1:] < tv[:-1]) < len(tv):
        return np.argsort(tv, kind="stable")
    return stable_order(tv)


def _check_time_range(q: Query, df: pl.DataFrame, times: pl.Series, unit: str, span: int) -> None:
    """Raise when a time (plus twice WITHIN + SLIDE) leaves +-TIME_LIMIT."""
    reach = TIME_LIMIT - 2 * span
    lo, hi = times.min(), times.max()
    if -reach < lo and hi < reach:
        return
    bad = times.abs() >= reach
    first = int(bad.arg_true()[0])
    raise CepvecDataError(
        f"time column '{q.time_col}' has a time too far from 1970 at row {first} ({df[q.time_col][first]}, "
        f"{times[first]} in unit {unit!r}); cepvec keeps times and window ends within +-2^61 units (with "
        f"nanoseconds, 1970 +- 73 years). Subtract an offset (e.g. the minimum time) or use a coarser unit "
        "(e.g. pl.col(...).dt.cast_time_unit('us'))")


def output_schema(q: Query, schema: dict, time_dtype, numeric: str = "int64") -> dict:
    """Polars schema of the result of ``q`` on input with ``schema``."""
    out: dict = {}
    for g, lab in zip(q.group_by, q.group_labels):
        out[lab] = schema[g]
    if q.window.kind == "slide":
        out["window_start"] = time_dtype
        out["window_end"] = time_dtype
    elif q.window.kind == "emit":
        out[q.time_col] = time_dtype
    for a in q.aggs:
        src = schema.get(a.attr) if a.attr else None
        if a.func == "COUNT":
            dt = pl.Float64 if numeric == "float64" else pl.Int64
        elif a.func == "AVG":
            dt = pl.Float64
        elif a.func == "SUM":
            if src is not None and src.is_integer() and numeric != "float64":
                dt = pl.Int64
            elif src is not None and (src.is_numeric()):
                dt = pl.Float64
            else:
                raise CepvecTypeError(f"{a.label} needs a numeric attribute; '{a.attr}' is {src}")
        else:
            dt = src
        if a.func in ("AVG",) and src is not None and not src.is_numeric():
            raise CepvecTypeError(f"{a.label} needs a numeric attribute; '{a.attr}' is {src}")
        out[a.label] = dt
    return out


def time_values_to_output(values: list[int], unit: str, time_dtype):
    """Integer times (in ``unit``) to a Series of the input's time dtype."""
    s = pl.Series(values, dtype=pl.Int64)
    if isinstance(time_dtype, pl.Datetime):
        return s.cast(pl.Datetime(unit)).cast(time_dtype)
    if time_dtype == pl.Date:
        return (s * 1000).cast(pl.Datetime("ms")).cast(pl.Date)
    return s.cast(time_dtype)
