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
import re
import sys
import tempfile
import threading
import time
import warnings
import weakref

import numpy as np

import numba
from numba import types as nbt
from numba.core import errors as numba_errors

from ...core import ProgramMemo, short_dtype_name
from ...primitives import control_flow as CF
from ..backend import COMPILE_THREAD, Backend, cache_root
from .memo import COMPILED, Counts
from . import alloc, codegen, elementwise_loop, helpers, irblock, objcache, rowio, vecmath, vecmath_trig
from . import reroll, unit_consts
from .codegen import (SMALL, Unsupported, _Gen, _check_dtype, _is_float0, _nbtype, _nested, _size,
                      _lit, _typed, _weight, AV, SV, ZV)
from .plan import Settings
from .rowio import flat_types, flat_values
from .rules import ELEMENTWISE, FUSIBLE, ROWS, RULES, all_primitives, gemm_bound, lowering_paths

__all__ = ["NumbaCompiler", "all_primitives", "lowering_paths", "SMALL"]
# Generated functions are called from Python through their dispatcher (programs) or from
# compiled code (outlined bodies; compile units, through their address), never as C
# callbacks: numba need not compile a C-callable wrapper (``cfunc``) around each.  Units
# are never called from Python either: no Python wrapper (boxing each of their
# arguments and results) for them.  Pendulum gradient, cold: 0.2-0.4 s CPU less of 2.7-3.2.
_NJIT_OPTIONS = dict(error_model="numpy", no_cfunc_wrapper=True)
_UNIT_OPTIONS = dict(_NJIT_OPTIONS, no_cpython_wrapper=True)


# ---------------------------------------------------------------------------
# The lean pipeline
#
# numba's default pipeline rebuilds SSA form (``reconstruct_ssa``) and takes it down again
# before lowering (``strip_phis``), so that a name assigned values of different types gets
# one type per assignment.  Generated code names each value once (a loop's carries, the
# one exception, keep their type around the loop), so the two passes buy nothing there and
# cost a quarter of numba's passes: jit(jacrev(grad)) of the pendulum loss (6,305
# equations) 15.4 -> 12.1 s CPU, cold.  Without SSA, numba gives every name one type, the
# unification of all its assignments; ``_SameTypes`` checks, after typing, that each
# assignment to a named variable has exactly the variable's type (so unification widened
# nothing: no number can come out of other types than under the default pipeline), and
# otherwise fails the compile, which ``_compile_lean`` then repeats under the default
# pipeline.  ``TANGENTIA_NUMBA_LEAN=0`` compiles everything under the default pipeline.

_LEAN = {}      # "compiler": the pipeline class, made at first use
LEAN_STATS = {"lean": 0, "default": 0}   # compiles by pipeline (the fallbacks: "default")


def _lean_options(options):
    """``options`` with the lean pipeline (unless ``TANGENTIA_NUMBA_LEAN=0``)."""
    if os.environ.get("TANGENTIA_NUMBA_LEAN", "1") == "0":
        return options
    if "compiler" not in _LEAN:
        _LEAN["compiler"] = _make_lean_compiler()
    return dict(options, pipeline_class=_LEAN["compiler"])


class _NotLean(numba_errors.NumbaError):
    """A program the lean pipeline would type differently (``_SameTypes``)."""


def _analysis_pass(name, check):
    """A numba analysis pass (registered as ``tangentia_<name>``) running ``check(state)``."""
    from numba.core.compiler_machinery import AnalysisPass, register_pass

    def __init__(self):
        AnalysisPass.__init__(self)

    def run_pass(self, state):
        check(state)
        return False
    cls = type(name, (AnalysisPass,), {"_name": "tangentia_" + name, "run_pass": run_pass,
                                       "__init__": __init__, "__doc__": check.__doc__})
    return register_pass(mutates_CFG=False, analysis_only=True)(cls)


def _make_lean_compiler():
    from numba.core import ir
    from numba.core.compiler import CompilerBase, DefaultPassBuilder
    from numba.core.typed_passes import NativeLowering, NopythonTypeInference, PreLowerStripPhis

    def same_types(state):
        """Fail unless every assignment to a named variable has the variable's type."""
        typemap, calltypes = state.typemap, state.calltypes
        unliteral = nbt.unliteral
        for block in state.func_ir.blocks.values():
            for st in block.body:
                if type(st) is not ir.Assign or st.target.name.startswith("$"):
                    continue
                v = st.value
                if type(v) is ir.Var:
                    got = typemap.get(v.name)
                elif type(v) is ir.Expr and calltypes.get(v) is not None:
                    got = calltypes[v].return_type
                elif type(v) is ir.Const:
                    got = state.typingctx.resolve_value_type(v.value)
                else:
                    continue
                want = typemap.get(st.target.name)
                if got is not None and want is not None and unliteral(got) != want:
                    raise _NotLean(f"{st.target.name}: {got} assigned to a {want}")

    def sized_library(state):
        """The code library of the function, made a ``SizedLibrary`` (before lowering)."""
        if state.library is None:
            state.library = state.targetctx.codegen().create_library(state.func_id.func_qualname)
            state.library.enable_object_caching()
        if type(state.library) is _sized_library_class().__base__:
            state.library.__class__ = _sized_library_class()

    _SameTypes = _analysis_pass("same_types", same_types)
    _SizedLibraryPass = _analysis_pass("sized_library", sized_library)

    class LeanCompiler(CompilerBase):
        def define_pipelines(self):
            self.state.flags.enable_ssa = False
            pm = DefaultPassBuilder.define_nopython_pipeline(self.state, "tangentia_lean")
            passes = []
            for p in pm.passes:
                if p[0] is NativeLowering:
                    passes.append((_SizedLibraryPass, "large functions at -O1"))
                if p[0] is not PreLowerStripPhis:
                    passes.append(p)
                if p[0] is NopythonTypeInference:
                    passes.append((_SameTypes, "each named variable has one type"))
            pm.passes = passes
            return [pm]
    return LeanCompiler


# ---------------------------------------------------------------------------
# LLVM's pipeline for large generated functions
#
# numba optimizes every function with LLVM's -O3 pipeline (function passes, module passes
# with the loop vectorizer) and generates machine code at -O3.  For a large generated
# function -- thousands of scalar statements, loops over rows -- that costs most of the
# compile (scan of 100 dense layers: 7.5 of 13 s CPU; chain of 1000 operations: 5.0 of
# 7.6 s) and buys nothing at run time: what -O3 adds to -O1 (GVN, jump threading,
# correlated value propagation, dead-store elimination, the SLP vectorizer, the fuller
# code generator) finds little in code that names each value once and whose few loops are
# over rows.  A function with at least ``LARGE_IR`` lines of LLVM IR as numba lowered it
# is optimized at -O1 (function passes; one module pass manager with the loop vectorizer
# and numba's reference-count pruning) and its machine code generated at -O1.  No float
# operation is reassociated or contracted at either level (no fast-math flags), so the
# numbers are the same, bit for bit.  The threshold: the pendulum gradient's two functions
# (6,661 and 11,929 lines) ran as fast at -O1 (113-120 us per call either way); a tiny
# program is ~1,700 lines (the loop vectorizer stays on, for elementwise loops).  Measured on the
# chain and scan families (fresh process, empty caches, CPU s, pinned, loaded machine,
# 2026-12-06): see benchmarks/RESULTS.md, "Cold first calls".  ``TANGENTIA_NUMBA_LARGE_IR=0``
# turns it off; another number sets the threshold.  Only the generated programs and units
# (the lean pipeline's libraries) are concerned: the vector math, the GEMM kernel and
# numba's own functions keep numba's pipeline.  The setting is part of the name of a
# generated module (``_source_key``), so of numba's disk cache key.
LARGE_IR = 6000
LARGE_STATS = {"large": 0}   # libraries compiled under the -O1 pipeline


def _large_ir():
    try:
        return int(os.environ.get("TANGENTIA_NUMBA_LARGE_IR", LARGE_IR))
    except ValueError:
        return LARGE_IR


def _o1_pass_manager(codegen, module, loop_vectorize):
    """numba's module (``module``) or function pass manager at -O1, without the SLP
    vectorizer, and without loop unrolling: LLVM unrolled the generated copy loops of
    constant trip count (a broadcast to f64[8,51,2] became 8 copies of a 51-step body),
    and in ``jit(vmap(grad))`` of the pendulum ODE loss those loops were most of the
    program's and the forward unit's machine code (5,398 and 5,497 lines of optimized IR;
    2,314 and 2,218 without), for no run time (per call the same; the IR blocks' own loops
    were never unrolled, ``irblock._no_unroll``).  No float operation changes."""
    import llvmlite.binding as ll
    from numba.core import config
    from numba.core.codegen import _parse_refprune_flags
    pto = ll.create_pipeline_tuning_options(speed_level=1)
    pto.loop_vectorization = loop_vectorize
    pto.slp_vectorization = False
    pto.loop_unrolling = False
    pb = ll.create_pass_builder(codegen._tm, pto)
    pm = pb.getModulePassManager() if module else pb.getFunctionPassManager()
    if config.LLVM_REFPRUNE_PASS:
        pm.add_refprune_pass(_parse_refprune_flags())
    return pm, pb


