"""Output assembly for every path: cells (group or partition, window key, values) -> the result frame.

One place turns what a path computed into the frame ``cepvec.run`` returns:
group columns, ``window_start``/``window_end`` (SLIDE) or the time column
(EMIT CHANGES), then the aggregates, finished from their components (SUM and
AVG from a sum and a non-null count; MIN and MAX from order keys), with exact
int64 sums across partitions checked for overflow.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from cepvec.errors import CepvecOverflowError
from cepvec.kernels import _jit
from cepvec.kernels.linear import rank_histogram, rank_place, rank_scatter
from cepvec.plan.ir import Query
from cepvec.runtime import threads
from cepvec.runtime.order_keys import order_values
from cepvec.runtime.prepare import Prepared, output_schema, time_values_to_output

#: Float estimate of the int64 limit, used only where Polars has no Int128 sums (1% below 2**63).
_I64_FLOAT_LIMIT = 0.99 * 2.0**63


def overflow_error(q: Query, where: str) -> CepvecOverflowError:
    """The error of an exact int64 count or sum leaving the int64 range ``where`` (e.g. "near time 5")."""
    text = " ".join(q.text.split())
    if all(a.func in ("MIN", "MAX") for a in q.aggs):  # the count is kept: it tells which windows have a match
        return CepvecOverflowError(
            f"the exact int64 number of matches, which tells MIN / MAX which windows have a match, overflows "
            f"{where} for query {text!r}; pass numeric='float64' (the number of matches as a float; the MIN / "
            "MAX values stay exact)")
    return CepvecOverflowError(
        f"an exact int64 count or sum overflows {where} for query {text!r}; pass "
        "numeric='float64' for approximate results")


def internal_error(q: Query, problem: str, partition: str) -> RuntimeError:
    """The error of a kernel's own check finding ``problem`` (e.g. a buffer sized before its loop
    found too small): a bug, raised rather than a wrong number."""
    return RuntimeError(
        f"cepvec internal error: {problem}, for partition {partition} of query {' '.join(q.text.split())!r}; "
        "please report it with the input's shape. engine='reference' runs the query meanwhile")


def select_weights(df: pl.DataFrame, exprs: list, q: Query) -> pl.DataFrame:
    """``df.select(exprs)`` of SUM / AVG weights cast to the state's dtype; a value that int64 cannot
    hold (a UInt64 above 2**63 - 1 with exact counts) raises the overflow error, not Polars' own."""
    try:
        return df.select(exprs)
    except pl.exceptions.InvalidOperationError as err:
        raise overflow_error(q, "when reading a SUM / AVG attribute (a value above the int64 range)") from err


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
    if q.group_labels and len(frame) > 1:
        # the group values in Polars' order, as the other engines sort them (an Enum sorts by its
        # categories, not as the strings the cells hold); then the window or time, in cell order
        frame = frame.sort(list(q.group_labels), nulls_last=True, maintain_order=True)
    return frame


