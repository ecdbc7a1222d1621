"""Differentiation: jvp, linearize, vjp, grad, value_and_grad, jacfwd, jacrev,
hessian and linear_transpose."""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from .. import core, dtypes
from ..core import ShapedArray, Tracer
from ..interpreters import ad, batching
from .._messages import fun_name as _fun_name, jax_type as _jax_type
from .._array import BackwardPass
from .._traceback_util import api_boundary
from ..tree_util import Partial, tree_flatten, tree_map, tree_unflatten
from ._util import (_arg_leaf_names, _arrays, _check_callable, _describe, _leaf_aval,
                    _normalize_argnums)
from .staging import _abstractify_duck, _stage, jit
from .vectorization import vmap

if TYPE_CHECKING:
    from ..typing import AxisName

# ---------------------------------------------------------------------------
# Forward mode


@api_boundary
def jvp(fun: Callable, primals: Any, tangents: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """Jacobian-vector product: ``(fun(*primals), J(primals) @ tangents)``.

    Forward mode: one evaluation of ``fun`` carries the tangents along with the
    values.  Custom JVP rules (``custom_jvp``) are used where ``fun`` calls them.

    Args:
      fun: the function to differentiate; its arguments and outputs are
        arrays, scalars or pytrees of them.
      primals: a tuple or list of ``fun``'s positional arguments.
      tangents: a tuple or list with one tangent per primal, of the same
        pytree structure, shapes and dtypes (integer inputs take ``float0``
        tangents or zeros).
      has_aux: ``fun`` returns ``(output, aux)``; ``aux`` is returned as is,
        not differentiated.

    Returns:
      ``(primals_out, tangents_out)``, each of the structure of ``fun``'s
      output; ``(primals_out, tangents_out, aux)`` if ``has_aux``.

    Raises:
      TypeError: ``primals`` and ``tangents`` are not tuples or lists of the
        same structure, or a tangent's dtype does not match its primal's.
      ValueError: a tangent's shape does not match its primal's.

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> y, dy = tg.jvp(tnp.sin, (0.0,), (2.0,))
      >>> print(y, dy)
      0.0 2.0
      >>> tg.jvp(lambda x, w: tnp.sum(x * w), (tnp.ones(3), tnp.arange(3.0)),
      ...        (tnp.ones(3), tnp.zeros(3)))
      (Array(3.), Array(3.))
    """
    _check_callable(fun, "jvp")
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("primal and tangent arguments to jax.jvp must be tuples or lists; found "
                        f"{type(primals).__name__} and {type(tangents).__name__}. (jvp: primals "
                        "and tangents must be tuples or lists)")
    p_leaves, p_tree = tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_flatten(tuple(tangents))
    if p_tree != t_tree or type(primals) is not type(tangents):
        detail = (f"got {len(primals)} primals but {len(tangents)} tangents"
                  if len(primals) != len(tangents) else
                  f"primals are a {type(primals).__name__} {p_tree}, tangents a "
                  f"{type(tangents).__name__} {t_tree}")
        raise TypeError("primal and tangent arguments to jax.jvp must have the same tree "
                        f"structure (jvp: {detail})")
    tans = []
    for i, (p, t) in enumerate(zip(p_leaves, t_leaves)):
        pa = _leaf_aval(p, "jvp", f"primal {i}")
        ta = _leaf_aval(t, "jvp", f"tangent {i}")
        want = dtypes.tangent_dtype(pa.dtype)
        if pa.shape != ta.shape:
            raise ValueError(f"jvp called with different primal and tangent shapes; tangent {i} "
                             f"has shape {ta.shape} but its primal has shape {pa.shape}")
        if want == dtypes.float0 and ta.dtype == want:
            tans.append(ad.Zero(ShapedArray(pa.shape, dtypes.float0)))
            continue
        if ta.dtype != want and (not ta.weak_type or want == dtypes.float0
                                 or dtypes.kind(ta.dtype) != dtypes.kind(want)):
            raise TypeError("primal and tangent arguments to jax.jvp do not match; dtypes must "
                            "be equal, or in case of int/bool primal dtype the tangent dtype "
                            f"must be float0.Got primal dtype {pa.dtype} and so expected tangent "
                            f"dtype {want}, but got tangent dtype {ta.dtype} instead. (jvp: "
                            f"tangent {i} has dtype {ta.dtype} but its primal has dtype "
                            f"{pa.dtype}; the tangent dtype must be {want})")
        tans.append(t)
    store = {}

    def flat(*leaves):
        args = tree_unflatten(p_tree, leaves)
        out = _call_naming_inputs(fun, args, leaves)
        if has_aux:
            out, store["aux"] = _split_aux(out, fun)
        out_leaves, store["out_tree"] = tree_flatten(out)
        return out_leaves

    trace_holder = {}
    outs, out_tans = _jvp_with_aux(flat, p_leaves, tans, store, trace_holder)
    # Python floats reached the output as they are (the input itself, a custom_jvp rule's
    # output): they stay Python floats, as JAX's; everything else is an array
    out_tans = [t if type(t) in _PY_SCALARS else x
                for t, x in zip(out_tans, _arrays([ad.instantiate(t) for t in out_tans]))]
    outs = [o if type(o) in _PY_SCALARS else x for o, x in zip(outs, _arrays(outs))]
    out_tree = store["out_tree"]
    res = (tree_unflatten(out_tree, outs), tree_unflatten(out_tree, out_tans))
    if has_aux:
        return res + (store["aux"],)
    return res


_PY_SCALARS = (float, complex)


def _jvp_with_aux(flat, primals, tangents, store, holder):
    trace = ad.JVPTrace(core.current_trace())
    ins = [ad.maybe_jvp_tracer(trace, p, t) for p, t in zip(primals, tangents)]
    try:
        with core.set_trace(trace):
            outs = flat(*ins)
        pairs = [trace.unpack(o) for o in outs]
        if "aux" in store:
            store["aux"] = tree_map(lambda x: trace.unpack(x)[0] if isinstance(x, Tracer) else x,
                                    store["aux"])
    finally:
        trace.alive = False
    return [p for p, _ in pairs], [t for _, t in pairs]


@overload
def linearize(fun: Callable, *primals: Any, has_aux: Literal[False] = False
              ) -> tuple[Any, Callable]: ...


@overload
def linearize(fun: Callable, *primals: Any, has_aux: Literal[True]
              ) -> tuple[Any, Callable, Any]: ...


@overload
def linearize(fun: Callable, *primals: Any, has_aux: bool
              ) -> tuple[Any, Callable] | tuple[Any, Callable, Any]: ...


@api_boundary
def linearize(fun: Callable, *primals: Any, has_aux: bool = False
              ) -> tuple[Any, Callable] | tuple[Any, Callable, Any]:
    """Linearize ``fun`` at ``primals``: its value and its JVP as a function.

    ``fun`` is evaluated once; the linear map ``f_jvp(*tangents) =
    jvp(fun, primals, tangents)[1]`` is kept as a staged linear program, so
    calling it many times costs no further evaluation of ``fun``.

    Args:
      fun: the function to linearize (arrays or pytrees in and out).
      *primals: the point: ``fun``'s positional arguments.
      has_aux: ``fun`` returns ``(output, aux)``; ``aux`` is returned as is.

    Returns:
      ``(fun(*primals), f_jvp)`` (``(fun(*primals), f_jvp, aux)`` if
      ``has_aux``); ``f_jvp`` takes one tangent per primal.

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> y, f_jvp = tg.linearize(tnp.exp, 1.0)
      >>> print(round(float(y), 6), round(float(f_jvp(2.0)), 6))
      2.718282 5.436564
    """
    _check_callable(fun, "linearize")
    p_leaves, p_tree = tree_flatten(primals)
    p_avals = [_leaf_aval(p, "linearize", f"primal {i}") for i, p in enumerate(p_leaves)]
    store = {}
    outs, jaxpr, consts, _, aux = _linearize(fun, p_leaves, p_tree, store, has_aux)
    out_tree = store["out_tree"]
    in_avals = [v.aval for v in jaxpr.invars]

    @api_boundary
    def f_jvp(*tangents):
        t_leaves, t_tree = tree_flatten(tangents)
        if t_tree != p_tree:
            raise TypeError(f"expected {p_tree}, got {t_tree} (linearize: the linearized "
                            "function takes tangents with the structure of the primals)")
        for i, (t, a) in enumerate(zip(t_leaves, in_avals)):
            ta = core.get_aval(t)
            want = dtypes.tangent_dtype(p_avals[i].dtype)
            if ta.shape != a.shape or (ta.dtype != want and (
                    not ta.weak_type or want == dtypes.float0
                    or dtypes.kind(ta.dtype) != dtypes.kind(want))):
                raise ValueError("linearized function called on tangent values inconsistent with "
                                 f"the original primal values: Got tangent aval {_jax_type(ta)} "
                                 f"for primal aval {_jax_type(p_avals[i])} but expected "
                                 f"{_jax_type(ShapedArray(p_avals[i].shape, want))} (linearize: "
                                 f"tangent {i} has shape {ta.shape}, expected {a.shape}; dtype "
                                 f"{ta.dtype}, expected {want})")
        res = core.eval_jaxpr(jaxpr, consts, *t_leaves)
        return tree_unflatten(out_tree, _arrays(res))

    out = tree_unflatten(out_tree, _arrays(outs))
    return (out, f_jvp, aux) if has_aux else (out, f_jvp)


def _linearize(fun, p_leaves, p_tree, store, has_aux, differentiable=None):
    aux_holder = {}

    def flat(*leaves):
        args = tree_unflatten(p_tree, leaves)
        out = _call_naming_inputs(fun, args, leaves)
        if has_aux:
            out, aux_holder["aux"] = _split_aux(out, fun)
        out_leaves, store["out_tree"] = tree_flatten(out)
        store["out"] = out_leaves
        return out_leaves

    outs, jaxpr, consts, out_avals, aux = ad.linearize_flat(
        flat, p_leaves, differentiable, aux_holder if has_aux else None)
    return outs, jaxpr, consts, out_avals, aux


# ---------------------------------------------------------------------------
# Reverse mode


@overload
def vjp(fun: Callable, *primals: Any, has_aux: Literal[False] = False,
        reduce_axes: Sequence[AxisName] = ()
        ) -> tuple[Any, Callable]: ...


@overload
def vjp(fun: Callable, *primals: Any, has_aux: Literal[True],
        reduce_axes: Sequence[AxisName] = ()
        ) -> tuple[Any, Callable, Any]: ...


@overload
def vjp(fun: Callable, *primals: Any, has_aux: bool,
        reduce_axes: Sequence[AxisName] = ()
        ) -> tuple[Any, Callable] | tuple[Any, Callable, Any]: ...


@api_boundary
def vjp(fun: Callable, *primals: Any, has_aux: bool = False, reduce_axes: Sequence[AxisName] = ()
        ) -> tuple[Any, Callable] | tuple[Any, Callable, Any]:
    """Vector-Jacobian product: ``fun``'s value and its pullback.

    Reverse mode: ``vjp_fun(ct)`` returns ``ct @ J(primals)``, one cotangent
    per primal.  Custom VJP rules (``custom_vjp``) are used where ``fun``
    calls them.

    Args:
      fun: the function to differentiate (arrays or pytrees in and out).
      *primals: the point: ``fun``'s positional arguments.
      has_aux: ``fun`` returns ``(output, aux)``; ``aux`` is returned as is.
      reduce_axes: accepted for JAX compatibility (deprecated there); must be ``()``.

    Returns:
      ``(fun(*primals), vjp_fun)`` (``(..., vjp_fun, aux)`` if ``has_aux``).
      ``vjp_fun`` takes a cotangent of the structure, shapes and dtypes of
      the output and returns a tuple with one cotangent per primal; it is a
      pytree (``tree_util.Partial``), so it can be returned from ``jit``.

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> y, vjp_fun = tg.vjp(lambda x, y: x * y, 2.0, 3.0)
      >>> vjp_fun(1.0)
      (Array(3.), Array(2.))

    Built as linearize + partial evaluation + transposition.
    """
    _check_callable(fun, "vjp")
    _check_reduce_axes(reduce_axes, "vjp")
    p_leaves, p_tree = tree_flatten(primals)
    for i, p in enumerate(p_leaves):
        _leaf_aval(p, "vjp", f"primal {i}")
    store = {}
    outs, jaxpr, consts, out_avals, aux = _linearize(fun, p_leaves, p_tree, store, has_aux)
    out_tree = store["out_tree"]
    pullback = _make_pullback(jaxpr, consts, out_tree, out_avals, p_tree, "vjp",
                              _fun_name(fun))
    out = tree_unflatten(out_tree, _arrays(outs))
    return (out, pullback, aux) if has_aux else (out, pullback)


def fwd_and_bwd(fun: Callable, argnums: int | Sequence[int], has_aux: bool = False,
                jitted: bool = True) -> tuple[Callable, Callable]:
    """The forward and backward passes of ``fun`` as two functions (``jax.fwd_and_bwd``),
    to run on a schedule of one's own (pipelines, microbatches), each compiled once.

    Args:
      fun: the function to differentiate.
      argnums: the positional argument (an int) or arguments (a sequence) to
        differentiate with respect to.
      has_aux: ``fun`` returns ``(output, aux)``; ``fwd`` returns ``aux`` last.
      jitted: ``jit`` both functions (the default; the residuals, a pytree of
        arrays, pass from one compiled program to the other).

    Returns:
      ``(fwd, bwd)``: ``fwd(*args)`` is ``vjp`` of ``fun`` with respect to the
      arguments ``argnums`` and returns ``(fun(*args), residuals)`` (``(...,
      aux)`` with ``has_aux``); ``bwd(residuals, ct)`` returns the cotangent of
      the argument ``argnums``, or a tuple of them if ``argnums`` is a sequence.

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> fwd, bwd = tg.fwd_and_bwd(lambda w, x: tnp.tanh(w * x), argnums=0)
      >>> y, res = fwd(0.5, 2.0)
      >>> bool(tnp.allclose(bwd(res, 1.0), tg.grad(lambda w: tnp.tanh(w * 2.0))(0.5)))
      True
    """
    _check_callable(fun, "fwd_and_bwd")
    single = isinstance(argnums, int)

    def fwd(*args, **kwargs):
        _, nums = _normalize_argnums(argnums, len(args), "fwd_and_bwd", fun)

        def partial_fun(*dyn):
            new = list(args)
            for i, v in zip(nums, dyn):
                new[i] = v
            return fun(*new, **kwargs)

        return vjp(partial_fun, *[args[i] for i in nums], has_aux=has_aux)

    def bwd(f_vjp, outgrad):
        g = f_vjp(outgrad)
        return g[0] if single else g

    if jitted:
        return jit(fwd), jit(bwd)
    return fwd, bwd


def _make_pullback(jaxpr, consts, out_tree, out_avals, in_tree, api, name=None):
    """The pullback as a pytree (``tree_util.Partial``, as JAX's): its leaves are
    the residuals, so it can be returned from ``jit``, stored as a custom_vjp
    residual, or called inside a later transformation."""
    return Partial(functools.partial(_pullback, jaxpr, out_tree, tuple(out_avals), in_tree, api,
                                     name or api), tuple(consts))


_VJP_TOO_MANY_ARGS = """
The function returned by `jax.vjp` applied to {} was called with {} arguments,
but functions returned by `jax.vjp` must be called with a single argument
corresponding to the single value returned by the function being differentiated
(even if that returned value is a tuple or other container): pass one pytree of
cotangents, f_vjp((2.0, 2.0)) rather than f_vjp(2.0, 2.0)."""


@api_boundary
def _pullback(jaxpr, out_tree, out_avals, in_tree, api, name, consts, ct, *extra):
    if extra:
        raise TypeError(_VJP_TOO_MANY_ARGS.format(name, len(extra) + 1))
    ct_leaves, ct_tree = tree_flatten(ct)
    if ct_tree != out_tree:
        hint = ""
        kids = out_tree.children()
        if len(kids) == 2 and ct_tree == kids[0] and isinstance(
                out_tree.unflatten([0] * out_tree.num_leaves), tuple):
            hint = (". If the function returns (output, aux), pass has_aux=True to vjp: then "
                    "the pullback takes a cotangent of the output only, and aux is returned "
                    "apart")
        raise ValueError(f"unexpected tree structure. ({api}: the cotangent has structure "
                         f"{ct_tree} but the function's output has structure {out_tree}{hint})")
    for i, (c, a) in enumerate(zip(ct_leaves, out_avals)):
        ca = core.get_aval(c)
        want = dtypes.tangent_dtype(a.dtype)
        if ca.shape != a.shape or (ca.dtype != want and want != dtypes.float0 and (
                not ca.weak_type or dtypes.kind(ca.dtype) != dtypes.kind(want))):
            raise ValueError("unexpected JAX type (e.g. shape/dtype) for argument to VJP function: "
                             f"got {_jax_type(ca)}, but expected "
                             f"{_jax_type(ShapedArray(a.shape, want))} because the "
                             "corresponding output of the differentiated function had JAX type "
                             f"{_jax_type(a)} ({api}: cotangent {i} has "
                             f"shape {ca.shape} and dtype {ca.dtype}; the output has shape "
                             f"{a.shape} and dtype {a.dtype})")
    token = BackwardPass.enter()   # its own NaN / inf cotangents are silent, as JAX's
    try:
        res = ad.backward_pass(jaxpr, list(consts), ct_leaves)
    finally:
        BackwardPass.exit(token)
    res = [ad.zeros_like_aval(v.aval) if c is None or type(c) is ad.Zero else c
           for c, v in zip(res, jaxpr.invars)]
    return tree_unflatten(in_tree, _arrays(res))


def _call_naming_inputs(fun, args, leaves):
    """``fun(*args)``; a conversion error of a differentiated value says which input
    (of ``leaves``) it came from."""
    try:
        return fun(*args)
    except _CONVERSION_ERRORS as err:
        _name_the_input(err, leaves, _leaf_names_of(fun, args), fun)
        raise


def _name_the_input(err, leaves, names, fun):
    """Add to a conversion error raised by this differentiation (``err.trace`` is the
    trace of one of ``leaves``) which differentiated input the value comes from.
    ``names()`` gives a name per leaf; it runs only here, on the error path."""
    trace = getattr(err, "trace", None)
    if trace is None or getattr(err, "input_named", False) or not err.args:
        return
    diff = [i for i, x in enumerate(leaves) if type(x) is ad.JVPTracer and x._trace is trace]
    if not diff:
        return
    try:
        all_names = names()
    except Exception:   # a name is a nicety: never hide the error itself
        return
    named = [all_names[i] if i < len(all_names) else f"argument leaf {i}" for i in diff]
    where = (f"It comes from {named[0]}" if len(named) == 1 else
             f"It comes from (some of) {', '.join(named)}")
    err.args = (f"{err.args[0]} {where} of {_fun_name(fun)}, which is being differentiated.",
                ) + err.args[1:]
    err.input_named = True


def _leaf_names_of(fun, args):
    """``names()`` for ``_name_the_input``: the leaves of ``args`` as arguments of ``fun``
    (a function made by ``_diff_args`` knows its own)."""
    own = getattr(fun, "_diff_leaf_names", None)
    return own if own is not None else (lambda: _arg_leaf_names(fun, args))


_CONVERSION_ERRORS = (core.ConcretizationTypeError, core.TracerArrayConversionError)


def _check_reduce_axes(reduce_axes, what):
    """JAX removed ``reduce_axes`` (named-axis reductions of cotangents); it must be empty."""
    if reduce_axes:
        raise NotImplementedError(f"reduce_axes argument to {what} is deprecated (tangentia "
                                  f"accepts only reduce_axes=(), got {reduce_axes!r})")


def _split_aux(out, fun):
    """``(output, aux)`` of a function transformed with ``has_aux=True``."""
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError("expected function with aux output to return a two-element tuple, but "
                        f"got {type(out)} ({_fun_name(fun)} was transformed with has_aux=True: "
                        f"it must return a pair (output, aux), got {_describe(out)})")
    return out


def _check_input_dtype(api, aval, holomorphic, allow_int, detail):
    """JAX's dtype checks of a differentiated input (``_check_input_dtype_revderiv`` and
    ``_check_input_dtype_jacfwd``): JAX's wording, then ``detail`` naming the argument."""
    kind = dtypes.kind(aval.dtype)
    name = aval.dtype.name
    if dtypes.is_key(aval.dtype):   # typed PRNG keys: as integers here, as JAX's (extended)
        kind, name = "u", "key<fry>"
    msg = None
    if holomorphic and kind != "c":
        msg = (f"{api} with holomorphic=True requires inputs with complex dtype, "
               f"but got {name}.")
    elif api == "jacfwd" and kind != "f" and not holomorphic:
        msg = (f"jacfwd requires real-valued inputs (input dtype that is a sub-dtype of "
               f"np.floating), but got {name}. For holomorphic differentiation, pass "
               "holomorphic=True. For differentiation of non-holomorphic functions involving "
               "complex inputs or integer inputs, use jax.jvp directly.")
    elif kind in "iub" and not allow_int:
        msg = (f"{api} requires real- or complex-valued inputs (input dtype that is a "
               f"sub-dtype of np.inexact), but got {name}. If you want to use Boolean- or "
               "integer-valued inputs, use vjp or set allow_int to True.")
    elif kind not in "fciub":
        msg = (f"{api} requires numerical-valued inputs (input dtype that is a sub-dtype of "
               f"np.bool_ or np.number), but got {name}.")
    if msg is not None:
        raise TypeError(f"{msg} ({detail})")


def _check_output_dtype(api, aval, holomorphic, detail):
    """JAX's dtype checks of a differentiated output (``_check_output_dtype_revderiv``;
    jacfwd checks only the holomorphic case)."""
    kind = dtypes.kind(aval.dtype)
    name = aval.dtype.name
    msg = None
    if holomorphic:
        if kind != "c":
            msg = (f"{api} with holomorphic=True requires outputs with complex dtype, "
                   f"but got {name}.")
    elif api == "jacfwd":
        pass
    elif kind == "c":
        msg = (f"{api} requires real-valued outputs (output dtype that is a sub-dtype of "
               f"np.floating), but got {name}. For holomorphic differentiation, pass "
               "holomorphic=True. For differentiation of non-holomorphic functions involving "
               "complex outputs, use jax.vjp directly.")
    elif kind != "f":
        msg = (f"{api} requires real-valued outputs (output dtype that is a sub-dtype of "
               f"np.floating), but got {name}. For differentiation of functions with integer "
               "outputs, use jax.vjp directly.")
    if msg is not None:
        raise TypeError(f"{msg} ({detail})")


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False,
                   reduce_axes: Sequence[AxisName] = ()) -> Callable[..., tuple[Any, Any]]:
    """A function that evaluates ``fun`` and its gradient together.

    Args:
      fun: a function returning a real scalar (``(scalar, aux)`` with
        ``has_aux``).
      argnums: which positional argument(s) to differentiate with respect
        to: an int or a tuple of ints.
      has_aux: ``fun`` returns ``(value, aux)``; ``aux`` is not
        differentiated.
      holomorphic: ``fun`` is holomorphic in complex inputs (the gradient
        of a complex output is then taken as in JAX).
      allow_int: allow integer inputs (their gradient is ``float0``
        zeros) instead of raising.
      reduce_axes: accepted for JAX compatibility; must be empty (else
        NotImplementedError, as JAX).

    Returns:
      A function with ``fun``'s arguments returning ``(value, gradient)``
      (``((value, aux), gradient)`` with ``has_aux``); the gradient has the
      structure of the argument(s) ``argnums`` selects (a tuple for a tuple
      ``argnums``).

    Raises:
      TypeError: ``fun``'s output is not a real scalar, a differentiated
        input is an integer (without ``allow_int``), or ``argnums`` names a
        positional argument the call did not pass.

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> value, g = tg.value_and_grad(lambda x: tnp.sum(x ** 2))(tnp.arange(3.0))
      >>> print(value, g)
      5.0 [0. 2. 4.]
    """
    _check_callable(fun, "value_and_grad")
    _check_reduce_axes(reduce_axes, "grad")

    @api_boundary
    @functools.wraps(fun, updated=())
    def value_and_grad_f(*args, **kwargs):
        return _value_and_grad(fun, argnums, has_aux, allow_int, "grad", args, kwargs,
                               holomorphic)

    return value_and_grad_f


