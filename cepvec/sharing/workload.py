"""A workload: named compiled queries, which of them the shared executor runs, and the sharing plan."""

from __future__ import annotations

from dataclasses import dataclass, field

from cepvec.errors import CepvecError, CepvecTypeError
from cepvec.plan.compile import compile_query
from cepvec.plan.ir import Query
from cepvec.sharing.optimizer import explain_plan, plan_workload

SHARING = ("auto", "none", "greedy", "exhaustive")


def named(err: CepvecError, name: str) -> CepvecError:
    """``err`` with its message prefixed by the name of the query it is about (same class, same fields)."""
    prefix = f"query {name!r}: "
    if hasattr(err, "message"):  # syntax and query errors rebuild str() from .message
        err.message = prefix + err.message
        err.args = (str(err),)
    else:
        err.args = (prefix + (str(err.args[0]) if err.args else ""),) + tuple(err.args[1:])
    return err


def normalize_queries(queries) -> dict[str, str | Query]:
    """Named queries: a dict name -> text or Query as given, a list or tuple named ``q0``, ``q1``, ..."""
    if isinstance(queries, dict):
        items = dict(queries)
    elif isinstance(queries, (list, tuple)):
        items = {f"q{i}": q for i, q in enumerate(queries)}
    else:
        raise CepvecTypeError(
            f"queries must be a dict of name -> query text (or Query), or a list of them; found "
            f"{type(queries).__name__}")
    if not items:
        raise CepvecTypeError("queries is empty; pass at least one query")
    for name in items:
        if not isinstance(name, str) or not name:
            raise CepvecTypeError(f"query names must be non-empty strings; found {name!r}")
    return items


def compile_named(items: dict[str, str | Query]) -> dict[str, Query]:
    """Compile every query; an error names the query it comes from."""
    out: dict[str, Query] = {}
    for name, q in items.items():
        if isinstance(q, Query):
            out[name] = q
        elif isinstance(q, str):
            try:
                out[name] = compile_query(q)
            except CepvecError as exc:
                raise named(exc, name) from None
        else:
            raise CepvecTypeError(
                f"query {name!r} must be query text (str) or a Query from cepvec.compile; found {type(q).__name__}")
    return out


@dataclass
class Workload:
    """Compiled named queries and their sharing plan (build it with :func:`compile_workload`)."""

    queries: dict[str, Query]
    sharing: str = "auto"
    plan: object = field(default=None, repr=False)  # cepvec.sharing.optimizer.SharingPlan

    @property
    def names(self) -> list[str]:
        return list(self.queries)

    def explain(self) -> str:
        """The sharing candidates, their benefits, conflicts, pruning, the chosen plan and its costs."""
        return explain_plan(self)


def compile_workload(queries, sharing: str = "auto") -> Workload:
    """Compile ``queries`` (dict name -> text or Query, or a list) and find their sharing plan."""
    wl = Workload(compile_named(normalize_queries(queries)), sharing)
    wl.plan = plan_workload(wl.queries, sharing)
    return wl
