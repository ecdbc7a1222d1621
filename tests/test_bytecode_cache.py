"""tests/_bytecode.py: where PYTHONDONTWRITEBYTECODE is set, a test run's processes share one
directory of Python bytecode (outside the tree), made by the run's first process and removed as
it ends; otherwise nothing changes."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import _bytecode


@pytest.fixture
def clean(monkeypatch):
    """This process as a run's process before conftest's choice (restored after the test)."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    for name in ("PYTHONPYCACHEPREFIX", _bytecode.RUN_ENV, "TANGENTIA_TEST_BYTECODE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    return monkeypatch


def test_the_first_process_makes_the_directory_its_workers_and_children_share(clean, tmp_path):
    made = _bytecode.choose(first_process=True)
    try:
        assert made is not None and os.path.isdir(made)
        assert os.environ[_bytecode.RUN_ENV] == os.environ["PYTHONPYCACHEPREFIX"] == made
        assert sys.pycache_prefix == made and not sys.dont_write_bytecode
        assert "PYTHONDONTWRITEBYTECODE" not in os.environ
        # a worker started by it: the same directory, and it removes nothing
        clean.setenv("PYTHONDONTWRITEBYTECODE", "1")
        clean.setattr(sys, "pycache_prefix", None)
        assert _bytecode.choose(first_process=False) is None
        assert sys.pycache_prefix == made and "PYTHONDONTWRITEBYTECODE" not in os.environ
        # a process a test starts writes a module's bytecode there, not next to the source
        (tmp_path / "probe_module.py").write_text("X = 1\n")
        code = "import probe_module; print(probe_module.__cached__)"
        out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=dict(os.environ),
                             capture_output=True, text=True, timeout=60)
        cached = out.stdout.strip()
        assert out.returncode == 0 and cached.startswith(made), out.stdout + out.stderr
        assert os.path.isfile(cached) and not (tmp_path / "__pycache__").exists()
    finally:
        _bytecode.finish(made)
    assert not os.path.exists(made)


@pytest.mark.parametrize("setting", ["off", "users_prefix", "writes_anyway"])
def test_nothing_changes_when_off_or_not_needed(clean, setting, tmp_path):
    if setting == "off":
        clean.setenv("TANGENTIA_TEST_BYTECODE", "0")
    elif setting == "users_prefix":
        clean.setenv("PYTHONPYCACHEPREFIX", str(tmp_path))
    else:
        clean.delenv("PYTHONDONTWRITEBYTECODE")
    before = dict(os.environ)
    assert _bytecode.choose(first_process=True) is None
    assert dict(os.environ) == before
    assert sys.pycache_prefix is None and sys.dont_write_bytecode
