"""Immutable syntax tree of a cepvec query.

Nodes are frozen dataclasses. Source spans (``span``) are excluded from
equality so ``parse(render(tree)) == tree`` holds for any spelling.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

Span = tuple[int, int]


def _span() -> Span:
    return field(default=(0, 0), compare=False, repr=False)


# --------------------------------------------------------------------------- patterns
@dataclass(frozen=True)
class PType:
    """An event type test ``Type var`` (``ANY(T1, T2) var`` when several types)."""

    types: tuple[str, ...]
    var: str | None = None
    span: Span = _span()


@dataclass(frozen=True)
class PKleene:
    """Kleene plus ``P+``."""

    body: "Pattern"
    span: Span = _span()


@dataclass(frozen=True)
class PSeq:
    """``SEQ(P1, ..., Pn)``."""

    items: tuple["Pattern", ...]
    span: Span = _span()


@dataclass(frozen=True)
class PNot:
    """Negation ``NOT P`` (also ``!P``, ``~P``)."""

    body: "Pattern"
    span: Span = _span()


Pattern = Union[PType, PKleene, PSeq, PNot]


# ------------------------------------------------------------------------ expressions
@dataclass(frozen=True)
class Num:
    value: int | float
    span: Span = _span()


@dataclass(frozen=True)
class Str:
    value: str
    span: Span = _span()


@dataclass(frozen=True)
class Ref:
    """An attribute reference.

    ``var`` is None for a bare attribute (``category``). ``next`` marks
    ``NEXT(v).attr``. ``index`` is the SASE+ array subscript: None,
    ``"i"``, ``"i-1"``, ``"first"`` (``v[1]``), ``"last"`` (``v[v.LEN]``) or
    the raw text of an unsupported subscript.
    """

    var: str | None
    attr: str
    next: bool = False
    index: str | None = None
    span: Span = _span()


@dataclass(frozen=True)
class Unary:
    op: str  # "-" or "NOT"
    operand: "Expr"
    span: Span = _span()


@dataclass(frozen=True)
class Bin:
    op: str  # + - * / %
    left: "Expr"
    right: "Expr"
    span: Span = _span()


@dataclass(frozen=True)
class Cmp:
    op: str  # = != < <= > >=
    left: "Expr"
    right: "Expr"
    span: Span = _span()


@dataclass(frozen=True)
class BoolOp:
    op: str  # AND, OR
    items: tuple["Expr", ...]
    span: Span = _span()


@dataclass(frozen=True)
class Call:
    """A function call inside a predicate; cepvec supports none (kept to report it)."""

    name: str
    args: tuple["Expr", ...]
    span: Span = _span()


@dataclass(frozen=True)
class Equiv:
    """Equivalence test ``[a, P.b, c = 'x']``."""

    items: tuple[Union[Ref, Cmp], ...]
    span: Span = _span()


Expr = Union[Num, Str, Ref, Unary, Bin, Cmp, BoolOp, Call, Equiv]


# ------------------------------------------------------------------------- clauses
@dataclass(frozen=True)
class Duration:
    value: int | float
    unit: str | None  # canonical: "ns", "us", "ms", "s", "min", "h", "d" or None
    span: Span = _span()


@dataclass(frozen=True)
class Agg:
    """An aggregate in RETURN / AGG: ``COUNT(*)``, ``COUNT(v)``, ``SUM(v.a)``..."""

    func: str  # COUNT, SUM, MIN, MAX, AVG
    var: str | None  # None for COUNT(*)
    attr: str | None
    alias: str | None = None
    label: str = field(default="", compare=False)
    span: Span = _span()


@dataclass(frozen=True)
class GroupAttr:
    attr: str
    alias: str | None = None
    span: Span = _span()


ReturnItem = Union[Agg, GroupAttr]


@dataclass(frozen=True)
class QueryAst:
    form: str  # "greta", "sase", "aseq"
    returns: tuple[ReturnItem, ...]
    pattern: Pattern
    where: tuple[Expr, ...] = ()
    strategy: str | None = None
    group_by: tuple[str, ...] = ()
    within: Duration | None = None
    slide: Duration | None = None
    emit_changes: bool = False
    source: str = field(default="", compare=False, repr=False)
