"""What equinox (and lineax, optimistix, diffrax, built on it) needs from JAX's
extension API, each checked on a small snippet of what the library does, against
JAX: a primitive of its own made with ``jax.extend.core.Primitive`` (``def_impl``,
``def_abstract_eval``, the rules in ``ad.primitive_jvps``/``primitive_transposes``,
``batching.axis_primitive_batchers``, ``mlir.register_lowering(lower_fun(...))``),
evaluated, staged, differentiated, transposed and batched; and the names it reads
at import (``jax.stages``, ``jax.__version_info__``, ``jax._src.traceback_util``,
``ShapeDtypeStruct(..., sharding=)``).  No numba compile (the NumPy jit backend)."""
from types import SimpleNamespace

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import extend as tg_extend
from tangentia.interpreters import ad as tg_ad, batching as tg_batching, mlir as tg_mlir

jax = pytest.importorskip("jax", reason="JAX is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
from jax import extend as jax_extend  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.interpreters import ad as jax_ad, batching as jax_batching, mlir as jax_mlir  # noqa: E402

TG = SimpleNamespace(lib=tg, np=tnp, core=tg_extend.core, ad=tg_ad, batching=tg_batching,
                     mlir=tg_mlir, ShapedArray=tg.core.ShapedArray)
JX = SimpleNamespace(lib=jax, np=jnp, core=jax_extend.core, ad=jax_ad, batching=jax_batching,
                     mlir=jax_mlir, ShapedArray=jax.core.ShapedArray)


def _cube_primitive(L, calls):
    """``x ** 3`` as a primitive of the user's, as equinox defines its own (the
    batching rule in the axis-size form of ``axis_primitive_batchers``), the JVP rule
    calling a second, linear primitive (``3 x**2 * t``) with a transpose rule."""
    cube_p = L.core.Primitive("cube")
    scale_p = L.core.Primitive("cube_tangent")

    @cube_p.def_impl
    def _impl(x):
        calls.append("impl")
        return L.np.asarray(x) ** 3

    cube_p.def_abstract_eval(lambda x: L.ShapedArray(x.shape, x.dtype))
    L.mlir.register_lowering(cube_p, L.mlir.lower_fun(lambda x: x ** 3, multiple_results=False))
    scale_p.def_impl(lambda x, t: 3 * x ** 2 * t)
    scale_p.def_abstract_eval(lambda x, t: L.ShapedArray(t.shape, t.dtype))
    L.mlir.register_lowering(scale_p, L.mlir.lower_fun(lambda x, t: 3 * x ** 2 * t,
                                                       multiple_results=False))

    def jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return cube_p.bind(x), scale_p.bind(x, L.ad.instantiate_zeros(t))

    def transpose(ct, x, t):
        assert L.ad.is_undefined_primal(t) and not L.ad.is_undefined_primal(x)
        return None, 3 * x ** 2 * ct

    def batch(axis_size, axis_name, trace, args, dims):
        calls.append(("batch", axis_size))
        (x,), (d,) = args, dims
        return cube_p.bind(x), d

    L.ad.primitive_jvps[cube_p] = jvp
    L.ad.primitive_transposes[scale_p] = transpose
    L.batching.axis_primitive_batchers[cube_p] = batch
    return cube_p


@pytest.mark.parametrize("under_jit", [False, True])
def test_a_primitive_of_the_users_runs_under_every_transformation_as_in_jax(under_jit):
    results = {}
    for name, L in (("tg", TG), ("jax", JX)):
        calls = []
        cube_p = _cube_primitive(L, calls)
        f = cube_p.bind
        wrap = L.lib.jit if under_jit else (lambda g: g)
        x = L.np.asarray([1.0, 2.0, -0.5])
        results[name] = [
            np.asarray(wrap(f)(x)),
            np.asarray(wrap(L.lib.grad(lambda x: f(x).sum()))(x)),
            np.asarray(wrap(lambda x: L.lib.jvp(f, (x,), (L.np.ones(3),))[1])(x)),
            np.asarray(wrap(L.lib.vmap(f))(L.np.arange(6.0).reshape(2, 3))),
            np.asarray(wrap(L.lib.vmap(f, in_axes=1))(L.np.arange(6.0).reshape(2, 3))),
            np.asarray(L.lib.jacrev(L.lib.vmap(f))(x)),
        ]
        assert ("batch", 2) in calls and ("batch", 3) in calls
        if not under_jit:
            assert "impl" in calls      # def_impl's function evaluates the primitive
        assert L.lib.make_jaxpr(f)(x).eqns[0].primitive.name == "cube" if name == "jax" else \
            L.lib.make_jaxpr(f)(x).eqns[0].prim.name == "cube"
    for got, want in zip(results["tg"], results["jax"]):
        np.testing.assert_allclose(got, want, rtol=1e-15)


def test_multiple_results_effectful_abstract_eval_and_lowering_only_impl():
    for L in (TG, JX):
        pair_p = L.core.Primitive("pair")
        pair_p.multiple_results = True
        pair_p.def_effectful_abstract_eval(
            lambda x: ([L.ShapedArray(x.shape, x.dtype)] * 2, set()))
        # no def_impl: the function of the lowering made by lower_fun evaluates it
        L.mlir.register_lowering(pair_p, L.mlir.lower_fun(lambda x: [x + 1, x * 2],
                                                          multiple_results=True))
        if L is TG:   # (JAX has no eager impl from a lowering; it runs it under jit)
            a, b = pair_p.bind(L.np.asarray([1.0, 2.0]))
            np.testing.assert_array_equal(a, [2.0, 3.0])
            np.testing.assert_array_equal(b, [2.0, 4.0])
            assert type(a) is np.ndarray   # evaluated values stay exact ndarrays
        a, b = L.lib.jit(lambda x: pair_p.bind(x))(L.np.asarray([1.0, 2.0]))
        np.testing.assert_array_equal(b, [2.0, 4.0])


def test_aval_helpers_and_jaxpr_as_fun():
    c, j = tg_extend.core, jax_extend.core
    a, ja = tg.core.ShapedArray((2, 3), np.float32), jax.core.ShapedArray((2, 3), np.float32)
    for axis in (0, 1, None):
        for got, want in ((c.mapped_aval(3 if axis else 2, axis, a),
                           j.mapped_aval(3 if axis else 2, axis, ja)),
                          (c.unmapped_aval(5, axis, a), j.unmapped_aval(5, axis, ja))):
            assert (got.shape, got.dtype) == (want.shape, want.dtype)
    closed = tg.make_jaxpr(lambda x: (x * 2, x + 1))(1.0)
    assert [float(v) for v in c.jaxpr_as_fun(closed)(3.0)] == [6.0, 4.0]
    assert [float(v) for v in j.jaxpr_as_fun(jax.make_jaxpr(lambda x: (x * 2, x + 1))(1.0))(3.0)] \
        == [6.0, 4.0]


def test_names_libraries_read_at_import():
    assert tg.__version_info__ == jax.__version_info__[:3] == (0, 10, 2)
    assert tg.stages.Lowered is type(tg.jit(lambda x: x).lower(1.0))
    assert callable(tg.jit(lambda x: x + 1).lower(1.0).compile())
    s = tg.ShapeDtypeStruct((2,), np.float32, sharding=tg.numpy.ones(2).sharding)
    assert (s.shape, s.dtype, s.sharding) == ((2,), np.float32, None)
    from tangentia._src import dispatch, traceback_util
    import sys
    assert dispatch.wait_for_tokens() is None
    fn = lambda: 1  # noqa: E731
    assert traceback_util.api_boundary(fn) is fn
    assert traceback_util.include_frame(sys._getframe())
    traceback_util.register_exclusion(__file__)
    try:
        assert not traceback_util.include_frame(sys._getframe())
    finally:
        traceback_util._exclusions.remove(__file__)


def test_impl_gets_arrays_with_jax_methods():
    """An impl rule gets arrays with ``.at`` (lineax's and diffrax's rules update them)."""
    for L in (TG, JX):
        p = L.core.Primitive("set_first")
        p.def_impl(lambda x: x.at[0].set(-1.0))
        p.def_abstract_eval(lambda x: x)
        np.testing.assert_array_equal(p.bind(L.np.ones(3)), [-1.0, 1.0, 1.0])
        L.mlir.register_lowering(p, L.mlir.lower_fun(lambda x: x.at[0].set(-1.0), False))
        np.testing.assert_array_equal(L.lib.jit(p.bind)(L.np.ones(3)), [-1.0, 1.0, 1.0])


def test_core_names_lineax_and_equinox_read():
    from tangentia._src.ad_util import stop_gradient_p
    assert tg.make_jaxpr(tg.lax.stop_gradient)(1.0).eqns[0].prim is stop_gradient_p
    for L, core in ((tg, tg.core), (jax, jax.core)):
        a = core.ShapedArray((2,), np.int32)
        assert isinstance(a, core.AbstractValue)
        t = a.to_tangent_aval()
        assert (t.shape, t.dtype) == ((2,), L.dtypes.float0)
        assert core.ShapedArray((), np.float32).to_tangent_aval().dtype == np.float32
        # a ShapeDtypeStruct returned by the function is its own shape (lineax)
        s = L.eval_shape(lambda x: (L.ShapeDtypeStruct((2, 3), np.float32), x), 1.0)
        assert (s[0].shape, s[0].dtype) == ((2, 3), np.float32)
        # trace.main identifies the transformation: equinox's filter_jvp keeps the outputs
        # that are tracers of the current trace
        ext = tg_extend.core if L is tg else jax_extend.core

        def f(x, y):
            main = ext.find_top_trace((x,)).main
            return [type(v).__name__ for v in (x * 2, y) if getattr(v, "_trace", None) is not None
                    and v._trace.main is main]

        names: list = []
        L.jvp(lambda x: names.extend(f(x, 3.0)) or x, (1.0,), (1.0,))
        assert names == ["JVPTracer"]


@pytest.mark.parametrize("how", ["jvp", "linearize"])
def test_custom_jvp_tangents_keep_none_subtrees_of_the_primals(how):
    """equinox's checkpointed while_loop (diffrax's default adjoint) returns the tangents
    it was given, with ``None`` where the primal output has ``None``: the same structure."""
    out = {}
    for L in (tg, jax):
        seen = []

        @L.custom_jvp
        def f(x):
            return x

        def f_jvp(primals, tangents):
            (p,), (t,) = primals, tangents
            seen.append(str(L.tree_util.tree_structure(t)))
            return p, t

        f.defjvp(f_jvp, symbolic_zeros=True)

        def g(x, y):
            o = f((None, x, (None, y)))
            return o[1] * 2 + o[2][1]

        if how == "jvp":
            r = L.jvp(g, (1.0, 2.0), (1.0, 0.5))
        else:
            r = L.linearize(g, 1.0, 2.0)[1](1.0, 0.5), 0.0
        out[L.__name__] = ([float(v) for v in r], seen)
    assert out["tangentia"] == out["jax"]
    assert out["jax"][1] == ["PyTreeDef((None, *, (None, *)))"]


def test_zero_from_primal_maps_over_a_pytree():
    """optimistix's implicit-function JVP builds its residual's zeros from a tuple."""
    got = tg.custom_derivatives.zero_from_primal((tnp.ones(2), 1, None, {"a": 2.0}))
    want = jax.custom_derivatives.zero_from_primal((jnp.ones(2), 1, None, {"a": 2.0}))
    assert tg.tree_util.tree_structure(got) == tg.tree_util.tree_structure(want)
    for g, w in zip(tg.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        assert (np.shape(g), np.asarray(g).dtype) == (np.shape(w), np.asarray(w).dtype)
        if np.asarray(w).dtype.kind == "f":
            np.testing.assert_array_equal(g, w)
    sym = tg.custom_derivatives.zero_from_primal((tnp.ones(2), 3), symbolic_zeros=True)
    assert [type(s).__name__ for s in sym] == ["SymbolicZero"] * 2
    assert sym[1].aval.dtype == tg.dtypes.float0


class _Omega:
    """Like equinox's ``ω``: an operand arrays do not know, with reflected operators."""

    def __init__(self, v=None):
        self.v = v

    def __radd__(self, other):
        return ("radd", other)

    def __rpow__(self, other):
        return _Omega(other)

    def __gt__(self, other):
        return "Omega.gt"


def test_tracer_operators_defer_to_unrecognized_operands():
    """``x ** ω`` under jit/grad/vmap reaches ω's ``__rpow__`` (JAX's tracers return
    NotImplemented); lineax, optimistix and diffrax write their solvers so."""
    for L, np_ in ((tg, tnp), (jax, jnp)):
        seen = []

        def f(x):
            w = x ** _Omega()
            seen.append((type(w) is _Omega, (x + _Omega())[0], x < _Omega()))
            return x * 2

        L.jit(f)(1.0)
        L.grad(f)(1.0)
        L.vmap(f)(np_.ones(2))
        assert seen == [(True, "radd", "Omega.gt")] * 3
        with pytest.raises(TypeError, match="unsupported operand type"):
            L.jit(lambda x: x + "a")(1.0)
        np.testing.assert_array_equal(L.vmap(lambda x: x + 1.0)(np_.ones(2)), [2.0, 2.0])


def test_eager_power_and_division_defer_to_unrecognized_operands():
    """``x ** ω`` on an eager result (lineax's CG run eagerly, diffrax's backsolve adjoint
    in an eager grad) reaches ω's ``__rpow__``, as on JAX arrays: NumPy's operator built an
    object array of ω's results."""
    for np_ in (tnp, jnp):
        x = np_.ones(3)
        w = _Omega()
        assert type(x ** w) is _Omega and x ** w is not None
        with pytest.raises(TypeError, match="unsupported operand type"):
            x / "a"
        np.testing.assert_array_equal(x ** 2, [1.0, 1.0, 1.0])
        np.testing.assert_array_equal(2.0 ** x, [2.0, 2.0, 2.0])
        np.testing.assert_array_equal(x / np.full(3, 2.0), [0.5, 0.5, 0.5])


def test_qr_raw_mode_gives_lapack_factors_as_jax():
    """lineax's QR solver (and optimistix's Levenberg-Marquardt through it) reads
    ``jnp.linalg.qr(a, mode="raw")``: the reflectors transposed, and their factors."""
    a = np.arange(24.0).reshape(2, 4, 3) + np.eye(4, 3)
    for run in (lambda L, n: n.linalg.qr(a, mode="raw"),
                lambda L, n: L.jit(lambda x: n.linalg.qr(x, mode="raw"))(a),
                lambda L, n: L.vmap(lambda x: n.linalg.qr(x, mode="raw"))(a)):
        got, want = run(tg, tnp), run(jax, jnp)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    h, taus = tnp.linalg.qr(a[0].astype(np.float32), mode="raw")
    assert (h.shape, taus.shape, h.dtype) == ((3, 4), (3,), np.float32)
    with pytest.raises(ValueError, match="unrecognized mode 'full_raw'"):
        tnp.linalg.qr(a, mode="full_raw")


def test_vmap_in_axes_prefix_may_be_a_registered_container():
    """equinox's filter_vmap passes in_axes as a Module (a registered class) holding None
    where the value's fields are None or unmapped."""
    out = []
    for L, np_ in ((tg, tnp), (jax, jnp)):
        class P:
            def __init__(self, a, b):
                self.a, self.b = a, b

        L.tree_util.register_pytree_node(P, lambda p: ((p.a, p.b), "aux"),
                                         lambda aux, ch: P(*ch))

        def f(p, x):
            return x * 2 + (0 if p.b is None else p.b)

        xs = np_.arange(3.0)
        out.append([np.asarray(L.vmap(f, in_axes=(P(None, None), 0))(P(None, None), xs)),
                    np.asarray(L.vmap(f, in_axes=(P(None, 0), 0))(P(None, xs), xs)),
                    np.asarray(L.vmap(f, in_axes=(P(None, None), 0))(P(1.0, 5.0), xs))])
        with pytest.raises(ValueError, match="in_axes specification must be a tree prefix"):
            L.vmap(f, in_axes=(P(None, None), 0))((None, None), xs)
    for g, w in zip(*out):
        np.testing.assert_array_equal(g, w)


def test_linear_transpose_takes_any_shape_dtype_example():
    """equinox's noinline transposes with ``jax.linear_transpose(f, *avals)``: only the
    primals' shapes and dtypes are used, so abstract values are accepted, as in JAX."""
    for L in (tg, jax):
        f = L.linear_transpose(lambda x: 2 * x[::-1], L.core.ShapedArray((3,), np.float64))
        np.testing.assert_array_equal(f(np.array([1.0, 2.0, 3.0]))[0], [6.0, 4.0, 2.0])
        with pytest.raises(TypeError, match="is not a valid JAX type"):
            L.linear_transpose(lambda x: x, "a")


def test_names_numpyro_reads():
    """numpyro imports ``jax.api_util.flatten_fun``, ``jax.extend.linear_util.wrap_init``,
    ``jax.extend.core.primitives`` and ``jax._src.core.trace_state_clean`` (its provenance
    tracking walks a program's equations by JAX's names)."""
    from jax import api_util as japi
    from jax.extend import linear_util as jlu
    from jax.extend.core import primitives as jprims
    from tangentia import api_util
    from tangentia._src.core import trace_state_clean
    from tangentia.extend import linear_util
    from tangentia.extend.core import primitives
    outs = []
    for L, au, lu in ((tg, api_util, linear_util), (jax, japi, jlu)):
        def f(x, y=1.0):
            return {"s": x * y, "d": x - y}
        args, in_tree = L.tree_util.tree_flatten(((2.0,), {"y": 3.0}))
        flat, out_tree = au.flatten_fun(lu.wrap_init(f, debug_info=au.debug_info("t", f, (), {})),
                                        in_tree)
        jaxpr = L.make_jaxpr(flat.call_wrapped)(*args)
        prims = [e.primitive.name for e in jaxpr.jaxpr.eqns]   # (one call: JAX's store)
        outs.append((prims, str(out_tree())))
    assert outs[0] == outs[1]
    assert primitives.mul_p.name == jprims.mul_p.name == "mul"
    assert primitives.jit_p is tg.make_jaxpr(tg.jit(lambda x: x))(1.0).eqns[0].primitive
    assert {"call_p", "closed_call_p", "cond_p", "while_p", "scan_p"} <= set(dir(primitives))
    seen = []
    tg.jit(lambda x: seen.append(trace_state_clean()) or x)(1.0)
    assert trace_state_clean() and seen == [False]


def test_experimental_sparse_bcoo_is_importable_and_refuses_to_build():
    """numpyro imports ``jax.experimental.sparse.BCOO`` at module level; building one
    (there are no sparse arrays here) raises, naming the dense alternative."""
    from tangentia.experimental.sparse import BCOO
    for make in (lambda: BCOO((np.ones(1), np.zeros((1, 1), int)), shape=(2,)),
                 lambda: BCOO.fromdense(np.eye(2)), lambda: BCOO.from_scipy_sparse(None)):
        with pytest.raises(NotImplementedError, match="no sparse arrays; use a dense array"):
            make()


def test_private_flatten_util_is_the_public_one():
    """blackjax imports ``ravel_pytree`` from ``jax._src.flatten_util``."""
    from tangentia._src.flatten_util import ravel_pytree
    flat, unravel = ravel_pytree({"a": tnp.ones(2), "b": 3.0})
    np.testing.assert_array_equal(flat, [1.0, 1.0, 3.0])
    assert float(unravel(flat * 2)["b"]) == 6.0


def test_rules_get_arrays_with_jax_methods():
    """The JVP, transpose and batching rules of a user's primitive get arrays with ``.at``
    and traced indexing, as its impl does, also when the value is an intermediate of an
    eager transformation or a program's constant (equinox's checkpointed ``scan`` under
    ``grad`` indexes such a buffer with a traced step)."""
    for L in (TG, JX):
        p = L.core.Primitive("first_doubled")
        p.def_impl(lambda x: x.at[0].multiply(2.0))
        p.def_abstract_eval(lambda x: x)

        def jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            return p.bind(x), t.at[0].multiply(2.0) + 0 * x[L.np.argmax(x)]

        L.ad.primitive_jvps[p] = jvp
        L.ad.primitive_transposes[p] = lambda ct, x: (ct.at[0].multiply(2.0),)
        L.batching.primitive_batchers[p] = lambda args, dims: (
            args[0].at[:, 0].multiply(2.0) if dims[0] == 0 else p.bind(args[0]), dims[0])
        x = L.np.arange(1.0, 4.0)
        g = L.lib.grad(lambda x: L.np.sum(L.np.sin(p.bind(L.np.sin(x)))))(x)
        want = np.cos(np.sin(x) * [2, 1, 1]) * [2, 1, 1] * np.cos(x)
        np.testing.assert_allclose(g, want, rtol=1e-12)
        jv = L.lib.jvp(lambda x: p.bind(L.np.sin(x)), (x,), (L.np.ones(3),))[1]
        np.testing.assert_allclose(jv, np.cos(x) * [2, 1, 1], rtol=1e-12)
        b = L.lib.vmap(lambda r: p.bind(L.np.sin(r)))(L.np.ones((2, 3)))
        np.testing.assert_allclose(b, np.sin(np.ones((2, 3))) * [2, 1, 1], rtol=1e-12)
        c = L.lib.linear_transpose(lambda t: p.bind(t), x)(L.np.ones(3))[0]
        np.testing.assert_array_equal(c, [2.0, 1.0, 1.0])


@pytest.mark.parametrize("how", ["grad", "jvp", "jit", "vmap"])
def test_array_of_a_tracer_is_a_new_array_as_jax(how):
    """``jnp.array(x)``, ``jnp.asarray(x, copy=True)`` and ``jnp.copy(x)`` of a traced
    ``x`` are new values, as JAX's; under an eager ``grad`` from a Python float the new
    value is an array (equinox's ``"checkpointed"`` ``while_loop`` reads ``.shape`` of
    its carry made by ``jnp.array`` in its custom_vjp's ``fwd``)."""
    for L in (TG, JX):
        seen = []

        def f(x):
            ys = (L.np.array(x), L.np.asarray(x, copy=True), L.np.copy(x))
            seen.append([y is x for y in ys] + [np.shape(y) for y in ys])
            return ys[0] * 2.0 + ys[1] * ys[2]

        if how == "grad":
            out = L.lib.grad(f)(1.5)
        elif how == "jvp":
            out = L.lib.jvp(f, (1.5,), (1.0,))
        elif how == "jit":
            out = L.lib.jit(f)(1.5)
        else:
            out = L.lib.vmap(f)(L.np.array([1.5, 2.0]))
        assert seen == [[False, False, False, (), (), ()]], (L.lib, seen)
        want = {"grad": 5.0, "jvp": (5.25, 5.0), "jit": 5.25, "vmap": [5.25, 8.0]}[how]
        np.testing.assert_allclose(np.asarray(out), want)
