"""``jax._src.test_util`` (``jtu``) stand-in: what JAX's own test files use, written for
running them on tangentia through the test shim.

Written from what the test files call, not from JAX's module.  Where the answer must be the
same as JAX's for the two runs to be comparable, it is: ``sample_product`` picks the same
cases (a fixed-seed draw of ``JAX_NUM_GENERATED_CASES`` indices, 10 by default, decoded
against the same dtype lists, so test ``testFoo3`` is the same case on both), and each test
method's ``self.rng()`` is seeded from its name.  Everything assumes one CPU device and x64.

What cannot be answered here (XLA compile/lowering counters, HLO) raises
``unittest.SkipTest`` with the reason, so such tests are counted as skipped, not passed.
"""
from __future__ import annotations

import contextlib
import functools
import io
import math
import os
import re
import sys
import unittest
import warnings
import zlib

import numpy as np
from absl.testing import absltest, parameterized

import tangentia as _t
import tangentia.numpy as _tnp
from tangentia import test_util as _tangentia_test_util
from tangentia.tree_util import tree_flatten, tree_map

from . import dtypes as _dtypes

# ---------------------------------------------------------------------------
# flags JAX's tests read


class _Flag:
    def __init__(self, value):
        self.value = value


NUM_GENERATED_CASES = _Flag(int(os.getenv("JAX_NUM_GENERATED_CASES", "10")))
SKIP_SLOW_TESTS = _Flag(os.getenv("JAX_SKIP_SLOW_TESTS", "0") not in ("0", "", "false"))
TEST_NUM_THREADS = _Flag(1)
TEST_WITH_PERSISTENT_COMPILATION_CACHE = _Flag(False)

# ---------------------------------------------------------------------------
# device and version queries: one CPU device


def device_under_test():
    return "cpu"


def test_device_matches(device_types):
    if isinstance(device_types, str):
        device_types = [device_types]
    return "cpu" in device_types


def _skip_decorator(should_skip, reason):
    def decorator(test_method):
        @functools.wraps(test_method)
        def wrapped(self, *args, **kwargs):
            if should_skip():
                raise unittest.SkipTest(reason)
            return test_method(self, *args, **kwargs)
        return wrapped
    return decorator


def skip_on_devices(*disabled_devices, skip_reason=None):
    return _skip_decorator(lambda: "cpu" in disabled_devices,
                           skip_reason or f"not run on {disabled_devices} (cpu here)")


def run_on_devices(*enabled_devices, skip_reason=None):
    return _skip_decorator(lambda: "cpu" not in enabled_devices,
                           skip_reason or f"runs only on {enabled_devices} (cpu here)")


def skip_on_flag(flag_name, skip_value):
    def value():
        try:
            return getattr(_t.config, flag_name)
        except AttributeError:
            return None
    return _skip_decorator(lambda: value() == skip_value,
                           f"not run with {flag_name}={skip_value}")


def skip_under_pytest(reason):
    return _skip_decorator(lambda: "pytest" in sys.modules, reason)


def pytest_mark_if_available(marker):
    return lambda f: f


def thread_unsafe_test(*args, **kwargs):
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda f: f


def thread_unsafe_test_class(*args, **kwargs):
    return lambda cls: cls


def is_running_under_pytest():
    return "pytest" in sys.modules


def is_optimized_build():
    return True


def _false(*args, **kwargs):
    return False


is_device_rocm = is_device_cuda = is_cloud_tpu = is_device_tpu = _false
is_device_tpu_at_least = is_cloud_tpu_at_least = is_cuda_compute_capability_at_least = _false
is_asan = is_msan = is_tsan = is_sanitized = is_gil_disabled = is_test_rbe = _false
device_supports_buffer_donation = pjrt_c_api_version_at_least = _false


def request_cpu_devices(nr_devices):
    """JAX asks XLA for several CPU devices; tangentia has one."""


_version_regex = re.compile(r"([0-9]+(?:\.[0-9]+)*)")


def parse_version(v):
    m = _version_regex.match(v)
    if m is None:
        raise ValueError(f"Unable to parse version '{v}'")
    return tuple(int(x) for x in m.group(1).split("."))


def numpy_version():
    return parse_version(np.__version__)


def jaxlib_version():
    return (0, 10, 2)


def stablehlo_version_at_least(required_version):
    return False


