"""Helpers shared by the public transformations (argument checks, flattening)."""
from __future__ import annotations

import inspect

import numpy as np

from .. import core
from ..core import Tracer
from .._messages import fun_name as _fun_name
from ..tree_util import tree_flatten, tree_structure, tree_unflatten


# ---------------------------------------------------------------------------
# Helpers

_LEAF_TREE = tree_structure(0)


def _check_callable(fun, api):
    """JAX's check_callable: a callable that is not a generator function."""
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun!r:.60} ({api}: the function to "
                        f"transform must be callable, not {type(fun).__name__})")
    if inspect.isgeneratorfunction(fun):
        raise TypeError(f"Expected a function, got a generator function: {_fun_name(fun)} ({api} "
                        "traces the function once; a generator's body does not run when called)")


# JAX's error for argnums=(), by function
_EMPTY_ARGNUMS = {"grad": "max() arg is an empty sequence",
                  "jacfwd": "at least one array or dtype is required",
                  "hessian": "at least one array or dtype is required",
                  "jacrev": "Too few leaves for PyTreeDef; expected 1, got 0"}


def _normalize_argnums(argnums, nargs, api, fun):
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    if not nums:   # JAX's wording differs by function (an error from inside each)
        raise ValueError(f"{_EMPTY_ARGNUMS.get(api, _EMPTY_ARGNUMS['grad'])} ({api} of "
                         f"{_fun_name(fun)}: argnums=() names no argument to differentiate)")
    out = []
    for a in nums:
        if not isinstance(a, (int, np.integer)):
            raise TypeError(f"'{type(a).__name__}' object cannot be interpreted as an integer "
                            f"({api}: argnums must be an int or a tuple of ints, got "
                            f"{argnums!r})")
        b = a + nargs if a < 0 else a
        if not 0 <= b < nargs:
            if a >= 0 and api in ("grad", "value_and_grad"):
                raise TypeError(f"differentiating with respect to argnums={argnums!r} requires "
                                f"at least {a + 1} positional arguments to be passed by the "
                                f"caller, but got only {nargs} positional arguments. ({api} of "
                                f"{_fun_name(fun)}: pass the differentiated arguments "
                                "positionally)")
            raise ValueError("Positional argument indices, e.g. for `static_argnums`, must have "
                             "value greater than or equal to -len(args) and less than len(args), "
                             f"but got value {a} for len(args) == {nargs}. ({api} of "
                             f"{_fun_name(fun)}: argnums={argnums!r}; pass the differentiated "
                             "arguments positionally)")
        if b in out:   # (JAX fails inside with an unrelated TypeError)
            raise TypeError(f"{api}: argnums={argnums!r} names positional argument {b} more "
                            "than once; each differentiated argument must appear once")
        out.append(int(b))
    return single, tuple(out)


def _leaf_aval(x, api, what):
    try:
        return core.get_aval(x)
    except TypeError as e:
        raise TypeError(f"{e} ({api}: {what} is not an array)") from None


def _parameters(fun):
    """``fun``'s ``inspect.Parameter`` objects ([] when it has no signature)."""
    try:
        return list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return []


def _arg_leaf_names(fun, args):
    """Readable names for the flattened leaves of ``args`` (for errors)."""
    params = [p.name for p in _parameters(fun)]
    names = []
    for i, a in enumerate(args):
        base = params[i] if i < len(params) else f"argument {i}"
        leaves, _ = tree_flatten(a)
        if len(leaves) == 1 and not isinstance(a, (tuple, list, dict)):
            names.append(f"argument '{base}'")
        else:
            names.extend(f"argument '{base}' (leaf {j})" for j in range(len(leaves)))
    return names


def _describe(x):
    if core.is_array_like(x):
        return f"a single array {core.get_aval(x).str_short()}"
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of length {len(x)}"
    return f"a {type(x).__name__}"


def _arrays(leaves):
    """Concrete results as ndarrays (Python and NumPy scalars become 0-d arrays)."""
    return [x if type(x) is np.ndarray or isinstance(x, Tracer) else np.asarray(x) for x in leaves]


def _flatten_fun(fun, in_tree, store):
    """A flat-in, flat-out version of ``fun``; the output tree goes in ``store``."""
    def flat(*leaves):
        args, kwargs = tree_unflatten(in_tree, leaves)
        out = fun(*args, **kwargs)
        out_leaves, out_tree = tree_flatten(out)
        store["out_tree"] = out_tree
        return out_leaves
    return flat


