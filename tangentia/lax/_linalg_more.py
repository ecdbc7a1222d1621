"""The rest of ``jax.lax.linalg`` that JAX offers on CPU: ``eig``, ``schur``,
``hessenberg``, ``tridiagonal`` (LAPACK's, through ``pure_callback``), the
Householder products ``householder_product`` and ``ormqr``, ``tridiagonal_solve``,
``cholesky_update`` and ``symmetric_product`` (compositions, differentiable), the
algorithm enums, and JAX's ``*_p`` names of the linear-algebra primitives.
"""
from __future__ import annotations

import enum
from typing import TYPE_CHECKING

import numpy as np

from .. import core
from ..numpy import linalg as NL
from ..numpy import _complex, _conversion, _creation, _elementwise, _matrices, _shapes
from ..primitives import linalg as _L
from ..primitives.callback import pure_callback
from .primitive_names import JaxPrimitive

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any
    from ..typing import Array, ArrayLike


class EigImplementation(enum.Enum):
    """The eigendecomposition algorithm of :func:`eig` (only LAPACK here)."""
    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


class EighImplementation(enum.Enum):
    """The symmetric eigendecomposition algorithm (LAPACK's is used)."""
    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


class SvdAlgorithm(enum.Enum):
    """The SVD algorithm (LAPACK's is used)."""
    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


def _aval(x):
    return core.get_aval(x)


def _inexact(x):
    x = x if isinstance(x, core.Tracer) else np.asarray(x)
    dtype = _aval(x).dtype
    return x if dtype.kind in "fc" else _conversion.astype(x, np.float64)


def _per_matrix(fn, nout):
    """``fn`` (of 2-D NumPy arrays) applied to each matrix of batched arguments."""
    def run(*arrays):
        batch = arrays[0].shape[:-2]
        outs = [fn(*(a[i] for a in arrays)) for i in np.ndindex(batch)]
        return tuple(np.stack([o[k] for o in outs]).reshape(batch + outs[0][k].shape)
                     for k in range(nout))
    return run


def _lapack_callback(fn, shapes, *args):
    """``fn`` of 2-D NumPy arrays, over batches, staged as a ``pure_callback``."""
    return list(pure_callback(_per_matrix(fn, len(shapes)), tuple(shapes), *args,
                              vmap_method="sequential"))


def eig(x: ArrayLike, *, compute_left_eigenvectors: bool = True,
        compute_right_eigenvectors: bool = True, enable_eigvec_derivs: bool = False,
        implementation: Any = None, use_magma: bool | None = None) -> list[Array]:
    """Eigenvalues and left/right eigenvectors of general square matrices (LAPACK's
    ``geev``): ``[w, vl, vr]``, leaving out the vectors not asked for.  The eigenvalues
    are differentiable; the eigenvectors are not (``enable_eigvec_derivs`` is accepted
    for JAX compatibility).

    Args:
      x: a batch of square matrices ``[..., n, n]``.
      compute_left_eigenvectors: include the left eigenvectors ``vl``.
      compute_right_eigenvectors: include the right eigenvectors ``vr``.
      enable_eigvec_derivs: accepted for JAX compatibility.
      implementation: an :class:`EigImplementation` (LAPACK is used).
      use_magma: accepted for JAX compatibility.
    """
    x = _inexact(x)
    w = NL.eigvals(x)
    cdtype = np.result_type(_aval(x).dtype, np.complex64)
    vec = core.ShapedArray(_aval(x).shape, cdtype)
    left, right = bool(compute_left_eigenvectors), bool(compute_right_eigenvectors)
    if not (left or right):
        return [w]

    def vectors(m):
        import scipy.linalg
        _, vl, vr = scipy.linalg.eig(m, left=True, right=True)
        return tuple(v.astype(cdtype) for v, keep in ((vl, left), (vr, right)) if keep)

    return [w] + _lapack_callback(vectors, [vec] * (left + right), x)


