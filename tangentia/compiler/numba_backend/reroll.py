"""Repeated runs of an IR block's nodes emitted once, as a loop over the copies.

A program written as a Python loop (``for W in Ws: h = tanh(W @ h + b)``) gives an IR
block (``irblock``) whose scalar nodes repeat with a period: the same operations on the
same dtypes with the same parameters, each copy reading

* its own nodes (the same relative position in every copy),
* the previous copy's nodes (a *carry*: copy 0 reads a value from before the run),
* the same values from before the run (*invariants*: constants, inputs, earlier nodes),
* values of its own from memory at evenly spaced places (*per-copy inputs*): elements or
  whole arrays of a buffer (``native._Views``: the closed-over matrices packed in order
  in ``_xp``) at an offset growing by the same stride from copy to copy, and rows
  ``stack[j, i]`` of a scan's stacks (``rowio.RowOp``) whose ``j`` grows so.

``emit`` finds maximal runs of at least ``MIN_COPIES`` copies (whose nodes, except the
last copy's, are read by nothing after the next copy) and emits each as one LLVM loop
whose body is one copy's nodes: carries are phis, a per-copy input's offset is
``offset + c * stride``.  The operations and their order are the copy's own, so the
results are bit for bit those of the unrolled nodes; the code is independent of the
number of copies.  The scan of 100 dense 8x8 layers (``bench_cold.py --sizes scan=100``):
each direction's 100 layers were ~65 LLVM lines each, unrolled.

Only where it pays: a run removes ``(copies - 1) * period`` nodes from the code, and
is rolled if that is at least ``TANGENTIA_NUMBA_REROLL`` (default ``MIN_SAVED``; ``0``
turns rolling off).  The setting is part of numba's disk-cache key
(``native._compile_tag``).  ``STATS["runs"]`` counts the runs rolled in this process
(``memo.Counts``: a statistic like a cache's, counted under a lock; tests read it).

``irblock._emit_ir`` calls ``emit`` with the block's nodes in emission order, and the
irblock pieces it emits with (``Ops``: this module imports nothing of irblock's).
"""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types as nbt

from .memo import Counts

__all__ = ["Ops", "emit", "find_runs", "hoist_stores", "loop_head", "MIN_SAVED", "MIN_COPIES", "STATS"]


class Ops(NamedTuple):
    """What ``emit`` uses of ``irblock``: its emitters (``emit_nodes``, ``emit_lanes``,
    ``value``: a node's value, ``no_unroll``: a loop's metadata), the classes of its
    values (``lazy``: an input loaded where first used, ``arr_in``: an array, ``view``:
    an array in a buffer at an offset) and ``split_nodes``."""
    value: Callable[..., Any]
    emit_nodes: Callable[..., Any]
    emit_lanes: Callable[..., Any]
    no_unroll: Callable[..., Any]
    lazy: Any
    arr_in: Any
    view: Any
    split_nodes: int

# The thresholds: a run must remove at least MIN_SAVED nodes (scan of 10 dense 8x8 layers,
# 9 x 41-49 nodes per direction: cold compile 0.87-0.91 -> 0.77-0.78 s CPU, per call 41-42
# -> 42-45 us, noise), of copies of at least MIN_PERIOD nodes (a loop step costs about 4
# instructions: at most a quarter of the cheapest such copy) -- 100 layers: 2.7-2.9 ->
# 1.2 s, per call 347-354 -> 325-334 us (less code)
MIN_SAVED = 256
MIN_COPIES = 3
MIN_PERIOD = 16
_CANDIDATES = 6       # periods tried per block (``_periods``)
_NEXT = 8             # a signature's next occurrences whose distances are candidates
TABLE_BYTES = 1 << 16   # a run's tables of its copies' addresses (``_Run.access``), at most
# Blocks of at most this many nodes are searched for runs (the search is about linear: 1.2 s
# for 73,600 nodes).  It was 8 * SPLIT_NODES (128,000): a scan over 2,600 closed-over 8x8
# matrices or more (each direction ~49 nodes a layer) was emitted unrolled, never rolled.
MAX_ORDER = 1 << 21
STATS = Counts("runs")   # runs rolled, in this process (``memo.Counts``: thread-safe)


