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

import numpy as np

from .. import core
from .. import numpy as tnp
from ..api import vjp as _vjp
from ..custom_derivatives import closure_convert, custom_vjp
from ..lax import while_loop
from ..tree_util import tree_flatten, tree_leaves, tree_map, tree_unflatten
from .._messages import fun_name as _fun_name, types_str as _types_str
from .._traceback_util import api_boundary

__all__ = ["fixed_point"]


def _max_abs_diff(a, b):
    diffs = [tnp.max(tnp.abs(x - y)) if core.get_aval(x).size else tnp.zeros(())
             for x, y in zip(tree_leaves(a), tree_leaves(b))]
    out = diffs[0]
    for d in diffs[1:]:
        out = tnp.maximum(out, d)
    return out


def _iterate(f, a, x_guess, tol, max_iter):
    """``x <- f(a, x)`` until ``max|x_new - x| <= tol`` or ``max_iter`` applications."""
    def cond_fun(state):
        i, x_prev, x = state
        return (i < max_iter) & ~(_max_abs_diff(x, x_prev) <= tol)

    def body_fun(state):
        i, _, x = state
        return i + 1, x, f(a, x)

    x1 = f(a, x_guess)
    _, _, x_star = while_loop(cond_fun, body_fun, (np.int64(1), x_guess, x1))
    return x_star


def _fp_impl(f, tol, max_iter, a, x_guess):
    return _iterate(f, a, x_guess, tol, max_iter)


_fp_impl.__name__ = _fp_impl.__qualname__ = "fixed_point"
_fixed_point = custom_vjp(_fp_impl, nondiff_argnums=(0, 1, 2))


def _fp_fwd(f, tol, max_iter, a, x_guess):
    x_star = _fixed_point(f, tol, max_iter, a, x_guess)
    return x_star, (a, x_star)


def _fp_bwd(f, tol, max_iter, res, g):
    a, x_star = res
    _, pull_x = _vjp(lambda x: f(a, x), x_star)

    def adjoint_step(packed, v):
        # v <- g + v . df/dx(a, x*)
        g_, = packed
        vx, = pull_x(v)
        return tree_map(lambda u, w: u + w, g_, vx)

    v = fixed_point(adjoint_step, (g,), g, tol=tol, max_iter=max_iter)
    _, pull_a = _vjp(lambda a_: f(a_, x_star), a)
    a_bar, = pull_a(v)
    return a_bar, tree_map(tnp.zeros_like, x_star)


_fixed_point.defvjp(_fp_fwd, _fp_bwd)


@api_boundary
def fixed_point(f, a, x_guess, *, tol=1e-10, max_iter=1000):
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

    Returns:
      the fixed point, with ``x_guess``'s structure.
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
    return _fixed_point(f_full, tol, max_iter, (a, tuple(consts)), x_guess)
