"""The eager-dispatch point (``core.eager_dispatch``) and the hot-path shortcuts.

Every fast path registered in ``core.EAGER_FAST_PATHS`` must give what the
primitive gives when it is bound through an interpreter (``prim.bind`` under
an ``EvalTrace`` that is not the eager one, so the fast path is skipped) and
what evaluating the staged program gives (``core.eval_jaxpr`` of
``make_jaxpr``): the same values, the same dtypes, ndarray results, and the
same errors.  The staged program's types must be the eager result's types.
The JVP interpreter's inlined per-argument rules must agree with the
primitive's full JVP rule, and the one-equation tangents of ``sub``/``cos``
must give the numbers of the rules they replace.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import core
from tangentia.interpreters import ad
from tangentia.primitives import elementwise as E
from tangentia.primitives import misc as M  # noqa: F401  (registers signbit/copysign)

FAST = list(core.EAGER_FAST_PATHS)
ELEMENTWISE = [(p, f) for p, f in FAST if getattr(f, "eager", None) is not None
               and isinstance(getattr(f.eager, "ufunc", f.eager), np.ufunc)]  # (max: + complex)
REDUCTIONS = [(p, f) for p, f in FAST if (p, f) not in ELEMENTWISE]
DTYPES = [np.float64, np.float32, np.int64, np.bool_]
SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


def test_the_registry_lists_every_fast_path():
    names = {f.__name__ for _, f in FAST}
    # Elementwise public functions of tangentia.numpy, add_any, and the reductions.
    for f in (tnp.add, tnp.subtract, tnp.multiply, tnp.divide, tnp.sin, tnp.tanh, tnp.exp,
              tnp.maximum, tnp.power, tnp.equal, tnp.signbit, tnp.copysign, tnp.sum, tnp.prod,
              tnp.max, tnp.min, ad.add_any):
        f = getattr(f, "__wrapped__", f) if getattr(f, "user_boundary", False) else f
        assert any(g is f for _, g in FAST), f"{f.__name__} does not use core.eager_dispatch"
    assert {"sum", "prod", "max", "min", "add_any", "sin", "mul"} <= names
    assert len(ELEMENTWISE) >= 40 and len(REDUCTIONS) == 4
    for p, f in FAST:
        assert f.primitive is p and isinstance(p, core.Primitive)


def _arrays(draw, n):
    """``n`` arrays of drawn dtypes whose shapes broadcast together."""
    base = draw(st.lists(st.integers(1, 3), min_size=0, max_size=3))
    out = []
    for _ in range(n):
        dtype = draw(st.sampled_from(DTYPES))
        # Drop leading axes and set some axes to 1: NumPy broadcasting.
        k = draw(st.integers(0, len(base)))
        shape = [1 if draw(st.booleans()) else d for d in base[k:]]
        vals = draw(st.lists(st.integers(-3, 3), min_size=int(np.prod(shape, dtype=int)),
                             max_size=int(np.prod(shape, dtype=int))))
        x = np.array(vals, dtype=np.float64).reshape(shape)
        if dtype in (np.float64, np.float32):
            x = x * 0.7 + 0.1
        out.append(x.astype(dtype))
    return out


def _outcome(fn, *args):
    """A result or the type of the error it raised."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(*args)
        except (TypeError, ValueError, ZeroDivisionError, NotImplementedError,
                core.TangentiaTypeError) as e:   # (NotImplementedError: no JVP rule, JAX's)
            return type(e)


def _bound(prim, *args, **params):
    # An EvalTrace that is not core.EVAL_TRACE: binding skips every fast path.
    with core.set_trace(core.EvalTrace(None)):
        return prim.bind(*args, **params)


def _staged(fn, *args):
    closed = tg.make_jaxpr(fn)(*args)
    out = core.eval_jaxpr(closed.jaxpr, closed.consts, *args)[0]
    aval = closed.jaxpr.outvars[0].aval
    return out, aval


def _same(a, b, what):
    if isinstance(a, type) or isinstance(b, type):
        assert isinstance(a, type) and isinstance(b, type) and \
            (issubclass(a, b) or issubclass(b, a)), f"{what}: {a} vs {b}"
        return
    assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray), f"{what}: {type(a)} {type(b)}"
    assert a.dtype == b.dtype and a.shape == b.shape, f"{what}: {a.dtype}{a.shape} {b.dtype}{b.shape}"
    np.testing.assert_array_equal(a, b, err_msg=what)


