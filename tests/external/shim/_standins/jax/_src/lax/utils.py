"""``jax._src.lax.utils`` placeholder (JAX's shape/dtype rule helpers): imported by
lax_test.py, not used by the tests that run here."""
