"""The strong-Wolfe line search of ``tangentia.scipy.optimize`` (JAX's
``jax._src.scipy.optimize.line_search``): Algorithms 3.5 and 3.6 of Nocedal and
Wright, *Numerical Optimization* (1999), written as staged loops so that it
runs under ``jit`` and ``vmap`` and takes the same steps as JAX's.

Both zoom phases are traced in every bracketing step and the one not needed
is skipped by its loop condition (as JAX does): the loop bodies must be
programs, not Python branches on values.
"""
from __future__ import annotations

from typing import NamedTuple


from ... import lax
from ... import numpy as tnp
from ...api import value_and_grad

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any


def _where_replace(state, cond, **updates):
    """``state`` with the fields ``updates`` taken where ``cond`` holds."""
    return state._replace(**{k: tnp.where(cond, v, getattr(state, k))
                             for k, v in updates.items()})


def _cubicmin(a, fa, fpa, b, fb, c, fc):
    """The minimizer of the cubic through ``(a, fa)``, ``(b, fb)``, ``(c, fc)``
    with slope ``fpa`` at ``a``."""
    db, dc = b - a, c - a
    denom = (db * dc) ** 2 * (db - dc)
    rb, rc = fb - fa - fpa * db, fc - fa - fpa * dc
    A = (dc ** 2 * rb - db ** 2 * rc) / denom
    B = (-dc ** 3 * rb + db ** 3 * rc) / denom
    return a + (-B + tnp.sqrt(B * B - 3.0 * A * fpa)) / (3.0 * A)


def _quadmin(a, fa, fpa, b, fb):
    """The minimizer of the parabola through ``(a, fa)``, ``(b, fb)`` with slope
    ``fpa`` at ``a``."""
    db = b - a
    B = (fb - fa - fpa * db) / db ** 2
    return a - fpa / (2.0 * B)


class _Zoom(NamedTuple):
    done: object
    failed: object
    j: object
    a_lo: object
    phi_lo: object
    dphi_lo: object
    a_hi: object
    phi_hi: object
    dphi_hi: object
    a_rec: object
    phi_rec: object
    a_star: object
    phi_star: object
    dphi_star: object
    g_star: object
    nfev: object
    ngev: object


