"""Error messages of ``tg.custom_jvp`` / ``tg.custom_vjp`` API misuse.

Each error must be raised eagerly, with the right exception type, and name
the function or rule involved (the structure/shape errors of rule outputs
are in test_custom_derivatives.py, TestPytrees).
"""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp


def test_custom_jvp_without_rule():
    @tg.custom_jvp
    def my_f(x):
        return x

    with pytest.raises(AttributeError, match=r"No JVP defined for custom_jvp function my_f "
                                             r"using defjvp"):
        my_f(1.)


def test_custom_vjp_without_rule():
    @tg.custom_vjp
    def my_g(x):
        return x

    with pytest.raises(AttributeError, match=r"No VJP defined for custom_vjp function my_g "
                                             r"using defvjp"):
        my_g(1.)


def test_defjvp_requires_callable():
    @tg.custom_jvp
    def my_f(x):
        return x

    with pytest.raises(TypeError, match=r"defjvp of my_f expects a callable, got int"):
        my_f.defjvp(3)


@pytest.mark.parametrize("which", ["fwd", "bwd"])
def test_defvjp_requires_callables(which):
    @tg.custom_vjp
    def my_g(x):
        return x

    fwd = "nope" if which == "fwd" else (lambda x: (x, None))
    bwd = "nope" if which == "bwd" else (lambda r, g: (g,))
    with pytest.raises(TypeError, match=rf"defvjp of my_g: {which} must be callable, got str"):
        my_g.defvjp(fwd, bwd)


@pytest.mark.parametrize("kind", ["custom_jvp", "custom_vjp"])
def test_nondiff_argnums_out_of_range(kind):
    def my_h(x, y):
        return x * y

    if kind == "custom_jvp":
        h = tg.custom_jvp(my_h, nondiff_argnums=(2,))
        h.defjvp(lambda n, p, t: (my_h(*p), t[0]))
    else:
        h = tg.custom_vjp(my_h, nondiff_argnums=(2,))
        h.defvjp(lambda x, y: (my_h(x, y), None), lambda n, r, g: (g, g))
    with pytest.raises(TypeError, match=rf"{kind} function my_h: nondiff_argnums=\(2,\) but "
                                        r"only 2 positional arguments"):
        h(1., 2.)


def test_defjvps_with_nondiff_argnums_is_rejected():
    k = tg.custom_jvp(lambda s, y: y, nondiff_argnums=(0,))
    with pytest.raises(TypeError, match=r"defjvps is not supported with nondiff_argnums"):
        k.defjvps(lambda t, ans, s, y: t)


@pytest.mark.parametrize("kind", ["custom_jvp", "custom_vjp"])
def test_callable_argument_must_be_marked_nondiff(kind):
    def my_app(f, x):
        return f(x)

    if kind == "custom_jvp":
        app = tg.custom_jvp(my_app)
        app.defjvp(lambda p, t: (my_app(*p), t[1]))
    else:
        app = tg.custom_vjp(my_app)
        app.defvjp(lambda f, x: (my_app(f, x), None), lambda r, g: (None, g))
    with pytest.raises(TypeError) as ei:
        app(tnp.sin, 1.)
    msg = str(ei.value)
    assert f"{kind} function my_app" in msg
    assert "not an array" in msg and "nondiff_argnums" in msg


def test_residual_must_be_arrays():
    @tg.custom_vjp
    def my_r(x):
        return x

    def my_fwd(x):
        return x, {"k": "not an array"}

    my_r.defvjp(my_fwd, lambda r, g: (g,))
    with pytest.raises(TypeError, match=r"fwd rule my_fwd for function my_r: residual leaf 0 "
                                        r"of type str is not an array"):
        tg.grad(my_r)(1.)


def test_too_many_arguments_is_jax_binding_error():
    @tg.custom_jvp
    def my_s(x):
        return x

    my_s.defjvp(lambda p, t: (p[0], t[0]))
    with pytest.raises(TypeError) as ei:
        my_s(1., 2.)
    assert str(ei.value) == (
        "The input arguments to the custom_jvp-decorated function my_s could not be resolved to "
        "positional-only arguments. Binding failed with the error:\ntoo many positional "
        "arguments")


def test_bad_kwarg_names_the_function():
    @tg.custom_vjp
    def my_v(x, y):
        return x * y

    my_v.defvjp(lambda x, y: (my_v(x, y), None), lambda r, g: (g, g))
    with pytest.raises(TypeError) as ei:
        my_v(1., 2., z=3.)
    assert str(ei.value) == (
        "The input arguments to the custom_vjp-decorated function my_v could not be resolved to "
        "positional-only arguments. Binding failed with the error:\ngot an unexpected keyword "
        "argument 'z'")


