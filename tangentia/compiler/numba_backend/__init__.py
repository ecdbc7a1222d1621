"""The numba backend of ``jit``: a whole program becomes one generated Python
module compiled with ``numba.njit``.

Layout: ``plan`` (the passes that run over a program before any code is
emitted: CSE and dead-code elimination, each value's consumers, which equations
run row by row, how each contraction is computed, which nested programs are
inlined, outlined or compile units; memoized per program and settings),
``codegen`` (value representations and the generator ``_Gen``, which walks a
program's equations once, in order, reading the plan), ``rules`` (one lowering
rule per primitive or family), ``helpers`` (scalar functions with NumPy's
semantics, called from generated code), ``alloc`` (``_empty``: numba's ``np.empty`` as an
intrinsic, so a program's arrays cost no overload compile), ``native`` (compilation, the on-disk
cache, the calling wrapper, compile units) and this module (the ``Backend``).
Every lowering table (``rules.RULES``, ``ROWS``, ``FUSIBLE``, ``ELEMENTWISE``,
``VECTOR_OPS``, ``special.OPS``, ``irblock.RULES``, ``kernels.KERNELS``, ...) is
keyed by the ``Primitive`` object; ``lowering_paths()`` reports by name.

* **Values** have one of four representations.  ``SV`` (*scalarized*): a
  value with a small static shape (``SMALL`` elements or fewer) is a list of
  scalar expressions, one per element -- locals such as ``s12``, or, for a
  value used once by an elementwise operation, the expression itself, inlined
  into its consumer -- so loop steps over small states allocate nothing.
  ``AV``: a C-contiguous numba array variable.  ``LV`` (*lazy*): an element
  expression ``fn(index) -> str`` for a larger value, not computed yet (if it
  reads scalarized operands, it has at most ``UNROLL`` elements and is written
  by unrolled code).  ``ZV``: a ``float0`` value (no data; never computed).
  Scalarized loop carries and branch results are tuple variables (numba's SSA
  passes cost grows with the number of variables assigned more than once).
* **Blocks** (``irblock``).  A run of consecutive equations whose values are all
  scalarized and which all have a block rule (arithmetic, comparisons,
  ``select``, casts, sin/cos/exp/log/tanh/expm1/log1p/sqrt/abs, ``integer_pow``,
  broadcasts, reshapes, transposes, static indexing, concatenation, small
  reductions and contractions) is one call of a numba intrinsic whose code
  generation writes the run's scalar operations as LLVM IR: numba types and
  lowers one statement instead of one per element (its typing and lowering were
  ~90% of a compile), and LLVM sees the same straight-line code, bit for bit
  the same results.  Blocks of more than ``irblock.SPLIT_NODES`` operations
  are split into out-of-line functions passing values through stack buffers
  (LLVM's code generation grows faster than linearly with a function's size).
  ``TANGENTIA_NUMBA_IRBLOCK=0`` emits one statement per element instead.
* **Batched values, row by row.**  A value with a leading (vmap batch) axis of
  length B, too large to scalarize but whose rows are small, is computed row
  by row: a run of such equations (elementwise, broadcasts, reshapes, static
  indexing and updates, concatenation, transposes and reductions within rows;
  ``rules.ROWS``; which equations qualify is the row pass's decision,
  ``plan.row_plan``) becomes ONE loop over the B rows, each row scalarized, and
  only values used after the run are written to arrays.  The code is that of
  one unbatched row, not one loop and one temporary per operation (a batched
  odeint gradient compiled in minutes).
* **Fusion.** Elementwise operations (NumPy broadcasting and dtype promotion:
  every operand is cast to the dtype of NumPy's loop, every result to the
  output aval's dtype), ``select``, ``convert_element_type``,
  ``broadcast_to``, ``transpose`` and static ``getitem`` on large values give
  ``LV`` values; a lazy value used once by another fusible operation stays
  lazy, so a chain becomes one expression, written by one loop nest when it
  is materialized (or accumulated directly by the reduction consuming it).
  Chains longer than ``codegen.MAX_FUSED`` are split; short contractions
  (outer products, ...) are fused expressions too.
* **Control flow** is native: ``while`` -> ``while True`` with the condition
  program inlined, ``scan`` -> ``for`` with stacked outputs written in place,
  ``cond`` -> ``if/elif``.  Call-like primitives (``jit``, ``checkpoint``,
  custom-rule calls, ``custom_linear_solve``) are inlined.  Large loop bodies and
  branches (by estimated code size: ``codegen.OUTLINE_MIN_COST``) become
  separate njit functions, shared by every use of the same body; larger nested
  programs (``native.UNIT_MIN_COST``), called functions included, become compile
  units, modules of their own cached across programs.  Which is which is the
  outlining pass's decision (``plan.call_plan``), from the thresholds read once
  per compile (``plan.Settings``, part of every cache key of the decisions and of
  the compiled code).
* **Contractions** (the path of each is ``plan.dot_plan``'s choice). Small
  ``dot_general`` is unrolled over scalars, large floating ones go to BLAS
  (``np.dot`` on contiguous 2-D views or their transposes; batched ones when each
  product is large) or the own GEMM kernel (``gemm``), short ones are fused
  expressions, others are loops.
* **Everything else** runs a kernel from ``kernels.KERNELS`` if there is
  one, else the primitive's NumPy implementation inside ``numba.objmode``.
* **Complex dtypes** (complex64, complex128) are native for arithmetic,
  ``abs``, ``==``/``!=``, logical operations, ``cmath`` functions, ``real``/
  ``imag``/``conj``/``complex``, casts (to a real dtype: the real part),
  ``select``, sums, products, ``dot_general`` (BLAS when large), indexing and
  control flow; orderings, ``max``/``min``, ``sign``, ... and the kernels run
  the NumPy implementation of that one equation in ``numba.objmode``.
  ``lowering_paths()`` lists the path of every primitive.

If numba cannot compile a program, the NumPy backend runs it, after one
warning naming the error.  Compiled code is cached on disk (``_cache_dir``:
``$TANGENTIA_CACHE_DIR/numba``, default ``~/.cache/tangentia/numba``): the
generated source is written to a file named by the hash of its text and of
the library, numba and NumPy versions, imported, and compiled with
``njit(cache=True)``; a new process loads the machine code from there.
Programs with objmode fallbacks (Python objects in their globals) are not
cached on disk.  A second copy of each natively compiled program's machine code
(``objcache``: its object file, under a key computed from the program, the
settings and the versions) lets a new process load it without importing numba
(the warm-cache first call: ~0.05 s instead of ~0.45 s; tiered ``jit`` then runs
it from the first call); ``TANGENTIA_NUMBA_FAST_LOAD=0`` turns that off.  Temporary files that
writers killed mid-write left in the cache are removed by a process's first compile
(``clean_stale_files``: only those whose writer is gone).  Compiles longer than 2 s print a line on stderr unless
``TANGENTIA_COMPILE_PROGRESS=0``.
"""
from __future__ import annotations