# ---------------------------------------------------------------------------
# dtypes (x64: 64-bit types included; the same lists and order as JAX's on CPU, so that
# sampled test cases coincide)


def supported_dtypes():
    return {np.bool_, _dtypes.int4, np.int8, np.int16, np.int32, np.int64,
            _dtypes.uint4, np.uint8, np.uint16, np.uint32, np.uint64,
            _dtypes.bfloat16, np.float16, np.float32, np.float64,
            np.complex64, np.complex128}


class _DtypeLists:
    def supported(self, dtypes):
        s = supported_dtypes()
        return [d for d in dtypes if d in s]

    custom_floats = property(lambda self: [_dtypes.bfloat16])
    floating = property(lambda self: [np.float32, np.float64])
    all_floating = property(lambda self: [_dtypes.bfloat16, np.float16, np.float32, np.float64])
    integer = property(lambda self: [np.int32, np.int64])
    all_integer = property(lambda self: [np.int8, np.int16, np.int32, np.int64])
    unsigned = property(lambda self: [np.uint32, np.uint64])
    all_unsigned = property(lambda self: [np.uint8, np.uint16, np.uint32, np.uint64])
    complex = property(lambda self: [np.complex64, np.complex128])
    boolean = property(lambda self: [np.bool_])
    inexact = property(lambda self: self.floating + self.complex)
    all_inexact = property(lambda self: self.all_floating + self.complex)
    numeric = property(lambda self: self.floating + self.integer + self.unsigned + self.complex)
    all = property(lambda self: (self.all_floating + self.all_integer + self.all_unsigned
                                 + self.complex + self.boolean))


dtypes = _DtypeLists()


def dtype_str(dtype):
    return np.dtype(dtype).name


def num_float_bits(dtype):
    return _dtypes.finfo(dtype).bits


def to_default_dtype(arr):
    arr = np.asarray(arr)
    kind = arr.dtype.kind
    default = {"b": np.bool_, "i": np.int64, "u": np.uint64, "f": np.float64,
               "c": np.complex128}.get(kind)
    return arr.astype(default) if default is not None else arr


def with_jax_dtype_defaults(func, use_defaults=True):
    """``func`` with its array outputs cast to the default dtype of their kind (x64 here, so
    NumPy's defaults already are)."""
    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        result = func(*args, **kwargs)
        if use_defaults:
            return tree_map(to_default_dtype, result)
        return result
    return wrapped


def promote_like_jnp(fun, inexact=False):
    """A NumPy reference ``fun`` whose array arguments are first cast to the dtype
    ``jnp.result_type`` gives them."""
    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        flat, tree = tree_flatten(args)
        if flat:
            dtype = _tnp.result_type(*flat)
            if inexact:
                dtype = _dtypes.to_inexact_dtype(dtype)
            flat = [np.asarray(a).astype(dtype) for a in flat]
        from tangentia.tree_util import tree_unflatten
        return fun(*tree_unflatten(tree, flat), **kwargs)
    return wrapper


@contextlib.contextmanager
def strict_promotion_if_dtypes_match(dtypes):
    """JAX tests run under strict promotion unless the dtypes differ; tangentia's promotion is
    NumPy's, which has no strict mode, so this is a no-op."""
    yield


# ---------------------------------------------------------------------------
# tolerances

_default_tolerance = {
    np.dtype(np.bool_): 0, np.dtype(np.int8): 0, np.dtype(np.int16): 0, np.dtype(np.int32): 0,
    np.dtype(np.int64): 0, np.dtype(np.uint8): 0, np.dtype(np.uint16): 0,
    np.dtype(np.uint32): 0, np.dtype(np.uint64): 0, np.dtype(_dtypes.int4): 0,
    np.dtype(_dtypes.uint4): 0, np.dtype(_dtypes.bfloat16): 1e-2,
    np.dtype(np.float16): 1e-3, np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-15,
    np.dtype(np.complex64): 1e-6, np.dtype(np.complex128): 1e-15,
}
_default_tolerance[np.dtype(_dtypes.float0)] = 0

default_gradient_tolerance = {
    np.dtype(_dtypes.bfloat16): 1e-1, np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3,
    np.dtype(np.float64): 1e-5, np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5,
}


def default_tolerance():
    return _default_tolerance


def _normalize_tolerance(tol):
    if tol is None:
        return _default_tolerance
    if isinstance(tol, dict):
        return {np.dtype(k): v for k, v in tol.items()}
    return {k: tol for k in _default_tolerance}