def _sized_library_class():
    """numba's JIT code library, optimized and compiled at -O1 once it holds a large function."""
    cls = _LEAN.get("library")
    if cls is not None:
        return cls
    import llvmlite.binding as ll
    from numba.core import cgutils
    from numba.core.codegen import JITCodeLibrary

    class SizedLibrary(JITCodeLibrary):
        _ir_lines = 0

        def add_ir_module(self, ir_module):
            ir = cgutils.normalize_ir_text(str(ir_module))
            self._ir_lines += ir.count("\n")
            mod = ll.parse_assembly(ir)
            mod.name = ir_module.name
            mod.verify()
            self.add_llvm_module(mod)

        def _large(self):
            limit = _large_ir()
            return 0 < limit <= self._ir_lines

        def _optimize_functions(self, ll_module):
            if not self._large():
                return super()._optimize_functions(ll_module)
            ll_module.data_layout = self._codegen._data_layout
            for fn in ll_module.functions:
                fpm, pb = _o1_pass_manager(self._codegen, False, loop_vectorize=False)
                fpm.run(fn, pb)

        def _optimize_final_module(self):
            if not self._large():
                return super()._optimize_final_module()
            mpm, pb = _o1_pass_manager(self._codegen, True, loop_vectorize=True)
            mpm.run(self._final_module, pb)

        def _finalize_final_module(self):
            if not self._large():
                return super()._finalize_final_module()
            # machine code from a target machine at -O1, handed to numba's JIT as numba
            # hands it a cached object (and kept for numba's disk cache)
            tm = _LEAN.get("tm1")
            if tm is None:
                options = dict(opt=1)
                self._codegen._customize_tm_options(options)
                tm = _LEAN["tm1"] = ll.Target.from_triple(ll.get_process_triple()) \
                    .create_target_machine(**options)
            obj = tm.emit_object(self._final_module)
            self._compiled_object = obj
            super()._finalize_final_module()
            self._compiled_object, self._compiled = obj, True
            LARGE_STATS["large"] += 1
    return _LEAN.setdefault("library", SizedLibrary)


def _compile_lean(disp, argtys):
    """``disp.compile(argtys)``; a program the lean pipeline cannot type as the default one
    would (``_NotLean``), or cannot compile at all, is compiled again under the default."""
    compiler = disp._compiler
    try:
        entry = disp.compile(argtys)
    except Exception:
        if compiler.pipeline_class is not _LEAN.get("compiler"):
            raise
        from numba.core.compiler import Compiler
        compiler.pipeline_class = Compiler
        compiler._failed_cache.clear()
        LEAN_STATS["default"] += 1
        return disp.compile(argtys)
    if compiler.pipeline_class is _LEAN.get("compiler"):
        LEAN_STATS["lean"] += 1
    return entry


def _settings():
    """The ``plan.Settings`` of a compile, read from this package's module settings
    (``codegen.SMALL``, ``codegen.OUTLINE_MIN_COST``, ``UNIT_MIN_COST``) and the
    environment (``TANGENTIA_NUMBA_UNITS``, ``TANGENTIA_NUMBA_IRBLOCK``): once per
    compile, and the key of its compiled code, so that code generated under other
    settings (a test lowering a threshold) is never reused."""
    units = os.environ.get("TANGENTIA_NUMBA_UNITS", "1") != "0"
    return Settings(codegen.SMALL, codegen.OUTLINE_MIN_COST, UNIT_MIN_COST if units else None,
                    os.environ.get("TANGENTIA_NUMBA_IRBLOCK", "1") != "0")


def _new_gen(settings):
    return _Gen(RULES, FUSIBLE, ELEMENTWISE, ROWS, blocks=irblock.lower_run if settings.blocks else None,
                units=_lower_unit, settings=settings, kernels=_kernel_call)


def _module_source(g, fname, params, lines=None):
    """The source of a module defining ``fname(*params)`` from what ``g`` generated
    (``lines``: the body's lines, by default ``g.lines``)."""
    head = ["import cmath", "import math", "import numpy as np", "import numba",
            f"from {alloc.__name__} import _empty",      # (np.empty without its overload's compile)
            f"from {helpers.__name__} import {', '.join(helpers.HELPERS)}",
            f"from {vecmath.__name__} import {', '.join(vecmath.INTRINSICS)}",
            f"from {vecmath_trig.__name__} import {', '.join(vecmath_trig.INTRINSICS)}", ""] + g.notes + [""]
    funcs = [f + "\n\n" for f in g.functions]
    # (numba keeps the environment pointer its object-mode blocks use from the first one
    # it lowers: inside a loop, it does not dominate a second loop's block, and LLVM
    # refuses the function -- numba issue #9574.  An empty block first defines it in the
    # entry block.)
    first = ["    with numba.objmode():", "        pass"] if g.objmode else []
    main = "\n".join(["@_jit", f"def {fname}({', '.join(params)}):"] + first
                     + (g.lines if lines is None else lines))
    return "\n".join(head) + "\n" + "\n".join(funcs) + main + "\n"


# Programs with at least this many scalarized or small float64 inputs take them packed in
# one array (``_packed_inputs``).
PACK_MIN_INPUTS = 4
PACK_MAX_ELEMENTS = 1 << 16     # elements packed at most (copied at each call)


def _packed_inputs(jaxpr, limit):
    """The indices of the inputs of ``jaxpr`` passed packed, one after the other, in
    one float64 array (the program's argument ``_xp``): its float64 inputs of at most
    ``irblock.ARRAY_MAX`` elements (in all at most ``PACK_MAX_ELEMENTS``), if it has at
    least ``PACK_MIN_INPUTS``; else none.  numba's code for an array argument (unboxing
    in the wrapper it compiles around the program, the array's structure, a read of
    each element) cost about 5 ms of compile per argument: the pendulum gradient's 41
    scalar constants (y0, the time grid's steps, the residuals) 0.2 s of its 1.6 s; in
    one array, with a read of one element each, 0.2 s less.  Calls cost no more (one
    ``np.concatenate`` instead of 41 conversions and unboxings).  A scalarized input
    is read from the buffer element by element; a larger one is a view of it
    (``rowio.view_at``), passed on to compile units and IR blocks as its offset in the
    buffer (``_Views``): the scan of 100 closed-over 8x8 matrices passed 100 arrays to
    its program and to each of its two units.  Past ``PACK_MAX_ELEMENTS`` none is packed,
    not even a later small one that would still fit: the layers of a network past the
    limit then all take their weights alike (addressed, ``_addressed``; their biases and
    gains buffered), and their copies form one loop (``codegen._Gen.run_plans``), where
    filling up the buffer gave some layers a packed bias and an addressed matrix, runs of
    copies taking their inputs three ways, three loops instead of one."""
    if one_loop(jaxpr) is not None:
        return ()
    idx, total = [], 0
    for i, v in enumerate(jaxpr.invars):
        n = _size(v.aval.shape)
        if v.aval.dtype == np.float64 and n <= max(limit, irblock.ARRAY_MAX):
            if total + n > PACK_MAX_ELEMENTS:
                break       # (the later ones not packed either: see below)
            idx.append(i)
            total += n
    return tuple(idx) if len(idx) >= PACK_MIN_INPUTS else ()


def _buffered_inputs(jaxpr, limit, packed):
    """``({input index: element offset}, ((dtype, indices), ...))``: the small inputs of
    ``jaxpr`` that are neither packed (``_packed_inputs``) nor float0, for the dtypes with at
    least ``PACK_MIN_INPUTS`` such inputs, at their offsets in their dtype's buffer; and the
    buffers, per dtype in the order of their first input, which the runner concatenates into
    one array each (``objcache.runner``'s ``buffers``), the program's arguments ``_xb0``,
    ``_xb1``, ... after ``_xp``: a fori_loop's 160 integer index constants at 40 slices were
    160 array arguments, 160 unboxings in numba's wrapper at each call and in its compile."""
    by = {}
    for i, v in enumerate(jaxpr.invars):
        a = v.aval
        if i not in packed and not _is_float0(a.dtype) and _size(a.shape) <= limit:
            by.setdefault(a.dtype, []).append(i)
    out, buffers = {}, []
    for dt, ix in by.items():
        if len(ix) >= PACK_MIN_INPUTS:
            off = 0
            for i in ix:
                out[i] = off
                off += _size(jaxpr.invars[i].aval.shape)
            buffers.append((dt, tuple(ix)))
    return out, tuple(buffers)


# Programs with at least this many array inputs of their own (neither packed nor buffered)
# take them as one table of their data addresses (``_addressed``).
ADDRESSED_MIN = 8


class _Inputs:
    """How a program takes its inputs (``_inputs``): ``packed``, the indices of those in
    ``_xp`` (``_packed_inputs``); ``buffered``, ``{index: offset}`` of those in the buffers
    ``_xb0``, ... (``_buffered_inputs``); ``buffers``, ``((dtype, indices), ...)``, the
    buffers in order (``_buffered_inputs``); ``addressed``, the indices of the arrays whose data
    addresses are the table ``_xa`` (``_addressed``).  The others are arguments of their
    own, in order; float0 inputs are not passed."""

    __slots__ = ("packed", "buffered", "buffers", "addressed")

    def __init__(self, packed=(), buffered=None, buffers=(), addressed=()):
        self.packed, self.buffered = packed, {} if buffered is None else buffered
        self.buffers, self.addressed = buffers, addressed


def _inputs(jaxpr, limit):
    """The ``_Inputs`` of ``jaxpr`` under the size limit ``limit`` of scalarized values."""
    if one_loop(jaxpr) is not None:
        return _Inputs()
    packed = _packed_inputs(jaxpr, limit)
    buffered, buffers = _buffered_inputs(jaxpr, limit, set(packed))
    return _Inputs(packed, buffered, buffers, _addressed(jaxpr, set(packed) | set(buffered)))


def _addressed(jaxpr, held):
    """The indices of the inputs of ``jaxpr`` (none of ``held``, packed or buffered) passed
    as one int64 array of their data addresses, the program's argument ``_xa`` (after the
    buffers): the arrays that would be arguments of their own, if there are at least
    ``ADDRESSED_MIN`` of them.  Each is rebuilt in the program from its address with its
    static shape and dtype (``_array_at``), where numba's wrapper unboxed each with code of
    its own and the program took 9 values per array (``addresses``): ``jit(grad)`` of a
    100-layer MLP of 64x64 layers, 200 weights, 3.8 -> ~2.8 s of compile.  The runner has
    made each a C-contiguous, aligned, writable array of its dtype, holds it for the call
    and fills the table (``addresses.fill``); an output the program returns over an
    input's memory is copied (``objcache.runner``)."""
    idx = [i for i, v in enumerate(jaxpr.invars) if i not in held and not _is_float0(v.aval.dtype)]
    return tuple(idx) if len(idx) >= ADDRESSED_MIN else ()


