"""Pytree utilities: flatten / unflatten nested containers of arrays.

This module mirrors the public names and signatures of ``jax.tree_util``.  It
is on the hot path of every ``jit`` call (arguments are flattened on each
call), so the implementation favours speed over elegance:

* A tree structure is stored as nested plain tuples ``(kind, aux, children)``
  (a leaf is represented by ``None``).  Equality and hashing of
  :class:`PyTreeDef` therefore run almost entirely in C (tuple comparison /
  tuple hashing), and the hash is cached.
* ``tuple``, ``list``, ``dict`` and ``None`` are handled by direct type checks
  before the registry is consulted; the registry (``type -> _Registration``)
  is looked up once per remaining node.
* Types seen to be leaves are remembered in a small set, so a leaf costs one
  set lookup and a container whose children are all leaves is recognised by
  a single C-level ``set.issuperset(map(type, children))`` call.
* Flattening with and without ``is_leaf`` uses two separate functions so that
  the common case pays nothing for the option.
* A PyTreeDef that is unflattened more than once (e.g. an output structure
  kept in a jit cache) compiles a straight-line unflatten function.

Node kinds (first element of a node tuple):

``tuple`` / ``list``      builtin sequences, aux is ``None``
``dict``                  aux is the tuple of keys in sorted order
``_NONE``                 the ``None`` node (no children, not a leaf)
``_NAMEDTUPLE``           aux is the namedtuple class
``_Registration``         a registered custom node type, aux is user data

The registry is a module level dict that is written only at registration
time.  Deviations from JAX: dicts whose keys cannot be sorted are ordered
deterministically by (key type, repr) instead of raising; mismatch error
messages have their own wording.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import operator
from itertools import islice
from typing import Any, Callable, Hashable, Iterable, NamedTuple, Tuple, TypeVar

import numpy as np

_Typ = TypeVar("_Typ", bound=type)  # a class decorator returns its class

__all__ = [
    "PyTreeDef",
    "Partial",
    "tree_flatten",
    "tree_unflatten",
    "tree_leaves",
    "tree_structure",
    "tree_map",
    "tree_reduce",
    "tree_all",
    "tree_transpose",
    "treedef_children",
    "treedef_is_leaf",
    "treedef_is_strict_leaf",
    "treedef_tuple",
    "all_leaves",
    "register_pytree_node",
    "register_pytree_node_class",
    "register_pytree_with_keys",
    "register_pytree_with_keys_class",
    "register_dataclass",
    "register_static",
    "SequenceKey",
    "DictKey",
    "GetAttrKey",
    "FlattenedIndexKey",
    "keystr",
    "tree_flatten_with_path",
    "tree_leaves_with_path",
    "tree_map_with_path",
    "KeyEntry",
    "KeyPath",
    "default_registry",
    "flatten_one_level",
    "flatten_one_level_with_keys",
    "is_tree_node",
    "tree_broadcast",
    "tree_reduce_associative",
]


# ---------------------------------------------------------------------------
# Node kinds and the registry
# ---------------------------------------------------------------------------


class _Kind:
    """A named singleton node kind (``None`` nodes, namedtuples)."""

    __slots__ = ("_name",)

    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return self._name

    def __reduce__(self):
        # Pickle as a reference to the module-level singleton.
        return self._name


_NONE = _Kind("_NONE")
_NAMEDTUPLE = _Kind("_NAMEDTUPLE")

# The node used for every ``None`` in a tree (shared, it has no payload).
_NONE_NODE = (_NONE, None, ())
_EMPTY_DICT_NODE = (dict, (), ())


class _Registration:
    """Flatten / unflatten functions of one registered custom node type."""

    __slots__ = ("type", "flatten", "unflatten", "flatten_with_keys")

    def __init__(self, nodetype, flatten, unflatten, flatten_with_keys=None):
        self.type = nodetype
        self.flatten = flatten
        self.unflatten = unflatten
        self.flatten_with_keys = flatten_with_keys

    def __repr__(self) -> str:
        return f"<pytree node {self.type.__qualname__}>"

    def __reduce__(self):
        return (_lookup_registration, (self.type,))


def _lookup_registration(nodetype):
    try:
        return _registry[nodetype]
    except KeyError:
        raise ValueError(
            f"{nodetype!r} is not a registered pytree node type") from None


# type -> _Registration.  Written only by the register_* functions.
_registry: dict[type, _Registration] = {}

# Types with built-in handling that cannot be (re-)registered.
_BUILTIN_NODE_TYPES = (tuple, list, dict, type(None))


# ---------------------------------------------------------------------------
# Flattening
# ---------------------------------------------------------------------------

# Types known to be leaves (not containers, not registered).  It lets the
# flatteners recognise the common leaves (arrays, scalars, tracers) with a
# single set lookup, and flat containers of leaves with one C-level
# ``issuperset`` call.  It is written only at definition/registration time
# (``register_leaf_type`` for tracer classes; ``_register`` removes a type
# that becomes a node), never while flattening: no mutable state at run time.
_leaf_types: set = {int, float, complex, bool, str, bytes, np.ndarray,
                    np.float64, np.float32, np.float16, np.int64, np.int32,
                    np.int16, np.int8, np.uint64, np.uint32, np.uint16,
                    np.uint8, np.bool_, np.complex128, np.complex64}


def register_leaf_type(t) -> None:
    """Declare ``t`` a leaf type (for the fast path; every unregistered type is
    a leaf anyway).  Used for tracer classes at definition time."""
    if t not in _registry:
        _leaf_types.add(t)


def _sorted_keys(d) -> tuple:
    try:
        return tuple(sorted(d))
    except TypeError:
        # Keys of mutually incomparable types (e.g. ``{1: .., 'a': ..}``):
        # fall back to a deterministic order, grouping by type name.
        return tuple(sorted(d, key=_fallback_key))


def _fallback_key(k):
    return (type(k).__module__, type(k).__qualname__, repr(k))


def _flatten(x, leaves):
    """Append the leaves of ``x`` to ``leaves`` and return its node."""
    t = type(x)
    if t is tuple or t is list:
        kind = t
        aux = None
        children = x
    elif t is dict:
        if not x:
            return _EMPTY_DICT_NODE
        kind = dict
        try:
            aux = tuple(sorted(x))
        except TypeError:
            aux = _sorted_keys(x)
        children = [*map(x.__getitem__, aux)]
    elif x is None:
        return _NONE_NODE
    elif t in _leaf_types:
        leaves.append(x)
        return None
    else:
        kind = _registry.get(t)
        if kind is not None:
            children, aux = kind.flatten(x)
            if type(children) is not tuple and type(children) is not list:
                children = list(children)
        elif issubclass(t, tuple) and hasattr(t, "_fields"):
            kind = _NAMEDTUPLE
            aux = t
            children = x
        else:
            leaves.append(x)
            return None
    lt = _leaf_types
    if lt.issuperset(map(type, children)):
        # Every child is a leaf (the common case for the innermost nodes).
        leaves.extend(children)
        return (kind, aux, (None,) * len(children))
    kids = []
    kadd = kids.append
    ladd = leaves.append
    for c in children:
        if type(c) in lt:
            ladd(c)
            kadd(None)
        else:
            kadd(_flatten(c, leaves))
    return (kind, aux, tuple(kids))


def _flatten_is_leaf(x, leaves, is_leaf):
    """Like :func:`_flatten` but stops at subtrees where ``is_leaf`` holds."""
    if is_leaf(x):
        leaves.append(x)
        return None
    t = type(x)
    if t is tuple or t is list:
        kind = t
        aux = None
        children = x
    elif t is dict:
        kind = dict
        aux = _sorted_keys(x)
        children = [*map(x.__getitem__, aux)]
    elif x is None:
        return _NONE_NODE
    elif t in _leaf_types:
        leaves.append(x)
        return None
    else:
        kind = _registry.get(t)
        if kind is not None:
            children, aux = kind.flatten(x)
        elif issubclass(t, tuple) and hasattr(t, "_fields"):
            kind = _NAMEDTUPLE
            aux = t
            children = x
        else:
            leaves.append(x)
            return None
    kids = []
    kadd = kids.append
    for c in children:
        kadd(_flatten_is_leaf(c, leaves, is_leaf))
    return (kind, aux, tuple(kids))


def _is_leaf_value(x) -> bool:
    """True if ``x`` flattens to itself (it is not a container / None)."""
    t = type(x)
    if t in _leaf_types:
        return True
    if t is tuple or t is list or t is dict or x is None:
        return False
    if t in _registry:
        return False
    return not (issubclass(t, tuple) and hasattr(t, "_fields"))


# ---------------------------------------------------------------------------
# Unflattening
# ---------------------------------------------------------------------------


def _unflatten(node, it):
    """Rebuild the (non-leaf) value of ``node`` pulling leaves from ``it``."""
    kind, aux, children = node
    if not children:
        vals = []
    elif any(children):
        # Some children are containers: recurse (leaf children are ``None``).
        # (A plain loop rather than a comprehension: one frame per level.)
        nxt = it.__next__
        vals = []
        add = vals.append
        for c in children:
            add(nxt() if c is None else _unflatten(c, it))
    elif kind is tuple:
        return tuple(islice(it, len(children)))
    else:
        vals = [*islice(it, len(children))]
    if kind is tuple:
        return tuple(vals)
    if kind is list:
        return vals
    if kind is dict:
        return dict(zip(aux, vals))
    if kind is _NONE:
        return None
    if kind is _NAMEDTUPLE:
        return aux(*vals)
    return kind.unflatten(aux, tuple(vals))


# A PyTreeDef that is unflattened repeatedly (e.g. the output structure kept
# by a jit cache) gets a generated straight-line function such as
# ``lambda l: ((l[0], l[1]), {'a': l[2]})``.  Constants (dict keys, aux data,
# unflatten functions) come from the treedef's own node, so the result is
# identical to the generic path.  Very large or deep trees are not compiled.
_COMPILE_MAX_NODES = 2000
_COMPILE_MAX_DEPTH = 40
_COMPILE_AFTER_USES = 16   # unflattens of one treedef object before compiling
_UNCOMPILABLE = object()   # too big/deep: always use the generic path


class _TooComplex(Exception):
    pass


def _compile_unflatten(node):
    consts: dict = {}
    pos = 0
    budget = _COMPILE_MAX_NODES

    def const(v):
        name = f"_c{len(consts)}"
        consts[name] = v
        return name

    def emit(node, depth):
        nonlocal pos, budget
        budget -= 1
        if node is None:
            pos += 1
            return f"l[{pos - 1}]"
        if budget < 0 or depth > _COMPILE_MAX_DEPTH:
            raise _TooComplex
        kind, aux, children = node
        parts = [emit(c, depth + 1) for c in children]
        if kind is tuple:
            return "(" + "".join([p + "," for p in parts]) + ")"
        if kind is list:
            return "[" + ",".join(parts) + "]"
        if kind is dict:
            return "{" + ",".join([f"{const(k)}:{p}"
                                   for k, p in zip(aux, parts)]) + "}"
        if kind is _NONE:
            return "None"
        if kind is _NAMEDTUPLE:
            return f"{const(aux)}({','.join(parts)})"
        args = "".join([p + "," for p in parts])
        return f"{const(kind.unflatten)}({const(aux)},({args}))"

    try:
        expr = emit(node, 0)
    except _TooComplex:
        return _UNCOMPILABLE
    src = f"def _unflatten_compiled(l):\n    return {expr}\n"
    try:
        code = compile(src, "<tangentia.tree_util: compiled unflatten>",
                       "exec")
    except (SyntaxError, RecursionError, MemoryError):  # pragma: no cover
        return _UNCOMPILABLE
    namespace = dict(consts)
    exec(code, namespace)
    return namespace["_unflatten_compiled"]


# ---------------------------------------------------------------------------
# Structure helpers (operate on raw nodes)
# ---------------------------------------------------------------------------


def _count_leaves(node) -> int:
    if node is None:
        return 1
    return sum([_count_leaves(c) for c in node[2]])


def _count_nodes(node) -> int:
    if node is None:
        return 1
    return 1 + sum([_count_nodes(c) for c in node[2]])


def _compose(node, inner):
    if node is None:
        return inner
    kind, aux, children = node
    return (kind, aux, tuple([_compose(c, inner) for c in children]))


def _node_type(node):
    """The Python type of the container described by ``node``."""
    kind = node[0]
    if kind is _NONE:
        return type(None)
    if kind is _NAMEDTUPLE:
        return node[1]
    if type(kind) is _Registration:
        return kind.type
    return kind


def _type_name(t) -> str:
    return getattr(t, "__name__", repr(t))


def _node_repr(node) -> str:
    if node is None:
        return "*"
    kind, aux, children = node
    if kind is tuple:
        if len(children) == 1:
            return f"({_node_repr(children[0])},)"
        return "(" + ", ".join([_node_repr(c) for c in children]) + ")"
    if kind is list:
        return "[" + ", ".join([_node_repr(c) for c in children]) + "]"
    if kind is dict:
        return "{" + ", ".join([f"{k!r}: {_node_repr(c)}"
                                for k, c in zip(aux, children)]) + "}"
    if kind is _NONE:
        return "None"
    inner = "[" + ", ".join([_node_repr(c) for c in children]) + "]"
    if kind is _NAMEDTUPLE:
        return f"CustomNode(namedtuple[{_type_name(aux)}], {inner})"
    return f"CustomNode({_type_name(kind.type)}[{aux!r}], {inner})"


def _short_repr(x, limit: int = 100) -> str:
    r = repr(x)
    return r if len(r) <= limit else r[:limit - 3] + "..."


class _Mismatch(Exception):
    """Internal: raised by :func:`_flatten_up_to` on structure mismatch.  ``kind`` is
    JAX's name for it ("different types", ...); ``path`` the key path to it, filled
    in as the error leaves each level."""

    def __init__(self, message: str, kind: str = "different types"):
        super().__init__(message)
        self.kind = kind
        self.path: list = []


def _up_to_child(c, y, out, key) -> None:
    """``_flatten_up_to`` of one child, with ``key`` prepended to a mismatch's path."""
    try:
        _flatten_up_to(c, y, out)
    except _Mismatch as e:
        e.path.insert(0, key)
        raise


