"""Compiler: semantic checks (exact messages), the GRETA template, negations,
predicate classification, windows, aggregates and ``Query.explain()``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import cepvec
from cepvec import CepvecQueryError, NotSupportedError
from cepvec.lang import ast as A
from cepvec.plan.ir import Equivalence, Window
from cepvec.registry import choose

DOCS = Path(__file__).resolve().parent.parent / "docs" / "language.md"


def compile_error(text: str, cls=CepvecQueryError) -> CepvecQueryError:
    with pytest.raises(cls) as info:
        cepvec.compile(text)
    return info.value


def transitions(t) -> set[tuple]:
    return {(tr.src, tr.dst, tr.kind, tr.guards) for tr in t.transitions}


def ref(var, attr):
    return A.Ref(var, attr)


PREV, NEXT = "$prev", "$next"


# ============================================================================ semantic errors
# (query, error class, exact message, (line, col) or None, quoted text or None)
SEMANTIC_ERRORS = [
    ("RETURN COUNT(*) PATTERN A WHERE Z.x > 1", CepvecQueryError,
     "unknown variable 'Z' in WHERE; the pattern declares: A", (1, 33), "Z.x > 1"),
    ("RETURN COUNT(Z) PATTERN SEQ(A a, B)", CepvecQueryError,
     "unknown variable 'Z' in COUNT(Z); the pattern declares: B, a", (1, 8), "COUNT(Z)"),
    ("RETURN COUNT(*) PATTERN A WHERE [P.g]", CepvecQueryError,
     "unknown variable 'P' in WHERE; the pattern declares: A", (1, 34), "P.g"),
    ("RETURN SUM(N.x) PATTERN SEQ(A, NOT N, B)", CepvecQueryError,
     "SUM(N.x) aggregates over 'N', which is negated (NOT); a negated event is never part of a match, "
     "so it has nothing to aggregate", (1, 8), "SUM(N.x)"),
    ("RETURN COUNT(*) PATTERN NOT A", CepvecQueryError,
     "NOT cannot be the whole pattern: negation is only allowed inside SEQ(...), between, before or after "
     "positive parts, e.g. SEQ(A, NOT C, B)", (1, 25), "NOT A"),
    ("RETURN COUNT(*) PATTERN (NOT A)+", CepvecQueryError,
     "Kleene plus over a negation, (NOT P)+, means the same as NOT P; write NOT P inside SEQ(...)",
     (1, 25), "(NOT A)+"),
    ("RETURN COUNT(*) PATTERN SEQ(A, NOT NOT B, C)", CepvecQueryError,
     "double negation NOT NOT P is not allowed; write P", (1, 32), "NOT NOT B"),
    ("RETURN COUNT(*) PATTERN SEQ(NOT A)", CepvecQueryError,
     "SEQ(...) needs at least one positive (non-negated) part", (1, 25), "SEQ(NOT A)"),
    ("RETURN COUNT(*) PATTERN (SEQ(NOT C, A, B))+", NotSupportedError,
     "not supported: NOT C at the start of a SEQ nested inside Kleene plus; docs/semantics.md defines negated "
     "start and end only for the whole pattern. Move the NOT between two positive parts", (1, 30), "NOT C"),
    ("RETURN COUNT(*) PATTERN SEQ(A, NOT SEQ(C, D, NOT E), B)", NotSupportedError,
     "not supported: NOT E at the end of a SEQ nested inside another NOT; docs/semantics.md defines negated "
     "start and end only for the whole pattern. Move the NOT between two positive parts", (1, 46), "NOT E"),
    ("RETURN COUNT(*) PATTERN SEQ(A, (SEQ(A, B, NOT E, NOT F))+, B)", NotSupportedError,
     "not supported: NOT E, NOT F at the end of a SEQ nested inside Kleene plus; docs/semantics.md defines negated "
     "start and end only for the whole pattern. Move the NOT between two positive parts", (1, 43),
     "NOT E, NOT F"),
    ("RETURN COUNT(*) PATTERN (SEQ(A a, NOT N n, C c))+ WHERE a.id < n.id", NotSupportedError,
     "not supported: predicate a.id < n.id relates negated variable 'n' to a positive variable; only equality "
     "of one attribute across the whole pattern (an equivalence test such as [id]) may involve a negated "
     "variable", (1, 57), "a.id < n.id"),
    ("RETURN x, COUNT(*) PATTERN A", CepvecQueryError,
     "RETURN lists attribute 'x', which is not a GROUP-BY attribute; add GROUP-BY x or aggregate it, "
     "e.g. MAX(v.x)", (1, 8), "x"),
    ("RETURN COUNT(*), COUNT(*) PATTERN A", CepvecQueryError,
     "two output columns are named 'COUNT(*)': COUNT(*) and COUNT(*); give one of them another name with AS",
     (1, 18), "COUNT(*)"),
    ("RETURN COUNT(*) AS n, SUM(A.x) AS n PATTERN A", CepvecQueryError,
     "two output columns are named 'n': COUNT(*) AS n and SUM(A.x) AS n; give one of them another name with AS",
     (1, 23), "SUM(A.x)"),
    ("RETURN g, COUNT(*) AS g PATTERN A GROUP-BY g", CepvecQueryError,
     "two output columns are named 'g': g and COUNT(*) AS g; give one of them another name with AS",
     (1, 11), "COUNT(*)"),
    ("RETURN COUNT(*) AS g PATTERN A GROUP-BY g", CepvecQueryError,
     "two output columns are named 'g': GROUP-BY g and COUNT(*) AS g; give one of them another name with AS",
     (1, 8), "COUNT(*)"),
    ("RETURN COUNT(*) AS window_end PATTERN A WITHIN 2 SLIDE 1", CepvecQueryError,
     "two output columns are named 'window_end': the column window_end of WITHIN ... SLIDE and COUNT(*) AS "
     "window_end; give one of them another name with AS", (1, 8), "COUNT(*)"),
    ("RETURN g AS time, COUNT(*) PATTERN A GROUP-BY g EMIT CHANGES", CepvecQueryError,
     "two output columns are named 'time': g AS time and the time column 'time' of EMIT CHANGES; give one of "
     "them another name with AS", (1, 8), "g AS time"),
    ("PATTERN A AGG COUNT, COUNT", CepvecQueryError,
     "two output columns are named 'COUNT': COUNT and COUNT; give one of them another name with AS",
     (1, 22), "COUNT"),
    ("RETURN COUNT(*) PATTERN A WITHIN 10 SLIDE 2 EMIT CHANGES", NotSupportedError,
     "not supported: EMIT CHANGES with SLIDE; use WITHIN w EMIT CHANGES for continuous results, or WITHIN w "
     "SLIDE s for one row per window", (1, 43), "2"),
    ("RETURN COUNT(*) PATTERN SEQ(A a, B a)", CepvecQueryError,
     "variable 'a' is declared twice in the pattern; give each occurrence its own name, e.g. SEQ(A a1, B, A a2)",
     (1, 34), "B a"),
    ("RETURN COUNT(*) PATTERN SEQ(A x, NOT B, A x)", CepvecQueryError,
     "variable 'x' is declared twice in the pattern; give each occurrence its own name, e.g. SEQ(A a1, B, A a2)",
     (1, 41), "A x"),
    ("RETURN COUNT(*) PATTERN SEQ(A, B A)", CepvecQueryError,
     "variable 'A' has the name of an event type used in the pattern; choose another variable name",
     (1, 32), "B A"),
    ("RETURN COUNT(A) PATTERN SEQ(B A, A)", CepvecQueryError,
     "variable 'A' has the name of an event type used in the pattern; choose another variable name",
     (1, 29), "B A"),
    ("RETURN COUNT(*) PATTERN SEQ(B, NOT C A, A)", CepvecQueryError,
     "variable 'A' has the name of an event type used in the pattern; choose another variable name",
     (1, 36), "C A"),
    ("RETURN COUNT(*) PATTERN SEQ(A A, B, A)", CepvecQueryError,
     "variable 'A' has the name of an event type used in the pattern; choose another variable name",
     (1, 29), "A A"),
    ("RETURN COUNT(A) PATTERN SEQ(A, NOT A, B)", CepvecQueryError,
     "COUNT(A) aggregates over 'A', which names a positive and a negated (NOT) occurrence; name the positive "
     "one (e.g. A a1) and aggregate over that variable", (1, 8), "COUNT(A)"),
    ("RETURN COUNT(*) PATTERN SEQ(A a, B b) WHERE b.id = NEXT(b).id", CepvecQueryError,
     "predicate b.id = NEXT(b).id relates two consecutive b events, but b never follows itself in the pattern "
     "(it would under Kleene plus: B+ b), so it cannot be aggregated online", (1, 45), "b.id = NEXT(b).id"),
    ("RETURN COUNT(*) PATTERN (SEQ(A a, B b))+ WHERE b.x < NEXT(b).x", CepvecQueryError,
     "predicate b.x < NEXT(b).x relates two consecutive b events, but b never follows itself in the pattern "
     "(it would under Kleene plus: B+ b), so it cannot be aggregated online", (1, 48), "b.x < NEXT(b).x"),
    ("RETURN COUNT(*) PATTERN SEQ(A a, B b) WHERE b[i].x > b[i-1].x", CepvecQueryError,
     "predicate b[i].x > b[i-1].x relates two consecutive b events, but b never follows itself in the pattern "
     "(it would under Kleene plus: B+ b), so it cannot be aggregated online", (1, 45), "b[i].x > b[i-1].x"),
    ("RETURN COUNT(*) PATTERN SEQ(A a, B+ b, (SEQ(C c, D d))+) WHERE b[b.LEN].x < a.x", CepvecQueryError,
     "predicate b[b.LEN].x < a.x compares the last b with a, but a never comes right after b in the pattern, "
     "so it cannot be aggregated online; b[b.LEN] may only be compared with the variable right after b",
     (1, 64), "b[b.LEN].x < a.x"),
    ("RETURN COUNT(*) PATTERN SEQ((SEQ(A a, D d))+, B+ b, C c) WHERE b[1].x < c.x", CepvecQueryError,
     "predicate b[1].x < c.x compares the first b with c, but c never comes right before b in the pattern, "
     "so it cannot be aggregated online; b[1] may only be compared with the variable right before b",
     (1, 64), "b[1].x < c.x"),
    ("RETURN COUNT(*) PATTERN A WHERE f(A.x) > 1", NotSupportedError,
     "not supported: function call f(A.x) in a predicate; cepvec predicates use attributes, constants and "
     "+ - * / % only", (1, 33), "f(A.x)"),
    ("RETURN COUNT(*) PATTERN A+ a WHERE a[2].x > 1", NotSupportedError,
     "not supported: array subscript a[2] in a[2].x", (1, 36), "a[2].x"),
    ("RETURN COUNT(*) PATTERN SEQ(A a, B+ b) WHERE b[1].x > b[b.LEN].x", NotSupportedError,
     "not supported: predicate b[1].x > b[b.LEN].x constrains a specific element of a Kleene array variable; "
     "cepvec supports only v[i] vs v[i-1], v[1] alone or vs the variable before the Kleene, and v[v.LEN] "
     "alone or vs the variable after it", (1, 46), "b[1].x > b[b.LEN].x"),
    ("RETURN COUNT(*) PATTERN SEQ(A a, B+ b) WHERE b[i].x > b[i-1].x + a.x", NotSupportedError,
     "not supported: predicate b[i].x > b[i-1].x + a.x mixes b[i-1] with another variable", (1, 46),
     "b[i].x > b[i-1].x + a.x"),
    ("RETURN COUNT(*) PATTERN SEQ(A a, B b, C c) WHERE a.x < NEXT(b).x + NEXT(c).x", CepvecQueryError,
     "predicate a.x < NEXT(b).x + NEXT(c).x uses NEXT(...) of two different variables; use one", (1, 50),
     "a.x < NEXT(b).x + NEXT(c).x"),
    ("RETURN COUNT(*) PATTERN SEQ(A a, B b, C c) WHERE a.x + c.x < NEXT(b).x", CepvecQueryError,
     "predicate a.x + c.x < NEXT(b).x must compare one variable v with NEXT(w): v.attr op NEXT(w).attr",
     (1, 50), "a.x + c.x < NEXT(b).x"),
    ("RETURN COUNT(*) PATTERN A WHERE [id] OR A.x > 1", CepvecQueryError,
     "an equivalence test [...] must stand alone in WHERE, joined by AND", (1, 33), "[id]"),
    ("RETURN COUNT(*) PATTERN A WHERE A.x", CepvecQueryError,
     "WHERE expects a condition (a comparison such as S.price > 10), found A.x", (1, 33), "A.x"),
]


@pytest.mark.parametrize("text,cls,message,pos,quoted", SEMANTIC_ERRORS,
                         ids=[f"semantic{i}" for i in range(len(SEMANTIC_ERRORS))])
def test_semantic_error_exact_message(text, cls, message, pos, quoted):
    err = compile_error(text, cls)
    assert type(err) is cls
    assert err.message == message
    if pos is None:
        assert (err.line, err.col) == (None, None)
        assert str(err) == message
    else:
        assert (err.line, err.col) == pos
        assert err.text == quoted
        assert str(err).startswith(f"{message} (line {pos[0]}, col {pos[1]})\n  {text}\n")
        assert str(err).splitlines()[-1] == "  " + " " * (pos[1] - 1) + "^" * len(quoted)


def test_errors_are_collected_and_raised_once():
    text = ("RETURN COUNT(X), SUM(Y.z), x PATTERN A "
            "WHERE Q.x > 1 AND f(1) > 0 AND R.y < 2 AND S.z > 1")
    err = compile_error(text)
    assert err.message == (
        "unknown variable 'Q' in WHERE; the pattern declares: A\n"
        "6 more problem(s):\n"
        "  - not supported: function call f(1) in a predicate; cepvec predicates use attributes, constants "
        "and + - * / % only\n"
        "  - unknown variable 'R' in WHERE; the pattern declares: A\n"
        "  - unknown variable 'S' in WHERE; the pattern declares: A\n"
        "  … and 3 more")
    assert [type(e) for e in err.errors] == [CepvecQueryError, NotSupportedError] + [CepvecQueryError] * 5
    assert (err.line, err.col) == (1, 46)  # the first problem is located
    # ... and its caret comes right after the first message line, before the other problems
    assert str(err).split("\n") == [
        "unknown variable 'Q' in WHERE; the pattern declares: A (line 1, col 46)",
        f"  {text}",
        "  " + " " * 45 + "^" * len("Q.x > 1"),
        "6 more problem(s):",
        "  - not supported: function call f(1) in a predicate; cepvec predicates use attributes, constants "
        "and + - * / % only",
        "  - unknown variable 'R' in WHERE; the pattern declares: A",
        "  - unknown variable 'S' in WHERE; the pattern declares: A",
        "  … and 3 more"]
    # the combined error is still exactly catchable and keeps the first error's class name
    assert isinstance(err, CepvecQueryError) and not isinstance(err, NotSupportedError)
    assert type(err).__name__ == "CepvecQueryError"


def test_combined_error_survives_pickling():
    import pickle

    err = compile_error("RETURN COUNT(X) PATTERN A WHERE Q.x > 1")
    again = pickle.loads(pickle.dumps(err))
    assert (type(again).__name__, str(again), again.message, len(again.errors)) == (
        "CepvecQueryError", str(err), err.message, 2)


def test_combined_unsupported_errors_keep_their_class():
    err = compile_error("RETURN COUNT(*) PATTERN A WHERE f(A.x) > 1 AND g(A.y) > 1", NotSupportedError)
    assert len(err.errors) == 2
    assert str(err).split("\n")[0].endswith("(line 1, col 33)")


def test_query_errors_are_value_errors():
    with pytest.raises(ValueError):
        cepvec.compile("RETURN COUNT(*) PATTERN NOT A")
    assert issubclass(NotSupportedError, CepvecQueryError)


# ============================================================== chained comparisons next to AND
@pytest.mark.parametrize("where", [
    "a.x < b.x < c.x AND a.y = 1",
    "a.y = 1 AND a.x < b.x < c.x",
    "a.y = 1 AND (a.x < b.x < c.x AND c.y = 2)",
    "a.y = 1 AND a.x < b.x < c.x AND c.y = 2",
])
def test_chained_comparison_next_to_and(where):
    q = cepvec.compile(f"RETURN COUNT(*) PATTERN SEQ(A a, B b, C c) WHERE {where}")
    expected = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A a, B b, C c) "
                              "WHERE a.x < b.x AND b.x < c.x AND a.y = 1")
    assert q.edges.keys() == expected.edges.keys() == {(0, 1), (1, 2)}
    assert [p.text for p in q.edges[(0, 1)]] == ["a.x < b.x"]
    assert [p.text for p in q.edges[(1, 2)]] == ["b.x < c.x"]
    # the top-level conjuncts hold no AND: every comparison of the chain stands alone
    assert not any(isinstance(c, A.BoolOp) and c.op == "AND" for c in q.ast.where)


def test_kindle_chain_with_another_predicate():
    q = cepvec.compile("PATTERN SEQ(Kindle, KindleCase, Stylus) WHERE Kindle.userId = KindleCase.userId = "
                       "Stylus.userId AND Kindle.price > 100 AGG COUNT WITHIN 1hour")
    assert [e.attr for e in q.equivalences] == ["userId"]
    assert q.edges == {} and len(q.local[0]) == 2  # price > 100 and userId IS NOT NULL


# ======================================================================= variable named like a type
def test_variable_named_like_a_later_type():
    err = compile_error("RETURN COUNT(A) PATTERN SEQ(B A, A)")
    assert err.message == ("variable 'A' has the name of an event type used in the pattern; "
                           "choose another variable name")


@pytest.mark.parametrize("text", ["RETURN COUNT(A) PATTERN SEQ(A A, B)", "RETURN COUNT(A) PATTERN SEQ(B, A+ A)",
                                  "RETURN COUNT(A) PATTERN SEQ(ANY(A, C) A, B)"])
def test_variable_naming_its_only_occurrence_by_its_type_is_harmless(text):
    q = cepvec.compile(text)
    (occ,) = [o for o in q.occs if o.name == "A"]
    assert q.aggs[0].occs == (occ.id,)


# ======================================================================= equality rewrite
def _equivs(q):
    return [(e.attr, e.occs) for e in q.equivalences]


def _streams(types, n_streams=40, length=9, seed=7):
    """Small random streams: types, strictly increasing or tied times, ids in {1, 2, null}."""
    import random

    import polars as pl

    rnd = random.Random(seed)
    out = []
    for _ in range(n_streams):
        times = sorted(rnd.randint(1, length + 2) for _ in range(length))
        out.append(pl.DataFrame({
            "type": [rnd.choice(types) for _ in range(length)],
            "time": times,
            "id": pl.Series([rnd.choice([1, 2, 2, None]) for _ in range(length)], dtype=pl.Int64),
        }))
    return out


def _run(q, df):
    import warnings

    with warnings.catch_warnings():
        # a random stream may miss one of the types: cepvec warns, the count is simply empty
        warnings.simplefilter("ignore", cepvec.CepvecWarning)
        return cepvec.run(q, df, engine="reference").to_dicts()


def _brute_seq3(df, a_type, b_type, c_type) -> int:
    """Matches of SEQ(a, b, c) whose three events share a non-null id (each variable bound once)."""
    rows = df.to_dicts()
    n = 0
    for x in rows:
        for y in rows:
            for z in rows:
                if ((x["type"], y["type"], z["type"]) == (a_type, b_type, c_type)
                        and x["time"] < y["time"] < z["time"]
                        and x["id"] is not None and x["id"] == y["id"] == z["id"]):
                    n += 1
    return n


class TestEqualityRewrite:
    """Equalities on one attribute are judged together (union-find plus transition coverage)."""

    @pytest.mark.parametrize("where", ["a.id = c.id AND b.id = c.id", "a.id = b.id AND a.id = c.id",
                                       "c.id = a.id AND b.id = a.id", "a.id = b.id = c.id",
                                       "a.id = c.id = b.id", "b.id = c.id AND c.id = a.id AND a.id = b.id"])
    def test_equalities_connecting_every_variable_become_an_equivalence(self, where):
        text = f"RETURN COUNT(*) PATTERN SEQ(A a, B b, C c) WHERE {where}"
        q = cepvec.compile(text)
        assert _equivs(q) == [("id", None)] and q.edges == {}
        assert q.equivalences[0].text == " AND ".join(
            x.strip() for x in where.replace("a.id = b.id = c.id", "a.id = b.id AND b.id = c.id")
            .replace("a.id = c.id = b.id", "a.id = c.id AND c.id = b.id").split(" AND "))
        # the same as the edge formulation (which is not rewritten: one side is arithmetic)
        edges = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A a, B b, C c) WHERE a.id = b.id + 0 AND b.id = c.id + 0")
        assert edges.equivalences == () and set(edges.edges) == {(0, 1), (1, 2)}
        for df in _streams(["A", "B", "C"], length=14):
            got = _run(q, df)
            assert got == _run(edges, df)
            assert sum(r["COUNT(*)"] for r in got) == _brute_seq3(df, "A", "B", "C")

    def test_equality_chain_across_negation(self):
        q = cepvec.compile("EVENT SEQ(SHELF-READING x, !(COUNTER-READING y), EXIT-READING z) "
                           "WHERE x.id = y.id = z.id WITHIN 12 hours")
        assert _equivs(q) == [("id", None)] and not q.edges
        assert q.equivalences[0].text == "x.id = y.id AND y.id = z.id"
        assert all(any(isinstance(p, A.Unary) and p.op == "NOTNULL" for p in q.local[o.id]) for o in q.occs)

    @pytest.mark.parametrize("where", ["x.id = y.id = z.id", "x.id = y.id AND x.id = z.id",
                                       "z.id = y.id AND y.id = x.id", "x.id = z.id AND z.id = y.id"])
    def test_equalities_through_a_negation_agree_with_the_equivalence(self, where):
        q = cepvec.compile(f"RETURN COUNT(*) PATTERN SEQ(A x, NOT N y, C z) WHERE {where}")
        assert _equivs(q) == [("id", None)] and not q.edges
        explicit = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A x, NOT N y, C z) WHERE [id]")
        for df in _streams(["A", "N", "C"]):
            # [id] written out keeps null ids as their own group; the equalities never hold on null
            assert _run(q, df) == _run(explicit, df.filter(df["id"].is_not_null()))

    def test_kleene_with_every_transition_covered(self):
        q = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A+, B) WHERE A.id = NEXT(A).id AND A.id = B.id")
        assert _equivs(q) == [("id", None)] and q.edges == {}
        edges = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A+, B) WHERE A.id = NEXT(A).id + 0 AND A.id = B.id + 0")
        assert edges.equivalences == () and set(edges.edges) == {(0, 0), (0, 1)}
        for df in _streams(["A", "B"]):
            assert _run(q, df) == _run(edges, df)

    def test_kleene_of_a_seq_with_both_directions_covered(self):
        q = cepvec.compile("RETURN COUNT(*) PATTERN (SEQ(A, B))+ WHERE A.id = B.id")
        assert _equivs(q) == [("id", None)]
        edges = cepvec.compile("RETURN COUNT(*) PATTERN (SEQ(A, B))+ WHERE A.id = B.id + 0")
        assert set(edges.edges) == {(0, 1), (1, 0)}
        for df in _streams(["A", "B"]):
            assert _run(q, df) == _run(edges, df)

    def test_kleene_transition_not_covered_stays_an_edge_predicate(self):
        # A.id = B.id constrains the last A and the B only; A -> A is free
        q = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A+, B) WHERE A.id = B.id")
        assert q.equivalences == () and set(q.edges) == {(0, 1)}
        equiv = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A+, B) WHERE [id]")
        import polars as pl

        df = pl.DataFrame({"type": ["A", "A", "B"], "time": [1, 2, 3], "id": [1, 2, 2]})
        assert _run(q, df) == [{"COUNT(*)": 2}]  # (a2, b) and (a1, a2, b)
        assert _run(equiv, df) == [{"COUNT(*)": 1}]  # only (a2, b)
        same = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A+, B) WHERE A.id = B.id + 0")
        for df in _streams(["A", "B"]):
            assert _run(q, df) == _run(same, df)

    def test_kleene_does_not_get_transitivity(self):
        # a.id = c.id relates a and c, which are never adjacent: with b+ binding several events the
        # equalities do not tie b's events to each other, so nothing is rewritten
        # (a predicate over the run instead: cepvec.run refuses it under engine="auto", docs/semantics.md 4.2)
        q = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A a, B+ b, C c) WHERE a.id = c.id AND b.id = c.id")
        assert q.equivalences == () and [p.text for p in q.run_preds] == ["a.id = c.id"]
        assert "never adjacent" in q.not_adjacent[0][0] and "a.id = c.id" in q.not_adjacent[0][0]

    def test_one_event_matches_keep_the_edge_predicate(self):
        # A+ has one-event matches: no transition to constrain, and [id] would drop a null id
        q = cepvec.compile("RETURN COUNT(*) PATTERN A+ WHERE A.id = NEXT(A).id")
        assert q.equivalences == () and set(q.edges) == {(0, 0)}
        import polars as pl

        df = pl.DataFrame({"type": ["A", "A"], "time": [1, 2], "id": pl.Series([None, None], dtype=pl.Int64)})
        assert _run(q, df) == [{"COUNT(*)": 2}]  # the two one-event matches

    @pytest.mark.parametrize("where,edges", [
        ("a.id = b.id", {(0, 1)}),  # b -> c not covered, c not connected
        ("b.id = c.id", {(1, 2)}),
    ])
    def test_equalities_leaving_a_variable_out_stay_edge_predicates(self, where, edges):
        q = cepvec.compile(f"RETURN COUNT(*) PATTERN SEQ(A a, B b, C c) WHERE {where}")
        assert q.equivalences == () and set(q.edges) == edges

    def test_equality_leaving_a_variable_out_between_non_adjacent_variables_is_rejected(self):
        q = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A a, B b, C c) WHERE a.id = c.id")
        with pytest.raises(CepvecQueryError) as info:
            choose(q)
        assert "never adjacent" in info.value.message

    def test_equality_to_a_negated_variable_must_connect_every_event(self):
        # z is not tied to x and y: no equivalence, and x.id = y.id alone is not supported
        # (a condition of the negation on the match instead: an N blocks only with x's id, semantics 5)
        q = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A x, NOT N y, C z) WHERE x.id = y.id")
        assert q.equivalences == () and [(p.text, p.at) for p in q.run_preds] == [("x.id = y.id", ("NOT", 0))]

    def test_equalities_in_two_separate_parts_stay_edge_predicates(self):
        q = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A a, NOT SEQ(C c, D d), B b) "
                           "WHERE a.id = b.id AND c.id = d.id")
        assert q.equivalences == () and set(q.edges) == {(0, 3), (1, 2)}

    def test_next_equality_that_relates_no_transition_is_not_used(self):
        err = compile_error("RETURN COUNT(*) PATTERN SEQ(A a, B b, C c) WHERE a.id = NEXT(c).id AND b.id = c.id")
        assert "a.id = NEXT(c).id" in err.message

    def test_equalities_on_different_attributes_are_judged_apart(self):
        q = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A a, B b, C c) "
                           "WHERE a.id = c.id AND b.id = c.id AND a.k = b.k")
        assert _equivs(q) == [("id", None)] and set(q.edges) == {(0, 1)}


# ============================================================================ GRETA template
class TestTemplate:
    def test_kleene_of_seq(self):
        q = cepvec.compile("RETURN COUNT(*) PATTERN (SEQ(A+, B))+")
        t = q.template
        assert [o.label for o in q.occs] == ["A", "B"]
        assert (t.states, t.start, t.end) == ((0, 1), 0, 1)
        assert transitions(t) == {(0, 0, "+", ()), (0, 1, "SEQ", ()), (1, 0, "+", ())}
        assert t.preds(0) == (0, 1) and t.preds(1) == (0,)
        assert q.negations == () and q.is_kleene

    def test_nested_negation_inside_kleene(self):
        q = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A+, NOT SEQ(C, NOT E, D), B)+")
        assert [(o.name, o.negated, o.neg) for o in q.occs] == [
            ("A", False, None), ("C", True, 0), ("E", True, 1), ("D", True, 0), ("B", False, None)]
        t = q.template
        assert (t.states, t.start, t.end) == ((0, 4), 0, 4)
        assert transitions(t) == {(0, 0, "+", ()), (0, 4, "SEQ", (0,)), (4, 0, "+", ())}
        outer, inner = q.negations
        assert (outer.id, outer.prev, outer.next, outer.parent, outer.placement) == (0, 0, 4, None, "middle")
        assert (outer.template.states, outer.template.start, outer.template.end) == ((1, 3), 1, 3)
        assert transitions(outer.template) == {(1, 3, "SEQ", (1,))}
        assert (inner.id, inner.prev, inner.next, inner.parent, inner.placement) == (1, 1, 3, 0, "middle")
        assert (inner.template.states, transitions(inner.template)) == ((2,), set())

    def test_repeated_types_figure_13(self):
        q = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A+, B, A, A+, B+)")
        t = q.template
        assert [o.types for o in q.occs] == [("A",), ("B",), ("A",), ("A",), ("B",)]
        assert (t.states, t.start, t.end) == ((0, 1, 2, 3, 4), 0, 4)
        assert transitions(t) == {
            (0, 0, "+", ()), (3, 3, "+", ()), (4, 4, "+", ()),
            (0, 1, "SEQ", ()), (1, 2, "SEQ", ()), (2, 3, "SEQ", ()), (3, 4, "SEQ", ())}
        assert [t.preds(s) for s in t.states] == [(0,), (0,), (1,), (2, 3), (3, 4)]

    def test_minimal_trend_length(self):
        t = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A, A, A+)").template
        assert transitions(t) == {(0, 1, "SEQ", ()), (1, 2, "SEQ", ()), (2, 2, "+", ())}

    def test_nested_seq_is_flattened(self):
        flat = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A, B, C, D)")
        nested = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A, SEQ(B, SEQ(C)), D)")
        assert nested.template == flat.template and nested.root == flat.root


class TestNegations:
    def test_negated_end(self):
        q = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A+, NOT E)")
        (n,) = q.negations
        assert (n.prev, n.next, n.placement) == (0, None, "end")
        assert transitions(q.template) == {(0, 0, "+", ())}

    def test_negated_start(self):
        q = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(NOT E, A+)")
        (n,) = q.negations
        assert (n.prev, n.next, n.placement) == (None, 1, "start")
        assert (q.template.start, q.template.end) == (1, 1)

    def test_middle_negation_guards_the_transition(self):
        q = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(DELL, IPIX, !QQQ, AMAT)")
        (n,) = q.negations
        assert (n.prev, n.next, n.placement) == (1, 3, "middle")
        assert transitions(q.template) == {(0, 1, "SEQ", ()), (1, 3, "SEQ", (0,))}

    def test_adjacent_negations_merge_into_one_sequence(self):
        merged = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A, NOT C, NOT D, B)")
        written = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A, NOT SEQ(C, D), B)")
        (n,) = merged.negations
        assert (n.prev, n.next) == (0, 3)
        assert transitions(n.template) == {(1, 2, "SEQ", ())} == transitions(written.negations[0].template)
        assert transitions(merged.template) == {(0, 3, "SEQ", (0,))}

    def test_negation_previous_and_following_in_kleene(self):
        q = cepvec.compile("RETURN COUNT(*) PATTERN (SEQ(A+, NOT C, B))+")
        (n,) = q.negations
        assert (n.prev, n.next) == (0, 2)
        # only the SEQ transition A -> B is guarded; B -> A (+) is not
        assert transitions(q.template) == {(0, 0, "+", ()), (0, 2, "SEQ", (0,)), (2, 0, "+", ())}


# ==================================================================== predicate classification
class TestPredicates:
    Q1 = ("RETURN sector, COUNT(*) PATTERN Stock S+ WHERE [company, sector] AND S.price > NEXT(S).price "
          "AND S.volume > 100 GROUP-BY sector WITHIN 10 minutes SLIDE 10 seconds")

    def test_local_equivalence_edge(self):
        q = cepvec.compile(self.Q1)
        assert q.local == {0: (A.Cmp(">", A.Ref(None, "volume"), A.Num(100)),)}
        assert q.equivalences == (Equivalence("company", None, "company"), Equivalence("sector", None, "sector"))
        (edge,) = q.edges[(0, 0)]
        assert edge.expr == A.Cmp(">", ref(PREV, "price"), ref(NEXT, "price"))
        assert edge.text == "S.price > NEXT(S).price"
        assert q.partition_by == ("sector", "company")

    def test_bare_attribute_is_local_on_every_event_negated_too(self):
        q = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A a, NOT N n, C c) WHERE kind = 'x'")
        cond = A.Cmp("=", A.Ref(None, "kind"), A.Str("x"))
        assert q.local == {0: (cond,), 1: (cond,), 2: (cond,)}

    def test_equivalence_with_a_constant_is_local_everywhere(self):
        q = cepvec.compile("EVENT SEQ(MEDICINE-TAKEN x, MEDICINE-TAKEN y) WHERE [name='John'] "
                           "^ (x.amount + y.amount) > 1000")
        cond = A.Cmp("=", A.Ref(None, "name"), A.Str("John"))
        assert q.local == {0: (cond,), 1: (cond,)}
        assert list(q.edges) == [(0, 1)] and q.equivalences == ()

    def test_qualified_equivalence(self):
        q = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(NOT Accident A, Position P+) WHERE [P.vehicle, segment]")
        assert q.equivalences == (Equivalence("vehicle", frozenset({1}), "P.vehicle"),
                                  Equivalence("segment", None, "segment"))
        assert q.partition_by == ("segment",)
        assert q.qualified_equivalences == (q.equivalences[0],)

    def test_cross_variable_edge_in_both_directions(self):
        q = cepvec.compile("RETURN COUNT(*) PATTERN (SEQ(A, B))+ WHERE A.x < B.x")
        assert q.edges[(0, 1)][0].expr == A.Cmp("<", ref(PREV, "x"), ref(NEXT, "x"))
        assert q.edges[(1, 0)][0].expr == A.Cmp("<", ref(NEXT, "x"), ref(PREV, "x"))

    def test_edge_predicate_inside_a_negation(self):
        q = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A, NOT SEQ(C c, D d), B) WHERE c.x < d.x")
        assert q.edges == {(1, 2): (q.edges[(1, 2)][0],)}
        assert q.edges[(1, 2)][0].expr == A.Cmp("<", ref(PREV, "x"), ref(NEXT, "x"))

    def test_sase_plus_array_references(self):
        q = cepvec.compile("EVENT SEQ(Alert a, Shipment+ b[]) WHERE skip_till_any_match(a, b[]) "
                           "{ a.kind = 'contaminated' and b[1].from = a.site and b[i].from = b[i-1].to } "
                           "WITHIN 3 hours")
        assert q.strategy == "skip-till-any-match"
        assert q.local[0] == (A.Cmp("=", A.Ref(None, "kind"), A.Str("contaminated")),)
        assert q.edges[(0, 1)][0].expr == A.Cmp("=", ref(NEXT, "from"), ref(PREV, "site"))
        assert q.edges[(1, 1)][0].expr == A.Cmp("=", ref(NEXT, "from"), ref(PREV, "to"))

    def test_last_element_against_the_following_variable(self):
        q = cepvec.compile("EVENT SEQ(Stock+ a[], Stock b) WHERE [symbol] and b.volume < 80%*a[a.LEN].volume")
        (edge,) = q.edges[(0, 1)]
        assert edge.expr == A.Cmp("<", ref(NEXT, "volume"), A.Bin("*", A.Num(0.8), ref(PREV, "volume")))
        assert edge.text == "b.volume < 80%*a[a.LEN].volume"

    def test_equality_chain_becomes_equivalence(self):
        q = cepvec.compile("PATTERN SEQ(Kindle, KindleCase, Stylus) "
                           "WHERE Kindle.userId = KindleCase.userId = Stylus.userId AGG COUNT WITHIN 1hour")
        assert q.equivalences == (Equivalence(
            "userId", None, "Kindle.userId = KindleCase.userId AND KindleCase.userId = Stylus.userId"),)
        assert q.edges == {} and q.partition_by == ("userId",)

    def test_equalities_through_a_negated_variable_cover_every_event(self):
        q = cepvec.compile("EVENT SEQ(SHELF-READING x, !(COUNTER-READING y), EXIT-READING z) "
                           "WHERE x.id = y.id ∧ x.id = z.id WITHIN 12 hours")
        assert q.equivalences == (Equivalence("id", None, "x.id = y.id AND x.id = z.id"),)
        assert q.edges == {} and q.partition_by == ("id",)

    def test_equality_not_touching_the_negation_covers_positive_events(self):
        q = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A a, NOT N n, C c) WHERE a.id = c.id")
        assert q.equivalences == (Equivalence("id", frozenset({0, 2}), "a.id = c.id"),)
        assert q.partition_by == ()

    def test_next_equality_on_kleene_becomes_equivalence(self):
        q = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A+, B) WHERE A.id = NEXT(A).id AND A.id = B.id")
        assert q.equivalences == (Equivalence("id", None, "A.id = NEXT(A).id AND A.id = B.id"),)

    def test_next_equality_on_a_lone_kleene_stays_an_edge_predicate(self):
        # A+ matches a single event, whose null id an equivalence would drop: not rewritten
        q = cepvec.compile("RETURN COUNT(*) PATTERN A+ WHERE A.id = NEXT(A).id")
        assert q.equivalences == () and list(q.edges) == [(0, 0)]

    def test_equality_covering_some_transitions_stays_an_edge_predicate(self):
        q = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A a, B b, C c) WHERE a.id = b.id")
        assert q.equivalences == () and list(q.edges) == [(0, 1)]
        q = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A+, B) WHERE A.id = NEXT(A).id")
        assert q.equivalences == () and list(q.edges) == [(0, 0)]


# ============================================================================ returns, window
class TestReturnsAndWindow:
    def test_labels_aliases_and_group_columns(self):
        q = cepvec.compile("RETURN g AS grp, COUNT(A), SUM(A.x) AS s, avg( A . x ) PATTERN SEQ(A, B, A) "
                           "GROUP-BY g WITHIN 5 s")
        assert [(a.func, a.occs, a.attr, a.label) for a in q.aggs] == [
            ("COUNT", (0, 2), None, "COUNT(A)"), ("SUM", (0, 2), "x", "s"), ("AVG", (0, 2), "x", "avg(A.x)")]
        assert q.group_labels == ("grp",)
        assert q.output_columns == ("grp", "COUNT(A)", "s", "avg(A.x)")
        assert q.window == Window("within", A.Duration(5, "s"))

    @pytest.mark.parametrize("text,label", [
        ("EVENT A", "COUNT(*)"), ("PATTERN A", "COUNT(*)"), ("PATTERN A AGG COUNT", "COUNT"),
        ("PATTERN A AGG COUNT AS n", "n"), ("EVENT A RETURN count(*)", "count(*)"),
    ])
    def test_default_and_aseq_count_labels(self, text, label):
        (agg,) = cepvec.compile(text).aggs
        assert agg.star and agg.label == label

    @pytest.mark.parametrize("clause,kind,columns", [
        ("", "none", ("COUNT(*)",)),
        ("WITHIN 10 s", "within", ("COUNT(*)",)),
        ("WITHIN 10 s EMIT CHANGES", "emit", ("time", "COUNT(*)")),
        ("WITHIN 10 s SLIDE 2 s", "slide", ("window_start", "window_end", "COUNT(*)")),
    ])
    def test_window_kinds(self, clause, kind, columns):
        q = cepvec.compile(f"RETURN COUNT(*) PATTERN SEQ(A, B) {clause}")
        assert q.window.kind == kind and q.output_columns == columns

    def test_emit_changes_time_column_is_the_input_time_column(self):
        q = cepvec.compile("RETURN COUNT(*) PATTERN A WITHIN 1 min EMIT CHANGES", time_col="ts")
        assert q.output_columns == ("ts", "COUNT(*)")


# ================================================================================== explain
class TestExplain:
    def test_template_negations_predicates_window(self):
        text = "RETURN COUNT(*) PATTERN SEQ(A+, NOT SEQ(C, NOT E, D), B)+ WHERE A.x < NEXT(A).x WITHIN 10 s SLIDE 3 s"
        lines = cepvec.compile(text).explain().splitlines()
        for line in [
            f"query: {text}",
            "GRETA template (positive pattern):",
            "  states: [0] A, [4] B",
            "  start: [0] A   end: [4] B   mid: -",
            "  predecessors of [0] A: [0] A, [4] B",
            "  transition +: [0] A -> [0] A; edge predicates: A.x < NEXT(A).x",
            "  transition SEQ: [0] A -> [4] B  guarded by NOT #0",
            "  transition +: [4] B -> [0] A",
            "negative sub-patterns:",
            "  NOT #0 (middle): previous [0] A; following [4] B",
            "    states: [1] C, [3] D",
            "    transition SEQ: [1] C -> [3] D  guarded by NOT #1",
            "  NOT #1 (middle, nested in NOT #0): previous [1] C; following [3] D",
            "    states: [2] E",
            "predicates:",
            "  edge [0] A -> [0] A: A.x < NEXT(A).x",
            "window: WITHIN 10 s SLIDE 3 s (windows [k*s, k*s + w), k >= 0)",
            "event selection: skip-till-any-match",
            "aggregates: COUNT(*)",
            "output columns: window_start, window_end, COUNT(*)",
        ]:
            assert line in lines, line
        assert any(line.startswith("engine (auto): ") for line in lines)

    def test_predicate_classes_and_grouping(self):
        text = ("RETURN sector, COUNT(*) PATTERN Stock S+ WHERE [company, sector] AND S.price > NEXT(S).price "
                "AND S.volume > 100 GROUP-BY sector")
        lines = cepvec.compile(text).explain().splitlines()
        for line in [
            "  local on [0] S: (volume > 100)",
            "  equivalence on company (all events): company",
            "  equivalence on sector (all events): sector",
            "  edge [0] S -> [0] S: S.price > NEXT(S).price",
            "window: none (all matches in the input, one row per group)",
            "group by: sector; partition by: sector, company",
            "output columns: sector, COUNT(*)",
        ]:
            assert line in lines, line

    def test_negated_start_end_and_emit(self):
        lines = cepvec.compile("PATTERN SEQ(NOT E, A+, NOT F) WHERE [id] AGG COUNT WITHIN 1 min EMIT CHANGES"
                               ).explain().splitlines()
        for line in [
            "  NOT #0 (start): previous - (negated start); following [1] A",
            "  NOT #1 (end): previous [1] A; following - (negated end)",
            "  equivalence on id (all events): id",
            "window: WITHIN 1 min EMIT CHANGES (one row per group and END-event time t, over matches in (t - w, t])",
            "output columns: time, COUNT",
        ]:
            assert line in lines, line

    def test_no_predicates_and_bare_duration(self):
        lines = cepvec.compile("EVENT SEQ(E1, E2) WITHIN 10000").explain().splitlines()
        assert "  none" in lines
        assert "window: WITHIN 10000 (time column unit) (last.time - first.time < w; one row per group)" in lines
        assert "group by: -; partition by: -" in lines


# ============================================================================ docs catalogue
def _doc_examples() -> list[tuple[str, str]]:
    """(query, expected output) pairs from the error catalogue in docs/language.md."""
    text = DOCS.read_text()
    blocks = re.findall(r"```text\n(>>> .*?)```", text, flags=re.S)
    out = []
    for block in blocks:
        lines = block.rstrip("\n").split("\n")
        query = []
        while lines and (lines[0].startswith(">>> ") or lines[0].startswith("... ")):
            query.append(lines.pop(0)[4:])
        out.append(("\n".join(query), "\n".join(lines)))
    return out


def _actual(query: str) -> str:
    try:
        cepvec.compile(query)
    except (cepvec.CepvecError, TypeError) as e:
        return f"{type(e).__name__}: {e}"
    return "(compiles)"


def test_docs_error_catalogue_matches_the_code():
    examples = _doc_examples()
    assert len(examples) >= 60, "the error catalogue in docs/language.md is missing"
    for query, expected in examples:
        actual = _actual(query)
        assert [x.rstrip() for x in actual.split("\n")] == [x.rstrip() for x in expected.split("\n")], query
