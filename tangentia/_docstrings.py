"""Docstrings of the public functions that implement a NumPy or SciPy function.

JAX documents ``jax.numpy.sin`` by keeping NumPy's description of the
arguments and adding what differs; tangentia does the same, once, for every
public function of ``tangentia.numpy``, ``tangentia.numpy.linalg``,
``tangentia.numpy.fft``, ``tangentia.scipy.special``, ``tangentia.scipy.linalg``
and ``tangentia.scipy.stats.*`` (``document``, called by ``tangentia/__init__``
on the public twins that ``install_boundaries`` makes, so a function object
shared with ``tangentia.lax`` keeps its own docstring there).

A generated docstring is

1. our own docstring (its summary says what tangentia does, and notes such as
   "a static ``size`` is needed under jit");
2. a line naming the function it implements, and the differences visible in
   the signatures: NumPy's arguments that tangentia does not accept, and
   tangentia's own arguments (JAX's, such as ``size``) that NumPy lacks;
3. NumPy's (SciPy's) *Parameters* (only those tangentia accepts), *Returns*
   and *Examples* sections.  The other sections (*See Also*, *Notes*,
   *References*, ...) and the cross references that would not resolve in our
   documentation are dropped, so that Sphinx builds them without warnings.
   The examples are NumPy's own (they call ``np.``, and are not doctests of
   tangentia: ``tests/test_doctests.py`` skips them).
"""
from __future__ import annotations

import inspect
import re
import types

_KEPT_SECTIONS = ("Parameters", "Returns", "Examples")
_SECTION_RULE = re.compile(r"^-{3,}\s*$")
# :ref:`text <label>` / :doc:`...` point into NumPy's own documentation
_ROLE_WITH_TITLE = re.compile(r":(?:ref|doc):`([^`<]*?)\s*<[^`>]*>`")
_ROLE_PLAIN = re.compile(r":(?:ref|doc):`([^`]*)`")
_CITATION = re.compile(r"\s*\[[0-9a-zA-Z#*]+\]_")
_SUBSTITUTION = re.compile(r"\|([a-z]+)\|")   # |vdots|: defined in NumPy's own docs only
_PARAM_HEAD = re.compile(r"^(\*{0,2}[A-Za-z_][\w, *]*?)\s*(?::\s*(.*))?$")


def _sections(doc):
    """``(summary lines, {section title: lines})`` of a NumPy-style docstring."""
    lines = inspect.cleandoc(doc).splitlines()
    summary, sections, current = [], {}, None
    i = 0
    while i < len(lines):
        if i + 1 < len(lines) and lines[i].strip() and _SECTION_RULE.match(lines[i + 1]) \
                and not lines[i].startswith(" "):
            current = sections.setdefault(lines[i].strip(), [])
            i += 2
            continue
        (summary if current is None else current).append(lines[i])
        i += 1
    return summary, sections


def _clean(lines):
    text = "\n".join(lines).strip("\n")
    text = _ROLE_WITH_TITLE.sub(r"\1", text)
    text = _ROLE_PLAIN.sub(r"\1", text)
    text = _CITATION.sub("", text)
    text = _SUBSTITUTION.sub(r"\1", text)
    return text


def _parameter_entries(lines):
    """``[(names, lines)]``: NumPy's parameter entries (a head line at column 0
    such as ``x1, x2 : array_like``, then its indented description)."""
    entries = []
    for line in lines:
        if line and not line[0].isspace():
            m = _PARAM_HEAD.match(line.strip())
            names = ([n.strip().lstrip("*") for n in m.group(1).split(",")] if m else [])
            entries.append((names, [line]))
        elif entries:
            entries[-1][1].append(line)
    return entries


def _signature_names(fn):
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    return [p.name for p in params]


def _reference_names(ref, sections):
    names = _signature_names(ref)
    if names is None:  # ufuncs: the names are those documented
        names = [n for names, _ in _parameter_entries(sections.get("Parameters", []))
                 for n in names]
    return [n for n in names if n not in ("args", "kwds", "kwargs", "signature", "extobj")]


