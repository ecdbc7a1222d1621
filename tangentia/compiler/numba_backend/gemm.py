"""Matrix products for the numba backend: a packed, cache-blocked GEMM whose
micro-kernel is LLVM IR with explicit AVX-512 vectors.

Why: numba's ``np.dot`` calls SciPy's OpenBLAS, whose kernels are chosen when
it loads -- by the CPU, or by ``OPENBLAS_CORETYPE`` when that is set (some
container images set ``Haswell``, and tangentia does not override a user's
variable).  With AVX2 kernels on an AVX-512 CPU, the matrix products of an MLP
step run at ~0.6x what the CPU can do.  This kernel runs at AVX-512 speed
whatever OpenBLAS chose (measured on AMD Zen 5, one thread, on a loaded
machine: 90-108 GFLOP/s, 1.5-1.85x numba's ``np.dot`` under
``OPENBLAS_CORETYPE=Haswell`` for the MLP step's float64 products; float32
1.1-1.45x).

``_gemm(a, ta, b, tb, c)`` writes ``op(a) @ op(b)`` into the C-contiguous
``c``, where ``op(x)`` is ``x.T`` if ``tx`` else ``x`` (``a`` and ``b`` are
C-contiguous 2-D arrays of ``c``'s dtype, float32 or float64: an operand
stored transposed is passed as it is stored, with its flag, and read in
place).  The structure is BLIS's (Goto's): for each block of
``NC`` columns of ``op(b)`` and ``KC`` of the contraction, the block of
``op(b)`` is packed into panels of ``NR`` columns, each panel ``KC`` rows of
``NR`` contiguous values; for each block of ``MC`` rows of ``op(a)``, that
block is packed into panels of ``MR`` rows (``KC`` columns of ``MR`` values);
then the micro-kernel computes each ``MR x NR`` tile of ``c`` from one panel
of each as ``KC`` rank-1 updates, holding the tile in ``MR * NV`` vector
registers (``NR = NV`` vectors of 8 doubles or 16 floats: 24 accumulators of
the 32 ``zmm`` registers, so 8 x 24 doubles or 8 x 48 floats).  Packing pads
panels with zeros (partial tiles are computed whole into a scratch tile and
their valid part copied), and pads the depth to a multiple of the k-loop's
unrolling ``KU`` with zeros; it reads the source in contiguous runs, and
transposes vector x vector blocks in registers where a panel's lanes are
strided in the source (``A`` stored by rows, ``B`` stored transposed).  Summation: each element is a chain of fused
multiply-adds over one ``KC`` block, in order of ``k``, blocks added in order:
results differ from BLAS only by the order of summation (and a sum of
zero products is ``+0.0``).  NaN and infinities propagate as in any sum of
products.

``_gemm_into(a, ta, b, tb, c, d, s, mode)`` is the same product followed by an
epilogue: ``c = d + s * product`` or ``d - s * product`` (``EPILOGUE_ADD``,
``EPILOGUE_SUB``), each operation rounded as the separate equations would round
it, applied to each ``MC x NC`` block of ``c`` once its last depth block is
summed, while the block is still in the cache.  ``plan.fuse_epilogues`` gives it
the updates that read a product and nothing else (an SGD step's ``W - lr * (x.T
@ g)``): the product is then never written to memory and read back as a separate
pass (the MLP step's two large weight updates: 10.5-10.7 -> 10.3-10.5 ms, own
kernel, pinned core at load 13).

When it is used (``use_gemm``): float32/float64 products above a size
(``eligible``) on a CPU with AVX-512F (as numba compiles for it:
``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES`` if set, else the host), where it
was measured faster than BLAS on this machine (``calibration``).  The CPU flag
does not say which is faster: on AMD Zen 4 (AVX-512 executed on 256-bit units)
it ties with OpenBLAS, whether OpenBLAS runs its SkylakeX or its Haswell
kernels (0.90-0.97x BLAS's time in float64, 0.96-1.01x in float32), and on
another AMD EPYC, OpenBLAS's AVX-512 kernel beat it.  So the first time a
program could use it, for each dtype, ``calibration`` times it against SciPy's
OpenBLAS (what numba's ``np.dot`` calls) and NumPy's ``matmul`` (what a
program run as NumPy calls calls) on three of the MLP step's products
(``CALIBRATION_SHAPES``: one per operand layout), interleaved, keeping the
least time of each (3-25 rounds within ``CALIBRATION_BUDGET``, 0.25 s of CPU
time: 0.6-0.8 s of wall time per dtype on a loaded 2-core machine, plus
0.45 s to import scipy.linalg.blas once), and writes the result to ``$TANGENTIA_CACHE_DIR`` (default
``~/.cache/tangentia``, beside the numba cache) in a file named by the hash of
what decides it: the CPU (model, numba's target name and features, the CPUs
this process may use), NumPy's and SciPy's BLAS (versions and configuration,
and the ``OPENBLAS_*``/``OMP_NUM_THREADS`` variables that choose their
kernels and threads), the library's version and this file's text; other
processes read it (a corrupt file, or one for another key, is measured again
and rewritten).  The kernel is used if it took at most ``OWN_GAIN`` (0.9) of
BLAS's time (a tie keeps BLAS, whose sums are NumPy's), or ``FUSED_GAIN``
(1.05) for a product fused with its update (``_gemm_into``, which BLAS cannot
do); a loop-free program dominated by eligible products is compiled rather than
run as NumPy calls (``compile_products``, read by ``rules.gemm_bound``) if the
kernel a compiled program uses took at most ``COMPILE_GAIN`` (1.05) of NumPy's
time -- and with the own kernel if only it did (``decide``).
``TANGENTIA_NUMBA_GEMM=blas`` asks for BLAS and NumPy calls without measuring,
``own`` for this kernel wherever it can run (for tests), ``auto`` (the
default) for the measured choice.  The choice is made when a program is
generated, so it is part of the generated source and of the on-disk cache key.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core.extending import intrinsic

from ..backend import cache_root
from .alloc import _empty
from .objcache import BLAS_ENV, _cpus

__all__ = ["use_gemm", "eligible", "compile_products", "calibration", "gemm_mode",
           "MIN_FLOPS", "MIN_DIM"]

MR = 8          # rows of a micro-tile
NV = 3          # vectors per micro-tile row (NR = NV * lanes: 24 doubles, 48 floats)
KU = 4          # the k-loop's unrolling; packed depths are multiples of it
KC = 128        # depth of a packed block (a panel of op(b), KC x NR: 24 KiB, stays in L1)
MC = 128        # rows of op(a) per packed block (MC x KC: 128 KiB for doubles, in L2)
NC = 512        # columns of op(b) per packed block
VECTOR_BYTES = 64
# Products with fewer multiply-adds (m*n*k), m or k shorter than MIN_DIM, or
# fewer than two tiles' width of columns (n < 2 NR: 48 doubles, 96 floats) call
# BLAS: there packing and partial tiles cost more than the faster kernel gains
# (against OPENBLAS_CORETYPE=Haswell: float64 32^3 0.9x, 128x512 by 512x10
# 0.9x, 64^3 1.45x, 100x37 by 37x61 1.14x; float32 64^3 0.76x, 96^3 1.23x).
MIN_FLOPS = 1 << 17
MIN_DIM = 16

_ENV = "TANGENTIA_NUMBA_GEMM"
_MODES = ("auto", "blas", "own")


def gemm_mode():
    """``"auto"``, ``"blas"`` or ``"own"``, from the environment variable ``TANGENTIA_NUMBA_GEMM``."""
    mode = os.environ.get(_ENV, "auto").strip().lower() or "auto"
    if mode not in _MODES:
        raise ValueError(f"{_ENV} must be 'auto', 'blas' or 'own', got {os.environ[_ENV]!r}")
    return mode


_AVX512 = None


def _has_avx512():
    """Whether numba compiles for a CPU with AVX-512F (its configured target, else the host)."""
    global _AVX512
    if _AVX512 is None:
        from numba.core import config
        import llvmlite.binding as llb
        if config.CPU_FEATURES is not None:
            _AVX512 = "+avx512f" in config.CPU_FEATURES.split(",")
        elif config.CPU_NAME is not None and config.CPU_NAME != "host":
            _AVX512 = False       # a named generic target: keep BLAS
        else:
            _AVX512 = bool(llb.get_host_cpu_features().get("avx512f", False))
    return _AVX512


def eligible(dtype, m, n, k):
    """Whether ``_gemm`` can compute an (m, k) by (k, n) product of ``dtype``
    (float32/float64, above the sizes where it pays, AVX-512F), whichever is faster."""
    dtype = np.dtype(dtype)
    return (dtype.type in (np.float32, np.float64) and m * n * k >= MIN_FLOPS
            and min(m, k) >= MIN_DIM and n >= 2 * NV * VECTOR_BYTES // dtype.itemsize
            and _has_avx512())


def use_gemm(dtype, m, n, k, fused=False):
    """Whether an (m, k) by (k, n) product of ``dtype`` runs ``_gemm`` (else BLAS):
    ``eligible``, and forced (``TANGENTIA_NUMBA_GEMM=own``) or measured faster
    than BLAS here (``calibration``, run the first time it is asked); a product
    ``fused`` with its update (``_gemm_into``, which BLAS cannot do) if the kernel
    took at most ``FUSED_GAIN`` of BLAS's time."""
    if not eligible(dtype, m, n, k):
        return False
    mode = gemm_mode()
    if mode != "auto":
        return mode == "own"
    c = calibration(dtype)
    return c["own"] or (fused and c["own_s"] <= FUSED_GAIN * c["blas_s"])


