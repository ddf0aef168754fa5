"""Engine registry: which engine runs a query, and the reference engine's driver."""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
import polars as pl

from . import reference
from .errors import UnsupportedByEngine
from .frontend import Prepared, output_schema, time_values_to_output
from . import progress
from .query import AggSpec, Query

ENGINES = ("auto", "aseq", "greta", "reference")
# measured on the development machine: A+ over 22 events (2**22 - 1 matches) in 26 s, over 25 events in 352 s
REFERENCE_SECONDS_PER_MATCH = 1e-5


def engine_support(q: Query, engine: str, schema: dict | None = None) -> str | None:
    """None when ``engine`` can run ``q`` (on input with column types ``schema``, when
    known), else the reason it cannot."""
    from .plan_linear import unsupported_reason

    if engine == "reference":
        return None
    if q.qualified_equivalences:
        from .qualified import unqualified_query, unsupported_reason as qualified_reason

        why = qualified_reason(q)
        if why is not None:
            return why
        q = unqualified_query(q)
    if engine == "aseq" and q.is_kleene:
        return "the pattern has Kleene plus; A-Seq handles fixed-length SEQ only (use engine='greta')"
    if engine in ("aseq", "greta"):  # aseq: the same paths, fixed-length patterns only
        if greta_path(q, schema) is not None:
            return None
        from .plan_scan import unsupported_reason as scan_reason

        return scan_reason(q)
    return unsupported_reason(q, schema)


def greta_path(q: Query, schema: dict | None = None) -> str | None:
    """Which path of engine "greta" runs ``q``: "linear", "trend", "scan", or None (none can).

    * "linear": no edge predicates: per-state totals as linear maps (``engine_linear``);
    * "trend": edge predicates the Fenwick trend path indexes (``engine_trend``), O(log n) per event;
    * "scan": everything else the predecessor scan takes (``engine_scan``), O(n) per event.

    A query with qualified equivalences is judged by its broadcast form (``cepvec.qualified``).
    """
    from .plan_linear import unsupported_reason as linear_reason
    from .plan_scan import unsupported_reason as scan_reason
    from .plan_trend import unsupported_reason as trend_reason

    if q.qualified_equivalences:
        from .qualified import unqualified_query, unsupported_reason as qualified_reason

        if qualified_reason(q) is not None:
            return None
        q = unqualified_query(q)
    if not q.edges and linear_reason(q, schema) is None:
        return "linear"
    if q.edges and trend_reason(q) is None:
        return "trend"
    if scan_reason(q) is None:
        return "scan"
    return None


def uses_trend_path(q: Query) -> bool:
    """Engine "greta" runs ``q`` on the per-event Fenwick trend path (edge predicates it indexes)."""
    return greta_path(q) == "trend"


def uses_scan_path(q: Query) -> bool:
    """Engine "greta" runs ``q`` on the per-event predecessor-scan path."""
    return greta_path(q) == "scan"


def _trend_or_scan(q, schema, **kwargs):
    """A TrendRun, or a ScanRun when the data do not fit the trend path (string keys)."""
    from .engine_scan import ScanRun
    from .engine_trend import TrendRun

    try:
        return TrendRun(q, schema, **kwargs)
    except UnsupportedByEngine:
        return ScanRun(q, schema, **kwargs)


def run_class(q: Query, engine: str, schema: dict | None = None):
    """The streaming run class (``push``/``finish``/``clone_partitions``) of a resolved
    non-reference engine, for input with column types ``schema`` when known."""
    cls = None
    if engine in ("aseq", "greta"):
        path = greta_path(q, schema)
        if path == "trend":
            cls = _trend_or_scan
        elif path == "scan":
            from .engine_scan import ScanRun as cls
    if cls is None:
        from .engine_linear import LinearRun as cls
    if q.qualified_equivalences:
        from .qualified import QualifiedRun

        return functools.partial(QualifiedRun, cls)
    return cls


def run_engine(q: Query, prep: Prepared, engine: str, *, numeric: str = "int64",
               batches: list[int] | None = None) -> pl.DataFrame:
    """Evaluate ``q`` with a resolved non-reference engine (``batches``: cut points, for tests)."""
    run = run_class(q, engine, prep.df.schema)(q, prep.df.schema, w=prep.w, s=prep.s, numeric=numeric)
    return feed(run, prep, batches)


def feed(run, prep: Prepared, batches: list[int] | None = None) -> pl.DataFrame:
    """Push ``prep`` into a run object in batches cut at ``batches``, then finish it."""
    times = prep.times.to_numpy()
    cuts = [0] + sorted(set(batches or [])) + [len(prep.df)]
    for a, b in zip(cuts, cuts[1:]):
        run.push(prep.df[a:b], times[a:b])
    return run.finish(prep)


