"""vmap as JAX's batching tests exercise it: where the batch axis of a rule's output
lands, staged program shapes, collectives over several named axes, and JAX's error
wording.  Each case checks values against a Python loop or NumPy."""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

RNG = np.random.RandomState(7)


def _loop(f, *args, in_axes):
    """Stack f over the mapped axis, one example at a time (the reference)."""
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    return np.stack([f(*[a if ax is None else np.take(a, i, axis=ax)
                         for a, ax in zip(args, in_axes)]) for i in range(size)])


@pytest.mark.parametrize("xshape,yshape,in_axes", [
    ((4, 3), (3, 5), (None, 1)), ((3, 5), (3,), (1, None)), ((5, 3), (3,), (0, None)),
    ((3,), (5, 3), (None, 0)), ((4, 3), (2, 3, 5), (None, 0)), ((4, 2, 3), (3, 5), (1, None)),
    ((4, 3), (3, 5, 2), (None, 2))])
def test_dot_with_one_batched_operand_is_a_single_contraction(xshape, yshape, in_axes):
    # The batch axis of the one batched operand becomes a free axis of the product:
    # no transpose is staged before it (one after it, for out_axes=0, is JAX's too).
    x, y = RNG.randn(*xshape), RNG.randn(*yshape)
    f = tg.vmap(tnp.dot, in_axes=in_axes)
    np.testing.assert_allclose(f(x, y), _loop(np.dot, x, y, in_axes=in_axes), rtol=1e-13)
    eqns = tg.make_jaxpr(f)(x, y).jaxpr.eqns
    assert [e.primitive.name for e in eqns] in (["dot_general"], ["dot_general", "transpose"])
    np.testing.assert_allclose(tg.jit(f)(x, y), f(x, y), rtol=1e-13)


def test_nested_vmap_of_vdot_is_one_matmul():
    A, B = RNG.randn(4, 3), RNG.randn(3, 2)
    matmat = tg.vmap(tg.vmap(tnp.vdot, in_axes=(0, None)), in_axes=(None, 1), out_axes=1)
    np.testing.assert_allclose(matmat(A, B), A @ B, rtol=1e-13)
    assert len(tg.make_jaxpr(matmat)(A, B).jaxpr.eqns) == 1
    # and its gradient, which transposes the batched contraction
    g = tg.grad(lambda a, b: tnp.sum(tnp.sin(matmat(a, b))), argnums=(0, 1))(A, B)
    c = np.cos(A @ B)
    np.testing.assert_allclose(g[0], c @ B.T, rtol=1e-12)
    np.testing.assert_allclose(g[1], A.T @ c, rtol=1e-12)
