"""One IR for linearization (issue 25 item 2): eager ``grad`` records its
tangent equations as ``core.Eqn``s of a ``core.Jaxpr`` (known inputs held
inline until ``build``), the same objects ``vjp``, ``linearize`` and staging
make, and ``ad.backward_pass`` reads that one form.  These tests fail if a
second record format (tuples, a records list, a NamedTuple of records) comes
back."""
import ast
import pathlib

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import core
from tangentia.interpreters import ad, partial_eval as pe

PKG = pathlib.Path(tg.__file__).parent
X = np.array([0.3, -1.2, 2.0])


def f(v):
    return tnp.sum(tnp.sin(v) * np.array([1.0, 2.0, 3.0]) + v * 2.5)


def test_eager_grad_hands_backward_pass_a_jaxpr_of_eqns(monkeypatch):
    seen = []
    real = ad.backward_pass

    def spy(jaxpr, consts, cts):
        seen.append(jaxpr)
        return real(jaxpr, consts, cts)

    monkeypatch.setattr(ad, "backward_pass", spy)
    g = tg.grad(f)(X)
    np.testing.assert_allclose(g, np.cos(X) * [1.0, 2.0, 3.0] + 2.5, rtol=1e-14)
    (jaxpr,) = seen
    assert type(jaxpr) is core.Jaxpr and jaxpr.inline
    assert jaxpr.eqns and all(type(e) is core.Eqn for e in jaxpr.eqns)
    # mul by the residual cos(x), by the constant, by 2.5; add_any; reduce_sum
    assert [e.prim.name for e in jaxpr.eqns] == ["mul", "mul", "mul", "add_any", "reduce_sum"]
    for e in jaxpr.eqns:
        assert all(type(v) is core.Var for v in e.outputs)


def test_backward_pass_takes_only_a_jaxpr():
    for bad in ([], (), [("mul", [], {}, None, None)]):
        with pytest.raises(TypeError, match="backward_pass: jaxpr must be a core.Jaxpr"):
            ad.backward_pass(bad, None, [1.0])


def _record_format_uses(tree, name):
    """Where ``tree`` holds a second record format: an attribute named
    ``records``, a class named ...Record..., a tuple literal starting with ``prim``
    appended to a list (an equation as a tuple)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "records":
            found.append(f"{name}:{node.lineno}: .records")
        elif isinstance(node, ast.ClassDef):
            if "Record" in node.name:  # (PartialEval, a NamedTuple of programs, is no record)
                found.append(f"{name}:{node.lineno}: class {node.name}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "append" and node.args
              and isinstance(node.args[0], ast.Tuple) and node.args[0].elts
              and isinstance(node.args[0].elts[0], ast.Name)
              and node.args[0].elts[0].id == "prim"):
            found.append(f"{name}:{node.lineno}: a tuple record")
    return found


def test_no_second_record_format_in_the_source():
    assert not hasattr(ad, "LinearRecords")
    assert not hasattr(pe.LinearBuilder, "records")
    found = []
    for sub in ("interpreters", "custom_derivatives"):
        for path in sorted((PKG / sub).glob("*.py")):
            found += _record_format_uses(ast.parse(path.read_text()), path.name)
    assert found == []


def test_the_scan_finds_the_old_format():
    old = ("class LinearRecords(NamedTuple):\n    records: list\n"
           "def g(self, prim, ins, params, v):\n"
           "    self.builder.records.append((prim, ins, params, v, None))\n")
    assert len(_record_format_uses(ast.parse(old), "old")) == 3
