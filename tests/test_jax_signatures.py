"""Signatures of tangentia's public functions against JAX 0.10.2's (``inspect.signature``):
code written for JAX passes arguments by position and by name, so each parameter of JAX's
that a caller can pass by keyword is one of ours by that name, each positional one of JAX's
is ours at the same position (by JAX's name unless JAX's is positional-only), a keyword-only
one of JAX's is keyword-only here too (a positional one of ours there would take what JAX
refuses) and a required one is required.  Defaults are not compared (``keepdims=None`` and
``False`` mean the same), nor our parameters JAX lacks (NumPy's, such as ``interpolation``).

JAX's ufuncs (``jnp.add``, ``jnp.logical_and``, ...) are objects taking ``*args, out=None,
where=None``; ours are functions of their operands (their ``out``/``where`` are not taken).

``KNOWN`` lists the differences left, each with its reason; a difference not listed, or a
listed one that is gone, fails the test (so the list stays the truth).
"""
from __future__ import annotations

import importlib
import inspect

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax
from tangentia.scipy import special as tsp

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)

_P = inspect.Parameter
_KEYWORD = (_P.POSITIONAL_OR_KEYWORD, _P.KEYWORD_ONLY)
_POSITIONAL = (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)

MODULES = ["numpy", "numpy.linalg", "numpy.fft", "lax", "nn", "nn.initializers",
           "scipy.special", "scipy.linalg", "random"]

_ACCURACY = ("lax's unary functions are the primitives' own (tnp's too, the eager hot path); "
             "accuracy= selects a TPU/GPU approximation")
KNOWN = {
    # tangentia.numpy
    "numpy.array": "copy/order/ndmin stay positional (JAX takes them positionally too, with a "
                   "DeprecationWarning)",
    "numpy.linalg.svd": "subset_by_index= not implemented",
    # lax
    "lax.cos": _ACCURACY, "lax.exp": _ACCURACY, "lax.expm1": _ACCURACY, "lax.log": _ACCURACY,
    "lax.log1p": _ACCURACY, "lax.sin": _ACCURACY, "lax.sqrt": _ACCURACY, "lax.tan": _ACCURACY,
    "lax.tanh": _ACCURACY,
    # nn, scipy
    "scipy.linalg.eigh": "SciPy's order of parameters (turbo/eigvals, removed from SciPy, "
                         "not taken)",
    "scipy.linalg.expm": "upper_triangular=/max_squarings= not taken",
    "scipy.linalg.polar": "method=/eps=/max_iterations= not taken",
    "scipy.linalg.expm_frechet": "method/compute_expm positional here",
}


def _problems(js: inspect.Signature, ts: inspect.Signature) -> list[str]:
    """How a call valid for JAX's signature ``js`` can fail, or mean something else, with
    ours ``ts``."""
    jp, tp = list(js.parameters.values()), list(ts.parameters.values())
    if any(p.kind == _P.VAR_KEYWORD for p in tp):
        return []
    ours = {p.name: p for p in tp}
    out = []
    for p in jp:
        q = ours.get(p.name)
        if p.kind in _KEYWORD and (q is None or q.kind not in _KEYWORD):
            out.append(f"no keyword {p.name}")
        elif p.kind == _P.KEYWORD_ONLY and q is not None and q.kind != _P.KEYWORD_ONLY:
            out.append(f"{p.name} positional here")
        if q is not None and p.kind != _P.POSITIONAL_ONLY \
                and (p.default is _P.empty) != (q.default is _P.empty):
            out.append(f"{p.name} {'required' if q.default is _P.empty else 'optional'} here")
    jpos = [p for p in jp if p.kind in _POSITIONAL]
    tpos = [p for p in tp if p.kind in _POSITIONAL]
    var_pos = any(p.kind == _P.VAR_POSITIONAL for p in tp)
    for i, p in enumerate(jpos):
        if i >= len(tpos):
            if not var_pos:
                out.append(f"no position {i} ({p.name})")
        elif p.kind == _P.POSITIONAL_OR_KEYWORD and tpos[i].name != p.name:
            out.append(f"position {i} is {tpos[i].name}, JAX's {p.name}")
    return out


