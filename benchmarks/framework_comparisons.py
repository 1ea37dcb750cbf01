"""Write the frameworks' comparison contracts from what they do here: `python
benchmarks/framework_comparisons.py --write [--only numpy]` measures NumPy's, PyTorch's and JAX's
`<`, `<=`, `==`, `!=`, `>`, `>=` on every dtype and writes contracts/<provider>-comparison.md.

A comparison is exact or wrong, so there is no bound to measure: the script asks the judge's own
probes (`judge.semantics.observe` over the comparison cases: NaNs, signed zeros, infinities,
subnormals, and random operands through the position sweep) what the framework does, declares
what `infer` reads from them (subnormals kept or flushed), and leaves out a function at a dtype
where the framework breaks the op table's relation, which no declaration can change. Then
`fueltensor judge --provider <provider>` holds the document to it.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

import ml_dtypes
import numpy as np

import fueltensor as ft
from fueltensor.ops import COMPARISON_OPS, ContractOp
from fueltensor.registry import provider_environment
from fueltensor.tools.judge.semantics import findings, infer, observe

DTYPES = {"F32": np.dtype(np.float32), "F64": np.dtype(np.float64),
          "BF16": np.dtype(ml_dtypes.bfloat16), "F16": np.dtype(np.float16)}  # fmt: skip
BLURB = "the framework's own call; layouts as the framework takes them."
NOTES = (
    "a NaN operand gives the IEEE 754 result (false, but true for !=); -0 equals +0; subnormal "
    "operands compared {how}; each element depends only on its own operands."
)
SYMBOLS = {"less": "<", "less_equal": "<=", "equal": "==", "not_equal": "!=", "greater": ">",
           "greater_equal": ">="}  # fmt: skip


def entry(provider: str, row: ContractOp) -> str:
    """The provider's entry point of `row` (its providers module's names)."""
    return {
        "numpy": f"numpy.{row.host.__name__}",
        "torch": f"torch.{row.dunder}",
        "jax": f"jax.numpy.{row.name}",
    }[provider]


def front(provider: str) -> str:
    """The front matter of the provider's main document (one provider, one front matter)."""
    path = Path(__file__).resolve().parent.parent / "contracts" / f"{provider}.md"
    return path.read_text(encoding="utf-8").split("\n---\n", 1)[0] + "\n---\n"


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
    how = "as numbers" if subnormals == "kept" else "as zeros of their sign"
    return f"""
## {name}: {row.name} ({SYMBOLS[row.name]}), {code}

`out = lhs {SYMBOLS[row.name]} rhs` with the framework's broadcasting, a bool result.

```fkc
kernel: {name}
op_kind: {row.op_kind.value}
blurb: "{provider} {row.name} for {code}: {BLURB}"
backend: Cpu
kernel_source: "{source.group(1)}"
entry_point: "{entry(provider, row)}"
kernel_revision_hash: auto
accept:
  inputs:
    - name: lhs
      dtypes: [{code}]
      layout: {layout}
      rank: any
      shape_constraint: broadcast_to=rhs
    - name: rhs
      dtypes: [{code}]
      layout: {layout}
      rank: any
      shape_constraint: broadcast_to=lhs
  op_params: {{variant: None}}
return:
  outputs:
    - name: out
      dtype_rule: fixed(BOOL)
      shape_rule: broadcast(lhs, rhs)
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
  bytes_moved: "lhs_count * lhs_bytes + rhs_count * rhs_bytes + 2 * n"
  memory: {{device_bytes: 0, host_bytes: "2 * n", disk_bytes: 0}}
precision:
  bit_stable_on_same_hardware: true
  max_ulp: 0
  max_relative: ~
  max_absolute: ~
  audited: true
  notes: "exact: the relation of the operands, measured on {where}."
determinism: same_hardware_bitwise
semantics:
  source: [measurement]
  subnormals: {subnormals}
  position: invariant
  notes: "Measured on {where}: {NOTES.format(how=how)}"
```
"""


INTRO = """# {provider}: comparisons

The framework's `<`, `<=`, `==`, `!=`, `>`, `>=` (`{example}` ...) as contracts of the same
provider as [`{provider}.md`](./{provider}.md) (its front matter), one per relation and dtype,
written by `benchmarks/framework_comparisons.py --write` from what the judge's probes observed on
{where}: a bool result, exact (`max_ulp: 0`), subnormals as the probes found them. Where the
framework breaks the op table's relation, no contract:

{undeclared}
"""


def write(provider: str) -> None:
    """Probe `provider`'s comparisons and write contracts/<provider>-comparison.md."""
    path = Path(__file__).resolve().parent.parent / "contracts" / f"{provider}-comparison.md"
    env = provider_environment(provider)
    assert env is not None
    where = f"{env.framework}, {env.isa}"
    todo = [(row, code) for row in COMPARISON_OPS for code in DTYPES]
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
            undeclared.append(f"- `{entry(provider, row)}` for {code}: {why}")
            print(name, "not declared:", why, flush=True)
            continue
        final.append(contract_text(provider, row, code, sem.subnormals, where))
        print(name, sem.subnormals, flush=True)
    example = entry(provider, COMPARISON_OPS[0])
    intro = INTRO.format(
        provider=provider,
        example=example,
        where=where,
        undeclared="\n".join(undeclared) or "- none",
    )
    path.write_text(front(provider) + intro + "".join(final), encoding="utf-8")


def command(doc: str, document: str, write: Callable[[str], None], argv: list[str] | None) -> int:
    """The framework scripts' command line (described by `doc`'s first line): `--write` probes
    each provider (numpy, torch, jax, or those named by `--only`) and has `write` write its
    contracts/<provider>-<document>.md."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--only", action="append", default=None)
    p.add_argument("--write", action="store_true", help=f"write contracts/<provider>-{document}.md")
    args = p.parse_args(argv)
    if not args.write:
        p.error("nothing to do: pass --write")
    for provider in args.only or ("numpy", "torch", "jax"):
        write(provider)
    return 0


def main(argv: list[str] | None = None) -> int:
    return command(__doc__, "comparison", write, argv)


if __name__ == "__main__":
    sys.exit(main())
