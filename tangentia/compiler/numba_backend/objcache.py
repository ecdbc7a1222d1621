"""Compiled programs' machine code, loaded without numba: the warm-cache first call.

A program numba compiled (or loaded from its disk cache) in one process is, in the next
one, found again only after numba is imported (~0.17 s CPU), its typing and lowering
registries are set up (~0.2 s: numba refreshes them before it reads its cache) and the
program's source is generated again (its hash is numba's key).  This module keeps a
second, numba-free copy of what a call needs -- the machine code of the program (its
object file, as numba's cache holds it) with the name of its Python entry point, the
constants of its environment, and how ``run`` converts the arguments -- under a key
computed from the program itself (``program_key``: every equation, parameter, type and
literal, the settings in the environment, the library's files and the versions of what
generates code), and loads it with llvmlite alone (``load``): the object file is linked
against numba's C runtime (its C extensions, loaded by path without importing numba)
and the few functions numba compiles per process (the reference counts of its memory
manager: their LLVM IR, kept with the entries; ``numba_unpickle``, which numba's C
runtime would import numba for, over our own memo).

What is kept (``save``): programs compiled natively, in a process where the numba
backend's module settings are those of its source files (a test lowering a threshold
or replacing a rule writes nothing), without object-mode code (Python objects), whose
object files (the program's and its compile units') refer to no symbol that is not
numba's runtime's or the process's.  Entries are files ``<cache root>/numba/fast/<key>.bin`` written atomically
(two processes writing one entry both leave a whole file) and checked against their
SHA-256 when read: a damaged one is a miss, and the program compiles as before.  The
CPU's name and features are checked too (the code is the host's).
``TANGENTIA_NUMBA_FAST_LOAD=0`` turns this off.

Used only while the compiler (``native``) has not been imported in this process, so no
setting of its modules can have been changed when a program is looked up; once numba is
imported, its own cache serves as before.
"""
from __future__ import annotations

import enum
import hashlib
import importlib.util
import os
import pickle
import struct
import sys
import threading
import types

import numpy as np

from ... import core
from ..backend import cache_root

__all__ = ["program_key", "load", "save", "runner", "enabled", "STATS"]

FORMAT = b"tangentia-objcache-1\n"
STATS = {"loaded": 0, "saved": 0, "missed": 0}
_ENV_IGNORED = frozenset(("TANGENTIA_CACHE_DIR", "TANGENTIA_COMPILE_PROGRESS", "TANGENTIA_JIT_TIERED",
                          "TANGENTIA_JIT_BACKEND", "TANGENTIA_NUMBA_FAST_LOAD"))
_COMPILER = ("codegen", "native", "rules", "plan", "irblock", "helpers")
_LOCK = threading.RLock()


def enabled():
    return os.environ.get("TANGENTIA_NUMBA_FAST_LOAD", "1") != "0"


def compiler_imported():
    """Whether the numba backend's compiler modules are imported in this process."""
    pkg = __name__.rpartition(".")[0]
    return any(f"{pkg}.{m}" in sys.modules for m in _COMPILER)


# ---------------------------------------------------------------------------
# The key: the program, the settings, the library and the code generators' versions

_KEYS = core.ProgramMemo("numba backend: the program's key in the machine-code cache")
_FUNCTION_PARAMS = ("custom_jvp_call", "custom_vjp_call", "custom_vmap_call", "custom_dce_call")


class _Opaque(Exception):
    """A parameter this key cannot describe: the program has no key."""


def program_key(jaxpr):
    """The hex key of ``jaxpr`` (memoized), or None if a parameter is not a plain value
    (a Python function, an object of an unknown class): such programs are not kept."""
    body = _KEYS.get(jaxpr)
    if body is None:
        try:
            out = []
            _describe(jaxpr, out)
            body = hashlib.sha256("\n".join(out).encode()).hexdigest()
        except _Opaque:
            body = ""
        _KEYS.set(jaxpr, body)
    if not body:
        return None
    env = sorted((k, v) for k, v in os.environ.items()
                 if (k.startswith("TANGENTIA_") or k.startswith("NUMBA_") or k in BLAS_ENV)
                 and k not in _ENV_IGNORED)
    return hashlib.sha256(f"{_version()}\n{env!r}\n{_cpus()}\n{_calibrations()}\n{body}".encode()).hexdigest()[:40]


