"""Differential fuzzing against JAX 0.10.2 (x64): generated arguments (shapes with 0-d, size-0
and size-1 axes; bool, integer, float32/64 and complex128 dtypes; NaN, infinities, signed zeros,
extreme and negative values) run through ``tangentia.numpy``, ``tangentia.lax`` and the
transformations and through ``jax``, comparing values, shapes, dtypes, errors and derivatives.

The comparison's rules (deliberate differences, not failures):

* dtypes follow NumPy 2's promotion (float64 default, ``bool`` / small integers promote as NumPy
  does), so result dtypes are compared with NumPy's result for the same arguments, values with
  JAX's (cast to the common dtype), or NumPy's where JAX's x64 promotion computes in a narrower
  type (``uint8`` -> ``float32`` in JAX, ``float16`` in NumPy: we compute in float64).
* eager results are ``numpy.ndarray`` instances; only values, shapes and dtypes are compared.
* subnormal values equal zero (XLA flushes them).
* complex results that are not finite are only compared for being not finite: NumPy and XLA
  choose differently among C99's complex infinities (``1 / (-0+0j)``).

Hypothesis runs a few examples per test by default; ``TANGENTIA_FUZZ_EXAMPLES=2000`` runs many
more locally.  The profile is derandomized so a failure reproduces; each bug found by fuzzing
keeps a minimal regression case (an ``@example`` or a parametrized case naming it).
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax as tlax
from _fuzz_jax_common import run as _run  # a result, or the exception raised

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy
jlax = jax.lax

settings.register_profile(
    "fuzz", max_examples=int(os.environ.get("TANGENTIA_FUZZ_EXAMPLES", "25")), deadline=None,
    derandomize=True, suppress_health_check=list(HealthCheck), database=None)
FUZZ = settings.get_profile("fuzz")
# control flow compiles a JAX program per example (~0.7 s): a fifth of the examples
FUZZ_SLOW = settings(FUZZ, max_examples=max(4, FUZZ.max_examples // 5))


# ---------------------------------------------------------------------------
# regressions outside the generated families


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.float64, np.complex128])
def test_numba_identity_program_per_dtype(dtype):
    """The numba backend names a compiled module by its source, and an identity program's source
    is the same for every dtype: it ran the first dtype's compiled code (conj of uint8 gave bool,
    of float64 failed to unbox)."""
    f = tg.jit(tnp.conj, backend="numba")
    x = np.array([1, 0, 2], dtype)
    got = f(x)
    assert got.dtype == jnp.conj(x).dtype == dtype
    np.testing.assert_array_equal(got, x)


# ---------------------------------------------------------------------------
# generated arguments

DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64, np.complex128]
_POOLS: dict[str, list] = {
    "b": [True, False],
    "i": [0, 1, -1, 2, -3, 7, -128, 127, 31, 32, 63, 64, 2 ** 31 - 1, -2 ** 31],
    "f": [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e308, -1e308, 1e-310, 1.0, -1.0, 0.5, -2.5, 3.0,
          700.0, -700.0, 1e-8],
    "c": [complex(np.nan, 0), complex(np.inf, 1), complex(0, -np.inf), complex(-0.0, 0), 1 + 1j,
          -1 - 2j, 0j, complex(1e300, 1e300), 0.5j, 2.0, -3 + 0.5j],
}
SHAPES = st.sampled_from([(), (0,), (1,), (3,), (2, 1), (1, 3), (2, 3), (0, 2), (2, 1, 3)])


@st.composite
def arrays(draw, dtypes=DTYPES, shape=None, pool=None):
    """An array of a drawn dtype and shape, its values from the dtype's pool of edge values
    (integers clipped into the dtype's range; ``pool`` replaces the inexact pools)."""
    dt = np.dtype(draw(st.sampled_from(dtypes)))
    shape = draw(SHAPES) if shape is None else shape
    vals = pool if pool and dt.kind in "fc" else _POOLS["i" if dt.kind in "iu" else dt.kind]
    flat = draw(st.lists(st.sampled_from(vals), min_size=int(np.prod(shape)),
                         max_size=int(np.prod(shape))))
    if dt.kind in "iu":
        info = np.iinfo(dt)
        flat = [min(max(int(v), info.min), info.max) for v in flat]
    with np.errstate(all="ignore"):
        return np.array(flat, dtype=dt).reshape(shape)


def _leaves(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _close(a, b, tol):
    """Elementwise: equal, both NaN (componentwise for complex), or within ``tol``."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind not in "fc" and b.dtype.kind not in "fc":
        return a == b
    complex_ = a.dtype.kind == "c" or b.dtype.kind == "c"
    a, b = a.astype(complex), b.astype(complex)
    tiny = np.finfo(np.float64).tiny  # subnormals as zero: XLA flushes them
    same = [(x == y) | (np.isnan(x) & np.isnan(y)) | np.isclose(x, y, rtol=tol, atol=0)
            | ((np.abs(x) < tiny) & (np.abs(y) < tiny))
            for x, y in ((a.real, b.real), (a.imag, b.imag))]
    if complex_:  # C99's complex infinities: implementations differ, only non-finiteness counts
        # (and a part far below the other's magnitude is noise: |a - b| <= tol |b| suffices)
        return ((same[0] & same[1]) | (~np.isfinite(a) & ~np.isfinite(b))
                | (np.abs(a - b) <= tol * np.abs(b)))
    return same[0] & same[1]


def _tol(*arrays):
    dts = {np.asarray(a).dtype.name for a in arrays}
    return 2e-3 if "float16" in dts else 1e-5 if dts & {"float32", "complex64"} else 1e-12


def check(name, ours, theirs, reference=None, dtype_of=None, tol=None):
    """Compare our result (or exception) with JAX's and NumPy's.

    Exceptions: if we raise, JAX or NumPy must raise the same type; if JAX raises and we do not,
    NumPy must not (we follow NumPy where JAX refuses).  Values: each element equal (NaN equal
    NaN) to JAX's or, where JAX computes differently (a narrower dtype, integer corner cases),
    to NumPy's.  Shapes are JAX's; dtypes are NumPy's (``dtype_of`` overrides for a documented
    deliberate difference).
    """
    if isinstance(ours, Exception):
        allowed = [type(r) for r in (theirs, reference) if isinstance(r, Exception)]
        assert allowed, f"{name}: we raised {ours!r}; JAX gave {theirs!r}"
        assert any(isinstance(ours, t) for t in allowed), (name, ours, theirs, reference)
        return
    if isinstance(theirs, Exception):
        assert reference is not None and not isinstance(reference, Exception), \
            f"{name}: JAX raised {theirs!r}, we returned {ours!r}"
        theirs = reference
    outs, jouts = _leaves(ours), _leaves(theirs)
    refs = _leaves(reference) if reference is not None and not isinstance(reference, Exception) \
        else [None] * len(outs)
    assert len(outs) == len(jouts), (name, len(outs), len(jouts))
    for k, (a, b, n) in enumerate(zip(outs, jouts, refs)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, f"{name}[{k}]: shape {a.shape}, JAX {b.shape}"
        want = dtype_of if dtype_of is not None else (np.asarray(n).dtype if n is not None
                                                      else None)
        if want is not None:
            assert a.dtype == want, f"{name}[{k}]: dtype {a.dtype}, want {want} (JAX {b.dtype})"
        ok = _close(a, b, tol or _tol(a, b))
        if n is not None:
            ok = ok | _close(a, np.asarray(n), tol or _tol(a, n))
        if not np.all(ok):
            bad = np.flatnonzero(~np.broadcast_to(ok, a.shape))[:3]
            raise AssertionError(f"{name}[{k}] differs at flat {bad}: ours {a.ravel()[bad]}, "
                                 f"JAX {b.ravel()[bad]}"
                                 + ("" if n is None else f", NumPy {np.ravel(n)[bad]}"))


# ---------------------------------------------------------------------------
# elementwise functions of tangentia.numpy (every NumPy ufunc JAX has)

def _ufuncs(nin):
    return sorted(n for n in dir(jnp) if isinstance(getattr(np, n, None), np.ufunc)
                  and getattr(np, n).nin == nin and hasattr(tnp, n)
                  and n not in ("matmul", "vecdot", "matvec", "vecmat"))


UNARY, BINARY = _ufuncs(1), _ufuncs(2)
# deliberate differences from NumPy's result dtype (JAX's choice)
_DTYPE_RULES = {
    # conj of bool stays bool (NumPy's loop makes it int8)
    ("conj", "b"): np.bool_, ("conjugate", "b"): np.bool_,
}


def _want_dtype(name, ref, *args):
    """The documented deliberate difference from NumPy's result dtype, if any."""
    kinds = "".join(np.asarray(a).dtype.kind for a in args)
    if name == "reciprocal" and kinds in "biu":  # JAX's numbers (1/2 = 0.5), in float64
        return np.float64
    return _DTYPE_RULES.get((name, kinds))


def _elementwise_case(name, *args):
    ours = _run(getattr(tnp, name), *args)
    ref = _run(getattr(np, name), *args)
    check(name, ours, _run(getattr(jnp, name), *args), ref, _want_dtype(name, ref, *args))


@pytest.mark.skipif("TANGENTIA_FUZZ_EXAMPLES" not in os.environ,
                    reason="the exhaustive sweep compiles ~600 JAX programs (40 s): run it with "
                           "TANGENTIA_FUZZ_EXAMPLES set; test_unary_elementwise samples it")
@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_elementwise_edge_values(dtype):
    """Every unary function on every edge value of each dtype."""
    kind = np.dtype(dtype).kind
    pool = _POOLS["i" if kind in "iu" else kind]
    with np.errstate(all="ignore"):
        x = np.array(pool).astype(dtype)
    for name in UNARY:
        _elementwise_case(name, x)


@FUZZ
@given(name=st.sampled_from(UNARY), x=arrays())
def test_unary_elementwise(name, x):
    _elementwise_case(name, x)


@FUZZ
@given(name=st.sampled_from(BINARY), data=st.data())
def test_binary_elementwise(name, data):
    """Binary functions with broadcasting and mixed dtypes (NumPy's promotion)."""
    s1, s2 = data.draw(st.sampled_from([((), ()), ((3,), ()), ((2, 1), (3,)), ((0,), (1,)),
                                        ((1, 3), (2, 1)), ((2, 3), (2, 3)), ((), (2,))]))
    _elementwise_case(name, data.draw(arrays(shape=s1)), data.draw(arrays(shape=s2)))


# ---------------------------------------------------------------------------
# reductions with axis / keepdims / where / initial / dtype

REAL = [np.bool_, np.int32, np.int64, np.float32, np.float64]
_SMALL = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 2.5, 3.0, -2.0]
REDUCTIONS = ["sum", "prod", "max", "min", "mean", "var", "std", "all", "any", "nansum",
              "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd", "ptp",
              "count_nonzero", "argmax", "argmin", "nanargmax", "nanargmin"]


