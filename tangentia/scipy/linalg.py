"""Linear algebra (``tangentia.scipy.linalg``), with SciPy's names and semantics.

All functions accept stacks of matrices (leading batch dimensions) and work
under ``grad``, ``jvp``, ``vmap`` and ``jit``.  ``overwrite_*`` and
``check_finite`` arguments are accepted for compatibility and ignored.

Special matrices: those built from arrays (``toeplitz``, ``hankel``,
``circulant``, ``companion``, ``fiedler``, ``fiedler_companion``, ``leslie``,
``block_diag``, ``convolution_matrix``) gather their entries with static
indices, so they are differentiable; those given by a size (``dft``,
``hadamard``, ``hilbert``, ``invhilbert``, ``pascal``, ``invpascal``,
``helmert``) are SciPy's constants.  ``hessenberg``, ``funm`` and
``rsf2csf`` run SciPy through ``pure_callback`` (not differentiable).
"""
from __future__ import annotations

import numpy as _np

import tangentia.numpy as _tnp

from .. import core as _core
from ..numpy import linalg as _NL
from ..numpy.linalg import LinAlgError, _check_matrix, _check_square, _inexact, _solve_with
from ..primitives import linalg as _L
from ..primitives.callback import pure_callback as _pure_callback
from ..primitives._lazy import LazyModule as _LazyModule

_sla = _LazyModule("scipy.linalg", globals(), "_sla")  # (imported at its first use)

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Callable
    from ..typing import Array, ArrayLike, DTypeLike

__all__ = ["LinAlgError", "cho_factor", "cho_solve", "cholesky", "det", "eigh", "eigvalsh",
           "expm", "expm_frechet", "inv", "lu", "lu_factor", "lu_solve", "norm", "polar", "qr",
           "logm", "schur", "solve", "sqrtm", "solve_banded", "solve_sylvester", "solve_triangular", "svd",
           "svdvals", "block_diag", "toeplitz", "hankel", "circulant", "companion",
           "convolution_matrix", "dft", "hadamard", "hilbert", "invhilbert", "pascal", "invpascal",
           "leslie", "helmert", "fiedler", "fiedler_companion", "hessenberg", "eigh_tridiagonal",
           "funm", "qr_multiply", "rsf2csf"]


def _aval(x):
    return _core.get_aval(x)


def _vector_rhs(a, b):
    """JAX's rule for the triangular solves (solve_triangular, lu_solve, cho_solve and
    solve's 'pos'): ``b`` is a vector when it is 1-D (broadcast over ``a``'s batch), or
    when it has one dimension less than ``a`` and its last one is ``a``'s order (the
    batched vectors JAX deprecates but still reads); otherwise (..., n, k) matrices."""
    a_s, b_s = _aval(a).shape, _aval(b).shape
    return len(b_s) == 1 or (len(a_s) == len(b_s) + 1 and a_s[-1] == b_s[-1])


def _trans_code(fname, trans):
    codes = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2, "n": 0, "t": 1, "c": 2}
    try:
        return codes[trans]
    except (KeyError, TypeError):
        raise ValueError(f"{fname}: argument trans must be 0, 1, 2, 'N', 'T' or 'C', "
                         f"got {trans!r}") from None


def _real_trans(trans, x):
    # For real matrices the conjugate transpose is the transpose.
    return 1 if trans == 2 and _aval(x).dtype.kind != "c" else trans


# ---------------------------------------------------------------------------
# Solving


_ASSUME_A = ("gen", "sym", "her", "pos")
_ASSUME_A_SCIPY = {None: "gen", "general": "gen", "symmetric": "sym", "hermitian": "her",
                   "positive definite": "pos"}


def solve(a: ArrayLike, b: ArrayLike, lower: bool = False, overwrite_a: bool = False,
          overwrite_b: bool = False, debug: bool = False, check_finite: bool = True,
          assume_a: str | None = "gen", *, transposed: Any = False) -> Array:
    """Solve ``a @ x = b``, JAX's parameters in JAX's positions (``debug`` before
    ``check_finite``; both unused).  ``assume_a``: 'gen', 'sym' or 'her' (LU of the whole
    matrix, as JAX's) or 'pos' (Cholesky, reading the triangle chosen by ``lower``); SciPy's
    None and long names are read as these.  ``transposed`` (SciPy's, keyword only here)
    solves ``a^T x = b``."""
    kind = _ASSUME_A_SCIPY.get(assume_a, assume_a) if isinstance(assume_a, (str, type(None))) \
        else assume_a
    if kind not in _ASSUME_A:
        raise ValueError(f"Expected assume_a to be one of {list(_ASSUME_A)}; got {assume_a!r}"
                         " (tangentia: scipy.linalg.solve: SciPy's None, 'general', "
                         "'symmetric', 'hermitian' and 'positive definite' are read as these)")
    a, b = _inexact(a, b)
    _check_square("solve", a)
    if transposed:
        a = _tnp.swapaxes(a, -1, -2)
    if kind != "pos":   # JAX's: jnp.linalg.solve's rule (b a vector only when 1-D)
        return _solve_with("solve", lambda m, r: _L.solve_p.bind(m, r), a, b)
    c = _tnp.swapaxes(_L.cholesky_p.bind(_tnp.swapaxes(a, -1, -2)), -1, -2) if not lower \
        else _L.cholesky_p.bind(a)
    return cho_solve((c, lower), b)


