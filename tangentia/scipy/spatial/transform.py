"""Rotations in 3 dimensions (``tangentia.scipy.spatial.transform``), mirroring
``jax.scipy.spatial.transform``: ``Rotation`` and ``Slerp``.

Both are NamedTuples of arrays (pytrees), so they pass through ``jit``, ``vmap`` and
``grad``. A rotation is held as a unit quaternion ``(x, y, z, w)`` (scalar last); a
leading batch shape makes a stack of rotations. The numbers follow JAX's (and SciPy's)
formulas, including their small-angle series and their choices at degenerate angles.
"""
from __future__ import annotations

import re
import typing

import numpy as np

from ... import numpy as tnp

if typing.TYPE_CHECKING:
    from ...typing import Array, ArrayLike


def _norm(v):
    return tnp.sqrt(tnp.sum(v * v, axis=-1))


def _normalize_quaternion(quat):
    quat = tnp.asarray(quat)
    return quat / _norm(quat)[..., None]


def _compose_quat(p, q):
    p, q = tnp.asarray(p), tnp.asarray(q)
    cross = tnp.cross(p[..., :3], q[..., :3])
    p0, p1, p2, p3 = p[..., 0], p[..., 1], p[..., 2], p[..., 3]
    q0, q1, q2, q3 = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return tnp.stack([p3 * q0 + q3 * p0 + cross[..., 0],
                      p3 * q1 + q3 * p1 + cross[..., 1],
                      p3 * q2 + q3 * p2 + cross[..., 2],
                      p3 * q3 - p0 * q0 - p1 * q1 - p2 * q2], axis=-1)


def _as_matrix(quat):
    x, y, z, w = quat[..., 0], quat[..., 1], quat[..., 2], quat[..., 3]
    x2, y2, z2, w2 = x * x, y * y, z * z, w * w
    xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
    rows = [[x2 - y2 - z2 + w2, 2 * (xy - zw), 2 * (xz + yw)],
            [2 * (xy + zw), -x2 + y2 - z2 + w2, 2 * (yz - xw)],
            [2 * (xz - yw), 2 * (yz + xw), -x2 - y2 + z2 + w2]]
    return tnp.stack([tnp.stack(r, axis=-1) for r in rows], axis=-2)


def _as_mrp(quat):
    sign = tnp.where(quat[..., 3] < 0, -1., 1.).astype(quat.dtype)   # JAX's: float32 stays
    denominator = 1. + sign * quat[..., 3]
    return (sign / denominator)[..., None] * quat[..., :3]


def _as_rotvec(quat, degrees):
    quat = tnp.where((quat[..., 3] < 0)[..., None], -quat, quat)   # w >= 0: 0 <= angle <= pi
    angle = 2. * tnp.arctan2(_norm(quat[..., :3]), quat[..., 3])
    angle2 = angle * angle
    small_scale = 2 + angle2 / 12 + 7 * angle2 * angle2 / 2880
    large_scale = angle / tnp.sin(angle / 2)
    scale = tnp.where(angle <= 1e-3, small_scale, large_scale)
    scale = tnp.where(degrees, tnp.rad2deg(scale), scale)
    return scale[..., None] * quat[..., :3]


def _make_elementary_quat(axis: int, angle):
    zero = tnp.zeros_like(angle)
    parts = [zero, zero, zero, tnp.cos(angle / 2.)]
    parts[axis] = tnp.sin(angle / 2.)
    return tnp.stack(parts, axis=-1)


def _from_rotvec(rotvec, degrees):
    rotvec = tnp.asarray(rotvec)
    rotvec = tnp.where(degrees, tnp.deg2rad(rotvec), rotvec)
    angle = _norm(rotvec)
    angle2 = angle * angle
    small_scale = 0.5 - angle2 / 48 + angle2 * angle2 / 3840
    large_scale = tnp.sin(angle / 2) / angle
    scale = tnp.where(angle <= 1e-3, small_scale, large_scale)
    return tnp.concatenate([scale[..., None] * rotvec, tnp.cos(angle / 2)[..., None]], axis=-1)


