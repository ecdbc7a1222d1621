"""Differential fuzzing of linear algebra against JAX 0.10.2 (x64): ``tnp.linalg`` and
``tangentia.scipy.linalg`` on generated (stacks of) matrices, real and complex; values eagerly
and under ``jit``, derivatives under ``grad``/``jvp``/``vmap``/``jit``, at singular matrices and
empty shapes too.

Decompositions that are unique only up to signs (``qr``, ``eigh``'s vectors, ``svd``) are compared
through what is unique: ``q @ r``, ``|r|``, ``v diag(w) v^H``, the singular values.

Deliberate differences (not compared): a singular matrix to ``inv``/``solve``, a matrix that is not
positive definite to ``cholesky`` and a NaN matrix to the SVD routines raise ``LinAlgError`` (NumPy's
behaviour), where JAX returns infinities or NaNs; ``scipy.linalg.cholesky``'s gradient is the
derivative of the function it computes (it reads one triangle), JAX's treats the tangent as
symmetric (finite differences agree with ours).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import tangentia as tg
import tangentia.numpy as tnp
import tangentia.scipy.linalg as tsl
from _fuzz_jax_common import FUZZ, assert_same, run

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy
jsl = pytest.importorskip("jax.scipy.linalg")


def _matrix(seed: int, shape: tuple[int, ...], dtype: Any, kind: str) -> np.ndarray:
    """A well-conditioned ``general`` matrix, a symmetric positive definite ``spd`` one, or a
    ``tall`` one (two more rows than columns)."""
    rng = np.random.default_rng(seed)
    *batch, n = shape
    rows = n + 2 if kind == "tall" else n
    a = rng.standard_normal((*batch, rows, n))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(a.shape)
    if kind == "spd":
        a = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)
    elif kind == "general":
        a = a + 2 * n * np.eye(n)
    return a.astype(dtype)


def _gram(np_: Any, v: Any, w: Any) -> Any:
    """``v diag(w) v^H``: unique even where the vectors' signs are not."""
    return np_.matmul(v * w[..., None, :], np_.conj(np_.swapaxes(v, -1, -2)))


def _programs(np_: Any, sl: Any) -> dict[str, tuple[str, Callable[..., Any]]]:
    """name -> (matrix kind, function of the matrix and a right-hand side)"""
    la = np_.linalg
    return {
        "det": ("general", lambda a, b: la.det(a)),
        "slogdet": ("general", lambda a, b: tuple(la.slogdet(a))),
        "inv": ("general", lambda a, b: la.inv(a)),
        "solve": ("general", lambda a, b: la.solve(a, b)),
        "cholesky": ("spd", lambda a, b: la.cholesky(a)),
        "eigvalsh": ("spd", lambda a, b: la.eigvalsh(a)),
        "eigh": ("spd", lambda a, b: _gram(np_, *la.eigh(a)[::-1])),
        "sl.eigh": ("spd", lambda a, b: _gram(np_, *sl.eigh(a)[::-1])),
        "svdvals": ("general", lambda a, b: la.svd(a, compute_uv=False)),
        "qr": ("general", lambda a, b: (np_.matmul(*la.qr(a)), np_.abs(la.qr(a)[1]))),
        "pinv": ("tall", lambda a, b: la.pinv(a)),
        "matrix_power": ("general", lambda a, b: (la.matrix_power(a, 3), la.matrix_power(a, -2))),
        "expm": ("general", lambda a, b: sl.expm(a * 0.3)),
        "solve_triangular": ("general", lambda a, b: sl.solve_triangular(a, b, lower=True,
                                                                         trans=1)),
        "cho_solve": ("spd", lambda a, b: sl.cho_solve(sl.cho_factor(a), b)),
        "lu_solve": ("general", lambda a, b: sl.lu_solve(sl.lu_factor(a), b)),
        "lu": ("general", lambda a, b: sl.lu(a)),
        "norm": ("general", lambda a, b: (la.norm(a, axis=(-2, -1)), la.norm(a, 2, axis=(-2, -1)),
                                          la.norm(a, "nuc", axis=(-2, -1)))),
        "cond": ("general", lambda a, b: la.cond(a)),
    }


OURS, THEIRS = _programs(tnp, tsl), _programs(jnp, jsl)
# no batched matrices in JAX's scipy.linalg.lu (its unpacking fails); 2-D only for it
_TWO_D_ONLY = {"lu"}


