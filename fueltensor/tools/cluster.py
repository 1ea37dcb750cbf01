"""The judge across a Dask cluster: the same seeded audit on one worker per host, compared.

Every audit's probes are seeded, so every machine computes the same operands and the digest of
a kernel's outputs says whether two machines give the same bits. A contract declaring
`bit_stable_on_same_hardware` promises equal bits on the same hardware only: a digest that
differs between machines with equal fingerprints breaks the promise (a failure); one that
differs across different hardware is a finding, reported with both machines' fingerprints.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from fueltensor.core.errors import plural
from fueltensor.registry import registry
from fueltensor.tools.comparisons import text_table
from fueltensor.tools.judge.report import JudgeReport
from fueltensor.tools.judge.run import judge_here

if TYPE_CHECKING:
    from distributed import Client

ASPECTS: Final = ("bits", "precision", "determinism")
"""What may differ between machines: the output digest, the measured ULP, identical runs."""


@dataclass
class MachineReport:
    """One machine's audit: where it ran, what the machine is, and the judge's report."""

    name: str
    """The worker's host (or the worker's address, when every worker audits)."""
    workers: tuple[str, ...]
    """Every worker on that host; the first ran the audit."""
    fingerprint: dict[str, Any]
    """`fueltensor.fingerprint.machine()` on that worker, as a dict."""
    report: JudgeReport


@dataclass
class Difference:
    """One audit on which machines disagree: per machine, the value of one aspect."""

    label: str
    aspect: str
    values: dict[str, str]
    claims_bitwise: bool
    """The contract declares bit-identical results on the same hardware."""
    same_hardware: bool
    """Some machines with equal fingerprints are among those that disagree."""

    @property
    def breaks_claim(self) -> bool:
        """Bits differ between machines of equal fingerprint under a same-hardware claim."""
        return self.aspect == "bits" and self.claims_bitwise and self.same_hardware


@dataclass
class ClusterJudgeReport:
    """Every machine's audit and where the machines disagree."""

    machines: list[MachineReport]
    differences: list[Difference] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failures(self) -> list[tuple[str, str]]:
        """Every failing audit as (machine: label, why), then every broken same-hardware claim."""
        found = [
            (f"{m.name}: {label}", why) for m in self.machines for label, why in m.report.failures
        ]
        found += [
            (d.label, "bits differ between machines of equal fingerprint: " + _values(d))
            for d in self.differences
            if d.breaks_claim
        ]
        return found

    @property
    def ok(self) -> bool:
        """True when every machine's audit passed and no same-hardware claim broke."""
        return not self.failures

    def rows(self) -> list[tuple[str, ...]]:
        """The per-kernel table: each machine's measured ULP and digest, and the verdict."""
        first = self.machines[0].report.rows
        by_machine = [{a.label: a for a in m.report.rows} for m in self.machines]
        flagged: dict[str, list[str]] = {}
        for d in self.differences:
            flagged.setdefault(d.label, []).append(d.aspect)
        rows = []
        for a in first:
            cells = []
            for audits in by_machine:
                b = audits.get(a.label)
                cells.append("-" if b is None else f"{b.measured_ulp:g} ULP {b.digest[:10]}")
            aspects = flagged.get(a.label)
            rows.append((a.label, *cells, "differ: " + ", ".join(aspects) if aspects else "same"))
        return rows

    def header(self) -> tuple[str, ...]:
        """Column names of `rows()`."""
        return ("kernel", *(m.name for m in self.machines), "across machines")

    def summary(self) -> str:
        """One line: machines, audits, differences, broken claims, time."""
        audits = sum(len(m.report.rows) for m in self.machines)
        broken = sum(d.breaks_claim for d in self.differences)
        return (
            f"judge across {plural(len(self.machines), 'machine')}: {plural(audits, 'audit')}, "
            f"{plural(len(self.differences), 'difference')} between machines, "
            f"{plural(broken, 'broken same-hardware claim')}, {self.seconds:.1f} s"
        )

    def __str__(self) -> str:
        lines = [
            f"{m.name} ({plural(len(m.workers), 'worker')}): {_fingerprint(m)}"
            for m in self.machines
        ]
        lines += ["", text_table([self.header(), *self.rows()]), self.summary()]
        lines += [f"DIFFER {d.label} {d.aspect}: {_values(d)}" for d in self.differences]
        lines += [f"FAIL {label}: {why}" for label, why in self.failures]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"<ClusterJudgeReport: {plural(len(self.machines), 'machine')}, "
            f"{plural(len(self.differences), 'difference')}, "
            f"{plural(len(self.failures), 'failure')}>"
        )

    def to_dict(self) -> dict[str, Any]:
        """Everything measured on every machine, and the differences, as JSON-ready data."""
        return {
            "ok": self.ok,
            "seconds": self.seconds,
            "machines": [
                {
                    "name": m.name,
                    "workers": list(m.workers),
                    "fingerprint": m.fingerprint,
                    "report": m.report.to_dict(),
                }
                for m in self.machines
            ],
            "differences": [
                {
                    "kernel": d.label,
                    "aspect": d.aspect,
                    "values": d.values,
                    "claims_bitwise": d.claims_bitwise,
                    "same_hardware": d.same_hardware,
                    "breaks_claim": d.breaks_claim,
                }
                for d in self.differences
            ],
        }

    def to_markdown(self) -> str:
        """The per-kernel table as GitHub Markdown, machines and differences listed."""
        rows = [self.header(), *self.rows()]
        out = [f"- `{m.name}`: {_fingerprint(m)}" for m in self.machines]
        out += ["", *("| " + " | ".join(r) + " |" for r in rows)]
        out.insert(len(self.machines) + 2, "|" + "---|" * len(rows[0]))
        out += ["", self.summary()]
        out += [f"- **DIFFER** `{d.label}` {d.aspect}: {_values(d)}" for d in self.differences]
        out += [f"- **FAIL** `{k}`: {w}" for k, w in self.failures]
        return "\n".join(out) + "\n"


