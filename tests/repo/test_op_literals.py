"""Ops are data (issue 43): no module of the package spells an op kind or a kernel op id but the
op table (fueltensor/ops.py) and the C header generated from it (ext/src/ops.h). A walk of every
Python module (its AST) and every C source fails on such a literal, naming file:line.

What counts, as decided here:
- Python: every str constant of the AST (dict keys, defaults, comparisons, call arguments, the
  literal parts of f-strings) except documentation: a string that is a statement of its own (a
  docstring, or the attribute docstring under an assignment), which has no effect. Identifiers
  (`np.exp`, `OpKind.ADD`, a keyword `pow=`) are code that Python and mypy check, and comments
  are not literals.
- C: every string literal outside comments (a small tokenizer skips comments and char literals).
- Flagged: a literal equal to an op kind ("ExpElementwise") or a kernel op id ("exp", "powi"),
  case for case: the namespace names that are op ids too ("add", "abs", "maximum") are flagged,
  those that are not ("subtract", "negative") are not. So is a kernel name, `<op id>_<dtype>`
  ("add_f32"), alone or as an entry point's last part ("fuel_cpu_backend::byte_kernels::add_f32"),
  and an f-string part that ends in "<op id>_" before a formatted value (f"add_{dtype}"): kernel
  names are the contracts' data. A framework's own function names ("torch.sub",
  "jax.numpy.power") are that framework's API, not op ids: not flagged.
"""

from __future__ import annotations

import ast
import re
import shutil
from itertools import pairwise
from pathlib import Path
from typing import Final

from _extras import ROOT

from fueltensor import ops

PACKAGE: Final = ROOT / "fueltensor"
"""The package's sources in the checkout (an installed wheel holds no C)."""
TABLE: Final = ("fueltensor/ops.py", "fueltensor/families.py", "fueltensor/ext/src/ops.h")
"""The op table, its families' traits (a family is named for what it does: "cast", "clamp")
and its generated header: the only files that spell ops."""

KERNEL_OP_IDS: Final = frozenset(
    {row.kernel_op for row in ops.CONTRACT_OPS} | {form.kernel_op for form in ops.SCALAR_FORMS}
)
OP_LITERALS: Final = KERNEL_OP_IDS | {kind.value for kind in ops.OpKind}
_IDS: Final = "|".join(sorted(KERNEL_OP_IDS, key=len, reverse=True))
KERNEL_NAME: Final = re.compile(rf"(?:^|:)(?:{_IDS})_[a-z]*[0-9]+$")
"""A kernel name (`add_f32`, `exp_bf16`), alone or after an entry point's `::`."""
KERNEL_STEM: Final = re.compile(rf"(?:^|:)(?:{_IDS})_$")
"""An f-string part that makes a kernel name with the formatted value after it (f"add_{d}")."""

Finding = tuple[int, str]
"""A flagged literal: its line and its text."""


def flagged(text: str) -> bool:
    """Whether `text` spells an op: an op kind, a kernel op id or a kernel name."""
    return text in OP_LITERALS or KERNEL_NAME.search(text) is not None


def python_findings(source: str) -> list[Finding]:
    """The op literals of a Python module, in line order (see the module docstring)."""
    tree = ast.parse(source)
    documentation = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    found = [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in documentation
        and flagged(node.value)
    ]
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            for part, after in pairwise(node.values):
                if (
                    isinstance(part, ast.Constant)
                    and isinstance(part.value, str)
                    and isinstance(after, ast.FormattedValue)
                    and KERNEL_STEM.search(part.value)
                ):
                    found.append((part.lineno, part.value))
    return sorted(found)


def c_string_literals(source: str) -> list[Finding]:
    """Every string literal of a C source with its line, comments and char literals skipped."""
    found: list[Finding] = []
    i, line, n = 0, 1, len(source)
    while i < n:
        if source.startswith("/*", i):
            end = source.find("*/", i + 2)
            end = n if end < 0 else end + 2
        elif source.startswith("//", i):
            end = source.find("\n", i)
            end = n if end < 0 else end
        elif source[i] in "\"'":
            end = i + 1
            while end < n and source[end] not in (source[i], "\n"):
                end += 2 if source[end] == "\\" else 1
            if source[i] == '"':
                found.append((line, source[i + 1 : end]))
            end += 1
        else:
            end = i + 1
        line += source.count("\n", i, end)
        i = end
    return found


def c_findings(source: str) -> list[Finding]:
    """The op literals of a C source."""
    return [(line, text) for line, text in c_string_literals(source) if flagged(text)]