def join_tolerance(tol1, tol2):
    tol1, tol2 = _normalize_tolerance(tol1), _normalize_tolerance(tol2)
    out = dict(tol1)
    for k, v in tol2.items():
        out[k] = max(v, tol1.get(k, 0))
    return out


def _dtype(x):
    if hasattr(x, "dtype"):
        return x.dtype
    if type(x) in _dtypes.python_scalar_types_to_dtypes:
        return _dtypes.python_scalar_types_to_dtypes[type(x)]
    return np.asarray(x).dtype


def tolerance(dtype, tol=None):
    tol = {} if tol is None else tol
    if not isinstance(tol, dict):
        return tol
    tol = {np.dtype(k): v for k, v in tol.items()}
    dtype = np.dtype(_dtypes.canonicalize_dtype(np.dtype(dtype)))
    return tol.get(dtype, _default_tolerance.get(dtype, 0))


def _assert_numpy_allclose(a, b, atol=None, rtol=None, err_msg=""):
    if a.dtype == b.dtype == _dtypes.float0:
        np.testing.assert_array_equal(a, b, err_msg=err_msg)
        return

    def upcast(x):
        if x.dtype == np.dtype(_dtypes.bfloat16) or x.dtype.kind == "V":
            return x.astype(np.float32)
        if x.dtype in _dtypes._intn_dtypes:
            return x.astype(np.int8 if _dtypes.iinfo(x.dtype).min < 0 else np.uint8)
        return x
    a, b = upcast(a), upcast(b)
    kw = {}
    if atol is not None:
        kw["atol"] = atol
    if rtol is not None:
        kw["rtol"] = rtol
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(a, b, **kw, err_msg=err_msg)


def check_eq(xs, ys, err_msg=""):
    tree_map(lambda x, y: np.testing.assert_allclose(x, y, err_msg=err_msg), xs, ys)


def check_close(xs, ys, atol=None, rtol=None, err_msg=""):
    def close(x, y):
        x, y = np.asarray(x), np.asarray(y)
        _assert_numpy_allclose(x, y, atol=max(tolerance(x.dtype, atol), tolerance(y.dtype, atol)),
                               rtol=max(tolerance(x.dtype, rtol), tolerance(y.dtype, rtol)),
                               err_msg=err_msg)
    tree_map(close, xs, ys)


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    return _tangentia_test_util.check_grads(f, args, order, modes, atol, rtol, eps)


EPS = 1e-4


def rand_like(rng, x):
    """Standard normal values with the shape and dtype of ``x`` (imaginary part too for
    complex dtypes)."""
    shape, dtype = np.shape(x), _dtype(x)
    r = lambda: np.asarray(rng.randn(*shape), dtype)  # noqa: E731
    if np.dtype(dtype).kind == "c":
        return r() + 1j * r()
    return r()


# jax.test_util's own behaviour (signatures, directions, tolerances): tangentia's
check_jvp = _tangentia_test_util.check_jvp
check_vjp = _tangentia_test_util.check_vjp


def check_raises(thunk, err_type, msg):
    try:
        thunk()
        assert False
    except err_type as e:
        assert str(e).startswith(msg), f"\n\n{e}\n\ndoesn't start with\n\n{msg}"


def check_raises_regexp(thunk, err_type, pattern):
    try:
        thunk()
        assert False
    except err_type as e:
        assert re.match(pattern, str(e)), f"{e}\n\n{pattern}\n"


# ---------------------------------------------------------------------------
# shapes and random inputs


class ScalarShape:
    def __len__(self):
        return 0

    def __getitem__(self, i):
        raise IndexError(f"index {i} out of range.")


class _NumpyScalar(ScalarShape):
    pass


class _PythonScalar(ScalarShape):
    pass


NUMPY_SCALAR_SHAPE = _NumpyScalar()
PYTHON_SCALAR_SHAPE = _PythonScalar()


def is_valid_shape(shape, dtype):
    if shape is PYTHON_SCALAR_SHAPE:
        return dtype in (np.bool_, np.int64, np.float64, np.complex128, bool, int, float, complex)
    return True


def _dims_of_shape(shape):
    if isinstance(shape, ScalarShape):
        return ()
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(shape)


def _cast_to_shape(value, shape, dtype):
    if shape is NUMPY_SCALAR_SHAPE:
        return np.dtype(dtype).type(value)
    if shape is PYTHON_SCALAR_SHAPE:
        return np.asarray(value, dtype).item()
    return value


