"""Public API: :func:`compile`, :func:`run`, :func:`matches`."""

from __future__ import annotations

import dataclasses

import polars as pl

from cepvec.paths.reference.run import reference_progress
from cepvec.registry import NUMERIC, choose, count_matches_online, run_engine
from cepvec.errors import CepvecError, CepvecPlanError, CepvecTypeError, UnsupportedByEngine
from cepvec.paths.match import MATCH_ENGINES, MATCH_FORMATS, collect_matches, match_batches, match_engine
from cepvec.paths.match.run import wide_frame
from cepvec.runtime.overlap import check_overlap
from cepvec.runtime.prepare import check_predicate_types, output_schema, prepare
from cepvec.plan.compile import compile_query
from cepvec.plan.ir import Query, Window


def compile(text: str, *, type_col: str = "type", time_col: str = "time") -> Query:  # noqa: A001
    """Parse and compile a query.

    Parameters
    ----------
    text : str
        Query text in the GRETA, SASE or A-Seq form (``docs/language.md``).
    type_col, time_col : str
        Names of the event-type and occurrence-time columns of the input.

    Returns
    -------
    Query
        Immutable compiled query; ``Query.explain()`` shows the plan.

    Raises
    ------
    CepvecSyntaxError
        The text does not follow the grammar (with line, column and caret).
    CepvecQueryError
        The query is well formed but meaningless or unsupported
        (``NotSupportedError`` for constructs outside the semantics).

    Examples
    --------
    >>> q = compile("RETURN COUNT(*) PATTERN SEQ(A, B+) WITHIN 10 s")
    >>> q.output_columns
    ('COUNT(*)',)
    """
    return compile_query(text, type_col=type_col, time_col=time_col)


def _as_query(query, type_col: str | None = None, time_col: str | None = None) -> Query:
    if isinstance(query, Query):
        for name, given, have in (("type_col", type_col, query.type_col), ("time_col", time_col, query.time_col)):
            if given is not None and given != have:
                raise CepvecPlanError(
                    f"{name}={given!r} was given, but the compiled query reads column {have!r}; pass "
                    f"{name} to cepvec.compile, or pass the query text instead of a Query")
        return query
    if isinstance(query, str):
        return compile(query, type_col=type_col or "type", time_col=time_col or "time")
    raise CepvecTypeError(
        f"query must be query text (str) or a Query from cepvec.compile; found {type(query).__name__}")


def _is_spark(events) -> bool:
    module = type(events).__module__
    if not module.startswith("pyspark."):
        return False
    if type(events).__name__ != "DataFrame":
        raise CepvecTypeError(
            f"events is a Spark {type(events).__name__}; cepvec runs on a Spark DataFrame. Convert it, e.g. "
            "spark.createDataFrame(rdd) or rdd.toDF()")
    return True