_AT = {}        # (shape, dtype) -> the intrinsic of ``_array_at``
_AT_LOCK = threading.Lock()


def _array_at(shape, dtype):
    """The intrinsic ``at(table, k)``: the C-contiguous array of ``shape`` and ``dtype`` at
    the address ``table[k]`` (``_addressed``; no reference counted: the caller's array,
    which the runner holds during the call)."""
    key = (tuple(int(d) for d in shape), np.dtype(dtype))
    with _AT_LOCK:
        fn = _AT.get(key)
        if fn is None:
            fn = _AT[key] = _make_array_at(*key)
    return fn


def _make_array_at(shape, dtype):
    from llvmlite import ir
    from numba.core.extending import intrinsic
    from numba.core.imputils import impl_ret_untracked
    from numba.core.typing import signature
    nty = _nbtype(dtype)
    aty = nbt.Array(nty, len(shape), "C")
    strides, step = [], dtype.itemsize
    for d in reversed(shape):
        strides.insert(0, step)
        step *= max(int(d), 1)

    def typer(typingctx, table, k):
        if table != _PTRS or not isinstance(k, nbt.Integer):
            return None

        def codegen(context, builder, sig, args):
            # (the array's structure a constant but for its data pointer: no stack slot)
            llty = context.get_value_type(aty)
            i64, ptr = ir.IntType(64), llty.elements[0]
            dims = ir.ArrayType(i64, len(shape))
            const = ir.Constant(llty, [ptr(None), ptr(None), i64(_size(shape)), i64(dtype.itemsize),
                                       ir.Constant(llty.elements[4], ir.Undefined),
                                       dims([i64(d) for d in shape]), dims([i64(st) for st in strides])])
            k = context.cast(builder, args[1], sig.args[1], nbt.intp)
            addr = builder.load(builder.gep(builder.extract_value(args[0], 4), [k]))
            out = builder.insert_value(const, builder.inttoptr(addr, llty.elements[4]), 4)
            return impl_ret_untracked(context, builder, aty, out)
        return signature(aty, table, k), codegen
    typer.__name__ = "at_" + "_".join(map(str, shape)) + "_" + dtype.str.strip("<>|=")
    return intrinsic(typer)


class _Views:
    """The arrays of a generated function that are views of a buffer it holds (a
    program's ``_xp`` and ``_xb`` buffers, a unit's segment of its caller's): ``g.views``,
    array name -> ``(buffer name, element offset)``, read by ``_lower_unit`` (which
    passes a unit the buffer, not the arrays) and ``irblock`` (which reads the buffer in
    place).  Each view is defined at the function's start (``add``) and the definitions
    of those no statement reads are dropped at its end (``prune``).  A small value of
    a buffer is scalarized (``scalars``: an ``SV`` whose ``arr`` is its view), its
    elements read by one call at the function's start that reads, at the end, only
    those some statement uses (none: no call): a compile unit it is passed to takes
    the view (``_segments``), not the elements."""

    def __init__(self, g):
        self.g = g
        self.lines = []     # (line index, name)
        self.reads = []     # (line index, depth, buffer, points, names): ``scalars``' reads
        g.views = {}

    def add(self, buf, off, shape, dtype, prefix):
        g = self.g
        name = g.name(prefix)
        fn = g.helpers.get(("view", tuple(shape)))
        if fn is None:
            fn = g.helpers[("view", tuple(shape))] = g.glob(rowio.view_at(shape), "_v")
        g.emit(f"{name} = {fn}({buf}, {off})")
        self.lines.append((len(g.lines) - 1, name))
        g.views[name] = (buf, off)
        return AV(shape, dtype, name)

    def scalars(self, buf, items):
        """``SV``s of the small values ``items`` (``(offset, shape, dtype)``) of the buffer
        ``buf``, each backed by its view (``SV.arr``), their elements read by one call."""
        g = self.g
        avs = [self.add(buf, off, shape, dtype, "x") for off, shape, dtype in items]
        points = [(off + k,) for off, shape, _ in items for k in range(_size(shape))]
        names = [g.name("s") for _ in points]
        g.emit("pass")      # (the read: written by ``prune``, once the uses are known)
        self.reads.append((len(g.lines) - 1, g.depth, buf, points, names))
        it = iter(names)
        out = []
        for av in avs:
            sv = SV(av.shape, av.dtype, [next(it) for _ in range(_size(av.shape))])
            sv.arr = (g.scopes[-1], av)
            out.append(sv)
        return out

    def _write_reads(self):
        """Write each read of ``scalars``: of the elements some statement uses (one call),
        or none; the indices of the lines left empty."""
        g = self.g
        at = {k for k, *_ in self.reads}
        used = set(re.findall(r"[A-Za-z_]\w*", "\n".join(
            [ln for k, ln in enumerate(g.lines) if k not in at] + g.functions)))
        empty = set()
        for k, at_depth, buf, points, names in self.reads:
            keep = [(p, n) for p, n in zip(points, names) if n in used]
            if not keep:
                empty.add(k)
                continue
            depth, lines, g.depth, g.lines = g.depth, g.lines, at_depth, []
            rowio.read_elements(g, buf, [p for p, _ in keep], [n for _, n in keep])
            lines[k] = "\n".join(g.lines)
            g.depth, g.lines = depth, lines
        return empty

    def prune(self):
        g = self.g
        dead = self._write_reads() if self.reads else set()
        self.reads = []
        if self.lines:
            drop = {k for k, _ in self.lines}
            used = set(re.findall(r"[A-Za-z_]\w*", "\n".join(
                [ln for k, ln in enumerate(g.lines) if k not in drop and k not in dead]
                + g.functions)))
            dead |= {k for k, name in self.lines if name not in used}
        if dead:
            g.lines = [ln for k, ln in enumerate(g.lines) if k not in dead]


def _generate(jaxpr, settings=None, inputs=None, generic=None):
    """(source, globals, objmode, fallbacks, units) for a program without constvars
    under ``settings`` (default: ``_settings()``; fallbacks: the primitives run in object
    mode for want of a native lowering; units: the compile units it calls, whose
    addresses it takes in its last argument).  Its arguments (``inputs``, default
    ``_inputs``): the inputs that are not packed, buffered, addressed or float0, in
    order, then the packed ones' array ``_xp``, then the buffered ones' ``_xb0``,
    ``_xb1``, ..., then the addressed ones' table ``_xa``, then the units' addresses
    ``_up``.  ``generic``: a list to which the program's source generic in its sizes is
    appended (``_generic_program``: None where it has none)."""
    g = _new_gen(_settings() if settings is None else settings)
    g.split = True      # (outputs may be rows of stacks: ``codegen.RV``, split by the runner)
    views = _Views(g)
    loop = one_loop(jaxpr)
    if inputs is None:
        inputs = _inputs(jaxpr, g.limit)
    packed, others = set(inputs.packed), inputs.buffered
    addressed = {i: k for k, i in enumerate(inputs.addressed)}
    g.addressed = {}
    params, in_vals, offset, arrays = [], [], 0, []
    reads = []      # (position in in_vals, offset, aval): small packed inputs, read by one call
    held = {dt: [] for dt, _ in inputs.buffers}     # dtype -> [(position in in_vals, offset, aval)]
    for i, v in enumerate(jaxpr.invars):
        a = v.aval
        _check_dtype(a.dtype)
        if _is_float0(a.dtype):
            in_vals.append(ZV(a.shape, a.dtype))
            continue
        if i in packed:
            n = _size(a.shape)
            if g.is_small(a.shape):
                reads.append((len(in_vals), offset, a))
                in_vals.append(None)
            else:
                in_vals.append(views.add("_xp", offset, a.shape, a.dtype, "x"))
            offset += n
            continue
        if i in others:
            held[a.dtype].append((len(in_vals), others[i], a))
            in_vals.append(None)
            continue
        if i in addressed:
            name, key = g.name("x"), ("at", tuple(a.shape), a.dtype)
            fn = g.helpers.get(key)
            if fn is None:
                fn = g.helpers[key] = g.glob(_array_at(a.shape, a.dtype), "_at")
            g.emit(f"{name} = {fn}(_xa, {addressed[i]})")
            g.addressed[name] = (fn, "_xa", addressed[i])   # (read in loops: ``codegen._Gen.emit_run``)
            views.lines.append((len(g.lines) - 1, name))     # (dropped if no statement reads it)
            av = AV(a.shape, a.dtype, name)
        else:
            params.append(g.name("x"))
            av = AV(a.shape, a.dtype, params[-1])
            arrays.append((params[-1], tuple(a.shape)))
        in_vals.append(g.small(av) if g.is_small(a.shape) and loop is None else av)
    if reads:       # (``rowio.read_elements``: one call, not a ``getitem`` each)
        svs = views.scalars("_xp", [(off, a.shape, a.dtype) for _, off, a in reads])
        for (pos, _, _), sv in zip(reads, svs):
            in_vals[pos] = sv
    bufs = []
    for k, items in enumerate(held.values()):  # (the runner's ``buffers``: ``_Inputs.buffers``)
        bufs.append(f"_xb{k}")
        svs = views.scalars(bufs[-1], [(off, a.shape, a.dtype) for _, off, a in items])
        for (pos, *_), sv in zip(items, svs):
            in_vals[pos] = sv
    if packed:
        params.append("_xp")
    params.extend(bufs)
    if addressed:
        params.append("_xa")
    split = None
    if loop is not None:
        names = elementwise_loop.generate(g, jaxpr, *loop, params)
    else:
        names, split = g.returned(g.lower_jaxpr(jaxpr, in_vals))
    g.emit("return (" + "".join(n + ", " for n in names) + ")")
    views.prune()
    if g.deps:
        params.append("_up")
    if generic is not None:
        try:
            generic.append(None if loop is not None or g.objmode else _generic_program(g, params, arrays))
        except Exception:   # noqa: BLE001 - a rewrite that fails: the literal program, as before
            PROGRAM_STATS.add("failed")
            generic.append(None)
    return _module_source(g, "program", params), g.globals, g.objmode, g.fallbacks, split, list(g.deps)


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


