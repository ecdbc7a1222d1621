"""The library's public functions are annotated as JAX's are (issue 25, item 6), like the
transformations, ``tnp`` and ``lax`` (``tests/test_typing.py``): ``tangentia.scipy`` (with
``stats``, ``special``, ``linalg``, ``signal``, ...), ``random``, ``nn`` (with
``initializers``), ``ad_checkpoint``, ``sharding``, ``example_libraries`` and
``experimental``.

* Every public module-level function of those modules has a return annotation.
* Every annotation evaluates, in its module's namespace plus the names the modules import
  only for type checkers (``tangentia.typing``, ``typing``, ``collections.abc``).
* A few read as JAX users expect (``random.normal(key: ArrayLike, shape: Shape = (), ...) ->
  Array``).

Their use is type-checked by the CI's mypy run over the tests and the docs' examples."""
from __future__ import annotations

import collections.abc
import importlib
import inspect
import pkgutil
import types
import typing

import tangentia
import tangentia.typing as tg_typing

PACKAGES = ["tangentia.scipy", "tangentia.nn", "tangentia.example_libraries",
            "tangentia.experimental"]
MODULES = ["tangentia.random", "tangentia.ad_checkpoint", "tangentia.sharding"]


def _modules() -> list[types.ModuleType]:
    out = [importlib.import_module(m) for m in MODULES]
    for name in PACKAGES:
        pkg = importlib.import_module(name)
        out.append(pkg)
        for info in pkgutil.walk_packages(pkg.__path__, name + "."):
            out.append(importlib.import_module(info.name))
    return out


def _public_functions() -> list[tuple[str, types.FunctionType]]:
    """Every public function of those modules defined there (by a ``def`` at module level,
    or made by one of the module's factories: ``random.exponential``, ``special.i0``,
    ``initializers.glorot_normal``, ``stax.MaxPool``, whose inner ``def`` is annotated),
    and the public methods of their public classes (``gaussian_kde.logpdf``, ``Mesh``, ...)."""
    out = []
    for mod in _modules():
        for n, f in vars(mod).items():
            if n.startswith("_"):
                continue
            if isinstance(f, types.FunctionType) and inspect.unwrap(f).__module__ == mod.__name__:
                out.append((f"{mod.__name__}.{n}", inspect.unwrap(f)))
            elif isinstance(f, type) and f.__module__ == mod.__name__:
                # its public methods (``__init__`` and ``__call__`` too), properties' getters
                for m, v in vars(f).items():
                    v = v.fget if isinstance(v, property) else getattr(v, "__func__", v)
                    if (isinstance(v, types.FunctionType) and v.__module__ == mod.__name__
                            and (not m.startswith("_") or m in ("__init__", "__call__"))):
                        # (written there: not the ``__init__`` typing gives a Protocol)
                        out.append((f"{mod.__name__}.{n}.{m}", v))
    return out


PUBLIC = _public_functions()


def test_the_enumeration_covers_the_library():
    names = {n for n, _ in PUBLIC}
    assert len(PUBLIC) > 300
    assert {"tangentia.random.normal", "tangentia.scipy.stats.norm.logpdf",
            "tangentia.scipy.special.logsumexp", "tangentia.nn.relu",
            "tangentia.nn.initializers.variance_scaling", "tangentia.scipy.linalg.lu_solve",
            "tangentia.example_libraries.stax.serial", "tangentia.experimental.ode.odeint",
            "tangentia.ad_checkpoint.print_saved_residuals",
            "tangentia.scipy.stats._kde.gaussian_kde.logpdf", "tangentia.sharding.Mesh.__init__",
            "tangentia.experimental.custom_dce.custom_dce.def_dce"} <= names


def test_every_public_function_has_a_return_annotation():
    missing = sorted(n for n, f in PUBLIC if "return" not in f.__annotations__)
    assert missing == [], f"{len(missing)} functions lack a return annotation: {missing}"


def test_every_annotation_evaluates():
    bad = []
    for name, f in PUBLIC:
        ns: dict = {}
        for mod in (typing, collections.abc, tg_typing):
            ns.update({k: v for k, v in vars(mod).items() if not k.startswith("__")})
        ns.update(f.__globals__)
        for param, ann in f.__annotations__.items():
            if isinstance(ann, str):
                try:
                    eval(ann, ns)  # noqa: S307 - our own annotations, as get_type_hints does
                except Exception as e:  # noqa: BLE001 - report every failure at once
                    bad.append(f"{name}: {param}: {ann!r}: {type(e).__name__}: {e}")
    assert bad == [], "annotations that do not evaluate:\n  " + "\n  ".join(bad)


def test_annotations_read_as_jaxs():
    def ann(f: typing.Callable) -> dict:
        return inspect.unwrap(f).__annotations__
    want = {"key": "ArrayLike", "shape": "Shape", "dtype": "DTypeLike | None", "return": "Array"}
    assert ann(tangentia.random.normal) == want
    assert ann(tangentia.random.exponential) == want   # (made by a factory)
    assert ann(tangentia.random.split) == {"key": "ArrayLike", "num": "int | tuple[int, ...]",
                                           "return": "Array"}
    assert ann(tangentia.scipy.stats.norm.logpdf) == {
        "x": "ArrayLike", "loc": "ArrayLike", "scale": "ArrayLike", "return": "Array"}
    assert ann(tangentia.nn.relu) == {"x": "ArrayLike", "return": "Array"}
    assert ann(tangentia.scipy.special.i0) == {"x": "ArrayLike", "return": "Array"}
    assert ann(tangentia.scipy.special.logsumexp)["return"] == "Array | tuple[Array, Array]"