def findings(package: Path) -> dict[str, list[Finding]]:
    """Every file of `package` (a checkout's fueltensor/) that spells an op, by its path from
    the checkout, the table and its header left out."""
    out = {}
    for path in sorted(package.rglob("*")):
        name = path.relative_to(package.parent).as_posix()
        if name in TABLE or "__pycache__" in path.parts:
            continue
        if path.suffix == ".py":
            found = python_findings(path.read_text())
        elif path.suffix in (".c", ".h"):
            found = c_findings(path.read_text())
        else:
            continue
        if found:
            out[name] = found
    return out


def problems(package: Path) -> list[str]:
    """One line per op literal outside the table, naming file:line and the literal."""
    return [
        f"{name}:{line}: {text!r}"
        for name, hits in findings(package).items()
        for line, text in hits
    ]


def test_no_module_outside_the_table_spells_an_op() -> None:
    found = problems(PACKAGE)
    assert not found, (
        "op literals outside the op table (derive them from fueltensor.ops: BY_KIND, "
        "row.kernel_op, OpKind.X, a row's field; in C the enums and OP_NAMES/UNARY_NAMES of "
        "ops.h):\n" + "\n".join(found)
    )


KIND = ops.UNARY_OPS[0].op_kind.value
ID = ops.BINARY_OPS[0].kernel_op
FORM = ops.SCALAR_FORMS[0].kernel_op
NAMESPACE_ONLY = next(r.name for r in ops.CONTRACT_OPS if r.name not in OP_LITERALS)
CLEAN_MODULE = f'''"""A module that names {ID} and {KIND} in documentation only."""

TABLE = {{"{NAMESPACE_ONLY}": 1, "torch.{ID}": 2, "{ID}_with": 3}}
"""{KIND}"""


def call(op: str, dtype: str) -> str:
    """{FORM}"""
    return f"{{op}}_{{dtype}}" + "{ID}s"
'''


def test_a_clean_module_has_no_findings() -> None:
    assert python_findings(CLEAN_MODULE) == []


def test_each_form_of_an_added_literal_is_caught_at_its_line() -> None:
    forms = (
        (f'X = "{ID}"', ID),
        (f'X = "{KIND}"', KIND),
        (f'X = {{"{FORM}": 1}}', FORM),
        (f'X = call("{ID}", "f32") if "{ID}" else None', ID),
        (f'X = "{ID}_bf16"', f"{ID}_bf16"),
        (
            f'X = "fuel_cpu_backend::byte_kernels::{ID}_f32"',
            f"fuel_cpu_backend::byte_kernels::{ID}_f32",
        ),
        (f'X = f"{ID}_{{dtype}}"', f"{ID}_"),
        (f'X = f"kernel {{n}}: {{name}}" if n == "{KIND}" else ""', KIND),
    )
    lines = CLEAN_MODULE.count("\n")
    for statement, literal in forms:
        found = python_findings(CLEAN_MODULE + statement + "\n")
        assert found and set(found) == {(lines + 1, literal)}, (statement, found)


CLEAN_C = f"""/* "{ID}" in a comment, and {KIND} */
#include "ops.h"
// "{ID}" after a line comment
static const char quote = '"', other = '\\'';
static const char *names[] = {{"{ID}_with", "say \\"{ID}\\"", OP_NAMES[0]}};
"""


def test_the_c_tokenizer_skips_comments_and_char_literals() -> None:
    assert c_string_literals(CLEAN_C) == [
        (2, "ops.h"),
        (5, f"{ID}_with"),
        (5, f'say \\"{ID}\\"'),
    ]
    assert c_findings(CLEAN_C) == []
    assert c_findings(CLEAN_C + f'int n = find("{FORM}");\n') == [(6, FORM)]


def _copy(tmp_path: Path) -> Path:
    """The checkout's package copied to `tmp_path` (its sources; no build products)."""
    return Path(
        shutil.copytree(
            PACKAGE, tmp_path / "fueltensor", ignore=shutil.ignore_patterns("__pycache__", "*.so")
        )
    )


def _mutate(path: Path, snippet: str, replacement: str) -> int:
    """Replace the one `snippet` of `path` by `replacement`; the line it starts on."""
    text = path.read_text()
    assert text.count(snippet) == 1, f"{snippet!r} is not in {path} once"
    path.write_text(text.replace(snippet, replacement))
    return text[: text.index(snippet)].count("\n") + 1


def test_a_literal_put_back_into_a_copy_of_the_package_is_caught(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    assert problems(copy) == []
    rem = ops.OpKind.REM.value
    powi = ops.SCALAR_FORMS[0].kernel_op
    py = _mutate(
        copy / "tools" / "differences.py", "if op_kind == OpKind.REM:", f'if op_kind == "{rem}":'
    )
    c = _mutate(copy / "ext" / "src" / "native" / "module.c", ": POWI_NAME;", f': "{powi}";')
    assert problems(copy) == [
        f"fueltensor/ext/src/native/module.c:{c}: {powi!r}",
        f"fueltensor/tools/differences.py:{py}: {rem!r}",
    ]
