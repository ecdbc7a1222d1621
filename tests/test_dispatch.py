"""One dispatch path for call-like primitives.

* A custom-rule call binds through the current trace's
  ``process_custom_jvp_call`` / ``process_custom_vjp_call``: a new
  interpreter that subclasses ``EvalTrace`` evaluates custom functions with
  no registration, and one that implements neither says which is missing.
* Inside the library a zero tangent is ``core.Zero``; user rules see
  ``SymbolicZero`` (``symbolic_zeros=True``) or zeros, never ``Zero``.
* The shared rules of call-like primitives (``interpreters.call_rules``)
  propagate every parameter (``jit``'s ``backend``), name transformed
  programs, and give integer outputs zero (float0) tangents.
"""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import core, lax
from tangentia.custom_derivatives import SymbolicZero
from tangentia.interpreters import partial_eval as pe
from tangentia.primitives.call import jit_p


class CountingEvalTrace(core.EvalTrace):
    """Evaluation that counts the primitives it runs."""

    __slots__ = ("names",)

    def __init__(self):
        super().__init__(None)
        self.names = []

    def process_primitive(self, prim, args, params):
        self.names.append(prim.name)
        return core.EvalTrace.process_primitive(self, prim, args, params)


@tg.custom_jvp
def _cube(x):
    return tnp.multiply(tnp.multiply(x, x), x)  # primitives even on ndarrays


_cube.defjvp(lambda p, t: (_cube(p[0]), 3.0 * p[0] ** 2 * t[0]))


@tg.custom_vjp
def _clip_grad(x):
    return tnp.sin(x)


_clip_grad.defvjp(lambda x: (tnp.sin(x), tnp.cos(x)), lambda c, g: (tnp.clip(c * g, -0.5, 0.5),))


@pytest.mark.parametrize("f, want", [(_cube, lambda x: x ** 3), (_clip_grad, np.sin)])
def test_eval_trace_subclass_evaluates_custom_calls_without_registration(f, want):
    x = np.array([0.5, -1.5, 2.0])
    trace = CountingEvalTrace()
    with core.set_trace(trace):
        out = f(x)
    np.testing.assert_allclose(out, want(x), rtol=1e-14)
    assert isinstance(out, np.ndarray)
    # the function ran on the new interpreter, primitive by primitive
    assert trace.names and set(trace.names) <= {"mul", "sin", "integer_pow", "pow"}, trace.names


def test_trace_without_custom_call_support_names_what_is_missing():
    class Bare(core.Trace):
        __slots__ = ()

        def process_primitive(self, prim, args, params):
            raise AssertionError("custom calls must not reach process_primitive")

    with core.set_trace(Bare(core.EVAL_TRACE)):
        with pytest.raises(NotImplementedError, match="custom_jvp_call under Bare"):
            _cube(np.ones(2))
        with pytest.raises(NotImplementedError, match="custom_vjp_call under Bare"):
            _clip_grad(np.ones(2))


def test_grad_under_counting_trace_matches_eager():
    x = np.array([0.3, 1.2])
    g = tg.grad(lambda v: tnp.sum(_cube(v) + _clip_grad(v)))
    want = g(x)
    trace = CountingEvalTrace()
    with core.set_trace(trace):
        got = g(x)
    np.testing.assert_allclose(got, want, rtol=1e-14)
    np.testing.assert_allclose(want, 3 * x ** 2 + np.clip(np.cos(x), -0.5, 0.5), rtol=1e-14)


