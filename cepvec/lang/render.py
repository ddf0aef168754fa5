"""Syntax tree -> query text: the inverse of :func:`cepvec.lang.parser.parse`.

``parse(render(tree)) == tree`` for every tree the parser produces (source
spans and aggregate labels are not part of equality). The text keeps the
tree's surface form, because ``QueryAst.form`` takes part in equality:

* ``"greta"``: ``RETURN … PATTERN … [WHERE …] [GROUP-BY …] [WITHIN … [SLIDE …]] [EMIT CHANGES]``
* ``"sase"``:  ``EVENT … [WHERE …] [GROUP-BY …] [WITHIN … [SLIDE …]] [EMIT CHANGES] [RETURN …]``
* ``"aseq"``:  ``PATTERN … [WHERE …] [GROUP BY …] [AGG …] [WITHIN … [SLIDE …]] [EMIT CHANGES]``

The output is canonical rather than a copy of the source: one line, single
spaces, upper-case keywords, ASCII operators, ``NOT`` for every negation,
``SEQ(...)`` for every sequence, ``Type var+`` for a Kleene variable, SASE+
subscripts ``v[1]`` / ``v[v.LEN]``, and parentheses only where the grammar
needs them. Aggregates keep their label (``sum(S.price)``, the A-Seq
``AGG COUNT``) because it names the output column; a label that does not
read back as the aggregate (a hand-built tree) gives the canonical spelling.
"""

from __future__ import annotations

import math
import re

from cepvec.lang import ast as A
from cepvec.lang.parser import AGG_FUNCS, KEYWORDS, STRATEGIES
from cepvec.lang.tokens import T, tokenize

__all__ = ["render", "render_pattern", "render_expr", "render_string"]

FORMS = ("greta", "sase", "aseq")
_STRATEGY_SPELLING = {canon: fn for fn, canon in STRATEGIES.items()}
_STRATEGY_CALL = re.compile(r"(" + "|".join(STRATEGIES) + r")\s*\(", re.IGNORECASE)
# Quote pairs the tokenizer understands; there is no escape inside a string, so
# a value is written with the first pair whose closing quote it does not contain.
_QUOTE_PAIRS = (("'", "'"), ('"', '"'), ("‘", "’"), ("“", "”"))

# Expression precedence, loosest first (mirrors parser.parse_or ... parse_primary).
_OR, _AND, _NOT, _CMP, _ADD, _MUL, _UNARY, _PRIMARY = range(8)


def render(tree: A.QueryAst, *, form: str | None = None) -> str:
    """Render a syntax tree as query text that parses back to the same tree.

    Parameters
    ----------
    tree : cepvec.lang.ast.QueryAst
        A tree produced by :func:`cepvec.lang.parser.parse` (or built to the same
        shape).
    form : {"greta", "sase", "aseq"}, optional
        Surface form of the text; default ``tree.form`` (needed for
        ``parse(render(tree)) == tree``, since ``form`` is part of equality).
        Another form gives a query with the same matches and aggregates: a
        tree without RETURN rendered as GRETA gets the default
        ``RETURN COUNT(*)``, and the A-Seq ``AGG COUNT`` becomes ``COUNT(*)``
        (so its output column is named ``COUNT(*)``, not ``COUNT``).

    Returns
    -------
    str
        One line of query text.

    Raises
    ------
    ValueError
        The tree cannot be written in the requested form (a grouping attribute
        in the A-Seq ``AGG`` clause, a string holding every kind of quote,
        an unknown form or strategy).

    Examples
    --------
    >>> from cepvec.lang.parser import parse
    >>> render(parse("RETURN sector, count(*) PATTERN Stock+ S WHERE S.price ≥ NEXT(S).price "
    ...              "GROUP-BY sector WITHIN 10minutes"))
    'RETURN sector, count(*) PATTERN Stock S+ WHERE S.price >= NEXT(S).price GROUP-BY sector WITHIN 10 min'
    >>> render(parse("PATTERN SEQ(A, !B, C) AGG COUNT WITHIN 10s"))
    'PATTERN SEQ(A, NOT B, C) AGG COUNT WITHIN 10 s'
    >>> render(parse("PATTERN SEQ(A, !B, C) AGG COUNT WITHIN 10s"), form="greta")
    'RETURN COUNT(*) PATTERN SEQ(A, NOT B, C) WITHIN 10 s'
    """
    form = tree.form if form is None else form
    if form not in FORMS:
        raise ValueError(f"form must be one of {', '.join(FORMS)}; found {form!r}")
    returns = render_returns(tree.returns, agg_clause=form == "aseq")
    parts: list[str] = []
    if form == "greta":
        parts += ["RETURN", returns or "COUNT(*)", "PATTERN"]
    elif form == "sase":
        parts.append("EVENT")
    else:
        parts.append("PATTERN")
    parts.append(render_pattern(tree.pattern))
    where = render_where(tree.where, tree.strategy, tree.pattern)
    if where:
        parts += ["WHERE", where]
    if tree.group_by:
        parts += ["GROUP BY" if form == "aseq" else "GROUP-BY", ", ".join(tree.group_by)]
    if form == "aseq" and returns:
        parts += ["AGG", returns]
    if tree.within is not None:
        parts += ["WITHIN", render_duration(tree.within)]
        if tree.slide is not None:
            parts += ["SLIDE", render_duration(tree.slide)]
    elif tree.slide is not None:
        raise ValueError("a SLIDE needs a WITHIN: the tree has slide but no within")
    if tree.emit_changes:
        parts.append("EMIT CHANGES")
    if form == "sase" and returns:
        parts += ["RETURN", returns]
    return " ".join(parts)


