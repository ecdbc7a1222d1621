"""Behaviour found by running JAX's introductory tutorials against tangentia.

Each test pins one difference that a tutorial cell showed (an error of another type or
wording, a missing name or argument, a different number), with our own code and values.
"""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp


def test_python_if_on_traced_value_raises_tracer_bool_conversion_error():
    def pick(x, flag):
        return x * 2.0 if flag else x

    with pytest.raises(tg.errors.TracerBoolConversionError,
                       match=r"^Attempted boolean conversion of traced array with shape bool\[\]"):
        tg.jit(pick)(np.arange(3.0), np.bool_(True))
    # it is still a ConcretizationTypeError, and static arguments avoid it
    assert issubclass(tg.errors.TracerBoolConversionError, tg.errors.ConcretizationTypeError)
    np.testing.assert_array_equal(tg.jit(pick, static_argnums=1)(np.arange(3.0), True),
                                  [0.0, 2.0, 4.0])


@pytest.mark.parametrize("convert, name", [(float, "float()"), (int, "int()"),
                                           (lambda x: x.item(), ".item()")])
def test_other_conversions_of_traced_values_use_jaxs_wording(convert, name):
    with pytest.raises(tg.errors.ConcretizationTypeError) as info:
        tg.jit(lambda x: tnp.sin(x) * convert(x))(0.5)
    assert type(info.value) is tg.errors.ConcretizationTypeError
    message = str(info.value)
    assert message.startswith("Abstract tracer value encountered where concrete value is "
                              "expected: traced array with shape float64[]")
    assert name in message


@pytest.mark.parametrize("make", [
    lambda n: tnp.zeros((n, 2)),
    lambda n: tnp.ones(n),
    lambda n: tnp.full((3, n), 0.5),
    lambda n: tnp.zeros_like(np.ones(4), shape=(n,)),
    lambda n: tnp.reshape(np.arange(6.0), (n, -1)),
    lambda n: tnp.broadcast_to(2.0, (n,)),
    lambda n: tg.lax.full((n,), 1.5),
], ids=["zeros", "ones", "full", "zeros_like", "reshape", "broadcast_to", "lax.full"])
def test_traced_shape_raises_jaxs_shape_error(make):
    with pytest.raises(TypeError, match=r"^Shapes must be 1D sequences of concrete values of "
                                        r"integer type, got \(") as info:
        tg.jit(make)(3)
    assert "static_argnums" in str(info.value)
    # the same shape given statically works, under jit too
    assert tg.jit(make, static_argnums=0)(3).size % 3 == 0


def test_broadcasting_error_starts_with_jaxs_wording():
    expected = r"^Incompatible shapes for broadcasting: shapes=\[\(4,\), \(4, 2\)\]"
    with pytest.raises(ValueError, match=expected + r" \(operation 'mul'\)"):
        tnp.multiply(np.arange(4.0), np.ones((4, 2)))
    with pytest.raises(ValueError, match=expected):
        tg.jit(lambda a, b: tnp.log1p(a) * b)(np.arange(4.0), np.ones((4, 2)))
    with pytest.raises(TypeError, match=r"^sub got incompatible shapes for broadcasting: \(4,\), \(3,\)\.$"):
        tg.vmap(lambda a: a - np.ones(3))(np.ones((2, 4)))


@pytest.mark.parametrize("product", [tnp.dot, tnp.matmul, tnp.inner,
                                     lambda a, b: tnp.tensordot(a, b, 1)],
                         ids=["dot", "matmul", "inner", "tensordot"])
def test_mismatched_contraction_is_jaxs_type_error(product):
    # a per-example function applied to a batch, as a tutorial shows: TypeError, as in JAX
    w, batch = np.ones((6, 5)), np.ones((3, 4))
    with pytest.raises(TypeError, match=r"^dot_general requires contracting dimensions to "
                                        r"have the same shape, got \(5,\) and \("):
        product(w, batch)
    with pytest.raises(TypeError, match=r"^dot_general requires contracting dimensions"):
        tg.jit(product)(w, batch)


