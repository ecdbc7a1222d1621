"""Bad static arguments (indices, sizes, strides, dimensions, axes) of ``tangentia.lax``
and of the ``tangentia.numpy`` functions with axes: where JAX 0.10.2 raises, we raise
too, eagerly and under jit, with an error of JAX's type whose message begins with JAX's
wording (issue 24: no silent wrong answers; each case below used to return a number).
The valid neighbours of those cases keep their values, checked against numbers computed
with JAX 0.10.2 (x64).  Where JAX is installed, every case is also run on JAX, live."""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax

X1 = np.arange(5.0)
X2 = np.arange(12.0).reshape(3, 4)
X3 = np.arange(24.0).reshape(2, 3, 4)
ROW = X1.reshape(1, 5)


def _gdn(L, **kw):
    return L.GatherDimensionNumbers(**{**dict(offset_dims=(), collapsed_slice_dims=(0,),
                                              start_index_map=(0,)), **kw})


def _sdn(L, **kw):
    return L.ScatterDimensionNumbers(**{**dict(update_window_dims=(), inserted_window_dims=(0,),
                                               scatter_dims_to_operand_dims=(0,)), **kw})


# (id, operand, f(lax module, numpy module, operand), JAX's exception type, the start of
# JAX's message under jit).  Every case returned a value before (issue 24).
BAD = [
    ("slice_limit_past_end", X1, lambda L, N, x: L.slice(x, (0,), (7,)), TypeError,
     "slice limit_indices must be less than or equal to operand shape, got limit_indices "
     "(7,) for operand shape (5,)."),
    ("slice_negative_start", X1, lambda L, N, x: L.slice(x, (-1,), (3,)), TypeError,
     "slice start_indices must have every element be nonnegative, got (-1,)."),
    ("slice_start_after_limit", X1, lambda L, N, x: L.slice(x, (3,), (2,)), TypeError,
     "slice limit_indices must be greater than or equal to start_indices, got start_indices "
     "(3,) and limit_indices (2,)."),
    ("slice_short_start", X2, lambda L, N, x: L.slice(x, (0,), (2,)), TypeError,
     "slice start_indices must have length equal to the number of dimensions of the operand, "
     "got indices (0,) for operand shape (3, 4)."),
    ("slice_short_limit", X2, lambda L, N, x: L.slice(x, (0, 0), (2,)), TypeError,
     "slice limit_indices must have the same length as start_indices"),
    ("slice_negative_stride", X1, lambda L, N, x: L.slice(x, (0,), (5,), (-1,)), TypeError,
     "slice strides must have every element be nonnegative, got (-1,)."),
    ("slice_short_strides", X2, lambda L, N, x: L.slice(x, (0, 0), (2, 2), (1,)), TypeError,
     "slice strides must have length equal to the number of dimensions of the operand"),
    ("slice_in_dim_limit_past_end", X1, lambda L, N, x: L.slice_in_dim(x, 0, 7), TypeError,
     "slice limit_indices must be less than or equal to operand shape, got limit_indices "
     "(7,) for operand shape (5,)."),
    ("slice_in_dim_start_before_begin", X1, lambda L, N, x: L.slice_in_dim(x, -7, 5),
     TypeError, "slice start_indices must have every element be nonnegative, got (-2,)."),
    ("slice_in_dim_start_after_limit", X1, lambda L, N, x: L.slice_in_dim(x, 3, 1), TypeError,
     "slice limit_indices must be greater than or equal to start_indices"),
    ("slice_in_dim_axis", X2, lambda L, N, x: L.slice_in_dim(x, 0, 1, axis=2), IndexError,
     "tuple index out of range"),
    ("slice_in_dim_negative_axis", X2, lambda L, N, x: L.slice_in_dim(x, 0, 1, axis=-3),
     IndexError, "tuple index out of range"),
    ("index_in_dim_7", X1, lambda L, N, x: L.index_in_dim(x, 7), IndexError,
     "index 7 is out of bounds for axis 0 with size 5"),
    ("index_in_dim_5", X1, lambda L, N, x: L.index_in_dim(x, 5), IndexError,
     "index 5 is out of bounds for axis 0 with size 5"),
    ("index_in_dim_-6", X1, lambda L, N, x: L.index_in_dim(x, -6), IndexError,
     "index -6 is out of bounds for axis 0 with size 5"),
    ("index_in_dim_axis", X2, lambda L, N, x: L.index_in_dim(x, 0, axis=2), IndexError,
     "tuple index out of range"),
    ("index_in_dim_float", X1, lambda L, N, x: L.index_in_dim(x, 1.5), TypeError,
     "'float' object cannot be interpreted as an integer"),
    ("dynamic_slice_float_start", X1, lambda L, N, x: L.dynamic_slice(x, (1.5,), (2,)),
     TypeError, "index arguments to dynamic_slice must be integers of the same type, got: "
     "float64"),
    ("dynamic_slice_mixed_start_dtypes", X2,
     lambda L, N, x: L.dynamic_slice(x, (np.int32(1), np.int64(0)), (2, 2)), TypeError,
     "index arguments to dynamic_slice must be integers of the same type, got: int32, int64"),
    ("dynamic_slice_float_size", X1, lambda L, N, x: L.dynamic_slice(x, (1,), (2.5,)),
     TypeError, "Shapes must be 1D sequences of concrete values of integer type, got (2.5,)."),
    ("dynamic_slice_in_dim_axis", X2, lambda L, N, x: L.dynamic_slice_in_dim(x, 0, 1, axis=2),
     IndexError, "list assignment index out of range"),
    ("dynamic_index_in_dim_axis", X2, lambda L, N, x: L.dynamic_index_in_dim(x, 0, axis=-3),
     IndexError, "list assignment index out of range"),
    ("dynamic_update_slice_dtypes", X1,
     lambda L, N, x: L.dynamic_update_slice(x, N.ones(2, dtype=N.int32), (0,)), TypeError,
     "lax.dynamic_update_slice requires arguments to have the same dtypes, got float64, "
     "int32."),
    ("dynamic_update_slice_float_start", X1,
     lambda L, N, x: L.dynamic_update_slice(x, N.ones(2), (1.5,)), TypeError,
     "index arguments to dynamic_update_slice must be integers of the same type, got"),
    ("dynamic_update_slice_in_dim_axis", X2,
     lambda L, N, x: L.dynamic_update_slice_in_dim(x, N.ones((3, 1)), 0, axis=2), IndexError,
     "list assignment index out of range"),
    ("dynamic_update_index_in_dim_axis", X2,
     lambda L, N, x: L.dynamic_update_index_in_dim(x, N.ones(3), 0, axis=2), ValueError,
     "axis 2 is out of bounds for array of dimension 2"),
    ("index_take_axis", X2, lambda L, N, x: L.index_take(x, (N.array([0, 1]),), (2,)),
     IndexError, "tuple index out of range"),
    ("index_take_negative_axis", X2, lambda L, N, x: L.index_take(x, (N.array([0, 1]),), (-1,)),
     TypeError, "Invalid start_index_map; domain is [0, 2), got: 0->-1."),
    ("gather_negative_slice_size", X1,
     lambda L, N, x: L.gather(x, N.array([[1]]), _gdn(L, offset_dims=(1,),
                                                      collapsed_slice_dims=()), (-1,)),
     TypeError, "Slice size at index 0 in gather op is out of range, must be within [0, 5 + 1), "
     "got -1."),
    ("gather_start_index_map_range", X1,
     lambda L, N, x: L.gather(x, N.array([[1]]), _gdn(L, start_index_map=(4,)), (1,)),
     TypeError, "Invalid start_index_map; domain is [0, 1), got: 0->4."),
    ("gather_start_index_map_negative", X1,
     lambda L, N, x: L.gather(x, N.array([[1]]), _gdn(L, start_index_map=(-1,)), (1,)),
     TypeError, "Invalid start_index_map; domain is [0, 1), got: 0->-1."),
    ("gather_start_index_map_repeats", X2,
     lambda L, N, x: L.gather(x, N.array([[1, 1]]), _gdn(L, collapsed_slice_dims=(0, 1),
                                                         start_index_map=(0, 0)), (1, 1)),
     TypeError, "start_index_map in gather op must not repeat; got: (0, 0)."),
    ("gather_collapsed_repeats", X2,
     lambda L, N, x: L.gather(x, N.array([[1]]), _gdn(L, offset_dims=(1,),
                                                      collapsed_slice_dims=(0, 0)), (1, 4)),
     TypeError, "collapsed_slice_dims in gather op must not repeat; got: (0, 0)."),
    ("gather_collapsed_unsorted", X3,
     lambda L, N, x: L.gather(x, N.array([[1, 1]]), _gdn(L, offset_dims=(1,),
                                                         collapsed_slice_dims=(1, 0),
                                                         start_index_map=(0, 1)), (1, 1, 4)),
     TypeError, "collapsed_slice_dims in gather op must be sorted; got (1, 0)"),
    ("gather_offset_dims_unsorted", X3,
     lambda L, N, x: L.gather(x, N.array([[1]]), _gdn(L, offset_dims=(2, 1)), (1, 3, 4)),
     TypeError, "offset_dims in gather op must be sorted; got (2, 1)"),
    ("gather_offset_dims_repeat", X3,
     lambda L, N, x: L.gather(x, N.array([[1]]), _gdn(L, offset_dims=(1, 1)), (1, 3, 4)),
     TypeError, "offset_dims in gather op must not repeat; got: (1, 1)."),
    ("gather_float_indices", X1, lambda L, N, x: L.gather(x, N.array([[1.0]]), _gdn(L), (1,)),
     ValueError, "indices must have an integer type"),
    ("scatter_window_past_end", X1,
     lambda L, N, x: L.scatter_add(x, N.array([[1]]), N.ones((1, 7)), _sdn(
         L, update_window_dims=(1,), inserted_window_dims=())), TypeError,
     "Bounds of the window dimensions of updates must not exceed the bounds of the "
     "corresponding dimensions of operand. For dimension 1, updates bound is 7, operand "
     "bound is 5."),
    ("scatter_dtypes", X1,
     lambda L, N, x: L.scatter_add(x, N.array([[1], [3]]), N.ones(2, dtype=N.int32), _sdn(L)),
     TypeError, "lax.scatter requires arguments to have the same dtypes, got float64, int32."),
    ("scatter_float_indices", X1,
     lambda L, N, x: L.scatter(x, N.array([[1.0], [3.0]]), N.ones(2), _sdn(L)), ValueError,
     "indices must have an integer type"),
    ("scatter_dims_repeat", X2,
     lambda L, N, x: L.scatter_mul(x, N.array([[1, 1]]), N.ones(1), _sdn(
         L, inserted_window_dims=(0, 1), scatter_dims_to_operand_dims=(0, 0))), TypeError,
     "scatter_dims_to_operand_dims in scatter op must not repeat; got: (0, 0)."),
    ("pad_float_config", X1, lambda L, N, x: L.pad(x, 0.0, [(1.5, 1, 0)]), TypeError,
     "Shapes must be 1D sequences of concrete values of integer type, got"),
    ("pad_dtypes", X1, lambda L, N, x: L.pad(x, N.int32(0), [(1, 1, 0)]), TypeError,
     "pad operand and padding_value must be same dtype: got float64 and int32."),
    ("rev_negative", X2, lambda L, N, x: L.rev(x, (-1,)), TypeError,
     "rev dimensions must have every element be nonnegative, got (-1,)."),
    ("rev_repeat", X2, lambda L, N, x: L.rev(x, (0, 0)), TypeError,
     "rev dimensions must be unique, got (0, 0)."),
    ("rev_float", X2, lambda L, N, x: L.rev(x, (0.0,)), TypeError,
     "rev dimensions must have every element be an integer type, got (<class 'float'>,)."),
    ("squeeze_axis", ROW, lambda L, N, x: L.squeeze(x, (2,)), ValueError,
     "axis 2 is out of bounds for array of dimension 2"),
    ("squeeze_repeat", ROW, lambda L, N, x: L.squeeze(x, (0, -2)), ValueError,
     "dimensions are not unique: (0, 0)"),
    ("expand_dims_axis", X1, lambda L, N, x: L.expand_dims(x, (2,)), ValueError,
     "axis 2 is out of bounds for array of dimension 2"),
    ("expand_dims_negative_axis", X1, lambda L, N, x: L.expand_dims(x, (-3,)), ValueError,
     "axis -3 is out of bounds for array of dimension 2"),
    ("expand_dims_repeat", X1, lambda L, N, x: L.expand_dims(x, (0, 0)), ValueError,
     "repeated axis in lax.expand_dims: (0, 0)"),
    ("broadcast_float_size", X1, lambda L, N, x: L.broadcast(x, (2.0,)), TypeError,
     "broadcast_in_dim shape must have every element be an integer type"),
    ("reshape_minus_one", X2, lambda L, N, x: L.reshape(x, (-1, 2)), TypeError,
     "reshape new_sizes must all be positive, got (-1, 2)."),
    ("reshape_float", X2, lambda L, N, x: L.reshape(x, (12.0,)), TypeError,
     "Shapes must be 1D sequences of concrete values of integer type, got (12.0,)."),
    ("transpose_negative", X2, lambda L, N, x: L.transpose(x, (-1, 0)), TypeError,
     "transpose permutation isn't a permutation of operand dimensions, got permutation "
     "(-1, 0) for operand shape (3, 4)."),
    ("transpose_short", X2, lambda L, N, x: L.transpose(x, (0,)), TypeError,
     "transpose permutation isn't a permutation of operand dimensions, got permutation "
     "(0,) for operand shape (3, 4)."),
    ("transpose_float", X2, lambda L, N, x: L.transpose(x, (1.0, 0.0)), TypeError,
     "'float' object cannot be interpreted as an integer"),
    ("concatenate_negative", X2, lambda L, N, x: L.concatenate([x, x], -1), TypeError,
     "concatenate dimension out of bounds: dimension -1 for shapes (3, 4), (3, 4)."),
    ("concatenate_dtypes", X2, lambda L, N, x: L.concatenate([x, x.astype(N.int32)], 0),
     TypeError, "lax.concatenate requires arguments to have the same dtypes, got float64, "
     "int32. (Tip: jnp.concatenate is a similar function that does automatic type promotion "
     "on inputs)."),
    ("reduce_sum_negative", X2, lambda L, N, x: L.reduce_sum(x, (-1,)), ValueError,
     "reduction axes (-1,) contains out-of-bounds indices for float64[3,4]."),
    ("reduce_max_negative", X2, lambda L, N, x: L.reduce_max(x, (-1,)), ValueError,
     "reduction axes (-1,) contains out-of-bounds indices for float64[3,4]."),
    ("reduce_min_negative", X2, lambda L, N, x: L.reduce_min(x, (-1,)), ValueError,
     "reduction axes (-1,) contains out-of-bounds indices for float64[3,4]."),
    ("reduce_prod_negative", X2, lambda L, N, x: L.reduce_prod(x, (-1,)), ValueError,
     "reduction axes (-1,) contains out-of-bounds indices for float64[3,4]."),
    ("reduce_negative", X2, lambda L, N, x: L.reduce(x, 0.0, L.add, (-1,)), ValueError,
     "reduction axes (-1,) contains out-of-bounds indices for float64[3,4]."),
    ("reduce_past_end", X2, lambda L, N, x: L.reduce(x, 0.0, L.add, (2,)), ValueError,
     "reduction axes (2,) contains out-of-bounds indices for float64[3,4]."),
    # JAX's message here is XLA's verifier's ("Cannot lower jaxpr with verifier errors")
    ("reduce_xor_negative", X2.astype(np.int64), lambda L, N, x: L.reduce_xor(x, (-1,)),
     ValueError, None),
    ("reduce_or_past_end", X2.astype(np.int64), lambda L, N, x: L.reduce_or(x, (2,)),
     IndexError, None),
    ("argmax_negative", X2, lambda L, N, x: L.argmax(x, -1, N.int32), ValueError,
     "Invalid axis -1 for operand shape (3, 4)"),
    ("argmin_negative", X2, lambda L, N, x: L.argmin(x, -1, N.int32), ValueError,
     "Invalid axis -1 for operand shape (3, 4)"),
    ("argmax_float_index_dtype", X2, lambda L, N, x: L.argmax(x, 0, N.float32), TypeError,
     "index_dtype must be an integer type, but got float32"),
    ("argmax_float_axis", X2, lambda L, N, x: L.argmax(x, 0.0, N.int32), TypeError, None),
    ("sort_tuple_axis", X2, lambda L, N, x: L.sort((x, x), dimension=2), ValueError,
     "axis 2 is out of bounds for array of dimension 2"),
    ("sort_num_keys_single", X2, lambda L, N, x: L.sort(x, num_keys=2), ValueError,
     "num_keys=2 must equal 1 for a single operand."),
    ("cumsum_negative", X2, lambda L, N, x: L.cumsum(x, axis=-1), ValueError,
     "XLA operations do not allow negative axes"),
    ("cumprod_past_end", X2, lambda L, N, x: L.cumprod(x, axis=2), ValueError,
     "axis 2 is out of bounds for array of shape (3, 4)"),
    ("cumprod_negative", X2, lambda L, N, x: L.cumprod(x, axis=-1), ValueError,
     "XLA operations do not allow negative axes"),
    ("cummax_past_end", X2, lambda L, N, x: L.cummax(x, axis=2), ValueError,
     "axis 2 is out of bounds for array of shape (3, 4)"),
    ("cummin_negative", X2, lambda L, N, x: L.cummin(x, axis=-3), ValueError,
     "XLA operations do not allow negative axes"),
    ("cumlogsumexp_past_end", X2, lambda L, N, x: L.cumlogsumexp(x, axis=2), ValueError,
     "axis 2 is out of bounds for array of shape (3, 4)"),
    ("cumlogsumexp_negative", X2, lambda L, N, x: L.cumlogsumexp(x, axis=-1), ValueError,
     "XLA operations do not allow negative axes"),
    ("iota_negative", X1, lambda L, N, x: L.iota(N.int32, -1), TypeError,
     "iota shape must have every element be nonnegative, got (-1,)."),
    ("iota_float", X1, lambda L, N, x: L.iota(N.int32, 2.5), TypeError,
     "Shapes must be 1D sequences of concrete values of integer type, got (2.5,)."),
    ("tile_short_reps", X2, lambda L, N, x: L.tile(x, (2,)), TypeError,
     "reps length must be equal to the ndim of x, got len(reps)=1 and x.ndim=2."),
    ("tile_long_reps", X1, lambda L, N, x: L.tile(x, (2, 2)), TypeError,
     "reps length must be equal to the ndim of x, got len(reps)=2 and x.ndim=1."),
    ("stack_axis", X1, lambda L, N, x: L.stack([x, x], 2), ValueError,
     "axis 2 is out of bounds for array of dimension 2"),
    ("full_float_shape", X1, lambda L, N, x: L.full((2.0,), 1.0), TypeError,
     "Shapes must be 1D sequences of concrete values of integer type, got (2.0,)."),
    ("broadcast_in_dim_float_shape", X1, lambda L, N, x: L.broadcast_in_dim(x, (5.0,), (0,)),
     TypeError, "broadcast_in_dim shape must have every element be an integer type, got "
     "(<class 'float'>,)."),
    ("broadcasted_iota_float_shape", X1,
     lambda L, N, x: L.broadcasted_iota(N.int32, (2.0, 3), 1), TypeError,
     "Shapes must be 1D sequences of concrete values of integer type, got (2.0, 3)."),
    ("sort_float_dimension", X2, lambda L, N, x: L.sort(x, dimension=1.0), TypeError,
     "'float' object cannot be interpreted as an integer"),
    ("reduce_precision_float_bits", X1, lambda L, N, x: L.reduce_precision(x, 5.0, 10),
     TypeError, "'float' object cannot be interpreted as an integer"),
    ("gather_float_slice_size", X1,
     lambda L, N, x: L.gather(x, N.array([[1], [3]]), _gdn(L), (1.5,)), TypeError,
     "Shapes must be 1D sequences of concrete values of integer type, got (1.5,)."),
    # tangentia.numpy
    ("take_along_axis_float_axis", X2,
     lambda L, N, x: N.take_along_axis(x, N.zeros((3, 1), int), 1.0), TypeError,
     "'float' object cannot be interpreted as an integer"),
    ("rollaxis_axis", X2, lambda L, N, x: N.rollaxis(x, 2), ValueError,
     "axis 2 is out of bounds for array of dimension 2"),
    ("take_along_axis_axis", X2, lambda L, N, x: N.take_along_axis(x, N.zeros((3, 1), int), 2),
     ValueError, "axis 2 is out of bounds for array of dimension 2"),
    ("take_along_axis_rank", X2, lambda L, N, x: N.take_along_axis(x, N.zeros((3,), int), 1),
     ValueError, "indices and arr must have the same number of dimensions; 1 vs. 2"),
    ("take_along_axis_broadcast", X2,
     lambda L, N, x: N.take_along_axis(x, N.zeros((2, 1), int), 1), ValueError,
     "Incompatible shapes for broadcasting: shapes=[(2, 1), (3, 1)]"),
    ("swapaxes_axis", X2, lambda L, N, x: N.swapaxes(x, 0, 2), IndexError,
     "index 2 is out of bounds for axis 0 with size 2"),
    ("swapaxes_negative_axis", X2, lambda L, N, x: N.swapaxes(x, 0, -3), IndexError,
     "index -3 is out of bounds for axis 0 with size 2"),
    ("np_expand_dims_axis", X1, lambda L, N, x: N.expand_dims(x, 3), ValueError,
     "axis 3 is out of bounds for array of dimension 2"),
    ("np_expand_dims_negative_axis", X1, lambda L, N, x: N.expand_dims(x, -3), ValueError,
     "axis -3 is out of bounds for array of dimension 2"),
    ("np_expand_dims_repeat", X1, lambda L, N, x: N.expand_dims(x, (0, 0)), ValueError,
     "repeated axis in lax.expand_dims: (0, 0)"),
    ("np_squeeze_repeat", ROW, lambda L, N, x: N.squeeze(x, (0, -2)), ValueError,
     "dimensions are not unique: (0, 0)"),
    ("flip_repeat", X2, lambda L, N, x: N.flip(x, (1, -1)), TypeError,
     "rev dimensions must be unique, got (1, 1)."),
    ("np_concatenate_axis", X2, lambda L, N, x: N.concatenate([x, x], 2), ValueError,
     "axis 2 is out of bounds for array of dimension 2"),
    ("np_concatenate_negative_axis", X2, lambda L, N, x: N.concatenate([x, x], -3), ValueError,
     "axis -3 is out of bounds for array of dimension 2"),
    ("np_concatenate_float_axis", X2, lambda L, N, x: N.concatenate([x, x], 1.0), TypeError,
     "'float' object cannot be interpreted as an integer"),
    ("np_stack_axis", X2, lambda L, N, x: N.stack([x, x], 3), ValueError,
     "axis 3 is out of bounds for array of dimension 3"),
    ("np_stack_negative_axis", X2, lambda L, N, x: N.stack([x, x], -4), ValueError,
     "axis -4 is out of bounds for array of dimension 3"),
    # JAX's message for a negative count of sections is about sums of sizes
    ("np_split_negative_sections", X1, lambda L, N, x: N.split(x, -1), ValueError, None),
    ("np_split_past_end", X1, lambda L, N, x: N.split(x, [2, 9]), ValueError,
     "Sizes passed to split must be nonnegative, got ["),
    ("np_split_negative_index", X1, lambda L, N, x: N.split(x, [-2]), ValueError,
     "Sizes passed to split must be nonnegative, got ["),
    ("np_split_decreasing", X1, lambda L, N, x: N.split(x, [3, 1]), ValueError,
     "Sizes passed to split must be nonnegative, got ["),
    ("np_array_split_past_end", X1, lambda L, N, x: N.array_split(x, [2, 9]), ValueError,
     "Sizes passed to split must be nonnegative, got ["),
    ("np_repeat_axis", X2, lambda L, N, x: N.repeat(x, 2, axis=2), ValueError,
     "axis 2 is out of bounds for array of dimension 2"),
]