def _values(d: Difference) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.values.items())


def _fingerprint(m: MachineReport) -> str:
    f = m.fingerprint
    return f"{f.get('cpu', '?')}; kernels {f.get('kernels', '?')}; {f.get('libc', '?')}"


def _audit_here(
    kernels: list[str] | None, quick: bool, seed: int
) -> tuple[dict[str, Any], JudgeReport]:
    """Run on a worker: its fingerprint and the judge's report over its own registry."""
    from fueltensor.fingerprint import machine

    return machine().to_dict(), judge_here(None, kernels, quick, seed, progress=False)


def _machines(client: Client, every_worker: bool) -> dict[str, list[str]]:
    """Worker addresses grouped by host (or one group per worker), in address order. Asked of
    the scheduler itself: `client.scheduler_info` keeps its last answer when the query fails,
    which under load can be one without workers."""
    if client.scheduler is None:
        raise RuntimeError("the client is not connected to a scheduler: start it first")
    ask = client.scheduler.identity
    identity: dict[str, Any] = client.sync(ask, n_workers=-1)  # type: ignore[no-untyped-call]
    workers: dict[str, Any] = identity["workers"]
    if not workers:
        raise RuntimeError(
            "the cluster has no workers yet; start some, or call "
            "client.wait_for_workers(n) before judging"
        )
    groups: dict[str, list[str]] = {}
    for address in sorted(workers):
        groups.setdefault(address if every_worker else workers[address]["host"], []).append(address)
    return groups


def differences(machines: Sequence[MachineReport]) -> list[Difference]:
    """Every audit on which the machines disagree, per aspect, in the first machine's order."""
    reg = registry()
    found = []
    for a in machines[0].report.rows:
        audits = {m.name: {x.label: x for x in m.report.rows}.get(a.label) for m in machines}
        claims = a.kernel in reg and (
            reg[a.kernel].precision.bit_stable_on_same_hardware
            or "bitwise" in reg[a.kernel].determinism
        )
        for aspect in ASPECTS:
            values = {
                name: "missing" if b is None else _aspect(b, aspect) for name, b in audits.items()
            }
            if len(set(values.values())) < 2:
                continue
            same = _same_hardware_disagree(machines, values)
            found.append(Difference(a.label, aspect, values, bool(claims), same))
    return found


def _aspect(audit: Any, aspect: str) -> str:
    if aspect == "bits":
        return str(audit.digest[:16])
    if aspect == "precision":
        return f"{audit.measured_ulp:g} ULP"
    return f"{audit.identical_runs}/{audit.runs} identical"


def _same_hardware_disagree(machines: Iterable[MachineReport], values: dict[str, str]) -> bool:
    """True when two machines with equal fingerprints have different values."""
    seen: dict[str, str] = {}
    for m in machines:
        key = repr(sorted(m.fingerprint.items()))
        if key in seen and seen[key] != values[m.name]:
            return True
        seen.setdefault(key, values[m.name])
    return False


def judge_cluster(
    client: Client,
    kernels: Iterable[str] | None = None,
    quick: bool = False,
    seed: int = 0,
    every_worker: bool = False,
    timeout: float | None = None,
) -> ClusterJudgeReport:
    """Audit each worker's own registry on one worker per host (every worker when
    `every_worker`), tag each audit with its machine's fingerprint, and compare the machines.
    `timeout` (seconds) bounds the wait for the audits."""
    start = time.perf_counter()
    groups = _machines(client, every_worker)
    names = None if kernels is None else list(kernels)
    token = uuid.uuid4().hex[:8]
    futures = [
        client.submit(
            _audit_here,
            names,
            quick,
            seed,
            key=f"fueltensor-judge-{token}-{i}",
            workers=[addresses[0]],
            allow_other_workers=False,
            pure=False,
        )
        for i, addresses in enumerate(groups.values())
    ]
    results = [f.result(timeout=timeout) for f in futures]
    machines = [
        MachineReport(name, tuple(addresses), fingerprint, report)
        for (name, addresses), (fingerprint, report) in zip(groups.items(), results, strict=True)
    ]
    return ClusterJudgeReport(machines, differences(machines), time.perf_counter() - start)
