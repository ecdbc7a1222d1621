"""``tangentia.ad_checkpoint`` (``jax.ad_checkpoint``): names for values inside
``checkpoint``, the policies that choose what reverse mode saves, and a
report of the residuals a function's derivative keeps.

A policy is ``policy(prim, *in_avals, **params) -> bool``: True lets the
outputs of that equation (inside a ``checkpoint``-ed function, when its
derivative is taken) be saved for the backward pass instead of recomputed.
``checkpoint_policies`` holds JAX's policies; the offloading ones move
residuals to host memory on accelerators, and on a CPU, where all memory is
host memory, save them (as JAX does there).
"""
from __future__ import annotations

import inspect
import os
import re
import sys
import types

import numpy as np

from . import core
from .api import checkpoint, remat
from .primitives.remat import checkpoint_name, name_p

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "print_saved_residuals", "remat",
           "saved_residuals"]

_DOTS = ("dot_general", "einsum")


def everything_saveable(prim: Any, *avals: Any, **params: Any) -> bool:
    """Save every intermediate (no recomputation)."""
    return True


def nothing_saveable(prim: Any, *avals: Any, **params: Any) -> bool:
    """Save nothing but the inputs (``checkpoint``'s default)."""
    return False


def dots_saveable(prim: Any, *avals: Any, **params: Any) -> Any:
    """Save the results of matrix products (``dot_general``/``einsum``)."""
    return prim.name in _DOTS


checkpoint_dots = dots_saveable


def dots_with_no_batch_dims_saveable(prim: Any, *avals: Any, **params: Any) -> Any:
    """Save the results of matrix products without batch dimensions."""
    if prim.name == "dot_general":
        (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
        return not lhs_batch and not rhs_batch
    return False


checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable


def save_only_these_names(*names: Any) -> Any:
    """Save only the values named (``checkpoint_name``) with one of ``names``."""
    names = frozenset(_flat_names(names))

    def policy(prim, *avals, **params):
        return prim is name_p and params["name"] in names
    return policy


def save_any_names_but_these(*names: Any) -> Any:
    """Save every named value except those named with one of ``names``."""
    names = frozenset(_flat_names(names))

    def policy(prim, *avals, **params):
        return prim is name_p and params["name"] not in names
    return policy


def save_from_both_policies(policy_1: Any, policy_2: Any) -> Any:
    """Save what either policy saves."""
    def policy(prim, *avals, **params):
        return bool(policy_1(prim, *avals, **params) or policy_2(prim, *avals, **params))
    return policy


def offload_dot_with_no_batch_dims(offload_src: Any, offload_dst: Any) -> Any:
    """Offload the results of matrix products without batch dimensions from
    memory ``offload_src`` to ``offload_dst`` (``"device"``, ``"pinned_host"``):
    on a CPU all memory is host memory, so they are saved, as
    ``dots_with_no_batch_dims_saveable`` saves them."""
    return dots_with_no_batch_dims_saveable


def save_and_offload_only_these_names(*, names_which_can_be_saved: Any,
                                      names_which_can_be_offloaded: Any, offload_src: Any,
                                      offload_dst: Any) -> Any:
    """Save the values named with one of ``names_which_can_be_saved`` and
    offload those named with one of ``names_which_can_be_offloaded`` (from
    memory ``offload_src`` to ``offload_dst``); recompute the rest.  On a CPU
    all memory is host memory: offloaded values are saved too."""
    return save_only_these_names(*_flat_names(names_which_can_be_saved),
                                 *_flat_names(names_which_can_be_offloaded))


def _flat_names(names):
    out = []
    for n in names:
        out.extend(n if isinstance(n, (list, tuple, set, frozenset)) else [n])
    return [str(n) for n in out]


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=checkpoint_dots,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=checkpoint_dots_with_no_batch_dims,
    save_only_these_names=save_only_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_from_both_policies=save_from_both_policies,
    offload_dot_with_no_batch_dims=offload_dot_with_no_batch_dims,
    save_and_offload_only_these_names=save_and_offload_only_these_names,
    save_anything_except_these_names=save_any_names_but_these,
)


