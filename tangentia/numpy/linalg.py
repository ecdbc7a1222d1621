"""Linear algebra (``tangentia.numpy.linalg``), with NumPy's names and semantics.

Every function takes a matrix or a stack of matrices (leading batch
dimensions) and works under ``grad``, ``jvp``, ``vmap`` and ``jit`` in any
order; the primitives and their rules are in ``tangentia.primitives.linalg``.
Derivatives are for real inputs.
"""
from __future__ import annotations

import math
from collections import namedtuple
from typing import TYPE_CHECKING

import numpy as _np

from .. import core as _core
from .. import dtypes as _dtypes
from ..custom_derivatives import custom_jvp
from ..primitives import elementwise as _E, linalg as _L
from ..primitives.callback import pure_callback
from . import _complex, _conversion, _elementwise, _matrices, _reductions, _shapes, _util

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any
    from ..typing import Array, ArrayLike, DTypeLike

LinAlgError = _np.linalg.LinAlgError

__all__ = ["LinAlgError", "cholesky", "cond", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv",
           "lstsq", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr",
           "slogdet", "solve", "svd", "svdvals", "tensorinv", "tensorsolve", "vector_norm",
           "cross", "diagonal", "matmul", "matrix_transpose", "outer", "tensordot", "trace",
           "vecdot"]

EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = namedtuple("QRResult", ["Q", "R"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])


# ---------------------------------------------------------------------------
# Argument handling shared with tangentia.scipy.linalg


def _aval(x):
    return _core.get_aval(x)


def _inexact(*xs):
    """Arrays (or tracers) promoted to a common floating dtype (ints -> float64)."""
    xs = [x if isinstance(x, _core.Tracer) else _conversion.asarray(x) for x in xs]
    dt = _np.result_type(*[_aval(x).dtype for x in xs])
    if not _dtypes.is_inexact(dt):
        dt = _np.dtype(_np.float64)
    return [x if _aval(x).dtype == dt else _conversion.astype(x, dt) for x in xs]


def _check_square(fname, x, argname="a"):
    s = _aval(x).shape
    if len(s) < 2 or s[-1] != s[-2]:
        raise LinAlgError(f"{fname}: argument {argname} must be a square matrix or a stack of "
                          f"square matrices (shape (..., n, n)), got shape {s}")


def _check_matrix(fname, x, argname="a"):
    s = _aval(x).shape
    if len(s) < 2:
        raise LinAlgError(f"{fname}: argument {argname} must be a matrix or a stack of matrices "
                          f"(at least 2 dimensions), got shape {s}")


def _batch_shape(fname, a_shape, b_shape):
    try:
        return tuple(_np.broadcast_shapes(a_shape[:-2], b_shape[:-2]))
    except ValueError:
        raise ValueError(f"{fname}: the batch dimensions of argument a (shape {a_shape}) and "
                         f"argument b (shape {b_shape}) cannot be broadcast together") from None


def _solve_with(fname, bind, a, b, vector=None):
    """Apply ``bind(a, B)`` (a linear solve with ``a`` of shape (..., n, n) and
    ``B`` of shape (..., n, k)) with NumPy's rules for ``b``: a vector if
    ``vector`` (default: ``b.ndim == 1``), else a (stack of) matrices."""
    a_s, b_s = _aval(a).shape, _aval(b).shape
    n = a_s[-1]
    if vector is None:
        vector = len(b_s) == 1
    if vector:
        if len(b_s) < 1 or b_s[-1] != n:
            raise ValueError(f"{fname}: argument b of shape {b_s} does not match argument a of "
                             f"shape {a_s}: b.shape[-1] must be {n}")
        x = _solve_with(fname, bind, a, _shapes.expand_dims(b, -1), vector=False)
        return _shapes.squeeze(x, -1)
    if len(b_s) < 2 or b_s[-2] != n:
        raise ValueError(f"{fname}: argument b of shape {b_s} does not match argument a of "
                         f"shape {a_s}: b.shape[-2] must be {n}")
    batch = _batch_shape(fname, a_s, b_s)
    if a_s[:-2] != batch and len(a_s) == 2:
        # One matrix, many right-hand sides: fold them into the columns (one factorization).
        nb = len(batch)
        bb = _shapes.broadcast_to(b, batch + b_s[-2:])
        bt = _shapes.moveaxis(bb, -2, 0)                          # (n, *batch, k)
        x = bind(a, _shapes.reshape(bt, (n, -1)))
        x = _shapes.reshape(x, (n,) + batch + (b_s[-1],))
        return _shapes.moveaxis(x, 0, nb)
    if a_s[:-2] != batch:
        a = _shapes.broadcast_to(a, batch + a_s[-2:])
    if b_s[:-2] != batch:
        b = _shapes.broadcast_to(b, batch + b_s[-2:])
    return bind(a, b)