def _from_matrix(matrix):
    matrix = tnp.asarray(matrix)
    m = [[matrix[..., r, c] for c in range(3)] for r in range(3)]
    trace = m[0][0] + m[1][1] + m[2][2]
    choice = tnp.argmax(tnp.stack([m[0][0], m[1][1], m[2][2], trace], axis=-1), axis=-1)
    candidates = []
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        q = [None] * 4
        q[i] = 1 - trace + 2 * m[i][i]
        q[j] = m[j][i] + m[i][j]
        q[k] = m[k][i] + m[i][k]
        q[3] = m[k][j] - m[j][k]
        candidates.append(tnp.stack(q, axis=-1))
    candidates.append(tnp.stack([m[2][1] - m[1][2], m[0][2] - m[2][0], m[1][0] - m[0][1],
                                 1 + trace], axis=-1))
    quat = candidates[3]
    for i in range(3):
        quat = tnp.where((choice == i)[..., None], candidates[i], quat)
    return _normalize_quaternion(quat)


def _from_mrp(mrp):
    mrp = tnp.asarray(mrp)
    mrp_squared_plus_1 = tnp.sum(mrp * mrp, axis=-1)[..., None] + 1
    return tnp.concatenate([2 * mrp[..., :3], 2 - mrp_squared_plus_1],
                           axis=-1) / mrp_squared_plus_1


def _inv(quat):
    return quat * tnp.asarray([-1, -1, -1, 1], dtype=quat.dtype)


def _magnitude(quat):
    return 2. * tnp.arctan2(_norm(quat[..., :3]), tnp.abs(quat[..., 3]))


def _make_canonical(quat):
    is_neg = quat < 0
    is_zero = quat == 0
    neg = (is_neg[..., 3]
           | (is_zero[..., 3] & is_neg[..., 0])
           | (is_zero[..., 3] & is_zero[..., 0] & is_neg[..., 1])
           | (is_zero[..., 3] & is_zero[..., 0] & is_zero[..., 1] & is_neg[..., 2]))
    return tnp.where(neg[..., None], -quat, quat)


def _basis_index(axis: str) -> int:
    if axis not in "xyz" or len(axis) != 1:
        raise ValueError(f"Expected axis to be from ['x', 'y', 'z'], got {axis}")
    return "xyz".index(axis)


def _check_seq(seq: str, where: str) -> bool:
    """Checks an axis sequence as JAX does; returns whether it is intrinsic."""
    intrinsic = re.match(r'^[XYZ]{1,3}$', seq) is not None
    extrinsic = re.match(r'^[xyz]{1,3}$', seq) is not None
    if not (intrinsic or extrinsic):
        raise ValueError("Expected axes from `seq` to be from ['x', 'y', 'z'] or "
                         f"['X', 'Y', 'Z'], got {seq} (Rotation.{where})")
    if any(seq[i] == seq[i + 1] for i in range(len(seq) - 1)):
        raise ValueError(f"Expected consecutive axes to be different, got {seq} "
                         f"(Rotation.{where})")
    return intrinsic


def _euler_from_quat(quat, axes, extrinsic: bool, degrees):
    angle_first, angle_third = (0, 2) if extrinsic else (2, 0)
    i, j, k = axes if extrinsic else axes[::-1]
    symmetric = i == k
    if symmetric:
        k = 3 - i - j
    sign = (i - j) * (j - k) * (k - i) // 2
    eps = 1e-7
    q = [quat[..., n] for n in range(4)]
    if symmetric:
        a, b, c, d = q[3], q[i], q[j], q[k] * sign
    else:
        a, b, c, d = q[3] - q[j], q[i] + q[k] * sign, q[j] + q[3], q[k] * sign - q[i]
    middle = 2 * tnp.arctan2(tnp.hypot(c, d), tnp.hypot(a, b))
    case = tnp.where(tnp.abs(middle - np.pi) <= eps, 2, 0)
    case = tnp.where(tnp.abs(middle) <= eps, 1, case)
    half_sum = tnp.arctan2(b, a)
    half_diff = tnp.arctan2(d, c)
    angles = [tnp.where(case == 1, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1)),
              middle, tnp.zeros_like(middle)]
    angles[angle_first] = tnp.where(case == 0, half_sum - half_diff, angles[angle_first])
    angles[angle_third] = tnp.where(case == 0, half_sum + half_diff, angles[angle_third])
    if not symmetric:
        angles[angle_third] = angles[angle_third] * sign
        angles[1] = angles[1] - np.pi / 2
    out = (tnp.stack(angles, axis=-1) + np.pi) % (2 * np.pi) - np.pi
    return tnp.where(degrees, tnp.rad2deg(out), out)


