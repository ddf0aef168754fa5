"""The kernel specialisations the test suite compiles, recorded once, compiled beside the workers.

A fresh clone has an empty Numba cache, and the suite meets some 180 kernel
specialisations (value dtypes, read-only flags, Arrow and Polars inputs, the
Spark workers' calls). Compiled only as the tests meet them, the cores idle
while a worker waits on Spark's JVM, and fresh runs took 325-493 s here
against 234 s warm. ``tests/conftest.py`` starts compiling the recorded
specialisations beside the workers, in one process per two cores, longest first,
into the cache the workers load. Processes that share a cache compile a
kernel once (``kernels/_jit.py::_CompileOnce``): a worker that needs a
kernel being compiled waits for it, and one the record has not reached yet
it compiles itself (the background process then loads it).

The record is ``tests/fixtures/kernel_signatures.json``. It is only a cache
hint (processes that write one cache index at once can lose each other's
entries, so a record read from a cache may miss a few; the tests compile
those themselves): a stale entry (a kernel renamed, its arguments changed) is skipped with
a warning and the tests compile what they need themselves;
``tests/test_kernel_signatures.py`` fails when an entry no longer matches its
kernel. Regenerate it after changing kernel signatures::

    rm -rf kernels/__pycache__ kernels/*/__pycache__ && CEPVEC_TEST_PREWARM=0 .venv/bin/python -m pytest -q
    .venv/bin/python -m tests.kernel_signatures record

(the first command fills the in-tree cache with what the suite compiles, without
this pre-compiling, so no entry outlives the tests that needed it: slow, the
tests compile everything themselves; the second reads the cache's index files,
then times each specialisation on an empty cache in one process; both read
the in-tree cache, so leave ``NUMBA_CACHE_DIR`` unset).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import pickle
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from cepvec.warmup import compile_signatures, parse_signature  # noqa: F401 (parse_signature: the tests read records)

ROOT = Path(__file__).resolve().parent.parent
RECORD = Path(__file__).resolve().parent / "fixtures" / "kernel_signatures.json"


def read_cache(root: Path = ROOT) -> list[dict]:
    """The signatures in the in-tree Numba cache under ``root``, but those of an index written for an older
    source, and those with literal arguments (a helper's specialisation for a constant of its caller: it
    compiles with the caller)."""
    out = []
    for index in sorted((root / "kernels").glob("**/__pycache__/*.nbi")):
        stem = index.name.split("-")[0]  # "run.run_segments-28.py311.nbi"
        file, func = stem.split(".", 1)
        package = index.parent.parent.relative_to(root).parts  # ("kernels", "linear")
        module = ".".join(("cepvec",) + package + (file,))
        with open(index, "rb") as fh:
            pickle.load(fh)  # the Numba version
            stamp, overloads = pickle.loads(fh.read())
        source = index.parent.parent / f"{file}.py"
        st = source.stat()
        if stamp not in (hashlib.sha256(source.read_bytes()).digest(), (st.st_mtime, st.st_size)):
            continue  # written for an older source (the stamp: its hash, or its time and size): Numba ignores it
        for key in overloads:
            text = str(key[0])
            if "Literal" in text:
                continue
            out.append({"module": module, "kernel": func, "signature": text})
    return out


def schedule(entries: list[dict], processes: int) -> list[list[dict]]:
    """Longest recorded compile time first, each to the least loaded process."""
    loads = [0.0] * processes
    out: list[list[dict]] = [[] for _ in range(processes)]
    for e in sorted(entries, key=lambda e: -e.get("seconds", 1.0)):
        j = loads.index(min(loads))
        out[j].append(e)
        loads[j] += e.get("seconds", 1.0)
    return [o for o in out if o]


def compile_recorded(processes: int | None = None, record: Path = RECORD) -> list[str]:
    """Compile the recorded specialisations in ``processes`` processes (default: one per two cores, beside
    the one pytest-xdist worker per core); returns what failed (stale entries).

    Not one per core: on 2 cores the cores are busy throughout a cold run either way, and two compiling
    processes beside the two workers were no faster than one: 319 and 331 s against 293, 306 and 327 s
    (fresh-cache runs, docs/performance-log.md, session 43)."""
    entries = json.loads(record.read_text())["kernels"]
    if processes is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        processes = max(1, cores // 2)
    parts = schedule(entries, max(1, processes))
    with ProcessPoolExecutor(len(parts), mp_context=multiprocessing.get_context("spawn")) as pool:
        done = [f.result() for f in [pool.submit(compile_signatures, part) for part in parts]]
    return [r for rs in done for r in rs if isinstance(r, str)]


def main(argv: list[str]) -> int:
    if argv == ["compile"]:  # tests/conftest.py, beside the workers
        for err in compile_recorded():
            print(f"stale record entry (regenerate {RECORD.name}): {err}", file=sys.stderr)
        return 0
    if not argv or argv[0] != "record" or len(argv) > 2:
        print(__doc__)
        return 2
    entries = read_cache(Path(argv[1]) if len(argv) > 1 else ROOT)  # (another checkout's cache)
    with tempfile.TemporaryDirectory() as cache:  # time each one on an empty cache, in one fresh process
        os.environ["NUMBA_CACHE_DIR"] = cache
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            seconds = pool.submit(compile_signatures, entries).result()
    kept = [e | {"seconds": round(s, 2)} for e, s in zip(entries, seconds) if not isinstance(s, str)]
    RECORD.write_text(json.dumps({"kernels": kept}, indent=0) + "\n")
    print(f"{len(kept)} of {len(entries)} specialisations, {sum(e['seconds'] for e in kept):.0f} s to compile "
          f"in one process: {RECORD.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
