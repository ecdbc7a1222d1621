"""Compile time of programs users write as Python loops (issue 23): what the generator does
so that their code stays small, checked for the numbers it gives.

* A small array's elements are read into scalars by one call (``rowio.read_elements``),
  not one statement each: a kernel's result (a gather at dynamic indices), a program's
  small integer input.
"""
from __future__ import annotations

import re
from typing import Any, Callable, List, Tuple

import numpy as np
import pytest

pytest.importorskip("numba")

import tangentia as tg  # noqa: E402
import tangentia.numpy as tnp  # noqa: E402
from tangentia import lax  # noqa: E402
from tangentia.compiler.backend import get_backend  # noqa: E402

from _numba_util import compile_numba, program  # noqa: E402

Case = Tuple[Callable[..., Any], List[Any]]


def _fori(n: int) -> Case:
    """grad of a 4-step fori_loop whose body has n dynamic slices and updates of f64[12]
    (the offsets differ from copy to copy only by their literals)."""
    def f(x: Any) -> Any:
        def body(i: Any, s: Any) -> Any:
            for k in range(n):
                v = lax.dynamic_slice_in_dim(s, (i + k) % 9, 3)
                s = lax.dynamic_update_slice_in_dim(s, tnp.sin(v) * 0.9 + 0.1, (i + 2 * k) % 9, 0)
            return s
        return tnp.sum(lax.fori_loop(0, 4, body, x) ** 2)
    return tg.grad(f), [np.linspace(0.0, 1.0, 12)]


def _outputs(fn: Any, args: List[Any]) -> List[np.ndarray]:
    out = fn(*tg.tree_util.tree_leaves(args))
    return [np.asarray(o) for o in (out if isinstance(out, (tuple, list)) else [out])]


def _against_numpy(case: Case) -> Tuple[str, List[np.ndarray]]:
    """The numba program's source and results, checked against the NumPy backend's."""
    jaxpr, args = program(case[0], *case[1])
    got = _outputs(compile_numba(jaxpr), args)
    want = _outputs(get_backend("numpy").compile(jaxpr), args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    return get_backend("numba").source(jaxpr), got


def _fd_grad(f: Callable[[np.ndarray], float], x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def test_fori_of_dynamic_slices_against_numpy_eager_and_finite_differences() -> None:
    grad_f, args = _fori(3)
    source, got = _against_numpy((grad_f, args))
    # (a kernel's small result read by one call, not one ``s5 = a3[7]`` per element)
    assert not re.search(r"^\s+s\d+ = a\d+\[\d+\]$", source, re.M)
    np.testing.assert_allclose(tg.jit(grad_f)(*args), grad_f(*args), rtol=1e-13, atol=1e-15)

    def loss(x: np.ndarray) -> float:
        s = x.copy()
        for i in range(4):
            for k in range(3):
                a = min(max((i + k) % 9, 0), 9)
                v = s[a:a + 3].copy()
                b = min(max((i + 2 * k) % 9, 0), 9)
                s[b:b + 3] = np.sin(v) * 0.9 + 0.1
        return float(np.sum(s ** 2))
    np.testing.assert_allclose(got[0], _fd_grad(loss, args[0]), rtol=1e-6, atol=1e-8)
