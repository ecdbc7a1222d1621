"""Products (``matmul``, ``dot``, ``tensordot``, ``einsum``, ``kron``, ``cross``,
...) and matrix structure (``diag``, ``diagonal``, ``trace``, ``tril``,
``triu``, ``vander``).  Decompositions and solvers are in ``linalg``."""
from __future__ import annotations

import builtins
import operator
from typing import TYPE_CHECKING

import numpy as _np

from ..primitives import contraction as _C
from ..primitives import elementwise as _E
from ..primitives import indexing as _I
from ..primitives import misc as _M
from ._constants import int64
from ._conversion import _in, astype
from ._elementwise import multiply, where
from ._indexing import flip
from ._reductions import sum
from ._shapes import (broadcast_arrays, broadcast_shapes, broadcast_to, concatenate, expand_dims,
                      moveaxis, ndim, ravel, reshape, shape, squeeze, stack)
from ._util import _aval, _axis, _no_out

if TYPE_CHECKING:
    from typing import Any
    from ..typing import Array, ArrayLike, DTypeLike


# ---------------------------------------------------------------------------
# Products


def _in_preferred(fn, preferred_element_type, *operands, **kwargs):
    """``fn(*operands, **kwargs)`` accumulated in and returned as
    ``preferred_element_type``, as JAX's products: operands that convert to it
    safely are converted first (int8 products sum in int32 without wrapping).
    ``precision`` has nothing to choose here: products are computed exactly in
    their dtype."""
    dt = _np.dtype(preferred_element_type)
    operands = [astype(o, dt) if _np.can_cast(_aval(o).dtype, dt, "safe") else o
                for o in operands]
    return astype(fn(*operands, **kwargs), dt)


def matmul(a: ArrayLike, b: ArrayLike, *, precision: Any = None,
           preferred_element_type: DTypeLike | None = None, out_sharding: Any = None) -> Array:
    """Matrix product with NumPy's rules for 1-D and batched operands (``out_sharding``
    changes nothing: one device)."""
    if preferred_element_type is not None:
        return _in_preferred(matmul, preferred_element_type, a, b)
    a_av, b_av = _aval(a), _aval(b)
    an, bn = a_av.ndim, b_av.ndim
    if an == 0 or bn == 0:
        raise ValueError("matmul: input operand does not have enough dimensions (scalars are "
                         "not allowed; use multiply)")
    if an == 1 and bn == 1:
        _check_contract("matmul", a_av.shape, b_av.shape, 0, 0)
        return _C.dot_general(a, b, (((0,), (0,)), ((), ())))
    if an == 1:
        return squeeze(matmul(reshape(a, (1,) + a_av.shape), b), -2)
    if bn == 1:
        _check_contract("matmul", a_av.shape, b_av.shape, an - 1, 0)
        return _C.dot_general(a, b, (((an - 1,), (0,)), ((), ())))
    _check_contract("matmul", a_av.shape, b_av.shape, an - 1, bn - 2)
    if an == 2 and bn == 2:
        return _C.dot_general(a, b, (((1,), (0,)), ((), ())))
    batch = broadcast_shapes(a_av.shape[:-2], b_av.shape[:-2])
    a = broadcast_to(a, batch + a_av.shape[-2:])
    b = broadcast_to(b, batch + b_av.shape[-2:])
    nb = len(batch)
    return _C.dot_general(a, b, (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb)))))


def _check_contract(fname, sa, sb, ia, ib):
    if sa[ia] != sb[ib]:   # JAX's wording and type
        raise TypeError(f"dot_general requires contracting dimensions to have the same shape, "
                        f"got ({sa[ia]},) and ({sb[ib]},): {fname}: shapes {sa} and {sb} are not "
                        f"aligned: dimension {ia} of the first ({sa[ia]}) != dimension {ib} of "
                        f"the second ({sb[ib]})")