@pytest.mark.parametrize("prim,fn", ELEMENTWISE, ids=[f.__name__ for _, f in ELEMENTWISE])
@SETTINGS
@given(data=st.data())
def test_elementwise_fast_path_agrees_with_the_bound_primitive(prim, fn, data):
    args = _arrays(data.draw, prim.impl.nin)
    if prim is ad.add_any_p:  # adds two tangents of one type (its precondition)
        args = [args[0], args[0][::-1] if args[0].ndim else args[0]]
    eager = _outcome(fn, *args)
    bound = _outcome(lambda *a: _bound(prim, *a), *args)
    _same(eager, bound, f"{prim.name}{tuple((a.dtype.name, a.shape) for a in args)} eager vs bound")
    staged = _outcome(_staged, fn, *args)
    if isinstance(eager, type):
        assert isinstance(staged, type), f"{prim.name}: eager raised {eager}, staged did not"
        return
    out, aval = staged
    _same(eager, out, f"{prim.name} eager vs staged")
    assert (aval.shape, aval.dtype) == (eager.shape, eager.dtype), \
        f"{prim.name}: staged type {aval.str_short()}, eager result {eager.dtype}{eager.shape}"


_REDUCTION_PRIMS = {f.__name__: p for p, f in REDUCTIONS}


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min"])
@SETTINGS
@given(data=st.data())
def test_reduction_fast_path_agrees_with_the_traced_path(name, data):
    x, = _arrays(data.draw, 1)
    fn = getattr(tnp, name)
    axis = data.draw(st.sampled_from([None] + list(range(-x.ndim, x.ndim))))
    keepdims = data.draw(st.booleans())
    kw = dict(axis=axis, keepdims=keepdims)
    if name in ("sum", "prod"):
        kw["dtype"] = data.draw(st.sampled_from([None, np.float64, np.int64]))
    eager = _outcome(lambda a: fn(a, **kw), x)
    # The same function under a trivial interpreter binds reduce_* primitives.
    with core.set_trace(core.EvalTrace(None)):
        traced = _outcome(lambda a: fn(a, **kw), x)
    _same(eager, traced, f"{name}({x.dtype}{x.shape}, {kw}) eager vs traced")
    if not isinstance(eager, type):
        out, aval = _staged(lambda a: fn(a, **kw), x)
        _same(eager, out, f"{name} eager vs staged")
        assert (aval.shape, aval.dtype) == (eager.shape, eager.dtype)
    # The kernel declines what only the traced path handles.
    prim = _REDUCTION_PRIMS[name]
    assert prim.name == f"reduce_{name}"


def test_reduction_kernels_decline_what_they_do_not_handle():
    x = np.arange(4.0)
    assert tnp.sum([1.0, 2.0]).dtype == np.float64           # a list: the traced path
    np.testing.assert_array_equal(tnp.sum(x, initial=10.0), 16.0)
    np.testing.assert_array_equal(tnp.sum(x, where=x > 1), 5.0)
    np.testing.assert_array_equal(tnp.max(x, initial=7.0), 7.0)
    with pytest.raises(ValueError, match="max: zero-size array"):
        tnp.max(np.zeros((0,)))
    assert isinstance(tnp.sum(x), np.ndarray) and tnp.sum(x).shape == ()


def test_fast_paths_name_the_operation_on_shape_errors():
    # JAX's types: the operation's TypeError for equal ranks, rank promotion's ValueError else
    for f in (tnp.add, tg.jit(tnp.add), lambda a, b: tg.grad(lambda a: tnp.sum(a + b))(a)):
        with pytest.raises(TypeError, match=r"^add got incompatible shapes for broadcasting: "
                                            r"\(3,\), \(4,\)\.$"):
            f(np.ones(3), np.ones(4))
        with pytest.raises(ValueError, match=r"^Incompatible shapes for broadcasting: "
                                             r"shapes=\[\(3,\), \(2, 4\)\] \(operation 'add'\)"):
            f(np.ones(3), np.ones((2, 4)))


def test_eager_results_are_ndarrays_for_python_and_numpy_scalars():
    for out in (tnp.sin(1.0), tnp.add(1, 2), tnp.multiply(np.float32(2), 3.0), ad.add_any(1.0, 2.0),
                tnp.sum(np.ones(3)), tnp.max(np.ones((2, 2)))):
        assert isinstance(out, np.ndarray) and out.ndim == 0
    assert tnp.multiply(np.float32(2), 3.0).dtype == np.float32
    assert core.is_eager()
    with core.set_trace(core.EvalTrace(None)):
        assert not core.is_eager()


# ---------------------------------------------------------------------------
# A JVP rule given None for a zero tangent (``ad.primitive_jvps.takes_none``) vs the
# interpreter, which hands it the tangents as it finds them


