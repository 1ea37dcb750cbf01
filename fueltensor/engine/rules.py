"""What a contract's output rules give for the operands the planner admits: the shape a
`shape_rule` computes (`same_as`, `broadcast`, `reduce` over the call's axes, `matmul`) and the
operand a `passthrough` dtype rule names, and why a `matmul` rule cannot multiply two operands
(a rank below 2, inner dimensions that differ, stacks that do not broadcast)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from fueltensor.core.layout import Shape, broadcast_shapes
from fueltensor.engine.repairs import Verdict
from fueltensor.engine.steps import Operand
from fueltensor.ops import CONTRACTING_RULES

if TYPE_CHECKING:
    from fueltensor.fkc.schema import Rule


def apply_rule(
    rule: Rule, names: Mapping[str, int], operands: list[Operand], axes: tuple[int, ...] = ()
) -> Operand | Shape:
    """What an output `rule` gives for `operands` (and the call's `axes`, for `reduce`)."""
    if rule.kind == "passthrough":
        return operands[names[rule.args[0]]]
    if rule.kind == "same_as":
        return operands[names[rule.args[0]]].layout.shape
    if rule.kind == "reduce":
        shape = operands[names[rule.args[0]]].layout.shape
        return tuple(n for i, n in enumerate(shape) if i not in axes)
    if rule.kind == "broadcast":
        return broadcast_shapes(*(operands[names[a]].layout.shape for a in rule.args))
    if rule.kind in CONTRACTING_RULES:
        a, b = (operands[names[n]].layout.shape for n in rule.args)
        return (*broadcast_shapes(a[:-2], b[:-2]), a[-2], b[-1])
    raise ValueError(f"rule {rule.kind}({', '.join(rule.args)}) is not one the planner implements")


def unchained(rule: Rule, names: Mapping[str, int], operands: list[Operand]) -> Verdict:
    """Why a `matmul(a, b)` rule cannot multiply the operands (or ()): a rank below 2, inner
    dimensions that differ, stacks that do not broadcast."""
    if rule.kind not in CONTRACTING_RULES:
        return ()
    a, b = (operands[names[n]].layout.shape for n in rule.args)
    if len(a) < 2 or len(b) < 2:
        return (f"{rule} multiplies operands of rank 2 or more, got shapes {a} and {b}",)
    if a[-1] != b[-2]:
        return (f"{rule}: {rule.args[0]} {a} and {rule.args[1]} {b} do not chain",)
    try:
        broadcast_shapes(a[:-2], b[:-2])
    except ValueError:
        return (f"{rule}: the stacks of {a} and {b} do not broadcast",)
    return ()
