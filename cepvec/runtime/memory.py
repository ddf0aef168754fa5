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

from cepvec.errors import CepvecPlanError

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


def physical_memory() -> int:
    """Bytes of memory of this machine (8 GiB where the system does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover (not POSIX)
        return 8 << 30


#: bytes of EMIT CHANGES rows that one kernel call may write before :func:`check_emit_rows` refuses
#: (an eighth of the machine's memory: the rows are copied twice on their way to the frame;
#: ``CEPVEC_EMIT_ROWS_BYTES`` overrides it)
EMIT_ROWS_BUDGET = int(os.environ.get("CEPVEC_EMIT_ROWS_BYTES", 0)) or physical_memory() // 8


def check_emit_rows(q, rows: int, row_bytes: int, partitions: int) -> None:
    """EMIT CHANGES without WITHIN where a group holds several partitions (``[id]`` finer than
    GROUP-BY): the linear and scan kernels write a row per partition and END time of its group (a
    partition's matches count at every later END time), so rows grow with partitions x END times. A
    :class:`~cepvec.errors.CepvecPlanError` that says so, and what avoids it, when they would take
    more than :data:`EMIT_ROWS_BUDGET` (before, the allocation failed or the process was killed)."""
    if rows * row_bytes <= EMIT_ROWS_BUDGET:
        return
    raise CepvecPlanError(
        f"query {' '.join(q.text.split())!r}: EMIT CHANGES without WITHIN gives each of {partitions:,} "
        f"partitions (equivalence keys finer than GROUP-BY) a row at every later END time of its group: "
        f"{rows:,} rows here, about {rows * row_bytes / 2**30:.1f} GiB, more than the {EMIT_ROWS_BUDGET / 2**30:.1f} "
        "GiB allowed (an eighth of this machine's memory; CEPVEC_EMIT_ROWS_BYTES sets it). Add WITHIN w (a "
        "partition then writes rows only within w of its events), or GROUP-BY the equivalence attributes "
        "(a row per partition and END time of its own)")


#: bytes of the copies of a batch's events that a qualified equivalence broadcasts (``paths/qualified.py``)
#: before :func:`check_broadcast_rows` refuses (an eighth of the machine's memory;
#: ``CEPVEC_BROADCAST_ROWS_BYTES`` overrides it)
BROADCAST_ROWS_BUDGET = int(os.environ.get("CEPVEC_BROADCAST_ROWS_BYTES", 0)) or physical_memory() // 8


def check_broadcast_rows(q, rows: int, row_bytes: int, keys: int) -> None:
    """A qualified equivalence (``[B.x]``) copies every event of the other variables into each partition
    of the keyed variable's values: rows grow with those events x the values. A
    :class:`~cepvec.errors.CepvecPlanError` that says so, and what avoids it, when the copies of a batch
    would take more than :data:`BROADCAST_ROWS_BUDGET` (before, Polars' allocation failed and the process
    aborted)."""
    if rows * row_bytes <= BROADCAST_ROWS_BUDGET:
        return
    raise CepvecPlanError(
        f"query {' '.join(q.text.split())!r}: its qualified equivalence copies each event of the other "
        f"variables into every partition of the keyed variable's values ({keys:,} of them): {rows:,} rows "
        f"here, about {rows * row_bytes / 2**30:.1f} GiB, more than the {BROADCAST_ROWS_BUDGET / 2**30:.1f} GiB "
        "allowed (an eighth of this machine's memory; CEPVEC_BROADCAST_ROWS_BYTES sets it). Add an unqualified "
        "equivalence attribute that the other events share (such as [B.x, segment]) so that each is copied "
        "only to the partitions of its own value, or run the query on shorter ranges of time")
