"""Tests of the numba kernels (tangentia/compiler/numba_backend/kernels.py).

Every kernel is run on hypothesis-generated shapes, dtypes and params (the
linear-algebra ones on fixed cases) and compared with the NumPy implementation of
its primitive: equal dtypes and shapes, equal values (exact for data movement,
integers, permutations and random bits; rtol 1e-12 for float64 / 1e-5 for float32
where LAPACK builds or summation order differ).  Each distinct example compiles a
kernel, which numba never frees, so the example counts are small and derandomized,
and the linear-algebra kernels (compiled once per ranks and dtype, slowly: numba's
np.linalg) are compiled for few ranks and dtypes and run on several shapes each.
"""
import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tangentia as tg
import tangentia.lax as lax
import tangentia.numpy as tnp
from tangentia import core
from tangentia.compiler.numba_backend import kernels as K
from tangentia.primitives import contraction as C
from tangentia.primitives import elementwise as E
from tangentia.primitives import indexing as I
from tangentia.primitives import linalg as L
from tangentia.primitives import misc as M
from tangentia.primitives import prng as P
from tangentia.primitives import reductions as R
from tangentia.primitives import sorting as S

FEW = settings(max_examples=8, deadline=None, derandomize=True)
A = I.ARRAY
DTYPES = [np.float64, np.float32, np.int64, np.bool_]


def _eqn(prim, args, params):
    avals = [core.get_aval(np.asarray(a)) for a in args]
    out = prim.abstract_eval(*avals, **params)
    outs = list(out) if prim.multiple_results else [out]
    return core.Eqn(prim, [core.Var(a) for a in avals], [core.Var(o) for o in outs], params)


def _kernel(prim, args, params):
    kern = K.KERNELS[prim](_eqn(prim, args, params))
    assert kern is not None, f"{prim.name}: no kernel for params {params}"
    return kern


