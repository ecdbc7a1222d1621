"""The public transformations, by topic: ``differentiation`` (jvp, linearize,
vjp, fwd_and_bwd, grad, value_and_grad, jacfwd, jacrev, hessian, linear_transpose),
``vectorization`` (vmap, pmap) and ``staging`` (jit, checkpoint, make_jaxpr,
eval_shape)."""
from .differentiation import (fwd_and_bwd, grad, hessian, jacfwd, jacrev, jvp, linear_transpose,
                              linearize, value_and_grad, vjp)
from .staging import (Lowered, ShapeDtypeStruct, checkpoint, disable_jit, ensure_compile_time_eval,
                      eval_shape, jit, make_jaxpr, remat)
from .vectorization import pmap, vmap

__all__ = ["fwd_and_bwd", "grad", "hessian", "jacfwd", "jacrev", "jvp", "linear_transpose", "linearize",
           "value_and_grad", "vjp", "Lowered", "ShapeDtypeStruct", "checkpoint", "disable_jit", "ensure_compile_time_eval", "eval_shape",
           "jit", "make_jaxpr", "pmap", "remat", "vmap"]
