"""Tests for tangentia.tree_util (pytree flatten / unflatten machinery)."""

import collections
import copy
import dataclasses
import functools
import operator
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tangentia import tree_util as tu
from tangentia.tree_util import (
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    Partial,
    PyTreeDef,
    SequenceKey,
)

Point = collections.namedtuple("Point", ["x", "y"])


# ---------------------------------------------------------------------------
# Custom node types used across tests (registered once at import time).
# ---------------------------------------------------------------------------


class Box:
    """A custom container registered with register_pytree_node."""

    def __init__(self, a, b, tag="t"):
        self.a, self.b, self.tag = a, b, tag

    def __eq__(self, other):
        return (type(other) is Box and self.a == other.a
                and self.b == other.b and self.tag == other.tag)

    def __repr__(self):
        return f"Box({self.a!r}, {self.b!r}, tag={self.tag!r})"


tu.register_pytree_node(
    Box,
    lambda box: ((box.a, box.b), box.tag),
    lambda tag, children: Box(*children, tag=tag),  # type: ignore[misc]  # children is (a, b)
)


@tu.register_pytree_node_class
class Pair:
    def __init__(self, first, second):
        self.first, self.second = first, second

    def tree_flatten(self):
        return (self.first, self.second), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)

    def __eq__(self, other):
        return (type(other) is Pair and self.first == other.first
                and self.second == other.second)


@tu.register_dataclass
@dataclasses.dataclass
class Params:
    w: object
    b: object
    name: str = dataclasses.field(default="p", metadata=dict(static=True))


@dataclasses.dataclass
class Explicit:
    x: object
    y: object
    scale: float
    cache: object = None


tu.register_dataclass(Explicit, data_fields=["x", "y"], meta_fields=["scale"],
                      drop_fields=["cache"])


# ---------------------------------------------------------------------------
# Hypothesis strategy for nested builtin pytrees
# ---------------------------------------------------------------------------

_leaf = st.one_of(
    st.integers(-1000, 1000),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=3),
    st.none(),
)
_keys = st.text(alphabet="abcdefgh", min_size=1, max_size=3)


def _extend(children):
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(_keys, children, max_size=4),
        st.tuples(children, children).map(lambda t: Point(*t)),
        st.tuples(children, children).map(lambda t: Box(*t)),
        st.dictionaries(_keys, children, max_size=3).map(
            collections.OrderedDict),
    )


pytrees = st.recursive(_leaf, _extend, max_leaves=25)


def _count_nones_as_leaves(tree):
    """Reference leaf collection written independently of tree_util."""
    if tree is None:
        return []
    if isinstance(tree, Box):
        return _count_nones_as_leaves(tree.a) + _count_nones_as_leaves(tree.b)
    if isinstance(tree, collections.OrderedDict):
        return [x for v in tree.values() for x in _count_nones_as_leaves(v)]
    if isinstance(tree, dict):
        return [x for k in sorted(tree)
                for x in _count_nones_as_leaves(tree[k])]
    if isinstance(tree, (list, tuple)):
        return [x for v in tree for x in _count_nones_as_leaves(v)]
    return [tree]


# ---------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(pytrees)
def test_round_trip_hypothesis(tree):
    leaves, treedef = tu.tree_flatten(tree)
    assert leaves == _count_nones_as_leaves(tree)
    assert treedef.num_leaves == len(leaves)
    rebuilt = tu.tree_unflatten(treedef, leaves)
    assert rebuilt == tree
    assert type(rebuilt) is type(tree)
    assert tu.tree_structure(rebuilt) == treedef
    # Repeated unflattening of one treedef goes through the compiled path.
    for _ in range(3):
        assert treedef.unflatten(leaves) == tree


@settings(max_examples=200, deadline=None)
@given(pytrees)
def test_tree_map_identity_and_structure_hypothesis(tree):
    mapped = tu.tree_map(lambda x: ("leaf", x), tree)
    assert tu.tree_leaves(mapped, is_leaf=lambda x: type(x) is tuple
                          and len(x) == 2 and x[:1] == ("leaf",)) == [
        ("leaf", x) for x in tu.tree_leaves(tree)]
    assert tu.tree_map(lambda x: x, tree) == tree
    assert tu.tree_map(lambda x, y: x, tree, tree) == tree