def _as_list(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _check(prim, args, params, exact=True):
    """Run the kernel of ``prim`` and its NumPy implementation; compare."""
    args = [np.asarray(a) for a in args]
    got = _kernel(prim, args, params)(*args)
    with np.errstate(all="ignore"):
        ref = prim.impl(*args, **params)
    got, ref = _as_list(got), _as_list(ref)
    assert len(got) == len(ref), f"{prim.name}: {len(got)} outputs, expected {len(ref)}"
    for g, r in zip(got, ref):
        r = np.asarray(r)
        assert isinstance(g, np.ndarray), f"{prim.name}: output is a {type(g).__name__}"
        assert g.dtype == r.dtype and g.shape == r.shape, \
            f"{prim.name}{params}: got {g.dtype}{g.shape}, expected {r.dtype}{r.shape}"
        if exact or r.dtype.kind not in "fc":
            np.testing.assert_array_equal(g, r, err_msg=f"{prim.name}{params}")
            if r.dtype.kind == "f":  # signed zeros too
                np.testing.assert_array_equal(np.signbit(g), np.signbit(r))
        else:
            tol = 1e-12 if r.dtype == np.float64 else 1e-5
            scale = max(1.0, float(np.max(np.abs(r), initial=0.0)))
            np.testing.assert_allclose(g, r, rtol=tol, atol=tol * scale,
                                       err_msg=f"{prim.name}{params}")
    return got


def _values(rng, shape, dtype, special=True):
    """Small values with ties; floats get a NaN and signed zeros sometimes."""
    v = rng.integers(-3, 4, size=shape)
    if dtype == np.bool_:
        return v > 0
    if np.dtype(dtype).kind == "f":
        v = (v + rng.random(shape).round(1)).astype(dtype)
        flat = v.reshape(-1)
        if special and flat.size >= 3:
            flat[rng.integers(flat.size)] = np.nan
            flat[rng.integers(flat.size)] = -0.0
            flat[rng.integers(flat.size)] = 0.0
        return v
    return v.astype(dtype)


seeds = st.integers(0, 2**31 - 1)
shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


# ---------------------------------------------------------------------------
# getitem / scatter


@st.composite
def index_specs(draw, shape):
    """A spec for ``shape`` and its index arrays: slices, ints, integer arrays
    (broadcast together), maybe a None and an Ellipsis."""
    rng = np.random.default_rng(draw(seeds))
    spec, arrays = [], []
    arr_shape = draw(st.sampled_from([(), (2,), (3,), (2, 1)]))
    n_used = draw(st.integers(0, len(shape)))
    for d in shape[:n_used]:
        kind = draw(st.sampled_from(["slice", "int", "array"]))
        if kind == "slice":
            start = draw(st.one_of(st.none(), st.integers(-d, d)))
            stop = draw(st.one_of(st.none(), st.integers(-d - 1, d + 1)))
            step = draw(st.sampled_from([None, 1, 2, -1, -2]))
            spec.append(slice(start, stop, step))
        elif kind == "int":
            spec.append(int(rng.integers(-d, d)))
        else:
            spec.append(A)
            arrays.append(rng.integers(-d, d, size=arr_shape))
    if draw(st.booleans()):
        spec.insert(draw(st.integers(0, len(spec))), None)
    if draw(st.booleans()) and n_used < len(shape):
        spec.insert(draw(st.integers(0, len(spec))), Ellipsis)
    return tuple(spec), arrays


@FEW
@given(st.data(), shapes, st.sampled_from(DTYPES), seeds)
def test_getitem_matches_numpy(data, shape, dtype, seed):
    x = _values(np.random.default_rng(seed), shape, dtype)
    spec, arrays = data.draw(index_specs(shape))
    _check(I.getitem_p, [x] + arrays, dict(spec=spec))


@FEW
@given(st.data(), shapes, st.sampled_from(DTYPES), st.sampled_from(["set", "add", "mul", "min", "max"]),
       seeds)
def test_scatter_matches_numpy(data, shape, dtype, mode, seed):
    rng = np.random.default_rng(seed)
    x = _values(rng, shape, dtype)
    spec, arrays = data.draw(index_specs(shape))
    idx_shape = x[I.build_index(spec, arrays)].shape
    y_shape = idx_shape[data.draw(st.integers(0, len(idx_shape))):]  # broadcast a suffix
    y = _values(rng, y_shape, dtype, special=False)
    _check(I.scatter_p, [x, y] + arrays, dict(spec=spec, mode=mode))


def test_scatter_duplicates_accumulate_in_order():
    x = np.zeros(4, np.float32)
    idx = np.array([1, 1, -3, 2, 1])
    y = np.array([0.1, 1e8, -1e8, 3.0, 0.2], np.float32)
    for mode in ["add", "set", "min", "max"]:
        _check(I.scatter_p, [x, y, idx], dict(spec=(A,), mode=mode))


def test_window_index_of_dynamic_slice():
    # lax.dynamic_slice/update_slice index with one broadcast array per axis.
    x = np.arange(30.0).reshape(5, 6)
    rows, cols = np.arange(2, 5).reshape(3, 1), np.arange(1, 3).reshape(1, 2)
    _check(I.getitem_p, [x, rows, cols], dict(spec=(A, A)))
    _check(I.scatter_p, [x, -np.ones((3, 2)), rows, cols], dict(spec=(A, A), mode="set"))
    _check(I.getitem_p, [x[:, ::2], np.array(4, np.int32)], dict(spec=(A,)))  # non-contiguous


def test_getitem_out_of_bounds_raises():
    x = np.arange(5.0)
    kern = _kernel(I.getitem_p, [x, np.array([0])], dict(spec=(A,)))
    with pytest.raises(IndexError):
        kern(x, np.array([5]))
    with pytest.raises(IndexError):
        kern(x, np.array([-6]))


def test_unsupported_cases_return_none():
    x = np.zeros((3, 2))
    assert K.KERNELS[I.scatter_p](_eqn(I.scatter_p, [x.astype(np.int64), np.ones(()), np.array([0])],
                                       dict(spec=(A,), mode="add"))) is None
    assert K.KERNELS[I.getitem_p](_eqn(I.getitem_p, [x, np.array([0])], dict(spec=(A,)))) is not None
    assert K.KERNELS[L.qr_p](_eqn(L.qr_p, [np.ones((4, 2))], dict(full_matrices=True))) is None
    assert K.KERNELS[E.integer_pow_p](_eqn(E.integer_pow_p, [x > 0], dict(y=2))) is None
    assert K.KERNELS[L.eigh_p](_eqn(L.eigh_p, [np.eye(2, dtype=np.float32)], dict(lower=True))) is None
    assert K.KERNELS[L.inv_p](_eqn(L.inv_p, [np.zeros((0, 0))], {})) is None
    assert L.expm_p not in K.KERNELS


# ---------------------------------------------------------------------------
# cumulative ops, sorting


@FEW
@given(st.sampled_from([R.cumsum_p, M.cumprod_p, M.cummax_p, M.cummin_p]), shapes,
       st.sampled_from(DTYPES + [np.int32]), st.booleans(), st.data(), seeds)
def test_cumulative_matches_numpy(prim, shape, dtype, reverse, data, seed):
    x = _values(np.random.default_rng(seed), shape, dtype)
    axis = data.draw(st.integers(0, len(shape) - 1))
    _check(prim, [x], dict(axis=axis, reverse=reverse))


@settings(max_examples=5, deadline=None, derandomize=True)
@given(shapes, st.sampled_from(DTYPES), st.booleans(), st.data(), seeds)
def test_sort_and_argsort_match_numpy(shape, dtype, descending, data, seed):
    shape = shape[:-1] + (shape[-1] * 9,)  # long enough lines to merge runs
    x = _values(np.random.default_rng(seed), shape, dtype)
    axis = data.draw(st.integers(0, len(shape) - 1))
    _check(S.sort_p, [x], dict(axis=axis))
    _check(S.argsort_p, [x], dict(axis=axis, descending=descending))


@FEW
@given(st.integers(0, 40), st.lists(st.integers(1, 3), max_size=2).map(tuple),
       st.sampled_from(["left", "right"]), st.sampled_from([np.float64, np.float32, np.int64]),
       st.booleans(), seeds)
def test_searchsorted_matches_numpy(n, v_shape, side, dtype, sort_a, seed):
    rng = np.random.default_rng(seed)
    a = _values(rng, (n,), dtype)
    if sort_a:  # an unsorted ``a`` checks that NumPy's search order is reproduced too
        a = np.sort(a)
    v = _values(rng, v_shape, np.float64 if dtype == np.int64 else dtype)
    _check(S.searchsorted_p, [a, v], dict(side=side))


# ---------------------------------------------------------------------------
# random bits, integer_pow, einsum


@FEW
@given(st.lists(st.integers(1, 3), max_size=2).map(tuple),
       st.lists(st.integers(1, 5), max_size=2).map(tuple), st.sampled_from([8, 16, 32, 64]), seeds)
def test_random_bits_match_numpy_threefry(key_batch, shape, bit_width, seed):
    key = np.random.default_rng(seed).integers(0, 2**32, size=key_batch + (2,), dtype=np.uint32)
    _check(P.random_bits_p, [key], dict(shape=shape, bit_width=bit_width))


@FEW
@given(st.lists(st.integers(1, 4), max_size=3).map(tuple), st.sampled_from([np.float64, np.float32,
                                                                          np.int64, np.int32]),
       st.integers(0, 6), seeds)
def test_integer_pow_matches_numpy(shape, dtype, y, seed):
    x = _values(np.random.default_rng(seed), shape, dtype, special=False)
    # Floats within an ulp: NumPy's power loop is not libm's pow.
    _check(E.integer_pow_p, [x], dict(y=y), exact=np.dtype(dtype).kind != "f")


def test_integer_pow_negative_float_exponent():
    x = np.array([0.5, -2.0, 3.0, 0.25])
    _check(E.integer_pow_p, [x], dict(y=-3), exact=False)


EINSUMS = ["ij,jk->ik", "ii->i", "ij->", "i,j->ij", "bij,bjk->bik", "ij,jk,kl->il", "ijk->kji",
           "ij,ij->i"]


@FEW
@given(st.sampled_from(EINSUMS), st.sampled_from([np.float64, np.float32, np.int64]),
       st.integers(1, 4), seeds)
def test_einsum_matches_numpy(subscripts, dtype, size, seed):
    rng = np.random.default_rng(seed)
    ins = subscripts.split("->")[0].split(",")
    sizes = {c: size + k % 2 for k, c in enumerate(sorted(set("".join(ins))))}
    if "ii" in subscripts:
        sizes["i"] = size
    ops = [_values(rng, tuple(sizes[c] for c in s), dtype, special=False) for s in ins]
    _check(C.einsum_p, ops, dict(subscripts=subscripts), exact=False)


# ---------------------------------------------------------------------------
# linear algebra


def _spd(rng, batch, n, dtype):
    a = rng.normal(size=batch + (n, n))
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)


