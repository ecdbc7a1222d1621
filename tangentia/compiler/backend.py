"""The backend interface of ``jit``.

A *backend* compiles a closed program (a typed ``Jaxpr`` without constvars)
into a Python callable ``fn(*arrays) -> list of arrays``.  Each backend owns
its lowering table, keyed by primitive; nothing backend-specific lives on
``Primitive``.  Backends register themselves here by name; ``jit`` and the
eager implementations of call-like primitives (``cond``, ``while``,
``scan``, ``jit``, ``checkpoint``, custom-rule calls, ...) ask for one.

Which backend runs: an explicit ``jit(f, backend=...)``, else
``config.update("jit_backend", ...)``, else the ``TANGENTIA_JIT_BACKEND``
environment variable, else ``"numba"`` (``"numpy"`` when numba is not
installed).

**Tiered execution.**  ``compile_program`` is the one place where ``jit``,
``checkpoint`` and eagerly evaluated loops get their callable.  A backend
whose compiles take long (``Backend.slow_compile``: numba, about a second
per small program) does not make the user wait: the program runs on the
NumPy backend (no native compile) while the backend compiles it on one
background thread, and the calls after that run the native code.  When to
compile is a rent-or-buy choice: a program is compiled at its second call
if its compile is estimated to be short (``Backend.compile_estimate``, at
most ``EAGER_COMPILE_S``), otherwise once its calls on the NumPy backend
have taken half that estimate, so a large program called a few times never
spends minutes of a core on a compile that could not pay for itself.  Both tiers compute the same operations; results
agree within rounding, not always bit for bit.  ``config.update("jit_tiered",
False)`` (or ``TANGENTIA_JIT_TIERED=0``) compiles before the first call
instead, so every call runs the same code.

This module sits at the core layer: it imports only ``core``.
"""
from __future__ import annotations

import atexit
import functools
import os
import queue
import signal
import threading
import time
import weakref

import numpy as np

from .. import core
from ..core import Eqn, Jaxpr, Var

DEFAULT_BACKEND = "numba"
_ENV_VAR = "TANGENTIA_JIT_BACKEND"


class Backend:
    """A compiler from programs to callables.

    Subclasses set ``name`` and implement ``compile`` and ``source``.
    """

    name = "?"
    #: Whether compiling takes long enough that the first calls should run on
    #: the NumPy backend while this one compiles in the background.
    slow_compile = False

    def compiled(self, jaxpr):
        """The callable for ``jaxpr`` if it is at hand without compiling, else None."""
        return None

    def compile_estimate(self, jaxpr):
        """Seconds that compiling ``jaxpr`` is expected to take (for tiering)."""
        return 0.0

    def compile(self, jaxpr):
        """``fn(*args) -> list`` running ``jaxpr`` (which has no constvars)."""
        raise NotImplementedError

    def source(self, jaxpr):
        """The generated code for ``jaxpr``, as text (what ``jit(f).lower(...)`` shows)."""
        raise NotImplementedError


_BACKENDS = {}
# "jit_backend": set by config.update("jit_backend", ...); "resolved": the
# default's name, computed once (the environment variable is read then);
# "jit_tiered": config.update("jit_tiered", ...), else TANGENTIA_JIT_TIERED.
_override = {"jit_backend": None, "resolved": None, "jit_tiered": None}
_TIERED_ENV = "TANGENTIA_JIT_TIERED"


def register_backend(backend):
    _BACKENDS[backend.name] = backend
    _override["resolved"] = None


def available_backends():
    return sorted(_BACKENDS)


def set_default_backend(name):
    """``config.update("jit_backend", name)``; ``None`` restores the default."""
    if name is not None:
        _check_name(name, "config.update('jit_backend', ...)")
    _override["jit_backend"] = name
    _override["resolved"] = None


def default_backend_name():
    """The name of the backend ``jit`` uses when none is named."""
    name = _override["resolved"]
    if name is None:
        name = _override["jit_backend"] or os.environ.get(_ENV_VAR) or DEFAULT_BACKEND
        if name not in _BACKENDS:
            if name == DEFAULT_BACKEND and "numpy" in _BACKENDS:
                name = "numpy"  # numba is not installed: the reference backend runs
            else:
                _check_name(name, f"the {_ENV_VAR} environment variable")
        _override["resolved"] = name
    return name


