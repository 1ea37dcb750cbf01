"""Compiled kernels that misbehave on purpose (tests/cheat_kernels.c, tests/hostile_kernels.c):
built with cc, described by generated FKC documents, registered as providers."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Final

import _documents as documents
import pytest
from _extras import TESTS

import fueltensor as ft
from fueltensor.ops import BINARY_OPS

VARIANTS = (
    "honest",
    "zeros",
    "specials",
    "reduced",
    "tail",
    "cache",
    "overrun",
    "scribble",
    "exit",
    "late",
    "ftz",
    "untouched",
)
"""tests/cheat_kernels.c's variants: the honest kernel, then the eleven cheats, in the order the
judge runs them: each after the others in one worker (a fresh one after `exit`), so the damage
one leaves (a late crash, flush-to-zero) is found on it and not on the kernels after it."""
DTYPES = {"f32": "F32", "f64": "F64", "bf16": "BF16", "f16": "F16"}
"""The C sources' dtype suffixes and their FKC codes."""
OP_KINDS = {row.formula_op or row.kernel_op: row.op_kind.value for row in BINARY_OPS}
"""The C sources' op names (the seeds' kernel ops: the remainder's is the formula `rem`, which
the judge's reference for an undeclared remainder definition is) and their op kinds."""


def build(source: str, into: Path) -> Path:
    """tests/`source` compiled with cc into the shared library `into` (skips without cc)."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("cc not found on PATH: the test builds its kernels with it")
    flags = ["-O2", "-ffp-contract=off", "-shared", "-fPIC"]
    subprocess.run([cc, *flags, "-o", str(into), str(TESTS / source), "-lm"], check=True)
    return into


def contract(name: str, op_kind: str, fkc: str, max_ulp: float | None, provider: str) -> str:
    """One fkc block: `name` computes `op_kind` on two same-shape dense `fkc` tensors; with
    `max_ulp` None no bound is declared, the semantics said to come from the formula instead
    (as the bundled half-type contracts had it before issue 41)."""
    return documents.section(
        name,
        op_kind,
        fkc,
        source=provider,
        entry_point=f"{provider}::{name}",
        blurb="a kernel of the cheat catalogue",
        max_ulp="~" if max_ulp is None else max_ulp,
        notes="as the judge's reference",
        op_params=False,
        semantics="semantics:\n  source: [formula]" if max_ulp is None else "",
    )


def register(
    library: Path, provider: str, kernels: Iterable[tuple[str, str, str, float | None]], into: Path
) -> ft.Registry:
    """Register `provider` with each (name, op_kind, fkc, max_ulp) of `kernels`, its C symbol
    the name, and the registry of its document alone."""
    kernels = list(kernels)
    body = "".join(contract(*k, provider) for k in kernels)
    into.write_text(documents.front(provider, provider, "tests", "t:1", provider) + body)
    symbols = {f"{provider}::{name}": name for name, *_ in kernels}
    ft.register_provider(provider, ft.load_library(library, symbols))
    return ft.Registry.from_paths([into])


def catalogue(op: str, dtype: str) -> list[tuple[str, str, str, float | None]]:
    """Every variant of tests/cheat_kernels.c for `op` and `dtype`: (name, op kind, FKC code,
    max_ulp: 0, or 1 for the C library's pow)."""
    ulp = 1 if op == "pow" else 0
    return [(f"{v}_{op}_{dtype}", OP_KINDS[op], DTYPES[dtype], ulp) for v in VARIANTS]


SUBTRACTING_ADD: Final = ("subtracting_add_bf16", OP_KINDS["add"], "BF16", None)
"""tests/cheat_kernels.c's bf16 "add" that subtracts (issue 41), declared as the bundled
add_bf16 was: no max_ulp, semantics from the formula."""
