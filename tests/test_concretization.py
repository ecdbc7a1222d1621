"""Converting a traced value to a Python or NumPy value: which conversions raise under
grad, jvp, linearize, vmap and jit, with which error class and first line, compared
conversion by conversion with JAX; and the gradients of the conversions JAX allows
under differentiation (they give the primal value, so the dependence is cut there)."""
import math
import operator

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp

jax = pytest.importorskip("jax", reason="the expected behaviour is JAX's, compared live")
jnp = pytest.importorskip("jax.numpy", reason="the expected behaviour is JAX's, compared live")
jax.config.update("jax_enable_x64", True)


CONVERSIONS = {
    "float": float,
    "complex": complex,
    "int": int,
    "bool": bool,
    "not": lambda x: not x,
    "if": lambda x: 1.0 if x > 0 else 0.0,
    "index": operator.index,
    "range": range,
    "item": lambda x: x.item(),
    "tolist": lambda x: x.tolist(),
    "math.exp": math.exp,
    "math.floor": math.floor,
    "np.float64": np.float64,
    "np.float32": np.float32,
    "np.int64": np.int64,
    "np.asarray": np.asarray,
    "np.array": np.array,
    "np.sin": np.sin,
    "hash": hash,
}


def _uses(convert):
    def f(x):
        convert(x)
        return x * 2.0
    return f


def _run(lib, how, convert, x):
    """How ``convert`` of the traced ``x`` ends under transformation ``how`` of library
    ``lib``: ``("ok", None)`` or ``(error class name, message)``."""
    f = _uses(convert)
    np_ = jnp if lib is jax else tnp
    calls = {
        "grad": lambda: lib.grad(f)(x),
        "jvp": lambda: lib.jvp(f, (x,), (np_.ones_like(x),)),
        "linearize": lambda: lib.linearize(f, x),
        "jacfwd": lambda: lib.jacfwd(f)(x),
        "hessian": lambda: lib.hessian(lambda y: f(y) ** 2)(x),
        "vmap": lambda: lib.vmap(f)(np_.stack([x, x])),
        "jit": lambda: lib.jit(f)(x),
    }
    try:
        calls[how]()
    except Exception as e:   # noqa: BLE001 -- the class is what is compared
        return type(e).__name__, str(e)
    return "ok", None


def _first_line(message):
    return message.split("\n")[0]


CASES = ([(name, how, "f") for name in CONVERSIONS
          for how in ("grad", "jvp", "linearize", "jacfwd", "hessian", "vmap", "jit")]
         + [(name, how, "i") for name in CONVERSIONS for how in ("vmap", "jit")]
         + [(name, how, "v") for name in ("float", "int", "complex", "bool", "item", "tolist",
                                          "index")
            for how in ("grad", "vmap", "jit")])


@pytest.mark.parametrize("name, how, kind", CASES,
                         ids=[f"{n}-{h}-{k}" for n, h, k in CASES])
def test_conversion_matches_jax(name, how, kind):
    convert = CONVERSIONS[name]
    value = {"f": 3.0, "i": 3, "v": [1.0, 2.0]}[kind]
    want, jax_msg = _run(jax, how, convert, jnp.asarray(value))
    got, msg = _run(tg, how, convert, np.asarray(value))
    assert got == want, (got, msg)
    if want != "ok":
        # JAX's first line begins ours (hash: JAX names its own tracer class there)
        expected = _first_line(jax_msg)
        if name == "hash":
            assert msg.startswith("unhashable type")
        else:
            assert msg.startswith(expected), (msg, expected)


def test_error_classes_are_the_public_ones():
    with pytest.raises(tg.errors.ConcretizationTypeError):
        tg.grad(lambda x: float(x) * x)(3.0)
    with pytest.raises(tg.errors.TracerArrayConversionError):
        tg.grad(lambda x: np.float32(x) * x)(3.0)
    with pytest.raises(tg.errors.TracerBoolConversionError):
        tg.jit(lambda x: x if x > 0 else -x)(3.0)
    with pytest.raises(tg.errors.TracerIntegerConversionError):
        tg.jit(lambda i: [1.0, 2.0, 3.0, 4.0][i])(3)


@pytest.mark.parametrize("f", [
    lambda x: float(x) ** 2 + x,
    lambda x: math.exp(x),
    lambda x: complex(x).real * x,
    lambda x: np.float64(x) * x,
    lambda x: x.tolist() * x,
])
def test_dropping_the_derivative_raises_instead_of_a_wrong_gradient(f):
    # before: grad(lambda x: float(x)**2 + x)(3.0) gave 1.0 (true 7.0), math.exp gave 0.0
    with pytest.raises((tg.errors.ConcretizationTypeError, tg.errors.TracerArrayConversionError)):
        tg.grad(f)(3.0)
    with pytest.raises((tg.errors.ConcretizationTypeError, tg.errors.TracerArrayConversionError)):
        tg.jvp(f, (3.0,), (1.0,))


