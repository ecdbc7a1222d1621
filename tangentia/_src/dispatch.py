"""``jax._src.dispatch.wait_for_tokens``, which equinox's ``filter_jit`` calls to
wait for the effects of compiled calls: tangentia's calls finish their effects before
returning, so there is nothing to wait for."""


def wait_for_tokens() -> None:
    return None
