"""Every public name has a docstring that names its arguments, and the
transformations' docstrings have Args, Returns and Examples sections, as
JAX's do (issue 13).  The examples themselves run in test_doctests.py."""
from __future__ import annotations

import enum
import importlib
import inspect
import re
import types
from pathlib import Path

import pytest

import tangentia  # (installs the public twins and their docstrings)

API_PAGES = Path(__file__).resolve().parent.parent / "docs" / "api"

STATS = ["bernoulli", "beta", "binom", "cauchy", "chi2", "dirichlet", "expon", "gamma",
         "laplace", "logistic", "multivariate_normal", "norm", "poisson", "t", "uniform"]
MODULES = ["tangentia", "tangentia.numpy", "tangentia.numpy.linalg", "tangentia.numpy.fft",
           "tangentia.lax", "tangentia.lax.linalg", "tangentia.scipy.special", "tangentia.scipy.linalg", "tangentia.nn",
           "tangentia.random", "tangentia.tree_util", "tangentia.tree",
           "tangentia.custom_derivatives", "tangentia.custom_batching",
           "tangentia.experimental", "tangentia.experimental.ode", "tangentia.distributed",
           "tangentia.test_util", "tangentia.debug", "tangentia.ad_checkpoint"] + [f"tangentia.scipy.stats.{d}"
                                                         for d in STATS]

# The transformations, as ``module:name``: full docstrings with examples.
TRANSFORMATIONS = [
    "tangentia:grad", "tangentia:jit", "tangentia:vmap", "tangentia:jvp", "tangentia:vjp",
    "tangentia:linearize", "tangentia:jacfwd", "tangentia:jacrev", "tangentia:hessian",
    "tangentia:value_and_grad", "tangentia:make_jaxpr", "tangentia:checkpoint",
    "tangentia:custom_jvp", "tangentia:custom_vjp", "tangentia:custom_gradient",
    "tangentia.custom_batching:custom_vmap", "tangentia:eval_shape",
    "tangentia:linear_transpose", "tangentia:closure_convert", "tangentia:disable_jit",
    "tangentia:ensure_compile_time_eval", "tangentia.lax:scan", "tangentia.lax:while_loop",
    "tangentia.lax:fori_loop", "tangentia.lax:cond", "tangentia.lax:switch", "tangentia.lax:map",
    "tangentia.lax:custom_root", "tangentia.lax:custom_linear_solve",
    "tangentia.experimental.ode:odeint", "tangentia.distributed:vmap",
    "tangentia.distributed:value_and_grad", "tangentia.test_util:check_grads",
    "tangentia.test_util:check_custom_rules", "tangentia.debug:print",
    "tangentia.debug:callback", "tangentia.api.staging:Lowered"]


def _public(module_name):
    """``[(qualified name, object)]``: the public functions and classes of a
    module (its ``__all__``, else the names it defines)."""
    mod = importlib.import_module(module_name)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n, v in vars(mod).items() if not n.startswith("_")
                 and getattr(v, "__module__", None) == module_name]
    return [(f"{module_name}.{n}", getattr(mod, n)) for n in names
            if inspect.isroutine(getattr(mod, n)) or inspect.isclass(getattr(mod, n))]


PUBLIC = [item for m in MODULES for item in _public(m)]


def _is_ours(obj):
    return (getattr(obj, "__module__", None) or "").startswith("tangentia")


def _documented_parameters(obj):
    """The names of ``obj``'s parameters that its docstring must mention."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    return [p.name for p in sig.parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"]


def test_the_enumeration_covers_the_modules():
    assert len(PUBLIC) > 700
    names = {n for n, _ in PUBLIC}
    assert {"tangentia.grad", "tangentia.numpy.sin", "tangentia.lax.scan",
            "tangentia.scipy.stats.norm.logpdf", "tangentia.random.normal"} <= names


def test_every_public_name_has_a_docstring():
    missing = [n for n, obj in PUBLIC if not (inspect.getdoc(obj) or "").strip()]
    assert missing == []


def test_every_docstring_names_the_arguments():
    unnamed = []
    for name, obj in PUBLIC:
        if not _is_ours(obj) or isinstance(obj, type) and issubclass(
                obj, (BaseException, enum.Enum)):  # (an Enum's signature is Enum's)
            continue
        doc = inspect.getdoc(obj) or ""
        if isinstance(obj, type) and obj.__init__ is not object.__init__:
            doc += inspect.getdoc(obj.__init__) or ""
        missing = [p for p in _documented_parameters(obj)
                   if not re.search(rf"(?<![\w.]){re.escape(p)}(?!\w)", doc)]
        if missing:
            unnamed.append(f"{name}: {missing}")
    assert unnamed == [], f"{len(unnamed)} docstrings do not name their arguments:\n" + \
        "\n".join(unnamed)


def _transformation(spec):
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("spec", TRANSFORMATIONS)
def test_transformations_have_full_docstrings(spec):
    doc = inspect.getdoc(_transformation(spec)) or ""
    sections = {s for s in ("Args:", "Returns:", "Examples:") if re.search(
        rf"^{s}\s*$", doc, re.M)}
    assert sections == {"Args:", "Returns:", "Examples:"} or spec.endswith(
        ("disable_jit", "ensure_compile_time_eval")) and "Examples:" in sections, \
        f"{spec}: sections {sorted(sections)}"
    assert ">>> " in doc, f"{spec}: no doctest example"


def test_the_api_reference_lists_every_top_level_name():
    """docs/api/tangentia.md lists the top-level names by hand (by topic); the
    other pages are generated from the modules (``automodule``)."""
    page = (API_PAGES / "tangentia.md").read_text()
    missing = [n for n in tangentia.__all__ if not isinstance(getattr(tangentia, n),
                                                               types.ModuleType)
               and f"tangentia.{n}" not in page]
    assert missing == []
    pages = {p.stem for p in API_PAGES.glob("*.md")}
    index = (API_PAGES / "index.md").read_text()
    assert [p for p in pages - {"index"} if f"\n{p}\n" not in index] == []


def test_numpys_own_objects_are_listed_not_autodocumented():
    """The NumPy objects tangentia.numpy re-exports (dtypes, constants, index
    helpers) carry NumPy's docstrings, whose cross references point into
    NumPy's documentation: docs/api/numpy.md excludes them from ``automodule``
    (else the build warns) and lists them."""
    import tangentia.numpy as tnp
    page = (API_PAGES / "numpy.md").read_text()
    excluded = set(re.search(r":exclude-members: (.*)", page).group(1).split(", "))
    foreign = {n for n in tnp.__all__ if not isinstance(getattr(tnp, n), types.ModuleType)
               and not (isinstance(getattr(tnp, n), types.FunctionType)
                        and getattr(tnp, n).__module__.startswith("tangentia"))}
    assert sorted(foreign - excluded) == [], "add them to docs/api/numpy.md"
