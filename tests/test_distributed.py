"""tangentia.distributed against the local transformations, on a real Dask
LocalCluster (two worker processes, one thread each; no mocks).

One module-scoped cluster serves every test except the killed-worker test,
which starts its own (it kills one of its workers).  The workers' default jit
backend is the NumPy one (``TANGENTIA_JIT_BACKEND=numpy``): the distributed
layer does not depend on the backend, and numba would compile every program
of every case on each worker (minutes for the odeint case), far beyond this
file's time budget; the "numba_inside" case runs numba-compiled code on the
workers and is compared with the same program run here.  Functions defined here
travel to the workers by value (as from a notebook or script), registered
with cloudpickle.
"""
import concurrent.futures
import importlib
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax
from tangentia.experimental.ode import odeint
from tangentia.tree_util import tree_flatten

da = pytest.importorskip("dask.array", reason="dask is an optional extra ([distributed])")
dd = pytest.importorskip("distributed", reason="dask is an optional extra ([distributed])")
import cloudpickle  # noqa: E402

import tangentia.distributed as tgd  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _cluster():
    return dd.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                           dashboard_address=":0", env={"TANGENTIA_JIT_BACKEND": "numpy"})


def _import_tangentia_distributed():
    importlib.import_module("tangentia.distributed")


@pytest.fixture(scope="module", autouse=True)
def numpy_backend_here():
    """The references computed here use the workers' backend (eager control flow
    runs on the jit backend too), so that results can be compared bit for bit."""
    tg.config.update("jit_backend", "numpy")
    yield
    tg.config.update("jit_backend", None)


@pytest.fixture(scope="module")
def client():
    with _cluster() as cluster, dd.Client(cluster) as c:
        c.run(_import_tangentia_distributed)  # see the killed-worker test
        yield c


def assert_same(got, want):
    """Same pytree structure, and every leaf the same ndarray type, dtype, shape and values."""
    gl, gt = tree_flatten(got)
    wl, wt = tree_flatten(want)
    assert gt == wt, f"structure {gt} != {wt}"
    for g, w in zip(gl, wl):
        assert isinstance(g, np.ndarray), type(g)
        assert g.dtype == np.asarray(w).dtype and g.shape == np.shape(w), (g.dtype, g.shape,
                                                                         np.asarray(w).dtype)
        np.testing.assert_array_equal(g, w)


def _vmap_tasks_run(task_stream, fun_name):
    """The chunks of ``fun_name`` that ran as Dask tasks (not on the actors)."""
    return sorted(int(str(t["key"]).rsplit("-", 1)[1]) for t in task_stream.data
                  if str(t["key"]).startswith(f"tangentia-vmap-{fun_name}-"))


# ---------------------------------------------------------------------------
# The optional dependency


def test_import_tangentia_does_not_import_dask_and_missing_dask_names_the_extra():
    code = ("import sys\nimport tangentia\nassert 'dask' not in sys.modules, 'dask imported'\n"
            "sys.modules['dask'] = None\n"
            "try:\n    import tangentia.distributed\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pip install 'tangentia[distributed]'" in out.stdout, out.stdout


# ---------------------------------------------------------------------------
# vmap: equality with the local vmap


X = np.random.default_rng(0).normal(size=(7, 3))
Y = np.random.default_rng(1).normal(size=(3, 5))


def f_pytree(d, w):
    return {"s": tnp.sin(d["x"]) @ w, "n": (tnp.sum(d["x"] ** 2), d["i"] * 2)}


@tg.custom_vjp
def clip_gradient(x):
    return x


clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (tnp.clip(g, -0.5, 0.5),))


def pendulum_final(y0, b):
    ys = odeint(lambda y, t, b: tnp.stack([y[1], -b * y[1] - 5.0 * tnp.sin(y[0])]), y0,
                np.linspace(0.0, 1.0, 5), b)
    return tnp.sum(ys[-1] ** 2)


@pytest.mark.parametrize("case", [
    "in_axes_0", "in_axes_none", "in_axes_1_out_axes_1", "negative_axes", "pytree",
    "kwargs", "uneven_chunks", "one_chunk", "float32_and_int", "grad", "custom_vjp", "jitted",
    "odeint", "dask_array", "numba_inside"])
