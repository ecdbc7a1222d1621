"""The documentation's examples run, and print what the pages say they print.

Every ```python block of every ``docs/*.md`` page runs, page by page, in one
fresh namespace per page (blocks in order, as a reader would paste them), with
matplotlib on its Agg backend (no windows).  A block followed directly by a
```text block must print exactly that text (trailing spaces aside): the
numbers shown on the pages are the numbers the code gives.  The DOT text of a
committed picture must equal what the page's code writes today.  Blocks marked
```python no-run are shown but not run (examples that need a cluster).

A second test builds the site with ``sphinx -W`` (warnings are errors) when
Sphinx, myst-parser and the theme are installed (``pip install -e '.[docs]'``).
It uses Sphinx's ``dummy`` builder, which reads every page and docstring and
resolves every reference (where the warnings come from) but writes no HTML
(a quarter faster); ``.ci/run`` builds the HTML with the README's command.
"""
import contextlib
import io
import os
import re
import subprocess
import sys
import traceback

import pytest

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs")
PAGES = sorted(f for f in os.listdir(DOCS) if f.endswith(".md"))

# A fence: its info string and body.  Fences are ``` at the start of a line.
_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.S | re.M)


def blocks(text):
    """The runnable blocks of a page: ``(number, line, source, expected_output)``.

    ``number`` counts the page's ```python blocks from 1 (no-run ones included,
    so the number matches what a reader counts); ``expected_output`` is the
    body of a ```text fence that follows the block with only blank lines
    between, else None.
    """
    fences = list(_FENCE.finditer(text))
    out, number = [], 0
    for i, m in enumerate(fences):
        info = m.group(1).split()
        if not info or info[0] != "python":
            continue
        number += 1
        if "no-run" in info[1:]:
            continue
        expected = None
        if i + 1 < len(fences):
            nxt = fences[i + 1]
            if nxt.group(1).strip() == "text" and not text[m.end():nxt.start()].strip():
                expected = nxt.group(2)
        out.append((number, text.count("\n", 0, m.start()) + 2, m.group(2), expected))
    return out


def _normalize(s):
    return "\n".join(line.rstrip() for line in s.strip("\n").splitlines())


def test_blocks_are_found():
    text = "a\n```python\nx = 1\n```\n\n```text\n1\n```\n```python no-run\ny\n```\n" \
           "```python\nprint(2)\n```\n```bash\nls\n```\n"
    assert [(n, line, src, exp) for n, line, src, exp in blocks(text)] == [
        (1, 3, "x = 1\n", "1\n"), (3, 13, "print(2)\n", None)]


@pytest.mark.parametrize("page", PAGES)
def test_page_examples_run(page, tmp_path, monkeypatch):
    with open(os.path.join(DOCS, page), encoding="utf-8") as f:
        text = f.read()
    if "import matplotlib" in text:
        pytest.importorskip("matplotlib", reason="the page plots with matplotlib, which the "
                            "docs extra installs (pip install -e '.[docs]')")
        import matplotlib
        matplotlib.use("Agg")
    (tmp_path / "_static").mkdir()
    monkeypatch.chdir(tmp_path)               # pages save their pictures under _static/
    run_page(page, text)
    # A committed picture drawn from DOT text must still show today's program.
    for made in sorted((tmp_path / "_static").glob("*.dot")):
        with open(os.path.join(DOCS, "_static", made.name), encoding="utf-8") as f:
            assert made.read_text(encoding="utf-8") == f.read(), (
                f"docs/{page} now draws a different program than docs/_static/{made.name}; "
                f"regenerate the committed pictures: python tests/test_docs.py {page}")


def run_page(page, text):
    """Run a page's blocks in order in a fresh namespace, checking printed output."""
    import numpy as np

    namespace = {"__name__": f"docs_{page[:-3]}"}
    options = np.get_printoptions()
    try:
        for number, line, source, expected in blocks(text):
            buf = io.StringIO()
            try:
                code = compile(source, f"docs/{page}, python block {number} (line {line})",
                               "exec")
                with contextlib.redirect_stdout(buf):
                    exec(code, namespace)
            except BaseException:
                pytest.fail(f"docs/{page}: python block {number} (line {line}) raised:\n"
                            + traceback.format_exc(), pytrace=False)
            if expected is not None:
                assert _normalize(buf.getvalue()) == _normalize(expected), (
                    f"docs/{page}: python block {number} (line {line}) printed\n"
                    f"{buf.getvalue()}\nbut the page shows\n{expected}")
    finally:
        np.set_printoptions(**options)
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")


def _sphinx_missing():
    try:
        import sphinx  # noqa: F401
        import myst_parser  # noqa: F401
        import furo  # noqa: F401
    except ImportError as e:
        return f"the docs extra is not installed ({e}); pip install -e '.[docs]'"
    return None


@pytest.mark.skipif(_sphinx_missing() is not None, reason=str(_sphinx_missing()))
# (more than the build's own 600 s below: at a load of 11 on 2 cores the build took 299 s
# and pytest-timeout's 300 s ended the worker, losing its place in the schedule)
@pytest.mark.timeout(660)
def test_sphinx_build_has_no_warnings(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "dummy",
         "-d", str(tmp_path / "doctrees"), DOCS, str(tmp_path / "out")],
        capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr


if __name__ == "__main__":
    # Regenerate the pictures the pages commit under docs/_static/ by running
    # the pages there: python tests/test_docs.py [page.md ...]
    import matplotlib
    matplotlib.use("Agg")
    os.chdir(DOCS)
    for name in sys.argv[1:] or PAGES:
        with open(name, encoding="utf-8") as f:
            run_page(name, f.read())