def _check_name(name, where):
    if name not in _BACKENDS:
        raise ValueError(f"{where}: unknown jit backend {name!r}; the backends are "
                         f"{', '.join(repr(b) for b in available_backends())}")


def get_backend(name=None, where="jit"):
    """The backend called ``name`` (``None``: the default one)."""
    if name is None:
        name = default_backend_name()
    else:
        _check_name(name, f"{where}(backend=...)")
    return _BACKENDS[name]


def cache_root():
    """The directory of tangentia's on-disk caches: ``$TANGENTIA_CACHE_DIR``, else
    ``~/.cache/tangentia`` (compiled programs, the GEMM calibration)."""
    return (os.environ.get("TANGENTIA_CACHE_DIR")
            or os.path.join(os.path.expanduser("~"), ".cache", "tangentia"))


def compile_jaxpr(jaxpr, backend=None):
    """Compile ``jaxpr`` with ``backend`` (a name, or None for the default), waiting
    for the native code (``compile_program`` is what calls use)."""
    return get_backend(backend).compile(jaxpr)


def compile_ahead(jaxpr, backend=None):
    """``jit(f).lower(...).compile()``'s callable: ``backend``'s code, waited for (no
    tiers), its outputs fresh arrays as ``compile_program``'s."""
    return _compiled_fresh(get_backend(backend), jaxpr)


def _compiled_fresh(b, jaxpr):
    """Backend ``b``'s code for ``jaxpr``, waited for, wrapped by ``_fresh``."""
    if not b.slow_compile:
        return _fresh(b.compile(jaxpr), jaxpr)
    fn = b.compiled(jaxpr)      # (at hand: no compile, nothing to keep)
    if fn is None:
        with _SignalsKept():
            fn = b.compile(jaxpr)
    return _fresh(fn, jaxpr)


class _SignalsKept:
    """A block (a slow backend's compile) in which no signal handler's exception is lost.
    Python runs the main thread's handlers between any two bytecodes, also those of a
    callback that C code makes (llvmlite's object-cache callbacks during numba's compile),
    a finalizer or a weakref callback, where an exception is printed as "Exception ignored
    ..." and dropped: Ctrl-C there was lost, and the loop the compile was for then ran for
    ever (tests/test_interrupt_audit.py's eager ``while_loop`` under load).  Each Python
    handler is wrapped for the block: an exception it raises is kept, and raised when the
    block ends without raising it (at the end of the compile: late, never lost); a block
    that raises something else raises the handler's exception from it.  Handlers that
    return are called once, as always.  Only in the main thread (where Python runs
    handlers), and only for signals whose handler is a Python function."""

    __slots__ = ("saved", "raised")

    def __enter__(self):
        self.saved, self.raised = [], []
        if threading.get_ident() != threading.main_thread().ident:
            return self
        raised = self.raised
        try:
            for sig in _HANDLED:
                old = _getsignal(sig)
                if not callable(old):
                    continue

                def kept(signum, frame, old=old):
                    try:
                        return old(signum, frame)
                    except BaseException as e:
                        raised.append(e)
                        raise
                self.saved.append((sig, old, kept))     # (before: a signal may come next)
                try:
                    _signal(sig, kept)
                except (ValueError, OSError):   # (an embedded interpreter without signals)
                    self.saved.pop()
        except BaseException:   # (a handler that raised here: no wrapper is left installed)
            self.raised.clear()
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, kind, exc, tb):
        _restore(self.saved, 0)
        if not self.raised:
            return False
        if any(exc is e for e in self.raised):     # (the handler's exception propagated)
            return False
        if exc is None:
            raise self.raised[0]
        raise self.raised[0] from exc


def _restore(saved, k):
    """The handlers ``saved[k:]`` replaced, put back (each unless something installed
    another since), all of them even where a handler raises in between."""
    if k < len(saved):
        sig, old, kept = saved[k]
        try:
            if _getsignal(sig) is kept:
                _signal(sig, old)
        finally:
            _restore(saved, k + 1)


# the signals whose Python handlers ``_SignalsKept`` wraps: those a user or a test runner
# handles (SIGINT, a timeout's SIGALRM, SIGTERM, ...), not those Python cannot handle
_HANDLED = tuple(s for s in (getattr(signal, n, None) for n in (
    "SIGINT", "SIGTERM", "SIGALRM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGVTALRM",
    "SIGPROF", "SIGXCPU", "SIGBREAK")) if s is not None)
