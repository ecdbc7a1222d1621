"""Tensor contractions: ``dot_general`` (matmul, dot, tensordot, inner,
outer) and ``einsum``."""
from __future__ import annotations

import numpy as np

from .. import core, dtypes
from ..core import Primitive, ShapedArray
from ..interpreters.ad import Zero, add_any_p, is_undefined, primitive_jvps, primitive_transposes
from ..interpreters.base_ops import unbroadcast
from ..interpreters.batching import move_to_front, primitive_batchers
from . import structural as S

# ---------------------------------------------------------------------------
# dot_general: dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))
# Output layout: batch dims, then lhs free dims, then rhs free dims.
# ``precision`` (a parameter only when given: None or JAX's pair of lax.Precision values, or
# a DotAlgorithm) has no effect on the CPU; it is carried, as JAX's, unchanged into the
# products that derivatives and batching make, so a staged pullback shows what was asked.


def _free(nd, contract, batch):
    return tuple(i for i in range(nd) if i not in contract and i not in batch)


def _dot_general_impl(x, y, dimension_numbers, precision=None):
    (lc, rc), (lb, rb) = dimension_numbers
    x, y = np.asarray(x), np.asarray(y)   # (a Python scalar argument of a compiled remat body)
    xn, yn = x.ndim, y.ndim
    if not lb:
        if not lc:  # outer product
            return np.multiply(np.reshape(x, x.shape + (1,) * yn), y)
        if lc == (xn - 1,) and rc == ((0,) if yn == 1 else (yn - 2,)) and yn <= 2:
            return np.matmul(x, y)
        if xn <= 2 and yn <= 2 and len(lc) == 1:  # matrix/vector products, maybe transposed
            return np.matmul(x if lc[0] == xn - 1 else x.T, y if rc[0] == 0 else y.T)
        return np.tensordot(x, y, (lc, rc))
    lf = _free(xn, lc, lb)
    rf = _free(yn, rc, rb)
    xt = np.transpose(x, lb + lf + lc)
    yt = np.transpose(y, rb + rc + rf)
    bshape = xt.shape[:len(lb)]
    lfs = xt.shape[len(lb):len(lb) + len(lf)]
    rfs = yt.shape[len(rb) + len(rc):]
    k = int(np.prod(xt.shape[len(lb) + len(lf):], dtype=np.int64))
    m = int(np.prod(lfs, dtype=np.int64))
    n = int(np.prod(rfs, dtype=np.int64))
    if k == 1:  # batched outer products: broadcasting beats many tiny matmuls
        out = np.multiply(xt.reshape(bshape + (m, 1)), yt.reshape(bshape + (1, n)))
    else:
        out = np.matmul(xt.reshape(bshape + (m, k)), yt.reshape(bshape + (k, n)))
    return out.reshape(bshape + lfs + rfs)


def _dot_general_abstract_eval(x, y, dimension_numbers, precision=None):
    (lc, rc), (lb, rb) = dimension_numbers
    if len(lc) != len(rc) or any(x.shape[a] != y.shape[b] for a, b in zip(lc, rc)):
        raise TypeError(   # JAX's wording and type
            f"dot_general requires contracting dimensions to have the same shape, got "
            f"{tuple(x.shape[a] for a in lc)} and {tuple(y.shape[b] for b in rc)}: lhs shape "
            f"{x.shape} axes {lc}, rhs shape {y.shape} axes {rc}")
    if len(lb) != len(rb) or any(x.shape[a] != y.shape[b] for a, b in zip(lb, rb)):
        raise TypeError(
            f"dot_general requires lhs batch dimensions and rhs batch dimensions to have the "
            f"same shape, got {tuple(x.shape[a] for a in lb)} and "
            f"{tuple(y.shape[b] for b in rb)}: lhs shape {x.shape} axes {lb}, rhs shape "
            f"{y.shape} axes {rb}")
    shape = (tuple(x.shape[i] for i in lb) + tuple(x.shape[i] for i in _free(x.ndim, lc, lb))
             + tuple(y.shape[i] for i in _free(y.ndim, rc, rb)))
    dtype, weak = dtypes.result_type((x.dtype, x.weak_type), (y.dtype, y.weak_type))
    return ShapedArray(shape, dtype, weak)


dot_general_p = Primitive("dot_general")
dot_general_p.impl = _dot_general_impl
dot_general_p.abstract_eval = _dot_general_abstract_eval
# (run on a ValueError of the impl only: eager operands of unequal contracting sizes raised
# NumPy's matmul error, "Input operand 1 has a mismatch in its core dimension 0", where
# JAX's and the traced path's is this TypeError)
dot_general_p.check_args = lambda x, y, dimension_numbers, **_: _dot_general_abstract_eval(
    core.get_aval(x), core.get_aval(y), dimension_numbers)




