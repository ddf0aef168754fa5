"""The linear-map path: queries without edge predicates (A-Seq prefix counters, GRETA per-state totals).

Per-state running totals are linear maps of the previous ones; windows run on a
two-stack queue of them (``docs/algorithms.md`` sections 2-3). ``plan.py``
turns a query into programs, ``run.py`` drives ``cepvec.kernels.linear``.
"""

from __future__ import annotations

from cepvec.paths.base import Path
from cepvec.paths.linear.plan import build, unsupported_reason
from cepvec.paths.linear.run import LinearRun


class LinearPath(Path):
    name = "linear"

    def supports(self, q, schema=None):
        return unsupported_reason(q, schema)

    def plan(self, q, schema=None):
        return build(q)

    def open(self, q, schema, *, w, s, numeric="int64"):
        return LinearRun(q, schema, w=w, s=s, numeric=numeric)
