"""`fueltensor compare matmul` as a user types it (issue 46): the operands are (8, k) @ (k, 6)
matrices (`cli_audit.contracted`), not the elementwise probes' columns (which crashed the
command with a broadcasting error); BF16 and F16 compare fuel-cpu-backend's matmul with the
oracle's, read from the command's real output; F32, which no production contract serves yet,
is named a host operation, not compared."""

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
    assert done.returncode == 0, done.stderr
    rows = _rows(done.stdout)
    for dtype, suffix in (("bfloat16", "bf16"), ("float16", "f16")):
        shape, calls, kernels, equal = rows[dtype][:4]
        assert (shape, calls, kernels) == ("8x6", "1", f"matmul_{suffix} vs ref_matmul_{suffix}")
        assert equal == "48/48", rows[dtype]  # float32 sums of 85 products, rounded to a half
    assert rows["float32"][2:4] == ["host", "not compared"], rows["float32"]
    assert "3 operations ran: 2 compared, 1 not compared (1 host)" in done.stdout
