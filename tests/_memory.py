"""A pytest plugin that records where a test process's memory goes.

tests/conftest.py registers it when ``TANGENTIA_TEST_MEMORY`` names a directory.  Each
process (the main one, or each xdist worker ``gw0``, ``gw1``, ...) writes
``<dir>/<worker>.tsv``, tab-separated, with a header line and:

- ``module`` lines, one per test module as it ends (after its module-scoped fixtures
  are torn down, so after conftest's release of compiled programs): its seconds, the
  RSS when its first test started and after its teardown, the highest RSS seen
  between two of its tests, the process's peak RSS so far (``ru_maxrss``) and how
  much the module raised it, and its CPU seconds (its process's and ended children's);
- ``test`` lines for each test that raised the process's peak RSS by 20 MB or more, or
  took 0.5 CPU seconds or more (its setup and teardown included): where a cold numba
  cache's compiles go;
- ``release`` lines for each time conftest released memory between tests;
- a ``session`` line with the process's peak RSS when it ends.

And ``<dir>/<worker>.compiles.tsv``: a line per outermost numba compile (the test, the
function, its file, a digest of its code, closure and argument types, its CPU seconds, the
types): the same digest twice, in one file or two, is a program compiled again.

Then numba's share: the CPU seconds its compiler ran (outermost ``numba:compile`` events,
each thread's own CPU time, so a background compile counts too) and how many such compiles
there were; and JAX's (in the modules that compare with it): the seconds JAX reported for
tracing, lowering and XLA's compiling of its jitted programs (its ``/jax/core/compile/*``
events: wall time, so it grows with the machine's load), how many programs went to XLA's
compile step, and how many of those were loaded from JAX's persistent compilation cache
instead of compiled (``xla_loaded``: tests/_jax_cache.py).

All figures in MB.  Linux only (current RSS is read from /proc/self/statm).
"""
import os
import resource
import time

import pytest

_PAGE = os.sysconf("SC_PAGE_SIZE")
_FIELDS = ("kind", "name", "seconds", "rss_start_mb", "rss_end_mb", "rss_max_mb",
           "peak_mb", "peak_rise_mb", "cpu_s", "numba_s", "numba_compiles", "xla_s",
           "xla_compiles", "xla_loaded")


