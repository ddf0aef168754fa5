"""The C allocator's settings for large arrays (glibc).

cepvec's paths allocate arrays of one value per event (8 MB per million int64
values) for every batch or piece, and free them after it. glibc serves such
blocks with ``mmap`` and returns them to the system on ``free``, so every new
array page-faults on its first touch: measured as 15% of the CPU time of a
trend query with 10^6 events (68 ms of 495 ms in the kernel, ``sys`` time),
and serial where the threads wait on each other. :func:`tune_allocator` keeps
blocks up to 32 MiB (glibc's upper limit for the threshold) in the heap and
keeps up to 256 MiB of freed memory there for the next batch instead of
returning it.

It is process-wide, so it applies only where the process has not chosen:
not when a ``MALLOC_*`` variable is set (glibc reads those at start-up), and
not with ``CEPVEC_MALLOC=system``. ``import cepvec`` calls it once; other
C libraries (Polars and Arrow bring their own allocators) are unaffected.
"""

from __future__ import annotations

import ctypes
import os
import sys

#: mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's maximum on 64-bit
TRIM_THRESHOLD = 256 << 20
#: what tune_allocator did: None (not called yet), "tuned", or why not
STATE: list[str | None] = [None]


def tune_allocator() -> str:
    """Set glibc's mmap and trim thresholds (see the module docstring); returns ``"tuned"`` or why
    not (a message, nothing raised)."""
    if os.environ.get("CEPVEC_MALLOC", "").lower() == "system":
        why = "CEPVEC_MALLOC=system"
    elif any(k.startswith("MALLOC_") for k in os.environ):
        why = "MALLOC_* set in the environment"
    elif not sys.platform.startswith("linux"):
        why = f"not glibc ({sys.platform})"
    else:
        try:
            libc = ctypes.CDLL("libc.so.6")
            ok = libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and \
                libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
            why = "tuned" if ok else "mallopt refused"
        except (OSError, AttributeError):  # no glibc (musl, ...)
            why = "not glibc"
    STATE[0] = why
    return why
