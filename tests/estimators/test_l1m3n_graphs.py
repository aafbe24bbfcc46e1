"""L1M3N on matchings and min-cuts, against the full LPs P1 / P1' with every output enumerated.

The references never go through the structures' parts code: the joint features
and losses of every output are computed from their definitions on the raw
inputs (sum of the chosen edges' features for a matching; node features of the
nodes labelled 1 and minus the features of the cut edges for a min-cut;
weighted Hamming losses), and the LPs are solved by HiGHS with the min-cut edge
weights constrained non-negative.  (The chain/multiclass reference of
``test_l1m3n_solvers.enumerated_lp`` takes losses as ``z . part_losses``, which
omits the per-example loss constants of these structures, and has no weight
bounds.)
"""

import itertools
from dataclasses import dataclass

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold

from _qp_reference import enumerated_l1_lp

from sklearn_struct.l1m3n import L1M3N
from sklearn_struct.solvers.loss import StructuredLoss
from sklearn_struct.structures import MatchingStructure, MinCutStructure, UnsupportedOperation

FALSE_POSITIVE_COST, FALSE_NEGATIVE_COST = 1.0, 2.0


@dataclass
class GraphProblem:
    structure: object
    X: list
    y: list
    #: per example: (features of the truth, [(features of y, loss(truth, y)) for every y])
    enumerated: list
    #: mask of the weights that must stay >= 0 (None: all free)
    nonnegative: object


def all_matchings(edges):
    """Every matching (0/1 over the edges, no node used twice), the empty one included."""
    matchings = []
    for y in itertools.product((0, 1), repeat=len(edges)):
        chosen = edges[np.array(y, dtype=bool)]
        if len(set(chosen[:, 0])) == len(chosen) == len(set(chosen[:, 1])):
            matchings.append(np.array(y))
    return matchings


def matching_problem(seed=0, n=5, d=3):
    """2x2 and 2x3 complete bipartite graphs; truth = best matching of noisy scores."""
    rng = np.random.RandomState(seed)
    w_true = np.array([1.5, -1.0, 0.0])[:d]
    X, y, enumerated = [], [], []
    for i in range(n):
        edges = np.array([[j, k] for j in range(2) for k in range(2 + i % 2)])
        features = rng.standard_normal((len(edges), d))
        candidates = all_matchings(edges)
        noisy = features @ w_true + 1.0 * rng.standard_normal(len(edges))
        truth = max(candidates, key=lambda m: m @ noisy)
        X.append((features, edges))
        y.append(truth)
        enumerated.append((features.T @ truth, [
            (features.T @ m, FALSE_POSITIVE_COST * np.sum(m * (1 - truth))
             + FALSE_NEGATIVE_COST * np.sum((1 - m) * truth))
            for m in candidates
        ]))
    structure = MatchingStructure(false_positive_cost=FALSE_POSITIVE_COST,
                                  false_negative_cost=FALSE_NEGATIVE_COST)
    return GraphProblem(structure, X, y, enumerated, None)


def mincut_features(node_features, edges, edge_features, labels):
    """``f(x, y) = (sum_j y_j x_j, -sum_jk [y_j != y_k] x_jk)``."""
    cut = (labels[edges[:, 0]] != labels[edges[:, 1]]).astype(float)
    return np.r_[node_features.T @ labels, -(edge_features.T @ cut)]


def mincut_problem(seed=0):
    """Paths and triangles of 3-5 nodes whose neighbours mostly disagree.

    Disagreeing neighbours reward cut edges: without the constraint the best
    edge weights would be negative, so ``w_edge >= 0`` is active.
    """
    rng = np.random.RandomState(seed)
    graphs = [
        [[0, 1], [1, 2], [2, 3]], [[0, 1], [1, 2], [0, 2]], [[0, 1], [1, 2]],
        [[0, 1], [1, 2], [2, 3], [3, 4]], [[0, 1], [1, 2], [0, 2]],
    ]
    X, y, enumerated = [], [], []
    for edge_list in graphs:
        edges = np.array(edge_list)
        n_nodes = edges.max() + 1
        labels = (np.arange(n_nodes) + rng.randint(2)) % 2
        labels[rng.randint(n_nodes)] ^= rng.rand() < 0.3
        node_features = np.c_[labels - 0.5 + 0.8 * rng.standard_normal(n_nodes),
                              rng.standard_normal(n_nodes), np.ones(n_nodes)]
        edge_features = np.c_[np.ones(len(edges)), rng.rand(len(edges))]
        X.append((node_features, edges, edge_features))
        y.append(labels)
        enumerated.append((mincut_features(node_features, edges, edge_features, labels), [
            (mincut_features(node_features, edges, edge_features, np.array(c)),
             float(np.sum(np.array(c) != labels)))
            for c in itertools.product((0, 1), repeat=n_nodes)
        ]))
    nonnegative = np.array([False, False, False, True, True])
    return GraphProblem(MinCutStructure(), X, y, enumerated, nonnegative)


