"""Unary kernels of the tests' own provider `unary-test`: an honest exp in Python (the double
exp rounded once, a NaN quieted) and two that cheat, with their FKC documents and a fixture
registering them (the judge's and certify's unary tests)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import _documents as documents
import numpy as np

import fueltensor as ft
from fueltensor.ops import OpKind
from fueltensor.testing import float_format
from fueltensor.tools.judge import round_to

SEMANTICS = """semantics:
  source: [formula]
  nan: {operand: either, result: [quieted], sign: kept, invalid: [negative_canonical]}
  subnormals: kept
  position: invariant"""
"""The section the unary-test kernels declare: the decided NaN rules of the unary family."""


def section(name: str, fkc: str, max_ulp: float, semantics: str = SEMANTICS) -> str:
    """A section of a unary exp kernel `name` at `fkc`, provider `unary-test`."""
    return documents.section(
        name,
        OpKind.EXP.value,
        fkc,
        source="unary-test",
        entry_point=f"unary_test::{name}",
        blurb="exp in double, rounded once",
        max_ulp=max_ulp,
        notes="the C library's double exp, rounded once",
        op_params=False,
        semantics=semantics,
        unary=True,
    )


def honest_exp(x: np.ndarray, *, out: np.ndarray) -> None:
    """exp in double rounded once (bf16 through the round-to-odd f32); a NaN quieted."""
    f = float_format(x.dtype)
    with np.errstate(all="ignore"):
        wide = np.exp(x.astype(np.float64))
    out[...] = round_to(wide, x.dtype)
    nan = np.isnan(wide)
    bits = out.view(f.uint)
    bits[nan] = x.view(f.uint)[nan] | f.uint.type(f.quiet_bit)


def two_ulp_exp(x: np.ndarray, *, out: np.ndarray) -> None:
    """`honest_exp`, two ULPs up on every finite nonzero result."""
    honest_exp(x, out=out)
    bits = out.view(f"u{out.itemsize}")
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(out.astype(np.float64)) & (out != 0)
    bits[finite] += 2


def negative_zero_exp(x: np.ndarray, *, out: np.ndarray) -> None:
    """`honest_exp`, but exp(-inf) is -0."""
    honest_exp(x, out=out)
    with np.errstate(invalid="ignore"):
        out[np.isneginf(x.astype(np.float64))] = -0.0


def flushing_exp(x: np.ndarray, *, out: np.ndarray) -> None:
    """`honest_exp` on a machine that flushes: subnormal inputs read as zeros of their sign
    (exp gives 1), subnormal results written as zeros of their sign."""
    f = float_format(x.dtype)
    sign, smallest_normal = f.uint.type(f.sign_bit), f.uint.type(1 << f.mantissa)
    u = x.view(f.uint)
    honest_exp(np.where((u & ~sign) < smallest_normal, u & sign, u).view(x.dtype), out=out)
    got = out.view(f.uint)
    got[(got & ~sign) < smallest_normal] &= sign


def registry_of(
    folder: Path,
    *kernels: tuple[str, str, float, Callable[..., None]],
    semantics: str = SEMANTICS,
) -> ft.Registry:
    """Provider `unary-test` registered with exp kernels (name, fkc, max_ulp, thunk), and the
    registry of its document (written into `folder`), each declaring `semantics`."""
    links = {f"unary_test::{name}": fn for name, _, _, fn in kernels}
    ft.register_provider("unary-test", links)
    text = documents.front("unary-test", "unary-test", "t", "v1", "unary-test")
    text += "".join(section(name, fkc, ulp, semantics) for name, fkc, ulp, _ in kernels)
    path = folder / "unary.md"
    path.write_text(text, encoding="utf-8")
    return ft.Registry.from_paths([path])
