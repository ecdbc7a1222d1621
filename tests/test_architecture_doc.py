"""``docs/architecture.md`` names real things (issue 25: "true line by line").

Every file it names in backquotes exists, and every dotted name it gives for a
module's function, table or class attribute (``ad.primitive_jvps``,
``core.eval_primitive``, ``LinearBuilder.recorded``, ``rules.rule_of``, ...) is an
attribute of that module today: a rename that leaves the page behind fails here."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import tangentia

PKG = Path(tangentia.__file__).parent
DOC = PKG.parent / "docs" / "architecture.md"

# The module each prefix the page uses stands for.
MODULES = {
    "core": "tangentia.core", "ad": "tangentia.interpreters.ad",
    "batching": "tangentia.interpreters.batching",
    "partial_eval": "tangentia.interpreters.partial_eval",
    "numpy_backend": "tangentia.compiler.numpy_backend",
    "compiler/numpy_backend": "tangentia.compiler.numpy_backend",
    "compiler/backend": "tangentia.compiler.backend",
    "numba_backend": "tangentia.compiler.numba_backend",
    "numba_backend/kernels": "tangentia.compiler.numba_backend.kernels",
    "rules": "tangentia.compiler.numba_backend.rules",
    "irblock": "tangentia.compiler.numba_backend.irblock",
    "special": "tangentia.compiler.numba_backend.special",
    "windows": "tangentia.compiler.numba_backend.windows",
    "gemm": "tangentia.compiler.numba_backend.gemm",
    "codegen": "tangentia.compiler.numba_backend.codegen",
    "plan": "tangentia.compiler.numba_backend.plan",
    "_array": "tangentia._array", "_traceback_util": "tangentia._traceback_util",
    "api/differentiation": "tangentia.api.differentiation",
    "api/staging": "tangentia.api.staging",
    "primitives/elementwise": "tangentia.primitives.elementwise",
}
# Classes the page names without their module.
CLASSES = {
    "LinearBuilder": "tangentia.interpreters.partial_eval",
    "JaxprTrace": "tangentia.interpreters.partial_eval",
    "JVPTrace": "tangentia.interpreters.ad", "Backend": "tangentia.compiler.backend",
}
PATH = re.compile(r"^[\w/.]+\.py$|^[\w]+/$")


def _quoted() -> list[str]:
    return re.findall(r"`([^`\n]+)`", DOC.read_text())


def _dotted() -> list[tuple[str, str]]:
    """(prefix, attribute path) of each quoted ``prefix.name(...)`` the page gives."""
    out = []
    for q in _quoted():
        m = re.match(r"^([\w/]+)\.([\w.]+?)(\[.*\])?(\(.*\))?$", q)
        if m and m.group(2) != "py" and (m.group(1) in MODULES or m.group(1) in CLASSES):
            out.append((m.group(1), m.group(2)))
    return out


def test_the_page_is_read():
    assert len(_dotted()) > 40 and len([q for q in _quoted() if PATH.match(q)]) > 20


def _exists(name: str) -> bool:
    for base in (PKG, PKG.parent, PKG / "compiler", PKG / "custom_derivatives"):
        if (base / name).exists():
            return True
    return False


def test_every_file_named_exists():
    missing = [q for q in sorted({q for q in _quoted() if PATH.match(q)})
               if "<" not in q and not q.startswith(("primitives/*", "."))
               and not _exists(q.replace("*", ""))]
    assert missing == [], f"docs/architecture.md names files that do not exist: {missing}"


def _missing(prefix: str, attr: str) -> str | None:
    module = importlib.import_module(MODULES.get(prefix) or CLASSES[prefix])
    obj = module if prefix in MODULES else getattr(module, prefix)
    for part in attr.split("."):
        if not hasattr(obj, part):
            return f"`{prefix}.{attr}`: no {part!r}"
        obj = getattr(obj, part)
    return None


def test_every_name_given_exists():
    missing = [m for prefix, attr in sorted(set(_dotted()))
               if (m := _missing(prefix, attr)) is not None]
    assert missing == [], "docs/architecture.md names what does not exist: " + "; ".join(missing)


def test_a_stale_name_is_found():
    assert _missing("ad", "primitive_jvps") is None
    assert _missing("ad", "LinearRecords") == "`ad.LinearRecords`: no 'LinearRecords'"
    assert _missing("LinearBuilder", "records") == "`LinearBuilder.records`: no 'records'"
    assert not _exists("compiler/numba_kernels.py")