@FUZZ
@given(name=st.sampled_from(REDUCTIONS), data=st.data())
def test_reductions(name, data):
    x = data.draw(arrays(REAL + [np.complex128] if name not in ("max", "min", "ptp")
                         else REAL, pool=_SMALL))
    nd = x.ndim
    axes = [None] + list(range(-nd, nd)) + ([(0, -1)] if nd >= 2 else [])
    if name.startswith(("argm", "nanargm")):
        axes = axes[:-1] if nd >= 2 else axes
    kw = {"axis": data.draw(st.sampled_from(axes)), "keepdims": data.draw(st.booleans())}
    if name in ("sum", "prod", "max", "min", "mean", "all", "any") and nd and data.draw(
            st.booleans()):
        kw["where"] = data.draw(arrays([np.bool_], shape=x.shape))
    if name in ("max", "min") and ("where" in kw or data.draw(st.booleans())):
        kw["initial"] = data.draw(st.sampled_from([-5.0, 1, 5.0]))
    if name in ("sum", "prod") and data.draw(st.booleans()):
        kw["dtype"] = data.draw(st.sampled_from([np.float32, np.complex128]))
    if name.startswith("nanarg") and x.dtype.kind == "c":
        return  # JAX refuses complex (gt of complex): NumPy's order is ours
    ours, theirs = _run(getattr(tnp, name), x, **kw), _run(getattr(jnp, name), x, **kw)
    check(f"{name}({x!r}, {kw})", ours, theirs, _run(getattr(np, name), x, **kw))


