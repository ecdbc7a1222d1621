"""Unconstrained minimization (``tangentia.scipy.optimize``), mirroring
``jax.scipy.optimize``: ``minimize`` with methods ``"BFGS"`` (Nocedal and
Wright, Algorithm 6.1) and ``"l-bfgs-experimental-do-not-rely-on-this"``
(Algorithm 7.5, complex variables as Sorber et al. 2012), both over the
strong-Wolfe :func:`line_search`.  The iterations are staged loops, so
``minimize`` runs under ``jit`` and ``vmap`` and takes JAX's steps.
"""
from __future__ import annotations

from collections import namedtuple
from typing import NamedTuple

import numpy as np

from ... import lax
from ... import numpy as tnp
from ...api import value_and_grad
from ._line_search import LineSearchResults, line_search

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any
    from ...typing import ArrayLike


class OptimizeResults(NamedTuple):
    """The result of :func:`minimize`.

    Fields:

    * ``x``: the final solution (the last iterate when it did not converge).
    * ``success``: ``status == 0``, as in SciPy: the gradient norm fell below ``gtol``
      with no line-search failure.  A NaN gradient never counts as converged.
    * ``status``: the solver's return code, JAX's codes.  BFGS: 0 converged, 1 maximum
      iterations reached, 3 zoom failed, 4 saddle point reached, 5 maximum line-search
      iterations reached (3, 4 and 5 are SciPy's 2, "Desired error not necessarily
      achieved due to precision loss", which also covers SciPy's 3, a NaN result: the line
      search fails on NaN values), -1 undefined.  A line-search failure takes precedence
      over the iteration limit, as in SciPy (JAX reports 1 when both happen at the last
      iteration, and 0 with ``success=False`` when the gradient is small at a failed line
      search).  L-BFGS: 0 converged, 1 maximum iterations, 2/3 maximum
      function/gradient evaluations, 4 insufficient progress (``ftol``; SciPy's
      L-BFGS-B counts that as success, JAX and we do not), 5 line search failed.
    * ``fun``: the final function value.
    * ``jac``: the final gradient.
    * ``hess_inv``: the final inverse-Hessian estimate (``None`` for L-BFGS).
    * ``nfev``: the number of function evaluations.
    * ``njev``: the number of gradient evaluations.
    * ``nit``: the number of iterations.
    """
    x: object
    success: object
    status: object
    fun: object
    jac: object
    hess_inv: object
    nfev: object
    njev: object
    nit: object


def minimize(fun: Callable, x0: ArrayLike, args: tuple = (), *, method: str,
             tol: float | None = None, options: Mapping[str, Any] | None = None) -> Any:
    """Minimize a scalar function of one or more variables, as
    ``jax.scipy.optimize.minimize``: gradients come from ``grad``; ``method`` is
    required; the line search is JAX's, so results may differ from SciPy's.

    Args:
      fun: the objective, ``fun(x, *args) -> scalar`` with ``x`` of shape ``(n,)``.
      x0: the initial guess, a real 1-D array.
      args: a tuple of extra arguments passed to ``fun``.
      method: ``"BFGS"`` or ``"l-bfgs-experimental-do-not-rely-on-this"``
        (case-insensitive).
      tol: unused (as in JAX); use the method's options.
      options: a dict of method options: ``maxiter``, ``norm``, ``gtol``,
        ``line_search_maxiter`` (BFGS); ``maxiter``, ``norm``, ``maxcor``, ``ftol``,
        ``gtol``, ``maxfun``, ``maxgrad``, ``maxls`` (L-BFGS).

    Returns:
      An :class:`OptimizeResults`.

    Examples:
      >>> import tangentia.numpy as tnp
      >>> from tangentia.scipy.optimize import minimize
      >>> r = minimize(lambda x: tnp.sum((x - 3.0) ** 2), tnp.zeros(2), method="BFGS")
      >>> r.x.round(6).tolist(), bool(r.success)
      ([3.0, 3.0], True)
    """
    options = {} if options is None else options
    if not isinstance(args, tuple):
        raise TypeError("args argument to jax.scipy.optimize.minimize must be a tuple, got "
                        f"{args}")

    def objective(x):
        return fun(x, *args)

    solvers = {"bfgs": _minimize_bfgs,
               "l-bfgs-experimental-do-not-rely-on-this": _minimize_lbfgs}
    solver = solvers.get(method.lower())
    if solver is not None:
        r = solver(objective, x0, **options)
        return OptimizeResults(x=r.x_k, success=r.status == 0, status=r.status,
                               fun=r.f_k, jac=r.g_k, hess_inv=getattr(r, "H_k", None),
                               nfev=r.nfev, njev=r.ngev, nit=r.k)
    raise ValueError(f"Method {method} not recognized (tangentia.scipy.optimize.minimize: "
                     "expected 'BFGS' or 'l-bfgs-experimental-do-not-rely-on-this')")


