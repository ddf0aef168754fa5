"""Seeded synthetic event-stream generators for the workloads of the papers.

Every generator returns a :class:`polars.DataFrame` with

* ``type`` -- ``String``, the event type;
* ``time`` -- ``Int64``, seconds since 0, non-negative, sorted ascending
  (ties are allowed unless a generator says otherwise);
* workload-specific attribute columns.

All generators take keyword-only arguments ``n_events`` and ``seed`` plus
workload knobs, draw every random number from
``numpy.random.default_rng(seed)`` (so the output is a pure function of the
arguments) and are vectorised with NumPy/Polars: there is no Python loop per
event, so 10^7 events take a few seconds.

Conventions shared by all generators:

* the first event is at time 0 and ``time[i] = time[i-1] + gap[i]``;
* ``n_events == 0`` yields an empty frame with the full schema (except for
  :func:`cluster_monitoring`, which needs at least one complete run);
* bad arguments raise :class:`ValueError` naming the argument, what was
  expected and what was found.

``WORKLOADS`` maps the short names ``"stock"``, ``"cluster"``, ``"traffic"``,
``"purchases"`` and ``"abcd"`` to the generator functions.
:mod:`cepvec.generators.sharon` makes Sharon's multi-query workloads
(``traffic_workload``, ``ecommerce_workload``) for ``cepvec.run_many`` and
their stream (``ecommerce_stream``).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from cepvec.generators._common import DEFAULT_ITEMS, FEET_PER_SEGMENT
from cepvec.generators.aseq import purchases, sequence_abcd
from cepvec.generators.greta import cluster_monitoring, stock_trades, traffic
from cepvec.generators.sharon import ecommerce_stream, ecommerce_workload, traffic_workload

__all__ = [
    "stock_trades",
    "cluster_monitoring",
    "traffic",
    "purchases",
    "sequence_abcd",
    "ecommerce_stream",
    "ecommerce_workload",
    "traffic_workload",
    "WORKLOADS",
    "DEFAULT_ITEMS",
    "FEET_PER_SEGMENT",
]

#: Short workload name -> generator function.
WORKLOADS: dict[str, Callable[..., pl.DataFrame]] = {
    "stock": stock_trades,
    "cluster": cluster_monitoring,
    "traffic": traffic,
    "purchases": purchases,
    "abcd": sequence_abcd,
}
