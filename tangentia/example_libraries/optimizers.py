"""``tangentia.example_libraries.optimizers``: the first-order optimizers of
``jax.example_libraries.optimizers``, with the same functions, update rules,
state layout and errors, so training loops written for JAX run unchanged.

An optimizer is an ``(init_fun, update_fun, get_params)`` triple
(:class:`Optimizer`)::

    opt_init, opt_update, get_params = optimizers.adam(1e-3)
    state = opt_init(params)
    state = opt_update(step, grads, state)     # step: the iteration index
    params = get_params(state)

The ``@optimizer`` decorator lifts a triple written for one array to pytrees
of parameters; the state is an :class:`OptimizerState` pytree (its leaves are
the per-array states), so it passes through ``jit``, ``vmap`` and ``grad``.
A step size is a number or a schedule (a function of the step index):
``constant``, ``exponential_decay``, ``inverse_time_decay``,
``polynomial_decay``, ``piecewise_constant``.
"""
from __future__ import annotations

import collections
import functools
from typing import Any, Callable, NamedTuple

from .. import numpy as tnp
from ..tree_util import register_pytree_node, tree_flatten, tree_map, tree_unflatten

__all__ = ["Optimizer", "OptimizerState", "JoinPoint", "optimizer", "sgd", "momentum",
           "nesterov", "adagrad", "rmsprop", "rmsprop_momentum", "adam", "adamax", "sm3",
           "constant", "exponential_decay", "inverse_time_decay", "polynomial_decay",
           "piecewise_constant", "make_schedule", "l2_norm", "clip_grads",
           "unpack_optimizer_state", "pack_optimizer_state"]

OptimizerState = collections.namedtuple("OptimizerState",
                                        ["packed_state", "tree_def", "subtree_defs"])
OptimizerState.__doc__ = """The state of an optimizer over a pytree of parameters: a pytree
whose children are ``packed_state`` (the flat list of per-parameter states, each
a list of arrays); ``tree_def`` and ``subtree_defs`` (the parameters' structure and
each per-parameter state's) are static."""
register_pytree_node(OptimizerState,
                     lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
                     lambda aux, children: OptimizerState(children[0], *aux))

Schedule = Callable[[Any], Any]


class Optimizer(NamedTuple):
    """The ``(init_fn, update_fn, params_fn)`` triple of an optimizer.

    Args:
      init_fn: parameters -> optimizer state.
      update_fn: ``(step, grads, state)`` -> new state.
      params_fn: state -> parameters.
    """

    init_fn: Callable
    update_fn: Callable
    params_fn: Callable


def _flatten_states(states):
    """``(flat leaves of each state, structure of each state)``."""
    pairs = [tree_flatten(s) for s in states]
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def optimizer(opt_maker: Callable[..., tuple]) -> Callable[..., Optimizer]:
    """Decorator: an optimizer written for one array becomes one for pytrees.

    Args:
      opt_maker: a function returning an ``(init, update, get_params)`` triple
        acting on single arrays: ``init(x0) -> state``, ``update(i, g, state)
        -> state``, ``get_params(state) -> x`` (a state is any pytree of arrays).

    Returns:
      A function with ``opt_maker``'s arguments returning an :class:`Optimizer`
      whose functions act on pytrees of parameters and an
      :class:`OptimizerState`.

    Examples:
      >>> import numpy as np
      >>> from tangentia.example_libraries import optimizers
      >>> @optimizer
      ... def halve():
      ...     return (lambda x: x), (lambda i, g, x: x / 2), (lambda x: x)
      >>> init, update, get_params = halve()
      >>> get_params(update(0, {"a": 0.0}, init({"a": np.ones(2)})))
      {'a': array([0.5, 0.5])}
    """
    @functools.wraps(opt_maker)
    def tree_opt_maker(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree):
            x0_flat, tree = tree_flatten(x0_tree)
            states_flat, subtrees = _flatten_states([init(x0) for x0 in x0_flat])
            return OptimizerState(states_flat, tree, subtrees)

        @functools.wraps(update)
        def tree_update(i, grad_tree, opt_state):
            states_flat, tree, subtrees = opt_state
            grad_flat, tree2 = tree_flatten(grad_tree)
            if tree2 != tree:
                raise TypeError("optimizer update function was passed a gradient tree that did "
                                "not match the parameter tree structure with which it was "
                                f"initialized: parameter tree {tree} and grad tree {tree2}.")
            states = [tree_unflatten(t, s) for t, s in zip(subtrees, states_flat)]
            new_flat, subtrees2 = _flatten_states(
                [update(i, g, s) for g, s in zip(grad_flat, states)])
            for subtree, subtree2 in zip(subtrees, subtrees2):
                if subtree2 != subtree:
                    raise TypeError("optimizer update function produced an output structure "
                                    "that did not match its input structure: input "
                                    f"{subtree} and output {subtree2}.")
            return OptimizerState(new_flat, tree, subtrees)

        @functools.wraps(get_params)
        def tree_get_params(opt_state):
            states_flat, tree, subtrees = opt_state
            return tree_unflatten(tree, [get_params(tree_unflatten(t, s))
                                         for t, s in zip(subtrees, states_flat)])

        return Optimizer(tree_init, tree_update, tree_get_params)

    return tree_opt_maker