class Rotation(typing.NamedTuple):
    """Rotation in 3 dimensions, held as unit quaternions ``quat`` (``(..., 4)``,
    scalar last), mirroring ``jax.scipy.spatial.transform.Rotation`` (and SciPy's
    ``Rotation``). A pytree: it passes through ``jit``, ``vmap`` and ``grad``.

    >>> from tangentia.scipy.spatial.transform import Rotation
    >>> r = Rotation.from_euler('z', 90, degrees=True)
    >>> r.as_rotvec()
    Array([0.        , 0.        , 1.57079633])
    >>> (r * Rotation.from_euler('x', 90, degrees=True)).apply([1., 0., 0.]).round(12)
    array([0., 1., 0.])
    """
    quat: Array

    @classmethod
    def concatenate(cls, rotations: typing.Sequence[Rotation]) -> Rotation:
        """Concatenate the sequence ``rotations`` of ``Rotation`` objects (stacks of
        rotations) into one stack."""
        return cls(tnp.concatenate([rotation.quat for rotation in rotations]))

    @classmethod
    def from_euler(cls, seq: str, angles: ArrayLike, degrees: bool = False) -> Rotation:
        """Initialize from Euler ``angles`` (``(..., len(seq))``) about the axes ``seq``
        ('xyz' letters: extrinsic; 'XYZ': intrinsic; 1 to 3 of them), in degrees if
        ``degrees``."""
        num_axes = len(seq)
        if num_axes < 1 or num_axes > 3:
            raise ValueError("Expected axis specification to be a non-empty string of upto "
                             f"3 characters, got {seq} (Rotation.from_euler)")
        intrinsic = _check_seq(seq, "from_euler")
        angles = tnp.atleast_1d(angles)
        if angles.shape[-1] != num_axes:
            raise ValueError(f"inconsistent size for core dimension 'm': {num_axes} vs "
                             f"{angles.shape[-1]} (Rotation.from_euler: angles of shape "
                             f"{angles.shape} need one per axis of seq {seq!r} in the last)")
        angles = tnp.where(degrees, tnp.deg2rad(angles), angles)
        axes = [_basis_index(x) for x in seq.lower()]
        result = _make_elementary_quat(axes[0], angles[..., 0])
        for idx in range(1, num_axes):
            quat = _make_elementary_quat(axes[idx], angles[..., idx])
            result = _compose_quat(result, quat) if intrinsic else _compose_quat(quat, result)
        return cls(result)

    @classmethod
    def from_matrix(cls, matrix: ArrayLike) -> Rotation:
        """Initialize from rotation matrices ``matrix`` (``(..., 3, 3)``)."""
        matrix = tnp.asarray(matrix)
        if matrix.ndim < 2 or matrix.shape[-2:] != (3, 3):
            raise ValueError("Rotation.from_matrix: expected matrix of shape (..., 3, 3), "
                             f"got {matrix.shape}")
        return cls(_from_matrix(matrix))

    @classmethod
    def from_mrp(cls, mrp: ArrayLike) -> Rotation:
        """Initialize from Modified Rodrigues Parameters ``mrp`` (``(..., 3)``)."""
        mrp = tnp.asarray(mrp)
        _check_last(mrp, 3, "from_mrp", "mrp")
        return cls(_from_mrp(mrp))

    @classmethod
    def from_quat(cls, quat: ArrayLike) -> Rotation:
        """Initialize from quaternions ``quat`` (``(..., 4)``, scalar last; normalized)."""
        quat = tnp.asarray(quat)
        _check_last(quat, 4, "from_quat", "quat")
        return cls(_normalize_quaternion(quat))

    @classmethod
    def from_rotvec(cls, rotvec: ArrayLike, degrees: bool = False) -> Rotation:
        """Initialize from rotation vectors ``rotvec`` (``(..., 3)``: axis times angle,
        in degrees if ``degrees``)."""
        rotvec = tnp.asarray(rotvec)
        _check_last(rotvec, 3, "from_rotvec", "rotvec")
        return cls(_from_rotvec(rotvec, degrees))

    @classmethod
    def identity(cls, num: int | None = None, dtype=float) -> Rotation:
        """The identity rotation, of ``dtype`` (``num`` must be None, as in JAX)."""
        if num is not None:
            raise NotImplementedError("Rotation.identity: num must be None (as in JAX), "
                                      f"got {num}")
        return cls(tnp.array([0., 0., 0., 1.], dtype=dtype))

    @classmethod
    def random(cls, random_key: ArrayLike, num: int | None = None) -> Rotation:
        """Not implemented (as in JAX): ``random_key``, ``num``."""
        raise NotImplementedError("Rotation.random is not implemented (as in JAX)")

    def __getitem__(self, indexer) -> Rotation:  # type: ignore[override]
        """Extract rotation(s) at given index(es) from object."""
        if self.single:
            raise TypeError("Single rotation is not subscriptable.")
        return Rotation(self.quat[indexer])

    def __len__(self) -> int:
        """Number of rotations contained in this object."""
        if self.single:
            raise TypeError('Single rotation has no len().')
        return self.quat.shape[0]

    def __mul__(self, other) -> Rotation:  # type: ignore[override]
        """Compose this rotation with the other."""
        return Rotation.from_quat(_compose_quat(self.quat, other.quat))

    def apply(self, vectors: ArrayLike, inverse: bool = False) -> Array:
        """Apply this rotation to ``vectors`` (``(..., 3)``), its inverse if ``inverse``."""
        vectors = tnp.asarray(vectors)
        if vectors.ndim < 1 or vectors.shape[-1] != 3:
            raise ValueError("inconsistent size for core dimension 'm': 3 vs "
                             f"{vectors.shape[-1] if vectors.ndim else '()'} (Rotation.apply: "
                             f"expected vectors of shape (..., 3), got {vectors.shape})")
        matrix = self.as_matrix()
        matrix = tnp.where(inverse, tnp.swapaxes(matrix, -1, -2), matrix)
        return (matrix @ vectors[..., None])[..., 0]

    def as_euler(self, seq: str, degrees: bool = False) -> Array:
        """Represent as Euler angles about the 3 axes ``seq`` (as in ``from_euler``), in
        degrees if ``degrees``."""
        if len(seq) != 3:
            raise ValueError(f"Expected 3 axes, got {seq}.")
        intrinsic = _check_seq(seq, "as_euler")
        axes = [_basis_index(x) for x in seq.lower()]
        return _euler_from_quat(self.quat, axes, not intrinsic, degrees)

    def as_matrix(self) -> Array:
        """Represent as rotation matrices (``(..., 3, 3)``)."""
        return _as_matrix(self.quat)

    def as_mrp(self) -> Array:
        """Represent as Modified Rodrigues Parameters (MRPs)."""
        return _as_mrp(self.quat)

    def as_rotvec(self, degrees: bool = False) -> Array:
        """Represent as rotation vectors (in degrees if ``degrees``)."""
        return _as_rotvec(self.quat, degrees)

    def as_quat(self, canonical: bool = False, scalar_first: bool = False) -> Array:
        """Represent as quaternions: with w >= 0 if ``canonical``, as (w, x, y, z) if
        ``scalar_first``."""
        quat = _make_canonical(self.quat) if canonical else self.quat
        if scalar_first:
            return tnp.roll(quat, shift=1, axis=-1)
        return quat

    def inv(self) -> Rotation:
        """Invert this rotation."""
        return Rotation(_inv(self.quat))

    def magnitude(self) -> Array:
        """Get the magnitude(s) (angles in radians) of the rotation(s)."""
        return _magnitude(self.quat)

    def mean(self, weights: ArrayLike | None = None) -> Rotation:
        """The mean of the rotations, each weighted by ``weights`` (default 1)."""
        quat = self.quat
        if weights is None:
            w = tnp.ones(quat.shape[0], dtype=quat.dtype)
        else:
            w = tnp.asarray(weights, dtype=quat.dtype)
        if w.ndim != 1:
            raise ValueError(f"Expected `weights` to be 1 dimensional, got shape {w.shape}.")
        if w.shape[0] != len(self):
            raise ValueError("Expected `weights` to have number of values equal to number "
                             f"of rotations, got {w.shape[0]} values and {len(self)} "
                             "rotations.")
        K = tnp.dot(w[None, :] * quat.T, quat)
        _, v = tnp.linalg.eigh(K)
        return Rotation(v[:, -1])

    @property
    def single(self) -> bool:
        """Whether this instance represents a single rotation."""
        return self.quat.ndim == 1


