"""Signals in compiled loops, without numba: the flag compiled loops poll, the poll that runs
Python's handlers, and ``call_interruptible``, which runs a program whose loops poll.

Compiled code never returns to the interpreter while it runs (and runs without the GIL), so
Python's signal handlers (which the interpreter runs between two bytecodes) cannot stop it.
Loops of generated programs therefore poll ``helpers._interrupted()``: an atomic load of the
C ``int`` at the symbol ``tangentia_sigint_flag`` registered with LLVM's linker (so cached
machine code finds it in any process), and where it is set, a call of
``tangentia_sigint_poll`` (through the pointer ``tangentia_sigint_check``), which in the main
thread takes the GIL and runs the pending Python handlers as the interpreter would between
two bytecodes: if a handler raises (``KeyboardInterrupt``, a timeout's exception, the user's
exception), the exception is kept and the loop leaves the program (``CompiledLoopInterrupted``),
and ``call_interruptible`` raises that exception; if the handlers return, the loop goes on.
Other threads' loops never stop for a signal (Python's handlers run in the main thread).

**The flag is CPython's own** where its layout is known (CPython 3.11, 3.12 and 3.13,
checked as the module is imported: ``_cpython_pending``), one CPython's C handler sets for
every signal that has a Python handler (``signal.signal(SIGTERM, f)``, ``signal.alarm``
with a ``SIGALRM`` handler, pytest-timeout's signal method, SIGINT's
``default_int_handler``), and the poll is the interpreter's own function that clears it
and runs the handlers: on 3.11 ``_PyRuntime.ceval.signals_pending`` and
``Py_MakePendingCalls`` (which also recomputes the eval breaker), on 3.12 and 3.13
``_PyRuntime.signals.is_tripped`` and ``PyErr_CheckSignals``.  Nothing is
installed or armed: a call costs nothing, every signal with a Python handler stops a loop,
and a signal without one (SIG_DFL, SIG_IGN) keeps its default action (SIGTERM kills the
process in the loop, as in a long C call).  Elsewhere (another CPython, a layout that does
not check out) the flag is our own ``int``, which covers SIGINT alone: while SIGINT's
handler is a Python function, ``call_interruptible`` installs a C-level handler with
``sigaction`` for the duration of a call of the main thread and restores the previous one
exactly afterwards (two ``rt_sigaction`` system calls, ~1.3 us a call); the handler sets
the flag and does what Python's own C handler does (``PyErr_SetInterruptEx``,
async-signal-safe, ``errno`` kept), and the poll clears the flag and runs
``PyErr_CheckSignals``.

The handler, the poll and the two ``sigaction`` calls are a few lines of LLVM IR compiled
with llvmlite (no numba: the machine-code cache, ``objcache``, runs programs in processes
that never import it); the calls are Python callables made by numba's ``_dynfunc`` C
extension (as numba's own entry points are), loaded by path.
"""
from __future__ import annotations

import ctypes
import importlib.machinery
import importlib.util
import os
import signal
import sys
import threading

from llvmlite import binding as _llvm

__all__ = ["CompiledLoopInterrupted", "call_interruptible", "raise_handled", "FLAG_SYMBOL", "CHECK_SYMBOL", "extension"]


class CompiledLoopInterrupted(Exception):
    """Raised by a compiled loop whose poll ran a signal handler that raised
    (``call_interruptible`` raises the handler's exception instead; numba raises only
    ``Exception`` subclasses)."""


FLAG_SYMBOL = "tangentia_sigint_flag"
CHECK_SYMBOL = "tangentia_sigint_check"     # a pointer to ``tangentia_sigint_poll``, set up lazily
_SIGACTION_BYTES = 512   # more than any libc's struct sigaction (152 bytes on glibc x86-64)
_FLAG = ctypes.c_int32(0)
_CHECK = ctypes.c_void_p(0)
_MAIN = ctypes.c_ulong(threading.main_thread().ident or 0)   # PyThread_get_thread_ident's type
_EXC = (ctypes.c_void_p * 3)()         # the exception a handler raised in a poll (owned)
_NEW_ACTION = ctypes.create_string_buffer(_SIGACTION_BYTES)    # our handler, the old flags/mask
_OLD_ACTION = ctypes.create_string_buffer(_SIGACTION_BYTES)    # what the call replaced


