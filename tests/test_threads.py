"""Partitions in threads (cepvec.runtime.threads): results do not depend on the number of threads.

The threshold of events per thread is lowered so that tiny inputs split into many ranges of
segments; every path with threads must give the rows of a single-thread run, errors included.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepvec
from cepvec.kernels import _jit
from cepvec.paths.linear import run as linear_run
from cepvec.paths.scan.run import ScanRun
from cepvec.paths.trend.run import TrendStream
from cepvec.registry import run_engine
from cepvec.runtime import partitions, threads
from cepvec.runtime.prepare import prepare
from tests.strategies import examples

pytestmark = pytest.mark.filterwarnings("ignore::cepvec.errors.CepvecWarning")

QUERIES = [
    ("aseq", "RETURN id, COUNT(*), SUM(B.x) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 6 SLIDE 2"),
    ("aseq", "RETURN id, COUNT(*) PATTERN SEQ(A, NOT D, B) WHERE [id] GROUP-BY id WITHIN 5 EMIT CHANGES"),
    # three streams (exact counts, float sums, MIN / MAX order keys) whose cells are put side by side
    ("aseq", "RETURN id, COUNT(*), MIN(a.x), SUM(b.y) PATTERN SEQ(A a, B b, C c) WHERE [id] GROUP-BY id "
             "WITHIN 6 SLIDE 2"),
    ("greta", "RETURN id, COUNT(*), MAX(A.x) PATTERN A+ WHERE [id] AND A.x < NEXT(A).x GROUP-BY id WITHIN 8"),
    ("greta", "RETURN id, COUNT(*) PATTERN SEQ(A+, B) WHERE [id] AND A.x > NEXT(A).x GROUP-BY id "
              "WITHIN 6 SLIDE 3"),
    ("greta", "RETURN id, COUNT(*) PATTERN SEQ(A+, B) WHERE [id] AND A.x > NEXT(A).x GROUP-BY id"),
    # a float SUM beside exact counts: the trend kernel's second block of values
    ("greta", "RETURN id, COUNT(*), SUM(A.y) PATTERN A+ WHERE [id] AND A.x < NEXT(A).x GROUP-BY id WITHIN 6 "
              "SLIDE 2"),
    # predecessor scan (an edge predicate the Fenwick path refuses): pieces scan in the background
    ("greta", "RETURN id, COUNT(*), MIN(A.x) PATTERN SEQ(A+, B) WHERE [id] AND A.x + NEXT(A).x != 3 "
              "GROUP-BY id WITHIN 6 SLIDE 3"),
    ("greta", "RETURN id, COUNT(*) PATTERN A+ WHERE [id] AND A.x + NEXT(A).x != 3 GROUP-BY id WITHIN 4 "
              "EMIT CHANGES"),
]


def _events(seed: int, n: int, n_ids: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame({
        "type": rng.choice(list("ABCD"), n), "time": np.sort(rng.integers(0, n // 2 + 1, n)),
        "id": rng.integers(0, n_ids, n), "x": rng.integers(0, 5, n),
        "y": rng.integers(-8, 8, n) / 4,
    })


def _run(text, engine, df, n, monkeypatch):
    monkeypatch.setenv("CEPVEC_NUM_THREADS", str(n))
    return cepvec.run(text, df, engine=engine)


@pytest.mark.parametrize("engine,text", QUERIES)
@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(0, 300), n_ids=st.integers(1, 40))
def test_threads_give_the_rows_of_one_thread(engine, text, seed, n, n_ids):
    df = _events(seed, n, n_ids)
    with pytest.MonkeyPatch.context() as mp:
        one = _run(text, engine, df, 1, mp)
        mp.setattr(threads, "MIN_EVENTS_PER_THREAD", 1)
        mp.setattr(_jit, "NUMPY_BELOW", 0)  # the kernels' output order (one thread: NumPy's)
        mp.setattr(partitions, "DIRECT_HALVES_FROM", 0)  # integer keys numbered in two halves
        mp.setattr(partitions, "ROWS_PER_KEY_FOR_HALVES", 0)
        mp.setattr(ScanRun, "CHUNK", 16)  # many pieces: each scans while the next is encoded
        mp.setattr(TrendStream, "CHUNK", 16)  # SLIDE: each piece runs while the next is encoded
        for cls in (ScanRun, TrendStream):  # pieces of at least one event per partition seen so far
            mp.setattr(cls, "EVENTS_PER_PARTITION", 1)
        many = _run(text, engine, df, 4, mp)
    assert one.equals(many)


@pytest.mark.parametrize("text", [t for engine, t in QUERIES if engine == "aseq"])
@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(0, 300), n_ids=st.integers(1, 40),
       categorical=st.booleans(),
       keys=st.sampled_from([None, "string beside", "string halves", "string shares", "string shares nulls",
                             "sparse int", "float"]),
       data=st.data())
def test_threads_in_batches_give_the_rows_of_one_thread(text, seed, n, n_ids, categorical, keys, data):
    """The linear path on several threads (the partition ids beside the type codes of a String type
    column, a Categorical's codes in halves; String ids too, in one pass beside the codes, or before
    them in two halves of the rows or two shares of the keys; sparse integer and float ids from hash
    tables) with the input cut into batches anywhere (keys of an earlier batch keep their ids; a
    batch's new ones come after), the rows counted and filled in two pieces or up to eight: the rows
    of one thread, one batch."""
    df = _events(seed, n, n_ids)
    if categorical:
        df = df.with_columns(pl.col("type").cast(pl.Categorical))
    if keys and keys.startswith("string"):
        key = pl.format("user-{}", "id")
        df = df.with_columns((pl.when(pl.col("id") % 3 != 0).then(key) if "nulls" in keys else key).alias("id"))
    elif keys == "sparse int":  # a key range too wide for a direct table: hashed
        df = df.with_columns(pl.col("id") * 0x9E3779B97F4A7C1 + 12345)
    elif keys == "float":
        df = df.with_columns(pl.when(pl.col("id") != 3).then(pl.col("id") * 1.37 + 0.123).otherwise(float("nan")))
    q = cepvec.compile(text)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, n), max_size=3), label="cuts")))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CEPVEC_NUM_THREADS", "1")
        one = run_engine(q, prepare(q, df), "aseq")
        mp.setenv("CEPVEC_NUM_THREADS", "2")
        mp.setattr(threads, "MIN_EVENTS_PER_THREAD", 1)
        mp.setattr(_jit, "NUMPY_BELOW", 0)
        mp.setattr(partitions, "CODED_IDS_FROM", 0)
        mp.setattr(partitions, "SHARES_FROM_KEYS", 0 if keys and "shares" in keys else np.inf)
        mp.setattr(partitions, "HALVES_UP_TO_KEYS",
                   {"string beside": 0, "string halves": np.inf}.get(keys, partitions.HALVES_UP_TO_KEYS))
        # the rows counted and filled in up to eight pieces (one row of counts per partition each), or two
        mp.setattr(linear_run, "PIECE_ROWS_PER_KEY", data.draw(st.sampled_from([1, 10**9]), label="piece rows"))
        many = run_engine(q, prepare(q, df), "aseq", batches=cuts)
    assert one.equals(many)


@pytest.mark.parametrize("n_ids", [3, 250])  # (halves of the rows; one pass beside the codes)
def test_string_ids_are_sampled_once_a_run(monkeypatch, n_ids):
    """The linear path asks how a String key column is numbered (``string_numbering``, a sample of its
    rows) to choose where the ids run, and ``ids`` takes that answer: one sample a run."""
    monkeypatch.setenv("CEPVEC_NUM_THREADS", "2")
    monkeypatch.setattr(threads, "MIN_EVENTS_PER_THREAD", 1)
    monkeypatch.setattr(partitions, "CODED_IDS_FROM", 0)
    asked = []
    numbering = partitions._numbering
    monkeypatch.setattr(partitions, "_numbering", lambda *a: asked.append(a[0]) or numbering(*a))
    df = _events(3, 300, n_ids).with_columns(pl.format("user-{}", "id").alias("id"))
    q = cepvec.compile("RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 50")
    run_engine(q, prepare(q, df), "aseq")
    assert asked == [300]


def test_split_ranges_balances_events(monkeypatch):
    monkeypatch.setenv("CEPVEC_NUM_THREADS", "3")
    monkeypatch.setattr(threads, "MIN_EVENTS_PER_THREAD", 10)
    sizes = np.array([50, 1, 1, 1, 50, 1, 1, 50])
    ranges = threads.split_ranges(sizes)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(sizes)
    assert all(a < b for a, b in ranges) and all(r[1] == s[0] for r, s in zip(ranges, ranges[1:]))
    assert len(ranges) == 3
    monkeypatch.setattr(threads, "MIN_EVENTS_PER_THREAD", 10**9)
    assert threads.split_ranges(sizes) == [(0, len(sizes))]


@pytest.mark.parametrize("k, n", [(2, 1), (2, 3), (3, 8), (2, 9), (4, 100)])
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_thread_rows_lie_on_cache_lines_of_their_own(k, n, dtype):
    rows = threads.thread_rows(k, n, fill=7, dtype=dtype)
    assert rows.shape == (k, n) and rows.dtype == dtype and (rows == 7).all()
    item = np.dtype(dtype).itemsize
    lines = [set(range((r.ctypes.data) // threads.CACHE_LINE, (r.ctypes.data + n * item - 1) // threads.CACHE_LINE + 1))
             for r in rows]
    assert all(not (lines[i] & lines[j]) for i in range(k) for j in range(i + 1, k))  # no line holds two rows
    assert all(r.flags.c_contiguous for r in rows)  # each row a contiguous 1-d view: one kernel signature


def test_ranges_per_thread_are_taken_longest_first(monkeypatch):
    """``per_thread`` ranges per thread cover the segments in order; ``map_threads`` starts them in
    decreasing cost and returns the results in item order."""
    import threading

    monkeypatch.setenv("CEPVEC_NUM_THREADS", "2")
    monkeypatch.setattr(threads, "MIN_EVENTS_PER_THREAD", 10)
    sizes = np.array([3] * 40 + [200] + [3] * 40)
    ranges = threads.split_ranges(sizes, per_thread=4)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(sizes)
    assert all(r[1] == s[0] for r, s in zip(ranges, ranges[1:]))
    assert 4 <= len(ranges) <= 8
    costs = [int(sizes[a:b].sum()) for a, b in ranges]
    started, lock, gate = [], threading.Lock(), threading.Event()

    def job(r):
        with lock:
            started.append(r)
        gate.wait(5)  # the first two started hold both threads until every job is queued
        return r

    threading.Timer(0.2, gate.set).start()
    assert threads.map_threads(job, ranges, costs=costs) == ranges
    first = ranges[int(np.argmax(costs))]
    assert first in started[:2]  # the range with the long segment started first


def test_an_overflow_in_a_later_range_is_raised(monkeypatch):
    """Exact counts overflow in one partition among many: the threaded run raises as one thread does."""
    n = 400
    df = pl.DataFrame({"type": ["A"] * n, "time": np.arange(n), "id": np.r_[np.zeros(n - 100, int), np.arange(100)],
                       "x": np.arange(n)})
    text = "RETURN id, COUNT(*) PATTERN A+ WHERE [id] AND A.x < NEXT(A).x GROUP-BY id"
    monkeypatch.setenv("CEPVEC_NUM_THREADS", "4")
    monkeypatch.setattr(threads, "MIN_EVENTS_PER_THREAD", 1)
    with pytest.raises(cepvec.errors.CepvecOverflowError):
        cepvec.run(text, df, engine="greta")


@settings(max_examples=examples(200), deadline=None)
@given(vals=st.lists(st.integers(-5, 30), min_size=0, max_size=60),
       known=st.lists(st.integers(-5, 30), unique=True, max_size=10))
def test_partition_ids_in_two_threads_are_those_of_one(vals, known):
    """The ids of an integer key column from a direct table (cepvec.runtime.partitions._direct_ids),
    entered and written in one pass, or filled in two halves on two threads and then read: the ids
    and new keys, in order of first appearance, that a plain loop gives."""
    from cepvec.runtime.partitions import _direct_ids

    vals = np.array(vals, np.int64)
    n0 = len(known)
    seen, want_ids, want_new = {k: i for i, k in enumerate(known)}, [], []
    for i, v in enumerate(vals.tolist()):
        if v not in seen:
            seen[v] = len(seen)
            want_new.append(i)
        want_ids.append(seen[v])
    for how in ("one pass", "halves, then read"):
        direct = np.full(36, -1, np.int64)
        direct[np.array(known, np.int64) + 5] = np.arange(n0)
        ids = np.empty(len(vals), np.int64)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("CEPVEC_NUM_THREADS", "2" if how.startswith("halves") else "1")
            mp.setattr(threads, "MIN_EVENTS_PER_THREAD", 1)
            mp.setattr(partitions, "ROWS_PER_KEY_FOR_HALVES", 0)
            mp.setattr(partitions, "DIRECT_HALVES_FROM", 0)
            new = _direct_ids(vals, -5, direct, n0, ids)
        assert ids.tolist() == want_ids, how
        assert new.tolist() == want_new, how
        assert all(direct[v + 5] == i for v, i in seen.items()), how


@settings(max_examples=examples(200), deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 6)), max_size=40),
       perm_seed=st.integers(0, 2**32 - 1), n_threads=st.sampled_from(["1", "2", "3"]))
def test_output_order_by_rank_is_a_sort(rows, perm_seed, n_threads):
    """The output order of result cells (cepvec.runtime.output._order_by_rank: counting sort by the
    rank of the partition in row ranges, one per thread; keys checked to rise within each range
    and across ranges, else a full sort) is the (rank, key) order, whatever the arrival order."""
    from cepvec.runtime.output import _order_by_rank

    pid = np.array([p for p, _ in rows], np.int64)
    key = np.array([k for _, k in rows], np.int64)
    rank = np.random.default_rng(perm_seed).permutation(6).astype(np.int64)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CEPVEC_NUM_THREADS", n_threads)
        mp.setattr(threads, "MIN_EVENTS_PER_THREAD", 1)
        mp.setattr(_jit, "NUMPY_BELOW", 0)
        order, per_rank = _order_by_rank(rank, pid, key)
    expect = sorted(range(len(rows)), key=lambda i: (rank[pid[i]], key[i], i))
    got = order.tolist()
    assert per_rank.tolist() == np.bincount(rank[pid], minlength=6).tolist()
    assert sorted(got) == list(range(len(rows)))
    assert [(rank[pid[i]], key[i]) for i in got] == [(rank[pid[i]], key[i]) for i in expect]


@settings(max_examples=examples(200), deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 6)), max_size=40), cuts=st.lists(st.integers(0, 40)),
       perm_seed=st.integers(0, 2**32 - 1), n_threads=st.sampled_from(["1", "2", "3"]), n_float=st.integers(0, 2),
       numpy_below=st.sampled_from([0, 10**9]))
def test_cells_moved_from_chunks_by_rank_are_sorted(rows, cuts, perm_seed, n_threads, n_float, numpy_below):
    """Cells in chunks moved straight to their output place (cepvec.runtime.output._scatter_by_rank:
    counting sort by the rank of the partition, row ranges across chunks, one per thread; a NumPy sort
    below ``NUMPY_BELOW`` rows): each row's key and values land in (rank, key) order, stably; None when
    a partition's keys do not rise."""
    from cepvec.runtime import output
    from cepvec.runtime.output import _scatter_by_rank

    pid = np.array([p for p, _ in rows], np.int64)
    key = np.array([k for _, k in rows], np.int64)
    vi = np.stack([np.arange(len(rows)), 10 * key], axis=1).astype(np.int64).reshape(len(rows), 2)
    vf = (np.arange(len(rows) * n_float, dtype=np.float64) / 4).reshape(len(rows), n_float)
    bounds = sorted({0, len(rows), *(c for c in cuts if c < len(rows))})
    chunks = [(pid[a:b], key[a:b], vi[a:b], vf[a:b]) for a, b in zip(bounds, bounds[1:])] or [(pid, key, vi, vf)]
    rank = np.random.default_rng(perm_seed).permutation(6).astype(np.int64)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CEPVEC_NUM_THREADS", n_threads)
        mp.setattr(threads, "MIN_EVENTS_PER_THREAD", 1)
        mp.setattr(output._jit, "NUMPY_BELOW", numpy_below)
        got = _scatter_by_rank(rank, chunks)
    rising = all(len(set(key[pid == p])) == int(np.sum(pid == p)) and
                 (np.diff(key[pid == p]) > 0).all() for p in range(6))
    if not rising:
        assert got is None
        return
    expect = sorted(range(len(rows)), key=lambda i: (rank[pid[i]], key[i], i))
    out_key, out_vi, out_vf, per_rank = got
    assert per_rank.tolist() == np.bincount(rank[pid], minlength=6).tolist()
    assert out_key.tolist() == key[expect].tolist()
    assert out_vi.T.tolist() == vi[expect].tolist()
    assert out_vf.shape == (n_float, len(rows)) and out_vf.T.tolist() == vf[expect].tolist()


def test_a_background_job_may_start_another():
    """A pipeline stage that itself hands work to the background thread (the linear path codes the
    type column there while the partition ids are taken) runs it at once instead of waiting forever
    on the one worker it occupies."""
    inner = threads.in_background(lambda: threads.in_background(lambda: 7).result(timeout=5))
    assert inner.result(timeout=10) == 7


def _side_by_side() -> bool:
    """Whether ``map_threads`` runs its two items side by side: each waits for the other (on one
    thread the first one's wait times out)."""
    import threading

    meet = threading.Barrier(2, timeout=1)

    def item(_):
        try:
            meet.wait()
        except threading.BrokenBarrierError:
            return False
        return True

    return all(threads.map_threads(item, [1, 2]))


def test_the_pool_is_the_background_jobs_while_it_is_pending(monkeypatch):
    """While a pipeline stage runs in the background, ``map_threads`` on the calling thread runs
    inline (a job queued in the pool behind the stage's kernel calls would wait for them); the
    stage's own ``map_threads`` takes the pool, and the caller's does again once the stage is done."""
    import threading

    monkeypatch.setenv("CEPVEC_NUM_THREADS", "2")
    gate = threading.Event()
    job = threads.in_background(lambda: (gate.wait(10), _side_by_side())[1])
    during = _side_by_side()
    gate.set()
    inside = job.result(timeout=10)
    after = _side_by_side()  # at once: the job counted itself out before its result was set
    assert (during, inside, after) == (False, True, True)


def test_the_caller_takes_items_beside_the_pool(monkeypatch):
    """``map_threads`` runs items on the calling thread too (it is awake; a pool thread first wakes),
    returns the results in item order and raises the first error in item order once every item ran."""
    import threading

    monkeypatch.setenv("CEPVEC_NUM_THREADS", "2")
    meet = threading.Barrier(2, timeout=5)
    names = threads.map_threads(lambda _: (meet.wait(), threading.current_thread().name)[1], [1, 2])
    assert threading.current_thread().name in names and any(n.startswith("cepvec_") for n in names)
    ran = []

    def item(x):
        ran.append(x)
        if x in (2, 3):
            raise ValueError(f"item {x}")
        return x

    with pytest.raises(ValueError, match="item 2"):
        threads.map_threads(item, [0, 1, 2, 3, 4], costs=[1, 1, 1, 5, 1])  # item 3 runs first
    assert sorted(ran) == [0, 1, 2, 3, 4]
    assert threads.map_threads(lambda x: x * x, range(7), costs=range(7)) == [x * x for x in range(7)]


def test_a_carry_not_the_kernels_is_an_internal_error(monkeypatch):
    """The trend path takes a piece's carry before its kernel call runs, from the first window the call
    leaves open (TrendStream._events_of); a kernel that left another one open stops the run."""
    orig = TrendStream._events_of

    def off_by_one(self, new, limit, n_parts):
        ev = orig(self, new, limit, n_parts)
        if ev is not None and "__next_k" in ev:
            ev["__next_k"] += 1
        return ev

    monkeypatch.setattr(TrendStream, "_events_of", off_by_one)
    q = cepvec.compile("RETURN id, COUNT(*) PATTERN A+ WHERE [id] AND A.x < NEXT(A).x GROUP-BY id WITHIN 6 SLIDE 3")
    with pytest.raises(RuntimeError, match="internal error: the kernel left window .* the carry was taken for"):
        run_engine(q, prepare(q, _events(1, 200, 3)), "greta", batches=[50, 100, 150])



@pytest.mark.parametrize("layout", ["segment_layout", "segment_layout_numpy"])
@settings(max_examples=examples(100), deadline=None)
@given(data=st.data(), n=st.integers(1, 40), two=st.booleans(), carried=st.booleans(), flagged=st.booleans(),
       min_events=st.integers(0, 4))
def test_the_segment_layout_is_that_of_its_numpy_steps(layout, data, n, two, carried, flagged, min_events):
    """``kernels/linear/encode.py::segment_layout`` (where each partition's carried and new events of
    each range of rows go, which segments the kernels visit and run), and its NumPy version for few
    rows, against the NumPy steps the kernel replaced."""
    from cepvec.kernels import linear as K

    counts = st.lists(st.integers(0, 5), min_size=n, max_size=n)
    first = np.array(data.draw(counts, label="first"), np.int64)
    second = np.array(data.draw(counts, label="second") if two else [], np.int64)
    n_carry = np.array(data.draw(counts, label="carry") if carried else [], np.int64)
    also = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)) if flagged else [], np.bool_)
    starts = threads.thread_rows(2 if two else 1, n, fill=None)
    seg_start, total, seg, run = getattr(K, layout)(n_carry, first, second, also, min_events, starts)

    carry = n_carry if carried else np.zeros(n, np.int64)
    count = carry + first + (second if two else 0)
    want_start = np.concatenate([[0], np.cumsum(count)[:-1]])
    assert seg_start.tolist() == want_start.tolist() and total == count.sum()
    assert starts[0].tolist() == (want_start + carry).tolist()
    if two:
        assert starts[1].tolist() == (want_start + carry + first).tolist()
    on = np.flatnonzero((count > 0) | (also if flagged else False))
    want_seg = [on, want_start[on], want_start[on] + count[on], carry[on]]
    want_run = [a[count[on] >= min_events] for a in want_seg]
    assert [a.tolist() for a in seg] == [a.tolist() for a in want_seg]
    assert [a.tolist() for a in run] == [a.tolist() for a in want_run]


