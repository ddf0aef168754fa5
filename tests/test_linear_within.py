"""The WITHIN, EMIT CHANGES and SLIDE loops of the linear-map kernels: the two-stack queue and the inverse loops.

``windows._drive_within`` keeps the window in a two-stack queue. When every program of a
query is a count or sum step (flag ``F_INV``: no reset, no self-loop) and the weights are >= 0,
``windows._drive_within_inverse`` keeps the window's map itself and takes an event out by
applying its inverse. Both must give the same totals and leave the same segments to the
general loop; the engine tests (tests/test_engine_agreement.py) check the results of both
against the reference engine.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepvec
from cepvec.errors import CepvecOverflowError
from cepvec.kernels import linear as K
from cepvec.kernels.linear import chain, run as linear_run, windows
from tests.strategies import examples


#: time gaps between events: some ties, mostly windows that hold a few events
_GAPS = st.sampled_from([0, 1, 1, 1, 2, 3])
#: rows of the start vector's ones: mostly the counts' own start e_0, also other rows and two ones
_ONES = st.one_of(st.just([0]), st.lists(st.integers(0, 4), min_size=1, max_size=2, unique=True))
#: positions whose steps are a SUM's (the event's weight, >= 0: the inverse loops' condition), and the weights
_WEIGHTED = st.one_of(st.just(frozenset()), st.frozensets(st.integers(0, 3), min_size=1, max_size=2))
_WEIGHTS = st.lists(st.integers(0, 5), min_size=60, max_size=60)


def _sequence_programs(pattern: list[int], n_types: int, weighted=frozenset()) -> tuple[list, int]:
    """The programs of ``SEQ`` over ``pattern`` (a type per position, types may repeat): state ``i``
    counts the matches of the first ``i`` positions, or sums the products of the weights of the
    positions in ``weighted`` (the event's weight 0); the last state is the output row."""
    k = len(pattern)
    progs = []
    for ty in range(n_types):
        trips = [(i + 1, i, 0 if i in weighted else -1) for i in range(k) if pattern[i] == ty]
        progs.append((trips, set(), pattern[-1] == ty))
    return progs, k


def _segments(pattern, events, cuts, ones, weighted=frozenset(), weights=()):
    """The program table of ``SEQ`` over ``pattern``, its output row ``k``, a start vector with ones at
    ``ones`` (one or two rows, taken modulo ``k + 1``: the fast loops take one or two ones, ``j0`` and
    ``j1``, -1 for none; a start of ``e_0`` counts the matches), and the events ``(gap, type)`` cut into
    segments at ``cuts``, each tie sorted by rank as the engine does:
    ``(PT, k, v0, j0, j1, t, prog, seg_lo, seg_hi, ev_w)``. With positions ``weighted``, event ``i``
    weighs ``weights[i]`` there (a SUM's steps)."""
    progs, k = _sequence_programs(pattern, 3, weighted)
    PT = K.pack_programs(progs, np.array([k]))
    js = sorted({j % (k + 1) for j in ones})
    v0 = np.zeros(k + 1, np.int64)
    v0[js] = 1
    j0, j1 = js[0], (js[1] if len(js) > 1 else -1)
    t = np.cumsum([g for g, _ in events]).astype(np.int64)
    prog = np.array([p for _, p in events], np.int64)
    bounds = sorted({0, len(events), *(c for c in cuts if c < len(events))})
    seg_lo = np.array(bounds[:-1], np.int64)
    seg_hi = np.array(bounds[1:], np.int64)
    ev_w = (np.array(weights[:len(events)], np.int64).reshape(-1, 1) if weighted
            else np.zeros((len(events), 0), np.int64))
    if len(seg_lo) and K.order_ties(seg_lo, seg_hi, t, prog, ev_w, PT):
        K.order_long_ties(seg_lo, seg_hi, t, prog, ev_w, PT)
    return PT, k, v0, np.int64(j0), np.int64(j1), t, prog, seg_lo, seg_hi, ev_w


def test_count_and_sum_steps_are_invertible_and_the_others_are_not():
    out = np.array([3])
    PT = K.pack_programs([([(1, 0, -1)], set(), False), ([(2, 1, -1), (1, 0, -1)], set(), False),
                          ([(3, 2, -1)], set(), True), ([(2, 1, 0)], set(), False)],  # SUM(b.x): a weight
                         out)
    assert all(PT[PT[p]] & K.F_INV for p in range(4))
    for prog in [([(1, 0, -1), (1, 1, -1)], set(), False),  # A+: a self-loop
                 ([], {1}, False)]:  # a negation resets row 1
        PT = K.pack_programs([([(1, 0, -1)], set(), False), prog, ([(3, 2, -1)], set(), True)], out)
        assert not PT[PT[1]] & K.F_INV


@settings(max_examples=examples(300), deadline=None)
@given(pattern=st.lists(st.integers(0, 2), min_size=1, max_size=4),
       events=st.lists(st.tuples(_GAPS, st.integers(0, 2)), min_size=5, max_size=60),
       w=st.integers(1, 12), cuts=st.lists(st.integers(1, 60), max_size=3), replay=st.integers(0, 4),
       ones=_ONES, weighted=_WEIGHTED, weights=_WEIGHTS)
def test_the_inverse_loop_agrees_with_the_two_stack_queue(pattern, events, w, cuts, replay, ones, weighted,
                                                         weights):
    PT, k, v0, j0, j1, t, prog, seg_lo, seg_hi, ev_w = _segments(pattern, events, cuts, ones, weighted, weights)
    D, n_seg = k + 1, len(seg_lo)
    seg_pid = np.arange(n_seg, dtype=np.int64)
    seg_replay = np.minimum(seg_hi - seg_lo, replay).astype(np.int64)
    X_stack = np.arange(n_seg * D, dtype=np.int64).reshape(n_seg, D)  # totals carried from before
    X_inv = X_stack.copy()
    slow_stack = np.zeros(n_seg, np.bool_)
    slow_inv = np.zeros(n_seg, np.bool_)
    err = np.zeros(3, np.int64)
    windows._drive_within(np.int64(w), seg_lo, seg_hi, seg_pid, seg_replay, t, prog, ev_w, PT, v0, j0,
                          j1, X_stack, err, slow_stack)
    err_inv = np.zeros(3, np.int64)
    windows._drive_within_inverse(np.int64(w), seg_lo, seg_hi, seg_pid, seg_replay, t, prog, ev_w, PT, v0,
                                  j0, j1, X_inv, err_inv, slow_inv)
    assert err[0] == 0 and err_inv[0] == 0
    assert slow_inv.tolist() == slow_stack.tolist()
    assert X_inv.tolist() == X_stack.tolist()


@settings(max_examples=examples(300), deadline=None)
@given(pattern=st.lists(st.integers(0, 2), min_size=1, max_size=6),
       events=st.lists(st.tuples(_GAPS, st.integers(0, 2)), min_size=5, max_size=60),
       w=st.integers(1, 12), cuts=st.lists(st.integers(1, 60), max_size=3), replay=st.integers(0, 4),
       seed=st.integers(0, 2 ** 32 - 1))
def test_the_chain_loop_agrees_with_the_inverse_loop(pattern, events, w, cuts, replay, seed):
    """``chain.DRIVE_WITHIN_CHAIN[L]`` (the map in registers, rows 0 .. L - 1) against ``run_segments``
    without it (the inverse loop, and the general loop for the ties it cannot take) on plain sequences
    of 1 to 6 occurrences, types repeating (an event that binds several occurrences), replayed events
    and carried totals. The chain loop gets each tie in a random order (its segments with ties apply a
    time stamp's events as one map), the reference the tie sort's order: the same totals, and no
    segment left to the general loop."""
    PT, k, v0, j0, j1, t, prog, seg_lo, seg_hi, ev_w = _segments(pattern, events, cuts, [0])
    bits = chain.chain_bits(PT, v0)
    assert bits is not None and bits.tolist() == [sum(1 << i for i, ty in enumerate(pattern) if ty == p)
                                                  for p in range(3)]
    n_seg = len(seg_lo)
    seg_pid = np.arange(n_seg, dtype=np.int64)[::-1].copy()  # partitions in another order than segments
    seg_replay = np.minimum(seg_hi - seg_lo, replay).astype(np.int64)
    for i, lo in enumerate(seg_lo):  # carried events precede the batch's first time stamp: none is a tie's part
        while 0 < seg_replay[i] < seg_hi[i] - lo and t[lo + seg_replay[i]] == t[lo + seg_replay[i] - 1]:
            seg_replay[i] -= 1
    X_ref = np.arange(n_seg * (k + 1), dtype=np.int64).reshape(n_seg, k + 1)
    X_chain = X_ref.copy()
    none = np.zeros(n_seg, np.int64)
    args = (np.zeros(0, np.int64), np.int64(0), t, prog, ev_w, PT, v0, np.array([k]))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(linear_run, "CHAIN_LOOP", False)
        linear_run.run_segments(K.MODE_WITHIN, w, 1, True, seg_lo, seg_hi, seg_pid, seg_replay, none, none, *args,
                                X_ref, np.zeros(n_seg, np.int64), np.zeros(3, np.int64))
    shuffled = prog.copy()
    rng = np.random.default_rng(seed)
    for lo, hi in zip(seg_lo, seg_hi):  # each run of equal times in a random order
        for tv in np.unique(t[lo:hi]):
            idx = lo + np.flatnonzero(t[lo:hi] == tv)
            shuffled[idx] = shuffled[rng.permutation(idx)]
    slow = np.zeros(n_seg, np.bool_)
    chain.DRIVE_WITHIN_CHAIN[k](np.int64(w), seg_lo, seg_hi, seg_pid, seg_replay, t, shuffled, bits, X_chain, slow)
    assert not slow.any()
    assert X_chain.tolist() == X_ref.tolist()


def test_only_plain_sequences_take_the_chain_loop():
    """``chain_bits``: a bit mask per program for count steps ``(i + 1, i)`` from ``e_0``; None for a
    self-loop (Kleene), a negation's reset, a weight (SUM), a step that skips a row, another start
    vector, or a sequence longer than ``MAX_CHAIN``."""
    out = np.array([3])
    steps = [([(1, 0, -1)], set(), False), ([(2, 1, -1)], set(), False), ([(3, 2, -1)], set(), True)]
    v0 = np.array([1, 0, 0, 0])
    assert chain.chain_bits(K.pack_programs(steps, out), v0).tolist() == [1, 2, 4]
    both = [([(1, 0, -1), (3, 2, -1)], set(), True), steps[1]]  # SEQ(A, B, A): A binds two occurrences
    assert chain.chain_bits(K.pack_programs(both, out), v0).tolist() == [5, 2]
    for other in [([(1, 0, -1), (1, 1, -1)], set(), False),  # A+: a self-loop
                  ([], {1}, False),  # a negation resets row 1
                  ([(2, 1, 0)], set(), False),  # SUM(B.x): a coefficient from the event
                  ([(2, 0, -1)], set(), False)]:  # a step from row 0 to row 2
        assert chain.chain_bits(K.pack_programs([steps[0], other, steps[2]], out), v0) is None
    assert chain.chain_bits(K.pack_programs(steps, out), np.array([0, 1, 0, 0])) is None
    assert chain.chain_bits(K.pack_programs(steps, out), np.array([1, 0, 1, 0])) is None
    n = chain.MAX_CHAIN + 1
    longer = [([(i + 1, i, -1)], set(), i == n - 1) for i in range(n)]
    assert chain.chain_bits(K.pack_programs(longer, np.array([n])), np.eye(n + 1, dtype=np.int64)[0]) is None


def test_chain_within_answers_each_program_set_afresh():
    """``chain_within`` keeps its answers by programs and start vector: programs of one length
    asked in turn get their own bits (or None), a caller that writes into the bits it got
    changes no later answer, and the chain loop switched off is heeded whatever was asked before
    (the answers kept while it was off are not given after)."""
    out = np.array([3])
    v0 = np.array([1, 0, 0, 0])
    seq = K.pack_programs([([(1, 0, -1)], set(), False), ([(2, 1, -1)], set(), False),
                           ([(3, 2, -1)], set(), True)], out)
    kleene = K.pack_programs([([(1, 0, -1)], set(), False), ([(2, 1, -1), (2, 2, -1)], set(), False),
                              ([(3, 2, -1)], set(), True)], out)
    for _ in range(2):
        assert linear_run.chain_within(K.MODE_WITHIN, seq, v0).tolist() == [1, 2, 4]
        assert linear_run.chain_within(K.MODE_WITHIN, kleene, v0) is None
        assert linear_run.chain_within(K.MODE_SLIDE, seq, v0) is None
        assert linear_run.chain_within(K.MODE_WITHIN, seq, v0.astype(np.float64)) is None
        linear_run.chain_within(K.MODE_WITHIN, seq, v0)[:] = 0
        with pytest.MonkeyPatch.context() as mp:  # the switch the references and asv baselines use
            mp.setattr(linear_run, "CHAIN_LOOP", False)
            assert linear_run.chain_within(K.MODE_WITHIN, seq, v0) is None


@pytest.mark.parametrize("tie", [1, 2, 4])
@pytest.mark.parametrize(("per_type", "overflows"), [(1000, False), (1500, True)])
def test_a_chain_count_past_int64_is_an_error(per_type, overflows, tie):
    """SEQ of six occurrences over six blocks of ``per_type`` events, ``tie`` events per time stamp:
    ``per_type ** 6`` matches, 10^18 (exact) or 1.1·10^19 (past int64: the chain loop leaves the
    segment to the general loop, which raises). Totals wrap to negative values on the way, which the
    loop's sign test catches; with ties (the group loop) the products of a count and a value too."""
    n = 6 * per_type
    df = pl.DataFrame({"type": [*np.repeat(list("ABCDEF"), per_type), "Z"],
                       "time": [*(i // tie for i in range(n)), 10 ** 6]})
    text = "RETURN COUNT(*) PATTERN SEQ(A, B, C, D, E, F) WITHIN 100000"  # (the Z: a window shorter than the input)
    if overflows:
        with pytest.raises(CepvecOverflowError):
            cepvec.run(text, df)
    else:
        assert cepvec.run(text, df)["COUNT(*)"].to_list() == [per_type ** 6]


@pytest.mark.parametrize(("per_type", "last", "ties"), [(5000, "F", 6), (35000, "E", 13)])
def test_a_tie_times_a_count_past_int64_is_an_error(per_type, last, ties):
    """A time stamp's events apply as one map in the group loop: ``ties`` events of one step times a
    partial count near 2^62. The product passes 2^64 and wraps to a positive value, which no sign test
    sees: ``6 * 5000^5`` at the END step (the total), ``13 * 35000^4`` at the fifth (a partial count).
    Both are past int64, so the run raises."""
    types = "ABCDEF"
    before = types[:types.index(last)]
    n = len(before) * per_type
    df = pl.DataFrame({"type": [*np.repeat(list(before), per_type), *[last] * ties, *types[types.index(last) + 1:], "Z"],
                       "time": [*range(n), *[n] * ties, *range(n + 1, n + 6 - len(before)), 10 ** 7]})
    text = "RETURN COUNT(*) PATTERN SEQ(A, B, C, D, E, F) WITHIN 1000000"  # (the Z: a window shorter than the input)
    with pytest.raises(CepvecOverflowError):
        cepvec.run(text, df)


@settings(max_examples=examples(300), deadline=None)
@given(pattern=st.lists(st.integers(0, 2), min_size=1, max_size=4),
       events=st.lists(st.tuples(_GAPS, st.integers(0, 2)), min_size=5, max_size=60),
       w=st.integers(1, 12), s=st.integers(1, 12), cuts=st.lists(st.integers(1, 60), max_size=3),
       start=st.integers(-3, 3), ones=_ONES, cap=st.booleans(), weighted=_WEIGHTED, weights=_WEIGHTS)
def test_the_inverse_slide_loop_agrees_with_the_two_stack_queue(pattern, events, w, s, cuts, start, ones,
                                                                 cap, weighted, weights):
    """The same for ``WITHIN w SLIDE s`` (``_drive_slide_inverse``: the windows each segment closes,
    resumed where a segment starts (``next_k``), up to a limit inside or past the input)."""
    PT, k, v0, j0, j1, t, prog, seg_lo, seg_hi, ev_w = _segments(pattern, events, cuts, ones, weighted, weights)
    n_seg = len(seg_lo)
    seg_pid = np.arange(n_seg, dtype=np.int64)
    limit = np.int64((int(t[-1]) if len(t) else 0) + (w + s if cap else 0))
    out_rows = np.array([k, k - 1] if k > 1 else [k], np.int64)
    got = {}
    for name, drive in [("stack", windows._drive_slide), ("inverse", windows._drive_slide_inverse)]:
        next_k = np.full(max(n_seg, 1), start, np.int64)
        err = np.zeros(3, np.int64)
        slow = np.zeros(n_seg, np.bool_)
        outs = drive(np.int64(w), np.int64(s), seg_lo, seg_hi, seg_pid, limit, t, prog, ev_w, PT, v0, j0,
                     j1, out_rows, next_k, err, slow)
        assert err[0] == 0
        got[name] = ([o.tolist() for o in outs], next_k.tolist(), slow.tolist())
    assert got["inverse"] == got["stack"]


@settings(max_examples=examples(300), deadline=None)
@given(pattern=st.lists(st.integers(0, 2), min_size=1, max_size=4),
       events=st.lists(st.tuples(_GAPS, st.integers(0, 2)), min_size=5, max_size=60),
       w=st.integers(1, 12), cuts=st.lists(st.integers(1, 60), max_size=3),
       emit=st.lists(st.integers(0, 150), max_size=30), ones=_ONES, weighted=_WEIGHTED, weights=_WEIGHTS)
def test_the_inverse_emit_loop_agrees_with_the_two_stack_queue(pattern, events, w, cuts, emit, ones, weighted,
                                                              weights):
    """The same for ``WITHIN w EMIT CHANGES`` (``_drive_emit_inverse``: a result at each emit time,
    over the window before it; emit times before, between, on and after the events)."""
    PT, k, v0, j0, j1, t, prog, seg_lo, seg_hi, ev_w = _segments(pattern, events, cuts, ones, weighted, weights)
    n_seg = len(seg_lo)
    seg_pid = np.arange(n_seg, dtype=np.int64)
    emit_times = np.unique(np.array(emit + [int(x) for x in t[::4]], np.int64))
    # each segment visits the emit times from a point of its own (a range of the one array)
    seg_emit_lo = (np.arange(n_seg, dtype=np.int64) * 3) % max(len(emit_times), 1)
    seg_emit_hi = np.full(n_seg, len(emit_times), np.int64)
    out_rows = np.array([k, k - 1] if k > 1 else [k], np.int64)
    got = {}
    for name, drive in [("stack", windows._drive_emit), ("inverse", windows._drive_emit_inverse)]:
        err = np.zeros(3, np.int64)
        slow = np.zeros(n_seg, np.bool_)
        outs = drive(np.int64(w), seg_lo, seg_hi, seg_pid, seg_emit_lo, seg_emit_hi, emit_times, t, prog, ev_w, PT,
                     v0, j0, j1, out_rows, err, slow)
        assert err[0] == 0
        got[name] = ([o.tolist() for o in outs], slow.tolist())
    assert got["inverse"] == got["stack"]


def _seven_a(n: int, w: int) -> tuple[str, pl.DataFrame, int]:
    """``SEQ`` of seven ``A`` within ``w`` over ``n`` A events one time unit apart, and its count:
    the match ending at event ``e`` takes 6 of the ``min(e, w - 1)`` events before it."""
    q = f"RETURN COUNT(*) PATTERN SEQ(A a1, A a2, A a3, A a4, A a5, A a6, A a7) WITHIN {w}"
    df = pl.DataFrame({"type": ["A"] * n, "time": np.arange(n, dtype=np.int64)})
    return q, df, sum(math.comb(min(e, w - 1), 6) for e in range(n))


@pytest.mark.parametrize("n", [3000, 3500])
def test_a_count_that_leaves_int64_on_the_inverse_loop_raises_and_one_below_is_exact(n):
    """The window holds up to 1 199 events: its map fits in int64 (at most C(1199, 7) ~ 6.7e17), the
    total of 2 600 events does not (~9.8e18), that of 2 000 does (~6.5e18). The inverse loop leaves
    a segment whose sum overflows to the general loop, which raises."""
    q, df, want = _seven_a(n, 1200)
    if want < 2**63:
        assert cepvec.run(q, df)["COUNT(*)"].to_list() == [want]
    else:
        with pytest.raises(CepvecOverflowError):
            cepvec.run(q, df)
        assert cepvec.run(q, df, numeric="float64")["COUNT(*)"][0] == pytest.approx(want, rel=1e-9)


_SUMS = ["RETURN id, COUNT(*), SUM(B.k), AVG(C.k) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 6",
         "RETURN id, SUM(A.k), SUM(C.k) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 9 SLIDE 3",
         "RETURN id, COUNT(*), SUM(B.k) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 5 EMIT CHANGES"]


@pytest.mark.parametrize("text", _SUMS)
@pytest.mark.parametrize("lowest", [0, -2])
def test_integer_sums_take_the_inverse_loops_only_with_weights_of_zero_or_more(text, lowest, monkeypatch):
    """A SUM of an integer column is a step of the event's weight: with every weight >= 0 its window's
    map is undone exactly (the inverse loops), with one below 0 the two-stack queue takes it. Both give
    the reference engine's rows."""
    drives = {}
    for name in ("_drive_within", "_drive_slide", "_drive_emit"):
        for kind in ("", "_inverse"):
            f = getattr(linear_run, name + kind)
            monkeypatch.setattr(linear_run, name + kind,
                                lambda *a, _f=f, _n=kind or "_stack": drives.update({_n: True}) or _f(*a))
    rng = np.random.default_rng(7)
    n = 120
    df = pl.DataFrame({"type": np.array(list("ABCD"))[rng.integers(0, 4, n)],
                       "time": np.sort(rng.integers(0, 60, n)), "id": rng.integers(0, 3, n),
                       "k": rng.integers(lowest, 9, n)})
    got = cepvec.run(text, df)
    want = cepvec.run(text, df, engine="reference")
    assert got.sort(got.columns).equals(want.select(got.columns).sort(got.columns))
    # (the counts of a query take an inverse or the chain loop either way)
    assert ("_stack" in drives) == (lowest < 0) and ("_inverse" in drives or lowest < 0)


@pytest.mark.parametrize("weight", [2 ** 40, 2 ** 46])
def test_a_sum_that_leaves_int64_on_the_inverse_loop_raises_and_one_below_is_exact(weight):
    """64 A, 64 B of weight ``weight``, 64 C, one window: SUM(B.k) = 64^3 * weight, 2^58 (exact) or 2^64
    (raises): the inverse loop leaves the segment whose sum overflows to the general loop."""
    df = pl.DataFrame({"type": ["A"] * 64 + ["B"] * 64 + ["C"] * 64, "time": np.arange(192, dtype=np.int64),
                       "k": [0] * 64 + [weight] * 64 + [0] * 64})
    q = "RETURN SUM(B.k) PATTERN SEQ(A, B, C) WITHIN 1000 SLIDE 1000"
    if 64 ** 3 * weight < 2 ** 63:
        assert cepvec.run(q, df)["SUM(B.k)"].to_list() == [64 ** 3 * weight]
    else:
        with pytest.raises(CepvecOverflowError):
            cepvec.run(q, df)


def test_a_later_part_of_the_pattern_that_leaves_int64_raises_without_a_match():
    """docs/semantics.md 7.4: the window's map counts the runs of seven B (up to C(2499, 7) > 2^63)
    although no A comes before them; the run raises rather than trust a number."""
    q = "RETURN COUNT(*) PATTERN SEQ(A a, B b1, B b2, B b3, B b4, B b5, B b6, B b7) WITHIN 2500"
    df = pl.DataFrame({"type": ["C"] + ["B"] * 3000 + ["A"], "time": np.arange(3002, dtype=np.int64)})
    with pytest.raises(CepvecOverflowError):
        cepvec.run(q, df)
    assert cepvec.run(q, df, numeric="float64").height == 0


def test_a_tie_whose_product_wraps_past_int64_is_an_error():
    """Four END events of one time stamp after 5 405^5 (just above 2^62) partial matches: the group
    loop adds 4 x 5 405^5, which wraps to a small positive int64 (no negative sum shows it); its float
    test on the product sends the segment to the general loop, which raises."""
    m = 5405
    types = [*np.repeat(list("ABCDE"), m), "F", "F", "F", "F", "Z"]
    times = [*range(5 * m), 5 * m, 5 * m, 5 * m, 5 * m, 10 ** 6]
    df = pl.DataFrame({"type": types, "time": times})
    with pytest.raises(CepvecOverflowError):
        cepvec.run("RETURN COUNT(*) PATTERN SEQ(A, B, C, D, E, F) WITHIN 100000", df)
