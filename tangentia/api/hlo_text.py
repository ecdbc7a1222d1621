"""``jit(f).lower(x).compiler_ir("hlo")``: the staged program in XLA's HLO text layout.

tangentia has no XLA, so this is not an XLA module (no layouts chosen, no fusion, no
algebraic simplification): it is tangentia's program printed as HLO text, one instruction
per equation, with XLA's opcode where a primitive has one and the primitive's name where it
has none.  Two primitives are written as JAX lowers them, so that programs JAX lowers to the
same HLO print the same here: ``integer_pow`` as its chain of ``multiply`` (``x ** 2``,
``x * x`` and ``jnp.square(x)`` print the same; optax's ``abs_sq`` test compares them) and
``square`` as one ``multiply``.  The text is stable: names are numbered in the order the
instructions are printed, never from object ids.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from .. import core, dtypes

__all__ = ["HloComputation"]

# XLA's opcodes of the primitives that have one (the others print under their own name)
_OPCODES = {
    "add": "add", "add_any": "add", "sub": "subtract", "mul": "multiply", "div": "divide",
    "neg": "negate", "max": "maximum", "min": "minimum", "pow": "power", "rem": "remainder",
    "sin": "sine", "cos": "cosine", "tan": "tan", "tanh": "tanh", "exp": "exponential",
    "exp2": "exponential", "log": "log", "log1p": "log-plus-one", "expm1": "exponential-minus-one",
    "sqrt": "sqrt", "rsqrt": "rsqrt", "cbrt": "cbrt", "abs": "abs", "sign": "sign",
    "floor": "floor", "ceil": "ceil", "round": "round-nearest-even", "atan2": "atan2",
    "and": "and", "or": "or", "not": "not", "xor": "xor", "select_n": "select",
    "convert_element_type": "convert", "reshape": "reshape", "broadcast_in_dim": "broadcast",
    "transpose": "transpose", "concatenate": "concatenate", "dot_general": "dot",
    "real": "real", "imag": "imag", "complex": "complex", "iota": "iota", "clamp": "clamp",
    "is_finite": "is-finite", "population_count": "popcnt", "shift_left": "shift-left",
    "shift_right_arithmetic": "shift-right-arithmetic",
    "shift_right_logical": "shift-right-logical", "logistic": "logistic",
}
_COMPARISONS = {"eq": "EQ", "ne": "NE", "lt": "LT", "le": "LE", "gt": "GT", "ge": "GE"}


def _element_type(dtype) -> str:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return "pred"
    if dtypes.is_key(dt):
        return "key<fry>"
    if dt.kind == "V":
        return dt.name
    if dt.kind in "iu":
        return f"{'s' if dt.kind == 'i' else 'u'}{8 * dt.itemsize}"
    if dt.kind == "c":
        return f"c{8 * dt.itemsize}"
    if dt.name == "bfloat16":
        return "bf16"
    if dt.kind == "f" and dt.name.startswith("float") and dt.name[5:].isdigit():
        return f"f{8 * dt.itemsize}"
    return dt.name


def _shape(aval) -> str:
    """An array's HLO type, ``f64[2,3]{1,0}`` (the default row-major layout)."""
    dims = ",".join(str(d) for d in aval.shape)
    layout = "{" + ",".join(str(i) for i in reversed(range(len(aval.shape)))) + "}" \
        if aval.shape else ""
    return f"{_element_type(aval.dtype)}[{dims}]{layout}"


def _tuple_shape(avals) -> str:
    return "(" + ", ".join(_shape(a) for a in avals) + ")"


def _constant(value) -> str:
    a = np.asarray(value)
    if a.size > 16:
        return "{...}"
    if a.ndim == 0:
        return np.format_float_positional(a, trim="-") if a.dtype.kind == "f" else \
            str(a.item()).lower() if a.dtype.kind == "b" else str(a.item())
    return "{" + ", ".join(_constant(v) for v in a) + "}"


def _attribute(value) -> str:
    if isinstance(value, (core.Jaxpr, core.ClosedJaxpr)):
        return "{...}"
    if isinstance(value, (tuple, list)):
        return "{" + ",".join(_attribute(v) for v in value) + "}"
    if isinstance(value, np.dtype) or isinstance(value, type):
        return _element_type(value)
    return str(value)


