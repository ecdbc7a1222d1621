"""Derivatives of scatters whose indices may repeat, and the ``unique_indices`` /
``indices_are_sorted`` hints (issue 24, part 2).

A repeated index changes the derivative of ``set`` (only the update that lands
counts), ``min``/``max`` (ties share the tangent, as JAX) and ``multiply`` (JAX
raises for the derivative with respect to the updates unless
``unique_indices=True``).  The numbers are checked against finite differences
and against JAX 0.10.2, under jit with a traced index, vmap and grad.
"""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax

jax = pytest.importorskip("jax", reason="JAX is the reference these numbers are checked against")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)

X = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
Y = np.array([2.0, 3.0, 4.0])
W = np.array([0.5, -1.0, 2.0, 1.5, -0.25])
REP = np.array([1, 3, 1])        # entry 1 updated twice (the last update lands)
UNI = np.array([1, 3, 0])
MODES = ["set", "add", "min", "max"]


def _loss(np_mod, mode, **kw):
    def f(x, y, i):
        return np_mod.sum(getattr(np_mod.asarray(x).at[i], mode)(y, **kw) * W)
    return f


_UFUNC = {"add": np.add, "min": np.minimum, "max": np.maximum, "multiply": np.multiply}


def _np_loss(mode):
    """The loss of ``_loss`` in NumPy (in-place updates: the last repeated ``set`` lands)."""
    def f(x, y, i):
        out = np.array(x, dtype=float)
        if mode == "set":
            out[i] = y
        else:
            _UFUNC[mode].at(out, i, y)
        return np.sum(out * W)
    return f


def _fd(f, args, argnum, eps=1e-6):
    """Central finite differences of the scalar ``f`` in ``args[argnum]``."""
    base = [np.array(a, dtype=float) if k == argnum else a for k, a in enumerate(args)]
    out = np.zeros_like(base[argnum])
    for j in range(out.size):
        up = [a.copy() if k == argnum else a for k, a in enumerate(base)]
        dn = [a.copy() if k == argnum else a for k, a in enumerate(base)]
        up[argnum].flat[j] += eps
        dn[argnum].flat[j] -= eps
        out.flat[j] = (float(f(*up)) - float(f(*dn))) / (2 * eps)
    return out


def _jax_grad(mode, i, **kw):
    return jax.jit(jax.grad(_loss(jnp, mode, **kw), (0, 1)))(X, Y, i)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("idx", [REP, UNI], ids=["repeated", "unique"])
@pytest.mark.parametrize("traced", [False, True], ids=["concrete", "traced"])
def test_grad_matches_jax(mode, idx, traced):
    f = _loss(tnp, mode)
    if traced:
        gx, gy = tg.jit(tg.grad(f, (0, 1)))(X, Y, idx)
    else:
        gx, gy = tg.grad(lambda x, y: f(x, y, idx), (0, 1))(X, Y)
    jx, jy = _jax_grad(mode, idx)
    np.testing.assert_allclose(gx, jx, atol=1e-12)
    np.testing.assert_allclose(gy, jy, atol=1e-12)


def test_set_repeated_grad_only_reaches_the_update_that_lands():
    # Update 0 is overwritten by update 2; the old transpose gave it W[1] = -1 too.
    gy = tg.jit(tg.grad(_loss(tnp, "set"), 1))(X, Y, REP)
    np.testing.assert_allclose(gy, [0.0, 1.5, -1.0])
    np.testing.assert_allclose(gy, _fd(lambda y: _np_loss("set")(X, y, REP), [Y], 0),
                               atol=1e-6)


@pytest.mark.parametrize("mode", ["min", "max"])
def test_extremum_without_ties_matches_finite_differences(mode):
    x = np.array([1.0, 2.5, 3.0, 4.0, 5.0])
    y = np.array([2.0, 3.5, 0.5, 7.0])
    i = np.array([1, 3, 1, 1])
    f = _loss(tnp, mode)
    g = tg.jit(tg.grad(f, (0, 1)))(x, y, i)
    ref = _np_loss(mode)
    np.testing.assert_allclose(g[0], _fd(lambda x: ref(x, y, i), [x], 0), atol=1e-6)
    np.testing.assert_allclose(g[1], _fd(lambda y: ref(x, y, i), [y], 0), atol=1e-6)


