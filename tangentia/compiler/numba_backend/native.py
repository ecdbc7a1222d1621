"""The numba backend's compiler: generation (``codegen``/``rules``), the on-disk
cache, the calling wrapper and the ``NumbaBackend`` methods' implementations.

Imported on first use (by the background compile of a tiered program, or the first
untiered compile), not at ``import tangentia``: numba itself takes a few tenths of a
second to import.  The package docstring (``numba_backend/__init__.py``) describes
the backend.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
import time
import warnings

import numpy as np

import numba
from numba import types as nbt
from numba.core import errors as NE

from ...core import ProgramMemo
from ..backend import COMPILE_THREAD, Backend, cache_root
from .memo import COMPILED
from . import elementwise_loop, helpers, irblock, vecmath, vecmath_trig
from .codegen import (SMALL, Unsupported, _Gen, _check_dtype, _is_float0, _nbtype, _nested, _size,
                      _weight, AV, ZV)
from .rules import ELEMENTWISE, FUSIBLE, ROWS, RULES, all_primitives, gemm_bound, lowering_paths

__all__ = ["NumbaCompiler", "all_primitives", "lowering_paths", "SMALL"]
_NJIT_OPTIONS = dict(error_model="numpy")


def _generate(jaxpr):
    """(source, globals, objmode, fallbacks) for a program without constvars (fallbacks:
    the primitives run in object mode for want of a native lowering)."""
    g = _Gen(RULES, FUSIBLE, ELEMENTWISE, ROWS,
             blocks=irblock.lower_run if os.environ.get("TANGENTIA_NUMBA_IRBLOCK", "1") != "0" else None)
    loop = one_loop(jaxpr)
    params, in_vals = [], []
    for v in jaxpr.invars:
        a = v.aval
        _check_dtype(a.dtype)
        if _is_float0(a.dtype):
            in_vals.append(ZV(a.shape, a.dtype))
            continue
        params.append(g.name("x"))
        av = AV(a.shape, a.dtype, params[-1])
        in_vals.append(g.small(av) if g.is_small(a.shape) and loop is None else av)
    if loop is not None:
        names = elementwise_loop.generate(g, jaxpr, *loop, params)
    else:
        outs = g.lower_jaxpr(jaxpr, in_vals)
        names = [g.array(o).name for o in outs if type(o) is not ZV]
    g.emit("return (" + "".join(n + ", " for n in names) + ")")
    head = ["import cmath", "import math", "import numpy as np", "import numba",
            f"from {helpers.__name__} import {', '.join(helpers.HELPERS)}",
            f"from {vecmath.__name__} import {', '.join(vecmath.INTRINSICS)}",
            f"from {vecmath_trig.__name__} import {', '.join(vecmath_trig.INTRINSICS)}", ""] + g.notes + [""]
    funcs = [f + "\n\n" for f in g.functions]
    main = "\n".join(["@_jit", f"def program({', '.join(params)}):"] + g.lines)
    return ("\n".join(head) + "\n" + "\n".join(funcs) + main + "\n", g.globals, g.objmode,
            g.fallbacks)


_WARNED = set()


def _warn_fallbacks(names):
    """One warning per primitive and process for each primitive that has no native
    lowering here and so runs its NumPy implementation in numba's object mode."""
    new = sorted(set(names) - _WARNED)
    if new:
        _WARNED.update(new)
        warnings.warn(f"numba: no native lowering for {', '.join(new)}; "
                      f"{'it runs' if len(new) == 1 else 'they run'} NumPy's implementation in "
                      f"object mode (correct, but slower, and holding the GIL); "
                      f"numba_backend.lowering_paths() lists every primitive's path",
                      ObjectModeWarning, stacklevel=2)


class ObjectModeWarning(Warning):
    """A performance warning: a primitive without a native lowering runs its NumPy
    implementation in numba's object mode.  Not a RuntimeWarning (the numbers are
    right); ``warnings.filterwarnings("ignore", category=ObjectModeWarning)`` silences it."""


def _cache_dir():
    return os.path.join(cache_root(), "numba")


