"""JAX's primitive names in ``tangentia.lax`` (``lax.add_p``, ``lax.sin_p``, ``lax.cond_p``,
...), so that code binding a primitive directly (``lax.add_p.bind(x, y)``) runs.

Where our primitive means the same and takes the same parameters, the name *is* our
primitive (``lax.add_p is tangentia.primitives.elementwise.add_p``).  Where JAX's
primitive carries parameters ours does not have (``accuracy``, sharding hints,
``precision``), names them differently, or where we compute the operation as a
composition rather than one primitive, the name is a :class:`JaxPrimitive`: its
``bind`` takes JAX's operands and parameters and computes the same result with our
operations.  The JAX names we do not provide, and why, are listed in
``tests/test_api_completeness_lax.py``.
"""
from __future__ import annotations

import numpy as np

from .. import core
from ..primitives import bits as _BITS
from ..primitives import contraction as _C
from ..primitives import control_flow as _CF
from ..primitives import elementwise as _E
from ..primitives.fft import fft as _fft
from ..primitives import linear_solve as _LS
from ..primitives import misc as _M
from ..primitives import reductions as _R
from ..primitives import special as _SP
from ..primitives import structural as _S
from . import collectives as _col
from . import convolution as _conv
from . import enums as _enums
from . import numeric as _num
from . import ops as _ops
from . import shaping as _shp
from . import slicing as _sl
from . import windowed as _win


class JaxPrimitive:
    """A JAX primitive name whose ``bind(*operands, **params)`` takes JAX's operands
    and parameters and computes the operation with tangentia's operations (under
    every transformation, as those operations do).

    Args:
      name: JAX's name of the primitive (``"exp"``, ``"reduce_sum"``, ...).
      bind: the function implementing ``bind``.
      multiple_results: whether ``bind`` returns a list (as JAX's primitive does).
      primitive: our primitive that JAX's name stands for, when it is one (JAX's differs
        only in hints): the name then compares and hashes equal to it, so a table keyed by
        ``lax.exp_p`` is found from the ``eqn.primitive`` of a program.
    """

    def __init__(self, name, bind, multiple_results=False, primitive=None):
        self.name = name
        self._bind = bind
        self.multiple_results = multiple_results
        self.primitive = primitive

    def __eq__(self, other):
        return self is other or (self.primitive is not None and other is self.primitive)

    def __hash__(self):
        return hash(self.primitive) if self.primitive is not None else id(self)

    def bind(self, *args, **params):
        """JAX's primitive applied to the operands ``args`` with JAX's ``params``."""
        return self._bind(*args, **params)

    def __repr__(self):
        return self.name


_HINTS = ("accuracy", "sharding", "out_sharding", "precision", "input_dtype", "out_dtype")


def _dropping_hints(prim):
    """``prim.bind`` ignoring JAX's accuracy, precision and sharding hints."""
    def bind(*args, **params):
        return prim.bind(*args, **{k: v for k, v in params.items() if k not in _HINTS})
    return bind


def _unary(fn):
    """A one-operand function, ignoring JAX's hints."""
    return lambda x, **params: fn(x)


def _gather_dims(dn):
    return _enums.GatherDimensionNumbers(*(tuple(getattr(dn, f)) for f in (
        "offset_dims", "collapsed_slice_dims", "start_index_map", "operand_batching_dims",
        "start_indices_batching_dims")))


def _scatter_dims(dn):
    return _enums.ScatterDimensionNumbers(*(tuple(getattr(dn, f)) for f in (
        "update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
        "operand_batching_dims", "scatter_indices_batching_dims")))


def _mode(mode):
    """Our GatherScatterMode for JAX's (a member of JAX's enum, or a string)."""
    if mode is None or isinstance(mode, str):
        return mode
    return _enums.GatherScatterMode[mode.name]


def _scatter(fn):
    def bind(operand, indices, updates, *, dimension_numbers, indices_are_sorted=False,
             unique_indices=False, mode=None, update_jaxpr=None, update_consts=()):
        return fn(operand, indices, updates, _scatter_dims(dimension_numbers),
                  indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                  mode=_mode(mode))
    return bind


def _gather(operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted=False,
            unique_indices=False, mode=None, fill_value=None):
    return _sl.gather(operand, indices, _gather_dims(dimension_numbers), slice_sizes,
                      indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                      mode=_mode(mode), fill_value=fill_value)


def _reduce_window(computation, monoid):
    """JAX's ``reduce_window_<monoid>``: the window reduction from the monoid's identity."""
    def bind(operand, *, window_dimensions, window_strides, padding, base_dilation,
             window_dilation):
        init = _win._identity(monoid, core.get_aval(operand).dtype)
        return _win.reduce_window(operand, init, computation, window_dimensions,
                                  window_strides, padding, base_dilation, window_dilation)
    return bind


def _copy(x):
    return x if isinstance(x, core.Tracer) else np.array(x, copy=True)


def _dot_general(lhs, rhs, *, dimension_numbers, preferred_element_type=None, **hints):
    out = _ops.dot_general(lhs, rhs, dimension_numbers)
    return out if preferred_element_type is None else _S.convert_element_type(
        out, preferred_element_type)


