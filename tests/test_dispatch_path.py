"""One dispatch path (issue 25): ``prim.bind`` -> ``current_trace().process_primitive``.

* One place runs a primitive's implementation: ``core.EvalTrace.process_primitive``
  (``core.eval_primitive``).  Every eager evaluation, the public functions' eager
  branch, the known values of an eager linearization and the backends' fallbacks call
  it; no other module calls ``.impl(...)``.
* So ``check_args`` (the clearer error of a primitive whose ``impl`` raised a
  ``ValueError``) is given the same way on every path.
* Custom-rule calls bind their primitives (no ``getattr(current_trace(), ...)``).
"""
from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import core, lax
from tangentia.interpreters import ad
from tangentia.primitives import elementwise as E

PACKAGE = pathlib.Path(tg.__file__).parent
# (module relative to the package, qualified name of the function): the one place.
DISPATCH_POINT = ("core.py", "EvalTrace.process_primitive")


class _Scan:
    """One walk over a module: ``impl``, the (line, enclosing function) of each call
    ``<expr>.impl(...)``; ``reads``, the (line, enclosing function) of every read of
    an ``impl`` attribute (``<expr>.impl`` not assigned to, or ``getattr(<expr>,
    "impl")``), which is how an alias (``run = p.impl; run(x)``) would start;
    ``lookups``, the lines of ``getattr(<...current_trace()...>, ...)`` or
    ``getattr(<...trace_state().trace...>, ...)`` (a trace's method picked by name)."""

    def __init__(self, source):
        self.impl, self.reads, self.lookups = [], [], []
        if "impl" not in source and "current_trace" not in source and "trace_state" not in source:
            return  # (neither can occur: no parse)
        tree = ast.parse(source)
        scopes = []  # (first line, last line, qualified name) of each def and class
        calls = []

        def walk(node, prefix):
            for child in ast.iter_child_nodes(node):
                t = type(child)
                if t is ast.FunctionDef or t is ast.AsyncFunctionDef or t is ast.ClassDef:
                    name = prefix + child.name
                    scopes.append((child.lineno, child.end_lineno, name))
                    walk(child, name + ".")
                else:
                    if t is ast.Call:
                        calls.append(child)
                    walk(child, prefix)
        walk(tree, "")

        def scope_of(node):
            inner = [s for s in scopes if s[0] <= node.lineno <= s[1]]
            return max(inner, key=lambda s: s[0])[2] if inner else ""
        for node in calls:
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr == "impl":
                self.impl.append((node.lineno, scope_of(node)))
            elif (isinstance(f, ast.Name) and f.id == "getattr" and node.args
                  and any(n in ast.unparse(node.args[0])
                          for n in ("current_trace", "trace_state"))):
                self.lookups.append(node.lineno)
        for node in ast.walk(tree):
            if ((isinstance(node, ast.Attribute) and node.attr == "impl"
                 and isinstance(node.ctx, ast.Load))
                    or (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                        and node.func.id == "getattr" and len(node.args) > 1
                        and isinstance(node.args[1], ast.Constant)
                        and node.args[1].value == "impl")):
                self.reads.append((node.lineno, scope_of(node)))


_SCANS = {}


def _package_scans():
    """{module path relative to the package: its _Scan}, computed once."""
    if not _SCANS:
        for path in sorted(PACKAGE.rglob("*.py")):
            _SCANS[path.relative_to(PACKAGE).as_posix()] = _Scan(path.read_text())
    return _SCANS


def test_the_scan_finds_impl_calls():
    # The scanner itself: it sees calls in nested functions and methods, and not
    # mere references (a backend's lowering table may hold ``prim.impl``).
    src = ("def f(p, x):\n    return p.impl(x)\n"
           "class T:\n    def g(self, p):\n        h = lambda x: p.impl(x, **{})\n"
           "        return p.impl\n")
    assert _Scan(src).impl == [(2, "f"), (5, "T.g")]
    assert sorted(_Scan(src).reads) == [(2, "f"), (5, "T.g"), (6, "T.g")]
    assert _Scan("getattr(core.current_trace(), name)(p, a, k)\n").lookups == [1]
    assert _Scan("getattr(core.trace_state().trace, name)(p, a, k)\n").lookups == [1]
    # an alias, a getattr and a store: the reads, not the store
    src = "def g(p, x):\n    run = p.impl\n    getattr(p, 'impl')(x)\n    p.impl = run\n"
    assert _Scan(src).impl == [] and _Scan(src).reads == [(2, "g"), (3, "g")]