@pytest.mark.parametrize("name, x, kw", [
    # an empty axis with ``initial``: the initial value (we raised "zero-size array")
    ("max", np.zeros((0,)), {"initial": -5.0}),
    ("min", np.zeros((2, 0)), {"axis": 1, "initial": 1, "keepdims": True}),
    ("max", np.zeros((0, 3)), {"axis": 0, "initial": 2.0, "where": np.zeros((0, 3), bool)}),
    # ``initial`` takes the array's dtype (we promoted int32 to float64)
    ("max", np.array([1, -7], np.int32), {"initial": -5.0, "where": np.array([False, True])}),
    ("min", np.array([True, False]), {"initial": 1}),
    # variances of complex values are real; an infinite entry gives NaN, not inf
    ("nanvar", np.array([1 + 1j, np.nan, -2j]), {}),
    ("nanstd", np.array([[np.inf, 1.0, np.nan]], np.float32), {"axis": 1}),
])
def test_reduction_regressions(name, x, kw):
    check(name, _run(getattr(tnp, name), x, **kw), _run(getattr(jnp, name), x, **kw),
          _run(getattr(np, name), x, **kw))
    staged = tg.jit(lambda a: getattr(tnp, name)(a, **kw))(x)
    np.testing.assert_array_equal(staged, getattr(tnp, name)(x, **kw))


