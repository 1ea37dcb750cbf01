"""Write the cast contracts of fueltensor's own providers: contracts/fuel-cpu-backend-cast.md
(the compiled kernels, `ext/src/native/cast.c`) and contracts/fuel-reference-backend-cast.md (the
oracle, `kernels/casting.py`), one contract per source, target and overflow rule
(`kernels.casting.CASTS`: a saturating one only where the source can overflow the target).

The documents are data the registry reads; this script only spares writing 45 near-identical
sections a provider by hand. `python benchmarks/cast_contracts.py --write` rewrites them; without
`--write` it prints what differs (`documents.settle`, shared with the frameworks' writers).
`section` is also the frameworks' cast contracts' template (framework_casts.py --write).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Final

from documents import contract_path, settle

from fueltensor.core import dtypes as _dtypes
from fueltensor.core.dtypes import DType, from_numpy
from fueltensor.families import CAST_RULES
from fueltensor.kernels.casting import CASTS, ORACLE_PREFIX, kernel_name
from fueltensor.ops import CAST_OP

ROUNDING: Final = CAST_RULES["rounding"][0]
INF_OR_NAN, SATURATE = CAST_RULES["overflow"]

PROVIDERS: Final = {
    "fuel-cpu-backend": (
        "portable-cpu",
        "fuel_cpu_backend::fkc::ENTRY_POINTS",
        "fuel_cpu_backend::byte_kernels::",
        "",
    ),
    "fuel-reference-backend": (
        "reference-oracle",
        "fuel_reference_backend::fkc::ENTRY_POINTS",
        "fuel_reference_backend::ops::",
        ORACLE_PREFIX,
    ),
}
"""provider -> (kernel_source, link_registry, entry-point prefix, kernel-name prefix)."""

INTROS: Final = {
    "fuel-cpu-backend": """# fuel-cpu-backend: casts between the float formats