def _bind_solve(a, b):
    return _L.solve_p.bind(a, b)


# ---------------------------------------------------------------------------
# Solving and inverting


def solve(a: ArrayLike, b: ArrayLike) -> Array:
    """Solve ``a @ x = b`` (``b`` a vector if 1-D, else a (stack of) matrices).

    Reverse mode factors ``a`` once: the LU factors of the primal pass solve
    the transposed system of the backward pass.
    """
    a, b = _inexact(a, b)
    _check_square("solve", a)
    return _solve_with("solve", _bind_solve, a, b)


def inv(a: ArrayLike) -> Array:
    """Inverse of a square matrix (or of each matrix in a stack)."""
    a, = _inexact(a)
    _check_square("inv", a)
    return _L.inv_p.bind(a)


def det(a: ArrayLike) -> Array:
    """Determinant of a square matrix (or of each matrix in a stack).  Differentiable to
    second order at singular matrices too (the Hessian of ``det`` at ``[[1, 2], [2, 4]]``
    or at ``0`` is JAX's, the exact polynomial's)."""
    a, = _inexact(a)
    _check_square("det", a)
    if _aval(a).shape[-1] == 0:
        return _L.det_p.bind(a)
    return _det(a)


def _cofactor_value(a):
    """The cofactor matrix ``adj(a)^T`` (``det(a) a^-T`` where ``a`` is invertible), from the
    LU factors, exact at singular ``a`` too (det_p's own first-order rule)."""
    lu, piv, _ = _L.lu_p.bind(a)
    parity, d = _L._lu_sign_and_diag(lu, piv)
    return _L._adjugate_t(lu, piv, parity, d)


def _cofactor_jvp(primals, tangents):
    # With a = U diag(s) V^H, B = U^H da V and sgn = det(U) det(V^H): d^2 det[da, F] =
    # sgn sum_{i != j} p_ij (B_ii C_jj - B_ij C_ji), C = U^H F V and p_ij the product of the
    # singular values other than s_i and s_j (no division: defined at any rank).  So
    # d cof[da] = sgn conj(U) G V^T with G = diag(P diag(B)) - P * B^T.
    a, = primals
    da, = tangents
    dt = _aval(a).dtype
    n = _aval(a).shape[-1]
    u, s, vh = _L.svd_p.bind(a, full_matrices=False, compute_uv=True)
    mm = _matrices.matmul
    b = mm(mm(_H(u), da), _H(vh))
    idx = _np.arange(n)
    keep = (idx[:, None, None] != idx[None, :, None]) & (idx[:, None, None] != idx[None, None, :])
    keep &= (idx[None, :, None] != idx[None, None, :])      # p_ii = 0: the diagonal is dropped
    s_k = _shapes.expand_dims(s, (-1, -2))                  # (..., k, 1, 1)
    p = _reductions.prod(_elementwise.where(keep, s_k, 1), axis=-3)
    p = _elementwise.where(_np.eye(n, dtype=bool), 0, p)
    p = _conversion.astype(p, dt)
    bdiag = _matrices.diagonal(b, axis1=-2, axis2=-1)
    g = mm(p, _shapes.expand_dims(bdiag, -1))[..., 0]
    g = _elementwise.multiply(_shapes.expand_dims(g, -1), _np.eye(n, dtype=dt)) - \
        _elementwise.multiply(p, _shapes.swapaxes(b, -1, -2))
    sgn = _elementwise.multiply(_L.det_p.bind(u), _L.det_p.bind(vh))
    sgn = _shapes.expand_dims(sgn, (-1, -2))
    return _cofactor(a), _elementwise.multiply(sgn, mm(mm(_complex.conj(u), g),
                                                      _complex.conj(vh)))


def _det_jvp(primals, tangents):
    a, = primals
    da, = tangents
    return _L.det_p.bind(a), _reductions.sum(_elementwise.multiply(_cofactor(a), da),
                                             axis=(-2, -1))


def _make_det():
    cof = custom_jvp(_cofactor_value)
    cof.defjvp(_cofactor_jvp)
    d = custom_jvp(lambda a: _L.det_p.bind(a))
    d.defjvp(_det_jvp)
    return cof, d


_cofactor, _det = _make_det()


def slogdet(a: ArrayLike, *, method: str | None = None) -> tuple[Array, ...]:
    """Sign and natural logarithm of the absolute value of the determinant (``method``:
    JAX's None, "lu" or "qr"; computed from the LU factorization either way, the same
    values up to rounding)."""
    if method not in (None, "lu", "qr"):
        raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' "
                         "(`None`), and 'qr'.")
    a, = _inexact(a)
    _check_square("slogdet", a)
    sign, logabsdet = _L.slogdet_p.bind(a)
    return SlogdetResult(sign, logabsdet)