def _zoom(phi_dphi, wolfe_one, wolfe_two, a_lo, phi_lo, dphi_lo, a_hi, phi_hi, dphi_hi, g_0,
          skip):
    """Shrink the bracket ``[a_lo, a_hi]`` until a step satisfies both Wolfe
    conditions (cubic, else quadratic, else bisection steps); ``skip`` leaves the
    state as it starts."""
    state = _Zoom(done=tnp.asarray(False), failed=tnp.asarray(False), j=0, a_lo=a_lo,
                  phi_lo=phi_lo, dphi_lo=dphi_lo, a_hi=a_hi, phi_hi=phi_hi, dphi_hi=dphi_hi,
                  a_rec=(a_lo + a_hi) / 2.0, phi_rec=(phi_lo + phi_hi) / 2.0,
                  a_star=tnp.asarray(1.0, tnp.result_type(a_lo)), phi_star=phi_lo,
                  dphi_star=dphi_lo, g_star=g_0, nfev=0, ngev=0)
    state = state._replace(**{k: tnp.asarray(v) for k, v in state._asdict().items()})

    def body(s):
        dalpha = s.a_hi - s.a_lo
        lo, hi = tnp.minimum(s.a_hi, s.a_lo), tnp.maximum(s.a_hi, s.a_lo)
        threshold = 1e-5 if tnp.finfo(tnp.result_type(dalpha)).bits < 64 else 1e-10
        s = s._replace(failed=s.failed | (dalpha <= threshold))
        a_cubic = _cubicmin(s.a_lo, s.phi_lo, s.dphi_lo, s.a_hi, s.phi_hi, s.a_rec, s.phi_rec)
        use_cubic = (s.j > 0) & (a_cubic > lo + 0.2 * dalpha) & (a_cubic < hi - 0.2 * dalpha)
        a_quad = _quadmin(s.a_lo, s.phi_lo, s.dphi_lo, s.a_hi, s.phi_hi)
        use_quad = ~use_cubic & (a_quad > lo + 0.1 * dalpha) & (a_quad < hi - 0.1 * dalpha)
        a_j = tnp.where(use_cubic, a_cubic,
                        tnp.where(use_quad, a_quad, (s.a_lo + s.a_hi) / 2.0))
        phi_j, dphi_j, g_j = phi_dphi(a_j)
        phi_j = phi_j.astype(s.phi_lo.dtype)
        dphi_j = dphi_j.astype(s.dphi_lo.dtype)
        g_j = g_j.astype(s.g_star.dtype)
        s = s._replace(nfev=s.nfev + 1, ngev=s.ngev + 1)

        hi_to_j = wolfe_one(a_j, phi_j) | (phi_j >= s.phi_lo)
        star_to_j = wolfe_two(dphi_j) & ~hi_to_j
        hi_to_lo = (dphi_j * (s.a_hi - s.a_lo) >= 0.0) & ~hi_to_j & ~star_to_j
        lo_to_j = ~hi_to_j & ~star_to_j
        s = _where_replace(s, hi_to_j, a_hi=a_j, phi_hi=phi_j, dphi_hi=dphi_j, a_rec=s.a_hi,
                           phi_rec=s.phi_hi)
        s = _where_replace(s, star_to_j, a_star=a_j, phi_star=phi_j, dphi_star=dphi_j,
                           g_star=g_j)
        s = s._replace(done=s.done | star_to_j)
        s = _where_replace(s, hi_to_lo, a_hi=s.a_lo, phi_hi=s.phi_lo, dphi_hi=s.dphi_lo,
                           a_rec=s.a_hi, phi_rec=s.phi_hi)
        s = _where_replace(s, lo_to_j & ~hi_to_lo, a_rec=s.a_lo, phi_rec=s.phi_lo)
        s = _where_replace(s, lo_to_j, a_lo=a_j, phi_lo=phi_j, dphi_lo=dphi_j)
        return s._replace(j=s.j + 1, failed=s.failed | (s.j + 1 >= 30))

    return lax.while_loop(lambda s: ~s.done & ~skip & ~s.failed, body, state)


class _LineSearch(NamedTuple):
    done: object
    failed: object
    i: object
    a_i1: object
    phi_i1: object
    dphi_i1: object
    nfev: object
    ngev: object
    a_star: object
    phi_star: object
    dphi_star: object
    g_star: object


class LineSearchResults(NamedTuple):
    """The result of :func:`line_search` (JAX's ``_LineSearchResults``).

    Fields:

    * ``failed``: whether no step satisfying the strong Wolfe conditions was found.
    * ``nit``: the number of bracketing iterations.
    * ``nfev``: the number of function evaluations.
    * ``ngev``: the number of gradient evaluations.
    * ``k``: ``nit + 1``.
    * ``a_k``: the step length.
    * ``f_k``: the function value at ``xk + a_k * pk``.
    * ``g_k``: the gradient there.
    * ``status``: 0 (success), 1 (zoom failed) or 3 (``maxiter`` reached).
    """
    failed: object
    nit: object
    nfev: object
    ngev: object
    k: object
    a_k: object
    f_k: object
    g_k: object
    status: object


