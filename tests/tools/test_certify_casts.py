"""certify on cast contracts: every source pattern of an 8- or 16-bit source, against the declared
rule, as a certificate the judge accepts; the outcome tally counted independently here; one
input rounded the wrong way is found, named and rejected; a kernel that flushes subnormals
under `subnormals: kept` is rejected; a float32 source is swept over the range asked."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _cast_kernels import oracle, registry_of
from _casts import fmt

import fueltensor as ft
from fueltensor.tools.certify import certify


def test_the_oracles_e4m3fn_cast_is_certified_on_every_source_pattern() -> None:
    names = [f"ref_cast_{s}_e4m3" for s in ("bf16", "f16", "e5m2")]  # f32, f64: not the oracle's
    certs = {c.data["dtype"]: c for c in certify("reference", names)}
    assert set(certs) == {"bfloat16", "float16", "float8_e5m2"}
    for source, cert in certs.items():
        f = fmt(source)
        assert cert.data["verdict"] == [] and cert.data["span"]["exhaustive"]
        assert cert.data["histogram"]["exact"] == 1 << f.width
        with np.errstate(invalid="ignore"):  # a signalling NaN widened
            x = np.arange(1 << f.width, dtype=f.uint).view(f.dtype).astype(np.float64)
        outcomes = cert.data["outcomes"]
        assert outcomes["NaN"] == int(np.isnan(x).sum())
        assert outcomes["infinity"] == 2
        beyond = np.isfinite(x) & (np.abs(x) > 464)  # past 448 and the tie to even at 464
        assert outcomes.get("overflow", 0) == int(beyond.sum())
    text = certs["bfloat16"].text()
    assert "bfloat16 to float8_e4m3fn" in text and "judge: ACCEPTS" in text


def test_one_input_rounded_the_wrong_way_is_named_and_rejected(tmp_path: Path) -> None:
    wrong_input = 0x3F88  # bfloat16 1.0625: an e4m3fn tie between 1 (0x38) and 1.125, to even

    def wrong(x: np.ndarray, bits: np.ndarray) -> None:
        if x.dtype == ft.bfloat16.np:
            bits[x.view(np.uint16) == wrong_input] += 1

    reg = registry_of(
        tmp_path, {"off_by_one": ("ref_cast_bf16_e4m3", "inf_or_nan", oracle(False, wrong))}
    )
    with ft.use_registry(reg):
        (cert,) = certify("cast-test", ["off_by_one"], reg=reg)
    assert cert.data["histogram"]["ulp1"] == 1 and cert.data["max_input"]["x"] == wrong_input
    assert cert.data["max_input"]["got"] == 0x39 and cert.data["max_input"]["want"] == 0x38
    (said,) = cert.data["verdict"]
    assert "max_ulp 0 declared, but 1 ULP" in said and "x = 1.062 (0x3f88)" in said


def test_flushed_subnormals_under_kept_are_rejected(tmp_path: Path) -> None:
    def flush(x: np.ndarray, bits: np.ndarray) -> None:
        tiny = (bits & 0x7F) < 0x08  # e4m3fn's subnormals: exponent field 0
        bits[tiny] &= 0x80

    reg = registry_of(tmp_path, {"ftz": ("ref_cast_f16_e4m3", "inf_or_nan", oracle(False, flush))})
    (cert,) = certify("cast-test", ["ftz"], reg=reg)
    assert cert.data["specials"]["subnormal_out_flushed"] > 0
    assert any(v.startswith("semantics: subnormals kept, but") for v in cert.data["verdict"])


def test_a_float32_source_sweeps_the_range_asked() -> None:
    contract = ft.registry()["cast_f32_bf16"]
    if not contract.registrable:
        pytest.skip("the compiled cast kernels are not built here")
    lo, hi = 0x3F800000, 0x3F800000 + (1 << 12)
    (cert,) = certify("cpu", [contract.name], inputs=(lo, hi))
    assert cert.data["dtype"] == "float32" and cert.data["verdict"] == []
    assert cert.data["span"] == {"x": [lo, hi], "inputs": 1 << 12, "exhaustive": False}
