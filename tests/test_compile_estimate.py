"""The numba backend's compile estimate (tiering's rent-or-buy and the progress line):
0.5 s, plus 1.2 ms per scalarized equation, plus 0.1 s per equation on arrays of more
than ``codegen.SMALL`` elements, counting the equations of carried programs (the
figures: numba_backend/__init__.py)."""
import numpy as np
import pytest

import tangentia as tg
import tangentia.lax as lax
import tangentia.numpy as tnp
from tangentia.compiler import backend as B
from tangentia.compiler import numba_backend as NB


def _estimate(f, *args):
    return B.get_backend("numba").compile_estimate(tg.make_jaxpr(f)(*args).jaxpr)


def test_the_scalarized_bound_is_the_code_generators():
    pytest.importorskip("numba")
    from tangentia.compiler.numba_backend import codegen
    assert NB._SCALARIZED == codegen.SMALL


def test_scalarized_and_array_equations_are_counted_apart():
    def chain(x):
        for _ in range(10):
            x = tnp.sin(x) * 2.0
        return x
    small = np.ones(NB._SCALARIZED)          # scalarized: at the bound
    large = np.ones(NB._SCALARIZED + 1)      # one element more: array code
    jaxpr = tg.make_jaxpr(chain)(small).jaxpr
    assert NB.equation_kinds(jaxpr) == (len(jaxpr.eqns), 0) == (20, 0)
    assert NB.equation_kinds(tg.make_jaxpr(chain)(large).jaxpr) == (0, 20)
    assert _estimate(chain, small) == pytest.approx(0.5 + 20 * 0.0012)
    assert _estimate(chain, large) == pytest.approx(0.5 + 20 * 0.1)
    # a scalar reduction of a large array: one equation of each kind
    assert NB.equation_kinds(tg.make_jaxpr(lambda x: tnp.sum(x * 2.0))(large).jaxpr) == (1, 1)


def test_carried_programs_are_counted():
    def f(x):
        return lax.fori_loop(0, 3, lambda i, c: tnp.cos(c) + c, x)
    jaxpr = tg.make_jaxpr(f)(np.ones(3)).jaxpr
    small, large = NB.equation_kinds(jaxpr)
    assert large == 0 and small == B.program_size(jaxpr) > len(jaxpr.eqns)
    # an estimate near the measured compile of a jit(grad) chain of 5,998 equations (7.85 s)
    assert 0.5 + 5998 * NB.SECONDS_PER_EQUATION == pytest.approx(7.85, rel=0.1)