# --------------------------------------------------------------------------- clauses
def render_returns(items: tuple[A.ReturnItem, ...], agg_clause: bool = False) -> str:
    """``COUNT(*) AS n, sector, SUM(S.price)`` (empty string for no items)."""
    out = []
    for it in items:
        if isinstance(it, A.Agg):
            text = _agg(it, agg_clause)
        elif agg_clause:
            raise ValueError(f"the A-Seq AGG clause holds aggregates only; grouping attribute "
                             f"{it.attr!r} cannot be rendered there (use form='greta')")
        else:
            text = it.attr
        if it.alias is not None:
            text += " AS " + (it.alias if _is_name(it.alias) else render_string(it.alias))
        out.append(text)
    return ", ".join(out)


def _agg(it: A.Agg, agg_clause: bool) -> str:
    """An aggregate, spelled as its label when the label reads back as the same aggregate.

    The label is the output column name of an aggregate without AS, so
    keeping ``sum(S.price)`` or the A-Seq ``COUNT`` keeps the result's columns.
    """
    if it.func not in AGG_FUNCS:
        raise ValueError(f"unknown aggregate {it.func!r}; expected one of {', '.join(AGG_FUNCS)}")
    inner = "*" if it.var is None else it.var + (f".{it.attr}" if it.attr else "")
    label = it.label
    func = label[:len(it.func)]
    if func.upper() == it.func:
        if label == f"{func}({inner})":
            return label
        if agg_clause and it.var is None and label == func and func.upper() == "COUNT":
            return label  # A-Seq: AGG COUNT
    return f"{it.func}({inner})"


def render_duration(d: A.Duration) -> str:
    """``10 min``, ``500 ms``, ``6`` (a bare number: the time column's unit)."""
    value = _number(d.value)
    return f"{value} {d.unit}" if d.unit else value


def render_where(where: tuple[A.Expr, ...], strategy: str | None, pattern: A.Pattern | None = None) -> str:
    """The WHERE clause body (without the keyword); empty when there is nothing to write."""
    conj = [_conjunct(e, len(where) > 1) for e in where]
    if strategy is None:
        if conj and _STRATEGY_CALL.match(conj[0]):
            # a call named like a strategy would be read as one at the start of WHERE
            conj[0] = f"({conj[0]})"
        return " AND ".join(conj)
    if strategy not in _STRATEGY_SPELLING:
        raise ValueError(f"unknown event selection strategy {strategy!r}; expected one of "
                         f"{', '.join(_STRATEGY_SPELLING)}")
    names = _variables(pattern) if pattern is not None else []
    body = " AND ".join(conj)
    return f"{_STRATEGY_SPELLING[strategy]}({', '.join(names)}) {{ {body} }}" if body else \
        f"{_STRATEGY_SPELLING[strategy]}({', '.join(names)}) {{ }}"


