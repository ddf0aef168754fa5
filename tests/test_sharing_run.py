"""``cepvec.run_many``: each frame is exactly what ``cepvec.run`` returns for that query.

* Hypothesis: workloads of generated queries (every shape, window and aggregate of
  ``tests/strategies.py``) over generated streams, every sharing mode, and the same
  input cut into batches at random points;
* input checks and errors: a query that fails names itself.
"""

from __future__ import annotations

import re
import warnings

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import cepvec
from cepvec.sharing.run import run_many as run_many_cut
from tests.strategies import FLOATS_INF, examples, queries, shared_workloads, streams, sweep_size, tiny_streams

pytestmark = pytest.mark.filterwarnings("ignore::cepvec.errors.CepvecWarning")
MODES = ("none", "auto", "greedy", "exhaustive")


def alone(text, df, **kw) -> pl.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cepvec.run(text, df, **kw)


def assert_same(got: dict, texts: dict, df, **kw) -> None:
    assert list(got) == list(texts)
    for name, text in texts.items():
        assert_frame_equal(got[name], alone(text, df, **kw), check_exact=True), name


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(queries(), min_size=1, max_size=4), streams(), st.sampled_from(MODES), st.data())
def test_run_many_equals_run(texts, df, sharing, data):
    named = {f"n{i}": t for i, t in enumerate(texts)}
    assert_same(cepvec.run_many(named, df, sharing=sharing), named, df)
    cuts = data.draw(st.lists(st.integers(0, len(df)), max_size=4), label="cuts")
    assert_same(run_many_cut(named, df, sharing=sharing, batches=cuts), named, df)


def test_list_names_and_float_numeric():
    ev = pl.DataFrame({"type": ["A", "B", "A", "B"], "time": [1, 2, 3, 5], "x": [1, 2, 3, 4]})
    texts = ["RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 3", "RETURN SUM(B.x), AVG(A.x) PATTERN SEQ(A, B)"]
    got = cepvec.run_many(texts, ev, numeric="float64")
    assert_same(got, {"q0": texts[0], "q1": texts[1]}, ev, numeric="float64")


def test_type_and_time_column_names_as_in_run():
    ev = pl.DataFrame({"kind": ["A", "B", "C", "B"], "ts": [1, 2, 3, 4]})
    texts = {"ab": "RETURN COUNT(*) PATTERN SEQ(A, B)", "abc": "RETURN COUNT(*) PATTERN SEQ(A, B, C)"}
    got = cepvec.run_many(texts, ev, type_col="kind", time_col="ts")
    for name, text in texts.items():
        assert_frame_equal(got[name], cepvec.run(text, ev, type_col="kind", time_col="ts"))
    compiled = {"ab": cepvec.compile(texts["ab"])}
    with pytest.raises(cepvec.CepvecPlanError, match="^query 'ab': type_col='kind' was given, but the compiled query "
                                                     "reads column 'type'"):
        cepvec.run_many(compiled, ev, type_col="kind", time_col="ts")


def test_a_query_that_fails_to_compile_names_itself():
    with pytest.raises(cepvec.CepvecSyntaxError, match=r"^query 'bad': "):
        cepvec.run_many({"ok": "RETURN COUNT(*) PATTERN SEQ(A, B)", "bad": "RETURN COUNT(*) PATTERN SEQ(A,"},
                        pl.DataFrame({"type": ["A"], "time": [1]}))


def test_a_query_that_reads_a_missing_column_names_itself():
    ev = pl.DataFrame({"type": ["A", "B"], "time": [1, 2]})
    with pytest.raises(cepvec.CepvecPlanError, match=r"^query 'q1': attribute 'id' used by the query"):
        cepvec.run_many(["RETURN COUNT(*) PATTERN SEQ(A, B)", "RETURN id, COUNT(*) PATTERN SEQ(A, B) GROUP-BY id"],
                        ev)


