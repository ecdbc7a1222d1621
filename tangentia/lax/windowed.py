"""``jax.lax.reduce_window`` and ``jax.lax.reduce``.

One operand and a monoid ``computation`` (add, mul, max, min: recognized by what it
computes on a few probe pairs, so ``lax.add``, ``tnp.maximum``, ``lambda a, b: a * b``, ...
all qualify) use the reduction primitives: as XLA on the CPU, padding and base dilation
holes contribute nothing and every window starts from ``init_value``; windows are reduced
by ``primitives.windowed.window_reduce_p`` (differentiable: sums transpose to a padded
window sum, max/min scatter to each window's winner).  Several operands (a pytree) or any
other associative computation are reduced pairwise by the computation itself
(``_general_reduce``).
"""
from __future__ import annotations

import sys
import warnings
from typing import TYPE_CHECKING

import numpy as np

from .. import core
from ..primitives import bits as BITS
from ..primitives import elementwise as E
from ..primitives import indexing as I
from ..primitives import reductions as R
from ..primitives import structural as S
from ..primitives.structural import convert_element_type
from ..primitives.windowed import MONOIDS, pad, window_reduce, window_shape
from ..tree_util import tree_flatten, tree_unflatten
from .ops import _reduction_axes, _tag
from .convolution import padtype_to_pads

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any
    from ..typing import Shape

_PROBES = ((2.0, 3.0), (-1.5, -3.0), (0.25, 7.0))
_REDUCERS = {"add": R.reduce_sum, "mul": R.reduce_prod, "max": R.reduce_max,
             "min": R.reduce_min}
_COMBINE = {"add": E.add, "mul": E.mul, "max": E.maximum, "min": E.minimum}


def _monoid(fname, computation):
    """The name of the monoid ``computation`` computes, found by probing it."""
    try:
        with core.set_trace(core.EVAL_TRACE):  # probed eagerly, also while staging
            got = [float(np.asarray(computation(np.float64(a), np.float64(b))))
                   for a, b in _PROBES]
    except Exception as e:  # noqa: BLE001 - any failure means "not a recognized monoid"
        raise NotImplementedError(
            f"{fname}: argument 'computation' must be one of the monoids add, mul, max, min "
            f"(e.g. lax.add, lax.max, tnp.multiply); calling it on scalars failed: {e}") from e
    for name, (ufunc, _) in MONOIDS.items():
        if all(g == float(ufunc(a, b)) for g, (a, b) in zip(got, _PROBES)):
            return name
    raise NotImplementedError(
        f"{fname}: argument 'computation' must be one of the monoids add, mul, max, min "
        f"(e.g. lax.add, lax.max, tnp.multiply); {getattr(computation, '__name__', computation)!r} "
        "computes none of them")


# Bitwise monoids of integers and booleans (lax.reduce only): probed on int64 and bool pairs
_BIT_PROBES = ((np.int64(12), np.int64(10)), (np.int64(-7), np.int64(5)),
               (np.int64(3), np.int64(6)), (np.True_, np.False_), (np.True_, np.True_),
               (np.False_, np.False_))
_BIT_MONOIDS = {"and": (np.bitwise_and, R.reduce_and_p), "or": (np.bitwise_or, R.reduce_or_p),
                "xor": (np.bitwise_xor, BITS.reduce_xor_p)}


def _bit_monoid(computation, kind):
    """``"and"``/``"or"``/``"xor"`` if ``computation`` computes that bitwise operation on
    integers and booleans (``lax.bitwise_and``, ``jnp.bitwise_xor``, ``lambda a, b: a | b``,
    ...; for a boolean operand (``kind`` ``"b"``) on booleans only: ``jnp.logical_or``
    too), else None."""
    probes = _BIT_PROBES[3:] if kind == "b" else _BIT_PROBES
    try:
        with core.set_trace(core.EVAL_TRACE):
            got = [np.asarray(computation(a, b)) for a, b in probes]
    except Exception:  # noqa: BLE001 - any failure means "not a bitwise monoid"
        return None
    for name, (ufunc, _) in _BIT_MONOIDS.items():
        if all(g.shape == () and g.dtype == np.result_type(a) and g == ufunc(a, b)
               for g, (a, b) in zip(got, probes)):
            return name
    return None


