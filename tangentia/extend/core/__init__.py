"""``jax.extend.core``: JAX's ``Primitive`` with its ``def_impl``,
``def_abstract_eval`` and ``def_effectful_abstract_eval``, and the IR's types.

A primitive made here is an ordinary ``tangentia.core.Primitive``: ``bind`` goes to
the current interpreter, which reads its rules from the same tables as the
library's own primitives (``ad.primitive_jvps``, ``ad.primitive_transposes``,
``batching.primitive_batchers``).  Its implementation is what ``def_impl`` was
given (``mlir.register_lowering`` of ``mlir.lower_fun(impl)`` gives the same, when
``def_impl`` was not called): the evaluator, and the backends for a staged
program (which call an implementation they do not lower themselves).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ... import core as _core
from ..._array import ArrayImpl
from ...interpreters import ad as _ad
from ...interpreters import batching as _batching
from ...core import ClosedJaxpr, Jaxpr, Literal, Var, subjaxprs
from ...custom_derivatives._base import user_values
from ..._src.effects import Effect  # noqa: F401  (subclassed by flax nnx)

__all__ = ["ClosedJaxpr", "Effect", "Jaxpr", "Literal", "Primitive", "Var", "array_types",
           "find_top_trace", "get_opaque_trace_state", "jaxpr_as_fun", "jaxprs_in_params",
           "mapped_aval", "subjaxprs", "unmapped_aval"]

array_types = {np.ndarray}


def _plain(x: Any) -> Any:
    """An implementation's result as the evaluator hands values on: an exact ndarray
    (a tangentia array, which user code built with ``tangentia.numpy`` returns, is one
    of its subclasses)."""
    if isinstance(x, np.ndarray) and type(x) is not np.ndarray:
        return x.view(np.ndarray)
    return x


class Primitive(_core.Primitive):
    """JAX's ``jax.extend.core.Primitive(name)``: set ``multiple_results``, give its
    rules with ``def_impl`` and ``def_abstract_eval`` (each returns its argument, so
    both work as decorators), then ``bind`` it."""

    # set by def_impl (unset before: mlir.register_lowering(p, lower_fun(f)) then gives f;
    # no __init__ of ours, so the primitive is registered as made by its caller's module)
    __slots__ = ("impl_given",)

    def def_impl(self, impl: Callable) -> Callable:
        prim = self
        self.impl_given = True

        def evaluate(*args: Any, **params: Any) -> Any:
            # (the evaluator holds exact ndarrays; the user's function gets arrays with
            # JAX's methods, ``.at`` and the rest, as JAX's impl rules get JAX arrays)
            out = impl(*[a.view(ArrayImpl) if type(a) is np.ndarray else a for a in args],
                       **params)
            if prim.multiple_results:
                return [_plain(o) for o in out]
            return _plain(out)

        evaluate.__name__ = getattr(impl, "__name__", "impl")
        self.impl = evaluate
        return impl

    def bind(self, *args: Any, **params: Any) -> Any:
        # The rules the library registered in the interpreters' tables
        # (``ad.primitive_jvps[p] = rule``, ...) get arrays with JAX's methods, as the
        # implementation does: wrapped here, at the first bind after each registration.
        for table, wrap in _RULE_TABLES:
            rule = table.get(self)
            if rule is not None and getattr(rule, "user_rule", None) is None:
                table[self] = wrap(rule)
        return _core.Primitive.bind(self, *args, **params)

    def def_abstract_eval(self, abstract_eval: Callable) -> Callable:
        self.abstract_eval = abstract_eval
        return abstract_eval

    def def_effectful_abstract_eval(self, effectful_abstract_eval: Callable) -> Callable:
        """``effectful_abstract_eval(*avals, **params) -> (avals, effects)``: a primitive
        with effects is kept by dead-code elimination even when its outputs are unused."""

        def abstract_eval(*avals: Any, **params: Any) -> Any:
            out, effects = effectful_abstract_eval(*avals, **params)
            if effects:
                self.has_effects = True
            return out

        self.abstract_eval = abstract_eval
        return effectful_abstract_eval


def _user(xs: Any) -> Any:
    """A rule's array arguments as the library's own code gets them: exact ndarrays
    (what the interpreters hold) viewed as tangentia arrays, so that ``x.at[i]``,
    ``x[traced_i]`` and JAX's other array methods work in the rule as in JAX's (a list
    or tuple of them: each; anything else as it is)."""
    if type(xs) is np.ndarray:
        return xs.view(ArrayImpl)
    if type(xs) in (list, tuple):
        return type(xs)(user_values(xs))
    return xs


def _wrap_jvp(rule: Callable) -> Callable:
    def jvp(primals: Any, tangents: Any, **params: Any) -> Any:
        return rule(_user(primals), _user(tangents), **params)
    jvp.user_rule = rule   # type: ignore[attr-defined]
    return jvp


def _wrap_transpose(rule: Callable) -> Callable:
    def transpose(ct: Any, *args: Any, **params: Any) -> Any:
        return rule(_user(ct), *_user(args), **params)
    transpose.user_rule = rule   # type: ignore[attr-defined]
    return transpose


def _wrap_batch(rule: Callable) -> Callable:
    def batch(args: Any, dims: Any, **params: Any) -> Any:
        return rule(_user(args), dims, **params)
    batch.user_rule = rule   # type: ignore[attr-defined]
    return batch


_RULE_TABLES = ((_ad.primitive_jvps, _wrap_jvp), (_ad.primitive_transposes, _wrap_transpose),
                (_batching.primitive_batchers, _wrap_batch))


def jaxpr_as_fun(closed_jaxpr: ClosedJaxpr) -> Callable:
    """``jax.extend.core.jaxpr_as_fun(closed_jaxpr)``: the program as a function of its
    inputs, returning the list of its outputs."""
    return _core.jaxpr_as_fun(closed_jaxpr.jaxpr, closed_jaxpr.consts)


def jaxprs_in_params(params: dict) -> list:
    """The programs among an equation's parameters (JAX's helper)."""
    out: list = []
    for v in params.values():
        vals = v if isinstance(v, (tuple, list)) else (v,)
        for w in vals:
            if isinstance(w, ClosedJaxpr):
                out.append(w.jaxpr)
            elif isinstance(w, Jaxpr):
                out.append(w)
    return out


def find_top_trace(xs: Sequence[Any]) -> Any:
    """The interpreter that would handle an operation on ``xs``: the current one (the
    tracers of a transformation are only ever handled while it is current)."""
    return _core.current_trace()


class OpaqueTraceState:
    """Which interpreter was current (``get_opaque_trace_state``): equal to another
    only when both were taken under the same one, as JAX's."""

    __slots__ = ("_trace",)

    def __init__(self, trace: Any) -> None:
        self._trace = trace

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OpaqueTraceState) and self._trace is other._trace

    def __hash__(self) -> int:
        return id(self._trace)

    def __repr__(self) -> str:
        return f"OpaqueTraceState({self._trace.describe()})"


