"""``run_many``: every query of a workload over one prepared input, in one pass over its batches.

The input is validated and sorted once per (type column, time column) pair;
every other query is checked against one representative row per event type
(column, dtype and event-type checks, the same messages as ``cepvec.run``) and
gets its window in the input's unit. Then each batch is pushed once to the
shared executor (the queries the sharing plan gives it) and to one single-query
run per remaining query (``registry.choose``: the path ``cepvec.run`` would
take), and each query's frame is finished exactly as ``cepvec.run`` finishes it.
"""

from __future__ import annotations

import dataclasses
import os

import polars as pl

from cepvec.errors import CepvecError, CepvecPlanError
from cepvec.plan.ir import Query
from cepvec.registry import NUMERIC, Choice, choose
from cepvec.runtime.memory import physical_memory
from cepvec.runtime.prepare import Prepared, check_predicate_types, output_schema, prepare
from cepvec.sharing.executor import SharedRun, runs_shared
from cepvec.sharing.workload import SHARING, Workload, compile_workload, named


def _checked(name: str, fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except CepvecError as exc:
        raise named(exc, name) from None


def prepare_workload(wl: Workload, events, *, engine: str = "auto", numeric: str = "int64",
                     time_unit: str | None = None) -> tuple[dict[str, Prepared], dict[str, Choice]]:
    """Per query its :class:`Prepared` input (one sorted frame per column pair) and its :class:`Choice`."""
    if numeric not in NUMERIC:
        raise CepvecPlanError(f"numeric must be 'int64' or 'float64'; found {numeric!r}")
    for name, q in wl.queries.items():
        _checked(name, choose, q, engine)  # an engine that cannot run a query fails before the data are read
    preps: dict[str, Prepared] = {}
    bases: dict[tuple[str, str], tuple[Prepared, pl.DataFrame, set, dict]] = {}
    for name, q in wl.queries.items():
        cols = (q.type_col, q.time_col)
        if cols not in bases:
            base = _checked(name, prepare, q, events, time_unit=time_unit)
            # one row per event type: enough for the column, dtype and event-type checks of other queries
            reps = base.df[base.df[q.type_col].arg_unique()]
            present = set(reps[q.type_col].cast(pl.String).to_list())
            bases[cols] = (base, reps, present, {})
            preps[name] = base
            continue
        base, reps, present, seen = bases[cols]
        # a query whose window was checked, whose attributes were checked, and whose types all occur,
        # passes every check of prepare (columns, dtypes, types, durations, negative times)
        wkey = (q.window.within, q.window.slide, q.window.kind)
        if wkey in seen and set(q.attributes) <= seen[wkey][0] and set(q.event_types) <= present:
            preps[name] = dataclasses.replace(base, w=seen[wkey][1], s=seen[wkey][2])
            continue
        small = _checked(name, prepare, q, reps, time_unit=time_unit, sort=False)
        if small.s is not None and len(base.times) and base.times.min() < 0:
            _checked(name, prepare, q, base.df, time_unit=time_unit, sort=False, check_types=False)  # raises
        attrs = seen[wkey][0] if wkey in seen else set()
        seen[wkey] = (attrs | set(q.attributes), small.w, small.s)
        preps[name] = dataclasses.replace(base, w=small.w, s=small.s)
    choices = {}
    for name, q in wl.queries.items():
        p = preps[name]
        _checked(name, output_schema, q, p.df.schema, p.time_dtype, numeric)  # type errors before any work
        _checked(name, check_predicate_types, q, p.df.schema)
        choices[name] = _checked(name, choose, q, engine, p.df.schema)
    return preps, choices


#: Bytes the shared executor's state may take (1 GiB, at most a quarter of the machine's memory, or
#: ``CEPVEC_SHARED_STATE_BYTES``): its state is dense per partition (every trie node's counts by start
#: pane), about 0.24 MB per partition for Sharon's 120 queries under SLIDE, so 10^5 customers took
#: 24 GB. A group whose partitions in the input need more runs its queries on their own paths (as
#: ``sharing="none"``), whose state grows with the events instead. Measured on that workload (10^6
#: events, one process): 3 000 customers (0.72 GB) shared 3.6 s, unshared 4.4 s; 10 000 (2.4 GB)
#: shared 8.4 s, unshared 4.7 s.
STATE_BUDGET = int(os.environ.get("CEPVEC_SHARED_STATE_BYTES", 0)) or min(1 << 30, physical_memory() // 4)


def _state_bytes(run, q: Query, p: Prepared) -> int:
    """The shared state ``run`` would hold for the partitions of the prepared input ``p``."""
    n_part = p.df.select(q.partition_by).n_unique() if q.partition_by and len(p.df) else 1
    return run.bytes_per_partition() * n_part


#: EMIT CHANGES over groups of several partitions ([id] finer than GROUP-BY): the shared kernel sums a
#: group's partitions at each of its END times (``kernels/sharing.py::_emit_changes``), so its work is
#: about the input's distinct times times the partitions of its largest group; the linear path, which a
#: query takes on its own, writes a partition's row only where its totals changed. Past this many such
#: steps per event a group's queries run on their own paths: 2 000 ids of 10^4 events took 0.85 s shared
#: and 0.04 s unshared, 20 000 of 8·10^4 took 51 s (found by a differential fuzzer).
EMIT_STEPS_PER_EVENT = 64


def _emit_steps(q: Query, p: Prepared) -> int:
    """:data:`EMIT_STEPS_PER_EVENT`'s steps of the shared EMIT CHANGES rows of ``q`` over ``p``: 0 unless
    the groups hold several partitions."""
    if q.window.kind != "emit" or not len(p.df) or set(q.partition_by) <= set(q.group_by):
        return 0
    keys = list(q.partition_by)
    if q.group_by:
        parts = int(p.df.group_by(list(q.group_by)).agg(pl.struct(keys).n_unique().alias("n"))["n"].max())
    else:
        parts = p.df.select(keys).n_unique()
    return p.times.n_unique() * parts


class WorkloadRun:
    """Every query of a workload over one stream of time-ordered batches (``push`` then ``finish``).

    All queries read the same batches (one type and time column pair, one prepared input): one
    :class:`SharedRun` per group in ``shared`` and one ``Choice.open`` run (the path ``cepvec.run``
    takes) per other query. ``preps`` gives each query its window in the input's unit and the output
    conventions. Used by :func:`execute` (local) and by the workload kernel of ``mapInArrow``.
    """

    def __init__(self, queries: dict[str, Query], preps: dict[str, Prepared], choices: dict[str, Choice], *,
                 numeric: str = "int64", shared: tuple[tuple[str, ...], ...] = ()):
        self.names = list(queries)
        self.preps = preps
        self.runs: list[tuple[str, object, tuple[str, ...] | None]] = []  # (name for errors, run, shared names)
        in_shared = set()
        for names in shared:
            p = preps[names[0]]
            # SUM / AVG of a float attribute with exact counts: on the query's own path (runs_shared)
            names = tuple(n for n in names if runs_shared(queries[n], p.df.schema, numeric))
            if names:
                run = SharedRun({n: queries[n] for n in names}, p, numeric=numeric)
                if _state_bytes(run, queries[names[0]], p) > STATE_BUDGET:
                    continue  # too many partitions for the dense shared state: each query on its own path
                if _emit_steps(queries[names[0]], p) > EMIT_STEPS_PER_EVENT * len(p.df):
                    continue  # EMIT CHANGES over groups of many partitions: each query on its own path
                self.runs.append((names[0], run, names))
                in_shared.update(names)
        for name, q in queries.items():
            if name not in in_shared:
                p = preps[name]
                run = _checked(name, choices[name].open, q, p.df.schema, w=p.w, s=p.s, numeric=numeric)
                self.runs.append((name, run, None))

    def push(self, df: pl.DataFrame, times) -> None:
        for name, run, _ in self.runs:
            _checked(name, run.push, df, times)

    def finish(self) -> dict[str, pl.DataFrame]:
        """Each query's frame, in the order of ``queries``."""
        frames: dict[str, pl.DataFrame] = {}
        for name, run, names in self.runs:
            if names is not None:
                frames.update(_checked(name, run.finish))
            else:
                frames[name] = _checked(name, run.finish, self.preps[name])
        return {n: frames[n] for n in self.names}


def execute(wl: Workload, preps: dict[str, Prepared], choices: dict[str, Choice], *, numeric: str = "int64",
            shared: tuple[tuple[str, ...], ...] = (), batches: list[int] | None = None) -> dict[str, pl.DataFrame]:
    """Push every batch once to each shared run (one per group in ``shared``) and to one run per other query."""
    by_frame: dict[int, list[str]] = {}  # id of the prepared frame -> the queries that read it
    for name in wl.queries:
        by_frame.setdefault(id(preps[name].df), []).append(name)
    frames: dict[str, pl.DataFrame] = {}
    for names in by_frame.values():
        members = set(names)
        p = preps[names[0]]
        run = WorkloadRun({n: wl.queries[n] for n in names}, preps, choices, numeric=numeric,
                          shared=tuple(g for g in shared if g[0] in members))
        times = p.times.to_numpy()
        cuts = [0] + sorted({c for c in (batches or []) if 0 <= c <= len(p.df)}) + [len(p.df)]
        for a, b in zip(cuts, cuts[1:]):
            if b > a or a == 0:
                run.push(p.df[a:b], times[a:b])
        frames.update(run.finish())
    return {name: frames[name] for name in wl.queries}


def run_many(queries, events, *, sharing: str = "auto", engine: str = "auto", numeric: str = "int64",
             time_unit: str | None = None, batches: list[int] | None = None) -> dict[str, pl.DataFrame]:
    """Evaluate many queries over one input; see :func:`cepvec.run_many`."""
    if sharing not in SHARING:
        raise CepvecPlanError(f"sharing must be one of {', '.join(map(repr, SHARING))}; found {sharing!r}")
    wl = queries if isinstance(queries, Workload) and queries.sharing == sharing else compile_workload(
        queries.queries if isinstance(queries, Workload) else queries, sharing)
    preps, choices = prepare_workload(wl, events, engine=engine, numeric=numeric, time_unit=time_unit)
    shared = wl.plan.shared_groups if sharing != "none" and engine != "reference" else ()
    return execute(wl, preps, choices, numeric=numeric, shared=shared, batches=batches)


__all__ = ["run_many", "prepare_workload", "execute", "WorkloadRun"]
