"""The layout of ``tangentia.numpy``: its public names, docstrings, import
structure and the operators/methods it installs on traced values.

``tangentia.numpy`` was one 3,000-line file; it is now one module per topic
with ``__init__`` only re-exporting.  These tests pin what must not change
(the public names, baked in below from the single-file version) and what the
split promised (docstrings everywhere, imports without cycles, every Tracer
method installed in one place and working like NumPy's).
"""
import ast
import inspect
import os

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.core import Tracer

PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(tg.__file__)))
TNP_DIR = os.path.dirname(os.path.abspath(tnp.__file__))

# Every public name of the single-file tangentia/numpy/__init__.py (dir() without
# underscore names), computed from it before the split.  Four names of that dir()
# are left out on purpose: ``builtins``, ``math`` and ``operator`` (standard modules
# it imported for its own use) and ``annotations`` (``from __future__``).
PUBLIC_NAMES_BEFORE = set("""
abs absolute acos acosh add all allclose amax amin angle any append apply_along_axis arange
arccos arccosh arcsin arcsinh arctan arctan2 arctanh argmax argmin argpartition argsort
argwhere around array array_equal array_equiv array_split asarray asin asinh astype at atan
atan2 atanh atleast_1d atleast_2d atleast_3d average bincount bitwise_and bitwise_not
bitwise_or bitwise_xor bool_ broadcast_arrays broadcast_shapes broadcast_to c_ can_cast
cbrt ceil clip column_stack complex128 complex64 complexfloating concat concatenate conj
conjugate convolve copy copysign corrcoef correlate cos cosh count_nonzero cov cross cummax
cummin cumprod cumsum cumulative_prod cumulative_sum deg2rad degrees delete diag
diag_indices diag_indices_from diagflat diagonal diff digitize divide divmod dot double
dsplit dstack dtype e ediff1d einsum empty empty_like equal euler_gamma exp exp2
expand_dims expm1 eye fabs fft finfo fix flatnonzero flip fliplr flipud float16 float32 float64
float_ float_power floating floor floor_divide fmax fmin fmod full full_like geomspace
greater greater_equal heaviside hsplit hstack hypot identity iinfo imag index_exp indices
inexact inf inner int16 int32 int64 int8 int_ integer interp intersect1d invert isclose
iscomplex iscomplexobj isdtype isfinite isin isinf isnan isneginf isposinf isreal isrealobj
isscalar issubdtype iterable ix_ kron ldexp less less_equal lexsort linalg linspace log
log10 log1p log2 logaddexp logaddexp2 logical_and logical_not logical_or logical_xor
logspace matmul matrix_transpose matvec max maximum mean median meshgrid mgrid min minimum
mod modf moveaxis multiply nan nan_to_num nanargmax nanargmin nancumprod nancumsum nanmax
nanmean nanmedian nanmin nanpercentile nanprod nanquantile nanstd nansum nanvar ndarray
ndim negative newaxis nonzero not_equal number ogrid ones ones_like outer pad partition
percentile permute_dims pi piecewise polyadd polyder polyint polymul polysub polyval
positive pow power prod promote_types ptp quantile r_ rad2deg radians ravel
ravel_multi_index real reciprocal remainder repeat reshape result_type rint roll rollaxis
rot90 round s_ searchsorted select setdiff1d shape sign signbit sin sinc single sinh size
sort split sqrt square squeeze stack std subtract sum swapaxes take take_along_axis tan
tanh tensordot tile trace transpose trapezoid tri tril tril_indices tril_indices_from triu
triu_indices triu_indices_from true_divide trunc uint uint16 uint32 uint64 uint8 union1d
unique unravel_index unstack vander var vdot vecdot vecmat vectorize vsplit vstack where
zeros zeros_like
""".split())


