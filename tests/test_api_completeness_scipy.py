"""tangentia.scipy.optimize, signal, integrate, fft and ndimage against JAX 0.10.2 (x64)
and SciPy: the same iterates, values and errors; gradients against finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.scipy import optimize as topt
from tangentia.test_util import check_grads

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy
import jax.scipy.optimize  # type: ignore[no-redef]  # noqa: E402  (a lazily loaded submodule)


def _rosen(np_):
    return lambda x: np_.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


LBFGS = "l-bfgs-experimental-do-not-rely-on-this"


def _same_results(ours, theirs, rtol=1e-7):
    assert ours._fields == theirs._fields
    for field in ours._fields:
        a, b = getattr(ours, field), getattr(theirs, field)
        if b is None:
            assert a is None, field
        else:
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=1e-9,
                                       err_msg=field)


@pytest.mark.parametrize("method", ["BFGS", LBFGS])
def test_minimize_takes_jaxs_steps(method):
    """Same iterates: the same number of iterations and evaluations, the same
    point, gradient and inverse-Hessian estimate."""
    x0 = np.array([-1.2, 1.0, 0.5])
    ours = topt.minimize(_rosen(tnp), x0, method=method, options={"maxiter": 15})
    theirs = jax.scipy.optimize.minimize(_rosen(jnp), jnp.asarray(x0), method=method,
                                         options={"maxiter": 15})
    _same_results(ours, theirs, rtol=1e-6)
    assert int(ours.nit) == int(theirs.nit) and int(ours.nfev) == int(theirs.nfev)


def test_minimize_converges_with_args_under_jit():
    def f(x, a, b):
        return tnp.sum((x - a) ** 2 * b) + tnp.sum(x) ** 2

    a, b = np.array([1.0, -2.0]), np.array([2.0, 3.0])
    r = tg.jit(lambda x0: topt.minimize(f, x0, (a, b), method="bfgs"))(np.zeros(2))
    # the minimizer of the quadratic: (diag(b) + 1 1^T) x = b * a
    expected = np.linalg.solve(np.diag(b) + 1.0, b * a)
    np.testing.assert_allclose(r.x, expected, atol=1e-6)
    assert bool(r.success) and int(r.status) == 0
    np.testing.assert_allclose(r.jac, 0.0, atol=1e-5)
    # BFGS's inverse-Hessian estimate approaches the inverse Hessian on a quadratic
    np.testing.assert_allclose(r.hess_inv, np.linalg.inv(2 * (np.diag(b) + 1.0)), atol=1e-4)


def test_minimize_status_when_maxiter_is_reached():
    ours = topt.minimize(_rosen(tnp), np.array([-1.2, 1.0]), method="BFGS",
                         options={"maxiter": 3})
    assert int(ours.status) == 1 and not bool(ours.success) and int(ours.nit) == 3


def test_minimize_under_vmap_matches_each_start():
    starts = np.array([[0.0, 0.0], [2.0, -1.0], [-1.0, 3.0]])
    f = lambda x: tnp.sum((x - np.array([0.5, 1.5])) ** 4) + tnp.sum(x ** 2)
    batched = tg.vmap(lambda x0: topt.minimize(f, x0, method="BFGS").x)(starts)
    for x0, xb in zip(starts, batched):
        np.testing.assert_allclose(xb, topt.minimize(f, x0, method="BFGS").x, rtol=1e-9)


def test_line_search_matches_jax():
    from jax._src.scipy.optimize.line_search import line_search as jax_line_search
    x0, p = np.array([-1.2, 1.0]), np.array([1.0, 0.2])
    ours = topt.line_search(_rosen(tnp), x0, p)
    theirs = jax_line_search(_rosen(jnp), jnp.asarray(x0), jnp.asarray(p))
    _same_results(ours, theirs)
    # the strong Wolfe conditions hold at the step found
    f = _rosen(np)
    g = tg.grad(_rosen(tnp))
    a = float(ours.a_k)
    assert f(x0 + a * p) <= f(x0) + 1e-4 * a * g(x0) @ p
    assert abs(g(x0 + a * p) @ p) <= 0.9 * abs(g(x0) @ p)


def test_minimize_errors_use_jaxs_wording():
    with pytest.raises(TypeError, match="args argument to jax.scipy.optimize.minimize must be "
                                        "a tuple"):
        topt.minimize(_rosen(tnp), np.zeros(2), args=[1], method="BFGS")
    with pytest.raises(ValueError, match="Method nelder-mead not recognized"):
        topt.minimize(_rosen(tnp), np.zeros(2), method="nelder-mead")


# ---------------------------------------------------------------- scipy.signal

import scipy.signal  # noqa: E402

from tangentia.scipy import signal as tsig  # noqa: E402

jsig = jax.scipy.signal
RNG = np.random.default_rng(0)


def _close(ours, theirs, atol=1e-10):
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert np.shape(a) == np.shape(b)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=atol, rtol=1e-9)


@pytest.mark.parametrize("shapes", [((7,), (3,)), ((3,), (7,)), ((5, 6), (2, 3)),
                                    ((4, 5, 3), (2, 2, 2))])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_and_correlate_match_scipy(shapes, mode):
    a, b = RNG.normal(size=shapes[0]), RNG.normal(size=shapes[1])
    for method in ("direct", "fft"):
        _close(tsig.convolve(a, b, mode, method), scipy.signal.convolve(a, b, mode, method))
        _close(tsig.correlate(a, b, mode, method), scipy.signal.correlate(a, b, mode, method))
    _close(tsig.fftconvolve(a, b, mode), scipy.signal.fftconvolve(a, b, mode))
    if a.ndim == 2:
        for x, y in ((a, b), (b, a)):
            _close(tsig.convolve2d(x, y, mode), scipy.signal.convolve2d(x, y, mode))
            _close(tsig.correlate2d(x, y, mode), scipy.signal.correlate2d(x, y, mode))


def test_convolutions_match_jax():
    """JAX (complex operands, mapped axes); SciPy is the reference above."""
    a = RNG.normal(size=(4, 6)) + 1j * RNG.normal(size=(4, 6))
    b = RNG.normal(size=(2, 3))
    _close(tsig.convolve(a, b), jsig.convolve(a, b))
    _close(tsig.correlate2d(a, b, "same"), jsig.correlate2d(a, b, "same"))
    _close(tsig.correlate2d(b, a, "full"), jsig.correlate2d(b, a, "full"))
    a, b = RNG.normal(size=(3, 8)), RNG.normal(size=(3, 4))
    _close(tsig.fftconvolve(a, b, axes=1), jsig.fftconvolve(a, b, axes=1))
    _close(tsig.fftconvolve(a, b, "valid", axes=[-1]), jsig.fftconvolve(a, b, "valid", axes=[-1]))


@pytest.mark.parametrize("kw", [{}, {"type": "constant"}, {"bp": [10, 30]}, {"axis": 0}])
def test_detrend_matches_scipy(kw):
    x = RNG.normal(size=(3, 50)) + np.arange(50) * 0.3
    _close(tsig.detrend(x, **kw), scipy.signal.detrend(x, **kw))


STFT_CASES = [{"nperseg": 16}, {"nperseg": 20, "noverlap": 5, "nfft": 32},
              {"nperseg": 16, "boundary": None, "padded": False},
              {"nperseg": 16, "boundary": "even", "detrend": "linear"},
              {"nperseg": 16, "window": "hamming"}, {"nperseg": 15, "boundary": "odd"}]


@pytest.mark.parametrize("kw", STFT_CASES)
def test_stft_and_istft_match_scipy(kw):
    x = RNG.normal(size=(2, 100))
    _close(tsig.stft(x, **kw), scipy.signal.stft(x, **kw))
    _, _, Z = scipy.signal.stft(x, **kw)
    inv = {k: v for k, v in kw.items() if k in ("nperseg", "noverlap", "nfft", "window")}
    if kw.get("boundary", "zeros") is not None:
        _close(tsig.istft(Z, **inv), scipy.signal.istft(Z, **inv))


def test_stft_istft_match_jax_and_invert():
    x = RNG.normal(size=(2, 96))
    _close(tsig.stft(x, nperseg=16, noverlap=4),
           jax.jit(lambda v: jsig.stft(v, nperseg=16, noverlap=4))(x))
    _, _, Z = tsig.stft(x, nperseg=16)
    t, y = tsig.istft(Z, nperseg=16)
    np.testing.assert_allclose(y[:, :96], x, atol=1e-12)
    Zt = np.swapaxes(np.asarray(Z), 0, 1)
    _close(tsig.istft(Zt, time_axis=-1, freq_axis=0),
           jax.jit(lambda z: jsig.istft(z, time_axis=-1, freq_axis=0))(Zt))


@pytest.mark.parametrize("kw", [{"nperseg": 100}, {"nperseg": 16},
                                {"nperseg": 16, "average": "median"},
                                {"nperseg": 16, "scaling": "spectrum", "return_onesided": False},
                                {"nperseg": 17, "detrend": "linear"}])
def test_welch_and_csd_match_scipy(kw):
    x, y = RNG.normal(size=(2, 100)), RNG.normal(size=(2, 100))
    _close(tsig.welch(x, **kw), scipy.signal.welch(x, **kw))
    _close(tsig.csd(x, y, **kw), scipy.signal.csd(x, y, **kw))
    _close(tsig.welch(x.T, axis=0, **kw), scipy.signal.welch(x.T, axis=0, **kw))


def test_welch_and_csd_match_jax():
    """JAX's defaults (nperseg: the whole signal for a named window) and median averaging."""
    x, y = RNG.normal(size=(2, 100)), RNG.normal(size=(2, 100))
    _close(tsig.welch(x), jax.jit(jsig.welch)(x))
    _close(tsig.csd(x, y, nperseg=16, average="median"),
           jax.jit(lambda a, b: jsig.csd(a, b, nperseg=16, average="median"))(x, y))


