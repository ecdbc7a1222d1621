"""The numba backend's blocks (``numba_backend.irblock.lower_run``) run through
equations that compute only ``float0`` values (tangents of integers and booleans:
no data, no code): a ``select`` of float0 zeros between two scalarized runs used to
end the first block, and every value the second one read then crossed from one
block to the next through numba tuples (in ``hessian`` of the pendulum ODE loss,
the adjoint unit's 2,126 equations were 5 blocks, half of its numba IR statements
the plumbing between them).  The structure is pinned (one block) and the numbers
are the NumPy backend's."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia.numpy as tnp  # noqa: E402
import tangentia as tg  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import irblock, native  # noqa: E402
from tangentia.dtypes import float0  # noqa: E402
from tangentia.interpreters.partial_eval import convert_constvars_to_invars  # noqa: E402
from tangentia.primitives.elementwise import select_p  # noqa: E402
from tangentia.interpreters.base_ops import broadcast_to  # noqa: E402


def _compile(f, args, monkeypatch):
    closed = tg.make_jaxpr(f)(*args)
    jaxpr, consts = convert_constvars_to_invars(closed.jaxpr), list(closed.consts)
    monkeypatch.setenv("TANGENTIA_NUMBA_IRBLOCK", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)      # (no fallback to NumPy)
        fn, _ = native._compile_program(jaxpr, native._settings())
    want = get_backend("numpy").compile(jaxpr)(*consts, *args)
    return fn(*consts, *args), want, fn.source, jaxpr


def _check(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype != float0:
            np.testing.assert_allclose(g, w, rtol=1e-13, atol=0)


def _float0_eqns(jaxpr):
    return [e for e in jaxpr.eqns if all(v.aval.dtype == float0 for v in e.outputs)]


def test_a_float0_select_does_not_split_a_block(monkeypatch):
    def f(x, p, z):
        a = tnp.sin(x) * x + 0.5
        zz = select_p.bind(p, z, z)         # (between two runs of scalar operations)
        return tnp.cos(a) * a - x, zz
    x, p, z = np.array([0.3, -0.2, 1.7]), np.array([True, False, True]), np.zeros(3, float0)
    got, want, source, jaxpr = _compile(f, (x, p, z), monkeypatch)
    assert [e.prim.name for e in _float0_eqns(jaxpr)] == ["select"]
    _check(got, want)
    assert source.count("= _blk") == 1, source


def test_float0_selects_and_broadcasts_in_a_batch(monkeypatch):
    # (the shapes of the ODE adjoint's: a (2, 1) predicate, float0 zeros of (1,) and (2, 1))
    def f(x, p, z1, z2):
        a = tnp.exp(-x * x) * 0.25 + x[::-1]
        s = select_p.bind(p, broadcast_to(z1, (2, 1)), z2)
        b = tnp.tanh(a) - a * x
        t = select_p.bind(p, s, z2)
        return b * b + tnp.sum(a), s, t
    x = np.array([[0.4], [-1.1]])
    p = np.array([[True], [False]])
    got, want, source, jaxpr = _compile(f, (x, p, np.zeros(1, float0), np.zeros((2, 1), float0)),
                                        monkeypatch)
    assert len(_float0_eqns(jaxpr)) == 3
    _check(got, want)
    assert source.count("= _blk") == 1, source


def test_a_run_of_float0_equations_alone(monkeypatch):
    # (no scalar operation around them: nothing for a block, the zeros all the same)
    monkeypatch.setattr(irblock, "MIN_OPS", 1)

    def f(p, z):
        return select_p.bind(p, z, z), broadcast_to(z[:1], (2, 3))
    got, want, source, _ = _compile(f, (np.array([True, False, True]), np.zeros(3, float0)),
                                    monkeypatch)
    _check(got, want)
    assert "_blk" not in source