def _source_key(source):
    """The hash naming a module of ``source`` (with the library's version tag and the
    settings of numba's compile of it, ``_compile_tag``: numba's disk cache keys a
    function by its module, so code compiled under another setting is never read)."""
    global _VERSION
    if _VERSION is None:
        _VERSION = _version_tag()
    text = _VERSION + "\n" + _compile_tag() + "\n" + source
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _compile_tag():
    """The settings of numba's compile of generated code: the pipeline
    (``TANGENTIA_NUMBA_LEAN``), LLVM's level for large functions
    (``TANGENTIA_NUMBA_LARGE_IR``) and the IR blocks' loops over repeated runs
    (``TANGENTIA_NUMBA_REROLL``, ``reroll``).  The numbers are the same under each; the code and
    its speed are not."""
    return (f"lean={os.environ.get('TANGENTIA_NUMBA_LEAN', '1') != '0'} large_ir={_large_ir()} "
            + reroll.tag())


def _load_module(source, glb, prefix="tangentia_numba_", named=None):
    """Import ``source`` from a file named by its hash (so numba can cache it; ``named``:
    the text hashed instead, which holds ``source``).  A file of that name whose text is
    not ``source`` (cut short, damaged) is written again (atomically: a new file renamed
    over it) before it is imported."""
    modname = prefix + _source_key(source if named is None else named)
    for d in (_cache_dir(), os.path.join(tempfile.gettempdir(), "tangentia-numba")):
        try:
            os.makedirs(d, exist_ok=True)
            path = os.path.join(d, modname + ".py")
            try:
                with open(path) as f:
                    good = f.read() == source
            except (OSError, UnicodeDecodeError):
                good = False
            if not good:
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
            try:
                spec.loader.exec_module(mod)
            except BaseException:
                # (as Python's import does: a Ctrl-C mid-import left the half-run module,
                # without ``program``, for every later compile of the program in the process)
                sys.modules.pop(modname, None)
                raise
        else:
            mod.__dict__.update(glb)
    return mod


class _Progress:
    """Prints a line on stderr if a compilation takes longer than ~2 s (of waiting: wall
    time), and one when it ends.  The estimate is of CPU seconds (``compile_estimate``: one
    core, empty caches), so the lines state the compile's CPU time beside it (of this thread,
    which compiles) and its wall time apart: on a loaded machine the wall time is a multiple
    of the CPU time, and the estimate is compared with what it estimates."""

    AFTER = 2.0     # seconds of wall time before the first line

    def __init__(self, what, estimate=None):
        self.what = what
        self.estimate = estimate   # CPU seconds, or None
        self.timer = None

    def __enter__(self):
        # (a tiered program's background compile keeps no one waiting: no line for it)
        if os.environ.get("TANGENTIA_COMPILE_PROGRESS", "1") != "0" and \
                threading.current_thread().name != COMPILE_THREAD:
            self.t0, self.cpu0 = time.perf_counter(), time.thread_time()
            guess = "" if self.estimate is None else f" (estimated {self.estimate:.1f} s of CPU)"
            self.timer = threading.Timer(self.AFTER, lambda: print(
                f"tangentia: compiling {self.what} with numba{guess} ... "
                f"(TANGENTIA_COMPILE_PROGRESS=0 silences this)", file=sys.stderr, flush=True))
            self.timer.daemon = True
            self.timer.start()
        return self

    def __exit__(self, *exc):
        if self.timer is not None:
            self.timer.cancel()
            dt = time.perf_counter() - self.t0
            if dt > self.AFTER:
                cpu = time.thread_time() - self.cpu0
                guess = "" if self.estimate is None else f", estimated {self.estimate:.1f} s"
                print(f"tangentia: compiled {self.what} in {cpu:.1f} s of CPU{guess} "
                      f"({dt:.1f} s of wall time)", file=sys.stderr, flush=True)


def _arg_types(jaxpr, inputs, units=()):
    """The numba types of the arguments of ``jaxpr``'s program (``_generate``)."""
    held = set(inputs.packed) | set(inputs.buffered) | set(inputs.addressed)
    return tuple(nbt.Array(_nbtype(v.aval.dtype), v.aval.ndim, "C") for i, v in enumerate(jaxpr.invars)
                 if not _is_float0(v.aval.dtype) and i not in held) \
        + ((_PACKED,) if inputs.packed else ()) \
        + tuple(nbt.Array(_nbtype(dt), 1, "C") for dt, _ in inputs.buffers) \
        + ((_PTRS,) if inputs.addressed else ()) + ((_PTRS,) if units else ())


def _compile_program(jaxpr, settings, estimate=None):
    inputs = _inputs(jaxpr, settings.limit)
    generic = []
    source, glb, objmode, fallbacks, split, units = _generate(jaxpr, settings, inputs, generic)
    argtys = _arg_types(jaxpr, inputs, units)
    with _Progress(f"a program of {_weight(jaxpr)} equations",
                   estimate), _fast_typing():
        for u in reversed(units):       # (a unit's own units first)
            u.compile()
        entry = None
        if generic and generic[0] is not None:
            gsource, named, extra = generic[0]
            try:
                disp, entry = _program_entry(gsource, dict(glb, **extra), objmode, argtys, named)
                PROGRAM_STATS.add("generic")
            except Exception:   # noqa: BLE001 - a rewritten source numba refuses: the literal one
                _FAILED.add(named)
                PROGRAM_STATS.add("failed")
        if entry is None:
            disp, entry = _program_entry(source, glb, objmode, argtys)
            PROGRAM_STATS.add("literal")
    return _wrapper(disp, entry, jaxpr, source, units, inputs, split), fallbacks


def _program_entry(source, glb, objmode, argtys, named=None):
    """``(dispatcher, entry point)`` of the program of ``source`` (its module named by the
    hash of ``named``, default ``source``) for ``argtys``, compiled or loaded from numba's
    cache (counted in ``PROGRAM_STATS``)."""
    # objmode blocks hold the GIL anyway (and numba warns about nogil there)
    glb = dict(glb, _jit=numba.njit(cache=not objmode, nogil=not objmode,
                                    **(_NJIT_OPTIONS if objmode else _lean_options(_NJIT_OPTIONS))))
    disp = _load_module(source, glb, named=named).program
    hits, had = sum(disp.stats.cache_hits.values()), argtys in disp.overloads
    # the entry point of this program's signature: programs of the same source (an
    # identity, say) share one module and dispatcher across argument dtypes
    entry = _compile_lean(disp, argtys)
    PROGRAM_STATS.add("reused" if had else "loaded" if sum(disp.stats.cache_hits.values()) > hits
                      else "compiled")
    return disp, entry


_PACKED = nbt.Array(nbt.float64, 1, "C")


def _wrapper(disp, entry, jaxpr, source, units=(), inputs=None, split=None):
    """The callable ``fn(*args) -> list of arrays`` around the compiled program
    (``objcache.runner``, which the machine-code cache's loads use too; ``inputs``: how it
    takes its inputs, ``_Inputs``; ``split``: where the outputs are in what the program
    returns, ``codegen._Gen.returned``)."""
    inputs = _Inputs() if inputs is None else inputs
    # its loops poll for Ctrl-C (helpers)
    interruptible = any("if _interrupted():" in s for s in [source] + [u.source for u in units])
    run = objcache.runner(entry, objcache.avals_spec(jaxpr.in_avals), objcache.avals_spec(jaxpr.out_avals),
                          inputs.packed, helpers.call_interruptible if interruptible else None,
                          [u.ptr for u in units], split, inputs.buffers, inputs.addressed)
    run.source = _with_units(source, units)
    run.dispatcher = disp
    run.units = units       # (their code must outlive the program's)
    return run


def _with_units(source, units):
    """A program's source followed by its units' (for reading; the kernels it calls,
    ``_Kernel``, are named in its notes)."""
    return source + "".join(f"\n# ---- unit {u.key} (tangentia_numba_unit_{u.key}.py)\n{u.source}"
                            for u in units if type(u) is _Unit)


class _PlainColors:
    def _plain(self, msg):
        return msg

    code = errmsg = filename = indicate = highlight = reset = _plain


# ---------------------------------------------------------------------------
# numba's own functions, cached
#
# What numba compiles for a program besides its code -- the implementations of
# ``np.empty``, ``np.zeros``, array methods and the other ``@overload`` functions, one
# per type signature -- it compiles again in every process, and never caches: 0.2 s of
# CPU for four ``np.empty`` calls of distinct ranks in a new process.  While our
# programs compile (``_fast_typing``), the dispatcher numba makes for such an
# implementation gets a disk cache (``_overload_cache``) in ``<cache root>/numba/
# overloads``: numba's own cache files, keyed as numba keys them (the function's
# bytecode, the values it closes over, the argument types, the CPU, numba's source
# file's time stamp) and the flags it inherits from its caller.  A function numba could not cache (``has_dynamic_globals``,
# unpicklable values closed over) is compiled as before, without a warning; a cache
# file that cannot be read is compiled anew.  ``TANGENTIA_NUMBA_OVERLOAD_CACHE=0`` turns
# it off.

