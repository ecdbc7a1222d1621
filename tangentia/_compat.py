"""Names JAX programs commonly call that have a trivial meaning here (one CPU
device, NumPy arrays that are always ready), so such programs run after
changing only their imports.

JAX's configuration states (``enable_x64``, ``default_matmul_precision``,
``log_compiles``, ...) are objects that are both context managers
(``with tangentia.enable_x64(True): ...``) and settings (``.value``).  Those
whose meaning is trivial on one CPU device with NumPy's semantics accept
their values as no-ops; values that would change results here
(``enable_x64(False)``, ``numpy_dtype_promotion('strict')``,
``numpy_rank_promotion('raise')``, ``debug_infs(True)``,
``debug_key_reuse(True)``) raise ``NotImplementedError`` (``enable_x64`` is
always on: dtypes are NumPy's, float64 by default).
"""
from __future__ import annotations

import contextlib
import functools
import sys

import numpy as np

from ._array import CPU as _CPU, CpuDevice, to_user  # noqa: F401  (CpuDevice: the one device)
from .compiler.backend import default_backend_name, set_default_backend
from ._traceback_util import set_filtering
from .core import Tracer
from .tree_util import tree_map
from . import core as _core
from .api import staging as _staging
from .compiler import backend as _backend
from .lax import control_flow as _control_flow
from ._src.state.types import Ref


def block_until_ready(x):
    """Results are computed eagerly: returns ``x`` unchanged.

    Args:
      x: an array or pytree of arrays.
    """
    return x


def effects_barrier():
    """Wait until every pending effect (``debug.print``, callbacks) is done: effects
    happen synchronously here, so there is nothing to wait for."""


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """Arrays live in host memory: converts leaves to tangentia arrays (``numpy.ndarray``).

    Args:
      x: an array, scalar or pytree of them.
      device: accepted for JAX compatibility (the one CPU device).
      src: accepted for JAX compatibility.
      donate: accepted for JAX compatibility.
      may_alias: accepted for JAX compatibility.

    Returns:
      ``x`` with every leaf a tangentia array.
    """
    return tree_map(_put_leaf, x)


def _put_leaf(v):
    """One leaf of ``device_put``: an array, or JAX's TypeError for what is not one
    (libraries catch it to leave such leaves as they are)."""
    if isinstance(v, Tracer):
        return v
    if isinstance(v, (np.ndarray, np.generic, bool, int, float, complex)):
        return to_user(np.asarray(v))
    if hasattr(v, "__jax_array__"):
        return to_user(np.asarray(v.__jax_array__()))
    if isinstance(v, type):
        raise TypeError(f"JAX scalar type {v} cannot be interpreted as a JAX array. "
                        "(device_put: pass arrays, scalars or pytrees of them)")
    if isinstance(v, str):
        raise TypeError(f"Argument '{v}' of type {type(v)} is not a valid JAX type "
                        "(device_put: pass arrays, scalars or pytrees of them)")
    if not hasattr(v, "dtype"):
        raise TypeError(f"Cannot interpret value of type {type(v)} as an abstract array; it "
                        "does not have a dtype attribute (device_put: pass arrays, scalars "
                        "or pytrees of them)")
    return to_user(np.asarray(v))


def device_get(x):
    """Arrays live in host memory: converts leaves to ``numpy.ndarray``.

    Args:
      x: an array, scalar or pytree of them.

    Returns:
      ``x`` with every leaf a NumPy array.
    """
    return tree_map(lambda v: v if isinstance(v, Tracer) else np.asarray(v), x)


def devices(backend=None):
    """The devices: one CPU device.

    Args:
      backend: ``None`` or ``"cpu"``; another platform raises JAX's RuntimeError
        (libraries count a platform's devices by catching it).
    """
    _check_backend(backend, "devices")
    return [_CPU]


def _check_backend(backend, api):
    if backend is None or backend == "cpu" or backend is _CPU:
        return
    if backend in ("gpu", "cuda", "rocm", "tpu", "METAL"):
        raise RuntimeError(f"Unknown backend: '{backend}' requested, but no platforms that are "
                           f"instances of {backend} are present. Platforms present are: cpu "
                           f"({api}: tangentia runs on one CPU device)")
    raise RuntimeError(f"Unknown backend {backend}. Available backends are ['cpu'] ({api}: "
                       "tangentia runs on one CPU device)")


def local_devices(process_index=None, backend=None, host_id=None):
    """The devices of this process: the one CPU device.

    Args:
      process_index: accepted for JAX compatibility (one process).
      backend: ``None`` or ``"cpu"`` (another platform raises, as ``devices``).
      host_id: accepted for JAX compatibility (JAX's old name of ``process_index``).
    """
    _check_backend(backend, "local_devices")
    return [_CPU]