def _value_and_grad(fun, argnums, has_aux, allow_int, api, args, kwargs, holomorphic=False):
    single, nums = _normalize_argnums(argnums, len(args), api, fun)
    diff = tuple(args[i] for i in nums)
    d_leaves, d_tree = tree_flatten(diff)
    names = None
    for i, x in enumerate(d_leaves):
        a = _leaf_aval(x, api, f"argument {i}")
        if holomorphic or not dtypes.is_inexact(a.dtype):
            if names is None:
                names = _diff_leaf_names(fun, args, nums)
            _check_input_dtype(api, a, holomorphic, allow_int,
                               f"{api} of {_fun_name(fun)}: {names[i]} (argnums={argnums!r})")
    aux_holder = {}

    def flat(*leaves):
        new_args = list(args)
        for i, v in zip(nums, tree_unflatten(d_tree, leaves)):
            new_args[i] = v
        try:
            out = fun(*new_args, **kwargs)
        except _CONVERSION_ERRORS as err:
            _name_the_input(err, leaves, lambda: _diff_leaf_names(fun, args, nums), fun)
            raise
        if has_aux:
            out, aux_holder["aux"] = _split_aux(out, fun)
        a = core.get_aval(out) if core.is_array_like(out) else None
        if a is None or a.shape != ():
            what = (f"an array of shape {a.shape}" if a is not None else
                    f"a {type(out).__name__}")
            advice = ("Use vjp, jacrev or jacfwd for non-scalar outputs, or reduce the output "
                      "(for example with .sum()).")
            if isinstance(out, (tuple, list)) and not has_aux:
                advice = (_has_aux_advice(out, api, fun) + " Otherwise, u" + advice[1:])
            raise TypeError(
                "Gradient only defined for scalar-output functions. Output "
                + (f"had shape: {a.shape}. " if a is not None else f"was {_describe(out)}. ") +
                f"({api} of {_fun_name(fun)} requires a scalar output (shape ()), but the function "
                f"returned {what}. {advice})")
        _check_output_dtype(api, a, holomorphic, f"{api} of {_fun_name(fun)}")
        return [out]

    outs, jaxpr, consts, out_avals, aux = ad.linearize_flat(
        flat, d_leaves, None, aux_holder if has_aux else None, records=True)
    out = outs[0]
    ct = np.ones((), core.get_aval(out).dtype)
    token = BackwardPass.enter()   # its own NaN / inf cotangents are silent, as JAX's
    try:
        cts = ad.backward_pass(jaxpr, consts, [ct])
    finally:
        BackwardPass.exit(token)
    g = _arrays([ad.zeros_like_aval(v.aval) if c is None else c for c, v in zip(cts, jaxpr.invars)])
    out = _arrays([out])[0]
    g = tree_unflatten(d_tree, g)
    if single:
        g = g[0]
    if has_aux:
        return (out, aux), g
    return out, g


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False,
         reduce_axes: Sequence[AxisName] = ()) -> Callable:
    """The gradient of a scalar-valued ``fun``, as a function.

    Reverse mode: ``grad(fun)(x)`` costs a small multiple of ``fun(x)``
    whatever the size of ``x``.

    Args:
      fun: a function returning a real scalar (``(scalar, aux)`` with
        ``has_aux``); its arguments are arrays, scalars or pytrees of them.
      argnums: which positional argument(s) to differentiate with respect
        to: an int or a tuple of ints.
      has_aux: ``fun`` returns ``(value, aux)``; the gradient function then
        returns ``(gradient, aux)``.
      holomorphic: ``fun`` is holomorphic in complex inputs.
      allow_int: allow integer inputs (their gradient is ``float0``
        zeros) instead of raising.
      reduce_axes: accepted for JAX compatibility; must be empty (else
        NotImplementedError, as JAX).

    Returns:
      A function with ``fun``'s arguments returning the gradient, with the
      structure, shapes and dtypes of the selected argument(s) (a tuple for
      a tuple ``argnums``).

    Raises:
      TypeError: ``fun``'s output is not a real scalar, a differentiated
        input is an integer (without ``allow_int``), or ``argnums`` names a
        positional argument the call did not pass.

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> tg.grad(tnp.tanh)(0.0)
      Array(1.)
      >>> tg.grad(lambda x, y: x * y ** 2, argnums=(0, 1))(3.0, 2.0)
      (Array(4.), Array(12.))
      >>> tg.grad(tg.grad(lambda x: x ** 3))(2.0)   # second derivative
      Array(12.)
    """
    _check_callable(fun, "grad")
    _check_reduce_axes(reduce_axes, "grad")

    @api_boundary
    @functools.wraps(fun, updated=())
    def grad_f(*args, **kwargs):
        (_, aux), g = _value_and_grad(fun, argnums, True, allow_int, "grad", args, kwargs,
                                      holomorphic) \
            if has_aux else ((None, None), _value_and_grad(fun, argnums, False, allow_int,
                                                           "grad", args, kwargs, holomorphic)[1])
        return (g, aux) if has_aux else g

    return grad_f