# The kernels compile once per ranks and dtype (numba's np.linalg: slow, and numba never
# frees what it compiled), so each of these is compiled for two of them, the float64
# matrices that test_every_kernel_is_callable_from_njit also uses and a float32 stack,
# and run on several sizes; eigh, float64 only, also on a stack.
@pytest.mark.parametrize("batch,dtype", [((), np.float64), ((2,), np.float32)])
def test_square_matrix_kernels_match_numpy(batch, dtype):
    rng = np.random.default_rng(7)
    for n in (1, 2, 4):
        a = _spd(rng, batch, n, dtype)
        b = rng.normal(size=batch + (n, 2)).astype(dtype)
        for prim, args, params in [(L.inv_p, [a], {}), (L.det_p, [a], {}),
                                   (L.slogdet_p, [a], {}), (L.cholesky_p, [a], {}),
                                   (L.solve_p, [a, b], {})]:
            _check(prim, args, params, exact=False)
        nonsym = a + np.triu(rng.normal(size=(n, n)), 1).astype(dtype)
        for lower in (True, False):  # only the named triangle is read
            _check(L.eigvalsh_p, [nonsym], dict(lower=lower), exact=False)
            # float32: eigenvector signs differ between LAPACK builds (no kernel)
            for stack in ([nonsym, np.stack([nonsym, 2 * nonsym])] if dtype == np.float64
                          else []):
                _check(L.eigh_p, [stack], dict(lower=lower), exact=False)


