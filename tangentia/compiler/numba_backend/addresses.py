"""The table of data addresses through which a program takes many large arrays.

numba compiles, around each program, a Python wrapper that unboxes every array argument
with code of its own (its type check, its structure of 9 values, a reference), and the
program's function takes those 9 values per array: the wrapper and the function's
arguments grew by ~90 lines of LLVM IR per array (``jit(grad)`` of a 100-layer MLP of
64x64 layers took its 200 weights so: ~9,000 of the program's 15,000 lines), and numba's
passes and LLVM superlinearly with them (200 arrays: 6.3 s of compile against 0.45 s for
10).  A program with at least ``native.ADDRESSED_MIN`` such arrays takes them instead as
one int64 array of their data addresses (``native._addressed``), built at each call by
``fill`` (the runner, ``objcache.runner``, has already made each input a C-contiguous,
aligned, writable array of the program's dtype, and holds them for the call), and
rebuilds each as an array of its static shape and dtype from its address
(``native._array_at``).

``fill(out, *arrays)`` writes the data address of each array into the int64 array
``out`` and returns ``out``: a few lines of LLVM IR (no numba: the machine-code cache
runs programs in processes that never import it) reading each array's data pointer
(``PyArrayObject_fields.data``, after the object's head) from the argument tuple, made a
Python callable by numba's ``_dynfunc`` extension as ``sigint``'s calls are; ~0.3 us for
100 arrays, where ``a.ctypes.data`` costs ~1 us each.  Where the layouts it reads do not
check out (a debug build of CPython), ``fill`` is the same in Python.
"""
from __future__ import annotations

import sys
import threading

import numpy as np

__all__ = ["fill"]

# fill(out, a1, ..., an): out.data[k - 1] = ak.data for k = 1..n; a new reference to out.
# (the argument tuple: PyObject_VAR_HEAD, then its items; an ndarray: PyObject_HEAD, then
# its data pointer)
_IR = """
declare void @Py_IncRef(i8*)

define i8* @tangentia_fill_addresses(i8* %self, i8* %args, i8* %kws) {
entry:
  %np = getelementptr i8, i8* %args, i64 {size}
  %npp = bitcast i8* %np to i64*
  %n = load i64, i64* %npp
  %ip = getelementptr i8, i8* %args, i64 {items}
  %items = bitcast i8* %ip to i8**
  %out = load i8*, i8** %items
  %odp = getelementptr i8, i8* %out, i64 {data}
  %odpp = bitcast i8* %odp to i64**
  %od = load i64*, i64** %odpp
  %more = icmp sgt i64 %n, 1
  br i1 %more, label %loop, label %done
loop:
  %k = phi i64 [1, %entry], [%k1, %loop]
  %ap = getelementptr i8*, i8** %items, i64 %k
  %a = load i8*, i8** %ap
  %adp = getelementptr i8, i8* %a, i64 {data}
  %adpp = bitcast i8* %adp to i64*
  %ad = load i64, i64* %adpp
  %k0 = sub i64 %k, 1
  %dst = getelementptr i64, i64* %od, i64 %k0
  store i64 %ad, i64* %dst
  %k1 = add i64 %k, 1
  %again = icmp slt i64 %k1, %n
  br i1 %again, label %loop, label %done
done:
  call void @Py_IncRef(i8* %out)
  ret i8* %out
}
"""


def _fill_py(out, *arrays):
    out[:] = [a.ctypes.data for a in arrays]
    return out


class _Fill:
    fn = None           # the compiled ``fill``, or ``_fill_py``
    engine = None       # (the JIT holding its code: alive as long as the process)


_LOCK = threading.Lock()


def _setup():
    with _LOCK:
        if _Fill.fn is not None:
            return _Fill.fn
        fn = _fill_py
        try:
            from .sigint import extension, jit_ir
            ptr = np.dtype(np.intp).itemsize
            head = tuple.__basicsize__      # (the items follow the head; its size, last in it)
            engine = jit_ir(_IR.replace("{size}", str(head - ptr)).replace("{items}", str(head))
                            .replace("{data}", str(object.__basicsize__)))
            dynfunc = extension("numba._dynfunc", "_dynfunc")
            made = dynfunc.make_function(sys.modules[__name__], "fill", "fill(out, *arrays)",
                                         engine.get_function_address("tangentia_fill_addresses"),
                                         dynfunc.Environment({}), engine)
            # (the layouts read above, checked: else the Python version)
            probe = [np.arange(3.0), np.zeros((2, 5), np.int32), np.empty(0), np.array(2.0)]
            got = made(np.zeros(len(probe), np.int64), *probe)
            if list(got) == [a.ctypes.data for a in probe] and made(np.zeros(0, np.int64)).size == 0:
                fn, _Fill.engine = made, engine
        except Exception:   # noqa: BLE001 - no LLVM JIT, no numba extension: the Python version
            fn = _fill_py
        _Fill.fn = fn
        return fn


def fill(out, *arrays):
    """Write the data address of each of ``arrays`` (ndarrays) into the int64 array ``out``
    (of their number), and return ``out``."""
    fn = _Fill.fn or _setup()
    return fn(out, *arrays)


def filler():
    """The function ``fill`` (compiled at the first call): for the runner's calls."""
    return _Fill.fn or _setup()
