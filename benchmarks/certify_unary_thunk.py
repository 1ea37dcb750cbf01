"""Certify the unary machinery on a stand-in provider: every unary row of the op table as a
Python thunk computing the numerics decided for fuel-cpu-backend's unary kernels (the C
library's double function, NumPy's float64 loop here, rounded once into the dtype; a NaN input
quieted with its payload kept, abs and negative on the sign bit alone, an invalid operation
this machine's default NaN), certified on every BF16/F16 input, and float32 exhaustively for
the rows marked `exhaustive_f32` (`--f32`, about 12 minutes each on the 2-core box).

    nice -n 10 python benchmarks/certify_unary_thunk.py --out benchmarks/certificates/thunk
    nice -n 10 python benchmarks/certify_unary_thunk.py --f32 exp --out ...

Until fuel-cpu-backend's unary kernels are built, these are the certificates that prove the
sweep (their texts are in benchmarks/certificates/thunk/). Then, the kernels' own:

    fueltensor certify --provider cpu --out DIR --state DIR/state    # every unary contract too
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

import fueltensor as ft
from fueltensor.ops import UNARY_OPS, ContractOp
from fueltensor.testing import float_format
from fueltensor.tools.certify import certify
from fueltensor.tools.exact_unary import SIGN_BIT_RESULTS, default_nan, nan_result
from fueltensor.tools.judge import round_to

PROVIDER = "double-once"
LAYOUT = (
    "{contiguous: required, strided: rejected, broadcast_stride0: rejected, "
    "start_offset: rejected, reverse_strides: rejected}"
)
FKC = {"BF16": ("bfloat16", 2, 0), "F16": ("float16", 2, 0), "F32": ("float32", 4, 1)}
"""FKC code -> (dtype name, bytes, the declared max_ulp)."""


def thunk(row: ContractOp) -> object:
    """The row in double, rounded once, with the decided NaN rules."""

    def kernel(x: np.ndarray, *, out: np.ndarray) -> None:
        f = float_format(x.dtype)
        u = x.view(f.uint)
        bits = out.view(f.uint)
        sign = f.uint.type(f.sign_bit)
        rule = SIGN_BIT_RESULTS.get(nan_result(row))
        if rule is not None:
            bits[...] = u & ~sign if rule == "clear" else u ^ sign
            return
        with np.errstate(all="ignore"):
            wide = np.asarray(row.host(x.astype(np.float64)), np.float64)
            nan_in = np.isnan(x.astype(np.float64))
        out[...] = round_to(wide, x.dtype)
        bits[np.isnan(wide) & ~nan_in] = default_nan(x.dtype)
        bits[nan_in] = u[nan_in] | f.uint.type(f.quiet_bit)

    return kernel


def section(row: ContractOp, code: str) -> str:
    """The FKC section of the row's kernel at `code`."""
    name, width, ulp = FKC[code]
    kernel = f"{row.kernel_op}_{code.lower()}"
    return f"""
## {kernel}

```fkc
kernel: {kernel}
op_kind: {row.op_kind.value}
blurb: "{row.summary} in double, rounded once to {name}"
backend: Cpu
kernel_source: "{PROVIDER}"
entry_point: "{PROVIDER}::{kernel}"
kernel_revision_hash: auto
accept:
  inputs:
    - {{name: x, dtypes: [{code}], layout: {LAYOUT}, rank: any}}
return:
  outputs:
    - name: out
      dtype_rule: passthrough(x)
      shape_rule: same_as(x)
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
  bytes_moved: "2 * n * {width}"
  memory: {{device_bytes: 0, host_bytes: "n * {width}", disk_bytes: 0}}
precision:
  bit_stable_on_same_hardware: true
  max_ulp: {ulp}
  audited: false
  notes: "NumPy's float64 loop rounded once (a stand-in for fuel-cpu-backend's unary kernels)"
determinism: same_hardware_bitwise
semantics:
  source: [formula]
  nan: {{operand: either, result: [quieted], sign: kept, invalid: [negative_canonical]}}
  subnormals: kept
```
"""


def main() -> None:
    """Certify the stand-in's contracts (module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="where the certificates go")
    p.add_argument(
        "--f32",
        action="append",
        default=[],
        metavar="FUNCTION",
        help="also float32 of this exhaustive_f32 row, on every input (repeatable)",
    )
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    jobs = [(row, code) for row in UNARY_OPS for code in ("BF16", "F16")]
    jobs += [(row, "F32") for row in UNARY_OPS if row.exhaustive_f32 and row.name in args.f32]
    front = (
        f"---\nfkc_version: 1\nprovider: {{name: {PROVIDER}, backend: Cpu, kernel_source: "
        f'"{PROVIDER}", link_registry: none, revision_base: "v1"}}\n---\n# {PROVIDER}\n'
    )
    links = {f"{PROVIDER}::{r.kernel_op}_{c.lower()}": thunk(r) for r, c in jobs}
    ft.register_provider(PROVIDER, links)
    with tempfile.TemporaryDirectory() as tmp:
        doc = Path(tmp) / "double-once.md"
        doc.write_text(front + "".join(section(r, c) for r, c in jobs), encoding="utf-8")
        reg = ft.Registry.from_paths([doc])
        names = [f"{r.kernel_op}_{c.lower()}" for r, c in jobs]
        for cert in certify(PROVIDER, names, reg=reg, threads=args.threads, out_dir=args.out):
            print(cert.text(), end="\n\n")


if __name__ == "__main__":
    main()
