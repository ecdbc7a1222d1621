"""Experimental APIs: ``tangentia.experimental.ode.odeint``, ``fixed_point`` and
``io_callback``."""
from . import ode  # noqa: F401
from .fixed_point import fixed_point
from .io_callback import io_callback

__all__ = ["fixed_point", "io_callback", "ode"]