class HloComputation:
    """What ``Lowered.compiler_ir("hlo")`` returns (JAX's ``XlaComputation``): the staged
    program as HLO text (``as_hlo_text()``), see the module's docstring.

    Args:
      jaxpr: the program (its first ``len(consts)`` inputs are its constants).
      consts: the constants' values (printed as ``constant`` instructions).
      name: the jitted function's name.

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> print(tg.jit(lambda x: x ** 2).lower(tnp.ones(2)).compiler_ir("hlo").as_hlo_text())
      HloModule jit__lambda, entry_computation_layout={(f64[2]{0})->f64[2]{0}}
      <BLANKLINE>
      ENTRY main.3 {
        Arg_0.1 = f64[2]{0} parameter(0)
        ROOT multiply.2 = f64[2]{0} multiply(Arg_0.1, Arg_0.1)
      }
      <BLANKLINE>
    """

    def __init__(self, jaxpr: core.Jaxpr, consts: Any, name: str):
        self._jaxpr = jaxpr
        self._consts = list(consts)
        self._name = name

    def name(self) -> str:
        """The module's name, as JAX's: ``jit_`` and the function's name (``<lambda>``:
        ``jit__lambda``)."""
        return "jit_" + re.sub(r"[^0-9A-Za-z_]", "_", self._name).rstrip("_")

    def as_hlo_text(self) -> str:
        j, n = self._jaxpr, len(self._consts)
        lines: list[list[str]] = []          # [name, type, body] of each instruction
        names: dict[Any, str] = {}

        def emit(base, type_text, body):
            nm = f"{base}.{len(lines) + 1}"
            lines.append([nm, type_text, body])
            return nm

        def operand(a):
            if type(a) is core.Literal:
                return emit("constant", _shape(a.aval), f"constant({_constant(a.val)})")
            return names[a]

        params = j.invars[n:]
        for v, c in zip(j.invars[:n], self._consts):
            names[v] = emit("constant", _shape(v.aval), f"constant({_constant(c)})")
        for i, v in enumerate(params):
            names[v] = emit(f"Arg_{i}", _shape(v.aval), f"parameter({i})")
        for eqn in j.eqns:
            args = [operand(a) for a in eqn.inputs]
            name = eqn.prim.name
            if name in ("integer_pow", "square") and len(eqn.outputs) == 1:
                names[eqn.outputs[0]] = _power(emit, _shape(eqn.outputs[0].aval), args[0],
                                               eqn.params.get("y", 2))
                continue
            if name in _COMPARISONS:
                body = f"compare({', '.join(args)}), direction={_COMPARISONS[name]}"
            else:
                attrs = "".join(f", {key}={_attribute(val)}" for key, val in eqn.params.items())
                body = f"{_OPCODES.get(name, name)}({', '.join(args)}){attrs}"
            if eqn.prim.multiple_results:
                tup = emit(name, _tuple_shape([v.aval for v in eqn.outputs]), body)
                for idx, v in enumerate(eqn.outputs):
                    names[v] = emit("get-tuple-element", _shape(v.aval),
                                    f"get-tuple-element({tup}), index={idx}")
            else:
                names[eqn.outputs[0]] = emit(_OPCODES.get(name, name),
                                             _shape(eqn.outputs[0].aval), body)
        outs = j.outvars
        if len(outs) == 1:
            root = operand(outs[0])
            if not j.eqns or root != lines[-1][0]:   # (an input or an earlier value)
                root = emit("copy", _shape(outs[0].aval), f"copy({root})")
            out_type = _shape(outs[0].aval)
        else:
            out_type = _tuple_shape([a.aval for a in outs])
            emit("tuple", out_type, f"tuple({', '.join(operand(a) for a in outs)})")
        lines[-1][0] = "ROOT " + lines[-1][0]
        layout = f"{{{_tuple_shape([v.aval for v in params])}->{out_type}}}"
        return (f"HloModule {self.name()}, entry_computation_layout={layout}\n\n"
                f"ENTRY main.{len(lines) + 1} {{\n"
                + "".join(f"  {nm} = {t} {body}\n" for nm, t, body in lines) + "}\n")

    def __str__(self):
        return self.as_hlo_text()


def _power(emit, type_text, x, y):
    """``x ** y`` for a Python int ``y`` as JAX lowers ``integer_pow``: multiplications by
    repeated squaring (then one division for a negative ``y``); the name of the result."""
    if y == 0:
        return emit("constant", type_text, "constant(1)")
    is_reciprocal, y = y < 0, abs(y)
    acc = None
    while y > 0:
        if y & 1:
            acc = x if acc is None else emit("multiply", type_text, f"multiply({acc}, {x})")
        y >>= 1
        if y > 0:
            x = emit("multiply", type_text, f"multiply({x}, {x})")
    if is_reciprocal:
        one = emit("constant", type_text, "constant(1)")
        acc = emit("divide", type_text, f"divide({one}, {acc})")
    return acc
