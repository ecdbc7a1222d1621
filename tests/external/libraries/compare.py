"""Compare a library's cases run under JAX and under tangentia (``run.py`` both ways):
the same shapes, floating values within ``rtol`` (default 1e-6; 1e-5 for flax, whose
parameters are float32), other values equal.

    python tests/external/libraries/compare.py eqx [rtol]
"""
import os
import pickle
import sys

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "results", "libraries")
mod = sys.argv[1]
RTOL = float(sys.argv[2]) if len(sys.argv) > 2 else 1e-6
with open(os.path.join(OUT, f"{mod}.jax.pkl"), "rb") as fh:
    j = pickle.load(fh)
with open(os.path.join(OUT, f"{mod}.tg.pkl"), "rb") as fh:
    t = pickle.load(fh)


def same(x, y):
    if x.shape != y.shape:
        return False
    if x.dtype.kind in "fc":
        return np.allclose(x, y, rtol=RTOL, atol=1e-9 if RTOL <= 1e-6 else 1e-6, equal_nan=True)
    return x.dtype.kind == "V" or np.array_equal(x, y)


nj = nt = 0
for k in j:
    if k not in t:
        continue
    a, b = j[k], t[k]
    if a[0] != "ok":
        print(f"JAXFAIL {k}: {a[1][:150]}")
        continue
    nj += 1
    if b[0] != "ok":
        print(f"FAIL {k}: {b[1][:400]}  @ {b[2]}")
        continue
    la, lb = a[1], b[1]
    if len(la) == len(lb) and all(same(x, y) for x, y in zip(la, lb)):
        nt += 1
    else:
        print(f"DIFF {k}: jax={[x.ravel()[:4] for x in la][:3]} tg={[y.ravel()[:4] for y in lb][:3]}")
print(f"{mod}: tangentia {nt} / JAX {nj} (of {len(j)} cases)")
