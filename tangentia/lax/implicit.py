"""Implicit differentiation: ``custom_linear_solve`` and ``custom_root``
(JAX's ``jax.lax.custom_linear_solve`` / ``jax.lax.custom_root`` semantics).

``custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False,
has_aux=False)`` returns ``x = solve(matvec, b)`` where ``matvec`` is the
linear map ``A``; it is differentiated *implicitly* from ``A x = b``:

* forward mode: ``dx = A^{-1} (db - dA x)``, where ``dA x`` is the JVP of
  ``matvec`` with respect to the values it closes over, and ``A^{-1}`` is
  another call of ``solve`` (the solver's internals are never differentiated,
  so ``solve`` may use ``while_loop``, early exits, etc.);
* reverse mode: the transpose of ``b -> A^{-1} b`` is ``transpose_solve`` on
  ``A^T`` (``vecmat``, the transpose of ``matvec``, computed automatically;
  ``symmetric=True`` uses ``matvec`` and ``solve`` themselves).
  ``transpose_solve`` is required for reverse mode unless ``symmetric``.

It is a primitive (``linear_solve``) carrying the four programs ``matvec``,
``vecmat``, ``solve`` and ``transpose_solve``, with JVP, transpose and
batching rules, so it composes with every transformation like JAX's.

``custom_root(f, initial_guess, solve, tangent_solve, has_aux=False)`` returns
the root ``x* = solve(f, initial_guess)`` of ``f(x) = 0``, differentiated by the
implicit function theorem: with ``f`` depending on parameters ``p`` (values it
closes over), ``dx* = -(df/dx)^{-1} (df/dp dp)``, where the linear system is
solved by ``tangent_solve(g, y)`` with ``g`` the linearization of ``f`` at
``x*``.  The solution does not depend differentiably on ``initial_guess``.
For reverse mode ``tangent_solve`` must be linear in ``y`` (e.g. ``y / g(1.0)``
for scalars, or a ``custom_linear_solve``).
"""
from __future__ import annotations

import numpy as np

from .. import core
from ..api import jvp as _jvp
from ..api import linearize as _linearize
from ..api import vjp as _vjp
from ..custom_derivatives import closure_convert, custom_jvp
from ..interpreters import partial_eval as pe
from .. import numpy as tnp
from ..primitives import elementwise as E
from ..primitives.linear_solve import linear_solve_p
from ..tree_util import tree_flatten, tree_leaves, tree_map, tree_unflatten
from .._messages import fun_name as _fun_name, types_str as _types_str
from .._traceback_util import api_boundary

__all__ = ["custom_linear_solve", "custom_root", "linear_solve_p"]


def _check_like(api, fname, what, got, ref, ref_name):
    """``got`` must have the structure and leaf shapes of ``ref``."""
    g_leaves, g_tree = tree_flatten(got)
    r_leaves, r_tree = tree_flatten(ref)
    ok = g_tree == r_tree and all(core.is_array_like(x) for x in g_leaves)
    if ok:
        ok = all(core.get_aval(a).shape == core.get_aval(b).shape
                 for a, b in zip(g_leaves, r_leaves))
    if not ok:
        raise TypeError(
            f"{api}: {fname} must return {what} with the same structure and shapes as "
            f"{ref_name}, but {ref_name} is {_types_str(ref)} and {fname} returned "
            f"{_types_str(got)}")


def _split_aux(out, api, fname, has_aux):
    if not has_aux:
        return out, None
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(f"{api}: with has_aux=True, {fname} must return a pair (solution, aux), "
                        f"got {type(out).__name__}")
    return out[0], out[1]


def _trace_program(fun, avals, name):
    """Trace flat ``fun`` to a program whose constants are leading inputs."""
    return pe.trace_to_program(fun, avals, name=name, label="custom_linear_solve")


