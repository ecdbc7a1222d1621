"""Rows of stacked arrays read and written by one call in generated numba code.

A loop over a stacked array (``scan``'s ``xs`` and ``ys``) read and wrote each
element of a small row with a statement of its own, ``s5 = xs[i, 3]`` and
``ys[i, 3] = s9``.  numba loads the array's whole structure from its variable
for each statement and checks the index for wraparound, and LLVM's SROA pass
then works through thousands of such loads: for a scan whose body has 32 dense
8x8 layers (34 stacked residuals of 8 elements, written forward and read in
reverse), SROA took 10 s of the program's 15.  Here a row is one call:

    (s5, s6, s7, ) = _ld12(xs, i)        _st13(ys, i, (s9, s10, s11, ))

of an intrinsic made per row shape, which computes the row's address once (the
loop index is in range: no wraparound) and loads or stores its elements, cast
to the array's dtype as the assignment statements cast them.  Rows of more than
``_CHUNK`` elements travel as nested tuples of at most ``_CHUNK`` (``nest``).
"""
from __future__ import annotations

import hashlib
import threading

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types as nbt
from numba.core.extending import intrinsic
from numba.core.typing import signature

__all__ = ["nest", "chunks", "load_row", "store_row", "row_load_p", "row_store_p", "view_at",
           "view_struct", "gather", "read_elements", "copy_into"]

_CHUNK = 16        # elements per tuple (CPython builds longer tuple displays from a list,
                   # which numba types only when homogeneous)


def chunks(items):
    """``items`` as nested lists of at most ``_CHUNK`` entries."""
    items = list(items)
    if len(items) <= _CHUNK:
        return items
    size = _CHUNK
    while len(items) > size * _CHUNK:
        size *= _CHUNK
    return [chunks(items[i:i + size]) for i in range(0, len(items), size)]


def render(tree):
    """A tuple display of ``chunks``' nested lists of strings."""
    return "(" + "".join((render(t) if type(t) is list else t) + ", " for t in tree) + ")"


def nest(items):
    """A tuple display of ``items``: tuples of at most ``_CHUNK``, nested as needed."""
    return render(chunks(items))


class RowOp:
    """An operation of the backend's own on a row of a stack of stacked arrays, in the
    programs ``rules._scan`` gives a loop body (never in a user's program, so not a
    ``core.Primitive``: no other interpreter sees it).  ``row_load_p``:
    ``row = stack[j, i]`` (inputs ``stack, i``; ``params["j"]``); ``row_store_p``:
    ``stack[j, i] = row`` (inputs ``stack, i, row``; no outputs, an effect).  A scan
    writes its small residual rows (``ys``) into stacks and its reverse loop reads them
    back with these, so an IR block (``irblock``) stores and loads them in place where
    they are computed and used: they never pass through numba variables or the
    arguments and results of a compile unit."""

    __slots__ = ("name", "has_effects", "multiple_results", "program_params", "call_param")

    def __init__(self, name, effects):
        self.name, self.has_effects = name, effects
        self.multiple_results, self.program_params, self.call_param = False, (), None

    def __repr__(self):
        return self.name


row_load_p = RowOp("row_load", False)
row_store_p = RowOp("row_store", True)


def flat_types(ty):
    """The leaf types of a (nested) numba tuple type, in order."""
    if isinstance(ty, nbt.BaseTuple):
        return [t for e in ty.types for t in flat_types(e)]
    return [ty]


def flat_values(builder, ty, val):
    """The leaf LLVM values of ``val``, a (nested) tuple of numba type ``ty``."""
    if isinstance(ty, nbt.BaseTuple):
        out = []
        for k, t in enumerate(ty.types):
            out.extend(flat_values(builder, t, builder.extract_value(val, k)))
        return out
    return [val]


def _row_pointers(context, builder, aryty, ary, i, shape):
    """The addresses of row ``i``'s elements (C order) of the array ``ary``."""
    i64 = ir.IntType(64)
    n = int(np.prod(shape, dtype=np.int64))
    if aryty.layout == "C":
        base = builder.mul(i, ir.Constant(i64, n), flags=["nsw", "nuw"])
        return [builder.gep(ary.data, [builder.add(base, ir.Constant(i64, k), flags=["nsw", "nuw"])],
                            inbounds=True) for k in range(n)]
    dims = cgutils.unpack_tuple(builder, ary.shape)
    strides = cgutils.unpack_tuple(builder, ary.strides)
    return [cgutils.get_item_pointer2(context, builder, ary.data, dims, strides, aryty.layout,
                                      [i] + [ir.Constant(i64, int(j)) for j in idx])
            for idx in np.ndindex(*shape)]


