"""Experimental APIs: ``tangentia.experimental.ode.odeint``, ``fixed_point``,
``io_callback``, ``checkify`` and ``layout`` (the names only); ``sparse`` holds only the name ``BCOO`` (no sparse
arrays: building one raises), which libraries import."""
import sys as _sys
from typing import Any

from .._array import install_boundaries as _install_boundaries
from . import checkify, layout, ode, sparse  # noqa: F401
from .fixed_point import fixed_point
from .io_callback import io_callback


def cur_qdd(x: Any) -> Any:
    """The quasi-dynamic data of a hijax value (JAX's; tangentia has no hijax: raises).

    Args:
      x: a value of a hijax type.
    """
    from .hijax import HiPrimitive
    return HiPrimitive("cur_qdd").bind(x)


__all__ = ["checkify", "cur_qdd", "fixed_point", "io_callback", "layout", "ode", "sparse"]

_install_boundaries(_sys.modules[__name__])  # eager results are tangentia arrays
