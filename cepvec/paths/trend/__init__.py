"""The GRETA trend path: edge predicates indexed by Fenwick trees over ranked keys, O(log n) per event.

``plan.py`` classifies each transition's edge predicate (running sum, ``<``,
``<=``, ``>``, ``>=``, ``=``); ``run.py`` encodes keys and drives
``cepvec.kernels.trend`` (``docs/algorithms.md`` section 4).
"""

from __future__ import annotations

from cepvec.paths.base import Path, refusal
from cepvec.paths.trend.plan import build, unsupported_reason
from cepvec.paths.trend.run import TrendRun, keyed_transitions


class TrendPath(Path):
    name = "trend"

    def supports(self, q, schema=None):
        if not q.edges:
            return "no edge predicate (the linear-map path runs such queries)"
        why = unsupported_reason(q)
        if why is None and schema is not None:
            return refusal(keyed_transitions, q, build(q), schema)
        return why

    def plan(self, q, schema=None):
        return build(q)

    def open(self, q, schema, *, w, s, numeric="int64"):
        return TrendRun(q, schema, w=w, s=s, numeric=numeric)