def test_public_names_are_kept_and_exported():
    # No public name of the split-up module is lost, and __all__ lists exactly
    # the public names (new functions are added to both; no helper leaks out).
    now = {n for n in dir(tnp) if not n.startswith("_")} - {"annotations"}
    assert len(PUBLIC_NAMES_BEFORE) == 326
    assert sorted(PUBLIC_NAMES_BEFORE - now) == [], "names missing from tangentia.numpy"
    assert sorted(now - set(tnp.__all__) - {"fft", "linalg"}) == [], \
        "public names missing from __all__"
    assert sorted(set(tnp.__all__) - now) == [], "__all__ names that do not exist"
    assert len(tnp.__all__) == len(set(tnp.__all__))


def test_jax_bool_name_and_ndarray_isinstance():
    assert tnp.bool == np.bool_ and tnp.dtype(tnp.bool) == np.dtype(bool)
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        tnp.nonexistent  # noqa: B018
    seen = []
    tg.vmap(lambda r: seen.append(isinstance(r, tnp.ndarray)) or r)(np.ones((2, 3)))
    assert seen == [True] and isinstance(np.ones(2), tnp.ndarray)
    assert not isinstance([1.0], tnp.ndarray)


@pytest.mark.parametrize("module", [tnp, tnp.linalg, tnp.fft],
                         ids=["numpy", "numpy.linalg", "numpy.fft"])
def test_every_public_function_has_a_docstring(module):
    names = module.__all__
    missing = [n for n in names if inspect.isfunction(getattr(module, n))
               and not (getattr(module, n).__doc__ or "").strip()]
    assert missing == []


# ---------------------------------------------------------------------------
# Imports: read every module of the package (imports inside functions too)


def _module_files():
    out = {}
    for dirpath, _, files in os.walk(os.path.join(PKG_ROOT, "tangentia")):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, f), PKG_ROOT)[:-3].split(os.sep)
                if rel[-1] == "__init__":
                    rel = rel[:-1]
                out[".".join(rel)] = os.path.join(dirpath, f)
    return out


FILES = _module_files()


def _imports(mod):
    """(imported module, line, whether inside a function or class) for each import
    statement of ``mod``, resolved to modules of the tangentia package."""
    path = FILES[mod]
    is_pkg = path.endswith("__init__.py")
    tree = ast.parse(open(path).read())
    # module level: statements of the module body, and those of its ``if`` blocks
    # (``if TYPE_CHECKING:`` imports for annotations run at import time or never)
    top_level = {id(st) for st in tree.body}
    top_level |= {id(sub) for st in tree.body if isinstance(st, ast.If)
                  for sub in st.body + st.orelse}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                src = ".".join(base + ([node.module] if node.module else []))
            else:
                src = node.module
            targets = [f"{src}.{a.name}" if f"{src}.{a.name}" in FILES else src
                       for a in node.names]
        else:
            continue
        for t in targets:
            parts = t.split(".")
            # the module itself and its parent packages (which Python imports first),
            # except the root package tangentia and the importer's own packages
            for k in range(len(parts), 1, -1):
                name = ".".join(parts[:k])
                if name in FILES and name != mod and not mod.startswith(name + "."):
                    out.append((name, node.lineno, id(node) not in top_level))
    return out


def _graph():
    return {m: {t for t, _, _ in _imports(m)} for m in FILES if m != "tangentia"}


def _is_numpy(m):
    return m == "tangentia.numpy" or m.startswith("tangentia.numpy.")


def test_numpy_package_has_no_imports_inside_functions():
    late = [(m, line, t) for m in FILES if _is_numpy(m)
            for t, line, nested in _imports(m) if nested]
    assert late == []


def test_numpy_submodules_import_each_other_without_cycles():
    graph = _graph()
    sub = {m: {t for t in graph[m] if _is_numpy(t)} for m in graph if _is_numpy(m)}
    assert len(sub) >= 10, sorted(sub)
    order, state = [], {}

    def visit(m, path):
        if state.get(m) == "done":
            return
        assert state.get(m) != "active", f"import cycle: {' -> '.join(path + [m])}"
        state[m] = "active"
        for t in sorted(sub[m]):
            visit(t, path + [m])
        state[m] = "done"
        order.append(m)

    for m in sorted(sub):
        visit(m, [])
    assert order[-1] == "tangentia.numpy"  # the package imports all, none imports it
    assert all("tangentia.numpy" not in deps for m, deps in sub.items())