def matrix_power(a: ArrayLike, n: int) -> Array:
    """``a`` raised to the integer power ``n`` (negative powers invert ``a`` first)."""
    if not isinstance(n, (int, _np.integer)):
        raise TypeError(f"matrix_power: exponent n must be an integer, got {type(n).__name__}")
    n = int(n)
    a0, = _inexact(a)
    _check_square("matrix_power", a0)
    # an integer matrix stays integer for n >= 0 (JAX's and NumPy's dtype; it became float64)
    a = a if n >= 0 and _np.result_type(a).kind in "iu" else a0
    if n < 0:
        a, n = inv(a), -n
    if n == 0:
        return _shapes.broadcast_to(_np.eye(_aval(a).shape[-1], dtype=_aval(a).dtype),
                                 _aval(a).shape)
    return _E.power_by_squaring(a, n, _matrices.matmul)


def multi_dot(arrays: Sequence[ArrayLike], *, precision: Any = None) -> Array:
    """Matrix product of two or more arrays, left to right (``precision`` changes nothing:
    float64 products)."""
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError("multi_dot: expecting at least two arrays")
    out = arrays[0]
    for x in arrays[1:]:
        out = _matrices.matmul(out, x)
    return out


# ---------------------------------------------------------------------------
# Decompositions


def _symmetrize(a):
    """``(a + a^H) / 2``, as JAX's ``symmetrize_input``."""
    at = _shapes.swapaxes(a, -1, -2)
    if _core.get_aval(a).dtype.kind == "c":
        at = _L.E.conj(at)
    return (a + at) / 2


def cholesky(a: ArrayLike, *, upper: bool = False, symmetrize_input: bool = True) -> Array:
    """Cholesky factor: lower ``L`` with ``a = L @ L.T`` (or upper ``U = L.T``)."""
    a, = _inexact(a)
    _check_square("cholesky", a)
    if symmetrize_input:
        a = _symmetrize(a)
    if upper:
        return _shapes.swapaxes(_L.cholesky_p.bind(_shapes.swapaxes(a, -1, -2)), -1, -2)
    return _L.cholesky_p.bind(a)


def _uplo(fname, UPLO):
    if UPLO is None or UPLO in ("L", "l"):
        return True
    if UPLO in ("U", "u"):
        return False
    raise ValueError(f"{fname}: UPLO must be 'L' or 'U', got {UPLO!r}")


