"""debug_nans: the first operation creating a NaN is named, eagerly, inside
jit and in the backward pass; nothing changes when it is off."""
import threading
import warnings

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp


def _f(x):
    return tnp.sum(tnp.sqrt(x) * tnp.log(x))


def test_names_the_operation_eagerly_and_inside_jit():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with tg.debug_nans():
            np.testing.assert_allclose(_f(np.array([1.0, 2.0])), np.sqrt(2) * np.log(2))
            with pytest.raises(FloatingPointError, match=r"nan\) encountered in 'sqrt'.*-2\."):
                _f(np.array([1.0, -2.0]))
            with pytest.raises(FloatingPointError, match="encountered in 'sqrt'"):
                tg.jit(_f)(np.array([1.0, -2.0]))


def test_finds_nans_created_in_the_backward_pass():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with tg.debug_nans():
            # d/dx sqrt(x) at 0 is inf; times the zero cotangent gives nan
            with pytest.raises(FloatingPointError, match="encountered in 'div'"):
                tg.grad(lambda x: tnp.sqrt(x) * 0.0)(0.0)


def test_custom_rules_and_off_by_default():
    @tg.custom_jvp
    def f(x):
        return tnp.log(x)

    f.defjvp(lambda p, t: (f(p[0]), t[0] / p[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isnan(_f(np.array([-1.0])))  # off: NaN flows through
        with tg.debug_nans():
            with pytest.raises(FloatingPointError, match="encountered in 'log'"):
                f(-1.0)
            with tg.debug_nans(False):
                assert np.isnan(f(-1.0))


def test_is_per_thread():
    seen = []
    barrier = threading.Barrier(2)

    def other():
        barrier.wait(timeout=10)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            seen.append(float(_f(np.array([-1.0]))))  # not in debug mode: nan

    t = threading.Thread(target=other)
    t.start()
    with tg.debug_nans():
        barrier.wait(timeout=10)
        t.join()
    assert np.isnan(seen[0])


def test_refused_inside_a_transformation():
    with pytest.raises(RuntimeError, match="outside of any transformation"):
        tg.jit(lambda x: tg.debug_nans().__enter__() and x)(1.0)
