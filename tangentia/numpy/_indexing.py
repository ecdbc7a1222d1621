"""Indexing: NumPy's ``x[idx]`` and functional updates (``x.at[idx].set(v)``),
``take``, reordering by index (``flip``, ``roll``, ``rot90``, ``delete``), the
indices of nonzero entries, and NumPy's index helpers (``ix_``, ``tril_indices``...)."""
from __future__ import annotations

import builtins
import functools
import math
import operator
from typing import TYPE_CHECKING

import numpy as _np

from .. import core as _core
from .._array import to_user as _to_user
from .. import dtypes as _dtypes
from ..interpreters.ad import JVPTracer as _JVPTracer
from ..interpreters.batching import BatchTracer as _BatchTracer
from ..primitives import elementwise as _E
from ..primitives import reductions as _R
from ..primitives import indexing as _I
from ..primitives import sorting as _SO
from ..primitives import structural as _S
from ._constants import int64
from ._conversion import _in, asarray, astype, copy
from ._shapes import concatenate, ndim, ravel, reshape, shape, transpose
from ._util import _aval, _axes, _axis, _concrete, _eager, _flat_seq, _is_int_scalar, \
    _is_tracer, _value_dependent

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any
    from ..typing import Array, ArrayLike, DTypeLike


# ---------------------------------------------------------------------------
# x[idx] and x.at[idx]


def _getitem(x, idx):
    """NumPy indexing: basic slicing, integer arrays, and concrete boolean masks."""
    expanded = _scalar_bools(x, idx)
    if expanded is not None:
        x, idx = expanded
    spec, arrays = _parse_index(x, idx, "indexing")
    try:
        return _take(x, spec, arrays, clamp=_staged(arrays))
    except IndexError as err:   # NumPy's, from a transformation's own indexing
        if isinstance(err, _core.JAXIndexError):
            raise
        found = _out_of_bounds(spec, arrays, _aval(x).shape)
        head = (str(err) + " (the axis counts the batch axes vmap added)" if found is None
                else f"index {found[0]} is out of bounds for axis {found[1]} with size "
                f"{found[2]}")
        raise _core.JAXIndexError(
            f"{head} (tangentia: the index {_index_str(idx)} into an array of shape "
            f"{_aval(x).shape}; where JAX clamps an out-of-bounds index into range, "
            "tangentia raises when the index is known: clip it (tnp.clip) or use "
            "x.at[...].get(mode='clip') or mode='fill')") from None


def _staged(arrays):
    """Whether an index array's values are unknown until a staged program runs (traced
    under jit, or in a loop's or a branch's body): such an index is clamped into its
    axis as JAX's, since libraries written for JAX read one past the end and discard
    the value (diffrax's saved times); a known index out of bounds raises NumPy's
    IndexError, eagerly and under eager grad or vmap."""
    for a in arrays:
        while True:     # (eager vmap and grad hold the values: look through them)
            if isinstance(a, _BatchTracer):
                a = a.val
            elif isinstance(a, _JVPTracer):
                a = a.primal
            else:
                break
        if _is_tracer(a):
            try:
                a.concrete_value("indexing")
            except _core.ConcretizationTypeError:
                return True
    return False


def _take(x, spec, arrays, unique_indices=False, indices_are_sorted=False, clamp=False):
    if not arrays and not _is_tracer(x):
        return _np.asarray(x)[_I.build_index(spec, ())]
    return _I.getitem(x, spec, arrays, unique_indices, indices_are_sorted, clamp)


class _IndexTypeError(_core.JAXIndexError, TypeError):
    """An index of the wrong type: JAX's TypeError, and NumPy's IndexError."""


def _has_tracer(e):
    return _is_tracer(e) or (isinstance(e, (list, tuple))
                             and builtins.any(_is_tracer(v) for v in _flat_seq(e)))


_PLAIN_ENTRIES = frozenset([int, slice, type(None), type(Ellipsis), list])


def _is_scalar_bool(e):
    if type(e) in _PLAIN_ENTRIES:   # the common entries, decided fast
        return False
    if isinstance(e, (bool, _np.bool_)):
        return True
    return (isinstance(e, _np.ndarray) or _is_tracer(e)) and _aval(e).ndim == 0 and \
        _aval(e).dtype == _dtypes.bool_


def _axes_consumed(e):
    """How many axes of the indexed array the index entry ``e`` consumes."""
    if e is None or e is Ellipsis or _is_scalar_bool(e):
        return 0
    if isinstance(e, (list, tuple)) and not _has_tracer(e):
        e = _np.asarray(e)
    if (isinstance(e, _np.ndarray) or _is_tracer(e)) and _aval(e).dtype == _dtypes.bool_:
        return _aval(e).ndim
    return 1


