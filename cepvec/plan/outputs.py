"""The query's outputs: RETURN / GROUP-BY columns and aggregates, and the window (WITHIN, SLIDE,
EMIT CHANGES) in the units the text gives."""

from __future__ import annotations


from cepvec.errors import CepvecQueryError, NotSupportedError
from cepvec.lang import ast as A
from cepvec.plan.ir import AggSpec, Window


class OutputResolver:
    """Mixin of :class:`cepvec.plan.compile.Compiler`: reads and extends its state (``text``, ``occs``,
    ``errors``, ``err``, ``quote``)."""

    # ---------------------------------------------------------------- RETURN
    def resolve_returns(self, names):
        t = self.tree
        group_by = tuple(dict.fromkeys(t.group_by))
        labels = {g: g for g in group_by}
        aggs: list[AggSpec] = []
        agg_spans: list = []  # span of each aggregate in the text (None: the default COUNT(*))
        group_items: dict[str, A.GroupAttr] = {}  # GROUP-BY attribute -> its RETURN item
        items = t.returns or (A.Agg("COUNT", None, None, None, "COUNT(*)"),)
        for it in items:
            if isinstance(it, A.GroupAttr):
                if it.attr in group_by and (it.alias or it.attr not in group_items):
                    group_items[it.attr] = it  # the item whose label the column takes
                if it.attr not in group_by:
                    self.errors.append(self.err(
                        CepvecQueryError,
                        f"RETURN lists attribute '{it.attr}', which is not a GROUP-BY attribute; add "
                        f"GROUP-BY {it.attr} or aggregate it, e.g. MAX(v.{it.attr})", it.span))
                    continue
                if it.alias:
                    labels[it.attr] = it.alias
                continue
            if it.var is None:
                occs: tuple[int, ...] = ()
            else:
                if it.var not in names:
                    known = ", ".join(sorted({o.name for o in self.occs}))
                    self.errors.append(self.err(
                        CepvecQueryError,
                        f"unknown variable '{it.var}' in {it.label}; the pattern declares: {known}", it.span))
                    continue
                occs = names[it.var]
                if any(self.occs[o].negated for o in occs) and not all(self.occs[o].negated for o in occs):
                    t0 = self.occs[occs[0]].types[0]
                    self.errors.append(self.err(
                        CepvecQueryError,
                        f"{it.label} aggregates over '{it.var}', which names a positive and a negated (NOT) "
                        f"occurrence; name the positive one (e.g. {t0} {t0.lower()}1) and aggregate over "
                        "that variable", it.span))
                    continue
                if any(self.occs[o].negated for o in occs):
                    self.errors.append(self.err(
                        CepvecQueryError,
                        f"{it.label} aggregates over '{it.var}', which is negated (NOT); a negated event "
                        "is never part of a match, so it has nothing to aggregate", it.span))
                    continue
            aggs.append(AggSpec(it.func, occs, it.attr, it.alias or it.label))
            agg_spans.append((it.span if it.span != (0, 0) else None, it.alias))
        group_labels = tuple(labels[g] for g in group_by)
        # every output column with the construct that makes it: (label, quoted text, span or None)
        columns = [(labels[g], self.quote(group_items[g].span) if g in group_items else f"GROUP-BY {g}",
                    group_items[g].span if g in group_items else None) for g in group_by]
        if t.slide is not None:
            columns += [(c, f"the column {c} of WITHIN ... SLIDE", None) for c in ("window_start", "window_end")]
        elif t.emit_changes:
            columns.append((self.time_col, f"the time column '{self.time_col}' of EMIT CHANGES", None))
        columns += [(a.label, (self.quote(sp) if sp else a.label) + (f" AS {alias}" if alias else ""), sp)
                    for a, (sp, alias) in zip(aggs, agg_spans)]
        seen: dict[str, tuple] = {}
        for lab, what, span in columns:
            if lab in seen:
                self.errors.append(self.err(
                    CepvecQueryError,
                    f"two output columns are named '{lab}': {seen[lab][0]} and {what}; give one of them "
                    "another name with AS", span or seen[lab][1]))
            else:
                seen[lab] = (what, span)
        return group_by, group_labels, tuple(aggs)

    def resolve_window(self) -> Window:
        t = self.tree
        if t.slide is not None and t.emit_changes:
            self.errors.append(self.err(
                NotSupportedError,
                "not supported: EMIT CHANGES with SLIDE; use WITHIN w EMIT CHANGES for continuous "
                "results, or WITHIN w SLIDE s for one row per window", t.slide.span))
        if t.emit_changes:
            return Window("emit", t.within)
        if t.slide is not None:
            return Window("slide", t.within, t.slide)
        if t.within is not None:
            return Window("within", t.within)
        return Window("none")
