"""Custom differentiation rules: ``tg.custom_jvp`` and ``tg.custom_vjp``.

The contract under test (seeds/000, seeds/002, seeds/004; JAX's public
behaviour wins where they disagree, e.g. custom_jvp nondiff arguments come
first: ``jvp(*nondiff, primals, tangents)``):

* evaluation calls the function only; rules run only when something
  differentiates (checked with counters);
* ``jvp`` of a custom_jvp calls the rule, reverse mode linearizes and
  transposes it; a custom_vjp's reverse mode calls ``bwd`` and forward mode
  is a TypeError;
* ``vmap`` and ``jit`` pass through and keep the rules, in every nesting
  order, and rules are traced lazily when staged;
* higher-order derivatives, Python control flow, pytrees, kwargs,
  nondiff_argnums, closures over tracers, integer inputs (float0 tangents)
  and symbolic zeros;
* the seed examples, and mathematically true rules checked against finite
  differences.

Rules that deliberately disagree with the true derivative (``3*`` for a
``2*x`` function) make it visible which derivative was used.
"""
from __future__ import annotations

from collections import namedtuple
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import custom_derivatives as cd
from tangentia.custom_derivatives import SymbolicZero
from tangentia.test_util import check_grads, numerical_jvp

RTOL = 1e-12
ATOL = 1e-12
FD = dict(atol=1e-7, rtol=1e-7)  # finite-difference checks (central, eps=1e-4)

HYP = settings(max_examples=15, deadline=None, derandomize=True)


def close(got, want, rtol=RTOL, atol=ATOL):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64),
                               np.asarray(want, dtype=np.float64), rtol=rtol, atol=atol)


def assert_tree_close(got, want, rtol=RTOL, atol=ATOL):
    gl, gt = tg.tree_util.tree_flatten(got)
    wl, wt = tg.tree_util.tree_flatten(want)
    assert gt == wt, f"structure {gt} != {wt}"
    for g, w in zip(gl, wl):
        close(g, w, rtol, atol)


def f64(x):
    return np.asarray(x, dtype=np.float64)


def _sz_aval(shape=()):
    return tg.core.ShapedArray(tuple(shape), np.dtype(np.float64))


# ---------------------------------------------------------------------------
# Factories for fresh custom functions (fresh counters for each test)


def make_vjp_3x(counter=None):
    """seeds/000: a custom_vjp of 2*x whose bwd returns 3*g."""
    counter = counter if counter is not None else {}
    for k in ("f", "fwd", "bwd"):
        counter.setdefault(k, 0)

    @tg.custom_vjp
    def f(x):
        counter["f"] += 1
        return 2. * x

    def f_fwd(x):
        counter["fwd"] += 1
        return f(x), None

    def f_bwd(_, g):
        counter["bwd"] += 1
        return (3. * g,)

    f.defvjp(f_fwd, f_bwd)
    return f, counter


def make_jvp_3x(counter=None):
    """The custom_jvp twin: 2*x whose JVP rule says 3*t."""
    counter = counter if counter is not None else {}
    for k in ("f", "jvp"):
        counter.setdefault(k, 0)

    @tg.custom_jvp
    def f(x):
        counter["f"] += 1
        return 2. * x

    @f.defjvp
    def f_jvp(primals, tangents):
        counter["jvp"] += 1
        (x,), (t,) = primals, tangents
        return f(x), 3. * t

    return f, counter


def make_sin_2cos(counter=None):
    """sin with a deliberately wrong ``2*cos`` rule that calls f inside."""
    counter = counter if counter is not None else {}
    for k in ("f", "jvp"):
        counter.setdefault(k, 0)

    @tg.custom_jvp
    def f(x):
        counter["f"] += 1
        return tnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        counter["jvp"] += 1
        (x,), (t,) = primals, tangents
        return f(x), 2. * tnp.cos(x) * t

    return f, counter


def make_sin_2cos_vjp(counter=None):
    counter = counter if counter is not None else {}
    for k in ("f", "fwd", "bwd"):
        counter.setdefault(k, 0)

    @tg.custom_vjp
    def f(x):
        counter["f"] += 1
        return tnp.sin(x)

    def fwd(x):
        counter["fwd"] += 1
        return f(x), tnp.cos(x)

    def bwd(cos_x, g):
        counter["bwd"] += 1
        return (2. * cos_x * g,)

    f.defvjp(fwd, bwd)
    return f, counter


XS4 = np.array([-1.3, -0.2, 0.7, 2.1])


# ---------------------------------------------------------------------------
# API surface


class TestAPI:
    def test_module_exports(self):
        assert tg.custom_jvp is cd.custom_jvp
        assert tg.custom_vjp is cd.custom_vjp
        assert tg.closure_convert is cd.closure_convert
        assert isinstance(cd.SymbolicZero, type)
        z = SymbolicZero(_sz_aval((2, 3)))
        assert z.shape == (2, 3) and z.dtype == np.float64
        inst = z.instantiate()
        assert isinstance(inst, np.ndarray) and inst.shape == (2, 3)
        np.testing.assert_array_equal(inst, np.zeros((2, 3)))

    def test_float0_is_tangent_dtype_of_int_and_bool(self):
        f0 = tg.dtypes.float0
        assert isinstance(f0, np.dtype)
        assert tg.dtypes.tangent_dtype(np.dtype(np.int64)) == f0
        assert tg.dtypes.tangent_dtype(np.dtype(np.int32)) == f0
        assert tg.dtypes.tangent_dtype(np.dtype(np.bool_)) == f0
        assert tg.dtypes.tangent_dtype(np.dtype(np.float64)) == np.float64
        assert f0.itemsize == 0

    def test_custom_jvp_as_decorator_keeps_name_and_doc(self):
        @tg.custom_jvp
        def my_fun(x):
            """docstring"""
            return 2. * x

        my_fun.defjvp(lambda p, t: (my_fun(p[0]), 3. * t[0]))
        assert my_fun.__name__ == "my_fun"
        assert my_fun.__doc__ == "docstring"
        close(my_fun(1.5), 3.0)
        close(tg.grad(my_fun)(1.5), 3.0)

    def test_defjvp_used_as_decorator_returns_rule(self):
        @tg.custom_jvp
        def f(x):
            return tnp.sin(x)

        @f.defjvp
        def f_jvp(primals, tangents):
            return f(primals[0]), 5. * tangents[0]

        assert callable(f_jvp) and f_jvp.__name__ == "f_jvp"
        y, t = tg.jvp(f, (0.3,), (2.,))
        close(y, np.sin(0.3))
        close(t, 10.)

    def test_custom_jvp_via_functools_partial(self):
        @partial(tg.custom_jvp, nondiff_argnums=(0,))
        def power(n, x):
            return x ** n

        @power.defjvp
        def power_jvp(n, primals, tangents):
            (x,), (t,) = primals, tangents
            return power(n, x), n * x ** (n - 1) * t

        close(power(3, 2.), 8.)
        close(tg.grad(power, 1)(3, 2.), 12.)
        close(tg.jvp(lambda x: power(4, x), (2.,), (0.5,))[1], 16.)

    def test_custom_vjp_via_functools_partial(self):
        @partial(tg.custom_vjp, nondiff_argnums=(1,))
        def scaled(x, k):
            return k * x

        def fwd(x, k):
            return scaled(x, k), None

        def bwd(k, _, g):
            return (10. * k * g,)

        scaled.defvjp(fwd, bwd)
        close(scaled(2., 3.), 6.)
        close(tg.grad(scaled)(2., 3.), 30.)

    def test_defjvps_one_function_per_argument(self):
        calls = []

        @tg.custom_jvp
        def f(x, y):
            return tnp.sin(x) * y

        def dx(tx, ans, x, y):
            calls.append(("dx", ans))
            return tnp.cos(x) * y * tx

        def dy(ty, ans, x, y):
            calls.append(("dy", ans))
            return tnp.sin(x) * ty

        f.defjvps(dx, dy)
        x, y = 1.1, 3.
        out, t = tg.jvp(f, (x, y), (0.5, -2.))
        close(out, np.sin(x) * y)
        close(t, np.cos(x) * y * 0.5 + np.sin(x) * -2.)
        assert [c[0] for c in calls] == ["dx", "dy"]
        close(calls[0][1], np.sin(x) * y)  # ans is the primal output
        close(calls[1][1], np.sin(x) * y)
        gx, gy = tg.grad(f, (0, 1))(x, y)
        close(gx, np.cos(x) * y)
        close(gy, np.sin(x))
        check_grads(f, (f64([0.4, -1.2]), f64([2., 0.5])), order=2, **FD)
        close(tg.vmap(tg.grad(f))(XS4, XS4), np.cos(XS4) * XS4)
        close(tg.jit(tg.grad(f, 1))(x, y), np.sin(x))

    def test_defjvps_none_entry_means_no_dependence(self):
        @tg.custom_jvp
        def f(x, y):
            return x * y

        f.defjvps(None, lambda ty, ans, x, y: x * ty)
        gx, gy = tg.grad(f, (0, 1))(2., 3.)
        close(gx, 0.)
        close(gy, 2.)
        close(tg.jvp(f, (2., 3.), (1., 1.))[1], 2.)

    def test_defvjp_fwd_receives_f_args_bwd_returns_tuple(self):
        seen = {}

        @tg.custom_vjp
        def f(x, y, z):
            return x * y + z

        def fwd(x, y, z):
            seen["fwd"] = (float(x), float(y), float(z))
            return f(x, y, z), (x, y)

        def bwd(res, g):
            x, y = res
            seen["bwd"] = float(g)
            return (g * y, g * x, g)

        f.defvjp(fwd, bwd)
        (gx, gy, gz) = tg.grad(f, (0, 1, 2))(2., 3., 4.)
        close(gx, 3.)
        close(gy, 2.)
        close(gz, 1.)
        assert seen == {"fwd": (2., 3., 4.), "bwd": 1.}

    def test_closure_convert_hoists_traced_closed_over_values(self):
        hoisted_shapes = []

        def run(c):
            def fn(x):
                return c * tnp.sin(x) + x

            conv, consts = tg.closure_convert(fn, 0.5)
            hoisted_shapes.append(len(consts))
            return conv(0.7, *consts)

        cs = np.array([0., 1., 2.5])
        close(tg.vmap(run)(cs), cs * np.sin(0.7) + 0.7)
        close(tg.jit(run)(2.5), 2.5 * np.sin(0.7) + 0.7)
        close(tg.grad(run)(2.5), np.sin(0.7))
        # as JAX's: c traced by jit or grad became an explicit argument; only batched
        # (over concrete values) by vmap, it cannot be perturbed and stays closed over
        assert hoisted_shapes == [0, 1, 1]

    def test_closure_convert_enables_grad_wrt_closed_over_value(self):
        """The odeint/fixed_point pattern: hoist closed-over values into explicit
        arguments of a custom_vjp whose bwd uses vjp of the converted function."""

        @partial(tg.custom_vjp, nondiff_argnums=(0,))
        def _apply(fn, x, *consts):
            return fn(x, *consts)

        def _apply_fwd(fn, x, *consts):
            return _apply(fn, x, *consts), (x, consts)

        def _apply_bwd(fn, res, g):
            x, consts = res
            _, pull = tg.vjp(fn, x, *consts)
            return pull(g)

        _apply.defvjp(_apply_fwd, _apply_bwd)

        def apply(fn, x):
            conv, consts = tg.closure_convert(fn, x)
            return _apply(conv, x, *consts)

        def loss(c, x):
            return apply(lambda y: c * tnp.sin(y) * y, x)

        c, x = 1.7, 0.9
        close(loss(c, x), c * np.sin(x) * x)
        gc, gx = tg.grad(loss, (0, 1))(c, x)
        close(gc, np.sin(x) * x)
        close(gx, c * (np.cos(x) * x + np.sin(x)))
        close(tg.vmap(tg.grad(loss))(XS4, XS4), np.sin(XS4) * XS4)
        close(tg.jit(tg.grad(loss, 1))(c, x), c * (np.cos(x) * x + np.sin(x)))


# ---------------------------------------------------------------------------
# Evaluation semantics


