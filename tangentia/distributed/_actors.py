"""The Dask actors that run ``vmap`` chunks: on the worker, a per-process
cache of jitted functions, the ``_Runner`` actor and the tasks it and the
scheduler run; on the client, each client's actors (``_Runners``: created,
replaced when a worker is lost, released when idle) and the calls of a
``vmap``'s chunks on them, over the workers' channels or Dask's messages."""
from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import functools
import pickle
import selectors
import threading
import time
import uuid
import weakref

import cloudpickle
import distributed as _dd
import numpy as np
import tblib.pickling_support
from distributed.protocol import to_serialize

from ..api import jit as _jit, value_and_grad as _value_and_grad, vmap as _vmap
from ..compiler.backend import default_backend_name as _default_backend_name
from ..tree_util import tree_flatten, tree_map, tree_unflatten
from ._transport import (_SCATTER_BYTES, _Channel, _pickle_data, _recv_message,
                         _send_message, connect as _connect)

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
        ch = _Channel.get(_runner_pool[0].threads, _run_channel_payload)
        return None if ch is None else (ch.address, ch.token)

def _run_channel_payload(payload):
    """The pickled reply to a chunk sent over this worker's ``_Channel``."""
    task, signature = _load_task(payload)
    with _cache_lock:
        _cache_stats["socket"] += 1
    return _run_chunk(task, signature, False)


def _load_task(payload):
    """``(task, signature)`` of an actor call's ``payload``: the ``(key, spec,
    leaves)`` of ``_vmap_task`` and its cache key with the leaves' shapes and dtypes."""
    task = pickle.loads(payload)
    return task, (task[0], tuple((np.shape(x), getattr(x, "dtype", type(x))) for x in task[2]))

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
# Client side: each client's actors, and the calls of chunks on them


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
        try:
            return _connect(*channel)
        except OSError:  # another machine (or the worker is gone)
            with self.lock:
                if self.channels.get(addr) == channel:
                    del self.channels[addr]
            return None

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