def test_only_the_dispatch_point_calls_impl():
    scans = _package_scans()
    found = [f"{rel}:{line} in {scope or '<module>'}" for rel, scan in scans.items()
             for line, scope in scan.impl if (rel, scope) != DISPATCH_POINT]
    assert not found, ("these call a primitive's impl directly; call core.eval_primitive "
                       "(the one place, core.EvalTrace.process_primitive) instead:\n"
                       + "\n".join(found))
    # ... and the dispatch point does call it (the scan is not vacuous)
    core_calls = scans["core.py"].impl
    assert [s for _, s in core_calls] == [DISPATCH_POINT[1]] * len(core_calls) and core_calls


# Where a primitive's ``impl`` may be read (not called) outside the dispatch point, and why:
# none of these runs it on the user's values.  A new read (an alias that is later called,
# ``run = prim.impl; run(x)``) fails ``test_impl_is_read_only_where_listed``.
IMPL_READS = {
    ("core.py", "eager_dispatch"):
        "checks that the NumPy function given as 'eager' is the primitive's impl",
    ("primitives/elementwise.py", ""):
        "passes each ufunc-backed impl to eager_dispatch as 'eager' (checked, never called)",
    ("primitives/reductions.py", "_bool_or_int_only"):
        "wraps the impl into a new impl (with JAX's dtype error)",
    ("primitives/_low_precision.py", "_wrap_unary_axes"): "wraps the impl into a new impl",
    ("primitives/_low_precision.py", "_wrap_cumsum"): "wraps the impl into a new impl",
    ("primitives/_low_precision.py", "_wrap_dot_general"): "wraps the impl into a new impl",
    ("primitives/_low_precision.py", "_wrap_any"): "wraps the impl into a new impl",
    ("primitives/_low_precision.py", ""): "keeps the wrapped impl as __wrapped__",
    ("primitives/special.py", "_load_scipy"):
        "puts SciPy's ufunc in place of its stand-in, imported at first use (never calls it)",
    ("compiler/numpy_backend.py", "_ufunc"):
        "a lowering: whether the impl is a ufunc (for writing into dying buffers)",
    ("compiler/numpy_backend.py", "_lowering"):
        "a lowering: the NumPy backend's code for a type-checked equation is its impl",
    ("compiler/numba_backend/rules.py", "_ufunc_of"):
        "a lowering: the ufunc whose loops the numba code runs natively",
    ("compiler/numba_backend/rules.py", "lowering_paths"):
        "a report: whether an equation could fall back to object mode",
}


def test_impl_is_read_only_where_listed():
    reads = {(rel, scope) for rel, scan in _package_scans().items()
             for _, scope in scan.reads if (rel, scope) != DISPATCH_POINT}
    unlisted = sorted(reads - set(IMPL_READS))
    assert not unlisted, ("these read a primitive's impl outside the dispatch point "
                          "(evaluate with core.eval_primitive, or list the read in IMPL_READS "
                          "with the reason it never runs the impl on user values):\n"
                          + "\n".join(f"{rel} in {scope or '<module>'}"
                                       for rel, scope in unlisted))
    # every listed place still reads it (the list is kept exact)
    assert sorted(set(IMPL_READS) - reads) == []


def test_no_trace_method_is_picked_by_name():
    found = [f"{rel}:{line}" for rel, scan in _package_scans().items() for line in scan.lookups]
    assert not found, "bind the primitive instead of getattr(current_trace(), ...): " + str(found)


def test_eval_primitive_is_evaluation():
    assert core.eval_primitive.__func__ is core.EvalTrace.process_primitive
    x = np.linspace(0.1, 1.0, 5)
    out = core.eval_primitive(E.sin_p, (x,), {})
    assert type(out) is np.ndarray
    np.testing.assert_array_equal(out, np.sin(x))
    # a NumPy scalar result becomes a 0-d ndarray, as every eager result
    out = core.eval_primitive(E.add_p, (np.float64(1.0), 2.0), {})
    assert type(out) is np.ndarray and out.shape == () and out == 3.0