class TestEvaluation:
    def test_eval_calls_fun_only_custom_jvp(self):
        f, cnt = make_jvp_3x()
        close(f(1.5), 3.)
        close(f(f64([1., 2.])), [2., 4.])
        assert cnt == {"f": 2, "jvp": 0}

    def test_eval_calls_fun_only_custom_vjp(self):
        f, cnt = make_vjp_3x()
        close(f(1.5), 3.)
        assert cnt == {"f": 1, "fwd": 0, "bwd": 0}

    def test_vmap_and_jit_without_differentiation_never_run_rules(self):
        f, cnt = make_jvp_3x()
        g, cnt2 = make_vjp_3x()
        close(tg.vmap(f)(XS4), 2 * XS4)
        close(tg.jit(f)(1.5), 3.)
        close(tg.jit(tg.vmap(g))(XS4), 2 * XS4)
        close(tg.vmap(tg.jit(g))(XS4), 2 * XS4)
        assert cnt["jvp"] == 0
        assert cnt2["fwd"] == 0 and cnt2["bwd"] == 0

    def test_eval_results_are_float64_arrays(self):
        f, _ = make_sin_2cos()
        out = f(f64([0.1, 0.2]))
        assert isinstance(out, np.ndarray) and out.dtype == np.float64
        g, _ = make_sin_2cos_vjp()
        out = g(0.3)
        assert isinstance(out, np.ndarray) and out.dtype == np.float64
        close(out, np.sin(0.3))

    def test_jvp_of_custom_jvp_calls_rule(self):
        f, cnt = make_jvp_3x()
        y, t = tg.jvp(f, (1.5,), (2.,))
        close(y, 3.)
        close(t, 6.)
        assert cnt["jvp"] == 1
        y, t = tg.jvp(f, (f64([1., 2.]),), (f64([1., -1.]),))
        close(y, [2., 4.])
        close(t, [3., -3.])

    def test_reverse_mode_of_custom_jvp_transposes_the_rule(self):
        f, cnt = make_jvp_3x()
        close(tg.grad(f)(1.5), 3.)
        assert cnt["jvp"] == 1
        y, pull = tg.vjp(f, f64([1., 2., 3.]))
        close(y, [2., 4., 6.])
        (ct,) = pull(f64([1., 10., 100.]))
        close(ct, [3., 30., 300.])
        close(tg.jacrev(f)(f64([1., 2.])), 3. * np.eye(2))
        close(tg.jacfwd(f)(f64([1., 2.])), 3. * np.eye(2))
        close(tg.hessian(lambda x: f(x) ** 2)(1.5), 2 * 3. * 3.)

    def test_custom_vjp_reverse_mode_calls_bwd(self):
        f, cnt = make_vjp_3x()
        close(tg.grad(f)(1.), 3.)
        assert cnt["fwd"] == 1 and cnt["bwd"] == 1 and cnt["f"] == 1
        y, pull = tg.vjp(f, f64([1., 2.]))
        close(y, [2., 4.])
        close(pull(f64([1., -2.]))[0], [3., -6.])
        close(tg.jacrev(f)(f64([1., 2.])), 3. * np.eye(2))
        v, g = tg.value_and_grad(lambda x: f(x) ** 2)(1.5)
        close(v, 9.)
        close(g, 2 * 3. * 3.)

    def test_linearize_of_custom_jvp_uses_rule(self):
        f, _ = make_sin_2cos()
        y, f_jvp = tg.linearize(f, 0.4)
        close(y, np.sin(0.4))
        close(f_jvp(2.), 2 * 2 * np.cos(0.4))

    @pytest.mark.parametrize("how", ["jvp", "jit_inside", "jit_outside", "jacfwd_scalar",
                                     "linearize_then_apply", "nested_jvp_of_grad_arg"])
    def test_forward_mode_of_custom_vjp_transposes_bwd(self, how):
        # Forward mode through a custom_vjp function is the transpose of bwd
        # (linear in its cotangent): here bwd is g -> 3 g, so the tangent is 3 t.
        f, _ = make_vjp_3x()
        runs = {
            "jvp": (lambda: tg.jvp(f, (1.,), (1.,))[1], 3.0),
            "jit_inside": (lambda: tg.jvp(tg.jit(f), (1.,), (1.,))[1], 3.0),
            "jit_outside": (lambda: tg.jit(lambda x: tg.jvp(f, (x,), (1.,))[1])(1.), 3.0),
            # d/dx (f(x) x) = 3 x + 2 x at x = 1 (the primal of f is 2 x)
            "jacfwd_scalar": (lambda: tg.jvp(lambda x: f(x) * x, (f64(1.),), (f64(1.),))[1], 5.0),
            "linearize_then_apply": (lambda: tg.linearize(f, 1.)[1](1.), 3.0),
            "nested_jvp_of_grad_arg": (lambda: tg.jvp(lambda y: tg.grad(lambda x: x * y)(1.)
                                                      + f(y), (1.,), (1.,))[1], 4.0),
        }
        run, want = runs[how]
        close(run(), want)

    def test_jacfwd_of_custom_vjp_transposes_bwd(self):
        f, _ = make_vjp_3x()
        np.testing.assert_allclose(tg.jacfwd(f)(np.ones(2)), 3.0 * np.eye(2))
        np.testing.assert_allclose(tg.jacfwd(f)(np.ones(2)), tg.jacrev(f)(np.ones(2)))

    def test_forward_mode_through_custom_vjp_examples(self):
        # hessian of sin(x) * y defined with custom_vjp; jacfwd of a vector function;
        # under jit and vmap; <u, J v> = <J^T u, v> between jvp and vjp.
        @tg.custom_vjp
        def h(x, y):
            return tnp.sin(x) * y

        h.defvjp(lambda x, y: (h(x, y), (tnp.cos(x), tnp.sin(x), y)),
                 lambda r, g: (r[0] * r[2] * g, r[1] * g))
        plain = lambda x, y: tnp.sin(x) * y  # noqa: E731
        for fn in (tg.hessian, lambda f: tg.jit(tg.hessian(f))):
            close(fn(h)(0.3, 2.0), fn(plain)(0.3, 2.0))
        close(tg.hessian(h, argnums=(0, 1))(0.3, 2.0)[0][1], np.cos(0.3))

        @tg.custom_vjp
        def v(x):
            return tnp.tanh(x) * 2.0

        v.defvjp(lambda x: (v(x), 1 - tnp.tanh(x) ** 2), lambda r, g: (2.0 * r * g,))
        x = np.linspace(-1, 1, 4)
        want = np.diag(2 * (1 - np.tanh(x) ** 2))
        np.testing.assert_allclose(tg.jacfwd(v)(x), want, rtol=1e-13)
        np.testing.assert_allclose(tg.vmap(tg.jacfwd(v))(np.stack([x, x])), [want, want],
                                   rtol=1e-13)
        rng = np.random.default_rng(0)
        for _ in range(5):
            u, w = rng.standard_normal(4), rng.standard_normal(4)
            jv = tg.jvp(v, (x,), (w,))[1]
            jtu = tg.vjp(v, x)[1](u)[0]
            close(np.dot(u, jv), np.dot(jtu, w))

    def test_forward_mode_through_a_nonlinear_bwd_names_it(self):
        @tg.custom_vjp
        def clip_gradient(lo, hi, x):
            return x

        clip_gradient.defvjp(lambda lo, hi, x: (x, (lo, hi)),
                             lambda res, g: (None, None, tnp.clip(g, *res)))
        with pytest.raises(TypeError, match=r"^can't apply forward-mode autodiff \(jvp\) to a "
                                            r"custom_vjp function\. .*\(jvp, jacfwd, hessian, "
                                            r"linearize\) of the custom_vjp function "
                                            r"clip_gradient .*not linear.*custom_jvp"):
            tg.jvp(lambda x: clip_gradient(-1.0, 1.0, x), (0.5,), (1.0,))

    def test_non_linear_jvp_rule_fails_in_reverse_mode_naming_function(self):
        @tg.custom_jvp
        def squash(x):
            return tnp.sin(x)

        @squash.defjvp
        def squash_jvp(primals, tangents):
            return squash(primals[0]), tangents[0] * tangents[0]

        # forward mode is fine (the rule is just called)
        close(tg.jvp(squash, (f64(0.3),), (f64(3.),))[1], 9.)
        for run in (lambda: tg.grad(squash)(0.3), lambda: tg.vjp(squash, 0.3)[1](1.),
                    lambda: tg.jit(tg.grad(squash))(0.3)):
            with pytest.raises(TypeError) as ei:
                run()
            msg = str(ei.value)
            assert "squash" in msg and "not linear" in msg and "custom_jvp" in msg

    def test_non_linear_sin_of_tangent_rule_error(self):
        @tg.custom_jvp
        def weird(x):
            return x

        weird.defjvp(lambda p, t: (weird(p[0]), tnp.sin(t[0])))
        with pytest.raises(TypeError, match=r"custom_jvp rule of weird is not linear"):
            tg.grad(weird)(1.)

    def test_eager_derivatives_of_custom_rules_are_ndarrays(self):
        f, _ = make_vjp_3x()
        g = tg.grad(f)(f64(1.))
        assert isinstance(g, np.ndarray) and g.dtype == np.float64
        (ct,) = tg.vjp(f, f64(1.))[1](f64(1.))
        assert isinstance(ct, np.ndarray)
        h, _ = make_jvp_3x()
        _, t = tg.jvp(h, (f64(1.),), (f64(1.),))
        assert isinstance(t, np.ndarray)


# ---------------------------------------------------------------------------
# vmap


class TestVmap:
    def test_seed_example_custom_vjp_3_instead_of_2(self):
        f, _ = make_vjp_3x()
        close(tg.grad(f)(1.), 3.)
        close(tg.vmap(tg.grad(f))(np.ones(4)), [3., 3., 3., 3.])
        close(tg.grad(lambda x: tg.vmap(f)(x).sum())(np.ones(4)), [3., 3., 3., 3.])

    def test_seed_example_custom_jvp_3_instead_of_2(self):
        f, _ = make_jvp_3x()
        close(tg.grad(f)(1.), 3.)
        close(tg.vmap(tg.grad(f))(np.ones(4)), [3., 3., 3., 3.])
        close(tg.grad(lambda x: tg.vmap(f)(x).sum())(np.ones(4)), [3., 3., 3., 3.])

    def test_jvp_of_vmap_equals_jvp_of_stacked_loop(self):
        f, _ = make_jvp_3x()
        xs, ts = f64([1., 2., 3.]), f64([0.5, -1., 2.])
        want = tg.jvp(lambda xs: tnp.stack([f(x) for x in xs]), (xs,), (ts,))
        got = tg.jvp(tg.vmap(f), (xs,), (ts,))
        assert_tree_close(got, want)
        close(got[1], 3. * ts)
        g, _ = make_sin_2cos()
        want = tg.jvp(lambda xs: tnp.stack([g(x) for x in xs]), (xs,), (ts,))
        got = tg.jvp(tg.vmap(g), (xs,), (ts,))
        assert_tree_close(got, want)
        close(got[1], 2 * np.cos(xs) * ts)

    def test_vmap_of_jvp_uses_rule(self):
        f, cnt = make_sin_2cos()
        xs, ts = XS4, f64([1., 2., 3., 4.])
        ys, tys = tg.vmap(lambda x, t: tg.jvp(f, (x,), (t,)))(xs, ts)
        close(ys, np.sin(xs))
        close(tys, 2 * np.cos(xs) * ts)
        # the rule is vmapped, not run once per element
        assert cnt["jvp"] == 1

    def test_vmap_with_unbatched_argument_custom_vjp_sums_cotangent(self):
        @tg.custom_vjp
        def f(x, y):
            return tnp.sin(x) * y

        def fwd(x, y):
            return f(x, y), (tnp.cos(x), tnp.sin(x), y)

        def bwd(res, g):
            c, s, y = res
            return (g * c * y, g * s)

        f.defvjp(fwd, bwd)
        xs, y = f64([0.1, 0.2, 0.3]), 2.
        close(tg.grad(lambda y: tg.vmap(f, (0, None))(xs, y).sum())(y), np.sin(xs).sum())
        close(tg.grad(lambda x: tg.vmap(f, (None, 0))(x, xs).sum())(0.5), np.cos(.5) * xs.sum())
        gx, gy = tg.vmap(tg.grad(f, (0, 1)), (0, None))(xs, y)
        close(gx, np.cos(xs) * y)
        close(gy, np.sin(xs))
        close(tg.jacrev(lambda x: tg.vmap(f, (0, None))(x, y))(xs), np.diag(np.cos(xs) * y))

    def test_vmap_in_axes_1_and_out_axes(self):
        f, _ = make_sin_2cos()
        x = np.arange(6.).reshape(2, 3) / 5.
        out = tg.vmap(tg.vmap(tg.grad(f)), in_axes=1, out_axes=1)(x)
        close(out, 2 * np.cos(x))
        g, _ = make_sin_2cos_vjp()
        out = tg.vmap(tg.vmap(tg.grad(g)), in_axes=1, out_axes=1)(x)
        close(out, 2 * np.cos(x))

    def test_nested_vmap_grad_of_vmap(self):
        g, _ = make_sin_2cos_vjp()
        x = np.arange(6.).reshape(2, 3) / 5.
        out = tg.vmap(tg.grad(lambda row: tg.vmap(g)(row).sum()))(x)
        close(out, 2 * np.cos(x))


