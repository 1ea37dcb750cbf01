"""What plans are made of: the operands as the planner sees them, and the steps a plan runs."""

from __future__ import annotations

from dataclasses import dataclass

from fueltensor.core.dtypes import DType
from fueltensor.core.layout import Layout, Shape
from fueltensor.ops import StrEnum


@dataclass(frozen=True, slots=True)
class Operand:
    """What the planner knows of a tensor: its dtype and layout (never its values)."""

    dtype: DType
    layout: Layout

    @property
    def count(self) -> int:
        """The number of elements the operand holds."""
        return self.layout.size


class StepKind(StrEnum):
    """What a step does: prepare an operand (Cast, BroadcastTo, Contiguize), then compute."""

    CAST = "Cast"
    BROADCAST_TO = "BroadcastTo"
    CONTIGUIZE = "Contiguize"
    KERNEL = "Kernel"
    HOST = "Host"


@dataclass(frozen=True, slots=True)
class Step:
    """One thing a plan does: Cast, BroadcastTo or Contiguize an operand, then a Kernel or Host."""

    kind: StepKind
    operand: int | None
    label: str
    bytes: int
    dtype: DType | None = None
    shape: Shape | None = None
    why: tuple[str, ...] = ()
    threads: int = 1
    """The threads a Kernel step runs on (a compiled body over its op class's threshold,
    `_native.SPLIT_FROM`, splits)."""
    body: str = ""
    """The instruction set of the compiled body a Kernel step runs ("avx512"), or ""."""
    tiled: bool = False
    """A Contiguize of a stride-0 operand made one cache-sized block at a time as the kernel
    runs block by block over the output, never at the output's size (`execute.tiled`)."""

    def __str__(self) -> str:
        why = f"  [{'; '.join(self.why)}]" if self.why else ""
        if self.kind is StepKind.CAST:
            assert self.dtype is not None
            return f"Cast({self.label} -> {self.dtype.name}){why}"
        if self.kind is StepKind.BROADCAST_TO:
            return f"BroadcastTo({self.label} -> {self.shape}){why}"
        if self.kind is StepKind.CONTIGUIZE:
            tiled = ", block by block" if self.tiled else ""
            return f"Contiguize({self.label}{tiled}){why}"
        threads = f" on {self.threads} threads" if self.threads > 1 else ""
        body = f" ({self.body} body)" if self.body else ""
        return f"{self.label}{threads}{body}{why}"