def _flatten_up_to(node, x, out):
    """Append the subtrees of ``x`` at the leaves of ``node`` to ``out``."""
    if node is None:
        out.append(x)
        return
    kind, aux, children = node
    if kind is tuple or kind is list:
        if type(x) is not kind:
            raise _Mismatch(
                f"expected {kind.__name__}, got {type(x).__name__}: {_short_repr(x)}")
        if len(x) != len(children):
            raise _Mismatch(
                f"{kind.__name__} arity mismatch: expected {len(children)}, "
                f"got {len(x)}: {_short_repr(x)}", f"different lengths of {kind.__name__}")
        for i, (c, y) in enumerate(zip(children, x)):
            _up_to_child(c, y, out, SequenceKey(i))
        return
    if kind is dict:
        if type(x) is not dict:
            raise _Mismatch(f"expected dict, got {type(x).__name__}: {_short_repr(x)}")
        keys = _sorted_keys(x)
        if keys != aux:
            raise _Mismatch(
                f"dict key mismatch: expected keys {list(aux)!r}, "
                f"got {list(keys)!r}", "different pytree metadata")
        for c, k in zip(children, aux):
            _up_to_child(c, x[k], out, DictKey(k))
        return
    if kind is _NONE:
        if x is not None:
            raise _Mismatch(f"expected None, got {_short_repr(x)}")
        return
    if kind is _NAMEDTUPLE:
        if type(x) is not aux:
            raise _Mismatch(
                f"expected namedtuple {_type_name(aux)}, "
                f"got {type(x).__name__}: {_short_repr(x)}")
        for c, y, name in zip(children, x, aux._fields):
            _up_to_child(c, y, out, GetAttrKey(name))
        return
    if type(x) is not kind.type:
        raise _Mismatch(
            f"custom node type mismatch: expected {_type_name(kind.type)}, "
            f"got {type(x).__name__}: {_short_repr(x)}")
    xs, xaux = kind.flatten(x)
    xs = list(xs)
    if xaux != aux:
        raise _Mismatch(
            f"mismatched custom node data for {_type_name(kind.type)}: "
            f"expected {_short_repr(aux)}, got {_short_repr(xaux)}", "different pytree metadata")
    if len(xs) != len(children):
        raise _Mismatch(
            f"{_type_name(kind.type)} arity mismatch: expected "
            f"{len(children)} children, got {len(xs)}", "different numbers of pytree children")
    for i, (c, y) in enumerate(zip(children, xs)):
        _up_to_child(c, y, out, FlattenedIndexKey(i))


