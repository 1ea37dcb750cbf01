"""The binary a certificate is bound to: the file whose code ran the kernel, by its SHA-256.

A contract's `kernel_revision_hash` is a hash of its document, so a rebuilt library or
extension under the same document keeps it. A certificate and a sweep's state file also name
the binary that ran (`binary_identity`): a compiled kernel's loaded library, the built-in
`_native` extension, or, for a provider without a file of its own (pure NumPy, a framework),
its version alone, said so in `how`. The effective revision of a compiled kernel's contract
folds its library's SHA-256 into the document's hash (`effective_revision`); a built-in
provider's stays its document's. docs/certificates.md.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from fueltensor.fkc.schema import KernelContract, revision_hash
from fueltensor.kernels.compiled import CompiledKernel
from fueltensor.registry import (
    Registry,
    provider_binary,
    provider_environment,
    provider_unavailable,
)


def _sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def binary_identity(contract: KernelContract, reg: Registry) -> dict[str, Any]:
    """The binary that runs `contract`'s kernel in `reg` now: {"sha256": 64 hex digits or None,
    "file": its file name ("" without one), "provider_version", "how"} (a provider whose
    framework is not installed runs nothing here, and says so)."""
    kernel = reg.kernel(contract.name)
    if isinstance(kernel, CompiledKernel):
        loaded = kernel.loaded
        version = contract.provider.revision_base
        return {
            "sha256": loaded.sha256,
            "file": loaded.source.name,
            "provider_version": version,
            "how": "loaded library",
        }
    if provider_unavailable(contract.provider.name) is not None:
        how = f"{contract.provider.name}: not installed here"
        return {"sha256": None, "file": "", "provider_version": "", "how": how}
    said = provider_binary(contract.provider.name)
    if said is not None:
        path, version, how = said
        sha = _sha256(path) if path is not None else None
        name = path.name if path is not None else ""
        return {"sha256": sha, "file": name, "provider_version": version, "how": how}
    env = provider_environment(contract.provider.name)
    version = env.framework if env is not None else contract.provider.revision_base
    return {
        "sha256": None,
        "file": "",
        "provider_version": version,
        "how": f"{version}: version only",
    }


def effective_revision(contract: KernelContract, binary: dict[str, Any]) -> str:
    """The contract's revision hash as a certificate states it: for a loaded library, the
    document's hash with the library's SHA-256 folded in (a rebuilt library is a new revision);
    otherwise the document's own."""
    if binary["how"] != "loaded library":
        return contract.kernel_revision_hash
    return revision_hash(contract.kernel_revision_hash, {"library_sha256": binary["sha256"]})


def binary_text(binary: dict[str, Any]) -> str:
    """One binary as messages name it: its file and SHA-256, or how it runs without one."""
    if binary.get("sha256") is None:
        return f"{binary.get('how')} (no binary hash)"
    return f"{binary.get('file')} sha256 {binary['sha256']}"
