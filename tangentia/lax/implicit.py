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

It is a primitive (``custom_linear_solve``, as in JAX) carrying the four programs ``matvec``,
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

from typing import TYPE_CHECKING

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
from ..tree_util import tree_flatten, tree_leaves, tree_map, tree_structure, tree_unflatten
from .._messages import fun_name as _fun_name, types_str as _types_str
from .._traceback_util import api_boundary

if TYPE_CHECKING:
    from typing import Any

__all__ = ["custom_linear_solve", "custom_root", "linear_solve_p"]


def _check_args(api, funs, what, leaves):
    """Each ``(name, fn)`` of ``funs`` must be callable and each of ``leaves`` (of the
    argument ``what``) an array (JAX's wording first)."""
    for name, fn in funs:
        if not callable(fn):
            raise TypeError(f"'{type(fn).__name__}' object is not callable ({api}: {name} must "
                            "be callable)")
    for i, x in enumerate(leaves):
        if not core.is_array_like(x):
            core.as_array(x, f"{api}: leaf {i} of {what}")


def _check_output(api, role, fn, expected_name, got, ref, shapes=True):
    """``got`` (what ``fn``, the argument ``role``, returned) must be a pytree of arrays
    with ``ref``'s structure (JAX's TypeError) and, if ``shapes``, its leaf shapes
    (JAX's ValueError)."""
    got_tree, ref_tree = tree_structure(got), tree_structure(ref)
    detail = (f"({api}: {role} ({_fun_name(fn)}) returned {_types_str(got)}; {expected_name} is "
              f"{_types_str(ref)})")
    if got_tree != ref_tree:
        raise TypeError(f"{role}() output pytree structure must match {expected_name}, got "
                        f"{got_tree} and {ref_tree}. {detail}")
    for i, x in enumerate(tree_leaves(got)):
        if not core.is_array_like(x):
            raise TypeError(f"{api}: {role} must return arrays, but output leaf {i} is a "
                            f"{type(x).__name__} {detail}")
    got_shapes = [np.shape(x) for x in tree_leaves(got)]
    ref_shapes = [np.shape(x) for x in tree_leaves(ref)]
    if shapes and got_shapes != ref_shapes:
        raise ValueError(f"{role}() output shapes must match {expected_name}, got {got_shapes} "
                         f"and {ref_shapes} {detail}")


def _split_aux(out, api, role, fn, has_aux):
    if not has_aux:
        return out, None
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise ValueError(f"{role}() produced a pytree with structure {tree_structure(out)}, but "
                         "a pytree tuple with auxiliary output was expected because has_aux was "
                         f"set to True ({api}: with has_aux=True, {role} ({_fun_name(fn)}) must "
                         f"return a pair (solution, aux), got {_types_str(out)})")
    return out[0], out[1]


def _trace_program(fun, avals, name):
    """Trace flat ``fun`` to a program whose constants are leading inputs."""
    return pe.trace_to_program(fun, avals, name=name, label="custom_linear_solve")