def full_lp(problem, C, nonnegative=None):
    """P1 over every output, dense, solved by HiGHS.

    Variables ``[mu, nu, xi] >= 0`` with ``w = mu - nu`` and ``nu_j = 0`` where
    ``nonnegative``.  Returns the optimal value and ``w``.
    """
    rows, losses, owners = [], [], []
    for i, (truth, candidates) in enumerate(problem.enumerated):
        for features, loss in candidates:
            rows.append(truth - features)
            losses.append(loss)
            owners.append(i)
    return enumerated_l1_lp(rows, losses, owners, len(problem.enumerated), C=C,
                            nonnegative=nonnegative)


@pytest.fixture(scope="module", params=["matching", "mincut"])
def problem(request):
    return matching_problem() if request.param == "matching" else mincut_problem()


def test_mincut_problem_needs_the_nonnegativity():
    problem = mincut_problem()
    free_value, free_w = full_lp(problem, C=1.0)
    bounded_value, _ = full_lp(problem, C=1.0, nonnegative=problem.nonnegative)
    assert free_w[problem.nonnegative].min() < -1e-3
    assert free_value < bounded_value * (1 - 1e-3)


def test_hinge_matches_enumeration(problem):
    structure = problem.structure
    batch = structure.make_batch(problem.X)
    hinge = StructuredLoss(structure, batch, np.concatenate(problem.y), "hinge")
    w = np.random.RandomState(3).standard_normal(batch.n_weights)
    if problem.nonnegative is not None:
        np.testing.assert_array_equal(hinge.nonnegative, problem.nonnegative)
        w = np.abs(w)
    else:
        assert not hinge.nonnegative.any()
    values, subgradient, _ = hinge.evaluate(w)
    parallel = StructuredLoss(structure, batch, np.concatenate(problem.y), "hinge",
                              n_jobs=2).evaluate(w)
    np.testing.assert_allclose(parallel[0], values)
    np.testing.assert_allclose(parallel[1], subgradient)
    expected = [max(loss - w @ (truth - features) for features, loss in candidates)
                for truth, candidates in problem.enumerated]
    np.testing.assert_allclose(values, expected, atol=1e-12)
    # the subgradient is f(y*) - f(y_i) at maximisers: it attains the maximum
    worst = [max(candidates, key=lambda c: c[1] - w @ (truth - c[0]))
             for truth, candidates in problem.enumerated]
    assert subgradient @ w == pytest.approx(
        sum(w @ (f - truth) for (f, _), (truth, _) in zip(worst, problem.enumerated)))


@pytest.mark.parametrize("C", [0.2, 2.0])
def test_cutting_plane_matches_full_lp(problem, C):
    model = L1M3N(structure=problem.structure, solver="cutting_plane", C=C,
                  epsilon=1e-8).fit(problem.X, problem.y)
    optimum, w_full = full_lp(problem, C=C, nonnegative=problem.nonnegative)
    assert abs(model.objective_ - optimum) <= 1e-4 * optimum
    assert model.history_["lower_bound"][-1] <= optimum * (1 + 1e-9)
    assert model.coef_.shape == w_full.shape
    if problem.nonnegative is not None:
        assert model.coef_[problem.nonnegative].min() >= 0.0
    # the objective reported is the P1 objective of coef_, recomputed independently
    hinge = sum(max(loss - model.coef_ @ (truth - features) for features, loss in candidates)
                for truth, candidates in problem.enumerated)
    assert model.objective_ == pytest.approx(np.abs(model.coef_).sum() + C * hinge, rel=1e-9)