@settings(max_examples=examples(100), deadline=None)
@given(data=st.data(), n=st.integers(0, 60), n_parts=st.integers(1, 6), nw=st.integers(0, 2))
def test_the_scatter_into_partition_order_in_numpy_is_the_kernels(data, n, n_parts, nw):
    """``fill_events_numpy`` (few rows) writes the kept rows where ``fill_events`` does, each partition's
    in their order from its start, and advances the starts alike."""
    from cepvec.kernels import linear as K

    rows = st.lists(st.integers(0, n_parts - 1), min_size=n, max_size=n)
    pid = np.array(data.draw(rows, label="pid"), np.int64)
    cls = np.array(data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n), label="cls"), np.int32)
    cls_prog = np.array([-1, 0, 3], np.int64)  # class 0: dropped
    t, w = np.arange(n, dtype=np.int64) * 10, np.arange(n * nw, dtype=np.int64).reshape(n, nw)
    kept = np.bincount(pid[cls_prog[cls] >= 0], minlength=n_parts)
    start = np.concatenate([[0], np.cumsum(kept)[:-1]]).astype(np.int64) + 3  # (slots before: carried events)
    total = int(kept.sum()) + 3
    outs = []
    for numpy in (False, True):
        pos, out_t, out_p = start.copy(), np.full(total + 8, -1, np.int64), np.full(total + 8, -1, np.int64)
        out_w = np.full((total + 8, nw), -1, np.int64)
        if numpy:
            prog = cls_prog[cls]
            K.fill_events_numpy(prog >= 0, pid, t, prog, w, pos, out_t, out_p, out_w)
        else:
            K.fill_events(cls, cls_prog, pid, t, w, pos, out_t, out_p, out_w, np.int64(total))
        outs.append((pos.tolist(), out_t[:total].tolist(), out_p[:total].tolist(), out_w[:total].tolist()))
    assert outs[0] == outs[1]


def test_thread_count_follows_the_environment(monkeypatch):
    """``CEPVEC_NUM_THREADS`` sets the threads; unset, the usable cores (at most 8), capped by
    ``NUMBA_NUM_THREADS`` when that is set; a value that is no positive integer is an error that
    names the variable."""
    import os

    cores = min(len(os.sched_getaffinity(0)), 8)
    monkeypatch.delenv("CEPVEC_NUM_THREADS", raising=False)
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    assert threads.n_threads() == cores
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")
    assert threads.n_threads() == 1
    monkeypatch.setenv("CEPVEC_NUM_THREADS", "3")
    assert threads.n_threads() == 3  # cepvec's own setting wins
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("CEPVEC_NUM_THREADS", bad)
        with pytest.raises(ValueError, match="CEPVEC_NUM_THREADS.*positive integer"):
            threads.n_threads()
