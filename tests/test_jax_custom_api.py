"""Regression cases from running JAX's ``tests/custom_api_test.py`` against tangentia.

Each test is ours (our words, our numbers): it pins one behaviour that differed
from JAX's public API for ``custom_jvp``, ``custom_vjp`` and ``custom_vmap`` and was
fixed.  Rules that deliberately differ from the function they decorate (a cosine
rule for a sine) make it visible which one ran.
"""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.custom_batching import custom_vmap


def close(a, b, **kw):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=kw.get("rtol", 1e-12),
                               atol=kw.get("atol", 1e-12))


# ---------------------------------------------------------------------------
# Decorators compose: a custom_jvp / custom_vjp / custom_vmap forwards the
# attributes it lacks to the function it wraps.


def test_custom_vjp_of_custom_vmap_has_def_vmap():
    @tg.custom_vjp
    @custom_vmap
    def f(x, y):
        return tnp.sin(x) * y

    @f.def_vmap
    def rule(axis_size, in_batched, xs, ys):
        return tnp.cos(xs) * ys, True       # the rule: cos, not sin

    f.defvjp(lambda x, y: (f(x, y), (x, y)), lambda r, g: (3.0 * g, 5.0 * g))
    xs, ys = np.linspace(0.0, 1.0, 4), np.linspace(-1.0, 2.0, 4)
    close(tg.vmap(f)(xs, ys), np.cos(xs) * ys)
    close(f(0.3, 2.0), np.sin(0.3) * 2.0)
    close(tg.grad(f, argnums=(0, 1))(0.3, 2.0), (3.0, 5.0))


def test_custom_vmap_of_custom_jvp_has_defjvp():
    @custom_vmap
    @tg.custom_jvp
    def f(x):
        return 2.0 * x

    f.defjvp(lambda p, t: (f(*p), 7.0 * t[0]))
    f.def_vmap(lambda n, b, xs: (4.0 * xs, b[0]))
    close(tg.jvp(f, (1.5,), (1.0,)), (3.0, 7.0))
    close(tg.vmap(f)(np.arange(3.0)), 4.0 * np.arange(3.0))
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        f.nonexistent


# ---------------------------------------------------------------------------
# custom_vmap: arguments are bound to the signature (JAX's error), a batched
# output needs only its batch axis in front.


def test_custom_vmap_missing_argument_is_jax_error():
    @custom_vmap
    def f(x, y, *, z=None):
        return x * y

    f.def_vmap(lambda n, b, xs, ys: (xs * ys, True))
    with pytest.raises(TypeError, match=r"^The input arguments to the custom_vmap-decorated "
                                        r"function f could not be resolved.*\n"
                                        r"missing a required argument: 'y'"):
        f(0.5)
    close(f(2.0, y=3.0), 6.0)


def test_custom_vmap_batched_output_may_broadcast_a_closed_over_value():
    z = np.array([2.0, 1.0, 3.0])

    @custom_vmap
    def f(x):
        return z + tnp.sin(x)

    # per example the output is z's shape; the rule returns one row for the batch
    f.def_vmap(lambda n, b, xs: (z + tnp.cos(xs), b[0]))
    xs = np.arange(3.0)
    close(tg.vmap(f)(xs), z + np.cos(xs))
    with pytest.raises(ValueError, match="leading batch axis of 3"):
        f.def_vmap(lambda n, b, xs: (tnp.cos(xs)[:2], True))
        tg.vmap(f)(xs)


def test_keyword_only_parameter_with_default_is_not_an_error():
    # JAX rejects only keyword arguments that were passed and cannot become
    # positions, not the defaults of keyword-only parameters left out.
    @tg.custom_jvp
    def f(x, y, *, z=None):
        return x * y

    f.defjvp(lambda p, t: (f(*p), 10.0 * t[0] + 20.0 * t[1]))
    close(f(2.0, y=3.0), 6.0)
    close(tg.jvp(lambda x: f(x, y=3.0), (2.0,), (1.0,)), (6.0, 10.0))
    with pytest.raises(TypeError, match="could not be resolved to positions: z"):
        f(2.0, 3.0, z=1.0)