def _version_tag():
    # The library's version, looked up (not imported: this layer sits below the package).
    version = getattr(sys.modules.get("tangentia"), "__version__", "?")
    here = os.path.dirname(os.path.abspath(__file__))
    files = [os.path.join(here, n) for n in sorted(os.listdir(here)) if n.endswith(".py")]
    digest = hashlib.sha256()
    for path in files:
        try:
            with open(path, "rb") as f:
                digest.update(f.read())
        except OSError:
            pass
    return f"{version}/{numba.__version__}/{np.__version__}/{digest.hexdigest()}"


_VERSION = None
_MODULE_LOCK = threading.Lock()


def _load_module(source, glb):
    """Import ``source`` from a file named by its hash (so numba can cache it)."""
    global _VERSION
    if _VERSION is None:
        _VERSION = _version_tag()
    key = hashlib.sha256((_VERSION + "\n" + source).encode()).hexdigest()[:32]
    modname = f"tangentia_numba_{key}"
    for d in (_cache_dir(), os.path.join(tempfile.gettempdir(), "tangentia-numba")):
        try:
            os.makedirs(d, exist_ok=True)
            path = os.path.join(d, modname + ".py")
            if not os.path.exists(path):
                tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
                with open(tmp, "w") as f:
                    f.write(source)
                os.replace(tmp, path)
            break
        except OSError:
            continue
    else:
        raise Unsupported("no writable cache directory")
    with _MODULE_LOCK:
        mod = sys.modules.get(modname)
        if mod is None:
            spec = importlib.util.spec_from_file_location(modname, path)
            mod = importlib.util.module_from_spec(spec)
            mod.__dict__.update(glb)
            sys.modules[modname] = mod  # numba's disk cache refers to the module by name
            spec.loader.exec_module(mod)
        else:
            mod.__dict__.update(glb)
    return mod


class _Progress:
    """Prints a line on stderr if a compilation takes longer than ~2 s."""

    def __init__(self, what, estimate=None):
        self.what = what
        self.estimate = estimate   # seconds, or None
        self.timer = None

    def __enter__(self):
        # (a tiered program's background compile keeps no one waiting: no line for it)
        if os.environ.get("TANGENTIA_COMPILE_PROGRESS", "1") != "0" and \
                threading.current_thread().name != COMPILE_THREAD:
            self.t0 = time.perf_counter()
            guess = "" if self.estimate is None else f" (estimated {self.estimate:.0f} s)"
            self.timer = threading.Timer(2.0, lambda: print(
                f"tangentia: compiling {self.what} with numba{guess} ... "
                f"(TANGENTIA_COMPILE_PROGRESS=0 silences this)", file=sys.stderr, flush=True))
            self.timer.daemon = True
            self.timer.start()
        return self

    def __exit__(self, *exc):
        if self.timer is not None:
            self.timer.cancel()
            dt = time.perf_counter() - self.t0
            if dt > 2.0:
                print(f"tangentia: compiled {self.what} in {dt:.1f} s", file=sys.stderr, flush=True)


def _arg_types(jaxpr):
    return tuple(nbt.Array(_nbtype(v.aval.dtype), v.aval.ndim, "C") for v in jaxpr.invars
                 if not _is_float0(v.aval.dtype))


def _compile_program(jaxpr, estimate=None):
    source, glb, objmode, fallbacks = _generate(jaxpr)
    # objmode blocks hold the GIL anyway (and numba warns about nogil there)
    glb = dict(glb, _jit=numba.njit(cache=not objmode, nogil=not objmode, **_NJIT_OPTIONS))
    mod = _load_module(source, glb)
    disp = mod.program
    with _Progress(f"a program of {_weight(jaxpr)} equations",
                   estimate), _fast_typing():
        # the entry point of this program's signature: programs of the same source (an
        # identity, say) share one module and dispatcher across argument dtypes
        entry = disp.compile(_arg_types(jaxpr))
    return _wrapper(disp, entry, jaxpr, source), fallbacks