# ---------------------------------------------------------------------------
# transformations: jit equals eager; grad and jvp equal JAX's (float64, kinks included)

_DIFFERENTIABLE = [n for n in UNARY if n not in (
    "sign", "floor", "ceil", "rint", "trunc", "isnan", "isinf", "isfinite", "signbit",
    "logical_not", "bitwise_not", "bitwise_invert", "invert", "bitwise_count", "spacing",
    "frexp", "modf", "positive")]
_KINKS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 2.0, 1e-8, -700.0, 30.0]


def _finite(r):
    """Derivatives with their infinities as NaN: at singular points only the non-finiteness
    is compared (JAX's arccosh'(-1) is inf, ours NaN: both outside the domain); subnormals
    as 0 (XLA flushes them)."""
    if isinstance(r, Exception):
        return r
    out = []
    for v in map(np.asarray, _leaves(r)):
        v = np.where(np.isfinite(v), v, np.nan)
        out.append(np.where(np.abs(v) < np.finfo(np.float64).tiny, 0.0, v))
    return out


@FUZZ
@given(name=st.sampled_from(_DIFFERENTIABLE), x=arrays([np.float64], pool=_KINKS))
def test_unary_jit_grad_jvp(name, x):
    """jit equals eager; the derivative of sum(f(x)) and f's jvp equal JAX's where JAX's are
    finite (NaN/inf derivatives at singular points: only the non-finiteness is compared)."""
    f, jf = getattr(tnp, name), getattr(jnp, name)
    eager = _run(f, x)
    if isinstance(eager, Exception):
        return
    np.testing.assert_array_equal(tg.jit(f)(x), eager)
    g = _run(tg.grad(lambda v: tnp.sum(f(v))), x)
    jg = jax.grad(lambda v: jnp.sum(jf(v)))(x)
    # derivatives only where the value is finite (outside the domain JAX's acosh'(-700) is
    # finite, ours NaN)
    undefined = ~np.isfinite(np.asarray(eager))

    def defined(r):
        return r if isinstance(r, Exception) else [np.where(undefined, np.nan, v)
                                                   for v in _finite(r)]
    check(f"grad {name}({x!r})", defined(g), defined(jg))
    t = np.linspace(-1.0, 1.0, x.size).reshape(x.shape)
    check(f"jvp {name}({x!r})", defined(_run(tg.jvp, f, (x,), (t,))),
          defined(jax.jvp(jf, (x,), (t,))))