@settings(max_examples=100, deadline=None)
@given(pytrees)
def test_flatten_up_to_self_hypothesis(tree):
    leaves, treedef = tu.tree_flatten(tree)
    assert treedef.flatten_up_to(tree) == leaves


def test_round_trip_mixed_nested():
    a = np.arange(3.0)
    tree = {"z": [a, (1, None)], "a": Point(2.0, {"k": [3]}),
            "m": collections.OrderedDict(q=4, b=5), "n": None}
    leaves, treedef = tu.tree_flatten(tree)
    assert leaves[0] == 2.0 and leaves[1] == 3
    assert leaves[2:4] == [4, 5]
    assert leaves[4] is a and leaves[5] == 1
    assert len(leaves) == 6
    out = treedef.unflatten(leaves)
    assert list(out) == ["a", "m", "n", "z"]
    assert out["a"] == Point(2.0, {"k": [3]})
    assert out["m"] == collections.OrderedDict(q=4, b=5)
    assert out["n"] is None
    assert out["z"][0] is a and out["z"][1] == (1, None)


def test_leaf_root():
    leaves, treedef = tu.tree_flatten(5)
    assert leaves == [5]
    assert repr(treedef) == "PyTreeDef(*)"
    assert tu.tree_unflatten(treedef, [7]) == 7
    assert tu.tree_map(lambda x: x + 1, 5) == 6
    arr = np.ones(2)
    assert tu.tree_leaves(arr)[0] is arr


def test_unflatten_accepts_iterables():
    treedef = tu.tree_structure((0, [0, 0]))
    assert treedef.unflatten(iter([1, 2, 3])) == (1, [2, 3])
    assert treedef.unflatten((1, 2, 3)) == (1, [2, 3])
    assert tu.tree_unflatten(treedef, (x for x in "abc")) == ("a", ["b", "c"])


# ---------------------------------------------------------------------------
# dict / None / namedtuple / collections
# ---------------------------------------------------------------------------


def test_dict_sorted_key_order():
    tree = {"b": 1, "c": 2, "a": 3}
    leaves, treedef = tu.tree_flatten(tree)
    assert leaves == [3, 1, 2]
    assert repr(treedef) == "PyTreeDef({'a': *, 'b': *, 'c': *})"
    rebuilt = treedef.unflatten([10, 20, 30])
    assert type(rebuilt) is dict
    assert rebuilt == {"a": 10, "b": 20, "c": 30}
    assert list(rebuilt) == ["a", "b", "c"]
    # Insertion order does not affect the structure.
    assert tu.tree_structure({"a": 0, "b": 0, "c": 0}) == treedef


def test_dict_with_incomparable_keys_has_deterministic_order():
    t1 = {1: "int", "a": "str"}
    t2 = {"a": "str", 1: "int"}
    l1, d1 = tu.tree_flatten(t1)
    l2, d2 = tu.tree_flatten(t2)
    assert l1 == l2 == ["int", "str"]
    assert d1 == d2
    assert d1.unflatten(l1) == t1


def test_none_is_an_empty_node():
    assert tu.tree_leaves([None, 1]) == [1]
    assert tu.tree_leaves(None) == []
    leaves, treedef = tu.tree_flatten(None)
    assert leaves == [] and treedef.num_leaves == 0 and treedef.num_nodes == 1
    assert repr(treedef) == "PyTreeDef(None)"
    assert treedef.unflatten([]) is None
    assert tu.tree_map(lambda x: x * 2, [None, 1, {"a": None}]) == [
        None, 2, {"a": None}]
    # None is a leaf only when is_leaf says so.
    assert tu.tree_leaves([None, 1], is_leaf=lambda x: x is None) == [None, 1]
    assert (tu.tree_structure([None]) != tu.tree_structure([0]))


