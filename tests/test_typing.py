"""The public API is annotated as JAX's is, for type checkers (PEP 561: ``py.typed``).

* Every public function of the transformations, ``tangentia.numpy`` (with ``linalg`` and
  ``fft``), ``tangentia.lax`` (with ``linalg``), ``tree_util``, ``tree``,
  ``custom_derivatives`` and ``custom_batching``, and every public method of their classes,
  has a return annotation.
* Every annotation of those functions names things that exist: evaluated in its module's
  namespace plus the names the modules import only for type checkers (``tangentia.typing``,
  ``typing``, ``collections.abc``), it gives a type, not a NameError.
* The transformations' parameters have JAX's names, kinds and order (checked against the
  installed JAX 0.10.2), apart from the differences listed with their reasons.

The type-checker run itself (mypy over the tests and the docs' examples) is a step of
``.ci/run``; ``[tool.mypy]`` in pyproject.toml configures it.
"""
from __future__ import annotations

import collections.abc
import importlib
import inspect
import os
import types
import typing

import pytest

import tangentia as tg
import tangentia.numpy as tnp
import tangentia.typing as tg_typing

MODULES = ["tangentia.numpy", "tangentia.numpy.linalg", "tangentia.numpy.fft", "tangentia.lax",
           "tangentia.lax.linalg", "tangentia.tree_util", "tangentia.tree",
           "tangentia.custom_derivatives", "tangentia.custom_batching"]

TRANSFORMATIONS = ["grad", "value_and_grad", "jvp", "vjp", "linearize", "vmap", "jit", "jacfwd",
                   "jacrev", "jacobian", "hessian", "checkpoint", "remat", "make_jaxpr",
                   "eval_shape", "linear_transpose", "closure_convert", "fwd_and_bwd"]

# Public functions without a return annotation, each with its reason; remove an entry once
# annotated.
UNANNOTATED: dict[str, str] = {}

# Parameters of ours that JAX's function lacks (extra) and JAX's that ours lacks (missing).
SIGNATURE_DIFFERENCES = {
    "jit": {"extra": ["abstracted_axes"], "missing": [],
            "why": "abstracted_axes (older JAX's, keyword-only, last) is accepted as None"},
    "make_jaxpr": {"extra": ["abstracted_axes"], "missing": [],
                   "why": "abstracted_axes (older JAX's, last) is accepted as None"},
    "remat": {"extra": ["static_argnames"], "missing": [],
              "why": "remat is checkpoint, which takes static_argnames as JAX's checkpoint does"},
    "vmap": {"extra": [], "missing": ["sum_match"],
             "why": "sum_match (new in JAX 0.10, undocumented there) would need the batching "
                    "interpreter to report which outputs are batched"},
}


def _ours(f):
    g = inspect.unwrap(f) if isinstance(f, types.FunctionType) else f
    return (getattr(g, "__module__", None) or "").startswith("tangentia")


def _public_functions():
    """``(qualified name, function)`` for every public function and public method of the
    modules' public classes (``__init__`` and ``__call__`` included)."""
    out, seen = [], set()

    def add(name, f):
        if id(f) not in seen and isinstance(f, types.FunctionType) and _ours(f):
            seen.add(id(f))
            out.append((name, f))

    for n in TRANSFORMATIONS:
        add(f"tangentia.{n}", getattr(tg, n))
    for modname in MODULES:
        mod = importlib.import_module(modname)
        for n in getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]:
            obj = getattr(mod, n, None)
            if isinstance(obj, type) and _ours(obj) and not issubclass(obj, BaseException):
                for m, v in vars(obj).items():
                    if not m.startswith("_") or m in ("__init__", "__call__"):
                        add(f"{modname}.{n}.{m}", v)
            else:
                add(f"{modname}.{n}", obj)
    return out


PUBLIC = _public_functions()


def test_the_enumeration_covers_the_api():
    names = {n for n, _ in PUBLIC}
    assert len(PUBLIC) > 600
    assert {"tangentia.grad", "tangentia.numpy.sin", "tangentia.numpy.sum", "tangentia.lax.scan",
            "tangentia.lax.add", "tangentia.numpy.linalg.eigh", "tangentia.tree_util.tree_map",
            "tangentia.custom_derivatives.custom_vjp.defvjp",
            "tangentia.custom_batching.custom_vmap.def_vmap"} <= names


def test_every_public_function_has_a_return_annotation():
    missing = sorted(n for n, f in PUBLIC if "return" not in f.__annotations__
                     and n not in UNANNOTATED)
    assert missing == [], f"{len(missing)} public functions lack a return annotation:\n  " + \
        "\n  ".join(missing)
    stale = sorted(n for n in UNANNOTATED if any(
        name == n and "return" in f.__annotations__ for name, f in PUBLIC))
    assert stale == [], f"annotated now, remove them from UNANNOTATED: {stale}"