def _differences(module: str) -> dict[str, list[str]]:
    jm = importlib.import_module(f"jax.{module}")
    tm = importlib.import_module(f"tangentia.{module}")
    found = {}
    for name in sorted(dir(jm)):
        jf, tf = getattr(jm, name), getattr(tm, name, None)
        if name.startswith("_") or tf is None or isinstance(jf, type) or not callable(jf) \
                or isinstance(jf, jax.numpy.ufunc):
            continue
        try:
            js, ts = inspect.signature(jf), inspect.signature(tf)
        except (TypeError, ValueError):   # (builtins without one)
            continue
        problems = _problems(js, ts)
        if problems:
            found[f"{module}.{name}"] = problems
    return found


@pytest.mark.parametrize("module", MODULES)
def test_signatures_are_jaxs(module: str) -> None:
    found = _differences(module)
    new = {k: v for k, v in found.items() if k not in KNOWN}
    assert not new, f"signatures that differ from JAX's: {new}"
    gone = [k for k in KNOWN if k.rsplit(".", 1)[0] == module and k not in found]
    assert not gone, f"listed in KNOWN but now as JAX's (remove them): {gone}"


def test_the_comparison_sees_differences() -> None:
    def jax_like(x1, x2, /, *, axis=0, mean=None):
        pass

    def ours(x, y, axis=0):
        pass

    def renamed(a, b, c=None):
        pass

    def target(a, on_true, on_false=None):
        pass

    assert _problems(inspect.signature(jax_like), inspect.signature(ours)) == [
        "axis positional here", "no keyword mean"]
    assert _problems(inspect.signature(target), inspect.signature(renamed)) == [
        "no keyword on_true", "no keyword on_false", "position 1 is b, JAX's on_true",
        "position 2 is c, JAX's on_false"]
    assert _problems(inspect.signature(renamed), inspect.signature(target)) == [
        "no keyword b", "no keyword c", "position 1 is on_true, JAX's b",
        "position 2 is on_false, JAX's c"]


# The renamed and new parameters of this session, called by JAX's keywords: the same numbers
# as JAX's.
X = np.array([[-2.0, 0.5, 3.0], [1.0, 7.0, 11.0]])
M = X.mean(1, keepdims=True)
I8 = np.array([100, 100, -3], np.int8)
_CALLS = [
    ("numpy", "clip", (X,), {"min": 0.0, "max": 2.0}),
    ("numpy", "clip", (X, None, 1.0), {}),
    ("numpy", "gcd", (), {"x1": np.array([4, 6, 9]), "x2": 6}),
    ("numpy", "lcm", (), {"x1": np.array([4, 6, 9]), "x2": 6}),
    ("numpy", "tile", (), {"A": X[0], "reps": 2}),
    ("numpy", "empty_like", (), {"prototype": X, "shape": (2,)}),
    ("numpy", "var", (X,), {"axis": 1, "correction": 1}),
    ("numpy", "var", (X,), {"axis": 1, "mean": M + 1.0}),
    ("numpy", "std", (X,), {"axis": 1, "mean": M, "correction": 0.5}),
    ("numpy", "nanvar", (X,), {"axis": 1, "mean": M}),
    ("numpy", "average", (X, 1, None, False, True), {}),
    ("numpy", "reshape", (X, (3, 2)), {"copy": True}),
    ("numpy", "asarray", ([1.0, 2.0], None, "K"), {"copy": True}),
    ("numpy", "vecdot", (I8, I8), {"preferred_element_type": np.int32}),
    ("numpy", "round", (X,), {"decimals": 1, "out": None}),
    ("numpy", "unstack", (X,), {"axis": 1}),
    ("numpy", "concat", ([X, X],), {"axis": 1}),
    ("numpy", "permute_dims", (X, (1, 0)), {}),
    ("numpy", "issubdtype", (), {"arg1": np.float32, "arg2": np.floating}),
    ("lax", "select", (X > 1,), {"on_true": X, "on_false": -X}),
    ("lax", "reshape", (), {"operand": X, "new_sizes": (3, 2)}),
    ("lax", "transpose", (), {"operand": X, "permutation": (1, 0)}),
    ("lax", "convert_element_type", (), {"operand": X, "new_dtype": np.int32}),
    ("lax", "nextafter", (), {"x1": np.float32(1.0), "x2": np.float32(2.0)}),
    ("lax", "polygamma", (), {"m": 1.0, "x": 2.5}),
    ("lax", "mul", (), {"x": X, "y": X}),
    ("lax", "dot", (X, X.T), {"dimension_numbers": (((1,), (0,)), ((), ()))}),
    ("lax", "switch", (1, [lambda x: x, lambda x: 2 * x]), {"operand": X}),
    ("numpy.linalg", "multi_dot", ([X, X.T, X],), {"precision": None}),
    ("numpy.linalg", "slogdet", (X @ X.T + np.eye(2),), {"method": "qr"}),
    ("nn", "standardize", (X,), {"axis": 1, "algorithm": "stable"}),
    ("nn", "standardize", (X,), {"axis": 0, "algorithm": "fast"}),
    # mean(x**2) - mean**2 is -128 here (cancellation): JAX clips it at 0 (ours was NaN)
    ("nn", "standardize", (np.array([650000000.2, 650000000.1, 650000000.1, 650000000.2]),), {}),
    ("scipy.special", "kl_div", (), {"p": 0.5, "q": 0.25}),
    ("scipy.special", "rel_entr", (), {"p": 0.5, "q": 0.25}),
    ("scipy.special", "expn", (), {"n": 2, "x": 1.5}),
    ("scipy.special", "poch", (), {"z": 2.0, "m": 3.0}),
    ("scipy.special", "owens_t", (), {"h": 0.5, "a": 2.0}),
]


