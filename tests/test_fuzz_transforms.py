"""Differential fuzzing of transformation compositions against JAX 0.10.2 (x64).

A drawn program is a small body ``f(x, y)`` (elementwise math, reductions, indexing, sorting,
pytree outputs, ``custom_jvp`` / ``custom_vjp`` rules (with ``nondiff_argnums``), ``checkpoint``
with a policy, ``scan`` / ``fori_loop`` / ``while_loop`` / ``cond`` / ``switch`` with predicates
and indices computed from the inputs, ``stop_gradient``, integer outputs) wrapped in a drawn stack
of transformations, innermost first: ``vmap`` with drawn ``in_axes`` (``None``, negative) and
``out_axes``, ``grad`` / ``jacfwd`` / ``jacrev`` / ``hessian`` with drawn ``argnums``, ``jvp`` /
``linearize`` / ``vjp`` (tangents and cotangents computed from the primals), ``jit`` and
``checkpoint``.  Ours and JAX's must agree: the same numbers (float64 rounding), shapes, dtypes,
or the same exception type where JAX raises.  Forward mode through a ``custom_vjp`` function is a
deliberate extension (JAX raises; we transpose the bwd rule): those cases only check that ours
returns the numbers of the same program with the ``custom_vjp`` rule written as ``custom_jvp``.

``TANGENTIA_FUZZ_EXAMPLES=2000`` runs many more examples locally; each bug found keeps a
regression case below (an ``@example``).
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import tangentia as tg
import tangentia.numpy as tnp
from tangentia import lax as tlax
from _fuzz_jax_common import FUZZ, assert_same, leaves, run

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

X = np.array([[0.3, -1.2, 2.0], [0.7, 0.1, -0.4]])
Y = np.array([1.5, -0.5, 0.8])
B = 2  # the batch size of every vmap


class _Lib:
    """One library's namespace: the API, its numpy and lax, and the custom-rule functions the
    bodies use (built once per library)."""

    def __init__(self, api: Any, N: Any, vjp_as_jvp: bool = False) -> None:
        self.api, self.N, self.L = api, N, api.lax
        self.policies = api.checkpoint_policies

        @api.custom_jvp
        def softclip(x: Any) -> Any:
            return N.where(x > 1.0, 1.0 + N.log(N.maximum(x, 1.0)), x)

        @softclip.defjvp
        def _softclip_jvp(p: Any, t: Any) -> Any:  # a true rule written differently
            return softclip(p[0]), N.where(p[0] > 1.0, 1.0 / N.maximum(p[0], 1.0), 1.0) * t[0]

        @functools.partial(api.custom_jvp, nondiff_argnums=(0,))
        def scaled_sin(k: float, x: Any, y: Any) -> Any:
            return N.sin(x) * y * k

        @scaled_sin.defjvp
        def _scaled_sin_jvp(k: float, p: Any, t: Any) -> Any:  # deliberately not the truth
            (x, y), (tx, ty) = p, t
            return scaled_sin(k, x, y), k * (N.cos(x) * y * tx * 2.0 + N.sin(x) * ty)

        @api.custom_vjp
        def mul_v(x: Any, y: Any) -> Any:
            return {"p": N.sin(x) * y, "q": x * 2.0}

        def _mul_fwd(x: Any, y: Any) -> Any:
            return mul_v(x, y), (N.cos(x), N.sin(x), y)

        def _mul_bwd(res: Any, g: Any) -> Any:  # deliberately not the truth for x
            c, s, y = res
            ct_y = N.sum(s * g["p"], axis=0)
            # a real y's cotangent is real (JAX keeps a complex one: ours casts, warning)
            return (c * y * g["p"] * 3.0 + 2.0 * g["q"],
                    N.real(ct_y) if y.dtype.kind == "f" else ct_y)

        mul_v.defvjp(_mul_fwd, _mul_bwd)

        @functools.partial(api.custom_vjp, nondiff_argnums=(1,))
        def pow_v(x: Any, n: int) -> Any:
            return x ** n

        pow_v.defvjp(lambda x, n: (x ** n, x),
                     lambda n, x, g: (g * n * x ** (n - 1) * 0.5,))
        if vjp_as_jvp:  # the same rules as custom_jvp: their linear maps are bwd's transposes
            @api.custom_jvp
            def mul_j(x: Any, y: Any) -> Any:
                return {"p": N.sin(x) * y, "q": x * 2.0}

            @mul_j.defjvp
            def _mul_jvp(p: Any, t: Any) -> Any:
                (x, y), (tx, ty) = p, t
                dy = 0.0 if ty.dtype == jax.dtypes.float0 else N.sin(x) * ty  # (an int y)
                return mul_j(x, y), {"p": N.cos(x) * y * tx * 3.0 + dy, "q": 2.0 * tx}

            @functools.partial(api.custom_jvp, nondiff_argnums=(1,))
            def pow_j(x: Any, n: int) -> Any:
                return x ** n

            pow_j.defjvp(lambda n, p, t: (p[0] ** n, t[0] * n * p[0] ** (n - 1) * 0.5))
            mul_v, pow_v = mul_j, pow_j
        self.softclip, self.scaled_sin, self.mul_v, self.pow_v = softclip, scaled_sin, mul_v, pow_v


_T, _J, _J_FWD = _Lib(tg, tnp), _Lib(jax, jnp), _Lib(jax, jnp, vjp_as_jvp=True)


def _bodies(M: _Lib) -> dict[str, Callable[[Any, Any], Any]]:
    """The drawn bodies, for ``x`` of shape (2, 3) and ``y`` of shape (3,)."""
    N, L, api = M.N, M.L, M.api
    return {
        "elementwise": lambda x, y: N.sin(x) * y + N.exp(-x * x),
        "reductions": lambda x, y: (N.sum(x * y, axis=0), N.max(x, axis=1), N.prod(y)),
        "dot": lambda x, y: (x @ y, N.outer(y, y)),
        "cumsum index": lambda x, y: N.cumsum(x, axis=1)[:, ::-1] * y[1] + x[1],
        "where": lambda x, y: N.where(x > 0.2, x * y, N.cos(x)),
        "sort": lambda x, y: N.sort(x * y, axis=1),
        "dict": lambda x, y: {"a": x.T @ x, "b": [y ** 2, N.tanh(x[0])]},
        "concat reshape": lambda x, y: N.concatenate([x.reshape(-1), y * 3]).reshape(3, 3).T,
        "stop_gradient": lambda x, y: L.stop_gradient(x) * y + x * L.stop_gradient(y) ** 2,
        "int output": lambda x, y: ((x > 0).astype(N.int32) + 2, N.sin(x)),
        "custom_jvp": lambda x, y: M.softclip(x * y * 2.0),
        "custom_jvp nondiff": lambda x, y: M.scaled_sin(1.5, x, y),
        "custom_vjp": lambda x, y: M.mul_v(x, y),
        "custom_vjp nondiff": lambda x, y: M.pow_v(x + y, 3),
        "checkpoint dots": lambda x, y: api.checkpoint(
            lambda a, b: N.sin(N.sin(a) @ b) * b, policy=M.policies.dots_saveable)(x, y),
        "checkpoint nothing": lambda x, y: api.checkpoint(
            lambda a, b: N.exp(N.sin(a) * b), policy=M.policies.nothing_saveable)(x, y),
        "scan": lambda x, y: L.scan(lambda c, r: (N.sin(c) * r + c, c * r), y, x),
        "scan reverse": lambda x, y: L.scan(lambda c, r: (c * 0.5 + N.cos(r), c.sum()), y, x,
                                            reverse=True),
        "fori": lambda x, y: L.fori_loop(0, 3, lambda i, c: N.sin(c) * y + i * 0.1, x),
        "while": lambda x, y: L.while_loop(lambda c: c[0] < 3,
                                           lambda c: (c[0] + 1, c[1] * y + 0.1), (0, x))[1],
        "while on value": lambda x, y: L.while_loop(lambda c: N.sum(c * c) < 40.0,
                                                    lambda c: c * 1.6 + 0.05, x * y),
        "cond": lambda x, y: L.cond(N.sum(x) > y[0], lambda a, b: N.sin(a) * b,
                                    lambda a, b: a * b * b, x, y),
        "switch": lambda x, y: L.switch((x[0, 0] > 0).astype(N.int32) + (y[0] > 1.0),
                                        [lambda a: a, lambda a: N.sin(a) * y, lambda a: a ** 3],
                                        x),
        "custom_linear_solve": lambda x, y: L.custom_linear_solve(
            lambda v: (4.0 * N.eye(3) + 0.1 * x.T @ x) @ v, N.sin(y),
            lambda mv, b: N.linalg.solve(4.0 * N.eye(3) + 0.1 * x.T @ x, b), symmetric=True),
        "custom_root": lambda x, y: L.custom_root(
            lambda z: z ** 3 - (1.0 + y * y + x[0] ** 2), N.ones_like(y),
            lambda f, z0: L.fori_loop(0, 30, lambda i, z: z - f(z) / (3.0 * z * z), z0),
            lambda g, v: v / g(N.ones_like(v))),
        # (a true rule: JAX's linearize of a scan ignores an untrue custom_jvp rule at second
        # order, though its jvp of jvp and its linearize outside a scan use it; ours uses it)
        "custom_jvp in scan": lambda x, y: L.scan(
            lambda c, r: (M.softclip(c + r), M.softclip(c * r)), y, x)[1],
        # ties of the running maximum (rounded values), a clamp with ties at its bounds, and
        # a batched map with a remainder
        "cummax ties": lambda x, y: L.cummax(N.round(x * 2.0) * y, axis=1) + L.cummin(
            N.round(y * 2.0) * x, axis=0, reverse=True),
        # (bounds of x's shape, real: JAX's own clamp rule fails for scalar or complex ones)
        "clamp": lambda x, y: (lambda r: L.clamp(N.zeros_like(r) - 0.5, r, N.ones_like(r) * 1.2))(
            N.real(x * y)),
        "map batch": lambda x, y: L.map(lambda r: N.sin(r) * y + r.sum(), x * 1.5,
                                        batch_size=2),
    }


_BODIES = {id(M): _bodies(M) for M in (_T, _J, _J_FWD)}


def _scalar(M: _Lib, out: Any) -> Any:
    """A scalar from a pytree of float arrays (integer leaves dropped)."""
    leaves = [v for v in M.api.tree_util.tree_leaves(out) if np.dtype(v.dtype).kind in "fc"]
    total = 0.0
    for k, v in enumerate(leaves):
        total = total + M.N.sum(M.N.real(M.N.sin(v * (k + 1.0))))
    return total


def _float_tree(M: _Lib, tree: Any, scale: float) -> Any:
    """A tangent or cotangent computed from primal values (integers get float0)."""
    def one(v: Any) -> Any:
        if np.dtype(v.dtype).kind in "fc":
            return M.N.cos(v) * scale + 0.25
        return np.zeros(np.shape(v), jax.dtypes.float0)
    return M.api.tree_util.tree_map(one, tree)


def _apply(M: _Lib, t: tuple, f: Callable[..., Any]) -> Callable[..., Any]:
    """The transformation ``t`` (a tuple of its kind and parameters) applied to ``f(x, y)``."""
    api, kind = M.api, t[0]
    if kind == "vmap":
        return api.vmap(f, in_axes=t[1], out_axes=t[2])
    if kind in ("grad", "jacfwd", "jacrev", "hessian"):
        g = (lambda x, y: _scalar(M, f(x, y))) if kind in ("grad", "hessian") else f
        return getattr(api, kind)(g, argnums=t[1])
    if kind == "jvp":
        return lambda x, y: api.jvp(f, (x, y), _float_tree(M, (x, y), 0.7))
    if kind == "linearize":
        def lin(x: Any, y: Any) -> Any:
            out, f_lin = api.linearize(f, x, y)
            return out, f_lin(*_float_tree(M, (x, y), -0.3))
        return lin
    if kind == "vjp":
        def pullback(x: Any, y: Any) -> Any:
            out, f_vjp = api.vjp(f, x, y)
            return f_vjp(_float_tree(M, out, 0.6))
        return pullback
    if kind == "jit":
        return api.jit(f)
    assert kind == "checkpoint", kind
    return api.checkpoint(f, policy=getattr(M.policies, t[1]))


def _arg_shapes(stack: list[tuple]) -> tuple[tuple[int, ...], ...]:
    """The shapes of the outermost function's ``(x, y)``: each vmap (outside in) inserts the
    batch axis at its ``in_axes`` position."""
    shapes: list[tuple[int, ...]] = [X.shape, Y.shape]
    for t in stack:
        if t[0] != "vmap":
            continue
        for i, ax in enumerate(t[1]):
            if ax is not None:
                s = list(shapes[i])
                s.insert(ax if ax >= 0 else len(s) + 1 + ax, B)
                shapes[i] = tuple(s)
    return tuple(shapes)


def _compose(M: _Lib, body: str, stack: list[tuple]) -> Callable[..., Any]:
    f = _BODIES[id(M)][body]
    for t in stack:
        f = _apply(M, t, f)
    return f


_AXES = st.sampled_from([0, 1, -1, None])
_TRANSFORMS = st.one_of(
    st.tuples(st.just("vmap"), st.tuples(_AXES, _AXES), st.sampled_from([0, -1, 1])),
    st.tuples(st.sampled_from(["grad", "jacfwd", "jacrev", "hessian"]),
              st.sampled_from([0, 1, (0, 1)])),
    st.tuples(st.sampled_from(["jvp", "linearize", "vjp", "jit"])),
    st.tuples(st.just("checkpoint"),
              st.sampled_from(["nothing_saveable", "dots_saveable", "everything_saveable"])),
)


def _valid_vmaps(stack: list[tuple]) -> bool:
    """Each vmap's ``in_axes`` must fit the ranks it sees (else the program is an error for
    both, which the error families test more cheaply) and batch at least one argument."""
    ranks = [X.ndim, Y.ndim]
    for t in stack:
        if t[0] == "vmap":
            if all(a is None for a in t[1]):
                return False
            for i, ax in enumerate(t[1]):
                if ax is not None:
                    if not -ranks[i] - 1 <= ax <= ranks[i]:
                        return False
                    ranks[i] += 1
    return True


# JAX's own failures inside its rules, where ours computes (not errors of the program)
_JAX_INTERNAL = ("reduce_precision does not accept dtype complex",)


def _check(body: str, stack: list[tuple], inputs: str = "float") -> None:
    shapes = _arg_shapes(stack)
    x = np.resize(X.ravel(), shapes[0]) * np.linspace(1.0, 1.3, int(np.prod(shapes[0])))\
        .reshape(shapes[0])
    y = np.resize(Y.ravel(), shapes[1]) * np.linspace(1.0, 0.8, int(np.prod(shapes[1])))\
        .reshape(shapes[1])
    if inputs == "int y":    # float0 tangents, TypeErrors where y is differentiated
        y = np.round(y * 3).astype(np.int64)   # (JAX computes sin(int32) in float32)
    elif inputs == "complex x":   # JAX's complex rules (holomorphic or not)
        if body == "custom_linear_solve":
            return  # JAX's rules fail inside on a complex matrix and a real right-hand side
        x = x + 0.5j * x[..., ::-1]
    name = f"{[t[0] for t in stack]} of {body!r} {stack}"
    forward = any(t[0] in ("jvp", "linearize", "jacfwd", "hessian") for t in stack)
    ours = run(_compose(_T, body, stack), x, y)
    # JAX has no forward mode through a custom_vjp (ours transposes the bwd rule): compare
    # with JAX's numbers for the same rules written as custom_jvp
    theirs = run(_compose(_J_FWD if forward else _J, body, stack), x, y)
    # entries that cancel (high derivatives of large terms) are compared at the scale of
    # the largest value
    scale = max([np.max(np.abs(v), initial=0.0, where=np.isfinite(v)) for v in leaves(theirs)
                 if v.dtype.kind in "fc"] or [0.0]) if not isinstance(theirs, Exception) else 0.0
    if isinstance(theirs, Exception) and any(m in str(theirs) for m in _JAX_INTERNAL):
        return
    assert_same(name, ours, theirs, rtol=1e-9, atol=1e-12 * max(1.0, scale))


@FUZZ
@example(body="int output", stack=[("jacfwd", 1), ("vmap", (1, 0), -1)], inputs="float")
@example(body="custom_jvp in scan", stack=[("linearize",), ("vmap", (0, 0), -1), ("linearize",)],
         inputs="float")
@given(body=st.sampled_from(sorted(_BODIES[id(_T)])),
       stack=st.lists(_TRANSFORMS, min_size=1, max_size=3).filter(_valid_vmaps),
       inputs=st.sampled_from(["float", "float", "int y", "complex x"]))
def test_transform_compositions(body: str, stack: list[tuple], inputs: str) -> None:
    """A drawn body under a drawn stack of transformations (innermost first), ours against
    JAX's: values, shapes, dtypes, or the type of JAX's exception."""
    _check(body, stack, inputs)


# ---------------------------------------------------------------------------
# regressions found by fuzzing


@pytest.mark.parametrize("primal, tangent", [(3, 1), (3, 0.0), (np.int32(3), np.int32(1)),
                                             (True, False)])
def test_jvp_integer_primal_needs_float0_tangent(primal: Any, tangent: Any) -> None:
    """An integer or bool primal takes a float0 tangent: JAX raises for any other; ours
    dropped the tangent silently (``jvp(f, (3,), (1,))`` gave a zero tangent)."""
    f = lambda a: a * 2.0  # noqa: E731
    theirs = run(jax.jvp, f, (primal,), (tangent,))
    ours = run(tg.jvp, f, (primal,), (tangent,))
    assert_same("jvp", ours, theirs)
    assert str(theirs).split(";")[0] in str(ours)
    zero = np.zeros((), jax.dtypes.float0)
    assert_same("jvp float0", run(tg.jvp, f, (primal,), (zero,)), jax.jvp(f, (primal,), (zero,)))


@pytest.mark.parametrize("api", ["grad", "jacfwd", "jacrev", "value_and_grad", "hessian"])
@pytest.mark.parametrize("argnums", [(0, 0), (1, -1)])
def test_repeated_argnums_raise(api: str, argnums: tuple[int, int]) -> None:
    """JAX fails (a TypeError from inside) when ``argnums`` names an argument twice; ours gave
    a zero derivative for the first occurrence (``grad(f, argnums=(0, 0))``: ``(0., 3.)``)."""
    f = lambda a, b: a * b  # noqa: E731
    assert isinstance(run(getattr(jax, api)(f, argnums=argnums), 2.0, 3.0), TypeError)
    with pytest.raises(TypeError, match=r"argnums=\(.*\) names positional argument \d more than"):
        getattr(tg, api)(f, argnums=argnums)(2.0, 3.0)


@pytest.mark.parametrize("out", ["int32", "uint8", "int64 sum", "python int", "pytree"])
def test_jacfwd_of_integer_outputs(out: str) -> None:
    """JAX's jacfwd of an integer output is zeros of the output's dtype (shape out + in); ours
    returned float0 (a bool output: JAX fails inside, ours is bool zeros)."""
    def mk(N: Any) -> Callable[[Any], Any]:
        return {"int32": lambda a: (a > 0).astype(N.int32),
                "uint8": lambda a: a.astype(N.uint8),
                "int64 sum": lambda a: a.sum().astype(N.int64),
                "python int": lambda a: 3,
                "pytree": lambda a: {"f": N.sin(a), "i": [(a > 0).astype(N.int32)]}}[out]
    x = np.array([0.5, -1.0, 2.0])
    assert_same(out, run(tg.jacfwd(mk(tnp)), x), jax.jacfwd(mk(jnp))(x))
    stack = np.stack([x, -x])
    assert_same(f"vmap {out}", run(tg.vmap(tg.jacfwd(mk(tnp))), stack),
                jax.vmap(jax.jacfwd(mk(jnp)))(stack))
    got = tg.jacfwd(lambda a: a > 0)(x)
    assert got.dtype == np.bool_ and got.shape == (3, 3) and not got.any()


@pytest.mark.parametrize("case", ["scale", "reverse add", "cumsum", "pytree out", "int to float",
                                  "float cotangent", "int32 cotangent", "nonlinear"])
def test_linear_transpose_of_integer_functions(case: str) -> None:
    """JAX transposes integer-to-integer linear functions (and raises for integer-to-float, or
    a cotangent of another dtype); ours raised for every integer input."""
    a = np.arange(3)

    def mk(N: Any) -> tuple[Callable[[Any], Any], Any]:
        return {"scale": (lambda x: x * 2, a), "reverse add": (lambda x: x[::-1] + x, a),
                "cumsum": (lambda x: N.cumsum(x), a),
                "pytree out": (lambda x: (x.sum(), x[0] * 3), (np.int64(2), np.int64(5))),
                "int to float": (lambda x: x * 2.5, a * 1.0),
                "float cotangent": (lambda x: x * 2, a * 1.0),
                "int32 cotangent": (lambda x: x * 2, a.astype(np.int32)),
                "nonlinear": (lambda x: x * x, a)}[case]
    (f, ct), (jf, _) = mk(tnp), mk(jnp)
    theirs = run(lambda: jax.linear_transpose(jf, a)(ct))
    if case == "nonlinear":   # JAX fails inside (an AssertionError); ours names the problem
        assert isinstance(run(lambda: tg.linear_transpose(f, a)(ct)), TypeError)
        return
    assert_same(case, run(lambda: tg.linear_transpose(f, a)(ct)), theirs)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.int64, np.float32,
                                   np.float64])
def test_lax_reduce_min_max_of_an_empty_axis(dtype: type) -> None:
    """lax.reduce_min/max over an empty axis are the identity (JAX's; G1's report): the NumPy
    impl raised eagerly and under jit's NumPy backend, the numba backend gave the identity."""
    x, y = np.zeros((0,), dtype), np.zeros((2, 0), dtype)
    for name in ("reduce_min", "reduce_max"):
        ours, theirs = getattr(tlax, name), getattr(jax.lax, name)
        assert_same(name, run(ours, x, (0,)), theirs(x, (0,)))
        assert_same(f"jit {name}", run(tg.jit(lambda v: ours(v, (1,))), y), theirs(y, (1,)))
    with pytest.raises(ValueError, match="zero-size array"):   # NumPy's and JAX's
        tnp.max(x)


def test_jacrev_by_integer_inputs() -> None:
    """JAX's jacrev(allow_int=True) by an integer input is zeros of that input's dtype (shape
    out + in); ours returned float0."""
    x, k = np.array([0.5, -1.2, 2.0]), np.arange(3)
    f = lambda d: {"p": d["a"] * d["b"], "q": d["a"].sum() * d["c"]}  # noqa: E731
    arg = {"a": x, "b": k, "c": np.int32(2)}
    assert_same("jacrev", run(tg.jacrev(f, allow_int=True), arg),
                jax.jacrev(f, allow_int=True)(arg))
    g = lambda a, b: a * b  # noqa: E731
    assert_same("vmap jacrev", run(tg.vmap(tg.jacrev(g, argnums=(0, 1), allow_int=True)),
                                   np.stack([x, -x]), np.stack([k, k])),
                jax.vmap(jax.jacrev(g, argnums=(0, 1), allow_int=True))(np.stack([x, -x]),
                                                                       np.stack([k, k])))