def compile_products(dtype):
    """Whether a compiled program computes the eligible products of ``dtype`` at
    least as fast as NumPy's ``matmul`` (``rules.gemm_bound``: then a program
    dominated by them is compiled rather than run as NumPy calls).  ``own``: yes
    (its kernel is used), ``blas``: no (as before the kernel existed), ``auto``:
    measured (``calibration``)."""
    mode = gemm_mode()
    return mode == "own" or (mode == "auto" and calibration(dtype)["compile"])


# --- calibration: which kernel is faster, measured once per machine -----------------

# the products timed: three of an MLP step's (784-512-512, batch 128), one per operand
# layout (forward x @ w, backward g @ w.T and x.T @ g), as (m, k, n, op(a) stored
# transposed, op(b) stored transposed)
CALIBRATION_SHAPES = ((128, 784, 512, False, False), (128, 512, 512, False, True),
                      (512, 128, 512, True, False))
OWN_GAIN = 0.9        # _gemm replaces BLAS in compiled code if it takes at most this much of BLAS's time
# ... and a program dominated by products is compiled if that kernel takes at most this
# much of NumPy's matmul's time: with equal kernels the compiled MLP step takes 0.88-0.99x
# the time of its NumPy calls (AMD Zen 4, quiet to loaded), its elementwise work being fused
COMPILE_GAIN = 1.05
# ... and replaces it for a product fused with its update (``_gemm_into``) if it takes at most
# this much of BLAS's time: the fused update saves the separate pass over the product (the
# MLP step's weight updates: ~0.2 ms of a 1.4-2.2 ms product; at 1.05x the product would
# lose 0.07-0.11 ms of that)
FUSED_GAIN = 1.05
CALIBRATION_ROUNDS = (3, 25)  # interleaved runs of every product: at least, at most
CALIBRATION_BUDGET = 0.25     # CPU seconds (per dtype) after which no round is started
_FORMAT = 1
_CHOICES = {}                 # cache file path -> {dtype name: choice}
_CALIBRATION_LOCK = threading.Lock()
_STATIC_KEY = []


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine()


