"""The one place that sets Numba JIT options for cepvec kernels.

``cache=True`` so Spark Python workers and repeated runs load compiled code
from ``NUMBA_CACHE_DIR`` instead of compiling again; ``nogil`` so callers may
run kernels in threads. No ``fastmath``: NaN, null and overflow behaviour is
semantics.
"""

from __future__ import annotations

import numba

jit = numba.njit(cache=True, nogil=True)

# Small helpers called in inner loops: marked ``alwaysinline`` for LLVM. A call
# that is not inlined passes every array argument with reference-count updates,
# which measured 60-100 ns per call with 5-8 arrays (several times the work
# itself). LLVM-level inlining costs little compile time, unlike Numba's
# IR-level ``inline="always"`` (35 s on the kernels); keep these helpers small.
jit_inline = numba.njit(cache=True, nogil=True, forceinline=True)

#: Below this many elements, small helper steps (a minimum and maximum, ordering ties or output rows)
#: run in NumPy instead of their Numba kernels: as fast at that size, and a first run on a cold cache
#: does not compile them. Tests set it to 0 to run the kernels on small inputs too.
NUMPY_BELOW = 1 << 14