def _structure_for_error(tree) -> str:
    try:
        return repr(tree_structure(tree))
    except Exception as e:  # pragma: no cover - defensive
        return f"<unflattenable: {e!r}>"


# ---------------------------------------------------------------------------
# PyTreeDef
# ---------------------------------------------------------------------------


class PyTreeDef:
    """The structure of a pytree (everything but its leaves).

    Instances are immutable, hashable and compare equal iff they describe
    the same structure (same node types, same auxiliary data, same shape).
    Obtain them from :func:`tree_flatten` / :func:`tree_structure`.
    """

    __slots__ = ("_node", "_num_leaves", "_hash", "_unflat", "__weakref__")

    def __init__(self, node: Any, num_leaves: int) -> None:
        self._node = node
        self._num_leaves = num_leaves
        self._hash = None
        self._unflat = None

    # -- properties -----------------------------------------------------
    @property
    def num_leaves(self) -> int:
        return self._num_leaves

    @property
    def num_nodes(self) -> int:
        return _count_nodes(self._node)

    # -- core operations ------------------------------------------------
    def unflatten(self, leaves: Iterable[Any]) -> Any:
        """Build a pytree with this structure from ``leaves``."""
        if type(leaves) is not list and type(leaves) is not tuple:
            leaves = list(leaves)
        n = len(leaves)
        if n != self._num_leaves:
            raise ValueError(   # (JAX's words first)
                f"Too {'few' if n < self._num_leaves else 'many'} leaves for PyTreeDef; "
                f"expected {self._num_leaves}, got {n} ({self!r}).")
        fn = self._unflat
        if fn is None:
            # Most treedefs are used a few times only (one call of a function):
            # compile only one that is reused many times (e.g. a jit cache's).
            fn = self._unflat = 1
        elif type(fn) is int:
            fn = self._unflat = (fn + 1 if fn < _COMPILE_AFTER_USES
                                 else _compile_unflatten(self._node))
        if type(fn) is int or fn is _UNCOMPILABLE:
            node = self._node
            if node is None:
                return leaves[0]
            return _unflatten(node, iter(leaves))
        return fn(leaves)

    def flatten_up_to(self, tree) -> list:
        """Flatten ``tree`` only down to the leaves of this structure.

        ``self`` must be a prefix of (or equal to) the structure of ``tree``;
        the subtrees of ``tree`` sitting at the leaves of ``self`` are
        returned in order.  Raises ``ValueError`` naming both structures on
        mismatch.
        """
        out: list = []
        try:
            _flatten_up_to(self._node, tree, out)
        except _Mismatch as e:
            raise ValueError(
                f"Tree structure mismatch: {e}\n"
                f"  expected structure (prefix): {self!r}\n"
                f"  got structure: {_structure_for_error(tree)}") from None
        return out

    def children(self) -> list["PyTreeDef"]:
        """The structures of the immediate children of the root node."""
        node = self._node
        if node is None:
            return []
        return [PyTreeDef(c, _count_leaves(c)) for c in node[2]]

    def node_data(self) -> tuple[type, Any] | None:
        """``(node_type, aux_data)`` of the root node, ``None`` for a leaf."""
        node = self._node
        if node is None:
            return None
        kind, aux = node[0], node[1]
        if kind is _NAMEDTUPLE:
            return (aux, None)
        if kind is dict:
            return (dict, list(aux))
        return (_node_type(node), aux)

    def compose(self, inner: "PyTreeDef") -> "PyTreeDef":
        """The structure obtained by replacing every leaf of self by inner."""
        return PyTreeDef(_compose(self._node, inner._node),
                         self._num_leaves * inner._num_leaves)

    # -- dunder ---------------------------------------------------------
    def __eq__(self, other):
        if self is other:
            return True
        if type(other) is not PyTreeDef:
            return NotImplemented
        return self._node == other._node

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self):
        h = self._hash
        if h is None:
            try:
                h = hash(self._node)
            except TypeError:   # unhashable aux data (a dict, say): JAX accepts it too
                h = _hash_hashable_parts(self._node)
            self._hash = h
        return h

    def __repr__(self):
        return f"PyTreeDef({_node_repr(self._node)})"

    def __reduce__(self):
        return (PyTreeDef, (self._node, self._num_leaves))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def _hash_hashable_parts(node):
    """A hash of a node tuple that skips the values it cannot hash (hashing their type
    instead): equal structures still hash equal, and equality decides the rest."""
    if type(node) is tuple:
        return hash(tuple(_hash_hashable_parts(e) for e in node))
    try:
        return hash(node)
    except TypeError:
        return hash(type(node))


