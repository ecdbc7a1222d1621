"""SciPy's C special functions (``scipy.special.cython_special``) as numba intrinsics.

``_extern(capi, argtys)`` registers the C function ``capi`` with LLVM under a fixed name
(``llvmlite.binding.add_symbol``) and returns an intrinsic calling it, so machine code
refers to the name, not to an address, and is cached and relinked like any other.  Used
by ``special`` (the elementwise functions) and ``kernels`` (``random_gamma``'s erfinv);
this module imports nothing of the code generator.
"""
from __future__ import annotations

import sys

import llvmlite.binding as llvm
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.extending import get_cython_function_address, intrinsic

_CYTHON = "scipy.special.cython_special"
# SciPy's complex functions take and return C's double complex by value: in two
# floating-point registers on x86-64 and AArch64 (System V), as LLVM passes
# {double, double}; Windows passes it by reference (not called natively there).
_COMPLEX_BY_VALUE = sys.platform != "win32"
_F8, _F4, _I8, _C16 = types.float64, types.float32, types.int64, types.complex128


def _extern(capi, argtys, outputs=0, which=0):
    """An intrinsic calling ``cython_special``'s C function ``capi`` on
    ``argtys`` (numeric operands are cast to them).  The function returns its
    result (cpdef functions take a trailing ``skip_dispatch`` flag: 0), or, with
    ``outputs`` > 0, writes that many doubles through pointers, of which the
    ``which``-th is returned."""
    symbol = "tangentia_cython_special_" + capi
    llvm.add_symbol(symbol, get_cython_function_address(_CYTHON, capi))
    ret = _F4 if argtys[0] == _F4 else _C16 if _C16 in argtys else _F8

    def codegen(context, builder, sig, args):
        vals = [context.cast(builder, v, t, want) for v, t, want in zip(args, sig.args, argtys)]
        arg_ir = [context.get_value_type(t) for t in argtys]
        if outputs:
            ptrs = [cgutils.alloca_once(builder, ir.DoubleType()) for _ in range(outputs)]
            fnty = ir.FunctionType(ir.VoidType(), arg_ir + [p.type for p in ptrs])
            builder.call(cgutils.get_or_insert_function(builder.module, fnty, symbol), vals + ptrs)
            return builder.load(ptrs[which])
        flag = ir.IntType(32)
        fnty = ir.FunctionType(context.get_value_type(ret), arg_ir + [flag])
        fn = cgutils.get_or_insert_function(builder.module, fnty, symbol)
        return builder.call(fn, vals + [ir.Constant(flag, 0)])

    # (a complex operand of a real function would lose its imaginary part: rejected)
    accepted = (types.Number, types.Boolean) if ret == _C16 else (types.Integer, types.Float,
                                                                  types.Boolean)

    def typer(typingctx, *args):
        if len(args) != len(argtys) or not all(isinstance(a, accepted) for a in args):
            return None
        return ret(*args), codegen
    # numba reads an intrinsic's arity from its typer's signature
    arity = {1: lambda c, a: typer(c, a), 2: lambda c, a, b: typer(c, a, b),
             3: lambda c, a, b, x: typer(c, a, b, x),
             4: lambda c, a, b, x, y: typer(c, a, b, x, y)}[len(argtys)]
    arity.__name__ = "_sc_" + capi.replace("__pyx_fuse_", "f")
    return intrinsic(arity)


def _fuse(n, name):
    return f"__pyx_fuse_{n}{name}"


