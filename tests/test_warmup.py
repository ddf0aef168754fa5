"""cepvec.warmup: kernel families compiled side by side in worker processes."""

from __future__ import annotations

import polars as pl
import pytest

import cepvec
from cepvec.warmup import kernel_family, warm_up

EV = pl.DataFrame({"type": ["A", "B", "C", "A", "B", "C"], "time": [1, 2, 3, 3, 5, 6], "v": [3, 2, 1, 5, 4, 0]})


@pytest.mark.parametrize(("text", "engine", "family"), [
    ("RETURN COUNT(*) PATTERN SEQ(A, B, C) WITHIN 4", "auto", "linear"),
    ("RETURN COUNT(*) PATTERN A+ WHERE A.v > NEXT(A).v", "auto", "trend"),
    ("RETURN COUNT(*) PATTERN A+ WHERE A.v + NEXT(A).v > 3", "auto", "scan"),
    ("RETURN COUNT(*) PATTERN SEQ(A, B)", "reference", "reference"),
])
def test_kernel_family(text, engine, family):
    q = cepvec.compile(text)
    assert kernel_family(q, engine, EV.schema) == family


def test_warm_up_runs_each_family_in_a_worker():
    work = [("RETURN COUNT(*) PATTERN SEQ(A, B, C) WITHIN 4", EV),
            ("RETURN COUNT(*) PATTERN A+ WHERE A.v > NEXT(A).v", EV),
            ("RETURN COUNT(*) PATTERN SEQ(A, C) WITHIN 4", EV)]
    futures = warm_up(work, processes=2)
    assert len(futures) == 2  # linear (two queries) and trend
    assert [f.result(timeout=240) for f in futures] == [None, None]


def test_warm_up_skips_families_and_the_reference_engine():
    work = [("RETURN COUNT(*) PATTERN SEQ(A, B, C) WITHIN 4", EV)]
    assert warm_up(work, skip=("linear",)) == []
    assert warm_up(work, engine="reference") == []


def test_warm_up_reports_a_worker_error():
    # a null time is found when the worker runs the sample: its CepvecDataError comes back through result()
    ev = EV.with_columns(pl.when(pl.col("time") == 3).then(None).otherwise(pl.col("time")).alias("time"))
    futures = warm_up([("RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 4", ev)], processes=1)
    assert len(futures) == 1
    with pytest.raises(cepvec.CepvecDataError, match="null"):
        futures[0].result(timeout=240)


def test_warm_up_compiles_specialisations_ahead():
    """``ahead``: kernel specialisations compiled first, in the first process (their seconds each),
    beside the families; one that no longer matches its kernel comes back as a message, not an error."""
    arrays = "Array(int32, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True)"
    good = {"module": "cepvec.kernels.linear.encode", "kernel": "count_events",
            "signature": f"(int64, {arrays}, Array(int64, 1, 'C', False, aligned=True))"}
    stale = {**good, "signature": f"(int64, {arrays})"}  # an argument short
    futures = warm_up([("RETURN COUNT(*) PATTERN SEQ(A, B, C) WITHIN 4", EV)], processes=1, ahead=[good, stale])
    assert len(futures) == 2
    seconds, message = futures[0].result(timeout=240)
    assert isinstance(seconds, float) and "count_events" in message
    assert futures[1].result(timeout=240) is None
    assert warm_up([], ahead=[good], processes=1)[0].result(timeout=240)[0] >= 0
    assert warm_up([]) == []


def test_warm_up_compiles_a_workload():
    """A workload (dict of texts, list, or Workload) is the "sharing" family: run_many in a worker."""
    ev = pl.DataFrame({"type": ["A", "B", "C", "A", "B"], "time": [1, 2, 3, 4, 5]})
    texts = {"q1": "RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 4 SLIDE 2",
             "q2": "RETURN COUNT(*) PATTERN SEQ(A, B, C) WITHIN 4 SLIDE 2"}
    # the three forms: one family, so one worker process runs them all
    futures = warm_up([(work, ev) for work in (texts, list(texts.values()), cepvec.workload(texts))], processes=1)
    assert len(futures) == 1 and [f.result() for f in futures] == [None]
    assert warm_up([(texts, ev)], processes=1, skip=("sharing",)) == []
    bad = {"q": "RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 4 SLIDE 2", "r": "RETURN COUNT(*) PATTERN SEQ(A, Q)"}
    with pytest.raises(cepvec.CepvecError):
        warm_up([(bad, ev.drop("time"))], processes=1)[0].result()


_PROBE = r"""
import pkgutil, importlib, sys
import numpy as np, polars as pl
import numba
import cepvec
import cepvec.kernels as kernels
from cepvec.warmup import compile_kernels

def signatures():
    out = {}
    for m in pkgutil.walk_packages(kernels.__path__, "cepvec.kernels."):
        mod = importlib.import_module(m.name)
        for name, obj in vars(mod).items():
            if isinstance(obj, numba.core.registry.CPUDispatcher) and obj.__module__ == mod.__name__:
                out[f"{mod.__name__}.{name}"] = set(map(str, obj.signatures))
    return out

QUERY = sys.argv[1]
rng = np.random.default_rng(5)
def events(n):
    return pl.DataFrame({"type": rng.choice(list("ABC"), n), "time": np.sort(rng.integers(0, n // 2, n)),
                         "id": pl.Series(rng.integers(0, 300, n)).cast(pl.String), "v": rng.random(n)})
compile_kernels(QUERY, events(40))
before = signatures()
big = events(int(sys.argv[2])).sample(fraction=1.0, shuffle=True, seed=1)  # unsorted, string keys, ties
cepvec.run(QUERY, big)
after = signatures()
new = {k: sorted(v - before.get(k, set())) for k, v in after.items() if v - before.get(k, set())}
print("NEW", new)
"""


@pytest.mark.parametrize("text", [
    "RETURN id, COUNT(*), SUM(B.v) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 50 SLIDE 10",
    # WITHIN alone: longer than the 40 events' span (run drops such a window), shorter than the big run's
    "RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 50",
    "RETURN id, COUNT(*) PATTERN SEQ(A, B+) WHERE [id] AND B.v < NEXT(B).v GROUP-BY id WITHIN 40 SLIDE 20",
])
def test_compile_kernels_covers_what_a_large_run_calls(text):
    """After ``compile_kernels`` on 40 events, a run of 40 000 unsorted events with String keys (sorting,
    hashed partition ids checked on the string views, the kernels NumPy replaces on small inputs)
    compiles no kernel: a Spark executor warmed this way pays no compilation in its first task."""
    _probe(text, threads=1, events=40_000)


def _probe(text: str, threads: int, events: int) -> None:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _PROBE, text, str(events)], capture_output=True, text=True,
                         timeout=600, env={**__import__("os").environ, "CEPVEC_NUM_THREADS": str(threads)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert "NEW {}" in out.stdout, out.stdout[-2000:]


def test_compile_kernels_covers_what_a_large_run_in_threads_calls():
    """The same on two threads, on 120 000 events (long columns are cut in halves, the partition ids
    are numbered beside the type codes): what only threads call is compiled by ``compile_kernels`` too
    (it runs the sample split in threads as well)."""
    _probe("RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 50", threads=2, events=120_000)
