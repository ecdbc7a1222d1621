"""Numerical checks of derivatives: ``check_grads``, ``check_custom_rules`` and helpers.

``check_grads(f, args, order, modes)`` checks forward mode against central
finite differences and reverse mode against finite differences through the
transposition identity ``<u, J v> == <J^T u, v>``, recursively up to ``order``.

``check_custom_rules(f, args)`` checks every custom derivative rule that
differentiating ``f`` reaches against automatic differentiation of that
function's own implementation (and finite differences where that
implementation is not differentiable).
"""
from __future__ import annotations

import numpy as np

from . import api, core, dtypes
from .custom_derivatives import custom_jvp_call_p, custom_vjp_call_p
from .debug import debug_callback_p
from .primitives.call import jit_p
from .primitives.linear_solve import linear_solve_p, solve_operands
from .tree_util import tree_flatten, tree_map, tree_unflatten

_DEFAULT_EPS = 1e-4

# JAX's default tolerances of gradient checks, by the dtype of the values compared
# (jax.test_util.check_grads): a float16 result cannot agree with finite differences to
# float64's 1e-5
_GRAD_TOL = {np.dtype(np.float16): 1e-2, np.dtype(dtypes.bfloat16): 1e-1,
             np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5,
             np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5}


def _rand_like(rng, x):
    x = np.asarray(x)
    if not dtypes.is_inexact(x.dtype):
        return np.zeros(x.shape, dtype=np.float64)
    if x.dtype.kind == "c":   # directions off the real axis too
        return (rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)).astype(x.dtype)
    return rng.standard_normal(x.shape).astype(x.dtype)   # (bfloat16 too)


def _wide(x):
    """``x`` in float64, or complex128 if it is complex."""
    return np.asarray(x, np.complex128 if np.iscomplexobj(x) else np.float64)


def _inner(a, b):
    """The real part of the bilinear pairing (JAX's convention for complex vjps:
    ``Re <u, J v> == Re <J^T u, v>``, without conjugation)."""
    la, _ = tree_flatten(a)
    lb, _ = tree_flatten(b)
    return float(sum(np.real(np.sum(_wide(x) * _wide(y))) for x, y in zip(la, lb)))


def _add(a, b, scale):
    def add(x, y):
        x = np.asarray(x)
        if not dtypes.is_inexact(x.dtype):
            return x
        return (_wide(x) + scale * _wide(y)).astype(x.dtype)   # the point in x's dtype
    return tree_map(add, a, b)


def numerical_jvp(f, primals, tangents, eps=_DEFAULT_EPS):
    """Central finite difference of ``f`` at ``primals`` along ``tangents``.

    Args:
      f: the function.
      primals: a tuple of its arguments.
      tangents: a tuple of directions, one per argument.
      eps: the step.

    Returns:
      ``(f(primals + eps t) - f(primals - eps t)) / (2 eps)``, computed in
      float64.
    """
    fp = f(*_add(primals, tangents, eps))
    fm = f(*_add(primals, tangents, -eps))
    return tree_map(lambda a, b: _safe_sub(_wide(a), _wide(b)) / (2 * eps), fp, fm)


def _safe_sub(a, b):
    """``a - b`` with ``inf - inf == 0`` where they are equal (an output that stays infinite
    does not move), as JAX's numerical_jvp."""
    with np.errstate(invalid="ignore"):
        return np.where(a == b, 0.0, a - b)


# ---------------------------------------------------------------------------
# check_grads, check_jvp, check_vjp: jax.test_util's behaviour (same signatures, same
# random directions, same finite differences in the inputs' dtypes, same tolerances per
# element count), so that a check passes or fails here as it does with JAX.

EPS = _DEFAULT_EPS
_PY_SCALAR_DTYPES = {bool: np.dtype(np.bool_), int: np.dtype(np.int64),
                     float: np.dtype(np.float64), complex: np.dtype(np.complex128)}


