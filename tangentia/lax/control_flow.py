"""Structured control flow with JAX's signatures: cond, switch, scan,
while_loop, fori_loop and map.  Bodies are traced once to programs."""
from __future__ import annotations

import builtins
import threading
import weakref
from typing import TYPE_CHECKING

import numpy as np

from .. import core, dtypes
from .. import numpy as tnp
from ..api import vmap
from ..api.staging import _JIT_DISABLED, _put
from ..core import ShapedArray
from ..interpreters import partial_eval as pe
from ..interpreters.call_rules import common_hoisted
from ..primitives import elementwise as E
from ..primitives import structural as S
from ..primitives.control_flow import cond_p, scan_p, strong_inputs as _strong_inputs, while_p
from .._messages import fun_name as _fun_name, jax_type as _jax_type
from .._traceback_util import api_boundary
from ..tree_util import tree_flatten, tree_map, tree_unflatten

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any


def _types_str(tree, avals):
    return str(tree_unflatten(tree, [a.str_short() for a in avals]))


def _trace_fun(fun, in_tree, in_avals, what):
    """Trace ``fun`` (taking the pytree ``in_tree``) to a closed program.

    Returns ``(jaxpr, consts, out_tree)``; consts become leading inputs.
    """
    store = {}

    def flat(*leaves):
        out = fun(*tree_unflatten(in_tree, list(leaves)))
        outs, store["tree"] = tree_flatten(out)
        for i, o in enumerate(outs):
            if not core.is_array_like(o):
                raise TypeError(f"{what} returned a value of type {type(o).__name__} "
                                f"(output leaf {i}); expected arrays")
        return outs

    jaxpr, consts = pe.trace_to_program(flat, in_avals, name=_fun_name(fun), label=what)
    return _strong_inputs(jaxpr), consts, store["tree"]


_TRACE_CACHE = weakref.WeakKeyDictionary()  # user function -> {key: traced program}
_TRACE_LOCK = threading.Lock()


def _cached_trace(owner, key, trace):
    """``trace()``, memoized on the user's function ``owner`` (weakly) and ``key``.

    As JAX does, a loop or branch body is traced once per function and
    argument types, so eager loops reuse one compiled program.  Bounded: a function
    keeps its newest ``staging._CACHE_MAX`` programs.  Results whose
    constants include tracers (values of an enclosing transformation) are
    not kept.
    """
    try:
        with _TRACE_LOCK:
            per_fun = _TRACE_CACHE.setdefault(owner, {})
            hit = per_fun.get(key)
    except TypeError:  # not weakly referenceable, or an unhashable key
        return trace()
    if hit is not None:
        return hit
    result = trace()
    if not any(isinstance(c, core.Tracer) for c in result[1]):
        with _TRACE_LOCK:
            hit = per_fun.get(key)
            if hit is None:
                _put(per_fun, key, result)   # bounded per function, as jit's caches
            else:
                result = hit
    return result


def _trace_cached(fun, in_tree, in_avals, what, owner=None):
    """``_trace_fun`` memoized on ``owner`` (the user's function; ``fun`` itself
    when None)."""
    return _cached_trace(fun if owner is None else owner, (what, in_tree, tuple(in_avals)),
                         lambda: _trace_fun(fun, in_tree, in_avals, what))


def _strong(aval):
    return ShapedArray(aval.shape, aval.dtype, False)


def _shown(x, aval):
    """``x`` as JAX's messages show an argument: its value, or its type when traced."""
    return aval.str_short() if isinstance(x, core.Tracer) else x


def _same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype


class _NoOperand:
    """The default of ``cond``'s ``operand=`` keyword: "not given" (``None`` is an operand)."""

    __slots__ = ()

    def __repr__(self):
        return "<no operand>"


_NO_OPERAND = _NoOperand()


