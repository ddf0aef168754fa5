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
  graph, pruning, plan finder) for 20 and 120 queries.
"""

from __future__ import annotations

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