class _Runtime311(ctypes.Structure):
    """The head of CPython 3.11's ``_PyRuntimeState`` (Include/internal/pycore_runtime.h),
    up to ``ceval.signals_pending`` (``ceval`` holds pointers: aligned as one)."""
    _fields_ = [("_initialized", ctypes.c_int), ("preinitializing", ctypes.c_int),
                ("preinitialized", ctypes.c_int), ("core_initialized", ctypes.c_int),
                ("initialized", ctypes.c_int), ("_finalizing", ctypes.c_void_p),
                ("interpreters_mutex", ctypes.c_void_p), ("interpreters_head", ctypes.c_void_p),
                ("interpreters_main", ctypes.c_void_p), ("interpreters_next_id", ctypes.c_int64),
                ("xidregistry_mutex", ctypes.c_void_p), ("xidregistry_head", ctypes.c_void_p),
                ("main_thread", ctypes.c_ulong), ("exitfuncs", ctypes.c_void_p * 32),
                ("nexitfuncs", ctypes.c_int), ("ceval_align", ctypes.c_void_p * 0),
                ("signals_pending", ctypes.c_int32)]


def _cpython_pending():
    """The address of the flag CPython's C handler sets for every signal with a Python
    handler, and the C function that runs the handlers and clears it, where the layout is
    known and checks out; else None.  CPython 3.11: ``_PyRuntime.ceval.signals_pending``,
    cleared by ``Py_MakePendingCalls``; the fields around it must hold what the
    interpreter says they hold (initialized flags, the main thread, the main interpreter,
    a small count of exit functions).  CPython 3.12 and 3.13: ``_PyRuntime.signals.
    is_tripped`` (3.11's is a static of signalmodule.c), cleared by ``PyErr_CheckSignals``
    (3.12's ``Py_MakePendingCalls`` no longer runs signal handlers): ``_signals_runtime_state``
    (``_runtime_signals``)."""
    if sys.implementation.name != "cpython" or sys.platform == "win32" \
            or os.environ.get("TANGENTIA_SIGNAL_FLAG", "") == "own":
        return None
    if sys.version_info[:2] in ((3, 12), (3, 13)):
        flag = _runtime_signals()
        return None if flag is None else (flag, "PyErr_CheckSignals")
    if sys.version_info[:2] != (3, 11):
        return None
    try:
        api = ctypes.pythonapi
        rt = _Runtime311.in_dll(api, "_PyRuntime")
        main_interp = ctypes.cast(api.PyInterpreterState_Main, ctypes.CFUNCTYPE(ctypes.c_void_p))()
    except (AttributeError, ValueError, OSError):
        return None
    ok = (rt._initialized == 1 and rt.core_initialized == 1 and rt.initialized == 1
          and rt.main_thread == threading.main_thread().ident
          and rt.interpreters_main == main_interp and main_interp
          and 0 <= rt.nexitfuncs <= 32 and rt.signals_pending in (0, 1))
    return (ctypes.addressof(rt) + _Runtime311.signals_pending.offset, "Py_MakePendingCalls") if ok else None


_SIGNALS_AT = {(3, 12): 464, (3, 13): 1080}   # offsetof(_PyRuntimeState, signals), x86-64/aarch64 Linux


