"""Vector quantization (``tangentia.scipy.cluster.vq``), mirroring
``jax.scipy.cluster.vq``: :func:`vq` assigns each observation the nearest code
of a code book.  Written over ``tangentia.numpy``: the distances are
differentiable (with respect to the observations and the codes), and ``vq``
works under ``vmap`` and ``jit``.
"""
from __future__ import annotations

from ... import numpy as tnp
from .._util import inexact

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike

__all__ = ["vq"]


def vq(obs: ArrayLike, code_book: ArrayLike, check_finite: bool = True) -> tuple[Array, Array]:
    """Assign each observation the nearest code of a code book, in Euclidean
    distance (``jax.scipy.cluster.vq.vq``).

    Args:
      obs: the observations, an array of shape ``(m, d)`` (one per row), or of
        shape ``(m,)`` for one-feature observations.
      code_book: the codes, of shape ``(k, d)`` (or ``(k,)``), ``k >= 1``.
      check_finite: ignored, as in JAX (SciPy refuses non-finite inputs; here
        they propagate).

    Returns:
      ``(code, dist)``: for each observation the index of its nearest code
      (the first one on ties) and the distance to it, both of shape ``(m,)``.

    Examples:
      >>> import numpy as np
      >>> from tangentia.scipy.cluster.vq import vq
      >>> code, dist = vq(np.array([[0.9, 1.1], [4.0, 3.0]]),
      ...                 np.array([[1.0, 1.0], [3.0, 3.0], [5.0, 5.0]]))
      >>> code, dist
      (Array([0, 1]), Array([0.14142136, 1.        ]))
    """
    del check_finite
    obs, code_book = inexact(obs, code_book)
    if obs.ndim != code_book.ndim:
        raise ValueError(f"Observation and code_book should have the same rank (vq: obs has "
                         f"shape {obs.shape}, code_book has shape {code_book.shape})")
    if obs.ndim == 1:
        obs, code_book = obs[:, None], code_book[:, None]
    if obs.ndim != 2:
        raise ValueError(f"ndim different than 1 or 2 are not supported (vq: obs and code_book "
                         f"have {obs.ndim} dimensions)")
    if obs.shape[1] != code_book.shape[1] or code_book.shape[0] == 0:
        raise ValueError(f"vq: code_book must hold at least one code with as many features as "
                         f"the observations, but obs has shape {obs.shape} and code_book "
                         f"{code_book.shape}")
    dist = tnp.linalg.norm(obs[:, None, :] - code_book[None, :, :], axis=-1)
    code = tnp.argmin(dist, axis=-1)
    return code, tnp.take_along_axis(dist, code[:, None], axis=-1)[:, 0]
