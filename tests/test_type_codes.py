"""Type codes from the Arrow string views of a String column (``cepvec/runtime/type_codes.py``).

``kernels/linear/encode.py::view_codes`` compares each view with every query type when there are
at most ``_COMPARE_UP_TO`` of them, and hashes it otherwise; both must give each row the code of its
type (1 + the type's index) and 0 to any other string: a prefix or an extension of a type name, a
name of the same length, a string longer than a view holds inline (12 bytes), the empty string.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from cepvec.kernels.linear import encode
from cepvec.runtime.type_codes import TypeCodes, string_views
from tests.strategies import examples

_NAMES = st.text(st.sampled_from("ABab_é1"), min_size=1, max_size=12).filter(lambda s: len(s.encode()) <= 12)


@settings(max_examples=examples(200), deadline=None)
@given(names=st.lists(_NAMES, min_size=1, max_size=2 * encode._COMPARE_UP_TO, unique=True)
       | st.lists(st.sampled_from(["ABCDE", "ABCDF", "ABCDEFGHIJKL", "ABCDEFGHIJKM", "A", "AB"]), min_size=1,
                  unique=True),
       others=st.lists(st.text(st.sampled_from("ABab_é1"), max_size=16), max_size=6),
       picks=st.lists(st.integers(0, 10 ** 6), min_size=1, max_size=60))
def test_view_codes_give_each_row_its_type(names, others, picks):
    # near misses: an extension, a prefix, and the same name with its last character changed (past
    # 4 bytes that differs only in the view's second word)
    near = [n + "x" for n in names] + [n[:-1] for n in names] + [n[:-1] + ("A" if n[-1] != "A" else "B") for n in names]
    pool = names + [v for v in others + near if v not in names]
    values = [pool[p % len(pool)] for p in picks]
    tc = TypeCodes("type", names)
    assert tc.views_ok
    df = pl.DataFrame({"type": values})
    assert string_views(df["type"]) is not None
    want = [names.index(v) + 1 if v in names else 0 for v in values]
    assert tc.codes(df).tolist() == want
    n_parts = 3
    pid = np.arange(len(values), dtype=np.int64) % n_parts
    cls_prog = np.arange(-1, len(names), dtype=np.int64)  # code 0 (no type) dropped
    codes = np.empty(len(values), np.int32)
    count = encode.view_codes_count(string_views(df["type"]), *tc.view_hash, n_parts, cls_prog, pid, codes)
    assert codes.tolist() == want
    assert count.tolist() == np.bincount(pid[np.array(want) > 0], minlength=n_parts).tolist()