def solve_banded(l_and_u: Any, ab: Any, b: ArrayLike, overwrite_ab: Any = False,
                 overwrite_b: Any = False, check_finite: Any = True) -> Any:
    """Solve ``a @ x = b`` for a banded ``a`` given in SciPy's diagonal ordered form:
    ``ab[u + i - j, j] == a[i, j]`` for the ``l`` sub- and ``u`` super-diagonals.

    The band is expanded into the full matrix (a static gather), which is then
    solved: exact, differentiable in ``ab`` and ``b``, and cubic in ``n``.
    """
    try:
        lo, up = (int(v) for v in l_and_u)
    except (TypeError, ValueError):
        raise ValueError(f"solve_banded: argument 'l_and_u' must be a pair of integers (l, u), "
                         f"got {l_and_u!r}") from None
    ab, b = _inexact(ab, b)
    rows, n = _aval(ab).shape[-2:] if _aval(ab).ndim >= 2 else (None, None)
    if _aval(ab).ndim != 2 or rows != lo + up + 1 or lo < 0 or up < 0:
        raise ValueError(f"solve_banded: argument 'ab' must have shape (l + u + 1, n) = "
                         f"({lo + up + 1}, n) for (l, u) = ({lo}, {up}), got {_aval(ab).shape}")
    if _aval(b).shape[:1] != (n,):
        raise ValueError(f"solve_banded: argument 'b' must have {n} rows (the size of the "
                         f"matrix), got shape {_aval(b).shape}")
    i, j = _np.indices((n, n))
    band = (i - j <= lo) & (j - i <= up)
    k = _np.where(band, up + i - j, 0)
    full = _tnp.where(band, ab[k, j], 0.0)
    return solve(full, b)


def _nan_unless_finite(complex_result: bool):
    """SciPy's ``fn(m, *more)`` (an n x n result), or NaN everywhere when an argument holds a
    NaN or an infinity, as JAX's sqrtm and solve_sylvester: SciPy's logm of ``[[1, inf],
    [0, 1]]`` looped for minutes in its norm estimate, its sqrtm of ``[[1, nan], [0, 1]]``
    gave 1 on the diagonal, its solve_sylvester raised (under jvp of sqrtm too)."""
    def wrap(fn):
        def run(m, *more):
            if _np.isfinite(m).all() and all(_np.isfinite(x).all() for x in more):
                return fn(m, *more)
            dt = _np.result_type(m, *more)
            dt = _complex_dtype(dt) if complex_result else dt
            return _np.full(m.shape, complex(_np.nan, _np.nan) if dt.kind == "c" else _np.nan, dt)
        return run
    return wrap


@_nan_unless_finite(complex_result=False)
def _sylvester_callback(a, b, q):
    """SciPy's Bartels-Stewart solve of ``a x + x b = q`` on concrete arrays."""
    import scipy.linalg  # noqa: PLC0415  (only when a solve runs)
    x = scipy.linalg.solve_sylvester(a, b, q)
    return _np.asarray(x, dtype=_np.result_type(a, b, q))


def _sylvester_solve(a, b, q):
    return _callback_of(_sylvester_callback, q, a, b, q)


def solve_sylvester(A: ArrayLike, B: ArrayLike, C: ArrayLike, *, method: str = "schur",
                    tol: float = 1e-8) -> Array:
    """Solve the Sylvester equation ``A @ X + X @ B == C`` for ``X``.

    The solve is SciPy's Bartels-Stewart algorithm (through ``pure_callback``);
    derivatives are implicit (``lax.custom_linear_solve`` of the operator
    ``X -> A X + X B``), so ``X`` is differentiable in ``A``, ``B`` and ``C``
    in forward and reverse mode, and works under ``vmap`` and ``jit``.
    ``method`` ('schur' or 'eigen') and ``tol`` are accepted as in JAX; both
    use the Schur-based solve here.
    """
    from ..lax import custom_linear_solve  # noqa: PLC0415  (lax sits below this module)
    if method not in ("schur", "eigen"):
        raise ValueError(f"solve_sylvester: argument 'method' must be 'schur' or 'eigen', "
                         f"got {method!r}")
    A, B, C = _inexact(A, B, C)
    _check_square("solve_sylvester", A)
    _check_square("solve_sylvester", B)
    (n, m), na, nb = _aval(C).shape[-2:], _aval(A).shape[-1], _aval(B).shape[-1]
    if _aval(C).ndim != 2 or (n, m) != (na, nb):
        raise ValueError(f"solve_sylvester: argument 'C' must have shape ({na}, {nb}) (rows of "
                         f"A, columns of B), got {_aval(C).shape}")
    At, Bt = _tnp.swapaxes(A, -1, -2), _tnp.swapaxes(B, -1, -2)
    return custom_linear_solve(
        lambda x: _tnp.matmul(A, x) + _tnp.matmul(x, B), C,
        solve=lambda _, q: _sylvester_solve(A, B, q),
        transpose_solve=lambda _, q: _sylvester_solve(At, Bt, q))


@_nan_unless_finite(complex_result=True)
def _sqrtm_callback(m):
    import scipy.linalg  # noqa: PLC0415
    return _np.asarray(scipy.linalg.sqrtm(m), dtype=_complex_dtype(m.dtype))


def _complex_dtype(dt):
    return _np.result_type(dt, _np.complex64)


def _sqrtm_jvp(primals, tangents):
    # X X = A  =>  X dX + dX X = dA: a Sylvester equation, linear in dA.
    x = _sqrtm(primals[0])
    return x, solve_sylvester(x, x, _tnp.astype(tangents[0], _aval(x).dtype))




