"""Core of tangentia: abstract values, primitives, traces, tracers and the IR.

The design is "stackless": the interpreter that handles a primitive is the
*current trace*, held in a context variable (so tracing is thread-safe and
has no other global state).  Every tracer is tagged with the trace that made
it.  ``Primitive.bind`` hands the primitive to the current trace; a trace
unwraps its own tracers, treats every other value as a constant, and runs the
primitive's rule with its parent trace made current.
"""
from __future__ import annotations

import contextvars
import itertools
import sys
import threading
import typing as _typing
import weakref

import numpy as np

from . import dtypes

# ---------------------------------------------------------------------------
# Abstract values


_SHORT_DTYPE = {}


def short_dtype_name(dtype):
    name = _SHORT_DTYPE.get(dtype)
    if name is None:
        if dtype == dtypes.float0:
            name = "float0"
        elif dtypes.is_key(dtype):   # typed PRNG keys, as JAX prints them
            name = "key<fry>"
        elif dtype.kind == "b":
            name = "bool"
        elif dtype.kind == "V":   # ml_dtypes' (bfloat16 -> bf16, float8_e4m3fn -> f8_e4m3fn), as JAX
            name = (dtype.name.replace("float", "f").replace("uint", "u").replace("int", "i")
                    .replace("complex", "c"))
        else:
            name = {"f": "f", "i": "i", "u": "u", "c": "c"}.get(dtype.kind, dtype.kind) + str(8 * dtype.itemsize)
        _SHORT_DTYPE[dtype] = name
    return name


class AbstractValue:
    """The base of abstract values (JAX's ``jax.core.AbstractValue``, which libraries
    test against: lineax)."""

    __slots__ = ()


class ShapedArray(AbstractValue):
    """The abstract value of an array: its shape, dtype and weak type.

    ``weak_type`` marks values that came from Python scalars; they take the
    dtype of whatever strongly typed value they meet (NumPy 2 promotion).
    """

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype, weak_type=False, *, sharding=None):
        # (``sharding``: JAX's, which flax's nn.scan passes; one device here)
        self.shape = shape
        # a scalar type (ShapedArray((3,), np.float32)) becomes its dtype, as JAX's
        self.dtype = np.dtype(dtype) if isinstance(dtype, type) else dtype
        self.weak_type = weak_type

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __eq__(self, other):
        return (type(other) is ShapedArray and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))

    # set by tangentia.sharding (a layer above), which the package always imports
    _sharding_of = None

    @property
    def sharding(self):
        """``jax.typeof(x).sharding``: as JAX's, a ``NamedSharding`` over the empty
        ``AbstractMesh`` with no axis partitioned (one device holds every value)."""
        return ShapedArray._sharding_of(len(self.shape))

    def strip_weak(self):
        return ShapedArray(self.shape, self.dtype, False) if self.weak_type else self

    def to_tangent_aval(self):
        """The type of this value's tangents (JAX's method; libraries build ``Zero``s
        with it: equinox)."""
        return tangent_aval(self)

    def str_short(self):
        return f"{short_dtype_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_short()}{weak})"

    def __str__(self):   # as JAX's: print(jax.typeof(x)) shows f64[3]
        return self.str_short()


_NDARRAY_AVALS = {}  # (shape, dtype) -> the ShapedArray: avals are immutable, so shared


def aval_of_ndarray(x):
    key = (x.shape, x.dtype)
    aval = _NDARRAY_AVALS.get(key)
    if aval is None:
        if len(_NDARRAY_AVALS) >= 4096:
            _NDARRAY_AVALS.clear()
        aval = _NDARRAY_AVALS[key] = ShapedArray(x.shape, x.dtype, False)
    return aval


def _aval_generic(x):
    return ShapedArray((), x.dtype, False)


_AVAL_OF_TYPE = {
    np.ndarray: aval_of_ndarray,
    float: lambda x: ShapedArray((), dtypes.float64, True),
    int: lambda x: ShapedArray((), dtypes.int64, True),
    bool: lambda x: ShapedArray((), dtypes.bool_, True),
    complex: lambda x: ShapedArray((), dtypes.complex128, True),
}


def register_aval_type(t, aval_of):
    """``get_aval`` of values of exactly type ``t`` is ``aval_of(x)`` (a direct
    lookup, for a tracer type on a hot path)."""
    _AVAL_OF_TYPE[t] = aval_of


def get_aval(x):
    """Abstract value of any array-like, Python scalar or tracer."""
    f = _AVAL_OF_TYPE.get(type(x))
    if f is not None:
        return f(x)
    if isinstance(x, Tracer):
        return x.aval
    if isinstance(x, np.generic):
        return _aval_generic(x)
    if isinstance(x, np.ndarray):
        if isinstance(x, np.ma.MaskedArray):   # (exact ndarrays are in the table above)
            raise ValueError("numpy masked arrays are not supported as direct inputs to JAX "
                             "functions. Use arr.filled() to convert the value to a standard "
                             "numpy array.")
        return aval_of_ndarray(x)
    return aval_of_ndarray(as_array(x))


class JaxArrayAbstractificationError(ValueError):
    """JAX's ValueError for an object defining ``__jax_array__`` where an array is
    abstracted (a lax function's operand); the public functions of tangentia.numpy convert
    such arguments when their implementation raises it (``_array.public``)."""


def as_array(x, what="argument"):
    """Convert an array-like to an ndarray, with a clear error otherwise."""
    if hasattr(type(x), "__jax_array__"):  # (JAX honours it only in jnp.asarray/jnp.array)
        raise JaxArrayAbstractificationError(
            "Triggering __jax_array__() during abstractification is no longer supported. To "
            "avoid this error, either explicitly convert your object using jax.numpy.array(), "
            f"or register your object as a pytree. ({what} of type {type(x).__name__})")
    try:
        arr = np.asarray(x)
    except Exception as e:  # noqa: BLE001 - rethrown with context
        raise TypeError(f"Argument '{x!s:.80}' of type {type(x)} is not a valid JAX type: "
                        f"{what} of type {type(x).__name__} is not a valid array ({e})") from None
    if arr.dtype.kind in "OUS":   # JAX's wording first
        raise TypeError(f"Argument '{x!s:.80}' of type {type(x)} is not a valid JAX type: "
                        f"{what} of type {type(x).__name__} is not a valid array type")
    return arr


def is_array_like(x):
    return (type(x) in _AVAL_OF_TYPE or isinstance(x, (Tracer, np.ndarray, np.generic)))


# ---------------------------------------------------------------------------
# Errors


