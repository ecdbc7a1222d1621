"""What flax (linen) needs from tangentia, each checked against JAX: the partial
evaluation of ``jax.interpreters.partial_eval`` (``PartialVal``,
``trace_to_jaxpr_nounits``: ``lazy_init`` and ``nn.scan``'s broadcast variables),
``jax.extend.core.get_opaque_trace_state``, ``ShapedArray(..., sharding=)``,
``jnp.einsum(..., _dot_general=)``, ``jax.version``, and the names flax imports
(``nn.initializers.Initializer``, ``jax.experimental.layout.Format``,
``jax.extend.source_info_util``, ``jax._src.dtypes.supports_inf``).  Then flax itself,
imported with ``jax`` aliased to tangentia: a linen model with ``nn.scan``, ``lazy_init``
and a gradient, against the same model on JAX.  No numba compile."""
import contextlib
import importlib.util
import sys
import types

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.interpreters import partial_eval as tg_pe

jax = pytest.importorskip("jax", reason="JAX is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
from jax.interpreters import partial_eval as jax_pe  # noqa: E402

from tangentia.extend import linear_util as tg_lu  # noqa: E402
from _jax_alias import jax_is_tangentia  # noqa: E402


@contextlib.contextmanager
def _jax_namespaces_kept():
    """Importing flax on real JAX imports submodules of JAX's packages
    (``jax.experimental.multihost_utils``, ...), which then show as attributes of those
    packages: they are removed again after, so that tests listing JAX's public names
    (test_api_completeness_core) see the same names in whatever order tests run."""
    before = {name: set(vars(mod)) for name, mod in list(sys.modules.items())
              if name.split(".")[0] == "jax" and mod is not None}
    try:
        yield
    finally:
        for name, names in before.items():
            mod = sys.modules.get(name)
            for attr in set(vars(mod)) - names if mod is not None else ():
                if isinstance(getattr(mod, attr), types.ModuleType):
                    delattr(mod, attr)


@pytest.mark.parametrize("under_jit", [False, True])
def test_trace_to_jaxpr_nounits_computes_the_known_outputs_as_jax(under_jit):
    def f(x, y):
        a = np.float64(2.0) * x + 1.0        # known: computed now
        b = tnp.sin(a) * y if lib is tg else jnp.sin(a) * y   # unknown
        return a, b, x.sum()

    x, y = np.arange(3.0), np.ones(3)
    got = {}
    with _jax_namespaces_kept():   # (jax.extend.linear_util imports jax.experimental.shard_map)
        from jax.extend import linear_util as jax_lu
    for lib, pe, lu in ((tg, tg_pe, tg_lu), (jax, jax_pe, jax_lu)):
        avals = jax.core.ShapedArray((3,), np.float64) if lib is jax else \
            tg.core.ShapedArray((3,), np.float64)

        def run(x):
            jaxpr, out_pvals, consts = pe.trace_to_jaxpr_nounits(
                lu.wrap_init(f, debug_info=jax.api_util.debug_info("test", f, (x, x), {}))
                if lib is jax else lu.wrap_init(f),
                [pe.PartialVal.known(x), pe.PartialVal.unknown(avals)])
            return jaxpr, out_pvals, consts

        if under_jit:   # the known input is a tracer of an outer jit: staged there
            box = {}
            lib.jit(lambda x: box.setdefault("r", run(x))[1][0].get_known())(x)
            jaxpr, out_pvals, consts = box["r"]
            assert out_pvals[0].is_known() and not out_pvals[1].is_known()
            continue
        jaxpr, out_pvals, consts = run(x)
        known = [pv is None for pv, _ in out_pvals]
        assert known == [True, False, True]
        unknown_out = (jax.core.eval_jaxpr if lib is jax else tg.core.eval_jaxpr)(
            jaxpr, consts, y)
        got[lib] = ([np.asarray(out_pvals[0].get_known()), np.asarray(out_pvals[2].get_known())],
                    np.asarray(unknown_out[0]), tuple(out_pvals[1].get_aval().shape))
    if not under_jit:
        (tk, tu, ts), (jk, ju, js) = got[tg], got[jax]
        for a, b in zip(tk, jk):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(tu, ju, rtol=1e-15)
        assert ts == js == (3,)


def test_opaque_trace_state_compares_as_jax():
    from jax.extend import core as jcore
    from tangentia.extend import core as tcore
    for lib, core in ((tg, tcore), (jax, jcore)):
        outside = core.get_opaque_trace_state(convention="flax")
        assert outside == core.get_opaque_trace_state(convention="flax")
        seen = []

        def f(x):
            s = core.get_opaque_trace_state(convention="flax")
            seen.append((s == outside, s == core.get_opaque_trace_state(convention="flax")))
            return x

        lib.jit(f)(1.0)
        lib.grad(f)(1.0)
        assert seen == [(False, True), (False, True)], (lib, seen)


def test_names_flax_reads():
    import tangentia._src.core as src_core
    import tangentia._src.dtypes as src_dtypes
    import tangentia.experimental.layout as layout
    import ml_dtypes
    from jax._src import dtypes as jax_dtypes
    from tangentia.extend import source_info_util
    assert tg.core.ShapedArray((2,), np.float32, sharding=None) == tg.core.ShapedArray(
        (2,), np.float32)
    assert src_core.ShapedArray is tg.core.ShapedArray
    assert tg.version.__version_info__ == jax.version.__version_info__ == tg.__version_info__
    assert callable(tg.nn.initializers.Initializer.__call__)
    f = layout.Format(layout.Layout((1, 0)), None)
    assert f.layout.major_to_minor == (1, 0) and f.sharding is None
    for dt in (np.float32, np.int32, np.complex64, ml_dtypes.float8_e4m3fn,
               ml_dtypes.float8_e5m2, ml_dtypes.bfloat16):
        assert src_dtypes.supports_inf(dt) == jax_dtypes.supports_inf(dt), dt
    source_info_util.register_exclusion("/no/such/library/")
    assert "/no/such/library/" in tg._src.traceback_util._exclude_paths


def test_einsum_takes_lax_dot_general_as_jax():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    got = tnp.einsum("ij,jk->ik", a, b, _dot_general=tg.lax.dot_general)
    want = jnp.einsum("ij,jk->ik", a, b, _dot_general=jax.lax.dot_general)
    np.testing.assert_array_equal(got, want)
    with pytest.raises(NotImplementedError, match="_dot_general"):
        tnp.einsum("ij,jk->ik", a, b, _dot_general=lambda *a, **k: None)


def _flax_model(jax_, nn):
    """A linen model using ``nn.scan`` (broadcast params: partial evaluation)."""
    jnp_ = jax_.numpy

    class Model(nn.Module):
        @nn.compact
        def __call__(self, x):
            cell = nn.scan(nn.GRUCell, variable_broadcast="params",
                           split_rngs={"params": False}, in_axes=1, out_axes=1)(4)
            c, ys = cell(jnp_.zeros((x.shape[0], 4), x.dtype), x)
            return nn.Dense(1)(ys).sum(axis=(1, 2)) + c.sum(axis=1)

    return Model()


_X = np.linspace(-1.0, 1.0, 2 * 3 * 5).reshape(2, 3, 5).astype(np.float32)


def test_flax_linen_model_on_tangentia_matches_jax():
    """Parameters made by flax on tangentia (init and lazy_init agree), then the model's
    output and the gradient of a loss, on tangentia and on JAX from those parameters
    (JAX's own init compiles for seconds; its initializers are tested elsewhere)."""
    if importlib.util.find_spec("flax") is None:
        pytest.skip("flax is not installed (pip install --no-deps flax treescope rich)")
    with jax_is_tangentia("flax", "optax", "chex", "treescope", "orbax"):
        import jax as tg_as_jax
        import flax.linen as tg_nn
        assert tg_as_jax is tg
        m = _flax_model(tg, tg_nn)
        key = tg.random.PRNGKey(0)
        params = m.init(key, _X)
        lazy = m.lazy_init(key, tg.ShapeDtypeStruct(_X.shape, _X.dtype))
        got = tg.value_and_grad(lambda p: tnp.sum(m.apply(p, _X) ** 2))(params)
    leaves = jax.tree_util.tree_leaves
    assert [a.dtype for a in leaves(params)] == [np.float32] * len(leaves(params))
    for a, b in zip(leaves(params), leaves(lazy), strict=True):
        np.testing.assert_array_equal(a, b)
    with _jax_namespaces_kept():
        import flax.linen as jax_nn
        m = _flax_model(jax, jax_nn)
        want = jax.jit(jax.value_and_grad(lambda p: jnp.sum(m.apply(p, _X) ** 2)))(
            jax.tree_util.tree_map(jnp.asarray, params))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    assert jax.tree_util.tree_structure(got[1]) == jax.tree_util.tree_structure(want[1])
    for a, b in zip(leaves(got[1]), leaves(want[1]), strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
