"""check_custom_rules: wrong custom rules are flagged by name with both values
(alone, inside loops, jit and larger programs, inside other rules), correct ones
pass, excluded ones are skipped, and every custom rule of the library passes."""
from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax
from tangentia.custom_derivatives import custom_jvp, custom_vjp
from tangentia.experimental import fixed_point
from tangentia.experimental.ode import odeint
from tangentia.scipy import special
from tangentia.test_util import check_custom_rules

X = np.array([0.3, -0.4, 1.7])


# Seed 000's example: the function is 2 x, its bwd claims 3 g.
@tg.custom_vjp
def f(x):
    return 2.0 * x


f.defvjp(lambda x: (f(x), None), lambda _, g: (3.0 * g,))


def larger(x):
    def body(c, xi):
        return tnp.sin(f(c)) * xi, c
    carry, _ = lax.scan(body, x, np.array([1.0, 0.5, 0.25]))
    return tg.jit(lambda y: tnp.sum(tg.nn.softplus(y) * carry))(x)


@pytest.mark.parametrize("mode", ["fwd", "rev"])
@pytest.mark.parametrize("fun", [f, larger], ids=["alone", "in_scan_in_larger_program"])
def test_seed_000_wrong_bwd_is_flagged_with_both_values(fun, mode):
    with pytest.raises(AssertionError) as info:
        check_custom_rules(fun, (X,), modes=(mode,))
    msg = str(info.value)
    assert "custom_vjp rule of 'f' disagrees" in msg
    # The values that reach f: the input itself, and the scan's initial carry.
    assert f"inputs of the first call of f:  {np.array2string(X, precision=8)}" in msg
    if fun is f and mode == "fwd":  # derivative of 2x along v: the rule says 3 v
        v = np.random.default_rng(0).standard_normal(3)
        assert np.array2string(3 * v, precision=8) in msg
        assert np.array2string(2 * v, precision=8) in msg


def test_a_wrong_rule_inside_jit_and_a_correct_one_beside_it():
    @tg.custom_jvp
    def cube(x):
        return x ** 3

    cube.defjvp(lambda p, t: (cube(p[0]), 3 * p[0] ** 2 * t[0]))

    @tg.custom_jvp
    def bad_exp(x):
        return tnp.exp(x)

    bad_exp.defjvp(lambda p, t: (bad_exp(p[0]), tnp.exp(p[0]) * t[0] * 1.001))
    report = check_custom_rules(tg.jit(lambda x: tnp.sum(cube(x))), (X,))
    assert report == {"cube": "autodiff"}
    with pytest.raises(AssertionError, match="custom_jvp rule of 'bad_exp'"):
        check_custom_rules(tg.jit(lambda x: tnp.sum(cube(x) + bad_exp(x))), (X,))
    # Only bad_exp is named: cube's check runs first and passes.
    with pytest.raises(AssertionError, match="bad_exp") as info:
        check_custom_rules(lambda x: cube(bad_exp(x)), (X,), modes="rev")
    assert "'cube'" not in str(info.value)


def clip_gradient(lo, hi, x):
    return x


clip_gradient = tg.custom_vjp(clip_gradient)
clip_gradient.defvjp(lambda lo, hi, x: (x, (lo, hi)),
                     lambda res, g: (None, None, tnp.clip(g, *res)))


def test_rules_that_disagree_on_purpose_are_excluded_by_name():
    fun = lambda x: tnp.sum(3.0 * clip_gradient(-1.0, 1.0, x))  # noqa: E731
    with pytest.raises(AssertionError, match="'clip_gradient'"):
        check_custom_rules(fun, (X,), modes="rev")
    assert check_custom_rules(fun, (X,), modes="rev", exclude=("clip_gradient",)) == {}
    assert check_custom_rules(fun, (X,), modes="rev", exclude="clip_gradient") == {}


def test_custom_gradient_is_checked():
    @tg.custom_gradient
    def good(x):
        return tnp.sin(x), lambda g: g * tnp.cos(x)

    @tg.custom_gradient
    def bad(x):
        return tnp.sin(x), lambda g: g * tnp.sin(x)

    assert check_custom_rules(lambda x: tnp.sum(good(x)), (X,), modes="rev") == {"good": "autodiff"}
    with pytest.raises(AssertionError, match="custom_vjp rule of 'bad'"):
        check_custom_rules(lambda x: tnp.sum(bad(x)), (X,), modes="rev")


