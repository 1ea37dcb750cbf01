"""The FKC documents the tests write for providers of their own: the front matter, and the section
of one element-wise kernel of two same-shape dense operands (the one layout the draft, the
author's loop, the cheat catalogue and the one-off provider share); each caller names its facts.
"""

from __future__ import annotations

from fueltensor.core.dtypes import BY_FKC

DENSE = (
    "{contiguous: required, strided: rejected, broadcast_stride0: rejected, "
    "start_offset: rejected, reverse_strides: rejected}"
)
"""The layout of an operand a kernel takes only dense: contiguous, from its first element."""


def front(provider: str, source: str, registry: str, revision: str, title: str) -> str:
    """A document's front matter (a Cpu provider) and its title."""
    return (
        f"---\nfkc_version: 1\nprovider: {{name: {provider}, backend: Cpu, "
        f'kernel_source: "{source}", link_registry: {registry}, revision_base: "{revision}"}}\n'
        f"---\n# {title}\n"
    )


def section(
    kernel: str,
    op_kind: str,
    fkc: str,
    *,
    source: str,
    entry_point: str,
    blurb: str,
    max_ulp: object,
    notes: str,
    prose: str = "",
    op_params: bool = True,
    semantics: str = "",
    unary: bool = False,
) -> str:
    """The section of `kernel`, `op_kind` on two same-shape dense `fkc` tensors (one, `x`, when
    `unary`) into a fresh one: `prose` under its heading, `op_params: {variant: None}` unless
    told otherwise, and a `semantics` section when given. `max_ulp` is written as it is (a
    malformed one too)."""
    width = BY_FKC[fkc].itemsize
    first = "x" if unary else "lhs"
    names = ("x",) if unary else ("lhs", "rhs")
    inputs = "\n".join(
        f"    - {{name: {n}, dtypes: [{fkc}], layout: {DENSE}, rank: any"
        + ("}" if unary else f", shape_constraint: same_as={names[1 - i]}}}")
        for i, n in enumerate(names)
    )
    text = f"\n{prose}\n" if prose else ""
    params = "  op_params: {variant: None}\n" if op_params else ""
    tail = f"{semantics}\n" if semantics else ""
    return f"""
## {kernel}
{text}
```fkc
kernel: {kernel}
op_kind: {op_kind}
blurb: "{blurb}"
backend: Cpu
kernel_source: "{source}"
entry_point: "{entry_point}"
kernel_revision_hash: auto
accept:
  inputs:
{inputs}
{params}return:
  outputs:
    - name: out
      dtype_rule: passthrough({first})
      shape_rule: same_as({first})
      layout_guarantee: contiguous
      aliasing: none
caps:
  awkward_layout_strategy: requires_contiguous
  in_place: false
  alignment_bytes: 64
  access_granularity_bits: {8 * width}
cost:
  provenance: author_estimate
  class: cheap_elementwise
  flops: "n"
  bytes_moved: "{2 if unary else 3} * n * {width}"
  memory: {{device_bytes: 0, host_bytes: "n * {width}", disk_bytes: 0}}
precision:
  bit_stable_on_same_hardware: true
  max_ulp: {max_ulp}
  audited: false
  notes: "{notes}"
determinism: same_hardware_bitwise
{tail}```
"""


def one_off(max_ulp: str, semantics: str) -> str:
    """The document of provider `one-off`: one BF16 addition with the given bound and semantics
    section, for the certificate and invariance tests (each links its own kernel)."""
    return front("one-off", "one-off-source", "one_off", "v1", "one-off") + section(
        "add_one_off_bf16",
        "AddElementwise",
        "BF16",
        source="one-off-source",
        entry_point="one_off::add_bf16",
        blurb="BF16 addition via f32.",
        max_ulp=max_ulp,
        notes="correctly rounded",
        prose="BF16 addition: each pair widened to f32, added, rounded once to bf16.",
        semantics=semantics,
    )
