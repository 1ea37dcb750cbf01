"""Certificates end to end, on restricted spans: a user provider's kernel one ULP off in a
single lane is certified, the judge's verdict names the lane and the broken bound, the JSON
round-trips, the text and plot say what was found; `--compare` finds the one block that
differs and calls the CPU kernels and the reference oracle bit-identical where the seeds say
they agree; semantics a certificate contradicts fail; the command line does the same."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _documents import one_off
from _extras import needs

import fueltensor as ft
from fueltensor.cli import main
from fueltensor.ops import BINARY_OPS
from fueltensor.registry import bundled_contracts_dir
from fueltensor.tools.certify import Certificate, binary_identity, compare, verdict

pytest.importorskip("fueltensor.ext._certify")


BAD = (0x3FC0, 0x3F2A)
"""The one lane the wrong kernel gets wrong: 1.5 + 0.6640625 in bf16."""
SPAN = {"lhs": (0x3FB0, 0x3FD0), "rhs": (0x3F00, 0x3F40)}


def wrong(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
    """fuel-cpu-backend's add_bf16, but one ULP up in the one lane BAD."""
    ft.registry().kernel("add_bf16")(lhs, rhs, out=out)
    hit = (lhs.view(np.uint16) == BAD[0]) & (rhs.view(np.uint16) == BAD[1])
    out.view(np.uint16)[hit] += 1


def provider(
    tmp_path: Path, kernel: Callable[..., Any], max_ulp: str = "0", semantics: str = ""
) -> ft.Registry:
    """The `one-off` provider linked to `kernel`, beside the bundled contracts."""
    path = tmp_path / "one-off.md"
    path.write_text(one_off(max_ulp, semantics), encoding="utf-8")
    ft.register_provider("one-off", {"one_off::add_bf16": kernel})
    return ft.Registry.from_paths([bundled_contracts_dir(), path])


def test_a_lane_one_ulp_off_fails_the_declared_bound(tmp_path: Path) -> None:
    reg = provider(tmp_path, wrong)
    [cert] = ft.certify("one-off", reg=reg, progress=False, **SPAN)
    d = cert.data
    assert d["histogram"]["ulp1"] == 1 and cert.max_ulp == 1
    assert (d["max_pair"]["lhs"], d["max_pair"]["rhs"]) == BAD
    assert d["max_pair"]["got"] == d["max_pair"]["want"] + 1
    [failure] = d["verdict"]
    assert "max_ulp 0 declared, but 1 ULP" in failure and "1.5 (0x3fc0)" in failure
    assert "FAILS" in cert.text() and "0x3f2a" in cert.text()
    back = Certificate.load(cert.save(tmp_path / "wrong.json"))
    assert back.data == json.loads(json.dumps(d)) and back.digest == cert.digest
    assert (tmp_path / "wrong.txt").read_text().strip() == cert.text()
    fig = cert.plot()
    assert fig.axes[0].get_title().startswith("ULP")
    fixed = ft.certify("one-off", reg=provider(tmp_path, ft.registry().kernel("add_bf16")), **SPAN)
    assert fixed[0].data["verdict"] == [] and fixed[0].max_ulp == 0
    found = compare(cert, fixed[0])
    assert not found.same_bits and found.blocks == [(0x3FC0, 0x3FD0)]
    assert found.changes["histogram ulp1"] == (1, 0)


def test_the_oracle_and_the_cpu_kernels_give_the_same_bits(tmp_path: Path) -> None:
    """+ - * / in bf16 and f16: the reference oracle (computed in the half type) and the CPU
    kernels (via f32) agree bit for bit, as the seeds say: equal digests. The oracle's
    contracts span both dtypes: a file each."""
    span = {"lhs": (0x3C00, 0x3C20), "rhs": (0x0000, 0x10000)}
    for op in ("add", "sub", "mul", "div"):
        cpu = {c.data["dtype"]: c for c in ft.certify("cpu", [f"{op}_bf16", f"{op}_f16"], **span)}
        oracle = {
            c.data["dtype"]: c
            for c in ft.certify("reference", [f"broadcast_{op}"], out_dir=tmp_path, **span)
        }
        assert cpu.keys() == oracle.keys() == {"bfloat16", "float16"}
        for dtype in cpu:
            assert compare(cpu[dtype], oracle[dtype]).same_bits, (op, dtype)
            saved = Certificate.load(tmp_path / f"broadcast_{op}_{dtype}.json")
            assert saved.digest == oracle[dtype].digest


