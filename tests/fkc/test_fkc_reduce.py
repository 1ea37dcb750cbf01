"""A reduction's contract (docs/reductions.md): an `axes` parameter the call passes, and the
shape rule `reduce(x)` that removes those axes; loaded, refused at file:line when inconsistent,
planned (the result's shape from the rule and the call's axes), and run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import fueltensor as ft
from fueltensor import ContractError
from fueltensor.core.dtypes import float32
from fueltensor.core.errors import ContractWarning
from fueltensor.core.layout import Layout
from fueltensor.engine.execute import run
from fueltensor.engine.planner import Operand, Plan, plan_contracts
from fueltensor.fkc import load_document
from fueltensor.fkc.schema import ParamSpec

ANY_LAYOUT = (
    "{contiguous: allowed, strided: allowed, broadcast_stride0: allowed, "
    "start_offset: allowed, reverse_strides: allowed}"
)
PROVIDER = "test-reductions"
OP_KIND = "TestSumOver"
"""An op kind outside the op table (a user's own operation): the planner needs no row to plan it;
the op table's reduction rows come with their contracts (issue 48)."""
AXES = "  params:\n    - name: axes\n      type: axes\n"


def reduction(contract_text: Callable[..., str], params: str = AXES) -> str:
    """The test document made a one-input reduction: input `a` of any layout and rank, the
    `axes` parameter (or `params`), the shape rule `reduce(a)`."""
    text = contract_text(provider=PROVIDER, op_kind=OP_KIND)
    start, end = text.index("    - name: b\n"), text.index("  op_params:")
    text = text[:start] + params + text[end:]
    text = text.replace("      shape_constraint: same_as=b\n", "")
    text = text.replace("shape_rule: same_as(a)", "shape_rule: reduce(a)")
    text = text.replace(" + b_count * dtype_bytes", "")
    layout = text.index("      layout:\n")
    rank = text.index("      rank: any")
    return text[:layout] + f"      layout: {ANY_LAYOUT}\n" + text[rank:]


def test_a_reduction_contract_declares_its_axes(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    _, (contract,) = load_document(write(reduction(contract_text)))
    assert contract.params == (ParamSpec("axes", "axes"),)
    assert contract.params[0].is_axes
    assert str(contract.outputs[0].shape_rule) == "reduce(a)"


@pytest.mark.parametrize(
    ("params", "anchor", "field", "message"),
    [
        ("", "shape_rule: reduce(a)", "return.outputs[0].shape_rule", "declare them in"),
        (
            AXES + "    - name: more\n      type: axes\n",
            "type: axes\n    - name: more\n      type: axes",
            "accept.params[1].type",
            "one axes parameter",
        ),
    ],
    ids=["reduce-without-axes", "two-axes-params"],
)
def test_an_inconsistent_reduction_is_refused_at_its_line(
    contract_text: Callable[..., str],
    write: Callable[..., Path],
    params: str,
    anchor: str,
    field: str,
    message: str,
) -> None:
    text = reduction(contract_text, params)
    path = write(text)
    with pytest.raises(ContractError) as info:
        load_document(path)
    # the anchor's last line is the one refused
    line = text[: text.index(anchor) + len(anchor)].count("\n") + 1
    assert (info.value.field, info.value.line) == (field, line)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ((2, 0), "not sorted"),
        ((1, 1), "not sorted"),
        ((-1,), "not sorted"),
        ([0, 1], "takes a tuple"),
        ((True,), "takes a tuple"),
        ((0.0,), "takes a tuple"),
        (1, "takes a tuple"),
    ],
)
def test_an_axes_value_is_a_sorted_tuple_of_distinct_axes(value: object, says: str) -> None:
    spec = ParamSpec("axes", "axes")
    assert says in (spec.refusal(value) or "")
    assert spec.refusal((0, 2, 5)) is None and spec.refusal(()) is None
    assert spec.normal((np.int64(0), 2)) == (0, 2)


@pytest.fixture
def registry(contract_text: Callable[..., str], write: Callable[..., Path]) -> ft.Registry:
    """A registry of the one reduction contract, linked to a NumPy sum over the given axes."""

    def sum_axes(a: np.ndarray, axes: tuple[int, ...], *, out: np.ndarray) -> None:
        out[...] = np.add.reduce(a, axis=axes)

    ft.register_provider(PROVIDER, {"tests::twice_f32": sum_axes})
    with pytest.warns(ContractWarning, match="not an op kind fueltensor dispatches"):
        return ft.Registry.from_paths([write(reduction(contract_text))])


def _plan(registry: ft.Registry, x: ft.FuelTensor, axes: tuple[int, ...]) -> Plan | str:
    """The plan of the reduction over `axes`, or the one contract's rejection."""
    shape = tuple(n for i, n in enumerate(x.shape) if i not in axes)
    operand = Operand(float32, Layout(x.shape, x._layout.strides, x._layout.offset))
    planning = plan_contracts("sum", OP_KIND, (operand,), registry, None, (axes,), out_shape=shape)
    return planning.viable[0] if planning.viable else " ".join(planning.rejected["twice_f32"])


def test_the_plan_takes_its_shape_from_the_call_axes(registry: ft.Registry) -> None:
    base = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    x = ft.asarray(base)[::-1, :, 1:]  # flipped and offset: the contract takes any layout
    plan = _plan(registry, x, (0, 2))
    assert isinstance(plan, Plan)
    assert plan.out_shape == (4,) and plan.params == ((0, 2),)
    assert "axes=(0, 2)" in str(plan)
    got = run(plan, (x,))
    np.testing.assert_array_equal(np.asarray(got), base[::-1, :, 1:].sum(axis=(0, 2)))


def test_axes_past_the_rank_or_unsorted_are_rejected_with_why(registry: ft.Registry) -> None:
    x = ft.asarray(np.ones((3, 4), np.float32))
    assert "not all axes of a rank-2 input" in str(_plan(registry, x, (2,)))
    assert "not sorted" in str(_plan(registry, x, (1, 0)))