def min_saved() -> int:
    """``TANGENTIA_NUMBA_REROLL``: the nodes a run must remove to be rolled (0: never)."""
    try:
        return int(os.environ.get("TANGENTIA_NUMBA_REROLL", MIN_SAVED))
    except ValueError:
        return MIN_SAVED


def tag() -> str:
    """The setting, for the disk cache's key (``native._compile_tag``)."""
    return f"reroll={min_saved()}"


_ROW = ("rowld", "rowst")
_STORES = ("rowst", "arrst")
_MEM = ("in", "arr")


class _Run:
    """``copies`` copies of ``period`` nodes from position ``start`` of the order.
    ``kinds[(p, k)]``: how argument ``k`` of the copy's ``p``-th node is read:
    ``("own", q)`` (the copy's ``q``-th node), ``("carry", q)`` (the previous copy's
    ``q``-th node; copy 0 reads its argument itself), ``("inv",)`` (the same node in
    every copy) or ``("mem",)`` (an element or array of its own in each copy, in memory
    the block takes: ``places[(p, k)]``, ``(argument, offset)`` per copy, ``access``);
    ``rows[p]``: the growth of row ``j`` per copy of a ``"rowld"``/``"rowst"`` node."""

    __slots__ = ("start", "period", "copies", "kinds", "rows", "places", "skip", "score")

    def __init__(self, start, period, copies, kinds, rows, places=None):
        self.start, self.period, self.copies, self.kinds, self.rows = start, period, copies, kinds, rows
        self.places = {} if places is None else places
        self.skip = 0
        self.score = None   # (the nodes it would remove uncut: ``find_runs``'s order)

    def access(self, key):
        """How the copies reach the memory input ``key`` (``(p, k)``): ``("stride", d)``,
        one buffer at an offset growing by ``d`` per copy (packed inputs: the offset is
        computed in the loop), else ``("table", places)``: anywhere (addressed arrays, each
        an argument of its own; views of several buffers; offsets not evenly spaced),
        through a table of the copies' addresses filled before the loop (``_tables``).
        Either way the copies form one loop: the program's loops do not depend on how
        its inputs are passed."""
        pl = self.places[key][:self.copies]
        (j0, o0), (j1, o1) = pl[0], pl[1]
        if o0 is not None and o1 is not None and j1 == j0:
            d = o1 - o0
            if all(j == j0 and o is not None and o == o0 + c * d for c, (j, o) in enumerate(pl)):
                return ("stride", d)
        return ("table", tuple(pl))

    def tables(self):
        """The number of tables of addresses the run reads (``access``)."""
        return len({a for a in map(self.access, self.places) if a[0] == "table"})

    def strided(self):
        """``(first copy, copies)`` of the maximal stretches of the copies whose memory
        inputs are each at a stride in one buffer, in order (a copy alone where none is)."""
        pls = [v[:self.copies] for v in self.places.values()]
        out, a = [], 0
        while a < self.copies:
            n, d = 1, None
            for c in range(a + 1, self.copies):
                dd = []
                for pl in pls:
                    (j0, o0), (j1, o1) = pl[c - 1], pl[c]
                    if j0 != j1 or o0 is None or o1 is None:
                        break
                    dd.append(o1 - o0)
                if len(dd) < len(pls) or (d is not None and dd != d):
                    break
                d, n = dd, n + 1
            out.append((a, n))
            a += n
        return out


def _mem_place(nodes, inputs, i, written=()) -> Optional[Tuple[Any, ...]]:
    """``(argument, shape, element or None, offset, dtype)`` of an ``"in"``/``"arr"`` node
    that is in a C-contiguous array the block takes (``irblock._Inputs``): a view of a
    buffer at an element offset, or an array argument of its own (offset None: a program's
    addressed inputs, ``native._addressed``, each its own argument of a unit), else None;
    never an array of ``written`` (arguments the block stores into: its fresh outputs)."""
    if getattr(inputs, "in_map", None) is None or nodes[i][0] not in _MEM:
        return None
    m = inputs.in_map[nodes[i][3]]
    if type(m) is not tuple:
        return None
    j, off, shape = inputs.views[m[0]]
    aty = inputs.arrs[j][0]
    if aty.layout != "C" or (off is None and j in written):
        return None
    return j, shape, m[1], off, aty.dtype