def format_shape_dtype_string(shape, dtype):
    if isinstance(shape, (list, tuple)) and shape and isinstance(shape[0], (list, tuple)):
        return "_".join(format_shape_dtype_string(s, dtype) for s in shape)
    if shape is NUMPY_SCALAR_SHAPE:
        return dtype_str(dtype)
    if shape is PYTHON_SCALAR_SHAPE:
        return "py" + dtype_str(dtype)
    return f"{dtype_str(dtype)}[{','.join(map(str, _dims_of_shape(shape)))}]"


def _rand_dtype(draw, shape, dtype, scale=1.0, post=lambda x: x):
    """Values ``scale * draw(*dims)`` (of magnitudes for unsigned dtypes; two draws for the
    imaginary part of complex dtypes) cast to ``dtype``, then passed through ``post``, as
    JAX's generators order it (``rand_nonzero`` replaces the zeros of the cast integers)."""
    if dtype is None:
        dtype = np.float64
    dims = _dims_of_shape(shape)
    dtype = np.dtype(dtype)

    def one():
        v = scale * draw(*dims)
        if dtype.kind == "u":
            v = np.abs(v)
        with np.errstate(invalid="ignore", over="ignore"):
            return np.asarray(v).astype(dtype)
    vals = one() + 1j * one() if dtype.kind == "c" else one()
    with np.errstate(invalid="ignore", over="ignore"):
        out = np.asarray(post(vals), dtype)
    return _cast_to_shape(out, shape, dtype)


def rand_default(rng, scale=3):
    return functools.partial(_rand_dtype, rng.randn, scale=scale)


def rand_nonzero(rng):
    return functools.partial(_rand_dtype, rng.randn, scale=3,
                             post=lambda x: np.where(x == 0, np.ones_like(x), x))


def rand_positive(rng):
    return functools.partial(_rand_dtype, rng.rand, scale=2, post=lambda x: x + 1)


def rand_small(rng):
    return functools.partial(_rand_dtype, rng.randn, scale=1e-3)


def rand_not_small(rng, offset=10.0):
    return functools.partial(_rand_dtype, rng.randn, scale=3.0,
                             post=lambda x: x + np.where(x > 0, offset, -offset))


def rand_small_positive(rng):
    return functools.partial(_rand_dtype, rng.rand, scale=2e-5)


def rand_uniform(rng, low=0.0, high=1.0):
    assert low < high
    return functools.partial(_rand_dtype, rng.rand, scale=high - low,
                             post=lambda x: x + low)


def _with_specials(rng, values, fraction=0.1):
    """A generator whose float/complex outputs have about ``fraction`` of their entries
    replaced by each of ``values``."""
    base = rand_default(rng)

    def gen(shape, dtype):
        out = base(shape, dtype)
        dt = np.dtype(dtype if dtype is not None else np.float64)
        if dt.kind not in "fc":
            return out
        arr = np.array(out, dtype=dt, copy=True)
        dims = _dims_of_shape(shape)
        for v in values:
            mask = rng.rand(*dims) < fraction
            if arr.ndim:
                arr[mask] = v
            elif mask:
                arr = np.asarray(v, dt)
        return _cast_to_shape(arr, shape, dt)
    return gen


def rand_some_inf(rng):
    return _with_specials(rng, [np.inf, -np.inf])


def rand_some_nan(rng):
    return _with_specials(rng, [np.nan])


def rand_some_inf_and_nan(rng):
    return _with_specials(rng, [np.inf, -np.inf, np.nan])


def rand_some_zero(rng):
    base = rand_default(rng)

    def gen(shape, dtype):
        out = base(shape, dtype)
        dims = _dims_of_shape(shape)
        dt = np.dtype(dtype if dtype is not None else np.float64)
        arr = np.array(out, dtype=dt, copy=True)
        mask = rng.rand(*dims) < 0.5
        if arr.ndim:
            arr[mask] = 0
        elif mask:
            arr = np.zeros((), dt)
        return _cast_to_shape(arr, shape, dt)
    return gen


