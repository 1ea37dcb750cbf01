"""The repairs the planner may put in front of a kernel: a `BroadcastTo` + `Contiguize` so a
`same_as` shape constraint holds, a `Contiguize` for a layout flag, and which stride-0 operands
are made dense one block at a time instead of at the output's size (`blockwise`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final

from fueltensor.core.layout import Layout, LayoutFlags, broadcast_shapes
from fueltensor.engine.steps import Operand, Step, StepKind

if TYPE_CHECKING:
    from fueltensor.fkc.schema import InputSpec, KernelContract

Verdict = tuple[str, ...]
"""Why a contract cannot run the operation: one reason per failed check (empty: it can)."""

STRATEGY_REPAIRS: Final = {"requires_contiguous": True}
"""Whether an `awkward_layout_strategy` lets the planner densify operands in front of the kernel."""

BLOCKWISE_POSITIONS: Final = frozenset({"invariant", "nan_bits"})
"""`semantics.position` values under which a kernel's call may be split into blocks: no
element's bits depend on where it sits (`nan_bits`: a NaN's may, within what `nan` allows)."""


def _flag_reasons(label: str, spec: InputSpec, flags: LayoutFlags) -> list[str]:
    reasons = []
    for flag, want in spec.layout:
        have = getattr(flags, flag)
        if (want == "required" and not have) or (want == "rejected" and have):
            reasons.append(
                f"{label}: {flag} is {want} but the operand "
                f"{'is not' if want == 'required' else 'is'} {flag}"
            )
    return reasons


def _dense_flags() -> LayoutFlags:
    return LayoutFlags(True, False, False, False, False)


def shape_repair(
    specs: tuple[InputSpec, ...], work: list[Operand], prep: list[list[Step]], repairs: bool
) -> Verdict:
    """Hold each input to its shape constraint, broadcasting it in front of the kernel where a
    `same_as` fails and the contract lets the planner repair."""
    names = {s.name: i for i, s in enumerate(specs)}
    original = tuple(o.layout.shape for o in work)
    same = [original[i] for i, s in enumerate(specs) if _same_as(s)]
    for i, spec in enumerate(specs):
        sc = spec.shape_constraint
        if sc is None:
            continue
        other, mine = original[names[sc.other]], work[i].layout.shape
        try:
            target = broadcast_shapes(mine, other)
        except ValueError:
            return (f"{spec.name}: shape {mine} does not broadcast with {sc.other} {other}",)
        if sc.kind == "same_as":  # to every same_as input's shape (a third may be larger)
            try:
                target = broadcast_shapes(target, *same)
            except ValueError:
                return (f"{spec.name}: the shapes {same} do not broadcast together",)
        if sc.kind == "same_as" and mine != target:
            why = f"{spec.name}: shape {mine} is not same_as {sc.other} {other}"
            if other == mine:
                why = f"{spec.name}: shape {mine} is not the other operands' {target}"
            if not repairs:
                return (why,)
            if target != mine:
                work[i] = Operand(work[i].dtype, work[i].layout.broadcast_to(target))
                step = Step(
                    kind=StepKind.BROADCAST_TO,
                    operand=i,
                    label=spec.name,
                    bytes=0,
                    shape=target,
                    why=(why,),
                )
                prep[i].append(step)
    return ()


def _same_as(spec: InputSpec) -> bool:
    """Whether an input must have the same shape as another (`same_as`)."""
    return spec.shape_constraint is not None and spec.shape_constraint.kind == "same_as"


def blockwise(contract: KernelContract) -> bool:
    """Whether `contract`'s kernel may run block by block over its output, each block's
    operands made dense one block at a time: every input has the output's shape (`same_as`)
    and no element's bits depend on where it sits (`semantics.position`)."""
    semantics, out = contract.semantics, contract.outputs
    return (
        semantics is not None
        and semantics.effective_position in BLOCKWISE_POSITIONS
        and len(out) == 1
        and out[0].shape_rule.kind == "same_as"
        and all(
            s.shape_constraint is None or s.shape_constraint.kind == "same_as"
            for s in contract.inputs
        )
    )


def distinct_elements(layout: Layout) -> int:
    """How many storage elements a view reads (a stride-0 axis repeats the same ones)."""
    return math.prod(n for n, s in zip(layout.shape, layout.strides, strict=True) if s != 0)


def layout_repair(
    specs: tuple[InputSpec, ...],
    work: list[Operand],
    prep: list[list[Step]],
    repairs: bool,
    tiles: bool,
) -> Verdict:
    """Hold each input to its layout flags, densifying it in front of the kernel where the
    contract lets the planner repair and a dense operand satisfies it; a stride-0 operand of a
    kernel that runs block by block (`tiles`) one block at a time, priced as the elements it
    reads (the block it fills stays in cache)."""
    for i, spec in enumerate(specs):
        reasons = _flag_reasons(spec.name, spec, work[i].layout.flags)
        if not reasons:
            continue
        if not repairs or _flag_reasons(spec.name, spec, _dense_flags()):
            return tuple(reasons)
        o = work[i]
        tiled = tiles and o.layout.flags.broadcast_stride0
        read = distinct_elements(o.layout) if tiled else 2 * o.count
        work[i] = Operand(o.dtype, Layout.dense(o.layout.shape))
        step = Step(
            kind=StepKind.CONTIGUIZE,
            operand=i,
            label=spec.name,
            bytes=read * o.dtype.itemsize,
            why=tuple(reasons),
            tiled=tiled,
        )
        prep[i].append(step)
    return ()