def test_vmap_equals_local_vmap(client, case):
    i = np.arange(7, dtype=np.int32)
    f, args, kw, opts = {
        "in_axes_0": (lambda x: tnp.tanh(x) * 2.0, (X,), {}, {}),
        "in_axes_none": (lambda x, w: x @ w, (X, Y), {}, dict(in_axes=(0, None))),
        "in_axes_1_out_axes_1": (lambda x, w: (x * w[:, 0], tnp.exp(x)), (X.T, Y), {},
                                 dict(in_axes=(1, None), out_axes=1)),
        "negative_axes": (lambda x: tnp.cumsum(x), (X.T,), {}, dict(in_axes=-1, out_axes=-1)),
        "pytree": (f_pytree, ({"x": X, "i": i}, Y), {},
                   dict(in_axes=({"x": 0, "i": 0}, None), out_axes={"s": 0, "n": (0, 0)})),
        "kwargs": (lambda x, *, w: x * w, (X,), {"w": X[:, :1] + 1.0}, {}),
        "uneven_chunks": (lambda x: tnp.sum(tnp.cos(x)), (X,), {}, dict(chunk_size=3)),
        "one_chunk": (lambda x: x ** 3, (X,), {}, dict(chunk_size=100)),
        "float32_and_int": (lambda x, n: (x * 2, n + 1, x.sum() > 0), (X.astype(np.float32), i),
                            {}, {}),
        "grad": (tg.grad(lambda x, w: tnp.sum(tnp.tanh(x @ w) ** 2)), (X, Y), {},
                 dict(in_axes=(0, None))),
        "custom_vjp": (tg.grad(lambda x: tnp.sum(3.0 * clip_gradient(x))), (X,), {}, {}),
        "jitted": (tg.jit(lambda x, s: tnp.sin(x) * s), (X, 2.5), {}, dict(in_axes=(0, None))),
        "odeint": (tg.grad(pendulum_final, argnums=(0, 1)),
                   (np.array([[3.0, 0.0], [2.5, 0.1], [1.0, 0.0]]), np.array([0.2, 0.3, 0.25])),
                   {}, {}),
        "dask_array": (lambda x, w: tnp.tanh(x @ w), (X, Y), {}, dict(in_axes=(0, None))),
        "numba_inside": (tg.jit(lambda x: tnp.tanh(x) * 2.0 + x, backend="numba"), (X,), {},
                         dict(chunk_size=4)),
    }[case]
    local = tg.vmap(f, in_axes=opts.get("in_axes", 0), out_axes=opts.get("out_axes", 0))
    if case == "numba_inside":  # what the workers run: jit(vmap(f)), f's program by numba
        local = tg.jit(local)
    want = local(*args, **kw)
    if case == "dask_array":  # chunks (3, 3, 1) become the tasks; w stays a dask array
        args = (da.from_array(X, chunks=(3, 2)), da.from_array(Y, chunks=2))
    got = tgd.vmap(f, client=client, **opts)(*args, **kw)
    assert_same(got, want)


def test_vmap_zero_size_axis_and_default_client(client):
    # client=None uses the current client (the fixture's, the only one in this process)
    got = tgd.vmap(lambda x: x * 2.0)(np.zeros((0, 3)))
    assert_same(got, tg.vmap(lambda x: x * 2.0)(np.zeros((0, 3))))


class CountsPickles:
    """A function that counts how often it is pickled (on the client)."""
    pickled = 0

    def __call__(self, x):
        return tnp.sin(x) + 1.0

    def __reduce__(self):
        CountsPickles.pickled += 1
        return CountsPickles, ()


