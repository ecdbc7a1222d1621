"""``tangentia.example_libraries.stax``: the small neural-network library of
``jax.example_libraries.stax``, with its layers, combinators, initializers and
random streams (the same key gives the same parameters as JAX's).

A layer is an ``(init_fun, apply_fun)`` pair: ``init_fun(rng, input_shape)``
returns ``(output_shape, params)`` and ``apply_fun(params, inputs, **kwargs)``
the outputs (``rng=key`` for the layers that need randomness, ``Dropout``).
Layers compose with ``serial``, ``parallel`` (with ``FanOut``,
``FanInSum``, ``FanInConcat``) and ``shape_dependent``.
"""
from __future__ import annotations

import functools
import math

from .. import lax, random
from .. import numpy as tnp
from ..nn import (elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax, softplus,
                  standardize)
from ..nn.initializers import glorot_normal, normal, ones, zeros

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["Dense", "GeneralConv", "Conv", "GeneralConvTranspose", "Conv1DTranspose",
           "ConvTranspose", "BatchNorm", "elementwise", "Tanh", "Relu", "Exp", "LogSoftmax",
           "Softmax", "Softplus", "Sigmoid", "Elu", "LeakyRelu", "Selu", "Gelu", "MaxPool",
           "SumPool", "AvgPool", "Flatten", "Identity", "FanOut", "FanInSum", "FanInConcat",
           "Dropout", "serial", "parallel", "shape_dependent",
           # re-exported, as JAX's stax does
           "relu", "log_softmax", "logsoftmax", "softmax", "softplus", "sigmoid", "elu",
           "leaky_relu", "selu", "gelu", "standardize", "glorot", "glorot_normal", "randn",
           "normal", "ones", "zeros"]

glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


def _no_params(rng, input_shape):
    return input_shape, ()


def Dense(out_dim: int, W_init: Any = glorot_normal(),  # noqa: N802 - JAX's name
          b_init: Any = normal()) -> tuple[Any, Any]:
    """A dense (fully connected) layer: ``inputs @ W + b``.

    Args:
      out_dim: the number of output features.
      W_init: the initializer of ``W`` (shape ``(in_dim, out_dim)``).
      b_init: the initializer of ``b`` (shape ``(out_dim,)``).

    Returns:
      An ``(init_fun, apply_fun)`` pair.

    Examples:
      >>> import tangentia.numpy as tnp
      >>> from tangentia import random
      >>> from tangentia.example_libraries import stax
      >>> init, apply = stax.serial(stax.Dense(4), stax.Relu, stax.Dense(2))
      >>> out_shape, params = init(random.PRNGKey(0), (-1, 3))
      >>> out_shape, apply(params, tnp.ones((5, 3))).shape
      ((-1, 2), (5, 2))
    """
    def init_fun(rng, input_shape):
        k1, k2 = random.split(rng)
        params = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))
        return tuple(input_shape[:-1]) + (out_dim,), params

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return tnp.dot(inputs, W) + b

    return init_fun, apply_fun