def test_namedtuple_round_trip():
    p = Point(x=1, y=(2, 3))
    leaves, treedef = tu.tree_flatten(p)
    assert leaves == [1, 2, 3]
    assert repr(treedef) == "PyTreeDef(CustomNode(namedtuple[Point], [*, (*, *)]))"
    out = treedef.unflatten([4, 5, 6])
    assert type(out) is Point and out == Point(4, (5, 6))
    # A namedtuple is not a tuple node.
    assert tu.tree_structure(p) != tu.tree_structure((1, (2, 3)))
    Other = collections.namedtuple("Other", ["x", "y"])
    assert tu.tree_structure(Other(1, (2, 3))) != treedef


def test_ordered_dict_keeps_insertion_order():
    od = collections.OrderedDict([("b", 1), ("a", 2)])
    leaves, treedef = tu.tree_flatten(od)
    assert leaves == [1, 2]
    out = treedef.unflatten([3, 4])
    assert type(out) is collections.OrderedDict
    assert list(out.items()) == [("b", 3), ("a", 4)]
    assert treedef != tu.tree_structure(collections.OrderedDict(a=1, b=2))
    assert treedef != tu.tree_structure({"b": 1, "a": 2})


def test_defaultdict_sorted_keeps_factory():
    dd = collections.defaultdict(list, {"b": 1, "a": 2})
    leaves, treedef = tu.tree_flatten(dd)
    assert leaves == [2, 1]
    out = treedef.unflatten([5, 6])
    assert type(out) is collections.defaultdict
    assert out.default_factory is list
    assert dict(out) == {"a": 5, "b": 6}
    assert out["missing"] == []
    assert treedef != tu.tree_structure(collections.defaultdict(int, dd))


def test_containers_subclasses_and_other_objects_are_leaves():
    class MyDict(dict):
        pass

    class MyList(list):
        pass

    md, ml = MyDict(a=1), MyList([1, 2])
    obj = object()
    assert tu.tree_leaves([md, ml, obj, "s", 1.5]) == [md, ml, obj, "s", 1.5]
    assert tu.all_leaves([md, ml, obj, 3])
    assert not tu.all_leaves([1, (2,)])
    assert not tu.all_leaves([None])
    assert tu.all_leaves([(1,)], is_leaf=lambda x: isinstance(x, tuple))


# ---------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------


def test_register_pytree_node_custom_class():
    box = Box(1, [2, 3], tag="hi")
    leaves, treedef = tu.tree_flatten(box)
    assert leaves == [1, 2, 3]
    assert repr(treedef) == "PyTreeDef(CustomNode(Box['hi'], [*, [*, *]]))"
    out = treedef.unflatten([7, 8, 9])
    assert out == Box(7, [8, 9], tag="hi")
    # Aux data takes part in equality.
    assert treedef != tu.tree_structure(Box(1, [2, 3], tag="other"))
    assert treedef == tu.tree_structure(Box(0, [0, 0], tag="hi"))
    assert tu.tree_map(lambda x: x * 10, box) == Box(10, [20, 30], tag="hi")


def test_register_pytree_node_class_decorator():
    p = Pair(1, (2, 3))
    assert tu.tree_leaves(p) == [1, 2, 3]
    assert tu.tree_map(lambda x: -x, p) == Pair(-1, (-2, -3))


def test_registering_twice_raises():
    class Once:
        pass

    tu.register_pytree_node(Once, lambda o: ((), None), lambda a, c: Once())
    with pytest.raises(ValueError, match="Duplicate.*Once"):
        tu.register_pytree_node(Once, lambda o: ((), None),
                                lambda a, c: Once())
    with pytest.raises(ValueError, match="Duplicate"):
        tu.register_pytree_node(Box, lambda b: ((), None), lambda a, c: None)
    for builtin in (tuple, list, dict, type(None)):
        with pytest.raises(ValueError, match="builtin"):
            tu.register_pytree_node(builtin, lambda b: ((), None),
                                    lambda a, c: None)


