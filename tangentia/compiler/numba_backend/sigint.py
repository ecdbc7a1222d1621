"""Ctrl-C in compiled loops, without numba: the flag compiled loops poll, the C-level
handler setting it, and ``call_interruptible``, which arms the handler around a call.

Compiled code never returns to the interpreter while it runs, so Python's SIGINT handler
(which only records the signal for the interpreter's next bytecode) cannot stop it.  Loops
of generated programs therefore poll ``helpers._interrupted()`` -- an atomic load of a C
``int``, the symbol ``tangentia_sigint_flag`` registered with LLVM's linker, so cached
machine code finds it in any process -- and raise ``CompiledLoopInterrupted`` when it is
set.  ``call_interruptible`` runs such a program: in the main thread, while Python's
handler is ``signal.default_int_handler``, it installs a C-level handler (a function that
only sets the flag) with ``sigaction`` for the duration of the call and restores the
previous one exactly afterwards (two ``rt_sigaction`` system calls, ~1.3 us a call; no
state outlives the call), and turns an interruption into ``KeyboardInterrupt``.  Elsewhere
(other threads, a custom Python handler, SIG_IGN, Windows) nothing is installed and loops
run to their end, as a long C call does.

The handler and the two ``sigaction`` calls are a few lines of LLVM IR compiled with
llvmlite (no numba: the machine-code cache, ``objcache``, runs programs in processes that
never import it); the calls are Python callables made by numba's ``_dynfunc`` C extension
(as numba's own entry points are), loaded by path.
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

__all__ = ["CompiledLoopInterrupted", "call_interruptible", "FLAG_SYMBOL", "extension"]


class CompiledLoopInterrupted(Exception):
    """Raised by a compiled loop that saw SIGINT (``call_interruptible`` turns it
    into ``KeyboardInterrupt``; numba raises only ``Exception`` subclasses)."""


FLAG_SYMBOL = "tangentia_sigint_flag"
_SIGACTION_BYTES = 512   # more than any libc's struct sigaction (152 bytes on glibc x86-64)
_FLAG = ctypes.c_int32(0)
_NEW_ACTION = ctypes.create_string_buffer(_SIGACTION_BYTES)    # our handler, the old flags/mask
_OLD_ACTION = ctypes.create_string_buffer(_SIGACTION_BYTES)    # what the call replaced
_SYMBOLS = {FLAG_SYMBOL: _FLAG, "tangentia_sigint_new": _NEW_ACTION,
            "tangentia_sigint_old": _OLD_ACTION}
for _name, _obj in _SYMBOLS.items():
    _llvm.add_symbol(_name, ctypes.addressof(_obj))

# the handler (async-signal-safe: one store) and arm/disarm, each a CPython-callable
# wrapper ``(closure, args, kwargs) -> int`` around sigaction(SIGINT, new, old)
_IR = """
@tangentia_sigint_flag = external global i32
@tangentia_sigint_new = external global i8
@tangentia_sigint_old = external global i8
declare i32 @sigaction(i32, i8*, i8*)
declare i8* @PyLong_FromLong(i64)

define void @tangentia_on_sigint(i32 %sig) {{
  store atomic i32 1, i32* @tangentia_sigint_flag monotonic, align 4
  ret void
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
    """Compile the handler and the two sigaction calls, and build the action to
    install (the current one with our handler).  False where this cannot work."""
    with _SETUP_LOCK:
        if _Sigint.ready is not None:
            return _Sigint.ready
        _Sigint.ready = False
        if sys.platform == "win32" or not hasattr(signal, "SIGINT"):
            return False
        try:
            dynfunc = extension("numba._dynfunc", "_dynfunc")
            engine = jit_ir(_IR.format(sigint=int(signal.SIGINT)))
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
        except Exception:  # noqa: BLE001 - no libc sigaction, no LLVM JIT here, ...
            return False
        _Sigint.arm, _Sigint.disarm, _Sigint.engine = arm, disarm, engine
        _Sigint.ready = True
        return True


def call_interruptible(entry, args):
    """``entry(*args)`` for a compiled program whose loops poll the flag: SIGINT stops it
    with ``KeyboardInterrupt`` (see the module docstring)."""
    if _Sigint.armed or _get_ident() != _MAIN_IDENT or _getsignal(signal.SIGINT) \
            is not _DEFAULT_INT_HANDLER or not (_Sigint.ready or (_Sigint.ready is None and _setup())):
        # (a nested call, another thread, or a handler of the user's: runs to its end,
        # unless an armed call of the main thread sees SIGINT meanwhile)
        try:
            return entry(*args)
        except CompiledLoopInterrupted:
            raise KeyboardInterrupt from None
    _FLAG.value = 0
    if _Sigint.arm() != 0:
        return entry(*args)
    _Sigint.armed = True
    try:
        out = entry(*args)
    except CompiledLoopInterrupted:
        out = None
    finally:
        _Sigint.disarm()
        _Sigint.armed = False
    if _FLAG.value:
        _FLAG.value = 0
        raise KeyboardInterrupt   # (SIGINT came while armed: we are its only handler)
    return out