def sqrtm(A: ArrayLike, blocksize: int = 1) -> Array:
    """The principal matrix square root ``X`` (``X @ X == A``), complex as in JAX.

    SciPy's Schur method computes it (through ``pure_callback``); its
    derivative solves the Sylvester equation ``X dX + dX X = dA``, so it is
    differentiable in both modes and works under ``vmap`` and ``jit``.
    ``blocksize`` is accepted for SciPy compatibility (JAX ignores it too).
    """
    A, = _inexact(A)
    _check_square("sqrtm", A)
    if _aval(A).ndim != 2:
        raise ValueError(f"sqrtm: argument 'A' must be a 2-D array, got shape {_aval(A).shape}")
    return _sqrtm(A)


@_nan_unless_finite(complex_result=True)
def _logm_callback(m):
    import scipy.linalg  # noqa: PLC0415
    return _np.asarray(scipy.linalg.logm(m), dtype=_complex_dtype(m.dtype))


@_nan_unless_finite(complex_result=True)
def _dlogm_callback(a, e):
    """The Fréchet derivative of logm at ``a`` in direction ``e``, from the
    block identity logm([[a, e], [0, a]]) = [[L, dL], [0, L]]."""
    import scipy.linalg  # noqa: PLC0415
    n = a.shape[0]
    big = _np.zeros((2 * n, 2 * n), dtype=_np.result_type(a, e))
    big[:n, :n] = big[n:, n:] = a
    big[:n, n:] = e
    return _np.asarray(scipy.linalg.logm(big)[:n, n:], dtype=big.dtype)


def _callback_of(fn, like, *args, dtype=None):
    """``fn(*args)`` through pure_callback, its result typed as ``like`` (or ``dtype``)."""
    out = _core.ShapedArray(_aval(like).shape, dtype or _aval(like).dtype)
    return _pure_callback(fn, out, *args, vmap_method="sequential")


def _logm_jvp(primals, tangents):
    # expm(L) = A  =>  Dexp(L)[dL] = dA: dL solves a linear equation whose
    # operator is expm's Frechet derivative (transposable), solved by the
    # Frechet derivative of logm (its transpose: the same at A^T).
    from ..lax import custom_linear_solve  # noqa: PLC0415
    a, = primals
    lg = _logm(a)
    at = _tnp.swapaxes(a, -1, -2)
    d = custom_linear_solve(lambda x: _L.expm_frechet_p.bind(lg, x),
                            _tnp.astype(tangents[0], _aval(lg).dtype),
                            solve=lambda _, q: _callback_of(_dlogm_callback, q, a, q),
                            transpose_solve=lambda _, q: _callback_of(_dlogm_callback, q, at, q))
    return lg, d


def _make_custom_jvp(impl, rule):
    from ..custom_derivatives import custom_jvp  # noqa: PLC0415
    f = custom_jvp(impl)
    f.defjvp(rule)
    return f


# SciPy is called on the input's own dtype (a real matrix takes SciPy's real
# path, whose branch choices on the negative axis are SciPy's); results are complex.
_logm = _make_custom_jvp(
    lambda a: _callback_of(_logm_callback, a, a, dtype=_complex_dtype(_aval(a).dtype)), _logm_jvp)
_sqrtm = _make_custom_jvp(
    lambda a: _callback_of(_sqrtm_callback, a, a, dtype=_complex_dtype(_aval(a).dtype)), _sqrtm_jvp)


def logm(A: Any, disp: Any = True) -> Any:
    """The principal matrix logarithm ``L`` (``expm(L) == A``), complex.

    SciPy computes it (through ``pure_callback``); its derivative solves
    ``Dexp(L)[dL] = dA`` with SciPy's Frechet derivative of logm as the solver,
    so it is differentiable in both modes and works under ``vmap`` and ``jit``.
    ``disp`` is accepted for SciPy compatibility (errors are not estimated).
    """
    A, = _inexact(A)
    _check_square("logm", A)
    if _aval(A).ndim != 2:
        raise ValueError(f"logm: argument 'A' must be a 2-D array, got shape {_aval(A).shape}")
    return _logm(A)


def schur(a: ArrayLike, output: str = "real") -> tuple[Array, Array]:
    """The Schur decomposition ``a = z @ t @ z^H`` of a matrix or a stack of them (SciPy's,
    through ``pure_callback``): ``t`` is quasi-upper-triangular for ``output='real'``
    and upper-triangular for ``'complex'``.  Not differentiable (as in JAX)."""
    if output not in ("real", "complex"):
        raise ValueError(f"schur: argument 'output' must be 'real' or 'complex', got {output!r}")
    a, = _inexact(a)
    _check_square("schur", a)
    dt = _aval(a).dtype
    if output == "complex" and dt.kind != "c":
        dt = _np.result_type(dt, _np.complex64)
    shape = _core.ShapedArray(_aval(a).shape, dt)

    def run(m):
        import scipy.linalg  # noqa: PLC0415
        m = _np.asarray(m)
        t, z = _np.empty(m.shape, dt), _np.empty(m.shape, dt)
        for i in _np.ndindex(m.shape[:-2]):   # a stack of matrices one by one, as JAX's
            t[i], z[i] = scipy.linalg.schur(m[i], output=output)
        return t, z

    return tuple(_pure_callback(run, (shape, shape), a, vmap_method="sequential"))


def inv(a: ArrayLike, overwrite_a: bool = False, check_finite: bool = True) -> Array:
    return _NL.inv(a)


def det(a: ArrayLike, overwrite_a: bool = False, check_finite: bool = True) -> Array:
    return _NL.det(a)


