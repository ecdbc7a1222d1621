"""Every primitive, through the public ``tangentia.numpy`` API.

For each case (a function of float64 arrays, its NumPy reference and inputs
chosen away from non-differentiable points) the suite checks:

* the eager value against NumPy,
* JVP and VJP against central finite differences (``check_grads``, order 2
  unless the function is piecewise linear, where order 1 suffices),
* ``jit(f)`` against NumPy (value and dtype),
* ``vmap(f)`` against a Python loop, with several ``in_axes`` layouts,

plus targeted tests of things a generic table cannot express (integer-valued
reductions, dtypes of conversions, repeated-index scatters, zeros in prod).
"""
from __future__ import annotations

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.test_util import check_grads

RTOL = 1e-12
ATOL = 1e-12


def _rng(seed):
    return np.random.default_rng(seed)


def _normal(seed, shape):
    return _rng(seed).standard_normal(shape)


def _uniform(seed, shape, lo, hi):
    return _rng(seed).uniform(lo, hi, shape)


def _signed(seed, shape, lo, hi):
    """Values with |x| in [lo, hi] and random signs (away from zero)."""
    r = _rng(seed)
    return r.uniform(lo, hi, shape) * r.choice([-1.0, 1.0], shape)


def _frac(seed, shape, lo=0.15, hi=0.35):
    """Values whose fractional part is in [lo, hi] (away from integers and .5)."""
    r = _rng(seed)
    return r.integers(-3, 3, shape) + r.uniform(lo, hi, shape)


def _distinct(seed, shape):
    """A permutation of well-separated values (no ties for max/min/argmax)."""
    n = int(np.prod(shape))
    vals = np.linspace(-2.0, 2.0, n) + 0.01 * _rng(seed + 100).standard_normal(n)
    return _rng(seed).permutation(vals).reshape(shape)


class Case:
    """One primitive check: ``fn(*args)`` should equal ``ref(*args)``."""

    def __init__(self, name, fn, ref, args, order=2, grad=True, vmap=True, atol=None, rtol=None,
                 eps=None):
        self.name = name
        self.fn = fn
        self.ref = ref
        self.args = tuple(np.asarray(a) for a in args)
        self.order = order
        self.grad = grad
        self.vmap = vmap
        self.tol = dict(atol=atol, rtol=rtol, eps=eps)

    def __repr__(self):
        return self.name


# ---------------------------------------------------------------------------
# The case table

S = (3, 4)

UNARY = [
    ("neg", tnp.negative, np.negative, _normal(1, S)),
    ("exp", tnp.exp, np.exp, _normal(2, S)),
    ("log", tnp.log, np.log, _uniform(3, S, 0.3, 3.0)),
    ("log1p", tnp.log1p, np.log1p, _uniform(4, S, -0.7, 2.0)),
    ("expm1", tnp.expm1, np.expm1, _normal(5, S)),
    ("sin", tnp.sin, np.sin, _normal(6, S)),
    ("cos", tnp.cos, np.cos, _normal(7, S)),
    ("tan", tnp.tan, np.tan, _uniform(8, S, -1.2, 1.2)),
    ("arcsin", tnp.arcsin, np.arcsin, _uniform(9, S, -0.85, 0.85)),
    ("arccos", tnp.arccos, np.arccos, _uniform(10, S, -0.85, 0.85)),
    ("arctan", tnp.arctan, np.arctan, _normal(11, S) * 2),
    ("sinh", tnp.sinh, np.sinh, _normal(12, S)),
    ("cosh", tnp.cosh, np.cosh, _normal(13, S)),
    ("tanh", tnp.tanh, np.tanh, _normal(14, S)),
    ("arcsinh", tnp.arcsinh, np.arcsinh, _normal(15, S) * 2),
    ("arccosh", tnp.arccosh, np.arccosh, _uniform(16, S, 1.2, 4.0)),
    ("arctanh", tnp.arctanh, np.arctanh, _uniform(17, S, -0.85, 0.85)),
    ("sqrt", tnp.sqrt, np.sqrt, _uniform(18, S, 0.3, 4.0)),
    ("cbrt", tnp.cbrt, np.cbrt, _signed(19, S, 0.3, 4.0)),
    ("abs", tnp.abs, np.abs, _signed(20, S, 0.2, 3.0)),
    ("square", tnp.square, np.square, _normal(21, S)),
    ("reciprocal", tnp.reciprocal, np.reciprocal, _signed(22, S, 0.5, 2.0)),
]

CASES = []
for _name, _f, _ref, _x in UNARY:
    CASES.append(Case(_name, _f, _ref, [_x], order=1 if _name == "abs" else 2))

# Piecewise-constant functions: value and zero derivative (multiplied by x so
# the function is not constant and the zero tangent is visible).
for _name, _f, _ref in [("sign", tnp.sign, np.sign), ("floor", tnp.floor, np.floor),  # type: ignore[assignment]  # loop variables shared by tables of other function types
                        ("ceil", tnp.ceil, np.ceil), ("round", tnp.round, np.round),
                        ("rint", tnp.rint, np.rint)]:
    CASES.append(Case(f"{_name}_times_x", lambda x, _f=_f: _f(x) * x,
                      lambda x, _ref=_ref: _ref(x) * x, [_frac(30, S)]))

CASES += [
    Case("integer_pow_3", lambda x: x ** 3, lambda x: x ** 3, [_normal(40, S)]),
    Case("integer_pow_neg2", lambda x: x ** -2, lambda x: x ** -2.0, [_signed(41, S, 0.6, 2.0)]),
    Case("integer_pow_0", lambda x: x ** 0 + x, lambda x: x ** 0 + x, [_normal(42, S)]),
    Case("integer_pow_1", lambda x: x ** 1 * x, lambda x: x * x, [_normal(43, S)]),
    Case("integer_pow_5", lambda x: x ** 5, lambda x: x ** 5, [_normal(44, S)]),
]

# Binary elementwise, with broadcasting variants.
_BCAST = [("same", S, S), ("row", S, (4,)), ("col_row", (3, 1), (1, 4)), ("scalar_arr", (), S)]


def _binary_inputs(name, sx, sy, seed):
    if name in ("divide",):
        return _normal(seed, sx), _signed(seed + 1, sy, 0.5, 2.0)
    if name == "power":
        return _uniform(seed, sx, 0.5, 2.5), _normal(seed + 1, sy)
    if name in ("maximum", "minimum"):
        x = _normal(seed, sx)
        y = _normal(seed + 1, sy)
        # move y away from x (no ties) after broadcasting
        bx, by = np.broadcast_arrays(x, y)
        close = np.abs(bx - by) < 0.1
        if close.any():
            return _binary_inputs(name, sx, sy, seed + 7)
        return x, y
    if name == "arctan2":
        return _normal(seed, sx), _signed(seed + 1, sy, 0.3, 2.0)
    if name == "remainder":
        y = _uniform(seed + 1, sy, 1.1, 1.9) * _rng(seed + 2).choice([-1.0, 1.0], sy)
        q = _frac(seed, np.broadcast_shapes(sx, sy), 0.2, 0.8)
        x = q * y
        if sx != x.shape:  # make x have shape sx: only used with matching shapes
            raise AssertionError("remainder inputs must have the broadcast shape as x")
        return x, y
    return _normal(seed, sx), _normal(seed + 1, sy)


