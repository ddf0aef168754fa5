"""Many aggregation queries over one stream: the workload, its sharing plan and the shared run.

* :mod:`.workload`: :func:`compile_workload` turns named query texts into a
  :class:`Workload` (the compiled queries, the sharing plan, ``explain``);
* :mod:`.optimizer`: Sharon's optimizer (sharable patterns and candidates, the
  cost model and benefit, conflicts and the Sharon graph, GWMIN pruning, the
  plan finder, and an exhaustive optimizer that is the tests' oracle);
* :mod:`.executor`: the shared executor (A-Seq prefix sharing on per-window
  prefix counters, :mod:`cepvec.kernels.sharing`);
* :mod:`.run`: :func:`run_many`, one prepared input, one pass over its
  batches for every query.

See ``docs/sharing.md``.
"""

from cepvec.sharing.run import run_many
from cepvec.sharing.workload import Workload, compile_workload

__all__ = ["run_many", "compile_workload", "Workload"]
