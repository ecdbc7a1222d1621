"""Deals the test modules that compile much numba code to the xdist workers evenly.

numba never frees the code it compiles: its JIT engine keeps every module it is given
(numba/core/codegen.py, ``JITCPUCodegen._add_module``: removing modules is disabled
there because LLVM's MCJIT crashed on it), so each compiled function's machine code
and LLVM module stay in the worker that compiled them until it exits, whatever the
tests drop and however much conftest's ``_release`` trims.  Under xdist's ``load``
scheduling, which worker runs a module depends on timing, and the modules that
compile most (``tests/test_numba_*.py``, next to each other in the collection) could
all land on one worker: 1.83 GB there against 1.09 GB on the other in a full run
today (2.14 against 1.18 GB last time; issue 23 asks for at most 1.5 GB per worker).

``BalancedLoadScheduling`` is xdist's ``LoadScheduling`` except for the tests of
the modules (or test functions, ``module::name``) in ``HEAVY``: once the collection is
known, they are dealt to the workers, longest first (their cold CPU seconds, ``CPU``),
each to the worker with the least CPU so far whose share stays within ``SHARE_MB`` of
``HEAVY``'s MB (ties: the lower worker number), so every run splits them the same way
and both shares end at about the same time;
and a worker runs its share last, once the common queue is empty (those in ``FIRST``,
which also need much memory for a while, first within it).  Last, because what
they compile stays: a module that needs much memory for a while (those comparing with
JAX need up to 0.6 GB) then runs before the compiled code has piled up, not on top of
it.  Everything else is scheduled as xdist does.  A worker that crashes gives its unrun
tests, its share included, back to the common queue, as in xdist.

A fresh worker runs each share (``FRESH``).  Whatever a worker compiled stays until it
exits (numba keeps it: dropping every Python reference to 20 compiled programs, and even
removing their LLVM modules from numba's engine, gave back 7 of their 99 MB of RSS), and a
worker holds 750-1,000 MB when the common queue is done, so its share on top went to
1.54-1.62 GB.  So when the common queue is empty, a worker with a share is shut down (it
first ends the tests it was sent) and a new worker, started as xdist starts one in place of
a crashed worker, collects (about 15 s of CPU) and runs the share: about 400 MB plus the
share's compiled code.  Its tests report as any others (``gw2``, ``gw3``, ...).  It collects
only its share's test files (``ONLY``, read by conftest.py): 3 s of CPU and 175 MB after
collecting, against 10 s and 425 MB for the whole suite (every module, JAX, SciPy, sphinx);
the scheduler maps the share's tests to that shorter collection and back (a fresh worker
that dies gives its unrun tests back by their place in the whole collection).  Where this
xdist has no way to start a worker (``DSession._clone_node``, private), where starting one
fails, or with ``TANGENTIA_TEST_FRESH_WORKER=0``, a worker runs its share itself, as before.

Faults (tests/test_xdist_balance.py drives each): a share waits for the fresh worker started
for it, and a fresh worker that dies while collecting leaves its share to xdist's replacement
(which collects everything); a worker that dies gives its unrun tests back (xdist reruns them);
a report or a scheduling call for a worker already removed is ignored, where xdist's own
scheduler raised ``KeyError: <WorkerController gw0>`` (seen once, session 12: xdist removes
a worker whose channel failed while that worker's queued events still arrive).

conftest.py installs it (``pytest_xdist_make_scheduler``) when the run uses xdist's
default ``--dist load``; other ``--dist`` modes are left alone.
"""
from __future__ import annotations

import os
from typing import Any, Callable

from xdist.scheduler import LoadScheduling

