"""The broader ``tangentia.numpy`` API (sorting, cumulative products, padding,
statistics, ...): values against NumPy eagerly and under jit, vmap against a
Python loop, derivatives against finite differences, and clear errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.test_util import check_grads

RNG = np.random.default_rng(7)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((2, 3, 4))
V = RNG.standard_normal(5)
W = RNG.standard_normal(3)
POS = RNG.uniform(0.5, 2.0, (3, 4))
SORTED = np.sort(RNG.uniform(-2, 2, 6))
XP = np.linspace(-1.0, 2.0, 7)
FP = RNG.standard_normal(7)
XQ = np.array([-1.5, -0.3, 0.05, 0.77, 1.99, 2.5])
NANS = A.copy()
NANS[0, 1] = NANS[2, 3] = NANS[2, 0] = np.nan
INTS = RNG.integers(0, 5, (3, 4))
A3 = RNG.standard_normal((4, 3))
B3 = RNG.standard_normal((4, 3))
ZEROS = np.array([[1.5, 0.0, 2.0, -1.0], [0.0, 0.0, 3.0, 0.5], [2.0, -0.5, 0.0, 1.25]])


def _ref_descending(x, axis=-1):
    return np.flip(np.sort(x, axis=axis), axis=axis)


# (name, tnp function, NumPy reference, args, options)
#   options: grad=order of check_grads (0 = not differentiable / skipped),
#            vmap=False to skip the vmap check, rtol=...
CASES: list[tuple] = [
    # sorting and searching
    ("sort", tnp.sort, np.sort, (A,), {"grad": 2}),
    ("sort_axis0", lambda x: tnp.sort(x, axis=0), lambda x: np.sort(x, axis=0), (A,), {}),
    ("sort_axis_none", lambda x: tnp.sort(x, axis=None), lambda x: np.sort(x, axis=None), (A,),
     {}),
    ("sort_3d_axis1", lambda x: tnp.sort(x, 1), lambda x: np.sort(x, 1), (B,), {}),
    ("sort_descending", lambda x: tnp.sort(x, 0, descending=True),
     lambda x: _ref_descending(x, 0), (A,), {}),
    ("sort_ints", tnp.sort, np.sort, (INTS,), {}),
    ("sort_with_nan", tnp.sort, np.sort, (NANS,), {"grad": 0}),
    ("argsort", tnp.argsort, lambda x: np.argsort(x, kind="stable"), (A,), {}),
    ("argsort_axis0", lambda x: tnp.argsort(x, axis=0),
     lambda x: np.argsort(x, axis=0, kind="stable"), (B,), {}),
    ("argsort_ties_stable", tnp.argsort, lambda x: np.argsort(x, kind="stable"), (INTS,), {}),
    ("argsort_descending_stable", lambda x: tnp.argsort(x, descending=True),
     lambda x: np.argsort(-x, kind="stable"), (INTS,), {}),
    ("partition_kth", lambda x: tnp.partition(x, 2)[..., 2],
     lambda x: np.partition(x, 2)[..., 2], (A,), {}),
    ("argpartition_kth", lambda x: tnp.take_along_axis(x, tnp.argpartition(x, 1, 0), 0)[1],
     lambda x: np.take_along_axis(x, np.argpartition(x, 1, 0), 0)[1], (A,), {}),
    ("lexsort", lambda x, y: tnp.lexsort((x, y)), lambda x, y: np.lexsort((x, y)),
     (V, np.array([1.0, 0.0, 1.0, 0.0, 1.0])), {}),
    ("searchsorted", tnp.searchsorted, np.searchsorted, (SORTED, A), {}),
    ("searchsorted_right", lambda a, v: tnp.searchsorted(a, v, side="right"),
     lambda a, v: np.searchsorted(a, v, side="right"), (SORTED, np.r_[SORTED[:3], 0.1]), {}),
    ("searchsorted_sorter", lambda a, v: tnp.searchsorted(a, v, sorter=np.argsort(V)),
     lambda a, v: np.searchsorted(a, v, sorter=np.argsort(V)), (V, A), {"vmap": False}),
    ("digitize", lambda x: tnp.digitize(x, SORTED), lambda x: np.digitize(x, SORTED), (A,), {}),
    ("digitize_right_decreasing", lambda x: tnp.digitize(x, SORTED[::-1], right=True),
     lambda x: np.digitize(x, SORTED[::-1], right=True), (A,), {}),
    # cumulative operations
    ("cumprod", tnp.cumprod, np.cumprod, (A,), {"grad": 2}),
    ("cumprod_axis1", lambda x: tnp.cumprod(x, axis=1), lambda x: np.cumprod(x, axis=1), (A,),
     {"grad": 2}),
    ("cumprod_zeros", lambda x: tnp.cumprod(x, axis=1), lambda x: np.cumprod(x, axis=1),
     (ZEROS,), {"grad": 2}),
    ("cumprod_long_axis0", lambda x: tnp.cumprod(x, 0), lambda x: np.cumprod(x, 0),
     (RNG.uniform(0.5, 1.5, (11, 2)),), {"grad": 1}),
    ("cumprod_ints", lambda x: tnp.cumprod(x, 1), lambda x: np.cumprod(x, 1),
     (INTS.astype(np.int32),), {}),
    ("cumprod_method", lambda x: tnp.cumprod(x, 1) + x * 0,
     lambda x: np.cumprod(x, 1) + x * 0, (A,), {}),
    ("cummax", lambda x: tnp.cummax(x, 1), lambda x: np.maximum.accumulate(x, 1), (A,),
     {"grad": 1}),
    ("cummin_axis0", lambda x: tnp.cummin(x, 0), lambda x: np.minimum.accumulate(x, 0), (A,),
     {"grad": 1}),
    ("cummax_reverse", lambda x: tnp.cummax(x, 1, reverse=True),
     lambda x: np.flip(np.maximum.accumulate(np.flip(x, 1), 1), 1), (A,), {"grad": 1}),
    ("cumulative_sum_initial", lambda x: tnp.cumulative_sum(x, axis=1, include_initial=True),
     lambda x: np.cumulative_sum(x, axis=1, include_initial=True), (A,), {"grad": 1}),
    ("cumulative_prod", lambda x: tnp.cumulative_prod(x, axis=0),
     lambda x: np.cumulative_prod(x, axis=0), (A,), {"grad": 1}),
    ("nancumsum", lambda x: tnp.nancumsum(x, 1), lambda x: np.nancumsum(x, 1), (NANS,),
     {"grad": 1}),
    ("nancumprod", tnp.nancumprod, np.nancumprod, (NANS,), {"grad": 1}),
    # differences, shifts and padding
    ("diff", tnp.diff, np.diff, (A,), {"grad": 1}),
    ("diff_n2_axis0", lambda x: tnp.diff(x, 2, axis=0), lambda x: np.diff(x, 2, axis=0), (A,),
     {"grad": 1}),
    ("diff_prepend_append", lambda x: tnp.diff(x, prepend=0.5, append=x[:, :1]),
     lambda x: np.diff(x, prepend=0.5, append=x[:, :1]), (A,), {"grad": 1}),
    ("diff_bool", lambda x: tnp.diff(x > 0), lambda x: np.diff(x > 0), (A,), {}),
    ("ediff1d", lambda x: tnp.ediff1d(x, to_end=[1.0, 2.0], to_begin=-1.0),
     lambda x: np.ediff1d(x, to_end=[1.0, 2.0], to_begin=-1.0), (A,), {"grad": 1}),
    ("roll_flat", lambda x: tnp.roll(x, 5), lambda x: np.roll(x, 5), (A,), {"grad": 1}),
    ("roll_axes", lambda x: tnp.roll(x, (1, -3), axis=(0, 1)),
     lambda x: np.roll(x, (1, -3), axis=(0, 1)), (A,), {"grad": 1}),
    ("roll_traced_shift", lambda x, s: tnp.roll(x, s, axis=1), lambda x, s: np.roll(x, s, axis=1),
     (A, np.int64(3)), {"grad": 1}),
    ("rot90", tnp.rot90, np.rot90, (A,), {}),
    ("rot90_k3_axes", lambda x: tnp.rot90(x, 3, (2, 0)), lambda x: np.rot90(x, 3, (2, 0)),
     (B,), {}),
    ("fliplr_flipud", lambda x: tnp.fliplr(x) + tnp.flipud(x), lambda x: np.fliplr(x)
     + np.flipud(x), (A,), {}),
    ("pad_constant",
     lambda x: tnp.pad(x, ((1, 2), (0, 3)), constant_values=((1.5, 2.0), (3.0, 4.0))),
     lambda x: np.pad(x, ((1, 2), (0, 3)), constant_values=((1.5, 2.0), (3.0, 4.0))), (A,),
     {"grad": 1}),
    ("pad_constant_traced_value", lambda x, c: tnp.pad(x, 2, constant_values=c),
     lambda x, c: np.pad(x, 2, constant_values=c), (A, np.float64(0.7)), {"grad": 1}),
    ("pad_edge", lambda x: tnp.pad(x, ((2, 1), (3, 0)), mode="edge"),
     lambda x: np.pad(x, ((2, 1), (3, 0)), mode="edge"), (A,), {"grad": 1}),
    ("pad_reflect_wide", lambda x: tnp.pad(x, ((4, 7), (1, 2)), mode="reflect"),
     lambda x: np.pad(x, ((4, 7), (1, 2)), mode="reflect"), (A,), {"grad": 1}),
    ("pad_reflect_odd", lambda x: tnp.pad(x, (2, 3), mode="reflect", reflect_type="odd"),
     lambda x: np.pad(x, (2, 3), mode="reflect", reflect_type="odd"), (A,), {"grad": 1}),
    ("pad_symmetric", lambda x: tnp.pad(x, (5, 2), mode="symmetric"),
     lambda x: np.pad(x, (5, 2), mode="symmetric"), (A,), {"grad": 1}),
    ("pad_wrap", lambda x: tnp.pad(x, ((1, 5), (6, 2)), mode="wrap"),
     lambda x: np.pad(x, ((1, 5), (6, 2)), mode="wrap"), (A,), {"grad": 1}),
    ("pad_linear_ramp", lambda x: tnp.pad(x, (2, 3), mode="linear_ramp", end_values=(1.0, -2.0)),
     lambda x: np.pad(x, (2, 3), mode="linear_ramp", end_values=(1.0, -2.0)), (A,),
     {"grad": 1}),
    ("pad_mean_stat_length", lambda x: tnp.pad(x, 2, mode="mean", stat_length=2),
     lambda x: np.pad(x, 2, mode="mean", stat_length=2), (A,), {"grad": 1}),
    ("pad_maximum", lambda x: tnp.pad(x, (1, 2), mode="maximum"),
     lambda x: np.pad(x, (1, 2), mode="maximum"), (A,), {"grad": 1}),
    ("pad_minimum", lambda x: tnp.pad(x, ((0, 2), (1, 0)), mode="minimum"),
     lambda x: np.pad(x, ((0, 2), (1, 0)), mode="minimum"), (A,), {}),
    ("pad_median", lambda x: tnp.pad(x, 1, mode="median"),
     lambda x: np.pad(x, 1, mode="median"), (A,), {"grad": 1}),
    ("pad_ints_1d", lambda x: tnp.pad(x, (3, 1), mode="reflect"),
     lambda x: np.pad(x, (3, 1), mode="reflect"), (np.arange(5),), {}),
    # grids, stacking and products
    ("meshgrid_xy", lambda x, y: tnp.meshgrid(x, y), lambda x, y: np.meshgrid(x, y), (V, W),
     {"grad": 1}),
    ("meshgrid_ij_3", lambda x, y: tnp.meshgrid(x, y, x[:2], indexing="ij"),
     lambda x, y: np.meshgrid(x, y, x[:2], indexing="ij"), (V, W), {}),
    ("meshgrid_sparse", lambda x, y: tnp.meshgrid(x, y, sparse=True),
     lambda x, y: np.meshgrid(x, y, sparse=True), (V, W), {}),
    ("cross", tnp.cross, np.cross, (A3, B3), {"grad": 2}),
    ("cross_axes", lambda a, b: tnp.cross(a, b, axisa=0, axisb=0, axisc=0),
     lambda a, b: np.cross(a, b, axisa=0, axisb=0, axisc=0), (A3.T, B3.T), {"grad": 1}),
    ("cross_broadcast", lambda a, b: tnp.cross(a, b[0]), lambda a, b: np.cross(a, b[0]),
     (A3, B3), {"grad": 1}),
    ("kron", tnp.kron, np.kron, (A[:2, :2], A3[:2]), {"grad": 1}),
    ("kron_mixed_rank", tnp.kron, np.kron, (V[:3], A), {"grad": 1}),
    ("vander", tnp.vander, np.vander, (V,), {"grad": 2}),
    ("vander_increasing_N", lambda x: tnp.vander(x, 3, increasing=True),
     lambda x: np.vander(x, 3, increasing=True), (np.r_[V, 0.0],), {"grad": 1}),
    ("column_stack", lambda x, y: tnp.column_stack([x, y, x * y]),
     lambda x, y: np.column_stack([x, y, x * y]), (V, V[::-1]), {"grad": 1}),
    ("column_stack_2d", lambda x: tnp.column_stack([x, x[:, :1]]),
     lambda x: np.column_stack([x, x[:, :1]]), (A,), {}),
    ("dstack", lambda x: tnp.dstack([x, 2 * x]), lambda x: np.dstack([x, 2 * x]), (A,),
     {"grad": 1}),
    ("atleast_3d", tnp.atleast_3d, np.atleast_3d, (V,), {}),
    ("append", lambda x: tnp.append(x, [1.0, 2.0]), lambda x: np.append(x, [1.0, 2.0]), (A,),
     {"grad": 1}),
    ("append_axis", lambda x: tnp.append(x, x[:1], axis=0),
     lambda x: np.append(x, x[:1], axis=0), (A,), {"grad": 1}),
    ("delete", lambda x: tnp.delete(x, [0, 2], axis=1), lambda x: np.delete(x, [0, 2], axis=1),
     (A,), {"grad": 1}),
    ("matrix_transpose", tnp.matrix_transpose, np.matrix_transpose, (B,), {"grad": 1}),
    ("vecdot", tnp.vecdot, np.vecdot, (B, A), {"grad": 2}),
    ("vecdot_axis0", lambda x, y: tnp.vecdot(x, y, axis=0),
     lambda x, y: np.vecdot(x, y, axis=0), (A, A[::-1]), {"grad": 1}),  # type: ignore[call-overload]  # (NumPy's stubs lack the gufunc's axis)
    ("trace_3d", lambda x: tnp.trace(x, 1, 1, 2), lambda x: np.trace(x, 1, 1, 2), (B,),
     {"grad": 1}),
    ("tril_bool", lambda x: tnp.tril(x > 0), lambda x: np.tril(x > 0), (B,), {}),
    ("triu_3d", lambda x: tnp.triu(x, -1), lambda x: np.triu(x, -1), (B,), {"grad": 1}),
    # elementwise extras
    ("fmax", tnp.fmax, np.fmax, (NANS, A[::-1]), {}),
    ("fmin", tnp.fmin, np.fmin, (NANS, NANS[::-1]), {}),
    ("fmax_smooth", tnp.fmax, np.fmax, (A, A[::-1] + 0.1), {"grad": 1}),
    ("logaddexp2", tnp.logaddexp2, np.logaddexp2, (A, A[::-1] * 3), {"grad": 2}),
    ("ldexp", lambda x: tnp.ldexp(x, INTS), lambda x: np.ldexp(x, INTS), (A,), {"grad": 1}),
    ("signbit", tnp.signbit, np.signbit, (np.r_[V, -0.0, 0.0],), {}),
    ("copysign", tnp.copysign, np.copysign, (A, A[::-1]), {"grad": 2}),
    ("nan_to_num", tnp.nan_to_num, np.nan_to_num,
     (np.r_[V, np.nan, np.inf, -np.inf],), {"grad": 1}),
    ("nan_to_num_values", lambda x: tnp.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0),
     lambda x: np.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0),
     (np.r_[V, np.nan, np.inf, -np.inf],), {}),
    ("array_equal", lambda x: tnp.array_equal(x, x * 1.0), lambda x: np.array_equal(x, x * 1.0),
     (A,), {}),
    ("array_equal_nan", lambda x: tnp.array_equal(x, x, equal_nan=True),
     lambda x: np.array_equal(x, x, equal_nan=True), (NANS,), {}),
    ("array_equiv", lambda x: tnp.array_equiv(x, x[0]), lambda x: np.array_equiv(x, x[0]),
     (np.ones((3, 4)),), {}),
    ("isin", lambda x: tnp.isin(x, INTS[0]), lambda x: np.isin(x, INTS[0]), (INTS,), {}),
    ("isin_invert", lambda x: tnp.isin(x, [1, 3], invert=True),
     lambda x: np.isin(x, [1, 3], invert=True), (INTS,), {}),
    # ranges
    ("logspace", lambda a, b: tnp.logspace(a, b, 5), lambda a, b: np.logspace(a, b, 5),
     (np.float64(0.5), np.float64(2.0)), {"grad": 1}),
    ("logspace_base_axis", lambda a: tnp.logspace(a, 1.0, 4, base=2.0, endpoint=False, axis=1),
     lambda a: np.logspace(a, 1.0, 4, base=2.0, endpoint=False, axis=1), (W,), {"grad": 1}),
    ("geomspace", lambda a, b: tnp.geomspace(a, b, 6), lambda a, b: np.geomspace(a, b, 6),
     (np.float64(0.5), np.float64(20.0)), {"grad": 1}),
    ("geomspace_negative", lambda a: tnp.geomspace(a, -1000.0, 4, endpoint=False),
     lambda a: np.geomspace(a, -1000.0, 4, endpoint=False), (np.float64(-2.0),), {"grad": 1}),
    # choosing between values
    ("select", lambda x: tnp.select([x < -0.5, x > 0.5], [x * 2, x ** 2], -1.0),
     lambda x: np.select([x < -0.5, x > 0.5], [x * 2, x ** 2], -1.0), (A,), {"grad": 1}),
    ("select_broadcast", lambda x: tnp.select([x > 0], [W], 0.5),
     lambda x: np.select([x > 0], [W], 0.5), (A[:, :3],), {}),
    ("piecewise", lambda x: tnp.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v ** 2]),
     lambda x: np.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v ** 2]), (A,),
     {"grad": 1}),
    ("piecewise_otherwise", lambda x: tnp.piecewise(x, [x < -0.5], [0.0, lambda v: 3 * v]),
     lambda x: np.piecewise(x, [x < -0.5], [0.0, lambda v: 3 * v]), (A,), {"grad": 1}),
    # polynomials, convolution, interpolation
    ("polyval", tnp.polyval, np.polyval, (W, A), {"grad": 2}),
    ("convolve_full", tnp.convolve, np.convolve, (V, W), {"grad": 2}),
    ("convolve_same_short_first", lambda a, v: tnp.convolve(a, v, "same"),
     lambda a, v: np.convolve(a, v, "same"), (W[:2], V), {"grad": 1}),
    ("convolve_same", lambda a, v: tnp.convolve(a, v, "same"),
     lambda a, v: np.convolve(a, v, "same"), (V, W[:2]), {"grad": 1}),
    ("convolve_valid", lambda a, v: tnp.convolve(a, v, "valid"),
     lambda a, v: np.convolve(a, v, "valid"), (V, W), {"grad": 1}),
    ("correlate", tnp.correlate, np.correlate, (V, W), {"grad": 1}),
    ("correlate_same_long_second", lambda a, v: tnp.correlate(a, v, "same"),
     lambda a, v: np.correlate(a, v, "same"), (W[:2], V[:4]), {"grad": 1}),
    ("correlate_full", lambda a, v: tnp.correlate(a, v, "full"),
     lambda a, v: np.correlate(a, v, "full"), (W, V), {"grad": 1}),
    ("interp", tnp.interp, np.interp, (XQ, XP, FP), {"grad": 1}),
    ("interp_left_right", lambda x, fp: tnp.interp(x, XP, fp, left=-5.0, right=5.0),
     lambda x, fp: np.interp(x, XP, fp, left=-5.0, right=5.0), (XQ, FP), {"grad": 1}),
    ("interp_scalar", lambda x: tnp.interp(x, XP, FP), lambda x: np.interp(x, XP, FP),
     (np.float64(0.3),), {"grad": 1, "vmap": True}),
    ("interp_period", lambda x: tnp.interp(x, [0.0, 1.0, 2.5, 3.0], [1.0, -1.0, 0.5, 2.0],
                                           period=3.5),
     lambda x: np.interp(x, [0.0, 1.0, 2.5, 3.0], [1.0, -1.0, 0.5, 2.0], period=3.5),
     (np.array([-1.2, 0.3, 3.2, 4.1, 7.3]),), {"grad": 1}),
    # statistics
    ("ptp", lambda x: tnp.ptp(x, axis=1), lambda x: np.ptp(x, axis=1), (A,), {"grad": 1}),
    ("average", tnp.average, np.average, (A,), {"grad": 1}),
    ("average_weights", lambda x, w: tnp.average(x, weights=w),
     lambda x, w: np.average(x, weights=w), (A, POS), {"grad": 2}),
    ("average_weights_axis", lambda x, w: tnp.average(x, axis=1, weights=w, returned=True),
     lambda x, w: np.average(x, axis=1, weights=w, returned=True), (A, POS[0]), {"grad": 1}),
    ("average_keepdims", lambda x: tnp.average(x, axis=0, weights=W, keepdims=True),
     lambda x: np.average(x, axis=0, weights=W, keepdims=True), (A,), {"grad": 1}),
    ("cov", tnp.cov, np.cov, (A,), {"grad": 2}),
    ("cov_y_cols_bias", lambda x, y: tnp.cov(x, y, rowvar=False, bias=True),
     lambda x, y: np.cov(x, y, rowvar=False, bias=True), (A, POS), {"grad": 1}),
    ("cov_weights", lambda x: tnp.cov(x, fweights=[1, 2, 1, 3], aweights=POS[0]),
     lambda x: np.cov(x, fweights=[1, 2, 1, 3], aweights=POS[0]), (A,), {"grad": 1}),
    ("cov_vector", lambda x: tnp.cov(x, ddof=0), lambda x: np.cov(x, ddof=0), (V,), {"grad": 1}),
    ("corrcoef", tnp.corrcoef, np.corrcoef, (A,), {"grad": 1}),
    ("corrcoef_xy", lambda x, y: tnp.corrcoef(x, y), lambda x, y: np.corrcoef(x, y),
     (V, V ** 2), {"grad": 1}),
    ("median", tnp.median, np.median, (A,), {"grad": 1}),
    ("median_axis", lambda x: tnp.median(x, axis=1, keepdims=True),
     lambda x: np.median(x, axis=1, keepdims=True), (A,), {"grad": 1}),
    ("median_axes_tuple", lambda x: tnp.median(x, axis=(0, 2)),
     lambda x: np.median(x, axis=(0, 2)), (B,), {"grad": 1}),
    ("median_nan", lambda x: tnp.median(x, axis=0), lambda x: np.median(x, axis=0), (NANS,),
     {}),
    ("median_ints", tnp.median, np.median, (INTS,), {}),
    ("quantile", lambda x: tnp.quantile(x, 0.3), lambda x: np.quantile(x, 0.3), (A,),
     {"grad": 1}),
    ("quantile_vector_q_axis", lambda x: tnp.quantile(x, [0.1, 0.5, 0.95], axis=0),
     lambda x: np.quantile(x, [0.1, 0.5, 0.95], axis=0), (A,), {"grad": 1}),
    ("quantile_traced_q", lambda x, q: tnp.quantile(x, q, axis=1),
     lambda x, q: np.quantile(x, q, axis=1), (A, np.float64(0.42)), {"grad": 1}),
    ("percentile", lambda x: tnp.percentile(x, [25, 75], axis=1, keepdims=True),
     lambda x: np.percentile(x, [25, 75], axis=1, keepdims=True), (A,), {"grad": 1}),
    ("nanmedian", lambda x: tnp.nanmedian(x, axis=1), lambda x: np.nanmedian(x, axis=1),
     (NANS,), {"grad": 1}),
    ("nanquantile", lambda x: tnp.nanquantile(x, [0.2, 0.7], axis=1),
     lambda x: np.nanquantile(x, [0.2, 0.7], axis=1), (NANS,), {"grad": 1}),
    ("nanpercentile_flat", lambda x: tnp.nanpercentile(x, 40), lambda x: np.nanpercentile(x, 40),
     (NANS,), {"grad": 1}),
    ("nansum", lambda x: tnp.nansum(x, axis=1), lambda x: np.nansum(x, axis=1), (NANS,),
     {"grad": 1}),
    ("nanprod", tnp.nanprod, np.nanprod, (NANS,), {"grad": 1}),
    ("nanmean", lambda x: tnp.nanmean(x, axis=0), lambda x: np.nanmean(x, axis=0), (NANS,),
     {"grad": 1}),
    ("nanvar", lambda x: tnp.nanvar(x, axis=1, ddof=1), lambda x: np.nanvar(x, axis=1, ddof=1),
     (NANS,), {"grad": 1}),
    ("nanstd", tnp.nanstd, np.nanstd, (NANS,), {"grad": 1}),
    ("nanmax", lambda x: tnp.nanmax(x, axis=1), lambda x: np.nanmax(x, axis=1), (NANS,),
     {"grad": 1}),
    ("nanmin_keepdims", lambda x: tnp.nanmin(x, axis=0, keepdims=True),
     lambda x: np.nanmin(x, axis=0, keepdims=True), (NANS,), {"grad": 1}),
    ("nanargmax", lambda x: tnp.nanargmax(x, axis=1), lambda x: np.nanargmax(x, axis=1),
     (NANS,), {}),
    ("nanargmin", tnp.nanargmin, np.nanargmin, (NANS,), {}),
    ("nanmean_ints", tnp.nanmean, np.nanmean, (INTS,), {}),
    ("apply_along_axis", lambda x: tnp.apply_along_axis(lambda r: r * r.sum(), 1, x),
     lambda x: np.apply_along_axis(lambda r: r * r.sum(), 1, x), (B,), {"grad": 1}),
    ("apply_along_axis_scalar_out", lambda x: tnp.apply_along_axis(tnp.max, 0, x),
     lambda x: np.apply_along_axis(np.max, 0, x), (B,), {"grad": 1}),
]

_IDS = [c[0] for c in CASES]


def _check(got, want, rtol):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), (type(got), len(want))
        for g, w in zip(got, want):
            _check(g, w, rtol)
        return
    assert isinstance(got, np.ndarray), type(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-12)
    else:
        np.testing.assert_array_equal(got, want)


def _perturb(a):
    """A second batch element: scaled for floats, permuted for integers."""
    a = np.asarray(a)
    if a.dtype.kind == "f":
        return a * 1.1 + 0.01
    if a.dtype.kind in "iu":
        return np.roll(a, 1) if a.ndim else a + 1
    return a


@pytest.mark.parametrize("name,f,ref,args,opts", CASES, ids=_IDS)
def test_eager_and_jit_match_numpy(name, f, ref, args, opts):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = ref(*args)
        _check(f(*args), want, opts.get("rtol", 1e-10))
        _check(tg.jit(f)(*args), want, opts.get("rtol", 1e-10))


@pytest.mark.parametrize("name,f,ref,args,opts",
                         [c for c in CASES if c[4].get("vmap", True)],
                         ids=[c[0] for c in CASES if c[4].get("vmap", True)])
def test_vmap_matches_loop(name, f, ref, args, opts):
    batched = [np.stack([a, _perturb(a)]) for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = tg.vmap(f)(*batched)
        rows = [f(*[b[i] for b in batched]) for i in range(2)]
    if isinstance(rows[0], (tuple, list)):
        want = [np.stack([r0, r1]) for r0, r1 in zip(*rows)]
        got = list(got)
    else:
        want = np.stack(rows)
    _check(got, want, opts.get("rtol", 1e-10))
    # vmap under jit and along a different axis agrees as well
    got_jit = tg.jit(tg.vmap(f))(*batched)
    _check(list(got_jit) if isinstance(want, list) else got_jit, want, opts.get("rtol", 1e-10))


_GRAD_CASES = [c for c in CASES if c[4].get("grad", 0)]


@pytest.mark.parametrize("name,f,ref,args,opts", _GRAD_CASES, ids=[c[0] for c in _GRAD_CASES])
def test_derivatives_match_finite_differences(name, f, ref, args, opts):
    float_args = [i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f"]

    def g(*xs):
        full = list(args)
        for i, x in zip(float_args, xs):
            full[i] = x
        return f(*full)

    check_grads(g, [args[i] for i in float_args], order=opts["grad"], modes=("fwd", "rev"),
                atol=1e-4, rtol=1e-4)


# ---------------------------------------------------------------------------
# Sorting


def test_sort_jvp_gathers_the_tangent_with_the_permutation():
    x = np.array([3.0, 1.0, 2.0, 5.0])
    t = np.array([10.0, 20.0, 30.0, 40.0])
    out, tan = tg.jvp(tnp.sort, (x,), (t,))
    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0, 5.0])
    np.testing.assert_array_equal(tan, t[np.argsort(x)])
    g = tg.grad(lambda x: tnp.sort(x)[0] * 2.0 + tnp.sort(x)[-1])(x)
    np.testing.assert_array_equal(g, [0.0, 2.0, 0.0, 1.0])


def test_sort_is_a_primitive_and_argsort_has_zero_derivative():
    jaxpr = str(tg.make_jaxpr(lambda x: tnp.sort(x) + tnp.argsort(x))(A))
    assert "sort[axis=1]" in jaxpr and "argsort[axis=1" in jaxpr
    # argsort inside a differentiated function contributes no derivative
    g = tg.grad(lambda x: tnp.sum(x[tnp.argsort(x)] * tnp.arange(5.0)))(V)
    np.testing.assert_allclose(g, np.argsort(np.argsort(V)).astype(float))
    _, t = tg.jvp(lambda x: tnp.argsort(x) * 1.0, (V,), (np.ones(5),))
    np.testing.assert_array_equal(t, np.zeros(5))


def test_sort_vmap_in_axes_and_jacobian():
    got = tg.vmap(lambda x: tnp.sort(x, axis=0), in_axes=1, out_axes=1)(B)
    np.testing.assert_array_equal(got, np.sort(B, axis=0))
    got = tg.vmap(lambda x: tnp.sort(x, axis=-1), in_axes=2, out_axes=0)(B)
    np.testing.assert_array_equal(got, np.moveaxis(np.sort(B, axis=1), 2, 0))
    jac = tg.jacfwd(tnp.sort)(V)
    np.testing.assert_array_equal(jac, np.eye(5)[np.argsort(V)])
    np.testing.assert_array_equal(tg.jacrev(tnp.sort)(V), jac)


def test_searchsorted_batched_sorted_arrays():
    a = np.sort(RNG.standard_normal((3, 6)), axis=1)
    v = RNG.standard_normal((3, 4))
    for side in ("left", "right"):
        got = tg.vmap(lambda a, v: tnp.searchsorted(a, v, side=side))(a, v)
        want = np.stack([np.searchsorted(a[i], v[i], side=side) for i in range(3)])
        np.testing.assert_array_equal(got, want)
    # exact hits with the sorted array batched and the values not
    got = tg.vmap(lambda a: tnp.searchsorted(a, a[2], side="right"), in_axes=0)(a)
    np.testing.assert_array_equal(got, [3, 3, 3])


def test_tracer_methods():
    def f(x):
        return x.sort() * 1.0 + x.argsort() + x.cumprod() + x.ptp() + x.searchsorted(0.0)
    want = np.sort(V) + np.argsort(V) + np.cumprod(V) + np.ptp(V) + np.searchsorted(V, 0.0)
    np.testing.assert_allclose(tg.jit(f)(V), want)


# ---------------------------------------------------------------------------
# cumprod


def test_cumprod_gradient_is_exact_with_zeros_and_never_nan():
    x = np.array([2.0, 0.0, 3.0, 0.0, 4.0])
    jac = tg.jacrev(tnp.cumprod)(x)
    want = np.zeros((5, 5))
    for i in range(5):
        for j in range(i + 1):
            want[i, j] = np.prod([x[k] for k in range(i + 1) if k != j])
    np.testing.assert_allclose(jac, want)
    np.testing.assert_allclose(tg.jacfwd(tnp.cumprod)(x), want)
    y = RNG.uniform(-2, 2, 20)
    g = tg.grad(lambda x: tnp.sum(tnp.cumprod(x)))(y)
    assert np.all(np.isfinite(g))
    want = [np.sum([np.prod(np.delete(y[:i + 1], j)) for i in range(j, 20)]) for j in range(20)]
    np.testing.assert_allclose(g, want, rtol=1e-9)


def test_cumprod_hessian_and_reverse_of_jvp():
    x = np.array([1.5, -0.5, 2.0, 0.0])
    h = tg.hessian(lambda x: tnp.cumprod(x)[-1])(x)
    want = np.zeros((4, 4))
    for i in range(4):
        for j in range(4):
            if i != j:
                want[i, j] = np.prod([x[k] for k in range(4) if k not in (i, j)])
    np.testing.assert_allclose(h, want)


def test_cummax_tangent_follows_the_running_maximum():
    x = np.array([1.0, 3.0, 2.0, 5.0, 4.0])
    t = np.arange(5.0) + 1
    _, tan = tg.jvp(lambda x: tnp.cummax(x), (x,), (t,))
    np.testing.assert_array_equal(tan, [1.0, 2.0, 2.0, 4.0, 4.0])


# ---------------------------------------------------------------------------
# unique and other value-dependent shapes


def test_unique_eager_matches_numpy():
    x = np.array([3, 1, 2, 3, 1, 7])
    np.testing.assert_array_equal(tnp.unique(x), np.unique(x))
    for got, want in zip(tnp.unique(x, True, True, True), np.unique(x, True, True, True)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(tnp.unique(INTS, axis=0), np.unique(INTS, axis=0))


def test_unique_with_size_under_jit_and_eagerly():
    x = np.array([3.0, 1.0, 2.0, 3.0, 1.0, 7.0, np.nan, np.nan])
    f = tg.jit(lambda x: tnp.unique(x, return_index=True, return_inverse=True,
                                    return_counts=True, size=6, fill_value=-1.0))
    vals, idx, inv, counts = f(x)
    np.testing.assert_array_equal(vals, [1.0, 2.0, 3.0, 7.0, np.nan, -1.0])
    # padding indices repeat the first unique value's index, as JAX's (checked: jax 0.10.2)
    np.testing.assert_array_equal(idx, [1, 2, 0, 5, 6, 1])
    np.testing.assert_array_equal(counts, [2, 1, 2, 1, 2, 0])
    np.testing.assert_array_equal(vals[inv], x)
    eager = tnp.unique(x, return_index=True, return_inverse=True, return_counts=True, size=6,
                       fill_value=-1.0)
    for e, j in zip(eager, (vals, idx, inv, counts)):
        np.testing.assert_array_equal(e, j)
    # truncation, default fill value, and vmap
    np.testing.assert_array_equal(tg.jit(lambda x: tnp.unique(x, size=2))(x), [1.0, 2.0])
    ints = np.array([[4, 4, 1], [2, 2, 2]])
    got = tg.vmap(lambda r: tnp.unique(r, size=3))(ints)
    np.testing.assert_array_equal(got, [[1, 4, 1], [2, 2, 2]])


def test_value_dependent_functions_fail_clearly_under_jit():
    with pytest.raises(tg.ConcretizationTypeError, match=r"unique: .*argument 'ar'.*size="):
        tg.jit(tnp.unique)(V)
    with pytest.raises(tg.ConcretizationTypeError, match=r"flatnonzero: .*argument 'a'"):
        tg.jit(tnp.flatnonzero)(V)
    with pytest.raises(tg.ConcretizationTypeError, match=r"argwhere: .*argument 'a'"):
        tg.jit(tnp.argwhere)(V)
    with pytest.raises(tg.ConcretizationTypeError, match=r"bincount: .*argument 'x'"):
        tg.jit(tnp.bincount)(INTS[0])


def test_eager_value_dependent_functions():
    np.testing.assert_array_equal(tnp.flatnonzero(A > 0), np.flatnonzero(A > 0))
    np.testing.assert_array_equal(tnp.argwhere(A > 0), np.argwhere(A > 0))
    np.testing.assert_array_equal(tnp.union1d([1, 3], [2, 3]), [1, 2, 3])
    np.testing.assert_array_equal(tnp.intersect1d([1, 3], [2, 3]), [3])
    np.testing.assert_array_equal(tnp.setdiff1d([1, 3], [2, 3]), [1])
    # under grad the values are concrete, so these still work
    g = tg.grad(lambda x: tnp.sum(x[tnp.flatnonzero(x > 0)]))(V)
    np.testing.assert_array_equal(g, (V > 0).astype(float))


def test_bincount():
    x = np.array([0, 1, 1, 3, 2, 1, 7])
    w = RNG.standard_normal(7)
    np.testing.assert_array_equal(tnp.bincount(x), np.bincount(x))
    np.testing.assert_allclose(tnp.bincount(x, w, minlength=10), np.bincount(x, w, minlength=10))
    np.testing.assert_array_equal(tg.jit(lambda x: tnp.bincount(x, length=5))(x),
                                  [1, 3, 1, 1, 0])
    g = tg.grad(lambda w: tnp.sum(tnp.bincount(x, w, length=8) ** 2))(w)
    np.testing.assert_allclose(g, 2 * np.bincount(x, w)[x])


# ---------------------------------------------------------------------------
# Other behaviour


def test_isscalar_follows_jax():
    assert tnp.isscalar(1.0) and tnp.isscalar(np.float32(2)) and tnp.isscalar(np.array(1.0))
    assert not tnp.isscalar(V) and not tnp.isscalar([1.0]) and not tnp.isscalar(None)
    seen = []
    tg.jit(lambda x, y: seen.append((tnp.isscalar(x), tnp.isscalar(y))) or x)(1.0, V)
    assert seen == [(True, False)]


def test_eager_results_are_ndarrays():
    outs = [tnp.array_equal(A, A), tnp.allclose(A, A), tnp.median(A), tnp.quantile(A, 0.5),
            tnp.interp(0.5, XP, FP), tnp.polyval(W, 0.5), tnp.signbit(-1.0),
            tnp.copysign(1.0, -2.0), tnp.fmax(1.0, np.nan), tnp.logaddexp2(1.0, 2.0),
            tnp.nan_to_num(np.nan), tnp.select([True], [1.0]), tnp.cumprod(2.0),
            tnp.ptp(A), tnp.nanmean(NANS), tnp.average(A), tnp.sort(V), tnp.roll(V, 1)]
    for o in outs:
        assert isinstance(o, np.ndarray), type(o)
    assert bool(tnp.array_equal(A, A)) and not bool(tnp.array_equal(A, A[:2]))


def test_pad_corners_match_numpy_for_mixed_modes_under_jit():
    x = np.arange(12.0).reshape(3, 4)
    for mode, kw in [("edge", {}), ("wrap", {}), ("symmetric", {"reflect_type": "odd"}),
                     ("mean", {}), ("linear_ramp", {"end_values": 3.0}), ("empty", {})]:
        got = tg.jit(lambda x: tnp.pad(x, ((2, 1), (1, 3)), mode=mode, **kw))(x)
        if mode == "empty":
            assert got.shape == (6, 8)
            np.testing.assert_array_equal(got[2:5, 1:5], x)
            continue
        np.testing.assert_allclose(got, np.pad(x, ((2, 1), (1, 3)), mode=mode, **kw))
    ints = np.arange(12).reshape(3, 4) * 3
    for mode in ("mean", "median", "linear_ramp", "maximum"):
        got = tg.jit(lambda x: tnp.pad(x, 2, mode=mode))(ints)
        want = np.pad(ints, 2, mode=mode)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, atol=1)


def test_quantile_methods_against_numpy():
    x = RNG.standard_normal((5, 7))
    q = np.array([0.0, 0.13, 0.5, 0.81, 1.0])
    for method in ("linear", "lower", "higher", "nearest", "midpoint", "hazen", "weibull",
                   "median_unbiased", "normal_unbiased", "interpolated_inverted_cdf"):
        want = np.quantile(x, q, axis=1, method=method)
        np.testing.assert_allclose(tnp.quantile(x, q, axis=1, method=method), want,
                                   err_msg=method)
        np.testing.assert_allclose(tg.jit(lambda x: tnp.quantile(x, q, 1, method=method))(x),
                                   want, err_msg=method)
        np.testing.assert_allclose(
            tg.jit(lambda x, q: tnp.quantile(x, q, 1, method=method))(x, q), want,
            err_msg=method)


def test_median_gradient_splits_between_the_middle_entries():
    g = tg.grad(tnp.median)(np.array([4.0, 1.0, 3.0, 2.0]))
    np.testing.assert_allclose(g, [0.0, 0.0, 0.5, 0.5])
    g = tg.grad(tnp.nanmedian)(np.array([4.0, np.nan, 1.0, 3.0]))
    np.testing.assert_allclose(g, [0.0, 0.0, 0.0, 1.0])


def test_interp_gradients():
    x = np.array([0.25, 1.6])
    gx = tg.grad(lambda x: tnp.sum(tnp.interp(x, XP, FP)))(x)
    slopes = np.diff(FP) / np.diff(XP)
    np.testing.assert_allclose(gx, slopes[np.searchsorted(XP, x) - 1])
    gfp = tg.grad(lambda fp: tnp.interp(0.25, XP, fp))(FP)
    i = np.searchsorted(XP, 0.25)
    w = (0.25 - XP[i - 1]) / (XP[i] - XP[i - 1])
    want = np.zeros(7)
    want[i - 1], want[i] = 1 - w, w
    np.testing.assert_allclose(gfp, want)
    # repeated abscissae give finite derivatives
    g = tg.grad(lambda x: tnp.interp(x, [0.0, 1.0, 1.0, 2.0], [0.0, 1.0, 3.0, 4.0]))(1.0)
    assert np.isfinite(g)


def test_convolve_matches_numpy_for_all_length_combinations():
    for n in range(1, 6):
        for m in range(1, 6):
            a, v = RNG.standard_normal(n), RNG.standard_normal(m)
            for mode in ("full", "same", "valid"):
                np.testing.assert_allclose(tg.jit(lambda a, v: tnp.convolve(a, v, mode))(a, v),
                                           np.convolve(a, v, mode), err_msg=f"{n} {m} {mode}")
                np.testing.assert_allclose(tg.jit(lambda a, v: tnp.correlate(a, v, mode))(a, v),
                                           np.correlate(a, v, mode), err_msg=f"{n} {m} {mode}")


def test_cross_of_2_vectors():
    a, b = RNG.standard_normal((4, 2)), RNG.standard_normal((4, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        np.testing.assert_allclose(tg.jit(tnp.cross)(a, b), np.cross(a, b))
        np.testing.assert_allclose(tg.jit(tnp.cross)(a, B3), np.cross(a, B3))


def test_average_rejects_zero_weights_and_cov_of_empty():
    with pytest.raises(ZeroDivisionError, match="average"):
        tnp.average(A, axis=1, weights=np.zeros(4))
    assert tnp.cov(np.zeros((0, 3))).shape == (0, 0)


# ---------------------------------------------------------------------------
# Errors name the function and the argument


ERRORS = [
    (lambda: tnp.pad(A, 1, mode="bogus"), NotImplementedError,
     r"^Unimplemented padding mode 'bogus' for np.pad. \(pad: argument 'mode' must be one of "),
    (lambda: tnp.pad(A, -1), ValueError, r"pad: argument 'pad_width' can't contain negative"),
    (lambda: tnp.pad(A, ((1, 2), (1, 2), (1, 2))), ValueError,
     r"pad: argument 'pad_width' of shape \(3, 2\) cannot be broadcast"),
    (lambda: tnp.pad(A, 1, mode="edge", constant_values=1.0), ValueError,
     r"pad: unsupported keyword arguments for mode 'edge': constant_values"),
    (lambda: tnp.pad(A, 1, mode="reflect", reflect_type="weird"), ValueError,
     r"pad: argument 'reflect_type'"),
    (lambda: tnp.pad(np.zeros((0, 2)), 1, mode="wrap"), ValueError,
     r"pad: can't extend empty axis 0 of argument 'array'"),
    (lambda: tnp.sort(A, axis=2), ValueError,
     r"sort: axis 2 is out of bounds for argument 'a' of shape \(3, 4\)"),
    (lambda: tg.jit(lambda x: tnp.sort(x, axis=-3))(A), ValueError,
     r"sort: axis -3 is out of bounds for argument 'a'"),
    (lambda: tnp.argsort(1.0), ValueError, r"argsort: axis -1 is out of bounds for argument 'a'"),
    (lambda: tnp.sort(A, axis=1.5), TypeError,  # type: ignore[arg-type]  # deliberately wrong
     r"sort: argument 'axis' must be an integer"),
    (lambda: tnp.partition(V, 7), ValueError, r"partition: kth=7 is out of bounds"),
    (lambda: tnp.searchsorted(A, 0.0), ValueError, r"searchsorted: argument 'a' must be 1-D"),
    (lambda: tnp.searchsorted(V, 0.0, side="middle"), ValueError,
     r"searchsorted: argument 'side' must be 'left' or 'right'"),
    (lambda: tnp.cumprod(A, axis=3), ValueError, r"cumprod: axis 3 is out of bounds"),
    (lambda: tnp.cumulative_sum(A), ValueError, r"cumulative_sum: argument 'axis' must be given"),
    (lambda: tnp.diff(V, -1), ValueError, r"diff: argument 'n' .* must be non-negative"),
    (lambda: tnp.diff(1.0), ValueError, r"diff: argument 'a' must be at least one-dimensional"),
    (lambda: tnp.roll(A, (1, 2, 3), axis=(0, 1)), ValueError,
     r"roll: arguments 'shift' and 'axis'"),
    (lambda: tg.jit(lambda s: tnp.roll(V, s))(1.5), TypeError,
     r"roll: argument 'shift' must be an integer"),
    (lambda: tnp.meshgrid(V, W, indexing="yx"), ValueError, r"meshgrid: argument 'indexing'"),
    (lambda: tnp.cross(A, A), ValueError, r"cross: incompatible dimensions .* got 4"),
    (lambda: tnp.vander(A), ValueError, r"vander: argument 'x' must be 1-D"),
    (lambda: tnp.matrix_transpose(V), ValueError, r"matrix_transpose: argument 'x'"),
    (lambda: tnp.vecdot(A, B[..., :3]), ValueError, r"vecdot: arguments 'x1' and 'x2'"),
    (lambda: tnp.select([A > 0], [A, A]), ValueError,
     r"select: arguments 'condlist' and 'choicelist' must have the same length"),
    (lambda: tnp.select([A], [A]), TypeError, r"select: condlist\[0\] must be a boolean"),
    (lambda: tnp.select([], []), ValueError, r"select: argument 'condlist' is empty"),
    (lambda: tnp.piecewise(V, [V > 0], [1.0, 2.0, 3.0]), ValueError,
     r"piecewise: .*argument 'funclist'"),
    (lambda: tnp.polyval(1.0, V), ValueError, r"polyval: argument 'p'"),
    (lambda: tnp.convolve(A, V), ValueError, r"convolve: argument 'a' must be 1-D"),
    (lambda: tnp.convolve(V, []), ValueError, r"convolve: argument 'v' cannot be empty"),
    (lambda: tnp.convolve(V, W, mode="circular"), ValueError, r"convolve: argument 'mode'"),
    (lambda: tnp.correlate(V, A), ValueError, r"correlate: argument 'v' must be 1-D"),
    (lambda: tnp.interp(V, XP, FP[:3]), ValueError,   # JAX's words first
     r"^xp and fp must be one-dimensional arrays of equal size \(interp: arguments 'xp' and 'fp'"),
    (lambda: tnp.interp(V, A, A), ValueError,
     r"^xp and fp must be one-dimensional arrays of equal size \(interp: arguments 'xp' and 'fp'"),
    (lambda: tg.jit(lambda x: tnp.interp(x, XP, FP, period=0.0))(V), ValueError,
     r"interp: argument 'period'"),
    (lambda: tnp.quantile(A, 1.5), ValueError, r"quantile: argument 'q' must be in the range"),
    (lambda: tnp.percentile(A, -5), ValueError,
     r"percentile: argument 'q' must be in the range \[0, 100\]"),
    (lambda: tnp.quantile(A, 0.5, method="magic"), ValueError,
     r"quantile: method 'magic' is not supported for argument 'method'"),
    (lambda: tnp.median(A, axis=4), ValueError, r"median: axis 4 is out of bounds"),
    (lambda: tnp.median(np.zeros((0,))), ValueError, r"median: cannot compute .* empty axis"),
    (lambda: tnp.quantile(A, 0.5, weights=A), NotImplementedError, r"quantile: .*'weights'"),
    (lambda: tnp.average(A, weights=V), TypeError, r"average: argument 'axis' must be given"),
    (lambda: tnp.average(A, axis=1, weights=V), ValueError,
     r"average: the shape of argument 'weights'"),
    (lambda: tnp.cov(B), ValueError, r"cov: argument 'm' has more than 2 dimensions"),
    (lambda: tnp.cov(A, fweights=[1, 2]), ValueError, r"cov: argument 'fweights'"),
    (lambda: tnp.bincount(V), TypeError, r"bincount: argument 'x' must contain integers"),
    # (an all-NaN slice gives -1, as JAX's: tests/test_jax_suite_fixes_numpy2.py)
    (lambda: tnp.nanargmax(np.zeros(0)), ValueError, r"attempt to get argmax of an empty"),
    (lambda: tnp.apply_along_axis(tnp.sum, 2, A), ValueError,
     r"apply_along_axis: axis 2 is out of bounds for argument 'arr'"),
    (lambda: tnp.sort([1.0, None]), TypeError, r"sort: argument 'a' of type list is not a valid"),
    (lambda: tnp.unique(V, axis=0, size=3), NotImplementedError, r"unique: 'size'"),
]


@pytest.mark.parametrize("fn,exc,pattern", ERRORS, ids=[p[:40] for _, _, p in ERRORS])
def test_errors_name_the_function_and_argument(fn, exc, pattern):
    with pytest.raises(exc, match=pattern):
        fn()
