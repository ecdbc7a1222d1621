"""bfloat16 (ml_dtypes' type, NumPy kind 'V') is a floating dtype everywhere dtypes are
classified: grad/vjp/jvp take it, its tangents are bfloat16, issubdtype/isdtype/finfo know
it, promotion is NumPy's (ml_dtypes') and sums, products and dot products are computed in
float32 and rounded once, as JAX's.  Compared with JAX (x64) on the same inputs: result and
gradient dtypes exactly, values within a bfloat16 rounding or two (the order of floating
operations in a derivative rule may differ from JAX's)."""
import ml_dtypes
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import dtypes

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)
X = np.array([0.3, -1.2, 2.5, 0.75], dtype=BF16)
EPS = float(ml_dtypes.finfo(BF16).eps)   # 2**-7

FUNS = {
    "sin_sum": lambda m, x: m.sum(m.sin(x)),
    "poly": lambda m, x: m.sum(x * x * 3.0 - x),
    "exp_sum": lambda m, x: m.sum(m.exp(x)),
    "mean_sq": lambda m, x: m.mean(x * x),
    "var": lambda m, x: m.var(x),
    "dot": lambda m, x: m.dot(x, x),
    "max": lambda m, x: m.max(x),
    "clip": lambda m, x: m.sum(m.clip(x, -1, 1)),
    "maximum": lambda m, x: m.sum(m.maximum(x, 0.5)),
    "where": lambda m, x: m.sum(m.where(x > 0, x, 2 * x)),
    "norm": lambda m, x: m.linalg.norm(x),
    "to_f32": lambda m, x: m.sum(x.astype(m.float32) ** 2),
    "times_f32": lambda m, x: m.sum(x * m.ones(4, m.float32)),
    "matmul": lambda m, x: m.sum(m.matmul(x.reshape(2, 2), x.reshape(2, 2))),
    "cumsum": lambda m, x: m.sum(m.cumsum(x) ** 2),
    "logsumexp": lambda m, x: m.log(m.sum(m.exp(x))),
    "index": lambda m, x: x[1] * x[2],
}


def _close(got, want, ulps=3):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    g, w = np.float64(np.float32(got)), np.float64(np.float32(want))
    np.testing.assert_allclose(g, w, rtol=ulps * EPS, atol=ulps * EPS * max(1.0, np.abs(w).max()))


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", list(FUNS))
def test_value_and_grad_of_bfloat16_functions_match_jax(name, jit):
    f = FUNS[name]
    want_v, want_g = jax.value_and_grad(lambda x: f(jnp, x))(jnp.asarray(X))
    vg = tg.value_and_grad(lambda x: f(tnp, x))
    got_v, got_g = (tg.jit(vg) if jit else vg)(tnp.asarray(X))
    _close(got_v, want_v)
    _close(got_g, want_g)
    assert got_g.dtype == BF16


def test_jvp_vjp_and_jacobians_of_bfloat16():
    f = lambda m: lambda x: m.sin(x) * x  # noqa: E731
    t = np.array([1.0, 0.5, -1.0, 2.0], dtype=BF16)
    (p, tan), (jp, jtan) = tg.jvp(f(tnp), (X,), (t,)), jax.jvp(f(jnp), (X,), (t,))
    _close(p, jp)
    _close(tan, jtan)
    out, pull = tg.vjp(f(tnp), X)
    jout, jpull = jax.vjp(f(jnp), jnp.asarray(X))
    _close(pull(t)[0], jpull(jnp.asarray(t))[0])
    _close(tg.jacfwd(f(tnp))(X), jax.jacfwd(f(jnp))(X))
    _close(tg.jacrev(f(tnp))(X), jax.jacrev(f(jnp))(X))
    _close(tg.hessian(lambda x: tnp.sum(f(tnp)(x)))(X),
           jax.hessian(lambda x: jnp.sum(f(jnp)(x)))(X))
    _close(tg.vmap(tg.grad(f(tnp)))(X), jax.vmap(jax.grad(f(jnp)))(X))


def test_bfloat16_argument_checks_follow_jax():
    # a float32 tangent for a bfloat16 primal: both reject it, with JAX's wording first
    with pytest.raises(TypeError) as theirs:
        jax.jvp(jnp.sin, (jnp.asarray(X),), (jnp.ones(4, jnp.float32),))
    with pytest.raises(TypeError) as ours:
        tg.jvp(tnp.sin, (X,), (np.ones(4, np.float32),))
    assert str(ours.value).startswith(str(theirs.value).split(" (")[0][:60])
    assert "bfloat16" in str(ours.value)
    # the cotangent of a bfloat16 output must be bfloat16
    _, pull = tg.vjp(tnp.sin, X)
    with pytest.raises(ValueError, match="unexpected JAX type"):
        pull(np.ones(4, np.float32))
    # a bfloat16 output is a real output for grad
    assert tg.grad(lambda x: tnp.sum(x).astype(BF16))(np.ones(2, np.float32)).dtype == np.float32


