"""Dask arrays of FuelTensor chunks on a real 2-process LocalCluster: the eight operations in the
four contract dtypes, special values included, bit-identical to the single-process result; blocks
and results are FuelTensors; a trace taken on the workers names the contract kernels; reports
and plans come back through the cluster; the judge runs on the workers and compares them. Dask's
own operations (reductions, the nan* family, argmax, matmul, einsum, linalg, unique, masks,
astype, persist) on FuelTensor chunks give what they give on NumPy chunks, as FuelTensors."""

from __future__ import annotations

import json
import operator
import pickle
from collections.abc import Callable, Iterator
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _extras import local_client

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import fueltensor as ft  # noqa: E402
from fueltensor import dask as fd  # noqa: E402
from fueltensor.tools.cluster import MachineReport, differences  # noqa: E402
from fueltensor.tools.judge import Audit, JudgeReport  # noqa: E402

WAIT = 60.0
"""Seconds any single wait on the cluster may take before the test fails."""
DTYPES = (ft.float32, ft.float64, ft.bfloat16, ft.float16)
SHAPE, CHUNKS = (16, 48), (4, 24)
"""768 elements in 8 chunks (4 x 2)."""
OPS = ("add", "subtract", "multiply", "divide", "remainder", "pow", "maximum", "minimum")
OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add,
    "subtract": operator.sub,
    "multiply": operator.mul,
    "divide": operator.truediv,
    "remainder": operator.mod,
    "pow": operator.pow,
}
UFUNCS = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "remainder": np.remainder,
    "pow": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
}


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """Two single-threaded worker processes; always closed, every wait bounded."""
    with local_client(WAIT) as c:
        yield c


def _uint(dtype: ft.DType) -> type[np.unsignedinteger[Any]]:
    return {2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize]


def _specials(dtype: ft.DType) -> np.ndarray:
    """NaNs with payloads (quiet and signaling, both signs), ±0, ±inf, subnormals, extremes."""
    np_dtype = dtype.np
    info: Any = ml_dtypes.finfo(np_dtype) if dtype is ft.bfloat16 else np.finfo(np_dtype)
    bits = 8 * dtype.itemsize
    mantissa = int(info.nmant)
    exponent_all = ((1 << (bits - 1 - mantissa)) - 1) << mantissa
    sign = 1 << (bits - 1)
    nans = [exponent_all | (1 << (mantissa - 1)) | 5, exponent_all | 3]  # quiet + payload, sNaN
    nans += [n | sign for n in nans]
    values = np.array(
        [
            *(0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 2.5, -3.0, 7.0),
            *(float(info.smallest_subnormal), -float(info.smallest_subnormal)),
            *(float(info.tiny), float(info.max), -float(info.max), float(info.eps)),
        ],
        np.float64,
    ).astype(np_dtype)
    return np.concatenate([values, np.array(nans, _uint(dtype)).view(np_dtype)])