def test_registering_a_type_already_seen_as_leaf():
    class Late:
        def __init__(self, v):
            self.v = v

    late = Late(3)
    # Seen as a leaf first (this caches the type as a leaf type) ...
    assert tu.tree_leaves([late]) == [late]
    tu.register_pytree_node(Late, lambda o: ((o.v,), None),
                            lambda a, c: Late(*c))
    # ... and is a node once registered.
    assert tu.tree_leaves([late, late]) == [3, 3]
    assert tu.tree_map(lambda x: x + 1, late).v == 4


def test_register_static():
    @tu.register_static
    class Config:
        def __init__(self, n):
            self.n = n

        def __eq__(self, other):
            return type(other) is Config and other.n == self.n

        def __hash__(self):
            return hash(self.n)

    c = Config(3)
    leaves, treedef = tu.tree_flatten((1, c))
    assert leaves == [1]
    assert treedef.unflatten([2]) == (2, c)
    assert treedef != tu.tree_structure((1, Config(4)))


def test_register_dataclass_decorator_uses_static_metadata():
    p = Params(w=np.ones(2), b=3.0, name="layer")
    leaves, treedef = tu.tree_flatten(p)
    assert len(leaves) == 2
    assert leaves[0] is p.w and leaves[1] == 3.0
    assert repr(treedef) == (
        "PyTreeDef(CustomNode(Params[('layer',)], [*, *]))")
    out = treedef.unflatten([1, 2])
    assert out == Params(w=1, b=2, name="layer")
    assert treedef != tu.tree_structure(Params(w=1, b=2, name="other"))
    assert tu.tree_map(lambda x: x * 2, Params(1, 2)) == Params(2, 4)


def test_register_dataclass_explicit_fields_and_drop():
    e = Explicit(x=1, y=[2], scale=0.5, cache="junk")
    leaves, treedef = tu.tree_flatten(e)
    assert leaves == [1, 2]
    out = treedef.unflatten([10, 20])
    assert out == Explicit(x=10, y=[20], scale=0.5, cache=None)
    assert tu.tree_structure(Explicit(0, [0], 2.0)) != treedef


def test_register_dataclass_validation_errors():
    @dataclasses.dataclass
    class D:
        a: int
        b: int

    with pytest.raises(ValueError, match=r"missing fields \['b'\]"):
        tu.register_dataclass(D, data_fields=["a"], meta_fields=[])
    with pytest.raises(ValueError, match=r"unexpected fields \['c'\]"):
        tu.register_dataclass(D, data_fields=["a", "b", "c"], meta_fields=[])
    with pytest.raises(TypeError, match="both"):
        tu.register_dataclass(D, data_fields=["a", "b"])

    class NotADataclass:
        pass

    with pytest.raises(TypeError, match="not a dataclass"):
        tu.register_dataclass(NotADataclass)
    # After the failed attempts D is still registrable.
    assert tu.register_dataclass(D) is D
    assert tu.tree_leaves(D(1, 2)) == [1, 2]


def test_register_dataclass_non_dataclass_with_explicit_fields():
    class Plain:
        def __init__(self, u, k):
            self.u, self.k = u, k

    assert tu.register_dataclass(Plain, ["u"], ["k"]) is Plain
    leaves, treedef = tu.tree_flatten(Plain(u=5, k="key"))
    assert leaves == [5]
    out = treedef.unflatten([6])
    assert (out.u, out.k) == (6, "key")


# ---------------------------------------------------------------------------
# Partial
# ---------------------------------------------------------------------------


def _f(a, b, c=0):
    return (a, b, c)


def test_partial_is_a_pytree():
    p = Partial(_f, 1, c=3)
    assert isinstance(p, functools.partial)
    assert p(2) == (1, 2, 3)
    leaves, treedef = tu.tree_flatten(p)
    assert leaves == [1, 3]
    assert repr(treedef) == (
        f"PyTreeDef(CustomNode(Partial[{_f!r}], [(*,), {{'c': *}}]))")
    q = tu.tree_map(lambda x: x * 10, p)
    assert type(q) is Partial
    assert q.func is _f and q.args == (10,) and q.keywords == {"c": 30}
    assert q(2) == (10, 2, 30)
    # Same function and arg structure => same treedef; the function is static.
    assert tu.tree_structure(Partial(_f, 9, c=9)) == treedef
    assert tu.tree_structure(Partial(max, 9, c=9)) != treedef


