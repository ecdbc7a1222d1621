"""The user boundary: the class of eager results (``numpy.ndarray`` with JAX's
array methods), arguments defining ``__jax_array__``, and NumPy's warnings (silent
for tangentia's own computations, as JAX's; at the user's line for the user's own
NumPy code running inside).

Results handed back to the user (of ``tangentia.numpy``, ``tangentia.lax``,
``grad``, ``jit``, ``vmap``, ...) are ``ArrayImpl`` instances: a
``numpy.ndarray`` subclass, so ``isinstance(r, np.ndarray)`` holds and NumPy,
SciPy and matplotlib take them without a copy, with what JAX code calls on its
arrays (``x.at[i].set(v)``, ``x[traced_i]`` inside ``jit``,
``x.block_until_ready()``, ``x.device``, ``x.devices()``,
``x.addressable_shards``, ``x.copy_to_host_async()``).  ``.at`` and indexing
with traced indices are installed by ``tangentia.numpy`` (the layer that
defines them).

Only values at the user boundary are wrapped (``to_user``): internal values
stay exact ``numpy.ndarray``, because a NumPy ufunc costs about 0.35 us more
on a subclass.  The boundary is

* the public functions of ``tangentia.numpy``, ``tangentia.lax`` and the
  library modules: ``install_boundaries`` replaces each with a twin that wraps
  its concrete results (eager ones, and constants such as ``tnp.zeros(3)``
  inside ``jit``, so that ``tnp.zeros(3).at[i].set(v)`` works there too);
* the transformations (``api_boundary`` in ``_traceback_util``).

Tracers are never wrapped, and a constant captured by a staged program is
stored as a plain ndarray (``partial_eval``): programs never hold the class.
While a boundary function runs, NumPy's floating-point warnings of tangentia's
own computations are dropped, and those of the user's NumPy code running inside
re-issued at the user's line (``FPWarnings``).

NumPy operations on an ``ArrayImpl`` behave exactly as on ``numpy.ndarray``
(NumPy's own subclass handling: ``r + 1`` and ``np.sin(r)`` are ``ArrayImpl``,
``r[0]`` is a NumPy scalar, ``np.asarray(r)`` a plain ndarray view); pickling
round-trips the class.
"""
from __future__ import annotations

import contextvars
import functools
import sys
import types
import warnings

import numpy as np
from numpy._core import _ufunc_config

from . import core, dtypes
from .tree_util import is_tree_node, tree_flatten, tree_unflatten

_ndarray = np.ndarray


class CpuDevice:
    """The one device: the host CPU."""

    platform = "cpu"
    device_kind = "cpu"
    id = 0
    process_index = 0

    def __repr__(self):
        return "CpuDevice(id=0)"

    def __str__(self):
        return "cpu:0"


CPU = CpuDevice()


class Shard:
    """One shard of an array (``x.addressable_shards``): the whole array, on the CPU."""

    __slots__ = ("device", "index", "replica_id", "data")

    def __init__(self, device, index, replica_id, data):
        self.device = device
        self.index = index
        self.replica_id = replica_id
        self.data = data

    def __repr__(self):
        return (f"Shard(device={self.device!r}, index={self.index}, "
                f"replica_id={self.replica_id}, data={self.data})")


# What ``==``/``!=`` of an eager result compare with; other operands (an object, a str)
# get NotImplemented, as from JAX arrays (so ``x == object()`` is False, not an array).
_OPERANDS = (_ndarray, np.generic, bool, int, float, complex, list, tuple, core.Tracer)


def _array_like(x) -> bool:
    """Whether ``x`` converts to an array (a JAX array, a tensor: ``__array__``, or
    ``__jax_array__``): ``==`` compares it element by element, as NumPy's does."""
    return hasattr(x, "__jax_array__") or hasattr(x, "__array__")


def _keyed(x, y) -> bool:
    """Whether ``x == y`` of an eager result ``x`` compares typed PRNG keys (not deferred to
    a tracer ``y``)."""
    if isinstance(y, core.Tracer):
        return False
    dx, dy = x.dtype, getattr(y, "dtype", None)
    return dtypes.is_key(dx) or (dy is not None and dtypes.is_key(dy))


