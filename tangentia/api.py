"""Public transformations: jvp, linearize, vjp, grad, value_and_grad,
jacfwd, jacrev, hessian, vmap, jit, make_jaxpr, eval_shape."""
from __future__ import annotations

import functools
import inspect
import threading
import weakref

import numpy as np

from . import core, dtypes
from .core import ShapedArray, Tracer
from .interpreters import ad, batching
from .interpreters import partial_eval as pe
from ._messages import fun_name as _fun_name
from .compiler.backend import get_backend
from .primitives.call import jit_p
from .tree_util import tree_flatten, tree_map, tree_structure, tree_unflatten

# ---------------------------------------------------------------------------
# Helpers

_LEAF_TREE = tree_structure(0)


def _check_callable(fun, api):
    if not callable(fun):
        raise TypeError(f"{api}: expected a callable as the function to transform, "
                        f"got {type(fun).__name__} {fun!r:.60}")


def _normalize_argnums(argnums, nargs, api, fun):
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    out = []
    for a in nums:
        if not isinstance(a, (int, np.integer)):
            raise TypeError(f"{api}: argnums must be an int or a tuple of ints, got {argnums!r}")
        b = a + nargs if a < 0 else a
        if not 0 <= b < nargs:
            raise ValueError(f"{api} of {_fun_name(fun)}: argnums={argnums!r} but the function "
                             f"was called with {nargs} positional argument(s)")
        out.append(int(b))
    return single, tuple(out)


def _leaf_aval(x, api, what):
    try:
        return core.get_aval(x)
    except TypeError as e:
        raise TypeError(f"{api}: {what} is not an array: {e}") from None


def _arg_leaf_names(fun, args):
    """Readable names for the flattened leaves of ``args`` (for errors)."""
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        params = []
    names = []
    for i, a in enumerate(args):
        base = params[i] if i < len(params) else f"argument {i}"
        leaves, _ = tree_flatten(a)
        if len(leaves) == 1 and not isinstance(a, (tuple, list, dict)):
            names.append(f"argument '{base}'")
        else:
            names.extend(f"argument '{base}' (leaf {j})" for j in range(len(leaves)))
    return names


def _describe(x):
    if core.is_array_like(x):
        return f"a single array {core.get_aval(x).str_short()}"
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of length {len(x)}"
    return f"a {type(x).__name__}"


def _arrays(leaves):
    """Concrete results as ndarrays (Python and NumPy scalars become 0-d arrays)."""
    return [x if type(x) is np.ndarray or isinstance(x, Tracer) else np.asarray(x) for x in leaves]


def _flatten_fun(fun, in_tree, store):
    """A flat-in, flat-out version of ``fun``; the output tree goes in ``store``."""
    def flat(*leaves):
        args, kwargs = tree_unflatten(in_tree, leaves)
        out = fun(*args, **kwargs)
        out_leaves, out_tree = tree_flatten(out)
        store["out_tree"] = out_tree
        return out_leaves
    return flat


# ---------------------------------------------------------------------------
# Forward mode


def jvp(fun, primals, tangents, has_aux=False):
    """Jacobian-vector product: ``(fun(*primals), J(primals) @ tangents)``."""
    _check_callable(fun, "jvp")
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples or lists, got "
                        f"{type(primals).__name__} and {type(tangents).__name__}")
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: got {len(primals)} primals but {len(tangents)} tangents")
    p_leaves, p_tree = tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise ValueError(f"jvp: primal and tangent structures differ: {p_tree} and {t_tree}")
    tans = []
    for i, (p, t) in enumerate(zip(p_leaves, t_leaves)):
        pa = _leaf_aval(p, "jvp", f"primal {i}")
        ta = _leaf_aval(t, "jvp", f"tangent {i}")
        want = dtypes.tangent_dtype(pa.dtype)
        if pa.shape != ta.shape:
            raise ValueError(f"jvp: tangent {i} has shape {ta.shape} but its primal has shape "
                             f"{pa.shape}; they must match")
        if want == dtypes.float0:
            tans.append(ad.Zero(ShapedArray(pa.shape, dtypes.float0)))
            continue
        if ta.dtype != want and not ta.weak_type:
            raise TypeError(f"jvp: tangent {i} has dtype {ta.dtype} but its primal has dtype "
                            f"{pa.dtype}; the tangent dtype must be {want}")
        tans.append(t)
    store = {}

    def flat(*leaves):
        out = fun(*tree_unflatten(p_tree, leaves))
        if has_aux:
            out, aux = out
            store["aux"] = aux
        out_leaves, store["out_tree"] = tree_flatten(out)
        return out_leaves

    trace_holder = {}
    outs, out_tans = _jvp_with_aux(flat, p_leaves, tans, store, trace_holder)
    out_tans = _arrays([ad.instantiate(t) for t in out_tans])
    outs = _arrays(outs)
    out_tree = store["out_tree"]
    res = (tree_unflatten(out_tree, outs), tree_unflatten(out_tree, out_tans))
    if has_aux:
        return res + (store["aux"],)
    return res


