"""``jit``: a call primitive carrying a staged program.

Its rules transform the carried program: JVP -> the JVP program, vmap ->
the batched program, transpose -> the transposed program, and partial
evaluation splits it into a known and an unknown program, so ``grad(jit(f))``
keeps both halves compiled.  The rules are the shared ones of call-like
primitives (``interpreters.call_rules``); they propagate every parameter
(``backend`` too) and name the transformed program (``jvp(f)``, ...).
"""
from __future__ import annotations

from ..compiler.backend import compile_program
from ..core import Primitive
from ..interpreters.call_rules import def_call_rules

jit_p = Primitive("jit", multiple_results=True, call_param="jaxpr")


def _jit_impl(*args, jaxpr, name, backend=None):
    return compile_program(jaxpr, backend)(*args)


jit_p.impl = _jit_impl
jit_p.abstract_eval = lambda *avals, jaxpr, name, backend=None: [v.aval for v in jaxpr.outvars]
jit_p.print_params = lambda params: {"name": params["name"], "jaxpr": params["jaxpr"]}


def_call_rules(jit_p)
