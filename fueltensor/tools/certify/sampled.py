"""Certificates of F32 and F64 contracts: the special-value classes exhaustively, the rest sampled.

F32 and F64 cannot be swept: 2**64 and 2**128 operand pairs. What can be exhaustive is the set
of special values: every ordered pair of `testing.special_values` (every NaN payload pattern
class, quiet and signaling, both signs; ±0, ±inf, subnormals, the extremes, binade edges) is
run. The rest is sampled: seeded random bit patterns and random ordinary values, the sample
size and seed written in the certificate. The reference is the judge's for the contract
(`judge.declared.reference_for`): correctly rounded + - * / (F64 in exact rationals) and pow
(MPFR where a wider pow is not proven), the selection of maximum and minimum, the declared
remainder definition. Lanes the contract leaves open are counted as `open`.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

import numpy as np

from fueltensor.core.dtypes import DType
from fueltensor.testing import bits, classify, difference_classes, errors, special_pairs
from fueltensor.tools.certify.certificate import HISTOGRAM, pair
from fueltensor.tools.certify.sweep import Job
from fueltensor.tools.judge.audit import probes
from fueltensor.tools.judge.declared import reference_for

WIDE: Final = ("F32", "F64")
"""The FKC dtypes certified by special classes plus a sample."""
EXACT_SAMPLE: Final = 4096
"""F64's random lanes where the reference is exact rational arithmetic (slow): a subsample."""


def _operands(dtype: DType, sample: int, seed: int, exact: bool) -> tuple[np.ndarray, ...]:
    """Every special pair, then the sample (for an exact F64 reference, at most EXACT_SAMPLE)."""
    sa, sb = (s.array for s in special_pairs(dtype.np))
    n = min(sample, EXACT_SAMPLE) if exact and dtype.fkc == "F64" else sample
    lhs, rhs = probes(dtype.np, n // 2, np.random.default_rng(seed))
    return sa, sb, lhs[sa.size :], rhs[sb.size :]


def _histogram(ulp: np.ndarray, exact: np.ndarray) -> dict[str, int]:
    """The histogram of `certificate.HISTOGRAM` from per-lane distances."""
    found = {"exact": int(exact.sum())}
    for k in range(9):
        found[f"ulp{k}"] = int(((ulp == k) & ~exact).sum())
    found["beyond"] = int((ulp > 8).sum())
    assert tuple(found) == HISTOGRAM
    return found


def sampled_data(job: Job, sample: int, seed: int) -> dict[str, Any]:
    """The certificate fields of an F32/F64 job: histogram, maximum and its first pair, the
    difference classes, the operand class table, the digest, the span (special pairs and the
    sample)."""
    ref = reference_for(job.contract)
    if ref is None:
        raise ValueError(f"{job.contract.name}: the judge has no reference for its op kind")
    sa, sb, ra, rb = _operands(job.dtype, sample, seed, ref.exact_f64)
    lhs, rhs = np.concatenate([sa, ra]), np.concatenate([sb, rb])
    got = job.run(lhs.view(f"u{lhs.itemsize}"), rhs.view(f"u{rhs.itemsize}")).view(lhs.dtype)
    open_ = ref.skip(lhs, rhs) if ref.skip is not None else np.zeros(lhs.size, bool)
    keep = ~open_
    want = ref.fn(lhs[keep], rhs[keep])
    g, a, b = got[keep], lhs[keep], rhs[keep]
    ulp = np.minimum(errors(g, want).ulp, 2.0**62).astype(np.int64)
    # Where the reference does not fix NaN bits, any NaN meets any NaN, as in the judge (NumPy's
    # NaN of a NaN pair differs between its releases).
    open_nan = np.isnan(g) & np.isnan(want) & (not ref.nan_bits)
    exact = (bits(g) == bits(want)) | open_nan
    first = int(np.argmax(ulp)) if ulp.size else 0
    classes = np.unique(
        np.where(open_nan, "equal", difference_classes(g, want)), return_counts=True
    )
    cells = np.unique(
        np.stack([classify(a), classify(b), exact.astype(str)]), axis=1, return_counts=True
    )
    return {
        "reference": {"exact": ref.describe},
        "span": {
            "special_pairs": int(sa.size),
            "sample": int(ra.size),
            "seed": seed,
            "pairs": int(lhs.size),
            "exhaustive": False,
        },
        "histogram": _histogram(ulp, exact),
        "max_ulp": int(ulp[first]) if ulp.size else 0,
        "max_pair": _pair(job.dtype, a, b, g, want, first) if ulp.size else None,
        "differences": {str(k): int(v) for k, v in zip(*classes, strict=True) if k != "equal"},
        "specials": {"open": int(open_.sum())},
        "classes": _cells(cells),
        "digest": hashlib.sha256(got.tobytes()).hexdigest(),
    }


def _pair(dtype: DType, a: np.ndarray, b: np.ndarray, g: np.ndarray, w: np.ndarray, i: int) -> Any:
    """The pair at lane `i`, as certificates show pairs."""
    u = [int(x[i : i + 1].view(f"u{x.itemsize}")[0]) for x in (a, b, g, w)]
    return pair(dtype.name, *u)


def _cells(found: tuple[np.ndarray, np.ndarray]) -> list[dict[str, object]]:
    """The operand class table: per (lhs class, rhs class), pairs and pairs with the
    reference's bits."""
    table: dict[tuple[str, str], dict[str, Any]] = {}
    columns, counts = found
    for (lc, rc, same), n in zip(columns.T.tolist(), counts.tolist(), strict=True):
        cell = table.setdefault((lc, rc), {"lhs": lc, "rhs": rc, "pairs": 0, "exact": 0})
        cell["pairs"] += n
        cell["exact"] += n if same == "True" else 0
    return list(table.values())
