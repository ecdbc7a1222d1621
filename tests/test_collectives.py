"""Collectives over a named vmap axis (lax.psum, pmean, pmax, pmin, axis_index,
axis_size, all_gather, psum_scatter, ppermute, all_to_all): values against
NumPy formulas of what each element receives (they agree with jax 0.10.2's
vmap), derivatives against JAX's numbers and finite differences, inside jit,
scan and nested vmaps, and JAX's NameError outside a named axis."""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax
from tangentia.test_util import check_grads

XS = np.arange(24.0).reshape(3, 2, 4) / 7.0
YS = np.arange(54.0).reshape(3, 3, 6)


def named(f, **kw):
    return tg.vmap(f, axis_name="i", **kw)


def test_reductions():
    np.testing.assert_allclose(named(lambda x: lax.psum(x, "i"))(XS),
                               np.broadcast_to(XS.sum(0), XS.shape), rtol=1e-15)
    np.testing.assert_allclose(named(lambda x: lax.pmean(x, "i"))(XS),
                               np.broadcast_to(XS.mean(0), XS.shape), rtol=1e-15)
    np.testing.assert_array_equal(named(lambda x: lax.pmax(x, "i"))(-XS),
                                  np.broadcast_to((-XS).max(0), XS.shape))
    np.testing.assert_array_equal(named(lambda x: lax.pmin(x, "i"))(XS),
                                  np.broadcast_to(XS.min(0), XS.shape))
    # an unbatched value summed over the axis: times its size
    np.testing.assert_array_equal(named(lambda x: lax.psum(1.0, "i") + 0 * x)(XS[:, 0, 0]),
                                  [3.0, 3.0, 3.0])
    got = named(lambda x: x * lax.axis_index("i") + lax.axis_size("i"))(XS)
    np.testing.assert_allclose(got, XS * np.arange(3)[:, None, None] + 3, rtol=1e-15)
    tree = named(lambda x: lax.psum({"a": x, "b": 2 * x}, "i"))(XS)
    np.testing.assert_allclose(tree["b"], 2 * tree["a"], rtol=1e-15)


@pytest.mark.parametrize("axis, tiled", [(0, False), (1, False), (2, False), (0, True),
                                         (1, True)])
def test_all_gather(axis, tiled):
    got = named(lambda x: lax.all_gather(x, "i", axis=axis, tiled=tiled))(XS)
    one = np.concatenate(list(XS), axis) if tiled else np.stack(list(XS), axis)
    np.testing.assert_array_equal(got, np.broadcast_to(one, (3,) + one.shape))


def test_psum_scatter_and_all_to_all():
    total = YS.sum(0)  # per-element (3, 6)
    np.testing.assert_array_equal(named(lambda x: lax.psum_scatter(x, "i"))(YS), total)
    tiled = named(lambda x: lax.psum_scatter(x, "i", scatter_dimension=1, tiled=True))(YS)
    np.testing.assert_array_equal(tiled, np.stack([total[:, 2 * k:2 * k + 2] for k in range(3)]))
    # element j receives block j of every element i, stacked along concat_axis by i
    got = named(lambda x: lax.all_to_all(x, "i", 0, 1))(YS)
    np.testing.assert_array_equal(got, np.stack([np.stack([YS[i, j] for i in range(3)], 1)
                                                 for j in range(3)]))
    got = named(lambda x: lax.all_to_all(x, "i", 1, 0, tiled=True))(YS)
    want = np.stack([np.concatenate([YS[i][:, 2 * j:2 * j + 2] for i in range(3)], 0)
                     for j in range(3)])
    np.testing.assert_array_equal(got, want)


def test_ppermute():
    perm = [(0, 1), (1, 2)]
    got = named(lambda x: lax.ppermute(x, "i", perm))(XS)
    np.testing.assert_array_equal(got, np.stack([np.zeros_like(XS[0]), XS[0], XS[1]]))
    with pytest.raises(ValueError, match="ppermute sources and destinations must be unique"):
        named(lambda x: lax.ppermute(x, "i", [(0, 1), (0, 2)]))(XS)


