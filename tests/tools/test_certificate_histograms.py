"""Certificates' histograms read back from their texts (`tools.certify.histograms`): every
committed text of an exhaustive sweep reads as buckets summing to what it swept, a text that is
no certificate is refused naming its file, and the table and figure show every bucket."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _extras import ROOT

from fueltensor.tools.certify.histograms import histograms, read

TEXTS = sorted((ROOT / "benchmarks" / "certificates").glob("*/*.txt"))
EXP = [
    ROOT / "benchmarks" / "certificates" / p for p in ("cpu/exp_f32.txt", "numpy/numpy_exp_f32.txt")
]


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_committed_certificate_reads_as_buckets_summing_to_its_sweep(path: Path) -> None:
    found = read(path)
    assert path.stem.startswith(found.kernel)  # jax_rem_float16.txt: one of several dtypes
    assert found.provider in path.read_text().splitlines()[0]
    open_lanes = sum(int(n.replace(",", "")) for n in _open(path))
    assert sum(found.counts.values()) + open_lanes == found.swept, found.counts
    assert found.worst.startswith("max ") and " s on " in found.run


def _open(path: Path) -> list[str]:
    """The counts a certificate leaves outside its histogram (`open`, docs/certificates.md)."""
    return re.findall(r"open ([\d,]+)", path.read_text())


def test_a_cast_certificate_reads_with_its_source_and_target() -> None:
    """A cast's first line names both dtypes (`bfloat16 to float8_e4m3fn`); the reader keeps
    them apart, and every other certificate has no target."""
    cast = read(ROOT / "benchmarks" / "certificates" / "cpu" / "cast_bf16_e4m3.txt")
    assert (cast.kernel, cast.dtype, cast.target) == ("cast_bf16_e4m3", "bfloat16", "float8_e4m3fn")
    assert cast.counts == {"exact": cast.swept} and cast.swept == 2**16
    assert all(read(p).target == "" for p in EXP)


def test_a_text_that_is_no_certificate_is_refused_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("exp is fast\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{bad}:1: not a certificate's text"):
        read(bad)


def test_the_table_has_a_column_per_bucket_any_certificate_counted() -> None:
    table = histograms(EXP)
    assert [r.kernel for r in table] == ["exp_f32", "numpy_exp_f32"]
    assert table.buckets[0] == "exact" and "1" in table.buckets
    assert all(b in table.buckets for r in table for b in r.counts)
    text, page = str(table), table._repr_html_()
    for r in table:
        assert all(f"{n:,}" in text and f"{n:,}" in page for n in r.counts.values())


def test_the_figure_has_a_bar_per_certificate_and_bucket() -> None:
    pytest.importorskip("matplotlib")
    table = histograms(EXP)
    fig = table.plot()
    (ax,) = fig.axes
    shown = [b for b in table.buckets if b != "0"]
    assert len(ax.patches) == len(table.rows) * len(shown)
    assert ax.get_yscale() == "log" and "ULP" in ax.get_title()
