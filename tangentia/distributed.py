"""tangentia.distributed: ``vmap`` and data-parallel ``value_and_grad`` on a Dask cluster.

Dask does the scheduling, data placement and fault tolerance; this module only
cuts the work into pieces and puts the results back together:

* :func:`vmap` has the semantics of ``tangentia.vmap``.  It splits the mapped
  axis into chunks, runs ``jit(vmap(f))`` on each chunk on a Dask worker and
  concatenates the chunks' results in input order.
* :func:`value_and_grad` returns ``g(params, shards, *args)``: each shard's
  ``jit(value_and_grad(loss))`` runs on the worker that holds the shard, and
  the per-shard results are summed by a tree reduction on the cluster.

Two paths.  ``vmap`` of NumPy inputs (and unmapped arrays up to 1 MiB) sends
its chunks to one Dask actor per worker (``_Runner``), which the client calls
straight on the worker when it can connect to it (else through the
scheduler's proxy): about 0.6 ms a call on a 2-core machine, where a task's
round trip through the scheduler costs about 10 ms (Dask sends the client's,
scheduler's and workers' messages in batches, in windows of 2-10 ms fixed in
its code).  A worker on the client's machine is called over its ``_Channel``,
a Unix socket whose address and token the client gets from the actor through
Dask: about 0.13 ms a call.  A call carries one payload pickled here; through
Dask, short chunks run on the worker's event loop, longer ones in the actor's
threads.  Each worker thread takes the next chunk when its last one is done.
If an actor fails (its worker was lost), the chunks not done run as ordinary tasks,
which the scheduler reruns elsewhere, and the worker's replacement gets an
actor at the next call; a client's actors are released after ``_RUNNER_IDLE``
seconds without calls, since Dask retires no worker that holds one.
``vmap`` of dask arrays or of larger unmapped arrays (scattered once per call)
and ``value_and_grad`` (whose shards may live on the workers) run as tasks,
which Dask places where their data is.

Functions travel with cloudpickle (closures, custom rules, ``odeint``, jitted
functions), pickled once per distributed function, at its first call (as
``jit`` traces once: the values the function closes over are captured then).
The bytes (a few kB) travel with every chunk, so that any worker, including
one that replaces a lost worker, can run any chunk.  Each worker keeps the
jitted functions it built in a small cache keyed by the pickled function's
digest, so repeated chunks reuse the traced and compiled code (one trace and
compile per worker and signature); the on-disk compile cache
(``TANGENTIA_CACHE_DIR``) lets workers on a shared filesystem share it.
This module adds no round trip of its own (the workers and their threads are
looked up at most every 2 s).  See docs/distributed.md.

Dask is optional: ``pip install 'tangentia[distributed]'``.  This module is
not imported by ``import tangentia``; use ``import tangentia.distributed``.
"""
from __future__ import annotations

import asyncio
import atexit
import collections
import concurrent.futures
import functools
import hashlib
import hmac
import inspect
import io
import math
import os
import pickle
import secrets
import selectors
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time
import uuid
import weakref

try:
    import cloudpickle
    import dask.array as da
    import distributed as _dd
    import tblib.pickling_support
    from distributed.protocol import to_serialize
except ImportError as _e:  # pragma: no cover - exercised only without dask
    raise ImportError(
        f"tangentia.distributed needs Dask ({_e.name or 'dask'} is not installed): "
        "pip install 'tangentia[distributed]'") from _e

import numpy as np

from . import core
from .api import jit as _jit, value_and_grad as _value_and_grad, vmap as _vmap
from .api.staging import _Jitted
from .api.vectorization import _broadcast_prefix
from .compiler.backend import default_backend_name as _default_backend_name
from ._messages import fun_name as _fun_name
from .tree_util import tree_flatten, tree_map, tree_unflatten

__all__ = ["vmap", "value_and_grad", "worker_cache_info", "clear_worker_cache"]

# Leaves larger than this are scattered to the workers once per call instead of
# travelling inside every task (Dask warns about large graphs).
_SCATTER_BYTES = 1 << 20

# ---------------------------------------------------------------------------
# Worker side: a per-process cache of jitted functions


_CACHE_SIZE = 64
_cache: collections.OrderedDict = collections.OrderedDict()
_cache_lock = threading.Lock()
_cache_stats = {"hits": 0, "misses": 0, "actor_calls": 0, "inline": 0, "socket": 0,
                "running": 0}


def _cached_function(key, spec, build):
    """The jitted function for ``key``, built once per process by ``build(fun,
    *options)`` from ``spec``, the pickled ``(blob, *options)`` where ``blob``
    is the pickled user function (a hit unpickles neither)."""
    with _cache_lock:
        fn = _cache.get(key)
        if fn is not None:
            _cache.move_to_end(key)
            _cache_stats["hits"] += 1
            return fn
    blob, *options = pickle.loads(spec)
    try:
        fun = pickle.loads(blob)
    except Exception as e:
        e.add_note("tangentia.distributed: the function could not be unpickled on the Dask "
                   "worker; the modules it refers to must be importable there (or register "
                   "them with cloudpickle.register_pickle_by_value)")
        raise
    fn = build(fun, *options)
    with _cache_lock:
        _cache_stats["misses"] += 1
        fn = _cache.setdefault(key, fn)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return fn


def worker_cache_info():
    """This process's cache of jitted functions, as ``{"entries", "hits",
    "misses", "traces", "backend", "actor_calls", "inline", "running"}``: hits and
    misses count lookups by the tasks and actor calls (a miss unpickles the
    function and builds its jitted form), ``traces`` the signatures the cached
    functions have traced, ``backend`` the jit backend they run on (the
    process's default: ``TANGENTIA_JIT_BACKEND`` or ``config.update("jit_backend",
    ...)`` on the worker), ``actor_calls`` the ``vmap`` chunks this worker's
    actor ran (the others ran as tasks), ``inline`` those of them it ran on
    the worker's event loop (short chunks, see ``_INLINE_SECONDS``) and
    ``running`` those running now in the actor's threads (a chunk on the event
    loop finishes before this function runs there).  Run it on the workers
    with ``client.run(worker_cache_info)``."""
    with _cache_lock:
        fns = list(_cache.values())
        stats = dict(_cache_stats)
    return {"entries": len(fns), **stats, "traces": sum(len(f.cache) for f in fns),
            "backend": _default_backend_name()}