# ---------------------------------------------------------------------------
# The optimizers.  Most keep the parameters first in a tuple state.


def _first(state):
    return state[0]


def _with_zeros(count):
    """``init``: the parameters and ``count`` zero arrays shaped like them."""
    return lambda x0: (x0,) + tuple(tnp.zeros_like(x0) for _ in range(count))


@optimizer
def sgd(step_size: Any) -> Any:
    """Stochastic gradient descent: ``x <- x - step_size(i) * g``.

    Args:
      step_size: a positive scalar, or a schedule mapping the iteration index
        to one.

    Returns:
      An ``(init_fun, update_fun, get_params)`` triple.
    """
    step_size = make_schedule(step_size)
    return Optimizer(lambda x0: x0, lambda i, g, x: x - step_size(i) * g, lambda x: x)


def _momentum_optimizer(step_size, mass, nesterov_step):
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        direction = mass * velocity + g if nesterov_step else velocity
        return x - step_size(i) * direction, velocity

    return _with_zeros(1), update, _first


@optimizer
def momentum(step_size: Schedule, mass: float) -> Any:
    """SGD with momentum: ``v <- mass * v + g; x <- x - step_size(i) * v``.

    Args:
      step_size: a positive scalar, or a schedule mapping the iteration index
        to one.
      mass: the momentum coefficient (a positive scalar).

    Returns:
      An ``(init_fun, update_fun, get_params)`` triple.
    """
    return _momentum_optimizer(step_size, mass, nesterov_step=False)


@optimizer
def nesterov(step_size: Schedule, mass: float) -> Any:
    """SGD with Nesterov momentum: ``v <- mass * v + g;
    x <- x - step_size(i) * (mass * v + g)`` (``step_size`` and ``mass`` as
    :func:`momentum`'s).

    Returns:
      An ``(init_fun, update_fun, get_params)`` triple.
    """
    return _momentum_optimizer(step_size, mass, nesterov_step=True)


def _inv_sqrt_where_positive(a):
    return tnp.where(a > 0, 1.0 / tnp.sqrt(a), 0.0)


@optimizer
def adagrad(step_size: Any, momentum: Any = 0.9) -> Any:
    """Adagrad (Duchi et al. 2011) with momentum on the scaled gradient.

    Args:
      step_size: a positive scalar, or a schedule mapping the iteration index
        to one.
      momentum: the momentum coefficient (default 0.9).

    Returns:
      An ``(init_fun, update_fun, get_params)`` triple.
    """
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + tnp.square(g)
        m = (1.0 - momentum) * (g * _inv_sqrt_where_positive(g_sq)) + momentum * m
        return x - step_size(i) * m, g_sq, m

    return _with_zeros(2), update, _first


def _decayed_square(avg_sq_grad, g, gamma):
    return avg_sq_grad * gamma + tnp.square(g) * (1.0 - gamma)


@optimizer
def rmsprop(step_size: Any, gamma: Any = 0.9, eps: Any = 1e-8) -> Any:
    """RMSProp: ``x <- x - step_size(i) * g / sqrt(E[g^2] + eps)``.

    Args:
      step_size: a positive scalar, or a schedule mapping the iteration index
        to one.
      gamma: the decay of the running mean of squared gradients.
      eps: added under the square root.

    Returns:
      An ``(init_fun, update_fun, get_params)`` triple.
    """
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg_sq_grad = state
        avg_sq_grad = _decayed_square(avg_sq_grad, g, gamma)
        return x - step_size(i) * g / tnp.sqrt(avg_sq_grad + eps), avg_sq_grad

    return _with_zeros(1), update, _first