try:    # (signal.getsignal and signal.signal convert to enums: ~6 us a call, 0.04 us here)
    from _signal import getsignal as _getsignal, signal as _signal
except ImportError:  # pragma: no cover - CPython has it
    _getsignal, _signal = signal.getsignal, signal.signal


def set_tiered(value):
    """``config.update("jit_tiered", value)``; ``None`` restores the default."""
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"config.update('jit_tiered', ...): expected True, False or None, "
                        f"got {value!r}")
    _override["jit_tiered"] = value


def tiered():
    """Whether slow backends run a program's first calls on the NumPy backend."""
    value = _override["jit_tiered"]
    if value is None:
        env = os.environ.get(_TIERED_ENV, "1").strip().lower()
        value = env not in ("0", "false", "no", "off")
    return value


def compile_program(jaxpr, backend=None):
    """The callable running ``jaxpr`` (no constvars) on ``backend``: the one place
    where calls obtain compiled code (``jit``, ``checkpoint``, eager loops).

    A slow backend's code is returned when it is at hand; otherwise, unless
    tiering is off, a ``Tiered`` callable that runs the NumPy backend's code
    until the native code is ready (see the module docstring).  Outputs that are inputs
    or repeats are returned as fresh copies (``_FreshOutputs``), on every backend and tier."""
    b = get_backend(backend)
    if not b.slow_compile or not tiered():
        return _compiled_fresh(b, jaxpr)
    fn = b.compiled(jaxpr)
    if fn is not None:
        return _fresh(fn, jaxpr)
    t = _TIERED.get(jaxpr, b.name)
    if t is None:
        with _TIER_LOCK:
            t = _TIERED.get(jaxpr, b.name)
            if t is None:
                t = _TIERED.set(jaxpr, Tiered(jaxpr, b), b.name)
    return t.native or t    # (both tiers' code copies the outputs: ``Tiered``)


def _fresh(fn, jaxpr):
    """``fn``, wrapped in ``_FreshOutputs`` where some output of ``jaxpr`` is to be copied."""
    fresh = _aliased_outputs(jaxpr)
    return fn if not fresh else (_FreshOutputs if len(fresh) > 1 else _FreshOutput)(fn, fresh)


_ALIASED = core.ProgramMemo("compile_program: the outputs returned as fresh copies")

#: How equations' outputs relate to memory, read by ``_aliased_outputs`` and filled by the
#: backends' modules (this one sits below the primitives; ``numpy_backend`` fills them).
#: ``FRESH[prim] = rule``: ``rule(eqn)`` is True where every output is a new array on every
#: backend and tier (never an input, a view of one or memory the program keeps), False where
#: not, or one bool per output; ``None`` for True.  ``FOREIGN``: outputs held by the user's code (callbacks).
#: ``OVERLAPPING``: an output may overlap itself (NumPy's broadcast views, read-only).
FRESH = {}
FOREIGN = set()
OVERLAPPING = set()
#: ``CARRIES[prim] = rule``: a loop whose output k is its input ``i`` (the carry's initial
#: value, when it runs zero times) or, ``new``, an array its body allocates: ``rule(eqn)`` is
#: one ``(i, new)`` per output.
CARRIES = {}
#: ``(eqns, outvars)`` of a program as the backends run it: after their common-subexpression
#: pass (``passes.simplify``, which ``numpy_backend`` puts here), two equal computations are
#: one array.
AS_RUN = [lambda jaxpr: (jaxpr.eqns, jaxpr.outvars)]
_OUTSIDE = object()   # the root of memory the program does not own (a literal, a callback's)


def _fresh_outputs(eqn):
    """One bool per output of ``eqn``: whether it is a new array on every backend."""
    n = len(eqn.outputs)
    prim = eqn.prim
    rule = FRESH.get(prim, False)
    if rule is None or rule is False:
        return (rule is None,) * n
    r = rule(eqn)
    return (bool(r),) * n if isinstance(r, bool) else tuple(r)