def _conjunct(e: A.Expr, several: bool) -> str:
    # Several conjuncts are joined by AND and re-flattened by the parser, so a
    # conjunct that is itself AND/OR keeps its parentheses to stay one item.
    return render_expr(e, _NOT if several else _OR)


def _variables(p: A.Pattern) -> list[str]:
    """Variable names of a pattern in order (the SASE+ strategy argument list)."""
    out: list[str] = []

    def walk(n):
        if isinstance(n, A.PType):
            name = n.var or (n.types[0] if len(n.types) == 1 else None)
            if name and name not in out:
                out.append(name)
        elif isinstance(n, (A.PKleene, A.PNot)):
            walk(n.body)
        elif isinstance(n, A.PSeq):
            for i in n.items:
                walk(i)

    walk(p)
    return out


# --------------------------------------------------------------------------- patterns
def render_pattern(p: A.Pattern) -> str:
    """``SEQ(Start S, Measurement M+, NOT End E)``, ``(SEQ(A+, B))+``, ``ANY(A, B) x``."""
    if isinstance(p, A.PType):
        if not p.types:
            raise ValueError("an event type test needs at least one type")
        text = p.types[0] if len(p.types) == 1 else f"ANY({', '.join(p.types)})"
        return f"{text} {p.var}" if p.var is not None else text
    if isinstance(p, A.PKleene):
        body = render_pattern(p.body)
        return f"{body}+" if isinstance(p.body, A.PType) else f"({body})+"
    if isinstance(p, A.PSeq):
        return "SEQ(" + ", ".join(render_pattern(i) for i in p.items) + ")"
    if isinstance(p, A.PNot):
        return "NOT " + render_pattern(p.body)
    raise TypeError(f"not a pattern node: {p!r}")


# ------------------------------------------------------------------------ expressions
def render_expr(e: A.Expr, ctx: int = _OR) -> str:
    """Render an expression; ``ctx`` is the precedence of the slot it goes into."""
    text, prec = _expr(e)
    return f"({text})" if prec < ctx else text


def _expr(e) -> tuple[str, int]:
    if isinstance(e, A.Num):
        return _number(e.value), _PRIMARY
    if isinstance(e, A.Str):
        return render_string(e.value), _PRIMARY
    if isinstance(e, A.Ref):
        return _ref(e), _PRIMARY
    if isinstance(e, A.Call):
        return f"{e.name}(" + ", ".join(render_expr(a) for a in e.args) + ")", _PRIMARY
    if isinstance(e, A.Equiv):
        items = []
        for it in e.items:
            if isinstance(it, A.Cmp):
                items.append(f"{_ref(it.left)} {it.op} {render_expr(it.right, _ADD)}")
            else:
                items.append(_ref(it))
        return "[" + ", ".join(items) + "]", _PRIMARY
    if isinstance(e, A.Unary):
        if e.op == "-":
            if isinstance(e.operand, A.Num):
                # the parser folds -<number> into the number itself, so it never
                # builds this node; write the folded number (same meaning)
                return _number(-e.operand.value), _UNARY
            operand = render_expr(e.operand, _UNARY)
            # "--" would open a comment; a nested minus is parenthesised
            if operand.startswith("-"):
                operand = f"({operand})"
            return f"-{operand}", _UNARY
        if e.op == "NOT":
            return f"NOT {render_expr(e.operand, _NOT)}", _NOT
        raise ValueError(f"unknown unary operator {e.op!r}")
    if isinstance(e, A.Bin):
        prec = _ADD if e.op in "+-" else _MUL
        # left-associative: the right operand of the same level needs parentheses
        return f"{render_expr(e.left, prec)} {e.op} {render_expr(e.right, prec + 1)}", prec
    if isinstance(e, A.Cmp):
        # a comparison operand that is itself a comparison is parenthesised, or
        # the parser would read a chain ``a < b < c``
        return f"{render_expr(e.left, _ADD)} {e.op} {render_expr(e.right, _ADD)}", _CMP
    if isinstance(e, A.BoolOp):
        if len(e.items) < 2:
            raise ValueError(f"{e.op} needs at least two operands")
        if e.op == "AND" and _is_chain(e):
            # a < b < c: the parser's chained comparison, written back as a chain
            text = render_expr(e.items[0].left, _ADD)
            for c in e.items:
                text += f" {c.op} {render_expr(c.right, _ADD)}"
            return text, _CMP
        ctx = _AND if e.op == "OR" else _NOT
        # a BoolOp inside a BoolOp always keeps its parentheses: the parser
        # flattens neither a nested AND nor an AND inside OR, so both spellings agree
        parts = [render_expr(x, _PRIMARY if isinstance(x, A.BoolOp) else ctx) for x in e.items]
        return f" {e.op} ".join(parts), (_OR if e.op == "OR" else _AND)
    raise TypeError(f"not an expression node: {e!r}")