def solve_triangular(a: ArrayLike, b: ArrayLike, trans: int | str = 0, lower: bool = False,
                     unit_diagonal: bool = False, overwrite_b: bool = False, debug: Any = None,
                     check_finite: bool = True) -> Array:
    """Solve ``op(a) @ x = b`` for triangular ``a`` (only its ``lower``/upper
    triangle is read; with ``unit_diagonal`` its diagonal is taken as ones)."""
    trans = _trans_code("solve_triangular", trans)
    a, b = _inexact(a, b)
    _check_square("solve_triangular", a)
    trans = _real_trans(trans, a)

    def bind(m, r):
        return _L.triangular_solve_p.bind(m, r, lower=bool(lower), trans=trans,
                                          unit_diagonal=bool(unit_diagonal))
    return _solve_with("solve_triangular", bind, a, b, _vector_rhs(a, b))


# ---------------------------------------------------------------------------
# LU


def lu_factor(a: ArrayLike, overwrite_a: bool = False,
              check_finite: bool = True) -> tuple[Array, Array]:
    """LU factorization with partial pivoting: ``(lu, piv)`` as SciPy (LAPACK
    row interchanges, int32)."""
    a, = _inexact(a)
    _check_matrix("lu_factor", a)
    lu_, piv, _ = _L.lu_p.bind(a)
    return lu_, piv


def lu_solve(lu_and_piv: tuple[ArrayLike, ArrayLike], b: ArrayLike, trans: int | str = 0,
             overwrite_b: bool = False, check_finite: bool = True) -> Array:
    """Solve ``a @ x = b`` (``trans=0``) or ``a.T @ x = b`` (``trans=1``) from
    ``lu_factor(a)``; differentiable in ``lu`` and ``b``."""
    try:
        lu_, piv = lu_and_piv
    except (TypeError, ValueError):
        raise TypeError("lu_solve: argument lu_and_piv must be the pair (lu, piv) returned by "
                        "lu_factor") from None
    trans = _trans_code("lu_solve", trans)
    lu_, b = _inexact(lu_, b)
    _check_square("lu_solve", lu_, "lu")
    trans = _real_trans(trans, lu_)
    piv = piv if isinstance(piv, _core.Tracer) else _np.asarray(piv, _np.int32)
    if _aval(piv).shape != _aval(lu_).shape[:-1]:
        raise ValueError(f"lu_solve: piv of shape {_aval(piv).shape} does not match lu of shape "
                         f"{_aval(lu_).shape}")
    lu_batch = _aval(lu_).shape[:-2]

    def bind(m, r):
        p = piv
        if _aval(m).shape[:-2] != lu_batch:
            p = _tnp.broadcast_to(piv, _aval(m).shape[:-1])
        return _L.lu_solve_p.bind(m, p, r, trans=trans)
    return _solve_with("lu_solve", bind, lu_, b, _vector_rhs(lu_, b))


def lu(a: ArrayLike, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True,
       p_indices: Any = False) -> tuple[Array, Array] | tuple[Array, Array, Array]:
    """``p, l, u`` with ``a = p @ l @ u`` (or ``pl, u`` with ``permute_l``; with
    ``p_indices`` the permutation is returned as row indices)."""
    a, = _inexact(a)
    _check_matrix("lu", a)
    lu_, piv, perm = _L.lu_p.bind(a)
    m, n = _aval(a).shape[-2:]
    k = min(m, n)
    dtype = _aval(a).dtype
    l = _tnp.tril(lu_[..., :, :k], -1) + _np.eye(m, k, dtype=dtype)
    u = _tnp.triu(lu_[..., :k, :])
    # a[perm] = l @ u, so a = P @ l @ u with P[perm[i], i] = 1, i.e. P @ l = l[inv_perm].
    inv_perm = _L.lu_pivots_to_permutation(piv, m, inverse=True)
    if permute_l:
        return _L._permute_rows(l, inv_perm), u
    if p_indices:
        return inv_perm, l, u
    # real, as JAX's and SciPy's, for a complex a too
    p = _tnp.astype(_tnp.equal(_tnp.expand_dims(perm, -2), _np.arange(m)[:, None]),
                    _np.finfo(dtype).dtype)
    return p, l, u


# ---------------------------------------------------------------------------
# Cholesky


def cholesky(a: ArrayLike, lower: bool = False, overwrite_a: bool = False,
             check_finite: bool = True) -> Array:
    """Cholesky factor of ``a``, upper by default (``a = U.T @ U``); reads the
    chosen triangle of ``a`` only."""
    a, = _inexact(a)
    _check_square("cholesky", a)
    if lower:
        return _L.cholesky_p.bind(a)
    return _tnp.swapaxes(_L.cholesky_p.bind(_tnp.swapaxes(a, -1, -2)), -1, -2)