def _newton_sqrt(a):
    """sqrt by Newton's iteration in a while_loop: reverse mode cannot go through it."""
    def body(y):
        return 0.5 * (y + a / y)
    return lax.while_loop(lambda y: tnp.max(tnp.abs(y * y - a)) > 1e-13, body, tnp.ones_like(a))


def _sqrt_with(factor):
    def fwd(a):
        y = _newton_sqrt(a)
        return y, y

    fn = tg.custom_vjp(_newton_sqrt)
    fn.defvjp(fwd, lambda y, g: (factor * g / (2 * y),))
    return fn


def test_finite_differences_decide_where_the_implementation_is_not_differentiable():
    a = np.array([2.0, 3.0])
    assert check_custom_rules(_sqrt_with(1.0), (a,), modes="rev") == {
        "_newton_sqrt": "finite differences"}
    with pytest.raises(AssertionError) as info:
        check_custom_rules(_sqrt_with(1.1), (a,), modes="rev")
    msg = str(info.value)
    assert "'_newton_sqrt'" in msg and "an error" in msg and "by finite differences" in msg


def test_a_wrong_rule_used_inside_another_rule_is_found_at_order_2():
    @tg.custom_jvp
    def inner(x):
        return tnp.sin(x)

    inner.defjvp(lambda p, t: (inner(p[0]), 1.5 * tnp.cos(p[0]) * t[0]))  # wrong

    @tg.custom_jvp
    def outer(x):
        return x * tnp.sin(x)

    outer.defjvp(lambda p, t: (outer(p[0]), (inner(p[0]) + p[0] * tnp.cos(p[0])) * t[0]))
    assert check_custom_rules(outer, (X,)) == {"outer": "autodiff"}  # inner's value only
    with pytest.raises(AssertionError, match="custom_jvp rule of 'inner'"):
        check_custom_rules(outer, (X,), order=2, modes="fwd")


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="check_custom_rules: unknown mode 'bwd' in modes"):
        check_custom_rules(f, (X,), modes=("bwd",))
    with pytest.raises(ValueError, match="check_custom_rules: order must be a positive"):
        check_custom_rules(f, (X,), order=0)


# ---------------------------------------------------------------------------
# Every custom rule of the library


def _library_custom_functions():
    """``{"module.attribute": custom function}`` for every custom_jvp/custom_vjp
    function defined at module level in tangentia (where its function is defined)."""
    found = {}
    for info in pkgutil.walk_packages(tg.__path__, "tangentia."):
        if info.name in ("tangentia.__main__", "tangentia.distributed"):
            continue  # a demo script; an optional dependency (dask), no custom rules
        for attr, value in vars(importlib.import_module(info.name)).items():
            if isinstance(value, (custom_jvp, custom_vjp)) and value.__module__ == info.name:
                found[f"{info.name}.{attr}"] = value
    return found


def _root_cube(a):
    # x**3 = a by Newton's iteration; tangent_solve divides by f'(x*) = 3 x*^2.
    def solve(fn, x0):
        return lax.while_loop(lambda y: tnp.max(tnp.abs(fn(y))) > 1e-13,
                              lambda y: y - fn(y) / (3 * y * y), x0)
    return lax.custom_root(lambda y: y ** 3 - a, tnp.ones_like(a), solve,
                           lambda g, y: y / (3 * tnp.cbrt(a) ** 2))


def _linear_solve(b):
    a = np.array([[4.0, 1.0], [1.0, 3.0]]) * b[0]
    return lax.custom_linear_solve(lambda v: a @ v, b, lambda mv, r: tnp.linalg.solve(a, r),
                                   symmetric=True)


A32 = np.array([[2.0, 0.5], [0.3, 1.0], [0.1, -0.7]])
M22 = np.array([[2.0, 0.5], [0.3, 1.0]])

