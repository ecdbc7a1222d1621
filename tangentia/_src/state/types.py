"""``jax._src.state.types``: JAX's mutable array references.  ``new_ref(x)`` makes a
``Ref`` holding a copy of ``x``; ``ref[idx]`` reads (a new array), ``ref[idx] = v``
writes (``v`` of the reference's dtype and of exactly the indexed shape, as JAX's),
``ref.addupdate(v)`` adds, ``freeze(ref)`` returns the value.

References work outside transformations.  Under ``jit``, ``grad``, ``vmap`` and the
others, a read or write raises ``NotImplementedError`` (tangentia's programs are pure:
a read baked into a compiled program, or a write of a traced value, would give wrong
numbers later); so does a reference passed to a transformed function."""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import core as _core
from ..._array import ArrayImpl

__all__ = ["AbstractRef", "Ref", "freeze", "new_ref"]


class AbstractRef(_core.AbstractValue):
    """The type of a ``Ref``: ``Ref{float64[3]}``; ``inner_aval`` is its value's."""

    __slots__ = ("inner_aval",)
    def __init__(self, inner_aval: Any) -> None:
        self.inner_aval = inner_aval

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    ndim = property(lambda self: self.inner_aval.ndim)
    size = property(lambda self: self.inner_aval.size)

    def str_short(self, short_dtypes: bool = False) -> str:
        a = self.inner_aval
        return f"Ref{{{a.dtype.name}[{','.join(map(str, a.shape))}]}}"

    def __repr__(self) -> str:
        return self.str_short()

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbstractRef) and self.inner_aval == other.inner_aval

    def __hash__(self) -> int:
        return hash(("Ref", self.inner_aval))


def _outside_transformations(what: str) -> None:
    trace = _core.current_trace()
    if trace is not _core.EVAL_TRACE:
        raise NotImplementedError(
            f"{what}: mutable array references (jax.Ref, jax.new_ref) are supported only "
            f"outside transformations in tangentia (the current one: "
            f"{type(trace).__name__}); under jit, grad, vmap and the others, pass the "
            "value (ref[...]) and write the result back after")


class Ref:
    """A mutable array (JAX's ``jax.Ref``), made by ``new_ref``.

    Args:
      buf: the NumPy array it holds (its own: ``new_ref`` copies).
    """

    __slots__ = ("_buf",)

    def __init__(self, buf: np.ndarray) -> None:
        self._buf = buf

    @property
    def aval(self) -> AbstractRef:
        return AbstractRef(_core.ShapedArray(self._buf.shape, self._buf.dtype))

    shape = property(lambda self: self._buf.shape)
    dtype = property(lambda self: self._buf.dtype)
    ndim = property(lambda self: self._buf.ndim)
    size = property(lambda self: self._buf.size)

    def __len__(self) -> int:
        return len(self._buf)

    def _index(self, idx: Any) -> Any:
        """``idx`` as NumPy takes it, bounds checked with JAX's wording (a Ref raises
        where an array would clamp)."""
        if isinstance(idx, ArrayImpl):
            idx = idx.view(np.ndarray)
        for i, d in zip(idx if isinstance(idx, tuple) else (idx,), self._buf.shape):
            if isinstance(i, (int, np.integer)) and not -d <= i < d:
                raise ValueError(f"Out of bound indexer: idx={i}, dim={d}.")
        return idx

    def __getitem__(self, idx: Any) -> Any:
        _outside_transformations("Ref.__getitem__")
        return np.array(self._buf[self._index(idx)]).view(ArrayImpl)

    def get(self, idx: Any = ...) -> Any:
        return self[idx]

    def _value_for(self, idx: Any, value: Any, op: str) -> np.ndarray:
        _outside_transformations(f"Ref.{op}")
        if isinstance(value, _core.Tracer):
            raise NotImplementedError(
                f"Ref.{op}: a traced value cannot be written into a mutable array "
                "reference in tangentia (jax.Ref is supported outside transformations)")
        if isinstance(value, Ref):
            raise TypeError(f"Ref.{op}: the value written is a Ref; read it with ref[...]")
        v = np.asarray(value)
        target = self._buf[idx].shape if idx is not Ellipsis else self._buf.shape
        if v.shape != target:
            raise ValueError(f"Invalid shape for `{op}`. Ref shape: {self._buf.shape}. "
                             f"Expected shape: {target}. Value shape: {v.shape}. "
                             "Transforms: (). ")
        if v.dtype != self._buf.dtype:
            raise ValueError(f"Invalid dtype for `{op}`. Ref dtype: {self._buf.dtype}. "
                             f"Value dtype: {v.dtype}. ")
        return v

    def __setitem__(self, idx: Any, value: Any) -> None:
        idx = self._index(idx)
        self._buf[idx] = self._value_for(idx, value, "swap")

    def set(self, value: Any, idx: Any = ...) -> None:
        self[idx] = value

    def swap(self, value: Any, idx: Any = ...) -> Any:
        old = self[idx]
        self[idx] = value
        return old

    def addupdate(self, value: Any, idx: Any = ...) -> None:
        idx = self._index(idx)
        self._buf[idx] += self._value_for(idx, value, "addupdate")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError("a mutable array reference (jax.Ref) is not an array: read its "
                        "value with ref[...]")

    def __repr__(self) -> str:
        return "Ref" + repr(self._buf)[len("array"):]

    __str__ = __repr__


def new_ref(init_val: Any, *, memory_space: Any = None, kind: Any = None) -> Ref:
    """A mutable array reference holding a copy of ``init_val`` (JAX's ``jax.new_ref``).

    Args:
      init_val: an array or scalar.
      memory_space: JAX's memory space (ignored: one CPU memory).
      kind: JAX's kind of reference (ignored).
    """
    _outside_transformations("new_ref")
    if isinstance(init_val, Ref):
        raise TypeError("new_ref: init_val is already a Ref")
    if not isinstance(init_val, (np.ndarray, np.generic, int, float, complex, bool)):
        raise TypeError("Error interpreting argument to new_ref as a JAX value. The "
                        f"problematic value is of type {type(init_val)} and was passed to "
                        "new_ref at position 0.")
    return Ref(np.array(init_val))


def freeze(ref: Ref) -> Any:
    """The value of ``ref`` (JAX's ``jax.freeze``)."""
    if not isinstance(ref, Ref):
        raise TypeError(f"freeze: expected a Ref, got {type(ref).__name__}")
    return ref[...]
