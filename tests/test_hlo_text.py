"""``jit(f).lower(x).compiler_ir("hlo").as_hlo_text()`` (tangentia/api/hlo_text.py): the
staged program in HLO's text layout, compared with JAX's (x64) HLO text where the two
must agree: which programs print the same (optax's ``abs_sq`` test), how many
``multiply`` an integer power lowers to, the module's signature line."""
import re

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

jax = pytest.importorskip("jax", reason="the tests compare with JAX (x64)")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


def _normalized(text):
    # optax's numerics_test normalization: the ENTRY computation, without the module line
    # and the root's name
    text = re.search(r"ENTRY.*", text, re.DOTALL).group()
    text = re.sub("ENTRY.*?{", "ENTRY XXXX", text)
    text = re.sub("HloModule.*?\n", "", text)
    return re.sub("ROOT.*?=", "ROOT result.2 =", text)


def _hlo(jit, f, x):
    return jit(f).lower(x).compiler_ir(dialect="hlo").as_hlo_text()


def _abs_sq(np_mod):
    return lambda x: (x.conj() * x).real


@pytest.mark.parametrize("x", [3, 3.0, np.array([4, 5.2]), 1j, 3.0 + 1j,
                               np.array([4 + 1j, 5.2 + 1j]), np.arange(6.0).reshape(2, 3)])
def test_same_programs_as_jax(x):
    """Two of these functions print the same text here exactly when they do in JAX (real
    ``x``: all four are one multiply; complex: ``abs_sq`` is conj, multiply, real).
    (JAX lowers ``jnp.square`` of a complex value with its own formula, not as ``x * x``:
    for complex ``x`` only the pairs without it are compared.)"""
    ours = [lambda x: x ** 2, lambda x: x * x, tnp.square, _abs_sq(tnp)]
    theirs = [lambda x: x ** 2, lambda x: x * x, jnp.square, _abs_sq(jnp)]
    a = [_normalized(_hlo(tg.jit, f, x)) for f in ours]
    b = [_normalized(_hlo(jax.jit, f, x)) for f in theirs]
    pairs = [(i, j) for i in range(4) for j in range(4)]
    if np.iscomplexobj(x):
        pairs = [(i, j) for i, j in pairs if 2 not in (i, j)]
        assert all(a[i] != a[3] for i in range(3))   # (optax's assertNotEqual)
    for i, j in pairs:
        assert (a[i] == a[j]) == (b[i] == b[j]), (i, j, a[i], a[j])


@pytest.mark.parametrize("y", [-4, -3, -1, 1, 2, 3, 5, 8, 9, 13])
def test_integer_power_multiplies_as_jax(y):
    """``x ** y`` lowers to JAX's chain of multiplications (repeated squaring)."""
    x = np.array([1.5, 2.0])
    ours = _hlo(tg.jit, lambda x: x ** y, x)
    theirs = _hlo(jax.jit, lambda x: x ** y, x)
    assert ours.count(" multiply(") == theirs.count(" multiply(")
    assert (" divide(" in ours) == (" divide(" in theirs) == (y < 0)


def test_module_line_and_outputs():
    f = lambda x, s: (tnp.sin(x) * s + 2.0, x.sum(0))   # noqa: E731
    g = lambda x, s: (jnp.sin(x) * s + 2.0, x.sum(0))   # noqa: E731
    args = (np.ones((2, 3)), 3.0)
    ours = tg.jit(f).lower(*args).compiler_ir("hlo").as_hlo_text()
    theirs = jax.jit(g).lower(*args).compiler_ir("hlo").as_hlo_text()
    assert ours.splitlines()[0] == theirs.splitlines()[0]
    assert ours.count(" parameter(") == 2
    root = [ln for ln in ours.splitlines() if ln.lstrip().startswith("ROOT")]
    assert len(root) == 1 and " tuple(" in root[0]
    assert str(tg.jit(f).lower(*args).compiler_ir("hlo")) == ours


def test_identity_and_constants():
    ours = tg.jit(lambda x: x).lower(np.ones(2)).compiler_ir("hlo").as_hlo_text()
    assert "ROOT copy" in ours and "parameter(0)" in ours
    c = np.array([1.0, 2.0])
    text = tg.jit(lambda x: x + c).lower(np.ones(2)).compiler_ir("hlo").as_hlo_text()
    assert "constant({1, 2})" in text and "add(" in text


def test_default_dialect_is_the_program():
    lowered = tg.jit(lambda x: x * 2.0).lower(1.0)
    assert isinstance(lowered.compiler_ir(), tg.core.ClosedJaxpr)
    assert float(lowered.compile()(4.0)) == 8.0
