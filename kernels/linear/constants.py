"""Constants of the linear-map kernels: window modes, error codes, program flags, fast-loop states."""

from __future__ import annotations


MODE_NONE = 0  # no window: one result per partition at the end
MODE_WITHIN = 1  # WITHIN w: running total of matches with last - first < w
MODE_EMIT = 2  # WITHIN w EMIT CHANGES: result at given times t over (t - w, t]
MODE_SLIDE = 3  # WITHIN w SLIDE s: result per window [k s, k s + w)
MODE_EMIT_UNBOUNDED = 4  # EMIT CHANGES without WITHIN
# EMIT CHANGES without WITHIN where a group holds several partitions (sums, not MIN / MAX): a partition's
# row at an emit time only when its running totals changed since its last row of the call (and at the
# call's first emit time); the caller carries each partition's last row forward
MODE_EMIT_CHANGED = 5

ERR_OVERFLOW = 1

# program flags (PT[PT[p]])
F_LEFT = 1  # a one-event group may be applied in place, triplets in order
F_RIGHT = 2  # the transposed map may be applied in place, triplets in reverse order
F_END = 4  # the program binds the pattern's END occurrence
F_DELTA = 8  # WITHIN: the output rows change by sum(coef * x[src]) over the END triplets
F_FAST = 16  # F_LEFT and F_RIGHT: the fast loops may run it
F_FASTW = 32  # F_FAST, and F_DELTA if F_END: the WITHIN fast loop may run it
F_TIE = 64  # two events of this program with one time stamp may run one after the other
# F_FASTW, no reset and no self-loop: the map is I + N with N strictly off the diagonal, N >= 0 when the
# event's weights are (coefficients 1, or weights >= 0), whose inverse the WITHIN, EMIT CHANGES and SLIDE
# loops apply to take an event out of the window (``windows._within_inverse``)
F_INV = 128
TIE_SHIFT = 8  # flags >> TIE_SHIFT: the program's tie rank (0: never in place in a tie)
HDR = 4  # header words per program: flags, n_trip, n_reset, n_end


# fast-loop results (see the comment on the fast loops in ``windows.py``)
ST_OK = 0
ST_SLOW = 1
ST_GROW_U = 2
ST_GROW_OUT = 3
ST_OVERFLOW = 4
