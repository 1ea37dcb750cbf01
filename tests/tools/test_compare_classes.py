"""compare_backends groups differences by class (NaN payload, signed zero, remainder sign,
infinity, subnormal, rounding ...) and provider: counted against results worked out here from
the contracts' formulas and the frameworks' own calls."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fueltensor as ft
from fueltensor.testing import difference_classes, special_pairs
from fueltensor.tools.differences import CLASSES, by_class, class_rows, difference_counts

F32 = np.float32


def test_a_zero_of_the_other_sign_is_a_signed_zero_except_in_a_remainder() -> None:
    got = np.array([0.0, -0.0, 2.0, np.nan], F32)
    want = np.array([-0.0, -0.0, -2.0, -np.nan], F32)
    assert difference_counts("MinimumElementwise", got, want) == {
        "NaN payload": 1,  # a NaN's sign is part of its payload here
        "signed zero": 1,
        "sign": 1,
    }
    assert difference_counts("RemElementwise", got, want) == {"NaN payload": 1, "remainder sign": 2}
    assert difference_counts("AddElementwise", got, got) == {}


def test_numpy_beside_the_seeds_differs_in_the_classes_the_formulas_predict() -> None:
    """NumPy beside the default kernels, and the seeds' formula remainder named by kernel name
    (`rem_f32`, which joins only where named): each differs from the default in the classes
    worked out here from the formulas. The default remainder is NumPy's exact one."""
    x = ft.asarray(F32([0.0, 4.0, 5.0, -4.0, 7.0]))
    y = ft.asarray(F32([-0.0, -2.0, math.inf, 2.0, 3.0]))
    with ft.compare_backends("cpu", "numpy", "rem_f32") as report:
        ft.minimum(x, y)
        ft.remainder(x, y)
    lhs, rhs = np.asarray(x), np.asarray(y)
    with np.errstate(all="ignore"):
        # the default: minimum returns lhs on a ±0 tie; remainder is NumPy's
        default = {
            "minimum": np.where((lhs == rhs) & (lhs == 0), lhs, np.minimum(lhs, rhs)),
            "remainder": np.remainder(lhs, rhs),
        }
        theirs = {
            ("minimum", "numpy_minimum"): np.minimum(lhs, rhs),
            ("remainder", "numpy_rem"): np.remainder(lhs, rhs),
            ("remainder", "rem_f32"): lhs - np.floor(lhs / rhs) * rhs,  # the seeds' formula
        }
    assert sorted((c.op, c.kernels[1]) for c in report) == sorted(theirs)
    for c in report:
        classes = difference_classes(theirs[c.op, c.kernels[1]], default[c.op])
        want: dict[str, int] = {}
        for name in classes.tolist():
            if name != "equal":
                name = "remainder sign" if c.op == "remainder" and "sign" in name else name
                want[name] = want.get(name, 0) + 1
        assert c.classes == want
    assert by_class(report) == {
        "numpy": {"signed zero": 1},
        "fuel-cpu-backend": {"remainder sign": 1, "NaN vs number": 1},
    }
    assert report.to_dict()["by_class"] == by_class(report)
    text = str(report)
    assert "differing elements by class and provider" in text
    assert "remainder sign" in text and "1 signed zero" in text


def test_the_class_table_lists_classes_in_order_and_leaves_empty_ones_out() -> None:
    rows = class_rows({"numpy": {"rounding": 3, "NaN payload": 1}, "jax": {"subnormal": 2}})
    assert rows == [
        ("difference", "numpy", "jax"),
        ("NaN payload", "1", ""),
        ("subnormal", "", "2"),
        ("rounding", "3", ""),
    ]
    assert [r[0] for r in rows[1:]] == [
        c for c in CLASSES if c in {"NaN payload", "subnormal", "rounding"}
    ]


FRAMEWORKS = ("numpy", "torch", "jax")


@pytest.mark.parametrize("name", FRAMEWORKS)
def test_special_values_show_each_frameworks_classes(name: str) -> None:
    pytest.importorskip(
        name, reason=f"the {name} extra is not installed: pip install 'fueltensor[{name}]'"
    )
    lhs, rhs = (ft.asarray(v.array.copy()) for v in special_pairs("float32"))
    with ft.compare_backends("cpu", name) as report:
        ft.minimum(lhs, rhs)
        ft.remainder(lhs, rhs)
    found = by_class(report)[name]
    assert "signed zero" in found, found  # every framework: the seeds' ±0 tie is lhs
    remainder = next(c.classes for c in report if c.op == "remainder")
    if name == "numpy":  # NumPy's remainder is the default's, the exact one: NaN bits aside
        assert set(remainder) <= {"NaN payload"}, remainder
    else:  # PyTorch's and JAX's are computed step by step: zero signs and x % ±inf differ
        assert {"remainder sign", "NaN vs number"} <= set(remainder), remainder
    if name == "torch":  # maximum/minimum give a NaN without payload
        assert "NaN payload" in found


def test_bfloat16_signaling_nans_are_compared_without_a_warning() -> None:
    lhs, rhs = (v.tensor() for v in special_pairs("bfloat16"))
    with ft.compare_backends("cpu", "numpy") as report:  # warnings are errors in this suite
        ft.add(lhs, rhs)
    (c,) = list(report)
    # the seeds keep a NaN operand's payload (quieted); ml_dtypes' bfloat16 loops do not
    assert c.classes.get("NaN payload", 0) > 0 and c.nan_payloads == c.classes["NaN payload"]
