"""Staging: jit (and its lowering), checkpoint, make_jaxpr and eval_shape."""
from __future__ import annotations

import contextvars
import functools
import inspect
import operator
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from .. import core, dtypes
from .._array import ArrayImpl
from ..core import ShapedArray, Tracer
from ..interpreters import partial_eval as pe
from .._messages import fun_name as _fun_name
from .._traceback_util import api_boundary
from ..primitives.control_flow import strong_inputs
from ..compiler.backend import (Tiered, compile_ahead, compile_program,
                               default_backend_name as _default_backend_name,
                               get_backend, tiered as _tiered)
from ..primitives.call import jit_p
from ..primitives.remat import remat_p
from ..tree_util import tree_flatten, tree_structure, tree_unflatten
from ._util import _LEAF_TREE, _arg_leaf_names, _arrays, _check_callable, _parameters

if TYPE_CHECKING:
    from ..typing import AxisName, DTypeLike, Shape

# ---------------------------------------------------------------------------
# jit


class ShapeDtypeStruct:
    """A shape and dtype standing for an array (for ``eval_shape`` and tracing).

    Args:
      shape: a tuple of ints.
      dtype: anything ``numpy.dtype`` accepts.
      weak_type: whether the value is weakly typed (as a Python scalar).
      sharding: accepted for JAX compatibility (libraries pass an array's
        ``.sharding``); one device, so it is not kept.

    Examples:
      >>> import tangentia as tg
      >>> tg.ShapeDtypeStruct((3, 2), "float32")
      ShapeDtypeStruct(shape=(3, 2), dtype=float32)
    """

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape: Shape, dtype: DTypeLike, weak_type: bool = False, *,
                 sharding: Any = None) -> None:
        self.shape = tuple(shape)
        self.dtype = dtypes.to_dtype(dtype)
        self.weak_type = weak_type

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))

    @property
    def sharding(self):
        """Always None: tangentia has one device (JAX's attribute, for code that reads it)."""
        return None

    def update(self, **changes: Any) -> ShapeDtypeStruct:
        """A copy with some of ``shape``, ``dtype``, ``weak_type`` replaced (JAX's
        ``ShapeDtypeStruct.update``; ``sharding`` may only be None)."""
        if changes.pop("sharding", None) is not None:
            raise ValueError("ShapeDtypeStruct.update: tangentia has no shardings; sharding "
                             "must be None")
        unknown = set(changes) - {"shape", "dtype", "weak_type"}
        if unknown:
            raise TypeError(f"ShapeDtypeStruct.update got unexpected fields {sorted(unknown)}")
        return ShapeDtypeStruct(changes.get("shape", self.shape), changes.get("dtype", self.dtype),
                                changes.get("weak_type", self.weak_type))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object (a ShapeDtypeStruct of shape ())")
        return self.shape[0]

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"


def _abstractify(x):
    if isinstance(x, ShapeDtypeStruct):
        return ShapedArray(x.shape, x.dtype, x.weak_type)
    return core.get_aval(x)


def _abstractify_duck(x):
    """eval_shape's arguments: arrays, or any object with ``.shape`` and ``.dtype`` (JAX's
    duck typing)."""
    try:
        return _abstractify(x)
    except TypeError:
        if hasattr(x, "shape") and hasattr(x, "dtype"):
            return ShapedArray(tuple(x.shape), np.dtype(x.dtype))
        raise


def _static_split(fun, args, kwargs, static_argnums, static_argnames, api, hashable=True):
    nargs = len(args)
    statics = []
    dyn_args = []
    snums = set()
    for i in static_argnums:
        j = i + nargs if i < 0 else i
        snums.add(j)
    for i, a in enumerate(args):
        if i in snums:
            statics.append(("pos", i, a))
        else:
            dyn_args.append(a)
    dyn_kwargs = {}
    for k, v in kwargs.items():
        if k in static_argnames:
            statics.append(("kw", k, v))
        else:
            dyn_kwargs[k] = v
    # (checkpoint traces at every call: its static arguments need no hash, as in JAX)
    for kind, k, v in (statics if hashable else ()):
        try:
            hash(v)
        except TypeError:
            raise ValueError("Non-hashable static arguments are not supported. An error occurred "
                             f"while trying to hash an object of type {type(v)}, {v!r:.80}. "
                             f"({api} of {_fun_name(fun)}: static argument {k!r} has unhashable "
                             f"type {type(v).__name__}; static arguments must be hashable)") from None
    return tuple(statics), tuple(dyn_args), dyn_kwargs


def _resolve_statics(fun, static_argnums, static_argnames, validate=False):
    """``(positions, names)`` of the static arguments, each completed from the
    other through ``fun``'s signature, as JAX resolves them; with ``validate``
    (jit), positions and names ``fun`` cannot take raise JAX's ValueError."""
    given_both = static_argnums is not None and static_argnames is not None
    static_argnums = _index_tuple(static_argnums)
    if isinstance(static_argnames, str):
        static_argnames = (static_argnames,)
    static_argnames = tuple(static_argnames or ())
    params = _parameters(fun)
    pos_names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if validate and params:
        _validate_statics(params, pos_names, static_argnums, static_argnames)
    if validate and given_both:   # (jit, as JAX's: both given, neither is completed)
        return tuple(sorted(set(static_argnums))), frozenset(static_argnames)
    nums = set(static_argnums)
    names = set(static_argnames)
    for i in static_argnums:
        if 0 <= i < len(pos_names):
            names.add(pos_names[i])
    for n in static_argnames:
        if n in pos_names:
            nums.add(pos_names.index(n))
    return tuple(sorted(nums)), frozenset(names)


