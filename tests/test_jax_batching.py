"""vmap as JAX's batching tests exercise it: where the batch axis of a rule's output
lands, staged program shapes, collectives over several named axes, and JAX's error
wording.  Each case checks values against a Python loop or NumPy."""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

RNG = np.random.RandomState(7)


def _loop(f, *args, in_axes):
    """Stack f over the mapped axis, one example at a time (the reference)."""
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    return np.stack([f(*[a if ax is None else np.take(a, i, axis=ax)
                         for a, ax in zip(args, in_axes)]) for i in range(size)])


@pytest.mark.parametrize("xshape,yshape,in_axes", [
    ((4, 3), (3, 5), (None, 1)), ((3, 5), (3,), (1, None)), ((5, 3), (3,), (0, None)),
    ((3,), (5, 3), (None, 0)), ((4, 3), (2, 3, 5), (None, 0)), ((4, 2, 3), (3, 5), (1, None)),
    ((4, 3), (3, 5, 2), (None, 2))])
def test_dot_with_one_batched_operand_is_a_single_contraction(xshape, yshape, in_axes):
    # The batch axis of the one batched operand becomes a free axis of the product:
    # no transpose is staged before it (one after it, for out_axes=0, is JAX's too).
    x, y = RNG.randn(*xshape), RNG.randn(*yshape)
    f = tg.vmap(tnp.dot, in_axes=in_axes)
    np.testing.assert_allclose(f(x, y), _loop(np.dot, x, y, in_axes=in_axes), rtol=1e-13)
    eqns = tg.make_jaxpr(f)(x, y).jaxpr.eqns
    assert [e.primitive.name for e in eqns] in (["dot_general"], ["dot_general", "transpose"])
    np.testing.assert_allclose(tg.jit(f)(x, y), f(x, y), rtol=1e-13)


def test_nested_vmap_of_vdot_is_one_matmul():
    A, B = RNG.randn(4, 3), RNG.randn(3, 2)
    matmat = tg.vmap(tg.vmap(tnp.vdot, in_axes=(0, None)), in_axes=(None, 1), out_axes=1)
    np.testing.assert_allclose(matmat(A, B), A @ B, rtol=1e-13)
    assert len(tg.make_jaxpr(matmat)(A, B).jaxpr.eqns) == 1
    # and its gradient, which transposes the batched contraction
    g = tg.grad(lambda a, b: tnp.sum(tnp.sin(matmat(a, b))), argnums=(0, 1))(A, B)
    c = np.cos(A @ B)
    np.testing.assert_allclose(g[0], c @ B.T, rtol=1e-12)
    np.testing.assert_allclose(g[1], A.T @ c, rtol=1e-12)


# ---------------------------------------------------------------------------
# vmap's argument errors begin with JAX's wording


def _raises(exc, pattern, f, *args):
    with pytest.raises(exc, match=pattern) as info:
        f(*args)
    return str(info.value)


def test_in_axes_beyond_the_rank_names_the_rank_needed():
    x = np.ones((3, 4, 5))
    for ax, need in [(-4, 4), (3, 4), (5, 6)]:
        msg = _raises(ValueError, rf"^vmap was requested to map its argument along axis {ax}, "
                      rf"which implies that its rank should be at least {need}, but is only 3 "
                      r"\(its shape is \(3, 4, 5\)\)", tg.vmap(tnp.sum, in_axes=ax), x)
        assert "argument a of vmap of sum" in msg
    _raises(ValueError, r"at least 1, but is only 0 \(its shape is \(\)\): kwargs\['b'\] .*scalar",
            lambda: tg.vmap(lambda a, b: a + b, in_axes=(0,))(np.ones(3), b=2.0))
    # negative in_axes that fit map the axis counted from the end
    np.testing.assert_array_equal(tg.vmap(tnp.sum, in_axes=-1)(x), np.sum(x, axis=(0, 1)))


