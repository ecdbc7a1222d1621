"""``tg.print_environment_info()``: the versions and settings for a bug report
(as ``jax.print_environment_info``), with the BLAS kernels in use."""
from __future__ import annotations

import ctypes
import os
import platform
import sys

import numpy as np

from .compiler import backend as _backend


def _version(dist):
    import importlib.metadata  # (here: ~20 ms of CPU at import, for a bug report's versions)
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _blas_info():
    """The kernels each loaded OpenBLAS chose (found in this process's memory
    map, Linux only), and ``OPENBLAS_CORETYPE`` when the environment forces
    one: it decides the speed of every large matrix product."""
    cores = []
    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps
                            if "openblas" in line.lower() and ".so" in line})
    except OSError:
        paths = []
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for sym in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename",
                    "openblas_get_corename64_", "openblas_get_corename"):
            get = getattr(lib, sym, None)
            if get is not None:
                get.restype = ctypes.c_char_p
                cores.append(f"{get().decode()} ({os.path.basename(path)})")
                break
    text = "OpenBLAS kernels " + ", ".join(cores) if cores else "unknown"
    forced = os.environ.get("OPENBLAS_CORETYPE")
    if forced:
        text += f"; OPENBLAS_CORETYPE={forced} is set in the environment"
    return text


def print_environment_info(return_string=False):
    """Print the versions and settings to include in a bug report, as
    ``jax.print_environment_info``: tangentia, numpy, scipy, numba, Python,
    the default jit backend (and the available ones), the BLAS kernels and
    the platform.
    With ``return_string=True`` the text is returned instead of printed."""
    lines = [f"{name + ':':13s}{value}" for name, value in (
        ("tangentia", _version("tangentia")),
        ("numpy", np.__version__),
        ("scipy", _version("scipy")),
        ("numba", _version("numba")),
        ("python", sys.version.replace("\n", " ")),
        ("jit backend", f"{_backend.default_backend_name()} (available: "
                        f"{', '.join(_backend.available_backends())})"),
        ("blas", _blas_info()),
        ("platform", platform.platform()),
    )]
    text = "\n".join(lines)
    if return_string:
        return text
    print(text)
    return None
