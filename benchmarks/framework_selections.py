"""Write the frameworks' `where` contracts from what they do here: `python
benchmarks/framework_selections.py --write [--only numpy]` measures NumPy's, PyTorch's and JAX's
`where(condition, x1, x2)` on every float dtype and writes contracts/<provider>-selection.md.

A selection is exact or wrong, so there is no bound to measure: the script asks the judge's own
probes (`judge.semantics.observe` over where's cases: NaNs moved by each side of the condition,
the two zeros, subnormals, and random operands through the position sweep) what the framework
does, declares what `infer` reads from them (subnormals kept or flushed), and leaves out a dtype
where the framework breaks the formula (a NaN quieted, a zero's sign lost), which no declaration
can change. Then `fueltensor judge --provider <provider>` holds the document to it. `clip` is
not declared: the frameworks' NaN and ±0 rules differ from the clamp family's one rule (see
docs/support.md).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from framework_comparisons import BLURB, DTYPES, front

import fueltensor as ft
from fueltensor.ops import SELECT_OPS, ContractOp
from fueltensor.registry import provider_environment
from fueltensor.tools.judge.semantics import findings, infer, observe

NOTES = (
    "each lane is x1's bits where the condition holds, else x2's (a NaN's payload, sign and "
    "signalling bit kept; -0 stays -0); subnormal operands {how}; each element depends only on "
    "its own operands."
)
ENTRY = {"numpy": "numpy.{}", "torch": "torch.{}", "jax": "jax.numpy.{}"}
"""Each provider's entry point of a selection row (its providers module's names)."""


def contract_text(provider: str, row: ContractOp, code: str, subnormals: str, where: str) -> str:
    """One contract: `row` of `provider` at dtype `code`."""
    source = re.search(r'kernel_source: "([^"]+)"', front(provider))
    assert source is not None
    reverse = "rejected" if provider == "torch" else "allowed"  # PyTorch has no negative strides
    layout = (
        "{contiguous: allowed, strided: allowed, broadcast_stride0: allowed, start_offset: "
        f"allowed, reverse_strides: {reverse}}}"
    )
    name, bits = f"{provider}_{row.kernel_op}_{code.lower()}", 8 * DTYPES[code].itemsize
    inputs = "".join(
        f"""
    - name: {n}
      dtypes: [{d}]
      layout: {layout}
      rank: any
      shape_constraint: broadcast_to={other}"""
        for n, d, other in (("condition", "BOOL", "x1"), ("x1", code, "x2"), ("x2", code, "x1"))
    )
    how = "moved as numbers" if subnormals == "kept" else "read as zeros of their sign"
    return f"""
## {name}: {row.name}, {code}

`out = x1 where condition else x2` with the framework's broadcasting, bit for bit.

```fkc
kernel: {name}
op_kind: {row.op_kind.value}
blurb: "{provider} {row.name} for {code}: {BLURB}"
backend: Cpu
kernel_source: "{source.group(1)}"
entry_point: "{ENTRY[provider].format(row.name)}"
kernel_revision_hash: auto
accept:
  inputs:{inputs}
  op_params: {{variant: None}}
return:
  outputs:
    - name: out
      dtype_rule: passthrough(x1)
      shape_rule: broadcast(condition, x1, x2)
      layout_guarantee: contiguous
      aliasing: none
caps:
  awkward_layout_strategy: requires_contiguous
  in_place: false
  alignment_bytes: 64
  access_granularity_bits: {bits}
cost:
  provenance: author_estimate
  class: cheap_elementwise
  flops: "n"
  bytes_moved: "condition_count + x1_count * x1_bytes + x2_count * x2_bytes + n * x1_bytes"
  memory: {{device_bytes: 0, host_bytes: "n * x1_bytes", disk_bytes: 0}}
precision:
  bit_stable_on_same_hardware: true
  max_ulp: 0
  max_relative: ~
  max_absolute: ~
  audited: true
  notes: "exact: the bits of one operand, measured on {where}."
determinism: same_hardware_bitwise
semantics:
  source: [measurement]
  subnormals: {subnormals}
  position: invariant
  notes: "Measured on {where}: {NOTES.format(how=how)}"
```
"""


INTRO = """# {provider}: where

The framework's `where(condition, x1, x2)` (`{example}`) as contracts of the same provider as
[`{provider}.md`](./{provider}.md) (its front matter), one per dtype, written by
`benchmarks/framework_selections.py --write` from what the judge's probes observed on {where}:
the bits of one operand, exact (`max_ulp: 0`), subnormals as the probes found them. Where the
framework breaks the formula, no contract:

{undeclared}
"""


def write(provider: str) -> None:
    """Probe `provider`'s where and write contracts/<provider>-selection.md."""
    path = Path(__file__).resolve().parent.parent / "contracts" / f"{provider}-selection.md"
    env = provider_environment(provider)
    assert env is not None
    where = f"{env.framework}, {env.isa}"
    todo = [(row, code) for row in SELECT_OPS for code in DTYPES]
    draft = front(provider) + "".join(contract_text(provider, r, c, "kept", where) for r, c in todo)
    path.write_text(draft, encoding="utf-8")
    reg = ft.Registry.from_paths([path]).joined(provider)
    final, undeclared = [], []
    for row, code in todo:
        name = f"{provider}_{row.kernel_op}_{code.lower()}"
        observed = observe(reg[name], reg.kernel(name), DTYPES[code], "quick")
        sem = infer(observed)
        broken = findings(sem, observed)
        if broken or sem.subnormals is None:
            why = broken[0] if broken else "subnormals neither kept nor flushed"
            undeclared.append(f"- `{ENTRY[provider].format(row.name)}` for {code}: {why}")
            print(name, "not declared:", why, flush=True)
            continue
        final.append(contract_text(provider, row, code, sem.subnormals, where))
        print(name, sem.subnormals, flush=True)
    intro = INTRO.format(
        provider=provider,
        example=ENTRY[provider].format(SELECT_OPS[0].name),
        where=where,
        undeclared="\n".join(undeclared) or "- none",
    )
    path.write_text(front(provider) + intro + "".join(final), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", action="append", default=None)
    p.add_argument("--write", action="store_true", help="write contracts/<provider>-selection.md")
    args = p.parse_args(argv)
    if not args.write:
        p.error("nothing to do: pass --write")
    for provider in args.only or ("numpy", "torch", "jax"):
        write(provider)
    return 0


if __name__ == "__main__":
    sys.exit(main())