def run(query, events, *, engine: str = "auto", time_unit: str | None = None,
        numeric: str = "int64", type_col: str | None = None, time_col: str | None = None) -> pl.DataFrame:
    """Evaluate an aggregation query over events.

    Parameters
    ----------
    query : str or Query
        Query text or a compiled :class:`Query`.
    events : polars.DataFrame, pyarrow.Table, pyarrow.RecordBatch or pandas.DataFrame
        One row per event with the type and time columns and the attributes
        the query reads. Unsorted input is sorted by time (stable).
    engine : {"auto", "aseq", "greta", "match", "reference"}
        ``"auto"`` picks the fastest engine that supports the query (see
        ``Query.explain()``); ``"aseq"`` forces the fixed-length sequence
        engine (it refuses Kleene patterns), ``"greta"`` the trend engine
        (Kleene and fixed-length; both share the kernels); ``"match"``
        aggregates over the match engine's matches (needed for predicates
        between never-adjacent variables, docs/semantics.md 4.2);
        ``"reference"`` builds every match (small inputs only).
    time_unit : {"s", "ms", "us", "ns"}, optional
        Unit of an integer time column (default seconds). Timestamp columns
        carry their own unit.
    numeric : {"int64", "float64"}
        ``"int64"`` gives exact counts and integer sums and raises
        :class:`CepvecOverflowError` instead of wrapping; ``"float64"`` gives
        approximate floating-point counts and sums.
    type_col, time_col : str, optional
        Names of the event-type and time columns when ``query`` is text
        (default ``"type"`` and ``"time"``); a compiled :class:`Query`
        carries its own (from :func:`compile`).

    Returns
    -------
    polars.DataFrame
        Group attributes, then ``window_start``/``window_end`` (SLIDE) or the
        time column (EMIT CHANGES), then one column per aggregate; ordered by
        group, then time. Only (group, window) pairs with a match appear.

    Raises
    ------
    CepvecPlanError, CepvecTypeError, CepvecDataError
        Bad input: missing column, wrong dtype, null times, ...
    UnsupportedByEngine
        The engine asked for cannot run this query.

    Examples
    --------
    >>> import polars as pl
    >>> ev = pl.DataFrame({"type": ["A", "B", "A", "A", "B"], "time": [1, 2, 3, 4, 7]})
    >>> run("RETURN COUNT(*) PATTERN (SEQ(A+, B))+", ev)["COUNT(*)"].to_list()
    [11]
    """
    q = _as_query(query, type_col, time_col)
    if numeric not in NUMERIC:
        raise CepvecPlanError(f"numeric must be 'int64' or 'float64'; found {numeric!r}")
    if _is_spark(events):
        from cepvec.spark_adapter import run_spark  # noqa: PLC0415  (optional dependency)

        return run_spark(q, events, engine=engine, time_unit=time_unit, numeric=numeric)
    choose(q, engine)  # an engine that cannot run the query fails before the data are read
    prep = prepare(q, events, time_unit=time_unit)
    output_schema(q, prep.df.schema, prep.time_dtype, numeric)  # type errors before any work
    check_predicate_types(q, prep.df.schema)
    if engine == "auto":
        q, prep = _without_covering_window(q, prep)
    return run_engine(q, prep, choose(q, engine, prep.df.schema), numeric=numeric)


#: Whether :func:`run` drops a window that covers its whole input (:func:`_without_covering_window`).
#: ``cepvec.warmup.compile_kernels`` turns it off for one of its runs, so that a small sample compiles
#: the windowed kernels a large input needs.
DROP_COVERING_WINDOW = True


def _without_covering_window(q: Query, prep):
    """``WITHIN w`` alone (or with EMIT CHANGES) over input whose times span less than ``w`` holds
    every match, negative ones too: the query without it has the same rows, and it runs on the
    faster paths (the Kleene paths keep per-start state under WITHIN alone: a window over ``k``
    events costs ``k`` per event and predecessor, against ``log n`` without one)."""
    if (not DROP_COVERING_WINDOW or q.window.kind not in ("within", "emit") or prep.w is None
            or not len(prep.times)):
        return q, prep
    if int(prep.times.max()) - int(prep.times.min()) >= prep.w:
        return q, prep
    window = Window("none") if q.window.kind == "within" else Window("emit")
    return dataclasses.replace(q, window=window), dataclasses.replace(prep, w=None)


