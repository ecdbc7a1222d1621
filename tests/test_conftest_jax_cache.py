"""conftest.py's JAX compilation cache (tests/_jax_cache.py): the test processes of a run keep
the XLA programs JAX compiles in one persistent cache, by default kept from run to run, so a
program compiled again -- after a module's ``jax.clear_caches``, for a fresh lambda, in the other
worker or the next run -- is loaded, with the same values; processes sharing it never read an
entry half written."""
from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

import _jax_cache

jax = pytest.importorskip("jax", reason="the cache is JAX's")

_HITS: list[str] = []
_listening = False


def _on_event(event: str, **kwargs: object) -> None:
    if event == "/jax/compilation_cache/cache_hits":
        _HITS.append(event)


@pytest.mark.skipif(os.environ.get("TANGENTIA_TEST_JAX_CACHE", "1") == "0",
                    reason="TANGENTIA_TEST_JAX_CACHE=0 turns the cache off")
def test_a_program_compiled_again_is_loaded_from_the_runs_cache():
    global _listening
    directory = jax.config.jax_compilation_cache_dir
    assert directory, "conftest set no JAX compilation cache"
    if not os.environ.get("JAX_COMPILATION_CACHE_DIR"):    # (not the user's own)
        # the directory the run's first process chose, which every process of the run uses
        assert directory == os.environ[_jax_cache.RUN_ENV]
        if os.environ.get("TANGENTIA_TEST_JAX_CACHE", "1") == "1":
            assert directory == _jax_cache.default_directory()
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


def _cache(path):
    from jax._src.lru_cache import LRUCache
    assert _jax_cache.make_atomic()
    return LRUCache(str(path), max_size=-1)


def test_an_entry_is_never_seen_half_written(tmp_path):
    """A reader polling for entries another thread writes gets each whole or not at all (JAX's
    own put, ``write_bytes`` in place, fails this: a reader sees the file as it grows)."""
    cache = _cache(tmp_path)
    value = b"x" * (32 << 20) + b"end"
    keys = [f"k{i}" for i in range(3)]
    seen: list[int] = []
    done = threading.Event()

    def write():
        try:
            for key in keys:
                cache.put(key, value)
        finally:
            done.set()

    writer = threading.Thread(target=write)
    writer.start()
    deadline = time.monotonic() + 60
    try:
        for key in keys:
            while time.monotonic() < deadline:
                got = cache.get(key)
                if got is not None:
                    seen.append(len(got))
                    break
                if done.is_set() and cache.get(key) is None:
                    raise AssertionError(f"{key} was never written")
    finally:
        writer.join(60)
    assert seen == [len(value)] * len(keys)
    assert sorted(os.listdir(tmp_path)) == [f"{k}-cache" for k in keys]   # no temporary left
    cache.put("k0", b"other")                                # an entry is written once
    assert cache.get("k0") == value


def test_a_read_touches_the_entry_and_a_failed_read_is_a_miss(tmp_path):
    cache = _cache(tmp_path)
    cache.put("a", b"123")
    path = tmp_path / "a-cache"
    os.utime(path, (1e9, 1e9))
    assert cache.get("a") == b"123"
    assert path.stat().st_mtime > time.time() - 3600        # read: no longer old for prune
    assert cache.get("missing") is None
    (tmp_path / "b-cache").mkdir()                           # unreadable (IsADirectoryError)
    assert cache.get("b") is None


def test_a_failed_write_leaves_no_entry_and_raises_nothing(tmp_path):
    import shutil
    cache = _cache(tmp_path / "d")
    shutil.rmtree(tmp_path / "d")                            # (as a full disk: OSError)
    cache.put("a", b"123")
    assert cache.get("a") is None and not (tmp_path / "d").exists()


def test_prune_removes_entries_unused_for_days_at_most_once_a_day(tmp_path):
    now = time.time()
    for name, age_days in [("old-cache", 20), ("new-cache", 1), (".x.tmp", 0.5),
                           (".y.tmp", 0.01), ("other", 30)]:
        (tmp_path / name).write_bytes(b"v")
        os.utime(tmp_path / name, (now - age_days * 86400,) * 2)
    assert _jax_cache.prune(str(tmp_path), days=14, now=now) == 2
    assert sorted(os.listdir(tmp_path)) == [".pruned", ".y.tmp", "new-cache", "other"]
    os.utime(tmp_path / "new-cache", (now - 20 * 86400,) * 2)
    assert _jax_cache.prune(str(tmp_path), days=14, now=now + 3600) == 0      # pruned today
    assert _jax_cache.prune(str(tmp_path), days=14, now=now + 2 * 86400) == 2  # + .y.tmp
    assert sorted(os.listdir(tmp_path)) == [".pruned", "other"]


def test_the_first_process_chooses_and_the_others_follow(tmp_path, monkeypatch):
    monkeypatch.delenv(_jax_cache.RUN_ENV, raising=False)
    monkeypatch.setenv("TANGENTIA_TEST_JAX_CACHE", "0")
    assert _jax_cache.choose(first_process=True) == (None, None)
    monkeypatch.setenv("TANGENTIA_TEST_JAX_CACHE", str(tmp_path / "kept"))
    assert _jax_cache.choose(first_process=True) == (str(tmp_path / "kept"), "prune")
    assert os.environ[_jax_cache.RUN_ENV] == str(tmp_path / "kept")
    # a worker, or a run a test started: the first process's choice, nothing to do at the end
    monkeypatch.setenv("TANGENTIA_TEST_JAX_CACHE", "run")
    assert _jax_cache.choose(first_process=False) == (str(tmp_path / "kept"), None)
    monkeypatch.delenv(_jax_cache.RUN_ENV)
    directory, end = _jax_cache.choose(first_process=True)
    assert end == "remove" and os.path.isdir(directory)
    assert os.environ[_jax_cache.RUN_ENV] == directory
    _jax_cache.finish(directory, end)
    assert not os.path.exists(directory)
    monkeypatch.delenv(_jax_cache.RUN_ENV)
    monkeypatch.delenv("TANGENTIA_TEST_JAX_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    directory, end = _jax_cache.choose(first_process=True)
    assert end == "prune" and directory == _jax_cache.default_directory()
    assert directory.startswith(str(tmp_path / "home" / "tangentia" / "test-jax"))
    assert jax.__version__ in directory
