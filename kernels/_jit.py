"""The one place that sets Numba JIT options for cepvec kernels.

``cache=True`` so Spark Python workers and repeated runs load compiled code
from ``NUMBA_CACHE_DIR`` instead of compiling again; ``nogil`` so callers may
run kernels in threads. No ``fastmath``: NaN, null and overflow behaviour is
semantics.
"""

from __future__ import annotations

import functools
import importlib
import inspect

import numba
import numba.core.cgutils
import numba.extending
import numpy as np

jit = numba.njit(cache=True, nogil=True)


def readonly(a):
    """``a`` as a read-only view (no copy); see :func:`jit_reading`."""
    v = a.view()
    v.flags.writeable = False
    return v


class _Reading:
    """A kernel called from Python whose array arguments ``names`` are inputs: each call passes them
    as read-only views. Everything else (``compile``, ``py_func``, ``signatures``) is the dispatcher's."""

    def __init__(self, dispatcher, names: tuple[str, ...]):
        params = list(inspect.signature(dispatcher.py_func).parameters)
        unknown = [n for n in names if n not in params]
        if unknown:
            raise TypeError(f"jit_reading: {dispatcher.py_func.__qualname__} has no parameter {unknown[0]!r}")
        self._dispatcher = dispatcher
        self._positions = frozenset(params.index(n) for n in names)
        self._names = frozenset(names)
        functools.update_wrapper(self, dispatcher.py_func)

    def __call__(self, *args, **kwargs):
        args = [readonly(a) if i in self._positions and isinstance(a, np.ndarray) else a for i, a in enumerate(args)]
        for n in self._names & kwargs.keys():
            if isinstance(kwargs[n], np.ndarray):
                kwargs[n] = readonly(kwargs[n])
        return self._dispatcher(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._dispatcher, name)

    def __reduce__(self):  # by reference, like a module-level function
        return _kernel_named, (self.__module__, self.__qualname__)


def _kernel_named(module: str, qualname: str):
    return getattr(importlib.import_module(module), qualname)


def jit_reading(*names: str):
    """:data:`jit` for a kernel called from Python, with the array arguments ``names`` as its inputs.

    Numba compiles one specialisation per read-only flag of every array argument, and inputs arrive
    both ways: read-only from Arrow and Polars (zero-copy), writable from NumPy. Each call passes
    these as read-only views (no copy), so one specialisation serves both (the shared executor's
    kernel compiles in about 4 s; ``fill_events`` had 20 specialisations). Only for arguments the
    kernel never writes (Numba refuses to compile a write to a read-only array), and only for kernels
    that no other kernel calls (jitted code cannot call the wrapper).
    """
    return lambda fn: _Reading(jit(fn), names)

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
