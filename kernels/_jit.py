"""The one place that sets Numba JIT options for cepvec kernels.

``cache=True`` so Spark Python workers and repeated runs load compiled code
from ``NUMBA_CACHE_DIR`` instead of compiling again; ``nogil`` so callers may
run kernels in threads. No ``fastmath``: NaN, null and overflow behaviour is
semantics.
"""

from __future__ import annotations

import numba

jit = numba.njit(cache=True, nogil=True)

# Helpers called in inner loops: inlined at Numba IR level. An ordinary call
# between jitted functions passes every array argument with reference-count
# updates, which measured ~250 ns per call with 17 arrays (5x the work itself).
jit_inline = numba.njit(cache=True, nogil=True, inline="always")
