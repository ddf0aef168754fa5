"""The one place that sets Numba JIT options for cepvec kernels.

``cache=True`` so Spark Python workers and repeated runs load compiled code
from ``NUMBA_CACHE_DIR`` instead of compiling again; ``nogil`` so callers may
run kernels in threads. No ``fastmath``: NaN, null and overflow behaviour is
semantics.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib
import inspect
import os
import time
import types

import llvmlite.binding
import numba
import numba.core.caching
import numba.core.cgutils
import numba.core.codegen
import numba.core.compiler
import numba.core.compiler_lock
import numba.core.compiler_machinery
import numba.core.inline_closurecall
import numba.core.typed_passes
import numba.extending
import numpy as np

try:
    import fcntl
except ImportError:  # Windows: each process compiles what it misses, as plain Numba does
    fcntl = None

#: How long a process waits for another to compile a specialisation before compiling it itself.
COMPILE_WAIT_S = 600.0


class _CompileOnce(numba.core.caching.FunctionCache):
    """Numba's on-disk cache, plus: a specialisation missing from the cache is compiled by one process.

    Processes that share a cache (the Python workers of a Spark executor, ``cepvec.warmup``'s workers,
    pytest-xdist workers) used to compile the same cold kernel side by side, each for seconds to tens
    of seconds. On a miss, this cache takes an exclusive lock (a POSIX record lock) on a file beside
    the cache entries, ``<name>.<signature hash>.lock``, then looks again: a process that waited finds
    what the other compiled and loads it. The lock is held from the miss until the compiled code is
    saved (or the compile fails, see :func:`_compile_once`). Locks are taken inside Numba's compiler
    lock, a caller's before its callees', so processes cannot wait on each other in a cycle; a process
    that waits longer than :data:`COMPILE_WAIT_S` compiles anyway. Without ``fcntl`` (Windows), or
    where the lock file cannot be written, it is Numba's cache unchanged."""

    def _lock_path(self, what: str) -> str | None:
        try:
            self._impl.locator.ensure_cache_path()
        except OSError:
            return None
        digest = hashlib.sha1(what.encode()).hexdigest()[:16]
        return os.path.join(self._cache_path, f"{self._impl.filename_base}.{digest}.lock")

    def load_overload(self, sig, target_context):
        cres = super().load_overload(sig, target_context)
        if cres is not None or fcntl is None or not self._enabled:
            return cres
        held = self.__dict__.setdefault("_held", {})
        if str(sig) in held:  # a recursive compile of the same specialisation
            return None
        fd = _lock(self._lock_path(str(sig)))
        if fd is None:
            return None
        cres = super().load_overload(sig, target_context)  # compiled while this process waited?
        if cres is not None:
            _unlock(fd)
            return cres
        held[str(sig)] = fd
        return None

    def save_overload(self, sig, data):
        try:  # one writer of the function's index at a time (two at once can lose an entry)
            fd = _lock(self._lock_path("index")) if fcntl is not None and self._enabled else None
            try:
                super().save_overload(sig, data)
            finally:
                if fd is not None:
                    _unlock(fd)
        finally:
            self.release(sig)

    def release(self, sig) -> None:
        fd = self.__dict__.get("_held", {}).pop(str(sig), None)
        if fd is not None:
            _unlock(fd)


def _lock(path: str | None):
    """An open descriptor holding an exclusive lock on ``path``, or None (no lock to be had)."""
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:  # a read-only cache directory: nothing to coordinate
        return None
    deadline = time.monotonic() + COMPILE_WAIT_S
    while True:
        try:
            # a POSIX record lock: held by this process only (a child forked meanwhile does not hold
            # it); this process opens a lock file once at a time, inside Numba's compiler lock
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except (BlockingIOError, PermissionError):  # held by another process
            if time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(0.05)
        except OSError:  # a file system without locks
            os.close(fd)
            return None


def _unlock(fd: int) -> None:
    os.close(fd)  # closing the descriptor releases its lock