# ---------------------------------------------------------------------------
# jit and staging


class TestJit:
    @pytest.mark.parametrize("maker", [make_vjp_3x, make_jvp_3x], ids=["vjp", "jvp"])
    def test_all_compositions_use_rule(self, maker):
        f, _ = maker()
        ones = np.ones(4)
        close(tg.grad(tg.jit(f))(1.), 3.)
        close(tg.jit(tg.grad(f))(1.), 3.)
        close(tg.jit(tg.vmap(tg.grad(f)))(ones), 3 * ones)
        close(tg.vmap(tg.jit(tg.grad(f)))(ones), 3 * ones)
        close(tg.grad(lambda x: tg.jit(tg.vmap(f))(x).sum())(ones), 3 * ones)
        close(tg.grad(lambda x: tg.vmap(tg.jit(f))(x).sum())(ones), 3 * ones)
        close(tg.jit(tg.grad(lambda x: tg.vmap(f)(x).sum()))(ones), 3 * ones)
        close(tg.grad(lambda x: tg.jit(lambda y: f(y) * y)(x))(2.), 3. * 2. + 4.)

    def test_jvp_of_jit_and_jit_of_jvp_custom_jvp(self):
        f, _ = make_sin_2cos()
        close(tg.jvp(tg.jit(f), (0.3,), (2.,))[1], 4. * np.cos(0.3))
        close(tg.jit(lambda x: tg.jvp(f, (x,), (2.,))[1])(0.3), 4. * np.cos(0.3))
        close(tg.jvp(tg.jit(tg.vmap(f)), (XS4,), (np.ones(4),))[1], 2 * np.cos(XS4))

    def test_make_jaxpr_contains_custom_jvp_call_and_primal_program(self):
        f, cnt = make_sin_2cos()
        text = str(tg.make_jaxpr(f)(1.))
        assert "custom_jvp_call" in text
        assert "sin" in text
        assert "cos" not in text  # the rule is not part of the primal program
        assert "name='f'" in text
        assert cnt["jvp"] == 0

    def test_make_jaxpr_contains_custom_vjp_call_and_primal_program(self):
        f, cnt = make_sin_2cos_vjp()
        text = str(tg.make_jaxpr(lambda x: f(x) * 2.)(f64([1., 2.])))
        assert "custom_vjp_call" in text
        assert "sin" in text and "cos" not in text
        assert "f64[2]" in text
        assert cnt["fwd"] == 0 and cnt["bwd"] == 0

    def test_make_jaxpr_under_vmap_keeps_call(self):
        f, _ = make_sin_2cos()
        text = str(tg.make_jaxpr(tg.vmap(f))(XS4))
        assert "custom_jvp_call" in text and "f64[4]" in text

    def test_rules_are_traced_lazily_custom_jvp(self):
        f, cnt = make_sin_2cos()
        close(tg.jit(f)(0.5), np.sin(0.5))
        tg.make_jaxpr(f)(0.5)
        tg.make_jaxpr(tg.vmap(f))(XS4)
        close(tg.jit(tg.vmap(f))(XS4), np.sin(XS4))
        assert cnt["jvp"] == 0
        assert cnt["f"] >= 1
        close(tg.grad(tg.jit(f))(0.5), 2 * np.cos(0.5))
        assert cnt["jvp"] >= 1

    def test_rules_are_traced_lazily_custom_vjp(self):
        f, cnt = make_sin_2cos_vjp()
        close(tg.jit(f)(0.5), np.sin(0.5))
        tg.make_jaxpr(f)(0.5)
        tg.make_jaxpr(tg.jit(tg.vmap(f)))(XS4)
        assert cnt["fwd"] == 0 and cnt["bwd"] == 0
        close(tg.grad(tg.jit(f))(0.5), 2 * np.cos(0.5))
        assert cnt["fwd"] >= 1 and cnt["bwd"] >= 1

    def test_jit_cache_reuses_program_and_rule(self):
        f, cnt = make_sin_2cos()
        jg = tg.jit(tg.grad(f))
        for x in (0.1, 0.2, 0.3):
            close(jg(x), 2 * np.cos(x))
        # traced once: the rule ran for the single compilation only
        assert cnt["jvp"] == 1

    def test_make_jaxpr_of_grad_uses_rule(self):
        f, _ = make_jvp_3x()
        closed = tg.make_jaxpr(tg.grad(f))(1.)
        assert "3.0" in str(closed)
        close(tg.jit(tg.grad(f))(7.), 3.)


# ---------------------------------------------------------------------------
# Higher order


class TestHigherOrder:
    def test_rule_calling_f_gives_correct_second_derivative(self):
        f, _ = make_sin_2cos()
        x = 0.7
        close(tg.grad(f)(x), 2 * np.cos(x))
        close(tg.grad(tg.grad(f))(x), -2 * np.sin(x))
        close(tg.grad(tg.grad(tg.grad(f)))(x), -2 * np.cos(x))
        close(tg.jit(tg.grad(tg.grad(f)))(x), -2 * np.sin(x))
        close(tg.grad(tg.jit(tg.grad(f)))(x), -2 * np.sin(x))
        close(tg.grad(tg.grad(tg.jit(f)))(x), -2 * np.sin(x))
        close(tg.vmap(tg.grad(tg.grad(f)))(XS4), -2 * np.sin(XS4))

    def test_jvp_of_grad(self):
        f, _ = make_sin_2cos()
        x = 0.7
        g, gt = tg.jvp(tg.grad(f), (x,), (3.,))
        close(g, 2 * np.cos(x))
        close(gt, -2 * np.sin(x) * 3.)
        close(tg.jit(lambda x: tg.jvp(tg.grad(f), (x,), (1.,))[1])(x), -2 * np.sin(x))
        close(tg.hessian(f)(x), -2 * np.sin(x))

    def test_true_rule_third_order_fd(self):
        @tg.custom_jvp
        def tanh(x):
            return tnp.tanh(x)

        @tanh.defjvp
        def tanh_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            y = tanh(x)
            return y, (1. - y * y) * t

        check_grads(tanh, (f64([-1.5, 0.2, 0.9]),), order=3, **FD)
        check_grads(tg.jit(tanh), (f64([-1.5, 0.2]),), order=2, **FD)

    def test_custom_vjp_reverse_over_reverse(self):
        f, _ = make_sin_2cos_vjp()
        x = 0.7
        # bwd uses the residual cos(x), which is differentiated by the outer grad
        close(tg.grad(tg.grad(f))(x), -2 * np.sin(x))
        close(tg.jit(tg.grad(tg.grad(f)))(x), -2 * np.sin(x))
        close(tg.vmap(tg.grad(tg.grad(f)))(XS4), -2 * np.sin(XS4))


# ---------------------------------------------------------------------------
# Python flexibility


class TestPythonFlexibility:
    def test_control_flow_in_custom_jvp_fun_and_rule(self):
        @tg.custom_jvp
        def f(x):
            if x > 0:
                return tnp.sin(x)
            else:
                return tnp.cos(x)

        @f.defjvp
        def f_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            ans = f(x)
            if x > 0:
                return ans, 2 * t
            else:
                return ans, 3 * t

        close(f(1.), np.sin(1.))
        close(f(-1.), np.cos(-1.))
        close(tg.grad(f)(1.), 2.)
        close(tg.grad(f)(-1.), 3.)
        close(tg.jvp(f, (-1.,), (2.,))[1], 6.)

    def test_control_flow_in_custom_vjp_fun_fwd_and_bwd(self):
        @tg.custom_vjp
        def f(x):
            if x > 0:
                return tnp.sin(x)
            else:
                return tnp.cos(x)

        def f_fwd(x):
            if x > 0:
                return f(x), x
            else:
                return f(x), x

        def f_bwd(x, g):
            if x > 0:
                return (2 * g,)
            else:
                return (3 * g,)

        f.defvjp(f_fwd, f_bwd)
        close(f(1.), np.sin(1.))
        close(f(-1.), np.cos(-1.))
        close(tg.grad(f)(1.), 2.)
        close(tg.grad(f)(-1.), 3.)

    def test_bwd_sees_concrete_values_and_can_print(self, capsys):
        log = []

        @tg.custom_vjp
        def f(x):
            return tnp.exp(x)

        def fwd(x):
            y = tnp.exp(x)
            return y, y

        def bwd(y, g):
            assert isinstance(y, np.ndarray) and isinstance(g, np.ndarray)
            log.append((float(y), float(g)))
            print(f"bwd: y={float(y):.4f} g={float(g):.1f}")
            if not np.isfinite(y):  # NaN-debugging workflow
                raise FloatingPointError("non-finite residual")
            return (y * g,)

        f.defvjp(fwd, bwd)
        close(tg.grad(f)(0.5), np.exp(0.5))
        assert log == [(float(np.exp(0.5)), 1.0)]
        assert capsys.readouterr().out == f"bwd: y={np.exp(0.5):.4f} g=1.0\n"

    def test_jvp_rule_sees_concrete_values_under_grad(self):
        seen = []

        @tg.custom_jvp
        def f(x):
            return x ** 3

        @f.defjvp
        def f_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            seen.append(float(x))  # concrete primal even in reverse mode
            return f(x), 3 * x ** 2 * t

        close(tg.grad(f)(2.), 12.)
        close(tg.jvp(f, (3.,), (1.,))[1], 27.)
        assert seen == [2., 3.]


# ---------------------------------------------------------------------------
# Pytrees


Point = namedtuple("Point", ["a", "b"])