def _index_tuple(nums):
    """JAX's ``_ensure_index_tuple``: an int or a sequence of ints (``None``: none) as a tuple
    of ints; anything else raises JAX's TypeError (``"1"``: "'str' object cannot be
    interpreted as an integer") rather than failing later in a comparison."""
    if nums is None:
        return ()
    try:
        return (operator.index(nums),)
    except TypeError:
        return tuple(map(operator.index, nums))


def _validate_argnums(params, argnums, what):
    """JAX's ValueError for positions ``fun`` cannot take (any, with ``*args``)."""
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return
    n = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    if any(not -n <= i < n for i in argnums):
        raise ValueError(f"Jitted function has {what}={argnums}, but only "
                         f"accepts {n} positional arguments.")


def _validate_statics(params, pos_names, static_argnums, static_argnames):
    kinds = {p.kind for p in params}
    _validate_argnums(params, static_argnums, "static_argnums")
    if inspect.Parameter.VAR_KEYWORD not in kinds:
        valid = {p.name for p in params if p.kind != p.POSITIONAL_ONLY}
        invalid = set(static_argnames) - valid
        if invalid:
            raise ValueError(f"Jitted function has invalid argnames {invalid} in static_argnames. "
                             "Function does not take these args.")


def _merge_static(statics, dyn_args, dyn_kwargs):
    args = list(dyn_args)
    kwargs = dict(dyn_kwargs)
    for kind, k, v in statics:
        if kind == "pos":
            args.insert(k, v)
        else:
            kwargs[k] = v
    return args, kwargs


def _invalid_argument_error(name, fun, args, kwargs, api):
    """A TypeError naming the first argument leaf that is not an array."""
    names = _arg_leaf_names(fun, args) + [f"keyword argument '{k}'" for k in sorted(kwargs)
                                          for _ in tree_flatten(kwargs[k])[0]]
    leaves = tree_flatten(args)[0] + [x for k in sorted(kwargs) for x in tree_flatten(kwargs[k])[0]]
    for n, x in zip(names, leaves):
        try:
            _abstractify(x)
        except TypeError:
            if hasattr(type(x), "__jax_array__"):   # JAX 0.10.2 honours it in jnp.asarray only
                return ValueError(
                    "Triggering __jax_array__() during abstractification is no longer supported. "
                    "To avoid this error, either explicitly convert your object using "
                    f"jax.numpy.array(), or register your object as a pytree. ({api} of {name}: "
                    f"{n} of type {type(x).__name__}; tangentia.numpy.asarray converts it)")
            return TypeError(   # JAX's wording first
                f"Error interpreting argument to {fun!r} as an abstract array. The problematic "
                f"value is of type {type(x)} and was passed to the function as {n}. {api} of "
                f"{name}: {n} of type {type(x).__name__} is not a valid array type. Pass arrays "
                "(or pytrees of arrays), or mark the argument static with static_argnums / "
                "static_argnames.")
    return TypeError(f"{api} of {name}: an argument is not a valid array type")


def _check_returned(fun, label, i, x):
    """JAX's TypeError for a returned leaf that is not an array (a str, an object)."""
    try:
        core.as_array(x)
    except TypeError:
        code = getattr(inspect.unwrap(fun), "__code__", None)
        where = f" at {code.co_filename}:{code.co_firstlineno}" if code is not None else ""
        raise TypeError(f"function {_fun_name(fun)}{where} traced for {label} returned a value "
                        f"of type {type(x)}, which is not a valid JAX type ({label}: output leaf "
                        f"{i} is {x!r:.60}; a traced function returns arrays, scalars or pytrees "
                        "of them)") from None


def _stage(fun, statics, in_tree, avals, label, arg_names=None, as_program=False):
    """Trace ``fun`` on the flattened ``(args, kwargs)`` (static arguments put
    back in place). Returns ``(jaxpr, consts, out_tree)``: the consts are the
    program's constvars, or with ``as_program=True`` (for a primitive to carry
    it) its leading inputs."""
    store = {}

    def flat(*leaves):
        d_args, d_kwargs = tree_unflatten(in_tree, leaves)
        args, kwargs = _merge_static(statics, d_args, d_kwargs)
        out_leaves, store["out_tree"] = tree_flatten(fun(*args, **kwargs))
        for i, x in enumerate(out_leaves):
            if not core.is_array_like(x):
                _check_returned(fun, label, i, x)
        return out_leaves

    trace = pe.trace_to_program if as_program else pe.trace_to_jaxpr
    jaxpr, consts = trace(flat, list(avals), name=_fun_name(fun), label=label,
                          arg_names=arg_names)
    if as_program or label == "jit":  # a Python-scalar argument's conversions made explicit
        jaxpr = strong_inputs(jaxpr, keep_inputs=True)   # (x32 * s: float32, as JAX's)
    return jaxpr, consts, store["out_tree"]


_JIT_DISABLED = contextvars.ContextVar("tangentia_jit_disabled", default=False)


class disable_jit:
    """Context manager: jitted functions run their Python code eagerly, as
    ``jax.disable_jit`` (for debugging with prints and pdb).

    Args:
      disable: ``True`` runs jitted functions eagerly inside the ``with``
        block; ``False`` restores ``jit`` there (inside an outer block).

    Examples:
      >>> import tangentia as tg
      >>> with tg.disable_jit():
      ...     tg.jit(lambda x: float(x) + 1)(1.0)   # float() of a traced value would fail
      2.0
    """

    def __init__(self, disable: bool = True) -> None:
        self.disable = bool(disable)

    def __enter__(self):
        self.token = _JIT_DISABLED.set(self.disable)
        return self

    def __exit__(self, *exc):
        _JIT_DISABLED.reset(self.token)


