"""Physical plan of the match engine (``cepvec.kernels.match``): which queries it runs, and its tables.

The engine builds the matches themselves (``cepvec.matches``), for every
event selection strategy, on queries with no window or a ``WITHIN`` window.
Its template tables are the predecessor-scan path's (:func:`cepvec.paths.scan.plan.build`:
the main pattern and every negative sub-pattern as transitions over all
occurrences, each with its guarding negations) and so are its edge-predicate
programs (:class:`cepvec.paths.scan.plan.Programs`); only the strategy is
the match engine's own.
"""

from __future__ import annotations

import dataclasses

from cepvec.kernels import match as K
from cepvec.paths.linear.plan import top_negations
from cepvec.paths.scan.plan import ScanPlan, build as build_scan
from cepvec.plan.ir import Query

STRATEGIES = {"skip-till-any-match": K.STRAT_ANY, "skip-till-next-match": K.STRAT_NEXT,
              "partition-contiguity": K.STRAT_PARTITION, "strict-contiguity": K.STRAT_STRICT}
MODES = {"none": K.MODE_NONE, "within": K.MODE_WITHIN}


def unsupported_reason(q: Query) -> str | None:
    """Why the match engine cannot build the matches of ``q`` (None when it can)."""
    if q.window.kind not in MODES:
        kind = "SLIDE" if q.window.kind == "slide" else "EMIT CHANGES"
        return f"a {kind} window (a match is listed once per window; the match engine lists WITHIN and no window)"
    if q.qualified_equivalences:
        return "equivalence on the attribute of one variable only (" + ", ".join(
            e.text for e in q.qualified_equivalences) + ")"
    if any(n.parent is not None for n in q.negations):
        return "a negation nested inside another negation"
    guards = {g for t in q.template.transitions for g in t.guards}
    start, end = top_negations(q)
    if any(n.id not in guards and n.id not in (start, end) for n in q.negations):
        return "a negation that guards no transition of the pattern"
    return None


def build(q: Query) -> ScanPlan:
    """The template tables of ``q`` (the scan path's, built for the strategy-free query)."""
    reason = unsupported_reason(q)
    if reason is not None:
        raise ValueError(reason)
    return build_scan(dataclasses.replace(q, strategy="skip-till-any-match", aggs=(), start_local={}, end_local={},
                                          position_texts=(), run_preds=(), run_slots=(), not_adjacent=()))


def describe(q: Query) -> list[str]:
    """The automaton of ``q`` as ``explain`` shows it: states, and per transition what takes it."""
    occ = q.occs
    strategy = {
        "skip-till-any-match": "take it or ignore it (every later candidate, both ways: non-deterministic)",
        "skip-till-next-match": "take the first later candidate of any successor state; ignore events that "
                                "are not candidates",
        "partition-contiguity": "take a candidate at the partition's next time stamp; any other event of the "
                                "partition in between kills the run",
        "strict-contiguity": "take a candidate at the input's next time stamp; any other event in between "
                             "kills the run",
    }[q.strategy]
    lines = [f"strategy {q.strategy}: {strategy}"]
    for name, tmpl in [("pattern", q.template)] + [(f"NOT #{n.id}", n.template) for n in q.negations]:
        lines.append(f"{name}: states {', '.join(occ[s].label for s in tmpl.states)}; start {occ[tmpl.start].name}, "
                     f"accept {occ[tmpl.end].name}")
        for t in tmpl.transitions:
            preds = " AND ".join(p.text for p in q.edges.get((t.src, t.dst), ())) or "true"
            guard = "".join(f"; no NOT #{g} match between" for g in t.guards)
            kind = "proceed" if t.kind == "SEQ" else "take again (Kleene +)"
            runs = "".join(f"; run predicate {p.text}" for p in q.run_preds if p.at == (t.src, t.dst))
            lines.append(f"  {occ[t.src].name} -> {occ[t.dst].name} ({kind}): edge predicate {preds}{guard}{runs}")
    final = [p.text for p in q.run_preds if p.at is None]
    if final:
        lines.append(f"  at the end of a match: run predicate {' AND '.join(final)}")
    for p in q.run_preds:
        if isinstance(p.at, tuple) and p.at[0] == "NOT":
            lines.append(f"  NOT #{p.at[1]}: an event blocks a match only if {p.text} holds against it "
                         "(checked per complete match)")
    if q.run_preds:
        state = ", ".join(f"{s.kind}({occ[s.occ].name}{'.' + s.attr if s.attr else ''})" for s in q.run_slots
                          if s.kind != "sumf")
        lines.append(f"run predicates read each run's state ({state}): runs are followed one by one "
                     "(cepvec/kernels/runs.py), not on the shared match graph; an event that fails one is not "
                     "taken by that run")
    return lines
