"""Shared multi-query aggregation (issue: Sharon + A-Seq prefix sharing), baselines in the same run.

Sharon's e-commerce workload (Section VIII): 50 item types, 20 customers,
queries of 6-10 types built from a pool of shared segments
(``cepvec.generators.ecommerce_workload``), ``COUNT(*)`` per customer
``WITHIN 20 min SLIDE 1 min`` (q8-q11's window), 10^6 purchases with
uniform or Zipf item popularity (``ecommerce_stream``).

* ``time_run_many``: ``cepvec.run_many(workload, events)`` (compiled
  workload, ``sharing="auto"``: the shared executor runs every query);
* ``time_run_many_texts``: the same from query texts (compiling and planning
  included);
* ``time_none``: ``sharing="none"``: every query on its own path (the linear
  path, one per query) in one pass over the prepared input;
* ``time_per_query``: ``cepvec.run(q, events)`` once per compiled query (the
  strongest single-query baseline: the linear path);
* ``peakmem_*``: peak memory of ``run_many`` and of the per-query loop;
* ``track_events_per_second``: events / s of ``time_run_many``;
* ``SharingPlanner.time_plan``: ``cepvec.workload(texts)`` (compile, Sharon
  graph, pruning, plan finder) for 20 and 120 queries;
* ``SharingAggregates``: the workload with sums (``sums``: every other query
  returns ``SUM`` of its second item's price and ``AVG`` of its first, as
  channels of the trie; ``numeric="float64"`` for every run, since a float
  sum with exact counts runs on its own path) or with negations
  (``negations``: ``Item00`` negated between the first two items, before the
  first or after the last, a third of the queries each); ``run_many``, ``sharing="none"`` and ``cepvec.run`` per query, 120
  queries, uniform items.
* ``SharingWithin``: the workload under ``WITHIN 20 min`` alone and with
  ``EMIT CHANGES`` (no SLIDE), uniform and Zipf items, 20 and 120 queries;
  ``run_many``, ``sharing="none"`` and ``cepvec.run`` per query.
* ``SharingTypeColumn``: the 120 queries of ``Sharing`` (uniform items) with the type column
  as String, Categorical or Enum.
* ``SharingPredicates``: the same workload with local predicates
  (:func:`with_predicates`: a price threshold from a pool of three on the
  first item of two queries in three, and on the second of one in three), so
  prefixes are shared where items and predicates agree; ``run_many``,
  ``sharing="none"`` and ``cepvec.run`` per query, uniform items.
"""

from __future__ import annotations

import re
import time

import cepvec
from cepvec.generators import ecommerce_stream, ecommerce_workload

from . import SEED

N_EVENTS = 1_000_000
_EVENTS: dict = {}


def events(distribution: str):
    if distribution not in _EVENTS:
        _EVENTS[distribution] = ecommerce_stream(n_events=N_EVENTS, seed=SEED, distribution=distribution)
    return _EVENTS[distribution]


class Sharing:
    params = [[20, 120], ["uniform", "zipf"]]
    param_names = ["n_queries", "distribution"]
    timeout = 900
    number = 1
    repeat = 3

    def setup(self, n_queries, distribution):
        self.events = events(distribution)
        self.texts = ecommerce_workload(n_queries, seed=SEED)
        self.workload = cepvec.workload(self.texts)
        self.queries = list(self.workload.queries.values())
        small = self.events.head(2000)  # compile / load the kernels
        cepvec.run_many(self.workload, small)
        cepvec.run_many(self.workload, small, sharing="none")

    def time_run_many(self, n_queries, distribution):
        cepvec.run_many(self.workload, self.events)

    def time_run_many_texts(self, n_queries, distribution):
        cepvec.run_many(self.texts, self.events)

    def time_none(self, n_queries, distribution):
        cepvec.run_many(self.workload, self.events, sharing="none")

    def time_per_query(self, n_queries, distribution):
        for q in self.queries:
            cepvec.run(q, self.events)

    def peakmem_run_many(self, n_queries, distribution):
        cepvec.run_many(self.workload, self.events)

    def peakmem_per_query(self, n_queries, distribution):
        for q in self.queries:
            cepvec.run(q, self.events)

    def track_events_per_second(self, n_queries, distribution):
        t = time.perf_counter()
        cepvec.run_many(self.workload, self.events)
        return N_EVENTS / (time.perf_counter() - t)

    track_events_per_second.unit = "events/s"


