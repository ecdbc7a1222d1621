"""Small arrays of one dtype copied into one buffer by one call, in generated numba code.

A program's small float64 inputs arrive packed in one buffer, ``_xp``
(``native._packed_inputs``); its other small inputs (the integer index arrays a
``fori_loop`` body's dynamic slices close over: 120 of them at 30 slices) arrived one
array each, were read into scalars at the program's start (``rowio.read_elements``) and
passed element by element to the compile units of the loop bodies, which passed them on
to the units of the body's repeated segments: 1,100 scalars in every call of the loop
body, 60 in each segment's.  ``concat()(a, b, ...)`` copies such arrays, all of one
dtype and C-contiguous, one after the other into a new 1-D array (one allocation, one
``memcpy`` each), so that they too reach compile units as one segment of a buffer
(``native._segments``), and a unit reads the elements it uses by one call.
"""
from __future__ import annotations

import threading

from numba.core import cgutils, types as nbt
from numba.core.extending import intrinsic
from numba.core.typing import signature
from numba.np import arrayobj

from .alloc import _alloc

__all__ = ["concat"]

_MEMO: dict = {}
_LOCK = threading.Lock()


def concat():
    """The intrinsic ``concat(*arrays)``: a new 1-D C-contiguous array of the arrays'
    common dtype holding their elements (C order), one array after the other."""
    with _LOCK:
        fn = _MEMO.get("concat")
        if fn is None:
            fn = _MEMO["concat"] = intrinsic(_concat_typer)
    return fn


def _concat_typer(typingctx, *arrs):
    if not arrs or not all(isinstance(a, nbt.Array) and a.layout == "C" for a in arrs) \
            or len({a.dtype for a in arrs}) != 1:
        return None
    dtype = arrs[0].dtype
    arrty = nbt.Array(dtype, 1, "C")

    def codegen(context, builder, sig, args):
        intp = context.get_value_type(nbt.intp)
        itemsize = arrayobj.get_itemsize(context, arrty)
        parts, total = [], intp(0)
        for k, aty in enumerate(sig.args[0].types):
            a = context.make_array(aty)(context, builder, builder.extract_value(args[0], k))
            parts.append(a)
            total = builder.add(total, a.nitems)
        align = context.get_constant(nbt.uint32, context.get_preferred_array_alignment(dtype))
        meminfo = _alloc(context, builder, builder.mul(total, intp(itemsize)), align)
        data = builder.bitcast(context.nrt.meminfo_data(builder, meminfo),
                               context.get_data_type(dtype).as_pointer())
        out = arrayobj.make_array(arrty)(context, builder)
        arrayobj.populate_array(out, data=data, shape=cgutils.pack_array(builder, [total], ty=intp),
                                strides=cgutils.pack_array(builder, [intp(itemsize)], ty=intp),
                                itemsize=intp(itemsize), meminfo=meminfo)
        off = intp(0)
        for a in parts:
            cgutils.raw_memcpy(builder, builder.gep(data, [off]), a.data, a.nitems, itemsize, align=1)
            off = builder.add(off, a.nitems)
        return out._getvalue()
    return signature(arrty, nbt.StarArgTuple.from_types(arrs)), codegen
