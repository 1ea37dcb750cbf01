"""Planning over the providers a caller names, those that join dispatch only where they are
named (`dispatch: when_named`: the framework providers) included: how `compare_backends` sees
them, while dispatch's own planning never does."""

from __future__ import annotations

from fueltensor.engine.planner import Plan, Planning, plan_contracts
from fueltensor.registry import Registry


def with_named(
    planning: Planning, plan: Plan, registry: Registry, providers: frozenset[str] | None
) -> Planning:
    """`planning` of the operation `plan` ran, or, when `providers` names a provider or a
    contract that joins dispatch only where it is named (`dispatch: when_named`), the same
    operation planned over exactly `providers`: how `compare_backends("cpu", "torch")` sees
    PyTorch's kernels, and `compare_backends("cpu", "rem_f32")` the seeds' formula. The plan's
    result shape goes with it: a reduction's is not its operand's."""
    named = providers is not None and (
        any(p.name in providers and not registry.joins(p) for p in registry.providers)
        or not providers.isdisjoint(registry.named_contracts())
    )
    if not named or plan.op_kind is None:
        return planning
    return plan_contracts(
        plan.op,
        plan.op_kind,
        plan.operands,
        registry,
        providers,
        plan.params,
        to=planning.to,
        fixed=planning.fixed,
        request=planning.request,
        out_shape=plan.out_shape,
    )