def matches(query, events, *, limit: int | None = 1000, time_unit: str | None = None, engine: str = "auto",
            format: str = "long", overlap: str = "all") -> pl.DataFrame:  # noqa: A002
    """The matches (composite events) of a query.

    A match is listed when it counts towards at least one output row (its
    group and window, negated start/end included); a match that falls into
    several SLIDE windows is listed once per window. ``engine="auto"`` builds
    the matches with the match engine (Numba, every event selection strategy,
    no window or WITHIN; ``docs/matching.md``), in time linear in the input
    and the output; other queries (SLIDE, EMIT CHANGES, qualified
    equivalences, nested negation) go to the reference engine, which is
    exponential in the worst case.

    Parameters
    ----------
    query : str or Query
    events : polars.DataFrame, pyarrow.Table, pandas.DataFrame or pyspark.sql.DataFrame
        A Spark DataFrame gives a Spark DataFrame of matches (``docs/matching.md``).
    limit : int or None
        Stop after this many matches (None: all).
    time_unit : {"s", "ms", "us", "ns"}, optional
        Unit of an integer time column, as in :func:`run`.
    engine : {"auto", "match", "reference"}
        ``"match"`` the match engine (raises :class:`UnsupportedByEngine` when
        it cannot run the query), ``"reference"`` the reference engine (the
        oracle), ``"auto"`` the first that can.
    format : {"long", "wide"}
        ``"long"``: one row per event of a match; ``"wide"``: one row per
        match, with ``variable`` and every input column as lists.
    overlap : {"all", "none"}
        SASE+'s output formats: ``"all"`` every match; ``"none"`` only
        non-overlapping matches, per partition (the whole input under strict
        contiguity): repeatedly the match that ends first among those that
        start after the previous one kept ended (ties: the one that starts
        last, then the one whose events come first in the input;
        ``docs/semantics.md`` 8.1). Not with SLIDE or EMIT CHANGES windows.

    Returns
    -------
    polars.DataFrame
        Long format, one row per event of a match: ``match`` (0-based id),
        the group attributes, ``window_start``/``window_end`` or the EMIT time
        as in :func:`run`, ``position`` (0-based within the match),
        ``variable``, then every input column of the event. Matches come by
        group; the order inside a group is the engine's.

    Examples
    --------
    >>> import polars as pl
    >>> ev = pl.DataFrame({"type": ["A", "B", "B"], "time": [1, 2, 3]})
    >>> matches("RETURN COUNT(*) PATTERN SEQ(A, B)", ev)["match"].to_list()
    [0, 0, 1, 1]
    """
    q = _check_matches_args(query, limit, engine, format, overlap)
    if _is_spark(events):
        from cepvec.spark_adapter.matches import matches_spark  # noqa: PLC0415  (optional dependency)

        if overlap != "all":
            raise CepvecPlanError("overlap='none' is not available on Spark yet; collect the events and call "
                                  "cepvec.matches on the local frame")
        return matches_spark(q, events, limit=limit, time_unit=time_unit, engine=engine, format=format)
    prep = prepare(q, events, time_unit=time_unit)
    if match_engine(q, engine, prep.df.schema) == "match":
        return collect_matches(q, prep, limit=limit, format=format, overlap=overlap)
    out = _reference_matches(q, prep, limit, overlap)
    return out if format == "long" else wide_frame(q, out)


def iter_matches(query, events, *, limit: int | None = None, time_unit: str | None = None, engine: str = "auto",
                 format: str = "long", batch_rows: int = 1 << 16, overlap: str = "all"):  # noqa: A002
    """The matches of :func:`matches` as an iterator of frames of whole matches (bounded memory).

    Parameters
    ----------
    query, events, limit, time_unit, engine, format, overlap
        As in :func:`matches` (``events``: a local frame). ``overlap="none"``
        builds every match before it chooses (memory of all of them).
    batch_rows : int
        Rows per frame (about; a frame never splits a match). The match
        engine holds one frame at a time; the reference engine builds every
        match first and yields one frame.

    Returns
    -------
    iterator of polars.DataFrame
        Together, exactly :func:`matches`' rows (match ids continue across frames).

    Examples
    --------
    >>> import polars as pl
    >>> ev = pl.DataFrame({"type": ["A", "B", "B"], "time": [1, 2, 3]})
    >>> [f.height for f in iter_matches("RETURN COUNT(*) PATTERN SEQ(A, B)", ev, batch_rows=2)]
    [2, 2]
    """
    q = _check_matches_args(query, limit, engine, format, overlap)
    prep = prepare(q, events, time_unit=time_unit)
    if match_engine(q, engine, prep.df.schema) == "match":
        yield from match_batches(q, prep, limit=limit, format=format, batch_rows=batch_rows, overlap=overlap)
        return
    out = _reference_matches(q, prep, limit, overlap)
    yield out if format == "long" else wide_frame(q, out)