@optimizer
def rmsprop_momentum(step_size: Any, gamma: Any = 0.9, eps: Any = 1e-8, momentum: Any = 0.9) -> Any:
    """RMSProp with momentum on the scaled step.

    Args:
      step_size: a positive scalar, or a schedule mapping the iteration index
        to one.
      gamma: the decay of the running mean of squared gradients.
      eps: added under the square root.
      momentum: the momentum coefficient.

    Returns:
      An ``(init_fun, update_fun, get_params)`` triple.
    """
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg_sq_grad, mom = state
        avg_sq_grad = _decayed_square(avg_sq_grad, g, gamma)
        mom = momentum * mom + step_size(i) * g / tnp.sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom

    return _with_zeros(2), update, _first


def _bias_correction(b, m, i):
    """``1 - b ** (i + 1)`` in ``m``'s dtype."""
    return 1 - tnp.asarray(b, m.dtype) ** (i + 1)


@optimizer
def adam(step_size: Any, b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8) -> Any:
    """Adam (Kingma and Ba 2015), with bias-corrected moment estimates.

    Args:
      step_size: a positive scalar, or a schedule mapping the iteration index
        to one.
      b1: the decay of the first moment estimate (default 0.9).
      b2: the decay of the second moment estimate (default 0.999).
      eps: added to the root of the second moment (default 1e-8).

    Returns:
      An ``(init_fun, update_fun, get_params)`` triple.

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> from tangentia.example_libraries import optimizers
      >>> init, update, get_params = optimizers.adam(0.1)
      >>> state = init({"w": tnp.ones(2)})
      >>> for i in range(300):
      ...     g = tg.grad(lambda p: tnp.sum((p["w"] - 3.0) ** 2))(get_params(state))
      ...     state = update(i, g, state)
      >>> [round(float(w), 4) for w in get_params(state)["w"]]
      [3.0, 3.0]
    """
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * tnp.square(g) + b2 * v
        mhat = m / _bias_correction(b1, m, i)
        vhat = v / _bias_correction(b2, m, i)
        return x - step_size(i) * mhat / (tnp.sqrt(vhat) + eps), m, v

    return _with_zeros(2), update, _first


@optimizer
def adamax(step_size: Any, b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8) -> Any:
    """AdaMax: Adam with the infinity norm in place of the second moment
    (``step_size`` and ``b1`` as :func:`adam`'s).

    Args:
      b2: the decay of the weighted infinity norm (default 0.999).
      eps: added to the norm (default 1e-8).

    Returns:
      An ``(init_fun, update_fun, get_params)`` triple.
    """
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = tnp.maximum(b2 * u, tnp.abs(g))
        return x - (step_size(i) / _bias_correction(b1, m, i)) * m / (u + eps), m, u

    return _with_zeros(2), update, _first


@optimizer
def sm3(step_size: Any, momentum: Any = 0.9) -> Any:
    """SM3 (Anil et al. 2019): memory-efficient adaptive steps, one
    accumulator vector per axis of each parameter (``step_size`` and
    ``momentum`` as :func:`adagrad`'s).

    Returns:
      An ``(init_fun, update_fun, get_params)`` triple.
    """
    step_size = make_schedule(step_size)

    def along(ndim, v, axis):
        """``v`` (1-D) broadcastable along ``axis`` of an ``ndim``-array (1-D
        when ``ndim`` is 0: a scalar gradient updates its 1-element state)."""
        shape = [1] * ndim
        shape[axis:axis + 1] = [-1]
        return tnp.reshape(v, shape)

    def init(x0):
        shape = tnp.shape(x0)
        x0 = tnp.atleast_1d(x0)
        return x0, tnp.zeros_like(x0), [tnp.zeros(n, dtype=x0.dtype) for n in x0.shape], shape

    def update(i, g, state):
        x, m, vs, shape = state
        accum = functools.reduce(tnp.minimum, [along(g.ndim, v, a) for a, v in enumerate(vs)])
        accum = accum + tnp.square(g)
        m = (1.0 - momentum) * (g * _inv_sqrt_where_positive(accum)) + momentum * m
        x = x - step_size(i) * m
        vs = [tnp.max(accum, axis=tuple(b for b in range(x.ndim) if b != a))
              for a in range(x.ndim)]
        return x, m, vs, shape

    return init, update, lambda state: tnp.reshape(state[0], state[3])


# ---------------------------------------------------------------------------
# Step-size schedules


def constant(step_size) -> Schedule:
    """The schedule ``i -> step_size``.

    Args:
      step_size: the step size.
    """
    return lambda i: step_size


