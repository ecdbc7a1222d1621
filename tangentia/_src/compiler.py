"""``jax._src.compiler``'s name that chex's ``restrict_backends`` looks up.

chex patches ``backend_compile_and_load`` (or ``backend_compile``) only when
present; tangentia compiles with numba or runs NumPy, not through an XLA
backend, so neither is defined and ``chex.restrict_backends`` restricts
nothing here (on one CPU device the only backend is ``"cpu"``).
"""
__all__: list[str] = []