def dot_general(x, y, dimension_numbers, precision=None):
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(int(i) for i in lc), tuple(int(i) for i in rc)),
          (tuple(int(i) for i in lb), tuple(int(i) for i in rb)))
    if precision is None:
        return dot_general_p.bind(x, y, dimension_numbers=dn)
    return dot_general_p.bind(x, y, dimension_numbers=dn, precision=precision)


def _dot_general_jvp(primals, tangents, **params):
    x, y = primals
    tx, ty = tangents
    ans = dot_general_p.bind(x, y, **params)
    t = None
    if type(tx) is not Zero:
        t = dot_general_p.bind(tx, y, **params)
    if type(ty) is not Zero:
        c = dot_general_p.bind(x, ty, **params)
        t = c if t is None else add_any_p.bind(t, c)
    return ans, (Zero.from_primal(ans) if t is None else t)


def _ranks(x):
    return x.aval.ndim if is_undefined(x) else core.get_aval(x).ndim


def _dot_transpose_lhs(ct, x_nd, y, dimension_numbers, swap=False, precision=None):
    """Cotangent of the lhs ``x`` of ``dot_general(x, y)`` (``swap``: of the rhs,
    with the dimension numbers swapped), in ``x``'s layout.

    Of the two operand orders, ``ct . y`` and ``y . ct``, the one whose result
    already has ``x``'s layout is used, so no transpose (and no
    Fortran-ordered result) is produced when one of them fits.
    """
    (lc, rc), (lb, rb) = dimension_numbers
    y_nd = core.get_aval(y).ndim
    nb = len(lb)
    xf = _free(x_nd, lc, lb)
    yf = _free(y_nd, rc, rb)
    if swap:
        ct_other_free = tuple(range(nb, nb + len(yf)))
    else:
        ct_other_free = tuple(range(nb + len(xf), nb + len(xf) + len(yf)))
    ct_batch = tuple(range(nb))
    contracted = [lc[rc.index(r)] for r in sorted(rc)]
    order_a = list(lb) + list(xf) + contracted  # ct . y: batch, x free, y's rc dims
    order_b = list(lb) + contracted + list(xf)  # y . ct: batch, y's rc dims, x free
    if order_b == sorted(order_b) and order_a != sorted(order_a):
        return dot_general(y, ct, ((yf, ct_other_free), (rb, ct_batch)), precision)
    res = dot_general(ct, y, ((ct_other_free, yf), (ct_batch, rb)), precision)
    perm = tuple(int(i) for i in np.argsort(order_a))
    return S.transpose(res, perm)


def _dot_general_transpose(ct, x, y, dimension_numbers, precision=None):
    (lc, rc), (lb, rb) = dimension_numbers
    if is_undefined(x) and is_undefined(y):
        raise TypeError("dot_general: both operands are linear (not a linear function)")
    if is_undefined(x):
        ctx = _dot_transpose_lhs(ct, x.aval.ndim, y, dimension_numbers, precision=precision)
        return _cast(ctx, x.aval), None
    swapped = ((rc, lc), (rb, lb))
    cty = _dot_transpose_lhs(ct, y.aval.ndim, x, swapped, swap=True, precision=precision)
    return None, _cast(cty, y.aval)


def _cast(x, aval):
    if core.get_aval(x).dtype != aval.dtype and dtypes.is_inexact(aval.dtype):
        return S.convert_element_type(x, aval.dtype)
    return x


def _dot_general_batch(args, dims, dimension_numbers, precision=None):
    x, y = args
    xd, yd = dims
    (lc, rc), (lb, rb) = dimension_numbers
    shift = lambda ds: tuple(i + 1 for i in ds)  # noqa: E731
    if xd is not None and yd is not None:
        x = move_to_front(x, xd)
        y = move_to_front(y, yd)
        dn = ((shift(lc), shift(rc)), ((0,) + shift(lb), (0,) + shift(rb)))
        return dot_general(x, y, dn, precision), 0
    # One operand batched: its batch axis stays where it is, a free axis of that
    # operand (no transpose, as JAX: vmap of a matvec is one matmul).
    nb = len(lb)
    if xd is not None:
        lc, lb, pos = _around_batch_axis(x, xd, lc, lb)
        return dot_general(x, y, ((lc, rc), (lb, rb)), precision), nb + pos
    rc, rb, pos = _around_batch_axis(y, yd, rc, rb)
    return (dot_general(x, y, ((lc, rc), (lb, rb)), precision),
            nb + len(_free(core.get_aval(x).ndim, lc, lb)) + pos)


def _around_batch_axis(v, d, contract, batch):
    """An operand's contracting and batch dimensions moved past its batch axis ``d``
    (which becomes a free axis), and the place of ``d`` among its free axes."""
    contract, batch = (tuple(i + (i >= d) for i in ds) for ds in (contract, batch))
    return contract, batch, _free(core.get_aval(v).ndim, contract, batch).index(d)