def _output_roots(jaxpr, in_roots):
    """For each output of ``jaxpr``, the memory it may share: a set of roots, each an
    input's (``in_roots``), a value some equation allocated (its ``Var``), or ``_OUTSIDE``.
    An equation passes its inputs' roots to every output it does not allocate (a view, a
    loop's carry, an identity as numba lowers ``stop_gradient``); a call's program is
    followed."""
    roots = dict(zip(jaxpr.invars, in_roots))
    for v in jaxpr.constvars:
        roots[v] = frozenset([_OUTSIDE])
    outside = frozenset([_OUTSIDE])

    def of(a):
        return roots.get(a, outside) if type(a) is Var else outside
    eqns, outvars = AS_RUN[0](jaxpr)
    for eqn in eqns:
        prim = eqn.prim
        if prim in FOREIGN:
            outs = [outside] * len(eqn.outputs)
        elif prim.call_param is not None and prim not in FRESH:
            outs = _output_roots(eqn.params[prim.call_param], [of(a) for a in eqn.inputs])
        elif prim in CARRIES:
            shared = frozenset().union(*[of(a) for a in eqn.inputs])
            outs = [of(eqn.inputs[i]) | {v} if new else shared
                    for v, (i, new) in zip(eqn.outputs, CARRIES[prim](eqn))]
        else:
            shared = frozenset().union(*[of(a) for a in eqn.inputs]) if eqn.inputs else outside
            outs = [frozenset([v]) if new else shared
                    for v, new in zip(eqn.outputs, _fresh_outputs(eqn))]
            if prim in OVERLAPPING:
                outs = [o | outside for o in outs]
        for v, r in zip(eqn.outputs, outs):
            roots[v] = r
    return [of(a) for a in outvars]


def fresh_in(program):
    """One bool per output of ``program`` (a loop's body, a branch): whether it is an array
    the program allocates (shares no memory with its inputs, its constants or anything
    outside); for the ``FRESH`` rules of primitives carrying programs."""
    mark = frozenset([_OUTSIDE])
    return [not r or _OUTSIDE not in r for r in _output_roots(program, [mark] * len(program.invars))]


def _aliased_outputs(jaxpr):
    """The positions of the outputs of ``jaxpr`` that may share memory with one of its
    inputs (a jitted program's constants are its first inputs), with memory it does not
    own (a literal, a callback's result), with itself (a broadcast) or with an earlier
    output, on some backend or tier (memoized; ``_output_roots``)."""
    fresh = _ALIASED.get(jaxpr)
    if fresh is None:
        # (a weakly typed scalar is a Python number when the program runs: immutable)
        ins = [frozenset() if v.aval.weak_type and not v.aval.shape else frozenset([v])
               for v in jaxpr.invars]
        taken = set().union(*ins, [_OUTSIDE])
        fresh = []
        try:
            roots = _output_roots(jaxpr, ins)
        except Exception:  # noqa: BLE001 - a program this walk cannot read: copy every output
            roots = [frozenset([_OUTSIDE])] * len(jaxpr.outvars)
        for k, r in enumerate(roots):
            if r & taken:
                fresh.append(k)
            else:
                taken |= r
        fresh = _ALIASED.set(jaxpr, tuple(fresh))
    return fresh


class _FreshOutputs:
    """A compiled program whose outputs at ``fresh`` (``_aliased_outputs``) are copies:
    as JAX's jit, whose results are new buffers, ``jit(lambda x: x)(a)`` is not ``a``
    itself (writing into it changed the caller's array), nor ``jit(lambda: (y, c))()``'s
    second result the program's captured constant (writing into it changed every later
    call's result), nor two results of ``lambda x: (x, x)`` one array, on whichever tier
    or backend (the NumPy backend returned the array it was given; the numba backend an
    input it took as is, or a copy when its buffers held it).  Other programs are not
    wrapped (no cost)."""

    __slots__ = ("fn", "fresh")

    def __init__(self, fn, fresh):
        self.fn, self.fresh = fn, fresh

    def __call__(self, *args):
        outs = list(self.fn(*args))
        for k in self.fresh:
            o = outs[k]
            if isinstance(o, np.ndarray):   # (a number, Python's or NumPy's, is immutable)
                outs[k] = np.array(o, copy=True)
        return outs

    def bind(self, consts):
        """As the backend's ``bind`` (``api/staging._bound``), copies still made."""
        bind = getattr(self.fn, "bind", None)
        return type(self)(bind(consts) if bind is not None else
                          functools.partial(self.fn, *consts), self.fresh)


class _FreshOutput(_FreshOutputs):
    """``_FreshOutputs`` of one output (a loop's carry, a view): ~0.15 us less a call."""

    __slots__ = ()

    def __call__(self, *args):
        outs = self.fn(*args)
        k = self.fresh[0]
        o = outs[k]
        if isinstance(o, np.ndarray):
            outs = list(outs)
            outs[k] = np.array(o, copy=True)
        return outs


