"""Docstrings of the public functions, made once at import.

``document_public`` runs in ``tangentia/__init__`` on the public twins that
``install_boundaries`` makes (so a function object shared by
``tangentia.numpy`` and ``tangentia.lax`` gets a docstring for each).

1. The functions that implement a NumPy or SciPy function
   (``tangentia.numpy``, its ``linalg`` and ``fft``, ``tangentia.scipy.special``
   and ``tangentia.scipy.linalg``; ``document``) are documented as JAX did,
   keeping NumPy's description of the arguments and saying what differs:

   a. our own docstring (its summary says what tangentia does, and notes
      such as "a static ``size`` is needed under jit");
   b. a line naming the function it implements, and the differences visible
      in the signatures: NumPy's arguments that tangentia does not accept,
      and tangentia's own arguments (JAX's, such as ``size``);
   c. NumPy's (SciPy's) *Parameters* (only those tangentia accepts),
      *Returns* and *Examples* sections.  The other sections (*See Also*,
      *Notes*, *References*, ...) and the cross references that would not
      resolve in our documentation are dropped, so that Sphinx builds them
      without warnings.  The examples are NumPy's own (they call ``np.``;
      ``tests/test_doctests.py`` skips them).

2. The functions with no NumPy twin (``tangentia.lax``, ``tangentia.random``,
   ``tangentia.scipy.stats.*``, ``tangentia.nn``, ``tangentia.tree_util``,
   ...; ``complete``) keep their docstring, or get a hand-written summary
   (``_LAX_SUMMARIES``, ``_STATS_SUMMARIES``), and an ``Args:`` entry for each
   argument the docstring does not mention, from tables of descriptions by
   argument name.  ``tests/test_docstrings.py`` checks that every public
   name's docstring names all its arguments.
"""
from __future__ import annotations

import enum
import functools
import importlib.util
import inspect
import json
import os
import re
import sys
import types

import numpy as np

_KEPT_SECTIONS = ("Parameters", "Returns", "Examples")
# :ref:`text <label>` / :doc:`...` point into NumPy's own documentation
_ROLE_WITH_TITLE = re.compile(r":(?:ref|doc):`([^`<]*?)\s*<[^`>]*>`")
_ROLE_PLAIN = re.compile(r":(?:ref|doc):`([^`]*)`")
_CITATION = re.compile(r"\s*\[[0-9a-zA-Z#*]+\]_")
_SUBSTITUTION = re.compile(r"\|([a-z]+)\|")   # |vdots|: defined in NumPy's own docs only
_PARAM_HEAD = re.compile(r"^(\*{0,2}[A-Za-z_][\w, *]*?)\s*(?::\s*(.*))?$")
_INDENT = re.compile(r"^( *)\S", re.M)


_SHALLOWER: dict[int, re.Pattern] = {}   # k: a line indented by fewer than k spaces


def _margin(text):
    """The smallest indentation of a non-blank line of ``text`` (None if there is no
    such line).  The first line's, then lines indented less, each found by a search that
    stops at it: NumPy's docstrings (~30,000 lines) are scanned about twice, with no
    list of every line's margin (``min(map(len, _INDENT.findall(text)))``)."""
    m = _INDENT.search(text)
    if m is None:
        return None
    margin = len(m.group(1))
    while margin:
        shallower = _SHALLOWER.get(margin)
        if shallower is None:
            shallower = _SHALLOWER[margin] = re.compile(rf"^( {{0,{margin - 1}}})\S", re.M)
        m = shallower.search(text)
        if m is None:
            break
        margin = len(m.group(1))
    return margin


def _cleandoc(doc):
    """``inspect.cleandoc`` for docstrings without tabs, with regular
    expressions (it runs on every public function at import)."""
    first, _, rest = doc.strip("\n").partition("\n")
    margin = _margin(rest) if rest else None
    if margin:
        rest = re.sub(rf"^ {{0,{margin}}}", "", rest, flags=re.M)
    return (first.strip() + "\n" + rest).strip() if rest else first.strip()


@functools.lru_cache(maxsize=None)
def _sections(doc):
    """``(summary lines, {section title: lines})`` of a NumPy-style docstring
    (cached: a reference's docstring is read several times).  A title is a line neither
    indented nor blank, underlined by a rule of 3 or more "-"; the rules are found with
    ``str.find`` (NumPy's ~475 docstrings are ~30,000 lines)."""
    text = "\n".join(_cleandoc(doc).splitlines())
    summary, sections, start, current = None, {}, 0, None
    pos = text.find("\n---")
    while pos >= 0:
        end = text.find("\n", pos + 1)
        end = len(text) if end < 0 else end
        rule = text[pos + 1:end].rstrip()
        title_start = text.rfind("\n", 0, pos) + 1
        title = text[title_start:pos]
        if (title_start >= start and rule.count("-") == len(rule) and title.strip()
                and not title.startswith(" ")):
            body = text[start:title_start]
            body = body[:-1].split("\n") if body else []
            if current is None:
                summary = body
            else:
                current.extend(body)
            current = sections.setdefault(title.strip(), [])
            start = end + 1
        pos = text.find("\n---", pos + 1)
    body = text[start:].split("\n") if start < len(text) else []
    if current is None:
        summary = body
    else:
        current.extend(body)
    return summary, sections


def _clean(lines):
    text = "\n".join(lines).strip("\n")
    if ":ref:`" in text or ":doc:`" in text:   # (the patterns' own markers: most texts
        text = _ROLE_WITH_TITLE.sub(r"\1", text)   # have none, and are not scanned)
        text = _ROLE_PLAIN.sub(r"\1", text)
    if "]_" in text:
        text = _CITATION.sub("", text)
    if "|" not in text:
        return "\n".join(text.splitlines())
    # |vdots| in a table row: "..." of the same width, so that the table stays aligned
    return "\n".join(
        _SUBSTITUTION.sub(lambda m: "..." + " " * (len(m.group(0)) - 3), line)
        if line.lstrip().startswith("|") else line for line in text.splitlines())