# ---------------------------------------------------------------------------
# Public flatten / unflatten API
# ---------------------------------------------------------------------------


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                 ) -> tuple[list[Any], PyTreeDef]:
    """Flatten ``tree`` into ``(leaves, treedef)``.

    ``None`` is a node with no children (it has no leaves).  Dict children
    are visited in sorted key order.  If ``is_leaf`` returns True for a
    subtree it is treated as a leaf.
    """
    leaves: list = []
    try:
        if is_leaf is None:
            node = _flatten(tree, leaves)
        else:
            node = _flatten_is_leaf(tree, leaves, is_leaf)
    except RecursionError:
        raise _too_deep("tree_flatten") from None
    return leaves, PyTreeDef(node, len(leaves))


def _too_deep(fname):
    """Python's RecursionError, saying what recursed and the limit (a pytree ~1,000 levels
    deep: one frame per level; JAX's flatten raises SystemError there)."""
    import sys
    return RecursionError(
        "maximum recursion depth exceeded while flattening a pytree (tangentia.tree_util."
        f"{fname}: each level of nesting takes a frame, and the pytree, or the calls already "
        f"on the stack, go beyond Python's recursion limit, sys.getrecursionlimit() = "
        f"{sys.getrecursionlimit()}; flatten such a structure into a list of arrays, or raise "
        "the limit with sys.setrecursionlimit)")


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuild a pytree with structure ``treedef`` from ``leaves``."""
    return treedef.unflatten(leaves)


def tree_leaves(tree, is_leaf: Callable[[Any], bool] | None = None) -> list:
    """The leaves of ``tree`` as a list."""
    leaves: list = []
    try:
        if is_leaf is None:
            _flatten(tree, leaves)
        else:
            _flatten_is_leaf(tree, leaves, is_leaf)
    except RecursionError:
        raise _too_deep("tree_leaves") from None
    return leaves


def tree_structure(tree,
                   is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The :class:`PyTreeDef` of ``tree``."""
    return tree_flatten(tree, is_leaf)[1]


