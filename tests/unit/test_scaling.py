"""Power-law fits of scaling sweeps (analyses.scaling), checked against truth by construction
and against an independent computation: numpy.polyfit on the logs, the textbook standard error
of a slope, and t quantiles from a printed t table."""

from __future__ import annotations

import math

import msgspec
import numpy as np
import pytest

from gpuprofile.analyses.scaling import PowerFit, describe, fit_power, project, t_quantile

# t(0.975, dof) from a printed table (three decimals).
T_TABLE = {1: 12.706, 2: 4.303, 5: 2.571, 10: 2.228, 30: 2.042, 120: 1.980}


def test_exact_power_law() -> None:
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    fit = fit_power(x, 3.0 * x**2)
    assert fit is not None
    assert fit.exponent == pytest.approx(2.0, abs=1e-9)
    assert fit.coefficient == pytest.approx(3.0, rel=1e-9)
    assert fit.r2 == pytest.approx(1.0, abs=1e-12)
    assert fit.samples == 6 and fit.dof == 4 and fit.distinct_x == 6 and fit.dropped == 0
    assert fit.interval is not None
    assert fit.interval[0] == pytest.approx(2.0, abs=1e-6)
    assert fit.interval[1] == pytest.approx(2.0, abs=1e-6)


@pytest.mark.parametrize("dof", T_TABLE)
def test_t_quantile_matches_table(dof: int) -> None:
    assert t_quantile(0.975, dof) == pytest.approx(T_TABLE[dof], abs=6e-4)


def test_t_quantile_closed_forms_and_symmetry() -> None:
    for p in (0.6, 0.9, 0.975, 0.999):
        # dof 1 is Cauchy, dof 2 has a closed form; dof 3 and 4 go through the beta function,
        # which must agree with those forms' neighbours' monotonicity and with symmetry.
        assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-12)
        assert t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)))
        for dof in (3, 7, 50, 1000):
            assert t_quantile(1 - p, dof) == pytest.approx(-t_quantile(p, dof), rel=1e-9)
            assert t_quantile(p, dof) < t_quantile(p, dof - 1)
    assert t_quantile(0.5, 9) == 0.0
    # Known values to more digits (tables of the t distribution).
    assert t_quantile(0.975, 3) == pytest.approx(3.182446305, abs=1e-6)
    assert t_quantile(0.995, 4) == pytest.approx(4.604094871, abs=1e-6)
    assert t_quantile(0.95, 20) == pytest.approx(1.724718243, abs=1e-6)
    assert t_quantile(0.975, 1000) == pytest.approx(1.962339081, abs=1e-6)
    # Large dof tends to the normal quantile.
    assert t_quantile(0.975, 10**6) == pytest.approx(1.959966, abs=1e-5)
    with pytest.raises(ValueError):
        t_quantile(1.0, 3)
    with pytest.raises(ValueError):
        t_quantile(0.9, 0)


@pytest.mark.parametrize("dof", T_TABLE)
def test_matches_independent_computation(dof: int) -> None:
    rng = np.random.default_rng(dof)
    n = dof + 2
    x = np.geomspace(8, 4096, n)
    y = 0.5 * x**1.5 * np.exp(rng.normal(0, 0.2, n))
    fit = fit_power(x, y)
    assert fit is not None and fit.dof == dof

    lx, ly = np.log(x), np.log(y)
    slope, intercept = np.polyfit(lx, ly, 1)
    resid = ly - (slope * lx + intercept)
    s = math.sqrt(float(resid @ resid) / (n - 2))
    se = s / math.sqrt(float(((lx - lx.mean()) ** 2).sum()))
    assert fit.exponent == pytest.approx(slope, abs=1e-9)
    assert fit.coefficient == pytest.approx(math.exp(intercept), rel=1e-9)
    assert fit.residual_se == pytest.approx(s, rel=1e-9)
    assert fit.interval is not None
    lo, hi = fit.interval
    # The table has 3 decimals: the half-width agrees to 6e-4 of a standard error.
    assert (hi - lo) / 2 == pytest.approx(T_TABLE[dof] * se, abs=6e-4 * se)
    assert (lo + hi) / 2 == pytest.approx(slope, abs=1e-9)
    r2 = 1 - float(resid @ resid) / float(((ly - ly.mean()) ** 2).sum())
    assert fit.r2 == pytest.approx(r2, abs=1e-12)


def test_interval_covers_true_exponent_about_95_percent() -> None:
    rng = np.random.default_rng(20240601)
    x = np.repeat([64.0, 128.0, 256.0, 512.0, 1024.0], 3)  # 5 values, 3 repeats: dof 13
    covered = 0
    trials = 400
    for _ in range(trials):
        y = 2.0 * x**1.8 * np.exp(rng.normal(0, 0.15, x.size))
        fit = fit_power(x, y)
        assert fit is not None and fit.interval is not None
        covered += fit.interval[0] <= 1.8 <= fit.interval[1]
    assert 0.90 <= covered / trials <= 0.99