def _check_matches_args(query, limit, engine: str, format: str, overlap: str = "all") -> Query:  # noqa: A002
    q = _as_query(query)
    check_overlap(overlap, q.window.kind)
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise CepvecPlanError(f"limit must be a positive integer or None; found {limit!r}")
    if format not in MATCH_FORMATS:
        raise CepvecPlanError(f"format must be 'long' or 'wide'; found {format!r}")
    if engine not in MATCH_ENGINES:
        raise UnsupportedByEngine(f"unknown engine {engine!r} for cepvec.matches; choose one of: "
                                  f"{', '.join(MATCH_ENGINES)}")
    return q


def _reference_matches(q: Query, prep, limit: int | None, overlap: str = "all") -> pl.DataFrame:
    from cepvec.paths.reference import evaluate as reference
    from cepvec.runtime.prepare import time_values_to_output

    rows = prep.df.to_dicts()
    with reference_progress(q, prep, "cepvec.matches", count_matches_online) as counter:
        res = reference.evaluate_query(q, rows, prep.times.to_list(), w=prep.w, s=prep.s, match_limit=limit,
                                       progress=counter, overlap=overlap)
    header: dict[str, list] = {"match": []}
    for lab in q.group_labels:
        header[lab] = []
    wcols = (["window_start", "window_end"] if q.window.kind == "slide"
             else [q.time_col + "_emit"] if q.window.kind == "emit" else [])
    for c in wcols:
        header[c] = []
    header["position"] = []
    header["variable"] = []
    events_out: list[dict] = []
    mid = 0
    cells = sorted(res.cells.items(), key=lambda kv: (reference.sort_key(kv[0][0]), kv[0][1]))
    for (group, window), cell in cells:
        for m, mrows in cell:
            for pos, ((_, occ), row) in enumerate(zip(m.binding, mrows)):
                header["match"].append(mid)
                for lab, g in zip(q.group_labels, group):
                    header[lab].append(reference.unkey(g))
                for c, v in zip(wcols, window):
                    header[c].append(v)
                header["position"].append(pos)
                header["variable"].append(q.occs[occ].name)
                events_out.append(row)
            mid += 1
            if limit is not None and mid >= limit:
                break
        if limit is not None and mid >= limit:
            break
    schema = prep.df.schema
    cols: dict[str, pl.Series] = {"match": pl.Series("match", header["match"], dtype=pl.Int64)}
    for lab, g in zip(q.group_labels, q.group_by):
        cols[lab] = pl.Series(lab, header[lab], dtype=schema[g])
    for c in wcols:
        cols[c] = time_values_to_output(header[c], prep.unit, prep.time_dtype).rename(c)
    cols["position"] = pl.Series("position", header["position"], dtype=pl.Int64)
    cols["variable"] = pl.Series("variable", header["variable"], dtype=pl.String)
    left = pl.DataFrame(cols)
    right = pl.DataFrame(events_out, schema=schema) if events_out else prep.df.head(0)
    clash = [c for c in right.columns if c in left.columns]
    if clash:
        right = right.rename({c: f"event_{c}" for c in clash})
    return pl.concat([left, right], how="horizontal")


