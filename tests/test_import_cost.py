"""What ``import tangentia`` does (issue 23: a user's first run pays the import).

Not timings (those are benchmarks/bench_cold_survey.py's): the structure that
keeps the import short.  The docstrings of the public functions are built at
import (``tangentia/_docstrings.py``) from the signatures of ~1,350 functions;
their parameter names are read from code objects rather than
``inspect.signature`` (about 30x cheaper), and an argument is looked for in a
docstring without compiling a pattern per name.  Both must give what the slow
ways give.
"""
from __future__ import annotations

import inspect
import re
import subprocess
import sys
import types

from hypothesis import given, settings
from hypothesis import strategies as st

import tangentia
from tangentia import _docstrings

_PUBLIC = ["numpy", "numpy.linalg", "numpy.fft", "lax", "lax.linalg", "nn", "random",
           "tree_util", "scipy.special", "scipy.linalg", "scipy.stats.norm", "custom_derivatives",
           "experimental"]


def _public_callables():
    for path in _PUBLIC:
        module = tangentia
        for part in path.split("."):
            module = getattr(module, part)
        for name in getattr(module, "__all__", None) or dir(module):
            obj = getattr(module, name, None)
            if callable(obj):
                yield f"{path}.{name}", obj


def _references():
    """NumPy's and SciPy's functions (the references whose docstrings are read)."""
    import numpy
    import scipy.linalg
    import scipy.special
    for module in (numpy, numpy.linalg, numpy.fft, scipy.special, scipy.linalg):
        for name in dir(module):
            obj = getattr(module, name, None)
            if callable(obj) and not name.startswith("_"):
                yield f"{module.__name__}.{name}", obj


def test_code_names_are_inspects_names():
    checked = 0
    for name, fn in [*_public_callables(), *_references()]:
        fast = _docstrings._code_names(fn)
        if fast is None:
            continue
        assert fast == tuple(inspect.signature(fn).parameters), name
        checked += 1
    assert checked > 900   # (the twins of tnp, lax, nn, random, ...; NumPy's dispatchers)


def _wraps_chain():
    def inner(a, b=1, *rest, c, d=2, **options):
        return a

    def middle(*args, **kwargs):
        return inner(*args, **kwargs)
    middle.__wrapped__ = inner  # type: ignore[attr-defined]

    def outer(*args, **kwargs):
        return middle(*args, **kwargs)
    outer.__wrapped__ = middle  # type: ignore[attr-defined]
    return inner, middle, outer


def test_code_names_follow_wrapped_and_defer_to_inspect():
    inner, middle, outer = _wraps_chain()
    assert _docstrings._code_names(outer) == ("a", "b", "rest", "c", "d", "options")
    assert _docstrings._code_names(outer) == tuple(inspect.signature(outer).parameters)

    def kw_only(x, *, y):
        return x
    assert _docstrings._code_names(kw_only) == ("x", "y")
    assert _docstrings._code_names(lambda **kw: kw) == ("kw",)
    # what only inspect decides: a __signature__ in the chain, a method, a ufunc, a class
    middle.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("z", inspect.Parameter.POSITIONAL_OR_KEYWORD)])
    assert _docstrings._code_names(outer) is None
    assert _docstrings._signature_names(outer) == ("z",)
    assert _docstrings._code_names(types.MethodType(inner, 1)) is None
    assert _docstrings._code_names(tangentia.numpy.ndarray) is None
    import numpy
    assert _docstrings._code_names(numpy.sin) is None     # (a ufunc: inspect's)
    assert _docstrings._code_names(numpy.sum) == tuple(inspect.signature(numpy.sum).parameters)
    assert type(numpy.sum) is not types.FunctionType     # (NumPy's dispatcher, followed)


_WORD_CHARS = st.sampled_from(list("ab_.x1 \n(),`*é") + ["ab", "x_1", "é"])


@settings(max_examples=150, deadline=None)
@given(st.lists(_WORD_CHARS, max_size=12).map("".join),
       st.sampled_from(["a", "ab", "x", "x_1", "b", "é"]))
def test_mentions_is_the_word_pattern(doc, name):
    expected = re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", doc) is not None
    assert _docstrings._mentions(doc, name) == expected


def test_mentions_examples():
    assert _docstrings._mentions("the axis along which", "axis")
    assert not _docstrings._mentions("the axes along which", "axis")
    assert not _docstrings._mentions("x.axis", "axis")       # an attribute, not the argument
    assert not _docstrings._mentions("my_axis", "axis")
    assert _docstrings._mentions("``axis``: an int", "axis")
    assert _docstrings._mentions("(axis)", "axis")


def _sections_by_lines(doc):
    """The line-by-line parse that ``_docstrings._sections`` replaced (the reference)."""
    lines = _docstrings._cleandoc(doc).splitlines()
    summary, sections, current = [], {}, None
    i = 0
    while i < len(lines):
        if i + 1 < len(lines) and lines[i].strip() and re.match(r"^-{3,}\s*$", lines[i + 1]) \
                and not lines[i].startswith(" "):
            current = sections.setdefault(lines[i].strip(), [])
            i += 2
            continue
        (summary if current is None else current).append(lines[i])
        i += 1
    return summary, sections


_DOC_LINES = st.sampled_from(["Parameters", "Returns", "---", "----------", "-- ", "--- \t",
                              "", "  ", " x : int", "x : int", "    text", "Notes", "\ttab",
                              "a - b", "Returns", "-----"])


@settings(max_examples=150, deadline=None)
@given(st.lists(_DOC_LINES, max_size=14).map("\n".join), st.sampled_from(["", "Summary.\n", "\n"]))
def test_sections_are_the_line_by_line_parse(body, head):
    doc = head + body
    _docstrings._sections.cache_clear()
    assert _docstrings._sections(doc) == _sections_by_lines(doc)


def test_sections_of_numpys_docstrings():
    import numpy
    for name in ("sum", "einsum", "linalg", "sort", "where", "histogram", "pad"):
        doc = getattr(numpy, name).__doc__
        assert _docstrings._sections(doc) == _sections_by_lines(doc), name


def test_a_fresh_import_loads_no_compiler_and_no_test_tooling():
    """A fresh ``import tangentia`` (and ``tangentia.numpy``, ``jit``, ``grad``)
    imports neither numba nor llvmlite (the numba backend loads them at its
    first compile), nor ml_dtypes, nor pytest/hypothesis."""
    code = ("import sys; import tangentia, tangentia.numpy as tnp; "
            "from tangentia import jit, grad; "
            "print(' '.join(sorted(m for m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    heavy = [m for m in out if m.split(".")[0] in ("numba", "llvmlite", "ml_dtypes", "pytest",
                                                     "hypothesis", "torch", "jax")]
    assert heavy == []
    assert "tangentia.compiler.numba_backend" in out   # (registered, its heavy parts not loaded)