def device_count(backend=None):
    """The number of devices: 1.

    Args:
      backend: ``None`` or ``"cpu"`` (another platform raises, as ``devices``).
    """
    _check_backend(backend, "device_count")
    return 1


def local_device_count(backend=None):
    """The number of devices of this process: 1 (``backend`` as ``device_count``')."""
    _check_backend(backend, "local_device_count")
    return 1


def default_backend():
    """The platform name JAX reports: ``"cpu"`` (for the ``jit`` backend, see
    ``config.jit_backend``)."""
    return "cpu"


class _Config:
    """``config.update(name, value)`` for the JAX options that have a meaning here."""

    jax_enable_x64 = True
    jax_platform_name = "cpu"

    @property
    def jit_backend(self):
        """The backend ``jit`` uses when none is named (``"numba"`` or ``"numpy"``)."""
        return default_backend_name()

    # What libraries read: x64 is always on; jax_disable_jit follows disable_jit (and
    # update("jax_disable_jit", ...)); jax_<state> reads the state of that name.
    x64_enabled = True

    @property
    def jax_disable_jit(self):
        return _staging._JIT_DISABLED.get()

    def __getattr__(self, name):
        state = globals().get(name[4:]) if name.startswith("jax_") else None
        if isinstance(state, _State):
            return state.value
        raise AttributeError(f"Unrecognized config option: {name}")

    def read(self, name):
        """The value of the option ``name`` (``config.read("jax_enable_x64")``)."""
        return getattr(self, name)

    def parse_flags_with_absl(self):
        """JAX's reading of ``--jax_*`` command-line flags through absl, which test files
        written for JAX call at import (flax's): nothing to read here (the options are
        set with ``update`` or their environment variables)."""

    @property
    def values(self):
        """The options and their values, as a dict."""
        names = ["jax_enable_x64", "jax_platform_name", "jax_disable_jit", "jit_backend"] + [
            "jax_" + n for n, v in globals().items() if isinstance(v, _State)]
        return {n: getattr(self, n) for n in names}

    @property
    def jit_tiered(self):
        """Whether a program's first calls run on the NumPy backend while the numba backend
        compiles it in the background (``config.update("jit_tiered", False)`` or
        ``TANGENTIA_JIT_TIERED=0``: compile before the first call, so every call runs the
        same code)."""
        return _backend.tiered()

    def update(self, name, value):
        if name == "jax_enable_x64":
            if not value:
                raise NotImplementedError(
                    "config.update('jax_enable_x64', False): tangentia always uses NumPy's dtype "
                    "semantics (float64 by default); pass float32 arrays to compute in float32")
            return
        if name in ("jax_platform_name", "jax_platforms", "jax_default_device"):
            if value not in (None, "cpu", _CPU):
                raise NotImplementedError(f"config.update({name!r}, {value!r}): tangentia runs "
                                          "on the CPU only")
            return
        if name in ("tangentia_traceback_filtering", "jax_traceback_filtering"):
            set_filtering(value)
            return
        if name == "jit_backend":
            set_default_backend(value)
            return
        if name == "jax_disable_jit":
            _staging._JIT_DISABLED.set(bool(value))
            return
        if name == "jit_tiered":
            _backend.set_tiered(value)
            return
        if name == "jax_debug_nans":
            raise NotImplementedError(
                "config.update('jax_debug_nans', ...): use the context manager "
                "`with tangentia.debug_nans(): ...` instead (it is per thread)")
        state = globals().get(name[4:]) if name.startswith("jax_") else None
        if isinstance(state, _State):   # jax_log_compiles, ...: the state of that name
            state._check(value)
            state._value = value
            return
        raise ValueError(f"config.update: unknown or unsupported option {name!r}")


config = _Config()


# ---------------------------------------------------------------------------
# Caches, names and types


def clear_caches():
    """Drop every compiled program: the per-function ``jit`` caches (traced programs and
    their compiled code), the traced bodies of ``lax`` loops and branches, and the cache
    of eagerly compiled equations.  The next call of a jitted function traces and
    compiles again.  (Native code that numba has compiled stays in the process: numba
    never frees it.)  The blocks of large arrays that compiled programs keep for reuse
    (``numba_backend.pool``) are freed."""
    with _staging._FUNCTION_CACHES_LOCK:
        for per_fun in list(_staging._FUNCTION_CACHES.values()):
            for cache, fast_caches in per_fun.values():
                cache.clear()
                fast_caches.clear()
    with _backend._EQN_LOCK:
        _backend._EQN_CACHE.clear()
    with _control_flow._TRACE_LOCK:
        _control_flow._TRACE_CACHE.clear()
    # the freed large arrays compiled programs keep for reuse (a pool module that another
    # thread's first compile is still importing has no ``release`` yet, and holds no block)
    release = getattr(sys.modules.get("tangentia.compiler.numba_backend.pool"), "release", None)
    if release is not None:
        release()