def test_partial_wrapping_a_functools_partial_keeps_its_args_static():
    inner = functools.partial(_f, 1)
    p = Partial(inner, 2)
    assert tu.tree_leaves(p) == [2]
    assert p() == (1, 2, 0)
    assert tu.tree_map(lambda x: x + 1, p)() == (1, 3, 0)
    nested = Partial(Partial(_f, 1), 2)
    assert tu.tree_leaves(nested) == [2]
    assert nested(5) == (1, 2, 5)


def test_partial_with_array_leaves_round_trip():
    a = np.arange(3)
    p = Partial(np.add, a)
    leaves, treedef = tu.tree_flatten(p)
    assert leaves[0] is a
    q = treedef.unflatten([a + 1])
    np.testing.assert_array_equal(q(1), np.array([2, 3, 4]))


# ---------------------------------------------------------------------------
# is_leaf
# ---------------------------------------------------------------------------


def test_is_leaf_stops_descent():
    tree = {"a": (1, 2), "b": [(3, 4), 5]}
    is_pair = lambda x: isinstance(x, tuple) and len(x) == 2  # noqa: E731
    leaves, treedef = tu.tree_flatten(tree, is_leaf=is_pair)
    assert leaves == [(1, 2), (3, 4), 5]
    assert repr(treedef) == "PyTreeDef({'a': *, 'b': [*, *]})"
    summed = tu.tree_map(lambda x: sum(x) if isinstance(x, tuple) else -x,
                         tree, is_leaf=is_pair)
    assert summed == {"a": 3, "b": [7, -5]}
    # The root itself can be a leaf.
    assert tu.tree_leaves((1, 2), is_leaf=is_pair) == [(1, 2)]


def test_is_leaf_is_consulted_for_registered_types():
    box = Box(1, 2)
    assert tu.tree_leaves([box], is_leaf=lambda x: isinstance(x, Box)) == [box]
    assert tu.tree_leaves([box]) == [1, 2]


# ---------------------------------------------------------------------------
# tree_map with several trees
# ---------------------------------------------------------------------------


def test_tree_map_multiple_trees():
    t1 = {"a": 1, "b": (2, 3)}
    t2 = {"a": 10, "b": (20, 30)}
    t3 = {"a": 100, "b": (200, 300)}
    assert tu.tree_map(lambda x, y, z: x + y + z, t1, t2, t3) == {
        "a": 111, "b": (222, 333)}


def test_tree_map_prefix_trees():
    # Later trees may be deeper: the first tree's structure is a prefix.
    out = tu.tree_map(lambda x, y: (x, y), (1, 2), ((1, 2), [3]))
    assert out == ((1, (1, 2)), (2, [3]))
    out = tu.tree_map(lambda x, y: len(y), {"a": 0, "b": 0},
                      {"a": [1, 2], "b": {"c": None}})
    assert out == {"a": 2, "b": 1}


def test_tree_map_mismatch_error_names_both_structures():
    with pytest.raises(ValueError) as info:
        tu.tree_map(lambda x, y: x, (1, 2), (1, 2, 3))
    msg = str(info.value)
    assert "PyTreeDef((*, *))" in msg
    assert "PyTreeDef((*, *, *))" in msg
    assert "arity mismatch: expected 2, got 3" in msg

    with pytest.raises(ValueError) as info:
        tu.tree_map(lambda x, y: x, {"a": 1}, {"b": 1})
    msg = str(info.value)
    assert "PyTreeDef({'a': *})" in msg and "PyTreeDef({'b': *})" in msg
    assert "expected keys ['a'], got ['b']" in msg

    with pytest.raises(ValueError) as info:
        tu.tree_map(lambda x, y, z: x, [1], [1], (1,))
    msg = str(info.value)
    assert "rest[1]" in msg and "expected list, got tuple" in msg
    assert "PyTreeDef([*])" in msg and "PyTreeDef((*,))" in msg