def test_bad_arguments():
    ev = pl.DataFrame({"type": ["A"], "time": [1]})
    with pytest.raises(cepvec.CepvecPlanError, match="sharing must be one of 'auto', 'none'"):
        cepvec.run_many(["RETURN COUNT(*) PATTERN A"], ev, sharing="all")
    with pytest.raises(cepvec.CepvecTypeError, match="queries must be a dict"):
        cepvec.run_many("RETURN COUNT(*) PATTERN A", ev)
    with pytest.raises(cepvec.CepvecTypeError, match="queries is empty"):
        cepvec.run_many({}, ev)
    with pytest.raises(cepvec.CepvecPlanError, match="numeric must be"):
        cepvec.run_many(["RETURN COUNT(*) PATTERN A"], ev, numeric="int32")
    with pytest.raises(cepvec.UnsupportedByEngine, match=r"^query 'q0': engine='aseq' cannot run"):
        cepvec.run_many(["RETURN COUNT(*) PATTERN A+"], ev, engine="aseq")


def test_negative_times_with_slide_fail_as_in_run():
    ev = pl.DataFrame({"type": ["A", "B"], "time": [-1, 2]})
    with pytest.raises(cepvec.CepvecDataError, match=r"^query 'q1': time column 'time' has a negative time at row 0"):
        cepvec.run_many(["RETURN COUNT(*) PATTERN SEQ(A, B)", "RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 2 SLIDE 1"],
                        ev)


# --------------------------------------------------------------------------- the shared executor
@settings(max_examples=examples(160), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shared_workloads(), streams(types="ABC", floats=FLOATS_INF), st.sampled_from(MODES[1:]),
       st.sampled_from(("int64", "float64")),
       st.data())
def test_shared_executor_equals_run_and_reference(texts, df, sharing, numeric, data):
    wl = cepvec.workload(texts, sharing=sharing)
    runs_shared = {n for n, t in texts.items() if "PATTERN SEQ" in t}
    assert runs_shared <= set(wl.plan.shared_queries) or len(runs_shared) < 2
    # the type column as String, Categorical or Enum (more categories than types, in another order):
    # the executor reads the physical ids of the last two; the frames are those of the String column
    encoding = data.draw(st.sampled_from([pl.String, pl.Categorical, pl.Enum(list("ZEDCBA"))]), label="type dtype")
    got = cepvec.run_many(wl, df.with_columns(pl.col("type").cast(encoding)), sharing=sharing, numeric=numeric)
    assert_same(got, texts, df, numeric=numeric)
    for name, text in texts.items():
        ref = alone(text, df, engine="reference", numeric=numeric)
        assert_frame_equal(got[name], ref, check_exact=True)
    cuts = data.draw(st.lists(st.integers(0, len(df)), max_size=4), label="cuts")
    assert_same(run_many_cut(wl, df, sharing=sharing, numeric=numeric, batches=cuts), texts, df, numeric=numeric)


_WINDOWS = ["WITHIN 40 SLIDE 10", "WITHIN 45 SLIDE 10", "WITHIN 70 SLIDE 1", "WITHIN 7 SLIDE 20", "WITHIN 40",
            "WITHIN 400", "WITHIN 40 EMIT CHANGES", "EMIT CHANGES"]


@pytest.mark.parametrize("window, rows", [(w, None) for w in _WINDOWS]
                         + [(w, (16, 64)) for w in ("WITHIN 70 SLIDE 1", "WITHIN 400", "WITHIN 40 EMIT CHANGES")])
