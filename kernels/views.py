"""Reading Arrow string views (``string_view``, Polars' String layout) in kernels.

A view is two uint64 words: the low 32 bits of the first hold the length; a string of up to
12 bytes follows inline (the rest of the first word, then the second), a longer one keeps its
first 4 bytes there and its buffer index (low 32 bits) and offset (high 32 bits) in the second.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import intrinsic

#: the bits of an inline view's words that hold its length and string, by length (index 13:
#: longer than 12 bytes, the length field only). Bytes past the length should be zero; they are
#: masked anyway.
VIEW_LO_MASK = np.array([(1 << (32 + 8 * n)) - 1 for n in range(4)] + [(1 << 64) - 1] * 9 + [0xFFFFFFFF],
                        np.uint64)
VIEW_HI_MASK = np.array([0] * 5 + [(1 << (8 * (n - 4))) - 1 for n in range(5, 13)] + [0], np.uint64)


@intrinsic
def byte_at(typingctx, addr):
    """The byte at memory address ``addr`` (int64): a data buffer of long strings is read in
    place from its address (the caller keeps the buffer alive during the call)."""
    sig = types.uint8(types.int64)

    def codegen(context, builder, signature, args):
        ptr = builder.inttoptr(args[0], context.get_value_type(types.CPointer(types.uint8)))
        return builder.load(ptr)

    return sig, codegen


@intrinsic
def word_at(typingctx, addr):
    """The 8 bytes at memory address ``addr`` (int64, any alignment) as a little-endian uint64:
    :func:`byte_at` a word at a time (the caller reads only inside the string)."""
    sig = types.uint64(types.int64)

    def codegen(context, builder, signature, args):
        ptr = builder.inttoptr(args[0], context.get_value_type(types.CPointer(types.uint64)))
        return builder.load(ptr, align=1)

    return sig, codegen
