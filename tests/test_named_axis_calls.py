"""A named vmap axis read by a call, loop or branch none of whose operands is
batched (issue 24, part 4): ``vmap(lambda x: jit(lambda: lax.axis_index('i'))(),
axis_name='i')`` gives ``[0, 1, 2]`` as in JAX, instead of an unbound-axis error.

The batching interpreter gives such a call to its batching rule (which learns the
axis size from ``batching.batch_size``); whether a program reads an axis is
computed once per program and cached.  Every number is compared with JAX 0.10.2.
"""
import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.interpreters import batching
from tangentia.primitives.call import jit_p

jax = pytest.importorskip("jax", reason="JAX is the reference these numbers are checked against")
jax.config.update("jax_enable_x64", True)


def _f(M, N, case):
    lax, jit, vmap = M.lax, M.jit, M.vmap
    return {
        "axis_index": lambda: vmap(lambda x: jit(lambda: lax.axis_index("i"))(),
                                   axis_name="i")(N.arange(3.0)),
        "psum_of_one": lambda: vmap(lambda x: jit(lambda: lax.psum(1, "i"))(),
                                    axis_name="i")(N.arange(3.0)),
        "psum_plus_x": lambda: vmap(lambda x: x + jit(lambda: lax.psum(1.0, "i"))(),
                                    axis_name="i")(N.arange(3.0)),
        "pmean_constant": lambda: vmap(lambda x: jit(lambda: lax.pmean(N.float64(2.0), "i"))(),
                                       axis_name="i")(N.arange(3.0)),
        "unbatched_operand": lambda: vmap(lambda x: jit(lambda c: c + lax.axis_index("i"))(5),
                                          axis_name="i")(N.arange(3.0)),
        "two_names": lambda: vmap(vmap(
            lambda x: jit(lambda: lax.axis_index("i") * 10 + lax.axis_index("j"))(),
            axis_name="j"), axis_name="i")(N.ones((2, 3))),
        "outer_name_only": lambda: vmap(vmap(lambda x: jit(lambda: lax.axis_index("i"))(),
                                             axis_name="j"), axis_name="i")(N.ones((2, 3))),
        "inner_unnamed": lambda: vmap(vmap(lambda x: x + jit(lambda: lax.axis_index("i"))()),
                                      axis_name="i")(N.ones((2, 3))),
        "psum_over_both": lambda: vmap(vmap(lambda x: jit(lambda: lax.psum(1, ("i", "j")))(),
                                            axis_name="j"), axis_name="i")(N.ones((2, 3))),
        "jit_in_jit": lambda: vmap(lambda x: jit(lambda: jit(lambda: lax.axis_index("i"))() + 1)(),
                                   axis_name="i")(N.arange(3.0)),
        "jit_outside": lambda: jit(vmap(lambda x: jit(lambda: lax.axis_index("i"))(),
                                        axis_name="i"))(N.arange(3.0)),
        "scan": lambda: vmap(lambda x: lax.scan(
            lambda c, _: (c + jit(lambda: lax.axis_index("i"))(), None), 0, None, length=3)[0],
            axis_name="i")(N.arange(4.0)),
        "scan_psum": lambda: vmap(lambda x: lax.scan(
            lambda c, _: (c + jit(lambda: lax.psum(1, "i"))(), None), 0, None, length=2)[0],
            axis_name="i")(N.arange(4.0)),
        "fori_loop": lambda: vmap(lambda x: lax.fori_loop(
            0, 2, lambda k, c: c + jit(lambda: lax.axis_index("i"))(), 0),
            axis_name="i")(N.arange(3.0)),
        "cond": lambda: vmap(lambda x: lax.cond(
            True, lambda: jit(lambda: lax.axis_index("i"))(), lambda: lax.axis_index("i") * 2),
            axis_name="i")(N.arange(3.0)),
        "cond_batched_predicate": lambda: vmap(lambda x: lax.cond(
            x > 0, lambda: lax.axis_index("i"), lambda: lax.axis_index("i") * 2),
            axis_name="i")(N.arange(3.0)),
        "checkpoint": lambda: vmap(lambda x: M.checkpoint(lambda: lax.axis_index("i"))(),
                                   axis_name="i")(N.arange(3.0)),
        "axis_size_none_in_axes": lambda: vmap(lambda x: jit(lambda: lax.axis_index("i"))(),
                                               in_axes=None, axis_size=3, axis_name="i")(1.0),
        "grad": lambda: vmap(M.grad(
            lambda x: x * jit(lambda: lax.axis_index("i").astype(float))()),
            axis_name="i")(N.arange(3.0)),
        "jvp": lambda: vmap(lambda x: M.jvp(
            lambda y: y * jit(lambda: lax.axis_index("i"))(), (x,), (1.0,))[1],
            axis_name="i")(N.arange(3.0)),
    }[case]()


CASES = ["axis_index", "psum_of_one", "psum_plus_x", "pmean_constant", "unbatched_operand",
         "two_names", "outer_name_only", "inner_unnamed", "psum_over_both", "jit_in_jit",
         "jit_outside", "scan", "scan_psum", "fori_loop", "cond", "cond_batched_predicate",
         "checkpoint", "axis_size_none_in_axes", "grad", "jvp"]


@pytest.mark.parametrize("case", CASES)
def test_matches_jax(case):
    got = _f(tg, tnp, case)
    want = _f(jax, jax.numpy, case)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_axis_index_values():
    got = tg.vmap(lambda x: tg.jit(lambda: tg.lax.axis_index("i"))(), axis_name="i")(
        tnp.arange(3.0))
    np.testing.assert_array_equal(got, [0, 1, 2])


def test_unbound_name_still_raises():
    with pytest.raises(NameError, match="unbound axis name: k"):
        tg.vmap(lambda x: tg.jit(lambda: tg.lax.axis_index("k"))(), axis_name="i")(
            tnp.arange(3.0))


def test_program_axis_names_are_cached():
    # make_jaxpr outside a vmap cannot bind the names; stage the program under them.
    seen = []

    def f(x):
        closed = tg.make_jaxpr(lambda: tg.jit(lambda: tg.lax.psum(1.0, ("i", "j")))())()
        seen.append(closed)
        return x
    tg.vmap(tg.vmap(f, axis_name="j"), axis_name="i")(np.ones((2, 2)))
    program = seen[0].jaxpr
    assert batching._axis_names(program) == frozenset({"i", "j"})
    assert batching._AXIS_NAMES.get(program) == frozenset({"i", "j"})   # kept
    assert batching._reads_axis(jit_p, {"jaxpr": program}, "j")
    assert not batching._reads_axis(jit_p, {"jaxpr": program}, "k")


def test_unnamed_vmap_without_batched_operands_is_untouched():
    # No name: a call with no batched operand is the parent's (evaluated once).
    calls = []

    def g():
        calls.append(1)
        return tnp.float64(2.0)
    out = tg.vmap(lambda x: x + tg.jit(g)())(tnp.arange(3.0))
    np.testing.assert_array_equal(out, [2.0, 3.0, 4.0])
    assert len(calls) == 1