def _escape_bars(text):
    """``|err|_1`` in prose would be a substitution reference: escape the bars
    outside tables and inline literals."""
    if "|" not in text:
        return text
    lines = []
    for line in text.splitlines():
        if not line.lstrip().startswith(("|", "+")):
            parts = line.split("``")
            line = "``".join(p if i % 2 else p.replace("|", "\\|") for i, p in enumerate(parts))
        lines.append(line)
    return "\n".join(lines)


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


_VARARGS, _VARKEYWORDS = inspect.CO_VARARGS, inspect.CO_VARKEYWORDS


def _code_names(fn):
    """The parameter names ``inspect.signature(fn)`` gives, read from the code
    object of the function ``fn``'s ``__wrapped__`` chain leads to (about 30x
    cheaper: this runs for every public function at import); None where
    ``inspect`` must decide (a method, a ``__signature__``, a partial, a class)."""
    for _ in range(100):   # inspect.unwrap's walk (its limit: a cycle raises there)
        if type(fn) is not types.FunctionType:
            # another object wrapping a function (NumPy's array-function dispatchers,
            # an lru_cache) is followed as inspect follows it; the rest is inspect's
            # (a ufunc's failing getattr alone costs 50 us)
            if isinstance(fn, (type, types.MethodType, np.ufunc)) \
                    or hasattr(fn, "__signature__"):
                return None
            wrapped = getattr(fn, "__wrapped__", None)
            if wrapped is None:
                return None
            fn = wrapped
            continue
        attributes = fn.__dict__
        if "__signature__" in attributes:
            return None
        if "__wrapped__" not in attributes:
            break
        fn = attributes["__wrapped__"]
    else:
        return None
    code = fn.__code__
    n, flags = code.co_argcount, code.co_flags
    names = list(code.co_varnames[:n])
    if flags & _VARARGS:
        names.append(code.co_varnames[n + code.co_kwonlyargcount])
    names.extend(code.co_varnames[n:n + code.co_kwonlyargcount])
    if flags & _VARKEYWORDS:
        names.append(code.co_varnames[n + code.co_kwonlyargcount + bool(flags & _VARARGS)])
    return tuple(names)


@functools.lru_cache(maxsize=None)
def _signature_names(fn):
    names = _code_names(fn)
    if names is not None:
        return names
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    return tuple(p.name for p in params)


def _reference_names(ref, sections):
    names = ref.names if type(ref) is _Reference else _signature_names(ref)
    if names is None:  # ufuncs: the names are those documented
        names = [n for names, _ in _parameter_entries(sections.get("Parameters", []))
                 for n in names]
    return [n for n in names if n not in ("args", "kwds", "kwargs", "signature", "extobj")]


def _positional_renames(fn, ref, ours, sections):
    """``{NumPy's name: ours}`` for the inputs of a ufunc that we name
    differently (``x1, x2`` -> ``x, y``), matched by position (``sections``: those of
    the ufunc's docstring)."""
    nin = getattr(ref, "nin", None)
    if nin is None:
        return {}
    theirs = [n for names, _ in _parameter_entries(sections.get("Parameters", []))
              for n in names][:nin]
    return {t: o for t, o in zip(theirs, ours[:nin]) if t != o}


def _renamed_entry(names, entry, renames):
    if not any(n in renames for n in names):
        return entry
    head = ", ".join(renames.get(n, n) for n in names)
    rest = entry[0].partition(":")[2]
    return [head + (" :" + rest if rest else "")] + entry[1:]