@api_boundary
def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False, has_aux=False):
    """Solve ``matvec(x) == b`` as ``x = solve(matvec, b)``, with implicit derivatives.

    Args:
      matvec: the linear function ``x -> A x`` (``x`` has ``b``'s structure).
      b: the right-hand side (a pytree of arrays).
      solve: ``solve(matvec, b) -> x`` (``(x, aux)`` if ``has_aux``); its
        internals are not differentiated.
      transpose_solve: ``transpose_solve(vecmat, b) -> x`` solving
        ``vecmat(x) == b`` with ``vecmat`` the transpose of ``matvec``;
        required for reverse mode unless ``symmetric``.
      symmetric: ``matvec`` is symmetric (``transpose_solve`` defaults to ``solve``).
      has_aux: ``solve`` (and ``transpose_solve``) return ``(x, aux)``; ``aux``
        is returned too and is not differentiated.

    Returns:
      ``x`` (``(x, aux)`` if ``has_aux``).

    Examples:
      A linear solve whose derivatives reuse the solver (here for a
      symmetric matrix, so ``solve`` serves for the transpose too):

      >>> import numpy as np, tangentia as tg, tangentia.numpy as tnp
      >>> from tangentia import lax
      >>> A = np.array([[2.0, 1.0], [1.0, 3.0]])
      >>> def solve(b):
      ...     return lax.custom_linear_solve(lambda x: A @ x, b,
      ...                                    lambda matvec, b: tnp.linalg.solve(A, b),
      ...                                    symmetric=True)
      >>> solve(np.ones(2))
      Array([0.4, 0.2])
      >>> tg.jacrev(solve)(np.ones(2))   # the inverse of A
      Array([[ 0.6, -0.2],
             [-0.2,  0.4]])
    """
    api = "custom_linear_solve"
    for what, fn in (("matvec", matvec), ("solve", solve)):
        if not callable(fn):
            raise TypeError(f"{api}: {what} must be callable, got {type(fn).__name__}")
    if transpose_solve is not None and not callable(transpose_solve):
        raise TypeError(f"{api}: transpose_solve must be callable or None, got "
                        f"{type(transpose_solve).__name__}")
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    b_leaves, b_tree = tree_flatten(b)
    for i, x in enumerate(b_leaves):
        if not core.is_array_like(x):
            raise TypeError(f"{api}: b must be a pytree of arrays, but leaf {i} is a "
                            f"{type(x).__name__}")
    b_avals = [core.get_aval(x).strip_weak() for x in b_leaves]
    num_b = len(b_leaves)
    aux_store = {}

    def as_b(leaves):
        return tree_unflatten(b_tree, list(leaves))

    def flat_matvec(*xs):
        y = matvec(as_b(xs))
        _check_like(api, f"matvec {_fun_name(matvec)}", "a vector", y, as_b(xs), "b")
        return tree_leaves(y)

    def make_solver(fn, op, fname, key):
        def flat(*bs):
            out = fn(op, as_b(bs))
            x, aux = _split_aux(out, api, fname, has_aux)
            _check_like(api, fname, "a solution", x, as_b(bs), "b")
            aux_leaves, aux_tree = tree_flatten(aux)
            aux_store[key] = aux_tree
            return tree_leaves(x) + aux_leaves
        return flat

    mv_j, mv_c = _trace_program(flat_matvec, b_avals, _fun_name(matvec))
    mv_fun = lambda x: as_b(core.eval_jaxpr(mv_j, (), *mv_c, *tree_leaves(x)))  # noqa: E731
    s_j, s_c = _trace_program(make_solver(solve, mv_fun, f"solve {_fun_name(solve)}", "solve"),
                              b_avals, _fun_name(solve))
    if transpose_solve is None:
        vm_j, vm_c, ts_j, ts_c = None, [], None, []
    else:
        if symmetric:
            vm_j, vm_c = mv_j, mv_c
        else:
            def flat_vecmat(*ys):
                zeros = [np.zeros(a.shape, a.dtype) for a in b_avals]
                _, pullback = _vjp(lambda *xs: core.eval_jaxpr(mv_j, (), *mv_c, *xs), *zeros)
                return list(pullback(list(ys)))
            vm_j, vm_c = _trace_program(flat_vecmat, b_avals, f"transpose({_fun_name(matvec)})")
        vm_fun = lambda y: as_b(core.eval_jaxpr(vm_j, (), *vm_c, *tree_leaves(y)))  # noqa: E731
        ts_j, ts_c = _trace_program(
            make_solver(transpose_solve, vm_fun, f"transpose_solve {_fun_name(transpose_solve)}",
                        "transpose_solve"), b_avals, _fun_name(transpose_solve))
        if has_aux and aux_store["transpose_solve"] != aux_store["solve"]:
            raise TypeError(f"{api}: with has_aux=True, solve and transpose_solve must return aux "
                            f"values of the same structure, got {aux_store['solve']} and "
                            f"{aux_store['transpose_solve']}")
        n_out = len(s_j.outvars)
        if len(ts_j.outvars) != n_out or any(
                a.aval.shape != c.aval.shape or a.aval.dtype != c.aval.dtype
                for a, c in zip(s_j.outvars, ts_j.outvars)):
            raise TypeError(f"{api}: solve and transpose_solve must return values of the same "
                            f"types, got {[v.aval.str_short() for v in s_j.outvars]} and "
                            f"{[v.aval.str_short() for v in ts_j.outvars]}")
    b_leaves = [x if isinstance(x, core.Tracer) else np.asarray(x) for x in b_leaves]
    consts = [mv_c, vm_c, s_c, ts_c]
    outs = linear_solve_p.bind(*[c for cs in consts for c in cs], *b_leaves,
                               jaxprs=(mv_j, vm_j, s_j, ts_j),
                               const_lengths=tuple(len(cs) for cs in consts), num_b=num_b)
    x = as_b(outs[:num_b])
    if has_aux:
        return x, tree_unflatten(aux_store["solve"], list(outs[num_b:]))
    return x


