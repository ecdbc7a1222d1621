"""``jax.typing``: the types of annotations of code written for JAX.

``ArrayLike`` is what the functions of ``tangentia.numpy`` accept as an array
argument (arrays, tracers, NumPy scalars and Python numbers); ``DTypeLike`` what
they accept as a dtype.  They are for annotations and ``isinstance`` checks:

    >>> import numpy as np, tangentia.numpy as tnp
    >>> from tangentia.typing import ArrayLike
    >>> [isinstance(v, ArrayLike) for v in (tnp.ones(2), np.float32(1), 2.0, "2")]
    [True, True, True, False]

``Array`` (also ``tangentia.Array`` and ``tangentia.numpy.ndarray``) is what the
functions return.  At run time it is a class for ``isinstance`` checks, true for
NumPy arrays and for traced values (inside ``jit``, ``grad``, ``vmap``), as
``jax.Array`` is:

    >>> import tangentia as tg
    >>> from tangentia.typing import Array
    >>> isinstance(tnp.ones(2), Array), tg.grad(lambda x: x * isinstance(x, Array))(1.0)
    (True, Array(1.))

A type checker sees it as a ``numpy.ndarray`` with JAX's methods (``.at``,
``.sharding``, ``.block_until_ready()``), which is what an eager result is
(``tangentia._array.ArrayImpl``) and what a traced value stands for.

The other names are for the annotations of the package's own functions, as in
JAX's sources: ``Shape`` (a sequence of sizes), ``Axis`` (an axis, several, or
``None``), ``AxisName`` (a ``vmap`` axis name), ``PyTree`` (any tree of arrays:
``Any``, as the leaves and containers are open-ended).

This module is in the core layer (``tests/test_architecture.py``), so that every
layer can annotate with it.  The package's modules import it only under
``typing.TYPE_CHECKING`` (with ``from __future__ import annotations``, their
annotations are never evaluated), so annotations cost nothing at import.
"""
from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, Union

import numpy as np

from .core import Tracer

__all__ = ["Array", "ArrayLike", "Axis", "AxisName", "DType", "DTypeLike", "PyTree", "Shape"]

if TYPE_CHECKING:
    # tangentia's functions also take (nested) lists of these, as NumPy's do (JAX's reject them)
    ArrayLike = Union[np.ndarray, Tracer, np.bool_, np.number, bool, int, float, complex,
                      Sequence[Any]]
else:
    ArrayLike = Union[np.ndarray, Tracer, np.bool_, np.number, bool, int, float, complex]
"""An array, a tracer, a NumPy scalar or a Python number (eager results are
``numpy.ndarray``s).  A type checker also accepts lists of these, as tangentia's
functions do (NumPy's semantics; JAX's reject them); ``isinstance`` checks are
JAX's (a list is not ``ArrayLike``)."""


class _SupportsDType(Protocol):
    @property
    def dtype(self) -> np.dtype: ...


DTypeLike = Union[str, type[Any], np.dtype, _SupportsDType]
"""A dtype, its name, a scalar type (``float``, ``np.float32``) or a value with a
``.dtype``."""

DType = np.dtype
Shape = Sequence[int]
Axis = Union[int, Sequence[int], None]
AxisName = Hashable
PyTree = Any



class _Unary(Protocol):
    """The type of the primitives' own functions of one array (``tnp.sin``)."""

    def __call__(self, x: ArrayLike, /) -> Array: ...


class _Binary(Protocol):
    """The type of the primitives' own functions of two arrays (``tnp.add``)."""

    def __call__(self, x: ArrayLike, y: ArrayLike, /) -> Array: ...


if TYPE_CHECKING:
    class Array(np.ndarray[Any, np.dtype[Any]]):
        """What a type checker sees: an ndarray with ``jax.Array``'s own methods."""

        @property
        def at(self) -> Any: ...
        @property
        def sharding(self) -> Any: ...
        @property
        def device(self) -> Any: ...
        @property
        def addressable_shards(self) -> list[Any]: ...
        @property
        def committed(self) -> bool: ...
        is_fully_addressable: bool
        is_fully_replicated: bool
        def addressable_data(self, index: int) -> Array: ...
        def devices(self) -> set[Any]: ...
        def block_until_ready(self) -> Array: ...
        def copy_to_host_async(self) -> None: ...
        def is_ready(self) -> bool: ...
        def is_deleted(self) -> bool: ...
else:
    class _ArrayMeta(type):
        def __instancecheck__(cls, obj):
            return isinstance(obj, (np.ndarray, Tracer))

        def __subclasscheck__(cls, sub):
            return issubclass(sub, (np.ndarray, Tracer))

    class Array(metaclass=_ArrayMeta):
        """The array type for ``isinstance`` checks: NumPy arrays and traced values
        (``isinstance(x, tangentia.Array)`` holds inside transformed functions too)."""

        def __new__(cls, *args, **kwargs):
            raise TypeError("tangentia.Array (tangentia.numpy.ndarray) is for isinstance "
                            "checks; create arrays with tnp.asarray, tnp.zeros, ...")

    Array.__module__ = "tangentia"


def _annotate_dispatched(functions):
    """Give the functions ``core.eager_dispatch`` makes (the primitives' own public functions,
    ``tnp.sin``, ``lax.add``, ...) JAX's annotations where they have none: ``(x: ArrayLike) ->
    Array`` and ``(x: ArrayLike, y: ArrayLike) -> Array``; one of any arity takes those of the
    function it wraps.  Updated in place, so wrappers that share the dict see them too."""
    for f in functions:
        ann = getattr(f, "__annotations__", None)
        if ann is None or ann:
            continue
        inner = getattr(f, "__wrapped__", None)
        if inner is not None and getattr(inner, "__annotations__", None):
            ann.update(inner.__annotations__)
        else:
            code = f.__code__
            ann.update({n: "ArrayLike" for n in code.co_varnames[:code.co_argcount]})
            ann["return"] = "Array"

