"""Whether f32 pow may take its shortcut for y = 2 and y = 0.5 on this machine: the verdict.

The contract's pow is the platform C library's `powf`. The compiled kernels can take a shortcut
for lanes whose y is exactly 2 or 0.5 (the exact value in double, rounded once; `powf` for the
lanes near a rounding midpoint and for special values; see "pow by 2 and by 0.5" in
`ext/src/native/pow_shortcut.c`), but only where that loop gives `powf`'s bits for every one of
the 2^32 f32 inputs on this machine. `check` compares them exhaustively (`_native.verify_pow`,
C, GIL released); the verdict is keyed by `identity`, what the bits depend on (CPU, C library,
libm file and the `powf` it resolves to, the extension's bytes), and lives in the per-user
cache (the contract cache's directory), written by `fueltensor pow-shortcut --check` (`verify`).

The install does not check (it would add minutes of CPU to every `pip install`), and nothing is
checked behind the user's back: a missing verdict keeps the shortcut off (`powf` runs for every
lane: the same bits, slower) and `status` says how to check. A negative verdict keeps it off
too and is reported, never raised.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Final

FORMAT: Final = 1
"""Layout of the verdict files; bumped when `Verdict.to_dict` changes shape."""
Y_VALUES: Final = (2.0, 0.5)
"""The exponents the shortcut serves, in `_native.pow_shortcut`'s argument order."""
INPUTS: Final = 1 << 32
"""Every f32 bit pattern: a check over fewer proves nothing."""
CHUNK: Final = 1 << 26
"""x bit patterns per `_native.verify_pow` call: 64 steps per exponent for progress reports."""
ENV_VAR: Final = "FUELTENSOR_POW_SHORTCUT"
"""Set to "0" to keep the shortcut off and never check."""


def _cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


THREADS: Final = min(_cores(), 64)
"""Threads of one check (`verify`'s): every core this process may run on, up
to the 64 `_native.verify_pow` takes (the check is a one-off wait for the whole machine)."""
_CPU_KEYS: Final = frozenset(
    {"vendor_id", "cpu family", "model", "model name", "stepping", "flags", "features"}
    | {"cpu implementer", "cpu architecture", "cpu variant", "cpu part", "cpu revision"}
)
"""/proc/cpuinfo fields that name the core and its instruction set (not its clock or id)."""


@dataclass(frozen=True)
class Check:
    """One exhaustive comparison of the shortcut loop (every kernel body) with `powf`."""

    y: float
    inputs: int
    """How many x bit patterns were compared."""
    mismatches: int
    """Lanes whose bits differ from `powf`'s, summed over the kernel bodies."""
    first: int | None
    """The bits of the first x that differs, if any."""
    seconds: float


@dataclass(frozen=True)
class Verdict:
    """The checks of both exponents on the machine `identity` describes."""

    identity: dict[str, str]
    checks: tuple[Check, ...]

    def proven(self, y: float) -> bool:
        """Whether the shortcut for `y` matched `powf` on all 2^32 inputs."""
        return any(c.y == y and c.inputs == INPUTS and c.mismatches == 0 for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "format": FORMAT,
            "identity": self.identity,
            "checks": [asdict(c) for c in self.checks],
        }

    @classmethod
    def from_dict(cls, data: Any) -> Verdict:
        """The inverse of `to_dict`; ValueError when `data` is not a verdict of this format."""
        try:
            if data["format"] != FORMAT:
                raise ValueError(f"verdict format {data['format']!r}, this reader's is {FORMAT}")
            identity = {str(k): str(v) for k, v in data["identity"].items()}
            checks = tuple(
                Check(
                    float(c["y"]),
                    int(c["inputs"]),
                    int(c["mismatches"]),
                    None if c["first"] is None else int(c["first"]),
                    float(c["seconds"]),
                )
                for c in data["checks"]
            )
        except (KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"not a pow shortcut verdict: {e!r}") from e
        return cls(identity, checks)


def identity(native: ModuleType) -> dict[str, str]:
    """What the shortcut's and `powf`'s bits depend on here, as strings: the CPU (its model and
    instruction set flags: glibc picks a `powf` by them, and rcpps differs between cores), glibc
    tunables, the C library, the libm file holding the `powf` called and that symbol, and the
    compiled kernels' bytes (their code, band and bodies)."""
    lib = native.pow_identity()
    libm = lib["libm"]
    try:
        st = os.stat(libm)
        libm_file = f"{os.path.realpath(libm)} ({st.st_size} bytes, mtime_ns {st.st_mtime_ns})"
    except OSError:
        libm_file = libm or "unknown"
    return {
        "platform": f"{platform.system()} {platform.machine()}",
        "cpu": _cpu(),
        "glibc_tunables": os.environ.get("GLIBC_TUNABLES", ""),
        "libc": lib["libc"],
        "libm": libm_file,
        "powf": lib["powf"],
        "native": hashlib.sha256(_file(native).read_bytes()).hexdigest(),
    }