def test_shared_executor_on_many_events_and_partitions(window, rows, monkeypatch):
    """Ties in several partitions at once, panes of gcd(WITHIN, SLIDE), more than 62 pane slots (no bit
    mask), gaps between windows; under WITHIN alone, ordinal slots that grow past the 62 of the mask
    (WITHIN 400: about 110 distinct times of a partition within it); EMIT CHANGES with and without
    WITHIN (with [id] beyond GROUP-BY: an END event gives every partition of its group a row); the
    same rows however the input is cut. ``rows``: output buffers of 16 rows at first and 64 at most, so
    the kernel stops for room at many time stamps, larger buffers and smaller ones, and resumes."""
    import numpy as np

    from cepvec.sharing.executor import SharedRun

    if rows is not None:
        monkeypatch.setattr(SharedRun, "FIRST_ROWS", rows[0])
        monkeypatch.setattr(SharedRun, "MAX_ROWS", rows[1])
    rng = np.random.default_rng(5)
    n = 4000
    ev = pl.DataFrame({"type": rng.choice(list("ABCDE"), n), "time": np.sort(rng.integers(0, 2000, n)),
                       "id": rng.integers(0, 7, n), "x": rng.integers(-5, 6, n)})
    texts = {f"q{i}": f"RETURN id, COUNT(*) PATTERN SEQ({', '.join(p)}) GROUP-BY id {window}"
             for i, p in enumerate(["AB", "ABC", "ABCD", "ABD", "BCD", "BCDE", "AEB", "AB", "ABAB"])}
    texts["all"] = f"RETURN COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] {window}"
    texts["all2"] = f"RETURN COUNT(*) PATTERN SEQ(A, B) WHERE [id] {window}"
    # sums of negative and positive integers over a shared prefix, a negation
    texts["sum1"] = f"RETURN id, SUM(b.x), AVG(a.x) PATTERN SEQ(A a, B b, C c) GROUP-BY id {window}"
    texts["sum2"] = f"RETURN id, SUM(b.x) AS s, COUNT(c) PATTERN SEQ(A a, B b, D c) GROUP-BY id {window}"
    texts["sum3"] = f"RETURN SUM(d.x) PATTERN SEQ(A a, NOT C, B b, D d) WHERE [id] {window}"
    wl = cepvec.workload(texts)
    assert set(wl.plan.shared_queries) == set(texts)
    assert_same(cepvec.run_many(wl, ev), texts, ev)
    assert_same(run_many_cut(wl, ev, batches=[1, 999, 1000, 2500]), texts, ev)



@pytest.mark.parametrize("window", ["EMIT CHANGES", "WITHIN 5 EMIT CHANGES"])
def test_emit_changes_over_many_partitions_of_one_group_asks_rows_per_event_not_per_partition(window,
                                                                                                monkeypatch):
    """[id] and no GROUP-BY: 5 000 partitions of one group, about 1 000 events a time stamp. An END event
    gives each of its queries one row, the sum over the group's partitions (``_emit_changes``); the room
    the kernel asks before a time stamp is its events times the queries' rows. It asked that times the
    partitions of the largest group: 10^7 rows here, 8·10^8 at 40 000 partitions (a MemoryError; found
    by a differential fuzzer)."""
    import numpy as np

    from cepvec.sharing.executor import SharedRun

    caps = []
    buffers = SharedRun._buffers
    monkeypatch.setattr(SharedRun, "_buffers", lambda self, cap: caps.append(cap) or buffers(self, cap))
    rng = np.random.default_rng(56)
    n = 20_000
    ev = pl.DataFrame({"type": rng.choice(list("ABCDE"), n), "time": np.sort(rng.integers(0, 20, n)),
                       "id": rng.integers(0, 5_000, n)})
    texts = {"q0": f"RETURN COUNT(*) PATTERN SEQ(E, A, NOT E) WHERE [id] {window}",
             "q1": f"RETURN COUNT(*) PATTERN SEQ(D, B) WHERE [id] {window}"}
    got = cepvec.run_many(texts, ev)
    assert max(caps) <= SharedRun.FIRST_ROWS, caps
    for name, text in texts.items():
        assert_frame_equal(got[name], cepvec.run(text, ev))