def _compile_once(dispatcher):
    """``dispatcher`` with the cache of :class:`_CompileOnce`; a compile that raises (Numba asking for
    literal arguments, a typing error) releases its lock too."""
    dispatcher._cache.__class__ = _CompileOnce
    compile_ = dispatcher.compile

    def compile(sig):
        try:
            return compile_(sig)
        finally:
            dispatcher._cache.release(sig)

    dispatcher.compile = compile
    return dispatcher


#: Every kernel: no C-callable (``cfunc``) wrapper, which only a first-class function value would use.
#: Each wrapper unpacks every argument: with some 40 arrays, compiling it costs about as much as a
#: small kernel.
_OPTIONS = dict(cache=True, nogil=True, no_cfunc_wrapper=True)


class _Envless:
    """A codegen whose ``set_env`` does nothing: that of a :class:`_LinkedLibrary`, whose code is not
    in the execution engine (its callers' modules hold their copy of it and of its environment)."""

    def __init__(self, codegen):
        self._codegen = codegen

    def set_env(self, env_name, env):
        pass

    def __getattr__(self, name):
        return getattr(self._codegen, name)


class _LinkedLibrary(numba.core.codegen.JITCodeLibrary):
    """The code of a kernel only jitted callers call (:func:`jit_callee`, :func:`jit_inline`, the
    ``@overload`` s of :data:`OVERLOAD_OPTIONS`). A caller links a copy of it into its own module, then
    optimises and compiles that module as a whole (the callee inlined where it is marked so). Numba
    also optimises and compiles the callee's module on its own, to machine code no one calls: on a
    cold cache that was a fifth of the trend loop's first run. This library skips both: it links in
    what it calls and stops there. Its functions have no address (none is called from Python:
    :class:`_JittedOnly`) and no environment in the execution engine (:class:`_Envless`; the kernels
    hold no Python objects). The cache keeps it as LLVM bitcode, loaded into a link-only library again
    (:class:`_LinkedCacheImpl`)."""

    def finalize(self):
        numba.core.compiler_lock.require_global_compiler_lock()
        self._raise_if_finalized()
        for library in dict.fromkeys(self._linking_libraries):
            self._reload_init.update(library._reload_init)
            self._final_module.link_in(library._get_module_for_linking(), preserve=True)
        self._final_module.verify()
        self._finalize_dynamic_globals()
        self._verify_declare_only_symbols()
        self._finalized = True

    def get_pointer_to_function(self, name):
        self._ensure_finalized()
        return 0

    @property
    def codegen(self):
        return _Envless(self._codegen)

    def serialize_using_object_code(self):
        return self.serialize_using_bitcode()

    @classmethod
    def unserialize(cls, codegen, state):
        """A cache entry as :class:`_LinkedLibrary` again (not compiled to machine code); an entry that
        a plain library wrote (an older cache) as Numba loads it."""
        name, kind, data = state
        if kind != "bitcode":
            return codegen._library_class._unserialize(codegen, state)
        library = cls(codegen, name)
        library._final_module = llvmlite.binding.parse_bitcode(data)
        library._finalize_dynamic_globals()
        library._finalized = True
        return library


class _LinkedCacheImpl(numba.core.caching.CompileResultCacheImpl):
    """The cache of a kernel compiled into a :class:`_LinkedLibrary`: loads its entries into one (Numba
    would compile an entry of LLVM bitcode to machine code as it loads it)."""

    def rebuild(self, target_context, payload):
        codegen = target_context.codegen()
        codegen.unserialize_library = functools.partial(_LinkedLibrary.unserialize, codegen)
        try:  # (Numba's compiler lock is held: no other thread loads meanwhile)
            return super().rebuild(target_context, payload)
        finally:
            del codegen.unserialize_library


@numba.core.compiler_machinery.register_pass(mutates_CFG=False, analysis_only=True)
class _UseLinkedLibrary(numba.core.compiler_machinery.LoweringPass):
    """Lowers the function into a :class:`_LinkedLibrary` (Numba's lowering creates a plain one)."""

    _name = "cepvec_linked_library"

    def __init__(self):
        numba.core.compiler_machinery.LoweringPass.__init__(self)

    def run_pass(self, state):
        if state.library is None:
            state.library = _LinkedLibrary(state.targetctx.codegen(), state.func_id.func_qualname)
            state.library.enable_object_caching()
        return False