def test_the_error_names_the_differentiated_argument():
    def loss(w, b, scale):
        return tnp.sum(w * math.exp(b)) * scale

    with pytest.raises(tg.errors.ConcretizationTypeError) as info:
        tg.grad(loss, argnums=1)(np.ones(2), 0.5, 2.0)
    message = str(info.value)
    assert message.startswith("Abstract tracer value encountered where concrete value is "
                              "expected: traced array with shape float64[]\nThe problem arose "
                              "with the `float` function.")
    assert "argument 'b' of loss" in message
    assert "stop_gradient" in message
    with pytest.raises(tg.errors.ConcretizationTypeError, match="argument 'b' of loss"):
        tg.jacfwd(loss, argnums=1)(np.ones(2), 0.5, 2.0)
    with pytest.raises(tg.errors.ConcretizationTypeError, match="argument 'b' of loss"):
        tg.jacrev(loss, argnums=1)(np.ones(2), 0.5, 2.0)
    with pytest.raises(tg.errors.ConcretizationTypeError, match="argument 'b' of <lambda>"):
        tg.jvp(lambda b: loss(np.ones(2), b, 2.0), (0.5,), (1.0,))
    # an outer differentiation's value converted inside an inner one names the outer input
    with pytest.raises(tg.errors.ConcretizationTypeError, match="argument 'x' of outer"):
        def outer(x):
            return tg.grad(lambda y: float(x) * y)(1.0)
        tg.grad(outer)(2.0)
    with pytest.raises(tg.errors.TracerArrayConversionError,
                       match=r"(?s)^The numpy.ndarray conversion method __array__\(\) was called "
                             r"on traced array with shape float64\[\].*argument 'w' of <lambda>"):
        tg.vjp(lambda w: np.asarray(w) * w, 1.0)


def test_jit_error_names_the_argument():
    with pytest.raises(tg.errors.ConcretizationTypeError, match="argument 'n'"):
        tg.jit(lambda x, n: x * float(n))(1.0, 2.0)


ALLOWED = {   # the same function for tangentia and for JAX
    "int": lambda np_, lax: lambda x: int(x) ** 2 + x,
    "if": lambda np_, lax: lambda x: x ** 2 if x > 0 else np_.sin(x),
    "item": lambda np_, lax: lambda x: x.item() ** 2 + x * x,
    "index": lambda np_, lax: lambda x: x * [1.0, 2.0, 3.0, 4.0][operator.index(
        np_.abs(x).astype(int))],
    "bool": lambda np_, lax: lambda x: x ** 3 if bool(x < 1) else x,
    "not": lambda np_, lax: lambda x: x ** 3 if not x > 1 else x,
    "float-of-stop_gradient": lambda np_, lax: lambda x: x * float(lax.stop_gradient(x)),
    "math-of-stop_gradient": lambda np_, lax: lambda x: x * math.exp(lax.stop_gradient(x)),
}


@pytest.mark.parametrize("name", list(ALLOWED))
@pytest.mark.parametrize("x", [3.0, -0.5])
def test_allowed_conversions_give_jaxs_gradients(name, x):
    f = ALLOWED[name](tnp, tg.lax)
    want = float(jax.grad(ALLOWED[name](jnp, jax.lax))(x))
    assert float(tg.grad(f)(x)) == pytest.approx(want, rel=1e-12, abs=1e-12)
    _, t = tg.jvp(f, (x,), (1.0,))
    assert float(t) == pytest.approx(want, rel=1e-12, abs=1e-12)
    assert float(tg.jacfwd(f)(x)) == pytest.approx(want, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("x", [3.0, -0.5])
def test_allowed_conversions_numbers(x):
    # int(x), .item() and `if` give the primal value: their dependence is cut (as JAX)
    assert float(tg.grad(lambda y: int(y) ** 2 + y)(x)) == 1.0
    assert float(tg.grad(lambda y: y.item() * y)(x)) == x
    assert float(tg.grad(lambda y: y ** 2 if y > 0 else -y)(x)) == (2 * x if x > 0 else -1.0)
    assert float(tg.grad(lambda y: y * float(tg.lax.stop_gradient(y)))(x)) == x
    assert float(tg.hessian(lambda y: int(y) * y ** 3)(x)) == pytest.approx(6 * int(x) * x)
    # against JAX, and against a central difference of the same Python function
    for f, fj in [(lambda y: int(y) ** 2 + y, lambda y: int(y) ** 2 + y),
                  (lambda y: y.item() * y * y, lambda y: y.item() * y * y),
                  (lambda y: y ** 3 if y > 0 else tnp.sin(y), lambda y: y ** 3 if y > 0 else
                   jnp.sin(y))]:
        assert float(tg.grad(f)(x)) == pytest.approx(float(jax.grad(fj)(x)), rel=1e-12)
    h = 1e-6
    f = lambda y: y ** 3 if y > 0 else tnp.sin(y)   # noqa: E731
    fd = (float(f(np.float64(x + h))) - float(f(np.float64(x - h)))) / (2 * h)
    assert float(tg.grad(f)(x)) == pytest.approx(fd, rel=1e-6)


def test_vmap_of_grad_and_grad_of_vmap():
    # under vmap a value stands for many: every conversion raises, also from grad inside
    with pytest.raises(tg.errors.ConcretizationTypeError, match="`int` function"):
        tg.vmap(tg.grad(lambda x: int(x) * x ** 3))(np.ones(2))
    with pytest.raises(tg.errors.TracerBoolConversionError):
        tg.vmap(tg.grad(lambda x: x if x > 0 else -x))(np.ones(2))
    # a differentiated (not batched) value may still drive a branch inside vmap
    g = tg.grad(lambda x: tg.vmap(lambda y: y * x if bool(x > 0) else -y)(x * np.ones(2)).sum())
    assert float(g(1.5)) == pytest.approx(6.0)
    assert float(jax.grad(lambda x: jax.vmap(lambda y: y * x if bool(x > 0) else -y)(
        x * jnp.ones(2)).sum())(1.5)) == pytest.approx(6.0)


def test_eager_conversions_still_work():
    x = tnp.sin(np.float64(0.5))
    assert float(x) == math.sin(0.5)
    assert math.exp(x) == pytest.approx(math.exp(math.sin(0.5)))
    assert np.float32(x) == np.float32(math.sin(0.5))
    assert np.asarray(tnp.ones(2)).tolist() == [1.0, 1.0]
    # outside the differentiated function, results convert freely
    assert float(tg.grad(lambda y: y ** 2)(3.0)) == 6.0
