"""Passes of the numba backend (``numba_backend/plan.py``) beyond those the golden corpus
pins: an inlined call's results that no one reads are not computed."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import NumbaBackend  # noqa: E402
from tangentia.interpreters.partial_eval import convert_constvars_to_invars  # noqa: E402


def test_unread_results_of_an_inlined_call_are_not_computed() -> None:
    @tg.jit
    def inner(x):
        return tnp.sin(x) * 2.0, tnp.cumsum(tnp.exp(x) * x), x * 3.0

    def f(x):
        a, b, c = inner(x)
        return a + c

    x = np.linspace(-1.0, 1.0, 40)
    jaxpr = convert_constvars_to_invars(tg.make_jaxpr(f)(x).jaxpr)
    assert [len(e.outputs) for e in jaxpr.eqns if e.prim.name == "jit"] == [3]  # (still there)
    fn = NumbaBackend().compile(jaxpr)
    body = fn.source.split("def program")[1]
    assert "exp" not in body and "_k" not in body and "# _k" not in fn.source, body  # (nor cumsum)
    got = fn(x)[0]
    np.testing.assert_array_equal(got, get_backend("numpy").compile(jaxpr)(x)[0])
    np.testing.assert_allclose(got, np.sin(x) * 2.0 + x * 3.0, rtol=1e-15)


def test_compiled_while_the_compiler_is_still_being_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    # The tier's background thread may be importing ``native`` when a call asks whether a
    # program is compiled: the module is in sys.modules but defines nothing yet.  The
    # answer is "not yet" (the NumPy tier runs), not an AttributeError for the user.
    import sys
    import types
    jaxpr = convert_constvars_to_invars(tg.make_jaxpr(lambda x: x * 2.0)(np.ones(3)).jaxpr)
    name = "tangentia.compiler.numba_backend.native"
    monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    assert NumbaBackend().compiled(jaxpr) is None
