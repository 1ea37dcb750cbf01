"""Testing helpers for kernel authors, as `numpy.testing` and `torch.testing` are for theirs.

Everything here reasons on bit patterns of the four float dtypes (float32, float64, bfloat16,
float16, in any spelling: `ft.float32`, `np.float32`, `ml_dtypes.bfloat16`, `"bfloat16"`,
the code `"BF16"` of FKC, the fuel kernel-contract format):

* `random_bits(dtype, shape, rng=...)`: uniformly random bit patterns, NaNs and all;
* `special_values(dtype)` / `special_pairs(dtype)`: the values kernels get wrong, each tagged
  with its value class (`VALUE_CLASSES`), and `classify` naming the class of any pattern;
* `assert_bits_equal(actual, expected, max_ulp=0, inputs=...)`: compare bit for bit and name
  the differing lanes, their inputs, both results' bits and how they differ
  (`difference_classes`, `DIFFERENCE_CLASSES`: NaN payload, signed zero, rounding...).

This module is the one source of special values for the judge's probes and the one
description of a differing element (`lane_message`) for the judge and `compare_backends`.
See docs/testing.md.
"""

from __future__ import annotations

from fueltensor.testing.differences import (
    DIFFERENCE_CLASSES,
    EQUAL,
    INFINITE,
    NAN_PAYLOAD,
    NAN_SIGN,
    NAN_VS_NUMBER,
    ROUNDING,
    SIGN,
    SIGNED_ZERO,
    SUBNORMAL_DIFFERENCE,
    VALUE,
    Difference,
    Errors,
    assert_bits_equal,
    difference,
    difference_classes,
    errors,
    format_value,
    lane_message,
    rounding_ulp,
    summarize,
)
from fueltensor.testing.formats import FloatFormat, bits, float_format, from_bits, ulp_distance
from fueltensor.testing.values import (
    BINADE_EDGE,
    INFINITY,
    INTEGER,
    NON_INTEGER,
    NORMAL_EXTREME,
    ONE,
    POWER_OF_TWO,
    QUIET_NAN,
    SIGNALING_NAN,
    SUBNORMAL,
    VALUE_CLASSES,
    ZERO,
    Special,
    SpecialValues,
    classify,
    random_bits,
    special_pairs,
    special_values,
)

__all__ = [
    "BINADE_EDGE",
    "DIFFERENCE_CLASSES",
    "EQUAL",
    "INFINITE",
    "INFINITY",
    "INTEGER",
    "NAN_PAYLOAD",
    "NAN_SIGN",
    "NAN_VS_NUMBER",
    "NON_INTEGER",
    "NORMAL_EXTREME",
    "ONE",
    "POWER_OF_TWO",
    "QUIET_NAN",
    "ROUNDING",
    "SIGN",
    "SIGNALING_NAN",
    "SIGNED_ZERO",
    "SUBNORMAL",
    "SUBNORMAL_DIFFERENCE",
    "VALUE",
    "VALUE_CLASSES",
    "ZERO",
    "Difference",
    "Errors",
    "FloatFormat",
    "Special",
    "SpecialValues",
    "assert_bits_equal",
    "bits",
    "classify",
    "difference",
    "difference_classes",
    "errors",
    "float_format",
    "format_value",
    "from_bits",
    "lane_message",
    "random_bits",
    "rounding_ulp",
    "special_pairs",
    "special_values",
    "summarize",
    "ulp_distance",
]