# ---------------------------------------------------------------------------
# Saved residuals


def saved_residuals(f: Any, *args: Any, **kwargs: Any) -> Any:
    """The values reverse mode keeps between the forward and backward passes of
    ``f`` at ``args``: a list of ``(ShapedArray, description)``, as
    ``jax.ad_checkpoint.saved_residuals`` gives it: the arguments first (named
    as in ``f``'s signature, with their path inside a pytree: ``params[0]``),
    then the values computed inside, in the order they are computed, each
    described by the primitive that computes it (``named 'a'`` for
    ``checkpoint_name``, the function's name for ``jit``).  ``checkpoint`` and
    its policies change this list."""
    from .api import make_jaxpr, vjp  # noqa: PLC0415  (the api layer sits below)
    from .tree_util import tree_flatten, tree_unflatten  # noqa: PLC0415
    leaves, tree = tree_flatten((args, kwargs))

    def flat_f(*xs):
        a, kw = tree_unflatten(tree, list(xs))
        return f(*a, **kw)

    with _SourceLines() as sources:
        closed, (_, pullback) = make_jaxpr(lambda *xs: vjp(flat_f, *xs),
                                           return_shape=True)(*leaves)
    jaxpr = closed.jaxpr
    num_res = len(tree_flatten(pullback)[0])
    res = jaxpr.outvars[len(jaxpr.outvars) - num_res:]
    names = _arg_names(f, args, kwargs)
    origins = {}      # var -> (order key, description)
    for j, v in enumerate(jaxpr.constvars):
        origins[v] = ((0, j), "from a constant")
    for i, v in enumerate(jaxpr.invars):
        origins[v] = ((1, i), f"from the argument {names[i]}")
    _describe_outputs(jaxpr, origins, (2,), sources.lines)
    found = {}
    for v in res:
        if type(v) is not core.Var:
            found[("literal", id(v))] = ((-1,), v.aval, "from a literal")
        else:
            key, what = origins[v]
            found.setdefault(key, (key, v.aval, what))
    return [(aval, what) for _, aval, what in sorted(found.values(), key=lambda t: t[0])]


def _describe_outputs(jaxpr, origins, prefix, lines):
    """Describe every variable ``jaxpr``'s equations compute (``origins[var] =
    (order key, description)``), with the source line that computed it
    (``lines``, see ``_SourceLines``).  A checkpoint's equations are described
    from inside (JAX inlines their known part); an output of a call that is one
    of its inputs is that input."""
    for k, e in enumerate(jaxpr.eqns):
        key = prefix + (k,)
        inner = e.params.get("jaxpr")
        call = e.prim.name in ("jit", "checkpoint") and isinstance(inner, core.Jaxpr)
        sub = {}
        if call and e.prim.name == "checkpoint":
            sub.update((v, origins.get(x, ((3,), "from a constant")))
                       for v, x in zip(inner.invars, e.inputs))
            _describe_outputs(inner, sub, key, lines)
        where = f" from {lines.get(e.outputs[0], '')}" if e.outputs else ""
        for j, x in enumerate(e.outputs):
            o = inner.outvars[j] if call else None
            if o in sub:
                origins[x] = sub[o]
            elif call and o in inner.invars:      # forwarded: the call's input itself
                origins[x] = origins.get(e.inputs[inner.invars.index(o)],
                                         ((3,), "from a constant"))
            elif e.prim is name_p:
                origins[x] = (key + (j,), f"named '{e.params['name']}'{where}")
            elif e.prim.name == "jit":
                origins[x] = (key + (j,), "output of jitted function "
                              f"'{_base_name(e.params.get('name', ''))}'{where}")
            else:
                origins[x] = (key + (j,), f"output of {e.prim.name}{where}")