def _written(nodes, order, inputs) -> set:
    """The array arguments of the block (``irblock._Inputs.arrs``) that ``order`` stores
    into (``"arrst"``/``"rowst"``): never a per-copy input."""
    if getattr(inputs, "in_map", None) is None:
        return set()
    out = set()
    for i in order:
        if nodes[i][0] in _STORES:
            a = nodes[i][2][0]
            if nodes[a][0] in _MEM:
                m = inputs.in_map[nodes[a][3]]
                if type(m) is tuple:
                    out.add(inputs.views[m[0]][0])
    return out


def loop_head(builder, name):
    """A counted loop's start, for the IR blocks' loops (``irblock``'s reductions and these
    runs): the block before it, the loop's block (``name``, the builder now in it), the block
    after it (``name.end``) and the counter (an i64 phi starting at 0 from the block before)."""
    pre = builder.block
    head = builder.append_basic_block(name)
    end = builder.append_basic_block(name + ".end")
    builder.branch(head)
    builder.position_at_end(head)
    c = builder.phi(ir.IntType(64))
    c.add_incoming(ir.Constant(ir.IntType(64), 0), pre)
    return pre, head, end, c


def _signatures(nodes, order, pos):
    """One int per node of ``order``: equal for nodes that may be copies of each other."""
    table: Dict[Any, int] = {}
    out = np.empty(len(order), np.int64)
    for t, i in enumerate(order):
        op, dt, args, param = nodes[i]
        if op in _ROW:
            param = param[1:]
        kinds = tuple(nodes[a][1].str for a in args)   # (a carry's first value may be an input)
        key = (op, dt.str, repr(param) if op != "const" else None, kinds)
        out[t] = table.setdefault(key, len(table))
    return out


def _periods(sig):
    """Candidate periods: distances between a node and the next few nodes of its
    signature (a signature seen r times per copy repeats at the r-th next one), the
    most frequent ones, tried in the order of how many nodes match at that distance."""
    order = np.argsort(sig, kind="stable")
    srt = sig[order]
    dists = [order[r:] - order[:-r] for r in range(1, _NEXT + 1) if r < len(sig)]
    same = [srt[r:] == srt[:-r] for r in range(1, _NEXT + 1) if r < len(sig)]
    if not dists:
        return []
    d = np.concatenate([x[m] for x, m in zip(dists, same)])
    d = d[d >= MIN_PERIOD]
    if not len(d):
        return []
    vals, counts = np.unique(d, return_counts=True)
    top = vals[np.argsort(-counts, kind="stable")[:4 * _CANDIDATES]]
    cover = {int(p): int(np.count_nonzero(sig[:-p] == sig[p:])) for p in top if p < len(sig)}
    return sorted(cover, key=lambda p: (-cover[p], p))[:_CANDIDATES]


