"""First calls that need machine limits of NumPy's own dtypes do not import ml_dtypes (about
0.5 s of CPU): ``random.normal``/``uniform``/``bernoulli`` (``finfo(float64)``), an eager
float-to-int ``astype`` (``iinfo(int32)``).  ``dtypes.finfo``/``iinfo`` give NumPy's limits
for NumPy's dtypes, ml_dtypes' only for bfloat16, the float8s, int4 and their kin."""
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

from tangentia import dtypes

_NUMPY_FLOATS = [np.float16, np.float32, np.float64, np.longdouble]
_NUMPY_INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
_FINFO = ("bits", "eps", "epsneg", "max", "min", "tiny", "smallest_normal", "smallest_subnormal",
          "resolution", "nmant", "nexp", "maxexp", "minexp", "machep", "negep", "precision", "dtype")


@pytest.mark.parametrize("dt", _NUMPY_FLOATS + ["float32", np.dtype("float64")])
def test_finfo_of_numpy_dtypes_is_ml_dtypes_values(dt):
    ours, theirs = dtypes.finfo(dt), ml_dtypes.finfo(dt)     # ml_dtypes.finfo is JAX's
    assert isinstance(ours, np.finfo)
    for a in _FINFO:
        assert getattr(ours, a) == getattr(theirs, a), a


@pytest.mark.parametrize("dt", _NUMPY_INTS + ["int16"])
def test_iinfo_of_numpy_dtypes_is_ml_dtypes_values(dt):
    ours, theirs = dtypes.iinfo(dt), ml_dtypes.iinfo(dt)
    assert (ours.min, ours.max, ours.bits, ours.dtype) == (theirs.min, theirs.max, theirs.bits,
                                                           theirs.dtype)


@pytest.mark.parametrize("dt", ["bfloat16", ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
                                "float8_e5m2"])
def test_finfo_of_ml_dtypes_is_theirs(dt):
    ours, theirs = dtypes.finfo(dt), ml_dtypes.finfo(dt)
    assert (ours.bits, float(ours.eps), float(ours.max), ours.nmant) == \
        (theirs.bits, float(theirs.eps), float(theirs.max), theirs.nmant)


@pytest.mark.parametrize("dt", ["int4", ml_dtypes.int4, ml_dtypes.uint4, "int2"])
def test_iinfo_of_ml_dtypes_is_theirs(dt):
    ours, theirs = dtypes.iinfo(dt), ml_dtypes.iinfo(dt)
    assert (ours.min, ours.max, ours.bits) == (theirs.min, theirs.max, theirs.bits)


def test_limits_of_non_dtypes_raise_as_ml_dtypes():
    for f, g, arg in ((dtypes.finfo, ml_dtypes.finfo, np.int32),
                      (dtypes.iinfo, ml_dtypes.iinfo, np.float32),
                      (dtypes.finfo, ml_dtypes.finfo, "nonsense")):
        with pytest.raises(Exception) as ours:
            f(arg)
        with pytest.raises(Exception) as theirs:
            g(arg)
        assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value))


_FRESH = textwrap.dedent("""
    import sys, json
    import numpy as np
    import tangentia as tg, tangentia.numpy as tnp, tangentia.random as tr
    X = np.linspace(-1.0, 1.0, 32).reshape(8, 4)
    def loss(W, key):
        h = tnp.tanh(X @ W)
        keep = tr.bernoulli(key, 0.75, h.shape)
        return tnp.mean(tnp.where(keep, h / 0.75, 0.0) ** 2) + tnp.sum(tr.normal(key, (4,)) * W[0])
    W = np.arange(16.0).reshape(4, 4) / 16.0
    out = {"grad": tg.jit(tg.grad(loss))(W, tr.PRNGKey(3)).ravel().tolist(),
           "uniform": tr.uniform(tr.PRNGKey(1), (3,), dtype=np.float32).tolist(),
           "astype": tnp.asarray(np.array([1.7, -2.5, 3e10])).astype(np.int32).tolist()}
    out["ml_dtypes"] = "ml_dtypes" in sys.modules
    print(json.dumps(out))
""")


def test_random_and_casts_do_not_import_ml_dtypes_in_a_fresh_process():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    p = subprocess.run([sys.executable, "-c", _FRESH], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    import json
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["ml_dtypes"] is False
    jnp = jax.numpy
    X = np.linspace(-1.0, 1.0, 32).reshape(8, 4)

    def loss(W, key):
        h = jnp.tanh(X @ W)
        keep = jax.random.bernoulli(key, 0.75, h.shape)
        return (jnp.mean(jnp.where(keep, h / 0.75, 0.0) ** 2)
                + jnp.sum(jax.random.normal(key, (4,)) * W[0]))
    W = np.arange(16.0).reshape(4, 4) / 16.0
    np.testing.assert_allclose(out["grad"], np.asarray(jax.grad(loss)(W, jax.random.PRNGKey(3))).ravel(),
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(
        np.float32(out["uniform"]),
        np.asarray(jax.random.uniform(jax.random.PRNGKey(1), (3,), dtype=np.float32)))
    assert out["astype"] == np.asarray(jnp.asarray([1.7, -2.5, 3e10]).astype(np.int32)).tolist()