class ensure_compile_time_eval:
    """Context manager: operations whose inputs are all concrete run eagerly even
    while ``jit`` (or any staging) traces, as ``jax.ensure_compile_time_eval``;
    their results are concrete arrays, so Python can branch on them.

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> @tg.jit
      ... def f(x):
      ...     with tg.ensure_compile_time_eval():
      ...         n = tnp.sum(tnp.arange(4.0))   # 6.0, computed while tracing
      ...     return x * n if n > 5 else x
      >>> float(f(2.0))
      12.0
    """

    def __enter__(self):
        self.token = core.compile_time_eval_ctx.set(True)
        return self

    def __exit__(self, *exc):
        core.compile_time_eval_ctx.reset(self.token)


_ndarray = np.ndarray
_ArrayImpl = ArrayImpl
_trace_state = core.trace_state  # (the current trace is _trace_state().trace)
_EVAL_TRACE = core.EVAL_TRACE
_SCALAR_KEY = {float: "float", int: "int", bool: "bool", complex: "complex"}
_FUNCTION_CACHES = weakref.WeakKeyDictionary()  # fun -> {options: (cache, fast_cache)}
_FUNCTION_CACHES_LOCK = threading.Lock()


_CACHE_MAX = 4096  # programs per jitted function (and per backend, compiled); see _put


def _put(cache, key, value):
    """``cache[key] = value`` in one of ``jit``'s per-function caches, which are bounded:
    one that holds ``_CACHE_MAX`` entries drops its oldest first (as JAX's caches are
    bounded), so a long-running process calling one function with ever new shapes does
    not keep every program it ever traced.  Only insertion pays for the bound."""
    if len(cache) >= _CACHE_MAX and key not in cache:
        try:
            del cache[next(iter(cache))]
        except (KeyError, RuntimeError, StopIteration):  # another thread got there first
            pass
    cache[key] = value


def _function_caches(fun, options):
    """The (cache, fast_cache) pair of ``fun`` jitted with ``options``."""
    try:
        with _FUNCTION_CACHES_LOCK:
            per_fun = _FUNCTION_CACHES.setdefault(fun, {})
            return per_fun.setdefault(options, ({}, {}))
    except TypeError:  # not weakly referenceable (e.g. some builtins): a cache per jit object
        return {}, {}


_TUPLE_TREES: dict = {}     # n -> the tree of a flat tuple of n leaves (one object per n)


def _tuple_tree(tree):
    """``tree``, or the one object standing for it in ``_TUPLE_TREES`` if it is the tree of a
    flat tuple of leaves (``grad(f, argnums=(0, 1))``'s results): ``jit``'s fast path then
    returns such results as a tuple by an identity test, not ``tree_unflatten``."""
    n = tree.num_leaves
    flat = _TUPLE_TREES.get(n)
    if flat is None and n <= 64:
        flat = _TUPLE_TREES.setdefault(n, tree_structure(tuple(range(n))))
    return flat if flat is not None and tree == flat else tree


def _swap_native(fast_cache, key, consts, out_tree, name, arg_names, fn):
    """A tiered program's native code takes its place in ``jit``'s call cache."""
    if key in fast_cache:
        fn, consts = _bound(fn, consts)
        fast_cache[key] = (_ints_checked(fn, key, name, arg_names), consts, out_tree)


def _bound(fn, consts):
    """``(fn', consts')`` for ``jit``'s call cache: a compiled program that can take its
    constants once (``bind``: the numba backend's, which converts and packs them there
    instead of at every call; 182 constants of a 30-step gradient cost 3x its run time)
    with them bound and none left to pass, else ``fn`` and ``consts`` as they are."""
    bind = getattr(fn, "bind", None)
    if bind is None or not consts:
        return fn, consts
    return bind(consts), ()


def _snapshot(consts):
    """The constants of a traced program, their values taken now: a closed-over array
    changed in place after the trace is not seen by later calls, as in JAX (whose jit
    captures it at trace time), whichever backend or tier runs them."""
    return [c.copy() if type(c) is np.ndarray and c.flags.writeable else c for c in consts]


_INT64_MIN, _INT64_MAX = -2 ** 63, 2 ** 63 - 1


def _int_overflow_error(name, where, value):
    return OverflowError(
        "An overflow was encountered while parsing an argument to a jitted computation, "
        f"whose argument path is {where}. Got <class 'int'> with value {value} "
        f"(jit of {name}: a Python int argument is traced as a weakly typed int64, and "
        f"{value} is outside int64's range; pass a float or an array of the dtype you mean)")


def _ints_checked(fn, key, name, arg_names):
    """``fn`` of a call-cache entry whose key has Python int arguments, checking that
    they fit int64 as ``_signature`` does for the first call (the fast path skips it);
    ``fn`` itself for any other key, at no cost.  ``arg_names``: the arguments' names
    for the message (strings only: the entry must not keep the function alive)."""
    positions = [i for i, k in enumerate(key) if k == "int"]
    if not positions:
        return fn

    def run(*args):
        n = len(args) - len(key)   # the program's constants come first
        for i in positions:
            x = args[n + i]
            if not _INT64_MIN <= x <= _INT64_MAX:
                raise _int_overflow_error(name, arg_names[i], x)
        return fn(*args)
    return run