@pytest.mark.parametrize("window", ["EMIT CHANGES", "WITHIN 5 EMIT CHANGES"])
def test_emit_changes_over_groups_of_many_partitions_runs_unshared(window):
    """The shared kernel sums a group's partitions at each of its END times: over 2 000 ids of one group
    and 8 000 distinct times that is 2 000 steps an event (0.85 s of 10^4 events, 51 s of 8·10^4, found
    by a differential fuzzer; the queries on their own paths: 0.04 s). Past ``EMIT_STEPS_PER_EVENT`` the
    group's queries run on their own paths; 8 ids stay shared. The frames are ``cepvec.run``'s."""
    import numpy as np

    from cepvec.sharing import run as R

    rng = np.random.default_rng(56)
    n = 8000
    ev = pl.DataFrame({"type": rng.choice(list("ABCDEF"), n), "time": np.arange(n, dtype=np.int64),
                       "id": rng.integers(0, 2000, n)})
    texts = {"q0": f"RETURN COUNT(*) PATTERN SEQ(A, B) WHERE [id] {window}",
             "q1": f"RETURN COUNT(*) PATTERN SEQ(C, D) WHERE [id] {window}"}
    wl = cepvec.workload(texts)
    shared = wl.plan.shared_groups
    assert shared

    def shared_runs(df):
        preps, choices = R.prepare_workload(wl, df)
        return [names for _, _, names in R.WorkloadRun(wl.queries, preps, choices, shared=shared).runs if names]

    assert not shared_runs(ev)
    few = ev.with_columns(pl.col("id") % 8)
    assert shared_runs(few)
    for df in (ev, few):
        assert_same(cepvec.run_many(wl, df), texts, df)


@pytest.mark.parametrize("window", ["WITHIN 40 SLIDE 10", "WITHIN 40", ""])
def test_a_workload_without_negation_or_emit_runs_the_plain_kernel(window, monkeypatch):
    """``run_shared_plain`` (``kernels/sharing.py``) compiles neither negations nor EMIT CHANGES: a
    workload without them runs it, one with a negation or EMIT CHANGES runs ``run_shared``, and the
    plain kernel's rows are the full one's (and those of ``cepvec.run``)."""
    import numpy as np

    from cepvec.kernels import sharing as K
    from cepvec.sharing import run as R

    rng = np.random.default_rng(11)
    n = 1500
    ev = pl.DataFrame({"type": rng.choice(list("ABCDN"), n), "time": np.sort(rng.integers(0, 700, n)),
                       "id": rng.integers(0, 5, n), "x": rng.integers(-5, 6, n)})
    plain = {"q0": f"RETURN id, COUNT(*) PATTERN SEQ(A, B, C) GROUP-BY id {window}",
             "q1": f"RETURN id, COUNT(*) PATTERN SEQ(A, B, D) GROUP-BY id {window}",
             "s": f"RETURN id, SUM(b.x), MAX(c.x) PATTERN SEQ(A a, B b, C c) GROUP-BY id {window}"}

    def kernel_of(texts):
        wl = cepvec.workload(texts)
        preps, _ = R.prepare_workload(wl, ev)
        return R.SharedRun(dict(wl.queries), preps[next(iter(texts))]).kernel

    assert kernel_of(plain) is K.run_shared_plain
    negated = dict(plain, n=f"RETURN id, COUNT(*) PATTERN SEQ(A, NOT N, B) GROUP-BY id {window}")
    assert kernel_of(negated) is K.run_shared
    emit = {k: t.replace(window, "WITHIN 40 EMIT CHANGES") if window else f"{t} EMIT CHANGES"
            for k, t in plain.items() if "MAX" not in t}
    assert kernel_of(emit) is K.run_shared
    got = cepvec.run_many(plain, ev)
    assert_same(got, plain, ev)
    monkeypatch.setattr(K, "run_shared_plain", K.run_shared)  # the full kernel on the same workload
    assert kernel_of(plain) is K.run_shared
    full = cepvec.run_many(plain, ev)
    for name in plain:
        assert_frame_equal(got[name], full[name], check_exact=True)