_BINARY = [
    ("add", tnp.add, np.add),
    ("subtract", tnp.subtract, np.subtract),
    ("multiply", tnp.multiply, np.multiply),
    ("divide", tnp.divide, np.divide),
    ("power", tnp.power, np.power),
    ("maximum", tnp.maximum, np.maximum),
    ("minimum", tnp.minimum, np.minimum),
    ("arctan2", tnp.arctan2, np.arctan2),
    ("remainder", tnp.remainder, np.remainder),
]
for _i, (_name, _f, _ref) in enumerate(_BINARY):  # type: ignore[assignment]  # loop variables shared by tables of other function types
    for _bname, _sx, _sy in _BCAST:
        if _name == "remainder" and _bname in ("col_row", "scalar_arr"):
            continue
        _x, _y = _binary_inputs(_name, _sx, _sy, 100 + 10 * _i)
        _order = 1 if _name in ("maximum", "minimum") else 2
        CASES.append(Case(f"{_name}_{_bname}", _f, _ref, [_x, _y], order=_order))

CASES += [
    Case("operators", lambda x, y: (x + y) * (x - y) / (1.5 + y * y) - (-x) ** 2 + 2.0 ** x,
         lambda x, y: (x + y) * (x - y) / (1.5 + y * y) - (-x) ** 2 + 2.0 ** x,
         [_normal(150, S), _normal(151, S)]),
    Case("python_scalar_mix", lambda x: 3 * x + 1.5 - x / 2 + 2 ** x,
         lambda x: 3 * x + 1.5 - x / 2 + 2.0 ** x, [_normal(152, S)]),
    Case("clip_both", lambda x: tnp.clip(x, -0.5, 0.7), lambda x: np.clip(x, -0.5, 0.7),
         [_signed(160, S, 0.0, 2.0) + 0.05], order=1),
    Case("clip_min_kw", lambda x: tnp.clip(x, min=0.1) * x, lambda x: np.clip(x, 0.1, None) * x,
         [_normal(161, S) + 0.03]),
    Case("clip_arrays", lambda x, lo, hi: tnp.clip(x, lo, hi), np.clip,
         [np.linspace(-2, 2, 12).reshape(S) + 0.01, np.full((4,), -1.0), np.full((3, 1), 1.0)],
         order=1),
    Case("where", lambda c, x, y: tnp.where(c > 0, x, y), lambda c, x, y: np.where(c > 0, x, y),
         [_normal(170, S), _normal(171, S), _normal(172, S)]),
    Case("where_bcast", lambda c, x, y: tnp.where(c > 0, x * x, y),
         lambda c, x, y: np.where(c > 0, x * x, y),
         [_normal(173, (3, 1)), _normal(174, (4,)), _normal(175, S)]),
    Case("where_scalar_branch", lambda x: tnp.where(x > 0, tnp.sin(x), 0.5),
         lambda x: np.where(x > 0, np.sin(x), 0.5), [_normal(176, S)]),
    Case("where_int_cond", lambda x: tnp.where(np.array([1, 0, 2, 0]), x, -x),
         lambda x: np.where(np.array([1, 0, 2, 0]), x, -x), [_normal(177, S)]),
]

# Reductions.
_P = _uniform(200, (3, 4), 0.5, 1.5) * _rng(201).choice([-1.0, 1.0], (3, 4))
_PZ = _P.copy()
_PZ[1, 2] = 0.0
_PZZ = _P.copy()
_PZZ[0, 1] = _PZZ[0, 3] = 0.0
_X3 = _normal(202, (2, 3, 4))
CASES += [
    Case("sum_all", tnp.sum, np.sum, [_normal(210, S)]),
    Case("sum_axis0", lambda x: tnp.sum(x, axis=0), lambda x: np.sum(x, axis=0), [_X3]),
    Case("sum_axis_neg", lambda x: tnp.sum(x, axis=-1), lambda x: np.sum(x, axis=-1), [_X3]),
    Case("sum_axes_tuple_keepdims", lambda x: tnp.sum(x * x, axis=(0, 2), keepdims=True),
         lambda x: np.sum(x * x, axis=(0, 2), keepdims=True), [_X3]),
    Case("sum_method", lambda x: (x * x).sum(1), lambda x: (x * x).sum(1), [_X3]),
    Case("prod_all", tnp.prod, np.prod, [_P]),
    Case("prod_axis1", lambda x: tnp.prod(x, axis=1), lambda x: np.prod(x, axis=1), [_P]),
    Case("prod_one_zero", lambda x: tnp.prod(x, axis=1), lambda x: np.prod(x, axis=1), [_PZ]),
    Case("prod_two_zeros", lambda x: tnp.prod(x, axis=1), lambda x: np.prod(x, axis=1), [_PZZ]),
    Case("prod_all_with_zero", tnp.prod, np.prod, [_PZ]),
    Case("prod_axes_02", lambda x: tnp.prod(x, axis=(0, 2)), lambda x: np.prod(x, axis=(0, 2)),
         [_uniform(203, (2, 3, 2), 0.5, 1.5)]),
    Case("max_all", tnp.max, np.max, [_distinct(220, S)], order=1),
    Case("max_axis", lambda x: tnp.max(x, axis=1), lambda x: np.max(x, axis=1),
         [_distinct(221, S)], order=1),
    Case("max_keepdims", lambda x: tnp.max(x, axis=0, keepdims=True) * x,
         lambda x: np.max(x, axis=0, keepdims=True) * x, [_distinct(222, S)]),
    Case("min_axis", lambda x: tnp.min(x, axis=-1), lambda x: np.min(x, axis=-1),
         [_distinct(223, (2, 3, 4))], order=1),
    Case("min_all", tnp.min, np.min, [_distinct(224, S)], order=1),
    Case("mean_all", tnp.mean, np.mean, [_normal(230, S)]),
    Case("mean_axis", lambda x: tnp.mean(x * x, axis=(1, 2)), lambda x: np.mean(x * x, axis=(1, 2)),
         [_X3]),
    Case("var_all", tnp.var, np.var, [_normal(231, S)]),
    Case("var_axis_ddof", lambda x: tnp.var(x, axis=0, ddof=1), lambda x: np.var(x, axis=0, ddof=1),
         [_normal(232, S)]),
    Case("std_all", tnp.std, np.std, [_normal(233, S)]),
    Case("std_axis_keepdims", lambda x: tnp.std(x, axis=1, keepdims=True),
         lambda x: np.std(x, axis=1, keepdims=True), [_normal(234, S)]),
    Case("cumsum_flat", tnp.cumsum, np.cumsum, [_normal(240, S)]),
    Case("cumsum_axis1", lambda x: tnp.cumsum(x * x, axis=1), lambda x: np.cumsum(x * x, axis=1),
         [_normal(241, S)]),
    Case("cumsum_axis_neg", lambda x: tnp.cumsum(x, axis=-2), lambda x: np.cumsum(x, axis=-2),
         [_X3]),
]

