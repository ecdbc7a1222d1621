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

import collections
import contextlib
import functools
import hashlib
import inspect
import math
import threading
import uuid

try:
    import cloudpickle  # noqa: F401 - needed by the modules below
    import dask.array as da
    import distributed as _dd
    import tblib.pickling_support  # noqa: F401 - needed by the modules below
except ImportError as _e:  # pragma: no cover - exercised only without dask
    raise ImportError(
        f"tangentia.distributed needs Dask ({_e.name or 'dask'} is not installed): "
        "pip install 'tangentia[distributed]'") from _e

import numpy as np

from .. import core
from ..api import vmap as _vmap
from ..api.vectorization import _broadcast_prefix
from .._messages import fun_name as _fun_name
from ..tree_util import tree_flatten, tree_map, tree_unflatten
from ._actors import (_client_runners, _run_channel_lanes, _run_dask_lanes, _shard_task,
                      _sum_results, _vmap_task, _worker_threads, clear_worker_cache,
                      worker_cache_info)
from ._transport import _SCATTER_BYTES, _dumps, _pickle_data, _send_message  # noqa: F401

__all__ = ["vmap", "value_and_grad", "worker_cache_info", "clear_worker_cache"]

# The implementation: ``_transport`` (pickling, the same-machine channel: Unix
# sockets and their token) and ``_actors`` (the worker-side cache and actor, the
# client's actors and the calls on them); this module cuts the work into chunks
# or shards and puts the results back together.


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

def _check_not_traced(leaves, api, fun):
    for x in leaves:
        if isinstance(x, core.Tracer):
            raise TypeError(f"tangentia.distributed.{api} of {_fun_name(fun)} was called with a "
                            "traced value (inside jit, grad or vmap); distribute the "
                            "transformed function instead, e.g. "
                            "tangentia.distributed.vmap(tangentia.grad(f))")

def _nbytes(x):
    return getattr(x, "nbytes", 0) or 0

def _ship_large(client, values, api, fun):
    """``values`` with every array above the scatter threshold replaced by a
    future of it, scattered to all workers once (so it survives a worker).
    Dask's scatter waits for a worker for the client's timeout: a TimeoutError
    naming ``api`` and ``fun`` if none came."""
    big = [i for i, v in enumerate(values) if isinstance(v, np.ndarray)
           and _nbytes(v) > _SCATTER_BYTES]
    if not big:
        return list(values)
    try:
        futs = client.scatter([values[i] for i in big], broadcast=True, hash=False)
    except TimeoutError as e:
        raise TimeoutError(
            f"tangentia.distributed.{api} of {_fun_name(fun)}: no Dask worker to scatter the "
            f"arguments above {_SCATTER_BYTES >> 20} MiB to: the cluster had none for the "
            f"client's timeout ({getattr(client, '_timeout', '?')} s; Client(timeout=...)); "
            "start workers or scale the cluster") from e
    out = list(values)
    for i, f in zip(big, futs):
        out[i] = f
    return out

def _task_prefix(api, fun):
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in _fun_name(fun))
    return f"tangentia-{api}-{name}-{uuid.uuid4().hex[:12]}"

def _cancel(client, futures):
    """Cancel ``futures`` after a failed or interrupted wait, if the client can
    still reach its scheduler (else the scheduler already forgot them, and
    Dask's error would hide the wait's own)."""
    if client.status == "running":
        try:
            client.cancel(futures)
        except Exception:  # noqa: BLE001 - the connection went since: nothing to cancel
            pass

def _gather(client, futures):
    """Results of ``futures`` in their order; the others are cancelled on error."""
    try:
        return client.gather(futures)
    except BaseException:
        _cancel(client, futures)
        raise

@contextlib.contextmanager
def _lost_scheduler(client, api, fun):
    """A block whose waits are on ``client``: if it fails because the client
    lost its scheduler (Dask cancels the futures then, and closes the client if
    the scheduler does not come back within the client's timeout), a
    RuntimeError that says so, naming ``api`` and ``fun``.  Other errors (the
    function's own, Ctrl-C) pass unchanged."""
    try:
        yield
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except BaseException as e:
        if client.status == "running":
            raise
        raise RuntimeError(
            f"tangentia.distributed.{api} of {_fun_name(fun)}: the Dask client lost its "
            f"scheduler while this call waited on the cluster (client status "
            f"{client.status!r}: Dask cancels the work in flight and closes the client if the "
            "scheduler does not come back within the client's timeout); call again once a "
            "scheduler is reachable") from e


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
        with _lost_scheduler(cl, "vmap", fun):
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
                                     for x, d in zip(leaves, dims)], "vmap", fun)
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
    payloads = [(False, s) if lv is None
                else (True, _ship_large(client, lv, "value_and_grad", fun))
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
        with _lost_scheduler(cl, "value_and_grad", loss):
            if not head:  # at the first call: the cache key and the pickled spec
                blob, digest = pickled()
                head[:] = (f"value_and_grad-{digest}-{argnums!r}-{has_aux}",
                           _dumps((blob, argnums, has_aux)))
            key, spec = head
            payloads, treedef = _shard_payloads(cl, shards, loss)
            param_leaves, params_tree = tree_flatten(params)
            ship_params = _ship_large(cl, param_leaves, "value_and_grad", loss)
            ship_args = _ship_large(cl, list(args), "value_and_grad", loss)
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
                _cancel(cl, futures + [total])
                raise
            value = np.asarray(value)
            grads = tree_map(np.asarray, grads)
            return ((value, auxes), grads) if has_aux else (value, grads)

    return distributed_value_and_grad