class _LinkedPipeline(numba.core.compiler.CompilerBase):
    """Numba's nopython pipeline, lowering into a :class:`_LinkedLibrary`."""

    def define_pipelines(self):
        pm = numba.core.compiler.DefaultPassBuilder.define_nopython_pipeline(self.state)
        pm.add_pass_after(_UseLinkedLibrary, numba.core.typed_passes.AnnotateTypes)
        pm.finalize()
        return [pm]


#: Whether this Numba has the internals :class:`_LinkedLibrary` and :class:`_LinkedCacheImpl` build on
#: (Numba 0.60-0.68 do); without them, kernels for jitted callers compile as plain Numba compiles them.
LINK_ONLY = (all(hasattr(numba.core.codegen.JITCodeLibrary, name) for name in (
    "add_linking_library", "_get_module_for_linking", "_finalize_dynamic_globals", "_verify_declare_only_symbols",
    "serialize_using_bitcode", "_unserialize")) and hasattr(numba.core.caching.CompileResultCacheImpl, "rebuild"))
#: The pipeline of kernels for jitted callers.
_CALLEE_PIPELINE = _LinkedPipeline if LINK_ONLY else numba.core.compiler.Compiler


class _JittedOnly(numba.core.registry.CPUDispatcher):
    """A kernel compiled without its Python wrapper (:func:`jit_callee`, :func:`jit_inline`): only jitted
    code may call it. A call from Python raises instead of jumping to a missing entry point."""

    def __call__(self, *args, **kwargs):
        raise TypeError(f"{self.py_func.__module__}.{self.py_func.__qualname__} is compiled for jitted callers "
                        f"only (no Python wrapper): call the kernel that calls it, or its .py_func")


def _jitted_only(**options):
    """A decorator: Numba's ``njit`` with ``options`` and :data:`_OPTIONS`, without the Python wrapper,
    into a :class:`_LinkedLibrary` (cached and loaded as one), compiled once per cache."""

    def decorate(fn):
        dispatcher = _compile_once(numba.njit(no_cpython_wrapper=True, pipeline_class=_CALLEE_PIPELINE,
                                              **options, **_OPTIONS)(fn))
        if LINK_ONLY:
            dispatcher._cache._impl.__class__ = _LinkedCacheImpl
        dispatcher.__class__ = _JittedOnly
        return dispatcher

    return decorate


def jit(fn):
    """``fn`` compiled by Numba with ``cache=True`` and ``nogil=True``, once per cache (:class:`_CompileOnce`)."""
    return _compile_once(numba.njit(**_OPTIONS)(fn))


def jit_callee(fn):
    """:func:`jit` for a kernel that only jitted code calls: compiled without the wrapper that unboxes its
    arguments for a call from Python (on a cold cache, about a tenth of the trend loop's compile)."""
    return _jitted_only()(fn)


def variant(fn, name: str, **constants):
    """A copy of the plain function ``fn`` named ``name`` (in ``fn``'s module), whose globals ``constants``
    are replaced: decorate it with :func:`jit`. Numba freezes globals at compile time and drops the
    branches of an ``if`` on a constant before typing, so each variant compiles only its own code
    (a C++ template parameter, in effect), and has a cache index of its own (named by ``name``).
    The module must bind the variant to ``name``, so that tools and pickles find it there."""
    scope = dict(fn.__globals__)
    unknown = sorted(set(constants) - set(scope))
    if unknown:
        raise TypeError(f"variant: {fn.__qualname__} reads no global {unknown[0]!r}")
    scope.update(constants)
    out = types.FunctionType(fn.__code__, scope, name, fn.__defaults__, fn.__closure__)
    out.__qualname__ = name
    out.__module__ = fn.__module__
    out.__doc__ = fn.__doc__
    out.__kwdefaults__ = fn.__kwdefaults__
    return out


def readonly(a):
    """``a`` as a read-only view (no copy); see :func:`jit_reading`."""
    v = a.view()
    v.flags.writeable = False
    return v