def test_local_predicates_share_prefixes_where_types_and_predicates_agree():
    """The trie's symbols are (type, local predicates): SEQ(A[x > 1], B, ...) share their first two nodes,
    SEQ(A, B) shares nothing with them, and the predicate x > 1 is one mask column for both positions."""
    from cepvec.sharing.executor import Trie
    from cepvec.sharing.sequences import steps_of

    texts = {"p1": "RETURN COUNT(*) PATTERN SEQ(A a, B b, C c) WHERE a.x > 1",
             "p2": "RETURN COUNT(*) PATTERN SEQ(A a, B b, A c) WHERE a.x > 1 AND c.x > 1",
             "p3": "RETURN COUNT(*) PATTERN SEQ(A a, B b)",
             "p4": "RETURN COUNT(*) PATTERN SEQ(A a, B b) WHERE 1 < a.x AND a.x > 1"}
    wl = cepvec.workload(texts)
    assert set(wl.plan.shared_queries) == set(texts)
    trie = Trie([steps_of(q) for q in wl.queries.values()])
    # nodes: root, A[x>1], A[x>1]B, ..C, ..A[x>1], A, AB (p4's "1 < x" is another text: its own A node, AB node)
    assert trie.preds == [("(x > 1)",), ("(1 < x)", "(x > 1)")]
    assert trie.size == 9
    assert "(A[(x > 1)], B) for {p1, p2}" in wl.explain()
    ev = pl.DataFrame({"type": list("ABACABBCA"), "time": list(range(9)), "x": [0, 5, 2, 1, 3, None, 4, 1, 7]})
    got = cepvec.run_many(wl, ev)
    assert_same(got, texts, ev)
    for name, text in texts.items():
        assert_frame_equal(got[name], alone(text, ev, engine="reference"), check_exact=True)
    assert got["p1"]["COUNT(*)"].to_list() == [4]  # A at 2 and 4 (x > 1), each with B at 5 or 6, then C at 7


PREDICATE_WORKLOAD = {
    "ab_p": "RETURN COUNT(*) PATTERN SEQ(A a, B b) WHERE a.x > 0",
    "ab": "RETURN COUNT(*) PATTERN SEQ(A a, B b)",
    "aba_p": "RETURN COUNT(*) PATTERN SEQ(A a, B b, A c) WHERE a.x > 0 AND c.x = 0",
    "aa_p": "RETURN COUNT(*) PATTERN SEQ(A a, A b) WHERE b.x > 0",
}


def _every_tiny_stream(texts: dict, x=lambda i: i % 2, by_group: bool = True, numeric: str = "int64",
                       cycle: tuple = (), longest: int = 6) -> None:
    """The shared executor runs every query of ``texts``, and on every stream of up to 5 events (6 with
    --slow) of types A, B at times 0, 1, 3 (ties included), x of the i-th event ``x(i)`` (alternating
    0 / 1), gives the reference engine's rows. ``cycle``: instead, the values of x in turn over all
    events of the sweep (so streams see them in different places).

    All streams are one input: stream ``k`` is the group ``id = k`` at times ``SHIFT * k + t`` (a shift
    every SLIDE here divides, so each stream sees the same windows), and each query runs with
    ``GROUP-BY id``: its frame holds every stream's rows, and a difference names the streams.
    ``by_group=False``: ``WHERE [id]`` instead, so the streams are the partitions of one group (under
    EMIT CHANGES, an END event in one stream gives a row that adds up every stream). ``longest``: the
    streams' length in the slow profile (one less by default)."""
    streams = list(tiny_streams(sweep_size(longest), types="AB"))
    df = pl.DataFrame({"time": [_SHIFT * k + t for k, ev in enumerate(streams) for t, _ in ev],
                       "type": [ty for ev in streams for _, ty in ev],
                       "x": [cycle[g % len(cycle)] for g in range(sum(map(len, streams)))] if cycle else
                            [x(i) for ev in streams for i in range(len(ev))],
                       "id": [k for k, ev in enumerate(streams) for _ in ev]},
                      schema={"time": pl.Int64, "type": pl.String, "id": pl.Int64,
                              "x": pl.Float64 if numeric == "float64" else pl.Int64})
    if by_group:
        grouped = {n: re.sub(r"( WITHIN .*| EMIT CHANGES)?$", r" GROUP-BY id\1",
                             t.replace("RETURN ", "RETURN id, ", 1), count=1) for n, t in texts.items()}
    else:
        grouped = {n: t.replace(" WHERE ", " WHERE [id] AND ") if " WHERE " in t else
                   re.sub(r"( WITHIN .*| EMIT CHANGES)?$", r" WHERE [id]\1", t, count=1) for n, t in texts.items()}
    wl = cepvec.workload(grouped)
    assert set(wl.plan.shared_queries) == set(texts)
    got = cepvec.run_many(wl, df, numeric=numeric)
    bad = []
    for name, q in wl.queries.items():
        want = alone(q, df, engine="reference", numeric=numeric)
        if not got[name].equals(want):
            if not by_group:
                bad.append((name, got[name].rows()[:5], want.rows()[:5]))
                continue
            ids = set(got[name].join(want, how="anti", on=got[name].columns, nulls_equal=True)["id"]) | \
                set(want.join(got[name], how="anti", on=want.columns, nulls_equal=True)["id"])
            bad += [(name, streams[k], got[name].filter(pl.col("id") == k).rows(),
                     want.filter(pl.col("id") == k).rows()) for k in sorted(ids)[:2]]
    assert not bad, f"{len(bad)} differ, e.g. {bad[:3]}"