# lu and svd compile once per ranks (and svd's params), so each runs on several shapes;
# qr compiles per shape.  The unbatched float64 case is what
# test_every_kernel_is_callable_from_njit uses again.
@pytest.mark.parametrize("batch,full", [((), False), ((2,), True)])
def test_factorizations_match_numpy(batch, full):
    rng = np.random.default_rng(11)  # float64 (float32: in the test above)
    for m, n in [(3, 4), (4, 3), (1, 1), (2, 2)]:
        a = rng.normal(size=batch + (m, n))
        lu = _check(L.lu_p, [a], {})  # SciPy's getrf: identical factors and pivots
        assert lu[1].dtype == np.int32
        _check(L.svd_p, [a], dict(full_matrices=full, compute_uv=True), exact=False)
        _check(L.svd_p, [a], dict(full_matrices=full, compute_uv=False), exact=False)
    a = rng.normal(size=batch + (3, 4))  # (a complete QR of a tall matrix has no kernel)
    _check(L.qr_p, [a], dict(full_matrices=full), exact=False)


@pytest.mark.parametrize("batch,lower,trans,unit", [((), True, 0, False), ((2,), False, 1, True)])
def test_triangular_and_lu_solves_match_scipy(batch, lower, trans, unit):
    dtype = np.float64
    rng = np.random.default_rng(5)
    for n in (1, 4):
        a = _spd(rng, batch, n, dtype)
        b = rng.normal(size=batch + (n, 3)).astype(dtype)
        _check(L.triangular_solve_p, [a, b], dict(lower=lower, trans=trans, unit_diagonal=unit),
               exact=False)
        lu, piv, _ = L.lu_p.impl(rng.normal(size=batch + (n, n)).astype(dtype)
                                 + 2 * np.eye(n, dtype=dtype))
        _check(L.lu_solve_p, [lu, piv, b], dict(trans=trans), exact=False)
        _check(L.lu_pivots_to_permutation_p, [piv], dict(permutation_size=n, inverse=lower))


# ---------------------------------------------------------------------------
# Protocol: kernels run inside other njit functions; names; real programs


def _njit_caller(n_kernels, arities):
    """One njit function calling ``n_kernels`` kernels (globals k0, k1, ...)
    with their arguments, returning all results (one compilation for all)."""
    args, calls, k = [], [], 0
    for j, arity in enumerate(arities):
        names = [f"a{k + t}" for t in range(arity)]
        k += arity
        args += names
        calls.append(f"k{j}({', '.join(names)})")
    return f"def caller({', '.join(args)}):\n    return ({', '.join(calls)},)\n"