def clear_worker_cache():
    """Empty this process's cache of jitted functions and its counters."""
    with _cache_lock:
        _cache.clear()
        _inline_signatures.clear()
        _cache_stats.update(hits=0, misses=0, actor_calls=0, inline=0, socket=0)


def _build_vmap(fun, in_tree, dims, out_axes):
    @functools.wraps(fun, updated=())
    def flat(*leaves):
        args, kwargs = tree_unflatten(in_tree, leaves)
        return fun(*args, **kwargs)
    return _jit(_vmap(flat, in_axes=tuple(dims), out_axes=out_axes))


def _vmap_task(key, spec, leaves):
    """One chunk of a ``vmap``: ``spec`` is the pickled ``(blob, in_tree, dims,
    out_axes)``, ``leaves`` the chunk's arguments."""
    return _cached_function(key, spec, _build_vmap)(*leaves)


# A chunk whose signature last ran for less than this runs on the worker's event
# loop (no hop into the actor's thread and back, about 0.1 ms), if the worker has
# one thread and the actor's thread is idle; longer chunks run in that thread, so
# that the worker keeps answering while they run.
_INLINE_SECONDS = 0.02
# Signatures whose last chunk here took less than _INLINE_SECONDS and computed for at
# least half of its time (a chunk that mostly waited, on I/O or on a call into Dask
# that needs the event loop, stays in the thread), as (cache key, leaf shapes, dtypes).
_inline_signatures = set()


class _Pool:
    """This worker process's threads for actor calls (shared by its actors),
    and how many of them are running a chunk (changed on the event loop only)."""

    def __init__(self, threads):
        self.threads, self.busy = threads, 0
        self.executor = concurrent.futures.ThreadPoolExecutor(
            threads, thread_name_prefix="tangentia-runner")


_runner_pool = []  # this worker process's _Pool, created by its first actor


def _run_chunk(task, signature, inline):
    """``_vmap_task(*task)`` as the pickled ``(True, result)``, or ``(False,
    exception)`` with the exception's traceback made picklable (it travels
    back by value); records how long the chunk took."""
    with _cache_lock:
        _cache_stats["running"] += 1
        _cache_stats["inline"] += inline
    start, cpu = time.perf_counter(), time.thread_time()
    try:
        return _pickle_data((True, _vmap_task(*task)))
    except Exception as e:  # noqa: BLE001 - re-raised on the client
        tblib.pickling_support.install(e)
        try:
            return cloudpickle.dumps((False, e))
        except Exception:  # noqa: BLE001 - as Dask does for unpicklable exceptions
            return cloudpickle.dumps((False, Exception(f"{type(e).__name__}: {e}")))
    finally:
        wall, cpu = time.perf_counter() - start, time.thread_time() - cpu
        if wall < _INLINE_SECONDS and cpu >= wall / 2:
            if len(_inline_signatures) > 4096:
                _inline_signatures.clear()
            _inline_signatures.add(signature)
        else:
            _inline_signatures.discard(signature)
        with _cache_lock:
            _cache_stats["running"] -= 1
            _cache_stats["actor_calls"] += 1


class _Runner:
    """The Dask actor that runs ``vmap`` chunks on its worker, one per client
    and worker.  The client calls it with the worker's ``actor_execute``
    message, straight to the worker when it can reach it (else through the
    scheduler's proxy), not through the scheduler's task machinery and its
    batched messages, or, from the worker's machine, over the worker's
    ``_Channel`` (see ``channel``).  A call's argument and result are bytes
    pickled by tangentia (Dask passes bytes through without serializing them
    again).  Through Dask, short chunks run on the worker's event loop (see
    ``_INLINE_SECONDS``), the others in a pool of as many threads as the
    worker has, outside Dask's task threads."""

    def __init__(self, nthreads):
        with _cache_lock:
            if not _runner_pool:
                _runner_pool.append(_Pool(max(nthreads, 1)))

    async def run(self, payload):
        """The pickled result of the chunk ``payload``, the pickled ``(key,
        spec, leaves)`` of ``_vmap_task``."""
        task, signature = _load_task(payload)
        pool = _runner_pool[0]
        if pool.threads == 1 and not pool.busy and task[0] in _cache and \
                signature in _inline_signatures:
            return _run_chunk(task, signature, True)
        pool.busy += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(
                pool.executor, _run_chunk, task, signature, False)
        finally:
            pool.busy -= 1

    async def channel(self):
        """``(address, token)`` of this worker process's ``_Channel``, or None
        if it has none (no Unix sockets here)."""
        ch = _Channel.get(_runner_pool[0].threads)
        return None if ch is None else (ch.address, ch.token)


def _load_task(payload):
    """``(task, signature)`` of an actor call's ``payload``: the ``(key, spec,
    leaves)`` of ``_vmap_task`` and its cache key with the leaves' shapes and dtypes."""
    task = pickle.loads(payload)
    return task, (task[0], tuple((np.shape(x), getattr(x, "dtype", type(x))) for x in task[2]))


# A message on a _Channel: its length (8 bytes, little-endian), then its bytes.
_LENGTH = struct.Struct("<Q")
# Seconds a new connection to a _Channel has to send its token.
_AUTH_TIMEOUT = 10.0


def _send_message(sock, data):
    sock.sendall(_LENGTH.pack(len(data)))
    sock.sendall(data)


def _recv_exact(sock, n):
    """``n`` bytes from ``sock``, or None if it was closed first."""
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = sock.recv_into(view[got:])
        if not k:
            return None
        got += k
    return buf


def _recv_message(sock):
    head = _recv_exact(sock, _LENGTH.size)
    return None if head is None else _recv_exact(sock, _LENGTH.unpack(head)[0])


