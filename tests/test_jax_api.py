"""The core transformations' public behaviour where JAX code relies on it (JAX's api_test,
core part): the error types and the leading words of their messages, argument handling,
ShapeDtypeStruct and eval_shape's duck typing. Each case is a regression test for a
difference found by running JAX's api_test against tangentia."""
import copy
import re

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp


def _starts(text):
    """A `match=` pattern: the message begins with JAX's words (our detail may follow)."""
    return "^" + re.escape(text)


# --- jit and friends: what counts as a function --------------------------------------------

@pytest.mark.parametrize("transform", [tg.jit, tg.grad, tg.vmap, tg.make_jaxpr])
def test_non_callable_is_rejected_with_jax_words(transform):
    with pytest.raises(TypeError, match=_starts("Expected a callable value, got 7")):
        transform(7)


def test_generator_function_is_rejected():
    def counter(n):
        yield n + 1

    with pytest.raises(TypeError, match=_starts(
            "Expected a function, got a generator function: counter")):
        tg.jit(counter)


# --- grad: argnums and the scalar output ---------------------------------------------------

def test_grad_argnums_needs_positional_arguments():
    df = tg.grad(lambda a, b: a * b, argnums=1)
    with pytest.raises(TypeError, match=_starts(
            "differentiating with respect to argnums=1 requires at least 2 positional "
            "arguments to be passed by the caller, but got only 1 positional arguments.")):
        df(2.0, b=3.0)
    assert df(2.0, 3.0) == 2.0


@pytest.mark.parametrize("out, words", [
    (lambda x: tnp.ones((2, 3)) * x, "Output had shape: (2, 3)."),
    (lambda x: (x, x), "Output was a tuple of length 2."),
])
def test_grad_of_non_scalar_output(out, words):
    with pytest.raises(TypeError, match=_starts(
            "Gradient only defined for scalar-output functions. " + words)):
        tg.grad(out)(1.5)


# --- jvp: primals and tangents ---------------------------------------------------------------

def test_jvp_argument_kinds_and_structures():
    f = lambda x, y: x * y
    with pytest.raises(TypeError, match=_starts(
            "primal and tangent arguments to jax.jvp must be tuples or lists; found float "
            "and tuple.")):
        tg.jvp(f, 1.0, (1.0,))
    # a list of tangents for a tuple of primals: JAX compares the two trees, not their leaves
    with pytest.raises(TypeError, match=_starts(
            "primal and tangent arguments to jax.jvp must have the same tree structure")):
        tg.jvp(lambda x: 2 * x, (1.0,), [1.0])
    with pytest.raises(TypeError, match=_starts(
            "primal and tangent arguments to jax.jvp must have the same tree structure")):
        tg.jvp(f, (1.0, 2.0), (1.0,))
    # the same kind on both sides is fine, whichever it is
    assert tg.jvp(f, [2.0, 3.0], [1.0, 0.0]) == (6.0, 3.0)


def test_jvp_tangent_dtype_and_shape():
    with pytest.raises(TypeError, match=_starts(
            "primal and tangent arguments to jax.jvp do not match; dtypes must be equal")):
        tg.jvp(lambda x: -x, (np.float16(2),), (np.float32(4),))
    with pytest.raises(ValueError, match=_starts(
            "jvp called with different primal and tangent shapes")):
        tg.jvp(lambda x: -x, (np.ones(3),), (np.ones(2),))


# --- vjp's pullback and linearize's f_jvp check what they are given ----------------------------

def test_vjp_cotangent_structure_and_type():
    y, pullback = tg.vjp(lambda a, b: a * b, np.float32(3), np.float32(4))
    with pytest.raises(ValueError, match=_starts("unexpected tree structure.")):
        pullback((np.float32(1), np.float32(1)))
    with pytest.raises(ValueError, match=_starts(
            "unexpected JAX type (e.g. shape/dtype) for argument to VJP function: got "
            "float16[], but expected float32[]")):
        pullback(np.float16(1))
    with pytest.raises(ValueError, match=_starts(
            "unexpected JAX type (e.g. shape/dtype) for argument to VJP function: got "
            "float32[2], but expected float32[]")):
        pullback(np.ones(2, np.float32))
    # a cotangent of the output's dtype, or a Python scalar (weakly typed), is accepted
    assert pullback(np.float32(2)) == (8.0, 6.0)
    ga, gb = pullback(2.0)
    assert (ga, gb) == (8.0, 6.0) and ga.dtype == np.float32


