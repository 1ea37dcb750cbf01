"""The cheat catalogue (issue 35, item 3; issue 41, item 1): for each op and dtype, the judge
passes the honest kernel of tests/cheat_kernels.c and fails each of its eleven cheats for what
it does, none for what the one before it did in the same worker, and the process that ran the
judge exits normally afterwards. And issue 41: the bf16 "add" that subtracts fails the quick
judge and its certificate; a wrong build swapped in under the same document cannot resume, or
be judged by, the honest one's certificate."""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _cbuild import build_c
from _cheats import DTYPES, OP_KINDS, SUBTRACTING_ADD, VARIANTS, build, register
from _extras import TESTS

import fueltensor as ft
from fueltensor.cli import main
from fueltensor.tools.certify import binary_identity, verdict

JUDGE = """
import json, sys
sys.path.insert(0, {tests!r})
from pathlib import Path
import fueltensor as ft
from _cheats import catalogue, register
kernels = [k for op in {ops!r} for k in catalogue(op, {dtype!r})]
reg = register(Path({library!r}), "cheats", kernels, Path({doc!r}))
report = ft.judge(reg, quick=True, progress=False)
print(json.dumps({{row.kernel: row.failures for row in report.rows}}))
"""

CAUGHT_BY = {
    "zeros": "precision: ",
    "specials": "precision: ",
    "reduced": "precision: ",
    "tail": "precision: ",
    "cache": "precision: ",
    "overrun": "overrun: wrote past its end; buffer out, bytes ",
    "scribble": "read-only pages; with writable inputs it wrote into an input; buffer lhs",
    "exit": "exit: the kernel ended the worker process with exit status 0 (exit()",
    "late": "crash: the worker died of SIGSEGV",
    "ftz": "fp environment: left the floating-point controls changed (MXCSR 0x1f80 -> 0x9fc0)",
    "untouched": "unwritten: out bytes depend on what out held before the call",
}
"""What the judge says of each cheat: the check that fails it."""


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/cheat_kernels.c, built."""
    return build("cheat_kernels.c", tmp_path_factory.mktemp("cheats") / "libcheats.so")


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_the_judge_fails_every_cheat_and_passes_the_honest_kernel(
    library: Path, tmp_path: Path, dtype: str
) -> None:
    code = JUDGE.format(
        tests=str(TESTS),
        ops=list(OP_KINDS),
        dtype=dtype,
        library=str(library),
        doc=str(tmp_path / "cheats.md"),
    )
    run = [sys.executable, "-c", textwrap.dedent(code)]
    done = subprocess.run(run, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    failures = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(failures) == len(OP_KINDS) * len(VARIANTS)
    for op in OP_KINDS:
        assert failures[f"honest_{op}_{dtype}"] == [], (op, failures[f"honest_{op}_{dtype}"])
        for variant, words in CAUGHT_BY.items():
            if variant == "ftz" and platform.machine() not in ("x86_64", "AMD64"):
                continue  # the cheat sets MXCSR only
            said = failures[f"{variant}_{op}_{dtype}"]
            assert any(words in s for s in said), (variant, op, said)


SWAPPED = """
#include <stdint.h>
#include <string.h>
static float widen(uint16_t h) {
    uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f;
}
static uint16_t narrow(float f) {
    uint32_t u; memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
int32_t swapped_add_bf16(const uint8_t *a, size_t na, const uint8_t *b, size_t nb,
                         uint8_t *out, size_t no) {
    if (na != nb || na != no || na % 2) return 1;
    const uint16_t *x = (const uint16_t *)a, *y = (const uint16_t *)b;
    uint16_t *z = (uint16_t *)out;
    for (size_t i = 0; i < na / 2; i++) z[i] = narrow(widen(x[i]) OP widen(y[i]));
    return 0;
}
"""
"""One bf16 add kernel; the rebuild that is wrong subtracts (OP: + or -)."""


def test_a_rebuilt_wrong_library_cannot_resume_a_certificate(tmp_path: Path) -> None:
    """Issue 41, item 2: a library certified into a state file, then rebuilt wrong at the same
    path under the same document. The resume is refused, naming both libraries' SHA-256 (it
    used to resume every block of the honest build and ACCEPT); without the state the rebuild
    FAILS, under another effective revision hash; the judge's reading of the honest
    certificate fails against the rebuild, naming both hashes."""
    builds = {}
    for name, op in (("good", "+"), ("bad", "-")):
        source = tmp_path / f"{name}.c"
        source.write_text(SWAPPED.replace("OP", op))
        builds[name] = build_c(source, tmp_path / f"{name}.so")
    library, state = tmp_path / "libswapped.so", tmp_path / "state"
    kernel = [("swapped_add_bf16", OP_KINDS["add"], "BF16", 0)]
    span = {"lhs": (0x3F80, 0x3FA0), "rhs": (0x3F80, 0x3FC0)}  # 1 - y is not 1 + y
    shutil.copyfile(builds["good"], library)
    reg = register(library, "swapped", kernel, tmp_path / "swapped.md")
    [honest] = ft.certify("swapped", reg=reg, state_dir=state, **span)
    good, bad = (hashlib.sha256(builds[n].read_bytes()).hexdigest() for n in ("good", "bad"))
    assert honest.data["verdict"] == [] and honest.data["binary"]["sha256"] == good
    shutil.copyfile(builds["bad"], library)
    rebuilt = register(library, "swapped", kernel, tmp_path / "swapped.md")
    with pytest.raises(ValueError, match="written by another binary") as refused:
        ft.certify("swapped", reg=rebuilt, state_dir=state, **span)
    assert f"libswapped.so sha256 {good}" in str(refused.value)
    assert f"libswapped.so sha256 {bad}" in str(refused.value)
    [wrong] = ft.certify("swapped", reg=rebuilt, **span)
    assert any(f.startswith("max_ulp 0 declared") for f in wrong.data["verdict"])
    revision = "kernel_revision_hash"
    assert wrong.data["contract"][revision] != honest.data["contract"][revision]
    contract = rebuilt["swapped_add_bf16"]
    assert contract.kernel_revision_hash == reg["swapped_add_bf16"].kernel_revision_hash
    [judged] = verdict(honest, contract, binary_identity(contract, rebuilt))
    assert good in judged and bad in judged and judged.endswith("certify it again")


def test_a_subtracting_add_fails_the_quick_judge_its_certificate_and_judge_certificate(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 41: a bf16 "add" that subtracts, under a contract with no max_ulp whose semantics
    come from the formula, was accepted by `judge --quick` and by its certificate (formula:
    0 of all pairs). Both read the formula now, and so does `judge --certificate` with the
    draft named by --contracts and --library."""
    doc = tmp_path / "subtracting.md"
    reg = register(library, "subtracting", [SUBTRACTING_ADD], doc)
    [row] = ft.judge(reg, quick=True, progress=False).rows
    assert any("the formula the semantics come from" in f for f in row.failures), row.failures
    span = {"lhs": (0x3F80, 0x3F90), "rhs": (0x3F80, 0x3FC0)}
    [cert] = ft.certify("subtracting", reg=reg, progress=False, **span)
    assert cert.data["formula"]["equal"] == 0
    assert any("source formula, but 1,024 of 1,024 pairs" in f for f in cert.data["verdict"])
    assert "judge: FAILS: " in cert.text()
    path = cert.save(tmp_path / "subtracting_add_bf16.json")
    args = ["judge", "--certificate", str(path), "--contracts", str(doc), "--library", str(library)]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL subtracting_add_bf16 (bfloat16)") and "1,024 of 1,024" in out