# The variables that choose the BLAS libraries' kernels and threads: with the CPUs this
# process may use, they name the GEMM calibration that applies (``gemm.calibration_key``
# reads this tuple), so code compiled under one setting is not loaded under another,
# whose calibration may choose the other kernel.
BLAS_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
            "GOTO_NUM_THREADS")


def _cpus():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def _describe(jaxpr, out):
    names = {}

    def var(v):
        if type(v) is core.Literal:
            return f"L({_value(v.val)}:{_aval(v.aval)})"
        n = names.get(id(v))
        if n is None:
            raise _Opaque("an unbound variable")
        return n

    def bind(v):
        names[id(v)] = f"v{len(names)}"
        out.append(f"{names[id(v)]}:{_aval(v.aval)}")

    out.append(f"jaxpr {len(jaxpr.constvars)} {len(jaxpr.invars)} {len(jaxpr.eqns)}")
    for v in list(jaxpr.constvars) + list(jaxpr.invars):
        bind(v)
    for eqn in jaxpr.eqns:
        prim = eqn.prim
        out.append(f"eqn {prim.name} {type(prim).__qualname__} "
                   + " ".join(var(v) for v in eqn.inputs))
        for k in sorted(eqn.params):
            v = eqn.params[k]
            if callable(v) and not isinstance(v, (core.Jaxpr, core.ClosedJaxpr, type, np.dtype)) \
                    and prim.name in _FUNCTION_PARAMS:
                out.append(f" {k}=<rule>")     # (a custom rule: the compiled code inlines the call)
                continue
            out.append(f" {k}=")
            _param(v, out)
        for v in eqn.outputs:
            bind(v)
    out.append("out " + " ".join(var(v) for v in jaxpr.outvars))


def _aval(a):
    if type(a) is not core.ShapedArray:
        raise _Opaque(type(a).__name__)
    return f"{a.dtype.str}{a.dtype.descr if a.dtype.kind == 'V' else ''}{a.shape}{'w' if a.weak_type else ''}"


def _value(v):
    t = type(v)
    if t in (bool, int, float, complex, str, bytes, type(None)):
        return f"{t.__name__}:{v!r}"
    if isinstance(v, (np.ndarray, np.generic)):
        a = np.asarray(v)
        if a.dtype.hasobject:
            raise _Opaque("an object array")
        return f"{t.__name__}:{a.dtype.str}{a.dtype.descr if a.dtype.kind == 'V' else ''}{a.shape}:" \
               + hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()
    raise _Opaque(t.__name__)


def _param(v, out):
    t = type(v)
    if t is tuple or t is list:
        out.append(f"{t.__name__}[")
        for x in v:
            _param(x, out)
        out.append("]")
    elif t is core.Jaxpr:
        _describe(v, out)
    elif t is core.ClosedJaxpr:
        _describe(v.jaxpr, out)
        out.append("consts " + " ".join(_value(c) for c in v.consts))
    elif isinstance(v, np.dtype):
        out.append(f"dtype:{v.str}{v.descr if v.kind == 'V' else ''}")
    elif t is core.ShapedArray:
        out.append(_aval(v))
    elif t is slice:
        out.append(f"slice({_value(v.start)},{_value(v.stop)},{_value(v.step)})")
    elif t is dict:
        out.append("dict[")
        for k in sorted(v, key=repr):
            out.append(_value(k))
            _param(v[k], out)
        out.append("]")
    elif isinstance(v, enum.Enum):
        out.append(f"enum:{t.__module__}.{t.__qualname__}.{v.name}")
    elif t is type and v.__module__ in ("builtins", "numpy"):
        out.append(f"type:{v.__module__}.{v.__qualname__}")
    elif v is Ellipsis:
        out.append("Ellipsis")
    elif _stateless(t):
        out.append(f"marker:{t.__module__}.{t.__qualname__}")
    else:
        out.append(_value(v))