def test_derivatives():
    # jax 0.10.2: vmap(grad(lambda x: psum(x * x, 'i').sum()), axis_name='i')(xs)[0, 0]
    g = named(tg.grad(lambda x: tnp.sum(lax.psum(x * x, "i"))))(np.arange(24.0).reshape(3, 2, 4))
    np.testing.assert_array_equal(g[0, 0], [0.0, 6.0, 12.0, 18.0])
    # grad of a sum over elements of a named vmap equals the unnamed computation's
    w = np.arange(24.0).reshape(2, 3, 4)

    def total(fn):
        return lambda xs: tnp.sum(named(fn)(xs))
    cases = [
        (lambda x: tnp.sum(tnp.sin(lax.psum(x, "i")) * x), lambda xs: tnp.sum(
            tnp.sin(tnp.sum(xs, 0)) * xs)),
        (lambda x: tnp.sum(tnp.sin(lax.all_gather(x, "i", axis=1)) * w), lambda xs: 3 * tnp.sum(
            tnp.sin(tnp.moveaxis(xs, 0, 1)) * w)),
        (lambda x: tnp.sum(tnp.cos(lax.ppermute(x, "i", [(0, 1), (1, 2), (2, 0)])) * x),
         lambda xs: tnp.sum(tnp.cos(tnp.roll(xs, 1, 0)) * xs)),
        (lambda x: tnp.sum(tnp.sin(lax.all_to_all(x, "i", 0, 1))),
         lambda xs: tnp.sum(tnp.sin(xs))),
    ]
    for fn, plain in cases:
        np.testing.assert_allclose(tg.grad(total(fn))(XS if fn is not cases[3][0] else YS),
                                   tg.grad(plain)(XS if fn is not cases[3][0] else YS),
                                   rtol=1e-13)
    check_grads(total(lambda x: lax.psum_scatter(x, "i", scatter_dimension=1, tiled=True) ** 2),
                (YS / 50,), 2)
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'pmax'"):
        named(tg.grad(lambda x: tnp.sum(lax.pmax(x, "i"))))(XS)


def test_inside_jit_scan_and_nested_vmaps():
    f = named(lambda x: lax.psum(x, "i"))
    np.testing.assert_allclose(tg.jit(f)(XS), f(XS), rtol=1e-15)
    np.testing.assert_allclose(named(tg.jit(lambda x: lax.psum(x, "i")))(XS), f(XS), rtol=1e-15)

    def body(c, x):
        return c + lax.psum(x, "i"), lax.axis_index("i")
    carry, idx = named(lambda xs: lax.scan(body, 0.0, xs))(XS[:, :, 0])
    np.testing.assert_allclose(carry, np.full(3, XS[:, :, 0].sum()), rtol=1e-14)
    np.testing.assert_array_equal(idx, np.repeat(np.arange(3)[:, None], 2, 1))
    inner = tg.vmap(lambda x: lax.psum(x, "i"), axis_name="j")
    np.testing.assert_allclose(named(inner)(XS), np.broadcast_to(XS.sum(0), XS.shape))
    inner = tg.vmap(lambda x: lax.psum(x, ("i", "j")), axis_name="j")
    np.testing.assert_allclose(named(inner)(XS), np.broadcast_to(XS.sum((0, 1)), XS.shape))


def test_unbound_axis_name_is_jax_name_error():
    with pytest.raises(NameError, match="^Found an unbound axis name: i"):
        lax.psum(1.0, "i")
    with pytest.raises(NameError, match="^Found an unbound axis name: j"):
        tg.jit(lambda x: lax.psum(x, "j"))(1.0)
    with pytest.raises(NameError, match="^Found an unbound axis name: j"):
        named(lambda x: lax.axis_index("j"))(XS)


def test_pshuffle_and_pswapaxes():
    np.testing.assert_array_equal(named(lambda x: lax.pshuffle(x, "i", [2, 0, 1]))(
        np.arange(3.0)), [2.0, 0.0, 1.0])
    ys = np.arange(27.0).reshape(3, 3, 3)
    # element j: out[a, i] = x_i[a, j] (the named axis and axis 1 exchanged)
    np.testing.assert_array_equal(named(lambda x: lax.pswapaxes(x, "i", 1))(ys),
                                  np.swapaxes(ys, 0, 2))