_BINARY_DIFF = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "fmax",
                "fmin", "arctan2", "hypot", "logaddexp", "logaddexp2", "copysign", "fmod",
                "remainder", "float_power", "heaviside"]
# not compared: nextafter (JAX has no derivative; ours is zero) and ldexp (JAX's derivative in
# x is 1 at x = 0, ours 2**y, the true one)


@FUZZ
@given(name=st.sampled_from(_BINARY_DIFF), x=arrays([np.float64], shape=(3,), pool=_KINKS),
       y=arrays([np.float64], shape=(3,), pool=_KINKS))
@example(name="fmax", x=np.zeros(3), y=np.zeros(3))  # ties: JAX's derivative goes to x2 alone
@example(name="fmin", x=np.ones(3), y=np.ones(3))
@example(name="copysign", x=np.array([-0.0, 0.0, -2.0]), y=np.array([0.0, -0.0, -1.0]))
def test_binary_grad(name, x, y):
    """Gradients of binary functions, ties of max/min and zeros of abs-like kinks included."""
    f, jf = getattr(tnp, name), getattr(jnp, name)
    g = _run(tg.grad(lambda a, b: tnp.sum(f(a, b)), argnums=(0, 1)), x, y)
    jg = _run(jax.grad(lambda a, b: jnp.sum(jf(a, b)), argnums=(0, 1)), x, y)
    check(f"grad {name}({x!r}, {y!r})", _finite(g), _finite(jg))


# ---------------------------------------------------------------------------
# indexing: negative and out-of-bounds indices (JAX's clamping / filling), boolean masks,
# functional updates with modes and duplicates, take / take_along_axis

_INDEX = st.sampled_from([0, 1, -1, 2, -3, 3, 5, -7])


@FUZZ
@given(x=arrays([np.int64, np.float64], shape=(3, 4)), i=_INDEX, j=_INDEX,
       how=st.sampled_from(["get", "set", "add", "min", "max", "mul"]),
       mode=st.sampled_from([None, "clip", "drop", "fill", "promise_in_bounds"]),
       dup=st.booleans())
def test_at_updates(x, i, j, how, mode, dup):
    """``.at[idx].op(v, mode=...)`` with duplicate and out-of-bounds indices, eager and jit."""
    rows = np.array([i, i if dup else j])
    if mode == "promise_in_bounds":
        rows = rows % 3  # out of bounds is undefined behaviour there
    v = np.array([[2.0], [-1.0]]) if how != "get" else None
    kw = {} if mode is None else {"mode": mode}
    if how == "fill" or (how == "get" and mode == "fill"):
        kw["fill_value"] = -9

    def upd(at, a):
        op = getattr(at(a)[rows], how)
        return op(**kw) if how == "get" else op(v.astype(a.dtype), **kw)

    ours = _run(upd, lambda a: tnp.asarray(a).at, x)
    theirs = _run(upd, lambda a: jnp.asarray(a).at, x)
    check(f"at[{rows}].{how}({kw})", ours, theirs)
    if not isinstance(ours, Exception):
        np.testing.assert_array_equal(tg.jit(lambda a: upd(lambda b: b.at, a))(x), ours)


@FUZZ
@given(x=arrays([np.float64, np.int32, np.bool_], shape=(2, 3)), idx=st.lists(_INDEX, max_size=4),
       axis=st.sampled_from([None, 0, 1, -1]),
       mode=st.sampled_from([None, "clip", "wrap", "fill"]))
@example(x=np.ones((2, 3), np.int32), idx=[-7, 5, -1], axis=1, mode=None)  # take had no mode
def test_take(x, idx, axis, mode):
    """take with every mode (JAX's default fills out-of-bounds indices: we follow JAX) and
    take_along_axis."""
    idx = np.array(idx, np.int64)
    ours, theirs = _run(tnp.take, x, idx, axis=axis, mode=mode), _run(jnp.take, x, idx,
                                                                      axis=axis, mode=mode)
    check(f"take({idx}, axis={axis}, mode={mode})", ours, theirs)
    if axis is not None and idx.size:  # in bounds (negative ones too)
        ind = np.expand_dims(np.clip(idx, -x.shape[axis], x.shape[axis] - 1), 1 - axis % 2)
        check(f"take_along_axis({ind}, {axis})", _run(tnp.take_along_axis, x, ind, axis),
              _run(jnp.take_along_axis, x, ind, axis))


