"""``jax._src.traceback_util``, which equinox and others decorate their API with:
``api_boundary`` (JAX's filters the traceback of exceptions passing it; here the
function is returned unchanged, tangentia's own boundaries filter the frames of its
transformations), ``register_exclusion`` (a library's files, hidden like
tangentia's own) and ``include_frame`` (whether a frame is the user's: shown)."""
from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, TypeVar

from .._traceback_util import _is_internal

_F = TypeVar("_F", bound=Callable[..., Any])

_exclusions: list[str] = []
_exclude_paths = _exclusions   # (JAX's name, which flax reads and edits)


def api_boundary(fun: _F | None = None, **_: Any) -> Any:
    if fun is None:
        return api_boundary
    return fun


def register_exclusion(path: str) -> None:
    _exclusions.append(path)


def include_frame(frame: types.FrameType) -> bool:
    """Whether ``frame`` belongs to neither tangentia nor a file registered with
    ``register_exclusion``."""
    name = frame.f_code.co_filename
    return not _is_internal(frame) and not any(name.startswith(p) for p in _exclusions)