def schur(x: ArrayLike, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable: Callable[..., Any] | None = None) -> tuple[Array, Array]:
    """The Schur decomposition ``x = q u q^H`` (LAPACK's ``gees``; real input gives the
    real Schur form): ``(u, q)``, or ``u`` alone; not differentiable.

    Args:
      x: a batch of square matrices ``[..., m, m]``.
      compute_schur_vectors: also return ``q``.
      sort_eig_vals: unused (as in JAX).
      select_callable: unused (as in JAX).
    """
    x = _inexact(x)
    shape = core.ShapedArray(_aval(x).shape, _aval(x).dtype)

    def run(m):
        import scipy.linalg
        return scipy.linalg.schur(m)

    u, q = _lapack_callback(run, [shape, shape], x)
    return (u, q) if compute_schur_vectors else u


def hessenberg(a: ArrayLike) -> tuple[Array, Array]:
    """The Hessenberg reduction in LAPACK's packed form (``gehrd``): ``(a, taus)``, the
    upper Hessenberg matrix on and above the first subdiagonal and the Householder
    reflectors below it, with their scalar factors ``taus`` ``[..., n - 1]``.

    Args:
      a: a batch of square matrices ``[..., n, n]``.
    """
    a = _inexact(a)
    shape, dtype = _aval(a).shape, _aval(a).dtype

    def run(m):
        import scipy.linalg.lapack as lapack
        (gehrd,) = lapack.get_lapack_funcs(("gehrd",), (m,))
        h, tau, _ = gehrd(m)
        return h, tau[:m.shape[0] - 1]

    return tuple(_lapack_callback(run, [core.ShapedArray(shape, dtype),
                                        core.ShapedArray(shape[:-1][:-1] + (shape[-1] - 1,),
                                                         dtype)], a))


def tridiagonal(a: ArrayLike, *, lower: bool = True) -> tuple[Array, Array, Array, Array]:
    """The reduction of symmetric/Hermitian ``a`` to tridiagonal form (LAPACK's
    ``sytrd``/``hetrd``): ``(a, d, e, taus)``: the packed reflectors and tridiagonal
    band, the diagonal ``d``, the off-diagonal ``e`` and the reflectors' factors.

    Args:
      a: a batch of symmetric/Hermitian matrices ``[..., n, n]``.
      lower: which triangle of ``a`` is read.
    """
    a = _inexact(a)
    shape, dtype = _aval(a).shape, _aval(a).dtype
    real = np.finfo(dtype).dtype
    n = shape[-1]

    def run(m):
        import scipy.linalg.lapack as lapack
        name = "hetrd" if np.iscomplexobj(m) else "sytrd"
        (trd,) = lapack.get_lapack_funcs((name,), (m,))
        c, d, e, tau, _ = trd(m, lower=int(bool(lower)))
        return c, d, e, tau

    batch = shape[:-2]
    return tuple(_lapack_callback(run, [core.ShapedArray(shape, dtype),
                                        core.ShapedArray(batch + (n,), real),
                                        core.ShapedArray(batch + (n - 1,), real),
                                        core.ShapedArray(batch + (n - 1,), dtype)], a))


def _reflect(c, v, tau, side):
    """``H c`` (``side="left"``) or ``c H`` for ``H = I - tau v v^H`` (``v`` ``[..., m]``)."""
    if side == "left":
        vh_c = _matrices.matmul(_complex.conj(v)[..., None, :], c)      # [..., 1, n]
        return c - tau[..., None, None] * v[..., :, None] * vh_c
    c_v = _matrices.matmul(c, v[..., :, None])                               # [..., n, 1]
    return c - tau[..., None, None] * c_v * _complex.conj(v)[..., None, :]


def _reflectors(a, taus):
    """The Householder vectors ``v_i`` of LAPACK's packed ``a`` (``[..., m, n]``)."""
    m = _aval(a).shape[-2]
    vs = []
    for i in range(_aval(taus).shape[-1]):
        unit = np.zeros(m, _aval(a).dtype)
        unit[i] = 1
        below = np.arange(m) > i
        vs.append(_elementwise.where(below, a[..., :, i], unit))
    return vs


