"""Architecture checks: the package's layers and its primitives' rules.

* ``test_import_graph_is_a_dag``: the modules of ``tangentia`` import each
  other without cycles, counting every import statement (also those inside
  functions: a lazy import that dodges a cycle is still a cycle).
* ``test_imports_only_go_down_the_layers``: core -> interpreters ->
  primitives -> compiler backends -> api -> numpy/lax -> library.
* ``test_every_primitive_has_its_rules``: every ``Primitive`` defined in the
  package has the rules its kind requires, or a stated exemption.  A new
  primitive fails here, naming what it lacks, rather than at a user's call
  with ``NotImplementedError``.
"""
from __future__ import annotations

import ast
import fnmatch
import functools
import importlib
import importlib.util
import pkgutil
from pathlib import Path

import numpy as np
import pytest

PACKAGE = "tangentia"
# Located without importing it: the graph is read from the source files.
_SPEC = importlib.util.find_spec(PACKAGE)
assert _SPEC is not None and _SPEC.origin is not None, f"{PACKAGE} is not installed"
ROOT = Path(_SPEC.origin).resolve().parent


# ---------------------------------------------------------------------------
# The module import graph


def _module_files():
    """``{module name: path}`` for every ``.py`` file of the package."""
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = [PACKAGE, *rel.parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_package(name, path):
    return path.name == "__init__.py"


def _imports(name, path, modules, unresolved=None):
    """The package modules that module ``name`` imports, anywhere in its body.

    ``import a.b`` and ``from a.b import c`` import ``a.b``; ``from a import b``
    where ``a.b`` is a module imports ``a.b`` (otherwise ``b`` is a name
    defined in ``a``, and ``a`` -- its ``__init__`` if a package -- is
    imported).  Relative imports are resolved against the module's package.
    Parent packages whose ``__init__`` Python runs first are not counted as
    edges: running them is a consequence of the package layout, not of the
    importing module's code (``tangentia/__init__`` imports everything).
    Imports of ``tangentia.*`` modules that do not exist, or of names a module
    does not define, are appended to ``unresolved`` as ``(module, line, what)``,
    unless the import is optional (see ``_optional_imports``).
    """
    package = name if _is_package(name, path) else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(), filename=str(path))
    optional = _optional_imports(tree)
    if unresolved is not None:
        record, unresolved = unresolved, []
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    found.add(alias.name)
                elif alias.name.startswith(PACKAGE) and unresolved is not None:
                    unresolved.append((name, node.lineno, alias.name))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith(PACKAGE):
                continue
            if target not in modules:
                if unresolved is not None:
                    unresolved.append((name, node.lineno, target))
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in modules:
                    found.add(sub)
                    continue
                found.add(target)
                defined, open_ended = _top_level_names(modules[target])
                if alias.name not in defined and not open_ended and unresolved is not None:
                    unresolved.append((name, node.lineno, f"{alias.name} from {target}"))
    found.discard(name)
    if unresolved is not None:
        record.extend(u for u, node in zip(unresolved, _nodes_of(tree, unresolved))
                      if id(node) not in optional)
    return found


def _nodes_of(tree, unresolved):
    """The import statements of ``tree`` at the lines of ``unresolved``."""
    by_line = {n.lineno: n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))}
    return [by_line[line] for _, line, _ in unresolved]


def _optional_imports(tree):
    """ids of import statements that are allowed to fail: inside a ``try``
    catching ImportError, or an ``if`` that tests ``find_spec(...)``."""
    out = set()
    for node in ast.walk(tree):
        guarded = []
        if isinstance(node, ast.Try) and any(
                h.type is None or "ImportError" in ast.unparse(h.type) for h in node.handlers):
            guarded = node.body
        elif isinstance(node, ast.If) and "find_spec" in ast.unparse(node.test):
            guarded = node.body
        for stmt in guarded:
            out.update(id(n) for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom)))
    return out


