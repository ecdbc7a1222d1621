"""What libraries written for JAX (optax, chex, ...) need from tangentia at import and in
use: the names they read (typing, sharding, config), ``vectorize`` with gufunc
signatures, JAX's behaviour of ``cond``/loops under ``disable_jit`` (function
evaluations counted), ``== None``, and methods of eager results taking traced arguments.
"""
from collections import Counter

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax
from tangentia._array import ArrayImpl
from _jax_alias import jax_is_tangentia

jax = pytest.importorskip("jax", reason="JAX is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402


# ---------------------------------------------------------------------------
# lax.cond's operand=None, and how often control flow calls user functions

def test_cond_operand_none_is_passed_to_the_branch():
    got = lax.cond(True, lambda x: x is None, lambda x: False, operand=None)
    want = jax.lax.cond(True, lambda x: x is None, lambda x: False, operand=None)
    assert bool(got) is bool(want) is True
    # a pytree operand containing None, positionally
    assert bool(lax.cond(False, lambda x: False, lambda x: x[1] is None, (1.0, None)))
    assert float(lax.cond(True, lambda x: x + 1, lambda x: x - 1, operand=1.0)) == 2.0
    with pytest.raises(TypeError, match="if 'operand' keyword is passed then no positional"):
        lax.cond(True, lambda x: x, lambda x: x, 1.0, operand=2.0)
    # no operand at all: the branches take no argument
    assert float(lax.cond(True, lambda: tnp.ones(()), lambda: tnp.zeros(()))) == 1.0


def _count_calls(lib, disable):
    """How often each user function of cond/switch/while/fori/scan/map is called, in ``lib``."""
    lx, np_ = (jax.lax, jnp) if lib is jax else (lax, tnp)
    c = Counter()

    def mk(name, f):
        def g(*a):
            c[name] += 1
            return f(*a)
        return g

    out = {}
    with lib.disable_jit(disable):
        lx.cond(True, mk("t", lambda x: x + 1), mk("f", lambda x: x - 1), 1.0)
        lx.cond(np_.array(False), mk("t", lambda x: x + 1), mk("f", lambda x: x - 1), 1.0)
        out["cond"], _ = dict(c), c.clear()
        lx.switch(1, [mk("b0", lambda x: x), mk("b1", lambda x: 2 * x),
                      mk("b2", lambda x: 3 * x)], 1.0)
        out["switch"], _ = dict(c), c.clear()
        r = lx.while_loop(mk("c", lambda v: v < 10), mk("b", lambda v: v * 2), 1)
        assert int(r) == 16
        out["while"], _ = dict(c), c.clear()
        assert float(lx.fori_loop(0, 5, mk("b", lambda i, v: v + i), 0.0)) == 10.0
        lx.fori_loop(np_.array(0), np_.array(5), mk("b", lambda i, v: v + i), 0.0)
        out["fori"], _ = dict(c), c.clear()
        carry, ys = lx.scan(mk("s", lambda c_, x: (c_ + x, c_ * 2)), 0.0, np_.arange(4.0))
        np.testing.assert_allclose(np.asarray(ys), [0.0, 0.0, 2.0, 6.0])
        carry, ys = lx.scan(mk("s", lambda c_, x: (c_ + x, c_ * 2)), 0.0, np_.arange(4.0),
                            reverse=True)
        np.testing.assert_allclose(np.asarray(ys), [12.0, 10.0, 6.0, 0.0])
        out["scan"], _ = dict(c), c.clear()
        np.testing.assert_allclose(np.asarray(lx.map(mk("m", lambda x: x * 2), np_.arange(4.0))),
                                   [0.0, 2.0, 4.0, 6.0])
        out["map"], _ = dict(c), c.clear()
    return out


@pytest.mark.parametrize("disable", [False, True])
def test_control_flow_calls_user_functions_as_often_as_jax(disable):
    assert _count_calls(tg, disable) == _count_calls(jax, disable)


def test_control_flow_under_disable_jit_follows_jax():
    with tg.disable_jit():
        assert lax.cond(True, lambda: 1, lambda: 2) == 1   # the branch's own value
        assert lax.switch(7, [lambda: 1, lambda: 2]) == 2   # clamped
        with pytest.raises(ValueError, match="zero-length scan is not supported in "
                                             "disable_jit"):
            lax.scan(lambda c, x: (c, x), 0.0, None, length=0)
        c, ys = lax.scan(lambda c, x: (c + 1, None), 0.0, None, length=3)
        assert float(c) == 3.0 and ys is None
        # a decision known only when the program runs (vmap): the staged loop
        f = tg.vmap(lambda x: lax.while_loop(lambda v: v < 10, lambda v: v * 2, x))
        np.testing.assert_array_equal(f(tnp.array([1, 3, 20])), [16, 12, 20])
        g = tg.vmap(lambda p, x: lax.cond(p, lambda x: x + 1, lambda x: x - 1, x))
        np.testing.assert_array_equal(g(tnp.array([True, False]), tnp.zeros(2)), [1.0, -1.0])
        # grad sees concrete decisions eagerly: Python branches, derivatives as without
        h = tg.grad(lambda x: lax.cond(x > 0, lambda x: x ** 3, lambda x: -x, x))
        assert float(h(2.0)) == 12.0 and float(h(-2.0)) == -1.0


def _line_search_counts(lib):
    lx, np_ = (jax.lax, jnp) if lib is jax else (lax, tnp)
    c = Counter()

    def loss(w):
        c["loss"] += 1
        return np_.sum((w - 3.0) ** 2)

    def step(w):
        g = lib.grad(loss)(w)

        def cond_fun(s):
            t, _ = s
            return loss(w - t * g) > loss(w) - 0.5 * t * np_.sum(g * g)

        def body_fun(s):
            t, k = s
            return lx.cond(k < 100, lambda t: t * 0.5, lambda t: t * 0.25, t), k + 1
        t, _ = lx.while_loop(cond_fun, body_fun, (1.0, 0))
        return w - t * g

    counts = []
    for mode in ("eager", "jit", "disable_jit"):
        c.clear()
        w = np_.ones(3) * 10
        with lib.disable_jit(mode == "disable_jit"):
            f = step if mode == "eager" else lib.jit(step)
            for _ in range(3):
                w = f(w)
        np.testing.assert_allclose(np.asarray(w), 3.0)
        counts.append(c["loss"])
    return counts


def test_line_search_evaluates_the_loss_as_often_as_jax():
    assert _line_search_counts(tg) == _line_search_counts(jax)


# ---------------------------------------------------------------------------
# vectorize with generalized-ufunc signatures

_RNG = np.random.default_rng(0)


def _r(*shape):
    return _RNG.standard_normal(shape)


_VECTORIZE_CASES = [
    # (function of tnp/jnp/np namespace, signature, argument shapes)
    (lambda m: lambda a, b: m.dot(a, b), "(n),(n)->()", [(4, 3), (3,)]),
    (lambda m: lambda a, b: m.dot(a, b), "(n),(n)->()", [(2, 1, 3), (5, 3)]),
    (lambda m: lambda a, b: m.matmul(a, b), "(m,n),(n,p)->(m,p)", [(2, 3, 4), (1, 4, 2)]),
    (lambda m: lambda a: (m.sum(a), a * 2.0), "(n)->(),(n)", [(3, 1, 4)]),
    (lambda m: lambda a, s: a * s - m.max(a), "(n),()->(n)", [(1, 5), (3, 1)]),
    (lambda m: lambda a: m.outer(a, a), "(n)->(n,n)", [(2, 3)]),
    (lambda m: lambda a: m.sum(a), "(n)->()", [(1, 3)]),   # size-1 loop axis kept
    (lambda m: lambda x, y: m.sin(x) * y, None, [(3, 1), (4,)]),
]


@pytest.mark.parametrize("make, sig, shapes", _VECTORIZE_CASES)
def test_vectorize_signature_matches_numpy_and_jax(make, sig, shapes):
    args = [_r(*s) for s in shapes]
    want = np.vectorize(make(np), signature=sig)(*args)
    got = tnp.vectorize(make(tnp), signature=sig)(*args)
    ref = jnp.vectorize(make(jnp), signature=sig)(*args)
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
    else:
        want, got, ref = (want,), (got,), (ref,)
    for w, g, r in zip(want, got, ref):
        assert type(g) is ArrayImpl and g.shape == w.shape == r.shape
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12)
    # under jit: the same numbers
    jitted = tg.jit(tnp.vectorize(make(tnp), signature=sig))(*args)
    for g, j in zip(got, jitted if isinstance(jitted, tuple) else (jitted,)):
        np.testing.assert_allclose(j, g, rtol=1e-12, atol=1e-12)


