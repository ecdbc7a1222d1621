"""``jax.version``: tangentia's version, and the JAX release whose API it follows
(``__version_info__``), which libraries written for JAX read to choose their code paths
(equinox: ``jax.__version_info__ >= (0, 5, 1)``; flax: ``jax.version.__version_info__``)."""

__version__ = "0.1.0"
__version_info__ = (0, 10, 2)