# The test modules that leave compiled code in their worker, with the MB each left (its
# worker's RSS after the module and conftest's release, minus before it; TANGENTIA_TEST_MEMORY,
# a full run with -n 2 and numba's caches COLD, as in CI: private TANGENTIA_CACHE_DIR and
# NUMBA_CACHE_DIR, at b29f3cc, 2026-12-06, session 15; backend, sparse_linalg, irblock, complex,
# custom_linear_solve_root, gemm and blas at 214b9f5, session 16), the weight they are dealt by.  The
# first numba module a worker runs also pays numba's own start (about 60 MB).
# test_numba_kernels stays one unit: its last tests reuse its kernels.  Modules that leave
# little (test_fuzz_jax 13 MB, test_scipy_interpolate 18, test_ode 23, test_conv/test_fft 9,
# test_complex 0.5) are not here: they need much memory for a while (comparing with JAX:
# test_fuzz_jax 267 MB above what it leaves), so they run in the common queue, before the
# compiled code piles up.  test_numba_irblock_loops was left in the common queue (224 MB in
# session 15, when the shares' fresh workers peaked at 1.35-1.45 GB); at 2295aa7 (session 21)
# the common queue's numba modules all ran in one worker (irblock_loops, segments, seg_loops,
# det_nonfinite, pool, vmap_rows, ...: 132 s of numba there), which grew from 578 to
# 1,403 MB through them (peak 1.41 GB) while the shares peaked at 1.01 and 1.25 GB: it is now
# in a share (161 MB left, 28 s CPU in that run).
HEAVY: dict[str, float] = {
    "tests/test_numba_backend.py": 540,
    "tests/test_numba_kernels.py": 450,
    "tests/test_scipy_sparse_linalg.py": 162,
    "tests/test_numba_irblock.py": 100,
    "tests/test_numba_complex.py": 96,
    "tests/test_custom_linear_solve_root.py": 113,
    # (session 19: 227 MB left and 69 s CPU cold, one process after test_numba_backend, blas,
    # complex; it was 76 MB and 27 s: the fused-update programs, epilogue and SGD tests since;
    # session 21, at 2295aa7: 72 MB and 22 s, in a fresh worker after backend and blas)
    "tests/test_numba_gemm.py": 90,
    "tests/test_numba_irblock_loops.py": 161,
    "tests/test_numba_blas.py": 70,
    "tests/test_numba_objmode.py": 55,
    "tests/test_numba_vecmath_trig.py": 32,
    "tests/test_numba_vecmath.py": 21,
    "tests/test_gemm_calibration.py": 6,
    # one program of solve, inv, cholesky, svd, ...: numba's np.linalg routines, shared with
    # test_numba_kernels (JOIN); 182 MB and 31 s CPU in the common queue (at 214b9f5, session 16)
    "tests/test_fuzz_transforms_linalg.py::test_numba_backend_gives_the_same_values": 182,
    # its ord=2 case compiles numba's np.linalg.svd (jit(jacrev(norm)) on the numba backend),
    # which test_numba_kernels has compiled: 69 MB left there (session 19), 187 alone
    "tests/test_fuzz_jax_special_points.py::test_max_norms_at_zero_and_of_empty_arrays_as_jax":
        69,
}

# Of the HEAVY modules, those that also need much memory for a while (above what they
# leave): a worker runs them first in its share, before the rest of its compiled code.  In
# a cold run of session 11, test_scipy_sparse_linalg ran last in its worker's share and took
# it from 1.59 to 1.72 GB.
FIRST: frozenset[str] = frozenset({
    "tests/test_scipy_sparse_linalg.py",      # 146 MB above what it leaves (session 15)
    "tests/test_custom_linear_solve_root.py",  # 5
})


