"""``tangentia.debug.print``: print values from inside transformed functions.

Eagerly it prints at once; under ``jit`` the print is part of the compiled
program and happens each time it runs, with concrete values; under ``grad``
and ``jvp`` it prints primal values; under ``vmap`` it prints the whole
batch.  It has no derivative and returns nothing.
"""
from __future__ import annotations

import builtins as _builtins

import numpy as np

from .core import Primitive

__all__ = ["print"]

debug_print_p = Primitive("debug_print", multiple_results=True)
debug_print_p.has_effects = True


def _impl(*args, fmt, n_pos, names):
    pos = [np.asarray(a) for a in args[:n_pos]]
    kw = {k: np.asarray(v) for k, v in zip(names, args[n_pos:])}
    _builtins.print(fmt.format(*pos, **kw))
    return []


debug_print_p.impl = lambda *args, **params: _impl(*args, **params)
debug_print_p.abstract_eval = lambda *avals, **params: []
debug_print_p.print_params = lambda params: {"fmt": params["fmt"]}


def _jvp(primals, tangents, **params):
    debug_print_p.bind(*primals, **params)
    return [], []


def _batch(args, dims, **params):
    debug_print_p.bind(*args, **params)
    return [], []


debug_print_p.jvp = _jvp
debug_print_p.batch = _batch
debug_print_p.transpose = lambda cts, *args, **params: [None] * len(args)


def print(fmt, *args, **kwargs):  # noqa: A001 - jax.debug.print's name
    """Print ``fmt.format(*args, **kwargs)`` with the concrete values, also
    from inside jit, vmap and differentiated code."""
    names = tuple(sorted(kwargs))
    debug_print_p.bind(*args, *[kwargs[k] for k in names], fmt=fmt, n_pos=len(args),
                       names=names)