class TangentiaTypeError(TypeError):
    pass


class ConcretizationTypeError(TangentiaTypeError):
    """A traced value was used where Python needs a concrete value."""


class TracerArrayConversionError(TangentiaTypeError):
    """A tracer was passed to a NumPy function instead of a tangentia one."""


class UnexpectedTracerError(Exception):
    """A tracer escaped the transformation that created it (a leak)."""


class TracerBoolConversionError(ConcretizationTypeError):
    pass


class TracerIntegerConversionError(ConcretizationTypeError):
    """A traced value was used where Python needs an integer (``__index__``)."""


class JAXIndexError(IndexError):
    """tangentia's IndexErrors (``jax.errors.JAXIndexError``)."""


class NonConcreteBooleanIndexError(JAXIndexError):
    """A traced boolean mask was used as an index (its result's shape is unknown)."""


# ---------------------------------------------------------------------------
# Traces and the interpreter context


class Trace:
    """An interpreter: it decides what binding a primitive means."""

    __slots__ = ("parent", "alive", "__weakref__")

    # True for an interpreter that computes operations on values it does not
    # trace with each primitive's implementation, as eager evaluation does
    # (linearize's partial evaluator under eager evaluation): the eager
    # dispatch point then takes its fast path for arguments that are not tracers.
    eval_known = False

    def __init__(self, parent):
        self.parent = parent
        self.alive = True

    @property
    def main(self):
        """What identifies the transformation (JAX's ``trace.main``, which libraries
        compare: equinox's ``filter_jvp`` keeps the outputs whose ``_trace.main`` is the
        current trace's): the trace itself."""
        return self

    def process_primitive(self, prim, args, params):
        raise NotImplementedError

    # Call-like primitives whose meaning depends on the interpreter (a custom
    # rule is used by differentiation only) bind through these methods; each
    # interpreter module implements them for its trace class, and subclasses
    # inherit them.  ``params`` of a custom-JVP call: ``fun(*args) -> outs``,
    # ``jvp(*args, *diff_tangents) -> outs + out_tangents`` (zero tangents are
    # ``Zero`` both ways), ``num_consts`` (leading closed-over inputs, which
    # must not be differentiated), ``num_nondiff``, ``symbolic_zeros``,
    # ``name``, ``rule_name``, ``call_jaxpr`` (the primal program once staged).
    # Of a custom-VJP call: ``fun``, ``fwd(perturbed, *args) -> (outs,
    # residuals, res_tree)``, ``bwd(res_tree, *residuals, *cts) -> cts``
    # (``Zero`` for zero cotangents), ``num_consts``, ``symbolic_zeros``,
    # ``name``, ``rule_name``, ``call_jaxpr``.
    def process_custom_jvp_call(self, prim, args, params):
        raise NotImplementedError(f"{prim.name} under {self.describe()}")

    def process_custom_vjp_call(self, prim, args, params):
        raise NotImplementedError(f"{prim.name} under {self.describe()}")

    # Of a custom-vmap call (``custom_batching``): ``fun(*args) -> outs``,
    # ``rule(axis_size, in_batched, *args[num_consts:]) -> (outs, out_batched)``
    # (flat lists; batched arguments have their batch axis first), ``num_consts``
    # (leading closed-over inputs, which must not be batched), ``name``,
    # ``call_jaxpr`` (the program of ``fun``; None only under evaluation).
    def process_custom_vmap_call(self, prim, args, params):
        raise NotImplementedError(f"{prim.name} under {self.describe()}")

    def describe(self):
        return type(self).__name__

    def check_foreign(self, x):
        """Raise if ``x`` is a tracer whose transformation has ended or is suspended."""
        if x._trace.alive is not True:
            raise inactive_tracer_error(x)


class EvalTrace(Trace):
    """The outermost interpreter: run the primitive's implementation."""

    __slots__ = ()

    def process_primitive(self, prim, args, params):
        """The one place that runs a primitive's ``impl`` (``eval_primitive``):
        every eager evaluation reaches it (``bind`` outside any transformation,
        the public functions' eager branch, the known values of an eager
        linearization, the backends' fallbacks).  A ``ValueError`` of ``impl``
        is first passed to ``prim.check_args``, which may raise a clearer
        error; results are exact ``numpy.ndarray`` (never NumPy scalars nor
        the user-facing subclass)."""
        try:
            out = prim.impl(*args, **params) if params else prim.impl(*args)
        except ValueError:
            if prim.check_args is not None:
                prim.check_args(*args, **params)
            raise
        except TypeError as e:
            if "is not a valid JAX type" not in str(e):   # (that one is JAX's already)
                _check_operands(prim, args)
            raise
        except AttributeError:   # (a ufunc on an object operand: tnp.arctan2(x, None) said
            _check_operands(prim, args)   # "'float' object has no attribute 'arctan2'")
            raise
        if prim.multiple_results:
            return [o if type(o) is _ndarray else _asarray(o) for o in out]
        return out if type(out) is _ndarray else _asarray(out)

    def process_custom_jvp_call(self, prim, args, params):
        # Evaluation calls the function only: its rules never run.
        outs = params["fun"](*args)
        for o in outs:
            if not (type(o) is np.ndarray or isinstance(o, Tracer)):
                return [o if type(o) is np.ndarray or isinstance(o, Tracer) else np.asarray(o)
                        for o in outs]
        return outs if type(outs) is list else list(outs)

    process_custom_vjp_call = process_custom_jvp_call
    process_custom_vmap_call = process_custom_jvp_call

    def describe(self):
        return "eager evaluation"


_ndarray = np.ndarray
_asarray = np.asarray
_OPERAND_TYPES = (np.ndarray, np.generic, int, float, complex, list, tuple)


def _check_operands(prim, args):
    """JAX's ``TypeError`` when a ``TypeError`` of ``prim.impl`` comes from an operand that
    is no array, number or sequence (``tnp.sin(object())`` raised NumPy's "loop of ufunc
    does not support argument 0 of type object" from inside the implementation), and
    for a typed PRNG key operand (NumPy's ufuncs have no loop for its dtype)."""
    err = dtypes.key_operand_error(prim.name, [a.dtype if hasattr(a, "dtype")
                                               else dtypes.py_scalar_dtype(a) for a in args])
    if err is not None:
        raise err
    for i, a in enumerate(args):
        if isinstance(a, _OPERAND_TYPES) or isinstance(a, Tracer):
            continue
        t = type(a)
        if hasattr(t, "__jax_array__"):
            as_array(a)                      # (JAX's error for it)
        if hasattr(t, "__array__") or hasattr(t, "__array_interface__"):
            continue                         # (an array-like: the error is another one)
        raise TypeError(f"{prim.name} requires ndarray or scalar arguments, got {t} at "
                        f"position {i}.")


