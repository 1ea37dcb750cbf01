"""The kernel author's loop from the shell, on a draft that is no packaged plugin: a C
`maximum_f32` with a bug and its FKC document in a temporary folder, built with cc, then linted,
explained, compared and judged with `--contracts`, `--library` and `--module`; the failure names
the inputs; fixed and rebuilt, it passes. Each build gets a new path (a library rebuilt at the
same path is not reloaded in the same process: issue 35). Also a Python module named on the
command line, what a lint reports with file:line, and that a document alone loads nothing."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import _documents as documents
import pytest

import fueltensor as ft
from fueltensor.cli import main
from fueltensor.ops import OpKind

registry_module = sys.modules["fueltensor.registry"]

KERNEL_C = """#include <stdint.h>
#include <stddef.h>
#include <string.h>

int32_t my_max_f32(const uint8_t *lhs, size_t lhs_bytes, const uint8_t *rhs, size_t rhs_bytes,
                   uint8_t *out, size_t out_bytes) {{
    if (lhs_bytes != rhs_bytes || lhs_bytes != out_bytes || lhs_bytes % 4) return 1;
    for (size_t i = 0; i < lhs_bytes / 4; i++) {{
        float a, b, r;
        memcpy(&a, lhs + 4 * i, 4);
        memcpy(&b, rhs + 4 * i, 4);
        r = {select};
        memcpy(out + 4 * i, &r, 4);
    }}
    return 0;
}}
"""
RIGHT = "a != a ? a : b != b ? b : a >= b ? a : b"
"""The contract's rule: the lhs NaN, else the rhs NaN, else the larger, lhs on a ±0 tie."""
BUGS = {
    "signed-zero-tie": "a != a ? a : b != b ? b : a > b ? a : b",  # rhs on a ±0 tie (NumPy's)
    "lhs-nan": "b != b ? b : a >= b ? a : b",  # a NaN lhs loses to a number
}

MODULE = """import numpy as np


def my_max_f32(lhs, rhs, *, out):
    pick_lhs = np.isnan(lhs) | (~np.isnan(rhs) & (lhs >= rhs))
    np.copyto(out, np.where(pick_lhs, lhs, rhs))
"""
"""The contract's rule in NumPy, for `--module`."""

Shell = Callable[..., tuple[int, str, str]]


@pytest.fixture
def shell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Shell:
    """`fueltensor ARGS...` run in the test's folder: (exit status, stdout, stderr). Providers it
    registers are forgotten after the test."""
    monkeypatch.chdir(tmp_path)
    ft.registry()  # the built-in and installed providers registered before the copy is taken
    monkeypatch.setattr(registry_module, "_links", dict(registry_module._links))

    def run(*args: str) -> tuple[int, str, str]:
        status = main(list(args))
        out, err = capsys.readouterr()
        return status, out, err

    return run


def cc() -> str:
    """The C compiler, or skip the test saying it is missing."""
    found = shutil.which("cc")
    if found is None:
        pytest.skip("cc not found on PATH: the kernel author's loop builds a C kernel with it")
    return found


