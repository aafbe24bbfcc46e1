import itertools

import numpy as np
import pytest
from scipy.optimize import brentq, minimize

from sklearn_struct.solvers.l1_projection import l1_ball_threshold, project_l1_ball

from _qp_reference import qp_project


def reference_projection(v, radius):
    """Projection via root finding on the threshold: sum(max(|v| - t, 0)) = radius."""
    if np.abs(v).sum() <= radius:
        return v.copy()
    theta = brentq(
        lambda t: np.maximum(np.abs(v) - t, 0).sum() - radius, 0.0, np.abs(v).max(), xtol=1e-14
    )
    return np.sign(v) * np.maximum(np.abs(v) - theta, 0)


@pytest.mark.parametrize("n", [1, 2, 7, 50, 1000])
@pytest.mark.parametrize("radius", [1e-3, 0.5, 3.0, 1e3])
def test_projection_matches_root_finding(n, radius):
    rng = np.random.RandomState(n)
    v = rng.standard_normal(n) * rng.choice([0.01, 1.0, 10.0], size=n)
    w = project_l1_ball(v, radius)
    np.testing.assert_allclose(w, reference_projection(v, radius), atol=1e-10)
    assert np.abs(w).sum() <= radius * (1 + 1e-12) + 1e-12


def test_projection_matches_constrained_minimisation():
    rng = np.random.RandomState(0)
    v = rng.standard_normal(6)
    radius = 1.2
    # Split w = p - q, p, q >= 0: a smooth QP that SLSQP solves to high accuracy.
    res = minimize(
        lambda pq: 0.5 * np.sum((pq[:6] - pq[6:] - v) ** 2),
        np.zeros(12),
        jac=lambda pq: np.concatenate([pq[:6] - pq[6:] - v, -(pq[:6] - pq[6:] - v)]),
        bounds=[(0, None)] * 12,
        constraints=[{"type": "ineq", "fun": lambda pq: radius - pq.sum(),
                      "jac": lambda pq: -np.ones(12)}],
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 500},
    )
    np.testing.assert_allclose(project_l1_ball(v, radius), res.x[:6] - res.x[6:], atol=1e-6)


def test_inside_ball_is_unchanged_and_input_not_modified():
    v = np.array([0.1, -0.2, 0.3])
    v_before = v.copy()
    w = project_l1_ball(v, 1.0)
    np.testing.assert_array_equal(w, v)
    assert w is not v
    np.testing.assert_array_equal(v, v_before)
    assert l1_ball_threshold(v, 1.0) == 0.0


def test_exact_zeros_and_ties():
    w = project_l1_ball(np.array([3.0, -1.0, 0.2, 3.0]), 2.0)
    np.testing.assert_array_equal(w, [1.0, 0.0, 0.0, 1.0])
    assert np.count_nonzero(w) == 2


@pytest.mark.parametrize("radius", [0.0, -1.0])
def test_bad_radius(radius):
    with pytest.raises(ValueError, match="radius must be > 0"):
        project_l1_ball(np.ones(3), radius)


def test_bad_vector():
    with pytest.raises(ValueError, match="1-D"):
        project_l1_ball(np.ones((2, 2)), 1.0)
    with pytest.raises(ValueError, match="NaN"):
        project_l1_ball(np.array([1.0, np.nan]), 1.0)


def constrained_projection(v, radius, nonnegative):
    """argmin ||w - v|| over ||w||_1 <= radius, w_j >= 0 on the mask, by a generic QP solver.

    The ball as a polytope: ``s . w <= radius`` for every sign vector ``s``.
    """
    n = v.shape[0]
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=n)))
    A = np.vstack([signs, -np.eye(n)[nonnegative]])
    b = np.r_[np.full(len(signs), radius), np.zeros(nonnegative.sum())]
    return qp_project(v, A, b)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("radius", [0.3, 1.5, 50.0])
def test_projection_with_nonnegative_coordinates_matches_qp(seed, radius):
    pytest.importorskip("clarabel")
    rng = np.random.RandomState(seed)
    n = rng.randint(2, 9)
    v = 2.0 * rng.standard_normal(n)
    nonnegative = rng.rand(n) < 0.5
    w = project_l1_ball(v, radius, nonnegative=nonnegative)
    np.testing.assert_allclose(w, constrained_projection(v, radius, nonnegative), atol=1e-7)
    assert w[nonnegative].min(initial=0.0) >= 0.0
    assert np.abs(w).sum() <= radius * (1 + 1e-12)
    # no mask (or an empty one) is the plain ball projection
    np.testing.assert_array_equal(project_l1_ball(v, radius, nonnegative=np.zeros(n, bool)),
                                  project_l1_ball(v, radius))


def test_nonnegative_mask_is_checked():
    with pytest.raises(ValueError, match="boolean mask of shape"):
        project_l1_ball(np.ones(3), 1.0, nonnegative=np.ones(2, dtype=bool))
    with pytest.raises(ValueError, match="boolean mask of shape"):
        project_l1_ball(np.ones(3), 1.0, nonnegative=[1, 0, 1])
