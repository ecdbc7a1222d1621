"""The rules of each interpreter live in that interpreter's own table keyed by
``Primitive`` (issue 25, item 3): ``ad.primitive_jvps``, ``ad.primitive_transposes``,
``batching.primitive_batchers``, ``partial_eval.custom_partial_eval_rules``.

So a new transformation needs no edit to ``core.py``: this module defines one
(an interpreter counting floating-point operations, with its own table and its
own ``Trace`` subclass) outside the package and runs it on ordinary functions,
under and around the library's transformations.
"""
from __future__ import annotations

import ast
import pathlib
from typing import Any, Callable

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import core
from tangentia.core import Primitive
from tangentia.interpreters import ad, batching
from tangentia.primitives import contraction as C
from tangentia.primitives import elementwise as E
from tangentia.primitives import reductions as R

PACKAGE = pathlib.Path(tg.__file__).parent
RULE_ATTRS = ("jvp", "transpose", "jvp_takes_none", "jvp_fns")


# ---------------------------------------------------------------------------
# No rule is a Primitive attribute


def test_primitive_has_no_rule_attributes():
    for name in RULE_ATTRS:
        assert not hasattr(Primitive, name), name
        assert name not in Primitive.__slots__, name
    p = Primitive("toy_rule_attrs")
    for name in RULE_ATTRS:
        with pytest.raises(AttributeError):   # __slots__: no attribute can be attached
            setattr(p, name, lambda *a: None)
    # The primitives' rules are in the tables instead.
    assert ad.primitive_jvps[E.sin_p] is not None
    assert ad.primitive_transposes[C.dot_general_p] is not None
    assert E.sin_p not in ad.primitive_transposes    # not linear
    assert all(ad.primitive_jvps.takes_none(p) for p in (E.add_p, E.mul_p, E.sin_p))


def _names_a_primitive(node: ast.expr) -> bool:
    """Whether ``node`` is spelled as a primitive is: ``sin_p``, ``prim``, ``p``,
    ``eqn.prim``, ``eqn.primitive``."""
    if isinstance(node, ast.Name):
        return node.id.endswith("_p") or node.id in ("p", "prim", "primitive")
    return isinstance(node, ast.Attribute) and node.attr in ("prim", "primitive")


def _rule_attribute_uses(tree: ast.AST) -> list[tuple[int, str]]:
    """Lines that read or assign a differentiation rule as an attribute of a
    primitive (``sin_p.jvp = ...``, ``prim.transpose``, ``p.jvp_takes_none``)."""
    return [(node.lineno, f"{ast.unparse(node)}") for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr in RULE_ATTRS
            and _names_a_primitive(node.value)]


def test_no_module_attaches_or_reads_a_rule_as_an_attribute():
    """Rules are entries of the tables, filled by each primitive's own module
    (``self.jvp`` of a custom_jvp object is that object's own rule, not a
    primitive's)."""
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        if ".jvp" not in text and ".transpose" not in text:   # (parse only the candidates)
            continue
        for line, what in _rule_attribute_uses(ast.parse(text)):
            bad.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {what}")
    assert bad == []


def test_the_scan_finds_a_rule_attribute():
    src = ("sin_p.jvp = rule\nr = eqn.prim.transpose\nok = prim.jvp_takes_none\n"
           "self.jvp = f\nT.transpose = method\nok = p in ad.jvp_takes_none\n")
    assert sorted(w for _, w in _rule_attribute_uses(ast.parse(src))) == [
        "eqn.prim.transpose", "prim.jvp_takes_none", "sin_p.jvp"]


