"""JAX's persistent compilation cache for the test suite (tests/conftest.py uses it).

The tests that compare with JAX call it eagerly, one XLA compile (about 30 ms of CPU) per
operation, shape and dtype, and under ``jax.jit``; JAX's compiles were more than half of
those modules' CPU time (test_api_completeness_core + test_fuzz_jax in one process: 43.3 s
of CPU with an empty cache, 17.2 s with the one the first run left).  A program found in the
cache is loaded, not compiled: the same executable, so the same bits; JAX still runs it.
The cache is keyed by the program's text, JAX's and jaxlib's versions, XLA's flags and the
compile options, so a changed test or a new JAX compiles what changed.

Where (``TANGENTIA_TEST_JAX_CACHE``):

- unset or ``1``: a directory kept from run to run, ``~/.cache/tangentia/test-jax/<jax>-
  <jaxlib>-<cpu>`` (``$XDG_CACHE_HOME`` honoured; ``<cpu>`` a digest of the processor's model
  and flags, as XLA compiles for the host's instruction set and a home directory may be shared
  by machines).  Entries neither read nor written for ``PRUNE_DAYS`` days are removed (at most
  once a day, by a run's first process, as it ends);
- ``run``: a directory of this run's own, removed at its end: every XLA program is compiled
  at least once (the cold figure);
- ``0``: none;
- anything else: that directory, kept (pruned as above).

A run's first process (xdist's controller, or the one process) decides and hands the
directory to its workers and to the pytest processes its tests start (``RUN_ENV``), so
they share it.  JAX's cache without eviction (``jax_compilation_cache_max_size`` -1, its
default) writes an entry in place, unlocked: another process could read it half written and
warn (``Error reading persistent compilation cache entry``) inside a test.  ``make_atomic``
makes a write a rename of a complete file (one that fails, say on a full disk, leaves no entry
and no warning), and a read that fails (an entry pruned while read) a miss.  (JAX's eviction, the alternative, takes a file lock and lists the whole directory on
every write.)
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time

RUN_ENV = "TANGENTIA_TEST_JAX_CACHE_RUN"   # the directory a run's first process chose ("": none)
PRUNE_DAYS = 14
_SUFFIX = "-cache"                           # JAX's (jax._src.lru_cache._CACHE_SUFFIX)
_STAMP = ".pruned"


def _cpu_digest() -> str:
    """A digest of the processor's model and instruction-set flags (Linux's /proc/cpuinfo)."""
    import platform
    text = platform.machine() + platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "flags", "Features", "CPU part")):
                    text += line
                elif not line.strip():          # the first processor's entry only
                    break
    except OSError:
        pass
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _versions() -> str:
    from importlib import metadata
    names = []
    for package in ("jax", "jaxlib"):
        try:
            names.append(metadata.version(package))
        except metadata.PackageNotFoundError:
            names.append("none")
    return "-".join(names)


def default_directory() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tangentia", "test-jax", f"{_versions()}-{_cpu_digest()}")


def choose(first_process: bool) -> tuple[str | None, str | None]:
    """The directory this process gives JAX (None: no cache), and what this process does with
    it as it ends: ``"remove"`` (a directory it made for the run), ``"prune"`` (a kept one it
    chose as a run's first process) or None.  A run's first process decides and exports its
    choice (``RUN_ENV``); its workers and the runs its tests start read it."""
    setting = os.environ.get("TANGENTIA_TEST_JAX_CACHE", "1")
    if setting == "0":
        return None, None
    if RUN_ENV in os.environ:
        return os.environ[RUN_ENV] or None, None
    end: str | None
    if setting == "run":
        directory: str | None = tempfile.mkdtemp(prefix="tangentia-test-jax-")
        end = "remove"
    else:
        directory = default_directory() if setting == "1" else \
            os.path.abspath(os.path.expanduser(setting))
        end = "prune" if first_process else None
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError:             # (a read-only home: no cache)
            directory, end = None, None
    if first_process:
        os.environ[RUN_ENV] = directory or ""
    return directory, end


def make_atomic() -> bool:
    """Make JAX's cache (without eviction) write each entry as a rename of a complete file,
    touch an entry it reads (for ``prune``), and take a read that fails for a miss.  False
    where this JAX has no such cache class."""
    try:
        from jax._src import lru_cache
    except ImportError:
        return False
    cls = lru_cache.LRUCache
    if getattr(cls, "_tangentia_atomic", False):
        return True
    put, get = cls.put, cls.get

    def atomic_put(self, key: str, value: bytes) -> None:
        path = os.fspath(self.path / f"{key}{_SUFFIX}") if key else ""
        if self.eviction_enabled or "://" in path or not key:   # (not a local file)
            return put(self, key, value)
        if os.path.exists(path):
            return
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=os.path.dirname(path))
            with os.fdopen(fd, "wb") as f:
                f.write(value)
            os.replace(tmp, path)
        except BaseException as e:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            if not isinstance(e, OSError):
                raise
            # (a full disk, a removed directory: no entry, where JAX's put warned in the test)

    def touching_get(self, key: str) -> bytes | None:
        try:
            value = get(self, key)
        except OSError:        # (removed by a prune while read)
            return None
        if value is not None and not self.eviction_enabled:
            try:
                os.utime(os.fspath(self.path / f"{key}{_SUFFIX}"))
            except (OSError, TypeError, ValueError):
                pass
        return value

    cls.put, cls.get = atomic_put, touching_get
    cls._tangentia_atomic = True
    return True


def prune(directory: str, days: float = PRUNE_DAYS, now: float | None = None) -> int:
    """Remove the entries of ``directory`` neither read nor written for ``days`` days, and
    temporary files an interrupted write left (older than an hour); at most once a day.
    Returns how many files it removed."""
    now = time.time() if now is None else now
    stamp = os.path.join(directory, _STAMP)
    try:
        if now - os.stat(stamp).st_mtime < 86400:
            return 0
    except OSError:
        pass
    removed = 0
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                try:
                    age = now - entry.stat().st_mtime
                    if (entry.name.endswith(_SUFFIX) and age > days * 86400) or \
                            (entry.name.endswith(".tmp") and age > 3600):
                        os.unlink(entry.path)
                        removed += 1
                except OSError:
                    pass
        with open(stamp, "w"):
            pass
        os.utime(stamp, (now, now))
    except OSError:
        pass
    return removed


def finish(directory: str | None, end: str | None) -> None:
    """As the process ends: what ``choose`` said."""
    if directory is None or end is None:
        return
    if end == "remove":
        shutil.rmtree(directory, ignore_errors=True)
    elif end == "prune":
        prune(directory)