def test_vectorize_signature_under_grad_and_jit():
    dot = tnp.vectorize(tnp.dot, signature="(n),(n)->()")
    jdot = jnp.vectorize(jnp.dot, signature="(n),(n)->()")
    a, b = _r(4, 3), _r(3)

    def loss(lib_dot, m):
        return lambda a, b: m.sum(m.sin(lib_dot(a, b)))

    ga, gb = tg.grad(loss(dot, tnp), argnums=(0, 1))(a, b)
    ja, jb = jax.grad(loss(jdot, jnp), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, ja, rtol=1e-12)
    np.testing.assert_allclose(gb, jb, rtol=1e-12)
    # finite differences on one entry
    eps = 1e-6
    a2 = a.copy()
    a2[1, 2] += eps
    fd = (np.sum(np.sin(a2 @ b)) - np.sum(np.sin(a @ b))) / eps
    np.testing.assert_allclose(ga[1, 2], fd, rtol=1e-4)
    gj = tg.jit(tg.grad(loss(dot, tnp)))(a, b)
    np.testing.assert_allclose(gj, ga, rtol=1e-12)
    # vmap of a vectorized function: a loop
    vm = tg.vmap(dot, in_axes=(0, None))(_r(2, 4, 3), b)
    assert vm.shape == (2, 4)


def test_vectorize_excluded_none_and_keywords():
    def f(x, scale, mode):
        assert mode in ("add", "mul")   # a static string reaches pyfunc unchanged
        return x * scale if mode == "mul" else x + scale
    v = tnp.vectorize(f, excluded={2}, signature="(n),()->(n)")
    got = v(_r(2, 3), tnp.array([1.0, 2.0])[:, None], "mul")
    assert got.shape == (2, 2, 3)
    v2 = tnp.vectorize(lambda x, p: x * p["a"], excluded={"p"})
    np.testing.assert_allclose(v2(tnp.arange(3.0), p={"a": 2.0}), [0.0, 2.0, 4.0])
    # None is passed unchanged
    v3 = tnp.vectorize(lambda x, y: x if y is None else x + y)
    np.testing.assert_allclose(v3(tnp.arange(3.0), None), [0.0, 1.0, 2.0])
    # keywords that are not excluded are vectorized (as NumPy; JAX drops them silently)
    v4 = tnp.vectorize(lambda x, y=10.0: x + y)
    np.testing.assert_allclose(v4(tnp.arange(3.0), y=tnp.array([1.0, 2.0, 3.0])),
                               [1.0, 3.0, 5.0])
    assert np.vectorize(lambda x, y=10.0: x + y)(np.arange(3.0), y=np.array([1.0, 2.0, 3.0]))[
        2] == 5.0


