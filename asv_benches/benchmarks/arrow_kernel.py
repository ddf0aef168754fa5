"""The Arrow kernel (``cepvec.kernel``: the body of ``mapInArrow``) on one partition's batches.

10^6 events in batches of 10 000 rows (Spark's ``maxRecordsPerBatch`` default), one GROUP-BY
value (more rows than ``COALESCE_ROWS``: it runs alone, streamed) or 100 or 10 000 values drawn
uniformly or by Zipf (one value a quarter of the rows), the A-Seq and the Fenwick trend query of
``threads.py``, the type column a String (Arrow ``string_view``) or a Categorical (an Arrow
dictionary). Two input orders:

* ``group``: rows by (GROUP-BY value, time), a hand-written pipeline's layout; the kernel runs
  consecutive values together up to ``arrow_kernel.COALESCE_ROWS`` rows;
* ``time``: rows by time, what ``cepvec.run`` on Spark sends (one run per call).

Baseline in the same run: ``time_local_run``, ``cepvec.run`` on the same events as one frame
(the local engine, no batches). ``KernelPerValue`` times ``order="group"`` with one engine run
per value (``COALESCE_ROWS = 0``), what the kernel did before values ran together, on 100 and
1 000 values (10 000 take some 20 s a call).
"""

from __future__ import annotations

import polars as pl

import cepvec
from cepvec import arrow_kernel

from .threads import QUERIES, events

BATCH_ROWS = 10_000


class Kernel:
    params = [["aseq_1e6", "trend"], [1, 100, 10_000], ["uniform", "zipf"], ["group", "time"],
              ["string", "categorical"]]
    param_names = ["path", "n_groups", "data", "order", "types"]
    timeout = 600

    def setup(self, path, n_groups, data, order, types="string"):
        if n_groups == 1 and data == "zipf":
            raise NotImplementedError("one value: the uniform case")
        if n_groups == 1 and path == "trend":  # (its count leaves int64: CepvecOverflowError, as it should)
            raise NotImplementedError("the trends of one value of 10^6 events overflow int64")
        text, n = QUERIES[path]
        self.query = cepvec.compile(text)
        ev = events(n, n_groups, data, "ABCD" if path == "aseq_1e6" else "A")
        if types == "categorical":
            ev = ev.with_columns(pl.col("type").cast(pl.Categorical))
        self.events = ev.sort(["id", "time"] if order == "group" else ["time"], maintain_order=True)
        table = self.events.to_arrow()
        self.batches = table.to_batches(max_chunksize=BATCH_ROWS)
        self.kernel = cepvec.kernel(self.query, table.schema, order=order)
        list(self.kernel(iter(self.batches[:3])))  # compiled / loaded
        cepvec.run(self.query, self.events[:2000])

    def time_kernel(self, path, n_groups, data, order, types="string"):
        for _ in self.kernel(iter(self.batches)):
            pass

    def time_local_run(self, path, n_groups, data, order, types="string"):
        cepvec.run(self.query, self.events)


class KernelPerValue(Kernel):
    params = [["aseq_1e6", "trend"], [100, 1_000], ["uniform", "zipf"], ["group"]]
    param_names = ["path", "n_groups", "data", "order"]

    def time_kernel(self, path, n_groups, data, order, types="string"):
        old, arrow_kernel.COALESCE_ROWS = arrow_kernel.COALESCE_ROWS, 0
        try:
            super().time_kernel(path, n_groups, data, order)
        finally:
            arrow_kernel.COALESCE_ROWS = old
