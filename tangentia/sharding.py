"""``jax.sharding`` for the one CPU device: shardings, meshes and partition specs
with their meaning on a single device, so that code written for JAX's sharding API
(libraries that annotate their arrays, ``jax.device_put(x, sharding)``) runs.

Every array lives whole on ``CpuDevice(id=0)``: an eager result's ``.sharding`` is a
``SingleDeviceSharding`` of that device, a ``Mesh`` holds that one device (every
mesh axis has size 1), and a ``NamedSharding`` over such a mesh places every shard
on it, so each shard is the whole array.  ``device_put(x, sharding)`` accepts any of
them; the array keeps reporting its ``SingleDeviceSharding`` (equivalent on one
device: ``is_equivalent_to`` says so).

    >>> import tangentia as tg, tangentia.numpy as tnp
    >>> from tangentia.sharding import Mesh, NamedSharding, PartitionSpec as P
    >>> mesh = tg.make_mesh((1,), ("batch",))
    >>> s = NamedSharding(mesh, P("batch"))
    >>> x = tg.device_put(tnp.ones((4, 2)), s)
    >>> x.sharding
    SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)
    >>> x.sharding.is_equivalent_to(s, x.ndim), s.shard_shape(x.shape)
    (True, (4, 2))
"""
from __future__ import annotations

import contextvars
import enum
from collections import OrderedDict

import numpy as np

from . import core
from ._array import CPU, ArrayImpl, CpuDevice, Shard

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Callable, Sequence
    from .typing import ArrayLike, DTypeLike, Shape

__all__ = ["AbstractDevice", "AbstractMesh", "AxisType", "Mesh", "NamedSharding",
           "PartitionSpec", "PositionalSharding", "Sharding", "SingleDeviceSharding",
           "auto_axes", "explicit_axes", "get_abstract_mesh", "get_mesh",
           "make_single_device_sharding", "reshard", "set_mesh", "use_abstract_mesh"]


def _shape(global_shape, what):
    try:
        return tuple(int(d) for d in global_shape)
    except TypeError:
        raise TypeError(f"{what}: argument 'global_shape' must be a tuple of ints, got "
                        f"{global_shape!r}") from None


class Sharding:
    """How an array's entries are laid out over devices: here always one device, the
    CPU, holding the whole array."""

    memory_kind = "device"

    @property
    def device_set(self) -> Any:
        """The devices holding the array: ``{CpuDevice(id=0)}``."""
        return {CPU}

    addressable_devices = device_set
    is_fully_addressable = True
    has_addressable_devices = True
    num_devices = 1

    @property
    def is_fully_replicated(self) -> bool:
        return True

    def shard_shape(self, global_shape: Shape) -> Shape:
        """The shape of each shard: the whole array's (one device)."""
        return _shape(global_shape, f"{type(self).__name__}.shard_shape")

    def devices_indices_map(self, global_shape: Shape) -> Any:
        """Each device and the slice of the array it holds: the CPU, everything."""
        return {CPU: (slice(None),) * len(_shape(global_shape, "devices_indices_map"))}

    addressable_devices_indices_map = devices_indices_map

    def is_equivalent_to(self, other: Any, ndim: int) -> bool:
        """Whether ``other`` lays out an ``ndim``-dimensional array the same way: every
        sharding here places it whole on the CPU."""
        return isinstance(other, Sharding)

    def with_memory_kind(self, kind: str) -> Any:
        if kind not in (None, "device"):
            raise ValueError(f"with_memory_kind: memory kind {kind!r} does not exist here "
                             "(tangentia arrays live in host memory: 'device')")
        return self


class SingleDeviceSharding(Sharding):
    """The whole array on one device (the CPU).

    Args:
      device: the device (``tangentia.devices()[0]``).
      memory_kind: ``None`` or ``"device"``.
    """

    def __init__(self, device: Any, *, memory_kind: Any = None) -> None:
        if not isinstance(device, CpuDevice):
            raise TypeError(f"SingleDeviceSharding: argument 'device' must be a device "
                            f"(tangentia.devices()[0]), got {device!r}")
        self.with_memory_kind(memory_kind)
        self._device = device

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind=device)"

    def __eq__(self, other):
        return isinstance(other, SingleDeviceSharding)

    def __hash__(self):
        return hash(SingleDeviceSharding)