def _ours(fn, x, jit):
    f = lambda x: fn(lax, tnp, x)  # noqa: E731
    return (tg.jit(f) if jit else f)(x)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name, x, fn, exc, prefix", BAD, ids=[c[0] for c in BAD])
def test_bad_static_arguments_raise_with_jax_wording(name, x, fn, exc, prefix, jit):
    with pytest.raises(exc) as info:
        _ours(fn, x, jit)
    if prefix is not None:
        assert str(info.value).startswith(prefix), str(info.value)
    assert "(tangentia: " in str(info.value), str(info.value)  # then our detail


@pytest.mark.parametrize("name, x, fn, exc, prefix", BAD, ids=[c[0] for c in BAD])
def test_jax_raises_the_same(name, x, fn, exc, prefix):
    jax = pytest.importorskip("jax", reason="JAX is the reference these errors mirror")
    jax.config.update("jax_enable_x64", True)
    # JAX's caches key parameters by equality, and (5.0,) == (5,): a call with an int shape
    # made earlier in this process would answer for the float one without checking it
    jax.clear_caches()
    with pytest.raises(exc) as info:
        jax.jit(lambda x: fn(jax.lax, jax.numpy, x))(x)
    if prefix is not None:
        assert str(info.value).startswith(prefix), str(info.value)