def ormqr(a: ArrayLike, taus: ArrayLike, c: ArrayLike, *, left: bool = True, transpose: bool = False
          ) -> Array:
    """``c`` multiplied by the ``Q`` of a packed QR factorization (LAPACK's ``ormqr``):
    ``Q c`` (``left``), ``c Q`` (not ``left``), with ``Q^H`` when ``transpose``.

    Args:
      a: the Householder reflectors ``[..., m, n]`` (below the diagonal).
      taus: their scalar factors ``[..., k]``.
      c: the matrix to multiply.
      left: multiply from the left.
      transpose: use the (conjugate) transpose of ``Q``.
    """
    a, taus, c = _inexact(a), _inexact(taus), _inexact(c)
    vs = _reflectors(a, taus)
    factors = [taus[..., i] for i in range(len(vs))]
    if transpose:
        factors = [_complex.conj(t) for t in factors]
    # Q = H_1 ... H_k: Q c applies H_k first; Q^H c applies H_1^H first
    order = range(len(vs)) if transpose == left else reversed(range(len(vs)))
    for i in order:
        c = _reflect(c, vs[i], factors[i], "left" if left else "right")
    return c


def householder_product(a: ArrayLike, taus: ArrayLike) -> Array:
    """The first ``n`` columns of ``Q = H_1 ... H_k`` from packed Householder reflectors
    (LAPACK's ``orgqr``/``ungqr``); differentiable.

    Args:
      a: the reflectors ``[..., m, n]`` (below the diagonal).
      taus: their scalar factors ``[..., k]``.
    """
    a = _inexact(a)
    m, n = _aval(a).shape[-2:]
    eye = _creation.eye(m, n, dtype=_aval(a).dtype)
    return ormqr(a, taus, _shapes.broadcast_to(eye, _aval(a).shape))


def tridiagonal_solve(dl: Array, d: Array, du: Array, b: Array, *, perturb_singular: bool = False
                      ) -> Array:
    """The solution ``X`` of ``A X = B`` for the tridiagonal ``A`` with sub-, main and
    super-diagonals ``dl`` (``dl[0] = 0``), ``d`` and ``du`` (``du[-1] = 0``);
    differentiable in all arguments.

    Args:
      dl: the sub-diagonal, ``[..., m]`` (``dl[i] = A[i, i-1]``).
      d: the diagonal, ``[..., m]``.
      du: the super-diagonal, ``[..., m]`` (``du[i] = A[i, i+1]``).
      b: the right-hand sides ``[..., m, n]``.
      perturb_singular: not supported (``True`` raises).
    """
    if perturb_singular:
        raise NotImplementedError("lax.linalg.tridiagonal_solve: perturb_singular=True is "
                                  "not supported")
    dl, d, du, b = (_inexact(v) for v in (dl, d, du, b))
    m = _aval(d).shape[-1]
    below = np.eye(m, k=-1, dtype=bool)
    above = np.eye(m, k=1, dtype=bool)
    matrix = (d[..., :, None] * np.eye(m, dtype=_aval(d).dtype)
              + _elementwise.where(below, dl[..., :, None], 0)
              + _elementwise.where(above, du[..., :, None], 0))
    return NL.solve(matrix, b)


def cholesky_update(r_matrix: ArrayLike, w_vector: ArrayLike) -> Array:
    """The upper Cholesky factor of ``R^T R + w w^T`` from the upper factor ``R``
    (``r_matrix``) and the vector ``w`` (``w_vector``); differentiable.

    Args:
      r_matrix: an upper-triangular ``R`` with ``A = R^T R``.
      w_vector: the vector ``w`` of the rank-1 update.
    """
    r, w = _inexact(r_matrix), _inexact(w_vector)
    a = _matrices.matmul(_shapes.swapaxes(r, -1, -2), r) + w[..., :, None] * w[..., None, :]
    return _shapes.swapaxes(NL.cholesky(a), -1, -2)


