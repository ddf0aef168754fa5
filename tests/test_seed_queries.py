"""Every query printed in the five seed papers (tests/fixtures/seed_queries.json).

``expect: "ok"`` queries compile, explain and round-trip through render;
the others raise the promised error, whose message names the construct.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cepvec
from cepvec import CepvecQueryError, NotSupportedError
from cepvec.lang.parser import parse
from cepvec.lang.render import render

SEEDS = json.loads((Path(__file__).parent / "fixtures" / "seed_queries.json").read_text())
OK = [s for s in SEEDS if s["expect"] == "ok"]
FAILING = [s for s in SEEDS if s["expect"] != "ok"]
ERROR_TYPES = {"never adjacent": CepvecQueryError, "not supported": NotSupportedError}


def ids(seeds):
    return [s["id"] for s in seeds]


def test_fixture_shape():
    assert len({s["id"] for s in SEEDS}) == len(SEEDS)
    papers = {s["paper"] for s in SEEDS}
    assert len(papers) == 5, papers
    for s in SEEDS:
        assert {"id", "paper", "where", "text", "expect"} <= s.keys(), s["id"]
        assert s["expect"] == "ok" or s["expect"]["error"] in ERROR_TYPES, s["id"]
    assert len(SEEDS) >= 49 and len(OK) >= 45
    assert set(ids(FAILING)) == set(NAMED)  # every failing seed says what its message names


@pytest.mark.parametrize("seed", OK, ids=ids(OK))
def test_ok_query_compiles_and_explains(seed):
    q = cepvec.compile(seed["text"])
    plan = q.explain()
    assert plan.startswith(f"query: {' '.join(seed['text'].split())}\n")
    assert "GRETA template (positive pattern):" in plan
    assert f"output columns: {', '.join(q.output_columns)}" in plan
    assert q.aggs, "every query has at least one aggregate (COUNT(*) by default)"
    # rendering the tree gives a query that compiles to the same plan
    again = cepvec.compile(render(parse(seed["text"])))
    assert again.ast == q.ast
    assert (again.template, again.negations, again.equivalences) == (q.template, q.negations, q.equivalences)
    assert again.output_columns == q.output_columns


@pytest.mark.parametrize("seed", FAILING, ids=ids(FAILING))
def test_failing_query_raises_the_promised_error(seed):
    expect = seed["expect"]
    cls = ERROR_TYPES[expect["error"]]
    with pytest.raises(cls) as info:
        cepvec.compile(seed["text"])
    err = info.value
    assert isinstance(err, cls)
    assert expect["error"] in err.message
    if "construct" in expect:
        assert expect["construct"] in err.message
    # the caret points into the query at the offending predicate
    assert err.line == 1 and err.text and err.text in seed["text"]


# What each failing seed must name: the offending construct, quoted as written.
NAMED = {
    "aseq_app3": ["p1.amount + p2.amount + p3.amount > 10000", "never adjacent", "p1, p2 and p3"],
    "sase_misplaced_inventory": ["x.shelf_id = z.shelf_id", "never adjacent", "x and z"],
    "sase_q3": ["x1.attr4 < x4.attr4", "never adjacent", "x1 and x4"],
    "saseplus_q3": ["avg(a[..i-1].price)", "not supported"],
}


@pytest.mark.parametrize("seed", FAILING, ids=ids(FAILING))
def test_failing_query_message_names_the_construct(seed):
    with pytest.raises(CepvecQueryError) as info:
        cepvec.compile(seed["text"])
    for part in NAMED[seed["id"]]:
        assert part in info.value.message, part


def test_saseplus_q3_reports_the_range_aggregate():
    seed = next(s for s in SEEDS if s["id"] == "saseplus_q3")
    with pytest.raises(NotSupportedError) as info:
        cepvec.compile(seed["text"])
    err = info.value
    # a[1].volume > 1000 alone is the first event of the run (docs/matching.md); the aggregate over
    # the run's prefix avg(a[..i-1].price) is the one construct left unsupported
    assert "avg(a[..i-1].price)" in err.message
    assert err.text == "avg(a[..i-1].price)"
    # without it the query compiles, and the match engine lists its matches (tests/test_match_engine.py)
    q = cepvec.compile(seed["text"].replace(" and a[i].price > avg(a[..i-1].price)", ""))
    assert q.position_texts == ("a[1].volume > 1000",)