def _scalar_bools(x, idx):
    """NumPy's scalar boolean indices (``x[True]``, ``x[0, ..., False]``) rewritten:
    each consumes no axis and adds one of length 1 (True) or 0 (False) that takes
    part in advanced indexing, which is ``x`` with a new length-1 axis there,
    indexed by an integer array of length 1 or 0.  Returns ``(x, idx)`` so
    rewritten, or None when ``idx`` has no scalar boolean."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    for e in idx:
        if _is_scalar_bool(e):
            break
    else:
        return None
    shape = list(_aval(x).shape)
    rest = len(shape) - builtins.sum(_axes_consumed(e) for e in idx)
    out, pos = [], 0
    for e in idx:
        if _is_scalar_bool(e):
            shape.insert(pos, 1)
            e = _np.zeros(int(bool(_concrete_mask(e, "indexing"))), _np.intp)
        pos += rest if e is Ellipsis else _axes_consumed(e)
        out.append(e)
    return reshape(x, tuple(shape)), tuple(out)


def _concrete_mask(e, fname):
    try:
        return _np.asarray(_concrete(e, fname, "boolean mask"))
    except _core.ConcretizationTypeError:
        a = _aval(e)
        raise _core.NonConcreteBooleanIndexError(
            f"Array boolean indices must be concrete; got {a.str_short()}. "
            f"{fname}: a boolean mask index of shape {a.shape} is traced, so the "
            "shape of the result is unknown. Boolean masks work outside jit/vmap; "
            "inside them use tnp.where(mask, x, other) or a fixed-size "
            "integer index instead.") from None


def _slice_bound(v, e, fname):
    if v is None:
        return None
    if _is_tracer(v):
        try:
            v = v.concrete_value(fname)
        except _core.ConcretizationTypeError:
            raise _core.JAXIndexError(
                "Array slice indices must have static start/stop/step to be used with NumPy "
                f"indexing syntax. Found {e}. (tangentia: {fname}: a slice's bounds set the "
                "shape of the result, so they cannot be traced; for a window of fixed size at "
                "a traced position use tangentia.lax.dynamic_slice or "
                "dynamic_update_slice.)") from None
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"slice indices must be integers or None or have an __index__ method "
                        f"(tangentia: {fname}: got the slice {e})") from None


def _bad_index(e, pos, fname):
    if isinstance(e, str):
        return _IndexTypeError(f"JAX does not support string indexing; got idx={e!r} "
                         f"(tangentia: {fname}: index entry {pos})")
    dt = getattr(e, "dtype", None) or type(e).__name__
    return _IndexTypeError(
        f"Indexer must have integer or boolean type, got indexer with type {dt} at position "
        f"{pos}, indexer value {e!r:.60} (tangentia: {fname}: indices must be integers, "
        "slices, None, Ellipsis or boolean masks)")


def _parse_index(x, idx, fname):
    """``idx`` (without scalar booleans: ``_scalar_bools`` rewrote them) as the
    ``(spec, arrays)`` of ``getitem``/``scatter``."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    shape = _aval(x).shape
    spec = []
    arrays = []
    for pos, e in enumerate(idx):
        if e is None or e is Ellipsis:
            spec.append(e)
        elif isinstance(e, slice):
            spec.append(slice(*(_slice_bound(v, e, fname) for v in (e.start, e.stop, e.step))))
        elif _is_int_scalar(e):
            spec.append(int(e))
        else:
            if _has_tracer(e):
                e = asarray(e)
            else:
                if isinstance(e, str):
                    raise _bad_index(e, pos, fname)
                e = _np.asarray(e)
                if e.dtype == object:
                    raise _bad_index(e, pos, fname)
            a = _aval(e)
            if a.dtype == _dtypes.bool_:
                mask = _concrete_mask(e, fname)
                axis = _axes_before(spec, len(shape), idx[pos:])
                want = shape[axis:axis + mask.ndim]
                if mask.shape != want:
                    raise _core.JAXIndexError(
                        f"boolean index did not match shape of indexed array in index {pos}: "
                        f"got {mask.shape}, expected {want} (tangentia: {fname}: an array of "
                        f"shape {shape})")
                for nz in _np.nonzero(mask):
                    spec.append(_I.ARRAY)
                    arrays.append(nz)
                continue
            if a.dtype.kind not in "iu":
                raise _bad_index(e, pos, fname)
            if a.ndim == 0 and not _is_tracer(e):
                spec.append(int(e))
                continue
            spec.append(_I.ARRAY)
            arrays.append(e)
    if builtins.sum(1 for s in spec if s is Ellipsis) > 1:
        raise IndexError(f"{fname}: an index can only have a single ellipsis ('...')")
    if arrays:
        new_spec = []
        extra = []
        it = iter(arrays)
        for s in spec:
            if s is _I.ARRAY:
                new_spec.append(_I.ARRAY)
                extra.append(next(it))
            elif _is_int_scalar(s):
                new_spec.append(_I.ARRAY)
                extra.append(_np.asarray(s))
            else:
                new_spec.append(s)
        spec, arrays = new_spec, extra
    nd = len(shape)
    consumed = builtins.sum(1 for s in spec if s is not None and s is not Ellipsis)
    if consumed > nd:
        raise IndexError(f"Too many indices: {nd}-dimensional array indexed with {consumed} "
                         f"regular {'index' if consumed == 1 else 'indices'}. (tangentia: "
                         f"{fname}: too many indices for an array of shape {shape})")
    if 0 in shape:  # an integer index into an empty axis has no entry to take
        _check_empty_axes(spec, arrays, shape, fname)
    return tuple(spec), tuple(arrays)


def _check_empty_axes(spec, arrays, shape, fname):
    """JAX's error for an integer index, or a nonempty index array, into an axis of size 0."""
    arrays = iter(arrays)
    for s, axis, n in _indexed_axes(spec, shape):
        a = next(arrays) if s is _I.ARRAY else None
        if n == 0 and (_is_int_scalar(s) or (a is not None and _aval(a).size)):
            what = (f"the index {s}" if a is None else
                    f"the index {_np.asarray(a).ravel()[0]}" if not _is_tracer(a) else
                    f"a traced index array {_aval(a).str_short()}")
            raise _core.JAXIndexError(
                f"index is out of bounds for axis {axis} with size 0 (tangentia: {fname}: "
                f"{what} into axis {axis} of an array of shape {shape}, which has no entry "
                "to take)")


def _out_of_bounds(spec, arrays, shape):
    """(index, axis, axis size) of the first concrete integer index of the parsed
    ``spec`` out of its axis's bounds, or None (for messages: runs on errors only)."""
    arrays = iter(arrays)
    for s, axis, n in _indexed_axes(spec, shape):
        if s is _I.ARRAY:
            a = next(arrays)
            if _is_tracer(a):
                continue
            a = _np.asarray(a).ravel()
            bad = a[(a < -n) | (a >= n)]
            if bad.size:
                return int(bad[0]), axis, n
        elif _is_int_scalar(s) and not -n <= s < n:
            return int(s), axis, n
    return None


def _index_str(idx):
    """An index as written: ``[1, 7]`` or ``[..., 0]`` (arrays as their type)."""
    def one(e):
        if isinstance(e, slice):
            return ":".join("" if v is None else str(v) for v in (e.start, e.stop, e.step)
                            ).rstrip(":") or ":"
        if e is Ellipsis:
            return "..."
        if _is_tracer(e):
            return f"<traced {_aval(e).str_short()}>"
        if hasattr(e, "shape") and _np.ndim(e):
            return f"<{_aval(e).str_short()} array>" if hasattr(e, "dtype") else repr(e)
        return repr(e) if not hasattr(e, "item") else repr(e.item())
    return "[" + ", ".join(one(e) for e in (idx if isinstance(idx, tuple) else (idx,))) + "]"


def _axes_before(spec, nd, rest):
    """The axis of an array of ``nd`` axes that the next index entry indexes, after
    the parsed entries ``spec`` (``rest``: the entries still to parse)."""
    axis = 0
    for s in spec:
        if s is Ellipsis:
            axis += nd - builtins.sum(1 for t in spec if t is not None and t is not Ellipsis) \
                - builtins.sum(_axes_consumed(e) for e in rest)
        elif s is not None:
            axis += 1
    return axis


# JAX's ``mode`` of ``x.at[idx]`` methods -> what an out-of-bounds index does:
# a gather clamps it ("clip") or reads a fill value ("fill"); a scatter clamps
# it or drops its update ("drop").  Defaults as in JAX: get clamps, scatters drop.
_GATHER_MODES = {None: "clip", "promise_in_bounds": "clip", "clip": "clip", "fill": "fill",
                 "drop": "fill"}
_SCATTER_MODES = {None: "drop", "promise_in_bounds": "drop", "clip": "clip", "fill": "drop",
                  "drop": "drop"}


def _mode(mode, table, method):
    how = table.get(getattr(mode, "name", mode).lower() if mode is not None else None, "?")
    if how == "?":
        raise ValueError(
            f'Unknown gather mode "{mode}" (tangentia: x.at[...].{method}: argument \'mode\' '
            'must be None, "clip", "fill", "drop" or "promise_in_bounds")')
    return how