def _check_last(x, n: int, where: str, name: str) -> None:
    if x.ndim < 1 or x.shape[-1] != n:
        raise ValueError(f"Rotation.{where}: expected {name} of shape (..., {n}), "
                         f"got {x.shape}")


class Slerp(typing.NamedTuple):
    """Spherical linear interpolation of rotations, mirroring
    ``jax.scipy.spatial.transform.Slerp``: build it with ``Slerp.init(times,
    rotations)`` and call it with the times to interpolate at. A pytree."""
    times: Array
    timedelta: Array
    rotations: Rotation
    rotvecs: Array

    @classmethod
    def init(cls, times: ArrayLike, rotations: Rotation) -> Slerp:
        """Key rotations ``rotations`` (a stack of at least 2) at increasing ``times``."""
        if not isinstance(rotations, Rotation):
            raise TypeError("`rotations` must be a `Rotation` instance.")
        if rotations.single or len(rotations) == 1:
            raise ValueError("`rotations` must be a sequence of at least 2 rotations.")
        times = tnp.asarray(times, dtype=rotations.quat.dtype)
        if times.ndim != 1:
            raise ValueError("Expected times to be specified in a 1 dimensional array, got "
                             f"{times.ndim} dimensions.")
        if times.shape[0] != len(rotations):
            raise ValueError("Expected number of rotations to be equal to number of "
                             f"timestamps given, got {len(rotations)} rotations and "
                             f"{times.shape[0]} timestamps.")
        timedelta = tnp.diff(times)
        quat = rotations.as_quat()
        new_rotations = Rotation(quat[:-1])
        return cls(times=times, timedelta=timedelta, rotations=new_rotations,
                   rotvecs=(new_rotations.inv() * Rotation(quat[1:])).as_rotvec())

    def __call__(self, times: ArrayLike) -> Rotation:  # type: ignore[override]
        """Interpolate rotations at ``times`` (a scalar or 1-dimensional)."""
        compute_times = tnp.asarray(times, dtype=self.times.dtype)
        if compute_times.ndim > 1:
            raise ValueError("`times` must be at most 1-dimensional.")
        single_time = compute_times.ndim == 0
        compute_times = tnp.atleast_1d(compute_times)
        ind = tnp.maximum(tnp.searchsorted(self.times, compute_times) - 1, 0)
        # past the last key time JAX's gather clamps ind into the shorter arrays (n - 1
        # intervals) but not into times: extrapolation from the last interval as JAX's
        last = tnp.minimum(ind, self.timedelta.shape[0] - 1)
        alpha = (compute_times - self.times[ind]) / self.timedelta[last]
        result = (self.rotations[last]
                  * Rotation.from_rotvec(self.rotvecs[last] * alpha[:, None]))
        if single_time:
            return Rotation(result.quat[0])
        return result


__all__ = ["Rotation", "Slerp"]