@pytest.mark.parametrize("mode", ["min", "max"])
def test_extremum_ties_share_the_tangent(mode):
    # x[1] == 2 and both updates sent there equal 2: three candidates share it.
    x = np.array([1.0, 2.0, 3.0])
    y = np.array([2.0, 2.0])
    i = np.array([1, 1])
    f = lambda x, y: tnp.sum(getattr(x.at[i], mode)(y) * np.array([1.0, 3.0, 1.0]))
    gx, gy = tg.grad(f, (0, 1))(x, y)
    np.testing.assert_allclose(gx, [1.0, 1.0, 1.0])
    np.testing.assert_allclose(gy, [1.0, 1.0])
    jf = lambda x, y: jnp.sum(getattr(x.at[i], mode)(y) * jnp.array([1.0, 3.0, 1.0]))
    jx, jy = jax.grad(jf, (0, 1))(x, y)
    np.testing.assert_allclose(gx, jx)
    np.testing.assert_allclose(gy, jy)
    # Forward mode agrees with reverse mode.
    t = tg.jvp(lambda y: getattr(tnp.asarray(x).at[i], mode)(y), (y,), (np.array([1.0, 0.0]),))[1]
    np.testing.assert_allclose(t, [0.0, 1.0 / 3.0, 0.0])


def test_set_forward_mode_follows_the_update_that_lands():
    t = tg.jit(lambda y, ty, i: tg.jvp(lambda y: tnp.asarray(X).at[i].set(y), (y,), (ty,))[1])(
        Y, np.array([10.0, 20.0, 30.0]), REP)
    np.testing.assert_allclose(t, [0.0, 30.0, 0.0, 20.0, 0.0])


MUL_ERROR = "scatter_mul gradients are only implemented if `unique_indices=True`"


@pytest.mark.parametrize("idx", [REP, UNI], ids=["repeated", "unique"])
def test_multiply_traced_index_raises_jax_error(idx):
    f = _loss(tnp, "multiply")
    with pytest.raises(NotImplementedError, match="^" + MUL_ERROR.replace("`", ".").replace(
            "(", r"\(") + r" \(tangentia: .*traced"):
        tg.jit(tg.grad(f, 1))(X, Y, idx)
    with pytest.raises(NotImplementedError, match="scatter_mul gradients"):
        jax.jit(jax.grad(_loss(jnp, "multiply"), 1))(X, Y, idx)
    # divide multiplies too
    with pytest.raises(NotImplementedError, match="scatter_mul gradients"):
        tg.jit(tg.grad(lambda x, y, i: tnp.sum(x.at[i].divide(y)), 1))(X, Y, idx)


def test_multiply_concrete_repeated_raises_and_unique_works():
    f = _loss(tnp, "multiply")
    with pytest.raises(NotImplementedError, match="repeats an index"):
        tg.grad(lambda y: f(X, y, REP))(Y)
    # A concrete index without repeats keeps working (JAX would ask for the hint).
    g = tg.grad(lambda y: f(X, y, UNI))(Y)
    np.testing.assert_allclose(g, _fd(lambda y: _np_loss("multiply")(X, y, UNI), [Y], 0),
                               atol=1e-6)


@pytest.mark.parametrize("idx", [REP, UNI], ids=["repeated", "unique"])
def test_multiply_x_only_is_fine_with_repeats(idx):
    g = tg.jit(tg.grad(_loss(tnp, "multiply"), 0))(X, Y, idx)
    ref = jax.jit(jax.grad(_loss(jnp, "multiply"), 0))(X, Y, idx)
    np.testing.assert_allclose(g, ref)
    np.testing.assert_allclose(g, _fd(lambda x: _np_loss("multiply")(x, Y, idx), [X], 0),
                               atol=1e-6)


@pytest.mark.parametrize("mode", MODES + ["multiply"])
@pytest.mark.parametrize("idx", [REP, UNI], ids=["repeated", "unique"])
def test_unique_indices_hint_matches_jax(mode, idx):
    # With the hint the fast rules run; for a truly repeated index the result is
    # unspecified, but it is JAX's.
    hint = dict(unique_indices=True, indices_are_sorted=False)
    gx, gy = tg.jit(tg.grad(_loss(tnp, mode, **hint), (0, 1)))(X, Y, idx)
    jx, jy = _jax_grad(mode, idx, **hint)
    np.testing.assert_allclose(gx, jx, atol=1e-12)
    np.testing.assert_allclose(gy, jy, atol=1e-12)
    if idx is UNI:
        np.testing.assert_allclose(gy, _fd(lambda y: _np_loss(mode)(X, y, idx), [Y], 0),
                                   atol=1e-6)