def _bounded_index(x, index, fname, how, wrap_negative):
    """``index`` into ``x`` parsed, with out-of-bounds integer indices handled
    as ``how`` says: "clip" clamps them into their axis.  "fill" and "drop"
    also return ``ok``: when every index is a scalar (one target, so no two
    updates collide), indices are clamped and ``ok`` says whether the target
    is in bounds (True when known to be); otherwise ``ok`` is True and
    ``pads`` lists the axes whose out-of-bounds indices were sent one past
    the end (the caller pads those axes with a scratch slot).

    Returns ``(spec, arrays, pads, ok)``."""
    spec, arrays = _parse_index(x, index, fname)
    shape = _aval(x).shape
    entries = _indexed_axes(spec, shape)
    if not arrays:  # static integers and slices only
        ints = [(s, n) for s, _, n in entries if _is_int_scalar(s)]
        if builtins.all((-n if wrap_negative else 0) <= s < n for s, n in ints):
            return spec, (), [], True
        arrays = tuple(_np.asarray(s) for s, _ in ints)
        spec = tuple(_I.ARRAY if _is_int_scalar(s) else s for s in spec)
        entries = _indexed_axes(spec, shape)
    scalar = builtins.all(_aval(e).ndim == 0 for e in arrays)
    out, pads, ok = [], [], True
    for e, (axis, n) in zip(arrays, [(a, n) for s, a, n in entries if s is _I.ARRAY]):
        e = _I.wide_enough(e, n)
        if _is_tracer(e):
            if wrap_negative:
                e = _E.select(_E.lt(e, 0), _E.add(e, n), e)
            bad = _E.select(_E.lt(e, 0), True, _E.ge(e, n))
        else:
            if wrap_negative:
                e = _np.where(e < 0, e + n, e)
            bad = (e < 0) | (e >= n)
            if not bad.any():
                out.append(e)
                continue
        if how == "clip" or scalar:
            e = _E.minimum(_E.maximum(e, 0), n - 1)
            if how != "clip":
                ok = (ok and not bad) if not (_is_tracer(ok) or _is_tracer(bad)) else \
                    _E.select(bad, False, ok)
        else:
            e = _E.select(bad, n, e)
            pads.append(axis)
        out.append(e)
    return spec, tuple(out), pads, ok


def _indexed_axes(spec, shape):
    """(entry, axis, axis size) of each entry of ``spec`` that indexes an axis."""
    consumed = builtins.sum(1 for s in spec if s is not None and s is not Ellipsis)
    axis, out = 0, []
    for s in spec:
        if s is Ellipsis:
            axis += len(shape) - consumed
        elif s is not None:
            out.append((s, axis, shape[axis]))
            axis += 1
    return out


def _pad(x, axes, value):
    """``x`` with one more slot holding ``value`` at the end of each of ``axes``."""
    for a in axes:
        shape = list(_aval(x).shape)
        shape[a] = 1
        x = _S.concatenate([x, _S.broadcast_to(_S.convert_element_type(
            _np.asarray(value), _aval(x).dtype), tuple(shape))], a)
    return x


def _unpad(x, axes, shape):
    for a in axes:
        x = _I.static_slice(x, a, 0, shape[a])
    return x


def _fill_value(dtype, fill_value):
    """JAX's default fill of out-of-bounds reads: NaN, the most negative signed
    integer, the largest unsigned integer, True."""
    if fill_value is not None:
        return fill_value
    if _dtypes.is_key(dtype):       # (typed PRNG keys: JAX's data, both words 2**32 - 1)
        out = _np.empty((), dtype)
        out[_dtypes.KEY_FIELD] = _np.iinfo(_np.uint32).max
        return out
    if _dtypes.is_inexact(dtype):   # (bfloat16 too)
        return _np.nan
    if dtype.kind == "b":
        return True
    return _dtypes.iinfo(dtype).min if _dtypes.kind(dtype) == "i" else _dtypes.iinfo(dtype).max


def _user(out):
    """A result of ``x.at[...]``: an eager one is handed to the user as ``ArrayImpl``."""
    return _to_user(out) if _core.is_eager() else out


_APPLY_ROUNDS = 64   # the most entries of a traced index with repeats that apply() takes


class _IndexUpdateHelper:
    """``x.at[idx]`` returns an object with JAX's ``get``, ``set``, ``add``,
    ``subtract``, ``multiply``/``mul``, ``divide``, ``power``, ``min``, ``max``
    and ``apply``: each returns a new array (``x`` is unchanged).

    Keyword arguments are JAX's: ``mode`` says what an out-of-bounds index does
    (``get``: clamped by default or with "clip"/"promise_in_bounds", a
    ``fill_value`` read with "fill"/"drop"; updates: dropped by default or with
    "drop"/"fill"/"promise_in_bounds", as XLA's scatter, clamped with "clip");
    ``wrap_negative_indices=False`` makes negative indices out of bounds;
    ``unique_indices=True`` promises that no entry is addressed twice (unchecked:
    derivatives then take the fast path, and the derivative of ``multiply`` or
    ``divide`` with respect to the values, which repeats would make wrong, is
    allowed with a traced index); ``indices_are_sorted`` is a hint, accepted.
    """

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, idx):
        return _IndexUpdateRef(self.array, idx)


