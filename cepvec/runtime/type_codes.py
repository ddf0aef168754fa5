"""Event types as small integer codes, and as a boolean column, without string work per event.

Every path reads the type column the same way, whatever its dtype:

* a null-free **String** column: the Arrow string views are hashed by a Numba kernel
  (:func:`cepvec.kernels.linear.view_codes`), when every query type fits in a view (12 bytes);
* a **Categorical** or **Enum** column: its physical ids through a lookup table (the
  categories are not turned into strings);
* anything else (a String column with nulls or long type names): Polars' ``replace_strict``.

:func:`type_in` is the expression form for the paths that build their masks in Polars: it
compares the column as it is (a Categorical / Enum compares ids) instead of casting it to
String first, which cost 6-10 ms per 4·10^5 events for a Categorical column.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

from cepvec.kernels.linear import view_codes, view_hash, view_words

#: up to this many types, a mask is a chain of equalities (on a String column one ``==`` costs
#: about a tenth of an ``is_in``, which hashes every row)
_EQUALITIES_UP_TO = 8


def type_in(type_col: str, types) -> pl.Expr:
    """True where the event's type is one of ``types`` (false for other types and for null)."""
    names = sorted(set(types))
    col = pl.col(type_col)
    if not names:
        return pl.lit(False)
    if len(names) > _EQUALITIES_UP_TO:
        return col.is_in(names).fill_null(False)
    expr = col == names[0]
    for t in names[1:]:
        expr = expr | (col == t)
    return expr.fill_null(False)


def string_views(col: pl.Series):
    """The (n, 2) uint64 Arrow view words of a null-free String column (zero-copy), else None."""
    arr = string_view_array(col)
    return None if arr is None else view_words_of(arr)


def string_view_array(col: pl.Series, nulls: bool = False) -> pa.Array | None:
    """A null-free String column (``nulls``: any String column) as one Arrow ``string_view`` array
    (zero-copy), else None."""
    if not (len(col) and col.dtype == pl.String and (nulls or col.null_count() == 0)):
        return None
    arr = col.to_arrow(compat_level=pl.CompatLevel.newest())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return arr if pa.types.is_string_view(arr.type) else None


def view_words_of(arr: pa.Array) -> np.ndarray:
    """The (n, 2) uint64 view words of a ``string_view`` array (zero-copy)."""
    n = len(arr)
    views = np.frombuffer(arr.buffers()[1], dtype=np.uint64, count=2 * (arr.offset + n))
    return views.reshape(-1, 2)[arr.offset:]


class TypeCodes:
    """Code per event of column ``type_col``: 1 + the index of its type in ``names``, 0 for any
    other type (and null)."""

    def __init__(self, type_col: str, names: list[str]):
        self.type_col = type_col
        self.names = list(names)
        words = [view_words(t) for t in self.names]
        self.views_ok = all(w is not None for w in words)
        self.view_hash = view_hash(words) if self.views_ok else None

    def views(self, df: pl.DataFrame):
        """The view words of the type column, or None when the kernel cannot read them."""
        return string_views(df[self.type_col]) if self.views_ok else None

    def codes(self, df: pl.DataFrame, kernels: bool = True) -> np.ndarray:
        """int32 code per row of ``df``: of a String column from its views by a kernel, or (not
        ``kernels``: few rows, no compile on a cold cache) by a Polars expression."""
        views = self.views(df) if kernels else None
        if views is not None:
            codes = np.empty(len(df), np.int32)
            view_codes(views, *self.view_hash, codes)
            return codes
        if not self.names:
            return np.zeros(len(df), np.int32)
        col = df[self.type_col]
        if isinstance(col.dtype, (pl.Categorical, pl.Enum)):
            return self.category_codes(col)
        expr = pl.col(self.type_col).cast(pl.String).replace_strict(
            self.names, list(range(1, len(self.names) + 1)), default=0, return_dtype=pl.Int32)
        return df.select(expr.fill_null(0)).to_series().to_numpy()

    def category_codes(self, col: pl.Series) -> np.ndarray:
        """Codes of a Categorical / Enum column from its physical ids (no string work per event)."""
        phys, lut = self.category_ids(col)
        return np.take(lut, phys, mode="clip")

    def category_ids(self, col: pl.Series) -> tuple[np.ndarray, np.ndarray]:
        """The physical ids of a Categorical / Enum column (unsigned, read-only, nulls as the last
        index of the table) and the table ``lut`` that maps each to its code: the id of each query
        type to its code, every other id to 0 (``lut[-1]``: 0, for ids past the table too).

        An Enum lists its categories; a Categorical's ids are found by casting the query's type
        names into its categories (Polars >= 1.32: a name missing from the data is added to
        them, which changes no value), else from the distinct values of the column.
        """
        names = self.names
        if isinstance(col.dtype, pl.Enum):
            index = {c: i for i, c in enumerate(col.dtype.categories.to_list())}
            ids = [index.get(t) for t in names]
        elif getattr(col.dtype, "categories", None) is not None:
            ids = pl.Series(names, dtype=pl.String).cast(col.dtype).to_physical().to_list()
        else:  # older Polars: ids are local to the column's reverse map
            uniq = col.drop_nulls().unique()
            index = dict(zip(uniq.cast(pl.String).to_list(), uniq.to_physical().to_list()))
            ids = [index.get(t) for t in names]
        top = max((i for i in ids if i is not None), default=-1)
        lut = np.zeros(top + 2, np.int32)  # lut[top + 1] = 0: ids past the query's (clipped) and null
        for code, i in enumerate(ids, start=1):
            if i is not None:
                lut[i] = code
        phys = col.to_physical()
        if phys.null_count():
            phys = phys.fill_null(top + 1)
        return phys.to_numpy(), lut

    def is_categorical(self, df: pl.DataFrame) -> bool:
        """Whether the type column of ``df`` is Categorical or Enum (codes from :meth:`category_ids`)."""
        return bool(self.names) and isinstance(df.schema[self.type_col], (pl.Categorical, pl.Enum))