def rand_some_equal(rng):
    base = rand_default(rng)

    def gen(shape, dtype):
        out = base(shape, dtype)
        dims = _dims_of_shape(shape)
        dt = np.dtype(dtype if dtype is not None else np.float64)
        arr = np.array(out, dtype=dt, copy=True)
        if arr.ndim and arr.size:
            flat = arr.reshape(-1)
            mask = rng.rand(flat.size) < 0.5
            flat[mask] = flat[0]
            arr = flat.reshape(arr.shape)
        return _cast_to_shape(arr, shape, dt)
    return gen


def rand_fullrange(rng, standardize_nans=False):
    """Every bit pattern of the dtype equally likely (integers over their whole range,
    floats including infinities and NaNs)."""
    def gen(shape, dtype, post=lambda x: x):
        dt = np.dtype(dtype)
        dims = _dims_of_shape(shape)
        nbytes = max(1, dt.itemsize)
        raw = rng.randint(0, 256, size=(int(np.prod(dims, dtype=np.int64)) * nbytes,),
                          dtype=np.uint8)
        if dt.kind == "b":
            arr = (raw[::nbytes] & 1).astype(np.bool_).reshape(dims)
        elif _dtypes.itemsize_bits(dt) == 4:
            arr = (raw & 0x0F).astype(np.uint8).astype(dt).reshape(dims)
        else:
            arr = raw.view(dt).reshape(dims)
        if standardize_nans and dt.kind in "fc":
            arr = np.where(np.isnan(arr), np.asarray(np.nan, dt), arr).astype(dt)
        return _cast_to_shape(np.asarray(post(arr), dt), shape, dt)
    return gen


def rand_int(rng, low=0, high=None):
    """JAX's: ``rng.randint(low, high)`` in the dtype (int64 for a non-integer one), so
    ``rand_int(rng, 5)`` draws from [0, 5); ``low=0`` without ``high`` spans the first integer
    dtype asked for (JAX keeps that bound, ``nonlocal``); scalar shapes give 0-d arrays."""
    def fn(shape, dtype):
        nonlocal high
        gen = dtype if np.issubdtype(dtype, np.integer) else np.int64
        if low == 0 and high is None:
            if np.issubdtype(dtype, np.integer):
                high = np.iinfo(dtype).max
            else:
                raise ValueError("rand_int requires an explicit `high` value for "
                                 "non-integer types.")
        return rng.randint(low, high=high, size=_dims_of_shape(shape),
                           dtype=gen).astype(dtype)
    return fn


def rand_unique_int(rng, high=None):
    def fn(shape, dtype):
        dims = _dims_of_shape(shape)
        n = int(np.prod(dims, dtype=np.int64))
        top = n if high is None else high   # JAX's default: the number of entries
        return rng.choice(np.arange(top, dtype=dtype), size=n, replace=False).reshape(dims)
    return fn


def rand_indices_unique_along_axis(rng):
    """Indices into an axis of length ``dim``: along ``axis`` of ``shape`` no index repeats."""
    def fn(dim, shape, axis, allow_negative=True):
        shape = tuple(_dims_of_shape(shape))
        axis = axis % len(shape) if shape else 0
        moved = shape[:axis] + shape[axis + 1:] + (shape[axis],) if shape else ()
        count = shape[axis] if shape else 0
        if count > dim:
            raise ValueError(f"cannot draw {count} unique indices below {dim}")
        batch = int(np.prod(moved[:-1], dtype=np.int64)) if shape else 1
        rows = [rng.choice(dim, size=count, replace=False) for _ in range(batch)]
        idx = np.array(rows, dtype=np.int64).reshape(moved)
        if allow_negative:
            idx = np.where(rng.rand(*idx.shape) < 0.5, idx - dim, idx)
        return np.moveaxis(idx, -1, axis) if shape else idx
    return fn


def rand_bool(rng):
    def generator(shape, dtype):
        vals = rng.rand(*_dims_of_shape(shape)) < 0.5
        return _cast_to_shape(np.asarray(vals, dtype=dtype), shape, dtype)
    return generator


# ---------------------------------------------------------------------------
# parameterized cases


@functools.cache
def _choice(n, m):
    return np.random.RandomState(42).choice(n, size=m, replace=False)


def sample_product_testcases(*args, **kw):
    """The cases ``sample_product`` picks: ``JAX_NUM_GENERATED_CASES`` (10) of the cartesian
    product, chosen by a fixed-seed draw (the same cases JAX's own runs pick)."""
    args = [list(a) for a in args]
    kw = [(k, list(v)) for k, v in kw.items()]
    n = math.prod(len(a) for a in args) * math.prod(len(v) for _, v in kw)
    cases = []
    for i in _choice(n, min(n, NUM_GENERATED_CASES.value)):
        case = {}
        for a in args:
            case.update(a[i % len(a)])
            i //= len(a)
        for k, v in kw:
            case[k] = v[i % len(v)]
            i //= len(v)
        cases.append(case)
    return cases


