"""The optional compiled kernels; everything else about the package is in pyproject.toml.

`optional=True`: where an extension cannot be built (no C compiler), the install still succeeds
and fueltensor runs its pure-NumPy kernels and Python dispatch, which give the same bits.
"""

import numpy
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "fueltensor.kernels._native",
            sources=["fueltensor/kernels/_native.c"],
            # No FMA contraction and no fast-math: every step of a - floor(a / b) * b is rounded.
            # -fno-trapping-math only lets the NaN selects vectorize: values are unchanged, and
            # the kernels restore the caller's floating-point status flags after every call.
            extra_compile_args=["-O3", "-ffp-contract=off", "-fno-fast-math", "-fno-trapping-math"],
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
    ]
)