# not reaching tol=1e-4 is fine: the distance to the optimum is checked here
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("C, online", [(0.2, False), (2.0, False), (1.0, True)])
def test_subgradient_within_one_percent(problem, C, online):
    model = L1M3N(structure=problem.structure, solver="subgradient", C=C,
                  max_iter=300 if online else 3000, tol=1e-4, online=online,
                  random_state=0).fit(problem.X, problem.y)
    optimum, _ = full_lp(problem, C=C, nonnegative=problem.nonnegative)
    assert optimum > 0.05
    assert optimum * (1 - 1e-9) <= model.objective_ <= 1.01 * optimum
    assert model.lower_bound_ <= optimum * (1 + 1e-9)
    if problem.nonnegative is not None:
        assert model.coef_[problem.nonnegative].min() >= 0.0


def test_subgradient_certificate_uses_the_nonnegative_orthant():
    # At the optimum the subgradient pushes the (zero) edge weights negative: a
    # dual norm over every coordinate (|G_j|) would shrink the bound, the one over
    # the feasible set (max(-G_j, 0) on the edge weights) closes the gap.
    problem = mincut_problem()
    model = L1M3N(structure=problem.structure, solver="subgradient", C=2.0, max_iter=3000,
                  tol=1e-3).fit(problem.X, problem.y)
    optimum, w = full_lp(problem, C=2.0, nonnegative=problem.nonnegative)
    np.testing.assert_array_equal(w[problem.nonnegative], 0.0)
    assert (1 - 1e-3) * optimum <= model.lower_bound_ <= optimum * (1 + 1e-9)


@pytest.mark.parametrize("kind", ["matching", "mincut"])
def test_predict_score_and_fitted_attributes(kind):
    problem = matching_problem(n=6) if kind == "matching" else mincut_problem()
    model = L1M3N(structure=kind, C=1.0).fit(problem.X, problem.y)
    batch = problem.structure.make_batch(problem.X)
    np.testing.assert_array_equal(model.classes_, [0, 1])
    assert model.coef_.shape == (batch.n_weights,)
    assert model.weights_ is model.coef_
    np.testing.assert_array_equal(model.support_, model.coef_ != 0)
    np.testing.assert_array_equal(model.get_support(indices=True), np.flatnonzero(model.coef_))
    assert model.n_features_in_ == batch.n_weights
    assert not hasattr(model, "transition_")
    predicted = model.predict(problem.X)
    assert [p.shape for p in predicted] == [t.shape for t in problem.y]
    scores = model.decision_function(problem.X)  # one array of part scores per graph
    assert sum(len(s) for s in scores) == batch.part_offsets[-1]
    assert len(scores) == len(problem.X)
    flat_pred, flat_true = np.concatenate(predicted), np.concatenate(problem.y)
    if kind == "matching":
        # every prediction is a matching; the score is the pooled edge F1
        for (_, edges), p in zip(problem.X, predicted):
            chosen = edges[p == 1]
            assert len(set(chosen[:, 0])) == len(chosen) == len(set(chosen[:, 1]))
        expected = 2 * np.sum(flat_pred * flat_true) / (flat_pred.sum() + flat_true.sum())
    else:
        expected = np.mean(flat_pred == flat_true)
    assert model.score(problem.X, problem.y) == pytest.approx(expected, rel=1e-12)
    assert expected > 0.6
    # a graph's sample weight counts for each of its units
    weights = np.arange(1.0, len(problem.X) + 1)
    unit_weights = np.repeat(weights, [len(t) for t in problem.y])
    if kind == "matching":
        weighted = (2 * np.sum(unit_weights * flat_pred * flat_true)
                    / np.sum(unit_weights * (flat_pred + flat_true)))
    else:
        weighted = np.average(flat_pred == flat_true, weights=unit_weights)
    assert model.score(problem.X, problem.y, sample_weight=weights) == pytest.approx(weighted)