class _Jitted:
    """A function compiled on first call for each abstract signature."""

    def __init__(self, fun, static_argnums, static_argnames, backend=None):
        self.fun = fun
        if backend is not None:
            get_backend(backend)  # an unknown name fails here, naming the backends
        self.backend = backend
        self.static_argnums, self.static_argnames = _resolve_statics(
            fun, static_argnums, static_argnames, validate=True)
        # The caches belong to the function (weakly), as in JAX: jit(f)(x) written
        # inline traces f once per signature, not once per jit object.
        # fast_caches: per backend name, compiled programs by argument types.
        self.cache, self.fast_caches = _function_caches(
            fun, (self.static_argnums, self.static_argnames, backend))
        self.name = _fun_name(fun)
        functools.update_wrapper(self, fun, updated=())

    @property
    def __signature__(self) -> inspect.Signature:
        """The function's signature, as a jitted function's in JAX (``inspect.signature``
        finds it also with ``follow_wrapped=False``)."""
        return inspect.signature(self.fun)

    def __repr__(self) -> str:
        return f"<PjitFunction of {self.fun!r}>"   # JAX's (libraries test the name: chex)

    def _signature(self, args, kwargs):
        if self.static_argnums or self.static_argnames:
            statics, dyn_args, dyn_kwargs = _static_split(
                self.fun, args, kwargs, self.static_argnums, self.static_argnames, "jit")
        else:
            statics, dyn_args, dyn_kwargs = (), args, kwargs
        leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        try:
            avals = tuple(_abstractify(x) for x in leaves)
        except TypeError:
            raise _invalid_argument_error(self.name, self.fun, dyn_args, dyn_kwargs,
                                          "jit") from None
        swapped = False
        for i, x in enumerate(leaves):
            if type(x) is int:
                if not _INT64_MIN <= x <= _INT64_MAX:
                    raise _int_overflow_error(self.name, _arg_leaf_names(self.fun, dyn_args)[i]
                                              if not dyn_kwargs else f"leaf {i}", x)
            elif isinstance(x, np.ndarray) and not x.dtype.isnative:
                # an array of the other byte order (``>f4`` here) in native order: backends
                # compile for native dtypes (numba refused them: a warning and the NumPy
                # backend)
                leaves[i] = x.astype(x.dtype.newbyteorder("="))
                swapped = True
        if swapped:
            avals = tuple(_abstractify(x) for x in leaves)
        return statics, leaves, in_tree, avals

    def _trace(self, statics, in_tree, avals, dyn_args):
        return _stage(self.fun, statics, in_tree, avals, "jit",
                      _arg_leaf_names(self.fun, dyn_args), as_program=True)

    @api_boundary
    def __call__(self, *args, **kwargs):
        if _JIT_DISABLED.get():
            return self.fun(*args, **kwargs)
        # Fast path: positional ndarray / Python scalar arguments only, called
        # eagerly, with a program already compiled for their types.
        if not kwargs:
            try:
                fast_key = tuple([(a.shape, a.dtype) if type(a) is _ndarray else _SCALAR_KEY[type(a)]
                                  for a in args])
            except KeyError:
                if _ArrayImpl in [type(a) for a in args]:  # eager results: as plain ndarrays
                    return self(*[a.view(_ndarray) if type(a) is _ArrayImpl else a for a in args])
                fast_key = None
            fast_cache = self.fast_caches.get(self.backend or _default_backend_name())
            entry = None if fast_cache is None else fast_cache.get(fast_key)
            if entry is not None and _trace_state().trace is _EVAL_TRACE:
                fn, consts, out_tree = entry
                outs = fn(*consts, *args)
                if out_tree is _LEAF_TREE:
                    o = outs[0]
                    return o if type(o) is _ndarray else np.asarray(o)
                if out_tree is _TUPLE_TREES.get(len(outs)) and \
                        all([type(o) is _ndarray for o in outs]):
                    return tuple(outs)      # (a flat tuple of results: no unflattening)
                return tree_unflatten(out_tree, _arrays(outs))
        statics, leaves, in_tree, avals = self._signature(args, kwargs)
        key = (statics, in_tree, avals)
        entry = self.cache.get(key)
        if entry is None:
            dyn_args = tree_unflatten(in_tree, leaves)[0]
            jaxpr, consts, out_tree = self._trace(statics, in_tree, avals, dyn_args)
            consts = _snapshot(consts)
            if out_tree == _LEAF_TREE:
                out_tree = _LEAF_TREE
            else:
                out_tree = _tuple_tree(out_tree)
            entry = (jaxpr, consts, out_tree)
            if not any(isinstance(c, Tracer) for c in consts):
                _put(self.cache, key, entry)
                if not kwargs and not statics and all(
                        type(a) is np.ndarray and a.dtype.isnative or type(a) in _SCALAR_KEY
                        for a in args):
                    backend = get_backend(self.backend)
                    fast_cache = self.fast_caches.setdefault(backend.name, {})
                    fast_key = tuple((a.shape, a.dtype) if type(a) is np.ndarray
                                     else _SCALAR_KEY[type(a)] for a in args)
                    fn = compile_program(jaxpr, backend.name)
                    arg_names = _arg_leaf_names(self.fun, args) if "int" in fast_key else None
                    run, bound = _bound(fn, consts)
                    _put(fast_cache, fast_key, (_ints_checked(run, fast_key, self.name, arg_names),
                                                bound, out_tree))
                    if type(fn) is Tiered:  # the native code replaces it once compiled
                        fn.on_native(functools.partial(_swap_native, fast_cache, fast_key,
                                                       consts, out_tree, self.name, arg_names))
        jaxpr, consts, out_tree = entry
        outs = jit_p.bind(*consts, *leaves, jaxpr=jaxpr, name=self.name, backend=self.backend)
        return tree_unflatten(out_tree, outs)

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """Stage and lower for these arguments, without running the program.

        Args:
          *args: the arguments ``fun`` would be called with (arrays,
            ``ShapeDtypeStruct`` objects or pytrees of them; static ones as values).
          **kwargs: its keyword arguments.

        Returns:
          A ``Lowered``: ``.as_text()`` is the code the backend generates,
          ``.compiler_ir()`` the staged program, ``.compile()`` the callable
          it runs.
        """
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args: Any, **kwargs: Any) -> Any:
        """Shapes and dtypes of the outputs for these arguments, without running
        the program (as ``jax.jit(f).eval_shape``): ``trace(...).out_info``."""
        return self.trace(*args, **kwargs).out_info

    def trace(self, *args: Any, **kwargs: Any) -> Traced:
        """Stage for these arguments, without lowering or running the program
        (the first ahead-of-time stage, as ``jax.jit(f).trace``).

        Args:
          *args: the arguments ``fun`` would be called with (arrays,
            ``ShapeDtypeStruct`` objects or pytrees of them; static ones as values).
          **kwargs: its keyword arguments.

        Returns:
          A ``Traced``: ``.jaxpr`` is the staged program (a ``ClosedJaxpr``),
          ``.out_info`` the output's shapes and dtypes, ``.lower()`` the next stage.

        Examples:
          >>> import tangentia as tg, tangentia.numpy as tnp
          >>> traced = tg.jit(lambda x: tnp.sin(x) * 2.0).trace(1.0)
          >>> print(traced.jaxpr)
          { lambda ; a:f64[]. let
              b:f64[] = sin a
              c:f64[] = mul b 2.0
            in (c,) }
          >>> traced.out_info
          ShapeDtypeStruct(shape=(), dtype=float64)
        """
        statics, leaves, in_tree, avals = self._signature(args, kwargs)
        dyn_args = tree_unflatten(in_tree, leaves)[0]
        jaxpr, consts, out_tree = _stage(self.fun, statics, in_tree, avals, "jit",
                                         _arg_leaf_names(self.fun, dyn_args))

        def lower():  # the next stage, from this program (f is not traced again)
            return Lowered(pe.convert_constvars_to_invars(jaxpr), consts, in_tree, out_tree,
                           get_backend(self.backend), self.name)

        return Traced(core.ClosedJaxpr(jaxpr, consts), in_tree, avals, out_tree, lower,
                      self.name)

    def _cache_size(self):
        return len(self.cache)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)