def _wrapper(disp, entry, jaxpr, source):
    """The callable ``fn(*args) -> list of arrays`` around the compiled program.

    Arguments are made C-contiguous writable arrays of the program's dtypes
    (copies only when they are not), ``float0`` arguments are dropped and
    ``float0`` outputs made here (they carry no data).
    """
    specs = [(v.aval.shape, v.aval.dtype) for v in jaxpr.invars]
    n_in = len(specs)
    has_float0 = any(_is_float0(dt) for _, dt in specs)
    zeros_out = [(i, np.zeros(v.aval.shape, v.aval.dtype)) for i, v in enumerate(jaxpr.outvars)
                 if _is_float0(v.aval.dtype)]
    ndarray = np.ndarray
    interruptible = "if _interrupted():" in source   # its loops poll for Ctrl-C (helpers)
    call = helpers.call_interruptible

    def run(*args):
        if len(args) != n_in:
            raise TypeError(f"the compiled program takes {n_in} arguments, got {len(args)}")
        conv = []
        for a, (shape, dt) in zip(args, specs):
            if type(a) is not ndarray or a.dtype != dt or not a.flags.c_contiguous \
                    or not a.flags.writeable:
                a = np.array(a, dtype=dt, order="C", copy=True)
            if has_float0 and _is_float0(dt):
                continue
            if a.shape != shape:
                raise TypeError(f"compiled program: an argument of shape {a.shape} where "
                                f"{shape} was compiled for")
            conv.append(a)
        outs = list(call(entry, conv) if interruptible else entry(*conv))
        for i, z in zeros_out:
            outs.insert(i, z)
        return outs
    run.source = source
    run.dispatcher = disp
    return run


class _PlainColors:
    def _plain(self, msg):
        return msg

    code = errmsg = filename = indicate = highlight = reset = _plain


class _fast_typing:
    """Memoize two of numba's typing look-ups while our programs compile.

    Generated programs apply the same few scalar operations thousands of
    times, and numba resolves each application from scratch: the value type
    of ``operator.mul`` (after a failed ``typeof`` that formats an error
    message) and the call type through all templates.  Both are deterministic
    for builtin functions and plain scalar argument types, so they are
    memoized -- only while we compile, and only for those cases.
    """
    _lock = threading.Lock()
    _call_memo = {}
    _value_memo = {}
    _depth = 0
    _saved = None

    def __enter__(self):
        from numba.core.types import functions as F
        from numba.core.typing import context as TC
        cls = type(self)
        with cls._lock:
            if cls._depth == 0:
                orig_call = F.Function.get_call_type
                orig_value = TC.BaseContext.resolve_value_type
                cls._saved = orig_call, orig_value
                call_memo, value_memo = cls._call_memo, cls._value_memo
                simple = (nbt.Float, nbt.Integer, nbt.Boolean)
                builtin = type(len)

                def get_call_type(fself, context, args, kws):
                    if not kws and all(type(a) in simple for a in args):
                        key = (fself, id(context), args)
                        sig = call_memo.get(key)
                        if sig is None:
                            sig = call_memo[key] = orig_call(fself, context, args, kws)
                        return sig
                    return orig_call(fself, context, args, kws)

                def resolve_value_type(tself, val):
                    if type(val) is builtin:
                        key = (id(tself), val)
                        ty = value_memo.get(key)
                        if ty is None:
                            ty = value_memo[key] = orig_value(tself, val)
                        return ty
                    return orig_value(tself, val)
                F.Function.get_call_type = get_call_type
                TC.BaseContext.resolve_value_type = resolve_value_type
                # Typing and lowering raise and catch thousands of errors; their
                # messages need not be colored (colorama is slow).
                cls._saved_color = NE._termcolor_inst
                NE._termcolor_inst = _PlainColors()
            cls._depth += 1
        return self

    def __exit__(self, *exc):
        from numba.core.types import functions as F
        from numba.core.typing import context as TC
        cls = type(self)
        with cls._lock:
            cls._depth -= 1
            if cls._depth == 0:
                F.Function.get_call_type, TC.BaseContext.resolve_value_type = cls._saved
                NE._termcolor_inst = cls._saved_color


