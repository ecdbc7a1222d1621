"""JAX's partial-evaluation API of ``jax.interpreters.partial_eval`` that flax calls
(``lazy_init`` and the broadcast variables of ``nn.scan``): ``PartialVal`` and
``trace_to_jaxpr_nounits``.  Installed on ``tangentia.interpreters.partial_eval`` by
``tangentia.extend`` (the layer that offers JAX's extension API), made with that
module's partial evaluator (the one ``linearize`` uses): operations on known values
are computed now, those touching an unknown one are recorded."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from .. import core as _core
from ..interpreters import partial_eval as _pe


class PartialVal(NamedTuple):
    """A value known (``PartialVal.known(x)``: ``(None, x)``) or only by its type
    (``PartialVal.unknown(aval)``: ``(aval, None)``), as JAX's."""

    pv: Any
    const: Any

    @classmethod
    def known(cls, const: Any) -> PartialVal:
        return cls(None, const)

    @classmethod
    def unknown(cls, aval: Any) -> PartialVal:
        return cls(aval, None)

    def is_known(self) -> bool:
        return self.pv is None

    def get_known(self) -> Any:
        return self.const if self.pv is None else None

    def get_aval(self) -> Any:
        return _core.get_aval(self.const) if self.pv is None else self.pv


def trace_to_jaxpr_nounits(fun: Any, pvals: Sequence[PartialVal], instantiate: Any = False
                           ) -> tuple[_core.Jaxpr, list[PartialVal], list[Any]]:
    """Run ``fun`` (a ``WrappedFun`` or a function of the flat values) with the known
    values of ``pvals`` and the unknown ones traced: ``(jaxpr, out_pvals, consts)``,
    the program of the unknown outputs (inputs: the unknown ``pvals``) and each
    output as a ``PartialVal`` (``instantiate``: a bool, or one per output, makes known
    outputs outputs of the program too), as JAX's."""
    call: Callable = getattr(fun, "call_wrapped", fun)
    builder = _pe.JaxprBuilder(getattr(fun, "__name__", "fun"))
    trace = _pe.JaxprTrace(_core.current_trace(), builder, forward_known=True,
                           label="partial evaluation")
    in_tracers = [trace.new_arg(p.pv) for p in pvals if p.pv is not None]
    it = iter(in_tracers)
    args = [next(it) if p.pv is not None else p.const for p in pvals]
    try:
        with _core.set_trace(trace):
            outs = list(call(*args))
        inst = (instantiate if isinstance(instantiate, (list, tuple))
                else [instantiate] * len(outs))
        unknown = [not trace.is_known(o) or bool(i) for o, i in zip(outs, inst)]
        jaxpr, consts = builder.build(in_tracers, [o for o, u in zip(outs, unknown) if u],
                                      trace)
    finally:
        trace.alive = False
    out_pvals = [PartialVal.unknown(_core.get_aval(o) if trace.is_known(o) else o.aval)
                 if u else PartialVal.known(o) for o, u in zip(outs, unknown)]
    return jaxpr, out_pvals, consts
