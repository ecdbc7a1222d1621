"""The checks of the user rules' outputs and of their calls, with their
error messages (JAX's wording first, then which rule of which function, and
what was expected): a JVP rule's tangents and primal structure, a fwd rule's
pair, a bwd rule's cotangents, a rule called with arguments its signature
does not take."""
from __future__ import annotations

import inspect

import numpy as np

from .. import core, dtypes
from ..core import Tracer, Zero
from ..interpreters import ad
from ..interpreters import partial_eval as pe
from .._messages import fun_name as _fun_name, jax_type as _jax_type
from ..tree_util import tree_structure, tree_unflatten
from ._base import _LEAF_TREE, SymbolicZero, _JaxprTracer, _ndarray


def _tangent_type_error(pa, ta, jvp_name, name, i):
    return TypeError(
        "Custom JVP rule must produce primal and tangent outputs with corresponding shapes and "
        f"dtypes. Expected {_jax_type(ad.tangent_aval(pa))} (tangent type of {_jax_type(pa)}) but "
        f"got {_jax_type(ta)}. (Custom JVP rule {jvp_name} for function {name}, tangent output "
        f"{i}.)")


def _check_tangent(p, t, i, jvp_name, name):
    """Check/normalize tangent output ``i`` of a JVP rule against its primal ``p``."""
    if isinstance(t, Tracer):  # the common case: a traced tangent of the primal's type
        ta = t.ir_var.aval if type(t) is _JaxprTracer else t.aval  # (no property call)
        # (An array's own shape and dtype are those of its aval.)
        pa = p if isinstance(p, _ndarray) else core.get_aval(p)
        if ta.shape == pa.shape and ta.dtype == pa.dtype and dtypes.is_inexact(pa.dtype):
            return t
    pa = core.get_aval(p)
    if t is None or not dtypes.is_inexact(pa.dtype):
        return Zero(ad.tangent_aval(pa))
    if type(t) is SymbolicZero:
        if t.aval.shape != pa.shape:
            raise _tangent_type_error(pa, t.aval, jvp_name, name, i)
        return Zero(ad.tangent_aval(pa))
    ta = core.get_aval(t)
    if ta.shape != pa.shape:
        raise _tangent_type_error(pa, ta, jvp_name, name, i)
    if ta.dtype != pa.dtype:
        if not dtypes.is_inexact(ta.dtype) or not np.can_cast(pa.dtype, ta.dtype, "safe"):
            # A narrower tangent (float32 for a float64 primal) would lose precision
            # silently: an error, with JAX's wording.
            raise _tangent_type_error(pa, ta, jvp_name, name, i)
        if isinstance(t, Tracer):
            from ..primitives.structural import convert_element_type
            return convert_element_type(t, pa.dtype)
        return np.asarray(t, dtype=pa.dtype)
    if type(t) is not np.ndarray and not isinstance(t, Tracer):
        return np.asarray(t, dtype=pa.dtype)
    return t


def _check_out_tree(call, tree, jvp_name, name, leaves, xs, n_primals):
    """The primal output of a JVP rule (``leaves`` with structure ``tree``) has the
    function's output structure; the message shows both with their leaves' types,
    as JAX's (the function's are traced from ``xs[:n_primals]``, the call's inputs)."""
    want = call.out_tree
    if want is not None and want != tree:
        got_s = _typed_tree(tree, [core.get_aval(x) for x in leaves])
        program = _fun_program(call, xs[:n_primals], name)
        want_s = _typed_tree(want, [v.aval for v in program.outvars])
        raise TypeError(
            f"Custom JVP rule {jvp_name} for function {name} must produce a pair (list or tuple "
            "of length two) where the first element represents the primal output (equal in value "
            f"to the output of the custom_jvp-decorated function {name}, and in particular of "
            "the same container/pytree structure), but instead the JVP rule output's first "
            f"element had container/pytree structure:\n    {got_s}\nwhile the "
            f"custom_jvp-decorated function {name} had output container/pytree structure:\n"
            f"    {want_s}. (expected {want}, got {tree})")
    call.out_tree = tree


def _fun_program(call, primals, name):
    """The call's function traced on the types of its flat inputs ``primals``
    (for error messages only)."""
    out_tree = call.out_tree
    try:
        return pe.trace_to_jaxpr(call.fun, [core.get_aval(x) for x in primals], name=name,
                                 label="custom_jvp")[0]
    finally:
        call.out_tree = out_tree