@pytest.mark.parametrize("how", ["eager", "jit", "vmap"])
def test_user_rules_see_symbolic_zero_or_zeros_never_internal_zero(how):
    seen = []

    def make(symbolic):
        @tg.custom_jvp
        def f(x, y):
            return x * y

        def rule(primals, tangents):
            seen.append(tuple(type(t) for t in tangents))
            x, y = primals
            tx, ty = tangents
            out = 0.0
            if type(tx) is not SymbolicZero:
                out = out + tx * y
            if type(ty) is not SymbolicZero:
                out = out + x * ty
            return f(x, y), out
        f.defjvp(rule, symbolic_zeros=symbolic)
        return f

    x, y = np.array([1.0, 2.0]), np.array([3.0, 5.0])
    for symbolic in (True, False):
        f = make(symbolic)
        g = lambda a: tg.jvp(lambda v: f(v, y), (a,), (tnp.ones_like(a),))[1]  # noqa: E731
        if how == "jit":
            g = tg.jit(g)
        if how == "vmap":
            got = tg.vmap(g)(np.stack([x, 2.0 * x]))
            np.testing.assert_allclose(got, np.stack([y, y]), rtol=1e-14)
        else:
            np.testing.assert_allclose(g(x), y, rtol=1e-14)
        kinds = {k for pair in seen for k in pair}
        assert core.Zero not in kinds, kinds
        assert (SymbolicZero in kinds) == symbolic, (symbolic, kinds)
        seen.clear()


def test_jit_rules_propagate_backend_and_name_programs():
    f = tg.jit(lambda x: tnp.sin(x) * 2.0, backend="numpy")
    x = np.array([0.1, 0.7])
    for transform, what in [(lambda h: (lambda v: tg.jvp(h, (v,), (v,))[1]), "jvp"),
                            (lambda h: tg.vmap(h), "vmap"),
                            (lambda h: tg.grad(lambda v: tnp.sum(h(v))), "transpose")]:
        closed = tg.make_jaxpr(transform(f))(x)
        eqns = [e for e in _all_eqns(closed.jaxpr) if e.prim is jit_p]
        assert eqns, what
        assert all(e.params["backend"] == "numpy" for e in eqns), what
        assert any(e.params["name"].startswith(f"{what}(") for e in eqns), \
            (what, [e.params["name"] for e in eqns])
    np.testing.assert_allclose(tg.grad(lambda v: tnp.sum(f(v)))(x), 2 * np.cos(x), rtol=1e-14)


def _all_eqns(jaxpr):
    for e in jaxpr.eqns:
        yield e
        for p in e.params.values():
            if isinstance(p, core.Jaxpr):
                yield from _all_eqns(p)


@pytest.mark.parametrize("wrap", ["jit", "checkpoint", "cond"])
def test_integer_outputs_of_call_like_primitives_get_zero_tangents(wrap):
    def body(x):
        return tnp.sin(x), tnp.argmax(x)

    if wrap == "jit":
        f = tg.jit(body)
    elif wrap == "checkpoint":
        f = tg.checkpoint(body)
    else:
        f = lambda x: lax.cond(x[0] > 0, body, body, x)  # noqa: E731
    x = np.array([0.2, 0.9, 0.4])
    (s, i), (ts, ti) = tg.jvp(f, (x,), (np.ones(3),))
    np.testing.assert_allclose(s, np.sin(x), rtol=1e-14)
    np.testing.assert_allclose(ts, np.cos(x), rtol=1e-14)
    assert int(i) == 1
    assert ti.dtype == tg.dtypes.float0 and ti.shape == ()
    np.testing.assert_allclose(tg.grad(lambda v: tnp.sum(f(v)[0]))(x), np.cos(x), rtol=1e-14)


def test_partial_eval_rules_ask_the_trace_what_is_known():
    builder = pe.JaxprBuilder("t")
    trace = pe.JaxprTrace(core.EVAL_TRACE, builder, forward_known=True)
    t = trace.new_arg(core.ShapedArray((2,), np.dtype("float64")))
    other = pe.JaxprTrace(core.EVAL_TRACE, pe.JaxprBuilder("u")).new_arg(t.aval)
    assert not trace.is_known(t)
    assert trace.is_known(np.ones(2)) and trace.is_known(1.0) and trace.is_known(other)
    trace.alive = False