def _bit_reduce(op, x, init, axes):
    """``lax.reduce`` of one integer or boolean operand with a bitwise monoid: its reduction
    primitive (JAX's reduce_and/or/xor), then ``init`` unless it is the identity."""
    dtype = np.dtype(core.get_aval(x).dtype)
    prim = _BIT_MONOIDS[op][1]
    out = prim.bind(x, axes=axes) if axes else x
    identity = np.array(-1 if op == "and" else 0).astype(dtype)
    if isinstance(init, core.Tracer) or np.asarray(init).shape != () \
            or np.asarray(init) != identity:
        combine = {"and": E.bitwise_and_p, "or": E.bitwise_or_p, "xor": E.bitwise_xor_p}[op]
        out = combine.bind(out, convert_element_type(init, dtype))
    return out


def _identity(op, dtype):
    """The monoid's identity in ``dtype`` (the extreme integers for max/min of integers)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu" and op in ("max", "min"):
        info = np.iinfo(dtype)
        return np.array(info.min if op == "max" else info.max, dtype)
    if dtype.kind == "b" and op in ("max", "min"):
        return np.array(op == "min")
    return np.array(MONOIDS[op][1], dtype)


def _is_identity(op, init):
    """Whether the concrete ``init`` is the monoid's identity (then it is not applied)."""
    if isinstance(init, core.Tracer):
        return False
    value = np.asarray(init)
    return value.shape == () and bool(value == _identity(op, value.dtype))


def _single(fname, tree, what):
    leaves, treedef = tree_flatten(tree)
    if len(leaves) != 1:
        raise NotImplementedError(f"{fname}: several operands (a variadic {what}) are not "
                                  f"supported; pass one array")
    return leaves[0], treedef


def _flat_operands(fname, operands, init_values):
    """``(operand leaves, initial-value leaves, tree)`` of ``reduce``/``reduce_window``'s
    pytrees, with JAX's error when the trees differ and ours when there is no operand."""
    xs, treedef = tree_flatten(operands)
    inits, init_tree = tree_flatten(init_values)
    if init_tree != treedef:
        raise ValueError(f"Operands must have the same tree structure as init_values: "
                         f"{treedef} vs. {init_tree}"
                         + _tag(fname, "one initial value per operand"))
    if not xs:
        raise ValueError(f"{fname}: no operands" + _tag(fname, "pass at least one array"))
    return xs, inits, treedef


def reduce_window(operand: Any, init_value: Any, computation: Callable, window_dimensions: Shape,
                  window_strides: Sequence[int] | None = None,
                  padding: str | Sequence[tuple[int, int]] = "VALID",
                  base_dilation: Sequence[int] | None = None,
                  window_dilation: Sequence[int] | None = None) -> Any:
    """Reduce every window of ``operand`` with the monoid ``computation``, starting
    from ``init_value`` (``jax.lax.reduce_window``): ``padding`` is ``'SAME'``,
    ``'VALID'`` or one ``(low, high)`` pair per dimension; ``base_dilation``
    spreads the operand, ``window_dilation`` the window."""
    fname = "reduce_window"
    xs, inits, treedef = _flat_operands(fname, operand, init_value)
    for i in inits:
        if core.get_aval(i).shape != ():
            raise TypeError(f"reduce_window expected init_values to be scalars but "
                            f"init_values have shapes {[core.get_aval(v).shape for v in inits]}."
                            + _tag(fname, "each initial value is a scalar"))
    xs = [x if isinstance(x, core.Tracer) else np.asarray(x) for x in xs]
    if len({core.get_aval(x).shape for x in xs}) != 1:
        raise ValueError(f"reduce_window: the operands must have one shape, got "
                         f"{[core.get_aval(x).shape for x in xs]}"
                         + _tag(fname, "operands of one shape"))
    x, init = xs[0], inits[0]
    shape = core.get_aval(x).shape
    nd = len(shape)
    window_dimensions = tuple(int(k) for k in window_dimensions)
    window_strides = (1,) * nd if window_strides is None else tuple(int(s) for s in
                                                                     window_strides)
    base_dilation = (1,) * nd if base_dilation is None else tuple(int(d) for d in base_dilation)
    window_dilation = (1,) * nd if window_dilation is None else tuple(int(d) for d in
                                                                       window_dilation)
    for name, dims, low in (("window_dimensions", window_dimensions, 1),
                            ("window_strides", window_strides, 1),
                            ("base_dilation", base_dilation, 0),
                            ("window_dilation", window_dilation, 0)):
        if not all(d >= low for d in dims):
            raise TypeError(f"reduce_window {name} must have every element be "
                            f"{'strictly positive' if low else 'nonnegative'}, got {dims}."
                            + _tag(fname, f"{name} must be positive"))
    if not len(window_dimensions) == len(window_strides) == len(base_dilation) == \
            len(window_dilation) == nd:
        raise ValueError(f"{fname}: window_dimensions, window_strides, base_dilation and "
                         f"window_dilation must each have {nd} entries (the operand's rank), "
                         f"got {window_dimensions}, {window_strides}, {base_dilation}, "
                         f"{window_dilation}")
    op = None
    if len(xs) == 1:
        try:
            op = _monoid(fname, computation)
        except NotImplementedError:
            op = None
    if isinstance(padding, str):  # from the undilated operand shape, as JAX's
        eff = [1 + d * (k - 1) for k, d in zip(window_dimensions, window_dilation)]
        padding = padtype_to_pads(shape, eff, window_strides, padding)
    padding = tuple((int(lo), int(hi)) for lo, hi in padding)
    if len(padding) != nd:
        raise ValueError(f"{fname}: padding must have one (low, high) pair per operand "
                         f"dimension ({nd}), got {padding}")
    if op is None:
        return tree_unflatten(treedef, _general_reduce_window(
            xs, inits, computation, treedef, window_dimensions, window_strides, padding,
            base_dilation, window_dilation))
    if any(lo or hi for lo, hi in padding) or any(b != 1 for b in base_dilation):
        x = pad(x, _identity(op, core.get_aval(x).dtype),
                [(lo, hi, b - 1) for (lo, hi), b in zip(padding, base_dilation)])
    out = window_reduce(x, op, window_dimensions, window_strides, window_dilation)
    return tree_unflatten(treedef, [_start_from(op, out, init, core.get_aval(x).dtype)])