# ---------------------------------------------------------------------------
# The JVP of a custom_vmap call under vmap (JAX's semantics): the rule batches
# the arguments whose primal and tangent are both batched; a primal or tangent
# batched alone is mapped by vmap of the JVP of the rule's call.


def exp_rule_function(log):
    """``sin`` whose vmap rule computes ``exp`` (recording ``in_batched``)."""
    @custom_vmap
    def f(x):
        return tnp.sin(x)

    @f.def_vmap
    def rule(axis_size, in_batched, xs):
        log.append(list(in_batched))
        return tnp.exp(xs), in_batched[0]

    return f


def test_jacfwd_of_custom_vmap_uses_the_rule_unbatched():
    log = []
    f = exp_rule_function(log)
    x = np.array([0.1, 0.7, -0.4])
    close(tg.jacfwd(f)(x), np.diag(np.exp(x)))
    assert log == [[False]]


def test_vmap_of_jvp_with_only_primals_or_only_tangents_batched():
    log = []
    f = exp_rule_function(log)
    xs, t = np.array([0.1, 0.7, -0.4]), 2.0
    ys, ts = tg.vmap(lambda x: tg.jvp(f, (x,), (t,)))(xs)
    close(ys, np.exp(xs))
    close(ts, np.exp(xs) * t)
    tans = np.array([1.0, -2.0, 3.0])
    y, ts = tg.vmap(lambda tx: tg.jvp(f, (0.3,), (tx,)), out_axes=(None, 0))(tans)
    close(y, np.exp(0.3))
    close(ts, np.exp(0.3) * tans)
    ys, ts = tg.vmap(lambda x, tx: tg.jvp(f, (x,), (tx,)))(xs, tans)  # both: the rule batches
    close(ys, np.exp(xs))
    close(ts, np.exp(xs) * tans)
    assert log == [[False], [False], [True]]


def test_linear_rule_keeps_an_unbatched_tangent_unbatched():
    @custom_vmap
    def f(x):
        return 7.0 * x

    f.def_vmap(lambda n, b, xs: (11.0 * xs, b[0]))
    xs = np.arange(3.0)
    ys, t = tg.vmap(lambda x: tg.jvp(f, (x,), (4.0,)), out_axes=(0, None))(xs)
    close(ys, 11.0 * xs)
    close(t, 44.0)
    g = exp_rule_function([])
    with pytest.raises(ValueError, match=r"^at vmap out_axes\[1\], got axis spec None but "
                                         r"output was batched on axis 0"):   # (JAX's words)
        tg.vmap(lambda x: tg.jvp(g, (x,), (4.0,)), out_axes=(0, None))(xs)


def test_mixed_batching_of_a_custom_vmap_jvp_matches_the_loop():
    # x batched with its tangent, y batched alone: one batch axis for both.
    @custom_vmap
    def f(x, y):
        return tnp.sin(x) * y

    f.def_vmap(lambda n, b, xs, ys: (tnp.sin(xs) * ys, b[0] or b[1]))
    xs, ys, txs = np.array([0.1, 0.5, 0.9]), np.array([2.0, -1.0, 3.0]), np.array([1.0, 2.0, 3.0])
    out, tan = tg.vmap(lambda x, y, tx: tg.jvp(f, (x, y), (tx, 0.5)),
                       in_axes=(0, 0, 0))(xs, ys, txs)
    close(out, np.sin(xs) * ys)
    close(tan, np.cos(xs) * txs * ys + np.sin(xs) * 0.5)


def test_lax_map_batch_size_zero_maps_one_element_at_a_time():
    # JAX treats batch_size=0 as no batching (JAX's custom_api_test maps with 0).
    xs = np.arange(5.0)
    close(tg.lax.map(lambda x: x ** 2, xs, batch_size=0), xs ** 2)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        tg.lax.map(lambda x: x, xs, batch_size=-1)


