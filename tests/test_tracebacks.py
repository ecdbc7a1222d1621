"""Tracebacks of errors inside transformations show the user's frames."""
import os
import traceback

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax

PKG = os.path.dirname(tg.__file__) + os.sep


def library_frames(tb):
    return [f for f in traceback.extract_tb(tb) if f.filename.startswith(PKG)]


def user_functions(tb):
    return [f.name for f in traceback.extract_tb(tb) if not f.filename.startswith(PKG)]


@pytest.fixture
def filtering_default():
    yield
    tg.config.update("tangentia_traceback_filtering", None)


def _bwd_error():
    @tg.custom_vjp
    def f(x):
        return tnp.sin(x)

    def f_fwd(x):
        return f(x), x

    def f_bwd(x, g):
        raise ValueError("boom in bwd")

    f.defvjp(f_fwd, f_bwd)
    with pytest.raises(ValueError, match="boom in bwd") as info:
        tg.jit(tg.grad(f))(1.0)
    return info.value


def test_error_in_custom_vjp_bwd_under_jit_grad_shows_only_user_frames():
    e = _bwd_error()
    assert library_frames(e.__traceback__) == []
    assert user_functions(e.__traceback__)[-1] == "f_bwd"
    assert not getattr(e, "__notes__", None)  # the message is exactly the user's
    # The whole trace stays reachable.
    full = e.__tangentia_unfiltered_traceback__
    assert len(library_frames(full)) > 5
    assert user_functions(full)[-1] == "f_bwd"


def test_error_from_a_check_keeps_only_the_frame_that_raised():
    def g(x):
        return x + tnp.ones(4)

    with pytest.raises(TypeError, match=r"^add got incompatible shapes for broadcasting: \(3,\), \(4,\)") as info:
        tg.jit(tg.vmap(tg.grad(lambda x: tnp.sum(g(x)))))(np.ones((2, 3)))
    tb = info.value.__traceback__
    lib = library_frames(tb)
    assert len(lib) == 1 and traceback.extract_tb(tb)[-1] == lib[0]
    names = user_functions(tb)
    assert names.count("g") == 1  # nested transformations do not repeat the user's frames
    assert "g" in user_functions(info.value.__tangentia_unfiltered_traceback__)


def test_error_in_a_scan_body_under_grad():
    def body(c, x):
        if c.shape != ():
            raise AssertionError("not reached")
        raise KeyError("bad step")

    with pytest.raises(KeyError, match="bad step") as info:
        tg.grad(lambda c: lax.scan(body, c, np.ones(3))[0])(1.0)
    assert library_frames(info.value.__traceback__) == []
    assert user_functions(info.value.__traceback__)[-1] == "body"


def test_filtering_can_be_switched_off(filtering_default):
    tg.config.update("tangentia_traceback_filtering", "off")
    e = _bwd_error()
    assert len(library_frames(e.__traceback__)) > 5
    tg.config.update("jax_traceback_filtering", "remove_frames")  # JAX's name and value
    assert library_frames(_bwd_error().__traceback__) == []
    with pytest.raises(ValueError, match="tangentia_traceback_filtering"):
        tg.config.update("tangentia_traceback_filtering", "sometimes")


def test_environment_variable_switches_filtering_off(monkeypatch):
    monkeypatch.setenv("TANGENTIA_TRACEBACK_FILTERING", "off")
    assert len(library_frames(_bwd_error().__traceback__)) > 5