def _check_primal_types(call, leaves, primals, jvp_name, name):
    """Raise JAX's error if the JVP rule's primal outputs ``leaves`` do not have
    the types of the function's outputs."""
    pe.check_primal_outs(f"Custom JVP rule {jvp_name}", name, _fun_program(call, primals, name),
                         leaves)


class _TypeName(str):
    """A leaf printed as its type, ``float32[3]``, in a structure's repr."""

    __slots__ = ()

    def __repr__(self):
        return str(self)


def _typed_tree(tree, avals):
    return tree_unflatten(tree, [_TypeName(_jax_type(a)) for a in avals])


def _fwd_pair_message(fwd_name, name):
    return (f"Custom VJP fwd rule {fwd_name} for function {name} must produce a pair (list or "
            "tuple of length two) where the first element represents the primal output (equal to "
            f"the output of the custom_vjp-decorated function {name}) and the second element "
            "represents residuals (i.e. values stored from the forward pass for use on the "
            "backward pass), ")


def _reraise_rule_error(e, rule, args, what, name, expected, n_nondiff):
    """Re-raise the TypeError ``e`` of ``rule(*args)``: a call that does not fit
    the rule's signature, or a rule written with the nondiff arguments last,
    gets an error saying so; any other error passes through."""
    err = _rule_call_error(rule, args, what, name, expected, n_nondiff)
    if err is None:
        raise e
    raise err from e


def _rule_call_error(rule, args, what, name, expected, n_nondiff):
    try:
        sig = inspect.signature(rule)
    except (TypeError, ValueError):
        return None
    rule_name = _fun_name(rule)
    received = ", ".join(_describe_arg(a) for a in args)
    try:
        sig.bind(*args)
    except TypeError as bind_err:
        return TypeError(
            f"{what} {rule_name}{sig} for function {name} does not accept the arguments it is "
            f"called with: it is called as {expected}, here with {len(args)} positional "
            f"arguments ({received}); {bind_err}.")
    params = list(sig.parameters)
    if n_nondiff and params and params[0].startswith("primal"):
        return TypeError(
            f"{what} {rule_name}{sig} for function {name} takes the primals first, but with "
            f"nondiff_argnums the nondiff arguments come first: it is called as {expected}, here "
            f"with ({received}). Write it as {rule_name}(*nondiff_args, primals, tangents), as "
            "in JAX.")
    return None


def _describe_arg(x):
    if core.is_array_like(x):
        return core.get_aval(x).str_short()
    if isinstance(x, tuple):
        return "(" + ", ".join(_describe_arg(a) for a in x) + ("," if len(x) == 1 else "") + ")"
    return getattr(x, "__name__", type(x).__name__)


def _bwd_structure_error(bwd_name, name, got, ca, avals, detail):
    in_tree = (ca.in_tree if ca is not None and ca.in_tree is not None
               else tree_structure(tuple(avals)))
    return TypeError(
        "Custom VJP bwd rule must produce an output with the same "
        "container (pytree) structure as the args tuple of the primal function, and in "
        "particular must produce a tuple of length equal to the number of arguments to the "
        f"primal function, but got bwd output structure {_structure_of(got)} for primal input "
        f"structure {in_tree}. (bwd rule {bwd_name} of function {name}: {detail})")


def _structure_of(x):
    return tree_structure(x, is_leaf=lambda v: v is None or type(v) is SymbolicZero)


def _prefix_cotangents(g, t):
    """The cotangents of an argument of structure ``t`` read from ``g`` as JAX's
    ``_flatten_bwd`` does when ``g``'s structure is a prefix of ``t``'s: a leaf of ``g``
    stands for the subtree of ``t`` there, which must have one leaf (an array for a one-leaf
    container: flax nnx's bwd rules return raw cotangents for its ``Param`` nodes), a None
    for zeros of the whole subtree.  None if ``g`` does not read so."""
    try:
        g_tree = _structure_of(g)
        subtrees = g_tree.flatten_up_to(tree_unflatten(t, list(range(t.num_leaves))))
        g_leaves = g_tree.flatten_up_to(g)
    except Exception:  # noqa: BLE001 - not a prefix either
        return None
    out = [None] * t.num_leaves
    for x, sub in zip(g_leaves, subtrees):
        idx = tree_structure(sub).flatten_up_to(sub) if not isinstance(sub, int) else [sub]
        if x is None:
            continue                 # (zeros)
        if len(idx) != 1 or not (core.is_array_like(x) or type(x) is SymbolicZero):
            return None
        out[idx[0]] = x
    return out


