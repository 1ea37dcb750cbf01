"""The judge's record of one audit (`Audit`), its probe sizes (`Settings`) and its run count
(`RUNS`): shared by the elementwise audit (`judge.audit`) and the reduction audit
(`judge.reductions`), which `judge.audit` enters for a reduction contract."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import numpy as np

if TYPE_CHECKING:
    from fueltensor.fkc.schema import KernelContract

RUNS: Final = 16
"""Repeated invocations of one probe for the determinism check."""


@dataclass(frozen=True)
class Settings:
    """Probe sizes: `quick` keeps a full audit under a minute on two cores."""

    random: int
    exact: int
    large: int
    quick: bool = False  # the quick position sweep too (`judge.positions`)

    @classmethod
    def of(cls, quick: bool) -> Settings:
        """The quick probe sizes (`--quick`) or the full ones."""
        return cls(2048, 256, 1 << 16, True) if quick else cls(32768, 2048, 1 << 20)


@dataclass
class Audit:
    """The judge's findings for one contract at one dtype."""

    kernel: str
    provider: str
    op_kind: str
    dtype: str
    label: str
    reference: str
    declared_ulp: float | None
    measured_ulp: float = 0.0
    max_relative: float = 0.0
    probes: int = 0
    nan_mismatches: int = 0
    nan_payloads: int = 0
    """Lanes where the kernel's NaN (or zero) differs from the reference's in payload or sign,
    counted where the reference fixes those bits (`Reference.nan_bits`: a selection)."""
    worst: str = ""
    """The worst lane, as `testing.lane_message` describes it: inputs, bits got and expected."""
    nan_worst: str = ""
    """The first lane of `nan_payloads`, described the same way."""
    differences: dict[str, int] = field(default_factory=dict)
    """Differing lanes by `testing.DIFFERENCE_CLASSES` (NaN against NaN only where the
    reference fixes NaN bits)."""
    identical_runs: int = 0
    runs: int = RUNS
    digest: str = ""
    """SHA-256 of the determinism probe's output bytes (seeded probes: every machine computes
    the same inputs, so equal digests mean bit-identical results across machines)."""
    conformance: list[str] = field(default_factory=list)
    overhead_ns: float = 0.0
    overhead_calls: int = 0
    """Calls the overhead's median was taken over (warm-up excluded)."""
    ns_per_element: float = 0.0
    """One call on `large_n` elements, on one thread."""
    ns_per_element_all: float = 0.0
    """The same call on every thread the kernel splits it over (`threads`)."""
    threads: int = 1
    gb_per_s: float = 0.0
    formula_bytes_per_element: float = 0.0
    predicted_ns_per_element: float = 0.0
    large_n: int = 0
    large_calls: int = 0
    """Calls of the large input timed on one thread (warm-up excluded)."""
    implementations: dict[str, int] = field(default_factory=dict)
    """fuel-cpu-backend only: per other implementation built here (compiled or pure), the probe
    lanes whose bits differ from the linked kernel's (the result would depend on the build)."""
    failures: list[str] = field(default_factory=list)
    faulted: bool = False
    """Whether the kernel raised (a checked run's fault, a nonzero status, anything) and the
    audit stopped there: `fueltensor judge` exits with its own status for it."""
    semantics: list[str] = field(default_factory=list)
    """Measured facts re-measured on a machine unlike the document's: notes, not failures."""

    @property
    def ok(self) -> bool:
        """True when no check failed."""
        return not self.failures


def record_runs(a: Audit, contract: KernelContract, outputs: Sequence[np.ndarray]) -> None:
    """The determinism verdict of RUNS calls' `outputs` into `a`: how many are byte-identical to
    the first, its digest, and a failure where the contract declares bitwise results."""
    a.identical_runs = sum(o.tobytes() == outputs[0].tobytes() for o in outputs)
    a.digest = hashlib.sha256(outputs[0].tobytes()).hexdigest()
    bitwise = "bitwise" in contract.determinism or contract.precision.bit_stable_on_same_hardware
    if a.identical_runs != RUNS and bitwise:
        a.failures.append(
            f"determinism: only {a.identical_runs} of {RUNS} runs byte-identical, "
            f"declared {contract.determinism}"
        )
