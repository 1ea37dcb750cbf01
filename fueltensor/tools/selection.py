"""Which kernels `compare_backends` runs beside the default one: the providers and kernels a
user names, checked against the registry, and the plans of an operation they admit."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fueltensor.engine.backends import _resolve
from fueltensor.engine.planner import Plan, Planning, Request, plan_contracts
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


def other_rules(planning: Planning, plan: Plan, selection: Selection, reg: Registry) -> list[Plan]:
    """A cast's plans on each selected provider with no contract of the rule the call asks
    for (`planning.request`), under the rule that provider declares instead: PyTorch's casts
    to float8_e4m3fn saturate, and `compare_backends("cpu", "torch")` around a cast that asks
    for inf or NaN shows the lanes where that gives other bits."""
    request = planning.request
    if request is None or not request.op_params or plan.op_kind is None:
        return []
    loose = plan_contracts(
        plan.op,
        plan.op_kind,
        plan.operands,
        reg,
        selection.named(reg),
        plan.params,
        to=planning.to,
        fixed=planning.fixed,
        request=Request(request.dtype),
        out_shape=plan.out_shape,
    )
    served = {plan.provider} | {p.provider for p in alternatives(planning, plan, selection)}
    out = []
    for p in loose.viable:
        if p.kernel is not None and p.provider not in served and selection.admits(p):
            served.add(p.provider)
            out.append(p)
    return out


def rule_note(planning: Planning, other: Plan) -> str:
    """How `other`'s contract's declared rule differs from what the call asks for ("" where it
    does not): the note of its comparison row."""
    assert other.kernel is not None
    asked = planning.request.op_params if planning.request is not None else ()
    off = [
        f"{key} {other.kernel.op_params.get(key)} where the call asks for {want}"
        for key, want in asked
        if other.kernel.op_params.get(key) != want
    ]
    return f"{other.kernel.name} declares {', '.join(off)}" if off else ""