_OVERLOAD_CACHE = {}     # "class": the cache class, made at first use
OVERLOAD_STATS = {"cached": 0}   # overload dispatchers given a disk cache


def _overload_cache():
    """The ``numba.core.caching.FunctionCache`` subclass for ``@overload`` implementations."""
    cls = _OVERLOAD_CACHE.get("class")
    if cls is not None:
        return cls
    from numba.core import caching

    class Locator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = os.path.join(_cache_dir(), "overloads",
                                            self.get_suitable_cache_subpath(py_file))

        def get_cache_path(self):
            return self._cache_path

    class Impl(caching.CompileResultCacheImpl):
        _locator_classes = [Locator]

        def check_cachable(self, cres):       # (numba's warns; these are not the user's)
            return all(x.can_cache for x in cres.lifted) and not cres.library.has_dynamic_globals

    class OverloadCache(caching.FunctionCache):
        _impl_class = Impl

        def _index_key(self, sig, codegen):
            # (an implementation inherits its caller's flags -- the error model of a
            # program or a kernel, ... -- which numba's key leaves out)
            from numba.core.targetconfig import ConfigStack
            top = ConfigStack.top_or_none()
            return super()._index_key(sig, codegen) + ("" if top is None else top.summary(),)

        def load_overload(self, sig, target_context):
            try:
                return super().load_overload(sig, target_context)
            except Exception:   # noqa: BLE001 - unreadable entry, unpicklable key: compile
                return None

        def save_overload(self, sig, data):
            try:
                super().save_overload(sig, data)
            except Exception:   # noqa: BLE001 - not cached, still compiled
                pass
    return _OVERLOAD_CACHE.setdefault("class", OverloadCache)


def _caching_jit_decorator(orig):
    """``_OverloadFunctionTemplate._get_jit_decorator`` giving the dispatchers it makes
    an ``_overload_cache``."""
    from numba.core.caching import NullCache

    def get_jit_decorator(tself):
        jitter = orig(tself)

        def jit(**options):
            decorate = jitter(**options)

            def apply(pyfunc):
                disp = decorate(pyfunc)
                if type(getattr(disp, "_cache", None)) is NullCache:
                    try:
                        disp._cache = _overload_cache()(pyfunc)
                        OVERLOAD_STATS["cached"] += 1
                    except Exception:   # noqa: BLE001 - no source file, no cache directory
                        pass
                return disp
            return apply
        return jit
    return get_jit_decorator


def _overload_template():
    from numba.core.typing.templates import _OverloadFunctionTemplate
    return _OverloadFunctionTemplate


class _fast_typing:
    """Memoize two of numba's typing look-ups while our programs compile, and give
    numba's ``@overload`` implementations a disk cache (see above).

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
    _saved = _saved_jit = None
    _counted = {}

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
                OT = _overload_template()
                cls._saved_jit = OT._get_jit_decorator
                if os.environ.get("TANGENTIA_NUMBA_OVERLOAD_CACHE", "1") != "0":
                    OT._get_jit_decorator = _caching_jit_decorator(cls._saved_jit)
                # numba's NRT finds the reference counts of a value to incref or decref
                # by walking all its members (an ``extractvalue`` each): a tuple of 400
                # scalars is 400 dead instructions per assignment, 43,000 of the 89,000
                # lines of IR of ``jit(vmap(grad))`` of the pendulum's ODE loss.  Members
                # holding no NRT memory are skipped without walking them (the same
                # reference counts, found in the same order).
                from numba.core.runtime import context as RC
                cls._saved_ref = RC.NRTContext.get_meminfos
                counted = cls._counted

                def holds(dmm, ty):
                    key = (id(dmm), ty)
                    c = counted.get(key)
                    if c is None:
                        c = counted[key] = dmm[ty].contains_nrt_meminfo()
                    return c

                def walk(dmm, builder, ty, val):
                    model = dmm[ty]
                    out = [(ty, model.get_nrt_meminfo(builder, val))] if model.has_nrt_meminfo() else []
                    for mty, getter in model.traverse(builder):
                        if holds(dmm, mty):
                            out.extend(walk(dmm, builder, mty, getter(val)))
                    return out

                def get_meminfos(nself, builder, ty, val):
                    dmm = nself._context.data_model_manager
                    return walk(dmm, builder, ty, val) if holds(dmm, ty) else []
                RC.NRTContext.get_meminfos = get_meminfos
                # Typing and lowering raise and catch thousands of errors; their
                # messages need not be colored (colorama is slow).
                cls._saved_color = numba_errors._termcolor_inst
                numba_errors._termcolor_inst = _PlainColors()
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
                _overload_template()._get_jit_decorator = cls._saved_jit
                numba_errors._termcolor_inst = cls._saved_color
                from numba.core.runtime import context as RC
                RC.NRTContext.get_meminfos = cls._saved_ref


class NumbaCompiler(Backend):
    """Compiles a whole program into one ``numba.njit`` function (see the package docstring).

    ``estimate``: the seconds the compile is expected to take (for the progress line)."""

    def __init__(self, estimate=None):
        self.estimate = estimate

    name = "numba"
    slow_compile = True

    def compile(self, jaxpr):
        settings = _settings()      # (the key: code compiled under other settings is not reused)
        fn = COMPILED.get(jaxpr, settings)
        if fn is not None:
            return fn
        lock = _LOCK.setdefault(jaxpr, threading.Lock())
        with lock:
            fn = COMPILED.get(jaxpr, settings)
            if fn is None:
                fn = COMPILED.set(jaxpr, self._compile(jaxpr, settings), settings)
        return fn

    def _compile(self, jaxpr, settings):
        assert not jaxpr.constvars, "compile expects constants to be inputs"
        if (vector_bound(jaxpr) and one_loop(jaxpr) is None) or _has_ml_dtype(jaxpr):
            return _numpy_compile(jaxpr)
        try:
            fn, fallbacks = _compile_program(jaxpr, settings, self.estimate)
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
        """The code that runs ``jaxpr``: numba's, or (a first line starting with
        "# numba backend: " saying why) the NumPy backend's."""
        from ..backend import get_backend
        if vector_bound(jaxpr) and one_loop(jaxpr) is None:
            return ("# numba backend: a loop-free program over large arrays runs as NumPy calls "
                    "(vectorized ufuncs)\n" + get_backend("numpy").source(jaxpr))
        dts = sorted({short_dtype_name(dt) for dt in _ml_dtypes(jaxpr)})
        if dts:   # (as _compile: typed PRNG keys, bfloat16, float8, ...)
            return (f"# numba backend: numba has no type for {', '.join(dts)}; the NumPy "
                    "backend runs this program:\n" + get_backend("numpy").source(jaxpr))
        try:
            source, *_, units = _generate(jaxpr)
            return _with_units(source, units)
        except Unsupported as e:
            return (f"# numba backend: not compilable ({e}); the NumPy backend runs this "
                    "program:\n" + get_backend("numpy").source(jaxpr))


def compiled(jaxpr):
    """The compiled code of ``jaxpr`` under the current settings, or None."""
    return COMPILED.get(jaxpr, _settings())


def _values(jaxpr):
    """The variables of ``jaxpr`` and of the programs nested in it."""
    yield from jaxpr.invars
    yield from (o for e in jaxpr.eqns for o in e.outputs)
    for e in jaxpr.eqns:
        for sub in _nested(e):
            yield from _values(sub)


def _ml_dtypes(jaxpr):
    """The dtypes of ``jaxpr``'s values (nested programs included) that are ml_dtypes' or
    typed keys' (bfloat16, float8, int4, key<fry>, ...; NumPy kind 'V' and not float0):
    numba has none of them, so the NumPy backend runs the program (in float32 where JAX
    does, rounding to them)."""
    return (v.aval.dtype for v in _values(jaxpr)
            if v.aval.dtype.kind == "V" and not _is_float0(v.aval.dtype))


def _has_ml_dtype(jaxpr):
    """Whether a value of ``jaxpr`` has a dtype numba has no type for (``_ml_dtypes``)."""
    return next(_ml_dtypes(jaxpr), None) is not None


LARGE = 1 << 15  # elements: from here on NumPy's vectorized kernels beat scalar loops
_CONTROL_FLOW = (CF.while_p, CF.scan_p, CF.cond_p)


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
            if eqn.prim in _CONTROL_FLOW:
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



# ---------------------------------------------------------------------------
# Compile units
#
# A nested program (a loop body, a branch, a called function: whatever the rules lower
# through ``_Gen.call_jaxpr``) whose own code is large enough is generated into a module
# of its own, ``tangentia_numba_unit_<hash>.py``: names numbered from zero, its
# parameters its inputs' elements or arrays, nothing of the calling program in it, so
# the same body in another program (a longer time grid, an edited loss) has the same
# source, the same hash and numba's cached code.  The program calls it through its
# address (an argument ``_up`` of the program, filled in per process), not as a numba
# function: numba links a called function's module into the caller's and LLVM optimizes
# and generates code for the whole again, where a call through an address costs
# nothing to compile.  A unit's own units are called the same way, through addresses
# the unit takes as its last parameters (``_q0``, ...).

# A nested program costing at least this outside its own units (``plan.own_cost``) is a
# unit: the outlining pass (``plan.call_plan``) decides, from this setting as ``_settings``
# read it at the start of the compile.
UNIT_MIN_COST = 1000
_PTRS = nbt.Array(nbt.int64, 1, "C")
_UNITS = weakref.WeakValueDictionary()   # source hash -> _Unit: one per body and process
                                         # (while a compiled program or a unit calls it)
UNIT_STATS = Counts("compiled", "loaded", "reused")   # unit compiles, by outcome (thread-safe)