# JAX's class name, which libraries read (chex's is_traceable and assert_max_traces)
_Jitted.__name__ = _Jitted.__qualname__ = "PjitFunction"
PjitFunction = _Jitted


class Traced:
    """A program staged for some arguments: what ``jit(f).trace(*args)`` returns.

    Args:
      jaxpr: the staged program (a ``ClosedJaxpr``).
      in_tree: the pytree structure of ``(args, kwargs)`` (static ones left out).
      in_avals: the abstract values of their leaves.
      out_tree: the pytree structure of the output.
      lower: a function giving the ``Lowered`` program.
      fun_name: the function's name.

    Returns:
      (Construct it with ``jit(f).trace(*args)``.)  ``jaxpr``, ``in_avals``,
      ``out_avals``, ``out_info`` (``ShapeDtypeStruct`` pytree) and ``lower()``.

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> traced = tg.jit(lambda x, y: x @ y).trace(tnp.ones((2, 3)), tnp.ones((3, 4)))
      >>> traced.out_info.shape, float(traced.lower().compile()(tnp.ones((2, 3)), tnp.ones((3, 4)))[0, 0])
      ((2, 4), 3.0)
    """

    def __init__(self, jaxpr, in_tree, in_avals, out_tree, lower, fun_name):
        self.jaxpr = jaxpr
        self.in_tree = in_tree
        self.in_avals = tree_unflatten(in_tree, list(in_avals))
        self.out_tree = out_tree
        self.out_avals = tree_unflatten(out_tree, [v.aval for v in jaxpr.jaxpr.outvars])
        self.out_info = tree_unflatten(out_tree, [ShapeDtypeStruct(v.aval.shape, v.aval.dtype)
                                                  for v in jaxpr.jaxpr.outvars])
        self._lower = lower
        self.fun_name = fun_name

    def lower(self):
        """The next stage: the program lowered by the backend (a ``Lowered``)."""
        return self._lower()