#: time between two streams of a sweep: a multiple of every SLIDE of the sweeps, longer than a stream
_SHIFT = 120


@pytest.mark.parametrize("window", ["", "WITHIN 2 SLIDE 1", "WITHIN 2", "WITHIN 2 EMIT CHANGES"])
def test_local_predicates_on_every_tiny_stream(window):
    """A type with and without predicates, two predicates on one type, a type twice."""
    _every_tiny_stream({n: f"{t} {window}".strip() for n, t in PREDICATE_WORKLOAD.items()})


NEGATION_WORKLOAD = {
    "a_b": "RETURN COUNT(*) PATTERN SEQ(A, B)",
    "a_nb_a": "RETURN COUNT(*) PATTERN SEQ(A, NOT B, A)",
    "a_nbp_a": "RETURN COUNT(*) PATTERN SEQ(A a, NOT B b, A c) WHERE b.x > 0",
    "a_na_b": "RETURN COUNT(*) PATTERN SEQ(A, NOT A, B)",
    "a_nb_b": "RETURN COUNT(*) PATTERN SEQ(A, NOT B, B)",
    "ab_na_b": "RETURN COUNT(*) PATTERN SEQ(A, B, NOT A, B)",
    "a_nb_a_nb_a": "RETURN COUNT(*) PATTERN SEQ(A, NOT B, A, NOT B, A)",
    # negated ends: the matches of a window end at a later N inside it
    "ab_nb": "RETURN COUNT(*) PATTERN SEQ(A, B, NOT B)",
    "ab_na": "RETURN COUNT(*), SUM(b.x) PATTERN SEQ(A a, B b, NOT A)",
    "ab_nap": "RETURN COUNT(*) PATTERN SEQ(A a, B b, NOT A c) WHERE c.x > 0",
    "a_nb_a_nb": "RETURN COUNT(*) PATTERN SEQ(A, NOT B, A, NOT B)",
    # negated starts: no N in the window before the first event (without a window: before it at all)
    "nb_ab": "RETURN COUNT(*) PATTERN SEQ(NOT B, A, B)",
    "na_ab": "RETURN COUNT(*), SUM(b.x) PATTERN SEQ(NOT A, A a, B b)",
    "nap_ab": "RETURN COUNT(*) PATTERN SEQ(NOT A c, A a, B b) WHERE c.x > 0",
    "nb_a_nb_a_nb": "RETURN COUNT(*) PATTERN SEQ(NOT B, A, NOT B, A, NOT B)",
}


AGGREGATE_WORKLOAD = {
    "ab": "RETURN COUNT(*), SUM(a.x), AVG(b.x) PATTERN SEQ(A a, B b)",
    "ab_s": "RETURN SUM(b.x) AS s, COUNT(a) PATTERN SEQ(A a, B b)",
    "aba": "RETURN SUM(c.x), AVG(a.x) PATTERN SEQ(A a, B b, A c)",
    "aa": "RETURN AVG(a.x), SUM(b.x) PATTERN SEQ(A a, A b)",
    "a_na_b": "RETURN SUM(a.x) PATTERN SEQ(A a, NOT A, B b)",
    "ab_mm": "RETURN MIN(a.x), MAX(b.x) PATTERN SEQ(A a, B b)",
    "aba_mm": "RETURN MAX(c.x), MIN(a.x), COUNT(*) PATTERN SEQ(A a, B b, A c)",
    "aa_mm": "RETURN MIN(b.x), MAX(a.x) PATTERN SEQ(A a, A b)",
    "nb_ab_mm": "RETURN MIN(a.x), MAX(b.x) PATTERN SEQ(NOT B, A a, B b)",  # a negated start takes nothing back
}


