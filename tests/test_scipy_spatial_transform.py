"""tangentia.scipy.spatial.transform (Rotation, Slerp) against jax.scipy.spatial.transform
(JAX 0.10.2, x64 on): every constructor, conversion and method on random stacks of rotations
(values to 1e-10), the branches of from_matrix and as_euler (each largest diagonal entry,
gimbal lock, symmetric and asymmetric axis sequences, intrinsic and extrinsic), the small-angle
series of the rotation vector, gradients under jit and vmap, and JAX's errors for bad input.
"""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import tangentia as tg
import tangentia.numpy as tnp
from tangentia.scipy.spatial import transform as T

jax = pytest.importorskip("jax", reason="JAX 0.10.2 is the reference these tests compare with")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
from jax.scipy.spatial import transform as JT  # noqa: E402

RNG = np.random.default_rng(20261207)
SEQS = ["".join(p) for p in itertools.permutations("xyz")] + \
    ["xyx", "xzx", "yxy", "yzy", "zxz", "zyz"]


def close(ours: Any, theirs: Any, tol: float = 1e-10) -> None:
    o, t = np.asarray(ours), np.asarray(theirs)
    assert o.shape == t.shape, (o.shape, t.shape)
    np.testing.assert_allclose(o, t, rtol=tol, atol=tol)


def quats(n: int) -> np.ndarray:
    q = RNG.normal(size=(n, 4))
    q[0] = [0., 0., 0., 1.]            # the identity
    q[1] = [0.3, -0.2, 0.1, -0.9]      # w < 0
    q[2] = [0., 1e-5, 0., 1.]          # small angle: the series branches
    q[3] = [0., 0., 1., 0.]            # angle pi, w == 0
    return q


def both(q: np.ndarray) -> tuple[Any, Any]:   # Any: mypy reads r[i] as a tuple's
    return T.Rotation.from_quat(q), JT.Rotation.from_quat(jnp.asarray(q))


def test_constructors_match_jax() -> None:
    q = quats(12)
    r, j = both(q)
    close(r.quat, j.quat)
    close(T.Rotation.from_quat(q[4]).quat, JT.Rotation.from_quat(q[4]).quat)
    rv = RNG.normal(size=(7, 3)) * 2
    rv[0] = [1e-4, -2e-4, 3e-4]
    rv[1] = 0.
    for deg in (False, True):
        close(T.Rotation.from_rotvec(rv, degrees=deg).quat,
              JT.Rotation.from_rotvec(jnp.asarray(rv), degrees=deg).quat)
    mrp = RNG.normal(size=(2, 5, 3))
    close(T.Rotation.from_mrp(mrp).quat, JT.Rotation.from_mrp(jnp.asarray(mrp)).quat)
    # each sequence once, intrinsic or extrinsic and in degrees or not by turns (JAX's
    # compile of each costs ~0.1 s CPU)
    cases = [(seq.upper() if k % 2 else seq, k % 3 == 0,
              RNG.uniform(-4, 4, size=(3, len(seq))) * (60 if k % 3 == 0 else 1))
             for k, seq in enumerate(SEQS + ["x", "z", "xy", "zx", "zxz"])]
    ref = jax.jit(lambda angs: [JT.Rotation.from_euler(s, a, degrees=d).quat
                                for (s, d, _), a in zip(cases, angs)])([c[2] for c in cases])
    for (seq, deg, a), theirs in zip(cases, ref):
        close(T.Rotation.from_euler(seq, a, degrees=deg).quat, theirs)
    close(T.Rotation.from_euler("z", 90, degrees=True).quat,
          JT.Rotation.from_euler("z", 90, degrees=True).quat)
    close(T.Rotation.identity().quat, JT.Rotation.identity().quat)
    assert T.Rotation.identity(dtype=np.float32).quat.dtype == np.float32
    close(T.Rotation.concatenate([r[:3], r[5:]]).quat,
          JT.Rotation.concatenate([j[:3], j[5:]]).quat)


def test_from_matrix_each_branch_matches_jax() -> None:
    mats = np.asarray(JT.Rotation.from_quat(jnp.asarray(quats(10))).as_matrix())
    # rotations by near pi about x, y, z: the largest diagonal entry picks each branch
    near_pi = np.asarray(JT.Rotation.from_rotvec(jnp.asarray(np.eye(3) * 3.)).as_matrix())
    m = np.concatenate([mats, near_pi])
    m = m + 1e-3 * RNG.normal(size=m.shape)      # not exactly orthogonal, as users pass them
    close(T.Rotation.from_matrix(m).quat, JT.Rotation.from_matrix(jnp.asarray(m)).quat)
    close(T.Rotation.from_matrix(m[4]).quat, JT.Rotation.from_matrix(jnp.asarray(m[4])).quat)