def cho_factor(a: ArrayLike, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> tuple[Array, bool]:
    """``(c, lower)`` for ``cho_solve``; the other triangle of ``c`` is zero."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower: tuple[ArrayLike, bool], b: ArrayLike, overwrite_b: bool = False,
              check_finite: bool = True) -> Array:
    """Solve ``a @ x = b`` from ``cho_factor(a)``; differentiable in ``c`` and ``b``."""
    try:
        c, lower = c_and_lower
    except (TypeError, ValueError):
        raise TypeError("cho_solve: argument c_and_lower must be the pair (c, lower) returned by "
                        "cho_factor") from None
    c, b = _inexact(c, b)
    _check_square("cho_solve", c, "c")
    lower = bool(lower)
    h = _real_trans(2, c)   # (the conjugate transpose: a complex L^T x = y was solved)

    def bind(m, r):
        # lower: L L^H x = b; upper: U^H U x = b.
        y = _L.triangular_solve_p.bind(m, r, lower=lower, trans=0 if lower else h,
                                       unit_diagonal=False)
        return _L.triangular_solve_p.bind(m, y, lower=lower, trans=h if lower else 0,
                                          unit_diagonal=False)
    return _solve_with("cho_solve", bind, c, b, _vector_rhs(c, b))


# ---------------------------------------------------------------------------
# Eigen/singular values, QR


def eigh(a: ArrayLike, b: ArrayLike | None = None, lower: bool = True, eigvals_only: bool = False,
         overwrite_a: bool = False, overwrite_b: bool = False, type: int = 1,
         check_finite: bool = True, subset_by_index: Any = None, subset_by_value: Any = None,
         driver: Any = None) -> Array | tuple[Array, Array]:
    """Symmetric eigendecomposition ``(w, v)`` (``w`` only with ``eigvals_only``) of
    ``(a + a^H) / 2``, as JAX's (which symmetrizes the input; ``lower`` then changes nothing):
    SciPy reads one triangle only, and reading it gave a NaN in the other triangle no effect
    and a lower-triangular gradient where JAX's is symmetric."""
    if b is not None:
        raise NotImplementedError("eigh: the generalized problem (argument b) is not supported")
    if subset_by_index is not None or subset_by_value is not None:
        raise NotImplementedError("eigh: subset_by_index/subset_by_value are not supported")
    a, = _inexact(a)
    _check_square("eigh", a)
    a = _NL._symmetrize(a)
    if eigvals_only:
        return _L.eigvalsh_p.bind(a, lower=bool(lower))
    w, v = _L.eigh_p.bind(a, lower=bool(lower))
    return w, v


def eigvalsh(a: ArrayLike, b: ArrayLike | None = None, lower: Any = True, overwrite_a: Any = False,
             overwrite_b: Any = False, type: Any = 1, check_finite: Any = True,
             subset_by_index: Any = None, subset_by_value: Any = None, driver: Any = None) -> Array:
    return eigh(a, b, lower=lower, eigvals_only=True, subset_by_index=subset_by_index,
                subset_by_value=subset_by_value)


def qr(a: ArrayLike, overwrite_a: bool = False, lwork: Any = None, mode: str = "full",
       pivoting: bool = False,
       check_finite: bool = True) -> tuple[Array] | tuple[Array, Array] | tuple[Array, Array, Array]:
    """QR decomposition; ``mode`` 'full' (default), 'economic' or 'r'."""
    if pivoting:
        raise NotImplementedError("qr: pivoting=True is not supported")
    if mode not in ("full", "economic", "r"):
        raise ValueError(f"qr: mode must be 'full', 'economic' or 'r', got {mode!r}")
    a, = _inexact(a)
    _check_matrix("qr", a)
    q, r = _L.qr_p.bind(a, full_matrices=mode != "economic")
    if mode == "r":
        return (r,)
    return q, r


def svd(a: ArrayLike, full_matrices: bool = True, compute_uv: bool = True,
        overwrite_a: bool = False, check_finite: bool = True,
        lapack_driver: str = "gesdd") -> Array | tuple[Array, Array, Array]:
    a, = _inexact(a)
    _check_matrix("svd", a)
    outs = _L.svd_p.bind(a, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    return outs[0] if not compute_uv else tuple(outs)


def polar(a: ArrayLike, side: str = "right") -> tuple[Array, Array]:
    """The polar decomposition ``a = u @ p`` (``side="right"``) or ``a = p @ u``
    (``"left"``): ``u`` has orthonormal columns, ``p`` is Hermitian positive
    semi-definite.  From the SVD ``a = w s vh``: ``u = w vh``, ``p = vh^H s vh``
    (right) or ``w s w^H`` (left); differentiable where the singular values
    are distinct."""
    if side not in ("right", "left"):
        raise ValueError(f"polar: argument 'side' must be 'right' or 'left', got {side!r}")
    a, = _inexact(a)
    if _aval(a).ndim != 2:
        raise ValueError(f"polar: argument 'a' must be a 2-D array, got shape {_aval(a).shape}")
    w, s, vh = svd(a, full_matrices=False)
    u = _tnp.matmul(w, vh)
    if side == "right":
        p = _tnp.matmul(_tnp.conj(_tnp.swapaxes(vh, -1, -2)) * s, vh)
    else:
        p = _tnp.matmul(w * s, _tnp.conj(_tnp.swapaxes(w, -1, -2)))
    return u, p


def svdvals(a: ArrayLike, overwrite_a: Any = False, check_finite: Any = True) -> Array:
    return _NL.svdvals(a)


def norm(a: ArrayLike, ord: int | str | None = None, axis: None | tuple[int, ...] | int = None,
         keepdims: bool = False, check_finite: Any = True) -> Array:
    return _NL.norm(a, ord=ord, axis=axis, keepdims=keepdims)


# ---------------------------------------------------------------------------
# Matrix exponential


def expm(A: ArrayLike) -> Array:
    """Matrix exponential; its derivative is the Fréchet derivative ``expm_frechet``."""
    A, = _inexact(A)
    _check_square("expm", A, "A")
    return _L.expm_p.bind(A)


def expm_frechet(A: ArrayLike, E: ArrayLike, method: str | None = None, compute_expm: bool = True,
                 check_finite: Any = True) -> Array | tuple[Array, Array]:
    """Fréchet derivative of ``expm`` at ``A`` in direction ``E``:
    ``(expm(A), L(A, E))``, or ``L(A, E)`` if not ``compute_expm``."""
    A, E = _inexact(A, E)
    _check_square("expm_frechet", A, "A")
    if _aval(E).shape != _aval(A).shape:
        raise ValueError(f"expm_frechet: argument E of shape {_aval(E).shape} does not match "
                         f"argument A of shape {_aval(A).shape}")
    frechet = _L.expm_frechet_p.bind(A, E)
    if compute_expm:
        return _L.expm_p.bind(A), frechet
    return frechet



# ---------------------------------------------------------------------------
# Special matrices


def _vector(fname, argname, x):
    """``x`` as a 1-D array (scalars become length 1), promoted as NumPy does."""
    x = x if isinstance(x, _core.Tracer) else _tnp.asarray(x)
    if _aval(x).ndim > 1:
        raise ValueError(f"{fname}: argument '{argname}' must be 1-D, got shape {_aval(x).shape}")
    return _tnp.reshape(x, (-1,))


def _gather(vals, idx):
    """``vals[..., idx]`` for a static integer index array ``idx``."""
    return _tnp.take(vals, _np.asarray(idx, _np.intp), axis=-1)


def _static_size(fname, n):
    if isinstance(n, _core.Tracer) or not isinstance(n, (int, _np.integer)) or n < 0:
        raise TypeError(f"{fname}: argument 'n' must be a static non-negative integer, got {n!r}")
    return int(n)


def toeplitz(c: ArrayLike, r: ArrayLike | None = None) -> Array:
    """The Toeplitz matrix with first column ``c`` and first row ``r`` (``conj(c)`` by
    default; ``r[..., 0]`` is ignored).  Leading dimensions of ``c`` and ``r`` are batch
    dimensions (as in JAX)."""
    c = c if isinstance(c, _core.Tracer) else _tnp.asarray(c)
    r = _tnp.conj(c) if r is None else (r if isinstance(r, _core.Tracer) else _tnp.asarray(r))
    c, r = _tnp.atleast_1d(c), _tnp.atleast_1d(r)
    n, m = _aval(c).shape[-1], _aval(r).shape[-1]
    batch = _np.broadcast_shapes(_aval(c).shape[:-1], _aval(r).shape[:-1])
    c, r = (_tnp.broadcast_to(v, batch + (k,)) for v, k in ((c, n), (r, m)))
    vals = _tnp.concatenate([_tnp.flip(c, -1), r[..., 1:]], axis=-1)
    return _gather(vals, n - 1 - _np.arange(n)[:, None] + _np.arange(m)[None, :])


def hankel(c: ArrayLike, r: ArrayLike | None = None) -> Array:
    """The Hankel matrix with first column ``c`` and last row ``r`` (zeros by default;
    ``r[0]`` is ignored)."""
    c = _vector("hankel", "c", c)
    r = _tnp.zeros_like(c) if r is None else _vector("hankel", "r", r)
    n, m = _aval(c).shape[0], _aval(r).shape[0]
    vals = _tnp.concatenate([c, r[1:]])
    return _gather(vals, _np.arange(n)[:, None] + _np.arange(m)[None, :])


def circulant(c: ArrayLike) -> Array:
    """The circulant matrix with first column ``c`` (leading dimensions batch)."""
    c = _tnp.atleast_1d(c if isinstance(c, _core.Tracer) else _tnp.asarray(c))
    n = _aval(c).shape[-1]
    return _gather(c, (_np.arange(n)[:, None] - _np.arange(n)[None, :]) % n)


def companion(a: ArrayLike) -> Array:
    """The companion matrix of the polynomial with coefficients ``a`` (highest first)."""
    a = _vector("companion", "a", a)
    n = _aval(a).shape[0]
    if n < 2:
        raise ValueError(f"companion: argument 'a' must have at least two coefficients, got {n}")
    first = -a[1:] / a[0]
    below = _np.eye(n - 2, n - 1, dtype=_aval(first).dtype)
    return _tnp.concatenate([first[None, :], below], axis=0)


def fiedler(a: ArrayLike) -> Array:
    """The symmetric Fiedler matrix ``|a[i] - a[j]|``."""
    a = _vector("fiedler", "a", a)
    return _tnp.abs(a[:, None] - a[None, :])


def fiedler_companion(a: ArrayLike) -> Array:
    """The Fiedler companion matrix of the polynomial ``a`` (highest coefficient first)."""
    a = _vector("fiedler_companion", "a", a)
    k = _aval(a).shape[0]
    if k < 2:
        raise ValueError(f"fiedler_companion: argument 'a' must have at least two "
                         f"coefficients, got {k}")
    a = a / a[0]
    n = k - 1
    if n == 1:
        return _tnp.reshape(-a[1], (1, 1))
    # SciPy's layout: each entry is 0, 1 or -a[j]; vals[0] = 0, vals[1] = 1, vals[j + 1] = -a[j].
    src = _np.zeros((n, n), _np.intp)
    src[range(3, n, 2), range(1, n - 2, 2)] = 1
    src[range(2, n, 2), range(1, n - 1, 2)] = _np.arange(3, k, 2) + 1
    src[range(0, n - 2, 2), range(2, n, 2)] = 1
    src[range(0, n - 1, 2), range(1, n, 2)] = _np.arange(2, k, 2) + 1
    src[0, 0], src[1, 0] = 2, 1
    vals = _tnp.concatenate([_tnp.array([0.0, 1.0], _aval(a).dtype), -a[1:]])
    return _gather(vals, src)


def leslie(f: ArrayLike, s: ArrayLike) -> Array:
    """The Leslie matrix: fecundities ``f`` in the first row, survivals ``s`` below the
    diagonal."""
    f, s = _vector("leslie", "f", f), _vector("leslie", "s", s)
    n = _aval(f).shape[0]
    if _aval(s).shape[0] != n - 1:
        raise ValueError(f"leslie: argument 's' must have length len(f) - 1 = {n - 1}, got "
                         f"{_aval(s).shape[0]}")
    dt = _np.result_type(_aval(f).dtype, _aval(s).dtype, _np.float64 if _aval(f).dtype.kind in
                         "biu" else _aval(f).dtype)
    vals = _tnp.concatenate([_tnp.zeros(1, dt), _tnp.astype(f, dt), _tnp.astype(s, dt)])
    src = _np.zeros((n, n), _np.intp)
    src[0] = 1 + _np.arange(n)
    src[_np.arange(1, n), _np.arange(n - 1)] = 1 + n + _np.arange(n - 1)
    return _gather(vals, src)


def block_diag(*arrs: Any) -> Array:
    """The block-diagonal matrix of ``arrs`` (each scalar, 1-D as a row, or 2-D)."""
    if not arrs:
        return _tnp.zeros((1, 0))
    # Python scalars stay weak in the result's dtype, as JAX's (block_diag(float32 x, 2.0): float32)
    dt = _tnp.result_type(*[a if isinstance(a, (bool, int, float, complex)) else _aval(
        a if isinstance(a, _core.Tracer) else _tnp.asarray(a)).dtype for a in arrs])
    arrs = [_tnp.atleast_2d(a if isinstance(a, _core.Tracer) else _tnp.asarray(a)) for a in arrs]
    for i, a in enumerate(arrs):
        if _aval(a).ndim != 2:
            raise ValueError(f"block_diag: argument {i} must have at most 2 dimensions, got shape "
                             f"{_aval(a).shape}")
    cols = sum(_aval(a).shape[1] for a in arrs)
    rows, left = [], 0
    for a in arrs:
        r, c = _aval(a).shape
        rows.append(_tnp.pad(_tnp.astype(a, dt), ((0, 0), (left, cols - left - c))))
        left += c
    return _tnp.concatenate(rows, axis=0)


def convolution_matrix(a: ArrayLike, n: int, mode: str = "full") -> Array:
    """The matrix ``A`` with ``A @ v == convolve(a, v, mode)`` for ``v`` of length ``n``."""
    a = _vector("convolution_matrix", "a", a)
    n = _static_size("convolution_matrix", n)
    m = _aval(a).shape[0]
    if n <= 0 or m == 0:
        raise ValueError(f"convolution_matrix: need len(a) > 0 and n > 0, got {m} and {n}")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"convolution_matrix: argument 'mode' must be 'full', 'same' or "
                         f"'valid', got {mode!r}")
    az = _tnp.pad(a, (0, n - 1))
    raz = _tnp.pad(_tnp.flip(a), (0, n - 1))
    if mode == "full":
        col0, row0 = az, raz[_aval(raz).shape[0] - n:]
    else:
        trim = min(n, m) - 1
        tb = trim // 2 if mode == "same" else trim
        te = trim - tb if mode == "same" else trim
        size = _aval(az).shape[0]
        col0 = az[tb:size - te]
        row0 = raz[size - n - tb:size - tb]
    return toeplitz(col0, row0)


def dft(n: int, scale: str | None = None, *, dtype: DTypeLike | None = None) -> Array:
    """The discrete Fourier transform matrix (``scale``: None, 'sqrtn' or 'n')."""
    n = _static_size("dft", n)
    if scale not in (None, "sqrtn", "n"):
        raise ValueError(f"dft: argument 'scale' must be None, 'sqrtn' or 'n', got {scale!r}")
    k = _np.arange(n)
    m = _np.exp(-2j * _np.pi * _np.outer(k, k) / n)
    if scale == "sqrtn":
        m = m / _np.sqrt(n)
    elif scale == "n":
        m = m / n
    return _tnp.asarray(m.astype(dtype or _np.complex128))


def hadamard(n: int, dtype: DTypeLike = int) -> Array:
    """The Hadamard matrix of order ``n`` (a power of 2)."""
    return _tnp.asarray(_sla.hadamard(_static_size("hadamard", n), dtype=dtype))


def hilbert(n: int) -> Array:
    """The Hilbert matrix ``1 / (i + j + 1)``."""
    return _tnp.asarray(_sla.hilbert(_static_size("hilbert", n)))


def invhilbert(n: int) -> Array:
    """The inverse of the Hilbert matrix (SciPy's, in float64)."""
    return _tnp.asarray(_sla.invhilbert(_static_size("invhilbert", n)).astype(_np.float64))


def pascal(n: int, kind: str | None = None) -> Array:
    """The Pascal matrix (``kind``: 'symmetric' (default), 'lower' or 'upper'), exact in
    float64."""
    return _tnp.asarray(_sla.pascal(_static_size("pascal", n), kind or "symmetric",
                                    exact=False).astype(_np.float64))


def invpascal(n: int, kind: str | None = None) -> Array:
    """The inverse of the Pascal matrix, exact in float64."""
    return _tnp.asarray(_sla.invpascal(_static_size("invpascal", n), kind or "symmetric",
                                       exact=True).astype(_np.float64))


def helmert(n: int, full: bool = False) -> Array:
    """The Helmert matrix of order ``n`` (without its first row unless ``full``)."""
    return _tnp.asarray(_sla.helmert(_static_size("helmert", n), full=full))


# ---------------------------------------------------------------------------
# Decompositions through SciPy


def _square_2d(fname, a):
    a, = _inexact(a)
    _check_square(fname, a)
    if _aval(a).ndim != 2:
        raise ValueError(f"{fname}: argument 'a' must be a 2-D array, got shape {_aval(a).shape}")
    return a


def hessenberg(a: ArrayLike, *, calc_q: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> Array | tuple[Array, Array]:
    """The Hessenberg form ``h`` of ``a`` (and ``q`` with ``a = q h q^H`` when ``calc_q``),
    SciPy's, through ``pure_callback``; not differentiable."""
    a = _square_2d("hessenberg", a)
    shape = _core.ShapedArray(_aval(a).shape, _aval(a).dtype)
    if not calc_q:
        return _pure_callback(lambda m: _sla.hessenberg(m).astype(shape.dtype), shape, a,
                              vmap_method="sequential")
    return tuple(_pure_callback(
        lambda m: tuple(x.astype(shape.dtype) for x in _sla.hessenberg(m, calc_q=True)),
        (shape, shape), a, vmap_method="sequential"))


def rsf2csf(T: ArrayLike, Z: ArrayLike, check_finite: bool = True) -> tuple[Array, Array]:
    """The complex Schur form from the real one (``schur(a)``'s ``t, z``), SciPy's, through
    ``pure_callback``; not differentiable."""
    T, Z = _inexact(T, Z)
    _check_square("rsf2csf", T, "T")
    dt = _np.result_type(_aval(T).dtype, _np.complex64)
    shape = _core.ShapedArray(_aval(T).shape, dt)
    return tuple(_pure_callback(
        lambda t, z: tuple(x.astype(dt) for x in _sla.rsf2csf(t, z)), (shape, shape), T, Z,
        vmap_method="sequential"))


def funm(A: ArrayLike, func: Callable[[ArrayLike], ArrayLike],
         disp: bool = True) -> Array | tuple[Array, Array]:
    """The matrix function of ``A`` defined by the scalar function ``func`` (SciPy's
    Schur-Parlett algorithm, through ``pure_callback``; not differentiable).  The result is
    complex, as JAX's.  With ``disp=False`` also returns SciPy's error estimate."""
    A = _square_2d("funm", A)
    dt = _np.result_type(_aval(A).dtype, _np.complex64)
    out = _core.ShapedArray(_aval(A).shape, dt)

    def run(m):
        f, err = _sla.funm(m, lambda x: _np.asarray(func(x)), disp=False)
        return _np.asarray(f).astype(dt), _np.asarray(err, _np.float64)

    f, err = _pure_callback(run, (out, _core.ShapedArray((), _np.float64)), A,
                            vmap_method="sequential")
    return f if disp else (f, err)


def qr_multiply(a: ArrayLike, c: ArrayLike, mode: str = "right", pivoting: bool = False,
                conjugate: bool = False, overwrite_a: bool = False,
                overwrite_c: bool = False) -> tuple[Array, Array] | tuple[Array, Array, Array]:
    """``(c @ q, r)`` (``mode='right'``) or ``(q @ c, r)`` (``'left'``) with the economic QR
    decomposition ``a = q r``; differentiable."""
    if pivoting:
        raise NotImplementedError("qr_multiply: pivoting=True is not supported")
    if mode not in ("left", "right"):
        raise ValueError(f"qr_multiply: argument 'mode' must be 'left' or 'right', got {mode!r}")
    a, c = _inexact(a, c)
    _check_matrix("qr_multiply", a)
    q, r = _L.qr_p.bind(a, full_matrices=False)
    if conjugate:
        q = _tnp.conj(q)
    vec = _aval(c).ndim == 1
    if mode == "left":
        cq = _tnp.matmul(q, c[:, None] if vec else c)
    else:
        cq = _tnp.matmul(c[None, :] if vec else c, q)
    return (_tnp.reshape(cq, (-1,)) if vec else cq), r


def eigh_tridiagonal(d: ArrayLike, e: ArrayLike, *, eigvals_only: bool = False, select: str = "a",
                     select_range: tuple[float, float] | None = None, tol: float | None = None,
                     key: ArrayLike | None = None) -> Array | tuple[Array, Array]:
    """Eigenvalues (and eigenvectors) of the symmetric tridiagonal matrix with diagonal ``d``
    and off-diagonal ``e``, through the dense ``eigh`` (differentiable).  ``select``: 'a'
    (all) or 'i' (indices ``select_range = (lo, hi)``, inclusive)."""
    d, e = _inexact(_vector("eigh_tridiagonal", "d", d), _vector("eigh_tridiagonal", "e", e))
    n = _aval(d).shape[0]
    if _aval(e).shape[0] != n - 1:
        raise ValueError(f"eigh_tridiagonal: argument 'e' must have length len(d) - 1 = {n - 1}, "
                         f"got {_aval(e).shape[0]}")
    if select not in ("a", "i"):
        raise NotImplementedError(f"eigh_tridiagonal: select={select!r} is not supported (use "
                                  "'a' or 'i')")
    m = _tnp.diag(d) + _tnp.diag(e, 1) + _tnp.diag(_tnp.conj(e), -1)
    lo, hi = (0, n - 1) if select == "a" else (int(select_range[0]), int(select_range[1]))
    if eigvals_only:
        return _NL.eigvalsh(m)[lo:hi + 1]
    w, v = _NL.eigh(m)
    return w[lo:hi + 1], v[:, lo:hi + 1]