def test_tree_map_none_must_match_none():
    assert tu.tree_map(lambda x, y: x + y, (None, 1), (None, 2)) == (None, 3)
    with pytest.raises(ValueError, match="expected None, got 5"):
        tu.tree_map(lambda x, y: x, (None, 1), (5, 2))


def test_tree_map_custom_node_aux_mismatch():
    with pytest.raises(ValueError) as info:
        tu.tree_map(lambda x, y: x, Box(1, 2, tag="a"), Box(1, 2, tag="b"))
    msg = str(info.value)
    assert "expected 'a', got 'b'" in msg
    assert "CustomNode(Box['a'], [*, *])" in msg
    assert "CustomNode(Box['b'], [*, *])" in msg


# ---------------------------------------------------------------------------
# PyTreeDef
# ---------------------------------------------------------------------------


def test_treedef_equality_and_hash():
    d1 = tu.tree_structure({"a": [1, 2], "b": None})
    d2 = tu.tree_structure({"b": None, "a": [np.ones(3), "x"]})
    d3 = tu.tree_structure({"a": [1, 2], "b": 3})
    d4 = tu.tree_structure({"a": (1, 2), "b": None})
    assert d1 == d2 and hash(d1) == hash(d2)
    assert d1 != d3 and d1 != d4
    assert len({d1, d2, d3, d4}) == 3
    cache = {d1: "hit"}
    assert cache[d2] == "hit"
    assert (d1 == "not a treedef") is False
    assert isinstance(d1, PyTreeDef)


def test_treedef_properties_and_children():
    treedef = tu.tree_structure((1, {"a": 2, "b": None}, [3, (4,)]))
    assert treedef.num_leaves == 4
    # tuple + leaf + dict + leaf + None + list + leaf + tuple + leaf
    assert treedef.num_nodes == 9
    kids = treedef.children()
    assert [repr(k) for k in kids] == [
        "PyTreeDef(*)", "PyTreeDef({'a': *, 'b': None})", "PyTreeDef([*, (*,)])"]
    assert [k.num_leaves for k in kids] == [1, 1, 2]
    assert tu.treedef_children(treedef) == kids
    assert tu.tree_structure(1).children() == []
    assert treedef.node_data() == (tuple, None)
    assert kids[1].node_data() == (dict, ["a", "b"])
    assert kids[0].node_data() is None


def test_treedef_repr():
    assert repr(tu.tree_structure((1, {"a": 2, "b": None}))) == (
        "PyTreeDef((*, {'a': *, 'b': None}))")
    assert repr(tu.tree_structure([(1,)])) == "PyTreeDef([(*,)])"
    assert repr(tu.tree_structure(())) == "PyTreeDef(())"
    assert repr(tu.tree_structure([])) == "PyTreeDef([])"
    assert repr(tu.tree_structure({})) == "PyTreeDef({})"
    assert repr(tu.tree_structure(collections.OrderedDict(b=1, a=2))) == (
        "PyTreeDef(CustomNode(OrderedDict[('b', 'a')], [*, *]))")


def test_treedef_is_leaf_helpers():
    assert tu.treedef_is_leaf(tu.tree_structure(1))
    assert tu.treedef_is_strict_leaf(tu.tree_structure(1))
    # As in JAX, treedef_is_leaf is true for any single-node treedef.
    assert tu.treedef_is_leaf(tu.tree_structure(None))
    assert not tu.treedef_is_strict_leaf(tu.tree_structure(None))
    assert not tu.treedef_is_leaf(tu.tree_structure((1,)))


def test_treedef_tuple_and_compose():
    a = tu.tree_structure([0, 0])
    b = tu.tree_structure({"k": 0})
    t = tu.treedef_tuple([a, b])
    assert t == tu.tree_structure(([1, 2], {"k": 3}))
    assert t.num_leaves == 3
    c = a.compose(b)
    assert c == tu.tree_structure([{"k": 1}, {"k": 2}])
    assert c.num_leaves == 2


