"""``jax.api_util``: ``flatten_fun`` (and ``flatten_fun_nokwargs``) and ``debug_info``,
with which libraries written for JAX trace a function of pytrees as one of flat
arguments (numpyro's provenance tracking, imported by ``numpyro.infer``; flax's
``nn.scan``)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .extend.linear_util import WrappedFun
from .tree_util import PyTreeDef, tree_flatten, tree_unflatten

__all__ = ["debug_info", "flatten_fun", "flatten_fun_nokwargs"]


class DebugInfo:
    """What a traced function is, for messages: ``traced_for`` and its name."""

    def __init__(self, traced_for: str, func_name: str) -> None:
        self.traced_for = traced_for
        self.func_name = func_name

    def __repr__(self) -> str:
        return f"DebugInfo(traced_for={self.traced_for!r}, func_name={self.func_name!r})"


def debug_info(traced_for: str, fun: Callable, args: Sequence[Any], kwargs: dict[str, Any],
               **_: Any) -> DebugInfo:
    return DebugInfo(traced_for, getattr(fun, "__name__", repr(fun)))


def flatten_fun(fun: WrappedFun, in_tree: PyTreeDef) -> tuple[WrappedFun, Callable[[], Any]]:
    """``fun`` of ``(args, kwargs)`` (a pytree of structure ``in_tree``) as a function of
    its flat leaves returning flat outputs; the thunk gives the outputs' structure once
    it has been called."""
    return _flatten(fun, in_tree, True)


def flatten_fun_nokwargs(fun: WrappedFun, in_tree: PyTreeDef
                         ) -> tuple[WrappedFun, Callable[[], Any]]:
    """As ``flatten_fun``, ``in_tree`` the structure of the positional arguments alone
    (a tuple; flax's ``nn.scan``)."""
    return _flatten(fun, in_tree, False)


def _flatten(fun: WrappedFun, in_tree: PyTreeDef, with_kwargs: bool
             ) -> tuple[WrappedFun, Callable[[], Any]]:
    store: dict[str, PyTreeDef] = {}

    def flat(*leaves: Any) -> list:
        args, kwargs = (tree_unflatten(in_tree, leaves) if with_kwargs
                        else (tree_unflatten(in_tree, leaves), {}))
        out_leaves, store["tree"] = tree_flatten(fun.call_wrapped(*args, **kwargs))
        return out_leaves

    def out_tree() -> PyTreeDef:
        if "tree" not in store:
            raise RuntimeError("flatten_fun: the output structure is known once the function "
                               "has been called")
        return store["tree"]

    return WrappedFun(flat, debug_info=fun.debug_info), out_tree
