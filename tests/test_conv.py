"""lax.conv_general_dilated and its conveniences: values against a direct loop
over output positions and kernel taps (dilations, groups, negative padding,
layouts), scipy.signal for 1-D, and numbers computed with jax 0.10.2 (x64);
gradients against finite differences at orders 1 and 2 in both modes, vmap
against loops for every batched-operand combination, jit on both backends."""
import itertools

import numpy as np
import pytest
import scipy.signal

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax
from tangentia.compiler.numba_backend import rules as numba_rules
from tangentia.test_util import check_grads

RNG = np.random.default_rng(0)


def _reference(x, w, strides, padding, lhs_dil, rhs_dil, fg=1, bg=1):
    """Canonical (N, C, spatial) x (O, I, spatial) convolution by explicit loops."""
    dil = [1 + d * (n - 1) for n, d in zip(x.shape[2:], lhs_dil)]
    xd = np.zeros(x.shape[:2] + tuple(dil))
    xd[(slice(None),) * 2 + tuple(slice(None, None, d) for d in lhs_dil)] = x
    big = np.zeros(xd.shape[:2] + tuple(n + max(lo, 0) + max(hi, 0)
                                        for n, (lo, hi) in zip(dil, padding)))
    big[(slice(None),) * 2 + tuple(slice(max(lo, 0), max(lo, 0) + n)
                                   for n, (lo, _) in zip(dil, padding))] = xd
    xp = big[(slice(None),) * 2 + tuple(slice(max(-lo, 0), big.shape[2 + i] - max(-hi, 0))
                                        for i, (lo, hi) in enumerate(padding))]
    ks = w.shape[2:]
    eff = [1 + d * (k - 1) for k, d in zip(ks, rhs_dil)]
    out_sp = [max((n - e) // s + 1, 0) for n, e, s in zip(xp.shape[2:], eff, strides)]
    n, c = x.shape[:2]
    o, i_per = w.shape[:2]
    out = np.zeros((n // bg, o) + tuple(out_sp))
    o_per_g = o // max(fg, bg)
    for b, oc in itertools.product(range(n // bg), range(o)):
        g = oc // o_per_g
        for pos in itertools.product(*[range(m) for m in out_sp]):
            acc = 0.0
            for ic in range(i_per):
                xb, xc = (g * (n // bg) + b, ic) if bg > 1 else (b, g * i_per + ic)
                for tap in itertools.product(*[range(k) for k in ks]):
                    idx = tuple(p * s + t * d for p, s, t, d in zip(pos, strides, tap, rhs_dil))
                    acc += xp[(xb, xc) + idx] * w[(oc, ic) + tap]
            out[(b, oc) + pos] = acc
    return out


CASES = {
    "2d strides+rhs dilation+feature groups": dict(
        ls=(2, 4, 7, 6), rs=(6, 2, 3, 2),
        kw=dict(window_strides=(2, 1), padding=((1, 1), (0, 2)), rhs_dilation=(1, 2),
                feature_group_count=2)),
    "2d lhs dilation+negative padding": dict(
        ls=(2, 2, 5, 4), rs=(3, 2, 2, 3),
        kw=dict(window_strides=(1, 2), padding=((1, -1), (2, 0)), lhs_dilation=(2, 1))),
    "1d batch groups": dict(
        ls=(4, 3, 9), rs=(6, 3, 3),
        kw=dict(window_strides=(2,), padding=((0, 0),), batch_group_count=2)),
    "3d": dict(
        ls=(1, 2, 4, 3, 3), rs=(2, 2, 2, 2, 1),
        kw=dict(window_strides=(1, 2, 1), padding=((0, 1), (1, 1), (0, 0)),
                rhs_dilation=(2, 1, 1))),
}


def _operands(case):
    return RNG.normal(size=case["ls"]), RNG.normal(size=case["rs"])


@pytest.mark.parametrize("name", list(CASES))
def test_matches_direct_loops(name):
    case = CASES[name]
    x, w = _operands(case)
    kw = case["kw"]
    nsp = x.ndim - 2
    want = _reference(x, w, kw["window_strides"], kw["padding"],
                      kw.get("lhs_dilation", (1,) * nsp), kw.get("rhs_dilation", (1,) * nsp),
                      kw.get("feature_group_count", 1), kw.get("batch_group_count", 1))
    np.testing.assert_allclose(lax.conv_general_dilated(x, w, **kw), want, atol=1e-12)
    f = tg.jit(lambda x, w: lax.conv_general_dilated(x, w, **kw))
    np.testing.assert_allclose(f(x, w), want, atol=1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_derivatives_against_finite_differences(name):
    case = CASES[name]
    x, w = _operands(case)
    f = lambda x, w: lax.conv_general_dilated(x, w, **case["kw"])  # noqa: E731
    check_grads(f, (x, w), 2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("in_axes", [(0, 0), (1, None), (None, 2)])
def test_vmap_matches_loop(name, in_axes):
    case = CASES[name]
    x, w = _operands(case)
    xs = np.stack([x + k for k in range(3)], in_axes[0] or 0)
    ws = np.stack([w * (k + 1) for k in range(3)], in_axes[1] or 0)
    f = lambda x, w: lax.conv_general_dilated(x, w, **case["kw"])  # noqa: E731
    args = (xs if in_axes[0] is not None else x, ws if in_axes[1] is not None else w)
    got = tg.vmap(f, in_axes=in_axes)(*args)
    want = np.stack([f(np.take(xs, k, in_axes[0]) if in_axes[0] is not None else x,
                       np.take(ws, k, in_axes[1]) if in_axes[1] is not None else w)
                     for k in range(3)])
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_layouts_and_same_padding_match_scipy():
    x, w = RNG.normal(size=(3, 11, 2)), RNG.normal(size=(5, 2, 4))  # NWC, WIO (odd width)
    out = lax.conv_general_dilated(x, w, (1,), "SAME", dimension_numbers=("NWC", "WIO", "NCW"))
    assert out.shape == (3, 4, 11)
    for b, o in itertools.product(range(3), range(4)):
        want = sum(scipy.signal.correlate(x[b, :, c], w[:, c, o], mode="same")
                   for c in range(2))
        np.testing.assert_allclose(out[b, o], want, atol=1e-12)
    valid = lax.conv(np.moveaxis(x, 2, 1), np.transpose(w, (2, 1, 0)), (2,), "VALID")
    want = np.stack([[sum(scipy.signal.correlate(x[b, :, c], w[:, c, o], mode="valid")
                          for c in range(2))[::2] for o in range(4)] for b in range(3)])
    np.testing.assert_allclose(valid, want, atol=1e-12)


# jax.lax.conv_transpose(X, W, (2,), padding) in its default NWC/WIO layout (jax 0.10.2).
CT_X = np.array([[[0.35, 0.82], [0.33, -1.3], [0.91, 0.45], [-0.54, 0.58], [0.36, 0.29]]])
CT_W = np.array([[[0.03, 0.55, -0.74], [-0.16, -0.48, 0.6]],
                 [[0.04, -0.29, -0.78], [-0.26, 0.01, -0.28]],
                 [[1.29, 1.01, -2.71], [-1.89, -0.17, -0.42]]])
CT_VALID = [[-1.0983, 0.2141, -1.2929], [-0.1992, -0.0933, -0.5026], [2.762, 0.3532, -0.1153],
            [0.3512, -0.1087, 0.1066], [0.5413, 1.6481, -3.6793], [-0.0806, -0.2594, -0.8358],
            [-1.8375, -0.3595, 0.8164], [-0.1724, 0.1624, 0.2588], [-0.1927, -0.2611, -0.3498],
            [-0.061, -0.1015, -0.362], [-0.0356, 0.0588, -0.0924]]


def test_conv_transpose_matches_jax():
    np.testing.assert_allclose(lax.conv_transpose(CT_X, CT_W, (2,), "VALID")[0], CT_VALID,
                               atol=1e-12)
    np.testing.assert_allclose(lax.conv_transpose(CT_X, CT_W, (2,), "SAME")[0], CT_VALID[:10],
                               atol=1e-12)
    np.testing.assert_allclose(lax.conv_transpose(CT_X, CT_W, (2,), ((1, 2),))[0],
                               CT_VALID[1:], atol=1e-12)
    assert lax.conv_transpose_shape_tuple((1, 5, 2), (3, 2, 3), (2,), "SAME",
                                          ("NWC", "WIO", "NWC")) == (1, 10, 3)


def test_conv_transpose_with_transpose_kernel_is_the_gradient_of_conv():
    x, w = RNG.normal(size=(1, 6, 2)), RNG.normal(size=(3, 4, 2))  # NWC, WIO (I=4, O=2)
    dn = ("NWC", "WIO", "NWC")
    fwd = lambda z: lax.conv_general_dilated(z, w, (2,), "SAME", dimension_numbers=dn)  # noqa
    z = RNG.normal(size=(1, 12, 4))
    _, pullback = tg.vjp(fwd, z)
    np.testing.assert_allclose(lax.conv_transpose(x, w, (2,), "SAME", dimension_numbers=dn,
                                                  transpose_kernel=True),
                               pullback(x)[0], atol=1e-12)


def test_helpers_match_jax():
    assert lax.padtype_to_pads((7, 6), (3, 4), (2, 1), "SAME") == [(1, 1), (1, 2)]
    assert lax.padtype_to_pads((7, 6), (3, 4), (2, 1), "SAME_LOWER") == [(1, 1), (2, 1)]
    assert lax.padtype_to_pads((7, 6), (3, 4), (2, 1), "VALID") == [(0, 0), (0, 0)]
    assert lax.conv_dimension_numbers((1, 2, 3, 4), (1, 2, 3, 4), ("NHWC", "OIHW", "NCHW")) == \
        lax.ConvDimensionNumbers((0, 3, 1, 2), (0, 1, 2, 3), (0, 1, 2, 3))
    assert lax.conv_general_permutations(("NHWC", "HWIO", "NCWH")) == \
        ((0, 3, 1, 2), (3, 2, 0, 1), (0, 1, 3, 2))
    assert lax.conv_general_shape_tuple((2, 5, 6, 3), (3, 2, 3, 4), (1, 2), "SAME",
                                        ("NHWC", "HWIO", "NHWC")) == (2, 5, 3, 4)
    assert lax.conv_shape_tuple((2, 3, 9), (4, 3, 3), (2,), ((1, 0),)) == (2, 4, 4)


def test_errors_name_the_problem():
    x, w = np.ones((1, 4, 5)), np.ones((2, 3, 2))
    with pytest.raises(ValueError, match="feature_group_count"):
        lax.conv_general_dilated(x, w, (1,), "VALID")
    with pytest.raises(TypeError, match="dimension_numbers\\[0\\] must contain"):
        lax.conv_general_dilated(x, w, (1,), "VALID", dimension_numbers=("NWW", "OIW", "NCW"))
    with pytest.raises(ValueError, match="String padding is not implemented"):
        lax.conv_general_dilated(np.ones((1, 3, 5)), w, (1,), "SAME", lhs_dilation=(2,))


def test_numba_backend_runs_it_in_object_mode_with_the_same_numbers():
    assert numba_rules.lowering_paths()["conv_general_dilated"] == "objmode"
    case = CASES["2d strides+rhs dilation+feature groups"]
    x, w = _operands(case)
    loss = lambda x, w: tnp.sum(tnp.tanh(lax.conv_general_dilated(x, w, **case["kw"])))  # noqa
    g = tg.grad(loss, (0, 1))
    for a, b in zip(tg.jit(g, backend="numba")(x, w), tg.jit(g, backend="numpy")(x, w)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)


def test_patches_are_the_windows_a_convolution_sees():
    x = RNG.normal(size=(2, 3, 5, 4))
    patches = lax.conv_general_dilated_patches(x, (2, 3), (1, 2), "SAME", rhs_dilation=(1, 2))
    assert patches.shape == (2, 18, 5, 2)
    w = RNG.normal(size=(4, 3, 2, 3))
    conv = lax.conv_general_dilated(x, w, (1, 2), "SAME", rhs_dilation=(1, 2))
    np.testing.assert_allclose(np.einsum("nphw,op->nohw", patches, w.reshape(4, -1)), conv,
                               atol=1e-12)