_MEMO: dict = {}
_LOCK = threading.Lock()


def load_row(shape, flat=False):
    """The intrinsic ``load(arr, i)``: the elements of ``arr[i]`` (of shape ``shape``),
    as a tuple nested as ``nest`` nests them.  ``flat``: ``arr`` is any C-contiguous
    array whose trailing dimensions are ``shape``, ``i`` the index of the row among all
    its rows in C order (row ``(j, i)`` of a stack of ``(m, n) + shape`` is ``j * n + i``:
    no view of ``arr[j]`` made and reference-counted per row)."""
    key = ("load", tuple(shape), flat)
    with _LOCK:
        fn = _MEMO.get(key)
        if fn is None:
            fn = _MEMO[key] = _make_load(tuple(shape), flat)
    return fn


def store_row(shape, flat=False):
    """The intrinsic ``store(arr, i, values)``: ``arr[i] = values`` (the elements of a row
    of shape ``shape`` in C order, nested as ``nest`` nests them), each cast to the
    array's dtype.  ``flat``: as ``load_row``'s."""
    key = ("store", tuple(shape), flat)
    with _LOCK:
        fn = _MEMO.get(key)
        if fn is None:
            fn = _MEMO[key] = _make_store(tuple(shape), flat)
    return fn


def _row_array(arr, shape, flat):
    """Whether ``load_row``/``store_row`` take the numba array type ``arr``."""
    if not isinstance(arr, nbt.Array):
        return False
    if flat:
        return arr.layout == "C" and arr.ndim >= 1 + len(shape)
    return arr.ndim == 1 + len(shape)


def _nested_type(t, dtype):
    """The numba type of the nested tuple ``t`` (a ``chunks`` tree) of ``dtype`` scalars."""
    return nbt.Tuple([_nested_type(s, dtype) if type(s) is list else dtype for s in t])


def _make_nested(context, builder, ty, t, vals):
    """The nested tuple ``t`` (a ``chunks`` tree of indices into ``vals``) of type ``ty``."""
    return context.make_tuple(builder, ty, [
        _make_nested(context, builder, ty.types[k], s, vals) if type(s) is list else vals[s]
        for k, s in enumerate(t)])


def _make_load(shape, flat=False):
    n = int(np.prod(shape, dtype=np.int64))
    tree = chunks(range(n))

    def typer(typingctx, arr, i):
        if not _row_array(arr, shape, flat) or not isinstance(i, nbt.Integer):
            return None

        def codegen(context, builder, sig, args):
            aryty = sig.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            idx = context.cast(builder, args[1], sig.args[1], nbt.intp)
            vals = [context.unpack_value(builder, aryty.dtype, p)
                    for p in _row_pointers(context, builder, aryty, ary, idx, shape)]
            return _make_nested(context, builder, sig.return_type, tree, vals)
        return signature(_nested_type(tree, arr.dtype), arr, i), codegen
    typer.__name__ = ("load_flat_row_" if flat else "load_row_") + "_".join(map(str, shape))
    return intrinsic(typer)


def _make_store(shape, flat=False):
    n = int(np.prod(shape, dtype=np.int64))

    def typer(typingctx, arr, i, values):
        if not _row_array(arr, shape, flat) or not arr.mutable or not isinstance(i, nbt.Integer):
            return None
        leaves = flat_types(values)
        if len(leaves) != n or not all(isinstance(t, (nbt.Number, nbt.Boolean)) for t in leaves):
            return None

        def codegen(context, builder, sig, args):
            aryty, _, valty = sig.args
            ary = context.make_array(aryty)(context, builder, args[0])
            idx = context.cast(builder, args[1], sig.args[1], nbt.intp)
            vals = flat_values(builder, valty, args[2])
            for p, v, t in zip(_row_pointers(context, builder, aryty, ary, idx, shape), vals,
                               flat_types(valty)):
                context.pack_value(builder, aryty.dtype, context.cast(builder, v, t, aryty.dtype), p)
            return context.get_dummy_value()
        return signature(nbt.none, arr, i, values), codegen
    typer.__name__ = ("store_flat_row_" if flat else "store_row_") + "_".join(map(str, shape))
    return intrinsic(typer)


