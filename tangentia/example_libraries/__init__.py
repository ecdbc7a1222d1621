"""``tangentia.example_libraries``: ``optimizers`` and ``stax``, the example
optimizer and neural-network libraries of ``jax.example_libraries``
(``from tangentia.example_libraries import optimizers, stax``)."""