def line_search(f: Any, xk: Any, pk: Any, old_fval: Any = None, old_old_fval: Any = None,
                gfk: Any = None, c1: Any = 1e-4, c2: Any = 0.9, maxiter: Any = 20) -> Any:
    """An inexact line search along ``pk`` from ``xk`` satisfying the strong Wolfe
    conditions (Nocedal and Wright, Algorithm 3.5), as JAX's.

    Args:
      f: the objective ``f(x) -> real scalar``, differentiable.
      xk: the starting point (a 1-D array).
      pk: the search direction (assumed a descent direction).
      old_fval: ``f(xk)``, if known (with ``gfk``).
      old_old_fval: the previous iterate's value, used for the first step length.
      gfk: the gradient of ``f`` at ``xk``, if known (with ``old_fval``).
      c1: the sufficient-decrease constant of the first Wolfe condition.
      c2: the curvature constant of the second.
      maxiter: the maximum number of bracketing iterations.

    Returns:
      A :class:`LineSearchResults`.
    """
    dtype = tnp.result_type(xk, pk, 1.0)
    xk, pk = tnp.asarray(xk, dtype), tnp.asarray(pk, dtype)
    vg = value_and_grad(f)

    def phi_dphi(t):
        phi, g = vg(xk + tnp.asarray(t, dtype) * pk)
        return phi, tnp.real(tnp.dot(g, pk)), g

    evaluated = old_fval is None or gfk is None
    if evaluated:
        phi_0, dphi_0, gfk = phi_dphi(0.0)
    else:
        phi_0 = tnp.asarray(old_fval)
        dphi_0 = tnp.real(tnp.dot(gfk, pk))
    if old_old_fval is not None:
        candidate = 1.01 * 2 * (phi_0 - old_old_fval) / dphi_0
        start = tnp.where(candidate > 1, 1.0, candidate)
    else:
        start = tnp.asarray(1.0)

    def wolfe_one(a_i, phi_i):
        return phi_i > phi_0 + c1 * a_i * dphi_0

    def wolfe_two(dphi_i):
        return tnp.abs(dphi_i) <= -c2 * dphi_0

    state = _LineSearch(done=False, failed=False, i=1, a_i1=0.0, phi_i1=phi_0, dphi_i1=dphi_0,
                        nfev=int(evaluated), ngev=int(evaluated), a_star=0.0, phi_star=phi_0,
                        dphi_star=dphi_0, g_star=gfk)
    state = state._replace(**{k: tnp.asarray(v) for k, v in state._asdict().items()})

    def body(s):
        a_i = tnp.where(s.i == 1, start, s.a_i1 * 2.0)
        phi_i, dphi_i, g_i = phi_dphi(a_i)
        s = s._replace(nfev=s.nfev + 1, ngev=s.ngev + 1)
        to_zoom1 = wolfe_one(a_i, phi_i) | ((phi_i >= s.phi_i1) & (s.i > 1))
        to_i = wolfe_two(dphi_i) & ~to_zoom1
        to_zoom2 = (dphi_i >= 0.0) & ~to_zoom1 & ~to_i
        zoom1 = _zoom(phi_dphi, wolfe_one, wolfe_two, s.a_i1, s.phi_i1, s.dphi_i1, a_i, phi_i,
                      dphi_i, gfk, ~to_zoom1)
        zoom2 = _zoom(phi_dphi, wolfe_one, wolfe_two, a_i, phi_i, dphi_i, s.a_i1, s.phi_i1,
                      s.dphi_i1, gfk, ~to_zoom2)
        s = s._replace(nfev=s.nfev + zoom1.nfev + zoom2.nfev,
                       ngev=s.ngev + zoom1.ngev + zoom2.ngev)
        for taken, z in ((to_zoom1, zoom1), (to_zoom2, zoom2)):
            s = _where_replace(s, taken, a_star=z.a_star, phi_star=z.phi_star,
                               dphi_star=z.dphi_star, g_star=z.g_star)
            s = s._replace(failed=s.failed | (taken & z.failed))
        s = _where_replace(s, to_i, a_star=a_i, phi_star=phi_i, dphi_star=dphi_i, g_star=g_i)
        return s._replace(done=s.done | to_zoom1 | to_i | to_zoom2, i=s.i + 1, a_i1=a_i,
                          phi_i1=phi_i, dphi_i1=dphi_i)

    state = lax.while_loop(lambda s: ~s.done & (s.i <= maxiter) & ~s.failed, body, state)
    status = tnp.where(state.failed, 1, tnp.where(state.i > maxiter, 3, 0))
    a_k = state.a_star
    if tnp.finfo(a_k.dtype).bits != 64:
        a_k = tnp.where(tnp.abs(a_k) < 1e-8, tnp.sign(a_k) * 1e-8, a_k)
    return LineSearchResults(failed=state.failed | ~state.done, nit=state.i - 1,
                             nfev=state.nfev, ngev=state.ngev, k=state.i, a_k=a_k,
                             f_k=state.phi_star, g_k=state.g_star, status=status)


__all__ = ["LineSearchResults", "line_search"]