def choose_engine(q: Query, schema: dict | None = None) -> tuple[str, str]:
    """The engine ``engine="auto"`` resolves to for ``q``, and why."""
    from .plan_linear import unsupported_reason as linear_reason

    if q.qualified_equivalences and engine_support(q, "greta", schema) is None:
        from .qualified import unqualified_query

        name, reason = choose_engine(unqualified_query(q), schema)
        return (name, reason + "; qualified equivalence " + ", ".join(e.text for e in q.qualified_equivalences)
                + ": events of the other variables are copied to every partition of their key (cepvec/qualified.py)")
    name = "greta" if q.is_kleene else "aseq"
    path = greta_path(q, schema)
    if path == "linear" and name == "aseq":
        return ("aseq", "fixed-length sequence: prefix counters as linear maps over a two-stack "
                        "sliding-window aggregator (Numba), cost per event independent of the window")
    if path == "linear":
        return ("greta", "Kleene pattern: per-state trend aggregates as linear maps over a two-stack "
                         "sliding-window aggregator (Numba), cost per event independent of the window")
    if path == "trend":
        return (name, "edge predicates: GRETA per-event trend aggregates, predecessors found per transition "
                      "by a Fenwick tree over ranked keys or a running sum (Numba), O(log n) per event and "
                      "open window")
    if path == "scan":
        from .plan_trend import unsupported_reason as trend_reason

        why = trend_reason(q) if q.edges else linear_reason(q, schema)
        return (name, "GRETA predecessor scan: per-event trend aggregates, each event scans its "
                      "predecessors and evaluates the edge predicates (Numba), O(n) per event, O(n^2) per "
                      f"partition; the faster paths do not support {why}")
    why = engine_support(q, "greta", schema)
    return ("reference", f"the Numba engines do not support {why}; the match-constructing reference "
                         "engine answers every query but is exponential in the number of matches")


def resolve_engine(q: Query, engine: str, schema: dict | None = None) -> str:
    """The engine that runs ``q`` (``engine``, or the choice of "auto"); raises when it cannot."""
    if engine not in ENGINES:
        raise UnsupportedByEngine(
            f"unknown engine {engine!r}; choose one of: {', '.join(ENGINES)}")
    if engine == "auto":
        return choose_engine(q, schema)[0]
    why = engine_support(q, engine, schema)
    if why is not None:
        raise UnsupportedByEngine(
            f"engine={engine!r} cannot run query {' '.join(q.text.split())!r}: {why}. "
            "Use engine='auto' to pick an engine that can")
    return engine


def run_reference(q: Query, prep: Prepared, *, numeric: str = "int64") -> pl.DataFrame:
    """Evaluate ``q`` with the reference engine; returns the result DataFrame."""
    df = prep.df
    rows = df.to_dicts()
    times = prep.times.to_list()
    with reference_progress(q, prep, "cepvec.run(engine='reference')") as counter:
        res = reference.evaluate_query(q, rows, times, w=prep.w, s=prep.s, progress=counter)
    schema = df.schema
    is_int = {a: schema[a].is_integer() for a in q.attributes if a in schema}
    cells = reference.aggregate(q, res, numeric=numeric, attr_is_int=is_int)
    return build_output(q, prep, cells, numeric)


