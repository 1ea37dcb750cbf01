"""ext/src/ops.h, generated from the op table (`fueltensor.ops`): each family's C op enum and
names, so that no C source spells an op id of its own. `python -m fueltensor.ops_header` prints
it (`REGENERATE`); tests/repo/test_op_table.py holds the file equal to `c_header()`."""

from __future__ import annotations

from typing import Final

from fueltensor.families import Family
from fueltensor.ops import (
    COMPARISON_OPS,
    CONTRACTION_OPS,
    REDUCTION_OPS,
    SCALAR_FORMS,
    TERNARY_OPS,
    UNARY_OPS,
    of_family,
)

REGENERATE: Final = "python -m fueltensor.ops_header > fueltensor/ext/src/ops.h"
"""The command that writes ext/src/ops.h from the table."""


def c_header() -> str:
    """ext/src/ops.h: each family's C op enum and names, in table order, generated from this
    table (`REGENERATE`), so that no C source spells an op id of its own;
    tests/repo/test_op_table.py holds the file equal to this text."""
    lines = [
        f"/* Generated from fueltensor/ops.py: do not edit. Regenerate with\n *   {REGENERATE}",
        " * Each family's kernel ops in table order (`_native.OPS`, `_native.UNARY_OPS`,",
        " * `_native.COMPARISON_OPS`, `_native.TERNARY_OPS`, `_native.REDUCTION_OPS`); a unary",
        " * op's enum name is its kernel op id in capitals after U_, a comparison's after C_,",
        " * where's and clip's after T_, a reduction's after R_, a contraction's after M_. */",
        "#ifndef FUELTENSOR_OPS_H",
        "#define FUELTENSOR_OPS_H",
    ]
    groups = (("binary elementwise", of_family(Family.BINARY), "", "N_OPS", "OP_NAMES"),
              ("unary elementwise", UNARY_OPS, "U_", "N_UNARY_OPS", "UNARY_NAMES"),
              ("comparison", COMPARISON_OPS, "C_", "N_COMPARISON_OPS", "COMPARISON_NAMES"),
              ("selection and clamp: three operands", TERNARY_OPS, "T_", "N_TERNARY_OPS",
               "TERNARY_NAMES"),
              ("reduction", REDUCTION_OPS, "R_", "N_REDUCTION_OPS", "REDUCTION_NAMES"),
              ("contraction", CONTRACTION_OPS, "M_", "N_CONTRACTION_OPS",
               "CONTRACTION_NAMES"))  # fmt: skip
    for title, ops, prefix, count, names in groups:
        lines += [
            "",
            f"/* {title}. */",
            f"enum {{ {', '.join(prefix + k.upper() for op in ops for k in op.kernel_ops)}, "
            f"{count} }};",
            f"static const char *const {names}[{count}] = {{"
            + ", ".join(f'"{k}"' for op in ops for k in op.kernel_ops)
            + "};",
        ]
    (powi,) = SCALAR_FORMS  # one past the binary ops: a second form needs a number of its own
    lines += [
        "/* The integer-power kernel's op number (`_native.POWI_OP`): one past the binary ops;",
        " * and its op id. */",
        "#define POWI_OP N_OPS",
        f'#define POWI_NAME "{powi.kernel_op}"',
        "",
        "#endif",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(c_header(), end="")