def test_public_functions_evaluate_through_the_dispatch_point():
    """A public function made by ``eager_dispatch`` evaluates with whatever
    ``prim.impl`` is at the time (it holds no copy of it), eagerly and for the
    known values of an eager linearization."""
    p = core.Primitive("test_dispatch_point")
    p.impl = np.positive
    p.abstract_eval = lambda a: a
    ad.defjvp(p, lambda t, ans, a: t)
    f = core.eager_dispatch(p, p.impl, nin=1)
    try:
        x = np.arange(3.0)
        np.testing.assert_array_equal(f(x), x)
        p.impl = lambda a: a * 2.0
        np.testing.assert_array_equal(f(x), 2.0 * x)
        assert tg.grad(lambda s: s * tnp.sum(f(x)))(1.0) == 6.0   # a known value
        np.testing.assert_array_equal(tg.grad(lambda v: tnp.sum(f(v)))(x), [1.0, 1.0, 1.0])
        with pytest.raises(TypeError, match="must be the primitive's impl"):
            core.eager_dispatch(p, np.positive, nin=1)
    finally:
        core.EAGER_FAST_PATHS.remove((p, f))


@pytest.mark.parametrize("path", ["tnp", "internal", "lax", "bind"])
def test_eager_results_match_numpy(path):
    x, y = np.linspace(0.1, 1.0, 4), np.linspace(-1.0, 2.0, 4)
    f = {"tnp": tnp.multiply, "internal": E.mul, "lax": lax.mul,
         "bind": lambda a, b: E.mul_p.bind(a, b)}[path]
    out = f(x, y)
    np.testing.assert_array_equal(np.asarray(out), x * y)
    assert isinstance(out, np.ndarray)


# check_args: the same error on every path ------------------------------------


_A, _B = np.ones(3), np.ones(4)
_WANT = (TypeError, "add got incompatible shapes for broadcasting: (3,), (4,).")


def _error(f, *args):
    with pytest.raises(Exception) as info:
        f(*args)
    return type(info.value), str(info.value)


_PATHS = {
    "eager tnp": lambda: tnp.add(_A, _B),
    "eager internal": lambda: E.add(_A, _B),
    "eager lax": lambda: lax.add(_A, _B),
    "eager bind": lambda: E.add_p.bind(_A, _B),
    "eager eval_primitive": lambda: core.eval_primitive(E.add_p, (_A, _B), {}),
    "grad, traced": lambda: tg.grad(lambda x: tnp.sum(tnp.add(x, _B)))(_A),
    "grad, known values": lambda: tg.grad(lambda s: s * tnp.sum(tnp.add(_A, _B)))(1.0),
    "grad, known values, bind": lambda: tg.grad(
        lambda s: s * tnp.sum(E.add_p.bind(_A, _B)))(1.0),
    "jvp": lambda: tg.jvp(lambda x: tnp.add(x, _B), (_A,), (_A,)),
    "vmap": lambda: tg.vmap(lambda x: tnp.add(x, _B))(np.ones((2, 3))),
    "vmap of eager values": lambda: tg.vmap(lambda s: s * tnp.sum(tnp.add(_A, _B)))(np.ones(2)),
    "jit": lambda: tg.jit(lambda x: tnp.add(x, _B))(_A),
    "jit, bind": lambda: tg.jit(lambda x: E.add_p.bind(x, _B))(_A),
    "custom_jvp rule": lambda: tg.grad(_custom_add_jvp)(1.0),
    "custom_vjp fwd": lambda: tg.grad(_custom_add_vjp)(1.0),
}


@tg.custom_jvp
def _custom(s):
    return s * 2.0


@_custom.defjvp
def _custom_jvp(primals, tangents):
    s, = primals
    return _custom(s), tangents[0] * tnp.sum(tnp.add(_A, _B))  # known values in the rule


def _custom_add_jvp(s):
    return _custom(s)


@tg.custom_vjp
def _custom_v(s):
    return s * 2.0