def _blas_identity(module):
    """(version, BLAS name, BLAS version and configuration) of numpy or scipy."""
    try:
        blas = module.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return [module.__version__, blas.get("name"), blas.get("version"),
                blas.get("openblas configuration")]
    except Exception:  # noqa: BLE001 - an older build without the dict: its version alone
        return [module.__version__]


def calibration_key():
    """What decides the calibration (a dict of strings; the cache file is named by its hash)."""
    if not _STATIC_KEY:
        import scipy
        import llvmlite.binding as llb
        from numba.core import config
        here = os.path.abspath(__file__)
        try:
            with open(here, "rb") as f:
                source = hashlib.sha256(f.read()).hexdigest()[:16]
        except OSError:
            source = "?"
        _STATIC_KEY.append({
            "format": _FORMAT, "cpu": _cpu_model(),
            "target": config.CPU_NAME or llb.get_host_cpu_name(),
            "features": config.CPU_FEATURES or llb.get_host_cpu_features().flatten(),
            "numpy": _blas_identity(np), "scipy": _blas_identity(scipy),
            # the library's version, looked up (this layer sits below the package)
            "tangentia": getattr(sys.modules.get("tangentia"), "__version__", "?"),
            "kernel": source})
    key = dict(_STATIC_KEY[0])
    key["env"] = {v: os.environ.get(v) for v in BLAS_ENV}
    key["cpus"] = _cpus()
    return key