def _flatten_rest(treedef: PyTreeDef, rest, fname: str) -> list:
    """Flatten each tree of ``rest`` up to ``treedef`` (for tree_map)."""
    node = treedef._node
    out = []
    for i, r in enumerate(rest):
        # Fast path: ``r`` usually has exactly the same structure.  (Any
        # error here, e.g. from a custom flatten below a prefix leaf or from
        # comparing aux data, just sends us to the exact check.)
        flat: list = []
        try:
            same = _flatten(r, flat) == node
        except Exception:
            same = False
        if same:
            out.append(flat)
            continue
        flat = []
        try:
            _flatten_up_to(node, r, flat)
        except _Mismatch as e:
            # JAX's wording first (its kind of difference and the key path), then ours
            raise ValueError(
                f"pytree structure error: {e.kind} at key path\n"
                f"    {fname} tree{keystr(tuple(e.path))}\n"
                f"{fname}: the structure of rest[{i}] does not match the "
                f"first tree's structure (which must be a prefix of it): "
                f"{e}\n"
                f"  first tree structure: {treedef!r}\n"
                f"  rest[{i}] structure:  {_structure_for_error(r)}"
            ) from None
        out.append(flat)
    return out


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Apply ``f`` leafwise: ``f(x, *xs)`` for each leaf ``x`` of ``tree``.

    Each tree in ``rest`` must have the structure of ``tree`` as a prefix
    (or be equal to it); ``xs`` are the corresponding subtrees.
    """
    leaves: list = []
    try:
        if is_leaf is None:
            node = _flatten(tree, leaves)
        else:
            node = _flatten_is_leaf(tree, leaves, is_leaf)
    except RecursionError:
        raise _too_deep("tree_map") from None
    treedef = PyTreeDef(node, len(leaves))
    if not rest:
        new = [f(x) for x in leaves]
    else:
        others = _flatten_rest(treedef, rest, "tree_map")
        new = [f(*xs) for xs in zip(leaves, *others)]
    if node is None:
        return new[0]
    return _unflatten(node, iter(new))


_MISSING = object()


def tree_reduce(function: Callable[[Any, Any], Any], tree: Any,
                initializer: Any = _MISSING,
                is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``functools.reduce`` over the leaves of ``tree``."""
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _MISSING:
        if not leaves:
            raise TypeError(
                "tree_reduce() of a tree with no leaves and no initializer")
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True iff every leaf of ``tree`` is truthy."""
    return all(tree_leaves(tree, is_leaf))


def tree_transpose(outer_treedef: PyTreeDef,
                   inner_treedef: PyTreeDef | None,
                   pytree_to_transpose: Any) -> Any:
    """Turn an outer-of-inner pytree into an inner-of-outer pytree.

    ``pytree_to_transpose`` must have structure
    ``outer_treedef.compose(inner_treedef)``.  If ``inner_treedef`` is None
    it is inferred from the first subtree at a leaf of ``outer_treedef``.
    """
    flat, treedef = tree_flatten(pytree_to_transpose)
    if inner_treedef is None:
        subtrees = outer_treedef.flatten_up_to(pytree_to_transpose)
        if not subtrees:
            raise ValueError(
                "tree_transpose: cannot infer inner_treedef from an outer "
                "structure with no leaves")
        inner_treedef = tree_structure(subtrees[0])
    expected = outer_treedef.compose(inner_treedef)
    if treedef != expected:
        raise TypeError(
            f"tree_transpose: structure mismatch\n"
            f"  got:      {treedef!r}\n"
            f"  expected: {expected!r}\n"
            f"  (outer {outer_treedef!r} composed with inner "
            f"{inner_treedef!r})")
    inner_size = inner_treedef.num_leaves
    outer_size = outer_treedef.num_leaves
    if outer_size == 0:
        empty = outer_treedef.unflatten([])
        return inner_treedef.unflatten([empty] * inner_size)
    groups = [flat[i * inner_size:(i + 1) * inner_size]
              for i in range(outer_size)]
    transposed = [outer_treedef.unflatten(col) for col in zip(*groups)]
    return inner_treedef.unflatten(transposed)


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    """The structures of the immediate children of ``treedef``'s root."""
    return treedef.children()


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """True iff ``treedef`` has a single node (a leaf, or ``None`` as in JAX)."""
    node = treedef._node
    return node is None or not node[2]


def treedef_is_strict_leaf(treedef: PyTreeDef) -> bool:
    """True iff ``treedef`` is exactly one leaf."""
    return treedef._node is None


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The structure of a tuple whose elements have structures ``treedefs``."""
    treedefs = list(treedefs)
    return PyTreeDef((tuple, None, tuple([t._node for t in treedefs])),
                     sum([t._num_leaves for t in treedefs]))


def all_leaves(iterable: Iterable[Any],
               is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True iff every element of ``iterable`` is a leaf."""
    if is_leaf is None:
        return all(_is_leaf_value(x) for x in iterable)
    return all(is_leaf(x) or _is_leaf_value(x) for x in iterable)


# ---------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------