def test_missing_argument_is_jax_binding_error():
    @tg.custom_jvp
    def my_w(x, y):
        return x * y

    my_w.defjvp(lambda p, t: (my_w(*p), t[0] * p[1] + t[1] * p[0]))
    for call in (lambda: my_w(1.), lambda: my_w(x=1.)):
        with pytest.raises(TypeError) as ei:
            call()
        assert str(ei.value) == (
            "The input arguments to the custom_jvp-decorated function my_w could not be resolved "
            "to positional-only arguments. Binding failed with the error:\nmissing a required "
            "argument: 'y'")


def test_defaults_are_applied_before_the_rule_as_in_jax():
    seen = []

    @tg.custom_jvp
    def my_d(x, scale=2.):
        return scale * x

    @my_d.defjvp
    def my_d_jvp(primals, tangents):
        seen.append(len(primals))
        x, s = primals
        return my_d(x, s), s * tangents[0] + tangents[1] * x

    np.testing.assert_allclose(tg.jvp(my_d, (1.5,), (1.,))[1], 2.)
    assert seen == [2]


@pytest.mark.parametrize("what", ["shape", "dtype"])
def test_jvp_rule_primal_output_type_checked_against_function(what):
    @tg.custom_jvp
    def my_f(x):
        return 2. * x

    @my_f.defjvp
    def my_rule(primals, tangents):
        (x,), (t,) = primals, tangents
        if what == "shape":
            return (2. * x).sum(), t.sum()
        return tnp.astype(2. * x, np.float32), tnp.astype(2. * t, np.float32)

    x = np.ones(2)
    with pytest.raises(TypeError) as ei:
        tg.jvp(tg.jit(my_f), (x,), (x,))
    msg = str(ei.value)
    assert "my_rule" in msg and "my_f" in msg and "f64[2]" in msg


def test_fwd_primal_output_shape_checked_against_function():
    @tg.custom_vjp
    def my_h(x):
        return 2. * x

    def my_fwd(x):
        return x.sum(), None

    my_h.defvjp(my_fwd, lambda r, g: (g * np.ones(2),))
    with pytest.raises(TypeError) as ei:
        tg.vjp(tg.jit(my_h), np.ones(2))
    msg = str(ei.value)
    assert "my_fwd" in msg and "my_h" in msg and "f64[2]" in msg


def test_jvp_rule_with_the_seed_argument_order_is_named():
    import functools

    @functools.partial(tg.custom_jvp, nondiff_argnums=(0,))
    def app(f, x):
        return f(x)

    @app.defjvp
    def app_jvp(primals, tangents, f):  # nondiff last: the old order
        (x,), (t,) = primals, tangents
        return f(x), 2.0 * t

    with pytest.raises(TypeError, match=r"Custom JVP rule app_jvp\(primals, tangents, f\) for "
                                        r"function app takes the primals first.*called as "
                                        r"jvp\(\*nondiff_args, primals, tangents\), here with "
                                        r"\(sin, \(f64\[\],\), \(f64\[\],\)\)"):
        tg.jvp(lambda x: app(tnp.sin, x), (1.0,), (1.0,))


def test_bwd_rule_without_the_nondiff_parameters_is_named():
    import functools

    @functools.partial(tg.custom_vjp, nondiff_argnums=(0,))
    def app(f, x):
        return f(x)

    def app_bwd(res, g):
        return (g,)

    app.defvjp(lambda f, x: (f(x), x), app_bwd)
    with pytest.raises(TypeError, match=r"Custom VJP bwd rule app_bwd\(res, g\) for function app "
                                        r"does not accept the arguments.*"
                                        r"bwd\(\*nondiff_args, residuals, cotangents\), here with 3 "
                                        r"positional arguments \(sin, f64\[\], f64\[\]\)"):
        tg.grad(lambda x: app(tnp.sin, x))(1.0)


def test_errors_raised_by_a_rule_itself_pass_through():
    @tg.custom_jvp
    def f(x):
        return x

    @f.defjvp
    def f_jvp(primals, tangents):
        raise TypeError("my own message")

    with pytest.raises(TypeError, match="^my own message$"):
        tg.jvp(f, (1.0,), (1.0,))