def _match(nodes, order, pos, inputs, start, period, limit, maxuse, written=()):
    """The copies from ``start`` (at most ``limit``) that repeat copy 0 (``_Run``)."""
    kinds: Dict[Tuple[int, int], Tuple[Any, ...]] = {}
    rows: Dict[int, int] = {}
    places: Dict[Tuple[int, int], List[Tuple[int, Optional[int]]]] = {}
    base = order[start:start + period]
    c = 1
    while c < limit:
        lo = start + c * period
        prev = lo - period
        ok = True
        for p in range(period):
            n, n0 = order[lo + p], base[p]
            op, dt, args, param = nodes[n]
            op0, dt0, args0, param0 = nodes[n0]
            if op != op0 or dt != dt0 or len(args) != len(args0):
                ok = False
                break
            if op in _ROW:
                if param[1:] != param0[1:]:
                    ok = False
                    break
                dj = param[0] - param0[0]
                if c == 1:
                    rows[p] = dj
                elif dj != c * rows[p]:
                    ok = False
                    break
            elif op != "const" and param != param0:
                ok = False
                break
            for k, (a, a0) in enumerate(zip(args, args0)):
                pa = pos.get(a)
                if pa is not None and pa >= lo:
                    kind: Tuple[Any, ...] = ("own", pa - lo)
                    good = pos.get(a0) == pa - c * period
                elif pa is not None and pa >= prev:
                    kind = ("carry", pa - prev)
                    p0 = pos.get(a0)
                    # (a carry is one phi: never a "loop" node's several values, read by
                    # picks a copy further on -- a start between a loop and its picks)
                    good = (p0 is None or p0 < start) and nodes[a][0] != "loop"
                elif a == a0:
                    kind = ("inv",)
                    good = pa is None or pa < start
                else:
                    # (the same element of an array of the same shape and dtype, wherever
                    # each copy's array is: ``_Run.access``)
                    pl, pl0 = _mem_place(nodes, inputs, a, written), _mem_place(nodes, inputs, a0, written)
                    good = pl is not None and pl0 is not None and pl[1:3] == pl0[1:3] and \
                        pl[4] == pl0[4] and nodes[a][1] == nodes[a0][1]
                    kind = ("mem",) if good else ("?",)
                if not good or kinds.setdefault((p, k), kind) != kind:
                    ok = False
                    break
                if kind[0] == "mem":
                    seen = places.get((p, k))
                    if seen is None:
                        seen = places[(p, k)] = [(pl0[0], pl0[3])]
                    seen.append((pl[0], pl[3]))
            # (a row's stack and step are the same in every copy: only j moves)
            if ok and op in _ROW and not (kinds[(p, 0)] == kinds[(p, 1)] == ("inv",)):
                ok = False
            if not ok:
                break
        if not ok:
            break
        # copy c - 1 is no longer the last: its nodes may be read by copy c only (the
        # last copy's by anything after).  Checked here, so that a run whose copies are
        # read later (a gradient's forward layers) stops at once: checked after the
        # structural match, it cost a walk of every copy per start tried (chain of 1000
        # under grad: +2.3 s of compile, no run found)
        if any(maxuse[t] >= lo + period for t in range(prev, lo)):
            break
        c += 1
    return _Run(start, period, c, kinds, rows, places)