def calibration_path(key=None):
    """The cache file of the calibration: ``$TANGENTIA_CACHE_DIR`` (default
    ``~/.cache/tangentia``), beside the numba cache, named by the key's hash."""
    key = calibration_key() if key is None else key
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]
    return os.path.join(cache_root(), f"gemm-calibration-{digest}.json")


def _valid(entry):
    return (isinstance(entry, dict) and isinstance(entry.get("own"), bool)
            and isinstance(entry.get("compile"), bool)
            and all(isinstance(entry.get(t), (int, float)) and entry[t] > 0
                    for t in ("own_s", "blas_s", "numpy_s")))


def _read(path, key):
    """The file's {dtype name: choice} if it is a calibration for ``key``, else {}
    (a missing, unreadable or corrupt file is ignored, and rewritten)."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("key") != key:
        return {}
    return {name: e for name, e in data.items() if name in ("float32", "float64") and _valid(e)}


def _write(path, key, choices):
    """Write ``choices`` atomically (a temporary file, then ``os.replace``): a reader
    sees the old file or the new one, never part of one.  If the cache directory
    cannot be written, the choice stays in this process."""
    data = dict(choices, key=key)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            with open(tmp, "w") as f:
                json.dump(data, f, indent=1, sort_keys=True)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    except OSError:
        pass


def calibration(dtype):
    """The measured choice for products of ``dtype`` (float32 or float64) on this machine:
    ``{"own": use _gemm rather than BLAS in compiled code, "compile": compile programs
    dominated by such products rather than run them as NumPy calls, "own_s", "blas_s",
    "numpy_s": the summed least times of the calibration products (seconds), "rounds",
    "seconds": what measuring cost}``.  Measured once per machine, the first time it is
    asked, and cached on disk (see the module docstring)."""
    name = np.dtype(dtype).name
    if name not in ("float32", "float64"):
        raise TypeError(f"gemm.calibration: dtype must be float32 or float64, got {name}")
    key = calibration_key()
    path = calibration_path(key)
    hit = _CHOICES.get(path, {}).get(name)
    if hit is not None:
        return hit
    with _CALIBRATION_LOCK:
        choices = _CHOICES.setdefault(path, {})
        if name not in choices:
            on_disk = _read(path, key)
            choices.update(on_disk)
            if name not in on_disk:
                choices[name] = _measure(np.dtype(dtype))
                _write(path, key, dict(_read(path, key), **choices))
        return choices[name]


def decide(own_s, blas_s, numpy_s):
    """``(own, compile)`` from the calibration's times of ``_gemm``, SciPy's BLAS and
    NumPy's matmul: the kernel replaces BLAS in compiled code if it took at most
    ``OWN_GAIN`` of BLAS's time, and a program dominated by products is compiled if
    that kernel took at most ``COMPILE_GAIN`` of NumPy's time -- or, where BLAS did
    not but the kernel did, with the kernel: a 0.92x tie between them (not a gain)
    must not send the program back to NumPy calls when BLAS alone is 1.053x NumPy's
    (measured, ``OPENBLAS_CORETYPE=Haswell`` on AMD Zen 4 at load 15-22: the MLP step
    then ran as NumPy calls at 14.7-15.2 ms, compiled 10.5-10.6 ms)."""
    own = own_s <= OWN_GAIN * blas_s
    compile_ = (own_s if own else blas_s) <= COMPILE_GAIN * numpy_s
    if not compile_ and own_s <= COMPILE_GAIN * numpy_s:
        own = compile_ = True
    return bool(own), bool(compile_)


def _measure(dtype):
    """Time ``_gemm``, SciPy's OpenBLAS (numba's ``np.dot`` calls it through
    ``scipy.linalg.cython_blas``; here through ``scipy.linalg.blas``, with the
    same transpose flags on the same memory) and NumPy's ``matmul`` on
    ``CALIBRATION_SHAPES``, interleaved; the least time of each product is kept."""
    from scipy.linalg import blas
    xgemm = blas.dgemm if dtype == np.float64 else blas.sgemm
    rng = np.random.default_rng(0)
    cases = []
    for m, k, n, ta, tb in CALIBRATION_SHAPES:
        a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
        b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
        c = np.empty((m, n), dtype)
        A, B = (a.T if ta else a), (b.T if tb else b)
        cases.append((
            lambda a=a, ta=ta, b=b, tb=tb, c=c: _gemm(a, ta, b, tb, c),
            # column-major BLAS computes c.T = op(b).T @ op(a).T, as numba's np.dot does
            lambda a=a, ta=ta, b=b, tb=tb: xgemm(1.0, b.T, a.T, trans_a=int(tb), trans_b=int(ta)),
            lambda A=A, B=B, c=c: np.matmul(A, B, out=c)))
    for case in cases:            # compiles (or loads) _gemm, faults the pages in
        for run in case:
            run()
    clock = time.perf_counter
    start, cpu = clock(), time.process_time()
    best = np.full((len(cases), 3), np.inf)
    rounds = 0
    lo, hi = CALIBRATION_ROUNDS
    # The least time of each product and kernel: other processes' time slices and
    # cache traffic only ever add to a run's time.  The budget is of the process's
    # CPU time (BLAS threads included; a loaded machine stretches the wall time), capped
    # in wall time.
    while rounds < lo or (rounds < hi and time.process_time() - cpu < CALIBRATION_BUDGET
                          and clock() - start < 3 * CALIBRATION_BUDGET):
        order = (0, 1, 2) if rounds % 2 == 0 else (2, 1, 0)
        for i, case in enumerate(cases):
            for j in order:
                t = clock()
                case[j]()
                best[i, j] = min(best[i, j], clock() - t)
        rounds += 1
    own_s, blas_s, numpy_s = (float(v) for v in best.sum(axis=0))
    own, compile_ = decide(own_s, blas_s, numpy_s)
    return {"own": own, "compile": compile_,
            "own_s": own_s, "blas_s": blas_s, "numpy_s": numpy_s, "rounds": rounds,
            "seconds": round(clock() - start, 3), "cpu_seconds": round(time.process_time() - cpu, 3)}


def _vector_fma(module, vt, lanes, bits):
    name = f"llvm.fma.v{lanes}f{bits}"
    fn = module.globals.get(name)
    return fn if fn is not None else ir.Function(module, ir.FunctionType(vt, [vt, vt, vt]), name)


@intrinsic
def _micro(typingctx, kc, a, aoff, b, boff, c, coff, ldc, acc):
    """The micro-kernel: ``c[coff + i*ldc + j] (+)= sum_p a[aoff + p*MR + i] * b[boff + p*NR + j]``
    for the tile ``i < MR``, ``j < NR``, ``p < kc`` (a multiple of ``KU``), added to
    ``c`` if ``acc`` else stored."""
    if not (isinstance(a, types.Array) and a.dtype in (types.float32, types.float64)
            and b == a and isinstance(c, types.Array) and c.dtype == a.dtype):
        return None
    sig = types.void(kc, a, aoff, b, boff, c, coff, ldc, acc)

    def codegen(context, builder, sig, args):
        kc, a, aoff, b, boff, c, coff, ldc, acc = args
        i64 = ir.IntType(64)
        kc, aoff, boff, coff, ldc = (context.cast(builder, v, t, types.int64) for v, t in
                                     zip((kc, aoff, boff, coff, ldc), (sig.args[0], sig.args[2],
                                         sig.args[4], sig.args[6], sig.args[7])))
        ap = builder.gep(context.make_array(sig.args[1])(context, builder, a).data, [aoff])
        bp = builder.gep(context.make_array(sig.args[3])(context, builder, b).data, [boff])
        cp = builder.gep(context.make_array(sig.args[5])(context, builder, c).data, [coff])
        bits = 64 if sig.args[1].dtype == types.float64 else 32
        lanes = VECTOR_BYTES * 8 // bits
        nr = NV * lanes
        vt = ir.VectorType(context.get_value_type(sig.args[1].dtype), lanes)
        fma = _vector_fma(builder.module, vt, lanes, bits)
        zero = ir.Constant(vt, [0.0] * lanes)
        undef = ir.Constant(vt, ir.Undefined)
        splat = ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes)

        def const(v):
            return ir.Constant(i64, v)

        def vptr(base, offset):
            return builder.bitcast(builder.gep(base, [offset]), vt.as_pointer())

        def rank1(accs, p):
            """One rank-1 update of the tile: depth index ``p``."""
            bo = builder.mul(p, const(nr))
            bv = [builder.load(vptr(bp, builder.add(bo, const(v * lanes))), align=bits // 8)
                  for v in range(NV)]
            ao = builder.mul(p, const(MR))
            out = list(accs)
            for i in range(MR):
                s = builder.load(builder.gep(ap, [builder.add(ao, const(i))]))
                sv = builder.shuffle_vector(builder.insert_element(undef, s, const(0)), undef, splat)
                for v in range(NV):
                    out[i * NV + v] = builder.call(fma, [sv, bv[v], out[i * NV + v]])
            return out

        entry = builder.basic_block
        loop = builder.append_basic_block("gemm.k")
        done = builder.append_basic_block("gemm.tile")
        steps = builder.sdiv(kc, const(KU))
        builder.cbranch(builder.icmp_signed(">", steps, const(0)), loop, done)
        builder.position_at_end(loop)
        step = builder.phi(i64)
        step.add_incoming(const(0), entry)
        phis = [builder.phi(vt) for _ in range(MR * NV)]
        for p in phis:
            p.add_incoming(zero, entry)
        accs = phis
        p0 = builder.mul(step, const(KU))
        for u in range(KU):
            accs = rank1(accs, builder.add(p0, const(u)))
        nxt = builder.add(step, const(1))
        step.add_incoming(nxt, loop)
        for p, v in zip(phis, accs):
            p.add_incoming(v, loop)
        builder.cbranch(builder.icmp_signed("<", nxt, steps), loop, done)
        builder.position_at_end(done)
        fins = []
        for v in accs:
            fins.append(builder.phi(vt))
            fins[-1].add_incoming(zero, entry)
            fins[-1].add_incoming(v, loop)
        add = builder.icmp_signed("!=", acc, ir.Constant(acc.type, 0))
        for i in range(MR):
            row = builder.mul(const(i), ldc)
            for v in range(NV):
                fin = fins[i * NV + v]
                ptr = vptr(cp, builder.add(row, const(v * lanes)))
                old = builder.load(ptr, align=bits // 8)
                builder.store(builder.select(add, builder.fadd(old, fin), fin), ptr,
                              align=bits // 8)
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def _copy_vector(typingctx, src, soff, dst, doff):
    """``dst[doff:doff + L] = src[soff:soff + L]`` for one vector of ``L = 64 / itemsize``
    elements (one unaligned vector load and store: LLVM does not vectorize a copy
    loop this short, and cannot prove the arrays distinct)."""
    if not (isinstance(src, types.Array) and src.dtype in (types.float32, types.float64)
            and isinstance(dst, types.Array) and dst.dtype == src.dtype):
        return None
    sig = types.void(src, soff, dst, doff)

    def codegen(context, builder, sig, args):
        src, soff, dst, doff = args
        elt = context.get_value_type(sig.args[0].dtype)
        vt = ir.VectorType(elt, VECTOR_BYTES // context.get_abi_sizeof(elt))
        sp = builder.gep(context.make_array(sig.args[0])(context, builder, src).data, [soff])
        dp = builder.gep(context.make_array(sig.args[2])(context, builder, dst).data, [doff])
        v = builder.load(builder.bitcast(sp, vt.as_pointer()), align=1)
        builder.store(v, builder.bitcast(dp, vt.as_pointer()), align=1)
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def _transpose_vectors(typingctx, src, soff, sstride, dst, doff, dstride):
    """``dst[doff + j*dstride + i] = src[soff + i*sstride + j]`` for ``i, j < L``
    (``L`` elements per vector): ``L`` vector loads, a transpose in registers
    (``log2 L`` rounds of interleaving row ``i`` with row ``i + L/2``), ``L``
    vector stores -- for packing operands whose panel lanes are strided."""
    if not (isinstance(src, types.Array) and src.dtype in (types.float32, types.float64)
            and isinstance(dst, types.Array) and dst.dtype == src.dtype):
        return None
    sig = types.void(src, soff, sstride, dst, doff, dstride)

    def codegen(context, builder, sig, args):
        src, soff, sstride, dst, doff, dstride = args
        elt = context.get_value_type(sig.args[0].dtype)
        lanes = VECTOR_BYTES // context.get_abi_sizeof(elt)
        vt = ir.VectorType(elt, lanes)
        i64 = ir.IntType(64)
        soff, sstride, doff, dstride = (context.cast(builder, v, t, types.int64) for v, t in zip(
            (soff, sstride, doff, dstride), (sig.args[1], sig.args[2], sig.args[4], sig.args[5])))
        sp = context.make_array(sig.args[0])(context, builder, src).data
        dp = context.make_array(sig.args[3])(context, builder, dst).data

        def vptr(base, offset, stride, r):
            at = builder.add(offset, builder.mul(stride, ir.Constant(i64, r)))
            return builder.bitcast(builder.gep(base, [at]), vt.as_pointer())
        rows = [builder.load(vptr(sp, soff, sstride, r), align=1) for r in range(lanes)]
        h = lanes // 2
        lo = ir.Constant(ir.VectorType(ir.IntType(32), lanes),
                         [x for t in range(h) for x in (t, lanes + t)])
        hi = ir.Constant(ir.VectorType(ir.IntType(32), lanes),
                         [x for t in range(h, lanes) for x in (t, lanes + t)])
        for _ in range(lanes.bit_length() - 1):
            rows = [builder.shuffle_vector(rows[i], rows[i + h], mask)
                    for i in range(h) for mask in (lo, hi)]
        for r in range(lanes):
            builder.store(rows[r], vptr(dp, doff, dstride, r), align=1)
        return context.get_dummy_value()
    return sig, codegen


_OPTS = dict(cache=True, nogil=True, error_model="numpy", boundscheck=False)


@njit(**_OPTS)
def _pack(src, base, sp, sl, depth, depth_pad, lanes, width, dst):
    """Pack the block ``src[base + p*sp + l*sl]`` (depth ``p < depth``, lane
    ``l < lanes``) into panels of ``width`` lanes: lane ``l`` at depth ``p`` goes
    to ``dst[(l // width) * depth_pad * width + p * width + l % width]``; the
    padding (lanes up to a multiple of ``width``, depths up to ``depth_pad``) is
    zero.  The source is read in its contiguous runs (a 4 KiB stride between
    short reads defeats the hardware prefetcher: 5x slower on a 3 MB operand)."""
    panels = (lanes + width - 1) // width
    step = depth_pad * width
    vec = VECTOR_BYTES // dst.itemsize
    if sl == 1:
        for p in range(depth):
            s = base + p * sp
            for q in range(panels):
                d, l0 = q * step + p * width, q * width
                w = min(width, lanes - l0)
                j = 0
                while j + vec <= w:
                    _copy_vector(src, s + l0 + j, dst, d + j)
                    j += vec
                for j in range(j, w):
                    dst[d + j] = src[s + l0 + j]
    else:
        # a vector's worth of lanes at a time: reads in vec sequential streams,
        # each depth's values written together
        for q in range(panels):
            w = min(width, lanes - q * width)
            for j0 in range(0, w, vec):
                s, d = base + (q * width + j0) * sl, q * step + j0
                if j0 + vec <= w:
                    p0 = 0
                    if sp == 1:   # vec x vec blocks transposed in registers
                        for p0 in range(0, depth - vec + 1, vec):
                            _transpose_vectors(src, s + p0, sl, dst, d + p0 * width, width)
                        p0 = depth - depth % vec
                    for p in range(p0, depth):
                        for j in range(vec):
                            dst[d + p * width + j] = src[s + j * sl + p * sp]
                else:
                    for j in range(w - j0):
                        for p in range(depth):
                            dst[d + p * width + j] = src[s + j * sl + p * sp]
    last = (panels - 1) * step
    for p in range(depth):
        for j in range(lanes - (panels - 1) * width, width):
            dst[last + p * width + j] = 0
    for q in range(panels):
        for p in range(depth * width, step):
            dst[q * step + p] = 0


# epilogues of ``_gemm_into`` (``mode``): none; ``c = d + s * (a @ b)``; ``c = d - s * (a @ b)``
EPILOGUE_NONE, EPILOGUE_ADD, EPILOGUE_SUB = 0, 1, 2


@njit(**_OPTS)
def _gemm(a, ta, b, tb, c):
    """``c[:] = op(a) @ op(b)``, ``op(x) = x.T if tx else x`` (see the module docstring)."""
    # (the mode typed int64, not a literal: the specialization the programs' fused updates
    # call, ``rules._dot_blas``, compiled once)
    _gemm_into(a, ta, b, tb, c, c, c.dtype.type(0), np.int64(EPILOGUE_NONE))


@njit(**_OPTS)
def _epilogue(c, i0, i1, j0, j1, d, s, mode):
    """``c[i, j] = d[i, j] + s * c[i, j]`` (``EPILOGUE_ADD``) or ``d[i, j] - s * c[i, j]``
    (``EPILOGUE_SUB``) for ``i0 <= i < i1``, ``j0 <= j < j1``: the product rounded,
    scaled and rounded, then added and rounded, as the unfused equations compute it."""
    if mode == EPILOGUE_ADD:
        for i in range(i0, i1):
            for j in range(j0, j1):
                c[i, j] = d[i, j] + s * c[i, j]
    else:
        for i in range(i0, i1):
            for j in range(j0, j1):
                c[i, j] = d[i, j] - s * c[i, j]


@njit(**_OPTS)
def _gemm_into(a, ta, b, tb, c, d, s, mode):
    """``c[:] = op(a) @ op(b)``, then the epilogue ``mode`` (``EPILOGUE_*``) with ``d``
    (C-contiguous, ``c``'s shape and dtype, not ``c``) and the scalar ``s`` (``c``'s dtype)
    applied to each block of ``MC`` rows by ``NC`` columns of ``c`` as soon as its last
    depth block is summed, while the block is still in the cache: the SGD update ``W -
    lr * (x.T @ g)`` is then one pass over memory, not a product written and read back
    (the MLP step's weight gradients, 784x512 and 512x512: ~0.2 ms each)."""
    m, n = c.shape
    k = a.shape[0] if ta else a.shape[1]
    if k == 0:
        c[:] = 0
        if mode != EPILOGUE_NONE:
            _epilogue(c, 0, m, 0, n, d, s, mode)
        return
    nr = NV * (VECTOR_BYTES // c.itemsize)
    # flat views and the strides of op(a) (rows i, depth p) and op(b) (depth p, columns j)
    af, bf = a.reshape(a.size), b.reshape(b.size)
    a_si, a_sp = (1, a.shape[1]) if ta else (a.shape[1], 1)
    b_sp, b_sj = (1, b.shape[1]) if tb else (b.shape[1], 1)
    kmax = min(KC, k)
    kpad = (kmax + KU - 1) // KU * KU
    # (the packing buffers, 128 + 512 KiB for float64, from alloc._empty: the pool's blocks,
    # which a later call takes back, where np.empty's were new pages after glibc trimmed)
    ap = _empty(((min(MC, m) + MR - 1) // MR) * MR * kpad, c.dtype)
    bp = _empty(((min(NC, n) + nr - 1) // nr) * nr * kpad, c.dtype)
    tile = np.empty((MR, nr), c.dtype)
    for jc in range(0, n, NC):
        nc = min(NC, n - jc)
        for pc in range(0, k, KC):
            kc = min(KC, k - pc)
            kcp = (kc + KU - 1) // KU * KU
            _pack(bf, pc * b_sp + jc * b_sj, b_sp, b_sj, kc, kcp, nc, nr, bp)
            acc = pc > 0
            last = pc + KC >= k
            for ic in range(0, m, MC):
                mc = min(MC, m - ic)
                _pack(af, ic * a_si + pc * a_sp, a_sp, a_si, kc, kcp, mc, MR, ap)
                for jr in range(0, nc, nr):
                    for ir_ in range(0, mc, MR):
                        i0, j0 = ic + ir_, jc + jr
                        whole = ir_ + MR <= mc and jr + nr <= nc
                        # (one call site: the kernel is inlined where it is called)
                        if whole:
                            dst, off, ld = c, i0 * n + j0, n
                        else:
                            dst, off, ld = tile, 0, nr
                        _micro(kcp, ap, ir_ * kcp, bp, jr * kcp, dst, off, ld, acc and whole)
                        if not whole:
                            for i in range(min(MR, mc - ir_)):
                                for j in range(min(nr, nc - jr)):
                                    if acc:
                                        c[i0 + i, j0 + j] += tile[i, j]
                                    else:
                                        c[i0 + i, j0 + j] = tile[i, j]
                if last and mode != EPILOGUE_NONE:
                    _epilogue(c, ic, ic + mc, jc, jc + nc, d, s, mode)