import contextlib
import importlib
import os
import re
import signal
import sys
import threading
import time

from ... import core
from ..._gc import GC_THRESHOLD, quiet_gc, refreeze
from ...primitives.control_flow import scan_p, while_p
from ...primitives.indexing import getitem_p, scatter_p
from ..backend import Backend, cache_root, register_backend

__all__ = ["NumbaBackend", "all_primitives", "lowering_paths", "SMALL"]
# The compile estimate (tiering's rent-or-buy, and the progress line): CPU seconds of
# numba's compile of a program, one core, empty caches, as a sum over what the generator
# emits.  A least-squares fit (of the log ratio) to 39 compiles: bench_cold's 18 cases and
# its 8 --sizes families at two sizes each (benchmarks/bench_estimate.py, 2026-12-07,
# session 18, load 6-14 on the 2 cores): every estimate within 0.53-1.87x of its compile
# (the former fit, 0.1 s per array equation and 1.2 ms per scalarized one, ranged
# 0.16-14x: 13.6 s for a 10-layer MLP that compiled in 2.5 s, 37 s for 10 spring-chain
# steps that took 2.6 s, 1.0 s for a fori_loop of dynamic slices that took 6.0 s).
# * SECONDS_BASE: numba's floor (its import and registries in a fresh process, ~0.4 s) and
#   a small program's own code.
# * a scalarized equation (outputs of at most SMALL elements: IR blocks' scalar operations,
#   rerolled where they repeat) 0.4 ms; but an indexing one (``scatter``, ``getitem`` at
#   traced indices: generated Python statements numba types one by one) 35 ms;
# * a carried program (loop body, branch, call: a loop nest or a function) 20 ms;
# * an equation on arrays: 50 ms for the first of its kind (primitive, input and output
#   types) in the program, 6 ms for each further one (repeated layers are one outlined
#   function per structure: ``codegen.repeated_segments``; fused loops share their code).
SECONDS_BASE = 0.7
SECONDS_PER_EQUATION = 0.0004          # a scalarized equation
SECONDS_PER_INDEXED_EQUATION = 0.035   # a scalarized scatter, or getitem at traced indices
SECONDS_PER_PROGRAM = 0.02             # a carried program (loop body, branch, called program)
SECONDS_PER_ARRAY_KIND = 0.05          # an array equation of a kind not seen before
SECONDS_PER_ARRAY_EQUATION = 0.006     # every further array equation
_SCALARIZED = 16                       # codegen.SMALL (not imported here: codegen imports numba)
_UNROLL, _FEW_ROWS = 64, 8             # codegen.UNROLL, irblock.FEW_ROWS
_SIZES = core.ProgramMemo("numba backend: the compile estimate's counts")