def _key_compared(name, x, y):
    """JAX's TypeError for ``x == y`` (``name`` "equal") or ``x != y`` ("not_equal") of a
    typed key and a value that is no key; nothing for two keys (NumPy's comparison of
    their data, the structured dtype's one field, is JAX's ``eq`` of keys)."""
    err = dtypes.key_comparison_error(name, [dtypes.operand_dtype(a) for a in (x, y)])
    if err is not None:
        raise err from None


def _key_order_error(prim_name, name, x, y):
    """JAX's TypeError for ``<``, ``<=``, ``>``, ``>=`` with a typed key operand: "lt does not
    accept dtype key<fry> at position 0." of two keys (the primitive's words), "less does
    not accept dtypes key<fry>, int64." of a key and another value (``jnp.less``'s)."""
    if not _keyed(x, y):
        return
    dts = [dtypes.operand_dtype(a) for a in (x, y)]
    both = all(dtypes.is_key(d) for d in dts)
    raise dtypes.key_operand_error(prim_name if both else name, dts) from None


class ArrayImpl(np.ndarray):
    """An eager result: a ``numpy.ndarray`` with JAX's array methods.

    Arrays live in host memory and are computed eagerly, so the JAX methods
    about devices and asynchrony have trivial answers.
    """

    __slots__ = ()

    def block_until_ready(self):
        """Results are computed eagerly: returns the array itself."""
        return self

    def copy_to_host_async(self):
        """The array is already in host memory: nothing to do."""

    def is_ready(self):
        return True

    def is_deleted(self):
        return False

    @property
    def device(self):
        """The device holding the array (the host CPU), as ``jax.Array.device``."""
        return CPU

    def devices(self):
        """The set of devices holding the array: ``{CpuDevice(id=0)}``."""
        return {CPU}

    @property
    def addressable_shards(self):
        """One shard on the CPU holding the whole array."""
        return [Shard(CPU, (slice(None),) * self.ndim, 0, self)]

    is_fully_addressable = True
    is_fully_replicated = True

    @property
    def aval(self):
        """The abstract value (``jax.typeof(x)``): shape and dtype; eager results are never
        weakly typed (they have NumPy's dtypes)."""
        return core.aval_of_ndarray(self)

    weak_type = False

    def unsafe_buffer_pointer(self):
        """The address of the first element in host memory (``jax.Array``'s; a view shares
        its base's)."""
        return self.__array_interface__["data"][0]

    # A JAX array has no in-place operators, so ``x += y`` rebinds ``x`` to a
    # new (promoted) array and leaves other references to the old one as they
    # were; NumPy's would write into ``x`` and keep its dtype.
    __iadd__ = _ndarray.__add__
    __isub__ = _ndarray.__sub__
    __imul__ = _ndarray.__mul__
    __itruediv__ = _ndarray.__truediv__
    __ifloordiv__ = _ndarray.__floordiv__
    __imod__ = _ndarray.__mod__
    __ipow__ = _ndarray.__pow__
    __imatmul__ = _ndarray.__matmul__
    __iand__ = _ndarray.__and__
    __ior__ = _ndarray.__or__
    __ixor__ = _ndarray.__xor__
    __ilshift__ = _ndarray.__lshift__
    __irshift__ = _ndarray.__rshift__

    # ``x == None`` is False and ``x != None`` True, as on JAX arrays (NumPy compares
    # elementwise, so ``None in [x, y]`` raised "truth value ... is ambiguous").  Other
    # operands go to the ufunc directly (about 0.1 us more than NumPy's own operator; its
    # slot wrapper would cost 0.2 us), and to NumPy's operator when the ufunc refuses them
    # (a tracer, which the operator defers to; a string), so results are NumPy's.
    def __eq__(self, other, _eq=np.equal, _op=_ndarray.__eq__):
        if other is None:
            return False
        if not isinstance(other, _OPERANDS) and not _array_like(other):
            return NotImplemented   # JAX's: Python then compares identities (False)
        try:
            return _eq(self, other)
        except Exception:  # noqa: BLE001 - NumPy's operator decides (defers, or raises)
            if _keyed(self, other):   # typed PRNG keys: NumPy compares their data (a key
                _key_compared("equal", self, other)   # with no key: JAX's TypeError)
            return _op(self, other)

    def __ne__(self, other, _ne=np.not_equal, _op=_ndarray.__ne__):
        if other is None:
            return True
        if not isinstance(other, _OPERANDS) and not _array_like(other):
            return NotImplemented   # (True)
        try:
            return _ne(self, other)
        except Exception:  # noqa: BLE001 - as in __eq__
            if _keyed(self, other):
                _key_compared("not_equal", self, other)
            return _op(self, other)

    # NumPy's ordering operators (the ufunc directly, then NumPy's operator, as ``__eq__``),
    # with JAX's TypeError for typed PRNG keys (NumPy's says "ufunc 'less' did not contain a
    # loop with signature matching types")
    def __lt__(self, other, _f=np.less, _op=_ndarray.__lt__):
        try:
            return _f(self, other)
        except Exception:  # noqa: BLE001 - as in __eq__
            _key_order_error("lt", "less", self, other)
            return _op(self, other)

    def __le__(self, other, _f=np.less_equal, _op=_ndarray.__le__):
        try:
            return _f(self, other)
        except Exception:  # noqa: BLE001 - as in __eq__
            _key_order_error("le", "less_equal", self, other)
            return _op(self, other)

    def __gt__(self, other, _f=np.greater, _op=_ndarray.__gt__):
        try:
            return _f(self, other)
        except Exception:  # noqa: BLE001 - as in __eq__
            _key_order_error("gt", "greater", self, other)
            return _op(self, other)

    def __ge__(self, other, _f=np.greater_equal, _op=_ndarray.__ge__):
        try:
            return _f(self, other)
        except Exception:  # noqa: BLE001 - as in __eq__
            _key_order_error("ge", "greater_equal", self, other)
            return _op(self, other)

    __hash__ = None  # (defining __eq__ would otherwise ask for one; arrays are unhashable)

    def __repr__(self):
        if self.dtype.kind == "V" and dtypes.is_key(self.dtype):
            return _key_text(self)
        return "Array" + repr(self.view(_ndarray))[5:]

    def __str__(self):
        if self.dtype.kind == "V" and dtypes.is_key(self.dtype):
            return _key_text(self)
        return _ndarray.__str__(self)

    def __format__(self, spec):
        if self.dtype.kind == "V" and dtypes.is_key(self.dtype):
            return format(_key_text(self), spec)
        return _ndarray.__format__(self, spec)