class _IndexUpdateRef:
    __slots__ = ("array", "index", "shape")

    def __init__(self, array, index):
        self.shape = None   # set when a scalar boolean index adds axes to ``array``
        expanded = _scalar_bools(array, index)
        if expanded is not None:
            self.shape = _aval(array).shape
            array, index = expanded
        self.array = array
        self.index = index

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def _out(self, out):
        """An updated array handed back: without the axes scalar booleans added."""
        return _user(out if self.shape is None else reshape(out, self.shape))

    def _scatter(self, values, op, method, mode, wrap_negative_indices, unique_indices=False,
                 indices_are_sorted=False):
        x = self.array
        hints = dict(unique_indices=unique_indices, indices_are_sorted=indices_are_sorted)
        how = _mode(mode, _SCATTER_MODES, method)
        spec, arrays, pads, ok = _bounded_index(x, self.index, f"at[...].{method}", how,
                                                wrap_negative_indices)
        if ok is not True:  # one target, maybe out of bounds: then the update keeps x
            if not _is_tracer(ok) and not ok:
                return copy(_in(x, f"at[...].{method}", "x"))
            keep = _take(x, spec, arrays) if op in ("set", "min", "max") else (
                0 if op == "add" else 1)
            values = _E.select(ok, values, keep)
        if pads:
            shape = _aval(x).shape
            out = _I.scatter(_pad(x, pads, 0), values, spec, arrays, op, **hints)
            return _unpad(out, pads, shape)
        return _I.scatter(x, values, spec, arrays, op, **hints)

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None,
            fill_value=None, wrap_negative_indices=True, out_sharding=None):
        """``x[idx]``, with JAX's handling of out-of-bounds indices (``mode``)."""
        x = self.array
        how = _mode(mode, _GATHER_MODES, "get")
        spec, arrays, pads, ok = _bounded_index(x, self.index, "at[...].get", how,
                                                wrap_negative_indices)
        if how == "fill":
            fill = _fill_value(_aval(x).dtype, fill_value)
            x = _pad(x, pads, fill)
        out = _take(x, spec, arrays, unique_indices, indices_are_sorted)
        if ok is not True:
            out = _E.select(ok, out, _S.convert_element_type(_np.asarray(fill), _aval(out).dtype))
        return _user(out if _is_tracer(out) else _np.asarray(out))  # JAX: an array, not a scalar

    def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            wrap_negative_indices=True, out_sharding=None):
        """``x`` with ``x[idx] = values``."""
        return self._out(self._scatter(values, "set", "set", mode, wrap_negative_indices,
                                       unique_indices, indices_are_sorted))

    def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            wrap_negative_indices=True, out_sharding=None):
        """``x`` with ``x[idx] += values`` (repeated indices accumulate)."""
        return self._out(self._scatter(values, "add", "add", mode, wrap_negative_indices,
                                       unique_indices, indices_are_sorted))

    def subtract(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
                 wrap_negative_indices=True, out_sharding=None):
        """``x`` with ``x[idx] -= values``."""
        return self._out(self._scatter(_E.neg(values), "add", "subtract", mode,
                                       wrap_negative_indices, unique_indices,
                                       indices_are_sorted))

    def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
                 wrap_negative_indices=True, out_sharding=None):
        """``x`` with ``x[idx] *= values``."""
        return self._out(self._scatter(values, "mul", "multiply", mode, wrap_negative_indices,
                                       unique_indices, indices_are_sorted))

    mul = multiply

    def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               wrap_negative_indices=True, out_sharding=None):
        """``x`` with ``x[idx] /= values``."""
        ones = _S.broadcast_to(_np.ones((), _aval(self.array).dtype), _aval(self.array).shape)
        denominator = _IndexUpdateRef(ones, self.index)._scatter(
            values, "mul", "divide", mode, wrap_negative_indices, unique_indices,
            indices_are_sorted)
        return self._out(_E.div(self.array, denominator))  # JAX's x / (1 *= values at idx)

    def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            wrap_negative_indices=True, out_sharding=None):
        """``x`` with ``x[idx] = minimum(x[idx], values)``."""
        return self._out(self._scatter(values, "min", "min", mode, wrap_negative_indices,
                                       unique_indices, indices_are_sorted))

    def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            wrap_negative_indices=True, out_sharding=None):
        """``x`` with ``x[idx] = maximum(x[idx], values)``."""
        return self._out(self._scatter(values, "max", "max", mode, wrap_negative_indices,
                                       unique_indices, indices_are_sorted))

    def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
              wrap_negative_indices=True):
        """``x`` with ``x[idx] **= values`` (a repeated index raises to each of its values in
        turn: ``x ** (1 *= values at idx)``, JAX's)."""
        ones = _S.broadcast_to(_np.ones((), _aval(self.array).dtype), _aval(self.array).shape)
        exponent = _IndexUpdateRef(ones, self.index)._scatter(
            values, "mul", "power", mode, wrap_negative_indices, unique_indices,
            indices_are_sorted)
        return self._out(_E.power(self.array, exponent))

    def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None,
              wrap_negative_indices=True):
        """``x`` with the unary function ``func`` applied at ``idx``, once per
        occurrence of an index (as ``numpy.ufunc.at`` and JAX).  A traced index
        with repeats is applied in as many rounds as it has entries, so it may
        have at most 64 (``unique_indices=True`` says there are no repeats)."""
        x = self.array
        how = _mode(mode, _SCATTER_MODES, "apply")
        spec, arrays, pads, ok = _bounded_index(x, self.index, "at[...].apply", how,
                                                wrap_negative_indices)
        if unique_indices or builtins.all(_aval(e).ndim == 0 for e in arrays):
            hints = dict(unique_indices=unique_indices, indices_are_sorted=indices_are_sorted)
            return self.set(func(self.get(mode="clip", wrap_negative_indices=wrap_negative_indices,
                                          **hints)),
                            mode=mode, wrap_negative_indices=wrap_negative_indices, **hints)
        shape = _aval(x).shape
        counts = _np.zeros([n + (a in pads) for a, n in enumerate(shape)], _np.int64)
        if builtins.any(_is_tracer(e) for e in arrays):
            rounds = _np.broadcast_shapes(*(_aval(e).shape for e in arrays))
            rounds = int(_np.prod(rounds))
            if rounds > _APPLY_ROUNDS:
                raise _core.ConcretizationTypeError(
                    f"at[...].apply: the index arrays are traced and have {rounds} entries, so "
                    f"how often each index repeats is unknown (at most {_APPLY_ROUNDS} are "
                    "applied in rounds); pass unique_indices=True if no index repeats, or use "
                    "a concrete index")
            times = _unpad(_I.scatter(counts, _np.ones((), _np.int64), spec, arrays, "add"),
                           pads, shape)
        else:
            _np.add.at(counts, _I.build_index(spec, arrays), 1)
            times = counts[tuple(slice(0, n) for n in shape)]
            rounds = int(times.max(initial=0))
        for k in range(rounds):
            x = _E.select(_E.lt(k, times), func(x), x)
        return self._out(x)


def at(x) -> Any:
    """Functional index updates on any array: ``tnp.at(x)[idx].set(v)``.

    Equivalent to ``x.at[idx].set(v)`` on traced values, for plain NumPy arrays
    (which have no ``.at``).  Returns a new array; ``x`` is not modified.
    """
    return _IndexUpdateHelper(x)


# ---------------------------------------------------------------------------
# Taking entries


