"""The sweep across a Dask cluster: the blocks of each contract split over the workers.

Each task runs a chunk of blocks on one worker, over that worker's own registry (as the judge
across a cluster does), on all of its cores, and hands back the chunk's merged tally, its
block digests, the worker's fingerprint and its binary (`binary.binary_identity`), which must
be this process's: a certificate binds one binary. The tallies merge in any order and the digest
chains the block digests in block order (`tally.merge`, `sweep`), so the certificate is the
same whichever machines computed which blocks. Its `machine` field lists every fingerprint
that took part.
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from typing import TYPE_CHECKING, Any, Final

from fueltensor.registry import registry
from fueltensor.tools.certify.binary import binary_text
from fueltensor.tools.certify.sweep import Job, Span, Sweep, jobs, sweep
from fueltensor.tools.certify.tally import dense, fresh, merge, sparse

if TYPE_CHECKING:
    from distributed import Client

CHUNK: Final = 64
"""Blocks per task (2**26 pairs): small enough to balance, large enough to amortize a task."""


def _sweep_here(
    provider: str, name: str, dtype: str, span: tuple[tuple[int, int], ...], chunk: list[int]
) -> dict[str, Any]:
    """Run on a worker: the blocks `chunk` of one contract at one dtype, on all its cores."""
    from fueltensor.fingerprint import machine

    found = [
        j
        for j in jobs(registry(), provider, [name], Span(span[0], span[1]))
        if j.dtype.name == dtype
    ]
    if not found:
        raise ValueError(f"no {dtype} contract {name} of {provider} on this worker")
    result = sweep(found[0], os.cpu_count() or 1, blocks=lambda rows: chunk)
    return {
        "machine": machine().to_dict(),
        "binary": found[0].binary,
        "stats": sparse(result.stats),
        "digests": result.block_digests,
        "decided": result.decided,
    }


def sweep_cluster(
    client: Client, job: Job, timeout: float | None = None
) -> tuple[Sweep, list[Any]]:
    """`sweep(job)` with its blocks split over the cluster's workers in chunks of `CHUNK`;
    returns the merged sweep and the fingerprints of the machines that took part."""
    start = time.perf_counter()
    blocks = list(range(len(job.span.blocks())))
    chunks = [blocks[i : i + CHUNK] for i in range(0, len(blocks), CHUNK)]
    token = uuid.uuid4().hex[:8]
    span = (job.span.lhs, job.span.rhs)
    futures = [
        client.submit(
            _sweep_here,
            job.contract.provider.name,
            job.contract.name,
            job.dtype.name,
            span,
            chunk,
            key=f"fueltensor-certify-{token}-{i}",
            pure=False,
        )
        for i, chunk in enumerate(chunks)
    ]
    total, digests, decided, machines = fresh(), [], 0, []
    for future in futures:  # in block order: the digests chain in it
        part = future.result(timeout=timeout)
        if part["binary"] != job.binary:
            raise ValueError(
                f"{job.contract.name}: a worker ran {binary_text(part['binary'])}, this "
                f"process {binary_text(job.binary)}: the certificate would bind blocks of "
                "another binary"
            )
        merge(total, dense(part["stats"]))
        digests += part["digests"]
        decided += part["decided"]
        if part["machine"] not in machines:
            machines.append(part["machine"])
    chain = hashlib.sha256(b"".join(bytes.fromhex(d) for d in digests)).hexdigest()
    seconds = time.perf_counter() - start
    return Sweep(total, chain, seconds, len(machines), 0, digests, decided), machines
