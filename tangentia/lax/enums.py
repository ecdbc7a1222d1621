"""``jax.lax``'s enums and parameter records (``Precision``, ``RoundingMethod``,
``GatherScatterMode``, ``FftType``, ``DotAlgorithm``, dimension-number tuples, ...).

They are accepted where JAX takes them.  Precision and algorithm choices do
nothing here: every contraction runs in the operands' own precision on the CPU.
"""
from __future__ import annotations

import enum
from typing import Any, NamedTuple, Sequence


class Precision(enum.Enum):
    """Precision of a contraction (``jax.lax.Precision``); a no-op on the CPU."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        if isinstance(value, str):
            names = {"default": "DEFAULT", "bfloat16": "DEFAULT", "fastest": "DEFAULT",
                     "high": "HIGH", "bfloat16_3x": "HIGH", "tensorfloat32": "HIGH",
                     "highest": "HIGHEST", "float32": "HIGHEST"}
            if value.lower() in names:
                return cls[names[value.lower()]]
        return None

    def __repr__(self):
        return f"Precision.{self.name}"

    __str__ = __repr__


PrecisionLike = Any


class RoundingMethod(enum.IntEnum):
    """How ``lax.round`` breaks ties (``jax.lax.RoundingMethod``)."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


class GatherScatterMode(enum.Enum):
    """Out-of-bounds handling of gathers and scatters (``jax.lax.GatherScatterMode``)."""

    CLIP = 1
    FILL_OR_DROP = 2
    PROMISE_IN_BOUNDS = 3
    ONE_HOT = 4

    @staticmethod
    def from_any(s):
        """The mode named by ``s`` (a member, a name in any case, or None: FILL_OR_DROP)."""
        if isinstance(s, GatherScatterMode):
            return s
        if s is None:
            return GatherScatterMode.FILL_OR_DROP
        if s == "clip":
            return GatherScatterMode.CLIP
        if s in ("fill", "drop"):
            return GatherScatterMode.FILL_OR_DROP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        if s == "one_hot":
            return GatherScatterMode.ONE_HOT
        raise ValueError(f"Unknown gather mode \"{s}\": expected 'clip', 'fill', 'drop', "
                         "'promise_in_bounds', 'one_hot' or a GatherScatterMode")


class FftType(enum.IntEnum):
    """Kind of transform of ``lax.fft`` (``jax.lax.FftType``)."""

    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


class AccuracyMode(enum.Enum):
    """Accuracy of transcendental functions (``jax.lax.AccuracyMode``); a no-op here."""

    HIGHEST = 1
    DEFAULT = 2


class Tolerance(NamedTuple):
    """Requested accuracy of a transcendental function (``jax.lax.Tolerance``); a no-op here."""

    atol: float = 0.0
    rtol: float = 0.0
    ulps: int = 0


class RandomAlgorithm(enum.IntEnum):
    """Bit generator of ``rng_bit_generator`` (``jax.lax.RandomAlgorithm``)."""

    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2


class DotAlgorithm(NamedTuple):
    """A dot product algorithm (``jax.lax.DotAlgorithm``); accepted, a no-op on the CPU."""

    lhs_precision_type: Any
    rhs_precision_type: Any
    accumulation_type: Any
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


class DotAlgorithmPreset(enum.Enum):
    """Named dot product algorithms (``jax.lax.DotAlgorithmPreset``); a no-op on the CPU."""

    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __repr__(self):
        return f"DotAlgorithmPreset.{self.name}"

    __str__ = __repr__


DotDimensionNumbers = tuple


class GatherDimensionNumbers(NamedTuple):
    """How a gather reads its operand (``jax.lax.GatherDimensionNumbers``)."""

    offset_dims: tuple
    collapsed_slice_dims: tuple
    start_index_map: tuple
    operand_batching_dims: tuple = ()
    start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(NamedTuple):
    """How a scatter writes its operand (``jax.lax.ScatterDimensionNumbers``)."""

    update_window_dims: Sequence[int]
    inserted_window_dims: Sequence[int]
    scatter_dims_to_operand_dims: Sequence[int]
    operand_batching_dims: Sequence[int] = ()
    scatter_indices_batching_dims: Sequence[int] = ()


class ConvDimensionNumbers(NamedTuple):
    """Dimension layout of a convolution: each spec lists (batch/out-feature,
    feature/in-feature, spatial...) dimension positions (``jax.lax.ConvDimensionNumbers``)."""

    lhs_spec: Sequence[int]
    rhs_spec: Sequence[int]
    out_spec: Sequence[int]


ConvGeneralDilatedDimensionNumbers = Any