def named_call(fun, *, name=None):
    """``fun`` itself, under a new name (JAX names the call in its programs; the name
    has no effect here).

    Args:
      fun: a function.
      name: the name (``fun.__name__`` by default).
    """
    if not callable(fun):
        raise TypeError(f"named_call: argument 'fun' must be callable, got {fun!r}")

    @functools.wraps(fun)
    def named(*args, **kwargs):
        return fun(*args, **kwargs)
    if name is not None:
        named.__name__ = named.__qualname__ = name
    return named


@contextlib.contextmanager
def named_scope(name):
    """A context manager naming the operations inside it in JAX's programs; a no-op here.

    Args:
      name: a string.
    """
    if not isinstance(name, str):
        raise TypeError(f"named_scope: argument 'name' must be a string, got {name!r}")
    yield


def typeof(x):
    """The abstract value (``ShapedArray``: shape, dtype, weak type) of ``x``; of a
    mutable array reference (``new_ref``), its ``AbstractRef``."""
    if isinstance(x, Ref):
        return x.aval
    return _core.get_aval(x)


float0 = np.dtype([("float0", np.void, 0)])
"""JAX's dtype of the tangents of integer values (a zero-size void dtype)."""


# ---------------------------------------------------------------------------
# Configuration states


class _State:
    """One of JAX's configuration states: ``with state(value): ...`` or ``state.value``."""

    def __init__(self, name, default, check):
        self.__name__ = name
        self._value = default
        self._check = check  # value -> None, raising for values that would change results

    @property
    def value(self):
        return self._value

    @contextlib.contextmanager
    def __call__(self, new_val=True):
        self._check(new_val)
        old, self._value = self._value, new_val
        try:
            yield
        finally:
            self._value = old

    def __repr__(self):
        return f"<tangentia config state {self.__name__}={self._value!r}>"


def _state(name, default, *allowed, reason=""):
    """A state accepting the values ``allowed`` (any value if none are listed)."""
    def check(value):
        if allowed and value not in allowed:
            raise NotImplementedError(f"{name}({value!r}) is not supported: {reason}")
    return _State(name, default, check)


enable_x64 = _state("enable_x64", True, True, 1, reason="tangentia always uses NumPy's dtypes "
                    "(float64 by default); pass float32 arrays to compute in float32")
default_matmul_precision = _state("default_matmul_precision", None)
numpy_dtype_promotion = _state("numpy_dtype_promotion", "standard", "standard", reason="dtype "
                               "promotion is NumPy's")
numpy_rank_promotion = _state("numpy_rank_promotion", "allow", "allow", reason="rank promotion "
                              "is NumPy's broadcasting")
default_device = _state("default_device", None, None, "cpu", _CPU,
                        reason="tangentia runs on the one CPU device")
transfer_guard_host_to_device = _state("transfer_guard_host_to_device", "allow")
transfer_guard_device_to_host = _state("transfer_guard_device_to_host", "allow")
transfer_guard_device_to_device = _state("transfer_guard_device_to_device", "allow")
log_compiles = _state("log_compiles", False)
explain_cache_misses = _state("explain_cache_misses", False)  # nothing is logged here
check_tracer_leaks = _state("check_tracer_leaks", False)
checking_leaks = functools.partial(check_tracer_leaks, True)
enable_checks = _state("enable_checks", False)
debug_infs = _state("debug_infs", False, False, 0, reason="use tangentia.debug_nans() "
                    "(NaNs only)")
debug_key_reuse = _state("debug_key_reuse", False, False, 0, reason="keys are not tracked")
softmax_custom_jvp = _state("softmax_custom_jvp", False)


@contextlib.contextmanager
def transfer_guard(new_val):
    """JAX's guard of implicit host/device transfers: a no-op here (arrays live in host
    memory, there is nothing to transfer).

    Args:
      new_val: "allow", "log", "disallow", "log_explicit" or "disallow_explicit".
    """
    if new_val not in ("allow", "log", "disallow", "log_explicit", "disallow_explicit"):
        raise ValueError(f"transfer_guard: argument 'new_val' must be one of 'allow', 'log', "
                         f"'disallow', 'log_explicit', 'disallow_explicit'; got {new_val!r}")
    with transfer_guard_host_to_device(new_val), transfer_guard_device_to_host(new_val), \
            transfer_guard_device_to_device(new_val):
        yield