def test_mismatched_batch_dimensions_of_dot_general_is_jaxs_type_error():
    dims = (((2,), (1,)), ((0,), (0,)))
    with pytest.raises(TypeError, match=r"^dot_general requires lhs batch dimensions and rhs "
                                        r"batch dimensions to have the same shape, got \(2,\) "
                                        r"and \(3,\)"):
        tg.jit(lambda a, b: tg.lax.dot_general(a, b, dims))(np.ones((2, 4, 5)), np.ones((3, 5)))


def test_a_custom_interpreter_written_against_jax_names_runs():
    # JAX's field names on equations and closed programs, and a table keyed by lax.*_p
    from tangentia import core, lax

    inverses = {lax.sqrt_p: lambda y: y * y, lax.exp_p: tnp.log, lax.log1p_p: tnp.expm1}

    def invert(fun):
        def inverse(y):
            closed = tg.make_jaxpr(fun)(y)
            jaxpr, env = closed.jaxpr, {}
            assert closed.literals == closed.consts
            env[jaxpr.outvars[0]] = y
            for eqn in reversed(jaxpr.eqns):
                assert isinstance(eqn.primitive, core.Primitive) and eqn.params == {}
                (x_var,), (y_var,) = eqn.invars, eqn.outvars
                env[x_var] = inverses[eqn.primitive](env[y_var])
            return env[jaxpr.invars[0]]
        return inverse

    def f(x):
        return tnp.sqrt(tnp.exp(tnp.log1p(x)))

    x = np.array([0.25, 1.5, 3.0])
    np.testing.assert_allclose(invert(f)(f(x)), x, rtol=1e-14)
    # the interpreter composes with the transformations: d/dy f^-1(y) = 2y for f^-1(y) = y^2 - 1
    y = np.array([1.5, 2.0, 4.0])
    np.testing.assert_allclose(tg.jit(tg.vmap(tg.grad(invert(f))))(y), 2 * y, rtol=1e-14)


def test_jax_primitive_names_compare_equal_to_the_primitive_they_stand_for():
    from tangentia.primitives import elementwise
    assert tg.lax.tanh_p == elementwise.tanh_p and elementwise.tanh_p == tg.lax.tanh_p
    assert hash(tg.lax.tanh_p) == hash(elementwise.tanh_p)
    assert tg.lax.tanh_p != elementwise.sinh_p and tg.lax.exp_p != tg.lax.log_p
    assert {tg.lax.exp_p: 1}[elementwise.exp_p] == 1
    # names that are compositions equal only themselves
    assert tg.lax.logistic_p == tg.lax.logistic_p and len({tg.lax.logistic_p, tg.lax.exp2_p}) == 2


def test_non_array_arguments_raise_jaxs_wording_first():
    def body(arr, extra):
        return tnp.sum(arr) + extra

    stream = iter(range(4))
    # staging entry points name the function and the argument
    for stage in (tg.jit(body), tg.make_jaxpr(body)):
        with pytest.raises(TypeError, match=r"^Error interpreting argument to <function .*body.* "
                                            r"as an abstract array\. The problematic value is of "
                                            r"type <class 'range_iterator'> and was passed to the "
                                            r"function as argument 'arr'"):
            stage(stream, 1.0)
    # transformations and control flow say which value is not a valid type
    expected = r"^Argument '<range_iterator object at 0x[0-9a-f]+>' of type <class " \
               r"'range_iterator'> is not a valid JAX type"
    for call in (lambda: tg.grad(body)(stream, 1.0),
                 lambda: tg.vmap(body)(stream, np.ones(2)),
                 lambda: tg.jvp(body, (stream, 1.0), (stream, 1.0)),
                 lambda: tg.lax.cond(True, lambda s: s, lambda s: s, stream),
                 lambda: tg.lax.fori_loop(0, 3, lambda i, c: c, stream)):
        with pytest.raises(TypeError, match=expected):
            call()