EVAL_TRACE = EvalTrace(None)
# ``eval_primitive(prim, args, params)``: evaluate ``prim`` now (its ``impl``, see
# ``EvalTrace.process_primitive``), whatever the current trace.
eval_primitive = EVAL_TRACE.process_primitive
# Set by ``ensure_compile_time_eval``: while staging, operations whose inputs are
# all concrete are evaluated now instead of being recorded.
compile_time_eval_ctx = contextvars.ContextVar("tangentia_compile_time_eval", default=False)


class TraceState:
    """The current interpreter of one context (one thread, or one task): ``trace``.

    A context variable holds a ``TraceState``; ``trace_state()`` gives the
    current context's, so ``trace_state().trace`` is the current interpreter
    (``current_trace()``).  Entering a transformation (``set_trace``) sets the
    variable to a new state, which only that context sees; an interpreter
    running a rule with its parent current (``JVPTrace.process_primitive``,
    ``run_in``) assigns ``trace`` of that state in place and restores it
    after, which costs an attribute store instead of a context-variable
    set and reset and the slower lookups that follow them (an eager ``grad``
    of 251 primitives: 13.16M -> 12.65M instructions).  ``ROOT_STATE``, the state of every
    context that has entered no transformation, is shared by all threads and
    never assigned: its ``trace`` is always ``EVAL_TRACE``, so an in-place
    switch from it first enters a private state (``run_in``).  A context copied
    *inside* a transformation (``contextvars.copy_context()``, or a thread that
    inherits its creator's context) holds the same state object, so it also sees
    the in-place switches while a rule runs; the package never runs such a copy
    concurrently.
    """

    __slots__ = ("trace",)

    def __init__(self, trace):
        self.trace = trace


ROOT_STATE = TraceState(EVAL_TRACE)
_trace_state = contextvars.ContextVar("tangentia_trace_state", default=ROOT_STATE)
trace_state = _trace_state.get


def current_trace():
    """The current interpreter (``EVAL_TRACE`` outside every transformation)."""
    return _trace_state.get().trace


class set_trace:
    """Context manager making ``trace`` the current interpreter (in a new
    ``TraceState`` of this context, so that a copied context or another
    thread never sees the change)."""

    __slots__ = ("trace", "token")

    def __init__(self, trace):
        self.trace = trace

    def __enter__(self):
        self.token = _trace_state.set(TraceState(self.trace))
        return self.trace

    def __exit__(self, *exc):
        _trace_state.reset(self.token)


def run_in(trace, fn, *args):
    """``fn(*args)`` with ``trace`` current: the switch an interpreter makes
    around a rule (to its parent), in place on this context's ``TraceState``
    (see there), restored after."""
    state = _trace_state.get()
    if state is ROOT_STATE:  # (shared: never assigned)
        with set_trace(trace):
            return fn(*args)
    old = state.trace
    state.trace = trace
    try:
        return fn(*args)
    finally:
        state.trace = old


class Suspended:
    """Marks a differentiation trace while a custom rule of ``name`` runs.

    A tracer of a suspended trace reaching a primitive means the custom
    function closed over a value being differentiated.
    """

    __slots__ = ("kind", "name")

    def __init__(self, kind, name):
        self.kind = kind
        self.name = name


_SUSPENDED = {}  # (kind, name) -> its Suspended mark (immutable, so shared)


def run_suspended(trace, kind, name, rule, *args):
    """``rule(*args)``: a custom rule of ``name`` run under ``trace``'s parent,
    with ``trace`` suspended (its ``alive`` is a ``Suspended``).

    A tracer of a suspended trace reaching a primitive means the custom
    function closed over a value being differentiated (reported by
    ``closure_error``).  (The name of a custom JVP rule is recorded on the
    equations staged from it by ``ad.JVPTrace.process_custom_jvp_call``:
    ``JaxprTrace.source``.)
    """
    mark = _SUSPENDED.get((kind, name))
    if mark is None:
        if len(_SUSPENDED) >= 4096:
            _SUSPENDED.clear()
        mark = _SUSPENDED[kind, name] = Suspended(kind, name)
    state = _trace_state.get()
    if state is ROOT_STATE:  # (shared: never assigned; see ``run_in``)
        with set_trace(trace):
            return run_suspended(trace, kind, name, rule, *args)
    trace.alive = mark
    old = state.trace   # the switch of ``run_in``, inline (the hot path of custom rules)
    state.trace = trace.parent
    try:
        return rule(*args)
    finally:
        state.trace = old
        trace.alive = True


class CustomRuleClosureError(UnexpectedTracerError, TypeError):
    """A custom_jvp/custom_vjp function was differentiated with respect to a closed-over value."""


def closure_error(kind, name):
    return CustomRuleClosureError(
        f"Detected differentiation of a {kind} function ({name}) with respect to a closed-over "
        f"value. That isn't supported because the custom {'JVP' if kind == 'custom_jvp' else 'VJP'} "
        f"rule only specifies how to differentiate the {kind} function with respect to explicit "
        f"input parameters. Try passing the closed-over value into the {kind} function as an "
        f"argument, and adapting the {kind} rule.")


def inactive_tracer_error(x):
    state = x._trace.alive
    if isinstance(state, Suspended):
        return closure_error(state.kind, state.name)
    return leaked_tracer_error(x)


def leaked_tracer_error(x):
    trace = x._trace
    return UnexpectedTracerError(
        f"Encountered an unexpected tracer {x.aval.str_short()} that belongs to a "
        f"{trace.describe()} which has already finished. A traced value leaked out of the "
        "function being transformed, for example by being stored in a global, an attribute "
        "or a list that outlived the call. Return the value from the transformed function "
        "instead of keeping it.")


# ---------------------------------------------------------------------------
# Primitives