def dot(a: ArrayLike, b: ArrayLike, *, precision: Any = None,
        preferred_element_type: DTypeLike | None = None, out_sharding: Any = None) -> Array:
    """Dot product (matmul up to rank 2, else sums a's last axis with b's second-to-last).
    ``out_sharding`` (JAX's layout of the result) changes nothing: one device here."""
    if preferred_element_type is not None:
        return _in_preferred(dot, preferred_element_type, a, b)
    a_av, b_av = _aval(a), _aval(b)
    if a_av.ndim == 0 or b_av.ndim == 0:
        return multiply(a, b)
    if b_av.ndim == 1 or (a_av.ndim <= 2 and b_av.ndim <= 2):
        return matmul(a, b)
    _check_contract("dot", a_av.shape, b_av.shape, a_av.ndim - 1, b_av.ndim - 2)
    return _C.dot_general(a, b, (((a_av.ndim - 1,), (b_av.ndim - 2,)), ((), ())))


def vdot(a: ArrayLike, b: ArrayLike, *, precision: Any = None,
         preferred_element_type: DTypeLike | None = None) -> Array:
    """Dot product of the flattened ``a`` and ``b``, conjugating ``a`` (as NumPy's)."""
    if _aval(a).dtype.kind == "c":
        a = _E.conj(a)
    return dot(ravel(a), ravel(b), preferred_element_type=preferred_element_type)


def inner(a: ArrayLike, b: ArrayLike, *, precision: Any = None,
          preferred_element_type: DTypeLike | None = None) -> Array:
    """Inner product: sum over the last axes of ``a`` and ``b``."""
    if preferred_element_type is not None:
        return _in_preferred(inner, preferred_element_type, a, b)
    a_av, b_av = _aval(a), _aval(b)
    if a_av.ndim == 0 or b_av.ndim == 0:
        return multiply(a, b)
    _check_contract("inner", a_av.shape, b_av.shape, a_av.ndim - 1, b_av.ndim - 1)
    return _C.dot_general(a, b, (((a_av.ndim - 1,), (b_av.ndim - 1,)), ((), ())))


def outer(a: ArrayLike, b: ArrayLike, out: None = None) -> Array:
    """Outer product of the flattened ``a`` and ``b`` (``out`` must be None)."""
    _no_out(out, "outer")
    return _C.dot_general(ravel(a), ravel(b), (((), ()), ((), ())))


def tensordot(a: ArrayLike, b: ArrayLike, axes: Any = 2, *, precision: Any = None,
              preferred_element_type: DTypeLike | None = None, out_sharding: Any = None
              ) -> Array:
    """Sum over the last ``axes`` axes of ``a`` and the first of ``b`` (or given axis pairs;
    ``out_sharding`` changes nothing: one device)."""
    if preferred_element_type is not None:
        return _in_preferred(tensordot, preferred_element_type, a, b, axes)
    a_av, b_av = _aval(a), _aval(b)
    if isinstance(axes, (int, _np.integer)):
        axes = operator.index(axes)
        if not 0 <= axes <= builtins.min(a_av.ndim, b_av.ndim):
            raise TypeError(f"Number of tensordot axes (axes {axes}) exceeds input ranks "
                            f"({a_av.shape} and {b_av.shape})")
        ca = tuple(range(a_av.ndim - axes, a_av.ndim))
        cb = tuple(range(axes))
    else:
        if not isinstance(axes, (list, tuple)) or len(axes) != 2:
            raise TypeError("tensordot axes argument must be an int, a pair of ints, or a pair "
                            f"of lists/tuples of ints, got {axes!r}.")
        ca, cb = axes
        if isinstance(ca, (int, _np.integer)) and isinstance(cb, (int, _np.integer)):
            ca, cb = (ca,), (cb,)
        elif isinstance(ca, (list, tuple)) and isinstance(cb, (list, tuple)):
            if len(ca) != len(cb):   # (zip would contract only the common prefix)
                raise TypeError(f"tensordot requires axes lists to have equal length, got "
                                f"{ca} and {cb}.")
        else:
            raise TypeError(f"tensordot requires both axes lists to be either ints, tuples or "
                            f"lists, got {ca} and {cb}")
        ca = tuple(_axis(i, a, "tensordot", "a") for i in ca)
        cb = tuple(_axis(i, b, "tensordot", "b") for i in cb)
    for i, j in zip(ca, cb):
        _check_contract("tensordot", a_av.shape, b_av.shape, i, j)
    return _C.dot_general(a, b, ((ca, cb), ((), ())))


