"""The optional compiled kernels; everything else about the package is in pyproject.toml.

`optional=True`: where an extension cannot be built (no C compiler), the install still succeeds
and fueltensor runs its pure-NumPy kernels and Python dispatch, which give the same bits.

f32 pow runs a vector transcription of glibc's `powf` where the extension recognises the
platform's `powf` as that algorithm (at the first f32 pow, not at build time); elsewhere `powf`
runs for every lane, with the same bits.

`FUELTENSOR_SANITIZE=1` builds both extensions with AddressSanitizer and UndefinedBehaviorSanitizer,
aborting at the first report (`.ci/sanitize` installs such a build beside the normal one and runs
the C-touching tests and the differential fuzzer on it).
"""

import os
from pathlib import Path

import numpy
from setuptools import Extension, setup

SRC = Path("fueltensor/ext/src")
"""The compiled floor's sources: one folder per extension, each built as one translation unit
(its `_<name>.c` includes the per-concern files), and `abi.h`, which both share."""


def sources(name: str) -> dict[str, list[str]]:
    """An extension's unity file, and every file it includes as `depends` (so a change to any
    of them rebuilds it)."""
    folder = SRC / name
    parts = sorted(str(p) for p in [*folder.glob("*.c"), *folder.glob("*.h"), SRC / "abi.h"])
    return {"sources": [str(folder / f"_{name}.c")], "depends": parts}


SANITIZE = (
    [
        "-fsanitize=address,undefined",
        "-fno-sanitize-recover=all",
        "-fno-wrapv",
        "-fno-omit-frame-pointer",
        "-g",
    ]
    if os.environ.get("FUELTENSOR_SANITIZE") == "1"
    else []
)
"""Compile and link flags of the sanitizer build (none otherwise). `-fno-wrapv` undoes the
`-fwrapv` of Python's own CFLAGS, under which UBSan cannot see a signed overflow: the kernels
must be correct C for any compiler, not only for one that wraps."""


setup(
    ext_modules=[
        Extension(
            "fueltensor.ext._native",
            **sources("native"),
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
                *SANITIZE,
            ],
            extra_link_args=["-pthread", *SANITIZE],
            libraries=["m"],
            optional=True,
        ),
        # Dispatch's fast path for cached plans: runs `_native`'s kernels through NumPy's C API.
        Extension(
            "fueltensor.ext._fast",
            **sources("fast"),
            include_dirs=[numpy.get_include()],
            extra_compile_args=["-O2", *SANITIZE],
            extra_link_args=SANITIZE,
            optional=True,
        ),
    ],
)
