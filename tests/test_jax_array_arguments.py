"""An object with JAX's ``__jax_array__`` given where an array argument is
abstracted (grad, jit, vmap): JAX 0.10.2 refuses it with a ValueError
("Triggering __jax_array__() during abstractification is no longer
supported..."), honouring the protocol only in ``jnp.asarray``/``jnp.array``.
``core.as_array`` gives JAX's error and wording, then what it was given."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

jax = pytest.importorskip("jax", reason="the expected errors are JAX's own")
jnp = jax.numpy


class _Convertible:
    def __jax_array__(self) -> Any:
        return np.ones(2)


TRANSFORMS = {
    "grad": (lambda m: m.grad(lambda x: m.numpy.sum(x) if m is jax else tnp.sum(x))),
    "jit": (lambda m: m.jit(lambda x: x)),
    "vmap": (lambda m: m.vmap(lambda x: x)),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_jax_array_object_as_an_argument_raises_jaxs_error(name):
    with pytest.raises(ValueError) as want:
        TRANSFORMS[name](jax)(_Convertible())
    with pytest.raises(ValueError) as got:
        TRANSFORMS[name](tg)(_Convertible())
    assert str(got.value).startswith(str(want.value).rstrip("."))
    assert "_Convertible" in str(got.value)


def test_explicit_conversion_still_honours_it():
    np.testing.assert_array_equal(tnp.asarray(_Convertible()), np.ones(2))
    np.testing.assert_array_equal(tg.grad(lambda x: tnp.sum(tnp.asarray(x) ** 2))(np.ones(2)),
                                  2 * np.ones(2))