def test_reshape_takes_a_zero_dimensional_size():
    x = np.arange(6.0).reshape(2, 3)
    for size in (np.array(6), np.int64(6), tnp.prod(tnp.array(x.shape))):
        np.testing.assert_array_equal(tnp.reshape(x, size), np.arange(6.0))
    # traced: JAX's shape error, not a failed iteration over a 0-d value
    with pytest.raises(TypeError, match=r"^Shapes must be 1D sequences of concrete values"):
        tg.jit(lambda a, n: a.reshape(n))(x, 6)


def test_pytree_nodes_with_unhashable_aux_data_work_under_jit():
    class Scaled:
        def __init__(self, x, opts):
            self.x, self.opts = x, opts

    tg.tree_util.register_pytree_node(Scaled, lambda s: ((s.x,), {"times": s.opts}),
                                      lambda aux, ch: Scaled(ch[0], aux["times"]))
    calls = []

    @tg.jit
    def apply(s, y):
        calls.append(s.opts)
        return s.x * y * s.opts

    assert apply(Scaled(np.float64(2.0), 3), 5.0) == 30.0
    assert apply(Scaled(np.float64(4.0), 3), 5.0) == 60.0     # same structure: cached
    assert apply(Scaled(np.float64(2.0), 7), 5.0) == 70.0     # other aux data: traced again
    assert calls == [3, 7]
    a, b = (tg.tree.structure(Scaled(1.0, k)) for k in (3, 3))
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1


def test_config_update_takes_jaxs_logging_flags():
    for flag in ("jax_explain_cache_misses", "jax_log_compiles"):
        tg.config.update(flag, True)
        tg.config.update(flag, False)
    assert tg.log_compiles.value is False
    with pytest.raises(NotImplementedError, match="debug_infs"):
        tg.config.update("jax_debug_infs", True)
    with pytest.raises(ValueError, match="unknown or unsupported option 'jax_no_such_flag'"):
        tg.config.update("jax_no_such_flag", True)


def test_an_abstract_value_prints_as_its_short_type():
    seen = []
    tg.vmap(lambda x: seen.append(str(tg.typeof(x))) or x)(np.ones((4, 2, 3), np.float32))
    assert seen == ["f32[2,3]"]
    assert repr(tg.typeof(np.arange(3))) == "ShapedArray(i64[3])"


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "rem", "max", "min", "atan2",
                                  "nextafter", "eq", "ne", "lt", "le", "gt", "ge"])
def test_lax_binary_operations_do_not_promote(name):
    op = getattr(tg.lax, name)
    f32, f64 = np.array([1.5, 2.5], np.float32), np.array([0.5, 4.0])
    with pytest.raises(TypeError, match=rf"^lax\.{name} requires arguments to have the same "
                                        r"dtypes, got float32, float64\."):
        op(f32, f64)
    # (as JAX: an integer operand of a floating-only operation is refused before the dtypes are compared)
    with pytest.raises(TypeError, match=r"does not accept dtype int64 at position 0" if name in (
            "atan2", "nextafter") else r"got int64, float64"):
        tg.jit(op)(3, 2.0)
    # one dtype: the operation, under the transformations too
    ref = getattr(np, {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide",
                       "rem": "fmod", "max": "maximum", "min": "minimum", "atan2": "arctan2",
                       "nextafter": "nextafter", "eq": "equal", "ne": "not_equal",
                       "lt": "less", "le": "less_equal", "gt": "greater",
                       "ge": "greater_equal"}[name])
    np.testing.assert_array_equal(op(f32, f32 * 3), ref(f32, f32 * 3))
    np.testing.assert_array_equal(tg.jit(tg.vmap(op))(f64, f64 + 1), ref(f64, f64 + 1))