primitive_jvps[dot_general_p] = _dot_general_jvp
primitive_transposes[dot_general_p] = _dot_general_transpose
primitive_batchers[dot_general_p] = _dot_general_batch

# ---------------------------------------------------------------------------
# einsum (explicit subscripts only, e.g. "ij,jk->ik"; the numpy layer
# normalizes implicit mode and ellipses)

einsum_p = Primitive("einsum")


def _einsum_impl(*operands, subscripts):
    return np.einsum(subscripts, *operands, optimize=len(operands) > 2)


einsum_p.impl = _einsum_impl


def _parse(subscripts):
    ins, out = subscripts.split("->")
    return ins.split(","), out


def _einsum_abstract_eval(*ops, subscripts):
    ins, out = _parse(subscripts)
    if len(ins) != len(ops):
        raise ValueError(f"einsum: subscripts {subscripts!r} name {len(ins)} operands, got {len(ops)}")
    sizes = {}
    for s, a in zip(ins, ops):
        if len(s) != a.ndim:
            raise ValueError(f"einsum: subscript {s!r} does not match operand of shape {a.shape}")
        for c, d in zip(s, a.shape):
            if sizes.setdefault(c, d) != d and d != 1 and sizes[c] != 1:
                raise ValueError(f"einsum: index {c!r} has inconsistent sizes {sizes[c]} and {d}")
            sizes[c] = max(sizes[c], d)
    dtype, weak = dtypes.result_type(*[(a.dtype, a.weak_type) for a in ops])
    return ShapedArray(tuple(sizes[c] for c in out), dtype, weak)


einsum_p.abstract_eval = _einsum_abstract_eval


def einsum_explicit(subscripts, *operands):
    return einsum_p.bind(*operands, subscripts=subscripts)


def _einsum_jvp(primals, tangents, subscripts):
    ans = einsum_p.bind(*primals, subscripts=subscripts)
    t = None
    for i, ti in enumerate(tangents):
        if type(ti) is Zero:
            continue
        ops = list(primals)
        ops[i] = ti
        c = einsum_p.bind(*ops, subscripts=subscripts)
        t = c if t is None else add_any_p.bind(t, c)
    return ans, (Zero.from_primal(ans) if t is None else t)


_LETTERS = "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba"


def _einsum_transpose(ct, *ops, subscripts):
    ins, out = _parse(subscripts)
    lin = [i for i, o in enumerate(ops) if is_undefined(o)]
    if len(lin) != 1:
        raise TypeError("einsum: exactly one operand may be linear")
    k = lin[0]
    sk = ins[k]
    shape = ops[k].aval.shape
    # A repeated index (a diagonal, as in "ii->i") is transposed over its
    # distinct letters, and the result is then placed on that diagonal.
    uniq = "".join(dict.fromkeys(sk))
    ushape = tuple(shape[sk.index(c)] for c in uniq)
    others = [(s, o) for i, (s, o) in enumerate(zip(ins, ops)) if i != k]
    present = set(out).union(*[set(s) for s, _ in others]) if others else set(out)
    reduced = "".join(c for c in uniq if c in present)
    subs = ",".join([out] + [s for s, _ in others]) + "->" + reduced
    res = einsum_p.bind(ct, *[o for _, o in others], subscripts=subs)
    if reduced != uniq:
        kept_shape = tuple(d if c in present else 1 for c, d in zip(uniq, ushape))
        res = S.broadcast_to(S.reshape(res, kept_shape), ushape)
    if uniq != sk:
        fresh = (c for c in _LETTERS if c not in set(subscripts))
        target, eyes, eye_subs = "", [], []
        for i, c in enumerate(sk):
            if c in sk[:i]:
                z = next(fresh)
                target += z
                eyes.append(np.eye(shape[i], dtype=core.get_aval(res).dtype))
                eye_subs.append(c + z)
            else:
                target += c
        res = einsum_p.bind(res, *eyes, subscripts=",".join([uniq] + eye_subs) + "->" + target)
    res_shape = core.get_aval(res).shape
    if res_shape != shape:  # size-1 broadcasting inside einsum
        res = unbroadcast(res, ops[k].aval)
    cts = [None] * len(ops)
    cts[k] = _cast(res, ops[k].aval)
    return cts


def _einsum_batch(args, dims, subscripts):
    ins, out = _parse(subscripts)
    used = set(subscripts)
    letter = next(c for c in _LETTERS if c not in used)
    new_ops, new_ins = [], []
    for s, x, d in zip(ins, args, dims):
        if d is None:
            new_ops.append(x)
            new_ins.append(s)
        else:
            new_ops.append(move_to_front(x, d))
            new_ins.append(letter + s)
    subs = ",".join(new_ins) + "->" + letter + out
    return einsum_p.bind(*new_ops, subscripts=subs), 0


primitive_jvps[einsum_p] = _einsum_jvp
primitive_transposes[einsum_p] = _einsum_transpose
primitive_batchers[einsum_p] = _einsum_batch
