"""Linear algebra: ``tangentia.numpy.linalg`` and ``tangentia.scipy.linalg``.

For each case (a function of float64 arrays, its NumPy/SciPy reference, and
well-conditioned inputs) the table tests check:

* the eager value against NumPy/SciPy,
* JVP and VJP against finite differences (``check_grads``, order 2),
* ``jit(f)`` against the reference,
* ``vmap(f)`` against a Python loop, and stacked (batched) inputs,

Targeted tests then check the shared-work rules (``solve`` factors once in
reverse mode; ``eigvalsh`` / ``svd(compute_uv=False)`` compute vectors only
under differentiation; ``expm`` uses the Fréchet derivative), transformation
orders (jit of grad, vmap of grad, grad of vmap, ...), ``norm``'s orders, and
error messages.  Functions whose outputs have a sign freedom (eigenvectors,
singular vectors) are tested through sign-normalized outputs.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.numpy import linalg as L
from tangentia.primitives import linalg as P
from tangentia.scipy import linalg as SL
from tangentia.test_util import check_grads

RTOL = 1e-10
ATOL = 1e-10


def _rng(seed):
    return np.random.default_rng(seed)


def _general(seed, n, batch=()):
    """A well-conditioned general square matrix (or stack)."""
    return _rng(seed).standard_normal(batch + (n, n)) + 3.0 * np.eye(n)


def _spd(seed, n, batch=()):
    x = _rng(seed).standard_normal(batch + (n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def _sym(seed, n, batch=()):
    x = _rng(seed).standard_normal(batch + (n, n))
    return x + np.swapaxes(x, -1, -2)


def _normal(seed, shape):
    return _rng(seed).standard_normal(shape)


def _tri(seed, n, lower, batch=()):
    x = _rng(seed).standard_normal(batch + (n, n))
    x = np.tril(x) if lower else np.triu(x)
    return x + 3.0 * np.eye(n) * np.sign(np.diagonal(x, 0, -2, -1))[..., None, :]


def _signfix(v):
    """Fix the sign freedom of the columns of ``v`` (tangentia or NumPy)."""
    mod = tnp if isinstance(v, tg.core.Tracer) else np
    return v * mod.sign(v[..., 0:1, :])


def _np_signfix(v):
    return v * np.sign(v[..., 0:1, :])


def _assert_close(got, want, rtol=RTOL, atol=ATOL):
    gl, _ = tg.tree_util.tree_flatten(got)
    wl, _ = tg.tree_util.tree_flatten(want)
    assert len(gl) == len(wl)
    for g, w in zip(gl, wl):
        assert isinstance(g, np.ndarray), type(g)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------
# The table: name -> (tangentia fn, reference fn, args builder)

A4 = _general(0, 4)
S4 = _spd(1, 4)
B4 = _normal(2, (4,))
M42 = _normal(3, (4, 2))
T53 = _normal(4, (5, 3))
W35 = _normal(5, (3, 5))
E4 = _normal(6, (4, 4))
L4 = _tri(7, 4, True)
U4 = _tri(8, 4, False)


def _lu_ref(a):
    return sla.lu_factor(a)[0]


CASES = {
    # numpy.linalg
    "solve_vec": (L.solve, np.linalg.solve, (A4, B4)),
    "solve_mat": (L.solve, np.linalg.solve, (A4, M42)),
    "inv": (L.inv, np.linalg.inv, (A4,)),
    "det": (L.det, np.linalg.det, (A4,)),
    "slogdet": (lambda a: tuple(L.slogdet(a)), lambda a: tuple(np.linalg.slogdet(a)), (A4,)),
    "cholesky": (L.cholesky, np.linalg.cholesky, (S4,)),
    "cholesky_upper": (lambda a: L.cholesky(a, upper=True),
                       lambda a: np.linalg.cholesky(a, upper=True), (S4,)),
    "eigh_values": (lambda a: L.eigh(a)[0], lambda a: np.linalg.eigh(a)[0], (S4,)),
    "eigh_vectors": (lambda a: _signfix(L.eigh(a)[1]),
                     lambda a: _np_signfix(np.linalg.eigh(a)[1]), (_sym(9, 4),)),
    "eigh_upper_nosym": (lambda a: _signfix(L.eigh(a, UPLO="U", symmetrize_input=False)[1]),
                         lambda a: _np_signfix(np.linalg.eigh(a, UPLO="U")[1]),
                         (_normal(10, (4, 4)),)),
    "eigvalsh": (L.eigvalsh, np.linalg.eigvalsh, (_sym(11, 4),)),
    "qr_square": (lambda a: tuple(L.qr(a)), lambda a: tuple(np.linalg.qr(a)), (A4,)),
    "qr_tall": (lambda a: tuple(L.qr(a)), lambda a: tuple(np.linalg.qr(a)), (T53,)),
    "qr_wide": (lambda a: tuple(L.qr(a)), lambda a: tuple(np.linalg.qr(a)), (W35,)),
    "qr_complete_square": (lambda a: tuple(L.qr(a, mode="complete")),
                           lambda a: tuple(np.linalg.qr(a, mode="complete")), (A4,)),
    "qr_r": (lambda a: L.qr(a, mode="r"), lambda a: np.linalg.qr(a, mode="r"), (T53,)),
    "svd_values": (lambda a: L.svd(a, compute_uv=False),
                   lambda a: np.linalg.svd(a, compute_uv=False), (T53,)),
    "svd_tall": (lambda a: _svd_fixed(L.svd(a, full_matrices=False)),
                 lambda a: _svd_fixed(np.linalg.svd(a, full_matrices=False)), (T53,)),
    "svd_wide": (lambda a: _svd_fixed(L.svd(a, full_matrices=False)),
                 lambda a: _svd_fixed(np.linalg.svd(a, full_matrices=False)), (W35,)),
    "svd_square_full": (lambda a: _svd_fixed(L.svd(a)), lambda a: _svd_fixed(np.linalg.svd(a)),
                        (A4,)),
    "svdvals": (L.svdvals, lambda a: np.linalg.svd(a, compute_uv=False), (W35,)),
    "matrix_power": (lambda a: L.matrix_power(a, 3), lambda a: np.linalg.matrix_power(a, 3),
                     (A4 / 3,)),
    # scipy.linalg
    "sp_solve": (SL.solve, sla.solve, (A4, M42)),
    "sp_solve_pos": (lambda a, b: SL.solve(a, b, assume_a="pos"),
                     lambda a, b: sla.solve(a, b, assume_a="pos"), (S4, B4)),
    "sp_solve_transposed": (lambda a, b: SL.solve(a, b, transposed=True),
                            lambda a, b: sla.solve(a, b, transposed=True), (A4, B4)),
    "sp_inv": (SL.inv, sla.inv, (A4,)),
    "sp_det": (SL.det, sla.det, (A4,)),
    "sp_cholesky": (SL.cholesky, sla.cholesky, (S4,)),
    "sp_cholesky_lower": (lambda a: SL.cholesky(a, lower=True),
                          lambda a: sla.cholesky(a, lower=True), (S4,)),
    "lu_factor": (lambda a: SL.lu_factor(a)[0], _lu_ref, (A4,)),
    "lu_factor_tall": (lambda a: SL.lu_factor(a)[0], _lu_ref, (T53,)),
    "lu_factor_wide": (lambda a: SL.lu_factor(a)[0], _lu_ref, (W35,)),
    "lu": (lambda a: SL.lu(a), lambda a: sla.lu(a), (A4,)),
    "lu_permute_l": (lambda a: SL.lu(a, permute_l=True), lambda a: sla.lu(a, permute_l=True),
                     (T53,)),
    "lu_solve": (lambda lu, piv, b: SL.lu_solve((lu, piv), b),
                 lambda lu, piv, b: sla.lu_solve((lu, piv), b), "lu"),
    "lu_solve_trans": (lambda lu, piv, b: SL.lu_solve((lu, piv), b, trans=1),
                       lambda lu, piv, b: sla.lu_solve((lu, piv), b, trans=1), "lu"),
    "lu_factor_solve": (lambda a, b: SL.lu_solve(SL.lu_factor(a), b, trans="T"),
                        lambda a, b: sla.lu_solve(sla.lu_factor(a), b, trans=1), (A4, M42)),
    "cho_solve_upper": (lambda c, b: SL.cho_solve((c, False), b),
                        lambda c, b: sla.cho_solve((c, False), b), (U4, M42)),
    "cho_solve_lower": (lambda c, b: SL.cho_solve((c, True), b),
                        lambda c, b: sla.cho_solve((c, True), b), (L4, B4)),
    "cho_factor_solve": (lambda a, b: SL.cho_solve(SL.cho_factor(a), b),
                         lambda a, b: sla.cho_solve(sla.cho_factor(a), b), (S4, B4)),
    "solve_triangular": (SL.solve_triangular, sla.solve_triangular, (U4, M42)),
    "solve_triangular_lower_T": (
        lambda a, b: SL.solve_triangular(a, b, trans="T", lower=True),
        lambda a, b: sla.solve_triangular(a, b, trans="T", lower=True), (L4, B4)),
    "solve_triangular_unit": (
        lambda a, b: SL.solve_triangular(a, b, trans=1, lower=False, unit_diagonal=True),
        lambda a, b: sla.solve_triangular(a, b, trans=1, lower=False, unit_diagonal=True),
        (_normal(12, (4, 4)), M42)),
    "sp_eigh": (lambda a: _eig_fixed(SL.eigh(a)), lambda a: _eig_fixed(sla.eigh(a)), (S4,)),
    "sp_eigh_values_only": (lambda a: SL.eigh(a, eigvals_only=True),
                            lambda a: sla.eigh(a, eigvals_only=True), (S4,)),
    "sp_qr_economic": (lambda a: SL.qr(a, mode="economic"),
                       lambda a: sla.qr(a, mode="economic"), (T53,)),
    "sp_svd": (lambda a: SL.svd(a, compute_uv=False), lambda a: sla.svd(a, compute_uv=False),
               (W35,)),
    "expm": (SL.expm, sla.expm, (0.4 * E4,)),
    "expm_frechet": (lambda a, e: SL.expm_frechet(a, e),
                     lambda a, e: sla.expm_frechet(a, e), (0.4 * E4, _normal(13, (4, 4)))),
}


def _svd_fixed(usv):
    u, s, vt = usv
    fix = _signfix if isinstance(u, tg.core.Tracer) else _np_signfix
    return fix(u), s, tnp.swapaxes(fix(tnp.swapaxes(vt, -1, -2)), -1, -2)


def _eig_fixed(wv):
    w, v = wv
    fix = _signfix if isinstance(v, tg.core.Tracer) else _np_signfix
    return w, fix(v)


def _args(spec):
    if spec == "lu":
        lu, piv = sla.lu_factor(A4)
        return (lu, piv, M42)
    return spec


def _diff_args(name, args):
    """Indices of the float arguments (pivots are integers)."""
    return [i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f"]


def _partial(f, args, idx):
    """``f`` as a function of the float arguments only."""
    def g(*xs):
        full = list(args)
        for i, x in zip(idx, xs):
            full[i] = x
        return f(*full)
    return g, tuple(args[i] for i in idx)


@pytest.mark.parametrize("name", sorted(CASES))
def test_value_grads_jit(name):
    f, ref, spec = CASES[name]
    args = _args(spec)
    _assert_close(f(*args), ref(*args))
    _assert_close(tg.jit(f)(*args), ref(*args))
    g, dargs = _partial(f, args, _diff_args(name, args))
    check_grads(g, dargs, order=2, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


def _stack(args, seed):
    """Three perturbed copies of each float argument (integer ones are kept)."""
    out = []
    for i, a in enumerate(args):
        a = np.asarray(a)
        if a.dtype.kind != "f":
            out.append(np.stack([a] * 3))
            continue
        noise = 0.05 * _normal(seed + i, (3,) + a.shape)
        if a.ndim == 2 and a.shape[0] == a.shape[1] and np.allclose(a, a.T):
            noise = noise + np.swapaxes(noise, -1, -2)      # keep symmetric inputs symmetric
        if a.ndim == 2 and (np.allclose(a, np.tril(a)) or np.allclose(a, np.triu(a))):
            noise = noise * (a != 0)                        # keep triangular inputs triangular
        out.append(a + noise)
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap(name):
    f, ref, spec = CASES[name]
    args = _args(spec)
    if name.startswith("lu_solve"):
        lu, piv = zip(*[sla.lu_factor(a) for a in _stack([A4], 30)[0]])
        batched = [np.stack(lu), np.stack(piv), _stack([M42], 31)[0]]
    else:
        batched = _stack(args, 20)
    got = tg.vmap(f)(*batched)
    want_each = [f(*[b[i] for b in batched]) for i in range(3)]
    want = tg.tree_util.tree_map(lambda *xs: np.stack(xs), *want_each)
    _assert_close(got, want)
    # Stacked inputs (leading batch dimension) give the same as the loop, except
    # for SciPy's vector-vs-matrix convention for ``b``.
    ref_each = [ref(*[b[i] for b in batched]) for i in range(3)]
    ref_stacked = tg.tree_util.tree_map(lambda *xs: np.stack(xs), *ref_each)
    _assert_close(got, ref_stacked)
    # Mapping only the last argument (one matrix, many right-hand sides) and jit of vmap.
    if len(args) > 1:
        in_axes = (None,) * (len(args) - 1) + (0,)
        fixed = list(args[:-1]) + [batched[-1]]
        got = tg.jit(tg.vmap(f, in_axes=in_axes))(*fixed)
        want = [ref(*args[:-1], batched[-1][i]) for i in range(3)]
        _assert_close(got, tg.tree_util.tree_map(lambda *xs: np.stack(xs), *want))


# ---------------------------------------------------------------------------
# Batched (stacked) inputs without vmap


def test_stacked_inputs_match_numpy():
    a = _general(40, 3, (2, 5))
    s = _spd(41, 3, (2, 5))
    b = _normal(42, (2, 5, 3, 2))
    _assert_close(L.solve(a, b), np.linalg.solve(a, b))
    _assert_close(L.solve(a, _normal(43, (3,))), np.linalg.solve(a, _normal(43, (3,))))
    _assert_close(L.solve(a[0, 0], b), np.linalg.solve(a[0, 0], b))      # broadcast a
    _assert_close(L.inv(a), np.linalg.inv(a))
    _assert_close(L.det(a), np.linalg.det(a))
    _assert_close(tuple(L.slogdet(a)), tuple(np.linalg.slogdet(a)))
    _assert_close(L.cholesky(s), np.linalg.cholesky(s))
    _assert_close(L.eigvalsh(s), np.linalg.eigvalsh(s))
    _assert_close(L.svd(a, compute_uv=False), np.linalg.svd(a, compute_uv=False))
    _assert_close(SL.expm(0.3 * a), sla.expm(0.3 * a))
    lu, piv = SL.lu_factor(a)
    _assert_close(SL.lu_solve((lu, piv), b), np.linalg.solve(a, b))
    check_grads(lambda a, b: L.solve(a, b), (a, b), order=1)
    check_grads(L.det, (a,), order=1)
    check_grads(lambda s: L.eigh(s)[0], (s,), order=1)
    check_grads(lambda a: SL.expm_frechet(0.3 * a, a[::-1], compute_expm=False), (a,), order=1)


def test_integer_inputs_are_promoted():
    a = np.array([[2, 1], [1, 3]])
    b = np.array([1, 2])
    x = L.solve(a, b)
    assert x.dtype == np.float64
    _assert_close(x, np.linalg.solve(a, b))
    assert L.det(np.eye(3, dtype=np.int64)).dtype == np.float64


def test_float32_stays_float32():
    a = A4.astype(np.float32)
    assert L.solve(a, B4.astype(np.float32)).dtype == np.float32
    assert L.inv(a).dtype == np.float32
    assert tg.grad(lambda a: tnp.sum(L.inv(a)))(a).dtype == np.float32


# ---------------------------------------------------------------------------
# Shared work between the primal and the derivative


def _prims(jaxpr):
    out = []
    for e in jaxpr.eqns:
        out.append(e.prim.name)
        for v in e.params.values():
            if isinstance(v, (tg.core.Jaxpr, tg.core.ClosedJaxpr)):
                out.extend(_prims(v))
    return out


def test_solve_reverse_mode_factors_once():
    f = lambda a, b: tnp.sum(L.solve(a, b))  # noqa: E731
    jaxpr = tg.make_jaxpr(tg.grad(f, argnums=(0, 1)))(A4, B4)
    names = _prims(jaxpr)
    assert names.count("lu") == 1
    assert "solve" not in names
    assert sorted(e.params["trans"] for e in jaxpr.eqns if e.prim.name == "lu_solve") == [0, 1]
    # Undifferentiated, solve is a single LAPACK call.
    assert _prims(tg.make_jaxpr(f)(A4, B4)).count("solve") == 1


def test_solve_reverse_mode_factors_once_at_run_time(monkeypatch):
    calls = []
    real = sla.lu_factor

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(P._sla, "lu_factor", counting)
    monkeypatch.setattr(np.linalg, "solve", lambda *a, **k: pytest.fail("refactorized"))
    f = lambda a, b: tnp.sum(L.solve(a, b))  # noqa: E731
    ga, gb = tg.grad(f, argnums=(0, 1))(A4, B4)
    assert len(calls) == 1
    ainv = np.linalg.inv(A4)
    x = ainv @ B4
    g = ainv.T @ np.ones(4)
    _assert_close(gb, g)
    _assert_close(ga, -np.outer(g, x))
    calls.clear()
    tg.jit(tg.grad(f, argnums=(0, 1)))(A4, B4)
    assert len(calls) == 1


def test_inv_gradient():
    g = tg.grad(lambda a: tnp.sum(L.inv(a)))(A4)
    ainv = np.linalg.inv(A4)
    _assert_close(g, -ainv.T @ np.ones((4, 4)) @ ainv.T)


def test_det_gradient_is_cofactor():
    _assert_close(tg.grad(L.det)(A4), np.linalg.det(A4) * np.linalg.inv(A4).T)
    _assert_close(tg.grad(lambda a: L.slogdet(a)[1])(A4), np.linalg.inv(A4).T)
    assert "lu" in _prims(tg.make_jaxpr(tg.grad(L.det))(A4))


def test_eigvalsh_computes_vectors_only_when_differentiated():
    s = _sym(50, 4)
    plain = _prims(tg.make_jaxpr(L.eigvalsh)(s))
    assert "eigvalsh" in plain and "eigh" not in plain
    grad_names = _prims(tg.make_jaxpr(tg.grad(lambda a: tnp.sum(L.eigvalsh(a) ** 3)))(s))
    assert "eigh" in grad_names and "eigvalsh" not in grad_names
    # d(lambda_i)/dA = v_i v_i^T
    w, v = np.linalg.eigh(s)
    _assert_close(tg.grad(lambda a: L.eigvalsh(a)[2])(s), np.outer(v[:, 2], v[:, 2]))


def test_svd_values_compute_vectors_only_when_differentiated():
    f = lambda a: tnp.sum(L.svd(a, compute_uv=False))  # noqa: E731
    plain = [e for e in tg.make_jaxpr(f)(T53).eqns if e.prim.name == "svd"]
    assert [e.params["compute_uv"] for e in plain] == [False]
    diff = [e for e in tg.make_jaxpr(tg.grad(f))(T53).eqns if e.prim.name == "svd"]
    assert [e.params["compute_uv"] for e in diff] == [True]
    u, s, vt = np.linalg.svd(T53, full_matrices=False)
    _assert_close(tg.grad(f)(T53), u @ vt)                       # d nuclear norm


def test_expm_uses_frechet_derivative():
    a, e = 0.4 * E4, _normal(60, (4, 4))
    out, tan = tg.jvp(SL.expm, (a,), (e,))
    want_out, want_tan = sla.expm_frechet(a, e)
    _assert_close(out, want_out)
    _assert_close(tan, want_tan)
    # Reverse mode: the adjoint of L(A, .) is L(A^T, .).
    g = _normal(61, (4, 4))
    _, pullback = tg.vjp(SL.expm, a)
    _assert_close(pullback(g)[0], sla.expm_frechet(a.T, g, compute_expm=False))
    names = _prims(tg.make_jaxpr(tg.grad(lambda a: tnp.sum(SL.expm(a))))(a))
    assert "expm_frechet" in names
    # jvp under jit goes through the primitive pair, with the same result.
    out2, tan2 = tg.jit(lambda a, e: tg.jvp(SL.expm, (a,), (e,)))(a, e)
    _assert_close(out2, want_out)
    _assert_close(tan2, want_tan)


# ---------------------------------------------------------------------------
# Transformation orders


def _loss(a, b):
    x = L.solve(a, b)
    return tnp.sum(x * x) + L.slogdet(a)[1] + tnp.sum(L.eigvalsh(a @ a.T))


def test_orders_of_transformations():
    a = _general(70, 3, (4,))
    b = _normal(71, (4, 3))
    want = np.stack([tg.grad(_loss)(a[i], b[i]) for i in range(4)])
    _assert_close(tg.vmap(tg.grad(_loss))(a, b), want)
    _assert_close(tg.jit(tg.vmap(tg.grad(_loss)))(a, b), want)
    _assert_close(tg.vmap(tg.jit(tg.grad(_loss)))(a, b), want)
    _assert_close(tg.grad(lambda a, b: tnp.sum(tg.vmap(_loss)(a, b)))(a, b), want)
    _assert_close(tg.grad(lambda a, b: tnp.sum(tg.jit(tg.vmap(_loss))(a, b)))(a, b), want)
    _assert_close(tg.jit(tg.grad(_loss))(a[0], b[0]), want[0])
    _assert_close(tg.grad(tg.jit(_loss))(a[0], b[0]), want[0])
    t = _normal(72, (4, 3, 3))
    _, jv = tg.jvp(tg.vmap(_loss), (a, b), (t, np.zeros_like(b)))
    want_jv = [tg.jvp(_loss, (a[i], b[i]), (t[i], np.zeros(3)))[1] for i in range(4)]
    _assert_close(jv, np.stack(want_jv))
    _, jv2 = tg.vmap(lambda a, b, t: tg.jvp(_loss, (a, b), (t, tnp.zeros_like(b))))(a, b, t)
    _assert_close(jv2, np.stack(want_jv))


def test_hessian_of_logdet():
    a = _spd(80, 3)
    h = tg.hessian(lambda a: L.slogdet(a)[1])(a)
    ainv = np.linalg.inv(a)
    want = -np.einsum("li,jk->ijkl", ainv, ainv)        # d/dA_kl of (A^-T)_ij
    _assert_close(h, want, rtol=1e-8, atol=1e-8)


def test_jacfwd_jacrev_agree():
    f = lambda a: L.solve(a, B4) + SL.expm(0.2 * a) @ B4  # noqa: E731
    _assert_close(tg.jacfwd(f)(A4), tg.jacrev(f)(A4), rtol=1e-8, atol=1e-10)


def test_vmap_of_solve_over_b_folds_into_columns():
    bs = _normal(90, (6, 4))
    jaxpr = tg.make_jaxpr(tg.vmap(lambda b: L.solve(A4, b)))(bs)
    solves = [e for e in jaxpr.eqns if e.prim.name == "solve"]
    assert len(solves) == 1 and solves[0].inputs[0].aval.shape == (4, 4)
    _assert_close(tg.vmap(lambda b: L.solve(A4, b))(bs), np.linalg.solve(A4, bs.T).T)
    _assert_close(tg.vmap(lambda b: L.solve(A4, b), in_axes=1, out_axes=1)(bs.T),
                  np.linalg.solve(A4, bs.T))


def test_vmap_axes_and_nested_vmap():
    a = _general(93, 3, (2, 4))
    b = _normal(94, (2, 4, 3))
    want = np.linalg.solve(a, b[..., None])[..., 0]
    _assert_close(tg.vmap(tg.vmap(L.solve))(a, b), want)
    _assert_close(tg.vmap(L.inv, in_axes=2, out_axes=1)(np.moveaxis(a[0], 0, 2)),
                  np.moveaxis(np.linalg.inv(a[0]), 0, 1))
    # One matrix against a batch of vectors, and a batch of matrices against one vector.
    got = tg.vmap(tg.vmap(L.solve, in_axes=(None, 0)), in_axes=(0, None))(a[:, 0], b[0])
    want = np.stack([[np.linalg.solve(a[i, 0], b[0, j]) for j in range(4)] for i in range(2)])
    _assert_close(got, want)


def test_vmap_of_lu_over_many_small_matrices():
    a = _normal(95, (40, 3, 3))
    lu, piv, perm = tg.vmap(lambda x: P.lu_p.bind(x))(a)
    for i in range(40):
        l_, u_ = np.tril(lu[i], -1) + np.eye(3), np.triu(lu[i])
        _assert_close(a[i][perm[i]], l_ @ u_)
    _assert_close(tg.vmap(lambda x: SL.lu(x)[0] @ SL.lu(x)[1] @ SL.lu(x)[2])(a), a)


def test_vmap_of_grad_of_lu_solve_trans_with_batched_factors():
    a = _general(91, 3, (2,))
    b = _normal(92, (2, 3))

    def f(a, b):
        lu, piv = SL.lu_factor(a)
        return tnp.sum(SL.lu_solve((lu, piv), b, trans=1) ** 2)

    got = tg.vmap(tg.grad(f))(a, b)
    _assert_close(got, np.stack([tg.grad(f)(a[i], b[i]) for i in range(2)]))
    check_grads(f, (a[0], b[0]), order=2)


# ---------------------------------------------------------------------------
# norm


NORM_CASES = [
    ((5,), None, None), ((5,), 2, None), ((5,), 1, None), ((5,), np.inf, None),
    ((5,), -np.inf, None), ((5,), 3, None), ((5,), 0.5, None), ((5,), -2, None),
    ((3, 4), None, None), ((3, 4), "fro", None), ((3, 4), "nuc", None), ((3, 4), 1, None),
    ((3, 4), -1, None), ((3, 4), np.inf, None), ((3, 4), -np.inf, None), ((3, 4), 2, None),
    ((3, 4), -2, None), ((2, 3, 4), None, 1), ((2, 3, 4), 3, -1), ((2, 3, 4), 1, (2, 0)),
    ((2, 3, 4), "nuc", (0, 2)), ((2, 3, 4), np.inf, (1, 2)), ((2, 3, 4), 2, (2, 1)),
    ((2, 3, 4), None, None),
]


@pytest.mark.parametrize("shape,ord,axis", NORM_CASES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_norm(shape, ord, axis, keepdims):
    x = _normal(100, shape) + 0.1 * np.sign(_normal(101, shape))
    f = lambda x: L.norm(x, ord=ord, axis=axis, keepdims=keepdims)  # noqa: E731
    want = np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)
    _assert_close(f(x), want)
    _assert_close(tg.jit(f)(x), want)
    if not keepdims:
        check_grads(f, (x,), order=1, atol=1e-5, rtol=1e-5)
        xs = np.stack([x, 2 * x])
        _assert_close(tg.vmap(f)(xs), np.stack([want, f(2 * x)]))


def test_norm_vector_zero_order_and_scipy_alias():
    x = np.array([0.0, 2.0, 0.0, -1.0])
    _assert_close(L.norm(x, 0), np.linalg.norm(x, 0))
    _assert_close(SL.norm(A4, "fro"), sla.norm(A4, "fro"))
    _assert_close(L.vector_norm(_normal(3, (2, 3)), axis=(0, 1)),
                  np.linalg.vector_norm(_normal(3, (2, 3)), axis=(0, 1)))
    _assert_close(L.matrix_norm(A4, ord="nuc"), np.linalg.matrix_norm(A4, ord="nuc"))


def test_norm_errors():
    with pytest.raises(ValueError, match="norm"):
        L.norm(np.ones(3), "fro")
    with pytest.raises(ValueError, match="norm"):
        L.norm(np.ones((2, 2)), 3)
    with pytest.raises(ValueError, match="norm"):
        L.norm(np.ones((2, 2, 2)), 2)


# ---------------------------------------------------------------------------
# Errors name the function and the argument


@pytest.mark.parametrize("fn,name", [
    (lambda a: L.solve(a, np.ones(3)), "solve"), (L.inv, "inv"), (L.det, "det"),
    (L.slogdet, "slogdet"), (L.cholesky, "cholesky"), (L.eigh, "eigh"),
    (L.eigvalsh, "eigvalsh"), (SL.expm, "expm"), (SL.cholesky, "cholesky"),
    (lambda a: SL.solve_triangular(a, np.ones(3)), "solve_triangular"),
])
def test_non_square_errors(fn, name):
    a = np.ones((3, 4))
    with pytest.raises(L.LinAlgError, match=rf"^{name}: argument [aA] .*square.*\(3, 4\)"):
        fn(a)
    with pytest.raises(ValueError, match=rf"^{name}: argument [aA] "):  # LinAlgError is a ValueError
        tg.jit(fn)(a)
    with pytest.raises(ValueError, match=rf"^{name}: argument [aA] "):
        fn(np.ones(3))


@pytest.mark.parametrize("b_shape", [(4,), (4, 2), (2, 3, 2), (2, 4, 1)])
def test_mismatched_b_errors(b_shape):
    a = np.eye(3) if b_shape != (2, 3, 2) else np.broadcast_to(np.eye(3), (4, 3, 3))
    with pytest.raises(ValueError, match=r"^solve: (argument b|the batch dimensions)"):
        L.solve(a, np.ones(b_shape))
    with pytest.raises(ValueError, match=r"^solve: (argument b|the batch dimensions)"):
        tg.grad(lambda a, b: tnp.sum(L.solve(a, b)))(a, np.ones(b_shape))


def test_mismatched_b_errors_scipy():
    lu = sla.lu_factor(np.eye(3) + 1)
    with pytest.raises(ValueError, match=r"^lu_solve: argument b"):
        SL.lu_solve(lu, np.ones(4))
    with pytest.raises(ValueError, match=r"^cho_solve: argument b"):
        SL.cho_solve((np.eye(3), True), np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"^solve_triangular: argument b"):
        SL.solve_triangular(np.eye(3), np.ones((4, 1)))
    with pytest.raises(ValueError, match=r"^expm_frechet: argument E"):
        SL.expm_frechet(np.eye(3), np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"trans"):
        SL.solve_triangular(np.eye(3), np.ones(3), trans="X")


def test_unsupported_derivatives_raise_clearly():
    with pytest.raises(NotImplementedError, match="qr"):
        tg.jvp(lambda a: L.qr(a, mode="complete")[0], (T53,), (T53,))
    with pytest.raises(NotImplementedError, match="svd"):
        tg.grad(lambda a: tnp.sum(L.svd(a)[0]))(T53)
    # The values themselves are fine.
    _assert_close(tuple(L.qr(T53, mode="complete")), tuple(np.linalg.qr(T53, mode="complete")))
    assert L.svd(T53)[0].shape == (5, 5)


def test_results_are_namedtuples_like_numpy():
    w, v = L.eigh(S4)
    r = L.eigh(S4)
    assert r.eigenvalues is not None and r.eigenvectors.shape == (4, 4)
    assert L.qr(A4).R.shape == (4, 4)
    assert L.svd(A4).S.shape == (4,)
    assert L.slogdet(A4).logabsdet.shape == ()
    jit_r = tg.jit(L.svd)(A4)
    assert type(jit_r).__name__ == "SVDResult"
    del w, v
