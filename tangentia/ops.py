"""``jax.ops``: reductions of an array's rows grouped by segment id
(``segment_sum``, ``segment_prod``, ``segment_min``, ``segment_max``), each a
scatter of the rows into an array of one row per segment."""
from __future__ import annotations

import operator

import numpy as np

from . import numpy as tnp
from .core import Tracer
from .lax.windowed import _identity
from .numpy import _indexing

# the ``x.at[...]`` method of each reduction -> its monoid (whose identity fills an empty segment)
_MONOIDS = {"add": "add", "multiply": "mul", "min": "min", "max": "max"}


def _segment(fname, method, data, segment_ids, num_segments, mode):
    data = tnp.asarray(data)
    ids = tnp.asarray(segment_ids)
    # (a 0-d ``data`` is one value for every id, as JAX's scatter broadcasts it)
    if tnp.ndim(data) != 0 and (tnp.ndim(ids) != 1 or tnp.shape(ids)[0] != tnp.shape(data)[0]):
        raise ValueError(f"{fname}: argument 'segment_ids' must be 1-D with one id per row of "
                         f"'data' ({tnp.shape(data)[0]} rows), got shape {tnp.shape(ids)}")
    if num_segments is None:
        if isinstance(segment_ids, Tracer):
            top = _indexing._concrete(tnp.max(ids), fname, "segment_ids")
        else:  # a constant under jit too (tnp.max would stage it: ConcretizationTypeError)
            top = np.max(np.asarray(segment_ids))
        num_segments = int(top) + 1
    num_segments = operator.index(num_segments)
    dtype = np.dtype(tnp.result_type(data))
    empty = _identity(_MONOIDS[method], dtype)
    out = tnp.full((num_segments,) + tnp.shape(data)[1:], empty, dtype)
    # ids out of [0, num_segments) are dropped (negative ones too), as in JAX
    return getattr(_indexing.at(out)[ids], method)(data, mode=mode, wrap_negative_indices=False)


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
    """The sum of the rows of ``data`` in each segment: ``out[s]`` adds the rows ``i``
    with ``segment_ids[i] == s``; ``num_segments`` defaults to ``max(segment_ids) + 1``
    (then the ids must be concrete), ids outside ``[0, num_segments)`` are dropped and an
    empty segment is 0.  ``indices_are_sorted``, ``unique_indices`` and ``bucket_size``
    are JAX's hints, accepted and unused; ``mode`` is that of ``x.at[...]``."""
    return _segment("segment_sum", "add", data, segment_ids, num_segments, mode)


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False,
                 unique_indices=False, bucket_size=None, mode=None):
    """The product of the rows of ``data`` in each segment (an empty one is 1); the
    arguments are those of ``segment_sum``."""
    return _segment("segment_prod", "multiply", data, segment_ids, num_segments, mode)


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
    """The minimum of the rows of ``data`` in each segment (an empty one is the
    largest value of the dtype: inf, the largest integer, True); the arguments are
    those of ``segment_sum``."""
    return _segment("segment_min", "min", data, segment_ids, num_segments, mode)


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
    """The maximum of the rows of ``data`` in each segment (an empty one is the
    smallest value of the dtype: -inf, the smallest integer, False); the arguments are
    those of ``segment_sum``."""
    return _segment("segment_max", "max", data, segment_ids, num_segments, mode)


__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]