def reference_progress(q: Query, prep: Prepared, what: str) -> progress.Progress:
    """The progress counter of a reference run of ``q`` over ``prep``; warns first when it will explode.

    When the input is large enough for the match count to explode (:func:`_match_bound`),
    an online engine counts the matches first, in one pass; past
    :data:`cepvec.progress.EXPLODE_MATCHES` (read at each call) a :class:`CepvecWarning` says how
    many there will be, before any is built. When no online engine can count
    them, the warning comes as soon as that many have been built.
    """
    expected = None
    if _match_bound(q, prep) > progress.EXPLODE_MATCHES:
        expected = _online_match_count(q, prep)
    advice = ("The reference engine builds every match (exponential); engine='auto' computes the same "
              "result online in one pass" if expected is not None else
              "The reference engine builds every match (exponential); no online engine runs this query, "
              "so shorten the input, the WITHIN window or the pattern")
    if expected is not None and expected > progress.EXPLODE_MATCHES:
        minutes = expected * REFERENCE_SECONDS_PER_MATCH / 60
        rate = 1 / REFERENCE_SECONDS_PER_MATCH
        progress.warn_user(f"{what} will build {expected:,} matches on this input (about {minutes:,.1f} min "
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
    ev = prep.df.filter(pl.col(q.type_col).cast(pl.String).is_in(list(per_type)))
    sizes = (ev.group_by(list(q.partition_by)).len()["len"].to_list() if q.partition_by else [len(ev)])
    total = 0.0
    for n in sizes:
        placements = math.log2(max(1, -(-prep.w // prep.s))) if q.window.kind == "slide" else (
            math.log2(max(1, n)) if q.window.kind == "emit" else 0.0)
        total += 2.0 ** min(1000.0, n * log_base + placements)
    return total


def _online_match_count(q: Query, prep: Prepared) -> int | None:
    """The (match, output row) pairs of ``q`` counted online (sum of ``COUNT(*)``), or None when no
    online engine runs ``q`` on this input."""
    count = dataclasses.replace(q, aggs=(AggSpec("COUNT", (), None, "COUNT(*)"),))
    name = choose_engine(count, prep.df.schema)[0]
    if name == "reference":
        return None
    try:
        out = run_engine(count, prep, name, numeric="float64")
    except UnsupportedByEngine:
        return None
    return int(out["COUNT(*)"].sum() or 0)


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


def build_output_frame(q: Query, prep: Prepared, plan, runs, numeric: str, answers=None) -> pl.DataFrame:
    """Turn linear-kernel cells (per partition) into the result: combine per group, finish AVG/SUM/MIN/MAX.

    ``runs``: the streams of one query; ``answers``: per stream the components
    whose columns come from it (None: all from the first stream, which always
    gives the count ``__v0`` and the rows).
    """
    if len(runs) == 1 and getattr(runs[0], "groups_are_partitions", False) and hasattr(runs[0], "outputs"):
        return _output_frame_by_partition(q, prep, plan, runs[0], numeric)
    cells = runs[0].result_cells()
    for run, comps in zip(runs[1:], (answers or [])[1:]):
        other = run.result_cells()
        cols = [f"__v{1 + j}" for j in comps]
        cells = cells.drop(cols).join(other.select("__pid", "__key", *cols), on=["__pid", "__key"], how="left")
    if q.group_by:
        cells = cells.join(runs[0].group_frame(), on="__pid", how="left")
    by = list(q.group_by) + ["__key"]
    vcols = [c for c in cells.columns if c.startswith("__v")]
    order_cols = {f"__v{1 + j}" for j, c in enumerate(plan.components) if c.kind in ("min", "max")}
    int_cols = [c for c in vcols if cells.schema[c].is_integer() and c not in order_cols]
    # order keys (MIN / MAX) combine by max (a bigger key is the better extreme; 0 is no value)
    aggs = [pl.col(c).max() if c in order_cols else pl.col(c).sum() for c in vcols]
    g = cells.group_by(by).agg(aggs) if len(cells) else cells  # sorted below
    if _sums_overflow(cells, by, int_cols) if len(cells) else False:
        from .errors import CepvecOverflowError

        raise CepvecOverflowError(
            f"an exact int64 count or sum overflows when adding up the partitions of a group for query "
            f"{' '.join(q.text.split())!r}; pass numeric='float64' for approximate results")
    g = g.sort(by, nulls_last=True)
    keyv = g["__key"].to_numpy()
    group_cols = {gcol: g[gcol] for gcol in q.group_by}
    vals = {c: g[c] for c in vcols}
    return _assemble_output(q, prep, plan, numeric, group_cols, keyv, vals)


def _sums_overflow(cells: pl.DataFrame, by: list, int_cols: list) -> bool:
    """True when an int64 column's sum over the partitions of a group leaves the int64 range.

    Exact (sums in Int128); with a Polars without Int128 sums, a float estimate that
    also flags sums within 1% of the limit.
    """
    if not int_cols:
        return False
    lim = np.iinfo(np.int64)
    bound = max(max(abs(int(cells[c].min())), abs(int(cells[c].max()))) for c in int_cols)
    if bound * len(cells) <= lim.max:  # no group's sum can leave int64
        return False
    try:
        s = cells.group_by(by).agg([pl.col(c).cast(pl.Int128).sum() for c in int_cols])
        return any(s[c].max() > lim.max or s[c].min() < lim.min for c in int_cols)
    except Exception:  # noqa: BLE001 (no Int128 in this Polars)
        s = cells.group_by(by).agg([pl.col(c).cast(pl.Float64).sum() for c in int_cols])
        return any(s[c].abs().max() >= 9.2e18 for c in int_cols)


def _output_frame_by_partition(q: Query, prep: Prepared, plan, run, numeric: str) -> pl.DataFrame:
    """The result when every partition is its own group: no sums across partitions.

    The cells are unique per (partition, key) and each partition's keys increase
    in output order, so a stable counting sort by the rank of the partition's
    group values gives the (group, key) order (checked; else a full sort); Polars
    sorts only the partitions.
    """
    from .kernels.linear import keys_increase, rank_counts, rank_scatter

    chunks = run.outputs
    n = sum(len(c[0]) for c in chunks)
    ncol = len(plan.out_rows)
    gf = run.group_frame()
    n_pid = max(len(gf), 1)
    if q.group_by and len(gf):
        ranked = gf.sort(list(q.group_by), nulls_last=True, maintain_order=True)
        rank_of_pid = np.empty(len(gf), np.int64)
        rank_of_pid[ranked["__pid"].to_numpy()] = np.arange(len(gf), dtype=np.int64)
    else:
        rank_of_pid = np.zeros(n_pid, np.int64)
    counts = np.zeros(n_pid, np.int64)
    for c in chunks:
        rank_counts(rank_of_pid, c[0], counts)
    pos = np.zeros(n_pid, np.int64)
    np.cumsum(counts[:-1], out=pos[1:])
    pid = np.empty(n, np.int64)
    key = np.empty(n, np.int64)
    val = np.empty((n, ncol), run.dtype)
    for c in chunks:
        rank_scatter(rank_of_pid, c[0], c[1], c[2], pos, pid, key, val)
    if not keys_increase(pid, key):
        order = np.lexsort((key, rank_of_pid[pid]))
        pid, key, val = pid[order], key[order], val[order]
    group_cols = {}
    if q.group_by:
        idx = pid if _is_arange(gf["__pid"]) else np.searchsorted(gf["__pid"].to_numpy(), pid)
        sel = gf.select(list(q.group_by)).gather(pl.Series(idx))
        group_cols = {gcol: sel[gcol] for gcol in q.group_by}
    vals = {f"__v{j}": pl.Series(f"__v{j}", val[:, j]) for j in range(ncol)}
    return _assemble_output(q, prep, plan, numeric, group_cols, key, vals)


def _is_arange(s: pl.Series) -> bool:
    return len(s) == 0 or (s[0] == 0 and s.is_sorted() and s[-1] == len(s) - 1)


def _assemble_output(q: Query, prep: Prepared, plan, numeric: str, group_cols: dict, keyv, vals: dict,
                     minmax_ok: bool = False):
    """The result frame from summed cells; MIN/MAX columns (``minmax_ok``) are left null for the caller."""
    out_schema = output_schema(q, prep.df.schema, prep.time_dtype, numeric)
    if not len(keyv):
        return pl.DataFrame(schema=out_schema)
    data: dict[str, pl.Series] = {}
    for gcol, lab in zip(q.group_by, q.group_labels):
        data[lab] = group_cols[gcol].rename(lab).cast(out_schema[lab])
    keyv = pl.Series("__key", np.asarray(keyv, dtype=np.int64))
    if q.window.kind == "slide":
        start = keyv * prep.s
        data["window_start"] = time_values_to_output(start, prep.unit, prep.time_dtype).rename("window_start")
        data["window_end"] = time_values_to_output(start + prep.w, prep.unit, prep.time_dtype).rename(
            "window_end")
    elif q.window.kind == "emit":
        data[q.time_col] = time_values_to_output(keyv, prep.unit, prep.time_dtype).rename(q.time_col)
    comp_of_agg = plan.comp_of_agg
    for a, comps in zip(q.aggs, comp_of_agg):
        if a.func in ("MIN", "MAX") and minmax_ok:
            col = pl.Series(a.label, [None] * len(keyv), dtype=out_schema[a.label])
        elif a.star:
            col = vals["__v0"]
        elif a.func == "COUNT":
            col = vals[f"__v{1 + comps[0]}"]
        elif a.func == "SUM":
            s, nn = vals[f"__v{1 + comps[0]}"], vals[f"__v{1 + comps[1]}"]
            col = pl.select(pl.when(nn > 0).then(s).otherwise(None)).to_series()
        elif a.func == "AVG":
            s, nn = vals[f"__v{1 + comps[0]}"], vals[f"__v{1 + comps[1]}"]
            col = pl.select(pl.when(nn > 0).then(s.cast(pl.Float64) / nn).otherwise(None)).to_series()
        else:  # MIN, MAX: order keys
            from .engine_linear import order_values

            col = order_values(vals[f"__v{1 + comps[0]}"], a.func.lower(), out_schema[a.label])
        data[a.label] = col.rename(a.label).cast(out_schema[a.label])
    return pl.DataFrame([data[n] for n in out_schema])
