"""OWL-QN on CRFsuite's elastic-net log loss, against a generic solver on enumerated outputs."""

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import logsumexp

from sklearn_struct.solvers.elastic_net import elastic_net_solve
from sklearn_struct.solvers.loss import StructuredLoss
from sklearn_struct.structures import ChainStructure


def _chains(n=8, n_features=4, n_states=3, seed=0):
    rng = np.random.RandomState(seed)
    X, y = [], []
    for _ in range(n):
        T = rng.randint(1, 4)
        labels = rng.randint(0, n_states, T)
        x = rng.randn(T, n_features)
        x[np.arange(T), labels] += 1.5
        X.append(x)
        y.append(labels)
    return X, y


def _problem(sample_weight=None, seed=0):
    X, y = _chains(seed=seed)
    structure = ChainStructure(start_end=False)
    batch = structure.make_batch(X, n_states=3)
    loss = StructuredLoss(structure, batch, np.concatenate(y), kind="log",
                          sample_weight=sample_weight)
    return structure, X, y, loss


def _enumerated(structure, X, y, sample_weight):
    """Every example's joint feature vectors of all its labellings, and of its truth."""
    examples = []
    for x, labels in zip(X, y):
        batch = structure.make_batch([x], n_states=3)
        outputs = [np.array(o) for o in itertools.product(range(3), repeat=len(x))]
        phi = np.array([structure.expected_features(batch, structure.encode(batch, o))
                        for o in outputs])
        examples.append((phi, structure.expected_features(batch, structure.encode(batch,
                                                                                  labels))))
    return examples


def _reference(examples, sample_weight, c1, c2):
    """P(w) minimised by L-BFGS-B over w = u - v, u, v >= 0 (independent of the package's
    inference: the log-partitions are sums over the enumerated labellings)."""
    n = examples[0][0].shape[1]

    def objective(uv):
        w = uv[:n] - uv[n:]
        value, gradient = c2 * w @ w + c1 * uv.sum(), 2 * c2 * w
        for (phi, truth), s in zip(examples, sample_weight):
            scores = phi @ w
            log_z = logsumexp(scores)
            p = np.exp(scores - log_z)
            value += s * (log_z - truth @ w)
            gradient = gradient + s * (p @ phi - truth)
        return value, np.concatenate([gradient + c1, -gradient + c1])

    result = minimize(objective, np.zeros(2 * n), jac=True, method="L-BFGS-B",
                      bounds=[(0, None)] * (2 * n),
                      options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 20000})
    return result.x[:n] - result.x[n:], result.fun


@pytest.mark.parametrize("c1, c2", [(0.1, 0.1), (1.0, 0.01), (0.0, 0.5), (0.3, 1.0)])
@pytest.mark.parametrize("weighted", [False, True])
def test_reaches_the_optimum_of_a_generic_solver(c1, c2, weighted):
    rng = np.random.RandomState(1)
    sample_weight = rng.uniform(0.5, 2.0, 8) if weighted else np.ones(8)
    structure, X, y, loss = _problem(sample_weight if weighted else None)
    w_ref, p_ref = _reference(_enumerated(structure, X, y, sample_weight), sample_weight,
                              c1, c2)
    result = elastic_net_solve(loss, c1, c2, tol=1e-10, delta=None, max_iter=500)
    assert result.converged
    assert result.primal <= p_ref + 1e-9 * abs(p_ref)
    # P is 2 c2-strongly convex: each point is within sqrt(its excess / c2) of the optimum,
    # ours by its gap, the reference's by its value above our dual bound
    lower = result.primal - result.gap
    radius = np.sqrt(result.gap / c2) + np.sqrt(max(p_ref - lower, 0.0) / c2)
    assert np.linalg.norm(result.w - w_ref) <= radius + 1e-12
    # exact zeros where the optimum has them (the reference's are only near 0)
    np.testing.assert_array_equal(result.w == 0, np.abs(w_ref) < 1e-4)
    assert (result.w == 0).any() == (c1 > 0)


def test_the_gap_bounds_the_distance_to_the_optimum_at_every_iteration():
    structure, X, y, loss = _problem()
    c1, c2 = 0.2, 0.05
    _, p_ref = _reference(_enumerated(structure, X, y, np.ones(8)), np.ones(8), c1, c2)
    result = elastic_net_solve(loss, c1, c2, tol=1e-9, delta=None, max_iter=300)
    primal, gap = np.array(result.history["primal"]), np.array(result.history["gap"])
    assert np.all(primal - p_ref <= gap + 1e-10)
    assert np.all(np.diff(primal) <= 1e-12)  # the line search only accepts decreases
    assert gap[-1] <= 1e-9 * abs(primal[-1]) and gap[0] > 1e-3


def test_without_l2_nothing_is_certified_and_max_iter_stops_it():
    _, _, _, loss = _problem()
    result = elastic_net_solve(loss, 0.1, 0.0, tol=1e-4, delta=None, max_iter=15)
    assert np.isnan(result.gap) and not result.converged and result.n_iter == 15


def test_a_warm_start_at_the_optimum_stops_at_once():
    _, _, _, loss = _problem()
    first = elastic_net_solve(loss, 0.1, 0.1, tol=1e-9, delta=None, max_iter=500)
    again = elastic_net_solve(loss, 0.1, 0.1, tol=1e-6, w0=first.w)
    assert again.n_iter == 0 and again.converged
    np.testing.assert_array_equal(again.w, first.w)


def test_refusals():
    structure, X, y, _ = _problem()
    batch = structure.make_batch(X, n_states=3)
    hinge = StructuredLoss(structure, batch, np.concatenate(y), kind="hinge")
    with pytest.raises(ValueError, match="minimises the log loss"):
        elastic_net_solve(hinge, 0.1, 0.1)


def test_crfsuite_s_rule_stops_when_the_objective_stops_falling():
    _, _, _, loss = _problem()
    result = elastic_net_solve(loss, 0.1, 0.0, tol=0.0, delta=1e-3, max_iter=500)
    primal = result.history["primal"]
    assert result.converged and result.n_iter < 500
    assert primal[-11] - primal[-1] <= 1e-3 * abs(primal[-1])  # over the last 10
    assert primal[-12] - primal[-2] > 1e-3 * abs(primal[-2])  # and not one earlier


@pytest.mark.parametrize("c1", [0.0, 0.2])
def test_a_support_solves_the_restricted_problem(c1):
    # CRFsuite's weights without possible_states: the others held at 0, the gap that of
    # the problem over the support alone
    structure, X, y, loss = _problem()
    support = np.random.RandomState(3).rand(loss.n_weights) < 0.6
    examples = [(phi[:, support], truth[support])
                for phi, truth in _enumerated(structure, X, y, np.ones(8))]
    w_ref, p_ref = _reference(examples, np.ones(8), c1, 0.1)
    result = elastic_net_solve(loss, c1, 0.1, tol=1e-10, delta=None, max_iter=500,
                               support=support)
    assert result.converged and np.all(result.w[~support] == 0)
    assert result.primal - p_ref <= result.gap + 1e-10
    np.testing.assert_allclose(result.w[support], w_ref, atol=1e-4)
    free = elastic_net_solve(loss, c1, 0.1, tol=1e-10, delta=None, max_iter=500)
    assert free.primal < result.primal - 1e-3  # the control: the support matters
    with pytest.raises(ValueError, match="support has shape"):
        elastic_net_solve(loss, c1, 0.1, support=support[1:])