# The valid neighbours of the cases above, with JAX 0.10.2's values (x64).  The
# negative expand_dims dimensions, the negative collapse bounds and the out-of-range
# select_n case gave other numbers before (issue 24).
GOOD = [
    ("slice_in_dim_negative_bounds", lambda L, N, x: L.slice_in_dim(x, -4, -1, 2), X1,
     [1.0, 3.0]),
    ("slice_in_dim_negative_axis", lambda L, N, x: L.slice_in_dim(x, 1, 3, axis=-1), X2,
     [[1.0, 2.0], [5.0, 6.0], [9.0, 10.0]]),
    ("slice_strided", lambda L, N, x: L.slice(x, (0, 1), (3, 4), (2, 2)), X2,
     [[1.0, 3.0], [9.0, 11.0]]),
    ("index_in_dim_-5", lambda L, N, x: L.index_in_dim(x, -5), X1, [0.0]),
    ("index_in_dim_axis_-1", lambda L, N, x: L.index_in_dim(x, -1, axis=-1, keepdims=False),
     X2, [3.0, 7.0, 11.0]),
    ("dynamic_index_in_dim_clamped",
     lambda L, N, x: L.dynamic_index_in_dim(x, 7, axis=1, keepdims=False), X2, [3.0, 7.0, 11.0]),
    ("dynamic_update_index_in_dim",
     lambda L, N, x: L.dynamic_update_index_in_dim(x, -N.ones(4), 1, 0), X2,
     [[0.0, 1.0, 2.0, 3.0], [-1.0, -1.0, -1.0, -1.0], [8.0, 9.0, 10.0, 11.0]]),
    ("squeeze_negative", lambda L, N, x: L.squeeze(x.reshape(1, 5, 1), (-1, 0)), X1,
     [0.0, 1.0, 2.0, 3.0, 4.0]),
    ("expand_dims_two_negative", lambda L, N, x: L.expand_dims(x, (-1, -2)), X1,
     [[[0.0]], [[1.0]], [[2.0]], [[3.0]], [[4.0]]]),
    ("expand_dims_mixed", lambda L, N, x: L.expand_dims(x, (0, -1)), X1,
     [[[0.0], [1.0], [2.0], [3.0], [4.0]]]),
    ("collapse_negative_start", lambda L, N, x: L.collapse(x, -2), X3,
     np.arange(24.0).reshape(2, 12)),
    ("collapse_negative_stop", lambda L, N, x: L.collapse(x, 0, -1), X3,
     np.arange(24.0).reshape(6, 4)),
    ("select_n_out_of_range", lambda L, N, x: L.select_n(N.array([0, 1, 2, 3, -1]), x, -x,
                                                         10 * x), X1,
     [0.0, -1.0, 20.0, 30.0, 4.0]),
    ("sort_tuple_negative_dimension",
     lambda L, N, x: L.sort((-x, x), dimension=-2, num_keys=1)[1], X2,
     [[8.0, 9.0, 10.0, 11.0], [4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0]]),
    ("cumsum_reverse", lambda L, N, x: L.cumsum(x, 1, reverse=True), X2,
     [[6.0, 6.0, 5.0, 3.0], [22.0, 18.0, 13.0, 7.0], [38.0, 30.0, 21.0, 11.0]]),
    ("cummax_axis0", lambda L, N, x: L.cummax(x[::-1], 0), X2, [[8.0, 9.0, 10.0, 11.0]] * 3),
    ("reduce_max_two_axes", lambda L, N, x: L.reduce_max(x, (0, 2)), X3, [15.0, 19.0, 23.0]),
    ("argmin_uint8", lambda L, N, x: L.argmin(-x, 1, N.uint8), X2, [3, 3, 3]),
    ("top_k_axis0", lambda L, N, x: L.top_k(x, 2, axis=0)[0], X2,
     [[8.0, 9.0, 10.0, 11.0], [4.0, 5.0, 6.0, 7.0]]),
    ("reduce_generic", lambda L, N, x: L.reduce(x, 0.0, L.add, (1,)), X2, [6.0, 22.0, 38.0]),
    ("index_take", lambda L, N, x: L.index_take(x, (N.array([0, -1]), N.array([1, 5])), (0, 1)),
     X2, [1.0, 9.0]),
    ("np_take_along_axis_broadcast", lambda L, N, x: N.take_along_axis(x, N.array([[3, 0]]), 1),
     X2, [[3.0, 0.0], [7.0, 4.0], [11.0, 8.0]]),
    ("np_split_points",
     lambda L, N, x: N.concatenate([a.sum(keepdims=True) for a in N.split(x, [1, 1, 4])]), X1,
     [0.0, 0.0, 6.0, 4.0]),
    ("np_swapaxes_negative", lambda L, N, x: N.swapaxes(x, -1, 0)[:, 0, 0], X3,
     [0.0, 1.0, 2.0, 3.0]),
    ("np_flip_negative", lambda L, N, x: N.flip(x, (-1,))[0], X2, [3.0, 2.0, 1.0, 0.0]),
    ("np_squeeze_negative", lambda L, N, x: N.squeeze(x.reshape(1, 5, 1), -1), X1,
     [[0.0, 1.0, 2.0, 3.0, 4.0]]),
    ("np_expand_dims_negative", lambda L, N, x: N.expand_dims(x, (-1, 0)), X1,
     np.arange(5.0).reshape(1, 5, 1)),
    ("np_stack_negative", lambda L, N, x: N.stack([x, -x], -1)[1], X1, [1.0, -1.0]),
    ("np_repeat_negative_axis", lambda L, N, x: N.repeat(x[:2, :2], 2, axis=-1), X2,
     [[0.0, 0.0, 1.0, 1.0], [4.0, 4.0, 5.0, 5.0]]),
]


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name, fn, x, want", GOOD, ids=[c[0] for c in GOOD])
def test_valid_neighbours_keep_jax_values(name, fn, x, want, jit):
    got = _ours(fn, x, jit)
    want = np.asarray(want)
    assert np.shape(got) == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name, fn, x, want", GOOD, ids=[c[0] for c in GOOD])
