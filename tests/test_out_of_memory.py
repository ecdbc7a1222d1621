"""An allocation that cannot succeed is an exception, never a dead process.

Before 2026-12-07, an array of 64 KiB or more that a numba-compiled program could not
allocate (its pool's ``malloc`` returned null) was used as if it had been allocated: the
process died with a segmentation fault (``jit(..., backend="numba")`` of a loop carrying
a ``(5e6, 5e6)`` array).  Now the generated code raises ``MemoryError`` (JAX's wording
first: "Out of memory allocating"), as the NumPy backend raises NumPy's, and the next call
works; and the pool gives its held blocks back to the system when ``malloc`` fails, then
asks again (under an address-space limit, a request the held blocks kept from fitting is
served).  Each case runs in a fresh process with a timeout: a crash or a hang fails.
And an integer ``arange``/``iota`` too long for any array is NumPy's "array is too big"
error, not an empty array.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tangentia.numpy as tnp
from tangentia import lax

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=ROOT, TANGENTIA_JIT_TIERED="0", TANGENTIA_COMPILE_PROGRESS="0")
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       timeout=240, cwd=ROOT, env=env)
    assert p.returncode == 0, f"exit status {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}"
    return p.stdout


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_a_jitted_allocation_too_large_for_the_machine_is_a_memory_error(backend: str) -> None:
    # (5e6 x 5e6 float64: 200 TB, more than x86-64's 128 TiB of user address space, so no
    # setting of the kernel's overcommit lets it succeed)
    out = _run(f"""
        import numpy as np
        import tangentia as tg
        from tangentia import lax

        def f(x):
            outer = x[:, None] * x[None, :]       # (n, n), carried by a compiled loop
            return lax.fori_loop(0, 2, lambda i, c: c * 2 + x[:, None], outer)[0, :3]

        g = tg.jit(f, backend={backend!r})
        for attempt in range(2):                  # (the failed call leaves nothing broken)
            try:
                g(np.ones(5 * 10**6))
            except MemoryError as e:
                print("MemoryError:", e)
            else:
                print("no error")
        print("small", *g(np.ones(300)))
    """)
    lines = out.splitlines()
    assert len(lines) == 3, out
    for line in lines[:2]:
        assert line.startswith("MemoryError:"), out
        if backend == "numba":
            assert "Out of memory allocating" in line, out
    assert lines[2] == "small 7.0 7.0 7.0", out


def test_the_pool_gives_its_blocks_back_when_malloc_fails() -> None:
    # The pool's allocator itself, called as numba's runtime calls it: two 16 MiB blocks are
    # held; under an address-space limit of 8 MiB more than the process has, a 20 MiB
    # request fits only once they are freed.
    out = _run("""
        import ctypes, resource
        from tangentia.compiler.numba_backend import pool

        e = pool._Pool.engine
        malloc = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p)(
            e.get_function_address("tangentia_pool_malloc"))
        free = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(
            e.get_function_address("tangentia_pool_free"))
        MB = 1 << 20
        pool.release()
        blocks = [malloc(16 * MB, None) for _ in range(2)]
        assert all(blocks), blocks
        for b in blocks:
            free(b, None)
        print("held", pool.held_bytes() // MB)
        with open("/proc/self/statm") as fh:
            size = int(fh.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (size + 8 * MB, resource.RLIM_INFINITY))
        p = malloc(20 * MB, None)
        print("served", bool(p), "held", pool.held_bytes())
        free(p, None)
        q = malloc(200 * MB, None)            # (more than the limit leaves: null, no crash)
        print("refused", q is None)
    """)
    assert out.split() == ["held", "32", "served", "True", "held", "0", "refused", "True"], out


@pytest.mark.parametrize("make", [
    lambda: tnp.arange(2**63 - 1), lambda: tnp.arange(-5, 2**63 - 2), lambda: tnp.arange(2**63 - 1, 0, -1),
    lambda: lax.iota(np.int64, 2**63 - 1), lambda: lax.iota(np.int8, 2**63 - 2)])
def test_an_integer_range_too_long_for_any_array_is_an_error_not_an_empty_one(make) -> None:
    # (NumPy computes arange's length in float64: a length near 2**63 rounded up, overflowed,
    # and gave an empty array; before 2026-12-07 these were int64[0] / int8[0])
    with pytest.raises(ValueError, match="array is too big"):
        make()


def test_integer_ranges_are_numpys() -> None:
    for start, stop, step in [(0, 5, 1), (2, 11, 3), (10, 0, -3), (3, 1, 1), (-4, 4, 3), (0, 2**40, 2**38)]:
        want = np.arange(start, stop, step)
        got = tnp.arange(start, stop, step) if step != 1 else tnp.arange(start, stop)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
    np.testing.assert_array_equal(tnp.arange(5), np.arange(5))
    np.testing.assert_array_equal(lax.iota(np.int32, 4), np.arange(4, dtype=np.int32))
    np.testing.assert_array_equal(tnp.arange(0.5, 3), np.arange(0.5, 3))