def _dtype_of(x):
    dt = getattr(x, "dtype", None)
    if dt is not None:
        return np.dtype(dt)
    return _PY_SCALAR_DTYPES.get(type(x)) or np.asarray(x).dtype


def _as_input(x, value):
    """``value`` in ``x``'s dtype; a Python scalar if ``x`` is one."""
    value = np.asarray(value, _dtype_of(x))
    return value.item() if type(x) in _PY_SCALAR_DTYPES else value


def _randn_like(rs, x):
    """Standard normal values from ``rs`` (a RandomState) in ``x``'s shape and dtype, drawn
    as JAX's check_grads draws them (the real part, then the imaginary part); zeros of
    float0 for an integer or boolean ``x`` (after the same draws)."""
    shape, dt = np.shape(x), _dtype_of(x)
    if dt.kind == "c":
        re = np.asarray(rs.randn(*shape), dt)
        v = re + dt.type(1j) * np.asarray(rs.randn(*shape), dt)
    else:
        v = rs.randn(*shape)
    if not dtypes.is_inexact(dt):
        return np.zeros(shape, dtypes.float0)
    return _as_input(x, v)


def _numerical_jvp_in_dtype(f, primals, tangents, eps):
    """``numerical_jvp`` computed as JAX's check_grads does: steps, points and the
    difference in the values' own dtypes (float32 stays float32)."""
    def step(x, t, sign):
        if not dtypes.is_inexact(_dtype_of(x)):
            return x
        d = np.multiply(t, np.asarray(sign * eps, _dtype_of(t)), dtype=_dtype_of(t))
        return _as_input(x, np.asarray(x) + d)

    def diff(a, b):
        dt = _dtype_of(a)
        with np.errstate(invalid="ignore"):
            d = np.where(np.equal(a, b), np.asarray(0, dt), np.subtract(a, b, dtype=dt))
        return np.multiply(d, np.asarray(0.5 / eps, dt), dtype=dt)

    fp = f(*tree_map(lambda x, t: step(x, t, 1), primals, tangents))
    fm = f(*tree_map(lambda x, t: step(x, t, -1), primals, tangents))
    return tree_map(diff, fp, fm)


def _tol_for(dt, tol):
    if tol is not None and not isinstance(tol, dict):
        return tol
    if dt == dtypes.float0 or not dtypes.is_inexact(dt):
        return 0
    table = dict(_GRAD_TOL)
    table.update({np.dtype(k): v for k, v in (tol or {}).items()})
    return table.get(dt, table[np.dtype(np.float64)])


def _assert_close(xs, ys, atol, rtol, what):
    """Each pair of leaves within ``atol`` and ``rtol`` of their dtypes (the looser of the
    two), both multiplied by the leaf's number of elements, as JAX's check_close."""
    def close(x, y):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape, f"{what}: shapes {x.shape} and {y.shape} differ"
        if x.dtype == dtypes.float0 or y.dtype == dtypes.float0:
            return
        a = max(_tol_for(x.dtype, atol), _tol_for(y.dtype, atol)) * x.size
        r = max(_tol_for(x.dtype, rtol), _tol_for(y.dtype, rtol)) * y.size
        up = lambda v: v.astype(np.float32) if v.dtype == dtypes.bfloat16 else v  # noqa: E731
        kw = {k: v for k, v in (("atol", a), ("rtol", r)) if v}
        with np.errstate(invalid="ignore"):
            np.testing.assert_allclose(up(x), up(y), err_msg=what, **kw)
    tree_map(close, xs, ys)


def _conj(tree):
    return tree_map(lambda x: x if not dtypes.is_inexact(_dtype_of(x))
                    else _as_input(x, np.conj(x)), tree)