# ---------------------------------------------------------------------------
# Rule outputs of the wrong type or structure: JAX's wording first, with the
# leaves' types (eagerly and inside a scan body).


def scan_once(f, x):
    return tg.lax.scan(lambda c, _: (f(c), None), x, None, length=1)[0]


def test_jvp_rule_primal_structure_error_shows_leaf_types():
    @tg.custom_jvp
    def f(x):
        return x

    f.defjvp(lambda p, t: ((p[0], p[0]), (t[0], t[0])))
    want = ("Custom JVP rule <lambda> for function f must produce a pair (list or tuple of length "
            "two) where the first element represents the primal output (equal in value to the "
            "output of the custom_jvp-decorated function f, and in particular of the same "
            "container/pytree structure), but instead the JVP rule output's first element had "
            "container/pytree structure:\n    (float32[], float32[])\nwhile the "
            "custom_jvp-decorated function f had output container/pytree structure:\n"
            "    float32[].")
    x = np.float32(1.0)
    for run in (lambda: tg.jvp(lambda x: scan_once(f, x), (x,), (x,)),
                lambda: tg.jvp(tg.jit(f), (x,), (x,))):
        with pytest.raises(TypeError) as ei:
            run()
        assert str(ei.value).startswith(want)


def test_jvp_and_fwd_rule_primal_shape_errors_come_before_the_tangent_check():
    @tg.custom_jvp
    def f(x):
        return x

    f.defjvp(lambda p, t: (tnp.zeros((3,)), t[0]))
    with pytest.raises(TypeError, match=r"(?s)^Custom JVP rule <lambda> for function f must "
                       r"produce a pair .*in particular with leaves of the same shape/dtype\), "
                       r"but instead the JVP rule output's first element had shapes/dtypes of:\n"
                       r"    float64\[3\]\nwhile the custom_jvp-decorated function f had output "
                       r"shapes/dtypes of:\n    float64\[\]"):
        tg.jvp(lambda x: scan_once(f, x), (1.0,), (1.0,))

    @tg.custom_vjp
    def g(x):
        return x

    g.defvjp(lambda x: (tnp.zeros((3,)), None), lambda r, ct: (ct,))
    with pytest.raises(TypeError, match=r"(?s)^Custom VJP fwd rule <lambda> for function g must "
                       r"produce a pair .*the fwd rule output's first element had shapes/dtypes "
                       r"of:\n    float64\[3\]\nwhile the custom_vjp-decorated function g had "
                       r"output shapes/dtypes of:\n    float64\[\]"):
        tg.grad(lambda x: scan_once(g, x))(1.0)


def test_custom_call_under_ensure_compile_time_eval_runs_concretely_in_jit():
    seen = []

    @tg.custom_jvp
    def f(x):
        seen.append(float(x))          # concrete: Python can read it
        return 2.0 * x

    f.defjvp(lambda p, t: (f(p[0]), t[0]))

    @tg.jit
    def g(y):
        with tg.ensure_compile_time_eval():
            c = f(3.0)
        return y * c

    close(g(2.0), 12.0)
    assert seen == [3.0]


def test_bwd_may_return_one_array_for_a_one_leaf_container():
    @tg.tree_util.register_pytree_node_class
    class Box:
        def __init__(self, x):
            self.x = x

        def tree_flatten(self):
            return [self.x], None

        @classmethod
        def tree_unflatten(cls, aux, xs):
            return cls(xs[0])

    @tg.custom_vjp
    def f(box, y):
        return box.x * y

    f.defvjp(lambda box, y: (f(box, y), (box.x, y)), lambda r, g: (3.0 * r[1] * g, r[0] * g))
    gb, gy = tg.grad(f, argnums=(0, 1))(Box(2.0), 5.0)
    close(gb.x, 15.0)
    close(gy, 2.0)

    @tg.custom_vjp
    def h(pair):
        return pair[0] * pair[1]

    h.defvjp(lambda p: (h(p), p), lambda r, g: (g,))  # one array for two leaves: an error
    with pytest.raises(TypeError, match="Custom VJP bwd rule must produce an output with the "
                                        "same container"):
        tg.grad(h)((2.0, 3.0))


