"""Pictures of programs: Graphviz DOT text of a ``ClosedJaxpr``, and rendering.

``tg.make_jaxpr(f)(x).to_dot()`` gives the DOT text; ``._repr_svg_()`` (used by
Jupyter) and ``.show("f.svg")`` render it with Graphviz's ``dot`` program.  This
module installs those three methods on ``core.ClosedJaxpr`` when imported (by
``tangentia/__init__``), as ``numpy/_array_methods`` installs Tracer operators.

The picture: program inputs and constants are ellipses (small constants show
their values), each equation is a box labelled by its primitive and output
types, edges follow the data flow, and outputs are double octagons.  A call
(a primitive declaring ``call_param``: ``jit``, ``checkpoint``, the
custom-rule calls ``custom_jvp_call``, ``custom_vjp_call``, ``custom_vmap_call``
...) is drawn inline as a cluster labelled with the function's name, so edges
run straight into the called program.  A loop or branch (``scan``, ``while``,
``cond``, ``custom_linear_solve``, ...) is a box inside a cluster that also
holds one nested cluster per carried program (the body, each branch; found
with ``core.subjaxprs``), whose outputs feed the box with dashed edges.
"""
from __future__ import annotations

import os
import shutil

from . import core

__all__ = ["to_dot", "render", "show"]

