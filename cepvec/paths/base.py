"""The engine interface every physical path implements.

A *path* is one way of running a query: the linear-map kernels, the Fenwick
trend kernels, the predecessor scan, the match-constructing reference engine
(and :class:`cepvec.paths.qualified.Qualified`, which wraps another path). The
registry (:mod:`cepvec.registry`) only lists paths and asks them; nothing
outside a path's folder knows how it runs.

* :meth:`Path.supports` says why the path cannot run a query (``None`` when
  it can), on input with the given column types when they are known;
* :meth:`Path.plan` is the path's physical plan (what ``explain`` shows);
* :meth:`Path.open` starts a :class:`Run`: ``push`` time-ordered batches
  (any cuts: results do not depend on them), then ``finish`` returns the
  result frame.

See ``docs/architecture.md``, "How to add an engine".
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Protocol

import numpy as np
import polars as pl

from cepvec.errors import CepvecDataError, UnsupportedByEngine
from cepvec.plan.ir import Query
from cepvec.runtime.prepare import Prepared


class Run(Protocol):
    """One query over one time-ordered stream."""

    def push(self, df: pl.DataFrame, times: np.ndarray) -> None:
        """Consume the next batch; ``times`` are its time stamps in the run's unit (non-decreasing)."""

    def finish(self, prep: Prepared) -> pl.DataFrame:
        """Flush what is held back and return the result frame (``prep`` carries units and dtypes)."""


class Path(ABC):
    """A physical path (see the module docstring)."""

    #: short name shown by ``explain`` and in error messages
    name: str = ""

    @abstractmethod
    def supports(self, q: Query, schema: dict | None = None) -> str | None:
        """Why this path cannot run ``q`` (None when it can); ``schema``: input column types, if known."""

    def plan(self, q: Query, schema: dict | None = None):
        """The path's physical plan of ``q`` (default: the logical plan itself)."""
        return q

    @abstractmethod
    def open(self, q: Query, schema: dict, *, w: int | None, s: int | None, numeric: str = "int64") -> Run:
        """A new run of ``q`` over input with column types ``schema`` (``w``/``s``: window in time units)."""


def refusal(check, *args) -> str | None:
    """The message of the :class:`UnsupportedByEngine` that ``check(*args)`` raises, or None: how a
    path's ``supports`` reuses a check its run makes on the column types."""
    try:
        check(*args)
    except UnsupportedByEngine as exc:
        return str(exc)
    return None


def batch_end(times: np.ndarray, last_time: int | None) -> int | None:
    """The last time stamp of a batch that follows one ending at ``last_time`` (``last_time`` for an
    empty batch); a batch that starts before it is a :class:`CepvecDataError`."""
    if not len(times):
        return last_time
    if last_time is not None and times[0] < last_time:
        raise CepvecDataError(
            f"batch starts at time {times[0]}, before the previous batch ended ({last_time}); "
            "batches must arrive in time order")
    return int(times[-1])


def feed(run: Run, prep: Prepared, batches: list[int] | None = None) -> pl.DataFrame:
    """Push ``prep`` into ``run`` in batches cut at the row offsets ``batches``, then finish it."""
    times = prep.times.to_numpy()
    cuts = [0] + sorted(set(batches or [])) + [len(prep.df)]
    for a, b in zip(cuts, cuts[1:]):
        run.push(prep.df[a:b], times[a:b])
    return run.finish(prep)