@FUZZ
@given(x=arrays([np.float64], shape=(3, 4), pool=_SMALL), i=_INDEX, j=_INDEX, k=_INDEX,
       form=st.integers(0, 5))
def test_getitem(x, i, j, k, form):
    """Basic, advanced and boolean indexing; out-of-bounds integer arrays are clamped
    (JAX's gather), out-of-bounds scalars raise IndexError as JAX's do."""
    forms = [lambda a: a[i], lambda a: a[np.array([i, j])], lambda a: a[:, np.array([j, k])],
             lambda a: a[np.array([i, j]), np.array([k, k])], lambda a: a[a > 0],
             lambda a: a[i:j, ::k or 1]]
    f = forms[form]
    ours, theirs = _run(f, tnp.asarray(x)), _run(f, jnp.asarray(x))
    if isinstance(ours, IndexError) and not isinstance(theirs, Exception):
        return  # eager out-of-bounds: NumPy's IndexError (JAX clamps)
    check(f"form {form} i={i} j={j} k={k}", ours, theirs)
    if form != 4:  # a boolean mask's result has no static shape
        check(f"jit form {form} i={i} j={j} k={k}", _run(tg.jit(f), x), theirs)


# ---------------------------------------------------------------------------
# sorting, cumulative ops, quantiles; vmap with in_axes variants; shape errors


@FUZZ
@given(x=arrays([np.float64, np.int32, np.bool_], pool=_SMALL),
       name=st.sampled_from(["sort", "argsort", "cumsum", "cumprod", "nancumsum", "nancumprod",
                             "argmax", "argmin", "unique", "searchsorted", "median", "quantile",
                             "nanquantile"]),
       data=st.data())
def test_sorting_cumulative_quantiles(x, name, data):
    """NaNs sort last; argmax/argmin find the first NaN; unique with size= pads; quantile
    methods; cumulative ops along each axis."""
    kw, args = {}, (x,)
    if name in ("sort", "argsort", "cumsum", "cumprod", "nancumsum", "nancumprod", "argmax",
                "argmin", "median", "quantile", "nanquantile"):
        kw["axis"] = data.draw(st.sampled_from([None] + list(range(-x.ndim, x.ndim))))
        if name in ("sort", "argsort") and kw["axis"] is None:
            return  # JAX and NumPy flatten, no axis=None variant to compare beyond that
    if name == "argsort":
        kw["stable"] = True
    if name == "unique":
        kw = {"size": data.draw(st.integers(1, 5)), "return_counts": data.draw(st.booleans())}
    if name == "searchsorted":
        if x.ndim != 1:
            return
        args = (np.sort(x), data.draw(arrays([x.dtype.type], shape=(3,), pool=_SMALL)))
        kw["side"] = data.draw(st.sampled_from(["left", "right"]))
    if name in ("quantile", "nanquantile"):
        if x.dtype.kind == "b" or x.size == 0:
            return  # JAX refuses bool, and its empty-axis error is an internal gather error
        args = (x, data.draw(st.sampled_from([0.0, 0.3, 0.5, 1.0, np.array([0.25, 0.9])])))
        kw["method"] = data.draw(st.sampled_from(["linear", "lower", "higher", "midpoint",
                                                  "nearest"]))
    if name == "median" and x.size == 0:
        return
    ours = _run(getattr(tnp, name), *args, **kw)
    # NumPy's values where JAX's differ (JAX's quantile of [inf] is NaN)
    ref = _run(getattr(np, name), *args, **kw) if name != "unique" else None
    # quantiles of integers are float64 for every method (JAX's kind; NumPy keeps the dtype for
    # lower/higher/nearest)
    dt = np.float64 if "quantile" in name and x.dtype.kind in "iub" else None
    check(f"{name}({args}, {kw})", ours, _run(getattr(jnp, name), *args, **kw), ref, dt)
    if not isinstance(ours, Exception) and name != "unique":
        staged = _run(tg.jit(lambda *a: getattr(tnp, name)(*a, **kw)), *args)
        check(f"jit {name}", staged, ours)


