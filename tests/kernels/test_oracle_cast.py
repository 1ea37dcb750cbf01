"""The oracle's casts (`fueltensor.kernels.casting`, NumPy integer arithmetic on the bit
fields) against the independent reference (tests/_casts.py: MPFR), bit for bit: every pattern
of every 8- and 16-bit source, the rounding boundaries of every target from float32 and
float64, in both overflow rules; and its thunks' refusals."""

from __future__ import annotations

import numpy as np
import pytest
from _casts import CASES, expected, fmt

import fueltensor as ft
from fueltensor.kernels import casting, reference


@pytest.mark.parametrize(
    ("src", "dst", "saturate"), CASES, ids=[f"{s}-{d}-{t}" for s, d, t in CASES]
)
def test_the_oracle_casts_every_deciding_input_as_the_reference(
    src: str, dst: str, saturate: bool
) -> None:
    x, want = expected(src, dst, saturate)
    got = casting.cast_bits(x, fmt(dst).dtype, saturate)
    bad = np.nonzero(got != want)[0]
    assert not bad.size, [
        (hex(int(x.view(fmt(src).uint)[i])), hex(int(got[i])), hex(int(want[i]))) for i in bad[:5]
    ]


def test_the_formats_are_the_compiled_kernels_codes_order() -> None:
    assert [str(d) for d in casting.FORMATS] == [
        "float32", "float64", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2"
    ]  # fmt: skip


def test_the_oracle_thunks_refuse_what_their_contracts_do_not_admit() -> None:
    kernel = reference.ENTRY_POINTS["fuel_reference_backend::ops::ref_cast_f32_bf16"]
    x = np.ones(4, np.float32)
    out = np.zeros(4, np.uint16).view(ft.bfloat16.np)
    with pytest.raises(TypeError, match="out bfloat16; got x float32, out float16"):
        kernel(x, out=np.zeros(4, np.float16))
    with pytest.raises(TypeError, match="x must be float32 and out bfloat16; got x int32"):
        kernel(np.ones(4, np.int32), out=out)
    with pytest.raises(ValueError, match="out has shape \\(3,\\), x has \\(4,\\)"):
        kernel(x, out=out[:3])
    with pytest.raises(ValueError, match="must be C-contiguous"):
        kernel(np.ones(8, np.float32)[::2], out=out)
    assert not out.view(np.uint16).any()  # nothing written on a refusal
    kernel(x, out=out)
    assert out.view(np.uint16).tolist() == [0x3F80] * 4
