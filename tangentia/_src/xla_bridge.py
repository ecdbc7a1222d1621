"""``jax._src.xla_bridge._backends``, read by chex's ``set_n_cpu_devices``:
tangentia initializes no XLA backend, so it is empty."""
_backends: dict = {}

__all__: list[str] = []