# Integer/bool valued reductions: values only.
_D = _distinct(250, (3, 4))
CASES += [
    Case("argmax_all", tnp.argmax, np.argmax, [_D], grad=False),
    Case("argmax_axis", lambda x: tnp.argmax(x, axis=1), lambda x: np.argmax(x, axis=1), [_D],
         grad=False),
    Case("argmin_axis0", lambda x: tnp.argmin(x, axis=0), lambda x: np.argmin(x, axis=0), [_D],
         grad=False),
    Case("argmin_keepdims", lambda x: tnp.argmin(x, axis=-1, keepdims=True),
         lambda x: np.argmin(x, axis=-1, keepdims=True), [_D], grad=False),
    Case("all_axis", lambda x: tnp.all(x > -1.0, axis=1), lambda x: np.all(x > -1.0, axis=1), [_D],
         grad=False),
    Case("all_all", lambda x: tnp.all(x > -3.0), lambda x: np.all(x > -3.0), [_D], grad=False),
    Case("any_axis", lambda x: tnp.any(x > 1.0, axis=0), lambda x: np.any(x > 1.0, axis=0), [_D],
         grad=False),
    Case("any_keepdims", lambda x: tnp.any(x > 5.0, axis=1, keepdims=True),
         lambda x: np.any(x > 5.0, axis=1, keepdims=True), [_D], grad=False),
]

# Structural.
_A = _normal(300, S)
CASES += [
    Case("reshape", lambda x: tnp.reshape(x, (2, 6)) ** 2, lambda x: np.reshape(x, (2, 6)) ** 2,
         [_A]),
    Case("reshape_minus1", lambda x: tnp.reshape(x, (-1, 2)) * 3.0,
         lambda x: np.reshape(x, (-1, 2)) * 3.0, [_A]),
    Case("reshape_method", lambda x: x.reshape(4, 3) ** 2, lambda x: x.reshape(4, 3) ** 2, [_A]),
    Case("ravel", lambda x: tnp.ravel(x) ** 3, lambda x: np.ravel(x) ** 3, [_X3]),
    Case("transpose_default", lambda x: tnp.transpose(x) * x.T, lambda x: np.transpose(x) * x.T,
         [_X3]),
    Case("transpose_axes", lambda x: tnp.transpose(x, (1, 2, 0)) ** 2,
         lambda x: np.transpose(x, (1, 2, 0)) ** 2, [_X3]),
    Case("moveaxis", lambda x: tnp.moveaxis(x, 0, -1) ** 2, lambda x: np.moveaxis(x, 0, -1) ** 2,
         [_X3]),
    Case("moveaxis_multi", lambda x: tnp.moveaxis(x, (0, 1), (2, 0)) ** 2,
         lambda x: np.moveaxis(x, (0, 1), (2, 0)) ** 2, [_X3]),
    Case("swapaxes", lambda x: tnp.swapaxes(x, 0, 2) ** 2, lambda x: np.swapaxes(x, 0, 2) ** 2,
         [_X3]),
    Case("squeeze_axis", lambda x: tnp.squeeze(x, axis=1) ** 2,
         lambda x: np.squeeze(x, axis=1) ** 2,
         [_normal(301, (3, 1, 4, 1))]),
    Case("squeeze_all", lambda x: tnp.squeeze(x) ** 2, lambda x: np.squeeze(x) ** 2,
         [_normal(302, (3, 1, 4, 1))]),
    Case("expand_dims", lambda x: tnp.expand_dims(x, 1) ** 2, lambda x: np.expand_dims(x, 1) ** 2,
         [_A]),
    Case("expand_dims_multi", lambda x: tnp.expand_dims(x, (0, -1)) ** 2,
         lambda x: np.expand_dims(x, (0, -1)) ** 2, [_A]),
    Case("newaxis", lambda x: x[:, None, :] * x[None], lambda x: x[:, None, :] * x[None], [_A]),
    Case("concatenate_axis0", lambda x, y: tnp.concatenate([x, y * y, x], axis=0),
         lambda x, y: np.concatenate([x, y * y, x], axis=0), [_A, _normal(303, (2, 4))]),
    Case("concatenate_axis_neg", lambda x, y: tnp.concatenate([x * y, y], axis=-1),
         lambda x, y: np.concatenate([x * y, y], axis=-1), [_A, _normal(304, S)]),
    Case("concatenate_none", lambda x, y: tnp.concatenate([x, y], axis=None) ** 2,
         lambda x, y: np.concatenate([x, y], axis=None) ** 2, [_A, _normal(305, (5,))]),
    Case("stack_axis0", lambda x, y: tnp.stack([x, y * y]), lambda x, y: np.stack([x, y * y]),
         [_A, _normal(306, S)]),
    Case("stack_axis_neg", lambda x, y: tnp.stack([x, x * y, y], axis=-1),
         lambda x, y: np.stack([x, x * y, y], axis=-1), [_A, _normal(307, S)]),
    Case("broadcast_to", lambda x: tnp.broadcast_to(x, (2, 3, 4)) ** 2,
         lambda x: np.broadcast_to(x, (2, 3, 4)) ** 2, [_A]),
    Case("broadcast_to_size1", lambda x: tnp.broadcast_to(x, (2, 3, 4)) ** 2,
         lambda x: np.broadcast_to(x, (2, 3, 4)) ** 2, [_normal(308, (3, 1))]),
    Case("astype_float64", lambda x: tnp.astype(x * x, np.float64),
         lambda x: (x * x).astype(np.float64), [_A]),
    Case("astype_int_times_x", lambda x: tnp.astype(x * 3, np.int64) * x,
         lambda x: (x * 3).astype(np.int64) * x, [_frac(309, S)]),
    Case("astype_f32_roundtrip", lambda x: tnp.astype(x, np.float32).astype(np.float64) ** 2,
         lambda x: x.astype(np.float32).astype(np.float64) ** 2, [_A],
         atol=2e-4, rtol=2e-4, eps=1e-3),   # (1e-2: JAX's check_grads fails too)
    Case("stop_gradient_value", lambda x: tg.lax.stop_gradient(x) * x, lambda x: x * x, [_A],
         grad=False),
]

# Indexing (getitem).
_B = _normal(400, (4, 5, 6))
CASES += [
    Case("slice_basic", lambda x: x[1:3, ::2], lambda x: x[1:3, ::2], [_B]),
    Case("slice_int", lambda x: x[2, 1:] * x[-1, :-1], lambda x: x[2, 1:] * x[-1, :-1], [_B]),
    Case("slice_negative_step", lambda x: x[::-1, 4:0:-2, -1::-3],
         lambda x: x[::-1, 4:0:-2, -1::-3], [_B]),
    Case("slice_ellipsis", lambda x: x[..., 1] ** 2 + x[0, ...].sum(), lambda x: x[..., 1] ** 2
         + x[0, ...].sum(), [_B]),
    Case("int_array_repeats", lambda x: x[np.array([0, 2, 0, 0, 3])],
         lambda x: x[np.array([0, 2, 0, 0, 3])], [_B]),
    Case("int_array_2d_index", lambda x: x[np.array([[0, 1], [1, 1]])] ** 2,
         lambda x: x[np.array([[0, 1], [1, 1]])] ** 2, [_A]),
    Case("int_array_negative", lambda x: x[:, np.array([-1, 0, -1])],
         lambda x: x[:, np.array([-1, 0, -1])], [_A]),
    Case("int_list", lambda x: x[[2, 2, 1]] * 2.0, lambda x: x[[2, 2, 1]] * 2.0, [_A]),
    Case("two_int_arrays", lambda x: x[np.array([0, 1, 1]), np.array([3, 0, 3])],
         lambda x: x[np.array([0, 1, 1]), np.array([3, 0, 3])], [_A]),
    Case("mixed_adjacent", lambda x: x[1:, np.array([2, 0, 2]), np.array([5, 1, 1])],
         lambda x: x[1:, np.array([2, 0, 2]), np.array([5, 1, 1])], [_B]),
    Case("mixed_separated", lambda x: x[np.array([0, 3]), 1:4, np.array([2, 5])],
         lambda x: x[np.array([0, 3]), 1:4, np.array([2, 5])], [_B]),
    Case("mixed_int_and_array", lambda x: x[1, :, np.array([2, 3, 2])],
         lambda x: x[1, :, np.array([2, 3, 2])], [_B]),
    Case("mixed_broadcast_arrays", lambda x: x[np.array([[0], [3]]), :, np.array([1, 4, 4])],
         lambda x: x[np.array([[0], [3]]), :, np.array([1, 4, 4])], [_B]),
    Case("take", lambda x: tnp.take(x, np.array([3, 0, 3]), axis=1),
         lambda x: np.take(x, np.array([3, 0, 3]), axis=1), [_A]),
    Case("take_along_axis", lambda x: tnp.take_along_axis(x, np.array([[0], [3], [1]]), axis=1),
         lambda x: np.take_along_axis(x, np.array([[0], [3], [1]]), axis=1), [_A]),
]
_MASK = _normal(410, S) > 0
CASES += [
    Case("bool_mask_eager", lambda x: x[_MASK] ** 2, lambda x: x[_MASK] ** 2, [_A], vmap=False),
    Case("bool_mask_row", lambda x: x[np.array([True, False, True])] * 2.0,
         lambda x: x[np.array([True, False, True])] * 2.0, [_A], vmap=False),
]