def test_jvp_rule_with_a_narrower_tangent_dtype_raises_jax_error():
    @tg.custom_jvp
    def f(x):
        return tnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), (tnp.cos(x) * t).astype(np.float32)  # loses precision: an error

    with pytest.raises(TypeError, match=r"^Custom JVP rule must produce primal and tangent outputs "
                                        r"with corresponding shapes and dtypes\. Expected "
                                        r"float64\[2\] \(tangent type of float64\[2\]\) but got "
                                        r"float32\[2\]\. \(Custom JVP rule f_jvp for function f"):
        tg.jvp(f, (np.ones(2),), (np.ones(2),))


def test_closed_over_differentiation_error_is_an_unexpected_tracer_error():
    import tangentia.errors as errors

    def outer(y):
        @tg.custom_jvp
        def f(x):
            return x * y  # closes over the value being differentiated

        f.defjvp(lambda p, t: (f(p[0]), t[0] * y))
        return f(2.0)

    with pytest.raises(errors.UnexpectedTracerError,
                       match="Detected differentiation of a custom_jvp function") as info:
        tg.grad(outer)(3.0)
    assert isinstance(info.value, TypeError)  # still a TypeError, as before
    assert issubclass(errors.ConcretizationTypeError, errors.JAXTypeError)


# ---------------------------------------------------------------------------
# Messages that begin with JAX's wording (code and tests written for JAX match
# them); our detail follows.


def _jvp_fn(rule):
    @tg.custom_jvp
    def my_f(x):
        return 2. * x

    my_f.defjvp(rule)
    return my_f


def _vjp_fn(fwd, bwd):
    @tg.custom_vjp
    def my_g(x):
        return 2. * x

    my_g.defvjp(fwd, bwd)
    return my_g


def my_rule_not_pair(primals, tangents):
    return 2. * primals[0]


def my_rule_tree_mismatch(primals, tangents):
    return 2. * primals[0], (tangents[0], tangents[0])


def my_rule_bad_tangent(primals, tangents):
    return 2. * primals[0], tnp.ones(3)


def my_fwd_not_pair(x):
    return 2. * x


def my_bwd_not_tuple(res, g):
    return 2. * g


def my_bwd_bad_type(res, g):
    return (tnp.ones(3),)


@pytest.mark.parametrize("case,exc,start", [
    ("jvp_pair", TypeError, "Custom JVP rule my_rule_not_pair for function my_f must produce a "
     "pair (list or tuple of length two) representing primal and tangent outputs, but got "),
    ("jvp_tree", TypeError, "Custom JVP rule my_rule_tree_mismatch for function my_f must produce "
     "primal and tangent outputs with equal container (pytree) structures, but got PyTreeDef(*) "
     "and PyTreeDef((*, *)) respectively."),
    ("jvp_type", TypeError, "Custom JVP rule must produce primal and tangent outputs with "
     "corresponding shapes and dtypes. Expected float64[] (tangent type of float64[]) but got "
     "float64[3]."),
    ("fwd_pair", TypeError, "Custom VJP fwd rule my_fwd_not_pair for function my_g must produce "
     "a pair (list or tuple of length two) where the first element represents the primal output"),
    ("bwd_tuple", TypeError, "Custom VJP bwd rule must produce "
     "an output with the same container (pytree) structure as the args tuple of the primal "
     "function, and in particular must produce a tuple of length equal to the number of "
     "arguments to the primal function, but got bwd output structure PyTreeDef(*) for primal "
     "input structure PyTreeDef((*,))."),
    ("bwd_type", ValueError, "Custom VJP bwd rule must produce "
     "an output with the same type as the args tuple of the primal function, but at output[0] "
     "the bwd rule produced an output of type float64[3] corresponding to an input of type "
     "float64[]"),
])
def test_messages_begin_with_jax_wording(case, exc, start):
    fn = {
        "jvp_pair": lambda: _jvp_fn(my_rule_not_pair),
        "jvp_tree": lambda: _jvp_fn(my_rule_tree_mismatch),
        "jvp_type": lambda: _jvp_fn(my_rule_bad_tangent),
        "fwd_pair": lambda: _vjp_fn(my_fwd_not_pair, lambda r, g: (g,)),
        "bwd_tuple": lambda: _vjp_fn(lambda x: (2. * x, None), my_bwd_not_tuple),
        "bwd_type": lambda: _vjp_fn(lambda x: (2. * x, None), my_bwd_bad_type),
    }[case]()
    with pytest.raises(exc) as ei:
        if case.startswith("jvp"):
            tg.jvp(fn, (1.,), (1.,))
        else:
            tg.grad(fn)(1.)
    assert str(ei.value).startswith(start), str(ei.value)