def take(a: ArrayLike, indices: ArrayLike, axis: int | None = None, out: None = None,
         mode: str | None = None, unique_indices: bool = False, indices_are_sorted: bool = False,
         fill_value: Any | None = None) -> Array:
    """Entries at ``indices`` along ``axis`` (of the flattened array if None).

    Out-of-bounds indices follow JAX's ``mode``: ``"fill"`` (the default: negative indices
    count from the end once, the rest give ``fill_value``, by default NaN, the most negative
    integer, the largest unsigned one or True), ``"clip"`` (clipped to ``[0, n - 1]``) or
    ``"wrap"`` (taken modulo ``n``)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.take is not supported.")
    if mode not in (None, "fill", "clip", "wrap"):   # (promise_in_bounds too: JAX 0.10.2's)
        raise ValueError(f"Invalid mode '{mode}' for np.take (tangentia.numpy.take: argument "
                         "'mode' must be one of None, 'fill', 'clip', 'wrap')")
    if axis is None:
        a = ravel(a)
        axis = 0
    nd = ndim(a)
    axis = _axis(axis, a, "take")
    idx = asarray(indices) if not _is_tracer(indices) else indices
    n = shape(a)[axis]
    idx = _I.wide_enough(idx, n)
    spec = (slice(None),) * axis + (_I.ARRAY,)
    hints = (unique_indices, indices_are_sorted)
    if n == 0 and math.prod(shape(idx)) > 0:   # JAX's error (no entry to take, in any mode)
        raise IndexError(f"Cannot do a non-empty jnp.take() from an empty axis. (take: axis "
                         f"{axis} of argument 'a' of shape {shape(a)} is empty)")
    if n == 0:
        return _I.getitem(a, spec, (idx,), *hints)
    if mode == "wrap":
        return _I.getitem(a, spec, (_E.remainder(idx, n),), *hints)
    if mode == "clip":
        return _I.getitem(a, spec, (_E.minimum(_E.maximum(idx, 0), n - 1),), *hints)
    idx = _E.select(_E.lt(idx, 0), _E.add(idx, n), idx)
    valid = _E.and_p.bind(_E.ge(idx, 0), _E.lt(idx, n))
    got = _I.getitem(a, spec, (_E.select(valid, idx, 0),), *hints)
    dt = _aval(a).dtype
    valid = reshape(valid, (1,) * axis + shape(idx) + (1,) * (nd - axis - 1))
    return _E.select(valid, got, _np.asarray(_fill_value(dt, fill_value), dt))


def take_along_axis(arr: ArrayLike, indices: ArrayLike, axis: int | None = -1,
                    mode: str | None = None, fill_value: ArrayLike | None = None, *,
                    wrap_negative_indices: bool | None = None) -> Array:
    """Entries of ``arr`` at ``indices`` along ``axis``, matching the other axes one to one
    (broadcasting: a length-1 axis of either meets the other's length).  ``axis=None``
    works on the flattened arrays.  An out-of-bounds index (outside [-n, n), or [0, n)
    when ``wrap_negative_indices`` is False: JAX's, whose default None is False for mode
    "promise_in_bounds" only) reads ``fill_value`` (NaN for inexact dtypes, as
    ``_fill_value``) with JAX's default mode "fill" (and "drop", "one_hot"), or the nearest
    entry with "clip"/"promise_in_bounds"."""
    arr = _in(arr, "take_along_axis", "arr")
    indices = _in(indices, "take_along_axis", "indices")
    idt = _aval(indices).dtype
    if _dtypes.kind(idt) not in "iu":
        raise TypeError(f"take_along_axis indices must be of integer type, got {idt} "
                        "(take_along_axis: argument 'indices')")
    if axis is None:
        arr, indices, axis = ravel(arr), ravel(indices), 0
    if mode not in (None, "fill", "drop", "one_hot", "clip", "promise_in_bounds"):
        raise ValueError(f"take_along_axis: argument 'mode' must be one of None, 'fill', "
                         f"'drop', 'one_hot', 'clip', 'promise_in_bounds', got {mode!r}")
    wrap = mode != "promise_in_bounds" if wrap_negative_indices is None \
        else bool(wrap_negative_indices)
    nd = ndim(arr)
    if isinstance(axis, (int, _np.integer)) and -nd <= axis < nd:
        n = shape(arr)[axis]
        low = -n if wrap else 0
        if _is_tracer(indices) or _is_tracer(arr) or not _core.is_eager() \
                or _np.any((_np.asarray(indices) < low) | (_np.asarray(indices) >= n)):
            ints = _np.int64 if idt.itemsize <= 8 else idt
            i = astype(indices, ints)
            valid = _E.select(_E.ge(i, low), _E.lt(i, n), _np.zeros((), bool))
            if wrap:
                i = _E.select(_E.lt(i, 0), _E.add(i, n), i)
            i = _E.maximum(_E.minimum(i, max(n - 1, 0)), 0)
            out = _take_along(arr, i, axis)
            if mode in ("clip", "promise_in_bounds") or n == 0:
                return out
            fill = _fill_value(_aval(arr).dtype, fill_value)
            return _E.select(valid, out, _E.add(_np.zeros((), _aval(arr).dtype), fill)
                             if fill is not _np.nan and not _dtypes.is_key(_aval(arr).dtype)
                             else _np.full((), fill, _aval(arr).dtype))
    return _take_along(arr, indices, axis)


def _take_along(arr, indices, axis):
    nd = ndim(arr)
    if isinstance(axis, (float, _np.floating)):
        raise TypeError(f"'{type(axis).__name__}' object cannot be interpreted as an integer "
                        f"(tangentia: take_along_axis: argument 'axis' must be an integer or "
                        f"None, got {axis!r})")
    if isinstance(axis, (int, _np.integer)) and not -nd <= axis < nd:
        raise _np.exceptions.AxisError(
            f"axis {axis} is out of bounds for array of dimension {nd} (tangentia: "
            f"take_along_axis: argument 'axis' must be in [{-nd}, {nd}))")
    axis %= nd
    s, sa = shape(indices), shape(arr)
    if len(s) != nd:
        raise ValueError(f"indices and arr must have the same number of dimensions; {len(s)} "
                         f"vs. {nd} (tangentia: take_along_axis: indices of shape {s} for an "
                         f"array of shape {sa})")
    arrays = []
    spec = []
    for i in range(nd):
        if i == axis:
            arrays.append(indices)
        else:
            if s[i] != sa[i] and s[i] != 1 and sa[i] != 1:
                cut = [tuple(1 if j == axis else d for j, d in enumerate(t)) for t in (s, sa)]
                raise ValueError(f"Incompatible shapes for broadcasting: shapes={cut} "
                                 f"(tangentia: take_along_axis: indices of shape {s} and an "
                                 f"array of shape {sa} must broadcast on every axis but {axis})")
            shp = [1] * nd
            shp[i] = n = sa[i] if s[i] == 1 else s[i]
            arrays.append((_np.arange(n) if sa[i] != 1 else _np.zeros(n, int)).reshape(shp))
        spec.append(_I.ARRAY)
    return _I.getitem(arr, tuple(spec), tuple(arrays))


def unstack(x: ArrayLike, /, *, axis: int = 0) -> tuple[Array, ...]:
    """The slices of ``x`` along ``axis``, as a tuple (``axis`` keyword-only, as JAX's)."""
    s = shape(x)
    if not -len(s) <= operator.index(axis) < len(s):
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {len(s)} "
                         f"(unstack: argument 'x' has shape {s})")
    return tuple(take(x, i, axis=axis) for i in range(s[axis]))


def delete(arr: ArrayLike, obj: ArrayLike | slice, axis: int | None = None, *,
           assume_unique_indices: bool = False) -> Array:
    """Drop the entries ``obj`` (static indices, a slice or a boolean mask) along ``axis``;
    with ``assume_unique_indices=True`` (JAX's), ``obj`` are distinct integer indices that
    may be traced."""
    arr = _in(arr, "delete", "arr")
    if axis is None:
        arr, axis = ravel(arr), 0
    ax = _axis(axis, arr, "delete", "arr")
    if assume_unique_indices and not isinstance(obj, slice):
        return _delete_unique(arr, obj, ax)
    if _is_tracer(obj):
        obj = _concrete(obj, "delete", "obj")
    if not isinstance(obj, slice):   # (a str, None, an object: JAX's TypeError, not NumPy's
        _core.as_array(obj, "delete: argument 'obj'")   # IndexError from inside)
    keep = _np.delete(_np.arange(shape(arr)[ax]), obj)
    return take(arr, keep, axis=ax)


def _delete_unique(arr: Array, obj: ArrayLike, ax: int) -> Array:
    # JAX's algorithm: with the k distinct indices sorted, entry i of the result is entry
    # i + #{j : sorted[j] - j <= i} of ``arr``.
    idx = _in(obj, "delete", "obj")
    if _dtypes.kind(_aval(idx).dtype) not in "iu":
        raise ValueError("delete: argument 'obj' must be integer indices when "
                         "assume_unique_indices=True")
    n = shape(arr)[ax]
    idx = ravel(astype(idx, int64))
    idx = _E.maximum(_E.minimum(_E.select(_E.lt(idx, 0), _E.add(idx, n), idx), n), 0)
    k = shape(idx)[0]
    shifted = _E.sub(_SO.sort(idx, 0), _np.arange(k, dtype=_np.int64))
    i = _np.arange(n - k, dtype=_np.int64)
    below = astype(_E.ge(i.reshape(1, -1), reshape(shifted, (-1, 1))), int64)
    return take(arr, _E.add(i, _R.reduce_sum(below, (0,))), axis=ax)


# ---------------------------------------------------------------------------
# Reordering entries


def flip(m: ArrayLike, axis: int | Sequence[int] | None = None) -> Array:
    """Reverse the order of entries along ``axis`` (all axes if None)."""
    nd = ndim(m)
    if isinstance(axis, (tuple, list)):
        axes = tuple(operator.index(a) % nd if -nd <= a < nd else a for a in axis)
        if len(set(axes)) != len(axes):
            raise TypeError(f"rev dimensions must be unique, got {axes}. (tangentia: flip: "
                            f"argument 'axis' names an axis twice: {tuple(axis)})")
    axes = _axes(axis, nd, "flip")
    idx = tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(nd))
    return _getitem(m, idx)


