"""Scalar functions called from generated numba programs, with NumPy's semantics
where Python's (or numba's) differ.

``_where``, ``_fmax`` and ``_fmin`` are intrinsics (an LLVM ``select``): a call
costs numba almost nothing to compile, while a conditional expression adds
basic blocks (and SSA work) and a call of an njit function adds ~2 ms each.

**Ctrl-C in compiled loops.**  Compiled code never returns to the interpreter
while it runs, so Python's SIGINT handler (which only records the signal for
the interpreter's next bytecode) cannot stop it.  Loops of generated programs
therefore poll ``_interrupted()`` -- an atomic load of a C ``int``, the symbol
``tangentia_sigint_flag`` registered with LLVM's linker, so cached machine code
finds it in any process -- every few thousand iterations (``rules``: about
``CHECK_WORK`` scalar operations apart), and raise ``CompiledLoopInterrupted``
when it is set.  ``call_interruptible`` runs such a program: in the main thread,
while Python's handler is ``signal.default_int_handler``, it installs a C-level
handler (a numba ``cfunc`` that only sets the flag) with ``sigaction`` for the
duration of the call and restores the previous one exactly afterwards (two
``rt_sigaction`` system calls, ~1.3 us a call; no state outlives the call), and
turns an interruption into ``KeyboardInterrupt``.  Elsewhere (other threads, a
custom Python handler, SIG_IGN, Windows) nothing is installed and loops run to
their end, as a long C call does.
"""
import cmath
import ctypes
import math
import signal
import sys
import threading

import numba
import numpy as np
from llvmlite import binding as _llvm
from llvmlite import ir
from numba.core import types
from numba.core.extending import intrinsic

from . import special


def _unified(typingctx, a, b):
    ty = typingctx.unify_types(a, b)
    if not isinstance(ty, (types.Integer, types.Float, types.Boolean)):
        return None
    return ty


def _select_codegen(make_pred):
    def codegen(context, builder, sig, args):
        ty = sig.return_type
        a = context.cast(builder, args[-2], sig.args[-2], ty)
        b = context.cast(builder, args[-1], sig.args[-1], ty)
        pred = make_pred(context, builder, sig, args, a, b, ty)
        return builder.select(pred, a, b)
    return codegen


@intrinsic
def _where(typingctx, p, a, b):
    """``a if p else b`` without a branch."""
    ty = _unified(typingctx, a, b)
    if ty is None:
        return None

    def pred(context, builder, sig, args, a, b, ty):
        return context.cast(builder, args[0], sig.args[0], types.boolean)
    return ty(p, a, b), _select_codegen(pred)


def _extremum(op):
    def typer(typingctx, a, b):
        ty = _unified(typingctx, a, b)
        if ty is None:
            return None

        def pred(context, builder, sig, args, a, b, ty):
            if isinstance(ty, types.Float):
                # NumPy: a if (a > b or a is NaN) else b -- NaN propagates, and
                # of two equal values (0.0 and -0.0) the second is returned.
                return builder.or_(builder.fcmp_ordered(op, a, b),
                                   builder.fcmp_unordered("uno", a, a))
            if isinstance(ty, types.Integer) and ty.signed:
                return builder.icmp_signed(op, a, b)
            return builder.icmp_unsigned(op, a, b)
        return ty(a, b), _select_codegen(pred)
    return typer


_fmax = intrinsic(_extremum(">"))
_fmax.__doc__ = "NumPy's maximum (NaN propagates), without a branch."
_fmin = intrinsic(_extremum("<"))
_fmin.__doc__ = "NumPy's minimum (NaN propagates), without a branch."


@numba.njit(cache=True)
def _ifloordiv(a, b):
    """NumPy's integer floor division: 0 for a zero divisor, MIN // -1 wraps to MIN."""
    if b == -1:
        return -a
    return a // b