# Functional index updates (tnp.at works on numpy arrays and tracers alike).
_I3 = np.array([0, 2, 0])
CASES += [
    Case("at_set_int", lambda x, y: tnp.at(x)[1].set(y * y),
         lambda x, y: _np_set(x, 1, y * y), [_A, _normal(500, (4,))]),
    Case("at_set_slice_bcast", lambda x, y: tnp.at(x)[:, 1:3].set(y),
         lambda x, y: _np_set(x, (slice(None), slice(1, 3)), y), [_A, _normal(501, (2,))]),
    Case("at_set_arrays", lambda x, y: tnp.at(x)[np.array([2, 0]), 1:3].set(y),
         lambda x, y: _np_set(x, (np.array([2, 0]), slice(1, 3)), y), [_A, _normal(502, (2, 2))]),
    Case("at_set_scalar_value", lambda x: tnp.at(x * x)[0, 0].set(2.5),
         lambda x: _np_set(x * x, (0, 0), 2.5), [_A]),
    Case("at_add_repeats", lambda x, y: tnp.at(x)[_I3].add(y * y),
         lambda x, y: _np_ufunc_at(np.add, x, _I3, y * y), [_A, _normal(503, (3, 4))]),
    Case("at_add_slice", lambda x, y: tnp.at(x)[1:, ::2].add(y),
         lambda x, y: _np_ufunc_at(np.add, x, (slice(1, None), slice(None, None, 2)), y),
         [_A, _normal(504, (2, 2))]),
    Case("at_mul", lambda x, y: tnp.at(x)[np.array([2, 0])].mul(y, unique_indices=True),
         lambda x, y: _np_ufunc_at(np.multiply, x, np.array([2, 0]), y),
         [_A, _normal(505, (2, 4))]),
    Case("at_mul_slice", lambda x, y: tnp.at(x)[:, 1].multiply(y),
         lambda x, y: _np_ufunc_at(np.multiply, x, (slice(None), 1), y),
         [_A, _normal(506, (3,))]),
    Case("at_min", lambda x, y: tnp.at(x)[1:].min(y),
         lambda x, y: _np_ufunc_at(np.minimum, x, slice(1, None), y),
         [_distinct(507, S), _distinct(508, (2, 4)) + 0.013], order=1),
    Case("at_max", lambda x, y: tnp.at(x)[np.array([0, 2]), 1].max(y),
         lambda x, y: _np_ufunc_at(np.maximum, x, (np.array([0, 2]), 1), y),
         [_distinct(509, S), np.array([0.3, -1.7])], order=1),
    Case("at_get", lambda x: tnp.at(x)[1:, 2].get() * 2.0, lambda x: x[1:, 2] * 2.0, [_A]),
]


def _np_set(x, idx, y):
    out = np.array(x, copy=True)
    out[idx] = y
    return out


def _np_ufunc_at(ufunc, x, idx, y):
    out = np.array(x, copy=True)
    ufunc.at(out, idx, y)
    return out


# Contractions.
_M34 = _normal(600, (3, 4))
_M45 = _normal(601, (4, 5))
CASES += [
    Case("dot_1d_1d", tnp.dot, np.dot, [_normal(610, (4,)), _normal(611, (4,))]),
    Case("dot_2d_1d", tnp.dot, np.dot, [_M34, _normal(612, (4,))]),
    Case("dot_1d_2d", tnp.dot, np.dot, [_normal(613, (3,)), _M34]),
    Case("dot_2d_2d", tnp.dot, np.dot, [_M34, _M45]),
    Case("dot_3d_3d", tnp.dot, np.dot, [_normal(614, (2, 3, 4)), _normal(615, (3, 4, 2))]),
    Case("dot_scalar", tnp.dot, np.dot, [np.asarray(1.7), _M34], vmap=False),
    Case("matmul_1d_1d", tnp.matmul, np.matmul, [_normal(620, (4,)), _normal(621, (4,))]),
    Case("matmul_1d_2d", tnp.matmul, np.matmul, [_normal(622, (3,)), _M34]),
    Case("matmul_2d_1d", tnp.matmul, np.matmul, [_M34, _normal(623, (4,))]),
    Case("matmul_2d_2d", tnp.matmul, np.matmul, [_M34, _M45]),
    Case("matmul_batched", tnp.matmul, np.matmul,
         [_normal(624, (2, 3, 4)), _normal(625, (2, 4, 5))]),
    Case("matmul_broadcast_batch", tnp.matmul, np.matmul,
         [_normal(626, (2, 1, 3, 4)), _normal(627, (5, 4, 2))]),
    Case("matmul_batched_1d", tnp.matmul, np.matmul, [_normal(628, (2, 3, 4)), _normal(629, (4,))]),
    Case("matmul_1d_batched", tnp.matmul, np.matmul, [_normal(630, (3,)), _normal(631, (2, 3, 4))]),
    Case("matmul_operator", lambda x, y: x @ y @ x.T, lambda x, y: x @ y @ x.T,
         [_M34, _normal(632, (4, 4))]),
    Case("tensordot_int", lambda x, y: tnp.tensordot(x, y, axes=1),
         lambda x, y: np.tensordot(x, y, axes=1), [_normal(640, (2, 3, 4)), _M45]),
    Case("tensordot_default", tnp.tensordot, np.tensordot,
         [_normal(641, (2, 3, 4)), _normal(642, (3, 4, 5))]),
    Case("tensordot_pairs", lambda x, y: tnp.tensordot(x, y, axes=([0, 2], [2, 0])),
         lambda x, y: np.tensordot(x, y, axes=([0, 2], [2, 0])),
         [_normal(643, (2, 3, 4)), _normal(644, (4, 5, 2))]),
    Case("tensordot_0", lambda x, y: tnp.tensordot(x, y, axes=0),
         lambda x, y: np.tensordot(x, y, axes=0), [_normal(645, (2,)), _normal(646, (3,))]),
    Case("einsum_explicit_matmul", lambda x, y: tnp.einsum("ij,jk->ik", x, y),
         lambda x, y: np.einsum("ij,jk->ik", x, y), [_M34, _M45]),
    Case("einsum_explicit_transpose_out", lambda x, y: tnp.einsum("ij,jk->ki", x, y),
         lambda x, y: np.einsum("ij,jk->ki", x, y), [_M34, _M45]),
    Case("einsum_sum_out", lambda x: tnp.einsum("ij->j", x * x),
         lambda x: np.einsum("ij->j", x * x), [_M34]),
    Case("einsum_implicit", lambda x, y: tnp.einsum("ij,jk", x, y),
         lambda x, y: np.einsum("ij,jk", x, y), [_M34, _M45]),
    Case("einsum_implicit_sorted", lambda x, y: tnp.einsum("kj,ji", x, y),
         lambda x, y: np.einsum("kj,ji", x, y), [_M34, _M45]),
    Case("einsum_ellipsis", lambda x, y: tnp.einsum("...ij,...jk->...ik", x, y),
         lambda x, y: np.einsum("...ij,...jk->...ik", x, y),
         [_normal(650, (2, 3, 4)), _normal(651, (2, 4, 5))]),
    Case("einsum_ellipsis_implicit", lambda x: tnp.einsum("i...->...", x),
         lambda x: np.einsum("i...->...", x), [_normal(652, (3, 2, 4))]),
    Case("einsum_three_operands", lambda x, y, z: tnp.einsum("ij,jk,k->i", x, y, z),
         lambda x, y, z: np.einsum("ij,jk,k->i", x, y, z),
         [_M34, _M45, _normal(653, (5,))]),
    Case("einsum_outer", lambda x, y: tnp.einsum("i,j->ij", x, y),
         lambda x, y: np.einsum("i,j->ij", x, y), [_normal(654, (3,)), _normal(655, (4,))]),
    Case("einsum_diagonal", lambda x: tnp.einsum("ii->i", x), lambda x: np.einsum("ii->i", x),
         [_normal(656, (3, 3))]),
    Case("einsum_trace", lambda x: tnp.einsum("ii", x), lambda x: np.einsum("ii", x),
         [_normal(657, (3, 3))]),
    Case("einsum_batched_diagonal", lambda x, y: tnp.einsum("bii,bi->b", x, y),
         lambda x, y: np.einsum("bii,bi->b", x, y),
         [_normal(658, (2, 3, 3)), _normal(659, (2, 3))]),
    Case("outer", tnp.outer, np.outer, [_normal(660, (3,)), _normal(661, (4,))]),
    Case("outer_2d_ravel", tnp.outer, np.outer, [_normal(662, (2, 2)), _normal(663, (3,))]),
    Case("inner_1d", tnp.inner, np.inner, [_normal(664, (4,)), _normal(665, (4,))]),
    Case("inner_nd", tnp.inner, np.inner, [_normal(666, (2, 4)), _normal(667, (3, 4))]),
    Case("vdot", tnp.vdot, np.vdot, [_normal(668, (2, 3)), _normal(669, (2, 3))]),
]