def partition(query, df, *, time_unit: str | None = None, window_block: int | None = None, sharing: str = "auto"):
    """Lay out a Spark DataFrame for ``cepvec.kernel(query, df.schema)`` in ``mapInArrow``.

    Repartitions as the query needs (by the GROUP-BY attributes; for SLIDE
    queries without GROUP-BY by blocks of windows, each event copied to the
    blocks whose windows contain it; otherwise into one partition), sorts each
    partition by time and tags every row with its Spark partition id and a
    fingerprint of the query. The kernel checks the tags in every task and
    raises :class:`CepvecPlanError` when the step was skipped or undone (a
    repartition or coalesce in between), so a partial answer cannot happen.
    The schema is validated here, on the driver, before any job runs.

    Parameters
    ----------
    query : str, Query, or a workload (dict or list of queries, or Workload)
        A workload whose queries need one partitioning, for
        ``cepvec.kernel(workload, df.schema)``.
    df : pyspark.sql.DataFrame
    time_unit : {"s", "ms", "us", "ns"}, optional
        Unit of an integer time column, as in :func:`run`.
    window_block : int, optional
        Windows per replication block (SLIDE without GROUP-BY); pass the same
        value to :func:`kernel`.
    sharing : {"auto", "none", "greedy", "exhaustive"}
        For a workload: pass the same value to :func:`kernel`.

    Returns
    -------
    pyspark.sql.DataFrame
        The query's columns plus ``__cepvec_part`` and ``__cepvec_plan`` (and
        ``__cepvec_block`` with window replication).

    Examples
    --------
    ``k = cepvec.kernel(q, df.schema)``, then
    ``cepvec.partition(q, df).mapInArrow(k, k.schema)`` (see ``docs/spark.md``).
    """
    if not _is_spark(df):
        raise CepvecTypeError(f"cepvec.partition takes a Spark DataFrame; found {type(df).__name__}. Local "
                              "frames need no partitioning: use cepvec.run(q, events)")
    if _is_workload(query):
        from cepvec.spark_adapter.many import partition_workload  # noqa: PLC0415  (optional dependency)

        return partition_workload(query, df, time_unit=time_unit, sharing=sharing, window_block=window_block)
    q = _as_query(query)
    from cepvec.spark_adapter import partition as spark_partition  # noqa: PLC0415  (optional dependency)

    return spark_partition(q, df, time_unit=time_unit, window_block=window_block)


def spark_errors():
    """A context manager (or decorator) that turns a Spark worker's cepvec error back into that error.

    A cepvec kernel checks what only the data can show (null times, rows out
    of order, input that skipped :func:`partition`) in the Spark tasks, so the
    error reaches the driver inside a ``pyspark.errors.PythonException``.
    Wrap the action of a cepvec pipeline (``collect``, ``toPandas``,
    ``write``, ...) to get the cepvec error instead, with its class and
    message; the Spark exception is kept as ``spark_exception``. Other
    exceptions pass unchanged.

    Returns
    -------
    contextlib.AbstractContextManager

    Raises
    ------
    CepvecError
        The subclass the worker raised (``CepvecDataError``, ``CepvecPlanError``,
        ...); ``CepvecPlanError`` when the workers cannot import cepvec (set
        ``PYSPARK_PYTHON``).

    Examples
    --------
    ``with cepvec.spark_errors(): rows = cepvec.run(q, spark_df).collect()``
    (see ``docs/spark.md``).
    """
    from cepvec.spark_adapter.errors import spark_errors as spark_errors_  # noqa: PLC0415  (optional dependency)

    return spark_errors_()


def _is_workload(query) -> bool:
    """Many queries: a dict or list of them, or a Workload (cepvec.kernel and cepvec.partition)."""
    from cepvec.sharing.workload import Workload  # noqa: PLC0415  (the multi-query layer)

    return isinstance(query, (dict, list, tuple, Workload))