def _jvp_with_aux(flat, primals, tangents, store, holder):
    trace = ad.JVPTrace(core.current_trace())
    ins = [p if type(t) is ad.Zero else ad.JVPTracer(trace, p, t) for p, t in zip(primals, tangents)]
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


def linearize(fun, *primals, has_aux=False):
    """Return ``(fun(*primals), f_jvp)`` where ``f_jvp`` evaluates the linear map."""
    _check_callable(fun, "linearize")
    p_leaves, p_tree = tree_flatten(primals)
    for i, p in enumerate(p_leaves):
        _leaf_aval(p, "linearize", f"primal {i}")
    store = {}
    outs, jaxpr, consts, _, aux = _linearize(fun, p_leaves, p_tree, store, has_aux)
    out_tree = store["out_tree"]
    in_avals = [v.aval for v in jaxpr.invars]

    def f_jvp(*tangents):
        t_leaves, t_tree = tree_flatten(tangents)
        if t_tree != p_tree:
            raise ValueError(f"linearize: the linearized function expects tangents with structure "
                             f"{p_tree}, got {t_tree}")
        for i, (t, a) in enumerate(zip(t_leaves, in_avals)):
            if core.get_aval(t).shape != a.shape:
                raise ValueError(f"linearize: tangent {i} has shape {core.get_aval(t).shape}, "
                                 f"expected {a.shape}")
        res = core.eval_jaxpr(jaxpr, consts, *t_leaves)
        return tree_unflatten(out_tree, _arrays(res))

    out = tree_unflatten(out_tree, _arrays(outs))
    return (out, f_jvp, aux) if has_aux else (out, f_jvp)


def _linearize(fun, p_leaves, p_tree, store, has_aux, differentiable=None):
    aux_holder = {}

    def flat(*leaves):
        out = fun(*tree_unflatten(p_tree, leaves))
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError(f"{_fun_name(fun)} was transformed with has_aux=True, so it must "
                                f"return a pair (output, aux); got {_describe(out)}")
            out, aux = out
            aux_holder["aux"] = aux
        out_leaves, store["out_tree"] = tree_flatten(out)
        store["out"] = out_leaves
        return out_leaves

    outs, jaxpr, consts, out_avals, aux = ad.linearize_flat(
        flat, p_leaves, differentiable, aux_holder if has_aux else None)
    return outs, jaxpr, consts, out_avals, aux


# ---------------------------------------------------------------------------
# Reverse mode


def vjp(fun, *primals, has_aux=False):
    """Return ``(fun(*primals), vjp_fun)``; ``vjp_fun(ct)`` pulls a cotangent back.

    Built as linearize + partial evaluation + transposition.
    """
    _check_callable(fun, "vjp")
    p_leaves, p_tree = tree_flatten(primals)
    for i, p in enumerate(p_leaves):
        _leaf_aval(p, "vjp", f"primal {i}")
    store = {}
    outs, jaxpr, consts, out_avals, aux = _linearize(fun, p_leaves, p_tree, store, has_aux)
    out_tree = store["out_tree"]
    pullback = _make_pullback(jaxpr, consts, out_tree, out_avals, p_tree, "vjp")
    out = tree_unflatten(out_tree, _arrays(outs))
    return (out, pullback, aux) if has_aux else (out, pullback)


def _make_pullback(jaxpr, consts, out_tree, out_avals, in_tree, api):
    in_avals = [v.aval for v in jaxpr.invars]

    def vjp_fun(ct):
        ct_leaves, ct_tree = tree_flatten(ct)
        if ct_tree != out_tree:
            raise ValueError(f"{api}: the cotangent has structure {ct_tree} but the function's "
                             f"output has structure {out_tree}")
        for i, (c, a) in enumerate(zip(ct_leaves, out_avals)):
            ca = core.get_aval(c)
            if ca.shape != a.shape:
                raise ValueError(f"{api}: cotangent {i} has shape {ca.shape} but the output has "
                                 f"shape {a.shape}")
        res = ad.backward_pass(jaxpr, consts, ct_leaves)
        res = [ad.zeros_like_aval(a) if c is None or type(c) is ad.Zero else c
               for c, a in zip(res, in_avals)]
        return tree_unflatten(in_tree, _arrays(res))

    return vjp_fun


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False,
                   reduce_axes=()):
    """Return a function computing ``fun``'s value and its gradient."""
    _check_callable(fun, "value_and_grad")

    @functools.wraps(fun, updated=())
    def value_and_grad_f(*args, **kwargs):
        return _value_and_grad(fun, argnums, has_aux, allow_int, "grad", args, kwargs)

    return value_and_grad_f