def _namespace(f):
    ns = {}
    for mod in (typing, collections.abc, tg_typing):
        ns.update({k: v for k, v in vars(mod).items() if not k.startswith("__")})
    ns.update(inspect.unwrap(f).__globals__)
    return ns


def test_every_annotation_names_what_exists():
    bad = []
    for name, f in PUBLIC:
        ns = _namespace(f)
        for param, ann in f.__annotations__.items():
            if not isinstance(ann, str):
                continue
            try:
                eval(ann, ns)  # noqa: S307 - our own annotations, as typing.get_type_hints does
            except Exception as e:  # noqa: BLE001 - report every failure at once
                bad.append(f"{name}: {param}: {ann!r}: {type(e).__name__}: {e}")
    assert bad == [], "annotations that do not evaluate:\n  " + "\n  ".join(bad)


def test_an_annotation_that_does_not_evaluate_is_reported():
    def f(x):
        return 1
    f.__annotations__["x"] = "NoSuchType"  # as `x: NoSuchType` writes it, for a type checker too
    with pytest.raises(NameError):
        eval(f.__annotations__["x"], _namespace(f))


def test_annotations_read_as_jax_users_expect():
    assert inspect.signature(tg.grad).return_annotation == "Callable"
    assert inspect.signature(tnp.sin).parameters["x"].annotation == "ArrayLike"
    assert inspect.signature(tnp.sin).return_annotation == "Array"
    assert inspect.signature(tnp.sum).parameters["axis"].annotation == "Axis"
    assert inspect.signature(tnp.zeros).parameters["dtype"].annotation == "DTypeLike | None"
    assert inspect.signature(tg.tree_util.tree_flatten).return_annotation == \
        "tuple[list[Any], PyTreeDef]"


def test_array_is_one_class_for_isinstance_checks():
    assert tnp.ndarray is tg.Array is tg_typing.Array
    assert isinstance(tnp.ones(2), tg.Array) and not isinstance([1.0], tg.Array)
    assert tg.grad(lambda x: x * isinstance(x, tg.Array))(3.0) == 1.0
    assert tg.vmap(lambda x: x * isinstance(x, tg.Array))(tnp.ones(2)).tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="isinstance checks"):
        tg.Array()


def test_the_package_declares_its_annotations():
    assert os.path.isfile(os.path.join(os.path.dirname(tg.__file__), "py.typed"))


def _jax():
    try:
        import jax
    except ImportError:
        return None
    return jax


@pytest.mark.skipif(_jax() is None, reason="JAX (the test extra) is the reference for the "
                    "transformations' signatures; pip install -e '.[test]'")
@pytest.mark.parametrize("name", TRANSFORMATIONS)
def test_transformation_signatures_are_jaxs(name):
    jax = _jax()
    diff = SIGNATURE_DIFFERENCES.get(name, {"extra": [], "missing": []})

    def params(f, drop):
        return [(p.name, p.kind) for p in inspect.signature(f).parameters.values()
                if p.name not in drop]

    ours, theirs = getattr(tg, name), getattr(jax, name)
    assert params(ours, diff["extra"]) == params(theirs, diff["missing"])
    names = [p.name for p in inspect.signature(ours).parameters.values()]
    assert set(diff["extra"]) <= set(names), f"{name}: no longer has {diff['extra']}"
    assert not set(diff["missing"]) & set(names), f"{name}: now has {diff['missing']}"
    assert "return" in inspect.unwrap(ours).__annotations__


@pytest.mark.skipif(_jax() is None, reason="JAX (the test extra) is the reference for the "
                    "custom-rule classes' signatures; pip install -e '.[test]'")
@pytest.mark.parametrize("path", ["custom_jvp.__init__", "custom_jvp.defjvp",
                                  "custom_jvp.defjvps", "custom_vjp.__init__",
                                  "custom_vjp.defvjp", "custom_batching.custom_vmap.__init__",
                                  "custom_batching.custom_vmap.def_vmap",
                                  "custom_batching.sequential_vmap",
                                  "custom_derivatives.linear_call"])
def test_custom_rule_signatures_are_jaxs(path):
    jax = _jax()
    importlib.import_module("jax.custom_batching")

    def get(root, dotted):
        obj = root
        for part in dotted.split("."):
            obj = getattr(obj, part)
        return obj

    ours, theirs = get(tg, path), get(jax, path)
    assert [(p.name, p.kind) for p in inspect.signature(ours).parameters.values()] == \
        [(p.name, p.kind) for p in inspect.signature(theirs).parameters.values()]
    assert "return" in ours.__annotations__