def estimate_inputs(jaxpr):
    """What the compile estimate counts in ``jaxpr`` and the programs it carries (memoized):
    ``(scalarized, indexed, programs, array_kinds, arrays)`` -- scalarized equations (every
    output at most ``SMALL`` elements) other than the indexed ones (``scatter``, ``getitem``
    at traced indices), those, carried programs, the kinds of the other equations
    (primitive, input and output types), and the other equations beyond the first of each
    kind (a value of a few rows outside loop bodies counts as scalarized: ``_few_rows``).  One walk, a few microseconds per equation (the tiered first call pays it)."""
    n = _SIZES.get(jaxpr)
    if n is None:
        counts = [0, 0, 0, 0, 0]
        _count(jaxpr, counts, set())
        n = tuple(counts)
        _SIZES.set(jaxpr, n)
    return n


def _count(jaxpr, counts, kinds, in_loop=False):
    for eqn in jaxpr.eqns:
        if any(_elements(v.aval) > _SCALARIZED for v in eqn.outputs) and (
                in_loop or not all(_few_rows(v.aval) for v in eqn.outputs)):
            kind = (eqn.prim, tuple(getattr(v, "aval", None) for v in eqn.inputs),
                    tuple(v.aval for v in eqn.outputs))
            if kind in kinds:
                counts[4] += 1
            else:
                kinds.add(kind)
                counts[3] += 1
        elif eqn.prim is scatter_p or (eqn.prim is getitem_p and len(eqn.inputs) > 1):
            counts[1] += 1
        else:
            counts[0] += 1
        for sub in core.subjaxprs(eqn.prim, eqn.params):
            counts[2] += 1
            _count(sub, counts, kinds, in_loop or eqn.prim is while_p or eqn.prim is scan_p)


def _few_rows(aval):
    """Whether a value is computed in IR blocks outside loop bodies, as scalarized ones are
    (``irblock._eligible``: at most ``codegen.UNROLL`` elements in at most
    ``irblock.FEW_ROWS`` rows, such as ``jit(hessian)``'s f64[6,6])."""
    shape = getattr(aval, "shape", ())
    return len(shape) > 1 and shape[0] <= _FEW_ROWS and _elements(aval) <= _UNROLL


def _elements(aval):
    size = 1
    for d in getattr(aval, "shape", ()):
        size *= int(d)
    return size


_FAST = core.ProgramMemo("numba backend: programs loaded from the machine-code cache")
_FAST_ENV = ("TANGENTIA_NUMBA_UNITS", "TANGENTIA_NUMBA_IRBLOCK", "TANGENTIA_NUMBA_LEAN",
             "TANGENTIA_NUMBA_LARGE_IR", "TANGENTIA_NUMBA_GEMM")
_COMPILER = tuple(f"{__name__}.{m}" for m in ("native", "codegen", "rules", "plan", "irblock", "helpers"))


def _fast_load(jaxpr):
    """The program's machine code kept by an earlier process (``objcache``), loaded
    without numba, while the compiler is not imported in this process; else None.
    Memoized per program and the settings ``native._settings`` reads (as the compiled
    code is): a call of a loaded program (``jit``'s eager calls come here each time)
    costs a few lookups, not the key's computation."""
    modules = sys.modules
    if os.environ.get("TANGENTIA_NUMBA_FAST_LOAD", "1") == "0" or any(m in modules for m in _COMPILER):
        return None
    env = tuple(os.environ.get(k) for k in _FAST_ENV)
    fn = _FAST.get(jaxpr, env)
    if fn is None:      # (a miss is kept too: until the compiler is imported, tiered calls ask)
        loaded = _objcache().load(jaxpr) if _fast_entries() else None
        fn = _FAST.setdefault(jaxpr, _MISS if loaded is None else loaded, env)
    return None if fn is _MISS else fn


