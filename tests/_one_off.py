"""The FKC document of a test provider `one-off`: one BF16 addition with a given bound and
semantics section, for the certificate and invariance tests (each links its own kernel)."""

from __future__ import annotations

DENSE = (
    "{contiguous: required, strided: rejected, broadcast_stride0: rejected, "
    "start_offset: rejected, reverse_strides: rejected}"
)


def document(max_ulp: str, semantics: str) -> str:
    """An FKC document of provider `one-off`: one BF16 addition with the given bound and
    semantics section."""
    return f"""---
fkc_version: 1
provider: {{name: one-off, backend: Cpu, kernel_source: one-off-source, link_registry: one_off,
  revision_base: "v1"}}
---
# one-off

## add_one_off_bf16

BF16 addition: each pair widened to f32, added, rounded once to bf16.

```fkc
kernel: add_one_off_bf16
op_kind: AddElementwise
blurb: "BF16 addition via f32."
backend: Cpu
kernel_source: one-off-source
entry_point: "one_off::add_bf16"
kernel_revision_hash: auto
accept:
  inputs:
    - {{name: lhs, dtypes: [BF16], layout: {DENSE}, rank: any, shape_constraint: same_as=rhs}}
    - {{name: rhs, dtypes: [BF16], layout: {DENSE}, rank: any, shape_constraint: same_as=lhs}}
  op_params: {{variant: None}}
return:
  outputs:
    - name: out
      dtype_rule: passthrough(lhs)
      shape_rule: same_as(lhs)
      layout_guarantee: contiguous
      aliasing: none
caps:
  awkward_layout_strategy: requires_contiguous
  in_place: false
  alignment_bytes: 64
  access_granularity_bits: 16
cost:
  provenance: author_estimate
  class: cheap_elementwise
  flops: "n"
  bytes_moved: "3 * n * 2"
  memory: {{device_bytes: 0, host_bytes: "n * 2", disk_bytes: 0}}
precision:
  bit_stable_on_same_hardware: true
  max_ulp: {max_ulp}
  audited: false
  notes: "correctly rounded"
determinism: same_hardware_bitwise
{semantics}
```
"""
