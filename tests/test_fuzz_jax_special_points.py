"""Values and derivatives at special points (zeros, ties, empty axes) against JAX 0.10.2 (x64),
found by session 17's probe of reductions and norms (1,540 cases: max/min/sort/prod/cumprod,
every ``norm`` order, std/var/ptp/median, the nan-reductions, clip, quantiles, logsumexp with
``b`` and ``return_sign``, on arrays with ties, zeros, NaN and infinities; value, grad, jvp and
the numba backend's jit(grad)), and of ``tangentia.scipy.special`` at NaN, infinite and huge
arguments (a probe for hangs: 71 functions, 12 values per argument, the calls that did not
end in seconds retried in child processes).  Each test here failed
before its fix.
"""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
import tangentia.scipy.special as tsp
from _fuzz_jax_common import assert_same, run

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

_NORMS = [(np.inf, None, (3,)), (np.inf, 1, (2, 3)), (1, None, (2, 3)), (np.inf, None, (2, 3)),
          (2, None, (2, 3))]


@pytest.mark.parametrize("ord_, axis, shape", _NORMS)
def test_max_norms_at_zero_and_of_empty_arrays_as_jax(ord_, axis, shape) -> None:
    """The norms that are a maximum (vector inf; matrix 1, inf and 2) take it with JAX's
    ``initial=0``: the norm of an empty vector or matrix is 0 (ours raised 'zero-size array to
    reduction operation max'), and at a zero argument the tie with that 0 takes half the
    cotangent (ours: all of it, so grad of norm(zeros((2, 3)), 1) was 1/3 per entry, JAX 1/6)."""
    def ours(v):
        return tnp.linalg.norm(v, ord=ord_, axis=axis)

    def theirs(v):
        return jnp.linalg.norm(v, ord=ord_, axis=axis)

    zero = np.zeros(shape)
    mixed = np.zeros(shape)
    mixed.ravel()[-1] = -1.5   # a row/column at zero next to one that is not
    for name, x in (("zeros", zero), ("mixed", mixed)):
        want = np.asarray(jax.jacrev(theirs)(jnp.asarray(x)))
        assert_same(f"jacrev {name}", run(tg.jacrev(ours), x), want)
        if name == "mixed":   # one compiled program per case (the numba backend)
            assert_same(f"jit(jacrev) numba {name}",
                        run(tg.jit(tg.jacrev(ours), backend="numba"), x), want)
        t = np.ones(shape)
        assert_same(f"jvp {name}", run(lambda v: tg.jvp(ours, (v,), (t,))[1], x),
                    np.asarray(jax.jvp(theirs, (jnp.asarray(x),), (jnp.asarray(t),))[1]))
    empty = np.zeros(tuple(0 if i == 0 else n for i, n in enumerate(shape)))
    assert_same("empty", run(ours, empty), np.asarray(theirs(jnp.asarray(empty))))
    assert_same("jit empty", run(tg.jit(ours), empty), np.asarray(theirs(jnp.asarray(empty))))


# (a, b, x) where SciPy's hyp1f1 ran for minutes or longer (its series takes ~|x| terms:
# 1.2 s at x = 1e12), or crashed (a, b = 1e300, x = -inf), and what the function is there
_HYP1F1_ENDS = [((2.5, 1.0, 1e17), np.inf), ((2.5, 1.0, np.inf), np.inf),
                ((1e-300, 1e-300, 1e17), np.inf), ((2.5, 1e-300, 1e300), np.inf),
                ((-2.5, 1.0, 1e17), -np.inf), ((0.5, 1e16, 1e17), np.nan),
                ((1e12, 1e12, 1e12), np.nan), ((np.inf, np.inf, -1e17), np.nan),
                ((-1e300, -np.inf, -np.inf), np.nan), ((1e300, 1e300, -np.inf), np.nan)]


def test_hyp1f1_at_huge_arguments_ends_with_the_overflow() -> None:
    """hyp1f1 where SciPy's series would not end: +-inf where e^x x^(a - b) Gamma(b)/Gamma(a)
    overflows (JAX's inf), NaN where the parameters are too large to tell; its derivative
    in x, a/b 1F1(a+1; b+1; x), the same; eagerly, batched, and on the numba backend (one
    program).  The values SciPy gives quickly (polynomials, x far below 0, moderate x) are
    SciPy's bit for bit."""
    import scipy.special as sc
    a, b, x = (np.array(v) for v in zip(*(args for args, _ in _HYP1F1_ENDS)))
    want = np.array([w for _, w in _HYP1F1_ENDS])
    with np.errstate(all="ignore"):
        assert_same("hyp1f1", run(tsp.hyp1f1, a, b, x), want, rtol=0)
        assert_same("vmap grad", run(tg.vmap(tg.grad(tsp.hyp1f1, 2)), a, b, x), want, rtol=0)
        both = tg.jit(lambda a, b, x: (tsp.hyp1f1(a, b, x), tg.vmap(tg.grad(tsp.hyp1f1, 2))(a, b, x)),
                      backend="numba")
        assert_same("numba", run(both, a, b, x), (want, want), rtol=0)
        theirs = np.asarray(jax.scipy.special.hyp1f1(a[:4], b[:4], x[:4]))
        assert_same("JAX", theirs, want[:4], rtol=0)   # (JAX agrees where it overflows)
        # unchanged where SciPy ends: a polynomial, x far below 0, moderate and 0-d values
        a2 = np.array([-3.0, 2.5, 2.5, 1.0, -1000.0, 2.5, 0.5])
        b2 = np.array([2.0, 1.0, -2.0, 1e12, 2.0, 1.0, 3.0])
        x2 = np.array([1e17, -1e17, 1e17, 1e8, 1e17, 3.0, -np.inf])
        assert_same("SciPy's", run(tsp.hyp1f1, a2, b2, x2), sc.hyp1f1(a2, b2, x2), rtol=0)
        assert_same("0-d", run(tsp.hyp1f1, 2.5, 1.0, 3.0), sc.hyp1f1(2.5, 1.0, 3.0), rtol=0)
        d = run(tg.vmap(tg.grad(tsp.hyp1f1, 2)), a2, b2, x2)
        assert_same("d/dx", d, a2 / b2 * sc.hyp1f1(a2 + 1, b2 + 1, x2), rtol=0)
