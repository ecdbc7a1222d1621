"""``jax._src.config`` stand-in: tangentia's configuration states under JAX's module-level
names (``config.enable_x64.value``, ``config.numpy_dtype_promotion(...)``), plus what JAX's
test files read that has one fixed answer here (x64 is always on, so explicitly requested
64-bit dtypes are allowed)."""
import contextlib
import enum

import tangentia as _t
from tangentia import _compat

config = _t.config


def parse_flags_with_absl():
    """JAX parses its absl flags here; the shim has none."""


class ExplicitX64Mode(enum.Enum):
    WARN = "warn"
    ERROR = "error"
    ALLOW = "allow"


class _FixedState:
    """A state with one value; ``state(v)`` accepts only that value (as context manager or
    decorator)."""

    def __init__(self, name, value, accepted):
        self.__name__ = name
        self.value = value
        self._accepted = accepted

    @contextlib.contextmanager
    def __call__(self, new_val=True):
        if new_val not in self._accepted:
            raise NotImplementedError(f"{self.__name__}({new_val!r}) is not supported by tangentia")
        yield


explicit_x64_dtypes = _FixedState("explicit_x64_dtypes", ExplicitX64Mode.ALLOW,
                                  ("allow", ExplicitX64Mode.ALLOW))


def __getattr__(name):
    for owner in (_compat, _t):
        if hasattr(owner, name):
            return getattr(owner, name)
    raise AttributeError(f"jax._src.config (tangentia test shim) has no {name!r}")