def _arrays(state):
    return state._replace(**{k: tnp.asarray(v) for k, v in state._asdict().items()})


# The loop states: the fields both methods keep, then each one's own.
_COMMON = ("converged", "failed", "k", "nfev", "ngev", "x_k", "f_k", "g_k")
_BFGS = namedtuple("_BFGS", _COMMON + ("H_k", "old_old_fval", "status", "line_search_status"))
_LBFGS = namedtuple("_LBFGS", _COMMON + ("s_history", "y_history", "rho_history", "gamma",
                                         "status", "ls_status"))


def _minimize_bfgs(fun, x0, maxiter=None, norm=np.inf, gtol=1e-5, line_search_maxiter=10):
    x0 = tnp.asarray(x0)
    maxiter = np.size(x0) * 200 if maxiter is None else maxiter
    d = x0.shape[0]
    f_0, g_0 = value_and_grad(fun)(x0)
    state = _arrays(_BFGS(converged=tnp.linalg.norm(g_0, ord=norm) < gtol, failed=False, k=0,
                          nfev=1, ngev=1, x_k=x0, f_k=f_0, g_k=g_0,
                          H_k=tnp.eye(d, dtype=x0.dtype),
                          old_old_fval=f_0 + tnp.linalg.norm(g_0) / 2, status=0,
                          line_search_status=0))

    def body(s):
        p_k = -tnp.dot(s.H_k, s.g_k)
        ls = line_search(fun, s.x_k, p_k, old_fval=s.f_k, old_old_fval=s.old_old_fval,
                         gfk=s.g_k, maxiter=line_search_maxiter)
        s_k = ls.a_k * p_k
        y_k = ls.g_k - s.g_k
        rho_k = tnp.reciprocal(tnp.dot(y_k, s_k))
        w = tnp.eye(d, dtype=rho_k.dtype) - rho_k * s_k[:, None] * y_k[None, :]
        H = w @ s.H_k @ w.T + rho_k * s_k[:, None] * s_k[None, :]
        return s._replace(converged=tnp.linalg.norm(ls.g_k, ord=norm) < gtol,
                          failed=ls.failed, k=s.k + 1, nfev=s.nfev + ls.nfev,
                          ngev=s.ngev + ls.ngev, x_k=s.x_k + s_k, f_k=ls.f_k, g_k=ls.g_k,
                          H_k=tnp.where(tnp.isfinite(rho_k), H, s.H_k), old_old_fval=s.f_k,
                          line_search_status=ls.status)

    s = lax.while_loop(lambda s: ~s.converged & ~s.failed & (s.k < maxiter), body, state)
    # SciPy's order: a line-search failure, then the iteration limit (success is status 0).
    status = tnp.where(s.failed, 2 + s.line_search_status, tnp.where(
        s.converged, 0, tnp.where(s.k >= maxiter, 1, -1)))
    return s._replace(status=status)