class Lowered:
    """A program staged and lowered by one backend: what ``jit(f).lower(*args)`` returns.

    Args:
      jaxpr: the staged program (its constants are its leading inputs).
      consts: the values of those constants.
      in_tree: the pytree structure of ``(args, kwargs)``.
      out_tree: the pytree structure of the output.
      backend: the backend that lowers and compiles the program.
      name: the function's name (for error messages).

    Returns:
      (Construct it with ``jit(f).lower(*args)``.)  ``as_text()``,
      ``compiler_ir()`` and ``compile()`` give the generated code, the
      program and the compiled callable.

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> lowered = tg.jit(lambda x: tnp.sin(x) * 2.0, backend="numpy").lower(1.0)
      >>> print(lowered.compiler_ir())
      { lambda ; a:f64[]. let
          b:f64[] = sin a
          c:f64[] = mul b 2.0
        in (c,) }
      >>> print(round(float(lowered.compile()(0.5)), 6))
      0.958851
    """

    def __init__(self, jaxpr, consts, in_tree, out_tree, backend, name):
        self.jaxpr = jaxpr
        self.consts = consts
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.backend = backend
        self.name = name

    def as_text(self) -> str:
        """The code the backend generates for the program (with a first line saying
        when calls run tiered: on the NumPy backend until this code is compiled)."""
        text = self.backend.source(self.jaxpr)
        # (a text starting "# numba backend: " says why the NumPy backend runs the program
        # instead: typed PRNG keys, bfloat16; never compiled by numba, so never tiered)
        if (self.backend.slow_compile and _tiered()
                and not text.startswith(f"# {self.backend.name} backend: ")):
            text = (f"# tiered: calls of jit run the NumPy backend's code until the "
                    f"{self.backend.name} backend has compiled this in the background (from the "
                    f"second call on); results agree within rounding. "
                    f"config.update('jit_tiered', False) compiles before the first call.\n"
                    + text)
        return text

    def compiler_ir(self, dialect=None):
        """The staged program (tangentia's IR), as a ``ClosedJaxpr``; with
        ``dialect="hlo"``, as HLO text (``.as_hlo_text()``: an ``hlo_text.HloComputation``,
        JAX's ``XlaComputation``; tangentia has no XLA, so it prints this program)."""
        if dialect == "hlo":
            from .hlo_text import HloComputation
            return HloComputation(self.jaxpr, self.consts, self.name)
        return core.ClosedJaxpr(self.jaxpr, [])

    @property
    def out_info(self) -> Any:
        """The outputs' shapes and dtypes: a pytree of ``ShapeDtypeStruct`` with the
        structure of the function's output (JAX's ``Lowered.out_info``)."""
        return tree_unflatten(self.out_tree, [ShapeDtypeStruct(v.aval.shape, v.aval.dtype,
                                                               v.aval.weak_type)
                                              for v in self.jaxpr.outvars])

    def cost_analysis(self) -> None:
        """None, as JAX's when its compiler gives no estimate (XLA's FLOP counts; flax's
        ``tabulate`` counts 0 then)."""
        return None

    def compile(self, compiler_options: Any = None) -> Callable:
        """A callable taking the same arguments as the jitted function (JAX's ``Compiled``:
        its ``cost_analysis()`` is None, as the lowered program's; ``compiler_options``,
        XLA's, change nothing here)."""
        fn = compile_ahead(self.jaxpr, self.backend.name)   # (its results: new arrays)
        consts, in_tree, out_tree = self.consts, self.in_tree, self.out_tree

        @api_boundary
        def compiled(*args, **kwargs):
            leaves, tree = tree_flatten((args, kwargs))
            if tree != in_tree:
                raise TypeError(f"compiled {self.name}: called with arguments of structure "
                                f"{tree}, but it was lowered for {in_tree}")
            return tree_unflatten(out_tree, _arrays(fn(*consts, *leaves)))
        compiled.cost_analysis = self.cost_analysis   # (flax's tabulate reads it)
        compiled.as_text = self.as_text               # (JAX's Compiled.as_text)
        return compiled

    def __str__(self):
        return self.as_text()


@overload
def jit(fun: Callable, /, *, in_shardings: Any = None, out_shardings: Any = None,
        static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Iterable[str] | None = None,
        donate_argnums: int | Sequence[int] | None = None,
        donate_argnames: str | Iterable[str] | None = None, keep_unused: bool = False,
        device: Any = None, backend: str | None = None, inline: bool = False,
        compiler_options: dict[str, Any] | None = None, abstracted_axes: Any = None) -> _Jitted: ...


@overload
def jit(fun: None = None, /, *, in_shardings: Any = None, out_shardings: Any = None,
        static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Iterable[str] | None = None,
        donate_argnums: int | Sequence[int] | None = None,
        donate_argnames: str | Iterable[str] | None = None, keep_unused: bool = False,
        device: Any = None, backend: str | None = None, inline: bool = False,
        compiler_options: dict[str, Any] | None = None, abstracted_axes: Any = None) -> Callable[[Callable], _Jitted]: ...