def test_fit_keeps_the_structure_and_inputs_unmodified():
    problem = mincut_problem()
    inputs = [tuple(np.copy(a) for a in x) for x in problem.X]
    labels = [t.copy() for t in problem.y]
    L1M3N(structure=problem.structure, C=1.0).fit(problem.X, problem.y)
    for x, x0 in zip(problem.X, inputs):
        for a, a0 in zip(x, x0):
            np.testing.assert_array_equal(a, a0)
    for t, t0 in zip(problem.y, labels):
        np.testing.assert_array_equal(t, t0)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("solver", ["cutting_plane", "subgradient"])
def test_sparse_features_give_the_dense_result(solver):
    matching, mincut = matching_problem(), mincut_problem()
    sparse_matching = [(sp.csr_matrix(f), e) for f, e in matching.X]
    sparse_mincut = [(sp.csr_matrix(v), e, sp.csr_matrix(f)) for v, e, f in mincut.X]
    params = dict(solver=solver, C=1.0, max_iter=200)
    for problem, sparse_X in [(matching, sparse_matching), (mincut, sparse_mincut)]:
        dense = L1M3N(structure=problem.structure, **params).fit(problem.X, problem.y)
        sparse = L1M3N(structure=problem.structure, **params).fit(sparse_X, problem.y)
        np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-9, atol=1e-12)
        assert sparse.objective_ == pytest.approx(dense.objective_, rel=1e-9)
        for p, q in zip(sparse.predict(sparse_X), dense.predict(problem.X)):
            np.testing.assert_array_equal(p, q)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_clone_and_grid_search_over_C():
    problem = matching_problem(seed=1, n=8)
    model = L1M3N(structure="matching", solver="subgradient", max_iter=100, tol=1e-3)
    assert clone(model).get_params() == model.get_params()
    search = GridSearchCV(model, {"C": [0.01, 3.0]}, cv=2).fit(problem.X, problem.y)
    # the cross-validated scores are those of clones fitted on the folds by hand
    for k, C in enumerate([0.01, 3.0]):
        fold_scores = []
        for train, test in KFold(2).split(problem.X):
            fitted = clone(model).set_params(C=C).fit(
                [problem.X[i] for i in train], [problem.y[i] for i in train])
            fold_scores.append(fitted.score([problem.X[i] for i in test],
                                            [problem.y[i] for i in test]))
        assert search.cv_results_["mean_test_score"][k] == pytest.approx(np.mean(fold_scores))
    assert search.best_estimator_.coef_.shape == (3,)
    assert search.best_estimator_.score(problem.X, problem.y) > 0.5


def test_bad_input():
    problem = matching_problem()
    X, y = problem.X, problem.y
    with pytest.raises(ValueError, match=r"y\[1\]: .*labels must be 0 or 1"):
        L1M3N(structure="matching").fit(X, [y[0], 2 * y[1] - 1] + y[2:])
    with pytest.raises(ValueError, match=r"y\[2\]: expected 4 labels \(one per edge\)"):
        L1M3N(structure="matching").fit(X, y[:2] + [y[2][:-1]] + y[3:])
    with pytest.raises(ValueError, match="X has 5 examples but y has 4"):
        L1M3N(structure="matching").fit(X, y[:4])
    cut = mincut_problem()
    with pytest.raises(ValueError, match=r"y\[0\]: expected 4 labels \(one per node\)"):
        L1M3N(structure="mincut").fit(cut.X, [cut.y[0][:3]] + cut.y[1:])
    with pytest.raises(ValueError, match="non-negative"):
        L1M3N(structure="mincut").fit([(v, e, -f) for v, e, f in cut.X], cut.y)
    with pytest.raises(ValueError,
                       match="tuples of arrays.*structure='matching', 'mincut' or 'tree'"):
        L1M3N().fit(X, y)  # graphs are never guessed from X
    model = L1M3N(structure="matching").fit(X, y)
    with pytest.raises(ValueError, match="2 features.*fitted with 3"):
        model.predict([(np.ones((2, 2)), np.array([[0, 0], [1, 1]]))])


@pytest.mark.parametrize("structure", ["matching", "mincut", MatchingStructure()])
def test_em_solver_is_refused_before_any_work(structure):
    # marginals of matchings and min-cuts are #P-hard; the check precedes reading X
    with pytest.raises(UnsupportedOperation, match="marginals.*L1M3N"):
        L1M3N(structure=structure, solver="em").fit("not graphs", None)