def fliplr(m: ArrayLike) -> Array:
    """Reverse the order of entries along axis 1 (left/right)."""
    return flip(m, 1)


def flipud(m: ArrayLike) -> Array:
    """Reverse the order of entries along axis 0 (up/down)."""
    return flip(m, 0)


def rot90(m: ArrayLike, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Array:
    """Rotate by 90 degrees ``k`` times in the plane of ``axes``."""
    m = _in(m, "rot90", "m")
    if ndim(m) < 2:
        raise ValueError(f"rot90 requires its first argument to have ndim at least two, but got "
                         f"first argument of shape {shape(m)}, which has ndim {ndim(m)}")
    if len(axes) != 2:
        raise ValueError("rot90: argument 'axes' must name exactly 2 axes")
    a0, a1 = _axis(axes[0], m, "rot90", "m"), _axis(axes[1], m, "rot90", "m")
    if a0 == a1:
        raise ValueError("rot90: argument 'axes' must name two different axes")
    k = operator.index(k) % 4
    if k == 0:
        return _S.unchanged(m)
    if k == 2:
        return flip(flip(m, a0), a1)
    perm = list(range(ndim(m)))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return transpose(flip(m, a1), perm)
    return flip(transpose(m, perm), a1)


def roll(a: ArrayLike, shift: ArrayLike | Sequence[int], axis: int | Sequence[int] | None = None
         ) -> Array:
    """Roll entries along ``axis`` (the flattened array if None); ``shift`` may be traced."""
    a = _in(a, "roll")
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), shape(a))
    if not _is_tracer(shift) and _np.ndim(shift) == 1:   # a 1-D array of shifts, as a list
        shift = [int(v) for v in _np.asarray(shift)]
    elif _is_tracer(shift) and ndim(shift) == 1:
        shift = [shift[i] for i in range(shape(shift)[0])]
    if not isinstance(axis, (list, tuple)) and axis is not None and _np.ndim(axis) == 1:
        axis = [int(v) for v in _np.asarray(axis)]
    shifts = tuple(shift) if isinstance(shift, (list, tuple)) else (shift,)
    axes = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    elif len(axes) == 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError("roll: arguments 'shift' and 'axis' must be scalars or sequences of "
                         f"the same length, got {len(shifts)} shifts and {len(axes)} axes")
    axes = tuple(_axis(ax, a, "roll") for ax in axes)
    if _eager(a, *shifts):
        return _np.asarray(_np.roll(a, shifts, axes))
    for sh, ax in zip(shifts, axes):
        n = shape(a)[ax]
        if n == 0:
            continue
        if _is_tracer(sh):
            if _aval(sh).dtype.kind not in "iu" or ndim(sh) != 0:
                raise TypeError(f"roll: argument 'shift' must be an integer scalar, got "
                                f"{_aval(sh).str_short()}")
            a = take(a, _E.remainder(_E.sub(_np.arange(n), sh), n), axis=ax)
            continue
        k = operator.index(sh) % n
        if k:
            a = concatenate([_I.static_slice(a, ax, n - k, n), _I.static_slice(a, ax, 0, n - k)],
                            ax)
    return a


# ---------------------------------------------------------------------------
# Indices of nonzero entries (eager: the result's shape depends on the values)


def _fills(fill_value, nd, fname):
    """One fill value per axis (JAX's ``fill_value``: a scalar or one per axis)."""
    if fill_value is None:
        return (0,) * nd
    if _np.ndim(fill_value) == 0 and not isinstance(fill_value, (tuple, list)):
        return (fill_value,) * nd
    fills = tuple(fill_value)
    if len(fills) != nd:
        raise ValueError(f"{fname}: argument 'fill_value' must be a scalar or have one entry "
                         f"per axis of the input ({nd}), got {len(fills)}")
    return fills


