"""``kernels/_jit.py``: inputs passed read-only (``jit_reading``), and a cold kernel compiled by one process."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

from cepvec.kernels import _jit
from cepvec.kernels.keys import min_max
from cepvec.kernels.trend import partition_order


def test_inputs_are_passed_read_only_so_one_specialisation_serves_both():
    writable = np.array([3, -1, 7], np.int64)
    frozen = _jit.readonly(writable.copy())
    assert tuple(min_max(writable)) == tuple(min_max(frozen)) == (-1, 7)
    assert writable.flags.writeable  # the caller's array is left as it was
    assert min_max.signatures and all(not sig[0].mutable for sig in min_max.signatures)
    order, _ = partition_order(pid=np.array([1, 0, 1], np.int64), n_parts=2)  # by keyword too
    assert order.tolist() == [1, 0, 2]
    assert all(not sig[0].mutable for sig in partition_order.signatures)


def test_the_wrapper_is_the_kernel_for_pickle_and_introspection():
    assert pickle.loads(pickle.dumps(min_max)) is min_max
    assert min_max.__name__ == "min_max" and callable(min_max.py_func)


def test_an_unknown_input_name_is_refused():
    with pytest.raises(TypeError, match="has no parameter 'values'"):
        _jit.jit_reading("values")(lambda vals: vals)


_MODULE = """
from cepvec.kernels._jit import jit

@jit
def kernel(x):
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(i, x.shape[0]):
            if x[i] < x[j]:
                s += x[i] * x[j] - (x[j] if s > 3.0 else x[i]) / (1.0 + abs(s))
            elif x[i] > 2.0 * x[j]:
                s -= (x[i] - x[j]) ** 2 % 7.0
    return s
"""

_RACE = """
import os, sys, time
import numpy as np
import coldmod
me, other = sys.argv[1], sys.argv[2]
open(me, "w").close()
while not os.path.exists(other):  # both processes call the cold kernel at the same moment
    time.sleep(0.001)
print(coldmod.kernel(np.arange(5.0)), sum(coldmod.kernel.stats.cache_misses.values()))
"""


def test_processes_sharing_a_cache_compile_a_cold_kernel_once(tmp_path):
    """Two processes call the same uncompiled kernel at once: one compiles it, the other waits for the
    lock and loads it from the cache (plain Numba compiles it in both)."""
    (tmp_path / "coldmod.py").write_text(textwrap.dedent(_MODULE))
    env = {**__import__("os").environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", _RACE, str(tmp_path / a), str(tmp_path / b)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for a, b in (("a", "b"), ("b", "a"))]
    outs = [p.communicate(timeout=240) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outs]
    results = [out.split() for out, _ in outs]
    assert results[0][0] == results[1][0]
    assert sorted(int(r[1]) for r in results) == [0, 1], results  # cache misses: one compiled, one loaded
    assert list((tmp_path / "cache").glob("**/coldmod.kernel-*.lock"))


def test_a_compile_that_fails_releases_its_lock(tmp_path):
    """A kernel that does not type-check raises, and leaves no lock behind: the next try raises the same
    error at once instead of waiting for a lock this process still holds."""
    import importlib

    (tmp_path / "badmod.py").write_text("from cepvec.kernels._jit import jit\n\n@jit\ndef kernel(x):\n"
                                        "    return x.no_such_attribute\n")
    sys.path.insert(0, str(tmp_path))
    try:
        badmod = importlib.import_module("badmod")
        import numba

        for _ in range(2):
            with pytest.raises(numba.core.errors.TypingError):
                badmod.kernel(np.arange(3.0))
        assert not badmod.kernel._cache.__dict__.get("_held")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("badmod", None)


#: for test_a_variant_compiles_only_its_own_branch (globals of this module, replaced in the variants)
WIDE = False


@numba.njit  # (not cached: the test reads what a fresh process compiles)
def _wide_helper(x):
    return x * 2


def _sample(x):
    if WIDE:
        return _wide_helper(x)
    return x + 1


_narrow = numba.njit(_jit.variant(_sample, "_narrow", WIDE=False))
_wide = numba.njit(_jit.variant(_sample, "_wide", WIDE=True))


def test_a_variant_compiles_only_its_own_branch():
    """``_jit.variant`` (``kernels/trend/run.py``: ``run_segments_slide`` / ``_none``): each variant sees its
    constant, Numba drops the other branch before typing, so a helper only the other variant calls is
    not compiled; each has its own name (its cache index)."""
    assert _narrow(np.int64(3)) == 4
    assert _wide_helper.signatures == []  # the narrow variant never typed the call
    assert _wide(np.int64(3)) == 6
    assert len(_wide_helper.signatures) == 1
    assert (_narrow.py_func.__qualname__, _wide.py_func.__qualname__) == ("_narrow", "_wide")
    from cepvec.kernels.trend import run as R

    assert R.run_segments_slide.py_func.__globals__["SLIDE"] is True
    assert R.run_segments_none.py_func.__globals__["SLIDE"] is False
    with pytest.raises(TypeError, match="reads no global 'NARROW'"):
        _jit.variant(_sample, "_bad", NARROW=True)


def _twice(v):
    return 2 * v


_twice_callee = _jit.jit_callee(_twice)


@numba.njit
def _calls_twice(v):
    return _twice_callee(v) + 1


def test_a_kernel_for_jitted_callers_has_no_python_wrapper_and_says_so():
    """``jit_callee`` / ``jit_inline`` compile no Python wrapper (a first run's compile of ``_epoch`` saved
    about a tenth): jitted code calls them as before, and a call from Python is refused with the fix
    instead of jumping to an entry point that does not exist."""
    assert _calls_twice(np.int64(20)) == 41
    with pytest.raises(TypeError, match=r"test_jit\._twice is compiled for jitted callers only .* \.py_func"):
        _twice_callee(np.int64(20))
    cres = next(iter(_twice_callee.overloads.values()))
    assert not cres.library.get_pointer_to_function(cres.fndesc.llvm_cpython_wrapper_name)
    from cepvec.kernels.keys import _slot
    from cepvec.kernels.trend.epoch import _epoch

    for kernel in (_slot, _epoch):  # an LLVM-inlined helper and the trend path's loop
        assert kernel.targetoptions["no_cpython_wrapper"] is True
        with pytest.raises(TypeError, match="jitted callers only"):
            kernel()


_LINKED_MODULE = """
from cepvec.kernels._jit import jit, jit_callee