def _register(reg: _Registration) -> None:
    nodetype = reg.type
    if not isinstance(nodetype, type):
        raise TypeError(f"pytree node type must be a class, got {nodetype!r}")
    if nodetype in _BUILTIN_NODE_TYPES:
        raise ValueError(
            f"{nodetype!r} is a builtin pytree node type and cannot be "
            f"registered again")
    if nodetype in _registry:
        raise ValueError(
            f"Duplicate pytree node type registration for {nodetype!r}")
    _registry[nodetype] = reg
    _leaf_types.discard(nodetype)


def register_pytree_node(nodetype: type,
                         flatten_func: Callable[[Any], tuple[Iterable, Any]],
                         unflatten_func: Callable[[Any, Iterable], Any],
                         flatten_with_keys_func=None) -> None:
    """Register ``nodetype`` as a pytree node.

    ``flatten_func(x) -> (children, aux_data)`` where ``aux_data`` is
    hashable and comparable; ``unflatten_func(aux_data, children) -> x``.
    Registering the same type twice raises ``ValueError``.
    """
    _register(_Registration(nodetype, flatten_func, unflatten_func,
                            flatten_with_keys_func))


def register_pytree_with_keys(nodetype: type, flatten_with_keys,
                              unflatten_func, flatten_func=None) -> None:
    """Register ``nodetype`` with a key-path aware flatten function.

    ``flatten_with_keys(x) -> (iterable of (key, child), aux_data)``.
    """
    if flatten_func is None:
        def flatten_func(x, _fwk=flatten_with_keys):
            key_children, aux = _fwk(x)
            return [c for _, c in key_children], aux
    _register(_Registration(nodetype, flatten_func, unflatten_func,
                            flatten_with_keys))


def register_pytree_node_class(cls: _Typ) -> _Typ:
    """Class decorator: register ``cls`` via its ``tree_flatten`` method and
    ``tree_unflatten`` classmethod."""
    register_pytree_node(cls, operator.methodcaller("tree_flatten"),
                         cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls: _Typ) -> _Typ:
    """Class decorator: register ``cls`` via ``tree_flatten_with_keys`` /
    ``tree_unflatten`` (and ``tree_flatten`` if defined)."""
    flatten = getattr(cls, "tree_flatten", None)
    register_pytree_with_keys(
        cls, operator.methodcaller("tree_flatten_with_keys"),
        cls.tree_unflatten,
        operator.methodcaller("tree_flatten") if flatten is not None else None)
    return cls


def register_static(cls: _Typ) -> _Typ:
    """Register ``cls`` as a node with no children: instances are static
    (stored in the treedef, must be hashable)."""
    register_pytree_node(cls, _static_flatten, _static_unflatten)
    return cls


def _static_flatten(x):
    return (), x


def _static_unflatten(aux, _children):
    return aux


def register_dataclass(nodetype: _Typ,
                       data_fields: Iterable[str] | None = None,
                       meta_fields: Iterable[str] | None = None,
                       drop_fields: Iterable[str] = ()) -> _Typ:
    """Register a dataclass (or a class constructible from keyword
    arguments) as a pytree node.  Usable as a bare class decorator.

    With no field lists, ``nodetype`` must be a dataclass: its ``init``
    fields marked ``field(metadata=dict(static=True))`` become metadata
    (stored in the treedef) and all other ``init`` fields become children.
    Returns ``nodetype``.
    """
    if data_fields is None and meta_fields is None:
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(
                "register_dataclass: data_fields and meta_fields are required "
                f"when {nodetype!r} is not a dataclass")
        drop = set(drop_fields)
        data_fields, meta_fields = [], []
        for f in dataclasses.fields(nodetype):
            if not f.init or f.name in drop:
                continue
            if f.metadata.get("static", False):
                meta_fields.append(f.name)
            else:
                data_fields.append(f.name)
    elif data_fields is None or meta_fields is None:
        raise TypeError(
            "register_dataclass: data_fields and meta_fields must both be "
            "given, or both omitted")
    else:
        data_fields, meta_fields = list(data_fields), list(meta_fields)
        if dataclasses.is_dataclass(nodetype):
            init = {f.name for f in dataclasses.fields(nodetype) if f.init}
            wanted = init - set(drop_fields)
            given = set(data_fields) | set(meta_fields)
            if given != wanted:
                parts = []
                if given - wanted:
                    parts.append(f"unexpected fields {sorted(given - wanted)}")
                if wanted - given:
                    parts.append(f"missing fields {sorted(wanted - given)}")
                raise ValueError(
                    f"register_dataclass({nodetype.__name__}): data_fields "
                    f"and meta_fields must cover exactly the init fields not "
                    f"in drop_fields: " + "; ".join(parts))
    data_fields = tuple(data_fields)
    meta_fields = tuple(meta_fields)

    def flatten(x):
        return ([getattr(x, n) for n in data_fields],
                tuple([getattr(x, n) for n in meta_fields]))

    def flatten_with_keys(x):
        return ([(GetAttrKey(n), getattr(x, n)) for n in data_fields],
                tuple([getattr(x, n) for n in meta_fields]))

    def unflatten(aux, children):
        kwargs = dict(zip(meta_fields, aux))
        kwargs.update(zip(data_fields, children))
        return nodetype(**kwargs)

    _register(_Registration(nodetype, flatten, unflatten, flatten_with_keys))
    return nodetype


# -- collections types (registered like user types, as JAX does) ------------


def _odict_flatten(d):
    keys = tuple(d)
    return [d[k] for k in keys], keys


def _odict_flatten_with_keys(d):
    keys = tuple(d)
    return [(DictKey(k), d[k]) for k in keys], keys


def _odict_unflatten(keys, children):
    return collections.OrderedDict(zip(keys, children))


def _ddict_flatten(d):
    keys = _sorted_keys(d)
    return [d[k] for k in keys], (d.default_factory, keys)


def _ddict_flatten_with_keys(d):
    keys = _sorted_keys(d)
    return [(DictKey(k), d[k]) for k in keys], (d.default_factory, keys)