def _conv_general_dilated(lhs, rhs, *, dimension_numbers, out_sharding=None, **params):
    dn = _enums.ConvDimensionNumbers(*(tuple(getattr(dimension_numbers, f)) for f in (
        "lhs_spec", "rhs_spec", "out_spec")))
    return _conv.conv_general_dilated(lhs, rhs, dimension_numbers=dn, **params)


def _psum_like(fn):
    def bind(*args, axes, axis_index_groups=None):
        return list(fn(tuple(args), axes, axis_index_groups=axis_index_groups))
    return bind


_SAME = {   # JAX's name: our primitive, operands and parameters alike
    "abs": _E.abs_p, "acos": _E.arccos_p, "acosh": _E.arccosh_p, "add": _E.add_p,
    "asin": _E.arcsin_p, "asinh": _E.arcsinh_p, "atan": _E.arctan_p, "atan2": _E.atan2_p,
    "atanh": _E.arctanh_p, "ceil": _E.ceil_p, "complex": _E.complex_p, "cosh": _E.cosh_p,
    "div": _E.div_p, "eq": _E.eq_p, "floor": _E.floor_p, "ge": _E.ge_p, "gt": _E.gt_p,
    "imag": _E.imag_p, "integer_pow": _E.integer_pow_p, "le": _E.le_p, "lt": _E.lt_p,
    "max": _E.maximum_p, "min": _E.minimum_p, "ne": _E.ne_p, "neg": _E.neg_p,
    "pow": _E.pow_p, "real": _E.real_p, "sign": _E.sign_p, "sinh": _E.sinh_p,
    "sub": _E.sub_p, "and": _E.bitwise_and_p, "or": _E.bitwise_or_p, "xor": _E.bitwise_xor_p,
    "not": _E.bitwise_not_p, "is_finite": _E.isfinite_p, "nextafter": _M.nextafter_p,
    "digamma": _SP.digamma_p, "lgamma": _SP.lgamma_p, "erf": _SP.erf_p, "erfc": _SP.erfc_p,
    "erf_inv": _SP.erfinv_p, "igamma": _SP.gammainc_p, "igammac": _SP.gammaincc_p,
    "igamma_grad_a": _SP.igamma_grad_a_p, "bessel_i0e": _SP.i0e_p, "bessel_i1e": _SP.i1e_p,
    "regularized_incomplete_beta": _SP.betainc_p, "polygamma": _SP.polygamma_p,
    "zeta": _SP.zeta_p, "transpose": _S.transpose_p, "stop_gradient": _S.stop_gradient_p,
    "cumsum": _R.cumsum_p,
    "cummax": _M.cummax_p, "cummin": _M.cummin_p, "cumprod": _M.cumprod_p,
    "reduce_max": _R.reduce_max_p, "reduce_min": _R.reduce_min_p,
    "reduce_prod": _R.reduce_prod_p, "reduce_and": _R.reduce_and_p,
    "reduce_or": _R.reduce_or_p, "cond": _CF.cond_p, "while": _CF.while_p, "scan": _CF.scan_p,
    "linear_solve": _LS.linear_solve_p, "reduce_xor": _BITS.reduce_xor_p,
    "reduce_precision": _BITS.reduce_precision_p,
    "bitcast_convert_type": _BITS.bitcast_convert_type_p,
}

# JAX's names of our primitives whose JAX parameters add accuracy / sharding / dtype hints,
# which do not change a float64 CPU result
_HINTED = {"exp": _E.exp_p, "log": _E.log_p, "log1p": _E.log1p_p, "expm1": _E.expm1_p,
           "tanh": _E.tanh_p, "sin": _E.sin_p, "cos": _E.cos_p, "tan": _E.tan_p,
           "sqrt": _E.sqrt_p, "cbrt": _E.cbrt_p, "conj": _E.conj_p, "mul": _E.mul_p,
           "reduce_sum": _R.reduce_sum_p, "convert_element_type": _S.convert_element_type_p}