def _sized_nonzero(a, size, fill_value, fname):
    """JAX's ``nonzero(a, size=size, fill_value=...)``: the first ``size`` nonzero
    positions (row-major order), one index array per axis, padded with ``fill_value``;
    traceable, as the output shape is static."""
    size = _concrete(size, fname, "size")
    try:
        size = operator.index(size)
    except TypeError:
        raise TypeError(f"{fname}: argument 'size' must be an integer, got {size!r}") from None
    if size < 0:
        raise ValueError(f"{fname}: argument 'size' must be non-negative, got {size}")
    x = _in(a, fname, "a")
    dims = tuple(_aval(x).shape)
    fills = _fills(fill_value, len(dims), fname)
    if _eager(x, *fills):
        found = _np.nonzero(_np.asarray(x))
        out = []
        for idx, fill in zip(found, fills):
            idx = idx[:size]
            pad = _np.full(size - idx.shape[0], fill, dtype=idx.dtype)
            out.append(_to_user(_np.concatenate([idx, pad])))
        return tuple(out)
    n = int(_np.prod(dims, dtype=_np.int64))
    if n == 0 or size == 0:
        return tuple(astype(_E.add(_np.zeros(size, _np.int64), f), int64) for f in fills)
    mask = _E.ne(ravel(x), _np.zeros((), _aval(x).dtype))
    rank = _E.sub(_R.cumsum(astype(mask, int64), 0), 1)   # slot of each nonzero entry
    slots = _IndexUpdateHelper(_np.full(size, n, _np.int64))[
        _E.select(mask, rank, _np.full(n, size, _np.int64))].set(
            _np.arange(n, dtype=_np.int64), mode="drop")
    valid = _E.lt(slots, n)
    flat = _E.select(valid, slots, _np.zeros(size, _np.int64))
    out = []
    for k, fill in enumerate(fills):
        stride = int(_np.prod(dims[k + 1:], dtype=_np.int64))
        coord = _E.remainder(_E.floor_divide(flat, stride), dims[k])
        out.append(_E.select(valid, coord, astype(_E.add(_np.zeros(size, _np.int64), fill),
                                                  int64)))
    return tuple(out)


def nonzero(a: ArrayLike, *, size: int | None = None,
            fill_value: ArrayLike | tuple[ArrayLike, ...] | None = None) -> tuple[Array, ...]:
    """Indices of the nonzero entries, one array per axis.  Without ``size`` the result's
    shape depends on the values (eager only); with a static ``size`` (JAX's), the first
    ``size`` indices padded with ``fill_value`` (0 by default), under jit too."""
    if size is not None:
        return _sized_nonzero(a, size, fill_value, "nonzero")
    if fill_value is not None:
        raise ValueError("nonzero: argument 'fill_value' requires a 'size'")
    v = _concrete(a, "nonzero", "a")
    if _np.ndim(v) == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use jnp.atleast_1d "
                         "scalar).nonzero() instead. (nonzero: argument 'a' is 0-d)")
    return _np.nonzero(_np.asarray(v))


def flatnonzero(a: ArrayLike, *, size: int | None = None,
                fill_value: ArrayLike | None = None) -> Array:
    """Indices of the nonzero entries of the flattened ``a`` (eager only without a static
    ``size``; with ``size``, padded with ``fill_value`` as in nonzero)."""
    if size is not None:
        if fill_value is not None and _np.ndim(fill_value) != 0:
            fill_value = tuple(fill_value)
            if len(fill_value) != 1:
                raise ValueError("flatnonzero: argument 'fill_value' must be a scalar or a "
                                 "1-tuple")
        return _sized_nonzero(ravel(_in(a, "flatnonzero", "a")), size, fill_value,
                              "flatnonzero")[0]
    return _np.flatnonzero(_value_dependent(a, "flatnonzero", "a"))


def argwhere(a: ArrayLike, *, size: int | None = None,
             fill_value: ArrayLike | tuple[ArrayLike, ...] | None = None) -> Array:
    """Indices of the nonzero entries, one row per entry (eager only without a static
    ``size``; with ``size``, padded with ``fill_value`` as in nonzero)."""
    if size is not None:
        x = _in(a, "argwhere", "a")
        if _np.ndim(x) == 0:   # one entry and no axis: rows of length 0
            _concrete(size, "argwhere", "size")
            return _to_user(_np.zeros((operator.index(size), 0), _np.int64))
        cols = _sized_nonzero(x, size, fill_value, "argwhere")
        return transpose(concatenate([reshape(c, (1, -1)) for c in cols], axis=0))
    return _np.argwhere(_value_dependent(a, "argwhere", "a"))


# ---------------------------------------------------------------------------
# NumPy's index helpers (their results are concrete index arrays)


s_ = _np.s_
index_exp = _np.index_exp
r_ = _np.r_
c_ = _np.c_


def ix_(*args: ArrayLike) -> tuple[Array, ...]:
    """Open mesh of 1-D index sequences (``numpy.ix_``): the ``i``-th of ``n`` arguments
    reshaped to ``(1, ..., len, ..., 1)``; traced integer arguments too (their length is
    static), as JAX's.  Boolean arguments are their ``nonzero`` indices (concrete only)."""
    if not builtins.any(_is_tracer(a) for a in args):
        return _np.ix_(*args)
    out = []
    for i, a in enumerate(args):
        a = _in(a, "ix_", f"args[{i}]")
        if ndim(a) != 1:
            raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape "
                             f"{shape(a)}")
        if _aval(a).dtype == _np.bool_:
            (a,) = nonzero(a)
        out.append(reshape(a, (1,) * i + (shape(a)[0],) + (1,) * (len(args) - i - 1)))
    return tuple(out)


class _Grid:
    """``mgrid``/``ogrid``: NumPy's dense or open mesh of ranges, whose slice bounds must be
    concrete (they determine the shape): a traced bound raises JAX's
    ConcretizationTypeError naming it."""

    def __init__(self, name, grid):
        self._name, self._grid = name, grid

    def __getitem__(self, key):
        for sl in (key if isinstance(key, tuple) else (key,)):
            if isinstance(sl, slice):
                for what in ("start", "stop", "step"):
                    v = getattr(sl, what)
                    if _is_tracer(v):
                        raise _core.concretization_error(
                            v, f"the slice {what} of jnp.{self._name}",
                            f"It arose in the slice {what} of jnp.{self._name}: the bounds "
                            "determine the grid's shape.", "")
        return _to_user(self._grid[key])

    def __repr__(self):
        return f"tangentia.numpy.{self._name}"


mgrid = _Grid("mgrid", _np.mgrid)
ogrid = _Grid("ogrid", _np.ogrid)


def unravel_index(indices: ArrayLike, shape: Sequence[int]) -> tuple[Array, ...]:
    """The coordinates in an array of ``shape`` of the flat ``indices`` (JAX's: an index
    outside [-size, size) is clipped into it, a negative one counts from the end; the
    coordinates have the indices' integer dtype).  Traceable."""
    idx = _in(indices, "unravel_index", "indices")
    idt = _aval(idx).dtype
    if _dtypes.kind(idt) not in "iu":
        raise TypeError(f"unravel_index: argument 'indices' must be integers, got {idt}")
    if isinstance(shape, (tuple, list)) and builtins.any(_is_tracer(d) for d in shape):
        return _unravel_traced(idx, tuple(shape))   # JAX's jit of (indices, shape) traces both
    weak = isinstance(shape, (tuple, list)) and builtins.all(
        isinstance(d, (int, _np.integer)) and not isinstance(d, _np.ndarray) for d in shape)
    dims = tuple(int(d) for d in _np.asarray(_concrete(shape, "unravel_index", "shape")
                                              ).reshape(-1))
    out_dtype = idt if weak or not dims else _np.result_type(idt, _np.asarray(shape).dtype)
    size = int(_np.prod(dims, dtype=_np.int64))
    i = astype(idx, int64)
    i = _E.maximum(_E.minimum(i, size - 1), -size) if size else i
    i = _E.select(_E.lt(i, 0), _E.add(i, size), i)
    out = []
    for k in range(len(dims)):
        stride = int(_np.prod(dims[k + 1:], dtype=_np.int64))
        out.append(astype(_E.remainder(_E.floor_divide(i, stride), dims[k]) if dims[k]
                          else _E.mul(i, 0), out_dtype))
    return tuple(out)


