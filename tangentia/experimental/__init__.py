"""Experimental APIs: ``tangentia.experimental.ode.odeint`` and ``fixed_point``."""