def eigh(a: ArrayLike, UPLO: str | None = None, symmetrize_input: bool = True) -> tuple[Array, ...]:
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix."""
    lower = _uplo("eigh", UPLO)
    a, = _inexact(a)
    _check_square("eigh", a)
    if symmetrize_input:
        a = _symmetrize(a)
    w, v = _L.eigh_p.bind(a, lower=lower)
    return EighResult(w, v)


def eigvalsh(a: ArrayLike, UPLO: str | None = "L", *, symmetrize_input: bool = True) -> Array:
    """Eigenvalues of a symmetric matrix (the derivative computes the eigenvectors)."""
    lower = _uplo("eigvalsh", UPLO)
    a, = _inexact(a)
    _check_square("eigvalsh", a)
    if symmetrize_input:
        a = _symmetrize(a)
    return _L.eigvalsh_p.bind(a, lower=lower)


def qr(a: ArrayLike, mode: str = "reduced") -> Any:
    """QR decomposition; ``mode`` is 'reduced', 'complete', 'r' or 'raw' (LAPACK's
    ``geqrf`` factors as JAX's: the Householder reflectors, transposed ``[..., n, m]``, and
    their factors ``[..., min(m, n)]``, not differentiable; lineax's QR solver reads them)."""
    a, = _inexact(a)
    _check_matrix("qr", a)
    if mode == "raw":
        shape, dt = _aval(a).shape, _aval(a).dtype
        m, n = shape[-2:]
        out = (_core.ShapedArray(shape[:-2] + (n, m), dt),
               _core.ShapedArray(shape[:-2] + (min(m, n),), dt))
        h, taus = pure_callback(lambda x: tuple(r.astype(dt) for r in _np.linalg.qr(x, "raw")),
                                out, a, vmap_method="sequential")
        return QRResult(h, taus)
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr: unrecognized mode {mode!r} (expected 'reduced', 'complete', 'r' "
                         "or 'raw')")
    q, r = _L.qr_p.bind(a, full_matrices=mode == "complete")
    if mode == "r":
        return r
    return QRResult(q, r)


def svd(a: ArrayLike, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False
        ) -> Any:
    """Singular value decomposition ``a = U @ diag(S) @ Vh`` (S descending)."""
    a, = _inexact(a)
    _check_matrix("svd", a)
    # hermitian=True is accepted for compatibility; the general SVD is used
    # (the same values, singular vectors up to the usual sign freedom).
    outs = _L.svd_p.bind(a, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    if not compute_uv:
        return outs[0]
    return SVDResult(*outs)


def _svd_values(a):
    return _L.svd_p.bind(a, full_matrices=False, compute_uv=False)[0]


def svdvals(x: ArrayLike) -> Array:
    """Singular values of a matrix (or of each matrix in a stack), in descending order."""
    x, = _inexact(x)
    _check_matrix("svdvals", x, "x")
    return _svd_values(x)


# ---------------------------------------------------------------------------
# Norms


def _norm_axes(axis, nd):
    if isinstance(axis, (int, _np.integer)):
        axis = (int(axis),)
    axis = tuple(int(a) for a in axis)
    for a in axis:
        if not -nd <= a < nd:
            raise ValueError(f"norm: axis {a} is out of bounds for an array of rank {nd}")
    axis = tuple(a % nd for a in axis)
    if len(set(axis)) != len(axis):
        raise ValueError(f"norm: duplicate axes given: {axis}")
    return axis


def _abs2(x):
    """``|x|**2``, real for complex ``x``."""
    if _aval(x).dtype.kind == "c":
        return _L.E.real(x * _L.E.conj(x))
    return x * x


def _vector_norm(x, ord, axis, keepdims):
    ax = axis
    absx = _elementwise.abs(x)
    if ord is None or ord == 2:
        return _elementwise.sqrt(_reductions.sum(_abs2(x), axis=ax, keepdims=keepdims))
    if ord == _np.inf:
        # initial=0 as JAX's: an empty vector's norm is 0, and at a zero vector the tie with 0
        # takes half the cotangent (JAX's subgradient)
        return _reductions.max(absx, axis=ax, keepdims=keepdims, initial=0)
    if ord == -_np.inf:
        return _reductions.min(absx, axis=ax, keepdims=keepdims)
    if ord == 0:
        nonzero = _conversion.astype(x != 0, _np.finfo(_aval(x).dtype).dtype)
        return _reductions.sum(nonzero, axis=ax, keepdims=keepdims)
    if ord == 1:
        return _reductions.sum(absx, axis=ax, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError(f"norm: invalid norm order {ord!r} for vectors")
    p = float(ord)
    total = _reductions.sum(_elementwise.power(absx, p), axis=ax, keepdims=keepdims)
    return _elementwise.power(total, 1.0 / p)


def _matrix_norm(x, ord, axis, keepdims):
    row, col = axis
    if ord is None or ord == "fro":
        out = _elementwise.sqrt(_reductions.sum(_abs2(x), axis=(row, col)))
    elif ord in ("nuc", 2, -2):
        s = _svd_values(_shapes.moveaxis(x, (row, col), (-2, -1)))
        if ord == "nuc":
            out = _reductions.sum(s, axis=-1)
        elif ord == 2:
            out = _reductions.max(s, axis=-1, initial=0)
        else:
            out = _reductions.min(s, axis=-1)
    elif ord in (1, -1):
        c = col - 1 if col > row else col
        sums = _reductions.sum(_elementwise.abs(x), axis=row)
        out = (_reductions.max(sums, axis=c, initial=0) if ord == 1
               else _reductions.min(sums, axis=c))
    elif ord in (_np.inf, -_np.inf):
        r = row - 1 if row > col else row
        sums = _reductions.sum(_elementwise.abs(x), axis=col)
        out = (_reductions.max(sums, axis=r, initial=0) if ord == _np.inf
               else _reductions.min(sums, axis=r))
    else:
        raise ValueError(f"norm: invalid norm order {ord!r} for matrices")
    if keepdims:
        shape = list(_aval(x).shape)
        shape[row] = shape[col] = 1
        out = _shapes.reshape(out, tuple(shape))
    return out


def norm(x: ArrayLike, ord: float | str | None = None, axis: None | tuple[int, ...] | int = None,
         keepdims: bool = False) -> Array:
    """Vector or matrix norm, as ``numpy.linalg.norm``.

    Vectors: ord None/2, 1, inf, -inf, 0 or any p.  Matrices (2-D input or a
    2-tuple ``axis``): ord None/'fro', 'nuc', 1, -1, inf, -inf, 2, -2 (the
    last three via the singular values).
    """
    _util._static_axis(axis, "linalg.norm")
    x, = _inexact(x)
    nd = _aval(x).ndim
    if axis is None:
        if ord is None:
            out = _elementwise.sqrt(_reductions.sum(_abs2(x)))
            if keepdims:
                out = _shapes.reshape(out, (1,) * nd)
            return out
        if nd == 1:
            axis = (0,)
        elif nd == 2:
            axis = (0, 1)
        else:
            raise ValueError(f"norm: improper number of dimensions to norm (got an array of rank "
                             f"{nd} with ord={ord!r} and axis=None)")
    axis = _norm_axes(axis, nd)
    if len(axis) == 1:
        return _vector_norm(x, ord, axis[0], keepdims)
    if len(axis) == 2:
        return _matrix_norm(x, ord, axis, keepdims)
    raise ValueError(f"norm: improper number of dimensions to norm (axis={axis})")


def vector_norm(x: ArrayLike, /, *, axis: int | tuple[int, ...] | None = None,
                keepdims: bool = False, ord: int | str = 2) -> Array:
    """Vector norm over ``axis`` (all entries if None; several axes are flattened together)."""
    if isinstance(axis, list):   # (JAX's takes a list as a tuple; norm refuses one)
        axis = tuple(axis)
    x, = _inexact(x)
    if axis is None:
        nd = _aval(x).ndim
        out = _vector_norm(_shapes.ravel(x), ord, 0, False)
        return _shapes.reshape(out, (1,) * nd) if keepdims else out
    if isinstance(axis, tuple) and len(axis) > 1:
        nd = _aval(x).ndim
        axes = _norm_axes(axis, nd)
        rest = [i for i in range(nd) if i not in axes]
        xt = _shapes.transpose(x, tuple(rest) + axes)
        s = _aval(xt).shape
        flat = _shapes.reshape(xt, s[:len(rest)] + (math.prod(s[len(rest):]),))
        out = _vector_norm(flat, ord, -1, False)
        if keepdims:
            shape = list(_aval(x).shape)
            for a in axes:
                shape[a] = 1
            out = _shapes.reshape(out, tuple(shape))
        return out
    return norm(x, ord=ord, axis=axis, keepdims=keepdims)


def matrix_norm(x: ArrayLike, /, *, keepdims: bool = False, ord: str | int = "fro") -> Array:
    """Matrix norm over the last two axes."""
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)



# ---------------------------------------------------------------------------
# Pseudo-inverse, rank, least squares, condition numbers, tensor solves


def _H(x):
    return _complex.conj(_shapes.swapaxes(x, -1, -2))


def _pinv_value(a, rtol):
    u, s, vh = _L.svd_p.bind(a, full_matrices=False, compute_uv=True)
    cutoff = _elementwise.multiply(rtol, _reductions.max(s, axis=-1, keepdims=True))
    keep = _elementwise.greater(s, cutoff)
    s_inv = _elementwise.where(keep, _elementwise.divide(1, _elementwise.where(keep, s, 1)), 0)
    s_inv = _conversion.astype(s_inv, _aval(a).dtype)
    return _matrices.matmul(_H(vh) * _shapes.expand_dims(s_inv, -2), _H(u))


def _pinv_jvp(rtol, primals, tangents):
    # Golub & Pereyra (1973): the derivative of the pseudo-inverse (exact where
    # the rank is locally constant), written with products only.
    a, = primals
    da, = tangents
    p = _pinv(rtol, a)
    mm = _matrices.matmul
    s = mm(mm(p, _H(p)), _H(da))
    t = mm(mm(_H(da), _H(p)), p)
    return p, (-mm(mm(p, da), p) + s - mm(mm(s, a), p) + t - mm(mm(p, a), t))


def _make_pinv():
    f = custom_jvp(lambda rtol, a: _pinv_value(a, rtol), nondiff_argnums=(0,))
    f.defjvp(_pinv_jvp)
    return f


_pinv = _make_pinv()


def pinv(a: ArrayLike, rtol: ArrayLike | None = None, hermitian: bool = False, *,
         rcond: ArrayLike | None = None) -> Array:
    """The Moore-Penrose pseudo-inverse, from the SVD; singular values below
    ``rtol * max(s)`` are dropped.  As in JAX, the default ``rtol`` is
    ``10 * max(m, n) * eps`` (NumPy's is 1e-15), and the derivative is
    Golub and Pereyra's formula (stable where the SVD's is not)."""
    if rcond is not None:
        if rtol is not None:
            raise ValueError("pinv: only one of rtol and rcond may be specified.")
        rtol = rcond
    a, = _inexact(a)
    _check_matrix("pinv", a)
    m, n = _aval(a).shape[-2:]
    if m == 0 or n == 0:  # the empty (n, m) matrix, as JAX's (the SVD's max failed)
        return _shapes.broadcast_to(_np.zeros((), _aval(a).dtype), _aval(a).shape[:-2] + (n, m))
    if rtol is None:
        rtol = 10.0 * max(m, n) * float(_np.finfo(_aval(a).dtype).eps)
    if isinstance(rtol, (int, float, _np.number)):
        rtol = float(rtol)
    elif not isinstance(rtol, _core.Tracer):
        rtol = float(_np.asarray(rtol))
    return _pinv(rtol, a)


def matrix_rank(M: ArrayLike, rtol: ArrayLike | None = None, *, hermitian: bool = False,
                tol: ArrayLike | None = None) -> Array:
    """The number of singular values above ``tol`` (default ``s.max() * max(m, n) * eps``,
    or ``rtol * s.max()``)."""
    M, = _inexact(M)
    if _aval(M).ndim < 2:
        return _conversion.astype(_reductions.any(_elementwise.not_equal(M, 0)), _np.int64)
    s = _svd_values(M)
    if tol is None:
        if rtol is None:
            rtol = max(_aval(M).shape[-2:]) * float(_np.finfo(_aval(M).dtype).eps)
        tol = _elementwise.multiply(_reductions.max(s, axis=-1), rtol)
    tol = _shapes.expand_dims(_conversion.asarray(tol) if not isinstance(tol, _core.Tracer)
                              else tol, -1)
    return _reductions.sum(_elementwise.greater(s, tol), axis=-1)


LstsqResult = namedtuple("LstsqResult", ["x", "residuals", "rank", "s"])


def lstsq(a: ArrayLike, b: ArrayLike, rcond: float | None = None, *, numpy_resid: bool = False
          ) -> tuple[Array, Array, Array, Array]:
    """The least-squares solution of ``a @ x = b``, from the SVD: ``(x, residuals,
    rank, s)``.  As in JAX, ``residuals`` always holds the squared residual norms
    (NumPy returns an empty array when ``a`` is rank-deficient or wide; pass
    ``numpy_resid=True`` for NumPy's behaviour, eagerly)."""
    a, b = _inexact(a, b)
    if _aval(a).ndim != 2:
        raise TypeError(f"{_aval(a).ndim}-dimensional array given. Array must be two-dimensional "
                        "(lstsq: argument 'a')")
    vector = _aval(b).ndim == 1
    if _aval(b).ndim not in (1, 2):
        raise TypeError(f"{_aval(b).ndim}-dimensional array given. Array must be one or "
                        "two-dimensional (lstsq: argument 'b')")
    if _aval(a).shape[0] != _aval(b).shape[0]:
        raise ValueError("Leading dimensions of input arrays must match (lstsq: a has "
                         f"{_aval(a).shape[0]} rows, b has {_aval(b).shape[0]})")
    if vector:
        b = _shapes.expand_dims(b, -1)
    m, n = _aval(a).shape
    eps = float(_np.finfo(_aval(a).dtype).eps)
    rcond = eps * max(m, n) if rcond is None else (rcond if rcond >= 0 else eps)
    u, s, vh = _L.svd_p.bind(a, full_matrices=False, compute_uv=True)
    smax = s[0] if min(m, n) else 0.0  # an empty a has no singular values (s[0] failed)
    mask = _elementwise.logical_and(_elementwise.greater(s, 0),
                                    _elementwise.greater_equal(s, rcond * smax))
    rank = _reductions.sum(mask)
    safe = _elementwise.where(mask, s, 1)
    s_inv = _conversion.astype(_elementwise.where(mask, _elementwise.divide(1, safe), 0),
                               _aval(a).dtype)
    x = _matrices.matmul(_H(vh), _shapes.expand_dims(s_inv, -1) * _matrices.matmul(_H(u), b))
    r = _elementwise.subtract(b, _matrices.matmul(a, x))
    resid = _reductions.sum(_complex.real(_elementwise.multiply(_complex.conj(r), r)),
                            axis=0)
    if numpy_resid and (int(rank) < n or m <= n):
        resid = _np.empty((0,), _aval(resid).dtype)
    if vector:   # the residuals keep their shape (1,), as JAX's and NumPy's (we gave ())
        x = _shapes.reshape(x, (n,))
    return LstsqResult(x, resid, rank, s)


def cond(x: ArrayLike, p=None) -> Array:
    """The condition number of ``x`` in the norm ``p`` (None/2/-2: singular values;
    otherwise ``norm(x, p) * norm(inv(x), p)``); inf for a singular matrix."""
    x, = _inexact(x)
    shape = _aval(x).shape
    if len(shape) < 2:
        raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got arr.shape={shape}")
    if shape[-1] == 0 or shape[-2] == 0:
        raise ValueError(f"jnp.linalg.cond: input array must not be empty; got arr.shape={shape}")
    if p is None or p == 2:
        s = _svd_values(x)
        return _elementwise.divide(s[..., 0], s[..., -1])
    if p == -2:
        s = _svd_values(x)
        r = _elementwise.divide(s[..., -1], s[..., 0])
    else:
        if shape[-1] != shape[-2]:
            raise ValueError(f"jnp.linalg.cond: for p={p!r}, array must be square; got "
                             f"arr.shape={shape}")
        r = _elementwise.multiply(norm(x, ord=p, axis=(-2, -1)), norm(inv(x), ord=p, axis=(-2, -1)))
    nan_in = _reductions.any(_elementwise.isnan(x), axis=(-2, -1))
    return _elementwise.where(_elementwise.logical_and(_elementwise.isnan(r),
                                                       _elementwise.logical_not(nan_in)), _np.inf, r)


def tensorinv(a: ArrayLike, ind: int = 2) -> Array:
    """The inverse of ``a`` seen as a linear map from its last ``ndim - ind``
    axes to its first ``ind`` axes, shaped ``a.shape[ind:] + a.shape[:ind]``."""
    a, = _inexact(a)
    ind = int(ind)
    if ind <= 0:
        raise ValueError(f"tensorinv: argument 'ind' must be a positive integer, got {ind}")
    shape = _aval(a).shape
    rows, cols = math.prod(shape[:ind]), math.prod(shape[ind:])
    if rows != cols:
        raise LinAlgError(f"tensorinv: the product of the first {ind} dimensions of 'a' ({rows}) "
                          f"must equal the product of the others ({cols})")
    return _shapes.reshape(inv(_shapes.reshape(a, (rows, cols))), shape[ind:] + shape[:ind])


def tensorsolve(a: ArrayLike, b: ArrayLike, axes: tuple[int, ...] | None = None) -> Array:
    """The ``x`` with ``tensordot(a, x, x.ndim) == b``; ``axes`` are moved to the end first."""
    a, b = _inexact(a, b)
    nd = _aval(a).ndim
    if axes is not None:
        axes = [ax % nd for ax in axes]
        order = [i for i in range(nd) if i not in axes] + axes
        a = _shapes.transpose(a, tuple(order))
    shape = _aval(a).shape
    bnd = _aval(b).ndim
    xshape = shape[bnd:]
    rows, cols = math.prod(shape[:bnd]), math.prod(xshape)
    if rows != cols or shape[:bnd] != _aval(b).shape:
        raise LinAlgError(f"tensorsolve: a of shape {shape} does not map {xshape}-shaped x onto "
                          f"b of shape {_aval(b).shape} (a square system is needed)")
    x = solve(_shapes.reshape(a, (rows, cols)), _shapes.reshape(b, (rows,)))
    return _shapes.reshape(x, xshape)


# ---------------------------------------------------------------------------
# General (non-symmetric) eigendecomposition: LAPACK through pure_callback,
# complex results as in JAX; eigenvalues are differentiable, eigenvectors
# are not (JAX's error).

EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])