def _lower_unit(g, jaxpr, in_vals, ident=None):
    """``_Gen.units``: emit a call of ``jaxpr``, which the outlining pass made a compile
    unit (``plan.CallPlan``), as a call through the unit's address.  Arrays that are
    views of a buffer (``_Views``) reach the unit as segments of it (``_segments``).
    ``ident``: what makes two programs the same unit (default: the program object; the
    copies of a repeated segment, each its own program, share their structure's key)."""
    in_vals = [g.settle(v) for v in in_vals]
    lifted = unit_consts.lifted(jaxpr) if unit_consts.enabled() else None
    if lifted is not None:      # (its float constants: parameters, the values passed here)
        ident = id(jaxpr) if ident is None else ident
        jaxpr, lits = lifted
        in_vals += [SV((), a.aval.dtype, [_lit(a.val, a.aval.dtype)]) for a in lits]
    refs, segs = _segments(g, in_vals)
    seg_types = [None] * len(segs)     # (each segment's dtype: its buffer's; or a table's)
    addressed = getattr(g, "addressed", None) or {}
    for v, ref in zip(in_vals, refs):
        if ref is not None:
            seg_types[ref[0]] = _TABLE if segs[ref[0]][0] in _tables(addressed) else np.dtype(v.dtype).str
    key = ("unit", id(jaxpr) if ident is None else ident, tuple((type(v), v.shape, v.dtype) for v in in_vals),
           tuple(refs), tuple(zip((n for _, _, n in segs), seg_types)))
    unit = g.helpers.get(key)
    if unit is None:
        unit = g.helpers[key] = _make_unit(g.settings, jaxpr, in_vals, refs,
                                           [n for _, _, n in segs], seg_types)
    g.objmode |= unit.objmode
    g.fallbacks |= unit.fallbacks
    args = []
    for v, ref in zip(in_vals, refs):
        if type(v) is SV and ref is None:
            args.extend(_typed(e, v.dtype) for e in v.elems)
        elif type(v) is AV and ref is None:
            name = v.name
            if not name.isidentifier():
                name = g.name("a")
                g.emit(f"{name} = np.ascontiguousarray({v.name})")
            args.append(name)
    for buf, start, n in segs:
        args.append(_segment_view(g, buf, start, n))
    ptr = g.unit_ptr(unit)
    args.extend(g.unit_ptr(d) for d in unit.deps)
    outs, names = g.template_outputs(unit.template, grouped=True)
    caller = g.glob(unit.caller, "_u")
    g.notes.append(f"# {caller}: unit {unit.key}")
    call = f"{caller}({ptr}, {irblock._nest(g.packed(args))})"
    # (results in nested tuples of at most 16, as the unit returns them: numba loads a
    # tuple variable whole for each element unpacked, quadratic in a flat tuple's length)
    g.emit(f"{irblock._nest(names)} = {call}" if names else call)
    return outs


def _segments(g, in_vals):
    """Where the arrays of ``in_vals`` that are views of a buffer (``g.views``) are in
    the segments passed in their place: ``(refs, segs)``, ``refs[k]`` ``(segment, element
    offset in it)`` for such an array (else None), ``segs`` ``(buffer, start, length)``
    per segment.  An array right after one of a segment in the same buffer extends it:
    the closed-over constants of a loop body, packed in order, are one segment, and the
    unit's source (the offsets in its segments) is the same in every program passing
    them so.  Arrays the caller rebuilds from the address table (``g.addressed``) are
    passed so too, as a segment of the table (an entry each), which the unit reads
    with ``_array_at``: a scan body's unit took the 482 arrays of a scan over 1,500
    matrices as 4,340 arguments, and LLVM's function passes over the caller's two
    calls of it took 20 of the compile's 32 s."""
    views = getattr(g, "views", None) or {}
    addressed = getattr(g, "addressed", None) or {}
    # (a table's entries passed: one segment per stretch of consecutive entries, in
    # whatever order the arrays come, e.g. a reversed list of layers)
    entries = {}
    for v in in_vals:
        if type(v) is AV and v.name in addressed:
            entries.setdefault(addressed[v.name][1], set()).add(addressed[v.name][2])
    stretch = {}    # (table, entry) -> the segment of its stretch, (table, first entry, length)
    for t, ks in entries.items():
        run = []
        for k in sorted(ks) + [None]:
            if run and (k is None or k != run[-1] + 1):
                for j in run:
                    stretch[(t, j)] = (t, run[0], len(run))
                run = []
            if k is not None:
                run.append(k)
    refs, segs = [], []
    for v in in_vals:
        ref = views.get(v.name) if type(v) is AV else None
        if type(v) is SV and v.arr is not None and v.arr[0] in g.scopes:
            # (a small value read from a view (``_Views.scalars``): the view is passed)
            a = v.arr[1]
            if a.shape == v.shape and a.dtype == v.dtype:
                ref = views.get(a.name)
        if ref is None and type(v) is AV and v.name in addressed:
            # (an array rebuilt from its address, ``_addressed``: an entry of the table)
            t, k = addressed[v.name][1:]
            seg = stretch[(t, k)]
            if seg not in segs:
                segs.append(seg)
            refs.append((segs.index(seg), k - seg[1]))
            continue
        if ref is None:
            refs.append(None)
            continue
        buf, off = ref
        n = _size(v.shape)
        for k, (b, start, length) in enumerate(segs):
            if b == buf and start <= off and off + n <= start + length:   # (passed twice)
                refs.append((k, off - start))
                break
            if b == buf and off == start + length:
                segs[k] = (b, start, length + n)
                refs.append((k, off - start))
                break
        else:
            refs.append((len(segs), 0))
            segs.append((buf, off, n))
    return refs, segs


_TABLE = "table"    # (a unit's segment of its caller's address table: ``_segments``)


def _tables(addressed):
    """The names of the address tables of ``addressed`` (``g.addressed``)."""
    return {t for _, t, _ in addressed.values()}


def _at_entry(c, views, table, k, shape, dtype):
    """In the unit ``c``: the array at entry ``k`` of its segment ``table`` of the caller's
    address table (``_array_at``), itself addressed there (``c.addressed``: passed on to
    the units it calls as a segment, read in loops at a stride); dropped if unread."""
    name, key = c.name("p"), ("at", tuple(shape), np.dtype(dtype))
    fn = c.helpers.get(key)
    if fn is None:
        fn = c.helpers[key] = c.glob(_array_at(shape, dtype), "_at")
    c.emit(f"{name} = {fn}({table}, {k})")
    c.addressed[name] = (fn, table, k)
    views.lines.append((len(c.lines) - 1, name))
    return AV(shape, dtype, name)


def _segment_view(g, buf, start, n):
    """The expression of the segment ``buf[start:start + n]`` (``rowio.view_at``)."""
    fn = g.helpers.get(("view", (n,)))
    if fn is None:
        fn = g.helpers[("view", (n,))] = g.glob(rowio.view_at((n,)), "_v")
    return f"{fn}({buf}, {start})"


def _make_unit(settings, jaxpr, in_vals, refs=None, segs=(), seg_types=None):
    """Generate the unit computing ``jaxpr`` on values represented as ``in_vals`` (under
    the ``settings`` of the program calling it); ``refs`` and ``segs``: the values it
    takes as views of segments of lengths ``segs`` and dtypes ``seg_types`` (default
    float64) (``_segments``; a scalarized one read from its view, ``_Views.scalars``)."""
    c = _new_gen(settings)
    c.ptr_format = "_q{}"
    views = _Views(c)
    c.addressed = {}
    if refs is None:
        refs = [None] * len(in_vals)
    params, vals, argtys, arrays = [], [], [], []
    seg_names = [c.name("p") for _ in segs]
    small = {}      # segment -> [(position in vals, offset, value)]: scalarized views
    for v, ref in zip(in_vals, refs):
        if type(v) is ZV:
            vals.append(v)
        elif type(v) is SV and ref is not None:
            small.setdefault(ref[0], []).append((len(vals), ref[1], v))
            vals.append(None)
        elif type(v) is SV:
            els = [c.name("p") for _ in v.elems]
            params.extend(els)
            argtys.extend([_nbtype(v.dtype)] * len(els))
            vals.append(SV(v.shape, v.dtype, els))
        elif ref is not None and seg_types is not None and seg_types[ref[0]] == _TABLE:
            vals.append(_at_entry(c, views, seg_names[ref[0]], ref[1], v.shape, v.dtype))
        elif ref is not None:
            vals.append(views.add(seg_names[ref[0]], ref[1], v.shape, v.dtype, "p"))
        else:
            params.append(c.name("p"))
            argtys.append(nbt.Array(_nbtype(v.dtype), len(v.shape), "C"))
            vals.append(AV(v.shape, v.dtype, params[-1]))
            arrays.append((params[-1], tuple(v.shape)))
    for k, items in small.items():
        for (pos, _, _), sv in zip(items, views.scalars(seg_names[k], [(off, v.shape, v.dtype)
                                                                      for _, off, v in items])):
            vals[pos] = sv
    params.extend(seg_names)
    argtys.extend([_PACKED if seg_types is None or seg_types[k] is None else _PTRS if seg_types[k] == _TABLE
                   else nbt.Array(_nbtype(np.dtype(seg_types[k])), 1, "C") for k in range(len(seg_names))])
    outs = [c.settle(o) for o in c.lower_jaxpr(jaxpr, vals)]
    ret = c.result_items(outs)
    c.emit(f"return {irblock._nest(ret)}")
    views.prune()
    params.extend(c.ptr_format.format(k) for k in range(len(c.deps)))
    argtys.extend([nbt.int64] * len(c.deps))
    source = _module_source(c, "body", params)
    key = _source_key(source)
    with _MODULE_LOCK:
        unit = _UNITS.get(key)
        if unit is not None:
            UNIT_STATS.add("reused")
            return unit
    generic = None if c.objmode else _generic_source(c, params, arrays)
    with _MODULE_LOCK:
        unit = _UNITS.get(key)
        if unit is None:
            unit = _UNITS[key] = _Unit(key, source, c.globals, tuple(argtys),
                                       [(type(o), o.shape, o.dtype) for o in outs], list(c.deps),
                                       c.objmode, frozenset(c.fallbacks), generic)
        else:
            UNIT_STATS.add("reused")
    return unit


