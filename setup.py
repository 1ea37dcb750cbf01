"""The optional compiled kernels; everything else about the package is in pyproject.toml.

`optional=True`: where an extension cannot be built (no C compiler), the install still succeeds
and fueltensor runs its pure-NumPy kernels and Python dispatch, which give the same bits.

After building `_native`, the build checks its f32 pow shortcut against the C library's `powf`
over all 2^32 inputs (`fueltensor/kernels/pow_shortcut.py`; about 200 s of CPU) and
writes the verdict beside the extension, so an install on this machine starts with it.

`FUELTENSOR_SANITIZE=1` builds both extensions with AddressSanitizer and UndefinedBehaviorSanitizer,
aborting at the first report (`.ci/sanitize` installs such a build beside the normal one and runs
the C-touching tests and the differential fuzzer on it).
"""

import importlib.util
import os
import sys
import time
from pathlib import Path
from types import ModuleType

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

NATIVE = "fueltensor.kernels._native"
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


def _load(name: str, path: str) -> ModuleType:
    """The module in the file `path`, imported as `name` without importing its package."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {name} from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


class BuildAndVerify(build_ext):
    """build_ext, then the pow shortcut's exhaustive check of the `_native` just built."""

    def run(self) -> None:
        super().run()
        built = Path(self.get_ext_fullpath(NATIVE))
        if not built.exists():  # optional: no C compiler, so no shortcut to verify
            return
        if os.environ.get("FUELTENSOR_POW_SHORTCUT") == "0":  # kept off: nothing to prove
            print("pow shortcut: not checked (FUELTENSOR_POW_SHORTCUT=0)", file=sys.stderr)
            return
        here = Path(__file__).resolve().parent
        verdicts = _load(
            "_fueltensor_pow_shortcut", str(here / "fueltensor/kernels/pow_shortcut.py")
        )
        native = _load(NATIVE, str(built))
        start = time.perf_counter()
        try:
            verdict = verdicts.Verdict(verdicts.identity(native), verdicts.check(native))
            verdicts.write(verdict, verdicts.build_path(native))
        except (OSError, RuntimeError, ValueError) as e:  # first use will check instead
            print(f"pow shortcut: no build-time verdict ({e!r})", file=sys.stderr)
            return
        for c in verdict.checks:
            print(
                f"pow shortcut y={c.y:g}: {c.mismatches} of {c.inputs} inputs differ from powf "
                f"({c.seconds} s)",
                file=sys.stderr,
            )
        print(f"pow shortcut verdict: {time.perf_counter() - start:.0f} s", file=sys.stderr)


setup(
    cmdclass={"build_ext": BuildAndVerify},
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
                *SANITIZE,
            ],
            extra_link_args=["-pthread", *SANITIZE],
            libraries=["m"],
            optional=True,
        ),
        # Dispatch's fast path for cached plans: runs `_native`'s kernels through NumPy's C API.
        Extension(
            "fueltensor.kernels._fast",
            sources=["fueltensor/kernels/_fast.c"],
            include_dirs=[numpy.get_include()],
            extra_compile_args=["-O2", *SANITIZE],
            extra_link_args=SANITIZE,
            optional=True,
        ),
    ],
)