class SharingPlanner:
    params = [[20, 120]]
    param_names = ["n_queries"]
    timeout = 300

    def setup(self, n_queries):
        self.texts = ecommerce_workload(n_queries, seed=SEED)
        cepvec.workload(self.texts)

    def time_plan(self, n_queries):
        cepvec.workload(self.texts)


#: local predicates of the first and second item (a small pool: queries that agree on them share prefixes)
FIRST = ("", "e0.price > 100", "e0.price <= 500")
SECOND = ("", "", "e1.price > 20")


def _named(text: str) -> tuple[str, str]:
    """An e-commerce query's SEQ with its positions named ``e0, e1, ...``, and its GROUP-BY and window."""
    m = re.fullmatch(r"RETURN customer, COUNT\(\*\) PATTERN SEQ\((.*)\) (GROUP-BY .*)", text)
    return ", ".join(f"{t} e{j}" for j, t in enumerate(m.group(1).split(", "))), m.group(2)


def with_predicates(texts: dict[str, str]) -> dict[str, str]:
    """The e-commerce queries with named positions and local predicates from :data:`FIRST` / :data:`SECOND`."""
    out = {}
    for i, (name, text) in enumerate(texts.items()):
        seq, rest = _named(text)
        preds = [p for p in (FIRST[i % 3], SECOND[(i // 3) % 3]) if p]
        where = f" WHERE {' AND '.join(preds)}" if preds else ""
        out[name] = f"RETURN customer, COUNT(*) PATTERN SEQ({seq}){where} {rest}"
    return out


class _SharedVariant:
    """``run_many``, ``sharing="none"`` and ``cepvec.run`` per query of a variant of the e-commerce
    workload (:meth:`texts`) that the shared executor runs whole, uniform items."""

    timeout = 900
    number = 1
    repeat = 3
    numeric = "int64"

    def texts(self, param) -> dict[str, str]:
        raise NotImplementedError

    def setup(self, param):
        self.events = events("uniform")
        self.workload = cepvec.workload(self.texts(param))
        assert len(self.workload.plan.shared_queries) == len(self.workload.queries)
        self.queries = list(self.workload.queries.values())
        small = self.events.head(2000)  # compile / load the kernels
        cepvec.run_many(self.workload, small, numeric=self.numeric)
        cepvec.run_many(self.workload, small, sharing="none", numeric=self.numeric)

    def time_run_many(self, param):
        cepvec.run_many(self.workload, self.events, numeric=self.numeric)

    def time_none(self, param):
        cepvec.run_many(self.workload, self.events, sharing="none", numeric=self.numeric)

    def time_per_query(self, param):
        for q in self.queries:
            cepvec.run(q, self.events, numeric=self.numeric)


class SharingPredicates(_SharedVariant):
    params = [[20, 120]]
    param_names = ["n_queries"]

    def texts(self, n_queries):
        return with_predicates(ecommerce_workload(n_queries, seed=SEED))


def with_aggregates(texts: dict[str, str]) -> dict[str, str]:
    """Every other query returns SUM of its second item's price and AVG of its first item's price."""
    out = {}
    for i, (name, text) in enumerate(texts.items()):
        seq, rest = _named(text)
        aggs = "COUNT(*), SUM(e1.price), AVG(e0.price)" if i % 2 == 0 else "COUNT(*)"
        out[name] = f"RETURN customer, {aggs} PATTERN SEQ({seq}) {rest}"
    return out


def with_negations(texts: dict[str, str]) -> dict[str, str]:
    """``Item00`` negated: between the first two items of one query in three, before the first item
    of the next, after the last item of the third."""
    out = {}
    for i, (name, text) in enumerate(texts.items()):
        if i % 3 == 0:
            text = re.sub(r"PATTERN SEQ\((\w+), ", r"PATTERN SEQ(\1, NOT Item00, ", text, count=1)
        elif i % 3 == 1:
            text = text.replace("PATTERN SEQ(", "PATTERN SEQ(NOT Item00, ", 1)
        else:
            text = re.sub(r"\) GROUP-BY", ", NOT Item00) GROUP-BY", text, count=1)
        out[name] = text
    return out


class SharingAggregates(_SharedVariant):
    params = [["sums", "negations"]]
    param_names = ["kind"]
    numeric = "float64"  # a float sum with exact counts runs on its own path

    def texts(self, kind):
        texts = ecommerce_workload(120, seed=SEED)
        return with_aggregates(texts) if kind == "sums" else with_negations(texts)


def within_alone(texts: dict[str, str], emit: bool = False) -> dict[str, str]:
    """The e-commerce queries under ``WITHIN 20 min`` alone (a match spans less than 20 minutes; one row
    per customer), or with ``EMIT CHANGES`` (a row per customer at every time one of the query's last
    items is bought, with the matches of the 20 minutes up to it): the executor's start panes are each
    customer's distinct times within the window."""
    return {name: text.replace(" SLIDE 1 min", " EMIT CHANGES" if emit else "") for name, text in texts.items()}


class SharingWithin:
    """``run_many``, ``sharing="none"`` and ``cepvec.run`` per query of the e-commerce workload under
    ``WITHIN 20 min`` alone and with ``EMIT CHANGES``, uniform and Zipf items (the same run)."""

    params = [[20, 120], ["uniform", "zipf"], ["within", "emit"]]
    param_names = ["n_queries", "distribution", "window"]
    timeout = 900
    number = 1
    repeat = 3

    def setup(self, n_queries, distribution, window):
        self.events = events(distribution)
        texts = within_alone(ecommerce_workload(n_queries, seed=SEED), emit=window == "emit")
        self.workload = cepvec.workload(texts)
        assert len(self.workload.plan.shared_queries) == len(self.workload.queries)
        self.queries = list(self.workload.queries.values())
        small = self.events.head(2000)  # compile / load the kernels
        cepvec.run_many(self.workload, small)
        cepvec.run_many(self.workload, small, sharing="none")

    def time_run_many(self, n_queries, distribution, window):
        cepvec.run_many(self.workload, self.events)

    def time_none(self, n_queries, distribution, window):
        cepvec.run_many(self.workload, self.events, sharing="none")

    def time_per_query(self, n_queries, distribution, window):
        for q in self.queries:
            cepvec.run(q, self.events)


class SharingTypeColumn:
    """The 120-query workload (``Sharing``) with its type column as String, Categorical or Enum: the
    executor reads the string views or the physical ids of the categories (one ``TypeCodes``)."""

    params = [["string", "categorical", "enum"]]
    param_names = ["type_dtype"]
    timeout = 900
    number = 1
    repeat = 3

    def setup(self, type_dtype):
        import polars as pl

        ev = events("uniform")
        dtype = {"string": pl.String, "categorical": pl.Categorical,
                 "enum": pl.Enum(sorted(ev["type"].unique().to_list()))}[type_dtype]
        self.events = ev.with_columns(pl.col("type").cast(dtype))
        self.workload = cepvec.workload(ecommerce_workload(120, seed=SEED))
        cepvec.run_many(self.workload, self.events.head(2000))

    def time_run_many(self, type_dtype):
        cepvec.run_many(self.workload, self.events)


class SharingOneGroup:
    """20 queries ``SEQ(x, y, z) ... GROUP-BY id WITHIN 50 SLIDE 10`` over six types, 10^6 events in one
    group (3.2 million output rows) or in 1 000: ``run_many`` against the queries run one by one in the
    same run. A performance fuzzer found ``run_many`` 1.6-1.9x slower than the per-query loop with one
    group (a sort of every output row, and a kernel call per 16 384 rows); fixed 2026-11-26."""

    params = [[1, 1000]]
    param_names = ["groups"]
    timeout = 600
    number = 1
    repeat = 3

    def setup(self, groups):
        import itertools

        import numpy as np
        import polars as pl

        rng = np.random.default_rng(SEED)
        n = N_EVENTS
        self.texts = {f"q{i}": f"RETURN id, COUNT(*) PATTERN SEQ({a}, {b}, {c}) WHERE [id] GROUP-BY id "
                               "WITHIN 50 SLIDE 10"
                      for i, (a, b, c) in enumerate(itertools.islice(itertools.permutations("ABCDEF", 3), 20))}
        self.events = pl.DataFrame({"type": rng.choice(list("ABCDEF"), n),
                                    "time": np.cumsum(rng.integers(1, 4, n)), "id": rng.integers(0, groups, n)})
        self.workload = cepvec.workload(self.texts)
        self.queries = list(self.workload.queries.values())
        small = self.events.head(2000)
        cepvec.run_many(self.workload, small)
        for q in self.queries:
            cepvec.run(q, small)

    def time_run_many(self, groups):
        cepvec.run_many(self.workload, self.events)

    def time_per_query(self, groups):
        for q in self.queries:
            cepvec.run(q, self.events)
