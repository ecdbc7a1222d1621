"""``tangentia.debug``: ``print`` and ``callback``, effects with concrete values
from inside transformed functions, as ``jax.debug``.

Both are effectful primitives with no outputs (kept by dead-code elimination,
never merged), sharing one set of rules:

* eagerly the effect happens at once; under ``jit`` it is part of the
  compiled program and happens each time it runs (both backends: the numba
  one runs it in object mode), with concrete NumPy arrays;
* under ``grad``/``jvp``/``linearize`` it sees the primal values, once, and
  contributes no tangent or cotangent;
* under ``vmap`` it happens once per element of the batch, in order, with
  that element's values (as JAX's batching rule does);
* inside ``scan``/``while_loop``/``cond`` bodies it happens at every iteration.

``debug.print`` keeps its own primitive (``debug_print``, as JAX has one), so
programs show its format string.

(``tg.debug_nans``, which checks every result for NaNs, is in ``_debug_nans``;
``tg.print_environment_info`` in ``_environment_info``.)
"""
from __future__ import annotations

import builtins as _builtins
import sys as _sys
import warnings as _warnings

import numpy as np

from . import core
from ._array import ArrayImpl
from ._messages import fun_name as _fun_name
from .core import Primitive
from .interpreters.ad import primitive_jvps, primitive_transposes
from .interpreters.batching import primitive_batchers
from .numpy import take as _take
from .tree_util import tree_flatten, tree_unflatten

__all__ = ["print", "callback", "breakpoint"]


def _effect_primitive(name, run, print_params):
    """A primitive with no outputs whose implementation calls ``run(*arrays, **params)``."""
    prim = Primitive(name, multiple_results=True)
    prim.has_effects = True

    def impl(*args, **params):
        run(*[np.asarray(a) for a in args], **params)
        return []

    def jvp(primals, tangents, **params):
        prim.bind(*primals, **params)  # the primal values; no tangent
        return [], []

    def batch(args, dims, **params):
        size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
        for i in range(size):
            prim.bind(*[a if d is None else _take(a, i, axis=d) for a, d in zip(args, dims)],
                      **params)
        return [], []

    prim.impl = impl
    prim.abstract_eval = lambda *avals, **params: []
    prim.print_params = print_params
    primitive_jvps[prim] = jvp
    primitive_batchers[prim] = batch
    primitive_transposes[prim] = lambda cts, *args, **params: [None] * len(args)
    return prim


def _flatten_args(api, args, kwargs):
    """The array leaves of ``(args, kwargs)`` and their structure, checked."""
    leaves, tree = tree_flatten((args, kwargs))
    for i, x in enumerate(leaves):
        if not core.is_array_like(x):
            raise TypeError(f"{api}: argument leaf {i} is a {type(x).__name__}, not an array; "
                            "pass arrays (or pytrees of arrays), and close over other values")
    return leaves, tree


# ---------------------------------------------------------------------------
# debug.print


def _user_args(arrays, tree):
    """The callback's (args, kwargs): tangentia arrays, as JAX hands its callbacks
    JAX arrays."""
    return tree_unflatten(tree, [np.asarray(a).view(ArrayImpl) for a in arrays])


def _print_run(*arrays, fmt, tree):
    args, kwargs = _user_args(arrays, tree)
    _builtins.print(fmt.format(*args, **kwargs))


debug_print_p = _effect_primitive("debug_print", _print_run,
                                  lambda params: {"fmt": params["fmt"]})


def print(fmt, *args, **kwargs):  # noqa: A001 - jax.debug.print's name
    """Print ``fmt.format(*args, **kwargs)`` with the concrete values, also
    from inside jit, vmap (once per element) and differentiated code.

    Args:
      fmt: a format string (``str.format`` syntax).
      *args: the positional values (arrays or pytrees, traced or not).
      **kwargs: the named values.

    Returns:
      None.

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> f = tg.jit(lambda x: tg.debug.print("x = {}", x) or x * 2)
      >>> y = f(3.0)
      x = 3.0
      >>> _ = tg.vmap(lambda x: tg.debug.print("x = {x}", x=x))(tnp.arange(2.0))
      x = 0.0
      x = 1.0
    """
    leaves, tree = _flatten_args("debug.print", args, kwargs)
    debug_print_p.bind(*leaves, fmt=fmt, tree=tree)


# ---------------------------------------------------------------------------
# debug.callback


def _callback_run(*arrays, callback, tree, ordered):
    args, kwargs = _user_args(arrays, tree)
    callback(*args, **kwargs)


debug_callback_p = _effect_primitive(
    "debug_callback", _callback_run,
    lambda params: {"callback": _fun_name(params["callback"]), "ordered": params["ordered"]})


def callback(callback, *args, ordered=False, **kwargs):
    """Call ``callback(*args, **kwargs)`` with concrete NumPy arrays, as
    ``jax.debug.callback``: at once eagerly, at every run under ``jit``, with
    primal values under differentiation, once per element under ``vmap``, and
    at every iteration of loops.  Its result is ignored; returns None.

    Args:
      callback: the Python function to call.
      *args: its positional arguments (arrays or pytrees, traced or not).
      ordered: accepted for JAX compatibility: effects always happen in
        program order here.
      **kwargs: its keyword arguments.

    Returns:
      None.

    Examples:
      >>> import tangentia as tg
      >>> seen = []
      >>> f = tg.jit(lambda x: tg.debug.callback(seen.append, x) or x + 1)
      >>> f(1.0), f(2.0)
      (Array(2.), Array(3.))
      >>> [float(v) for v in seen]
      [1.0, 2.0]
    """
    if not callable(callback):
        raise TypeError(f"debug.callback: callback must be callable, got "
                        f"{type(callback).__name__}")
    leaves, tree = _flatten_args("debug.callback", args, kwargs)
    debug_callback_p.bind(*leaves, callback=callback, tree=tree, ordered=bool(ordered))


# ---------------------------------------------------------------------------
# debug.breakpoint


def _breakpoint_run(**values):
    """Open pdb in this frame: ``values`` is the dict of the concrete values."""
    if not _sys.stdin or not _sys.stdin.isatty():
        _warnings.warn("debug.breakpoint: standard input is not an interactive terminal; "
                       "continuing without stopping", RuntimeWarning, stacklevel=2)
        return
    import pdb  # (here: ~6 ms of CPU at import)
    pdb.Pdb().set_trace(_sys._getframe())


def breakpoint(*, backend=None, filter_frames=True, num_frames=None, ordered=False,  # noqa: A001
               token=None, **kwargs):
    """Stop in Python's debugger (pdb) with concrete values, also from inside
    ``jit``, ``vmap`` (once per element) and differentiated code, as
    ``jax.debug.breakpoint``.

    The values to inspect are passed as keyword arguments: the debugger opens
    in a frame where ``values`` is the dict of their concrete NumPy values
    (``p values["x"]``; JAX's debugger shows the traced function's frames
    instead).  When standard input is not an interactive terminal it warns
    (RuntimeWarning) and continues.

    Args:
      backend: accepted for JAX compatibility (pdb is the one debugger).
      filter_frames: accepted for JAX compatibility.
      num_frames: accepted for JAX compatibility.
      ordered: accepted for JAX compatibility (effects happen in order).
      token: returned unchanged (JAX's optional ordering token).
      **kwargs: the values to inspect (arrays or pytrees, traced or not).

    Returns:
      ``token``.
    """
    callback(_breakpoint_run, ordered=ordered, **kwargs)
    return token
