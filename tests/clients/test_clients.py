"""Real array-API clients on fueltensor (issue 13): scikit-learn, SciPy, xarray and
array-api-extra, each call compared with the same call on NumPy, and the results asserted to be
FuelTensors where the client keeps the namespace. Skipped when the `clients` extra is absent."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from packaging.version import Version

import fueltensor as ft

RNG = np.random.default_rng(13)
X = RNG.standard_normal((60, 5))
Y_CLASS = (X[:, 0] + 0.3 * RNG.standard_normal(60) > 0).astype(np.int64)
Y_OTHER = (X[:, 1] > 0).astype(np.int64)
Y_REG = X @ np.arange(5.0) + 0.1 * RNG.standard_normal(60)


def _close(got: Any, want: Any) -> None:
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want), rtol=1e-7, atol=1e-9)


@pytest.fixture
def sklearn() -> Any:
    sk = pytest.importorskip("sklearn")
    if os.environ.get("SCIPY_ARRAY_API") != "1":
        pytest.skip("scikit-learn's array API dispatch needs SCIPY_ARRAY_API=1 at import")
    with sk.config_context(array_api_dispatch=True):
        yield sk


def _sklearn_calls() -> dict[str, tuple[Callable[[Any], Any], bool]]:
    """name -> (call on a namespace, whether the result keeps the namespace)."""
    from sklearn import metrics
    from sklearn.decomposition import PCA
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler, StandardScaler
    from sklearn.utils import resample

    return {
        "StandardScaler": (lambda xp: StandardScaler().fit_transform(xp.asarray(X)), True),
        "MinMaxScaler": (lambda xp: MinMaxScaler().fit_transform(xp.asarray(X)), True),
        "PCA full": (lambda xp: PCA(3, svd_solver="full").fit_transform(xp.asarray(X)), True),
        "PCA randomized": (
            lambda xp: PCA(
                3, svd_solver="randomized", random_state=0, power_iteration_normalizer="QR"
            ).fit_transform(xp.asarray(X)),
            True,
        ),
        "LinearDiscriminantAnalysis": (
            lambda xp: (
                LinearDiscriminantAnalysis()
                .fit(xp.asarray(X), xp.asarray(Y_CLASS))
                .predict_proba(xp.asarray(X))
            ),
            True,
        ),
        "Ridge svd": (
            lambda xp: (
                Ridge(solver="svd").fit(xp.asarray(X), xp.asarray(Y_REG)).predict(xp.asarray(X))
            ),
            True,
        ),
        "r2_score": (
            lambda xp: metrics.r2_score(xp.asarray(Y_REG), xp.asarray(0.9 * Y_REG)),
            False,
        ),
        "mean_squared_error": (
            lambda xp: metrics.mean_squared_error(xp.asarray(Y_REG), xp.asarray(0.9 * Y_REG)),
            False,
        ),
        "accuracy_score": (
            lambda xp: metrics.accuracy_score(xp.asarray(Y_CLASS), xp.asarray(Y_OTHER)),
            False,
        ),
        "balanced_accuracy_score": (
            lambda xp: metrics.balanced_accuracy_score(xp.asarray(Y_CLASS), xp.asarray(Y_OTHER)),
            False,
        ),
        "cohen_kappa_score": (
            lambda xp: metrics.cohen_kappa_score(xp.asarray(Y_CLASS), xp.asarray(Y_OTHER)),
            False,
        ),
        "resample stratify": (
            lambda xp: resample(
                xp.asarray(X),
                stratify=xp.asarray(Y_CLASS),
                n_samples=20,
                random_state=0,
            ),
            True,
        ),
        "pipeline cross_val_score": (
            lambda xp: cross_val_score(
                make_pipeline(StandardScaler(), Ridge(solver="svd")),
                xp.asarray(X),
                xp.asarray(Y_REG),
                cv=3,
            ),
            False,
        ),
    }


SKLEARN_NAMES = [
    "StandardScaler",
    "MinMaxScaler",
    "PCA full",
    "PCA randomized",
    "LinearDiscriminantAnalysis",
    "Ridge svd",
    "r2_score",
    "mean_squared_error",
    "accuracy_score",
    "balanced_accuracy_score",
    "cohen_kappa_score",
    "resample stratify",
    "pipeline cross_val_score",
]


SKLEARN_SINCE = {"resample stratify": "1.8"}
"""Calls scikit-learn runs on the array API only from a release on: before 1.8, a stratified
`resample` indexes the namespace's array with NumPy indices, which fueltensor refuses (as the
standard does) with a TypeError. Measured: 1.6.0 and 1.7.2 refuse, 1.8.0 and 1.9.1 run."""


@pytest.mark.parametrize("name", SKLEARN_NAMES)
def test_scikit_learn(sklearn: Any, name: str, request: pytest.FixtureRequest) -> None:
    since = SKLEARN_SINCE.get(name)
    if since and Version(sklearn.__version__) < Version(since):
        reason = f"scikit-learn {sklearn.__version__} < {since} indexes with NumPy indices"
        request.applymarker(pytest.mark.xfail(strict=True, raises=TypeError, reason=reason))
    call, keeps = _sklearn_calls()[name]
    with sklearn.config_context(array_api_dispatch=False):
        want = call(np)
    got = call(ft)
    assert isinstance(got, ft.FuelTensor) == keeps
    _close(got, want)


SCIPY_CALLS: dict[str, Callable[[Any, Any], Any]] = {
    "special.logsumexp": lambda sp, x: sp.special.logsumexp(x, axis=0),
    "special.expit": lambda sp, x: sp.special.expit(x),
    "special.erf": lambda sp, x: sp.special.erf(x),
    "special.xlogy": lambda sp, x: sp.special.xlogy(x, x * x),
    "stats.skew": lambda sp, x: sp.stats.skew(x, axis=0),
    "stats.kurtosis": lambda sp, x: sp.stats.kurtosis(x, axis=0),
    "stats.zscore": lambda sp, x: sp.stats.zscore(x, axis=0),
    "stats.moment": lambda sp, x: sp.stats.moment(x, order=3, axis=0),
    "stats.variation": lambda sp, x: sp.stats.variation(x, axis=0),
    "ndimage.distance_transform_edt": lambda sp, x: sp.ndimage.distance_transform_edt(x > 0.5),
}


@pytest.mark.parametrize("name", sorted(SCIPY_CALLS))
def test_scipy(name: str) -> None:
    pytest.importorskip("scipy")
    if os.environ.get("SCIPY_ARRAY_API") != "1":
        pytest.skip("SciPy's array API support needs SCIPY_ARRAY_API=1 at import")
    import scipy.ndimage
    import scipy.special
    import scipy.stats

    got = SCIPY_CALLS[name](scipy, ft.asarray(X))
    assert isinstance(got, ft.FuelTensor)
    _close(got, SCIPY_CALLS[name](scipy, X))


XARRAY_CALLS: dict[str, Callable[[Any], Any]] = {
    "arithmetic": lambda da: (da + 1) * da - da / 2,
    "mean": lambda da: da.mean(),
    "var": lambda da: da.var("t"),
    "std": lambda da: da.std(),
    "max": lambda da: da.max("v"),
    "argmax": lambda da: da.argmax("t"),
    "median": lambda da: da.median("t"),
    "cumsum": lambda da: da.cumsum("t"),
    "prod": lambda da: da.prod("v"),
    "where": lambda da: da.where(da > 0),
    "shift": lambda da: da.shift(t=1),
    "fillna": lambda da: da.where(da > 0).fillna(0.0),
    "groupby": lambda da: da.groupby("g").mean(),
    "coarsen": lambda da: da.coarsen(t=3).mean(),
    "np.sin": lambda da: np.sin(da),
    "shift fill_value": lambda da: da.shift(t=2, fill_value=-1.0),
    "pad": lambda da: da.pad(t=(1, 2), v=1, constant_values=0.5),
    "pad edge": lambda da: da.pad(t=2, mode="edge"),
    "rolling construct": lambda da: da.rolling(t=3).construct("w", fill_value=0.0),
    "rolling mean": lambda da: da.rolling(t=3).mean(),
    "rolling sum": lambda da: da.rolling(t=4, center=True).sum(),
    "cumulative_integrate": lambda da: da.cumulative_integrate("t"),
    "weighted sum": lambda da: da.weighted(_weights(da)).sum("t"),
    "weighted mean": lambda da: da.weighted(_weights(da)).mean("t"),
    "dot": lambda da: da.dot(da, dim="v"),
    "round": lambda da: da.round(2),
    "real": lambda da: (da * (1 + 2j)).real,
    "differentiate": lambda da: da.differentiate("t"),
    "quantile": lambda da: da.quantile([0.25, 0.75], "t"),
}


def _weights(da: Any) -> Any:
    """Weights along t in the namespace of `da`'s data."""
    xp = ft if isinstance(da.data, ft.FuelTensor) else np
    return type(da)(xp.asarray(np.linspace(0.0, 2.0, 60)), dims=("t",))