class _Channel:
    """This worker process's same-machine channel for actor calls: a Unix
    socket (in Linux's abstract namespace, else in a private temporary
    directory) served by a thread, with a thread per connection that runs the
    chunks sent on it one at a time (and the connections together at most as
    many at once as the worker has threads).  A client on the same machine
    sends its chunks here instead of through Dask's messages: about 0.13 ms a
    call against 0.6 ms, with no event loop, serialization layer or thread
    hop on either side.  Dask still makes, places and replaces the actors;
    this only carries their calls.  A connection must first send the random
    token, which the client got from the actor through Dask's comm (with its
    TLS, if the cluster uses it), so only a client of this cluster can run
    anything; the socket cannot be reached from another machine."""

    _lock = threading.Lock()
    _instance = []  # the process's channel, or None if it cannot have one

    @classmethod
    def get(cls, threads):
        """The process's channel, made at the first call; its connections run
        at most ``threads`` chunks at a time."""
        with cls._lock:
            if not cls._instance:
                try:
                    cls._instance.append(cls(threads))
                except OSError:  # no Unix sockets here: the calls go through Dask
                    cls._instance.append(None)
            return cls._instance[0]

    def __init__(self, threads):
        if not hasattr(socket, "AF_UNIX"):
            raise OSError("no AF_UNIX")
        self.token = secrets.token_bytes(32)
        self.slots = threading.Semaphore(threads)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if sys.platform.startswith("linux"):
                self.address = f"\0tangentia-{uuid.uuid4().hex}"
            else:
                folder = tempfile.mkdtemp(prefix="tangentia-")  # only this user can enter it
                atexit.register(shutil.rmtree, folder, ignore_errors=True)
                self.address = os.path.join(folder, "s")
            sock.bind(self.address)
            sock.listen(64)
        except OSError:
            sock.close()
            raise
        self.sock = sock
        threading.Thread(target=self._accept, name="tangentia-channel", daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), name="tangentia-runner",
                             daemon=True).start()

    def _serve(self, conn):
        """Run the chunks sent on ``conn`` until the client closes it."""
        with conn:
            try:
                conn.settimeout(_AUTH_TIMEOUT)
                token = _recv_exact(conn, len(self.token))
                if token is None or not hmac.compare_digest(bytes(token), self.token):
                    return
                conn.settimeout(None)
                while (payload := _recv_message(conn)) is not None:
                    task, signature = _load_task(payload)
                    with _cache_lock:
                        _cache_stats["socket"] += 1
                    with self.slots:
                        reply = _run_chunk(task, signature, False)
                    _send_message(conn, reply)
            except OSError:  # the client went away (or timed out authenticating)
                return


def _build_value_and_grad(fun, argnums, has_aux):
    return _jit(_value_and_grad(fun, argnums=argnums, has_aux=has_aux))


def _shard_task(key, spec, has_aux, index, treedef, as_leaves, params_tree, params, shard,
                args):
    """``value_and_grad`` of one shard, as ``(loss, grads, [aux] or None)``;
    ``spec`` is the pickled ``(blob, argnums, has_aux)``, ``params`` are the
    leaves of ``params_tree``."""
    params = tree_unflatten(params_tree, params)
    if as_leaves:
        shard = tree_unflatten(treedef, shard)
    elif treedef is not None:
        got = tree_flatten(shard)[1]
        if got != treedef:
            raise ValueError(f"tangentia.distributed.value_and_grad: shard {index} has the "
                             f"structure {got} but the other shards have {treedef}")
    fn = _cached_function(key, spec, _build_value_and_grad)
    value, grads = fn(params, shard, *args)
    if has_aux:
        value, aux = value
        return value, grads, [aux]
    return value, grads, None


def _sum_results(a, b):
    """Sum two ``(loss, grads, auxes)`` results (auxes are concatenated in order)."""
    return (np.add(a[0], b[0]), tree_map(np.add, a[1], b[1]),
            None if a[2] is None else a[2] + b[2])


# ---------------------------------------------------------------------------
# Client side helpers


def _get_client(client, api):
    if client is not None:
        return client
    try:
        return _dd.default_client()
    except ValueError:
        raise ValueError(f"tangentia.distributed.{api}: no Dask client was given and none is "
                         "running; start one (`from dask.distributed import Client; "
                         "client = Client()`) or pass client=") from None


def _unpicklable_part(fun):
    """Which variable ``fun`` closes over (or refers to) cannot be pickled, as text."""
    try:
        target = inspect.unwrap(fun)
        while isinstance(target, functools.partial):
            target = target.func
        cv = inspect.getclosurevars(target)
    except Exception:  # noqa: BLE001 - not a plain Python function: no detail
        return ""
    for kind, names in (("closes over", cv.nonlocals), ("refers to the global", cv.globals)):
        for name, value in names.items():
            try:
                _dumps(value)
            except Exception:  # noqa: BLE001
                return f" because it {kind} '{name}' (a {type(value).__name__})"
    return ""


def _rebuild_jit(fun, static_argnums, static_argnames, backend):
    return _jit(fun, static_argnums=static_argnums, static_argnames=static_argnames,
                backend=backend)


class _Pickler(cloudpickle.Pickler):
    """cloudpickle, with ``jit`` functions sent as ``jit(fun, options)``: their
    caches (compiled programs, locks) stay behind and the worker compiles its own."""

    def reducer_override(self, obj):
        if type(obj) is _Jitted:
            return _rebuild_jit, (obj.fun, obj.static_argnums, tuple(sorted(obj.static_argnames)),
                                  obj.backend)
        return super().reducer_override(obj)


def _dumps(obj):
    buf = io.BytesIO()
    _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buf.getvalue()


def _pickle_data(obj):
    """``obj`` (an actor call's chunk or result) pickled with pickle (twice as
    fast as cloudpickle), or with cloudpickle if pickle cannot or if its
    pickle refers to ``__main__`` (an object of a class defined in the
    client's script or notebook, which the worker could not import by name:
    the rule Dask's own pickling uses)."""
    try:
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - e.g. a lambda or a class defined in a notebook
        return _dumps(obj)
    return _dumps(obj) if b"__main__" in data else data