def _eig_callback(m):
    dt = _np.result_type(m.dtype, _np.complex64)
    # a matrix with NaN or inf: JAX's NaN, per matrix of a stack (NumPy raises LinAlgError)
    bad = ~_np.all(_np.isfinite(m), axis=(-2, -1))
    w, v = _np.linalg.eig(_np.where(bad[..., None, None], 0, m))
    w, v = w.astype(dt), v.astype(dt)
    w[bad], v[bad] = complex(_np.nan, _np.nan), complex(_np.nan, _np.nan)
    return w, v


def _eig_parts(a):
    shape = _aval(a).shape
    dt = _np.result_type(_aval(a).dtype, _np.complex64)
    return pure_callback(_eig_callback, (_core.ShapedArray(shape[:-1], dt),
                                         _core.ShapedArray(shape, dt)), a,
                         vmap_method="sequential")


def _eigvals_jvp(primals, tangents):
    # dw_i = (V^-1 dA V)_ii
    a, = primals
    w, v = _eig_parts(a)
    da = _conversion.astype(tangents[0], _aval(v).dtype)
    return w, _reductions.sum(_elementwise.multiply(solve(v, da),
                                                    _shapes.swapaxes(v, -1, -2)), axis=-1)


def _eig_jvp(primals, tangents):
    raise NotImplementedError(
        "Derivatives of non-symmetric eigenvectors are only valid under assumptions on the "
        "input that JAX cannot check (see the enable_eigvec_derivs argument to "
        "jax.lax.linalg.eig). Pass enable_eigvec_derivs=True to jax.lax.linalg.eig to opt in. "
        "See https://github.com/jax-ml/jax/issues/2748 for discussion. (tangentia.numpy.linalg."
        "eig: differentiate eigvals instead, or eigh for a symmetric matrix.)")