# The CPU seconds of each HEAVY module, cold (numba's caches empty; TANGENTIA_TEST_MEMORY's
# cpu_s, the same runs as HEAVY's).  The shares are dealt by these, so that both fresh workers
# end together: dealt by MB, one share took 230 s and the other 163 s (session 13), and the
# first worker idled for the difference at the end of the run; with session 13's figures
# the shares took 200 and 171 s in session 15's run; with these, 187 and 184 s (968 and 966
# MB).  MB still bounds a share (SHARE_MB).  The linear algebra shares numba's compiled
# kernels (module-level ``@njit`` callees are compiled once per process and signature):
# in one process, cold, test_custom_linear_solve_root then test_numba_kernels took 17 + 89 s
# against 11 + 101 s in different workers; these figures put both in one share.
CPU: dict[str, float] = {
    "tests/test_numba_kernels.py": 101,
    "tests/test_numba_backend.py": 70,
    "tests/test_numba_irblock.py": 32,
    "tests/test_numba_gemm.py": 22,
    "tests/test_numba_irblock_loops.py": 28,
    "tests/test_scipy_sparse_linalg.py": 21,
    "tests/test_numba_complex.py": 21,
    "tests/test_numba_objmode.py": 17,
    "tests/test_numba_blas.py": 18,
    "tests/test_custom_linear_solve_root.py": 9,
    "tests/test_gemm_calibration.py": 6,
    "tests/test_numba_vecmath_trig.py": 4.5,
    "tests/test_numba_vecmath.py": 4.2,
    "tests/test_fuzz_transforms_linalg.py::test_numba_backend_gives_the_same_values": 31,
    "tests/test_fuzz_jax_special_points.py::test_max_norms_at_zero_and_of_empty_arrays_as_jax":
        4.5,
}
# Keys dealt to the share of another (both sums of weight and CPU count there): they compile
# the same numba kernels, which a process compiles once (numba's ``np.linalg`` routines and
# their singular paths: in one process, after test_numba_kernels' linear algebra,
# test_fuzz_transforms_linalg's program took 19.5 s of numba instead of 33.8, and
# test_custom_linear_solve_root's 1.8 instead of 8.9; session 15).
JOIN: dict[str, str] = {
    "tests/test_custom_linear_solve_root.py": "tests/test_numba_kernels.py",
    "tests/test_fuzz_transforms_linalg.py::test_numba_backend_gives_the_same_values":
        "tests/test_numba_kernels.py",
    # numba's svd: cold, in one process after test_numba_kernels, custom_linear_solve_root and
    # the linalg fuzz program, the 5 cases took 4.5 s of CPU (the ord=2 case 1.7 s, numba 0.9)
    # against 11.2 s alone (ord=2: 8.1 s, numba 7.2); session 19, load ~17
    "tests/test_fuzz_jax_special_points.py::test_max_norms_at_zero_and_of_empty_arrays_as_jax":
        "tests/test_numba_kernels.py",
}

# At most this many MB of HEAVY weight in one share where another worker has room (issue 23:
# at most 1.5 GB per worker).  Session 15's shares of 1,034 and 941 MB of these weights peaked
# at 1.45 and 1.35 GB from fresh workers that collected the whole suite (about 410 MB); since
# session 16 a fresh worker collects its share's files only and starts from 170-280 MB
# (session 18's shares, 962 and 941 MB: peaks 1.20 and 1.15 GB).  1,100 (session 19): with
# test_numba_gemm's 227 MB no deal within 1,000 existed, and the least-MB fallback gave shares
# of 187 and 216 s; within 1,100, 1,058 and 996 MB, 200 and 204 s.
SHARE_MB = 1100.0

# The environment variable naming (comma-separated, relative to the root directory) the test
# files a fresh worker collects: set while the scheduler starts it (the new process inherits
# it), read and removed by conftest.py's pytest_configure, so the worker's own children do not
# see it.  A worker started without it (xdist's replacement of a crashed worker) collects
# everything, as the first workers do.
ONLY = "TANGENTIA_TEST_ONLY"


def deal(weights: dict[str, float], n_workers: int, cpu: dict[str, float] | None = None,
         cap: float = float("inf")) -> dict[str, int]:
    """``{key: worker index}``.  Without ``cpu``: heaviest first (``weights``), each to the
    least loaded worker.  With ``cpu``: longest first (``cpu``; a key missing there counts
    its weight), each to the worker with the least CPU so far among those whose
    ``weights`` stay within ``cap`` (none: the one with the least weight)."""
    time = weights if cpu is None else {k: cpu.get(k, w) for k, w in weights.items()}
    loads = [0.0] * n_workers
    mb = [0.0] * n_workers
    out = {}
    for key, t in sorted(time.items(), key=lambda kv: (-kv[1], kv[0])):
        room = [j for j in range(n_workers) if mb[j] + weights[key] <= cap]
        k = (min(room, key=lambda j: (loads[j], j)) if room
             else min(range(n_workers), key=lambda j: (mb[j], j)))
        out[key] = k
        loads[k] += t
        mb[k] += weights[key]
    return out


def units(present: set[str], heavy: dict[str, float], cpu: dict[str, float] | None,
          join: dict[str, str]) -> tuple[dict[str, float], dict[str, float] | None,
                                         dict[str, str]]:
    """The units ``deal`` deals, of the ``present`` keys of ``heavy``: each key joined to
    the one ``join`` names where that one is present, with their weights and CPU summed
    (a key missing in ``cpu`` counts its weight): ``(weights, cpu, {key: its unit})``."""
    unit = {k: join[k] if join.get(k) in present else k for k in present}
    weights: dict[str, float] = {}
    seconds: dict[str, float] = {}
    for k in sorted(present):
        u = unit[k]
        weights[u] = weights.get(u, 0.0) + heavy[k]
        seconds[u] = seconds.get(u, 0.0) + (heavy[k] if cpu is None else cpu.get(k, heavy[k]))
    return weights, None if cpu is None else seconds, unit


