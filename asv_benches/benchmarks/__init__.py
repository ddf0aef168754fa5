"""Shared helpers for the cepvec asv benchmarks (layout after xarray's ``asv_bench``).

* :func:`parameterized` attaches asv ``params``/``param_names`` to one method;
* :func:`make_events` builds seeded synthetic inputs through
  :mod:`cepvec.generators` (same arguments -> same frame);
* :func:`requires_spark` raises ``NotImplementedError``, which asv reports
  as a skipped benchmark, when pyspark (or Java) is not available.

Run from this directory::

    asv machine --yes
    asv run --quick -E existing --show-stderr
"""

from __future__ import annotations

import functools
import os

import polars as pl

from cepvec import generators

#: Seed of every generated input; change it and results stop being comparable.
SEED = 0

#: Set to skip the 1e7-event sizes (STYLE.md section 7).
SKIP_SLOW = bool(os.environ.get("ASV_SKIP_SLOW"))


def parameterized(names, values):
    """Attach asv parameters to a benchmark method.

    Parameters
    ----------
    names : list of str
        ``param_names``, one per parameter.
    values : list of list
        ``params``, the values of each parameter (strings or ints).

    Examples
    --------
    >>> @parameterized(["n"], [[200, 1000]])
    ... def time_x(self, n):
    ...     pass
    >>> time_x.param_names, time_x.params
    (['n'], [[200, 1000]])
    """

    def decorator(func):
        func.param_names = names
        func.params = values
        return func

    return decorator


@functools.lru_cache(maxsize=32)
def make_events(workload: str, n_events: int, **knobs) -> pl.DataFrame:
    """Seeded synthetic events of ``workload`` (a key of ``cepvec.generators.WORKLOADS``)."""
    return generators.WORKLOADS[workload](n_events=n_events, seed=SEED, **knobs)


def requires_spark() -> None:
    """Raise ``NotImplementedError`` (asv: skip) unless pyspark and Java are available."""
    import shutil

    try:
        import pyspark  # noqa: F401
    except ImportError as exc:
        raise NotImplementedError("pyspark is not installed: pip install -e '.[spark]'") from exc
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise NotImplementedError("Spark needs Java 17: no java on PATH and JAVA_HOME unset")
