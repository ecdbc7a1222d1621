"""``jax.experimental.layout``: ``Layout`` (the order of an array's axes in memory) and
``Format`` (a layout with a sharding), which libraries (flax) test values against.
tangentia's arrays are NumPy's, in NumPy's own layout on the one CPU device, so these
only carry what they are given; ``with_layout_constraint`` returns its argument."""
from __future__ import annotations

from typing import Any

__all__ = ["Format", "Layout", "with_layout_constraint"]


class Layout:
    """A memory layout: ``major_to_minor`` axis order (and XLA's tiling, kept as given)."""

    def __init__(self, major_to_minor: tuple[int, ...], tiling: Any = None,
                 sub_byte_element_size_in_bits: int = 0) -> None:
        self.major_to_minor = tuple(major_to_minor)
        self.tiling = tiling
        self.sub_byte_element_size_in_bits = sub_byte_element_size_in_bits

    def __repr__(self) -> str:
        return f"Layout(major_to_minor={self.major_to_minor})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Layout) and self.major_to_minor == other.major_to_minor
                and self.tiling == other.tiling)

    def __hash__(self) -> int:
        return hash((self.major_to_minor, str(self.tiling)))


class Format:
    """A ``layout`` with a ``sharding`` (either may be None), as JAX's."""

    def __init__(self, layout: Any = None, sharding: Any = None) -> None:
        self.layout = layout
        self.sharding = sharding

    def __repr__(self) -> str:
        return f"Format({self.layout}, {self.sharding})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Format) and self.layout == other.layout
                and self.sharding == other.sharding)

    def __hash__(self) -> int:
        return hash((self.layout, self.sharding))


def with_layout_constraint(x: Any, layout: Any) -> Any:
    """``x`` itself: NumPy arrays have NumPy's layout."""
    return x