def test_quantile_equal_infinite_ends():
    """Interpolating towards an infinite entry gives it, as JAX's (we gave NumPy's NaN)."""
    x = np.array([np.inf, np.inf, 1.0])
    check("quantile", tnp.quantile(x, [0.3, 0.9]), jnp.quantile(x, np.array([0.3, 0.9])))
    np.testing.assert_array_equal(tg.jit(tnp.quantile)(x, 0.8), np.inf)


@FUZZ
@given(x=arrays([np.float64], shape=(2, 3), pool=_SMALL),
       y=arrays([np.float64], shape=(3,), pool=_SMALL),
       in_axes=st.sampled_from([(0, None), (1, 0), (-1, 0), (None, 0)]),
       out_axes=st.sampled_from([0, 1, -1]),
       name=st.sampled_from(["add", "maximum", "arctan2", "where", "outer", "cumsum", "sort",
                             "dot"]))
def test_vmap_in_axes(x, y, in_axes, out_axes, name):
    """vmap with in_axes / out_axes variants equals JAX's vmap."""
    def fn(np_):
        if name == "where":
            return lambda a, b: np_.where(a > b, a, b)
        if name == "cumsum":
            return lambda a, b: np_.cumsum(a) * b
        if name == "sort":
            return lambda a, b: np_.sort(a - b)
        return getattr(np_, name)
    if in_axes[0] is None:
        x = x[0]
    if in_axes[1] is not None and in_axes[0] in (0, None):
        y = y[:2]
    ours = _run(tg.vmap(fn(tnp), in_axes=in_axes, out_axes=out_axes), x, y)
    theirs = _run(jax.vmap(fn(jnp), in_axes=in_axes, out_axes=out_axes), x, y)
    check(f"vmap {name} {in_axes} {out_axes}", ours, theirs)


# ---------------------------------------------------------------------------
# lax: elementwise and structural ops with JAX's conventions; control flow with random bodies

_LAX_UNARY = ["abs", "neg", "sign", "floor", "ceil", "round", "exp", "log", "log1p", "expm1",
              "sin", "cos", "tan", "tanh", "sqrt", "rsqrt", "cbrt", "logistic", "erf", "erfc",
              "lgamma", "digamma", "erf_inv", "is_finite", "square", "integer_pow", "exp2"]
_LAX_BINARY = ["add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter",
               "eq", "ne", "lt", "le", "gt", "ge"]


_NORMAL = [v for v in _POOLS["f"] if v != 1e-310]  # XLA flushes subnormal inputs too


@FUZZ
@given(name=st.sampled_from(_LAX_UNARY + _LAX_BINARY),
       x=arrays([np.float64], shape=(4,), pool=_NORMAL),
       y=arrays([np.float64], shape=(4,), pool=_NORMAL))
@example(name="rem", x=np.array([-7.0, 7.0, -0.0, 5.5]), y=np.array([3.0, -3.0, 2.0, np.inf]))
def test_lax_elementwise(name, x, y):
    """lax's elementwise ops take same-dtype operands and keep their dtype (rem is C's fmod:
    the sign of x, as JAX's)."""
    if name in ("digamma", "lgamma"):  # poles (0, negative integers): JAX NaN, SciPy's inf
        x = np.where((x <= 0) & (x == np.round(x)), 0.5, x)
    args = (x,) if name in _LAX_UNARY else (x, y)
    kw = {"y": 3} if name == "integer_pow" else {}
    check(f"lax.{name}", _run(getattr(tlax, name), *args, **kw),
          _run(getattr(jlax, name), *args, **kw))


@FUZZ_SLOW
@given(x=arrays([np.float64], shape=(3,), pool=_SMALL), n=st.integers(0, 4),
       ops=st.lists(st.sampled_from(["sin", "mul", "add", "max", "where"]), min_size=1,
                    max_size=3))