def _quote(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _types(vs):
    return " ".join(v.aval.str_short() for v in vs)


def _literal(a):
    val = a.val
    return repr(val.item() if hasattr(val, "item") else val)


class _Writer:
    """Emits nodes, edges and clusters with unique ids."""

    def __init__(self, var_name):
        self.lines = []
        self.edges = []  # emitted last, at top level, so that no node is pulled into a cluster
        self.count = 0
        self.clusters = 0
        self.name = var_name

    def node(self, label, indent, **attrs):
        nid = f"n{self.count}"
        self.count += 1
        extra = "".join(f", {k}={_quote(v)}" for k, v in attrs.items())
        self.lines.append(f"{indent}{nid} [label={_quote(label)}{extra}];")
        return nid

    def edge(self, src, dst, style=None):
        attrs = f" [style={style}]" if style else ""
        self.edges.append(f"  {src} -> {dst}{attrs};")

    def open_cluster(self, label, indent, style="rounded"):
        cid = self.clusters
        self.clusters += 1
        self.lines.append(f"{indent}subgraph cluster_{cid} {{")
        self.lines.append(f"{indent}  label={_quote(label)}; style={_quote(style)};")
        return indent + "  "

    def close_cluster(self, indent):
        self.lines.append(f"{indent[:-2]}}}")

    def program(self, jaxpr, env, indent):
        """Draw the equations of ``jaxpr``; ``env`` maps its input variables to node ids."""
        for eqn in jaxpr.eqns:
            call = eqn.prim.call_param
            program = eqn.params.get(call) if call is not None else None
            if isinstance(program, core.ClosedJaxpr):
                program = program.jaxpr
            if (isinstance(program, core.Jaxpr) and not program.constvars
                    and len(program.invars) == len(eqn.inputs)):
                self.inline_call(eqn, program, eqn.prim.name.removesuffix("_call"), env, indent)
            else:
                self.equation(eqn, env, indent)

    def sources(self, inputs, env, indent):
        """Node ids of ``inputs``; literals get small plaintext nodes."""
        out = []
        for a in inputs:
            if type(a) is core.Literal:
                out.append(self.node(_literal(a), indent, shape="plaintext"))
            else:
                out.append(env[a])
        return out

    def inline_call(self, eqn, program, kind, env, indent):
        name = eqn.params.get("name", "")
        inner = self.open_cluster(f"{kind}: {name}" if name else kind, indent)
        srcs = self.sources(eqn.inputs, env, inner)
        sub = dict(zip(program.invars, srcs))
        self.program(program, sub, inner)
        self.close_cluster(inner)
        for v, src in zip(eqn.outputs, self.sources(program.outvars, sub, indent)):
            env[v] = src

    def equation(self, eqn, env, indent):
        nested = [(_label(k), p) for k, p in core.subjaxprs(eqn.prim, eqn.params, named=True)]
        inner = indent
        if nested:
            inner = self.open_cluster(eqn.prim.name, indent, style="dashed")
        nid = self.node(f"{eqn.prim.name}\n{_types(eqn.outputs) or '()'}", inner, shape="box")
        for src in self.sources(eqn.inputs, env, inner):
            self.edge(src, nid)
        for label, program in nested:
            body = self.open_cluster(label, inner)
            sub = {v: self.node(f"{self.name(v)}:{v.aval.str_short()}", body, shape="ellipse")
                   for v in list(program.constvars) + list(program.invars)}
            self.program(program, sub, body)
            outs = self.sources(program.outvars, sub, body)
            self.close_cluster(body)
            for src in outs:
                self.edge(src, nid, style="dashed")
        if nested:
            self.close_cluster(inner)
        for v in eqn.outputs:
            env[v] = nid


def _label(key):
    """The cluster label of a carried program, from ``core.subjaxprs``'s label:
    ``body`` for ``jaxpr``, ``cond`` for ``cond_jaxpr``, ``branches[1]``."""
    return "body" if key == "jaxpr" else key.removesuffix("_jaxpr")


def to_dot(closed):
    """Graphviz DOT text of ``closed`` (a ``ClosedJaxpr``, or a ``Jaxpr``)."""
    if isinstance(closed, core.Jaxpr):
        closed = core.ClosedJaxpr(closed, [None] * len(closed.constvars))
    if not isinstance(closed, core.ClosedJaxpr):
        raise TypeError(f"to_dot: expected a ClosedJaxpr (the result of make_jaxpr), got "
                        f"{type(closed).__name__}")
    jaxpr = closed.jaxpr
    w = _Writer(core._var_namer())
    ind = "  "
    w.lines += ["digraph jaxpr {", f"{ind}rankdir=TB;",
                f"{ind}node [fontname=\"monospace\", fontsize=10];",
                f"{ind}edge [arrowsize=0.6];"]
    env = {}
    for v, c in zip(jaxpr.constvars, closed.consts):
        value = "" if c is None else core._const_value(c)
        env[v] = w.node(f"{w.name(v)}:{v.aval.str_short()}{value}", ind, shape="ellipse",
                        style="dashed")
    for v in jaxpr.invars:
        env[v] = w.node(f"{w.name(v)}:{v.aval.str_short()}", ind, shape="ellipse")
    w.program(jaxpr, env, ind)
    for i, src in enumerate(w.sources(jaxpr.outvars, env, ind)):
        out = w.node(f"out {i}: {jaxpr.outvars[i].aval.str_short()}", ind,
                     shape="doubleoctagon")
        w.edge(src, out)
    w.lines += w.edges
    w.lines.append("}")
    return "\n".join(w.lines) + "\n"


_FORMATS = ("svg", "png", "pdf")


def render(closed, fmt="svg"):
    """The picture of ``closed`` in ``fmt`` (bytes), drawn by Graphviz's ``dot``."""
    if fmt not in _FORMATS:
        raise ValueError(f"render: fmt must be one of {_FORMATS}, got {fmt!r}")
    dot = shutil.which("dot")
    if dot is None:
        raise RuntimeError(
            "Rendering a program needs Graphviz's `dot` program, which was not found on PATH. "
            "Install Graphviz (`apt-get install graphviz`, `brew install graphviz` or "
            "`conda install graphviz`), or use .to_dot() for the DOT text, or "
            ".show('file.dot') to write it.")
    import subprocess  # (here: ~7 ms of CPU at import tangentia)
    proc = subprocess.run([dot, f"-T{fmt}"], input=to_dot(closed).encode(),
                          capture_output=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"render: `dot -T{fmt}` failed: {proc.stderr.decode().strip()}")
    return proc.stdout


def show(closed, path):
    """Write the picture of ``closed`` to ``path``: ``.dot`` (text), ``.svg``, ``.png``
    or ``.pdf`` (rendered by ``dot``).  Returns ``path``."""
    suffix = os.path.splitext(os.fspath(path))[1].lower().lstrip(".")
    if suffix == "dot" or suffix == "gv":
        with open(path, "w") as f:
            f.write(to_dot(closed))
    elif suffix in _FORMATS:
        data = render(closed, suffix)
        with open(path, "wb") as f:
            f.write(data)
    else:
        raise ValueError(f"show: the path {os.fspath(path)!r} must end in .svg, .png, .pdf or "
                         f".dot (the suffix chooses the format)")
    return path


def _repr_svg_(closed):
    return render(closed, "svg").decode()


core.ClosedJaxpr.to_dot = to_dot
core.ClosedJaxpr.show = show
core.ClosedJaxpr._repr_svg_ = _repr_svg_
