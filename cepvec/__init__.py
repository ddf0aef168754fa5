"""cepvec: complex event processing aggregation without building matches.

Public API
----------
compile(text) -> Query            parse and compile a query
run(query, events) -> DataFrame   evaluate it over a Polars / Arrow / pandas table
matches(query, events)            the matches themselves (match engine, docs/matching.md)
iter_matches(query, events)       the same as an iterator of frames (bounded memory)
kernel(query, schema)             a function for Spark's df.mapInArrow
partition(query, spark_df)        lay out a Spark DataFrame for that function
spark_errors()                    Spark worker errors back as cepvec errors
run_many(queries, events)         many queries in one pass, sharing sub-patterns (docs/sharing.md)
workload(queries)                 a compiled workload: its sharing plan and explain()
stream(query, streaming_df)       a continuous query on Spark Structured Streaming

See ``docs/language.md`` for the query language and ``docs/semantics.md``
for what a query means.
"""

from cepvec.api import (compile, iter_matches, kernel, matches, partition, run, run_many, spark_errors, stream,
                        workload)
from cepvec.errors import (CepvecDataError, CepvecError, CepvecOverflowError, CepvecPlanError,
                     CepvecQueryError, CepvecSyntaxError, CepvecTypeError, CepvecWarning,
                     NotSupportedError, UnsupportedByEngine)
from cepvec.plan.ir import Query

from cepvec._version import __version__  # noqa: F401  (re-exported)
from cepvec.runtime.memory import tune_allocator as _tune_allocator
from cepvec.explain import explain as _explain
from cepvec.plan import ir as _ir

_ir.EXPLAINER[0] = _explain  # Query.explain() (the plan layer does not import the layers above it)
_tune_allocator()  # large arrays stay in the heap between batches (cepvec/runtime/memory.py)

__all__ = [
    "compile", "run", "matches", "iter_matches", "kernel", "partition", "spark_errors", "Query", "run_many",
    "workload", "stream",
    "CepvecError", "CepvecSyntaxError", "CepvecQueryError", "NotSupportedError",
    "CepvecPlanError", "CepvecTypeError", "CepvecDataError", "CepvecOverflowError",
    "UnsupportedByEngine", "CepvecWarning",
]