def _positional_renames(fn, ref, ours):
    """``{NumPy's name: ours}`` for the inputs of a ufunc that we name
    differently (``x1, x2`` -> ``x, y``)."""
    nin = getattr(ref, "nin", None)
    if nin is None:
        return {}
    theirs = ["x"] if nin == 1 else [f"x{i + 1}" for i in range(nin)]
    return {t: o for t, o in zip(theirs, ours[:nin]) if t != o}


def _renamed_entry(names, entry, renames):
    if not any(n in renames for n in names):
        return entry
    head = ", ".join(renames.get(n, n) for n in names)
    rest = entry[0].partition(":")[2]
    return [head + (" :" + rest if rest else "")] + entry[1:]


def numpy_docstring(fn, ref, ref_name):
    """The docstring of ``fn``, tangentia's implementation of ``ref`` (whose
    qualified name is ``ref_name``, e.g. ``"numpy.sin"``)."""
    summary, sections = _sections(ref.__doc__ or "")
    ours = _signature_names(fn) or []
    renames = _positional_renames(fn, ref, ours)
    theirs = [renames.get(n, n) for n in _reference_names(ref, sections)]
    unsupported = [n for n in theirs if n not in ours]
    own = [n for n in ours if n not in theirs and n not in ("args", "kwargs")]
    library = "NumPy" if ref_name.startswith("numpy") else "SciPy"
    parts = [inspect.cleandoc(fn.__doc__ or "") or
             f"tangentia implementation of ``{ref_name}``.",
             f"This is tangentia's ``{ref_name}``; the description of its arguments below is "
             f"{library}'s."]
    if unsupported:
        parts[-1] += (f" {library} arguments not supported: "
                      + ", ".join(f"``{n}``" for n in unsupported) + ".")
    if own:
        parts[-1] += (" Arguments of tangentia's own (as in JAX): "
                      + ", ".join(f"``{n}``" for n in own) + ".")
    for title in _KEPT_SECTIONS:
        body = sections.get(title)
        if not body:
            continue
        if title == "Parameters":
            body = [line for names, entry in _parameter_entries(body)
                    if any(renames.get(n, n) in ours for n in names)
                    for line in _renamed_entry(names, entry, renames)]
            if not body:
                continue
        text = _clean(body)
        if title == "Examples":
            text = f"{library}'s examples::\n\n" + "\n".join(
                "    " + line if line.strip() else "" for line in text.splitlines())
        parts.append(f"{title}\n{'-' * len(title)}\n{text}")
    return "\n\n".join(parts) + "\n"


def document(module, reference, prefix):
    """Give every public function of ``module`` (its ``__all__``) that has a
    namesake in ``reference`` (with a docstring) the docstring of
    ``numpy_docstring``; ``prefix`` is the reference's public name
    (``"numpy.linalg"``).  Each function is documented once, under the first
    name ``__all__`` lists it by."""
    done = set()
    for name in module.__all__:
        fn = getattr(module, name, None)
        ref = getattr(reference, name, None)
        if (not isinstance(fn, types.FunctionType) or id(fn) in done
                or not getattr(ref, "__doc__", None) or not callable(ref)):
            continue
        done.add(id(fn))
        fn.__doc__ = numpy_docstring(fn, ref, f"{prefix}.{name}")
        fn.reference_doc = f"{prefix}.{name}"


def document_public(tnp, scipy_special, scipy_linalg):
    """Document the public twins of ``tangentia.numpy`` (and its ``linalg`` and
    ``fft``), ``tangentia.scipy.special`` and ``tangentia.scipy.linalg`` from
    NumPy's and SciPy's docstrings (both modules are already imported by
    tangentia)."""
    import numpy
    import scipy.linalg
    import scipy.special
    for module, reference, prefix in (
            (tnp, numpy, "numpy"), (tnp.linalg, numpy.linalg, "numpy.linalg"),
            (tnp.fft, numpy.fft, "numpy.fft"), (scipy_special, scipy.special, "scipy.special"),
            (scipy_linalg, scipy.linalg, "scipy.linalg")):
        document(module, reference, prefix)
