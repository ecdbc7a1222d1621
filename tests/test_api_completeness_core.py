"""JAX's core public modules as tangentia has them: flatten_util, example_libraries
(optimizers, stax), tree, dtypes, errors and the numpy/linalg/debug/experimental names,
against JAX 0.10.2 (x64): the same numbers, dtypes, structures and errors.  The last test
lists JAX's public names in these modules and checks ours have them (with a commented
list of what is out of scope)."""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.example_libraries import optimizers, stax
from tangentia.flatten_util import ravel_pytree

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy
import jax.flatten_util  # noqa: E402  (submodules JAX does not import itself)
from jax.example_libraries import optimizers as jopt, stax as jstax  # noqa: E402


def _same_tree(ours, theirs, rtol=1e-12, atol=1e-14):
    """Same structure (up to container types JAX converts), leaves, shapes and dtypes."""
    a, b = tg.tree.leaves(ours), jax.tree.leaves(theirs)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape and x.dtype == y.dtype, (x.shape, x.dtype, y.shape, y.dtype)
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------
# flatten_util


RAVEL_CASES = [
    {"a": 1.0, "b": np.arange(3), "c": (np.float32(2),)},     # mixed: float64
    [np.ones(2), np.zeros((2, 2))],                            # one dtype
    [True, np.int8(3)],                                        # bool + int8: int8
    [np.ones(2), 1 + 2j],                                      # float + complex
    [np.float32(1.5), np.ones((2, 1), np.float32)],            # float32 stays float32
    {"w": np.arange(6.0).reshape(2, 3), "none": None, "b": [np.ones(1), 2.0]},
]


@pytest.mark.parametrize("tree", RAVEL_CASES)
def test_ravel_pytree_matches_jax(tree):
    flat, unravel = ravel_pytree(tree)
    jflat, junravel = jax.flatten_util.ravel_pytree(tree)
    _same_tree(flat, jflat)
    _same_tree(unravel(flat), junravel(jflat))
    assert tg.tree.structure(unravel(flat)) == tg.tree.structure(tree)
    assert unravel == ravel_pytree(tree)[1] and hash(unravel) == hash(ravel_pytree(tree)[1])


def test_ravel_pytree_empty_and_errors():
    flat, unravel = ravel_pytree({})
    assert flat.shape == (0,) and flat.dtype == np.float32 and unravel(flat) == {}
    _, single = ravel_pytree([np.ones(2), np.zeros(3)])
    # one dtype: the unravel function takes any dtype (complex tangents)
    assert [x.dtype for x in single(np.ones(5, complex))] == [np.complex128] * 2
    with pytest.raises(ValueError, match=r"^Sum of sizes 5 must be equal to dimension 0 of the "
                                         r"operand shape \[4\]"):
        single(np.ones(4))
    _, mixed = ravel_pytree([np.ones(2), np.int8(1)])
    with pytest.raises(TypeError, match="^unravel function given array of dtype float32, but "
                                        "expected dtype float64"):
        mixed(np.ones(3, np.float32))


def test_ravel_pytree_under_transformations():
    tree = {"w": np.arange(6.0).reshape(2, 3), "b": np.ones(3)}
    flat, unravel = ravel_pytree(tree)

    def loss(v):
        t = unravel(v)
        return tnp.sum(t["w"] ** 2) + tnp.sum(3.0 * t["b"])

    np.testing.assert_allclose(tg.grad(loss)(flat), [3, 3, 3, 0, 2, 4, 6, 8, 10])
    np.testing.assert_allclose(tg.jit(loss)(flat), loss(flat))
    np.testing.assert_allclose(tg.jit(lambda t: ravel_pytree(t)[0])(tree), flat)
    g = tg.grad(lambda t: tnp.sum(ravel_pytree(t)[0] ** 2))(tree)
    np.testing.assert_allclose(g["w"], 2 * tree["w"])
    batch = np.stack([flat, 2 * flat])
    out = tg.vmap(unravel)(batch)
    np.testing.assert_allclose(out["w"][1], 2 * tree["w"])
    np.testing.assert_allclose(tg.vmap(lambda t: ravel_pytree(t)[0])(out), batch)
    # the unravel function is a valid static argument
    np.testing.assert_allclose(tg.jit(lambda v, u: u(v)["b"], static_argnums=1)(flat, unravel),
                               tree["b"])


# ---------------------------------------------------------------------------
# example_libraries.optimizers