def _flatten_bwd_output(got, ca, in_types, bwd_name, name, sz):
    """The flat cotangents of a bwd rule's output (``Zero`` for zero ones),
    checked against the differentiable inputs' types (arrays or avals)."""
    avals_in = [x if type(x) is core.ShapedArray else core.get_aval(x) for x in in_types]
    in_tree = None if ca is None else ca.in_tree
    n_args = len(avals_in) if ca is None else ca.n - len(ca.nd)
    if not isinstance(got, (tuple, list)):
        raise _bwd_structure_error(bwd_name, name, got, ca, avals_in, f"a tuple with one "
                                   f"cotangent per differentiable argument ({n_args}) is "
                                   f"expected, got a {type(got).__name__}")
    if len(got) != n_args:
        raise _bwd_structure_error(bwd_name, name, got, ca, avals_in, f"a tuple of length equal "
                                   f"to the number of differentiable arguments ({n_args}) is "
                                   f"expected, got a tuple of length {len(got)}")
    arg_trees = [_LEAF_TREE] * n_args if in_tree is None else in_tree.children()
    out = []
    it_avals = iter(avals_in)
    for k, (g, t) in enumerate(zip(got, arg_trees)):
        avals = [next(it_avals) for _ in range(t.num_leaves)]
        if g is None:
            out.extend(_zero_ct(a) for a in avals)
            continue
        try:
            g_leaves = t.flatten_up_to(g)
        except Exception:  # noqa: BLE001 - reported with both structures
            g_leaves = _prefix_cotangents(g, t)
            if g_leaves is None:
                raise _bwd_structure_error(
                    bwd_name, name, got, ca, avals_in, f"the cotangent for argument {k} has "
                    f"structure {_structure_of(g)}, but the argument has structure {t}") from None
        for j, (c, a) in enumerate(zip(g_leaves, avals)):
            where = f"output[{k}]" + (f" (leaf {j})" if t is not _LEAF_TREE else "")
            want = ad.tangent_aval(a)
            if c is None:
                out.append(_zero_ct(a))
                continue
            if type(c) is SymbolicZero:
                if c.aval.shape != a.shape or (want.dtype != dtypes.float0
                                               and c.aval.dtype != want.dtype):
                    raise ValueError(
                        "Custom VJP bwd rule produced a "
                        "SymbolicZero with a shape/dtype that does not match the corresponding "
                        f"input tangent shape/dtype: at {where} the SymbolicZero had shape/dtype "
                        f"{c.aval.str_short()} while the corresponding input had shape/dtype "
                        f"{a.str_short()}. Consider just returning a None here instead of a "
                        f"SymbolicZero object. (bwd rule {bwd_name} of function {name})")
                out.append(_zero_ct(a))
                continue
            if not core.is_array_like(c):
                raise _bwd_structure_error(
                    bwd_name, name, got, ca, avals_in, f"the cotangent for argument {k} has structure "
                    f"{_structure_of(g)}, but the argument has structure {t}: leaf {j} is a "
                    f"{type(c).__name__}, not an array")
            ca_ = core.get_aval(c)
            if want.dtype == dtypes.float0:
                out.append(_zero_ct(a))
                continue
            if ca_.shape != a.shape:
                hint = (" Consider just returning a None here instead of a zero array." if sz
                        and isinstance(c, np.ndarray) and not c.any() else "")
                raise ValueError(
                    "Custom VJP bwd rule must produce an output "
                    "with the same type as the args tuple of the primal function, but at "
                    f"{where} the bwd rule produced an output of type {_jax_type(ca_)} "
                    f"corresponding to an input of type {_jax_type(a)}, so the shapes do not "
                    f"match (bwd rule {bwd_name} of function {name}, argument {k}: cotangent "
                    f"of shape {ca_.shape}, argument of shape {a.shape}).{hint}")
            if not isinstance(c, Tracer):
                c = np.asarray(c, dtype=want.dtype)
            elif ca_.dtype != want.dtype:
                from ..primitives.structural import convert_element_type
                c = convert_element_type(c, want.dtype)
            out.append(c)
    return out


def _zero_ct(aval):
    return Zero(ad.tangent_aval(aval))
