"""Linear algebra (``tangentia.numpy.linalg``), with NumPy's names and semantics.

Every function takes a matrix or a stack of matrices (leading batch
dimensions) and works under ``grad``, ``jvp``, ``vmap`` and ``jit`` in any
order; the primitives and their rules are in ``tangentia.primitives.linalg``.
Derivatives are for real inputs.
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as _np

from .. import core as _core
from ..primitives import linalg as _L
from . import _conversion, _elementwise, _matrices, _reductions, _shapes

LinAlgError = _np.linalg.LinAlgError

__all__ = ["LinAlgError", "cholesky", "det", "eigh", "eigvalsh", "inv", "matrix_norm",
           "matrix_power", "multi_dot", "norm", "qr", "slogdet", "solve", "svd", "svdvals",
           "vector_norm"]

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
    if dt.kind not in "fc":
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


def solve(a, b):
    """Solve ``a @ x = b`` (``b`` a vector if 1-D, else a (stack of) matrices).

    Reverse mode factors ``a`` once: the LU factors of the primal pass solve
    the transposed system of the backward pass.
    """
    a, b = _inexact(a, b)
    _check_square("solve", a)
    return _solve_with("solve", _bind_solve, a, b)


def inv(a):
    """Inverse of a square matrix (or of each matrix in a stack)."""
    a, = _inexact(a)
    _check_square("inv", a)
    return _L.inv_p.bind(a)


def det(a):
    """Determinant of a square matrix (or of each matrix in a stack)."""
    a, = _inexact(a)
    _check_square("det", a)
    return _L.det_p.bind(a)


def slogdet(a):
    """Sign and natural logarithm of the absolute value of the determinant."""
    a, = _inexact(a)
    _check_square("slogdet", a)
    sign, logabsdet = _L.slogdet_p.bind(a)
    return SlogdetResult(sign, logabsdet)


def matrix_power(a, n):
    """``a`` raised to the integer power ``n`` (negative powers invert ``a`` first)."""
    a, = _inexact(a)
    _check_square("matrix_power", a)
    if not isinstance(n, (int, _np.integer)):
        raise TypeError(f"matrix_power: exponent n must be an integer, got {type(n).__name__}")
    n = int(n)
    if n < 0:
        a, n = inv(a), -n
    if n == 0:
        return _shapes.broadcast_to(_np.eye(_aval(a).shape[-1], dtype=_aval(a).dtype),
                                 _aval(a).shape)
    result, base = None, a
    while n:
        if n & 1:
            result = base if result is None else _matrices.matmul(result, base)
        n >>= 1
        if n:
            base = _matrices.matmul(base, base)
    return result


def multi_dot(arrays):
    """Matrix product of two or more arrays, left to right."""
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


def cholesky(a, *, upper=False, symmetrize_input=True):
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


def eigh(a, UPLO=None, symmetrize_input=True):
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix."""
    lower = _uplo("eigh", UPLO)
    a, = _inexact(a)
    _check_square("eigh", a)
    if symmetrize_input:
        a = _symmetrize(a)
    w, v = _L.eigh_p.bind(a, lower=lower)
    return EighResult(w, v)


def eigvalsh(a, UPLO="L", *, symmetrize_input=True):
    """Eigenvalues of a symmetric matrix (the derivative computes the eigenvectors)."""
    lower = _uplo("eigvalsh", UPLO)
    a, = _inexact(a)
    _check_square("eigvalsh", a)
    if symmetrize_input:
        a = _symmetrize(a)
    return _L.eigvalsh_p.bind(a, lower=lower)


def qr(a, mode="reduced"):
    """QR decomposition; ``mode`` is 'reduced', 'complete' or 'r'."""
    a, = _inexact(a)
    _check_matrix("qr", a)
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr: unrecognized mode {mode!r} (expected 'reduced', 'complete' or 'r')")
    q, r = _L.qr_p.bind(a, full_matrices=mode == "complete")
    if mode == "r":
        return r
    return QRResult(q, r)


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
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


def svdvals(x):
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
        return _reductions.max(absx, axis=ax, keepdims=keepdims)
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
            out = _reductions.max(s, axis=-1)
        else:
            out = _reductions.min(s, axis=-1)
    elif ord in (1, -1):
        c = col - 1 if col > row else col
        sums = _reductions.sum(_elementwise.abs(x), axis=row)
        out = _reductions.max(sums, axis=c) if ord == 1 else _reductions.min(sums, axis=c)
    elif ord in (_np.inf, -_np.inf):
        r = row - 1 if row > col else row
        sums = _reductions.sum(_elementwise.abs(x), axis=col)
        out = _reductions.max(sums, axis=r) if ord == _np.inf else _reductions.min(sums, axis=r)
    else:
        raise ValueError(f"norm: invalid norm order {ord!r} for matrices")
    if keepdims:
        shape = list(_aval(x).shape)
        shape[row] = shape[col] = 1
        out = _shapes.reshape(out, tuple(shape))
    return out


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector or matrix norm, as ``numpy.linalg.norm``.

    Vectors: ord None/2, 1, inf, -inf, 0 or any p.  Matrices (2-D input or a
    2-tuple ``axis``): ord None/'fro', 'nuc', 1, -1, inf, -inf, 2, -2 (the
    last three via the singular values).
    """
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


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """Vector norm over ``axis`` (all entries if None; several axes are flattened together)."""
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


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """Matrix norm over the last two axes."""
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)

