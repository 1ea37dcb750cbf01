"""The optional compiled kernels; everything else about the package is in pyproject.toml.

`optional=True`: where an extension cannot be built (no C compiler), the install still succeeds
and fueltensor runs its pure-NumPy kernels and Python dispatch, which give the same bits; the
build then says so once, in words (`BuildExt`; pip shows a build's output with `-v`).

f32 pow runs a vector transcription of glibc's `powf` where the extension recognises the
platform's `powf` as that algorithm (at the first f32 pow, not at build time); elsewhere `powf`
runs for every lane, with the same bits.

`FUELTENSOR_SANITIZE=1` builds both extensions with AddressSanitizer and UndefinedBehaviorSanitizer,
aborting at the first report (`.ci/sanitize` installs such a build beside the normal one and runs
the C-touching tests and the differential fuzzer on it).
"""

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import BaseError, CCompilerError

SRC = Path("fueltensor/ext/src")
"""The compiled floor's sources: one folder per extension, each built from its unity files
(`_<name>.c`, and `_native`'s second, `_shaped.c`), each including its per-concern files, and
`abi.h`, which all share."""


def sources(name: str) -> dict[str, list[str]]:
    """An extension's unity files, and every file they include as `depends` (so a change to any
    of them rebuilds it)."""
    folder = SRC / name
    parts = sorted(
        str(p) for p in [*folder.glob("*.c"), *folder.glob("*.h"), SRC / "abi.h", SRC / "ops.h"]
    )
    return {"sources": sorted(str(p) for p in folder.glob("_*.c")), "depends": parts}


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


NOT_BUILT = """
fueltensor: its compiled kernels were NOT built, so it will run its pure-NumPy kernels and
Python dispatch instead: the same bits, slower. Not built:
{failures}
To build them, install a C compiler (Debian or Ubuntu: apt-get install gcc; Fedora: dnf install
gcc; macOS: xcode-select --install) and install fueltensor again.
"""
"""What the build says, once, when an extension could not be built."""


class BuildExt(build_ext):
    """build_ext that collects the optional extensions it could not build and says, once and
    in words, what fueltensor runs instead (setuptools' own word is one line per extension
    naming the compiler's error, not what it means for the user)."""

    def run(self) -> None:
        """Build every extension, then name the ones that failed."""
        self.not_built: list[str] = []
        super().run()
        if self.not_built:
            failures = "\n".join(f"  {line}" for line in self.not_built)
            print(NOT_BUILT.format(failures=failures), file=sys.stderr, flush=True)

    def build_extension(self, ext: Extension) -> None:
        """Build one extension, its unity files compiled at once on the cores this process may
        use (setuptools compiles them one after another: `_native`'s two took 58 s in a row,
        35 s side by side on 2 cores); an optional one's failure is recorded, not raised."""
        one_by_one = self.compiler.compile
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()

        def compile_at_once(sources: list[str], *args: object, **kwargs: object) -> list[str]:
            with ThreadPoolExecutor(max(1, min(len(sources), cores or 1))) as pool:
                done = pool.map(lambda source: one_by_one([source], *args, **kwargs), sources)
                return [obj for objects in done for obj in objects]

        self.compiler.compile = compile_at_once
        try:
            super().build_extension(ext)
        except (CCompilerError, BaseError) as error:
            if not ext.optional:
                raise
            self.not_built.append(f"{ext.name}: {error}")
        finally:
            del self.compiler.compile  # the instance's, which hid the class's method


setup(
    cmdclass={"build_ext": BuildExt},
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
        # The certifier's core (`fueltensor certify`): every 16-bit pair against the correctly
        # rounded value. No fast-math and no contraction: the references are rounded IEEE steps.
        Extension(
            "fueltensor.ext._certify",
            **sources("certify"),
            extra_compile_args=["-O2", "-ffp-contract=off", "-fno-fast-math", *SANITIZE],
            extra_link_args=SANITIZE,
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