def test_vmap_pickles_once_and_each_worker_traces_once_per_signature(client):
    client.run(tgd.clear_worker_cache)
    CountsPickles.pickled = 0
    f = tgd.vmap(CountsPickles(), client=client)  # default chunks: one per worker thread
    x = np.arange(8.0)
    for _ in range(3):
        np.testing.assert_array_equal(f(x), np.sin(x) + 1.0)
    assert CountsPickles.pickled == 1  # pickled at the first call, the bytes reused
    info = client.run(tgd.worker_cache_info)
    # 3 calls x 2 chunks; a worker builds and traces the jitted function at most once
    assert sum(i["hits"] + i["misses"] for i in info.values()) == 6, info
    assert all(i["misses"] <= 1 and i["entries"] == i["misses"] == i["traces"]
               and i["backend"] == "numpy" for i in info.values()), info
    np.testing.assert_array_equal(f(x[:6]), np.sin(x[:6]) + 1.0)  # chunks of 3: new signature
    after = client.run(tgd.worker_cache_info)
    for w, i in after.items():  # a worker that ran a chunk of 3 traced it once more
        ran = i["hits"] + i["misses"] > info[w]["hits"] + info[w]["misses"]
        assert i["traces"] == info[w]["traces"] + ran, (info, after)
        assert i["entries"] == max(info[w]["entries"], ran), (info, after)
    assert CountsPickles.pickled == 1


def row_work(r):
    """Cost proportional to the row count of a chunk, the same for every backend."""
    return tnp.sum(tnp.sin(r[:, None] * r[None, :]))


def test_vmap_results_in_input_order_when_chunks_finish_out_of_order(client):
    rng = da.random.default_rng(3)
    x = rng.standard_normal((1500 + 9, 150), chunks=((1500, 3, 3, 3), 150)).persist()
    with dd.get_task_stream(client=client) as ts:
        got = tgd.vmap(row_work, client=client)(x)
    # A loop, not tg.vmap: the vmapped outer products of 1509 rows take 0.5 GB at once.
    want = np.array([row_work(r) for r in x.compute()])
    np.testing.assert_allclose(got, want, rtol=1e-13)
    ends = {}
    for t in ts.data:
        if str(t["key"]).startswith("tangentia-vmap-row_work-"):
            ends[int(t["key"].rsplit("-", 1)[1])] = max(s["stop"] for s in t["startstops"])
    assert sorted(ends) == [0, 1, 2, 3]
    assert min(ends[1], ends[2], ends[3]) < ends[0], ends  # a later chunk finished first


def test_vmap_runs_numpy_inputs_on_the_actors_and_dask_arrays_as_tasks(client):
    client.run(tgd.clear_worker_cache)
    x = np.random.default_rng(7).normal(size=(7, 4))
    f = tgd.vmap(row_work, client=client, chunk_size=3)
    with dd.get_task_stream(client=client) as ts:
        np.testing.assert_allclose(f(x), tg.vmap(row_work)(x), rtol=1e-13)
        np.testing.assert_allclose(f(da.from_array(x, chunks=2)), tg.vmap(row_work)(x),
                                   rtol=1e-13)
    assert _vmap_tasks_run(ts, "row_work") == [0, 1, 2]  # the dask array's 3 chunks of 3
    info = client.run(tgd.worker_cache_info)
    # the NumPy input's 3 chunks ran on the actors, each worker's taking at least one
    assert [i["actor_calls"] >= 1 for i in info.values()] == [True, True], info
    assert sum(i["actor_calls"] for i in info.values()) == 3, info


class Scaled:
    """A value of a class that, in the test below, looks defined in the client's
    ``__main__`` (a script's or notebook's class): pickle refers to it by name,
    which another process cannot import."""

    def __init__(self, a):
        self.a = a


def test_chunk_pickles_carry_classes_from_main_by_value(monkeypatch):
    monkeypatch.setattr(Scaled, "__module__", "__main__")
    monkeypatch.setattr(sys.modules["__main__"], "Scaled", Scaled, raising=False)
    data = tgd._pickle_data((np.arange(3.0), Scaled(2.5)))
    out = subprocess.run([sys.executable, "-c", "import pickle, sys; "
                          "x, s = pickle.loads(sys.stdin.buffer.read()); print(x.sum() * s.a)"],
                         input=data, capture_output=True, timeout=60)
    assert out.stdout.decode().strip() == "7.5", out.stderr.decode()[-2000:]


def _actors_of(dask_scheduler, client_id):
    return sum(1 for ts in dask_scheduler.tasks.values()
               if ts.actor and any(cs.client_key == client_id for cs in ts.who_wants))