def _pickle_function(fun, api):
    """``(blob, digest)``: ``fun`` pickled with cloudpickle, or a TypeError that
    names it and says why it cannot travel to the workers."""
    try:
        blob = _dumps(fun)
    except Exception as e:
        raise TypeError(
            f"tangentia.distributed.{api}: the function {_fun_name(fun)!r} cannot be pickled to "
            f"send it to the Dask workers{_unpicklable_part(fun)}: {type(e).__name__}: {e}. "
            "Functions travel with cloudpickle; open files, locks, sockets and similar objects "
            "cannot: open them inside the function instead") from e
    return blob, hashlib.sha256(blob).hexdigest()


def _pickled_once(fun, api):
    """A function returning ``_pickle_function(fun, api)``, computed at its
    first call and reused afterwards (thread-safe)."""
    lock, memo = threading.Lock(), []

    def get():
        with lock:
            if not memo:
                memo.append(_pickle_function(fun, api))
            return memo[0]
    return get


_THREADS_TTL = 2.0  # seconds: Dask's own client refreshes its cluster summary this often
_threads = weakref.WeakKeyDictionary()  # client -> (time, {worker address: threads})


def _worker_threads(client):
    """``{worker address: threads}``, asked of the scheduler at most every
    ``_THREADS_TTL`` seconds per client (a round trip costs milliseconds)."""
    now = time.monotonic()
    seen = _threads.get(client)
    if seen is None or now - seen[0] > _THREADS_TTL:
        seen = (now, dict(client.nthreads()))
        _threads[client] = seen
    return seen[1]


# How long a call waits for the actors it has just created (a task each, run when
# their worker has a free thread) before running as tasks.
_RUNNER_WAIT = 5.0
# Seconds without calls after which a client's actors are released: Dask does not
# retire a worker that holds an actor (adaptive scaling, retire_workers).
_RUNNER_IDLE = 10.0


# Seconds a client tries to connect to a worker (once, in the background, when its
# actor is ready) before it calls the actor through the scheduler's proxy instead.
_CONNECT_TIMEOUT = 2.0


class _Runners:
    """A client's ``_Runner`` actors, one per worker, created when a call
    first finds the worker; an actor whose worker was lost is dropped and
    created again when a call finds the worker's replacement.  All are
    released once no call used them for ``_RUNNER_IDLE`` seconds.

    Calls go straight to a worker when the client reaches it: at once with
    ``Client(direct_to_workers=True)``; with Dask's default (``None``) once a
    connection tried in the background when the actor became ready
    succeeded.  Until then, if it fails, and with ``direct_to_workers=False``
    they go through the scheduler's proxy (a hop more, about 0.2-0.4 ms)."""

    def __init__(self, client):
        self.client = client
        self.lock = threading.Lock()
        self.futures = {}  # worker address -> (time created, Future of its actor)
        self.actors = {}   # worker address -> the actor's key
        self.direct = set()  # worker addresses the client called directly
        self.channels = {}  # worker address -> (address, token) of its _Channel
        self.idle = {}  # worker address -> connected sockets to its _Channel, not in use
        self.active, self.used, self.timer = 0, 0.0, False  # calls running, last end

    def ready(self):
        """``{worker address: (call, threads)}`` for the actors that can take
        calls now, after waiting for those created less than ``_RUNNER_WAIT``
        seconds ago (by this call or a concurrent one) to be ready, where
        ``await call(payload)`` runs ``payload`` on the worker's actor."""
        cl, workers = self.client, _worker_threads(self.client)
        now = time.monotonic()
        with self.lock:
            for addr, k in workers.items():
                if addr not in self.futures:
                    self.futures[addr] = (now, cl.submit(
                        _Runner, k, actor=True, workers=[addr], allow_other_workers=False,
                        pure=False, key=f"tangentia-runner-{uuid.uuid4().hex[:12]}"))
            young = [(t, fut) for addr, (t, fut) in self.futures.items()
                     if addr not in self.actors and now - t < _RUNNER_WAIT]
        if young:
            try:
                with cl.as_current():  # wait() takes the current client's futures
                    _dd.wait([fut for _, fut in young],
                             timeout=_RUNNER_WAIT - (now - min(t for t, _ in young)))
            except TimeoutError:
                pass  # the call uses the actors that are ready
        out = {}
        with self.lock:
            for addr, (_, fut) in list(self.futures.items()):
                if addr not in self.actors and fut.status == "finished":
                    self.actors[addr] = fut.key
                    if cl.direct_to_workers:
                        self.direct.add(addr)
                    if cl.direct_to_workers is not False:
                        cl.loop.add_callback(self._connect, addr, fut.key)
                elif fut.status in ("error", "lost", "cancelled"):
                    self.drop(addr)
                if addr in self.actors and addr in workers:
                    out[addr] = (functools.partial(self._call, addr, self.actors[addr]),
                                 workers[addr])
            self.active += 1  # until done()
        return out

    async def _connect(self, addr, key):
        """Call ``addr``'s actor directly from now on if the client can connect
        to it (always with ``direct_to_workers=True``), and learn its worker's
        ``_Channel``, which calls use if they can connect to it (on the same
        machine)."""
        if addr not in self.direct:
            try:
                comm = await self.client.rpc.connect(addr, timeout=_CONNECT_TIMEOUT)
            except Exception:  # noqa: BLE001 - not reachable from here: keep the proxy
                return
            self.client.rpc.reuse(addr, comm)
        self.direct.add(addr)
        try:
            reply = await self.client.rpc(addr).actor_execute(actor=key, function="channel",
                                                              args=[], kwargs={})
        except Exception:  # noqa: BLE001 - the worker is gone: the next call finds out
            return
        if reply["status"] == "OK" and reply["result"] is not None:
            with self.lock:
                if self.actors.get(addr) == key:
                    self.channels[addr] = tuple(reply["result"])

    def checkout(self, addr):
        """A socket connected to ``addr``'s ``_Channel`` (and authenticated),
        or None if it has none or cannot be reached from here (then its calls
        go through Dask)."""
        with self.lock:
            idle = self.idle.get(addr)
            if idle:
                return idle.pop()
            channel = self.channels.get(addr)
        if channel is None:
            return None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(channel[0])
            sock.sendall(channel[1])
        except OSError:  # another machine (or the worker is gone)
            sock.close()
            with self.lock:
                if self.channels.get(addr) == channel:
                    del self.channels[addr]
            return None
        return sock

    def checkin(self, addr, sock):
        """Give back a socket from ``checkout(addr)`` with no call in flight."""
        with self.lock:
            if addr in self.channels:
                self.idle.setdefault(addr, []).append(sock)
                return
        sock.close()

    async def _call(self, addr, key, payload):
        """The bytes returned by ``_Runner.run(payload)`` of the actor ``key`` on ``addr``."""
        msg = {"actor": key, "function": "run", "kwargs": {},
               # bytes travel in the message itself; large ones as frames of their own
               "args": [payload if len(payload) < _SCATTER_BYTES else to_serialize(payload)]}
        if addr in self.direct:
            reply = await self.client.rpc(addr).actor_execute(**msg)
        else:
            reply = await self.client.scheduler.proxy(msg={"op": "actor_execute", **msg},
                                                      worker=addr)
        if reply["status"] != "OK":
            raise reply["exception"]
        return reply["result"]

    def done(self):
        """End a call that ``ready()`` started."""
        with self.lock:
            self.active -= 1
            self.used = time.monotonic()
            if not self.timer:
                self.timer = True
                self._expire_later(_RUNNER_IDLE)

    def _expire_later(self, delay):
        timer = threading.Timer(delay, self._expire)
        timer.daemon = True
        timer.start()

    def _expire(self):
        """Release the actors if they were idle for ``_RUNNER_IDLE`` seconds,
        else look again then."""
        with self.lock:
            wait = self.used + _RUNNER_IDLE - time.monotonic()
            if self.active or wait > 0:
                self._expire_later(wait if wait > 0 else _RUNNER_IDLE)
                return
            self.timer = False
            futures = [fut for _, fut in self.futures.values()]
            self.futures.clear()
            self.actors.clear()
            self._close_channels()
        if futures and self.client.status == "running":
            self.client.cancel(futures)  # the scheduler forgets them: the actors end

    def drop(self, addr):
        """Forget the actor on ``addr`` (its worker was lost)."""
        self.futures.pop(addr, None)
        self.actors.pop(addr, None)
        self.direct.discard(addr)
        self._close_channels(addr)
        _threads.pop(self.client, None)  # the next call asks which workers there are

    def _close_channels(self, addr=None):
        """Forget the channels (of ``addr``, or all) and close their idle sockets
        (under ``self.lock``)."""
        for a in [addr] if addr is not None else list(self.channels):
            self.channels.pop(a, None)
            for sock in self.idle.pop(a, ()):
                sock.close()


