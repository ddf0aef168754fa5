"""Spark adapter of cepvec (installed as ``cepvec.spark_adapter``).

Imports flow one way: ``cepvec.spark_adapter`` -> ``cepvec`` -> ``cepvec.kernels``.
The adapter only partitions, sorts and calls :func:`cepvec.kernel` through
``mapInArrow``; it never re-implements semantics. See ``docs/spark.md``.
"""

from __future__ import annotations

from .errors import cepvec_error, spark_errors
from .run import partition, partition_plan, run_spark
from .stream import stream_spark

__all__ = ["run_spark", "partition", "partition_plan", "spark_errors", "cepvec_error", "stream_spark"]