_IDS = [c.name for c in CASES]
assert len(set(_IDS)) == len(_IDS), "duplicate case names"
GRAD_CASES = [c for c in CASES if c.grad]
VMAP_CASES = [c for c in CASES if c.vmap]


def _assert_close(got, want, rtol=RTOL, atol=ATOL):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------
# Generic tests over the table


@pytest.mark.parametrize("case", CASES, ids=_IDS)
def test_eager_value_matches_numpy(case):
    got = case.fn(*case.args)
    want = case.ref(*case.args)
    assert isinstance(got, np.ndarray)
    _assert_close(got, want)
    assert got.dtype == np.asarray(want).dtype


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.name for c in GRAD_CASES])
def test_jvp_vjp_match_finite_differences(case):
    tol = {k: v for k, v in case.tol.items() if v is not None}
    check_grads(case.fn, case.args, order=case.order, modes=("fwd", "rev"), **tol)


@pytest.mark.parametrize("case", CASES, ids=_IDS)
def test_jit_matches_numpy(case):
    got = tg.jit(case.fn)(*case.args)
    want = case.ref(*case.args)
    assert isinstance(got, np.ndarray)
    _assert_close(got, want)
    assert got.dtype == np.asarray(want).dtype


def _batched_args(case, in_axes, size=3):
    """Stack ``size`` perturbed copies of the mapped args along their in_axes."""
    per_example = []
    for b in range(size):
        ex = []
        for a, ax in zip(case.args, in_axes):
            if ax is None or b == 0:
                ex.append(a)
            elif a.dtype.kind == "f":
                # a small perturbation keeps inputs inside the case's domain
                # (no ties, no non-differentiable points in most cases)
                ex.append(a * (1.0 + 0.01 * b) + 0.003 * b)
            else:
                ex.append(a)
        per_example.append(ex)
    batched = []
    for i, ax in enumerate(in_axes):
        if ax is None:
            batched.append(case.args[i])
        else:
            batched.append(np.stack([ex[i] for ex in per_example], axis=ax))
    return batched, per_example


def _in_axes_layouts(case):
    """All args mapped at 0; the first at its last axis; only the last at axis 1."""
    n = len(case.args)
    layouts = [("all0", (0,) * n), ("first_last", (-1,) + (None,) * (n - 1))]
    if n > 1:
        layouts.append(("only_last_arg", (None,) * (n - 1) + (min(1, case.args[-1].ndim),)))
    return layouts


_VMAP_PARAMS = [(c, name, axes) for c in VMAP_CASES for name, axes in _in_axes_layouts(c)]


@pytest.mark.parametrize("case,layout,in_axes", _VMAP_PARAMS,
                         ids=[f"{c.name}-{n}" for c, n, _ in _VMAP_PARAMS])
def test_vmap_matches_loop(case, layout, in_axes):
    batched, per_example = _batched_args(case, in_axes)
    got = tg.vmap(case.fn, in_axes=in_axes)(*batched)
    want = np.stack([np.asarray(case.ref(*ex)) for ex in per_example])
    assert isinstance(got, np.ndarray)
    _assert_close(got, want)


GRAD_VMAP_CASES = [c for c in GRAD_CASES if c.vmap and c.order == 2 and c.tol["eps"] is None]


