"""The examples in the docstrings run (issue 13: every example in the
documentation runs in the test suite).

Every ``>>>`` example of every module of the package is run with ``doctest``
(``ELLIPSIS | NORMALIZE_WHITESPACE``), with NumPy's printing options fixed.
The NumPy/SciPy examples that ``tangentia/_docstrings.py`` copies into the
docstrings of the public twins of ``tangentia.numpy`` and
``tangentia.scipy`` are NumPy's own examples (they call ``np.``), shown for
the description of the arguments: they are not tangentia's and are skipped
(they carry ``reference_doc``).
"""
from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil

import numpy as np
import pytest

import tangentia

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
# Modules that need an optional dependency to import.
OPTIONAL = {"tangentia.distributed": "dask"}


def _modules():
    for info in pkgutil.walk_packages(tangentia.__path__, "tangentia."):
        if info.name in OPTIONAL and importlib.util.find_spec(OPTIONAL[info.name]) is None:
            continue
        if info.name == "tangentia.__main__":
            continue
        yield importlib.import_module(info.name)


def _doctests():
    finder = doctest.DocTestFinder(exclude_empty=True)
    tests = {}
    for module in [tangentia, *_modules()]:
        for test in finder.find(module):
            if test.examples and not _is_reference(test.name):
                tests.setdefault(test.name, test)
    return [tests[name] for name in sorted(tests)]


def _is_reference(qualified_name):
    """Whether ``qualified_name`` is a function whose examples are NumPy's."""
    module_name, _, name = qualified_name.rpartition(".")
    module = importlib.import_module(module_name) if module_name in _MODULE_NAMES else None
    return module is not None and hasattr(getattr(module, name, None), "reference_doc")


_MODULE_NAMES = {"tangentia"} | {info.name for info in pkgutil.walk_packages(
    tangentia.__path__, "tangentia.")}
TESTS = _doctests()


def test_the_transformations_have_doctests():
    names = {t.name for t in TESTS}
    for expected in ("tangentia.api.differentiation.grad", "tangentia.api.staging.jit",
                     "tangentia.api.vectorization.vmap", "tangentia.lax.control_flow.scan",
                     "tangentia.custom_derivatives._vjp.custom_vjp",
                     "tangentia.test_util.check_custom_rules"):
        assert expected in names
    assert len(TESTS) >= 35


@pytest.fixture
def numpy_print_options():
    saved = np.get_printoptions()
    np.set_printoptions(precision=8, linewidth=75, suppress=False, threshold=1000,
                        legacy=False)
    yield
    np.set_printoptions(**saved)


@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_docstring_examples_run(test, numpy_print_options):
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    test.globs = dict(test.globs)
    failures = []
    runner.run(test, out=failures.append)
    assert runner.failures == 0, "".join(failures)
