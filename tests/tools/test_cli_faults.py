"""The kernel author's loop from the shell on a draft C kernel with an ordinary bug (issue 41 item
6): one that writes 4 bytes past `out`, one that returns a nonzero status, one that calls exit(0).
`compare`, `judge` and `certify` each print the finding (kernel, document file:line, buffer and
bytes where there are some, inputs) in a few lines, no traceback, and exit with status 3 (a
kernel fault), not 1 (bits differ or a bound breaks). Run as a subprocess, as a user runs it."""

from __future__ import annotations

from pathlib import Path

import _documents as documents
import pytest
from _cbuild import build_c
from _cli import CHECKOUT
from _cli import command as fueltensor_cli

import fueltensor as ft
from fueltensor.ops import BY_NAME

ADD = BY_NAME["add"]

KERNEL_C = """#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

int32_t draft_max_f32(const uint8_t *lhs, size_t lhs_bytes, const uint8_t *rhs,
                      size_t rhs_bytes, uint8_t *out, size_t out_bytes) {{
    if (lhs_bytes != rhs_bytes || lhs_bytes != out_bytes || lhs_bytes % 4) return 1;
    for (size_t i = 0; i < lhs_bytes; i += 4) {{
        float a, b;
        memcpy(&a, lhs + i, 4);
        memcpy(&b, rhs + i, 4);
        float r = a != a ? a : b != b ? b : a >= b ? a : b;
        memcpy(out + i, &r, 4);
    }}
    {bug}
    return 0;
}}
"""
BUGS = {
    "overrun": "memset(out + out_bytes, 0x77, 4);",  # 4 bytes past out
    "status": "return 7;",
    "exit": "exit(0);",
}
"""Each bug, and the words its finding must hold besides the kernel, file:line and inputs."""
SAID = {
    "overrun": ("overrun", "buffer out, bytes ", "past its end"),
    "status": ("status 7",),
    "exit": ("exit: the kernel ended the worker process with exit status 0",),
}


@pytest.fixture(scope="module")
def drafts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """Per bug: the draft's FKC document and its library, built with cc."""
    folder = tmp_path_factory.mktemp("faulty")
    built = {}
    for bug, line in BUGS.items():
        source = folder / f"{bug}.c"
        source.write_text(KERNEL_C.format(bug=line))
        doc = folder / f"{bug}.md"
        doc.write_text(
            documents.front(f"draft-{bug}", "draft", "draft", "draft-1", "a draft maximum")
            + documents.section(
                "draft_max_f32",
                "MaximumElementwise",
                "F32",
                source="draft",
                entry_point="draft::draft_max_f32",
                blurb="F32 maximum; NaN-propagating (lhs NaN first), lhs wins a tie.",
                max_ulp=0,
                notes="returns an operand's bits",
            )
        )
        built[bug] = (doc, build_c(source, folder / f"{bug}.so"))
    return built


def line_of(path: Path, text: str) -> int:
    """The 1-based line of `path` where `text` first appears."""
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize("bug", BUGS)
@pytest.mark.parametrize(
    "command", [["compare"], ["judge", "--quick"], ["certify", "--sample", "8"]], ids=" ".join
)
def test_a_kernel_fault_is_a_finding_and_its_own_exit_status(
    drafts: dict[str, tuple[Path, Path]], bug: str, command: list[str]
) -> None:
    doc, library = drafts[bug]
    done = fueltensor_cli(*command, "--contracts", str(doc), "--library", str(library))
    said = done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 3, said
    where = f"{doc}:{line_of(doc, 'kernel: draft_max_f32')}"
    finding = [line for line in said.splitlines() if where in line]
    assert finding and "draft_max_f32" in finding[0], said
    assert "inputs lhs float32[" in said and "rhs float32[" in said
    for word in SAID[bug]:
        assert word in said, said
    if command[0] != "judge":  # the finding alone, on stderr, in a few lines
        assert done.stdout == "" and len(done.stderr.splitlines()) <= 4, done.stderr


def test_the_exit_statuses_are_documented_in_help_and_docs() -> None:
    docs = (CHECKOUT / "docs" / "cli.md").read_text()
    assert "exit status 3" in docs and "fault" in docs
    for command in ("compare", "judge", "certify"):
        text = " ".join(fueltensor_cli(command, "--help").stdout.split())
        assert "3 if a kernel faults" in text, command


def test_explain_folds_the_providers_that_join_only_where_named_into_one_line() -> None:
    done = fueltensor_cli("explain", "add")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    named = [line for line in lines if "where" in line and "named" in line]
    assert len(named) == 1, done.stdout
    for framework in ("numpy", "torch", "jax"):
        count = sum(c.provider.name == framework for c in ft.registry().for_op(ADD.op_kind))
        assert f"{framework} ({count} kernels)" in named[0]
    assert not any(
        line.lstrip().startswith(("rejected numpy_", "rejected torch_")) for line in lines
    )


def test_certify_says_ranges_as_given_and_counts_in_the_right_number() -> None:
    """A range is refused in the spelling it was given (hex stays hex), and a one-thread run
    says "1 thread"."""
    done = fueltensor_cli("certify", "--kernel", "add_bf16", "--lhs", "0x3f00:0x1f02")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "'0x3f00:0x1f02'" in done.stderr and "16128" not in done.stderr
    args = ["--kernel", "add_bf16", "--lhs", "0x3f00:0x3f02", "--rhs", "0x3f00:0x3f02"]
    done = fueltensor_cli("certify", *args, "--threads", "1")
    assert done.returncode == 0, done.stderr
    assert " on 1 thread\n" in done.stdout and "1 threads" not in done.stdout