@pytest.mark.parametrize("case", GRAD_VMAP_CASES, ids=[c.name for c in GRAD_VMAP_CASES])
def test_vmap_of_vjp_matches_loop(case):
    """Batched pullbacks (the transpose rules under vmap) agree with a loop."""
    out = case.fn(*case.args)
    rng = np.random.default_rng(7)
    cts = rng.standard_normal((3,) + np.shape(out))

    def pull(ct):
        return tg.vjp(case.fn, *case.args)[1](ct)

    got = tg.vmap(pull)(cts)
    for b in range(3):
        want = pull(cts[b])
        for g, w in zip(got, want):
            _assert_close(np.asarray(g)[b], w, rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------------------
# Targeted tests


def test_all_tangents_are_exact_for_known_derivatives():
    # d/dx of the elementwise functions at a point, against closed forms.
    x = np.array([0.3, -0.45, 0.6])
    expected = {
        tnp.exp: np.exp(x), tnp.sin: np.cos(x), tnp.cos: -np.sin(x), tnp.tan: 1 / np.cos(x) ** 2,
        tnp.arcsin: 1 / np.sqrt(1 - x ** 2), tnp.arccos: -1 / np.sqrt(1 - x ** 2),
        tnp.arctan: 1 / (1 + x ** 2), tnp.sinh: np.cosh(x), tnp.cosh: np.sinh(x),
        tnp.tanh: 1 - np.tanh(x) ** 2, tnp.arcsinh: 1 / np.sqrt(x ** 2 + 1),
        tnp.arctanh: 1 / (1 - x ** 2), tnp.expm1: np.exp(x), tnp.cbrt: np.cbrt(x) / (3 * x),
        tnp.abs: np.sign(x), tnp.log1p: 1 / (1 + x),
    }
    for f, d in expected.items():
        _, t = tg.jvp(f, (x,), (np.ones_like(x),))
        np.testing.assert_allclose(t, d, rtol=1e-13, atol=1e-15)
    xp = np.array([1.3, 2.5])
    for f, d in {tnp.log: 1 / xp, tnp.sqrt: 0.5 / np.sqrt(xp),
                 tnp.arccosh: 1 / np.sqrt(xp ** 2 - 1)}.items():
        np.testing.assert_allclose(tg.vmap(tg.grad(f))(xp), d, rtol=1e-13)


def test_binary_partial_derivatives_closed_form():
    x = np.array([0.7, 1.9])
    y = np.array([-1.3, 0.4])
    cases = {
        tnp.divide: (1 / y, -x / y ** 2),
        tnp.power: (y * np.abs(x) ** (y - 1), np.log(x) * x ** y),
        tnp.arctan2: (y / (x ** 2 + y ** 2), -x / (x ** 2 + y ** 2)),
        tnp.remainder: (np.ones(2), -np.floor(x / y)),
        tnp.maximum: ((x > y).astype(float), (y > x).astype(float)),
        tnp.minimum: ((x < y).astype(float), (y < x).astype(float)),
    }
    for f, (dx, dy) in cases.items():
        gx, gy = tg.vmap(tg.grad(f, argnums=(0, 1)))(x, y)
        np.testing.assert_allclose(gx, dx, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(gy, dy, rtol=1e-13, atol=1e-15)


def test_maximum_minimum_ties_split_gradient():
    x = np.array([1.0, 2.0, 3.0])
    gx, gy = tg.grad(lambda a, b: tnp.sum(tnp.maximum(a, b)), argnums=(0, 1))(x, x)
    np.testing.assert_array_equal(gx, [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(gy, [0.5, 0.5, 0.5])
    gx, gy = tg.grad(lambda a, b: tnp.sum(tnp.minimum(a, b)), argnums=(0, 1))(x, x)
    np.testing.assert_array_equal(gx + gy, [1.0, 1.0, 1.0])


def test_piecewise_constant_functions_have_zero_gradient():
    x = np.array([0.3, -1.2, 2.6])
    for f in (tnp.sign, tnp.floor, tnp.ceil, tnp.round, tnp.rint):
        g = tg.grad(lambda v: tnp.sum(f(v)))(x)
        np.testing.assert_array_equal(g, np.zeros(3))
        _, t = tg.jvp(f, (x,), (np.ones(3),))
        np.testing.assert_array_equal(t, np.zeros(3))


def test_clip_gradient_is_indicator_of_interior():
    x = np.array([-2.0, -0.3, 0.4, 1.5])
    g = tg.grad(lambda v: tnp.sum(tnp.clip(v, -1.0, 1.0) * 3.0))(x)
    np.testing.assert_array_equal(g, [0.0, 3.0, 3.0, 0.0])


def test_where_gradient_routes_to_selected_branch():
    x = np.array([-1.0, 2.0, -3.0])
    y = np.array([5.0, 6.0, 7.0])
    gx, gy = tg.grad(lambda a, b: tnp.sum(tnp.where(a > 0, a * b, b * b)), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, [0.0, 6.0, 0.0])
    np.testing.assert_array_equal(gy, [10.0, 2.0, 14.0])


def test_integer_pow_derivatives_closed_form():
    x = np.array([0.7, -1.3, 2.0])
    for n in (-3, -1, 0, 1, 2, 3, 7):
        g = tg.vmap(tg.grad(lambda v: v ** n))(x)
        want = n * x ** (n - 1) if n != 0 else np.zeros(3)
        np.testing.assert_allclose(g, want, rtol=1e-13)
        gg = tg.vmap(tg.grad(tg.grad(lambda v: v ** n)))(x)
        want2 = n * (n - 1) * x ** (n - 2) if n not in (0, 1) else np.zeros(3)
        np.testing.assert_allclose(gg, want2, rtol=1e-13)
    # integer inputs stay integer
    assert (np.arange(4) ** 3).dtype == tg.jit(lambda v: v ** 3)(np.arange(4)).dtype


def test_prod_gradient_with_zeros_is_exact():
    x = np.array([[2.0, 0.0, 3.0, 4.0], [0.0, 0.0, 5.0, 1.0], [1.0, 2.0, 3.0, 4.0]])
    g = tg.grad(lambda v: tnp.sum(tnp.prod(v, axis=1)))(x)
    want = np.array([[0.0, 24.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [24.0, 12.0, 8.0, 6.0]])
    np.testing.assert_array_equal(g, want)
    # second derivatives at a zero: d2/dxi dxj prod = product of the other entries
    h = tg.hessian(lambda v: tnp.prod(v))(np.array([2.0, 0.0, 3.0]))
    np.testing.assert_array_equal(h, [[0.0, 3.0, 0.0], [3.0, 0.0, 2.0], [0.0, 2.0, 0.0]])


def test_max_gradient_splits_ties_evenly():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, -1.0]])
    g = tg.grad(lambda v: tnp.sum(tnp.max(v, axis=1)))(x)
    np.testing.assert_array_equal(g, [[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]])
    g = tg.grad(lambda v: tnp.min(v))(x)
    np.testing.assert_array_equal(g, [[0.0, 0.0, 0.0], [0.0, 0.0, 1.0]])


def test_argmax_all_any_are_not_differentiated():
    x = _distinct(900, (3, 4))
    g = tg.grad(lambda v: tnp.sum(v * tnp.argmax(v, axis=1)[:, None]))(x)
    np.testing.assert_array_equal(g, np.broadcast_to(np.argmax(x, axis=1)[:, None], x.shape))
    g = tg.grad(lambda v: tnp.sum(tnp.where(tnp.any(v > 1.0, axis=1, keepdims=True), v, 0.0)))(x)
    np.testing.assert_array_equal(g, np.broadcast_to(np.any(x > 1.0, axis=1, keepdims=True),
                                                     x.shape).astype(float))
    for f, ref in [(tnp.argmax, np.argmax), (tnp.argmin, np.argmin)]:
        out = tg.jit(f)(x)
        assert out.dtype == np.int64 and out == ref(x)


def test_cumsum_transpose_is_reverse_cumsum():
    ct = np.array([1.0, 2.0, 3.0, 4.0])
    _, pull = tg.vjp(tnp.cumsum, np.zeros(4))
    np.testing.assert_array_equal(pull(ct)[0], np.cumsum(ct[::-1])[::-1])


def test_astype_tangent_dtypes():
    x = np.array([1.5, -2.25])
    y, t = tg.jvp(lambda v: tnp.astype(v, np.float32), (x,), (np.array([0.5, 2.0]),))
    assert y.dtype == np.float32 and t.dtype == np.float32
    np.testing.assert_array_equal(t, np.array([0.5, 2.0], np.float32))
    g = tg.grad(lambda v: tnp.sum(tnp.astype(v, np.float32) * np.float32(3.0))
                .astype(np.float64))(x)
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g, [3.0, 3.0])
    # conversion to an integer dtype has a zero derivative
    g = tg.grad(lambda v: tnp.sum(tnp.astype(v, np.int64) * 1.0 + v))(x)
    np.testing.assert_array_equal(g, [1.0, 1.0])


def test_float32_stays_float32_through_grad():
    x = np.array([0.5, 1.5], np.float32)
    g = tg.grad(lambda v: tnp.sum(tnp.sin(v) * 2.0))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * np.cos(x), rtol=1e-6)


