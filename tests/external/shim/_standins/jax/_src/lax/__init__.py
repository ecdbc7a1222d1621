"""``jax._src.lax`` stand-in package: tangentia.lax's names (JAX's test utilities read
``lax.reduce_sum_p`` ... from it); submodules without a stand-in beside this file are
tangentia.lax's modules of that name."""
from tangentia.lax import *  # noqa: F401,F403
import tangentia.lax as _lax


def __getattr__(name):
    return getattr(_lax, name)
