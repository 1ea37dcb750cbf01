"""The op table (fueltensor/ops.py) is the one place an op is declared: the C header generated
from it is current, and every family's traits are there before its first row."""

from __future__ import annotations

from pathlib import Path

from fueltensor import families, ops, ops_header

HEADER = Path(__file__).resolve().parents[2] / "fueltensor" / "ext" / "src" / "ops.h"
"""The checkout's generated header (the C sources are built from the checkout, not shipped)."""


def test_the_c_header_is_generated_from_the_table() -> None:
    assert HEADER.read_text() == ops_header.c_header(), (
        f"{HEADER} is stale: regenerate it with {ops_header.REGENERATE}"
    )


def test_the_header_numbers_each_family_in_table_order() -> None:
    text = HEADER.read_text()
    binary = ", ".join(k.upper() for op in ops.BINARY_OPS for k in op.kernel_ops)
    assert "POW, MOD, REM, N_OPS" in text  # a formula kernel right after its row's own
    unary = ", ".join("U_" + op.kernel_op.upper() for op in ops.UNARY_OPS)
    assert f"enum {{ {binary}, N_OPS }};" in text
    assert f"enum {{ {unary}, N_UNARY_OPS }};" in text


def test_every_family_has_its_traits_and_every_row_a_family() -> None:
    assert set(families.TRAITS) == set(families.Family)
    for row in ops.CONTRACT_OPS:
        traits = families.TRAITS[row.family]
        two = (families.Family.BINARY, families.Family.COMPARISON, families.Family.CONTRACTION)
        three = (families.Family.SELECT, families.Family.CLAMP)
        one = (families.Family.UNARY, families.Family.CAST, families.Family.REDUCTION)
        assert row.family in (*two, *three, *one), row.name
        arity = 2 if row.family in two else 3 if row.family in three else 1
        assert len(traits.operands) == arity
        assert (row.reference is None) == (row.family is not families.Family.UNARY), row.name
        assert all(name in traits.operands for name, _ in traits.fixed), row.family
        assert (row.relation is None) == (row.family is not families.Family.COMPARISON), row.name
    assert len({op.op_kind for op in ops.CONTRACT_OPS}) == len(ops.CONTRACT_OPS)
    assert len({op.kernel_op for op in ops.CONTRACT_OPS}) == len(ops.CONTRACT_OPS)
    every = [k for op in ops.CONTRACT_OPS for k in op.kernel_ops]
    assert len(set(every)) == len(every)


def test_the_reduction_rows_are_numbered_apart_and_planned_where_contracts_serve() -> None:
    text = HEADER.read_text()
    reduction = ", ".join("R_" + op.kernel_op.upper() for op in ops.REDUCTION_OPS)
    assert f"enum {{ {reduction}, N_REDUCTION_OPS }};" in text
    assert all(row.family is families.Family.REDUCTION for row in ops.REDUCTION_OPS)
    # sum, prod, max, min, argmax and argmin have contracts and are planned (issue 48)
    planned = set(ops.REDUCTION_OPS) & set(ops.CONTRACT_OPS)
    assert planned == set(ops.PLANNED_REDUCTIONS)
    kinds = {ops.OpKind.SUM, ops.OpKind.PROD, ops.OpKind.MAX, ops.OpKind.MIN}
    kinds |= {ops.OpKind.ARGMAX, ops.OpKind.ARGMIN}
    assert {row.op_kind for row in planned} == kinds
    kinds = {op.op_kind for op in (*ops.CONTRACT_OPS, *ops.REDUCTION_OPS)}
    assert len(kinds) == len(ops.CONTRACT_OPS) + len(ops.REDUCTION_OPS) - len(planned)


def test_the_contraction_row_is_numbered_apart() -> None:
    text = HEADER.read_text()
    contraction = ", ".join("M_" + op.kernel_op.upper() for op in ops.CONTRACTION_OPS)
    assert f"enum {{ {contraction}, N_CONTRACTION_OPS }};" in text
    assert all(row.family is families.Family.CONTRACTION for row in ops.CONTRACTION_OPS)
    assert [row.op_kind for row in ops.CONTRACTION_OPS] == [ops.OpKind.MATMUL]
    assert set(ops.CONTRACTION_OPS) <= set(ops.CONTRACT_OPS)  # the oracle's contracts serve it
    assert dict(ops.CONTRACTION_BY_KIND) == {ops.OpKind.MATMUL.value: ops.CONTRACTION_OPS[0]}