JVP_FNS = [(p, f) for p, f in FAST if ad.primitive_jvps.takes_none(p)]


def test_the_rules_taking_none_are_tested():
    assert {"add", "mul", "sin", "pow", "reduce_max"} <= {p.name for p, _ in JVP_FNS}


@pytest.mark.parametrize("prim,fn", JVP_FNS, ids=[p.name for p, _ in JVP_FNS])
@pytest.mark.parametrize("which", ["all", "first", "last"])
def test_jvp_rule_taking_none_agrees_with_the_interpreter(prim, fn, which):
    n = getattr(fn.eager, "nin", 1)
    rng = np.random.default_rng(len(prim.name))
    # Positive values in (0.2, 0.8): inside every function's domain (acosh is shifted).
    xs = [rng.uniform(0.2, 0.8, size=(3,) if i == 0 else (2, 1, 1)[:1 + i % 2] + (3,))
          for i in range(n)]
    if prim.name == "acosh":
        xs = [x + 1.5 for x in xs]
    ts = [rng.standard_normal(np.broadcast_shapes(x.shape)) for x in xs]
    nz = {"all": range(n), "first": [0], "last": [n - 1]}[which]
    tangents = [t if i in nz else ad.Zero(core.tangent_aval(core.get_aval(x)))
                for i, (x, t) in enumerate(zip(xs, ts))]
    reduction = (prim, fn) in REDUCTIONS
    kw, params = ({"axis": 0}, {"axes": (0,)}) if reduction else ({}, {})
    # Inlined: the JVP interpreter (no tracer for zero tangents).
    out, tan = ad.jvp_flat(lambda *a: [fn(*a, **kw)], xs, tangents)
    # The rule, called directly with None for the zero tangents.
    ans, rule_tan = ad.primitive_jvps[prim](xs, [None if type(t) is ad.Zero else t for t in tangents],
                             **params)
    _same(out[0], ans, f"{prim.name} primal")
    if type(rule_tan) is ad.Zero:
        assert type(tan[0]) is ad.Zero
    else:
        _same(np.asarray(tan[0]), np.asarray(rule_tan), f"{prim.name} tangent ({which})")


def test_add_sub_and_cos_tangents_are_one_equation_with_the_same_numbers():
    x, y = np.linspace(0.1, 0.9, 5), np.linspace(-1.0, 2.0, 5)
    tx, ty = np.cos(3 * x), np.sin(2 * y)
    _, lin = tg.linearize(lambda a, b: tnp.cos(a - b), x, y)
    jaxpr = tg.make_jaxpr(lin)(tx, ty).jaxpr
    assert [e.prim.name for e in jaxpr.eqns] == ["sub", "mul"]
    # The rules they replace: tx + neg(ty), and neg(t * sin(x)).
    d = np.add(tx, np.negative(ty))
    np.testing.assert_array_equal(lin(tx, ty), np.negative(d * np.sin(x - y)))
    # Broadcasting and a zero tangent on either side.
    xb = np.ones((2, 1))
    _, t = tg.jvp(lambda a: a - y, (xb,), (np.full((2, 1), 2.0),))
    np.testing.assert_array_equal(t, np.full((2, 5), 2.0))
    _, t = tg.jvp(lambda b: xb - b, (y,), (ty,))
    np.testing.assert_array_equal(t, np.broadcast_to(-ty, (2, 5)))
    # add: tx + ty in one equation, broadcasting and promoting like the primal.
    _, t = tg.jvp(lambda a, b: a + b, (xb.astype(np.float32), y), (np.ones((2, 1), np.float32), ty))
    assert t.dtype == np.float64 and t.shape == (2, 5)
    np.testing.assert_array_equal(t, 1.0 + np.broadcast_to(ty, (2, 5)))
    # Python scalar tangents (tg.jvp accepts them).
    assert tg.jvp(lambda a, b: a + b, (1.0, 2.0), (1.0, 3.0))[1] == 4.0
    assert tg.jvp(lambda a, b: a - b, (1.0, 2.0), (1.0, 3.0))[1] == -2.0
    _, lin = tg.linearize(lambda a, b: a + b, x, y)
    assert [e.prim.name for e in tg.make_jaxpr(lin)(tx, ty).jaxpr.eqns] == ["add_any"]
    g = tg.grad(lambda a, b: tnp.sum(tnp.cos(a - b) * (a - b)), argnums=(0, 1))(x, y)
    want = np.cos(x - y) - (x - y) * np.sin(x - y)
    np.testing.assert_allclose(g[0], want, rtol=1e-14)
    np.testing.assert_allclose(g[1], -want, rtol=1e-14)


