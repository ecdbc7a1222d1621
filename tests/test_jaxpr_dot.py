"""Seeing programs: the DOT text of make_jaxpr results (parsed and checked
structurally), rendering with Graphviz when it is installed, and the values of
small constants in printed programs."""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import _jaxpr_dot, lax

NODE = re.compile(r'^\s*(n\d+) \[label="((?:[^"\\]|\\.)*)"(.*)\];$')
EDGE = re.compile(r"^\s*(n\d+) -> (n\d+)( \[style=dashed\])?;$")
CLUSTER = re.compile(r"^\s*subgraph (cluster_\d+) \{$")
LABEL = re.compile(r'^\s*label="((?:[^"\\]|\\.)*)"; style=')


def parse(dot):
    """nodes {id: (label, attrs, cluster path)}, edges [(src, dst, dashed)],
    clusters {id: (label, parent)}."""
    lines = dot.splitlines()
    assert lines[0] == "digraph jaxpr {" and lines[-1] == "}"
    nodes, edges, clusters, stack = {}, [], {}, []
    for line in lines[1:-1]:
        if m := CLUSTER.match(line):
            clusters[m[1]] = [None, stack[-1] if stack else None]
            stack.append(m[1])
        elif m := LABEL.match(line):
            clusters[stack[-1]][0] = m[1]
        elif line.strip() == "}":
            stack.pop()
        elif m := NODE.match(line):
            assert m[1] not in nodes
            nodes[m[1]] = (m[2].replace("\\n", "\n"), m[3], tuple(stack))
        elif m := EDGE.match(line):
            assert not stack, "edges are emitted at top level"
            edges.append((m[1], m[2], bool(m[3])))
        else:
            assert line.strip().startswith(("rankdir", "node [", "edge [")), line
    assert not stack
    for s, d, _ in edges:
        assert s in nodes and d in nodes
    return nodes, edges, {k: tuple(v) for k, v in clusters.items()}


def boxes(nodes):
    return {k: v for k, v in nodes.items() if 'shape="box"' in v[1]}


def count_eqns(jaxpr):
    """Equations, with inlined calls counted by their bodies and loops by theirs."""
    n = 0
    for eqn in jaxpr.eqns:
        if eqn.prim.name in ("custom_jvp_call", "custom_vjp_call", "jit", "checkpoint"):
            key = "call_jaxpr" if "call_jaxpr" in eqn.params else "jaxpr"
            n += count_eqns(eqn.params[key])
            continue
        n += 1
        for v in eqn.params.values():
            for p in (v if isinstance(v, (tuple, list)) else [v]):
                if isinstance(p, tg.Jaxpr):
                    n += count_eqns(p)
    return n


@tg.custom_vjp
def twice(x):
    return 2.0 * x


twice.defvjp(lambda x: (2.0 * x, None), lambda _, g: (2.0 * g,))


def program(x):
    def body(c, xi):
        return twice(c) * xi, c
    y = lax.cond(x > 0, lambda x: x, lambda x: -x, x)
    carry, ys = lax.scan(body, x, np.array([1.0, 2.0, 3.0]))
    return carry + tg.nn.softplus(x) + tg.jit(tnp.sin)(y) + ys.sum()


@pytest.fixture(scope="module")
def closed():
    return tg.make_jaxpr(program)(0.5)


def test_every_equation_is_a_box_labelled_by_primitive_and_type(closed):
    nodes, edges, clusters = parse(closed.to_dot())
    bx = boxes(nodes)
    assert len(bx) == count_eqns(closed.jaxpr)
    prims = sorted(label.split("\n")[0] for label, _, _ in bx.values())
    assert prims.count("scan") == 1 and prims.count("cond") == 1 and "sin" in prims
    scan = next(label for label, _, _ in bx.values() if label.startswith("scan"))
    assert scan == "scan\nf64[] f64[3]"
    # One input node and one output node, linked through the program.
    ins = [k for k, (label, attrs, path) in nodes.items()
           if not path and 'ellipse' in attrs and 'dashed' not in attrs]
    consts = [label for label, attrs, path in nodes.values() if 'dashed' in attrs]
    assert consts == ["a:f64[3]=[1.,2.,3.]"] and nodes[ins[0]][0] == "b:f64[]"
    outs = [k for k, (label, _, _) in nodes.items() if label.startswith("out ")]
    assert len(ins) == 1 and len(outs) == 1 and nodes[outs[0]][0] == "out 0: f64[]"
    succ = {}
    for s, d, _ in edges:
        succ.setdefault(s, []).append(d)
    seen, todo = set(), [ins[0]]
    while todo:
        k = todo.pop()
        if k not in seen:
            seen.add(k)
            todo += succ.get(k, [])
    assert outs[0] in seen


