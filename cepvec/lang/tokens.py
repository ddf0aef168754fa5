"""Tokenizer for the cepvec query language.

The tokenizer is context free. Keywords are not reserved here: the parser
recognises them by (case-insensitive) identifier text, so attribute names
such as ``type`` stay usable.

Identifier rule: ``[A-Za-z_][A-Za-z0-9_]*`` segments joined by ``-`` when the
hyphen sits directly between two segments (``SHELF-READING``, ``GROUP-BY``).
Write spaces around a binary minus between two names (``a.x - b.y``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from cepvec.errors import CepvecSyntaxError


class T(Enum):
    IDENT = "identifier"
    NUMBER = "number"
    PERCENT = "percent literal"
    STRING = "string"
    OP = "operator"
    EOF = "end of query"


@dataclass(frozen=True)
class Token:
    kind: T
    text: str  # normalised text (operators in ASCII spelling)
    start: int
    end: int
    value: object = None

    def describe(self) -> str:
        if self.kind is T.EOF:
            return "end of query"
        if self.kind is T.STRING:
            return f"string {self.value!r}"
        return f"'{self.text}'"


# Unicode and alternative spellings folded to one canonical operator.
_OPERATORS = [
    ("&&", "AND"), ("||", "OR"),
    ("<=", "<="), (">=", ">="), ("!=", "!="), ("<>", "!="), ("==", "="),
    ("∧", "AND"), ("^", "AND"), ("∨", "OR"), ("≠", "!="), ("≤", "<="), ("≥", ">="),
    ("(", "("), (")", ")"), ("[", "["), ("]", "]"), ("{", "{"), ("}", "}"),
    (",", ","), (".", "."), ("+", "+"), ("-", "-"), ("*", "*"), ("/", "/"),
    ("%", "%"), ("=", "="), ("<", "<"), (">", ">"), ("!", "!"), ("~", "~"),
]

_QUOTES = {"'": "'", '"': '"', "‘": "’", "’": "’", "“": "”"}


def _is_digit(c: str) -> bool:
    """An ASCII digit: ``str.isdigit`` also holds for digits such as ``¹`` that ``int`` refuses."""
    return "0" <= c <= "9"


def _is_ident_start(c: str) -> bool:
    return c.isascii() and (c.isalpha() or c == "_")


def _is_ident_char(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c == "_")


def tokenize(source: str) -> list[Token]:
    """Split ``source`` into tokens; the last token is ``EOF``."""
    toks: list[Token] = []
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if c.isspace():
            i += 1
            continue
        if source.startswith("/*", i):
            j = source.find("*/", i + 2)
            if j < 0:
                raise CepvecSyntaxError(
                    "unterminated comment: expected '*/' to close the '/*' here",
                    source=source, start=i, end=i + 2)
            i = j + 2
            continue
        if source.startswith("--", i) and (i + 2 >= n or not _is_digit(source[i + 2])):
            j = source.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        if _is_ident_start(c):
            j = i + 1
            while j < n:
                if _is_ident_char(source[j]):
                    j += 1
                elif source[j] == "-" and j + 1 < n and _is_ident_start(source[j + 1]):
                    j += 2
                else:
                    break
            toks.append(Token(T.IDENT, source[i:j], i, j, source[i:j]))
            i = j
            continue
        if _is_digit(c) or (c == "." and i + 1 < n and _is_digit(source[i + 1])):
            j = i
            while j < n and _is_digit(source[j]):
                j += 1
            is_float = False
            if j < n and source[j] == "." and j + 1 < n and _is_digit(source[j + 1]):
                is_float = True
                j += 1
                while j < n and _is_digit(source[j]):
                    j += 1
            if j < n and source[j] in "eE" and j + 1 < n and (
                _is_digit(source[j + 1])
                or (source[j + 1] in "+-" and j + 2 < n and _is_digit(source[j + 2]))
            ):
                is_float = True
                j += 2
                while j < n and _is_digit(source[j]):
                    j += 1
            text = source[i:j]
            value = float(text) if is_float else int(text)
            # "80%" directly followed by an operator (not an operand) is a percent literal.
            if j < n and source[j] == "%":
                k = j + 1
                while k < n and source[k] in " \t":
                    k += 1
                if k >= n or not (_is_ident_char(source[k]) or source[k] in "(."):
                    toks.append(Token(T.PERCENT, source[i:j + 1], i, j + 1, value / 100))
                    i = j + 1
                    continue
            toks.append(Token(T.NUMBER, text, i, j, value))
            i = j
            continue
        if c in _QUOTES:
            close = _QUOTES[c]
            j = i + 1
            while j < n and source[j] != close and not (c in "‘’" and source[j] == "’"):
                j += 1
            if j >= n:
                raise CepvecSyntaxError(
                    f"unterminated string: expected a closing {close} for the string that starts here",
                    source=source, start=i, end=i + 1)
            toks.append(Token(T.STRING, source[i:j + 1], i, j + 1, source[i + 1:j]))
            i = j + 1
            continue
        for spelling, canon in _OPERATORS:
            if source.startswith(spelling, i):
                toks.append(Token(T.OP, canon, i, i + len(spelling)))
                i += len(spelling)
                break
        else:
            raise CepvecSyntaxError(
                f"unexpected character {c!r}: expected a name, number, string or operator",
                source=source, start=i, end=i + 1)
    toks.append(Token(T.EOF, "", n, n))
    return toks