_custom_v.defvjp(lambda s: (_custom_v(s), tnp.sum(tnp.add(_A, _B))), lambda r, g: (g * r,))


def _custom_add_vjp(s):
    return _custom_v(s)


@pytest.mark.parametrize("path", list(_PATHS))
def test_check_args_error_is_the_same_on_every_path(path):
    assert _error(_PATHS[path]) == _WANT


def test_custom_lin_in_the_numpy_backend_evaluates_through_the_dispatch_point():
    # forward mode through a custom_vjp inside jit stages a custom_lin step, which the
    # numpy backend runs with core.eval_primitive
    @tg.custom_vjp
    def cv(x):
        return tnp.exp(x)
    cv.defvjp(lambda x: (cv(x), tnp.exp(x)), lambda r, g: (g * r,))
    x = np.linspace(-1.0, 1.0, 3)
    out, tan = tg.jit(lambda v: tg.jvp(cv, (v,), (np.full(3, 2.0),)))(x)
    np.testing.assert_allclose(out, np.exp(x), rtol=1e-14)
    np.testing.assert_allclose(tan, 2.0 * np.exp(x), rtol=1e-14)


# JVPTrace.process_primitive: unpack, hand off when every tangent is zero, else the rule


def test_jvp_hands_off_when_every_tangent_is_zero(monkeypatch):
    calls = []
    real = ad.primitive_jvps[E.sin_p]

    def rule(primals, tangents, **params):
        calls.append(tangents)
        return real(primals, tangents, **params)

    monkeypatch.setitem(ad.primitive_jvps, E.sin_p, rule)
    c = np.linspace(0.0, 1.0, 3)
    # sin of a constant inside jvp: no rule runs, the value is computed by the parent
    out, tan = tg.jvp(lambda x: x * tnp.sin(c), (np.ones(3),), (np.ones(3),))
    assert calls == []
    np.testing.assert_allclose(tan, np.sin(c))
    # sin of the input: the rule runs once
    out, tan = tg.jvp(tnp.sin, (c,), (np.ones(3),))
    assert len(calls) == 1
    np.testing.assert_allclose(tan, np.cos(c))


def test_maybe_jvp_tracer():
    trace = ad.JVPTrace(core.EVAL_TRACE)
    x = np.ones(2)
    assert ad.maybe_jvp_tracer(trace, x, ad.Zero(core.get_aval(x))) is x
    t = ad.maybe_jvp_tracer(trace, x, np.full(2, 3.0))
    assert type(t) is ad.JVPTracer and t._trace is trace and t.primal is x
    np.testing.assert_array_equal(t.tangent, [3.0, 3.0])


@pytest.mark.parametrize("nested", [False, True])
def test_grad_through_every_route_matches_closed_form(nested):
    # unary and binary primitives, a constant operand, a custom_jvp and a custom_vjp,
    # eagerly linearized (known values through the dispatch point) and nested
    @tg.custom_jvp
    def cj(x):
        return tnp.sin(x)
    cj.defjvp(lambda p, t: (cj(p[0]), tnp.cos(p[0]) * t[0]))

    @tg.custom_vjp
    def cv(x):
        return tnp.exp(x)
    cv.defvjp(lambda x: (cv(x), tnp.exp(x)), lambda r, g: (g * r,))

    def f(x):
        return tnp.sum(cj(x) * 2.0 + cv(x) * x - tnp.tanh(x) / 3.0)

    def df(x):
        return np.cos(x) * 2.0 + np.exp(x) * x + np.exp(x) - (1 - np.tanh(x) ** 2) / 3.0

    def ddf(x):
        th = np.tanh(x)
        return -np.sin(x) * 2.0 + np.exp(x) * x + 2 * np.exp(x) + 2 * th * (1 - th ** 2) / 3.0

    x = np.linspace(-0.5, 0.7, 4)
    if nested:
        got = tg.vmap(tg.grad(tg.grad(lambda s: f(s[None]))))(x)
        np.testing.assert_allclose(got, ddf(x), rtol=1e-12)
    else:
        np.testing.assert_allclose(tg.grad(f)(x), df(x), rtol=1e-12)
        np.testing.assert_allclose(tg.jit(tg.grad(f))(x), df(x), rtol=1e-12)
