"""Numerical checks of derivatives: ``check_grads`` and helpers.

``check_grads(f, args, order, modes)`` checks forward mode against central
finite differences and reverse mode against finite differences through the
transposition identity ``<u, J v> == <J^T u, v>``, recursively up to ``order``.
"""
from __future__ import annotations

import numpy as np

from . import api
from .tree_util import tree_flatten, tree_map, tree_unflatten

_DEFAULT_EPS = 1e-4


def _rand_like(rng, x):
    x = np.asarray(x)
    if x.dtype.kind not in "fc":
        return np.zeros(x.shape, dtype=np.float64)
    return rng.standard_normal(x.shape).astype(x.dtype)


def _inner(a, b):
    la, _ = tree_flatten(a)
    lb, _ = tree_flatten(b)
    return float(sum(np.sum(np.asarray(x, np.float64) * np.asarray(y, np.float64))
                     for x, y in zip(la, lb)))


def _add(a, b, scale):
    return tree_map(lambda x, y: np.asarray(x) + scale * np.asarray(y)
                    if np.asarray(x).dtype.kind in "fc" else x, a, b)


def _check_close(name, got, want, atol, rtol):
    gl, _ = tree_flatten(got)
    wl, _ = tree_flatten(want)
    for g, w in zip(gl, wl):
        g = np.asarray(g, dtype=np.float64)
        w = np.asarray(w, dtype=np.float64)
        if not np.allclose(g, w, atol=atol, rtol=rtol, equal_nan=True):
            err = np.max(np.abs(g - w))
            raise AssertionError(f"{name} mismatch (max abs error {err:.3g}, atol={atol}, "
                                 f"rtol={rtol}):\n got {g}\nwant {w}")


def numerical_jvp(f, primals, tangents, eps=_DEFAULT_EPS):
    """Central finite difference of ``f`` at ``primals`` along ``tangents``."""
    fp = f(*_add(primals, tangents, eps))
    fm = f(*_add(primals, tangents, -eps))
    return tree_map(lambda a, b: (np.asarray(a, np.float64) - np.asarray(b, np.float64))
                    / (2 * eps), fp, fm)


def check_jvp(f, args, atol=1e-5, rtol=1e-5, eps=_DEFAULT_EPS, rng=None):
    rng = rng or np.random.default_rng(0)
    tangents = tree_map(lambda x: _rand_like(rng, x), tuple(args))
    out, tan = api.jvp(f, tuple(args), tangents)
    num = numerical_jvp(f, tuple(args), tangents, eps)
    _check_close("jvp vs finite differences", tan, num, atol, rtol)
    _check_close("jvp primal output", out, f(*args), atol, rtol)


def check_vjp(f, args, atol=1e-5, rtol=1e-5, eps=_DEFAULT_EPS, rng=None):
    rng = rng or np.random.default_rng(1)
    tangents = tree_map(lambda x: _rand_like(rng, x), tuple(args))
    out, pullback = api.vjp(f, *args)
    u = tree_map(lambda o: _rand_like(rng, o), out)
    cts = pullback(u)
    jv = numerical_jvp(f, tuple(args), tangents, eps)
    lhs = _inner(u, jv)
    rhs = _inner(cts, tangents)
    scale = max(1.0, abs(lhs), abs(rhs))
    if not abs(lhs - rhs) <= atol * scale + rtol * abs(rhs):
        raise AssertionError(f"vjp disagrees with finite differences: <u, J v> = {lhs!r} but "
                             f"<J^T u, v> = {rhs!r}")


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Check ``f``'s derivatives up to ``order`` in the given modes.

    ``modes`` may contain "fwd" (jvp vs central finite differences) and "rev"
    (``<u, J v>`` by finite differences vs ``<J^T u, v>`` from vjp).  Raises AssertionError on a mismatch.
    """
    if isinstance(modes, str):
        modes = (modes,)
    for m in modes:
        if m not in ("fwd", "rev"):
            raise ValueError(f"check_grads: unknown mode {m!r}; expected 'fwd' and/or 'rev'")
    atol = 1e-5 if atol is None else atol
    rtol = 1e-5 if rtol is None else rtol
    eps = _DEFAULT_EPS if eps is None else eps
    args = tuple(args)
    rng = np.random.default_rng(0)

    def _check(f, args, k):
        if "fwd" in modes:
            check_jvp(f, args, atol, rtol, eps, rng)
            if k > 1:
                v = tree_map(lambda x: _rand_like(rng, x), args)
                _check(lambda *xs: api.jvp(f, xs, v)[1], args, k - 1)
        if "rev" in modes:
            check_vjp(f, args, atol, rtol, eps, rng)
            if k > 1:
                out = f(*args)
                u = tree_map(lambda o: _rand_like(rng, o), out)
                _check(lambda *xs: api.vjp(f, *xs)[1](u), args, k - 1)

    _check(f, args, order)


__all__ = ["check_grads", "check_jvp", "check_vjp", "numerical_jvp", "tree_unflatten"]
