"""Every kind of malformed document raises ContractError naming file, line and field."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fueltensor import ContractError
from fueltensor.fkc import load_document

# (id, text to replace, replacement, expected field, text the message must contain, the line
# the error must point at: the first line containing this text in the changed document)
CASES = [
    (
        "unknown-key",
        "determinism:",
        "colour: red\ndeterminism:",
        "colour",
        "unknown key",
        "colour:",
    ),
    (
        "unknown-nested-key",
        "  in_place: false",
        "  in_place: false\n  speed: fast",
        "caps.speed",
        "accepted here",
        "speed:",
    ),
    (
        "missing-key",
        "determinism: same_hardware_bitwise\n",
        "",
        "determinism",
        "missing",
        "kernel:",
    ),
    ("missing-nested-key", "  in_place: false\n", "", "caps.in_place", "missing", "caps:"),
    (
        "wrong-type",
        "alignment_bytes: 64",
        "alignment_bytes: sixty",
        "caps.alignment_bytes",
        "integer",
        "alignment_bytes:",
    ),
    (
        "not-a-power-of-two",
        "alignment_bytes: 64",
        "alignment_bytes: 48",
        "caps.alignment_bytes",
        "power of two",
        "alignment_bytes:",
    ),
    (
        "wrong-bool",
        "in_place: false",
        "in_place: nope",
        "caps.in_place",
        "true or false",
        "in_place:",
    ),
    (
        "registrable-not-bool",
        "blurb:",
        "registrable: maybe\nblurb:",
        "registrable",
        "true or false",
        "registrable:",
    ),
    (
        "unknown-dtype",
        "dtypes: [F32]\n      layout",
        "dtypes: [F8]\n      layout",
        "accept.inputs[0].dtypes",
        "accepted: BOOL",
        "[F8]",
    ),
    (
        "duplicate-dtype",
        "dtypes: [F32]\n      layout",
        "dtypes: [F32, F32]\n      layout",
        "accept.inputs[0].dtypes",
        "twice",
        "[F32, F32]",
    ),
    (
        "unknown-layout-flag",
        "        reverse_strides: rejected\n",
        "        reverse_strides: rejected\n        sideways: allowed\n",
        "accept.inputs[0].layout.sideways",
        "accepted here: contiguous",
        "sideways",
    ),
    (
        "unknown-layout-value",
        "contiguous: required",
        "contiguous: maybe",
        "accept.inputs[0].layout.contiguous",
        "accepted: required, rejected, allowed",
        "maybe",
    ),
    ("bad-rank", "rank: 2", "rank: -1", "accept.inputs[1].rank", "accepted: any", "rank: -1"),
    (
        "bad-rank-word",
        "rank: 2",
        "rank: many",
        "accept.inputs[1].rank",
        "accepted: any",
        "rank: many",
    ),
    (
        "shape-constraint-missing-input",
        "shape_constraint: same_as=b",
        "shape_constraint: same_as=c",
        "accept.inputs[0].shape_constraint",
        "accepted: same_as=<b> | broadcast_to=<b>",
        "same_as=c",
    ),
    (
        "shape-constraint-unknown-kind",
        "shape_constraint: same_as=b",
        "shape_constraint: bigger_than=b",
        "accept.inputs[0].shape_constraint",
        "accepted",
        "bigger_than",
    ),
    (
        "rule-missing-input",
        "dtype_rule: passthrough(a)",
        "dtype_rule: passthrough(c)",
        "return.outputs[0].dtype_rule",
        "not an input",
        "passthrough(c)",
    ),
    (
        "rule-unknown",
        "shape_rule: same_as(a)",
        "shape_rule: transpose(a)",
        "return.outputs[0].shape_rule",
        "accepted: same_as(<input>), broadcast(<input>, <input>, ...)",
        "transpose",
    ),
    (
        "rule-wrong-arity",
        "shape_rule: same_as(a)",
        "shape_rule: broadcast(a)",
        "return.outputs[0].shape_rule",
        "accepted",
        "broadcast(a)",
    ),
    (
        "layout-strategy",
        "awkward_layout_strategy: requires_contiguous",
        "awkward_layout_strategy: handles_strides",
        "caps.awkward_layout_strategy",
        "accepted: requires_contiguous",
        "handles_strides",
    ),
    (
        "backend-disagrees",
        "backend: Cpu\nkernel_source",
        "backend: Gpu\nkernel_source",
        "backend",
        "accepted: 'Cpu'",
        "backend: Gpu",
    ),
    (
        "kernel-source-disagrees",
        'kernel_source: "test-source"\nentry_point',
        'kernel_source: "other"\nentry_point',
        "kernel_source",
        "accepted: 'test-source'",
        'kernel_source: "other"',
    ),
    (
        "formula-does-not-parse",
        'flops: "n"',
        'flops: "n +* 2"',
        "cost.flops",
        "accepted: numbers",
        "flops:",
    ),
    (
        "formula-unknown-variable",
        'flops: "n"',
        'flops: "c_count * 2"',
        "cost.flops",
        "accepted: a_bytes, a_count, b_bytes, b_count, dtype_bytes, n",
        "flops:",
    ),
    (
        "formula-code",
        'flops: "n"',
        "flops: \"__import__('os')\"",
        "cost.flops",
        "unexpected character",
        "flops:",
    ),
    ("formula-power", 'flops: "n"', 'flops: "9 ** 9 ** 9"', "cost.flops", "'**'", "flops:"),
    (
        "formula-wrong-type",
        'flops: "n"',
        "flops: [n]",
        "cost.flops",
        "number or a string",
        "flops:",
    ),
    ("bound-negative", "max_ulp: 0", "max_ulp: -1", "precision.max_ulp", ">= 0", "max_ulp:"),
    (
        "kernel-not-identifier",
        "kernel: twice_f32",
        "kernel: twice f32",
        "kernel",
        "identifier",
        "kernel: twice f32",
    ),
    (
        "duplicate-input",
        "    - name: b",
        "    - name: a  # again",
        "accept.inputs[1].name",
        "duplicate",
        "a  # again",
    ),
    (
        "output-aliasing",
        "aliasing: none",
        "aliasing: lhs",
        "return.outputs[0].aliasing",
        "accepted: none",
        "aliasing: lhs",
    ),
    (
        "fkc-version",
        "fkc_version: 1",
        "fkc_version: 2",
        "fkc_version",
        "accepted: 1",
        "fkc_version:",
    ),
    (
        "provider-field-missing",
        '  revision_base: "test:1"\n',
        "",
        "provider.revision_base",
        "missing",
        "provider:",
    ),
    (
        "empty-dtypes",
        "dtypes: [F32]\n      layout",
        "dtypes: []\n      layout",
        "accept.inputs[0].dtypes",
        "expected at least one of",
        "dtypes: []",
    ),
    (
        "dtypes-not-a-list",
        "dtypes: [F32]\n      layout",
        "dtypes: F32\n      layout",
        "accept.inputs[0].dtypes",
        "expected a list",
        "dtypes: F32",
    ),
    (
        "output-named-like-an-input",
        "    - name: out",
        "    - name: a  # the output",
        "return.outputs[0].name",
        "output name 'a' is already used",
        "a  # the output",
    ),
    (
        "rule-names-one-input-twice",
        "shape_rule: same_as(a)",
        "shape_rule: broadcast(a, a)",
        "return.outputs[0].shape_rule",
        "names the same input twice",
        "broadcast(a, a)",
    ),
    (
        "shape-constraint-names-itself",
        "shape_constraint: same_as=b",
        "shape_constraint: same_as=a",
        "accept.inputs[0].shape_constraint",
        "accepted: same_as=<b> | broadcast_to=<b>",
        "same_as=a",
    ),
    (
        "shape-constraint-without-equals",
        "shape_constraint: same_as=b",
        "shape_constraint: same_as b",
        "accept.inputs[0].shape_constraint",
        "accepted: same_as=<b>",
        "same_as b",
    ),
    (
        "rank-bool",
        "rank: 2",
        "rank: true",
        "accept.inputs[1].rank",
        "accepted: any",
        "rank: true",
    ),
    (
        "granularity-zero",
        "access_granularity_bits: 32",
        "access_granularity_bits: 0",
        "caps.access_granularity_bits",
        "expected an integer from 1 to 32768",
        "access_granularity_bits: 0",
    ),
    (
        "granularity-beyond-a-page",
        "access_granularity_bits: 32",
        "access_granularity_bits: 32769",
        "caps.access_granularity_bits",
        "expected an integer from 1 to 32768",
        "access_granularity_bits: 32769",
    ),
    (
        "alignment-zero",
        "alignment_bytes: 64",
        "alignment_bytes: 0",
        "caps.alignment_bytes",
        "expected an integer from 1 to 4096",
        "alignment_bytes: 0",
    ),
    (
        "alignment-2-to-62",
        "alignment_bytes: 64",
        "alignment_bytes: 4611686018427387904",
        "caps.alignment_bytes",
        "expected an integer from 1 to 4096, got int 4611686018427387904",
        "alignment_bytes: 4611686018427387904",
    ),
    (
        "alignment-beyond-a-page",
        "alignment_bytes: 64",
        "alignment_bytes: 8192",
        "caps.alignment_bytes",
        "expected an integer from 1 to 4096",
        "alignment_bytes: 8192",
    ),
    (
        "rank-beyond-numpy",
        "rank: 2",
        "rank: 65",
        "accept.inputs[1].rank",
        "accepted: any or an integer from 0 to 64",
        "rank: 65",
    ),
    (
        "not-a-mapping",
        "op_params: {variant: None}",
        "op_params: [None]",
        "accept.op_params",
        "expected a mapping",
        "op_params: [None]",
    ),
    (
        "op-param-not-a-scalar",
        "op_params: {variant: None}",
        "op_params: {variant: [None]}",
        "accept.op_params.variant",
        "expected a scalar",
        "op_params: {variant: [None]}",
    ),
    (
        "empty-string",
        'entry_point: "tests::twice_f32"',
        'entry_point: ""',
        "entry_point",
        "expected a non-empty string",
        'entry_point: ""',
    ),
    (
        "determinism-not-a-string",
        "determinism: same_hardware_bitwise",
        "determinism: 5",
        "determinism",
        "expected a non-empty string, got int 5",
        "determinism: 5",
    ),
    (
        "blurb-not-text",
        'blurb: "test kernel"',
        "blurb: [test, kernel]",
        "blurb",
        "expected a string, got a list",
        "blurb: [test",
    ),
    (
        "notes-not-text",
        'notes: "test notes"',
        "notes: {a: b}",
        "precision.notes",
        "expected a string, got a mapping",
        "notes: {a: b}",
    ),
    (
        "op-kind-not-identifier",
        "op_kind: AddElementwise",
        "op_kind: Add-Elementwise",
        "op_kind",
        "identifier",
        "op_kind: Add-",
    ),
    (
        "bound-infinite",
        "max_ulp: 0",
        "max_ulp: .inf",
        "precision.max_ulp",
        "inf is not finite",
        "max_ulp: .inf",
    ),
    (
        "overhead-infinite",
        "overhead_ns: 250",
        "overhead_ns: .inf",
        "cost.overhead_ns",
        "inf is not finite",
        "overhead_ns: .inf",
    ),
    (
        "escape-in-a-string",
        'entry_point: "tests::twice_f32"',
        'entry_point: "tests::twice\\x1b[2J"',
        "entry_point",
        "holds the control character '\\x1b'; accepted: printable text",
        "entry_point:",
    ),
    (
        "string-too-long",
        'entry_point: "tests::twice_f32"',
        'entry_point: "' + "x" * 1025 + '"',
        "entry_point",
        "1025 characters long; accepted: at most 1024",
        "entry_point:",
    ),
    (
        "op-param-not-finite",
        "op_params: {variant: None}",
        "op_params: {variant: .nan}",
        "accept.op_params.variant",
        "nan is not finite",
        "op_params:",
    ),
    (
        "bound-bool",
        "max_ulp: 0",
        "max_ulp: true",
        "precision.max_ulp",
        "expected a number >= 0 or ~",
        "max_ulp: true",
    ),
    (
        "relative-bound-negative",
        "max_relative: ~",
        "max_relative: -0.5",
        "precision.max_relative",
        "expected a number >= 0 or ~",
        "max_relative: -0.5",
    ),
    (
        "relative-bound-beyond-a-float",
        "max_relative: ~",
        "max_relative: " + "7" * 400,
        "precision.max_relative",
        f"an integer of {int('7' * 400).bit_length()} bits is beyond a float",
        "max_relative: 777",
    ),
    (
        "fast-path-without-when",
        '- {when: "all_inputs_contiguous", class: cheap_elementwise}',
        "- {class: cheap_elementwise}",
        "caps.fast_paths[0].when",
        "missing required key",
        "- {class",
    ),
    (
        "fast-path-not-a-list",
        '\n    - {when: "all_inputs_contiguous", class: cheap_elementwise}',
        " none",
        "caps.fast_paths",
        "expected a list",
        "fast_paths: none",
    ),
    (
        "layout-guarantee",
        "layout_guarantee: contiguous",
        "layout_guarantee: strided",
        "return.outputs[0].layout_guarantee",
        "accepted: contiguous",
        "layout_guarantee: strided",
    ),
    (
        "memory-formula-unknown-variable",
        'host_bytes: "n * dtype_bytes"',
        'host_bytes: "n * bytes"',
        "cost.memory.host_bytes",
        "unknown variable bytes",
        'host_bytes: "n * bytes"',
    ),
    (
        "bytes-moved-does-not-parse",
        'bytes_moved: "a_count',
        'bytes_moved: "(a_count',
        "cost.bytes_moved",
        "accepted: numbers",
        "bytes_moved:",
    ),
    (
        "overhead-negative",
        "overhead_ns: 250",
        "overhead_ns: -250",
        "cost.overhead_ns",
        ">= 0",
        "overhead_ns:",
    ),
    (
        "provider-field-not-a-string",
        '  backend: Cpu\n  kernel_source: "test-source"\n  link',
        '  backend: [Cpu]\n  kernel_source: "test-source"\n  link',
        "provider.backend",
        "expected a non-empty string",
        "backend: [Cpu]",
    ),
    (
        "duplicate-key",
        "determinism: same_hardware_bitwise",
        "determinism: same_hardware_bitwise\ndeterminism: none",
        "determinism",
        "twice",
        "determinism: none",
    ),
]


def _line_of(text: str, anchor: str) -> int:
    return text[: text.index(anchor)].count("\n") + 1


@pytest.mark.parametrize(
    ("old", "new", "field", "message", "anchor"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_malformed_document(
    contract_text: Callable[..., str],
    write: Callable[..., Path],
    old: str,
    new: str,
    field: str,
    message: str,
    anchor: str,
) -> None:
    original = contract_text()
    assert old in original
    text = original.replace(old, new, 1)
    path = write(text)
    with pytest.raises(ContractError) as info:
        load_document(path)
    error = info.value
    assert error.path == str(path)
    assert error.field == field
    assert error.line == _line_of(text, anchor)
    assert message in str(error)
    assert str(error).startswith(f"{path}:{error.line}: {field}: ")


def test_the_unchanged_document_is_valid(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    _, contracts = load_document(write(contract_text()))
    assert [c.name for c in contracts] == ["twice_f32"]


def _cut(text: str, start: str, end: str, replacement: str) -> str:
    """`text` with everything from `start` up to (not including) `end` replaced."""
    i = text.index(start)
    return text[:i] + replacement + text[text.index(end, i) :]


def _twice(text: str, start: str, end: str) -> str:
    """`text` with the span from `start` through `end` written twice in a row."""
    i = text.index(start)
    j = text.index(end, i) + len(end)
    return text[:j] + text[i:j] + text[j:]


# Rules about whole lists: (id, rewrite of the valid document, field, message, anchor, which
# occurrence of the anchor the error line points at)
LIST_CASES: list[tuple[str, Callable[[str], str], str, str, str, int]] = [
    (
        "no-inputs",
        lambda t: _cut(t, "  inputs:\n", "  op_params", "  inputs: []\n"),
        "accept.inputs",
        "expected at least one input",
        "inputs: []",
        1,
    ),
    (
        "no-outputs",
        lambda t: _cut(t, "  outputs:\n", "caps:", "  outputs: []\n"),
        "return.outputs",
        "expected at least one output",
        "outputs: []",
        1,
    ),
    (
        "two-outputs-one-name",
        lambda t: _twice(t, "    - name: out\n", "      aliasing: none\n"),
        "return.outputs[1].name",
        "output name 'out' is already used",
        "- name: out",
        2,
    ),
]


@pytest.mark.parametrize(
    ("rewrite", "field", "message", "anchor", "nth"),
    [c[1:] for c in LIST_CASES],
    ids=[c[0] for c in LIST_CASES],
)
def test_malformed_lists(
    contract_text: Callable[..., str],
    write: Callable[..., Path],
    rewrite: Callable[[str], str],
    field: str,
    message: str,
    anchor: str,
    nth: int,
) -> None:
    text = rewrite(contract_text())
    path = write(text)
    with pytest.raises(ContractError) as info:
        load_document(path)
    at = -1
    for _ in range(nth):
        at = text.index(anchor, at + 1)
    assert (info.value.field, info.value.line) == (field, text.count("\n", 0, at) + 1)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "op_params: {variant: None}",
            "op_params: !!python/object:os.system {}",
            "!!python/object",
        ),
        (
            "op_params: {variant: None}",
            "op_params: {variant: !!python/name:os.system x}",
            "!!python/name",
        ),
        ("op_params: {variant: None}", "op_params: {variant: !custom x}", "!custom"),
        ("op_params: {variant: None}", "op_params: {variant: !!binary aGk=}", "!!binary"),
        ("op_params: {variant: None}", "op_params: {variant: 2026-07-08}", "!!timestamp"),
        ("op_params: {variant: None}", "op_params: &p {variant: None}", "anchor"),
        ("determinism: same_hardware_bitwise", "determinism: &d same_hardware_bitwise", "anchor"),
        ("op_params: {variant: None}", "op_params: *p", "alias"),
        ("op_params: {variant: None}", "op_params: {<<: {variant: None}}", "!!merge"),
    ],
)
def test_yaml_tags_anchors_and_aliases_are_refused(
    contract_text: Callable[..., str], write: Callable[..., Path], old: str, new: str, message: str
) -> None:
    text = contract_text().replace(old, new, 1)
    path = write(text)
    with pytest.raises(ContractError) as info:
        load_document(path)
    assert info.value.path == str(path)
    assert info.value.line == _line_of(text, new)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("old", "new", "message", "anchor"),
    [
        ("  in_place: false", "  in_place: [false", "invalid YAML", "  alignment_bytes"),
        ("kernel: twice_f32", "kernel: twice_f32\n---", "document marker", "---\nop_kind"),
        ("kernel: twice_f32", "kernel: twice_f32\n1: one", "plain strings", "1: one"),
    ],
)
def test_broken_yaml_names_the_line(
    contract_text: Callable[..., str],
    write: Callable[..., Path],
    old: str,
    new: str,
    message: str,
    anchor: str,
) -> None:
    text = contract_text().replace(old, new, 1)
    path = write(text)
    with pytest.raises(ContractError) as info:
        load_document(path)
    assert (info.value.path, info.value.line) == (str(path), _line_of(text, anchor))
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("# no front matter\n", 1, "front matter"),
        ("---\nfkc_version: 1\n", 1, "not closed"),
        (
            "---\nfkc_version: 1\nprovider: {name: p, backend: Cpu, kernel_source: s, "
            "link_registry: r, revision_base: b}\n---\n# nothing\n",
            5,
            "no ```fkc block",
        ),
        (
            "---\nfkc_version: 1\nprovider: {name: p, backend: Cpu, kernel_source: s, "
            "link_registry: r, revision_base: b}\n---\n```fkc\nkernel: x\n",
            5,
            "not closed",
        ),
    ],
)
def test_document_structure_errors(
    write: Callable[..., Path], text: str, line: int, message: str
) -> None:
    path = write(text)
    with pytest.raises(ContractError) as info:
        load_document(path)
    assert (info.value.path, info.value.line) == (str(path), line)
    assert message in str(info.value)


def test_duplicate_kernel_names_in_one_document(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    text = contract_text()
    block = text[text.index("```fkc") :]
    doubled = text + "\n## again\n\n" + block
    path = write(doubled)
    with pytest.raises(ContractError) as info:
        load_document(path)
    assert info.value.field == "kernel"
    assert info.value.line == doubled.count("\n", 0, doubled.rindex("kernel: twice_f32")) + 1
    assert "duplicate kernel name 'twice_f32'" in str(info.value)


def test_missing_file_is_a_contract_error(tmp_path: Path) -> None:
    with pytest.raises(ContractError) as info:
        load_document(tmp_path / "absent.md")
    assert info.value.path == str(tmp_path / "absent.md")
