"""The GRETA predecessor-scan path: any edge predicate, nested negation, MIN/MAX; O(n) per event.

``plan.py`` compiles edge predicates to bytecode (``Programs``); ``run.py``
drives ``cepvec.kernels.scan`` (``docs/algorithms.md`` section 5).
"""

from __future__ import annotations

from cepvec.paths.base import Path, refusal
from cepvec.paths.scan.plan import Programs, build, unsupported_reason
from cepvec.paths.scan.run import ScanRun


class ScanPath(Path):
    name = "scan"

    def supports(self, q, schema=None):
        why = unsupported_reason(q)
        if why is None and schema is not None:  # the edge predicates over these column types
            return refusal(Programs, q, build(q), dict(schema))
        return why

    def plan(self, q, schema=None):
        return build(q)

    def open(self, q, schema, *, w, s, numeric="int64"):
        return ScanRun(q, schema, w=w, s=s, numeric=numeric)