# ---------------------------------------------------------------------------
# Units generic in their sizes (issue 23)
#
# A unit's source names its sizes as literals (trip counts, allocations, reshapes), so
# the same layer at another batch size was another source, another module, another
# compile.  ``_generic_source`` rewrites the literals equal to a large leading dimension
# of one of the unit's array parameters (a batch, a time grid) as a name read from that
# parameter's shape on entry (``_n0 = p1.shape[0]``), and the unit's module is named by
# that source (``_Unit.key``).  The rewritten source computes, for the sizes of the
# arrays it is given, exactly what the literal source of those sizes computes, whichever
# literals were rewritten: so two programs whose rewritten sources (and the descriptions
# of the globals the source does not spell out, ``_described``) are identical share one
# compiled unit, and a size that changes a decision of the generator (a loop or BLAS, an
# IR block unrolled over the size, a divisor) changes the text, and so the module.
# Dimensions below ``GENERIC_MIN`` and those that are also a trailing dimension of a
# parameter stay literal (a 16-wide layer's inner loops keep their constant trip counts,
# which LLVM unrolls and vectorizes at a known width).  ``TANGENTIA_NUMBA_GENERIC=0``
# turns it off.  A rewritten unit numba cannot compile is compiled from its literal source.

GENERIC_MIN = 16
GENERIC_STATS = Counts("generic", "literal", "failed")   # units by the source compiled
_INT = re.compile(r"(?<![\w.])(?<![eE][+-])\d+(?![\w.])")    # (an integer literal's digits)
_NOTE = re.compile(r"# (\w+): ")


def _generic_source(c, params, arrays):
    """The source of the unit ``c`` generated (``params``; ``arrays``: ``(parameter,
    shape)`` of its array parameters) with its large leading sizes read from its
    arguments' shapes, and the text naming its module (that source and the descriptions
    of its globals); None where nothing is rewritten or a global cannot be described."""
    where, symbol = _generic_symbols(arrays)
    if not where:
        return None
    used = set()

    def sub(m):
        text, a, b = m.string, m.start(), m.end()
        d = int(m.group())
        if d not in symbol or (a and text[a - 1] == "[" and text[b:b + 1] == "]"):
            return m.group()        # (``t[16]``: a tuple's item needs a literal index)
        used.add(d)
        return symbol[d]

    lines = [line if _kept_literal(line) else _INT.sub(sub, line) for line in c.lines]
    if not used:
        return None
    described = _described(c)
    if described is None:
        return None
    head = [f"    {symbol[d]} = {where[d]}.shape[0]" for d in where if d in used]
    source = _module_source(c, "body", params, head + lines)
    return source, source + "\n# globals:\n" + "\n".join(described) + "\n"


def _generic_symbols(arrays):
    """``(where, symbol)``: ``_generic_dims(arrays)`` and each such size's name in the
    rewritten source (``_n0``, ...); both empty with ``TANGENTIA_NUMBA_GENERIC=0``."""
    if os.environ.get("TANGENTIA_NUMBA_GENERIC", "1") == "0":
        return {}, {}
    where = _generic_dims(arrays)
    return where, {d: f"_n{k}" for k, d in enumerate(where)}


def _kept_literal(line):
    """Whether a generated line is left as it is by the size rewrites (a comment, a string,
    or a name of the ``_n`` family: always right, only less shared)."""
    return "#" in line or "'" in line or '"' in line or "_n" in line


def _generic_dims(arrays):
    """``{size: parameter}``: the leading dimensions of at least ``GENERIC_MIN`` of the
    arrays ``arrays`` (``(parameter, shape)``) that are no array's trailing dimension, each
    with the first parameter it leads."""
    trailing = {d for _, shape in arrays for d in shape[1:]}
    where = {}
    for name, shape in arrays:
        if shape and shape[0] >= GENERIC_MIN and shape[0] not in trailing:
            where.setdefault(int(shape[0]), name)
    return where


def _described(c, glb=None):
    """A line per global of the unit ``c`` generated that its notes do not name: what it
    is, with its sizes (``rowio``'s and ``alloc``'s intrinsics by their memo's key, a
    helper by the generator's key, a numba type by its name); None if one is none of those.
    ``glb``: the globals to describe (default: ``c.globals``)."""
    noted = {m.group(1) for m in map(_NOTE.match, c.notes) if m}
    helpers = {n: k for k, n in c.helpers.items() if type(n) is str}
    memos = {}
    for memo in (getattr(rowio, "_MEMO", {}), getattr(alloc, "_MADE", {}), _AT, _VIEWS_N):
        for k, fn in list(memo.items()):
            memos[id(fn)] = k
    out = []
    for name, obj in sorted((c.globals if glb is None else glb).items()):
        if name in noted:
            continue
        if name in helpers:
            out.append(f"{name}: {helpers[name]!r}")
        elif id(obj) in memos:
            out.append(f"{name}: {memos[id(obj)]!r}")
        elif isinstance(obj, nbt.Type):
            out.append(f"{name}: {obj}")
        else:
            return None
    return out


# The program's top level, generic in its sizes (issue 23).  The same rewrite as a unit's,
# for the arrays the program takes as arguments of their own (a batch of data, not the
# packed or addressed ones, whose views have static shapes), and three more forms the top
# level needs: a multiple of a size (a stack of the layers' rows, ``10 * 128`` elements),
# the size less one or two (a reverse loop's start) and a float literal of such an integer (a
# mean's divisor, ``2048.0``: ``float(_n0 * 16)`` is the same double); and its views of
# stacks of rows (``rowio.view_at((128, 16))``) take their leading size from the call
# (``_view_n``).  The rewritten text evaluates, for the sizes it is run with, to the
# literal text of those sizes, so a program whose rewritten text and described globals
# are another's runs that one's compiled code with its own numbers; a size that changes a
# decision (packing, an IR block over the rows, BLAS or a loop) changes the text.  The
# machine-code cache (``objcache``) stays keyed by the program itself.

PROGRAM_STATS = Counts("generic", "literal", "failed", "loaded", "compiled", "reused")  # top levels
_SIZE = re.compile(r"(?<![\w.])(?<![eE][+-])(\d+)(\.0)?(?![\w.])")   # (an integer, or X.0)
_VIEWS_N = {}    # trailing shape -> the intrinsic of ``_view_n``
_FAILED = set()  # named texts of generic programs numba refused (this process)


def _generic_program(g, params, arrays):
    """``(source, named text, extra globals)`` of the program ``g`` generated (``params``;
    ``arrays``: ``(parameter, shape)`` of its own array parameters) with its large sizes
    read from its arguments' shapes (see above), or None (nothing rewritten, a global not
    described, ``TANGENTIA_NUMBA_GENERIC=0``)."""
    where, symbol = _generic_symbols(arrays)
    if not where:
        return None
    # (a multiple of a size is rewritten where its factor is one of a row's sizes: a stack
    # of k rows of (n, w) has k * n * w elements, while 2 * 128 = 256 is more likely 16 *
    # 16, which another batch keeps: rewritten, the two programs' texts would differ)
    rows = {d for _, shape in arrays for d in shape[1:] if d > 1}
    used = set()

    def size(v):
        if v in symbol:
            used.add(v)
            return symbol[v]
        for d, name in symbol.items():
            if d - 2 <= v < d:      # (a scan over the grid's steps: n - 1 of them, the last n - 2)
                used.add(d)
                return f"({name} - {d - v})"
        for d, name in symbol.items():
            if v > d and v % d == 0 and any((v // d) % w == 0 for w in rows):
                used.add(d)
                return f"({name} * {v // d})"
        return None

    def sub(m):
        text, a, b = m.string, m.start(), m.end()
        if m.group(2) is None and a and text[a - 1] == "[" and text[b:b + 1] == "]":
            return m.group()        # (``t[16]``: a tuple's item needs a literal index)
        e = size(int(m.group(1)))
        return m.group() if e is None else e if m.group(2) is None else f"float({e})"

    memos = {id(fn): k for k, fn in list(getattr(rowio, "_MEMO", {}).items())}
    glb, views = dict(g.globals), {}
    for name, obj in g.globals.items():
        k = memos.get(id(obj))
        if type(k) is tuple and len(k) == 2 and k[0] == "view" and len(k[1]) >= 1 and k[1][0] in symbol:
            views[name] = (f"{name}_n", k[1][0])
            glb[f"{name}_n"] = _view_n(k[1][1:])
    call = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, views)) + r")\(") if views else None

    def view(m):
        new, d = views[m.group(1)]
        used.add(d)
        return f"{new}({symbol[d]}, "

    lines = []
    for line in g.lines:
        if _kept_literal(line):
            lines.append(line)
            continue
        line = _SIZE.sub(sub, line)
        lines.append(line if call is None else call.sub(view, line))
    if not used:
        return None
    head = [f"    {symbol[d]} = {where[d]}.shape[0]" for d in where if d in used]
    source = _module_source(g, "program", params, head + lines)
    names = set(re.findall(r"[A-Za-z_]\w*", source))
    described = _described(g, {n: o for n, o in glb.items() if n in names})
    if described is None:
        return None
    named = source + "\n# globals:\n" + "\n".join(described) + "\n"
    if named in _FAILED:
        return None
    return source, named, {v[0]: glb[v[0]] for v in views.values()}


def _view_n(trailing):
    """The intrinsic ``view(n, buf, off)``: the C-contiguous array of shape ``(n,) +
    trailing`` at element ``off`` of the 1-D C-contiguous array ``buf`` (``rowio.view_at``
    with its leading size given at the call)."""
    key = ("view_n", tuple(int(d) for d in trailing))
    with _AT_LOCK:
        fn = _VIEWS_N.get(key)
        if fn is None:
            fn = _VIEWS_N[key] = _make_view_n(key[1])
    return fn


