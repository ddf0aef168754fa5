"""Errors of the Python workers back on the driver as cepvec errors: :func:`spark_errors`.

A cepvec error raised in a Spark task reaches the driver wrapped: PySpark
raises ``pyspark.errors.PythonException`` (``Py4JJavaError`` for RDD actions)
whose text holds the worker's traceback, ending in
``cepvec.errors.<Class>: <message>``, possibly followed by the JVM stack trace.
Nothing in Spark keeps the exception object, so the class and message are
read back from that text.
"""

from __future__ import annotations

import contextlib
import re
import sys

from cepvec import errors as E

_CEPVEC = re.compile(r"^cepvec\.errors\.(\w+): ", re.M)
# what follows the worker's traceback: Spark's SQLSTATE, PySpark's JVM stack trace, Java frames
_TAIL = re.compile(r"\n\s*SQLSTATE: |\n\s*JVM stacktrace:|\n\tat |\n\s+at org\.apache\.|\n\s*Driver stacktrace:")
# a later exception in the same traceback (the cepvec error was not the last one raised)
_LATER = re.compile(r"^(Traceback \(most recent call last\)|During handling of the above exception|"
                    r"The above exception was the direct cause)", re.M)
_NO_MODULE = re.compile(r"^ModuleNotFoundError: No module named '(cepvec|numba|numpy|polars|pyarrow)[\w.]*'", re.M)


def _spark_text(exc: BaseException) -> str:
    # PySpark's captured exceptions keep the worker's text in _desc; str() may append the JVM stack trace
    desc = getattr(exc, "_desc", None)
    return desc if isinstance(desc, str) and desc else str(exc)


def cepvec_error(exc: BaseException) -> E.CepvecError | None:
    """The cepvec error that a Spark exception carries from a Python worker, or None.

    The error has the worker's class (``CepvecDataError``, ``CepvecPlanError``, ...)
    and message, and the Spark exception as ``spark_exception``. A worker that
    cannot import cepvec or its dependencies gives a :class:`CepvecPlanError`
    that says to set ``PYSPARK_PYTHON``.
    """
    module = type(exc).__module__
    if not (module.startswith("pyspark") or module.startswith("py4j")):
        return None
    text = _spark_text(exc)
    found = list(_CEPVEC.finditer(text))
    err: E.CepvecError | None = None
    if found:
        last = found[-1]
        message = _TAIL.split(text[last.end():], maxsplit=1)[0].rstrip()
        if _LATER.search(message):  # another exception was raised after the cepvec one
            return None
        cls = getattr(E, last.group(1), None)
        if not (isinstance(cls, type) and issubclass(cls, E.CepvecError)):
            cls = E.CepvecError
        try:
            err = cls(message)
        except TypeError:  # CepvecSyntaxError wants the query text and position
            err = E.CepvecQueryError(message)
    else:
        missing = _NO_MODULE.search(text)
        if missing is None:
            return None
        err = E.CepvecPlanError(
            f"the Spark Python workers cannot import {missing.group(1)!r}: they run another Python than the driver "
            f"({sys.executable}). Set PYSPARK_PYTHON to the driver's Python (os.environ['PYSPARK_PYTHON'] = "
            "sys.executable before the SparkSession is created, or spark.pyspark.python), or install "
            "'cepvec[spark]' into the workers' Python (docs/spark.md, Running on a cluster)")
    err.spark_exception = exc
    return err


@contextlib.contextmanager
def spark_errors():
    """Re-raise a cepvec error from a Spark worker as that cepvec error, on the driver.

    Wrap the Spark action (``collect``, ``toPandas``, ``write``, ``count``, ...)
    of a cepvec pipeline; also usable as a decorator. Other exceptions pass
    unchanged. The Spark exception stays available as ``spark_exception``.

    Examples
    --------
    >>> with cepvec.spark_errors():  # doctest: +SKIP
    ...     rows = cepvec.partition(q, df).mapInArrow(k, k.schema).collect()
    """
    try:
        yield
    except Exception as exc:
        err = cepvec_error(exc)
        if err is None:
            raise
        raise err from None
