"""Messages and noise: forgetting has_aux, out-of-bounds indices, and NumPy's
floating-point warnings inside transformed functions (once per user line, none for
JAX's stable-softplus idiom)."""
import re
import warnings

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp


# ---------------------------------------------------------------------------
# has_aux


def _loss_and_aux(w):
    return tnp.sum(w ** 2), {"norm": tnp.sqrt(tnp.sum(w ** 2))}


@pytest.mark.parametrize("api", [tg.grad, tg.value_and_grad])
def test_forgetting_has_aux_is_advised(api):
    with pytest.raises(TypeError) as info:
        api(_loss_and_aux)(np.ones(3))
    message = str(info.value)
    # JAX's words first ("Gradient only defined for scalar-output functions. Output was ...")
    assert message.startswith("Gradient only defined for scalar-output functions. Output was ")
    assert "pass has_aux=True" in message and "_loss_and_aux" in message
    # and the advice is right: with has_aux the same call works
    g, aux = tg.grad(_loss_and_aux, has_aux=True)(np.ones(3))
    np.testing.assert_allclose(g, 2 * np.ones(3))
    np.testing.assert_allclose(aux["norm"], np.sqrt(3.0))


def test_has_aux_is_not_advised_for_a_single_array():
    with pytest.raises(TypeError, match=r"Output had shape: \(3,\)") as info:
        tg.grad(lambda w: w * 2.0)(np.ones(3))
    assert "has_aux" not in str(info.value)


def test_jax_message_for_a_tuple_output_begins_ours():
    jax = pytest.importorskip("jax", reason="compares with JAX's message")
    with pytest.raises(TypeError) as ours:
        tg.grad(lambda x: (x ** 2, x))(1.0)
    with pytest.raises(TypeError) as theirs:
        jax.grad(lambda x: (x ** 2, x))(1.0)
    prefix = str(theirs.value).split(" Output was")[0]
    assert str(ours.value).startswith(prefix + " Output was")


def test_vjp_pullback_given_the_value_cotangent_of_an_aux_pair():
    out, pullback = tg.vjp(_loss_and_aux, np.ones(2))
    with pytest.raises(ValueError, match=r"^unexpected tree structure\..*has_aux=True"):
        pullback(1.0)
    # with has_aux, the pullback takes the value's cotangent
    out, pullback, aux = tg.vjp(_loss_and_aux, np.ones(2), has_aux=True)
    np.testing.assert_allclose(pullback(1.0)[0], [2.0, 2.0])
    # a list output is not a (value, aux) pair: no advice
    _, pullback = tg.vjp(lambda x: [x, x], 1.0)
    with pytest.raises(ValueError) as info:
        pullback(1.0)
    assert "has_aux" not in str(info.value)


# ---------------------------------------------------------------------------
# Out-of-bounds indices (tangentia raises where JAX clamps; the message names the
# index, its axis and the axis's size, as the user wrote them)

_OOB = r"^index {} is out of bounds for axis {} with size {} \(tangentia: the index {} into " \
       r"an array of shape {}"


@pytest.mark.parametrize("how", ["jit", "grad", "vmap"])
def test_out_of_bounds_constant_index_names_index_axis_and_size(how):
    x = np.arange(10.0).reshape(2, 5)

    def f(a):
        return tnp.sum(a[1, 7])

    run = {"jit": lambda: tg.jit(f)(x), "grad": lambda: tg.grad(f)(x),
           "vmap": lambda: tg.vmap(lambda r: r[7])(x)}[how]
    if how == "vmap":   # the example's axis 0 (the batched array's axis 1)
        pattern = _OOB.format(7, 0, 5, re.escape("[7]"), re.escape("(5,)"))
    else:
        pattern = _OOB.format(7, 1, 5, re.escape("[1, 7]"), re.escape("(2, 5)"))
    with pytest.raises(IndexError, match=pattern) as info:
        run()
    assert isinstance(info.value, tg.errors.JAXIndexError)
    assert "clamps" in str(info.value)


def test_out_of_bounds_negative_and_array_indices():
    x = np.arange(5.0)
    with pytest.raises(IndexError, match=_OOB.format(-6, 0, 5, re.escape("[-6]"),
                                                     re.escape("(5,)"))):
        tg.jit(lambda a: a[-6])(x)
    with pytest.raises(IndexError, match=_OOB.format(9, 0, 5, re.escape("[<i64[3] array>]"),
                                                     re.escape("(5,)"))):
        tg.grad(lambda a: tnp.sum(a[np.array([1, 9, 2])]))(x)
    with pytest.raises(IndexError, match=_OOB.format(-8, 1, 3, re.escape("[..., -8]"),
                                                     re.escape("(2, 3)"))):
        tg.jit(lambda a: a[..., -8])(np.ones((2, 3)))


def test_out_of_bounds_traced_index_under_vmap_says_which_axes_are_counted():
    with pytest.raises(IndexError, match=r"counts the batch axes vmap added.*<traced i64\[\]>"):
        tg.vmap(lambda row, i: row[i])(np.ones((2, 5)), np.array([1, 7]))