def _inner_product(xs, ys):
    """Re <x, y> (x conjugated) over the leaves, integer and float0 leaves left out."""
    total = 0.0
    for x, y in zip(tree_flatten(xs)[0], tree_flatten(ys)[0]):
        if dtypes.is_inexact(_dtype_of(x)) and dtypes.is_inexact(_dtype_of(y)):
            total = total + np.real(np.dot(np.conj(np.ravel(x)), np.ravel(y)))
    return total


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    """Check a forward-mode derivative against central finite differences, along one
    random direction (``jax.test_util.check_jvp``).

    Args:
      f: the function, checked at ``f(*args)``.
      f_jvp: ``f_jvp(primals, tangents) -> (primal_out, tangent_out)``, usually
        ``functools.partial(tangentia.jvp, f)``.
      args: a tuple of its arguments.
      atol: the absolute tolerance: a number, or a dict from dtype to number updating
        the defaults (see ``check_grads``).
      rtol: the relative tolerance, as ``atol``.
      eps: the finite-difference step.
      err_msg: a prefix of the error message.

    Raises:
      AssertionError: the values or their dtypes disagree.
    """
    args = tuple(args)
    tangent = _directions(np.random.RandomState(0), args)
    v_out, t_out = f_jvp(args, tangent)
    _same_dtypes(v_out, t_out, f"{err_msg} tangent dtype")
    want = f(*args)
    _same_dtypes(v_out, want, f"{err_msg} primal dtype")
    num = _numerical_jvp_in_dtype(f, args, tangent, eps)
    _assert_close(v_out, want, atol, rtol, f"{err_msg} primal" if err_msg else "primal")
    _assert_close(t_out, num, atol, rtol, f"{err_msg} tangent" if err_msg else "tangent")


def _directions(rs, tree):
    return tree_map(lambda x: _randn_like(rs, x), tree)


