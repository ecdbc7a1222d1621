"""What flax nnx needs from tangentia, each checked against JAX: mutable array references
(``new_ref``, ``Ref``, ``freeze``, ``typeof`` of a reference; eager only: under a
transformation they raise), ``jax._src.tree_util._registry``, ``mesh_utils``, the names nnx
imports (``jax.extend.core.Effect``, ``jax.experimental.hijax``, ``cur_qdd``,
``jax._src.checkify``), and ``from flax import nnx`` itself with ``jax`` aliased to
tangentia.  No numba compile."""
import importlib.util

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

jax = pytest.importorskip("jax", reason="JAX is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

from _jax_alias import jax_is_tangentia  # noqa: E402


def _refs_run(lib, np_):
    """The same reads and writes of a reference, and the errors, under ``lib``."""
    r = lib.new_ref(np_.arange(3.0))
    out = [r[...], r[1], r[1:], r.shape, r.ndim, r.size, str(r.dtype), repr(lib.typeof(r)),
           lib.typeof(r).shape, isinstance(r, lib.Ref)]
    r[1] = np.float64(5.0)
    r[...] = r[...] * 2
    out.append(r[...])
    r.addupdate(np.ones(3))
    out.append(lib.freeze(r))
    errors = []
    for bad in (1, np.ones(3, np.float32), np.ones(2)):
        with pytest.raises(ValueError) as e:
            r[...] = bad
        errors.append(str(e.value))
    with pytest.raises(ValueError) as e:
        r[5]
    errors.append(str(e.value))
    ri = lib.new_ref(np.int32(3))
    out += [ri[...], str(ri[...].dtype), repr(lib.typeof(ri))]
    return out, errors


def test_refs_read_and_write_as_jax():
    got, got_err = _refs_run(tg, tnp)
    want, want_err = _refs_run(jax, jnp)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        if isinstance(b, (str, tuple, int, bool)):
            assert a == b
        else:
            np.testing.assert_array_equal(a, b)
    for a, b in zip(got_err, want_err):
        assert a.split(" Transforms")[0] == b.split(" Transforms")[0], (a, b)
    # the value read is a new array: a later write does not change it
    r = tg.new_ref(np.zeros(2))
    v = r[...]
    r[...] = np.ones(2)
    np.testing.assert_array_equal(v, [0.0, 0.0])


def test_refs_under_transformations_raise_naming_them():
    r = tg.new_ref(np.zeros(2))
    for transform in (tg.jit, tg.grad, tg.vmap):
        def f(x):
            r[...] = r[...] + x
            return x.sum() if transform is tg.grad else x
        with pytest.raises(NotImplementedError, match="mutable array references"):
            transform(f)(np.ones(2))
    np.testing.assert_array_equal(r[...], [0.0, 0.0])   # nothing was written
    with pytest.raises(NotImplementedError, match="new_ref"):
        tg.jit(lambda x: tg.new_ref(x)[...])(np.ones(2))


def test_pytree_registry_membership_as_jax():
    import collections
    from jax._src.tree_util import _registry as theirs
    from tangentia._src.tree_util import _registry as ours
    for t in (list, tuple, dict, type(None), collections.OrderedDict,
              collections.defaultdict, int, np.ndarray, collections.namedtuple("P", "a")):
        assert (t in ours) == (t in theirs), t

    class Node:
        pass
    tg.tree_util.register_pytree_node(Node, lambda n: ((), None), lambda a, c: Node())
    assert Node in ours


def test_mesh_utils_as_jax():
    from jax.experimental import mesh_utils as theirs
    from tangentia.experimental import mesh_utils as ours
    for shape in ((1,), (1, 1)):
        assert ours.create_device_mesh(shape).shape == theirs.create_device_mesh(shape).shape
        assert ours.create_device_mesh(shape).ravel()[0] == tg.devices()[0]
    for shape in ((2,), (2, 4)):
        with pytest.raises(ValueError) as e:
            theirs.create_device_mesh(shape)
        with pytest.raises(ValueError, match="^" + str(e.value).replace("(", r"\(")
                           .replace(")", r"\)")):
            ours.create_device_mesh(shape)


def test_names_nnx_imports():
    from jax.experimental import hijax as jax_hijax
    from tangentia.experimental import hijax
    from tangentia.extend.core import Effect
    from tangentia._src.checkify import JaxException, Out, checkify, user_checks  # noqa: F401
    assert issubclass(type("E", (Effect,), {}), Effect)
    names = {n for n in dir(jax_hijax) if not n.startswith("_")}
    assert names - set(dir(hijax)) <= {"TransformedRef"}, names - set(dir(hijax))

    class P(hijax.HiPrimitive):
        pass
    with pytest.raises(NotImplementedError, match="hijax"):
        P("p").bind(1.0)
    with pytest.raises(NotImplementedError, match="hijax"):
        tg.experimental.cur_qdd(1.0)


def test_flax_nnx_imports_on_tangentia():
    if importlib.util.find_spec("flax") is None:
        pytest.skip("flax is not installed (pip install --no-deps flax treescope rich)")
    with jax_is_tangentia("flax", "optax", "chex", "treescope", "orbax"):
        from flax import nnx
        assert nnx.Linear is not None


def test_jit_takes_shardings_given_as_pytrees_of_none_as_jax():
    """flax nnx's jit passes ``out_shardings=(None, [None])`` (every output unspecified)."""
    x = np.arange(3.0)
    for lib in (tg, jax):
        f = lib.jit(lambda x: (x * 2, [x + 1]), in_shardings=(None,),
                    out_shardings=(None, [None]))
        a, (b,) = f(x)
        np.testing.assert_array_equal(a, x * 2)
        np.testing.assert_array_equal(b, x + 1)
    with pytest.raises(NotImplementedError, match="out_shardings"):
        tg.jit(lambda x: x, out_shardings=(None, tg.P("x")))


def test_traced_operators_take_jax_array_operands_as_jax():
    """``x * v`` with a traced ``x`` and a ``v`` defining ``__jax_array__`` (flax nnx's
    ``Variable``: ``x * self.weight``) uses ``v.__jax_array__()``, as JAX's operators do;
    JAX's numpy functions compiled by its ``jit`` (``jnp.sin``) take only pytrees, as
    flax's Variables are (see test_jax_array_arguments), and raise JAX's error for this
    one, as ``tangentia.numpy``'s unary and binary functions do; so do lax's functions."""
    class V:
        def __init__(self, v):
            self.v = v

        def __jax_array__(self):
            return self.v

    x, w = np.arange(1.0, 3.0), np.array([3.0, 5.0])
    for lib in (tg, jax):
        np_ = tnp if lib is tg else jnp
        outs = lib.jit(lambda x: (x * V(w), V(w) - x, x ** V(w), x @ V(w)))(x)
        for got, want in zip(outs, (x * w, w - x, x ** w, x @ w)):
            np.testing.assert_allclose(got, want, rtol=1e-15)
        np.testing.assert_allclose(lib.grad(lambda x: (x * V(w)).sum())(x), w)
        with pytest.raises(ValueError, match="^Triggering __jax_array__"):
            lib.jit(lambda x: lib.lax.sin(V(x)))(x)
        with pytest.raises(ValueError, match="^Triggering __jax_array__"):
            lib.jit(lambda x: np_.sin(V(x)))(x)     # (not a pytree: JAX's jnp.sin raises)


def test_cond_and_switch_pass_through_outputs_as_jaxs():
    """An output every branch returns unchanged from the same operand is that operand (JAX's
    cond forwarding), so under vmap with a batched predicate it stays unbatched (``out_axes``
    None works, as flax nnx's cond of a module with broadcast variables needs); the others
    are computed as before: vmap against a loop, grad against JAX."""
    def f(lib, p, a, b):
        return lib.lax.cond(p, lambda a, b: (a, b + 1, a * 2), lambda a, b: (a, b - 1, a), a, b)

    def s(lib, i, a, b):
        return lib.lax.switch(i, [lambda a, b: (a, b), lambda a, b: (a, b * 3),
                                  lambda a, b: (a, -b)], a, b)

    preds, a, bs = np.array([True, False, True]), np.array([1.0, 2.0]), np.arange(3.0)
    for lib in (tg, jax):
        out = lib.vmap(lambda p, b: f(lib, p, a, b), out_axes=(None, 0, 0))(preds, bs)
        np.testing.assert_array_equal(out[0], a)
        for i, (p, b) in enumerate(zip(preds, bs)):
            want = f(tg, p, a, b)
            np.testing.assert_array_equal(out[1][i], want[1])
            np.testing.assert_array_equal(out[2][i], want[2])
        out = lib.vmap(lambda i, b: s(lib, i, a, b), out_axes=(None, 0))(np.array([0, 1, 2]), bs)
        np.testing.assert_array_equal(out[0], a)
        np.testing.assert_array_equal(out[1], [0.0, 3.0, -2.0])
    jaxpr = str(tg.make_jaxpr(lambda p, a, b: f(tg, p, a, b))(True, a, 1.0))
    assert jaxpr.strip().endswith("in (b, e, f) }"), jaxpr   # a's input, then cond's two
    g = tg.grad(lambda a: f(tg, True, a, 1.0)[0].sum() + f(tg, False, a, 1.0)[2].sum())(a)
    want = jax.grad(lambda a: f(jax, True, a, 1.0)[0].sum() + f(jax, False, a, 1.0)[2].sum())(a)
    np.testing.assert_array_equal(g, want)
    np.testing.assert_array_equal(tg.jit(lambda p, a, b: f(tg, p, a, b)[1])(False, a, 1.0), 0.0)
    # a Python scalar operand passed through stays cond's output (weakly typed, as before)
    assert tg.lax.cond(True, lambda x: x, lambda x: x, 1.0) == 1.0


@pytest.mark.parametrize("out_axes, fn", [
    ((0, {"w": None}), lambda x: (x, {"w": x * 2})), (None, lambda x: x),
    ({"a": [0, None]}, lambda x: {"a": [x, x]})])
def test_vmap_out_axes_none_error_names_the_output_as_jax(out_axes, fn):
    """JAX's message names the batched output by its key path (flax nnx matches
    "at vmap.*'broadcast'.*got axis spec None")."""
    with pytest.raises(ValueError) as want:
        jax.vmap(fn, out_axes=out_axes)(jnp.ones(3))
    with pytest.raises(ValueError) as got:
        tg.vmap(fn, out_axes=out_axes)(np.ones(3))
    assert str(got.value).startswith(str(want.value))


class _Node:
    """A pytree node holding one value (flax nnx's ``Param`` in a ``State``)."""

    def __init__(self, v):
        self.v = v


for _lib in (tg, jax):
    _lib.tree_util.register_pytree_node(_Node, lambda p: ((p.v,), None), lambda _, c: _Node(c[0]))


def test_custom_vjp_bwd_cotangent_may_be_a_prefix_as_jaxs():
    """A bwd rule's cotangent whose structure is a prefix of its argument's: a plain array
    for a one-leaf node, None for zeros of a subtree (flax nnx's custom_vjp returns raw
    cotangents for its Param nodes); JAX's ``_flatten_bwd`` reads it so.  A leaf standing
    for a subtree of more than one leaf still raises JAX's error."""
    def make(lib):
        @lib.custom_vjp
        def f(d):
            return d["a"].v * d["b"].v

        f.defvjp(lambda d: (f(d), d),
                 lambda d, g: ({"a": g * d["b"].v, "b": None, "c": None},))
        return f

    for args in ((2.0, 3.0), (2.0, None)):
        def loss(lib, x):
            b = 3.0 if args[1] is not None else x
            return make(lib)({"a": _Node(x), "b": _Node(b), "c": None})
        g = tg.grad(lambda x: loss(tg, x))(args[0])
        assert g == jax.grad(lambda x: loss(jax, x))(args[0]) == (3.0 if args[1] else 2.0)
        assert tg.jit(tg.grad(lambda x: loss(tg, x)))(args[0]) == g
        np.testing.assert_array_equal(tg.vmap(tg.grad(lambda x: loss(tg, x)))(np.ones(2)),
                                      np.full(2, 3.0 if args[1] else 1.0))

    for lib in (tg, jax):
        @lib.custom_vjp
        def h(d):
            return d["a"].v * d["b"][0]

        h.defvjp(lambda d: (h(d), d), lambda d, g: ({"a": g * 2, "b": _Node(1.0)},))
        with pytest.raises(TypeError, match="^Custom VJP bwd rule must produce an output with "
                                            "the same container"):
            lib.grad(lambda x: h({"a": _Node(x), "b": (3.0, 4.0)}))(2.0)
