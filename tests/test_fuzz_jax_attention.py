"""``nn.dot_product_attention`` against JAX 0.10.2 (x64) (session 21's sweep: batched and
unbatched, grouped-query heads, full and broadcast ``bias`` and ``mask``, an all-False mask,
``is_causal``, ``scale``, ``query_seq_lengths``, ``key_value_seq_lengths``,
``local_window_size``; values eagerly and under jit, and gradients in q, k and v: 4,608
comparisons).  Each test here failed before its fix.

Left alone: JAX computes the logits and the softmax in float32 even for float64 inputs
(``preferred_element_type`` of its einsum), so its numbers differ from ours (float64
throughout) at about 1e-7 relative: the comparisons here allow 1e-5.  JAX rejects int64
sequence lengths ("query_seq_lengths dtype should be int32"); ours accept them (NumPy's
default integer is int64).
"""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.nn as tnn
import tangentia.numpy as tnp

jax = pytest.importorskip("jax", reason="the differential tests compare with JAX")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402


def _close(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(theirs).max()))


@pytest.mark.parametrize("causal,kv_lengths,gqa", [(False, False, False), (True, True, True),
                                                   (False, True, False)])
def test_query_seq_lengths_zero_the_padded_queries(causal, kv_lengths, gqa):
    """A query at or past its sequence's ``query_seq_lengths`` gives 0 (JAX multiplies the
    output by the padding mask); ours gave the mean of the values (its logits all masked, the
    softmax uniform), and gradients flowed into v through those rows."""
    rng = np.random.default_rng(0)
    B, T, S, N, H = 2, 4, 5, 4, 3
    K = 2 if gqa else N
    q = rng.normal(size=(B, T, N, H))
    k, v = rng.normal(size=(B, S, K, H)), rng.normal(size=(B, S, K, H))
    kw = dict(is_causal=causal, query_seq_lengths=np.array([2, 3], np.int32))
    if kv_lengths:
        kw["key_value_seq_lengths"] = np.array([4, 5], np.int32)
    ours = tnn.dot_product_attention(q, k, v, **kw)
    assert np.all(np.asarray(ours)[0, 2:] == 0) and np.all(np.asarray(ours)[1, 3:] == 0)
    want = jax.nn.dot_product_attention(q, k, v, **kw)
    _close(ours, want)
    _close(tg.jit(lambda q, k, v: tnn.dot_product_attention(q, k, v, **kw))(q, k, v), want)
    ct = rng.normal(size=want.shape)
    g = tg.grad(lambda *a: tnp.sum(tnn.dot_product_attention(*a, **kw) * ct), (0, 1, 2))(q, k, v)
    jg = jax.grad(lambda *a: jnp.sum(jax.nn.dot_product_attention(*a, **kw) * ct),
                  (0, 1, 2))(q, k, v)
    for a, b in zip(g, jg):
        _close(a, b)
    # the residual (the logsumexp of the masked logits) is JAX's, padded rows included
    out, lse = tnn.dot_product_attention(q, k, v, return_residual=True, **kw)
    jout, jlse = jax.nn.dot_product_attention(q, k, v, return_residual=True, **kw)
    _close(out, jout)
    _close(lse, jlse)