@pytest.mark.parametrize("window", ["", "WITHIN 2 SLIDE 1", "WITHIN 2", "WITHIN 4", "WITHIN 4 EMIT CHANGES",
                                    "EMIT CHANGES"])
def test_sums_on_every_tiny_stream(window):
    """SUM / AVG / COUNT / MIN / MAX of a position over shared prefixes (channels of the trie), values
    -1, 0, 1, 2 and null: a type twice, a negation, the first and a later position."""
    _every_tiny_stream({n: f"{t} {window}".strip() for n, t in AGGREGATE_WORKLOAD.items()},
                       x=lambda i: (-1, None, 1, 0, 2)[i % 5])


@pytest.mark.parametrize("window", ["", "WITHIN 2 SLIDE 1", "WITHIN 3 SLIDE 2", "WITHIN 4 SLIDE 3", "WITHIN 1 SLIDE 2",
                                    "WITHIN 2", "WITHIN 3", "WITHIN 4", "WITHIN 2 EMIT CHANGES",
                                    "WITHIN 4 EMIT CHANGES", "EMIT CHANGES"])
def test_middle_negations_on_every_tiny_stream(window):
    """A negation between two positions: of the next position's type, of the guarded position's own
    type, with a predicate, twice in one pattern; ties (a negated event at the time of a position does
    not lie between); negated ends (with a predicate, a sum, the last position's own type); negated
    starts (the first position's own type, with a predicate, with every other negation; under WITHIN
    alone not with a negated end, which runs on its own path); EMIT CHANGES with and without WITHIN."""
    texts = {n: f"{t} {window}".strip() for n, t in NEGATION_WORKLOAD.items()}
    if window.startswith("WITHIN") and "SLIDE" not in window and "EMIT" not in window:
        wl = cepvec.workload(texts)
        assert "a negated start and a negated end" in wl.explain()
        del texts["nb_a_nb_a_nb"]
    _every_tiny_stream(texts)


INFINITE_SUM_WORKLOAD = {
    "a_na_b": "RETURN SUM(a.x), AVG(b.x), COUNT(*) PATTERN SEQ(A a, NOT A, B b)",
    "a_nb_a": "RETURN SUM(c.x), SUM(a.x) PATTERN SEQ(A a, NOT B, A c)",
    "a_na_b_s": "RETURN SUM(b.x) PATTERN SEQ(A a, NOT A, B b)",
    "ab_na": "RETURN COUNT(*), SUM(b.x), AVG(a.x) PATTERN SEQ(A a, B b, NOT A)",
    "ab_nb_p": "RETURN SUM(b.x) PATTERN SEQ(A a, B b, NOT B c) WHERE c.x > 0",
    "ab": "RETURN SUM(b.x), AVG(a.x) PATTERN SEQ(A a, B b)",
}


@pytest.mark.parametrize("window", ["", "WITHIN 2 SLIDE 1", "WITHIN 3 SLIDE 2", "WITHIN 2", "WITHIN 4"])
def test_infinite_sums_with_take_backs_on_every_tiny_stream(window):
    """A negation takes a prefix's or a window's earlier sum back by subtraction, where ``inf - inf`` is
    NaN: a float sum of a query with a negation after a position is three channels (its finite
    values and the matches holding +inf and -inf), each exact. Values +inf, -inf, 1.5, NaN and null
    in turn, float64 counts; every query is shared."""
    inf = float("inf")
    _every_tiny_stream({n: f"{t} {window}".strip() for n, t in INFINITE_SUM_WORKLOAD.items()},
                       cycle=(inf, -inf, 1.5, float("nan"), None, inf, 1.5), numeric="float64")


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["", "WITHIN 3 SLIDE 1", "WITHIN 4 SLIDE 2", "WITHIN 3"]),
       st.lists(st.sampled_from(list(INFINITE_SUM_WORKLOAD)), min_size=2, max_size=4, unique=True),
       streams(max_events=10, types="AB", floats=(float("inf"), float("-inf"), 1.5, -2.0, float("nan"))),
       st.data())
