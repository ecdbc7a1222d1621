"""The compile-progress line (``native._Progress``): printed on stderr while a synchronous
compile keeps the user waiting, it states the compile's CPU seconds beside the estimate,
which is of CPU seconds (``NumbaBackend.compile_estimate``), and the wall time apart; it
compared the estimate with wall time, a multiple of the CPU time on a loaded machine.
``TANGENTIA_COMPILE_PROGRESS=0`` silences it, and the background compile thread never
prints it."""
from __future__ import annotations

import re
import threading
import time

import pytest

pytest.importorskip("numba")


def _compile_like(cpu_s: float, wait_s: float) -> None:
    """A compile's shape: ``cpu_s`` seconds of this thread's CPU, then ``wait_s`` of waiting."""
    t = time.thread_time()
    x = 0
    while time.thread_time() - t < cpu_s:
        x += 1
    time.sleep(wait_s)


def test_the_lines_state_cpu_time_beside_the_cpu_estimate(monkeypatch, capsys):
    from tangentia.compiler.numba_backend import native
    monkeypatch.setenv("TANGENTIA_COMPILE_PROGRESS", "1")
    monkeypatch.setattr(native._Progress, "AFTER", 0.05)
    with native._Progress("a program of 7 equations", 1.5):
        _compile_like(0.15, 0.4)
    err = capsys.readouterr().err
    assert "compiling a program of 7 equations with numba (estimated 1.5 s of CPU) ..." in err, err
    assert "TANGENTIA_COMPILE_PROGRESS=0 silences this" in err, err
    m = re.search(r"compiled a program of 7 equations in ([\d.]+) s of CPU, estimated 1\.5 s "
                  r"\(([\d.]+) s of wall time\)", err)
    assert m, err
    cpu, wall = float(m.group(1)), float(m.group(2))
    assert 0.1 <= cpu <= 0.3, err          # the thread's CPU: the waiting is not counted
    assert wall >= 0.5 and wall >= cpu + 0.3, err


def test_silenced_and_not_printed_by_the_background_compile(monkeypatch, capsys):
    from tangentia.compiler.backend import COMPILE_THREAD
    from tangentia.compiler.numba_backend import native
    monkeypatch.setattr(native._Progress, "AFTER", 0.0)
    monkeypatch.setenv("TANGENTIA_COMPILE_PROGRESS", "0")
    with native._Progress("a program", 1.0):
        _compile_like(0.0, 0.1)
    monkeypatch.setenv("TANGENTIA_COMPILE_PROGRESS", "1")

    def background() -> None:
        with native._Progress("a program", 1.0):
            _compile_like(0.0, 0.1)
    t = threading.Thread(target=background, name=COMPILE_THREAD)
    t.start()
    t.join()
    assert capsys.readouterr().err == ""
    with native._Progress("a program", None):     # (no estimate: none stated)
        _compile_like(0.0, 0.1)
    err = capsys.readouterr().err
    assert re.search(r"compiled a program in [\d.]+ s of CPU \([\d.]+ s of wall time\)", err), err