def build(folder: Path, select: str, name: str, symbol: str = "my_max_f32") -> Path:
    """The C kernel with `select` as its choice, exported as `symbol`, built with
    `cc -shared -fPIC` into `name`.so."""
    source = folder / f"{name}.c"
    source.write_text(KERNEL_C.format(select=select).replace("my_max_f32", symbol))
    library = folder / f"{name}.so"
    subprocess.run([cc(), "-O2", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return library


def document(
    folder: Path,
    provider: str = "my-c-max",
    module: str = "my_c",
    max_ulp: str = "0",
    name: str = "my-max.md",
) -> Path:
    """The draft's FKC document, written into `folder` as `name`."""
    path = folder / name
    title = f"{provider}: a maximum written outside fueltensor"
    text = documents.front(provider, "my-c", "my_c", "draft-1", title) + documents.section(
        "my_max_f32",
        "MaximumElementwise",
        "F32",
        source="my-c",
        entry_point=f"{module}::my_max_f32",
        blurb="F32 maximum of two same-shape contiguous tensors; NaN-propagating, lhs wins ties.",
        max_ulp=max_ulp,
        notes="an operand: a NaN one (lhs first), else the larger, lhs on a tie",
    )
    path.write_text(text)
    return path


def line_of(path: Path, text: str) -> int:
    """The 1-based line of `path` where `text` first appears."""
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def worst_inputs(out: str) -> str:
    """The inputs of the worst element the comparison's failure names."""
    found = re.search(r"maximum_f32 vs my_max_f32: .*?worst at \(\d+,\): inputs \((.*?)\) ->", out)
    assert found is not None, out
    return found[1]


@pytest.mark.parametrize("bug", BUGS)
def test_the_loop_from_a_c_file_to_a_passing_judge(shell: Shell, tmp_path: Path, bug: str) -> None:
    doc = document(tmp_path)
    draft = ["--contracts", doc.name]
    status, out, _ = shell("contracts", *draft, "--check")
    assert status == 0, out  # not linked yet: a warning, not an error
    assert f"my-max.md:{line_of(doc, 'entry_point:')}: warning: entry_point" in out
    assert "1 contract checked, 0 problems, 1 warning" in out

    lib = ["--library", f"./{build(tmp_path, BUGS[bug], 'first').name}"]
    status, out, _ = shell("contracts", *draft, *lib, "--check")
    assert (status, out.strip()) == (0, "1 contract checked, 0 problems")

    status, out, err = shell("explain", "maximum", *draft, *lib)
    assert status == 0 and "via fuel-cpu-backend" in out, err
    (outranked,) = [line for line in out.splitlines() if "rejected my_max_f32" in line]
    assert "144 bytes moved vs 144 for maximum_f32" in outranked
    assert "use_backend('my-c-max')" in outranked
    for flag in ("--backend", "--provider"):
        status, out, _ = shell("explain", "maximum", *draft, *lib, flag, "my-c-max")
        assert status == 0 and "via my-c-max" in out and "1. my_max_f32(lhs, rhs)" in out

    status, out, _ = shell("compare", *draft, *lib)
    assert status == 1 and "kernels disagree beyond 0 ULP" in out
    inputs = worst_inputs(out)
    if bug == "signed-zero-tie":
        assert "0x00000000" in inputs and "0x80000000" in inputs
    else:  # the lhs NaN, named by the contract's input name
        assert re.match(r"(lhs )?nan \(0x", inputs), inputs
    status, out, _ = shell("judge", "--quick", *draft, *lib)
    assert status == 1 and "FAIL my_max_f32" in out
    if bug == "signed-zero-tie":  # +0 and -0 are 0 ULP apart: the selection's sign fails it
        assert "not the reference's NaN or zero" in out

    lib = ["--library", str(build(tmp_path, RIGHT, "fixed"))]
    status, out, _ = shell("compare", "maximum", "cpu", "my-c-max", *draft, *lib)
    assert status == 0 and re.search(
        r"\n1 operation ran: 1 compared, 0 not compared; 0 of [\d,]+ compared elements differ", out
    )
    status, out, _ = shell("judge", "--quick", *draft, *lib)
    assert status == 0 and "1 audit, 0 failing" in out


def test_a_python_module_named_on_the_command_line(shell: Shell, tmp_path: Path) -> None:
    doc = document(tmp_path, provider="my-py-max")
    (tmp_path / "my_kernels.py").write_text(MODULE)
    for module in ("my_kernels.py", "my_kernels"):  # a file, or a module in the working folder
        draft = ["--contracts", doc.name, "--module", module]
        status, out, _ = shell("explain", "maximum", *draft, "--backend", "my-py-max")
        assert status == 0 and "1. my_max_f32(lhs, rhs)" in out
        assert shell("compare", *draft)[0] == 0
        assert shell("judge", "--quick", *draft)[0] == 0


def test_a_module_may_map_entry_points_itself(shell: Shell, tmp_path: Path) -> None:
    doc = document(tmp_path, provider="my-mapped-max")
    code = MODULE.replace("def my_max_f32", "def anything") + (
        '\n\nENTRY_POINTS = {"my_c::my_max_f32": anything}\n'
    )
    (tmp_path / "mapped.py").write_text(code)
    draft = ["--contracts", doc.name, "--module", "mapped.py"]
    assert shell("judge", "--quick", *draft)[0] == 0
    (tmp_path / "unmapped.py").write_text(code.replace("my_c::", "other::"))
    other = document(tmp_path, provider="my-unmapped-max", name="unmapped.md")
    status, _, err = shell("judge", "--quick", "--contracts", other.name, "--module", "unmapped.py")
    assert status == 2 and "unmapped.py: ENTRY_POINTS has no 'my_c::my_max_f32'" in err


def test_a_module_that_fails_to_import_is_named(shell: Shell, tmp_path: Path) -> None:
    doc = document(tmp_path)
    (tmp_path / "broken.py").write_text("import numpy as np\n\n1 / 0\n")
    status, _, err = shell("explain", "maximum", "--contracts", doc.name, "--module", "broken.py")
    assert status == 2 and "--module broken.py: ZeroDivisionError" in err
    status, _, err = shell("compare", "--contracts", doc.name, "--module", "absent.py")
    assert status == 2 and "--module absent.py: no such file" in err
    status, _, err = shell("judge", "--contracts", doc.name, "--library", "absent.so")
    assert status == 2 and "--library absent.so: no such file" in err


def test_compare_takes_operations_and_providers_by_name(shell: Shell, tmp_path: Path) -> None:
    status, out, _ = shell("compare", "add", "mul", "cpu", "--providers", "reference")
    assert status == 0
    pairs = [line.split()[0] for line in out.splitlines()[2:] if " vs " in line]
    assert sorted(set(pairs)) == ["add", "multiply"]
    assert all("broadcast_" in line for line in out.splitlines()[2:] if " vs " in line)
    status, _, err = shell("compare", "plus")
    assert status == 2 and "'plus' is neither an operation (add," in err
    assert "nor a provider: no provider is called 'plus'" in err
    doc = document(tmp_path)  # --contracts takes every word after it: said, with the fix
    status, _, err = shell("compare", "--contracts", doc.name, "maximum", "--library", "x.so")
    assert status == 2 and "name operations and providers before it" in err
    assert "(fueltensor compare maximum --contracts ...)" in err


def test_library_and_module_link_the_documents_named(shell: Shell) -> None:
    for command in ("contracts", "explain", "compare", "judge"):
        args = [command, "add"] if command == "explain" else [command]
        status, _, err = shell(*args, "--module", "anything.py")
        assert status == 2 and "link the documents of --contracts" in err, command


def test_a_document_alone_never_imports_or_loads_anything(shell: Shell, tmp_path: Path) -> None:
    """The entry point names a module sitting in the working folder, which would leave a mark
    if imported; no command imports it unless `--module` names it."""
    doc = document(tmp_path, provider="never-max", module="i32c_trap")
    (tmp_path / "i32c_trap.py").write_text(
        "from pathlib import Path\n\nPath('imported').touch()\n\n" + MODULE
    )
    assert shell("contracts", "--contracts", doc.name, "--check")[0] == 0
    for command in ("explain", "compare", "judge"):
        args = [command, "maximum"] if command == "explain" else [command]
        status, _, err = shell(*args, "--contracts", doc.name)
        assert status == 2 and "is not linked" in err and "--module FILE" in err
    assert not (tmp_path / "imported").exists() and "i32c_trap" not in sys.modules


def test_a_lint_names_every_fault_with_its_file_and_line(shell: Shell, tmp_path: Path) -> None:
    """One document per fault: a typo in op_kind (loads, never dispatched), a kernel name the
    registry has already, a value the schema refuses, and a library without the symbol."""
    faults = tmp_path / "faults"
    faults.mkdir()
    typo = document(faults, provider="typo-max", name="typo.md")
    typo.write_text(typo.read_text().replace("MaximumElementwise", "MaximumElementwize"))
    twin = document(faults, provider="twin-max", name="twin.md")
    twin.write_text(twin.read_text().replace("kernel: my_max_f32", "kernel: maximum_f32"))
    bad = document(faults, provider="bad-max", max_ulp="lots", name="bad.md")
    status, out, _ = shell("contracts", "--contracts", str(faults), "--check")
    assert status == 1
    lines = out.splitlines()
    assert f"{bad}:{line_of(bad, 'max_ulp:')}: precision.max_ulp:" in lines[0]
    assert re.match(rf"{twin}:{line_of(twin, 'kernel: maximum_f32')}: kernel: duplicate", lines[1])
    assert "fuel-cpu-backend.md" in lines[1]  # where the registry declares it first
    assert lines[2].startswith(f"{typo}:{line_of(typo, 'op_kind:')}: op_kind 'MaximumElementwize'")
    assert [": warning: entry_point" in line for line in lines[3:-1]] == [True, True]
    assert lines[-1] == "2 contracts checked, 3 problems, 2 warnings"  # bad.md did not load

    doc = document(tmp_path)
    wrong = build(tmp_path, RIGHT, "wrong", symbol="my_maximum_f32")
    status, out, _ = shell("contracts", "--contracts", doc.name, "--library", str(wrong), "--check")
    assert status == 1 and f"my-max.md:{line_of(doc, 'entry_point:')}: entry_point:" in out
    assert "has no symbol 'my_max_f32'" in out and "warning" not in out  # named: an error


def test_a_listing_of_a_draft_needs_no_kernel(shell: Shell, tmp_path: Path) -> None:
    doc = document(tmp_path)
    status, out, err = shell("contracts", "--contracts", doc.name)
    assert status == 0 and err == ""
    assert out.splitlines()[1].split()[:3] == ["my_max_f32", "MaximumElementwise", "my-c-max"]


def test_a_draft_joins_the_entry_points_its_provider_registered(
    shell: Shell, tmp_path: Path
) -> None:
    """A provider that registered one entry point in code (as an installed plugin does) gets a
    second from `--library` without losing the first."""
    namespace: dict[str, object] = {}
    exec(MODULE, namespace)  # the module's kernel, registered as a plugin would
    kernel = namespace["my_max_f32"]
    assert callable(kernel)
    ft.register_provider("half-linked-max", {"plugin::max": kernel})
    doc = document(tmp_path, provider="half-linked-max")
    text = doc.read_text()
    block = text[text.index("## my_max_f32") :]
    twin = block.replace("my_max_f32", "plugin_max_f32").replace(
        "my_c::plugin_max_f32", "plugin::max"
    )
    doc.write_text(text + "\n" + twin)
    lib = build(tmp_path, RIGHT, "joined")
    status, out, err = shell("judge", "--quick", "--contracts", doc.name, "--library", str(lib))
    assert status == 0, err
    assert "2 audits, 0 failing" in out


EXP_MODULE = """import numpy as np


def my_exp_f32(x, *, out):
    with np.errstate(all="ignore"):
        wide = np.exp(x.astype(np.float64)).astype(np.float32)  # in double, rounded once
        np.copyto(out, np.where(np.isnan(x), x * np.float32(1), wide))  # a NaN quieted, kept
{bug}"""
EXP_BUG = "    out[np.isneginf(x)] = -0.0  # exp(-inf) is +0 (C99 Annex F)\n"


def test_the_loop_of_a_unary_kernel_from_the_shell(shell: Shell, tmp_path: Path) -> None:
    """A Python exp with exp(-inf) = -0: linted, explained, compared with the cpu kernel and
    judged, each naming the input; fixed, the comparison agrees within its bound and the judge
    passes."""
    kind = OpKind.EXP.value
    semantics = (
        "semantics:\n  source: [formula]\n  nan: {operand: either, result: [quieted], sign: kept}"
        "\n  subnormals: kept\n  position: invariant"
    )
    doc = tmp_path / "my-exp.md"
    doc.write_text(
        documents.front("my-exp", "mine", "my_exp", "draft-1", "my-exp: exp in double")
        + documents.section(
            "my_exp_f32",
            kind,
            "F32",
            source="mine",
            entry_point="my_exp::my_exp_f32",
            blurb="F32 exp of a contiguous tensor, in double, rounded once.",
            max_ulp=1,
            notes="exp in double, rounded once",
            semantics=semantics,
            unary=True,
        )
    )
    for bug, verdict, module in ((EXP_BUG, 1, "my_exp.py"), ("", 0, "my_exp_fixed.py")):
        (tmp_path / module).write_text(EXP_MODULE.format(bug=bug))  # a new file: a new import
        draft = ("--contracts", doc.name, "--module", module)
        assert shell("contracts", "--check", *draft)[0] == 0
        status, out, _ = shell("explain", "exp", "--backend", "my-exp", *draft)
        assert status == 0 and "via my-exp" in out and "my_exp_f32(x)" in out
        # bit for bit with the cpu kernel and the oracle (the oracle alone in pure-NumPy mode)
        status, out, _ = shell("compare", "exp", "cpu", "reference", "my-exp", *draft)
        assert status == verdict, out
        status, out, _ = shell("judge", *draft)
        assert status == verdict, out
        if bug:  # the judge names the lane: exp(-inf) gave -0
            assert "but exp(-inf) (0xff800000) gave -0 (0x80000000)" in out, out