def build_output_frame(q: Query, prep: Prepared, plan, runs, numeric: str, answers=None) -> pl.DataFrame:
    """Turn linear-kernel cells (per partition) into the result: combine per group, finish AVG/SUM/MIN/MAX.

    ``runs``: the streams of one query; ``answers``: per stream the components
    whose columns come from it (None: all from the first stream, which always
    gives the count ``__v0`` and the rows).
    """
    if list(q.partition_by) == list(q.group_by) and all(hasattr(r, "cell_chunks") for r in runs):
        out = chunks_in_rank_order(q, prep, plan, numeric, runs[0].group_frame(), [r.cell_chunks() for r in runs],
                                   answers)
        if out is not None:
            return out
    cells = runs[0].result_cells()
    for run, comps in zip(runs[1:], (answers or [])[1:]):
        other = run.result_cells()
        cols = [f"__v{1 + j}" for j in comps]
        cells = cells.drop(cols).join(other.select("__pid", "__key", *cols), on=["__pid", "__key"], how="left")
    vcols = [c for c in cells.columns if c.startswith("__v")]
    if q.group_by and list(q.partition_by) == list(q.group_by):
        return _cells_by_partition(q, prep, plan, numeric, cells, runs[0].group_frame(), vcols)
    if q.group_by:
        cells = cells.join(runs[0].group_frame(), on="__pid", how="left")
    by = list(q.group_by) + ["__key"]
    order_cols = {f"__v{1 + j}" for j, c in enumerate(plan.components) if c.kind in ("min", "max")}
    int_cols = [c for c in vcols if cells.schema[c].is_integer() and c not in order_cols]
    # order keys (MIN / MAX) combine by max (a bigger key is the better extreme; 0 is no value)
    aggs = [pl.col(c).max() if c in order_cols else pl.col(c).sum() for c in vcols]
    g = cells.group_by(by).agg(aggs) if len(cells) else cells  # sorted below
    if sums_overflow(cells, by, int_cols) if len(cells) else False:
        raise overflow_error(q, "when adding up the partitions of a group")
    g = g.sort(by, nulls_last=True)
    keyv = g["__key"].to_numpy()
    group_cols = {gcol: g[gcol] for gcol in q.group_by}
    vals = {c: g[c] for c in vcols}
    return assemble_output(q, prep, plan, numeric, group_cols, keyv, vals)


def group_ranks(q: Query, gf: pl.DataFrame) -> tuple[np.ndarray, pl.DataFrame | None]:
    """Position of every partition id in the output order of its group values (nulls last), and
    ``gf`` in that order (without GROUP-BY: one partition, rank 0, and None)."""
    if not q.group_by:
        return np.zeros(max(len(gf), 1), np.int64), None
    order = int_order(gf[q.group_by[0]]) if len(q.group_by) == 1 else None
    if order is None:
        ranked = gf.sort(list(q.group_by), nulls_last=True, maintain_order=True)
    else:
        ranked = gf[order]
    rank_of_pid = np.empty(len(gf), np.int64)
    rank_of_pid[ranked["__pid"].to_numpy()] = np.arange(len(gf), dtype=np.int64)
    return rank_of_pid, ranked


#: From this many rows on, :func:`int_order` sorts an integer column by packed values and rows (below, by
#: NumPy's stable argsort when null-free).
INT_ORDER_FROM = 1 << 14


def int_order(col: pl.Series) -> np.ndarray | None:
    """The rows of an integer (or temporal) column in ascending order, nulls last, equal values in
    row order: Polars' stable sort, by one NumPy sort of ``(value - min) << b | row`` (a SIMD sort of
    int64; 5·10^5 distinct ids: 5 ms, Polars' sort of them 27-30 ms). None where that does not fit
    in 63 bits (a value range past ``2**(63 - b)``, ``b`` the bits of a row number) and for other
    dtypes. A short column without nulls takes NumPy's stable sort of its values (100 keys: 0.01 ms,
    Polars' sort of the key frame 0.3 ms); with nulls, None."""
    n = len(col)
    if not (col.dtype.is_integer() or col.dtype.is_temporal()):
        return None
    if n < INT_ORDER_FROM:
        return None if col.null_count() else np.argsort(col.to_physical().to_numpy(), kind="stable")
    phys = col.to_physical()
    if phys.dtype == pl.UInt64 and (phys.max() or 0) > np.iinfo(np.int64).max:
        return None
    v = phys.cast(pl.Int64)
    lo, hi = v.min(), v.max()
    if lo is None:  # every row null: row order
        return np.arange(n, dtype=np.int64)
    b = n.bit_length()
    if (hi - lo + 1).bit_length() + b > 63:  # (the value hi - lo + 1 codes null)
        return None
    off = v.fill_null(lo).to_numpy() - np.int64(lo)
    if v.null_count():
        off[v.is_null().to_numpy()] = hi - lo + 1
    packed = np.sort((off << b) | np.arange(n, dtype=np.int64))
    return packed & np.int64((1 << b) - 1)