def test_vmap_concurrent_calls_from_threads_of_a_client_that_is_not_the_default(
        client, monkeypatch):
    def scaled_sin(x, s):
        return tnp.sin(x) * s

    monkeypatch.setattr(tgd._actors, "_RUNNER_IDLE", 0.5)
    xs = [np.random.default_rng(k).normal(size=(3 + k % 3, 3)) for k in range(8)]
    with dd.Client(client.scheduler.address, set_as_default=False) as other:
        f = tgd.vmap(scaled_sin, in_axes=(0, None), client=other, chunk_size=2)
        other.run(tgd.clear_worker_cache)
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda k: f(xs[k], float(k)), range(8)))
        info = other.run(tgd.worker_cache_info)  # 18 chunks, all on the new client's actors
        assert sum(i["actor_calls"] for i in info.values()) == 18, info
        assert other.run_on_scheduler(_actors_of, client_id=other.id) == 2
        # idle actors are released (Dask retires no worker holding one), and made again
        deadline = time.monotonic() + 10
        while other.run_on_scheduler(_actors_of, client_id=other.id) and (
                time.monotonic() < deadline):
            time.sleep(0.1)
        assert other.run_on_scheduler(_actors_of, client_id=other.id) == 0
        assert_same(f(xs[0], 1.0), tg.vmap(scaled_sin, in_axes=(0, None))(xs[0], 1.0))
        assert other.run_on_scheduler(_actors_of, client_id=other.id) == 2
        assert sum(i["actor_calls"] for i in other.run(tgd.worker_cache_info).values()) == 20
    for k, g in enumerate(got):
        assert_same(g, tg.vmap(scaled_sin, in_axes=(0, None))(xs[k], float(k)))


def waits(x):
    """Sleeps 5 ms per chunk: short, but a chunk that mostly waits (here, or on a call
    into Dask that needs the worker's event loop) never runs on that loop."""
    def cb(v):
        time.sleep(0.005)
        return v * 2.0
    return tg.pure_callback(cb, tg.ShapeDtypeStruct(x.shape, x.dtype), x,
                            vmap_method="broadcast_all")


def _wait_for_channels(client, runners):
    """Wait (up to 10 s) until ``runners`` learned every worker's channel (in
    the background, after the actors were made)."""
    deadline = time.monotonic() + 10
    while set(runners.channels) != set(client.nthreads()) and time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.mark.parametrize("how", ["same machine", "other machine", "unreachable", "proxy"])
def test_vmap_actor_calls_go_straight_to_reachable_workers_and_short_chunks_run_inline(
        client, how):
    """With Dask's default (direct_to_workers=None) the client calls the actors
    on the workers it connected to (in the background, after the actors are
    made), over each worker's channel (a Unix socket) when it can connect to
    it ("same machine"), else through Dask's messages ("other machine": the
    channels cannot be reached); else ("unreachable": the connections fail;
    direct_to_workers=False) through the scheduler's proxy.  On Dask's
    messages, a chunk whose signature ran for less than _INLINE_SECONDS
    before, computing for at least half of that time, runs on the worker's
    event loop; one that waited, in the actor's thread."""
    x = np.arange(8.0)
    with dd.Client(client.scheduler.address, set_as_default=False,
                   direct_to_workers=False if how == "proxy" else None) as other:
        if how == "unreachable":  # the client reaches the scheduler only
            connect = other.rpc.connect

            async def refuse(addr, timeout=None):
                if addr != other.scheduler.address:
                    raise OSError(f"{addr} is not reachable from this client (test)")
                return await connect(addr, timeout)
            other.rpc.connect = refuse
        other.run(tgd.clear_worker_cache)
        fast = tgd.vmap(lambda v: v + 1.0, client=other)
        waiting = tgd.vmap(waits, client=other)
        np.testing.assert_array_equal(fast(x), x + 1.0)  # makes the actors
        runners = tgd._client_runners(other)
        if how in ("same machine", "other machine"):
            _wait_for_channels(other, runners)
            assert set(runners.channels) == set(other.nthreads())
        if how == "other machine":  # as from another machine: nothing listens there
            runners.channels = {a: ("/nonexistent/tangentia-test", t)
                                for a, (_, t) in runners.channels.items()}
        for _ in range(3):
            np.testing.assert_array_equal(fast(x), x + 1.0)
        assert runners.direct == (set() if how in ("unreachable", "proxy")
                                  else set(other.nthreads()))
        # a channel that could not be reached is forgotten
        assert set(runners.channels) == (set(other.nthreads()) if how == "same machine"
                                         else set())
        # one chunk per worker and call, on the actors; over the channels for the
        # last three calls, or through Dask: a worker's first chunk (its signature's
        # time unknown) in the actor's thread, the later ones mostly inline
        info = other.run(tgd.worker_cache_info)
        assert [i["actor_calls"] for i in info.values()] == [4, 4], info
        if how == "same machine":
            assert [(i["socket"], i["inline"]) for i in info.values()] == [(3, 0)] * 2, info
        else:
            assert all(i["socket"] == 0 and 1 <= i["inline"] <= 3 for i in info.values()), info
        for _ in range(3):
            np.testing.assert_array_equal(waiting(x), x * 2.0)
        after = other.run(tgd.worker_cache_info)  # the waiting chunks all ran in a thread
        assert [i["actor_calls"] for i in after.values()] == [7, 7], after
        assert [i["inline"] for i in after.values()] == [i["inline"] for i in info.values()]


