"""``jax._src.interpreters`` stand-in package; submodules tangentia lacks (``mlir``,
``pxla``) have placeholders beside this file, the others are tangentia's."""
from tangentia.interpreters import *  # noqa: F401,F403