def _ddict_unflatten(aux, children):
    factory, keys = aux
    return collections.defaultdict(factory, zip(keys, children))


register_pytree_node(collections.OrderedDict, _odict_flatten,
                     _odict_unflatten, _odict_flatten_with_keys)
register_pytree_node(collections.defaultdict, _ddict_flatten,
                     _ddict_unflatten, _ddict_flatten_with_keys)


# ---------------------------------------------------------------------------
# Partial
# ---------------------------------------------------------------------------


class _WrappedPartial:
    """Holds a ``functools.partial`` passed as ``Partial``'s ``func`` so that
    ``functools.partial.__new__`` does not merge its arguments into ours
    (they are part of the static function, not leaves)."""

    __slots__ = ("wrapped",)

    def __init__(self, wrapped):
        self.wrapped = wrapped

    def __call__(self, *args, **kwargs):
        return self.wrapped(*args, **kwargs)

    def __eq__(self, other):
        if type(other) is _WrappedPartial:
            return self.wrapped is other.wrapped
        return NotImplemented

    def __hash__(self):
        return hash(id(self.wrapped))

    def __repr__(self):
        return repr(self.wrapped)


class Partial(functools.partial):
    """A ``functools.partial`` that is a pytree.

    The bound positional and keyword arguments are the children (their
    leaves are the pytree's leaves); ``func`` is static auxiliary data and
    must be hashable.  This makes partially applied functions passable
    through transformations::

        p = Partial(f, x)          # x is a leaf, f is static
        tree_map(lambda a: 2 * a, p)(y) == f(2 * x, y)
    """

    def __new__(cls, func, /, *args, **kwargs):
        if isinstance(func, functools.partial):
            func = _WrappedPartial(func)
        return super().__new__(cls, func, *args, **kwargs)


def _partial_flatten(p):
    return (p.args, p.keywords), p.func


def _partial_unflatten(func, children):
    args, kwargs = children
    return Partial(func, *args, **kwargs)


register_pytree_node(Partial, _partial_flatten, _partial_unflatten)


# ---------------------------------------------------------------------------
# Key paths
# ---------------------------------------------------------------------------


class SequenceKey(NamedTuple):
    """Path entry for an element of a tuple / list."""
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"

    def __repr__(self):
        return f"SequenceKey(idx={self.idx!r})"


class DictKey(NamedTuple):
    """Path entry for a dict value."""
    key: Hashable

    def __str__(self):
        return f"[{self.key!r}]"

    def __repr__(self):
        return f"DictKey(key={self.key!r})"


class GetAttrKey(NamedTuple):
    """Path entry for an attribute (namedtuple field, dataclass field)."""
    name: str

    def __str__(self):
        return f".{self.name}"

    def __repr__(self):
        return f"GetAttrKey(name={self.name!r})"


class FlattenedIndexKey(NamedTuple):
    """Path entry for the i-th child of a node registered without keys."""
    key: int

    def __str__(self):
        return f"[<flat index {self.key}>]"

    def __repr__(self):
        return f"FlattenedIndexKey(key={self.key!r})"


def _simple_key_str(k) -> str:
    if isinstance(k, (SequenceKey, DictKey, GetAttrKey, FlattenedIndexKey)):
        return str(k[0])
    return str(k)


def keystr(keys: tuple, *, simple: bool = False, separator: str = "") -> str:
    """Render a key path, e.g. ``"['a'][0].x"`` (``simple=True`` renders
    just the raw keys, joined by ``separator``)."""
    fn = _simple_key_str if simple else str
    return separator.join([fn(k) for k in keys])


def _collect_paths(node, x, prefix: tuple, out: list) -> None:
    if node is None:
        out.append(prefix)
        return
    kind, aux, children = node
    if kind is tuple or kind is list:
        for i, (c, y) in enumerate(zip(children, x)):
            _collect_paths(c, y, prefix + (SequenceKey(i),), out)
    elif kind is dict:
        for k, c in zip(aux, children):
            _collect_paths(c, x[k], prefix + (DictKey(k),), out)
    elif kind is _NONE:
        return
    elif kind is _NAMEDTUPLE:
        for name, c, y in zip(aux._fields, children, x):
            _collect_paths(c, y, prefix + (GetAttrKey(name),), out)
    elif kind.flatten_with_keys is not None:
        key_children, _ = kind.flatten_with_keys(x)
        for (k, y), c in zip(key_children, children):
            _collect_paths(c, y, prefix + (k,), out)
    else:
        ys, _ = kind.flatten(x)
        for i, (c, y) in enumerate(zip(children, ys)):
            _collect_paths(c, y, prefix + (FlattenedIndexKey(i),), out)


def _path_is_leaf_decisions(x, path: tuple, is_leaf, decisions: list, paths: list) -> None:
    """Walk ``x`` in the pre-order of ``_flatten_is_leaf``, appending
    ``is_leaf(path, node)`` for every node to ``decisions`` and the leaves' paths to
    ``paths``."""
    stop = bool(is_leaf(path, x))
    decisions.append(stop)
    level = None if stop or type(x) in _leaf_types else _one_level(x)
    if level is None:
        paths.append(path)
        return
    children, _, keys = level
    for k, c in zip(keys, children):
        _path_is_leaf_decisions(c, path + (k,), is_leaf, decisions, paths)


def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False
                           ) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
    """Like :func:`tree_flatten` but leaves come as ``(key_path, leaf)``;
    with ``is_leaf_takes_path=True`` ``is_leaf`` is called as
    ``is_leaf(key_path, x)``."""
    if is_leaf is not None and is_leaf_takes_path:
        decisions: list = []
        paths: list = []
        _path_is_leaf_decisions(tree, (), is_leaf, decisions, paths)
        leaves, treedef = tree_flatten(tree, lambda _, d=iter(decisions): next(d))
        return list(zip(paths, leaves)), treedef
    leaves, treedef = tree_flatten(tree, is_leaf)
    paths = []
    _collect_paths(treedef._node, tree, (), paths)
    return list(zip(paths, leaves)), treedef


