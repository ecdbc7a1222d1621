"""Run one library's cases (``<lib>.py`` beside this file: ``case(name)(fn)``) under real
JAX, or under tangentia with ``TG_JAX_ALIAS=1`` (see README.md); save each case's flattened
result (or its error) to ``tests/external/results/libraries/<lib>.<jax|tg>.pkl``.

    python tests/external/libraries/run.py eqx [name-substring ...]
"""
import os
import pickle
import sys
import time
import traceback
import warnings

warnings.filterwarnings("ignore")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402,F401  (the case files use these names)
import jax.random as jr  # noqa: E402,F401
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "results", "libraries")
CASES = {}


def case(name):
    def deco(f):
        CASES[name] = f
        return f
    return deco


mod = sys.argv[1]
with open(os.path.join(HERE, f"{mod}.py")) as fh:
    exec(fh.read())
only = sys.argv[2:]
out = {}
for name, f in CASES.items():
    if only and not any(o in name for o in only):
        continue
    t0 = time.time()
    try:
        r = f()
        leaves = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(r)]
        out[name] = ("ok", leaves, time.time() - t0)
    except Exception as e:
        tb = traceback.extract_tb(e.__traceback__)
        where = [f"{fr.filename.split('site-packages/')[-1]}:{fr.lineno}" for fr in tb[-4:]]
        out[name] = ("fail", f"{type(e).__name__}: {str(e)[:300]}", where)
tag = "tg" if os.environ.get("TG_JAX_ALIAS") == "1" else "jax"
os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, f"{mod}.{tag}.pkl"), "wb") as fh:
    pickle.dump(out, fh)
print(tag, mod, sum(v[0] == "ok" for v in out.values()), "/", len(out))