@jit_callee
def twice(v):
    return 2 * v

@jit
def first(v):
    return twice(v) + 1

@jit
def second(v):
    return twice(v) - 1
"""

_LINKED_RUN = """
import sys
import linkmod
from numba.core.registry import cpu_target
engine = cpu_target.target_context.codegen()._engine
for name in sys.argv[1:]:  # per caller: its value, the callee's cache hits, its libraries
    value = getattr(linkmod, name)(20)
    callee = [(type(c.library).__name__, engine.is_symbol_defined(c.fndesc.mangled_name))
              for c in linkmod.twice.overloads.values()]
    print(value, sum(linkmod.twice.stats.cache_hits.values()), callee)
"""


def test_a_kernel_for_jitted_callers_is_compiled_to_machine_code_only_inside_them(tmp_path):
    """A ``jit_callee`` kernel is lowered into a ``_LinkedLibrary``: its callers link it in and compile it
    with their own code, and it is neither optimised as a whole nor compiled to machine code alone (a
    fifth of a cold trend run). Its cache entry (bitcode) loads as one again, for a caller compiled in a
    later process; a caller loaded from the cache does not need it at all."""
    (tmp_path / "linkmod.py").write_text(textwrap.dedent(_LINKED_MODULE))
    env = {**__import__("os").environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(tmp_path)}

    def run(*callers: str) -> list[str]:
        p = subprocess.run([sys.executable, "-c", _LINKED_RUN, *callers], env=env, capture_output=True, text=True,
                           timeout=240)
        assert p.returncode == 0, p.stderr[-2000:]
        return p.stdout.strip().splitlines()

    # compiled here: in a _LinkedLibrary, with no symbol in the execution engine
    assert run("first") == ["41 0 [('_LinkedLibrary', False)]"]
    assert run("first", "second") == [
        "41 0 []",  # a caller loaded from the cache: the callee is not loaded
        "39 1 [('_LinkedLibrary', False)]",  # a new caller: the callee loads from the cache, link-only again
    ]


def test_without_the_numba_internals_a_callee_compiles_as_plain_numba(monkeypatch):
    """``_jit.LINK_ONLY`` false (a Numba without the code-library internals ``_LinkedLibrary`` uses): a
    kernel for jitted callers gets Numba's own pipeline and library, and its callers work as before."""
    monkeypatch.setattr(_jit, "LINK_ONLY", False)
    monkeypatch.setattr(_jit, "_CALLEE_PIPELINE", numba.core.compiler.Compiler)
    plain = _jit.jit_callee(lambda v: 3 * v)

    @numba.njit
    def caller(v):
        return plain(v) + 1

    assert caller(np.int64(5)) == 16
    cres = next(iter(plain.overloads.values()))
    assert type(cres.library) is numba.core.codegen.JITCodeLibrary
    assert type(plain._cache._impl) is numba.core.caching.CompileResultCacheImpl


def _body(x, k):  # (a loop body inlined at the IR level, as jit_body's are)
    s = 0
    for i in range(k):
        s += x[i] * (i + 1)
    return s


def _caller_of(body):
    def caller(x):
        return body(x, 3) + body(x, 2)  # two call sites: each inlines its own IR
    return caller


@pytest.mark.parametrize("module", ["cepvec.kernels.probe", "user_code"])
def test_a_body_inlines_without_copying_its_ir_and_others_as_numba_does(monkeypatch, module):
    """``_jit._inline_own_ir``: a cepvec body's IR, built afresh for each inlining, is inlined without
    ``inline_ir``'s two deep copies of its blocks; a function of another module (a user's
    ``inline="always"``) takes Numba's own method, copies included. Both compile to the same results."""
    import copy

    import numba.core.inline_closurecall as inline_closurecall

    assert _jit.OWN_IR_INLINE
    copied = []
    monkeypatch.setattr(inline_closurecall, "copy", type("Copy", (), {
        "deepcopy": staticmethod(lambda x, memo=None: copied.append(1) or copy.deepcopy(x, memo))}))
    body = type(_body)(_body.__code__, _body.__globals__, "_body")
    body.__module__ = module
    caller = numba.njit(_caller_of(numba.njit(inline="always")(body)))
    x = np.arange(1, 5, dtype=np.int64)
    assert caller(x) == _body(x, 3) + _body(x, 2)
    assert (len(copied) > 0) == (module == "user_code")