def _conv_layer(dimension_numbers, out_chan, filter_shape, W_init, b_init, shape_rule,
                apply_conv):
    """The ``(init_fun, apply_fun)`` of a convolution: ``shape_rule(input_shape,
    kernel_shape)`` is the output shape, ``apply_conv(inputs, W)`` the convolution."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng, input_shape):
        spatial = iter(filter_shape)
        kernel_shape = [out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I"
                        else next(spatial) for c in rhs_spec]
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = random.split(rng)
        return shape_rule(input_shape, kernel_shape), (W_init(k1, kernel_shape),
                                                       b_init(k2, bias_shape))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return apply_conv(inputs, W) + b

    return init_fun, apply_fun


def GeneralConv(dimension_numbers: Any, out_chan: int, filter_shape: Any,  # noqa: N802
                strides: Any = None, padding: Any = "VALID", W_init: Any = None,
                b_init: Any = normal(1e-6)) -> tuple[Any, Any]:
    """A convolution layer of any dimension and layout.

    Args:
      dimension_numbers: ``(lhs_spec, rhs_spec, out_spec)`` strings, as
        ``("NHWC", "HWIO", "NHWC")`` (as ``lax.conv_general_dilated``'s).
      out_chan: the number of output channels.
      filter_shape: the spatial shape of the kernel.
      strides: the window strides (default all 1).
      padding: ``"VALID"``, ``"SAME"``, ``"SAME_LOWER"`` or ``(low, high)`` pairs.
      W_init: the kernel's initializer (default Glorot normal over the kernel's
        I and O axes).
      b_init: the bias' initializer.

    Returns:
      An ``(init_fun, apply_fun)`` pair.
    """
    one = (1,) * len(filter_shape)
    strides = strides or one
    return _conv_layer(
        dimension_numbers, out_chan, filter_shape, W_init, b_init,
        lambda shape, kernel: lax.conv_general_shape_tuple(shape, kernel, strides, padding,
                                                           dimension_numbers),
        lambda x, W: lax.conv_general_dilated(x, W, strides, padding, one, one,
                                              dimension_numbers=dimension_numbers))


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
Conv.__doc__ = "A 2-D convolution layer on NHWC inputs with an HWIO kernel (``GeneralConv``)."


def GeneralConvTranspose(dimension_numbers: Any, out_chan: int, filter_shape: Any,  # noqa: N802
                         strides: Any = None, padding: Any = "VALID", W_init: Any = None,
                         b_init: Any = normal(1e-6)) -> tuple[Any, Any]:
    """A transposed-convolution layer of any dimension and layout
    (``lax.conv_transpose``).

    Args:
      dimension_numbers: ``(lhs_spec, rhs_spec, out_spec)`` strings.
      out_chan: the number of output channels.
      filter_shape: the spatial shape of the kernel.
      strides: the strides (default all 1).
      padding: ``"VALID"``, ``"SAME"`` or ``(low, high)`` pairs.
      W_init: the kernel's initializer (default Glorot normal).
      b_init: the bias' initializer.

    Returns:
      An ``(init_fun, apply_fun)`` pair.
    """
    strides = strides or (1,) * len(filter_shape)
    return _conv_layer(
        dimension_numbers, out_chan, filter_shape, W_init, b_init,
        lambda shape, kernel: lax.conv_transpose_shape_tuple(shape, kernel, strides, padding,
                                                             dimension_numbers),
        lambda x, W: lax.conv_transpose(x, W, strides, padding,
                                        dimension_numbers=dimension_numbers))


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
Conv1DTranspose.__doc__ = "A 1-D transposed convolution on NHC inputs (``GeneralConvTranspose``)."
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))
ConvTranspose.__doc__ = "A 2-D transposed convolution on NHWC inputs (``GeneralConvTranspose``)."


def BatchNorm(axis: Any = (0, 1, 2), epsilon: float = 1e-5, center: bool = True,  # noqa: N802
              scale: bool = True, beta_init: Any = zeros, gamma_init: Any = ones) -> tuple[Any, Any]:
    """Batch normalization over ``axis`` (statistics of the batch itself; no
    running averages), then ``gamma * z + beta``.

    Args:
      axis: the axes normalized over (an int or a tuple).
      epsilon: added to the variance.
      center: whether to add a learned ``beta``.
      scale: whether to multiply by a learned ``gamma``.
      beta_init: ``beta``'s initializer.
      gamma_init: ``gamma``'s initializer.

    Returns:
      An ``(init_fun, apply_fun)`` pair.
    """
    axis = (axis,) if tnp.isscalar(axis) else axis

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = random.split(rng)
        return input_shape, (beta_init(k1, shape) if center else (),
                             gamma_init(k2, shape) if scale else ())

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        ed = tuple(None if i in axis else slice(None) for i in range(tnp.ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        if scale:
            z = gamma[ed] * z
        return z + beta[ed] if center else z

    return init_fun, apply_fun


def elementwise(fun: Any, **fun_kwargs: Any) -> tuple[Any, Any]:
    """A layer applying ``fun(inputs, **fun_kwargs)`` (no parameters).

    Args:
      fun: the function.
      **fun_kwargs: its keyword arguments.

    Returns:
      An ``(init_fun, apply_fun)`` pair.
    """
    return _no_params, lambda params, inputs, **kwargs: fun(inputs, **fun_kwargs)


Tanh = elementwise(tnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(tnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _non_spatial_axes(spec, ndim):
    return (0, ndim - 1) if spec is None else (spec.index("N"), spec.index("C"))


def _pooling_layer(name: str, reducer: Any, init_val: Any,
                   normalize: bool = False) -> Callable[..., tuple[Any, Any]]:
    def pooling(window_shape: tuple[int, ...], strides: tuple[int, ...] | None = None,
                padding: Any = "VALID", spec: str | None = None) -> tuple[Any, Any]:
        strides = strides or (1,) * len(window_shape)
        spatial_window, spatial_strides = window_shape, strides
        for i in sorted(_non_spatial_axes(spec, len(window_shape) + 2)):
            window_shape = window_shape[:i] + (1,) + window_shape[i:]
            strides = strides[:i] + (1,) + strides[i:]

        def init_fun(rng, input_shape):
            pads = lax.padtype_to_pads(input_shape, window_shape, strides, padding)
            ones_ = (1,) * len(window_shape)
            return lax.reduce_window_shape_tuple(input_shape, window_shape, strides, pads,
                                                 ones_, ones_), ()

        def apply_fun(params, inputs, **kwargs):
            out = lax.reduce_window(inputs, init_val, reducer, window_shape, strides, padding)
            if not normalize:
                return out
            non_spatial = _non_spatial_axes(spec, inputs.ndim)
            spatial_shape = tuple(n for i, n in enumerate(inputs.shape) if i not in non_spatial)
            sizes = lax.reduce_window(tnp.ones(spatial_shape, inputs.dtype), 0.0, lax.add,
                                      spatial_window, spatial_strides, padding)
            for i in sorted(non_spatial):
                sizes = tnp.expand_dims(sizes, i)
            return out / sizes

        return init_fun, apply_fun

    pooling.__name__ = pooling.__qualname__ = name
    pooling.__doc__ = f"""A {name[:-4].lower()}-pooling layer.

    Args:
      window_shape: the spatial shape of the window.
      strides: the spatial strides (default all 1).
      padding: ``"VALID"``, ``"SAME"`` or ``(low, high)`` pairs.
      spec: the layout string of the inputs (default: batch first, channels
        last, as ``"NHWC"``).

    Returns:
      An ``(init_fun, apply_fun)`` pair.
    """
    return pooling


MaxPool = _pooling_layer("MaxPool", lax.max, -tnp.inf)
SumPool = _pooling_layer("SumPool", lax.add, 0.0)
# (padded cells do not count in a window's size, as JAX's)
AvgPool = _pooling_layer("AvgPool", lax.add, 0.0, normalize=True)


def _flatten_init(rng, input_shape):
    return (input_shape[0], math.prod(input_shape[1:])), ()


def _flatten_apply(params, inputs, **kwargs):
    return tnp.reshape(inputs, (inputs.shape[0], -1))


Flatten = (_flatten_init, _flatten_apply)   # flattens all but the leading axis
Identity = (_no_params, lambda params, inputs, **kwargs: inputs)
FanInSum = (lambda rng, input_shape: (input_shape[0], ()),
            lambda params, inputs, **kwargs: sum(inputs))


def FanOut(num: int) -> tuple[Any, Any]:  # noqa: N802 - JAX's name
    """A layer returning ``num`` copies of its input (a list).

    Args:
      num: the number of copies.

    Returns:
      An ``(init_fun, apply_fun)`` pair.
    """
    return (lambda rng, input_shape: ([input_shape] * num, ()),
            lambda params, inputs, **kwargs: [inputs] * num)


def FanInConcat(axis: Any = -1) -> tuple[Any, Any]:  # noqa: N802 - JAX's name
    """A layer concatenating its list of inputs along ``axis``.

    Args:
      axis: the axis of the concatenation.

    Returns:
      An ``(init_fun, apply_fun)`` pair.
    """
    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        size = sum(shape[ax] for shape in input_shape)
        return tuple(input_shape[0][:ax]) + (size,) + tuple(input_shape[0][ax + 1:]), ()

    return init_fun, lambda params, inputs, **kwargs: tnp.concatenate(inputs, axis)


def Dropout(rate: float, mode: str = "train") -> tuple[Any, Any]:  # noqa: N802 - JAX's name
    """Dropout: in ``"train"`` mode each input is kept with probability
    ``rate`` (JAX's convention: ``rate`` is the keep rate) and divided by it.

    Args:
      rate: the probability of keeping an input.
      mode: ``"train"`` (drop) or anything else (identity).

    Returns:
      An ``(init_fun, apply_fun)`` pair; ``apply_fun`` needs ``rng=key``.
    """
    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng", None)
        if rng is None:
            raise ValueError("Dropout layer requires apply_fun to be called with a PRNG key "
                             "argument. That is, instead of `apply_fun(params, inputs)`, call "
                             "it like `apply_fun(params, inputs, rng)` where `rng` is a "
                             "PRNG key (e.g. from `jax.random.key`).")
        if mode != "train":
            return inputs
        keep = random.bernoulli(rng, rate, inputs.shape)
        return tnp.where(keep, inputs / rate, 0)

    return _no_params, apply_fun


def _layer_rngs(rng, n):
    return random.split(rng, n) if rng is not None else (None,) * n


def serial(*layers: Any) -> tuple[Any, Any]:
    """Layers composed in sequence.

    Args:
      *layers: ``(init_fun, apply_fun)`` pairs.

    Returns:
      An ``(init_fun, apply_fun)`` pair; its parameters are the list of the
      layers' parameters.
    """
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rngs = _layer_rngs(kwargs.pop("rng", None), len(layers))
        for fun, param, rng in zip(apply_funs, params, rngs):
            inputs = fun(param, inputs, rng=rng, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers: Any) -> tuple[Any, Any]:
    """Layers applied side by side: the i-th to the i-th of a sequence of
    inputs (often between ``FanOut`` and ``FanInSum``/``FanInConcat``).

    Args:
      *layers: ``(init_fun, apply_fun)`` pairs.

    Returns:
      An ``(init_fun, apply_fun)`` pair taking and returning sequences.
    """
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        rngs = random.split(rng, len(layers))
        return zip(*[init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)])

    def apply_fun(params, inputs, **kwargs):
        rngs = _layer_rngs(kwargs.pop("rng", None), len(layers))
        return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs)]

    return init_fun, apply_fun


def shape_dependent(make_layer: Any) -> tuple[Any, Any]:
    """A layer built once the input shape is known.

    Args:
      make_layer: a function of the input shape returning an ``(init_fun,
        apply_fun)`` pair.

    Returns:
      An ``(init_fun, apply_fun)`` pair.
    """
    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)

    return init_fun, apply_fun