class TestPytrees:
    def _jvp_fun(self):
        @tg.custom_jvp
        def f(d, p):
            return {"s": d["x"] * p.a, "t": (p.b ** 2, tnp.sin(d["x"]))}

        @f.defjvp
        def f_jvp(primals, tangents):
            (d, p), (dd, dp) = primals, tangents
            assert isinstance(p, Point) and isinstance(dp, Point)
            assert set(d) == {"x"} and set(dd) == {"x"}
            return f(d, p), {"s": dd["x"] * p.a + d["x"] * dp.a,
                             "t": (2 * p.b * dp.b, tnp.cos(d["x"]) * dd["x"])}

        return f

    def test_custom_jvp_pytree_inputs_outputs_tangents(self):
        f = self._jvp_fun()
        d, p = {"x": 1.5}, Point(2., 3.)
        out = f(d, p)
        assert_tree_close(out, {"s": 3., "t": (9., np.sin(1.5))})
        y, t = tg.jvp(f, (d, p), ({"x": 1.}, Point(0.5, 2.)))
        assert_tree_close(y, out)
        assert_tree_close(t, {"s": 1. * 2. + 1.5 * 0.5, "t": (12., np.cos(1.5))})
        gd, gp = tg.grad(lambda d, p: f(d, p)["s"] + f(d, p)["t"][0] + 2 * f(d, p)["t"][1],
                         (0, 1))(d, p)
        assert_tree_close(gd, {"x": 2. + 2 * np.cos(1.5)})
        assert isinstance(gp, Point)
        assert_tree_close(gp, Point(1.5, 6.))
        check_grads(lambda x, a, b: f({"x": x}, Point(a, b)), (0.3, 1.2, -0.7), order=2, **FD)

    def test_custom_vjp_pytree_inputs_outputs_residuals_cotangents(self):
        @tg.custom_vjp
        def f(d, p):
            return {"s": d["x"] * p.a, "t": (p.b ** 2, tnp.sin(d["x"]))}

        def fwd(d, p):
            res = Point(a={"x": d["x"], "c": tnp.cos(d["x"])}, b=(p.a, p.b))
            return f(d, p), res

        def bwd(res, ct):
            assert isinstance(res, Point) and set(res.a) == {"x", "c"}
            assert set(ct) == {"s", "t"} and isinstance(ct["t"], tuple)
            x, c = res.a["x"], res.a["c"]
            a, b = res.b
            return ({"x": ct["s"] * a + ct["t"][1] * c}, Point(a=ct["s"] * x, b=2 * b * ct["t"][0]))

        f.defvjp(fwd, bwd)
        d, p = {"x": 1.5}, Point(2., 3.)
        gd, gp = tg.grad(lambda d, p: f(d, p)["s"] + 2 * f(d, p)["t"][0]
                         + 3 * f(d, p)["t"][1], (0, 1))(d, p)
        assert_tree_close(gd, {"x": 2. + 3 * np.cos(1.5)})
        assert isinstance(gp, Point)
        assert_tree_close(gp, Point(1.5, 12.))
        out, pull = tg.vjp(f, d, p)
        assert_tree_close(out, {"s": 3., "t": (9., np.sin(1.5))})
        cd_, cp = pull({"s": f64(1.), "t": (f64(2.), f64(3.))})
        assert_tree_close(cd_, {"x": 2. + 3 * np.cos(1.5)})
        assert_tree_close(cp, Point(1.5, 12.))
        check_grads(lambda x, a, b: f({"x": x}, Point(a, b)), (0.3, 1.2, -0.7), order=1,
                    modes="rev", **FD)
        # under jit and vmap
        g = tg.jit(tg.grad(lambda d, p: f(d, p)["s"], (0, 1)))(d, p)
        assert_tree_close(g, ({"x": 2.}, Point(1.5, 0.)))
        gv = tg.vmap(tg.grad(lambda x: f({"x": x}, p)["t"][1]))(XS4)
        close(gv, np.cos(XS4))

    def test_bwd_none_inside_argument_pytree(self):
        @tg.custom_vjp
        def f(pair, z):
            a, b = pair
            return a * b * z

        def fwd(pair, z):
            return f(pair, z), (pair, z)

        def bwd(res, g):
            (a, b), z = res
            return ((g * b * z, None), None)  # None for a leaf and for a whole argument

        f.defvjp(fwd, bwd)
        (ga, gb), gz = tg.grad(f, (0, 1))((2., 3.), 4.)
        close(ga, 12.)
        close(gb, 0.)
        close(gz, 0.)

    def test_jvp_rule_wrong_tangent_structure_error(self):
        @tg.custom_jvp
        def f(x):
            return x

        @f.defjvp
        def f_jvp(primals, tangents):
            return f(primals[0]), (tangents[0], tangents[0])

        with pytest.raises(TypeError) as ei:
            tg.jvp(f, (1.,), (1.,))
        msg = str(ei.value)
        assert msg.startswith("Custom JVP rule f_jvp for function f must produce primal and "
                              "tangent outputs with equal container (pytree) structures, but got "
                              "PyTreeDef(*) and PyTreeDef((*, *)) respectively.")

    def test_jvp_rule_wrong_primal_structure_error(self):
        @tg.custom_jvp
        def f(x):
            return (x, 2. * x)

        @f.defjvp
        def f_jvp(primals, tangents):
            return primals[0], tangents[0]

        # under staging the primal function is traced first, so the rule's primal
        # output is checked against it
        with pytest.raises(TypeError) as ei:
            tg.jvp(tg.jit(f), (1.,), (1.,))
        msg = str(ei.value)
        assert "f_jvp" in msg and "function f" in msg
        assert "primal output" in msg
        assert "expected PyTreeDef((*, *))" in msg and "got PyTreeDef(*)" in msg

    def test_jvp_rule_wrong_tangent_shape_error(self):
        @tg.custom_jvp
        def f(x):
            return x

        f.defjvp(lambda p, t: (f(p[0]), tnp.ones(3)))
        with pytest.raises(TypeError) as ei:
            tg.jvp(f, (np.ones(2),), (np.ones(2),))
        msg = str(ei.value)
        assert msg.startswith("Custom JVP rule must produce primal and tangent outputs with "
                              "corresponding shapes and dtypes. Expected float64[2] (tangent type "
                              "of float64[2]) but got float64[3].")
        assert "<lambda>" in msg and "function f" in msg

    def test_jvp_rule_wrong_tangent_dtype_error(self):
        @tg.custom_jvp
        def f(x):
            return x

        f.defjvp(lambda p, t: (f(p[0]), np.ones((), np.int64)))
        with pytest.raises(TypeError) as ei:
            tg.jvp(f, (1.,), (1.,))
        msg = str(ei.value)
        assert "function f" in msg and "float64" in msg and "int64" in msg

    def test_jvp_rule_must_return_pair(self):
        @tg.custom_jvp
        def f(x):
            return x

        @f.defjvp
        def bad_rule(primals, tangents):
            return f(primals[0])

        with pytest.raises(TypeError, match=r"bad_rule .*function f .*pair"):
            tg.jvp(f, (1.,), (1.,))

    def test_bwd_wrong_tuple_length_error(self):
        @tg.custom_vjp
        def f(x, y):
            return x * y

        def my_bwd(res, g):
            return (g * res[1],)

        f.defvjp(lambda x, y: (f(x, y), (x, y)), my_bwd)
        with pytest.raises(TypeError) as ei:
            tg.grad(f)(1., 2.)
        msg = str(ei.value)
        assert "my_bwd" in msg and "function f" in msg
        assert "(2)" in msg and "length 1" in msg

    def test_bwd_not_a_tuple_error(self):
        @tg.custom_vjp
        def f(x):
            return x

        def my_bwd(res, g):
            return g

        f.defvjp(lambda x: (f(x), None), my_bwd)
        with pytest.raises(TypeError, match=r"tuple.*my_bwd of function f"):
            tg.grad(f)(1.)

    def test_bwd_wrong_argument_structure_error(self):
        @tg.custom_vjp
        def f(x, y):
            return x["a"] * x["b"] * y

        def my_bwd(res, g):
            # argument 0 is a dict of two arrays (one array for a one-leaf dict is accepted,
            # as in JAX)
            return (g * res[1], g)

        f.defvjp(lambda x, y: (f(x, y), (x, y)), my_bwd)
        with pytest.raises(TypeError) as ei:
            tg.grad(f)({"a": 1., "b": 1.}, 2.)
        msg = str(ei.value)
        assert "my_bwd" in msg and "function f" in msg and "argument 0" in msg
        assert "PyTreeDef(*)" in msg and "PyTreeDef({'a': *, 'b': *})" in msg

    def test_bwd_cotangent_with_extra_structure_error(self):
        @tg.custom_vjp
        def f(x):
            return x

        def my_bwd(res, g):
            return ({"a": g},)

        f.defvjp(lambda x: (f(x), None), my_bwd)
        with pytest.raises(TypeError) as ei:
            tg.grad(f)(1.)
        msg = str(ei.value)
        assert "my_bwd" in msg and "argument 0" in msg and "PyTreeDef" in msg

    def test_bwd_wrong_shape_error(self):
        @tg.custom_vjp
        def f(x):
            return x.sum()

        def my_bwd(res, g):
            return (tnp.ones(3) * g,)

        f.defvjp(lambda x: (f(x), None), my_bwd)
        with pytest.raises(ValueError) as ei:  # JAX's type
            tg.grad(f)(np.ones(2))
        msg = str(ei.value)
        assert msg.startswith("Custom VJP bwd rule must produce an output "
                              "with the same type as the args tuple of the primal function, but "
                              "at output[0] the bwd rule produced an output of type float64[3] "
                              "corresponding to an input of type float64[2]")
        assert "(3,)" in msg and "(2,)" in msg and "argument 0" in msg and "my_bwd" in msg

    def test_fwd_must_return_pair_and_matching_output(self):
        @tg.custom_vjp
        def f(x):
            return x

        def my_fwd(x):
            return x

        f.defvjp(my_fwd, lambda r, g: (g,))
        with pytest.raises(TypeError, match=r"my_fwd .*function f .*pair"):
            tg.grad(f)(1.)

        @tg.custom_vjp
        def h(x):
            return x

        def fwd2(x):
            return (x, x), None

        h.defvjp(fwd2, lambda r, g: (g,))
        with pytest.raises(TypeError) as ei:
            tg.grad(tg.jit(h))(1.)
        msg = str(ei.value)
        assert "fwd2" in msg and "function h" in msg
        assert "PyTreeDef(*)" in msg and "PyTreeDef((*, *))" in msg


# ---------------------------------------------------------------------------
# kwargs


class TestKwargs:
    def test_custom_jvp_kwargs_resolved_to_positions(self):
        seen = []

        @tg.custom_jvp
        def f(x, y, scale=2.):
            return scale * x * y

        @f.defjvp
        def f_jvp(primals, tangents):
            seen.append(len(primals))
            (x, y, s), (tx, ty, ts) = primals, tangents
            return f(x, y, s), s * (tx * y + x * ty) + ts * x * y

        close(f(x=1., y=3.), 6.)
        close(tg.grad(lambda x: f(y=3., x=x))(1.), 6.)
        close(tg.grad(lambda x: f(x, y=3., scale=5.))(1.), 15.)
        close(tg.grad(lambda s: f(2., 3., scale=s))(1.), 6.)
        close(tg.jit(lambda x: f(y=x, x=2.))(4.), 16.)
        close(tg.vmap(lambda x: f(x, y=2.))(XS4), 4 * XS4)
        close(tg.vmap(tg.grad(lambda x: f(y=x, x=2., scale=0.5)))(XS4), np.ones(4))
        assert seen and all(n == 3 for n in seen)

    def test_custom_vjp_kwargs_resolved_to_positions(self):
        seen = []

        @tg.custom_vjp
        def f(x, y):
            return x * y

        def fwd(*args, **kwargs):
            seen.append((len(args), dict(kwargs)))
            return f(*args), args

        def bwd(res, g):
            x, y = res
            return (g * y, g * x)

        f.defvjp(fwd, bwd)
        close(tg.grad(lambda x: f(y=3., x=x))(2.), 3.)
        close(tg.grad(lambda y: f(2., y=y))(5.), 2.)
        close(tg.jit(tg.grad(lambda x: f(x, y=4.)))(2.), 4.)
        assert seen and all(s == (2, {}) for s in seen)

    def test_keyword_only_parameters_are_rejected_clearly(self):
        @tg.custom_jvp
        def f(x, *, y):
            return x * y

        f.defjvp(lambda p, t: (f(*p), t[0]))
        with pytest.raises(TypeError) as ei:
            f(1., y=2.)
        assert str(ei.value).startswith(
            "The input arguments to the custom_jvp-decorated function f could not be resolved to "
            "positional-only arguments. Binding failed with the error:\nThe following keyword "
            "arguments could not be resolved to positions: y")


# ---------------------------------------------------------------------------
# nondiff_argnums


def make_clip_gradient_old():
    @partial(tg.custom_vjp, nondiff_argnums=(0, 1))
    def clip_gradient(lo, hi, x):
        return x  # identity function

    def clip_gradient_fwd(lo, hi, x):
        return x, None  # no residual values to save

    def clip_gradient_bwd(lo, hi, _, g):
        return (tnp.clip(g, lo, hi),)

    clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)
    return clip_gradient


def make_clip_gradient_new():
    @tg.custom_vjp  # no nondiff_argnums!
    def clip_gradient(lo, hi, x):
        return x  # identity function

    def clip_gradient_fwd(lo, hi, x):
        return x, (lo, hi)  # save lo and hi values as residuals

    def clip_gradient_bwd(res, g):
        lo, hi = res
        return (None, None, tnp.clip(g, lo, hi))  # return None for lo and hi

    clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)
    return clip_gradient


