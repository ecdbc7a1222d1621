# Not imported: ``jax`` itself is tests/external/shim/jax (tangentia).  This directory
# only mirrors JAX's module layout for the stand-ins below it.
