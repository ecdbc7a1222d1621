"""Linear-algebra primitives, each defined once with all of its rules.

Every primitive works on a matrix or a stack of matrices (leading batch
dimensions): its implementation calls NumPy/SciPy's stacked routines, so the
batching rule only moves the mapped axis to the front.  Right-hand sides are
always matrices ``(..., n, k)`` here; the public wrappers in
``tangentia.numpy.linalg`` and ``tangentia.scipy.linalg`` handle vectors,
broadcasting, dtype promotion and argument errors.

Several derivative rules change the primal computation so that it shares work
with the tangent (a rule returns the value and shares its work):

* ``solve``: the JVP factors ``a`` once (``lu``) and uses the factors both for
  the primal solution and for the tangent, which is a ``lu_solve`` -- a linear
  primitive whose transpose is ``lu_solve`` of the transposed system
  (``trans=1``) with the *same* factors.  Reverse mode therefore factors once.
* ``det``/``slogdet``: the primal is taken from the LU factors the tangent needs.
* ``eigvalsh`` and ``svd(compute_uv=False)``: undifferentiated, only values are
  computed; under differentiation the primal computes the vectors the rule needs.
* ``expm``: the tangent is the Fréchet derivative (``expm_frechet``), a linear
  primitive whose transpose is the Fréchet derivative at ``a.T``; when both the
  point and the tangent are concrete the two are computed in one SciPy call.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import core
from ..core import Primitive, ShapedArray, Tracer
from ..interpreters.ad import (Zero, add_tangents, defjvp_zero, is_undefined, primitive_jvps,
                               primitive_transposes)
from ..interpreters.batching import batch_size, materialize, move_to_front, primitive_batchers
from . import contraction as C
from . import elementwise as E
from . import indexing as I
from . import misc as M
from . import reductions as R
from . import structural as S
from ._lazy import LazyModule
from .sorting import take_along_axis

_sla = LazyModule("scipy.linalg", globals(), "_sla")  # (imported at its first use: _lazy)

__all__ = [
    "lu_p", "lu_solve_p", "lu_pivots_to_permutation_p", "triangular_solve_p", "solve_p",
    "inv_p", "det_p", "slogdet_p", "cholesky_p", "eigh_p", "eigvalsh_p", "qr_p", "svd_p",
    "expm_p", "expm_frechet_p",
]


# ---------------------------------------------------------------------------
# Small helpers (they work on arrays and tracers alike).  Rules are written
# with primitive functions only -- never with tangentia.numpy or a Tracer's
# operators -- so that this module sits below the NumPy API.


def _shape(x):
    return core.get_aval(x).shape


def _mT(x):
    nd = len(_shape(x))
    return S.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _mm(x, y):
    """Matrix product of (stacks of) matrices, leading dimensions broadcast."""
    xs, ys = _shape(x), _shape(y)
    if xs[:-2] != ys[:-2]:
        batch = np.broadcast_shapes(xs[:-2], ys[:-2])
        x, y = S.broadcast_to(x, batch + xs[-2:]), S.broadcast_to(y, batch + ys[-2:])
    nb = max(len(xs), len(ys)) - 2
    batch_dims = tuple(range(nb))
    return C.dot_general(x, y, (((nb + 1,), (nb,)), (batch_dims, batch_dims)))


def _zero_like(x):
    return np.zeros((), core.get_aval(x).dtype)


def _tril(x, k=0):
    """The lower triangle of (stacks of) matrices, from diagonal ``k`` down."""
    m, n = _shape(x)[-2:]
    return E.select(np.tri(m, n, k, dtype=bool), x, _zero_like(x))


def _triu(x, k=0):
    """The upper triangle of (stacks of) matrices, from diagonal ``k`` up."""
    m, n = _shape(x)[-2:]
    return E.select(np.tri(m, n, k - 1, dtype=bool), _zero_like(x), x)


def _diag(x):
    """The main diagonals of (stacks of) matrices."""
    shape = _shape(x)
    i = np.arange(min(shape[-2:]))
    return I.getitem(x, (slice(None),) * (len(shape) - 2) + (I.ARRAY, I.ARRAY), (i, i))


def _sum_axis(x, axis):
    return R.reduce_sum(x, (axis % len(_shape(x)),))


def _row(x):
    """``x[..., None, :]``"""
    shape = _shape(x)
    return S.reshape(x, shape[:-1] + (1, shape[-1]))


def _col(x):
    """``x[..., :, None]``"""
    return S.reshape(x, _shape(x) + (1,))


def _cols(x, start, stop):
    """``x[..., :, start:stop]``"""
    return I.static_slice(x, len(_shape(x)) - 1, start, stop)


def _rows(x, start, stop):
    """``x[..., start:stop, :]``"""
    return I.static_slice(x, len(_shape(x)) - 2, start, stop)


def _concat(xs, axis):
    return S.concatenate(xs, axis % len(_shape(xs[0])))


def _eye(n, dtype):
    return np.eye(n, dtype=dtype)


def _nz(t):
    return type(t) is not Zero


def _is_complex(x):
    return core.get_aval(x).dtype.kind == "c"


def _mH(x):
    """The conjugate transpose of (stacks of) matrices (the transpose if real)."""
    return E.conj(_mT(x)) if _is_complex(x) else _mT(x)


def _real_part(x):
    """The real part of a complex ``x`` (``x`` itself if real)."""
    return E.real(x) if _is_complex(x) else x


def _sym_from_triangle(t, lower):
    """The symmetric (Hermitian, if complex) matrix a routine that reads only one
    triangle sees: LAPACK ignores the imaginary part of a Hermitian diagonal."""
    strict = _tril(t, -1) if lower else _triu(t, 1)
    if not _is_complex(t):
        return E.add(_tril(t) if lower else _triu(t), _mT(strict))
    d = _diag_matrix(t)
    return E.add(E.add(strict, _mH(strict)), E.mul(0.5, E.add(d, E.conj(d))))


def _diag_matrix(t):
    """``t`` with its off-diagonal entries zeroed."""
    n = _shape(t)[-1]
    return E.select(np.eye(n, dtype=bool), t, _zero_like(t))


def _as_out(x):
    return x if type(x) is np.ndarray else np.asarray(x)


# Generic batching: every argument's mapped axis goes to the front (unmapped
# arguments are broadcast); the implementations handle leading batch dims.


def _front_batch(prim):
    def rule(args, dims, **params):
        size = batch_size(args, dims)
        args = [materialize(x, d, size) for x, d in zip(args, dims)]
        out = prim.bind(*args, **params)
        if prim.multiple_results:
            return out, [0] * len(out)
        return out, 0
    return rule


def _rhs_batch(prim):
    """Batching for ``prim(*lhs, b)`` linear solves: if only ``b`` is mapped, the
    mapped axis is folded into the columns of ``b`` (one factorization, many
    right-hand sides); otherwise everything is mapped."""
    front = _front_batch(prim)

    def rule(args, dims, **params):
        *lhs, b = args
        *ldims, bd = dims
        if bd is None or any(d is not None for d in ldims):
            return front(args, dims, **params)
        b = move_to_front(b, bd)
        bs = _shape(b)                     # (B, *batch, n, k)
        nb = len(bs) - 3
        perm = tuple(range(1, nb + 2)) + (0, nb + 2)
        bt = S.transpose(b, perm)          # (*batch, n, B, k)
        folded = S.reshape(bt, bs[1:nb + 2] + (bs[0] * bs[-1],))
        x = prim.bind(*lhs, folded, **params)
        x = S.reshape(x, bs[1:nb + 2] + (bs[0], bs[-1]))
        inv = tuple(int(i) for i in np.argsort(perm))
        return S.transpose(x, inv), 0
    return rule


def _square(name, a, what="a"):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: argument {what} must be a square matrix or a stack of square "
                         f"matrices, got shape {a.shape}")


def _same_batch(name, *avals):
    b0 = avals[0].shape[:-2]
    for a in avals[1:]:
        if a.shape[:-2] != b0:
            raise ValueError(f"{name}: batch dimensions differ: {[x.shape for x in avals]}")


def _rhs_aval(name, a, b):
    _square(name, a)
    if b.ndim != a.ndim or b.shape[-2] != a.shape[-1]:
        raise ValueError(f"{name}: argument b of shape {b.shape} does not match argument a of "
                         f"shape {a.shape}")
    _same_batch(name, a, b)
    return ShapedArray(b.shape, np.result_type(a.dtype, b.dtype), False)


def _per_matrix(fn, *arrays):
    """Apply ``fn`` (taking single matrices, returning an array or a tuple of
    arrays) over the common leading batch dimensions of ``arrays`` (each given
    as ``(array, core_ndim)``).  SciPy's own batching is a Python loop too, and
    older SciPy versions have none."""
    arrs = [np.asarray(x) for x, _ in arrays]
    batch = arrs[0].shape[:arrs[0].ndim - arrays[0][1]]
    if not batch:
        return fn(*arrs)
    results = [fn(*[x[idx] for x in arrs]) for idx in np.ndindex(batch)]
    if isinstance(results[0], tuple):
        return tuple(np.stack([r[i] for r in results]).reshape(batch + np.shape(results[0][i]))
                     for i in range(len(results[0])))
    return np.stack(results).reshape(batch + np.shape(results[0]))


# ---------------------------------------------------------------------------
# lu: a = P @ L @ U  ->  (lu, pivots (LAPACK row swaps), permutation)


def _pivots_to_perm(piv, m):
    piv = np.asarray(piv)
    batch = piv.shape[:-1]
    # explicit sizes: reshape(-1, 0) is ambiguous (an empty matrix's pivots)
    flat_piv = (piv.reshape(int(np.prod(batch)), piv.shape[-1]) if piv.ndim
                else piv.reshape(1, -1))
    nbatch = flat_piv.shape[0]
    perm = np.empty((nbatch, m), dtype=np.int32)
    if nbatch <= flat_piv.shape[1]:
        for b in range(nbatch):
            p = list(range(m))
            for i, j in enumerate(flat_piv[b].tolist()):
                p[i], p[j] = p[j], p[i]
            perm[b] = p
    else:
        perm[:] = np.arange(m, dtype=np.int32)
        rows = np.arange(nbatch)
        for i in range(flat_piv.shape[1]):
            j = flat_piv[:, i]
            tmp = perm[rows, i].copy()
            perm[rows, i] = perm[rows, j]
            perm[rows, j] = tmp
    return perm.reshape(batch + (m,))


def _lu_impl(a):
    a = np.asarray(a)
    m, n = a.shape[-2:]
    if a.size == 0:
        return (a.copy(), np.zeros(a.shape[:-2] + (min(m, n),), np.int32),
                np.broadcast_to(np.arange(m, dtype=np.int32), a.shape[:-2] + (m,)).copy())
    with warnings.catch_warnings():  # a singular a has a zero pivot: a result, as JAX's
        warnings.simplefilter("ignore", _sla.LinAlgWarning)
        lu, piv = _per_matrix(lambda x: tuple(_sla.lu_factor(x, check_finite=False)), (a, 2))
    piv = np.asarray(piv, dtype=np.int32)
    return np.asarray(lu), piv, _pivots_to_perm(piv, m)


def _lu_abstract_eval(a):
    if a.ndim < 2:
        raise ValueError(f"lu: argument a must be a matrix or a stack of matrices, got shape "
                         f"{a.shape}")
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    return [ShapedArray(a.shape, a.dtype), ShapedArray(batch + (min(m, n),), np.dtype(np.int32)),
            ShapedArray(batch + (m,), np.dtype(np.int32))]


lu_p = Primitive("lu", multiple_results=True)
lu_p.impl = _lu_impl
lu_p.abstract_eval = _lu_abstract_eval
primitive_batchers[lu_p] = _front_batch(lu_p)


def _permute_rows(x, perm):
    """``x[..., perm, :]`` for a (stacked) integer permutation ``perm``."""
    idx = S.broadcast_to(_col(perm), _shape(x))
    return take_along_axis(x, idx, len(_shape(x)) - 2)


def _lu_parts(lu):
    """Square ``l`` (m, m) with unit diagonal and ``u`` (n, n) from packed factors."""
    shape = _shape(lu)
    m, n = shape[-2:]
    k = min(m, n)
    batch = shape[:-2]
    dtype = core.get_aval(lu).dtype
    l = _tril(_cols(lu, 0, k) if k < n else lu, -1)
    if m > k:
        l = _concat([l, np.zeros(batch + (m, m - k), dtype)], -1)
    l = E.add(l, _eye(m, dtype))
    u = _triu(_rows(lu, 0, k) if k < m else lu)
    if n > k:
        u = _concat([u, np.zeros(batch + (n - k, n), dtype)], -2)
        u = E.add(u, np.diag(np.r_[np.zeros(k), np.ones(n - k)]).astype(dtype))
    return l, u


def _lu_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    lu, piv, perm = lu_p.bind(a)
    l, u = _lu_parts(lu)
    x = _permute_rows(da, perm)
    la = triangular_solve(l, x, lower=True, trans=0, unit_diagonal=True)
    lau = _mT(triangular_solve(u, _mT(la), lower=False, trans=1, unit_diagonal=False))
    lu_dot = E.add(_mm(l, _tril(lau, -1)), _mm(_triu(lau), u))
    return [lu, piv, perm], [lu_dot, Zero.from_primal(piv), Zero.from_primal(perm)]


primitive_jvps[lu_p] = _lu_jvp


# -- pivots -> permutation (integer valued) ----------------------------------

lu_pivots_to_permutation_p = Primitive("lu_pivots_to_permutation")


def _p2p_impl(piv, permutation_size, inverse):
    perm = _pivots_to_perm(piv, permutation_size)
    if inverse:
        perm = np.argsort(perm, axis=-1).astype(np.int32)
    return perm


lu_pivots_to_permutation_p.impl = _p2p_impl
lu_pivots_to_permutation_p.abstract_eval = lambda piv, permutation_size, inverse: ShapedArray(
    piv.shape[:-1] + (permutation_size,), np.dtype(np.int32))
defjvp_zero(lu_pivots_to_permutation_p)
primitive_batchers[lu_pivots_to_permutation_p] = lambda args, dims, **params: (
    lu_pivots_to_permutation_p.bind(move_to_front(args[0], dims[0]), **params), 0)


def lu_pivots_to_permutation(piv, permutation_size, inverse=False):
    return lu_pivots_to_permutation_p.bind(piv, permutation_size=int(permutation_size),
                                           inverse=bool(inverse))


# ---------------------------------------------------------------------------
# triangular_solve: op(a) x = b, op = identity (trans=0) or transpose (trans=1)


def _tri_impl(a, b, lower, trans, unit_diagonal):
    if np.asarray(b).size == 0:
        return np.zeros(np.shape(b), np.result_type(a, b))
    return np.asarray(_per_matrix(
        lambda a, b: _tri_solve(a, b, lower, trans, unit_diagonal), (a, 2), (b, 2)))


def _tri_solve(a, b, lower, trans, unit_diagonal):
    try:
        return _sla.solve_triangular(a, b, trans=trans, lower=lower,
                                     unit_diagonal=unit_diagonal, check_finite=False)
    except np.linalg.LinAlgError:
        # a zero on the diagonal: BLAS's trsm divides by it (inf and nan), as JAX's; LAPACK's
        # trtrs (SciPy) refuses
        trsm = _sla.blas.get_blas_funcs("trsm", (a, b))
        with np.errstate(divide="ignore", invalid="ignore"):
            return trsm(1.0, a, b.reshape(b.shape[0], -1), lower=lower, trans_a=trans,
                        diag=unit_diagonal).reshape(b.shape)


def _tri_abstract_eval(a, b, lower, trans, unit_diagonal):
    return _rhs_aval("solve_triangular", a, b)


triangular_solve_p = Primitive("triangular_solve")
triangular_solve_p.impl = _tri_impl
triangular_solve_p.abstract_eval = _tri_abstract_eval
primitive_batchers[triangular_solve_p] = _rhs_batch(triangular_solve_p)


def triangular_solve(a, b, lower, trans=0, unit_diagonal=False):
    return triangular_solve_p.bind(a, b, lower=bool(lower), trans=int(trans),
                                   unit_diagonal=bool(unit_diagonal))


def _tri_jvp(primals, tangents, lower, trans, unit_diagonal):
    a, b = primals
    da, db = tangents
    params = dict(lower=lower, trans=trans, unit_diagonal=unit_diagonal)
    x = triangular_solve_p.bind(a, b, **params)
    t = Zero.from_primal(x)
    if _nz(db):
        t = triangular_solve_p.bind(a, db, **params)
    if _nz(da):
        k = (-1 if unit_diagonal else 0) if lower else (1 if unit_diagonal else 0)
        dam = _tril(da, k) if lower else _triu(da, k)
        if trans:   # (op(da): its transpose, or with trans=2 its conjugate transpose)
            dam = _mH(dam) if trans == 2 else _mT(dam)
        t = add_tangents(t, E.neg(triangular_solve_p.bind(a, _mm(dam, x), **params)))
    return x, t


def _tri_transpose(ct, a, b, lower, trans, unit_diagonal):
    if is_undefined(a):
        raise TypeError("solve_triangular: not linear in the matrix a")
    if type(ct) is Zero:
        return None, None
    if trans == 2 and _is_complex(a):
        # x = (a^H)^-1 b is linear in b with transpose conj(a)^-1 = conj(a^-1 conj(.)),
        # not a^-1 (the transposed map of a real a's trans=2, which is its trans=1)
        return None, E.conj(triangular_solve_p.bind(a, E.conj(ct), lower=lower, trans=0,
                                                    unit_diagonal=unit_diagonal))
    return None, triangular_solve_p.bind(a, ct, lower=lower, trans=1 - trans if trans < 2 else 0,
                                         unit_diagonal=unit_diagonal)


primitive_jvps[triangular_solve_p] = _tri_jvp
primitive_transposes[triangular_solve_p] = _tri_transpose


# ---------------------------------------------------------------------------
# lu_solve: A x = b (trans=0) or A^T x = b (trans=1) from the LU factors of A


def _lu_solve_impl(lu, piv, b, trans):
    if np.asarray(b).size == 0:
        return np.zeros(np.shape(b), np.result_type(lu, b))
    return np.asarray(_per_matrix(
        lambda lu, piv, b: _sla.lu_solve((lu, piv), b, trans=trans, check_finite=False),
        (lu, 2), (piv, 1), (b, 2)))


def _lu_solve_abstract_eval(lu, piv, b, trans):
    out = _rhs_aval("lu_solve", lu, b)
    if piv.shape != lu.shape[:-1]:
        raise ValueError(f"lu_solve: pivots of shape {piv.shape} do not match lu of shape "
                         f"{lu.shape}")
    return out


lu_solve_p = Primitive("lu_solve")
lu_solve_p.impl = _lu_solve_impl
lu_solve_p.abstract_eval = _lu_solve_abstract_eval
primitive_batchers[lu_solve_p] = _rhs_batch(lu_solve_p)


def lu_solve(lu, piv, b, trans=0):
    return lu_solve_p.bind(lu, piv, b, trans=int(trans))


def _lu_solve_jvp(primals, tangents, trans):
    lu, piv, b = primals
    dlu, _, db = tangents
    x = lu_solve_p.bind(lu, piv, b, trans=trans)
    t = Zero.from_primal(x)
    if _nz(db):
        t = lu_solve_p.bind(lu, piv, db, trans=trans)
    if _nz(dlu):
        dl, du = _tril(dlu, -1), _triu(dlu)
        if trans == 0:
            # dx = -U^-1 (L^-1 dL U x + dU x)
            w = triangular_solve(lu, _mm(dl, _mm(_triu(lu), x)), lower=True, unit_diagonal=True)
            w = E.add(w, _mm(du, x))
            dx = triangular_solve(lu, w, lower=False)
        else:
            # dx = -P^T L^-T (dL^T P x + U^-T dU^T L^T P x)
            n = _shape(lu)[-1]
            px = _permute_rows(x, lu_pivots_to_permutation(piv, n))
            lt_px = _mm(_mT(E.add(_tril(lu, -1), _eye(n, core.get_aval(lu).dtype))), px)
            y = E.add(_mm(_mT(dl), px),
                      triangular_solve(lu, _mm(_mT(du), lt_px), lower=False, trans=1))
            z = triangular_solve(lu, y, lower=True, trans=1, unit_diagonal=True)
            dx = _permute_rows(z, lu_pivots_to_permutation(piv, n, inverse=True))
        t = add_tangents(t, E.neg(dx))
    return x, t


def _lu_solve_transpose(ct, lu, piv, b, trans):
    if is_undefined(lu) or is_undefined(piv):
        raise TypeError("lu_solve: not linear in the factors")
    if type(ct) is Zero:
        return None, None, None
    # The transposed system, solved with the same factors (no refactorization).
    return None, None, lu_solve_p.bind(lu, piv, ct, trans=1 - trans if trans < 2 else 0)


primitive_jvps[lu_solve_p] = _lu_solve_jvp
primitive_transposes[lu_solve_p] = _lu_solve_transpose


# ---------------------------------------------------------------------------
# solve: a x = b.  Undifferentiated: one LAPACK gesv.  Differentiated: the
# rule factors once and reuses the factors for the primal and the tangent.


def _solve_impl(a, b):
    if np.asarray(b).size == 0:
        return np.zeros(np.shape(b), np.result_type(a, b))
    try:
        return np.asarray(np.linalg.solve(a, b))
    except np.linalg.LinAlgError:
        return _solve_singular(a, b)


def _solve_singular(a, b):
    """``solve`` for a singular ``a`` as JAX's: LAPACK's LU factors with a zero pivot and
    the triangular solves through it (inf and nan), where NumPy raises LinAlgError (under
    vmap, one singular matrix failed the whole batch)."""
    lu, piv, _ = core.eval_primitive(lu_p, (a,), {})
    with np.errstate(divide="ignore", invalid="ignore"):
        return core.eval_primitive(lu_solve_p, (lu, piv, b), {"trans": 0})


solve_p = Primitive("solve")
solve_p.impl = _solve_impl
solve_p.abstract_eval = lambda a, b: _rhs_aval("solve", a, b)
primitive_batchers[solve_p] = _rhs_batch(solve_p)


def _solve_jvp(primals, tangents):
    a, b = primals
    da, db = tangents
    lu, piv, _ = lu_p.bind(a)
    x = lu_solve_p.bind(lu, piv, b, trans=0)
    rhs = db if _nz(db) else None
    if _nz(da):
        ax = _mm(da, x)
        rhs = E.neg(ax) if rhs is None else E.sub(rhs, ax)
    if rhs is None:
        return x, Zero.from_primal(x)
    return x, lu_solve_p.bind(lu, piv, rhs, trans=0)


def _solve_transpose(ct, a, b):
    if is_undefined(a):
        raise TypeError("solve: not linear in the matrix a")
    if type(ct) is Zero:
        return None, None
    return None, solve_p.bind(_mT(a), ct)


primitive_jvps[solve_p] = _solve_jvp
primitive_transposes[solve_p] = _solve_transpose


# ---------------------------------------------------------------------------
# inv


inv_p = Primitive("inv")


def _inv_impl(a):
    try:
        return np.asarray(np.linalg.inv(a))
    except np.linalg.LinAlgError:  # singular: inf and nan, as JAX's (see _solve_singular)
        a = np.asarray(a)
        return _solve_singular(a, np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape))


inv_p.impl = _inv_impl


def _inv_abstract_eval(a):
    _square("inv", a)
    return ShapedArray(a.shape, a.dtype)


inv_p.abstract_eval = _inv_abstract_eval
primitive_batchers[inv_p] = _front_batch(inv_p)


def _inv_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    ainv = inv_p.bind(a)
    return ainv, E.neg(_mm(_mm(ainv, da), ainv))


primitive_jvps[inv_p] = _inv_jvp


# ---------------------------------------------------------------------------
# det and slogdet (their rules take the primal from the LU factors they need)


def _lu_sign_and_diag(lu, piv):
    d = _diag(lu)
    n = _shape(piv)[-1]
    moved = S.convert_element_type(E.ne(piv, np.arange(n, dtype=np.int32)), np.int64)
    odd = E.remainder(_sum_axis(moved, -1), 2)
    parity = E.sub(1.0, E.mul(2.0, S.convert_element_type(odd, core.get_aval(lu).dtype)))
    return parity, d


def _trace_inv_times(lu, piv, da):
    return _sum_axis(_diag(lu_solve_p.bind(lu, piv, da, trans=0)), -1)


def _nan_where_nan(a, out):
    """``out`` made NaN for each matrix of ``a`` that holds a NaN, as JAX's (whose values come
    from the LU factors' diagonal).  LAPACK's getrf can leave a zero pivot after a NaN one
    and report the matrix singular, so NumPy's det gave 0 and slogdet (0, -inf) for
    ``[[nan, 1], [1, 1]]``: a finite number from a NaN input."""
    bad = np.isnan(a).any(axis=(-2, -1))
    return _as_out(np.where(bad, out * np.nan, out)) if bad.any() else _as_out(out)


det_p = Primitive("det")
det_p.impl = lambda a: _nan_where_nan(a, np.linalg.det(a))


def _det_abstract_eval(a):
    _square("det", a)
    return ShapedArray(a.shape[:-2], a.dtype)


det_p.abstract_eval = _det_abstract_eval
primitive_batchers[det_p] = _front_batch(det_p)


def _adjugate_t(lu, piv, parity, d):
    """The transposed adjugate ``adj(a)^T`` (``det(a) a^-T`` where ``a`` is invertible) from the
    LU factors ``a = P L U``, exact for singular ``a`` too (``det(a) a^-T`` is 0 * inf there:
    ``det``'s derivative was NaN at ``[[1, 2], [2, 4]]``, whose true one is ``[[4, -2], [-2, 1]]``).

    With ``S`` the positions of the zero pivots (``m`` of them), ``U~`` = ``U`` with those pivots
    replaced by 1 and ``V = U~^-1``: ``adj(U) = det(U~) V`` if ``m = 0``, otherwise
    ``det(U~) pi (V e_f)(e_l^T V)`` with ``f``/``l`` the first/last position in ``S`` and ``pi``
    the product of ``V[s_i, s_(i+1)]`` over consecutive positions of ``S`` (1 if ``m = 1``):
    the first-order term of ``det(U~ (I - V Z + eps V dU))``, ``Z`` the projector onto ``S``,
    whose ``S x S`` block is strictly triangular.  Then ``adj(a) = parity adj(U) L^-1 P^T``,
    so ``adj(a)^T = parity det(U~) A~^-T (I or pi e_l (V e_f)^T)`` with ``A~ = P L U~``.
    """
    n = _shape(lu)[-1]
    dtype = core.get_aval(lu).dtype
    zero = E.eq(d, _zero_like(d))
    zf = S.convert_element_type(zero, dtype)
    lu_t = E.add(lu, E.mul(_col(zf), _eye(n, dtype)))          # A~'s packed factors
    det_t = R.reduce_prod(E.select(zero, np.ones((), dtype), d), (len(_shape(d)) - 1,))
    v = triangular_solve(_triu(lu_t), S.broadcast_to(_eye(n, dtype), _shape(lu)), lower=False)
    count = C.dot_general(zf, np.triu(np.ones((n, n), dtype)),
                          (((len(_shape(zf)) - 1,), (0,)), ((), ())))  # inclusive cumsum
    m = _sum_axis(zf, -1)
    first = E.mul(zf, S.convert_element_type(E.eq(count, np.ones((), dtype)), dtype))
    last = E.mul(zf, S.convert_element_type(E.eq(count, _col(m)), dtype))
    # consecutive zero pivots (i < j): both zero, count[j] - count[i] == 1
    pair = E.mul(E.mul(_col(zf), _row(zf)),
                 S.convert_element_type(E.eq(E.sub(_row(count), _col(count)),
                                             np.ones((), dtype)), dtype))
    pair = E.mul(pair, np.triu(np.ones((n, n), dtype), 1))
    pi = R.reduce_prod(E.select(E.ne(pair, _zero_like(pair)), v, np.ones((), dtype)),
                       (len(_shape(v)) - 2, len(_shape(v)) - 1))
    vf = _sum_axis(E.mul(v, _row(first)), -1)                      # V e_f
    rank1 = E.mul(E.mul(_col(last), _row(vf)), _col(_col(pi)))
    rhs = E.select(_col(_col(E.eq(m, _zero_like(m)))), _eye(n, dtype), rank1)
    scale = E.mul(parity, det_t)
    w = lu_solve_p.bind(lu_t, piv, rhs, trans=1)
    out = E.mul(_col(_col(scale)), w)
    if dtype.kind != "f":
        return out
    # Where det(U~) overflows (or underflows), ``scale * w`` is inf * 0 = NaN (or 0) where the
    # adjugate is 0 (or finite): 1e200 * I had NaN off the diagonal (JAX: 0), and 2x2's inf on
    # it (JAX: 1e200).  There the product is formed from mantissas and exponents instead.
    tiny = np.asarray(np.finfo(dtype).tiny, dtype)
    if not isinstance(scale, Tracer):      # (known values: eager differentiation)
        with np.errstate(invalid="ignore"):
            if np.all(np.isfinite(scale) & (np.abs(scale) > tiny)):
                return out
    normal = E.and_p.bind(E.isfinite_p.bind(scale), E.gt(E.abs(scale), tiny))
    pivots = E.select(zero, np.ones((), dtype), d)
    return E.select(_col(_col(normal)), out, _scaled_product(parity, pivots, w))


def _scaled_product(parity, pivots, w):
    """``parity * prod(pivots) * w`` (the product over the last axis of ``pivots``, none of them
    0) with one rounding to inf or 0 where it leaves the range, not at ``prod(pivots)``: the
    exponents summed as integers, the mantissas multiplied (>= 2**-n, renormalized), and each
    entry of ``w`` exactly 0 where ``w`` is (not inf * 0)."""
    dtype = core.get_aval(w).dtype
    ax = (len(_shape(pivots)) - 1,)
    m = R.reduce_prod(M.frexp_mantissa_p.bind(pivots), ax)
    e = R.reduce_sum(S.convert_element_type(M.frexp_exponent_p.bind(pivots), np.int64), ax)
    e = E.add(e, S.convert_element_type(M.frexp_exponent_p.bind(m), np.int64))
    m = E.mul(parity, M.frexp_mantissa_p.bind(m))
    f = E.add(_col(_col(e)), S.convert_element_type(M.frexp_exponent_p.bind(w), np.int64))
    # |m * mantissa(w)| * 4 is in [1, 4): 2**(f - 2) is exact, inf only where the product is
    mag = E.mul(E.mul(_col(_col(m)), M.frexp_mantissa_p.bind(w)), np.asarray(4.0, dtype))
    p2 = E.power(np.asarray(2.0, dtype), S.convert_element_type(E.sub(f, np.int64(2)), dtype))
    return E.select(E.eq(w, _zero_like(w)), _zero_like(w), E.mul(mag, p2))


def _det_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    lu, piv, _ = lu_p.bind(a)
    parity, d = _lu_sign_and_diag(lu, piv)
    ans = E.mul(parity, R.reduce_prod(d, (len(_shape(d)) - 1,)))
    if _shape(a)[-1] == 0:
        return ans, Zero.from_primal(ans)
    adj_t = _adjugate_t(lu, piv, parity, d)
    nd = len(_shape(a))
    return ans, R.reduce_sum(E.mul(adj_t, da), (nd - 2, nd - 1))


primitive_jvps[det_p] = _det_jvp

slogdet_p = Primitive("slogdet", multiple_results=True)
slogdet_p.impl = lambda a: [_nan_where_nan(a, v) for v in np.linalg.slogdet(a)]


def _slogdet_abstract_eval(a):
    _square("slogdet", a)
    real = np.finfo(a.dtype).dtype if a.dtype.kind in "fc" else a.dtype
    return [ShapedArray(a.shape[:-2], a.dtype), ShapedArray(a.shape[:-2], real)]


slogdet_p.abstract_eval = _slogdet_abstract_eval
primitive_batchers[slogdet_p] = _front_batch(slogdet_p)


def _slogdet_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    lu, piv, _ = lu_p.bind(a)
    parity, d = _lu_sign_and_diag(lu, piv)
    sign = E.mul(parity, R.reduce_prod(E.sign(d), (len(_shape(d)) - 1,)))
    logabsdet = _sum_axis(E.log(E.abs(d)), -1)
    tr = _trace_inv_times(lu, piv, da)
    if not _is_complex(a):
        return [sign, logabsdet], [Zero.from_primal(sign), tr]
    # JAX's rule: d log|det| = Re tr(a^-1 da), d sign = i Im tr(a^-1 da) sign.
    re = E.real(tr)
    return [sign, logabsdet], [E.mul(E.sub(tr, re), sign), re]


primitive_jvps[slogdet_p] = _slogdet_jvp


# ---------------------------------------------------------------------------
# cholesky: lower factor, reading the lower triangle only (as LAPACK/NumPy)


cholesky_p = Primitive("cholesky")


def _cholesky_impl(a):
    try:
        return np.asarray(np.linalg.cholesky(a))
    except np.linalg.LinAlgError:  # per matrix: a failed factorization is NaN, as JAX's
        return _per_matrix(_cholesky_or_nan, (a, 2))


def _cholesky_or_nan(m):
    """The lower factor of ``m``, or JAX's result where ``m`` is not positive definite:
    NaN in the lower triangle, zeros above (NumPy raises LinAlgError, so code testing the
    factor for NaN, as Gaussian-process code does, stopped)."""
    try:
        return np.linalg.cholesky(m)
    except np.linalg.LinAlgError:
        return np.where(np.tri(m.shape[-1], dtype=bool), np.nan, 0).astype(m.dtype)


cholesky_p.impl = _cholesky_impl


def _cholesky_abstract_eval(a):
    _square("cholesky", a)
    return ShapedArray(a.shape, a.dtype)


cholesky_p.abstract_eval = _cholesky_abstract_eval
primitive_batchers[cholesky_p] = _front_batch(cholesky_p)


def _cholesky_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    L = cholesky_p.bind(a)
    dA = _sym_from_triangle(da, lower=True)
    X = triangular_solve(L, dA, lower=True)                 # L^-1 dA
    Y = _mH(triangular_solve(L, _mH(X), lower=True))        # L^-1 dA L^-H
    n = _shape(a)[-1]
    phi = E.add(_tril(Y, -1), E.mul(0.5, E.mul(Y, _eye(n, core.get_aval(a).dtype))))
    return L, _mm(L, phi)


primitive_jvps[cholesky_p] = _cholesky_jvp


# ---------------------------------------------------------------------------
# eigh / eigvalsh (symmetric), reading one triangle


eigh_p = Primitive("eigh", multiple_results=True)


def _eigh_impl(a, lower):
    try:
        w, v = np.linalg.eigh(a, UPLO="L" if lower else "U")
    except np.linalg.LinAlgError:  # no convergence (NaN or inf entries): NaN, as JAX's
        w, v = _per_matrix(lambda m: _eigh_or_nan(m, lower), (a, 2))
    return [np.asarray(w), np.asarray(v)]


def _eigh_or_nan(m, lower):
    """The eigendecomposition of one matrix, or NaN eigenvalues and eigenvectors where
    LAPACK does not converge (JAX's eigenvalues there are NaN; NumPy raised LinAlgError,
    eagerly and inside a compiled program)."""
    try:
        return np.linalg.eigh(m, UPLO="L" if lower else "U")
    except np.linalg.LinAlgError:
        real = np.finfo(m.dtype).dtype
        return np.full(m.shape[:-1], np.nan, real), np.full(m.shape, np.nan, m.dtype)


def _eigh_abstract_eval(a, lower):
    _square("eigh", a)
    real = np.finfo(a.dtype).dtype if a.dtype.kind in "fc" else a.dtype
    return [ShapedArray(a.shape[:-1], real), ShapedArray(a.shape, a.dtype)]


eigh_p.impl = _eigh_impl
eigh_p.abstract_eval = _eigh_abstract_eval
primitive_batchers[eigh_p] = _front_batch(eigh_p)


def _eigh_jvp(primals, tangents, lower):
    (a,), (da,) = primals, tangents
    w, v = eigh_p.bind(a, lower=lower)
    dA = _sym_from_triangle(da, lower)
    vt_da_v = _mm(_mH(v), _mm(dA, v))
    n = _shape(a)[-1]
    eye = _eye(n, core.get_aval(a).dtype)
    gaps = E.sub(_row(w), _col(w))       # [i, j] = w_j - w_i
    F = E.sub(E.div(1.0, E.add(gaps, eye)), eye)
    dw = _real_part(_diag(vt_da_v))
    dv = _mm(v, E.mul(F, vt_da_v))
    return [w, v], [dw, dv]


primitive_jvps[eigh_p] = _eigh_jvp

eigvalsh_p = Primitive("eigvalsh")


def _eigvalsh_impl(a, lower):
    try:
        return np.asarray(np.linalg.eigvalsh(a, UPLO="L" if lower else "U"))
    except np.linalg.LinAlgError:  # no convergence (NaN or inf entries): NaN, as JAX's
        return np.asarray(_per_matrix(lambda m: _eigh_or_nan(m, lower)[0], (a, 2)))


eigvalsh_p.impl = _eigvalsh_impl
eigvalsh_p.abstract_eval = lambda a, lower: _eigh_abstract_eval(a, lower)[0]
primitive_batchers[eigvalsh_p] = _front_batch(eigvalsh_p)


def _eigvalsh_jvp(primals, tangents, lower):
    # The derivative needs the eigenvectors: the primal computes them (eigh).
    (a,), (da,) = primals, tangents
    w, v = eigh_p.bind(a, lower=lower)
    dA = _sym_from_triangle(da, lower)
    return w, _real_part(_sum_axis(E.mul(E.conj(v), _mm(dA, v)), -2))


primitive_jvps[eigvalsh_p] = _eigvalsh_jvp


# ---------------------------------------------------------------------------
# qr


qr_p = Primitive("qr", multiple_results=True)


def _qr_impl(a, full_matrices):
    q, r = np.linalg.qr(a, mode="complete" if full_matrices else "reduced")
    return [np.asarray(q), np.asarray(r)]


def _qr_abstract_eval(a, full_matrices):
    if a.ndim < 2:
        raise ValueError(f"qr: argument a must be a matrix or a stack of matrices, got shape "
                         f"{a.shape}")
    m, n = a.shape[-2:]
    k = m if full_matrices else min(m, n)
    batch = a.shape[:-2]
    return [ShapedArray(batch + (m, k), a.dtype), ShapedArray(batch + (k, n), a.dtype)]


qr_p.impl = _qr_impl
qr_p.abstract_eval = _qr_abstract_eval
primitive_batchers[qr_p] = _front_batch(qr_p)


def _qr_square_tangents(q, r, dx):
    """(dq, dr) for ``x = q r`` with ``r`` square (m >= n, reduced)."""
    dx_rinv = _mT(triangular_solve(r, _mT(dx), lower=False, trans=1))    # dx r^-1
    qt_dx_rinv = _mm(_mH(q), dx_rinv)
    low = _tril(qt_dx_rinv, -1)
    do = E.sub(low, _mH(low))
    if _is_complex(q):  # JAX's correction for complex inputs: i Im(diag(q^H dx r^-1))
        do = E.add(do, _diag_matrix(E.sub(qt_dx_rinv, E.real(qt_dx_rinv))))
    dq = E.add(_mm(q, E.sub(do, qt_dx_rinv)), dx_rinv)
    dr = _mm(E.sub(qt_dx_rinv, do), r)
    return dq, dr


def _qr_jvp(primals, tangents, full_matrices):
    (a,), (da,) = primals, tangents
    q, r = qr_p.bind(a, full_matrices=full_matrices)
    m, n = _shape(a)[-2:]
    if m >= n:
        if full_matrices and m > n:
            raise NotImplementedError(
                "qr: the derivative of the complete ('full_matrices') QR decomposition of a tall "
                f"matrix (shape {_shape(a)}) is not defined (the extra columns of q are not "
                "unique); use mode='reduced'")
        dq, dr = _qr_square_tangents(q, r, da)
        return [q, r], [dq, dr]
    # Wide: a = [x | y], q r_x = x, r_y = q^T y.
    dq, drx = _qr_square_tangents(q, _cols(r, 0, m), _cols(da, 0, m))
    y = _cols(a, m, n)
    dry = E.add(_mm(_mH(dq), y), _mm(_mH(q), _cols(da, m, n)))
    return [q, r], [dq, _concat([drx, dry], -1)]


primitive_jvps[qr_p] = _qr_jvp


# ---------------------------------------------------------------------------
# svd: outputs (u, s, vt) or (s,) when compute_uv is False


svd_p = Primitive("svd", multiple_results=True)


def _svd_impl(a, full_matrices, compute_uv):
    try:
        if compute_uv:
            u, s, vt = np.linalg.svd(a, full_matrices=full_matrices, compute_uv=True)
            return [np.asarray(u), np.asarray(s), np.asarray(vt)]
        return [np.asarray(np.linalg.svd(a, compute_uv=False))]
    except np.linalg.LinAlgError:  # no convergence (NaN or inf entries): NaN, as JAX's
        a = np.asarray(a)
        if a.ndim > 2:  # per matrix: the others keep their values
            return list(_per_matrix(lambda m: tuple(_svd_impl(m, full_matrices, compute_uv)),
                                    (a, 2)))
        avals = _svd_abstract_eval(core.get_aval(a), full_matrices, compute_uv)
        return [np.full(v.shape, np.nan, v.dtype) for v in avals]


def _svd_abstract_eval(a, full_matrices, compute_uv):
    if a.ndim < 2:
        raise ValueError(f"svd: argument a must be a matrix or a stack of matrices, got shape "
                         f"{a.shape}")
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    real = np.finfo(a.dtype).dtype if a.dtype.kind in "fc" else a.dtype
    s = ShapedArray(batch + (k,), real)
    if not compute_uv:
        return [s]
    ku, kv = (m, n) if full_matrices else (k, k)
    return [ShapedArray(batch + (m, ku), a.dtype), s, ShapedArray(batch + (kv, n), a.dtype)]


svd_p.impl = _svd_impl
svd_p.abstract_eval = _svd_abstract_eval
primitive_batchers[svd_p] = _front_batch(svd_p)


def _svd_jvp(primals, tangents, full_matrices, compute_uv):
    (a,), (da,) = primals, tangents
    m, n = _shape(a)[-2:]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(
            "svd: the derivative with full_matrices=True is only defined for square matrices "
            f"(got shape {_shape(a)}); use full_matrices=False")
    # The rule needs the singular vectors, so the primal computes them.
    U, s, Vt = svd_p.bind(a, full_matrices=False, compute_uv=True)
    V = _mH(Vt)
    dS = _mm(_mH(U), _mm(da, V))
    ds = _real_part(_diag(dS))
    if not compute_uv:
        return [s], [ds]
    k = min(m, n)
    eye = _eye(k, core.get_aval(a).dtype)
    s_row = _row(s)       # [i, j] = s_j
    s_col = _col(s)       # [i, j] = s_i
    F = E.sub(E.div(1.0, E.add(E.mul(E.add(s_row, s_col), E.sub(s_row, s_col)), eye)), eye)
    dSS = E.mul(s_row, dS)
    SdS = E.mul(s_col, dS)
    dU = E.mul(F, E.add(dSS, _mH(dSS)))
    if _is_complex(a):  # JAX's term for complex inputs: i Im(diag(dS)) / s
        s_inv = E.div(1.0, E.select(E.eq(s, 0), 1.0, s))
        dU = E.add(dU, _diag_matrix(E.mul(E.sub(dS, _mH(dS)), E.mul(0.5, _row(s_inv)))))
    dU = _mm(U, dU)
    dV = _mm(V, E.mul(F, E.add(SdS, _mH(SdS))))
    if m > n:
        dAV = _mm(da, V)
        dU = E.add(dU, E.div(E.sub(dAV, _mm(U, _mm(_mH(U), dAV))), s_row))
    if n > m:
        dAtU = _mm(_mH(da), U)
        dV = E.add(dV, E.div(E.sub(dAtU, _mm(V, _mm(Vt, dAtU))), s_row))
    return [U, s, Vt], [dU, ds, _mH(dV)]


primitive_jvps[svd_p] = _svd_jvp


# ---------------------------------------------------------------------------
# expm and its Fréchet derivative


def _expm_impl(a):
    return np.asarray(_sla.expm(a))


expm_p = Primitive("expm")
expm_p.impl = _expm_impl


def _expm_abstract_eval(a):
    _square("expm", a, "A")
    return ShapedArray(a.shape, a.dtype)


expm_p.abstract_eval = _expm_abstract_eval
primitive_batchers[expm_p] = _front_batch(expm_p)


def _frechet_impl(a, e):
    # SciPy computes a float32 pair in float64: the result keeps the arguments' dtype
    return np.asarray(_per_matrix(
        lambda a, e: _sla.expm_frechet(a, e, compute_expm=False, check_finite=False),
        (a, 2), (e, 2))).astype(np.result_type(a, e), copy=False)


def _frechet_abstract_eval(a, e):
    _square("expm_frechet", a, "A")
    if e.shape != a.shape:
        raise ValueError(f"expm_frechet: argument E of shape {e.shape} does not match argument A "
                         f"of shape {a.shape}")
    return ShapedArray(a.shape, np.result_type(a.dtype, e.dtype))


expm_frechet_p = Primitive("expm_frechet")
expm_frechet_p.impl = _frechet_impl
expm_frechet_p.abstract_eval = _frechet_abstract_eval
primitive_batchers[expm_frechet_p] = _front_batch(expm_frechet_p)


def _both_concrete(*xs):
    return all(type(x) is np.ndarray or not isinstance(x, Tracer) for x in xs)


def _expm_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    if _both_concrete(a, da) and np.ndim(a) == 2:
        # Forward mode on concrete values: one SciPy call gives both.
        ans, t = _sla.expm_frechet(np.asarray(a), np.asarray(da), compute_expm=True,
                                   check_finite=False)
        dt = np.result_type(a, da)   # SciPy's is float64 for float32 matrices
        return np.asarray(ans).astype(np.asarray(a).dtype, copy=False), np.asarray(t).astype(
            dt, copy=False)
    return expm_p.bind(a), expm_frechet_p.bind(a, da)


def _block_2x2(tl, tr, bl, br):
    return _concat([_concat([tl, tr], -1), _concat([bl, br], -1)], -2)


def _frechet_jvp(primals, tangents):
    # L(a, e) is the top-right block of expm([[a, e], [0, a]]); differentiate that.
    a, e = primals
    da, de = tangents
    ans = expm_frechet_p.bind(a, e)
    n = _shape(a)[-1]
    dtype = core.get_aval(ans).dtype
    zeros = np.zeros(_shape(a), dtype)
    da = zeros if not _nz(da) else da
    de = zeros if not _nz(de) else de
    M = _block_2x2(a, e, zeros, a)
    D = _block_2x2(da, de, zeros, da)
    t = _cols(_rows(expm_frechet_p.bind(M, D), 0, n), n, 2 * n)
    return ans, t


def _frechet_transpose(ct, a, e):
    if is_undefined(a):
        raise TypeError("expm_frechet: not linear in A")
    if type(ct) is Zero:
        return None, None
    return None, expm_frechet_p.bind(_mT(a), ct)


primitive_jvps[expm_p] = _expm_jvp
primitive_jvps[expm_frechet_p] = _frechet_jvp
primitive_transposes[expm_frechet_p] = _frechet_transpose
