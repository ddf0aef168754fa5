"""Shared test fixtures.

``LOCAL_ENGINES`` lists every local engine; engine-conformance tests are
parametrised over it with the ``engine`` fixture, so a new engine is checked
by every such test the moment it is added here.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CASES_DIR = Path(__file__).resolve().parent / "fixtures" / "cases"
LOCAL_ENGINES = ["reference", "aseq", "greta"]


def load_shared_cases() -> list[dict]:
    """The worked cases in tests/fixtures/cases (the GRETA paper's Figures 6 and 12)."""
    files = sorted(CASES_DIR.glob("*.json"))
    if not files:
        raise FileNotFoundError(f"no case files found in {CASES_DIR}")
    return [json.loads(f.read_text()) | {"_file": f.name} for f in files]


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", default=False,
                     help="exhaustive profile: also the tests marked slow, full Hypothesis example counts and "
                          "exhaustive sweeps one event longer (tests/strategies.py)")


def pytest_configure(config):
    # read by tests/strategies.py when the test modules are imported (after this hook, also on xdist workers)
    if config.getoption("--slow"):
        os.environ["CEPVEC_TESTS"] = "slow"
    if hasattr(config, "workerinput"):
        return
    _byte_compile_sources()
    workers = getattr(config.option, "numprocesses", None)
    if workers and os.environ.get("CEPVEC_TEST_PREWARM", "1") == "1":
        config._cepvec_prewarm = _start_prewarm()


def _byte_compile_sources():
    """Write the bytecode of cepvec's own modules once, before any worker starts.

    Under ``PYTHONDONTWRITEBYTECODE=1`` (set on this project's machines) Python never caches it, and
    every process of a run (the xdist workers, the kernel pre-compiling, some 40 Spark Python workers
    and the tests' subprocesses) compiled cepvec's sources again: about 0.2 CPU-s each. Without that
    variable this finds the files up to date (a ``stat`` each)."""
    import compileall
    import re

    for package in ("cepvec", "kernels", "spark_adapter", "tests"):  # not the test modules: pytest rewrites those
        compileall.compile_dir(ROOT / package, quiet=2, rx=re.compile(r"(test_[^/]*|conftest)\.py$"))


def pytest_unconfigure(config):
    proc = getattr(config, "_cepvec_prewarm", None)
    if proc is not None and proc.poll() is None:  # not done yet (a short selection of tests): stop it
        os.killpg(proc.pid, 9)
        proc.wait()


def _start_prewarm():
    """Under pytest-xdist: compile the kernel specialisations the suite meets (recorded in
    ``tests/fixtures/kernel_signatures.json``) into the Numba cache, one process per two cores beside the
    workers (``tests/kernel_signatures.py`` says why, and how to regenerate the record).
    ``CEPVEC_TEST_PREWARM=0`` turns it off."""
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, "-m", "tests.kernel_signatures", "compile"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, start_new_session=True)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group markers
def pytest_collection_modifyitems(config, items):
    for it in items:  # under pytest-xdist (--dist loadgroup) every Spark test runs in one worker: one JVM
        if it.get_closest_marker("spark"):
            it.add_marker(pytest.mark.xdist_group("spark"))
    # the Spark tests first: the largest unit of work starts at once, and the run ends on small tests that
    # spread over every worker (placed among the other files, the group left one worker idle for a minute)
    items.sort(key=lambda it: it.get_closest_marker("spark") is None)
    if config.getoption("--slow"):
        return
    slow = [it for it in items if it.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [it for it in items if not it.get_closest_marker("slow")]


@pytest.fixture(params=LOCAL_ENGINES)
def engine(request) -> str:
    return request.param


def run_engine(query, events, **kwargs):
    """``cepvec.run`` for conformance tests, honest about engines that refuse a query.

    When the engine under test does not support the query, it must refuse with
    ``UnsupportedByEngine`` (asserted here), and the test goes on with
    ``engine="auto"``, which is what a user gets for that query.
    """
    import cepvec
    from cepvec.registry import engine_support

    from cepvec.runtime.prepare import prepare

    engine = kwargs.get("engine", "auto")
    q = query if isinstance(query, cepvec.Query) else cepvec.compile(query)
    try:  # engines may refuse on column types too (MIN of strings on the linear maps)
        with warnings.catch_warnings():  # the run below warns, once
            warnings.simplefilter("ignore")
            schema = dict(prepare(q, events, time_unit=kwargs.get("time_unit")).df.schema)
    except cepvec.CepvecError:
        schema = None  # bad data: the engine's own run reports it
    if engine not in ("auto",) and engine_support(q, engine, schema) is not None:
        with pytest.raises(cepvec.UnsupportedByEngine, match="cannot run"):
            cepvec.run(q, events, **kwargs)
        kwargs = {**kwargs, "engine": "auto"}
    return cepvec.run(query, events, **kwargs)


@pytest.fixture
def shared_runs(monkeypatch) -> list[list[str]]:
    """The query names (sorted) of every shared-executor run (``SharedRun``) made while the test runs."""
    import cepvec.sharing.run as R

    made: list[list[str]] = []

    class Recording(R.SharedRun):
        def __init__(self, queries, *a, **kw):
            made.append(sorted(queries))
            super().__init__(queries, *a, **kw)

    monkeypatch.setattr(R, "SharedRun", Recording)
    return made


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for every Spark test (mark those tests with ``pytest.mark.spark``).

    ``local[2]`` with 4 shuffle partitions, AQE off (so the partitioning the
    adapter asks for is the partitioning it gets), no UI, Arrow on, and the
    session time zone UTC (timestamps cross to Python as UTC instants); the
    driver JVM without its optimising JIT tier nor whole-stage code generation
    (see below).
    """
    import sys

    pytest.importorskip("pyspark", reason="the Spark tests need pyspark: pip install 'cepvec[spark]'")
    from pyspark.sql import SparkSession

    # the Python workers must run the interpreter (and the cepvec) of this test run
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("cepvec-tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        # no whole-stage Java code generation: each test's plans run once on a few thousand rows, where
        # compiling the generated code costs more JVM CPU than it saves (the Spark tests: 57 -> 51 JVM CPU-s)
        .config("spark.sql.codegen.wholeStage", "false")
        # the JVM's C1 compiler only, and the serial collector: the tests' Spark jobs are short, and C2 compiling
        # their hot code cost more CPU than it saved (the Spark test files: 135 -> 89 CPU-s, 77 -> 62 s, measured)
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