# The one import of tangentia.numpy from below it, which api's owner is removing:
# api's ``_moveaxis`` helper (tangentia/api.py, tangentia/api/differentiation.py
# once api is a package).
KNOWN_LOWER_IMPORTS = {"tangentia.api", "tangentia.api.differentiation"}


def test_nothing_below_numpy_imports_it():
    graph = _graph()
    below, todo = set(), [m for m in graph if _is_numpy(m)]
    while todo:
        for t in graph.get(todo.pop(), ()):
            if not _is_numpy(t) and t not in below and t != "tangentia":
                below.add(t)
                todo.append(t)
    assert {"tangentia.core", "tangentia.api", "tangentia.primitives"} <= below
    offenders = {m for m in below if any(_is_numpy(t) for t in graph[m])}
    assert offenders <= KNOWN_LOWER_IMPORTS, sorted(offenders - KNOWN_LOWER_IMPORTS)


def test_tracer_methods_are_installed_only_by_array_methods():
    for name in os.listdir(TNP_DIR):
        if not name.endswith(".py") or name == "_array_methods.py":
            continue
        tree = ast.parse(open(os.path.join(TNP_DIR, name)).read())
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for t in targets:
                assert not (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                            and t.value.id in ("T", "Tracer", "_Tracer")), \
                    f"{name}:{node.lineno} sets a Tracer attribute outside _array_methods"


# ---------------------------------------------------------------------------
# The installed operators and methods, on traced values (under vmap) against
# the same expression on NumPy arrays, slice by slice.

X = np.random.default_rng(0).normal(size=(2, 3, 4))
XI = np.arange(24).reshape(2, 3, 4) - 7
XB = XI % 3 == 0
W = np.random.default_rng(1).normal(size=(4, 3))