def _value_and_grad(fun, argnums, has_aux, allow_int, api, args, kwargs):
    single, nums = _normalize_argnums(argnums, len(args), api, fun)
    diff = tuple(args[i] for i in nums)
    d_leaves, d_tree = tree_flatten(diff)
    names = None
    for i, x in enumerate(d_leaves):
        a = _leaf_aval(x, api, f"argument {i}")
        if (a.dtype.kind != "f" and not (allow_int and a.dtype.kind in "iub")):
            if names is None:
                all_names = _arg_leaf_names(fun, args)
                starts = [len(tree_flatten(args[:k])[0]) for k in range(len(args) + 1)]
                names = [n for k in nums for n in all_names[starts[k]:starts[k + 1]]]
            if a.dtype.kind == "c":
                raise TypeError(
                    f"{api} of {_fun_name(fun)}: {names[i]} (argnums={argnums!r}) is complex "
                    f"({a.dtype}); differentiation with respect to complex inputs is not "
                    "supported yet. Differentiate with respect to the real and imaginary parts "
                    "as separate float arguments.")
            raise TypeError(
                f"{api} of {_fun_name(fun)} requires real-valued inputs (float dtype) "
                f"for the arguments it differentiates, but {names[i]} (argnums={argnums!r}) has "
                f"dtype {a.dtype}. Convert it to float, or differentiate with respect to other "
                "arguments.")
    aux_holder = {}

    def flat(*leaves):
        new_args = list(args)
        for i, v in zip(nums, tree_unflatten(d_tree, leaves)):
            new_args[i] = v
        out = fun(*new_args, **kwargs)
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError(f"{api} of {_fun_name(fun)} with has_aux=True: the function must "
                                f"return a pair (output, aux), got {_describe(out)}")
            out, aux = out
            aux_holder["aux"] = aux
        a = core.get_aval(out) if core.is_array_like(out) else None
        if a is None or a.shape != ():
            what = (f"an array of shape {a.shape}" if a is not None else
                    f"a {type(out).__name__}")
            raise TypeError(
                f"{api} of {_fun_name(fun)} requires a scalar output (shape ()), but the function "
                f"returned {what}. Use vjp, jacrev or jacfwd for non-scalar outputs, or reduce the "
                "output (for example with .sum()).")
        if a.dtype.kind != "f":
            raise TypeError(f"{api} of {_fun_name(fun)} requires a real floating-point output, "
                            f"got dtype {a.dtype}")
        return [out]

    outs, jaxpr, consts, out_avals, aux = ad.linearize_flat(
        flat, d_leaves, None, aux_holder if has_aux else None)
    out = outs[0]
    ct = np.ones((), core.get_aval(out).dtype)
    cts = ad.backward_pass(jaxpr, consts, [ct])
    g = _arrays([ad.zeros_like_aval(v.aval) if c is None else c for c, v in zip(cts, jaxpr.invars)])
    out = _arrays([out])[0]
    g = tree_unflatten(d_tree, g)
    if single:
        g = g[0]
    if has_aux:
        return (out, aux), g
    return out, g


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
    """Return a function computing the gradient of scalar-valued ``fun``."""
    _check_callable(fun, "grad")

    @functools.wraps(fun, updated=())
    def grad_f(*args, **kwargs):
        (_, aux), g = _value_and_grad(fun, argnums, True, allow_int, "grad", args, kwargs) \
            if has_aux else ((None, None), _value_and_grad(fun, argnums, False, allow_int,
                                                           "grad", args, kwargs)[1])
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


