"""The online EG's dual state in float32 against float64, and the compact observed features.

A float32 state stores ``theta`` and ``mu`` rounded; the epoch works on the stored values
(``_eg_kernels._stored``), so that ``w`` is exactly ``w(alpha)`` of the stored marginals
and the reported gap certifies the fit.  These tests hold a float32 fit to the float64
fit's optimum, its gap to the float64 optimum's objective, and its ``w`` to the one rebuilt
from its stored marginals.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_struct.solvers import _eg_dual
from sklearn_struct.solvers.eg import FLOAT32_MIN_TOL, eg_solve
from sklearn_struct.solvers.loss import StructuredLoss
from sklearn_struct.structures import ChainStructure, MulticlassStructure


def _chain_problem(seed=0, n=40, K=4, d=30, start_end=True, density=0.2):
    rng = np.random.RandomState(seed)
    X, Y = [], []
    for _ in range(n):
        T = rng.randint(2, 9)
        X.append(sp.random(T, d, density=density, random_state=rng, format="csr") * 3.0)
        Y.append(rng.randint(K, size=T))
    structure = ChainStructure(start_end=start_end)
    batch = structure.make_batch(X, n_states=K)
    return structure, batch, np.concatenate(Y)


def _fit(structure, batch, Y, dtype, tol=1e-10, max_iter=400, C=2.0, **kwargs):
    return eg_solve(structure, batch, Y, loss="log", C=C, tol=tol, max_iter=max_iter,
                    random_state=np.random.RandomState(0), dual_dtype=dtype, **kwargs)


@pytest.mark.parametrize("order", ["gap", "shuffle"])
def test_float32_state_reaches_the_float64_optimum(order):
    structure, batch, Y = _chain_problem()
    r64 = _fit(structure, batch, Y, np.float64, order=order)
    r32 = _fit(structure, batch, Y, np.float32, order=order)
    assert r64.converged and r32.converged
    assert r32.state.theta.dtype == np.float32 and r32.state.mu.dtype == np.float32
    assert r64.state.theta.dtype == np.float64
    p64, p32 = r64.history["primal"][-1], r32.history["primal"][-1]
    gap64, gap32 = r64.history["gap"][-1], r32.history["gap"][-1]
    assert 0 <= gap32 <= 1e-10 * abs(p32)
    # the same optimum: the primal is 1-strongly convex, so a w within gap of the optimum's
    # objective is within sqrt(2 gap) of it; both fits' weights are, and their objectives
    # agree to their gaps (each one's dual bounds the other's primal from below)
    distance = np.linalg.norm(r32.state.w - r64.state.w)
    assert distance <= np.sqrt(2 * gap32) + np.sqrt(2 * gap64)
    assert distance <= 1e-4 * np.linalg.norm(r64.state.w)
    d64, d32 = r64.history["dual"][-1], r32.history["dual"][-1]
    assert p32 - d64 <= gap32 + gap64 + 1e-13 * abs(p64)
    assert p64 - d32 <= gap32 + gap64 + 1e-13 * abs(p64)


def test_float32_weights_are_those_of_the_stored_marginals():
    """No drift: after the passes, ``w`` equals ``w(alpha)`` rebuilt from the stored mu,
    and the dual terms are those of the stored theta and mu."""
    structure, batch, Y = _chain_problem(seed=1, start_end=False)
    result = _fit(structure, batch, Y, np.float32, tol=0, max_iter=15, order="shuffle",
                  annealing=False)
    state = result.state
    datafit = StructuredLoss(structure, batch, Y, "log")
    rebuilt = _eg_dual.dual_weights(datafit, state.mu.astype(np.float64), state.C)
    assert np.abs(rebuilt - state.w).max() <= 1e-12 * max(1.0, np.abs(state.w).max())
    theta = state.theta.astype(np.float64)
    mu, log_z = structure.marginals(batch, theta)
    # the stored marginals are those of the stored theta, rounded
    np.testing.assert_array_equal(mu.astype(np.float32), state.mu)
    terms = _eg_dual.dual_terms("log", state.mu.astype(np.float64), log_z, theta, None,
                                batch.part_offsets)
    np.testing.assert_allclose(state.terms, terms, rtol=0, atol=1e-9)


def test_float32_multiclass_matches_float64():
    rng = np.random.RandomState(3)
    X = rng.randn(200, 6)
    y = rng.randint(3, size=200)
    structure = MulticlassStructure()
    batch = structure.make_batch(X, n_states=3)
    r64 = _fit(structure, batch, y, np.float64, C=0.5)
    r32 = _fit(structure, batch, y, np.float32, C=0.5)
    assert r64.converged and r32.converged
    # (within the distance the two gaps allow, as for the chains above)
    gaps = r32.history["gap"][-1], r64.history["gap"][-1]
    distance = np.linalg.norm(r32.state.w - r64.state.w)
    assert distance <= sum(np.sqrt(2 * gap) for gap in gaps)
    assert distance <= 1e-4 * np.linalg.norm(r64.state.w)


def test_default_dual_dtype():
    """float32 for the online log loss at a tol it can certify; float64 otherwise."""
    structure, batch, Y = _chain_problem(n=6)
    dtypes = {}
    for name, loss, solver, tol in (("log", "log", "online", FLOAT32_MIN_TOL),
                                    ("default tol", "log", "online", 1e-4),
                                    ("tight", "log", "online", FLOAT32_MIN_TOL / 2),
                                    ("curve", "log", "online", 0),
                                    ("hinge", "hinge", "online", 1e-3),
                                    ("batch", "log", "batch", 1e-3)):
        result = eg_solve(structure, batch, Y, loss=loss, solver=solver, max_iter=1, tol=tol,
                          random_state=np.random.RandomState(0))
        dtypes[name] = result.state.theta.dtype
    assert dtypes == {"log": np.float32, "default tol": np.float32, "tight": np.float64,
                      "curve": np.float64, "hinge": np.float64, "batch": np.float64}


@pytest.mark.parametrize("dtype, solver, error", [
    (np.float16, "online", "dual_dtype must be numpy.float64 or numpy.float32"),
    ("complex", "online", "dual_dtype must be numpy.float64 or numpy.float32"),
    (object(), "online", "dual_dtype must be numpy.float64 or numpy.float32"),
    (np.float32, "batch", "needs solver='online'"),
])
def test_bad_dual_dtype(dtype, solver, error):
    structure, batch, Y = _chain_problem(n=4)
    with pytest.raises(ValueError, match=error):
        eg_solve(structure, batch, Y, loss="log", solver=solver, dual_dtype=dtype)


def test_compact_observed_features():
    """The observed features kept as their non-zero entries give the dense vector and
    ``C * (observed - expected)`` bit for bit."""
    structure, batch, Y = _chain_problem(seed=2, n=30, K=5, d=2000, density=0.005)
    weights = np.random.RandomState(0).rand(batch.n_samples)
    datafit = StructuredLoss(structure, batch, Y, "log", sample_weight=weights)
    assert datafit.observed_support is not None
    dense = structure.expected_features(batch, structure.encode(batch, Y), weights)
    np.testing.assert_array_equal(datafit.observed, dense)
    expected = np.random.RandomState(1).randn(batch.n_weights)
    np.testing.assert_array_equal(datafit.weights_from(expected, 0.7), 0.7 * (dense - expected))
    # dense observed features (every weight seen) are kept whole
    X = np.random.RandomState(2).randn(50, 3)
    flat = MulticlassStructure()
    y = np.arange(50) % 2
    whole = StructuredLoss(flat, flat.make_batch(X, n_states=2), y, "log")
    assert whole.observed_support is None
    np.testing.assert_array_equal(whole.weights_from(expected[:6], 2.0),
                                  2.0 * (whole.observed - expected[:6]))


@pytest.mark.parametrize("near_truth", [False, True])
def test_float32_start_block_by_block(monkeypatch, near_truth):
    """The float32 start made a block of examples at a time is the float64 start rounded:
    the marginals of the (rounded) theta, rounded, and their dual terms."""
    structure, batch, Y = _chain_problem(seed=4, n=25)
    weights = np.random.RandomState(5).rand(batch.n_samples)
    datafit = StructuredLoss(structure, batch, Y, "log", sample_weight=weights)
    monkeypatch.setattr(_eg_dual, "NARROW_START_BLOCK_PARTS", 150)
    state = _eg_dual.initial_state(datafit, 0.5, near_truth=near_truth, dtype=np.float32)
    whole = _eg_dual.initial_state(datafit, 0.5, near_truth=near_truth)
    assert state.theta.dtype == np.float32 and state.mu.dtype == np.float32
    np.testing.assert_array_equal(state.theta, whole.theta.astype(np.float32))
    mu, log_z = structure.marginals(batch, state.theta.astype(np.float64))
    np.testing.assert_array_equal(state.mu, mu.astype(np.float32))
    terms = _eg_dual.dual_terms("log", state.mu.astype(np.float64), log_z,
                                state.theta.astype(np.float64), None, batch.part_offsets)
    np.testing.assert_allclose(state.terms, terms, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(state.part_offsets, batch.part_offsets)
    assert state.eta == 0.5 and np.all(state.etas == 0.5)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", ["log", "hinge"])
def test_the_truth_start_is_the_targets_point_masses(monkeypatch, kind, dtype):
    """``truth_state``, made a block of examples at a time: the marginals are the targets'
    encodings, the dual terms a point mass's (no entropy; the hinge's expected loss of the
    target), theta the near-truth start's, and no inference runs; the fit's start from it
    has ``w = 0`` exactly, also for the smoothed hinge, whose entropies stay 0."""
    structure, batch, Y = _chain_problem(seed=4, n=25)
    datafit = StructuredLoss(structure, batch, Y, kind,
                             sample_weight=np.random.RandomState(5).rand(batch.n_samples))
    truth = structure.encode(batch, Y)

    def no_inference(*args):
        raise AssertionError("the truth's start runs no inference")

    monkeypatch.setattr(_eg_dual, "NARROW_START_BLOCK_PARTS", 150)
    monkeypatch.setattr(type(structure), "marginals", no_inference)
    state = _eg_dual.truth_state(datafit, 0.5, dtype=dtype)
    assert state.theta.dtype == dtype and state.mu.dtype == dtype
    np.testing.assert_array_equal(state.mu, truth)
    theta = -_eg_dual.TRUTH_LOGIT * datafit.part_losses
    np.testing.assert_array_equal(state.theta, theta.astype(dtype))
    expected_terms = (datafit.expected_losses(truth) if kind == "hinge"
                      else np.zeros(batch.n_samples))
    np.testing.assert_array_equal(state.terms, expected_terms)
    np.testing.assert_array_equal(state.part_offsets, batch.part_offsets)
    assert state.eta == 0.5 and np.all(state.etas == 0.5)
    result = eg_solve(structure, batch, Y, loss=kind, C=3.0, start="truth", max_iter=1e-9,
                      smoothing=kind == "hinge", tol=0, random_state=np.random.RandomState(0),
                      dual_dtype=dtype, sample_weight=datafit.sample_weight)
    assert result.history["passes"][-1] == pytest.approx(1 / 25)
    # one visit raised the dual from the point masses' (the targets' losses; 0 for the log
    # loss, at w = 0) and changed its example's term alone
    dual_at_truth = 3.0 * float(datafit.sample_weight @ (expected_terms + datafit.loss_offsets))
    assert result.history["dual"][-1] >= dual_at_truth - 1e-12
    assert np.sum(result.state.terms != expected_terms) == 1


def test_observed_features_block_by_block(monkeypatch):
    """Past ``OBSERVED_BLOCK_PARTS`` the observed features are summed over blocks of
    examples: the same vector, and bad targets are refused naming the whole batch's
    sequence."""
    from sklearn_struct.solvers import loss as loss_module

    structure, batch, Y = _chain_problem(seed=6, n=30, K=5, d=2000, density=0.005)
    weights = np.random.RandomState(7).rand(batch.n_samples)
    scale = np.random.RandomState(8).rand(batch.n_weights)
    whole = StructuredLoss(structure, batch, Y, "log", sample_weight=weights,
                           feature_scale=scale)
    monkeypatch.setattr(loss_module, "OBSERVED_BLOCK_PARTS", 200)
    blocked = StructuredLoss(structure, batch, Y, "log", sample_weight=weights,
                             feature_scale=scale)
    np.testing.assert_allclose(blocked.observed, whole.observed, rtol=1e-13, atol=1e-13)
    constrained = ChainStructure(allowed_transitions=np.eye(5, dtype=bool))
    bad = np.repeat(np.arange(batch.n_samples) % 5, batch.lengths)  # one label a sentence
    first = int(batch.unit_offsets[20])
    bad[first:first + 2] = [0, 1]
    with pytest.raises(ValueError, match="sequence 20, position 1"):
        StructuredLoss(constrained, constrained.make_batch(
            [batch.X[batch.unit_offsets[i]:batch.unit_offsets[i + 1]]
             for i in range(batch.n_samples)], n_states=5), bad, "log")
