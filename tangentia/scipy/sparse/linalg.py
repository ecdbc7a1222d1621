"""Matrix-free Krylov solvers (``tangentia.scipy.sparse.linalg``), mirroring
``jax.scipy.sparse.linalg``: :func:`cg` (conjugate gradients, for Hermitian
positive definite operators), :func:`bicgstab` and :func:`gmres` (general
operators).

The operator ``A`` and the preconditioner ``M`` are functions, square matrices,
or objects with ``__matmul__`` (a linear operator registered as a pytree passes
through ``jit`` and ``vmap`` like any argument); the right-hand side ``b`` is a
pytree of arrays.  The iterations are staged loops (``lax.while_loop``), so the
solvers run under ``jit`` and ``vmap``, and each solve is a
``lax.custom_linear_solve``: derivatives with respect to ``b`` and to the values
``A`` closes over come from implicit differentiation (further solves with the
same method, on ``A``'s transpose in reverse mode), never from differentiating
the iterations.  They are accurate when those solves converge.

Internally a pytree is raveled to one vector (``flatten_util.ravel_pytree``)
and the methods work on vectors.  Tolerances are SciPy's (not its legacy ones):
a solve stops when ``norm(residual) <= max(tol * norm(b), atol)``.

The second output, ``info``, is SciPy's (JAX returns ``None`` from ``cg`` and
``bicgstab``, and from ``gmres`` only -1 for NaNs or 0): 0 when the tolerance
was met; the number of iterations done (restart cycles for ``gmres``) when it
was not (``maxiter`` for a NaN or infinite residual of ``cg``/``bicgstab``, as
SciPy's: their loops stop at once there, as JAX's, with ``x0``); -10 (rho = 0) or -11 (alpha or omega = 0) when ``bicgstab`` broke
down; -1 when ``gmres``'s solution holds NaNs.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from ... import core
from ... import lax
from ... import numpy as tnp
from ...flatten_util import ravel_pytree
from ...lax.implicit import custom_linear_solve
from ...tree_util import tree_flatten, tree_map, tree_structure, tree_unflatten
from .._util import inexact
from ..linalg import solve_triangular

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

__all__ = ["cg", "bicgstab", "gmres"]


# ---------------------------------------------------------------------------
# Arguments


def _as_operator(fname, argname, A):
    """``A`` as the function ``x -> A x``."""
    if isinstance(A, (np.ndarray, core.Tracer)):
        if A.ndim != 2 or A.shape[0] != A.shape[1]:
            raise ValueError(f"linear operator must be a square matrix, but has shape: "
                             f"{A.shape} ({fname}: argument {argname})")
        return functools.partial(tnp.dot, A)
    if callable(A):
        return A
    if hasattr(A, "__matmul__"):
        shape = getattr(A, "shape", None)
        if shape is not None and (len(shape) != 2 or shape[0] != shape[1]):
            raise ValueError(f"linear operator must be a square matrix, but has shape: "
                             f"{tuple(shape)} ({fname}: argument {argname})")
        return functools.partial(operator.matmul, A)
    raise TypeError(f"linear operator must be either a function or ndarray: {A!r} ({fname}: "
                    f"argument {argname} must be a function, a square 2-D array or an object "
                    f"with __matmul__, got {type(A).__name__})")


def _check_matrix_fits(fname, A, b_leaves):
    """A matrix ``A`` (n, n) needs one array ``b`` whose first axis has length n."""
    if not isinstance(A, (np.ndarray, core.Tracer)):
        return
    n = A.shape[0]
    if len(b_leaves) != 1 or np.ndim(b_leaves[0]) == 0 or np.shape(b_leaves[0])[0] != n:
        got = [tuple(np.shape(x)) for x in b_leaves]
        raise ValueError(f"{fname}: A is a matrix of shape {tuple(A.shape)}, so b must be one "
                         f"array of shape ({n},) (or ({n}, ...)), got leaves of shapes {got}")


def _arrays(fname, argname, tree):
    leaves, treedef = tree_flatten(tree)
    for i, x in enumerate(leaves):
        if not core.is_array_like(x):
            raise TypeError(f"{fname}: {argname} must be a pytree of arrays, but leaf {i} is a "
                            f"{type(x).__name__}")
    return [inexact(x)[0] for x in leaves], treedef


def _count(fname, argname, value, least):
    if isinstance(value, core.Tracer):
        return value
    try:
        n = operator.index(value)
    except TypeError:
        n = None
    if n is None or n < least:
        raise ValueError(f"{fname}: {argname} must be an integer >= {least} or None, "
                         f"got {value!r}")
    return n


def _solver(fname, method, A, b, x0, tol, atol, maxiter, M, hermitian=False, **options):
    """Check the arguments and run ``method`` on raveled vectors inside a
    ``custom_linear_solve`` whose solve and transpose solve are ``method``
    (``hermitian``: ``A`` is, so it is symmetric for a real ``b``)."""
    matvec = _as_operator(fname, "A", A)
    precondition = (lambda v: v) if M is None else _as_operator(fname, "M", M)
    b_leaves, b_tree = _arrays(fname, "b", b)
    if not b_leaves:
        raise ValueError(f"{fname}: b must hold at least one array, got {b!r}")
    _check_matrix_fits(fname, A, b_leaves)
    # a complex matrix (or preconditioner) makes the problem complex
    op_dtypes = [op.dtype for op in (A, M) if isinstance(getattr(op, "dtype", None), np.dtype)]
    b_leaves = [x.astype(tnp.result_type(x, *op_dtypes)) for x in b_leaves]
    b = tree_unflatten(b_tree, b_leaves)
    if x0 is None:
        x0 = tree_map(tnp.zeros_like, b)
    else:
        if tree_structure(x0) != b_tree:
            raise ValueError(f"x0 and b must have matching tree structure: "
                             f"{tree_structure(x0)} vs {b_tree} ({fname}: argument x0)")
        x0_leaves, _ = _arrays(fname, "x0", x0)
        shapes = [[tuple(np.shape(x)) for x in leaves] for leaves in (x0_leaves, b_leaves)]
        if shapes[0] != shapes[1]:
            raise ValueError(f"arrays in x0 and b must have matching shapes: {shapes[0]} vs "
                             f"{shapes[1]} ({fname}: argument x0)")
        x0 = tree_unflatten(b_tree, x0_leaves)
    size = sum(int(np.size(x)) for x in b_leaves)
    maxiter = 10 * size if maxiter is None else _count(fname, "maxiter", maxiter, 0)
    flat_x0 = ravel_pytree(x0)[0]

    def solve(operator_, rhs):
        flat_b, unravel = ravel_pytree(rhs)
        dtype = flat_b.dtype

        def ravelled(fun, name):
            def apply(v):
                out = ravel_pytree(fun(unravel(v)))[0]
                complex_out = tnp.iscomplexobj(out) and not tnp.iscomplexobj(v)
                if out.shape != v.shape or complex_out:
                    raise TypeError(f"{fname}: {name} must return values of b's structure, "
                                    f"shapes and kind (real or complex), as {v.shape[0]} "
                                    f"{dtype} numbers, but returned {out.shape[0]} {out.dtype} "
                                    f"numbers" + (" (pass a complex b for a complex operator)"
                                                  if complex_out else ""))
                return out.astype(dtype)
            return apply

        x, info = method(ravelled(operator_, "A"), ravelled(precondition, "M"), flat_b,
                         flat_x0.astype(dtype), tol, atol, maxiter, **options)
        return unravel(x), info

    symmetric = hermitian and not any(tnp.iscomplexobj(x) for x in b_leaves)
    return custom_linear_solve(matvec, b, solve, transpose_solve=solve, symmetric=symmetric,
                               has_aux=True)


# ---------------------------------------------------------------------------
# Vector helpers (the solvers' internals are never differentiated)


def _sqnorm(x):
    return tnp.real(tnp.vdot(x, x))


def _norm(x):
    return tnp.sqrt(_sqnorm(x))


def _div(num, den):
    """``num / den``, 0 where ``den == 0`` (without a division-by-zero warning)."""
    zero = den == 0
    return tnp.where(zero, 0, num / tnp.where(zero, 1, den))


def _threshold(b, tol, atol):
    """The squared residual norm at which a solve stops."""
    return tnp.maximum(tnp.square(tol) * _sqnorm(b), tnp.square(atol))


def _info(converged, k):
    return tnp.where(converged, 0, k)


def _residual_info(rr, thresh, k, maxiter):
    """SciPy's ``info`` from the squared residual norm ``rr`` at the end: 0 only for a
    finite residual within the tolerance; a NaN or infinite one (NaN or infinite ``A`` or
    ``b``: the loop stops at once, as JAX's) reports ``maxiter``, as SciPy's (which runs
    every step on NaNs), where ``k`` (0 steps) read as converged."""
    finite = tnp.isfinite(rr)
    return _info(finite & (rr <= thresh), tnp.where(finite, k, maxiter))


# ---------------------------------------------------------------------------
# Conjugate gradients


def _cg(A, M, b, x0, tol, atol, maxiter):
    """Preconditioned conjugate gradients (Saad, Iterative Methods, Alg. 9.1)."""
    thresh = _threshold(b, tol, atol)
    r = b - A(x0)
    z = M(r)

    def cond(c):
        rr, k = c[4], c[5]
        return (rr > thresh) & (k < maxiter)

    def body(c):
        x, r, p, gamma, _, k = c
        q = A(p)
        alpha = _div(gamma, tnp.real(tnp.vdot(p, q)))
        x, r = x + alpha * p, r - alpha * q
        z = M(r)
        gamma_next = tnp.real(tnp.vdot(r, z))
        return x, r, z + _div(gamma_next, gamma) * p, gamma_next, _sqnorm(r), k + 1

    x, _, _, _, rr, k = lax.while_loop(
        cond, body, (x0, r, z, tnp.real(tnp.vdot(r, z)), _sqnorm(r), np.int64(0)))
    return x, _residual_info(rr, thresh, k, maxiter)


def cg(A: Any, b: Any, x0: Any = None, *, tol: Any = 1e-5, atol: Any = 0.0, maxiter: Any = None,
       M: Any = None) -> Any:
    """Solve ``A x = b`` by conjugate gradients, for a Hermitian positive
    definite ``A`` (``jax.scipy.sparse.linalg.cg``).

    The iterations are SciPy's ``scipy.sparse.linalg.cg`` (with its current,
    non-legacy tolerances).  Derivatives come from implicit differentiation:
    another ``cg`` solve (on the same operator for real problems), accurate when
    it converges.

    Args:
      A: the operator: a function ``x -> A x`` (returning ``x``'s structure and
        shapes), a square 2-D array, or an object with ``__matmul__``.
      b: the right-hand side, an array or a pytree of arrays of any shapes.
      x0: the starting guess, with ``b``'s structure and shapes (default zeros).
      tol: the relative tolerance: stop when
        ``norm(residual) <= max(tol * norm(b), atol)``.
      atol: the absolute tolerance.
      maxiter: the maximum number of iterations (default ``10 * b``'s size).
      M: a preconditioner approximating ``A``'s inverse (function, matrix or
        ``__matmul__`` object), Hermitian positive definite too.

    Returns:
      ``(x, info)``: the solution, with ``b``'s structure, and SciPy's
      convergence code (0 converged, else the number of iterations done; JAX
      returns ``None``).

    Examples:
      >>> import numpy as np
      >>> import tangentia as tg
      >>> from tangentia.scipy.sparse.linalg import cg
      >>> A = np.array([[4.0, 1.0], [1.0, 3.0]])
      >>> x, info = cg(A, np.array([1.0, 2.0]), tol=1e-12)
      >>> x, info
      (Array([0.09090909, 0.63636364]), Array(0))
      >>> tg.grad(lambda b: cg(lambda v: A @ v, b, tol=1e-12)[0][0])(np.array([1.0, 2.0]))
      Array([ 0.27272727, -0.09090909])
    """
    return _solver("cg", _cg, A, b, x0, tol, atol, maxiter, M, hermitian=True)


# ---------------------------------------------------------------------------
# BiCGSTAB


def _bicgstab(A, M, b, x0, tol, atol, maxiter):
    """Preconditioned BiCGSTAB (van der Vorst 1992; SciPy's breakdown codes)."""
    thresh = _threshold(b, tol, atol)
    r = b - A(x0)
    rhat = r
    one = tnp.ones((), r.dtype)
    zeros = tnp.zeros_like(r)

    def cond(c):
        rr, k = c[7], c[8]
        return (rr > thresh) & (k < maxiter) & (k >= 0)

    def body(c):
        x, r, p, v, rho, alpha, omega, _, k = c
        rho_next = tnp.vdot(rhat, r)
        p = r + (_div(rho_next, rho) * _div(alpha, omega)) * (p - omega * v)
        phat = M(p)
        v = A(phat)
        alpha = _div(rho_next, tnp.vdot(rhat, v))
        s = r - alpha * v
        done = _sqnorm(s) <= thresh          # converged half-way: skip the second step
        shat = M(s)
        t = A(shat)
        omega = tnp.where(done, one, _div(tnp.vdot(t, s), tnp.vdot(t, t)))
        step = tnp.where(done, 0, omega)
        x_next = tnp.where(alpha == 0, x, x + alpha * phat + step * shat)
        r = s - step * t
        k = tnp.where(rho_next == 0, -10, tnp.where((alpha == 0) | (omega == 0), -11, k + 1))
        return x_next, r, p, v, rho_next, alpha, omega, _sqnorm(r), k

    x, *_, rr, k = lax.while_loop(
        cond, body, (x0, r, zeros, zeros, one, one, one, _sqnorm(r), np.int64(0)))
    return x, tnp.where(k < 0, k, _residual_info(rr, thresh, k, maxiter))


def bicgstab(A: Any, b: Any, x0: Any = None, *, tol: Any = 1e-5, atol: Any = 0.0,
             maxiter: Any = None, M: Any = None) -> Any:
    """Solve ``A x = b`` by the biconjugate gradient stabilized method, for a
    general ``A`` (``jax.scipy.sparse.linalg.bicgstab``).

    The iterations are SciPy's ``scipy.sparse.linalg.bicgstab`` (current,
    non-legacy tolerances; a breakdown is an exact zero of rho, alpha or omega,
    where SciPy compares them with ``eps**2``).  Derivatives come from implicit
    differentiation: ``bicgstab`` solves with ``A`` (forward mode) or ``A``'s
    transpose (reverse mode), accurate when they converge.

    Args:
      A: the operator, any nonsingular one, given as for :func:`cg`.
      b, x0, tol, atol, maxiter: as for :func:`cg`.
      M: a preconditioner approximating ``A``'s inverse, given as ``A``.

    Returns:
      ``(x, info)``: the solution, with ``b``'s structure, and SciPy's
      convergence code (0 converged; the number of iterations done if not; -10
      or -11 on breakdown; JAX returns ``None``).

    Examples:
      >>> import numpy as np
      >>> from tangentia.scipy.sparse.linalg import bicgstab
      >>> A = np.array([[3.0, 1.0], [-1.0, 2.0]])
      >>> x, info = bicgstab(A, np.array([1.0, 1.0]), tol=1e-12)
      >>> x, info
      (Array([0.14285714, 0.57142857]), Array(0))
    """
    return _solver("bicgstab", _bicgstab, A, b, x0, tol, atol, maxiter, M)


# ---------------------------------------------------------------------------
# GMRES


def _givens(a, b):
    """``(c, s, r)``: the rotation ``[[c, s], [-conj(s), c]]`` (``c`` real) that
    takes ``(a, b)`` to ``(r, 0)``."""
    abs_a = tnp.abs(a)
    norm = tnp.hypot(abs_a, tnp.abs(b))
    phase = tnp.where(abs_a == 0, 1, a / tnp.where(abs_a == 0, 1, abs_a))
    safe = tnp.where(norm == 0, 1, norm)
    c = tnp.where(norm == 0, 1, abs_a / safe)
    return c, phase * tnp.conj(b) / safe, phase * norm


def _rotate(c, s, x, y):
    return c * x + s * y, c * y - tnp.conj(s) * x


def _rotate_at(v, i, c, s):
    """``v`` with the rotation ``(c, s)`` applied to its entries ``i, i + 1``."""
    vi, vj = _rotate(c, s, v[i], v[i + 1])
    return v.at[i].set(vi).at[i + 1].set(vj)


def _gmres_cycle(A, M, x, u, beta, restart, ptol, incremental):
    """One restart of left-preconditioned GMRES from ``x``, whose preconditioned
    residual is ``beta * u``: ``restart`` Arnoldi steps (classical Gram-Schmidt
    done twice) on ``M A``, the Hessenberg matrix reduced to triangular ``R`` by
    Givens rotations as it grows, then ``x + V y`` for the least-squares ``y``.
    ``incremental`` stops early once the residual estimate reaches ``ptol``."""
    dtype = u.dtype
    eps = tnp.finfo(dtype).eps
    basis = tnp.zeros((restart + 1, u.shape[0]), dtype).at[0].set(u)
    g = tnp.zeros(restart + 1, dtype).at[0].set(beta)
    rot_c = tnp.zeros(restart, tnp.real(g).dtype)
    rot_s = tnp.zeros(restart, dtype)

    def cond(c):
        return (c[0] < restart) & c[-1]

    def body(c):
        j, V, R, g, rot_c, rot_s, _ = c
        w = M(A(V[j]))
        w_norm = _norm(w)
        h = tnp.zeros(restart + 1, dtype)
        for _ in range(2):       # "twice is enough" (Giraud et al. 2005)
            h_pass = tnp.conj(V) @ w
            w, h = w - h_pass @ V, h + h_pass
        w_next = _norm(w)
        grows = w_next > eps * w_norm      # else the Krylov space is invariant
        V = V.at[j + 1].set(tnp.where(grows, w / tnp.where(grows, w_next, 1), 0))
        h = h.at[j + 1].set(tnp.where(grows, w_next, 0))
        h = lax.fori_loop(0, j, lambda i, h: _rotate_at(h, i, rot_c[i], rot_s[i]), h)
        c_j, s_j, h_j = _givens(h[j], h[j + 1])
        # a zero pivot: M A is singular on the Krylov space; NaN (info -1) where
        # JAX's triangular solve gives inf or NaN and SciPy's raises
        h_j = tnp.where(h_j == 0, np.nan, h_j)
        column = tnp.where(tnp.arange(restart) < j, h[:restart], 0).at[j].set(h_j)
        R = R.at[:, j].set(column)
        g = _rotate_at(g, j, c_j, s_j)
        go = grows & (tnp.abs(g[j + 1]) > ptol) if incremental else grows
        return j + 1, V, R, g, rot_c.at[j].set(c_j), rot_s.at[j].set(s_j), go

    j, V, R, g, *_ = lax.while_loop(
        cond, body, (np.int64(0), basis, tnp.eye(restart, dtype=dtype), g, rot_c, rot_s,
                     np.bool_(True)))
    y = solve_triangular(R, tnp.where(tnp.arange(restart) < j, g[:restart], 0))
    return x + y @ V[:restart]


def _gmres(A, M, b, x0, tol, atol, maxiter, restart, incremental):
    """Restarted GMRES: cycles until the preconditioned residual reaches the
    tolerance or ``maxiter`` cycles are done."""
    b_norm = _norm(b)
    atol = tnp.maximum(tol * b_norm, atol)
    ptol = _norm(M(b)) * tnp.minimum(1.0, _div(atol, b_norm))

    def residual(x):
        r = M(b - A(x))
        r_norm = _norm(r)
        return r / tnp.where(r_norm == 0, 1, r_norm), r_norm

    def cond(c):
        return (c[1] < maxiter) & (c[3] > atol)

    def body(c):
        x, k, u, r_norm = c
        x = _gmres_cycle(A, M, x, u, r_norm, restart, ptol, incremental)
        return (x, k + 1, *residual(x))

    x, k, _, r_norm = lax.while_loop(cond, body, (x0, np.int64(0), *residual(x0)))
    info = tnp.where(tnp.isnan(_norm(x)), -1, _info(r_norm <= atol, k))
    return x, info


def gmres(A: Any, b: Any, x0: Any = None, *, tol: Any = 1e-5, atol: Any = 0.0, restart: Any = 20,
          maxiter: Any = None, M: Any = None, solve_method: Any = "batched") -> Any:
    """Solve ``A x = b`` by restarted GMRES, for a general ``A``
    (``jax.scipy.sparse.linalg.gmres``).

    Left-preconditioned restarted GMRES: each cycle builds an orthonormal basis
    of the Krylov space of ``M A`` (of dimension ``restart``) and moves to the
    least-squares solution in it; cycles repeat until the preconditioned
    residual reaches ``max(tol * norm(b), atol)``.  The least-squares problem
    is reduced by Givens rotations as the basis grows (JAX's ``'batched'``
    method solves normal equations instead: the iterates agree to rounding).
    Derivatives come from implicit differentiation: ``gmres`` solves with ``A``
    or its transpose, accurate when they converge.

    Args:
      A: the operator, any nonsingular one, given as for :func:`cg`.
      b, x0: as for :func:`cg`.
      tol, atol: the relative and absolute tolerances on the preconditioned
        residual ``M (b - A x)``, as for :func:`cg`.
      restart: the dimension of the Krylov space built per cycle (at most
        ``b``'s size).
      maxiter: the maximum number of restart cycles (default ``10 * b``'s size).
      M: a preconditioner approximating ``A``'s inverse, given as ``A``.
      solve_method: ``'batched'`` builds the whole basis of every cycle;
        ``'incremental'`` stops a cycle as soon as the residual estimate
        reaches the tolerance.

    Returns:
      ``(x, info)``: the solution, with ``b``'s structure, and the convergence
      code: 0 converged, the number of cycles done if not, -1 if ``x`` has NaNs
      (as when ``A`` is singular on the Krylov space; JAX returns 0 whenever
      there are no NaNs).

    Examples:
      >>> import numpy as np
      >>> from tangentia.scipy.sparse.linalg import gmres
      >>> A = np.array([[3.0, 1.0], [-1.0, 2.0]])
      >>> gmres(A, np.array([1.0, 1.0]), tol=1e-12)
      (Array([0.14285714, 0.57142857]), Array(0))
    """
    if solve_method not in ("incremental", "batched"):
        raise ValueError(f"invalid solve_method {solve_method}, must be either 'incremental' "
                         f"or 'batched' (gmres: argument solve_method)")
    restart = _count("gmres", "restart", restart, 1)
    if isinstance(restart, core.Tracer):
        raise TypeError("gmres: restart must be a concrete integer (it sets the size of the "
                        "Krylov basis), got a traced value")
    size = sum(int(np.size(x)) for x in tree_flatten(b)[0])
    return _solver("gmres", _gmres, A, b, x0, tol, atol, maxiter, M,
                   restart=max(1, min(restart, size)),
                   incremental=solve_method == "incremental")