@numba.njit(cache=True)
def _fsign(x):
    """NumPy's sign of a float: +-1, 0.0 for both zeros, NaN for NaN (as float64;
    the caller casts float32 results back)."""
    if x > 0:
        return 1.0
    if x < 0:
        return -1.0
    if x == 0:
        return 0.0
    return x + 0.0


@numba.njit(cache=True, error_model="numpy")
def _cdiv(a, b):
    """NumPy's complex128 division (Smith's algorithm, as its ``divide`` loop: the larger
    part of ``b`` scales, the quotient multiplied by ``1 / denominator``; a zero divisor
    gives C's infinities or NaN).  numba's ``a / b`` raises ZeroDivisionError for a zero
    ``b`` whatever the error model, and divides by the denominator (last bits differ)."""
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    abr, abi = abs(br), abs(bi)
    if abr >= abi:
        if abr == 0.0 and abi == 0.0:
            return complex(ar / abr, ai / abr)
        rat = bi / br
        scl = 1.0 / (br + bi * rat)
        return complex((ar + ai * rat) * scl, (ai - ar * rat) * scl)
    rat = br / bi
    scl = 1.0 / (bi + br * rat)
    return complex((ar * rat + ai) * scl, (ai * rat - ar) * scl)


@numba.njit(cache=True, error_model="numpy")
def _cdiv64(a, b):
    """``_cdiv`` for complex64, in float32 arithmetic as NumPy's loop (no float64 step)."""
    ar, ai = np.float32(a.real), np.float32(a.imag)
    br, bi = np.float32(b.real), np.float32(b.imag)
    one = np.float32(1.0)
    abr, abi = abs(br), abs(bi)
    if abr >= abi:
        if abr == 0 and abi == 0:
            return np.complex64(complex(ar / abr, ai / abr))
        rat = bi / br
        scl = one / (br + bi * rat)
        return np.complex64(complex((ar + ai * rat) * scl, (ai - ar * rat) * scl))
    rat = br / bi
    scl = one / (bi + br * rat)
    return np.complex64(complex((ar * rat + ai) * scl, (ai * rat - ar) * scl))


# NumPy's complex exp, sin, cos, sinh, cosh and tanh where a part of the argument is
# zero (C99's Annex G, as NumPy's loops): numba's cmath multiplies an overflowed or NaN
# factor by the zero part's sine (exp(710+0j) was inf+nanj, sin(1000j) nan+infj, and in
# complex64 already exp(89+0j)), where the result's part is a signed zero (inf+0j).
# Elsewhere cmath's value is returned unchanged.  The ``64`` variants keep complex64.

@numba.njit(cache=True, error_model="numpy")
def _cexp(z):
    return complex(math.exp(z.real), z.imag) if z.imag == 0 else cmath.exp(z)


@numba.njit(cache=True, error_model="numpy")
def _csinh(z):
    return complex(math.sinh(z.real), z.imag) if z.imag == 0 else cmath.sinh(z)


@numba.njit(cache=True, error_model="numpy")
def _ccosh(z):
    if z.imag == 0:
        return complex(math.cosh(z.real), z.imag * math.copysign(1.0, z.real))
    return cmath.cosh(z)


@numba.njit(cache=True, error_model="numpy")
def _ctanh(z):
    return complex(math.tanh(z.real), z.imag) if z.imag == 0 else cmath.tanh(z)


@numba.njit(cache=True, error_model="numpy")
def _csin(z):
    x, y = z.real, z.imag
    if x == 0:     # sin(iy) = i sinh(y)
        return complex(x, math.sinh(y))
    if y == 0:
        return complex(math.sin(x), y * math.copysign(1.0, math.cos(x)))
    return cmath.sin(z)


@numba.njit(cache=True, error_model="numpy")
def _ccos(z):
    x, y = z.real, z.imag
    if x == 0:     # cos(iy) = cosh(y)
        return complex(math.cosh(y), x * math.copysign(1.0, -y))
    if y == 0:
        return complex(math.cos(x), -y * math.copysign(1.0, math.sin(x)))
    return cmath.cos(z)


