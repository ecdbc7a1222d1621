"""Every wait of tangentia.distributed ends or can be interrupted, on a real Dask
LocalCluster (no mocks): Ctrl-C stops a ``vmap`` or ``value_and_grad`` waiting
on a long chunk (a child process, SIGINT); a scheduler that goes away ends the
call with an error naming the function, once Dask gives up reconnecting (the
client's timeout), where the call used to end in Dask's ``ClosedClientError``
about a cancel message; a cluster without workers ends a call that scatters
its large arguments with a TimeoutError naming the function.  The in-process
clusters use threads (``processes=False``) and the NumPy jit backend, and a
``Client(timeout=...)`` of a second or two, so that each test stays near a
second of CPU."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

pytest.importorskip("distributed", reason="dask is an optional extra ([distributed])")
import dask  # noqa: E402
import dask.array as da  # noqa: E402
import distributed as dd  # noqa: E402

import tangentia.distributed as tgd  # noqa: E402


@pytest.fixture(autouse=True)
def numpy_backend_here():
    tg.config.update("jit_backend", "numpy")
    # With its scheduler gone, closing a cluster waits for Dask's connect timeout
    # (30 s by default): 1 s here.
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        yield
    tg.config.update("jit_backend", None)


def _cluster(n_workers):
    return dd.LocalCluster(n_workers=n_workers, processes=False, threads_per_worker=2,
                           dashboard_address=None)


def _close_scheduler_later(cluster, delay):
    def close():
        time.sleep(delay)
        cluster.sync(cluster.scheduler.close)
    t = threading.Thread(target=close, daemon=True)
    t.start()
    return t


def test_a_scheduler_gone_away_ends_vmap_with_an_error_naming_it():
    def slow_square(x):   # sleeps as it is traced: once per worker thread and shape
        time.sleep(0.5)
        return x * x
    with _cluster(1) as cluster, dd.Client(cluster, timeout=1.5) as client:
        f = tgd.vmap(slow_square, client=client)
        x = da.from_array(np.arange(4.0), chunks=2)   # chunks as tasks: a gather waits
        np.testing.assert_array_equal(f(x), np.arange(4.0) ** 2)
        closer = _close_scheduler_later(cluster, 0.1)
        t0 = time.monotonic()
        with pytest.raises(RuntimeError, match=r"tangentia\.distributed\.vmap of slow_square: "
                                               r"the Dask client lost its scheduler"):
            f(da.from_array(np.arange(6.0), chunks=3))   # a new shape: traced (sleeps) again
        assert time.monotonic() - t0 < 20
        closer.join(5)


def test_a_scheduler_gone_away_ends_value_and_grad_with_an_error_naming_it():
    def slow_loss(w, shard):
        time.sleep(0.5)
        return tnp.sum(w * shard)
    with _cluster(1) as cluster, dd.Client(cluster, timeout=1.5) as client:
        g = tgd.value_and_grad(slow_loss, client=client)
        value, grad = g(np.ones(2), [np.arange(2.0), np.ones(2)])
        np.testing.assert_array_equal(value, 3.0)
        np.testing.assert_array_equal(grad, [1.0, 2.0])
        closer = _close_scheduler_later(cluster, 0.1)
        with pytest.raises(RuntimeError, match=r"tangentia\.distributed\.value_and_grad of "
                                               r"slow_loss: the Dask client lost its scheduler"):
            g(np.ones(3), [np.arange(3.0), np.ones(3)])   # a new shape: traced (sleeps) again
        closer.join(5)


def test_no_worker_to_scatter_to_ends_with_a_timeout_naming_the_function():
    big = np.ones(200_000)   # above the 1 MiB scatter threshold
    def add_first(x, y):
        return x + y[0]
    def loss(w, shard):
        return tnp.sum(w * shard)
    with _cluster(0) as cluster, dd.Client(cluster, timeout=1) as client:
        t0 = time.monotonic()
        with pytest.raises(TimeoutError, match=r"tangentia\.distributed\.vmap of add_first: no "
                                               r"Dask worker to scatter"):
            tgd.vmap(add_first, in_axes=(0, None), client=client)(np.arange(3.0), big)
        with pytest.raises(TimeoutError, match=r"tangentia\.distributed\.value_and_grad of "
                                               r"loss: no Dask worker to scatter"):
            tgd.value_and_grad(loss, client=client)(big, [big])
        assert time.monotonic() - t0 < 20


# The child: one worker process; each call waits on a chunk that sleeps for a minute:
# vmap's first call on its actor through Dask (client.sync), value_and_grad on a gather,
# vmap's next call on the worker's _Channel (a select on its socket).  It prints
# READY <name> just before each call, and how each ended.
CHILD = textwrap.dedent("""
    import time
    import numpy as np
    import distributed as dd
    import tangentia.numpy as tnp
    import tangentia.distributed as tgd
    from tangentia.distributed import _actors

    def sleepy(x):
        time.sleep(60)
        return x

    def sleepy_loss(w, shard):
        time.sleep(60)
        return tnp.sum(w * shard)

    if __name__ == "__main__":
        with dd.LocalCluster(n_workers=1, processes=True, threads_per_worker=2,
                             dashboard_address=None,
                             env={"TANGENTIA_JIT_BACKEND": "numpy"}) as cluster, \\
                dd.Client(cluster) as client:
            def channel():   # the second vmap call goes over the worker's Unix socket
                tgd.vmap(sleepy)(np.arange(3.0))

            calls = [("vmap", lambda: tgd.vmap(sleepy)(np.arange(2.0))),
                     ("value_and_grad",
                      lambda: tgd.value_and_grad(sleepy_loss)(np.ones(2), [np.ones(2)])),
                     ("channel", channel)]
            for name, call in calls:
                if name == "channel":
                    runners = _actors._client_runners(client)
                    for _ in range(100):   # at most 10 s for the client to connect to it
                        if runners.channels:
                            break
                        time.sleep(0.1)
                    print("CHANNEL", bool(runners.channels), flush=True)
                print("READY", name, flush=True)
                t0 = time.monotonic()
                try:
                    call()
                    print("RETURNED", name, flush=True)
                except KeyboardInterrupt:
                    print("INTERRUPTED", name, round(time.monotonic() - t0, 2), flush=True)
        print("CLOSED", flush=True)
""")


NAMES = ("vmap", "value_and_grad", "channel")


def _sigint_default():
    """SIGINT delivered and handled by default in the child, as at a terminal (see
    tests/test_interrupt.py: a background job's children have it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process: POSIX")
def test_ctrl_c_stops_vmap_and_value_and_grad_waiting_on_the_cluster(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(
        __file__))) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with open(tmp_path / "stderr", "w") as err:
        proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                                stderr=err, text=True, env=env, cwd=tmp_path,
                                preexec_fn=_sigint_default)
        lines = []
        try:
            for name in NAMES:
                while True:
                    line = proc.stdout.readline()
                    assert line, f"the child ended early: {lines}"
                    lines.append(line.strip())
                    if line.strip() == f"READY {name}":
                        break
                time.sleep(1.5)   # the call is waiting on its chunk (60 s)
                proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    lines += out.split()
    text = " ".join(lines)
    assert "RETURNED" not in text, text
    assert "CHANNEL True" in text, text
    for name in NAMES:
        parts = text.split(f"INTERRUPTED {name} ")
        assert len(parts) == 2, (text, (tmp_path / "stderr").read_text()[-3000:])
        assert float(parts[1].split()[0]) < 15, text   # the chunk sleeps 60 s
    assert text.endswith("CLOSED"), text