OPTIMIZERS = [
    ("sgd", (0.1,)), ("momentum", (0.1, 0.9)), ("nesterov", (0.1, 0.9)),
    ("adagrad", (0.1,)), ("rmsprop", (0.01,)), ("rmsprop_momentum", (0.01,)),
    ("adam", (0.05,)), ("adamax", (0.05,)), ("sm3", (0.1,)),
    ("sgd", (("exponential_decay", 0.1, 3, 0.5),)),
    ("adam", (("inverse_time_decay", 0.1, 2, 0.5, True),)),
    ("momentum", (("polynomial_decay", 0.1, 4, 0.01, 2.0), 0.5)),
    ("sgd", (("piecewise_constant", [2, 4], [0.1, 0.05, 0.01]),)),
]


def _make(module, name, args):
    args = list(args)
    if isinstance(args[0], tuple):
        sched, *sargs = args[0]
        args[0] = getattr(module, sched)(*sargs)
    return getattr(module, name)(*args)


@pytest.mark.parametrize("spec", OPTIMIZERS, ids=lambda s: f"{s[0]}-{s[1][0]}"
                         if not isinstance(s[1][0], tuple) else f"{s[0]}-{s[1][0][0]}")
def test_optimizers_take_jaxs_steps(spec):
    name, args = spec
    rng = np.random.RandomState(0)
    params = {"w": rng.randn(3, 2), "b": rng.randn(2), "s": np.array(0.5)}
    target = rng.randn(3, 2)

    def loss(np_):
        return lambda p: (np_.sum((p["w"] - target) ** 2) + np_.sum(np_.sin(p["b"]))
                          + p["s"] ** 2)

    ours, theirs = _make(optimizers, name, args), _make(jopt, name, args)
    state, jstate = ours.init_fn(params), theirs.init_fn(params)
    for i in range(6):
        state = ours.update_fn(i, tg.grad(loss(tnp))(ours.params_fn(state)), state)
        jstate = theirs.update_fn(i, jax.grad(loss(jnp))(theirs.params_fn(jstate)), jstate)
    _same_tree(ours.params_fn(state), theirs.params_fn(jstate), rtol=1e-11, atol=1e-13)
    _same_tree(state.packed_state, jstate.packed_state, rtol=1e-11, atol=1e-13)


def test_optimizer_state_under_jit_and_serialization():
    init, update, get_params = optimizers.adam(0.1)
    loss = lambda p: tnp.sum((p[0] - 3.0) ** 2) + p[1] ** 2  # noqa: E731
    step = tg.jit(lambda i, s: update(i, tg.grad(loss)(get_params(s)), s))
    state = init((np.zeros(2), 1.0))
    eager = state
    for i in range(3):
        state, eager = step(i, state), update(i, tg.grad(loss)(get_params(eager)), eager)
    _same_tree(get_params(state), get_params(eager))
    marked = optimizers.unpack_optimizer_state(state)
    assert isinstance(marked, tuple) and isinstance(marked[0], optimizers.JoinPoint)
    repacked = optimizers.pack_optimizer_state(marked)
    assert repacked.tree_def == state.tree_def and repacked.subtree_defs == state.subtree_defs
    _same_tree(repacked.packed_state, state.packed_state)
    with pytest.raises(TypeError, match="^optimizer update function was passed a gradient tree "
                                        "that did not match"):
        update(0, [np.zeros(2), 0.0, 0.0], state)


def test_optimizer_utilities_match_jax():
    tree = {"a": np.array([3.0, 4.0]), "b": np.array([[12.0]])}
    np.testing.assert_allclose(optimizers.l2_norm(tree), 13.0)
    for m in (20.0, 6.5):
        _same_tree(optimizers.clip_grads(tree, m), jopt.clip_grads(tree, m))
    steps = np.arange(8)
    for sched in [("exponential_decay", 0.1, 3, 0.5), ("inverse_time_decay", 0.1, 2, 0.5),
                  ("inverse_time_decay", 0.1, 2, 0.5, True),
                  ("polynomial_decay", 0.1, 4, 0.01, 2.0),
                  ("piecewise_constant", [2, 4], [0.1, 0.05, 0.01]), ("constant", 0.3)]:
        ours = getattr(optimizers, sched[0])(*sched[1:])
        theirs = getattr(jopt, sched[0])(*sched[1:])
        np.testing.assert_allclose([ours(i) for i in steps], [theirs(i) for i in steps],
                                   rtol=1e-15)
    with pytest.raises(ValueError, match="boundaries length must be one shorter"):
        optimizers.piecewise_constant([1, 2], [0.1])
    with pytest.raises(TypeError):
        optimizers.make_schedule(np.ones(2))


