"""Recursive-descent parser: query text -> :class:`cepvec.lang.ast.QueryAst`.

Three surface forms are accepted and mean the same (``docs/semantics.md``):

* GRETA:  ``RETURN … PATTERN … [WHERE …] [GROUP-BY …] [WITHIN … [SLIDE …]] [EMIT CHANGES]``
* SASE:   ``EVENT … [WHERE …] [WITHIN … [SLIDE …]] [RETURN …]``
* A-Seq:  ``PATTERN … [WHERE …] [GROUP BY …] [AGG …] [WITHIN … [SLIDE …]] [EMIT CHANGES]``

The grammar is documented in ``docs/language.md``.
"""

from __future__ import annotations

from cepvec.lang import ast as A
from cepvec.errors import CepvecSyntaxError
from cepvec.lang.tokens import T, Token, tokenize

AGG_FUNCS = ("COUNT", "SUM", "MIN", "MAX", "AVG")
STRATEGIES = {
    "skip_till_any_match": "skip-till-any-match",
    "skip_till_next_match": "skip-till-next-match",
    "partition_contiguity": "partition-contiguity",
    "strict_contiguity": "strict-contiguity",
}
UNITS = {
    "ns": "ns", "nanosecond": "ns", "nanoseconds": "ns",
    "us": "us", "microsecond": "us", "microseconds": "us",
    "ms": "ms", "millisecond": "ms", "milliseconds": "ms", "msec": "ms",
    "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
    "m": "min", "min": "min", "mins": "min", "minute": "min", "minutes": "min",
    "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
    "d": "d", "day": "d", "days": "d",
}
# Words that end a clause; they cannot be bare attribute names or variables.
KEYWORDS = {
    "RETURN", "PATTERN", "EVENT", "WHERE", "GROUP-BY", "GROUP", "BY", "WITHIN",
    "SLIDE", "EMIT", "CHANGES", "AGG", "AND", "OR", "NOT", "SEQ", "ANY", "AS", "NEXT",
}
# The clauses of each form, in the order they must be written.
CLAUSE_ORDER = {
    "greta": ("RETURN", "PATTERN", "WHERE", "GROUP-BY", "WITHIN", "SLIDE", "EMIT"),
    "sase": ("EVENT", "WHERE", "GROUP-BY", "WITHIN", "SLIDE", "EMIT", "RETURN"),
    "aseq": ("PATTERN", "WHERE", "GROUP-BY", "AGG", "WITHIN", "SLIDE", "EMIT"),
}


def _clause_name(form: str, key: str) -> str:
    """How a clause is written in a form (A-Seq spells GROUP BY)."""
    if key == "EMIT":
        return "EMIT CHANGES"
    if key == "GROUP-BY" and form == "aseq":
        return "GROUP BY"
    return key


_CLAUSE_STARTS = {"RETURN", "PATTERN", "WHERE", "GROUP-BY", "GROUP", "WITHIN", "SLIDE", "EMIT", "AGG"}


def _flatten_and(e: A.Expr) -> list[A.Expr]:
    """The operands of nested ANDs, at any depth, in order (``e`` itself if it is no AND)."""
    if isinstance(e, A.BoolOp) and e.op == "AND":
        return [x for it in e.items for x in _flatten_and(it)]
    return [e]


def parse(source: str) -> A.QueryAst:
    """Parse query text into a :class:`~cepvec.lang.ast.QueryAst`.

    Raises
    ------
    CepvecSyntaxError
        With line, column and a caret under the offending text.
    """
    if not isinstance(source, str):
        raise TypeError(f"query text must be a str, found {type(source).__name__}")
    return _Parser(source).parse_query()


#: Deepest nesting of parentheses, SEQ(, NOT and unary signs. The parser and the later tree walks
#: recurse once per level (the expression grammar about nine frames deep), so a fixed limit
#: gives a syntax error where Python would otherwise raise RecursionError.
MAX_NESTING = 50