def sample_product(*args, **kw):
    return parameterized.parameters(*sample_product_testcases(*args, **kw))


def cases_from_list(xs):
    """Older JAX tests' sampler: ``JAX_NUM_GENERATED_CASES`` of the cases ``xs`` (the same
    fixed-seed draw as ``sample_product``)."""
    xs = list(xs)
    return [xs[i] for i in _choice(len(xs), min(len(xs), NUM_GENERATED_CASES.value))]


def cases_from_gens(*gens):
    sizes = [1, 3, 10]
    per_size = int(NUM_GENERATED_CASES.value / len(sizes)) + 1
    for size in sizes:
        for _ in range(per_size):
            yield ("_{}".format(size),) + tuple(gen(size) for gen in gens)


def parameterized_filterable(*, kwargs, testcase_name=None, one_containing=None):
    """``parameterized.named_parameters`` over the dicts ``kwargs``, named by
    ``testcase_name(kw)`` (or by the dict's ``testcase_name`` key, or by its values)."""
    cases = []
    for kw in kwargs:
        kw = dict(kw)
        if "testcase_name" in kw:
            name = kw.pop("testcase_name")
        elif testcase_name is not None:
            name = testcase_name(kw)
        else:
            name = "_".join(f"{k}={v}" for k, v in kw.items())
        name = re.sub(r"[^a-zA-Z0-9_=,.\-]", "_", str(name))
        cases.append(dict(testcase_name=name, **kw))
    if one_containing is not None:
        cases = [c for c in cases if one_containing in c["testcase_name"]][:1]
    if not cases:
        cases = [dict(testcase_name="_no_cases")]
    return parameterized.named_parameters(*cases)


# ---------------------------------------------------------------------------
# warnings, output, environment


@contextlib.contextmanager
def ignore_warning(**kw):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", **kw)
        yield


@contextlib.contextmanager
def _capture(stream_name):
    buf = io.StringIO()
    saved = getattr(sys, stream_name)
    setattr(sys, stream_name, buf)
    try:
        yield buf.getvalue
    finally:
        setattr(sys, stream_name, saved)


capture_stdout = functools.partial(_capture, "stdout")
capture_stderr = functools.partial(_capture, "stderr")


@contextlib.contextmanager
def set_env(**kwargs):
    saved = {k: os.environ.get(k) for k in kwargs}
    os.environ.update({k: str(v) for k, v in kwargs.items() if v is not None})
    for k, v in kwargs.items():
        if v is None:
            os.environ.pop(k, None)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _config_context(**kwds):
    """Set JAX config options by name for a block (``jax_enable_x64=True`` ...): the ones
    tangentia has are set; one whose value tangentia cannot honour raises."""
    stack = contextlib.ExitStack()
    from tangentia import _compat
    for name, value in kwds.items():
        state = getattr(_compat, name[4:] if name.startswith("jax_") else name, None)
        if isinstance(state, _compat._State):
            stack.enter_context(state(value))
        elif name in ("jax_enable_x64",) and value:
            continue
        elif name == "jax_disable_jit":
            stack.enter_context(_t.disable_jit(value))
        else:
            raise unittest.SkipTest(f"config option {name}={value!r} has no tangentia equivalent")
    return stack


global_config_context = thread_local_config_context = _config_context


def with_config(**kwds):
    def decorator(cls):
        cls._shim_config = {**getattr(cls, "_shim_config", {}), **kwds}
        return cls
    return decorator


with_global_config = with_config

# ---------------------------------------------------------------------------
# program inspection and counters


def iter_eqns(jaxpr):
    for eqn in jaxpr.eqns:
        yield eqn
        for value in eqn.params.values():
            for sub in (value if isinstance(value, (list, tuple)) else [value]):
                inner = getattr(sub, "jaxpr", None)
                if inner is not None and hasattr(inner, "eqns"):
                    yield from iter_eqns(inner)
                elif hasattr(sub, "eqns"):
                    yield from iter_eqns(sub)


