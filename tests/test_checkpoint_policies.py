"""checkpoint(f, policy=...): each policy of tangentia.checkpoint_policies
saves what it promises (counted and sized with ad_checkpoint.saved_residuals),
and derivatives are unchanged (against the un-checkpointed function, eagerly,
under jit, vmap and for second order)."""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.ad_checkpoint import (checkpoint_name, checkpoint_policies as cp,
                                     print_saved_residuals, saved_residuals)

RNG = np.random.default_rng(0)
W1, W2 = RNG.normal(size=(5, 6)), RNG.normal(size=(6, 3))
X = RNG.normal(size=(7, 5))


def mlp(x):
    h = checkpoint_name(tnp.sin(x @ W1), "h")      # (7, 6), named
    z = h @ W2                                     # (7, 3), a dot
    return tnp.sum(tnp.tanh(z) ** 2)


def _computed(f, x):
    """(shape, description) of the residuals that are computed (not arguments/constants)."""
    return [(a.shape, d) for a, d in saved_residuals(f, x)
            if not d.startswith(("from the argument", "from a constant"))]


def test_policies_save_what_they_promise():
    # Without checkpoint: the backward pass keeps intermediates (cos, tanh, ...).
    assert len(_computed(mlp, X)) >= 2
    # checkpoint's default and nothing_saveable: nothing but the inputs.
    assert _computed(tg.checkpoint(mlp), X) == []
    assert _computed(tg.checkpoint(mlp, policy=cp.nothing_saveable), X) == []
    # dots_saveable: exactly the two matrix products.
    dots = _computed(tg.checkpoint(mlp, policy=cp.dots_saveable), X)
    assert sorted(s for s, _ in dots) == [(7, 3), (7, 6)]
    assert all("dot_general" in d for _, d in dots)
    # save_only_these_names("h"): exactly the named value.
    named = _computed(tg.checkpoint(mlp, policy=cp.save_only_these_names("h")), X)
    assert [(s, d.split(" from ")[0]) for s, d in named] == [((7, 6), "named 'h'")]
    assert _computed(tg.checkpoint(mlp, policy=cp.save_only_these_names("other")), X) == []
    assert _computed(tg.checkpoint(mlp, policy=cp.save_any_names_but_these("h")), X) == []
    both = _computed(tg.checkpoint(mlp, policy=cp.save_from_both_policies(
        cp.dots_saveable, cp.save_only_these_names("h"))), X)
    # h is not needed once the dots are saved (the backward pass reads x @ W1, not sin of it)
    assert sorted(s for s, _ in both) == [(7, 3), (7, 6)]
    # everything_saveable: no recomputation at all (at least the dots and more)
    assert len(_computed(tg.checkpoint(mlp, policy=cp.everything_saveable), X)) >= 2


def test_batched_dots_policy():
    def f(a, b):
        return tnp.sum(tnp.sin(tnp.einsum("bij,bjk->bik", a, b)) + tnp.sin(a[0] @ b[0]))
    a, b = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 4, 3))
    no_batch = [s.shape for s, d in saved_residuals(tg.checkpoint(
        f, policy=cp.dots_with_no_batch_dims_saveable), a, b) if "dot_general" in d]
    assert no_batch == [(3, 3)]
    np.testing.assert_allclose(tg.grad(tg.checkpoint(f, policy=cp.dots_with_no_batch_dims_saveable))(a, b),
                               tg.grad(f)(a, b), rtol=1e-13)


@pytest.mark.parametrize("policy", [None, cp.nothing_saveable, cp.dots_saveable, cp.everything_saveable,
                                    cp.save_only_these_names("h"), cp.dots_with_no_batch_dims_saveable])
def test_derivatives_unchanged(policy):
    f = tg.checkpoint(mlp, policy=policy)
    want = tg.grad(mlp)(X)
    np.testing.assert_allclose(tg.grad(f)(X), want, rtol=1e-13)
    np.testing.assert_allclose(tg.jit(tg.grad(f))(X), want, rtol=1e-13)
    per_row = tg.vmap(tg.grad(lambda x: f(x[None])))(X)
    np.testing.assert_allclose(per_row, np.stack([tg.grad(lambda x: mlp(x[None]))(r) for r in X]),
                               rtol=1e-13)
    v = RNG.normal(size=X.shape)
    hvp = tg.jvp(tg.grad(f), (X,), (v,))[1]
    np.testing.assert_allclose(hvp, tg.jvp(tg.grad(mlp), (X,), (v,))[1], rtol=1e-12)


def test_checkpoint_name_is_the_identity_everywhere():
    x = np.arange(3.0)
    np.testing.assert_array_equal(checkpoint_name(x, "a"), x)
    assert tg.grad(lambda x: tnp.sum(checkpoint_name(x, "a") ** 2))(x).tolist() == [0.0, 2.0, 4.0]
    np.testing.assert_array_equal(tg.vmap(lambda r: checkpoint_name(r, "a"))(X), X)
    assert "name[name='a']" in str(tg.make_jaxpr(lambda x: checkpoint_name(x, "a"))(x)).replace('"', "'")


def test_errors_and_report(capsys):
    # offloading to host memory, on a CPU (all memory is host memory), is saving
    assert _computed(tg.checkpoint(mlp, policy=cp.offload_dot_with_no_batch_dims(
        "device", "pinned_host")), X) == _computed(tg.checkpoint(
            mlp, policy=cp.dots_with_no_batch_dims_saveable), X)
    with pytest.raises(TypeError, match="checkpoint: argument 'policy' must be None or a callable"):
        tg.checkpoint(mlp, policy="dots")
    print_saved_residuals(tg.checkpoint(mlp, policy=cp.save_only_these_names("h")), X)
    lines = capsys.readouterr().out.splitlines()
    assert f"f64[7,6] named 'h' from {__file__}:{mlp.__code__.co_firstlineno + 1}:8 (mlp)" in lines
    assert "f64[7,5] from the argument x" in lines