def _cpu() -> str:
    """The first core's model and flags from /proc/cpuinfo, hashed (else the processor name)."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return platform.processor() or "unknown CPU"
    first = text.split("\n\n", 1)[0]
    fields = sorted(
        f"{key.strip().lower()}={value.strip()}"
        for key, _, value in (line.partition(":") for line in first.splitlines())
        if key.strip().lower() in _CPU_KEYS
    )
    names = [f.partition("=")[2] for f in fields if f.startswith("model name=")]
    digest = hashlib.sha256("\n".join(fields).encode()).hexdigest()[:32]
    return f"{names[0] if names else platform.machine()} (cpuinfo sha256 {digest})"


Progress = Callable[[float, int, int], None]
"""Called as (y, inputs done for that y, inputs of that y) after every chunk of a check."""


def check(
    native: ModuleType,
    start: int = 0,
    stop: int = INPUTS,
    band: int | None = None,
    threads: int = THREADS,
    y_values: tuple[float, ...] = Y_VALUES,
    progress: Progress | None = None,
) -> tuple[Check, ...]:
    """Compare the shortcut loop of every kernel body with `powf` for each of `y_values`, over
    the x bit patterns [start, stop), `CHUNK` at a time (`progress` hears of each). `band` other
    than `_native.POW_BAND` runs a loop the kernels never run (to show that the check catches a
    wrong one)."""
    chosen = native.POW_BAND if band is None else band
    checks = []
    for y in y_values:
        began = time.perf_counter()
        mismatches, firsts = 0, []
        for lo in range(start, stop, CHUNK):
            hi = min(lo + CHUNK, stop)
            per_body = native.verify_pow(y, lo, hi, chosen, threads)
            mismatches += sum(count for count, _ in per_body)
            firsts += [first for _, first in per_body if first >= 0]
            if progress is not None:
                progress(y, hi - start, stop - start)
        checks.append(
            Check(
                y=y,
                inputs=stop - start,
                mismatches=mismatches,
                first=min(firsts) if firsts else None,
                seconds=round(time.perf_counter() - began, 1),
            )
        )
    return tuple(checks)


def write(verdict: Verdict, path: Path) -> None:
    """Write `verdict` to `path` atomically (readers see the old file or the whole new one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(verdict.to_dict(), indent=1), encoding="utf-8")
    os.replace(tmp, path)


def read(path: Path, expected: dict[str, str]) -> Verdict | None:
    """The verdict at `path` when it was reached on the machine `expected` describes; None when
    it is absent, unreadable, malformed or from another machine, libm or build."""
    try:
        verdict = Verdict.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None
    return verdict if verdict.identity == expected else None


def _file(native: ModuleType) -> Path:
    """The extension module's file."""
    if native.__file__ is None:
        raise ValueError(f"{native.__name__} has no file: not a compiled extension")
    return Path(native.__file__)


def cache_path(expected: dict[str, str]) -> Path | None:
    """The per-user cache entry for the machine `expected` describes (None: cache turned off)."""
    from fueltensor.fkc.cache import cache_dir

    directory = cache_dir()
    if directory is None:
        return None
    key = hashlib.sha256(json.dumps(expected, sort_keys=True).encode()).hexdigest()[:32]
    return directory / f"pow-verdict-{key}.json"


_STATUS: dict[float, str] = {}
"""y -> what the kernels do for it and why (`status`)."""
_LOCK: Final = threading.Lock()


def status() -> dict[float, str]:
    """Per y: "verified on this machine (...)" or "off: <why>"."""
    with _LOCK:
        return dict(_STATUS) or {y: "off: the compiled kernels are not in use" for y in Y_VALUES}


def describe() -> str:
    """`status` in one line, as the machine fingerprint shows it (exponents in the same state
    named together)."""
    by_text: dict[str, list[str]] = {}
    for y, text in status().items():
        by_text.setdefault(text, []).append(f"y={y:g}")
    return "; ".join(f"{' and '.join(ys)} {text}" for text, ys in by_text.items())


def _report(texts: dict[float, str]) -> None:
    with _LOCK:
        _STATUS.update(texts)


def apply(native: ModuleType, verdict: Verdict, where: str) -> None:
    """Switch the shortcut on for each y the verdict proves, off for the others, and say why."""
    native.pow_shortcut(*(verdict.proven(y) for y in Y_VALUES))
    texts = {}
    for y in Y_VALUES:
        found = [c for c in verdict.checks if c.y == y]
        if verdict.proven(y):
            texts[y] = f"verified on this machine ({where}: all 2^32 inputs equal powf's bits)"
        elif not found:
            texts[y] = f"off: the {where} verdict has no check of y={y:g}"
        elif found[0].inputs != INPUTS:
            texts[y] = f"off: the {where} check covered {found[0].inputs} of 2^32 inputs"
        else:
            first = found[0].first
            texts[y] = (
                f"off: {found[0].mismatches} of 2^32 inputs differ from powf ({where} check, "
                f"first x bits 0x{first or 0:08x}); powf runs"
            )
    _report(texts)


def activate(native: ModuleType) -> None:
    """At import: apply the cached verdict for this machine; without one the shortcut stays off
    and `status` says how to check (no check runs behind the user's back)."""
    if os.environ.get(ENV_VAR) == "0":
        native.pow_shortcut(False, False)
        _report({y: f"off: {ENV_VAR}=0" for y in Y_VALUES})
        return
    expected = identity(native)
    path = cache_path(expected)
    verdict = read(path, expected) if path is not None else None
    if verdict is not None:
        apply(native, verdict, "cache")
        return
    native.pow_shortcut(False, False)
    _report(
        {
            y: "off: not verified on this machine, so powf runs for every lane "
            "(the same bits, slower); `fueltensor pow-shortcut --check` proves it (minutes of CPU)"
            for y in Y_VALUES
        }
    )


def verify(native: ModuleType, progress: Progress | None = None) -> Verdict:
    """Check this machine exhaustively now, cache the verdict per user and apply it; OSError
    when the cache is off or unwritable (the verdict is applied to this process regardless)."""
    expected = identity(native)
    verdict = Verdict(expected, check(native, progress=progress))
    apply(native, verdict, "cache")
    cached = cache_path(expected)
    if cached is None:
        raise OSError("the per-user cache is off (FUELTENSOR_CACHE_DIR is empty): not saved")
    write(verdict, cached)
    return verdict
