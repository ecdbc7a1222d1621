"""tangentia.scipy.interpolate.RegularGridInterpolator and
tangentia.scipy.cluster.vq.vq.

References: SciPy's ``RegularGridInterpolator`` (with ``bounds_error=False``
where ours has JAX's default) and ``scipy.cluster.vq.vq``, central finite
differences (``check_grads``), loops for ``vmap``, eager evaluation for ``jit``
(both backends) and JAX 0.10.2 in float64."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.cluster.vq
from hypothesis import given, settings
from hypothesis import strategies as st
import scipy.interpolate

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.scipy.cluster.vq import vq
from tangentia.scipy.interpolate import RegularGridInterpolator
from tangentia.test_util import check_grads

RNG = np.random.default_rng(3)
GRID = (np.sort(RNG.uniform(0.0, 3.0, 5)), np.array([-1.0, 0.0, 0.5, 2.0]), np.linspace(0, 1, 3))
VALUES = RNG.standard_normal((5, 4, 3, 2))           # a trailing axis interpolated jointly


def _points(m):
    """``m`` points around the grid: inside, outside, on nodes, one NaN."""
    lo = [g[0] - 0.5 for g in GRID]
    hi = [g[-1] + 0.5 for g in GRID]
    xi = RNG.uniform(lo, hi, (m, 3))
    xi[0] = [GRID[0][1], 0.5, 1.0]
    xi[1] = [GRID[0][0], GRID[1][-1], 0.25]
    xi[2, 1] = np.nan
    return xi


XI = _points(40)
INSIDE = RNG.uniform([g[0] for g in GRID], [g[-1] for g in GRID], (6, 3))


def _scipy(points, values, method="linear", fill_value=np.nan):
    return scipy.interpolate.RegularGridInterpolator(points, values, method=method,
                                                     bounds_error=False, fill_value=fill_value)


def _same(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("method", ["linear", "nearest"])
@pytest.mark.parametrize("fill_value", [np.nan, None, 1.5])
def test_values_are_scipys(method, fill_value):
    got = RegularGridInterpolator(GRID, VALUES, method=method, fill_value=fill_value)(XI)
    assert got.shape == (40, 2)
    _same(got, _scipy(GRID, VALUES, method, fill_value)(XI))


def test_descending_axes_one_point_axis_and_integer_inputs():
    flipped = (GRID[0][::-1], GRID[1], GRID[2][::-1])
    values = VALUES[::-1, :, ::-1]
    for method in ("linear", "nearest"):
        _same(RegularGridInterpolator(flipped, values, method=method, fill_value=None)(XI),
              _scipy(flipped, values, method, None)(XI))
    one = (np.array([2.0]), GRID[1])
    v = RNG.standard_normal((1, 4))
    xi = np.array([[2.0, 0.3], [2.5, 0.3], [2.0, -3.0]])
    for fill_value in (np.nan, None):
        _same(RegularGridInterpolator(one, v, fill_value=fill_value)(xi),
              _scipy(one, v, fill_value=fill_value)(xi))
    ints = (np.arange(4), np.array([0, 2, 5]))
    iv = np.arange(12).reshape(4, 3)
    got = RegularGridInterpolator(ints, iv)(np.array([[1.5, 1], [3, 4]]))
    assert got.dtype == np.float64
    _same(got, _scipy(ints, iv)(np.array([[1.5, 1], [3, 4]])))


def test_query_forms_and_shapes():
    """Points as an (..., n) array, a tuple of coordinate arrays, one 1-D
    point; a 1-D grid with a 1-D array of points; ``method`` per call."""
    interp = RegularGridInterpolator(GRID, VALUES)
    ref = _scipy(GRID, VALUES)
    pts = INSIDE.reshape(2, 3, 3)
    assert interp(pts).shape == (2, 3, 2)
    _same(interp(pts), ref(pts))
    mesh = np.meshgrid(np.linspace(0.5, 2.5, 4), [0.1, 0.7], [0.3], indexing="ij")
    _same(interp(tuple(mesh)), ref(tuple(mesh)))
    _same(interp((tuple(mesh),)), ref(tuple(mesh)))
    _same(interp(INSIDE[0]), ref(INSIDE[0]))
    _same(interp(INSIDE, method="nearest"), ref(INSIDE, method="nearest"))
    line = RegularGridInterpolator((GRID[0],), VALUES[:, 0, 0])
    x = np.linspace(-1.0, 4.0, 7)
    _same(line(x), _scipy((GRID[0],), VALUES[:, 0, 0])(x))


def test_bounds_error():
    interp = RegularGridInterpolator(GRID, VALUES, bounds_error=True)
    _same(interp(INSIDE), _scipy(GRID, VALUES)(INSIDE))
    with pytest.raises(ValueError, match=r"^One of the requested xi is out of bounds in "
                                         r"dimension 1 \(RegularGridInterpolator"):
        interp(np.array([[1.0, 3.0, 0.5]]))
    # eager gradients see the points' values; jit does not (JAX refuses bounds_error=True)
    g = tg.grad(lambda xi: tnp.sum(interp(xi)))(INSIDE)
    np.testing.assert_allclose(g, tg.grad(lambda xi: tnp.sum(
        RegularGridInterpolator(GRID, VALUES)(xi)))(INSIDE))
    with pytest.raises(NotImplementedError, match=r"^`bounds_error` takes no effect under JIT "
                                                  r"\(RegularGridInterpolator: "):
        tg.jit(interp)(INSIDE)


@settings(max_examples=15, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2 ** 16), sizes=st.tuples(st.integers(2, 5), st.integers(2, 5)))
def test_linear_reproduces_affine_functions_and_nearest_returns_a_node(seed, sizes):
    """On any grid, linear interpolation of an affine function is exact inside
    the grid (and extrapolates it with fill_value=None); 'nearest' returns the
    value of the closest node."""
    rng = np.random.default_rng(seed)
    grid = tuple(np.sort(rng.choice(np.linspace(-2.0, 2.0, 41), m, replace=False)) for m in sizes)
    c = rng.standard_normal(3)
    affine = lambda x, y: c[0] + c[1] * x + c[2] * y  # noqa: E731
    values = affine(*np.meshgrid(*grid, indexing="ij"))
    xi = rng.uniform(-3.0, 3.0, (20, 2))
    got = RegularGridInterpolator(grid, values, fill_value=None)(xi)
    np.testing.assert_allclose(got, affine(xi[:, 0], xi[:, 1]), rtol=1e-12, atol=1e-12)
    near = RegularGridInterpolator(grid, values, method="nearest", fill_value=None)(xi)
    nodes = [g[np.argmin(np.abs(g[None, :] - x[:, None]), axis=1)] for g, x in zip(grid, xi.T)]
    np.testing.assert_allclose(near, affine(*nodes), rtol=1e-12, atol=1e-12)


def test_gradients_match_finite_differences():
    """Away from the nodes (kinks) and the cell boundaries of 'nearest'."""
    xi = INSIDE[:3]
    check_grads(lambda xi, v: RegularGridInterpolator(GRID, v)(xi), (xi, VALUES), 1,
                modes=("fwd", "rev"))
    check_grads(lambda v: RegularGridInterpolator(GRID, v, method="nearest")(xi), (VALUES,), 1,
                modes=("fwd", "rev"))
    # outside the grid: the fill value does not depend on anything
    g = tg.grad(lambda xi: tnp.sum(RegularGridInterpolator(GRID, VALUES, fill_value=0.0)(xi)))(
        np.array([[9.0, 0.0, 0.5]]))
    np.testing.assert_array_equal(g, 0.0)


def test_vmap_is_a_loop_and_jit_is_eager_on_both_backends():
    vs = RNG.standard_normal((3,) + VALUES.shape)
    xis = np.stack([_points(5) for _ in range(3)])
    f = lambda v, xi: RegularGridInterpolator(GRID, v)(xi)  # noqa: E731
    for in_axes in ((0, 0), (None, 0), (0, None)):
        got = tg.vmap(f, in_axes)(vs if in_axes[0] == 0 else VALUES,
                                  xis if in_axes[1] == 0 else XI)
        for i in range(3):
            _same(got[i], f(vs[i] if in_axes[0] == 0 else VALUES,
                            xis[i] if in_axes[1] == 0 else XI))
    # the interpolator is a pytree: an argument of jit and vmap
    interps = tg.vmap(lambda v: RegularGridInterpolator(GRID, v, method="nearest"))(vs)
    got = tg.vmap(lambda r: r(XI))(interps)
    for i in range(3):
        _same(got[i], RegularGridInterpolator(GRID, vs[i], method="nearest")(XI))
    interp = RegularGridInterpolator(GRID, VALUES)
    eager = interp(XI)
    for backend in ("numpy", "numba"):
        _same(tg.jit(lambda r, xi: r(xi), backend=backend)(interp, XI), eager)


def test_same_numbers_as_jax():
    jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference compared with here")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax.scipy.interpolate import RegularGridInterpolator as JaxRGI
    xi = np.delete(XI, 2, axis=0)     # JAX's "nearest" ignores NaN points; SciPy and we give NaN
    jgrid = tuple(jnp.asarray(g) for g in GRID)
    for method in ("linear", "nearest"):
        for fill_value in (np.nan, None):
            ours = RegularGridInterpolator(GRID, VALUES, method=method, fill_value=fill_value)
            theirs = JaxRGI(jgrid, jnp.asarray(VALUES), method=method, fill_value=fill_value)
            _same(ours(xi), theirs(jnp.asarray(xi)))
    loss = lambda np_, rgi, g: lambda xi, v: np_.sum(rgi(g, v)(xi) ** 2)  # noqa: E731
    ours = tg.grad(loss(tnp, RegularGridInterpolator, GRID), (0, 1))(INSIDE, VALUES)
    theirs = jax.grad(loss(jnp, JaxRGI, jgrid), (0, 1))(jnp.asarray(INSIDE), jnp.asarray(VALUES))
    for a, b in zip(ours, theirs):
        _same(a, b)


def test_interpolator_bad_arguments():
    name = r"\(RegularGridInterpolator: "
    with pytest.raises(ValueError, match=r"^method 'cubic' is not defined " + name):
        RegularGridInterpolator(GRID, VALUES, method="cubic")
    with pytest.raises(ValueError, match=r"^method 'spline' is not defined " + name):
        RegularGridInterpolator(GRID, VALUES)(INSIDE, method="spline")
    with pytest.raises(ValueError, match=r"^there are 3 point arrays, but values has 2 "
                                         r"dimensions " + name):
        RegularGridInterpolator(GRID, VALUES[:, :, 0, 0])
    with pytest.raises(ValueError, match=r"^There are 4 points and 5 values in dimension 1 "):
        RegularGridInterpolator((GRID[0], GRID[1]), np.ones((5, 5)))
    with pytest.raises(ValueError, match=r"^The points in dimension 0 must be strictly "
                                         r"ascending or descending " + name):
        RegularGridInterpolator((np.array([0.0, 2.0, 1.0]),), np.ones(3))
    with pytest.raises(ValueError, match=r"^fill_value must be either 'None' or of a type "
                                         r"compatible with values " + name):
        RegularGridInterpolator(GRID, VALUES, fill_value=1j)
    with pytest.raises(ValueError, match=r"^the requested sample points xi have dimension 2, "
                                         r"but this RegularGridInterpolator has dimension 3"):
        RegularGridInterpolator(GRID, VALUES)(np.ones((4, 2)))
    with pytest.raises(TypeError, match=r"RegularGridInterpolator: values must be an array, "
                                        r"got str"):
        RegularGridInterpolator(GRID, "values")
    with pytest.raises(ValueError, match=r"RegularGridInterpolator: points must hold at least one "
                                         r"axis"):
        RegularGridInterpolator((), VALUES)


# ---------------------------------------------------------------------------
# scipy.cluster.vq.vq

OBS = RNG.standard_normal((30, 3))
CODES = RNG.standard_normal((5, 3))


def test_vq_is_scipys():
    for obs, codes in ((OBS, CODES), (OBS[:, 0], CODES[:, 0]),
                       (OBS.astype(np.float32), CODES.astype(np.float32))):
        code, dist = vq(obs, codes)
        code_s, dist_s = scipy.cluster.vq.vq(obs, codes)
        np.testing.assert_array_equal(code, code_s)
        assert dist.dtype == dist_s.dtype
        np.testing.assert_allclose(dist, dist_s, rtol=1e-6 if obs.dtype == np.float32 else 1e-14)
    code, dist = vq(np.array([[0, 0], [4, 4]]), np.array([[1, 1], [3, 3]]))   # integers
    np.testing.assert_array_equal(code, [0, 1])
    np.testing.assert_allclose(dist, [np.sqrt(2)] * 2, rtol=1e-15)


def test_vq_gradients_vmap_jit_and_jax():
    check_grads(lambda o, c: vq(o, c)[1], (OBS[:6], CODES), 1, modes=("fwd", "rev"))
    batches = OBS.reshape(3, 10, 3)
    code, dist = tg.vmap(vq, (0, None))(batches, CODES)
    for i in range(3):
        c, d = vq(batches[i], CODES)
        np.testing.assert_array_equal(code[i], c)
        np.testing.assert_allclose(dist[i], d, rtol=1e-15)
    for backend in ("numpy", "numba"):
        c, d = tg.jit(vq, backend=backend)(OBS, CODES)
        np.testing.assert_array_equal(c, vq(OBS, CODES)[0])
        np.testing.assert_allclose(d, vq(OBS, CODES)[1], rtol=1e-14)
    jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference compared with here")
    jax.config.update("jax_enable_x64", True)
    import jax.scipy.cluster.vq
    c, d = jax.scipy.cluster.vq.vq(jax.numpy.asarray(OBS), jax.numpy.asarray(CODES))
    np.testing.assert_array_equal(vq(OBS, CODES)[0], c)
    np.testing.assert_allclose(vq(OBS, CODES)[1], d, rtol=1e-14)
    g = tg.grad(lambda o, c: tnp.sum(vq(o, c)[1] ** 3), (0, 1))(OBS, CODES)
    gj = jax.grad(lambda o, c: jax.numpy.sum(jax.scipy.cluster.vq.vq(o, c)[1] ** 3), (0, 1))(
        jax.numpy.asarray(OBS), jax.numpy.asarray(CODES))
    for a, b in zip(g, gj):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_vq_bad_arguments():
    with pytest.raises(ValueError, match=r"^Observation and code_book should have the same rank "
                                         r"\(vq: obs has shape \(30, 3\), code_book has shape "
                                         r"\(3,\)\)"):
        vq(OBS, CODES[0])
    with pytest.raises(ValueError, match=r"^ndim different than 1 or 2 are not supported \(vq: "):
        vq(OBS[None], CODES[None])
    with pytest.raises(ValueError, match=r"vq: code_book must hold at least one code with as "
                                         r"many features as the observations"):
        vq(OBS, CODES[:, :2])
