"""The output step of a query whose groups are its partitions: cells (partition, window, count) put in
the order of the result, (group value, window).

A kernel writes its cells in chunks, one per kernel call and thread, each in partition order with the
windows of a partition rising from call to call. Two ways, timed on the same cells in the same run:

* ``time_move``: what the linear and trend paths do (``runtime/output.py::_scatter_by_rank``): the
  chunks are cut in one range of rows per thread, each range counts its rows per group rank, then
  moves each cell's window and count straight to its output place;
* ``time_gather`` (the baseline, the way before): the chunks are concatenated, the order of the rows
  is computed by the same counting sort (``_order_by_rank``), then each column is gathered in it.

Data: ``2·10^6`` cells from four calls of two threads each, 1, 4, ``10^4`` or ``5·10^5`` groups whose
values rank in a random order, and the cells of a group ``uniform`` (about equal) or ``zipf`` (one group
holds a large share). The default threads (``CEPVEC_NUM_THREADS``). With few groups, the threads' counts
and positions per group share no cache line (``runtime/threads.py::thread_rows``): one group's 2·10^6 cells
on two threads took 120 ms instead of 12 when they did, four groups' 38 instead of 16.
"""

from __future__ import annotations

import numpy as np

from cepvec.runtime import output

N_CELLS = 2_000_000
CALLS, THREADS_PER_CALL = 4, 2


def cell_chunks(n_groups: int, data: str) -> tuple[np.ndarray, list[tuple]]:
    """``(rank of each partition, chunks of (pid, key, counts, no float values))``."""
    rng = np.random.default_rng(0)
    if data == "uniform":
        pid = rng.integers(0, n_groups, N_CELLS)
    else:
        pid = (rng.zipf(1.3, N_CELLS) - 1) % n_groups
    call = rng.integers(0, CALLS, N_CELLS)
    chunks = []
    for c in range(CALLS):
        p = np.sort(pid[call == c])  # a call writes its partitions in order
        # windows rise within a partition and from call to call
        start = np.r_[0, np.flatnonzero(np.diff(p)) + 1]
        within = np.arange(len(p)) - np.repeat(start, np.diff(np.r_[start, len(p)]))
        key = c * N_CELLS + within
        for t in range(THREADS_PER_CALL):  # each thread a contiguous range of partitions
            sel = (p * THREADS_PER_CALL // n_groups) == t
            vi = rng.integers(1, 100, (int(sel.sum()), 1))
            chunks.append((p[sel], key[sel], vi, np.zeros((int(sel.sum()), 0))))
    return rng.permutation(n_groups).astype(np.int64), chunks


class CellsInRankOrder:
    params = [[1, 4, 10_000, 500_000], ["uniform", "zipf"]]
    param_names = ["n_groups", "data"]

    def setup(self, n_groups, data):
        self.rank, self.chunks = cell_chunks(n_groups, data)
        self.time_move(n_groups, data)  # compile
        self.time_gather(n_groups, data)

    def time_move(self, n_groups, data):
        output._scatter_by_rank(self.rank, self.chunks)

    def time_gather(self, n_groups, data):
        pid, key, vi = (np.concatenate([c[i] for c in self.chunks]) for i in range(3))
        order, _per_rank = output._order_by_rank(self.rank, pid, key)
        np.take(key, order)
        np.take(np.ascontiguousarray(vi[:, 0]), order)