@api_boundary
def custom_linear_solve(matvec: Any, b: Any, solve: Any, transpose_solve: Any = None,
                        symmetric=False, has_aux=False) -> Any:
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
        is returned too and is not differentiated (``transpose_solve``'s aux,
        of any structure, is dropped).

    Returns:
      ``x`` (``(x, aux)`` if ``has_aux``).

    Raises:
      TypeError: a function is not callable, ``b`` is not a pytree of arrays,
        ``matvec``/``solve``/``transpose_solve`` return another pytree
        structure than ``b``, or reverse mode without ``transpose_solve``
        (JAX's wording first).
      ValueError: they return other shapes than ``b``'s, or ``has_aux`` is
        set and ``solve`` does not return a pair.

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
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    b_leaves, b_tree = tree_flatten(b)
    _check_args(api, (("matvec", matvec), ("solve", solve))
                + ((("transpose_solve", transpose_solve),) if transpose_solve is not None else ()),
                "b", b_leaves)
    b_avals = [core.get_aval(x).strip_weak() for x in b_leaves]
    num_b = len(b_leaves)
    aux_store = {}

    def as_b(leaves):
        return tree_unflatten(b_tree, list(leaves))

    def flat_matvec(*xs):
        y = matvec(as_b(xs))
        _check_output(api, "matvec", matvec, "b", y, as_b(xs))
        return tree_leaves(y)

    def make_solver(fn, op, role):
        def flat(*bs):
            out = fn(op, as_b(bs))
            x, aux = _split_aux(out, api, role, fn, has_aux)
            _check_output(api, role, fn, "b", x, as_b(bs))
            aux_leaves, aux_tree = tree_flatten(aux)
            aux_store[role] = aux_tree
            return tree_leaves(x) + aux_leaves
        return flat

    mv_j, mv_c = _trace_program(flat_matvec, b_avals, _fun_name(matvec))
    mv_fun = lambda x: as_b(core.eval_jaxpr(mv_j, (), *mv_c, *tree_leaves(x)))  # noqa: E731
    s_j, s_c = _trace_program(make_solver(solve, mv_fun, "solve"), b_avals, _fun_name(solve))
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
            make_solver(transpose_solve, vm_fun, "transpose_solve"), b_avals,
            _fun_name(transpose_solve))
        # Only the solutions must agree (the transpose's aux outputs are dropped, as in JAX).
        if any(a.aval.shape != c.aval.shape or a.aval.dtype != c.aval.dtype
               for a, c in zip(s_j.outvars[:num_b], ts_j.outvars[:num_b])):
            raise TypeError(f"{api}: solve and transpose_solve must return solutions of the same "
                            f"types, got {[v.aval.str_short() for v in s_j.outvars[:num_b]]} and "
                            f"{[v.aval.str_short() for v in ts_j.outvars[:num_b]]}")
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
def custom_root(f: Any, initial_guess: Any, solve: Any, tangent_solve: Any, has_aux=False) -> Any:
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

    Raises:
      TypeError: a function is not callable, or ``f``/``solve``/``tangent_solve``
        return another pytree structure than ``initial_guess`` (as in JAX, only
        the structure is checked: ``f`` may return other shapes).
      ValueError: ``has_aux`` is set and ``solve`` does not return a pair.

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
    _check_args(api, (("f", f), ("solve", solve), ("tangent_solve", tangent_solve)),
                "initial_guess", tree_leaves(initial_guess))

    def f_checked(x):
        y = f(x)
        _check_output(api, "f", f, "initial_guess", y, x, shapes=False)
        return y

    def solve_checked(x0):
        out = solve(f_checked, x0)
        x, _ = _split_aux(out, api, "solve", solve, has_aux)
        _check_output(api, "solve", solve, "initial_guess", x, x0, shapes=False)
        return out

    def lin_solve(x, rhs):
        _, f_jvp = _linearize(f_checked, x)
        out = tangent_solve(f_jvp, rhs)
        _check_output(api, "tangent_solve", tangent_solve, "x", out, rhs, shapes=False)
        return out

    f_conv, f_consts = closure_convert(f_checked, initial_guess)
    s_conv, s_consts = closure_convert(solve_checked, initial_guess)
    ls_conv, ls_consts = closure_convert(lin_solve, initial_guess, initial_guess)

    def root(f_c, s_c, ls_c, x0):
        return s_conv(x0, *s_c)

    root.__name__ = f"custom_root({_fun_name(solve)})"
    root = custom_jvp(root)

    def root_jvp(primals, tangents):
        # f(p, x*(p)) = 0  =>  df/dp dp + df/dx dx* = 0  =>  dx* = -(df/dx)^{-1} df/dp dp
        f_c, s_c, ls_c, x0 = primals
        f_c_dot = tangents[0]
        out = root(f_c, s_c, ls_c, x0)
        x, aux = _split_aux(out, api, "solve", solve, has_aux)
        _, rhs = _jvp(lambda *p: f_conv(x, *p), tuple(f_c), tuple(f_c_dot))
        x_dot = tree_map(E.neg, ls_conv(x, rhs, *ls_c))
        if has_aux:
            return out, (x_dot, tree_map(tnp.zeros_like, aux))
        return out, x_dot

    root.defjvp(root_jvp)
    return root(tuple(f_consts), tuple(s_consts), tuple(ls_consts), initial_guess)