def exponential_decay(step_size: Any, decay_steps: Any, decay_rate: Any) -> Any:
    """The schedule ``i -> step_size * decay_rate ** (i / decay_steps)``.

    Args:
      step_size: the initial step size.
      decay_steps: the steps over which the size is multiplied by ``decay_rate``.
      decay_rate: the decay factor.
    """
    return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(step_size: Any, decay_steps: Any, decay_rate: Any,
                       staircase: Any = False) -> Any:
    """The schedule ``i -> step_size / (1 + decay_rate * i / decay_steps)``.

    Args:
      step_size: the initial step size.
      decay_steps: the time unit of the decay.
      decay_rate: the decay rate.
      staircase: if True, ``i / decay_steps`` is rounded down (the step size
        changes every ``decay_steps`` steps).
    """
    if staircase:
        return lambda i: step_size / (1 + decay_rate * tnp.floor(i / decay_steps))
    return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(step_size: Any, decay_steps: Any, final_step_size: Any,
                     power: Any = 1.0) -> Any:
    """The schedule going from ``step_size`` to ``final_step_size`` in
    ``decay_steps`` steps as ``(1 - i / decay_steps) ** power``, then constant.

    Args:
      step_size: the initial step size.
      decay_steps: the number of steps of the decay.
      final_step_size: the step size from ``decay_steps`` on.
      power: the power of the polynomial (default 1: linear).
    """
    def schedule(step_num):
        step_num = tnp.minimum(step_num, decay_steps)
        step_mult = (1 - step_num / decay_steps) ** power
        return step_mult * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries: Any, values: Any) -> Any:
    """The schedule ``values[k]`` where ``k`` counts the boundaries below ``i``.

    Args:
      boundaries: increasing step indices (1-D).
      values: the step sizes, one more than ``boundaries``.
    """
    boundaries = tnp.array(boundaries)
    values = tnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("boundaries and values must be sequences")
    if not boundaries.shape[0] == values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")
    return lambda i: values[tnp.sum(i > boundaries)]


def make_schedule(scalar_or_schedule) -> Schedule:
    """A schedule as given, or the constant schedule of a scalar.

    Args:
      scalar_or_schedule: a scalar or a function of the step index.
    """
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if tnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(type(scalar_or_schedule))


# ---------------------------------------------------------------------------
# Utilities


def l2_norm(tree: Any) -> Any:
    """The l2 norm of a pytree of arrays (all leaves as one vector).

    Args:
      tree: a pytree of arrays.
    """
    leaves, _ = tree_flatten(tree)
    return tnp.sqrt(sum(tnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree: Any, max_norm: Any) -> Any:
    """``grad_tree`` scaled down to l2 norm ``max_norm`` if its norm is larger.

    Args:
      grad_tree: a pytree of arrays.
      max_norm: the largest norm kept.
    """
    norm = l2_norm(grad_tree)
    return tree_map(lambda g: tnp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


class JoinPoint:
    """A leaf holding a subtree: marks where the per-parameter states of an
    unpacked optimizer state begin.

    Args:
      subtree: the per-parameter state.
    """

    def __init__(self, subtree: Any) -> None:
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree


def unpack_optimizer_state(opt_state: Any) -> Any:
    """An :class:`OptimizerState` as a pytree of the parameters' structure whose
    leaves are :class:`JoinPoint` s holding each parameter's state (for
    serializing).

    Args:
      opt_state: an :class:`OptimizerState`.
    """
    states_flat, tree_def, subtree_defs = opt_state
    return tree_unflatten(tree_def, [JoinPoint(tree_unflatten(t, s))
                                     for t, s in zip(subtree_defs, states_flat)])


def pack_optimizer_state(marked_pytree: Any) -> Any:
    """The inverse of :func:`unpack_optimizer_state`.

    Args:
      marked_pytree: a pytree whose leaves are :class:`JoinPoint` s.
    """
    sentinels, tree_def = tree_flatten(marked_pytree)
    if not all(isinstance(s, JoinPoint) for s in sentinels):
        raise TypeError("pack_optimizer_state: marked_pytree must have JoinPoint leaves (as "
                        "unpack_optimizer_state makes), got "
                        f"{sorted({type(s).__name__ for s in sentinels})}")
    states_flat, subtree_defs = _flatten_states([s.subtree for s in sentinels])
    return OptimizerState(states_flat, tree_def, subtree_defs)