# ---------------------------------------------------------------------------
# Jacobians


def _std_basis(leaves):
    avals = [core.get_aval(x) for x in leaves]
    sizes = [a.size for a in avals]
    n = sum(sizes)
    dtype = np.result_type(*[dtypes.to_inexact(a.dtype) for a in avals]) if avals else np.float64
    eye = np.eye(n, dtype=dtype)
    out, start = [], 0
    for a, s in zip(avals, sizes):
        out.append(eye[:, start:start + s].reshape((n,) + a.shape).astype(
            dtypes.to_inexact(a.dtype)))
        start += s
    return out, sizes, avals


def _has_aux_advice(out, api, fun):
    """The advice for a gradient of a function returning a tuple or list: most often
    ``(loss, aux)`` without ``has_aux=True``."""
    first = out[0] if len(out) else None
    pair = (len(out) == 2 and core.is_array_like(first)
            and core.get_aval(first).shape == ())
    name = _fun_name(fun)
    head = (f"{name} returns a pair whose first element is a scalar: if it is (value, aux), "
            if pair else f"If {name} returns (value, aux), a pair with a scalar value, ")
    return (head + f"pass has_aux=True: {api}({name}, has_aux=True) differentiates the value "
            "only and returns (gradient, aux) (value_and_grad: ((value, aux), gradient)).")


