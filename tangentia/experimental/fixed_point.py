"""``fixed_point(f, a, x_guess)``: the solution of ``x = f(a, x)`` by iteration,
differentiated implicitly.

The forward pass iterates ``x <- f(a, x)`` in a ``lax.while_loop`` until the
largest change of any element is at most ``tol`` (or ``max_iter`` iterations).
Reverse mode is a ``custom_vjp`` (implicit differentiation of the fixed
point): at the fixed point ``x* = f(a, x*)``, so with ``v`` the solution of
the adjoint fixed-point equation ``v = g + v . df/dx(a, x*)`` (found by the
same iteration) the cotangent of ``a`` is ``v . df/da(a, x*)``.  Only
``(a, x*)`` are saved, so reverse-mode memory does not grow with the number
of iterations, and the loop itself is never differentiated.  The backward
pass calls ``fixed_point`` again, so higher-order reverse mode works too.

``x_guess`` only selects the fixed point: the result's derivative with
respect to it is zero.  Values ``f`` closes over are differentiated like
``a`` (they are hoisted into explicit arguments).
"""
from __future__ import annotations

import sys
import warnings
from typing import NamedTuple

import numpy as np

from .. import core
from .. import numpy as tnp
from ..api import vjp as _vjp
from ..custom_derivatives import closure_convert, custom_vjp
from ..lax import while_loop
from ..tree_util import tree_flatten, tree_leaves, tree_map, tree_unflatten
from .._messages import fun_name as _fun_name, types_str as _types_str
from .._traceback_util import api_boundary

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any
    from ..typing import ArrayLike

__all__ = ["FixedPointInfo", "fixed_point"]


def _max_abs_diff(a, b):
    diffs = [tnp.max(tnp.abs(x - y)) if core.get_aval(x).size else tnp.zeros(())
             for x, y in zip(tree_leaves(a), tree_leaves(b))]
    out = diffs[0]
    for d in diffs[1:]:
        out = tnp.maximum(out, d)
    return out


def _iterate(f, a, x_guess, tol, max_iter):
    """``x <- f(a, x)`` until ``max|x_new - x| <= tol`` or ``max_iter`` applications.

    Returns ``(x, iterations, residual)``: the last iterate, the number of
    applications of ``f`` and the last change ``max|x_new - x|``.  A NaN
    change stops the loop (it can only stay NaN)."""
    def cond_fun(state):
        i, _, res = state
        return (i < max_iter) & (res > tol)

    def body_fun(state):
        i, x, _ = state
        x_new = f(a, x)
        return i + 1, x_new, _change(x_new, x)

    def _change(x_new, x):  # float64 whatever the leaves' dtypes
        return tnp.asarray(_max_abs_diff(x_new, x), np.float64)

    x1 = f(a, x_guess)
    state = (np.int64(1), x1, _change(x1, x_guess))
    n, x_star, res = while_loop(cond_fun, body_fun, state)
    return x_star, n, res


def _fp_impl(f, tol, max_iter, a, x_guess):
    return _iterate(f, a, x_guess, tol, max_iter)


_fp_impl.__name__ = _fp_impl.__qualname__ = "fixed_point"
_fixed_point = custom_vjp(_fp_impl, nondiff_argnums=(0, 1, 2))


def _fp_fwd(f, tol, max_iter, a, x_guess):
    out = _fixed_point(f, tol, max_iter, a, x_guess)
    return out, (a, out[0])


def _fp_bwd(f, tol, max_iter, res, g):
    # Only the solution is differentiated: the iteration count and the
    # residual are diagnostics (their cotangents are dropped).
    a, x_star = res
    g = g[0]
    _, pull_x = _vjp(lambda x: f(a, x), x_star)

    def adjoint_step(packed, v):
        # v <- g + v . df/dx(a, x*)
        g_, = packed
        vx, = pull_x(v)
        return tree_map(lambda u, w: u + w, g_, vx)

    adjoint_step.__name__ = f"adjoint of {_fun_name(f)}"
    v = fixed_point(adjoint_step, (g,), g, tol=tol, max_iter=max_iter)
    _, pull_a = _vjp(lambda a_: f(a_, x_star), a)
    a_bar, = pull_a(v)
    return a_bar, tree_map(tnp.zeros_like, x_star)


_fixed_point.defvjp(_fp_fwd, _fp_bwd)


class FixedPointInfo(NamedTuple):
    """How :func:`fixed_point` stopped (``return_info=True``).

    Fields:

    * ``iterations``: the number of applications of ``f`` (an int64 array).
    * ``residual``: the last change ``max|x_new - x|`` over all elements (a float64
      array; NaN if the iterates became NaN).
    * ``converged``: ``residual <= tol`` (a bool array; False when ``tol < 0``).

    They are diagnostics: not differentiated (zero derivatives).
    """
    iterations: object
    residual: object
    converged: object


def _concrete(x):
    """The NumPy value of ``x`` if it has one (eagerly, also under ``grad``), else None."""
    if not isinstance(x, core.Tracer):
        return np.asarray(x)
    try:
        return np.asarray(x.concrete_value("fixed_point"))
    except (core.ConcretizationTypeError, TypeError):
        return None


def _user_stacklevel():
    """The ``stacklevel`` of the innermost caller outside tangentia, NumPy and functools."""
    frame, level = sys._getframe(2), 2
    while frame is not None and (frame.f_globals.get("__name__") or "").split(".", 1)[0] in (
            "tangentia", "numpy", "functools", "contextlib"):
        frame, level = frame.f_back, level + 1
    return level