_SINGLE = SingleDeviceSharding(CPU)


def make_single_device_sharding(device: Any) -> Any:
    """``SingleDeviceSharding(device)``."""
    return SingleDeviceSharding(device)


class PartitionSpec(tuple):
    """How each axis of an array is split over named mesh axes: ``P('x', None)``.

    Args:
      *partitions: one entry per array axis: a mesh axis name, a tuple of names,
        ``None`` (not split) or ``PartitionSpec.UNCONSTRAINED``.
      unreduced: accepted for JAX compatibility (mesh axes holding partial sums).
      reduced: accepted for JAX compatibility.
    """

    UNCONSTRAINED = "unconstrained"

    def __new__(cls, *partitions, unreduced=frozenset(), reduced=frozenset()):
        for p in partitions:
            ok = (p is None or isinstance(p, str) or (isinstance(p, (tuple, list)) and all(
                isinstance(q, str) for q in p)))
            if not ok:
                raise TypeError(f"PartitionSpec: each partition must be a mesh axis name, a "
                                f"tuple of names or None, got {p!r}")
        return super().__new__(cls, tuple(tuple(p) if isinstance(p, list) else p
                                          for p in partitions))

    def __repr__(self):
        return "P(" + ", ".join(repr(p) for p in self) + ("," if len(self) == 1 else "") + ")"

    def _axis_names(self):
        for p in self:
            if p is None or p == self.UNCONSTRAINED:
                continue
            yield from ((p,) if isinstance(p, str) else p)


P = PartitionSpec


class AxisType(enum.Enum):
    """How a mesh axis is handled by the compiler (one device: no effect)."""
    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self):
        return self.name


class AbstractDevice:
    """A device known by kind only (``AbstractMesh``)."""

    def __init__(self, device_kind: str = "cpu", num_cores: int | None = None) -> None:
        self.device_kind = device_kind
        self.num_cores = num_cores

    def __repr__(self):
        return f"AbstractDevice(device_kind={self.device_kind!r}, num_cores={self.num_cores})"


def _axis_names(axis_names, what):
    names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    if not all(isinstance(n, str) for n in names) or len(set(names)) != len(names):
        raise TypeError(f"{what}: argument 'axis_names' must be distinct strings, got "
                        f"{axis_names!r}")
    return names


def _axis_types(axis_types, n, what):
    if axis_types is None:
        return (AxisType.Explicit,) * n
    types = (axis_types,) if isinstance(axis_types, AxisType) else tuple(axis_types)
    if len(types) != n or not all(isinstance(t, AxisType) for t in types):
        raise ValueError(f"{what}: argument 'axis_types' must hold one AxisType per axis "
                         f"({n}), got {axis_types!r}")
    return types


