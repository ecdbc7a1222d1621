"""``jax._src.deprecations`` stand-in: no deprecation is accelerated (turned into an error)."""
import warnings

_registered = set()


def register(deprecation_id):
    _registered.add(deprecation_id)


def is_accelerated(deprecation_id):
    return False


def warn(deprecation_id, message, stacklevel=1):
    warnings.warn(message, DeprecationWarning, stacklevel=stacklevel + 1)