def _key_text(keys):
    """JAX's text of typed PRNG keys: their shape and dtype, then their uint32 data
    (``Array((2,), dtype=key<fry>) overlaying:`` and the (2, 2) words; NumPy's printing of
    the structured dtype iterated the keys' elements, keys of shape (), and raised)."""
    data = keys.view(_ndarray)[dtypes.KEY_FIELD]
    return f"Array({keys.shape}, dtype=key<fry>) overlaying:\n{data}"


def to_user(out):
    """``out`` as handed to the user: its ``numpy.ndarray`` leaves (pytrees
    included) viewed as ``ArrayImpl``; every other value is unchanged."""
    if type(out) is _ndarray:
        return out.view(ArrayImpl)
    t = type(out)
    if (t is tuple or t is list) and out and all([type(o) is _ndarray for o in out]):
        return t([o.view(ArrayImpl) for o in out])     # (jit's tuple of results: no flattening)
    if isinstance(out, (core.Tracer, np.ndarray, np.generic, int, float, complex, str)) or out is None:
        return out
    if isinstance(out, (tuple, list)) and all(isinstance(o, core.Tracer) for o in out):
        return out
    leaves, tree = tree_flatten(out)
    if not any(type(x) is _ndarray for x in leaves):
        return out
    return tree_unflatten(tree, [x.view(ArrayImpl) if type(x) is _ndarray else x for x in leaves])


