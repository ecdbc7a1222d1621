"""Experimental APIs: ``tangentia.experimental.ode.odeint`` and ``fixed_point``."""
from . import ode  # noqa: F401
from .fixed_point import fixed_point

__all__ = ["fixed_point", "ode"]
