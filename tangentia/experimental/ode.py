"""Adaptive ODE integration with adjoint reverse-mode derivatives.

``odeint(func, y0, t, *args)`` integrates ``dy/dt = func(y, t, *args)`` from
``t[0]`` and returns ``y`` at every time in ``t`` (stacked along a new leading
axis of every leaf of the state pytree), with the semantics of
``jax.experimental.ode.odeint``:

* the integrator is the explicit Runge-Kutta pair of Dormand and Prince,
  order 5 with an embedded order-4 error estimate, with the usual step-size
  controller (safety factor 0.9, growth limited to 10x and shrinking to 0.2x
  per step) and Hairer's initial step-size heuristic;
* outputs at the requested times come from the method's quartic continuous
  extension (dense output), so the step sequence does not depend on ``t``
  beyond its end points;
* everything is built on ``lax.scan`` (over the output times) and
  ``lax.while_loop`` (over steps), so it runs under ``jit`` and ``vmap``;
* reverse mode integrates the adjoint system ``(y, a, t-cotangent, parameter
  cotangents)`` backwards in time between consecutive output times, so its
  memory does not depend on the number of steps taken;
* forward mode (``jvp``, ``jacfwd``), which JAX's odeint lacks, is the JVP of
  the solver (forward sensitivities).  Both are the two forms of one linear
  step (a ``custom_jvp`` whose tangent is a ``custom_lin`` carrying the
  forward map and its transpose, the adjoint), so they compose: ``hessian``
  of a loss through odeint is forward mode over the adjoint pass;
* like JAX's, ``func`` may return its derivative in another container than
  the state, as long as the flattened values match (a list for an array).

Closed-over arrays of ``func`` are hoisted into explicit arguments
(``closure_convert``), so derivatives with respect to them are correct too.
"""
from __future__ import annotations

import numpy as np

from .. import core, dtypes
from ..core import Tracer
from ..api import jit, jvp as _jvp, vjp as _vjp
from ..custom_derivatives import custom_jvp, custom_lin_p, rule_key
from ..custom_derivatives._closure import _closure_convert, _is_float
from .. import numpy as tnp
from ..lax import scan, stop_gradient, while_loop
from ..tree_util import tree_flatten, tree_leaves, tree_map, tree_unflatten
from .._messages import fun_name as _fun_name, types_str as _types_str
from .._traceback_util import api_boundary

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

__all__ = ["odeint"]


# ---------------------------------------------------------------------------
# Pytree arithmetic


def _lin(terms):
    """``sum(c * tree)`` over ``(c, tree)`` pairs (Python-float ``c`` of 0 skipped)."""
    terms = [(c, t) for c, t in terms if not (isinstance(c, float) and c == 0.0)]

    def comb(*leaves):
        out = None
        for (c, _), x in zip(terms, leaves):
            v = x if (isinstance(c, float) and c == 1.0) else c * x
            out = v if out is None else out + v
        return out
    return tree_map(comb, *[t for _, t in terms])


def _add(a, b):
    return tree_map(lambda x, y: x + y, a, b)


def _rms(tree):
    """Root mean square over all elements of all leaves."""
    leaves = tree_leaves(tree)
    total = sum(tnp.sum(_abs2(x)) for x in leaves)
    n = sum(int(np.prod(core.get_aval(x).shape, dtype=np.int64)) for x in leaves)
    return tnp.sqrt(total / max(n, 1))


def _abs2(x):
    """``|x|**2`` elementwise, real (a complex state's error is measured by its modulus)."""
    if core.get_aval(x).dtype.kind == "c":
        re, im = tnp.real(x), tnp.imag(x)
        return re * re + im * im
    return x * x


def _vdot_tree(a, b):
    return sum(tnp.sum(x * y) for x, y in zip(tree_leaves(a), tree_leaves(b)))