def _diff_args(fun, argnums, args, kwargs, api):
    """The differentiated arguments' leaves and a function of those leaves alone."""
    single, nums = _normalize_argnums(argnums, len(args), api, fun)
    d_leaves, d_tree = tree_flatten(tuple(args[i] for i in nums))
    for i, x in enumerate(d_leaves):
        if _leaf_aval(x, api, f"argument {i}").dtype.kind != "f":
            raise TypeError(f"{api} of {_fun_name(fun)} requires real float inputs, "
                            f"argument leaf {i} has dtype {core.get_aval(x).dtype}")

    def f_diff(*leaves):
        new = list(args)
        for i, v in zip(nums, tree_unflatten(d_tree, list(leaves))):
            new[i] = v
        return fun(*new, **kwargs)

    return single, d_leaves, d_tree, f_diff


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
    """Jacobian of ``fun`` by forward mode (vmap of jvp)."""
    _check_callable(fun, "jacfwd")

    def jac_f(*args, **kwargs):
        single, d_leaves, d_tree, f_diff = _diff_args(fun, argnums, args, kwargs, "jacfwd")
        basis, sizes, in_avals = _std_basis(d_leaves)

        def push(*tans):
            res = jvp(f_diff, tuple(d_leaves), tuple(tans), has_aux=has_aux)
            return (res[1], res[2]) if has_aux else res[1]

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

        jac = tree_map(arrange, jac_t)
        return (jac, aux) if has_aux else jac

    return jac_f


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """Jacobian of ``fun`` by reverse mode (vmap of vjp)."""
    _check_callable(fun, "jacrev")

    def jac_f(*args, **kwargs):
        single, d_leaves, d_tree, f_diff = _diff_args(fun, argnums, args, kwargs, "jacrev")

        res = vjp(f_diff, *d_leaves, has_aux=has_aux)
        out, pullback = res[0], res[1]
        out_leaves, out_tree = tree_flatten(out)
        basis, sizes, out_avals = _std_basis(out_leaves)

        def pull(*cts):
            return pullback(tree_unflatten(out_tree, list(cts)))

        cts_in = vmap(pull)(*basis)  # list over input leaves, each (n_out, *in_shape)
        per_out = []
        start = 0
        for a, s in zip(out_avals, sizes):
            parts = []
            for c, ia in zip(cts_in, [core.get_aval(x) for x in d_leaves]):
                blk = c[start:start + s].reshape(a.shape + ia.shape)
                parts.append(blk)
            tree = tree_unflatten(d_tree, parts)
            per_out.append(tree[0] if single else tree)
            start += s
        jac = tree_unflatten(out_tree, per_out)
        return (jac, res[2]) if has_aux else jac

    return jac_f


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
    """Hessian of scalar ``fun``: ``jacfwd(jacrev(fun))``."""
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux), argnums, has_aux=has_aux)


def _moveaxis(x, src, dst):
    from . import numpy as tnp
    return tnp.moveaxis(x, src, dst)


# ---------------------------------------------------------------------------
# vmap


def _broadcast_prefix(prefix, tree, what):
    """Expand ``prefix`` (a pytree prefix of ``tree``) to one entry per leaf."""
    out = []

    def rec(p, t):
        if p is None or isinstance(p, int):
            out.extend([p] * len(tree_flatten(t)[0]))
            return
        if isinstance(p, (tuple, list)) and isinstance(t, (tuple, list)) and len(p) == len(t):
            for a, b in zip(p, t):
                rec(a, b)
            return
        if isinstance(p, dict) and isinstance(t, dict) and set(p) == set(t):
            for k in sorted(t):
                rec(p[k], t[k])
            return
        ps, ts = tree_structure(p), tree_structure(t)
        if ps.num_leaves == ts.num_leaves:
            try:
                ts.flatten_up_to(p)
            except Exception:  # noqa: BLE001
                pass
        raise ValueError(f"vmap {what} specification {p!r} does not match the structure of the "
                         f"arguments ({ts}); it must be an int, None, or a pytree prefix of them")

    rec(prefix, tree)
    return out