def test_conversions_and_methods_match_jax() -> None:
    q = quats(12)
    v = RNG.normal(size=(12, 3))
    w = RNG.uniform(0.1, 2., size=12)

    def all_of(mod: Any, q: Any, v: Any, w: Any) -> list[Any]:
        r = mod.Rotation.from_quat(q)
        out = [r.as_matrix(), r.as_mrp(), r.as_rotvec(), r.as_rotvec(degrees=True),
               r.inv().quat, r.magnitude(), (r * r[::-1]).quat, (r[2] * r).quat,
               # the mean is an eigenvector, its sign free: compare the rotation's matrix
               r.mean().as_matrix(), r.mean(w).as_matrix()]
        out += [r.as_quat(c, f) for c, f in itertools.product((False, True), (False, True))]
        for inverse in (False, True):
            out += [r.apply(v, inverse=inverse), r[3].apply(v, inverse),
                    r.apply(v[0], inverse)]
        return out

    # one compiled JAX reference (JAX's eager vectorize costs ~0.3 s CPU a call)
    theirs = jax.jit(lambda q, v, w: all_of(JT, q, v, w))(q, v, w)
    ours = all_of(T, q, v, w)
    assert len(ours) == len(theirs) == 20
    for o, t in zip(ours, theirs):
        close(o, t, 1e-8)
    # float32 stays float32, as in JAX
    for f in all_of(T, q.astype(np.float32), v.astype(np.float32), w.astype(np.float32)):
        assert np.asarray(f).dtype == np.float32
    r: Any = T.Rotation.from_quat(q)
    assert len(r) == 12 and not r.single and r[0].single
    assert isinstance(r[1:3], T.Rotation) and len(r[1:3]) == 2


def test_as_euler_matches_jax_including_gimbal_lock() -> None:
    q = quats(10)
    # gimbal lock: middle angle 0 and pi/2-offset (asymmetric) or pi (symmetric)
    locks = np.concatenate([np.asarray(JT.Rotation.from_euler(s, jnp.asarray(a)).quat)
                            for s, a in [("xyz", [[0.3, np.pi / 2, 0.2]]),
                                         ("ZXZ", [[0.4, 0., -0.7]]),
                                         ("zyz", [[0.4, np.pi, 0.1]])]])
    qq = np.concatenate([q, locks])
    r = T.Rotation.from_quat(qq)
    seqs = [(seq.upper() if k % 2 else seq, k % 3 == 0)
            for k, seq in enumerate(SEQS + ["yxz", "XZX"])]
    # one compiled JAX reference for all: JAX's eager vectorize costs ~0.3 s CPU a call
    ref = jax.jit(lambda q: [JT.Rotation.from_quat(q).as_euler(s, degrees=d)
                             for s, d in seqs])(jnp.asarray(qq))
    for (seq, deg), theirs in zip(seqs, ref):
        close(r.as_euler(seq, degrees=deg), theirs, 1e-9)


def test_slerp_matches_jax() -> None:
    q = quats(5)
    times = np.array([0., 0.5, 1.7, 2., 3.1])
    s = T.Slerp.init(times, T.Rotation.from_quat(q))
    js = JT.Slerp.init(jnp.asarray(times), JT.Rotation.from_quat(jnp.asarray(q)))
    for leaf_o, leaf_t in zip(tg.tree_util.tree_leaves(s), jax.tree_util.tree_leaves(js)):
        close(leaf_o, leaf_t)
    t = np.array([-0.2, 0., 0.25, 0.5, 1.0, 1.7, 1.99, 2.5, 3.1, 3.5])
    close(s(t).quat, js(jnp.asarray(t)).quat)
    close(s(1.2).quat, js(1.2).quat)
    assert s(1.2).single