def _stateless(t):
    """Whether ``t`` is one of the library's classes whose instances hold no state (empty
    ``__slots__`` down to ``object``): such an object is a marker, all of it said by its
    class -- an index spec's ``ARRAY`` (``primitives.indexing``), where an array index
    goes in ``x[idx]`` and ``x.at[idx]``; without it, no program indexing with an array (a
    gather of neighbours, a scatter) had a key, and each compiled again in every process."""
    return t.__module__.startswith("tangentia.") and all(
        c.__dict__.get("__slots__", None) == () for c in t.__mro__[:-1])


_VERSION = []


def _version():
    """The library's files (name, size, modification time), the versions of Python and
    NumPy, numba's, llvmlite's and SciPy's version files (size, modification time), and this
    format."""
    if not _VERSION:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        parts = [FORMAT.decode(), sys.version, np.__version__]
        for dist in ("numba", "llvmlite", "scipy"):   # (their files, not imported: numba is not)
            spec = importlib.util.find_spec(dist)
            for name in ("__init__.py", "_version.py", "version.py"):
                path = os.path.join(os.path.dirname(spec.origin), name) if spec and spec.origin else ""
                if os.path.exists(path):
                    st = os.stat(path)
                    parts.append(f"{path} {st.st_size} {st.st_mtime_ns}")
        _sources(root, "", parts)
        _VERSION.append(hashlib.sha256("\n".join(parts).encode()).hexdigest())
    return _VERSION[0]


def _sources(path, rel, parts):
    """``"<relative path> <size> <mtime>"`` of every ``.py`` file under ``path``, sorted by
    name per directory (``os.scandir``: a first call's 1-2 ms, where ``os.walk`` and
    ``relpath`` took 4-5)."""
    with os.scandir(path) as it:
        entries = sorted(it, key=lambda e: e.name)
    for e in entries:
        if e.name.endswith(".py"):
            st = e.stat()
            parts.append(f"{rel}{e.name} {st.st_size} {st.st_mtime_ns}")
        elif e.name != "__pycache__" and e.is_dir(follow_symlinks=False):
            _sources(e.path, f"{rel}{e.name}/", parts)


def _calibrations():
    """The GEMM calibrations on disk (the generated code's choice of kernel reads them)."""
    root = cache_root()
    try:
        names = sorted(n for n in os.listdir(root) if n.startswith("gemm-calibration-"))
    except OSError:
        return ""
    h = hashlib.sha256()
    for n in names:
        try:
            with open(os.path.join(root, n), "rb") as f:
                h.update(n.encode() + b"\0" + f.read())
        except OSError:
            h.update(n.encode() + b"\0?")
    return h.hexdigest()


def _path(key):
    from . import fast_dir
    return os.path.join(fast_dir(), key + ".bin")


# ---------------------------------------------------------------------------
# The calling wrapper (shared with ``native``)

def _splitter(split):
    """``outs(returned) -> list of arrays``: the program's outputs from what it returned,
    per ``split`` entry ``(index, None, None)`` the array at ``index``, ``(index, row,
    shape)`` a view of row ``row`` of the stack at ``index`` (``codegen._Gen.returned``:
    the outputs of a loop's copies, one stack each; rows never overlap)."""
    ndarray = np.ndarray

    def outs(ret):
        rows = {}
        res = []
        for j, row, shape in split:
            if row is None:
                res.append(ret[j])
                continue
            r = rows.get(j)
            if r is None:
                a = ret[j]
                r = rows[j] = a.reshape(-1) if shape == () else list(a.reshape((-1,) + shape))
            res.append(r[row, ...] if type(r) is ndarray else r[row])
        return res
    return outs


