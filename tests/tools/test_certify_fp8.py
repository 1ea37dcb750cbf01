"""The FP8 binary sweep (`certify.fp8`): every one of the 2^16 pairs of fuel-cpu-backend's FP8
arithmetic is certified exact and accepted; a kernel that rounds one tie the wrong way, or
saturates where contracts/fuel-cpu-backend-fp8.md says NaN, is found, named and refused; the
reference agrees with the tests' own FP8 arithmetic (tests/_fp8.py) on every pair; the
committed certificates read back."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import _documents as documents
import numpy as np
import pytest
from _fp8 import E4M3, E5M2, Fmt, every_pair, powered, remainder, rounded, selected

import fueltensor as ft
from fueltensor.kernels._chassis import IMPLEMENTATION
from fueltensor.registry import bundled_contracts_dir
from fueltensor.tools.certify import certify
from fueltensor.tools.certify.fp8 import fp8_jobs
from fueltensor.tools.certify.histograms import read
from fueltensor.tools.certify.sweep import Span

pytest.importorskip("fueltensor.ext._certify")

ROOT = Path(__file__).resolve().parents[2]
COMPILED = pytest.mark.skipif(
    IMPLEMENTATION != "native",
    reason="fuel-cpu-backend's FP8 kernels are compiled (FUELTENSOR_PURE_NUMPY=1 or no build)",
)
TIE = (0x38, 0x18)
"""1 + 0.0625 in float8_e4m3fn: halfway between 1 (0x38) and 1.125 (0x39), to even: 0x38."""
Kernel = Callable[..., None]


def registry_of(folder: Path, kernel: Kernel) -> ft.Registry:
    """Provider `fp8-test`: fuel-cpu-backend's add_e4m3 contract, as written, describing
    `kernel` (named `wrong_add_e4m3`)."""
    text = (bundled_contracts_dir() / "fuel-cpu-backend-fp8.md").read_text()
    found = re.search(r"```fkc\nkernel: add_e4m3\n.*?```", text, re.S)
    assert found is not None
    fkc = found.group(0).replace("kernel: add_e4m3", "kernel: wrong_add_e4m3")
    fkc = re.sub(r'entry_point: "[^"]*"', 'entry_point: "fp8_test::wrong_add_e4m3"', fkc)
    fkc = fkc.replace('kernel_source: "portable-cpu"', 'kernel_source: "fp8-test"')
    ft.register_provider("fp8-test", {"fp8_test::wrong_add_e4m3": kernel})
    doc = documents.front("fp8-test", "fp8-test", "t", "v1", "fp8-test")
    path = folder / "fp8.md"
    path.write_text(f"{doc}\n## wrong_add_e4m3\n\n{fkc}\n", encoding="utf-8")
    return ft.Registry.from_paths([path])


def changed(change: Callable[[np.ndarray, np.ndarray, np.ndarray], None]) -> Kernel:
    """fuel-cpu-backend's add_e4m3, then `change(lhs_bits, rhs_bits, out_bits)`."""

    def kernel(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
        ft.registry().kernel("add_e4m3")(lhs, rhs, out=out)
        change(lhs.view(np.uint8), rhs.view(np.uint8), out.view(np.uint8))

    return kernel


OPS = ("add", "sub", "mul", "div", "maximum", "minimum", "pow", "mod")
"""The kernel op ids of fuel-cpu-backend's FP8 contracts (`<op>_e4m3`, `<op>_e5m2`)."""


@COMPILED
def test_every_fp8_contract_of_the_cpu_is_exact_on_every_pair() -> None:
    ops = ("add", "div", "maximum", "pow", "mod")
    certs = certify("cpu", [f"{op}_{f}" for op in ops for f in ("e4m3", "e5m2")])
    assert len(certs) == 10
    for cert in certs:
        d = cert.data
        assert d["span"] == {"lhs": [0, 256], "rhs": [0, 256], "pairs": 65536, "exhaustive": True}
        assert d["histogram"]["exact"] == 65536 and cert.max_ulp == 0
        assert d["formula"]["equal"] == 65536 and d["verdict"] == []
        assert "ACCEPTS" in cert.text() and "65,536 pairs, every pair" in cert.text()


def test_the_reference_is_the_tests_own_fp8_arithmetic_on_every_pair() -> None:
    """Every number the sweep's reference gives is the tests' hand-rounded one (tests/_fp8.py);
    NaNs where it says NaN (the invalid operations' NaN is the CPU's, pow's NaN sign the C
    library's: left open there). A selection's reference is the operand itself, bit for bit."""
    reg = ft.registry()
    a, b = (v.astype(np.uint8) for v in every_pair())
    jobs = fp8_jobs(reg, {"fuel-cpu-backend"}, None, Span((0, 256), (0, 256), 8))
    swept = sorted({j.contract.name.rsplit("_", 1)[0] for j in jobs})
    assert swept == (sorted(OPS) if IMPLEMENTATION == "native" else [])
    for job in jobs:
        f = E4M3 if job.dtype.name == "float8_e4m3fn" else E5M2
        want, invalid = reference_of(job.contract.name.rsplit("_", 1)[0], f, a, b)
        got = job.reference(a, b)
        assert np.array_equal(got[~invalid], want[~invalid]), job.contract.name
        assert all(f.value(int(x)) != f.value(int(x)) for x in got[invalid])


def reference_of(op: str, f: Fmt, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(patterns, open lanes) of the tests' own reference for kernel op `op`."""
    symbols = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
    if op in symbols:
        return rounded(f, a, b, symbols[op])
    if op in ("maximum", "minimum"):
        return selected(f, a, b, op == "maximum"), np.zeros(a.size, bool)
    return (powered if op == "pow" else remainder)(f, a, b)


@COMPILED
def test_one_pair_rounded_the_wrong_way_is_named_and_refused(tmp_path: Path) -> None:
    def up(lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray) -> None:
        out[(lhs == TIE[0]) & (rhs == TIE[1])] += 1

    (cert,) = certify("fp8-test", ["wrong_add_e4m3"], reg=registry_of(tmp_path, changed(up)))
    d = cert.data
    assert d["histogram"]["ulp1"] == 1 and d["histogram"]["exact"] == 65535
    assert (d["max_pair"]["lhs"], d["max_pair"]["rhs"]) == TIE
    assert (d["max_pair"]["got"], d["max_pair"]["want"]) == (0x39, 0x38)
    assert any("max_ulp 0 declared, but 1 ULP" in v for v in d["verdict"])
    assert "FAILS" in cert.text() and "(1 (0x38), 0.0625 (0x18))" in cert.text()


@COMPILED
def test_saturating_where_the_document_says_nan_is_refused(tmp_path: Path) -> None:
    def saturate(lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray) -> None:
        numbers = ((lhs & 0x7F) != 0x7F) & ((rhs & 0x7F) != 0x7F)
        overflow = numbers & ((out & 0x7F) == 0x7F)
        out[overflow] = (out[overflow] & 0x80) | 0x7E  # 448, the largest finite

    (cert,) = certify("fp8-test", ["wrong_add_e4m3"], reg=registry_of(tmp_path, changed(saturate)))
    d = cert.data
    assert cert.max_ulp == float("inf") and d["specials"]["invalid_lost"] > 0
    assert d["max_pair"]["want"] == 0x7F and d["max_pair"]["got"] == 0x7E
    assert d["verdict"] and "FAILS" in cert.text()


def test_the_committed_fp8_certificates_read_back() -> None:
    for op in OPS:
        for f, dtype in (("e4m3", "float8_e4m3fn"), ("e5m2", "float8_e5m2")):
            path = ROOT / "benchmarks" / "certificates" / "cpu" / f"{op}_{f}.txt"
            h = read(path)
            assert (h.kernel, h.provider, h.dtype) == (f"{op}_{f}", "fuel-cpu-backend", dtype)
            assert h.swept == 65536 and h.counts == {"exact": 65536}
            assert path.read_text().rstrip().splitlines()[-1].startswith("judge: ACCEPTS")
