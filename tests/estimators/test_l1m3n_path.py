"""The regularisation path of the L1M3N: l1m3n_min_C and the warm-started l1m3n_path."""

import numpy as np
import pytest
from _qp_reference import multiclass_l1_lp
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import L1M3N, l1m3n_min_C, l1m3n_path
from sklearn_struct.datasets import make_correlated_chains


def binary_problem(seed=0, n=50, d=6):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, d))
    y = (X[:, 0] - 0.7 * X[:, 1] + 0.3 * rng.standard_normal(n) > 0).astype(int)
    return X, y


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_min_C_is_the_exact_threshold_of_a_binary_problem(scale):
    # two labels: the most violated output at w = 0 is unique, so the subgradient
    # there is the whole subdifferential and 1 / ||g||_inf is exact
    X, y = binary_problem()
    X = scale * X
    C_min = l1m3n_min_C(L1M3N(), X, y)
    assert C_min * scale == pytest.approx(l1m3n_min_C(L1M3N(), X / scale, y))
    value, w = multiclass_l1_lp(X, y, C_min)
    assert np.abs(w).max() <= 1e-9 * np.abs(w).sum() + 1e-12
    assert value == pytest.approx(C_min * len(y))  # every hinge is 1 at w = 0
    _, w_above = multiclass_l1_lp(X, y, 1.05 * C_min)
    assert np.abs(w_above).sum() > 0.0


def test_min_C_of_chains_gives_zero_weights():
    X, y = make_correlated_chains(n_samples=20, random_state=0)
    C_min = l1m3n_min_C(L1M3N(), X, y)
    assert not L1M3N(C=C_min).fit(X, y).weights_.any()
    assert L1M3N(C=3 * C_min).fit(X, y).weights_.any()


def test_path_on_synthetic_chains_is_monotone_in_sparsity():
    X, y = make_correlated_chains(n_samples=140, random_state=0)
    path = l1m3n_path(L1M3N(), X[:40], y[:40], n_Cs=6, C_ratio=30.0, X_val=X[40:],
                      y_val=y[40:])
    C_min = l1m3n_min_C(L1M3N(), X[:40], y[:40])
    np.testing.assert_allclose(path["C"], np.geomspace(C_min, 30 * C_min, 6))
    assert path["n_nonzero"][0] == 0 and path["n_selected"][0] == 0
    assert np.all(np.diff(path["n_selected"]) >= 0)
    assert path["n_selected"][-1] > 0
    assert path["converged"].all()
    assert path["coefs"].shape == (6, path["estimator"].weights_.size)
    np.testing.assert_array_equal(path["coefs"][-1], path["estimator"].weights_)
    assert not path["estimator"].warm_start
    # the first features to enter are relevant ones (the first 30 of 100; measured:
    # 2 and 5 relevant, then 9 relevant and 13 irrelevant as C grows)
    for coef in path["coefs"][1:3]:
        used = np.any(coef[:200].reshape(2, 100) != 0.0, axis=0)  # state weights
        assert used.any() and not used[30:].any()
    # held-out accuracy rises from the empty model (measured 0.50 -> 0.77)
    assert path["validation_score"].max() > path["validation_score"][0] + 0.2


@pytest.mark.parametrize("solver", ["cutting_plane", "subgradient", "em"])
def test_warm_started_path_gives_the_cold_fits(solver):
    X, y = binary_problem()
    C_min = l1m3n_min_C(L1M3N(), X, y)
    Cs = [2 * C_min, 4 * C_min, 8 * C_min]
    template = L1M3N(solver=solver, tol=1e-4 if solver == "cutting_plane" else 1e-3,
                     epsilon=1e-8, max_iter=3000 if solver == "subgradient" else None)
    path = l1m3n_path(template, X, y, Cs)
    for C, objective in zip(Cs, path["objective"]):
        best = multiclass_l1_lp(X, y, C)[0]
        cold = L1M3N(**{**template.get_params(), "C": C}).fit(X, y)
        # both within the solver's certified tolerance of the optimum
        bound = best * (1 + 1e-3) / (1 - 1e-3)
        assert best * (1 - 1e-9) <= objective <= bound
        assert best * (1 - 1e-9) <= cold.objective_ <= bound
    assert path["converged"].all()


def test_unconverged_path_points_warn_and_are_flagged():
    X, y = binary_problem()
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        path = l1m3n_path(L1M3N(solver="subgradient", max_iter=2), X, y, n_Cs=3)
    assert path["converged"][0]  # w = 0 is certified at once
    assert not path["converged"][-1]


def test_path_errors():
    X, y = binary_problem()
    with pytest.raises(ValueError, match="Cs holds no value"):
        l1m3n_path(L1M3N(), X, y, Cs=[])
    with pytest.raises(ValueError, match="n_Cs must be an integer >= 1"):
        l1m3n_path(L1M3N(), X, y, n_Cs=0)
    with pytest.raises(ValueError, match="C_ratio must be a number > 1"):
        l1m3n_path(L1M3N(), X, y, C_ratio=1.0)
    with pytest.raises(TypeError, match="scoring must be a callable"):
        l1m3n_path(L1M3N(), X, y, Cs=[1.0], X_val=X, y_val=y, scoring="accuracy")