def test_scatter_add_repeated_indices_gradient():
    x = _normal(910, (3, 2))
    idx = np.array([0, 0, 2, 0])
    y = _normal(911, (4, 2))
    f = lambda a, b: tnp.sum(tnp.at(a)[idx].add(b) ** 2)  # noqa: E731
    gx, gy = tg.grad(f, argnums=(0, 1))(x, y)
    out = _np_ufunc_at(np.add, x, idx, y)
    np.testing.assert_allclose(gx, 2 * out, rtol=1e-13)
    np.testing.assert_allclose(gy, 2 * out[idx], rtol=1e-13)


def test_scatter_set_gradient_zeroes_overwritten_entries():
    x = _normal(912, (4,))
    g = tg.grad(lambda a, b: tnp.sum(tnp.at(a)[1:3].set(b) * np.arange(1.0, 5.0)),
                argnums=(0, 1))(x, np.array([7.0, 8.0]))
    np.testing.assert_array_equal(g[0], [1.0, 0.0, 0.0, 4.0])
    np.testing.assert_array_equal(g[1], [2.0, 3.0])


def test_at_on_tracers_matches_tnp_at():
    x = _normal(913, (3, 4))
    y = _normal(914, (2, 4))
    idx = np.array([2, 0])
    for mode in ("set", "add", "mul", "min", "max"):
        want = getattr(tnp.at(x)[idx], mode)(y)
        got = tg.jit(lambda a, b: getattr(a.at[idx], mode)(b))(x, y)
        np.testing.assert_array_equal(got, want)
        g_at = tg.grad(lambda a: tnp.sum(getattr(a.at[idx], mode)(y) ** 2))(x)
        g_tnp = tg.grad(lambda a: tnp.sum(getattr(tnp.at(a)[idx], mode)(y) ** 2))(x)
        np.testing.assert_array_equal(g_at, g_tnp)
    # the plain array is not modified
    x0 = x.copy()
    tnp.at(x)[0].set(100.0)
    np.testing.assert_array_equal(x, x0)


def test_at_subtract_divide():
    x = _normal(915, (4,))
    np.testing.assert_allclose(tnp.at(x)[1:].subtract(2.0), np.r_[x[0], x[1:] - 2.0])
    np.testing.assert_allclose(tnp.at(x)[::2].divide(4.0), x * np.array([0.25, 1, 0.25, 1]))


def test_getitem_transpose_accumulates_repeats():
    x = _normal(916, (5,))
    idx = np.array([1, 1, 4, 1])
    _, pull = tg.vjp(lambda a: a[idx], x)
    np.testing.assert_array_equal(pull(np.array([1.0, 2.0, 3.0, 4.0]))[0], [0, 7.0, 0, 0, 3.0])


def test_traced_integer_index():
    x = _normal(917, (5, 3))
    i = np.array([4, 0, 2])
    got = tg.jit(lambda a, j: a[j] * 2.0)(x, i)
    np.testing.assert_array_equal(got, x[i] * 2.0)
    got = tg.vmap(lambda j: tnp.take(x, j, axis=0))(i)
    np.testing.assert_array_equal(got, x[i])
    g = tg.grad(lambda a, j: tnp.sum(a[j, 1]), argnums=0)(x, i)
    want = np.zeros_like(x)
    want[i, 1] = 1.0
    np.testing.assert_array_equal(g, want)


def test_einsum_repeated_index_transpose():
    m = _normal(918, (3, 3))
    np.testing.assert_allclose(tnp.einsum("ii->i", m), np.diagonal(m))
    np.testing.assert_allclose(tnp.einsum("ii", m), np.trace(m))
    _, t = tg.jvp(lambda a: tnp.einsum("ii", a), (m,), (np.eye(3) * 2.0,))
    np.testing.assert_allclose(t, 6.0)
    # the gradient of a trace is the identity; of a diagonal, a diagonal matrix
    np.testing.assert_array_equal(tg.grad(lambda a: tnp.einsum("ii", a))(m), np.eye(3))
    _, pull = tg.vjp(lambda a: tnp.einsum("ii->i", a), m)
    np.testing.assert_array_equal(pull(np.array([1.0, 2.0, 3.0]))[0], np.diag([1.0, 2.0, 3.0]))
    t3 = _normal(921, (2, 2, 2))
    g = tg.grad(lambda a: tnp.sum(tnp.einsum("iii->i", a) * np.array([5.0, 7.0])))(t3)
    want = np.zeros((2, 2, 2))
    want[0, 0, 0], want[1, 1, 1] = 5.0, 7.0
    np.testing.assert_array_equal(g, want)


def test_dot_general_direct():
    x = _normal(919, (2, 3, 4))
    y = _normal(920, (2, 4, 5))
    f = lambda a, b: tg.lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,))))  # noqa: E731
    np.testing.assert_allclose(f(x, y), np.matmul(x, y), rtol=1e-13)
    check_grads(f, (x, y), order=2)
    got = tg.vmap(f, in_axes=(1, None))(np.moveaxis(np.stack([x, 2 * x]), 0, 1), y)
    np.testing.assert_allclose(got, np.stack([np.matmul(x, y), np.matmul(2 * x, y)]), rtol=1e-13)


def _tangents(args, seed):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(a.shape).astype(a.dtype) for a in args)


def _assert_tree_close(got, want, rtol=1e-10, atol=1e-10):
    from tangentia.tree_util import tree_leaves
    gl, wl = tree_leaves(got), tree_leaves(want)
    assert len(gl) == len(wl)
    for g, w in zip(gl, wl):
        _assert_close(g, w, rtol=rtol, atol=atol)


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.name for c in GRAD_CASES])
def test_jit_inside_and_outside_derivatives(case):
    """jvp/vjp of jit(f) and jit of jvp/vjp of f agree with eager jvp/vjp."""
    ts = _tangents(case.args, 11)
    out, tan = tg.jvp(case.fn, case.args, ts)
    ct = np.random.default_rng(12).standard_normal(np.shape(out))
    cts = tg.vjp(case.fn, *case.args)[1](ct)
    f_jit = tg.jit(case.fn)
    _assert_tree_close(tg.jvp(f_jit, case.args, ts), (out, tan))
    _assert_tree_close(tg.vjp(f_jit, *case.args)[1](ct), cts)
    _assert_tree_close(tg.jit(lambda a, t: tg.jvp(case.fn, a, t))(case.args, ts), (out, tan))
    _assert_tree_close(tg.jit(lambda a, c: tg.vjp(case.fn, *a)[1](c))(case.args, ct), cts)
    _, f_lin = tg.linearize(case.fn, *case.args)
    _assert_tree_close(f_lin(*ts), tan)