# ---------------------------------------------------------------------------
# NumPy's floating-point warnings (divide by zero, invalid value, overflow) of
# tangentia's own computations are silent, as JAX's computations are (log(0) is
# -inf, 0/0 NaN, by IEEE, without a word; flax's and optax's tests, which make
# warnings errors, rely on it): while a public function runs, NumPy's "warn" modes
# become "log" modes whose writer drops a warning raised by code of tangentia (a
# primitive's impl, a compiled program, NumPy or SciPy code they call) and re-issues
# one raised by the user's own NumPy code running inside (a ``pure_callback``, a
# rule computing with ``numpy``) at its line, with NumPy's text, once per line in
# each outermost call, as NumPy itself would.  Overflow is ignored outright (the
# idioms that select a finite branch with ``where``, the stable softplus
# ``where(x > 0, x + log1p(exp(-x)), log1p(exp(x)))``, overflow by design in the
# branch they discard; no frame is looked at).  The user's own NumPy settings
# ("ignore", "raise", their own callback, np.errstate blocks) are kept.

_EXTOBJ = _ufunc_config._extobj_contextvar  # NumPy's error state (a context variable)
_FP_KINDS = ("divide", "over", "under", "invalid")
_HELPER_MODULES = ("numpy", "scipy", "numba", "ml_dtypes", "functools", "contextlib")


_SILENT = object()


def _user_frame():
    """The frame of the user's code whose NumPy call raised the warning: the innermost
    frame outside NumPy, SciPy and the helpers they use, unless that is tangentia's own
    code (a module of the package, a program it generated) or a backward pass
    (``BackwardPass``): ``_SILENT`` then."""
    frame = sys._getframe(2)
    stop = _BACKWARD_CALLER.get()
    while frame is not None:
        if frame is stop:   # tangentia's own backward pass, not a rule of the user's
            return _SILENT
        top = (frame.f_globals.get("__name__") or "").split(".", 1)[0]
        if top == "tangentia" or frame.f_code.co_filename.startswith("<tangentia"):
            return _SILENT
        if top not in _HELPER_MODULES:
            return frame
        frame = frame.f_back
    return None


class _FPLog:
    """NumPy's "log" target: ``write("Warning: divide by zero encountered in log\\n")``
    re-issues the warning at the user's line, once per line until ``seen`` is cleared
    (by the outermost boundary's entry)."""

    __slots__ = ("seen",)

    def __init__(self):
        self.seen = set()

    def write(self, text):
        msg = text.strip()
        if msg.startswith("Warning: "):
            msg = msg[9:]
        frame = _user_frame()
        if frame is _SILENT:
            return
        if frame is None:
            warnings.warn(msg, RuntimeWarning, stacklevel=2)
            return
        key = (frame.f_code.co_filename, frame.f_lineno)
        if key in self.seen:   # this line already warned in this call
            return
        self.seen.add(key)
        g = frame.f_globals
        where = (msg, RuntimeWarning, key[0], key[1], g.get("__name__"),
                 g.setdefault("__warningregistry__", {}))
        try:
            warnings.warn_explicit(*where, module_globals=g)
        except ImportError:
            # ``python -c`` and scripts read from stdin: ``__main__``'s loader is the
            # built-in importer, whose get_source (asked for the warning's source line
            # before any filter applies) raises; the line is then simply not shown.
            warnings.warn_explicit(*where)


class FPWarnings:
    """Makes NumPy warnings raised while ``name`` runs point at the user's line:
    ``token = w.enter()`` ... ``w.exit(token)``.  The token is None when the
    state is kept as it is (inside another boundary, which already redirects
    the warnings, or under the user's own callback): no context write then."""

    __slots__ = ("name", "pair")

    def __init__(self, name):
        self.name = name
        # (the user's error state, ours, our log writer), replaced atomically
        self.pair = (None, None, None)

    def __reduce__(self):  # functions holding one travel with (cloud)pickle; states do not
        return FPWarnings, (self.name,)

    @staticmethod
    def exit(token):
        if token is not None:
            _EXTOBJ.reset(token)

    def enter(self):
        user = _EXTOBJ.get()
        pair = self.pair
        if pair[0] is not user:
            pair = self.pair = (user,) + _derive(user)
        if pair[1] is user:
            return None
        seen = pair[2].seen
        if seen:   # a new outermost call: each line may warn again
            seen.clear()
        return _EXTOBJ.set(pair[1])


