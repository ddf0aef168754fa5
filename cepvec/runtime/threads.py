"""Threads for the Numba paths: partitions (segments) run side by side in one process.

The kernels are compiled ``nogil`` and a call writes only the state rows of its own
segments, so contiguous ranges of segments run in a thread each. ``CEPVEC_NUM_THREADS``
sets the number of threads (default: the cores this process may use, at most 8, and at most
``NUMBA_NUM_THREADS`` when that is set); a range
gets at least ``MIN_EVENTS_PER_THREAD`` events, so small inputs stay on one thread.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

#: Fewer events than this per thread are not worth a thread's hand-off.
MIN_EVENTS_PER_THREAD = 50_000
#: Ranges of partitions per thread for a kernel call over many partitions (:func:`split_ranges`).
RANGES_PER_THREAD = 4
_POOL: ThreadPoolExecutor | None = None
_BACKGROUND: ThreadPoolExecutor | None = None
_PIECES: ThreadPoolExecutor | None = None
_LOCAL = threading.local()  # .worker: this thread is one of the pool's (nested map_threads runs inline)
_LOCK = threading.Lock()


class _Pending:
    """Jobs submitted to an executor and not finished yet (a job counts itself out before its
    result is set, so a caller that waited for it sees it gone)."""

    def __init__(self) -> None:
        self.n = 0

    def submit(self, executor: ThreadPoolExecutor, fn, *args) -> Future:
        def job():
            try:
                return fn(*args)
            finally:
                with _LOCK:
                    self.n -= 1

        with _LOCK:
            self.n += 1
        return executor.submit(job)


_IN_POOL = _Pending()  # in_pool pieces (map_threads runs inline meanwhile)
_IN_BACKGROUND = _Pending()  # in_background jobs (the pool is theirs: other threads' map_threads run inline)


def _mark_worker() -> None:
    _LOCAL.worker = True


def n_threads() -> int:
    """Threads a run may use: ``CEPVEC_NUM_THREADS``, else the usable cores (those of this thread's
    affinity; at most 8), and at most ``NUMBA_NUM_THREADS`` when that is set (Numba's own cap, which
    users set to limit the threads of compiled code)."""
    env = _env_count("CEPVEC_NUM_THREADS")
    if env:
        return env
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover (not Linux)
        n = os.cpu_count() or 1
    numba_cap = _env_count("NUMBA_NUM_THREADS")
    if numba_cap:
        n = min(n, numba_cap)
    return max(1, min(n, 8))


def _env_count(name: str) -> int | None:
    """The positive integer in the environment variable ``name`` (None: unset or empty)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{name}={text!r}: expected a positive integer (the number of threads), "
                         f"e.g. {name}=2; unset it to use every usable core")
    return value


def _pool(n: int) -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None or _POOL._max_workers < n:  # noqa: SLF001
        _POOL = ThreadPoolExecutor(max_workers=n, thread_name_prefix="cepvec", initializer=_mark_worker)
    return _POOL


def _mark_background() -> None:
    _LOCAL.background = True


def in_background(fn) -> Future:
    """``fn()`` in the one background thread of this process: a pipeline stage (the caller prepares
    the next piece of input meanwhile and waits for the Future before it submits again). Called
    from that thread itself, ``fn`` runs at once (a job waiting on a job queued behind it would
    never finish)."""
    global _BACKGROUND
    if getattr(_LOCAL, "background", False):
        done: Future = Future()
        done.set_result(fn())
        return done
    if _BACKGROUND is None:
        _BACKGROUND = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cepvec-pipeline",
                                         initializer=_mark_background)
    return _IN_BACKGROUND.submit(_BACKGROUND, fn)


def in_pool(fn, *args) -> Future:
    """``fn(*args)`` in a thread of the piece pool: independent pieces of work side by side (a
    ``map_threads`` inside ``fn`` runs on that thread, so pool threads never wait on the pool;
    nor does a ``map_threads`` of the caller while such pieces are pending: it runs inline).
    The pool has one thread more than :func:`n_threads`: a piece prepares its arrays in NumPy
    (holding the GIL often) before its kernel (without it), and the extra thread prepares the next
    piece while the others run kernels (the scan path on 2 cores: 10-14% less time, interleaved
    runs, docs/performance-log.md, session 31)."""
    global _PIECES
    n = n_threads() + 1
    if _PIECES is None or _PIECES._max_workers != n:  # noqa: SLF001 (CEPVEC_NUM_THREADS changed)
        if _PIECES is not None:
            _PIECES.shutdown(wait=False)  # its pending pieces finish
        _PIECES = ThreadPoolExecutor(max_workers=n, thread_name_prefix="cepvec-piece", initializer=_mark_worker)
    return _IN_POOL.submit(_PIECES, fn, *args)


def fans_out() -> bool:
    """Whether :func:`map_threads` called here may run items on several threads: not from a pool
    thread, nor while ``in_pool`` pieces are pending, nor outside the background thread while a
    background job is pending (see there)."""
    return not (getattr(_LOCAL, "worker", False) or _IN_POOL.n
                or (_IN_BACKGROUND.n and not getattr(_LOCAL, "background", False)))


