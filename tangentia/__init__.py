"""tangentia: composable function transformations with custom derivative rules
that keep their meaning under every other transformation.

    import tangentia as tg
    import tangentia.numpy as tnp
"""
import importlib.util as _importlib_util

from ._docstrings import _cache_key
_docstrings_key = _cache_key()   # (the sources the docstrings are built from, read first)
from . import primitives  # noqa: F401  (defines every primitive and its rules)
from .compiler import numpy_backend as _numpy_backend  # noqa: F401  (registers the backend)
if _importlib_util.find_spec("numba") is not None:  # the default backend (numba is a dependency)
    from .compiler import numba_backend as _numba_backend  # noqa: F401
from . import tree_util
from .api import (ShapeDtypeStruct, checkpoint, disable_jit, ensure_compile_time_eval, eval_shape, fwd_and_bwd, grad, linear_transpose, remat, hessian, jacfwd, jacrev, jit, jvp,
                  linearize, make_jaxpr, pmap, value_and_grad, vjp, vmap)
from .core import (ConcretizationTypeError, TracerArrayConversionError, UnexpectedTracerError,
                   ClosedJaxpr, Jaxpr)
from ._debug_nans import debug_nans
from ._environment_info import print_environment_info
from .primitives.callback import pure_callback
from . import ad_checkpoint  # noqa: F401
from .ad_checkpoint import checkpoint_policies
from . import custom_derivatives
from . import errors  # noqa: F401
from .custom_derivatives import closure_convert, custom_jvp, custom_vjp
from . import custom_batching  # noqa: F401
from ._custom_gradient import custom_gradient
custom_derivatives.custom_gradient = custom_gradient  # also its JAX home (defined above it)
from . import numpy  # noqa: F401
from .numpy import ndarray as Array
from . import lax  # noqa: F401
from . import dtypes  # noqa: F401
from . import scipy, nn  # noqa: F401
from . import random  # noqa: F401
from . import ops  # noqa: F401  (jax.ops: segment_sum, ...)
from . import tree  # noqa: F401
from . import typing  # noqa: F401  (jax.typing: ArrayLike, DTypeLike)
from . import experimental  # noqa: F401  (jax.experimental)
from . import sharding  # noqa: F401  (jax.sharding; eager results' .sharding)
from ._shard_map import shard_map  # (jax.shard_map, on the one CPU device)
from .sharding import (NamedSharding, PartitionSpec as P, copy_to_host_async, host_count,
                       host_id, host_ids, make_array_from_callback,
                       make_array_from_process_local_data, make_array_from_single_device_arrays,
                       make_mesh, process_count, process_index, process_indices, reshard,
                       set_mesh)
from ._array import CpuDevice as Device, Shard  # noqa: E402  (the one device's class)
from . import debug  # noqa: F401
from . import api_util, extend, stages  # noqa: F401  (jax.extend.core.Primitive; jax.stages)
from . import _jaxpr_dot  # noqa: F401  (installs ClosedJaxpr.to_dot/show/_repr_svg_)
from ._compat import (block_until_ready, config, default_backend, device_count, device_get,
                      device_put, devices, effects_barrier, local_device_count, local_devices)
from ._compat import (check_tracer_leaks, checking_leaks, clear_caches, debug_infs,  # noqa: F401
                      debug_key_reuse, default_device, default_matmul_precision, enable_checks,
                      enable_x64, explain_cache_misses, float0, log_compiles, named_call, named_scope,
                      numpy_dtype_promotion, numpy_rank_promotion, softmax_custom_jvp,
                      transfer_guard, transfer_guard_device_to_device,
                      transfer_guard_device_to_host, transfer_guard_host_to_device, typeof)
from .api import jacrev as jacobian
from ._array import install_boundaries as _install_boundaries
from .core import EAGER_FAST_PATHS as _EAGER_FAST_PATHS
from .typing import _annotate_dispatched
_annotate_dispatched(f for _, f in _EAGER_FAST_PATHS)  # before the boundaries copy them
from .scipy import stats as _stats