_TIERED = core.ProgramMemo("compile_program: the Tiered callable per backend")
_TIER_LOCK = threading.Lock()
EAGER_COMPILE_S = 5.0   # a compile estimated to take at most this starts at the second call


_SIZE = core.ProgramMemo("backends: program_size")


def program_size(jaxpr):
    """The number of equations of ``jaxpr``, counting those of the programs it
    carries (memoized)."""
    n = _SIZE.get(jaxpr)
    if n is None:
        n = 0
        for eqn in jaxpr.eqns:
            n += 1
            for sub in core.subjaxprs(eqn.prim, eqn.params):
                n += program_size(sub)
        _SIZE.set(jaxpr, n)
    return n


class Tiered:
    """Runs a program on the NumPy backend until ``backend`` has compiled it.

    The compile is queued at the second call (a program called once never
    pays for it) and runs on the background compile thread; from then on
    every call runs the native code.  ``on_native(callback)`` registers
    ``callback(fn)``, called once with the native callable (``jit``'s call
    cache replaces this object by it, so a call costs nothing more after the
    switch).  ``wait()`` blocks until the switch.  If the backend fails, its
    own fallback (the NumPy backend, after a warning) becomes the "native"
    code, so no call ever loses its result.
    """

    __slots__ = ("jaxpr", "backend", "fallback", "native", "calls", "queued", "_callbacks",
                 "_done", "estimate", "spent", "__weakref__")

    def __init__(self, jaxpr, backend):
        self.jaxpr = jaxpr
        self.backend = backend
        self.fallback = _compiled_fresh(get_backend("numpy"), jaxpr)
        self.native = None
        self.calls = 0
        self.queued = False
        self._callbacks = []
        self._done = threading.Event()
        self.estimate = backend.compile_estimate(jaxpr)   # seconds
        self.spent = 0.0        # seconds of calls on the NumPy backend so far

    def __call__(self, *args):
        native = self.native
        if native is not None:
            return native(*args)
        self.calls += 1
        if self.calls > 1 and not self.queued and (
                self.estimate <= EAGER_COMPILE_S or self.spent >= 0.5 * self.estimate):
            self.start()
        # (NumPy's floating-point warnings are off here: the native code never warns, and
        # whether a call warns must not depend on which tier ran it, as in JAX's jit)
        t0 = time.perf_counter()
        with np.errstate(all="ignore"):
            out = self.fallback(*args)
        self.spent += time.perf_counter() - t0
        return out

    def start(self):
        """Queue the native compile now (idempotent)."""
        with _TIER_LOCK:
            if self.queued:
                return
            self.queued = True
            _PENDING.add(self)
        _compile_queue().put(self)

    def wait(self, timeout=None):
        """Block until the native code is ready (queueing its compile if needed); returns it."""
        self.start()
        if not self._done.wait(timeout):
            raise TimeoutError(f"the {self.backend.name} backend has not finished compiling "
                               f"this program in {timeout} s")
        return self.native

    def on_native(self, callback):
        with _TIER_LOCK:
            if self.native is None:
                self._callbacks.append(callback)
                return
        callback(self.native)

    def _compile(self):
        fn = None
        try:
            with _COMPILING:             # (held while the backend compiles: _at_exit waits)
                if not _EXITING.is_set():    # (no compile starts while the interpreter exits)
                    with _ABORT:
                        _RUNNING[0] = threading.get_ident()
                    try:
                        fn = _compiled_fresh(self.backend, self.jaxpr)
                    finally:
                        with _ABORT:
                            _RUNNING[0] = None
        except _Abandoned:               # (the interpreter exits: the NumPy code stays)
            fn = None
        except BaseException as e:  # noqa: BLE001 - the NumPy code keeps serving the calls
            import warnings
            try:
                warnings.warn(f"{self.backend.name} backend: compiling a program in the background "
                              f"failed ({type(e).__name__}: {e}); it keeps running on the NumPy "
                              f"backend", RuntimeWarning, stacklevel=2)
            except Exception:  # noqa: BLE001 - warnings as errors: no caller in this thread
                pass
        finally:
            self._finish(self.fallback if fn is None else fn)

    def _finish(self, fn):
        """The native code is ``fn`` (the fallback where none was made): every waiter and
        callback is served, whatever happened (the compile thread lives on)."""
        with _TIER_LOCK:
            self.native = fn
            callbacks, self._callbacks = self._callbacks, []
            _PENDING.discard(self)
        self._done.set()
        for cb in callbacks:
            try:
                cb(fn)
            except Exception:  # noqa: BLE001 - a failed swap: the Tiered keeps serving calls
                pass