def get_opaque_trace_state(convention: Any = None) -> OpaqueTraceState:
    """The current interpreter as an opaque value that compares equal only to another
    taken under the same one (flax's modules record it when made)."""
    return OpaqueTraceState(_core.current_trace())


def mapped_aval(size: int, axis: int | None, aval: Any) -> Any:
    """``aval`` without its axis ``axis`` (of length ``size``), as JAX's."""
    if axis is None:
        return aval
    shape = tuple(aval.shape)
    if not -len(shape) <= axis < len(shape) or shape[axis] != size:
        raise ValueError(f"mapped_aval: axis {axis} of shape {shape} is not of size {size}")
    axis %= len(shape)
    return _core.ShapedArray(shape[:axis] + shape[axis + 1:], aval.dtype, aval.weak_type)


def unmapped_aval(size: int, axis: int | None, aval: Any, *_: Any) -> Any:
    """``aval`` with a new axis of length ``size`` at ``axis``, as JAX's."""
    if axis is None:
        return aval
    shape = tuple(aval.shape)
    if not -len(shape) - 1 <= axis <= len(shape):
        raise ValueError(f"unmapped_aval: axis {axis} out of range for shape {shape}")
    axis %= len(shape) + 1
    return _core.ShapedArray(shape[:axis] + (size,) + shape[axis:], aval.dtype, aval.weak_type)