_ADAPTED = {   # JAX's name: bind(JAX's operands, **JAX's params) over our operations
    **{name: (_dropping_hints(prim), False) for name, prim in _HINTED.items()},
    # compositions of ours, or our primitives with other parameters
    "exp2": (_unary(_num.exp2), False), "rsqrt": (_unary(_ops.rsqrt), False),
    "logistic": (_unary(_ops.logistic), False), "square": (_unary(_ops.square), False),
    "rem": (_num.rem, False),   # C's remainder (sign of x); our rem_p is NumPy's floor remainder
    "clz": (_unary(_num.clz), False), "population_count": (_unary(_num.population_count), False),
    "copy": (_unary(_copy), False),
    "round": (lambda x, *, rounding_method: _num.round(x, rounding_method), False),
    "shift_left": (_num.shift_left, False),
    "shift_right_arithmetic": (_num.shift_right_arithmetic, False),
    "shift_right_logical": (_num.shift_right_logical, False), "mulhi": (_num.mulhi, False),
    "clamp": (_ops.clamp, False), "select_n": (_shp.select_n, False),
    "argmax": (lambda x, *, axes, index_dtype: _num.argmax(x, axes[0], index_dtype), False),
    "argmin": (lambda x, *, axes, index_dtype: _num.argmin(x, axes[0], index_dtype), False),
    "concatenate": (lambda *xs, dimension: _ops.concatenate(xs, dimension), False),
    "reshape": (lambda x, *, new_sizes, dimensions=None, sharding=None: _S.reshape(
        x if dimensions is None else _S.transpose(x, dimensions), tuple(new_sizes)), False),
    "broadcast_in_dim": (lambda x, *dyn, shape, broadcast_dimensions, sharding=None:
                         _ops.broadcast_in_dim(x, shape, broadcast_dimensions), False),
    "squeeze": (lambda x, *, dimensions: _ops.squeeze(x, dimensions), False),
    "rev": (lambda x, *, dimensions: _shp.rev(x, dimensions), False),
    "pad": (lambda x, value, *, padding_config: _shp.pad(x, value, padding_config), False),
    "slice": (lambda x, *, start_indices, limit_indices, strides=None: _ops.slice(
        x, start_indices, limit_indices, strides), False),
    "dynamic_slice": (lambda x, *idx, slice_sizes: _ops.dynamic_slice(x, idx, slice_sizes),
                      False),
    "dynamic_update_slice": (lambda x, update, *idx: _ops.dynamic_update_slice(x, update, idx),
                             False),
    "iota": (lambda *dyn, dtype, shape, dimension, sharding=None: _shp.broadcasted_iota(
        dtype, shape, dimension), False),
    "tile": (lambda x, *, reps: _shp.tile(x, reps), False),
    "cumlogsumexp": (lambda x, *, axis, reverse: _shp.cumlogsumexp(x, axis, reverse), False),
    "dot_general": (_dot_general, False),
    "conv_general_dilated": (_conv_general_dilated, False),
    "fft": (lambda x, *, fft_type, fft_lengths: _fft(x, fft_type, fft_lengths), False),
    "sort": (lambda *xs, dimension, is_stable, num_keys: list(
        _ops.sort(xs, dimension=dimension, is_stable=is_stable, num_keys=num_keys)), True),
    "top_k": (lambda x, *, k, axis=-1: list(_shp.top_k(x, k, axis=axis)), True),
    "split": (lambda x, *, sizes, axis: list(_shp.split(x, sizes, axis)), True),
    "stack": (lambda *xs, axis: _shp.stack(xs, axis), False),
    "unstack": (lambda x, *, axis: list(_shp.unstack(x, axis)), True),
    "optimization_barrier": (lambda *xs: list(_shp.optimization_barrier(xs)), True),
    "gather": (_gather, False),
    "scatter": (_scatter(_sl.scatter), False), "scatter-add": (_scatter(_sl.scatter_add), False),
    "scatter-sub": (_scatter(_sl.scatter_sub), False),
    "scatter-mul": (_scatter(_sl.scatter_mul), False),
    "scatter-min": (_scatter(_sl.scatter_min), False),
    "scatter-max": (_scatter(_sl.scatter_max), False),
    "reduce_window_sum": (_reduce_window(_E.add, "add"), False),
    "reduce_window_max": (_reduce_window(_E.maximum, "max"), False),
    "reduce_window_min": (_reduce_window(_E.minimum, "min"), False),
    "psum": (_psum_like(_col.psum), True), "pmax": (_psum_like(_col.pmax), True),
    "pmin": (_psum_like(_col.pmin), True),
    "axis_index": (lambda *, axis_name: _col.axis_index(axis_name), False),
    "ppermute": (lambda x, *, axis_name, perm: _col.ppermute(x, axis_name, perm), False),
    "all_gather": (lambda x, *, all_gather_dimension, axis_name, axis_index_groups=None,
                   axis_size=None, tiled=False: _col.all_gather(
                       x, axis_name, axis=all_gather_dimension, tiled=tiled), False),
    "all_to_all": (lambda x, *, split_axis, concat_axis, axis_name, axis_index_groups=None,
                   tiled=False: _col.all_to_all(x, axis_name, split_axis, concat_axis,
                                                tiled=tiled), False),
}


# JAX's names whose bind adapts JAX's parameters but whose program equation is our primitive:
# ``eqn.primitive == lax.dot_general_p`` holds for the ``dot_general`` of ``jnp.dot``
_STAGED_AS = {**_HINTED, "dot_general": _C.dot_general_p}

PRIMITIVES = {**_SAME, **{name: JaxPrimitive(name, bind, multiple, _STAGED_AS.get(name))
                          for name, (bind, multiple) in _ADAPTED.items()}}
"""JAX's primitive name (``"add"``, ``"scatter-add"``, ...) -> our primitive or
:class:`JaxPrimitive`."""

for _name, _prim in PRIMITIVES.items():
    globals()[_name.replace("-", "_") + "_p"] = _prim

__all__ = ["JaxPrimitive", "PRIMITIVES"] + sorted(
    n.replace("-", "_") + "_p" for n in PRIMITIVES)