def test_lax_control_flow(x, n, ops):
    """scan / fori_loop / while_loop / cond / switch with random small bodies equal JAX's
    (values and, for scan and fori_loop, gradients)."""
    def body(np_, c):
        for op in ops:
            c = {"sin": lambda v: np_.sin(v), "mul": lambda v: v * 0.5,
                 "add": lambda v: v + 1.0, "max": lambda v: np_.maximum(v, -v),
                 "where": lambda v: np_.where(v > 0, v, 0.1 * v)}[op](c)
        return c

    def programs(lax_, np_):
        return {
            "scan": lambda v: lax_.scan(lambda c, _: (body(np_, c), c.sum()), v, None,
                                        length=n),
            "fori": lambda v: lax_.fori_loop(0, n, lambda i, c: body(np_, c) + i, v),
            "while": lambda v: lax_.while_loop(lambda c: c[1] < n,
                                               lambda c: (body(np_, c[0]), c[1] + 1), (v, 0))[0],
            "cond": lambda v: lax_.cond(n % 2 == 0, lambda u: body(np_, u), lambda u: -u, v),
            "switch": lambda v: lax_.switch(n, [lambda u: u, lambda u: body(np_, u),
                                                lambda u: u * 2.0], v),
        }
    ours, theirs = programs(tlax, tnp), programs(jlax, jnp)
    for k in ours:
        check(f"{k} {ops} n={n}", _run(ours[k], x), _run(theirs[k], x))
        check(f"jit {k}", _run(tg.jit(ours[k]), x), _run(theirs[k], x))
    if np.isfinite(x).all():
        for k in ("scan", "fori"):
            def loss(fs, v, k=k):
                out = fs[k](v)
                return (out[0] if isinstance(out, tuple) else out).sum()
            check(f"grad {k} {ops}", _finite(_run(tg.grad(lambda v: loss(ours, v)), x)),
                  _finite(jax.grad(lambda v: loss(theirs, v))(x)))


# ---------------------------------------------------------------------------
# errors: JAX's exception type, our message beginning with JAX's wording

# Known difference not listed: the operator form of a broadcasting mismatch on eager arrays
# (x + y) is NumPy's own operator and raises its ValueError (JAX: TypeError).
_ERRORS = [
    ("sum with a bad axis", lambda np_: np_.sum(np.ones((2, 3)), axis=2)),
    ("moveaxis out of range", lambda np_: np_.moveaxis(np.ones((2, 3)), 3, 0)),  # was wrapped
    ("squeeze of a non-unit axis", lambda np_: np_.squeeze(np.ones((2, 3)), axis=0)),
    ("reshape to a wrong size", lambda np_: np_.reshape(np.ones(6), (4, -1))),
    ("stack mismatch", lambda np_: np_.stack([np.ones(2), np.ones(3)])),
    ("split unequally", lambda np_: np_.split(np.ones(5), 2)),
    ("matmul mismatch", lambda np_: np_.matmul(np.ones((2, 3)), np.ones((2, 3)))),
    ("take with a bad mode", lambda np_: np_.take(np.ones(3), np.array([0]), mode="bogus")),
    ("hypot of complex", lambda np_: np_.hypot(np.ones(2) * 1j, 1.0)),
    ("unique of empty with size", lambda np_: np_.unique(np.ones(0), size=2)),
    ("concatenate mismatch", lambda np_: np_.concatenate([np.ones((2, 3)), np.ones((2, 4))])),
    ("concatenate ranks", lambda np_: np_.concatenate([np.ones((2, 3)), np.ones(2)], axis=1)),
    ("pad with an unknown mode", lambda np_: np_.pad(np.ones(3), 1, mode="bogus")),
]


@pytest.mark.parametrize("what, f", _ERRORS, ids=[e[0] for e in _ERRORS])
def test_errors_match_jax(what, f):
    ours, theirs = _run(f, tnp), _run(f, jnp)
    assert isinstance(theirs, Exception), f"JAX accepts {what}"
    assert isinstance(ours, type(theirs)), (what, ours, theirs)
    if what.startswith(("concatenate", "pad")):  # JAX's whole message, then our detail
        assert str(ours).startswith(str(theirs)), (str(ours), str(theirs))