# ---------------------------------------------------------------------------
# linear_transpose through linear_call (and custom_jvp calls in linear programs).


def divide_with_untrue_transpose(r):
    """``x -> x / r`` as a linear_call whose transpose divides by ``3 r``."""
    from tangentia.custom_derivatives import linear_call
    return lambda x: linear_call(lambda r, x: x / r, lambda r, t: t / (3.0 * r), r, x)


def transpose_of(f, example):
    return lambda ct: tg.linear_transpose(f, example)(ct)[0]


def test_linear_transpose_of_linear_call_calls_its_transpose():
    r, x = np.array([2.0, 4.0]), np.array([6.0, 1.0])
    f = divide_with_untrue_transpose(r)
    g = lambda x: x + f(x)                                    # noqa: E731
    close(g(x), x + x / r)
    ft = transpose_of(g, x)
    close(ft(x), x + x / (3.0 * r))
    close(tg.jit(ft)(x), x + x / (3.0 * r))
    close(transpose_of(ft, x)(x), x + x / r)                  # transposing twice: fun again
    close(transpose_of(transpose_of(ft, x), x)(x), x + x / (3.0 * r))
    close(tg.grad(lambda x: tnp.sum(g(x)))(x), 1.0 + 1.0 / (3.0 * r))


def test_linear_transpose_of_linear_call_with_pytrees_and_a_bad_transpose():
    from tangentia.custom_derivatives import linear_call

    def two(x):
        return linear_call(lambda _, x: [x, 2.0 * x], lambda _, t: t[0] + 5.0 * t[1], (), x)

    close(transpose_of(two, 1.0)([3.0, 4.0]), 23.0)

    def bad(x):
        return linear_call(lambda _, x: x, lambda _, t: None, (), x)

    with pytest.raises(TypeError, match="transpose output pytree structure must match"):
        transpose_of(bad, 1.0)(1.0)


def test_linear_transpose_through_a_custom_jvp_uses_its_rule():
    @tg.custom_jvp
    def f(x):
        return 2.0 * x

    f.defjvp(lambda p, t: (f(p[0]), 5.0 * t[0]))   # the rule's linear map: 5 x
    close(transpose_of(f, 1.0)(1.0), 5.0)


# ---------------------------------------------------------------------------
# custom_transpose (tangentia.custom_transpose, as jax.custom_transpose)


def divide_with_transpose(rule_factor):
    """``x + x / y`` whose inner division has the transpose ``rule_factor * t / y``."""
    from tangentia.custom_transpose import custom_transpose

    def f(x, y):
        fn = custom_transpose(lambda r, x: x / r)
        fn.def_transpose(lambda r, t: rule_factor * t / r)
        return x + fn(None, y, x)
    return f


def test_custom_transpose_under_jit_cond_and_jvp():
    f = divide_with_transpose(2.0)
    x, y = np.array([6.0, 1.5]), np.array([3.0, 0.5])
    g = lambda x: f(x, y)                                      # noqa: E731
    want_t = x + 2.0 * x / y
    close(g(x), x + x / y)
    close(tg.jit(g)(x), x + x / y)
    close(transpose_of(g, x)(x), want_t)
    close(tg.jit(transpose_of(g, x))(x), want_t)
    close(transpose_of(tg.jit(g), x)(x), want_t)               # transposing the jit program
    in_cond = lambda x: tg.lax.cond(True, g, lambda x: x, x)   # noqa: E731
    close(transpose_of(in_cond, x)(x), want_t)
    close(tg.jvp(g, (x,), (np.ones(2),)), (x + x / y, 1.0 + 1.0 / y))
    close(tg.grad(lambda x: tnp.sum(g(x)))(x), 1.0 + 2.0 / y)   # grad transposes: the rule


