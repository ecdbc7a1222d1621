"""Tracebacks that show the user's code.

An error raised inside a transformation (by a custom rule, a loop body, or a
check of ours) unwinds through many frames of the library.  Public entry
points are *API boundaries*: when an exception passes one, the library's
frames are removed from its traceback, except the frame that raised it, so
the user sees their own frames and the one line that failed.

The full traceback stays reachable as ``exc.__tangentia_unfiltered_traceback__``
(``traceback.print_tb`` prints it).  The exception itself is unchanged (no
note is added: tests matching its message keep working).  Filtering is off with the environment
variable ``TANGENTIA_TRACEBACK_FILTERING=off`` or
``tangentia.config.update("tangentia_traceback_filtering", "off")`` (JAX's
``jax_traceback_filtering`` name is accepted too).
"""
from __future__ import annotations

import functools
import os
import types
from typing import Callable, TypeVar

from ._array import FPWarnings, api_label, to_user

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_MODES = ("on", "off")
_state = {"mode": None}


def set_filtering(mode):
    """``"on"`` (the default), ``"off"``, or ``None`` (the environment decides)."""
    if mode is not None:
        mode = {True: "on", False: "off"}.get(mode, mode)
        if mode in ("auto", "remove_frames", "quiet_remove_frames"):  # JAX's names
            mode = "on"
        if mode not in _MODES:
            raise ValueError(f"config.update('tangentia_traceback_filtering', {mode!r}): "
                             f"expected one of {', '.join(map(repr, _MODES))}")
    _state["mode"] = mode


def filtering_on():
    mode = _state["mode"]
    if mode is None:
        mode = os.environ.get("TANGENTIA_TRACEBACK_FILTERING", "on").lower()
    return mode not in ("off", "0", "false", "no")


def _is_internal(frame):
    return frame.f_code.co_filename.startswith(_PACKAGE_DIR)


def _entries(tb):
    out = []
    while tb is not None:
        out.append(tb)
        tb = tb.tb_next
    return out


def _chain(entries, tail=None):
    for e in reversed(entries):
        tail = types.TracebackType(tail, e.tb_frame, e.tb_lasti, e.tb_lineno)
    return tail


def filter_exception(e):
    """Remove library frames from ``e``'s traceback (keeping the raising one)."""
    tb = e.__traceback__
    if tb is None:
        return
    entries = _entries(tb)
    inner = getattr(e, "__tangentia_filtered_head__", None)
    unfiltered = getattr(e, "__tangentia_unfiltered_traceback__", None)
    full = tb
    if inner is not None and unfiltered is not None:
        # An inner boundary filtered already: only the frames above its
        # filtered chain are new; below them the unfiltered chain continues.
        for i, entry in enumerate(entries):
            if entry is inner:
                full = _chain(entries[:i], unfiltered)
                break
    full_entries = _entries(full)
    kept = [x for x in full_entries if not _is_internal(x.tb_frame)]
    last = full_entries[-1]
    if _is_internal(last.tb_frame):
        kept.append(last)  # the check of ours that raised
    e.__tangentia_unfiltered_traceback__ = full
    filtered = _chain(kept)
    e.__tangentia_filtered_head__ = filtered
    e.with_traceback(filtered)


_F = TypeVar("_F", bound=Callable)


def api_boundary(fun: _F) -> _F:
    """Wrap a public entry point so that exceptions passing it are filtered,
    NumPy's warnings inside it point at the user's line, and its concrete
    results are handed to the user as tangentia arrays (``tangentia._array``)."""
    fp_warnings = FPWarnings(api_label(fun))

    @functools.wraps(fun)
    def boundary(*args, **kwargs):
        __tracebackhide__ = True  # noqa: F841 - pytest and IPython hide this frame
        token = fp_warnings.enter()
        try:
            out = fun(*args, **kwargs)
        except Exception as e:
            if filtering_on():
                try:
                    filter_exception(e)
                except Exception:  # noqa: BLE001 - never hide the user's error
                    pass
            raise
        finally:
            fp_warnings.exit(token)
        return to_user(out)
    return boundary  # type: ignore[return-value]  # (functools.wraps keeps fun's signature)
