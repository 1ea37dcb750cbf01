"""What plans are made of: the operands as the planner sees them, the steps a plan runs, and
the Cast steps that bring operands to one dtype (`promote`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from fueltensor.core.dtypes import DType, result_type
from fueltensor.core.layout import Layout, Shape
from fueltensor.families import StrEnum


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


class Target(NamedTuple):
    """A dtype every operand is cast to before planning, and why (the op table's rule for
    integer inputs of a float function, say), as the Cast step says it."""

    dtype: DType
    why: str


class Request(NamedTuple):
    """What a call asks of the contract that serves it beyond its operands: the result's dtype
    (a cast's target) and `accept.op_params` values the contract must declare (a cast's rule:
    `families.CAST_RULES`). A contract that returns another dtype, or declares another value, is
    rejected with both named."""

    dtype: DType
    op_params: tuple[tuple[str, str], ...] = ()


def promote(
    operands: tuple[Operand, ...], to: Target | None = None, fixed: frozenset[int] = frozenset()
) -> tuple[tuple[Operand, ...], tuple[tuple[Step, ...], ...]]:
    """Cast every operand to the promoted dtype (or `to`'s, for its reason) but the `fixed`
    ones (a selection's bool condition), left as they are; a Cast yields a dense buffer of its
    own shape."""
    free = [o for i, o in enumerate(operands) if i not in fixed]
    target = free[0].dtype
    for o in free[1:]:
        target = result_type(target, o.dtype)
    if to is not None:
        target = to.dtype
    cast: list[Operand] = []
    steps: list[tuple[Step, ...]] = []
    count = len(operands)
    labels = {1: ("x",), 2: ("lhs", "rhs")}.get(count) or tuple(f"x{i}" for i in range(count))
    for i, o in enumerate(operands):
        if o.dtype is target or i in fixed:
            cast.append(o)
            steps.append(())
        else:
            moved = o.count * (o.dtype.itemsize + target.itemsize)
            cast.append(Operand(target, Layout.dense(o.layout.shape)))
            step = Step(
                kind=StepKind.CAST,
                operand=i,
                label=f"{labels[i]}: {o.dtype.name}",
                bytes=moved,
                dtype=target,
                why=(to.why if to is not None else f"promotion {o.dtype.name} -> {target.name}",),
            )
            steps.append((step,))
    return tuple(cast), tuple(steps)