XARRAY_PROMOTED = {"where", "shift", "fillna", "rolling mean", "rolling sum", "weighted mean"}
"""The calls that go through xarray's missing-value promotion (`maybe_promote`: the NaN fills of
where, shift, fillna, rolling windows and weighted means)."""


def xarray_refusals() -> dict[str, str]:
    """The XARRAY_PROMOTED calls the installed xarray cannot run on FuelTensors, with why. A
    FuelTensor's dtype is fueltensor's own (the standard's attribute), and `maybe_promote` has
    taken it three ways (measured): as float64 (2024.1: every call runs), as object (2025.6:
    the NaN fills run, `shift` asks fueltensor for an object array), or not at all (2026.9: it
    wants an `np.dtype` instance)."""
    from xarray.core import dtypes

    try:
        promoted = np.dtype(dtypes.maybe_promote(ft.float64)[0])
    except TypeError:
        return dict.fromkeys(XARRAY_PROMOTED, "xarray's maybe_promote wants an np.dtype")
    if promoted == np.dtype(object):
        return {"shift": "xarray promotes a fueltensor dtype to object, which fueltensor lacks"}
    return {}


@pytest.mark.parametrize("name", sorted(XARRAY_CALLS))
def test_xarray(name: str, request: pytest.FixtureRequest) -> None:
    xr = pytest.importorskip("xarray")
    reason = xarray_refusals().get(name)
    if reason:
        request.applymarker(pytest.mark.xfail(strict=True, raises=TypeError, reason=reason))

    def frame(data: Any) -> Any:
        coords = {"g": ("t", np.arange(60) % 3), "t": np.linspace(0.0, 3.0, 60)}
        return xr.DataArray(data, dims=("t", "v"), coords=coords, name="x")

    got = XARRAY_CALLS[name](frame(ft.asarray(X)))
    want = XARRAY_CALLS[name](frame(X))
    assert isinstance(got.data, ft.FuelTensor), type(got.data)
    _close(got.data, want.data)


XPX_CALLS: dict[str, Callable[[Any, Any], Any]] = {
    "atleast_nd": lambda xpx, x: xpx.atleast_nd(x[0], ndim=3),
    "cov": lambda xpx, x: xpx.cov(x.T if hasattr(x, "T") else x),
    "kron": lambda xpx, x: xpx.kron(x[:2, :2], x[:3, :2]),
    "sinc": lambda xpx, x: xpx.sinc(x),
    "nunique": lambda xpx, x: xpx.nunique(x),
    "pad": lambda xpx, x: xpx.pad(x, 2),
    "setdiff1d": lambda xpx, x: xpx.setdiff1d(x[0], x[1]),
}


@pytest.mark.parametrize("name", sorted(XPX_CALLS))
def test_array_api_extra(name: str) -> None:
    xpx = pytest.importorskip("array_api_extra")
    got = XPX_CALLS[name](xpx, ft.asarray(X))
    assert isinstance(got, ft.FuelTensor)
    _close(got, XPX_CALLS[name](xpx, X))