# Eager results of the public functions are tangentia arrays (numpy.ndarray
# with JAX's methods); see tangentia/_array.py.
_install_boundaries(numpy, numpy.linalg, lax, scipy.special, scipy.linalg, nn, random,
                    _stats.bernoulli, _stats.beta, _stats.binom, _stats.cauchy, _stats.chi2,
                    _stats.dirichlet, _stats.expon, _stats.gamma, _stats.laplace, _stats.logistic,
                    _stats.multivariate_normal, _stats.norm, _stats.poisson, _stats.t,
                    _stats.uniform)
from . import image  # noqa: E402  (jax.image)
from ._array import public as _public  # noqa: E402
pure_callback = _public(pure_callback, __name__, "pure_callback", jax_array=False)  # (pytrees)
_install_boundaries(scipy.fft, scipy.integrate, scipy.ndimage, scipy.optimize, scipy.signal, image,
                    scipy.sparse.linalg, scipy.cluster.vq, ops,
                    _stats.betabinom, _stats.gennorm, _stats.geom, _stats.gumbel_l,
                    _stats.gumbel_r, _stats.multinomial, _stats.nbinom, _stats.pareto,
                    _stats.truncnorm, _stats.vonmises, _stats.wrapcauchy, _stats._summaries)
# The twins' docstrings: ours, with NumPy's/SciPy's arguments (tangentia/_docstrings.py).
from ._docstrings import document_public_cached as _document_public
_document_public(_docstrings_key)   # (built from NumPy's and SciPy's docstrings, or read from disk)
del _docstrings_key, _cache_key

# tangentia's version, and the JAX release whose API it follows (``jax.version``)
from . import version  # noqa: E402
from .version import __version__, __version_info__  # noqa: E402,F401
from ._src.state.types import Ref, freeze, new_ref  # noqa: E402  (mutable array references)

__all__ = ["typing", "sharding", "make_mesh", "NamedSharding", "P", "Device", "Shard",
           "copy_to_host_async", "host_count", "host_id", "host_ids", "make_array_from_callback",
           "make_array_from_process_local_data", "make_array_from_single_device_arrays",
           "process_count", "process_index", "process_indices", "reshard", "set_mesh",
           "experimental", "explain_cache_misses", "ad_checkpoint", "checkpoint_policies", "pure_callback", "custom_gradient", "custom_batching", "ensure_compile_time_eval", "disable_jit", "linear_transpose", "random", "tree", "debug", "block_until_ready", "effects_barrier", "config", "default_backend",
           "device_count", "device_get", "device_put", "devices", "local_device_count",
           "local_devices", "jacobian", "debug_nans", "print_environment_info", "Array", "ShapeDtypeStruct", "checkpoint", "remat", "eval_shape", "grad", "hessian", "jacfwd", "jacrev", "jit", "jvp",
           "linearize", "make_jaxpr", "value_and_grad", "vjp", "fwd_and_bwd", "vmap", "pmap", "shard_map", "tree_util", "numpy", "lax",
           "ConcretizationTypeError", "TracerArrayConversionError", "UnexpectedTracerError",
           "ClosedJaxpr", "Jaxpr", "custom_jvp", "custom_vjp", "closure_convert",
           "custom_derivatives", "check_tracer_leaks", "checking_leaks", "clear_caches",
           "debug_infs", "debug_key_reuse", "default_device", "default_matmul_precision",
           "enable_checks", "enable_x64", "float0", "log_compiles", "named_call", "named_scope",
           "numpy_dtype_promotion", "numpy_rank_promotion", "softmax_custom_jvp",
           "transfer_guard", "transfer_guard_device_to_device", "transfer_guard_device_to_host",
           "transfer_guard_host_to_device", "typeof", "Ref", "freeze", "new_ref"]
