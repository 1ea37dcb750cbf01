"""Shared fixtures: the seed documents, and a small valid FKC document to vary in tests.

The test files sit in folders that mirror the package (core, fkc, engine, kernels, array_api,
tools, testing), with clients, reliability and repo for what crosses it; what they share (this
file, the `_*.py` helpers, the C sources they build, seeds/) sits here, in tests/ itself.
tests/repo/test_package_structure.py holds the tree to that shape."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# SciPy reads this once, at import: tests/clients/test_clients.py runs SciPy and scikit-learn on the
# array API, so it is set before any test module can import them.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

RUN_SETTINGS = frozenset(
    {"FUELTENSOR_PURE_NUMPY", "FUELTENSOR_SEEDS", "FUELTENSOR_FUZZ_CASES", "FUELTENSOR_TEST_CORES"}
)
"""The FUELTENSOR_* variables that choose what a test run covers (the kernel implementation
under test, where the seed documents are, how many fuzz cases, the cores the split is tested
as on: `kernels.threads.TEST_CORES_VAR`); every other one is a user's
setting of the library (its threads, its cache, the pow shortcut, a sanitizer build) and is
cleared before fueltensor is imported, so the suite's verdict does not depend on the shell."""
for _name in [n for n in os.environ if n.startswith("FUELTENSOR_") and n not in RUN_SETTINGS]:
    del os.environ[_name]
# The tables fueltensor prints fit $COLUMNS when it is set (else a terminal's width, else none),
# so a shell's COLUMNS would wrap the tables the tests read (where a CPU's name or the providers
# installed widen a column). The tests that are about widths set their own (test_cli_width.py).
os.environ.pop("COLUMNS", None)
# A test's child interpreter (`python -c`, `python -m fueltensor`) imports the fueltensor under
# test, never the checkout's unbuilt sources from the working directory (pytest runs from the
# checkout): Python 3.11's PYTHONSAFEPATH keeps the working directory off sys.path. (3.10 has
# no such switch: the tests that read a child's output start it outside the checkout, OUTSIDE.)
os.environ["PYTHONSAFEPATH"] = "1"

# CI runs every property test on the same examples, so main cannot turn red by chance; local
# runs keep hypothesis's random exploration. Neither has a deadline: no test has a wall-clock
# limit, and hypothesis's own 200 ms one failed a test on a loaded machine (hypothesis 6.100;
# newer releases drop it under CI by themselves).
settings.register_profile("ci", derandomize=True, print_blob=True, deadline=None)
settings.register_profile("local", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "local")


def pytest_report_header() -> str:
    """Say which kernel implementation this run tests: without the compiled extension the
    native-only tests skip, and that must be visible in CI's log."""
    from fueltensor.kernels._chassis import IMPLEMENTATION, IMPLEMENTATIONS

    return f"fueltensor kernels: {IMPLEMENTATION} (built here: {', '.join(IMPLEMENTATIONS)})"


SEED_CPU = "003_f61b2f697a8bb6f9.txt"
SEED_REFERENCE = "000_112bdb4065c468ca.txt"
PROVEN_EXACT = frozenset(
    f"{op}_{t}" for op in ("add", "sub", "mul", "div") for t in ("bf16", "f16")
)
"""fuel-cpu-backend's contracts that declare max_ulp 0 where the seeds declare none (issue 41):
their certificates prove it on every pair. The bound is hashed, so their revision hash differs
from the seed's too; every other fact is the seed's."""


def as_seeded(facts: dict[str, Any]) -> dict[str, Any]:
    """A contract's facts (`to_dict`) with what PROVEN_EXACT changed left out: its max_ulp
    and its revision hash (the seeds' and the bundled documents' agree on the rest)."""
    if facts["kernel"] not in PROVEN_EXACT:
        return facts
    unhashed = {k: v for k, v in facts.items() if k != "kernel_revision_hash"}
    return unhashed | {"precision": {**facts["precision"], "max_ulp": "issue 41"}}