class _SourceLines:
    """While active (``with _SourceLines() as s``), ``s.lines`` maps each IR
    variable a staging trace creates to the user's source line that computed
    it, ``file:line:column (function)`` as JAX summarizes source information:
    the innermost frame outside tangentia (and NumPy) below the frame that
    entered; a variable staged while a program is evaluated (``eval_jaxpr``,
    when a transformation re-traces it) takes the line of the equation being
    evaluated.  A profile hook watches staging returns, so nothing is recorded
    (or paid) by tracing outside this block."""

    _SKIP = (os.path.dirname(os.path.abspath(__file__)) + os.sep,
             os.path.dirname(os.path.abspath(np.__file__)) + os.sep)

    def __enter__(self):
        from .interpreters.partial_eval import JaxprTrace  # noqa: PLC0415
        self.lines = {}
        self._stage, self._eval = JaxprTrace.stage.__code__, core.eval_jaxpr.__code__
        self._entry = sys._getframe(1)
        self._old = sys.getprofile()
        sys.setprofile(self._hook)
        return self

    def __exit__(self, *exc):
        sys.setprofile(self._old)

    def _hook(self, frame, event, arg):
        if event != "return" or frame.f_code is not self._stage or arg is None:
            return
        line = self._line(frame.f_back)
        for t in arg if isinstance(arg, (list, tuple)) else (arg,):
            v = getattr(t, "ir_var", None)
            if v is not None:
                self.lines[v] = line

    def _line(self, frame):
        while frame is not None and frame is not self._entry:
            code = frame.f_code
            if code is self._eval:
                eqn = frame.f_locals.get("eqn")
                if eqn is not None and eqn.outputs and eqn.outputs[0] in self.lines:
                    return self.lines[eqn.outputs[0]]
            elif not os.path.abspath(code.co_filename).startswith(self._SKIP):
                positions = list(code.co_positions())[frame.f_lasti // 2]
                return f"{code.co_filename}:{positions[0]}:{positions[2]} ({code.co_qualname})"
            frame = frame.f_back
        return ""


def _base_name(name):
    """A staged function's name without the transformations wrapped around it
    (``jvp(f)`` is ``f``)."""
    m = re.fullmatch(r"(?:jvp|vmap|transpose|linearize|vjp)\((.*)\)", name)
    return _base_name(m.group(1)) if m else name


def _arg_names(f, args, kwargs):
    """The names of the leaves of ``(args, kwargs)`` as JAX's debugging
    information gives them: the parameter of ``f`` each is bound to followed by
    its path in that argument (``params[0]``, ``p.x``, ``kw['z']``); ``args[i]``
    when ``f``'s signature is unknown or does not bind them."""
    from .tree_util import keystr, tree_flatten_with_path  # noqa: PLC0415
    ordered = None
    try:
        sig = inspect.signature(f)
        bound = sig.bind(*args, **kwargs)
    except (TypeError, ValueError):
        pass
    else:
        var_kw = next((n for n, p in sig.parameters.items() if p.kind is p.VAR_KEYWORD), None)
        ordered = [(n, x) for n, x in bound.arguments.items() if n not in kwargs and n != var_kw]
        ordered += [(n if n in bound.arguments else f"{var_kw}['{n}']", x)
                    for n, x in sorted(kwargs.items())]
    if ordered is None:
        ordered = [("args", args)] + sorted((f"kwargs['{n}']", x) for n, x in kwargs.items())
    return [f"{n}{keystr(path)}" for n, x in ordered
            for path, _ in tree_flatten_with_path(x)[0]]


def print_saved_residuals(f: Any, *args: Any, **kwargs: Any) -> Any:
    """Print ``saved_residuals(f, *args)``, one line per residual."""
    for aval, what in saved_residuals(f, *args, **kwargs):
        print(f"{aval.str_short()} {what}")