def test_elementwise_shape_rule_cache_returns_one_type_per_signature():
    a = core.ShapedArray((3,), np.dtype(np.float32))
    b = core.ShapedArray((2, 1), np.dtype(np.float64))
    r1 = E.mul_p.abstract_eval(a, b)
    r2 = E.mul_p.abstract_eval(core.ShapedArray((3,), np.dtype(np.float32)), b)
    assert r1 is r2 and r1.shape == (2, 3) and r1.dtype == np.float64
    with pytest.raises(TypeError, match="^mul got incompatible shapes"):
        E.mul_p.abstract_eval(a, core.ShapedArray((4,), np.dtype(np.float64)))
    w = core.ShapedArray((), np.dtype(np.float64), True)
    assert E.mul_p.abstract_eval(a, w).dtype == np.float32      # weak scalars take the dtype
    assert E.mul_p.abstract_eval(w, w).weak_type


def test_eager_grad_matches_the_hand_written_gradient():
    # The eager-grad benchmark's workload (sin, scale, add, tanh, exp, sub,
    # square, cos), differentiated through every hot path above.
    def f(x, np_):
        y = x
        for _ in range(3):
            y = np_.cos((np_.exp(np_.tanh(np_.sin(y) * 0.9 + x) * 0.1) - x) ** 2) * 0.5
        return y

    x = np.linspace(-1.0, 1.0, 6)
    g = tg.grad(lambda v: tnp.sum(f(v, tnp)))(x)
    eps = 1e-6
    fd = np.array([(np.sum(f(x + eps * e, np)) - np.sum(f(x - eps * e, np))) / (2 * eps)
                   for e in np.eye(6)])
    np.testing.assert_allclose(g, fd, rtol=1e-7, atol=1e-9)


# ---------------------------------------------------------------------------
# Linearization under eager evaluation: ``ad.LinearizeTrace`` computes known
# values with ``prim.impl`` and the JVP interpreter computes primal outputs
# directly (``eval_known`` / ``eval_primals``).  Under any other parent
# interpreter (here a trivial EvalTrace) both go through the parent: the same
# primal values, the same linear program and the same cotangents.


def _linearized(fn, *args):
    outs, jaxpr, consts, _, _ = ad.linearize_flat(lambda *a: [fn(*a)], list(args))
    out = outs[0]
    program = [(e.prim.name, [(v.aval.shape, v.aval.dtype) for v in e.outputs])
               for e in jaxpr.eqns]
    cts = None
    if out.dtype.kind == "f":
        cts = ad.backward_pass(jaxpr, consts, [np.full(out.shape, 0.5, out.dtype)])
    return out, program, cts


def _agree(fn, args, what):
    eager = _outcome(_linearized, fn, *args)
    with core.set_trace(core.EvalTrace(None)):
        bound = _outcome(_linearized, fn, *args)
    if isinstance(eager, type) or isinstance(bound, type):
        _same(eager, bound, what)
        return
    _same(eager[0], bound[0], f"{what}: primal")
    assert eager[1] == bound[1], f"{what}: linear programs differ"
    if eager[2] is not None:
        for i, (a, b) in enumerate(zip(eager[2], bound[2])):
            assert (a is None) == (b is None), f"{what}: cotangent {i}"
            if a is not None:
                _same(np.asarray(a), np.asarray(b), f"{what}: cotangent {i}")


@pytest.mark.parametrize("prim,fn", ELEMENTWISE, ids=[f.__name__ for _, f in ELEMENTWISE])
@SETTINGS
@given(data=st.data())
def test_eager_linearize_agrees_with_linearize_under_another_interpreter(prim, fn, data):
    args = _arrays(data.draw, prim.impl.nin)
    if prim is ad.add_any_p:
        args = [args[0], args[0][::-1] if args[0].ndim else args[0]]
    _agree(fn, args, f"{prim.name}{tuple((a.dtype.name, a.shape) for a in args)}")


def test_eager_linearize_of_a_chain_agrees_with_linearize_under_another_interpreter():
    x = np.linspace(-1.0, 1.0, 6)

    def f(v):
        y = tnp.cos((tnp.exp(tnp.tanh(tnp.sin(v) * 0.9 + v) * 0.1) - v) ** 2) * 0.5
        return tnp.sum(y * y / (1.5 + v))

    _agree(f, [x], "chain")
    _agree(f, [x.astype(np.float32)], "chain (float32)")
    assert _linearized(f, x.astype(np.float32))[2][0].dtype == np.float32