def operands(dtype: ft.DType, seed: int = 0) -> tuple[ft.FuelTensor, ft.FuelTensor]:
    """Every pair of special values, then random bit patterns and random ordinary values."""
    rng = np.random.default_rng(seed)
    s = _specials(dtype)
    n = SHAPE[0] * SHAPE[1]
    lhs, rhs = np.repeat(s, s.size), np.tile(s, s.size)
    rest = n - lhs.size
    u = _uint(dtype)
    patterns = rng.integers(0, np.iinfo(u).max, (2, rest // 2), dtype=u, endpoint=True)
    ordinary = (rng.uniform(-8, 8, (2, rest - rest // 2))).astype(dtype.np)
    full = [
        np.concatenate([side, patterns[i].view(dtype.np), ordinary[i]]).reshape(SHAPE)
        for i, side in enumerate((lhs, rhs))
    ]
    return ft.asarray(full[0]), ft.asarray(full[1])


def bits(t: Any) -> np.ndarray:
    """The bit patterns of a FuelTensor's elements."""
    assert isinstance(t, ft.FuelTensor), type(t)
    a = np.ascontiguousarray(np.asarray(t))
    return a.view(_uint(ft.asarray(a).dtype))


def gather(c: Any, arrays: list[Any]) -> list[Any]:
    """Compute Dask arrays on the cluster, each wait bounded."""
    return [f.result(timeout=WAIT) for f in c.compute(arrays)]


def test_from_tensor_keeps_fueltensor_meta_and_blocks(client: Any) -> None:
    x, _ = operands(ft.float32)
    a = fd.from_tensor(x, CHUNKS)
    assert isinstance(a, da.Array) and a.npartitions == 8
    assert isinstance(a._meta, ft.FuelTensor) and a.dtype == ft.float32
    blocks = [f.result(timeout=WAIT) for f in client.compute(a.to_delayed().ravel().tolist())]
    assert len(blocks) == 8 and all(isinstance(b, ft.FuelTensor) for b in blocks)
    whole = gather(client, [a])[0]
    assert isinstance(whole, ft.FuelTensor)
    np.testing.assert_array_equal(bits(whole), bits(x))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_eight_ops_bit_identical_to_single_process(client: Any, dtype: ft.DType) -> None:
    x, y = operands(dtype)
    a, b = fd.from_tensor(x, CHUNKS), fd.from_tensor(y, CHUNKS)
    cases: list[tuple[str, str, Any]] = []
    for op in OPS:
        cases.append((op, "ft", getattr(ft, op)(a, b)))
        cases.append((op, "da", getattr(da, UFUNCS[op].__name__)(a, b)))
        if op in OPERATORS:
            cases.append((op, "operator", OPERATORS[op](a, b)))
    for op, how, arr in cases:
        assert isinstance(arr._meta, ft.FuelTensor), (op, how)
        assert arr.dtype == dtype and arr.npartitions == 8, (op, how)
    results = gather(client, [arr for _, _, arr in cases])
    for (op, how, _), got in zip(cases, results, strict=True):
        want = getattr(ft, op)(x, y)
        assert isinstance(got, ft.FuelTensor), (op, how, type(got))
        assert got.dtype is dtype, (op, how)
        mismatch = np.flatnonzero(bits(got) != bits(want))
        assert mismatch.size == 0, (
            f"{op} via {how} in {dtype.name}: {mismatch.size} elements differ, first at "
            f"{mismatch[:3]}: lhs {np.asarray(x).ravel()[mismatch[:3]]}, "
            f"rhs {np.asarray(y).ravel()[mismatch[:3]]}"
        )


def test_trace_on_the_workers_names_the_contract_kernels(client: Any) -> None:
    x, y = operands(ft.float32)
    a, b = fd.from_tensor(x, CHUNKS), fd.from_tensor(y, CHUNKS)
    traced = fd.trace(ft.maximum(a, b) % b, client, timeout=WAIT)
    np.testing.assert_array_equal(bits(traced.result), bits(ft.maximum(x, y) % y))
    block = (x[:4, :24], y[:4, :24])
    want = [ft.explain(ft.maximum, *block).kernel, ft.explain(ft.remainder, *block).kernel]
    assert all(k is not None for k in want)
    assert len(traced.blocks) == 8
    workers = set(client.nthreads())  # asked of the scheduler (scheduler_info may be stale)
    for bt in traced.blocks:
        assert bt.worker in workers
        assert [p.kernel.name for p in bt.plans if p.kernel] == [k.name for k in want if k]
        assert all(p.fn is not None for p in bt.plans)


def test_fueltensor_promotion_in_the_metadata(client: Any) -> None:
    x, y = operands(ft.bfloat16)[0], operands(ft.float16, seed=1)[0]
    a, b = fd.from_tensor(x, CHUNKS), fd.from_tensor(y, CHUNKS)
    for arr in (ft.add(a, b), ft.maximum(a, b), ft.multiply(x, b), a + b, da.minimum(a, b)):
        assert arr.dtype == ft.float32 and arr._meta.dtype is ft.float32
    got = gather(client, [ft.add(a, b)])[0]
    assert got.dtype is ft.float32
    np.testing.assert_array_equal(bits(got), bits(ft.add(x, y)))


def test_a_dask_array_made_by_dask_itself_holds_fueltensors(client: Any) -> None:
    x, y = operands(ft.float16)
    a, b = da.from_array(x, chunks=CHUNKS), da.from_array(y, chunks=CHUNKS)
    assert isinstance(a._meta, ft.FuelTensor)
    m = ft.maximum(a, b)
    assert isinstance(m, da.Array) and isinstance(m._meta, ft.FuelTensor)
    np.testing.assert_array_equal(bits(gather(client, [m])[0]), bits(ft.maximum(x, y)))


def test_operands_of_other_kinds_join_a_dask_array(client: Any) -> None:
    x, y = operands(ft.float64)
    a = fd.from_tensor(x, CHUNKS)
    results = gather(client, [a + y, y + a, a * 2.0, 2.0**a, a - y[0]])
    want = [x + y, y + x, x * 2.0, 2.0**x, x - y[0]]
    for got, w in zip(results, want, strict=True):
        np.testing.assert_array_equal(bits(got), bits(w))


def test_reductions_rechunk_slicing_and_transpose(client: Any) -> None:
    x = ft.asarray(np.arange(SHAPE[0] * SHAPE[1], dtype=np.float32).reshape(SHAPE) % 17)
    a = fd.from_tensor(x, CHUNKS)
    got = gather(
        client, [a.sum(axis=0), a.max(axis=1), a.min(), a.rechunk((8, 6)), a[3:15:3, ::-5], a.T]
    )
    want = [ft.sum(x, axis=0), ft.max(x, axis=1), ft.min(x), x, x[3:15:3, ::-5], x.T]
    for g, w in zip(got, want, strict=True):
        assert isinstance(g, ft.FuelTensor)
        assert g.shape == w.shape
        np.testing.assert_array_equal(bits(g), bits(w))


def test_dask_sizes_a_block_by_its_elements() -> None:
    fd.register()
    block = ft.asarray(np.zeros((100, 30), np.float32))[::2]
    assert dask.sizeof.sizeof(block) == 50 * 30 * 4


def test_a_view_pickles_only_its_visible_elements(client: Any) -> None:
    x = ft.asarray(np.arange(10_000, dtype=np.float32).reshape(100, 100))
    view = x[10:20, 30:40]
    size = len(pickle.dumps(view))
    assert size < 100 * view.dtype.itemsize + 1024, size
    back = client.submit(lambda v: v, view, pure=False).result(timeout=WAIT)
    assert isinstance(back, ft.FuelTensor) and back.shape == (10, 10)
    np.testing.assert_array_equal(np.asarray(back), np.asarray(view))


def _compare_here() -> Any:
    x = ft.asarray(np.linspace(-4, 4, 64, dtype=np.float32))
    with ft.compare_backends() as report:
        x + x, x * x
    return report


def test_reports_and_plans_come_back_through_the_cluster(client: Any) -> None:
    report = client.submit(_compare_here, pure=False).result(timeout=WAIT)
    local = _compare_here()
    fields = ("op", "dtypes", "shape", "kernels", "compared", "count", "equal", "max_ulp")
    assert len(report) == len(local) == 2
    for got, want in zip(report, local, strict=True):
        assert [getattr(got, f) for f in fields] == [getattr(want, f) for f in fields]
    report.add(report.comparisons[0])  # the lock was recreated
    report.assert_equal(max_ulp=0)
    x = ft.asarray(np.ones((3, 4), np.float32))
    y = ft.asarray(np.ones(4, np.float16))
    plan = client.submit(ft.explain, ft.maximum, x.T.T, y, pure=False).result(timeout=WAIT)
    local = ft.explain(ft.maximum, x.T.T, y)
    assert plan == local and str(plan) == str(local)
    assert plan.fn is not None and plan.fn is local.fn
    np.testing.assert_array_equal(np.asarray(ft.maximum(x, y)), np.asarray(ft.maximum(x, y)))


def test_judge_across_the_workers(client: Any) -> None:
    kernels = ["add_f32", "pow_f16", "maximum_bf16"]
    every = ft.judge(client=client, kernels=kernels, quick=True, every_worker=True, timeout=WAIT)
    workers = sorted(client.nthreads())
    assert [m.name for m in every.machines] == workers
    for m in every.machines:
        assert isinstance(m.report, JudgeReport)
        assert [a.kernel for a in m.report.rows] == kernels
        assert m.fingerprint["cpu"] and m.fingerprint["kernels"]
        assert all(len(a.digest) == 64 for a in m.report.rows)
    assert every.differences == [] and every.ok, str(every)
    per_host = ft.judge(client=client, kernels=kernels[:1], quick=True, timeout=WAIT)
    assert len(per_host.machines) == 1 and per_host.machines[0].workers == tuple(workers)
    assert "add_f32" in str(per_host) and "1 machine" in per_host.summary()


def _machine(name: str, cpu: str, digest: str) -> MachineReport:
    audit = Audit("add_f32", "fuel-cpu-backend", "AddElementwise", "F32", "add_f32", "", 0.0)
    audit.digest = digest
    return MachineReport(name, (name,), {"cpu": cpu}, JudgeReport([audit], True, 1.0, 0.1))


def test_bits_differing_on_equal_fingerprints_break_a_same_hardware_claim() -> None:
    assert ft.registry()["add_f32"].precision.bit_stable_on_same_hardware
    same = differences([_machine("a", "X", "1" * 64), _machine("b", "X", "2" * 64)])
    assert [(d.aspect, d.breaks_claim) for d in same] == [("bits", True)]
    other = differences([_machine("a", "X", "1" * 64), _machine("b", "Y", "2" * 64)])
    assert [(d.aspect, d.breaks_claim) for d in other] == [("bits", False)]
    assert differences([_machine("a", "X", "1" * 64), _machine("b", "Y", "1" * 64)]) == []


def test_judge_command_with_a_scheduler(client: Any, tmp_path: Any, capsys: Any) -> None:
    from fueltensor.cli import main

    out = tmp_path / "judge.json"
    address = client.scheduler.address
    argv = ["judge", "--scheduler", address, "--kernel", "add_f32", "--quick", "--json", str(out)]
    assert main([*argv, "--every-worker", "--timeout", str(WAIT)]) == 0
    found = json.loads(out.read_text())
    assert found["ok"] and len(found["machines"]) == 2 and found["differences"] == []
    assert all(m["fingerprint"]["cpu"] for m in found["machines"])
    assert "judge across 2 machines" in capsys.readouterr().out
    assert main(["judge", "--scheduler", address, "--contracts", str(out)]) == 2


# -- issue 22: what Dask computes on NumPy chunks, on FuelTensor chunks ---------------------

RNG = np.random.default_rng(22)
XS = RNG.standard_normal((12, 10))
YS = RNG.standard_normal((12, 10))
NANS = np.where(RNG.random((12, 10)) < 0.1, np.nan, XS)
SQUARE = RNG.standard_normal((10, 10)) + 10 * np.eye(10)
TALL = RNG.standard_normal((40, 6))
VEC = RNG.standard_normal(20)
INTS = RNG.integers(0, 9, 30)
Expr = Callable[[dict[str, Any]], Any]


def _operands(wrap: Callable[[np.ndarray], Any]) -> dict[str, Any]:
    """The operands as Dask arrays of `wrap`ped chunks: several blocks on every axis but the
    linalg ones, which Dask wants as one column of blocks (or square blocks)."""
    chunks = {"x": (6, 5), "y": (6, 5), "xn": (6, 5), "sq": (10, 10), "spd": (10, 10)}
    chunks |= {"tall": (20, 6), "v": (7,), "i": (10,)}
    data = {"x": XS, "y": YS, "xn": NANS, "sq": SQUARE, "spd": SQUARE @ SQUARE.T}
    data |= {"tall": TALL, "v": VEC, "i": INTS}
    return {k: da.from_array(wrap(v), chunks=chunks[k], asarray=False) for k, v in data.items()}


ISSUE22: dict[str, Expr] = {
    "mean": lambda a: a["x"].mean(axis=0),
    "std": lambda a: a["x"].std(),
    "var ddof": lambda a: a["x"].var(axis=1, ddof=1),
    "moment": lambda a: a["x"].moment(3, axis=0),
    "nansum": lambda a: da.nansum(a["xn"], axis=1),
    "nanmean": lambda a: da.nanmean(a["xn"], axis=0),
    "nanstd": lambda a: da.nanstd(a["xn"]),
    "nanvar": lambda a: da.nanvar(a["xn"], axis=1),
    "nanmax": lambda a: da.nanmax(a["xn"], axis=0),
    "nanmin": lambda a: da.nanmin(a["xn"]),
    "nanprod": lambda a: da.nanprod(a["xn"], axis=1),
    "nancumsum": lambda a: da.nancumsum(a["xn"], axis=0),
    "argmax": lambda a: a["x"].argmax(),
    "argmax axis": lambda a: a["x"].argmax(axis=1),
    "argmin": lambda a: da.argmin(a["x"]),
    "argmin axis": lambda a: a["x"].argmin(axis=0),
    "nanargmax": lambda a: da.nanargmax(a["xn"], axis=0),
    "matmul": lambda a: da.matmul(a["x"], a["y"].T),
    "@": lambda a: a["x"] @ a["x"].T,
    "dot": lambda a: da.dot(a["x"], a["y"].T),
    "tensordot": lambda a: da.tensordot(a["x"], a["y"], axes=([1], [1])),
    "einsum": lambda a: da.einsum("ij,kj->ik", a["x"], a["y"]),
    "qr": lambda a: da.linalg.qr(a["tall"])[1],
    "svd": lambda a: da.linalg.svd(a["tall"])[1],
    "cholesky": lambda a: da.linalg.cholesky(a["spd"], lower=True),
    "unique": lambda a: da.unique(a["i"]),
    "bincount": lambda a: da.bincount(a["i"], minlength=9),
    "argtopk": lambda a: da.argtopk(a["v"], 3),
    "greater": lambda a: a["x"] > a["y"],
    "where": lambda a: da.where(a["x"] > 0, a["x"], -1.0),
    "isnan": lambda a: da.isnan(a["xn"]),
    "boolean index": lambda a: a["x"][a["x"] > 0.5],
    "astype": lambda a: a["x"].astype(np.float32),
    "any": lambda a: (a["x"] > 2).any(axis=0),
    "all": lambda a: (a["x"] > -3).all(),
    "persist mean": lambda a: a["x"].persist().mean(axis=1),
    "percentile": lambda a: da.percentile(a["v"], [25, 75]),
}
"""Each operation, run on FuelTensor chunks on the cluster and on NumPy chunks in this
process (Dask's own algorithm on NumPy is the reference: chunked reductions and percentiles
are Dask's, not NumPy's whole-array answers)."""

NO_META = {"boolean index"}
"""Dask builds the result of `x[mask]` from its dtype alone: a NumPy `_meta` for every chunk
type (the computed blocks are FuelTensors)."""


def _here(expr: Expr, arrays: dict[str, Any]) -> Any:
    """`expr` on `arrays`, built and computed in this process (persist included), not on the
    cluster."""
    with dask.config.set(scheduler="sync"):
        return expr(arrays).compute()


def test_operations_on_numpy_chunks_work_on_fueltensor_chunks(client: Any) -> None:
    fd.register()
    exprs = {name: expr(_operands(ft.asarray)) for name, expr in ISSUE22.items()}
    got = dict(zip(exprs, gather(client, list(exprs.values())), strict=True))
    numpy_chunks = _operands(np.asarray)
    wrong = []
    for name, expr in ISSUE22.items():
        want = np.asarray(_here(expr, numpy_chunks))
        g, meta = got[name], exprs[name]._meta
        if not isinstance(g, ft.FuelTensor) or not (
            name in NO_META or isinstance(meta, ft.FuelTensor)
        ):
            wrong.append(f"{name}: {type(g).__name__} (meta {type(meta).__name__})")
        elif g.shape != want.shape or not np.allclose(
            np.asarray(g), want, rtol=1e-12, equal_nan=True
        ):
            wrong.append(f"{name}: {np.asarray(g).ravel()[:3]} vs {want.ravel()[:3]}")
    assert not wrong, wrong


def test_contract_ops_inside_dask_graphs_stay_bit_identical(client: Any) -> None:
    x, y = operands(ft.float32)
    a, b = fd.from_tensor(x, CHUNKS), fd.from_tensor(y, CHUNKS)
    cases = [
        (da.where(a > b, a * b, a - b), ft.where(x > y, x * y, x - y)),
        ((a / b)[a > 0], (x / y)[x > 0]),
        ((a % b).astype(np.float64) + 1.0, ft.astype(x % y, ft.float64) + 1.0),
        (ft.maximum(a, b).persist() ** b, ft.maximum(x, y) ** y),
    ]
    results = gather(client, [c[0] for c in cases])
    for got, (_, want) in zip(results, cases, strict=True):
        assert isinstance(got, ft.FuelTensor) and got.dtype is want.dtype
        np.testing.assert_array_equal(bits(got), bits(want))


SCIPY_BY_NAME: dict[str, Expr] = {
    "solve": lambda a: da.linalg.solve(a["sq"], a["tall"][:10]),
    "lstsq": lambda a: da.linalg.lstsq(a["tall"], a["tall"][:, 0])[0],
    "inv": lambda a: da.linalg.inv(a["sq"]),
}


@pytest.mark.xfail(
    strict=True,
    reason="Dask calls scipy.linalg.lu and solve_triangular by name for every chunk type but "
    "CuPy's: SciPy's linalg gives NumPy blocks, and with SCIPY_ARRAY_API=1 refuses the NumPy "
    "and FuelTensor blocks Dask then mixes; nothing fueltensor can register reaches it",
)
@pytest.mark.parametrize("name", sorted(SCIPY_BY_NAME))
def test_linalg_through_scipy_stays_fueltensor(client: Any, name: str) -> None:
    fd.register()
    expr = SCIPY_BY_NAME[name]
    (got,) = gather(client, [expr(_operands(ft.asarray))])
    want = _here(expr, _operands(np.asarray))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    assert isinstance(got, ft.FuelTensor), type(got)
