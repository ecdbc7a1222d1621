"""Behaviour found by running more of JAX's tutorials (convolutions, external
callbacks, MAML, score matching, primitives, debugging, FAQ) unchanged on
tangentia: each test pins one difference that was fixed."""
import numpy as np

import tangentia.numpy as tnp


def test_augmented_assignment_makes_a_new_promoted_array():
    # as on a JAX array: ``x += y`` rebinds x, promotes, and leaves aliases alone
    a = tnp.zeros(3, dtype=np.float32)
    b = a
    b += np.arange(3.0)
    assert a.dtype == np.float32 and np.array_equal(a, np.zeros(3))
    assert b.dtype == np.float64 and np.array_equal(b, [0.0, 1.0, 2.0])
    m = tnp.eye(2)
    alias = m
    m @= np.array([[1.0, 2.0], [3.0, 4.0]])
    m *= 2
    assert np.array_equal(m, [[2.0, 4.0], [6.0, 8.0]])
    assert np.array_equal(alias, np.eye(2))
    c = tnp.arange(4)
    c[1] += 5  # item assignment on an eager result still writes in place
    assert np.array_equal(c, [0, 6, 2, 3])