def test_valid_neighbours_agree_with_jax_live(name, fn, x, want):
    jax = pytest.importorskip("jax", reason="JAX is the reference these values come from")
    jax.config.update("jax_enable_x64", True)
    np.testing.assert_array_equal(np.asarray(fn(jax.lax, jax.numpy, x)), np.asarray(want))


def test_checks_do_not_reject_traced_starts_or_python_int_starts():
    # a traced int64 start next to a Python int (weakly typed) is one integer type
    f = tg.jit(lambda x, i: lax.dynamic_slice(x, (i, 1), (2, 3)))
    np.testing.assert_array_equal(f(X2, np.int64(5)), X2[1:3, 1:4])
    g = tg.vmap(lambda i: lax.dynamic_index_in_dim(X1, i, keepdims=False))
    np.testing.assert_array_equal(g(np.array([4, 0, 9, -1])), [4.0, 0.0, 4.0, 4.0])
    # gradients still flow through the checked functions
    dx = tg.grad(lambda x: tnp.sum(lax.slice_in_dim(x, -3, None) ** 2))(X1)
    np.testing.assert_array_equal(dx, [0.0, 0.0, 4.0, 6.0, 8.0])


def test_bad_arguments_raise_under_vmap_and_grad_too():
    # the checks run when the function is traced, whatever the transformation
    with pytest.raises(IndexError, match="^index 7 is out of bounds for axis 0 with size 5"):
        tg.vmap(lambda r: lax.index_in_dim(r, 7))(np.ones((3, 5)))
    with pytest.raises(TypeError, match="^slice limit_indices must be less than or equal"):
        tg.grad(lambda x: tnp.sum(lax.slice_in_dim(x, 0, 7)))(X1)
    with pytest.raises(ValueError, match="^Sizes passed to split must be nonnegative"):
        tg.vmap(lambda r: tnp.split(r, [3, 1])[0])(np.ones((2, 5)))