def test_prediction_interval_covers_new_observation_about_95_percent() -> None:
    rng = np.random.default_rng(7)
    x = np.repeat([1.0, 2.0, 4.0, 8.0], 2)
    covered = 0
    trials = 400
    for _ in range(trials):
        y = 5.0 * x**0.7 * np.exp(rng.normal(0, 0.1, x.size))
        fit = fit_power(x, y)
        assert fit is not None
        new = 5.0 * 32.0**0.7 * math.exp(rng.normal(0, 0.1))
        _, lo, hi = project(fit, 32.0)
        assert lo is not None and hi is not None
        covered += lo <= new <= hi
    assert 0.90 <= covered / trials <= 0.99


def test_fewer_than_two_distinct_x_is_none() -> None:
    assert fit_power([4.0, 4.0, 4.0], [1.0, 2.0, 3.0]) is None
    assert fit_power([4.0], [1.0]) is None
    assert fit_power([], []) is None
    # Dropping y leaves one distinct x.
    assert fit_power([1.0, 2.0, 2.0], [0.0, 3.0, 4.0]) is None


def test_invalid_x_is_none_and_shapes_must_match() -> None:
    assert fit_power([0.0, 1.0, 2.0], [1.0, 2.0, 3.0]) is None
    assert fit_power([-1.0, 1.0, 2.0], [1.0, 2.0, 3.0]) is None
    assert fit_power([float("nan"), 1.0, 2.0], [1.0, 2.0, 3.0]) is None
    assert fit_power([float("inf"), 1.0, 2.0], [1.0, 2.0, 3.0]) is None
    with pytest.raises(ValueError):
        fit_power([1.0, 2.0], [1.0])


def test_two_samples_have_no_interval() -> None:
    fit = fit_power([2.0, 8.0], [4.0, 64.0])
    assert fit is not None
    assert fit.exponent == pytest.approx(2.0, abs=1e-12)
    assert fit.interval is None and fit.residual_se is None and fit.dof == 0
    value, lo, hi = project(fit, 4.0)
    assert value == pytest.approx(16.0, rel=1e-12)
    assert lo is None and hi is None
    assert describe(fit, "L") == "L^2.0"


def test_non_positive_y_dropped() -> None:
    x = [1.0, 2.0, 2.0, 4.0, 8.0, 16.0]
    y = [3.0, 12.0, 0.0, 48.0, float("nan"), -5.0]
    fit = fit_power(x, y)
    assert fit is not None
    assert fit.samples == 3 and fit.dropped == 3 and fit.distinct_x == 3
    assert fit.exponent == pytest.approx(2.0, abs=1e-9)
    assert fit.x_max == 4.0


def test_project_at_sample_point_of_exact_fit_equals_data() -> None:
    x = np.array([16.0, 32.0, 64.0, 128.0, 256.0])
    y = 7e-3 * x**2.5
    fit = fit_power(x, y)
    assert fit is not None
    for xi, yi in zip(x, y):
        value, lo, hi = project(fit, float(xi))
        assert value == pytest.approx(yi, rel=1e-9)
        assert lo is not None and hi is not None
        assert lo == pytest.approx(yi, rel=1e-6) and hi == pytest.approx(yi, rel=1e-6)
    with pytest.raises(ValueError):
        project(fit, 0.0)


def test_prediction_interval_widens_away_from_data() -> None:
    rng = np.random.default_rng(3)
    x = np.repeat([10.0, 20.0, 40.0, 80.0], 3)
    fit = fit_power(x, x * np.exp(rng.normal(0, 0.1, x.size)))
    assert fit is not None
    widths = []
    for at in (28.0, 80.0, 1000.0, 1e5):
        value, lo, hi = project(fit, at)
        assert lo is not None and hi is not None and lo < value < hi
        widths.append(math.log(hi / lo))
    assert widths == sorted(widths)


def test_constant_y_has_no_r2() -> None:
    fit = fit_power([1.0, 2.0, 4.0, 8.0], [5.0, 5.0, 5.0, 5.0])
    assert fit is not None
    assert fit.exponent == pytest.approx(0.0, abs=1e-12)
    assert fit.r2 is None
    assert fit.interval is not None and fit.interval[0] == pytest.approx(0.0, abs=1e-9)
    assert describe(fit, "L") == "L^0.0 [0.0, 0.0]"


def test_describe() -> None:
    good = PowerFit(
        exponent=1.93, coefficient=1.0, log_coefficient=0.0, interval=(1.71, 2.12), r2=0.99,
        samples=9, distinct_x=3, dropped=0, dof=7, residual_se=0.1, log_x_mean=0.0, sxx=1.0,
        x_min=1.0, x_max=4.0,
    )  # fmt: skip
    assert describe(good, "L") == "L^1.9 [1.7, 2.1]"
    poor = msgspec.structs.replace(good, r2=0.6234)
    assert describe(poor, "seq") == "seq^1.9 [1.7, 2.1] (poor fit, r² 0.62)"
    assert describe(msgspec.structs.replace(good, interval=None), "B") == "B^1.9"


def test_fit_is_msgspec_encodable() -> None:
    fit = fit_power([1.0, 2.0, 4.0], [1.0, 2.1, 3.9])
    assert fit is not None
    back = msgspec.json.decode(msgspec.json.encode(fit), type=PowerFit)
    assert back == fit
