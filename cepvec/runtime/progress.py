"""Long runs speak: progress bars and the reference engine's explosion warning.

A progress bar (tqdm) appears on standard error when a run lasts longer
than :data:`BAR_DELAY` seconds and standard error is a terminal; never in a
Spark task. ``CEPVEC_PROGRESS=0`` turns it off, ``CEPVEC_PROGRESS=1`` on
(even when standard error is not a terminal). See docs/semantics.md, Part II
("Long runs").
"""

from __future__ import annotations

import os
import sys
import warnings

from cepvec.errors import CepvecWarning

BAR_DELAY = 1.0  # seconds before a bar is drawn: short runs print nothing
# matches the reference engine builds in about ten seconds (measured ~10 us per match, see
# docs/semantics.md Part II); more than this is worth a warning before the run starts
EXPLODE_MATCHES = 1_000_000
#: The match count online counting reports when the count does not fit in an int64 (the kernels count in int64)
MATCHES_PAST_INT64 = 1 << 63


def on_spark_worker() -> bool:
    """True inside a Spark task (its Python worker), where nobody watches standard error."""
    if "pyspark" not in sys.modules:
        return False
    from pyspark import TaskContext  # noqa: PLC0415  (optional dependency, already imported)

    return TaskContext.get() is not None


def bar_enabled() -> bool:
    """Whether progress bars are drawn here (``CEPVEC_PROGRESS``, terminal, not a Spark task)."""
    flag = os.environ.get("CEPVEC_PROGRESS", "").strip().lower()
    if flag in ("0", "false", "no", "off"):
        return False
    if on_spark_worker():
        return False
    if flag in ("1", "true", "yes", "on"):
        return True
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def warn_user(message: str) -> None:
    """A :class:`CepvecWarning` attributed to the first frame outside cepvec (the user's call)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the cepvec package folder
    frame, level = sys._getframe(1), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, CepvecWarning, stacklevel=level)


class Progress:
    """Counts work units of a long run; draws a bar when :func:`bar_enabled`; warns past a limit.

    Parameters
    ----------
    desc : str
        What is counted, shown before the bar.
    unit : str
        Name of one unit ("match", "event").
    total : int or None
        Expected units, when known (a bar with a percentage), else a running count.
    warn_after : int or None
        Issue ``warn_message`` (with the count so far) once the count passes this.
    warn_message : str
        ``{n}`` is replaced by the count so far.
    """

    def __init__(self, desc: str, unit: str, total: int | None = None, *, warn_after: int | None = None,
                 warn_message: str = ""):
        self.n = 0
        self._warn_after = warn_after
        self._warn_message = warn_message
        self._bar = None
        if bar_enabled():
            from tqdm import tqdm  # noqa: PLC0415  (only when a bar is drawn)

            self._bar = tqdm(desc=desc, unit=unit, total=total, delay=BAR_DELAY, file=sys.stderr,
                             unit_scale=True, leave=False, dynamic_ncols=True)

    def update(self, k: int) -> None:
        """Add ``k`` units."""
        self.n += k
        if self._bar is not None:
            self._bar.update(k)
        if self._warn_after is not None and self.n > self._warn_after:
            self._warn_after = None
            warn_user(self._warn_message.format(n=f"{self.n:,}"))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