def test_in_bounds_and_clamping_modes_are_unchanged():
    x = np.arange(5.0)
    assert float(tg.jit(lambda a: a[-5])(x)) == 0.0
    np.testing.assert_array_equal(tg.grad(lambda a: a[4])(x), [0, 0, 0, 0, 1.0])
    assert float(tg.jit(lambda a: a.at[7].get(mode="clip"))(x)) == 4.0
    assert np.isnan(float(tg.jit(lambda a: a.at[7].get(mode="fill"))(x)))
    np.testing.assert_array_equal(tg.vmap(lambda r: r[4])(np.arange(10.0).reshape(2, 5)),
                                  [4.0, 9.0])


def test_empty_axis_message_names_the_index():
    with pytest.raises(IndexError, match=r"^index is out of bounds for axis 1 with size 0 "
                                         r"\(tangentia: indexing: the index 0 into axis 1"):
        tg.jit(lambda a: a[:, 0])(np.ones((3, 0)))


# ---------------------------------------------------------------------------
# NumPy's floating-point warnings

X = np.array([-1000.0, 0.0, 1000.0])


def _softplus(x):
    return tnp.where(x > 0, x + tnp.log1p(tnp.exp(-x)), tnp.log1p(tnp.exp(x)))


def _fp_warnings(fn):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")   # count every one, not Python's once per line
        out = fn()
    return out, [w for w in record if issubclass(w.category, RuntimeWarning)]


@pytest.mark.parametrize("how", ["eager", "grad", "vmap", "vmap-grad"])
def test_stable_softplus_gives_no_warning(how):
    run = {"eager": lambda: _softplus(X),
           "grad": lambda: tg.grad(lambda x: tnp.sum(_softplus(x)))(X),
           "vmap": lambda: tg.vmap(_softplus)(X),
           "vmap-grad": lambda: tg.vmap(tg.grad(_softplus))(X)}[how]
    out, record = _fp_warnings(run)
    assert record == [], [str(w.message) for w in record]
    if how in ("eager", "vmap"):
        np.testing.assert_allclose(out, [0.0, np.log(2.0), 1000.0])
    elif how in ("grad", "vmap-grad"):   # JAX's numbers: 0 * inf in the discarded branch
        np.testing.assert_array_equal(np.isnan(out), [True, False, True])
        assert out[1] == 0.5


def _log_of(x):
    return tnp.sum(tnp.log(x))


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_tangentias_computations_do_not_warn_as_jaxs(backend):
    """log(0), 0/0, sqrt(-1), overflow: JAX computes them silently (-inf, NaN, inf by IEEE),
    and so does tangentia, eagerly and under every transformation (flax's and optax's tests
    make warnings errors); the values are NumPy's."""
    zeros = np.zeros(3)
    for run in (lambda: _log_of(zeros), lambda: tg.grad(_log_of)(zeros),
                lambda: tg.vmap(_log_of)(zeros[:, None]),
                lambda: tg.vmap(tg.grad(_log_of))(zeros[:, None]),
                lambda: tg.jit(_log_of, backend=backend)(zeros),
                lambda: tg.jit(tg.grad(_log_of), backend=backend)(zeros),
                lambda: tnp.divide(zeros, zeros), lambda: tnp.sqrt(zeros - 1),
                lambda: tnp.ones(3) / 0.0, lambda: tnp.arcsin(zeros + 2),
                lambda: tnp.mean(np.ones((2, 3)), axis=0, where=np.zeros((2, 3), bool)),
                lambda: tnp.nanmean(np.full(3, np.nan)), lambda: tg.nn.softmax(zeros - np.inf),
                lambda: tg.scipy.special.logsumexp(zeros - np.inf)):
        out, record = _fp_warnings(run)
        assert record == [], [str(w.message) for w in record]
    np.testing.assert_array_equal(tg.grad(_log_of)(zeros), np.full(3, np.inf))
    assert _log_of(zeros) == -np.inf
    assert np.isnan(tnp.divide(zeros, zeros)).all()


def _users_log(x):
    return np.log(x)  # the user's NumPy line


def test_users_own_numpy_code_inside_still_warns_at_its_line():
    """A ``pure_callback``'s function, a custom rule computing with ``numpy``: the user's
    NumPy code, which warns as NumPy does (JAX's too), once, at the user's line."""
    zeros = np.zeros(3)
    with open(__file__) as f:
        line = next(i for i, t in enumerate(f, 1) if "# the user's " + "NumPy line" in t)
    sds = tg.ShapeDtypeStruct((3,), np.float64)

    @tg.custom_vjp
    def f(x):
        return tnp.sin(x)

    f.defvjp(lambda x: (tnp.sin(x), x), lambda x, g: (g * _users_log(np.asarray(x)),))
    for run in (lambda: tg.pure_callback(_users_log, sds, zeros),
                lambda: tg.grad(lambda x: tnp.sum(f(x)))(zeros)):
        out, record = _fp_warnings(run)
        assert [(str(w.message), w.filename, w.lineno) for w in record] == [
            ("divide by zero encountered in log", __file__, line)]
        assert np.isneginf(out).all()


def test_overflow_is_silent_and_the_users_settings_win():
    _, record = _fp_warnings(lambda: tnp.exp(np.array([1000.0])))
    assert record == []
    # the user's settings still win: overflow and division by zero raise when asked to
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        tnp.exp(np.array([1000.0]))
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        tnp.log(np.zeros(2))
    assert np.geterr()["divide"] == "warn"
