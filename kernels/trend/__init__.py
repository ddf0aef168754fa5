"""Trend aggregation with edge predicates: GRETA per-event propagation.

Reference: GRETA (Theorems 4.3 and 9.1, Sections 6 and 9). See
``docs/algorithms.md`` section 4 for the derivation.

With an edge predicate such as ``S.price > NEXT(S).price`` the predecessors
of an event depend on the event, so per-state running totals (the linear-map
engine) no longer suffice. Every event ``e`` bound to occurrence ``o`` gets
a value row (count, then one column per linear aggregate component)::

    count(e as o) = [o starts the pattern] + sum over transitions p -> o of
                    sum of count(x) over earlier events x bound to p whose
                    edge predicate with e holds
    agg_j(e as o) = same sums of agg_j(x) + count(e as o) * w_j(e)

and a match total is the sum over END events. Each transition keeps a
*structure* of the rows of its source events:

* ``K_SUM``: no edge predicate, a running sum;
* ``K_LT``/``K_LE``/``K_GT``/``K_GE``: ``key(x) op thr(e)`` with ``key`` an
  expression of the predecessor and ``thr`` one of the successor: a Fenwick
  tree over the ranks of the keys (prefix sums; ``>``/``>=`` use reversed
  ranks so that they are prefix sums as well): O(log n) per event. The
  ranks and the thresholds' positions are found when the key space is built
  (sorted with their events), not searched per event (:func:`_run_segments`);
* ``K_EQ``: ``key(x) = thr(e)``: one cell per distinct key.

Keys and thresholds arrive as int64 (floats in an order-preserving int64
encoding), so every comparison is exact and NaN/null never gets here
(``ev_kok``/``ev_tok`` flag valid values).

Windows (``MODE_SLIDE``, GRETA Section 6 "sub-graph sharing"): every
structure, running sum and final total is kept per open window, in a ring of
``W`` slots (window ``k`` uses slot ``k % W``); an event falls into the
windows ``k`` with ``k s <= t < k s + w`` and is queried and inserted once
per such window; a Fenwick node holds one value per ring slot, so one tree
walk serves every open window. Nothing is cleared eagerly: a node is tagged
with its structure's reset generation and the newest window it was written
for (see :func:`_run_segments`). A window's totals are emitted when the first
event at or after ``k s + w`` arrives (or at ``limit``) and the slot is
reused. The key space is rebuilt per epoch of a few hundred events (the
events still inside an open window are replayed), so trees stay as small as
the windows.

Negation (single-event negative sub-patterns): an event of a negated type
resets, after the same-time queries and before the same-time insertions,
the structures of the transitions it guards (middle), the ``NOSTART`` flag
(negated start) or the final totals (negated end), in every open window.

All arrays are C-contiguous NumPy arrays. Value rows are split in two: the
"main" row (count, then the components held in the main dtype: int64 with
overflow detection or float64) and a float64 row (float sums when counts are
exact).

Performance note: the per-event code (:func:`_epoch`) takes no array views,
rebinds no array and calls no function with array arguments (but its row
helper, which LLVM inlines, on arrays its caller borrowed); inside a kernel
this large, Numba then emits atomic reference counting per event, which cost
up to 80% of the run time. :func:`_run_segments` calls :func:`_epoch` once per
epoch (once per partition for small ones) with its some 40 arrays borrowed
(``kernels/_jit.py::borrow``): counted, they cost 1.4 µs a call, a third of
the time with 10^5 small partitions. Writing :func:`_epoch` into
:func:`_run_segments` saves as much, but compiles 4 s longer.

Modules, by role:

* ``constants.py``: window modes (``MODE_*``), structure kinds (``K_*``), error codes
  (``ERR_*``) and the int64 bounds;
* ``arith.py``: checked int64 addition and multiplication;
* ``keys.py``: key spaces (:func:`sort_keys` with a payload, :func:`small_sort`, ``_position``
  and ``_lower``),
  :func:`float_order_key`,
  :func:`partition_order`;
* ``epoch.py``: :func:`_epoch`, the per-event loop;
* ``run.py``: :func:`run_segments_slide` and :func:`run_segments_none`, the entry points (one source,
  ``_run_segments``, compiled per window mode; its buffers sized once, before the segment loop).

This package re-exports the public names of the former single module ``trend.py``
(``from cepvec.kernels import trend as K; K.run_segments_slide``).
"""

from __future__ import annotations

from .constants import END, ERR_INTERNAL, ERR_MEMORY, ERR_OVERFLOW, K_EQ, K_GE, K_GT, K_LE, K_LT, K_SUM, MODE_NONE, MODE_SLIDE
from .keys import float_order_key, partition_order, sort_keys
from .run import run_segments_none, run_segments_slide