def _minimize_lbfgs(fun, x0, maxiter=None, norm=np.inf, maxcor=10, ftol=2.220446049250313e-09,
                    gtol=1e-05, maxfun=None, maxgrad=None, maxls=20):
    x0 = tnp.asarray(x0)
    d, dtype = len(x0), x0.dtype
    if maxiter is None and maxfun is None and maxgrad is None:
        maxiter = d * 200
    maxiter, maxfun, maxgrad = (np.inf if v is None else v for v in (maxiter, maxfun, maxgrad))
    f_0, g_0 = value_and_grad(fun)(x0)
    state = _arrays(_LBFGS(converged=False, failed=False, k=0, nfev=1, ngev=1, x_k=x0, f_k=f_0,
                           g_k=g_0, s_history=tnp.zeros((maxcor, d), dtype),
                           y_history=tnp.zeros((maxcor, d), dtype),
                           rho_history=tnp.zeros((maxcor,), dtype),
                           gamma=tnp.asarray(1.0, tnp.real(x0).dtype), status=0, ls_status=0))

    def body(s):
        p_k = _two_loop_recursion(s)
        ls = line_search(fun, s.x_k, p_k, old_fval=s.f_k, gfk=s.g_k, maxiter=maxls)
        s_k = tnp.asarray(ls.a_k).astype(p_k.dtype) * p_k
        y_k = ls.g_k - s.g_k
        rho_k_inv = tnp.real(tnp.dot(y_k, s_k))
        rho_k = tnp.reciprocal(rho_k_inv).astype(y_k.dtype)
        gamma = rho_k_inv / tnp.real(tnp.dot(tnp.conj(y_k), y_k))
        status = tnp.where(s.f_k - ls.f_k < ftol, 4, 0)
        status = tnp.where(s.ngev >= maxgrad, 3, status)
        status = tnp.where(s.nfev >= maxfun, 2, status)
        status = tnp.where(s.k >= maxiter, 1, status)
        status = tnp.where(ls.failed, 5, status)
        converged = tnp.linalg.norm(ls.g_k, ord=norm) < gtol
        return s._replace(
            converged=converged, failed=(status > 0) & ~converged, k=s.k + 1,
            nfev=s.nfev + ls.nfev, ngev=s.ngev + ls.ngev, x_k=(s.x_k + s_k).astype(s.x_k.dtype),
            f_k=ls.f_k.astype(s.f_k.dtype), g_k=ls.g_k.astype(s.g_k.dtype),
            s_history=_push(s.s_history, s_k), y_history=_push(s.y_history, y_k),
            rho_history=_push(s.rho_history, rho_k), gamma=gamma.astype(s.gamma.dtype),
            status=tnp.where(converged, 0, status), ls_status=ls.status)

    return lax.while_loop(lambda s: ~s.converged & ~s.failed, body, state)


def _push(history, new):
    """``history`` shifted up by one row, ``new`` last."""
    return tnp.roll(history, -1, axis=0).at[-1].set(new)


def _two_loop_recursion(s):
    """The L-BFGS search direction ``-H g`` from the stored pairs (Algorithm 7.4)."""
    size = s.rho_history.shape[0]
    used = tnp.minimum(s.k, size)

    def backward(j, carry):
        q, alphas = carry
        i = size - 1 - j
        a_i = s.rho_history[i] * tnp.real(tnp.dot(tnp.conj(s.s_history[i]), q)).astype(
            s.rho_history.dtype)
        return q - a_i * tnp.conj(s.y_history[i]), alphas.at[i].set(a_i)

    q, alphas = lax.fori_loop(0, used, backward,
                              (-tnp.conj(s.g_k), tnp.zeros_like(s.rho_history)))

    def forward(j, q):
        i = size - used + j
        b_i = s.rho_history[i] * tnp.real(tnp.dot(s.y_history[i], q)).astype(
            s.rho_history.dtype)
        return q + (alphas[i] - b_i) * s.s_history[i]

    return lax.fori_loop(0, used, forward, s.gamma * q)


__all__ = ["LineSearchResults", "OptimizeResults", "line_search", "minimize"]