def _diff_leaf_names(fun, args, nums):
    """Names of the leaves of the differentiated arguments ``args[i] for i in nums``."""
    all_names = _arg_leaf_names(fun, args)
    starts = [len(tree_flatten(args[:k])[0]) for k in range(len(args) + 1)]
    return [n for k in nums for n in all_names[starts[k]:starts[k + 1]]]


def _diff_args(fun, argnums, args, kwargs, api, holomorphic, allow_int=False):
    """The differentiated arguments' leaves and a function of those leaves alone."""
    single, nums = _normalize_argnums(argnums, len(args), api, fun)
    d_leaves, d_tree = tree_flatten(tuple(args[i] for i in nums))
    for i, x in enumerate(d_leaves):
        _check_input_dtype(api, _leaf_aval(x, api, f"argument {i}"), holomorphic, allow_int,
                           f"{api} of {_fun_name(fun)}: argument leaf {i}")

    def f_diff(*leaves):
        new = list(args)
        for i, v in zip(nums, tree_unflatten(d_tree, list(leaves))):
            new[i] = v
        return fun(*new, **kwargs)

    f_diff._diff_leaf_names = lambda: _diff_leaf_names(fun, args, nums)
    f_diff.__name__ = f_diff.__qualname__ = getattr(fun, "__name__", "fun")

    return single, d_leaves, d_tree, f_diff


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable:
    """The Jacobian of ``fun``, by forward mode (``vmap`` of ``jvp``).

    Efficient when ``fun`` has fewer inputs than outputs.

    Args:
      fun: the function (arrays or pytrees in and out).
      argnums: which positional argument(s) to differentiate with respect
        to: an int or a tuple of ints.
      has_aux: ``fun`` returns ``(output, aux)``; the Jacobian function
        then returns ``(jacobian, aux)``.
      holomorphic: ``fun`` is holomorphic in complex inputs.

    Returns:
      A function with ``fun``'s arguments returning the Jacobian: for an
      output of shape ``out`` and an input of shape ``in``, an array of shape
      ``out + in`` (pytrees of those for pytree outputs and inputs).

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> tg.jacfwd(lambda x: x ** 2)(tnp.arange(3.0))
      Array([[0., 0., 0.],
             [0., 2., 0.],
             [0., 0., 4.]])
    """
    _check_callable(fun, "jacfwd")

    @api_boundary
    @functools.wraps(fun, updated=())
    def jac_f(*args, **kwargs):
        single, d_leaves, d_tree, f_diff = _diff_args(fun, argnums, args, kwargs, "jacfwd",
                                                      holomorphic)
        basis, sizes, in_avals = _std_basis(d_leaves)

        def push(*tans):
            res = jvp(f_diff, tuple(d_leaves), tuple(tans), has_aux=has_aux)
            # JAX's Jacobian of an integer (or bool) output is zeros of that dtype, not float0
            tan = tree_map(_int_jacobian, res[0], res[1])
            return (tan, res[2]) if has_aux else tan

        pushed = vmap(push, in_axes=0, out_axes=(0, None) if has_aux else 0)(*basis)
        jac_t, aux = pushed if has_aux else (pushed, None)

        def arrange(y):  # y: (n, *out_shape)
            out_shape = core.get_aval(y).shape[1:]
            parts, start = [], 0
            for a, s in zip(in_avals, sizes):
                blk = y[start:start + s]
                blk = blk.reshape((s,) + out_shape)
                blk = _moveaxis(blk, 0, -1).reshape(out_shape + a.shape)
                parts.append(blk)
                start += s
            tree = tree_unflatten(d_tree, parts)
            return tree[0] if single else tree

        for leaf in tree_flatten(jac_t)[0]:
            _check_output_dtype("jacfwd", core.get_aval(leaf), holomorphic,
                                f"jacfwd of {_fun_name(fun)}")
        jac = tree_map(arrange, jac_t)
        return (jac, aux) if has_aux else jac

    return jac_f