def test_signal_gradients_match_finite_differences():
    x, k = RNG.normal(size=12), RNG.normal(size=3)
    cases = [lambda v: tnp.sum(tsig.convolve(v, k, "same") ** 2),
             lambda v: tnp.sum(tsig.fftconvolve(v, k) ** 2),
             lambda v: tnp.sum(tsig.welch(v, nperseg=8)[1]),
             lambda v: tnp.sum(tsig.detrend(v) ** 3)]
    for f in cases:
        check_grads(f, (x,), order=1)


def test_signal_errors_use_jaxs_wording():
    with pytest.raises(ValueError, match=r"mode must be one of \['full', 'same', 'valid'\]"):
        tsig.convolve(np.ones(3), np.ones(2), mode="bad")
    with pytest.raises(ValueError, match="Got method='x'; expected 'auto', 'fft', or 'direct'"):
        tsig.convolve(np.ones(3), np.ones(2), method="x")
    with pytest.raises(ValueError, match="convolve2d\\(\\) only supports 2-dimensional"):
        tsig.convolve2d(np.ones(3), np.ones(2))
    with pytest.raises(NotImplementedError, match="only supports boundary='fill'"):
        tsig.correlate2d(np.ones((3, 3)), np.ones((2, 2)), boundary="wrap")
    with pytest.raises(ValueError, match="Trend type must be 'linear' or 'constant'"):
        tsig.detrend(np.ones(4), type="cubic")
    with pytest.raises(ValueError, match="noverlap must be less than nperseg"):
        tsig.welch(np.ones(32), nperseg=8, noverlap=8)
    with pytest.raises(ValueError, match="One input must be smaller than the other"):
        tsig.convolve(np.ones((3, 1)), np.ones((1, 3)))