@numba.njit(cache=True, error_model="numpy")
def _cexp64(z):
    return np.complex64(_cexp(complex(z))) if z.imag == 0 else cmath.exp(z)


@numba.njit(cache=True, error_model="numpy")
def _csinh64(z):
    return np.complex64(_csinh(complex(z))) if z.imag == 0 else cmath.sinh(z)


@numba.njit(cache=True, error_model="numpy")
def _ccosh64(z):
    return np.complex64(_ccosh(complex(z))) if z.imag == 0 else cmath.cosh(z)


@numba.njit(cache=True, error_model="numpy")
def _ctanh64(z):
    return np.complex64(_ctanh(complex(z))) if z.imag == 0 else cmath.tanh(z)


@numba.njit(cache=True, error_model="numpy")
def _csin64(z):
    return np.complex64(_csin(complex(z))) if z.imag == 0 or z.real == 0 else cmath.sin(z)


@numba.njit(cache=True, error_model="numpy")
def _ccos64(z):
    return np.complex64(_ccos(complex(z))) if z.imag == 0 or z.real == 0 else cmath.cos(z)


@numba.njit(cache=True)
def _index(i, n):
    """A possibly negative index into an axis of length n (IndexError when out of bounds)."""
    j = i + n if i < 0 else i
    if j < 0 or j >= n:
        raise IndexError("index out of bounds in a jit-compiled getitem/scatter")
    return j


@numba.njit(cache=True)
def _lgamma(x):
    """scipy.special.gammaln: infinite at -inf and where 1/x overflows (Cephes)."""
    if x == -math.inf:
        return x
    if x != 0 and math.isinf(1.0 / x):   # Cephes works with 1/x there
        return math.inf
    return math.lgamma(x)


# ---------------------------------------------------------------------------
# Ctrl-C: the flag compiled loops poll, and the calls that arm it


class CompiledLoopInterrupted(Exception):
    """Raised by a compiled loop that saw SIGINT (``call_interruptible`` turns it
    into ``KeyboardInterrupt``; numba raises only ``Exception`` subclasses)."""


_SIGACTION_BYTES = 512   # more than any libc's struct sigaction (152 bytes on glibc x86-64)
_FLAG = ctypes.c_int32(0)
_NEW_ACTION = ctypes.create_string_buffer(_SIGACTION_BYTES)    # our handler, the old flags/mask
_OLD_ACTION = ctypes.create_string_buffer(_SIGACTION_BYTES)    # what the call replaced
_SYMBOLS = {"tangentia_sigint_flag": _FLAG, "tangentia_sigint_new": _NEW_ACTION,
            "tangentia_sigint_old": _OLD_ACTION}
for _name, _obj in _SYMBOLS.items():
    _llvm.add_symbol(_name, ctypes.addressof(_obj))


def _extern(builder, name, ty):
    """The external global ``name`` (one of ``_SYMBOLS``) declared in this module."""
    mod = builder.module
    try:
        return mod.get_global(name)
    except KeyError:
        gv = ir.GlobalVariable(mod, ty, name)
        gv.linkage = "external"
        return gv


@intrinsic
def _interrupted(typingctx):
    """Whether SIGINT arrived while a ``call_interruptible`` call was armed (an atomic
    load: a plain one would be hoisted out of the loop polling it)."""
    def codegen(context, builder, sig, args):
        flag = _extern(builder, "tangentia_sigint_flag", ir.IntType(32))
        v = builder.load_atomic(flag, "monotonic", 4)
        return builder.icmp_signed("!=", v, ir.Constant(ir.IntType(32), 0))
    return types.boolean(), codegen


@intrinsic
def _set_interrupted(typingctx, signum):
    def codegen(context, builder, sig, args):
        flag = _extern(builder, "tangentia_sigint_flag", ir.IntType(32))
        builder.store_atomic(ir.Constant(ir.IntType(32), 1), flag, "monotonic", 4)
        return context.get_dummy_value()
    return types.void(signum), codegen