def _make_view_n(trailing):
    from llvmlite import ir
    from numba.core.extending import intrinsic
    from numba.core.imputils import impl_ret_borrowed
    from numba.core.typing import signature
    from numba.np.arrayobj import populate_array

    def typer(typingctx, n, buf, off):
        if not isinstance(n, nbt.Integer) or not isinstance(buf, nbt.Array) or buf.ndim != 1 \
                or buf.layout != "C" or not isinstance(off, nbt.Integer):
            return None
        vty = nbt.Array(buf.dtype, 1 + len(trailing), "C")

        def codegen(context, builder, sig, args):
            i64 = ir.IntType(64)
            aryty = sig.args[1]
            ary = context.make_array(aryty)(context, builder, args[1])
            lead = context.cast(builder, args[0], sig.args[0], nbt.intp)
            at = context.cast(builder, args[2], sig.args[2], nbt.intp)
            itemsize = context.get_abi_sizeof(context.get_data_type(aryty.dtype))
            strides, step = [], itemsize
            for d in reversed(trailing):
                strides.insert(0, step)
                step *= int(d)
            out = context.make_array(vty)(context, builder)
            populate_array(out, data=builder.gep(ary.data, [at]),
                           shape=[lead] + [i64(int(d)) for d in trailing],
                           strides=[i64(step)] + [i64(st) for st in strides],
                           itemsize=i64(itemsize), meminfo=ary.meminfo)
            return impl_ret_borrowed(context, builder, vty, out._getvalue())
        return signature(vty, n, buf, off), codegen
    typer.__name__ = "view_n_" + "_".join(map(str, trailing))
    return intrinsic(typer)


class _Unit:
    """A compile unit: its source (``key``: the hash naming its module), argument
    types, output template, the units it calls (``deps``, in the order of its address
    parameters) and, once compiled, its dispatcher, return type and address."""

    def __init__(self, key, source, glb, argtys, template, deps, objmode, fallbacks, generic=None):
        self.literal, self.source, self.globals, self.argtys = key, source, glb, argtys
        self.template, self.deps, self.objmode, self.fallbacks = template, deps, objmode, fallbacks
        # (``generic``: the source with its sizes read from its arguments and the text
        # naming its module, ``_generic_source``; ``key`` names the module compiled)
        self.generic = generic
        self.key = key if generic is None else _source_key(generic[1])
        self.disp = self.resty = self.ptr = None
        self.caller = _caller(self)

    def compile(self):
        """Compile (or load from numba's cache) once per process; sets ``ptr``."""
        if self.ptr is not None:
            return
        from numba.core.compiler_lock import global_compiler_lock
        with global_compiler_lock:      # (the lock numba holds while it types callers)
            if self.ptr is not None:
                return
            for d in self.deps:
                d.compile()
            if self.generic is not None:
                try:
                    disp = self._compile(self.generic[0], self.generic[1])
                    GENERIC_STATS.add("generic")
                except Exception:
                    # (a rewritten source numba refuses: the literal one, under its own name)
                    GENERIC_STATS.add("failed")
                    self.generic, self.key = None, self.literal
            if self.generic is None:
                disp = self._compile(self.source)
                GENERIC_STATS.add("literal")
            cres = disp.overloads[self.argtys]
            self.disp, self.resty = disp, cres.signature.return_type
            self.ptr = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)

    def _compile(self, source, named=None):
        """The dispatcher of the module of ``source`` (named by the hash of ``named``,
        default ``source``), compiled for ``argtys`` or loaded from numba's cache."""
        # (object-mode blocks reach Python through the environment the Python wrapper holds)
        glb = dict(self.globals, _jit=numba.njit(cache=not self.objmode, nogil=not self.objmode,
                                                 **(_NJIT_OPTIONS if self.objmode else
                                                    _lean_options(_UNIT_OPTIONS))))
        mod = _load_module(source, glb, "tangentia_numba_unit_", named)
        disp = mod.body
        hits = sum(disp.stats.cache_hits.values())
        with _fast_typing():
            try:
                _compile_lean(disp, self.argtys)
            except Exception:
                # a damaged cache entry (cut short, overwritten) is compiled anew
                if not _drop_cached(mod):
                    raise
                _compile_lean(disp, self.argtys)
        UNIT_STATS.add("loaded" if sum(disp.stats.cache_hits.values()) > hits else "compiled")
        return disp


_KERNELS = {}    # (dispatcher, argument types) -> _Kernel: one per kernel signature and process


class _Kernel:
    """A precompiled kernel of the library (``gemm._gemm``: a numba function cached on
    disk by numba) called through its address, as a compile unit is (``_Gen.unit_ptr``,
    ``_caller``; ``objcache`` keeps and loads its code as a unit's): a program calling
    the dispatcher itself had numba link the kernel's code into the program's module,
    which LLVM then optimized and compiled again in every program (~1.2 s CPU for
    ``gemm._gemm``, against 0.02 s to load it).  ``argtys``: the argument types it is
    compiled for, which a call must pass exactly (arrays are not cast; ``_caller``)."""

    deps, objmode, fallbacks, template, strict = (), False, frozenset(), [], True

    def __init__(self, disp, argtys):
        self.disp, self.argtys = disp, tuple(argtys)
        f = disp.py_func
        self.key = f"kernel {f.__module__}.{f.__qualname__}{self.argtys}"
        self.source = f"# {self.key}\n"
        self.resty = self.ptr = None
        # (``blasdot._dot``: a call with other array types compiles the function inline)
        self.inline = f if getattr(f, "inline_on_mismatch", False) else None
        self.caller = _caller(self)

    def compile(self):
        """Compile (numba loads it from its cache) once per process; sets ``ptr``."""
        if self.ptr is not None:
            return
        from numba.core.compiler_lock import global_compiler_lock
        with global_compiler_lock:
            if self.ptr is not None:
                return
            self.disp.compile(self.argtys)
            cres = self.disp.overloads[self.argtys]
            self.resty = cres.signature.return_type
            self.ptr = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)


def _kernel_call(g, fn, argtys, args, prefix="_k"):
    """``_Gen.call_compiled``: the expression calling the precompiled ``fn`` on ``args`` (of
    the numba types ``argtys``) through its address (``_Kernel``): ``<prefix><n>(<address>,
    (<args>))``."""
    with _MODULE_LOCK:
        kernel = _KERNELS.get((fn, argtys))
        if kernel is None:
            kernel = _KERNELS[(fn, argtys)] = _Kernel(fn, argtys)
    ptr = g.unit_ptr(kernel)
    caller = g.glob(kernel.caller, prefix)
    g.notes.append(f"# {caller}: {kernel.key}")
    return f"{caller}({ptr}, ({args}{',' if len(argtys) == 1 else ''}))"


def _drop_cached(mod):
    """Remove numba's cache files of module ``mod``; whether there were any."""
    d = os.path.join(os.path.dirname(mod.__file__), "__pycache__")
    dropped = False
    try:
        names = os.listdir(d)
    except OSError:
        return False
    for n in names:
        if n.startswith(mod.__name__ + ".") and (n.endswith(".nbi") or n.endswith(".nbc")):
            try:
                os.remove(os.path.join(d, n))
                dropped = True
            except OSError:
                pass
    return dropped


def _caller(unit):
    """The intrinsic ``call(address, args)`` calling ``unit`` through its address with
    numba's calling convention (arguments cast to the unit's types, arrays of a ``strict``
    one's -- a ``_Kernel`` -- passed only as they are; an exception the unit raises
    propagates)."""
    from llvmlite import ir
    from numba.core import cgutils
    from numba.core.callconv import excinfo_t
    from numba.core.extending import intrinsic
    from numba.core.typing import signature

    @intrinsic
    def call_unit(typingctx, ptr, args):
        unit.compile()
        flat = flat_types(args)
        if len(flat) != len(unit.argtys):
            return None
        if getattr(unit, "strict", False) and any(
                t != u for t, u in zip(flat, unit.argtys) if isinstance(u, nbt.Array)):
            inline = getattr(unit, "inline", None)
            if inline is None:
                raise TypeError(f"{unit.key}: called with {tuple(flat)}")
            # (a kernel whose Python function may be compiled for the arrays as they are:
            # ``blasdot._dot``, numba's own np.dot for another layout)
            isig = signature(nbt.none, *flat)

            def inline_codegen(context, builder, sig, llargs):
                context.compile_internal(builder, inline, isig,
                                         flat_values(builder, sig.args[1], llargs[1]))
                return context.get_dummy_value()
            return signature(nbt.none, ptr, args), inline_codegen
        resty = unit.resty

        def codegen(context, builder, sig, llargs):
            cc = context.call_conv
            vals = [context.cast(builder, v, t, u) for v, t, u in
                    zip(flat_values(builder, sig.args[1], llargs[1]), flat, unit.argtys)]
            fnty = cc.get_function_type(resty, unit.argtys)
            fn = builder.inttoptr(llargs[0], fnty.as_pointer())
            retty = cc.get_return_type(resty).pointee
            retval = cgutils.alloca_once(builder, retty)
            builder.store(cgutils.get_null_value(retty), retval)
            excinfo = cgutils.alloca_once(builder, ir.PointerType(excinfo_t), name="excinfo")
            code = builder.call(fn, [retval, excinfo]
                                + list(cc._get_arg_packer(unit.argtys).as_arguments(builder, vals)))
            status = cc._get_return_status(builder, code, builder.load(excinfo))
            with cgutils.if_unlikely(builder, status.is_error):
                cc.return_status_propagate(builder, status)
            return context.get_returned_value(builder, resty, builder.load(retval))
        return signature(resty, ptr, args), codegen
    return call_unit