class AbstractMesh:
    """A mesh's shape and axis names, without devices."""

    def __init__(self, axis_sizes: Any, axis_names: Any, *, axis_types: Any = None) -> None:
        self.axis_names = _axis_names(axis_names, "AbstractMesh")
        self.axis_sizes = tuple(int(s) for s in axis_sizes)
        if len(self.axis_sizes) != len(self.axis_names):
            raise ValueError(f"AbstractMesh: {len(self.axis_sizes)} axis sizes for "
                             f"{len(self.axis_names)} axis names")
        self.axis_types = _axis_types(axis_types, len(self.axis_names), "AbstractMesh")

    @property
    def shape(self) -> Any:
        return OrderedDict(zip(self.axis_names, self.axis_sizes))

    @property
    def shape_tuple(self) -> Any:
        return tuple(zip(self.axis_names, self.axis_sizes))

    @property
    def size(self) -> Any:
        """The number of devices: 0 for the empty mesh (as JAX's), else the product of
        the axis sizes."""
        if not self.axis_names:
            return 0
        return int(np.prod(self.axis_sizes, dtype=np.int64))

    @property
    def empty(self) -> Any:
        return not self.axis_names

    def _axes_of(self, kind):
        return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t is kind)

    @property
    def explicit_axes(self) -> Any:
        return self._axes_of(AxisType.Explicit)

    @property
    def auto_axes(self) -> Any:
        return self._axes_of(AxisType.Auto)

    @property
    def manual_axes(self) -> Any:
        return self._axes_of(AxisType.Manual)

    # (False for the empty mesh, as JAX's: no axis at all)
    @property
    def are_all_axes_explicit(self) -> Any:
        return bool(self.axis_types) and all(t is AxisType.Explicit for t in self.axis_types)

    @property
    def are_all_axes_auto(self) -> Any:
        return bool(self.axis_types) and all(t is AxisType.Auto for t in self.axis_types)

    @property
    def are_all_axes_manual(self) -> Any:
        return bool(self.axis_types) and all(t is AxisType.Manual for t in self.axis_types)

    @property
    def abstract_mesh(self) -> Any:
        return self

    def update(self, axis_sizes: Any = None, axis_names: Any = None, axis_types: Any = None) -> Any:
        """A copy with the given fields replaced."""
        return AbstractMesh(self.axis_sizes if axis_sizes is None else axis_sizes,
                            self.axis_names if axis_names is None else axis_names,
                            axis_types=self.axis_types if axis_types is None else axis_types)

    def __eq__(self, other):
        return (type(other) is AbstractMesh and other.axis_names == self.axis_names
                and other.axis_sizes == self.axis_sizes and other.axis_types == self.axis_types)

    def __hash__(self):
        return hash((AbstractMesh, self.axis_names, self.axis_sizes, self.axis_types))

    def __repr__(self):
        axes = ", ".join(f"{n!r}: {s}" for n, s in zip(self.axis_names, self.axis_sizes))
        if not axes:
            return f"AbstractMesh((), axis_types={self.axis_types!r})"
        return (f"AbstractMesh({axes}, axis_types={self.axis_types!r}, device_kind=cpu, "
                "num_cores=None, platform=cpu)")


class Mesh(AbstractMesh):
    """Devices arranged in a grid with named axes.  There is one device, so every
    axis has size 1.

    Args:
      devices: an array (any shape, one entry per axis) of devices.
      axis_names: one name per axis of ``devices``.
      axis_types: one ``AxisType`` per axis (default Explicit).

    ``with mesh: ...`` makes it the current mesh (``get_mesh``).
    """

    def __init__(self, devices: Any, axis_names: Any, *, axis_types: Any = None) -> None:
        devs = np.empty(np.shape(devices), dtype=object)
        flat = list(np.asarray(devices, dtype=object).ravel())
        if not all(isinstance(d, CpuDevice) for d in flat):
            raise TypeError("Mesh: argument 'devices' must hold devices "
                            f"(tangentia.devices()), got {devices!r}")
        devs.ravel()[:] = flat
        names = _axis_names(axis_names, "Mesh")
        if devs.ndim != len(names):
            raise ValueError(f"Mesh: devices.ndim == {devs.ndim} and len(axis_names) == "
                             f"{len(names)} must be equal (one name per axis)")
        if devs.size != 1:
            raise ValueError(f"Mesh: a mesh of {devs.size} devices; tangentia has one device "
                             "(the CPU), so every mesh axis has size 1")
        super().__init__(devs.shape, names, axis_types=axis_types)
        self.devices = devs
        self._token = []

    @property
    def device_ids(self) -> Any:
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    @property
    def local_devices(self) -> Any:
        return [CPU]

    @property
    def abstract_mesh(self) -> Any:
        return AbstractMesh(self.axis_sizes, self.axis_names, axis_types=self.axis_types)

    def __enter__(self):
        self._token.append(_MESH.set(self))
        return self

    def __exit__(self, *exc):
        _MESH.reset(self._token.pop())

    def update(self, axis_sizes: Any = None, axis_names: Any = None, axis_types: Any = None) -> Any:
        """A copy with the given fields replaced (a ``Mesh`` still: of the one device)."""
        shape = self.devices.shape if axis_sizes is None else tuple(axis_sizes)
        return Mesh(self.devices.reshape(shape),
                    self.axis_names if axis_names is None else axis_names,
                    axis_types=self.axis_types if axis_types is None else axis_types)

    def __eq__(self, other):
        return (isinstance(other, Mesh) and other.axis_names == self.axis_names
                and other.axis_sizes == self.axis_sizes)

    def __hash__(self):
        return hash((Mesh, self.axis_names, self.axis_sizes))

    def __str__(self):
        axes = ", ".join(f"{n!r}: {s}" for n, s in zip(self.axis_names, self.axis_sizes))
        return f"Mesh({axes}, axis_types={self.axis_types!r})"

    def __repr__(self):
        return (f"Mesh(axis_sizes={self.axis_sizes!r}, axis_names={self.axis_names!r}, "
                f"axis_types={self.axis_types!r})")