def _general_reduce_window(xs, inits, computation, treedef, window_dimensions, strides,
                           padding, base_dilation, window_dilation):
    """``reduce_window`` of any operands and associative ``computation``: each operand
    padded (and base-dilated) with its initial value, as XLA's, its windows gathered
    into a trailing axis and reduced by ``_general_reduce``."""
    padded = []
    for x, i in zip(xs, inits):
        if any(lo or hi for lo, hi in padding) or any(b != 1 for b in base_dilation):
            x = pad(x, i, [(lo, hi, b - 1) for (lo, hi), b in zip(padding, base_dilation)])
        padded.append(x)
    shape = core.get_aval(padded[0]).shape
    out_shape = window_shape(shape, window_dimensions, strides, window_dilation)
    nd, nk = len(shape), len(window_dimensions)
    arrays = []
    for d in range(nd):  # index of dimension d: out position * stride + offset * dilation
        o = np.arange(out_shape[d], dtype=np.int64) * strides[d]
        k = np.arange(window_dimensions[d], dtype=np.int64) * window_dilation[d]
        arrays.append((o.reshape((-1,) + (1,) * (nd - d - 1) + (1,) * nk)
                       + k.reshape((1,) * nd + (1,) * d + (-1,) + (1,) * (nk - d - 1))))
    full = out_shape + tuple(window_dimensions)
    arrays = [np.broadcast_to(a, full) for a in arrays]
    windows = [I.getitem(x, (I.ARRAY,) * nd, arrays) for x in padded]
    size = int(np.prod(window_dimensions, dtype=np.int64))
    windows = [S.reshape(w, tuple(out_shape) + (size,)) for w in windows]
    valid = None
    if any(lo or hi for lo, hi in padding) or any(b != 1 for b in base_dilation):
        # which window entries are the operand's (not padding or dilation holes): XLA's
        # reduce_window skips the others, which a fold (a computation that is no monoid)
        # must do too (folding the initial value in for them gave other numbers)
        with core.set_trace(core.EVAL_TRACE):
            ones = pad(np.ones(core.get_aval(xs[0]).shape, bool), np.False_,
                       [(lo, hi, b - 1) for (lo, hi), b in zip(padding, base_dilation)])
        valid = np.asarray(ones)[tuple(arrays)].reshape(tuple(out_shape) + (size,))
    return _general_reduce("reduce_window", windows, inits, computation, treedef,
                           (len(out_shape),), valid)


def _start_from(op, out, init, dtype):
    """``out`` combined with ``init`` (unless it is the identity), in ``dtype``."""
    if not _is_identity(op, init):
        out = _COMBINE[op](out, init)
    if core.get_aval(out).dtype != dtype:
        out = convert_element_type(out, dtype)
    return out


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None) -> tuple[int, ...]:
    """The shape ``reduce_window`` returns for these arguments (explicit padding pairs)."""
    nd = len(operand_shape)
    base_dilation = base_dilation or (1,) * nd
    window_dilation = window_dilation or (1,) * nd
    padded = [0 if n == 0 else 1 + b * (n - 1) + lo + hi
              for n, b, (lo, hi) in zip(operand_shape, base_dilation, padding)]
    return window_shape(padded, window_dimensions, window_strides, window_dilation)