def find_runs(nodes, order, inputs, out_ids, min_nodes) -> List[_Run]:
    """The runs of ``order`` to roll, in order, not overlapping."""
    pos = {i: t for t, i in enumerate(order)}
    sig = _signatures(nodes, order, pos)
    n = len(order)
    maxuse = [-1] * n
    for t, i in enumerate(order):
        for a in nodes[i][2]:
            pa = pos.get(a)
            if pa is not None and maxuse[pa] < t:
                maxuse[pa] = t
    for i in out_ids:
        if i in pos:
            maxuse[pos[i]] = n
    written = _written(nodes, order, inputs)
    found: List[_Run] = []
    for period in _periods(sig):
        if (n // period - 1) * period < min_nodes:
            continue
        same = np.concatenate([sig[:-period] == sig[period:], [False]])
        t, e = 0, -1
        while t < n - period:
            if not same[t]:
                t += 1
                continue
            if t > e:
                e = t
                while same[e]:
                    e += 1
            # sig[t:e + period] repeats with the period: copies from some start in it
            s, best, reach = t, None, None
            while s < t + period and s + MIN_COPIES * period <= e + period:
                run = _match(nodes, order, pos, inputs, s, period, (e + period - s) // period,
                             maxuse, written)
                if run.copies >= MIN_COPIES and (run.copies - 1) * period >= min_nodes:
                    best = run
                    break
                if run.copies > 1 and (reach is None or s + (run.copies - 1) * period < reach):
                    reach = s + (run.copies - 1) * period
                s += 1
            if best is not None and best.tables():
                # (ranked as the run it was cut from: a run of twice the period whose
                # copies each hold two layers, cut otherwise, must not win over it)
                best.score = (best.copies - 1) * period
                best = _cut(best, min_nodes)
                if best.copies == 0:        # (the copies before a strided stretch: too few)
                    t = best.start + best.skip * period
                    continue
            if best is not None:
                found.append(best)
                t = best.start + best.copies * best.period
            elif reach is not None:
                # copies matched from some start, then one did not (it reads otherwise,
                # or is read later): the copies from the earliest such stop may be a run
                t = reach
            else:
                t = e + 1
    found.sort(key=lambda r: -((r.copies - 1) * r.period if r.score is None else r.score))
    taken: List[_Run] = []
    for r in found:
        if all(r.start + r.copies * r.period <= o.start or o.start + o.copies * o.period <= r.start
               for o in taken):
            taken.append(r)
    return sorted(taken, key=lambda r: r.start)


def _cut(run, min_nodes):
    """``run`` (whose copies read some input through a table) cut where a stretch of
    copies reading all at a stride begins or ends, if that stretch would be a run of its
    own: the copies at a stride are a run reading at offsets, the others one through
    tables (a table costs a store per copy and call, and a load per copy: a scan of
    1,100 layers past the packing limit ran 10% slower per call with every layer's matrix
    read through one than with its packed ones read at a stride).  ``run.copies`` 0: no
    run before the stretch (too few copies; ``run.skip``: the copies to step over).  The
    tables' stack space is bounded too (``TABLE_BYTES``): a run past it ends there."""
    def alone(n):
        return n >= MIN_COPIES and (n - 1) * run.period >= min_nodes
    secs = run.strided()
    if alone(secs[0][1]):
        run.copies = secs[0][1]
        return run
    first = next((a for a, n in secs if alone(n)), None)
    if first is not None and not alone(first):
        run.copies, run.skip = 0, first
        return run
    if first is not None:
        run.copies = first
    tabs = run.tables()
    if tabs:
        run.copies = min(run.copies, max(MIN_COPIES, TABLE_BYTES // (8 * tabs)))
    return run


class _PerCopy:
    """The values of a copy's per-copy memory inputs at step ``c`` (``_Lazy``'s source:
    an element is loaded where first used): at an offset growing by a stride in a buffer,
    or at an element of the copy's array in a table of addresses (``_Run.access``)."""

    def __init__(self, context, builder, inputs, c):
        self.context, self.builder, self.inputs, self.c = context, builder, inputs, c
        self.items: List[Tuple[Any, ...]] = []

    def offset(self, off, stride):
        i64 = ir.IntType(64)
        return self.builder.add(ir.Constant(i64, off), self.builder.mul(self.c, ir.Constant(i64, stride)))

    def add(self, place, stride):
        self.items.append((place, stride))
        return len(self.items) - 1

    def __getitem__(self, p):
        place, how = self.items[p]
        j, shape, k, off, dtype = place
        if isinstance(how, _Tabled):     # (the copy's array's address)
            return self.context.unpack_value(self.builder, dtype, self.builder.gep(
                how.data, [ir.Constant(ir.IntType(64), k)]))
        aty, ary = self.inputs.arrs[j]
        return self.context.unpack_value(self.builder, aty.dtype,
                                         self.builder.gep(ary.data, [self.offset(off + k, how)]))


class _Tabled:
    """A copy's array read through a table (``_Run.access``), as ``irblock``'s views take
    an array argument: its data pointer (loaded from the table at the step) and no
    meminfo (no reference is taken: the block's caller holds the arrays)."""

    __slots__ = ("data", "meminfo")

    def __init__(self, data):
        self.data = data
        self.meminfo = ir.Constant(ir.IntType(8).as_pointer(), None)


def _tables(builder, inputs, mem):
    """Before the loop: a table of the copies' addresses for each distinct sequence of
    places read through one (``_Run.access``), ``{places: table}``; each entry the address
    of the copy's array (an argument, or a view of one at an element offset)."""
    i64 = ir.IntType(64)
    out: Dict[Tuple[Any, ...], Any] = {}
    for _, place, how in mem:
        if how[0] != "table" or how[1] in out:
            continue
        table = cgutils.alloca_once(builder, inputs.arrs[how[1][0][0]][1].data.type,
                                    size=len(how[1]))
        for c, (j, off) in enumerate(how[1]):
            ptr = inputs.arrs[j][1].data
            if off:
                ptr = builder.gep(ptr, [ir.Constant(i64, off)])
            builder.store(ptr, builder.gep(table, [ir.Constant(i64, c)]))
        out[how[1]] = table
    return out


def _emit_run(context, builder, nodes, order, vals, run, inputs, out_ids, packs, ops):
    """Emit ``run`` as a loop; sets ``vals`` of the last copy's nodes."""
    i64 = ir.IntType(64)
    L, s = run.period, run.start
    base = order[s:s + L]
    last = order[s + (run.copies - 1) * L:s + run.copies * L]
    # the body: copy 0's nodes, renumbered; what they read from outside is a local
    # node whose value is set (invariants, carries' phis, per-copy inputs)
    local = {i: k for k, i in enumerate(base)}
    body = [None] * L
    extra: List[Any] = []
    bvals: Dict[int, Any] = {}
    pre_vals: Dict[int, Any] = {}        # local node -> value computed before the loop
    carries: Dict[Tuple[int, int], int] = {}   # (outside node, q) -> local node of its phi
    mem: List[Tuple[int, Tuple[Any, ...], int]] = []
    rows: Dict[Tuple[int, int, int], int] = {}

    def new(node):
        extra.append(node)
        return L + len(extra) - 1

    for p, i in enumerate(base):
        op, dt, args, param = nodes[i]
        new_args = []
        for k, a in enumerate(args):
            kind = run.kinds.get((p, k), ("own", local.get(a)) if a in local else ("inv",))
            if kind[0] == "own":
                new_args.append(kind[1])
            elif kind[0] == "carry":
                key = (a, kind[1])
                if key not in carries:
                    carries[key] = new(nodes[a])
                new_args.append(carries[key])
            elif kind[0] == "inv":
                if a not in local:
                    if ("inv", a) not in rows:
                        rows[("inv", a)] = new(nodes[a])
                        pre_vals[rows[("inv", a)]] = a
                    new_args.append(rows[("inv", a)])
                else:
                    new_args.append(local[a])
            else:
                b = new(nodes[a])
                mem.append((b, _mem_place(nodes, inputs, a), run.access((p, k))))
                new_args.append(b)
        if op in _ROW and run.rows.get(p):
            # row j0 + c * dj of the stack: the step argument i becomes i + c * dj * rows
            key = (new_args[0], new_args[1], run.rows[p])
            if key not in rows:
                rows[key] = new(nodes[args[1]])
            new_args[1] = rows[key]
        body[p] = (op, dt, tuple(new_args), param)
    bnodes = body + extra
    # before the loop: invariants and the carries' first values
    for b, a in pre_vals.items():
        bvals[b] = ops.value(nodes, vals, a)
    inits = {b: ops.value(nodes, vals, a) for (a, q), b in carries.items()}
    tables = _tables(builder, inputs, mem)
    pre, head, end, c = loop_head(builder, "tangentia.reroll")
    phis = {}
    for b, v in inits.items():
        phi = builder.phi(v.type)
        phi.add_incoming(v, pre)
        phis[b] = phi
        bvals[b] = phi
    per = _PerCopy(context, builder, inputs, c)
    at = {key: _Tabled(builder.load(builder.gep(t, [c]))) for key, t in tables.items()}
    for b, place, how in mem:
        j, shape, k, off, dtype = place
        tab = at[how[1]] if how[0] == "table" else None
        if k is not None:
            bvals[b] = ops.lazy(per, per.add(place, how[1] if tab is None else tab))
            continue
        aty, ary = inputs.arrs[j]
        view = ops.view(context, builder, aty, ary, per.offset(off, how[1]), shape) if tab is None \
            else ops.view(context, builder, aty, tab, ir.Constant(i64, 0), shape)
        bvals[b] = ops.arr_in(nbt.Array(aty.dtype, len(shape), "C"), view)
    for key, b in rows.items():
        if key[0] == "inv":
            continue
        arr_b, i_b, dj = key
        arr = ops.value(bnodes, bvals, arr_b)
        steps = builder.extract_value(arr.ary._getvalue(), [5, 1])
        step = ops.value(bnodes, bvals, i_b)
        bvals[b] = builder.add(step, builder.mul(builder.mul(c, ir.Constant(i64, dj)), steps))
    later = _read_after(nodes, order, s + run.copies * L, out_ids)
    keep = sorted({q for (_, q) in carries} | {p for p, i in enumerate(last) if i in later})
    bpacks = [[local[i] for i in pk if i in local] for pk in packs if pk[0] in local]
    _emit_segment(context, builder, bnodes, list(range(L)), bvals, {}, keep,
                  [pk for pk in bpacks if len(pk) >= 2], ops)
    nxt = builder.add(c, ir.Constant(i64, 1))
    latch = builder.block
    c.add_incoming(nxt, latch)
    for (a, q), b in carries.items():
        phis[b].add_incoming(ops.value(bnodes, bvals, q), latch)
    br = builder.cbranch(builder.icmp_unsigned("<", nxt, ir.Constant(i64, run.copies)), head, end)
    br.set_metadata("llvm.loop", ops.no_unroll(builder.module))
    builder.position_at_end(end)
    for p, i in enumerate(last):
        if p in bvals:
            vals[i] = bvals[p]
    STATS.add("runs")


def hoist_stores(nodes, order):
    """``order`` with each store (``"rowst"``, ``"arrst"``) moved up to just after the
    last node it reads: a loop body's rows are stored at its end (``rowio``), so each
    layer's residual row was read after all the other layers.  A store is left where it
    is if its array is read in the block or written twice at one place (then the order
    of the stores and reads matters)."""
    stores = [i for i in order if nodes[i][0] in _STORES]
    if not stores:
        return order
    read = {a for i in order if nodes[i][0] not in _STORES for a in nodes[i][2]
            if nodes[a][0] == "arr"}
    places: Dict[Any, int] = {}
    for i in stores:
        op, _, args, param = nodes[i]
        key = (args[0], args[1], param) if op == "rowst" else (args[0], param)
        places[key] = places.get(key, 0) + 1
    twice = {k[0] for k, n in places.items() if n > 1}
    pos = {i: t for t, i in enumerate(order)}
    after: Dict[int, List[int]] = {}
    for i in stores:
        args = nodes[i][2]
        if args[0] in read or args[0] in twice:
            continue
        t = max([pos[a] for a in args if a in pos], default=-1)
        after.setdefault(t, []).append(i)
    moved = {i for v in after.values() for i in v}
    out = list(after.get(-1, ()))
    for t, i in enumerate(order):
        if i not in moved:
            out.append(i)
        out.extend(after.get(t, ()))
    return out


def _emit_segment(context, builder, nodes, order, vals, memo, keep, packs, ops):
    """``order``'s nodes as ``irblock`` emits them (with vector lanes if ``packs``);
    ``keep``: the nodes read after them (their scalar values are made)."""
    if packs:
        ops.emit_lanes(context, builder, nodes, order, vals, memo, packs, keep)
    else:
        ops.emit_nodes(context, builder, nodes, order, vals, memo, keep)


def _read_after(nodes, order, t, out_ids):
    """The nodes read by ``order[t:]`` or by the block's outputs."""
    return {a for i in order[t:] for a in nodes[i][2]} | set(out_ids)


def emit(context, builder, nodes, order, vals, memo, out_ids, inputs, packs, ops: Ops):
    """For ``irblock._emit_ir``: emit ``order`` with its repeated runs rolled, and
    return the outputs' values; None (nothing emitted) if no run pays.  ``inputs``:
    the block's ``irblock._Inputs`` (or a list of scalars), ``packs``: its vector lanes."""
    limit = min_saved()
    if limit <= 0 or len(order) < limit or len(order) > MAX_ORDER:
        return None
    order = hoist_stores(nodes, order)
    runs = find_runs(nodes, order, inputs, out_ids, limit)
    if not runs:
        return None
    rest = len(order) - sum((r.copies - 1) * r.period for r in runs)
    if rest > ops.split_nodes:
        return None
    t = 0
    for r in runs:
        seg = order[t:r.start]
        later = _read_after(nodes, order, r.start, out_ids)
        _emit_segment(context, builder, nodes, seg, vals, memo, [i for i in seg if i in later], packs,
                      ops)
        _emit_run(context, builder, nodes, order, vals, r, inputs, out_ids, packs, ops)
        t = r.start + r.copies * r.period
    _emit_segment(context, builder, nodes, order[t:], vals, memo, list(out_ids), packs, ops)
    return [ops.value(nodes, vals, i) for i in out_ids]