def _derive(user):
    """(our error state, its log writer) for the user's state ``user`` (current)."""
    modes = _ufunc_config._get_extobj_dict()  # of ``user``, the current state
    if any(modes[k] in ("call", "log") for k in _FP_KINDS) or "warn" not in modes.values():
        return user, None  # the user's own callback, or nothing to redirect: keep theirs
    log = _FPLog()
    return _ufunc_config._make_extobj(
        call=log, **{k: ("ignore" if k == "over" else "log")
                     for k in _FP_KINDS if modes[k] == "warn"}), log


# The frame that runs a backward pass (``ad.backward_pass``), while it runs.
_BACKWARD_CALLER = contextvars.ContextVar("tangentia_backward_caller", default=None)


class BackwardPass:
    """``token = BackwardPass.enter()`` ... ``BackwardPass.exit(token)`` around a
    backward pass: the floating-point warnings of tangentia's own cotangent arithmetic
    are dropped meanwhile (``0 * inf`` where a ``where`` discarded an infinite branch,
    the derivative of ``log`` at 0: NaN or inf cotangents, silently, as in JAX; the
    primal computation has already warned at the user's line).  The user's own rules
    (a custom_vjp's ``bwd``) run there still warn, at their line."""

    @staticmethod
    def enter():
        return _BACKWARD_CALLER.set(sys._getframe(1))

    @staticmethod
    def exit(token):
        _BACKWARD_CALLER.reset(token)


# ---------------------------------------------------------------------------
# ``__jax_array__``: JAX's numpy functions (and jax.nn, jax.scipy) take an object that
# converts itself by ``x.__jax_array__()`` (flax nnx's ``Variable``, equinox's wrappers) as
# that array, eagerly and under every transformation; lax's functions raise (JAX's
# "Triggering __jax_array__() during abstractification" ValueError, ``core.as_array``).
# The boundary twins, the one point where user inputs enter, convert such arguments,
# positional and keyword, and the elements of list and tuple arguments
# (``concatenate([v, w])``): the unary and binary ones before anything else sees them
# (their types are looked up in ``_NO_JAX_ARRAY``, the types seen without the method: one
# set lookup per argument on the hot paths), the others when their implementation refuses
# one (``core.as_array``'s JaxArrayAbstractificationError, raised before anything is
# computed with it): a call without such an argument pays nothing (a scan of the
# arguments cost 0.2-0.8 us of a 3-5 us eager call).

JaxArrayError = core.JaxArrayAbstractificationError
_NO_JAX_ARRAY = {_ndarray, ArrayImpl, float, int, bool, complex, str, type(None), slice, dict,
                 type(Ellipsis), np.float64, np.float32, np.int64, np.int32, np.bool_,
                 np.dtype, type, types.FunctionType}
_NO_JAX_ARRAY_LIMIT = 4096   # (a program making classes in a loop cannot grow it forever)


def _converts(t) -> bool:
    """Whether values of type ``t`` convert by ``__jax_array__`` (learns ``t`` otherwise;
    lists and tuples, whose elements may, are never learned)."""
    if hasattr(t, "__jax_array__") and not issubclass(t, (_ndarray, np.generic)):
        return True
    if t is list or t is tuple:
        return False
    if len(_NO_JAX_ARRAY) > _NO_JAX_ARRAY_LIMIT:
        _NO_JAX_ARRAY.clear()
        _NO_JAX_ARRAY.update((_ndarray, ArrayImpl, float, int, bool, complex))
    _NO_JAX_ARRAY.add(t)
    return False