def _warn_not_converged(name, n, res, tol, max_iter):
    n, res = _concrete(n), _concrete(res)
    if n is None or res is None or tol < 0 or res <= tol:
        return
    how = (f"iterate {int(n)} was NaN" if np.isnan(res) else
           f"it stopped after max_iter={max_iter} iterations with the last change "
           f"max|x_new - x| = {float(res):.3g} above tol={tol:.3g}")
    warnings.warn(
        f"fixed_point({name}, ...): did not converge: {how}; the result is not a fixed point. "
        "Raise max_iter, start closer, or check that f is a contraction near the fixed point; "
        "return_info=True gives the iteration count and the residual.",
        RuntimeWarning, stacklevel=_user_stacklevel())


@api_boundary
def fixed_point(f: Any, a: ArrayLike, x_guess: Any, *, tol: Any = 1e-10, max_iter: Any = 1000,
                return_info: Any = False) -> Any:
    """The fixed point ``x = f(a, x)`` reached by iterating ``f`` from ``x_guess``.

    Args:
      f: ``f(a, x) -> x``, returning a value with ``x_guess``'s structure,
        shapes and dtypes; it should be a contraction in ``x`` near the
        fixed point.
      a: the parameters (a pytree of arrays); ``fixed_point`` is
        differentiable with respect to them (reverse mode, by implicit
        differentiation).
      x_guess: the starting point (a pytree of float arrays).
      tol: stop when no element changes by more than ``tol`` in an iteration
        (``tol < 0`` disables the test: exactly ``max_iter`` applications).
      max_iter: the maximum number of applications of ``f`` (the adjoint
        iteration of the backward pass uses the same ``tol`` and ``max_iter``).
        The iteration also stops at a NaN iterate.
      return_info: also return a :class:`FixedPointInfo` (iteration count,
        last change, whether it converged).  Our addition (JAX has no
        ``fixed_point``; the one in its custom-VJP tutorial returns no such
        information).

    Returns:
      the fixed point, with ``x_guess``'s structure (the last iterate if the
      iteration did not converge); with ``return_info``, ``(x, info)``.

    Warns:
      RuntimeWarning: when the iteration stopped at ``max_iter`` (or at a NaN
      iterate) with a last change above ``tol`` (not with ``tol < 0``), naming
      ``f``, ``max_iter``, the residual and ``tol``; also for the adjoint
      iteration of reverse mode.  Only where the values are concrete: eagerly,
      also under ``grad``/``jvp``.  Under ``jit`` and ``vmap`` the values are
      traced and no warning is possible (a host callback per batch element
      would cost more than the check); use ``return_info=True`` and test
      ``info.converged`` there.

    Examples:
      >>> from tangentia.experimental.fixed_point import fixed_point
      >>> x, info = fixed_point(lambda a, x: a * x + 1.0, 0.5, 0.0, return_info=True)
      >>> print(round(float(x), 8), bool(info.converged), int(info.iterations) < 50)
      2.0 True True
    """
    name = _fun_name(f)
    if not callable(f):
        raise TypeError(f"fixed_point: f must be callable, got {type(f).__name__}")
    for what, tree in (("a", a), ("x_guess", x_guess)):
        for i, leaf in enumerate(tree_leaves(tree)):
            if not core.is_array_like(leaf):
                raise TypeError(f"fixed_point({name}, ...): {what} must be a pytree of arrays, "
                                f"but leaf {i} is a {type(leaf).__name__}")
    try:
        tol = float(tol)
        max_iter = int(max_iter)
    except core.ConcretizationTypeError:
        raise TypeError("fixed_point: tol and max_iter must be concrete (non-traced) "
                        "numbers") from None
    x_leaves, x_tree = tree_flatten(x_guess)
    x_leaves = [x if isinstance(x, core.Tracer) else np.asarray(x) for x in x_leaves]
    x_leaves = [tnp.asarray(x, np.float64) if core.get_aval(x).dtype.kind not in "fc" else x
                for x in x_leaves]
    x_guess = tree_unflatten(x_tree, x_leaves)
    x_avals = [core.get_aval(x) for x in x_leaves]

    def checked(a, x):
        out = f(a, x)
        leaves, tree = tree_flatten(out)
        ok = tree == x_tree and all(core.is_array_like(o) for o in leaves)
        if ok:
            ok = all(core.get_aval(o).shape == v.shape for o, v in zip(leaves, x_avals))
        if not ok:
            raise TypeError(
                f"fixed_point: f ({name}) must return a value with the same structure and "
                f"shapes as x_guess, but x_guess is {_types_str(x_guess)} and {name}(a, x) "
                f"returned {_types_str(out)}")
        return tree_unflatten(tree, [o if core.get_aval(o).dtype == v.dtype
                                     else tnp.asarray(o, v.dtype)
                                     for o, v in zip(leaves, x_avals)])

    checked.__name__ = name
    converted, consts = closure_convert(checked, a, x_guess)

    def f_full(params, x):
        a_, hoisted = params
        return converted(a_, x, *hoisted)

    f_full.__name__ = name
    x, n, res = _fixed_point(f_full, tol, max_iter, (a, tuple(consts)), x_guess)
    _warn_not_converged(name, n, res, tol, max_iter)
    if return_info:
        return x, FixedPointInfo(iterations=n, residual=res, converged=res <= tol)
    return x