def test_a_missing_rule_reads_as_before():
    p = Primitive("toy_no_rules")
    p.impl = np.negative
    p.abstract_eval = lambda x: x
    batching.primitive_batchers[p] = lambda args, dims: (p.bind(*args), dims[0])
    try:
        with pytest.raises(NotImplementedError, match="^Differentiation rule for 'toy_no_rules'"):
            tg.grad(lambda x: tnp.sum(p.bind(x)))(np.ones(2))
        # A JVP rule but no transpose: forward mode works, reverse mode names the rule.
        ad.defjvp(p, lambda t, ans, x: p.bind(t))
        _, t = tg.jvp(lambda x: p.bind(x), (np.ones(2),), (np.full(2, 3.0),))
        np.testing.assert_array_equal(t, np.full(2, -3.0))
        with pytest.raises(NotImplementedError, match="transpose rule for 'toy_no_rules'"):
            tg.grad(lambda x: tnp.sum(p.bind(x)))(np.ones(2))
        ad.primitive_transposes[p] = lambda ct, x: (p.bind(ct),)
        np.testing.assert_array_equal(tg.grad(lambda x: tnp.sum(p.bind(x)))(np.ones(2)),
                                      np.full(2, -1.0))
    finally:
        for table in (ad.primitive_jvps, ad.primitive_transposes, batching.primitive_batchers):
            table.pop(p, None)


def _toy_product(name):
    """A product primitive and a JVP rule for it (taking None or ``Zero`` for a
    zero tangent) that records the types of the tangents it is handed."""
    p = Primitive(name)
    p.impl = np.multiply
    p.abstract_eval = lambda x, y: x
    seen = []

    def rule(primals, tangents):
        seen.append([type(t) for t in tangents])
        x, y = primals
        tx, ty = (ad.instantiate(ad.Zero.from_primal(v) if t is None else t)
                  for v, t in zip(primals, tangents))
        return p.bind(x, y), tx * y + x * ty
    return p, rule, seen


def test_jvp_rule_without_none_gets_zero_tangents():
    """A rule registered as ``primitive_jvps[p] = rule`` is handed ``Zero`` for an
    argument without a tangent, never None."""
    p, rule, seen = _toy_product("toy_binary")
    ad.primitive_jvps[p] = rule
    try:
        x, y = np.array([1.0, 2.0]), np.array([3.0, 5.0])
        _, t = tg.jvp(lambda a: p.bind(a, y), (x,), (np.ones(2),))
        np.testing.assert_array_equal(t, y)
        _, t = tg.jvp(lambda a, b, c: p.bind(a, b) + 0 * c, (x, y, x), (x, y, x))
        np.testing.assert_array_equal(t, 2 * x * y)
        assert seen[0] == [np.ndarray, ad.Zero]
        assert seen[1] == [np.ndarray, np.ndarray]
    finally:
        ad.primitive_jvps.pop(p)


def test_takes_none_is_declared_with_the_rule():
    """Whether a JVP rule takes None for a zero tangent is declared when the rule
    is registered (``primitive_jvps.define(p, rule, takes_none=True)``, every rule
    ``ad.defjvp`` makes), and every change to the table keeps it with its rule:
    a rule set by assignment (a replacement too) is handed ``Zero``."""
    p, rule, seen = _toy_product("toy_takes_none")
    x, y = np.array([1.0, 2.0]), np.array([3.0, 5.0])

    def tangent():
        seen.clear()
        t = tg.jvp(lambda a: p.bind(a, y), (x,), (np.ones(2),))[1]
        np.testing.assert_array_equal(t, y)
        return seen[0]
    jvps = ad.primitive_jvps
    try:
        jvps.define(p, rule, takes_none=True)
        assert jvps.takes_none(p) and jvps[p] is rule and jvps.entries[p] == (rule, True)
        assert tangent() == [np.ndarray, type(None)]
        jvps[p] = rule                      # the same rule assigned again: declared still
        assert jvps.entries[p] == (rule, True)

        def other(primals, tangents):
            return rule(primals, tangents)
        jvps[p] = other                     # another rule: handed Zero
        assert not jvps.takes_none(p) and jvps.entries[p] == (other, False)
        assert tangent() == [np.ndarray, ad.Zero]
        jvps.update({p: rule})
        assert jvps.entries[p] == (rule, True)
        jvps.define(p, rule)                # declared again, not taking None
        assert jvps.entries[p] == (rule, False)
        assert tangent() == [np.ndarray, ad.Zero]
        del jvps[p]
        assert p not in jvps and p not in jvps.entries and not jvps.takes_none(p)
        with pytest.raises(NotImplementedError, match="^Differentiation rule for 'toy_takes_none'"):
            tg.jvp(lambda a: p.bind(a, y), (x,), (np.ones(2),))
        jvps.setdefault(p, rule)
        assert jvps.entries[p] == (rule, False)
        assert jvps.pop(p) is rule and p not in jvps.entries
        # the table and its entries agree for every primitive
        assert set(jvps) == set(jvps.entries)
        assert all(jvps[q] is r for q, (r, _) in jvps.entries.items())
    finally:
        jvps.pop(p, None)