# ---------------------------------------------------------------------------
# Elements at static indices read by one call
#
# A value made scalars from an array (a program's small inputs in its buffer, ``s3 =
# _xp[3]``; a static index of an array, ``s7 = a4[0, 50, 1]``) was read by one statement
# per element, and numba looks up the implementation of each such ``getitem`` anew (its
# index is a literal type of its own): 1.8 ms of compile each, the 73 reads of
# ``jit(vmap(grad))`` of the pendulum ODE loss 0.13 s of its lowering.  Here they are
# one call, ``(s3, s4, ...) = _g5(_xp)``, of an intrinsic made per list of indices.

_GATHER_MAX = 4096     # intrinsics kept (each program's input offsets make one)


def gather(points):
    """The intrinsic ``gather(arr)``: the elements ``arr[p]`` for the static indices
    ``points`` (tuples of non-negative ints, one per dimension of ``arr``), as a tuple
    nested as ``nest`` nests them, of ``arr``'s dtype."""
    key = ("gather", tuple(tuple(int(i) for i in p) for p in points))
    with _LOCK:
        fn = _MEMO.get(key)
        if fn is None:
            if len(_MEMO) >= _GATHER_MAX:
                for k in [k for k in _MEMO if k[0] == "gather"]:
                    del _MEMO[k]
            fn = _MEMO[key] = _make_gather(key[1])
    return fn


def read_elements(g, arr, points, names=None):
    """Names (emitted by ``g``, a ``codegen`` generator) holding the elements ``arr[p]``
    of the array named ``arr`` at the static indices ``points``, read by one call
    (``names``: the names to read them into, by default new ones)."""
    if names is None:
        names = [g.name("s") for _ in points]
    if len(points) == 1:
        g.emit(f"{names[0]} = {arr}[{', '.join(map(str, points[0]))}]")
        return names
    fn = gather(points)
    name = g.glob(fn, "_g")
    # (the indices are not in the call's text: the note makes the source, numba's disk
    # cache key, tell them apart)
    g.notes.append(f"# {name}: gather {fn.__name__}")
    g.emit(f"{nest(names)} = {name}({arr})")
    return names


def _make_gather(points):
    tree = chunks(range(len(points)))
    ndim = len(points[0])

    def typer(typingctx, arr):
        if not isinstance(arr, nbt.Array) or arr.ndim != ndim:
            return None

        def codegen(context, builder, sig, args):
            aryty = sig.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            i64 = ir.IntType(64)
            dims = cgutils.unpack_tuple(builder, ary.shape)
            strides = cgutils.unpack_tuple(builder, ary.strides)
            vals = []
            for p in points:
                if ndim == 1 and aryty.layout in "CF":
                    ptr = builder.gep(ary.data, [ir.Constant(i64, p[0])])
                else:
                    ptr = cgutils.get_item_pointer2(context, builder, ary.data, dims, strides,
                                                    aryty.layout, [ir.Constant(i64, i) for i in p])
                vals.append(context.unpack_value(builder, aryty.dtype, ptr))
            return _make_nested(context, builder, sig.return_type, tree, vals)
        return signature(_nested_type(tree, arr.dtype), arr), codegen
    typer.__name__ = f"gather_{len(points)}_" + hashlib.sha1(repr(points).encode()).hexdigest()[:20]
    return intrinsic(typer)


def copy_into():
    """The intrinsic ``copy(dst, src)``: ``dst[...] = src`` for arrays of one shape and
    dtype (one ``llvm.memcpy`` where both are C-contiguous, else a loop nest).  A
    scatter's result is a copy of its operand (``rules._scatter``) made so, where
    ``a.copy()`` had numba type and compile its own ``array.copy`` for each array type
    (0.07-0.08 s of the lowering of ``jit(vmap(grad))`` of the pendulum ODE loss)."""
    with _LOCK:
        fn = _MEMO.get("copy")
        if fn is None:
            fn = _MEMO["copy"] = intrinsic(_copy_typer)
    return fn


