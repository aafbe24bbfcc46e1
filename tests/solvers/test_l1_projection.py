"""The L1 proximal operator (soft thresholding, optionally on the non-negative orthant)."""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from sklearn_struct.solvers.l1_projection import clip_nonnegative, prox_l1


def reference_prox(v, threshold, nonnegative):
    """Coordinate by coordinate (the problem separates), by bounded scalar minimisation."""
    out = np.empty_like(v)
    for k, (value, positive) in enumerate(zip(v, nonnegative)):
        span = abs(value) + 1.0
        lower = 0.0 if positive else -span
        result = minimize_scalar(lambda z: 0.5 * (z - value) ** 2 + threshold * abs(z),
                                 bounds=(lower, span), method="bounded",
                                 options={"xatol": 1e-12})
        out[k] = result.x
    return out


@pytest.mark.parametrize("n", [1, 2, 7, 50])
@pytest.mark.parametrize("threshold", [0.0, 1e-3, 0.5, 3.0])
def test_prox_matches_scalar_minimisation(n, threshold):
    rng = np.random.RandomState(n)
    v = rng.standard_normal(n) * rng.choice([0.01, 1.0, 10.0], size=n)
    nonnegative = rng.rand(n) < 0.3
    w = prox_l1(v, threshold, nonnegative)
    np.testing.assert_allclose(w, reference_prox(v, threshold, nonnegative), atol=1e-8)
    assert np.all(w[nonnegative] >= 0.0)


def test_exact_zeros_and_input_not_modified():
    v = np.array([3.0, -1.0, 0.2, -0.5])
    before = v.copy()
    w = prox_l1(v, 0.5)
    np.testing.assert_array_equal(w, [2.5, -0.5, 0.0, 0.0])
    np.testing.assert_array_equal(v, before)
    np.testing.assert_array_equal(prox_l1(v, 0.5, np.array([False, True, False, False])),
                                  [2.5, 0.0, 0.0, 0.0])


def test_bad_arguments():
    with pytest.raises(ValueError, match="threshold must be >= 0"):
        prox_l1(np.ones(3), -1.0)
    with pytest.raises(ValueError, match="1-D"):
        prox_l1(np.ones((2, 2)), 1.0)
    with pytest.raises(ValueError, match="NaN"):
        prox_l1(np.array([1.0, np.nan]), 1.0)
    with pytest.raises(ValueError, match="boolean mask of shape"):
        prox_l1(np.ones(3), 1.0, np.ones(2, dtype=bool))


def test_clip_nonnegative():
    w = np.array([-1.0, -2.0, 3.0])
    np.testing.assert_array_equal(clip_nonnegative(w, np.array([True, False, True])),
                                  [0.0, -2.0, 3.0])
    assert clip_nonnegative(w, None) is w