METHOD_CASES = {
    "add": (X, lambda v: v + 1.5), "radd": (X, lambda v: 1.5 + v),
    "sub": (X, lambda v: v - 2.0), "rsub": (X, lambda v: 2.0 - v),
    "mul": (X, lambda v: v * v), "rmul": (X, lambda v: 3 * v),
    "truediv": (X, lambda v: v / 4.0), "rtruediv": (X, lambda v: 1.0 / v),
    "floordiv": (X, lambda v: v // 0.3), "rfloordiv": (X, lambda v: 2.0 // v),
    "mod": (X, lambda v: v % 0.7), "rmod": (X, lambda v: 2.5 % v),
    "pow": (X, lambda v: v ** 3), "pow_float": (X, lambda v: abs(v) ** 0.5),
    "rpow": (X, lambda v: 2.0 ** v),
    "matmul": (X, lambda v: v @ W), "rmatmul": (X, lambda v: W.T @ v.T),
    "neg": (X, lambda v: -v), "pos": (X, lambda v: +v), "abs": (X, lambda v: abs(v)),
    "invert_bool": (XB, lambda v: ~v), "invert_int": (XI, lambda v: ~v),
    "eq": (XI, lambda v: v == 2), "ne": (XI, lambda v: v != 2), "lt": (X, lambda v: v < 0),
    "le": (XI, lambda v: v <= 1), "gt": (X, lambda v: v > 0), "ge": (XI, lambda v: v >= 1),
    "and_bool": (XB, lambda v: v & (v == v[0])), "rand_int": (XI, lambda v: 6 & v),
    "or_bool": (XB, lambda v: v | v[1]), "ror_int": (XI, lambda v: 5 | v),
    "xor_bool": (XB, lambda v: v ^ v[2]), "rxor_int": (XI, lambda v: 9 ^ v),
    "getitem": (X, lambda v: v[1:, ::2]), "getitem_array": (X, lambda v: v[[2, 0], 1]),
    "T": (X, lambda v: v.T), "mT": (X, lambda v: v.mT), "real": (X, lambda v: v.real),
    "imag": (X, lambda v: v.imag), "conj": (X, lambda v: v.conj()),
    "reshape_tuple": (X, lambda v: v.reshape((4, 3))),
    "reshape_args": (X, lambda v: v.reshape(2, -1)),
    "transpose": (X, lambda v: v.transpose()), "transpose_args": (X, lambda v: v.transpose(1, 0)),
    "astype": (X, lambda v: v.astype(np.int32)),
    "sum": (X, lambda v: v.sum(axis=0)), "prod": (X, lambda v: v.prod(1, keepdims=True)),
    "mean": (X, lambda v: v.mean()), "var": (X, lambda v: v.var(axis=1, ddof=1)),
    "std": (X, lambda v: v.std(0)), "max": (X, lambda v: v.max(axis=1)),
    "min": (X, lambda v: v.min()), "argmax": (X, lambda v: v.argmax(axis=0)),
    "argmin": (X, lambda v: v.argmin()), "all": (XB, lambda v: v.all(axis=1)),
    "any": (XB, lambda v: v.any()), "cumsum": (X, lambda v: v.cumsum(axis=1)),
    "cumprod": (X, lambda v: v.cumprod()), "ravel": (X, lambda v: v.ravel()),
    "flatten": (X, lambda v: v.flatten()), "squeeze": (X, lambda v: v[:1].squeeze(0)),
    "clip": (X, lambda v: v.clip(-0.5, 0.5)), "dot": (X, lambda v: v.dot(W)),
    "round": (X, lambda v: v.round(1)), "copy": (X, lambda v: v.copy()),
    "swapaxes": (X, lambda v: v.swapaxes(0, 1)), "trace": (X, lambda v: v.trace(1)),
    "diagonal": (X, lambda v: v.diagonal(-1)), "sort": (X, lambda v: v.sort(axis=0)),
    "argsort": (X, lambda v: v.argsort()),
    "searchsorted": (np.sort(X, -1)[:, 0], lambda v: v.searchsorted(np.array([-0.5, 0.1]))),
}


def _np_sort(v, axis=-1):  # ndarray.sort sorts in place and returns None
    return np.sort(v, axis)


@pytest.mark.parametrize("name", sorted(METHOD_CASES))
def test_tracer_method_matches_numpy(name):
    x, f = METHOD_CASES[name]
    traced = tg.vmap(f)(x)
    if name == "sort":
        expected = np.stack([_np_sort(r, 0) for r in x])
    else:
        expected = np.stack([np.asarray(f(r)) for r in x])
    assert traced.shape == expected.shape and traced.dtype == expected.dtype, \
        f"{name}: got {traced.shape} {traced.dtype}, NumPy gives {expected.shape} {expected.dtype}"
    np.testing.assert_allclose(traced, expected, rtol=1e-12, atol=1e-12, err_msg=name)


def test_tracer_at_ptp_nonzero_and_hash():
    got = tg.vmap(lambda v: v.at[1, 2].add(10.0).at[0].set(-1.0))(X)
    expected = X.copy()
    expected[:, 1, 2] += 10.0
    expected[:, 0] = -1.0
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_allclose(tg.vmap(lambda v: v.ptp(axis=1))(X), np.ptp(X, axis=2))
    with pytest.raises(NotImplementedError, match="'out' argument to jnp.sum is not supported"):
        tg.vmap(lambda v: v.sum(out=v))(X)
    assert Tracer.__hash__ is None
    # nonzero needs concrete values: it works on a JVP tracer outside jit/vmap
    seen = []
    tg.jvp(lambda v: seen.append(v.nonzero()) or v, (XI[0] * 1.0,), (np.zeros((3, 4)),))
    for a, b in zip(seen[0], np.nonzero(XI[0])):
        np.testing.assert_array_equal(a, b)