def einsum(subscripts, *operands, out: None = None,
           optimize: str | bool | list[tuple[int, ...]] | None = None,
           precision: Any = None, preferred_element_type: DTypeLike | None = None,
           _dot_general: Any = None, out_sharding: Any = None) -> Array:
    """Einstein summation over explicit or implicit subscripts (with ``...``; ``out`` must
    be None)."""
    _no_out(out, "einsum")
    if _dot_general is not None and not (getattr(_dot_general, "__name__", None) == "dot_general"
                                         and _dot_general.__module__.startswith("tangentia.lax")):
        raise NotImplementedError(f"einsum: _dot_general={_dot_general!r} is not supported; "
                                  "only lax.dot_general (flax passes it by default)")
    if not isinstance(subscripts, str):
        subscripts, operands = _einsum_sublists((subscripts,) + operands)
    if preferred_element_type is not None:
        return _in_preferred(lambda *ops: einsum(subscripts, *ops), preferred_element_type,
                             *operands)
    subs = _normalize_einsum(subscripts.replace(" ", ""), [ndim(o) for o in operands])
    return _C.einsum_explicit(subs, *operands)


_EINSUM_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _einsum_sublists(args):
    """NumPy's (and JAX's) interleaved form ``einsum(op0, sublist0, op1, sublist1, ...,
    [sublist_out])`` as a subscripts string and the operands: axis labels are ints in
    [0, 52) (0-25 are 'A'-'Z', 26-51 'a'-'z', as NumPy's) or Ellipsis."""
    args = list(args)
    out = args.pop() if len(args) % 2 else None
    ops, subs = args[0::2], args[1::2]

    def letters(sub, what):
        if not isinstance(sub, (list, tuple)):
            raise TypeError(f"einsum: the subscripts must be a string or, in the interleaved "
                            f"form einsum(op0, sublist0, op1, sublist1, ...), lists of ints; "
                            f"got {type(sub).__name__} for {what}")
        text = ""
        for k in sub:
            if k is Ellipsis:
                text += "..."
            elif not isinstance(k, (int, _np.integer)) or isinstance(k, (bool, _np.bool_)):
                raise TypeError(f"einsum: each subscript must be either an integer or an "
                                f"ellipsis (NumPy's), got {k!r} in {what}")
            elif not 0 <= k < len(_EINSUM_LETTERS):
                raise ValueError(f"einsum: subscript is not within the valid range [0, 52) "
                                 f"(NumPy's), got {k} in {what}")
            else:
                text += _EINSUM_LETTERS[int(k)]
        return text
    spec = ",".join(letters(s, f"sublist {i}") for i, s in enumerate(subs))
    if out is not None:
        spec += "->" + letters(out, "the output sublist")
    return spec, tuple(ops)


def _normalize_einsum(subscripts, ranks):
    if "->" in subscripts:
        ins, out = subscripts.split("->")
        explicit = True
    else:
        ins, out, explicit = subscripts, "", False
    ins = ins.split(",")
    if len(ins) != len(ranks):
        raise ValueError(f"einsum: subscripts {subscripts!r} name {len(ins)} operands, "
                         f"got {len(ranks)}")
    used = set(subscripts)
    free_letters = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                    if c not in used]
    ell_n = 0
    for s, r in zip(ins, ranks):
        if "..." in s:
            ell_n = builtins.max(ell_n, r - (len(s) - 3))
    ell = "".join(free_letters[:ell_n])
    new_ins = []
    for s, r in zip(ins, ranks):
        if "..." in s:
            k = r - (len(s) - 3)
            s = s.replace("...", ell[ell_n - k:] if k else "")
        if len(s) != r:
            raise ValueError(f"einsum: subscript {s!r} does not match an operand of rank {r}")
        new_ins.append(s)
    if explicit:
        out = out.replace("...", ell)
    else:
        counts = {}
        for s in new_ins:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    return ",".join(new_ins) + "->" + out


def _core_dims(fname, signature, *args):
    """JAX's error for an operand with fewer axes than its core dimensions (matvec of two
    vectors returned their dot product, where JAX and NumPy raise)."""
    for k, (x, dims) in enumerate(zip(args, (("n", "m"), ("m",)) if fname == "matvec" else
                                      (("n",), ("n", "m")))):
        if _np.ndim(x) < len(dims):
            raise ValueError(f"input with shape {_np.shape(x)} does not have enough dimensions "
                             f"for all core dimensions {dims} on vectorized function with "
                             f"excluded=frozenset() and signature={signature!r} ({fname}: "
                             f"argument 'x{k + 1}' needs {len(dims)} or more axes)")