class _Reading:
    """A kernel called from Python whose array arguments ``names`` are inputs: each call passes them
    as read-only views. Everything else (``compile``, ``py_func``, ``signatures``) is the dispatcher's."""

    def __init__(self, dispatcher, names: tuple[str, ...]):
        params = list(inspect.signature(dispatcher.py_func).parameters)
        unknown = [n for n in names if n not in params]
        if unknown:
            raise TypeError(f"jit_reading: {dispatcher.py_func.__qualname__} has no parameter {unknown[0]!r}")
        self._dispatcher = dispatcher
        self._positions = frozenset(params.index(n) for n in names)
        self._names = frozenset(names)
        functools.update_wrapper(self, dispatcher.py_func)

    def __call__(self, *args, **kwargs):
        args = [readonly(a) if i in self._positions and isinstance(a, np.ndarray) else a for i, a in enumerate(args)]
        for n in self._names & kwargs.keys():
            if isinstance(kwargs[n], np.ndarray):
                kwargs[n] = readonly(kwargs[n])
        return self._dispatcher(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._dispatcher, name)

    def __reduce__(self):  # by reference, like a module-level function
        return _kernel_named, (self.__module__, self.__qualname__)


def _kernel_named(module: str, qualname: str):
    return getattr(importlib.import_module(module), qualname)


def jit_reading(*names: str):
    """:data:`jit` for a kernel called from Python, with the array arguments ``names`` as its inputs.

    Numba compiles one specialisation per read-only flag of every array argument, and inputs arrive
    both ways: read-only from Arrow and Polars (zero-copy), writable from NumPy. Each call passes
    these as read-only views (no copy), so one specialisation serves both (the shared executor's
    kernel compiles in about 4 s; ``fill_events`` had 20 specialisations). Only for arguments the
    kernel never writes (Numba refuses to compile a write to a read-only array), and only for kernels
    that no other kernel calls (jitted code cannot call the wrapper).
    """
    return lambda fn: _Reading(jit(fn), names)

# Small helpers called in inner loops: marked ``alwaysinline`` for LLVM. A call
# that is not inlined passes every array argument with reference-count updates,
# which measured 60-100 ns per call with 5-8 arrays (several times the work
# itself). LLVM-level inlining costs little compile time, unlike Numba's
# IR-level ``inline="always"`` for helpers with many call sites (35 s on the
# kernels: each site types the body again); keep these helpers small.
# :func:`jit_body` is that IR-level inlining, for a loop with one call site.
def jit_inline(fn):
    """:func:`jit_callee`, marked ``alwaysinline`` for LLVM."""
    return _jitted_only(forceinline=True)(fn)


#: ``jit_options`` of an ``@overload`` whose implementations only kernels call (the state arithmetic,
#: ``linear/arith.py``): inlined by LLVM, compiled without wrappers.
OVERLOAD_OPTIONS = dict(forceinline=True, nogil=True, no_cpython_wrapper=True, no_cfunc_wrapper=True,
                        pipeline_class=_CALLEE_PIPELINE)


class _NoCopy:
    """What ``numba.core.inline_closurecall`` sees as its ``copy`` module while :func:`_inline_own_ir`
    inlines a body whose IR was built for that call alone: ``deepcopy`` returns its argument."""

    @staticmethod
    def deepcopy(x, memo=None):
        return x


_inline_function = numba.core.inline_closurecall.InlineWorker.inline_function


def _inline_own_ir(self, caller_ir, block, i, function, arg_typs=None):
    """``InlineWorker.inline_function`` for :func:`jit_body` kernels: Numba builds the callee's IR
    afresh for the call, then ``inline_ir`` deep-copies its blocks twice, once to change them and
    once to return the unchanged IR, which Numba's callers drop. For a cepvec kernel's body the copies
    are skipped (the IR is this call's own): they were a third of a first ``WITHIN ... SLIDE`` run's
    compiling (docs/performance-log.md, session 51). Other functions (a user's ``inline="always"``)
    take Numba's method; the compiler lock keeps the swap of ``copy`` to this one call."""
    if getattr(function, "__module__", "").split(".")[0] not in ("cepvec", "kernels"):
        return _inline_function(self, caller_ir, block, i, function, arg_typs=arg_typs)
    callee_ir = self.run_untyped_passes(function)
    module = numba.core.inline_closurecall
    saved, module.copy = module.copy, _NoCopy
    try:
        return self.inline_ir(caller_ir, block, i, callee_ir, function.__code__.co_freevars, arg_typs=arg_typs)
    finally:
        module.copy = saved


