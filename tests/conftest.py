"""Shared pytest configuration for the tangentia test suite.

Makes the package importable when the tests are run from a checkout without
installing it (``pytest`` or ``python -m pytest`` from the repository root).
"""
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

# Which jit backend the suite runs by default.  The numba backend compiles each
# distinct program natively (about a second per program), and the suite stages
# thousands of small programs, so by default they run on the NumPy reference
# backend; the numba backend is tested differentially against it, program by
# program, in tests/test_numba_backend.py (and the tests that name a backend).
# Run everything on numba with TANGENTIA_TEST_BACKEND=numba (slow: tens of minutes).
os.environ["TANGENTIA_JIT_BACKEND"] = os.environ.get("TANGENTIA_TEST_BACKEND", "numpy")
# Tests that name the numba backend check its own code, so it compiles before the
# first call (no tiering); tests/test_tiered.py turns tiering on where it tests it.
os.environ.setdefault("TANGENTIA_JIT_TIERED", "0")
# ... and numba's own code: no program loaded from the machine-code cache of an earlier run
# (numba_backend.objcache; tests/test_numba_objcache.py turns it on where it tests it).
os.environ.setdefault("TANGENTIA_NUMBA_FAST_LOAD", "0")
# Every program staged by the suite is type-checked with the programs it carries
# (core.typecheck_jaxpr) as it is built: no measurable cost (CPU time of
# test_control_flow, test_transformations, test_custom_derivatives within +-5%).
os.environ.setdefault("TANGENTIA_CHECK_PROGRAMS", "1")


import ctypes  # noqa: E402
import ctypes.util  # noqa: E402
import gc  # noqa: E402

import pytest  # noqa: E402


