"""tangentia.image against jax.image (JAX 0.10.2, x64): every resize method with and
without antialiasing, scale_and_translate, dtypes, gradients and errors."""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import image as timg
from tangentia.test_util import check_grads

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
import jax.image  # type: ignore[no-redef]  # noqa: E402  (the module jax, again)

RNG = np.random.default_rng(3)
# (jitted: JAX's eager scale_and_translate compiles each of its operations, ~4 s)
jax_scale_and_translate = jax.jit(jax.image.scale_and_translate, static_argnums=(1, 2, 5, 6))
METHODS = ["nearest", "linear", "lanczos3", "lanczos5", "cubic", "cubic-pytorch", "area"]


@pytest.mark.parametrize("method,antialias", [(m, True) for m in METHODS] + [
    ("linear", False), ("cubic-pytorch", False), ("lanczos3", False)])
def test_resize_matches_jax(method, antialias):
    """Axis 0 upsampled, axis 1 downsampled (where antialiasing matters), axis 2 kept."""
    img = RNG.normal(size=(6, 7, 2))
    ours = timg.resize(img, (9, 4, 2), method, antialias=antialias)
    theirs = jax.image.resize(img, (9, 4, 2), method, antialias=antialias)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("method", ["linear", "lanczos5", "cubic-pytorch", "area"])
def test_scale_and_translate_matches_jax(method):
    img = RNG.normal(size=(6, 7, 2))
    scale, shift = np.array([1.3, 0.7]), np.array([0.4, -1.0])
    for antialias in (True, False):
        ours = timg.scale_and_translate(img, (8, 5, 2), (0, 1), scale, shift, method,
                                        antialias=antialias)
        theirs = jax_scale_and_translate(img, (8, 5, 2), (0, 1), scale, shift, method,
                                         antialias)
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_dtypes_follow_numpy_promotion():
    """float32 stays float32 (as JAX); integer images resample in float64 (NumPy's
    promotion; JAX gives float32), nearest keeps the dtype."""
    img = RNG.normal(size=(4, 4)).astype(np.float32)
    assert timg.resize(img, (6, 3), "linear").dtype == np.float32
    u8 = RNG.integers(0, 255, size=(4, 4)).astype(np.uint8)
    assert timg.resize(u8, (6, 6), "linear").dtype == np.float64
    out = timg.resize(u8, (6, 6), "nearest")
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, jax.image.resize(u8, (6, 6), "nearest"))


def test_gradients_in_image_scale_and_translation():
    img = RNG.normal(size=(5, 4))
    w = RNG.normal(size=(7, 4))

    def f(im, scale, shift):
        out = timg.scale_and_translate(im, (7, 4), (0,), scale, shift, "cubic")
        return tnp.sum(out * w)

    check_grads(f, (img, np.array([1.4]), np.array([0.3])), order=1)
    # under jit and vmap
    batch = RNG.normal(size=(3, 5, 4))
    np.testing.assert_allclose(tg.jit(tg.vmap(lambda im: timg.resize(im, (8, 2), "lanczos3")))(
        batch)[1], timg.resize(batch[1], (8, 2), "lanczos3"), rtol=1e-12)


def test_resize_method_names_and_errors():
    assert timg.ResizeMethod.from_string("bilinear") is timg.ResizeMethod.LINEAR
    assert [m.name for m in timg.ResizeMethod] == [m.name for m in jax.image.ResizeMethod]
    assert [m.value for m in timg.ResizeMethod] == [m.value for m in jax.image.ResizeMethod]
    with pytest.raises(ValueError, match='Unknown resize method "bogus"'):
        timg.resize(np.ones((2, 2)), (3, 3), "bogus")
    with pytest.raises(ValueError, match="shape must have length equal to the number of "
                                         "dimensions of x"):
        timg.resize(np.ones((2, 2)), (3,), "linear")
    with pytest.raises(ValueError, match="Nearest neighbor resampling is not currently "
                                         "supported for scale_and_translate"):
        timg.scale_and_translate(np.ones((2, 2)), (3, 3), (0,), [1.0], [0.0], "nearest")
