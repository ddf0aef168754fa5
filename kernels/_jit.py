"""The one place that sets Numba JIT options for cepvec kernels.

``cache=True`` so Spark Python workers and repeated runs load compiled code
from ``NUMBA_CACHE_DIR`` instead of compiling again; ``nogil`` so callers may
run kernels in threads. No ``fastmath``: NaN, null and overflow behaviour is
semantics.
"""

from __future__ import annotations

import numba
import numba.extending
import numba.core.cgutils

jit = numba.njit(cache=True, nogil=True)


def readonly(a):
    """``a`` as a read-only view (no copy).

    Numba compiles one specialisation per read-only flag of every array argument, and inputs arrive
    both ways: read-only from Arrow and Polars (zero-copy), writable from NumPy. The callers of the
    kernels that met both pass their inputs through this, so one specialisation serves both (the
    shared executor's kernel compiles in about 4 s; ``fill_events`` had 20 specialisations).
    """
    v = a.view()
    v.flags.writeable = False
    return v

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


@numba.extending.intrinsic
def borrow(typingctx, arr):
    """``arr`` without its reference count: the same data, shape and strides, no owner (null meminfo).

    A call of a jitted function increments and decrements the (atomic) reference count of every array
    it passes; with some 40 arrays that is about 1.4 µs a call, a third of the trend kernel's time with
    10^5 small partitions (one call per partition). Arrays passed through ``borrow`` skip both (the
    runtime's increment and decrement return at once on a null owner). Only for calls the caller
    outlives, of arrays the callee neither keeps nor rebinds.
    """
    if not isinstance(arr, numba.types.Array):
        return None

    def codegen(context, builder, sig, args):
        src = context.make_array(sig.args[0])(context, builder, value=args[0])
        dst = context.make_array(sig.return_type)(context, builder)
        for name in ("nitems", "itemsize", "data", "shape", "strides"):
            setattr(dst, name, getattr(src, name))
        dst.meminfo = numba.core.cgutils.get_null_value(dst.meminfo.type)
        dst.parent = numba.core.cgutils.get_null_value(dst.parent.type)
        return dst._getvalue()

    return arr(arr), codegen
