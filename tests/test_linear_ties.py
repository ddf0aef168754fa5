"""Equal time stamps on the linear-map fast loops: tie ranks, the tie sort, and no general loop.

Events with one time stamp never see each other (docs/semantics.md). The fast loops run
them one after the other in place when their programs allow it in rank order
(``kernels.linear.programs.tie_ranks``) after ``order_ties`` sorted each tie by rank;
the agreement tests (tests/test_engine_agreement.py, tests/test_order_aggregates.py)
check the results against the reference engine on tie-heavy tiny streams.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import cepvec
from cepvec.kernels import _jit, linear as K
from cepvec.paths.linear import run as linear_run
from cepvec.paths.linear.run import _order_ties_numpy
from cepvec.registry import choose, run_engine
from cepvec.runtime import partitions
from cepvec.runtime.prepare import prepare
from tests.strategies import examples

# programs as (triplets (dst, src, wk), reset rows, is_end)
_A = ([(1, 0, -1)], set(), False)  # SEQ(A, B, C): A opens row 1 from row 0
_B = ([(2, 1, -1)], set(), False)
_C = ([(3, 2, -1)], set(), True)
_KLEENE = ([(1, 0, -1), (1, 1, -1)], set(), False)  # A+: a self-loop on row 1
_NOT_A = ([], {1}, False)  # a negation that resets row 1


def _before(ranks, a, b):
    return 0 < ranks[a] < ranks[b]


def test_sequence_programs_run_last_stage_first():
    ranks, same = K.tie_ranks([_A, _B, _C])
    # C reads row 2, which B writes: C first; B reads row 1, which A writes: B before A
    assert _before(ranks, 2, 1) and _before(ranks, 1, 0)
    assert same == [True, True, True]


def test_kleene_self_loop_never_ties_with_itself():
    ranks, same = K.tie_ranks([_KLEENE, _B])
    assert same == [False, True]
    assert _before(ranks, 1, 0)  # B reads row 1 before A+ adds to it


def test_reset_runs_before_the_event_that_adds_to_its_row():
    ranks, _ = K.tie_ranks([_A, _NOT_A])
    # A then the reset would zero A's new matches; the reset first keeps them
    assert _before(ranks, 1, 0)


def test_programs_that_fit_in_no_order_get_no_rank():
    swap_ab = ([(2, 1, -1)], {1}, False)  # reads row 1 and resets it
    writes_1 = ([(1, 0, -1)], set(), False)
    reads_1_writes_0 = ([(0, 1, -1)], set(), False)
    ranks, _ = K.tie_ranks([writes_1, reads_1_writes_0, swap_ab])
    assert ranks[0] == 0 and ranks[1] == 0  # each writes what the other reads


def test_flags_carry_the_rank():
    PT = K.pack_programs([_A, _B, _C], np.array([3]))
    ranks, _ = K.tie_ranks([_A, _B, _C])
    for p in range(3):
        assert PT[PT[p]] >> K.TIE_SHIFT == ranks[p]
        assert PT[PT[p]] & K.F_TIE


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0] * 8 + [1, 3]), st.integers(0, 3)), min_size=0, max_size=80),
       st.lists(st.integers(1, 80), max_size=3))
def test_order_ties_sorts_each_tie_by_rank_stably(events, cuts):
    _check_order_ties(events, cuts)
    _check_order_ties(events, cuts, kernel=False)


def test_order_ties_long_runs():
    """Runs over the insertion-sort limit (``order_long_ties``), between short ones."""
    rng = np.random.default_rng(1)
    gaps = [0] * 40 + [1] + [0] * 5 + [2] + [0] * 100
    events = [(g, int(p)) for g, p in zip(gaps, rng.integers(0, 4, len(gaps)))]
    _check_order_ties(events, [])
    _check_order_ties(events, [20, 60])
    _check_order_ties(events, [20, 60], kernel=False)


@pytest.mark.parametrize("numpy_below", [0, 1 << 40])
def test_small_input_helpers_in_numpy_and_numba_agree(numpy_below, monkeypatch):
    """Below ``NUMPY_BELOW`` elements the tie order, the key range of the partition ids and the output
    order run in NumPy (no compile on a cold cache); 0 runs the kernels on the same small input:
    both give the reference engine's rows."""
    monkeypatch.setattr(_jit, "NUMPY_BELOW", numpy_below)
    rng = np.random.default_rng(3)
    n = 400
    df = pl.DataFrame({"type": rng.choice(list("ABCD"), n), "time": np.sort(rng.integers(0, n // 4, n)),
                       "id": rng.integers(0, 6, n), "x": rng.integers(-3, 4, n)})
    for q in ["RETURN id, COUNT(*), SUM(B.x) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 12",
              "RETURN id, COUNT(*) PATTERN SEQ(A, NOT D, B) WHERE [id] GROUP-BY id WITHIN 8 SLIDE 4",
              "RETURN COUNT(*) PATTERN SEQ(A, B, C) WITHIN 6 EMIT CHANGES"]:
        want = cepvec.run(q, df[:120], engine="reference")
        assert_frame_equal(cepvec.run(q, df[:120]), want, check_exact=True)


SMALL_QUERIES = [
    "RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 6",
    "RETURN id, COUNT(*), SUM(B.x), MIN(A.x) PATTERN SEQ(A, B+, C) WHERE [id] GROUP-BY id WITHIN 8 SLIDE 4",
    "RETURN id, COUNT(*) PATTERN SEQ(A, NOT D, B) WHERE [id] GROUP-BY id WITHIN 5 EMIT CHANGES",
    "RETURN id, COUNT(*), AVG(C.x) PATTERN SEQ(A, C) GROUP-BY id",
    "RETURN COUNT(*) PATTERN SEQ(A, B) WHERE A.x < 2 WITHIN 4",
]


@pytest.mark.filterwarnings("ignore:event type")  # (few events: a type of the query may not occur)
@pytest.mark.parametrize("text", SMALL_QUERIES)
@settings(max_examples=examples(15), deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(0, 120), n_ids=st.integers(1, 12),
       types=st.sampled_from(["string", "categorical"]), keys=st.sampled_from(["int", "string", "nulls", "float"]),
       data=st.data())
def test_small_input_encoding_in_numpy_gives_the_kernels_rows(text, seed, n, n_ids, types, keys, data):
    """Below ``NUMPY_BELOW`` rows a batch's partition ids (a Polars join), type codes (a Polars
    expression), kept events per partition, segment layout and scatter into partition order run in
    Polars and NumPy until the process holds the encoding kernels (a first run on a cold cache
    compiles only the counting kernel); ``NUMPY_BELOW`` 0 runs the kernels. The input cut into batches anywhere (carried events, keys known from earlier
    batches): the same rows."""
    rng = np.random.default_rng(seed)
    df = pl.DataFrame({"type": rng.choice(list("ABCD"), n), "time": np.sort(rng.integers(0, n // 3 + 1, n)),
                       "id": rng.integers(0, n_ids, n), "x": rng.integers(-3, 4, n)})
    if types == "categorical":
        df = df.with_columns(pl.col("type").cast(pl.Categorical))
    if keys == "string":
        df = df.with_columns(pl.format("user-{}", "id").alias("id"))
    elif keys == "nulls":
        df = df.with_columns(pl.when(pl.col("id") % 4 != 1).then(pl.col("id")).alias("id"))
    elif keys == "float":
        df = df.with_columns(pl.col("id") * 0.5)
    q = cepvec.compile(text)
    assert choose(q, "auto", df.schema).path_name == "linear"
    cuts = sorted(set(data.draw(st.lists(st.integers(0, n), max_size=3), label="cuts")))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(linear_run, "encoding_kernels_loaded", lambda: False)  # (this process holds them)
        mp.setattr(partitions, "direct_kernel_loaded", lambda: False)  # integer keys by a Polars join
        small = run_engine(q, prepare(q, df), "auto", batches=cuts)
        mp.setattr(_jit, "NUMPY_BELOW", 0)
        kernels = run_engine(q, prepare(q, df), "auto", batches=cuts)
    assert_frame_equal(small, kernels, check_exact=True)


def test_a_small_first_run_compiles_only_the_counting_kernel():
    """A first grouped ``SEQ`` run over a few rows, in a new process with an empty Numba cache,
    compiles the counting kernel and nothing else (the encoding steps run in Polars and NumPy)."""
    script = textwrap.dedent('''
        import os, tempfile
        os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp()
        import numpy as np, polars as pl, cepvec
        from numba.core import event
        n = 64
        df = pl.DataFrame({"type": np.array(list("ABC"))[np.arange(n) % 3], "time": 3 * (np.arange(n) // 2),
                           "id": np.arange(n) % 4})
        with event.install_recorder("numba:compile") as rec:
            cepvec.run("RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 50", df)
        print(sorted({e.data["dispatcher"].py_func.__qualname__ for _, e in rec.buffer
                      if "kernels" in e.data["dispatcher"].py_func.__module__}))
    ''')
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['_drive_within_chain3']", out


def _check_order_ties(events, cuts, kernel: bool = True):
    progs = [_A, _B, _C, _NOT_A]
    PT = K.pack_programs(progs, np.array([3]))
    rank = np.array([PT[PT[p]] >> K.TIE_SHIFT for p in range(len(progs))])
    # long ties (over the insertion-sort limit) come from small time gaps
    t = np.cumsum([g for g, _ in events]).astype(np.int64)
    prog = np.array([p for _, p in events], np.int64)
    w = np.stack([np.arange(len(events)), 10 * prog], axis=1).astype(np.int64).reshape(len(events), 2)
    bounds = sorted({0, len(events), *(c for c in cuts if c < len(events))})
    seg_lo = np.array(bounds[:-1], np.int64)
    seg_hi = np.array(bounds[1:], np.int64)
    p2, w2 = prog.copy(), w.copy()
    if not kernel:  # the NumPy version the linear path takes for few events
        _order_ties_numpy(seg_lo, seg_hi, t, p2, w2, PT)
    elif K.order_ties(seg_lo, seg_hi, t, p2, w2, PT):
        K.order_long_ties(seg_lo, seg_hi, t, p2, w2, PT)
    for lo, hi in zip(seg_lo, seg_hi):
        for tv in np.unique(t[lo:hi]):
            idx = lo + np.flatnonzero(t[lo:hi] == tv)
            # the same events (rows moved with their programs), stably sorted by rank
            expect = sorted(idx, key=lambda i: (rank[prog[i]], i))
            assert list(p2[idx]) == list(prog[expect])
            assert w2[idx].tolist() == w[expect].tolist()


def test_ties_of_a_sequence_stay_on_the_fast_loops():
    """A SEQ(A, B, C) stream full of ties never calls the general loop (nor compiles it), nor the
    two-stack WITHIN and EMIT CHANGES loops (tests/test_linear_within.py); its WITHIN count takes the
    chain loop (``linear/chain.py``), not the inverse loop over memory."""
    code = textwrap.dedent("""
        import numpy as np, polars as pl, cepvec
        from cepvec.kernels.linear import run as R
        rng = np.random.default_rng(0)
        n = 3000
        df = pl.DataFrame({"type": rng.choice(list("ABCD"), n), "time": np.sort(rng.integers(0, n // 4, n)),
                           "id": rng.integers(0, 5, n)})
        for q in ["RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 50",
                  "RETURN COUNT(*) PATTERN SEQ(A, NOT D, B, C) WITHIN 40 SLIDE 10",
                  "RETURN COUNT(*) PATTERN SEQ(A, B, C) WITHIN 30 EMIT CHANGES",
                  "RETURN COUNT(*) PATTERN SEQ(A, B, C)"]:
            cepvec.run(q, df)
        print(len(R._run_general.signatures), len(R._drive_within.signatures), len(R._drive_emit.signatures),
              len(R._drive_within_inverse.signatures), len(R.DRIVE_WITHIN_CHAIN[3].signatures))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # nor the two-stack loops: the counts of the first and third queries take the inverse loops, the
    # first one (a plain sequence under WITHIN) the chain loop with the window's map in registers
    assert out.stdout.split() == ["0", "0", "0", "0", "1"], out.stderr