def test_inconsistent_sizes_list_each_size_with_an_example_argument():
    msg = _raises(ValueError, r"^vmap got inconsistent sizes for array axes to be mapped:\n",
                  tg.vmap(lambda a, b: a), {"p": np.ones(3)}, [np.ones(4), np.ones((4, 2))])
    assert msg.splitlines()[1:3] == [
        "  * most axes (2 of them) had size 4, e.g. axis 0 of argument b[0] of type float64[4];",
        "  * one axis had size 3: axis 0 of argument a['p'] of type float64[3]"]
    msg = _raises(ValueError, r"inconsistent sizes", tg.vmap(lambda a: a, in_axes=1, axis_size=4),
                  np.ones((2, 3)))
    assert msg.splitlines()[1:3] == [
        "  * the `axis_size` argument was 4;",
        "  * one axis had size 3: axis 1 of argument a of type float64[2,3]"]


def test_in_axes_and_out_axes_of_the_wrong_kind():
    f = lambda a: a  # noqa: E731
    for bad in [1.0, {"a": 0}, True]:
        _raises(TypeError, r"^vmap in_axes must be an int, None, or a tuple of entries "
                r"corresponding to the positional arguments passed to the function, but got",
                tg.vmap, f, bad)
    _raises(TypeError, r"^vmap in_axes must be an int, None, or \(nested\) container with those "
            r"types as leaves, but got \(0, 'x'\)", tg.vmap, f, (0, "x"))
    _raises(TypeError, r"^vmap out_axes must be an int, None, or \(nested\) container with those "
            r"types as leaves, but got 1.5", tg.vmap, f, 0, 1.5)
    _raises(ValueError, r"len\(in_axes\)=2, len\(args\)=1",
            lambda: tg.vmap(lambda a, b: a + b, in_axes=(0, None))(np.ones(3), b=np.ones(3)))
    _raises(ValueError, r"^vmap in_axes specification must be a tree prefix of the corresponding "
            r"value", lambda: tg.vmap(f, in_axes=({"q": 0},))({"p": np.ones(3)}))
    _raises(ValueError, r"^vmap out_axes specification must be a tree prefix",
            lambda: tg.vmap(lambda a: (a, a), out_axes=(0, 0, 0))(np.ones(3)))


def test_nothing_to_map():
    _raises(ValueError, r"^vmap must have at least one non-None value in in_axes or axis_size "
            r"must be specified", lambda: tg.vmap(lambda a: a, in_axes=None)(np.ones(3)))
    _raises(ValueError, r"^vmap wrapped function must be passed at least one argument containing "
            r"an array or axis_size must be specified, got empty \*args=\(\) and \*\*kwargs=\{\}",
            lambda: tg.vmap(lambda: 1.0)())
    np.testing.assert_array_equal(tg.vmap(lambda: 1.0, axis_size=3)(), np.ones(3))


def test_out_axes_out_of_bounds_and_non_array_outputs():
    x = np.arange(60.0).reshape(3, 4, 5)
    _raises(ValueError, r"^axis -4 is out of bounds for array of dimension 3",
            tg.vmap(lambda y: y, out_axes=-4), x)
    # an unbatched output is broadcast first, so its batched rank counts
    _raises(ValueError, r"^axis -2 is out of bounds for array of dimension 1",
            tg.vmap(lambda *xs: xs, in_axes=(0, None), out_axes=(0, -2)), np.arange(5), 7)
    np.testing.assert_array_equal(
        tg.vmap(lambda *xs: xs, in_axes=(0, None), out_axes=(0, -1))(np.arange(5), 7)[1],
        np.full(5, 7))
    for out_axes in [0, None]:
        _raises(TypeError, r"^Output from batched function 'hello' with type <class 'str'> is not "
                r"a valid JAX type", tg.vmap(lambda y: "hello", out_axes=out_axes), x)
    outs = tg.vmap(lambda y: (y, 3, True, np.float32(2)))(np.ones(2))
    assert [o.dtype for o in outs] == [np.float64, np.int64, np.bool_, np.float32]


# ---------------------------------------------------------------------------
# Collectives over several named axes at once