def runner(entry, ins, outs, packed=(), call=None, ptrs=(), split=None, buffers=(), addressed=()):
    """The callable ``run(*args) -> list of arrays`` around a compiled entry point.

    ``ins``/``outs``: ``(shape, dtype, float0)`` of the program's inputs and outputs.
    Arguments are made C-contiguous writable arrays of the program's dtypes (copies
    only when they are not), ``float0`` arguments are dropped and ``float0`` outputs made
    here (they carry no data); those at the indices ``packed`` are concatenated into one
    float64 array (``native._packed_inputs``).  ``call(entry, args)``: how to call the
    entry point (``sigint.call_interruptible``), if not directly; ``ptrs``: the
    addresses of the program's compile units (its last argument); ``split``: where the
    outputs are in what the program returns, if not one array each (``_splitter``);
    ``buffers``: ``(dtype, indices)``, other inputs concatenated likewise into one array
    of that dtype each, passed after the packed one (``native._Inputs.buffers``); ``addressed``:
    the indices of inputs passed as one int64 array of their data addresses, after the
    buffers (``native._addressed``: each made C-contiguous, aligned and writable, and
    held during the call), and an array the program returns over their memory (a
    reshape of one) is returned as a copy."""
    n_in = len(ins)
    groups = ([(tuple(packed), np.dtype(np.float64))] if packed else []) \
        + [(tuple(ix), np.dtype(dt)) for dt, ix in buffers]
    in_set = {i for ix, _ in groups for i in ix} | set(addressed)
    arrays = [(i, shape, dt) for i, (shape, dt, f0) in enumerate(ins) if i not in in_set and not f0]
    by_address = [(i, ins[i][0], ins[i][1]) for i in addressed]
    cats = [([(i, ins[i][0]) for i in ix], dt) for ix, dt in groups]
    zeros_out = [(i, np.zeros(shape, dt)) for i, (shape, dt, f0) in enumerate(outs) if f0]
    ndarray, concatenate, shape_of = np.ndarray, np.concatenate, np.shape
    tail = [np.array(list(ptrs), np.int64)] if ptrs else []
    more = bool(tail or addressed)      # (arguments after the buffers)
    unsplit = list if split is None else _splitter(split)
    from .sigint import raise_handled
    if addressed:
        from .addresses import filler
        fill, n_addr, int64 = filler(), len(addressed), np.dtype(np.int64)
        unsplit = _owning(unsplit)

    def caller(consts):
        """``fn(*rest)`` computing the program of ``(*consts, *rest)``, its leading inputs
        ``consts`` (a program's constants, which ``jit`` would pass at every call; none for
        ``run``) converted and concatenated here, once: the packed ones are the first
        elements of the packed array (inputs are packed in order), so a call concatenates
        that prefix with its own packed arguments.  The packed constants' values are read
        now; the others are passed as they are (``jit`` binds constants it copied when it
        traced the program, as JAX's jit captures a closed-over array's value)."""
        k = len(consts)
        if k > n_in:
            raise TypeError(f"the compiled program takes {n_in} arguments, got {k} constants")
        pre = [_converted(consts[i], shape, dt) for i, shape, dt in arrays if i < k]
        rest = [(i - k, shape, dt) for i, shape, dt in arrays if i >= k]
        bcats = []   # (the constants' part concatenated or None, the call's (index, shape), dtype)
        for items, dt in cats:
            for i, shape in items:
                if i < k and shape_of(consts[i]) != shape:
                    raise TypeError(f"compiled program: an argument of shape "
                                    f"{shape_of(consts[i])} where {shape} was compiled for")
            mine = [consts[i] for i, _ in items if i < k]
            prefix = concatenate(mine, axis=None, dtype=dt, casting="unsafe") if mine else None
            bcats.append((prefix, [(i - k, shape) for i, shape in items if i >= k], dt))
        n_rest = n_in - k
        table = None
        if addressed:
            bound = [_converted(consts[i], shape, dt, True) for i, shape, dt in by_address if i < k]
            by_call = [(i - k, shape, dt) for i, shape, dt in by_address if i >= k]

            def table(args, conv):
                """Append the table of the addressed inputs' data addresses to ``conv``; the
                arrays (converted: C-contiguous, aligned, writable), to hold for the call."""
                held = bound.copy()
                held.extend(_converted(args[i], shape, dt, True) for i, shape, dt in by_call)
                conv.append(fill(np.empty(n_addr, int64), *held))
                return held

        def call_(*args):
            if len(args) != n_rest:
                raise TypeError(f"the compiled program takes {n_rest} arguments, got {len(args)}")
            conv = pre.copy()
            for i, shape, dt in rest:
                a = args[i]
                if type(a) is not ndarray or a.dtype != dt or not a.flags.c_contiguous \
                        or not a.flags.writeable:
                    a = np.array(a, dtype=dt, order="C", copy=True)
                if a.shape != shape:
                    raise TypeError(f"compiled program: an argument of shape {a.shape} where "
                                    f"{shape} was compiled for")
                conv.append(a)
            for prefix, own, dt in bcats:
                small = [args[i] for i, _ in own]
                for (i, shape), a in zip(own, small):
                    if (type(a) is not ndarray or a.shape != shape) and shape_of(a) != shape:
                        raise TypeError(f"compiled program: an argument of shape {shape_of(a)} "
                                        f"where {shape} was compiled for")
                if prefix is not None:
                    if not small:
                        conv.append(prefix)
                        continue
                    small.insert(0, prefix)
                conv.append(concatenate(small, axis=None, dtype=dt, casting="unsafe"))
            if more:    # (``held``: the arrays whose addresses the table holds, alive here)
                held = None if table is None else table(args, conv)
                conv.extend(tail)
            try:
                outs_ = entry(*conv) if call is None else call(entry, conv)
            except SystemError as e:    # (a signal handler's exception, as numba reports it)
                raise_handled(e)
            outs_ = unsplit(outs_)
            for i, z in zeros_out:
                outs_.insert(i, z)
            return outs_
        return call_

    run = caller(())

    def bind(consts):
        """``caller(consts)``: ``run`` with its leading inputs ``consts`` bound."""
        if not consts:
            return run
        bound = caller(consts)
        bound.entry, bound.call, bound.consts = entry, call, len(consts)
        return bound
    run.bind = bind
    run.entry, run.call = entry, call
    run.packed, run.buffers = tuple(packed), tuple((np.dtype(dt), tuple(ix)) for dt, ix in buffers)
    run.addressed = tuple(addressed)
    run.ins, run.outs = list(ins), list(outs)
    run.split = split
    return run


