"""``jax.lax.linalg``: the linear-algebra primitives with JAX's lax-level
signatures (``eigh`` returns eigenvectors first, ``lu`` returns pivots and the
permutation, ``triangular_solve`` solves from the right by default)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import core
from ..numpy import linalg as NL
from ..numpy._shapes import swapaxes
from ..primitives import elementwise as E
from ..primitives import linalg as _L

if TYPE_CHECKING:
    from typing import Any
    from ..typing import Array, ArrayLike


def _array(x):
    return x if isinstance(x, core.Tracer) else np.asarray(x)


def cholesky(x: Array, *, symmetrize_input: bool = True) -> Array:
    """The lower Cholesky factor of (the symmetrized) ``x``."""
    return NL.cholesky(x, symmetrize_input=symmetrize_input)


def eigh(x: Array, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index: tuple[int, int] | None = None,
         implementation: Any = None) -> tuple[Array, Array]:
    """``(v, w)``: eigenvectors (columns) and ascending eigenvalues of a Hermitian ``x``."""
    if subset_by_index is not None:
        raise NotImplementedError("lax.linalg.eigh: subset_by_index is not supported")
    w, v = NL.eigh(x, UPLO="L" if lower else "U", symmetrize_input=symmetrize_input)
    return v, w


def lu(x: ArrayLike) -> tuple[Array, Array, Array]:
    """``(lu, pivots, permutation)`` of the partially pivoted LU decomposition (int32)."""
    return tuple(_L.lu_p.bind(_array(x)))


def lu_pivots_to_permutation(pivots: ArrayLike, permutation_size: int) -> Array:
    """The row permutation the LAPACK-style ``pivots`` (row swaps) describe."""
    return _L.lu_pivots_to_permutation(pivots, permutation_size)


def qr(x: ArrayLike, *, pivoting: bool = False, full_matrices: bool = True,
       use_magma: bool | None = None) -> tuple[Array, Array] | tuple[Array, Array, Array]:
    """``(q, r)`` with ``x = q @ r`` (complete by default, as JAX's)."""
    if pivoting:
        raise NotImplementedError("lax.linalg.qr: pivoting=True is not supported")
    q, r = NL.qr(x, mode="complete" if full_matrices else "reduced")
    return q, r


def svd(x: ArrayLike, *, full_matrices: bool = True, compute_uv: bool = True,
        subset_by_index: tuple[int, int] | None = None, algorithm: Any = None
        ) -> Array | tuple[Array, Array, Array]:
    """``(u, s, vh)`` (or ``s`` alone) with singular values in descending order."""
    if subset_by_index is not None:
        raise NotImplementedError("lax.linalg.svd: subset_by_index is not supported")
    out = NL.svd(x, full_matrices=full_matrices, compute_uv=compute_uv)
    return tuple(out) if compute_uv else out


def triangular_solve(a: ArrayLike, b: ArrayLike, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False) -> Array:
    """Solve ``op(a) @ x = b`` (``left_side=True``) or ``x @ op(a) = b`` (the default)
    for triangular ``a``, ``op`` transposing and/or conjugating as asked."""
    a, b = _array(a), _array(b)
    if conjugate_a:
        a = E.conj(a)
    trans = int(bool(transpose_a))
    if left_side:
        return _L.triangular_solve(a, b, lower, trans, unit_diagonal)
    # x op(a) = b  <=>  op(a)^T x^T = b^T
    xt = _L.triangular_solve(a, swapaxes(b, -1, -2), lower, 1 - trans, unit_diagonal)
    return swapaxes(xt, -1, -2)


# The rest of jax.lax.linalg (CPU), and JAX's names of the primitives (cholesky_p, ...)
from ._linalg_more import (EigImplementation, EighImplementation, SvdAlgorithm,  # noqa: E402,F401
                           cholesky_update, eig, hessenberg, householder_product, ormqr,
                           primitives as _jax_primitives, schur, symmetric_product,
                           tridiagonal, tridiagonal_solve)
globals().update(_jax_primitives(globals()))
