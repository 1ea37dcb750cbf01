"""A plan's rejected contracts as text: one line each, but one line for each group a reader
takes in at a glance (the contracts that join only where named, those a `use_backend` leaves
out, those not registrable here for one reason, those that return another dtype)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Final

from fueltensor.core.errors import plural
from fueltensor.registry import EXCLUDED, UNLINKED, WHEN_NAMED

OTHER_TARGET: Final = "returns "
"""How a rejection for returning a dtype the call did not ask for begins (`Request`): such
contracts are folded into one line of a plan's text."""


def rejection_lines(rejected: Mapping[str, tuple[str, ...]]) -> list[str]:
    """A plan's rejected contracts as text, one line each, but one line in all for the
    contracts that join only where named, by provider or by kernel (`Registry.excluded`), one
    for those whose providers `use_backend` leaves out, and one for those not registrable here
    for one reason (`UNLINKED`)."""
    lines: list[str] = []
    unjoined: Counter[tuple[str, str]] = Counter()
    excluded: Counter[str] = Counter()
    unlinked: dict[str, list[str]] = {}
    targets: list[str] = []
    for name, reasons in rejected.items():
        head, _, rest = reasons[0].partition(" ")
        who, _, tail = rest.partition(" ")
        when_named = tail == WHEN_NAMED.format(name=repr(who))
        if len(reasons) == 1 and head in ("provider", "kernel") and when_named:
            unjoined[head, who] += 1
        elif len(reasons) == 1 and head == "provider" and reasons[0] == f"provider {who}{EXCLUDED}":
            excluded[who] += 1
        elif len(reasons) == 1 and reasons[0].startswith(OTHER_TARGET):
            targets.append(f"{name} ({reasons[0].removeprefix(OTHER_TARGET).partition(';')[0]})")
        elif len(reasons) == 1 and reasons[0].startswith(UNLINKED):
            unlinked.setdefault(reasons[0], []).append(name)
        else:
            lines.append(f"  rejected {name}: {'; '.join(reasons)}")
    lines += [
        f"  {UNLINKED}{', '.join(names)}: {reason.removeprefix(UNLINKED)}"
        for reason, names in unlinked.items()
    ]
    if targets:
        lines.append(f"  returning another dtype: {', '.join(targets)}")
    if excluded:
        left = ", ".join(f"{who} ({plural(n, 'kernel')})" for who, n in excluded.items())
        lines.append(f"  excluded by use_backend: {left}")
    if unjoined:
        counts = ", ".join(
            who if head == "kernel" else f"{who} ({plural(n, 'kernel')})"
            for (head, who), n in unjoined.items()
        )
        lines.append(
            f"  not joined: {counts}: they join only where named: use_backend(NAME), "
            "compare_backends(..., NAME) or registry().joined(NAME)"
        )
    return lines
