"""Compile the kernels of several queries at once, in parallel processes: :func:`warm_up`.

Numba compiles a kernel on its first call (seconds) and caches it on disk
(``NUMBA_CACHE_DIR``, or ``__pycache__`` beside the sources). Queries that use
different engine paths (linear maps, Fenwick trend path, predecessor scan)
need different kernels; compiling them one after the other on a cold cache is
what makes a first run slow. :func:`warm_up` runs each path's queries on a
small sample in its own process, so the paths compile side by side on
separate cores, and later runs in any process load them from the cache.
"""

from __future__ import annotations

import importlib
import io
import multiprocessing
import os
import time
from concurrent.futures import Future, ProcessPoolExecutor

import numpy as np
import polars as pl

from cepvec.registry import choose
from cepvec.runtime.prepare import to_polars
from cepvec.plan.ir import Query


def kernel_family(q: Query, engine: str = "auto", schema: dict | None = None) -> str:
    """Which set of kernels a run of ``q`` compiles: ``"linear"``, ``"trend"``, ``"scan"``, ``"match"`` or
    ``"reference"``."""
    return choose(q, engine, schema).path_name


def warm_up(work, *, engine: str = "auto", numeric: str = "int64", processes: int | None = None,
            skip: tuple[str, ...] = (), ahead=()) -> list[Future]:
    """Compile the kernels of ``work`` in background processes, one per kernel family.

    Parameters
    ----------
    work : iterable of (query, events)
        Query text or :class:`Query`, and a small sample of its input (a few
        dozen events with every event type of the query, the real column types).
        A workload (a :class:`~cepvec.sharing.workload.Workload`, or a dict or
        list of queries as :func:`cepvec.run_many` takes them) compiles the
        shared executor's kernels (family ``"sharing"``).
    engine, numeric : as in :func:`cepvec.run`
    processes : int or None
        Most processes to start (default: the cores available to this process,
        at least 1).
    skip : tuple of str
        Kernel families not to compile here (e.g. the one the caller compiles itself).
    ahead : sequence of dict
        Kernel specialisations (``{"module", "kernel", "signature"}``, :func:`compile_signatures`)
        compiled before the families, in the first process: the callees a kernel the caller compiles
        meanwhile reaches last (it then loads them from the cache, or waits while they compile,
        instead of compiling them itself).

    Returns
    -------
    list of concurrent.futures.Future
        With ``ahead``, first one for those specialisations (``result()``: :func:`compile_signatures`'
        list); then one per family started, ``result()`` waits for it and re-raises its error.
        Nothing is started when there is nothing ahead and the families are all skipped or only the
        reference engine runs.

    Examples
    --------
    >>> import polars as pl, cepvec
    >>> from cepvec.warmup import warm_up
    >>> ev = pl.DataFrame({"type": ["A", "B"], "time": [1, 2]})
    >>> [f.result() for f in warm_up([("RETURN COUNT(*) PATTERN SEQ(A, B)", ev)], processes=1)]
    [None]
    """
    from cepvec.api import _as_query

    from cepvec.sharing.workload import Workload

    families: dict[str, list[tuple]] = {}
    for query, events in work:
        df = to_polars(events)
        if isinstance(query, (Workload, dict, list, tuple)):  # a workload: run_many's shared executor
            queries = query.queries if isinstance(query, Workload) else query
            items = queries.items() if isinstance(queries, dict) else enumerate(queries)
            q = {str(name): _as_query(text) for name, text in items}
            fam = "sharing"
        else:
            q = _as_query(query)
            fam = kernel_family(q, engine, df.schema)
        if fam == "reference" or fam in skip:
            continue
        buf = io.BytesIO()
        df.write_ipc(buf)
        texts = {n: (x.text, x.type_col, x.time_col) for n, x in q.items()} if fam == "sharing" else \
            (q.text, q.type_col, q.time_col)
        families.setdefault(fam, []).append((texts, buf.getvalue()))
    if not families and not ahead:
        return []
    if processes is None:
        try:
            processes = len(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover (not Linux)
            processes = os.cpu_count() or 1
    pool = ProcessPoolExecutor(max_workers=max(1, min(processes, len(families) + bool(ahead))),
                               mp_context=multiprocessing.get_context("spawn"))
    futures = [pool.submit(compile_signatures, list(ahead))] if ahead else []
    futures += [pool.submit(_compile_family, jobs, engine, numeric) for jobs in families.values()]
    pool.shutdown(wait=False)  # the workers exit once their family is compiled
    return futures


def _compile_family(jobs, engine: str, numeric: str) -> None:
    """In a worker process: run every (query, sample) of one family once (compiles and caches its kernels)."""
    import warnings

    from cepvec.api import compile as compile_query, run, run_many

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for texts, ipc in jobs:
            events = pl.read_ipc(io.BytesIO(ipc))
            if isinstance(texts, dict):  # a workload
                queries = {n: compile_query(t, type_col=tc, time_col=mc) for n, (t, tc, mc) in texts.items()}
                run_many(queries, events, engine=engine, numeric=numeric)
            else:
                text, type_col, time_col = texts
                run(compile_query(text, type_col=type_col, time_col=time_col), events, engine=engine,
                    numeric=numeric)


def parse_signature(text: str) -> tuple:
    """The argument types of a kernel specialisation from their text as Numba prints them
    (``(int64, Array(int64, 1, 'C', False, aligned=True))``)."""
    from numba.core import types

    names = {name: getattr(types, name) for name in dir(types) if not name.startswith("_")}
    names["bool"] = types.boolean
    sig = eval(text, {"__builtins__": {}}, names)  # noqa: S307 (texts of our own records)
    return sig if isinstance(sig, tuple) else (sig,)


def compile_signatures(entries) -> list[float | str]:
    """Compile each kernel specialisation ``{"module", "kernel", "signature"}`` (the kernel
    ``module.kernel``, its argument types as :func:`parse_signature` reads them) into the cache, or
    load it from there: its seconds each, or why it no longer matches its kernel (a stale record)."""
    out: list[float | str] = []
    for e in entries:
        t0 = time.perf_counter()
        try:
            getattr(importlib.import_module(e["module"]), e["kernel"]).compile(parse_signature(e["signature"]))
        except Exception as err:  # noqa: BLE001 (a stale record: its callers compile what they need themselves)
            out.append(f"{e['module']}.{e['kernel']}{e['signature'][:60]}...: {err!r}"[:400])
            continue
        out.append(time.perf_counter() - t0)
    return out


def compile_kernels(query, sample, *, engine: str = "auto", numeric: str = "int64") -> None:
    """Compile (or load from the cache) in this process every kernel a run of ``query`` calls on a
    large input with ``sample``'s column types: a Spark executor's warm-up (``docs/spark.md``).

    A run of a few rows skips kernels that only large inputs reach (below ``NUMPY_BELOW`` rows some
    steps run in NumPy, below ``CODED_IDS_FROM`` partition keys go through a Polars join, sorted
    input is not sorted, a ``WITHIN`` window longer than the sample's time span is dropped, a
    partition with fewer events than a match is not run, below ``threads.MIN_EVENTS_PER_THREAD``
    events a run takes one thread). Here ``sample`` runs with those thresholds at 0
    (``paths.linear.run.SKIP_SHORT_SEGMENTS`` off), as it is, and with its rows in reverse time order
    and its window kept (``cepvec.api.DROP_COVERING_WINDOW`` off); where this process has several
    threads, both once on one thread and once split in threads (long columns in halves; String keys once
    in shares of the keys, once in halves of the rows). Not while
    other cepvec runs are in progress in this process (the thresholds are module settings).

    Parameters
    ----------
    query : query text, :class:`Query`, or a workload (as :func:`cepvec.run_many` takes it)
    sample : a few dozen events with every event type of the query, the real column types
    engine, numeric : as in :func:`cepvec.run`
    """
    import warnings

    from cepvec import api
    from cepvec.kernels import _jit
    from cepvec.paths.linear import run as linear_run
    from cepvec.runtime import partitions, threads

    from cepvec.sharing.workload import Workload

    df = to_polars(sample)
    many = isinstance(query, (Workload, dict, list, tuple))
    saved = (_jit.NUMPY_BELOW, partitions.CODED_IDS_FROM, api.DROP_COVERING_WINDOW, linear_run.SKIP_SHORT_SEGMENTS,
             threads.MIN_EVENTS_PER_THREAD, partitions.DIRECT_HALVES_FROM, partitions.ROWS_PER_KEY_FOR_HALVES,
             partitions.SHARES_FROM_KEYS, partitions.HALVES_UP_TO_KEYS)
    _jit.NUMPY_BELOW = partitions.CODED_IDS_FROM = 0
    linear_run.SKIP_SHORT_SEGMENTS = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for split in (False, True) if threads.n_threads() > 1 else (False,):
                if split:  # what only a run in threads calls (a long column's halves, the ids beside the codes)
                    threads.MIN_EVENTS_PER_THREAD = partitions.DIRECT_HALVES_FROM = 0
                    partitions.ROWS_PER_KEY_FOR_HALVES = 0
                for events, drop_window in ((df, True), (df.reverse(), False)):
                    api.DROP_COVERING_WINDOW = drop_window
                    if split and not drop_window:  # String keys in halves (the sample's few rows hold
                        # distinct keys, which the first split run numbers in shares)
                        partitions.SHARES_FROM_KEYS, partitions.HALVES_UP_TO_KEYS = np.inf, np.inf
                    if many:
                        api.run_many(query.queries if isinstance(query, Workload) else query, events,
                                     engine=engine, numeric=numeric)
                    else:
                        api.run(query, events, engine=engine, numeric=numeric)
    finally:
        (_jit.NUMPY_BELOW, partitions.CODED_IDS_FROM, api.DROP_COVERING_WINDOW, linear_run.SKIP_SHORT_SEGMENTS,
         threads.MIN_EVENTS_PER_THREAD, partitions.DIRECT_HALVES_FROM, partitions.ROWS_PER_KEY_FOR_HALVES,
         partitions.SHARES_FROM_KEYS, partitions.HALVES_UP_TO_KEYS) = saved
