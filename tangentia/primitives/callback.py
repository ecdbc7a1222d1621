"""``pure_callback``: call a pure Python function with concrete NumPy arrays
from inside transformed code, as ``jax.pure_callback``.

The callback is declared by the shapes and dtypes of its results, so tracing
needs no call.  It is treated as pure: a result nobody uses lets the call be
dropped, and it may run any number of times.  Eagerly and under ``jit`` it
runs with NumPy arrays (in object mode under the numba backend).  It has no
derivative: wrap it in ``custom_jvp``/``custom_vjp`` to differentiate (as in
JAX).  Under ``vmap``, ``vmap_method`` says how the batch reaches it:

* ``"sequential"`` / ``"sequential_unrolled"``: once per element, in order
  (one call of the primitive whose Python loop runs over the batch);
* ``"expand_dims"``: once, batched arguments with the batch as their leading
  axis, unbatched ones with a leading axis of size 1;
* ``"broadcast_all"``: once, every argument with the batch as leading axis;
* ``"legacy_vectorized"``: once, unbatched arguments as they are;
* ``None`` (the default): vmap raises, as in JAX;
* ``ORDERED_IO`` (``io_callback(..., ordered=True)``, not a public choice):
  vmap raises JAX's ``Cannot `vmap` ordered IO callback.``
"""
from __future__ import annotations

import numpy as np

from .. import core
from ..core import Primitive, ShapedArray
from ..interpreters import base_ops as B
from ..interpreters.ad import primitive_jvps, primitive_transposes
from ..interpreters.batching import primitive_batchers
from ..tree_util import tree_flatten, tree_leaves, tree_unflatten

__all__ = ["pure_callback", "pure_callback_p", "ORDERED_IO"]

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized", None)
ORDERED_IO = "ordered_io"

pure_callback_p = Primitive("pure_callback", multiple_results=True)


class _FlatCallback:
    """The user's callback on flat leaves: unflattens the arguments, calls,
    flattens and checks the results against the declared types."""

    __slots__ = ("callback", "in_tree", "__weakref__")

    def __init__(self, callback, in_tree):
        self.callback, self.in_tree = callback, in_tree

    def __call__(self, *flat, result_avals):
        args, kwargs = tree_unflatten(self.in_tree, list(flat))
        out = self.callback(*args, **kwargs)
        leaves = [np.asarray(x) for x in tree_leaves(out)]
        name = getattr(self.callback, "__name__", repr(self.callback))
        if len(leaves) != len(result_avals):
            raise ValueError(
                f"pure_callback: the callback {name} returned {len(leaves)} arrays, but "
                f"result_shape_dtypes declares {len(result_avals)}")
        for i, (x, aval) in enumerate(zip(leaves, result_avals)):
            if x.shape != aval.shape:
                raise ValueError(f"Incorrect output shape for return value {i}: Expected: "
                                 f"{aval.shape}, Actual: {x.shape} (pure_callback of {name})")
            if x.dtype != aval.dtype:
                raise ValueError(f"Incorrect output dtype for return value {i}: Expected: "
                                 f"{aval.dtype}, Actual: {x.dtype} (pure_callback of {name})")
        return leaves

    def __repr__(self):
        return getattr(self.callback, "__name__", repr(self.callback))


def _impl(*args, callback, result_avals, vmap_method):
    return callback(*[np.asarray(a) for a in args], result_avals=result_avals)


def _jvp(primals, tangents, **params):
    raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use "
                     "callbacks while taking gradients. (tangentia: wrap the pure_callback "
                     f"of {params['callback']!r} in tangentia.custom_jvp or custom_vjp.)")


def _transpose(cts, *args, **params):
    raise ValueError("Pure callbacks do not support transpose. Please use `jax.custom_vjp` to "
                     "use callbacks while taking gradients.")


def _batched_avals(size, avals):
    return tuple(ShapedArray((size,) + a.shape, a.dtype) for a in avals)


class _Sequential:
    """A flat callback mapped over the leading axis of its batched arguments."""

    __slots__ = ("inner", "batched", "__weakref__")

    def __init__(self, inner, batched):
        self.inner, self.batched = inner, tuple(batched)

    def __call__(self, *args, result_avals):
        size = next(a.shape[0] for a, b in zip(args, self.batched) if b)
        unbatched = tuple(ShapedArray(a.shape[1:], a.dtype) for a in result_avals)
        rows = [self.inner(*[a[i] if b else a for a, b in zip(args, self.batched)],
                           result_avals=unbatched) for i in range(size)]
        return [np.stack([r[k] for r in rows]) if rows else np.empty(a.shape, a.dtype)
                for k, a in enumerate(result_avals)]

    def __repr__(self):
        return repr(self.inner)


