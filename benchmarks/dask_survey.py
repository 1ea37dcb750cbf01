"""Survey: ~100 dask.array operations on NumPy chunks and on FuelTensor chunks, side by side on a
2-process LocalCluster. An operation counts for FuelTensor when it computes on NumPy chunks and,
on FuelTensor chunks, computes too, gives FuelTensors (where NumPy gives arrays) and the same
values (NaNs equal; 1e-6 relative). Prints every failure and the count.

    python benchmarks/dask_survey.py
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from typing import Any

import dask
import dask.array as da
import distributed
import numpy as np

import fueltensor as ft
from fueltensor import dask as fd

WAIT = 120.0
RNG = np.random.default_rng(22)
X = RNG.standard_normal((12, 10))
Y = RNG.standard_normal((12, 10))
SQ = RNG.standard_normal((10, 10)) + 10 * np.eye(10)
SPD = SQ @ SQ.T
TALL = RNG.standard_normal((40, 6))
V = RNG.standard_normal(20)
XN = X.copy()
XN[1, 2] = XN[7, 7] = np.nan
INTS = RNG.integers(0, 9, 30)
Ops = dict[str, Callable[[dict[str, Any]], Any]]

OPS: Ops = {
    "add": lambda a: a["x"] + a["y"],
    "sub scalar": lambda a: a["x"] - 1.5,
    "mul": lambda a: a["x"] * a["y"],
    "truediv": lambda a: a["x"] / a["y"],
    "floordiv": lambda a: a["x"] // a["y"],
    "mod": lambda a: a["x"] % a["y"],
    "pow": lambda a: abs(a["x"]) ** a["y"],
    "neg": lambda a: -a["x"],
    "abs": lambda a: abs(a["x"]),
    "sin": lambda a: da.sin(a["x"]),
    "exp": lambda a: da.exp(a["x"]),
    "log1p": lambda a: da.log1p(abs(a["x"])),
    "sqrt": lambda a: da.sqrt(abs(a["x"])),
    "maximum": lambda a: da.maximum(a["x"], a["y"]),
    "minimum": lambda a: da.minimum(a["x"], a["y"]),
    "clip": lambda a: da.clip(a["x"], -0.5, 0.5),
    "clip method": lambda a: a["x"].clip(-0.5, 0.5),
    "round": lambda a: da.round(a["x"], 2),
    "floor": lambda a: da.floor(a["x"]),
    "sign": lambda a: da.sign(a["x"]),
    "greater": lambda a: a["x"] > 0,
    "equal": lambda a: a["x"] == a["y"],
    "logical_and": lambda a: da.logical_and(a["x"] > 0, a["y"] > 0),
    "where": lambda a: da.where(a["x"] > 0, a["x"], 0.0),
    "isnan": lambda a: da.isnan(a["xn"]),
    "isfinite": lambda a: da.isfinite(a["xn"]),
    "boolean index": lambda a: a["x"][a["x"] > 0],
    "astype f32": lambda a: a["x"].astype(np.float32),
    "astype int": lambda a: a["x"].astype(np.int64),
    "sum": lambda a: a["x"].sum(),
    "sum axis": lambda a: a["x"].sum(axis=0),
    "mean": lambda a: a["x"].mean(),
    "mean axis": lambda a: a["x"].mean(axis=1),
    "std": lambda a: a["x"].std(),
    "var axis": lambda a: a["x"].var(axis=0, ddof=1),
    "max": lambda a: a["x"].max(),
    "min axis": lambda a: a["x"].min(axis=1),
    "prod": lambda a: a["x"].prod(axis=0),
    "any": lambda a: (a["x"] > 2).any(),
    "all": lambda a: (a["x"] > -5).all(axis=0),
    "argmax": lambda a: a["x"].argmax(),
    "argmax axis": lambda a: a["x"].argmax(axis=1),
    "argmin": lambda a: a["x"].argmin(),
    "argmin axis": lambda a: a["x"].argmin(axis=0),
    "nansum": lambda a: da.nansum(a["xn"]),
    "nanmean": lambda a: da.nanmean(a["xn"], axis=0),
    "nanstd": lambda a: da.nanstd(a["xn"]),
    "nanvar": lambda a: da.nanvar(a["xn"], axis=1),
    "nanmax": lambda a: da.nanmax(a["xn"], axis=0),
    "nanmin": lambda a: da.nanmin(a["xn"]),
    "nanprod": lambda a: da.nanprod(a["xn"], axis=1),
    "nanargmax": lambda a: da.nanargmax(a["xn"], axis=0),
    "nanargmin": lambda a: da.nanargmin(a["xn"], axis=1),
    "nancumsum": lambda a: da.nancumsum(a["xn"], axis=0),
    "cumsum": lambda a: a["x"].cumsum(axis=1),
    "cumprod": lambda a: a["x"].cumprod(axis=0),
    "moment": lambda a: a["x"].moment(3, axis=0),
    "count_nonzero": lambda a: da.count_nonzero(a["x"] > 0),
    "median": lambda a: da.median(a["x"], axis=0),
    "percentile": lambda a: da.percentile(a["v"], [25, 50, 75]),
    "topk": lambda a: da.topk(a["v"], 3),
    "argtopk": lambda a: da.argtopk(a["v"], 3),
    "matmul": lambda a: da.matmul(a["x"], a["y"].T),
    "@": lambda a: a["x"] @ a["x"].T,
    "dot": lambda a: da.dot(a["x"], a["y"].T),
    "tensordot": lambda a: da.tensordot(a["x"], a["y"], axes=([1], [1])),
    "einsum": lambda a: da.einsum("ij,kj->ik", a["x"], a["y"]),
    "vdot": lambda a: da.vdot(a["v"], a["v"]),
    "outer": lambda a: da.outer(a["v"], a["v"]),
    "solve": lambda a: da.linalg.solve(a["sq"], a["x"][:, :1][:10]),
    "lstsq": lambda a: da.linalg.lstsq(a["tall"], a["tall"][:, 0])[0],
    "qr": lambda a: da.linalg.qr(a["tall"])[1],
    "svd": lambda a: da.linalg.svd(a["tall"])[1],
    "inv": lambda a: da.linalg.inv(a["sq"]),
    "cholesky": lambda a: da.linalg.cholesky(a["spd"], lower=True),
    "norm": lambda a: da.linalg.norm(a["x"]),
    "reshape": lambda a: a["x"].reshape(6, 2, 10),
    "ravel": lambda a: a["x"].ravel(),
    "transpose": lambda a: a["x"].transpose(),
    "swapaxes": lambda a: a["x"].swapaxes(0, 1),
    "moveaxis": lambda a: da.moveaxis(a["x"][None], 0, 2),
    "squeeze": lambda a: a["x"][:, :1].squeeze(),
    "expand_dims": lambda a: da.expand_dims(a["x"], 1),
    "concatenate": lambda a: da.concatenate([a["x"], a["y"]], axis=1),
    "stack": lambda a: da.stack([a["x"], a["y"]]),
    "block": lambda a: da.block([[a["x"], a["y"]]]),
    "flip": lambda a: da.flip(a["x"], 0),
    "roll": lambda a: da.roll(a["x"], 3, axis=1),
    "rot90": lambda a: da.rot90(a["x"]),
    "repeat": lambda a: a["x"].repeat(2, axis=0),
    "tile": lambda a: da.tile(a["v"], 2),
    "pad": lambda a: da.pad(a["x"], 2),
    "pad reflect": lambda a: da.pad(a["x"], 1, mode="reflect"),
    "diff": lambda a: da.diff(a["x"], axis=0),
    "gradient": lambda a: da.gradient(a["v"]),
    "rechunk": lambda a: a["x"].rechunk((6, 5)),
    "broadcast_to": lambda a: da.broadcast_to(a["v"], (3, 20)),
    "take": lambda a: da.take(a["x"], [0, 3, 5], axis=1),
    "fancy index": lambda a: a["x"][[1, 4, 9]],
    "compress": lambda a: da.compress([True, False] * 5, a["x"], axis=1),
    "unique": lambda a: da.unique(a["i"]),
    "bincount": lambda a: da.bincount(a["i"], minlength=9),
    "histogram": lambda a: da.histogram(a["v"], bins=5, range=(-3, 3))[0],
    "digitize": lambda a: da.digitize(a["v"], np.array([-1.0, 0.0, 1.0])),
    "isin": lambda a: da.isin(a["i"], [1, 2, 3]),
    "triu": lambda a: da.triu(a["sq"]),
    "diag": lambda a: da.diag(a["sq"]),
    "diagonal": lambda a: da.diagonal(a["x"]),
    "nonzero": lambda a: da.nonzero(a["x"] > 0)[1],
    "argwhere": lambda a: da.argwhere(a["x"] > 1),
    "flatnonzero": lambda a: da.flatnonzero(a["x"] > 1),
    "coarsen": lambda a: da.coarsen(np.sum, a["x"], {0: 2, 1: 2}),
    "map_blocks": lambda a: a["x"].map_blocks(lambda b: b * 2),
    "map_overlap": lambda a: a["x"].map_overlap(lambda b: b + 1, depth=1, boundary="reflect"),
    "apply_along_axis": lambda a: da.apply_along_axis(lambda r: r * 2, 1, a["x"]),
    "real": lambda a: da.real(a["x"]),
    "conj": lambda a: a["x"].conj(),
    "around": lambda a: da.around(a["x"], 1),
    "persist sum": lambda a: a["x"].persist().sum(),
    "persist mean": lambda a: a["x"].persist().mean(axis=0),
    "sort via topk": lambda a: da.topk(a["v"], -4),
    "insert": lambda a: da.insert(a["v"], 3, 1.0, axis=0),
    "append": lambda a: da.append(a["v"], a["v"]),
    "delete": lambda a: da.delete(a["v"], [1, 2], axis=0),
    "searchsorted": lambda a: da.searchsorted(da.from_array(np.sort(V)), a["v"]),
}


def arrays(chunks_of: Callable[[np.ndarray], Any]) -> dict[str, Any]:
    """The operands, each cut into chunks of about half its extent."""
    data = {"x": X, "y": Y, "xn": XN, "sq": SQ, "spd": SPD, "tall": TALL, "v": V, "i": INTS}
    out = {}
    for k, v in data.items():
        chunks = tuple(max(1, n // 2) for n in v.shape)
        if k in ("sq", "spd", "tall"):
            chunks = (v.shape[0] // 2 if k == "tall" else v.shape[0], v.shape[1])
        out[k] = da.from_array(chunks_of(v), chunks=chunks)
    return out


def _values(r: Any) -> list[np.ndarray]:
    if isinstance(r, tuple | list):
        return [v for item in r for v in _values(item)]
    return [np.asarray(r)]


def _kinds(r: Any) -> list[type]:
    if isinstance(r, tuple | list):
        return [k for item in r for k in _kinds(item)]
    return [type(r)]


def check(client: Any, name: str, op: Callable[[dict[str, Any]], Any]) -> str | None:
    """None when FuelTensor chunks match NumPy chunks; else why not ('skip' if NumPy fails)."""
    try:
        want = client.compute(op(NP), sync=False)
        want = (
            [w.result(timeout=WAIT) for w in want]
            if isinstance(want, list)
            else want.result(timeout=WAIT)
        )
    except Exception:
        return "skip"
    try:
        got = client.compute(op(FT), sync=False)
        got = (
            [g.result(timeout=WAIT) for g in got]
            if isinstance(got, list)
            else got.result(timeout=WAIT)
        )
    except Exception as e:
        tb = traceback.extract_tb(e.__traceback__)
        where = f"{tb[-1].filename.split('site-packages/')[-1]}:{tb[-1].lineno}" if tb else ""
        return f"{type(e).__name__}: {str(e).splitlines()[0][:140]} [{where}]"
    for k_np, k_ft in zip(_kinds(want), _kinds(got), strict=False):
        if issubclass(k_np, np.ndarray) and not issubclass(k_ft, ft.FuelTensor):
            return f"result is {k_ft.__name__}, not FuelTensor"
    for w, g in zip(_values(want), _values(got), strict=True):
        if w.shape != g.shape or not np.allclose(
            w.astype(complex) if w.dtype.kind == "c" else w.astype(float),
            g.astype(complex) if g.dtype.kind == "c" else g.astype(float),
            rtol=1e-6,
            atol=1e-9,
            equal_nan=True,
        ):
            return f"values differ: {w.ravel()[:4]} vs {g.ravel()[:4]}"
    return None


NP: dict[str, Any] = {}
FT: dict[str, Any] = {}


def main() -> int:
    fd.register()
    NP.update(arrays(lambda v: v))
    FT.update(arrays(ft.asarray))
    dask.config.set({"array.slicing.split_large_chunks": False})
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    try:
        with distributed.Client(cluster, timeout=WAIT) as client:
            results = {name: check(client, name, op) for name, op in OPS.items()}
    finally:
        cluster.close(timeout=WAIT)
    ran = {k: v for k, v in results.items() if v != "skip"}
    bad = {k: v for k, v in ran.items() if v is not None}
    for k, v in bad.items():
        print(f"FAIL {k}: {v}")
    skipped = [k for k, v in results.items() if v == "skip"]
    print(f"skipped (NumPy chunks fail too): {skipped}")
    print(f"{len(ran) - len(bad)} of {len(ran)} operations work on FuelTensor chunks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