class TestNondiffArgnums:
    def test_custom_jvp_nondiff_passed_first_to_rule(self):
        seen = []

        @partial(tg.custom_jvp, nondiff_argnums=(1,))
        def f(x, n, y):
            return x ** n * y

        @f.defjvp
        def f_jvp(n, primals, tangents):
            seen.append(n)
            (x, y), (tx, ty) = primals, tangents
            return f(x, n, y), n * x ** (n - 1) * y * tx + x ** n * ty

        close(f(2., 3, 5.), 40.)
        gx, gy = tg.grad(f, (0, 2))(2., 3, 5.)
        close(gx, 60.)
        close(gy, 8.)
        assert seen == [3]

    def test_custom_jvp_nondiff_traced_array_under_vmap_and_jit(self):
        @partial(tg.custom_jvp, nondiff_argnums=(0,))
        def scale(a, x):
            return a * x

        @scale.defjvp
        def scale_jvp(a, primals, tangents):
            (x,), (t,) = primals, tangents
            return scale(a, x), 10. * a * t  # deliberately 10x

        close(tg.jvp(lambda x: scale(2., x), (1.,), (1.,))[1], 20.)
        a = f64([0., 1., 2.])
        close(tg.vmap(lambda a: tg.grad(lambda x: scale(a, x))(1.))(a), 10. * a)
        close(tg.vmap(scale)(a, np.ones(3)), a)
        close(tg.vmap(tg.grad(scale, 1))(a, np.ones(3)), 10. * a)
        close(tg.jit(lambda a: tg.grad(lambda x: scale(a, x))(1.))(3.), 30.)
        close(tg.grad(lambda x: tg.jit(lambda a: scale(a, x))(3.))(1.), 30.)
        close(tg.jit(tg.vmap(tg.grad(scale, 1)))(a, np.ones(3)), 10. * a)
        close(tg.grad(lambda x: tg.vmap(lambda a: scale(a, x))(a).sum())(1.), 30.)
        close(tg.jvp(lambda a: tg.vmap(lambda x: scale(a, x))(XS4), (2.,), (1.,))[1], 0. * XS4)

    def test_custom_jvp_nondiff_argument_is_not_differentiated(self):
        # As in JAX, nondiff arguments are treated with stop_gradient.
        @partial(tg.custom_jvp, nondiff_argnums=(0,))
        def scale(a, x):
            return a * x

        scale.defjvp(lambda a, p, t: (scale(a, p[0]), a * t[0]))
        close(tg.grad(lambda a: scale(a, 3.))(2.), 0.)
        close(tg.grad(lambda a: scale(a, 3.) + a * a)(2.), 4.)

    def test_custom_jvp_callable_nondiff(self):
        @partial(tg.custom_jvp, nondiff_argnums=(0,))
        def app(f, x):
            return f(x)

        @app.defjvp
        def app_jvp(f, primals, tangents):
            (x,), (t,) = primals, tangents
            return app(f, x), 3 * t

        close(app(lambda x: 2 * x, 1), 2)
        y, t = tg.jvp(lambda x: app(lambda y: 2 * y, x), (1.,), (1.,))
        close(y, 2.)
        close(t, 3.)
        close(tg.grad(lambda x: app(tnp.sin, x))(0.3), 3.)
        close(tg.vmap(tg.grad(lambda x: app(tnp.sin, x)))(XS4), 3 * np.ones(4))
        close(tg.jit(tg.grad(lambda x: app(tnp.sin, x)))(0.3), 3.)

    def test_custom_vjp_callable_nondiff_app(self):
        @partial(tg.custom_vjp, nondiff_argnums=(0,))
        def app(f, x):
            return f(x)

        def app_fwd(f, x):
            return app(f, x), tnp.cos(x)

        def app_rev(f, cos_x, g):
            return (cos_x * g,)

        app.defvjp(app_fwd, app_rev)
        close(app(lambda x: 2 * x, 1), 2)
        v, g = tg.value_and_grad(lambda x: app(lambda y: 2 * y, x))(1.)
        close(v, 2.)
        close(g, np.cos(1.))
        close(tg.jit(tg.grad(lambda x: app(tnp.exp, x)))(0.3), np.cos(0.3))
        close(tg.vmap(tg.grad(lambda x: app(tnp.exp, x)))(XS4), np.cos(XS4))

    def test_custom_vjp_true_app_rule_fd(self):
        @partial(tg.custom_vjp, nondiff_argnums=(0,))
        def app(f, x):
            return f(x)

        def app_fwd(f, x):
            y, pull = tg.vjp(f, x)
            return y, x

        def app_bwd(f, x, g):
            return tg.vjp(f, x)[1](g)

        app.defvjp(app_fwd, app_bwd)
        fn = lambda x: tnp.sin(x) * x  # noqa: E731
        check_grads(lambda x: app(fn, x), (f64([0.3, -1.1]),), order=2, modes="rev", **FD)
        close(tg.grad(lambda x: app(fn, x))(0.5), np.cos(.5) * .5 + np.sin(.5))

    def test_skip_app(self):
        @partial(tg.custom_vjp, nondiff_argnums=(0,))
        def skip_app(f, x):
            return f(x)

        def skip_app_fwd(f, x):
            return skip_app(f, x), None

        def skip_app_bwd(f, _, g):
            return (g,)

        skip_app.defvjp(skip_app_fwd, skip_app_bwd)
        close(skip_app(lambda y: 3 * y, 2.), 6.)
        close(tg.grad(lambda x: skip_app(lambda y: 3 * y, x))(2.), 1.)
        close(tg.grad(lambda x: skip_app(tnp.sin, x) * x)(2.), np.sin(2.) + 2.)
        close(tg.vmap(tg.grad(lambda x: skip_app(tnp.exp, x)))(XS4), np.ones(4))
        close(tg.jit(tg.grad(lambda x: skip_app(tnp.exp, x)))(2.), 1.)

    def test_custom_vjp_shape_and_string_nondiff(self):
        @partial(tg.custom_vjp, nondiff_argnums=(0, 2))
        def reshape_scale(shape, x, mode):
            return x.reshape(shape) * (2. if mode == "double" else 1.)

        def fwd(shape, x, mode):
            assert isinstance(shape, tuple) and isinstance(mode, str)
            return reshape_scale(shape, x, mode), x.shape

        def bwd(shape, mode, in_shape, g):
            assert isinstance(shape, tuple) and mode in ("double", "keep")
            k = 20. if mode == "double" else 10.
            return (k * g.reshape(in_shape),)

        reshape_scale.defvjp(fwd, bwd)
        x = np.arange(6.)
        close(reshape_scale((2, 3), x, "double"), 2 * x.reshape(2, 3))
        close(tg.grad(lambda x: reshape_scale((3, 2), x, "double").sum())(x), 20 * np.ones(6))
        close(tg.grad(lambda x: reshape_scale((3, 2), x, "keep").sum())(x), 10 * np.ones(6))
        close(tg.jit(tg.grad(lambda x: reshape_scale((6,), x, "keep").sum()))(x), 10 * np.ones(6))
        close(tg.vmap(tg.grad(lambda x: reshape_scale((2, 3), x, "keep").sum()))(
            np.ones((2, 6))), 10 * np.ones((2, 6)))

    def test_clip_gradient_old_style_with_python_floats(self):
        clip_gradient = make_clip_gradient_old()
        close(clip_gradient(-0.5, 0.5, 2.), 2.)
        close(tg.grad(lambda x: clip_gradient(-0.5, 0.5, x) * 3.)(1.), 0.5)
        close(tg.grad(lambda x: clip_gradient(-0.5, 0.5, x) * -3.)(1.), -0.5)
        close(tg.grad(lambda x: clip_gradient(-0.5, 0.5, x) * 0.25)(1.), 0.25)
        close(tg.vmap(tg.grad(lambda x: clip_gradient(-0.5, 0.5, x) * 3.))(XS4), 0.5 * np.ones(4))
        close(tg.jit(tg.grad(lambda x: clip_gradient(-0.5, 0.5, x) * 3.))(1.), 0.5)
        close(tg.grad(lambda x: tg.vmap(lambda y: clip_gradient(-1., 1., y) * 3.)(x).sum())(XS4),
              np.ones(4))

    # Traced lo/hi through nondiff_argnums (an error in JAX) work: test_custom_nondiff.py.

    def test_clip_gradient_new_style(self):
        clip_gradient = make_clip_gradient_new()
        L = lambda x, lo, hi: clip_gradient(lo, hi, x) * 3.  # noqa: E731
        close(L(2., -1., 1.), 6.)
        close(tg.grad(L)(1., -0.5, 0.5), 0.5)
        close(tg.jit(tg.grad(L))(1., -0.5, 0.5), 0.5)
        g_all = tg.grad(L, (0, 1, 2))(1., -0.5, 0.5)
        assert_tree_close(g_all, (0.5, 0., 0.))
        # lo/hi traced by vmap
        his = f64([0.5, 1., 4.])
        close(tg.vmap(tg.grad(L))(np.ones(3), -his, his), [0.5, 1., 3.])
        close(tg.vmap(tg.grad(L), (0, None, None))(np.ones(3), -1., 1.), np.ones(3))
        close(tg.vmap(tg.grad(L), (None, 0, 0))(1., -his, his), [0.5, 1., 3.])
        # lo/hi traced by jit
        close(tg.jit(lambda x, lo, hi: tg.grad(L)(x, lo, hi))(1., -2., 2.), 2.)
        close(tg.jit(tg.vmap(tg.grad(L)))(np.ones(3), -his, his), [0.5, 1., 3.])
        close(tg.grad(lambda x: tg.jit(L)(x, -0.5, 0.5))(1.), 0.5)
        # traced by an outer grad
        close(tg.grad(lambda hi: tg.grad(L)(1., -hi, hi) * hi)(0.25), 0.5)


# ---------------------------------------------------------------------------
# Closure over traced values


def _make_closing_jvp(c):
    @tg.custom_jvp
    def f(x):
        return c * tnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), c * 2. * tnp.cos(x) * t

    return f


def _make_closing_vjp(c):
    @tg.custom_vjp
    def f(x):
        return c * tnp.sin(x)

    def fwd(x):
        return f(x), tnp.cos(x)

    def bwd(cos_x, g):
        return (c * 2. * cos_x * g,)

    f.defvjp(fwd, bwd)
    return f


CLOSING = pytest.mark.parametrize("mk", [_make_closing_jvp, _make_closing_vjp],
                                  ids=["custom_jvp", "custom_vjp"])


class TestClosure:
    @CLOSING
    def test_closure_over_vmap_tracer(self, mk):
        cs = f64([0., 1., 2.5])
        close(tg.vmap(lambda c: mk(c)(1.))(cs), cs * np.sin(1.))
        close(tg.vmap(lambda c: tg.grad(mk(c))(1.))(cs), cs * 2 * np.cos(1.))
        close(tg.jit(tg.vmap(lambda c: tg.grad(mk(c))(1.)))(cs), cs * 2 * np.cos(1.))
        close(tg.vmap(lambda c: tg.vmap(tg.grad(mk(c)))(XS4))(cs),
              cs[:, None] * 2 * np.cos(XS4)[None, :])
        close(tg.vmap(lambda c: tg.jit(mk(c))(1.))(cs), cs * np.sin(1.))

    @CLOSING
    def test_closure_over_jit_tracer(self, mk):
        close(tg.jit(lambda c: mk(c)(1.))(2.), 2 * np.sin(1.))
        close(tg.jit(lambda c: tg.grad(mk(c))(1.))(2.), 4 * np.cos(1.))
        close(tg.jit(lambda c: tg.vmap(tg.grad(mk(c)))(XS4))(2.), 4 * np.cos(XS4))

    def test_closure_fun_and_rule_use_value_inner_jit_of_grad_custom_jvp(self):
        mk = _make_closing_jvp
        cs = f64([0., 1., 2.5])
        close(tg.vmap(lambda c: tg.grad(lambda x: tg.jit(mk(c))(x))(1.))(cs),
              cs * 2 * np.cos(1.))
        close(tg.jit(lambda c: tg.grad(tg.jit(mk(c)))(1.))(2.), 4 * np.cos(1.))

    @CLOSING
    def test_grad_over_vmap_with_closure(self, mk):
        close(tg.grad(lambda x: tg.vmap(lambda c: mk(c)(x))(f64([0., 1., 2.])).sum())(1.),
              3 * 2 * np.cos(1.))

    @pytest.mark.parametrize("how", ["grad", "grad_jit", "jvp", "grad_vmap"])
    def test_differentiating_closed_over_value_custom_jvp_errors(self, how):
        mk = _make_closing_jvp
        run = {
            "grad": lambda: tg.grad(lambda c: mk(c)(1.))(2.),
            "grad_jit": lambda: tg.grad(lambda c: tg.jit(mk(c))(1.))(2.),
            "jvp": lambda: tg.jvp(lambda c: mk(c)(1.), (2.,), (1.,)),
            "grad_vmap": lambda: tg.grad(lambda c: tg.vmap(mk(c))(XS4).sum())(2.),
        }[how]
        with pytest.raises(TypeError) as ei:
            run()
        msg = str(ei.value)
        assert "Detected differentiation of a custom_jvp function" in msg
        assert "closed-over value" in msg
        assert ("passing the closed-over value into the custom_jvp function as an argument"
                in msg)

    @pytest.mark.parametrize("how", ["grad", "grad_jit", "vjp", "grad_vmap"])
    def test_differentiating_closed_over_value_custom_vjp_errors(self, how):
        mk = _make_closing_vjp
        run = {
            "grad": lambda: tg.grad(lambda c: mk(c)(1.))(2.),
            "grad_jit": lambda: tg.grad(lambda c: tg.jit(mk(c))(1.))(2.),
            "vjp": lambda: tg.vjp(lambda c: mk(c)(1.), 2.)[1](1.),
            "grad_vmap": lambda: tg.grad(lambda c: tg.vmap(mk(c))(XS4).sum())(2.),
        }[how]
        with pytest.raises(TypeError) as ei:
            run()
        msg = str(ei.value)
        assert "Detected differentiation of a custom_vjp function" in msg
        assert "closed-over value" in msg
        assert ("passing the closed-over value into the custom_vjp function as an argument"
                in msg)

    def test_closed_over_constant_array_is_fine(self):
        c = f64([1., 2., 3.])

        @tg.custom_vjp
        def f(x):
            return c * x

        f.defvjp(lambda x: (f(x), None), lambda _, g: (3. * (c * g).sum(),))
        close(tg.grad(lambda x: f(x).sum())(2.), 18.)
        close(tg.jit(tg.grad(lambda x: f(x).sum()))(2.), 18.)

    @pytest.mark.parametrize("fun_uses_c", [True, False], ids=["fun_uses_c", "bwd_only"])
    @pytest.mark.parametrize("outer", ["vmap", "jit"])
    def test_bwd_closure_under_inner_jit(self, outer, fun_uses_c):
        def mk(c):
            k = c if fun_uses_c else 1.

            @tg.custom_vjp
            def f(x):
                return k * tnp.sin(x)

            f.defvjp(lambda x: (f(x), tnp.cos(x)), lambda cx, g: (c * cx * g,))
            return f

        if outer == "vmap":
            cs = f64([0., 1., 2.])
            close(tg.vmap(lambda c: tg.grad(tg.jit(mk(c)))(1.))(cs), cs * np.cos(1.))
        else:
            close(tg.jit(lambda c: tg.grad(tg.jit(mk(c)))(1.))(2.), 2 * np.cos(1.))

    @pytest.mark.parametrize("outer", ["vmap", "jit"])
    def test_rule_only_closure_under_inner_jit(self, outer):
        def mk(c):
            @tg.custom_jvp
            def f(x):
                return tnp.sin(x)

            f.defjvp(lambda p, t: (f(p[0]), c * tnp.cos(p[0]) * t[0]))
            return f

        if outer == "vmap":
            cs = f64([0., 1., 2.])
            close(tg.vmap(lambda c: tg.grad(tg.jit(mk(c)))(1.))(cs), cs * np.cos(1.))
        else:
            close(tg.jit(lambda c: tg.grad(tg.jit(mk(c)))(1.))(2.), 2 * np.cos(1.))

    @pytest.mark.parametrize("mk_kind", ["jvp", "vjp"])
    def test_rule_only_closure_without_inner_jit(self, mk_kind):
        def mk(c):
            if mk_kind == "jvp":
                @tg.custom_jvp
                def f(x):
                    return tnp.sin(x)

                f.defjvp(lambda p, t: (f(p[0]), c * tnp.cos(p[0]) * t[0]))
            else:
                @tg.custom_vjp
                def f(x):
                    return tnp.sin(x)

                f.defvjp(lambda x: (f(x), tnp.cos(x)), lambda cx, g: (c * cx * g,))
            return f

        cs = f64([0., 1., 2.])
        close(tg.vmap(lambda c: tg.grad(mk(c))(1.))(cs), cs * np.cos(1.))
        close(tg.jit(lambda c: tg.grad(mk(c))(1.))(2.), 2 * np.cos(1.))
        close(tg.vmap(lambda c: tg.jit(tg.grad(mk(c)))(1.))(cs), cs * np.cos(1.))


