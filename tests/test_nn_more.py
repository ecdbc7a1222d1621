"""jax.nn's other activations, dot_product_attention and friends in
tangentia.nn: values and derivatives equal JAX's (numbers computed with JAX
0.10.2 in float64 and written here), also under jit and vmap."""
import math

import numpy as np
import pytest
from scipy.special import logsumexp as sp_logsumexp
from scipy.special import softmax as sp_softmax

import tangentia as tg
import tangentia.nn as tn
import tangentia.numpy as tnp

X = np.array([-7.0, -3.0, -1.0, -0.5, 0.3, 1.0, 2.5, 5.9, 6.5])
JAX_NN = {
    "relu6": ([0.0, 0.0, 0.0, 0.0, 0.3, 1.0, 2.5, 5.9, 6.0],
        [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0]),
    "hard_sigmoid": ([0.0, 0.0, 0.3333333333333333, 0.41666666666666663, 0.5499999999999999, 0.6666666666666666, 0.9166666666666666, 1.0, 1.0],
        [0.0, 0.0, 0.16666666666666666, 0.16666666666666666, 0.16666666666666666, 0.16666666666666666, 0.16666666666666666, 0.0, 0.0]),
    "hard_silu": ([-0.0, -0.0, -0.3333333333333333, -0.20833333333333331, 0.16499999999999998, 0.6666666666666666, 2.2916666666666665, 5.9, 6.5],
        [0.0, 0.0, 0.16666666666666666, 0.3333333333333333, 0.6, 0.8333333333333333, 1.3333333333333333, 1.0, 1.0]),
    "hard_tanh": ([-1.0, -1.0, -1.0, -0.5, 0.3, 1.0, 1.0, 1.0, 1.0],
        [0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0]),
    "celu": ([-0.9990881180344455, -0.950212931632136, -0.6321205588285577, -0.3934693402873665, 0.3, 1.0, 2.5, 5.9, 6.5],
        [0.000911881965554473, 0.04978706836786395, 0.36787944117144233, 0.6065306597126334, 1.0, 1.0, 1.0, 1.0, 1.0]),
    "selu": ([-1.7564961617648047, -1.6705687287671118, -1.1113307378125625, -0.6917581878028712, 0.31521029620664415, 1.0507009873554805, 2.626752468388701, 6.199135825397335, 6.829556417810623],
        [0.001603179082571929, 0.08753061208026489, 0.646768603034814, 1.0663411530445053, 1.0507009873554805, 1.0507009873554805, 1.0507009873554805, 1.0507009873554805, 1.0507009873554805]),
    "mish": ([-0.006380263409573668, -0.1456474612756246, -0.30340146137410895, -0.22074377465173, 0.20800137234811503, 0.8650983882673103, 2.471392304557881, 5.899911930063915, 6.499970703939837],
        [-0.005465886861314786, -0.0933931145323208, 0.059216755877395, 0.28951067791351226, 0.7828272995511304, 1.0490362200997922, 1.041129530131353, 1.0001607302461017, 1.000053996944853]),
    "soft_sign": ([-0.875, -0.75, -0.5, -0.3333333333333333, 0.23076923076923075, 0.5, 0.7142857142857143, 0.855072463768116, 0.8666666666666667],
        [0.015625, 0.0625, 0.25, 0.4444444444444444, 0.5917159763313609, 0.25, 0.0816326530612245, 0.02100399075824408, 0.01777777777777778]),
    "squareplus": ([0.14005494464025903, 0.30277563773199456, 0.6180339887498949, 0.7807764064044151, 1.161187420807834, 1.618033988749895, 2.850781059358212, 6.064883625434504, 6.650367627183861],
        [0.019238026179588377, 0.08397485283107814, 0.27639320225002106, 0.3787321874818335, 0.5741702264651223, 0.7236067977499789, 0.8904344047215151, 0.9735329397078993, 0.977889504360975]),
    "sparse_plus": ([0.0, 0.0, 0.0, 0.0625, 0.42250000000000004, 1.0, 2.5, 5.9, 6.5],
        [0.0, 0.0, 0.0, 0.25, 0.65, 1.0, 1.0, 1.0, 1.0]),
    "sparse_sigmoid": ([0.0, 0.0, 0.0, 0.25, 0.65, 1.0, 1.0, 1.0, 1.0],
        [0.0, 0.0, 0.25, 0.5, 0.5, 0.25, 0.0, 0.0, 0.0]),
}