def test_treedef_pickle_and_copy():
    treedef = tu.tree_structure(
        {"a": Point(1, None), "b": collections.OrderedDict(x=1), "c": Box(1, 2)})
    clone = pickle.loads(pickle.dumps(treedef))
    assert clone == treedef and hash(clone) == hash(treedef)
    assert clone.unflatten([1, 2, 3, 4])["c"] == Box(3, 4)
    assert copy.deepcopy(treedef) is treedef


def test_flatten_up_to():
    treedef = tu.tree_structure((0, {"a": 0, "b": 0}))
    subtrees = treedef.flatten_up_to(([1, 2], {"a": (3,), "b": None}))
    assert subtrees == [[1, 2], (3,), None]
    assert treedef.flatten_up_to((1, {"a": 2, "b": 3})) == [1, 2, 3]


def test_flatten_up_to_mismatch_errors():
    treedef = tu.tree_structure((0, {"a": 0}))
    with pytest.raises(ValueError) as info:
        treedef.flatten_up_to([1, {"a": 2}])
    msg = str(info.value)
    assert "expected tuple, got list" in msg
    assert "PyTreeDef((*, {'a': *}))" in msg
    assert "PyTreeDef([*, {'a': *}])" in msg

    with pytest.raises(ValueError, match="dict key mismatch"):
        treedef.flatten_up_to((1, {"b": 2}))
    with pytest.raises(ValueError, match="arity mismatch: expected 2, got 1"):
        treedef.flatten_up_to((1,))
    with pytest.raises(ValueError, match="expected namedtuple Point"):
        tu.tree_structure(Point(0, 0)).flatten_up_to((1, 2))
    with pytest.raises(ValueError, match="expected Box, got Pair"):
        tu.tree_structure(Box(0, 0)).flatten_up_to(Pair(1, 2))


def test_unflatten_wrong_number_of_leaves():
    treedef = tu.tree_structure((0, [0, 0]))
    with pytest.raises(ValueError, match="expected 3, got 2"):
        tu.tree_unflatten(treedef, [1, 2])
    with pytest.raises(ValueError, match="expected 3, got 4"):
        treedef.unflatten([1, 2, 3, 4])
    # JAX's words first ("Too few leaves for PyTreeDef; expected 1, got 0"), then the structure
    with pytest.raises(ValueError, match=r"^Too few leaves for PyTreeDef; expected 1, got 0 "
                                         r"\(PyTreeDef\(\*\)\)"):
        tu.tree_structure(1).unflatten([])
    with pytest.raises(ValueError, match=r"^Too many leaves for PyTreeDef; expected 3"):
        treedef.unflatten([1, 2, 3, 4])


def test_repeated_unflatten_is_correct_and_independent():
    treedef = tu.tree_structure(
        {"l": [0, None, Point(0, [0])], "d": collections.defaultdict(int, z=0),
         "p": Partial(_f, 0), "b": Box(0, {"q": 0}, tag=("t", 1))})
    results = [treedef.unflatten(list(range(i, i + 7))) for i in range(4)]
    for i, r in enumerate(results):
        assert tu.tree_leaves(r) == list(range(i, i + 7))
        assert tu.tree_structure(r) == treedef
        assert r["b"].tag == ("t", 1)
        assert r["d"].default_factory is int
        # Sorted keys b, d, l, p: the Partial's bound arg is the last leaf.
        assert r["p"](100) == (i + 6, 100, 0)
    # Mutable containers are fresh objects on every call.
    assert results[2]["l"] is not results[3]["l"]


def test_deep_and_wide_trees():
    deep = 0
    for _ in range(500):
        deep = [deep]
    leaves, treedef = tu.tree_flatten(deep)
    assert leaves == [0]
    for _ in range(3):
        out = treedef.unflatten([1])
    for _ in range(500):
        out = out[0]
    assert out == 1
    wide = {f"k{i:04d}": (i, [i]) for i in range(3000)}
    leaves, treedef = tu.tree_flatten(wide)
    assert leaves[:4] == [0, 0, 1, 1] and len(leaves) == 6000
    for _ in range(3):
        assert treedef.unflatten(leaves) == wide


# ---------------------------------------------------------------------------
# tree_reduce / tree_all / tree_transpose
# ---------------------------------------------------------------------------