@pytest.mark.parametrize("module, name, args, kwargs", _CALLS,
                         ids=[f"{m}.{n}{i}" for i, (m, n, _, _) in enumerate(_CALLS)])
def test_jax_keywords_give_jax_numbers(module: str, name: str, args: tuple,
                                       kwargs: dict) -> None:
    ours = getattr(importlib.import_module(f"tangentia.{module}"), name)(*args, **kwargs)
    theirs = getattr(importlib.import_module(f"jax.{module}"), name)(*args, **kwargs)
    if isinstance(theirs, (bool, np.bool_)):
        assert ours == theirs
        return
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-13, atol=0)
    assert np.asarray(ours).dtype == np.asarray(theirs).dtype


def test_allow_negative_indices_as_jax() -> None:
    x, m = np.arange(10.0), np.arange(12.0).reshape(3, 4)
    cases = [
        lambda L, i: L.dynamic_slice(x, (i,), (2,), allow_negative_indices=False),
        lambda L, i: L.dynamic_update_slice(x, -np.ones(2), (i,), allow_negative_indices=False),
        lambda L, i: L.dynamic_slice_in_dim(m, i, 2, 1, allow_negative_indices=False),
        lambda L, i: L.dynamic_index_in_dim(m, i, 0, False, allow_negative_indices=False),
        lambda L, i: L.dynamic_update_index_in_dim(m, np.zeros(4), i, 0,
                                                   allow_negative_indices=False),
        lambda L, i: L.dynamic_update_slice_in_dim(m, np.zeros((3, 1)), i, 1,
                                                   allow_negative_indices=False),
        lambda L, i: L.dynamic_slice(m, (i, i), (2, 2), allow_negative_indices=[False, True]),
    ]
    for case in cases:
        for i in (-3, 1, 7):   # traced: a negative start clamps to 0 (no wrap), as XLA's
            ours = tg.jit(lambda i: case(lax, i))(i)
            theirs = jax.jit(lambda i: case(jax.lax, i))(i)
            np.testing.assert_array_equal(ours, theirs)
            ours = tg.vmap(lambda i: case(lax, i))(np.array([i, -1]))
            theirs = jax.vmap(lambda i: case(jax.lax, i))(np.array([i, -1]))
            np.testing.assert_array_equal(ours, theirs)
    with pytest.raises(ValueError, match="Index -3 is out of bounds for dimension 10 if "
                                         "allow_negative_indices=False"):
        lax.dynamic_slice(x, (-3,), (2,), allow_negative_indices=False)


@pytest.mark.parametrize("kw", [{}, {"mode": "clip"}, {"mode": "promise_in_bounds"},
                                {"wrap_negative_indices": False},
                                {"mode": "clip", "wrap_negative_indices": False},
                                {"mode": "fill", "fill_value": -9, "wrap_negative_indices": False},
                                {"mode": "promise_in_bounds", "wrap_negative_indices": True}])