def numpy_docstring(fn, ref, ref_name, ref_doc=None):
    """The docstring of ``fn``, tangentia's implementation of ``ref`` (whose
    qualified name is ``ref_name``, e.g. ``"numpy.sin"``; ``ref_doc``: its docstring,
    if already read: a ufunc's is formatted anew at each read)."""
    _, sections = _sections((ref.__doc__ if ref_doc is None else ref_doc) or "")
    ours = _signature_names(fn) or []
    renames = _positional_renames(fn, ref, ours, sections)
    theirs = [renames.get(n, n) for n in _reference_names(ref, sections)]
    unsupported = [n for n in theirs if n not in ours]
    own = [n for n in ours if n not in theirs and n not in ("args", "kwargs")]
    library = "NumPy" if ref_name.startswith("numpy") else "SciPy"
    parts = [_cleandoc(fn.__doc__ or "") or
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
        else:
            text = _escape_bars(text)
        parts.append(f"{title}\n{'-' * len(title)}\n{text}")
    return "\n\n".join(parts) + "\n"


def document(module, reference, prefix):
    """Give every public function of ``module`` (its ``__all__``) that has a
    namesake in ``reference`` (with a docstring) the docstring of
    ``numpy_docstring``; ``prefix`` is the reference's public name
    (``"numpy.linalg"``).  Each function is documented once, under the first
    name ``__all__`` lists it by."""
    documented = {}   # id of a function: whether its reference documents the arguments
    for name in module.__all__:
        fn = getattr(module, name, None)
        ref = getattr(reference, name, None)
        if not isinstance(fn, types.FunctionType) or not callable(ref):
            continue
        ref_doc = getattr(ref, "__doc__", None)   # (read once: a ufunc's is formatted anew)
        if not ref_doc:
            continue
        # an alias (NumPy's ``amax``) is documented by the name whose NumPy
        # docstring has the Parameters (``max``)
        has_parameters = "Parameters" in _sections(ref_doc)[1]
        if id(fn) in documented and (documented[id(fn)] or not has_parameters):
            continue
        if id(fn) in documented:
            fn.__doc__ = fn.own_doc
        documented[id(fn)] = has_parameters
        fn.own_doc = fn.__doc__
        fn.__doc__ = numpy_docstring(fn, ref, f"{prefix}.{name}", ref_doc)
        fn.reference_doc = f"{prefix}.{name}"


def document_public():
    """Document the public twins (run by ``tangentia/__init__`` once
    ``install_boundaries`` has made them): ``tangentia.numpy`` (with its
    ``linalg`` and ``fft``), ``scipy.special`` and ``scipy.linalg`` from NumPy's
    and SciPy's docstrings (SciPy's from the stored table, ``scipy_references``,
    when it is the installed SciPy's: ``import tangentia`` does not import SciPy);
    ``lax``, ``random``, ``nn``, ``tree_util`` and ``scipy.stats`` by their arguments."""
    import numpy

    from . import lax, nn, random, tree, tree_util
    from . import numpy as tnp
    from .scipy import linalg as tsl, special as sp, stats
    special = {**_NUMPY_ARGS, "v": "the order of the function (an array or scalar)."}
    scipy_special, scipy_linalg = scipy_references({"scipy.special": sp, "scipy.linalg": tsl})
    for module, reference, prefix, arguments in (
            (tnp, numpy, "numpy", _NUMPY_ARGS),
            (tnp.linalg, numpy.linalg, "numpy.linalg", _NUMPY_ARGS),
            (tnp.fft, numpy.fft, "numpy.fft", _NUMPY_ARGS),
            (sp, scipy_special, "scipy.special", special),
            (tsl, scipy_linalg, "scipy.linalg", _SCIPY_LINALG_ARGS)):
        document(module, reference, prefix)
        document_by_arguments(module, arguments)
    document_lax(lax)
    document_by_arguments(random, _RANDOM_ARGS)
    for module, arguments in ((nn, _NN_ARGS), (tree_util, _TREE_ARGS), (tree, _TREE_ARGS),
                              (lax.linalg, _LAX_LINALG_ARGS)):
        document_by_arguments(module, arguments)
    for name, label in _STATS_LABELS.items():
        document_stats(getattr(stats, name), label)


# ---------------------------------------------------------------------------
# The built docstrings, cached on disk: ``document_public`` costs ~65 ms of CPU (a quarter of
# ``import tangentia``), reading ~500 NumPy and SciPy docstrings.  Its result (the final
# ``__doc__``, ``own_doc`` and ``reference_doc`` of every object it changed, by module and
# name) is a pure function of tangentia's sources, NumPy's and SciPy's versions and Python's:
# ``$TANGENTIA_CACHE_DIR/docstrings-<python>-<numpy>-<tree>.marshal`` holds it with that key
# (each source file, its modification time and size), written when it was missing or stale,
# atomically.

_NO_ATTR = "\0"   # (an attribute the object did not have)


def _documented_modules():
    from . import lax, nn, random, tree, tree_util
    from . import numpy as tnp
    from .scipy import linalg as tsl, special as sp, stats
    return [tnp, tnp.linalg, tnp.fft, sp, tsl, lax, random, nn, tree_util, tree, lax.linalg,
            *(getattr(stats, name) for name in _STATS_LABELS)]


def _attributes(module):
    """``(name, object)`` of ``module``'s attributes and of the names its ``__all__`` lists
    (which ``document`` reads: one may come from the module's ``__getattr__``)."""
    attributes = dict(vars(module))
    for name in getattr(module, "__all__", ()):
        if name not in attributes:
            attributes[name] = getattr(module, name, None)
    return attributes.items()


def _documented_state():
    """``{"module:name": (__doc__, own_doc, reference_doc)}`` of the functions and classes
    ``document_public`` may change (the attributes of the modules it documents)."""
    state = {}
    for module in _documented_modules():
        prefix = module.__name__ + ":"
        for name, obj in _attributes(module):
            if type(obj) is types.FunctionType:
                attributes = obj.__dict__
                state[prefix + name] = (obj.__doc__, attributes.get("own_doc", _NO_ATTR),
                                        attributes.get("reference_doc", _NO_ATTR))
            elif isinstance(obj, type) and obj.__module__.startswith("tangentia"):
                doc = obj.__dict__.get("__doc__")
                state[prefix + name] = (doc if isinstance(doc, str) else None, _NO_ATTR, _NO_ATTR)
    return state


def _source_files(directory):
    """``(path, modification time, size)`` of the ``.py`` and ``.json`` files under
    ``directory`` (the package's sources), in a fixed order."""
    found, pending = [], [directory]
    while pending:   # (a walk over the package's directories: it ends)
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        pending.append(entry.path)
                elif entry.name.endswith((".py", ".json")):
                    st = entry.stat()
                    found.append(f"{entry.path} {st.st_mtime_ns} {st.st_size}")
    return sorted(found)


def _cache_key():
    """What the docstrings are made from: Python's, NumPy's and SciPy's versions, and
    tangentia's sources (each file's modification time and size; the SciPy table too)."""
    return "\n".join([sys.version, np.__version__, str(_installed_scipy()),
                      *_source_files(os.path.dirname(os.path.abspath(__file__)))])


def _cache_path():
    """One file per Python, NumPy and copy of tangentia (two trees do not take turns)."""
    import zlib

    from .compiler.backend import cache_root
    tree = zlib.crc32(os.path.dirname(os.path.abspath(__file__)).encode())
    tag = f"{sys.implementation.cache_tag}-{np.__version__}-{tree:08x}"
    return os.path.join(cache_root(), f"docstrings-{tag}.marshal")


def _apply(changes):
    """Give the objects the state ``changes`` records; False (nothing changed) if an
    object is not there as it was."""
    targets = []
    modules = {m.__name__: m for m in _documented_modules()}
    for key, (doc, own, ref) in changes.items():
        module_name, _, name = key.partition(":")
        module = modules.get(module_name)
        obj = None if module is None else getattr(module, name, None)
        if obj is None or not (type(obj) is types.FunctionType or isinstance(obj, type)):
            return False
        targets.append((obj, doc, own, ref))
    for obj, doc, own, ref in targets:
        obj.__doc__ = doc
        if own != _NO_ATTR:
            obj.own_doc = own
        if ref != _NO_ATTR:
            obj.reference_doc = ref
    return True


def document_public_cached(key=None):
    """``document_public``, or its result from the on-disk cache when that was made from
    the same sources (see above); a cache that cannot be read or written is ignored.
    ``key``: ``_cache_key()`` taken before the package's modules were imported (then a
    source edited during the import makes the next process rebuild, never read
    docstrings older than its key)."""
    import marshal
    key, path = key or _cache_key(), _cache_path()
    try:
        with open(path, "rb") as f:
            cached = marshal.load(f)
        if (type(cached) is tuple and len(cached) == 2 and cached[0] == key
                and type(cached[1]) is dict and _apply(cached[1])):
            return
    except (OSError, ValueError, EOFError, TypeError):
        pass
    before = _documented_state()
    document_public()
    changes = {k: v for k, v in _documented_state().items() if before.get(k) != v}
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            marshal.dump((key, changes), f)
        os.replace(tmp, path)
    except (OSError, ValueError):
        try:
            os.unlink(tmp)
        except OSError:
            pass


# ---------------------------------------------------------------------------
# SciPy's docstrings without importing SciPy (~0.2 s: half of ``import tangentia``).
# ``_scipy_docs.json`` holds what ``document`` reads of SciPy's functions (docstring,
# parameter names, ``nin``) for every name of ``tangentia.scipy.special.__all__`` and
# ``tangentia.scipy.linalg.__all__``, with the version of the SciPy it was read from.  It is
# used when that is the installed SciPy (read from its ``version.py``, without importing it)
# and it lists every public name; otherwise (or when SciPy is imported already) the
# docstrings are read from SciPy itself.  With another SciPy installed (an upgrade after this
# release), that first import also writes the table of the installed SciPy into tangentia's
# cache directory (``scipy_docs-<crc32 of its version>.json``), which later imports read
# instead.  tests/test_import_cost.py checks that the table in use is the installed SciPy's;
# after a SciPy upgrade or a new public name, rewrite the packaged one with
# ``python -c "from tangentia import _docstrings; _docstrings.write_scipy_references()"``.

_SCIPY_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_scipy_docs.json")
_VERSION_LINE = re.compile(r'^(version|git_revision) = "([^"]*)"', re.M)


class _Reference:
    """A SciPy function as ``document`` reads it, from the stored table: its
    ``__doc__``, its parameter ``names`` (``_signature_names``: None for a ufunc) and
    ``nin`` (a ufunc's number of inputs, else None)."""

    def __init__(self, doc, names, nin):
        self.__doc__, self.names, self.nin = doc, None if names is None else tuple(names), nin

    def __call__(self, *args, **kwargs):
        raise TypeError("a stand-in for a SciPy function's documentation")


def _installed_scipy():
    """``"<version> <git revision>"`` of the installed SciPy, read from its
    ``version.py`` without importing it (None if that cannot be read)."""
    try:
        spec = importlib.util.find_spec("scipy")
        if spec is None or not spec.submodule_search_locations:
            return None
        with open(os.path.join(list(spec.submodule_search_locations)[0], "version.py"),
                  encoding="utf-8") as f:
            fields = dict(_VERSION_LINE.findall(f.read()))
    except (OSError, ImportError, ValueError):
        return None
    if "version" not in fields or "git_revision" not in fields:
        return None
    return f"{fields['version']} {fields['git_revision']}"


def _read_references(prefix, module):
    """``{name: (doc, names, nin) or None}``: what ``document`` reads of SciPy's
    ``prefix`` module (e.g. ``"scipy.special"``) for each public name of ``module``."""
    reference = sys.modules[prefix]
    table = {}
    for name in module.__all__:
        ref = getattr(reference, name, None)
        doc = getattr(ref, "__doc__", None) if callable(ref) else None
        if not doc:
            table[name] = None
            continue
        names = _signature_names(ref)
        table[name] = (doc, None if names is None else list(names), getattr(ref, "nin", None))
    return table


def _table_references(modules, path):
    """The namespaces of ``_Reference`` for ``modules`` from the table at ``path``, or
    None if it is not the installed SciPy's or misses a public name of a module."""
    try:
        with open(path, encoding="utf-8") as f:
            table = json.load(f)
    except (OSError, ValueError):
        return None
    if not (isinstance(table, dict) and table.get("scipy") is not None
            and table.get("scipy") == _installed_scipy()
            and all(isinstance(table.get(prefix), dict)
                    and set(module.__all__) <= set(table[prefix])
                    for prefix, module in modules.items())):
        return None
    return [types.SimpleNamespace(**{name: _Reference(*entry)
                                     for name, entry in table[prefix].items() if entry})
            for prefix in modules]


def cached_table_path():
    """Where an import writes the table of the installed SciPy when the packaged one is
    another SciPy's (None if SciPy's version cannot be read)."""
    version = _installed_scipy()
    if version is None:
        return None
    import zlib

    from .compiler.backend import cache_root
    return os.path.join(cache_root(), f"scipy_docs-{zlib.crc32(version.encode()):08x}.json")


def scipy_references(modules, path=_SCIPY_TABLE):
    """The references ``document`` reads for ``modules`` (``{"scipy.special":
    tangentia.scipy.special, ...}``), in that order: SciPy's modules when they are
    imported already, else the table's (``_table_references``; SciPy is not imported: the
    packaged table, or the one an earlier import wrote for the installed SciPy), else
    SciPy's modules, imported now (and then that table is written)."""
    cached = cached_table_path() if path == _SCIPY_TABLE else None
    tables = [t for t in (path, cached) if t is not None]
    if not all(prefix in sys.modules for prefix in modules):
        for table in tables:
            references = _table_references(modules, table)
            if references is not None:
                return references
        tables = []     # (neither is usable: read once)
    imported = [importlib.import_module(prefix) for prefix in modules]
    if cached is not None and all(_table_references(modules, t) is None for t in tables):
        _write_table(cached, {prefix: _read_references(prefix, module)
                              for prefix, module in modules.items()})
    return imported


def _write_table(path, references):
    """Write the table ``references`` of the installed SciPy at ``path``, atomically; a
    directory that cannot be written is left alone."""
    table = {"scipy": _installed_scipy(), **references}
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(table, f, indent=0, sort_keys=True, ensure_ascii=False)
            f.write("\n")
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def write_scipy_references(path=_SCIPY_TABLE):
    """Write the table of SciPy's references (``scipy_references``) from the installed
    SciPy, for ``tangentia.scipy.special`` and ``tangentia.scipy.linalg``."""
    import scipy.linalg
    import scipy.special  # noqa: F401

    from .scipy import linalg as tsl, special as sp
    table = {"scipy": _installed_scipy(),
             "scipy.special": _read_references("scipy.special", sp),
             "scipy.linalg": _read_references("scipy.linalg", tsl)}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(table, f, indent=0, sort_keys=True, ensure_ascii=False)
        f.write("\n")


# ---------------------------------------------------------------------------
# Functions with no NumPy twin (``tangentia.lax``, ``tangentia.random``,
# ``tangentia.scipy.stats.*``, ...): our summary, and an ``Args:`` entry for
# every argument the docstring does not name yet, described by its name.

_COMMON = {
    "x": "an array or scalar.",
    "y": "an array or scalar, broadcast against ``x``.",
    "operand": "the input array.",
    "operands": "a sequence of arrays.",
    "a": "the input array.",
    "array": "the input array.",
    "shape": "a tuple of ints: the shape of the result.",
    "dtype": "the dtype of the result (None: the default).",
    "axis": "an int: the axis along which the operation applies.",
    "axes": "a tuple of ints: the axes reduced.",
    "dimension": "an int: the dimension along which the operation applies.",
    "dimensions": "a tuple of ints: the dimensions concerned.",
    "reverse": "run from the end of the axis to its start.",
    "keepdims": "keep the reduced axes with size 1.",
    "where": "a boolean mask of the entries included (None: all).",
    "is_leaf": "a predicate: a subtree for which it is true is a leaf.",
    "tree": "a pytree (nested tuples, lists, dicts, None and registered nodes).",
    "function": "the function applied (``function(accumulated, leaf)`` for a reduction).",
    "initializer": "the initial accumulated value (default: the first leaf).",
    "backend": "accepted for JAX compatibility (there is one CPU backend).",
    "seed": "an integer seed.",
    "impl": "accepted for JAX compatibility; must be None.",
}

_NUMPY_ARGS = {
    "ary": "the array to split.",
    "indices_or_sections": "the number of equal sections, or the indices at which to split.",
    "initial": "the starting value of the reduction (needed for empty slices).",
    "reverse": "accumulate from the end of the axis to its start.",
}

_LAX_ARGS = {
    "window_strides": "the stride of the window in each spatial dimension.",
    "padding": "``'SAME'``, ``'VALID'`` or one ``(low, high)`` pair per spatial dimension.",
    "lhs_dilation": "the dilation of the input in each spatial dimension (None: 1).",
    "rhs_dilation": "the dilation of the kernel in each spatial dimension (None: 1).",
    "feature_group_count": "the number of groups the input features are split into.",
    "batch_group_count": "the number of groups the batch is split into.",
    "lhs_shape": "the shape of the input.",
    "rhs_shape": "the shape of the kernel.",
    "pads": "one ``(low, high)`` padding pair per spatial dimension.",
    "axis_name": "the name of a mapped axis (``vmap(..., axis_name=...)``).",
    "axis_index_groups": "groups of indices along the mapped axis (JAX's option; None: "
                         "one group).",
    "tiled": "concatenate the pieces along the axis instead of stacking them.",
    "indices_are_sorted": "a hint that the indices are sorted (JAX's option; results do "
                          "not depend on it).",
    "unique_indices": "a promise that the indices do not repeat (JAX's option, unchecked: "
                      "values do not depend on it; derivatives take the fast rules, and a "
                      "multiplying scatter gets a derivative in its updates).",
    "mode": "out-of-bounds indices: a ``GatherScatterMode`` or its name (``'clip'``, "
            "``'fill'``, ``'promise_in_bounds'``).",
    "window_dimensions": "the size of the window in each dimension.",
    "operand_shape": "the shape of the operand.",
    "base_dilation": "the dilation of the operand in each dimension.",
    "window_dilation": "the dilation of the window in each dimension.",
    "recall_target": "accepted for JAX compatibility (the result is exact here).",
    "reduction_input_size_override": "accepted for JAX compatibility.",
    "aggregate_to_topk": "accepted for JAX compatibility (the result is exact here).",
    "name": "the name of the composite operation (shown in programs).",
    "version": "the version of the composite operation.",
    "use_consistent_padding": "accepted for JAX compatibility.",
    "in_shape": "the spatial shape of the input.",
    "window_shape": "the spatial shape of the window.",
    "lhs_spec": "the input's dimensions in the order (batch, feature, spatial...).",
    "rhs_spec": "the kernel's dimensions in the order (out feature, in feature, spatial...).",
    "out_spec": "the output's dimensions in the order (batch, feature, spatial...).",
    "offset_dims": "the output dimensions that index into each gathered slice.",
    "collapsed_slice_dims": "the operand dimensions of size-1 slices left out of the output.",
    "start_index_map": "for each component of an index, the operand dimension it indexes.",
    "operand_batching_dims": "the operand dimensions that are batch dimensions.",
    "start_indices_batching_dims": "the index dimensions matching ``operand_batching_dims``.",
    "update_window_dims": "the dimensions of the updates that are window dimensions.",
    "inserted_window_dims": "the operand's size-1 window dimensions absent from the updates.",
    "scatter_dims_to_operand_dims": "for each component of an index, the operand dimension "
                                    "it indexes.",
    "scatter_indices_batching_dims": "the index dimensions matching ``operand_batching_dims``.",
    "b": "the second parameter (an array, broadcast with the others).",
    "n": "the order of the derivative (an integer array).",
    "q": "the shift of the Hurwitz zeta function (an array).",
    "out_sharding": "accepted only as None (one CPU device).",
    "shardings": "accepted for JAX compatibility (one CPU device).",
    "atol": "accepted for JAX compatibility; no effect here.",
    "rtol": "accepted for JAX compatibility; no effect here.",
    "ulps": "accepted for JAX compatibility; no effect here.",
    **{name: "accepted for JAX compatibility; no effect on the CPU." for name in (
        "lhs_precision_type", "rhs_precision_type", "accumulation_type",
        "lhs_component_count", "rhs_component_count", "num_primitive_operations",
        "allow_imprecise_accumulation")},
    "index": "a scalar integer index (traced or not).",
    "start_index": "the (clamped) start along ``axis``, a scalar integer.",
    "start_indices": "one start per dimension (scalar integers, clamped).",
    "slice_size": "the size of the slice along ``axis``.",
    "slice_sizes": "the size of the slice in each dimension (static ints).",
    "limit_index": "the end of the slice (excluded).",
    "limit_indices": "one end per dimension (excluded).",
    "stride": "the step of the slice.",
    "strides": "one step per dimension (None: 1).",
    "update": "the array written into ``operand``.",
    "new_sizes": "the new shape (same number of entries).",
    "permutation": "a permutation of the dimensions.",
    "lhs": "the left operand.",
    "rhs": "the right operand.",
    "precision": "accepted for JAX compatibility (float64 arithmetic on the CPU).",
    "preferred_element_type": "the dtype of the result (None: the operands' promoted dtype).",
    "dimension_numbers": "``((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))`` axes.",
    "pred": "a boolean array.",
    "min": "the lower bound (an array or scalar).",
    "max": "the upper bound (an array or scalar).",
    "weak_type": "whether the result is weakly typed (as a Python scalar).",
    "is_stable": "keep the order of equal keys.",
    "num_keys": "the number of leading operands used as sort keys.",
    "fill_value": "the value of every entry.",
    "fft_lengths": "the lengths of the transformed trailing axes.",
    "y": "an array or scalar of ``x``'s shape (or broadcastable).",
}

_LAX_SUMMARIES = {
    "broadcast_to": ("``x`` broadcast to ``shape`` (NumPy's broadcasting rules).", "an array of ``shape``."),
    "clamp": ("``x`` clipped elementwise to ``[min, max]``.", "an array of ``x``'s shape and dtype."),
    "concatenate": ("The arrays joined along an existing ``dimension``.", "the joined array."),
    "convert_element_type": ("``x`` cast to ``dtype`` (real to complex and back as NumPy's ``astype``); "
                             "its derivative is the cast of the tangent.", "an array of ``x``'s shape."),
    "cummax": ("The running maximum along ``axis``.", "an array of ``operand``'s shape."),
    "cummin": ("The running minimum along ``axis``.", "an array of ``operand``'s shape."),
    "cumprod": ("The running product along ``axis``.", "an array of ``operand``'s shape."),
    "cumsum": ("The running sum along ``axis``.", "an array of ``x``'s shape."),
    "dot": ("The matrix (or vector) product of ``lhs`` and ``rhs`` (``jax.lax.dot``).",
            "an array: the contraction of the last axis of ``lhs`` with the first of ``rhs``."),
    "dot_general": ("A general contraction with batch dimensions (``jax.lax.dot_general``).",
                    "an array: batch dimensions, then ``x``'s and ``y``'s free dimensions."),
    "dynamic_index_in_dim": ("The slice at a (traced) ``index`` along ``axis``.",
                             "the slice, with ``axis`` kept as size 1 if ``keepdims``."),
    "dynamic_slice_in_dim": ("``slice_size`` entries from a (traced) ``start_index`` along ``axis``.",
                             "an array of ``operand``'s rank."),
    "dynamic_update_index_in_dim": ("``operand`` with the slice at a (traced) ``index`` along ``axis`` "
                                    "replaced by ``update``.", "an array of ``operand``'s shape."),
    "dynamic_update_slice_in_dim": ("``operand`` with ``update`` written from a (traced) "
                                    "``start_index`` along ``axis``.",
                                    "an array of ``operand``'s shape."),
    "erf": ("The error function, elementwise.", "an array of ``x``'s shape."),
    "expand_dims": ("``array`` with size-1 dimensions inserted at ``dimensions``.", "the reshaped array."),
    "integer_pow": ("``x ** y`` for a static Python int ``y``, by repeated multiplication.",
                    "an array of ``x``'s shape and dtype."),
    "logistic": ("The logistic sigmoid ``1 / (1 + exp(-x))``, stable for any ``x``.",
                 "an array of ``x``'s shape."),
    "pow": ("``x ** y`` elementwise (real or complex ``y``).", "the broadcast array."),
    "reduce_max": ("The maximum over ``axes``.", "an array without the reduced axes."),
    "reduce_min": ("The minimum over ``axes``.", "an array without the reduced axes."),
    "reduce_prod": ("The product over ``axes``.", "an array without the reduced axes."),
    "reduce_sum": ("The sum over ``axes``.", "an array without the reduced axes."),
    "reshape": ("``x`` with the shape ``new_sizes`` (row-major order).", "the reshaped array."),
    "rsqrt": ("``1 / sqrt(x)``, elementwise.", "an array of ``x``'s shape."),
    "select": ("``x`` where ``pred`` is true, else ``y`` (``jax.lax.select``).",
               "an array of the common shape."),
    "slice": ("The static slice ``operand[start:limit:stride, ...]``.", "the slice."),
    "slice_in_dim": ("The static slice ``start_index:limit_index:stride`` along ``axis``.", "the slice."),
    "sort": ("``operand`` sorted along ``dimension`` (a tuple of operands: sorted by the first "
             "``num_keys``, the others permuted alike).", "the sorted array(s)."),
    "square": ("``x * x``, elementwise.", "an array of ``x``'s shape."),
    "squeeze": ("``array`` without its size-1 ``dimensions``.", "the reshaped array."),
    "stop_gradient": ("``x`` unchanged, with a zero derivative: differentiation does not flow "
                      "through it.", "``x``."),
    "transpose": ("``x`` with its dimensions permuted by ``permutation``.", "the transposed array."),
}

_SCIPY_LINALG_ARGS = {
    "c_and_lower": "``(c, lower)``: the Cholesky factor and whether it is lower triangular, "
                   "as ``cho_factor`` returns.",
    "lu_and_piv": "``(lu, piv)``: the LU factors and pivots, as ``lu_factor`` returns.",
    "l_and_u": "``(l, u)``: the numbers of nonzero lower and upper diagonals.",
}

_LAX_LINALG_ARGS = {
    "x": "a matrix (or a stack of matrices in the last two axes).",
    "symmetrize_input": "factorize ``(x + x^H) / 2`` instead of ``x``.",
    "lower": "use the lower triangle of ``x`` or ``a`` (else the upper).",
    "sort_eigenvalues": "accepted for JAX compatibility: the eigenvalues are always "
                        "ascending.",
    "subset_by_index": "only None is supported (all of them).",
    "implementation": "accepted for JAX compatibility (LAPACK is used).",
    "permutation_size": "the length of the permutation.",
    "pivoting": "only False is supported.",
    "full_matrices": "complete (square) factors; else reduced ones.",
    "use_magma": "accepted for JAX compatibility (no GPU).",
    "compute_uv": "return ``(u, s, vh)``; else only the singular values ``s``.",
    "algorithm": "accepted for JAX compatibility (LAPACK is used).",
    "transpose_a": "solve with the transpose of ``a``.",
    "conjugate_a": "solve with the complex conjugate of ``a``.",
    "unit_diagonal": "assume ``a`` has ones on its diagonal (its diagonal is not read).",
}

_NN_ARGS = {
    "query_seq_lengths": "the valid length of each query sequence (None: all).",
    "key_value_seq_lengths": "the valid length of each key/value sequence (None: all).",
    "implementation": "accepted for JAX compatibility (None or ``'xla'``).",
}

_TREE_ARGS = {
    "num_leaves": "the number of leaves.",
    "flatten_with_keys_func": "``flatten_with_keys(node) -> (((key, child), ...), aux)`` "
                              "(None: keys are the children's positions).",
    "flatten_func": "``flatten(node) -> (children, aux)``.",
    "unflatten_func": "``unflatten(aux, children) -> node``.",
    "data_fields": "the names of the fields that are children (arrays).",
    "meta_fields": "the names of the fields that are static auxiliary data.",
    "drop_fields": "the names of fields left out of the pytree.",
    "idx": "the position of the child in its sequence.",
    "typ": "a type.",
    "identity": "the identity element of the operation (returned for a tree without leaves).",
    "key": "the key of the child.",
    "name": "the attribute name of the child.",
}

_RANDOM_ARGS = {
    "key": "a PRNG key (from ``PRNGKey``, ``key``, ``split`` or ``fold_in``).",
    "keys": "a key or an array of keys.",
    "key_bits_array": "raw uint32 key data.",
    "shape": "the shape of the samples (a tuple of ints; for ``bernoulli``, "
             "``categorical``, ``truncated_normal`` and ``multivariate_normal``, None: "
             "the broadcast shape of the parameters).",
    "dtype": "the dtype of the samples (None: float64, int64 or uint64 as the function "
             "draws).",
    "independent": "permute each slice along the other axes independently.",
    "replace": "sample with replacement.",
    "p": "the probabilities of the entries of ``a`` (None: uniform).",
    "method": "the factorization of ``cov``: ``'cholesky'``, ``'eigh'`` or ``'svd'``.",
    "mode": "``'low'`` or ``'high'``: how many random bits make one sample (JAX's option).",
    "n": "the number of trials.",
    "unroll": "accepted for JAX compatibility.",
    "loc": "the location of the distribution.",
    "scale": "the scale of the distribution (positive).",
}

_STATS_SUMMARIES = {
    "pdf": "The probability density function of the {d} distribution at ``x``.",
    "logpdf": "The log of the probability density function of the {d} distribution at ``x``.",
    "pmf": "The probability mass function of the {d} distribution at ``k``.",
    "logpmf": "The log of the probability mass function of the {d} distribution at ``k``.",
    "cdf": "The cumulative distribution function of the {d} distribution.",
    "logcdf": "The log of the cumulative distribution function of the {d} distribution.",
    "sf": "The survival function (``1 - cdf``) of the {d} distribution.",
    "logsf": "The log of the survival function of the {d} distribution.",
    "ppf": "The percent point function (inverse of ``cdf``) of the {d} distribution.",
    "isf": "The inverse survival function of the {d} distribution.",
}

_STATS_ARGS = {
    "x": "the points at which the function is evaluated (an array, broadcast with the "
         "parameters).",
    "k": "the integer outcomes at which the function is evaluated.",
    "q": "probabilities in ``[0, 1]``.",
    "loc": "the location (shift) parameter.",
    "scale": "the scale parameter (positive).",
    "a": "the first shape parameter (positive).",
    "b": "the second shape parameter (positive).",
    "df": "the degrees of freedom (positive).",
    "mu": "the mean (positive).",
    "n": "the number of trials.",
    "p": "the probability of success.",
    "alpha": "the concentration parameters (positive), along the last axis.",
    "mean": "the mean vector, along the last axis.",
    "cov": "the covariance matrix (symmetric positive definite), in the last two axes.",
    "allow_singular": "accept a singular ``cov`` (as SciPy's option).",
}


def _is_word_char(c):
    return c == "_" or c.isalnum()    # (``\w`` of ``re``)


def _mentions(doc, name):
    r"""Whether ``doc`` has ``name`` as a word (``(?<![\w.])name(?!\w)``, without
    compiling a pattern per argument name at import)."""
    end = len(name)
    i = doc.find(name)
    while i >= 0:
        before, after = doc[i - 1:i], doc[i + end:i + end + 1]
        if not (before and (before == "." or _is_word_char(before))) \
                and not (after and _is_word_char(after)):
            return True
        i = doc.find(name, i + 1)
    return False


def _unnamed(fn, doc):
    """The parameters of ``fn`` that ``doc`` does not mention as a word."""
    return [name for name in _signature_names(fn) or []
            if name not in ("args", "kwargs", "self") and not _mentions(doc, name)]


def complete(fn, arguments, summary=None, returns=None, replace=False):
    """Give ``fn`` a docstring that names every argument: ``summary`` when it has
    none (or ``replace``), then an ``Args:`` entry (``Other Parameters:`` when it has an
    ``Args:`` section) for each argument it does not mention, described by
    ``arguments[name]`` (else ``_COMMON[name]``), and ``returns`` as a
    ``Returns:`` section when it has none."""
    missing = _unnamed(fn, fn.__doc__ or "")
    if not (missing or summary and (replace or not fn.__doc__) or returns):
        return
    doc = _cleandoc(fn.__doc__ or "")
    if summary and (replace or not doc):
        doc = summary
        missing = _unnamed(fn, doc)
    entries = []
    for name in missing:
        text = arguments.get(name, _COMMON.get(name))
        if text is not None:
            entries.append(f"  {name}: {text}")
    if entries:
        title = "Other Parameters:" if re.search(r"^Args:\s*$", doc, re.M) else "Args:"
        doc += f"\n\n{title}\n" + "\n".join(entries)
    if returns and not re.search(r"^Returns:\s*$", doc, re.M):
        doc += f"\n\nReturns:\n  {returns[0].upper() + returns[1:]}"
    fn.__doc__ = doc + "\n"


def document_lax(lax):
    """Docstrings of ``tangentia.lax``'s public twins: a short summary where the
    function has none, and every argument and the result described."""
    elementwise = re.compile(r"^Elementwise (\w+) \(NumPy's (\w+)\)\.$")
    for name in lax.__all__:
        fn = getattr(lax, name, None)
        if not _documentable(fn):
            continue
        summary, returns = _LAX_SUMMARIES.get(name, (None, None))
        m = elementwise.match(_cleandoc(fn.__doc__ or ""))
        if m:
            summary = (f"Elementwise ``{name}`` (``jax.lax.{name}``): the same values as "
                       f"NumPy's ``{m.group(2)}``.")
            returns = "an array of the inputs' broadcast shape."
        complete(fn, _LAX_ARGS, summary, returns, replace=bool(m))


def _documentable(obj):
    """Our functions, and our classes other than enums (whose signature is
    Enum's own)."""
    return isinstance(obj, types.FunctionType) or (
        isinstance(obj, type) and not issubclass(obj, enum.Enum)
        and obj.__module__.startswith("tangentia"))


def document_by_arguments(module, arguments, returns=None):
    """Every public function and class of ``module`` (its ``__all__``, else the
    ones it defines) names all its arguments."""
    names = getattr(module, "__all__", None) or [
        n for n, v in vars(module).items()
        if not n.startswith("_") and getattr(v, "__module__", None) == module.__name__]
    for name in names:
        fn = getattr(module, name, None)
        if _documentable(fn):
            complete(fn, arguments, returns=returns)


def document_stats(distribution, label):
    """The functions of one ``tangentia.scipy.stats`` module (``label``: the
    distribution's name in prose)."""
    for name, fn in vars(distribution).items():
        if isinstance(fn, types.FunctionType) and name in _STATS_SUMMARIES \
                and fn.__module__ == distribution.__name__:
            complete(fn, _STATS_ARGS, _STATS_SUMMARIES[name].format(d=label),
                     "an array of the broadcast shape of the arguments.")


_STATS_LABELS = {
    "bernoulli": "Bernoulli", "beta": "beta", "binom": "binomial", "cauchy": "Cauchy",
    "chi2": "chi-squared", "dirichlet": "Dirichlet", "expon": "exponential",
    "gamma": "gamma", "laplace": "Laplace", "logistic": "logistic",
    "multivariate_normal": "multivariate normal", "norm": "normal", "poisson": "Poisson",
    "t": "Student's t", "uniform": "uniform",
}