@functools.lru_cache(maxsize=None)
def _top_level_names(path):
    """``(names a module binds at its top level, whether it may bind others)``
    -- the latter when it star-imports or defines a module ``__getattr__``."""
    names, open_ended = set(), False
    stack = list(ast.parse(path.read_text(), filename=str(path)).body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            open_ended |= node.name == "__getattr__"
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    open_ended = True
                else:
                    names.add(alias.asname or alias.name.partition(".")[0])
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With)):
            targets = (node.targets if isinstance(node, ast.Assign) else
                       [node.target] if not isinstance(node, ast.With) else
                       [i.optional_vars for i in node.items if i.optional_vars is not None])
            for t in targets:
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
            if isinstance(node, (ast.For, ast.With)):
                stack.extend(node.body)
        elif isinstance(node, (ast.If, ast.Try, ast.While)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                stack.extend(getattr(node, field, []))
        elif isinstance(node, ast.ExceptHandler):
            stack.extend(node.body)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.NamedExpr):
            names.add(node.value.target.id)
    return names, open_ended


@functools.lru_cache(maxsize=None)
def _graph_and_unresolved():
    modules = _module_files()
    unresolved = []
    graph = {name: _imports(name, path, modules, unresolved) for name, path in modules.items()}
    return graph, tuple(unresolved)


def import_graph():
    """``{module: set of the package modules it imports}`` (read, not cached: copy)."""
    return {k: set(v) for k, v in _graph_and_unresolved()[0].items()}


def find_cycles(graph):
    """The import cycles of ``graph``, each as a path ``[m0, m1, ..., m0]``.

    For every strongly connected component with more than one module (or a
    module importing itself), a shortest cycle through each of its modules,
    without repeating a cycle already listed (rotations are the same cycle).
    """
    index, low, stack, on_stack, comps = {}, {}, [], set(), []
    counter = [0]

    def strongconnect(v):          # Tarjan's algorithm
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(set(comp))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    cycles, seen = [], set()
    for comp in comps:
        if len(comp) == 1 and next(iter(comp)) not in graph[next(iter(comp))]:
            continue
        for start in sorted(comp):
            cycle = _shortest_cycle(graph, comp, start)
            key = frozenset(zip(cycle, cycle[1:]))
            if key not in seen:
                seen.add(key)
                cycles.append(cycle)
    return sorted(cycles)


def _shortest_cycle(graph, comp, start):
    """A shortest cycle through ``start`` inside the component ``comp``."""
    prev = {start: None}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return list(reversed(path)) + [start]
                if w in comp and w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no cycle through {start} in {sorted(comp)}")