def _owning(outs):
    """``outs`` (``_splitter``'s, or ``list``) where each array the program returned that
    owns no memory (no base, not its own data: built over an input's memory, which the
    runner held only for the call) is a copy."""
    ndarray = np.ndarray

    def borrowed(a):
        return type(a) is ndarray and a.base is None and not a.flags.owndata

    def owning(ret):
        if any(map(borrowed, ret)):
            return outs([a.copy() if borrowed(a) else a for a in ret])
        return outs(ret)
    return owning


def _converted(a, shape, dt, aligned=False):
    """``a`` as the compiled code takes an input: a C-contiguous writable ndarray of ``dt``
    (copied if it is not one; nor ``aligned``, if asked), of the ``shape`` compiled for."""
    if type(a) is not np.ndarray or a.dtype != dt or not (a.flags.carray if aligned else
                                                          a.flags.c_contiguous and a.flags.writeable):
        a = np.array(a, dtype=dt, order="C", copy=True)
    if a.shape != shape:
        raise TypeError(f"compiled program: an argument of shape {a.shape} where {shape} was "
                        "compiled for")
    return a


def avals_spec(avals):
    """``[(shape, dtype, float0)]`` of ``avals`` (for ``runner``)."""
    return [(tuple(a.shape), a.dtype, a.dtype.kind == "V" and a.dtype.itemsize == 0) for a in avals]


# ---------------------------------------------------------------------------
# Saving (in a process that compiled the program with numba)

def save(jaxpr, run):
    """Keep the machine code of ``run`` (``native``'s callable for ``jaxpr``) for ``load``;
    whether it was kept.  Never raises."""
    try:
        return _save(jaxpr, run)
    except Exception:   # noqa: BLE001 - not kept; the program runs all the same
        return False


