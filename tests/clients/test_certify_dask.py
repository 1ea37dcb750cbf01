"""`ft.certify(client=...)` on a real 2-process LocalCluster: the blocks split over the workers
give the certificate a local sweep gives (tally, digest, block digests, verdict), whichever
worker computed which block."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _extras import local_client, needs

import fueltensor as ft

pytestmark = needs("distributed", "dask")
pytest.importorskip("fueltensor.ext._certify")
WAIT = 120


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """Two single-threaded worker processes; always closed, every wait bounded."""
    with local_client(WAIT) as c:
        yield c


def test_a_cluster_gives_the_local_certificate(client: Any) -> None:
    span = {"lhs": (0x3C00, 0x3C00 + 16 * 70), "rhs": (0x0000, 0x0400)}  # 70 blocks: 2 chunks
    [local] = ft.certify("cpu", ["div_f16"], **span)
    [there] = ft.certify("cpu", ["div_f16"], client=client, timeout=WAIT, **span)
    same = ("histogram", "max_ulp", "max_pair", "formula", "specials", "nan_forms", "classes")
    for key in (*same, "digest", "block_digests", "verdict", "span"):
        assert there.data[key] == local.data[key], key
    assert ft.tools.certify.compare(local, there).same_bits