_EMPTY_MESH = AbstractMesh((), ())
_MESH = contextvars.ContextVar("tangentia_mesh", default=None)


def get_mesh() -> Any:
    """The current mesh (``set_mesh`` / ``with mesh:``), or an empty one."""
    m = _MESH.get()
    return _EMPTY_MESH if m is None else m


def get_abstract_mesh() -> Any:
    """The current mesh's ``AbstractMesh`` (empty when none is set)."""
    m = _MESH.get()
    return _EMPTY_MESH if m is None else (m.abstract_mesh if isinstance(m, Mesh) else m)


class _Use:
    """Makes ``mesh`` current at once; as a context manager, restores the previous
    mesh on exit."""

    def __init__(self, mesh, what, kind):
        if not isinstance(mesh, kind) and not (mesh is None and kind is Mesh):
            raise TypeError(f"{what}: argument 'mesh' must be a {kind.__name__}, got {mesh!r}")
        self.mesh = mesh
        self._token = _MESH.set(mesh)

    def __enter__(self):
        return self.mesh

    def __exit__(self, *exc):
        _MESH.reset(self._token)


def set_mesh(mesh: Any) -> Any:
    """Make ``mesh`` the current mesh (``None``: none), for the rest of the context or,
    as ``with set_mesh(mesh): ...``, for the block."""
    return _Use(mesh, "set_mesh", Mesh)


def use_abstract_mesh(mesh: Any) -> Any:
    """``with use_abstract_mesh(mesh): ...``: ``mesh`` is the current abstract mesh."""
    return _Use(mesh, "use_abstract_mesh", AbstractMesh)


class NamedSharding(Sharding):
    """An array split over the named axes of a ``mesh`` as ``spec`` says.  Every axis of
    a mesh has size 1 here, so each shard is the whole array.

    Args:
      mesh: a ``Mesh`` (or ``AbstractMesh``).
      spec: a ``PartitionSpec`` naming axes of ``mesh``.
      memory_kind: ``None`` or ``"device"``.
    """

    def __init__(self, mesh: Any, spec: Any, *, memory_kind: Any = None) -> None:
        if not isinstance(mesh, AbstractMesh):
            raise TypeError(f"NamedSharding: argument 'mesh' must be a Mesh, got {mesh!r}")
        if not isinstance(spec, PartitionSpec):
            if spec is None or isinstance(spec, (tuple, list)):
                spec = PartitionSpec(*(spec or ()))
            else:
                raise TypeError("NamedSharding: argument 'spec' must be a PartitionSpec, got "
                                f"{spec!r}")
        for name in spec._axis_names():
            if name not in mesh.axis_names:
                raise ValueError(f"Resource axis: {name} of {spec!r} is not found in mesh: "
                                 f"{mesh.axis_names}.")
        self.with_memory_kind(memory_kind)
        self.mesh = mesh
        self.spec = spec

    @property
    def replicated_axes(self) -> Any:
        used = set(self.spec._axis_names())
        return tuple(n for n in self.mesh.axis_names if n not in used)

    def update(self, **kwargs: Any) -> Any:
        """A copy with ``mesh`` and/or ``spec`` replaced."""
        return NamedSharding(kwargs.pop("mesh", self.mesh), kwargs.pop("spec", self.spec),
                             **kwargs)

    def shard_shape(self, global_shape: Any) -> Any:
        shape = _shape(global_shape, "NamedSharding.shard_shape")
        if len(self.spec) > len(shape):
            raise ValueError(f"Sharding {self!r} is only valid for values of rank at least "
                             f"{len(self.spec)}, but was applied to a value of rank "
                             f"{len(shape)}")
        return shape

    def __eq__(self, other):
        return (isinstance(other, NamedSharding) and other.mesh == self.mesh
                and tuple(other.spec) == tuple(self.spec))

    def __hash__(self):
        return hash((NamedSharding, tuple(self.spec)))

    def __repr__(self):
        return f"NamedSharding(mesh={self.mesh!s}, spec={self.spec!r}, memory_kind=device)"