`astype` between F64, F32, BF16, F16 and the OCP 8-bit formats F8_E4M3FN and F8_E5M2: one
contract per source, target and overflow rule, named `cast_<source>_<target>` (`_sat`:
saturating, only where the source can overflow the target). fueltensor's own C kernels
(`fueltensor/ext/src/native/cast.c`): float32 to and from bfloat16 and float16 in vector
registers on every instruction-set body (F16C's conversion on AVX2, whose rounding is encoded
in the instruction, never MXCSR's), every other pair through one routine on the bit fields.

**Compiled only**, as the unary kernels: where the compiled extension is not built or
`FUELTENSOR_PURE_NUMPY=1` is set, none is registrable and the oracle
(contracts/fuel-reference-backend-cast.md) serves the casts.
""",
    "fuel-reference-backend": """# fuel-reference-backend: casts between the float formats

The oracle's casts, `ref_cast_<source>_<target>` (`_sat`: saturating): the same rule as
fuel-cpu-backend's (contracts/fuel-cpu-backend-cast.md),
computed by its own code on the bit fields with NumPy integer arithmetic
(`fueltensor/kernels/casting.py`), never through NumPy's, ml_dtypes' or the CPU's conversions,
which are providers compared against it.
""",
}

LAYOUT: Final = (
    "{contiguous: required, strided: rejected, broadcast_stride0: rejected, "
    "start_offset: rejected, reverse_strides: rejected}"
)
LINK_NOTE: Final = "documentation only: kernels link through fueltensor's ENTRY_POINTS maps"
NOTES: Final = (
    "A NaN keeps its sign and comes out quiet with its payload's high bits (F8_E4M3FN: its one "
    "NaN of that sign). Beyond the largest finite value, an infinity included: {beyond}. "
    "Subnormal inputs and results are numbers."
)
RULE_TEXT: Final = """
**Numerics, once for all** (docs/casts.md). The source's exact value is rounded **once** to
nearest, ties to even, into the target (never through an intermediate format: float64 to
bfloat16 is not float64 to float32 to bfloat16), with gradual underflow: subnormal inputs are
numbers, subnormal results are kept, nothing is flushed. Exact (`max_ulp: 0`).
- **Overflow** (`op_params.overflow`): `inf_or_nan`, a rounded result beyond the target's
  largest finite value, or an infinity, gives the infinity of its sign, and in F8_E4M3FN, which
  has none, its NaN of that sign (0x7F / 0xFF), as ml_dtypes does; `saturate`
  (`astype(x, dtype, saturate=True)`), every such magnitude, infinities included, gives the
  largest finite value of its sign (448 for F8_E4M3FN, 57344 for F8_E5M2, 65504 for F16), as
  PTX's `.satfinite` conversions do.
- **NaN**: the sign kept, quieted, with the high bits of the payload (the fraction shifted to
  the target's width, then the quiet bit set); F8_E4M3FN has one NaN per sign.
- **Position**: each element from its own input alone.

**Layout, output, cost.** One input `x`, dense (the planner makes any other view dense first);
the output, a fresh contiguous buffer of x's shape and the target dtype. One read and one write
per element: `bytes_moved = n * (x_bytes + dtype_bytes)`.
"""


def section(
    name: str,
    src: DType,
    dst: DType,
    overflow: str,
    *,
    head: str,
    entry: str,
    precision: str,
    semantics: str,
    cost: str = "n * (x_bytes + dtype_bytes)",
) -> str:
    """One cast contract's section: heading, a line of prose (`head`: the kernel source, the
    blurb), the fkc block with `precision`'s notes and the `semantics` lines under it."""
    source, blurb = head.split("\n", 1)
    return f"""
## {name}: {src.name} to {dst.name}, overflow {overflow}

{blurb}

```fkc
kernel: {name}
op_kind: {CAST_OP.op_kind}
blurb: "{blurb}"
backend: Cpu
kernel_source: "{source}"
entry_point: "{entry}"
kernel_revision_hash: auto
accept:
  inputs:
    - name: x
      dtypes: [{src.fkc}]
      layout: {LAYOUT}
      rank: any
  op_params: {{rounding: {ROUNDING}, overflow: {overflow}}}
return:
  outputs:
    - name: out
      dtype_rule: fixed({dst.fkc})
      shape_rule: same_as(x)
      layout_guarantee: contiguous
      aliasing: none
caps:
  awkward_layout_strategy: requires_contiguous
  fast_paths:
    - {{when: "all_inputs_contiguous", class: cheap_elementwise}}
  in_place: false
  alignment_bytes: 64
  access_granularity_bits: 8
cost:
  provenance: author_estimate
  class: cheap_elementwise
  flops: "n"
  bytes_moved: "{cost}"
  memory: {{device_bytes: 0, host_bytes: "n * dtype_bytes", disk_bytes: 0}}
precision:
  bit_stable_on_same_hardware: true
  max_ulp: 0
  max_relative: ~
  max_absolute: ~
  audited: true
  notes: "{precision}"
determinism: same_hardware_bitwise
semantics:
{semantics}
```
"""


def _section(provider: str, src: DType, dst: DType, saturate: bool) -> str:
    """One of fueltensor's own contracts: the rule, compiled or the oracle's."""
    source, _, entry, prefix = PROVIDERS[provider]
    name = prefix + kernel_name(src.np, dst.np, saturate)
    overflow = SATURATE if saturate else INF_OR_NAN
    nan = "canonical" if dst is _dtypes.float8_e4m3fn else "quieted"
    beyond = {
        INF_OR_NAN: "NaN of its sign" if dst is _dtypes.float8_e4m3fn else "inf of its sign",
        SATURATE: "the largest finite value of its sign",
    }[overflow]
    how = "bit fields in NumPy integers" if source == "reference-oracle" else "compiled"
    blurb = (
        f"{src.fkc} to {dst.fkc}: rounded once to nearest even, "
        f"subnormals kept, beyond the range {beyond} ({how})."
    )
    semantics = (
        "  source: [formula]\n"
        f"  nan: {{operand: either, result: [{nan}], sign: kept}}\n"
        "  subnormals: kept\n"
        "  position: invariant\n"
        f'  notes: "{NOTES.format(beyond=beyond)}"'
    )
    return section(
        name,
        src,
        dst,
        overflow,
        head=f"{source}\n{blurb}",
        entry=entry + name,
        precision=(
            "rounded once to nearest, ties to even, from the exact source value: correctly rounded."
        ),
        semantics=semantics,
        cost="2 * n * (x_bytes + dtype_bytes)"
        if source == "reference-oracle"
        else "n * (x_bytes + dtype_bytes)",
    )


def document(provider: str) -> str:
    """The whole document of `provider`'s cast contracts."""
    source, registry, _, _ = PROVIDERS[provider]
    head = f"""---
fkc_version: 1
provider:
  name: {provider}
  backend: Cpu
  kernel_source: "{source}"
  link_registry: {registry}  # {LINK_NOTE}
  revision_base: "git:f41137b4"  # folded into every kernel_revision_hash: auto
---
"""
    sections = [
        _section(provider, from_numpy(src), from_numpy(dst), saturate)
        for src, dst, saturate in CASTS
    ]
    return head + INTROS[provider] + RULE_TEXT + "".join(sections)


def path(provider: str) -> Path:
    """Where `provider`'s cast document lives."""
    return contract_path(f"{provider}-cast")


def main(argv: list[str] | None = None) -> int:
    """Rewrite the documents (--write), or print how they differ from this script's."""
    args = argparse.ArgumentParser(description=__doc__).parse_known_args(argv)[1]
    return settle({path(p): document(p) for p in PROVIDERS}, "--write" in args)


if __name__ == "__main__":
    sys.exit(main())
