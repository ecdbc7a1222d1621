"""``jax._src.interpreters.pxla`` placeholder: tangentia has no multi-device executables."""
