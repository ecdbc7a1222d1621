"""Python's bytecode for a test run's processes, where ``PYTHONDONTWRITEBYTECODE`` is set
(tests/conftest.py uses it).

With ``PYTHONDONTWRITEBYTECODE=1`` (the environment the suite and .ci/run run in, which keeps
the shared tree free of ``__pycache__`` directories) every process compiles every source file it
imports that has no bytecode yet: tangentia's 63,000 lines (``import tangentia`` and its backends:
1.0 s of CPU from source, 0.65 s from bytecode) and the test modules pytest rewrites (3.5 s a
full collection), in each xdist worker and in each Python process a test starts (the processes
of test_numba_pool, test_numba_units, test_tiered, test_interrupt, test_distributed's dask
workers, the sphinx build, ...).  A run's first process makes one directory for the run's
bytecode (``PYTHONPYCACHEPREFIX``, outside the tree; removed as that process ends) and lets its
workers and the processes its tests start write there (``PYTHONDONTWRITEBYTECODE`` removed
from their environment): the first process to import a file compiles it, the others load it.
Nothing else changes: Python checks each file's bytecode against the source's size and
modification time, as it does in ``__pycache__``, and writes it atomically (a rename).

``TANGENTIA_TEST_BYTECODE=0``: as before (no bytecode written).  Where
``PYTHONDONTWRITEBYTECODE`` is not set, or ``PYTHONPYCACHEPREFIX`` is (the user's own choice),
nothing is done.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile

RUN_ENV = "TANGENTIA_TEST_BYTECODE_RUN"   # the directory a run's first process made


def choose(first_process: bool) -> str | None:
    """The directory this process removes as it ends (a run's first process: the one it made),
    or None.  Points this process's later imports (``sys.pycache_prefix``) and those of the
    processes it starts (the environment) at the run's directory."""
    directory = os.environ.get(RUN_ENV)
    made = None
    if directory is None:
        if (os.environ.get("TANGENTIA_TEST_BYTECODE", "1") == "0"
                or not os.environ.get("PYTHONDONTWRITEBYTECODE")
                or os.environ.get("PYTHONPYCACHEPREFIX") or not first_process):
            return None
        directory = made = tempfile.mkdtemp(prefix="tangentia-test-bytecode-")
        os.environ[RUN_ENV] = directory
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = directory
    sys.pycache_prefix = directory
    sys.dont_write_bytecode = False
    return made


def finish(made: str | None) -> None:
    """As the run's first process ends: its directory removed."""
    if made is not None:
        shutil.rmtree(made, ignore_errors=True)
