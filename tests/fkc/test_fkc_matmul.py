"""A contraction's contract (docs/matmul.md): the shape rule `matmul(a, b)`, (..., M, K) @
(..., K, N) -> (stacks broadcast, M, N); loaded, refused at file:line where the contract's inputs
are not two tensors of rank 2 or more, and planned (operands that do not chain rejected with why,
the result's shape from the rule)."""

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

ANY_LAYOUT = (
    "{contiguous: allowed, strided: allowed, broadcast_stride0: allowed, "
    "start_offset: allowed, reverse_strides: allowed}"
)
PROVIDER = "test-contractions"
OP_KIND = "TestMatmul"
"""An op kind outside the op table: the planner needs no row to plan the rule."""


def contraction(contract_text: Callable[..., str], rank: str = "any") -> str:
    """The test document made a contraction: inputs a and b of any layout, the rule matmul(a, b)."""
    text = contract_text(provider=PROVIDER, op_kind=OP_KIND)
    for other in ("a", "b"):
        text = text.replace(f"      shape_constraint: same_as={other}\n", "")
    text = text.replace("shape_rule: same_as(a)", "shape_rule: matmul(a, b)")
    lines = text.split("\n")
    out, skip = [], False
    for line in lines:
        if line.startswith("      layout:"):
            out.append(f"      layout: {ANY_LAYOUT}")
            skip = True
            continue
        if skip and line.startswith("      rank:"):
            skip = False
            out.append(f"      rank: {rank}")
            continue
        if not skip:
            out.append(line)
    return "\n".join(out)


def test_a_contraction_contract_declares_its_rule(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    _, (contract,) = load_document(write(contraction(contract_text)))
    assert str(contract.outputs[0].shape_rule) == "matmul(a, b)"


def _refused(text: str, write: Callable[..., Path]) -> ContractError:
    with pytest.raises(ContractError) as info:
        load_document(write(text))
    return info.value


def test_a_matmul_rule_over_other_than_two_matrices_is_refused_at_its_line(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    for text, says in (
        (contraction(contract_text, rank="1"), "of rank 1"),
        (contraction(contract_text).replace("matmul(a, b)", "matmul(a, a)"), "same input twice"),
        (contraction(contract_text).replace("matmul(a, b)", "matmul(a)"), "not accepted"),
    ):
        error = _refused(text, write)
        line = text[: text.index("shape_rule: matmul")].count("\n") + 1
        assert (error.field, error.line) == ("return.outputs[0].shape_rule", line), error
        assert says in str(error) and str(error.path).endswith("doc.md")
    three = contraction(contract_text).replace(
        "  op_params:",
        f"    - name: c\n      dtypes: [F32]\n      layout: {ANY_LAYOUT}\n      rank: any\n"
        "  op_params:",
    )
    error = _refused(three, write)
    assert "takes 3 inputs" in str(error) and error.field == "return.outputs[0].shape_rule"


@pytest.fixture
def registry(contract_text: Callable[..., str], write: Callable[..., Path]) -> ft.Registry:
    """A registry of the one contraction contract, linked to NumPy's matmul."""

    def product(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
        out[...] = np.matmul(a, b)

    ft.register_provider(PROVIDER, {"tests::twice_f32": product})
    with pytest.warns(ContractWarning, match="not an op kind fueltensor dispatches"):
        return ft.Registry.from_paths([write(contraction(contract_text))])


def _plan(
    registry: ft.Registry, a: ft.FuelTensor, b: ft.FuelTensor, shape: tuple[int, ...]
) -> Plan | str:
    """The plan of a @ b with result `shape`, or the one contract's rejection."""
    operands = tuple(
        Operand(float32, Layout(t.shape, t._layout.strides, t._layout.offset)) for t in (a, b)
    )
    planning = plan_contracts("matmul", OP_KIND, operands, registry, None, out_shape=shape)
    return planning.viable[0] if planning.viable else " ".join(planning.rejected["twice_f32"])


def test_the_plan_takes_its_shape_from_the_rule(registry: ft.Registry) -> None:
    rng = np.random.default_rng(0)
    x, y = (
        rng.standard_normal((2, 1, 3, 4)).astype(np.float32),
        rng.standard_normal((5, 6, 4)).astype(np.float32),
    )
    a, b = ft.asarray(x), ft.asarray(y)[:, ::-1, :].mT  # flipped and transposed: any layout
    plan = _plan(registry, a, b, (2, 5, 3, 6))
    assert isinstance(plan, Plan) and plan.out_shape == (2, 5, 3, 6)
    got = run(plan, (a, b))
    np.testing.assert_array_equal(np.asarray(got), np.matmul(x, np.asarray(b)))


def test_operands_that_do_not_chain_are_rejected_with_why(registry: ft.Registry) -> None:
    m = ft.asarray(np.ones((3, 4), np.float32))
    assert "do not chain" in str(_plan(registry, m, m, (3, 4)))
    assert "rank 2 or more" in str(_plan(registry, m, ft.asarray(np.ones(4, np.float32)), (3,)))
    s = ft.asarray(np.ones((2, 3, 4), np.float32))
    t = ft.asarray(np.ones((3, 4, 5), np.float32))
    assert "do not broadcast" in str(_plan(registry, s, t, (3, 3, 5)))
