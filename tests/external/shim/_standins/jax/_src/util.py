"""``jax._src.util`` stand-in: the small helpers JAX's test files import from it."""
import functools

cache = functools.cache
memoize = functools.cache


def safe_zip(*args):
    n = len(args[0])
    for a in args[1:]:
        if len(a) != n:
            raise ValueError(f"safe_zip: length mismatch: {[len(x) for x in args]}")
    return list(zip(*args))


def safe_map(f, *args):
    args = list(map(list, args))
    n = len(args[0])
    for a in args[1:]:
        if len(a) != n:
            raise ValueError(f"safe_map: length mismatch: {[len(x) for x in args]}")
    return list(map(f, *args))


def unzip2(pairs):
    xs, ys = [], []
    for x, y in pairs:
        xs.append(x)
        ys.append(y)
    return tuple(xs), tuple(ys)


def unzip3(triples):
    xs, ys, zs = [], [], []
    for x, y, z in triples:
        xs.append(x)
        ys.append(y)
        zs.append(z)
    return tuple(xs), tuple(ys), tuple(zs)


def unzip(xs):
    return tuple(map(tuple, zip(*xs)))


def split_list(args, ns):
    args = list(args)
    out = []
    for n in ns:
        out.append(args[:n])
        args = args[n:]
    out.append(args)
    return out


def partition_list(bs, lst):
    ins, outs = [], []
    for b, x in zip(bs, lst):
        (outs if b else ins).append(x)
    return ins, outs


def merge_lists(bs, l0, l1):
    i0, i1 = iter(l0), iter(l1)
    return [next(i1) if b else next(i0) for b in bs]


def subvals(lst, replace):
    lst = list(lst)
    for i, v in replace:
        lst[i] = v
    return tuple(lst)


def tuple_update(t, idx, val):
    return t[:idx] + (val,) + t[idx + 1:]


def tuple_insert(t, idx, val):
    return t[:idx] + (val,) + t[idx:]


def tuple_delete(t, idx):
    return t[:idx] + t[idx + 1:]


def prod(xs):
    out = 1
    for x in xs:
        out *= x
    return out


def canonicalize_axis(axis, num_dims):
    axis = int(axis)
    if not -num_dims <= axis < num_dims:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {num_dims}")
    return axis % num_dims if num_dims else axis