def matvec(x1: ArrayLike, x2: ArrayLike) -> Array:
    """Matrix-vector product over the last axes, broadcasting the others."""
    _core_dims("matvec", "(n,m),(m)->(n)", x1, x2)
    return matmul(x1, expand_dims(x2, -1))[..., 0]


def vecmat(x1: ArrayLike, x2: ArrayLike) -> Array:
    """Vector-matrix product over the last axes, broadcasting the others; the vector is
    conjugated, as in NumPy's and JAX's ``vecmat`` (``sum(conj(x1[..., :, None]) * x2, -2)``)."""
    _core_dims("vecmat", "(n),(n,m)->(m)", x1, x2)
    if _aval(x1).dtype.kind == "c":
        x1 = _E.conj(x1)
    return matmul(expand_dims(x1, -2), x2)[..., 0, :]


def vecdot(x1: ArrayLike, x2: ArrayLike, /, *, axis: int = -1, precision: Any = None,
           preferred_element_type: DTypeLike | None = None) -> Array:
    """Dot product of vectors along ``axis`` (conjugating ``x1``), broadcasting the other
    axes; ``preferred_element_type`` and ``precision`` as ``matmul``'s."""
    if preferred_element_type is not None:
        return _in_preferred(vecdot, preferred_element_type, x1, x2, axis=axis)
    x1 = _in(x1, "vecdot", "x1")
    x2 = _in(x2, "vecdot", "x2")
    a1, a2 = _axis(axis, x1, "vecdot", "x1"), _axis(axis, x2, "vecdot", "x2")
    if shape(x1)[a1] != shape(x2)[a2]:
        raise ValueError(f"vecdot: arguments 'x1' and 'x2' must have the same size along axis "
                         f"{axis}, got shapes {shape(x1)} and {shape(x2)}")
    if _aval(x1).dtype.kind == "c":  # conjugates x1, as NumPy's and JAX's
        x1 = _E.conj(x1)
    prods = _E.mul(moveaxis(x1, a1, -1), moveaxis(x2, a2, -1))
    return sum(prods, -1, dtype=_aval(prods).dtype)   # int8 stays int8, as NumPy's and JAX's


def kron(a: ArrayLike, b: ArrayLike) -> Array:
    """Kronecker product."""
    a = _in(a, "kron", "a")
    b = _in(b, "kron", "b")
    nd = builtins.max(ndim(a), ndim(b))
    sa = (1,) * (nd - ndim(a)) + shape(a)
    sb = (1,) * (nd - ndim(b)) + shape(b)
    ia, ib = [], []
    for x, y in zip(sa, sb):
        ia += [x, 1]
        ib += [1, y]
    out = _E.mul(reshape(a, tuple(ia)), reshape(b, tuple(ib)))
    return reshape(out, tuple(x * y for x, y in zip(sa, sb)))