def test_vectorize_errors():
    dot = tnp.vectorize(tnp.dot, signature="(n),(n)->()")
    with pytest.raises(ValueError, match="inconsistent size for core dimension 'n': 4 vs 3"):
        dot(tnp.ones(3), tnp.ones(4))
    with pytest.raises(ValueError, match="does not have enough dimensions for all core"):
        dot(tnp.ones(()), tnp.ones(3))
    with pytest.raises(TypeError, match="wrong number of positional arguments: expected 2"):
        dot(tnp.ones(3))
    with pytest.raises(ValueError, match="not a valid gufunc signature"):
        tnp.vectorize(tnp.dot, signature="(n),(n)")
    with pytest.raises(ValueError, match="output shape .* does not match core dimensions"):
        tnp.vectorize(lambda a: a, signature="(n)->()")(tnp.ones(3))
    with pytest.raises(TypeError, match="output must be a tuple when multiple outputs"):
        tnp.vectorize(lambda a: a, signature="(n)->(n),()")(tnp.ones(3))
    with pytest.raises(TypeError, match="can only exclude integer or string arguments"):
        tnp.vectorize(lambda a: a, excluded={1.5})
    with pytest.raises(ValueError, match="Cannot pass None at locations"):
        dot(None, tnp.ones(3))


# ---------------------------------------------------------------------------
# x == None, x != None

def test_comparison_with_none_follows_jax():
    a, b = tnp.arange(3.0), tnp.ones(3)
    j = jnp.arange(3.0)
    assert (a == None) is (j == None) is False   # noqa: E711
    assert (a != None) is (j != None) is True    # noqa: E711
    assert (None == a) is False and (None != a) is True   # noqa: E711
    assert (None in [a, b]) is (None in [j]) is False
    # other comparisons are NumPy's, elementwise
    np.testing.assert_array_equal(a == b, [False, True, False])
    np.testing.assert_array_equal(a != 1.0, [True, False, True])
    np.testing.assert_array_equal(a == [0, 1, 5], [True, True, False])
    np.testing.assert_array_equal(a == "abc", np.arange(3.0) == "abc")
    assert type(a == b) is ArrayImpl
    with pytest.raises(ValueError, match="could not be broadcast"):
        a == tnp.ones(4)   # noqa: B015

    def f(x):
        assert (x == None) is False and (x != None) is True   # noqa: E711
        assert None not in [x]
        return tnp.where(a == x, x, 2 * x), a != x, x == a
    for out in (tg.jit(f)(b), f(b)):
        np.testing.assert_array_equal(out[0], [2.0, 1.0, 2.0])
        np.testing.assert_array_equal(out[1], [True, False, True])
        np.testing.assert_array_equal(out[2], [False, True, False])
    np.testing.assert_array_equal(tg.grad(lambda x: f(x)[0].sum())(b), [2.0, 1.0, 2.0])
    tg.vmap(lambda x: f(x)[0])(tnp.ones((2, 3)))


# ---------------------------------------------------------------------------
# Methods of eager results with traced arguments

_A = np.arange(1.0, 7.0).reshape(2, 3)

# name -> (call on an array `a` with the traced argument `x`, a concrete value for x)
_METHOD_CASES = {
    "dot": (lambda a, x: a.dot(x), np.array([1.0, -2.0, 0.5])),
    "dot_kw": (lambda a, x: a.dot(x, precision="highest"), np.array([1.0, -2.0, 0.5])),
    "clip": (lambda a, x: a.clip(2.0, x), 4.5),
    "clip_min": (lambda a, x: a.clip(min=x), 2.5),
    "take": (lambda a, x: a.take(x), np.array([4, 0, 2])),
    "take_axis": (lambda a, x: a.take(x, axis=1), np.array([2, 0])),
    "searchsorted": (lambda a, x: a.ravel().searchsorted(x), np.array([0.5, 3.5, 9.0])),
    "choose": (lambda a, x: np.array([0, 1, 1]).view(ArrayImpl).choose([a[0], x]),
               np.array([7.0, 8.0, 9.0])),
    "compress": (lambda a, x: a.compress(x, axis=1, size=2), np.array([True, False, True])),
    "sum_where": (lambda a, x: a.sum(where=x), np.array([True, False, True])),
    "sum_initial": (lambda a, x: a.sum(axis=0, initial=x), 10.0),
    "prod_where": (lambda a, x: a.prod(1, where=x), np.array([True, False, True])),
    "max_initial": (lambda a, x: a.max(initial=x), 100.0),
    "min_where": (lambda a, x: a.min(initial=50.0, where=x), np.array([False, True, True])),
    "mean_where": (lambda a, x: a.mean(axis=1, where=x), np.array([True, False, True])),
    "var_where": (lambda a, x: a.var(where=x), np.array([True, True, False])),
    "std_where": (lambda a, x: a.std(1, where=x), np.array([True, True, False])),
    "all_where": (lambda a, x: (a > 1).all(where=x), np.array([False, True, True])),
    "any_where": (lambda a, x: (a > 5).any(axis=1, where=x), np.array([True, True, False])),
}


@pytest.mark.parametrize("name", sorted(_METHOD_CASES))
def test_eager_result_methods_take_traced_arguments(name):
    call, x = _METHOD_CASES[name]
    a = tnp.asarray(_A)
    assert type(a) is ArrayImpl
    if name == "choose":
        want = jnp.choose(jnp.array([0, 1, 1]), [jnp.asarray(_A[0]), jnp.asarray(x)])
    elif name == "sum_initial":   # JAX's Array.sum drops initial= (jnp.sum keeps it): NumPy's
        want = call(_A, x)
    else:
        want = call(jnp.asarray(_A), jnp.asarray(x))
    eager = call(a, tnp.asarray(x))   # NumPy's method
    np.testing.assert_allclose(eager, want, rtol=1e-12)
    jitted = tg.jit(lambda x: call(a, x))(x)   # x is a tracer: tangentia.numpy's function
    np.testing.assert_allclose(jitted, want, rtol=1e-12)
    assert type(jitted) is ArrayImpl
    if np.asarray(x).dtype.kind == "f" and want.dtype.kind == "f":   # under grad too
        g = tg.grad(lambda x: tnp.sum(call(a, x) ** 2))(x)
        eps = 1e-6
        fd = (np.sum(call(_A, x + eps) ** 2) - np.sum(call(_A, x - eps) ** 2)) / (2 * eps) \
            if name not in ("choose", "dot_kw") and np.ndim(x) == 0 else None
        if name not in ("choose", "sum_initial"):
            jg = jax.grad(lambda x: jnp.sum(call(jnp.asarray(_A), x) ** 2))(jnp.asarray(x))
            np.testing.assert_allclose(g, jg, rtol=1e-12)
        if fd is not None:   # the derivative through initial= (NumPy would drop it)
            np.testing.assert_allclose(g, fd, rtol=1e-6)