def _dot_eqns(fun, *args, **kwargs):
    closed = _t.make_jaxpr(functools.partial(fun, **kwargs))(*args)
    return [e for e in iter_eqns(closed.jaxpr) if getattr(e.primitive, "name", "") == "dot_general"]


def assert_dot_precision(expected_precision, fun, *args):
    eqns = _dot_eqns(fun, *args)
    assert eqns, "no dot_general in the program"
    for eqn in eqns:
        precision = eqn.params.get("precision")
        if expected_precision is None:
            assert precision is None, precision
        elif isinstance(precision, tuple):
            assert precision[0] == expected_precision, precision
            assert precision[1] == expected_precision, precision
        else:
            assert precision == expected_precision, precision


def assert_dot_preferred_element_type(expected, fun, *args, **kwargs):
    eqns = _dot_eqns(fun, *args, **kwargs)
    assert eqns, "no dot_general in the program"
    for eqn in eqns:
        pref = eqn.params.get("preferred_element_type")
        assert np.dtype(pref) == np.dtype(expected), (pref, expected)


def _no_counter(what):
    @contextlib.contextmanager
    def counter(*args, **kwargs):
        raise unittest.SkipTest(f"{what}: tangentia has no XLA compilation/lowering counters")
        yield  # pragma: no cover
    return counter


count_events = lambda event: _no_counter(f"count_events({event!r})")()  # noqa: E731
count_primitive_compiles = _no_counter("count_primitive_compiles")
count_jit_and_pmap_lowerings = _no_counter("count_jit_and_pmap_lowerings")
count_jit_compilation_cache_miss = _no_counter("count_jit_compilation_cache_miss")
count_jit_tracing_cache_miss = _no_counter("count_jit_tracing_cache_miss")
count_pjit_cpp_cache_miss = _no_counter("count_pjit_cpp_cache_miss")
count_aot_jit_cpp_cache_miss = _no_counter("count_aot_jit_cpp_cache_miss")
count_device_put = _no_counter("count_device_put")
count_internal_device_puts = _no_counter("count_internal_device_puts")
count_subjaxpr_to_hlo_conversion = lambda fun_name: _no_counter("count_subjaxpr_to_hlo_conversion")()  # noqa: E731
collect_lowered_jaxprs = _no_counter("collect_lowered_jaxprs")


def assert_num_jit_and_pmap_compilations(times):
    return _no_counter("assert_num_jit_and_pmap_compilations")()


def fwd_bwd_jaxprs(f, *example_args):
    raise unittest.SkipTest("fwd_bwd_jaxprs: not provided by the tangentia test shim")


# ---------------------------------------------------------------------------
# the test case class


def is_sequence(x):
    try:
        iter(x)
    except TypeError:
        return False
    else:
        return True