class NumbaCompiler(Backend):
    """Compiles a whole program into one ``numba.njit`` function (see the package docstring).

    ``estimate``: the seconds the compile is expected to take (for the progress line)."""

    def __init__(self, estimate=None):
        self.estimate = estimate

    name = "numba"
    slow_compile = True

    def compile(self, jaxpr):
        fn = COMPILED.get(jaxpr)
        if fn is not None:
            return fn
        lock = _LOCK.setdefault(jaxpr, threading.Lock())
        with lock:
            fn = COMPILED.get(jaxpr)
            if fn is None:
                fn = COMPILED.set(jaxpr, self._compile(jaxpr))
        return fn

    def _compile(self, jaxpr):
        assert not jaxpr.constvars, "compile expects constants to be inputs"
        if (vector_bound(jaxpr) and one_loop(jaxpr) is None) or _has_ml_dtype(jaxpr):
            return _numpy_compile(jaxpr)
        try:
            fn, fallbacks = _compile_program(jaxpr, self.estimate)
        except Exception as e:  # noqa: BLE001 - any failure: the NumPy backend runs the program
            msg = str(e).strip().splitlines()
            short = " ".join(msg[:3])[:400] if msg else type(e).__name__
            warnings.warn(f"numba backend: cannot compile this program ({type(e).__name__}: "
                          f"{short}); running it with the NumPy backend instead",
                          RuntimeWarning, stacklevel=4)
            return _numpy_compile(jaxpr)
        _warn_fallbacks(fallbacks)    # (compiled: a warning raised as an error cannot undo it)
        return fn

    def source(self, jaxpr):
        if vector_bound(jaxpr) and one_loop(jaxpr) is None:
            from ..backend import get_backend
            return ("# numba backend: a loop-free program over large arrays runs as NumPy calls "
                    "(vectorized ufuncs)\n" + get_backend("numpy").source(jaxpr))
        try:
            return _generate(jaxpr)[0]
        except Unsupported as e:
            return f"# numba backend: not compilable ({e}); the NumPy backend runs this program\n"


def _has_ml_dtype(jaxpr):
    """Whether a value of ``jaxpr`` (nested programs included) has one of ml_dtypes' types
    (bfloat16, float8, int4, ...; NumPy kind 'V' and not float0): numba has none of them,
    so the NumPy backend runs the program (in float32 where JAX does, rounding to them)."""
    for v in list(jaxpr.invars) + [o for e in jaxpr.eqns for o in e.outputs]:
        dt = v.aval.dtype
        if dt.kind == "V" and not _is_float0(dt):
            return True
    return any(_has_ml_dtype(sub) for e in jaxpr.eqns for sub in _nested(e))


LARGE = 1 << 15  # elements: from here on NumPy's vectorized kernels beat scalar loops
_CONTROL_FLOW = ("while", "scan", "cond")


def vector_bound(jaxpr):
    """Whether ``jaxpr`` is better run as NumPy calls: it has no loops or
    branches (at any depth) and nearly all its elements (90%) are in large
    values, so per-call overhead is negligible and NumPy's SIMD ufuncs
    (``tanh``, ``log``, ...) and BLAS beat numba's scalar libm loops --
    unless it is elementwise and vectorizes (``one_loop``)."""
    hit = _VECTOR_BOUND.get(jaxpr)
    if hit is not None:
        return hit
    sizes = []

    def walk(j):
        for eqn in j.eqns:
            if eqn.prim.name in _CONTROL_FLOW:
                return False
            for sub_program in _nested(eqn):
                if not walk(sub_program):
                    return False
            sizes.extend(_size(v.aval.shape) for v in eqn.outputs)
        return True

    result = (walk(jaxpr) and bool(sizes)
              and sum(s for s in sizes if s >= LARGE) >= 0.9 * sum(sizes)
              and not gemm_bound(jaxpr, sum(sizes)))    # (its own GEMM beats BLAS: compiled)
    return _VECTOR_BOUND.set(jaxpr, result)


_VECTOR_BOUND = ProgramMemo("numba backend: whether a program runs as NumPy calls")
_LOCK = ProgramMemo("numba backend: the lock of a program's compile")


def one_loop(jaxpr):
    """``(scalar body, shape)`` if ``jaxpr`` runs as one vectorized loop: it is
    vector-bound and elementwise over one shape with vectorizable operations
    only (``elementwise_loop``), which beats NumPy's calls (one pass over
    memory, no temporaries); else None."""
    return elementwise_loop.scalar_program(jaxpr) if vector_bound(jaxpr) else None


def _numpy_compile(jaxpr):
    from ..backend import get_backend
    try:
        return get_backend("numpy").compile(jaxpr)
    except (ValueError, KeyError):
        from ..numpy_backend import compile_jaxpr
        return compile_jaxpr(jaxpr)