def test_find_cycles_reports_each_cycle_as_a_path():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "b"}, "d": {"d"}, "e": {"a"}}
    assert find_cycles(graph) == [["a", "b", "c", "a"], ["b", "c", "b"], ["d", "d"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_import_graph_sees_relative_lazy_and_submodule_imports():
    graph = import_graph()
    # ``from .. import core, dtypes`` in a subpackage: two submodules.
    assert {"tangentia.core", "tangentia.dtypes"} <= graph["tangentia.interpreters.ad"]
    # ``from . import primitives`` in the package's __init__: the subpackage.
    assert "tangentia.primitives" in graph["tangentia"]
    # ``from .elementwise import add, ...``: the module, not its names.
    assert "tangentia.primitives.elementwise" in graph["tangentia.primitives.special"]


def test_every_import_of_the_package_names_a_module():
    unresolved = _graph_and_unresolved()[1]
    assert not unresolved, "imports of tangentia modules or names that do not exist:\n" + "\n".join(
        f"  {mod} line {line}: {target}" for mod, line, target in unresolved)


def test_import_graph_is_a_dag():
    cycles = find_cycles(import_graph())
    assert not cycles, "import cycles between tangentia modules:\n" + "\n".join(
        "  " + " -> ".join(c) for c in cycles)


# ---------------------------------------------------------------------------
# The layers: a module imports only modules of its own layer or lower ones

LAYERS = [   # lowest first; fnmatch patterns of module names
    ("core", ["tangentia.core", "tangentia.dtypes", "tangentia.tree_util", "tangentia.typing",
              "tangentia._messages", "tangentia._gc",
              "tangentia._traceback_util", "tangentia._array", "tangentia.compiler",
              "tangentia.compiler.backend"]),
    ("interpreters", ["tangentia.interpreters", "tangentia.interpreters.*"]),
    ("primitives", ["tangentia.primitives", "tangentia.primitives.*",
                    "tangentia.custom_derivatives", "tangentia.custom_derivatives.*"]),
    ("compiler backends", ["tangentia.compiler.numpy_backend", "tangentia.compiler.passes",
                           "tangentia.compiler.numba_*"]),
    ("api", ["tangentia.api", "tangentia.api.*"]),
    ("numpy/lax API", ["tangentia.numpy", "tangentia.numpy.*", "tangentia.lax",
                       "tangentia.lax.*"]),
    ("library", ["*"]),     # scipy, nn, random, experimental, debug, distributed, the package
]

# Imports that go up a layer, each with its reason; remove an entry once fixed.
UPWARD_IMPORTS: dict[tuple[str, str], str] = {}


def layer_of(module):
    for i, (_, patterns) in enumerate(LAYERS):
        if any(fnmatch.fnmatchcase(module, p) for p in patterns):
            return i
    raise AssertionError(f"{module} matches no layer")


def test_layers_are_assigned_as_documented():
    names = [name for name, _ in LAYERS]
    assert layer_of("tangentia.compiler.backend") == names.index("core")
    assert layer_of("tangentia.interpreters.base_ops") == names.index("interpreters")
    assert layer_of("tangentia.custom_derivatives") == names.index("primitives")
    assert layer_of("tangentia.custom_derivatives._vjp") == names.index("primitives")
    assert layer_of("tangentia.compiler.numba_backend") == names.index("compiler backends")
    assert layer_of("tangentia.numpy.linalg") == names.index("numpy/lax API")
    assert layer_of("tangentia.scipy.special") == names.index("library")


def test_imports_only_go_down_the_layers():
    graph = import_graph()
    names = [name for name, _ in LAYERS]
    upward = sorted((m, d) for m, deps in graph.items() for d in deps
                    if layer_of(d) > layer_of(m))
    unexplained = [f"  {m} ({names[layer_of(m)]}) imports {d} ({names[layer_of(d)]})"
                   for m, d in upward if (m, d) not in UPWARD_IMPORTS]
    assert not unexplained, "imports that go up the layers:\n" + "\n".join(unexplained)
    stale = sorted(set(UPWARD_IMPORTS) - set(upward))
    assert not stale, f"UPWARD_IMPORTS lists imports that no longer go up (remove them): {stale}"


# ---------------------------------------------------------------------------
# Every primitive has the rules its kind requires

# Rules every primitive with operands needs: evaluation, staging (shape rule),
# forward-mode differentiation (a zero JVP is a rule too) and batching.
BASE_RULES = ("impl", "abstract_eval", "jvp", "batch")
# Linear primitives, and primitives whose programs may be linear (calls and
# control flow), are transposed by reverse mode.
RULES = {
    "elementwise": BASE_RULES,                      # NumPy ufuncs (found by their impl)
    "linear elementwise": BASE_RULES + ("transpose",),
    "structural": BASE_RULES + ("transpose",),      # data movement, all linear
    "linear": BASE_RULES + ("transpose",),          # contractions, linear solves, ...
    "reduction": BASE_RULES,
    "nonlinear": BASE_RULES,                        # factorizations, sorts, scans of products
    "nondifferentiable": BASE_RULES,                # integer/boolean outputs: a zero JVP
    "random": BASE_RULES,                           # integer bits: a zero JVP
    "effectful": BASE_RULES + ("transpose",),       # must also set has_effects
    "callback": BASE_RULES,                         # pure callbacks: a jvp rule that raises
    "call": BASE_RULES + ("transpose",),
    "control flow": BASE_RULES + ("transpose", "partial_eval"),
    "custom call": (),                              # interpreters' process_<name> methods
    "custom dce": BASE_RULES,
}

# The kind of every primitive not backed by a NumPy ufunc (those are
# "elementwise", or "linear elementwise" when listed here).  A new primitive
# must be added here: its kind says which rules it needs.
KINDS = {
    # not ufuncs: scipy's polygamma and zeta, NumPy's frexp split in two, gammainc's d/da
    "elementwise": {"polygamma", "zeta", "frexp_mantissa", "frexp_exponent", "igamma_grad_a",
                    "fresnel_s", "fresnel_c", "sici_si", "sici_ci", "sph_harm_y",
                    "max", "min",    # (NumPy's ufunc, plus JAX's rule for complex operands)
                    "sign", "pow", "rem", "floor_divide", "nextafter",   # (NumPy's ufunc,
                    # with JAX's values at signed zeros and special values: primitives.*)
                    "lgamma",        # (SciPy's gammaln, +inf at -inf as JAX's)
                    "digamma",       # (SciPy's psi, exact right of a pole as JAX's)
                    "log_gammaincc", "log_gammaincc_grad_a", "gamma_hazard"},  # (log-space Q)
    "linear elementwise": {"add", "sub", "neg", "mul", "div", "select", "add_any", "real",
                           "imag", "conj", "complex"},
    "structural": {"reshape", "transpose", "broadcast_to", "convert_element_type",
                   "concatenate", "getitem", "scatter", "name"},
    "linear": {"reduce_sum", "cumsum", "dot_general", "einsum", "triangular_solve",
               "lu_solve", "solve", "expm_frechet", "fft", "conv_general_dilated",
               "window_reduce", "psum", "all_gather", "psum_scatter", "ppermute",
               "all_to_all", "reduce_precision"},
    "reduction": {"reduce_max", "reduce_min", "reduce_prod"},
    "nonlinear": {"integer_pow", "cumprod", "cummax", "cummin", "sort", "lu", "inv", "det",
                  "pmax", "pmin", "slogdet", "cholesky", "eigh", "eigvalsh", "qr", "svd", "expm"},
    "nondifferentiable": {"argmax", "argmin", "argsort", "searchsorted", "reduce_and",
                          "reduce_or", "lu_pivots_to_permutation", "stop_gradient",
                          "window_argmax", "axis_index", "bitcast_convert_type", "reduce_xor"},
    "random": {"random_bits", "random_gamma", "random_wrap", "random_unwrap"},
    "callback": {"pure_callback"},
    "effectful": {"debug_print", "debug_callback"},
    "call": {"jit", "checkpoint", "custom_linear_solve", "custom_lin"},
    "control flow": {"cond", "while", "scan"},
    "custom call": {"custom_jvp_call", "custom_vjp_call", "custom_vmap_call"},
    # a call whose jvp/batch rules transform its program (not linear: no transpose)
    "custom dce": {"custom_dce_call"},
}

# Rules a primitive's kind requires that it deliberately lacks.
EXEMPT: dict[tuple[str, str], str] = {}

# Not imported to look for primitives: running it runs the demo.  It defines
# none (checked below from its source).
NOT_IMPORTED = {"tangentia.__main__": "the demo script (`python -m tangentia`)"}


@functools.lru_cache(maxsize=None)
def _package_modules():
    import tangentia
    names = []
    for info in pkgutil.walk_packages(tangentia.__path__, PACKAGE + "."):
        if info.name not in NOT_IMPORTED:
            names.append(info.name)
    return [tangentia] + [importlib.import_module(n) for n in sorted(names)]


@functools.lru_cache(maxsize=None)
def all_primitives():
    """``{name: (primitive, [where it is found, as module.attribute])}`` for every
    ``Primitive`` that is a module-level attribute of a module of the package."""
    from tangentia import core
    found = {}
    for mod in _package_modules():
        for attr, value in vars(mod).items():
            if isinstance(value, core.Primitive):
                found.setdefault(id(value), (value, []))[1].append(f"{mod.__name__}.{attr}")
    by_name = {}
    for prim, where in found.values():
        other = by_name.get(prim.name)
        assert other is None, (f"two primitives are named {prim.name!r}: {other[1]} and {where}; "
                               "primitive names must be unique")
        by_name[prim.name] = (prim, where)
    return by_name


def kind_of(prim):
    kinds = [k for k, names in KINDS.items() if prim.name in names]
    if kinds:
        return kinds[0]
    from tangentia.primitives.special import _SciPyUfunc   # (a SciPy ufunc, imported at first use)
    return "elementwise" if isinstance(prim.impl, (np.ufunc, _SciPyUfunc)) else None


def rule_of(prim, rule):
    """``prim``'s rule named ``rule``: an attribute (``impl``, ``abstract_eval``), or an
    entry of its interpreter's table (differentiation's, batching's, partial evaluation's)."""
    from tangentia.interpreters import ad, batching
    from tangentia.interpreters import partial_eval as pe
    tables = {"jvp": ad.primitive_jvps, "transpose": ad.primitive_transposes,
              "batch": batching.primitive_batchers,
              "partial_eval": pe.custom_partial_eval_rules}
    if rule in tables:
        return tables[rule].get(prim)
    return getattr(prim, rule)


def missing_rules(prim, kind):
    """The rules ``kind`` requires that ``prim`` lacks (exemptions not applied)."""
    missing = [r for r in RULES[kind] if rule_of(prim, r) is None]
    if kind == "effectful" and not prim.has_effects:
        missing.append("has_effects")
    return missing


def _trace_classes():
    from tangentia import core
    classes = set()
    for mod in _package_modules():
        for value in vars(mod).values():
            if isinstance(value, type) and issubclass(value, core.Trace) and value is not core.Trace:
                classes.add(value)
    return sorted(classes, key=lambda c: f"{c.__module__}.{c.__qualname__}")


def missing_custom_call_rules(prim, trace_classes):
    """A custom-call primitive's meaning is chosen by the interpreter: it binds
    through ``Trace.process_<name>``, which every interpreter must implement
    (not inherit the base class's error) -- or, in the older form, through a
    ``rules`` table keyed by trace class, which must cover every interpreter.
    A custom call that binds as an ordinary primitive needs a call's rules."""
    from tangentia import core
    method = f"process_{prim.name}"
    if type(prim).bind is not core.Primitive.bind and hasattr(core.Trace, method):
        base = getattr(core.Trace, method)
        return [f"{cls.__module__}.{cls.__qualname__}.{method}" for cls in trace_classes
                if getattr(cls, method) is base]
    table = getattr(prim, "rules", None)
    if type(prim).bind is not core.Primitive.bind and isinstance(table, dict):
        return [f"a rule for {cls.__module__}.{cls.__qualname__}" for cls in trace_classes
                if cls not in table]
    return missing_rules(prim, "call")


def test_missing_rules_are_found(monkeypatch):
    from tangentia.core import Primitive
    from tangentia.interpreters import ad
    p = Primitive("unfinished")
    p.impl = np.negative
    p.abstract_eval = lambda x: x
    monkeypatch.setitem(ad.primitive_jvps, p, lambda primals, tangents: None)
    assert kind_of(p) == "elementwise"
    assert missing_rules(p, "elementwise") == ["batch"]
    assert missing_rules(p, "linear") == ["batch", "transpose"]
    assert missing_rules(p, "effectful") == ["batch", "transpose", "has_effects"]


def test_primitives_are_found_everywhere():
    prims = all_primitives()
    assert len(prims) > 100
    for name in ("add_any", "concatenate", "reshape", "sin", "erf", "cond", "debug_print",
                 "random_bits", "custom_jvp_call", "lu"):
        assert name in prims, name
    for mod, why in NOT_IMPORTED.items():
        path = _module_files()[mod]
        assert "Primitive(" not in path.read_text(), f"{mod} ({why}) defines a primitive"


def test_the_registry_lists_every_primitive():
    """``core.registered_primitives()`` (what the backends and the other tests
    read) holds every primitive a module of the package defines."""
    from tangentia import core
    prims = all_primitives()   # (imports every module of the package)
    registered = {id(p) for p in core.registered_primitives()}
    missing = sorted(n for n, (p, _) in prims.items() if id(p) not in registered)
    assert not missing, f"primitives missing from core.registered_primitives(): {missing}"


def test_every_primitive_has_a_kind():
    prims = all_primitives()
    unknown = sorted(n for n, (p, _) in prims.items() if kind_of(p) is None)
    assert not unknown, (
        f"primitives without a kind: {unknown}; add each to KINDS in {__file__} (its kind "
        "says which rules it must have)")
    listed = set().union(*KINDS.values())
    stale = sorted(listed - set(prims))
    assert not stale, f"KINDS lists primitives that do not exist: {stale}"
    twice = sorted(n for n in listed if sum(n in names for names in KINDS.values()) > 1)
    assert not twice, f"primitives listed under two kinds in KINDS: {twice}"


def test_every_primitive_has_its_rules():
    prims = all_primitives()
    traces = _trace_classes()
    problems = []
    for name, (prim, where) in sorted(prims.items()):
        kind = kind_of(prim)
        if kind is None:
            continue                                    # reported by the test above
        if kind == "custom call":
            missing = missing_custom_call_rules(prim, traces)
        else:
            missing = missing_rules(prim, kind)
        missing = [r for r in missing if (name, r) not in EXEMPT]
        if missing:
            problems.append(f"  {name} ({kind}, {where[0]}): no {', '.join(missing)}")
    assert not problems, (
        "primitives missing rules their kind requires (add the rule, or an entry with a "
        "reason to EXEMPT):\n" + "\n".join(problems))


def test_exemptions_are_still_needed():
    prims = all_primitives()
    traces = _trace_classes()
    for (name, rule), reason in EXEMPT.items():
        assert reason, f"exemption ({name!r}, {rule!r}) has no reason"
        assert name in prims, f"EXEMPT names a primitive that does not exist: {name!r}"
        prim = prims[name][0]
        kind = kind_of(prim)
        missing = (missing_custom_call_rules(prim, traces) if kind == "custom call"
                   else missing_rules(prim, kind))
        assert rule in missing, (f"EXEMPT excuses {name!r} from {rule!r}, which it has or its "
                                 f"kind ({kind}) does not require: remove the exemption")


def test_a_missing_rule_fails_the_check(monkeypatch):
    from tangentia.interpreters import ad, batching
    from tangentia.primitives import elementwise, structural
    monkeypatch.delitem(batching.primitive_batchers, elementwise.sin_p)
    monkeypatch.delitem(ad.primitive_transposes, structural.concatenate_p)
    with pytest.raises(AssertionError, match=r"(?s)concatenate \(structural, [^)]*\): no "
                                             r"transpose.*sin \(elementwise, [^)]*\): no batch"):
        test_every_primitive_has_its_rules()


def test_an_interpreter_without_a_custom_call_method_fails_the_check(monkeypatch):
    from tangentia import core
    from tangentia.interpreters.batching import BatchTrace
    if "process_custom_jvp_call" not in vars(BatchTrace):
        pytest.skip("custom calls bind as ordinary primitives in this version (no "
                    "Trace.process_custom_jvp_call methods)")
    monkeypatch.delattr(BatchTrace, "process_custom_jvp_call")
    assert BatchTrace.process_custom_jvp_call is core.Trace.process_custom_jvp_call
    with pytest.raises(AssertionError, match=r"custom_jvp_call \(custom call, [^)]*\): no "
                                             r"tangentia.interpreters.batching.BatchTrace"):
        test_every_primitive_has_its_rules()


# ---------------------------------------------------------------------------
# Rules are written with primitive functions, not with the NumPy API
#
# The primitive layer sits below ``tangentia.numpy``: a rule that applies a
# Tracer operator (``x * y``, ``x[i]``, ``x.T``), which ``tangentia.numpy``
# attaches to ``Tracer``, depends on the layer above.  Each case below is a
# function made of primitive functions only; it is differentiated and batched
# with the interpreters directly while every Tracer attribute defined by
# ``tangentia.numpy`` raises, and the results are checked against finite
# differences.


def _rule_cases():
    from tangentia.primitives import contraction as C
    from tangentia.primitives import elementwise as E
    from tangentia.primitives import indexing as I
    from tangentia.primitives import linalg as L
    from tangentia.primitives import misc, sorting, special
    from tangentia.primitives import reductions as R
    from tangentia.primitives import structural as S

    rng = np.random.default_rng(7)
    base = rng.standard_normal((3, 3)) + 4 * np.eye(3)
    basis = rng.standard_normal((4, 3, 3))
    rhs = rng.standard_normal((3, 2))

    def mat(v):                                 # a well-conditioned 3x3 matrix from v
        return E.add(base, C.dot_general(v, basis, (((0,), (0,)), ((), ()))))

    def spd(v):
        m = mat(v)
        return E.add(C.dot_general(m, m, (((1,), (1,)), ((), ()))), np.eye(3))

    def part(v, k):
        return I.static_slice(v, 0, 0, k)

    return {
        "reduce_prod": lambda v: R.reduce_prod(v, (0,)),
        "reduce_max": lambda v: R.reduce_max(E.sin(v), (0,)),
        "sort": lambda v: sorting.sort(E.sin(v)),
        "cumprod": lambda v: misc.cumprod(v, 0),
        "cummax": lambda v: misc.cummax(E.sin(v), 0),
        "copysign": lambda v: misc.copysign(v, E.cos(v)),
        "scatter_mul": lambda v: I.scatter(v, part(E.sin(v), 2), (slice(1, 3),), (), "mul"),
        "scatter_max": lambda v: I.scatter(v, part(E.sin(v), 2), (slice(1, 3),), (), "max"),
        "pow": lambda v: E.power(E.add(2.0, v), E.cos(v)),
        "atan2": lambda v: E.arctan2(v, E.exp(v)),
        "polygamma": lambda v: special.polygamma(1, v),
        "log_ndtr": lambda v: special.log_ndtr(E.neg(v)),
        "einsum": lambda v: C.einsum_explicit("i,j->ij", v, E.sin(v)),
        "concatenate": lambda v: S.concatenate([v, E.sin(v)], 0),
        "lu": lambda v: L.lu_p.bind(mat(v))[0],
        "lu_solve": lambda v: L.lu_solve(*L.lu_p.bind(mat(v))[:2], rhs, 0),
        "lu_solve_T": lambda v: L.lu_solve(*L.lu_p.bind(mat(v))[:2], rhs, 1),
        "triangular_solve": lambda v: L.triangular_solve(mat(v), rhs, lower=False, trans=1),
        "solve": lambda v: L.solve_p.bind(mat(v), rhs),
        "inv": lambda v: L.inv_p.bind(mat(v)),
        "det": lambda v: L.det_p.bind(mat(v)),
        "slogdet": lambda v: L.slogdet_p.bind(mat(v))[1],
        "cholesky": lambda v: L.cholesky_p.bind(spd(v)),
        "eigh": lambda v: E.abs(L.eigh_p.bind(spd(v), lower=True)[1]),
        "eigvalsh": lambda v: L.eigvalsh_p.bind(spd(v), lower=False),
        "qr": lambda v: L.qr_p.bind(mat(v), full_matrices=False)[1],
        "qr_wide": lambda v: L.qr_p.bind(I.static_slice(mat(v), 0, 0, 2),
                                         full_matrices=False)[1],
        "svd": lambda v: E.abs(L.svd_p.bind(I.static_slice(mat(v), 1, 0, 2),
                                            full_matrices=False, compute_uv=True)[0]),
        "expm": lambda v: L.expm_p.bind(E.mul(0.2, mat(v))),
        "expm_frechet": lambda v: L.expm_frechet_p.bind(E.mul(0.2, mat(v)), mat(E.cos(v))),
    }


_RULE_CASES = sorted(_rule_cases())


@pytest.fixture
def numpy_api_off_tracers(monkeypatch):
    """Every Tracer attribute that ``tangentia.numpy`` defines raises."""
    from tangentia import core

    def forbidden(name):
        def fail(*args, **kwargs):
            raise AssertionError(f"a rule used Tracer.{name}, which tangentia.numpy defines")
        return fail

    for name, value in list(vars(core.Tracer).items()):
        fn = value.fget if isinstance(value, property) else value
        if (getattr(fn, "__module__", None) or "").startswith("tangentia.numpy"):
            monkeypatch.setattr(core.Tracer, name,
                                property(forbidden(name)) if isinstance(value, property)
                                else forbidden(name))


def _fd_jacobian(f, x, h=1e-6):
    cols = [(np.asarray(f(x + h * e)) - np.asarray(f(x - h * e))) / (2 * h)
            for e in np.eye(x.size)]
    return np.stack(cols, -1)


@pytest.mark.parametrize("case", _RULE_CASES)
def test_rules_use_primitives_not_the_numpy_api(case, numpy_api_off_tracers):
    from tangentia.interpreters import ad, batching
    f = _rule_cases()[case]
    x = np.array([0.3, -0.7, 0.45, 0.9])
    expected = _fd_jacobian(f, x)
    out = np.asarray(f(x))
    rng = np.random.default_rng(0)
    t, ct = rng.standard_normal(x.shape), rng.standard_normal(out.shape)
    # Forward mode.
    fwd = np.asarray(ad.jvp_flat(lambda v: [f(v)], [x], [t])[1][0])
    np.testing.assert_allclose(fwd, expected @ t, rtol=1e-5, atol=1e-6, err_msg=f"{case}: jvp")
    # Reverse mode (linearize + transpose).
    _, lin, consts, _, _ = ad.linearize_flat(lambda v: [f(v)], [x])
    rev = ad.backward_pass(lin, consts, [ct])[0]
    np.testing.assert_allclose(rev, np.tensordot(ct, expected, out.ndim), rtol=1e-5, atol=1e-6,
                               err_msg=f"{case}: vjp")
    # The JVP rule batched: all basis tangents at once.
    batched = batching.vmap_flat(lambda t: ad.jvp_flat(lambda v: [f(v)], [x], [t])[1],
                                 [np.eye(x.size)], [0], x.size, lambda n: [out.ndim] * n)[0]
    np.testing.assert_allclose(batched, expected, rtol=1e-5, atol=1e-6,
                               err_msg=f"{case}: vmap of jvp")


def test_tracer_operators_are_really_off(numpy_api_off_tracers):
    from tangentia.interpreters import ad
    x = np.ones(3)
    with pytest.raises(AssertionError, match=r"Tracer\.__mul__"):
        ad.jvp_flat(lambda v: [v * v], [x], [x])
    with pytest.raises(AssertionError, match=r"Tracer\.T\b"):
        ad.jvp_flat(lambda v: [v.T], [x], [x])