# ---------------------------------------------------------------------------
# example_libraries.stax


def _net(S):
    return S.serial(
        S.Conv(4, (3, 3), padding="SAME"), S.BatchNorm(), S.Relu,
        S.MaxPool((2, 2), strides=(2, 2)), S.AvgPool((2, 2), padding="SAME"), S.SumPool((2, 2)),
        S.Flatten, S.Dense(5), S.Tanh, S.FanOut(3),
        S.parallel(S.Dense(3), S.Identity, S.serial(S.Elu, S.LeakyRelu, S.Selu)),
        S.FanInConcat(), S.Gelu, S.Softplus, S.Sigmoid, S.FanOut(2),
        S.parallel(S.Exp, S.Softmax), S.FanInSum, S.LogSoftmax)


def _transposed_net(S):
    return S.serial(
        S.GeneralConv(("NCH", "OIH", "NCH"), 3, (2,), strides=(2,)),
        S.GeneralConvTranspose(("NCH", "OIH", "NCH"), 2, (3,), padding="SAME"),
        S.BatchNorm(axis=(0, 2)), S.MaxPool((2,), spec="NCH"),
        S.AvgPool((2,), strides=(1,), padding="SAME", spec="NCH"),
        S.GeneralConv(("NCH", "HIO", "NHC"), 2, (1,)),
        S.Conv1DTranspose(2, (2,), strides=(2,)), S.Flatten, S.Dense(1))


@pytest.mark.parametrize("make, shape", [(_net, (2, 9, 9, 3)), (_transposed_net, (2, 3, 8))],
                         ids=["conv2d", "conv1d-transpose"])
def test_stax_networks_match_jax(make, shape):
    """The same key gives the same parameters, shapes and outputs as JAX."""
    (init, apply), (jinit, japply) = make(stax), make(jstax)
    out_shape, params = init(tg.random.PRNGKey(1), shape)
    jout_shape, jparams = jinit(jax.random.PRNGKey(1), shape)
    assert tuple(int(n) for n in out_shape) == tuple(int(n) for n in jout_shape)
    _same_tree(params, jparams, rtol=1e-13, atol=1e-15)
    x = np.random.RandomState(0).randn(*shape)
    y = apply(params, x)
    assert y.shape == tuple(out_shape)
    # (JAX's side under jax.jit: its op-by-op dispatch compiles each operation, seconds)
    np.testing.assert_allclose(y, jax.jit(japply)(jparams, x), rtol=1e-12, atol=1e-13)
    _same_tree(tg.grad(lambda p: tnp.sum(apply(p, x) ** 2))(params),
               jax.jit(jax.grad(lambda p: jnp.sum(japply(p, x) ** 2)))(jparams),
               rtol=1e-10, atol=1e-12)


def test_stax_dropout_batchnorm_variants_and_shape_dependent():
    x = np.random.RandomState(1).randn(4, 6)
    init, apply = stax.serial(stax.Dense(6), stax.Dropout(0.7))
    jinit, japply = jstax.serial(jstax.Dense(6), jstax.Dropout(0.7))
    _, params = init(tg.random.PRNGKey(0), x.shape)
    _, jparams = jinit(jax.random.PRNGKey(0), x.shape)
    key = tg.random.PRNGKey(3)
    np.testing.assert_allclose(apply(params, x, rng=key),
                               japply(jparams, x, rng=jax.random.PRNGKey(3)), rtol=1e-13)
    with pytest.raises(ValueError, match="^Dropout layer requires apply_fun to be called with "
                                         "a PRNG key argument"):
        apply(params, x)
    np.testing.assert_allclose(stax.Dropout(0.5, mode="test")[1]((), x, rng=key), x)
    for kwargs in [dict(axis=0, center=False), dict(axis=0, scale=False),
                   dict(axis=0, center=False, scale=False), dict(axis=(0,))]:
        (i, a), (ji, ja) = stax.BatchNorm(**kwargs), jstax.BatchNorm(**kwargs)
        _, p = i(tg.random.PRNGKey(0), x.shape)
        _, jp = ji(jax.random.PRNGKey(0), x.shape)
        np.testing.assert_allclose(a(p, x), ja(jp, x), rtol=1e-12, atol=1e-14)
    init, apply = stax.shape_dependent(lambda shape: stax.Dense(shape[-1] * 2))
    out_shape, params = init(tg.random.PRNGKey(0), x.shape)
    assert out_shape == (4, 12) and apply(params, x).shape == (4, 12)
