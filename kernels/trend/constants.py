"""Constants of the GRETA trend kernels: window modes, structure kinds, error codes, int64 bounds."""

from __future__ import annotations


MODE_NONE = 0  # no window: state carried across calls as rows (see _run_segments)
MODE_SLIDE = 3  # WITHIN w SLIDE s
#: ``limit`` of the last call of a stream: every window closes; MODE_NONE returns only the totals
#: (no state rows per key: nothing follows)
END = 9223372036854775807 // 4

K_SUM = 0
K_LT = 1  # key(prev) <  thr(next)
K_LE = 2
K_GT = 3
K_GE = 4
K_EQ = 5

ERR_OVERFLOW = 1
ERR_MEMORY = 2  # the per-window trees of an epoch would exceed max_cells (err[1] partition, err[2] cells)
ERR_INTERNAL = 3  # a buffer sized before the segment loop is too small (a bug: err[1] partition, err[2] rows)

_I64_MAX = 9223372036854775807
_I64_MIN = -9223372036854775807 - 1