def _make_eig():
    vals = custom_jvp(lambda a: _eig_parts(a)[0])
    vals.defjvp(_eigvals_jvp)
    both = custom_jvp(lambda a: tuple(_eig_parts(a)))
    both.defjvp(_eig_jvp)
    return vals, both


_eigvals, _eig = _make_eig()


def eig(a: ArrayLike) -> tuple[Array, ...]:
    """Eigenvalues and right eigenvectors of a general square matrix (complex,
    as in JAX; LAPACK's through ``pure_callback``).  Not differentiable (use
    ``eigvals`` or ``eigh``)."""
    a, = _inexact(a)
    _check_square("eig", a)
    return EigResult(*_eig(a))


def eigvals(a: ArrayLike) -> Array:
    """Eigenvalues of a general square matrix (complex), differentiable:
    ``dw_i = (V^-1 dA V)_ii``."""
    a, = _inexact(a)
    _check_square("eigvals", a)
    return _eigvals(a)


# ---------------------------------------------------------------------------
# The array API's linalg names (numpy.linalg's too): tangentia.numpy's
# functions acting on the last axes, with the array API's signatures.


def cross(x1: ArrayLike, x2: ArrayLike, /, *, axis=-1) -> Array:
    """The cross product of 3-vectors along ``axis`` (the array API's
    ``linalg.cross``: both operands must have 3 elements there).

    Args:
      x1: the first operand.
      x2: the second operand (broadcast against ``x1``).
      axis: the axis holding the vectors (default the last).
    """
    n1, n2 = _shapes.shape(x1)[axis], _shapes.shape(x2)[axis]
    if n1 != 3 or n2 != 3:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but they "
                         f"have x1.shape[axis]={n1} and x2.shape[axis]={n2} (linalg.cross)")
    return _matrices.cross(x1, x2, axis=axis)