def _same_dtypes(xs, ys, what):
    def same(x, y):
        dx, dy = _dtype_of(x), _dtype_of(y)
        if dx != dy and not (dy == dtypes.float0 and not dtypes.is_inexact(dx)):
            raise AssertionError(f"{what}: {dx} and {dy}")
    tree_map(same, xs, ys)


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    """Check a reverse-mode derivative: ``<J^T u, v>`` from ``f_vjp`` against ``<u, J v>``
    by central finite differences, for one random ``v`` and ``u``
    (``jax.test_util.check_vjp``).

    Args:
      f: the function, checked at ``f(*args)``.
      f_vjp: ``f_vjp(*args) -> (out, pullback)``, usually
        ``functools.partial(tangentia.vjp, f)``.
      args: a tuple of its arguments.
      atol: the absolute tolerance (as ``check_jvp``'s).
      rtol: the relative tolerance (as ``check_jvp``'s).
      eps: the finite-difference step.
      err_msg: a prefix of the error message.

    Raises:
      AssertionError: the values disagree.
    """
    args = tuple(args)
    rs = np.random.RandomState(0)
    v_out, pullback = f_vjp(*args)
    _assert_close(v_out, f(*args), atol, rtol, f"{err_msg} primal" if err_msg else "primal")
    tangent = _directions(rs, args)
    tangent_out = _numerical_jvp_in_dtype(f, args, tangent, eps)
    cotangent = _directions(rs, v_out)
    cotangent_out = _conj(pullback(_conj(cotangent)))
    _assert_close(_inner_product(tangent, cotangent_out),
                  _inner_product(tangent_out, cotangent), atol, rtol,
                  f"{err_msg} cotangent projection" if err_msg else "cotangent projection")


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Check ``f``'s derivatives up to ``order`` against finite differences
    (``jax.test_util.check_grads``, with its random directions and tolerances).

    Forward mode compares ``jvp`` with central finite differences along a random
    direction; reverse mode compares ``<J^T u, v>`` from ``vjp`` with ``<u, J v>`` by
    finite differences; "lin" checks ``linearize``.  Higher orders check the same of
    ``(primals, tangents) -> jvp(f, primals, tangents)`` at ``(args, args)`` and of
    ``args -> vjp(f, *args)[1](f(*args))``.  As in JAX, the directions are drawn from
    ``numpy.random.RandomState(0)`` afresh in each check, the finite differences are
    computed in the values' dtypes, and each tolerance is multiplied by the number of
    elements compared.

    Args:
      f: the function (arrays or pytrees in and out).
      args: a tuple of its arguments (the point of the check).
      order: the highest order of derivatives checked.
      modes: "fwd", "rev" and/or "lin".
      atol: the absolute tolerance: a number, or a dict from dtype to number
        updating JAX's defaults by the dtype of the values compared (float64
        and complex128 1e-5, float32 2e-3, complex64 1e-3, float16 1e-2,
        bfloat16 1e-1).
      rtol: the relative tolerance, as ``atol``.
      eps: the finite-difference step (default 1e-4).

    Returns:
      None.

    Raises:
      AssertionError: a derivative disagrees with finite differences.
      ValueError: an unknown mode.

    Examples:
      >>> import tangentia.numpy as tnp
      >>> from tangentia.test_util import check_grads
      >>> check_grads(tnp.sin, (0.5,), order=2)
      >>> check_grads(lambda x: tnp.sum(tnp.tanh(x) ** 2), (tnp.arange(3.0),), order=1,
      ...             modes=["rev"])
    """
    if isinstance(modes, str):
        modes = (modes,)
    for m in modes:
        if m not in ("fwd", "rev", "lin"):
            raise ValueError(f"check_grads: unknown mode {m!r}; expected 'fwd', 'rev' and/or "
                             "'lin'")
    eps = eps or EPS

    def jvp_from_linearize(f, primals, tangents):
        out, f_lin = api.linearize(f, *primals)
        return out, f_lin(*tangents)

    def check_forward(f, fj, args, k, what):
        check_jvp(f, fj, args, atol, rtol, eps, what)
        if k > 1:
            check(fj, (args, args), k - 1, what)

    def check(f, args, k, msg):
        if "fwd" in modes:
            check_forward(f, lambda p, t, f=f: api.jvp(f, p, t), args, k,
                          f"JVP of {msg}" if msg else "JVP")
        if "rev" in modes:
            what = f"VJP of {msg}" if msg else "VJP"
            check_vjp(f, lambda *xs: api.vjp(f, *xs), args, atol, rtol, eps, what)
            if k > 1:
                def f_vjp(*xs, f=f):
                    out, pullback = api.vjp(f, *xs)
                    return pullback(out)
                check(f_vjp, args, k - 1, what)
        if "lin" in modes:
            check_forward(f, lambda p, t, f=f: jvp_from_linearize(f, p, t), args, k,
                          f"LIN of {msg}" if msg else "LIN")

    check(f, tuple(args), order, "")


# ---------------------------------------------------------------------------
# check_custom_rules
#
# ``f`` is staged once into a program.  For each custom function N that the
# program calls (custom_jvp, custom_vjp, custom_gradient; inside loops, branches,
# jit and other custom functions; ``custom_linear_solve`` counts as one, named
# so), two copies of the program are differentiated
# along the same random directions: one where N's calls keep their rule, one
# where they become plain calls of N's own implementation (a ``jit`` call of
# its primal program), so that automatic differentiation goes through it.  In
# both, the custom functions enclosing N are plain calls too (otherwise N's
# rule would never be used), and every other rule is kept, so a difference is
# N's alone.  Rewritten programs are new objects, so no derivative program
# cached for the original is reused.  Where the implementation's derivative is
# unavailable (an error, such as reverse mode through a while_loop) or
# disagrees, finite differences of the program decide.

_CUSTOM_CALLS = (custom_jvp_call_p, custom_vjp_call_p)


def _ruled_call(eqn):
    """``(kind, name, implementation, its inputs)`` when ``eqn`` calls a function
    with a custom derivative rule, else None."""
    if eqn.prim in _CUSTOM_CALLS:
        return (eqn.prim.name.removesuffix("_call"), eqn.params["name"],
                eqn.params["call_jaxpr"], eqn.inputs)
    if eqn.prim is linear_solve_p:  # the implementation is the solve program
        start, stop, first_b = solve_operands(eqn.params["const_lengths"])
        return ("custom_linear_solve", "custom_linear_solve", eqn.params["jaxprs"][2],
                eqn.inputs[start:stop] + eqn.inputs[first_b:])
    return None


def _custom_functions(jaxpr, enclosing=frozenset(), found=None):
    """``{name: (kind, names of the custom functions enclosing its calls)}``, in call order."""
    found = {} if found is None else found
    for eqn in jaxpr.eqns:
        call = _ruled_call(eqn)
        if call is not None:
            kind, name, impl, _ = call
            found[name] = (kind, found.get(name, (kind, frozenset()))[1] | enclosing)
            _custom_functions(impl, enclosing | {name}, found)
        # The other programs of a custom linear solve (matvec, ...) serve its rule.
        if eqn.prim not in _CUSTOM_CALLS:
            for sub in core.subjaxprs(eqn.prim, eqn.params):
                if call is None or sub is not call[2]:
                    _custom_functions(sub, enclosing, found)
    return found


def _without_rules(jaxpr, names, spy=None):
    """``jaxpr`` with the calls of the custom functions ``names`` made plain calls
    of their implementations; ``jaxpr`` itself when it has none.  ``spy=(name,
    fn)``: calls of ``name`` first call ``fn`` with their inputs (a debug callback)."""
    eqns, changed = [], False
    for eqn in jaxpr.eqns:
        call = _ruled_call(eqn)
        if call is not None and call[1] in names:
            _, name, impl, inputs = call
            body = _without_rules(impl, names, spy)
            if spy is not None and spy[0] == name:
                see = core.Eqn(debug_callback_p, list(body.invars), [],
                               {"callback": spy[1], "ordered": False,
                                "tree": tree_flatten((tuple(body.invars), {}))[1]})
                body = core.Jaxpr(body.constvars, body.invars, [see, *body.eqns], body.outvars)
            eqn = core.Eqn(jit_p, list(inputs), eqn.outputs,
                           {"jaxpr": body, "name": name, "backend": None}, eqn.source)
            changed = True
        elif eqn.prim not in _CUSTOM_CALLS:  # (kept custom calls enclose no function in names)
            params = {k: _rewrite_param(v, names, spy) if k in eqn.prim.program_params else v
                      for k, v in eqn.params.items()}
            if any(params[k] is not v for k, v in eqn.params.items()):
                eqn = core.Eqn(eqn.prim, eqn.inputs, eqn.outputs, params, eqn.source)
                changed = True
        eqns.append(eqn)
    return core.Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars) if changed else jaxpr


def _rewrite_param(value, names, spy):
    if isinstance(value, core.ClosedJaxpr):
        new = _without_rules(value.jaxpr, names, spy)
        return value if new is value.jaxpr else core.ClosedJaxpr(new, value.consts)
    if isinstance(value, core.Jaxpr):
        return _without_rules(value, names, spy)
    if isinstance(value, tuple):
        new = tuple(_rewrite_param(v, names, spy) for v in value)
        return value if all(a is b for a, b in zip(new, value)) else new
    return value


def _directional(f, args, level, mode):
    """``(g, w)``: ``g`` is the derivative of ``f`` along ``w``, a fixed random direction
    (forward mode) or output cotangent (reverse mode), the same for every ``f``
    with these shapes at this ``level``."""
    rng = np.random.default_rng(1000 * level + (mode == "rev"))
    if mode == "fwd":
        w = [_rand_like(rng, a) for a in args]
        return lambda *xs: api.jvp(f, tuple(xs), tuple(w))[1], w
    out = f(*args)
    w = type(out)(_rand_like(rng, o) for o in out)  # the output's container
    return lambda *xs: api.vjp(f, *xs)[1](w), w


def _derivative(f, args, order, mode):
    """``(d, g, w)``: the ``order``-th derivative ``d`` of ``f`` at ``args`` along fixed
    random directions; ``g`` is the derivative of one order less, and ``d`` its
    derivative along ``w`` (see ``_directional``)."""
    g = f
    for level in range(order):
        prev = g
        g, w = _directional(prev, args, level, mode)
    return [np.asarray(d) for d in g(*args)], prev, w


def _close(a, b, atol, rtol):
    return len(a) == len(b) and all(
        np.shape(x) == np.shape(y) and np.allclose(np.asarray(x, np.complex128),
                                                   np.asarray(y, np.complex128),
                                                   atol=atol, rtol=rtol, equal_nan=False)
        for x, y in zip(a, b))


def _finite_difference_agrees(got, prev, w, args, mode, atol, rtol):
    """Whether ``got`` (a derivative of ``prev`` at ``args`` along ``w``) matches
    central finite differences; returns ``(agrees, what the differences give)``."""
    if mode == "fwd":
        num = numerical_jvp(prev, tuple(args), tuple(w))
        return _close(got, num, atol, rtol), num
    v = [_rand_like(np.random.default_rng(7), a) for a in args]
    lhs = _inner(w, numerical_jvp(prev, tuple(args), tuple(v)))
    rhs = _inner(got, v)
    ok = abs(lhs - rhs) <= atol * max(1.0, abs(lhs)) + rtol * abs(rhs)
    return ok, f"<u, J v> = {lhs!r} by finite differences, <J^T u, v> = {rhs!r} from the rule"


def _show(values):
    return "; ".join(np.array2string(np.asarray(v), precision=8, threshold=20) for v in values)


def check_custom_rules(fun, args, *, order=1, modes=("fwd", "rev"), atol=None, rtol=None,
                       exclude=()):
    """Check every custom derivative rule that differentiating ``fun`` at ``args`` reaches.

    For each custom function called by ``fun`` (``custom_jvp``, ``custom_vjp``,
    ``custom_gradient``, ``lax.custom_linear_solve`` (named so), at any depth:
    inside loops, branches, ``jit`` and other custom functions), the derivative of ``fun`` computed with that function's
    rule is compared with the derivative computed by automatic differentiation
    of the function's own implementation instead, at the values that reach it,
    in each of ``modes`` ("fwd": ``jvp``, "rev": ``vjp``) and up to ``order``.
    Where the implementation cannot be differentiated (an error, such as reverse
    mode through a ``while_loop``) or its derivative disagrees, central finite
    differences decide.  Custom functions named in ``exclude`` (their
    ``__name__``) are not checked: rules that disagree on purpose, such as
    gradient clipping.  ``fun`` must be traceable (as for ``jit``).

    With ``order`` > 1, the rules reached inside other rules (which only
    differentiating those rules uses) are checked too, by checking the
    derivative of ``fun`` at one order less.

    Args:
      fun: the function whose custom rules are checked (traceable, as for
        ``jit``).
      args: a tuple of its arguments (the point of the check).
      order: the highest order of derivatives checked.
      modes: "fwd" and/or "rev".
      atol: the absolute tolerance (default 1e-5).
      rtol: the relative tolerance (default 1e-5).
      exclude: names (``__name__``) of custom functions not to check.

    Returns:
      ``{name: reference}`` for the functions checked, where ``reference``
      is ``"autodiff"`` or ``"finite differences"`` (the second when any
      comparison needed them).

    Raises:
      AssertionError: naming the first custom function whose rule
        disagrees, with the inputs of its first call and both derivatives
        (of ``fun``, along fixed random directions) and finite differences.
      ValueError: ``modes`` or ``order`` is invalid.

    Examples:
      A ``custom_vjp`` of ``2 x`` whose backward rule claims ``3 g`` is
      flagged, also inside a larger function:

      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> from tangentia.test_util import check_custom_rules
      >>> @tg.custom_vjp
      ... def double(x):
      ...     return 2 * x
      >>> double.defvjp(lambda x: (2 * x, None), lambda res, g: (3 * g,))
      >>> check_custom_rules(lambda x: tnp.sin(double(x)), (0.5,))
      Traceback (most recent call last):
        ...
      AssertionError: check_custom_rules: the custom_vjp rule of 'double' disagrees ...
      >>> check_custom_rules(lambda x: tg.nn.softplus(x) * 2, (0.5,))
      {'softplus': 'autodiff'}
    """
    if isinstance(modes, str):
        modes = (modes,)
    for m in modes:
        if m not in ("fwd", "rev"):
            raise ValueError(f"check_custom_rules: unknown mode {m!r} in modes; expected 'fwd' "
                             "and/or 'rev'")
    if not isinstance(order, (int, np.integer)) or order < 1:
        raise ValueError(f"check_custom_rules: order must be a positive integer, got {order!r}")
    if isinstance(exclude, str):
        exclude = (exclude,)
    atol = 1e-5 if atol is None else atol
    rtol = 1e-5 if rtol is None else rtol
    leaves, in_tree = tree_flatten(tuple(args))
    diff = [i for i, x in enumerate(leaves) if np.asarray(x).dtype.kind in "fc"]
    x = [leaves[i] for i in diff]

    def flat(*xs):
        full = list(leaves)
        for i, v in zip(diff, xs):
            full[i] = v
        out, _ = tree_flatten(fun(*tree_unflatten(in_tree, full)))
        return [o for o in out if core.get_aval(o).dtype.kind in "fc"]

    closed = api.make_jaxpr(flat)(*x)

    def program(names, spy=None):
        jaxpr = _without_rules(closed.jaxpr, names, spy)
        return lambda *xs: core.eval_jaxpr(jaxpr, closed.consts, *xs)

    def inputs_of(name, enclosing):
        """The inputs of the first call of ``name`` when ``fun`` runs at ``args``."""
        seen = []
        program(enclosing | {name}, (name, lambda *a: seen.append(a) if not seen else None))(*x)
        return _show(seen[0]) if seen else "(not called at these arguments)"

    fname = getattr(fun, "__name__", type(fun).__name__)
    report = {}
    if order > 1:
        # Rules inside rules appear in the derivative's program: checked first, so
        # that a wrong inner rule is named rather than the rule that calls it.
        for mode in modes:
            g, _ = _directional(program(frozenset()), x, 0, mode)
            g.__name__ = f"{'jvp' if mode == 'fwd' else 'vjp'}({fname})"
            report.update(check_custom_rules(g, x, order=order - 1, modes=(mode,), atol=atol,
                                             rtol=rtol, exclude=exclude))
    for name, (kind, enclosing) in _custom_functions(closed.jaxpr).items():
        if name in exclude:
            continue
        with_rule, without = program(enclosing), program(enclosing | {name})
        report[name] = "autodiff"
        for mode in modes:
            got, prev, w = _derivative(with_rule, x, order, mode)
            try:
                want = _derivative(without, x, order, mode)[0]
            except Exception as e:  # noqa: BLE001 - the implementation is not differentiable
                want = f"an error: {type(e).__name__}: {str(e).splitlines()[0]}"
            else:
                if _close(got, want, atol, rtol):
                    continue
            ok, num = _finite_difference_agrees(got, prev, w, x, mode, atol, rtol)
            if ok:
                report[name] = "finite differences"
                continue
            what = "jvp" if mode == "fwd" else "vjp"
            raise AssertionError(
                f"check_custom_rules: the {kind} rule of {name!r} disagrees with differentiating "
                f"its own implementation ({what}, order {order}, atol={atol}, rtol={rtol}). "
                f"Derivative of {fname} along fixed random directions:\n"
                f"  with the rule of {name}:  {_show(got)}\n"
                f"  differentiating {name}:   {want if isinstance(want, str) else _show(want)}\n"
                f"  finite differences:  {num if isinstance(num, str) else _show(num)}\n"
                f"  inputs of the first call of {name}:  {inputs_of(name, enclosing)}")
    return report


__all__ = ["check_custom_rules", "check_grads", "check_jvp", "check_vjp", "numerical_jvp"]
