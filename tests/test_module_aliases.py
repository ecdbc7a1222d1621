"""Module aliases (issue 25, item 4): an alias given to one of the package's modules
means that module everywhere in the package (``_S`` was ``primitives.structural`` in
nine modules and ``primitives.sorting`` in one), and no other module, inside the
package or out; and each of the package's modules goes by one alias (``X``, ``_I`` and
``I`` were all ``primitives.indexing``), a private ``_E`` counting as ``E``."""
from __future__ import annotations

import ast
import collections
import importlib.util
from pathlib import Path

_SPEC = importlib.util.find_spec("tangentia")
assert _SPEC is not None and _SPEC.origin is not None
ROOT = Path(_SPEC.origin).resolve().parent

# Aliases that also name a module outside the package, each with its reason (none: native.py's
# numba.core.errors, once NE as lax's tnp._elementwise, is numba_errors).
OUTSIDE: dict[str, str] = {}


def _aliases(source: str, package: list[str]) -> list[tuple[str, str, int]]:
    """(module, alias, line) of every ``import m as a`` / ``from p import m as a`` whose
    alias differs from the name (a relative import resolved against ``package``)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            out += [(f"{mod}.{a.name}", a.asname, node.lineno) for a in node.names
                    if a.asname and a.asname != a.name]
        elif isinstance(node, ast.Import):
            out += [(a.name, a.asname, node.lineno) for a in node.names
                    if a.asname and a.asname != a.name.rsplit(".", 1)[-1]]
    return out


def _package_aliases() -> dict[str, dict[str, list[str]]]:
    """{alias: {module: [where]}} over the package."""
    found: dict[str, dict[str, list[str]]] = collections.defaultdict(
        lambda: collections.defaultdict(list))
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        package = list(rel.parts[:-1])
        for mod, alias, line in _aliases(path.read_text(), package):
            found[alias][mod].append(f"{rel.as_posix()}.py:{line}")
    return found


def test_the_scan_resolves_aliases():
    src = ("from ..primitives import structural as _S\nimport numpy.linalg as nla\n"
           "from . import sorting as SO, misc\nimport numpy as np\n")
    assert _aliases(src, ["tangentia", "numpy"]) == [
        ("tangentia.primitives.structural", "_S", 1), ("numpy.linalg", "nla", 2),
        ("tangentia.numpy.sorting", "SO", 3), ("numpy", "np", 4)]
    # the old clash is found
    clash = {"S": {"tangentia.primitives.structural": ["a"], "tangentia.primitives.sorting": ["b"]}}
    assert _clashes(clash) == {"S": ["tangentia.primitives.sorting",
                                     "tangentia.primitives.structural"]}


def _clashes(found):
    out = {}
    for alias, mods in found.items():
        ours = sorted(m for m in mods if m.startswith("tangentia."))
        if not ours:
            continue
        if len(ours) > 1 or (len(mods) > 1 and alias not in OUTSIDE):
            out[alias] = sorted(mods)
    return out


def test_an_alias_of_a_package_module_means_that_module_only():
    found = _package_aliases()
    clashes = _clashes(found)
    assert not clashes, "aliases meaning two modules:\n" + "\n".join(
        f"{a}: " + "; ".join(f"{m} ({', '.join(found[a][m])})" for m in ms)
        for a, ms in clashes.items())
    assert len(found) > 10  # (the scan is not vacuous)


# (file, alias) uses of a module's second alias still to rename, each with its reason: a stale
# entry fails test_each_package_module_goes_by_one_alias, so the list only shrinks.
PENDING: dict[tuple[str, str], str] = {}


def _spelling(alias: str) -> str:
    """The alias with one leading underscore dropped: a module keeps ``E`` private as ``_E``."""
    return alias[1:] if alias.startswith("_") else alias


def _several_aliases(found: dict[str, dict[str, list[str]]],
                     pending: frozenset[tuple[str, str]] = frozenset()
                     ) -> dict[str, dict[str, list[str]]]:
    """{module: {alias: [where]}} of the package's modules that go by more than one spelling,
    leaving out the ``pending`` (file, alias) uses."""
    by_module: dict[str, dict[str, list[str]]] = collections.defaultdict(dict)
    for alias, mods in found.items():
        for mod, where in mods.items():
            kept = [w for w in where if (w.rsplit(":", 1)[0], alias) not in pending]
            if mod.startswith("tangentia.") and kept:
                by_module[mod][alias] = kept
    return {mod: aliases for mod, aliases in sorted(by_module.items())
            if len({_spelling(a) for a in aliases}) > 1}


def test_the_one_alias_check_can_fail():
    found = {"E": {"tangentia.primitives.elementwise": ["a.py:1"]},
             "_E": {"tangentia.primitives.elementwise": ["b.py:2"]},
             "X": {"tangentia.primitives.indexing": ["c.py:3"]},
             "_I": {"tangentia.primitives.indexing": ["d.py:4"]},
             "__I": {"tangentia.primitives.sorting": ["e.py:5"]},
             "_SO": {"tangentia.primitives.sorting": ["f.py:6"]},
             "nla": {"numpy.linalg": ["g.py:7"]}, "la": {"numpy.linalg": ["h.py:8"]}}
    # E/_E is one spelling, X/_I two; one underscore only (__I is _I, not SO); outside modules
    # are not the package's to name
    assert _several_aliases(found) == {
        "tangentia.primitives.indexing": {"X": ["c.py:3"], "_I": ["d.py:4"]},
        "tangentia.primitives.sorting": {"__I": ["e.py:5"], "_SO": ["f.py:6"]}}
    assert list(_several_aliases(found, frozenset({("c.py", "X"), ("e.py", "__I")}))) == []


def test_each_package_module_goes_by_one_alias():
    found = _package_aliases()
    several = _several_aliases(found, frozenset(PENDING))
    assert not several, "package modules with several aliases:\n" + "\n".join(
        f"{mod}: " + "; ".join(f"{a} ({', '.join(w)})" for a, w in aliases.items())
        for mod, aliases in several.items())
    used = {(w.rsplit(":", 1)[0], alias) for alias, mods in found.items()
            for where in mods.values() for w in where}
    stale = sorted(set(PENDING) - used)
    assert not stale, f"PENDING entries no longer used (remove them): {stale}"
    # not vacuous: many package modules are aliased, several both as E and _E
    ours = {mod for mods in found.values() for mod in mods if mod.startswith("tangentia.")}
    assert len(ours) > 20
    both = {mod for mod in ours if any(mod in found.get(a, {}) and mod in found.get("_" + a, {})
                                       for a in found)}
    assert len(both) >= 3