# ------------------------------------------------- scipy.fft, integrate, ndimage

import scipy.fft  # noqa: E402
import scipy.integrate  # noqa: E402

from tangentia.scipy import fft as tfft  # noqa: E402
from tangentia.scipy import integrate as tint  # noqa: E402
from tangentia.scipy import ndimage as tndi  # noqa: E402


@pytest.mark.parametrize("norm", [None, "backward", "ortho"])
def test_dct_family_matches_scipy(norm):
    x = RNG.normal(size=(5, 6, 4))
    for axis in (0, 1, -1):
        for n in (None, 3, 8):
            _close(tfft.dct(x, n=n, axis=axis, norm=norm),
                   scipy.fft.dct(x, n=n, axis=axis, norm=norm))
            _close(tfft.idct(x, n=n, axis=axis, norm=norm),
                   scipy.fft.idct(x, n=n, axis=axis, norm=norm))
    for s, axes in ((None, None), ((3, 7), None), (None, (0, 2)), ((4, 4, 4), None)):
        _close(tfft.dctn(x, s=s, axes=axes, norm=norm), scipy.fft.dctn(x, s=s, axes=axes,
                                                                       norm=norm))
        _close(tfft.idctn(x, s=s, axes=axes, norm=norm), scipy.fft.idctn(x, s=s, axes=axes,
                                                                         norm=norm))
    z = x + 1j * x[::-1]
    _close(tfft.dct(z, norm=norm), scipy.fft.dct(z, norm=norm))
    _close(tfft.idctn(z, norm=norm), scipy.fft.idctn(z, norm=norm))


def test_dct_matches_jax_dtype_gradient_and_errors():
    x = RNG.normal(size=(4, 6)).astype(np.float32)
    ours = tfft.dctn(x, norm="ortho")
    theirs = jax.jit(lambda v: jax.scipy.fft.dctn(v, norm="ortho"))(x)
    assert ours.dtype == theirs.dtype == np.float32
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    v = RNG.normal(size=7)
    w = RNG.normal(size=7)
    for f in (tfft.dct, tfft.idct, tfft.dctn, tfft.idctn):
        check_grads(lambda u: f(u, norm="ortho") * w, (v,), order=1)
    with pytest.raises(NotImplementedError, match="Only DCT type 2 is implemented"):
        tfft.dct(v, type=3)
    with pytest.raises(ValueError, match="jax.scipy.fft.idctn: norm='forward' is not "
                                         "implemented"):
        tfft.idctn(v, norm="forward")


