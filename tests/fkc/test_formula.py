"""The cost-formula language: arithmetic is evaluated, anything like code is refused."""

from __future__ import annotations

import pytest

from fueltensor import ContractError
from fueltensor.fkc.formula import MAX_DEPTH, MAX_LENGTH, Formula, FormulaError


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        ("3 * n * 4", {"n": 10}, 120.0),
        ("2 + 3 * 4", {}, 14.0),
        ("(2 + 3) * 4", {}, 20.0),
        ("10 - 4 - 3", {}, 3.0),
        ("12 / 4 / 3", {}, 1.0),
        ("-n + 10", {"n": 3}, 7.0),
        ("- - n", {"n": 3}, 3.0),
        ("n * dtype_bytes + a_count * dtype_bytes", {"n": 6, "dtype_bytes": 2, "a_count": 3}, 18.0),
        ("1.5e3 + .5", {}, 1500.5),
        (0, {}, 0.0),
        (2.5, {}, 2.5),
    ],
)
def test_evaluates_arithmetic(
    text: str | int | float, env: dict[str, float], expected: float
) -> None:
    assert Formula(text).evaluate(env) == expected


def test_variables_are_the_names_used() -> None:
    f = Formula("n * dtype_bytes + a_count * dtype_bytes")
    assert f.variables == frozenset({"n", "dtype_bytes", "a_count"})
    assert Formula(0).variables == frozenset()


def test_keeps_the_original_text_and_compares_by_it() -> None:
    assert Formula("3 * n * 4").raw == "3 * n * 4"
    assert str(Formula("3 * n * 4")) == "3 * n * 4"
    assert Formula("n") == Formula("n")
    assert Formula("n") != Formula("n + 0")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("__import__('os').system('true')", "unexpected character"),
        ("open(n)", "calls"),
        ("n.real", "attribute"),
        ("a[0]", "subscript"),
        ("lambda: 1", ":"),
        ("9 ** 9 ** 9", "**"),
        ("n ** 2", "**"),
        ("1e400", "too large"),
        ("10000000000000000000", "too large"),
        ("1e10 * 1e10", "too large"),
        ("1e18 + 1e18", "too large"),
        ("1 / 0", "division by zero"),
        ("n if n else 0", "after a complete expression"),
        ("3n", "after a complete expression"),
        ("1 +", "expected a number"),
        ("(1 + 2", "missing ')'"),
        ("", "empty"),
        ("n == 1", "unexpected character '='"),
        ("\u0661 + 1", "unexpected character"),
        ("n; 1", "unexpected character"),
    ],
)
def test_refuses_anything_but_arithmetic(text: str, reason: str) -> None:
    with pytest.raises(FormulaError) as info:
        Formula(text)
    assert reason in str(info.value)


def test_refuses_non_numbers_and_non_strings() -> None:
    for raw in (True, None, [1], {"n": 1}):
        with pytest.raises(FormulaError):
            Formula(raw)  # type: ignore[arg-type]


def test_refuses_overlong_and_deeply_nested_formulas() -> None:
    with pytest.raises(FormulaError, match="characters long"):
        Formula("n + " * (MAX_LENGTH // 4) + "n")
    with pytest.raises(FormulaError, match="nested deeper"):
        Formula("(" * (MAX_DEPTH + 1) + "n" + ")" * (MAX_DEPTH + 1))
    with pytest.raises(FormulaError, match="nested deeper"):
        Formula("-" * (MAX_DEPTH + 1) + "n")
    assert Formula("(" * MAX_DEPTH + "n" + ")" * MAX_DEPTH).evaluate({"n": 2}) == 2


def test_formula_errors_are_contract_errors() -> None:
    assert issubclass(FormulaError, ContractError)


def test_evaluation_guards_division_by_zero_and_non_finite_results() -> None:
    with pytest.raises(ContractError, match="divides by zero"):
        Formula("n / a_count").evaluate({"n": 1, "a_count": 0})
    with pytest.raises(ContractError, match="not finite"):
        Formula("n * n").evaluate({"n": 1e200})
    with pytest.raises(ContractError, match="needs dtype_bytes"):
        Formula("n * dtype_bytes").evaluate({"n": 1})