def _runtime_signals():
    """The address of ``_PyRuntime.signals.is_tripped`` of CPython 3.12/3.13
    (Include/internal/pycore_signal.h), or None where the structure is not found whole:

        struct _signals_runtime_state {
            struct { int tripped; PyObject *func; } handlers[NSIG];   (16 bytes each)
            struct { sig_atomic_t fd; int warn_on_full_buffer; } wakeup;
            int is_tripped;
            PyObject *default_handler, *ignore_handler; ...

    It is where every ``handlers[s].func`` is the handler ``_signal.getsignal(s)`` returns
    (or NULL, for None) and the two handlers after ``is_tripped`` are ``SIG_DFL``'s and
    ``SIG_IGN``'s objects: looked for at its offset in the release's ``_PyRuntimeState``,
    else among the first 16 KiB of ``_PyRuntime`` (a patch release that moved it), at
    pointer alignment."""
    if ctypes.sizeof(ctypes.c_void_p) != 8 or ctypes.sizeof(ctypes.c_int) != 4:
        return None
    try:
        import _signal
        import struct
        base = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime"))
        nsig = int(signal.NSIG)
        handlers = [None] + [_signal.getsignal(k) for k in range(1, nsig)]
        dfl, ign = id(_signal.SIG_DFL), id(_signal.SIG_IGN)
        span = 16384
        mem = ctypes.string_at(base, span)
    except (AttributeError, ValueError, OSError, ImportError):
        return None
    size = 16 * nsig + 32

    def at(off):    # the structure at ``off``, checked; the offset of is_tripped
        if off < 0 or off % 8 or off + size > span:
            return None
        words = struct.unpack_from(f"<{2 * nsig + 4}q", mem, off)
        if any(words[2 * k + 1] != id(h) and (h is not None or words[2 * k + 1] != 0)
               for k, h in enumerate(handlers) if k):
            return None
        tail = struct.unpack_from("<iiiiqq", mem, off + 16 * nsig)   # fd, warn, is_tripped, pad, dfl, ign
        if tail[2] not in (0, 1) or tail[4] != dfl or tail[5] != ign:
            return None
        return off + 16 * nsig + 8
    sigint = int(signal.SIGINT)
    found = at(_SIGNALS_AT.get(sys.version_info[:2], -1))
    if found is None:   # (SIGINT's handler's address, then the whole structure around it)
        needle = struct.pack("<q", id(handlers[sigint]))
        k = mem.find(needle)
        while found is None and k >= 0:
            found = at(k - 16 * sigint - 8)
            k = mem.find(needle, k + 1)
    return None if found is None else base + found


_PENDING, _POLL = _cpython_pending() or (None, None)
CPYTHON_FLAG = _PENDING is not None   # loops poll CPython's flag: every Python-handled signal
_SYMBOLS = {FLAG_SYMBOL: _FLAG, CHECK_SYMBOL: _CHECK, "tangentia_sigint_main": _MAIN,
            "tangentia_sigint_exc": _EXC, "tangentia_sigint_new": _NEW_ACTION,
            "tangentia_sigint_old": _OLD_ACTION}
for _name, _obj in _SYMBOLS.items():
    _llvm.add_symbol(_name, _PENDING if _name == FLAG_SYMBOL and CPYTHON_FLAG else ctypes.addressof(_obj))
# Until ``_setup`` compiles the poll (the first ``call_interruptible``), a loop that sees
# CPython's flag set (a signal for a Python handler) calls this one, which leaves the signal
# to Python: the handlers run when the program returns, as after a long C call.
_LATER = ctypes.CFUNCTYPE(ctypes.c_int32)(lambda: 0)
_CHECK.value = ctypes.cast(_LATER, ctypes.c_void_p).value

# the handler (async-signal-safe: a store, and Python's own recording of the signal), the
# poll's slow path, and arm/disarm, each a CPython-callable wrapper
# ``(closure, args, kwargs) -> int`` around sigaction(SIGINT, new, old)
_IR = """
@tangentia_sigint_flag = external global i32
@tangentia_sigint_main = external global {ulong}
@tangentia_sigint_exc = external global [3 x i8*]
@tangentia_sigint_new = external global i8
@tangentia_sigint_old = external global i8
declare i32 @sigaction(i32, i8*, i8*)
declare i8* @PyLong_FromLong(i64)
declare i32 @PyErr_SetInterruptEx(i32)
declare i32* @{errno}()
declare {ulong} @PyThread_get_thread_ident()
declare i32 @PyGILState_Ensure()
declare void @PyGILState_Release(i32)
declare i32 @{check}()
declare void @PyErr_Fetch(i8**, i8**, i8**)

define void @tangentia_on_sigint(i32 %sig) {{
  store atomic i32 1, i32* @tangentia_sigint_flag monotonic, align 4
  %e = call i32* @{errno}()
  %saved = load i32, i32* %e
  %r = call i32 @PyErr_SetInterruptEx(i32 %sig)
  store i32 %saved, i32* %e
  ret void
}}

define i32 @tangentia_sigint_poll() {{
entry:
  %me = call {ulong} @PyThread_get_thread_ident()
  %main = load {ulong}, {ulong}* @tangentia_sigint_main
  %is = icmp eq {ulong} %me, %main
  br i1 %is, label %handle, label %other
other:
  ret i32 0
handle:{clear}
  %g = call i32 @PyGILState_Ensure()
  %r = call i32 @{check}()
  %bad = icmp ne i32 %r, 0
  br i1 %bad, label %keep, label %done
keep:
  %p0 = getelementptr [3 x i8*], [3 x i8*]* @tangentia_sigint_exc, i32 0, i32 0
  %p1 = getelementptr [3 x i8*], [3 x i8*]* @tangentia_sigint_exc, i32 0, i32 1
  %p2 = getelementptr [3 x i8*], [3 x i8*]* @tangentia_sigint_exc, i32 0, i32 2
  call void @PyErr_Fetch(i8** %p0, i8** %p1, i8** %p2)
  br label %done
done:
  call void @PyGILState_Release(i32 %g)
  %o = zext i1 %bad to i32
  ret i32 %o
}}

define i8* @tangentia_arm(i8* %self, i8* %args, i8* %kws) {{
  %r = call i32 @sigaction(i32 {sigint}, i8* @tangentia_sigint_new, i8* @tangentia_sigint_old)
  %w = sext i32 %r to i64
  %o = call i8* @PyLong_FromLong(i64 %w)
  ret i8* %o
}}

define i8* @tangentia_disarm(i8* %self, i8* %args, i8* %kws) {{
  %r = call i32 @sigaction(i32 {sigint}, i8* @tangentia_sigint_old, i8* null)
  %w = sext i32 %r to i64
  %o = call i8* @PyLong_FromLong(i64 %w)
  ret i8* %o
}}
"""