def symmetric_product(a_matrix: ArrayLike, c_matrix: ArrayLike, *, alpha: float = 1.0,
                      beta: float = 0.0, symmetrize_output: bool = False) -> Any:
    """``alpha A A^T + beta C`` for rectangular ``A`` and symmetric ``C``
    (``symmetrize_output``: the upper triangle is the transpose of the lower one).

    Args:
      a_matrix: ``A``, ``[..., m, n]``.
      c_matrix: ``C``, ``[..., m, m]``.
      alpha: the factor of ``A A^T``.
      beta: the factor of ``C``.
      symmetrize_output: copy the lower triangle onto the upper one.
    """
    a, c = _inexact(a_matrix), _inexact(c_matrix)
    out = alpha * _matrices.matmul(a, _shapes.swapaxes(a, -1, -2)) + beta * c
    if symmetrize_output:
        m = _aval(out).shape[-1]
        lower = np.tril(np.ones((m, m), bool))
        out = _elementwise.where(lower, out, _shapes.swapaxes(out, -1, -2))
    return out


def primitives(lax_linalg):
    """JAX's names of the linear-algebra primitives (``"cholesky_p"``, ...) as
    :class:`JaxPrimitive` s binding JAX's operands and parameters through the functions
    of ``lax_linalg`` (the ``tangentia.lax.linalg`` namespace, passed in to keep the
    modules' imports one-way)."""
    L = lax_linalg

    def svd(x, *, full_matrices, compute_uv, subset_by_index=None, algorithm=None):
        if not compute_uv:
            return [L["svd"](x, full_matrices=full_matrices, compute_uv=False)]
        u, s, vh = L["svd"](x, full_matrices=full_matrices)
        return [s, u, vh]

    def eigh(x, *, lower=True, sort_eigenvalues=True, subset_by_index=None, algorithm=None):
        return list(L["eigh"](x, lower=lower, symmetrize_input=False,
                              subset_by_index=subset_by_index))

    def schur_(x, *, compute_schur_vectors=True, sort_eig_vals=False, select_callable=None):
        out = schur(x, compute_schur_vectors=compute_schur_vectors)
        return list(out) if compute_schur_vectors else [out]

    def eig_(x, *, compute_left_eigenvectors, compute_right_eigenvectors,
             enable_eigvec_derivs=False, implementation=None):
        return eig(x, compute_left_eigenvectors=compute_left_eigenvectors,
                   compute_right_eigenvectors=compute_right_eigenvectors)

    table = {
        "cholesky": (lambda x: L["cholesky"](x, symmetrize_input=False), False),
        "cholesky_update": (cholesky_update, False),
        "eig": (eig_, True), "eigh": (eigh, True), "schur": (schur_, True), "svd": (svd, True),
        "hessenberg": (lambda a: list(hessenberg(a)), True),
        "householder_product": (householder_product, False),
        "lu": (lambda x: list(L["lu"](x)), True),
        "lu_pivots_to_permutation": (lambda p, *, permutation_size: _L.lu_pivots_to_permutation(
            p, permutation_size), False),
        "ormqr": (lambda a, taus, c, *, left, transpose: ormqr(
            a, taus, c, left=left, transpose=transpose), False),
        "qr": (lambda x, *, pivoting=False, full_matrices=True, use_magma=None: list(
            L["qr"](x, pivoting=pivoting, full_matrices=full_matrices)), True),
        "symmetric_product": (lambda a, c, *, alpha, beta: symmetric_product(
            a, c, alpha=alpha, beta=beta), False),
        "triangular_solve": (lambda a, b, **p: L["triangular_solve"](a, b, **p), False),
        "tridiagonal": (lambda a, *, lower=True: list(tridiagonal(a, lower=lower)), True),
        "tridiagonal_solve": (lambda dl, d, du, b, *, perturb_singular=False: tridiagonal_solve(
            dl, d, du, b, perturb_singular=perturb_singular), False),
    }
    return {name + "_p": JaxPrimitive(name, bind, multiple)
            for name, (bind, multiple) in table.items()}