class Primitive:
    """An operation with one rule per interpreter, all defined in one place.

    Attributes (rules of evaluation and staging):
      impl(*arrays, **params)             eager NumPy implementation
      abstract_eval(*avals, **params)     shape/dtype rule -> aval (or list)
      check_args(*arrays, **params)       optional: raise a clearer error when
                                          ``impl`` raised a ValueError

    The rules of the interpreters live in their own tables keyed by the
    primitive, filled by the primitive's module, so a new transformation adds
    its table without editing this class: ``ad.primitive_jvps[p] =
    rule(primals, tangents, **params) -> (primal_out, tangent_out)`` and
    ``ad.primitive_transposes[p] = rule(ct, *args, **params) -> cts per arg``
    (differentiation), ``batching.primitive_batchers[p] = rule(args, dims,
    **params) -> (out, out_dim)`` (vmap) and
    ``partial_eval.custom_partial_eval_rules[p] = rule(trace, args, params)``
    (an optional special staging rule).

    What the primitive's equations carry (declared when it is made, read by
    every walk over nested programs through ``subjaxprs``):
      program_params    the names of the parameters holding programs (a
                        ``Jaxpr``, a ``ClosedJaxpr``, or a tuple of them,
                        ``None`` entries allowed): ``("branches",)`` for ``cond``
      call_param        for a call (``jit``, ``checkpoint``, the custom-rule
                        calls): the parameter whose program takes the
                        equation's inputs and gives its outputs; implies
                        ``program_params == (call_param,)`` unless both given
      program_types(params, in_avals, out_avals)
                        for a primitive carrying programs that is not a call (a
                        loop, a branch): ``[(label, program, input types,
                        output types or None)]``, what the type checker holds
                        each program to

    How a backend compiles the primitive lives in that backend's own lowering
    table (``tangentia.compiler``), not here.
    """

    __slots__ = ("name", "multiple_results", "impl", "abstract_eval", "print_params",
                 "has_effects", "check_args", "program_params", "call_param", "program_types",
                 "__weakref__")

    def __init__(self, name, multiple_results=False, *, program_params=None, call_param=None):
        self.name = name
        self.multiple_results = multiple_results
        if program_params is None:
            program_params = () if call_param is None else (call_param,)
        elif isinstance(program_params, str):
            raise TypeError(f"Primitive {name!r}: program_params must be a tuple of parameter "
                            f"names, got the string {program_params!r}")
        program_params = tuple(program_params)
        if call_param is not None and call_param not in program_params:
            raise TypeError(f"Primitive {name!r}: call_param {call_param!r} is not among "
                            f"program_params {program_params}")
        self.program_params = program_params
        self.call_param = call_param
        self.program_types = None
        self.impl = None
        self.abstract_eval = None
        self.print_params = None
        self.has_effects = False  # kept by dead-code elimination even without used outputs
        self.check_args = None
        frame = sys._getframe(1)   # the defining module: the first caller outside core
        while frame.f_back is not None and frame.f_globals.get("__name__") == __name__:
            frame = frame.f_back      # (a subclass's __init__, such as the custom calls')
        _register_primitive(self, frame.f_globals.get("__name__", ""))

    def bind(self, *args, **params):
        return _trace_state.get().trace.process_primitive(self, args, params)

    def __repr__(self):
        return self.name


_PRIMITIVES = []    # (weak reference, defining module) of every Primitive made
_PRIMITIVES_LOCK = threading.Lock()


def _register_primitive(prim, module):
    with _PRIMITIVES_LOCK:
        _PRIMITIVES.append((weakref.ref(prim), module))


def registered_primitives(package="tangentia"):
    """Every live ``Primitive`` defined by a module of ``package`` (by default the
    library's own, once its modules are imported: ``import tangentia`` imports them
    all), in definition order: the registry the backends' and the tests' listings read."""
    prefix = package + "."
    out, seen = [], set()
    with _PRIMITIVES_LOCK:
        entries = list(_PRIMITIVES)
    for ref, module in entries:
        prim = ref()
        if prim is not None and (module == package or module.startswith(prefix)) \
                and id(prim) not in seen:
            seen.add(id(prim))
            out.append(prim)
    return out


class CustomJVPCallPrimitive(Primitive):
    """The call of a function with a custom JVP rule: the current trace's
    ``process_custom_jvp_call`` decides what it means.  Staged, its equation
    carries the function's program as ``call_jaxpr``."""

    __slots__ = ()

    def __init__(self, name):
        super().__init__(name, multiple_results=True, call_param="call_jaxpr")

    def bind(self, *args, **params):
        return _trace_state.get().trace.process_custom_jvp_call(self, args, params)

    def bind_with_trace(self, trace, args, params):
        """``bind`` with the interpreter given, and ``args`` and ``params`` as they are."""
        return trace.process_custom_jvp_call(self, args, params)


class CustomVJPCallPrimitive(Primitive):
    """The call of a function with custom forward/backward rules: the current
    trace's ``process_custom_vjp_call`` decides what it means.  Staged, its
    equation carries the function's program as ``call_jaxpr``."""

    __slots__ = ()

    def __init__(self, name):
        super().__init__(name, multiple_results=True, call_param="call_jaxpr")

    def bind(self, *args, **params):
        return _trace_state.get().trace.process_custom_vjp_call(self, args, params)

    def bind_with_trace(self, trace, args, params):
        """``bind`` with the interpreter given, and ``args`` and ``params`` as they are."""
        return trace.process_custom_vjp_call(self, args, params)


class CustomVmapCallPrimitive(Primitive):
    """The call of a function with a custom batching rule: the current trace's
    ``process_custom_vmap_call`` decides what it means.  Staged, its equation
    carries the function's program as ``call_jaxpr``."""

    __slots__ = ()

    def __init__(self, name):
        super().__init__(name, multiple_results=True, call_param="call_jaxpr")

    def bind(self, *args, **params):
        return _trace_state.get().trace.process_custom_vmap_call(self, args, params)

    def bind_with_trace(self, trace, args, params):
        """``bind`` with the interpreter given, and ``args`` and ``params`` as they are."""
        return trace.process_custom_vmap_call(self, args, params)


# ---------------------------------------------------------------------------
# Public functions.  ``prim.bind`` -> ``current_trace().process_primitive`` is
# the one dispatch route, and ``EvalTrace.process_primitive``
# (``eval_primitive``) the one place that evaluates a primitive now.  The
# public functions made here bind without ``bind``'s frame and argument
# packing, and send the values that the current interpreter would evaluate
# anyway straight to ``eval_primitive``: every value outside any
# transformation, and untraced values under an interpreter whose
# ``eval_known`` is true (the residuals computed while linearizing under eager
# evaluation).  Every such function is registered in ``EAGER_FAST_PATHS``
# (tests check each against the bound primitive).


EAGER_FAST_PATHS = []  # (primitive, public function), in definition order
# The parameters of a primitive bound without any: one shared dict (records and
# equations hold it; parameters are never mutated), not a new one per call.
_NO_PARAMS = {}


def is_eager():
    """True outside every transformation (eager evaluation is the interpreter)."""
    return _trace_state.get().trace is EVAL_TRACE


