"""`fueltensor compare matmul` as a user types it (issue 46): the operands are (8, k) @ (k, 6)
matrices (`cli_audit.contracted`), not the elementwise probes' columns (which crashed the
command with a broadcasting error); BF16 and F16 compare fuel-cpu-backend's matmul with the
oracle's, read from the command's real output, bit for bit; F32 compares fuel-blas-backend's
matmul (the host BLAS, no order declared) with the oracle's: its sums may round otherwise, and
the exit status says whether they did."""

from __future__ import annotations

import re

from _cli import command


def _rows(stdout: str) -> dict[str, list[str]]:
    """The table's matmul rows by dtype: their other columns."""
    found = {}
    for line in stdout.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) > 3 and cells[0] == "matmul":
            found[cells[1]] = cells[2:]
    return found


def test_compare_runs_the_cpu_matmul_against_the_oracle() -> None:
    dtypes = ("bfloat16", "float16", "float32")
    done = command("compare", "matmul", "--dtypes", *dtypes, "--size", "4096", "--wide")
    rows = _rows(done.stdout)
    f32 = rows["float32"]
    assert f32[:3] == ["8x6", "1", "blas_matmul_f32 vs ref_matmul_f32"], f32
    assert re.fullmatch(r"none|\d+ rounding", f32[4]), f32  # float32 sums: no NaN, no range
    assert done.returncode == (0 if f32[4] == "none" else 1), done.stderr
    for dtype, suffix in (("bfloat16", "bf16"), ("float16", "f16")):
        shape, calls, kernels, equal = rows[dtype][:4]
        assert (shape, calls, kernels) == ("8x6", "1", f"matmul_{suffix} vs ref_matmul_{suffix}")
        assert equal == "48/48", rows[dtype]  # float32 sums of 85 products, rounded to a half
    assert "3 operations ran: 3 compared, 0 not compared" in done.stdout