def _sigaction_codegen(new, old):
    def codegen(context, builder, sig, args):
        i8p = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.IntType(32), [ir.IntType(32), i8p, i8p])
        try:
            fn = builder.module.get_global("sigaction")
        except KeyError:
            fn = ir.Function(builder.module, fnty, "sigaction")

        def ptr(name):
            if name is None:
                return ir.Constant(i8p, None)
            return builder.bitcast(_extern(builder, name, ir.IntType(8)), i8p)
        return builder.call(fn, [ir.Constant(ir.IntType(32), int(signal.SIGINT)), ptr(new), ptr(old)])
    return codegen


@intrinsic
def _swap_action(typingctx):
    """sigaction(SIGINT, &new, &old): libc's, called from compiled code (a ctypes
    call costs ~1 us more)."""
    return types.int32(), _sigaction_codegen("tangentia_sigint_new", "tangentia_sigint_old")


@intrinsic
def _restore_action(typingctx):
    return types.int32(), _sigaction_codegen("tangentia_sigint_old", None)


@numba.njit(cache=True)
def _arm():
    return _swap_action()


@numba.njit(cache=True)
def _disarm():
    return _restore_action()


def _on_sigint(signum):       # the C-level handler: async-signal-safe (one store)
    _set_interrupted(signum)


class _Sigint:
    ready = None          # None: not set up yet; False: unavailable here
    armed = False         # a call of the main thread has our handler installed
    arm = disarm = None   # the compiled entry points of _arm and _disarm
    handler = None        # the cfunc (kept alive: its address is installed)


_MAIN_IDENT = threading.main_thread().ident
_get_ident = threading.get_ident
_getsignal = signal.getsignal
try:
    import _signal
    _getsignal = _signal.getsignal   # (signal.getsignal converts to an enum: ~5 us)
except ImportError:  # pragma: no cover - CPython always has it
    pass
_DEFAULT_INT_HANDLER = signal.default_int_handler


def _setup():
    """Compile the handler and the two sigaction calls, and build the action to
    install (the current one with our handler).  False where this cannot work."""
    _Sigint.ready = False
    if sys.platform == "win32" or not hasattr(signal, "SIGINT"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        handler = numba.cfunc(types.void(types.int32), cache=True)(_on_sigint)
        if libc.sigaction(int(signal.SIGINT), None, _NEW_ACTION) != 0:
            return False
        ctypes.memmove(_NEW_ACTION, ctypes.byref(ctypes.c_void_p(handler.address)),
                       ctypes.sizeof(ctypes.c_void_p))   # sa_handler: the first member
        _arm(), _disarm()                                 # (compiled; installs nothing new)
        _Sigint.arm = _arm.overloads[_arm.signatures[0]].entry_point
        _Sigint.disarm = _disarm.overloads[_disarm.signatures[0]].entry_point
    except Exception:  # noqa: BLE001 - no libc sigaction, numba cannot compile it, ...
        return False
    _Sigint.handler = handler
    _Sigint.ready = True
    return True


def call_interruptible(entry, args):
    """``entry(*args)`` for a compiled program whose loops poll ``_interrupted()``:
    SIGINT stops it with ``KeyboardInterrupt`` (see the module docstring)."""
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


globals().update(special.FUNCTIONS)   # SciPy's special functions, imported by generated code
__all__ = HELPERS = ("_fmax", "_fmin", "_fsign", "_index", "_where", "_ifloordiv", "_lgamma", "_cdiv", "_cdiv64",
                     "_cexp", "_cexp64", "_csinh", "_csinh64", "_ccosh", "_ccosh64", "_ctanh",
                     "_ctanh64", "_csin", "_csin64", "_ccos", "_ccos64",
                     "_interrupted", "CompiledLoopInterrupted") + special.NAMES
