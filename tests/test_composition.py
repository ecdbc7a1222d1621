"""Every transformation composes with every other, in any nesting order.

Scalar functions whose derivatives are known in closed form (sin and
variants that route through custom rules, staged control flow and jit) are
wrapped in random stacks of transformations; the result must be the k-th
derivative of sin, where k counts the differentiating transformations.
"""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax


@tg.custom_jvp
def sin_jvp(x):
    return tnp.sin(x)


sin_jvp.defjvp(lambda p, t: (sin_jvp(p[0]), tnp.cos(p[0]) * t[0]))


@tg.custom_jvp
def cos_jvp(x):
    return tnp.cos(x)


cos_jvp.defjvp(lambda p, t: (cos_jvp(p[0]), -sin_jvp(p[0]) * t[0]))
sin_jvp.defjvp(lambda p, t: (sin_jvp(p[0]), cos_jvp(p[0]) * t[0]))


def sin_scan(x):
    return lax.scan(lambda c, _: (tnp.sin(c), None), x, None, length=1)[0]


def sin_cond(x):
    return lax.cond(x > 100.0, tnp.cos, tnp.sin, x)


def sin_custom_in_scan(x):
    return lax.scan(lambda c, _: (sin_jvp(c), None), x, None, length=1)[0]


BASES = {"sin": tnp.sin, "custom_jvp": sin_jvp, "scan": sin_scan, "cond": sin_cond,
         "jit": tg.jit(tnp.sin), "custom_in_scan": sin_custom_in_scan}


def _grad(f):
    return tg.grad(f)


def _jvp(f):
    return lambda x: tg.jvp(f, (x,), (1.0,))[1]


def _vjp(f):
    return lambda x: tg.vjp(f, x)[1](1.0)[0]


def _linearize(f):
    return lambda x: tg.linearize(f, x)[1](1.0)


def _jacfwd(f):
    return tg.jacfwd(f)


def _jacrev(f):
    return tg.jacrev(f)


def _jit(f):
    return tg.jit(f)


def _vmap(f):
    return lambda x: tg.vmap(f)(tnp.stack([x, x * 1.0]))[1]


def _vmap_grad_inside(f):
    return lambda x: tg.vmap(f, in_axes=None, axis_size=3)(x)[2]


DERIVATIVES = {"grad": _grad, "jvp": _jvp, "vjp": _vjp, "linearize": _linearize,
               "jacfwd": _jacfwd, "jacrev": _jacrev}
PLAIN = {"jit": _jit, "vmap": _vmap, "vmap_unmapped": _vmap_grad_inside}
ALL = {**DERIVATIVES, **PLAIN}


def _nth_derivative_of_sin(k, x):
    return np.sin(x + k * np.pi / 2)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(base=st.sampled_from(sorted(BASES)),
       stack=st.lists(st.sampled_from(sorted(ALL)), min_size=1, max_size=4),
       x=st.floats(-2.0, 2.0))
def test_random_transformation_stacks(base, stack, x):
    f = BASES[base]
    for name in stack:
        f = ALL[name](f)
    k = sum(1 for name in stack if name in DERIVATIVES)
    got = f(x)
    np.testing.assert_allclose(np.asarray(got), _nth_derivative_of_sin(k, x), rtol=1e-10,
                               atol=1e-12, err_msg=f"{base} under {stack}")


@tg.custom_vjp
def sin_vjp(x):
    return tnp.sin(x)


def _sin_vjp_fwd(x):
    return tnp.sin(x), x


def _sin_vjp_bwd(x, g):
    return (tnp.cos(x) * g,)


sin_vjp.defvjp(_sin_vjp_fwd, _sin_vjp_bwd)
REVERSE = {"grad": _grad, "vjp": _vjp, "jacrev": _jacrev}


@settings(max_examples=40, deadline=None, derandomize=True)
@given(stack=st.lists(st.sampled_from(sorted({**PLAIN, **REVERSE})), min_size=1, max_size=4),
       x=st.floats(-2.0, 2.0))
def test_custom_vjp_under_random_reverse_mode_stacks(stack, x):
    # A custom_vjp has no forward mode, so only reverse-mode derivatives; the
    # higher ones differentiate through bwd, which is ordinary code.
    f = sin_vjp
    for name in stack:
        f = ALL[name](f)
    k = sum(1 for name in stack if name in REVERSE)
    np.testing.assert_allclose(np.asarray(f(x)), _nth_derivative_of_sin(k, x), rtol=1e-10,
                               atol=1e-12, err_msg=str(stack))
