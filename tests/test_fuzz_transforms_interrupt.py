"""Ctrl-C stops endless loops run eagerly, under transformations and by ``jit``'s NumPy backend
(``tests/test_interrupt.py`` covers the numba backend's compiled loops, in a child process).

A timer thread calls ``_thread.interrupt_main()`` (as a SIGINT would) while the main thread runs
a loop that never ends on its own; the loop must raise ``KeyboardInterrupt`` promptly.
"""
from __future__ import annotations

import _thread
import signal
import threading
import time
from typing import Any, Callable

import numpy as np
import pytest

import tangentia as tg
from tangentia import lax

pytestmark = pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                                reason="interrupt_main interrupts the main thread only")

_NEVER = 2 ** 62   # a trip count no loop reaches


def _while(x: Any) -> Any:
    return lax.while_loop(lambda c: c[0] >= 0, lambda c: (c[0] + 1, c[1] * 0.5 + 1.0), (0, x))[1]


def _fori(x: Any, n: Any) -> Any:
    return lax.fori_loop(0, n, lambda i, c: c * 0.5 + 1.0, x)


def _scan(x: Any) -> Any:
    return lax.scan(lambda c, _: (c * 0.5 + 1.0, None), x, None, length=2 ** 40)[0]


def _vmap_while(x: Any) -> Any:   # the batched predicate: one example never ends
    return tg.vmap(lambda v: lax.while_loop(lambda c: c < 10.0, lambda c: c + v, 0.0))(x)


_CASES: dict[str, Callable[[], Any]] = {
    "eager while": lambda: _while(1.0),
    "jit while": lambda: tg.jit(_while, backend="numpy")(1.0),
    "eager fori, traced trip count": lambda: _fori(1.0, _NEVER),
    "jit fori, traced trip count": lambda: tg.jit(_fori, backend="numpy")(1.0, _NEVER),
    "jit scan": lambda: tg.jit(_scan, backend="numpy")(1.0),
    "vmap while": lambda: _vmap_while(np.array([1.0, 0.0])),
    "jit vmap while": lambda: tg.jit(_vmap_while, backend="numpy")(np.array([1.0, 0.0])),
    "grad scan": lambda: tg.grad(_scan)(1.0),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", sorted(_CASES))
def test_ctrl_c_stops_an_endless_loop(case: str) -> None:
    # Python ignores interrupt_main while SIGINT is ignored (a run started in the background):
    # Python's handler is installed for the test, as at a terminal
    old = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, _thread.interrupt_main)
    try:
        start = time.perf_counter()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            _CASES[case]()
        late = time.perf_counter() - start - 0.3
    finally:
        timer.cancel()
        timer.join()
        signal.signal(signal.SIGINT, old)
    assert late < 2.0, f"{case}: KeyboardInterrupt {late:.2f} s after the interrupt"
    # the library is usable afterwards
    assert float(tg.jit(_fori, backend="numpy")(1.0, 3)) == 1.875
