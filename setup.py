"""The optional compiled kernels; everything else about the package is in pyproject.toml.

`optional=True`: where an extension cannot be built (no C compiler), the install still succeeds
and fueltensor runs its pure-NumPy kernels and Python dispatch, which give the same bits.

The build does not prove the f32 pow shortcut (an exhaustive check against the C library's
`powf`, minutes of CPU): until `fueltensor pow-shortcut --check` has, the shortcut stays off
and `powf` runs for every lane, with the same bits.
"""

import numpy
from setuptools import Extension, setup

NATIVE = "fueltensor.kernels._native"


setup(
    ext_modules=[
        Extension(
            NATIVE,
            sources=["fueltensor/kernels/_native.c"],
            # No FMA contraction and no fast-math: every step of a - floor(a / b) * b is rounded.
            # -fno-trapping-math only lets the NaN selects vectorize: values are unchanged, and
            # the kernels restore the caller's floating-point status flags after every call.
            # -fno-math-errno lets sqrt be one instruction (errno is no contract's output).
            extra_compile_args=[
                "-O3",
                "-ffp-contract=off",
                "-fno-fast-math",
                "-fno-trapping-math",
                "-fno-math-errno",
                "-pthread",
            ],
            extra_link_args=["-pthread"],
            libraries=["m"],
            optional=True,
        ),
        # Dispatch's fast path for cached plans: runs `_native`'s kernels through NumPy's C API.
        Extension(
            "fueltensor.kernels._fast",
            sources=["fueltensor/kernels/_fast.c"],
            include_dirs=[numpy.get_include()],
            extra_compile_args=["-O2"],
            optional=True,
        ),
    ],
)