def test_each_box_receives_one_edge_per_input(closed):
    nodes, edges, _ = parse(closed.to_dot())
    solid_in = {}
    for s, d, dashed in edges:
        if not dashed:
            solid_in[d] = solid_in.get(d, 0) + 1
    by_label = {label.split("\n")[0]: k for k, (label, _, _) in boxes(nodes).items()}
    assert solid_in[by_label["sin"]] == 1
    assert solid_in[by_label["scan"]] == 2  # initial carry and xs (a constant)
    assert solid_in[by_label["cond"]] == 2  # index and operand
    # The scan's body feeds the scan box with dashed edges (its 2 outputs).
    assert sum(1 for s, d, dashed in edges if dashed and d == by_label["scan"]) == 2


def test_custom_rule_calls_and_bodies_are_nested_clusters(closed):
    nodes, edges, clusters = parse(closed.to_dot())
    labels = {k: label for k, (label, _) in clusters.items()}
    by_label = {v: k for k, v in labels.items()}
    assert {"custom_vjp: twice", "custom_jvp: softplus", "jit: sin", "scan", "body", "cond",
            "branches[0]", "branches[1]"} <= set(labels.values())
    # twice's cluster sits in the scan body, which sits in the scan cluster.
    parent = clusters[by_label["custom_vjp: twice"]][1]
    assert labels[parent] == "body" and labels[clusters[parent][1]] == "scan"
    assert clusters[by_label["custom_jvp: softplus"]][1] is None
    # softplus's equations are inside its cluster; 'twice' holds one multiplication.
    in_twice = [label for label, _, path in boxes(nodes).values()
                if by_label["custom_vjp: twice"] in path]
    assert in_twice == ["mul\nf64[]"]


def test_small_constants_show_their_values():
    c = np.array([1.0, 2.0, 3.0])
    big = np.arange(9.0)

    def f(x):
        return tnp.sum(x * c) + tnp.sum(big) * x[0]

    text = str(tg.make_jaxpr(f)(np.ones(3)))
    assert "f64[3]=[1.,2.,3.]" in text
    assert "f64[9]" in text and "f64[9]=" not in text
    g = str(tg.make_jaxpr(tg.grad(lambda x: tnp.sum(x * c)))(np.ones(3)))
    assert "=[1.,2.,3.]" in g
    dot = tg.make_jaxpr(f)(np.ones(3)).to_dot()
    assert "=[1.,2.,3.]" in dot


def test_show_writes_dot_text_and_rejects_unknown_suffixes(tmp_path, closed):
    path = tmp_path / "p.dot"
    assert closed.show(path) == path
    assert path.read_text() == closed.to_dot()
    with pytest.raises(ValueError, match=r"show: the path .*p\.txt.* must end in \.svg"):
        closed.show(tmp_path / "p.txt")


def test_rendering_without_graphviz_says_how_to_install_it(monkeypatch, closed):
    monkeypatch.setattr(_jaxpr_dot.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="Install Graphviz"):
        closed._repr_svg_()


@pytest.mark.skipif(shutil.which("dot") is None,
                    reason="Graphviz's `dot` program is not installed (apt-get install graphviz)")
def test_dot_renders_svg_and_png(tmp_path, closed):
    svg = closed._repr_svg_()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert "custom_vjp: twice" in svg
    png = tmp_path / "p.png"
    closed.show(png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
