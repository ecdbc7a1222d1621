"""An operand that is no array, number or sequence gets JAX's ``TypeError`` from the
elementwise functions, eagerly, not NumPy's from inside the implementation
("loop of ufunc does not support argument 0 of type object ...")."""
from __future__ import annotations

import numpy as np
import pytest

import tangentia.numpy as tnp

pytestmark = pytest.mark.timeout(60)


class _Opaque:
    pass


@pytest.mark.parametrize("bad", [object(), _Opaque(), None, {1: 2}, "ab"])
@pytest.mark.parametrize("name,position,call", [
    ("sin", 0, lambda v: tnp.sin(v)),
    ("exp", 0, lambda v: tnp.exp(v)),
    ("add", 0, lambda v: tnp.add(v, 1.0)),
    ("add", 1, lambda v: tnp.add(np.ones(2), v)),
])
def test_non_array_operand_raises_jax_type_error(bad, name, position, call):
    expected = f"{name} requires ndarray or scalar arguments, got {type(bad)} at position {position}."
    with pytest.raises(TypeError) as info:
        call(bad)
    assert str(info.value) == expected


def test_array_likes_still_accepted():
    class WithArray:
        def __array__(self, dtype=None, copy=None):
            return np.arange(3.0)
    np.testing.assert_array_equal(tnp.sin(WithArray()), np.sin(np.arange(3.0)))
    np.testing.assert_array_equal(tnp.add([1.0, 2.0], 1.0), [2.0, 3.0])


def test_jax_array_protocol_object_gets_jax_value_error():
    class W:
        def __jax_array__(self):
            return np.ones(2)
    with pytest.raises(ValueError, match="^Triggering __jax_array__"):
        tnp.sin(W())
