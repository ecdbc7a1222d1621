"""Experimental APIs: ``tangentia.experimental.ode.odeint``, ``fixed_point``,
``io_callback`` and ``checkify``."""
import sys as _sys

from .._array import install_boundaries as _install_boundaries
from . import checkify, ode  # noqa: F401
from .fixed_point import fixed_point
from .io_callback import io_callback

__all__ = ["checkify", "fixed_point", "io_callback", "ode"]

_install_boundaries(_sys.modules[__name__])  # eager results are tangentia arrays