def diagonal(x: ArrayLike, /, *, offset: int = 0) -> Array:
    """The diagonals of the matrices in the last two axes of ``x``.

    Args:
      x: an array of at least two dimensions.
      offset: the diagonal (positive: above the main one).
    """
    if _shapes.ndim(x) < 2:
        raise ValueError("diagonal requires an array of at least two dimensions. "
                         f"(linalg.diagonal: argument 'x' has shape {_shapes.shape(x)})")
    return _matrices.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def matmul(x1: ArrayLike, x2: ArrayLike, /, *, precision: Any = None,
           preferred_element_type: DTypeLike | None = None) -> Array:
    """The matrix product ``x1 @ x2`` (as ``tangentia.numpy.matmul``).

    Args:
      x1: the first operand.
      x2: the second operand.
      precision: accepted for JAX compatibility (products are float64 exact).
      preferred_element_type: the result's dtype (default: the promoted one).
    """
    return _matrices.matmul(x1, x2, preferred_element_type=preferred_element_type)


def matrix_transpose(x: ArrayLike, /) -> Array:
    """``x`` with its last two axes swapped.

    Args:
      x: an array of at least two dimensions.
    """
    return _shapes.matrix_transpose(x)


def outer(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """The outer product of two vectors.

    Args:
      x1: a 1-D array.
      x2: a 1-D array.
    """
    if _shapes.ndim(x1) != 1 or _shapes.ndim(x2) != 1:
        raise ValueError("Input arrays must be one-dimensional, but they are "
                         f"x1.ndim={_shapes.ndim(x1)} x2.ndim={_shapes.ndim(x2)} (linalg.outer)")
    return _matrices.outer(x1, x2)


def tensordot(x1: ArrayLike, x2: ArrayLike, /, *,
              axes: int | tuple[Sequence[int], Sequence[int]] = 2, precision: Any = None,
              preferred_element_type: DTypeLike | None = None, out_sharding: Any = None
              ) -> Array:
    """The tensor contraction of ``x1`` and ``x2`` over ``axes`` (``out_sharding`` changes
    nothing: one device; as
    ``tangentia.numpy.tensordot``).

    Args:
      x1: the first operand.
      x2: the second operand.
      axes: the number of trailing/leading axes contracted, or two sequences
        of axes.
      precision: accepted for JAX compatibility.
      preferred_element_type: the result's dtype (default: the promoted one).
    """
    return _matrices.tensordot(x1, x2, axes=axes, preferred_element_type=preferred_element_type)


def trace(x: ArrayLike, /, *, offset: int = 0, dtype: DTypeLike | None = None) -> Array:
    """The sums of the diagonals of the matrices in the last two axes.

    Args:
      x: an array of at least two dimensions.
      offset: the diagonal (positive: above the main one).
      dtype: the result's dtype (default: ``x``'s).
    """
    ndim = _np.ndim(x) if not isinstance(x, _core.Tracer) else _aval(x).ndim
    if ndim < 2:  # JAX's error (this was an IndexError)
        raise ValueError(f"axis -2 is out of bounds for array of dimension {ndim} (linalg.trace: "
                         "argument x must have at least two dimensions)")
    out = _matrices.trace(x, offset=offset, axis1=-2, axis2=-1)
    return out if dtype is None else _conversion.astype(out, dtype)


def vecdot(x1: ArrayLike, x2: ArrayLike, /, *, axis: int = -1, precision: Any = None,
           preferred_element_type: DTypeLike | None = None) -> Array:
    """The dot products of the vectors along ``axis`` (conjugating ``x1``).

    Args:
      x1: the first operand.
      x2: the second operand (broadcast against ``x1``).
      axis: the axis of the vectors (default the last).
      precision: accepted for JAX compatibility.
      preferred_element_type: the result's dtype (default: the promoted one).
    """
    out = _matrices.vecdot(x1, x2, axis=axis)
    return out if preferred_element_type is None else _conversion.astype(
        out, preferred_element_type)