def test_tree_reduce():
    tree = {"a": 1, "b": [2, 3, None]}
    assert tu.tree_reduce(operator.add, tree) == 6
    assert tu.tree_reduce(operator.add, tree, 10) == 16
    assert tu.tree_reduce(operator.add, None, 0) == 0
    assert tu.tree_reduce(lambda a, b: a + len(b), [(1, 2), (3,)], 0,
                          is_leaf=lambda x: isinstance(x, tuple)) == 3
    with pytest.raises(TypeError, match="no leaves"):
        tu.tree_reduce(operator.add, [])


def test_tree_all():
    assert tu.tree_all([True, {"a": 1}, None]) is True
    assert tu.tree_all([True, {"a": 0}]) is False
    assert tu.tree_all([]) is True


def test_tree_transpose():
    outer = tu.tree_structure([0, 0, 0])
    inner = tu.tree_structure((0, 0))
    tree = [(1, 2), (3, 4), (5, 6)]
    assert tu.tree_transpose(outer, inner, tree) == ([1, 3, 5], [2, 4, 6])
    assert tu.tree_transpose(outer, None, tree) == ([1, 3, 5], [2, 4, 6])
    inner_d = tu.tree_structure({"x": 0, "y": 0})
    tree_d = [{"x": 1, "y": 2}, {"x": 3, "y": 4}, {"x": 5, "y": 6}]
    assert tu.tree_transpose(outer, inner_d, tree_d) == {
        "x": [1, 3, 5], "y": [2, 4, 6]}
    with pytest.raises(TypeError) as info:
        tu.tree_transpose(outer, inner, [(1, 2), (3, 4)])
    msg = str(info.value)
    assert "PyTreeDef([(*, *), (*, *)])" in msg
    assert "PyTreeDef([(*, *), (*, *), (*, *)])" in msg


# ---------------------------------------------------------------------------
# Key paths
# ---------------------------------------------------------------------------


def test_flatten_with_path():
    tree = {"a": [1, Point(2, 3)], "b": Params(w=4, b=5), "c": Box(6, 7)}
    path_leaves, treedef = tu.tree_flatten_with_path(tree)
    assert treedef == tu.tree_structure(tree)
    assert [leaf for _, leaf in path_leaves] == [1, 2, 3, 4, 5, 6, 7]
    paths = [p for p, _ in path_leaves]
    assert paths[0] == (DictKey("a"), SequenceKey(0))
    assert paths[1] == (DictKey("a"), SequenceKey(1), GetAttrKey("x"))
    assert paths[3] == (DictKey("b"), GetAttrKey("w"))
    assert paths[6] == (DictKey("c"), FlattenedIndexKey(1))
    assert [tu.keystr(p) for p in paths] == [
        "['a'][0]", "['a'][1].x", "['a'][1].y", "['b'].w", "['b'].b",
        "['c'][<flat index 0>]", "['c'][<flat index 1>]"]
    assert tu.keystr(paths[1], simple=True, separator="/") == "a/1/x"
    assert tu.tree_leaves_with_path([None, 8]) == [((SequenceKey(1),), 8)]


def test_tree_map_with_path():
    tree = {"w": 1, "b": [2, 3]}
    out = tu.tree_map_with_path(lambda p, x, y: (tu.keystr(p), x + y),
                                tree, tree)
    assert out == {"w": ("['w']", 2), "b": [("['b'][0]", 4), ("['b'][1]", 6)]}


def test_register_pytree_with_keys():
    class Named:
        def __init__(self, items):
            self.items = dict(items)

    tu.register_pytree_with_keys(
        Named,
        lambda n: ([(GetAttrKey(k), v) for k, v in sorted(n.items.items())],
                   tuple(sorted(n.items))),
        lambda keys, children: Named(zip(keys, children)))
    n = Named({"beta": 2, "alpha": 1})
    assert tu.tree_leaves(n) == [1, 2]
    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(n)] == [
        ".alpha", ".beta"]
    assert tu.tree_map(lambda x: x * 3, n).items == {"alpha": 3, "beta": 6}
