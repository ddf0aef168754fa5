"""Cold start: the first ``cepvec.run`` in a fresh process, with an empty and with a warm Numba cache.

Every fresh machine, CI run and Spark executor pays the first call: Numba
compiles the kernels the query needs and writes them to the cache
(``NUMBA_CACHE_DIR``, else ``__pycache__`` beside the kernel sources). Each
sample runs a new interpreter:

* ``time_first_run_cold``: an empty cache directory (compilation);
* ``time_first_run_warm``: the same directory after a first run (cache load);
* ``time_import_only``: the baseline, ``import cepvec`` and building the input
  frame, without running a query.

The input is 64 events holding every type of the query, so the time is the
compilation (or cache load) of what the query needs and nothing else. Its times
span 93 units, more than every query's window: over input that a ``WITHIN``
window covers whole, ``cepvec.run`` drops the window (``api.py``) and compiles
the kernels of a run without one. Queries cover the three kernel families: the
linear maps (A-Seq ``SEQ``, with and without GROUP-BY), the Fenwick trend path
(Kleene with one comparison) and the predecessor scan (an edge predicate the
trend path refuses). The type column is a String or a Categorical (whose
physical codes take other kernels).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

QUERIES = {
    "seq": "RETURN COUNT(*) PATTERN SEQ(A, B, C) WITHIN 10",
    "aseq": "RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 50",
    "trend": "RETURN id, COUNT(*) PATTERN SEQ(A, B+) WHERE [id] AND B.x > NEXT(B).x GROUP-BY id WITHIN 20 SLIDE 10",
    "scan": "RETURN COUNT(*) PATTERN A+ WHERE A.x + NEXT(A).x != 3 WITHIN 20",
}

_SCRIPT = """
import numpy as np, polars as pl, cepvec
rng = np.random.default_rng(0)
n = 64
ev = pl.DataFrame({{"type": np.array(list("ABC"))[np.arange(n) % 3], "time": 3 * (np.arange(n) // 2),
                   "id": rng.integers(0, 4, n), "x": rng.integers(0, 10, n)}})
if {categorical}:
    ev = ev.with_columns(pl.col("type").cast(pl.Categorical))
if {run}:
    cepvec.run({query!r}, ev)
"""


def _first_run(query: str, types: str, cache_dir: str, run: bool = True) -> None:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir}
    script = _SCRIPT.format(query=QUERIES[query], run=run, categorical=types == "categorical")
    subprocess.run([sys.executable, "-c", script],
                   env=env, check=True, capture_output=True)


class ColdStart:
    params = [list(QUERIES), ["string", "categorical"]]
    param_names = ["query", "types"]
    number = 1
    repeat = 2
    rounds = 1
    warmup_time = 0
    timeout = 600

    def setup(self, query, types):
        self.cold = tempfile.TemporaryDirectory()
        self.warm = tempfile.TemporaryDirectory()
        _first_run(query, types, self.warm.name)

    def teardown(self, query, types):
        self.cold.cleanup()
        self.warm.cleanup()

    def time_first_run_cold(self, query, types):
        _first_run(query, types, tempfile.mkdtemp(dir=self.cold.name))  # a new empty cache for every sample

    def time_first_run_warm(self, query, types):
        _first_run(query, types, self.warm.name)

    def time_import_only(self, query, types):
        _first_run(query, types, self.warm.name, run=False)


class ColdDemo:
    """``cepvec demo`` (GRETA Q1-Q3 and an A-Seq query, compiling its later kernel families in
    the background) in a fresh process: empty cache vs warm cache (same run)."""

    number = 1
    repeat = 2
    rounds = 1
    warmup_time = 0
    timeout = 600

    def setup(self):
        self.cold = tempfile.TemporaryDirectory()
        self.warm = tempfile.TemporaryDirectory()
        _demo(self.warm.name)

    def teardown(self):
        self.cold.cleanup()
        self.warm.cleanup()

    def time_demo_cold(self):
        _demo(tempfile.mkdtemp(dir=self.cold.name))

    def time_demo_warm(self):
        _demo(self.warm.name)


def _demo(cache_dir: str) -> None:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir}
    subprocess.run([sys.executable, "-m", "cepvec", "demo"], env=env, check=True, capture_output=True)
