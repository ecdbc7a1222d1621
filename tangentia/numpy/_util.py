"""Private helpers shared by the ``tangentia.numpy`` modules.

They look only at abstract values (shapes and dtypes) and at whether a value
is traced, so every other module of the package can use them.
"""
from __future__ import annotations

import builtins
import operator

import numpy as _np

from .. import core as _core
from ..core import Tracer as _Tracer


def _aval(x):
    return _core.get_aval(x)


def _is_tracer(x):
    return isinstance(x, _Tracer)


def _eager(*arrays):
    """True outside every transformation, with no traced argument."""
    return _core.is_eager() and not builtins.any(_is_tracer(a) for a in arrays)


def _flat_seq(a):
    for x in a:
        if isinstance(x, (list, tuple)):
            yield from _flat_seq(x)
        else:
            yield x


def _concrete(x, fname, argname):
    if _is_tracer(x):
        try:
            return x.concrete_value(fname)
        except _core.ConcretizationTypeError as err:
            # JAX's wording first (its first line names the traced value), then ours
            first, _, rest = str(err).partition("\n")
            raise _core.ConcretizationTypeError(
                f"{first}\nIt arose in the jnp.{fname} argument '{argname}'. {fname}: argument "
                f"'{argname}' must be concrete (it determines a shape), but it is traced."
                + (f"\n{rest}" if rest else "")) from None
    return x


def _value_dependent(a, fname, argname):
    if _is_tracer(a):
        try:
            return _np.asarray(a.concrete_value(fname))
        except _core.ConcretizationTypeError:
            raise _core.ConcretizationTypeError(
                f"{fname}: the shape of the result depends on the values of argument "
                f"'{argname}', which is traced (under jit or vmap), so it cannot be computed "
                f"there. Call {fname} outside the transformed function"
                + (", or pass a static size=..." if fname in ("unique",) else "")
                + ".") from None
    return _core.as_array(a, f"{fname}: argument '{argname}'")


def _is_int_scalar(x):
    return isinstance(x, (int, _np.integer)) and not isinstance(x, (bool, _np.bool_))


def _static_axis(axis, fname):
    """JAX's ValueError for a list given as ``axis`` to a function JAX compiles with ``axis``
    static (hashed): ``cumsum``, the ``nan*`` reductions, ``median``/``quantile``,
    ``count_nonzero``, ``gradient``, ``linalg.norm``, ... (NumPy's and ours took it as a
    tuple; ``sum``/``mean``/``max``/... take it in JAX too)."""
    if isinstance(axis, list):
        raise ValueError("Non-hashable static arguments are not supported. An error occurred "
                         f"while trying to hash an object of type {type(axis)}, {axis!r}. The "
                         "error was:\nTypeError: unhashable type: 'list'\n(tangentia.numpy."
                         f"{fname}: argument 'axis' must be an int, a tuple of ints or None)")


def _axes(axis, nd, fname):
    if axis is None:
        return tuple(range(nd))
    if isinstance(axis, (int, _np.integer)):
        axis = (int(axis),)
    out = []
    for a in axis:
        try:
            a = operator.index(a)   # (int() took axis='0' as 0, and 1.5 as 1)
        except TypeError:
            raise TypeError(f"'{type(a).__name__}' object cannot be interpreted as an integer "
                            f"({fname}: argument 'axis' must be None, an int or a tuple of "
                            f"ints, got {axis!r})") from None
        if not -nd <= a < nd:
            raise ValueError(f"{fname}: axis {a} is out of bounds for an array of rank {nd}")
        out.append(a % nd if nd else a)
    if len(set(out)) != len(out):   # (was reduced once: JAX's and NumPy's ValueError)
        raise ValueError(f"duplicate value in 'axis': {tuple(axis)} ({fname}: each axis may "
                         "appear once)")
    return tuple(sorted(out))


def _axis(axis, a, fname, argname="a"):
    """One axis of ``a``, normalized, with an error naming the function."""
    nd = _aval(a).ndim
    try:
        ax = operator.index(axis)
    except TypeError:
        raise TypeError(f"{fname}: argument 'axis' must be an integer or None, got "
                        f"{axis!r}") from None
    if not -nd <= ax < nd:
        raise ValueError(f"{fname}: axis {ax} is out of bounds for argument '{argname}' of "
                         f"shape {_aval(a).shape} (rank {nd})")
    return ax % nd


def _check_device(device, fname, argname="device"):
    """JAX's ``device=`` of the array constructors: None, a device (tangentia's one CPU device
    or the platform name 'cpu') or a sharding over it.  Arrays live in host memory, so a
    valid placement changes nothing; anything else is an error naming the function."""
    if device is None or device == "cpu" or hasattr(device, "device_set"):
        return
    if type(device).__name__.endswith("Device") and getattr(device, "platform", "cpu") == "cpu":
        return
    raise ValueError(f"{fname}: argument '{argname}' must be None, a device or a Sharding, got "
                     f"{device!r}")


def _check_order_k(order, fname):
    """JAX's error for an ``order`` of ``array``/``asarray`` other than None or "K" (memory
    layout is NumPy's here, and JAX implements only "K")."""
    if order is not None and order != "K":
        raise NotImplementedError(f"Only implemented for order='K' ({fname}: argument 'order' "
                                  f"must be None or 'K', got {order!r})")


def _no_out(out, fname, ours=None, prefix="jnp."):
    """JAX's error for an ``out`` argument (``fname``: the function JAX's message names, after
    ``prefix``; ``ours``: ours, where it differs): its position is JAX's and NumPy's, so a
    ``keepdims`` passed after it is not read as one."""
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to {prefix}{fname} is not supported. "
                                  f"(tangentia.numpy.{ours or fname}: argument 'out' must be "
                                  "None, use the returned array)")