def test_custom_transpose_transposes_of_transposes():
    from tangentia.custom_transpose import custom_transpose
    T = lambda f: transpose_of(f, 0.0)                          # noqa: E731

    f = custom_transpose(lambda _, z: 2.0 * z)
    g = custom_transpose(lambda _, z: 3.0 * z)
    f.def_transpose(lambda r, t: g(None, r, t))                 # f and g transpose to each other
    g.def_transpose(lambda r, t: f(None, r, t))
    f1 = lambda z: f(None, (), z)                               # noqa: E731
    assert [float(h(1.0)) for h in (f1, T(f1), T(T(f1)), T(T(T(f1))))] == [2.0, 3.0, 2.0, 3.0]

    h = custom_transpose(lambda c, z: c * z)
    h.def_transpose(lambda c, z: h(None, c + 1.0, z))           # each transpose adds one
    h1 = lambda z: h(None, 1.0, z)                              # noqa: E731
    assert [float(k(1.0)) for k in (h1, T(h1), T(T(h1)))] == [1.0, 2.0, 3.0]

    undefined = custom_transpose(lambda _, z: z)
    with pytest.raises(AttributeError, match="No transpose rule defined for custom_transpose "
                                             "function <lambda>"):
        undefined(None, (), 1.0)


def test_collective_inside_custom_rules_under_a_named_vmap():
    # The function and rules of a custom call batched by vmap(axis_name=...) see the name.
    xs = np.arange(4.0)

    @tg.custom_jvp
    def f(x):
        return tg.lax.psum(x, "i") * x

    f.defjvp(lambda p, t: (f(p[0]), 3.0 * t[0]))
    close(tg.vmap(f, axis_name="i")(xs), xs.sum() * xs)
    close(tg.vmap(tg.grad(f), axis_name="i")(xs), 3.0)

    @tg.custom_vjp
    def h(x):
        return tg.lax.psum(x, "i") * x

    h.defvjp(lambda x: (h(x), None), lambda r, g: (5.0 * tg.lax.psum(g, "i"),))
    close(tg.vmap(h, axis_name="i")(xs), xs.sum() * xs)
    close(tg.vmap(tg.grad(h), axis_name="i")(xs), 20.0)


# ---------------------------------------------------------------------------
# custom_dce (tangentia.experimental.custom_dce, as jax.experimental.custom_dce)


def sin_cos_with_rule():
    """``(sin x, cos x)`` whose DCE rule computes ``exp`` and ``sqrt`` (to see it run)."""
    from tangentia.experimental.custom_dce import custom_dce

    @custom_dce
    def f(x):
        return tnp.sin(x), np.eye(1) * tnp.cos(x)

    @f.def_dce
    def rule(used, x):
        return (tnp.exp(x) if used[0] else None,
                np.full((1, 1), 2.0) * tnp.sqrt(x) if used[1] else None)

    return f


def test_custom_dce_rule_replaces_a_partly_used_call_under_jit():
    f = sin_cos_with_rule()
    x = 1.1234
    close(f(x)[0], np.sin(x))                                   # eagerly: the function
    close(tg.jit(lambda x: f(x)[0])(x), np.exp(x))
    close(tg.jit(lambda x: f(x)[1])(x), [[2.0 * np.sqrt(x)]])
    close(tg.jit(f)(x)[0], np.sin(x))                           # all outputs used: the function
    xs = np.linspace(0.5, 1.5, 4)
    close(tg.jit(lambda x: tg.vmap(f)(x)[0])(xs), np.exp(xs))  # the rule is batched too
    close(tg.vmap(tg.jit(lambda x: f(x)[1]))(xs), 2.0 * np.sqrt(xs)[:, None, None])
    close(tg.grad(lambda x: f(x)[0])(x), np.cos(x))             # derivatives: the function's


