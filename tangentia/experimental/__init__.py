"""Experimental APIs: ``tangentia.experimental.ode.odeint``, ``fixed_point`` and
``io_callback``."""
import sys

from .._array import install_boundaries
from . import ode  # noqa: F401
from .fixed_point import fixed_point
from .io_callback import io_callback

__all__ = ["fixed_point", "io_callback", "ode"]

install_boundaries(sys.modules[__name__])  # eager results are tangentia arrays
