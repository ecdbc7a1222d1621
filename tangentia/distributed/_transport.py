"""How work and results travel between a client and its workers: pickling
(cloudpickle for functions, ``jit`` functions without their caches; pickle for
data when it can) and the same-machine channel, a Unix socket whose
connections must first send a random token (compared in constant time,
``hmac.compare_digest``), carrying length-prefixed messages."""
from __future__ import annotations

import atexit
import hmac
import io
import os
import pickle
import secrets
import shutil
import socket
import struct
import sys
import tempfile
import threading
import uuid

import cloudpickle

from ..api import jit as _jit
from ..api.staging import _Jitted


# Leaves larger than this are scattered to the workers once per call instead of
# travelling inside every task (Dask warns about large graphs).
_SCATTER_BYTES = 1 << 20


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
    def get(cls, threads, run):
        """The process's channel, made at the first call; its connections run
        at most ``threads`` chunks at a time, each by ``run(payload) -> reply``
        (bytes to bytes)."""
        with cls._lock:
            if not cls._instance:
                try:
                    cls._instance.append(cls(threads, run))
                except OSError:  # no Unix sockets here: the calls go through Dask
                    cls._instance.append(None)
            return cls._instance[0]

    def __init__(self, threads, run):
        if not hasattr(socket, "AF_UNIX"):
            raise OSError("no AF_UNIX")
        self.run = run
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
                    with self.slots:
                        reply = self.run(payload)
                    _send_message(conn, reply)
            except OSError:  # the client went away (or timed out authenticating)
                return


def connect(address, token):
    """A socket connected to the ``_Channel`` at ``address`` and authenticated
    with its ``token``; OSError if it cannot be reached (from another machine,
    or its worker is gone)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(address)
        sock.sendall(token)
    except OSError:
        sock.close()
        raise
    return sock