def test_trapezoid_matches_scipy_and_differentiates():
    y, x = RNG.normal(size=(3, 9)), np.sort(RNG.uniform(size=9))
    _close(tint.trapezoid(y, x), scipy.integrate.trapezoid(y, x))
    _close(tint.trapezoid(y, dx=0.3, axis=0), scipy.integrate.trapezoid(y, dx=0.3, axis=0))
    check_grads(lambda v, t: tint.trapezoid(v ** 2, t), (y, x), order=1)


@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("mode", ["constant", "nearest", "wrap", "mirror", "reflect"])
def test_map_coordinates_matches_jax(order, mode):
    img = RNG.normal(size=(5, 6))
    coords = RNG.uniform(-3, 9, size=(2, 4, 3))
    coords[0, 0, 0], coords[1, 0, 1] = 2.5, -0.5     # ties round away from zero
    for im in (img, RNG.integers(0, 100, size=(5, 6))):
        ours = tndi.map_coordinates(im, list(coords), order, mode, cval=0.5)
        theirs = jax.scipy.ndimage.map_coordinates(im, list(coords), order, mode, cval=0.5)
        assert ours.dtype == theirs.dtype
        _close(ours, theirs)
    if mode in ("nearest", "mirror", "reflect"):   # SciPy agrees inside these modes
        import scipy.ndimage
        _close(tndi.map_coordinates(img, list(coords), order, mode),
               scipy.ndimage.map_coordinates(img, coords, order=order, mode=mode))


def test_map_coordinates_gradients_and_errors():
    img = RNG.normal(size=(4, 5))
    c = np.array([[1.3, 2.7], [0.4, 3.2]])
    f = lambda cc: tnp.sum(tndi.map_coordinates(img, list(cc), 1, "nearest") ** 2)
    check_grads(f, (c,), order=1)
    check_grads(lambda im: tndi.map_coordinates(im, list(c), 1) ** 2, (img,), order=1)
    with pytest.raises(ValueError, match="coordinates must be a sequence of length input.ndim, "
                                         "but 1 != 2"):
        tndi.map_coordinates(img, [c[0]], 1)
    with pytest.raises(NotImplementedError, match="does not yet support mode grid-wrap"):
        tndi.map_coordinates(img, list(c), 1, "grid-wrap")
    with pytest.raises(NotImplementedError, match="currently requires order<=1"):
        tndi.map_coordinates(img, list(c), 3)


# ------------------------------------------------------------ public names

import importlib  # noqa: E402
import inspect  # noqa: E402

# JAX's public names in the modules covered here that tangentia does not have, and why.
NOT_PROVIDED = {
    "scipy.stats.poisson.entropy": "not implemented yet (tangentia/scipy/stats/poisson.py)",
}
COVERED = ["scipy", "scipy.optimize", "scipy.signal", "scipy.integrate", "scipy.fft",
           "scipy.ndimage", "scipy.stats", "image", "scipy.sparse.linalg", "scipy.interpolate",
           "scipy.cluster.vq", "scipy.spatial.transform"]


def _public_names(module):
    return {n for n in dir(module) if not n.startswith("_")}


def test_jaxs_public_names_are_provided_or_listed():
    missing = []
    for name in COVERED:
        jmod = importlib.import_module(f"jax.{name}")
        tmod = importlib.import_module(f"tangentia.{name}")
        for attr in sorted(_public_names(jmod)):
            if not hasattr(tmod, attr):
                missing.append(f"{name}.{attr}")
            elif name == "scipy.stats" and inspect.ismodule(getattr(jmod, attr)):
                ours = getattr(tmod, attr)
                missing += [f"{name}.{attr}.{f}" for f in dir(getattr(jmod, attr))
                            if not f.startswith("_") and callable(getattr(getattr(jmod, attr), f))
                            and not hasattr(ours, f)]
    assert sorted(set(missing) - set(NOT_PROVIDED)) == []
    assert sorted(set(NOT_PROVIDED) - set(missing)) == []   # the list stays current


def test_new_public_functions_have_docstrings_naming_their_arguments():
    import re
    unnamed = []
    for name in COVERED[1:]:
        mod = importlib.import_module(f"tangentia.{name}")
        for attr in getattr(mod, "__all__", dir(mod)):
            fn = getattr(mod, attr)
            if not inspect.isfunction(fn) or not fn.__module__.startswith("tangentia"):
                continue
            doc = inspect.getdoc(fn) or ""
            params = [p for p in inspect.signature(fn).parameters
                      if not re.search(rf"(?<![\w.]){p}(?!\w)", doc)]
            if not doc or params:
                unnamed.append(f"{name}.{attr}: {params}")
    assert unnamed == []
