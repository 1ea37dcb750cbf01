"""The cluster comparison of the judge, from hand-made machine reports (no Dask needed).

`tools.cluster.differences` compares the audits machines sent back; a contract that declares
`bit_stable_on_same_hardware` breaks its claim when two machines of equal fingerprint disagree
on the bits (a failure of the whole report), while bits that differ across different hardware,
or precision and determinism that differ anywhere, are findings reported with the machines'
values. test_dask.py runs the same comparison on a real cluster; these run everywhere.
"""

from __future__ import annotations

from typing import Any

import fueltensor as ft
from fueltensor.tools.cluster import ClusterJudgeReport, MachineReport, differences
from fueltensor.tools.judge import Audit, JudgeReport

CLAIMING, UNCLAIMED = "add_f32", "my_add_f32"
"""A bundled kernel that claims same-hardware bitwise results, and one no registry knows."""
ONE, TWO = "1" * 64, "2" * 64


def audit(kernel: str = CLAIMING, digest: str = ONE, **measured: Any) -> Audit:
    """An audit of `kernel` at f32 with the given digest and measurements."""
    made = Audit(kernel, "fuel-cpu-backend", "AddElementwise", "F32", kernel, "", 0.0)
    made.digest = digest
    made.identical_runs = made.runs
    for name, value in measured.items():
        setattr(made, name, value)
    return made


def machine(name: str, cpu: str, *audits: Audit) -> MachineReport:
    """A machine of fingerprint `cpu` that sent back `audits` (one claiming audit by default)."""
    rows = list(audits) or [audit()]
    return MachineReport(name, (name,), {"cpu": cpu}, JudgeReport(rows, True, 1.0, 0.1))


def report(*machines: MachineReport) -> ClusterJudgeReport:
    """The cluster report of `machines`, as `judge_cluster` assembles it."""
    return ClusterJudgeReport(list(machines), differences(machines), 0.5)


def test_the_bundled_kernel_claims_same_hardware_bits() -> None:
    """The premise of the tests below, read from the contract rather than assumed."""
    assert ft.registry()[CLAIMING].precision.bit_stable_on_same_hardware
    assert CLAIMING in ft.registry() and UNCLAIMED not in ft.registry()


def test_a_same_hardware_digest_mismatch_breaks_the_claim_and_fails() -> None:
    a, b = machine("a", "X", audit(digest=ONE)), machine("b", "X", audit(digest=TWO))
    found = differences([a, b])
    assert [(d.label, d.aspect, d.same_hardware, d.breaks_claim) for d in found] == [
        (CLAIMING, "bits", True, True)
    ]
    assert found[0].values == {"a": ONE[:16], "b": TWO[:16]}
    cluster = report(a, b)
    assert not cluster.ok
    assert cluster.failures == [
        (CLAIMING, f"bits differ between machines of equal fingerprint: a={ONE[:16]}, b={TWO[:16]}")
    ]
    assert f"FAIL {CLAIMING}" in str(cluster) and "1 broken" in cluster.summary()
    assert cluster.to_dict()["differences"][0]["breaks_claim"] is True


def test_a_digest_mismatch_across_hardware_is_a_finding_not_a_failure() -> None:
    cluster = report(machine("a", "X", audit(digest=ONE)), machine("b", "Y", audit(digest=TWO)))
    assert [(d.aspect, d.same_hardware, d.breaks_claim) for d in cluster.differences] == [
        ("bits", False, False)
    ]
    assert cluster.ok and cluster.failures == []
    assert f"DIFFER {CLAIMING} bits" in str(cluster) and "0 broken" in cluster.summary()


def test_one_pair_of_equal_machines_among_others_is_enough_to_break_it() -> None:
    machines = [
        machine("a", "X", audit(digest=ONE)),
        machine("b", "Y", audit(digest=ONE)),
        machine("c", "X", audit(digest=TWO)),
    ]
    assert [d.breaks_claim for d in differences(machines)] == [True]
    agreeing = [machine("a", "X"), machine("b", "X"), machine("c", "Y", audit(digest=TWO))]
    assert [d.breaks_claim for d in differences(agreeing)] == [False]


def test_a_kernel_without_the_claim_only_reports_differing_bits() -> None:
    a = machine("a", "X", audit(UNCLAIMED, ONE))
    b = machine("b", "X", audit(UNCLAIMED, TWO))
    found = differences([a, b])
    assert [(d.claims_bitwise, d.same_hardware, d.breaks_claim) for d in found] == [
        (False, True, False)
    ]
    assert report(a, b).ok


def test_precision_and_determinism_differences_are_reported_never_failed() -> None:
    runs = audit().runs
    a = machine("a", "X", audit())
    b = machine("b", "X", audit(measured_ulp=0.5, identical_runs=1))
    cluster = report(a, b)
    assert [(d.aspect, d.values, d.breaks_claim) for d in cluster.differences] == [
        ("precision", {"a": "0 ULP", "b": "0.5 ULP"}, False),
        ("determinism", {"a": f"{runs}/{runs} identical", "b": f"1/{runs} identical"}, False),
    ]
    assert cluster.ok


def test_equal_machines_have_no_differences() -> None:
    cluster = report(machine("a", "X"), machine("b", "Y"), machine("c", "X"))
    assert cluster.differences == [] and cluster.ok
    assert [row[-1] for row in cluster.rows()] == ["same"]


def test_an_audit_missing_on_one_machine_is_a_difference() -> None:
    other = audit("sub_f32", ONE)
    found = differences([machine("a", "X", audit(), other), machine("b", "X", audit())])
    assert [(d.label, d.aspect, d.values["b"]) for d in found] == [
        ("sub_f32", aspect, "missing") for aspect in ("bits", "precision", "determinism")
    ]


def test_a_machine_whose_own_audit_failed_fails_the_cluster_report() -> None:
    bad = audit()
    bad.failures.append("measured 2 ULP, declared 0")
    cluster = report(machine("a", "X"), machine("b", "X", bad))
    assert cluster.differences == []
    assert cluster.failures == [(f"b: {CLAIMING}", "measured 2 ULP, declared 0")]
    assert not cluster.ok