def _save(jaxpr, run):
    disp, entry = getattr(run, "dispatcher", None), getattr(run, "entry", None)
    if disp is None or entry is None:
        return False
    key = program_key(jaxpr)
    if key is None or not _defaults():
        return False
    path = _path(key)
    if os.path.exists(path):
        return False
    cres = next((c for c in disp.overloads.values() if c.entry_point is entry), None)
    program = _kept(disp, cres, cres.fndesc.llvm_cpython_wrapper_name) if cres is not None else None
    # the compile units, in the order of their addresses in the program's last argument
    units = [_kept(u.disp, u.disp.overloads.get(u.argtys), None) if not u.objmode and u.disp else None
             for u in run.units]
    if program is None or None in units:
        return False
    for u, k in zip(units, run.units):
        u["symbol"], u["key"] = u["cres"].fndesc.llvm_func_name, k.key
    from numba.core.runtime import nrt
    import llvmlite.binding as ll
    entry_data = dict(
        cpu=_cpu(ll), nrt=nrt.rtsys.library.get_llvm_str(), qualname=cres.fndesc.qualname,
        program={k: v for k, v in program.items() if k != "cres"},
        units=[{k: v for k, v in u.items() if k != "cres"} for u in units],
        ins=run.ins, outs=run.outs, packed=run.packed, interruptible=run.call is not None,
        split=run.split, buffers=run.buffers, addressed=run.addressed)
    payload = pickle.dumps(entry_data, protocol=pickle.HIGHEST_PROTOCOL)
    data = FORMAT + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    STATS["saved"] += 1
    return True


def _kept(disp, cres, symbol):
    """What ``load`` needs of one compiled function (``cres`` of ``disp``): its object file
    (from numba's cache entry: numba's JIT took its own copy), its undefined symbols, the
    environments of the function and of those linked into it (numba's implementations of
    np.empty, ...) with their constants (the dtypes of the arrays returned, ...), and the
    symbol whose address is wanted; None if it cannot be kept."""
    if cres is None or cres.objectmode or cres.lifted or cres.reload_init or cres.library.has_dynamic_globals:
        return None
    cache = getattr(disp, "_cache", None)
    if cache is None or not hasattr(cache, "_cache_file"):
        return None
    reduced = cache._cache_file.load(cache._index_key(tuple(cres.signature.args), disp.targetctx.codegen()))
    if reduced is None:
        return None
    _, kind, libdata = reduced[0]
    if kind != "object":
        return None
    envs = [(cres.fndesc.env_name, list(reduced[2].consts))]
    envs += [(env.env_name, list(env.consts)) for env in reduced[8] if env.env_name != cres.fndesc.env_name]
    if not all(isinstance(c, np.dtype) or type(c) in (int, float, bool, str, bytes, type(None))
               for _, cs in envs for c in cs):
        return None
    obj = bytes(libdata[0])
    return dict(cres=cres, obj=obj, undefined=_undefined_symbols(obj), envs=envs, symbol=symbol)


_DEFAULTS = {}


def _defaults():
    """Whether every module setting of the numba backend (a module-level ``NAME = constant``
    of its source files) has its value from the source (nothing lowered by a test)."""
    pkg = sys.modules[__name__.rpartition(".")[0]]
    here = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(here)):
        if not name.endswith(".py"):
            continue
        mod = sys.modules.get(f"{pkg.__name__}.{name[:-3]}")
        if mod is None:
            continue
        consts = _DEFAULTS.get(name)
        if consts is None:
            consts = _DEFAULTS[name] = _source_constants(os.path.join(here, name))
        for k, v in consts.items():
            if getattr(mod, k, v) != v and type(v) in (int, float, bool, str, bytes, tuple, frozenset):
                return False        # (tables -- dicts, lists -- are filled after their definition)
    return True


_ASSIGN = None


def _source_constants(path):
    """``{NAME: value}`` of the module-level lines ``NAME = <constant expression>`` of a file."""
    global _ASSIGN
    import ast
    import re
    if _ASSIGN is None:
        _ASSIGN = re.compile(r"^([A-Z][A-Z0-9_]*) = ([^#\n]+)", re.M)
    with open(path) as f:
        text = f.read()
    out = {}
    for name, expr in _ASSIGN.findall(text):
        try:
            out[name] = ast.literal_eval(expr.strip())
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            try:
                code = compile(expr.strip(), path, "eval")
                if not code.co_names:
                    out[name] = eval(code, {"__builtins__": {}})  # noqa: S307 - names-free constant
            except Exception:   # noqa: BLE001 - not a constant (continued lines, names, ...)
                pass
    return out


