"""Which kernels `compare_backends` runs beside the default one: the providers and kernels a
user names, checked against the registry, and the plans of an operation they admit."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fueltensor.engine.backends import _resolve
from fueltensor.engine.planner import Plan, Planning
from fueltensor.registry import Registry


@dataclass(frozen=True)
class Selection:
    """Which kernels `compare_backends` runs beside the default one: every admissible kernel
    of `providers` and the kernels named in `kernels` (both None: every admissible kernel)."""

    providers: frozenset[str] | None
    kernels: frozenset[str] | None

    def named(self, reg: Registry) -> frozenset[str] | None:
        """The providers named, those of the kernels named included (None: none named)."""
        if self.providers is None and self.kernels is None:
            return None
        return (self.providers or frozenset()) | {reg[k].provider.name for k in self.kernels or ()}

    def admits(self, plan: Plan) -> bool:
        """True when `plan`'s kernel is one this selection compares."""
        assert plan.kernel is not None
        if self.providers is None and self.kernels is None:
            return True
        return plan.provider in (self.providers or ()) or plan.kernel.name in (self.kernels or ())


def select(reg: Registry, names: Sequence[str], kernels: Iterable[str] | None) -> Selection:
    """The selection of `compare_backends(*names, kernels=...)`, every name checked: a provider
    (or alias) the registry has, a kernel it holds that dispatch may run."""
    providers = frozenset().union(*(_resolve(reg, n) for n in names)) if names else None
    if kernels is None:
        return Selection(providers, None)
    chosen = frozenset([kernels] if isinstance(kernels, str) else kernels)
    for name in sorted(chosen):
        try:
            contract = reg[name]
        except KeyError as e:
            raise ValueError(f"compare_backends(kernels=...): {e.args[0]}") from None
        if not contract.registrable:
            raise ValueError(f"compare_backends: {name} is describe-only (registrable: false)")
    return Selection(providers, chosen)


def alternatives(planning: Planning, plan: Plan, selection: Selection) -> list[Plan]:
    """Every viable plan the selection admits, other than the one that ran (kernels of the same
    provider included)."""
    assert plan.kernel is not None
    name = plan.kernel.name
    return [
        p for p in planning.viable if p.kernel and p.kernel.name != name and selection.admits(p)
    ]
