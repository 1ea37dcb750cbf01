"""Small defects an adversarial run found (issue 35, item 6): each gives NumPy's value where NumPy
has one and fueltensor's own words otherwise. Contract bounds are in test_fkc_validation.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import fueltensor as ft
from fueltensor.kernels.threads import MAX_THREADS


@pytest.mark.parametrize(
    "bounds",
    [(-1, 2), (0.5, None), (None, 0), (False, True), (np.int8(-1), np.int8(2)), (None, 2.5)],
    ids=["ints", "float-low", "int-high", "bools", "int8", "float-high"],
)
def test_clip_of_bools_promotes_as_numpy_does(bounds: tuple[object, object]) -> None:
    data = np.array([True, False, True])
    want = np.clip(data, *bounds)
    as_ft = [ft.asarray(b) if isinstance(b, np.generic) else b for b in bounds]
    got = ft.clip(ft.asarray(data), *as_ft)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), want)


HUGE = [2**63, 10**30, -(2**64) - 5, 2**127]


def _bf16(value: float) -> np.ndarray:
    """The bfloat16 NumPy's rule gives a Python number: through float64, then rounded once."""
    return np.array(float(value), np.float64).astype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("value", HUGE, ids=str)
def test_bfloat16_takes_a_huge_python_int_through_float64(value: int) -> None:
    x = ft.asarray([1.0, -3.5, np.inf, 0.0], dtype=ft.bfloat16)
    as_float = ft.asarray([float(value)], dtype=ft.bfloat16)
    assert np.asarray(as_float).view(np.uint16)[0] == _bf16(value).view(np.uint16)
    for got, want in [
        (x + value, x + float(value)),
        (value - x, float(value) - x),
        (ft.maximum(x, value), ft.maximum(x, float(value))),
        (ft.where(x > 0, x, value), ft.where(x > 0, x, float(value))),
        (ft.full((2,), value, dtype=ft.bfloat16), ft.full((2,), float(value), dtype=ft.bfloat16)),
        (
            ft.asarray([value, 1], dtype=ft.bfloat16),
            ft.asarray([float(value), 1.0], dtype=ft.bfloat16),
        ),
        (ft.clip(x, None, value), ft.clip(x, None, float(value))),
        (x == value, x == float(value)),
    ]:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(
            np.asarray(got).view(np.uint8), np.asarray(want).view(np.uint8)
        )
    y = ft.asarray([1.0], dtype=ft.bfloat16)
    y[0] = value
    y += value
    assert (
        np.asarray(y).view(np.uint16)[0]
        == np.asarray(ft.asarray([float(value)], dtype=ft.bfloat16) * 2).view(np.uint16)[0]
    )


@pytest.mark.parametrize("dtype", [ft.bfloat16, ft.float16, ft.float32])
def test_an_int_beyond_float64_is_an_overflow_error_for_every_float(dtype: ft.DType) -> None:
    x = ft.asarray([1.0], dtype=dtype)
    with pytest.raises(OverflowError, match="int too large to convert to float"):
        x + 10**400
    np_float = np.float16 if dtype is ft.float16 else np.float32
    with pytest.raises(OverflowError, match="int too large to convert to float"):
        np.add(np.ones(1, np_float), 10**400)


def test_float16_keeps_numpys_inf_for_an_int_beyond_its_range() -> None:
    with np.errstate(over="ignore"):
        want = np.float16(1.0) + np.array(2**63, np.float16)
    got = ft.asarray([1.0], dtype=ft.float16) + 2**63
    assert np.asarray(got)[0] == want == np.inf


@pytest.mark.parametrize("index_dtype", [np.int8, np.int16, np.uint8, np.int32])
@pytest.mark.parametrize("mode", ["wrap", "clip"])
def test_take_wraps_and_clips_narrow_indices_as_numpy(index_dtype: type, mode: str) -> None:
    info = np.iinfo(index_dtype)
    indices = np.array([info.min, info.max, 0, 5, info.max - 1], index_dtype)
    data = np.arange(200 * 3).reshape(200, 3)
    want = np.take(data, indices, axis=0, mode=mode)  # type: ignore[call-overload]
    got = ft.asarray(data).take(ft.asarray(indices), axis=0, mode=mode)  # type: ignore[arg-type]
    np.testing.assert_array_equal(np.asarray(got), want)


def test_take_wrap_still_refuses_float_indices() -> None:
    with pytest.raises(TypeError, match="indices must be an integer tensor"):
        ft.arange(200).take(ft.asarray([1.5]), mode="wrap")


@pytest.mark.parametrize("text", ["--2", "-", "2_0", "0x2", "1e1", "0", str(MAX_THREADS + 1)])
def test_a_bad_thread_count_variable_stops_the_import_naming_it(text: str) -> None:
    env = {**os.environ, "FUELTENSOR_NUM_THREADS": text}
    done = subprocess.run(
        [sys.executable, "-c", "import fueltensor"], env=env, capture_output=True, text=True
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"fueltensor.core.errors.SettingError: $FUELTENSOR_NUM_THREADS={text!r}")
    assert f"is not a count: set a whole number from 1 to {MAX_THREADS}" in last, last


def test_an_empty_thread_count_variable_is_unset() -> None:
    code = (
        "import fueltensor as ft, os\n"
        f"print(ft.get_num_threads() == min(len(os.sched_getaffinity(0)), {MAX_THREADS}))"
    )
    env = {**os.environ, "FUELTENSOR_NUM_THREADS": ""}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr


@pytest.mark.parametrize("count", [np.int64(2), np.uint8(1), np.intp(1), 2])
def test_set_num_threads_takes_any_integer(count: object) -> None:
    previous = ft.set_num_threads(count)  # type: ignore[arg-type]
    try:
        assert ft.set_num_threads(previous) == int(count)  # type: ignore[call-overload]
    finally:
        ft.set_num_threads(previous)


@pytest.mark.parametrize("count", [True, np.True_, 2.0, np.float64(2.0), "2", None])
def test_set_num_threads_refuses_what_is_not_an_integer(count: object) -> None:
    with pytest.raises(ValueError, match="must be a thread count from 1 to"):
        ft.set_num_threads(count)  # type: ignore[arg-type]


def test_a_nul_inside_a_symbol_name_is_refused(tmp_path: Path) -> None:
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("cc not found on PATH: the test builds a shared library")
    source = tmp_path / "k.c"
    source.write_text(
        "#include <stdint.h>\n#include <stddef.h>\n"
        "int32_t k(const uint8_t *a, size_t n, const uint8_t *b, size_t m, uint8_t *o, size_t p)"
        " { return 0; }\n"
    )
    library = tmp_path / "libk.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    assert set(ft.load_library(library, {"t::k": "k"})) == {"t::k"}
    with pytest.raises(ValueError, match=r"cannot hold a NUL character; got 'k\\x00evil'"):
        ft.load_library(library, {"t::k": "k\0evil"})