def eager_dispatch(prim, eager, nin=None, traced=None, name=None):
    """The public function of ``prim``.

    * ``nin=1`` or ``nin=2``: ``f(x)`` / ``f(x, y)`` with no parameters binds
      ``prim``; values evaluated now (every value outside any
      transformation; untraced ones under an interpreter whose
      ``eval_known`` is true) go straight to ``eval_primitive``, the one
      place that runs ``prim.impl`` (and ``prim.check_args`` on its
      ``ValueError``).  ``eager`` is the NumPy function ``prim.impl`` is
      (kept as ``f.eager``, for the boundary's warning name).
    * ``nin=None``: ``f(*args, **kwargs)``.  Eagerly ``eager(*args, **kwargs)``
      (which evaluates ``prim`` through ``eval_primitive`` with the parameters
      it derives from the arguments) gives the result unless it returns
      ``NotImplemented`` (the fast path does not apply to these arguments);
      otherwise, and under any transformation, ``traced(*args, **kwargs)``
      does (it binds primitives).

    Eager results are always ``numpy.ndarray`` (never NumPy scalars), as those
    of a bound primitive.
    """
    get = _trace_state.get  # (the current trace is get().trace)
    ndarray, asarray = np.ndarray, np.asarray
    name = name or prim.name
    no_params = _NO_PARAMS
    evaluate = eval_primitive
    if nin in (1, 2) and prim.impl is not eager:
        raise TypeError(f"eager_dispatch({name}): 'eager' must be the primitive's impl")
    if nin == 1:
        def f(x):
            trace = get().trace
            if trace is EVAL_TRACE or (trace.eval_known and not isinstance(x, Tracer)):
                return evaluate(prim, (x,), no_params)
            return trace.process_primitive(prim, (x,), no_params)
    elif nin == 2:
        def f(x, y):
            trace = get().trace
            if trace is EVAL_TRACE or (trace.eval_known and not isinstance(x, Tracer)
                                       and not isinstance(y, Tracer)):
                return evaluate(prim, (x, y), no_params)
            return trace.process_primitive(prim, (x, y), no_params)
    else:
        if traced is None:
            raise TypeError(f"eager_dispatch({name}): a function of any arity needs 'traced'")

        def f(*args, **kwargs):
            if get().trace is EVAL_TRACE:
                out = eager(*args, **kwargs)
                if out is not NotImplemented:
                    return out if type(out) is ndarray else asarray(out)
            return traced(*args, **kwargs)
        f.__wrapped__ = traced
        f.__doc__ = traced.__doc__
        f.__module__ = traced.__module__
    f.__name__ = f.__qualname__ = name
    f.primitive = prim
    f.eager = eager
    EAGER_FAST_PATHS.append((prim, f))
    return f


# ---------------------------------------------------------------------------
# Symbolic zeros (the one representation of a zero tangent or cotangent
# inside the library; ``custom_derivatives.SymbolicZero`` is the user-facing
# one, converted at the boundary of user rules)


def tangent_aval(aval):
    """The abstract value of a tangent of a value of type ``aval``."""
    return ShapedArray(aval.shape, dtypes.tangent_dtype(aval.dtype), False)


class Zero:
    """A tangent or cotangent known to be zero (never materialized)."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    @staticmethod
    def from_primal(x):
        return Zero(tangent_aval(get_aval(x)))

    def __repr__(self):
        return f"Zero({self.aval.str_short()})"


# ---------------------------------------------------------------------------
# Tracers


class Tracer:
    """A stand-in for an array while a transformation runs.

    NumPy operators and the common array methods are attached by
    ``tangentia.numpy`` (they dispatch to tangentia primitives).
    """

    __slots__ = ("_trace",)
    __array_priority__ = 1000

    @property
    def aval(self):
        raise NotImplementedError

    @property
    def shape(self):
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def ndim(self):
        return len(self.aval.shape)

    @property
    def size(self):
        return self.aval.size

    @property
    def weak_type(self):
        return self.aval.weak_type

    def __len__(self):
        shape = self.aval.shape
        if not shape:
            raise TypeError("len() of unsized object (a 0-d traced array)")
        return shape[0]

    def __iter__(self):
        shape = self.aval.shape
        if not shape:
            raise TypeError("iteration over a 0-d traced array")
        return (self[i] for i in range(shape[0]))

    # Concretization -------------------------------------------------------
    def concrete_value(self, context):
        """The concrete value behind this tracer, or a ConcretizationTypeError."""
        if self._trace.alive is not True:
            raise inactive_tracer_error(self)
        return self._trace.concrete_value(self, context)

    def __bool__(self):
        aval = self.aval
        if aval.size != 1 and self._trace.alive is True:   # JAX checks the size first
            raise ValueError(
                ("The truth value of an empty array is ambiguous. Use `array.size > 0` to check "
                 "that an array is not empty." if aval.size == 0 else
                 "The truth value of an array with more than one element is ambiguous. Use "
                 "a.any() or a.all()") + f" (bool() of a traced array {_jax_type(aval)})")
        return bool(self.concrete_value("bool"))

    def __float__(self):
        return float(self._scalar_value("float"))

    def __int__(self):
        return int(self._scalar_value("int"))

    def __complex__(self):
        return complex(self._scalar_value("complex"))

    def _scalar_value(self, context):
        aval = self.aval
        if aval.shape and self._trace.alive is True:   # JAX checks the shape first
            raise TypeError(
                "Only scalar arrays can be converted to Python scalars; got "
                f"arr.ndim={len(aval.shape)} ({context}() of a traced array {_jax_type(aval)}; "
                "index or reshape it to shape () first)")
        return self.concrete_value(context)

    def __index__(self):
        aval = self.aval
        if (aval.shape or aval.dtype.kind not in "iu") and self._trace.alive is True:
            raise TypeError(   # JAX checks the type first
                "Only integer scalar arrays can be converted to a scalar index. (a traced array "
                f"{_jax_type(aval)} was used where Python needs an integer: an index, range() "
                "or operator.index())")
        return int(self.concrete_value("index"))

    def item(self):
        return np.asarray(self.concrete_value("item")).item()

    def tolist(self):
        return np.asarray(self.concrete_value("tolist")).tolist()

    def __array__(self, dtype=None, copy=None):
        if self._trace.alive is not True:
            raise inactive_tracer_error(self)
        err = TracerArrayConversionError(   # JAX's words first
            f"The numpy.ndarray conversion method __array__() was called on traced array with "
            f"shape {_jax_type(self.aval)}\n"
            f"A traced array {self.aval.str_short()} was passed to a NumPy function that needs a "
            f"concrete array (or converted with numpy.asarray, numpy.array or a NumPy scalar "
            f"type), while running under {self._trace.describe()}. NumPy functions "
            "cannot be transformed: use the tangentia.numpy equivalent (import tangentia.numpy "
            "as tnp), or move the NumPy call outside the transformed function.")
        err.trace = self._trace
        raise err

    def __hash__(self):
        raise TypeError(f"unhashable type: traced array {self.aval.str_short()}")

    def __copy__(self):   # a traced value is immutable (as JAX's tracers)
        return self

    def __deepcopy__(self, memo):
        return self

    def __repr__(self):
        return f"Traced<{self.aval.str_short()}> with {type(self._trace).__name__}"


def _jax_type(aval):
    """An aval as JAX's messages write it: ``float32[3,4]``."""
    return f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]"