def _int_jacobian(y: Any, t: Any) -> Any:
    """The tangent ``t`` of ``y`` (jacfwd: an output; jacrev: an input); zeros of ``y``'s
    dtype if ``t`` is float0 (JAX's Jacobians of and by integers)."""
    ta = core.get_aval(t)
    if ta.dtype != dtypes.float0:
        return t
    return np.zeros(ta.shape, core.get_aval(y).dtype)


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """The Jacobian of ``fun``, by reverse mode (``vmap`` of ``vjp``).

    Efficient when ``fun`` has fewer outputs than inputs.  ``tangentia.jacobian``
    is the same function.

    Args:
      fun: the function (arrays or pytrees in and out).
      argnums: which positional argument(s) to differentiate with respect
        to: an int or a tuple of ints.
      has_aux: ``fun`` returns ``(output, aux)``; the Jacobian function
        then returns ``(jacobian, aux)``.
      holomorphic: ``fun`` is holomorphic in complex inputs.
      allow_int: allow integer inputs (their Jacobian is zeros of their dtype, as JAX's).

    Returns:
      A function with ``fun``'s arguments returning the Jacobian: for an
      output of shape ``out`` and an input of shape ``in``, an array of shape
      ``out + in`` (pytrees of those for pytree outputs and inputs).

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> tg.jacrev(lambda x: tnp.stack([x[0] * x[1], x[1]]))(tnp.array([2.0, 3.0]))
      Array([[3., 2.],
             [0., 1.]])
    """
    _check_callable(fun, "jacrev")

    @api_boundary
    @functools.wraps(fun, updated=())
    def jac_f(*args, **kwargs):
        single, d_leaves, d_tree, f_diff = _diff_args(fun, argnums, args, kwargs, "jacrev",
                                                      holomorphic, allow_int)

        res = vjp(f_diff, *d_leaves, has_aux=has_aux)
        out, pullback = res[0], res[1]
        out_leaves, out_tree = tree_flatten(out)
        for leaf in out_leaves:
            _check_output_dtype("jacrev", core.get_aval(leaf), holomorphic,
                                f"jacrev of {_fun_name(fun)}")
        basis, sizes, out_avals = _std_basis(out_leaves)

        def pull(*cts):
            return pullback(tree_unflatten(out_tree, list(cts)))

        cts_in = vmap(pull)(*basis)  # list over input leaves, each (n_out, *in_shape)
        per_out = []
        start = 0
        for a, s in zip(out_avals, sizes):
            parts = []
            for c, x in zip(cts_in, d_leaves):
                blk = c[start:start + s].reshape(a.shape + core.get_aval(x).shape)
                parts.append(_int_jacobian(x, blk))   # an integer input: zeros of its dtype
            tree = tree_unflatten(d_tree, parts)
            per_out.append(tree[0] if single else tree)
            start += s
        jac = tree_unflatten(out_tree, per_out)
        return (jac, res[2]) if has_aux else jac

    return jac_f


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable:
    """The Hessian of a scalar-valued ``fun``: ``jacfwd(jacrev(fun))``.

    Args:
      fun: a function returning a real scalar.
      argnums: which positional argument(s) to differentiate with respect
        to: an int or a tuple of ints.
      has_aux: ``fun`` returns ``(value, aux)``; the Hessian function then
        returns ``(hessian, aux)``.
      holomorphic: ``fun`` is holomorphic in complex inputs.

    Returns:
      A function with ``fun``'s arguments returning the Hessian: for an
      input of shape ``in``, an array of shape ``in + in``.

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> tg.hessian(lambda x: x[0] ** 2 * x[1])(tnp.array([1.0, 2.0]))
      Array([[4., 2.],
             [2., 0.]])
    """
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                  has_aux=has_aux, holomorphic=holomorphic)


