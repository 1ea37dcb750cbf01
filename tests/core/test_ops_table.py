"""The op table is the one source of the contract operations."""

from __future__ import annotations

import numpy as np
import pytest

import fueltensor as ft
from fueltensor.engine.dispatch import OPERATIONS
from fueltensor.kernels import _chassis
from fueltensor.ops import BINARY_OPS, ContractOp
from fueltensor.tools.judge import REFERENCES


@pytest.mark.parametrize("row", BINARY_OPS, ids=lambda r: r.name)
def test_every_row_is_a_namespace_function_an_operator_and_a_kernel_op(row: ContractOp) -> None:
    assert getattr(ft, row.name) is OPERATIONS[row.name]
    assert row.name in ft.__all__
    assert row.op_kind in REFERENCES
    assert row.kernel_op in {op.name for op in _chassis.OPS}
    if _chassis.NATIVE is not None:
        assert row.kernel_op in _chassis.NATIVE.OPS
    x = ft.asarray(np.array([3.0, -2.0], np.float32))
    y = ft.asarray(np.array([2.0, 5.0], np.float32))
    want = row.host(np.asarray(x), np.asarray(y))
    assert np.array_equal(np.asarray(OPERATIONS[row.name](x, y)), want)
    if row.dunder is not None:
        forward = getattr(ft.FuelTensor, f"__{row.dunder}__")
        reflected = getattr(ft.FuelTensor, f"__r{row.dunder}__")
        assert np.array_equal(np.asarray(forward(x, y)), want)
        assert np.array_equal(np.asarray(reflected(y, x)), want)


def test_out_of_range_axes_raise_one_exception_type() -> None:
    x = ft.ones((2, 3))
    raised = []
    for call in (
        lambda: ft.sum(x, axis=5),
        lambda: ft.flip(x, axis=5),
        lambda: ft.expand_dims(x, axis=5),
    ):
        with pytest.raises(IndexError) as info:
            call()
        raised.append(type(info.value))
    assert len(set(raised)) == 1 and issubclass(raised[0], ValueError)
