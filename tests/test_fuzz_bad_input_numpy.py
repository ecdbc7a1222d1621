"""``tangentia.numpy`` and ``tree_util`` given arguments that are not arrays, against JAX
0.10.2 (x64): where JAX raises a TypeError, we raise a TypeError that names the function
and the argument, never an AttributeError/IndexError from NumPy's or our inside.  Session
23 (E); each case failed before its fix: ``arctan2(x, None)`` raised AttributeError "'float'
object has no attribute 'arctan2'" (NumPy's ufunc on an object array), ``delete(x, 'abc')``
NumPy's IndexError, ``tril_indices_from('abc')`` NumPy's AttributeError "'str' object has no
attribute 'ndim'", ``from_dlpack(None)`` AttributeError "'NoneType' object has no attribute
'__dlpack__'"; a pytree nested 2,000 levels deep raised a bare RecursionError (JAX: a
SystemError from its C++ flatten), now one that names the function and the limit.

Left alone (NumPy semantics, documented: lists are arrays): a ragged list is NumPy's
ValueError where JAX refuses every list with TypeError.  Reported, not fixed here:
``count_nonzero(None)`` is 1 and ``full_like(x, None)`` NaN (JAX: TypeError), the
elementwise comparisons take None as NumPy's object comparisons do.
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

jax = pytest.importorskip("jax", reason="the differential tests compare with JAX")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

X = np.arange(6.0).reshape(2, 3)
NOT_ARRAYS: dict[str, Any] = {"None": None, "str": "abc", "dict": {"a": 1}, "object": object(),
                              "list of str and int": [1, "a"]}


def _raised(call: Any) -> BaseException:
    try:
        call()
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        return e
    raise AssertionError("did not raise")


@pytest.mark.parametrize("bad", list(NOT_ARRAYS))
def test_not_an_array_is_a_type_error_as_in_jax(bad: str) -> None:
    v = NOT_ARRAYS[bad]
    cases = {
        "arctan2": (lambda N: N.arctan2(X, v)),
        "atan2": (lambda N: N.atan2(X, v)),
        "delete": (lambda N: N.delete(X, v)),
        "diag_indices_from": (lambda N: N.diag_indices_from(v)),
        "tril_indices_from": (lambda N: N.tril_indices_from(v)),
        "triu_indices_from": (lambda N: N.triu_indices_from(v)),
        "from_dlpack": (lambda N: N.from_dlpack(v)),
    }
    for name, call in cases.items():
        if bad == "list of str and int" and name in ("arctan2", "atan2"):
            continue   # (NumPy's strings: a TypeError of its own, before and after)
        theirs = _raised(lambda: call(jnp))
        ours = _raised(lambda: call(tnp))
        assert isinstance(theirs, TypeError), (name, bad, theirs)
        assert type(ours) is TypeError, (name, bad, repr(ours))
        if name == "from_dlpack":
            assert str(ours).startswith(str(theirs)), (str(ours), str(theirs))
        elif name in ("arctan2", "atan2") and bad in ("None", "dict"):
            assert f"requires ndarray or scalar arguments, got {type(v)} at position 1" \
                in str(ours), str(ours)
        elif name not in ("arctan2", "atan2"):
            assert name in str(ours) and ("'arr'" in str(ours) or "'obj'" in str(ours)), \
                str(ours)


def test_the_wrappers_still_take_arrays_lists_and_tracers() -> None:
    for fn in ("diag_indices_from", "tril_indices_from", "triu_indices_from"):
        want = getattr(np, fn)(np.ones((3, 3)))
        for arg in (np.ones((3, 3)), [[1.0] * 3] * 3):
            got = getattr(tnp, fn)(arg)
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)
        # under jit the indices come from the traced argument's shape
        got = tg.jit(lambda a, fn=fn: getattr(tnp, fn)(a))(np.ones((3, 3)))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(tnp.delete(X, [0, 2], axis=1), np.delete(X, [0, 2], axis=1))
    np.testing.assert_array_equal(tnp.delete(X, slice(0, 2), axis=1), X[:, 2:])
    np.testing.assert_array_equal(tnp.delete(X, 1), np.delete(X, 1))
    np.testing.assert_array_equal(tnp.arctan2(X, 2.0), np.arctan2(X, 2.0))
    np.testing.assert_array_equal(tnp.from_dlpack(X), X)


def test_a_pytree_too_deep_names_the_function_and_the_limit() -> None:
    tree: Any = 1.0
    for _ in range(sys.getrecursionlimit() + 100):
        tree = [tree]
    with pytest.raises(SystemError):   # JAX's (nanobind) error
        jax.tree_util.tree_leaves(tree)
    limit = f"sys.getrecursionlimit() = {sys.getrecursionlimit()}"
    for fname, call in [("tree_flatten", lambda: tg.tree_util.tree_flatten(tree)),
                        ("tree_leaves", lambda: tg.tree_util.tree_leaves(tree)),
                        ("tree_map", lambda: tg.tree_util.tree_map(lambda x: x, tree)),
                        ("tree_flatten", lambda: tg.jit(lambda t: t)(tree))]:
        e = _raised(call)
        assert type(e) is RecursionError, repr(e)
        assert str(e).startswith("maximum recursion depth exceeded while flattening a pytree "
                                 f"(tangentia.tree_util.{fname}:"), str(e)
        assert limit in str(e)
    # a deep one within the limit still flattens and comes back as it was
    shallow: Any = 2.0
    for _ in range(500):
        shallow = [shallow]
    leaves, treedef = tg.tree_util.tree_flatten(shallow)
    assert leaves == [2.0] and tg.tree_util.tree_unflatten(treedef, leaves) == shallow


_AXIS_FUNCTIONS = ["sum", "prod", "max", "min", "mean", "var", "std", "all", "any", "nansum",
                   "nanmean", "nanmax", "nanvar", "count_nonzero", "average", "median"]


@pytest.mark.parametrize("name", _AXIS_FUNCTIONS)
def test_an_axis_given_twice_or_as_a_str_raises(name: str) -> None:
    # axis=(0, 0) reduced axis 0 once and axis='0' was taken as 0 (int('0')): JAX and NumPy
    # raise ValueError ('duplicate value in 'axis'' / 'repeated axis') and TypeError (or
    # JAX's NameError of a named axis for the reductions: ours is the TypeError)
    ours, theirs = getattr(tnp, name), getattr(jnp, name)
    for axis in [(0, 0), (1, -1)]:
        assert isinstance(_raised(lambda: theirs(X, axis=axis)), ValueError)
        with pytest.raises(ValueError, match=r"^duplicate value in 'axis'"):
            ours(X, axis=axis)
        with pytest.raises(ValueError, match=r"^duplicate value in 'axis'"):
            tg.jit(lambda a: ours(a, axis=axis))(X)
    with pytest.raises(TypeError, match=r"^'str' object cannot be interpreted as an integer"):
        ours(X, axis="0")
    good: Any
    for good in [0, -1, (0, 1), (1,), None]:
        np.testing.assert_allclose(ours(X, axis=good), np.asarray(theirs(X, axis=good)),
                                   rtol=1e-14)


def test_size_and_trapezoid_axis_out_of_range() -> None:
    # an IndexError 'tuple index out of range' from inside; JAX: ValueError
    for call in (lambda N: N.size(X, 5), lambda N: N.size(X, -3),
                 lambda N: N.trapezoid(X, axis=5), lambda N: N.trapezoid(X, axis=-3)):
        assert isinstance(_raised(lambda: call(jnp)), ValueError)
        e = _raised(lambda: call(tnp))
        assert type(e) is ValueError and "out of bounds" in str(e), repr(e)
    assert tnp.size(X, -1) == 3 and tnp.size(X, 0) == 2
    np.testing.assert_allclose(tnp.trapezoid(X, axis=0), np.trapezoid(X, axis=0))
    np.testing.assert_allclose(tnp.trapezoid(X, dx=0.5), np.trapezoid(X, dx=0.5))


@pytest.mark.parametrize("name", ["exp", "log", "log1p", "expm1", "tanh", "sin", "cos", "tan",
                                  "sqrt"])
def test_lax_accuracy_is_keyword_only(name: str) -> None:
    # lax.sin(x, 'abc') ignored its second positional argument (JAX: TypeError, accuracy is
    # keyword-only)
    ours, theirs = getattr(tg.lax, name), getattr(jax.lax, name)
    assert isinstance(_raised(lambda: theirs(X, "abc")), TypeError)
    with pytest.raises(TypeError, match="positional argument"):
        ours(X, "abc")
    np.testing.assert_allclose(ours(X, accuracy=None), np.asarray(theirs(X)), rtol=1e-14)


def test_random_bits_of_a_signed_dtype_is_jaxs_value_error() -> None:
    # (was a TypeError; JAX: ValueError "dtype argument to `bits` must be an unsigned int
    # dtype, got int8")
    for dt in (np.int8, np.float32, np.int64):
        theirs = _raised(lambda: jax.random.bits(jax.random.PRNGKey(0), (2,), dtype=dt))
        ours = _raised(lambda: tg.random.bits(tg.random.PRNGKey(0), (2,), dtype=dt))
        assert type(theirs) is ValueError and type(ours) is ValueError, (ours, theirs)
        assert str(ours).startswith(str(theirs)), (str(ours), str(theirs))
    assert tg.random.bits(tg.random.PRNGKey(0), (2,), dtype=np.uint16).dtype == np.uint16