def test_every_kernel_is_callable_from_njit():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 4))
    sq = _spd(rng, (), 3, np.float64)
    b = rng.normal(size=(3, 2))
    lu, piv, _ = L.lu_p.impl(sq)
    cases = [
        (I.getitem_p, [x, np.array(1)], dict(spec=(A, slice(1, None)))),
        (I.scatter_p, [x, np.array(2.0), np.array([0, 2])], dict(spec=(slice(None), A), mode="add")),
        (R.cumsum_p, [x], dict(axis=1, reverse=True)),
        (M.cumprod_p, [x], dict(axis=0, reverse=False)),
        (M.cummax_p, [x], dict(axis=1, reverse=False)),
        (M.cummin_p, [x], dict(axis=1, reverse=True)),
        (S.sort_p, [x], dict(axis=1)),
        (S.argsort_p, [x], dict(axis=0, descending=True)),
        (S.searchsorted_p, [np.sort(x[0]), x], dict(side="right")),
        (P.random_bits_p, [np.array([1, 2], np.uint32)], dict(shape=(3,), bit_width=32)),
        (P.random_gamma_p, [np.array([[1, 2], [3, 4], [5, 6]], np.uint32), np.array([0.5, 2.0, 9.0])],
         dict(log_space=False)),
        (E.integer_pow_p, [x], dict(y=3)),
        (C.einsum_p, [x, x], dict(subscripts="ij,kj->ik")),
        (L.lu_p, [sq], {}), (L.lu_pivots_to_permutation_p, [piv], dict(permutation_size=3,
                                                                       inverse=False)),
        (L.triangular_solve_p, [sq, b], dict(lower=True, trans=0, unit_diagonal=False)),
        (L.lu_solve_p, [lu, piv, b], dict(trans=1)),
        (L.solve_p, [sq, b], {}), (L.inv_p, [sq], {}), (L.det_p, [sq], {}),
        (L.slogdet_p, [sq], {}), (L.cholesky_p, [sq], {}), (L.eigh_p, [sq], dict(lower=True)),
        (L.eigvalsh_p, [sq], dict(lower=False)), (L.qr_p, [x], dict(full_matrices=False)),
        (L.svd_p, [x], dict(full_matrices=False, compute_uv=True)),
    ]
    assert {p.name for p, _, _ in cases} == set(K.kernel_names())
    kernels = {f"k{j}": _kernel(p, args, params) for j, (p, args, params) in enumerate(cases)}
    ns = dict(kernels)
    exec(_njit_caller(len(cases), [len(a) for _, a, _ in cases]), ns)
    inside = numba.njit(ns["caller"])(*[a for _, args, _ in cases for a in args])
    for j, (prim, args, params) in enumerate(cases):
        direct = _as_list(kernels[f"k{j}"](*args))
        got = _as_list(inside[j])
        assert len(got) == len(direct), prim.name
        for g, d in zip(got, direct):
            assert g.dtype == d.dtype and g.shape == d.shape, prim.name
            np.testing.assert_array_equal(g, d, err_msg=prim.name)


def test_kernel_names_and_cache():
    names = K.kernel_names()
    assert names == sorted(names)
    for name in ["getitem", "scatter", "cumsum", "sort", "argsort", "searchsorted",
                 "random_bits", "integer_pow", "einsum", "lu", "eigh", "svd"]:
        assert name in names
    x = np.arange(6.0)
    eqn = _eqn(R.cumsum_p, [x], dict(axis=0, reverse=False))
    assert K.kernel_for(eqn) is K.kernel_for(_eqn(R.cumsum_p, [x + 1], dict(axis=0, reverse=False)))


def test_kernels_on_traced_programs():
    """Run the equations of real programs (dynamic slices, .at updates,
    sorting, random numbers) with the kernels; compare with eager results."""
    def f(x, i, key):
        w = lax.dynamic_slice(x, (i, 1), (2, 3))
        y = lax.dynamic_update_slice(x, w * 2.0, (1, i))
        y = tnp.at(y)[tnp.array([0, 0, 2])].add(1.0)
        z = tnp.sort(y, axis=0) + tnp.cumsum(y, axis=1)
        return z[::-1, i], tg.random.uniform(key, (3,))

    x = np.arange(20.0).reshape(4, 5)
    args = (x, np.int64(3), tg.random.PRNGKey(3))  # the row start 3 is clamped to 2
    closed = tg.make_jaxpr(f)(*args)
    jaxpr = closed.jaxpr
    env = dict(zip(jaxpr.constvars, closed.consts))
    env.update(zip(jaxpr.invars, [np.asarray(a) for a in args]))

    def read(v):
        if isinstance(v, core.Literal):
            return np.asarray(v.val, v.aval.dtype)
        return env[v]

    used = set()
    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.inputs]
        kern = K.kernel_for(eqn)
        if kern is None:
            out = eqn.prim.impl(*ins, **eqn.params)
        else:
            used.add(eqn.prim.name)
            out = kern(*ins)
        for var, val in zip(eqn.outputs, _as_list(out) if eqn.prim.multiple_results else [out]):
            env[var] = val
    got = [read(v) for v in jaxpr.outvars]
    want = f(*args)
    assert {"getitem", "scatter", "sort", "cumsum", "random_bits"} <= used
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, np.asarray(w))
