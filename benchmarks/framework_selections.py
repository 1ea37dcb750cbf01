"""Write the frameworks' `where` and `clip` contracts from what they do here: `python
benchmarks/framework_selections.py --write [--only numpy]` measures NumPy's, PyTorch's and JAX's
`where(condition, x1, x2)` and `clip(x, min, max)` on every float dtype and writes
contracts/<provider>-selection.md.

Both are exact or wrong, so there is no bound to measure: the script asks the judge's own probes
(`judge.semantics.observe` over the rows' cases: NaNs, the two zeros, low > high, subnormals,
and random operands through the position sweep) what the framework does, declares what `infer`
reads from them (clip's NaN rule and ±0 tie, subnormals kept or flushed), and leaves out a dtype
where the framework breaks what no declaration can change (where's bits, clip's low > high).
Then `fueltensor judge --provider <provider>` holds the document to it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from framework_comparisons import BLURB, DTYPES, command, front

import fueltensor as ft
from fueltensor.families import TRAITS
from fueltensor.fkc.semantics import Semantics
from fueltensor.ops import TERNARY_OPS, ContractOp
from fueltensor.registry import provider_environment
from fueltensor.tools.judge.semantics import findings, infer, observe

NOTES = {
    "where": "each lane is x1's bits where the condition holds, else x2's (a NaN's payload, sign "
    "and signalling bit kept; -0 stays -0)",
    "clip": "minimum(maximum(x, min), max), with the NaN rule and the ±0 tie declared above (a "
    "NaN's `operand` lhs: the first NaN of x, min, max; rhs: the last), max where min > max",
}
"""What each row's contracts say it does, beside what was measured."""
POSITION = {
    "invariant": "each element depends only on its own operands.",
    "nan_bits": "a NaN result's bits depend on where the element sits (a vector body and a "
    "scalar tail make it differently); every other result does not.",
    "dependent": "the result depends on where the element sits: a vector body and a scalar "
    "tail apply different NaN and tie rules (both within those declared).",
}
"""What a measured `position` says."""
ENTRY = {"numpy": "numpy.{}", "torch": "torch.{}", "jax": "jax.numpy.{}"}
"""Each provider's entry point of a selection row (its providers module's names)."""


def rules(sem: Semantics) -> str:
    """The semantics lines of a measured NaN rule and ±0 tie (none where not measured)."""
    lines = ""
    if sem.nan is not None:
        n = sem.nan
        lines += (
            f"  nan: {{operand: {n.operand}, result: [{', '.join(n.result)}], sign: {n.sign}}}\n"
        )
    if sem.zero_tie is not None:
        lines += f"  zero_tie: {sem.zero_tie}\n"
    return lines


def contract_text(provider: str, row: ContractOp, code: str, sem: Semantics, where: str) -> str:
    """One contract: `row` of `provider` at dtype `code`, its measured semantics `sem`."""
    source = re.search(r'kernel_source: "([^"]+)"', front(provider))
    assert source is not None
    reverse = "rejected" if provider == "torch" else "allowed"  # PyTorch has no negative strides
    layout = (
        "{contiguous: allowed, strided: allowed, broadcast_stride0: allowed, start_offset: "
        f"allowed, reverse_strides: {reverse}}}"
    )
    name, bits = f"{provider}_{row.kernel_op}_{code.lower()}", 8 * DTYPES[code].itemsize
    names, fixed = TRAITS[row.family].operands, dict(TRAITS[row.family].fixed)
    inputs = "".join(
        f"""
    - name: {n}
      dtypes: [{fixed.get(n, code)}]
      layout: {layout}
      rank: any
      shape_constraint: broadcast_to={names[(i + 1) % 3]}"""
        for i, n in enumerate(names)
    )
    first = next(n for n in names if n not in fixed)
    how = "kept as numbers" if sem.subnormals == "kept" else "read as zeros of their sign"
    counts = " + ".join(f"{n}_count * {n}_bytes" for n in names)
    placed = POSITION[sem.position or "invariant"]
    return f"""
## {name}: {row.name}, {code}

`out = {row.name}({", ".join(names)})` with the framework's broadcasting, one operand's bits.

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
      dtype_rule: passthrough({first})
      shape_rule: broadcast({", ".join(names)})
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
  bytes_moved: "{counts} + n * {first}_bytes"
  memory: {{device_bytes: 0, host_bytes: "n * {first}_bytes", disk_bytes: 0}}
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
{rules(sem)}  subnormals: {sem.subnormals}
  position: {sem.position or "invariant"}
  notes: "Measured on {where}: {NOTES[row.name]}; subnormal operands {how}; {placed}"
```
"""


INTRO = """# {provider}: where and clip

The framework's `where(condition, x1, x2)` and `clip(x, min, max)` (`{example}` ...) as
contracts of the same provider as [`{provider}.md`](./{provider}.md) (its front matter), one per
function and dtype, written by `benchmarks/framework_selections.py --write` from what the
judge's probes observed on {where}: the bits of one operand, exact (`max_ulp: 0`), clip's NaN
rule and ±0 tie and the subnormals as the probes found them. Where the framework breaks what no
declaration changes, no contract:

{undeclared}
"""


def write(provider: str) -> None:
    """Probe `provider`'s where and write contracts/<provider>-selection.md."""
    path = Path(__file__).resolve().parent.parent / "contracts" / f"{provider}-selection.md"
    env = provider_environment(provider)
    assert env is not None
    where = f"{env.framework}, {env.isa}"
    todo = [(row, code) for row in TERNARY_OPS for code in DTYPES]
    kept = Semantics(source=("measurement",), subnormals="kept")
    draft = front(provider) + "".join(contract_text(provider, r, c, kept, where) for r, c in todo)
    path.write_text(draft, encoding="utf-8")
    reg = ft.Registry.from_paths([path]).joined(provider)
    final, undeclared = [], []
    for row, code in todo:
        name = f"{provider}_{row.kernel_op}_{code.lower()}"
        try:
            observed = observe(reg[name], reg.kernel(name), DTYPES[code], "quick")
        except ValueError as e:  # NumPy's clip of bfloat16 returns float32
            undeclared.append(f"- `{ENTRY[provider].format(row.name)}` for {code}: {e}")
            print(name, "not declared:", e, flush=True)
            continue
        sem = infer(observed)
        broken = findings(sem, observed)
        if broken or sem.subnormals is None:
            why = broken[0] if broken else "subnormals neither kept nor flushed"
            undeclared.append(f"- `{ENTRY[provider].format(row.name)}` for {code}: {why}")
            print(name, "not declared:", why, flush=True)
            continue
        final.append(contract_text(provider, row, code, sem, where))
        print(name, sem.subnormals, sem.nan, sem.zero_tie, flush=True)
    intro = INTRO.format(
        provider=provider,
        example=ENTRY[provider].format(TERNARY_OPS[0].name),
        where=where,
        undeclared="\n".join(undeclared) or "- none",
    )
    path.write_text(front(provider) + intro + "".join(final), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    return command(__doc__, "selection", write, argv)


if __name__ == "__main__":
    sys.exit(main())