def _loss(np_: Any, f: Callable[..., Any]) -> Callable[..., Any]:
    """A real scalar of all of ``f``'s outputs (weights break symmetries between entries)."""
    def loss(a: Any, b: Any) -> Any:
        total = 0.0
        for k, v in enumerate(tg.tree_util.tree_leaves(f(a, b)) if np_ is tnp
                              else jax.tree_util.tree_leaves(f(a, b))):
            w = np.arange(1, np.size(v) + 1, dtype=float).reshape(np.shape(v)) / (k + 1)
            total = total + np_.sum(np_.sin(np_.real(v)) * w)
        return total
    return loss


@FUZZ
@given(name=st.sampled_from(sorted(OURS)), seed=st.integers(0, 2 ** 16), n=st.integers(1, 3),
       batch=st.sampled_from([(), (2,)]), complex_=st.booleans())
@example(name="lu", seed=0, n=3, batch=(), complex_=True)  # P was complex (JAX's, SciPy's: real)
def test_values(name: str, seed: int, n: int, batch: tuple[int, ...], complex_: bool) -> None:
    """Values eagerly and under jit equal JAX's."""
    kind, f = OURS[name]
    if name in _TWO_D_ONLY:
        batch = ()
    a = _matrix(seed, (*batch, n), np.complex128 if complex_ else np.float64, kind)
    b = _matrix(seed + 1, (*batch, n), a.dtype, "tall")[..., :n, :2]
    want = run(THEIRS[name][1], a, b)
    tol = 1e-9 if name not in ("expm", "cond") else 1e-8
    assert_same(name, run(f, a, b), want, rtol=tol, atol=1e-12)
    assert_same(f"jit {name}", run(tg.jit(f), a, b), want, rtol=tol, atol=1e-12)


_REAL_GRADS = sorted(set(OURS) - {"lu"})  # lu's factors have kinks at pivot changes


def sym(grads: Any, kind: str) -> Any:
    """For a symmetric matrix argument, the gradient's symmetric part: scipy.linalg's cholesky
    reads one triangle and its gradient lies there, JAX's is spread over both (see above)."""
    if kind != "spd" or isinstance(grads, Exception):
        return grads
    g = np.asarray(grads[0])
    return (g + np.swapaxes(g, -1, -2)) / 2, *grads[1:]


@settings(FUZZ, max_examples=max(4, FUZZ.max_examples // 2))  # JAX compiles each grad (~1 s)
@given(name=st.sampled_from(_REAL_GRADS), seed=st.integers(0, 2 ** 16), n=st.integers(1, 3))
def test_derivatives(name: str, seed: int, n: int) -> None:
    """grad (eager and jit), vmap of grad over a stack, and jvp (the directional derivative of a
    scalar: JAX's gradient dotted with the direction) equal JAX's."""
    kind, f = OURS[name]
    a = _matrix(seed, (2, n), np.float64, kind)
    b = _matrix(seed + 1, (2, n), np.float64, "tall")[..., :n, :2]
    ours, theirs = _loss(tnp, f), _loss(jnp, THEIRS[name][1])
    jgrad = jax.grad(theirs, argnums=(0, 1))
    want = [sym(jgrad(a[i], b[i]), kind) for i in range(2)]  # same shapes: compiled once
    tol: dict[str, Any] = dict(rtol=1e-7, atol=1e-10)
    assert_same(f"grad {name}", sym(run(tg.grad(ours, argnums=(0, 1)), a[0], b[0]), kind),
                want[0], **tol)
    assert_same(f"jit grad {name}",
                sym(run(tg.jit(tg.grad(ours, argnums=(0, 1))), a[0], b[0]), kind), want[0], **tol)
    assert_same(f"vmap grad {name}", sym((run(tg.vmap(tg.grad(ours)), a, b),), kind)[0],
                np.stack([w[0] for w in want]), **tol)
    ta = np.sin(np.arange(a[0].size, dtype=np.float64)).reshape(a[0].shape)
    if kind == "spd":
        ta = ta + ta.T  # a symmetric direction: the functions read a symmetric matrix
    assert_same(f"jvp {name}", run(tg.jvp, lambda x: ours(x, b[0]), (a[0],), (ta,)),
                (theirs(a[0], b[0]), np.sum(want[0][0] * ta)), **tol)


# ---------------------------------------------------------------------------
# det at singular matrices: its derivative is the adjugate, finite where det(a) a^-T is 0 * inf

_SINGULAR = [
    [[1.0, 2.0], [2.0, 4.0]],                    # rank 1: one zero pivot
    [[0.0, 1.0], [0.0, 0.0]],                    # rank 1, two zero pivots
    [[0.0, 0.0], [0.0, 0.0]],                    # adjugate 0
    [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]],
    [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]],   # nilpotent: three zero pivots
    [[0.0, 1.0, 5.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]],
    [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]],
    [[0.0]],
]


