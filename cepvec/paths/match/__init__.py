"""The match engine: the matches themselves (SASE / SASE+), every selection strategy; Numba.

``plan.py`` says which queries it runs and reuses the scan path's template
tables and edge-predicate programs; ``run.py`` drives ``cepvec.kernels.match``
and writes the matches in batches (``docs/matching.md``). It is not an
aggregation path: ``cepvec.matches`` calls it directly.
"""

from __future__ import annotations

import polars as pl

from cepvec.errors import UnsupportedByEngine
from cepvec.paths.base import refusal
from cepvec.paths.match.plan import build, unsupported_reason
from cepvec.paths.match.run import empty_frame
from cepvec.paths.match.runs import RunPrograms, match_batches
from cepvec.paths.scan.plan import Programs
from cepvec.plan.ir import Query
from cepvec.runtime.prepare import Prepared

MATCH_ENGINES = ("auto", "match", "reference")
MATCH_FORMATS = ("long", "wide")


def match_support(q: Query, schema: dict | None = None) -> str | None:
    """Why the match engine cannot list the matches of ``q`` (None when it can)."""
    why = unsupported_reason(q)
    if why is None and schema is not None:  # the edge (and run) predicates over these column types
        why = refusal(Programs, q, build(q), dict(schema))
        if why is None and q.run_preds:
            why = refusal(RunPrograms, q, build(q), dict(schema))
    return why


def match_engine(q: Query, engine: str, schema: dict | None = None) -> str:
    """``"match"`` or ``"reference"``: who lists the matches of ``q`` under ``engine``."""
    if engine == "reference":
        return "reference"
    why = match_support(q, schema)
    if why is None:
        return "match"
    if engine == "match":
        if why.startswith("engine="):  # the edge-predicate compiler's own message about column types
            raise UnsupportedByEngine(why)
        raise UnsupportedByEngine(
            f"engine='match' cannot list the matches of query {' '.join(q.text.split())!r}: {why}. "
            "Use engine='reference' (exponential) or engine='auto'")
    return "reference"


def collect_matches(q: Query, prep: Prepared, *, limit: int | None = None, format: str = "long",  # noqa: A002
                    overlap: str = "all") -> pl.DataFrame:
    """Every match of ``q`` over ``prep`` (up to ``limit``) as one frame."""
    frames = list(match_batches(q, prep, limit=limit, format=format, overlap=overlap))
    return frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical")


__all__ = ["MATCH_ENGINES", "MATCH_FORMATS", "match_support", "match_engine", "match_batches", "collect_matches",
           "empty_frame"]