def map_threads(fn, items, events: int | None = None, costs=None) -> list:
    """``[fn(x) for x in items]``, in threads when there are several items (results in order);
    on one thread when ``events`` (the work the items share) is below ``MIN_EVENTS_PER_THREAD``,
    when called from a pool thread, while ``in_pool`` pieces are pending, or outside the background
    thread while a background job is pending (the pool is busy: the caller prepares the next piece
    of a pipeline on its own thread while the piece before runs in the pool). ``costs`` (one per
    item): the threads take the items in decreasing cost, each the next one when it is free
    (longest first: a long item does not start last).

    The calling thread takes items too, beside ``k - 1`` pool threads: it runs already, where a pool
    thread first has to wake (0.1-0.2 ms on this project's virtual machines, at each of the ten or so
    calls of a run), and it returns once the last item is done, without waiting for a helper that woke
    too late to take one. An error of ``fn`` is raised once every item has run, the first in item
    order; an interrupt (``KeyboardInterrupt``) at once, the items not started are dropped."""
    items = list(items)
    k = min(len(items), n_threads()) if events is None or events >= MIN_EVENTS_PER_THREAD else 1
    if not fans_out():
        k = 1
    if k <= 1:
        return [fn(x) for x in items]
    order = iter(range(len(items)) if costs is None
                 else np.argsort(-np.asarray(costs, np.float64), kind="stable").tolist())
    take = threading.Lock()
    results: list = [None] * len(items)
    errors: dict = {}
    left = [len(items)]
    done = threading.Event()

    def drain(caller: bool):  # the next item not taken yet, until none is left
        while True:
            with take:
                i = next(order, None)
            if i is None:
                return
            try:
                results[i] = fn(items[i])
            except BaseException as e:  # raised by the caller once every item ran (an interrupt at once)
                if caller and not isinstance(e, Exception):
                    raise
                errors[i] = e
            with take:
                left[0] -= 1
                if not left[0]:
                    done.set()

    pool = _pool(k - 1)
    for _ in range(k - 1):
        pool.submit(drain, False)
    was = getattr(_LOCAL, "worker", False)
    _LOCAL.worker = True  # a map_threads inside fn runs inline here too, as in the pool's threads
    try:
        drain(True)
    except BaseException:
        with take:  # the helpers take no further item
            for _ in order:
                pass
        raise
    finally:
        _LOCAL.worker = was
    done.wait()
    if errors:
        raise errors[min(errors)]
    return results


#: Bytes between the rows of :func:`thread_rows`: a cache line.
CACHE_LINE = 64


def thread_rows(k: int, n: int, fill: int | None = 0, dtype=np.int64) -> np.ndarray:
    """A ``(k, n)`` array of ``fill`` (None: not filled) whose rows, one per thread, lie on cache lines
    of their own: the counters and positions that threads update row by row. Rows of one plain array
    share a line when ``n`` is small, and two threads writing one line take turns owning it: the
    output order of 2·10^6 cells of one group on two threads (``output._scatter_by_rank``) took 120
    ms, padded 12 ms; of four groups 38 against 16 ms. Each row is a contiguous 1-d view (the
    kernels' signature is the same)."""
    item = np.dtype(dtype).itemsize
    stride = -(-n * item // CACHE_LINE) * CACHE_LINE // item + CACHE_LINE // item
    rows = np.empty((k, stride), dtype) if fill is None else np.full((k, stride), fill, dtype)
    return rows[:, :n]


def halves(n: int) -> list[tuple[int, int]]:
    """Rows ``[0, n)`` as two halves, one per thread, when there are two threads, each half gets
    ``MIN_EVENTS_PER_THREAD`` rows and :func:`map_threads` would run them apart (:func:`fans_out`: a
    column cut in halves and merged on one thread cost more than one pass); else as one range."""
    if n_threads() < 2 or n < 2 * MIN_EVENTS_PER_THREAD or not fans_out():
        return [(0, n)]
    return [(0, n // 2), (n // 2, n)]


def cut(n: int, k: int) -> list[tuple[int, int]]:
    """Rows ``[0, n)`` as ``k`` contiguous ranges of about equal length (the same ``n`` and ``k``, the
    same ranges: a step that reads per-range results of another, such as the counts of
    :func:`pieces`, finds its ranges from their number)."""
    return [(n * i // k, n * (i + 1) // k) for i in range(k)]


def pieces(n: int, most: int | None = None) -> list[tuple[int, int]]:
    """Rows ``[0, n)`` as ``RANGES_PER_THREAD`` ranges per thread (at most ``most``, at least two)
    where :func:`halves` cuts them in two, else as one range. The threads take the pieces as they
    come free: the two vCPUs of this project's machines often run at different speeds for seconds
    (the same loop pinned to each took 11 and 22 ms in turn, docs/performance-log.md, session 51),
    and two fixed halves wait on the slower one, where pieces let the faster thread take more."""
    if len(halves(n)) < 2:
        return [(0, n)]
    k = n_threads() * RANGES_PER_THREAD
    if most is not None:
        k = max(2, min(k, most))
    return cut(n, k)


def split_ranges(sizes: np.ndarray, min_per_thread: int | None = None, per_thread: int = 1) -> list[tuple[int, int]]:
    """Contiguous ranges of segments with about equal numbers of events, ``per_thread`` per thread
    (a thread gets at least ``min_per_thread`` events: less for a path whose events cost more).

    Several ranges per thread, handed out longest first (``map_threads(..., costs=)``), even out
    what equal numbers of events do not: segments whose events cost more (a large partition searches
    deeper trees), and a segment longer than a range (it is one range of its own)."""
    n = len(sizes)
    total = int(np.sum(sizes))
    nt = min(n_threads(), total // max(1, MIN_EVENTS_PER_THREAD if min_per_thread is None else min_per_thread))
    k = min(n, nt * per_thread) if nt > 1 else 1
    if k <= 1:
        return [(0, n)]
    cum = np.cumsum(sizes)
    cuts = [0] + [int(np.searchsorted(cum, total * i / k)) + 1 for i in range(1, k)] + [n]
    cuts = sorted(set(min(max(x, 0), n) for x in cuts))
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]
