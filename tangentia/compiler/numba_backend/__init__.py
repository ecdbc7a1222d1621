"""The numba backend of ``jit``: a whole program becomes one generated Python
module compiled with ``numba.njit``.

Layout: ``codegen`` (value representations and the generator ``_Gen``, which
walks a program's equations once, in order), ``rules`` (one lowering rule per
primitive or family), ``helpers`` (scalar functions with NumPy's semantics,
called from generated code), and this module (compilation, the on-disk cache,
the calling wrapper, the ``Backend``).

* **Values** have one of four representations.  ``SV`` (*scalarized*): a
  value with a small static shape (``SMALL`` elements or fewer) is a list of
  scalar expressions, one per element -- locals such as ``s12``, or, for a
  value used once by an elementwise operation, the expression itself, inlined
  into its consumer -- so loop steps over small states allocate nothing.
  ``AV``: a C-contiguous numba array variable.  ``LV`` (*lazy*): an element
  expression ``fn(index) -> str`` for a larger value, not computed yet (if it
  reads scalarized operands, it has at most ``UNROLL`` elements and is written
  by unrolled code).  ``ZV``: a ``float0`` value (no data; never computed).
  Scalarized loop carries and branch results are tuple variables (numba's SSA
  passes cost grows with the number of variables assigned more than once).
* **Blocks** (``irblock``).  A run of consecutive equations whose values are all
  scalarized and which all have a block rule (arithmetic, comparisons,
  ``select``, casts, sin/cos/exp/log/tanh/expm1/log1p/sqrt/abs, ``integer_pow``,
  broadcasts, reshapes, transposes, static indexing, concatenation, small
  reductions and contractions) is one call of a numba intrinsic whose code
  generation writes the run's scalar operations as LLVM IR: numba types and
  lowers one statement instead of one per element (its typing and lowering were
  ~90% of a compile), and LLVM sees the same straight-line code, bit for bit
  the same results.  Blocks of more than ``irblock.SPLIT_NODES`` operations
  are split into out-of-line functions passing values through stack buffers
  (LLVM's code generation grows faster than linearly with a function's size).
  ``TANGENTIA_NUMBA_IRBLOCK=0`` emits one statement per element instead.
* **Batched values, row by row.**  A value with a leading (vmap batch) axis of
  length B, too large to scalarize but whose rows are small, is computed row
  by row: a run of such equations (elementwise, broadcasts, reshapes, static
  indexing and updates, concatenation, transposes and reductions within rows;
  ``rules.ROWS``) becomes ONE loop over the B rows, each row scalarized, and
  only values used after the run are written to arrays.  The code is that of
  one unbatched row, not one loop and one temporary per operation (a batched
  odeint gradient compiled in minutes).
* **Fusion.** Elementwise operations (NumPy broadcasting and dtype promotion:
  every operand is cast to the dtype of NumPy's loop, every result to the
  output aval's dtype), ``select``, ``convert_element_type``,
  ``broadcast_to``, ``transpose`` and static ``getitem`` on large values give
  ``LV`` values; a lazy value used once by another fusible operation stays
  lazy, so a chain becomes one expression, written by one loop nest when it
  is materialized (or accumulated directly by the reduction consuming it).
  Chains longer than ``codegen.MAX_FUSED`` are split; short contractions
  (outer products, ...) are fused expressions too.
* **Control flow** is native: ``while`` -> ``while True`` with the condition
  program inlined, ``scan`` -> ``for`` with stacked outputs written in place,
  ``cond`` -> ``if/elif``.  Call-like primitives (``jit``, ``checkpoint``,
  custom-rule calls, ``custom_linear_solve``) are inlined.  Large loop bodies and
  branches (by estimated code size: ``codegen.OUTLINE_MIN_COST``) become
  separate njit functions, shared by every use of the same body.
* **Contractions.** Small ``dot_general`` is unrolled over scalars, large
  floating ones go to BLAS (``np.dot`` on contiguous 2-D views or their
  transposes; batched ones when each product is large), others are loops.
* **Everything else** runs a kernel from ``kernels.KERNELS`` if there is
  one, else the primitive's NumPy implementation inside ``numba.objmode``.
* **Complex dtypes** (complex64, complex128) are native for arithmetic,
  ``abs``, ``==``/``!=``, logical operations, ``cmath`` functions, ``real``/
  ``imag``/``conj``/``complex``, casts (to a real dtype: the real part),
  ``select``, sums, products, ``dot_general`` (BLAS when large), indexing and
  control flow; orderings, ``max``/``min``, ``sign``, ... and the kernels run
  the NumPy implementation of that one equation in ``numba.objmode``.
  ``lowering_paths()`` lists the path of every primitive.

If numba cannot compile a program, the NumPy backend runs it, after one
warning naming the error.  Compiled code is cached on disk (``_cache_dir``:
``$TANGENTIA_CACHE_DIR/numba``, default ``~/.cache/tangentia/numba``): the
generated source is written to a file named by the hash of its text and of
the library, numba and NumPy versions, imported, and compiled with
``njit(cache=True)``; a new process loads the machine code from there.
Programs with objmode fallbacks (Python objects in their globals) are not
cached on disk.  Compiles longer than 2 s print a line on stderr unless
``TANGENTIA_COMPILE_PROGRESS=0``.
"""
from __future__ import annotations

import importlib

from ..backend import Backend, program_size, register_backend
from .memo import COMPILED

__all__ = ["NumbaBackend", "all_primitives", "lowering_paths", "SMALL"]
SECONDS_PER_EQUATION = 0.005
def _native():
    """The compiler module (``native``), imported on first use (the import system
    caches it and makes concurrent first imports wait for one another)."""
    return importlib.import_module(f"{__name__}.native")


class NumbaBackend(Backend):
    """Compiles a whole program into one ``numba.njit`` function (see the module docstring).

    Registered at import, but numba and the compiler are imported only when a program
    is first compiled (``native``)."""

    name = "numba"
    slow_compile = True

    def compiled(self, jaxpr):
        return COMPILED.get(jaxpr)

    def compile_estimate(self, jaxpr):
        # numba's typing and lowering of the generated code: about 0.5 s for a small
        # program, and about 5 ms more per equation (measured: bench_cold.py --sizes)
        return 0.5 + SECONDS_PER_EQUATION * program_size(jaxpr)

    def compile(self, jaxpr):
        return _native().NumbaCompiler(self.compile_estimate(jaxpr)).compile(jaxpr)

    def source(self, jaxpr):
        return _native().NumbaCompiler().source(jaxpr)


_SUBMODULES = frozenset(("codegen", "elementwise_loop", "gemm", "helpers", "irblock", "native",
                         "rules", "special", "vecmath", "vecmath_trig", "windows"))


def __getattr__(name):
    # The submodules, and the compiler's names (LARGE, vector_bound, lowering_paths, ...),
    # are read through here, importing them on first use.
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_native(), name)


register_backend(NumbaBackend())