def extension(name, rel):
    """numba's C extension ``name`` (``numba/<rel>``), without importing numba's package."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec("numba")
    if spec is None or not spec.origin:
        raise ImportError("numba is not installed")
    base = os.path.dirname(spec.origin)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(base, rel + suffix)
        if os.path.exists(path):
            s = importlib.util.spec_from_file_location(name, path)
            m = importlib.util.module_from_spec(s)
            s.loader.exec_module(m)
            return m
    raise ImportError(f"no {name}")


class _Sigint:
    ready = None          # None: not set up yet; False: unavailable here
    armed = False         # a call of the main thread has our handler installed
    arm = disarm = None   # the callables of the two sigaction calls
    engine = None         # the JIT holding the handler (kept alive: its address is installed)


_MAIN_IDENT = threading.main_thread().ident
_get_ident = threading.get_ident
_getsignal = signal.getsignal
try:
    import _signal
    _getsignal = _signal.getsignal   # (signal.getsignal converts to an enum: ~5 us)
except ImportError:  # pragma: no cover - CPython always has it
    pass
_DEFAULT_INT_HANDLER = signal.default_int_handler
def jit_ir(text):
    """An LLVM module of IR ``text`` compiled for this CPU (an MCJIT engine, finalized):
    the few functions written in IR here and in ``pool``, which need no numba.  The caller
    keeps the engine alive as long as its code may be called."""
    _llvm.initialize_native_target()
    _llvm.initialize_native_asmprinter()
    mod = _llvm.parse_assembly(text)
    mod.verify()
    engine = _llvm.create_mcjit_compiler(mod, _llvm.Target.from_default_triple().create_target_machine())
    engine.finalize_object()
    return engine


_SETUP_LOCK = threading.Lock()


def _setup():
    """Compile the poll (with CPython's flag, all there is to do), and with ours the
    handler and the two sigaction calls, and build the action to install (the current
    one with our handler).  False where this cannot work."""
    with _SETUP_LOCK:
        if _Sigint.ready is not None:
            return _Sigint.ready
        _Sigint.ready = False
        if sys.platform == "win32" or not hasattr(signal, "SIGINT"):
            return False
        try:
            errno = "__error" if sys.platform == "darwin" or "bsd" in sys.platform else "__errno_location"
            engine = jit_ir(_IR.format(
                sigint=int(signal.SIGINT), errno=errno, ulong=f"i{8 * ctypes.sizeof(ctypes.c_ulong)}",
                # (CPython's flag: its own poll clears it; ours: cleared before the handlers run)
                check=_POLL if CPYTHON_FLAG else "PyErr_CheckSignals",
                clear="" if CPYTHON_FLAG else "\n  store atomic i32 0, i32* @tangentia_sigint_flag monotonic, align 4"))
            if CPYTHON_FLAG:    # (nothing to install)
                _CHECK.value = engine.get_function_address("tangentia_sigint_poll")
                _Sigint.engine = engine
                _Sigint.ready = True
                return True
            dynfunc = extension("numba._dynfunc", "_dynfunc")
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.sigaction(int(signal.SIGINT), None, _NEW_ACTION) != 0:
                return False
            handler = engine.get_function_address("tangentia_on_sigint")
            ctypes.memmove(_NEW_ACTION, ctypes.byref(ctypes.c_void_p(handler)),
                           ctypes.sizeof(ctypes.c_void_p))   # sa_handler: the first member
            env = dynfunc.Environment({})
            module = sys.modules[__name__]
            arm = dynfunc.make_function(module, "arm", "sigaction(SIGINT, ours, saved)",
                                        engine.get_function_address("tangentia_arm"), env, engine)
            disarm = dynfunc.make_function(module, "disarm", "sigaction(SIGINT, saved)",
                                           engine.get_function_address("tangentia_disarm"), env, engine)
            _CHECK.value = engine.get_function_address("tangentia_sigint_poll")
        except Exception:  # noqa: BLE001 - no libc sigaction, no LLVM JIT here, ...
            return False
        _Sigint.arm, _Sigint.disarm, _Sigint.engine = arm, disarm, engine
        _Sigint.ready = True
        return True


_RESTORE = ctypes.pythonapi.PyErr_Restore
_RESTORE.argtypes, _RESTORE.restype = [ctypes.c_void_p] * 3, None


def _raise_kept():
    """Raise the exception a signal handler raised in a compiled loop's poll (``_EXC``);
    ``KeyboardInterrupt`` if there is none."""
    t, v, tb = _EXC[0], _EXC[1], _EXC[2]
    if not t:
        raise KeyboardInterrupt
    _EXC[0] = _EXC[1] = _EXC[2] = None
    _RESTORE(t, v, tb)    # (steals the references; ctypes raises the error it sets)
    raise KeyboardInterrupt     # (not reached)


def raise_handled(e):
    """Raise what a signal handler raised inside a compiled program's call, where ``e`` is the
    ``SystemError`` the call raised.  A compiled call runs Python code before it returns
    (numba's ``_numba_unpickle``, which gives the boxing of an array result the ndarray
    class, or rebuilds an exception the program raises), and Python runs pending signal
    handlers there; numba's C code then reports the handler's exception as ``SystemError:
    ... returned a result with an exception set``, caused by it: a Ctrl-C during a numba
    program without polling loops (or a second Ctrl-C as a loop stopped for the first)
    ended the call with that ``SystemError``, never a ``KeyboardInterrupt``.  Raised
    instead: the exception the poll kept from a first handler, if any, else the one the
    ``SystemError`` wraps.  Any other ``SystemError`` is raised as it is."""
    inner = e
    while isinstance(inner, SystemError) and "returned a result with an exception set" in str(inner) \
            and isinstance(inner.__cause__, BaseException):
        inner = inner.__cause__
    if inner is e:
        raise e
    if _EXC[0]:
        _raise_kept()
    raise inner.with_traceback(inner.__traceback__) from None


def call_interruptible(entry, args):
    """``entry(*args)`` for a compiled program whose loops poll the flag: a signal runs
    Python's handler in the loop, which stops it by raising (see the module docstring)."""
    if CPYTHON_FLAG and _Sigint.ready is None:
        _setup()    # (once: the poll the flag leads to; where it cannot be compiled, loops
        #             leave a signal to Python, ``_LATER``, and run to their end)
    if CPYTHON_FLAG or _Sigint.armed or _get_ident() != _MAIN_IDENT \
            or not callable(_getsignal(signal.SIGINT)) \
            or not (_Sigint.ready or (_Sigint.ready is None and _setup())):
        # (CPython's flag: nothing to arm; a nested call, another thread, SIG_IGN/SIG_DFL:
        # runs to its end, unless an armed call of the main thread is under way, whose
        # handler serves this call too)
        try:
            return entry(*args)
        except CompiledLoopInterrupted:
            _raise_kept()
    _FLAG.value = 0
    if _Sigint.arm() != 0:
        return entry(*args)
    _Sigint.armed = True
    try:
        return entry(*args)
    except CompiledLoopInterrupted:
        _raise_kept()
    finally:
        _Sigint.disarm()
        _Sigint.armed = False
        _FLAG.value = 0     # (a signal the program did not poll: Python runs its handler next)