@pytest.mark.parametrize(
    ("semantics", "failure"),
    [
        (
            "semantics:\n  source: [measurement]\n"
            "  nan: {operand: lhs, result: [kept], sign: kept}",
            "result: ['kept'], sign: kept}, but",
        ),
        (
            "semantics:\n  source: [measurement]\n  nan: {operand: lhs, result: [quieted], "
            "sign: kept, invalid: [positive_canonical]}",
            "invalid: ['positive_canonical']}, but",
        ),
        ("semantics:\n  source: [measurement]\n  subnormals: flushed", "subnormals flushed, but"),
    ],
)
@pytest.mark.parametrize("rhs", [(0xFF70, 0xFF90), (0x0000, 0x0010)])
def test_semantics_a_certificate_contradicts_fail(
    tmp_path: Path, semantics: str, failure: str, rhs: tuple[int, int]
) -> None:
    """Signaling NaNs come out quieted (not kept); inf - inf's NaN is x86's negative one;
    subnormal results are kept: each contradicts the declaration, which fails where the span
    holds such pairs (and only there)."""
    reg = provider(tmp_path, ft.registry().kernel("add_bf16"), semantics=semantics)
    [cert] = ft.certify("one-off", reg=reg, lhs=(0x7F70, 0x8090), rhs=rhs)
    found = any(failure in f for f in cert.data["verdict"])
    # lhs NaNs meet either rhs range; inf - inf needs rhs -inf; subnormal sums need rhs +0.
    expected = {"result: ['kept']": True, "invalid:": rhs[0] != 0, "subnormals": rhs[0] == 0}
    assert found == next(v for k, v in expected.items() if k in failure), cert.data["verdict"]


def subnormal(bits: np.ndarray) -> np.ndarray:
    """Which bf16 patterns are subnormal."""
    return ((bits & 0x7F80) == 0) & ((bits & 0x7F) != 0)


