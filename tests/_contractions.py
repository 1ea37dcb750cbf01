"""The judge's contraction tests' documents (tests/tools/test_judge_contractions.py,
tests/tools/test_matmul_cheats.py): a matmul contract of the test provider per kernel, judged
quickly, and a kernel's failures read from the report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import fueltensor as ft
from fueltensor.tools.judge import JudgeReport, judge

PROVIDER = "test-contractions"
OP_KIND = "MatmulContract"
ANY_LAYOUT = (
    "{contiguous: allowed, strided: allowed, broadcast_stride0: allowed, "
    "start_offset: allowed, reverse_strides: allowed}"
)
SEQUENTIAL = "accumulator: F32, order: sequential"
Kernel = Callable[..., None]


def document(
    contract_text: Callable[..., str],
    kernel: str,
    op_params: str,
    dtypes: str,
    subnormals: str | None = None,
) -> str:
    """A matmul contract of the test provider: a and b of any layout and rank, the rule
    matmul(a, b), the given op_params and dtypes, claiming threads, layout and batch, declaring
    `subnormals` where given."""
    text = contract_text(provider=PROVIDER, kernel=kernel, op_kind=OP_KIND)
    for other in ("a", "b"):
        text = text.replace(f"      shape_constraint: same_as={other}\n", "")
    text = text.replace("shape_rule: same_as(a)", "shape_rule: matmul(a, b)")
    text = text.replace("dtypes: [F32]", f"dtypes: [{dtypes}]")
    text = text.replace("  op_params: {variant: None}", f"  op_params: {{{op_params}}}")
    lines, out, skip = text.split("\n"), [], False
    for line in lines:
        if line.startswith("      layout:"):
            out.append(f"      layout: {ANY_LAYOUT}")
            skip = True
        elif skip and line.startswith("      rank:"):
            skip = False
            out.append("      rank: any")
        elif not skip:
            out.append(line)
    text = "\n".join(out)
    semantics = "semantics:\n  source: [documentation]\n  invariance: [threads, layout, batch]\n"
    if subnormals is not None:
        semantics += f"  subnormals: {subnormals}\n"
    end = "determinism: same_hardware_bitwise\n"
    return text.replace(end, end + semantics)


def judged(
    contract_text: Callable[..., str],
    write: Callable[..., Path],
    kernels: dict[str, tuple[Kernel, str, str]],
    subnormals: dict[str, str] | None = None,
) -> JudgeReport:
    """The quick judge of one document of `kernels` (name: kernel, op_params, dtypes), each
    declaring the `subnormals` given for its name."""
    ft.register_provider(PROVIDER, {f"tests::{name}": k for name, (k, _, _) in kernels.items()})
    flush = subnormals or {}
    docs = [document(contract_text, n, p, d, flush.get(n)) for n, (_, p, d) in kernels.items()]
    head, *rest = docs
    reg = ft.Registry.from_paths([write(head + "".join(d[d.index("\n## ") :] for d in rest))])
    return judge(reg, quick=True, progress=False)


def failures(report: JudgeReport, kernel: str) -> list[str]:
    """The judge's failures of `kernel` (its one row)."""
    (row,) = [a for a in report.rows if a.kernel == kernel]
    return row.failures