def test_gradients_under_jit_and_vmap_match_jax() -> None:
    rv = RNG.normal(size=(4, 3))
    v = RNG.normal(size=(4, 3))

    def loss(mod: Any, np_: Any, rv: Any, v: Any) -> Any:
        r = mod.Rotation.from_rotvec(rv)
        m = mod.Rotation.from_matrix(r.as_matrix())
        return np_.sum(m.apply(v) ** 2 * np_.arange(1., 4.)) + np_.sum(
            (r * m.inv()).as_quat() ** 2) + np_.sum(r.as_mrp() * r.magnitude()[:, None])

    ours = tg.jit(tg.grad(lambda a, b: loss(T, tnp, a, b), argnums=(0, 1)))(rv, v)
    theirs = jax.jit(jax.grad(lambda a, b: loss(JT, jnp, a, b), argnums=(0, 1)))(jnp.asarray(rv),
                                                                       jnp.asarray(v))
    close(ours[0], theirs[0], 1e-8)
    close(ours[1], theirs[1], 1e-8)

    # vmap over a pytree of Rotations against the stack (checked against JAX above), and
    # the gradient of a Slerp in its key times
    r: Any = T.Rotation.from_quat(quats(6))
    out = tg.vmap(lambda rr: rr.as_euler("XYZ", degrees=True))(r)
    close(out, r.as_euler("XYZ", degrees=True), 1e-12)
    close(tg.vmap(lambda rr, x: rr.apply(x, inverse=True))(r, v[[0, 1, 2, 3, 0, 1]]),
          np.stack([r[i].apply(v[i % 4], inverse=True) for i in range(6)]), 1e-12)
    q = RNG.normal(size=(3, 4))
    at = np.array([0.3, 1.4])

    def slerp_loss(mod: Any, np_: Any, times: Any) -> Any:
        s = mod.Slerp.init(times, mod.Rotation.from_quat(q))
        return np_.sum(s(at).as_rotvec() * np_.array([1., -2., 3.]))

    g = tg.grad(lambda t: slerp_loss(T, tnp, t))(np.array([0., 1., 2.]))
    gj = jax.jit(jax.grad(lambda t: slerp_loss(JT, jnp, t)))(jnp.array([0., 1., 2.]))
    close(g, gj, 1e-8)
    assert np.abs(np.asarray(g)).max() > 0.1


def test_errors_follow_jax() -> None:
    r: Any = T.Rotation.from_quat(RNG.normal(size=(3, 4)))
    cases = [
        (lambda: T.Rotation.from_euler("xyzx", np.ones(4)), ValueError,
         "Expected axis specification to be a non-empty string of upto 3 characters, got xyzx"),
        (lambda: T.Rotation.from_euler("", np.ones(1)), ValueError,
         "Expected axis specification"),
        (lambda: T.Rotation.from_euler("xYz", np.ones(3)), ValueError,
         r"Expected axes from `seq` to be from \['x', 'y', 'z'\] or \['X', 'Y', 'Z'\], got xYz"),
        (lambda: T.Rotation.from_euler("xxy", np.ones(3)), ValueError,
         "Expected consecutive axes to be different, got xxy"),
        (lambda: T.Rotation.from_euler("xy", np.ones(3)), ValueError,
         "inconsistent size for core dimension 'm': 2 vs 3"),
        (lambda: r.apply(np.ones(2)), ValueError,
         "inconsistent size for core dimension 'm': 3 vs 2"),
        (lambda: r.as_euler("xy"), ValueError, "Expected 3 axes, got xy."),
        (lambda: r.as_euler("xyy"), ValueError, "Expected consecutive axes to be different"),
        (lambda: r.as_euler("abc"), ValueError, "Expected axes from `seq`"),
        (lambda: r[0][0], TypeError, "Single rotation is not subscriptable."),
        (lambda: len(r[0]), TypeError, r"Single rotation has no len\(\)."),
        (lambda: r.mean(np.ones((3, 1))), ValueError,
         r"Expected `weights` to be 1 dimensional, got shape \(3, 1\)."),
        (lambda: r.mean(np.ones(2)), ValueError,
         "Expected `weights` to have number of values equal to number of rotations, got 2 "
         "values and 3 rotations."),
        (lambda: T.Rotation.random(np.zeros(2)), NotImplementedError, "Rotation.random"),
        (lambda: T.Slerp.init([0., 1.], r.quat), TypeError,  # r.quat: not a Rotation
         "`rotations` must be a `Rotation` instance."),
        (lambda: T.Slerp.init([0.], r[:1]), ValueError,
         "`rotations` must be a sequence of at least 2 rotations."),
        (lambda: T.Slerp.init([[0., 1., 2.]], r), ValueError,
         "Expected times to be specified in a 1 dimensional array, got 2 dimensions."),
        (lambda: T.Slerp.init([0., 1.], r), ValueError,
         "Expected number of rotations to be equal to number of timestamps given, got 3 "
         "rotations and 2 timestamps."),
        (lambda: T.Slerp.init([0., 1., 2.], r)(np.ones((2, 2))), ValueError,
         r"`times` must be at most 1-dimensional."),
    ]
    for f, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            f()
    # JAX returns a meaningless number for these shapes; we say what was expected
    for f, msg in [(lambda: T.Rotation.from_quat(np.ones(3)), r"from_quat: expected quat of "
                    r"shape \(\.\.\., 4\), got \(3,\)"),
                   (lambda: T.Rotation.from_matrix(np.eye(2)), "from_matrix: expected matrix"),
                   (lambda: T.Rotation.from_mrp(np.ones(4)), "from_mrp: expected mrp"),
                   (lambda: T.Rotation.from_rotvec(np.ones(2)), "from_rotvec: expected rotvec")]:
        with pytest.raises(ValueError, match=msg):
            f()