def test_hint_is_a_parameter_of_the_primitives():
    f = lambda x, y, i: x.at[i].set(y, unique_indices=True, indices_are_sorted=True)
    text = str(tg.make_jaxpr(f)(X, Y, UNI))
    assert "unique_indices=True" in text and "indices_are_sorted=True" in text
    g = lambda x, i: x.at[i].get(unique_indices=True)
    assert "unique_indices=True" in str(tg.make_jaxpr(g)(X, UNI))
    # Without the hints the printed programs are unchanged.
    assert "unique_indices" not in str(tg.make_jaxpr(lambda x, y, i: x.at[i].set(y))(X, Y, UNI))
    # With the hint and a unique index no id-scatter is staged for the transpose.
    grad_hint = str(tg.make_jaxpr(tg.grad(_loss(tnp, "set", unique_indices=True), 1))(X, Y, UNI))
    grad_plain = str(tg.make_jaxpr(tg.grad(_loss(tnp, "set"), 1))(X, Y, UNI))
    assert grad_hint.count("scatter[") < grad_plain.count("scatter[")


IB = np.array([[1, 3, 1], [0, 2, 4], [4, 4, 4]])   # per example: repeated, unique, all one
YB = np.array([[2.0, 3.0, 4.0], [1.0, -1.0, 0.5], [7.0, 8.0, 9.0]])


@pytest.mark.parametrize("mode", MODES)
def test_vmap_of_grad_matches_loop(mode):
    f = tg.grad(_loss(tnp, mode), (0, 1))
    got = tg.vmap(f, in_axes=(None, 0, 0))(X, YB, IB)
    for k in range(len(IB)):
        ref = jax.grad(_loss(jnp, mode), (0, 1))(X, YB[k], IB[k])
        np.testing.assert_allclose(got[0][k], ref[0], atol=1e-12)
        np.testing.assert_allclose(got[1][k], ref[1], atol=1e-12)
    got_jit = tg.jit(tg.vmap(f, in_axes=(None, 0, 0)))(X, YB, IB)
    np.testing.assert_allclose(got_jit[1], got[1])


@pytest.mark.parametrize("mode", MODES)
def test_grad_of_vmap_matches_loop(mode):
    def total(x, ys, idx):
        outs = tg.vmap(lambda y, i: getattr(x.at[i], mode)(y))(ys, idx)
        return tnp.sum(outs * W)
    gx, gy = tg.jit(tg.grad(total, (0, 1)))(X, YB, IB)
    jx = np.zeros(5)
    for k in range(len(IB)):
        rx, ry = jax.grad(_loss(jnp, mode), (0, 1))(X, YB[k], IB[k])
        jx += rx
        np.testing.assert_allclose(gy[k], ry, atol=1e-12)
    np.testing.assert_allclose(gx, jx, atol=1e-12)


def test_vmap_multiply_traced_still_raises_and_hint_works():
    f = tg.grad(_loss(tnp, "multiply"), 1)
    with pytest.raises(NotImplementedError, match="scatter_mul gradients"):
        tg.jit(tg.vmap(f, in_axes=(None, 0, 0)))(X, YB, IB)
    fh = tg.grad(_loss(tnp, "multiply", unique_indices=True), 1)
    got = tg.jit(tg.vmap(fh, in_axes=(None, 0, 0)))(X, YB[:2], IB[:2])
    for k in range(2):
        ref = jax.grad(_loss(jnp, "multiply", unique_indices=True), 1)(X, YB[k], IB[k])
        np.testing.assert_allclose(got[k], ref, atol=1e-12)