def test_channel_runs_nothing_for_a_connection_without_the_token(client):
    """A connection to a worker's channel that does not first send the token the
    client got through Dask is closed without running anything."""
    f = tgd.vmap(lambda v: v * 3.0, client=client)
    x = np.arange(4.0)
    f(x)
    runners = tgd._client_runners(client)
    _wait_for_channels(client, runners)
    np.testing.assert_array_equal(f(x), x * 3.0)
    before = client.run(tgd.worker_cache_info)
    address, token = next(iter(runners.channels.values()))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(address)
        s.sendall(bytes(b ^ 1 for b in token))
        try:
            tgd._send_message(s, pickle.dumps(("k", b"", [x])))  # never unpickled
            assert s.recv(1) == b""  # closed by the worker
        except (ConnectionResetError, BrokenPipeError):
            pass  # closed by the worker, with our message unread
    after = client.run(tgd.worker_cache_info)
    assert [i["actor_calls"] for i in after.values()] == \
        [i["actor_calls"] for i in before.values()]
    np.testing.assert_array_equal(f(x), x * 3.0)  # the client's own sockets still work


# ---------------------------------------------------------------------------
# vmap: faults and bad input


class UserError(ValueError):
    pass


def f_raises(x):
    if x.shape != (2,):
        raise UserError(f"f_raises wants rows of 2, got {x.shape}")
    return x


@pytest.mark.parametrize("direct", [None, False])
def test_error_in_f_reaches_the_user_with_its_type_and_frame(client, direct):
    """Over the channels (Dask's default client, this machine) and through
    Dask's messages (direct_to_workers=False): from the actor's thread, then
    from the worker's event loop; the next call runs normally."""
    with dd.Client(client.scheduler.address, set_as_default=False,
                   direct_to_workers=direct) as other:
        other.run(tgd.clear_worker_cache)
        f = tgd.vmap(f_raises, client=other)
        f(np.ones((4, 2)))
        if direct is None:
            _wait_for_channels(other, tgd._client_runners(other))
        for _ in range(3):
            with pytest.raises(UserError, match="wants rows of 2") as info:
                f(np.ones((4, 3)))
            assert any(entry.name == "f_raises" for entry in info.traceback), info.traceback
        np.testing.assert_array_equal(f(np.ones((4, 2))), np.ones((4, 2)))
        info = other.run(tgd.worker_cache_info).values()
        if direct is None:
            assert sum(i["socket"] for i in info) == 8, info
        else:
            assert sum(i["inline"] for i in info) >= 1, info


def test_unpicklable_function_raises_type_error_naming_it(client, tmp_path):
    with open(tmp_path / "log.txt", "w") as fh:
        def logs_to_file(x):
            fh.write("called\n")
            return x
        with pytest.raises(TypeError, match=r"'logs_to_file' cannot be pickled.*closes over "
                                            r"'fh' \(a TextIOWrapper\)"):
            tgd.vmap(logs_to_file, client=client)(np.ones((4, 2)))