def kernel(query, schema=None, *, type_col: str = "type", time_col: str = "time",
           time_unit: str | None = None, numeric: str = "int64", engine: str = "auto", order: str = "group",
           window_block: int | None = None, output: str = "aggregates", format: str = "long",  # noqa: A002
           limit: int | None = None, sharing: str = "auto"):
    """A picklable function for ``df.mapInArrow(k, k.schema)``.

    Parameters
    ----------
    query : str, Query, or a workload (dict or list of queries, or Workload)
        A workload gives one kernel for all its queries (the shared executor
        for the queries that share, ``docs/sharing.md``): its output has a
        ``query`` column (the query's name) and the union of the queries'
        columns (null where a query lacks one). ``schema`` is required, and
        the queries must need one Spark partitioning (same GROUP-BY
        attributes; or no GROUP-BY and one SLIDE window; or no GROUP-BY and
        no SLIDE).
    schema : pyspark StructType, pyarrow.Schema or dict, optional
        The input's schema (``df.schema``). With it the output keeps the
        input's types (group values, integer sums, timestamps); without it,
        group values are strings, times integers and sums doubles.
    type_col, time_col, time_unit, numeric, engine
        As in :func:`compile` and :func:`run`.
    order : "group" or "time"
        Outside Spark only (plain pyarrow iterators, untagged input): how each
        call's rows are sorted: ``"group"``, by (GROUP-BY attributes, time),
        consecutive values run together up to ``arrow_kernel.COALESCE_ROWS``
        rows (a larger value alone); ``"time"``, by time alone, one engine run
        per call. Input laid out by :func:`partition` carries its own layout.
    window_block : int, optional
        As given to :func:`partition` (SLIDE without GROUP-BY).
    output : {"aggregates", "matches"}
        ``"matches"``: the matches as :func:`matches` lists them, built by
        the match engine (``engine`` ``"auto"`` or ``"match"``; ``schema`` is
        required: every input column is in the output). Each call must hold
        every event of the partitions it sees (GROUP-BY and equivalence
        attributes; everything under strict contiguity), in any order;
        :func:`matches` on a Spark DataFrame lays it out so. ``match`` ids
        are unique across Spark tasks (``docs/matching.md``).
    format, limit
        For ``output="matches"``: as in :func:`matches` (``limit`` per call).
    sharing : {"auto", "none", "greedy", "exhaustive"}
        For a workload: as in :func:`run_many`.

    Returns
    -------
    Kernel
        ``k(batches)`` maps an iterator of ``pyarrow.RecordBatch`` to
        result batches of exactly ``k.arrow_schema``; ``k.schema`` is the
        Spark DDL string of the output.

    Notes
    -----
    On Spark, feed it :func:`partition`'s output:
    ``cepvec.partition(q, df).mapInArrow(k, k.schema)``. In a Spark task the
    kernel refuses input without cepvec's partition tags, or whose rows were
    moved to another partition afterwards (:class:`CepvecPlanError`), and
    unordered input (:class:`CepvecDataError`); wrap the Spark action in
    :func:`spark_errors` to get these as cepvec errors on the driver. With
    ``schema`` the schema is validated here, on the driver; without it, on
    the first batch of each task. Outside Spark each call must hold every
    event of its GROUP-BY values, ordered as ``order`` says. See
    ``docs/spark.md``.

    Examples
    --------
    >>> k = kernel("RETURN COUNT(*) PATTERN SEQ(A, B)")
    >>> k.schema
    '`COUNT(*)` BIGINT'
    """
    from cepvec.arrow_kernel import make_kernel

    if _is_workload(query):
        if output != "aggregates":
            raise CepvecPlanError(f"a workload kernel computes aggregates; found output={output!r} (matches need "
                                  "one kernel per query)")
        from cepvec.workload_kernel import make_workload_kernel  # noqa: PLC0415

        return make_workload_kernel(query, schema=schema, time_unit=time_unit, numeric=numeric, engine=engine,
                                    sharing=sharing, spark_window_block=window_block)
    if output == "matches":
        from cepvec.match_kernel import make_match_kernel

        return make_match_kernel(query, schema=schema, type_col=type_col, time_col=time_col, time_unit=time_unit,
                                 engine=engine, format=format, limit=limit)
    if output != "aggregates":
        raise CepvecPlanError(f"output must be 'aggregates' or 'matches'; found {output!r}")
    return make_kernel(query, schema=schema, type_col=type_col, time_col=time_col,
                       time_unit=time_unit, numeric=numeric, engine=engine, order=order,
                       spark_window_block=window_block)




