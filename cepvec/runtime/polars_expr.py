"""Compile predicate expressions (``cepvec.lang.ast``) to Polars expressions.

Used to evaluate local (vertex) predicates on whole columns before a kernel
runs. Semantics match the reference engine's evaluator: SQL three-valued
logic (a comparison with null is null, and only ``true`` passes), division
or modulo by zero gives null, ``%`` is floor modulo.
"""

from __future__ import annotations

import polars as pl

from cepvec.lang import ast as A


def to_polars(expr, columns: dict[str, str] | None = None) -> pl.Expr:
    """Polars expression for ``expr``; ``columns`` maps Ref.var to a column prefix."""
    def col(ref: A.Ref) -> pl.Expr:
        # NaN reads as null in predicates (as in the reference engine); Polars would order NaN
        # above every number. The test is false for non-float columns (to_physical first: a Categorical
        # or Enum column cannot be cast to Float64, its physical codes can).
        x = pl.col(ref.attr)
        return pl.when(_is_nan(x)).then(None).otherwise(x)

    def go(e) -> pl.Expr:
        if isinstance(e, A.Num):
            return pl.lit(e.value)
        if isinstance(e, A.Str):
            return pl.lit(e.value, dtype=pl.String)
        if isinstance(e, A.Ref):
            return col(e)
        if isinstance(e, A.Unary):
            if e.op == "NOTNULL":  # NaN reads as null everywhere in predicates
                x = go(e.operand)
                return x.is_not_null() & _is_nan(x).not_()
            return go(e.operand).not_() if e.op == "NOT" else -go(e.operand)
        if isinstance(e, A.Bin):
            a, b = go(e.left), go(e.right)
            if e.op == "+":
                return a + b
            if e.op == "-":
                return a - b
            if e.op == "*":
                return a * b
            if e.op == "/":
                return pl.when(b == 0).then(None).otherwise(a / b)
            return pl.when(b == 0).then(None).otherwise(a % b)
        if isinstance(e, A.Cmp):
            a, b = go(e.left), go(e.right)
            return {"=": a.eq(b), "!=": a.ne(b), "<": a.lt(b), "<=": a.le(b),
                    ">": a.gt(b), ">=": a.ge(b)}[e.op]
        if isinstance(e, A.BoolOp):  # one flat node: a chain of & would nest thousands deep
            items = [go(x) for x in e.items]
            if len(items) == 1:
                return items[0]
            return pl.all_horizontal(items) if e.op == "AND" else pl.any_horizontal(items)
        raise AssertionError(e)

    return go(expr)


def _is_nan(x: pl.Expr) -> pl.Expr:
    """True where ``x`` is a float NaN, false elsewhere (null, non-float columns included)."""
    return x.to_physical().cast(pl.Float64, strict=False).is_nan().fill_null(False)


def predicate_mask(exprs, *, default: bool = True) -> pl.Expr:
    """Conjunction of predicates as a boolean column where null counts as false."""
    if not exprs:
        return pl.lit(default)
    if len(exprs) == 1:
        return to_polars(exprs[0]).fill_null(False)
    # one flat node (Kleene logic, like a chain of &): a WHERE with thousands of conjuncts stays linear
    return pl.all_horizontal([to_polars(e) for e in exprs]).fill_null(False)


def may_hold_nan(col: pl.Series) -> bool:
    """Whether ``col`` may hold a NaN: a float column that does (one pass); no other dtype can."""
    return col.dtype.is_float() and bool(col.is_nan().any())


def component_weight(attr: str, kind: str, target, nan: bool = True) -> pl.Expr:
    """An aggregate component's weight per event, as every path reads it, in dtype ``target``:
    ``sum``, the attribute with null and NaN as 0; ``nonnull``, 1 where it is neither null nor NaN
    (NaN reads as null, docs/semantics.md). ``nan=False`` where the caller knows the column holds no
    NaN (:func:`may_hold_nan`): it is read without the test, which converts every value to Float64
    (about half of the time of reading an integer weight)."""
    v = pl.col(attr)
    if kind == "nonnull":
        return (v.is_not_null() & _is_nan(v).not_()).cast(target) if nan else v.is_not_null().cast(target)
    return (pl.when(_is_nan(v)).then(None).otherwise(v) if nan else v).fill_null(0).cast(target)
