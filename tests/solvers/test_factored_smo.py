"""The factored SMO / online EG of benchmarks/_factored_smo.py against generic references.

The reference optimum is the max-margin dual written out over every labelling of
tiny chains and solved by clarabel's interior point; the package's working-set
solver must agree on the weights.
"""

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_struct.eg import EGStructuredSVM
from sklearn_struct.structures import ChainStructure

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _factored_smo import ChainDual  # noqa: E402


def tiny_problem(seed, n=6, K=3, n_features=4, max_len=4):
    rng = np.random.RandomState(seed)
    X = [sp.csr_matrix((rng.rand(T, n_features) < 0.6) * rng.randn(T, n_features))
         for T in rng.randint(1, max_len + 1, size=n)]
    Y = [rng.randint(0, K, size=x.shape[0]) for x in X]
    return X, Y, K


def joint_features(x, y, K):
    """``phi(x, y)`` in ``ChainStructure(start_end=False)``'s weight layout."""
    W, transition = np.zeros((K, x.shape[1])), np.zeros((K, K))
    dense = x.toarray()
    for t, label in enumerate(y):
        W[label] += dense[t]
        if t:
            transition[y[t - 1], label] += 1.0
    return np.concatenate([W.ravel(), transition.ravel()])


def enumerated_dual_optimum(X, Y, K, C):
    """``max_alpha C sum alpha L - 1/2 ||w(alpha)||^2`` over every labelling, by clarabel."""
    import clarabel

    columns, losses, owners = [], [], []
    for i, (x, y) in enumerate(zip(X, Y)):
        truth = joint_features(x, y, K)
        for labels in itertools.product(range(K), repeat=len(y)):
            columns.append(C * (truth - joint_features(x, labels, K)))
            losses.append(C * np.sum(np.asarray(labels) != y))
            owners.append(i)
    D = np.array(columns).T
    P = sp.csc_matrix(np.triu(D.T @ D))
    m = D.shape[1]
    equality = sp.csr_matrix((np.ones(m), (owners, np.arange(m))), shape=(len(X), m))
    A = sp.vstack([equality, -sp.identity(m)]).tocsc()
    b = np.r_[np.ones(len(X)), np.zeros(m)]
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = 1e-12
    solver = clarabel.DefaultSolver(P, -np.asarray(losses), A, b,
                                    [clarabel.ZeroConeT(len(X)), clarabel.NonnegativeConeT(m)],
                                    settings)
    solution = solver.solve()
    assert str(solution.status) == "Solved"
    alpha = np.asarray(solution.x)
    return -solution.obj_val, D @ alpha


def check_consistent(dual):
    """Marginals non-negative, node marginals sum to 1, edges sum to their nodes."""
    assert dual.mu_node.min() >= -1e-12 and dual.mu_edge.min() >= -1e-12
    np.testing.assert_allclose(dual.mu_node.sum(axis=1), 1.0, atol=1e-10)
    inner = np.setdiff1d(np.arange(len(dual.Y)), dual.last)
    np.testing.assert_allclose(dual.mu_edge[inner].sum(axis=2), dual.mu_node[inner], atol=1e-10)
    np.testing.assert_allclose(dual.mu_edge[inner].sum(axis=1), dual.mu_node[inner + 1],
                               atol=1e-10)


@pytest.mark.parametrize("seed, C", [(0, 1.0), (1, 0.1), (2, 10.0)])
def test_smo_reaches_the_enumerated_qp_optimum(seed, C):
    X, Y, K = tiny_problem(seed)
    optimum, w_opt = enumerated_dual_optimum(X, Y, K, C)
    dual = ChainDual(X, Y, K, C)
    rng = np.random.RandomState(0)
    previous = dual.dual()
    for _ in range(3000):
        dual.smo_pass(rng.permutation(len(X)))
        current = dual.dual()
        assert current >= previous - 1e-12 * max(1.0, abs(previous))  # exact line searches
        previous = current
    check_consistent(dual)
    assert dual.dual() == pytest.approx(optimum, rel=1e-7)
    # the primal at w(mu) converges like the square root of the dual's error
    assert dual.primal() == pytest.approx(optimum, rel=1e-4)
    # 1/2 ||w - w*||^2 <= P(w) - P(w*) <= P(w) - D(mu): the gap bounds the weights' error
    radius = np.sqrt(2.0 * max(dual.primal() - dual.dual(), 0.0)) + 1e-9
    assert np.linalg.norm(dual.weights() - w_opt) <= radius
    reference = EGStructuredSVM(C=C, structure=ChainStructure(start_end=False),
                                solver="working_set", tol=1e-10, max_iter=2000).fit(X, Y)
    assert np.linalg.norm(reference.weights_ - w_opt) <= np.sqrt(
        2.0 * max(reference.duality_gap_, 0.0)) + 1e-9


def test_smo_moves_mass_between_two_labellings():
    """The first step from the truth moves ``min(gain / (C q), 1)`` to the loss-augmented
    argmax (at ``w = 0``: the labelling that is wrong everywhere)."""
    x = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 2.0]]))
    for C, step in ((1.0, 1.0 / 6.0), (0.1, 1.0)):
        dual = ChainDual([x], [np.array([0, 1])], 2, C)
        assert dual.smo_pass(np.array([0])) == 1
        # y = (1, 0): gain L = 2; phi(y) - phi(y_i) has node part ||x_1 - x_0||^2 per
        # label (2 * 5) and transition part 2: q = 12, step min(2 / (12 C), 1)
        np.testing.assert_allclose(dual.mu_node, [[1 - step, step], [step, 1 - step]])
        assert dual.dual() == pytest.approx(C * 2 * step - 0.5 * C * C * 12 * step ** 2)
        np.testing.assert_allclose(dual.weights(), C * step * np.r_[
            1.0, -2.0, -1.0, 2.0, 0.0, 1.0, -1.0, 0.0])


@pytest.mark.parametrize("seed", [3, 4])
def test_eg_and_the_hybrid_reach_the_same_optimum(seed):
    X, Y, K = tiny_problem(seed)
    C = 1.0
    optimum, _ = enumerated_dual_optimum(X, Y, K, C)
    rng = np.random.RandomState(0)
    eg = ChainDual(X, Y, K, C)
    eg.start_eg(np.zeros_like(eg.mu_node), np.zeros_like(eg.mu_edge), 0.5)
    for _ in range(3000):
        eg.eg_pass(rng.permutation(len(X)), adaptive=True)
    check_consistent(eg)
    assert eg.dual() == pytest.approx(optimum, rel=1e-5)

    hybrid = ChainDual(X, Y, K, C)
    for _ in range(3):
        hybrid.smo_pass(rng.permutation(len(X)))
    mu_node, mu_edge = hybrid.mu_node.copy(), hybrid.mu_edge.copy()
    floor = 1e-3
    hybrid.start_eg(*hybrid.theta_from_marginals(floor), 0.5)
    # the conditional-probability parameters reproduce the (mixed) marginals exactly
    np.testing.assert_allclose(hybrid.mu_node, (1 - floor) * mu_node + floor / K, atol=1e-12)
    inner = np.setdiff1d(np.arange(len(hybrid.Y)), hybrid.last)
    np.testing.assert_allclose(hybrid.mu_edge[inner],
                               (1 - floor) * mu_edge[inner] + floor / K ** 2, atol=1e-12)
    for _ in range(3000):
        hybrid.eg_pass(rng.permutation(len(X)), adaptive=True)
    assert hybrid.dual() == pytest.approx(optimum, rel=1e-5)
