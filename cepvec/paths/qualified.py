"""Qualified equivalence (``[P.vehicle]``) on the Numba engines, by broadcasting.

``[P.vehicle, segment]`` (GRETA Q3) asks the events bound to ``P`` to share
``vehicle``; every other event of a match (a negated ``Accident``) is free. The
engines know only partitions that every event of a match shares, so
:class:`QualifiedRun` turns the query into one with unqualified keys:

* an event whose type ``P`` binds (a *keyed* event) goes to the partition of
  its own value: key column ``__qk0`` = its ``vehicle``;
* any other event of the query (a *broadcast* event) is copied into every
  partition of its unqualified key (``segment``) known so far, and into the
  segment's *phantom* partition (``__phantom`` true, no keyed event ever);
* a partition that appears later starts as a copy of its phantom: the state
  the broadcast events before it left (its carried window events, its vector).

Every match has at least one keyed event, so it is counted in exactly one
partition, the one of its ``P`` events' value; the phantom partitions have no
matches. The wrapper holds back the last time stamp of every batch itself, so
a broadcast event is copied only once the partitions of its time stamp are all
known. Supported when every qualified equivalence names the same pattern
variables, those are positive, and no other variable (negated ones included)
shares an event type with them (:func:`unsupported_reason`).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl

from cepvec.paths.base import Path
from cepvec.plan.ir import Equivalence, Query
from cepvec.runtime.memory import check_broadcast_rows
from cepvec.runtime.type_codes import type_in

PHANTOM = "__phantom"


def _key_col(i: int) -> str:
    return f"__qk{i}"


def keyed_occs(q: Query) -> frozenset[int]:
    occs = {e.occs for e in q.qualified_equivalences}
    return next(iter(occs)) if len(occs) == 1 else frozenset()


def unsupported_reason(q: Query) -> str | None:
    """Why broadcasting cannot run the qualified equivalences of ``q`` (None when it can)."""
    quals = q.qualified_equivalences
    if not quals:
        return None
    texts = ", ".join(e.text for e in quals)
    if len({e.occs for e in quals}) > 1:
        return f"qualified equivalences on different variables ({texts})"
    occs = keyed_occs(q)
    if any(q.occs[o].negated for o in occs):
        return f"a qualified equivalence on a negated variable ({texts})"
    keyed_types = {t for o in occs for t in q.occs[o].types}
    other = {t for o in q.occs if o.id not in occs for t in o.types}
    if keyed_types & other:
        return (f"a qualified equivalence ({texts}) on a variable whose event type "
                f"{sorted(keyed_types & other)[0]!r} other variables match too")
    return None


def unqualified_query(q: Query) -> Query:
    """``q`` with its qualified equivalences replaced by the key columns of :class:`QualifiedRun`."""
    quals = q.qualified_equivalences
    eqs = [e for e in q.equivalences if e.occs is None]
    eqs += [Equivalence(_key_col(i), None, e.text) for i, e in enumerate(quals)]
    eqs.append(Equivalence(PHANTOM, None, "phantom partition"))
    return dataclasses.replace(q, equivalences=tuple(eqs))


class Qualified(Path):
    """A path that runs qualified equivalences by broadcasting on top of ``inner`` (see the module)."""

    def __init__(self, inner: Path):
        self.inner = inner
        self.name = f"{inner.name} (qualified equivalence by broadcasting)"

    def supports(self, q: Query, schema: dict | None = None) -> str | None:
        why = unsupported_reason(q)
        if why is not None:
            return why
        return self.inner.supports(unqualified_query(q), _with_key_cols(q, schema) if schema is not None else None)

    def plan(self, q: Query, schema: dict | None = None):
        return self.inner.plan(unqualified_query(q), schema)

    def open(self, q: Query, schema: dict, *, w, s, numeric: str = "int64") -> "QualifiedRun":
        return QualifiedRun(self.inner.open, q, schema, w=w, s=s, numeric=numeric)


def _with_key_cols(q: Query, schema: dict) -> dict:
    """``schema`` with the key columns and the phantom flag :class:`QualifiedRun` adds."""
    out = dict(schema)
    for i, e in enumerate(q.qualified_equivalences):
        if e.attr in out:
            out[_key_col(i)] = out[e.attr]
    out[PHANTOM] = pl.Boolean
    return out


class QualifiedRun:
    """Wraps an inner path's run (``push``/``finish``/``clone_partitions``) for qualified equivalences."""

    def __init__(self, open_inner, q: Query, schema: dict, *, w, s, numeric: str = "int64"):
        self.q = q
        self.quals = [e.attr for e in q.qualified_equivalences]
        self.unq = [c for c in q.partition_by]  # shared by every event of a match
        occs = keyed_occs(q)
        self.keyed_types = sorted({t for o in occs for t in q.occs[o].types})
        self.all_types = sorted({t for o in q.occs for t in o.types})
        self.key_cols = [_key_col(i) for i in range(len(self.quals))]
        schema = _with_key_cols(q, schema)
        self.schema = schema
        self.known = pl.DataFrame(schema={**{c: schema[c] for c in self.unq + self.key_cols}})
        self.inner = open_inner(unqualified_query(q), schema, w=w, s=s, numeric=numeric)
        self.held: tuple[pl.DataFrame, np.ndarray] | None = None

    def push(self, df: pl.DataFrame, times: np.ndarray) -> None:
        times = np.asarray(times, np.int64)
        if self.held is not None:
            hdf, ht = self.held
            df = pl.concat([hdf, df], how="vertical_relaxed") if len(df) else hdf
            times = np.concatenate([ht, times])
            self.held = None
        if not len(df):
            return
        cut = int(np.searchsorted(times, times[-1], side="left"))
        self.held = (df[cut:], times[cut:])
        self._push(df[:cut], times[:cut])

    def finish(self, prep):
        if self.held is not None:
            (hdf, ht), self.held = self.held, None
            self._push(hdf, ht)
        return self.inner.finish(prep)

    def _push(self, df: pl.DataFrame, times: np.ndarray) -> None:
        if not len(df):
            return
        df = df.with_columns(pl.Series("__t", times), pl.int_range(pl.len(), dtype=pl.Int64).alias("__row"))
        keyed = df.filter(type_in(self.q.type_col, self.keyed_types)).with_columns(
            [pl.col(a).alias(c) for a, c in zip(self.quals, self.key_cols)] + [pl.lit(False).alias(PHANTOM)])
        # new partitions start as copies of their phantom
        new = keyed.select(self.unq + self.key_cols).unique(maintain_order=True).join(
            self.known, on=self.unq + self.key_cols, how="anti", nulls_equal=True)
        if len(new):
            self.known = pl.concat([self.known, new.cast(self.known.schema)], how="vertical")
            dst = new.with_columns(pl.lit(False).alias(PHANTOM))
            src = new.with_columns([pl.lit(None, dtype=self.schema[c]).alias(c) for c in self.key_cols]
                                   + [pl.lit(True).alias(PHANTOM)])
            self.inner.clone_partitions(dst, src)
        bcast = df.filter(type_in(self.q.type_col, set(self.all_types) - set(self.keyed_types)))
        parts = [keyed]
        if len(bcast):
            self._check_copies(bcast)
            phantom = bcast.with_columns([pl.lit(None, dtype=self.schema[c]).alias(c) for c in self.key_cols]
                                         + [pl.lit(True).alias(PHANTOM)])
            copies = (bcast.join(self.known, on=self.unq, how="inner", nulls_equal=True) if self.unq
                      else bcast.join(self.known, how="cross")).with_columns(pl.lit(False).alias(PHANTOM))
            parts += [phantom, copies.select(phantom.columns)]
        out = pl.concat([p.select(parts[0].columns) for p in parts], how="vertical_relaxed").sort(
            "__row", maintain_order=True)
        if not len(out):
            return
        self.inner.push(out.drop("__row", "__t"), out["__t"].to_numpy())

    def _check_copies(self, bcast: pl.DataFrame) -> None:
        """Refuse (``runtime/memory.py::check_broadcast_rows``) a batch whose broadcast events would be
        copied into more rows than the memory budget, before the join that copies them."""
        if self.unq:
            per = self.known.group_by(self.unq).len("k").join(bcast.group_by(self.unq).len("b"), on=self.unq,
                                                                nulls_equal=True)
            rows = int(per.select((pl.col("k") * pl.col("b")).sum()).item() or 0)
        else:
            rows = len(self.known) * len(bcast)
        check_broadcast_rows(self.q, rows, max(bcast.estimated_size() // max(len(bcast), 1), 8), len(self.known))


def copy_rows(frame: pl.DataFrame, src: pl.DataFrame, dst: pl.DataFrame) -> pl.DataFrame:
    """The rows of ``frame`` whose key columns equal a row of ``src``, with the key values of
    the matching row of ``dst`` instead (``src`` and ``dst`` are aligned key frames)."""
    cols = src.columns
    mapping = pl.concat([src, dst.rename({c: c + "__dst" for c in cols})], how="horizontal")
    hit = frame.join(mapping, on=cols, how="inner", nulls_equal=True, maintain_order="left")
    return hit.drop(cols).rename({c + "__dst": c for c in cols}).select(frame.columns)


def clone_index(pids: np.ndarray, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For state rows with partition ids ``pids``: (row index, new partition id) of one copy per
    ``dst[i]`` of every row whose partition is ``src[i]``."""
    pids = np.asarray(pids, np.int64)
    if not len(src) or not len(pids):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    n = int(max(pids.max(), src.max())) + 1
    order = np.argsort(src, kind="stable")
    cnt = np.bincount(src, minlength=n)
    start = np.zeros(n + 1, np.int64)
    np.cumsum(cnt, out=start[1:])
    c = cnt[pids]
    rows = np.repeat(np.arange(len(pids)), c)
    # k-th copy of a row: offset k within its source's destinations
    first = np.repeat(np.cumsum(c) - c, c)
    k = np.arange(len(rows)) - first
    return rows, dst[order][start[pids[rows]] + k]