# ===========================================================================
# custom_root


@api_boundary
def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """The root of ``f`` found by ``solve``, differentiated implicitly.

    Args:
      f: the function whose root is sought; ``f(x)`` has ``x``'s structure.
      initial_guess: the starting point passed to ``solve`` (not differentiated).
      solve: ``solve(f, initial_guess) -> x*`` with ``f(x*) == 0`` (``(x*, aux)``
        if ``has_aux``); its internals are not differentiated.
      tangent_solve: ``tangent_solve(g, y) -> x`` solving ``g(x) == y`` for the
        linear map ``g`` (the linearization of ``f`` at the root).
      has_aux: ``solve`` returns ``(x*, aux)``; ``aux`` is not differentiated.

    Returns:
      ``x*`` (``(x*, aux)`` if ``has_aux``).

    Examples:
      A square root by Newton's method, differentiated implicitly (the
      iterations of ``solve`` are not differentiated):

      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> from tangentia import lax
      >>> def newton(f, x0):
      ...     step = lambda x: x - f(x) / tg.grad(f)(x)
      ...     return lax.while_loop(lambda x: tnp.abs(f(x)) > 1e-12, step, x0)
      >>> def sqrt(a):
      ...     return lax.custom_root(lambda x: x ** 2 - a, 1.0, newton,
      ...                            lambda g, y: y / g(1.0))
      >>> sqrt(2.0)
      Array(1.41421356)
      >>> tg.grad(sqrt)(2.0)   # 1 / (2 sqrt(2))
      Array(0.35355339)
    """
    api = "custom_root"
    for what, fn in (("f", f), ("solve", solve), ("tangent_solve", tangent_solve)):
        if not callable(fn):
            raise TypeError(f"{api}: {what} must be callable, got {type(fn).__name__}")
    g_leaves = tree_leaves(initial_guess)
    for i, x in enumerate(g_leaves):
        if not core.is_array_like(x):
            raise TypeError(f"{api}: initial_guess must be a pytree of arrays, but leaf {i} is "
                            f"a {type(x).__name__}")
    fname, sname, tname = _fun_name(f), _fun_name(solve), _fun_name(tangent_solve)

    def f_checked(x):
        y = f(x)
        _check_like(api, f"f ({fname})", "a value", y, x, "its input x (like initial_guess)")
        return y

    def solve_checked(x0):
        out = solve(f_checked, x0)
        x, _ = _split_aux(out, api, f"solve ({sname})", has_aux)
        _check_like(api, f"solve ({sname})", "a solution", x, x0, "initial_guess")
        return out

    def lin_solve(x, rhs):
        _, f_jvp = _linearize(f_checked, x)
        out = tangent_solve(f_jvp, rhs)
        _check_like(api, f"tangent_solve ({tname})", "a solution", out, rhs,
                    "its right-hand side (like initial_guess)")
        return out

    f_conv, f_consts = closure_convert(f_checked, initial_guess)
    s_conv, s_consts = closure_convert(solve_checked, initial_guess)
    ls_conv, ls_consts = closure_convert(lin_solve, initial_guess, initial_guess)

    def root(f_c, s_c, ls_c, x0):
        return s_conv(x0, *s_c)

    root.__name__ = f"custom_root({sname})"
    root = custom_jvp(root)

    def root_jvp(primals, tangents):
        # f(p, x*(p)) = 0  =>  df/dp dp + df/dx dx* = 0  =>  dx* = -(df/dx)^{-1} df/dp dp
        f_c, s_c, ls_c, x0 = primals
        f_c_dot = tangents[0]
        out = root(f_c, s_c, ls_c, x0)
        x, aux = _split_aux(out, api, sname, has_aux)
        _, rhs = _jvp(lambda *p: f_conv(x, *p), tuple(f_c), tuple(f_c_dot))
        x_dot = tree_map(E.neg, ls_conv(x, rhs, *ls_c))
        if has_aux:
            return out, (x_dot, tree_map(tnp.zeros_like, aux))
        return out, x_dot

    root.defjvp(root_jvp)
    return root(tuple(f_consts), tuple(s_consts), tuple(ls_consts), initial_guess)