def _over_two_names(f, x, i, j):
    """f under vmap over 'i' (size i) then 'j' (size j), x's leading axis split in two."""
    g = tg.vmap(tg.vmap(f, axis_name="j"), axis_name="i")
    y = g(x.reshape((i, j) + x.shape[1:]))
    return y.reshape((i * j,) + y.shape[2:])


@pytest.mark.parametrize("split,concat,tiled", [(0, 0, False), (0, 1, False), (1, 0, False),
                                                (1, 1, True), (0, 1, True)])
def test_all_to_all_over_two_names_is_all_to_all_over_their_product(split, concat, tiled):
    # ('i', 'j') together are one axis of size 6 with 'i' major, as JAX's.
    x = RNG.randn(6, 6, 12 if tiled else 6)
    one = tg.vmap(lambda v: tg.lax.all_to_all(v, "k", split, concat, tiled=tiled), axis_name="k")
    two = lambda v: tg.lax.all_to_all(v, ("i", "j"), split, concat, tiled=tiled)  # noqa: E731
    want = one(x)
    np.testing.assert_array_equal(_over_two_names(two, x, 2, 3), want)
    np.testing.assert_array_equal(_over_two_names(two, x, 3, 2), want)
    # linear, so its VJP is the inverse exchange: <ct, A x> == <A^T ct, x>
    ct = RNG.randn(*want.shape)
    _, pullback = tg.vjp(lambda v: _over_two_names(two, v, 2, 3), x)
    np.testing.assert_allclose(np.vdot(pullback(ct)[0], x), np.vdot(ct, want), rtol=1e-12)


def test_axis_index_over_several_names_counts_along_their_product():
    # ('i', 'j', 'k') numbers the elements with 'i' major; the name order, not
    # the nesting order, decides (JAX's numbers).
    f = lambda a: tg.lax.axis_index(("i", "j", "k")) + 0 * a  # noqa: E731
    got = tg.vmap(tg.vmap(tg.vmap(f, axis_name="k"), axis_name="j"), axis_name="i")(
        np.zeros((2, 3, 4), np.int32))
    np.testing.assert_array_equal(got, np.arange(24).reshape(2, 3, 4))
    g = lambda a: tg.lax.axis_index(("j", "i"))  # noqa: E731
    got = tg.vmap(tg.vmap(g, axis_name="j"), axis_name="i")(np.zeros((2, 3)))
    np.testing.assert_array_equal(got, np.arange(6).reshape(3, 2).T)
    assert got.dtype == np.int32
    jitted = tg.jit(tg.vmap(tg.vmap(tg.jit(g), axis_name="j"), axis_name="i"))(np.zeros((2, 3)))
    np.testing.assert_array_equal(jitted, got)


@pytest.mark.parametrize("start", [-1, -2, -4, -6, -9, 0, 2, 7])
def test_dynamic_slices_count_negative_starts_from_the_end_then_clamp(start):
    # JAX's rule (found comparing vmap of dynamic_update_slice with JAX): a negative
    # start gets the dimension size added, then the window is clamped into the operand.
    x = np.arange(5.0)
    s = min(max(start + 5 if start < 0 else start, 0), 3)
    want_slice, want_update = x[s:s + 2], x.copy()
    want_update[s:s + 2] = 9.0
    lax = tg.lax
    ds = lambda v, i: lax.dynamic_slice(v, (i,), (2,))  # noqa: E731
    dus = lambda v, i: lax.dynamic_update_slice(v, np.full(2, 9.0), (i,))  # noqa: E731
    for f, want in [(ds, want_slice), (dus, want_update)]:
        np.testing.assert_array_equal(f(x, start), want)
        np.testing.assert_array_equal(tg.jit(f)(x, start), want)
        np.testing.assert_array_equal(tg.vmap(f, in_axes=(None, 0))(x, np.array([start, 0]))[0],
                                      want)
    np.testing.assert_array_equal(lax.dynamic_index_in_dim(x, start, keepdims=False),
                                  x[min(max(start + 5 if start < 0 else start, 0), 4)])
