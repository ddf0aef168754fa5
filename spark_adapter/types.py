"""Spark <-> Arrow schema conversion (needs pyspark)."""

from __future__ import annotations

import pyarrow as pa


def spark_to_arrow_schema(struct) -> pa.Schema:
    """pyarrow schema of a Spark StructType (timestamps as microseconds, UTC)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(struct, timezone="UTC")