# Conversions JAX refuses for every traced value, also one whose value is known
# (under jvp / grad): their result would silently drop the derivative.
STRICT_CONVERSIONS = frozenset(("float", "complex", "tolist"))

_CONTROL_FLOW_ADVICE = (
    "Python control flow cannot depend on traced values there. Use tangentia.numpy.where "
    "or tangentia.lax.cond / while_loop for data-dependent choices, or mark the argument "
    "static (static_argnums / static_argnames of jit or checkpoint).")


def concretization_error(tracer, context, reason="", advice=_CONTROL_FLOW_ADVICE):
    """The error for converting ``tracer`` to a concrete value in ``context``:
    JAX's wording and type first, then ``reason`` and ``advice``."""
    what = {"bool": "bool() (for example an `if` or `while` on a traced value)",
            "float": "float()", "int": "int()", "complex": "complex()",
            "index": "operator.index() (an index, range() or a shape)",
            "item": ".item()", "tolist": ".tolist()"}.get(context, context)
    jt = _jax_type(tracer.aval)
    if context == "bool":   # JAX's wording and error type for bool()
        error = TracerBoolConversionError
        msg = f"Attempted boolean conversion of traced array with shape {jt}."
    elif context == "index":
        error = TracerIntegerConversionError
        msg = f"The __index__() method was called on traced array with shape {jt}"
    else:
        error = ConcretizationTypeError
        msg = ("Abstract tracer value encountered where concrete value is expected: traced "
               f"array with shape {jt}")
        if context in ("float", "int", "complex"):   # JAX's hint for casts
            msg += (f"\nThe problem arose with the `{context}` function. If trying to convert "
                    f"the data type of a value, try using `x.astype({context})` or "
                    f"`jnp.array(x, {context})` instead.")
        elif context == "item":
            msg += "\nThis occurred in the item() method of the array."
        elif context == "tolist":
            msg += f"\nThe tolist() method was called on traced array with shape {jt}."
    msg += f"\nThe traced array {tracer.aval.str_short()} was converted with {what}."
    if reason:
        msg += " " + reason
    if advice:
        msg += " " + advice
    err = error(msg)
    err.trace = tracer._trace   # which interpreter refused (api functions add argument names)
    return err


def _default_concrete_value(self, tracer, context):
    raise concretization_error(tracer, context, f"It is being traced by {self.describe()}.")


Trace.concrete_value = _default_concrete_value


# ---------------------------------------------------------------------------
# The IR: variables, literals, equations, programs

class Var:
    """A variable of the IR, typed by its abstract value."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    def __repr__(self):
        return f"Var({id(self):x}:{self.aval.str_short()})"


class Literal:
    """A scalar constant written inline in the IR."""

    __slots__ = ("val", "aval")

    def __init__(self, val, aval):
        self.val = val
        self.aval = aval

    def __repr__(self):
        return f"Literal({self.val})"


class Eqn:
    """``outputs = prim[params](*inputs)``; ``source`` names the custom rule
    that emitted it, if any (for error messages).

    ``outputs`` is a list of ``Var``.  ``inputs`` is a list whose entries are a
    ``Var`` or a ``Literal`` in every built program (``typecheck_jaxpr`` checks
    it).  Only while linearization records (``pe.LinearBuilder``, a program
    marked ``Jaxpr.inline``) may an input also be a known value held inline: a
    residual ndarray, a Python or NumPy scalar, a tracer of an outer interpreter.
    ``LinearBuilder.build`` hoists those into constvars and ``Literal``s, once,
    when a program is really needed; eager ``grad`` transposes the equations as
    recorded (``ad.backward_pass``), so it makes no ``Var`` per residual.
    An equation is never changed once made: passes make new ones.
    """

    __slots__ = ("prim", "inputs", "outputs", "params", "source")

    def __init__(self, prim, inputs, outputs, params, source=None):
        self.prim = prim
        self.inputs = inputs
        self.outputs = outputs
        self.params = params
        self.source = source

    # JAX's names for the fields, read by custom interpreters written for JAX.
    primitive = property(lambda self: self.prim, doc="The primitive (JAX's name for ``prim``).")
    invars = property(lambda self: self.inputs, doc="The inputs (JAX's name for ``inputs``).")
    outvars = property(lambda self: self.outputs, doc="The outputs (JAX's name).")


def subjaxprs(prim, params, named=False):
    """The programs (``Jaxpr`` objects) an equation of ``prim`` with ``params`` carries,
    in the order its primitive declares them (``Primitive.program_params``): a
    call's program, a loop's bodies, a ``cond``'s branches.  A ``ClosedJaxpr``
    gives its ``jaxpr``; ``None`` entries (a ``custom_linear_solve`` without a
    transpose) are skipped.  With ``named``: ``(label, program)`` pairs, the
    label being the parameter's name (``branches[1]`` for an entry of a tuple).

    Every walk over nested programs goes through this one helper (the type
    checker, dead-code elimination, the backends, pictures, ...), so a
    primitive that carries programs is seen everywhere once it declares them.
    """
    for k in prim.program_params:
        v = params.get(k)
        if type(v) is tuple or type(v) is list:
            for i, q in enumerate(v):
                if q is not None:
                    q = q.jaxpr if type(q) is ClosedJaxpr else q
                    yield (f"{k}[{i}]", q) if named else q
        elif v is not None:
            v = v.jaxpr if type(v) is ClosedJaxpr else v
            yield (k, v) if named else v


def _holds_program(value):
    """Whether a parameter's value is (or is a tuple holding) a program."""
    if isinstance(value, (tuple, list)):
        return any(_holds_program(v) for v in value)
    return isinstance(value, (Jaxpr, ClosedJaxpr))