def _concrete(x):
    """The concrete value of ``x`` (an array, a scalar, a tracer with a known value, as
    under eager ``grad``), or None when it is only known when the program runs (``jit``,
    ``vmap``): under ``disable_jit`` the loops and branches run in Python when their
    decisions are concrete, as in JAX."""
    if not isinstance(x, core.Tracer):
        return x
    try:
        return x.concrete_value("bool")
    except core.ConcretizationTypeError:
        return None


# ---------------------------------------------------------------------------
# cond / switch


_NO_OPERAND = object()


@api_boundary
def switch(index, branches: Sequence[Callable], *operands: Any,
           operand: Any = _NO_OPERAND) -> Any:
    """Apply ``branches[index](*operands)``, staged; the index is clamped to range.

    Every branch is traced (under ``jit`` the choice happens when the
    program runs); under ``vmap`` with a batched index every branch runs and
    the results are selected.  Differentiable in ``operands``.

    Args:
      index: a scalar integer (traced or not); values below 0 select the
        first branch, values past the end the last.
      branches: a non-empty sequence of functions of ``*operands``, all
        returning outputs of the same structure, shapes and dtypes.
      *operands: the arguments passed to the chosen branch (pytrees).
      operand: JAX's older keyword for one operand (then none may be positional).

    Returns:
      The chosen branch's output.

    Raises:
      TypeError: the index is not a scalar integer, a branch is not
        callable, or the branches' outputs differ in structure or type.
      ValueError: ``branches`` is empty.

    Examples:
      >>> from tangentia import lax
      >>> lax.switch(1, [lambda x: x, lambda x: 2 * x, lambda x: 3 * x], 1.0)
      Array(2.)
      >>> lax.switch(7, [lambda x: x, lambda x: 2 * x, lambda x: 3 * x], 1.0)   # clamped
      Array(3.)
    """
    if operand is not _NO_OPERAND:
        if operands:
            raise TypeError("if 'operand' keyword is passed then no positional operands can be "
                            f"passed, got {operand=} and positional operands {operands}")
        operands = (operand,)
    branches = list(branches)
    for i, b in enumerate(branches):
        if not callable(b):
            raise TypeError("lax.switch: branches argument should be a sequence of callables. "
                            f"(Branch {i} is a {type(b).__name__}.)")
    if isinstance(index, (tuple, list)):
        raise TypeError(f"Branch index must be scalar, got {index} of shape "
                        f"{np.shape(index)}. (lax.switch's index selects one branch.)")
    try:
        ia = core.get_aval(index)
    except TypeError:
        raise TypeError(f"Index type must be an integer, got {index}. (lax.switch's index is "
                        f"a {type(index).__name__}.)") from None
    if ia.shape != ():
        raise TypeError(f"Branch index must be scalar, got {_shown(index, ia)} of shape "
                        f"{ia.shape}. (lax.switch's index selects one branch.)")
    if ia.dtype.kind not in "iu":   # (a bool too: JAX's TypeError)
        raise TypeError(f"Index type must be an integer, got {_shown(index, ia)} as {ia.dtype}")
    if not branches:
        raise ValueError("Empty branch sequence (lax.switch needs at least one branch)")
    index = S.convert_element_type(index, np.int64)
    if len(branches) > 1:
        index = E.minimum(E.maximum(index, 0), len(branches) - 1)
    if _JIT_DISABLED.get():  # as JAX: only the branch taken runs, in Python
        i = _concrete(index)
        if i is not None:
            return branches[int(i)](*operands)
    return _cond(index, branches, operands, "switch")