def _needs_conversion(values) -> bool:
    """Whether any of ``values`` (or of the elements of a list or tuple among them)
    converts by ``__jax_array__``."""
    plain = _NO_JAX_ARRAY
    for a in values:
        t = type(a)
        if t in plain:
            continue
        if t is list or t is tuple:
            if a and not all(map(plain.__contains__, map(type, a))) and any(
                    type(e) not in plain and _converts(type(e)) for e in a):
                return True
            continue
        if _converts(t):
            return True
    return False


def _jitted_conversion(values, name):
    """``values`` converted by ``_from_jax_array`` for a unary or binary function, which
    JAX compiles with its ``jit``: there an object defining ``__jax_array__`` is taken only
    if it is also a pytree (flattened to its array, as nnx's ``Variable``s are); another
    raises JAX's abstractification error, as JAX's ``jnp.sin(obj)`` does."""
    for a in values:
        if _converts(type(a)) and not is_tree_node(type(a)):
            core.as_array(a, f"{name}'s argument")      # (raises JAX's ValueError)
    return tuple(_from_jax_array(a) for a in values)


def _from_jax_array(a):
    """``a`` itself, or what its ``__jax_array__`` gives (repeatedly, as JAX's asarray;
    a list or tuple: its elements so)."""
    t = type(a)
    if t is list or t is tuple:
        return t(_from_jax_array(e) for e in a)
    for _ in range(100):   # (an object returning itself would loop: JAX recurses)
        if type(a) in _NO_JAX_ARRAY or not _converts(type(a)):
            return a
        a = a.__jax_array__()
    raise TypeError(f"__jax_array__ of {t.__name__} does not give an array after 100 calls")


_API_LABELS = {"_Jitted": "jit", "Lowered": "jit", "_pullback": "vjp"}


def api_label(fun):
    """The public name of a transformation's entry point ``fun`` (for messages)."""
    code = getattr(fun, "__code__", None)  # its own name, even if it took the user's
    outer = (code.co_qualname if code is not None else fun.__qualname__).split(".", 1)[0]
    return _API_LABELS.get(outer, outer)