def _malloc_trim():
    """``malloc_trim(0)`` where the C library is glibc, else nothing: returns freed heap
    memory (in every thread's arena) to the system, which glibc otherwise keeps."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):  # not glibc (macOS, musl, Windows)
        return lambda pad: 0


_TRIM = _malloc_trim()

# The cyclic garbage collector's thresholds (Python's: 700, 10, 10).  A test run allocates
# without pause (JAX's tracing and compiling, numba's compiler, hypothesis), so Python's
# own full collections (threshold 2), each a walk over every object not frozen (0.15-0.3 s),
# ran dozens of times per module: in one process after collecting the suite,
# test_fuzz_transforms + test_numba_complex spent 12.2 s of 62 s CPU in the collector, 10.1 s
# in 35 full collections (test_numba_complex alone 35 -> 23-30 s CPU with these settings).
# A full collection now waits for 100 collections of the middle generation; the young ones
# are rarer too (5,000).  Memory stays bounded: _release collects everything after each
# module, and between two tests where a worker grows past the bound (pytest_runtest_teardown);
# what a worker keeps after a numba module is about 60 MB more (its heap, fragmented by the
# garbage that waited: test_numba_complex 668 -> 737 MB after its release).
gc.set_threshold(5_000, 10, 100)


# Between two tests, a worker whose RSS exceeds the larger of these (MB) releases its
# compiled programs as at the end of a module (see _release): the bound on a worker's
# memory within a long module that compares with JAX (issue 23: at most 1.5 GB).
_RELEASE_ABOVE_MB = 1024       # absolute
_RELEASE_GROWTH_MB = 192       # above the RSS left by the last release
_released_mb = 0.0
_recorder = None               # tests/_memory.py's, when TANGENTIA_TEST_MEMORY is set


def _rss_mb():
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, AttributeError):  # no /proc: never releases between tests
        return 0.0


def _release(freeze=False):
    """Drop the compiled programs this worker holds -- jit's caches, tangentia's and
    JAX's (where a test compared with JAX) -- and hand the freed memory back to the
    system.

    Clearing alone frees the memory to the C allocator, not to the system: glibc keeps
    a freed heap (one arena per thread: XLA's and numba's compiler threads have theirs),
    so a worker's RSS only ever grew, to 1.77 GB at half the suite in one process.
    ``malloc_trim`` hands it back: after tests/test_api_completeness_core.py alone,
    862 MB -> 314 MB.  Compiled numba code (LLVM's, outside the heap) stays.

    ``freeze`` (at the end of a module): what survives is moved out of the cyclic
    garbage collector's sight (``gc.freeze``), as at the end of the collection
    (pytest_collection_finish): see there."""
    global _released_mb
    import tangentia
    tangentia.clear_caches()
    jax = sys.modules.get("jax")
    if jax is not None and hasattr(jax, "clear_caches"):
        jax.clear_caches()
    gc.collect()
    if freeze:
        gc.freeze()
    _TRIM(0)
    _released_mb = _rss_mb()


# JAX's persistent compilation cache (tests/_jax_cache.py: where, why, and how it is made
# safe for processes sharing it).  The tests that compare with JAX call it eagerly, one XLA
# compile (about 30 ms of CPU) per operation, shape and dtype, and compile the same programs
# again and again: after each module's release (jax.clear_caches above), for each hypothesis
# example's fresh lambda (jit, grad, cond, scan: JAX's in-memory caches are keyed by the
# function, the persistent one by the program), in the next module or the other worker, and
# in the next run.  A program found there is loaded, not compiled: the same executable, so
# the same bits.  By default the directory is kept from run to run (TANGENTIA_TEST_JAX_CACHE:
# run, one for this run only, shared by its workers; 0, none; or a directory); the run's
# first process chooses it (pytest_configure) and its workers use the same.  It is set
# through jax.config, once JAX is imported (before each module).
_jax_cache_choice: tuple[str | None, str | None] = (None, None)  # (directory, what at the end)
_jax_cache_dir = None                                       # the directory JAX was given here


def _use_jax_cache(directory):
    """Point JAX (where imported, and not already given a directory) at ``directory``."""
    global _jax_cache_dir
    jax = sys.modules.get("jax")
    if directory is None or _jax_cache_dir is not None or jax is None:
        return
    import _jax_cache as cache
    if not cache.make_atomic():  # (a JAX without that cache class: none)
        return
    try:
        if jax.config.jax_compilation_cache_dir:     # the user's own (JAX_COMPILATION_CACHE_DIR)
            _jax_cache_dir = jax.config.jax_compilation_cache_dir
            return
        jax.config.update("jax_compilation_cache_dir", str(directory))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    except AttributeError:       # (a JAX without these options: no cache)
        return
    _jax_cache_dir = directory


@pytest.fixture(autouse=True, scope="session")
def _jax_compilation_cache():
    return _jax_cache_choice[0]


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs(_jax_compilation_cache):
    """After each test module, release what compiled programs it left in this worker
    (_release), so a worker's memory follows one module's needs, not the sum of every
    module it ran.  (Before it: JAX's persistent cache, once JAX is imported.)"""
    _use_jax_cache(_jax_compilation_cache)
    yield
    _release(freeze=True)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    # After the test's fixtures are torn down (trylast): a module that grows a worker
    # past the bound releases between two of its tests.
    rss = _rss_mb()
    if rss > max(_RELEASE_ABOVE_MB, _released_mb + _RELEASE_GROWTH_MB):
        _release()
        if _recorder is not None:
            _recorder.write("release", item.nodeid, rss0=rss, rss1=_released_mb)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    # xdist's default "load" distribution, with the tests that compile much numba code
    # (which no worker ever frees) dealt evenly to the workers and run last
    # (tests/_xdist_balance.py): the bound on each worker's memory
    if config.getoption("dist") != "load":
        return None
    import _xdist_balance
    return _xdist_balance.BalancedLoadScheduling(config, log)


def pytest_collection_finish(session):
    # Every full collection of the cyclic garbage collector (conftest's _release after each
    # module, and Python's own as objects pile up) walked every object the process holds:
    # after collecting the suite, 440,000 (every test module, JAX, numba, SciPy), 0.3 s a
    # walk, more as the run went on; about 0.5 s of CPU per module comparing with JAX.
    # Those objects live until the worker ends, so they are frozen (``gc.freeze``: never
    # walked again; reference counting still frees them), as is what survives each module's
    # release: a walk then sees only the objects made since.  (A frozen object that later
    # becomes part of a garbage cycle is not collected: a leak, bounded by what survived a
    # module's release, where caches were already cleared and collected.)
    gc.collect()
    gc.freeze()


# The test files this process collects (None: all), when tests/_xdist_balance.py started it
# for a share of the numba tests: set in pytest_configure, before the collection.
_only: frozenset[str] | None = None


def pytest_ignore_collect(collection_path, config):
    # A fresh worker for a share collects its share's files only (tests/_xdist_balance.py's
    # ONLY): not every module, JAX and SciPy (10 s of CPU and 425 MB at its start)
    if _only is None or not collection_path.name.startswith("test_") \
            or collection_path.suffix != ".py":
        return None
    try:
        name = collection_path.relative_to(config.rootpath).as_posix()
    except ValueError:      # (outside the root directory)
        return None
    return name not in _only or None


def _package_bytecode(package):
    """Write the bytecode of ``package``'s modules (``.pyc`` in their ``__pycache__``) where it
    is missing or was compiled from another source, in the hash-checked form: Python compares
    the hash recorded in it with the source's at every import, and compiles the source instead
    where they differ, so it is never stale, whatever the sources' times.

    Where ``PYTHONDONTWRITEBYTECODE`` is set (as on the machine the suite is developed on)
    Python never writes tangentia's bytecode, so every process of a run compiled the
    package's sources again (227 modules, 2.8 MB: ~0.9 s of CPU for the whole package,
    ~0.65 s for what ``import tangentia`` and the numba backend import): the xdist workers
    and the processes the tests start (children that import tangentia, dask's and the numba
    pool's workers, the sphinx build; test_signals_compiled_loops' 7 children: 16.8 -> 12.2 s
    of CPU with the bytecode written).  Written here once, by the run's first
    process (a file already up to date costs a read and a hash: ~10 ms for the package).

    On unless ``TANGENTIA_TEST_BYTECODE=0``.  The bytecode it writes in the checkout is read by
    every later process that imports tangentia from there, benchmarks included, as an
    installed package's is: a fresh-process A/B against a tree without it (``bench_cold.py``'s
    first calls import the numba backend's modules) would credit the tree with ~0.3-0.9 s of
    imports, so compare trees in the same state (or remove ``tangentia/**/__pycache__/*.pyc``
    of both first)."""
    import importlib.util
    import py_compile
    header = b"\x03\x00\x00\x00"    # the flags of a hash-checked pyc (PEP 552)
    for folder, dirs, files in os.walk(package):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            try:
                cfile = importlib.util.cache_from_source(path)
                with open(path, "rb") as f:
                    source_hash = importlib.util.source_hash(f.read())
                want = importlib.util.MAGIC_NUMBER + header + source_hash
                try:
                    with open(cfile, "rb") as f:
                        if f.read(16) == want:
                            continue
                except OSError:
                    pass
                py_compile.compile(path, cfile, doraise=True,
                                   invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
            except (OSError, ValueError, SyntaxError, py_compile.PyCompileError):
                continue    # (unreadable, unwritable, or a syntax error the import will report)


def pytest_configure(config):
    global _recorder, _only, _jax_cache_choice
    # tangentia's bytecode, for every process of the run (see _package_bytecode)
    if "PYTEST_XDIST_WORKER" not in os.environ and sys.dont_write_bytecode \
            and os.environ.get("TANGENTIA_TEST_BYTECODE", "1") == "1":
        _package_bytecode(os.path.join(_ROOT, "tangentia"))
    # JAX's compilation cache: the run's first process chooses the directory (its workers,
    # started after this, and the runs its tests start read its choice: tests/_jax_cache.py)
    import _jax_cache as cache
    _jax_cache_choice = cache.choose(first_process="PYTEST_XDIST_WORKER" not in os.environ)
    # TANGENTIA_TEST_ONLY (set by tests/_xdist_balance.py for a fresh worker; removed here, so
    # that the tests' own subprocesses collect what they ask for): see pytest_ignore_collect.
    only = os.environ.pop("TANGENTIA_TEST_ONLY", None)
    if only:
        _only = frozenset(only.split(","))
    # TANGENTIA_TEST_MEMORY=DIR: each process records its RSS per module and its peak
    # in DIR/<worker>.tsv (tests/_memory.py).
    directory = os.environ.get("TANGENTIA_TEST_MEMORY")
    if directory:
        import _memory
        _recorder = _memory.register(config, directory)


def pytest_unconfigure(config):
    # JAX's cache: no more writes; the run's own directory removed, a kept one pruned
    jax = sys.modules.get("jax")
    if jax is not None and _jax_cache_dir is not None and _jax_cache_dir == _jax_cache_choice[0]:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", float("inf"))
    import _jax_cache as cache
    cache.finish(*_jax_cache_choice)