def rss_mb():
    """The process's current resident set size, in MB (NaN where /proc is missing)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * _PAGE / 2**20
    except OSError:
        return float("nan")


def peak_mb():
    """The process's peak resident set size so far, in MB (ru_maxrss is in KB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_s():
    """CPU seconds (user + system) of this process and of its ended child processes: a
    module's cost that does not depend on how busy the machine is."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _code_digest(code, h):
    """Feed ``code`` (a code object, its constants' code objects included) to the hash ``h``:
    not its file name or line numbers, which differ between copies of one generated module."""
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            _code_digest(c, h)
        else:
            h.update(repr(c).encode())


def compile_digest(dispatcher, args):
    """A digest of what numba compiles: the function's code, the values its closure holds and
    the argument types; two compiles with the same digest compiled the same program."""
    import hashlib
    h = hashlib.sha1()
    fn = getattr(dispatcher, "py_func", None)
    code = getattr(fn, "__code__", None)
    if code is not None:
        _code_digest(code, h)
        for cell in fn.__closure__ or ():
            try:
                h.update(repr(cell.cell_contents).encode())
            except ValueError:      # (an empty cell)
                pass
    h.update(repr(tuple(args)).encode())
    return h.hexdigest()[:16]


class NumbaCompiles:
    """Totals of numba's outermost compiles in this process: CPU seconds (each compiling
    thread's own) and how many.  Listens to numba's ``numba:compile`` events once numba is
    imported (``start``); nested compiles (a function's callees) count in their caller.
    With ``log`` (a writable file), each outermost compile is a line there: the test running,
    the function's name and file, ``compile_digest`` of it, its argument types and CPU
    seconds: the same digest in two lines (of one process or two) is a program compiled
    twice."""

    def __init__(self, log=None):
        import threading
        self._local = threading.local()
        self.seconds = 0.0
        self.count = 0
        self.log = log
        self.test = ""

    def start(self):
        try:
            from numba.core import event
        except ImportError:
            return
        recorder = self

        class _Listener(event.Listener):
            def on_start(self, ev):
                depth = getattr(recorder._local, "depth", 0)
                if depth == 0:
                    recorder._local.t0 = time.thread_time()
                recorder._local.depth = depth + 1

            def on_end(self, ev):
                depth = getattr(recorder._local, "depth", 1) - 1
                recorder._local.depth = depth
                if depth == 0:
                    seconds = time.thread_time() - recorder._local.t0
                    recorder.seconds += seconds
                    recorder.count += 1
                    if recorder.log is not None:
                        recorder.write(ev.data or {}, seconds)

        event.register("numba:compile", _Listener())

    def write(self, data, seconds):
        dispatcher, args = data.get("dispatcher"), data.get("args", ())
        fn = getattr(dispatcher, "py_func", None)
        code = getattr(fn, "__code__", None)
        name = getattr(fn, "__qualname__", "?")
        where = os.path.basename(code.co_filename) if code is not None else "?"
        try:
            digest = compile_digest(dispatcher, args)
        except Exception:       # (a digest is a measurement's, never a test's failure)
            digest = "?"
        types = " ".join(str(a) for a in args).replace("\t", " ")[:300]
        self.log.write(f"{self.test}\t{name}\t{where}\t{digest}\t{seconds:.3f}\t{types}\n")

    def totals(self):
        return self.seconds, self.count


class XlaCompiles:
    """Totals of JAX's compile events in this process (see the module docstring), counted
    from when ``start`` finds JAX imported (the recorder tries before every test)."""

    _EVENTS = ("/jax/core/compile/jaxpr_trace_duration",
               "/jax/core/compile/jaxpr_to_mlir_module_duration",
               "/jax/core/compile/backend_compile_duration")

    def __init__(self):
        self.seconds = 0.0
        self.count = 0
        self.loaded = 0
        self.started = False

    def start(self):
        import sys
        if self.started or "jax" not in sys.modules:
            return
        self.started = True
        from jax import monitoring

        def listener(event, duration, **kwargs):
            if event in self._EVENTS:
                self.seconds += duration
                self.count += event == self._EVENTS[2]

        def hits(event, **kwargs):
            self.loaded += event == "/jax/compilation_cache/cache_hits"

        monitoring.register_event_duration_secs_listener(listener)
        monitoring.register_event_listener(hits)

    def totals(self):
        return self.seconds, self.count, self.loaded


def _module_of(nodeid):
    return nodeid.split("::")[0]


class MemoryRecorder:
    """The hooks; see the module docstring."""

    def __init__(self, path, compiles=None):
        self._out = open(path, "w", buffering=1)
        self._out.write("\t".join(_FIELDS) + "\n")
        self._module = None
        self._module_start = None   # (time, rss, peak) when the module's first test began
        self._module_max = 0.0
        self._module_ends = False
        self._test_peak = 0.0
        self._test_cpu = 0.0
        self._test_numba = (0.0, 0)
        self.numba = NumbaCompiles(compiles and open(compiles, "w", buffering=1))
        self.numba.start()
        self.xla = XlaCompiles()
        self._test_xla = (0.0, 0, 0)

    def write(self, kind, name, seconds=0.0, rss0=0.0, rss1=0.0, rss_max=0.0, peak=0.0,
              rise=0.0, cpu=0.0, numba=(0.0, 0), xla=(0.0, 0, 0)):
        self._out.write(f"{kind}\t{name}\t{seconds:.2f}\t{rss0:.1f}\t{rss1:.1f}\t"
                        f"{rss_max:.1f}\t{peak:.1f}\t{rise:.1f}\t{cpu:.2f}\t"
                        f"{numba[0]:.2f}\t{numba[1]}\t{xla[0]:.2f}\t{xla[1]}\t{xla[2]}\n")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self, nodeid, location):
        module = _module_of(nodeid)
        self.xla.start()
        if module != self._module:
            self._module = module
            rss = rss_mb()
            self._module_start = (time.perf_counter(), rss, peak_mb(), cpu_s(),
                                  self.numba.totals(), self.xla.totals())
            self._module_max = rss
        self.numba.test = nodeid
        self._test_peak = peak_mb()
        self._test_cpu = cpu_s()
        self._test_numba = self.numba.totals()
        self._test_xla = self.xla.totals()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item, nextitem):
        # Decided before the teardown runs; acted on in logfinish, after it.
        self._module_ends = nextitem is None or _module_of(nextitem.nodeid) != self._module
        yield

    def pytest_runtest_logfinish(self, nodeid, location):
        rss, peak = rss_mb(), peak_mb()
        self._module_max = max(self._module_max, rss)
        cpu = cpu_s() - self._test_cpu
        numba = self.numba.totals()
        self.xla.start()
        xla = self.xla.totals()
        if peak - self._test_peak >= 20 or cpu >= 0.5:
            self.write("test", nodeid, rss1=rss, peak=peak, rise=peak - self._test_peak,
                       cpu=cpu, numba=_minus(numba, self._test_numba),
                       xla=_minus(xla, self._test_xla))
        if self._module_ends:
            self._module_ends = False
            t0, rss0, peak0, cpu0, numba0, xla0 = self._module_start
            self.write("module", self._module, time.perf_counter() - t0, rss0, rss,
                       self._module_max, peak, peak - peak0, cpu_s() - cpu0,
                       _minus(numba, numba0), _minus(xla, xla0))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session):
        self.write("session", "peak", rss1=rss_mb(), peak=peak_mb(), cpu=cpu_s(),
                   numba=self.numba.totals(), xla=self.xla.totals())
        self._out.close()


def _minus(a, b):
    return tuple(x - y for x, y in zip(a, b))


def register(config, directory):
    """Record this process's memory in ``directory`` (see the module docstring); None
    in xdist's controller, which runs no test."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None and getattr(config.option, "numprocesses", None):
        return None
    os.makedirs(directory, exist_ok=True)
    name = os.path.join(directory, worker or "main")
    recorder = MemoryRecorder(name + ".tsv", name + ".compiles.tsv")
    config.pluginmanager.register(recorder, "tangentia-memory")
    return recorder