def key_of(nodeid: str, heavy: dict[str, float]) -> str | None:
    """The ``heavy`` entry of a test: its ``module::function`` (parameters dropped), else
    its module, else None."""
    module, _, rest = nodeid.partition("::")
    function = module + "::" + rest.split("[", 1)[0] if rest else module
    if function in heavy:
        return function
    return module if module in heavy else None


class BalancedLoadScheduling(LoadScheduling):
    """xdist's load scheduling, with the ``heavy`` tests dealt to the workers and run last,
    each share in a fresh worker where ``new_worker`` can start one (see the module
    docstring)."""

    collection: list[str] | None     # xdist's attributes used here
    maxschedchunk: int | None

    def __init__(self, config: Any, log: Any = None,
                 heavy: dict[str, float] | None = None,
                 new_worker: Callable[[Any], Any] | None = None,
                 cpu: dict[str, float] | None = None,
                 join: dict[str, str] | None = None) -> None:
        super().__init__(config, log)
        self.heavy = HEAVY if heavy is None else heavy
        self.cpu = (CPU if heavy is None else None) if cpu is None else cpu
        self.join = (JOIN if heavy is None else {}) if join is None else join
        self.first = FIRST
        self.reserved: dict[Any, list[int]] = {}   # worker -> its share, not yet sent
        # the shares waiting for the fresh workers started for them, in order
        self.waiting: list[tuple[Any, list[int]]] = []
        self.fresh: set[Any] = set()               # the workers started for a share
        self.removed: set[Any] = set()             # the fresh workers removed
        # a fresh worker that collected only its share's files: nodeid -> its index there
        self.local: dict[Any, dict[str, int]] = {}
        self.new_worker = new_worker if new_worker is not None else _new_worker(config)

    @property
    def tests_finished(self) -> bool:
        return not any(self.reserved.values()) and not self.waiting and super().tests_finished

    @property
    def has_pending(self) -> bool:
        return any(self.reserved.values()) or bool(self.waiting) or super().has_pending

    def schedule(self) -> None:
        if self.collection is None:
            if not self._check_nodes_have_same_collection():
                self.log("**Different tests collected, aborting run**")
                return
            collection: list[str] = next(iter(self.node2collection.values()))
            self.collection = collection
            if self.maxschedchunk is None:
                self.maxschedchunk = len(collection)
            nodes = sorted(self.nodes, key=lambda node: str(node.gateway.id))
            keys = [key_of(nodeid, self.heavy) for nodeid in collection]
            weights, cpu, unit = units({k for k in keys if k is not None}, self.heavy,
                                       self.cpu, self.join)
            dealt = deal(weights, len(nodes), cpu, SHARE_MB)
            where = {k: dealt[u] for k, u in unit.items()}
            self.reserved = {node: [] for node in nodes}
            rest = []
            for i, k in enumerate(keys):
                (rest if k is None else self.reserved[nodes[where[k]]]).append(i)
            for share in self.reserved.values():   # FIRST's tests first, else in order
                share.sort(key=lambda i: (keys[i] not in self.first, i))
            self.pending[:] = rest
            if not collection:
                return
        # as xdist's for a known collection: the first chunks, or a new worker's
        for node in self.nodes:
            self.check_schedule(node)

    def add_node_collection(self, node: Any, collection: Any) -> None:
        if (node in self.fresh and self.collection is not None
                and list(collection) != self.collection
                and set(collection) <= set(self.collection)):
            # its share's files only (ONLY): the share is sent as indices into this collection
            self.node2collection[node] = list(collection)
            self.local[node] = {nodeid: i for i, nodeid in enumerate(collection)}
            return
        super().add_node_collection(node, collection)
        if (node in self.fresh or self.waiting) and node not in self.node2collection:
            # (xdist logged the difference; a share would wait for it for ever)
            raise RuntimeError(f"the worker {node.gateway.id} started for a share of the "
                               f"numba tests collected other tests than the first workers")

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        if node not in self.node2pending:
            # A late report of a worker already removed (xdist removes a worker whose
            # channel failed, then its queued events still arrive): xdist's own
            # LoadScheduling ends the run with "INTERNALERROR KeyError: <WorkerController
            # gw0>" here.  Its unrun tests went back to the common queue at its removal.
            self.log(f"ignored: a test report of {node.gateway.id}, no longer scheduled")
            return
        super().mark_test_complete(node, item_index, duration)

    def check_schedule(self, node: Any, duration: float = 0) -> None:
        if node.shutting_down or node not in self.node2pending:
            return      # ending, or removed (a late event): nothing to send it
        if self.pending and node not in self.local:
            super().check_schedule(node, duration)
            return
        if node not in self.node2collection:
            return      # still collecting: scheduled when its collection arrives
        if node in self.reserved:   # a first worker: its own share
            mine: list[int] | None = self.reserved.pop(node)
            if mine and self.new_worker is not None:
                try:
                    new = self._start(node, mine)
                except Exception as error:  # (no fresh worker: this one runs its share)
                    self.log(f"no fresh worker for the share of {node.gateway.id}: {error!r}")
                    self.new_worker = None
                else:
                    # it ends the tests it was sent; the new worker runs its share
                    self.waiting.append((new, mine))
                    self.fresh.add(new)
                    node.shutdown()
                    return
        else:
            # a worker started later: one started for a share, or xdist's replacement of
            # a crashed worker (which takes the share of a fresh worker that crashed
            # before it got it)
            mine = self._take_share(node)
        if mine:
            self.node2pending[node].extend(mine)
            node.send_runtest_some(mine)
        node.shutdown()   # it runs what it was sent, then ends

    def _start(self, node: Any, share: list[int]) -> Any:
        """A fresh worker started by ``new_worker`` with ONLY naming the files of ``share``."""
        assert self.new_worker is not None and self.collection is not None
        files = sorted({self.collection[i].partition("::")[0] for i in share})
        before = os.environ.get(ONLY)
        os.environ[ONLY] = ",".join(files)
        try:
            return self.new_worker(node)
        finally:
            if before is None:
                del os.environ[ONLY]
            else:
                os.environ[ONLY] = before

    def _take_share(self, node: Any) -> list[int] | None:
        """The share started for ``node``, else the first share of a fresh worker removed
        before it took its own (xdist's replacement of it, which collected everything), in
        ``node``'s indices; None if there is none."""
        k = next((k for k, (owner, _) in enumerate(self.waiting) if owner is node), None)
        if k is None:
            k = next((k for k, (owner, _) in enumerate(self.waiting)
                      if owner in self.removed), None)
        if k is None:
            return None
        _, share = self.waiting.pop(k)
        local = self.local.get(node)
        if local is None:
            return share
        assert self.collection is not None
        missing = [self.collection[i] for i in share if self.collection[i] not in local]
        if missing:
            raise RuntimeError(f"the worker {node.gateway.id} started for a share of the numba "
                               f"tests collected other tests than the first workers: "
                               f"{missing[:3]} missing")
        return [local[self.collection[i]] for i in share]

    def remove_node(self, node: Any) -> str | None:
        orphans = self.reserved.pop(node, None)
        if orphans:
            self.pending.extend(orphans)
        if node in self.fresh:
            self.removed.add(node)
        self.fresh.discard(node)
        local = self.local.pop(node, None)
        if local is not None and node in self.node2pending:
            # its unrun tests, by their place in the whole collection (xdist's remove_node
            # names the first as the crashed test and gives the rest back)
            assert self.collection is not None
            index = {i: nodeid for nodeid, i in local.items()}
            full = {nodeid: i for i, nodeid in enumerate(self.collection)}
            self.node2pending[node][:] = [full[index[i]] for i in self.node2pending[node]]
        # (a worker never added, or removed already: nothing of it to give back)
        crashed = super().remove_node(node) if node in self.node2pending else None
        if orphans:
            for other in self.nodes:
                self.check_schedule(other)
        return crashed


def _new_worker(config: Any) -> Callable[[Any], Any] | None:
    """A function starting a new worker like ``node`` (xdist's replacement of a crashed
    worker, without counting a crash), or None where this xdist has none or
    ``TANGENTIA_TEST_FRESH_WORKER=0``."""
    if os.environ.get("TANGENTIA_TEST_FRESH_WORKER", "1") == "0":
        return None
    dsession = config.pluginmanager.getplugin("dsession")
    clone = getattr(dsession, "_clone_node", None)
    return clone if callable(clone) else None