def test_two_dimensional_index_with_slices():
    x = np.arange(12.0).reshape(4, 3) / 7.0
    y = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    i = np.array([2, 2])
    f = lambda x, y, i: tnp.sum(tnp.sin(x.at[i, :].set(y)))
    g = tg.jit(tg.grad(f, (0, 1)))(x, y, i)
    jf = lambda x, y, i: jnp.sum(jnp.sin(x.at[i, :].set(y)))
    r = jax.grad(jf, (0, 1))(jnp.asarray(x), y, i)
    np.testing.assert_allclose(g[0], r[0], atol=1e-12)
    np.testing.assert_allclose(g[1], r[1], atol=1e-12)
    # a broadcast scalar update counts once
    gs = tg.jit(tg.grad(lambda x, s, i: tnp.sum(tnp.sin(x.at[i].set(s))), 1))(x, 0.3, i)
    rs = jax.grad(lambda x, s, i: jnp.sum(jnp.sin(x.at[i].set(s))), 1)(jnp.asarray(x), 0.3, i)
    np.testing.assert_allclose(gs, rs, atol=1e-12)


_DN = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                  scatter_dims_to_operand_dims=(0,))


@pytest.mark.parametrize("name", ["scatter", "scatter_min", "scatter_max", "scatter_add"])
def test_lax_scatter_repeated_traced_matches_jax(name):
    i = REP[:, None]

    def loss(mod, lx):
        def f(x, y, i):
            return mod.sum(getattr(lx, name)(x, i, y, _DN) * W)
        return f
    g = tg.jit(tg.grad(loss(tnp, lax), (0, 1)))(X, Y, i)
    r = jax.jit(jax.grad(loss(jnp, jax.lax), (0, 1)))(X, Y, i)
    np.testing.assert_allclose(g[0], r[0], atol=1e-12)
    np.testing.assert_allclose(g[1], r[1], atol=1e-12)


def test_lax_scatter_mul_and_gather_hints():
    i = UNI[:, None]
    f = lambda x, y, i, **kw: tnp.sum(lax.scatter_mul(x, i, y, _DN, **kw) * W)
    with pytest.raises(NotImplementedError, match="^scatter_mul gradients"):
        tg.jit(tg.grad(f, 1))(X, Y, i)
    g = tg.jit(tg.grad(lambda x, y, i: f(x, y, i, unique_indices=True), (0, 1)))(X, Y, i)
    jf = lambda x, y, i: jnp.sum(jax.lax.scatter_mul(x, i, y, _DN, unique_indices=True) * W)
    r = jax.jit(jax.grad(jf, (0, 1)))(X, Y, i)
    np.testing.assert_allclose(g[0], r[0], atol=1e-12)
    np.testing.assert_allclose(g[1], r[1], atol=1e-12)
    gdn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                     start_index_map=(0,))
    h = lambda x, i: tnp.sum(lax.gather(x, i, gdn, (1,), unique_indices=True,
                                        indices_are_sorted=True) * Y)
    assert "unique_indices=True" in str(tg.make_jaxpr(h)(X, i))
    np.testing.assert_allclose(tg.jit(tg.grad(h))(X, i), [4.0, 2.0, 0.0, 3.0, 0.0])


@pytest.mark.parametrize("rows,cols,repeats", [
    ([1, 2], [0, 0], False), ([1, 1], [0, 0], True), ([[1], [2]], [0, 0], True),
    ([-1, 3], [2, 2], True), ([3, 3], [-1, 4], True), ([0, 3], [-1, 4], False)])
def test_concrete_index_repeats_are_counted(rows, cols, repeats):
    # x[rows, :, cols] *= y with a concrete index: its y-derivative works unless an
    # entry repeats (negative indices count from the end).
    x = np.arange(1.0, 4 * 2 * 5 + 1).reshape(4, 2, 5) / 10
    rows, cols = np.array(rows), np.array(cols)
    shape = np.broadcast_shapes(rows.shape, cols.shape) + (2,)
    y = np.linspace(0.5, 1.5, int(np.prod(shape))).reshape(shape)
    f = lambda y: tnp.sum(tnp.sin(tnp.asarray(x).at[rows, :, cols].multiply(y)))
    if repeats:
        with pytest.raises(NotImplementedError, match="repeats an index"):
            tg.grad(f)(y)
        return
    g = tg.grad(f)(y)

    def ref(y):
        out = x.copy()
        np.multiply.at(out, (rows, slice(None), cols), y)
        return np.sum(np.sin(out))
    np.testing.assert_allclose(g, _fd(ref, [y], 0), atol=1e-6)
