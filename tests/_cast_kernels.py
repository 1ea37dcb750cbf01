"""Cast kernels of the tests' own provider `cast-test`: the oracle's cast with one thing
changed, each described by a copy of one of the oracle's cast contracts (another name, entry
point and overflow rule), registered with its document (the judge's and certify's cast tests)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import _documents as documents
import numpy as np

import fueltensor as ft
from fueltensor.kernels.casting import cast_bits
from fueltensor.registry import bundled_contracts_dir

ORACLE = bundled_contracts_dir() / "fuel-reference-backend-cast.md"
Kernel = Callable[..., None]


def block(kernel: str) -> str:
    """The fkc block of one of the oracle's cast contracts, as written."""
    text = ORACLE.read_text()
    found = re.search(rf"```fkc\nkernel: {kernel}\n.*?```", text, re.S)
    assert found is not None
    return found.group(0)


def registry_of(folder: Path, kernels: dict[str, tuple[str, str, Kernel]]) -> ft.Registry:
    """Provider `cast-test`: each kernel name -> (the oracle contract it copies, the overflow
    rule it declares, its thunk), registered, with its document."""
    ft.register_provider("cast-test", {f"cast_test::{n}": fn for n, (_, _, fn) in kernels.items()})
    text = documents.front("cast-test", "cast-test", "t", "v1", "cast-test")
    for name, (copied, overflow, _) in kernels.items():
        fkc = block(copied).replace(f"kernel: {copied}", f"kernel: {name}")
        fkc = re.sub(r'entry_point: "[^"]*"', f'entry_point: "cast_test::{name}"', fkc)
        fkc = fkc.replace('kernel_source: "reference-oracle"', 'kernel_source: "cast-test"')
        fkc = re.sub(r"overflow: \w+}", f"overflow: {overflow}}}", fkc)
        text += f"\n## {name}\n\n{fkc}\n"
    path = folder / "casts.md"
    path.write_text(text, encoding="utf-8")
    return ft.Registry.from_paths([path])


def oracle(
    saturate: bool, change: Callable[[np.ndarray, np.ndarray], None] | None = None
) -> Kernel:
    """The oracle's cast by rule `saturate`, then `change(x, out_bits)`."""

    def kernel(x: np.ndarray, *, out: np.ndarray) -> None:
        bits = out.view(f"u{out.itemsize}")
        bits[...] = cast_bits(x, out.dtype, saturate)
        if change is not None:
            change(x, bits)

    return kernel