@pytest.mark.parametrize("name", sorted(JAX_NN))
def test_activation_values_and_derivatives_match_jax(name):
    f = getattr(tn, name)
    values, grads = JAX_NN[name]
    np.testing.assert_allclose(f(X), values, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(tg.vmap(tg.grad(f))(X), grads, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(tg.jit(f)(X), values, rtol=1e-14, atol=1e-15)
    assert f(X.astype(np.float32)).dtype == np.float32


def test_simple_ones():
    np.testing.assert_array_equal(tn.identity(X), X)
    np.testing.assert_allclose(tn.tanh(X), np.tanh(X))
    np.testing.assert_allclose(tn.hard_swish(X), tn.hard_silu(X))
    xp = np.array([1e-20, 1e-5, 0.5, math.log(2.0), 2.0, 40.0])
    # accurate at both ends: log(-expm1(-x)) for small x, log1p(-exp(-x)) for large x
    want = np.where(xp > math.log(2.0), np.log1p(-np.exp(-xp)), np.log(-np.expm1(-xp)))
    np.testing.assert_allclose(tn.log1mexp(xp), want, rtol=1e-14)
    assert abs(tn.log1mexp(40.0) / -math.exp(-40.0) - 1) < 1e-15   # log1p(-e) ~ -e
    m = np.random.default_rng(0).normal(size=(3, 4))
    np.testing.assert_allclose(tn.glu(m), m[:, :2] * (1 / (1 + np.exp(-m[:, 2:]))), rtol=1e-14)
    np.testing.assert_allclose(tn.logmeanexp(m, axis=1), sp_logsumexp(m, axis=1) - math.log(4))
    np.testing.assert_allclose(tn.standardize(m), (m - m.mean(-1, keepdims=True))
                               / np.sqrt(m.var(-1, keepdims=True) + 1e-5), rtol=1e-12)
    with pytest.raises(AssertionError, match="axis size must be divisible by 2"):
        tn.glu(np.ones((2, 3)))


def _attention(q, k, v, keep=None):
    rep = q.shape[-2] // k.shape[-2]
    k, v = np.repeat(k, rep, axis=-2), np.repeat(v, rep, axis=-2)
    logits = np.einsum("btnh,bsnh->bnts", q, k) / math.sqrt(q.shape[-1])
    if keep is not None:
        logits = np.where(keep, logits, np.finfo(np.float64).min)
    return np.einsum("bnts,bsnh->btnh", sp_softmax(logits, -1), v)


def test_dot_product_attention():
    rng = np.random.default_rng(1)
    q = rng.normal(size=(2, 5, 4, 3))
    k, v = rng.normal(size=(2, 5, 2, 3)), rng.normal(size=(2, 5, 2, 3))   # grouped-query heads
    np.testing.assert_allclose(tn.dot_product_attention(q, k, v), _attention(q, k, v), atol=1e-14)
    causal = np.tril(np.ones((5, 5), bool))
    np.testing.assert_allclose(tn.dot_product_attention(q, k, v, is_causal=True),
                               _attention(q, k, v, causal), atol=1e-14)
    mask = rng.uniform(size=(2, 4, 5, 5)) > 0.3
    mask[..., 0] = True
    np.testing.assert_allclose(tn.dot_product_attention(q, k, v, mask=mask),
                               _attention(q, k, v, mask), atol=1e-14)
    lengths = np.array([2, 5], np.int32)
    keep = np.arange(5)[None, None, None, :] < lengths[:, None, None, None]
    np.testing.assert_allclose(tn.dot_product_attention(q, k, v, key_value_seq_lengths=lengths),
                               _attention(q, k, v, keep), atol=1e-14)
    np.testing.assert_allclose(tn.dot_product_attention(q[0], k[0], v[0]), _attention(q, k, v)[0],
                               atol=1e-14)
    g = tg.grad(lambda q: tnp.sum(tn.dot_product_attention(q, k, v) ** 2))(q)
    eps = 1e-6
    e = np.zeros_like(q)
    e[1, 2, 3, 0] = eps
    fd = (np.sum(_attention(q + e, k, v) ** 2) - np.sum(_attention(q - e, k, v) ** 2)) / (2 * eps)
    np.testing.assert_allclose(g[1, 2, 3, 0], fd, rtol=1e-6)
    np.testing.assert_allclose(tg.jit(tn.dot_product_attention)(q, k, v), _attention(q, k, v), atol=1e-14)
    with pytest.raises(ValueError, match="must be a multiple of the number of key/value heads"):
        tn.dot_product_attention(q, k[:, :, :1].repeat(3, 2), v[:, :, :1].repeat(3, 2))