class JaxTestCase(parameterized.TestCase):
    """JAX's test base class on tangentia: numerical assertions and JIT/NumPy checks.

    JAX's runs put every test under strict dtype promotion and rank promotion 'raise';
    tangentia has NumPy's promotion only, so tests run with NumPy's (standard) rules."""

    _shim_config = {}

    def setUp(self):
        super().setUp()
        self._rng = np.random.RandomState(zlib.adler32(self._testMethodName.encode()))
        if self._shim_config:
            self.enterContext(_config_context(**self._shim_config))

    def rng(self):
        return self._rng

    def assertDeprecationWarnsOrRaises(self, deprecation_id, message, *, error_class=ValueError):
        return self.assertWarnsRegex(DeprecationWarning, message)

    def assertArraysEqual(self, actual, desired, *, check_dtypes=True, err_msg="",
                          allow_object_dtype=False, verbose=True):
        if check_dtypes:
            self.assertDtypesMatch(actual, desired)
        actual, desired = np.asarray(actual), np.asarray(desired)
        if not allow_object_dtype and (actual.dtype == object or desired.dtype == object):
            raise TypeError("assertArraysEqual with dtype=object; pass allow_object_dtype=True")
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(actual, desired, err_msg=err_msg, verbose=verbose)

    def assertArraysAllClose(self, actual, desired, *, check_dtypes=True, atol=None,
                             rtol=None, err_msg=""):
        self.assertEqual(np.shape(actual), np.shape(desired))
        atol = max(tolerance(_dtype(actual), atol), tolerance(_dtype(desired), atol))
        rtol = max(tolerance(_dtype(actual), rtol), tolerance(_dtype(desired), rtol))
        _assert_numpy_allclose(np.asarray(actual), np.asarray(desired), atol=atol, rtol=rtol,
                               err_msg=err_msg)
        if check_dtypes:
            self.assertDtypesMatch(actual, desired)

    def assertDtypesMatch(self, actual, desired, *, canonicalize_dtypes=True):
        self.assertEqual(np.dtype(_dtype(actual)), np.dtype(_dtype(desired)))

    def assertAllClose(self, actual, desired, *, check_dtypes=True, atol=None, rtol=None,
                       canonicalize_dtypes=True, err_msg=""):
        kw = dict(check_dtypes=check_dtypes, atol=atol, rtol=rtol,
                  canonicalize_dtypes=canonicalize_dtypes, err_msg=err_msg)
        if isinstance(actual, dict):
            self.assertIsInstance(desired, dict)
            self.assertEqual(set(actual.keys()), set(desired.keys()))
            for k in actual:
                self.assertAllClose(actual[k], desired[k], **kw)
        elif is_sequence(actual) and not hasattr(actual, "__array__"):
            if not (is_sequence(desired) and not hasattr(desired, "__array__")):
                self.fail(f"Expected sequence, got {desired}")
            self.assertEqual(len(actual), len(desired))
            for a, d in zip(actual, desired):
                self.assertAllClose(a, d, **kw)
        elif hasattr(actual, "__array__") or np.isscalar(actual):
            if not (hasattr(desired, "__array__") or np.isscalar(desired)):
                self.fail(f"Expected array-like, got {desired}")
            if check_dtypes:
                self.assertDtypesMatch(actual, desired, canonicalize_dtypes=canonicalize_dtypes)
            self.assertArraysAllClose(np.asarray(actual), np.asarray(desired), check_dtypes=False,
                                      atol=atol, rtol=rtol, err_msg=err_msg)
        elif actual == desired:
            return
        else:
            raise TypeError((type(actual), type(desired)))

    def assertMultiLineStrippedEqual(self, expected, what):
        def strip(s):
            return "\n".join(line.strip() for line in s.strip().splitlines())
        self.assertMultiLineEqual(strip(expected), strip(what))

    @contextlib.contextmanager
    def assertNoWarnings(self):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            yield

    def assertCacheMisses(self, *args, **kwargs):
        return _no_counter("assertCacheMisses")()

    def _CompileAndCheck(self, fun, args_maker, *, check_dtypes=True, tol=None, rtol=None,
                         atol=None, check_cache_misses=True):
        """``jit(fun)`` agrees with ``fun`` on two sets of arguments, and the jitted function
        does not run its Python body again on the second call."""
        args = args_maker()
        python_should_be_executing = [True]

        def wrapped_fun(*a):
            self.assertTrue(python_should_be_executing[0])
            return fun(*a)

        python_ans = fun(*args)
        self.assertEqual(tree_map(np.shape, python_ans),
                         tree_map(lambda x: np.shape(np.asarray(x)), python_ans))
        cfun = _t.jit(wrapped_fun)
        monitored_ans = cfun(*args)
        python_should_be_executing[0] = False
        compiled_ans = cfun(*args)
        close = dict(check_dtypes=check_dtypes, atol=atol or tol, rtol=rtol or tol)
        self.assertAllClose(monitored_ans, python_ans, **close)
        self.assertAllClose(compiled_ans, python_ans, **close)
        args = args_maker()
        python_should_be_executing[0] = True
        python_ans = fun(*args)
        python_should_be_executing[0] = False
        compiled_ans = cfun(*args)
        self.assertAllClose(compiled_ans, python_ans, **close)

    def _CheckAgainstNumpy(self, numpy_reference_op, lax_op, args_maker, check_dtypes=True,
                           tol=None, atol=None, rtol=None, canonicalize_dtypes=True):
        args = args_maker()
        lax_ans = lax_op(*args)
        numpy_ans = numpy_reference_op(*args)
        self.assertAllClose(lax_ans, numpy_ans, check_dtypes=check_dtypes, atol=atol or tol,
                            rtol=rtol or tol, canonicalize_dtypes=canonicalize_dtypes)


class BufferDonationTestCase(JaxTestCase):
    def assertDeleted(self, x):
        raise unittest.SkipTest("tangentia does not delete donated buffers")

    assertNotDeleted = assertDeleted


JaxTestLoader = absltest.TestLoader
