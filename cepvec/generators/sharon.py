"""Sharon's multi-query workloads (Sharon Section VIII) and their e-commerce stream.

* :func:`traffic_workload`: queries q1-q7 of Sharon Figure 1 (route counts per
  vehicle, ``WITHIN 10 min SLIDE 1 min``);
* :func:`ecommerce_workload`: ``n_queries`` purchase-sequence queries over
  ``n_items`` item types, each of 6-10 types built by concatenating segments
  drawn from a small pool of shared segments (Sharon's queries share
  sub-patterns such as ``(Laptop, Case)``), ``COUNT(*)`` per customer
  ``WITHIN 20 min SLIDE 1 min`` (q8-q11's window);
* :func:`ecommerce_stream`: the purchases of ``n_customers`` customers over
  ``n_items`` item types (Sharon: 50 items, 20 customers), item popularity
  ``"uniform"`` or ``"zipf"`` (weight ``1 / rank``), through
  :func:`cepvec.generators.purchases`.

Both workload generators return ``{name: query text}`` (a ``dict`` for
``cepvec.run_many``); everything is a pure function of the arguments.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from cepvec.generators._common import _check_int
from cepvec.generators.aseq import purchases

#: Sharon Figure 1: the route of each query (q2-q7 share q1's predicates and window).
TRAFFIC_ROUTES: dict[str, tuple[str, ...]] = {
    "q1": ("OakSt", "MainSt", "StateSt"),
    "q2": ("OakSt", "MainSt", "WestSt"),
    "q3": ("LindenSt", "ParkAve", "OakSt", "MainSt"),
    "q4": ("ParkAve", "OakSt", "MainSt", "WestSt"),
    "q5": ("MainSt", "StateSt"),
    "q6": ("EastPark", "ElmSt", "ParkAve"),
    "q7": ("ElmSt", "ParkAve", "GreenHill"),
}
DISTRIBUTIONS = ("uniform", "zipf")


def item_names(n_items: int) -> tuple[str, ...]:
    """``Item00``, ``Item01``, ...: the event types of the e-commerce workload."""
    return tuple(f"Item{i:02d}" for i in range(_check_int("n_items", n_items, 2)))


def traffic_workload(*, within: str = "10 min", slide: str = "1 min") -> dict[str, str]:
    """Sharon Figure 1's q1-q7: ``RETURN COUNT(*) PATTERN SEQ(route) WHERE [vehicle] WITHIN .. SLIDE ..``."""
    return {name: f"RETURN COUNT(*) PATTERN SEQ({', '.join(r)}) WHERE [vehicle] WITHIN {within} SLIDE {slide}"
            for name, r in TRAFFIC_ROUTES.items()}


def ecommerce_workload(n_queries: int, *, seed: int = 0, n_items: int = 50, min_length: int = 6,
                       max_length: int = 10, n_segments: int = 10, within: str = "20 min",
                       slide: str = "1 min") -> dict[str, str]:
    """``n_queries`` distinct purchase-sequence queries built from a pool of ``n_segments`` shared segments.

    Each segment is 2-4 distinct items; each query draws segments uniformly
    from the pool and concatenates them until it has a length drawn uniformly
    from ``[min_length, max_length]`` (the last segment cut to fit). Names are
    ``q0``, ``q1``, ...
    """
    n_queries = _check_int("n_queries", n_queries, 1)
    seed = _check_int("seed", seed, 0)
    min_length = _check_int("min_length", min_length, 1)
    max_length = _check_int("max_length", max_length, min_length)
    n_segments = _check_int("n_segments", n_segments, 1)
    items = item_names(n_items)
    rng = np.random.default_rng(seed)
    pool = [tuple(rng.choice(len(items), size=int(rng.integers(2, 5)), replace=False).tolist())
            for _ in range(n_segments)]
    seen: set[tuple[int, ...]] = set()
    out: dict[str, str] = {}
    tries = 0
    while len(out) < n_queries:
        tries += 1
        if tries > 1000 * n_queries:
            raise ValueError(f"n_queries={n_queries} distinct queries cannot be drawn from {n_segments} segments "
                             f"of lengths {min_length}-{max_length}; use more segments or fewer queries")
        length = int(rng.integers(min_length, max_length + 1))
        seq: list[int] = []
        while len(seq) < length:
            seq += pool[int(rng.integers(len(pool)))]
        key = tuple(seq[:length])
        if key in seen:
            continue
        seen.add(key)
        pattern = ", ".join(items[i] for i in key)
        out[f"q{len(out)}"] = (f"RETURN customer, COUNT(*) PATTERN SEQ({pattern}) GROUP-BY customer "
                               f"WITHIN {within} SLIDE {slide}")
    return out


def ecommerce_stream(*, n_events: int, seed: int = 0, n_items: int = 50, n_customers: int = 20,
                     distribution: str = "uniform") -> pl.DataFrame:
    """Purchases of ``n_customers`` customers over the ``n_items`` item types (``type``, ``time``,
    ``customer``, ``price``); ``distribution`` is the item popularity: ``"uniform"`` or ``"zipf"``."""
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution must be one of {', '.join(DISTRIBUTIONS)}, got {distribution!r}")
    items = item_names(n_items)
    weights = None if distribution == "uniform" else 1.0 / np.arange(1, len(items) + 1)
    return purchases(n_events=n_events, seed=seed, n_customers=n_customers, items=items, weights=weights)
