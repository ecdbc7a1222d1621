"""``checkpoint`` (rematerialization): a call primitive whose reverse mode
saves only its inputs and recomputes everything else on the way back.

* partial evaluation computes the known outputs now, and stages the whole
  program for the unknown (tangent) outputs, so the only residuals are the
  call's inputs;
* transposition re-evaluates the program's non-linear equations (the primal
  recomputation) before transposing its linear ones.

These are the shared rules of call-like primitives (``interpreters.call_rules``)
in their ``remat`` variant.  A ``policy`` parameter (``checkpoint(f,
policy=...)``, see ``tangentia.checkpoint_policies``) lets partial evaluation
save the outputs of the equations it approves instead of recomputing them.

``name`` (``checkpoint_name``) is the identity with a label that policies can
select values by.
"""
from __future__ import annotations

from ..compiler.backend import compile_program
from ..core import Primitive
from ..interpreters import ad
from ..interpreters.batching import primitive_batchers
from ..interpreters.call_rules import def_call_rules

remat_p = Primitive("checkpoint", multiple_results=True, call_param="jaxpr")


def _remat_impl(*args, jaxpr, policy=None):
    return compile_program(jaxpr)(*args)


remat_p.impl = _remat_impl
remat_p.abstract_eval = lambda *avals, jaxpr, policy=None: [v.aval for v in jaxpr.outvars]
# (the program is shown, as JAX shows its ``remat``'s; a policy only when one is set)
remat_p.print_params = lambda params: {k: v for k, v in params.items()
                                       if k != "policy" or v is not None}


def_call_rules(remat_p, remat=True)


# name: the identity, labelled for checkpoint policies (``checkpoint_name``).
name_p = Primitive("name")
name_p.impl = lambda x, name: x
name_p.abstract_eval = lambda x, name: x
ad.defjvp(name_p, lambda t, ans, x, name: t)
ad.primitive_transposes[name_p] = lambda ct, x, name: (ct,)
primitive_batchers[name_p] = lambda args, dims, name: (name_p.bind(args[0], name=name), dims[0])


def checkpoint_name(x, name):
    """``x`` itself, labelled ``name`` for ``checkpoint`` policies
    (``save_only_these_names`` ...)."""
    return name_p.bind(x, name=str(name))