class ProgramMemo:
    """What one owner (an interpreter, a backend) derives from programs and keeps
    as long as each program lives: transformed programs, compiled code, estimates.

    Each owner makes its own at module level (``_COMPILED = core.ProgramMemo(
    "numpy backend: compiled code")``) and only it reads and writes its entries.
    The entries are held by the program (so they die with it even when they refer
    back to it, which a dictionary keyed weakly by the program would prevent),
    under the memo object itself, so no owner sees another's and a new
    transformation or backend adds its memo without editing ``core``.  ``key``
    keeps several entries per program (one per set of nonzero tangents, ...).
    """

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def get(self, jaxpr, key=None, default=None):
        return jaxpr._memos.get(self if key is None else (self, key), default)

    def set(self, jaxpr, value, key=None):
        """Store ``value``; returns it."""
        jaxpr._memos[self if key is None else (self, key)] = value
        return value

    def setdefault(self, jaxpr, value, key=None):
        """The entry, storing ``value`` first if there is none (atomic)."""
        return jaxpr._memos.setdefault(self if key is None else (self, key), value)

    def __repr__(self):
        return f"ProgramMemo({self.name!r})"


class Jaxpr:
    """A typed first-order program: ``lambda constvars; invars. let eqns in outvars``.

    Besides the program, one fact passes read: ``all_linear`` (True when every
    equation has a linear input, as in the programs ``linearize`` makes; then
    transposition evaluates no part of it forward; None when not known), and
    ``inline`` (True for a linearization as eager ``grad`` recorded it, not built:
    its equations and outvars hold known values inline; only ``ad.backward_pass``
    takes such a program).  What interpreters and backends derive from a program
    is kept in their own ``ProgramMemo`` objects, not here.
    """

    __slots__ = ("constvars", "invars", "eqns", "outvars", "all_linear", "inline", "_memos")

    def __init__(self, constvars, invars, eqns, outvars, all_linear=None, inline=False):
        self.constvars = constvars
        self.invars = invars
        self.eqns = eqns
        self.outvars = outvars
        self.all_linear = all_linear
        # True for a linearization as recorded, not built: its equations (and
        # outvars) hold known values inline (see ``Eqn``); only ``ad.backward_pass``
        # takes such a program, and ``typecheck_jaxpr`` rejects it.
        self.inline = inline
        self._memos = {}   # the entries of every ProgramMemo, keyed by the memo

    @property
    def in_avals(self):
        return [v.aval for v in self.invars]

    @property
    def out_avals(self):
        return [v.aval for v in self.outvars]

    def __str__(self):
        return pp_jaxpr(self)

    __repr__ = __str__


class ClosedJaxpr:
    """A program together with the values of its constant variables.

    ``str(closed)`` prints the program; calling it evaluates it.

    Args:
      jaxpr: the program (a ``Jaxpr``).
      consts: the values of its constant variables, in order.
    """

    __slots__ = ("jaxpr", "consts")
    # methods installed by tangentia._jaxpr_dot (a library module), declared for type checkers
    to_dot: _typing.Callable[[], str]
    show: _typing.Callable[[str], str]

    def __init__(self, jaxpr, consts):
        self.jaxpr = jaxpr
        self.consts = list(consts)

    @property
    def in_avals(self):
        return self.jaxpr.in_avals

    @property
    def out_avals(self):
        return self.jaxpr.out_avals

    @property
    def eqns(self):
        return self.jaxpr.eqns

    @property
    def literals(self):
        """The values of the constant variables (JAX's other name for ``consts``)."""
        return self.consts

    def __call__(self, *args):
        return eval_jaxpr(self.jaxpr, self.consts, *args)

    def __str__(self):
        return pp_jaxpr(self.jaxpr, self.consts)

    __repr__ = __str__

    # ``to_dot``, ``show`` and ``_repr_svg_`` (pictures) are installed by tangentia._jaxpr_dot.


def eval_jaxpr(jaxpr, consts, *args):
    """Evaluate ``jaxpr`` by binding each equation's primitive.

    Binding goes through the current interpreter, so evaluating a program
    under a transformation transforms it.
    """
    env = {}
    for v, x in zip(jaxpr.constvars, consts):
        env[v] = x
    if len(args) != len(jaxpr.invars):
        raise TypeError(f"program takes {len(jaxpr.invars)} arguments, got {len(args)}")
    for v, x in zip(jaxpr.invars, args):
        env[v] = x
    for eqn in jaxpr.eqns:
        invals = [env[a] if type(a) is Var else a.val for a in eqn.inputs]
        out = eqn.prim.bind(*invals, **eqn.params)
        if eqn.prim.multiple_results:
            for v, o in zip(eqn.outputs, out):
                env[v] = o
        else:
            env[eqn.outputs[0]] = out
    return [env[a] if type(a) is Var else a.val for a in jaxpr.outvars]


def jaxpr_as_fun(jaxpr, consts=()):
    return lambda *args: eval_jaxpr(jaxpr, consts, *args)


# ---------------------------------------------------------------------------
# Type checking


class JaxprTypeError(TypeError):
    pass


def typecheck_jaxpr(jaxpr, in_avals=None):
    """Check a program and every program its equations carry (call bodies,
    loop bodies, ``cond`` branches, custom rules' programs), as JAX's
    ``check_jaxpr`` does: each variable is bound once and defined before use
    (a carried program sees only its own variables), each equation's outputs
    have the types its rule gives, and each carried program takes and returns
    the types its equation feeds it and expects (a loop body its carry,
    a ``scan`` body the slices of its ``xs``, ...).

    Args:
      jaxpr: the program (a ``Jaxpr``).
      in_avals: the types its inputs must have (default: its own).

    Returns:
      True.

    Raises:
      JaxprTypeError: naming the offending equation, and the carried programs
        that lead to it.
    """
    _check_program(jaxpr, in_avals, "")
    return True


def _same_type(a, b):
    return a.shape == b.shape and a.dtype == b.dtype


class LeadingTypes(list):
    """The types of a program's leading outputs (it may give more): output types
    a ``Primitive.program_types`` rule may give."""

    __slots__ = ()


def _check_types(what, got, want, where):
    """``got`` (variables or avals) have the types ``want`` (avals), in number
    and each (only the leading ones if ``want`` is ``LeadingTypes``)."""
    got = [getattr(g, "aval", g) for g in got]
    if type(want) is LeadingTypes:
        what, got = f"the leading {what[4:]}", got[:len(want)]
    if len(got) != len(want) or not all(_same_type(a, b) for a, b in zip(got, want)):
        raise JaxprTypeError(f"{where}{what} have types {[a.str_short() for a in got]} but "
                             f"{[a.str_short() for a in want]} are expected")