def tree_leaves_with_path(tree, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False) -> list:
    """List of ``(key_path, leaf)`` pairs of ``tree`` (``is_leaf`` and
    ``is_leaf_takes_path`` as in :func:`tree_flatten_with_path`)."""
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any,
                       is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False) -> Any:
    """Like :func:`tree_map` but calls ``f(key_path, x, *xs)`` (``rest``, ``is_leaf``
    and ``is_leaf_takes_path`` as in :func:`tree_map` and
    :func:`tree_flatten_with_path`)."""
    path_leaves, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = _flatten_rest(treedef, rest, "tree_map_with_path")
    new = [f(p, x, *xs) for (p, x), *xs in zip(path_leaves, *others)]
    return treedef.unflatten(new)


# ---------------------------------------------------------------------------
# One level at a time, broadcasting, parallel reduction
# ---------------------------------------------------------------------------

KeyEntry = TypeVar("KeyEntry", bound=Any)
"""The type of one step of a key path (``SequenceKey``, ``DictKey``, ...)."""
KeyPath = Tuple[KeyEntry, ...]
"""The type of a key path: a tuple of key entries."""


def _one_level(tree):
    """``(children, aux, keys)`` of ``tree``'s root node, or None for a leaf."""
    t = type(tree)
    if tree is None:
        return (), None, ()
    if t is tuple or t is list:
        return tuple(tree), None, tuple(SequenceKey(i) for i in range(len(tree)))
    if t is dict:
        try:
            keys = tuple(sorted(tree))
        except TypeError:
            keys = _sorted_keys(tree)
        return tuple(tree[k] for k in keys), keys, tuple(DictKey(k) for k in keys)
    reg = _registry.get(t)
    if reg is not None:
        if reg.flatten_with_keys is not None:
            key_children, aux = reg.flatten_with_keys(tree)
            key_children = tuple(key_children)
            return (tuple(c for _, c in key_children), aux,
                    tuple(k for k, _ in key_children))
        children, aux = reg.flatten(tree)
        children = tuple(children)
        return children, aux, tuple(FlattenedIndexKey(i) for i in range(len(children)))
    if issubclass(t, tuple) and hasattr(t, "_fields"):
        return tuple(tree), t, tuple(GetAttrKey(f) for f in t._fields)
    return None


def flatten_one_level(tree) -> tuple[Iterable[Any], Hashable]:
    """The children of ``tree``'s root node and its auxiliary data (dict keys, the node's
    own data); raises ``ValueError`` for a leaf."""
    level = _one_level(tree)
    if level is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    return level[0], level[1]


def flatten_one_level_with_keys(tree) -> tuple[Iterable[Any], Hashable]:
    """Like :func:`flatten_one_level`, the children as ``(key, child)`` pairs."""
    level = _one_level(tree)
    if level is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    return tuple(zip(level[2], level[0])), level[1]


def is_tree_node(typ) -> bool:
    """True for the types whose values are pytree nodes (not leaves)."""
    if not isinstance(typ, type):
        raise TypeError(f"is_tree_node: argument 'typ' must be a type, got {typ!r}")
    return (typ in _BUILTIN_NODE_TYPES or typ in _registry
            or (issubclass(typ, tuple) and hasattr(typ, "_fields")))


def tree_broadcast(prefix_tree: Any, full_tree: Any,
                   is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``prefix_tree`` with each leaf replicated over the matching subtree of ``full_tree``."""
    prefix_leaves, prefix_def = tree_flatten(prefix_tree, is_leaf)
    subtrees = prefix_def.flatten_up_to(full_tree)
    return prefix_def.unflatten([tree_map(lambda _, p=p: p, sub, is_leaf=is_leaf)
                                 for p, sub in zip(prefix_leaves, subtrees)])


def tree_reduce_associative(operation: Callable[[Any, Any], Any], tree, *,
                            identity: Any = _MISSING,
                            is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Reduce the leaves with an associative ``operation`` in a balanced tree of calls
    (the two halves reduced first, as JAX's)."""
    leaves = tree_leaves(tree, is_leaf)
    if not leaves:
        if identity is _MISSING:
            raise TypeError("Must specify identity for parallel reduction of empty sequence. "
                            "(tree_reduce_associative: argument 'identity')")
        return identity
    return _halving_reduce(operation, leaves)


def _halving_reduce(operation, leaves):
    """``operation`` of the reductions of the two halves (the first has ``n // 2``
    leaves): JAX's order of calls."""
    if len(leaves) == 1:
        return leaves[0]
    half = len(leaves) // 2
    return operation(_halving_reduce(operation, leaves[:half]),
                     _halving_reduce(operation, leaves[half:]))


class _Registry:
    """``default_registry``: the pytree registry's methods, as JAX's ``PyTreeRegistry``."""

    def flatten(self, tree, leaf_predicate: Callable[[Any], bool] | None = None):
        return tree_flatten(tree, leaf_predicate)

    def flatten_one_level(self, tree):
        """``(children, aux)`` of the root node, or None for a leaf."""
        level = _one_level(tree)
        return None if level is None else level[:2]

    def flatten_one_level_with_keys(self, tree):
        level = _one_level(tree)
        return None if level is None else (tuple(zip(level[2], level[0])), level[1])

    def is_node(self, typ) -> bool:
        return is_tree_node(typ)

    def register_node(self, nodetype, flatten_func, unflatten_func, flatten_with_keys_func=None):
        register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func)


default_registry = _Registry()
