"""det and slogdet compiled by numba agree with the NumPy backend (a tiered ``jit``'s
first calls) bit for bit on every float64 input: a single matrix (its 0-d result, which
numba's code once made 1-d, and the kernel's ``o[()] = r``, which numba cannot compile:
the program fell back to the NumPy backend with a warning), and matrices holding NaN or
inf, where numba's np.linalg routines raise LinAlgError and the NumPy backend gives NaN
or LAPACK's values."""
from __future__ import annotations

import numpy as np
import pytest
from _numba_util import compile_numba, program

import tangentia as tg
import tangentia.numpy as tnp

pytestmark = pytest.mark.timeout(300)

INF, NAN = np.inf, np.nan
MATS = np.array([
    [[2.0, 1.0], [1.0, 3.0]], [[NAN, 1.0], [1.0, 1.0]], [[INF, 1.0], [1.0, 1.0]],
    [[INF, 1.0], [INF, 1.0]], [[-INF, 2.0], [1.0, -3.0]], [[0.0, 1.0], [1.0, 0.0]],
    [[0.0, 0.0], [0.0, 0.0]], [[1.0, INF], [0.0, 1.0]], [[INF, INF], [1.0, 2.0]],
    [[0.0, INF], [1.0, 0.0]], [[0.1257, -0.1321], [INF, INF]], [[-INF, 0.947], [-INF, -1.265]],
])


def _f(a, stack):
    sign, logdet = tnp.linalg.slogdet(a)
    return (tnp.linalg.det(a), sign, logdet, tg.vmap(tnp.linalg.det)(stack),
            *tg.vmap(tnp.linalg.slogdet)(stack))


def test_det_and_slogdet_match_the_numpy_backend_bit_for_bit():
    jaxpr, args = program(_f, MATS[0], MATS)
    fn = compile_numba(jaxpr)
    for i in range(len(MATS)):
        full = args[:-2] + [MATS[i], MATS]
        with np.errstate(all="ignore"):
            want = [np.asarray(v) for v in _f(MATS[i], MATS)]
        got = [np.asarray(v) for v in fn(*full)]
        for w, g in zip(want, got):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)    # (NaN where NaN)
