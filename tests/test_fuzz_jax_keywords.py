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
products, one device).
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