def _batch(args, dims, *, callback, result_avals, vmap_method):
    if vmap_method == ORDERED_IO:
        raise ValueError(f"Cannot `vmap` ordered IO callback. (io_callback of {callback!r}: "
                         "pass ordered=False to map it)")
    if vmap_method is None or vmap_method not in VMAP_METHODS:
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one of "
            "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
            f"'legacy_vectorized'. Got vmap_method={vmap_method!r}.")
    size = next(core.get_aval(a).shape[d] for a, d in zip(args, dims) if d is not None)
    args = [a if d is None else B.move_to_front(a, d) for a, d in zip(args, dims)]
    out_avals = _batched_avals(size, result_avals)
    if vmap_method in ("sequential", "sequential_unrolled"):
        callback = _Sequential(callback, [d is not None for d in dims])
    elif vmap_method in ("expand_dims", "broadcast_all"):
        n = size if vmap_method == "broadcast_all" else 1
        args = [a if d is not None else
                B.broadcast_to(B.reshape(a, (1,) + core.get_aval(a).shape),
                               (n,) + core.get_aval(a).shape)
                for a, d in zip(args, dims)]
    outs = pure_callback_p.bind(*args, callback=callback, result_avals=out_avals,
                                vmap_method=vmap_method)
    return outs, [0] * len(outs)


pure_callback_p.impl = _impl
pure_callback_p.abstract_eval = lambda *avals, result_avals, **params: list(result_avals)
primitive_jvps[pure_callback_p] = _jvp
primitive_transposes[pure_callback_p] = _transpose
primitive_batchers[pure_callback_p] = _batch
pure_callback_p.print_params = lambda params: {"callback": repr(params["callback"]),
                                               "vmap_method": params["vmap_method"]}


def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None,
                  **kwargs):
    """Call the pure Python function ``callback(*args, **kwargs)`` with NumPy arrays,
    also from inside ``jit``, ``vmap`` and loops, as ``jax.pure_callback``.

    Args:
      callback: a function of NumPy arrays (pytrees of them) returning arrays
        with exactly the shapes and dtypes of ``result_shape_dtypes``.  It must
        be pure: it may be called any number of times, or not at all if its
        results are unused.
      result_shape_dtypes: a pytree of objects with ``shape`` and ``dtype``
        (``tangentia.ShapeDtypeStruct``, arrays) describing the results.
      *args: the positional arguments (pytrees of arrays).
      **kwargs: the keyword arguments (pytrees of arrays).
      sharding: accepted for JAX compatibility; must be None (one CPU device).
      vmap_method: how ``vmap`` reaches the callback (see the module notes).

    Returns:
      The callback's results, with the structure of ``result_shape_dtypes``.

    It has no derivative: define one with ``custom_jvp``/``custom_vjp``.

    Example:
      >>> import numpy as np, scipy.special, tangentia as tg
      >>> f = lambda x: tg.pure_callback(scipy.special.expit,
      ...                                tg.ShapeDtypeStruct(x.shape, x.dtype), x)
      >>> tg.jit(f)(np.zeros(2))
      Array([0.5, 0.5])
    """
    if vmap_method not in VMAP_METHODS and vmap_method != ORDERED_IO:
        raise ValueError(f"vmap_method must be on of the allowed methods {list(VMAP_METHODS)}, "
                         f"but got: {vmap_method}")
    if sharding is not None:
        raise NotImplementedError("pure_callback: argument 'sharding' must be None (tangentia "
                                  "runs on one CPU device)")
    if not callable(callback):
        raise TypeError(f"pure_callback: argument 'callback' must be callable, got "
                        f"{type(callback).__name__}")
    flat_args, in_tree = tree_flatten((args, kwargs))
    for i, x in enumerate(flat_args):
        if not core.is_array_like(x):
            raise TypeError(f"pure_callback: argument leaf {i} is a {type(x).__name__}, not an "
                            "array; pass arrays (pytrees of arrays) and close over other values")
    shapes, out_tree = tree_flatten(result_shape_dtypes)
    try:
        result_avals = tuple(ShapedArray(tuple(s.shape), np.dtype(s.dtype)) for s in shapes)
    except (AttributeError, TypeError):
        raise TypeError("pure_callback: argument 'result_shape_dtypes' must be a pytree of "
                        "objects with .shape and .dtype (e.g. tangentia.ShapeDtypeStruct), got "
                        f"{result_shape_dtypes!r}") from None
    outs = pure_callback_p.bind(*flat_args, callback=_FlatCallback(callback, in_tree),
                                result_avals=result_avals, vmap_method=vmap_method)
    return tree_unflatten(out_tree, outs)