def test_dtype_classification():
    for d in (BF16, ml_dtypes.bfloat16):
        assert tnp.issubdtype(d, tnp.floating) and tnp.issubdtype(d, tnp.inexact)
        assert tnp.issubdtype(d, tnp.number) and not tnp.issubdtype(d, tnp.integer)
        for kind in ("real floating", "numeric", "integral", "bool", ("integral", "real floating")):
            assert tnp.isdtype(d, kind) == jnp.isdtype(d, kind), kind
    assert dtypes.kind(BF16) == "f" and dtypes.is_float(BF16) and dtypes.is_inexact(BF16)
    assert dtypes.is_real_floating(BF16) and not dtypes.is_integer(BF16)
    assert dtypes.tangent_dtype(BF16) == BF16 and dtypes.to_inexact(BF16) == BF16
    assert dtypes.kind(np.dtype(ml_dtypes.int4)) == "i" and dtypes.is_integer(np.dtype(ml_dtypes.int4))
    assert dtypes.tangent_dtype(np.dtype(ml_dtypes.int4)) == dtypes.float0
    # printed programs name it as JAX's do
    assert "a:bf16[4]" in str(tg.make_jaxpr(lambda x: x * 2)(X))
    assert "a:bf16[4]" in str(jax.make_jaxpr(lambda x: x * 2)(X))
    with pytest.raises(ValueError, match="Unrecognized kind='reals'"):
        tnp.isdtype(BF16, "reals")


def test_finfo_matches_jax():
    ours, theirs = tnp.finfo(tnp.bfloat16), jnp.finfo(jnp.bfloat16)
    for attr in ("eps", "max", "min", "tiny", "smallest_normal", "resolution", "epsneg"):
        assert float(getattr(ours, attr)) == float(getattr(theirs, attr)), attr
    assert (ours.bits, ours.nmant, ours.nexp, ours.dtype) == (16, 7, 8, BF16)
    assert theirs.bits == 16 and theirs.nmant == 7


@pytest.mark.parametrize("other", ["float32", "float16", "float64", "complex64", "int8", "bool"])
def test_promotion_with_arrays_matches_jax(other):
    a = tnp.ones(2, BF16) * tnp.ones(2, other)
    b = jnp.ones(2, jnp.bfloat16) * jnp.ones(2, other)
    assert a.dtype == b.dtype
    assert tnp.promote_types(BF16, other) == jnp.promote_types(jnp.bfloat16, other)


def test_promotion_with_python_scalars_keeps_bfloat16():
    x = tnp.asarray(X)
    for y in (2, 1.5, True):
        assert (x * y).dtype == (y * x).dtype == (jnp.asarray(X) * y).dtype == BF16
    assert tnp.result_type(BF16, 1.0) == jnp.result_type(jnp.bfloat16, 1.0) == BF16
    assert dtypes.result_type((BF16, False), (dtypes.float64, True)) == (BF16, False)
    assert tg.jit(lambda x: x * 2.5 + 1)(x).dtype == BF16


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_sums_and_products_in_float32_as_jax(jit):
    # NumPy's bfloat16 reductions round after every addition (16.0 here); JAX sums in
    # float32 and rounds once (15.9375)
    x = tnp.asarray(X)
    y = np.linspace(-1, 1, 12).reshape(4, 3).astype(BF16)
    cases = [lambda m, x, y: m.sum(m.exp(x)), lambda m, x, y: m.prod(x + 1.5), lambda m, x, y: m.dot(x, y),
             lambda m, x, y: m.einsum("i,ij->j", x, y), lambda m, x, y: m.mean(m.exp(x)),
             lambda m, x, y: m.tensordot(y, y, ((0,), (0,)))]
    for f in cases:
        g = tg.jit(lambda x, y: f(tnp, x, y)) if jit else (lambda x, y: f(tnp, x, y))
        got, want = g(x, y), f(jnp, jnp.asarray(X), jnp.asarray(y))
        assert got.dtype == want.dtype == BF16
        np.testing.assert_array_equal(np.float32(got), np.float32(want))
    # cumsum: JAX's prefix sums round in bfloat16 along its associative scan's tree; ours
    # are float32 prefix sums rounded once (the float64 ones rounded: within a rounding)
    e = np.exp(np.float64(np.float32(X)))
    c = (tg.jit(tnp.cumsum) if jit else tnp.cumsum)(x.astype(BF16) * 0 + e.astype(BF16))
    assert c.dtype == BF16
    np.testing.assert_array_equal(np.float32(c), np.cumsum(np.float32(e.astype(BF16))).astype(BF16))
    _close(c, jnp.cumsum(jnp.asarray(e.astype(BF16))), ulps=1)