_AVAL_SHARDINGS = {}


def _aval_sharding(ndim):
    """``jax.typeof(x).sharding`` of an ``ndim``-dimensional value, as JAX's: a
    ``NamedSharding`` over the empty abstract mesh, no axis partitioned."""
    s = _AVAL_SHARDINGS.get(ndim)
    if s is None:
        s = _AVAL_SHARDINGS[ndim] = NamedSharding(_EMPTY_MESH, PartitionSpec(*(None,) * ndim))
    return s


# the aval class lives in core, a layer below this module: it reads its sharding here
core.ShapedArray._sharding_of = staticmethod(_aval_sharding)


class PositionalSharding(Sharding):
    """JAX's older sharding by an array of devices (removed from recent JAX; kept for
    code written for it): one device."""

    def __init__(self, devices: Any, *, memory_kind: Any = None) -> None:
        devs = np.asarray(devices, dtype=object)
        if devs.size != 1 or not isinstance(devs.ravel()[0], CpuDevice):
            raise ValueError("PositionalSharding: tangentia has one device (the CPU), got "
                             f"{devices!r}")
        self.with_memory_kind(memory_kind)
        self._devices = devs

    @property
    def shape(self) -> Any:
        return self._devices.shape

    @property
    def ndim(self) -> Any:
        return self._devices.ndim

    def reshape(self, *shape: Any) -> Any:
        return PositionalSharding(self._devices.reshape(*shape))

    def replicate(self, axis: int | None = None, keepdims: Any = True) -> Any:
        return self

    def __repr__(self):
        return f"PositionalSharding({self._devices.tolist()!r})"


def reshard(xs: Any, out_shardings: Any) -> Any:
    """``xs`` laid out as ``out_shardings`` says: unchanged (one device).

    Args:
      xs: an array or pytree of arrays.
      out_shardings: shardings or partition specs (accepted: one device).
    """
    return xs


def auto_axes(fun: Any = None, *, axes: str | tuple[str, ...] | None = None,
              out_sharding: Any = None) -> Any:
    """A decorator switching mesh axes to Auto inside ``fun``: ``fun`` itself here."""
    return (lambda f: f) if fun is None else fun


def explicit_axes(fun: Any = None, *, axes: str | tuple[str, ...] | None = None,
                  in_sharding: Any = None) -> Any:
    """A decorator switching mesh axes to Explicit inside ``fun``: ``fun`` itself here."""
    return (lambda f: f) if fun is None else fun


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str], *,
              axis_types: tuple[Any, ...] | None = None,
              devices: Sequence[Any] | None = None) -> Any:
    """A ``Mesh`` of the given shape (every size 1: there is one device), as
    ``jax.make_mesh``.

    Args:
      axis_shapes: the size of each mesh axis (all 1).
      axis_names: the name of each mesh axis.
      axis_types: one ``AxisType`` per axis (default Explicit).
      devices: accepted for JAX compatibility (the one CPU device).
    """
    shape = tuple(int(s) for s in axis_shapes)
    n = int(np.prod(shape, dtype=np.int64))
    if n != 1:
        raise ValueError(f"Number of devices 1 must be >= the product of mesh_shape {shape} "
                         f"(make_mesh: a mesh of {n} devices; tangentia has one device, the "
                         "CPU)")
    return Mesh(np.full(shape, CPU, dtype=object), axis_names, axis_types=axis_types)


# An eager result's layout: the whole array on the CPU; its shards' documentation.
Shard.__doc__ = """One shard of an array (``x.addressable_shards``): here the whole array, on the CPU.

    Args:
      device: the device holding it (the CPU).
      index: the slice of the array it holds (all of it).
      replica_id: its replica number (0).
      data: the shard's values (the array).
    """
