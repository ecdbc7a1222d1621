"""Dtypes given by name: ml_dtypes' names ("bfloat16", "float8_e4m3fn", "int4", ...) work as
JAX's in a fresh process, where NumPy knows them only once ml_dtypes is imported (tangentia
imports it lazily: ``dtypes.to_dtype``, and ``_array.public``'s retry of a call that failed on
such a name)."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import dtypes

# Each case runs in its own fresh process (ml_dtypes not imported, checked first); the
# printed value is compared with what JAX's call gives (run here, where ml_dtypes is loaded).
_FRESH = textwrap.dedent("""
    import sys
    import numpy as np
    import tangentia as tg, tangentia.numpy as tnp, tangentia.lax as lax
    import tangentia.random as tr
    assert "ml_dtypes" not in sys.modules, "importing tangentia imported ml_dtypes"
    for case in sys.argv[1:]:
        out = eval(case)
        print(repr((str(getattr(out, "dtype", out)), np.asarray(out, float).tolist()
                    if isinstance(out, np.ndarray) else None)))
""")

_CASES = {
    # a public function's dtype argument (the boundary's retry), then jnp.dtype itself
    "zeros": (["tnp.zeros(2, dtype='bfloat16')", "tnp.dtype('float8_e4m3fn')"],
              [("bfloat16", [0.0, 0.0]), ("float8_e4m3fn", None)]),
    # a traced value's astype under jit (dtypes.to_dtype), then an eager result's astype
    "jit": (["tg.jit(lambda x: x.astype('bfloat16') * 2)(np.array([1.5, 3.0]))",
             "tnp.asarray([1.5, 3.0]).astype('int4')"],
            [("bfloat16", [3.0, 6.0]), ("int4", [1.0, 3.0])]),
}


def test_ml_dtype_names_in_a_fresh_process():
    procs = {k: subprocess.Popen([sys.executable, "-c", _FRESH, *cases], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
             for k, (cases, _) in _CASES.items()}
    for k, p in procs.items():
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, f"{k}: {err[-2000:]}"
        assert [eval(line) for line in out.splitlines()] == _CASES[k][1], k


def test_the_cases_are_what_jax_gives():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    assert str(jnp.zeros(2, dtype="bfloat16").dtype) == "bfloat16"
    assert str(jnp.dtype("float8_e4m3fn")) == "float8_e4m3fn"
    assert np.asarray(jnp.asarray([1.5, 3.0]).astype("int4"), float).tolist() == [1.0, 3.0]
    assert np.asarray(jax.lax.convert_element_type(np.array([3.0, -2.0]), "int4"),
                      float).tolist() == [3.0, -2.0]


def test_to_dtype_is_numpys_for_other_names():
    assert dtypes.to_dtype("f4") == np.float32 and dtypes.to_dtype(None) == np.float64
    with pytest.raises(TypeError, match="data type 'nonsense' not understood"):
        dtypes.to_dtype("nonsense")
    with pytest.raises(TypeError, match="not understood"):
        tnp.zeros(2, dtype="nonsense")
    # nothing to load for names NumPy knows, or once ml_dtypes is imported
    import ml_dtypes  # noqa: F401
    assert not dtypes.load_named(("float32", 1), ("bfloat16",))


def test_jnp_dtype_is_numpys_class_to_isinstance():
    d = tnp.dtype("float32")
    assert type(d) is type(np.dtype("float32")) and d == np.float32
    assert isinstance(np.dtype("int8"), tnp.dtype) and not isinstance(np.float32, tnp.dtype)
    assert issubclass(type(d), tnp.dtype)
    assert tnp.dtype(np.float16, align=True) == np.float16
    assert tnp.promote_types("bfloat16", "float32") == np.float32
    assert tnp.result_type(np.float32, 1.0) == np.float32      # (NumPy's promotion)
    assert tnp.can_cast("int8", "bfloat16") and not tnp.can_cast("float64", "float32")
    assert tg.ShapeDtypeStruct((2,), "int4").dtype == np.dtype("int4")