def test_numba_backend_runs_bfloat16_programs():
    # numba has no bfloat16: such programs run on the NumPy backend, with the same results
    f = lambda x, y: (tnp.sum(tnp.sin(x) * y + 1.0) + tnp.dot(x, y.astype(BF16)),  # noqa: E731
                      tnp.cumsum(x * 2))
    y = np.linspace(0, 1, 4)
    for backend in ("numba", "numpy"):
        got = tg.jit(f, backend=backend)(X, y)
        want = f(X, y)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(np.float32(g), np.float32(w))
        grad = tg.jit(tg.grad(lambda x, y: f(x, y)[0]), backend=backend)(X, y)
        _close(grad, jax.grad(lambda x, y: jnp.sum(jnp.sin(x) * y + 1.0)
                              + jnp.dot(x, y.astype(jnp.bfloat16)))(jnp.asarray(X), y))


def test_optax_style_update_keeps_bfloat16():
    # what optax's preserve-dtype tests do: params, grads and updates all bfloat16
    def adam_step(p, m, v, lr=0.1, b1=0.9, b2=0.999):
        g = tg.grad(lambda p: tnp.sum(p ** 2))(p)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        return p - lr * m / (tnp.sqrt(v) + 1e-8), m, v

    def jax_step(p, m, v, lr=0.1, b1=0.9, b2=0.999):
        g = jax.grad(lambda p: jnp.sum(p ** 2))(p)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        return p - lr * m / (jnp.sqrt(v) + 1e-8), m, v

    p = np.array([1.0, 2.0], BF16)
    z = np.zeros(2, BF16)
    ours, theirs = tg.jit(adam_step)(p, z, z), jax.jit(jax_step)(p, z, z)
    for a, b in zip(ours, theirs):
        _close(a, b)



def test_out_of_bounds_fill_of_ml_dtypes_as_jax():
    # take's default fill: NaN for bfloat16, the most negative int4 (optax's microbatching
    # takes from bfloat16 batches)
    x = np.ones((4, 2), BF16)
    for arr, idx, axis in ((x, 7, 0), (x, 0, 0), (np.ones(3, ml_dtypes.int4), 5, None)):
        got = tnp.take(arr, idx, axis=axis, mode="fill")
        want = jnp.take(jnp.asarray(arr), idx, axis=axis, mode="fill")
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.float32(got), np.float32(want))


def test_bfloat16_uniform_and_normal_samples():
    # JAX draws 16 random bits per bfloat16 sample; bits may differ from JAX's, the
    # distributions must not
    key = tg.random.key(7)
    u = tg.random.uniform(key, (4000,), BF16)
    n = tg.random.normal(key, (4000,), BF16)
    ju = jax.random.uniform(jax.random.key(7), (4000,), jnp.bfloat16)
    jn = jax.random.normal(jax.random.key(7), (4000,), jnp.bfloat16)
    assert u.dtype == n.dtype == ju.dtype == jn.dtype == BF16
    u32, n32 = np.float32(u), np.float32(n)
    assert u32.min() >= 0 and u32.max() < 1
    assert set(np.unique(u32 * 128)) <= set(range(128))   # 7 mantissa bits: k / 128
    assert abs(u32.mean() - 0.5) < 0.02 and abs(n32.mean()) < 0.05 and abs(n32.std() - 1) < 0.05
    for q in (0.1, 0.5, 0.9):
        assert abs(np.quantile(n32, q) - np.quantile(np.float32(jn), q)) < 0.1
    w = tg.random.uniform(key, (1000,), BF16, 2.0, 5.0)
    assert w.dtype == BF16 and np.float32(w).min() >= 2 and np.float32(w).max() <= 5



@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_where_with_a_python_float_keeps_bfloat16(jit):
    # NumPy's where(c, 0.0, bfloat16 array) is float32 (ml_dtypes promotes a Python float
    # first to float32); JAX's (and the shape rule's) is bfloat16.  optax's safe_norm.
    c = np.array([True, False, True, False])
    pairs = [(lambda c, x: tnp.where(c, 0.0, x), lambda c, x: jnp.where(c, 0.0, x)),
             (lambda c, x: tnp.where(c, x, 0.5), lambda c, x: jnp.where(c, x, 0.5))]
    for ours, theirs in pairs:
        got = (tg.jit(ours) if jit else ours)(c, X)
        want = theirs(c, jnp.asarray(X))
        assert got.dtype == want.dtype == BF16
        np.testing.assert_array_equal(np.float32(got), np.float32(want))