def test_bad_axes_and_sizes_raise_the_local_vmap_errors(client):
    with pytest.raises(ValueError, match="inconsistent sizes"):
        tgd.vmap(lambda a, b: a + b, client=client)(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="out of range"):
        tgd.vmap(lambda a: a, in_axes=2, client=client)(np.ones((3, 2)))
    with pytest.raises(ValueError, match="chunk_size must be a positive int"):
        tgd.vmap(lambda a: a, chunk_size=0)


# ---------------------------------------------------------------------------
# value_and_grad over shards


def loss(params, shard, scale):
    w, b = params
    x, y = shard
    return scale * tnp.sum((tnp.tanh(x @ w + b) - y) ** 2)


W = (np.random.default_rng(2).normal(size=3), 0.1)
SHARDS = [(np.random.default_rng(10 + k).normal(size=(n, 3)),
           np.random.default_rng(20 + k).normal(size=n)) for k, n in enumerate([5, 8, 3, 6, 4])]


def local_sum(f, params, shards, *args, **kw):
    """Sum over shards of the local value_and_grad (the reference)."""
    outs = [tg.value_and_grad(f, **kw)(params, s, *args) for s in shards]
    total = outs[0]
    for o in outs[1:]:
        total = tg.tree_util.tree_map(np.add, total, o)
    return total


def assert_close(got, want):
    gl, gt = tree_flatten(got)
    wl, wt = tree_flatten(want)
    assert gt == wt, f"structure {gt} != {wt}"
    for g, w in zip(gl, wl):
        assert isinstance(g, np.ndarray) and g.dtype == np.float64
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("kind", ["local", "futures", "dask_chunks", "one_dask_array"])
def test_value_and_grad_equals_sum_of_local_shards(client, kind):
    g = tgd.value_and_grad(loss, client=client)
    if kind == "local":
        shards = SHARDS
    elif kind == "futures":
        shards = client.scatter(SHARDS)
    elif kind == "dask_chunks":  # (x, y) pairs of dask arrays already on the workers
        shards = [(da.from_array(x, chunks=2).persist(), da.from_array(y, chunks=-1).persist())
                  for x, y in SHARDS]
    else:  # one dask array: its blocks along axis 0 are the shards
        xs = np.concatenate([x for x, _ in SHARDS])
        arr = da.from_array(xs, chunks=((5, 8, 3, 6, 4), 3)).persist()
        g = tgd.value_and_grad(lambda p, x, s: tnp.sum(tnp.tanh(x @ p[0] + p[1])) * s,
                               client=client)
        assert_close(g(W, arr, 0.5), local_sum(
            lambda p, x, s: tnp.sum(tnp.tanh(x @ p[0] + p[1])) * s, W,
            [x for x, _ in SHARDS], 0.5))
        return
    assert_close(g(W, shards, 0.5), local_sum(loss, W, SHARDS, 0.5))


def test_value_and_grad_large_params_are_scattered_small_ones_travel_with_tasks(client):
    big = np.random.default_rng(4).normal(size=150_000)  # 1.2 MB: above the scatter threshold
    params = {"big": big, "w": W[0], "b": W[1]}

    def loss_big(p, shard, scale):
        return loss((p["w"], p["b"]), shard, scale) + 1e-3 * tnp.sum(p["big"] ** 2)

    scattered = []
    real = client.scatter
    client.scatter = lambda data, **kw: scattered.append(len(data)) or real(data, **kw)
    try:
        got = tgd.value_and_grad(loss_big, client=client)(params, SHARDS[:2], 0.5)
    finally:
        del client.scatter
    assert scattered == [1]  # big alone
    assert_close(got, local_sum(loss_big, params, SHARDS[:2], 0.5))


def test_value_and_grad_argnums_and_aux(client):
    def loss_aux(params, shard, scale):
        return loss(params, shard, scale), tnp.mean(shard[1])

    (value, auxes), grads = tgd.value_and_grad(loss_aux, argnums=(0, 2), has_aux=True,
                                               client=client)(W, SHARDS, 0.5)
    want_value, want_grads = local_sum(loss, W, SHARDS, 0.5, argnums=(0, 2))
    assert_close((value, grads), (want_value, want_grads))
    np.testing.assert_allclose(auxes, [np.mean(y) for _, y in SHARDS], rtol=1e-15)