def test_eager_repeat_with_traced_repeats_needs_concrete_values():
    a = tnp.asarray(_A)
    np.testing.assert_array_equal(a.repeat(np.array([2, 1]), axis=0), _A[[0, 0, 1]])
    # JAX needs total_repeat_length for traced repeats; tangentia.numpy.repeat takes only
    # an integer number of repeats so far (NotImplementedError): an error either way
    with pytest.raises((tg.ConcretizationTypeError, NotImplementedError)):
        tg.jit(lambda r: a.repeat(r, axis=0))(np.array([2, 1]))
    with pytest.raises(Exception, match="concrete"):
        jax.jit(lambda r: jnp.asarray(_A).repeat(r, axis=0))(np.array([2, 1]))


def test_eager_put_is_numpy_but_traced_put_raises_as_jax():
    a = tnp.zeros(3)
    with pytest.raises(ValueError, match="cannot modify arrays in-place, because JAX arrays "
                                         "are immutable"):
        tg.jit(lambda v: a.put(0, v))(1.0)
    with pytest.raises(ValueError, match="cannot modify arrays in-place"):
        jnp.put(jnp.zeros(3), 0, 1.0)


def test_tracers_have_the_array_methods_of_jax():
    x = np.array([3.0, 1.0, 2.0])
    f = tg.jit(lambda x: (x.take(jnp_idx), x.repeat(2), x.compress(x > 1.5), x.conjugate(),
                          x.argpartition(1), tnp.array([0, 1, 0]).choose([x, -x])))
    jnp_idx = np.array([2, 0])
    take, rep, comp, conj, part, ch = f.__wrapped__(x) if hasattr(f, "__wrapped__") else f(x)
    np.testing.assert_array_equal(take, [2.0, 3.0])
    np.testing.assert_array_equal(rep, [3.0, 3.0, 1.0, 1.0, 2.0, 2.0])
    np.testing.assert_array_equal(comp, [3.0, 2.0])
    np.testing.assert_array_equal(conj, x)
    assert int(part[1]) == 2
    np.testing.assert_array_equal(ch, [3.0, -1.0, 2.0])


# ---------------------------------------------------------------------------
# typing, sharding, config: the names libraries read

def test_typing_names():
    from tangentia.typing import ArrayLike, DTypeLike
    import jax.typing
    assert sorted(n for n in dir(jax.typing) if not n.startswith("_")) == ["ArrayLike",
                                                                            "DTypeLike"]
    for v in (tnp.ones(2), np.ones(2), np.float32(1), 2.0, 3, True, 1j):
        assert isinstance(v, ArrayLike), v
    for v in ("2", None, [1.0]):
        assert not isinstance(v, ArrayLike), v

    def seen(x):
        assert isinstance(x, ArrayLike)   # tracers are arrays too
        return x * 2
    tg.jit(seen)(1.0)
    tg.grad(seen)(1.0)
    assert DTypeLike is not None and tg.typing.ArrayLike is ArrayLike