def _tree_combine(fname, computation, treedef):
    """``computation`` on lists of leaves, elementwise over the leading axis (vmapped: JAX
    calls it on scalars), its output checked to be one leaf per operand."""
    from ..api.vectorization import vmap  # noqa: PLC0415

    def scalar(a, b):
        out = computation(tree_unflatten(treedef, list(a)), tree_unflatten(treedef, list(b)))
        leaves, out_tree = tree_flatten(out)
        if out_tree != treedef:
            raise ValueError(f"{fname} output must have the same tree structure as the "
                             f"operands {treedef} vs. {out_tree}"
                             + _tag(fname, "the computation returns one value per operand"))
        return leaves
    batched = vmap(scalar)
    return lambda a, b: list(batched(list(a), list(b)))


def _cols(x, start, stop, step):
    """``x[:, start:stop:step]``."""
    return I.getitem_p.bind(x, spec=(slice(None), slice(start, stop, step)))


def _user_stacklevel():
    """The ``stacklevel`` of ``warnings.warn`` (called by this function's caller) that
    names the innermost frame outside tangentia: the user's line."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and (frame.f_globals.get("__name__") or "").split(".")[0] \
            == "tangentia":
        frame, level = frame.f_back, level + 1
    return level


# Probe scalars per dtype kind: dyadic, so that add, mul, max and min are exact on them.
_FOLD_PROBES = {"f": (1.5, -2.0, 3.25), "c": (1.5 + 0.5j, -2.0, 3.25 - 1.0j), "i": (3, -2, 5),
                "u": (3, 2, 5), "b": (True, False, True)}


def _monoid_on_probes(computation, treedef, xs, inits):
    """Whether ``computation`` is associative, with the (concrete) ``inits`` as its
    identity, on three probe values of the operands' dtypes; None when it cannot be
    probed (it fails on them, or a dtype has no probes)."""
    dts = [np.dtype(core.get_aval(x).dtype) for x in xs]
    if any(d.kind not in _FOLD_PROBES for d in dts):
        return None

    def call(u, v):
        out = computation(tree_unflatten(treedef, list(u)), tree_unflatten(treedef, list(v)))
        return [np.asarray(o) for o in tree_flatten(out)[0]]

    def same(us, vs):
        return len(us) == len(vs) and all(
            u.shape == v.shape and bool(np.all(np.isclose(u, v, rtol=1e-9, atol=0,
                                                          equal_nan=True)))
            for u, v in zip(us, vs))

    a, b, c = ([np.asarray(_FOLD_PROBES[d.kind][k], d) for d in dts] for k in range(3))
    try:
        with core.set_trace(core.EVAL_TRACE), np.errstate(all="ignore"):
            if not same(call(call(a, b), c), call(a, call(b, c))):
                return False
            if not any(isinstance(i, core.Tracer) for i in inits):
                init = [np.asarray(i, d) for i, d in zip(inits, dts)]
                return same(call(init, a), a) and same(call(a, init), a)
    except Exception:  # noqa: BLE001  (a computation that refuses probes: not decided here)
        return None
    return True


def _general_reduce(fname, xs, inits, computation, treedef, axes, valid=None):
    """``xs`` reduced over ``axes`` by any associative ``computation`` of (a pytree of)
    scalars: adjacent pairs combined level by level (so the order of the operands is kept:
    no commutativity assumed; log2(n) vmapped calls), then ``init`` combined on the
    left, once.  Made of the computation's own operations, so it differentiates, batches
    and stages as they do.  ``valid`` (a concrete bool array of ``xs``'s shape, or None):
    the entries a fold takes; the others (reduce_window's padding) are skipped."""
    shape = core.get_aval(xs[0]).shape
    kept = [d for d in range(len(shape)) if d not in axes]
    out_shape = tuple(shape[d] for d in kept)
    n = int(np.prod([shape[d] for d in axes], dtype=np.int64))
    b = int(np.prod(out_shape, dtype=np.int64))
    perm = tuple(kept) + tuple(axes)
    flat = [S.reshape(S.transpose(x, perm) if perm != tuple(range(len(shape))) else x, (b, n))
            for x in xs]
    starts = [S.broadcast_to(convert_element_type(i, core.get_aval(x).dtype), (b,))
              for i, x in zip(inits, xs)]
    if n == 0 or b == 0:
        return [S.reshape(s_, out_shape) for s_ in starts]
    combine = _tree_combine(fname, computation, treedef)
    if _monoid_on_probes(computation, treedef, xs, inits) is False:
        # Not associative (or the initial value is not its identity): as XLA on the CPU
        # (JAX) for dimensions of at most 32, a fold from the initial value, left to right
        # in row-major order (the pairwise order below gave other numbers:
        # reduce([[1, 2, 3, 4], ...], 0., sub, (1,)) was 0 where JAX's is -10).
        from .control_flow import scan  # noqa: PLC0415  (control_flow imports this layer)
        cols = [S.transpose(x, (1, 0)) for x in flat]
        if valid is None or valid.all():
            out, _ = scan(lambda acc, col: (combine(acc, col), None), starts, cols)
        else:
            mask = np.ascontiguousarray(np.transpose(valid, perm).reshape(b, n).T)

            def step(acc, col_mask):
                col, m = col_mask
                new = combine(acc, col)
                return [E.select(m, nw, a) for nw, a in zip(new, acc)], None
            out, _ = scan(step, starts, (cols, mask))
        return [S.reshape(o, out_shape) for o in out]
    while n > 1:
        m = n // 2
        left = [S.reshape(_cols(x, 0, 2 * m, 2), (b * m,)) for x in flat]
        right = [S.reshape(_cols(x, 1, 2 * m, 2), (b * m,)) for x in flat]
        paired = [S.reshape(c, (b, m)) for c in combine(left, right)]
        if n % 2:
            paired = [S.concatenate([c, _cols(x, n - 1, n, 1)], 1)
                      for c, x in zip(paired, flat)]
        flat, n = paired, m + n % 2
    out = combine(starts, [S.reshape(x, (b,)) for x in flat])
    return [S.reshape(o, out_shape) for o in out]


def reduce(operands: Any, init_values: Any, computation: Callable[[Any, Any], Any],
           dimensions: Sequence[int], out_sharding: Any = None) -> Any:
    """Reduce ``operands`` over ``dimensions`` with ``computation`` starting from
    ``init_values`` (``jax.lax.reduce``).  One operand and a monoid (add, mul, max, min)
    use the reduction primitives; several operands (a pytree, ``computation`` taking and
    returning that structure) or any other associative computation of scalars are reduced
    pairwise by the computation itself.  ``out_sharding`` changes nothing (one device)."""
    fname = "reduce"
    xs, inits, treedef = _flat_operands(fname, operands, init_values)
    for i in inits:
        if core.get_aval(i).shape != ():
            raise ValueError(f"reduce found non-scalar initial value: "
                             f"{core.get_aval(i).shape}"
                             + _tag(fname, "each initial value is a scalar"))
    xs = [x if isinstance(x, core.Tracer) else np.asarray(x) for x in xs]
    shapes = {core.get_aval(x).shape for x in xs}
    if len(shapes) != 1:
        raise ValueError(f"reduce: the operands must have one shape, got {sorted(shapes)}"
                         + _tag(fname, "operands of one shape"))
    axes = tuple(sorted(_reduction_axes(fname, xs[0], dimensions)))
    if not axes:   # nothing reduced: XLA's (JAX's) result is the operands, without the inits
        return tree_unflatten(treedef, xs)
    op = None
    if len(xs) == 1:
        try:
            op = _monoid(fname, computation)
        except NotImplementedError:
            op = None
    kind = np.dtype(core.get_aval(xs[0]).dtype).kind
    if op is None and len(xs) == 1 and kind in "biu":
        bit = _bit_monoid(computation, kind)
        if bit is not None:
            return tree_unflatten(treedef, [_bit_reduce(bit, xs[0], inits[0], axes)])
    long = max(core.get_aval(xs[0]).shape[d] for d in axes)
    if long > 32 and _monoid_on_probes(computation, treedef, xs, inits) is False:
        warnings.warn(
            "lax.reduce: the computation is not associative, or init_values is not its "
            "identity; JAX's result is then undefined (XLA on the CPU reorders a reduction "
            f"over a dimension longer than 32, here {long}, and may apply the initial value "
            "several times). tangentia folds left to right from the initial value once, as "
            "XLA does for dimensions of at most 32.", stacklevel=_user_stacklevel())
    if op is None or (op in ("add", "mul") and kind == "b"):
        return tree_unflatten(treedef, _general_reduce(fname, xs, inits, computation,
                                                       treedef, axes))
    x, init = xs[0], inits[0]
    out = _REDUCERS[op](x, axes) if axes else x
    return tree_unflatten(treedef, [_start_from(op, out, init, core.get_aval(x).dtype)])