def jit(fun: Callable | None = None, /, *, in_shardings: Any = None, out_shardings: Any = None,
        static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Iterable[str] | None = None,
        donate_argnums: int | Sequence[int] | None = None,
        donate_argnames: str | Iterable[str] | None = None, keep_unused: bool = False,
        device: Any = None, backend: str | None = None, inline: bool = False,
        compiler_options: dict[str, Any] | None = None, abstracted_axes: Any = None) -> _Jitted | Callable[[Callable], _Jitted]:
    """Stage ``fun`` into a program, compile it, and cache it per abstract signature.

    The first call with arguments of given shapes and dtypes traces ``fun``
    with abstract values into a program, which the backend compiles; later
    calls with the same signature run the compiled program.  Python control
    flow on traced values is not possible inside (use ``lax.cond``,
    ``lax.while_loop``, ...), and side effects run only while tracing (use
    ``debug.print``).  Usable as a decorator, with or without arguments.

    Args:
      fun: the function to compile. Its arguments are arrays or pytrees of
        arrays, except those marked static.
      in_shardings: accepted only as ``None`` or a pytree of ``None`` (one CPU device).
      out_shardings: the same.
      static_argnums: positions of arguments that are Python values
        (hashable); a new value compiles a new program.
      static_argnames: names of such arguments.
      donate_argnums: accepted for JAX compatibility; no effect here.
      donate_argnames: accepted for JAX compatibility; no effect here.
      keep_unused: accepted for JAX compatibility; no effect here.
      device: accepted only as ``None``.
      backend: ``"numba"`` (whole programs compiled to native code, the
        default), ``"numpy"`` (one NumPy call per operation, the reference),
        or ``None``: ``config.update("jit_backend", ...)``, else the
        ``TANGENTIA_JIT_BACKEND`` environment variable, else ``"numba"``.
        ``"cpu"`` (JAX's platform name) means the default.
      inline: accepted for JAX compatibility; no effect here.
      abstracted_axes: accepted for JAX compatibility; no effect here.
      compiler_options: accepted for JAX compatibility; no effect here.

    Returns:
      A function with the signature of ``fun``. The program is retraced only
      when argument shapes/dtypes, the pytree structure or the values of
      static arguments change. ``.lower(*args)`` stages it without running
      (``.as_text()`` shows the generated code).

    Raises:
      NotImplementedError: ``in_shardings``, ``out_shardings`` or ``device``
        is given.
      TypeError: ``fun`` is not callable, or an argument is not an array.

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> f = tg.jit(lambda x: tnp.sin(x) ** 2 + tnp.cos(x) ** 2)
      >>> float(f(0.3))
      1.0
      >>> power = tg.jit(lambda x, n: x ** n, static_argnums=1)
      >>> power(2.0, 3)
      Array(8.)
      >>> print(tg.jit(lambda x: tnp.sin(x) * 2.0).lower(1.0).compiler_ir())
      { lambda ; a:f64[]. let
          b:f64[] = sin a
          c:f64[] = mul b 2.0
        in (c,) }
    """
    for opt, val in (("in_shardings", in_shardings), ("out_shardings", out_shardings),
                     ("device", device)):
        # (a pytree of only None, as flax nnx's jit passes, leaves every sharding unset)
        if val is not None and (opt == "device" or tree_flatten(val)[0]):
            raise NotImplementedError(f"jit: {opt}={val!r} is not supported; tangentia runs on "
                                      "one CPU device (leave it unset)")
    if backend == "cpu":
        backend = None
    if fun is None:
        return lambda f: jit(f, static_argnums=static_argnums, static_argnames=static_argnames,
                             backend=backend)
    _check_callable(fun, "jit")
    if donate_argnums is not None or donate_argnames is not None:
        _check_donation(fun, static_argnums, static_argnames, donate_argnums, donate_argnames)
    return _Jitted(fun, static_argnums, static_argnames, backend)


def _check_donation(fun, static_argnums, static_argnames, donate_argnums, donate_argnames):
    """JAX's ValueError when an argument is both static and donated (by position or name,
    positions resolved through ``fun``'s signature); donation itself has no effect here."""
    donate_argnums = _index_tuple(donate_argnums)
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return
    _validate_argnums(params, donate_argnums, "donate_argnums")
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                        p.POSITIONAL_OR_KEYWORD)]

    def names(nums, argnames):
        nums = () if nums is None else (nums,) if isinstance(nums, int) else tuple(nums)
        argnames = () if argnames is None else (argnames,) if isinstance(argnames, str) \
            else tuple(argnames)
        out = set(argnames)
        for i in nums:
            if isinstance(i, int) and 0 <= i < len(positional):   # (JAX's: not negative ones)
                out.add(positional[i])
        return out
    both = names(static_argnums, static_argnames) & names(donate_argnums, donate_argnames)
    if both:
        raise ValueError("static_argnames and donate_argnames cannot intersect. Argument names "
                         f"{both} appear in both static_argnames and donate_argnames (jit: a "
                         "static argument is a Python value, it cannot be donated)")


# ---------------------------------------------------------------------------
# checkpoint (rematerialization)


def checkpoint(fun: Callable, *, prevent_cse: bool | Sequence[bool] = True,
               policy: Callable[..., bool] | None = None,
               static_argnums: int | tuple[int, ...] = (), static_argnames: str | Iterable[str] = (),
               concrete: bool = False) -> Callable:
    """Differentiate ``fun`` saving only its inputs: reverse mode recomputes
    its intermediates instead of storing them (JAX's default policy).

    The values are the same as without ``checkpoint``; only memory and work
    in reverse mode change.  ``remat`` is the same function.

    Args:
      fun: the function whose intermediates are recomputed.
      prevent_cse: accepted for JAX compatibility (the recomputation is
        never merged with the forward computation here).
      policy: ``None`` (save nothing but the inputs) or
        ``policy(prim, *in_avals, **params) -> bool`` (see
        ``tangentia.checkpoint_policies``): reverse mode saves the outputs of
        the equations it approves (matrix products, values named with
        ``checkpoint_name``, ...) and recomputes only the rest.
      static_argnums: positions of arguments that are Python values, not
        arrays.
      static_argnames: names of such arguments (positional or keyword).
      concrete: JAX's removed option; ``concrete=True`` raises (use
        ``static_argnums``).

    Returns:
      A function with ``fun``'s signature and values.

    Raises:
      TypeError: ``policy`` is neither None nor callable.
      NotImplementedError: ``concrete=True``.

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> f = tg.checkpoint(lambda x: tnp.sin(tnp.sin(x)))
      >>> print(round(float(tg.grad(f)(1.0)), 6))
      0.360039
    """
    _check_callable(fun, "checkpoint")
    if concrete:
        raise NotImplementedError(
            "The `concrete` option to `jax.checkpoint` was deprecated in JAX v0.8.2, and removed "
            "in JAX v0.10.0. In its place please use `static_argnums`. (tangentia.checkpoint "
            "marks Python-valued arguments with static_argnums / static_argnames.)")
    if policy is not None and not callable(policy):
        raise TypeError(f"checkpoint: argument 'policy' must be None or a callable "
                        f"policy(prim, *avals, **params) -> bool, got {policy!r}")
    extra = {} if policy is None else {"policy": policy}
    static_argnums, static_argnames = _resolve_statics(fun, static_argnums, static_argnames)

    @api_boundary
    @functools.wraps(fun, updated=())
    def remat_f(*args, **kwargs):
        statics, dyn_args, dyn_kwargs = _static_split(fun, args, kwargs, static_argnums,
                                                      static_argnames, "checkpoint",
                                                      hashable=False)
        leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        jaxpr, consts, out_tree = _stage(fun, statics, in_tree, map(_abstractify, leaves),
                                         "checkpoint", _arg_leaf_names(fun, dyn_args),
                                         as_program=True)
        outs = remat_p.bind(*consts, *leaves, jaxpr=jaxpr, **extra)
        return tree_unflatten(out_tree, outs)

    return remat_f