def _order_by_rank(rank_of_pid: np.ndarray, pid: np.ndarray, key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row order by (rank of the partition, key), and the rows of each rank: a stable counting
    sort when every partition's keys arrive rising (:func:`_rank_positions`; each range of rows
    places its rows in a thread), else a full sort."""
    n, n_ranks = len(pid), len(rank_of_pid)
    if n < _jit.NUMPY_BELOW:  # few rows: a NumPy sort
        return np.lexsort((key, rank_of_pid[pid])), np.bincount(rank_of_pid[pid], minlength=n_ranks)
    done = _rank_positions(rank_of_pid, [(pid, key)])
    if done is None:
        return np.lexsort((key, rank_of_pid[pid])), np.bincount(rank_of_pid[pid], minlength=n_ranks)
    ranges, pos, per_rank = done
    order = np.empty(n, np.int64)
    threads.map_threads(lambda j: [rank_place(rank_of_pid, pid, a, b, pos[j], order) for _, a, b in ranges[j]],
                        range(len(ranges)))
    return order, per_rank


def _repeat_ranked(ranked: pl.DataFrame, gcol: str, per_rank: np.ndarray) -> pl.Series:
    """The group column of rows in rank order: each group's value ``per_rank[rank]`` times (NumPy
    for numbers without nulls, a Polars gather otherwise)."""
    col = ranked[gcol]
    if (col.dtype.is_integer() or col.dtype.is_float()) and not col.null_count():  # (not Decimal: objects)
        return pl.Series(gcol, np.repeat(col.to_numpy(), per_rank), dtype=col.dtype)
    return col.gather(pl.Series(np.repeat(np.arange(len(ranked), dtype=np.int64), per_rank)))


def _cells_by_partition(q: Query, prep: Prepared, plan, numeric: str, cells: pl.DataFrame, gf: pl.DataFrame,
                        vcols: list) -> pl.DataFrame:
    """The result when every partition is its own group: the cells are already one per (group, key),
    so nothing is summed (:func:`in_rank_order`)."""
    return in_rank_order(q, prep, plan, numeric, gf, cells["__pid"].to_numpy(), cells["__key"].to_numpy(),
                          {c: cells[c] for c in vcols})


def in_rank_order(q: Query, prep: Prepared, plan, numeric: str, gf: pl.DataFrame, pid: np.ndarray,
                   key: np.ndarray, columns: dict, finished: dict | None = None, rank: tuple | None = None
                   ) -> pl.DataFrame:
    """The result frame of cells (partition ``pid``, window ``key``, value ``columns``: NumPy arrays or
    Series) unique per (partition, key), every partition its own group. A counting sort by the rank of
    the group values orders them (a partition's keys arrive rising; checked, else a full sort); the
    value columns are gathered and the group columns repeated (each group's value as many times as
    it has rows) in threads. ``finished``: output columns (label -> Series of the cells, e.g. MIN /
    MAX values a path decoded itself) put in order and used as they are. ``rank``: ``group_ranks(q,
    gf)`` when the caller has it (the queries of one group frame share it)."""
    finished = finished or {}
    if not len(pid):
        return assemble_output(q, prep, plan, numeric, {}, key, {}, minmax_ok=bool(finished))
    rank_of_pid, ranked = rank if rank is not None else group_ranks(q, gf)
    order, per_rank = _order_by_rank(rank_of_pid, pid, key)

    def take(x):
        if isinstance(x, str):  # a group column
            return _repeat_ranked(ranked, x, per_rank)
        if isinstance(x, pl.Series):  # NumPy for null-free numbers (a plain gather; a Decimal would be objects)
            plain = not x.null_count() and (x.dtype.is_integer() or x.dtype.is_float() or x.dtype == pl.Boolean)
            return pl.Series(x.name, np.take(x.to_numpy(), order), dtype=x.dtype) if plain else x.gather(order)
        return np.take(x, order)

    items = [key, *columns.values(), *finished.values(), *q.group_by]
    key_o, *rest = threads.map_threads(take, items, events=len(order) * len(items))
    vals = {c: v if isinstance(v, pl.Series) else pl.Series(c, v) for c, v in zip(columns, rest)}
    done = dict(zip(finished, rest[len(columns):]))
    groups = dict(zip(q.group_by, rest[len(columns) + len(finished):]))
    out = assemble_output(q, prep, plan, numeric, groups, key_o, vals, minmax_ok=bool(finished))
    return out.with_columns(v.alias(lab) for lab, v in done.items()) if done else out


def sums_overflow(cells: pl.DataFrame, by: list, int_cols: list) -> bool:
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
        return any(s[c].abs().max() >= _I64_FLOAT_LIMIT for c in int_cols)


def _ranges_of_chunks(lengths: list[int], k: int) -> list[list[tuple[int, int, int]]]:
    """The rows of chunks of ``lengths`` (in order, as if concatenated) cut in ``k`` ranges of about
    equal size: per range its pieces ``(chunk, lo, hi)``."""
    cuts = np.linspace(0, sum(lengths), k + 1).astype(np.int64)
    ranges: list[list[tuple[int, int, int]]] = [[] for _ in range(k)]
    start = 0
    for ci, m in enumerate(lengths):
        for j in range(k):
            a, b = max(start, int(cuts[j])), min(start + m, int(cuts[j + 1]))
            if b > a:
                ranges[j].append((ci, a - start, b - start))
        start += m
    return ranges


def _rank_positions(rank_of_pid: np.ndarray, chunks: list[tuple]) -> tuple | None:
    """The first pass of a stable counting sort of the rows of ``chunks`` (``(pid, key, ...)``, in
    order as if concatenated) by (rank of the partition, key): the rows cut in one range per thread
    (:func:`_ranges_of_chunks`), each counts its rows per rank and checks that every partition's keys
    rise. Returns ``(ranges, pos, rows per rank)``, ``pos[j]`` the output offset of range ``j``'s
    first row of each rank; None when a partition's keys do not rise (within or across ranges)."""
    lengths = [len(c[0]) for c in chunks]
    n, n_ranks = sum(lengths), len(rank_of_pid)
    k = max(1, min(threads.n_threads(), n // threads.MIN_EVENTS_PER_THREAD))
    ranges = _ranges_of_chunks(lengths, k)
    counts = threads.thread_rows(k, n_ranks)  # (each thread's on cache lines of its own)
    first = threads.thread_rows(k, n_ranks, np.iinfo(np.int64).max)
    last = threads.thread_rows(k, n_ranks, np.iinfo(np.int64).min)

    def histogram(j):
        oks = [rank_histogram(rank_of_pid, chunks[ci][0], chunks[ci][1], a, b, counts[j], first[j], last[j])
               for ci, a, b in ranges[j]]
        return all(oks)

    oks = threads.map_threads(histogram, range(k))
    # across ranges: a partition's first key in a range above its last key in every earlier range
    if not (all(oks) and all((first[j] > last[:j].max(axis=0)).all() for j in range(1, k))):
        return None
    # range j's rows of rank r go after every row of a lower rank and after ranges < j of rank r
    flat = counts.T.reshape(-1)
    pos = threads.thread_rows(k, n_ranks)
    pos[:] = (np.cumsum(flat) - flat).reshape(n_ranks, k).T
    return ranges, pos, counts.sum(axis=0)


def _scatter_by_rank(rank_of_pid: np.ndarray, chunks: list[tuple]) -> tuple | None:
    """The cells of ``chunks`` (``(pid, key, vi, vf)``: per row a partition, a key and two blocks
    of values) moved into the order of (rank of the partition, key), each range of rows of
    :func:`_rank_positions` in a thread: ``(key, vi_columns, vf_columns, rows per rank)`` (the value
    blocks transposed: one contiguous row per column), or None when a partition's keys do not rise.
    Fewer rows than ``_jit.NUMPY_BELOW``: the same by a NumPy sort (no kernel compiled for them)."""
    if sum(len(c[0]) for c in chunks) < _jit.NUMPY_BELOW:
        return _sort_by_rank(rank_of_pid, chunks)
    done = _rank_positions(rank_of_pid, chunks)
    if done is None:
        return None
    ranges, pos, per_rank = done
    n = int(per_rank.sum())
    vi0, vf0 = chunks[0][2], chunks[0][3]
    out_key = np.empty(n, np.int64)
    out_vi, out_vf = np.empty((vi0.shape[1], n), vi0.dtype), np.empty((vf0.shape[1], n), vf0.dtype)

    def place(j):
        for ci, a, b in ranges[j]:
            pid, key, vi, vf = chunks[ci]
            rank_scatter(rank_of_pid, pid, key, a, b, vi, vf, pos[j], out_key, out_vi, out_vf)

    threads.map_threads(place, range(len(ranges)))
    return out_key, out_vi, out_vf, per_rank


def _sort_by_rank(rank_of_pid: np.ndarray, chunks: list[tuple]) -> tuple | None:
    """:func:`_scatter_by_rank` of few rows: a stable NumPy sort by the rank of the partition."""
    pid, key, vi, vf = (np.concatenate([c[i] for c in chunks]) for i in range(4))
    rank = rank_of_pid[pid]
    order = np.argsort(rank, kind="stable")
    rank_o, key_o = rank[order], key[order]
    if np.any((rank_o[1:] == rank_o[:-1]) & (key_o[1:] <= key_o[:-1])):  # a partition's keys do not rise
        return None
    return (key_o, np.ascontiguousarray(vi[order].T), np.ascontiguousarray(vf[order].T),
            np.bincount(rank, minlength=len(rank_of_pid)))


def chunks_in_rank_order(q: Query, prep: Prepared, plan, numeric: str, gf: pl.DataFrame, streams: list[tuple],
                         answers: list | None = None) -> pl.DataFrame | None:
    """:func:`in_rank_order` of cells kernels wrote in chunks, every partition its own group, without
    concatenating or gathering them: each stream's chunks are moved straight to their output places,
    in threads (:func:`_scatter_by_rank`). ``streams``: per stream of the query ``(chunks, names_i,
    names_f)`` (``chunks`` of C-contiguous ``(pid, key, vi, vf)``, the columns of ``vi`` and ``vf``
    named ``names_i`` and ``names_f``); ``answers``: as for :func:`build_output_frame`.

    None (the caller joins and sorts :meth:`result_cells` instead) for no cells, when a partition's
    keys do not rise, or when the streams' cells are not of the same (partition, key)s."""
    if not sum(len(c[0]) for c in streams[0][0]):
        return None
    rank_of_pid, ranked = group_ranks(q, gf)
    vals: dict[str, pl.Series] = {}
    for i, (chunks, names_i, names_f) in enumerate(streams):
        done = _scatter_by_rank(rank_of_pid, chunks) if chunks else None  # (no chunk: not the first's cells)
        if done is None:
            return None
        key, vi, vf, per_rank = done
        if not i:
            key0, per_rank0 = key, per_rank
        elif not (np.array_equal(per_rank, per_rank0) and np.array_equal(key, key0)):
            return None
        cols = {**dict(zip(names_i, vi)), **dict(zip(names_f, vf))}
        want = list(cols) if not i else [f"__v{1 + j}" for j in answers[i]]
        vals.update({c: pl.Series(c, cols[c]) for c in want})
    groups = dict(zip(q.group_by, threads.map_threads(lambda g: _repeat_ranked(ranked, g, per_rank0), q.group_by)))
    return assemble_output(q, prep, plan, numeric, groups, key0, vals)


def assemble_output(q: Query, prep: Prepared, plan, numeric: str, group_cols: dict, keyv, vals: dict,
                     minmax_ok: bool = False):
    """The result frame from summed cells; MIN/MAX columns (``minmax_ok``) are left null for the caller."""
    out_schema = output_schema(q, prep.df.schema, prep.time_dtype, numeric)
    if not len(keyv):
        return pl.DataFrame(schema=out_schema)
    data: dict[str, pl.Series] = {}
    for gcol, lab in zip(q.group_by, q.group_labels):
        data[lab] = group_cols[gcol].rename(lab).cast(out_schema[lab])
    keyv = np.asarray(keyv, dtype=np.int64)
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
            col = order_values(vals[f"__v{1 + comps[0]}"], a.func.lower(), out_schema[a.label])
        data[a.label] = col.rename(a.label).cast(out_schema[a.label])
    return pl.DataFrame([data[n] for n in out_schema])
