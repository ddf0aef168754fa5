"""Partitions in threads: one query, many GROUP-BY keys, 1 thread vs 2 vs every usable core.

``CEPVEC_NUM_THREADS`` caps the threads of a run (``cepvec/runtime/threads.py``); each
thread takes a contiguous range of partitions with about equal numbers of events. The
baseline is the same run on one thread (ratio = speed-up). Data, two distributions of the
group key: ``uniform`` (every group about the same size) and ``zipf`` (one group holds a
large share: a thread gets it alone, the speed-up is bounded by it). Times have ties.
"""

from __future__ import annotations

import os

import numpy as np
import polars as pl

import cepvec

QUERIES = {
    "aseq": ("RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 50", 4_000_000),
    # the same at 10^6 events: a run of 30-60 ms, whose fixed serial costs (partition ids, the output
    # frame: some 8 ms) bound the ratio more (docs/performance-log.md, session 38)
    "aseq_1e6": ("RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 50", 1_000_000),
    "trend": ("RETURN id, COUNT(*) PATTERN A+ WHERE [id] AND A.x < NEXT(A).x GROUP-BY id WITHIN 400 SLIDE 200",
              1_000_000),
    "scan": ("RETURN id, COUNT(*) PATTERN A+ WHERE [id] AND A.x + NEXT(A).x != 3 GROUP-BY id WITHIN 20", 400_000),
    # a float SUM and AVG beside the count: two streams (exact counts on the chain loop, the float sums on
    # the two-stack queue), the weights read per batch
    "sums": ("RETURN id, COUNT(*), SUM(A.x), AVG(C.x) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 50",
             1_000_000),
    # MIN / MAX on the linear maps: the order keys of the attribute are prepared per batch
    "minmax": ("RETURN id, MIN(a.x), MAX(c.x) PATTERN SEQ(A a, B b, C c) WHERE [id] GROUP-BY id WITHIN 100 SLIDE 50",
               1_000_000),
}
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def events(n: int, n_groups: int, data: str, types: str) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    if data == "uniform":
        ids = rng.integers(0, n_groups, n)
    else:  # Zipf: group 0 is the largest, the tail is long
        ids = (rng.zipf(1.3, n) - 1) % n_groups
    return pl.DataFrame({
        "type": np.array(list(types))[rng.integers(0, len(types), n)],
        "time": np.sort(rng.integers(0, n // 2, n)),  # about two events per time stamp
        "id": ids.astype(np.int64),
        "x": rng.random(n),  # distinct floats
    })


def workload(path: str, n_groups: int, data: str) -> tuple[cepvec.Query, pl.DataFrame]:
    """The compiled query of ``QUERIES[path]`` and its events, its kernels compiled / loaded."""
    text, n = QUERIES[path]
    query = cepvec.compile(text)
    ev = events(n, n_groups, data, "ABCD" if path in ("aseq", "aseq_1e6", "minmax", "sums") else "A")
    cepvec.run(query, ev[:2000])
    return query, ev


class Threads:
    params = [list(QUERIES), [100, 10_000], ["uniform", "zipf"], sorted({1, 2, CORES})]
    param_names = ["path", "n_groups", "data", "threads"]
    timeout = 600

    def setup(self, path, n_groups, data, threads):
        self.old = os.environ.get("CEPVEC_NUM_THREADS")
        os.environ["CEPVEC_NUM_THREADS"] = str(threads)
        self.query, self.events = workload(path, n_groups, data)

    def teardown(self, path, n_groups, data, threads):
        if self.old is None:
            os.environ.pop("CEPVEC_NUM_THREADS", None)
        else:
            os.environ["CEPVEC_NUM_THREADS"] = self.old

    def time_run(self, path, n_groups, data, threads):
        cepvec.run(self.query, self.events)


#: group keys of ``ThreadsKeys``: each a different way to the partition ids (cepvec/runtime/partitions.py)
KEYS = {
    "string": pl.format("user-{}", "id"),  # read from the Arrow string views (kernels/keys.py::view_ids)
    "string_nulls": pl.when(pl.col("id") % 10 != 0).then(pl.format("user-{}", "id")),  # a tenth null
    "categorical": pl.format("user-{}", "id").cast(pl.Categorical),  # physical ids, a direct table
    "sparse_int": pl.col("id") * 0x9E3779B97F4A7C1 + 12345,  # 64-bit ids: the hash table (kernels/keys.py::dense_ids)
    "float": pl.col("id") * 1.37 + 0.123,  # the bits of the floats, hashed
}


class ThreadsKeys(Threads):
    """The same runs with the group key as a String (``user-<id>``, without and with nulls),
    Categorical, sparse 64-bit integer or float column: the partition ids of such keys come from
    the Arrow string views, the physical ids or a hash table (``cepvec/runtime/partitions.py``);
    they take two threads too."""

    params = [["aseq", "scan"], [100, 10_000], list(KEYS), sorted({1, 2, CORES})]
    param_names = ["path", "n_groups", "keys", "threads"]

    def setup(self, path, n_groups, keys, threads):
        super().setup(path, n_groups, "uniform", threads)
        self.events = self.events.with_columns(KEYS[keys].alias("id"))
        cepvec.run(self.query, self.events[:2000])


def ceiling_pieces(loop: str, threads: int) -> list:
    """The pieces of :class:`ThreadsCeiling`'s ``loop`` for ``threads`` threads (each a callable)."""
    import numba

    @numba.njit(nogil=True)
    def compute(x, rounds):
        s = 0.0
        for r in range(rounds):
            for i in range(x.shape[0]):
                s += x[i] * 1.0000001 + r
        return s

    @numba.njit(nogil=True)
    def alu(n):
        a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 1
        for i in range(n):
            a0 = (a0 ^ i) + 3
            a1 = (a1 ^ i) + 5
            a2 = (a2 ^ i) + 7
            a3 = (a3 ^ i) + 9
            a4 = (a4 ^ i) + 11
            a5 = (a5 ^ i) + 13
            a6 = (a6 ^ i) + 15
            a7 = (a7 ^ i) + 17
        return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7

    @numba.njit(nogil=True)
    def stream(x, y):
        for i in range(x.shape[0]):
            y[i] = x[i] + 1

    @numba.njit(nogil=True)
    def memory(x, idx):  # random reads of a table far larger than the caches
        s = 0
        for i in range(idx.shape[0]):
            s += x[idx[i]]
        return s

    rng = np.random.default_rng(0)
    if loop == "compute":
        x, rounds = rng.random(4096), 48_000 // threads
        return [lambda: compute(x, rounds)] * threads
    if loop == "alu":
        return [lambda: alu(100_000_000 // threads)] * threads
    if loop == "stream":
        src, dst = np.arange(1_000_000), np.empty(1_000_000, np.int64)
        cuts = np.linspace(0, len(src), threads + 1).astype(int)
        return [lambda a=a, b=b: stream(src[a:b], dst[a:b]) for a, b in zip(cuts, cuts[1:])]
    table = np.arange(1 << 25)
    idx = rng.integers(0, 1 << 25, (1 << 24) // threads)
    return [lambda: memory(table, idx)] * threads


class ThreadsCeiling:
    """What two threads give on this machine at best: one Numba loop (``nogil``) cut into ``threads``
    equal pieces, each in a thread of its own, with no shared data and nothing serial. Its ratio of
    1 thread to 2 threads, measured in the same run as ``Threads``, is the ceiling the speed-ups of
    ``Threads`` compare with (on a virtual machine, two vCPUs may not give two cores' work).
    ``compute`` is one dependent chain of float operations (bound by their latency), ``alu`` eight
    independent chains of integer operations (bound by the core's throughput, as the kernels' loops
    are: a state update per event; where two vCPUs share execution units, this is the ceiling that
    drops). ``stream`` is one pass that reads and writes 10^6 int64 (about 1 ms), the size of each
    step of a 10^6-event run (type codes, partition ids, the scatter into partition order)."""

    params = [["compute", "alu", "memory", "stream"], sorted({1, 2, CORES})]
    param_names = ["loop", "threads"]

    def setup(self, loop, threads):
        from concurrent.futures import ThreadPoolExecutor

        self.pieces = ceiling_pieces(loop, threads)
        self.pool = ThreadPoolExecutor(threads)
        self.time_loop(loop, threads)  # compile

    def teardown(self, loop, threads):
        self.pool.shutdown()

    def time_loop(self, loop, threads):
        for f in [self.pool.submit(piece) for piece in self.pieces]:
            f.result()


class ThreadsCeilingSpeedup:
    """The ratio of ``ThreadsCeiling`` in one measurement, as ``ThreadsSpeedup`` takes it: the loop on one
    thread and cut in two on two threads, alternating (``repeats`` of each), the median of the one-thread
    times over the median of the two-thread times: the ceiling beside ``ThreadsSpeedup``'s ratios, with
    the drift cancelled the same way."""

    params = [["compute", "alu", "memory", "stream"]]
    param_names = ["loop"]
    repeats = 7
    unit = "×"

    def setup(self, loop):
        from concurrent.futures import ThreadPoolExecutor

        self.pieces = {n: ceiling_pieces(loop, n) for n in (1, 2)}
        self.pool = ThreadPoolExecutor(2)
        for n in (1, 2):
            self._run(n)  # compile

    def teardown(self, loop):
        self.pool.shutdown()

    def _run(self, n: int) -> None:
        for f in [self.pool.submit(piece) for piece in self.pieces[n]]:
            f.result()

    def track_speedup(self, loop):
        import statistics
        import time

        times = {1: [], 2: []}
        for _ in range(self.repeats):
            for n in (1, 2):
                t0 = time.perf_counter()
                self._run(n)
                times[n].append(time.perf_counter() - t0)
        return statistics.median(times[1]) / statistics.median(times[2])


def _pin(cpus: set[int]) -> None:
    """Confine every thread of this process (Polars' pool, cepvec's, this one) to ``cpus``. Threads
    started later inherit their creator's affinity, so undoing it is pinning every thread again (those
    started meanwhile too) to the original set."""
    for tid in map(int, os.listdir("/proc/self/task")):
        try:
            os.sched_setaffinity(tid, cpus)
        except OSError:  # a thread that ended meanwhile
            pass


class ThreadsCores(Threads):
    """The runs of ``Threads`` on 1 core against 2 cores (and every usable core): the whole process,
    Polars' threads included, confined to that many cores (``sched_setaffinity`` on every thread), so
    the ratio is the speed-up of the cores, not of cepvec's threads alone (``Threads`` gives Polars
    every core in its 1-thread runs too). cepvec runs one thread per core it may use."""

    params = [list(QUERIES), [100, 10_000], ["uniform", "zipf"], sorted({1, 2, CORES})]
    param_names = ["path", "n_groups", "data", "cores"]

    def setup(self, path, n_groups, data, cores):
        if not hasattr(os, "sched_setaffinity"):
            raise NotImplementedError("needs sched_setaffinity (Linux)")
        self.cpus = os.sched_getaffinity(0)
        _pin(set(sorted(self.cpus)[:cores]))
        super().setup(path, n_groups, data, cores)

    def teardown(self, path, n_groups, data, cores):
        super().teardown(path, n_groups, data, cores)
        _pin(self.cpus)


class ThreadsSpeedup:
    """The ratio of ``ThreadsCores`` in one measurement: the same run confined to one core and to two,
    alternating (``repeats`` of each), the median of the one-core times over the median of the two-core
    times. ``ThreadsCores`` times the two cases minutes apart, and this machine drifts by ±10-20% in
    that time; alternating cancels the drift (each pair of runs sees the same machine). The one-core
    runs take the first and the second core in turn."""

    params = [list(QUERIES), [100, 10_000], ["uniform", "zipf"]]
    param_names = ["path", "n_groups", "data"]
    repeats = 7
    unit = "×"
    timeout = 600

    def setup(self, path, n_groups, data):
        if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
            raise NotImplementedError("needs sched_setaffinity (Linux) and 2 cores")
        if "CEPVEC_NUM_THREADS" in os.environ:
            raise NotImplementedError("unset CEPVEC_NUM_THREADS: the runs take one thread per core they may use")
        self.query, self.events = workload(path, n_groups, data)
        self.cpus = sorted(os.sched_getaffinity(0))

    def track_speedup(self, path, n_groups, data):
        import statistics
        import time

        times = {1: [], 2: []}
        for i in range(self.repeats):
            for cores in (1, 2):
                # the one-core runs take each core in turn: this machine's two vCPUs often run at different
                # speeds for seconds (docs/performance-log.md, session 51), and always the first one
                # measured that one's speed against both
                pin = {self.cpus[i % 2]} if cores == 1 else set(self.cpus[:2])
                _pin(pin)  # (threads a run starts inherit it: each run re-pins all)
                try:
                    t0 = time.perf_counter()
                    cepvec.run(self.query, self.events)
                    times[cores].append(time.perf_counter() - t0)
                finally:
                    _pin(set(self.cpus))
        return statistics.median(times[1]) / statistics.median(times[2])


class ThreadsKeysSpeedup(ThreadsSpeedup):
    """``ThreadsSpeedup`` by the dtype of the group key (``KEYS``) and with many keys: 10^6 events of
    10^3, 10^5 or 3·10^5 keys (a few events each). The partition ids of many String keys are numbered
    on both threads, each thread the keys of one share of the hash space (``kernels/keys.py::view_share``);
    with fewer, on one thread beside the type codes."""

    params = [["aseq_1e6"], [1_000, 100_000, 300_000], list(KEYS)]
    param_names = ["path", "n_groups", "keys"]

    def setup(self, path, n_groups, keys):
        super().setup(path, n_groups, "uniform")
        self.events = self.events.with_columns(KEYS[keys].alias("id"))
        cepvec.run(self.query, self.events[:2000])

    def track_speedup(self, path, n_groups, keys):
        return super().track_speedup(path, n_groups, "uniform")