# One indented, valid contract document; {provider}, {kernel} and {op_kind} are filled in.
DOC_TEMPLATE = """\
---
fkc_version: 1
provider:
  name: {provider}
  backend: Cpu
  kernel_source: "test-source"
  link_registry: tests::ENTRY_POINTS
  revision_base: "test:1"
---
# A provider that only exists in the tests

## {kernel}

Doubles nothing in particular; it is here to be loaded, linked and broken on purpose.

```fkc
kernel: {kernel}
op_kind: {op_kind}
blurb: "test kernel"
backend: Cpu
kernel_source: "test-source"
entry_point: "tests::{kernel}"
kernel_revision_hash: auto
accept:
  inputs:
    - name: a
      dtypes: [F32]
      layout:
        contiguous: required
        strided: rejected
        broadcast_stride0: rejected
        start_offset: rejected
        reverse_strides: rejected
      rank: any
      shape_constraint: same_as=b
    - name: b
      dtypes: [F32]
      layout:
        contiguous: required
        strided: rejected
        broadcast_stride0: rejected
        start_offset: rejected
        reverse_strides: rejected
      rank: 2
      shape_constraint: same_as=a
  op_params: {{variant: None}}
return:
  outputs:
    - name: out
      dtype_rule: passthrough(a)
      shape_rule: same_as(a)
      layout_guarantee: contiguous
      aliasing: none
caps:
  awkward_layout_strategy: requires_contiguous
  fast_paths:
    - {{when: "all_inputs_contiguous", class: cheap_elementwise}}
  in_place: false
  alignment_bytes: 64
  access_granularity_bits: 32
cost:
  provenance: judge_measured
  class: cheap_elementwise
  flops: "n"
  bytes_moved: "a_count * dtype_bytes + b_count * dtype_bytes + n * dtype_bytes"
  overhead_ns: 250
  memory: {{device_bytes: 0, host_bytes: "n * dtype_bytes", disk_bytes: 0}}
precision:
  bit_stable_on_same_hardware: true
  max_ulp: 0
  max_relative: ~
  audited: false
  notes: "test notes"
determinism: same_hardware_bitwise
```
"""


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say at the end of every run which kernel implementations the kernel tests held to the
    scalar reference, and on which machine (bits can depend on its SIMD and its libm)."""
    from fueltensor.fingerprint import machine
    from fueltensor.kernels._chassis import IMPLEMENTATION, NATIVE

    tested = ["pure", *(f"native-{isa}" for isa in NATIVE.ISAS)] if NATIVE else ["pure"]
    missing = "" if NATIVE else " (compiled kernels NOT BUILT: their tests were skipped)"
    terminalreporter.write_sep(
        "-", f"fueltensor kernels tested: {', '.join(tested)}{missing}; default {IMPLEMENTATION}"
    )
    terminalreporter.write_line(f"machine: {machine()}")


def seeds_location() -> Path:
    """FUELTENSOR_SEEDS, else the byte-identical copy in tests/seeds (so the seed checks always
    run; test_seed_copies_match_shared guards the copy against drift)."""
    env = os.environ.get("FUELTENSOR_SEEDS")
    return Path(env) if env else Path(__file__).resolve().parent / "seeds"


@pytest.fixture
def seeds() -> Path:
    """The folder of the two seed FKC documents; skips the test when they are not available."""
    where = seeds_location()
    if not (where / SEED_CPU).is_file() or not (where / SEED_REFERENCE).is_file():
        pytest.skip(f"seed documents not found in {where} (set FUELTENSOR_SEEDS to their folder)")
    return where


@pytest.fixture
def contract_text() -> Callable[..., str]:
    """The test document's text for a provider, kernel and op kind."""

    def make(
        provider: str = "test-provider", kernel: str = "twice_f32", op_kind: str = "AddElementwise"
    ) -> str:
        return DOC_TEMPLATE.format(provider=provider, kernel=kernel, op_kind=op_kind)

    return make


@pytest.fixture
def write(tmp_path: Path) -> Callable[..., Path]:
    """Write text (or bytes) to a file in the test's temporary folder."""

    def write_file(text: str | bytes, name: str = "doc.md") -> Path:
        path = tmp_path / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8", newline="\n")
        return path

    return write_file


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize the `isa` fixture below (where neither the module nor a mark gives one) over the
    instruction sets this CPU runs; imported here, not at the top, since `_impls` imports
    fueltensor, which must come after the environment's clearing above."""
    marked = metafunc.definition.iter_markers("parametrize")
    named = {n.strip() for m in marked for n in _names(m.args[0])}
    own = hasattr(metafunc.module, "isa") or "isa" in named  # the module's own, or a mark's
    if "isa" in metafunc.fixturenames and not own:
        from _impls import runnable_isas

        metafunc.parametrize("isa", runnable_isas(), indirect=True)


def _names(argnames: str | list[str] | tuple[str, ...]) -> list[str]:
    """A parametrize mark's argument names, however written ("a,b" or a sequence)."""
    return argnames.split(",") if isinstance(argnames, str) else list(argnames)


@pytest.fixture
def isa(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each instruction set's compiled body this CPU runs in turn (none without the extension),
    the one selected before after (the compiled kernels' tests)."""
    from _impls import using

    with using(f"native-{request.param}"):
        yield request.param
