"""Write the documentation's examples as Python files, one per page, for the type checker.

    python .ci/docs_examples.py OUTDIR

Each ``docs/*.md`` page becomes ``OUTDIR/<page>.py``: its runnable ```python blocks in order
(the blocks ``tests/test_docs.py`` runs, in one namespace per page, as a reader pastes them).
Each block starts with a comment naming its page and line, so a type error's line number
leads back to the page.  Each file asks mypy to check the bodies of its functions too
(``# mypy: check-untyped-defs``): examples are code for readers to copy.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from test_docs import DOCS, PAGES, blocks  # noqa: E402  (the one parser of the pages' fences)


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    for page in PAGES:
        with open(os.path.join(DOCS, page), encoding="utf-8") as f:
            found = blocks(f.read())
        if not found:
            continue
        parts = ["# mypy: check-untyped-defs\n"]   # the examples' function bodies too
        parts += [f"# docs/{page}, python block {number} (line {line})\n{source}"
                  for number, line, source, _ in found]
        name = "docs_" + page[:-3].replace(".", "_").replace("-", "_") + ".py"
        with open(os.path.join(outdir, name), "w", encoding="utf-8") as f:
            f.write("\n".join(parts))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
