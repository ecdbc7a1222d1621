"""``io_callback``: call an impure Python function (I/O, state) with concrete
NumPy arrays from inside transformed code, as ``jax.experimental.io_callback``.

It is ``pure_callback`` made effectful: the call is kept under ``jit`` even
when its results are unused (a no-op debug effect consumes them), a callback
without results is a ``debug.callback``, and ``vmap`` calls it once per
element, in order (with ``ordered=True`` vmap raises, as in JAX).  It has no
derivative (``jvp``/``grad`` raise JAX's ``IO callbacks do not support
JVP.``).  Effects always happen in program order here.
"""
from __future__ import annotations

from .. import debug
from ..custom_derivatives import custom_jvp
from ..primitives.callback import ORDERED_IO, pure_callback
from ..tree_util import tree_flatten, tree_leaves, tree_unflatten

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Callable

__all__ = ["io_callback"]


def _consume(*arrays):
    """The no-op effect that keeps an io_callback's results alive."""


def io_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                sharding: Any = None, ordered: bool = False, **kwargs: Any) -> Any:
    """Call ``callback(*args, **kwargs)`` with NumPy arrays for its effects (and
    results), also from inside ``jit``, ``vmap`` (once per element) and loops.

    Args:
      callback: a Python function of NumPy arrays (pytrees of them) returning
        arrays of the shapes and dtypes of ``result_shape_dtypes``.
      result_shape_dtypes: a pytree of objects with ``shape`` and ``dtype``
        (``tangentia.ShapeDtypeStruct``) describing the results, or None.
      *args: the positional arguments (pytrees of arrays).
      sharding: accepted for JAX compatibility; must be None.
      ordered: effects always happen in program order; True makes ``vmap``
        of the call raise, as in JAX.
      **kwargs: the keyword arguments (pytrees of arrays).

    Returns:
      The callback's results, with the structure of ``result_shape_dtypes``.

    Examples:
      >>> import numpy as np, tangentia as tg
      >>> from tangentia.experimental import io_callback
      >>> log = []
      >>> f = tg.jit(lambda x: io_callback(log.append, None, x) or x + 1)
      >>> f(1.0), f(2.0)
      (Array(2.), Array(3.))
      >>> [float(v) for v in log]
      [1.0, 2.0]
    """
    if sharding is not None:
        raise NotImplementedError("io_callback: argument 'sharding' must be None (tangentia "
                                  "runs on one CPU device)")
    if not tree_leaves(result_shape_dtypes):
        debug.callback(callback, *args, ordered=ordered, **kwargs)
        return result_shape_dtypes
    leaves, tree = tree_flatten((args, kwargs))

    @custom_jvp
    def call(*leaves):
        a, k = tree_unflatten(tree, list(leaves))
        return pure_callback(callback, result_shape_dtypes, *a, vmap_method=ORDERED_IO if ordered else "sequential", **k)

    @call.defjvp
    def _no_jvp(primals, tangents):
        raise ValueError("IO callbacks do not support JVP. (io_callback: wrap the call in "
                         "custom_jvp/custom_vjp to give it a derivative)")

    out = call(*leaves)
    debug.callback(_consume, *tree_leaves(out))
    return out