_runners_lock = threading.Lock()
_runners = {}  # client id -> _Runners


def _client_runners(client):
    """``client``'s ``_Runners`` (those of closed clients are forgotten)."""
    with _runners_lock:
        for cid in [c for c, r in _runners.items() if r.client.status == "closed"]:
            del _runners[cid]
        r = _runners.get(client.id)
        if r is None:
            r = _runners[client.id] = _Runners(client)
        return r


def _check_not_traced(leaves, api, fun):
    for x in leaves:
        if isinstance(x, core.Tracer):
            raise TypeError(f"tangentia.distributed.{api} of {_fun_name(fun)} was called with a "
                            "traced value (inside jit, grad or vmap); distribute the "
                            "transformed function instead, e.g. "
                            "tangentia.distributed.vmap(tangentia.grad(f))")


def _nbytes(x):
    return getattr(x, "nbytes", 0) or 0


def _ship_large(client, values):
    """``values`` with every array above the scatter threshold replaced by a
    future of it, scattered to all workers once (so it survives a worker)."""
    big = [i for i, v in enumerate(values) if isinstance(v, np.ndarray)
           and _nbytes(v) > _SCATTER_BYTES]
    if not big:
        return list(values)
    futs = client.scatter([values[i] for i in big], broadcast=True, hash=False)
    out = list(values)
    for i, f in zip(big, futs):
        out[i] = f
    return out


def _task_prefix(api, fun):
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in _fun_name(fun))
    return f"tangentia-{api}-{name}-{uuid.uuid4().hex[:12]}"


def _gather(client, futures):
    """Results of ``futures`` in their order; the others are cancelled on error."""
    try:
        return client.gather(futures)
    except BaseException:
        client.cancel(futures)
        raise


# ---------------------------------------------------------------------------
# vmap


def _chunk_bounds(size, chunk_size, default_chunks):
    if size == 0:
        return [(0, 0)]
    if chunk_size is None:
        chunk_size = math.ceil(size / max(default_chunks, 1))
    return [(s, min(s + chunk_size, size)) for s in range(0, size, chunk_size)]


def _map_tasks(client, head, chunks, fun):
    """``[_vmap_task(*head, chunk) for chunk in chunks]`` (``head``: the cache
    key and the pickled spec of ``fun``) as Dask tasks (one graph: one message
    to the scheduler), which the scheduler places near their data and reruns
    when a worker is lost."""
    n, prefix = len(chunks), _task_prefix("vmap", fun)
    futures = client.map(_vmap_task, *([h] * n for h in head), chunks,
                         key=[f"{prefix}-{c}" for c in range(n)], pure=False)
    return _gather(client, futures)


def _map_actors(client, head, chunks, fun):
    """``_map_tasks``'s results, computed by the workers' ``_Runner`` actors:
    each worker thread takes the next chunk when its previous one is done.
    If an actor fails (its worker was lost), no further chunks go to the
    actors and those not done run as tasks; an error raised by the function
    is raised here."""
    runners = _client_runners(client)
    ready = runners.ready()
    try:
        return _run_lanes(client, runners, [(addr, call) for addr, (call, k) in ready.items()
                                            for _ in range(k)], head, chunks, fun)
    finally:
        runners.done()


