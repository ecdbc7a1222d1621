"""Keyword arguments of ``tangentia.numpy``/``lax``/``scipy`` against JAX 0.10.2's (session 20's
sweep): the parameters of each public function compared by name, position and default with
``inspect.signature`` of JAX's, and an AST scan for parameters a function takes but never reads
where JAX's reads them (a keyword accepted and ignored is a silently different number).  Each
test here failed before its fix.

Left alone: ``lax.approx_max_k/approx_min_k(aggregate_to_topk=False)`` return k results (JAX's
CPU fallback returns the whole sorted operand; its documentation allows any number >= k);
``linalg.svd/pinv/matrix_rank(hermitian=True)`` of a matrix that is not Hermitian give the
matrix's own values (JAX and NumPy read one triangle through eigh: the caller's promise broken
either way); ``precision=``/``out_sharding=``/``accuracy=`` are read by nobody here (float64
products, one device); ``scipy.linalg.solve(assume_a='pos')``'s derivative in ``a`` is that
of the triangle it reads (finite differences agree), where JAX's differentiates the solve of
the whole matrix (``custom_linear_solve``: both triangles, which finite differences of its own
value along a non-symmetric direction do not give); along symmetric directions they agree.
"""
from __future__ import annotations

import numpy as np
import pytest

import tangentia.numpy as tnp
from _fuzz_jax_common import assert_same, run

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)

X = np.array([3.0, 1.0, 4.0, 1.0, 5.0])


@pytest.mark.parametrize("name", ["sort", "argsort"])
@pytest.mark.parametrize("kw", [{"kind": "stable"}, {"kind": "heapsort"}, {"order": "a"}])
def test_sort_kind_and_order_raise_as_jax(name: str, kw: dict) -> None:
    """``kind=`` was accepted and ignored (JAX raises its TypeError pointing at ``stable=``);
    ``order=`` raised NotImplementedError where JAX's is a TypeError."""
    theirs = run(getattr(jax.numpy, name), X, **kw)
    ours = run(getattr(tnp, name), X, **kw)
    assert isinstance(theirs, TypeError)
    assert_same(f"{name}{kw}", ours, theirs)
    assert str(ours).startswith(str(theirs).split(". ")[0])
    # the documented keywords still sort
    assert_same(name, getattr(tnp, name)(X, stable=True, descending=True),
                getattr(jax.numpy, name)(X, stable=True, descending=True))


def _spd() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    a = rng.normal(size=(3, 3))
    return a, a @ a.T + 3.0 * np.eye(3), rng.normal(size=(3, 2))


@pytest.mark.parametrize("assume_a", ["gen", "sym", "her", "pos", "bad"])
def test_scipy_solve_takes_jaxs_positions_and_assume_a(assume_a: str) -> None:
    """JAX's ``solve(a, b, lower, overwrite_a, overwrite_b, debug, check_finite, assume_a)``:
    ours had SciPy's positions without ``debug`` (JAX's seventh positional, ``check_finite``,
    was read as ``assume_a`` and its eighth as SciPy's ``transposed``: NotImplementedError),
    did not take 'sym'/'her' (NotImplementedError; JAX solves the whole matrix) and raised
    NotImplementedError where JAX's ValueError names the valid values."""
    import tangentia.scipy.linalg as tsl
    a, s, b = _spd()
    for m in (a, s):
        theirs = run(jax.scipy.linalg.solve, m, b, False, False, False, False, True, assume_a)
        ours = run(tsl.solve, m, b, False, False, False, False, True, assume_a)
        assert_same(f"solve {assume_a}", ours, theirs, rtol=1e-12)
        assert_same(f"solve {assume_a} kw", run(tsl.solve, m, b[:, 0], assume_a=assume_a),
                    run(jax.scipy.linalg.solve, m, b[:, 0], assume_a=assume_a), rtol=1e-12)
    if assume_a == "bad":
        assert str(ours).startswith("Expected assume_a to be one of ['gen', 'sym', 'her', 'pos']")