def test_monkeypatched_rule_is_handed_zero_and_restored(monkeypatch):
    """``monkeypatch.setitem`` replaces a rule taking None by one handed ``Zero``;
    the undo restores the rule with its declaration."""
    real = ad.primitive_jvps[E.mul_p]
    assert ad.primitive_jvps.takes_none(E.mul_p)
    with monkeypatch.context() as m:
        seen = []

        def rule(primals, tangents):
            seen.append([type(t) for t in tangents])
            return real(primals, tangents)
        m.setitem(ad.primitive_jvps, E.mul_p, rule)
        c = np.array([2.0, 3.0])
        t = tg.jvp(lambda a: a * c, (np.ones(2),), (np.ones(2),))[1]
        np.testing.assert_array_equal(t, c)
        assert len(seen) == 1 and seen[0][1] is ad.Zero   # (c has no tangent)
    assert ad.primitive_jvps.entries[E.mul_p] == (real, True)


# ---------------------------------------------------------------------------
# A new transformation, defined here: count floating-point operations


# Its rule table, keyed by Primitive: (input types, output types, params) -> flops.
FlopRule = Callable[[list, list, dict], int]
flop_rules: dict[Primitive, FlopRule] = {}


def _size(aval: Any) -> int:
    return int(np.prod(aval.shape, dtype=np.int64))


def _elementwise(in_avals: list, out_avals: list, params: dict) -> int:
    return _size(out_avals[0])


for _p in (E.add_p, E.sub_p, E.mul_p, E.div_p, E.neg_p, E.sin_p, E.cos_p, E.exp_p,
           E.tanh_p, ad.add_any_p):
    flop_rules[_p] = _elementwise
flop_rules[R.reduce_sum_p] = lambda ins, outs, params: _size(ins[0]) - _size(outs[0])


def _dot_general(ins: list, outs: list, params: dict) -> int:
    (lc, _), _ = params["dimension_numbers"]
    k = int(np.prod([ins[0].shape[d] for d in lc], dtype=np.int64))
    return 2 * k * _size(outs[0])


flop_rules[C.dot_general_p] = _dot_general


def jaxpr_flops(jaxpr: core.Jaxpr) -> int:
    """The flops of a staged program, nested programs of calls included (found
    through the primitives' declarations, ``core.subjaxprs``)."""
    total = 0
    for e in jaxpr.eqns:
        if e.prim.call_param is not None:
            total += sum(jaxpr_flops(j) for j in core.subjaxprs(e.prim, e.params))
            continue
        rule = flop_rules.get(e.prim)
        if rule is not None:
            total += rule([a.aval for a in e.inputs], [v.aval for v in e.outputs], e.params)
    return total


class FlopTracer(core.Tracer):
    __slots__ = ("val",)

    def __init__(self, trace: FlopTrace, val: Any):
        self._trace = trace
        self.val = val

    @property
    def aval(self) -> core.ShapedArray:
        return core.get_aval(self.val)