#: Whether this Numba inlines as :func:`_inline_own_ir` expects (0.60-0.68: ``inline_function`` runs the
#: untyped passes, then ``inline_ir``, whose only use of the ``copy`` module is the IR's copies).
OWN_IR_INLINE = (getattr(numba.core.inline_closurecall, "copy", None) is copy
                 and hasattr(numba.core.inline_closurecall.InlineWorker, "run_untyped_passes"))
if OWN_IR_INLINE:
    numba.core.inline_closurecall.InlineWorker.inline_function = _inline_own_ir


def jit_body(fn):
    """``fn`` typed and lowered inside its jitted caller (Numba's IR-level ``inline="always"``), never
    compiled on its own. For a loop with one call site: a :func:`jit_inline` function is compiled alone
    and then optimised again inside its caller's module, which a first run pays twice. Not for helpers
    with several call sites: each site types the body again."""
    return numba.njit(inline="always", nogil=True)(fn)


#: Below this many elements, small helper steps (a minimum and maximum, ordering ties or output rows)
#: run in NumPy instead of their Numba kernels: as fast at that size, and a first run on a cold cache
#: does not compile them. Tests set it to 0 to run the kernels on small inputs too.
NUMPY_BELOW = 1 << 14


@numba.extending.intrinsic
def stack_int64(typingctx, n):
    """An int64 array of ``n`` elements (a compile-time constant: a literal or a global) on the stack
    of the function, uninitialised. When every index into it is a constant once the loops over it are
    unrolled (their bounds globals of a :func:`variant`), LLVM keeps its elements in registers: a
    window map of a few rows updated per event without a load and store on every element (an array
    from ``np.zeros`` is on the heap, and each update waits on the store before it;
    ``linear/chain.py``)."""
    if not isinstance(n, numba.types.IntegerLiteral):
        return None
    size = n.literal_value
    arr = numba.types.Array(numba.types.int64, 1, "C")

    def codegen(context, builder, sig, args):
        cg = numba.core.cgutils
        data = cg.alloca_once(builder, context.get_value_type(numba.types.int64), size=size)
        out = context.make_array(arr)(context, builder)
        item = context.get_constant(numba.types.intp, 8)
        context.populate_array(out, data=data, shape=cg.pack_array(builder, [context.get_constant(numba.types.intp, size)]),
                               strides=cg.pack_array(builder, [item]), itemsize=item, meminfo=None)
        return out._getvalue()

    return arr(n), codegen


@numba.extending.intrinsic
def borrow(typingctx, arr):
    """``arr`` without its reference count: the same data, shape and strides, no owner (null meminfo).

    A call of a jitted function increments and decrements the (atomic) reference count of every array
    it passes; with some 40 arrays that is about 1.4 µs a call, a third of the trend kernel's time with
    10^5 small partitions (one call per partition). Arrays passed through ``borrow`` skip both (the
    runtime's increment and decrement return at once on a null owner). Only for calls the caller
    outlives, of arrays the callee neither keeps nor rebinds.
    """
    if not isinstance(arr, numba.types.Array):
        return None

    def codegen(context, builder, sig, args):
        src = context.make_array(sig.args[0])(context, builder, value=args[0])
        dst = context.make_array(sig.return_type)(context, builder)
        for name in ("nitems", "itemsize", "data", "shape", "strides"):
            setattr(dst, name, getattr(src, name))
        dst.meminfo = numba.core.cgutils.get_null_value(dst.meminfo.type)
        dst.parent = numba.core.cgutils.get_null_value(dst.parent.type)
        return dst._getvalue()

    return arr(arr), codegen