class _Parser:
    def __init__(self, source: str):
        self.source = source
        self.toks = tokenize(source)
        self.i = 0
        self.depth = 0
        self.seen: list[str] = []  # clauses read so far, in order (keys of CLAUSE_ORDER)

    # ------------------------------------------------------------------ helpers
    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def advance(self) -> Token:
        t = self.toks[self.i]
        if t.kind is not T.EOF:
            self.i += 1
        return t

    def nest(self, fn):
        """Call ``fn()`` one nesting level deeper (at most MAX_NESTING levels)."""
        if self.depth >= MAX_NESTING:
            t = self.toks[self.i - 1]  # the token that opened the level: '(', NOT, a sign
            raise CepvecSyntaxError(
                f"nesting deeper than {MAX_NESTING} levels (parentheses, SEQ, NOT or signs) at "
                f"{t.describe()}; write it with fewer levels (a condition, e.g., as a flat list of ANDs)",
                source=self.source, start=t.start, end=t.end)
        self.depth += 1
        try:
            return fn()
        finally:
            self.depth -= 1

    def error(self, expected: str, tok: Token | None = None) -> CepvecSyntaxError:
        tok = tok or self.tok
        return CepvecSyntaxError(
            f"expected {expected}, found {tok.describe()}",
            source=self.source, start=tok.start, end=tok.end)

    def is_kw(self, word: str, tok: Token | None = None) -> bool:
        tok = tok or self.tok
        return tok.kind is T.IDENT and tok.text.upper() == word

    def is_op(self, op: str, tok: Token | None = None) -> bool:
        tok = tok or self.tok
        return tok.kind is T.OP and tok.text == op

    def expect_op(self, op: str, what: str | None = None) -> Token:
        if not self.is_op(op):
            raise self.error(what or f"'{op}'")
        return self.advance()

    def expect_kw(self, word: str) -> Token:
        if not self.is_kw(word):
            raise self.error(f"keyword {word}")
        return self.advance()

    def is_and(self) -> bool:
        return self.is_op("AND") or self.is_kw("AND")

    def is_clause_start(self) -> bool:
        t = self.tok
        return t.kind is T.EOF or (t.kind is T.IDENT and t.text.upper() in _CLAUSE_STARTS)

    def ident(self, what: str) -> Token:
        t = self.tok
        if t.kind is not T.IDENT or t.text.upper() in KEYWORDS:
            raise self.error(what)
        return self.advance()

    # ------------------------------------------------------------------ query
    def parse_query(self) -> A.QueryAst:
        if self.is_kw("RETURN"):
            q = self.parse_greta()
        elif self.is_kw("EVENT"):
            q = self.parse_sase()
        elif self.is_kw("PATTERN"):
            q = self.parse_aseq()
        else:
            raise self.error("RETURN, PATTERN or EVENT at the start of a query")
        if self.tok.kind is not T.EOF:
            raise self._trailing_error(q.form)
        return q

    def _clause_at(self) -> str | None:
        """The clause keyword at the current token, as a key of ``CLAUSE_ORDER`` (None: not a clause)."""
        t = self.tok
        if t.kind is not T.IDENT:
            return None
        word = t.text.upper()
        if word in ("RETURN", "PATTERN", "EVENT", "WHERE", "AGG", "WITHIN", "SLIDE", "EMIT", "GROUP-BY"):
            return word
        if word == "GROUP" and self.is_kw("BY", self.peek()):
            return "GROUP-BY"
        return None

    def _trailing_error(self, form: str) -> CepvecSyntaxError:
        """Text left after the last clause: a clause out of order, a repeated one, or stray text."""
        order = CLAUSE_ORDER[form]
        names = [_clause_name(form, k) for k in order]
        sequence = ", ".join(names)
        key = self._clause_at()
        tok = self.tok
        end = self.peek().end if key == "GROUP-BY" and self.is_kw("GROUP") else tok.end
        if key in order:
            here = _clause_name(form, key)
            if key in self.seen:
                return CepvecSyntaxError(
                    f"{here} appears twice: each clause is written once; clauses go in the order {sequence}",
                    source=self.source, start=tok.start, end=end)
            later = [k for k in self.seen if order.index(k) > order.index(key)]
            if later:
                return CepvecSyntaxError(
                    f"{here} must come before {_clause_name(form, later[0])}: clauses go in the order "
                    f"{sequence}", source=self.source, start=tok.start, end=end)
        return self.error(self._what_next(form))

    def _what_next(self, form: str) -> str:
        """What may still follow the clauses read so far (never a clause that must come earlier)."""
        order = CLAUSE_ORDER[form]
        last = self.seen[-1] if self.seen else order[0]
        options = ["AND"] if last == "WHERE" else []
        for k in order[order.index(last) + 1:]:
            if k == "SLIDE" and last != "WITHIN":
                continue  # SLIDE only right after WITHIN
            options.append(_clause_name(form, k))
        options.append("the end of the query")
        if len(options) == 1:
            return options[0]
        return ", ".join(options[:-1]) + " or " + options[-1]

    def _common_tail(self, allow_agg: bool) -> dict:
        out: dict = {"where": (), "strategy": None, "group_by": (), "aggs": None,
                     "within": None, "slide": None, "emit": False}
        if self.is_kw("WHERE"):
            self.advance()
            self.seen.append("WHERE")
            out["where"], out["strategy"] = self.parse_where()
        if self.is_kw("GROUP-BY") or (self.is_kw("GROUP") and self.is_kw("BY", self.peek())):
            if self.is_kw("GROUP"):
                self.advance()
            self.advance()
            self.seen.append("GROUP-BY")
            attrs = [self.parse_attr_name("a grouping attribute after GROUP-BY")]
            while self.is_op(","):
                self.advance()
                attrs.append(self.parse_attr_name("a grouping attribute after ','"))
            out["group_by"] = tuple(attrs)
        if allow_agg and self.is_kw("AGG"):
            self.advance()
            self.seen.append("AGG")
            out["aggs"] = self.parse_return_items(agg_clause=True)
        if self.is_kw("WITHIN"):
            self.advance()
            self.seen.append("WITHIN")
            out["within"] = self.parse_duration("WITHIN")
            if self.is_kw("SLIDE"):
                self.advance()
                self.seen.append("SLIDE")
                out["slide"] = self.parse_duration("SLIDE")
        elif self.is_kw("SLIDE"):
            raise CepvecSyntaxError(
                "SLIDE needs a WITHIN before it: write WITHIN <window length> SLIDE <step>",
                source=self.source, start=self.tok.start, end=self.tok.end)
        if self.is_kw("EMIT"):
            self.advance()
            self.expect_kw("CHANGES")
            self.seen.append("EMIT")
            out["emit"] = True
        return out

    def parse_greta(self) -> A.QueryAst:
        self.expect_kw("RETURN")
        self.seen.append("RETURN")
        returns = self.parse_return_items()
        self.expect_kw("PATTERN")
        self.seen.append("PATTERN")
        pattern = self.parse_top_pattern()
        tail = self._common_tail(allow_agg=False)
        return A.QueryAst("greta", returns, pattern, tail["where"], tail["strategy"],
                          tail["group_by"], tail["within"], tail["slide"], tail["emit"],
                          source=self.source)

    def parse_sase(self) -> A.QueryAst:
        self.expect_kw("EVENT")
        self.seen.append("EVENT")
        pattern = self.parse_top_pattern()
        tail = self._common_tail(allow_agg=False)
        returns: tuple = ()
        if self.is_kw("RETURN"):
            self.advance()
            self.seen.append("RETURN")
            returns = self.parse_return_items()
        return A.QueryAst("sase", returns, pattern, tail["where"], tail["strategy"],
                          tail["group_by"], tail["within"], tail["slide"], tail["emit"],
                          source=self.source)

    def parse_aseq(self) -> A.QueryAst:
        self.expect_kw("PATTERN")
        self.seen.append("PATTERN")
        pattern = self.parse_top_pattern()
        tail = self._common_tail(allow_agg=True)
        return A.QueryAst("aseq", tail["aggs"] or (), pattern, tail["where"], tail["strategy"],
                          tail["group_by"], tail["within"], tail["slide"], tail["emit"],
                          source=self.source)

    # ------------------------------------------------------------------ RETURN
    def parse_return_items(self, agg_clause: bool = False) -> tuple:
        items = [self.parse_return_item(agg_clause)]
        while self.is_op(","):
            self.advance()
            items.append(self.parse_return_item(agg_clause))
        return tuple(items)

    def parse_return_item(self, agg_clause: bool) -> A.ReturnItem:
        t = self.tok
        what = ("an aggregate (COUNT, SUM, MIN, MAX, AVG)" if agg_clause else
                "an aggregate (COUNT(*), COUNT(v), SUM(v.attr), MIN, MAX, AVG) or a grouping attribute")
        if t.kind is not T.IDENT:
            raise self.error(what)
        name = t.text.upper()
        if name in AGG_FUNCS and self.is_op("(", self.peek()):
            self.advance()
            self.advance()
            if self.is_op("*"):
                if name != "COUNT":
                    raise self.error(f"a variable and attribute inside {name}(...), such as {name}(S.price)")
                self.advance()
                var = attr = None
            else:
                var = self.ident(f"a variable inside {name}(...)").text
                attr = None
                if self.is_op("."):
                    self.advance()
                    attr = self.ident("an attribute name after '.'").text
                if name != "COUNT" and attr is None:
                    raise self.error(f"'.' and an attribute name: {name} needs {name}({var}.attribute)")
            end = self.expect_op(")", "')' to close the aggregate").end
            label = "".join(self.source[t.start:end].split())
            alias = self.parse_alias()
            return A.Agg(name, var, attr, alias, label, span=(t.start, end))
        if agg_clause and name == "COUNT":
            self.advance()
            alias = self.parse_alias()
            return A.Agg("COUNT", None, None, alias, t.text, span=(t.start, t.end))
        if agg_clause or name in KEYWORDS:
            raise self.error(what)
        attr = self.parse_attr_name(what)
        alias = self.parse_alias()
        return A.GroupAttr(attr, alias, span=(t.start, self.toks[self.i - 1].end))

    def parse_alias(self) -> str | None:
        if self.is_kw("AS"):
            self.advance()
            t = self.tok
            if t.kind is T.STRING:
                self.advance()
                return str(t.value)
            return self.ident("a column name after AS").text
        return None

    def parse_attr_name(self, what: str) -> str:
        """A grouping attribute: ``attr`` (``S.attr`` accepted; the variable is ignored)."""
        name = self.ident(what).text
        if self.is_op("."):
            self.advance()
            name = self.ident("an attribute name after '.'").text
        return name

    # ------------------------------------------------------------------ durations
    def parse_duration(self, clause: str) -> A.Duration:
        t = self.tok
        if t.kind is not T.NUMBER:
            raise self.error(f"a duration after {clause}, such as 10 minutes, 30 s or 500 ms")
        self.advance()
        value = t.value
        if value <= 0:
            raise CepvecSyntaxError(f"{clause} duration must be positive, found {t.text}",
                                    source=self.source, start=t.start, end=t.end)
        unit = None
        end = t.end
        if self.tok.kind is T.IDENT and self.tok.text.lower() in UNITS:
            unit = UNITS[self.tok.text.lower()]
            end = self.advance().end
        return A.Duration(value, unit, span=(t.start, end))

    # ------------------------------------------------------------------ WHERE
    def parse_where(self) -> tuple[tuple, str | None]:
        t = self.tok
        if t.kind is T.IDENT and t.text.lower() in STRATEGIES and self.is_op("(", self.peek()):
            strategy = STRATEGIES[t.text.lower()]
            self.advance()
            self.advance()
            while not self.is_op(")"):
                self.ident("a variable name in the strategy's argument list")
                if self.is_op("["):
                    self.advance()
                    self.expect_op("]")
                if not self.is_op(")"):
                    self.expect_op(",", "',' or ')' in the strategy's argument list")
            self.advance()
            self.expect_op("{", "'{' to open the predicates of the strategy")
            conj = () if self.is_op("}") else self.parse_conjuncts()
            self.expect_op("}", "'}' to close the strategy's predicates, or AND between predicates")
            if self.is_and():  # more predicates after the block
                self.advance()
                conj = conj + self.parse_conjuncts()
            return conj, strategy
        return self.parse_conjuncts(), None

    def parse_conjuncts(self) -> tuple:
        items: list = []
        while True:
            # a chain a < b < c is an AND of comparisons: every conjunct stands alone
            items.extend(_flatten_and(self.parse_expr()))
            if self.is_and():
                self.advance()
                continue
            return tuple(items)

    # expression grammar: or > and > not > comparison > additive > multiplicative > unary > primary
    def parse_expr(self) -> A.Expr:
        return self.parse_or()

    def parse_or(self) -> A.Expr:
        start = self.tok.start
        items = [self.parse_and()]
        while self.is_op("OR") or self.is_kw("OR"):
            self.advance()
            items.append(self.parse_and())
        if len(items) == 1:
            return items[0]
        return A.BoolOp("OR", tuple(items), span=(start, self.toks[self.i - 1].end))

    def parse_and(self) -> A.Expr:
        start = self.tok.start
        items = [self.parse_not()]
        while self.is_and():
            self.advance()
            items.append(self.parse_not())
        if len(items) == 1:
            return items[0]
        # AND is associative: a chain (a < b < c AND d) joins its comparisons to the others
        flat = tuple(x for it in items for x in _flatten_and(it))
        return A.BoolOp("AND", flat, span=(start, self.toks[self.i - 1].end))

    def parse_not(self) -> A.Expr:
        if self.is_kw("NOT") or (self.is_op("!") and not self.is_op("=", self.peek())):
            t = self.advance()
            operand = self.nest(self.parse_not)
            return A.Unary("NOT", operand, span=(t.start, self.toks[self.i - 1].end))
        return self.parse_cmp()

    def parse_cmp(self) -> A.Expr:
        start = self.tok.start
        left = self.parse_add()
        cmps = []
        while self.tok.kind is T.OP and self.tok.text in ("=", "!=", "<", "<=", ">", ">="):
            op = self.advance().text
            right = self.parse_add()
            cmps.append(A.Cmp(op, left, right, span=(left.span[0], right.span[1])))
            left = right
        if not cmps:
            return left
        if len(cmps) == 1:
            return cmps[0]
        return A.BoolOp("AND", tuple(cmps), span=(start, self.toks[self.i - 1].end))

    def parse_add(self) -> A.Expr:
        left = self.parse_mul()
        while self.tok.kind is T.OP and self.tok.text in ("+", "-"):
            op = self.advance().text
            right = self.parse_mul()
            left = A.Bin(op, left, right, span=(left.span[0], right.span[1]))
        return left

    def parse_mul(self) -> A.Expr:
        left = self.parse_unary()
        while self.tok.kind is T.OP and self.tok.text in ("*", "/", "%"):
            op = self.advance().text
            right = self.parse_unary()
            left = A.Bin(op, left, right, span=(left.span[0], right.span[1]))
        return left

    def parse_unary(self) -> A.Expr:
        if self.is_op("-"):
            t = self.advance()
            operand = self.nest(self.parse_unary)
            if isinstance(operand, A.Num):
                return A.Num(-operand.value, span=(t.start, operand.span[1]))
            return A.Unary("-", operand, span=(t.start, operand.span[1]))
        if self.is_op("+"):
            self.advance()
            return self.nest(self.parse_unary)
        return self.parse_primary()

    def parse_primary(self) -> A.Expr:
        t = self.tok
        if t.kind is T.NUMBER or t.kind is T.PERCENT:
            self.advance()
            return A.Num(t.value, span=(t.start, t.end))
        if t.kind is T.STRING:
            self.advance()
            return A.Str(str(t.value), span=(t.start, t.end))
        if self.is_op("("):
            self.advance()
            e = self.nest(self.parse_expr)
            self.expect_op(")", "')' to close the parenthesis, or an operator")
            return e
        if self.is_op("["):
            return self.parse_equiv()
        if t.kind is T.IDENT:
            if t.text.upper() == "NEXT" and self.is_op("(", self.peek()):
                self.advance()
                self.advance()
                var = self.ident("a variable inside NEXT(...)").text
                self.expect_op(")", "')' to close NEXT(")
                self.expect_op(".", "'.' and an attribute after NEXT(v), as in NEXT(S).price")
                attr = self.ident("an attribute name after NEXT(v).")
                return A.Ref(var, attr.text, next=True, span=(t.start, attr.end))
            if t.text.upper() in KEYWORDS:
                raise self.error("an attribute, number or string")
            if self.is_op("(", self.peek()):
                return self.parse_call()
            self.advance()
            if self.is_op("["):
                index = self.parse_subscript(t.text)
                self.expect_op(".", f"'.' and an attribute after {t.text}[...]")
                attr = self.ident("an attribute name")
                return A.Ref(t.text, attr.text, index=index, span=(t.start, attr.end))
            if self.is_op("."):
                self.advance()
                attr = self.ident(f"an attribute name after '{t.text}.'")
                return A.Ref(t.text, attr.text, span=(t.start, attr.end))
            return A.Ref(None, t.text, span=(t.start, t.end))
        raise self.error("an attribute, number, string or '('")

    def parse_call(self) -> A.Call:
        t = self.advance()
        self.advance()  # (
        args = []
        while not self.is_op(")"):
            args.append(self.nest(self.parse_expr))
            if not self.is_op(")"):
                self.expect_op(",", "',' or ')' in the argument list")
        end = self.advance().end
        return A.Call(t.text, tuple(args), span=(t.start, end))

    def parse_subscript(self, var: str) -> str:
        """``v[i]``, ``v[i-1]``, ``v[1]``, ``v[v.LEN]``; anything else is kept as raw text."""
        open_tok = self.expect_op("[")
        depth = 1
        while depth:
            if self.tok.kind is T.EOF:
                raise self.error(f"']' to close {var}[")
            if self.is_op("["):
                depth += 1
            elif self.is_op("]"):
                depth -= 1
            self.advance()
        raw = "".join(self.source[open_tok.end:self.toks[self.i - 1].start].split())
        if raw == "i":
            return "i"
        if raw == "i-1":
            return "i-1"
        if raw == "1":
            return "first"
        if raw.lower() in (f"{var.lower()}.len", "len"):
            return "last"
        return raw

    def parse_equiv(self) -> A.Equiv:
        open_tok = self.advance()
        items = []
        while True:
            t = self.tok
            e = self.parse_add()
            if not isinstance(e, A.Ref) or e.next or e.index is not None:
                raise CepvecSyntaxError(
                    "expected an attribute (attr or v.attr) in the equivalence test [...]",
                    source=self.source, start=t.start, end=self.toks[self.i - 1].end)
            if self.tok.kind is T.OP and self.tok.text in ("=", "!=", "<", "<=", ">", ">="):
                op = self.advance().text
                rhs = self.parse_add()
                items.append(A.Cmp(op, e, rhs, span=(e.span[0], rhs.span[1])))
            else:
                items.append(e)
            if self.is_op(","):
                self.advance()
                continue
            break
        close = self.expect_op("]", "',' or ']' in the equivalence test")
        return A.Equiv(tuple(items), span=(open_tok.start, close.end))

    # ------------------------------------------------------------------ patterns
    def parse_top_pattern(self) -> A.Pattern:
        start = self.tok.start
        items = [self.parse_pattern_item()]
        while self.is_op(","):
            self.advance()
            items.append(self.parse_pattern_item())
        if len(items) == 1:
            return items[0]
        return A.PSeq(tuple(items), span=(start, self.toks[self.i - 1].end))

    def parse_pattern_item(self) -> A.Pattern:
        t = self.tok
        if self.is_kw("NOT") or self.is_op("!") or self.is_op("~"):
            self.advance()
            body = self.nest(self.parse_pattern_item)
            return A.PNot(body, span=(t.start, self.toks[self.i - 1].end))
        node = self.parse_pattern_primary()
        if self.is_op("+"):
            end = self.advance().end
            node = A.PKleene(node, span=(t.start, end))
        return node

    def parse_pattern_primary(self) -> A.Pattern:
        t = self.tok
        if self.is_op("("):
            self.advance()
            inner = self.nest(self.parse_top_pattern)
            self.expect_op(")", "',' or ')' to close the parenthesised pattern")
            if isinstance(inner, (A.PType, A.PSeq, A.PKleene, A.PNot)):
                return inner
        if self.is_kw("SEQ") and self.is_op("(", self.peek()):
            self.advance()
            self.advance()
            items = [self.nest(self.parse_pattern_item)]
            while self.is_op(","):
                self.advance()
                items.append(self.nest(self.parse_pattern_item))
            end = self.expect_op(")", "',' or ')' to close SEQ(").end
            return A.PSeq(tuple(items), span=(t.start, end))
        if self.is_kw("ANY") and self.is_op("(", self.peek()):
            self.advance()
            self.advance()
            types = [self.ident("an event type inside ANY(...)").text]
            while self.is_op(","):
                self.advance()
                types.append(self.ident("an event type inside ANY(...)").text)
            end = self.expect_op(")", "',' or ')' to close ANY(").end
            return self._finish_type(tuple(types), t.start, end)
        if t.kind is T.IDENT and t.text.upper() not in KEYWORDS:
            self.advance()
            return self._finish_type((t.text,), t.start, t.end)
        raise self.error("an event type, SEQ(...), ANY(...), NOT or '('")

    def _finish_type(self, types: tuple[str, ...], start: int, end: int) -> A.Pattern:
        kleene_before_var = False
        if self.is_op("+") and self.peek().kind is T.IDENT and self.peek().text.upper() not in KEYWORDS:
            # SASE+ spelling "Shipment+ b[]"
            self.advance()
            kleene_before_var = True
        var = None
        if self.tok.kind is T.IDENT and self.tok.text.upper() not in KEYWORDS:
            var_tok = self.advance()
            var, end = var_tok.text, var_tok.end
            if self.is_op("[") and self.is_op("]", self.peek()):
                self.advance()
                end = self.advance().end
        node: A.Pattern = A.PType(types, var, span=(start, end))
        if kleene_before_var:
            node = A.PKleene(node, span=(start, end))
        return node
