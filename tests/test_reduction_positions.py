"""Reductions take JAX's (and NumPy's) arguments in their positions: ``out`` before
``keepdims``, so ``tnp.sum(a, 0, None, None, True)`` keeps the axis, as ``jnp.sum`` does,
where it once read ``True`` as ``initial`` and returned a plausible wrong sum. Checked
against JAX eagerly, under ``jit``, and through a traced array's methods; ``out`` raises
JAX's NotImplementedError; ``histogram`` takes ``weights`` before ``density`` (JAX's
order, not NumPy's)."""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

jax = pytest.importorskip("jax", reason="compared with JAX's values")
jnp = pytest.importorskip("jax.numpy", reason="compared with JAX's values")
jax.config.update("jax_enable_x64", True)

pytestmark = pytest.mark.timeout(120)

A = np.arange(1.0, 13.0).reshape(3, 4)

WITH_DTYPE = ["sum", "prod", "mean", "var", "std", "nansum", "nanprod", "nanmean", "nanvar",
              "nanstd"]
NO_DTYPE = ["max", "min", "amax", "amin", "all", "any", "argmax", "argmin", "ptp", "nanmax",
            "nanmin", "nanargmax", "nanargmin"]
METHODS = {"sum", "prod", "mean", "var", "std", "max", "min", "all", "any", "argmax", "argmin",
           "ptp"}


def _cases():
    for name in WITH_DTYPE:     # var and std: ddof (1) between out and keepdims
        yield name, (0, None, None, 1, True) if "var" in name or "std" in name else (
            0, None, None, True)
    for name in NO_DTYPE:
        yield name, (1, None, True)


@pytest.mark.parametrize("name,args", list(_cases()), ids=lambda v: str(v))
def test_keepdims_after_out(name, args):
    want = np.asarray(getattr(jnp, name)(A, *args))
    assert want.ndim == 2                       # the axis is kept: keepdims was read
    got = getattr(tnp, name)(A, *args)
    np.testing.assert_allclose(got, want, rtol=1e-14)
    assert got.shape == want.shape
    staged = tg.jit(lambda a: getattr(tnp, name)(a, *args))(A)
    np.testing.assert_allclose(staged, want, rtol=1e-14)
    assert staged.shape == want.shape
    if name in METHODS:
        method = tg.jit(lambda a: getattr(a, name)(*args))(A)
        np.testing.assert_allclose(method, want, rtol=1e-14)
        assert method.shape == want.shape


@pytest.mark.parametrize("name", WITH_DTYPE + NO_DTYPE + ["cumsum", "cumprod"])
def test_out_raises_jax_error(name):
    with pytest.raises(NotImplementedError) as jerr:
        getattr(jnp, name)(A, 0, out=np.empty(4))
    for call in (lambda: getattr(tnp, name)(A, 0, out=np.empty(4)),
                 lambda: tg.jit(lambda a: getattr(tnp, name)(a, 0, out=np.empty(4)))(A)):
        with pytest.raises(NotImplementedError) as err:
            call()
        assert str(err.value).startswith(str(jerr.value).rstrip("."))


def test_promote_integers():
    x = np.array([100, 100, 7], np.int8)
    for kw in ({}, {"promote_integers": False}):
        want = jnp.sum(x, **kw)
        for got in (tnp.sum(x, **kw), tg.jit(lambda v: tnp.sum(v, **kw))(x)):
            assert got.dtype == want.dtype and int(got) == int(want)


def test_histogram_weights_before_density():
    x = np.arange(6.0)
    w = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    want, _ = jnp.histogram(x, 3, None, w)
    got, _ = tnp.histogram(x, 3, None, w)
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(got, [3.0, 7.0, 11.0])     # weighted, not a density


def test_var_std_methods_take_ddof_or_correction_as_jax():
    """``x.var``/``x.std`` of an array, eager and traced: ``correction`` is ``ddof``'s other
    name, and giving both is JAX's ValueError (the eager method took ``correction`` alone)."""
    x = np.array([1.0, 2.0, 4.0])
    jx = jnp.asarray(x)
    for name in ("var", "std"):
        a = tnp.asarray(x)
        np.testing.assert_allclose(getattr(a, name)(correction=1), getattr(jx, name)(correction=1))
        np.testing.assert_allclose(getattr(a, name)(ddof=1), getattr(jx, name)(ddof=1))
        with pytest.raises(ValueError) as jerr:
            getattr(jx, name)(ddof=1, correction=1)
        for call in (lambda: getattr(tnp.asarray(x), name)(ddof=1, correction=1),
                     lambda: tg.jit(lambda v: getattr(v, name)(ddof=1, correction=1))(x)):
            with pytest.raises(ValueError) as err:
                call()
            assert str(err.value) == str(jerr.value)