def _unravel_traced(idx: Array, dims: tuple) -> tuple[Array, ...]:
    """unravel_index with traced dimensions (scalars; the coordinates' shapes do not depend
    on their values): the same clipping, in the indices' dtype as JAX with a shape of
    (weakly typed) Python ints."""
    for d in dims:
        if ndim(d) != 0 or _dtypes.kind(_aval(d).dtype) not in "iu":
            raise TypeError("unravel_index: argument 'shape' must be a sequence of integer "
                            "scalars")
    idt = _aval(idx).dtype
    dims = tuple(astype(d, int64) for d in dims)
    size = functools.reduce(_E.mul, dims, _np.int64(1))
    i = astype(idx, int64)
    i = _E.maximum(_E.minimum(i, _E.sub(size, 1)), _E.neg(size))
    i = _E.select(_E.lt(i, 0), _E.add(i, size), i)
    out = []
    for k in range(len(dims)):
        stride = functools.reduce(_E.mul, dims[k + 1:], _np.int64(1))
        safe_stride = _E.select(_E.eq(stride, 0), _np.int64(1), stride)
        safe_dim = _E.select(_E.eq(dims[k], 0), _np.int64(1), dims[k])
        out.append(astype(_E.remainder(_E.floor_divide(i, safe_stride), safe_dim), idt))
    return tuple(out)


def ravel_multi_index(multi_index: Sequence[ArrayLike], dims: Sequence[int], mode: str = "raise",
                      order: str = "C", *, dtype: DTypeLike | None = None) -> Array:
    """Flat indices of the coordinates ``multi_index`` in an array of shape ``dims``:
    ``mode`` 'raise' (concrete coordinates, checked), 'wrap', 'clip' or JAX's 'ignore'
    (unchecked); ``order`` 'C' or 'F'; the result has ``dtype`` or the coordinates'
    integer dtype.  Traceable except with mode='raise'."""
    dims = tuple(operator.index(d) for d in _concrete(dims, "ravel_multi_index", "dims"))
    if len(multi_index) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)} "
                         f"(ravel_multi_index: got {len(multi_index)} coordinate arrays)")
    if order not in ("C", "F"):
        raise ValueError(f"ravel_multi_index: argument 'order' must be 'C' or 'F', got {order!r}")
    if mode not in ("raise", "wrap", "clip", "ignore"):
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', 'clip' or 'ignore' "
                         "(ravel_multi_index: argument 'mode')")
    coords = [_in(c, "ravel_multi_index", f"multi_index[{k}]") for k, c in
              enumerate(multi_index)]
    for c in coords:
        if _dtypes.kind(_aval(c).dtype) not in "iu":
            raise TypeError(f"only int indices permitted, got {_aval(c).dtype} "
                            "(ravel_multi_index: argument 'multi_index')")
    out_dtype = _np.dtype(dtype) if dtype is not None else _np.result_type(
        *[_aval(c).dtype for c in coords]) if coords else _np.dtype(int64)
    if mode == "raise":
        if builtins.any(_is_tracer(c) for c in coords):
            raise _core.ConcretizationTypeError(
                "The error occurred because ravel_multi_index was jit-compiled with "
                "mode='raise'. Use mode='wrap' or mode='clip' instead. (ravel_multi_index: the "
                "coordinates are traced and cannot be checked)")
        for c, d in zip(coords, dims):
            c = _np.asarray(c)
            if c.size and (c.min() < 0 or c.max() >= d):
                raise ValueError("invalid entry in coordinates array (ravel_multi_index: a "
                                 f"coordinate outside [0, {d}))")
    strides = [int(_np.prod(dims[k + 1:], dtype=_np.int64)) for k in range(len(dims))] \
        if order == "C" else [int(_np.prod(dims[:k], dtype=_np.int64)) for k in range(len(dims))]
    total = None
    for c, d, st in zip(coords, dims, strides):
        c = astype(c, int64)
        if mode == "wrap":
            c = _E.remainder(c, d)
        elif mode == "clip":
            c = _E.maximum(_E.minimum(c, d - 1), 0)
        term = _E.mul(c, st)
        total = term if total is None else _E.add(total, term)
    if total is None:
        return _to_user(_np.zeros((), out_dtype))
    return astype(total, out_dtype)
def _of_array_arg(np_fn):
    """NumPy's ``np_fn(arr, ...)``, which reads ``arr.shape``, with ``arr`` an array (a str
    or None raised NumPy's AttributeError "'str' object has no attribute 'ndim'"; a list
    was refused by NumPy though tangentia takes lists as arrays)."""
    name = np_fn.__name__

    @functools.wraps(np_fn)
    def fn(arr, *args, **kwargs):
        return np_fn(_in(arr, name, "arr"), *args, **kwargs)
    return fn


diag_indices_from = _of_array_arg(_np.diag_indices_from)
tril_indices_from = _of_array_arg(_np.tril_indices_from)
triu_indices_from = _of_array_arg(_np.triu_indices_from)


def indices(dimensions: Sequence[int], dtype: DTypeLike | None = int64, sparse: bool = False
            ) -> Array | tuple[Array, ...]:
    """An array of grid indices for an array of shape ``dimensions``."""
    return _np.indices(dimensions, dtype, sparse)


def diag_indices(n: int, ndim: int = 2) -> tuple[Array, ...]:
    """Indices of the main diagonal of an ``n`` x ... x ``n`` array (``ndim`` axes)."""
    if not _is_tracer(n) and n < 0:   # (NumPy's are empty; JAX's ValueError)
        raise ValueError(f"n argument to diag_indices must be nonnegative, got {n} "
                         "(tangentia.numpy.diag_indices)")
    return _np.diag_indices(n, ndim)


def _nonnegative_nm(fname, n, m):
    """JAX's TypeError for a negative ``n`` or ``m`` (NumPy's indices are empty)."""
    m = n if m is None else m
    if not _is_tracer(n) and not _is_tracer(m) and (n < 0 or m < 0):
        raise TypeError("broadcast_in_dim shape must have every element be nonnegative, got "
                        f"{(int(n), int(m))}. (tangentia.numpy.{fname})")


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Array, Array]:
    """Indices of the entries at and below the ``k``-th diagonal of an ``n`` x ``m`` array."""
    _nonnegative_nm("tril_indices", n, m)
    return _np.tril_indices(n, k, m)


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Array, Array]:
    """Indices of the entries at and above the ``k``-th diagonal of an ``n`` x ``m`` array."""
    _nonnegative_nm("triu_indices", n, m)
    return _np.triu_indices(n, k, m)