_QUEUE = []          # [queue.SimpleQueue] once the compile thread runs
COMPILE_THREAD = "tangentia-compile"   # the background compile thread's name
_EXITING = threading.Event()
_COMPILING = threading.Lock()  # held by the compile thread while a compile runs
_PENDING = weakref.WeakSet()   # queued Tiered programs without their native code yet
_ABORT = threading.Lock()      # guards _RUNNING
_RUNNING = [None]              # the compile thread's ident while it runs a backend's compile


class _Abandoned(BaseException):
    """Raised in the compile thread while the interpreter exits: the compile in progress
    stops at its next Python instruction (a BaseException, so that no ``except Exception``
    of the backend's or numba's keeps it)."""


_FORK_HELD = []   # the _COMPILING the forking thread holds across a fork (released after)
FORK_WAIT_S = 120.0   # the longest a fork waits for the compile in progress


def _before_fork():
    """``fork`` waits until the background compile in progress has ended, and no other
    starts until the fork is done: a child copies the parent's memory but only the forking
    thread, so a lock the compile thread held at that instant stays held in the child for
    good.  The compile thread holds many inside a compile (the backend's loader, numba's
    compiler lock, the machine-code cache's, the import system's module locks while numba
    is first imported): a child forked during a compile (a ``multiprocessing`` pool made
    while a tiered program compiles) hung at its first numba compile.  The wait polls, so
    Ctrl-C stops it; after FORK_WAIT_S it warns and the fork goes on."""
    if not _QUEUE or _RUNNING[0] == threading.get_ident():   # no compile thread; or fork
        return                                               # from inside a compile
    lock = _COMPILING
    deadline = time.monotonic() + FORK_WAIT_S
    while not lock.acquire(timeout=0.05):
        if time.monotonic() > deadline:
            import warnings
            warnings.warn(f"os.fork() while tangentia compiles a program in the background: "
                          f"the compile did not end in {FORK_WAIT_S:g} s; the child may hang "
                          "at its first numba compile (compile before forking: "
                          "tangentia.compiler.backend.wait_for_compiles(), or use the 'spawn' "
                          "start method)", RuntimeWarning, stacklevel=2)
            return
    _FORK_HELD.append(lock)


def _after_fork_in_parent():
    while _FORK_HELD:
        _FORK_HELD.pop().release()


def _after_fork_in_child():
    """A child made by ``fork`` has no compile thread (only the forking thread survives):
    it starts its own at its first compile, and what was queued is queued again when it is
    next called or waited for (before, ``wait`` hung and those programs stayed on the NumPy
    tier); the locks are new (the forking thread held _COMPILING: ``_before_fork``)."""
    global _TIER_LOCK, _COMPILING, _ABORT
    _FORK_HELD.clear()
    _TIER_LOCK = threading.Lock()
    _COMPILING = threading.Lock()
    _ABORT = threading.Lock()
    _RUNNING[0] = None
    _QUEUE.clear()
    for t in list(_PENDING):
        if t.native is None:
            t.queued = False
    _PENDING.clear()


_FORK_HOOKS = []   # [True] once registered


def _register_fork_hooks():
    """Registered when the compile thread starts, after logging is imported: fork runs the
    ``before`` hooks last registered first, so that ours waits for the compile before
    logging's takes its lock (numba's imports, in the compile thread, call
    ``logging.getLogger``: registered the other way round, the fork and the compile waited
    for each other)."""
    if _FORK_HOOKS or not hasattr(os, "register_at_fork"):
        return
    import logging  # noqa: F401
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)
    _FORK_HOOKS.append(True)


def _compile_queue():
    if not _QUEUE:
        with _TIER_LOCK:
            if not _QUEUE:
                _register_fork_hooks()
                q = queue.SimpleQueue()
                threading.Thread(target=_compile_worker, args=(q,), daemon=True,
                                 name=COMPILE_THREAD).start()
                _QUEUE.append(q)
    return _QUEUE[0]