def _run_lanes(client, runners, lanes, head, chunks, fun):
    """``_map_actors`` with the actors' ``lanes``, one ``(worker address,
    call)`` per worker thread (``call``: see ``_Runners.ready``)."""
    if not lanes:
        return _map_tasks(client, head, chunks, fun)
    payloads = [_pickle_data((*head, chunk)) for chunk in chunks]
    results = _run_channel_lanes(runners, [addr for addr, _ in lanes], payloads)
    if results is None:
        results = _run_dask_lanes(client, runners, lanes, payloads)
    left = [c for c, r in enumerate(results) if r is None]
    if left:
        for c, value in zip(left, _map_tasks(client, head, [chunks[c] for c in left], fun)):
            results[c] = (value,)
    return [r[0] for r in results]


def _run_channel_lanes(runners, lanes, payloads):
    """``_run_dask_lanes`` over the workers' ``_Channel`` sockets, from this
    thread; None (nothing sent) unless every lane's worker has one that can
    be reached from here."""
    socks = [(addr, runners.checkout(addr)) for addr in lanes[:len(payloads)]]
    if any(sock is None for _, sock in socks):
        for addr, sock in socks:
            if sock is not None:
                runners.checkin(addr, sock)
        return None
    results, todo, lost = [None] * len(payloads), collections.deque(range(len(payloads))), []
    busy = {}  # socket -> (worker address, chunk) of the calls in flight
    sel = selectors.DefaultSelector()

    def send(addr, sock, c):
        try:
            _send_message(sock, payloads[c])
        except OSError:  # the worker is gone
            lose(addr, sock, c)
            return
        busy[sock] = (addr, c)
        sel.register(sock, selectors.EVENT_READ)

    def lose(addr, sock, c):
        lost.append(c)
        sock.close()
        with runners.lock:
            runners.drop(addr)

    try:
        for addr, sock in socks:
            send(addr, sock, todo.popleft())
        while busy:
            for key, _ in sel.select():
                sock = key.fileobj
                sel.unregister(sock)
                addr, c = busy.pop(sock)
                try:
                    reply = _recv_message(sock)
                except OSError:
                    reply = None
                if reply is None:
                    lose(addr, sock, c)
                    continue
                ok, value = pickle.loads(reply)
                if todo and not lost and ok:
                    send(addr, sock, todo.popleft())
                else:
                    runners.checkin(addr, sock)
                if not ok:
                    raise value
                results[c] = (value,)
    finally:
        for sock in busy:  # a reply is still due on it: it cannot be reused
            sock.close()
        sel.close()
    return results


def _run_dask_lanes(client, runners, lanes, payloads):
    """The replies to ``payloads`` as ``[(result,) or None]`` (None: the chunk
    was lost with its worker), computed by the actors' ``lanes``, one ``(worker
    address, call)`` per worker thread, through Dask's messages on its event loop."""
    results, todo, lost = [None] * len(payloads), collections.deque(range(len(payloads))), []

    async def lane(addr, call, c):
        while True:
            try:
                reply = await call(payloads[c])
            except Exception:  # noqa: BLE001 - the actor is gone; Dask says why
                lost.append(c)
                with runners.lock:
                    runners.drop(addr)
                return
            ok, value = pickle.loads(reply)
            if not ok:
                raise value
            results[c] = (value,)
            if not todo or lost:
                return
            c = todo.popleft()

    async def run_lanes():
        # Each lane takes its first chunk now: a reply can arrive without the loop
        # yielding (tornado reads data already there), so a lane started later
        # could find the chunks taken by the first one.
        tasks = [asyncio.ensure_future(lane(*a, todo.popleft())) for a in lanes if todo]
        try:
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()

    client.sync(run_lanes)
    return results