def test_sharding_on_one_device():
    from tangentia.sharding import (Mesh, NamedSharding, PartitionSpec as P, PositionalSharding,
                                    SingleDeviceSharding, get_abstract_mesh, get_mesh)
    x = tnp.ones((4, 2))
    s = x.sharding
    js = jnp.ones((4, 2)).sharding
    assert repr(s) == repr(js) == "SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)"
    assert s == SingleDeviceSharding(tg.devices()[0]) and s.device_set == {tg.devices()[0]}
    assert (s.is_fully_replicated, s.is_fully_addressable, s.num_devices, s.memory_kind) == (
        js.is_fully_replicated, js.is_fully_addressable, js.num_devices, js.memory_kind)
    assert s.shard_shape((4, 2)) == js.shard_shape((4, 2)) == (4, 2)
    assert list(s.devices_indices_map((4, 2)).values()) == [(slice(None), slice(None))]
    mesh, jmesh = tg.make_mesh((1,), ("batch",)), jax.make_mesh((1,), ("batch",))
    assert repr(mesh) == repr(jmesh) and mesh.shape == jmesh.shape and mesh.size == 1
    ns, jns = NamedSharding(mesh, P("batch")), jax.NamedSharding(jmesh, jax.P("batch"))
    assert repr(ns) == repr(jns) and repr(P(None, "x")) == repr(jax.P(None, "x")) == "P(None, 'x')"
    assert ns.shard_shape((4, 2)) == jns.shard_shape((4, 2)) and ns.is_fully_replicated
    assert s.is_equivalent_to(ns, 2)
    with pytest.raises(ValueError, match=r"Resource axis: y of P\('y',\) is not found in mesh"):
        NamedSharding(mesh, P("y"))
    with pytest.raises(ValueError, match=r"^Number of devices 1 must be >= the product of "
                                         r"mesh_shape \(2,\)"):
        tg.make_mesh((2,), ("x",))
    # device_put to any sharding: the values, as arrays on the one device
    for target in (ns, s, tg.devices()[0], PositionalSharding(tg.devices())):
        y = tg.device_put(np.arange(3.0), target)
        assert type(y) is ArrayImpl and y.sharding == s
        np.testing.assert_array_equal(y, [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(tg.jit(lambda v: tg.reshard(v, ns) * 2)(tnp.ones(2)), 2.0)
    # the current mesh
    assert get_mesh().empty
    with tg.set_mesh(Mesh(np.array(tg.devices()).reshape(1, 1), ("a", "b"))) as m:
        assert get_mesh() is m and get_abstract_mesh().axis_names == ("a", "b")
    assert get_mesh().empty
    arr = tg.make_array_from_callback((2, 3), ns, lambda idx: np.arange(6.0).reshape(2, 3)[idx])
    np.testing.assert_array_equal(arr, np.arange(6.0).reshape(2, 3))
    assert (tg.process_count(), tg.process_index(), tg.process_indices()) == (1, 0, [0])
    assert isinstance(tg.devices()[0], tg.Device)


def test_config_reads_as_jax():
    c = tg.config
    assert c.x64_enabled and c.jax_enable_x64 and c.read("jax_enable_x64")
    assert c.jax_numpy_rank_promotion == jax.config.jax_numpy_rank_promotion == "allow"
    assert c.jax_disable_jit is False
    with tg.disable_jit():
        assert c.jax_disable_jit is True
    c.update("jax_disable_jit", True)
    try:
        assert tg.jit(lambda x: float(x) + 1)(1.0) == 2.0   # Python runs: float() works
    finally:
        c.update("jax_disable_jit", False)
    assert c.jax_disable_jit is False
    assert c.values["jax_enable_x64"] is True
    with pytest.raises(AttributeError, match="Unrecognized config option: jax_no_such"):
        c.jax_no_such   # noqa: B018


# ---------------------------------------------------------------------------
# optax, run on tangentia through a `jax` -> `tangentia` import alias


@pytest.fixture
def optax_on_tangentia():
    import importlib.util
    if importlib.util.find_spec("optax") is None:
        pytest.skip("optax is not installed (pip install optax)")
    with jax_is_tangentia("optax", "chex"):
        import optax
        yield optax


def test_optax_optimizers_and_lbfgs_run_on_tangentia(optax_on_tangentia):
    optax = optax_on_tangentia
    target = np.array([0.0, 1.0, 2.0])

    def loss(w):
        return tnp.sum((w - target) ** 2) + 0.1 * tnp.sum(w ** 4)

    def numpy_loss_grad(w):
        return np.sum((w - target) ** 2) + 0.1 * np.sum(w ** 4), 2 * (w - target) + 0.4 * w ** 3

    # adam, by hand in NumPy: the same steps
    opt = optax.adam(0.1)
    w, st = tnp.zeros(3), opt.init(tnp.zeros(3))
    step = tg.jit(lambda w, st: (lambda g: (lambda u: (optax.apply_updates(w, u[0]), u[1]))(
        opt.update(g, st, w)))(tg.grad(loss)(w)))
    m = v = np.zeros(3)
    wn = np.zeros(3)
    for t in range(1, 31):
        w, st = step(w, st)
        g = numpy_loss_grad(wn)[1]
        m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
        wn = wn - 0.1 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    np.testing.assert_allclose(w, wn, rtol=1e-10)
    # L-BFGS with its zoom line search (while_loop, cond) under jit: the minimum
    opt = optax.lbfgs()
    vg = optax.value_and_grad_from_state(loss)
    w, st = tnp.zeros(3), opt.init(tnp.zeros(3))

    @tg.jit
    def lbfgs_step(w, st):
        value, g = vg(w, state=st)
        u, st = opt.update(g, st, w, value=value, grad=g, value_fn=loss)
        return optax.apply_updates(w, u), st
    with np.errstate(all="ignore"):   # (the line search divides by zero in an unused branch)
        for _ in range(15):
            w, st = lbfgs_step(w, st)
    np.testing.assert_allclose(numpy_loss_grad(np.asarray(w))[1], 0.0, atol=1e-8)


# ---------------------------------------------------------------------------
# jax.experimental.checkify (chex imports it; chexify runs on it)

from tangentia.experimental import checkify as tck  # noqa: E402
from jax.experimental import checkify as jck  # noqa: E402


def _positive_log(ck, np_):
    def f(x):
        ck.check(x > 0, "x must be positive, got {x}", x=x)
        return np_.log(x)
    return f


@pytest.mark.parametrize("jit_inside", [False, True])
def test_checkify_user_checks_follow_jax(jit_inside):
    for lib, ck, np_ in ((tg, tck, tnp), (jax, jck, jnp)):
        f = _positive_log(ck, np_)
        f = lib.jit(f) if jit_inside else f
        err, out = ck.checkify(f)(np_.asarray(-2.0))
        assert err.get() == "x must be positive, got -2.0 (`check` failed)"
        assert str(err) == "Error(x must be positive, got -2.0 (`check` failed))"
        with pytest.raises(ck.JaxRuntimeError, match=r"got -2.0 \(`check` failed\)"):
            err.throw()
        with pytest.raises(ValueError, match="must be positive"):   # a ValueError in both
            ck.check_error(err)
        err, out = ck.checkify(f)(np_.asarray(2.0))
        assert err.get() is None and err.get_exception() is None
        np.testing.assert_allclose(out, np.log(2.0), rtol=1e-15)
        ck.check_error(err)   # no failure: no exception


def test_checkify_first_failure_in_loops_and_vmap():
    def make(lib, ck, np_):
        def body(i, v):
            ck.check(v < 3.0, "too big at {i}: {v}", i=i, v=v)
            return v + 1.0
        return lambda x: lib.lax.fori_loop(0, 5, body, x)
    for lib, ck, np_ in ((tg, tck, tnp), (jax, jck, jnp)):
        err, out = ck.checkify(lib.jit(make(lib, ck, np_)))(np_.asarray(1.0))
        assert err.get() == "too big at 2: 3.0 (`check` failed)"   # the first failure
        assert float(out) == 6.0
        err, out = ck.checkify(lib.vmap(lambda x: (ck.check(x != 2.0, "two"), x * 2)[1]))(
            np_.arange(4.0))
        assert err.get() == "two (`check` failed)"
        np.testing.assert_array_equal(out, [0.0, 2.0, 4.0, 6.0])


def test_checkify_automatic_checks_follow_jax():
    cases = [
        (lambda np_: (lambda x: np_.log(x)), (-1.0,), "nan"),
        (lambda np_: (lambda x, y: x / y), (1.0, 0.0), "div"),
        (lambda np_: (lambda x, y: x // y), (np.array([4, 5]), np.array([2, 0])), "div"),
    ]
    for make, args, _ in cases:
        for errors in ("all_checks", "user_checks", "float_checks", "index_checks"):
            got = tck.checkify(tg.jit(make(tnp)), errors=getattr(tck, errors))(
                *[tnp.asarray(a) for a in args])
            want = jck.checkify(jax.jit(make(jnp)), errors=getattr(jck, errors))(
                *[jnp.asarray(a) for a in args])
            assert got[0].get() == want[0].get(), (errors, args)
            if np.result_type(*args).kind == "f":   # (integer // 0: XLA's -2 vs NumPy's 0)
                np.testing.assert_array_equal(got[1], want[1])
    # an out-of-bounds traced index under jit (the result differs: JAX clamps, ours is 0)
    f = lambda lib: lib.jit(lambda x, i: x[i] * 2)  # noqa: E731
    got = tck.checkify(f(tg), errors=tck.index_checks)(tnp.arange(1.0, 4.0), -7)[0].get()
    want = jck.checkify(f(jax), errors=jck.index_checks)(jnp.arange(1.0, 4.0), -7)[0].get()
    assert got == want == ("out-of-bounds indexing for array of shape (3,): index -4 is out of "
                           "bounds for axis 0 with size 3. ")


def test_check_outside_checkify_follows_jax():
    for lib, ck, np_ in ((tg, tck, tnp), (jax, jck, jnp)):
        with pytest.raises(ck.JaxRuntimeError, match=r"^bad 3 \(`check` failed\)"):
            ck.check(np_.asarray(False), "bad {}", np_.asarray(3))
        ck.check(np_.asarray(True), "fine")
        with pytest.raises(TypeError, match="check takes a scalar pred as argument"):
            ck.check(np_.asarray([True, False]), "m")
        with pytest.raises(TypeError, match="Formatting arguments to checkify.check need to be "
                                            "PyTrees of arrays, but got 3 of type"):
            ck.check(np_.asarray(False), "bad {}", 3)
        with pytest.raises(ValueError, match="Cannot abstractly evaluate a checkify.check which "
                                             "was not functionalized"):
            lib.jit(lambda x: ck.check(x > 0, "neg"))(np_.asarray(1.0))
    assert tck.all_checks == tck.user_checks | tck.nan_checks | tck.div_checks | tck.index_checks
    assert tg.device_get(tck.init_error()).get() is None   # a pytree without leaves
    with pytest.raises(NotImplementedError, match=r"checkify\(jit\(f\)\)"):
        tg.jit(tck.checkify(lambda x: x))(1.0)


# ---------------------------------------------------------------------------
# pmap on the one device

def test_pmap_on_one_device_follows_jax():
    x = np.arange(3.0).reshape(1, 3)
    for f in (lambda lib: lib.pmap(lambda v: v * 2),
              lambda lib: lib.pmap(lambda v: lib.lax.psum(v, "i") + v, axis_name="i"),
              lambda lib: lib.pmap(lambda v, n: v * n, static_broadcasted_argnums=1)):
        args = (x, 4) if f(tg).__wrapped__.__code__.co_argcount == 2 else (x,)
        np.testing.assert_array_equal(f(tg)(*args), f(jax)(*args))
    with pytest.raises(ValueError, match="compiling computation that requires 2 logical devices"):
        tg.pmap(lambda v: v)(np.ones((2, 3)))
    with pytest.raises(ValueError, match="pmap requires at least one argument with a mapped axis"):
        tg.pmap(lambda v: v, in_axes=None)(np.ones(3))


def test_jax_private_names_chex_reads():
    import tangentia._src as src
    assert src.xla_bridge._backends == {}
    assert not hasattr(src.compiler, "backend_compile_and_load")   # chex restricts nothing


def test_device_put_refuses_what_is_not_an_array_as_jax():
    # chex's with_device variant puts every leaf and keeps those JAX refuses with TypeError
    for bad, msg in ((jnp.float32, "cannot be interpreted as a JAX array"),
                     ("abc", "is not a valid JAX type"),
                     (lambda: 1, "it does not have a dtype attribute"),
                     (object(), "it does not have a dtype attribute")):
        ours = tnp.float32 if bad is jnp.float32 else bad
        with pytest.raises(TypeError, match=msg):
            jax.device_put(bad)
        with pytest.raises(TypeError, match=msg):
            tg.device_put(ours)
    for ok in (3, 2.5, np.float32(2), np.arange(3), [1.0, (2, np.ones(2))], None):
        got, want = tg.device_put(ok), jax.device_put(ok)
        assert str(tg.tree_util.tree_structure(got)) == str(jax.tree_util.tree_structure(want))
        assert len(tg.tree_util.tree_leaves(got)) == len(jax.tree_util.tree_leaves(want))
        for g, w in zip(tg.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            assert isinstance(g, ArrayImpl)
            np.testing.assert_array_equal(g, w)


def test_signature_of_a_jitted_function_is_the_function_s():
    import inspect

    def f(x, y=2, *, z=3):
        return x
    for lib in (tg, jax):
        assert str(inspect.signature(lib.jit(f), follow_wrapped=False)) == "(x, y=2, *, z=3)"
        assert str(inspect.signature(lib.jit(f))) == "(x, y=2, *, z=3)"


def test_devices_of_another_platform_raise_as_jax():
    # chex counts a platform's devices by catching the RuntimeError
    for lib in (tg, jax):
        for call in (lambda: lib.devices("gpu"), lambda: lib.device_count("tpu"),
                     lambda: lib.local_devices(backend="gpu"),
                     lambda: lib.local_device_count("gpu")):
            with pytest.raises(RuntimeError, match="(Unknown backend)|(failed to initialize)"):
                call()
        with pytest.raises(RuntimeError, match="Unknown backend foo"):
            lib.devices("foo")
        assert [d.platform for d in lib.devices("cpu")] == ["cpu"]
        assert lib.device_count() == lib.local_device_count("cpu") == len(lib.local_devices()) == 1


def test_eager_comparison_with_unrecognized_objects_follows_jax():
    class Thing:
        pass
    for lib_np in (tnp, jnp):
        x = lib_np.arange(3.0)
        for other in (object(), "abc", Thing()):
            assert (x == other) is False and (x != other) is True
    np.testing.assert_array_equal(tnp.arange(3.0) == np.float32(1), [False, True, False])


# ---------------------------------------------------------------------------
# tree_map's structure errors begin with JAX's wording (optax's tests match it)

@pytest.mark.parametrize("a, b", [((1, 2), (1, 2, 3)), ({"a": 1}, {"b": 1}), ([1, 2], (1, 2)),
                                  ((1, [2]), (1, 3)), ({"x": (1, 2)}, {"x": (1,)})])
def test_tree_map_structure_error_begins_with_jax_wording(a, b):
    def head(lib):
        with pytest.raises(ValueError) as info:
            lib.tree_util.tree_map(lambda x, y: x, a, b)
        return str(info.value).split("\n")[:2]
    assert head(tg) == head(jax)
    with pytest.raises(ValueError, match="tree_map_with_path tree"):
        tg.tree_util.tree_map_with_path(lambda p, x, y: x, a, b)


def test_log_softmax_where_gradient_of_a_row_masked_whole_is_zero():
    """optax's softmax_cross_entropy(where=...) differentiates log_softmax(where=) with a
    row masked whole: JAX's gradient there is 0, ours was NaN (0/0 weights in the JVP)."""
    ys = np.array([[10.0, 1.0, -2.0], [1.0, 4.0, 0.2]], np.float32)
    for w in (np.array([[True], [False]]), np.array([[True, False, True], [False] * 3])):
        def loss(lib, np_, y):
            out = lib.nn.log_softmax(y, -1, w)
            return np_.sum(np_.where(w, out, 0.0) * np.arange(3.0))
        with np.errstate(divide="ignore"):
            got = tg.grad(lambda y: loss(tg, tnp, y))(ys)
        want = jax.grad(lambda y: loss(jax, jnp, y))(ys)
        np.testing.assert_allclose(got, want, rtol=1e-6)
        assert np.all(got[1] == 0.0)


def test_custom_functions_and_rules_get_arrays_with_jax_methods():
    """A custom_jvp's function and rule and a custom_vjp's function and fwd get arrays
    with ``.at``, also for intermediates of an eager transformation (exact ndarrays
    inside), as JAX's rules get JAX arrays."""
    for lib, np_ in ((tg, tnp), (jax, jnp)):
        @lib.custom_jvp
        def f(x):
            return x.at[0].set(0.0) * 2

        @f.defjvp
        def f_jvp(p, t):
            return f(p[0]), t[0].at[0].set(0.0) * 2 + 0 * p[0].at[1].get()

        @lib.custom_vjp
        def g(x):
            return x.at[0].multiply(3.0)

        def g_fwd(x):
            return g(x), x.at[0].set(3.0)

        g.defvjp(g_fwd, lambda r, ct: (ct * np_.cos(r),))
        x = np_.ones(3)
        c = np.cos(1.0)
        np.testing.assert_allclose(lib.jvp(lambda x: f(np_.sin(x)), (x,), (x,))[1],
                                   [0.0, 2 * c, 2 * c], rtol=1e-14)
        np.testing.assert_allclose(lib.grad(lambda x: f(np_.sin(x)).sum())(x),
                                   [0.0, 2 * c, 2 * c], rtol=1e-14)
        np.testing.assert_allclose(lib.grad(lambda x: g(np_.sin(x)).sum())(x),
                                   np.cos([3.0, np.sin(1.0), np.sin(1.0)]) * c, rtol=1e-14)
        np.testing.assert_allclose(
            lib.vmap(lib.grad(lambda x: g(np_.sin(x)).sum()))(np_.ones((2, 3)))[1],
            np.cos([3.0, np.sin(1.0), np.sin(1.0)]) * c, rtol=1e-14)


def test_segment_reductions_of_a_scalar_follow_jax():
    """jraph's graph network reduces 0-d features by segment: JAX's scatter broadcasts the
    value to every id (a scalar id or a vector of them)."""
    for ids, n in ((np.array([0, 1, 1]), 3), (np.array(1), 3), (np.array(1), None)):
        for name in ("segment_sum", "segment_max", "segment_min", "segment_prod"):
            got = getattr(tg.ops, name)(np.float64(2.0), ids, n)
            want = getattr(jax.ops, name)(np.float64(2.0), ids, n)
            np.testing.assert_array_equal(got, want)
    got = tg.jit(lambda d, i: tg.ops.segment_max(d, i, 3))(2.0, np.array([0, 2]))
    np.testing.assert_array_equal(got, jax.ops.segment_max(2.0, np.array([0, 2]), 3))
    with pytest.raises(ValueError, match="segment_ids"):
        tg.ops.segment_sum(np.ones(3), np.array([0, 1]), 2)


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "var", "std", "max", "min", "all",
                                  "any"])
def test_eager_reductions_take_a_list_of_axes_as_jax(name):
    """flax's tests reduce eager results over ``axis=[1, 2, 3]`` (NumPy's methods take
    only a tuple)."""
    x = np.linspace(0.5, 2.0, 24).reshape(2, 3, 4)
    got = getattr(tnp.asarray(x), name)(axis=[0, 2], keepdims=True)
    want = getattr(jnp.asarray(x), name)(axis=[0, 2], keepdims=True)
    assert type(got) is ArrayImpl
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_config_parse_flags_with_absl_is_accepted_as_jax():
    """Test files written for JAX (flax's) call it at import."""
    assert tg.config.parse_flags_with_absl() is None
    import importlib.util
    if importlib.util.find_spec("absl") is not None:   # (JAX's needs absl, which JAX does
        jax.config.parse_flags_with_absl()             # not install; flax does)


def test_lowered_cost_analysis_gives_no_estimate():
    """flax's ``tabulate`` asks ``jit(f).lower(x).cost_analysis()`` for XLA's FLOP counts and
    takes None as none (tangentia has no cost model)."""
    assert tg.jit(lambda x: x * 2).lower(np.ones(3)).cost_analysis() is None
    assert "flops" in jax.jit(lambda x: x * 2).lower(np.ones(3)).cost_analysis()


def test_jit_static_argnums_and_argnames_both_given_are_taken_as_given():
    """As JAX's jit: with both given, neither is completed from the signature (flax's
    ``nn.jit`` wraps a function of three leading arguments with ``functools.wraps`` of the
    user's, and names the user's static keyword)."""
    import functools

    def user(scope, train=False, x=None):   # ("train" is the second parameter here ...)
        return x * (2.0 if train else 3.0)

    for lib in (tg, jax):
        @functools.partial(lib.jit, static_argnums=(0,), static_argnames=("train",))
        @functools.wraps(user)
        def jitted(fingerprint, variables, x, **kw):   # (... and an unhashable value there)
            return user(None, x=x, **kw) + len(fingerprint)

        assert float(jitted((1, 2), ({},), np.float64(1.0), train=True)) == 4.0
        assert float(jitted((1,), ({},), np.float64(1.0))) == 4.0


def test_sigmoid_of_complex_values_follows_jax():
    """flax's gated recurrent cells take complex inputs: ``nn.sigmoid`` is JAX's logistic
    there (values, dtype and derivative)."""
    z = np.array([1 + 2j, -0.5 + 0.1j, 3 - 1j])
    for zz in (z, z.astype(np.complex64)):
        got, want = tg.nn.sigmoid(zz), jax.nn.sigmoid(zz)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6 if zz.dtype == np.complex64 else 1e-14)
    np.testing.assert_allclose(tg.jit(tg.nn.sigmoid)(z), jax.nn.sigmoid(z), rtol=1e-14)
    got = tg.grad(lambda z: tnp.real(tg.nn.sigmoid(z)).sum())(z)
    want = jax.grad(lambda z: jnp.real(jax.nn.sigmoid(z)).sum())(z)
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_custom_rules_in_place_operators_make_new_arrays_as_jax():
    """``ct *= 2`` and ``r += 1`` in a bwd rule rebind, as on JAX's arrays: the rule is run
    again on arrays with JAX's operators when NumPy's refuse to write a read-only array
    (the rules' first call gets the interpreters' exact ndarrays, the fast form)."""
    got = {}
    for lib, np_ in ((tg, tnp), (jax, jnp)):
        @lib.custom_vjp
        def f(x):
            return np_.sin(x)

        def bwd(r, ct):
            ct *= 2.0
            r += 1.0
            return (ct * r,)

        f.defvjp(lambda x: (np_.sin(x), np_.cos(x)), bwd)

        def loss(x):
            y = x * 3.0
            return (f(y) + y).sum()

        x = np_.array([0.1, 0.2])
        got[lib.__name__] = (lib.grad(loss)(x), lib.vmap(lib.grad(loss))(x[None])[0])
    want = 2.0 * (np.cos(0.3 * np.array([1.0, 2.0])) + 1.0) * 3.0 + 3.0
    for g in (*got["tangentia"], *got["jax"]):
        np.testing.assert_allclose(g, want, rtol=1e-14)


def test_custom_jvp_rule_in_place_on_a_tangent_changes_no_one_elses_array():
    """``tx *= 2`` in a JVP rule, on the tangent an eager ``jvp`` passes (the user's own
    array, or one the interpreters share with ``+ y``): JAX's operator makes a new array,
    so neither the result nor the user's tangent changes (ours changed both: [4, 4]).
    (JAX's rule gets a NumPy tangent as it is, and changes it: JAX is compared on its own
    arrays.)"""
    for lib, np_ in ((tg, tnp), (jax, jnp)):
        @lib.custom_jvp
        def h(x):
            return np_.sin(x)

        @h.defjvp
        def h_jvp(p, t):
            (x,), (tx,) = p, t
            tx *= 2.0
            return np_.sin(x), tx

        x, v = np.array([0.1, 0.2]), np.ones(2)
        if lib is jax:
            x, v = jnp.asarray(x), jnp.asarray(v)
        _, t1 = lib.jvp(lambda x: h(x) + x, (x,), (v,))
        _, t2 = lib.jvp(lib.vmap(lambda x: h(3.0 * x) + 3.0 * x), (x,), (v,))
        np.testing.assert_array_equal(t1, [3.0, 3.0])
        np.testing.assert_array_equal(t2, [9.0, 9.0])
        np.testing.assert_array_equal(v, [1.0, 1.0])


def test_jitted_functions_show_as_jax_and_chex_sees_them_traced():
    """A jitted function's repr and class name are JAX's (``<PjitFunction of ...>``):
    chex's ``is_traceable`` and ``assert_max_traces`` (which refuses a jitted function
    below it) recognize a jitted function by that name."""
    import importlib.util

    def f(x):
        return x

    want = repr(jax.jit(f)).split(" of ")[0]
    assert repr(tg.jit(f)).split(" of ")[0] == want == "<PjitFunction"
    assert repr(tg.jit(f)).endswith(f"{f!r}>")
    assert "PjitFunction" in str(type(tg.jit(f)))
    if importlib.util.find_spec("chex") is None:
        pytest.skip("chex is not installed")
    with jax_is_tangentia("chex"):
        from chex._src import asserts_internal as ai
        got = [ai.is_traceable(tg.jit(f)), ai.is_traceable(f)]
    from chex._src import asserts_internal as jai
    assert got == [jai.is_traceable(jax.jit(f)), jai.is_traceable(f)] == [True, False]
