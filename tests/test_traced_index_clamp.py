"""An index whose value is traced (under jit, in a loop's or a branch's body) clamps an
out-of-bounds entry into its axis, as JAX's gather does: libraries written for JAX read one
past the end and discard the value (diffrax's saved times).  An index known eagerly, or
under eager grad and vmap, raises NumPy's IndexError (tests/test_messages.py)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tangentia as tg
import tangentia.experimental.checkify as tck
import tangentia.numpy as tnp
from tangentia import lax
from _numba_util import compile_numba, program

jax.config.update("jax_enable_x64", True)

A = np.arange(12.0).reshape(3, 4)
X = np.arange(4.0)

# (name, f(lib, np) -> function, args): each reads out of bounds with a traced index
CASES = [
    ("scalar past the end", lambda L, N: lambda a, i: a[i], (X, 4)),
    ("scalar far negative", lambda L, N: lambda a, i: a[i], (X, -7)),
    ("negative in range", lambda L, N: lambda a, i: a[i], (X, -1)),
    ("rows", lambda L, N: lambda a, i: a[i], (A, np.array([5, -9, 1]))),
    ("columns", lambda L, N: lambda a, i: a[:, i], (A, np.array([7, -1]))),
    ("two arrays", lambda L, N: lambda a, i, j: a[i, j], (A, np.array([5, -9]), np.array([-1, 9]))),
    ("int and array", lambda L, N: lambda a, i: a[1, i], (A, 6)),
    ("vmapped index", lambda L, N: L.vmap(lambda a, i: a[i], (None, 0)), (A, np.array([5, -9]))),
    ("vmapped array", lambda L, N: L.vmap(lambda a, i: a[i], (0, None)), (A, 9)),
    ("in a loop", lambda L, N: lambda a, i: L.lax.fori_loop(
        0, 3, lambda k, c: c + a[i + k], 0.0), (X, 2)),
    ("both branches", lambda L, N: lambda a, i: L.vmap(
        lambda j: L.lax.cond(j < 4, lambda: a[j], lambda: -1.0))(i), (X, np.array([2, 4]))),
]


@pytest.mark.parametrize("name,make,args", CASES, ids=[c[0] for c in CASES])
def test_traced_out_of_bounds_index_clamps_as_jax(name, make, args):
    want = jax.jit(make(jax, jnp))(*args)
    got = tg.jit(make(tg, tnp))(*args)
    np.testing.assert_array_equal(got, want)


def test_numba_backend_clamps_as_the_numpy_backend():
    # one program: a scalar read (the generated code's check) and an array read (the kernel)
    def f(a, x, i, j):
        return a[i], x[j], a[1, j]
    args = (A, X, np.int64(5), np.array([7, -9, 2]))
    want = tg.jit(f)(*args)
    jaxpr, full = program(f, *args)
    got = compile_numba(jaxpr)(*full)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(want[0], A[2])
    np.testing.assert_array_equal(want[1], [3.0, 0.0, 2.0])


def test_gradient_goes_to_the_element_read():
    # the derivative of the value read (JAX 0.10.2 drops it: its transpose scatters the
    # cotangent with the index unclamped, out of bounds, so the element read gets none)
    g = tg.jit(tg.grad(lambda a, i: (a[i] ** 2).sum()))(A, np.array([5, 0]))
    want = np.zeros_like(A)
    want[2] = 2 * A[2]
    want[0] = 2 * A[0]
    np.testing.assert_array_equal(g, want)


def test_diffrax_reads_one_past_the_end_and_discards_it():
    # a while loop saving at times ts[i], reading ts[i] on its last pass with i == len(ts)
    def solve(lib, np_, ts):
        def body(c):
            i, acc = c
            t = ts[i]
            return i + 1, np_.where(i < ts.shape[0], acc + t, acc)
        return lib.lax.while_loop(lambda c: c[0] <= ts.shape[0], body, (0, 0.0))[1]
    ts = np.linspace(0.0, 1.0, 4)
    got = tg.jit(lambda t: solve(tg, tnp, t))(ts)
    want = jax.jit(lambda t: solve(jax, jnp, t))(ts)
    assert float(got) == float(want) == 2.0


def test_checkify_still_reports_the_index_and_returns_jaxs_value():
    f = lambda lib: lib.jit(lambda x, i: x[i] * 2)  # noqa: E731
    err, out = tck.checkify(f(tg), errors=tck.index_checks)(tnp.arange(1.0, 4.0), -7)
    assert err.get() == ("out-of-bounds indexing for array of shape (3,): index -4 is out of "
                         "bounds for axis 0 with size 3. ")
    assert float(out) == 2.0    # JAX's: -7 counts from the end to -4, clamped to 0
    err, out = tck.checkify(f(tg), errors=tck.index_checks)(tnp.arange(1.0, 4.0), 2)
    assert err.get() is None and float(out) == 6.0


def test_known_indices_still_raise():
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 4"):
        tg.jit(lambda a: a[7])(X)
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 4"):
        tg.grad(lambda a, i: a[i])(X, 7)