class FlopTrace(core.Trace):
    """Evaluates with its parent and adds up each primitive's flops (0 for a
    primitive without a rule: data movement)."""

    __slots__ = ("flops",)

    def __init__(self, parent: core.Trace):
        super().__init__(parent)
        self.flops = 0

    def _unwrap(self, x: Any) -> Any:
        return x.val if type(x) is FlopTracer and x._trace is self else x

    def process_primitive(self, prim: Primitive, args: Any, params: dict) -> Any:
        vals = [self._unwrap(x) for x in args]
        with core.set_trace(self.parent):
            out = prim.bind(*vals, **params)
        outs = out if prim.multiple_results else [out]
        if prim.call_param is not None:
            self.flops += sum(jaxpr_flops(j) for j in core.subjaxprs(prim, params))
        else:
            rule = flop_rules.get(prim)
            if rule is not None:
                self.flops += rule([core.get_aval(v) for v in vals],
                                   [core.get_aval(o) for o in outs], params)
        wrapped = [FlopTracer(self, o) for o in outs]
        return wrapped if prim.multiple_results else wrapped[0]

    def process_custom_jvp_call(self, prim: Primitive, args: Any, params: dict) -> Any:
        return params["fun"](*args)   # the function itself: its flops are counted

    process_custom_vjp_call = process_custom_jvp_call
    process_custom_vmap_call = process_custom_jvp_call


def count_flops(f: Callable) -> Callable:
    """``f``'s value and the number of floating-point operations it ran."""
    def counted(*args: Any) -> tuple[Any, int]:
        trace = FlopTrace(core.current_trace())
        try:
            with core.set_trace(trace):
                out = f(*[FlopTracer(trace, a) for a in args])
            return trace._unwrap(out), trace.flops
        finally:
            trace.alive = False
    return counted


def test_a_new_transformation_needs_no_edit_to_core():
    assert FlopTrace.__module__ == __name__ and type(flop_rules) is dict
    assert all(type(p) is Primitive for p in flop_rules)
    x = np.linspace(0.1, 1.2, 12).reshape(3, 4)
    y = np.cos(x)
    w = np.arange(20.0).reshape(4, 5) / 10
    # sin and mul: 12 each.
    out, n = count_flops(lambda a, b: tnp.sin(a) * b)(x, y)
    np.testing.assert_allclose(out, np.sin(x) * y, rtol=1e-15)
    assert n == 24
    # (3, 4) @ (4, 5): 2 * 4 * 15; tanh: 15; the sum: 14.
    out, n = count_flops(lambda a: tnp.sum(tnp.tanh(a @ w)))(x)
    np.testing.assert_allclose(out, np.sum(np.tanh(x @ w)), rtol=1e-14)
    assert n == 120 + 15 + 14
    # Data movement costs nothing.
    out, n = count_flops(lambda a: tnp.transpose(a).reshape(-1))(x)
    np.testing.assert_array_equal(out, x.T.reshape(-1))
    assert n == 0


def test_the_new_transformation_composes_with_the_library():
    x = np.linspace(0.1, 1.2, 12).reshape(3, 4)
    w = np.arange(20.0).reshape(4, 5) / 10

    def f(a: Any) -> Any:
        return tnp.sum(tnp.sin(a @ w))
    # Under jit: the call's program is counted through the primitive's declaration.
    out, n = count_flops(tg.jit(f))(x)
    np.testing.assert_allclose(out, np.sum(np.sin(x @ w)), rtol=1e-14)
    assert n == 120 + 15 + 14
    # Counting a gradient: it runs the library's JVP and transpose rules, whose
    # operations reach the counter (dot 120, sin 15, sum 14 forward; cos 15 and
    # the tangent mul 15; the transposed dot 2 * 5 * 12 backward).
    g, n = count_flops(tg.grad(f))(x)
    np.testing.assert_allclose(g, np.cos(x @ w) @ w.T, rtol=1e-13)
    assert n == 120 + 15 + 14 + 15 + 15 + 120
    # The library's transformations of a counted function.
    g = tg.grad(lambda a: count_flops(f)(a)[0])(x)
    np.testing.assert_allclose(g, np.cos(x @ w) @ w.T, rtol=1e-13)
    outs = tg.vmap(lambda row: count_flops(lambda r: tnp.sin(r) * r)(row)[0])(x)
    np.testing.assert_allclose(outs, np.sin(x) * x, rtol=1e-15)