def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None
          ) -> Array:
    """Cross product of 3-vectors (or 2-vectors) along the given axes, broadcasting."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a = _in(a, "cross", "a")
    b = _in(b, "cross", "b")
    a = moveaxis(a, _axis(axisa, a, "cross", "a"), -1)
    b = moveaxis(b, _axis(axisb, b, "cross", "b"), -1)
    na, nb = shape(a)[-1], shape(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(f"cross: incompatible dimensions for cross product (dimension must be 2 "
                         f"or 3), got {na} for argument 'a' and {nb} for argument 'b'")
    a0, a1 = a[..., 0], a[..., 1]
    b0, b1 = b[..., 0], b[..., 1]
    z = _E.sub(_E.mul(a0, b1), _E.mul(a1, b0))
    if na == 2 and nb == 2:
        return z
    zero = _np.zeros((), _aval(z).dtype)
    a2 = a[..., 2] if na == 3 else zero
    b2 = b[..., 2] if nb == 3 else zero
    x = _E.sub(_E.mul(a1, b2), _E.mul(a2, b1))
    y = _E.sub(_E.mul(a2, b0), _E.mul(a0, b2))
    x, y, z = broadcast_arrays(x, y, z)
    out = stack([x, y, z], -1)
    return moveaxis(out, -1, _axis(axisc, out, "cross", "c (the result)"))


# ---------------------------------------------------------------------------
# Diagonals and triangles


def diag(v: ArrayLike, k: int = 0) -> Array:
    """The ``k``-th diagonal of 2-D ``v``, or a 2-D array with 1-D ``v`` on that diagonal."""
    s = shape(v)
    if len(s) == 1:
        n = s[0] + builtins.abs(k)
        eye_k = _np.eye(n, k=k, dtype=bool)
        rows, cols = _np.nonzero(eye_k)
        z = _np.zeros((n, n), _aval(v).dtype)
        return _I.scatter(z, v, (_I.ARRAY, _I.ARRAY), (rows, cols), "set")
    return diagonal(v, k)


def diagflat(v: ArrayLike, k: int = 0) -> Array:
    """A 2-D array with the flattened ``v`` on its ``k``-th diagonal."""
    return diag(ravel(v), k)


def diagonal(a: ArrayLike, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array:
    """The ``offset`` diagonal of the ``axis1``/``axis2`` planes, as the last axis."""
    s = shape(a)
    n1, n2 = s[axis1], s[axis2]
    i = _np.arange(builtins.max(0, builtins.min(n1, n2 - offset) if offset >= 0
                                else builtins.min(n1 + offset, n2)))
    rows = i + builtins.max(0, -offset)
    cols = i + builtins.max(0, offset)
    a = moveaxis(a, (axis1, axis2), (-2, -1))
    return _I.getitem(a, (Ellipsis, _I.ARRAY, _I.ARRAY), (rows, cols))


def trace(a: ArrayLike, offset: int | ArrayLike = 0, axis1: int = 0, axis2: int = 1,
          dtype: DTypeLike | None = None, out: None = None) -> Array:
    """Sum along the diagonal with ``offset`` of the planes given by ``axis1`` and ``axis2``
    (accumulated in ``dtype`` if given, as NumPy's)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.trace is not supported. "
                                  "(trace: tangentia arrays are immutable)")
    nd = _np.ndim(a) if not hasattr(a, "shape") else len(a.shape)
    if nd >= 2 and operator.index(axis1) % nd == operator.index(axis2) % nd:
        raise ValueError(f"axis1 and axis2 can not be same. axis1={axis1} and axis2={axis2} "
                         "(trace)")
    return sum(diagonal(a, offset, axis1, axis2), -1, dtype)


def tril(m: ArrayLike, k: int = 0) -> Array:
    """Lower triangle of ``m`` (last two axes): entries above the ``k``-th diagonal zeroed."""
    s = shape(m)
    mask = _np.tri(s[-2], s[-1], k, dtype=bool)
    return where(mask, m, _np.zeros((), _aval(m).dtype))  # keeps m's dtype (also bool)


def triu(m: ArrayLike, k: int = 0) -> Array:
    """Upper triangle of ``m`` (last two axes): entries below the ``k``-th diagonal zeroed."""
    s = shape(m)
    mask = ~_np.tri(s[-2], s[-1], k - 1, dtype=bool)
    return where(mask, m, _np.zeros((), _aval(m).dtype))  # keeps m's dtype (also bool)


def vander(x: ArrayLike, N: int | None = None, increasing: bool = False) -> Array:
    """Vandermonde matrix (powers computed by exact cumulative products)."""
    x = _in(x, "vander", "x")
    if ndim(x) != 1:
        raise ValueError(f"vander: argument 'x' must be 1-D, got shape {shape(x)}")
    n = shape(x)[0]
    N = n if N is None else operator.index(N)
    if N < 0:
        raise ValueError(f"vander: argument 'N' must be non-negative, got {N}")
    dt = _np.promote_types(_aval(x).dtype, int64)
    x = astype(x, dt)
    if N == 0:
        return _np.zeros((n, 0), dt)
    cols = concatenate([_np.ones((n, 1), dt), broadcast_to(reshape(x, (n, 1)), (n, N - 1))], 1)
    out = _M.cumprod(cols, 1)
    return out if increasing else flip(out, 1)