def _check_program(jaxpr, in_avals, where):
    if in_avals is not None:
        _check_types("the inputs", jaxpr.invars, in_avals, where)
    defined = set()
    for v in list(jaxpr.constvars) + list(jaxpr.invars):
        if v in defined:
            raise JaxprTypeError(f"{where}variable {v} is bound twice")
        defined.add(v)
    for i, eqn in enumerate(jaxpr.eqns):
        name = eqn.prim.name
        for a in eqn.inputs:
            if type(a) is Var:
                if a not in defined:
                    raise JaxprTypeError(
                        f"{where}equation {i} ({name}) uses undefined variable {a}")
            elif type(a) is not Literal:
                raise JaxprTypeError(
                    f"{where}equation {i} ({name}) has an input that is neither a Var nor a "
                    f"Literal: {type(a).__name__} (a known value held inline, as only a "
                    "linearization does before it is built)")
        in_avals_i = [a.aval for a in eqn.inputs]
        out = eqn.prim.abstract_eval(*in_avals_i, **eqn.params)
        out_avals = list(out) if eqn.prim.multiple_results else [out]
        got = [v.aval for v in eqn.outputs]
        if len(out_avals) != len(got) or not all(_same_type(a, b) for a, b in zip(out_avals, got)):
            raise JaxprTypeError(
                f"{where}equation {i} ({name}) has output types "
                f"{[a.str_short() for a in got]} but its rule gives {[a.str_short() for a in out_avals]}")
        for param, program, ins, outs in _carried_programs(eqn, in_avals_i, got):
            inner = f"{where}equation {i} ({name}), its {param}: "
            _check_program(program, ins, inner)
            if outs is not None:
                _check_types("the outputs", program.outvars, outs, inner)
        for v in eqn.outputs:
            if v in defined:
                raise JaxprTypeError(f"{where}variable {v} is bound twice")
            defined.add(v)
    for a in jaxpr.outvars:
        if type(a) is Var and a not in defined:
            raise JaxprTypeError(f"{where}output uses undefined variable {a}")


def _carried_programs(eqn, in_avals, out_avals):
    """``(label, program, input types, output types)`` of each program ``eqn``
    carries, with the types its equation feeds it and expects from it (None:
    not checked), as its primitive declares them: a call's program takes the
    equation's inputs and gives its outputs; a loop's or a branch's programs
    are typed by the primitive's ``program_types`` rule.  A parameter holding a
    program that the primitive does not declare is an error: every walk over
    nested programs (``subjaxprs``) would miss it."""
    prim, params = eqn.prim, eqn.params
    for k, v in params.items():
        if k not in prim.program_params and _holds_program(v):
            raise JaxprTypeError(
                f"the parameter {k!r} of {prim.name} holds a program, but the primitive does "
                f"not declare it (Primitive(..., program_params=...) or call_param=...): "
                "walks over nested programs would not see it")
    if prim.program_types is not None:
        return prim.program_types(params, in_avals, out_avals)
    call = prim.call_param
    return [(k, q, in_avals, out_avals) if k == call else (k, q, None, None)
            for k, q in subjaxprs(prim, params, named=True)]


# ---------------------------------------------------------------------------
# Printing


def _var_namer():
    names = {}
    counter = itertools.count()

    def name(v):
        if type(v) is not Var:  # a Literal (or a known value inline, before ``build``):
            val = v.val if type(v) is Literal else v  # its Python value, as JAX prints it
            if type(v) is not Literal and getattr(val, "ndim", 0):  # an inline array
                return f"<{get_aval(val).str_short()}>"
            if isinstance(val, (np.ndarray, np.generic)) and val.ndim == 0:
                val = val.item()
            return repr(val)
        n = names.get(v)
        if n is None:
            i = next(counter)
            s = ""
            while True:
                s = chr(ord("a") + i % 26) + s
                i = i // 26 - 1
                if i < 0:
                    break
            names[v] = n = s
        return n

    return name


def _pp_param(k, v, name, indent):
    if isinstance(v, Jaxpr):
        return f"{k}=" + _pp(v, name, indent + 2)
    if isinstance(v, ClosedJaxpr):
        return f"{k}=" + _pp(v.jaxpr, name, indent + 2, v.consts)
    if callable(v) and not isinstance(v, type):
        return f"{k}={getattr(v, '__name__', type(v).__name__)}"
    if isinstance(v, np.dtype):
        return f"{k}={v.name}"
    if isinstance(v, np.generic):
        return f"{k}={v.item()!r}"
    return f"{k}={v!r}"


_SMALL_CONST = 8  # constants of up to this many elements are printed with their values


def _const_value(x):
    """``=value`` for a small constant (scalars, arrays of up to 8 elements), else ''."""
    if isinstance(x, Tracer) or not is_array_like(x):
        return ""
    x = np.asarray(x)
    if x.size > _SMALL_CONST:
        return ""
    if x.ndim == 0:
        return f"={x.item()!r}"
    return "=" + np.array2string(x, separator=",", max_line_width=10**6).replace(" ", "")


def _pp(jaxpr, name, indent, constvals=None):
    pad = " " * indent
    decl = lambda v: f"{name(v)}:{v.aval.str_short()}"  # noqa: E731
    if constvals is None:
        constvals = [None] * len(jaxpr.constvars)
    consts = " ".join(decl(v) + _const_value(c) for v, c in zip(jaxpr.constvars, constvals))
    ins = " ".join(decl(v) for v in jaxpr.invars)
    lines = [f"{{ lambda {consts}; {ins}. let"]
    for eqn in jaxpr.eqns:
        lhs = " ".join(decl(v) for v in eqn.outputs) or "_"
        params = eqn.params
        if eqn.prim.print_params is not None:
            params = eqn.prim.print_params(params)
        ps = ""
        if params:
            ps = "[" + " ".join(_pp_param(k, v, name, indent + 4) for k, v in sorted(params.items())) + "]"
        rhs = " ".join(name(a) for a in eqn.inputs)
        lines.append(f"{pad}    {lhs} = {eqn.prim.name}{ps} {rhs}".rstrip())
    outs = ", ".join(name(a) for a in jaxpr.outvars)
    lines.append(f"{pad}  in ({outs}{',' if len(jaxpr.outvars) == 1 else ''}) }}")
    return "\n".join(lines)


def pp_jaxpr(jaxpr, consts=None):
    """The program as text; with ``consts``, small constants show their values."""
    return _pp(jaxpr, _var_namer(), 0, None if consts is None else list(consts))
