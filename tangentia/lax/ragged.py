"""``jax.lax.ragged_dot``: a matrix product whose rows are split into consecutive groups,
each multiplied by its own right-hand matrix.

A composition of existing primitives (one ``dot_general`` against every group's matrix,
then each row's own group selected), so it differentiates in both matrices, batches and
stages as they do; it costs ``num_groups`` plain products.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import core
from ..primitives import elementwise as E
from ..primitives import reductions as R
from ..primitives import structural as S
from .ops import _tag, dot_general

if TYPE_CHECKING:
    from typing import Any
    from ..typing import Array, ArrayLike, DTypeLike


def ragged_dot(lhs: ArrayLike, rhs: ArrayLike, group_sizes: ArrayLike, precision: Any = None,
               preferred_element_type: DTypeLike | None = None,
               group_offset: ArrayLike | None = None, out_sharding: Any = None) -> Array:
    """``out[r] = lhs[r] @ rhs[g(r)]`` where row ``r`` of ``lhs`` (shape ``[m, k]``) falls
    in group ``g(r)`` of the consecutive groups of ``group_sizes`` (shape ``[g]``) and
    ``rhs`` has shape ``[g, k, n]`` (``jax.lax.ragged_dot``).  Rows past the last group
    are zero.  ``precision`` is accepted and ignored; ``preferred_element_type`` sets the
    result dtype (and the accumulation's); ``group_offset`` must be None (a sharded
    layout's offset: JAX's own CPU implementation also raises ``NotImplementedError``);
    ``out_sharding`` changes nothing (one device).
    The product of every row with every group is formed and the row's own group
    selected, so the work is ``g`` times a dense product's."""
    fname = "ragged_dot"
    if group_offset is not None:
        raise NotImplementedError("Unimplemented group_offset support."
                                  + _tag(fname, "group_offset is not supported"))
    lhs = lhs if isinstance(lhs, core.Tracer) else np.asarray(lhs)
    rhs = rhs if isinstance(rhs, core.Tracer) else np.asarray(rhs)
    sizes = group_sizes if isinstance(group_sizes, core.Tracer) else np.asarray(group_sizes)
    ls, rs, gs = (core.get_aval(v).shape for v in (lhs, rhs, sizes))
    if len(ls) != 2 or len(rs) != 3 or len(gs) != 1:
        raise TypeError(f"ragged_dot requires lhs of rank 2, rhs of rank 3 and group_sizes of "
                        f"rank 1, got shapes {ls}, {rs} and {gs}"
                        + _tag(fname, "lhs [m, k], rhs [g, k, n], group_sizes [g]"))
    if ls[1] != rs[1]:
        raise TypeError(f"ragged_dot requires contracting dims of lhs and rhs to match, got "
                        f"{ls[1]} and {rs[1]}" + _tag(fname, "lhs [m, k] with rhs [g, k, n]"))
    if gs[0] != rs[0]:
        raise TypeError(f"ragged_dot requires group_sizes of shape ({rs[0]},), one per group "
                        f"of rhs, got {gs}" + _tag(fname, "one size per group"))
    if np.dtype(core.get_aval(sizes).dtype).kind not in "iu":
        raise TypeError(f"ragged_dot requires integer group_sizes, got "
                        f"{np.dtype(core.get_aval(sizes).dtype).name}"
                        + _tag(fname, "group sizes are counts of rows"))
    m, g = ls[0], rs[0]
    full = dot_general(lhs, rhs, (((1,), (1,)), ((), ())),
                       preferred_element_type=preferred_element_type)       # [m, g, n]
    ends = S.convert_element_type(R.cumsum(sizes, 0, False), np.int64)     # [g]
    rows = np.arange(m, dtype=np.int64).reshape(m, 1)
    group = R.reduce_sum(S.convert_element_type(E.ge(rows, S.reshape(ends, (1, g))), np.int64),
                         (1,))                                              # [m] in [0, g]
    mine = E.eq(S.reshape(group, (m, 1, 1)), np.arange(g, dtype=np.int64).reshape(1, g, 1))
    zero = np.zeros((), core.get_aval(full).dtype)
    return R.reduce_sum(E.select(S.broadcast_to(mine, core.get_aval(full).shape), full, zero),
                        (1,))