# Each case: (function, args, checker options, the name it must check).  Module-level
# custom functions are keyed by where they are defined; the others by their factory.
LIBRARY = {
    "tangentia.nn._softplus": (lambda x: tg.nn.softplus(30 * x), (X,), {}, "softplus"),
    "tangentia.nn._relu": (tg.nn.relu, (X,), {}, "relu"),
    "tangentia.nn._relu6": (lambda x: tg.nn.relu6(4 * x), (X,), {}, "relu6"),
    # Order 2 reaches neg_abs, used only inside expit's rule.
    "tangentia.lax._stable._expit": (special.expit, (X,), {"order": 2}, "expit"),
    "tangentia.lax._stable._neg_abs": (special.expit, (X,), {"order": 2}, "neg_abs"),
    "tangentia.scipy.special._logit": (special.logit, (np.array([0.2, 0.7]),), {}, "logit"),
    "tangentia.scipy.special._entr": (special.entr, (np.array([0.2, 0.7, 1.5]),), {}, "entr"),
    # sinc at 0 goes through the Taylor-series rule (its nondiff order k = 0)
    "tangentia.numpy._elementwise._sinc_taylor_rule": (lambda x: tnp.sinc(x * 0.0), (X,),
                                                       {"order": 2}, "_sinc_taylor"),
    "tangentia.scipy.special._xlogy": (lambda x: special.xlogy(x, x * x + 1.0), (X,), {},
                                       "xlogy"),
    "tangentia.scipy.special._xlog1py": (lambda x: special.xlog1py(x, x * x), (X,), {},
                                         "xlog1py"),
    "tangentia.scipy.special._softmax": (lambda x: tg.nn.softmax(x) * special.logsumexp(x),
                                         (X,), {}, "softmax"),
    "tangentia.scipy.special._log_softmax": (tg.nn.log_softmax, (X,), {}, "log_softmax"),
    "tangentia.numpy.linalg._pinv": (tnp.linalg.pinv, (A32,), {}, "<lambda>"),
    "tangentia.numpy.linalg._eigvals": (tnp.linalg.eigvals, (M22,), {}, "<lambda>"),
    "tangentia.numpy.linalg._det": (tnp.linalg.det, (M22,), {}, "<lambda>"),
    # Order 2 reaches the cofactor matrix, used only inside det's rule.
    "tangentia.numpy.linalg._cofactor": (tnp.linalg.det, (M22,), {"order": 2},
                                         "_cofactor_value"),
    "tangentia.scipy.linalg._logm": (tg.scipy.linalg.logm, (M22,), {}, "<lambda>"),
    "tangentia.scipy.linalg._sqrtm": (tg.scipy.linalg.sqrtm, (M22,), {}, "<lambda>"),
    # Forward mode through fixed_point is not available (its bwd is not linear).
    "tangentia.experimental.fixed_point._fixed_point": (
        lambda a: fixed_point(lambda a, z: 0.5 * tnp.cos(z) + a, a, tnp.zeros_like(a)), (X,),
        {"modes": "rev"}, "fixed_point"),
    "tangentia.experimental.ode._odeint": (
        lambda y0, k: odeint(lambda y, t, k: -k * y + tnp.sin(t), y0, np.array([0.0, 0.5]), k),
        (np.array([1.0, -0.5]), 0.7), {"modes": "rev", "rtol": 1e-4}, "odeint"),
    # (df is a constant: the derivative with respect to it raises, as betainc's)
    "tangentia.scipy.stats.t._std_cdf": (lambda x: tg.scipy.stats.t.cdf(3 * x, 2.5), (X,), {},
                                         "_std_cdf"),
    "tangentia.scipy.stats.t._std_logcdf": (lambda x: tg.scipy.stats.t.logcdf(3 * x, 2.5), (X,),
                                            {}, "_std_logcdf"),
    "lax.custom_root": (_root_cube, (np.array([2.0, 5.0]),), {}, "custom_root(solve)"),
    "lax.custom_linear_solve": (_linear_solve, (np.array([1.0, 2.0]),), {},
                                "custom_linear_solve"),
}
# eig's rule refuses eigenvector derivatives (as JAX's does without
# enable_eigvec_derivs), so differentiating anything through it raises.
REFUSING = {"tangentia.numpy.linalg._eig": (lambda m: tnp.linalg.eig(m)[0], (M22,))}


@pytest.mark.parametrize("key", sorted(LIBRARY))
def test_every_library_rule_passes(key):
    fun, args, opts, name = LIBRARY[key]
    report = check_custom_rules(fun, args, **opts)
    assert name in report


def test_a_rule_that_refuses_to_differentiate_is_reported_as_its_error():
    fun, args = REFUSING["tangentia.numpy.linalg._eig"]
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
        check_custom_rules(fun, args)


def test_the_library_table_covers_every_custom_function_of_the_library():
    found = _library_custom_functions()
    assert {"tangentia.nn._softplus", "tangentia.experimental.ode._odeint"} <= set(found)
    covered = set(LIBRARY) | set(REFUSING)
    assert set(found) <= covered, f"custom functions without a check here: {set(found) - covered}"