# ---------------------------------------------------------------------------
# The Dormand-Prince 5(4) pair
#
# Butcher tableau (Dormand & Prince 1980; Hairer, Norsett & Wanner, Solving
# ODEs I, table 5.2).  The last stage is evaluated at the new solution (FSAL),
# so its derivative is reused as the first stage of the next step.

_C = (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
_A = (
    (1 / 5,),
    (3 / 40, 9 / 40),
    (44 / 45, -56 / 15, 32 / 9),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
    (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
)
_B5 = (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0)
_B4 = (5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40)
_E = tuple(b5 - b4 for b5, b4 in zip(_B5, _B4))

# Quartic continuous extension: y(t0 + s*h) = y0 + h * sum_i k_i * (P[i] . (s, s^2, s^3, s^4)).
# It matches y0, y1, f0 and f1 at s = 0 and s = 1 and is 4th-order accurate
# inside the step (Shampine 1986; Hairer, Norsett & Wanner, sec. II.6).
_P = (
    (1.0, -8048581381 / 2820520608, 8663915743 / 2820520608, -12715105075 / 11282082432),
    (0.0, 0.0, 0.0, 0.0),
    (0.0, 131558114200 / 32700410799, -68118460800 / 10900136933, 87487479700 / 32700410799),
    (0.0, -1754552775 / 470086768, 14199869525 / 1410260304, -10690763975 / 1880347072),
    (0.0, 127303824393 / 49829197408, -318862633887 / 49829197408,
     701980252875 / 199316789632),
    (0.0, -282668133 / 205662961, 2019193451 / 616988883, -1453857185 / 822651844),
    (0.0, 40617522 / 29380423, -110615467 / 29380423, 69997945 / 29380423),
)

_ORDER = 5  # the order of the propagated (5th-order) solution


def _dopri_step(fn, y, f, t, h):
    """One Dormand-Prince step of size ``h`` from ``(t, y)`` with ``f = fn(y, t)``.

    Returns ``(y_new, f_new, error_estimate, stages)``.
    """
    k = [f]
    for i, row in enumerate(_A):
        yi = _add(y, _lin([(h * a, kj) for a, kj in zip(row, k) if a != 0.0]))
        k.append(fn(yi, t + _C[i + 1] * h))
    y_new = yi  # the last row of the tableau is the 5th-order solution
    err = _lin([(h * e, kj) for e, kj in zip(_E, k) if e != 0.0])
    return y_new, k[-1], err, k


def _interp_coeffs(y, k, h):
    """Coefficients ``(y, c1, c2, c3, c4)`` of the dense-output polynomial
    ``y + c1 s + c2 s^2 + c3 s^3 + c4 s^4`` on the step just taken."""
    cs = tuple(_lin([(h * _P[i][j], k[i]) for i in range(7) if _P[i][j] != 0.0])
               for j in range(4))
    return (y,) + cs


def _interp_eval(coeffs, s):
    y, c1, c2, c3, c4 = coeffs
    return tree_map(lambda a, b1, b2, b3, b4: a + s * (b1 + s * (b2 + s * (b3 + s * b4))),
                    y, c1, c2, c3, c4)


def _error_ratio(err, rtol, atol, y0, y1):
    scaled = tree_map(lambda e, a, b: e / (atol + rtol * tnp.maximum(tnp.abs(a), tnp.abs(b))),
                      err, y0, y1)
    return _rms(scaled)


def _next_step(h, ratio, safety=0.9, grow=10.0, shrink=0.2):
    """Standard controller: ``h * clip(safety * ratio**(-1/5), shrink, grow)``;
    a rejected step (ratio > 1) is never enlarged."""
    lo = tnp.where(ratio < 1.0, 1.0, shrink)
    safe_ratio = tnp.where(ratio > 0.0, ratio, 1.0)
    factor = tnp.minimum(grow, tnp.maximum(safety * safe_ratio ** (-1.0 / _ORDER), lo))
    return tnp.where(ratio == 0.0, h * grow, h * factor)


def _initial_step(fn, t0, y0, f0, rtol, atol):
    """Hairer's heuristic (Solving ODEs I, sec. II.4) for the first step size."""
    scale = tree_map(lambda y: atol + tnp.abs(y) * rtol, y0)
    d0 = _rms(tree_map(lambda y, s: y / s, y0, scale))
    d1 = _rms(tree_map(lambda f, s: f / s, f0, scale))
    small = (d0 < 1e-5) | (d1 < 1e-5)
    h0 = tnp.where(small, 1e-6, 0.01 * d0 / tnp.where(small, 1.0, d1))
    y1 = _add(y0, _lin([(h0, f0)]))
    f1 = fn(y1, t0 + h0)
    d2 = _rms(tree_map(lambda a, b, s: (a - b) / s, f1, f0, scale)) / h0
    dmax = tnp.maximum(d1, d2)
    tiny = dmax <= 1e-15
    h1 = tnp.where(tiny, tnp.maximum(1e-6, h0 * 1e-3),
                   (0.01 / tnp.where(tiny, 1.0, dmax)) ** (1.0 / _ORDER))
    return tnp.minimum(100.0 * h0, h1)


def _cast_like(tree, ref):
    """``tree`` with the leaf dtypes of ``ref`` (states keep their dtype)."""
    def cast(x, r):
        want = core.get_aval(r).dtype
        return x if core.get_aval(x).dtype == want else tnp.asarray(x, want)
    return tree_map(cast, tree, ref)


def _all_finite(tree):
    """Whether every element of every leaf of ``tree`` is finite (a 0-d bool)."""
    out = None
    for x in tree_leaves(tree):
        ok = tnp.all(tnp.isfinite(x))
        out = ok if out is None else out & ok
    return out


def _too_small(h, t):
    """Whether the step ``h`` is below ten times the spacing of floating-point
    numbers at ``t`` (SciPy's "Required step size is less than spacing between
    numbers"): such a step can no longer advance ``t``.  NaN counts as too small.
    A test with no derivative: ``t`` may carry a tangent (odeint's grads with respect
    to the times), and nextafter has no differentiation rule (as in JAX)."""
    t = stop_gradient(t)
    return ~(h >= 10.0 * tnp.abs(tnp.nextafter(t, tnp.asarray(np.inf, t.dtype)) - t))


def _integrate(func, rtol, atol, mxstep, hmax, y0, ts, args):
    """The primal integrator: ``y`` at every time in ``ts`` (leading axis).

    The solver always stops: besides reaching each output time and ``mxstep``,
    it fails when the state or the error estimate of a step is not finite
    (the solution blew up, or ``func`` returned NaN or inf) or when the step
    size falls below the spacing of floating-point numbers at ``t`` (steps
    creeping towards a finite-time singularity).  A failed solve does not
    step again: the output at the time not reached and every later output
    are NaN (as JAX's), and cost no steps.
    """
    def fn(y, t):
        return func(y, t, *args)

    t0 = ts[0]
    f0 = fn(y0, t0)
    h = tnp.clip(_initial_step(fn, t0, y0, f0, rtol, atol), 0.0, hmax)
    dtype = core.get_aval(t0).dtype
    h = tnp.asarray(h, dtype)

    def to_target(carry, target):
        def cond_fun(state):
            i, t, failed = state[0], state[3], state[7]
            return (t < target) & (i < mxstep) & ~failed

        def body_fun(state):
            i, y, f, t, h, last_t, coeffs, _ = state
            y_new, f_new, err, k = _dopri_step(fn, y, f, t, h)
            ratio = _error_ratio(err, rtol, atol, y, y_new)
            new_coeffs = tuple(_cast_like(c, y) for c in _interp_coeffs(y, k, h))
            y_new, f_new = _cast_like(y_new, y), _cast_like(f_new, y)
            h_next = _cast_like(tnp.clip(_next_step(h, ratio), 0.0, hmax), h)
            finite = tnp.isfinite(ratio) & _all_finite(y_new)
            accept = (ratio <= 1.0) & finite
            t_new = tnp.where(accept, t + h, t)
            failed = ~finite | _too_small(h_next, t_new)
            pick = lambda a, b: tree_map(lambda u, v: tnp.where(accept, u, v), a, b)  # noqa: E731
            return (i + 1, pick(y_new, y), pick(f_new, f), t_new, h_next,
                    tnp.where(accept, t, last_t), pick(new_coeffs, coeffs), failed)

        state = (np.int64(0),) + tuple(carry)
        _, y, f, t, h, last_t, coeffs, failed = while_loop(cond_fun, body_fun, state)
        # t == last_t only when no step was accepted yet (failed at once, or
        # mxstep=0): no polynomial to evaluate, NaN (as JAX's 0/0) without a warning.
        moved = t > last_t
        s = tnp.where(moved, (target - last_t) / tnp.where(moved, t - last_t, 1.0), np.nan)
        # NaN for a time the solve did not reach: it failed, or it took mxstep
        # steps first (an extrapolation would be a silently wrong number; NaN
        # tangents too under jvp).
        scale = tnp.where(t < target, np.nan, 1.0)
        out = tree_map(lambda v: v * tnp.asarray(scale, core.get_aval(v).dtype),
                       _cast_like(_interp_eval(coeffs, s), y))
        return (y, f, t, h, last_t, coeffs, failed), out

    zeros = tree_map(tnp.zeros_like, y0)
    failed = ~(_all_finite(y0) & _all_finite(f0)) | _too_small(h, t0)
    init = (y0, f0, t0, h, t0, (y0, zeros, zeros, zeros, zeros), failed)
    _, ys = scan(to_target, init, ts[1:])
    return tree_map(lambda a, b: tnp.concatenate([tnp.expand_dims(a, 0), b]), y0, ys)


# ---------------------------------------------------------------------------
# The differentiable core: a custom_jvp whose tangent is one linear step
# (``custom_lin``) with both of its forms: forward mode evaluates the JVP of the
# solver (forward sensitivities), reverse mode transposes it with the adjoint
# pass.  So jvp, grad and their compositions (hessian = forward over reverse)
# all work, and reverse mode keeps the adjoint's memory use.  Non-array
# settings (the converted dynamics and the tolerances) are nondiff_argnums;
# arrays (y0, ts and the flat leaves of the extra arguments and of the values
# func closes over) are regular arguments.


# The forward solve and the adjoint solve are each one compiled program, also
# when odeint is called without jit (as JAX's odeint is jitted inside).
_integrate_jit = jit(_integrate, static_argnums=(0, 1, 2, 3, 4))


def _odeint_impl(func, rtol, atol, mxstep, hmax, y0, ts, *arg_leaves):
    return _integrate_jit(func, rtol, atol, mxstep, hmax, y0, ts, arg_leaves)


_odeint_impl.__name__ = _odeint_impl.__qualname__ = "odeint"
_odeint = custom_jvp(_odeint_impl, nondiff_argnums=(0, 1, 2, 3, 4))


@_odeint.defjvp
def _odeint_jvp(func, rtol, atol, mxstep, hmax, primals, tangents):
    settings = (func, rtol, atol, mxstep, hmax)
    ys = _odeint(*settings, *primals)
    p_leaves, p_tree = tree_flatten(primals)
    float_in = [_is_float(x) for x in p_leaves]
    y_leaves, y_tree = tree_flatten(ys)
    tans = [t for t, f in zip(tree_leaves(tangents), float_in) if f]
    n_p = len(p_leaves)

    def solve(*leaves):
        y0, ts, *arg_leaves = tree_unflatten(p_tree, list(leaves))
        return tree_leaves(_integrate_jit(*settings, y0, ts, tuple(arg_leaves)))

    def forward(*args):  # (primals..., ys..., float tangents...) -> ys tangents
        it = iter(args[n_p + len(y_leaves):])
        t_all = [next(it) if f else _float0_zeros(x) for x, f in zip(args[:n_p], float_in)]
        return _jvp(solve, tuple(args[:n_p]), tuple(t_all))[1]

    def adjoint(*args):  # (primals..., ys..., ys cotangents...) -> float input cotangents
        ps, ys_, cts = args[:n_p], args[n_p:n_p + len(y_leaves)], args[n_p + len(y_leaves):]
        _, ts, *arg_leaves = tree_unflatten(p_tree, list(ps))
        g = tree_unflatten(y_tree, [_instantiate(c, y) for c, y in zip(cts, ys_)])
        y_bar, ts_bar, *leaves_bar = _backward_jit(*settings, tree_unflatten(y_tree, list(ys_)),
                                                   ts, tuple(arg_leaves), g)
        out = tree_leaves(y_bar) + [ts_bar] + leaves_bar
        return [c for c, f in zip(out, float_in) if f]

    out_tans = custom_lin_p.bind(
        *p_leaves, *y_leaves, *tans, num_res=n_p + len(y_leaves), bwd=adjoint,
        out_avals=tuple(core.tangent_aval(core.get_aval(y)) for y in y_leaves),
        name=f"odeint({_fun_name(func)})", forward=forward)
    return ys, tree_unflatten(y_tree, list(out_tans))


def _float0_zeros(x):
    return np.zeros(core.get_aval(x).shape, dtypes.float0)


def _instantiate(ct, y):
    if ct is None or type(ct) is core.Zero:
        return tnp.zeros_like(y)
    return ct


def _is_float(x):
    return core.get_aval(x).dtype.kind in "fc"


def _backward(func, rtol, atol, mxstep, hmax, ys, ts, arg_leaves, g):
    """The adjoint pass: cotangents of ``(y0, ts, *arg_leaves)`` from ``g``."""
    arg_leaves = list(arg_leaves)
    diff = [_is_float(x) for x in arg_leaves]

    def call(y, t, leaves):
        return func(y, t, *leaves)

    def aug_dynamics(state, s, *leaves):
        # Reversed time s = -t: d/ds (y, a, t0_bar, args_bar)
        #   = (-f, a . df/dy, a . df/dt, a . df/dargs) evaluated at t = -s.
        y, a = state[0], state[1]
        leaves = list(leaves)
        d_idx = [i for i, d in enumerate(diff) if d]

        def f_diff(y, t, *dleaves):
            full = list(leaves)
            for i, v in zip(d_idx, dleaves):
                full[i] = v
            return call(y, t, full)

        y_dot, pullback = _vjp(f_diff, y, -s, *[leaves[i] for i in d_idx])
        cts = pullback(a)
        return (tree_map(lambda v: -v, y_dot), cts[0], cts[1], tuple(cts[2:]))

    def step_back(carry, xs):
        a, t0_bar, args_bar = carry
        y_i, t_i, t_prev, g_i, g_prev = xs
        # Moving output time t_i moves y(t_i) along f: its cotangent is f . g_i.
        t_bar = _vdot_tree(call(y_i, t_i, arg_leaves), g_i)
        if core.get_aval(t_bar).dtype.kind == "c":  # a complex state: the cotangent of
            t_bar = tnp.real(t_bar)                  # the real time is the real part
        t0_bar = t0_bar - t_bar
        out = odeint(aug_dynamics, (y_i, a, t0_bar, args_bar), tnp.stack([-t_i, -t_prev]),
                     *arg_leaves, rtol=rtol, atol=atol, mxstep=mxstep, hmax=hmax)
        _, a, t0_bar, args_bar = tree_map(lambda x: x[1], out)
        a = _add(a, g_prev)
        return (a, t0_bar, args_bar), t_bar

    t_dtype = core.get_aval(ts).dtype
    last = tree_map(lambda x: x[-1], g)
    init = (last, tnp.zeros((), t_dtype),
            tuple(tnp.zeros_like(x) for x, d in zip(arg_leaves, diff) if d))
    n = core.get_aval(ts).shape[0]
    if n == 1:
        y_bar, t0_bar, args_bar = init
        ts_bar = tnp.zeros((1,), t_dtype)
    else:
        xs = (tree_map(lambda x: x[1:], ys), ts[1:], ts[:-1], tree_map(lambda x: x[1:], g),
              tree_map(lambda x: x[:-1], g))
        (y_bar, t0_bar, args_bar), rest = scan(step_back, init, xs, reverse=True)
        ts_bar = tnp.concatenate([tnp.expand_dims(t0_bar, 0), rest])
    it = iter(args_bar)
    leaves_bar = [next(it) if d else None for d in diff]
    return (y_bar, ts_bar, *leaves_bar)


_backward_jit = jit(_backward, static_argnums=(0, 1, 2, 3, 4))


# Converted dynamics by program, so that calls with the same dynamics reuse
# one function object (the static argument of the compiled solves).
_DYNAMICS = {}
_DYNAMICS_MAX = 256


def _program_key(converted, a_tree):
    """What identifies a ``closure_convert``-ed function: its program text,
    its closed-over integer constants, and the identity of the Python
    callables in its equations (custom rules print only their names)."""
    jaxpr, kept, hoist, in_tree, out_tree = converted.program
    objs = []

    def walk(j):
        for eqn in j.eqns:
            for sub in core.subjaxprs(eqn.prim, eqn.params):
                walk(sub)   # (constants are operands, not in programs)
            for role, v in eqn.params.items():
                if role in eqn.prim.program_params:
                    pass
                elif callable(v) and not isinstance(v, type):
                    # custom rules made per call carry a stable key (their function,
                    # rules and call structure); other callables count by identity
                    key = rule_key(v, role)
                    objs.append(id(v) if key is None else key)
    walk(jaxpr)
    consts = tuple((k.dtype.str, k.shape, k.tobytes()) if isinstance(k, np.ndarray) else repr(k)
                   for k in kept)
    return (str(jaxpr), consts, hoist, in_tree, out_tree, a_tree, tuple(objs))


def _stable_dynamics(converted, a_tree, make):
    key = _program_key(converted, a_tree)
    fn = _DYNAMICS.get(key)
    if fn is None:
        if len(_DYNAMICS) >= _DYNAMICS_MAX:
            _DYNAMICS.clear()
        fn = _DYNAMICS.setdefault(key, make())
    return fn


# ---------------------------------------------------------------------------
# Public API


def _concrete(x):
    """The concrete value of ``x`` if it has one (NumPy value or a JVP tracer
    over one), else None."""
    if not isinstance(x, Tracer):
        return np.asarray(x)
    try:
        return np.asarray(x.concrete_value("odeint"))
    except (core.ConcretizationTypeError, TypeError):
        return None


def _split_like(flat, avals):
    """``flat`` cut into arrays of the shapes of ``avals``, in order."""
    out, start = [], 0
    for a in avals:
        out.append(tnp.reshape(flat[start:start + a.size], a.shape))
        start += a.size
    return out


def _static_float(x, what):
    try:
        return float(x)
    except core.ConcretizationTypeError:
        raise TypeError(f"odeint: {what} must be a concrete (non-traced) number, got a traced "
                        f"value {core.get_aval(x).str_short()}") from None


def _with_order_hint(e, name):
    """``e`` (raised by the dynamics called as ``func(y, t, *args)``) with its
    message followed by a hint about SciPy's ``(t, y)`` order; ``e`` itself,
    with the hint as a note, if its type cannot be rebuilt from a message."""
    hint = (f"(odeint calls the dynamics as {name}(y, t, *args), state first; if {name} is "
            "written in SciPy's solve_ivp order (t, y), swap its first two parameters, e.g. "
            "odeint(lambda y, t, *args: func(t, y, *args), y0, t, *args).)")
    try:
        new = type(e)(f"{e}\n{hint}")
    except Exception:  # noqa: BLE001 - exception types with other constructors
        e.add_note(hint)
        return e
    return new.with_traceback(e.__traceback__)


@api_boundary
def odeint(func: Any, y0: Any, t: Any, *args: Any, rtol: Any = 1.4e-8, atol: Any = 1.4e-8,
           mxstep: Any = np.inf, hmax: Any = np.inf) -> Any:
    """Integrate ``dy/dt = func(y, t, *args)`` and return ``y`` at the times ``t``.

    Args:
      func: the dynamics ``func(y, t, *args)``; returns a pytree with the
        structure, shapes and dtypes of ``y``.
      y0: the initial state at ``t[0]`` (a pytree of float arrays).
      t: a 1-d array of strictly increasing times; ``y`` is returned at each.
      *args: extra arguments (pytrees of arrays) passed to ``func``;
        ``odeint`` is differentiable with respect to them, ``y0`` and ``t``.
      rtol, atol: relative and absolute local error tolerances.
      mxstep: the maximum number of steps between two consecutive times.
      hmax: the maximum step size.

    Returns:
      ``y`` at the times ``t``: ``y0``'s pytree with a leading axis of size
      ``len(t)`` on every leaf.

    The solver always stops.  When the state or a step's error estimate is
    not finite (the solution overflowed, or ``func`` returned NaN or inf), or
    the step size falls below ten times the spacing of floating-point numbers
    at ``t`` (the steps creep towards a finite-time singularity; SciPy's
    "Required step size is less than spacing between numbers"), the solve
    fails: ``y`` at the first time not reached and at every later time is
    NaN, and those times cost no further steps; derivatives there are NaN too.
    JAX's odeint also returns NaN after a blow-up, but where ``func`` returns
    NaN it extrapolates the last step's polynomial to the remaining times;
    here those are NaN.  Where a solve takes ``mxstep`` steps without reaching
    an output time, that output is NaN too (JAX's is the last step's polynomial
    extrapolated to it: a wrong number that looks right); the next interval
    starts again from the state reached.

    Examples:
      Exponential decay ``dy/dt = -k y``, and the derivative of ``y(1)``
      with respect to ``k`` by the adjoint method (exactly ``-exp(-k)``):

      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> from tangentia.experimental.ode import odeint
      >>> t = tnp.linspace(0.0, 1.0, 3)
      >>> odeint(lambda y, t, k: -k * y, 1.0, t, 2.0)
      Array([1.        , 0.36787944, 0.13533528])
      >>> dk = tg.grad(lambda k: odeint(lambda y, t, k: -k * y, 1.0, t, k)[-1])(2.0)
      >>> print(round(float(dk), 6))
      -0.135335
    """
    name = _fun_name(func)
    if not callable(func):
        raise TypeError(f"odeint: func must be callable, got {type(func).__name__}")
    for i, leaf in enumerate(tree_leaves(args)):
        if not core.is_array_like(leaf):
            raise TypeError(
                f"odeint({name}, ...): the extra arguments *args must be arrays or pytrees of "
                f"arrays, but leaf {i} of args is a {type(leaf).__name__}. Pass functions and "
                "other static values by closing over them in func (e.g. with functools.partial).")
    rtol = _static_float(rtol, "rtol")
    atol = _static_float(atol, "atol")
    mxstep = _static_float(mxstep, "mxstep")
    hmax = _static_float(hmax, "hmax")
    # The state: float arrays.
    y_leaves, y_tree = tree_flatten(y0)
    if not y_leaves:
        raise TypeError(f"odeint({name}, ...): y0 has no array leaves")
    fixed = []
    for i, x in enumerate(y_leaves):
        if not core.is_array_like(x):
            raise TypeError(f"odeint({name}, ...): y0 leaf {i} is a {type(x).__name__}, not an "
                            "array")
        x = tnp.asarray(x)
        if core.get_aval(x).dtype.kind not in "fc":
            x = tnp.asarray(x, np.float64)
        fixed.append(x)
    y0 = tree_unflatten(y_tree, fixed)
    # The times: a 1-d float array, strictly increasing.
    if not core.is_array_like(t):
        raise TypeError(f"odeint({name}, ...): t must be a 1-d array of times, got "
                        f"{type(t).__name__}")
    t = tnp.asarray(t)
    ta = core.get_aval(t)
    if ta.ndim != 1 or ta.shape[0] == 0:
        raise ValueError(f"odeint({name}, ...): t must be a non-empty 1-d array of times, got an "
                         f"array of shape {ta.shape}")
    t_dtype = np.result_type(*[core.get_aval(x).dtype for x in tree_leaves(y0)],
                             ta.dtype if ta.dtype.kind == "f" else np.float64)
    if t_dtype.kind != "f":
        t_dtype = np.dtype(np.float64)
    if ta.dtype != t_dtype:
        t = tnp.asarray(t, t_dtype)
    tv = _concrete(t)
    if tv is not None and tv.size and not np.all(np.isfinite(tv)):  # JAX's loop never ends
        j = int(np.nonzero(~np.isfinite(tv))[0][0])
        raise ValueError(f"odeint({name}, ...): the times t must be finite, but t[{j}] = "
                         f"{float(tv[j])!r} (t = {np.array2string(tv, threshold=12)})")
    if tv is not None and tv.shape[0] > 1:
        bad = np.nonzero(~(np.diff(tv) > 0))[0]
        if bad.size:
            j = int(bad[0]) + 1
            raise ValueError(
                f"odeint({name}, ...): the times t must be strictly increasing, but "
                f"t[{j}] = {float(tv[j])!r} is not greater than t[{j - 1}] = {float(tv[j - 1])!r} "
                f"(t = {np.array2string(tv, threshold=12)})")

    y_avals = [core.get_aval(x) for x in tree_leaves(y0)]

    def checked(y, t, *args):
        out = func(y, t, *args)
        leaves, tree = tree_flatten(out)
        ok = all(core.is_array_like(o) for o in leaves)
        if ok:
            got = [core.get_aval(o) for o in leaves]
            if tree != y_tree or any(a.shape != b.shape for a, b in zip(got, y_avals)):
                # Another container, the same values once flattened (JAX ravels both).
                ok = sum(a.size for a in got) == sum(a.size for a in y_avals)
                if ok:
                    leaves = _split_like(tnp.concatenate([tnp.ravel(o) for o in leaves]), y_avals)
        if not ok:
            raise TypeError(
                f"odeint: the dynamics function {name}(y, t, *args) must return a value with the "
                f"same structure and shapes as the state y0 (or the same number of values once "
                f"flattened), but y0 is {_types_str(y0)} and {name} returned {_types_str(out)}")
        return tree_unflatten(y_tree, [
            o if core.get_aval(o).dtype == a.dtype else tnp.asarray(o, a.dtype)
            for o, a in zip(leaves, y_avals)])

    checked.__name__ = name
    try:
        # every floating constant is hoisted, concrete ones too (closure_convert keeps
        # those, as JAX's): dynamics differing only in them share one compiled solve
        converted, consts = _closure_convert(checked, (y0, t[0], *args), _is_float)
    except core.ConcretizationTypeError:
        raise  # Python control flow on traced values: not a matter of argument order
    except (TypeError, ValueError, IndexError) as e:
        raise _with_order_hint(e, name) from None
    all_args = (tuple(args), tuple(consts))
    a_leaves, a_tree = tree_flatten(all_args)

    def make():
        def flat_func(y, t, *leaves):
            user_args, hoisted = tree_unflatten(a_tree, list(leaves))
            return converted(y, t, *user_args, *hoisted)

        flat_func.__name__ = name
        return flat_func

    flat_func = _stable_dynamics(converted, a_tree, make)
    return _odeint(flat_func, rtol, atol, mxstep, hmax, y0, t, *a_leaves)