def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None):
    """Vectorize ``fun`` over a leading (or ``in_axes``) axis of its inputs."""
    _check_callable(fun, "vmap")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if not (in_axes is None or isinstance(in_axes, (int, tuple, dict))):
        raise TypeError(f"vmap in_axes must be an int, None, or a tuple/dict of them, got {in_axes!r}")

    @functools.wraps(fun, updated=())
    def vmapped(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(f"vmap of {_fun_name(fun)}: in_axes has {len(in_axes)} entries but "
                             f"the function was called with {len(args)} positional arguments")
        leaves, in_tree = tree_flatten((args, kwargs))
        axes = _broadcast_prefix(in_axes if isinstance(in_axes, tuple) else
                                 (in_axes,) * len(args), args, "in_axes") + \
            [0] * len(tree_flatten(kwargs)[0])
        dims = []
        size = axis_size
        sizes = []
        names = None
        for i, (x, ax) in enumerate(zip(leaves, axes)):
            if ax is None:
                dims.append(None)
                continue
            a = core.get_aval(x)
            if a.ndim == 0:
                names = names or _arg_leaf_names(fun, args)
                raise ValueError(f"vmap of {_fun_name(fun)}: in_axes={ax} was given for "
                                 f"{names[i] if i < len(names) else f'leaf {i}'}, which is a "
                                 "scalar (rank 0); it has no axis to map over")
            if not -a.ndim <= ax < a.ndim:
                raise ValueError(f"vmap of {_fun_name(fun)}: in_axes={ax} is out of range for an "
                                 f"argument of shape {a.shape}")
            d = ax + a.ndim if ax < 0 else ax
            dims.append(d)
            sizes.append((i, a.shape[d]))
        distinct = {s for _, s in sizes}
        if size is None:
            if not sizes:
                raise ValueError(f"vmap of {_fun_name(fun)} needs at least one mapped argument "
                                 "(all in_axes are None) or an explicit axis_size")
            if len(distinct) > 1:
                names = names or _arg_leaf_names(fun, args)
                detail = ", ".join(
                    f"{names[i] if i < len(names) else f'leaf {i}'} has size {s}" for i, s in sizes)
                raise ValueError(f"vmap of {_fun_name(fun)} got inconsistent sizes for the mapped "
                                 f"axis: {detail}. All mapped axes must have the same size.")
            size = sizes[0][1]
        elif distinct and distinct != {size}:
            raise ValueError(f"vmap of {_fun_name(fun)}: axis_size={size} but mapped arguments "
                             f"have sizes {sorted(distinct)}")
        store = {}
        flat = _flatten_fun(fun, in_tree, store)

        def out_dims(n):
            out_tree = store["out_tree"]
            if isinstance(out_axes, int) or out_axes is None:
                return [out_axes] * n
            return _broadcast_prefix(out_axes, tree_unflatten(out_tree, [0] * n), "out_axes")

        outs = batching.vmap_flat(flat, leaves, dims, size, out_dims)
        return tree_unflatten(store["out_tree"], outs)

    return vmapped


# ---------------------------------------------------------------------------
# jit


class ShapeDtypeStruct:
    """A shape and dtype standing for an array (for eval_shape and tracing)."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype, weak_type=False):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = weak_type

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def __repr__(self):
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"


def _abstractify(x):
    if isinstance(x, ShapeDtypeStruct):
        return ShapedArray(x.shape, x.dtype, x.weak_type)
    return core.get_aval(x)


def _static_split(fun, args, kwargs, static_argnums, static_argnames, api):
    nargs = len(args)
    statics = []
    dyn_args = []
    snums = set()
    for i in static_argnums:
        j = i + nargs if i < 0 else i
        snums.add(j)
    for i, a in enumerate(args):
        if i in snums:
            statics.append(("pos", i, a))
        else:
            dyn_args.append(a)
    dyn_kwargs = {}
    for k, v in kwargs.items():
        if k in static_argnames:
            statics.append(("kw", k, v))
        else:
            dyn_kwargs[k] = v
    for kind, k, v in statics:
        try:
            hash(v)
        except TypeError:
            raise ValueError(f"{api} of {_fun_name(fun)}: static argument {k!r} has unhashable "
                             f"type {type(v).__name__}; static arguments must be hashable") from None
    return tuple(statics), tuple(dyn_args), dyn_kwargs


def _merge_static(statics, dyn_args, dyn_kwargs):
    args = list(dyn_args)
    kwargs = dict(dyn_kwargs)
    for kind, k, v in statics:
        if kind == "pos":
            args.insert(k, v)
        else:
            kwargs[k] = v
    return args, kwargs


def _invalid_argument_error(name, fun, args, kwargs, api):
    """A TypeError naming the first argument leaf that is not an array."""
    names = _arg_leaf_names(fun, args) + [f"keyword argument '{k}'" for k in sorted(kwargs)
                                          for _ in tree_flatten(kwargs[k])[0]]
    leaves = tree_flatten(args)[0] + [x for k in sorted(kwargs) for x in tree_flatten(kwargs[k])[0]]
    for n, x in zip(names, leaves):
        try:
            _abstractify(x)
        except TypeError:
            return TypeError(
                f"{api} of {name}: {n} of type {type(x).__name__} is not a valid array type. "
                "Pass arrays (or pytrees of arrays), or mark the argument static with "
                "static_argnums / static_argnames.")
    return TypeError(f"{api} of {name}: an argument is not a valid array type")


def _stage(fun, statics, in_tree, avals, label, arg_names=None):
    """Trace ``fun`` on the flattened ``(args, kwargs)`` (static arguments put
    back in place). Returns ``(jaxpr, consts, out_tree)``."""
    store = {}

    def flat(*leaves):
        d_args, d_kwargs = tree_unflatten(in_tree, leaves)
        args, kwargs = _merge_static(statics, d_args, d_kwargs)
        out_leaves, store["out_tree"] = tree_flatten(fun(*args, **kwargs))
        return out_leaves

    jaxpr, consts = pe.trace_to_jaxpr(flat, list(avals), name=_fun_name(fun), label=label,
                                      arg_names=arg_names)
    return jaxpr, consts, store["out_tree"]


_ndarray = np.ndarray
_current_trace = core.current_trace
_EVAL_TRACE = core.EVAL_TRACE
_SCALAR_KEY = {float: "float", int: "int", bool: "bool", complex: "complex"}
_FUNCTION_CACHES = weakref.WeakKeyDictionary()  # fun -> {options: (cache, fast_cache)}
_FUNCTION_CACHES_LOCK = threading.Lock()


def _function_caches(fun, options):
    """The (cache, fast_cache) pair of ``fun`` jitted with ``options``."""
    try:
        with _FUNCTION_CACHES_LOCK:
            per_fun = _FUNCTION_CACHES.setdefault(fun, {})
            return per_fun.setdefault(options, ({}, {}))
    except TypeError:  # not weakly referenceable (e.g. some builtins): a cache per jit object
        return {}, {}


class _Jitted:
    """A function compiled on first call for each abstract signature."""

    def __init__(self, fun, static_argnums, static_argnames, backend=None):
        self.fun = fun
        if backend is not None:
            get_backend(backend)  # an unknown name fails here, naming the backends
        self.backend = backend
        if isinstance(static_argnums, int):
            static_argnums = (static_argnums,)
        if isinstance(static_argnames, str):
            static_argnames = (static_argnames,)
        static_argnums = tuple(static_argnums or ())
        static_argnames = tuple(static_argnames or ())
        # Resolve names <-> positions as JAX does.
        try:
            params = list(inspect.signature(fun).parameters.values())
        except (TypeError, ValueError):
            params = []
        pos_names = [p.name for p in params
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        nums = set(static_argnums)
        names = set(static_argnames)
        for i in static_argnums:
            if 0 <= i < len(pos_names):
                names.add(pos_names[i])
        for n in static_argnames:
            if n in pos_names:
                nums.add(pos_names.index(n))
        self.static_argnums = tuple(sorted(nums))
        self.static_argnames = frozenset(names)
        # The caches belong to the function (weakly), as in JAX: jit(f)(x) written
        # inline traces f once per signature, not once per jit object.
        self.cache, self.fast_cache = _function_caches(
            fun, (self.static_argnums, self.static_argnames, backend))
        self.name = _fun_name(fun)
        functools.update_wrapper(self, fun, updated=())

    def _signature(self, args, kwargs):
        if self.static_argnums or self.static_argnames:
            statics, dyn_args, dyn_kwargs = _static_split(
                self.fun, args, kwargs, self.static_argnums, self.static_argnames, "jit")
        else:
            statics, dyn_args, dyn_kwargs = (), args, kwargs
        leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        try:
            avals = tuple(_abstractify(x) for x in leaves)
        except TypeError:
            raise _invalid_argument_error(self.name, self.fun, dyn_args, dyn_kwargs,
                                          "jit") from None
        return statics, leaves, in_tree, avals

    def _trace(self, statics, in_tree, avals, dyn_args):
        jaxpr, consts, out_tree = _stage(self.fun, statics, in_tree, avals, "jit",
                                         _arg_leaf_names(self.fun, dyn_args))
        return pe.convert_constvars_to_invars(jaxpr), consts, out_tree

    def __call__(self, *args, **kwargs):
        # Fast path: positional ndarray / Python scalar arguments only, called
        # eagerly, with a program already compiled for their types.
        if not kwargs:
            try:
                fast_key = tuple([(a.shape, a.dtype) if type(a) is _ndarray else _SCALAR_KEY[type(a)]
                                  for a in args])
            except KeyError:
                fast_key = None
            entry = self.fast_cache.get(fast_key)
            if entry is not None and _current_trace() is _EVAL_TRACE:
                fn, consts, out_tree = entry
                outs = fn(*consts, *args)
                if out_tree is _LEAF_TREE:
                    o = outs[0]
                    return o if type(o) is _ndarray else np.asarray(o)
                return tree_unflatten(out_tree, _arrays(outs))
        statics, leaves, in_tree, avals = self._signature(args, kwargs)
        key = (statics, in_tree, avals)
        entry = self.cache.get(key)
        if entry is None:
            dyn_args = tree_unflatten(in_tree, leaves)[0]
            jaxpr, consts, out_tree = self._trace(statics, in_tree, avals, dyn_args)
            if out_tree == _LEAF_TREE:
                out_tree = _LEAF_TREE
            entry = (jaxpr, consts, out_tree)
            if not any(isinstance(c, Tracer) for c in consts):
                self.cache[key] = entry
                if not kwargs and not statics and all(
                        type(a) is np.ndarray or type(a) in _SCALAR_KEY for a in args):
                    self.fast_cache[tuple((a.shape, a.dtype) if type(a) is np.ndarray
                                          else _SCALAR_KEY[type(a)] for a in args)] = (
                        get_backend(self.backend).compile(jaxpr), consts, out_tree)
        jaxpr, consts, out_tree = entry
        outs = jit_p.bind(*consts, *leaves, jaxpr=jaxpr, name=self.name, backend=self.backend)
        return tree_unflatten(out_tree, outs)

    def lower(self, *args, **kwargs):
        """Stage and lower for these arguments: ``.as_text()`` is the code the
        backend generates, ``.compile()`` the callable it runs."""
        statics, leaves, in_tree, avals = self._signature(args, kwargs)
        dyn_args = tree_unflatten(in_tree, leaves)[0]
        jaxpr, consts, out_tree = self._trace(statics, in_tree, avals, dyn_args)
        return Lowered(jaxpr, consts, in_tree, out_tree, get_backend(self.backend), self.name)

    def _cache_size(self):
        return len(self.cache)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)


class Lowered:
    """A program staged and lowered by one backend (``jit(f).lower(*args)``)."""

    def __init__(self, jaxpr, consts, in_tree, out_tree, backend, name):
        self.jaxpr = jaxpr
        self.consts = consts
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.backend = backend
        self.name = name

    def as_text(self):
        """The code the backend generates for the program."""
        return self.backend.source(self.jaxpr)

    def compiler_ir(self, dialect=None):
        """The staged program (tangentia's IR), as a ``ClosedJaxpr``."""
        return core.ClosedJaxpr(self.jaxpr, [])

    def compile(self):
        """A callable taking the same arguments as the jitted function."""
        fn = self.backend.compile(self.jaxpr)
        consts, in_tree, out_tree = self.consts, self.in_tree, self.out_tree

        def compiled(*args, **kwargs):
            leaves, tree = tree_flatten((args, kwargs))
            if tree != in_tree:
                raise TypeError(f"compiled {self.name}: called with arguments of structure "
                                f"{tree}, but it was lowered for {in_tree}")
            return tree_unflatten(out_tree, _arrays(fn(*consts, *leaves)))
        return compiled

    def __str__(self):
        return self.as_text()


# Options of jax.jit that have no effect here (a CPU, single-device runtime).
_JIT_NOOPS = ("donate_argnums", "donate_argnames", "inline", "keep_unused", "abstracted_axes",
              "compiler_options")
_JIT_UNSPECIFIED = ("in_shardings", "out_shardings", "device")


def jit(fun=None, in_shardings=None, out_shardings=None, static_argnums=None,
        static_argnames=None, donate_argnums=None, donate_argnames=None, keep_unused=False,
        device=None, backend=None, inline=False, abstracted_axes=None, compiler_options=None):
    """Stage ``fun`` into a program, compile it, and cache it per abstract signature.

    Args:
      fun: the function to compile. Its arguments are arrays or pytrees of
        arrays, except those marked static.
      static_argnums, static_argnames: positions / names of arguments that are
        Python values (hashable); a new value compiles a new program.
      backend: ``"numba"`` (whole programs compiled to native code, the
        default), ``"numpy"`` (one NumPy call per operation, the reference),
        or ``None``: ``config.update("jit_backend", ...)``, else the
        ``TANGENTIA_JIT_BACKEND`` environment variable, else ``"numba"``.
        ``"cpu"`` (JAX's platform name) means the default.
      donate_argnums, donate_argnames, inline, keep_unused, abstracted_axes,
        compiler_options: accepted for JAX compatibility; no effect here.
      in_shardings, out_shardings, device: accepted only as ``None`` (one CPU
        device).

    Returns:
      A function with the signature of ``fun``. The program is retraced only
      when argument shapes/dtypes, the pytree structure or the values of
      static arguments change. ``.lower(*args).as_text()`` shows the
      generated code.

    Example:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> f = tg.jit(lambda x: tnp.sin(x) ** 2 + tnp.cos(x) ** 2)
      >>> float(f(0.3))
      1.0
    """
    for opt, val in (("in_shardings", in_shardings), ("out_shardings", out_shardings),
                     ("device", device)):
        if val is not None:
            raise NotImplementedError(f"jit: {opt}={val!r} is not supported; tangentia runs on "
                                      "one CPU device (leave it unset)")
    if backend == "cpu":
        backend = None
    if fun is None:
        return lambda f: jit(f, static_argnums=static_argnums, static_argnames=static_argnames,
                             backend=backend)
    _check_callable(fun, "jit")
    return _Jitted(fun, static_argnums, static_argnames, backend)


def linear_transpose(fun, *primals, reduce_axes=()):
    """Transpose of the linear function ``fun`` (example ``primals`` give the
    input shapes and dtypes): ``linear_transpose(f, x)(ct) == (J^T ct,)``.

    A ``fun`` that is not linear in its inputs raises an error when the
    transpose is called.
    """
    _check_callable(fun, "linear_transpose")
    leaves, in_tree = tree_flatten(primals)
    avals = [_abstractify(x) for x in leaves]
    for i, a in enumerate(avals):
        if a.dtype.kind != "f":
            raise TypeError(f"linear_transpose of {_fun_name(fun)}: primal {i} has dtype "
                            f"{a.dtype}; a linear function needs float inputs")
    jaxpr, consts, out_tree = _stage(fun, (), tree_flatten((primals, {}))[1], avals,
                                     "linear_transpose")
    api = f"linear_transpose of {_fun_name(fun)}"
    pullback = _make_pullback(jaxpr, consts, out_tree, jaxpr.out_avals, in_tree, api)

    def transposed(ct):
        try:
            return pullback(ct)
        except (TypeError, NotImplementedError) as err:
            raise TypeError(f"{api}: the function is not linear in its inputs ({err})") from None

    return transposed


# ---------------------------------------------------------------------------
# checkpoint (rematerialization)


def checkpoint(fun, *, prevent_cse=True, policy=None, static_argnums=()):
    """Differentiate ``fun`` saving only its inputs: reverse mode recomputes
    its intermediates instead of storing them (JAX's default policy)."""
    _check_callable(fun, "checkpoint")
    if policy is not None:
        raise NotImplementedError(
            "checkpoint: only policy=None (save nothing but the inputs) is supported; "
            f"got {policy!r}")
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    from .primitives.remat import remat_p

    @functools.wraps(fun, updated=())
    def remat_f(*args, **kwargs):
        statics, dyn_args, dyn_kwargs = _static_split(fun, args, kwargs, static_argnums, (),
                                                      "checkpoint")
        leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        jaxpr, consts, out_tree = _stage(fun, statics, in_tree, map(_abstractify, leaves),
                                         "checkpoint", _arg_leaf_names(fun, dyn_args))
        outs = remat_p.bind(*consts, *leaves, jaxpr=pe.convert_constvars_to_invars(jaxpr))
        return tree_unflatten(out_tree, outs)

    return remat_f


remat = checkpoint


# ---------------------------------------------------------------------------
# Tracing utilities


def make_jaxpr(fun, static_argnums=(), return_shape=False, abstracted_axes=None):
    """Return a function that traces ``fun`` and returns its program (a ClosedJaxpr)."""
    _check_callable(fun, "make_jaxpr")
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)

    def make(*args, **kwargs):
        statics, dyn_args, dyn_kwargs = _static_split(fun, args, kwargs, static_argnums, (),
                                                      "make_jaxpr")
        leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        jaxpr, consts, out_tree = _stage(fun, statics, in_tree, map(_abstractify, leaves),
                                         "make_jaxpr", _arg_leaf_names(fun, dyn_args))
        closed = core.ClosedJaxpr(jaxpr, consts)
        if return_shape:
            shapes = [ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in jaxpr.outvars]
            return closed, tree_unflatten(out_tree, shapes)
        return closed

    return make


def eval_shape(fun, *args, **kwargs):
    """Shapes and dtypes of ``fun``'s outputs, computed without running it."""
    _check_callable(fun, "eval_shape")
    leaves, in_tree = tree_flatten((args, kwargs))
    jaxpr, _, out_tree = _stage(fun, (), in_tree, map(_abstractify, leaves), "eval_shape")
    shapes = [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in jaxpr.out_avals]
    return tree_unflatten(out_tree, shapes)
