"""fueltensor dtypes as NumPy reads them: np.dtype(), equality and hashing, NumPy-style .kind,
and NumPy dtypes accepted wherever a dtype is taken (issue 13)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import fueltensor as ft
from fueltensor.core import dtypes as _dtypes

ML_DTYPES = ["bfloat16", "float8_e4m3fn", "float8_e5m2"]
"""The formats ml_dtypes stores (NumPy reads them as extension dtypes)."""
NUMPY_NAMES = [d.name for d in _dtypes.ALL if d.name not in ML_DTYPES]


@pytest.mark.parametrize("name", NUMPY_NAMES)
def test_numpy_reads_and_equals_each_dtype(name: str) -> None:
    dt = getattr(ft, name)
    ref = np.dtype(name)
    assert np.dtype(dt) == ref
    assert dt == ref and ref == dt and dt == ref.type
    assert hash(dt) == hash(ref)
    assert (dt.kind, dt.itemsize, dt.name) == (ref.kind, ref.itemsize, ref.name)
    assert np.zeros(2, dtype=dt).dtype == ref
    assert np.issubdtype(dt, np.number) == np.issubdtype(ref, np.number)
    assert dt.numpy_own


@pytest.mark.parametrize("name", ML_DTYPES)
def test_the_ml_dtypes_formats_are_ml_dtypes_own(name: str) -> None:
    dt, ref = getattr(ft, name), getattr(ml_dtypes, name)
    assert np.dtype(dt) == np.dtype(ref) and dt == ref
    assert (dt.kind, dt.itemsize) == ("f", 2 if name == "bfloat16" else 1)
    assert dt.category == "real floating" and dt.narrow
    assert not dt.numpy_own


def test_distinct_fueltensor_dtypes_never_compare_equal() -> None:
    for a in _dtypes.ALL:
        for b in _dtypes.ALL:
            assert (a == b) == (a is b)
    assert len({*_dtypes.ALL}) == len(_dtypes.ALL)
    assert ft.float64 != "float64" and ft.float64 != None  # noqa: E711


def test_numpy_dtypes_are_accepted_where_a_dtype_is_taken() -> None:
    assert ft.asarray([1, 2], dtype=np.float32).dtype is ft.float32
    assert ft.zeros(3, dtype=np.dtype("int8")).dtype is ft.int8
    assert ft.astype(ft.ones(2), np.int16).dtype is ft.int16
    assert ft.isdtype(np.float64, "real floating") and not ft.isdtype(np.int8, "real floating")
    assert ft.isdtype(np.dtype("int8"), ft.int8)
    assert ft.finfo(np.float32).eps == np.finfo(np.float32).eps
    assert ft.iinfo(np.uint8).max == 255
    assert ft.can_cast(np.int8, np.int16) and not ft.can_cast(np.int64, np.float64)
    assert ft.result_type(np.float32, ft.int8) is ft.float32


def test_promotion_stays_the_standards() -> None:
    # NumPy would give float64 for int64 + float32 and value-based types for scalars; the
    # standard's lattice (with fueltensor's documented mixed-kind rule) does not.
    assert ft.result_type(np.int64, np.float32) is ft.float32
    assert ft.result_type(np.uint8, 1000) is ft.uint8