def test_custom_dce_rule_calling_its_function_and_static_args():
    from tangentia.experimental.custom_dce import custom_dce

    @custom_dce
    def f(x):
        return tnp.exp(x), 10.0 * tnp.sqrt(x)

    f.def_dce(lambda used, x: [2.0 * v if u else None for u, v in zip(used, f(x))])
    close(tg.jit(lambda x: f(x)[1])(1.5), 20.0 * np.sqrt(1.5))

    def g(fn, x):
        return fn(x), 10.0 * fn(x)

    g = custom_dce(g, static_argnums=(0,))
    g.def_dce(lambda fn, used, x: [3.0 * v if u else None for u, v in zip(used, g(fn, x))])
    close(tg.jit(lambda x: g(tnp.exp, x)[0])(0.5), 3.0 * np.exp(0.5))


def test_custom_dce_rule_errors_are_jax_errors():
    from tangentia.experimental.custom_dce import custom_dce

    @custom_dce
    def f(x):
        return tnp.stack((x, x)), tnp.cos(x)

    f.def_dce(lambda used, x: (tnp.exp(x) if used[0] else None, None))
    with pytest.raises(ValueError, match=r"Custom DCE rule <lambda> for function f must produce "
                                         r"an output with the same shapes/dtypes .* output\[0\]"):
        tg.jit(lambda x: f(x)[0])(1.0)
    with pytest.raises(ValueError, match=r"must produce values for all of the required outputs "
                                         r".* at output\[1\], the DCE rule returned None"):
        tg.jit(lambda x: f(x)[1])(1.0)

    @custom_dce
    def h(x):
        return x

    with pytest.raises(AttributeError, match="No DCE rule defined for custom_dce function h"):
        h(1.0)


# ---------------------------------------------------------------------------
# A custom_jvp output that depends on no batched value stays unbatched under vmap
# (it was broadcast: vmap(lambda x: relu(W) @ x) became a batched matmul).


def sin_and_square_rule():
    """``(sin x, w ** 2)`` with a rule whose derivatives are 3 cos x and 5 w."""
    @tg.custom_jvp
    def f(x, w):
        return tnp.sin(x), w ** 2

    f.defjvp(lambda p, t: (f(*p), (3.0 * tnp.cos(p[0]) * t[0], 5.0 * p[1] * t[1])))
    return f


def test_custom_jvp_output_of_unbatched_values_stays_unbatched():
    f = sin_and_square_rule()
    xs, w = np.linspace(0.1, 0.9, 4), np.array([1.5, -2.0])
    ys, sq = tg.vmap(lambda x: f(x, w), out_axes=(0, None))(xs)
    close(ys, np.sin(xs))
    close(sq, w ** 2)
    program = str(tg.make_jaxpr(tg.vmap(lambda x: tg.nn.relu(w) * x))(xs))
    assert "broadcast" not in program.split("custom_jvp_call")[1].split("name=")[0]


def test_custom_jvp_mixed_batching_derivatives_match_the_loop():
    f = sin_and_square_rule()
    xs, w = np.linspace(0.1, 0.9, 4), np.array([1.5, -2.0])

    def loss(w, xs):
        ys, sq = tg.vmap(lambda x: f(x, w), out_axes=(0, None))(xs)
        return tnp.sum(ys) + tnp.sum(sq * tnp.sum(xs))

    want_w = 5.0 * w * xs.sum()
    want_x = 3.0 * np.cos(xs) + np.sum(w ** 2)
    for g in (tg.grad(loss, argnums=(0, 1)), tg.jit(tg.grad(loss, argnums=(0, 1))),
              tg.grad(tg.jit(loss), argnums=(0, 1))):
        gw, gx = g(w, xs)
        close(gw, want_w)
        close(gx, want_x)
    # forward mode under vmap: only the tangents batched (jacfwd), then both
    close(tg.jacfwd(lambda w: f(0.3, w)[1])(w), np.diag(5.0 * w))
    ts = tg.vmap(lambda x, t: tg.jvp(lambda x: f(x, w)[0], (x,), (t,))[1])(xs, xs)
    close(ts, 3.0 * np.cos(xs) * xs)
