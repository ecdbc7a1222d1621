"""``tangentia.ad_checkpoint`` (``jax.ad_checkpoint``): names for values inside
``checkpoint``, the policies that choose what reverse mode saves, and a
report of the residuals a function's derivative keeps.

A policy is ``policy(prim, *in_avals, **params) -> bool``: True lets the
outputs of that equation (inside a ``checkpoint``-ed function, when its
derivative is taken) be saved for the backward pass instead of recomputed.
``checkpoint_policies`` holds JAX's policies; the offloading ones move
residuals to host memory on accelerators and are not supported on a CPU.
"""
from __future__ import annotations

import types

from . import core
from .primitives.remat import checkpoint_name, name_p

__all__ = ["checkpoint_name", "checkpoint_policies", "print_saved_residuals", "saved_residuals"]

_DOTS = ("dot_general", "einsum")


def everything_saveable(prim, *avals, **params):
    """Save every intermediate (no recomputation)."""
    return True


def nothing_saveable(prim, *avals, **params):
    """Save nothing but the inputs (``checkpoint``'s default)."""
    return False


def dots_saveable(prim, *avals, **params):
    """Save the results of matrix products (``dot_general``/``einsum``)."""
    return prim.name in _DOTS


checkpoint_dots = dots_saveable


def dots_with_no_batch_dims_saveable(prim, *avals, **params):
    """Save the results of matrix products without batch dimensions."""
    if prim.name == "dot_general":
        (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
        return not lhs_batch and not rhs_batch
    return False


checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable


def save_only_these_names(*names):
    """Save only the values named (``checkpoint_name``) with one of ``names``."""
    names = frozenset(_flat_names(names))

    def policy(prim, *avals, **params):
        return prim is name_p and params["name"] in names
    return policy


def save_any_names_but_these(*names):
    """Save every named value except those named with one of ``names``."""
    names = frozenset(_flat_names(names))

    def policy(prim, *avals, **params):
        return prim is name_p and params["name"] not in names
    return policy


def save_from_both_policies(policy_1, policy_2):
    """Save what either policy saves."""
    def policy(prim, *avals, **params):
        return bool(policy_1(prim, *avals, **params) or policy_2(prim, *avals, **params))
    return policy


def _offload(name):
    def make(*args, **kwargs):
        raise NotImplementedError(
            f"checkpoint_policies.{name}: offloading residuals to host memory is not supported "
            "on CPU (tangentia runs on one CPU device, where all memory is host memory); use "
            "save_only_these_names or dots_saveable instead")
    make.__name__ = name
    return make


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
    offload_dot_with_no_batch_dims=_offload("offload_dot_with_no_batch_dims"),
    save_and_offload_only_these_names=_offload("save_and_offload_only_these_names"),
    save_anything_except_these_names=save_any_names_but_these,
)


# ---------------------------------------------------------------------------
# Saved residuals


def saved_residuals(f, *args, **kwargs):
    """The values reverse mode keeps between the forward and backward passes of
    ``f`` at ``args``: a list of ``(ShapedArray, description)``; the
    description says which argument it is, or which primitive computed it (as
    ``jax.ad_checkpoint.saved_residuals``).  ``checkpoint`` and its policies
    change this list."""
    from .api import jvp, make_jaxpr  # noqa: PLC0415  (the api layer sits below)
    from .interpreters import partial_eval as pe  # noqa: PLC0415
    from .tree_util import tree_flatten, tree_unflatten  # noqa: PLC0415
    leaves, tree = tree_flatten((args, kwargs))
    n = len(leaves)

    def flat_jvp(*xs):
        def g(*p):
            a, kw = tree_unflatten(tree, list(p))
            return f(*a, **kw)
        return jvp(g, tuple(xs[:n]), tuple(xs[n:]))

    closed = make_jaxpr(flat_jvp)(*leaves, *leaves)
    program = pe.convert_constvars_to_invars(closed.jaxpr)
    nc = len(closed.consts)
    split = pe.partial_eval_jaxpr(program, [False] * (nc + n) + [True] * n)
    known = split.known
    n_known_outs = len(known.outvars) - split.num_res
    producer = {o: e for e in known.eqns for o in e.outputs}
    n_kconsts = len(split.known_consts)
    out = []
    for i, fwd in enumerate(split.res_forward):
        var = known.outvars[n_known_outs + i]
        if fwd is not None and fwd >= n_kconsts + nc:
            out.append((var.aval, f"from the argument {fwd - n_kconsts - nc}"))
        elif fwd is not None:
            out.append((var.aval, "a constant"))
        elif var in producer:
            out.append((var.aval, f"output of {_origin(producer[var], var)}"))
        else:
            out.append((var.aval, f"from the argument {known.invars.index(var) - n_kconsts - nc}"
                        if var in known.invars else "a constant"))
    return out


def _origin(eqn, var):
    """The primitive that computed ``var``, looking inside calls (checkpoint, jit)."""
    inner = eqn.params.get("jaxpr")
    if isinstance(inner, core.Jaxpr) and eqn.prim.multiple_results:
        v = inner.outvars[eqn.outputs.index(var)]
        for e in inner.eqns:
            if v in e.outputs:
                return f"{_origin(e, v)} (in {eqn.prim.name})"
    return eqn.prim.name


def print_saved_residuals(f, *args, **kwargs):
    """Print ``saved_residuals(f, *args)``, one line per residual."""
    for aval, what in saved_residuals(f, *args, **kwargs):
        print(f"{aval.str_short()} {what}")