def vmap(fun, in_axes=0, out_axes=0, *, client=None, chunk_size=None):
    """``tangentia.vmap(fun, in_axes, out_axes)`` with the mapped axis split
    into chunks that run as ``jit(vmap(fun))`` on the workers of a Dask cluster.

    The result equals the local ``vmap``'s: same values, dtypes and pytree
    structure, as NumPy arrays, in the input's order.  ``chunk_size`` is the
    number of mapped elements per chunk (default: one chunk per worker
    thread; with ``dask.array`` inputs, their chunks along the mapped axis).
    ``client`` defaults to the current Dask client.  Leaves may be NumPy
    arrays, Python scalars or ``dask.array.Array`` (computed on the cluster,
    never brought to the client).  Chunks of NumPy inputs run on one Dask
    actor per worker, called directly (about 0.6 ms a call, 0.13 ms over a
    Unix socket to a worker on this machine; a worker thread
    takes the next chunk when its last one is done; if a worker is lost,
    the chunks not done run as tasks); with dask arrays or unmapped arrays
    above 1 MiB the chunks are Dask tasks.  Keyword arguments are mapped over
    axis 0, as in ``tangentia.vmap``.  ``fun`` is pickled at the first call
    and the same bytes are sent afterwards (as ``jit`` traces once, the
    values it closes over are captured then).

    Args:
      fun: the function to map (picklable with cloudpickle: closures and
        custom rules are).
      in_axes: as in ``tangentia.vmap``.
      out_axes: as in ``tangentia.vmap``.
      client: a ``distributed.Client`` (default: the current one).
      chunk_size: the number of mapped elements per chunk, or None.

    Returns:
      A function with ``fun``'s arguments returning the mapped outputs.

    Raises:
      TypeError: ``fun`` is not callable.
      ValueError: ``chunk_size`` is not a positive int, or there is no
        client.

    Examples:
      >>> import numpy as np, tangentia.numpy as tnp, tangentia.distributed as tgd
      >>> from distributed import Client
      >>> client = Client(processes=False, n_workers=1, threads_per_worker=2,
      ...                 dashboard_address=None)   # or Client("scheduler:8786")
      >>> tgd.vmap(lambda x: tnp.sum(x ** 2))(np.arange(6.0).reshape(3, 2))
      array([ 1., 13., 41.])
      >>> client.close()
    """
    if not callable(fun):
        raise TypeError(f"tangentia.distributed.vmap: expected a callable, got "
                        f"{type(fun).__name__} {fun!r:.60}")
    if chunk_size is not None and (not isinstance(chunk_size, (int, np.integer))
                                   or isinstance(chunk_size, bool) or chunk_size < 1):
        raise ValueError(f"tangentia.distributed.vmap of {_fun_name(fun)}: chunk_size must be a "
                         f"positive int or None, got {chunk_size!r}")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    local = _vmap(fun, in_axes=in_axes, out_axes=out_axes)  # argument checks, zero-size fallback
    pickled = _pickled_once(fun, "vmap")
    specs = {}  # (in_tree, dims) -> (cache key, pickled spec)

    @functools.wraps(fun, updated=())
    def distributed_vmapped(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            return local(*args, **kwargs)  # the local vmap raises its error
        leaves, in_tree = tree_flatten((args, kwargs))
        _check_not_traced(leaves, "vmap", fun)
        axes = _broadcast_prefix(in_axes if isinstance(in_axes, tuple) else
                                 (in_axes,) * len(args), args, "in_axes") + \
            [0] * len(tree_flatten(kwargs)[0])
        dims, sizes, bad = [], set(), False
        for x, ax in zip(leaves, axes):
            if ax is None:
                dims.append(None)
                continue
            shape = x.shape if isinstance(x, da.Array) else np.shape(x)
            if not -len(shape) <= ax < len(shape) or not shape:
                bad = True  # the local vmap below reports it
                break
            dims.append(ax % len(shape))
            sizes.add(shape[dims[-1]])
        if bad or len(sizes) != 1 or any(isinstance(s, float) and math.isnan(s) for s in sizes):
            if any(isinstance(x, da.Array) for x in leaves):
                raise ValueError(f"tangentia.distributed.vmap of {_fun_name(fun)}: the mapped "
                                 f"axes have sizes {sorted(map(str, sizes))}; they must have one "
                                 "known size (call compute_chunk_sizes() on dask arrays)")
            return local(*args, **kwargs)  # the local vmap raises its error
        size = sizes.pop()
        cl = _get_client(client, "vmap")
        structure = (in_tree, tuple(dims))
        head = specs.get(structure)
        if head is None:  # once per argument structure: the key and the pickled spec
            blob, digest = pickled()
            layout = repr((*structure, out_axes))
            head = specs.setdefault(structure, (
                f"vmap-{digest}-{hashlib.sha256(layout.encode()).hexdigest()}",
                _dumps((blob, in_tree, dims, out_axes))))

        # Chunk boundaries: chunk_size, else the first mapped dask array's chunks.
        dask_dims = [(x, d) for x, d in zip(leaves, dims) if isinstance(x, da.Array)
                     and d is not None]
        if chunk_size is None and dask_dims:
            x, d = dask_dims[0]
            stops = np.cumsum(x.chunks[d]).tolist()
            bounds = list(zip([0] + stops[:-1], stops)) or [(0, 0)]
        else:
            bounds = _chunk_bounds(size, chunk_size, sum(_worker_threads(cl).values()))

        # Per-leaf payload for each chunk: a slice, the whole value, or futures.
        per_chunk = [[None] * len(leaves) for _ in bounds]
        whole = _ship_large(cl, [x if d is None and not isinstance(x, da.Array) else None
                                 for x, d in zip(leaves, dims)])
        lengths = tuple(e - s for s, e in bounds)
        for i, (x, d) in enumerate(zip(leaves, dims)):
            if isinstance(x, da.Array):
                if d is None:
                    futs = [cl.compute(x)] * len(bounds)
                else:
                    blocks = x.rechunk({j: (lengths if j == d else -1) for j in range(x.ndim)})
                    delayed = blocks.to_delayed().reshape(-1)
                    futs = cl.compute(list(delayed))
            elif d is None:
                futs = [whole[i]] * len(bounds)
            else:
                x = np.asarray(x)
                futs = [x[(slice(None),) * d + (slice(s, e),)] for s, e in bounds]
            for c, f in enumerate(futs):
                per_chunk[c][i] = f

        on_cluster = dask_dims or any(isinstance(x, da.Array) for x in leaves) or any(
            isinstance(w, _dd.Future) for w in whole)
        results = (_map_tasks(cl, head, per_chunk, fun) if on_cluster
                   else _map_actors(cl, head, per_chunk, fun))

        flat = [tree_flatten(r) for r in results]
        out_tree = flat[0][1]
        n = len(flat[0][0])
        if isinstance(out_axes, int) or out_axes is None:
            odims = [out_axes] * n
        else:
            odims = _broadcast_prefix(out_axes, tree_unflatten(out_tree, [0] * n), "out_axes")
        outs = []
        for j, od in enumerate(odims):
            parts = [np.asarray(leaves_[j]) for leaves_, _ in flat]
            outs.append(parts[0] if od is None or len(parts) == 1
                        else np.concatenate(parts, axis=od))
        return tree_unflatten(out_tree, outs)

    return distributed_vmapped


# ---------------------------------------------------------------------------
# value_and_grad


def _shard_payloads(client, shards, fun):
    """``(payloads, treedef)``: one ``(as_leaves, payload)`` per shard, where the
    payload is a list of the shard's leaves (arrays and futures) or a future of
    the whole shard.  Structures are checked here, before any work is sent."""
    api = f"tangentia.distributed.value_and_grad of {_fun_name(fun)}"
    if isinstance(shards, da.Array):  # its blocks along axis 0 are the shards
        if shards.ndim == 0:
            raise ValueError(f"{api}: a dask array of shards needs at least one axis")
        blocks = shards.rechunk({j: -1 for j in range(1, shards.ndim)})
        futs = client.compute(list(blocks.to_delayed().reshape(-1)))
        return [(False, f) for f in futs], tree_flatten(np.zeros(()))[1]
    if isinstance(shards, (_dd.Future, np.ndarray)) or not isinstance(
            shards, collections.abc.Sequence):
        raise TypeError(f"{api}: shards must be a sequence (list or tuple) of data pytrees, "
                        f"Dask futures or dask arrays, or one dask array; got "
                        f"{type(shards).__name__}")
    if len(shards) == 0:
        raise ValueError(f"{api}: shards is empty; there is nothing to sum")
    expected, first = None, None
    flats = []
    for i, s in enumerate(shards):
        if isinstance(s, _dd.Future):
            flats.append(None)
            continue
        leaves, td = tree_flatten(s)
        ranks = tuple(x.ndim if isinstance(x, da.Array) else np.ndim(x) for x in leaves)
        if expected is None:
            expected, first = (td, ranks), i
        elif (td, ranks) != expected:
            raise ValueError(
                f"{api}: the shards' structures disagree: shard {first} is {expected[0]} with "
                f"leaf ranks {expected[1]}, shard {i} is {td} with leaf ranks {ranks}")
        flats.append(leaves)
    # Dask arrays among the leaves: computed on the cluster, in one graph.
    dask_leaves = [(i, j) for i, lv in enumerate(flats) if lv is not None
                   for j, x in enumerate(lv) if isinstance(x, da.Array)]
    if dask_leaves:
        futs = client.compute([flats[i][j] for i, j in dask_leaves])
        for (i, j), f in zip(dask_leaves, futs):
            flats[i][j] = f
    payloads = [(False, s) if lv is None else (True, _ship_large(client, lv))
                for s, lv in zip(shards, flats)]
    return payloads, None if expected is None else expected[0]


def _tree_sum(client, futures, prefix):
    """One future of the sum of ``futures``' results, added pairwise on the cluster."""
    level = 0
    while len(futures) > 1:
        nxt = []
        for k in range(0, len(futures) - 1, 2):
            nxt.append(client.submit(_sum_results, futures[k], futures[k + 1],
                                     key=f"{prefix}-sum{level}-{k // 2}", pure=False))
        if len(futures) % 2:
            nxt.append(futures[-1])
        futures, level = nxt, level + 1
    return futures[0]


def value_and_grad(loss, argnums=0, has_aux=False, *, client=None):
    """Data-parallel ``value_and_grad``: ``g(params, shards, *args)`` returns
    ``(sum_i loss(params, shards[i], *args), sum_i grads_i)``.

    ``shards`` is a sequence of data pytrees, Dask futures of them, or dask
    arrays (one dask array is also accepted: its blocks along axis 0 are the
    shards).  Each shard's ``jit(value_and_grad(loss))`` runs as a Dask task
    where its data is; ``params`` travel with the tasks (arrays above 1 MiB
    are scattered to every worker once per call); the per-shard results are
    summed pairwise on the cluster and only the total comes back.  ``loss`` is
    pickled at the first call and the same bytes are sent afterwards (as
    ``jit`` traces once, the values it closes over are captured then).
    ``argnums`` counts ``loss``'s positional arguments and may not include
    the shard (position 1).  With ``has_aux`` the value is ``(total_loss,
    [aux of each shard, in shard order])``.

    Args:
      loss: ``loss(params, shard, *args) -> scalar`` (``(scalar, aux)`` with
        ``has_aux``).
      argnums: the positional argument(s) of ``loss`` to differentiate with
        respect to (not 1, the shard).
      has_aux: ``loss`` returns ``(value, aux)``.
      client: a ``distributed.Client`` (default: the current one).

    Returns:
      ``g(params, shards, *args) -> (total value, total gradient)``.

    Examples:
      The same numbers as ``value_and_grad`` of the sum over the shards:

      >>> import numpy as np, tangentia.numpy as tnp, tangentia.distributed as tgd
      >>> from distributed import Client
      >>> client = Client(processes=False, n_workers=1, threads_per_worker=2,
      ...                 dashboard_address=None)
      >>> def loss(w, batch):
      ...     x, y = batch
      ...     return tnp.sum((x @ w - y) ** 2)
      >>> shards = [(np.ones((2, 2)), np.zeros(2)), (2 * np.ones((2, 2)), np.ones(2))]
      >>> tgd.value_and_grad(loss)(np.array([1.0, -1.0]), shards)
      (array(2.), array([-8., -8.]))
      >>> client.close()
    """
    if not callable(loss):
        raise TypeError(f"tangentia.distributed.value_and_grad: expected a callable, got "
                        f"{type(loss).__name__} {loss!r:.60}")
    nums = (argnums,) if isinstance(argnums, (int, np.integer)) else tuple(argnums)
    if 1 in nums:
        raise ValueError(f"tangentia.distributed.value_and_grad of {_fun_name(loss)}: argnums="
                         f"{argnums!r} includes 1, the shard; gradients are summed over shards, "
                         "so they can only be taken with respect to params (0) or the "
                         "broadcast arguments (2, 3, ...)")
    pickled = _pickled_once(loss, "value_and_grad")
    head = []  # (cache key, pickled spec), made at the first call

    @functools.wraps(loss, updated=())
    def distributed_value_and_grad(params, shards, *args):
        _check_not_traced(tree_flatten((params, args))[0], "value_and_grad", loss)
        cl = _get_client(client, "value_and_grad")
        if not head:  # at the first call: the cache key and the pickled spec
            blob, digest = pickled()
            head[:] = (f"value_and_grad-{digest}-{argnums!r}-{has_aux}",
                       _dumps((blob, argnums, has_aux)))
        key, spec = head
        payloads, treedef = _shard_payloads(cl, shards, loss)
        param_leaves, params_tree = tree_flatten(params)
        ship_params = _ship_large(cl, param_leaves)
        ship_args = _ship_large(cl, list(args))
        prefix = _task_prefix("value_and_grad", loss)
        n = len(payloads)
        futures = cl.map(_shard_task, [key] * n, [spec] * n, [has_aux] * n, range(n),
                         [treedef] * n, [a for a, _ in payloads], [params_tree] * n,
                         [ship_params] * n, [p for _, p in payloads], [ship_args] * n,
                         key=[f"{prefix}-shard-{i}" for i in range(n)], pure=False)
        total = _tree_sum(cl, futures, prefix)
        try:
            value, grads, auxes = total.result()
        except BaseException:
            cl.cancel(futures + [total])
            raise
        value = np.asarray(value)
        grads = tree_map(np.asarray, grads)
        return ((value, auxes), grads) if has_aux else (value, grads)

    return distributed_value_and_grad