def _compile_worker(q):
    # (never ends, never dies: a daemon thread; while the interpreter exits, each program
    # queued gets its NumPy code as its native code at once and each marker is released,
    # so nothing waits on a compile that will not come)
    while True:
        t = q.get()
        try:
            t._compile()
        except BaseException:  # noqa: BLE001 - (``_compile`` serves its waiters itself)
            pass


def _at_exit():
    """While the interpreter exits, no new compile starts, and the one running is abandoned
    at its next Python instruction; exit goes on once it has stopped.

    A compile runs in LLVM with the GIL released (llvmlite's calls); an interpreter that
    went on to its end under it ran LLVM's static destructors while the compile thread was
    still inside LLVM, and the process died (SIGSEGV, SIGABRT: "UNREACHABLE executed", 3 of
    18 runs of a script whose second call queued three compiles).  Waiting for the whole
    compile instead made a script that ended during it wait for the compiler (the pendulum's
    ``hessian`` through ``odeint``: 8 s of results, then 9 s more before the process ended).
    Now the compile thread gets an asynchronous ``_Abandoned`` exception: Python raises it at
    the thread's next bytecode, that is once the C call it is in (LLVM's included) returns,
    and exit waits only until then.  Its program keeps its NumPy code and leaves no cache
    entry (the next run compiles it again, as it would have without tiering); queued
    compiles are skipped.  Ctrl-C stops the wait (it polls, so the main thread handles it)."""
    _EXITING.set()
    set_async = None
    while True:
        with _ABORT:
            if _RUNNING[0] is not None:
                set_async = set_async or _abandoner()
                set_async(_RUNNING[0], _Abandoned)
        if _COMPILING.acquire(timeout=0.05):
            _COMPILING.release()
            return


def _abandoner():
    """``PyThreadState_SetAsyncExc``, and a hook that keeps a dropped ``_Abandoned`` quiet.
    Raised inside a Python callback that C code makes (llvmlite's object cache during
    numba's compile), an exception is printed as "Exception ignored" and dropped; ``_at_exit``
    raises it again every 50 ms until the compile has stopped."""
    import ctypes
    import sys
    set_async = ctypes.pythonapi.PyThreadState_SetAsyncExc
    set_async.argtypes = (ctypes.c_ulong, ctypes.py_object)
    previous = sys.unraisablehook

    def hook(unraisable):
        if not isinstance(unraisable.exc_value, _Abandoned):
            previous(unraisable)
    sys.unraisablehook = hook
    return set_async


atexit.register(_at_exit)


def wait_for_compiles(timeout=None):
    """Block until every queued background compile has finished (benchmarks, tests)."""
    if not _QUEUE:
        return
    done = threading.Event()
    marker = _Marker(done)
    _QUEUE[0].put(marker)
    if not done.wait(timeout):
        raise TimeoutError(f"background compiles still running after {timeout} s")


class _Marker:
    def __init__(self, done):
        self.done = done

    def _compile(self):
        self.done.set()


# ---------------------------------------------------------------------------
# Eager evaluation of call-like primitives: the equation alone is compiled by
# the default backend (so eager loops run compiled bodies, as JAX's do).

_EQN_CACHE = {}
_EQN_CACHE_MAX = 4096  # distinct (primitive, types, params); cleared when full
_EQN_LOCK = threading.Lock()


def _params_key(params):
    try:
        key = tuple(sorted(params.items()))
        hash(key)
        return key
    except TypeError:
        return None


def run_equation(prim, args, params):
    """Evaluate ``prim[params](*args)`` by compiling the single equation."""
    avals = tuple(core.get_aval(a).strip_weak() for a in args)
    pkey = _params_key(params)
    backend = get_backend()
    key = None if pkey is None else (backend.name, prim, avals, pkey)
    fn = _EQN_CACHE.get(key) if key is not None else None
    if fn is None:
        invars = [Var(a) for a in avals]
        out = prim.abstract_eval(*avals, **params)
        out_avals = list(out) if prim.multiple_results else [out]
        outvars = [Var(a.strip_weak()) for a in out_avals]
        jaxpr = Jaxpr([], invars, [Eqn(prim, list(invars), outvars, params)], outvars)
        fn = compile_program(jaxpr, backend.name)
        if key is not None:
            with _EQN_LOCK:
                if len(_EQN_CACHE) >= _EQN_CACHE_MAX:
                    _EQN_CACHE.clear()
                fn = _EQN_CACHE.setdefault(key, fn)
    outs = fn(*args)
    return outs if prim.multiple_results else outs[0]