@api_boundary
def cond(pred, true_fun: Callable, false_fun: Callable, *operands, operand=_NO_OPERAND) -> Any:
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``, staged.

    Both branches are traced; under ``jit`` the choice happens when the
    program runs, and under ``vmap`` with a batched ``pred`` both branches
    run and the results are selected.  Differentiable in ``operands``.

    Args:
      pred: a scalar boolean (or number: nonzero is true), traced or not.
      true_fun: the function applied when ``pred`` is true.
      false_fun: the function applied otherwise; both return outputs of the
        same structure, shapes and dtypes.
      *operands: the arguments passed to the chosen function (pytrees).
      operand: JAX's older single-operand keyword (the same as one operand;
        ``operand=None`` passes ``None`` to the branch).

    Returns:
      The chosen function's output.

    Raises:
      TypeError: ``pred`` is not a scalar, or the two branches' outputs
        differ in structure, shape or dtype.

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> from tangentia import lax
      >>> lax.cond(True, lambda x: x + 1, lambda x: x - 1, 1.0)
      Array(2.)
      >>> tg.vmap(lambda p, x: lax.cond(p, lambda x: x + 1, lambda x: x - 1, x))(
      ...     tnp.array([True, False]), tnp.zeros(2))
      Array([ 1., -1.])
    """
    if operand is not _NO_OPERAND:
        if operands:
            raise TypeError("if 'operand' keyword is passed then no positional operands can be "
                            f"passed, got operand={operand!r} and positional operands "
                            f"{operands!r}")
        operands = (operand,)
    elif (len(operands) == 2 and callable(false_fun) and callable(operands[1])
          and not (callable(true_fun) and callable(false_fun))):
        # JAX's older signature: cond(pred, true_operand, true_fun, false_operand, false_fun)
        true_op, t_fun, false_op, f_fun = true_fun, false_fun, operands[0], operands[1]
        true_fun = lambda ops: t_fun(ops[0])  # noqa: E731
        false_fun = lambda ops: f_fun(ops[1])  # noqa: E731
        operands = ((true_op, false_op),)
    if not (callable(true_fun) and callable(false_fun)):
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable. (Got "
                        f"{type(true_fun).__name__} and {type(false_fun).__name__}.)")
    if pred is None:
        raise TypeError("cond predicate is None")
    if isinstance(pred, (str, tuple, list)):
        raise TypeError(f"Pred must be a scalar, got {pred} of type {type(pred)}")
    try:
        pa = core.get_aval(pred)
    except TypeError:
        raise TypeError(f"Pred type must be either boolean or number, got {pred}.") from None
    if pa.shape != ():
        raise TypeError(f"Pred must be a scalar, got {_shown(pred, pa)} of shape {pa.shape}.")
    if pa.dtype.kind not in "biuf":
        raise TypeError(f"Pred type must be either boolean or number, got {pa.dtype}.")
    if pa.dtype.kind != "b":
        pred = E.ne(pred, 0)
    if _JIT_DISABLED.get():  # as JAX: only the branch taken runs, in Python
        p = _concrete(pred)
        if p is not None:
            return true_fun(*operands) if p else false_fun(*operands)
    index = S.convert_element_type(pred, np.int64)
    return _cond(index, [false_fun, true_fun], operands, "cond")


def _cond(index, branches, operands, api):
    leaves, in_tree = tree_flatten(tuple(operands))
    # as JAX: the branches see the operands' weak types (_strong_inputs makes each
    # program's types explicit)
    avals = [core.get_aval(x) for x in leaves]
    traced = [_trace_cached(b, in_tree, avals, f"{api} branch {i}") for i, b in enumerate(branches)]
    jaxprs, consts, trees = zip(*traced)
    names = ["false_fun", "true_fun"] if api == "cond" else [f"branch {i}"
                                                              for i in range(len(branches))]
    for i in range(1, len(jaxprs)):
        a0 = [v.aval for v in jaxprs[0].outvars]
        ai = [v.aval for v in jaxprs[i].outvars]
        if trees[i] != trees[0] or len(a0) != len(ai) or not all(_same(x, y)
                                                                   for x, y in zip(a0, ai)):
            what = (" outputs must have the same pytree structure, but they differ:"
                    if trees[i] != trees[0] else
                    "es must have equal output types but they differ.")
            raise TypeError(
                f"{api} branch{what} {names[0]} returns {_types_str(trees[0], a0)} and "
                f"{names[i]} returns {_types_str(trees[i], ai)}.")
    # Every branch takes the union of all branches' constants as leading inputs.
    new, all_consts = common_hoisted(list(zip(jaxprs, consts)))
    # As JAX: an output that every branch passes through from the same input is that
    # input, not an output of cond (so it stays unbatched under vmap with a batched
    # predicate, where cond's outputs are all batched: flax nnx's cond of a module whose
    # broadcast variables no branch touches); arrays and tracers only (a Python scalar
    # stays cond's weakly typed output)
    inputs = [*all_consts, *leaves]
    fwd = _forwarded(new, inputs)
    if any(f is not None for f in fwd):
        keep = [f is None for f in fwd]
        new = tuple(core.Jaxpr(j.constvars, j.invars, j.eqns,
                               [v for v, k in zip(j.outvars, keep) if k]) for j in new)
        kept = iter(cond_p.bind(index, *all_consts, *leaves, branches=tuple(new)))
        outs = [next(kept) if f is None else inputs[f] for f in fwd]
    else:
        outs = cond_p.bind(index, *all_consts, *leaves, branches=tuple(new))
    return tree_unflatten(trees[0], outs)


def _forwarded(jaxprs, inputs):
    """For each output of the branch programs ``jaxprs`` (one signature): the index of the
    input (an array or a tracer) every branch returns there as it is, else None."""
    out = []
    for outs in zip(*(j.outvars for j in jaxprs)):
        where = {j.invars.index(v) if any(v is w for w in j.invars) else None
                 for j, v in zip(jaxprs, outs)}
        i = where.pop() if len(where) == 1 else None
        out.append(i if i is not None and isinstance(inputs[i], (core.Tracer, np.ndarray))
                   else None)
    return out


# ---------------------------------------------------------------------------
# while_loop / fori_loop


@api_boundary
def while_loop(cond_fun: Any, body_fun: Callable[[Any], Any], init_val: Any) -> Any:
    """``while cond_fun(val): val = body_fun(val)``, staged; returns ``val``.

    The loop runs as one staged loop (inside ``jit`` the number of
    iterations is decided when the program runs).  Forward mode (``jvp``)
    works through it; reverse mode needs a known number of steps: use
    ``fori_loop`` with Python-int bounds or ``scan`` instead.

    Args:
      cond_fun: ``cond_fun(val) -> scalar bool``.
      body_fun: ``body_fun(val) -> val``, keeping the structure, shapes and
        dtypes of ``val``.
      init_val: the initial value (a pytree of arrays).

    Returns:
      The final ``val``.

    Raises:
      TypeError: ``body_fun`` changes the carry's structure or types, or
        ``cond_fun`` does not return a scalar boolean.

    Examples:
      >>> from tangentia import lax
      >>> lax.while_loop(lambda v: v < 10, lambda v: v * 2, 1)
      Array(16)
    """
    if not (callable(body_fun) and callable(cond_fun)):
        raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable. "
                        f"(Got {type(cond_fun).__name__} and {type(body_fun).__name__}.)")
    return _while_loop(cond_fun, body_fun, init_val, cond_fun, body_fun)


def _while_loop(cond_fun, body_fun, init_val, cond_owner, body_owner):
    if _JIT_DISABLED.get():
        # As JAX: a Python loop, unless a decision is only known when the program
        # runs (under vmap), then the staged loop.  A Python scalar stays one: JAX's
        # weakly typed array (c * x32 is float32, and so is x32 + the result).
        try:
            val = tree_map(lambda x: x if type(x) in (bool, int, float, complex)
                           else tnp.asarray(x), init_val)
            while cond_fun(val):
                val = body_fun(val)
            return val
        except core.ConcretizationTypeError:
            pass
    leaves, tree = tree_flatten(init_val)
    in_tree = tree_flatten((init_val,))[1]
    avals = _carry_avals(lambda a: _trace_cached(body_fun, in_tree, a, "while_loop body_fun",
                                                 body_owner), leaves)
    cj, cconsts, ctree = _trace_cached(cond_fun, in_tree, avals, "while_loop cond_fun",
                                       cond_owner)
    outs = [v.aval for v in cj.outvars]
    if ctree.num_leaves != 1 or ctree != tree_flatten(0)[1]:
        raise TypeError(f"cond_fun must return a boolean scalar, but got pytree {ctree}.")
    if outs[0].shape != () or outs[0].dtype.kind != "b":
        raise TypeError("cond_fun must return a boolean scalar, but got output type(s) "
                        f"[ShapedArray({_jax_type(outs[0])})].")
    bj, bconsts, btree = _trace_cached(body_fun, in_tree, avals, "while_loop body_fun",
                                       body_owner)
    _check_carry("while_loop", "body_fun", tree, avals, btree, [v.aval for v in bj.outvars])
    leaves = [_cast(x, a) for x, a in zip(leaves, avals)]
    out = while_p.bind(*cconsts, *bconsts, *leaves, cond_jaxpr=cj, body_jaxpr=bj,
                       cond_nconsts=len(cconsts), body_nconsts=len(bconsts))
    return tree_unflatten(tree, out)


def _cast(x, aval):
    """``x`` with the dtype of ``aval`` (a traced value of that dtype is kept even if
    weakly typed: the body was traced with the strong type, which only differs in
    promotion while tracing)."""
    if not isinstance(x, core.Tracer):  # a constant: cast now (a scalar: a literal)
        a = core.get_aval(x)
        return np.asarray(x, aval.dtype)[()] if a.dtype != aval.dtype or a.weak_type else x
    if x.aval.dtype != aval.dtype:
        return S.convert_element_type(x, aval.dtype)
    return x


def _check_carry(api, fname, tree, avals, out_tree, out_avals):
    if out_tree != tree or len(out_avals) != len(avals) or not all(
            _same(a, b) for a, b in zip(avals, out_avals)):
        what = ("the same pytree structure, but they differ:" if out_tree != tree else
                "equal types, but they differ:")
        raise TypeError(
            f"{api} body function carry input and carry output must have {what} the input "
            f"carry is {_types_str(tree, avals)} and the output carry is "
            f"{_types_str(out_tree, out_avals)} ({fname}).")


def _carry_avals(trace, leaves):
    """The types of a loop's carry ``leaves``, as JAX decides them: the initial
    values' own types, weak ones (Python scalars) included, so that the body sees a
    Python-scalar carry as JAX's does (``c * x32`` is float32); a weakly typed value
    to which the body gives another dtype or shape takes ``result_type`` of the two
    (strong), and the body is traced again.  JAX makes that second pass only (a
    promotion that needs a third is its type error too).  ``trace(avals)`` returns
    the body's program (memoized: the common case traces once), whose first
    outputs are the carry."""
    given = [core.get_aval(x) for x in leaves]
    if not any(a.weak_type for a in given):
        return given
    outs = trace(given)[0].outvars
    if len(outs) < len(given):   # (the body drops carry leaves: _check_carry's TypeError,
        return given             # not a count error unflattening the truncated types)
    outs = outs[:len(given)]
    avals = []
    for a, o in zip(given, outs):
        if a.weak_type and not _same(a, o.aval):
            a = ShapedArray(a.shape, dtypes.result_type((a.dtype, True),
                                                        (o.aval.dtype, o.aval.weak_type))[0])
        avals.append(a)
    return avals


@api_boundary
def fori_loop(lower, upper, body_fun, init_val, *, unroll: int | bool | None = None) -> Any:
    """``for i in range(lower, upper): val = body_fun(i, val)``, staged.

    With Python-int bounds it is lowered to ``scan`` (so reverse mode works);
    otherwise to ``while_loop``.

    Args:
      lower: the first index (an int, or a traced integer scalar).
      upper: the end of the range (excluded).
      body_fun: ``body_fun(i, val) -> val``, keeping the structure, shapes
        and dtypes of ``val``.
      init_val: the initial value (a pytree of arrays).
      unroll: accepted for JAX compatibility; no effect here.

    Returns:
      The final ``val``.

    Examples:
      >>> import tangentia as tg
      >>> from tangentia import lax
      >>> lax.fori_loop(0, 5, lambda i, v: v + i, 0.0)
      Array(10.)
      >>> tg.grad(lambda x: lax.fori_loop(0, 3, lambda i, v: v * x, 1.0))(2.0)   # d x^3
      Array(12.)
    """
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable. (Got a "
                        f"{type(body_fun).__name__}.)")
    la, ua = core.get_aval(lower), core.get_aval(upper)
    if la.dtype != ua.dtype:
        # a weakly typed bound (a Python scalar) takes the other's dtype, as in JAX; two
        # strong ones, or two Python scalars of different kinds (0 and 3.0), are JAX's error
        if la.weak_type == ua.weak_type:
            raise TypeError("lower and upper arguments to fori_loop must have equal types, "
                            f"got {la.dtype} and {ua.dtype}")
        if la.weak_type:
            lower = S.convert_element_type(lower, ua.dtype)
        else:
            upper = S.convert_element_type(upper, la.dtype)
    bounds = _concrete_ints(lower, upper)
    if bounds is not None:
        # Known bounds (Python ints, or concrete values as JAX accepts): a scan, so
        # that reverse mode works.  The index starts as ``lower`` itself.
        def step(carry, _):
            i, val = carry
            return (i + 1, body_fun(i, val)), None

        # the index: a weakly typed int64 (a Python int), as JAX's here, whatever the
        # bounds' dtype (int32 bounds, float bounds: int(2.5) steps), so that ``c + i``
        # keeps an int32 carry int32
        start = bounds[0]
        (_, val), _ = _scan(step, (start, init_val), None,
                            builtins.max(bounds[1] - bounds[0], 0), False, 1,
                            (body_fun, "fori_loop"))
        return val

    def body(c):
        i, u, val = c
        return (E.add(i, 1), u, body_fun(i, val))

    if unroll is not None and unroll is not False and unroll != 1:
        raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are "
                         "statically known. (fori_loop: lower and upper are traced here)")
    # traced bounds keep their (common) dtype, as JAX's: an int32 index for int32 bounds, and
    # float bounds count in floats (converting them to int64 ran fori_loop(0., 2.5) twice,
    # where JAX runs it three times)
    return _while_loop(_fori_cond, body, (lower, upper, init_val), _fori_cond,
                       body_fun)[2]


def _fori_cond(c):
    return E.lt(c[0], c[1])


def _concrete_ints(lower, upper):
    """``(int(lower), int(upper))`` when both bounds have concrete values (Python
    ints, arrays, values under eager differentiation), else None (traced by jit)."""
    try:
        return int(lower), int(upper)
    except (TypeError, core.ConcretizationTypeError):
        return None


# ---------------------------------------------------------------------------
# scan / map


@api_boundary
def scan(f: Callable[[Any, Any], tuple[Any, Any]], init: Any, xs: Any | None = None,
         length: int | None = None, reverse: bool = False, unroll: int | bool = 1,
         _split_transpose: bool = False) -> tuple[Any, Any]:
    """Loop ``carry, y = f(carry, x)`` over the leading axis of ``xs``.

    Args:
      f: the body, ``f(carry, x) -> (carry, y)``; the output carry has the
        input carry's structure, shapes and dtypes.
      init: the initial carry (a pytree of arrays).
      xs: a pytree of arrays scanned along their leading axis, or None (then
        ``length`` is required and ``x`` is None).
      length: the number of steps (checked against ``xs``).
      reverse: scan from the end of ``xs`` to its start (``ys`` still line up
        with ``xs``).
      unroll: accepted for JAX compatibility (a non-negative int or a bool) and
        has no effect: the compiled loop is the same, and results are
        identical either way.
      _split_transpose: accepted for JAX compatibility; no effect here.

    Returns:
      ``(final carry, ys)`` with the ``y`` of every step stacked along a new
      leading axis.

    Raises:
      TypeError: the body's output carry differs from ``init`` in
        structure, shape or dtype.
      ValueError: ``xs``'s leading axes differ, or disagree with ``length``.

    Examples:
      A cumulative sum, carrying the running total:

      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> from tangentia import lax
      >>> lax.scan(lambda c, x: (c + x, c + x), 0.0, tnp.arange(4.0))
      (Array(6.), Array([0., 1., 3., 6.]))
      >>> tg.grad(lambda w: lax.scan(lambda c, x: (c * w + x, None), 0.0,
      ...                            tnp.ones(3))[0])(2.0)   # d(w^2 + w + 1)/dw
      Array(5.)
    """
    if isinstance(unroll, bool):
        unroll = 1
    if not isinstance(unroll, (int, np.integer)):
        raise TypeError(f"'{type(unroll).__name__}' object cannot be interpreted as an integer "
                        "(scan: unroll is an int or a bool)")
    if unroll < 0:   # (0: as JAX, one step)
        raise ValueError("`unroll` must be a `bool` or a non-negative `int`. (scan: got "
                         f"{unroll!r}; it has no effect here)")
    return _scan(f, init, xs, length, reverse, builtins.max(int(unroll), 1), (f, "scan"))


def _scan(f, init, xs, length, reverse, unroll, owner):
    """``scan``; the traced body is memoized on ``owner = (function, tag)``."""
    if not callable(f):
        raise TypeError("lax.scan: f argument should be a callable. (Got a "
                        f"{type(f).__name__}.)")
    x_leaves, x_tree = tree_flatten(xs)
    x_avals = [core.get_aval(x) for x in x_leaves]
    scalars = [x for x, a in zip(x_leaves, x_avals) if a.ndim == 0]
    if scalars:
        raise ValueError("scan got value with no leading axis to scan over: "
                         f"{', '.join(str(_shown(x, core.get_aval(x))) for x in scalars)}. "
                         "(Every leaf of xs is sliced along its leading axis.)")
    sizes = [a.shape[0] for a in x_avals]
    if length is not None:
        length = int(length)
        if any(n != length for n in sizes):
            raise ValueError(f"scan got `length` argument of {length} which disagrees with "
                             f"leading axis sizes {sizes}.")
    elif len(set(sizes)) > 1:
        raise ValueError("scan got values with different leading axis sizes: "
                         f"{', '.join(str(n) for n in sizes)}.")
    elif not sizes:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    else:
        length = sizes[0]
    if _JIT_DISABLED.get():  # as JAX: a Python loop over the steps
        return _python_scan(f, init, x_leaves, x_tree, length, reverse)
    c_leaves, c_tree = tree_flatten(init)
    x_avals = [_strong(ShapedArray(a.shape[1:], a.dtype)) for a in x_avals]
    in_tree = tree_flatten((init, xs))[1]
    store = {}

    def body(carry, x):
        out = f(carry, x)
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            got = _jax_type(core.get_aval(out)) if core.is_array_like(out) else \
                type(out).__name__
            raise TypeError(f"scan body output must be a pair, got {got}. (The body returns "
                            "(carry, y).)")
        new_carry, y = out
        nc, nc_tree = tree_flatten(new_carry)
        y_leaves, store["y_tree"] = tree_flatten(y)
        store["carry_tree"] = nc_tree
        return list(nc) + list(y_leaves)

    def traced(in_avals):
        def trace():
            jaxpr, consts, _ = _trace_fun(body, in_tree, in_avals, "scan body")
            return jaxpr, consts, dict(store)
        return _cached_trace(owner[0], (owner[1], in_tree, tuple(in_avals)), trace)

    c_avals = _carry_avals(lambda a: traced(a + x_avals), c_leaves)
    jaxpr, consts, info = traced(c_avals + x_avals)
    store.update(info)
    n_c = len(c_leaves)
    out_avals = [v.aval for v in jaxpr.outvars]
    n_out_c = store["carry_tree"].num_leaves
    _check_carry("scan", f"body function {_fun_name(f)}", c_tree, c_avals, store["carry_tree"],
                 out_avals[:n_out_c])
    c_leaves = [_cast(x, a) for x, a in zip(c_leaves, c_avals)]
    outs = scan_p.bind(*consts, *c_leaves, *x_leaves, jaxpr=jaxpr, num_consts=len(consts),
                       num_carry=n_c, length=length, reverse=bool(reverse), unroll=unroll)
    return (tree_unflatten(c_tree, outs[:n_c]), tree_unflatten(store["y_tree"], outs[n_c:]))


def _python_scan(f, init, x_leaves, x_tree, length, reverse):
    """``scan`` under ``disable_jit``: ``f`` runs once per step, in Python."""
    if length == 0:
        raise ValueError("zero-length scan is not supported in disable_jit() mode because the "
                         "output type is unknown.")
    steps = range(length - 1, -1, -1) if reverse else range(length)
    carry, ys = init, []
    for i in steps:
        carry, y = f(carry, tree_unflatten(x_tree, [x[i] for x in x_leaves]))
        ys.append(y)
    if reverse:
        ys.reverse()
    # stacked in the type promoted from all steps', a Python scalar's weakly (the staged
    # scan's ys type, where the first step's y can be the Python-scalar carry)
    return carry, tree_map(lambda *y: tnp.stack(y, dtype=tnp.result_type(*y)), *ys)


@api_boundary
def map(f, xs, *, batch_size: int | None = None) -> Any:
    """``stack([f(x) for x in xs])`` as a staged loop (``jax.lax.map``).

    With ``batch_size``, ``xs`` is mapped in chunks of that many elements,
    each chunk by ``vmap(f)`` (the remainder too), which trades memory for
    fewer loop steps.

    Args:
      f: the function applied to each slice of ``xs`` along its leading axis.
      xs: an array or pytree of arrays with a common leading axis.
      batch_size: the number of elements per loop step (None: one).

    Returns:
      The outputs of ``f`` stacked along a new leading axis.

    Examples:
      >>> import tangentia.numpy as tnp
      >>> from tangentia import lax
      >>> lax.map(lambda x: x ** 2, tnp.arange(3.0))
      Array([0., 1., 4.])
      >>> lax.map(lambda x: x ** 2, tnp.arange(5.0), batch_size=2)
      Array([ 0.,  1.,  4.,  9., 16.])
    """
    if not callable(f):
        raise TypeError(f"map: f must be callable, got {type(f).__name__}")
    if batch_size is None or (batch_size == 0 and not isinstance(batch_size, bool)):
        # (batch_size=0 maps one element at a time, as in JAX)
        return _scan(lambda _, x: (None, f(x)), None, xs, None, False, 1, (f, "map"))[1]
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
            or batch_size < 1:
        raise ValueError(f"map: batch_size must be a positive integer, got {batch_size!r}")
    leaves, tree = tree_flatten(xs)
    if not leaves:
        raise ValueError("map: xs has no array leaves to map over")
    n = core.get_aval(leaves[0]).shape[:1]
    if n in ((), (0,)) or any(core.get_aval(x).shape[:1] != n for x in leaves):
        # nothing to batch (an empty xs: the loop's shapes), or leading axes that differ (the
        # loop's error): one element at a time
        return map(f, xs)
    nb, rem = divmod(n[0], int(batch_size))
    fv = vmap(f)
    parts = []
    if nb:
        main = [tnp.reshape(x[:nb * batch_size], (nb, batch_size) + core.get_aval(x).shape[1:])
                for x in leaves]
        ys = _scan(lambda _, x: (None, fv(x)), None, tree_unflatten(tree, main), None, False, 1,
                   (f, ("map", int(batch_size))))[1]
        y_leaves, y_tree = tree_flatten(ys)
        parts.append([tnp.reshape(y, (nb * batch_size,) + core.get_aval(y).shape[2:])
                      for y in y_leaves])
    if rem:
        y_leaves, y_tree = tree_flatten(fv(tree_unflatten(tree, [x[nb * batch_size:]
                                                                 for x in leaves])))
        parts.append(y_leaves)
    out = parts[0] if len(parts) == 1 else [tnp.concatenate(ys, axis=0) for ys in zip(*parts)]
    return tree_unflatten(y_tree, out)


__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "map"]