def test_take_along_axis_wrap_negative_indices_as_jax(kw: dict) -> None:
    # (mode "promise_in_bounds" does not wrap negative indices by default, as JAX's: it read
    # x[-1] as the last entry, JAX's as the first)
    x, m = np.arange(5.0), np.arange(12.0).reshape(3, 4)
    idx = np.array([[0, -1, 3, 5], [-4, 1, 2, 0], [1, 1, -2, 9]])
    for a, i, axis in ((x, np.array([-1, -6, 2, 7]), 0), (m, idx, 1), (m, idx, 0)):
        theirs = jax.numpy.take_along_axis(a, i, axis, **kw)
        np.testing.assert_array_equal(tnp.take_along_axis(a, i, axis, **kw), theirs)
        np.testing.assert_array_equal(
            tg.jit(lambda a, i: tnp.take_along_axis(a, i, axis, **kw))(a, i), theirs)


def test_dot_product_attention_residual() -> None:
    r = np.random.default_rng(0)
    q, k, v = r.normal(size=(2, 5, 4, 3)), r.normal(size=(2, 6, 2, 3)), r.normal(size=(2, 6, 2, 3))
    for kw in ({}, {"is_causal": True}, {"mask": r.random((2, 4, 5, 6)) > 0.3},
               {"key_value_seq_lengths": np.array([3, 6], np.int32)}):
        out, lse = tg.nn.dot_product_attention(q, k, v, return_residual=True, **kw)
        jout, jlse = jax.nn.dot_product_attention(q, k, v, return_residual=True, **kw)
        assert lse.shape == jlse.shape == (2, 5, 4)
        # (JAX's CPU path forms the logits in float32: 1e-7 apart from ours, in float64)
        np.testing.assert_allclose(out, jout, atol=1e-6)
        np.testing.assert_allclose(lse, jlse, atol=1e-6)
    # the residual's derivative is the softmax's average of the keys (JAX's is zero)
    f = lambda q: tg.nn.dot_product_attention(q, k, v, return_residual=True)[1].sum()
    e = np.zeros_like(q)
    e[0, 1, 2, 0] = 1e-6
    np.testing.assert_allclose(tg.grad(f)(q)[0, 1, 2, 0], (f(q + e) - f(q - e)) / 2e-6,
                               rtol=1e-7)


def test_new_keywords_under_transformations() -> None:
    x = X[0]
    g = tg.grad(lambda x: tnp.var(x, correction=1))(x)
    np.testing.assert_allclose(g, 2 * (x - x.mean()) / (x.size - 1), rtol=1e-14)
    v = tg.vmap(lambda r: tnp.std(r, mean=tnp.mean(r)))(X)
    np.testing.assert_allclose(v, X.std(1), rtol=1e-14)
    j = tg.jit(lambda x: lax.select(x > 1, on_true=x, on_false=-x))(x)
    np.testing.assert_allclose(j, np.where(x > 1, x, -x))
    assert not np.shares_memory(tnp.reshape(X, (3, 2), copy=True), X)
    assert np.shares_memory(tnp.reshape(X, (3, 2)), X)   # (NumPy's view, as before)


def test_jax_errors_of_the_new_parameters() -> None:
    with pytest.raises(ValueError, match="ddof and correction can't be provided simultaneously"):
        tnp.var(X, ddof=1, correction=1)
    with pytest.raises(NotImplementedError, match="The 'out' argument to jnp.round is not"):
        tnp.round(X, out=X)  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError, match="The 'out' argument to isneginf/isposinf"):
        tnp.isposinf(X, out=X)  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError, match="Only implemented for order='K'"):
        tnp.asarray(X, order="C")
    with pytest.raises(ValueError, match="axis 0 is out of bounds for array of dimension 0"):
        tnp.unstack(1.0)    # (an IndexError before)
    with pytest.raises(ValueError, match="No input was provided to the clip function"):
        tnp.clip()
    with pytest.raises(TypeError):
        tnp.clip(X, a_min=0)  # type: ignore[call-arg]  # (JAX 0.10.2's has no a_min either)
    with pytest.raises(ValueError, match="Cannot specify both `impl` and `dtype` arguments"):
        tg.random.key(0, impl="threefry2x32", dtype="threefry2x32")
    key = tg.random.key(3, dtype=tg.random.key_dtype(impl_spec="threefry2x32"))
    assert np.array_equal(tg.random.key_data(key), tg.random.PRNGKey(3, impl="threefry2x32"))
    np.testing.assert_allclose(tsp.softmax(X, axis=1), jax.scipy.special.softmax(X, axis=1),
                               rtol=1e-14)