# ---------------------------------------------------------------------------
# vmap of indexing with every combination of batched operand / index arrays.
# ``tnp.at(x)[...].get()`` indexes plain NumPy arrays with traced indices.

_NB = 3
_GX = _normal(930, (4, 5, 6))
_GXB = _normal(931, (_NB, 4, 5, 6))
_GI = np.random.default_rng(932).integers(0, 4, (_NB, 2))
_GJ = np.random.default_rng(933).integers(0, 6, (_NB, 2))
_GY = _normal(934, (4, 5, 6))
_GYB = _normal(935, (_NB, 4, 5, 6))

_GET_SPECS = {
    "first": lambda x, i, j: tnp.at(x)[i].get(),
    "separated": lambda x, i, j: tnp.at(x)[i, :, j].get(),
    "adjacent_after_slice": lambda x, i, j: tnp.at(x)[:, i % 5, j].get(),
    "adjacent_first": lambda x, i, j: tnp.at(x)[i, j % 5].get(),
    "slice_then_array": lambda x, i, j: tnp.at(x)[1:3, :, j].get(),
    "int_slice_array": lambda x, i, j: tnp.at(x)[1, :, j].get(),
    "array_int_array": lambda x, i, j: tnp.at(x)[i, 2, j].get(),
    "ellipsis_array": lambda x, i, j: tnp.at(x)[..., j].get(),
    "none_array_slice_array": lambda x, i, j: tnp.at(x)[None, i, ::-1, j].get(),
    "broadcast_2d": lambda x, i, j: tnp.at(x)[i[:, None], :, j[None, :]].get(),
    "negative_step_then_array": lambda x, i, j: tnp.at(x)[::-1, 1:, j].get(),
}
_GET_AXES = [(0, 0, 0), (None, 0, 0), (0, None, None), (0, 0, None), (0, None, 0),
             (None, 0, None), (2, 1, 1), (-1, 1, None)]


def _vmap_args(batched, unbatched, in_axes):
    return [u if ax is None else np.moveaxis(b, 0, ax)
            for b, u, ax in zip(batched, unbatched, in_axes)]


def _loop(f, batched, unbatched, in_axes):
    outs = []
    for k in range(_NB):
        outs.append(f(*[u if ax is None else b[k]
                        for b, u, ax in zip(batched, unbatched, in_axes)]))
    return np.stack(outs)


@pytest.mark.parametrize("in_axes", _GET_AXES, ids=str)
@pytest.mark.parametrize("spec", sorted(_GET_SPECS))
def test_vmap_getitem_layouts(spec, in_axes):
    f = _GET_SPECS[spec]
    batched, unbatched = (_GXB, _GI, _GJ), (_GX, _GI[0], _GJ[0])
    got = tg.vmap(f, in_axes=in_axes)(*_vmap_args(batched, unbatched, in_axes))
    _assert_close(got, _loop(f, batched, unbatched, in_axes))
    # and the transpose (a scatter-add) under vmap
    g = lambda x, i, j: tg.grad(lambda a: tnp.sum(f(a, i, j) ** 2))(x)  # noqa: E731
    got = tg.vmap(g, in_axes=in_axes)(*_vmap_args(batched, unbatched, in_axes))
    _assert_close(got, _loop(g, batched, unbatched, in_axes))


_SCATTER_SPECS = {
    "add_first": lambda x, i, j, y: tnp.at(x)[i].add(y[:2]),
    "add_separated": lambda x, i, j, y: tnp.at(x)[i, :, j].add(y[:2, :, 0]),
    "set_separated": lambda x, i, j, y: tnp.at(x)[i, :, j].set(y[:2, :, 0]),
    "mul_adjacent_after_slice": lambda x, i, j, y: tnp.at(x)[:, i % 5, j].mul(y[:, 0, :2]),
    "max_slice": lambda x, i, j, y: tnp.at(x)[1:3].max(y[:2]),
    "min_int_slice_array": lambda x, i, j, y: tnp.at(x)[1, :, j].min(y[0, :2, :5]),
    "add_scalar_update": lambda x, i, j, y: tnp.at(x)[i].add(y[0, 0, 0]),
    "set_ellipsis_array": lambda x, i, j, y: tnp.at(x)[..., j].set(y[..., :2]),
}
_SCATTER_AXES = [(0, 0, 0, 0), (None, 0, 0, None), (0, None, None, 0), (None, None, 0, 0),
                 (0, 0, None, None), (None, 0, None, 0), (2, 1, 0, -1), (None, None, None, 1)]


@pytest.mark.parametrize("in_axes", _SCATTER_AXES, ids=str)
@pytest.mark.parametrize("spec", sorted(_SCATTER_SPECS))
def test_vmap_scatter_layouts(spec, in_axes):
    f = _SCATTER_SPECS[spec]
    # distinct index values per example, so 'set' has no duplicate-index ambiguity
    i = np.array([[0, 2], [3, 1], [2, 0]])
    j = np.array([[5, 1], [0, 4], [3, 2]])
    batched, unbatched = (_GXB, i, j, _GYB), (_GX, i[0], j[0], _GY)
    got = tg.vmap(f, in_axes=in_axes)(*_vmap_args(batched, unbatched, in_axes))
    _assert_close(got, _loop(f, batched, unbatched, in_axes))


_DOT_GENERAL_DNS = [
    (((2, 3), (1, 0)), ((0,), (2,))),      # two contracting dims, batch dim not leading in rhs
    (((3, 2), (0, 1)), ((0,), (2,))),      # contracting dims listed out of order
    (((3,), (0,)), ((0, 2), (2, 1))),      # two batch dims, interleaved
    (((1,), (3,)), ((), ())),              # no batch dims, contract the last rhs dim
]


def _dot_general_ref(x, y, dn):
    (lc, rc), (lb, rb) = dn
    xs = list("abcd")
    ys = [None] * y.ndim
    for a, b in list(zip(lc, rc)) + list(zip(lb, rb)):
        ys[b] = xs[a]
    fresh = iter("pqrs")
    ys = [c if c else next(fresh) for c in ys]
    out = ([xs[i] for i in lb] + [xs[i] for i in range(x.ndim) if i not in lc + lb]
           + [ys[i] for i in range(y.ndim) if i not in rc + rb])
    return np.einsum("".join(xs) + "," + "".join(ys) + "->" + "".join(out), x, y)


@pytest.mark.parametrize("dn", _DOT_GENERAL_DNS, ids=str)
def test_dot_general_dimension_numbers(dn):
    x = _normal(940, (2, 3, 4, 5))
    y = _normal(941, (5, 4, 2, 6)) if dn[1][0] else _normal(942, (5, 4, 2, 3))
    f = lambda a, b: tg.lax.dot_general(a, b, dn)  # noqa: E731
    np.testing.assert_allclose(f(x, y), _dot_general_ref(x, y, dn), rtol=1e-12, atol=1e-12)
    check_grads(f, (x, y), order=2)
    bx, by = np.stack([x, 2 * x], 1), np.stack([y, -y], 3)
    for in_axes, pairs in [((1, 3), [(x, y), (2 * x, -y)]), ((1, None), [(x, y), (2 * x, y)]),
                           ((None, 3), [(x, y), (x, -y)])]:
        args = (bx if in_axes[0] is not None else x, by if in_axes[1] is not None else y)
        got = tg.vmap(f, in_axes=in_axes)(*args)
        np.testing.assert_allclose(got, np.stack([f(*p) for p in pairs]), rtol=1e-12, atol=1e-12)
