"""Elements of an array at static indices read by one call (``rowio.read_elements``):
a program's small packed inputs (``_xp``) and a static index of an array made
scalars (``x[:, 50, :]``) are one ``gather`` intrinsic, where each element was a
``getitem`` statement of its own.  And a scatter's copy of its operand is
``rowio.copy_into`` (a memcpy, or a loop nest for other layouts), not numba's
``array.copy``.  The numbers must be the NumPy backend's, bit for bit (a load is a
load), whatever the array's dtype and layout."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia.numpy as tnp  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402
from tangentia.compiler.numba_backend import rowio  # noqa: E402

from _numba_util import compile_numba, program  # noqa: E402


def _same(got: Any, want: Any) -> None:
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        assert g.tobytes() == w.tobytes()


def _check(f: Any, *args: Any, gathers: int = 1) -> None:
    jaxpr, full = program(f, *args)
    fn = compile_numba(jaxpr)
    assert fn.source.count(": gather gather_") >= gathers, fn.source[:2000]
    _same(fn(*full), get_backend("numpy").compile(jaxpr)(*full))


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.float32, np.bool_])
def test_static_index_of_an_array_read_by_one_call(dtype: Any) -> None:
    # a computed (8, 51, 2) array (not scalarized: too large; a scatter's result, as the
    # cotangent of an ODE's trajectory), then one of its (8, 2) slices at a static index,
    # made scalars
    def f(x: Any) -> Any:
        y = x.at[:, 50, 1].set(x[:, 3, 0])
        s = y[:, 50, :]
        return (s.astype(np.float64) * 2.5 + 1.0, s)
    x = np.arange(8 * 51 * 2).reshape(8, 51, 2) % 7
    _check(f, x.astype(dtype) if dtype is not np.bool_ else x > 3)


def test_static_index_of_a_strided_input() -> None:
    # an input of more than irblock.ARRAY_MAX elements is an array argument, here one
    # that is not C-contiguous (a transposed view)
    def f(x: Any) -> Any:
        s = x[3, ::400]
        return (tnp.sin(s) + s[0],)
    x = np.linspace(-2.0, 2.0, 2000 * 6).reshape(2000, 6).T
    assert not x.flags.c_contiguous
    _check(f, x)


def test_packed_inputs_read_by_one_call() -> None:
    def f(a: Any, b: Any, v: Any, c: Any, w: Any) -> Any:
        return (tnp.sin(a) * v[1] - b * c + v[0], w[2] * a + tnp.sum(v * b))
    args = [np.float64(0.5), np.array(-1.25), np.array([0.3, 2.0, -7.0]), np.array(4.0),
            np.array([1.5, 2.5, 3.5])]
    _check(f, *args)


def test_gathers_of_other_indices_have_other_names() -> None:
    # (the name is in the generated source's notes, the key of numba's disk cache: a
    # program reading other offsets must not find this one's code)
    a = rowio.gather(((0,), (3,)))
    assert a is rowio.gather(((0,), (3,)))
    assert a.__name__ != rowio.gather(((0,), (4,))).__name__
    assert a.__name__ != rowio.gather(((0, 0), (3, 0))).__name__


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.complex128, np.bool_])
def test_a_scatters_copy_of_its_operand(dtype: Any) -> None:
    def f(x: Any, y: Any) -> Any:
        z = x[::-1] if dtype is np.bool_ else x * 2     # (a computed operand)
        return (z.at[:, 7, 1].set(y), x.at[2, :, 0].set(y[0]))
    base = np.arange(4 * 30 * 2).reshape(4, 30, 2) % 5
    x: Any = base > 2 if dtype is np.bool_ else (
        base + (1j if dtype is np.complex128 else 0)).astype(dtype)
    y = x[:, 3, 0]
    jaxpr, full = program(f, x, y)
    fn = compile_numba(jaxpr)
    assert "_cp" in fn.source and ".copy()" not in fn.source
    _same(fn(*full), get_backend("numpy").compile(jaxpr)(*full))


@pytest.mark.parametrize("layouts", ["CC", "CA", "AC", "AA"])
def test_copy_into_any_layout(layouts: str) -> None:
    import numba
    cp = rowio.copy_into()
    run = numba.njit(lambda d, s: cp(d, s))
    rng = np.random.default_rng(0)
    base_s = rng.standard_normal((6, 10, 4))
    base_d = np.zeros((6, 10, 4))
    src = base_s if layouts[1] == "C" else base_s.transpose(2, 0, 1).copy().transpose(1, 2, 0)
    dst = base_d if layouts[0] == "C" else np.zeros((4, 6, 10)).transpose(1, 2, 0)
    assert src.flags.c_contiguous == (layouts[1] == "C")
    assert dst.flags.c_contiguous == (layouts[0] == "C")
    run(dst, src)
    assert np.array_equal(dst, base_s)
    strided = base_s[::2, ::3, 1:3]          # (not contiguous at all)
    out = np.full(strided.shape, np.nan)
    run(out, strided)
    assert np.array_equal(out, strided)