def _moveaxis(x, src, dst):
    nd = core.get_aval(x).ndim
    return batching.move_axis(x, src % nd, dst % nd)



@api_boundary
def linear_transpose(fun: Callable, *primals: Any, reduce_axes: Sequence[AxisName] = ()) -> Callable:
    """The transpose of the linear function ``fun``.

    ``linear_transpose(f, x)(ct) == (J^T ct,)`` where ``J`` is ``f``'s
    matrix; the example ``primals`` give only the input shapes and dtypes.

    Args:
      fun: a function linear in its positional arguments.
      *primals: example arguments (or ``ShapeDtypeStruct`` objects).
      reduce_axes: accepted for JAX compatibility; must be empty (else
        NotImplementedError, as JAX).

    Returns:
      A function taking a cotangent of ``fun``'s output structure and
      returning a tuple with one cotangent per primal.

    Raises:
      TypeError: (when the transpose is called) ``fun`` is not linear in
        its inputs.

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> f_t = tg.linear_transpose(lambda x: 3.0 * x[::-1], tnp.zeros(3))
      >>> f_t(tnp.array([1.0, 2.0, 3.0]))
      (Array([9., 6., 3.]),)
    """
    _check_callable(fun, "linear_transpose")
    _check_reduce_axes(reduce_axes, "transpose")
    leaves, in_tree = tree_flatten(primals)
    avals = [_abstractify_duck(x) for x in leaves]   # (only shapes and dtypes: any object with them, as JAX)
    jaxpr, consts, out_tree = _stage(fun, (), tree_flatten((primals, {}))[1], avals,
                                     "linear_transpose")
    in_dtypes = [a.dtype for a in avals]
    out_dtypes = [a.dtype for a in jaxpr.out_avals]
    # JAX's rule: float/complex to float/complex, or integers to integers
    if not ((all(dtypes.is_inexact(d) for d in in_dtypes)
             and all(dtypes.is_inexact(d) for d in out_dtypes))
            or (all(np.dtype(d).kind in "iu" for d in in_dtypes)
                and all(np.dtype(d).kind in "iu" for d in out_dtypes))):
        raise TypeError("linear_transpose only supports [float or complex] -> [float or "
                        "complex], and integer -> integer functions, but got "
                        f"{[np.dtype(d) for d in in_dtypes]} -> "
                        f"{[np.dtype(d) for d in out_dtypes]}. (linear_transpose of "
                        f"{_fun_name(fun)})")
    api = f"linear_transpose of {_fun_name(fun)}"
    pullback = _make_pullback(jaxpr, consts, out_tree, jaxpr.out_avals, in_tree, api)

    int_mode = bool(in_dtypes) and np.dtype(in_dtypes[0]).kind in "iu"

    @api_boundary
    def transposed(ct):
        if int_mode:   # (the pullback's own check allows integer cotangents of any output)
            cts = tree_flatten(ct)[0]
            got = [core.get_aval(c) for c in cts]
            if len(got) != len(out_dtypes) or any(
                    g.dtype != d and not g.weak_type for g, d in zip(got, out_dtypes)):
                raise TypeError("cotangent type does not match function output, expected "
                                f"{[str(a) for a in jaxpr.out_avals]} but got "
                                f"{[str(g) for g in got]} ({api}: an integer function takes "
                                "cotangents of its output dtypes)")
        try:
            return pullback(ct)
        except (TypeError, NotImplementedError) as err:
            raise TypeError(f"{api}: the function is not linear in its inputs ({err})") from None

    return transposed


