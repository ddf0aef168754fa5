"""``Query.explain()``: the compiled plan as text."""

from __future__ import annotations

from cepvec.arrow_kernel import partition_plan
from cepvec.errors import CepvecQueryError, UnsupportedByEngine
from cepvec.lang.render import render_plan_expr
from cepvec.paths.match import match_support
from cepvec.paths.match.plan import describe as describe_automaton
from cepvec.paths.scan.plan import describe_transition
from cepvec.paths.trend.plan import transition_paths
from cepvec.registry import choose


def _dur(d) -> str:
    if d is None:
        return "unbounded"
    return f"{d.value} {d.unit}" if d.unit else f"{d.value} (time column unit)"


def explain(q) -> str:
    """The compiled plan of ``q`` as text: template, negations, predicates, window, engine and path."""
    occ = q.occs
    lines = [f"query: {' '.join(q.text.split())}", ""]

    def tmpl_lines(t, indent: str):
        out = []
        mids = [s for s in t.states if s not in (t.start, t.end)]
        out.append(f"{indent}states: " + ", ".join(f"[{s}] {occ[s].label}" for s in t.states))
        out.append(f"{indent}start: [{t.start}] {occ[t.start].label}   end: [{t.end}] {occ[t.end].label}"
                   f"   mid: {', '.join(f'[{m}] {occ[m].label}' for m in mids) or '-'}")
        for s in t.states:
            preds = t.preds(s)
            out.append(f"{indent}predecessors of [{s}] {occ[s].name}: "
                       + (", ".join(f"[{p}] {occ[p].name}" for p in preds) or "-"))
        for tr in t.transitions:
            guard = f"  guarded by NOT #{', #'.join(map(str, tr.guards))}" if tr.guards else ""
            preds = q.edges.get((tr.src, tr.dst), ())
            ptxt = "; edge predicates: " + " AND ".join(p.text for p in preds) if preds else ""
            out.append(f"{indent}transition {tr.kind}: [{tr.src}] {occ[tr.src].name} -> "
                       f"[{tr.dst}] {occ[tr.dst].name}{guard}{ptxt}")
        return out

    lines.append("GRETA template (positive pattern):")
    lines += tmpl_lines(q.template, "  ")
    if q.negations:
        lines.append("")
        lines.append("negative sub-patterns:")
        for n in q.negations:
            prev = f"[{n.prev}] {occ[n.prev].name}" if n.prev is not None else "- (negated start)"
            nxt = f"[{n.next}] {occ[n.next].name}" if n.next is not None else "- (negated end)"
            parent = f", nested in NOT #{n.parent}" if n.parent is not None else ""
            lines.append(f"  NOT #{n.id} ({n.placement}{parent}): previous {prev}; following {nxt}")
            lines += tmpl_lines(n.template, "    ")
    lines.append("")
    lines.append("predicates:")
    any_pred = False
    for o in occ:
        for e in q.local.get(o.id, ()):
            lines.append(f"  local on [{o.id}] {o.name}: {render_plan_expr(e)}")
            any_pred = True
    for e in q.equivalences:
        scope = "all events" if e.occs is None else "events of " + ", ".join(
            sorted({occ[i].name for i in e.occs}))
        lines.append(f"  equivalence on {e.attr} ({scope}): {e.text}")
        any_pred = True
    for (s, d), preds in q.edges.items():
        for p in preds:
            lines.append(f"  edge [{s}] {occ[s].name} -> [{d}] {occ[d].name}: {p.text}")
            any_pred = True
    for p in q.run_preds:  # docs/semantics.md 4.6: checked when the run takes its last identifier's event
        where = ("the end of the match" if p.at is None else f"NOT #{p.at[1]} (per match)" if p.at[0] == "NOT"
                 else f"[{p.at[0]}] {occ[p.at[0]].name} -> [{p.at[1]}] {occ[p.at[1]].name}")
        lines.append(f"  run (over the run so far) at {where}: {p.text}")
        any_pred = True
    if not any_pred:
        lines.append("  none")
    lines.append("")
    w = q.window
    if w.kind == "none":
        lines.append("window: none (all matches in the input, one row per group)")
    elif w.kind == "within":
        lines.append(f"window: WITHIN {_dur(w.within)} (last.time - first.time < w; one row per group)")
    elif w.kind == "emit":
        lines.append(f"window: WITHIN {_dur(w.within)} EMIT CHANGES (one row per group and END-event time t,"
                     " over matches in (t - w, t])")
    else:
        lines.append(f"window: WITHIN {_dur(w.within)} SLIDE {_dur(w.slide)} (windows [k*s, k*s + w), k >= 0)")
    lines.append(f"group by: {', '.join(q.group_by) or '-'}; partition by: {', '.join(q.partition_by) or '-'}")
    lines.append(f"event selection: {q.strategy}")
    lines.append("aggregates: " + ", ".join(a.label for a in q.aggs))
    lines.append("output columns: " + ", ".join(q.output_columns))
    try:
        choice = choose(q)
    except CepvecQueryError as e:  # never-adjacent variables: only an explicit engine='match' / 'reference'
        try:
            choice = choose(q, "match")
        except UnsupportedByEngine:
            choice = choose(q, "reference")
        lines.append(f"engine (auto): none - {e.message}")
    else:
        lines.append(f"engine (auto): {choice.engine} - {choice.reason}")
    name = choice.engine
    lines.append(f"on Spark (cepvec.run): {partition_plan(q).why}")
    if name in ("aseq", "greta"):
        path = choice.path_name
        if path == "trend":  # edge predicates the Fenwick trend path indexes
            lines.append("greta trend path, predecessors of each transition (string keys at run time: "
                         "predecessor scan):")
            for (s, d), how in transition_paths(q).items():
                lines.append(f"  [{s}] {occ[s].name} -> [{d}] {occ[d].name}: {how}")
        elif path == "scan":
            lines.append("greta predecessor-scan path, predecessors of each transition:")
            for t in q.template.transitions:
                how = describe_transition(q.edges.get((t.src, t.dst), ()))
                lines.append(f"  [{t.src}] {occ[t.src].name} -> [{t.dst}] {occ[t.dst].name}: {how}")
            for n in q.negations:
                lines.append(f"  NOT #{n.id}: latest start time of a finished negative match per time, "
                             "max-propagated along its template (O(n) per event):")
                for t in n.template.transitions:
                    how = describe_transition(q.edges.get((t.src, t.dst), ()))
                    lines.append(f"    [{t.src}] {occ[t.src].name} -> [{t.dst}] {occ[t.dst].name}: {how}")
        elif name == "greta":
            lines.append("greta linear-map path: per-state totals, no per-event predecessors")
    why = match_support(q)
    lines.append("cepvec.matches (auto): " + ("match engine" if why is None else f"reference engine ({why})"))
    if why is None:
        lines.append("match engine automaton (SASE+ NFA^b over the template; docs/matching.md):")
        lines += [f"  {line}" for line in describe_automaton(q)]
    return "\n".join(lines)