def test_infinite_sums_with_take_backs_in_batches(window, names, df, data):
    """The three channels of a float sum under a negation, in streams where most values are infinite,
    cut into batches anywhere (the kernel's state across calls): each frame is the query's own."""
    texts = {n: f"{INFINITE_SUM_WORKLOAD[n].replace('.x', '.v')} {window}".strip() for n in names}
    cuts = data.draw(st.lists(st.integers(0, len(df)), max_size=4), label="cuts")
    assert_same(run_many_cut(texts, df, numeric="float64", batches=cuts), texts, df, numeric="float64")
    for name, text in texts.items():
        assert_frame_equal(alone(text, df, numeric="float64"), alone(text, df, engine="reference", numeric="float64"),
                           check_exact=True)


@pytest.mark.parametrize("window", ["WITHIN 4 EMIT CHANGES", "EMIT CHANGES", "WITHIN 4 SLIDE 2", ""])
def test_partitions_of_one_group(window):
    """[id] and no GROUP-BY: the tiny streams are the partitions of one group, whose rows add them up
    (under EMIT CHANGES at an END time in any of them); negations, sums, and minima and maxima in the
    same channel columns as other queries' sums (a sum added up as a maximum fails it)."""
    texts = {n: f"{t} {window}" for n, t in {**NEGATION_WORKLOAD, **AGGREGATE_WORKLOAD}.items()}
    # without a window every match is in every later row of the one group: the reference engine's work grows
    # with the square of the sweep (11 s of 13 at 6 events), so the unbounded case sweeps one event shorter
    _every_tiny_stream(texts, x=lambda i: (-1, None, 1, 0, 2)[i % 5], by_group=False,
                       longest=5 if window == "EMIT CHANGES" else 6)


def test_shared_overflow_raises_like_run():
    ev = pl.DataFrame({"type": ["A"] * 40 + ["B"] * 40, "time": list(range(80))})
    text = "RETURN COUNT(*) PATTERN SEQ(" + ", ".join(["A a%d" % i for i in range(20)] + ["B b%d" % i for i in range(20)]) + ")"
    with pytest.raises(cepvec.CepvecOverflowError):
        alone(text, ev)
    with pytest.raises(cepvec.CepvecOverflowError, match="overflows"):
        cepvec.run_many({"big": text, "small": "RETURN COUNT(*) PATTERN SEQ(A, B)"}, ev)


def test_a_group_whose_state_passes_the_budget_runs_unshared(monkeypatch):
    """The executor's state is dense per partition (10^5 customers took 24 GB): past ``STATE_BUDGET`` a
    group's queries run on their own paths, with the same frames."""
    import numpy as np

    from cepvec.sharing import run as R

    rng = np.random.default_rng(2)
    n = 3000
    ev = pl.DataFrame({"type": rng.choice(list("ABCD"), n), "time": np.sort(rng.integers(0, 1500, n)),
                       "id": rng.integers(0, 300, n)})
    texts = {f"q{i}": f"RETURN id, COUNT(*) PATTERN SEQ({p}) GROUP-BY id WITHIN 40 SLIDE 10"
             for i, p in enumerate(["A, B", "A, B, C", "A, B, D", "B, C"])}
    wl = cepvec.workload(texts)
    preps, choices = R.prepare_workload(wl, ev)
    shared = wl.plan.shared_groups
    assert shared

    def shared_runs():
        return [names for _, _, names in R.WorkloadRun(wl.queries, preps, choices, shared=shared).runs if names]

    assert shared_runs()
    per_partition = R.SharedRun({n: wl.queries[n] for n in shared[0]}, preps["q0"]).bytes_per_partition()
    monkeypatch.setattr(R, "STATE_BUDGET", per_partition * 300 - 1)  # 300 customers need one byte more
    assert not shared_runs()
    assert_same(cepvec.run_many(wl, ev), texts, ev)
    monkeypatch.setattr(R, "STATE_BUDGET", per_partition * 300)
    assert shared_runs()