def _copy_typer(typingctx, dst, src):
    if not isinstance(dst, nbt.Array) or not isinstance(src, nbt.Array) or not dst.mutable \
            or dst.ndim != src.ndim or dst.dtype != src.dtype:
        return None

    def codegen(context, builder, sig, args):
        dty, sty = sig.args
        d = context.make_array(dty)(context, builder, args[0])
        a = context.make_array(sty)(context, builder, args[1])
        if dty.layout == "C" and sty.layout == "C":
            cgutils.raw_memcpy(builder, d.data, a.data, a.nitems, a.itemsize, align=1)
            return context.get_dummy_value()
        shape = cgutils.unpack_tuple(builder, a.shape)
        dshape = cgutils.unpack_tuple(builder, d.shape)
        with cgutils.loop_nest(builder, shape, shape[0].type if shape else ir.IntType(64)) as idx:
            src_p = cgutils.get_item_pointer2(context, builder, a.data, shape,
                                              cgutils.unpack_tuple(builder, a.strides),
                                              sty.layout, idx)
            dst_p = cgutils.get_item_pointer2(context, builder, d.data, dshape,
                                              cgutils.unpack_tuple(builder, d.strides),
                                              dty.layout, idx)
            builder.store(builder.load(src_p), dst_p)
        return context.get_dummy_value()
    return signature(nbt.none, dst, src), codegen


# ---------------------------------------------------------------------------
# Arrays packed in one buffer
#
# Small arrays a program takes (closed-over matrices, say) are passed packed in one
# float64 buffer (``native._packed_inputs``), and a compile unit takes the arrays of its
# caller's buffer as one 1-D segment of it: numba's calling convention passes an array
# as 9 values, builds its structure from them in each function, and increfs and decrefs
# it wherever a tuple holds it -- at 100 closed-over 8x8 matrices, 30,000 of the 23,600
# + 6,700 LLVM lines of the program around the scan's two units (and ~5,000 in each unit)
# were that.  An array of the buffer is a view of it (``view_at``), and an IR block reads
# its elements at their offsets in the buffer (``irblock``).


def view_struct(context, builder, aryty, ary, off, shape, dtype):
    """The structure of the C-contiguous array of ``shape`` at element ``off`` (an LLVM
    integer) of the C-contiguous array ``ary`` (numba type ``aryty``), sharing its memory
    (its meminfo; no reference taken)."""
    from numba.np.arrayobj import populate_array
    i64 = ir.IntType(64)
    vty = nbt.Array(dtype, len(shape), "C")
    out = context.make_array(vty)(context, builder)
    itemsize = context.get_abi_sizeof(context.get_data_type(dtype))
    strides, step = [], itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= int(d)
    populate_array(out, data=builder.gep(ary.data, [off]),
                   shape=[ir.Constant(i64, int(d)) for d in shape],
                   strides=[ir.Constant(i64, s) for s in reversed(strides)],
                   itemsize=ir.Constant(i64, itemsize), meminfo=ary.meminfo)
    return vty, out


def view_at(shape):
    """The intrinsic ``view(buf, off)``: the C-contiguous array of ``shape`` at element
    ``off`` of the 1-D C-contiguous array ``buf`` (a view: the same memory)."""
    key = ("view", tuple(shape))
    with _LOCK:
        fn = _MEMO.get(key)
        if fn is None:
            fn = _MEMO[key] = _make_view(tuple(int(d) for d in shape))
    return fn


def _make_view(shape):
    from numba.core.imputils import impl_ret_borrowed

    def typer(typingctx, buf, off):
        if not isinstance(buf, nbt.Array) or buf.ndim != 1 or buf.layout != "C" \
                or not isinstance(off, nbt.Integer):
            return None

        def codegen(context, builder, sig, args):
            aryty = sig.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            idx = context.cast(builder, args[1], sig.args[1], nbt.intp)
            _, out = view_struct(context, builder, aryty, ary, idx, shape, aryty.dtype)
            return impl_ret_borrowed(context, builder, sig.return_type, out._getvalue())
        return signature(nbt.Array(buf.dtype, len(shape), "C"), buf, off), codegen
    typer.__name__ = "view_" + "_".join(map(str, shape))
    return intrinsic(typer)

