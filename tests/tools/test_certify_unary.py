"""Certify's unary sweep: every input of a 16-bit unary contract against MPFR, and float32's
against the compiled core's reference (the C library's double function, MPFR near a rounding
boundary), tallied, written down and read back by the judge."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from _unary import honest_exp, negative_zero_exp, registry_of, two_ulp_exp

from fueltensor.cli import main
from fueltensor.ops import BY_KIND, UNARY_OPS, ContractOp, OpKind
from fueltensor.testing import classify, float_format
from fueltensor.tools.certify import binary_identity, certify, compare, verdict
from fueltensor.tools.certify.certificate import Certificate
from fueltensor.tools.certify.tally import core
from fueltensor.tools.exact_unary import correctly_rounded
from fueltensor.tools.judge import round_to

F32 = np.dtype(np.float32)
BAND = (0x3F000000, 0x3F800000)
"""One exponent band of float32: [0.5, 1), 2**23 inputs."""


def test_a_bf16_exp_is_certified_on_every_input(tmp_path: Path) -> None:
    reg = registry_of(tmp_path, ("exp_bf16", "BF16", 0, honest_exp))
    (cert,) = certify("unary-test", reg=reg, threads=2, out_dir=tmp_path / "certs")
    d = cert.data
    assert d["span"] == {"x": [0, 1 << 16], "inputs": 1 << 16, "exhaustive": True}
    assert d["histogram"]["exact"] == 1 << 16 and d["max_ulp"] == 0
    assert d["verdict"] == [] and "max_ulp 0" in d["claims"]["checked"]
    # the kernel's every output, by the digest of its blocks in order, computed here
    x = np.arange(1 << 16, dtype=np.uint16).view(ml_dtypes.bfloat16)
    out = np.empty_like(x)
    honest_exp(x, out=out)
    bits = out.view(np.uint16).astype("<u2")
    blocks = [
        hashlib.sha256(bits[i : i + 4096].tobytes()).digest() for i in range(0, 1 << 16, 4096)
    ]
    chain = hashlib.sha256(b"".join(blocks)).hexdigest()
    assert d["digest"] == chain
    # the class table counts every input once, by `testing.classify`
    names, counts = np.unique(classify(x), return_counts=True)
    classes = dict(zip(names.tolist(), counts.tolist(), strict=True))
    assert {c["x"]: c["inputs"] for c in d["classes"]} == classes
    again = Certificate.load(tmp_path / "certs" / "exp_bf16.json")
    assert (
        verdict(again, reg["exp_bf16"], binary_identity(reg["exp_bf16"], reg)) == []
        and "65,536 inputs, every input" in again.text()
    )


def test_an_exp_two_ulps_off_and_one_with_exp_of_minus_inf_minus_zero_fail(tmp_path: Path) -> None:
    reg = registry_of(
        tmp_path, ("off_bf16", "BF16", 1, two_ulp_exp), ("zero_bf16", "BF16", 0, negative_zero_exp)
    )
    off, zero = certify("unary-test", reg=reg, threads=2)
    assert off.data["max_ulp"] == 2 and off.data["max_input"]["x"] == 0
    (failure,) = off.data["verdict"]
    assert failure == (
        "max_ulp 1 declared, but 2 ULP from the correctly rounded result at x = 0 (0x0000): "
        "got 1.016 (0x3f82), correctly rounded 1 (0x3f80)"
    )
    assert zero.data["max_ulp"] == 0 and zero.data["specials"]["zero_sign"] == 1
    assert zero.data["verdict"] == [
        "1 input gave a zero of the other sign than the correctly rounded result"
    ]


@pytest.mark.parametrize("row", [r for r in UNARY_OPS if r.exhaustive_f32], ids=lambda r: r.name)
def test_the_cores_float32_reference_is_mpfrs_where_it_claims_proof(row: ContractOp) -> None:
    f = float_format(F32)
    rng = np.random.default_rng(7)
    x = np.concatenate(
        [
            rng.integers(0, 1 << 32, 3000, dtype=np.uint64).astype(np.uint32),
            np.arange(*BAND, 4099, dtype=np.uint32),
        ]
    )
    want = np.empty_like(x)
    op = core().UNARY_OPS.index(row.kernel_op)
    doubt = core().unary_reference(op, f.exponent, f.mantissa, x, want)
    proven = np.ones(x.size, bool)
    proven[doubt] = False
    mpfr = correctly_rounded(row, x.view(F32)).view(np.uint32)
    assert (want[proven] == mpfr[proven]).all()
    assert proven.sum() > 0.99 * x.size


def test_a_float32_band_of_exp_is_certified_with_the_c_reference(tmp_path: Path) -> None:
    reg = registry_of(tmp_path, ("exp_f32", "F32", 1, honest_exp))
    (cert,) = certify("unary-test", reg=reg, threads=2, inputs=BAND)
    d = cert.data
    assert d["span"] == {"x": list(BAND), "inputs": 1 << 23, "exhaustive": False}
    assert len(d["block_digests"]) == 2 and d["verdict"] == []
    # the reference of the band is glibc's double exp rounded once (a sample, against MPFR)
    x = np.arange(*BAND, 512, dtype=np.uint32).view(F32)
    wide = np.array([math.exp(v) for v in x.astype(np.float64).tolist()])
    assert (round_to(wide, F32) == correctly_rounded(BY_KIND[OpKind.EXP], x)).all()
    assert d["histogram"]["exact"] + d["histogram"]["ulp1"] == 1 << 23


def test_a_tampered_unary_certificate_is_inconsistent_and_two_kernels_compare_by_block(
    tmp_path: Path,
) -> None:
    reg = registry_of(
        tmp_path, ("exp_bf16", "BF16", 0, honest_exp), ("zero_bf16", "BF16", 0, negative_zero_exp)
    )
    honest, zero = certify("unary-test", reg=reg, threads=2)
    data = json.loads(json.dumps(honest.data))
    data["histogram"]["exact"] -= 1
    found = verdict(Certificate(data), reg["exp_bf16"], data["binary"])
    assert found and all(f.startswith("inconsistent certificate") for f in found)
    assert compare(honest, honest).same_bits
    zero.data["contract"]["op_kind"] = honest.data["contract"]["op_kind"]
    different = compare(honest, zero)
    assert different.blocks == [(0xF000, 0x10000)]  # -inf is 0xff80
    assert "x 0xf000..0x10000" in different.text()


def test_the_command_line_certifies_a_range_of_inputs_and_refuses_a_bad_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    registry_of(tmp_path, ("draft_exp_f32", "F32", 1, honest_exp))
    doc = str(tmp_path / "unary.md")
    args = ["certify", "--contracts", doc, "--inputs", "0x3f800000:0x3f800100", "--threads", "1"]
    assert main([*args, "--out", str(tmp_path / "certs")]) == 0
    out = capsys.readouterr().out
    assert "draft_exp_f32 (unary-test, float32): 256 inputs, a restricted range" in out
    assert "judge: ACCEPTS" in out
    path = str(tmp_path / "certs" / "draft_exp_f32.json")
    assert main(["judge", "--contracts", doc, "--certificate", path]) == 0
    assert "ok draft_exp_f32 (float32) by" in (read := capsys.readouterr().out)
    assert "coverage 256 of 4,294,967,296 inputs; checked: binary, revision" in read
    with pytest.raises(SystemExit):
        main(["certify", "--inputs", "0x1:0x100000001"])
    assert "START < STOP <= 0x100000000" in capsys.readouterr().err