# ---------------------------------------------------------------------------
# Integer / bool inputs


class TestIntegerInputs:
    def test_custom_jvp_int_input_gets_float0_tangent(self):
        seen = []

        @tg.custom_jvp
        def f(x, n):
            return x ** n

        @f.defjvp
        def f_jvp(primals, tangents):
            (x, n), (tx, tn) = primals, tangents
            seen.append((tn.dtype, tn.shape))
            return f(x, n), n * x ** (n - 1) * tx

        f0 = tg.dtypes.float0
        y, t = tg.jvp(f, (2., 3), (1., np.zeros((), f0)))
        close(y, 8.)
        close(t, 12.)
        close(tg.grad(f)(2., 3), 12.)
        close(tg.jit(tg.grad(f))(2., 3), 12.)
        close(tg.vmap(tg.grad(f), (0, None))(f64([1., 2., 3.]), 3), [3., 12., 27.])
        close(tg.vmap(tg.grad(f))(f64([1., 2., 3.]), np.array([1, 2, 3])), [1., 4., 27.])
        assert seen and all(d == f0 for d, _ in seen)
        assert seen[0][1] == ()
        gn = tg.grad(f, 1, allow_int=True)(2., 3)
        assert gn.dtype == f0 and gn.shape == ()

    def test_custom_vjp_bwd_may_return_none_for_int(self):
        @tg.custom_vjp
        def f(x, n):
            return x ** n

        def fwd(x, n):
            return f(x, n), (x, n)

        def bwd(res, g):
            x, n = res
            return (g * n * x ** (n - 1), None)

        f.defvjp(fwd, bwd)
        close(tg.grad(f)(2., 3), 12.)
        close(tg.jit(tg.grad(f))(2., 3), 12.)
        close(tg.vmap(tg.grad(f))(f64([1., 2., 3.]), np.array([1, 2, 3])), [1., 4., 27.])
        gx, gn = tg.grad(f, (0, 1), allow_int=True)(2., 3)
        close(gx, 12.)
        assert gn.dtype == tg.dtypes.float0 and gn.shape == ()
        ct_x, ct_n = tg.vjp(f, f64(2.), np.int64(3))[1](f64(1.))
        close(ct_x, 12.)
        assert ct_n.dtype == tg.dtypes.float0

    def test_bool_input_mixed_with_floats(self):
        @tg.custom_vjp
        def f(x, flag):
            return tnp.where(flag, x * 2., x * 3.)

        def fwd(x, flag):
            return f(x, flag), flag

        def bwd(flag, g):
            return (tnp.where(flag, 20. * g, 30. * g), None)

        f.defvjp(fwd, bwd)
        flags = np.array([True, False])
        close(tg.grad(lambda x: f(x, flags).sum())(np.ones(2)), [20., 30.])
        close(tg.vmap(tg.grad(f))(np.ones(2), flags), [20., 30.])
        close(tg.jit(tg.grad(f))(1., True), 20.)

        @tg.custom_jvp
        def h(x, flag):
            return tnp.where(flag, x * 2., x * 3.)

        @h.defjvp
        def h_jvp(primals, tangents):
            (x, flag), (tx, tflag) = primals, tangents
            assert tflag.dtype == tg.dtypes.float0
            return h(x, flag), tnp.where(flag, 20. * tx, 30. * tx)

        close(tg.grad(h)(1., False), 30.)
        close(tg.jit(tg.grad(h))(1., True), 20.)
        close(tg.vmap(tg.grad(h))(np.ones(2), flags), [20., 30.])

    def test_integer_output_gets_float0_tangent(self):
        @tg.custom_jvp
        def f(x):
            return x * 2., tnp.argmax(x)

        @f.defjvp
        def f_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            return f(x), (2. * t, None)

        x = f64([1., 3., 2.])
        (y, i), (ty, ti) = tg.jvp(f, (x,), (np.ones(3),))
        close(y, 2 * x)
        assert int(i) == 1
        close(ty, 2 * np.ones(3))
        assert ti.dtype == tg.dtypes.float0
        close(tg.grad(lambda x: f(x)[0].sum())(x), 2 * np.ones(3))
        close(tg.jit(tg.grad(lambda x: f(x)[0].sum()))(x), 2 * np.ones(3))

    def test_bwd_nonzero_cotangent_for_int_is_replaced_by_float0(self):
        @tg.custom_vjp
        def f(x, n):
            return x * n

        f.defvjp(lambda x, n: (f(x, n), n), lambda n, g: (g * n, 0.))
        close(tg.grad(f)(2., 3), 3.)
        gx, gn = tg.grad(f, (0, 1), allow_int=True)(2., 3)
        close(gx, 3.)
        assert gn.dtype == tg.dtypes.float0


# ---------------------------------------------------------------------------
# symbolic_zeros


class TestSymbolicZeros:
    def test_jvp_rule_sees_symbolic_zero_for_unperturbed(self):
        seen = []

        @tg.custom_jvp
        def f(x, y):
            return x * y

        def f_jvp(primals, tangents):
            (x, y), (tx, ty) = primals, tangents
            seen.append((type(tx) is SymbolicZero, type(ty) is SymbolicZero))
            out = 0.
            if type(tx) is not SymbolicZero:
                out = out + tx * y
            if type(ty) is not SymbolicZero:
                out = out + x * ty
            return f(x, y), out

        f.defjvp(f_jvp, symbolic_zeros=True)
        close(tg.jvp(lambda x: f(x, 3.), (2.,), (1.,))[1], 3.)
        close(tg.grad(f)(2., 3.), 3.)
        close(tg.grad(f, 1)(2., 3.), 2.)
        close(tg.jit(tg.grad(f))(2., 3.), 3.)
        close(tg.vmap(tg.grad(f))(np.ones(2), f64([0., 1.])), [0., 1.])
        close(tg.jit(tg.vmap(tg.grad(f, 1), (None, 0)))(2., f64([0., 1., 2.])), 2 * np.ones(3))
        assert seen == [(False, True), (False, True), (True, False), (False, True),
                        (False, True), (True, False)]

    def test_symbolic_zero_has_aval_and_instantiates(self):
        @tg.custom_jvp
        def f(x, y):
            return x * y

        def f_jvp(primals, tangents):
            (x, y), (tx, ty) = primals, tangents
            if type(ty) is SymbolicZero:
                assert ty.shape == (3,) and ty.dtype == np.float64
                ty = ty.instantiate()
            return f(x, y), tx * y + x * ty

        f.defjvp(f_jvp, symbolic_zeros=True)
        y = f64([1., 2., 3.])
        close(tg.jvp(lambda x: f(x, y), (f64([1., 1., 1.]),), (np.ones(3),))[1], y)

    def test_jvp_rule_may_return_symbolic_zero(self):
        @tg.custom_jvp
        def f(x, y):
            return x * y

        def f_jvp(primals, tangents):
            (x, y), (tx, ty) = primals, tangents
            if type(tx) is SymbolicZero and type(ty) is SymbolicZero:
                return f(x, y), SymbolicZero(_sz_aval(np.shape(x)))
            return f(x, y), 7. * (tx if type(tx) is not SymbolicZero else ty)

        f.defjvp(f_jvp, symbolic_zeros=True)
        close(tg.grad(lambda x: f(x, 3.))(2.), 7.)
        close(tg.grad(lambda x: f(2., 3.) * x)(2.), 6.)
        close(tg.jit(tg.grad(lambda x: f(2., 3.) + x))(2.), 1.)

    def test_default_materializes_zeros_custom_jvp(self):
        seen = []

        @tg.custom_jvp
        def f(x, y):
            return x * y

        def f_jvp(primals, tangents):
            (x, y), (tx, ty) = primals, tangents
            assert type(tx) is not SymbolicZero and type(ty) is not SymbolicZero
            seen.append(ty)
            return f(x, y), tx * y + x * ty

        f.defjvp(f_jvp)
        close(tg.jvp(lambda x: f(x, 3.), (2.,), (1.,))[1], 3.)
        close(tg.grad(f)(2., 3.), 3.)
        assert len(seen) == 2
        for t in seen:
            assert isinstance(t, np.ndarray) and t.dtype == np.float64
            np.testing.assert_array_equal(t, 0.)

    def test_fwd_receives_value_perturbed_wrappers(self):
        seen = []

        @tg.custom_vjp
        def f(x, y):
            return x * y

        def fwd(x, y):
            seen.append((type(x).__name__, x.perturbed, y.perturbed))
            return f(x.value, y.value), (x.value, y.value)

        def bwd(res, g):
            x, y = res
            return (g * y, g * x)

        f.defvjp(fwd, bwd, symbolic_zeros=True)
        close(tg.grad(f)(2., 3.), 3.)
        close(tg.grad(f, 1)(2., 3.), 2.)
        close(tg.grad(f, (0, 1))(2., 3.), (3., 2.))
        close(tg.jit(tg.grad(f))(2., 3.), 3.)
        close(tg.vmap(tg.grad(f))(np.ones(2), f64([4., 5.])), [4., 5.])
        assert seen[:3] == [("CustomVJPPrimal", True, False), ("CustomVJPPrimal", False, True),
                            ("CustomVJPPrimal", True, True)]
        assert all(s[1] for s in seen[3:]) and not any(s[2] for s in seen[3:])

    def test_bwd_receives_and_returns_symbolic_zeros(self):
        seen = []

        @tg.custom_vjp
        def f(x, y):
            return x * y, x + y

        def fwd(x, y):
            return f(x.value, y.value), (x.value, y.value)

        def bwd(res, g):
            x, y = res
            g1, g2 = g
            seen.append((type(g1) is SymbolicZero, type(g2) is SymbolicZero))
            if type(g2) is SymbolicZero:
                return (g1 * y, SymbolicZero(_sz_aval()))  # explicit symbolic zero out
            if type(g1) is SymbolicZero:
                return (g2, g2)
            return (g1 * y + g2, g1 * x + g2)

        f.defvjp(fwd, bwd, symbolic_zeros=True)
        assert_tree_close(tg.grad(lambda x, y: f(x, y)[0], (0, 1))(2., 3.), (3., 0.))
        assert_tree_close(tg.grad(lambda x, y: f(x, y)[1], (0, 1))(2., 3.), (1., 1.))
        assert_tree_close(tg.jit(tg.grad(lambda x, y: f(x, y)[1], (0, 1)))(2., 3.), (1., 1.))
        assert_tree_close(tg.vmap(tg.grad(lambda x, y: f(x, y)[0], (0, 1)))(
            np.ones(2), f64([4., 5.])), (f64([4., 5.]), np.zeros(2)))
        assert seen[:3] == [(False, True), (True, False), (True, False)]

    def test_default_materializes_zero_cotangents_and_plain_fwd_args(self):
        seen = []

        @tg.custom_vjp
        def f(x, y):
            return x * y, x + y

        def fwd(x, y):
            seen.append(("fwd", type(x).__name__))
            return f(x, y), (x, y)

        def bwd(res, g):
            seen.append(("bwd", [type(c).__name__ for c in g], [float(c) for c in g]))
            x, y = res
            return (g[0] * y + g[1], g[0] * x + g[1])

        f.defvjp(fwd, bwd)
        assert_tree_close(tg.grad(lambda x, y: f(x, y)[0], (0, 1))(2., 3.), (3., 2.))
        assert seen == [("fwd", "float"), ("bwd", ["ndarray", "ndarray"], [1., 0.])]