def _scheduler_time(dask_scheduler):
    return time.time()


def _new_work_since(dask_scheduler, start):
    """Scheduler transitions (key, from, to) since time ``start``, other than
    releases of earlier tasks."""
    return [t[:3] for t in dask_scheduler.transition_log
            if t[-1] > start and t[2] not in ("released", "forgotten")]


def test_value_and_grad_bad_shards_raise_before_any_work(client):
    client.run_on_scheduler(lambda dask_scheduler: None)  # earlier tests' releases settle
    start = client.run_on_scheduler(_scheduler_time)
    g = tgd.value_and_grad(loss, client=client)
    bad = SHARDS[:2] + [(SHARDS[2][0], SHARDS[2][1], SHARDS[2][1])]
    with pytest.raises(ValueError, match=r"structures disagree: shard 0 .* shard 2"):
        g(W, bad, 0.5)
    with pytest.raises(ValueError, match="leaf ranks"):
        g(W, SHARDS[:2] + [(SHARDS[2][0], SHARDS[2][1][:, None])], 0.5)
    with pytest.raises(ValueError, match="shards is empty"):
        g(W, [], 0.5)
    with pytest.raises(ValueError, match="includes 1, the shard"):
        tgd.value_and_grad(loss, argnums=(0, 1))
    assert client.run_on_scheduler(_new_work_since, start=start) == []
    # a future whose structure disagrees is caught on its worker, naming the shard
    with pytest.raises(ValueError, match="shard 1 has the structure"):
        g(W, [SHARDS[0], client.scatter([SHARDS[1][0]])[0]], 0.5)


# Last in the module: it kills one of the module's workers (its replacement joins the
# cluster), where it used a cluster of its own (a second start of two worker processes,
# each importing tangentia: about 7 s of CPU).
def test_killed_worker_does_not_change_the_result_and_its_actor_is_recreated(client):
    def heavy(r):
        return lax.fori_loop(0, 12, lambda k, acc: acc + row_work(r * (k + 1.0)), 0.0)

    x = np.random.default_rng(5).normal(size=(8 * 60, 120))
    want = tg.vmap(heavy)(x)
    c = client
    pids = c.run(os.getpid)
    # the workers import tangentia first (seconds on a loaded machine, longer than a
    # call waits for its new actors); then a first call makes the actors
    c.run(_import_tangentia_distributed)
    f = tgd.vmap(heavy, client=c, chunk_size=60)
    f(x[:2])
    _wait_for_channels(c, tgd._client_runners(c))  # the chunks go over the channels
    out = {}
    with dd.get_task_stream(client=c) as ts:
        run = threading.Thread(target=lambda: out.update(r=f(x)))
        run.start()
        victim, deadline = None, time.monotonic() + 60
        while victim is None and time.monotonic() < deadline:  # an actor in mid-chunk
            busy = [w for w, i in c.run(tgd.worker_cache_info).items() if i["running"]]
            victim = busy[0] if busy else None
        assert victim is not None, ("no chunk started on an actor",
                                    c.run(tgd.worker_cache_info))
        os.kill(pids[victim], signal.SIGKILL)
        run.join(120)
        assert not run.is_alive()
    # the chunks not done when the actor failed (at least its own) ran as tasks
    assert 1 <= len(_vmap_tasks_run(ts, "heavy")) < 8, ts.data
    np.testing.assert_allclose(out["r"], want, rtol=1e-13)
    # the next call after the worker's replacement arrives uses an actor on it again
    c.wait_for_workers(2, timeout=60)
    new = [w for w, pid in c.run(os.getpid).items() if pid not in pids.values()]
    assert len(new) == 1, (pids, c.run(os.getpid))
    c.run(_import_tangentia_distributed, workers=new)  # as above
    f(x[:2])
    _wait_for_channels(c, tgd._client_runners(c))
    with dd.get_task_stream(client=c) as ts:
        np.testing.assert_allclose(f(x[:120]), want[:120], rtol=1e-13)
    assert _vmap_tasks_run(ts, "heavy") == []
    assert c.run(tgd.worker_cache_info, workers=new)[new[0]]["socket"] >= 1
