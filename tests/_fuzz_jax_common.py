"""What the differential fuzz files ``test_fuzz_jax_*.py`` share: the hypothesis profile, running
a function to its result or exception, and comparing two results (pytrees) leaf by leaf.

The comparison treats NaN as equal to NaN and compares shapes exactly; values within ``rtol``
(and ``atol`` for entries that cancel to about zero).  Each file imports JAX itself (and skips
without it), so this module does not import JAX.
"""
from __future__ import annotations

import os
import warnings
from typing import Any, Callable

import numpy as np
from hypothesis import HealthCheck, settings

import tangentia as tg

settings.register_profile(
    "fuzz_jax_more", max_examples=int(os.environ.get("TANGENTIA_FUZZ_EXAMPLES", "12")),
    deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None)
FUZZ = settings.get_profile("fuzz_jax_more")


def run(f: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """``f``'s result, or the exception it raised (NumPy's warnings silenced)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return f(*args, **kw)
        except Exception as e:  # noqa: BLE001 - the comparison looks at the exception
            return e


def leaves(r: Any) -> list[Any]:
    return [np.asarray(v) for v in tg.tree_util.tree_leaves(r)]


def assert_same(name: str, ours: Any, theirs: Any, rtol: float = 1e-10, atol: float = 0.0,
                dtypes: bool = True) -> None:
    """Equal results: both exceptions of JAX's type (ours may subclass it), or the same number
    of leaves with equal shapes (and dtypes), values within the tolerances, NaN where JAX's is."""
    if isinstance(theirs, Exception):
        assert isinstance(ours, Exception), f"{name}: JAX raised {theirs!r}, we returned {ours!r}"
        assert isinstance(ours, type(theirs)), f"{name}: we raised {ours!r}, JAX {theirs!r}"
        return
    assert not isinstance(ours, Exception), f"{name}: we raised {ours!r}; JAX gave {theirs!r}"
    a_leaves, b_leaves = leaves(ours), leaves(theirs)
    assert len(a_leaves) == len(b_leaves), (name, len(a_leaves), len(b_leaves))
    for k, (a, b) in enumerate(zip(a_leaves, b_leaves)):
        assert a.shape == b.shape, f"{name}[{k}]: shape {a.shape}, JAX {b.shape}"
        if dtypes:
            assert a.dtype == b.dtype, f"{name}[{k}]: dtype {a.dtype}, JAX {b.dtype}"
        if a.dtype.kind not in "fc":
            np.testing.assert_array_equal(a, b, err_msg=name)
            continue
        with np.errstate(all="ignore"):
            ok = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True) | (a == b)
        if not np.all(ok):
            bad = np.flatnonzero(~ok)[:4]
            raise AssertionError(f"{name}[{k}] differs at flat {bad}: ours {a.ravel()[bad]}, "
                                 f"JAX {b.ravel()[bad]}")
