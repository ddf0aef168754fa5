"""Trend aggregation by linear maps over a sliding-window aggregator.

Reference: A-Seq (prefix counters), GRETA (Theorems 4.3 and 9.1: counts and
linear aggregates propagate along template transitions). See
``docs/algorithms.md`` for the derivation.

Without edge predicates, everything a new event needs from the past is a
small vector of per-state totals: for every template state the number of
partial matches ending in it (and their linear aggregates), a copy of the
totals that a negation may invalidate, and the final totals. An event (or a
group of events with the same time stamp) changes that vector by one affine
map ``x -> M x``; ``M = P + E`` where ``P`` zeroes the rows a negation resets
and ``E`` adds, from the *pre*-state, the contributions of new partial
matches (events with equal time never see each other).

Windows need the composition of the maps of the events inside the window,
applied to the initial vector ``v0``. A two-stack queue (back stack: one
running composite ``B``; front stack: suffix results ``u_i``) gives it in
amortised O(nnz * D) per event and O(D^2) per query, whatever the window
length: no per-window or per-START-event state. Counts and integer sums of weights >= 0 without
negation under WITHIN (SLIDE, EMIT CHANGES) keep the window's map itself instead, and take an event out
of it by its inverse (``windows._within_inverse``; docs/algorithms.md section 2).

All arrays are C-contiguous NumPy arrays; state is int64 (exact, with
overflow detection) or float64. Invariants: within a segment events are
sorted by time; segments are partitions; the kernels are ``nogil`` and a
call only writes the ``X_state`` / ``next_k`` rows of its own segments, so
disjoint sets of segments may run in parallel threads.

Modules, by role:

* ``constants.py``: window modes (``MODE_*``), ``ERR_OVERFLOW``, program flags (``F_*``,
  ``HDR``) and fast-loop states (``ST_*``);
* ``arith.py``: int64 (checked) / float64 / order-semiring arithmetic, ``@overload`` stubs;
* ``apply.py``: applying programs to a state (rows, dots, in place or generic);
* ``windows.py``: per-mode fast loops (WITHIN, EMIT, SLIDE, vector) and their drivers;
* ``chain.py``: the WITHIN count of a plain sequence with the window's map in registers (a driver
  per sequence length);
* ``run.py``: :func:`run_segments` (the entry point) and the general loop ``_run_general``;
* ``programs.py``: the program table (:func:`pack_programs`);
* ``encode.py``: input preparation (events, carried state, emit schedules, ranks, string
  views, dense ids, program ids).

This package re-exports the public names of the former single module ``linear.py``
(``from cepvec.kernels import linear as K; K.run_segments``); the private helpers live in
their modules. ``arith`` is imported first so that its ``@overload`` registrations exist
before any kernel that calls them compiles."""

from __future__ import annotations

from . import arith  # first: registers the @overload stubs (each module imports what it calls anyway)
from .constants import (ERR_OVERFLOW, F_DELTA, F_END, F_FAST, F_FASTW, F_INV, F_LEFT, F_RIGHT, F_TIE, HDR, MODE_EMIT,
                        MODE_EMIT_CHANGED, MODE_EMIT_UNBOUNDED, MODE_NONE, MODE_SLIDE, MODE_WITHIN, ST_GROW_OUT,
                        ST_GROW_U, ST_OK, ST_OVERFLOW, ST_SLOW, TIE_SHIFT)
from .encode import (carry_index, combine_bits, count_events, emit_schedule,
                     encode_programs, fill_carry, fill_events, lut_codes_count, order_long_ties, order_ties,
                     rank_histogram, rank_place, rank_scatter, segment_emit_schedule, segment_layout,
                     segment_layout_numpy, fill_events_numpy, view_codes, view_codes_count, view_hash,
                     view_words)
from .programs import pack_programs, tie_ranks
from .run import chain_within, run_segments
