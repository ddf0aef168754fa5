"""Error types of cepvec.

Every error cepvec raises derives from :class:`CepvecError`. Errors that are
also a misuse of a builtin protocol mix in the builtin (``TypeError``,
``ValueError``) so callers can catch either.

Messages say what was expected, what was found, where, and how to fix it.
"""

from __future__ import annotations


class CepvecError(Exception):
    """Root of every error raised by cepvec."""


class CepvecWarning(UserWarning):
    """Warnings cepvec emits (for example a query type absent from the data)."""


def _caret_block(source: str, line: int, col: int, length: int) -> str:
    lines = source.splitlines() or [""]
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    width = max(1, min(length, max(1, len(text) - col + 1)))
    return f"  {text}\n  {' ' * (col - 1)}{'^' * width}"


class CepvecSyntaxError(CepvecError, ValueError):
    """The query text does not follow the grammar.

    Attributes
    ----------
    message : what was expected and what was found
    line, col : 1-based position of the offending token
    start, end : character offsets of the offending text in the source
    text : the offending text
    source : the whole query text
    """

    def __init__(self, message: str, *, source: str, start: int, end: int):
        self.message = message
        self.source = source
        self.start = start
        self.end = max(end, start + 1)
        self.line, self.col = position(source, start)
        self.text = source[start:end]
        super().__init__(self.__str__())

    def __str__(self) -> str:  # noqa: D105
        return (
            f"{self.message} (line {self.line}, col {self.col})\n"
            f"{_caret_block(self.source, self.line, self.col, self.end - self.start)}"
        )


class CepvecQueryError(CepvecError, ValueError):
    """The query parses but means nothing cepvec can evaluate.

    Raised for unknown variables, aggregates over negated variables, NOT
    outside SEQ, predicates between variables that are never adjacent,
    constructs outside the semantics, and similar. ``text`` quotes the
    offending part of the query; ``start``/``end`` locate it when known.
    """

    def __init__(self, message: str, *, source: str | None = None,
                 start: int | None = None, end: int | None = None):
        self.message = message
        self.source = source
        self.start = start
        self.end = end
        if source is not None and start is not None:
            self.line, self.col = position(source, start)
            self.text = source[start:end]
        else:
            self.line = self.col = None
            self.text = None
        super().__init__(self.__str__())

    def __str__(self) -> str:  # noqa: D105
        if self.line is None:
            return self.message
        length = (self.end or self.start + 1) - self.start
        first_line_len = len((self.text or "").split("\n")[0]) or 1
        return (
            f"{self.message} (line {self.line}, col {self.col})\n"
            f"{_caret_block(self.source, self.line, self.col, min(length, first_line_len))}"
        )


class NotSupportedError(CepvecQueryError):
    """A construct outside the semantics contract (``docs/semantics.md``)."""


class CepvecPlanError(CepvecError, ValueError):
    """The query cannot be planned against this input (missing column, ...)."""


class CepvecTypeError(CepvecError, TypeError):
    """A column or argument has the wrong type."""


class CepvecDataError(CepvecError, ValueError):
    """The input data violates a precondition (nulls in time, unsorted, ...)."""


class UnsupportedByEngine(CepvecError, ValueError):
    """The engine that was asked for cannot run this query."""


class CepvecOverflowError(CepvecError, OverflowError):
    """An exact int64 count or sum would overflow."""


def position(source: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of character ``offset`` in ``source``."""
    offset = max(0, min(offset, len(source)))
    line = source.count("\n", 0, offset) + 1
    col = offset - (source.rfind("\n", 0, offset) + 1) + 1
    return line, col