remat = checkpoint


# ---------------------------------------------------------------------------
# Tracing utilities


@overload
def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (),
               axis_env: Sequence[tuple[AxisName, int]] | None = None,
               return_shape: Literal[False] = False, abstracted_axes: Any = None
               ) -> Callable[..., core.ClosedJaxpr]: ...


@overload
def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (),
               axis_env: Sequence[tuple[AxisName, int]] | None = None, *,
               return_shape: Literal[True], abstracted_axes: Any = None
               ) -> Callable[..., tuple[core.ClosedJaxpr, Any]]: ...


def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (),
               axis_env: Sequence[tuple[AxisName, int]] | None = None, return_shape: bool = False,
               abstracted_axes: Any = None
               ) -> Callable[..., core.ClosedJaxpr | tuple[core.ClosedJaxpr, Any]]:
    """A function that traces ``fun`` and returns its program (a ``ClosedJaxpr``).

    The program is what ``jit`` compiles: one equation per primitive
    operation, printed in JAX's notation.  Transformed functions show their
    transformed programs (``make_jaxpr(grad(f))``).  The result also has
    ``.to_dot()`` (Graphviz text) and ``.show(path)`` (a picture).

    Args:
      fun: the function to trace.
      static_argnums: positions of arguments that are Python values (used
        as constants while tracing).
      axis_env: accepted for JAX compatibility; must be None (named axes
        come from ``vmap(..., axis_name=...)`` around the traced call).
      return_shape: also return the output's shapes and dtypes, as a pytree
        of ``ShapeDtypeStruct``.
      abstracted_axes: accepted for JAX compatibility; must be None.

    Returns:
      A function with ``fun``'s arguments returning the ``ClosedJaxpr``
      (``(closed_jaxpr, shapes)`` with ``return_shape``).

    Examples:
      >>> import tangentia as tg, tangentia.numpy as tnp
      >>> print(tg.make_jaxpr(lambda x, y: tnp.sin(x) * y)(1.0, 2.0))
      { lambda ; a:f64[] b:f64[]. let
          c:f64[] = sin a
          d:f64[] = mul c b
        in (d,) }
      >>> print(tg.make_jaxpr(tg.grad(tnp.sin))(1.0))
      { lambda a:f64[]=1.0; b:f64[]. let
          c:f64[] = cos b
          d:f64[] = mul a c
        in (d,) }
    """
    _check_callable(fun, "make_jaxpr")
    if axis_env is not None:
        raise NotImplementedError(f"make_jaxpr: axis_env={axis_env!r} is not supported; "
                                  "trace under vmap(..., axis_name=...) to give an axis a name")
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)

    @api_boundary
    def make(*args, **kwargs):
        statics, dyn_args, dyn_kwargs = _static_split(fun, args, kwargs, static_argnums, (),
                                                      "make_jaxpr")
        leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        try:
            avals = [_abstractify(x) for x in leaves]
        except TypeError:
            raise _invalid_argument_error(_fun_name(fun), fun, dyn_args, dyn_kwargs,
                                          "make_jaxpr") from None
        jaxpr, consts, out_tree = _stage(fun, statics, in_tree, avals, "make_jaxpr",
                                         _arg_leaf_names(fun, dyn_args))
        closed = core.ClosedJaxpr(jaxpr, consts)
        if return_shape:
            shapes = [ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in jaxpr.outvars]
            return closed, tree_unflatten(out_tree, shapes)
        return closed

    return make


@api_boundary
def eval_shape(fun: Callable, *args: Any, **kwargs: Any) -> Any:
    """Shapes and dtypes of ``fun``'s outputs, computed without running it.

    ``fun`` is traced with abstract values, so no arithmetic is done.

    Args:
      fun: the function.
      *args: its positional arguments: arrays, ``ShapeDtypeStruct`` objects or
        anything with ``.shape`` and ``.dtype``, or pytrees of them.
      **kwargs: its keyword arguments, likewise.

    Returns:
      A pytree of ``ShapeDtypeStruct`` with the structure of ``fun``'s output.

    Examples:
      >>> import tangentia as tg
      >>> tg.eval_shape(lambda x: x @ x.T, tg.ShapeDtypeStruct((3, 2), "float32"))
      ShapeDtypeStruct(shape=(3, 3), dtype=float32)
    """
    _check_callable(fun, "eval_shape")
    leaves, in_tree = tree_flatten((args, kwargs))
    avals = map(_abstractify_duck, leaves)

    def shapes_of(*a: Any, **k: Any) -> Any:   # a ShapeDtypeStruct output is its own shape,
        out_leaves, tree = tree_flatten(fun(*a, **k))   # as JAX's (lineax returns some)
        return tree_unflatten(tree, [np.broadcast_to(np.zeros((), x.dtype), x.shape)
                                     if isinstance(x, ShapeDtypeStruct) else x
                                     for x in out_leaves])

    jaxpr, _, out_tree = _stage(functools.wraps(fun)(shapes_of), (), in_tree, avals,
                                "eval_shape")
    shapes = [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in jaxpr.out_avals]
    return tree_unflatten(out_tree, shapes)