def test_linearized_function_checks_tangents():
    x = np.arange(3.0)
    for f in (tnp.sum, tg.jit(tnp.sum)):
        y, f_jvp = tg.linearize(f, x)
        with pytest.raises(ValueError, match=_starts(
                "linearized function called on tangent values inconsistent with the original "
                "primal values")):
            f_jvp(np.ones((3, 2)))
        assert f_jvp(np.array([1.0, 2.0, 4.0])) == 7.0


# --- ShapeDtypeStruct and eval_shape ---------------------------------------------------------

def test_shape_dtype_struct_len():
    assert len(tg.ShapeDtypeStruct((4, 2), np.float32)) == 4
    with pytest.raises(TypeError, match=_starts("len() of unsized object")):
        len(tg.ShapeDtypeStruct((), np.float32))


def test_eval_shape_accepts_any_object_with_shape_and_dtype():
    class Spec:
        def __init__(self, shape, dtype):
            self.shape, self.dtype = shape, dtype

    out = tg.eval_shape(lambda a, b: a @ b + 1.0, Spec((3, 4), np.float32), Spec([4, 5], "float32"))
    assert out == tg.ShapeDtypeStruct((3, 5), np.float32)
    with pytest.raises(TypeError, match="not a valid JAX type"):
        tg.eval_shape(lambda a: a, object())


# --- values that are not arrays, and traced values used as concrete ones ----------------------

def test_non_array_argument_message():
    with pytest.raises(TypeError, match=_starts(
            "Argument 'spam' of type <class 'str'> is not a valid JAX type")):
        tg.grad(lambda s: s)("spam")


@pytest.mark.parametrize("cast", [float, int, complex])
def test_casting_a_traced_value_suggests_astype(cast):
    with pytest.raises(tg.ConcretizationTypeError,
                       match=re.escape(f"try using `x.astype({cast.__name__})`")):
        tg.jit(lambda x: cast(x))(2.5)


def test_numpy_function_on_a_tracer():
    with pytest.raises(tg.TracerArrayConversionError, match=_starts(
            "The numpy.ndarray conversion method __array__() was called on traced array with "
            "shape float64[2]")):
        tg.grad(lambda x: np.sum(np.sin(x)))(np.ones(2))


def test_copying_a_traced_value():
    def f(x):
        y = copy.deepcopy(x) * 2.0
        return copy.copy(y) + x

    assert tg.jit(f)(1.5) == 4.5
    assert tg.grad(f)(1.5) == 3.0
    np.testing.assert_array_equal(tg.vmap(f)(np.arange(3.0)), [0.0, 3.0, 6.0])


# --- vmap's axis specifications ---------------------------------------------------------------

def test_vmap_axis_specification_errors():
    f = lambda a, b: a
    with pytest.raises(ValueError, match=_starts(
            "vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
            "positional arguments passed to the function, but got len(in_axes)=3, len(args)=2")):
        tg.vmap(f, in_axes=(0, 0, 0))(np.ones(2), np.ones(2))
    for spec in ("in_axes", "out_axes"):
        with pytest.raises(TypeError, match=_starts(
                f"vmap {spec} must be an int, None, or (nested) container with those types as "
                "leaves")):
            tg.vmap(lambda a: a, **{spec: (np.array([0.0]),)})(np.ones(2))
    with pytest.raises(ValueError, match=_starts(
            "vmap out_axes specification must be a tree prefix of the corresponding value")):
        tg.vmap(lambda a: a, out_axes=(0, 1))(np.ones(2))
    with pytest.raises(ValueError, match=_starts(
            "vmap must have at least one non-None value in in_axes")):
        tg.vmap(lambda a: a, in_axes=None)(np.ones(2))


@pytest.mark.parametrize("shape, axis, rank", [((), 0, 1), ((4,), 1, 2), ((4, 2), -3, 3)])
def test_vmap_axis_beyond_the_rank(shape, axis, rank):
    with pytest.raises(ValueError, match=_starts(
            f"vmap was requested to map its argument along axis {axis}, which implies that its "
            f"rank should be at least {rank}, but is only {len(shape)}")):
        tg.vmap(lambda a: a, in_axes=axis)(np.ones(shape))


def test_vmap_inconsistent_sizes_lists_each_size():
    def h(u, v, w):
        return u.sum() + v.sum() + w.sum()

    a, b = np.ones((5, 3)), np.ones((5, 2))
    with pytest.raises(ValueError, match=_starts(
            "vmap got inconsistent sizes for array axes to be mapped:\n"
            "  * most axes (2 of them) had size 5, e.g. axis 0 of argument u of type "
            "float64[5,3];\n"
            "  * one axis had size 2: axis 1 of argument v of type float64[5,2]")):
        tg.vmap(h, in_axes=(0, 1, 0))(a, b, a)