@pytest.mark.parametrize("rows", _SINGULAR, ids=[str(i) for i in range(len(_SINGULAR))])
def test_det_derivative_at_singular_matrices(rows: list) -> None:
    """grad(det) at a singular matrix was NaN everywhere (det(a) tr(a^-1 da) = 0 * inf); it is
    the transposed adjugate, as JAX's, eagerly, under jit, vmap and jvp."""
    a = np.array(rows)
    want = jax.grad(jnp.linalg.det)(a)
    assert_same("grad", tg.grad(tnp.linalg.det)(a), want, atol=1e-12)
    assert_same("jit grad", tg.jit(tg.grad(tnp.linalg.det))(a), want, atol=1e-12)
    stack = np.stack([a, a + np.eye(len(a)), a.T])
    assert_same("vmap grad", tg.vmap(tg.grad(tnp.linalg.det))(stack),
                jax.vmap(jax.grad(jnp.linalg.det))(stack), atol=1e-12)
    t = np.cos(np.arange(a.size, dtype=np.float64)).reshape(a.shape)
    assert_same("jvp", tg.jvp(tnp.linalg.det, (a,), (t,)), jax.jvp(jnp.linalg.det, (a,), (t,)),
                atol=1e-12)


def test_det_derivative_complex_singular() -> None:
    a = np.array([[1 + 1j, 2.0], [2 + 2j, 4.0]])
    t = np.array([[0.5, 1j], [-1.0, 2 - 1j]])
    assert_same("jvp", tg.jvp(tnp.linalg.det, (a,), (t,)), jax.jvp(jnp.linalg.det, (a,), (t,)),
                atol=1e-12)


# ---------------------------------------------------------------------------
# shapes and dtypes at the edges


_EMPTY = [(0, 0), (2, 0), (0, 2), (3, 0, 0)]


@pytest.mark.parametrize("shape", _EMPTY, ids=str)
def test_empty_matrices(shape: tuple[int, ...]) -> None:
    """pinv, lstsq and scipy's lu of empty matrices return empty results, as JAX's (they raised
    from a max or an index of no singular values, and from a reshape of no pivots)."""
    a = np.zeros(shape)
    assert_same("pinv", run(tnp.linalg.pinv, a), jnp.linalg.pinv(a))
    assert_same("jit pinv", run(tg.jit(tnp.linalg.pinv), a), jnp.linalg.pinv(a))
    if len(shape) == 2:
        b = np.ones((shape[0], 1))
        assert_same("lstsq", run(tnp.linalg.lstsq, a, b), jnp.linalg.lstsq(a, b))
        assert_same("lu", run(tsl.lu, a), jsl.lu(a))


@pytest.mark.parametrize("p", [0, 1, 3])
def test_matrix_power_of_integers_stays_integer(p: int) -> None:
    """An integer matrix to a non-negative power keeps its dtype (it became float64)."""
    a = np.array([[2, 1], [1, 3]])
    assert_same("matrix_power", tnp.linalg.matrix_power(a, p), jnp.linalg.matrix_power(a, p))
    assert_same("negative", tnp.linalg.matrix_power(a, -2), jnp.linalg.matrix_power(a, -2))


def test_trace_of_a_vector_is_jax_error() -> None:
    with pytest.raises(ValueError, match="^axis -2 is out of bounds for array of dimension 1"):
        tnp.linalg.trace(np.ones(3))


def test_scipy_eigh_symmetrizes_as_jax() -> None:
    """scipy.linalg.eigh reads (a + a^H) / 2, as JAX's: a NaN in the upper triangle gives NaN
    (it was ignored), a non-Hermitian matrix JAX's eigenvalues, and the gradient is symmetric
    (it was lower triangular)."""
    nan_upper = np.array([[1.0, np.nan], [0.0, 1.0]])
    assert_same("nan", tsl.eigh(nan_upper)[0], jsl.eigh(nan_upper)[0])
    c = np.array([[1 + 2j, 0.5], [-1j, 3.0]])
    assert_same("complex", tsl.eigh(c, eigvals_only=True), jsl.eigh(c, eigvals_only=True))
    s = np.array([[2.0, 1.0], [1.0, 3.0]])
    assert_same("grad", tg.grad(lambda a: tsl.eigh(a)[0][-1])(s),
                jax.grad(lambda a: jsl.eigh(a)[0][-1])(s), rtol=1e-9)
