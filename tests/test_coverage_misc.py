"""The tree_util and top-level names added to close JAX's API gaps: results as JAX 0.10.2
gives them (baked in), cache clearing observed on a jitted function, the configuration
states as context managers."""
import collections

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
import tangentia.tree_util as tu


def test_flatten_one_level():
    # JAX 0.10.2's results.
    assert tu.flatten_one_level({"a": 1, "b": (2, 3)}) == ((1, (2, 3)), ("a", "b"))
    assert tu.flatten_one_level_with_keys({"a": 1, "b": (2, 3)}) == (
        ((tu.DictKey("a"), 1), (tu.DictKey("b"), (2, 3))), ("a", "b"))
    assert tu.flatten_one_level([1, [2]]) == ((1, [2]), None)
    assert tu.flatten_one_level(None) == ((), None)
    Point = collections.namedtuple("Point", "x y")
    children, aux = tu.flatten_one_level_with_keys(Point(1, 2))
    assert children == ((tu.GetAttrKey("x"), 1), (tu.GetAttrKey("y"), 2)) and aux is Point
    with pytest.raises(ValueError, match="can't tree-flatten type: <class 'int'>"):
        tu.flatten_one_level(3)
    assert tu.default_registry.flatten_one_level(3) is None
    assert tu.default_registry.flatten([1, (2,)])[0] == [1, 2]


def test_flatten_one_level_of_registered_nodes():
    class Box:
        def __init__(self, a, b):
            self.a, self.b = a, b
    tu.register_pytree_node(Box, lambda b: ((b.a, b.b), "box"), lambda aux, ch: Box(*ch))
    children, aux = tu.flatten_one_level_with_keys(Box(1, 2))
    assert children == ((tu.FlattenedIndexKey(0), 1), (tu.FlattenedIndexKey(1), 2))
    assert aux == "box"
    assert tu.is_tree_node(Box) and tu.default_registry.is_node(Box)


def test_is_tree_node():
    assert [tu.is_tree_node(t) for t in (int, list, tuple, dict, type(None), np.ndarray)] == [
        False, True, True, True, True, False]
    with pytest.raises(TypeError, match="is_tree_node.*'typ'"):
        tu.is_tree_node(None)


def test_tree_broadcast_and_tree_reduce_associative():
    assert tu.tree_broadcast((1, 2), ((3, 4), 5)) == ((1, 1), 2)
    assert tu.tree_broadcast({"a": 0, "b": [1]}, {"a": [5, 6], "b": [{"c": 7}]}) == {
        "a": [0, 0], "b": [{"c": 1}]}
    calls = []

    def op(a, b):
        calls.append((a, b))
        return a + b
    assert tu.tree_reduce_associative(op, [1, 2, 3, 4, 5]) == 15
    assert calls == [(1, 2), (4, 5), (3, 9), (3, 12)]      # halves first, as JAX 0.10.2
    assert tu.tree_reduce_associative(op, [], identity=0) == 0
    with pytest.raises(TypeError, match="Must specify identity"):
        tu.tree_reduce_associative(op, [])
    assert tu.KeyPath.__args__ == (tu.KeyEntry, Ellipsis)      # tuple[KeyEntry, ...]


def test_clear_caches_drops_compiled_programs():
    traces = []

    def f(x):
        traces.append(1)
        return x * 2.0
    jf = tg.jit(f)
    np.testing.assert_array_equal(jf(np.ones(2)), 2.0)
    jf(np.ones(2))
    assert len(traces) == 1 and jf._cache_size() == 1
    tg.clear_caches()
    assert jf._cache_size() == 0
    np.testing.assert_array_equal(jf(np.ones(2)), 2.0)
    assert len(traces) == 2


def test_named_call_named_scope_typeof_float0():
    f = tg.named_call(lambda x: tnp.sin(x) * 2, name="double_sin")
    assert f.__name__ == "double_sin"
    np.testing.assert_allclose(tg.grad(f)(0.3), 2 * np.cos(0.3))
    with tg.named_scope("layer1"):
        np.testing.assert_allclose(tg.jit(f)(0.3), 2 * np.sin(0.3))
    with pytest.raises(TypeError, match="named_scope.*'name'"):
        with tg.named_scope(3):
            pass
    t = tg.typeof(np.ones((2, 3), np.float32))
    assert t.shape == (2, 3) and t.dtype == np.float32
    assert tg.typeof(1.0).weak_type
    seen = []
    tg.vmap(lambda x: seen.append(tg.typeof(x).shape) or x)(np.ones((4, 3)))
    assert seen == [(3,)]
    assert tg.float0 == np.dtype([("float0", np.void, 0)]) and tg.float0.itemsize == 0


def test_configuration_states_are_context_managers():
    assert tg.enable_x64.value is True
    with tg.enable_x64(True), tg.default_matmul_precision("highest"), tg.log_compiles(), \
            tg.numpy_rank_promotion("allow"), tg.numpy_dtype_promotion("standard"), \
            tg.default_device(tg.devices()[0]), tg.transfer_guard("disallow"), \
            tg.check_tracer_leaks(True), tg.checking_leaks(), tg.debug_infs(False):
        assert tg.log_compiles.value is True
        assert tg.default_matmul_precision.value == "highest"
        assert tg.transfer_guard_host_to_device.value == "disallow"
        np.testing.assert_allclose(tg.jit(lambda x: x @ x)(np.eye(2)), np.eye(2))
    assert tg.log_compiles.value is False and tg.transfer_guard_host_to_device.value == "allow"
    for state, value in [(tg.enable_x64, False), (tg.numpy_rank_promotion, "raise"),
                         (tg.numpy_dtype_promotion, "strict"), (tg.debug_infs, True)]:
        with pytest.raises(NotImplementedError, match=state.__name__):
            with state(value):
                pass
    with pytest.raises(ValueError, match="transfer_guard.*'new_val'"):
        with tg.transfer_guard("sometimes"):
            pass