def run_many(queries, events, *, sharing: str = "auto", engine: str = "auto", numeric: str = "int64",
             time_unit: str | None = None, type_col: str | None = None,
             time_col: str | None = None) -> dict[str, pl.DataFrame]:
    """Evaluate many queries over one input in one pass, sharing what the sharing plan shares.

    Parameters
    ----------
    queries : dict of str to (str or Query), list of them, or Workload
        Named queries (a list is named ``q0``, ``q1``, ...), or a :class:`Workload`
        from :func:`workload`.
    events : polars.DataFrame, pyarrow.Table, pyarrow.RecordBatch or pandas.DataFrame
        As in :func:`run`.
    sharing : {"auto", "none", "greedy", "exhaustive"}
        ``"none"``: every query runs on its own path, all in one pass over the
        prepared input; ``"auto"``: the optimizer's plan (``docs/sharing.md``);
        ``"greedy"`` / ``"exhaustive"`` force that plan finder.
    engine, numeric, time_unit
        As in :func:`run`; ``engine="reference"`` runs every query alone on the
        reference engine.
    type_col, time_col : str, optional
        As in :func:`run`, for every query given as text (a compiled query or
        :class:`Workload` carries its own; a different name is an error).

    Returns
    -------
    dict of str to polars.DataFrame
        Per query name exactly the frame ``cepvec.run(query, events)`` returns. For a Spark
        DataFrame, the Spark DataFrame ``cepvec.run`` returns, from one Spark job per group of
        queries with one partitioning (the shared executor in every task); the dict's
        ``unpersist()`` frees the jobs' cached results (``docs/sharing.md``).

    Raises
    ------
    CepvecError
        As :func:`run` raises for a query; the message starts with the query's name.

    Examples
    --------
    >>> import polars as pl
    >>> ev = pl.DataFrame({"type": ["A", "B", "C"], "time": [1, 2, 3]})
    >>> out = run_many({"ab": "RETURN COUNT(*) PATTERN SEQ(A, B)",
    ...                 "abc": "RETURN COUNT(*) PATTERN SEQ(A, B, C)"}, ev)
    >>> [out[n]["COUNT(*)"].to_list() for n in ("ab", "abc")]
    [[1], [1]]
    """
    from cepvec.sharing import run_many as run_many_  # noqa: PLC0415  (the multi-query layer)

    if type_col is not None or time_col is not None:
        queries = _with_columns(queries, type_col, time_col)
    if _is_spark(events):  # one Spark job per layout group, the shared executor in each (docs/sharing.md)
        from cepvec.spark_adapter.many import run_many_spark  # noqa: PLC0415  (optional dependency)

        return run_many_spark(queries, events, sharing=sharing, engine=engine, numeric=numeric, time_unit=time_unit)
    return run_many_(queries, events, sharing=sharing, engine=engine, numeric=numeric, time_unit=time_unit)


def _with_columns(queries, type_col: str | None, time_col: str | None):
    """``queries`` with every text compiled for these column names (:func:`_as_query`; errors name the query)."""
    from cepvec.sharing.workload import Workload, named, normalize_queries  # noqa: PLC0415

    items = queries.queries if isinstance(queries, Workload) else normalize_queries(queries)
    out = {}
    for name, q in items.items():
        try:
            out[name] = _as_query(q, type_col, time_col)
        except CepvecError as exc:
            raise named(exc, name) from None
    return queries if isinstance(queries, Workload) else out


