"""Parse and compile time of named stress shapes (after sqlglot ``benchmarks/parse.py``).

``time_parse`` is text -> AST (:func:`cepvec.lang.parser.parse`); ``time_compile``
is text -> compiled :class:`cepvec.Query` (parse, checks, GRETA template).
"""

from __future__ import annotations

import cepvec
from cepvec.lang.parser import parse


def _greta_q1() -> str:
    return ("RETURN sector, COUNT(*) PATTERN Stock S+ WHERE [company, sector] "
            "AND S.price > NEXT(S).price GROUP-BY sector WITHIN 10 minutes SLIDE 10 seconds")


def _many_seq_items(n: int = 30) -> str:
    # SEQ(T0, T1, ..., T29): a long fixed-length sequence of distinct types.
    items = ", ".join(f"T{i}" for i in range(n))
    return f"RETURN COUNT(*) PATTERN SEQ({items}) WHERE [id] WITHIN 1 minute"


def _deep_kleene(depth: int = 10) -> str:
    # (SEQ(A0, (SEQ(A1, ... (SEQ(A8, A9+))+ ...))+))+: 10 nested Kleene levels.
    pattern = f"A{depth - 1}+"
    for i in range(depth - 2, -1, -1):
        pattern = f"(SEQ(A{i}, {pattern}))+"
    return f"RETURN COUNT(*) PATTERN {pattern} WITHIN 1 minute"


def _long_where(n: int = 50) -> str:
    # 50 conjuncts over SEQ(A, B, C): local predicates on every variable, plus an
    # edge predicate on A->B or B->C every fifth conjunct.
    ops = ("<", ">", "<=", ">=", "!=")
    conds = []
    for i in range(n):
        if i % 5 == 4:
            conds.append("A.x < B.x" if i % 10 == 4 else "B.v * 2 > C.v + 1")
        else:
            var = "ABC"[i % 3]
            conds.append(f"{var}.x {ops[i % 5]} {i}" if i % 2 == 0 else f"{var}.v {ops[i % 5]} {i}.5")
    return f"RETURN COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] AND {' AND '.join(conds)} WITHIN 30 s"


SHAPES = {
    "greta_q1": _greta_q1(),
    "many_seq_items": _many_seq_items(),
    "deep_kleene": _deep_kleene(),
    "long_where": _long_where(),
}


class Parse:
    params = [list(SHAPES)]
    param_names = ["shape"]

    def setup(self, shape):
        self.text = SHAPES[shape]
        cepvec.compile(self.text)  # fail in setup, not in the timed loop, if a shape breaks

    def time_parse(self, shape):
        parse(self.text)

    def time_compile(self, shape):
        cepvec.compile(self.text)