# ---------------------------------------------------------------------------
# Seed examples with mathematically true rules (checked by finite differences)


def make_log1pexp():
    @tg.custom_jvp
    def log1pexp(x):
        return tnp.log(1. + tnp.exp(x))

    @log1pexp.defjvp
    def log1pexp_jvp(primals, tangents):
        (x,), (x_dot,) = primals, tangents
        ans = log1pexp(x)
        ans_dot = (1 - 1 / (1 + tnp.exp(x))) * x_dot
        return ans, ans_dot

    return log1pexp


def _stable_sigmoid(x):
    e = tnp.exp(-tnp.abs(x))
    return tnp.where(x >= 0, 1. / (1. + e), e / (1. + e))


def make_softplus():
    @tg.custom_jvp
    def softplus(x):
        return tnp.maximum(x, 0.) + tnp.log1p(tnp.exp(-tnp.abs(x)))

    @softplus.defjvp
    def softplus_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), _stable_sigmoid(x) * t

    return softplus


def make_safe_norm():
    @tg.custom_jvp
    def safe_norm(x):
        return tnp.sqrt(tnp.sum(x * x))

    @safe_norm.defjvp
    def safe_norm_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        n = safe_norm(x)
        denom = tnp.where(n == 0., 1., n)
        return n, tnp.sum(x * t) / denom

    return safe_norm


def make_rrule_sin(counter):
    """seeds/004: sin whose forward pass computes sin and cos together and keeps
    cos as the only residual (the pullback closes over nothing else)."""

    @tg.custom_vjp
    def sin(x):
        counter["primal"] += 1
        return tnp.sin(x)

    def sin_fwd(x):
        counter["fwd"] += 1
        y, cx = tnp.sin(x), tnp.cos(x)  # "sincos"
        return y, {"cx": cx}

    def sin_bwd(res, ybar):
        counter["bwd"] += 1
        return (ybar * res["cx"],)

    sin.defvjp(sin_fwd, sin_bwd)
    return sin


def make_rrule_sigmoid():
    @tg.custom_vjp
    def sigmoid(x):
        return 1. / (1. + tnp.exp(-x))

    def sigmoid_fwd(x):
        ex = tnp.exp(x)
        y = ex / (1. + ex)
        return y, (y, ex)

    def sigmoid_bwd(res, ybar):
        y, ex = res
        return (ybar * y / (1. + ex),)

    sigmoid.defvjp(sigmoid_fwd, sigmoid_bwd)
    return sigmoid


class TestSeedExamples:
    def test_sin_with_2cos_rule_under_vmap_and_jit(self):
        f, _ = make_sin_2cos()
        close(tg.vmap(f)(XS4), np.sin(XS4))
        close(tg.jit(f)(0.3), np.sin(0.3))
        close(tg.vmap(tg.grad(f))(XS4), 2 * np.cos(XS4))
        close(tg.jit(tg.grad(f))(0.3), 2 * np.cos(0.3))
        close(tg.jit(tg.vmap(tg.grad(f)))(XS4), 2 * np.cos(XS4))
        close(tg.vmap(tg.jit(tg.grad(f)))(XS4), 2 * np.cos(XS4))
        close(tg.grad(lambda x: tg.jit(tg.vmap(f))(x).sum())(XS4), 2 * np.cos(XS4))
        ys, ts = tg.jvp(tg.jit(tg.vmap(f)), (XS4,), (np.ones(4),))
        close(ys, np.sin(XS4))
        close(ts, 2 * np.cos(XS4))

    def test_log1pexp_stable_gradient(self):
        log1pexp = make_log1pexp()
        g = tg.grad(log1pexp)(100.)
        assert float(g) == 1.0
        with np.errstate(over="ignore", invalid="ignore"):
            g1000 = tg.grad(log1pexp)(1000.)
            assert np.isfinite(g1000) and float(g1000) == 1.0
            # the naive derivative is NaN there
            naive = tg.grad(lambda x: tnp.log(1. + tnp.exp(x)))(1000.)
            assert np.isnan(naive)
            close(tg.jit(tg.grad(log1pexp))(1000.), 1.)
            close(tg.vmap(tg.grad(log1pexp))(f64([0., 100., 1000.])), [0.5, 1., 1.])
        close(log1pexp(3.), np.log1p(np.exp(3.)))
        check_grads(log1pexp, (f64([-2., 0.1, 3.]),), order=2, **FD)

    def test_stable_softplus(self):
        softplus = make_softplus()
        x = f64([-30., -2., -0.3, 0.4, 5., 30.])
        close(softplus(x), np.logaddexp(0., x), rtol=1e-14)
        close(tg.vmap(tg.grad(softplus))(x), 1 / (1 + np.exp(-x)), rtol=1e-14)
        close(tg.grad(softplus)(1000.), 1.)
        close(tg.grad(softplus)(-1000.), 0.)
        check_grads(softplus, (f64([-2., -0.3, 0.4, 5.]),), order=2, **FD)
        check_grads(tg.jit(softplus), (f64([-2., 0.4]),), order=2, **FD)

    def test_safe_norm_gradient_at_zero(self):
        safe_norm = make_safe_norm()
        z = np.zeros(3)
        g0 = tg.grad(safe_norm)(z)
        assert np.all(np.isfinite(g0))
        np.testing.assert_array_equal(g0, z)
        with np.errstate(invalid="ignore", divide="ignore"):
            naive = tg.grad(lambda x: tnp.sqrt(tnp.sum(x * x)))(z)
        assert np.all(np.isnan(naive))
        x = f64([3., -4., 12.])
        close(safe_norm(x), 13.)
        close(tg.grad(safe_norm)(x), x / 13.)
        close(tg.jit(tg.grad(safe_norm))(z), z)
        close(tg.vmap(tg.grad(safe_norm))(np.stack([z, x])), np.stack([z, x / 13.]))
        check_grads(safe_norm, (f64([0.3, -1.2, 2.]),), order=2, **FD)

    def test_rrule_sincos_sin(self):
        cnt = {"primal": 0, "fwd": 0, "bwd": 0}
        sin = make_rrule_sin(cnt)
        x = f64([0.3, -1.2, 2.])
        v, g = tg.value_and_grad(lambda x: sin(x).sum())(x)
        close(v, np.sin(x).sum())
        close(g, np.cos(x))
        # reverse mode computes the primal through the augmented forward pass
        assert cnt == {"primal": 0, "fwd": 1, "bwd": 1}
        check_grads(sin, (x,), order=2, modes="rev", **FD)
        close(tg.grad(tg.grad(sin))(0.7), -np.sin(0.7))
        close(tg.jit(tg.vmap(tg.grad(sin)))(x), np.cos(x))

    def test_rrule_sigmoid_reuses_exp(self):
        sigmoid = make_rrule_sigmoid()
        x = f64([-3., -0.5, 0.2, 4.])
        s = 1 / (1 + np.exp(-x))
        close(sigmoid(x), s, rtol=1e-14)
        close(tg.vmap(tg.grad(sigmoid))(x), s * (1 - s), rtol=1e-13)
        close(tg.jit(tg.grad(lambda x: sigmoid(x).sum()))(x), s * (1 - s), rtol=1e-13)
        check_grads(sigmoid, (x,), order=2, modes="rev", **FD)

    def test_custom_vjp_true_rule_matches_numerical_jvp(self):
        sigmoid = make_rrule_sigmoid()
        x, v = f64([0.3, -1.]), f64([1., 2.])
        _, pull = tg.vjp(sigmoid, x)
        # <u, J v> by finite differences == <J^T u, v> by bwd
        u = f64([0.7, -0.4])
        lhs = float(np.sum(u * numerical_jvp(sigmoid, (x,), (v,))))
        rhs = float(np.sum(pull(u)[0] * v))
        assert abs(lhs - rhs) < 1e-9


# ---------------------------------------------------------------------------
# Property tests (hypothesis)


_floats = st.floats(min_value=-3., max_value=3., allow_nan=False, allow_subnormal=False)
_vecs = hnp.arrays(np.float64, st.integers(1, 5), elements=_floats)

_SOFTPLUS = make_softplus()
_SIN2COS, _ = make_sin_2cos()
_SIN2COS_VJP, _ = make_sin_2cos_vjp()
_SIGMOID = make_rrule_sigmoid()
_FUNS = {"softplus": _SOFTPLUS, "sin2cos": _SIN2COS, "sin2cos_vjp": _SIN2COS_VJP,
         "sigmoid_vjp": _SIGMOID}


class TestProperties:
    @HYP
    @given(xs=_vecs, name=st.sampled_from(sorted(_FUNS)))
    def test_vmap_matches_loop(self, xs, name):
        f = _FUNS[name]
        close(tg.vmap(f)(xs), np.stack([np.asarray(f(x)) for x in xs]), rtol=1e-14)
        close(tg.vmap(tg.grad(f))(xs), np.stack([np.asarray(tg.grad(f)(x)) for x in xs]),
              rtol=1e-14)
        close(tg.grad(lambda xs: tg.vmap(f)(xs).sum())(xs),
              tg.grad(lambda xs: sum(f(x) for x in xs))(xs), rtol=1e-14)

    @HYP
    @given(xs=_vecs, ts=_vecs, name=st.sampled_from(["softplus", "sin2cos"]))
    def test_jvp_of_vmap_matches_jvp_of_loop(self, xs, ts, name):
        f = _FUNS[name]
        ts = np.resize(ts, xs.shape)
        want = tg.jvp(lambda xs: tnp.stack([f(x) for x in xs]), (xs,), (ts,))
        got = tg.jvp(tg.vmap(f), (xs,), (ts,))
        assert_tree_close(got, want, rtol=1e-14)

    @HYP
    @given(x=_floats, name=st.sampled_from(sorted(_FUNS)))
    def test_jit_matches_eager(self, x, name):
        f = _FUNS[name]
        close(tg.jit(f)(x), f(x), rtol=1e-14)
        close(tg.jit(tg.grad(f))(x), tg.grad(f)(x), rtol=1e-14)
        close(tg.grad(tg.jit(f))(x), tg.grad(f)(x), rtol=1e-14)
        close(tg.grad(tg.grad(tg.jit(f)))(x), tg.grad(tg.grad(f))(x), rtol=1e-12, atol=1e-14)

    @HYP
    @given(lo=st.floats(-2., -0.01), hi=st.floats(0.01, 2.), scale=_floats)
    def test_clip_gradient_clips(self, lo, hi, scale):
        cg = make_clip_gradient_new()
        g = tg.grad(lambda x: cg(lo, hi, x) * scale)(1.)
        close(g, np.clip(scale, lo, hi))
        close(tg.jit(tg.grad(lambda x, lo, hi: cg(lo, hi, x) * scale))(1., lo, hi), g)