ArrayImpl.sharding = property(lambda self: _SINGLE, doc="``SingleDeviceSharding`` of the CPU.")
ArrayImpl.committed = False  # (JAX: True once device_put to an explicit device)
ArrayImpl.addressable_data = lambda self, index: self


# ---------------------------------------------------------------------------
# Top-level names of ``jax`` about processes and placing data (``tangentia.<name>``):
# one process, one device.


def process_count(backend: Any = None) -> int:
    """The number of processes: 1.

    Args:
      backend: accepted for JAX compatibility.
    """
    return 1


def process_index(backend: Any = None) -> int:
    """This process's index: 0.

    Args:
      backend: accepted for JAX compatibility.
    """
    return 0


def process_indices(backend: Any = None) -> list[int]:
    """The indices of the processes: ``[0]``.

    Args:
      backend: accepted for JAX compatibility.
    """
    return [0]


def host_count(backend: Any = None) -> int:
    """JAX's older name of ``process_count``: 1.

    Args:
      backend: accepted for JAX compatibility.
    """
    return 1


def host_id(backend: Any = None) -> int:
    """JAX's older name of ``process_index``: 0.

    Args:
      backend: accepted for JAX compatibility.
    """
    return 0


def host_ids(backend: Any = None) -> list[int]:
    """JAX's older name of ``process_indices``: ``[0]``.

    Args:
      backend: accepted for JAX compatibility.
    """
    return [0]


def _check_sharding(sharding, what):
    if not isinstance(sharding, Sharding):
        raise TypeError(f"{what}: argument 'sharding' must be a Sharding (for example "
                        f"SingleDeviceSharding(tangentia.devices()[0])), got {sharding!r}")


def _whole(x, shape, dtype, what):
    out = np.asarray(x, dtype=dtype)
    if out.shape != tuple(shape):
        raise ValueError(f"{what}: the data has shape {out.shape}, expected the array's "
                         f"shape {tuple(shape)} (one device holds all of it)")
    return out.view(ArrayImpl)


def make_array_from_callback(shape: Shape, sharding: Any,
                             data_callback: Callable[[Any | None], ArrayLike],
                             dtype: DTypeLike | None = None) -> Any:
    """The array of ``shape`` whose one shard (all of it) is
    ``data_callback((slice(None),) * len(shape))``.

    Args:
      shape: the array's shape.
      sharding: a ``Sharding`` (every one places the whole array on the CPU).
      data_callback: called with the index of the shard, returns its values.
      dtype: the array's dtype (by default the callback's).
    """
    _check_sharding(sharding, "make_array_from_callback")
    shape = tuple(int(d) for d in shape)
    return _whole(data_callback((slice(None),) * len(shape)), shape, dtype,
                  "make_array_from_callback")


def make_array_from_single_device_arrays(shape: Shape, sharding: Any, arrays: Sequence[Any], *,
                                         dtype: DTypeLike | None = None) -> Any:
    """The array of ``shape`` made of its per-device pieces: one device, one piece.

    Args:
      shape: the array's shape.
      sharding: a ``Sharding``.
      arrays: a sequence holding the one piece (the whole array).
      dtype: the array's dtype (by default the piece's).
    """
    _check_sharding(sharding, "make_array_from_single_device_arrays")
    arrays = list(arrays)
    if len(arrays) != 1:
        raise ValueError(f"make_array_from_single_device_arrays: {len(arrays)} arrays for one "
                         "device (tangentia has one device, the CPU)")
    return _whole(arrays[0], shape, dtype, "make_array_from_single_device_arrays")


def make_array_from_process_local_data(sharding: Any, local_data: Any,
                                       global_shape: Any = None) -> Any:
    """The global array from this process's data: one process holds all of it.

    Args:
      sharding: a ``Sharding``.
      local_data: the data (all of it).
      global_shape: the array's shape (by default the data's).
    """
    _check_sharding(sharding, "make_array_from_process_local_data")
    shape = np.shape(local_data) if global_shape is None else global_shape
    return _whole(local_data, shape, None, "make_array_from_process_local_data")


def copy_to_host_async(x: Any) -> Any:
    """Start copying ``x``'s arrays to the host: they are there already.

    Args:
      x: an array or pytree of arrays (returned unchanged).
    """
    return x