def _is_chain(e: A.BoolOp) -> bool:
    items = e.items
    return (all(isinstance(c, A.Cmp) for c in items)
            and all(items[k].right == items[k + 1].left for k in range(len(items) - 1)))


def _ref(r: A.Ref) -> str:
    if r.next:
        return f"NEXT({r.var}).{r.attr}"
    if r.var is None:
        return r.attr
    if r.index is None:
        return f"{r.var}.{r.attr}"
    sub = {"i": "i", "i-1": "i-1", "first": "1", "last": f"{r.var}.LEN"}.get(r.index)
    if sub is None:
        # raw text of an unsupported subscript, kept without whitespace by the
        # parser; break up "--", "/*" and "*/" so they stay operators
        sub = r.index
        for seq in ("--", "/*", "*/"):
            while seq in sub:
                sub = sub.replace(seq, f"{seq[0]} {seq[1]}")
    return f"{r.var}[{sub}].{r.attr}"


def _number(v: int | float) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"a number is expected, found {v!r}")
    if isinstance(v, float):
        if math.isnan(v):
            raise ValueError("NaN has no spelling in the query language")
        if math.isinf(v):
            return "1e999" if v > 0 else "-1e999"  # the tokenizer reads these as ±inf
    return repr(v)


def render_string(value: str) -> str:
    """Quote a string literal with the first quote pair it does not contain."""
    for open_, close in _QUOTE_PAIRS:
        if close not in value:
            return f"{open_}{value}{close}"
    raise ValueError(f"string {value!r} contains every closing quote (' \" ’ ”) and cannot be "
                     "written as a literal: the query language has no escapes")


def _is_name(text: str) -> bool:
    """True when ``text`` reads back as one non-keyword identifier."""
    try:
        toks = tokenize(text)
    except ValueError:
        return False
    return (len(toks) == 2 and toks[0].kind is T.IDENT and toks[0].text == text
            and text.upper() not in KEYWORDS)


def render_plan_expr(e) -> str:
    """Render a compiled-plan expression for ``explain``: fully parenthesised, with the plan's
    ``$next``/``$prev`` references as ``NEXT.attr``/``PREV.attr`` (:func:`render_expr` renders
    query text)."""
    if isinstance(e, A.Num):
        return repr(e.value)
    if isinstance(e, A.Str):
        return "'" + e.value.replace("'", "''") + "'"
    if isinstance(e, A.Ref):
        if e.var == "$next":
            return f"NEXT.{e.attr}"
        if e.var == "$prev":
            return f"PREV.{e.attr}"
        if e.next:
            return f"NEXT({e.var}).{e.attr}"
        base = e.var if e.var is not None else ""
        if e.index is not None:
            sub = {"first": "1", "last": f"{e.var}.LEN"}.get(e.index, e.index)
            base += f"[{sub}]"
        return f"{base}.{e.attr}" if base else e.attr
    if isinstance(e, A.Unary):
        if e.op == "NOTNULL":
            return f"{render_plan_expr(e.operand)} IS NOT NULL"
        return f"-{render_plan_expr(e.operand)}" if e.op == "-" else f"NOT ({render_plan_expr(e.operand)})"
    if isinstance(e, (A.Bin, A.Cmp)):
        return f"({render_plan_expr(e.left)} {e.op} {render_plan_expr(e.right)})"
    if isinstance(e, A.BoolOp):
        return "(" + f" {e.op} ".join(render_plan_expr(x) for x in e.items) + ")"
    if isinstance(e, A.Call):
        return f"{e.name}(" + ", ".join(render_plan_expr(x) for x in e.args) + ")"
    return str(e)