class TestNondiffArgnames:
    def _app(self, decorator_kwargs):
        import functools

        @functools.partial(tg.custom_jvp, **decorator_kwargs)
        def app(x, f, scale):
            return f(x) * scale

        @app.defjvp
        def app_jvp(*args):
            *nondiff, primals, tangents = args
            got = dict(zip(["f", "scale"][-len(nondiff):] if len(nondiff) == 2 else ["f"],
                           nondiff))
            f = got["f"]
            x, = primals[:1]
            scale = got.get("scale", primals[-1] if len(primals) > 1 else None)
            return app(x, f, scale), 5.0 * tangents[0]
        return app

    def test_custom_jvp_nondiff_argnames_alone_and_with_argnums(self):
        for kw in ({"nondiff_argnames": ("f",)}, {"nondiff_argnames": "f"},
                   {"nondiff_argnums": (1,), "nondiff_argnames": ("scale",)}):
            app = self._app(kw)
            for call in (lambda x: app(x, tnp.sin, 2.0), lambda x: app(x, f=tnp.sin, scale=2.0)):
                y, t = tg.jvp(call, (0.3,), (1.0,))
                close(y, 2.0 * np.sin(0.3))
                close(t, 5.0)
                close(tg.grad(call)(0.3), 5.0)
                np.testing.assert_allclose(tg.vmap(tg.grad(call))(np.ones(3)), [5.0] * 3)

    def test_custom_vjp_nondiff_argnames(self):
        import functools

        @functools.partial(tg.custom_vjp, nondiff_argnames=("f",))
        def app(f, x):
            return f(x)

        app.defvjp(lambda f, x: (f(x), x), lambda f, x, g: (g * 7.0,))
        close(tg.grad(lambda x: app(tnp.sin, x))(0.3), 7.0)
        close(tg.grad(lambda x: app(f=tnp.sin, x=x))(0.3), 7.0)

    def test_unknown_nondiff_argname_is_named(self):
        def g(x, y):
            return x

        for deco in (tg.custom_jvp, tg.custom_vjp):
            with pytest.raises(ValueError, match=rf"{deco.__name__} of g: nondiff_argnames "
                                                 r"contains 'h', which is not a positional "
                                                 r"parameter of the function \(its parameters: "
                                                 r"x, y\)"):
                deco(g, nondiff_argnames=("h",))


# ---------------------------------------------------------------------------
# A custom_jvp rule linear in its tangents through another custom function
# (JAX's custom `div`): reverse mode records the function's body for the
# tangent call, so it transposes under grad, scan, vjp of vjp and hessian.


def _make_div():
    @tg.custom_jvp
    def div(x, y):
        return x / y

    @div.defjvp
    def div_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        out = div(x, y)
        return out, div(tx, y) - div(x, y) * div(ty, y)  # linear in (tx, ty)

    return div


class TestLinearCustomJvpInReverseMode:
    def test_grad_and_jit_grad(self):
        div = _make_div()
        g = tg.grad(div, argnums=(0, 1))
        close(g(3., 2.), (0.5, -0.75))
        close(tg.jit(g)(3., 2.), (0.5, -0.75))
        close(tg.vmap(g)(XS4, XS4 + 3.), (1. / (XS4 + 3.), -XS4 / (XS4 + 3.) ** 2))

    def test_inside_scan(self):
        div = _make_div()
        ys = np.array([2., 3., 0.5])

        def f(c):
            return tg.lax.scan(lambda c, y: (div(c, y), None), c, ys)[0]

        close(tg.grad(f)(1.7), 1. / np.prod(ys))
        close(tg.jit(tg.grad(f))(1.7), 1. / np.prod(ys))

    def test_vjp_of_vjp(self):
        div = _make_div()

        def pullback(x, ct):
            return tg.vjp(lambda x: div(x, 4.), x)[1](ct)[0]

        # d/dct of the pullback at any x is 1/4; d/dx is 0 (it is linear in ct only).
        _, pb2 = tg.vjp(pullback, 1.5, 2.)
        close(pb2(1.), (0., 0.25))

    def test_hessian_against_finite_differences(self):
        div = _make_div()
        f = lambda x: div(x, x + 1.)  # noqa: E731
        close(tg.hessian(f)(2.), -2. / 27.)
        close(tg.jit(tg.hessian(f))(2.), -2. / 27.)
        eps = 1e-4
        fd = (tg.grad(f)(2. + eps) - tg.grad(f)(2. - eps)) / (2 * eps)
        close(tg.hessian(f)(2.), fd, rtol=1e-7, atol=0)


# ---------------------------------------------------------------------------
# closure_convert: floating constants are hoisted, integers stay closed over


class TestClosureConvert:
    def test_only_float_constants_are_hoisted(self):
        def run(c, k, n=1):
            def fn(x):
                return c * x + k  # c float (hoisted when traced), k integer (closed over)
            conv, consts = tg.closure_convert(fn, 2.)
            assert len(consts) == n and all(c.dtype == np.float64 for c in consts)
            return conv(2., *consts)

        close(tg.jit(run)(1.5, np.int64(3)), 6.)
        close(tg.vmap(partial(run, n=0))(XS4, np.arange(4)), 2. * XS4 + np.arange(4))
        close(tg.grad(run)(1.5, 3), 2.)
        # Eagerly, as JAX's: concrete constants (float or not) stay closed over.
        w = np.full(3, 2.5)
        conv, consts = tg.closure_convert(lambda x: x * w + np.arange(3), np.ones(3))
        assert consts == []
        close(conv(np.ones(3)), 2.5 + np.arange(3))

    def test_mismatched_pytree_is_jax_type_error(self):
        conv, consts = tg.closure_convert(lambda p: p["a"] * 2., {"a": 1.})
        close(conv({"a": 3.}, *consts), 6.)
        with pytest.raises(TypeError) as ei:
            conv((3.,), *consts)
        msg = str(ei.value)
        assert msg.startswith("The inputs to the closure produced by closure_convert must have "
                              "the same Pytree structure as the example arguments passed when "
                              "closure_convert was called. Expected PyTreeDef(({'a': *},)), but "
                              "got PyTreeDef(((*,),))")
        assert "<lambda>" in msg


# ---------------------------------------------------------------------------
# Symbolic zeros under vmap


def _make_pair_with_zero_tangent(seen):
    """f(x, y) = (x * y, x + y) whose rule reports a symbolic zero for the
    second output's dependence on y (a deliberate lie that the tests see)."""
    @tg.custom_jvp
    def f(x, y):
        return x * y, x + y

    def f_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        seen.append((type(tx).__name__, type(ty).__name__))
        assert type(ty) is SymbolicZero  # y is never perturbed below
        return f(x, y), (tx * y, cd.zero_from_primal(x, symbolic_zeros=True))

    f.defjvp(f_jvp, symbolic_zeros=True)
    return f


class TestSymbolicZerosUnderVmap:
    @pytest.mark.parametrize("how", ["vmap_jvp", "jvp_vmap", "jvp_vmap_jit", "vmap_jit_jvp"])
    def test_jvp_rule_sees_and_returns_symbolic_zeros(self, how):
        seen = []
        f = _make_pair_with_zero_tangent(seen)
        one = lambda x: tg.jvp(lambda x: f(x, 2.), (x,), (tnp.ones_like(x),))[1]  # noqa: E731
        run = {
            "vmap_jvp": lambda: tg.vmap(one)(XS4),
            "jvp_vmap": lambda: tg.jvp(tg.vmap(lambda x: f(x, 2.)), (XS4,), (np.ones(4),))[1],
            "jvp_vmap_jit": lambda: tg.jvp(tg.vmap(tg.jit(lambda x: f(x, 2.))), (XS4,),
                                           (np.ones(4),))[1],
            "vmap_jit_jvp": lambda: tg.vmap(tg.jit(one))(XS4),
        }[how]
        t0, t1 = run()
        close(t0, 2. * np.ones(4))
        close(t1, np.zeros(4))
        assert seen and all(s[1] == "SymbolicZero" for s in seen)

    @pytest.mark.parametrize("how", ["grad_vmap", "grad_vmap_jit", "vmap_grad", "vmap_jit_grad"])
    def test_bwd_sees_symbolic_zero_cotangent_and_may_return_one(self, how):
        seen = []

        @tg.custom_vjp
        def h(x, y):
            return x * y, x

        def h_fwd(x, y):
            x, y = cd.custom_vjp_primal_tree_values((x, y))
            return h(x, y), (x, y)

        def h_bwd(res, cts):
            seen.append(tuple(type(c).__name__ for c in cts))
            (x, y), (c0, c1) = res, cts
            assert type(c1) is SymbolicZero  # the second output is never used
            return c0 * y, cd.zero_from_primal(y, symbolic_zeros=True)

        h.defvjp(h_fwd, h_bwd, symbolic_zeros=True)
        loss = lambda x: h(x, 2.)[0]  # noqa: E731
        run = {
            "grad_vmap": lambda: tg.grad(lambda xs: tnp.sum(tg.vmap(loss)(xs)))(XS4),
            "grad_vmap_jit": lambda: tg.grad(lambda xs: tnp.sum(tg.vmap(tg.jit(loss))(xs)))(XS4),
            "vmap_grad": lambda: tg.vmap(tg.grad(loss))(XS4),
            "vmap_jit_grad": lambda: tg.vmap(tg.jit(tg.grad(loss)))(XS4),
        }[how]
        close(run(), 2. * np.ones(4))
        assert seen

    def test_primal_tree_values_strips_perturbation(self):
        p = cd.CustomVJPPrimal(np.ones(2), True)
        tree = {"a": p, "b": (cd.CustomVJPPrimal(3., False), 4.)}
        out = cd.custom_vjp_primal_tree_values(tree)
        assert out["a"] is p.value and out["b"] == (3., 4.)
        assert tg.custom_derivatives.custom_vjp_primal_tree_values is cd.custom_vjp_primal_tree_values

    def test_symbolic_zero_of_wrong_shape_from_bwd(self):
        @tg.custom_vjp
        def f(x, y):
            return x * y

        def bwd(res, g):
            return g * res, SymbolicZero(_sz_aval((3,)))  # y is a scalar

        f.defvjp(lambda x, y: (f(x.value, y.value), y.value), bwd, symbolic_zeros=True)
        with pytest.raises(ValueError) as ei:
            tg.grad(f)(1., 2.)
        msg = str(ei.value)
        assert "bwd" in msg and "function f" in msg and "output[1]" in msg
        assert "f64[3]" in msg and "Consider just returning a None here" in msg

    def test_integer_inputs_with_symbolic_zeros_under_jacrev(self):
        seen = []

        @tg.custom_vjp
        def f(x, n):
            return x * n

        def fwd(x, n):
            seen.append((x.perturbed, n.perturbed))
            return f(x.value, n.value), n.value

        def bwd(n, g):
            return g * n, None

        f.defvjp(fwd, bwd, symbolic_zeros=True)
        close(tg.jacrev(lambda x: f(x, 3))(XS4), 3. * np.eye(4))
        close(tg.jacrev(lambda x: f(x, np.arange(4)))(XS4), np.diag(np.arange(4.)))
        close(tg.jit(tg.jacrev(lambda x, n: f(x, n)))(XS4, np.arange(4)), np.diag(np.arange(4.)))
        assert seen and all(s == (True, False) for s in seen)


# ---------------------------------------------------------------------------
# Eager calls leave no reference cycles (the cyclic collector would otherwise
# pay for every linear program of eager grad)


@pytest.mark.parametrize("kind", ["custom_jvp", "custom_vjp", "custom_vjp_nondiff"])
def test_eager_grad_through_custom_rules_leaves_no_cycles(kind):
    import gc

    if kind == "custom_jvp":
        @tg.custom_jvp
        def f(x):
            return tnp.sin(x)

        f.defjvp(lambda p, t: (f(p[0]), tnp.cos(p[0]) * t[0]))
        g = tg.grad(lambda x: tnp.sum(f(f(x))))
    elif kind == "custom_vjp":
        @tg.custom_vjp
        def f(x):
            return tnp.sin(x)

        f.defvjp(lambda x: (tnp.sin(x), tnp.cos(x)), lambda c, g: (c * g,))
        g = tg.grad(lambda x: tnp.sum(f(f(x))))
    else:
        @partial(tg.custom_vjp, nondiff_argnums=(0,))
        def f(k, x):
            return k * tnp.sin(x)

        f.defvjp(lambda k, x: (f(k, x), tnp.cos(x)), lambda k, c, g: (k * c * g,))
        g = tg.grad(lambda x, k: tnp.sum(f(k, f(k, x))))
    x = np.linspace(0.1, 0.5, 4)
    args = (x,) if kind != "custom_vjp_nondiff" else (x, np.float64(2.))
    want = g(*args)
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        got = g(*args)
        gc.collect()
        leaked = [type(o).__name__ for o in gc.garbage
                  if type(o).__module__.startswith("tangentia")]
    finally:
        gc.garbage.clear()
        gc.set_debug(0)
    close(got, want)
    assert leaked == []