# --- has_aux, reduce_axes, wrapped names -------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda f: tg.grad(f, has_aux=True)(2.0),
    lambda f: tg.vjp(f, 2.0, has_aux=True),
    lambda f: tg.linearize(f, 2.0, has_aux=True),
    lambda f: tg.jvp(f, (2.0,), (1.0,), has_aux=True),
    lambda f: tg.jacfwd(f, has_aux=True)(2.0),
])
def test_has_aux_needs_a_pair(call):
    with pytest.raises(TypeError, match=_starts(
            "expected function with aux output to return a two-element tuple, but got")):
        call(lambda x: x * x)


def test_has_aux_results():
    (v, aux), g = tg.value_and_grad(lambda x: (x ** 2, {"half": x / 2}), has_aux=True)(3.0)
    assert (v, aux["half"], g) == (9.0, 1.5, 6.0)
    y, ty, aux = tg.jvp(lambda x: (x * 2, x + 1), (3.0,), (1.0,), has_aux=True)
    assert (y, ty, aux) == (6.0, 2.0, 4.0)


def test_reduce_axes_is_rejected_as_in_jax():
    for make in (lambda: tg.grad(lambda x: x, reduce_axes=("batch",)),
                 lambda: tg.value_and_grad(lambda x: x, reduce_axes=("batch",))):
        with pytest.raises(NotImplementedError, match=_starts(
                "reduce_axes argument to grad is deprecated")):
            make()
    with pytest.raises(NotImplementedError, match=_starts(
            "reduce_axes argument to transpose is deprecated")):
        tg.linear_transpose(lambda x: x, 1.0, reduce_axes=("batch",))
    assert tg.grad(lambda x: 3 * x, reduce_axes=())(1.0) == 3.0


def test_jacobians_keep_the_function_name():
    def energy(x):
        return x ** 2

    for t in (tg.jacfwd, tg.jacrev, tg.hessian, tg.grad, tg.jit, tg.vmap):
        assert t(energy).__name__ == "energy"


# --- jit's static arguments --------------------------------------------------------------------

def test_static_argument_must_be_hashable():
    f = tg.jit(lambda x, n: x * len(n), static_argnums=1)
    with pytest.raises(ValueError, match=_starts(
            "Non-hashable static arguments are not supported. An error occurred while trying to "
            "hash an object of type <class 'list'>, [1, 2].")):
        f(2.0, [1, 2])
    assert f(2.0, (1, 2)) == 4.0


def test_static_argnums_and_argnames_checked_against_the_signature():
    with pytest.raises(ValueError, match=_starts(
            "Jitted function has static_argnums=(2,), but only accepts 2 positional "
            "arguments.")):
        tg.jit(lambda x, y: x, static_argnums=2)
    with pytest.raises(ValueError, match=_starts(
            "Jitted function has invalid argnames {'scale'} in static_argnames.")):
        tg.jit(lambda x, y: x, static_argnames="scale")
    # *args and **kwargs can take anything, so nothing is rejected
    assert tg.jit(lambda *xs: xs[0] * xs[2], static_argnums=2)(2.0, 0.0, 4) == 8.0
    assert tg.jit(lambda x, **kw: x * kw["scale"], static_argnames="scale")(2.0, scale=5) == 10.0
    assert tg.jit(lambda x, y: x + y, static_argnums=-1)(1.0, 2) == 3.0


# --- ShapeDtypeStruct's JAX attributes, jit(f).eval_shape, linearize's tangent tree --------------

def test_shape_dtype_struct_update_sharding_and_weak_repr():
    s = tg.ShapeDtypeStruct((2, 5), np.float32)
    assert s.sharding is None
    assert s.update(shape=(7,)) == tg.ShapeDtypeStruct((7,), np.float32)
    assert s.update(dtype=np.int8).dtype == np.int8 and s.shape == (2, 5)
    with pytest.raises(TypeError, match="unexpected fields"):
        s.update(size=3)
    weak = tg.eval_shape(lambda x: 0.5, np.ones(3))
    assert weak.weak_type and repr(weak) == "ShapeDtypeStruct(shape=(), dtype=float64, weak_type=True)"


def test_jitted_function_eval_shape():
    f = tg.jit(lambda x, n: tnp.tile(x, n), static_argnums=1)
    out = f.eval_shape(tg.ShapeDtypeStruct((3,), np.float32), 4)
    assert out == tg.ShapeDtypeStruct((12,), np.float32)


def test_linearized_function_tangent_structure():
    y, f_jvp = tg.linearize(lambda a, b: a * b, 2.0, 5.0)
    with pytest.raises(TypeError, match=_starts("expected PyTreeDef((*, *)), got PyTreeDef((*,))")):
        f_jvp(1.0)
    assert f_jvp(1.0, 0.0) == 5.0