def flushing(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
    """add_bf16 on a machine with FTZ and DAZ: subnormal operands and results are zeros."""
    lhs, rhs = lhs.copy(), rhs.copy()
    for x in (lhs.view(np.uint16), rhs.view(np.uint16)):
        x[subnormal(x)] &= 0x8000
    ft.registry().kernel("add_bf16")(lhs, rhs, out=out)
    got = out.view(np.uint16)
    got[subnormal(got)] &= 0x8000


def last_subnormal_lost(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
    """add_bf16 one ULP off where the sum is the smallest subnormal: it gives a zero there, as a
    result rounded twice may, and keeps every other subnormal."""
    ft.registry().kernel("add_bf16")(lhs, rhs, out=out)
    got = out.view(np.uint16)
    got[(got & 0x7FFF) == 1] &= 0x8000


@pytest.mark.parametrize(("kernel", "flushes"), [(flushing, True), (last_subnormal_lost, False)])
def test_a_flushing_kernel_fails_kept_subnormals_and_a_rounding_does_not(
    tmp_path: Path, kernel: Callable[..., Any], flushes: bool
) -> None:
    """Under `subnormals: kept` (and a 1-ULP bound), a kernel reading and writing subnormals as
    zeros fails; one whose only loss is a zero one ULP from the smallest subnormal is within
    its bound and is not called flushing."""
    sem = "semantics:\n  source: [measurement]\n  subnormals: kept"
    reg = provider(tmp_path, kernel, max_ulp="1", semantics=sem)
    [cert] = ft.certify("one-off", reg=reg, lhs=(0x8000, 0x8080), rhs=(0x0000, 0x0080))
    specials = cert.data["specials"]
    assert (specials.get("subnormal_out_flushed", 0) > 0) == flushes, specials
    assert (specials.get("subnormal_in_flushed", 0) > 0) == flushes, specials
    assert any("subnormals kept, but" in f for f in cert.data["verdict"]) == flushes
    assert cert.max_ulp <= 1 or flushes
    if not flushes:
        assert cert.data["verdict"] == [] and specials["subnormal_out_other"] > 0


def test_a_certificate_of_another_revision_is_refused(tmp_path: Path) -> None:
    """Another declared bound is another revision of the kernel: certify it again."""
    span = {"lhs": (0x3F80, 0x3F90), "rhs": (0x3F80, 0x3F90)}
    [cert] = ft.certify("one-off", reg=provider(tmp_path, ft.registry().kernel("add_bf16")), **span)
    reg = provider(tmp_path, ft.registry().kernel("add_bf16"), max_ulp="1")
    other = reg["add_one_off_bf16"]
    [failure] = verdict(cert, other, binary_identity(other, reg))
    assert failure.startswith("the certificate is of revision") and "certify it again" in failure


def test_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["certify", "--kernel", "mul_f16", "--lhs", "0x3c00:0x3c10", "--rhs", "0:0x800"]
    assert main([*args, "--out", str(tmp_path / "a"), "--state", str(tmp_path / "s")]) == 0
    assert "mul_f16 (fuel-cpu-backend, float16): 32,768 pairs" in capsys.readouterr().out
    assert main([*args, "--out", str(tmp_path / "b"), "--state", str(tmp_path / "s")]) == 0
    a, b = tmp_path / "a" / "mul_f16.json", tmp_path / "b" / "mul_f16.json"
    assert main(["certify", "--compare", str(a), str(b)]) == 0
    assert "same bits" in capsys.readouterr().out
    other = tmp_path / "other.json"
    data = json.loads(a.read_text())
    data["digest"], data["block_digests"][0] = "0" * 64, "0" * 16
    other.write_text(json.dumps(data))
    assert main(["certify", "--compare", str(a), str(other)]) == 1
    assert "different bits in 1 block: lhs 0x3c00..0x3c10" in capsys.readouterr().out
    assert main(["certify", "--compare", str(a), str(tmp_path / "s")]) == 2
    assert "not a readable certificate" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["certify", "--lhs", "5"])
    assert "a range is START:STOP" in capsys.readouterr().err


def test_the_command_line_on_bad_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 41, item 5: `--state` naming a file, and a corrupt state line, each end in one line
    and exit 2 (they raised FileExistsError, and a JSON error naming no file)."""
    args = ["certify", "--kernel", "add_bf16", "--lhs", "0x3f80:0x3fa0", "--rhs", "0:0x100"]
    plain = tmp_path / "plain"
    plain.write_text("")
    assert main([*args, "--state", str(plain)]) == 2
    err = capsys.readouterr().err  # errors go to stderr
    assert err == f"fueltensor certify: --state {plain}: not a directory (it names a file)\n"
    state = tmp_path / "s"
    assert main([*args, "--state", str(state), "--out", str(tmp_path / "a")]) == 0
    path = state / "add_bf16.bfloat16.state"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + lines[1][:25] + "\n" + "".join(lines[2:]))
    capsys.readouterr()
    assert main([*args, "--state", str(state)]) == 2
    assert capsys.readouterr().err.startswith(f"fueltensor certify: {path}:2: not a block")


def test_compare_sampled_and_incomparable_certificates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 41, item 5: comparisons of sampled certificates, of other spans and of a broken
    block list end in one line and the exit status docs/certificates.md gives (they raised
    KeyError 'formula', exited 1 and raised ValueError)."""
    args = ["certify", "--kernel", "add_bf16", "--lhs", "0x3f80:0x3fa0", "--rhs", "0:0x100"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    sampled = ["certify", "--kernel", "add_f32", "--sample", "64"]
    for seed, out_dir in (("0", "x"), ("0", "y"), ("1", "z")):
        assert main([*sampled, "--seed", seed, "--out", str(tmp_path / out_dir)]) == 0
    x, y, z = (tmp_path / d / "add_f32.json" for d in "xyz")
    capsys.readouterr()
    assert main(["certify", "--compare", str(x), str(y)]) == 0
    assert "same bits" in capsys.readouterr().out
    assert main(["certify", "--compare", str(x), str(z)]) == 2  # another seed: another span
    assert "not comparable: span" in capsys.readouterr().out
    a = tmp_path / "a" / "add_bf16.json"
    wider = tmp_path / "wider.json"
    data = json.loads(a.read_text())
    data["span"]["rhs"] = [0, 0x200]
    wider.write_text(json.dumps(data))
    assert main(["certify", "--compare", str(a), str(wider)]) == 2
    assert "not comparable: span" in capsys.readouterr().out
    data = json.loads(a.read_text())
    data["digest"], data["block_digests"] = "0" * 64, data["block_digests"][:1]
    short = tmp_path / "short.json"
    short.write_text(json.dumps(data))
    assert main(["certify", "--compare", str(a), str(short)]) == 2
    assert "B holds 1 block digests, its span has 2 blocks" in capsys.readouterr().out
    data = json.loads(x.read_text())
    data["digest"], data["max_ulp"] = "0" * 64, 3
    moved = tmp_path / "moved.json"
    moved.write_text(json.dumps(data))
    assert main(["certify", "--compare", str(x), str(moved)]) == 1
    assert "different bits (a sampled certificate has no blocks)" in capsys.readouterr().out


def test_a_certificate_names_its_binary_and_the_judge_checks_it(tmp_path: Path) -> None:
    """The certificate binds the `_native` extension that ran the built-in kernel (by the
    file's SHA-256; pure-NumPy mode says so, with no hash); a certificate of another binary, or
    of none (an older one), fails the judge's reading, naming both."""
    from fueltensor.kernels._chassis import IMPLEMENTATION, NATIVE
    from fueltensor.tools.certify.binary import binary_text

    [cert] = ft.certify("cpu", ["add_bf16"], lhs=(0x3F80, 0x3F90), rhs=(0, 0x100))
    version = importlib.metadata.version("fueltensor")
    if IMPLEMENTATION == "pure" or NATIVE is None:
        want = {"sha256": None, "file": "", "how": "pure-NumPy kernels"}
    else:
        native = Path(str(NATIVE.__file__))
        sha = hashlib.sha256(native.read_bytes()).hexdigest()
        want = {"sha256": sha, "file": native.name, "how": "built-in extension _native"}
    assert cert.data["binary"] == {**want, "provider_version": version}
    contract = ft.registry()["add_bf16"]
    assert verdict(cert, contract) == []
    assert cert.data["contract"]["kernel_revision_hash"] == contract.kernel_revision_hash
    other = Certificate(json.loads(json.dumps(cert.data)))
    other.data["binary"]["sha256"] = "cd" * 32
    [failure] = verdict(other, contract)
    assert "cd" * 32 in failure and binary_text(cert.data["binary"]) in failure
    del other.data["binary"]
    [failure] = verdict(other, contract)
    assert failure.startswith("the certificate is not bound to a binary")


def test_nan_allowed_reads_the_declared_operand_form_and_sign() -> None:
    """The judge's reading of one NaN form mask (bits as tests/tools/test_certify_core.py writes
    them out): the declared operand's NaN in a declared form, the sign flipped only under sign any,
    an invalid operation's NaN among the declared patterns."""
    from fueltensor.fkc.semantics import NanRule
    from fueltensor.tools.certify.verdict import nan_allowed

    lhs_nan, rhs_nan, lhs_quieted, rhs_quieted = 1 << 13, 1 << 14, 1 << 1, 1 << 6
    lhs_quieted_flipped, positive, negative = 1 << 4, 1 << 10, 1 << 11
    quieted_lhs = NanRule("lhs", ("quieted",), "kept", ("positive_canonical",))
    assert nan_allowed(lhs_nan | lhs_quieted, quieted_lhs)
    assert not nan_allowed(lhs_nan | rhs_nan | rhs_quieted, quieted_lhs)
    assert nan_allowed(lhs_nan | rhs_nan | rhs_quieted, NanRule("either", ("quieted",), "kept"))
    assert nan_allowed(rhs_nan | rhs_quieted, quieted_lhs)  # lhs a number: rhs's NaN it is
    assert not nan_allowed(lhs_nan | lhs_quieted_flipped, quieted_lhs)
    assert nan_allowed(lhs_nan | lhs_quieted_flipped, NanRule("lhs", ("quieted",), "any"))
    assert nan_allowed(positive, quieted_lhs) and not nan_allowed(negative, quieted_lhs)
    assert nan_allowed(lhs_nan | negative, NanRule("lhs", ("canonical",), "any"))
    assert not nan_allowed(lhs_nan | negative, NanRule("lhs", ("positive_canonical",), "kept"))


@pytest.mark.parametrize(
    "provider",
    [
        pytest.param("numpy"),
        pytest.param("torch", marks=needs("torch", "torch")),
        pytest.param("jax", marks=needs("jax", "jax")),
    ],
)
def test_framework_kernels_get_certificates_that_state_what_they_do(provider: str) -> None:
    """Every BF16/F16 binary contract of a framework is certified on a span with numbers,
    infinities and NaNs on both sides: every pair is counted once (in the histogram, or open),
    the NaN results by form, and + - * / of NumPy and PyTorch are correctly rounded there."""
    span = {"lhs": (0x3C00, 0x3C08), "rhs": (0x7BF0, 0x7E10)}
    reg = ft.registry().joined(provider)
    binary = {op.op_kind for op in BINARY_OPS}  # its unary ones sweep every input instead
    halves = {"BF16", "F16"}
    kernels = [
        c.name
        for c in reg
        if c.provider.name == provider and c.op_kind in binary and halves & {*c.inputs[0].dtypes}
    ]
    certs = ft.certify(provider, kernels, reg=reg, **span)
    assert len({(c.name, c.data["dtype"]) for c in certs}) == len(certs) >= 14
    for cert in certs:
        d = cert.data
        assert sum(d["histogram"].values()) + d["specials"]["open"] == d["span"]["pairs"]
        assert (
            isinstance(d["verdict"], list)
            and d["digest"]
            and d["versions"][d["contract"]["provider"]]
        )
        op = d["contract"]["op_kind"]
        if provider != "jax" and op in ("AddElementwise", "SubElementwise", "MulElementwise"):
            assert cert.max_ulp == 0, cert.text()


def test_f32_and_f64_get_special_classes_exhaustively_and_a_sample(tmp_path: Path) -> None:
    """F32/F64 cannot be swept: every pair of the special values is run, then a seeded
    sample, both sizes written down; a kernel wrong on one special pair (+0 + -0 giving -0)
    is found: one signed-zero difference, 0 ULP apart. Its NaNs are all the canonical one,
    which addition's reference leaves open: no difference there."""
    from fueltensor.testing import special_values

    certs = {c.name: c for c in ft.certify("cpu", ["add_f32", "pow_f64"], sample=2000)}
    for name, cert in certs.items():
        span = cert.data["span"]
        assert span["special_pairs"] == len(special_values(cert.data["dtype"])) ** 2
        assert not span["exhaustive"] and span["sample"] == 2000 and span["seed"] == 0
        total = sum(cert.data["histogram"].values()) + cert.data["specials"]["open"]
        assert total == span["pairs"] and cert.data["verdict"] == [], name
    real = ft.registry().kernel("add_f32")

    def signed(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
        real(lhs, rhs, out=out)
        zero = (lhs.view(np.uint32) == 0) & (rhs.view(np.uint32) == 0x8000_0000)
        out.view(np.uint32)[zero] = 0x8000_0000
        out.view(np.uint32)[np.isnan(out)] = 0x7FC0_0000

    path = tmp_path / "f32.md"
    path.write_text(one_off("0", "").replace("BF16", "F32").replace("bf16", "f32"), "utf-8")
    ft.register_provider("one-off", {"one_off::add_f32": signed})
    reg = ft.Registry.from_paths([bundled_contracts_dir(), path])
    [cert] = ft.certify("one-off", reg=reg, sample=100)
    assert cert.data["histogram"]["ulp0"] == 1 and cert.data["differences"] == {"signed zero": 1}


def test_the_judge_reads_a_saved_certificate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fueltensor judge --certificate PATH`: the CPU kernel's certificate is accepted; edited
    to show NaNs lost, it fails, saying so; a file that is not a certificate is refused."""
    args = ["certify", "--kernel", "mul_f16", "--lhs", "0x3c00:0x3c10", "--rhs", "0:0x800"]
    assert main([*args, "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    path = tmp_path / "mul_f16.json"
    assert main(["judge", "--certificate", str(path)]) == 0
    assert capsys.readouterr().out.startswith("ok mul_f16 (float16)")
    data = json.loads(path.read_text())
    data["specials"]["nan_lost"] = 3
    path.write_text(json.dumps(data))
    assert main(["judge", "--certificate", str(path)]) == 1
    assert "3 pairs of a NaN reference gave a number (nan_lost)" in capsys.readouterr().out
    (tmp_path / "x.json").write_text("{}")
    assert main(["judge", "--certificate", str(tmp_path / "x.json")]) == 2
    assert "not a fueltensor certificate" in capsys.readouterr().err


ONE_PAIR = {"lhs": (0x3F80, 0x3F81), "rhs": (0x3F80, 0x3F81)}
"""1 + 1 in bf16: a one-pair span."""
EVERY = f"{1 << 32:,}"


def one_pair(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A genuine certificate of the CPU add_bf16 on one pair, saved; and its JSON."""
    [cert] = ft.certify("cpu", ["add_bf16"], progress=False, **ONE_PAIR)
    path = cert.save(tmp_path / "add_bf16.json")
    return path, json.loads(path.read_text())


def judged(path: Path, data: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """`fueltensor judge --certificate` on `data` written to `path`: exit status and output."""
    path.write_text(json.dumps(data))
    status = main(["judge", "--certificate", str(path)])
    said = capsys.readouterr()
    return status, said.out + said.err


def test_a_genuine_one_pair_certificate_is_accepted_saying_its_coverage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The verdict line says how many of the 2**32 pairs the certificate ran and which claims
    it checked: the bundled bf16 add declares max_ulp 0, which its certificate proves. The
    same certificate claiming another binary is well formed, and fails for that."""
    path, data = one_pair(tmp_path)
    status, out = judged(path, data, capsys)
    assert status == 0, out
    assert out.startswith(f"ok add_bf16 (bfloat16) by {path}: coverage 1 of {EVERY} pairs; ")
    assert "checked: binary, revision, lost NaNs, max_ulp 0, formula, nan, subnormals" in out
    assert "not checked" not in out
    data["binary"] = {"sha256": "0" * 64, "file": "x.so", "provider_version": "1", "how": "t"}
    status, out = judged(path, data, capsys)
    assert status == 1 and "the certificate is of " in out and "certify it again" in out


def test_without_a_declared_bound_the_verdict_says_what_it_did_not_check(tmp_path: Path) -> None:
    """pow_bf16 declares no max_ulp: its acceptance names the claims checked and the bound
    not checked, never a bare ACCEPTS."""
    [cert] = ft.certify("cpu", ["pow_bf16"], progress=False, **ONE_PAIR)
    last = cert.text().splitlines()[-1]
    assert last.startswith("judge: ACCEPTS (checked: binary, revision, lost NaNs, formula"), last
    assert "not checked: max_ulp (none declared; 0 ULP measured)" in last


def _all_beyond(d: dict[str, Any]) -> None:
    d["histogram"] = {k: 0 for k in d["histogram"]} | {"beyond": d["span"]["pairs"]}


def _span_everything(d: dict[str, Any]) -> None:
    d["span"] = {"lhs": [0, 1 << 16], "rhs": [0, 1 << 16], "pairs": 1 << 32, "exhaustive": True}


FORGERIES: dict[str, tuple[Callable[[dict[str, Any]], object], str]] = {
    "every pair beyond 8 ULP, max_ulp 0": (
        _all_beyond,
        "max_ulp: 0, but the histogram's farthest pairs are in beyond",
    ),
    "pairs edited to 2**32": (
        lambda d: d["span"].update(pairs=1 << 32),
        f"span: its ranges hold 1 pairs (exhaustive: False), but it says {EVERY}",
    ),
    "span edited to every pair": (_span_everything, "span: 4,096 blocks, but 1 block digests"),
    "another dtype": (
        lambda d: d.update(dtype="float16"),
        "dtype 'float16', the contract takes BF16",
    ),
    "another op kind": (
        lambda d: d["contract"].update(op_kind="SubElementwise"),
        "op_kind 'SubElementwise', the contract add_bf16's is 'AddElementwise'",
    ),
    "another provider": (
        lambda d: d["contract"].update(provider="numpy"),
        "provider 'numpy', the contract add_bf16's is 'fuel-cpu-backend'",
    ),
    "formula count edited": (
        lambda d: d["formula"].update(equal=0),
        "the class table counts 1 formula pairs, the histogram and formula count 0",
    ),
}


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_a_forged_certificate_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], forgery: str
) -> None:
    """Issue 41: each of these edits was `ok`. The fields are held to each other and to the
    contract; the failure names what disagrees."""
    path, data = one_pair(tmp_path)
    edit, said = FORGERIES[forgery]
    edit(data)
    status, out = judged(path, data, capsys)
    assert status == 1 and out.startswith("FAIL add_bf16"), out
    assert "inconsistent certificate: " in out and said in out, out


MALFORMED: dict[str, Callable[[dict[str, Any]], object]] = {
    "histogram": lambda d: d.pop("histogram"),
    "histogram.exact": lambda d: d["histogram"].update(exact="1"),
    "span.pairs": lambda d: d["span"].update(pairs=-1),
    "span.lhs": lambda d: d["span"].update(lhs=[0, 1 << 17]),
    "max_ulp": lambda d: d.update(max_ulp=None),
    "max_pair.got_value": lambda d: d["max_pair"].pop("got_value"),
    "formula.equal": lambda d: d["formula"].update(equal=True),
    "contract.op_kind": lambda d: d["contract"].update(op_kind=7),
    "classes[0]": lambda d: d["classes"].insert(0, "one"),
    "specials.open": lambda d: d["specials"].update(open=[]),
    "dtype": lambda d: d.pop("dtype"),
    "block_digests": lambda d: d.update(block_digests={}),
    "verdict": lambda d: d.update(verdict=[1]),
}


@pytest.mark.parametrize("field", list(MALFORMED))
def test_a_malformed_certificate_exits_2_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str
) -> None:
    """A missing or mistyped field was a KeyError/ValueError/TypeError traceback: now one line
    naming the file and the field, exit 2 (as for any file that is not a certificate)."""
    path, data = one_pair(tmp_path)
    MALFORMED[field](data)
    status, out = judged(path, data, capsys)
    assert status == 2, out
    assert out.startswith(f"fueltensor judge: {path}: field {field}: "), out
    assert "Traceback" not in out and len(out.strip().splitlines()) == 1


def test_an_add_that_subtracts_fails_where_the_semantics_come_from_the_formula(
    tmp_path: Path,
) -> None:
    """Issue 41: with no max_ulp declared and `source: [formula]` (as the bundled bf16 add had
    it), a kernel that subtracts passed the quick judge and its certificate (formula: 0 of
    every pair). Both read the formula now."""
    reg = provider(
        tmp_path, ft.registry().kernel("sub_bf16"), "~", "semantics:\n  source: [formula]"
    )
    [row] = ft.judge(reg, ["add_one_off_bf16"], quick=True, progress=False).rows
    assert any("the formula the semantics come from" in f for f in row.failures), row.failures
    [cert] = ft.certify("one-off", reg=reg, progress=False, **ONE_PAIR)
    assert cert.data["verdict"] == [
        "semantics: source formula, but 1 of 1 pairs gave other bits; first (1 (0x3f80), "
        "1 (0x3f80)): got 0 (0x0000)"
    ]
    honest = provider(
        tmp_path, ft.registry().kernel("add_bf16"), "~", "semantics:\n  source: [formula]"
    )
    [cert] = ft.certify("one-off", reg=honest, progress=False, **ONE_PAIR)
    assert cert.data["verdict"] == [] and "formula" in cert.data["claims"]["checked"]
