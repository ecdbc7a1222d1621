"""Sphinx configuration of tangentia's documentation site.

Build (after ``pip install -e '.[docs]'``), warnings being errors:

    python -m sphinx -W --keep-going -b html docs docs/_build/html

Pages are Markdown (myst-parser).  The API reference under ``api/`` is
generated from the docstrings with autodoc/autosummary (Google-style sections
read by napoleon).  Every ```python block of the pages runs in the test suite
(``tests/test_docs.py``); the pictures the examples produce are committed
under ``_static/``.
"""
import os
import sys

sys.path.insert(0, os.path.abspath(".."))   # document the checkout, installed or not

project = "tangentia"
author = "the tangentia developers"
copyright = "the tangentia developers"

import tangentia  # noqa: E402

version = release = tangentia.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3

autosummary_generate = True
autodoc_typehints = "description"
autodoc_member_order = "bysource"
napoleon_google_docstring = True
napoleon_numpy_docstring = True

pygments_style = "default"
html_theme = "furo"
html_title = f"tangentia {release}"
html_static_path = ["_static"]