def workload(queries, *, sharing: str = "auto"):
    """Compile a workload of named queries and find its sharing plan.

    Parameters
    ----------
    queries : dict of str to (str or Query), or list
        As in :func:`run_many`.
    sharing : {"auto", "none", "greedy", "exhaustive"}
        Which plan finder to use (``"none"``: no sharing).

    Returns
    -------
    Workload
        ``.queries`` (name -> Query), ``.plan`` (the sharing plan) and
        ``.explain()`` (candidates, benefits, conflicts, pruning, the plan, costs).

    Examples
    --------
    >>> wl = workload(["RETURN COUNT(*) PATTERN SEQ(A, B, C)", "RETURN COUNT(*) PATTERN SEQ(A, B, D)"])
    >>> wl.names
    ['q0', 'q1']
    """
    from cepvec.sharing import compile_workload  # noqa: PLC0415

    return compile_workload(queries, sharing)


def stream(query, streaming_df, *, watermark="10 minutes", late: str = "drop", checkpoint=None,
           time_unit: str | None = None, numeric: str = "int64", engine: str = "auto", buckets: int | None = 16,
           type_col: str | None = None, time_col: str | None = None):
    """A continuous query over a Spark streaming DataFrame: the rows :func:`run` gives, as they become final.

    Parameters
    ----------
    query : str or Query
        A ``WITHIN ... SLIDE`` query (one row per window, emitted once when the
        event-time watermark passes the window's end) or a ``WITHIN ... EMIT
        CHANGES`` query (one row per END event time, emitted once the
        watermark reaches that time). Queries without them aggregate the whole
        unbounded stream and are refused (:class:`CepvecQueryError`).
    streaming_df : pyspark.sql.DataFrame
        A streaming DataFrame (``spark.readStream...``) with the type and time
        columns and the attributes the query reads; an integer time (in
        ``time_unit``) or a timestamp.
    watermark : str or datetime.timedelta
        How late an event may arrive (``"10 minutes"``, ``"30 s"``): the
        watermark is the largest event time seen minus this delay. Events at
        or below the watermark are late.
    late : {"drop", "error", "side"}
        Late events are dropped and counted (``late_events`` in the query's
        ``lastProgress["observedMetrics"]["cepvec"]``), raise
        :class:`CepvecDataError` in the query, or come out as rows of their own
        with the result columns null and a ``late_event`` struct column.
    checkpoint : str, optional
        The checkpoint directory you give ``writeStream``; cepvec records its
        state layout there and refuses to resume a checkpoint of another query
        (local paths only).
    time_unit, numeric, engine
        As in :func:`run`.
    buckets : int or None
        GROUP-BY queries: the groups are hashed into this many state keys, one
        engine run per key and micro-batch (the unit of parallelism); None
        makes each GROUP-BY value a state key of its own (slower with many
        groups: one Python call and engine run per value and micro-batch).
        Keep it across restarts from a checkpoint.
    type_col, time_col : str, optional
        As in :func:`run`.

    Returns
    -------
    pyspark.sql.DataFrame
        A streaming DataFrame with :func:`run`'s columns (plus ``late_event``
        when ``late="side"``), to be written in append mode with
        ``writeStream`` to any sink. See ``docs/streaming.md``.

    Examples
    --------
    ``cepvec.stream(q, spark.readStream.schema(s).parquet(path), watermark="1 minute")
    .writeStream.option("checkpointLocation", ck).parquet(out)`` (``docs/streaming.md``).
    """
    q = _as_query(query, type_col, time_col)
    if numeric not in NUMERIC:
        raise CepvecPlanError(f"numeric must be 'int64' or 'float64'; found {numeric!r}")
    if not _is_spark(streaming_df):
        raise CepvecTypeError(f"cepvec.stream takes a Spark streaming DataFrame; found {type(streaming_df).__name__}. "
                              "For a bounded table use cepvec.run(q, events)")
    from cepvec.spark_adapter import stream_spark  # noqa: PLC0415  (optional dependency)

    return stream_spark(q, streaming_df, watermark=watermark, late=late, checkpoint=checkpoint, time_unit=time_unit,
                        numeric=numeric, engine=engine, buckets=buckets)


__all__ = ["compile", "run", "matches", "iter_matches", "kernel", "partition", "spark_errors", "run_many",
           "workload", "stream"]