_MISS = object()
_FAST_DIRS = set()      # the machine-code caches found holding entries in this process


def fast_dir():
    """The machine-code cache's directory (``objcache``): ``<cache root>/numba/fast``."""
    return os.path.join(cache_root(), "numba", "fast")


def _fast_entries():
    """Whether the machine-code cache holds an entry (one read of its directory, before the
    cache's module is imported or a key computed): a process of a user whose cache is
    empty -- the first run ever -- looks nothing up.  (Computing a program's key costs a
    few ms once per process: the library's files are part of it.)"""
    d = fast_dir()
    if d in _FAST_DIRS:
        return True
    try:
        with os.scandir(d) as it:
            if not any(e.name.endswith(".bin") for e in it):
                return False
    except OSError:
        return False
    _FAST_DIRS.add(d)
    return True


def _objcache():
    """The machine-code cache (``objcache``), imported on first use."""
    return importlib.import_module(f"{__name__}.objcache")


def _native():
    """The compiler module (``native``), imported on first use (the import system
    caches it and makes concurrent first imports wait for one another), with numba's
    registries loaded (``_load_compiler``)."""
    if _LOADED:
        return _LOADED[0]
    with _LOAD_LOCK:
        if not _LOADED:
            _LOADED.append(_load_compiler())
    return _LOADED[0]


_LOADED = []
_LOAD_LOCK = threading.RLock()


def _load_compiler():
    """Import the compiler and load numba's implementation registries (numba imports
    ~40 of its modules at its first compile), with Ctrl-C held back until both are done.

    A KeyboardInterrupt raised inside an import leaves the modules imported so far in
    ``sys.modules`` and the interrupted ones out: numba cannot be imported again in that
    process, and every later compile failed ("module 'numba' has no attribute 'core'",
    "module 'numba.core.types' has no attribute 'misc'"; Ctrl-C in the first second of
    a first compile).  So the signal waits (``_interrupts_held``): about 0.3-0.5 s, then
    the KeyboardInterrupt is raised as usual, and the next call compiles."""
    with _interrupts_held():
        native = importlib.import_module(f"{__name__}.native")
        from numba.core.compiler_lock import global_compiler_lock
        from numba.core.registry import cpu_target
        with global_compiler_lock:
            cpu_target.target_context.refresh()
    return native


