"""conftest.py's JAX compilation cache: each test process keeps the XLA programs JAX compiles in
a persistent cache of its own (under its pytest basetemp), so a program compiled again -- after
a module's ``jax.clear_caches``, or for a fresh lambda -- is loaded, with the same values."""
from __future__ import annotations

import os

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="the cache is JAX's")

_HITS: list[str] = []
_listening = False


def _on_event(event: str, **kwargs: object) -> None:
    if event == "/jax/compilation_cache/cache_hits":
        _HITS.append(event)


@pytest.mark.skipif(os.environ.get("TANGENTIA_TEST_JAX_CACHE", "1") == "0",
                    reason="TANGENTIA_TEST_JAX_CACHE=0 turns the cache off")
def test_a_program_compiled_again_is_loaded_from_this_process_cache(tmp_path_factory):
    global _listening
    directory = jax.config.jax_compilation_cache_dir
    assert directory, "conftest set no JAX compilation cache"
    if not os.environ.get("JAX_COMPILATION_CACHE_DIR"):    # (not the user's own)
        assert str(tmp_path_factory.getbasetemp()) in str(directory)
    if not _listening:
        jax.monitoring.register_event_listener(_on_event)
        _listening = True
    x = np.linspace(-2.0, 2.0, 7)
    f = lambda v: jax.numpy.sin(v) * 3.0 + jax.numpy.cos(v) ** 2  # noqa: E731
    first = np.asarray(jax.jit(f)(x))
    hits = len(_HITS)
    jax.clear_caches()
    again = np.asarray(jax.jit(f)(x))
    assert len(_HITS) == hits + 1, "the program compiled again was not loaded from the cache"
    assert any(name.endswith("-cache") for name in os.listdir(directory))
    np.testing.assert_array_equal(again, first)
    np.testing.assert_allclose(first, np.sin(x) * 3.0 + np.cos(x) ** 2,   # (float32 without x64)
                               rtol=1e-14 if first.dtype == np.float64 else 1e-5, atol=1e-6)
