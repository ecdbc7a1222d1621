"""Error behaviour: each error is raised with the right type and a message
that names what went wrong (function, argument, shapes, transformation)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

A = np.arange(12.0).reshape(3, 4) / 7.0


# ---------------------------------------------------------------------------
# Concretization


def branchy(x):
    if x > 0:
        return x ** 2
    return -x


def test_concretization_error_under_jit_names_function_and_argument():
    with pytest.raises(tg.ConcretizationTypeError, match=r"jit of branchy") as info:
        tg.jit(branchy)(2.0)
    msg = str(info.value)
    assert "argument 'x'" in msg
    assert "bool[]" in msg  # the abstract value that was converted
    assert "static_argnums" in msg  # and it suggests a remedy


def test_concretization_error_names_the_argument_that_is_traced():
    def f(scale, offset):
        if offset > 1:
            return scale
        return scale * 2

    with pytest.raises(tg.ConcretizationTypeError, match=r"argument 'offset'") as info:
        tg.jit(f)(1.0, 2.0)
    assert "argument 'scale'" not in str(info.value)
    # marking the argument static makes the same function work
    assert float(tg.jit(f, static_argnums=1)(1.0, 2.0)) == 1.0
    assert float(tg.jit(f, static_argnames="offset")(1.0, offset=0.5)) == 2.0


@pytest.mark.parametrize("convert,what", [(float, r"float\(\)"), (int, r"int\(\)"),
                                          (bool, r"bool\(\)")])
def test_concretization_error_for_python_conversions(convert, what):
    with pytest.raises(tg.ConcretizationTypeError, match=what):
        tg.jit(lambda x: x * convert(x))(3.0)


def test_concretization_error_for_shape_arguments():
    with pytest.raises(tg.ConcretizationTypeError, match=r"arange.*argument 'n'"):
        tg.jit(lambda x, n: x * tnp.arange(n))(3.0, 4)
    with pytest.raises(tg.ConcretizationTypeError, match=r"argument 'n'"):
        tg.jit(lambda x, n: [x for _ in range(n)])(3.0, 2)
    # static works
    np.testing.assert_array_equal(tg.jit(lambda x, n: x * tnp.arange(n), static_argnums=1)(3.0, 4),
                                  [0.0, 3.0, 6.0, 9.0])


def test_concretization_error_under_vmap_explains_batching():
    with pytest.raises(tg.ConcretizationTypeError, match=r"vmap"):
        tg.vmap(branchy)(np.array([1.0, -1.0]))


def test_concretization_error_under_grad_of_jit_and_jit_of_grad():
    with pytest.raises(tg.ConcretizationTypeError, match=r"jit of branchy"):
        tg.grad(tg.jit(branchy))(2.0)
    with pytest.raises(tg.ConcretizationTypeError, match=r"argument 'x'"):
        tg.jit(tg.grad(branchy))(2.0)


def test_concretization_error_is_a_type_error():
    # like JAX, code catching TypeError also catches concretization errors
    assert issubclass(tg.ConcretizationTypeError, TypeError)
    with pytest.raises(TypeError):
        tg.jit(branchy)(1.0)


def test_numpy_function_on_tracer_raises_conversion_error():
    with pytest.raises(tg.TracerArrayConversionError, match=r"tangentia\.numpy"):
        tg.jit(lambda x: np.sin(x))(1.0)
    with pytest.raises(tg.TracerArrayConversionError, match=r"vmap"):
        tg.vmap(lambda x: np.asarray(x) * 2)(A)
    with pytest.raises(tg.TracerArrayConversionError, match=r"differentiation|linearization"):
        tg.grad(lambda x: np.exp(x))(1.0)


# ---------------------------------------------------------------------------
# Leaked tracers


def _leak_from(transform):
    store = []

    def leaky(x):
        store.append(x)
        return x * 2.0

    transform(leaky)
    assert len(store) == 1
    return store[0]


_TRANSFORMS = {
    "jit": (lambda f: tg.jit(f)(1.5), r"jit of leaky"),
    "grad": (lambda f: tg.grad(f)(1.5), r"differentiation|linearization"),
    "jvp": (lambda f: tg.jvp(f, (1.5,), (1.0,)), r"differentiation"),
    "vmap": (lambda f: tg.vmap(f)(np.ones(3)), r"vmap"),
    "make_jaxpr": (lambda f: tg.make_jaxpr(f)(1.5), r"make_jaxpr of leaky|leaky"),
}


@pytest.mark.parametrize("name", sorted(_TRANSFORMS))
def test_leaked_tracer_used_eagerly_raises(name):
    transform, describes = _TRANSFORMS[name]
    leaked = _leak_from(transform)
    with pytest.raises(tg.UnexpectedTracerError, match=r"already finished") as info:
        leaked + 1.0
    assert "leaked" in str(info.value)
    assert re.search(describes, str(info.value)), str(info.value)


@pytest.mark.parametrize("name", sorted(_TRANSFORMS))
def test_leaked_tracer_used_inside_another_transformation_raises(name):
    transform, _ = _TRANSFORMS[name]
    leaked = _leak_from(transform)
    with pytest.raises(tg.UnexpectedTracerError, match=r"already finished"):
        tg.jit(lambda y: y + leaked)(1.0)
    with pytest.raises(tg.UnexpectedTracerError, match=r"already finished"):
        tg.grad(lambda y: y * leaked)(1.0)
    with pytest.raises(tg.UnexpectedTracerError, match=r"already finished"):
        tg.vmap(lambda y: y * leaked)(np.ones(2))
    with pytest.raises(tg.UnexpectedTracerError, match=r"already finished"):
        tnp.sin(leaked)


def test_leaked_tracer_passed_to_numpy_raises():
    leaked = _leak_from(lambda f: tg.jit(f)(1.5))
    with pytest.raises(tg.UnexpectedTracerError):
        np.asarray(leaked)


def test_leaked_tracer_via_closure_attribute():
    class Model:
        pass

    m = Model()

    def f(x):
        m.hidden = tnp.sin(x)
        return m.hidden * 2

    np.testing.assert_allclose(tg.grad(f)(0.3), 2 * np.cos(0.3))
    with pytest.raises(tg.UnexpectedTracerError):
        m.hidden * 3.0


# ---------------------------------------------------------------------------
# Shape errors show both shapes


_BOTH_SHAPES = r"\(3, ?4\),? \(3, ?2\)"


def test_shape_mismatch_eager_shows_both_shapes():
    with pytest.raises(TypeError, match=_BOTH_SHAPES):
        tnp.add(A, A[:, :2])


@pytest.mark.parametrize("op,name", [(tnp.add, "add"), (tnp.multiply, "mul"),
                                     (tnp.subtract, "sub"), (tnp.maximum, "max"),
                                     (tnp.arctan2, "atan2")])
def test_shape_mismatch_under_jit_names_op_and_both_shapes(op, name):
    # as in JAX: equal ranks are the lax operation's TypeError, named by its lax name
    want = rf"^{name} got incompatible shapes for broadcasting: " + _BOTH_SHAPES + r"\.$"
    with pytest.raises(TypeError, match=want):
        tg.jit(op)(A, A[:, :2])
    with pytest.raises(TypeError, match=want):
        tg.grad(lambda x: tnp.sum(op(x, A[:, :2])))(A)
    with pytest.raises(TypeError, match=want):
        op(A, A[:, :2])


def test_shape_mismatch_of_values_known_under_grad_is_jaxs_error():
    # operands that do not depend on the differentiated input are computed at once
    a, b = np.ones(3), np.ones(4)
    want = r"^add got incompatible shapes for broadcasting: \(3,\), \(4,\)\.$"
    with pytest.raises(TypeError, match=want):
        tg.grad(lambda x: x * tnp.sum(tnp.add(a, b)))(1.0)
    with pytest.raises(TypeError, match=want):
        tg.vjp(lambda x: x * tnp.sum(tnp.add(a, b)), 1.0)


def test_shape_mismatch_under_vmap_shows_per_example_shapes():
    with pytest.raises(TypeError, match=r"^add got incompatible shapes for broadcasting: "
                                        r"\(4,\), \(5,\)\.$"):
        tg.vmap(lambda x: x + np.ones(5))(A)
    with pytest.raises(TypeError, match=r"^mul got incompatible shapes.*\(4,\), \(5,\)"):
        tg.vmap(lambda x, y: x * y)(A, np.ones((3, 5)))
    with pytest.raises(ValueError, match=r"^Incompatible shapes.*\(4,\), \(2, 5\)\] "
                                         r"\(operation 'add'\)"):
        tg.vmap(lambda x: x + np.ones((2, 5)))(A)


def test_contraction_shape_errors_show_both_shapes():
    with pytest.raises(TypeError, match=r"matmul.*\(3, 4\) and \(3, 4\)"):
        tnp.matmul(A, A)
    with pytest.raises(TypeError, match=r"matmul.*\(3, 4\) and \(3, 4\)"):
        tg.jit(tnp.matmul)(A, A)
    with pytest.raises(TypeError, match=r"\(3, 4\) and \(3, 4\)"):
        tg.jit(tnp.dot)(A, A)
    with pytest.raises(TypeError, match=r"tensordot.*\(3, 4\) and \(3, 4\)"):
        tnp.tensordot(A, A, axes=([0], [1]))
    with pytest.raises(ValueError, match=r"einsum.*'j'.*4 and 3"):
        tg.jit(lambda a, b: tnp.einsum("ij,jk->ik", a, b))(A, A)


def test_structural_shape_errors():
    with pytest.raises(ValueError, match=r"reshape.*\(3, 4\).*\(5, 2\)"):
        tg.jit(lambda x: x.reshape(5, 2))(A)
    with pytest.raises(TypeError, match=r"^Cannot concatenate arrays with shapes that differ in "
                       r"dimensions other than the one being concatenated: concatenating along "
                       r"dimension 0 for shapes \(3, 4\), \(3, 2\)\.$"):
        tg.jit(lambda x: tnp.concatenate([x, x[:, :2]], axis=0))(A)
    with pytest.raises(ValueError, match=r"stack.*\[\(3, 4\), \(3, 2\)\]"):
        tg.jit(lambda x: tnp.stack([x, x[:, :2]]))(A)
    with pytest.raises(ValueError, match=r"broadcast_to.*\(3, 4\).*\(4, 3\)"):
        tg.jit(lambda x: tnp.broadcast_to(x, (4, 3)))(A)
    with pytest.raises(ValueError, match=r"at\[\.\.\.\]\.set.*\(3,\).*\(4,\)"):
        tg.jit(lambda x: x.at[0].set(np.ones(3)))(A)
    with pytest.raises(ValueError, match=r"sum: axis 2 is out of bounds"):
        tg.jit(lambda x: x.sum(axis=2))(A)


def test_index_errors():
    with pytest.raises(IndexError, match=r"\[5\].*\(3, 4\)"):
        tg.jit(lambda x: x[5])(A)
    with pytest.raises(IndexError, match=r"too many indices.*\(3, 4\)"):
        tg.jit(lambda x: x[1, 2, 3])(A)
    with pytest.raises(IndexError, match=r"integers"):
        tg.jit(lambda x: x[np.array([0.5])])(A)


# ---------------------------------------------------------------------------
# vmap argument errors


def test_vmap_inconsistent_axis_sizes_names_arguments():
    def f(xs, ys):
        return xs + ys

    with pytest.raises(ValueError, match=r"inconsistent sizes") as info:
        tg.vmap(f)(A, A[:2])
    msg = str(info.value)
    assert "one axis had size 3: axis 0 of argument xs of type float64[3,4]" in msg
    assert "one axis had size 2: axis 0 of argument ys of type float64[2,4]" in msg


def test_vmap_inconsistent_axis_sizes_with_in_axes_and_pytrees():
    def f(p, q):
        return p["a"] * q

    with pytest.raises(ValueError, match=r"(?s)size 4: axis 1 of argument p\['a'\].*size 3: axis 0 "
                                         r"of argument q"):
        tg.vmap(f, in_axes=({"a": 1}, 0))({"a": A}, np.ones(3))


def test_vmap_axis_size_mismatch_and_missing_mapped_axes():
    with pytest.raises(ValueError, match=r"(?s)`axis_size` argument was 5.*size 3"):
        tg.vmap(lambda x: x, axis_size=5)(A)
    with pytest.raises(ValueError, match=r"at least one non-None value in in_axes"):
        tg.vmap(lambda x: x, in_axes=None)(A)


def test_vmap_in_axes_errors():
    with pytest.raises(ValueError, match=r"rank should be at least 3.*\(3, 4\).*in_axes=2 is out"):
        tg.vmap(lambda x: x, in_axes=2)(A)
    with pytest.raises(ValueError, match=r"argument x.*scalar"):
        tg.vmap(lambda x: x)(2.0)
    with pytest.raises(ValueError, match=r"len\(in_axes\)=3, len\(args\)=2"):
        tg.vmap(lambda x, y: x * y, in_axes=(0, 0, 0))(A, A)
    with pytest.raises(TypeError, match=r"in_axes must be"):
        tg.vmap(lambda x: x, in_axes=1.5)
    with pytest.raises(ValueError, match=r"in_axes"):
        tg.vmap(lambda d: d["b"], in_axes=({"a": 0},))({"b": A})


def test_vmap_out_axes_none_for_batched_output():
    with pytest.raises(ValueError, match=r"out_axes=None"):
        tg.vmap(lambda x: x, out_axes=None)(A)


def test_vmap_out_axes_out_of_range():
    with pytest.raises(ValueError, match=r"out_axes"):
        tg.vmap(lambda x: x, out_axes=3)(A)


# ---------------------------------------------------------------------------
# Differentiation errors


def test_grad_of_non_scalar_output():
    with pytest.raises(TypeError, match=r"scalar output.*shape \(3, 4\)") as info:
        tg.grad(lambda x: tnp.sin(x))(A)
    assert "jacrev" in str(info.value) or "vjp" in str(info.value)
    with pytest.raises(TypeError, match=r"scalar output.*list"):
        tg.grad(lambda x: [x])(1.0)
    with pytest.raises(TypeError, match=r"real-valued outputs.*bool"):
        tg.grad(lambda x: x > 0)(1.0)
    with pytest.raises(TypeError, match=r"real-valued outputs.*int64"):
        tg.grad(lambda x: tnp.argmax(x))(np.ones(2))


def _scale(x, n):
    return x * n


def test_grad_with_respect_to_integer_input_names_the_right_argument():
    with pytest.raises(TypeError, match=r"int64.*argument 'n'"):
        tg.grad(_scale, argnums=1)(2.0, 3)


def test_grad_with_respect_to_integer_input():
    f = _scale
    with pytest.raises(TypeError, match=r"int64.*argnums=1"):
        tg.grad(f, argnums=1)(2.0, 3)
    with pytest.raises(TypeError, match=r"int64.*argument 'x'"):
        tg.grad(f)(np.arange(3), 2.0)
    with pytest.raises(TypeError, match=r"int64"):
        tg.jacrev(f)(np.arange(3), 2.0)
    with pytest.raises(TypeError, match=r"int64"):
        tg.jacfwd(f)(np.arange(3), 2.0)
    # integer arguments that are not differentiated are fine
    assert float(tg.grad(f)(2.0, 3)) == 3.0


def test_grad_argnums_out_of_range():
    with pytest.raises(TypeError, match=r"argnums=2.*2 positional"):
        tg.grad(lambda x, y: x * y, argnums=2)(1.0, 2.0)


def test_has_aux_requires_a_pair():
    with pytest.raises(TypeError, match=r"has_aux=True.*pair"):
        tg.grad(lambda x: x * 2.0, has_aux=True)(1.0)
    with pytest.raises(TypeError, match=r"has_aux=True.*pair"):
        tg.vjp(lambda x: x * 2.0, 1.0, has_aux=True)


def test_jvp_argument_errors():
    with pytest.raises(ValueError, match=r"tangent 0 has shape \(3,\).*\(2,\)"):
        tg.jvp(lambda x: x * 2, (np.ones(2),), (np.ones(3),))
    with pytest.raises(TypeError, match=r"float32.*float64"):
        tg.jvp(lambda x: x * 2, (np.ones(2),), (np.ones(2, np.float32),))
    with pytest.raises(TypeError, match=r"2 primals but 1 tangents"):
        tg.jvp(lambda x, y: x, (A, A), (A,))
    with pytest.raises(TypeError, match=r"tuples or lists"):
        tg.jvp(lambda x: x, A, A)


def test_vjp_and_linearize_argument_errors():
    with pytest.raises(ValueError, match=r"cotangent 0 has shape \(3,\).*\(2,\)"):
        tg.vjp(lambda x: x * 2, np.ones(2))[1](np.ones(3))
    with pytest.raises(ValueError, match=r"structure"):
        tg.vjp(lambda x: (x, x), A)[1](A)
    with pytest.raises(ValueError, match=r"tangent 0 has shape \(4,\), expected \(3, 4\)"):
        tg.linearize(tnp.sin, A)[1](A[0])


# ---------------------------------------------------------------------------
# Boolean masks and other API errors


def test_boolean_mask_inside_jit_is_a_clear_index_error():
    with pytest.raises(IndexError, match=r"boolean mask.*traced") as info:
        tg.jit(lambda x: x[x > 0])(A)
    assert "where" in str(info.value)  # it suggests tnp.where
    with pytest.raises(IndexError, match=r"boolean mask"):
        tg.vmap(lambda x: x[x > 0.5])(A)
    with pytest.raises(IndexError, match=r"boolean mask"):
        tg.jit(lambda x, m: x.at[m].set(0.0))(A, A > 0.5)
    # outside jit the same code works, under grad too
    np.testing.assert_array_equal(tnp.asarray(A)[A > 0.5], A[A > 0.5])
    g = tg.grad(lambda x: tnp.sum(x[x > 0.5] ** 2))(A)
    np.testing.assert_allclose(g, np.where(A > 0.5, 2 * A, 0.0))


def test_nonzero_inside_jit_raises_concretization_error():
    with pytest.raises(tg.ConcretizationTypeError, match=r"nonzero"):
        tg.jit(lambda x: tnp.nonzero(x))(A)


def test_transform_non_callable():
    for api in (tg.grad, tg.jit, tg.vmap, tg.jacfwd, tg.jacrev, tg.make_jaxpr):
        with pytest.raises(TypeError, match=r"callable"):
            api(3)


def test_jit_unhashable_static_argument():
    with pytest.raises(ValueError, match=r"static argument.*unhashable.*list"):
        tg.jit(lambda x, n: x, static_argnums=1)(1.0, [1])


def test_eager_shape_mismatch_names_the_function_and_both_shapes():
    with pytest.raises(TypeError, match=r"^add got incompatible shapes for broadcasting: \(3,\), \(4,\)\.$"):
        tnp.add(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match=r"\(2, 3\), \(4,\)\] \(operation 'mul'\)"):
        tnp.multiply(np.ones((2, 3)), np.ones(4))


def test_bool_of_a_leaked_tracer_is_a_leak_error():
    leak = []
    tg.jit(lambda x: leak.append(x) or x)(1.0)
    with pytest.raises(tg.UnexpectedTracerError, match="already finished"):
        bool(leak[0])


def test_has_aux_without_a_pair_describes_what_came_back():
    with pytest.raises(TypeError, match=r"must return a pair \(output, aux\), got a single array"):
        tg.grad(lambda x: x * 2.0, has_aux=True)(1.0)


def test_non_array_arguments_are_named():
    with pytest.raises(TypeError, match=r"jit of <lambda>: keyword argument 's' of type str"):
        tg.jit(lambda x, s: x)(1.0, s="hi")

    class Model:
        @tg.jit
        def apply(self, x):
            return x

    with pytest.raises(TypeError, match=r"jit of apply: argument 'self' of type Model .*static"):
        Model().apply(1.0)


def test_grad_refuses_complex_outputs_with_jax_wording():
    with pytest.raises(TypeError, match=r"^grad requires real-valued outputs .*complex128.* "
                       r"pass holomorphic=True.*\(grad of <lambda>\)"):
        tg.grad(lambda x: x * (1 + 1j))(1.0)
    with pytest.raises(TypeError, match=r"^grad with holomorphic=True requires inputs with "
                       r"complex dtype, but got float64\. \(grad of <lambda>: argument 'x'"):
        tg.grad(lambda x: x * (1 + 1j), holomorphic=True)(1.0)