def public(fn, module, name, jax_array=True):
    """The twin of ``fn`` that is ``module.name``: the same function, whose
    concrete results (eager ones, and constants computed under a
    transformation, such as ``tnp.zeros(3)`` inside ``jit``) are handed to the
    user as ``ArrayImpl``, and which (``jax_array``) takes an argument defining
    ``__jax_array__`` as the array that gives (see ``_from_jax_array``).

    The unary and binary functions made by ``core.eager_dispatch`` are
    ``fn``'s route itself, with the boundary around it (no extra call on the
    hot path of eager ``grad``): values evaluated now (eagerly, with NumPy's
    warnings redirected; arrays under an interpreter that evaluates untraced
    values, ``Trace.eval_known``) go to ``core.eval_primitive``, the one place
    that runs a primitive's ``impl``, as plain ndarrays; everything else binds
    the primitive.
    """
    get = core.trace_state  # (the current trace is get().trace)
    EVAL = core.EVAL_TRACE
    evaluate = core.eval_primitive
    prim = getattr(fn, "primitive", None)
    eager = getattr(fn, "eager", None)
    enter = FPWarnings(eager.__name__ if isinstance(eager, np.ufunc) else name).enter
    reset = _EXTOBJ.reset
    no_params = core._NO_PARAMS  # (shared, as ``fn`` binds with it: no dict per call)
    plain = _NO_JAX_ARRAY
    if prim is None or eager is None or hasattr(fn, "__wrapped__"):
        def twin(*args, **kwargs):
            try:
                if get().trace is not EVAL:  # the transformation's boundary redirects warnings
                    return to_user(fn(*args, **kwargs))
                token = enter()
                try:
                    return to_user(fn(*args, **kwargs))
                finally:
                    if token is not None:
                        reset(token)
            except JaxArrayError:
                # (an argument defining __jax_array__ reached an abstraction, core.as_array:
                # nothing was computed with it; converted here, once, at no cost to others)
                if not jax_array or not (_needs_conversion(args)
                                         or kwargs and _needs_conversion(kwargs.values())):
                    raise
            except Exception:
                # (a dtype named by a string NumPy learns only from ml_dtypes, "bfloat16",
                # before anything imported it: imported now, and the call made again)
                if not dtypes.load_named(args, kwargs.values()):
                    raise
            return twin(*_from_jax_array(args),
                        **{k: _from_jax_array(v) for k, v in kwargs.items()})
    elif fn.__code__.co_argcount == 1:
        def twin(x):
            trace = get().trace
            t = type(x)
            if t is not _ndarray and t not in plain and jax_array and _needs_conversion((x,)):
                return twin(*_jitted_conversion((x,), name))
            if trace is EVAL:
                token = enter()
                try:
                    return evaluate(prim, (x.view(_ndarray) if t is ArrayImpl else x,),
                                    no_params).view(ArrayImpl)
                finally:
                    if token is not None:
                        reset(token)
            if (t is _ndarray or t is ArrayImpl) and trace.eval_known:
                return evaluate(prim, (x if t is _ndarray else x.view(_ndarray),),
                                no_params).view(ArrayImpl)
            out = trace.process_primitive(prim, (x,), no_params)
            return out if type(out) is not _ndarray else out.view(ArrayImpl)
    else:
        def twin(x, y):
            trace = get().trace
            tx, ty = type(x), type(y)
            if ((tx is not _ndarray and tx not in plain or ty is not _ndarray and ty not in plain)
                    and jax_array and _needs_conversion((x, y))):
                return twin(*_jitted_conversion((x, y), name))
            if trace is EVAL:
                token = enter()
                try:
                    return evaluate(prim, (x.view(_ndarray) if tx is ArrayImpl else x,
                                           y.view(_ndarray) if ty is ArrayImpl else y),
                                    no_params).view(ArrayImpl)
                finally:
                    if token is not None:
                        reset(token)
            if ((tx is _ndarray or tx is ArrayImpl) and (ty is _ndarray or ty is ArrayImpl)
                    and trace.eval_known):
                return evaluate(prim, (x if tx is _ndarray else x.view(_ndarray),
                                       y if ty is _ndarray else y.view(_ndarray)),
                                no_params).view(ArrayImpl)
            out = trace.process_primitive(prim, (x, y), no_params)
            return out if type(out) is not _ndarray else out.view(ArrayImpl)
    functools.update_wrapper(twin, fn)
    twin.__module__ = module
    twin.__name__ = twin.__qualname__ = name
    twin.user_boundary = True
    return twin


# Modules whose functions take ``__jax_array__`` arguments as they are, as JAX's: lax (its
# array functions then raise JAX's "Triggering __jax_array__() during abstractification",
# ``core.as_array``; its control flow takes pytrees), random (JAX's random functions raise
# "invalid PRNG key data" for such a key), and the functions of pytrees and functions
# (scipy.optimize's ``x0``, odeint's ``y0``: a pytree there is flattened, never converted).
_KEEP_JAX_ARRAY = ("tangentia.lax", "tangentia.random", "tangentia.scipy.optimize",
                   "tangentia.scipy.integrate", "tangentia.scipy.sparse",
                   "tangentia.experimental")


def install_boundaries(*modules):
    """Replace the public functions of ``modules`` (their ``__all__``, else the
    functions they define) by ``public`` twins.  Internal code keeps calling
    the functions it imported from their defining modules, so its values are
    never wrapped."""
    for mod in modules:
        jax_array = not mod.__name__.startswith(_KEEP_JAX_ARRAY)
        twins = {}
        names = getattr(mod, "__all__", None)
        if names is None:  # the functions the module defines
            names = [n for n, v in vars(mod).items() if not n.startswith("_") and getattr(
                v, "__module__", None) == mod.__name__]
        for name in names:
            fn = getattr(mod, name, None)
            if (not isinstance(fn, types.FunctionType) or getattr(fn, "user_boundary", False)
                    or not fn.__module__.startswith("tangentia")):
                continue
            if id(fn) not in twins:
                twins[id(fn)] = public(fn, mod.__name__, name, jax_array)
            setattr(mod, name, twins[id(fn)])
