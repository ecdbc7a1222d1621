"""Jitted functions mapped over a real Dask LocalCluster (worker processes, no mocks): they
pickle (by value, as from a notebook, through cloudpickle), run on the workers with the
numbers they give here (the workers' backend is the NumPy one, as in test_distributed.py,
whose "numba_inside" case runs numba on workers), a grad of a jitted function too.  (tests/test_distributed.py covers tangentia.distributed; this is plain
``client.map`` of a function the user jitted, session 23, E: it worked, now it is held.)
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

dd = pytest.importorskip("dask.distributed", reason="needs dask.distributed")
cloudpickle = pytest.importorskip("cloudpickle", reason="dask's pickler")

pytestmark = pytest.mark.timeout(240)


def _poly(x):
    return x * 2.0 + tnp.sin(x)


def _loss(x):
    return tnp.sum(tnp.sin(x) ** 2)


@pytest.fixture(scope="module")
def client():
    cloudpickle.register_pickle_by_value(sys.modules[__name__])   # (tests/ is not on the
    try:                                                          # workers' path)
        with dd.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                             dashboard_address=":0",
                             env={"TANGENTIA_JIT_BACKEND": "numpy"}) as cluster, \
                dd.Client(cluster) as c:
            yield c
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def test_client_map_of_jitted_functions(client) -> None:
    xs = [np.linspace(-1.0, 1.0, 4) + i for i in range(6)]
    for f, want in [(tg.jit(_poly), lambda x: x * 2.0 + np.sin(x)),
                    (tg.jit(tg.grad(_loss)), lambda x: np.sin(2.0 * x)),
                    (tg.jit(lambda x: x * 3.0 - 1.0), lambda x: x * 3.0 - 1.0)]:
        got = client.gather(client.map(f, xs))
        for g, x in zip(got, xs):
            np.testing.assert_allclose(g, want(x), rtol=1e-13, atol=1e-15)
    # a jitted function with a static argument, submitted with it
    h = tg.jit(lambda x, n: x ** n, static_argnums=1)
    got = client.gather([client.submit(h, x, 3) for x in xs])
    for g, x in zip(got, xs):
        np.testing.assert_allclose(g, x ** 3, rtol=1e-13)
