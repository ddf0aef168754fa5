"""``compile_query``: syntax tree -> :class:`~cepvec.plan.ir.Query`.

The compiler is four steps, each a mixin in its own module:

* :mod:`cepvec.plan.normalize` — nested SEQ flattened, adjacent NOTs merged,
  every occurrence of an event type numbered as its own variable;
* :mod:`cepvec.plan.template` — the GRETA template (Algorithm 1, Section 9);
* :mod:`cepvec.plan.predicates` and :mod:`cepvec.plan.equalities` — local,
  equivalence and edge predicates; equality chains become equivalences;
* :mod:`cepvec.plan.outputs` — RETURN, GROUP-BY, aggregates and the window.

Errors are collected and raised once (:func:`_combine`), so a query with three
mistakes reports all three.
"""

from __future__ import annotations

from cepvec.errors import CepvecPlanError, CepvecQueryError, CepvecTypeError
from cepvec.lang import ast as A
from cepvec.lang.parser import parse
from cepvec.plan.equalities import EqualityRewriter
from cepvec.plan.ir import Node, Occ, Query
from cepvec.plan.normalize import Normalizer
from cepvec.plan.outputs import OutputResolver
from cepvec.plan.predicates import PredicateClassifier
from cepvec.plan.runpreds import NegRunPredicateClassifier, RunPredicateClassifier
from cepvec.plan.template import build_template


def compile_query(text: str, *, type_col: str = "type", time_col: str = "time") -> Query:
    """Parse and compile query text into a :class:`Query` (see :func:`cepvec.compile`)."""
    for name, val in (("type_col", type_col), ("time_col", time_col)):
        if not isinstance(val, str) or not val:
            raise CepvecTypeError(f"{name} must be a non-empty column name (str); found {val!r}")
    if type_col == time_col:
        raise CepvecPlanError(f"type_col and time_col must differ; both are {type_col!r}")
    tree = parse(text)
    return Compiler(tree, text, type_col, time_col).run()


class Compiler(Normalizer, PredicateClassifier, RunPredicateClassifier, NegRunPredicateClassifier, EqualityRewriter,
               OutputResolver):
    """One compilation: the state the steps share, and the driver :meth:`run`."""

    def __init__(self, tree: A.QueryAst, text: str, type_col: str, time_col: str):
        self.tree = tree
        self.text = text
        self.type_col = type_col
        self.time_col = time_col
        self.occs: list[Occ] = []
        self.neg_nodes: list[tuple[Node, int | None]] = []  # (body, parent)
        self.neg_spans: dict[int, tuple[int, int]] = {}  # negation id -> span of its NOT in the text
        self.errors: list[CepvecQueryError] = []
        self.run_preds: list = []  # RunPredicateClassifier
        self.run_slots: list = []
        self.not_adjacent: list[tuple] = []  # run predicates between never-adjacent variables (message, start, end)

    def err(self, cls, message: str, span=None) -> CepvecQueryError:
        if span is not None and span != (0, 0):
            return cls(message, source=self.text, start=span[0], end=span[1])
        return cls(message)

    def quote(self, span) -> str:
        return " ".join(self.text[span[0]:span[1]].split())

    # ---------------------------------------------------------------- driver
    def run(self) -> Query:
        t = self.tree
        root = self.renumber_negations(self.normalize_top(t.pattern))
        self.normalized_root = root
        template = build_template(root)
        negations = self.build_negations(root)
        self._negations = negations
        names = self.name_table()
        local, edges, equivs = self.classify(names, template, negations)
        group_by, group_labels, aggs = self.resolve_returns(names)
        window = self.resolve_window()
        if self.errors:
            raise _combine(self.errors)
        return Query(
            text=self.text, ast=t, occs=tuple(self.occs), root=root, template=template,
            negations=tuple(negations), local=local, edges=edges, equivalences=tuple(equivs),
            group_by=group_by, group_labels=group_labels, aggs=aggs, window=window,
            start_local={k: tuple(v) for k, v in self.start_local.items()},
            end_local={k: tuple(v) for k, v in self.end_local.items()}, position_texts=tuple(self.position_texts),
            strategy=t.strategy or "skip-till-any-match",
            run_preds=tuple(self.run_preds), run_slots=tuple(self.run_slots),
            not_adjacent=tuple(self.not_adjacent),
            type_col=self.type_col, time_col=self.time_col)


def _combine(errors: list[CepvecQueryError]) -> CepvecQueryError:
    """One exception for several problems: the first is located, three more are listed, the rest counted."""
    if len(errors) == 1:
        return errors[0]
    first = errors[0]
    more = len(errors) - 1
    rest = "\n".join(f"  - {e.message}" for e in errors[1:4])
    tail = f"\n  … and {more - 3} more" if more > 3 else ""
    exc = _combined_class(type(first))(f"{first.message}\n{more} more problem(s):\n{rest}{tail}",
                                       source=first.source, start=first.start, end=first.end)
    exc.errors = errors
    return exc


_COMBINED: dict[type, type] = {}


def _combined_class(cls: type) -> type:
    """``cls`` whose ``str()`` puts the position and caret right after the first problem's line.

    The caret belongs to the first problem, so it goes under that message, before the list of the
    others. The class keeps the name (and module) of ``cls``: tracebacks and ``type(e).__name__``
    read the same, and ``isinstance``/``except cls`` work as for ``cls``.
    """
    if cls not in _COMBINED:
        def __str__(self) -> str:
            text = cls.__str__(self)
            if self.line is None:
                return text
            head, sep, others = self.message.partition("\n")
            located = text[len(self.message):]  # " (line L, col C)\n  <source line>\n  <caret>"
            return f"{head}{located}{sep}{others}"

        def __reduce__(self):
            return (_rebuild_combined, (cls, self.message, self.source, self.start, self.end,
                                        getattr(self, "errors", None)))

        sub = type(cls.__name__, (cls,), {"__str__": __str__, "__reduce__": __reduce__,
                                          "__module__": cls.__module__, "__qualname__": cls.__qualname__,
                                          "__doc__": cls.__doc__})
        _COMBINED[cls] = sub
    return _COMBINED[cls]


def _rebuild_combined(cls, message, source, start, end, errors):
    exc = _combined_class(cls)(message, source=source, start=start, end=end)
    if errors is not None:
        exc.errors = errors
    return exc