def _undefined_symbols(obj):
    """The names of the undefined symbols of an ELF64 little-endian object file."""
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        raise ValueError("not an ELF64 little-endian object")
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
    out = []
    for _, typ, _, _, off, size, link, _, _, entsize in secs:
        if typ != 2 or not entsize:      # SHT_SYMTAB
            continue
        stroff = secs[link][4]
        for k in range(1, size // entsize):
            st_name, _, _, shndx, _, _ = struct.unpack_from("<IBBHQQ", obj, off + k * entsize)
            if shndx == 0 and st_name:
                end = obj.index(b"\0", stroff + st_name)
                out.append(obj[stroff + st_name:end].decode())
    return sorted(set(out))


def _cpu(ll):
    return f"{ll.get_process_triple()} {ll.get_host_cpu_name()} {ll.get_host_cpu_features().flatten()}"


# ---------------------------------------------------------------------------
# Loading (numba not imported)

_RT = {}    # "ll", "engine", "dynfunc", "module": the runtime, set up at the first load
_UNPICKLED = {}
_LOADED = {}    # the entry's hash -> its callable (each object file is linked once per process)


def load(jaxpr):
    """The callable for ``jaxpr`` from its kept machine code, or None.  Never raises."""
    key = program_key(jaxpr)
    if key is None:
        return None
    path = _path(key)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    try:
        with _LOCK:
            return _load(data)
    except Exception:   # noqa: BLE001 - a damaged or foreign entry: compiled as before
        STATS["missed"] += 1
        return None


def _load(data):
    if not data.startswith(FORMAT):
        return None
    digest, _, payload = data[len(FORMAT):].partition(b"\n")
    key = hashlib.sha256(payload).hexdigest()
    if key.encode() != digest:
        return None
    fn = _LOADED.get(key)       # (the same entry for another trace of the program)
    if fn is not None:
        return fn
    e = pickle.loads(payload)
    rt = _runtime(e["nrt"])
    ll = rt["ll"]
    if e["cpu"] != _cpu(ll):
        return None
    ptrs = []
    for u in e["units"]:
        ptr = rt["units"].get(u["key"])
        if ptr is None:
            ptr = rt["units"][u["key"]] = _link(rt, u)
        if not ptr:
            return None
        ptrs.append(ptr)
    fnptr = _link(rt, e["program"])
    if not fnptr:
        return None
    fn = rt["dynfunc"].make_function(rt["module"], e["qualname"].split(".")[-1],
                                     "compiled wrapper (tangentia's machine-code cache)", fnptr,
                                     rt["envs"][-len(e["program"]["envs"])], rt["engine"])
    STATS["loaded"] += 1
    from .sigint import call_interruptible
    fn = runner(fn, e["ins"], e["outs"], e["packed"], call_interruptible if e["interruptible"] else None, ptrs,
                e.get("split"), e.get("buffers", ()), e.get("addressed", ()))
    return _LOADED.setdefault(key, fn)


def _link(rt, item):
    """Add one kept function's object file to the JIT, set its environments (as numba's
    ``CompileResult._rebuild`` does) and return the address of its symbol; 0 if a symbol
    it needs is not defined here (the object is not added then)."""
    import ctypes
    ll, engine = rt["ll"], rt["engine"]
    for s in item["undefined"]:
        if s in rt["helpers"]:
            ll.add_symbol(s, rt["helpers"][s])
    if any(s not in rt["defined"] and not ll.address_of_symbol(s) for s in item["undefined"]):
        return 0
    engine.add_object_file(ll.ObjectFileRef.from_data(item["obj"]))
    engine.finalize_object()
    ptr = engine.get_function_address(item["symbol"])
    for name, consts in item["envs"]:
        envptr = engine.get_global_value_address(name)
        if not envptr:
            return 0
        env = rt["dynfunc"].Environment({})
        env.consts.extend(consts)
        ctypes.c_void_p.from_address(envptr).value = id(env)
        rt["envs"].append(env)      # (alive while the process is: so is the code)
    return ptr


def _runtime(nrt_ir):
    """llvmlite's JIT with numba's C runtime's symbols, its memory manager's functions
    (``nrt_ir``) and ``numba_unpickle`` (once per process)."""
    if _RT:
        return _RT
    import llvmlite.binding as ll
    ll.initialize_native_target()
    ll.initialize_native_asmprinter()
    from .sigint import extension    # (importing it registers the Ctrl-C flag compiled loops poll)
    from .pool import SYMBOL         # noqa: F401 (registers the allocator of large arrays, alloc._empty's)
    helperlib = extension("numba._helperlib", "_helperlib")
    dynfunc = extension("numba._dynfunc", "_dynfunc")
    nrt = extension("numba.core.runtime._nrt_python", os.path.join("core", "runtime", "_nrt_python"))
    # (the symbols numba adds when its CPU target starts: the same addresses)
    ll.add_symbol("_Py_NoneStruct", id(None))
    for table in (helperlib.c_helpers, dynfunc.c_helpers):
        for name, addr in table.items():
            ll.add_symbol("numba_" + name, addr)
    import builtins
    for obj in vars(builtins).values():
        if isinstance(obj, type) and issubclass(obj, BaseException):
            ll.add_symbol("PyExc_" + obj.__name__, id(obj))
    for name, addr in nrt.c_helpers.items():
        ll.add_symbol(name if name.startswith("_") else "NRT_" + name, addr)
    mod = ll.parse_assembly(nrt_ir)
    unpickle = ll.parse_assembly(_UNPICKLE_IR.format(fn=id(_unpickle)))
    mod.link_in(unpickle)
    mod.verify()
    tm = ll.Target.from_default_triple().create_target_machine(opt=2, reloc="default", codemodel="jitdefault")
    engine = ll.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    _RT.update(ll=ll, engine=engine, dynfunc=dynfunc, helpers=helperlib.c_helpers, envs=[], units={},
               defined={f.name for f in mod.functions if not f.is_declaration},
               module=types.ModuleType("tangentia_numba_objcache"))
    return _RT


def _unpickle(address, data):
    """numba's ``serialize._numba_unpickle``: the objects compiled code refers to (the
    class of the arrays it returns, exceptions' classes and arguments), unpickled once."""
    obj = _UNPICKLED.get((address, data))
    if obj is None:
        obj = _UNPICKLED[(address, data)] = pickle.loads(data)
    return obj


# numba_unpickle(data, n, hash) -> new reference: _unpickle(address, bytes(data[:n]))
_UNPICKLE_IR = """
declare i8* @PyBytes_FromStringAndSize(i8*, i64)
declare i8* @PyLong_FromVoidPtr(i8*)
declare i8* @PyObject_CallFunctionObjArgs(i8*, ...)
declare void @Py_DecRef(i8*)

define i8* @numba_unpickle(i8* %data, i32 %n, i8* %hashed) {{
entry:
  %len = sext i32 %n to i64
  %buf = call i8* @PyBytes_FromStringAndSize(i8* %data, i64 %len)
  %nobuf = icmp eq i8* %buf, null
  br i1 %nobuf, label %fail, label %addr
addr:
  %a = call i8* @PyLong_FromVoidPtr(i8* %data)
  %noaddr = icmp eq i8* %a, null
  br i1 %noaddr, label %fail1, label %call
call:
  %fn = inttoptr i64 {fn} to i8*
  %r = call i8* (i8*, ...) @PyObject_CallFunctionObjArgs(i8* %fn, i8* %a, i8* %buf, i8* null)
  call void @Py_DecRef(i8* %a)
  call void @Py_DecRef(i8* %buf)
  ret i8* %r
fail1:
  call void @Py_DecRef(i8* %buf)
  br label %fail
fail:
  ret i8* null
}}
"""