@contextlib.contextmanager
def _interrupts_held():
    """SIGINT's Python handler called after the block rather than inside it (in the main
    thread, where Python runs it; elsewhere, and under a handler that is not a Python
    function, nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got = []
    try:
        old = signal.signal(signal.SIGINT, lambda sig, frame: got.append(frame))
    except (ValueError, OSError):       # (no signals here: an embedded interpreter)
        yield
        return
    if not callable(old):
        signal.signal(signal.SIGINT, old)
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
        if got:
            old(signal.SIGINT, got[0])


class NumbaBackend(Backend):
    """Compiles a whole program into one ``numba.njit`` function (see the module docstring).

    Registered at import, but numba and the compiler are imported only when a program
    is first compiled (``native``)."""

    name = "numba"
    slow_compile = True

    def compiled(self, jaxpr):
        # (kept per the compile's settings, ``native._settings``: none before the compiler
        # is imported; a module still being imported, by the background compile thread,
        # may not define ``compiled`` yet, and has compiled nothing.  Before that, the
        # machine code kept on disk by an earlier process, if any: ``objcache``)
        compiled = getattr(sys.modules.get(f"{__name__}.native"), "compiled", None)
        fn = None if compiled is None else compiled(jaxpr)
        return fn if fn is not None else _fast_load(jaxpr)

    def compile_estimate(self, jaxpr):
        # numba's compile of the generated code (see SECONDS_BASE)
        scalar, indexed, programs, kinds, arrays = estimate_inputs(jaxpr)
        return (SECONDS_BASE + SECONDS_PER_EQUATION * scalar + SECONDS_PER_INDEXED_EQUATION * indexed
                + SECONDS_PER_PROGRAM * programs + SECONDS_PER_ARRAY_KIND * kinds
                + SECONDS_PER_ARRAY_EQUATION * arrays)

    def compile(self, jaxpr):
        fn = self.compiled(jaxpr)
        if fn is None:
            clean_stale_files()
            with _quiet_gc():
                native = _native()
                fn = native.compiled(jaxpr)      # (compiled before: kept already)
                if fn is None:
                    _refreeze()                  # (numba's and the compiler's modules, just imported)
                    fn = native.NumbaCompiler(self.compile_estimate(jaxpr)).compile(jaxpr)
                    if os.environ.get("TANGENTIA_NUMBA_FAST_LOAD", "1") != "0":
                        _objcache().save(jaxpr, fn)
        return fn

    def source(self, jaxpr):
        return _native().NumbaCompiler().source(jaxpr)


# Temporary files left in the cache by writers killed mid-write (SIGKILL, a power cut): every
# writer writes a temporary file and renames it over the entry, so a reader never sees part of
# an entry, but a writer killed before its rename leaves the temporary file.  Ours are named
# ``<entry>.<pid>.<thread>.tmp`` (``objcache``, ``native._load_module``, ``gemm``); numba's
# own cache files ``<entry>.tmp.<16 hex digits>``.
STALE_TMP_S = 60.0          # one of ours this old whose process is gone is removed
ABANDONED_TMP_S = 3600.0    # one of numba's this old (their names carry no pid)
_OURS_TMP = re.compile(r"\.(\d+)\.\d+\.tmp$")
_NUMBAS_TMP = re.compile(r"\.tmp\.[0-9a-f]{16}$")
_CLEANED = set()            # the cache roots cleaned in this process


def clean_stale_files(root=None, now=None):
    """Remove the temporary files that writers killed mid-write left in the cache under
    ``root`` (default: ``cache_root()``), once per process and root (``now`` given: again);
    the names removed.  Run by the first compile of a process (a few ms for thousands of
    entries, beside a compile's ~0.5 s).  A file is stale when its writer is gone: one of
    ours at least ``STALE_TMP_S`` old whose process is not alive on this machine, one of
    numba's at least ``ABANDONED_TMP_S`` old.  A live writer's file is never touched (a
    write takes milliseconds; a writer on another machine sharing the directory, which the
    process check cannot see, finishes long before a minute); if one were, its rename would
    fail and the entry would not be kept (the writers treat that as a cache they cannot
    write)."""
    root = cache_root() if root is None else root
    if now is None:
        if root in _CLEANED:
            return []
        _CLEANED.add(root)
    now = time.time() if now is None else now
    removed = []
    base = os.path.join(root, "numba")
    dirs = [root, base, os.path.join(base, "fast"), os.path.join(base, "__pycache__")]
    try:
        with os.scandir(os.path.join(base, "overloads")) as it:
            dirs.extend(e.path for e in it if e.is_dir(follow_symlinks=False))
    except OSError:
        pass
    for d in dirs:
        try:
            with os.scandir(d) as it:
                names = [e.name for e in it if "tmp" in e.name and e.is_file(follow_symlinks=False)]
        except OSError:
            continue
        for name in names:
            ours = _OURS_TMP.search(name)
            if ours is None and _NUMBAS_TMP.search(name) is None:
                continue
            path = os.path.join(d, name)
            try:
                age = now - os.stat(path).st_mtime
                if (age >= STALE_TMP_S and not _alive(int(ours.group(1))) if ours is not None
                        else age >= ABANDONED_TMP_S):
                    os.unlink(path)
                    removed.append(path)
            except (OSError, ValueError, OverflowError):    # (renamed meanwhile: its writer is done)
                continue
    return removed


def _alive(pid):
    """Whether a process ``pid`` runs on this machine (or may: no right to signal it)."""
    if pid == os.getpid() or sys.platform == "win32":    # (os.kill there terminates it)
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


# Python's cyclic collector kept off the objects that were there before while a program
# compiles (numba allocates millions of objects per compile): the one helper, ``tangentia._gc``,
# which staging traces use too.
_quiet_gc = quiet_gc
_refreeze = refreeze


# Every submodule (tests/test_numba_lean.py checks the list against the directory): a name
# missing here sent ``from . import <it>`` through ``_native()``, which imports the compiler
# from the middle of a submodule's import (``rules`` -> ``custom_lin``: a circular import).
_SUBMODULES = frozenset((
    "addresses", "alloc", "blasdot", "codegen", "custom_lin", "elementwise_loop", "gemm",
    "helpers", "irblock", "kernels", "memo", "native", "objcache", "plan", "pool", "reroll",
    "rowio", "rules", "scipy_c", "sigint", "special", "unit_consts", "vecmath", "vecmath_trig",
    "windows"))


def __getattr__(name):
    # The submodules, and the compiler's names (LARGE, vector_bound, lowering_paths, ...),
    # are read through here, importing them on first use.
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_native(), name)


register_backend(NumbaBackend())
