"""EGCRF / EGStructuredSVM against independent references.

References: the exact primal over enumerated outputs minimised by scipy.optimize
(L-BFGS for the log loss, SLSQP on the epigraph QP for the hinge), scikit-learn's
LogisticRegression, and the solver's own Python path for arbitrary structures.
"""

import itertools
import os
import pickle
import signal
import warnings
from dataclasses import replace

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.special import logsumexp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_score

from sklearn_struct.eg import EGCRF, EGStructuredSVM, eg_path
from sklearn_struct.solvers import _chunks
from sklearn_struct.solvers._chunks import WorkerLostError
from sklearn_struct.solvers import eg as eg_module
from sklearn_struct.solvers import _eg_dual
from sklearn_struct.solvers._eg_dual import dual_weights, l2_dual
from sklearn_struct.solvers.eg import eg_solve
from sklearn_struct.solvers.loss import StructuredLoss
from sklearn_struct.structures import (
    DependencyTreeStructure, MulticlassStructure, UnsupportedOperation)
from sklearn_struct.structures.chain.structure import ChainStructure

# fits with tol=0 or a few passes are meant to stop on max_iter
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


# ----------------------------------------------------------------- fixtures
def make_chains(n=6, n_features=3, n_states=3, max_len=3, seed=0, signal=1.0):
    rng = np.random.RandomState(seed)
    X, y = [], []
    for _ in range(n):
        T = rng.randint(1, max_len + 1)
        labels = rng.randint(0, n_states, T)
        x = rng.randn(T, n_features)
        x[np.arange(T), labels % n_features] += signal
        X.append(x)
        y.append(labels)
    return X, y


def make_flat(n=120, n_features=5, n_classes=3, seed=0, sparse=False):
    rng = np.random.RandomState(seed)
    y = rng.randint(0, n_classes, n)
    X = rng.randn(n, n_features)
    X[np.arange(n), y] += 1.0
    return (sp.csr_matrix(X) if sparse else X), y


def joint_features(x, labels, K, start_end):
    """phi(x, y) of a chain, written out independently of the package."""
    T, d = x.shape
    W = np.zeros((K, d))
    for t in range(T):
        W[labels[t]] += x[t]
    trans = np.zeros((K, K))
    for t in range(1, T):
        trans[labels[t - 1], labels[t]] += 1
    parts = [W.ravel(), trans.ravel()]
    if start_end:
        start, end = np.zeros(K), np.zeros(K)
        start[labels[0]] = 1
        end[labels[-1]] = 1
        parts += [start, end]
    return np.concatenate(parts)


def enumerated_problem(X, y, K, start_end):
    """Per example: features of every output (rows) and their Hamming losses."""
    problem = []
    for x, labels in zip(X, y):
        outputs = list(itertools.product(range(K), repeat=len(labels)))
        Phi = np.array([joint_features(x, out, K, start_end) for out in outputs])
        loss = np.array([np.sum(np.array(out) != labels) for out in outputs], dtype=float)
        truth = joint_features(x, labels, K, start_end)
        problem.append((Phi, loss, truth))
    return problem


def primal_log(w, problem, C, weights):
    value, grad = 0.5 * w @ w, w.copy()
    for (Phi, _, truth), s in zip(problem, weights):
        scores = Phi @ w
        log_z = logsumexp(scores)
        p = np.exp(scores - log_z)
        value += C * s * (log_z - truth @ w)
        grad += C * s * (Phi.T @ p - truth)
    return value, grad


def primal_hinge(w, problem, C, weights):
    return 0.5 * w @ w + C * sum(
        s * np.max(loss + Phi @ w - truth @ w) for (Phi, loss, truth), s in zip(problem, weights)
    )


def solve_hinge_qp(problem, C, weights, dim):
    """min 1/2||w||^2 + C sum s_i xi_i s.t. xi_i >= loss_iy - w.(phi_i(y_i) - phi_i(y))."""
    n = len(problem)

    def objective(z):
        return 0.5 * z[:dim] @ z[:dim] + C * weights @ z[dim:]

    def gradient(z):
        return np.concatenate([z[:dim], C * weights])

    rows, rhs = [], []
    for i, (Phi, loss, truth) in enumerate(problem):
        for phi, l in zip(Phi, loss):
            row = np.zeros(dim + n)
            row[:dim] = truth - phi
            row[dim + i] = 1.0
            rows.append(row)
            rhs.append(l)
    A, b = np.array(rows), np.array(rhs)
    constraint = {"type": "ineq", "fun": lambda z: A @ z - b, "jac": lambda z: A}
    z0 = np.concatenate([np.zeros(dim), np.full(n, b.max())])
    res = minimize(objective, z0, jac=gradient, constraints=[constraint], method="SLSQP",
                   options={"ftol": 1e-13, "maxiter": 2000})
    # SLSQP may stop with "positive directional derivative" at machine precision:
    # what matters is a feasible point (an upper bound on the optimum)
    assert (A @ res.x - b).min() > -1e-8, res.message
    return res.fun


# ------------------------------------------------------- exact optimum (scipy)
@pytest.mark.parametrize("start_end", [True, False])
@pytest.mark.parametrize("use_weights", [False, True])
def test_crf_matches_scipy_on_enumerated_primal(start_end, use_weights):
    X, y = make_chains(n=6, n_states=3, max_len=3, seed=1)
    K, C = 3, 0.7
    weights = np.random.RandomState(3).uniform(0.5, 2.0, len(X)) if use_weights else np.ones(len(X))
    problem = enumerated_problem(X, y, K, start_end)
    dim = problem[0][0].shape[1]
    ref = minimize(primal_log, np.zeros(dim), args=(problem, C, weights), jac=True,
                   method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 5000})
    crf = EGCRF(C=C, structure=ChainStructure(start_end=start_end), tol=1e-9, max_iter=2000,
                random_state=0)
    crf.fit(X, y, sample_weight=weights if use_weights else None)
    w = crf.weights_
    # the solver's own primal evaluation agrees with the enumeration ...
    assert crf.primal_objective_ == pytest.approx(primal_log(w, problem, C, weights)[0], rel=1e-10)
    # ... and reaches the optimum
    assert crf.primal_objective_ == pytest.approx(ref.fun, rel=1e-6)
    assert crf.primal_objective_ >= ref.fun - 1e-9 * abs(ref.fun)
    np.testing.assert_allclose(w, ref.x, atol=1e-4 * np.abs(ref.x).max())


@pytest.mark.parametrize("start_end", [True, False])
def test_structured_svm_matches_scipy_qp(start_end):
    X, y = make_chains(n=5, n_states=2, max_len=3, seed=2)
    K, C = 2, 0.5
    weights = np.ones(len(X))
    problem = enumerated_problem(X, y, K, start_end)
    dim = problem[0][0].shape[1]
    optimum = solve_hinge_qp(problem, C, weights, dim)
    svm = EGStructuredSVM(C=C, structure=ChainStructure(start_end=start_end), tol=1e-5,
                          max_iter=20000, random_state=0).fit(X, y)
    w = svm.weights_
    assert svm.primal_objective_ == pytest.approx(primal_hinge(w, problem, C, weights), rel=1e-10)
    assert svm.primal_objective_ == pytest.approx(optimum, rel=1e-4)
    assert svm.dual_objective_ <= optimum * (1 + 1e-7)


@pytest.mark.parametrize("C", [0.01, 0.1, 1.0, 10.0])
def test_structured_svm_certifies_the_qp_optimum_at_every_C(C):
    """The temperature annealing (the default) converges from tiny to large C, and the
    gap it stops on is the hinge's: the dual is below the QP optimum, the primal above."""
    X, y = make_chains(n=8, n_states=3, max_len=3, seed=5)
    problem = enumerated_problem(X, y, 3, False)
    optimum = solve_hinge_qp(problem, C, np.ones(len(X)), problem[0][0].shape[1])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        svm = EGStructuredSVM(C=C, structure=ChainStructure(start_end=False), tol=1e-4,
                              max_iter=5000, random_state=0).fit(X, y)
    beta = svm.history_["beta"]
    assert beta[0] == min(1.0, 0.1 / C)
    assert np.all(np.diff(beta) >= 0) and beta[-1] > beta[0]
    assert svm.dual_objective_ <= optimum * (1 + 1e-7)
    assert svm.primal_objective_ >= optimum * (1 - 1e-7)
    assert svm.duality_gap_ <= 1e-4 * svm.primal_objective_
    assert svm.primal_objective_ == pytest.approx(optimum, rel=1e-4)


def test_one_pass_warm_fits_retrace_one_smoothed_hinge_fit():
    X, y = make_chains(n=30, n_features=6, max_len=6, seed=16, signal=2.0)
    long = EGStructuredSVM(C=5.0, tol=0, max_iter=12,
                           random_state=np.random.RandomState(1)).fit(X, y)
    short = EGStructuredSVM(C=5.0, tol=0, max_iter=1, warm_start=True,
                            random_state=np.random.RandomState(1))
    betas, duals = [], []
    for _ in range(12):
        short.fit(X, y)
        betas.append(short.history_["beta"][-1])
        duals.append(short.dual_objective_)
    assert long.history_["beta"][-1] > long.history_["beta"][0]
    np.testing.assert_array_equal(betas, long.history_["beta"])
    np.testing.assert_allclose(duals, long.history_["dual"], rtol=1e-8)


def test_smoothed_hinge_evaluates_and_returns_the_running_average_of_w():
    """The primal of the smoothed-hinge fit is evaluated at the running average of the
    pass-end ``w(alpha)`` (weight ``1 / (AVERAGE_WINDOW * passes)``), which ``coef_``
    holds; the average is a better primal point than ``w(alpha)`` late in the fit."""
    from sklearn_struct.solvers import eg

    X, y = make_chains(n=40, n_features=6, max_len=6, seed=3, signal=1.0)
    structure = ChainStructure(start_end=False)
    batch = structure.make_batch(X, n_states=3)
    Y = np.concatenate(y).astype(np.int64)
    C = 2.0
    pass_weights = []
    result = eg.eg_solve(structure, batch, Y, loss="hinge", C=C, tol=0, max_iter=40,
                         smoothing=True, callback=lambda k, state: pass_weights.append(
                             state.w.copy()))
    average = pass_weights[0].copy()
    for k, w in enumerate(pass_weights[1:], start=2):
        average += min(1.0, 1.0 / (_eg_dual.AVERAGE_WINDOW * k)) * (w - average)
    np.testing.assert_allclose(result.state.w_average, average, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(result.state.primal_weights, result.state.w_average)
    problem = StructuredLoss(structure, batch, Y, "hinge")
    primal_average = problem.primal(result.state.w_average, C)
    assert result.history["primal"][-1] == pytest.approx(primal_average, rel=1e-12)
    assert primal_average < problem.primal(result.state.w, C)
    assert result.history["dual"][-1] <= primal_average
    # the estimator's coef_ is that average
    svm = EGStructuredSVM(C=C, structure=ChainStructure(start_end=False), tol=0, max_iter=40,
                          random_state=np.random.RandomState(0)).fit(X, y)
    assert svm.primal_objective_ == pytest.approx(primal_average, rel=1e-12)


def test_multiclass_svm_matches_scipy_qp():
    X, y = make_flat(n=30, n_features=3, seed=4)
    C = 0.3
    problem = []
    for x, label in zip(X, y):
        Phi = np.array([np.kron(np.eye(3)[k], x) for k in range(3)])
        problem.append((Phi, (np.arange(3) != label).astype(float), Phi[label]))
    optimum = solve_hinge_qp(problem, C, np.ones(len(X)), 9)
    svm = EGStructuredSVM(C=C, tol=1e-5, max_iter=20000, random_state=0).fit(X, y)
    assert svm.primal_objective_ == pytest.approx(optimum, rel=1e-4)


# ------------------------------------------------- objective trajectory
@pytest.mark.parametrize("estimator", [EGCRF, EGStructuredSVM])
@pytest.mark.parametrize("solver", ["online", "batch"])
def test_dual_monotone_primal_above_dual_gap_vanishes(estimator, solver):
    X, y = make_chains(n=25, n_states=3, max_len=5, seed=5)
    # (EGCRF's tol below FLOAT32_MIN_TOL: float64 duals both for it and for tol=0 below)
    tol = 1e-9 if estimator is EGCRF else 1e-3
    # the guarantee holds at a fixed C: no annealing; visits in an order that the
    # evaluations do not steer (the hinge's gap sampling draws from them)
    plain = {"smoothing": False} if estimator is EGStructuredSVM else {}
    model = estimator(C=1.0, solver=solver, tol=tol, max_iter=5000, annealing=False,
                      order="shuffle", random_state=0, **plain).fit(X, y)
    assert model.history_["gap"][-1] <= tol * model.history_["primal"][-1]
    # the same fit evaluated after every pass (when it evaluates does not steer it)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        curve = clone(model).set_params(tol=0, max_iter=model.history_["passes"][-1]).fit(X, y)
    h = curve.history_
    assert h["passes"][-1] == model.history_["passes"][-1]
    scale = np.abs(h["primal"]).max()
    assert np.all(np.diff(h["dual"]) >= -1e-10 * scale)
    assert np.all(h["primal"] - h["dual"] >= -1e-10 * scale)
    assert h["gap"][-1] == pytest.approx(model.history_["gap"][-1], rel=1e-9)
    assert h["gap"][0] > 100 * h["gap"][-1]
    assert np.all(np.diff(h["passes"]) > 0)


def test_solvers_and_orders_reach_the_same_optimum():
    X, y = make_chains(n=20, seed=6)
    fits = [
        EGCRF(C=2.0, tol=1e-10, max_iter=5000, random_state=0, **kw).fit(X, y)
        for kw in ({"annealing": False}, {"order": "cyclic"}, {"order": "shuffle"},
                   {"order": "random"}, {"solver": "batch"}, {"learning_rate": 0.2},
                   {"start": "truth"}, {})
    ]
    for other in fits[1:]:
        assert other.primal_objective_ == pytest.approx(fits[0].primal_objective_, rel=1e-8)
        np.testing.assert_allclose(other.coef_, fits[0].coef_, atol=1e-4)
        np.testing.assert_allclose(other.transition_, fits[0].transition_, atol=1e-4)
    # annealing (the default) starts where the uniform dual point's quadratic term
    # equals its entropy: C0 = 2 sum_i log|Y_i| / ||sum_i phi(x_i, y_i) - E_unif phi||^2
    problem = enumerated_problem(X, y, 3, True)
    g0 = sum(truth - Phi.mean(axis=0) for Phi, _, truth in problem)
    C0 = 2 * sum(np.log(len(Phi)) for Phi, _, _ in problem) / (g0 @ g0)
    assert C0 < 2.0
    assert fits[-1].history_["C"][0] == pytest.approx(C0, rel=1e-12)
    assert fits[-1].history_["C"][-1] == 2.0
    assert np.all(fits[0].history_["C"] == 2.0)
    assert np.all(fits[-2].history_["C"] == 2.0)  # the start at the truth is not annealed


def test_start_at_the_truth_is_the_dual_point_of_zero_weights():
    """start="truth": every example's distribution on its true output up to e^-10 per unit
    of loss, the dual point of w = 0, whose dual is about 0 (the point mass's) at any C;
    the uniform start's is -C^2 ||g0||^2 / 2 + O(C), far below it at large C.  One visit
    (max_iter of one example) shows each start."""
    X, y = make_chains(n=20, seed=6)
    starts = {}
    for start in ("truth", "uniform"):
        model = EGCRF(C=50.0, start=start, annealing=False, max_iter=1e-9, tol=0,
                      random_state=0)
        with pytest.warns(ConvergenceWarning):
            model.fit(X, y)
        assert model.history_["passes"][-1] == pytest.approx(1 / 20)
        starts[start] = model
    truth, uniform = starts["truth"], starts["uniform"]
    assert 0.0 <= truth.dual_objective_ < 10.0  # (the visit can only raise the dual)
    assert uniform.dual_objective_ < -1e5
    assert np.abs(truth.coef_).max() < 0.01 * np.abs(uniform.coef_).max()
    with pytest.raises(ValueError, match=r"EGCRF: start='truth' needs solver='online'"):
        EGCRF(start="truth", solver="batch").fit(X, y)


@pytest.mark.parametrize("loss", ["log", "hinge"])
def test_example_gaps_are_each_examples_share_of_the_duality_gap(loss):
    """Per example, ``C s_i KL(alpha_i || p_w)`` (log loss) or the loss-augmented
    maximum minus its mean under alpha_i (hinge), by enumerating the outputs, at
    ``w(alpha)`` (where they sum to the exact gap) and at another ``w``."""
    from sklearn_struct.solvers._objective import example_losses

    rng = np.random.RandomState(2)
    X, y = make_chains(n=6, seed=5, max_len=3)
    structure = ChainStructure()
    batch = structure.make_batch(X, n_states=3)
    Y = np.concatenate(y).astype(np.int64)
    weights, C = rng.uniform(0.5, 2.0, len(X)), 0.8
    result = eg_solve(structure, batch, Y, loss=loss, C=C, sample_weight=weights, tol=0,
                      max_iter=2, annealing=False)
    state = result.state
    problem = StructuredLoss(structure, batch, Y, loss, weights)
    for w in (state.w, rng.randn(batch.n_weights)):
        losses, margins = example_losses(structure, problem.chunks, w, Y, loss,
                                         margins_of=state.mu)
        gaps = eg_module.example_gaps(problem, state, C, losses, margins)
        for i, labels in enumerate(y):
            sub = structure.take(batch, np.array([i]))
            a, b = batch.part_offsets[i], batch.part_offsets[i + 1]
            outputs = [np.array(out) for out in itertools.product(range(3), repeat=len(labels))]
            Z = np.array([structure.encode(sub, out) for out in outputs])
            alpha = np.exp(Z @ state.theta[a:b] - logsumexp(Z @ state.theta[a:b]))
            scores = Z @ structure.part_scores(sub, w)
            if loss == "log":
                reference = alpha @ (np.log(alpha) - (scores - logsumexp(scores)))
            else:
                augmented = scores + [np.sum(out != labels) for out in outputs]
                reference = augmented.max() - alpha @ augmented
            assert gaps[i] == pytest.approx(C * weights[i] * reference, rel=1e-9, abs=1e-12)
        if w is state.w:
            assert gaps.sum() == pytest.approx(result.history["gap"][-1], rel=1e-9)
            assert np.all(gaps > 0)


def test_gap_order_draws_in_proportion_to_the_gaps_mixed_with_uniform_draws():
    from sklearn_struct.solvers._eg_schedule import (GAP_UNIFORM_SHARE,
                                                     gap_visit_probabilities, visit_order)

    # in proportion to the gap per part: here 0, 1, 3 and 0
    gaps, parts = np.array([0.0, 2.0, 3.0, 0.0]), np.array([5, 2, 1, 4])
    p = gap_visit_probabilities(gaps, parts)
    u = GAP_UNIFORM_SHARE / 4
    np.testing.assert_allclose(p, [u, u + (1 - GAP_UNIFORM_SHARE) / 4,
                                   u + 3 * (1 - GAP_UNIFORM_SHARE) / 4, u], rtol=1e-15)
    # nothing to favour: uniform (and an example without parts has no gap)
    assert gap_visit_probabilities(np.zeros(4), np.array([5, 2, 0, 4])) is None
    rng = np.random.RandomState(0)
    visits = np.concatenate([visit_order("gap", 4, rng, p) for _ in range(5000)])
    assert visits.dtype == np.int64 and len(visits) == 20000
    np.testing.assert_allclose(np.bincount(visits, minlength=4) / 20000, p, atol=0.01)
    # systematic draws: n p_i visits of example i, rounded down or up, in every pass
    p = gap_visit_probabilities(rng.exponential(size=50) ** 3, rng.randint(1, 9, 50))
    for _ in range(20):
        counts = np.bincount(visit_order("gap", 50, rng, p), minlength=50)
        assert counts.sum() == 50
        assert np.all((counts == np.floor(50 * p)) | (counts == np.ceil(50 * p)))
    # before the first gap evaluation: a permutation, as "shuffle"
    assert sorted(visit_order("gap", 6, rng)) == list(range(6))
    with pytest.raises(ValueError, match="order must be one of"):
        X, y = make_chains(n=3)
        structure = ChainStructure()
        batch = structure.make_batch(X, n_states=3)
        eg_solve(structure, batch, np.concatenate(y), order="gaps")


def test_gap_order_visits_the_examples_with_the_largest_gaps_most():
    """With ``order="gap"``, the passes after a gap evaluation visit each example
    as often as its gap per part at that evaluation says (recorded from the epoch)."""
    X, y = make_chains(n=30, seed=9, max_len=4)
    structure = ChainStructure()
    batch = structure.make_batch(X, n_states=3)
    Y = np.concatenate(y).astype(np.int64)
    visited, run = [], eg_module.OnlineEpoch.run

    def recording_run(self, state, order, *args):
        visited.append(order.copy())
        return run(self, state, order, *args)

    evaluated = []
    real_gaps = eg_module.example_gaps

    def recording_gaps(*args):
        evaluated.append(real_gaps(*args))
        return evaluated[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(eg_module.OnlineEpoch, "run", recording_run)
        mp.setattr(eg_module, "example_gaps", recording_gaps)
        eg_solve(structure, batch, Y, C=3.0, tol=0, max_iter=300, annealing=False, order="gap")
    assert sorted(visited[0]) == list(range(30))  # no gaps yet: a permutation
    # tol=0: a gap evaluation after every pass, which sets the next pass's draws
    assert len(evaluated) == len(visited) > 100
    counts = sum(np.bincount(v, minlength=30) for v in visited[1:])
    parts = np.diff(batch.part_offsets)
    expected = sum(eg_module.gap_visit_probabilities(g, parts) * 30 for g in evaluated[:-1])
    # Pearson's statistic on 29 degrees of freedom: below 60 with probability 0.9994
    # for draws from the gap probabilities, and against uniform draws not uniform
    # (above 100 with probability 1e-9 for uniform draws)
    assert np.sum((counts - expected) ** 2 / expected) < 60
    uniform = np.full(30, counts.sum() / 30)
    assert np.sum((counts - uniform) ** 2 / uniform) > 100


def test_gap_evaluations_follow_the_geometric_schedule():
    from sklearn_struct.solvers._eg_schedule import gap_rate, passes_to_next_check

    assert passes_to_next_check(8, 0.1, None, 1e-3) == 2  # a quarter of the passes done
    assert passes_to_next_check(2, 0.1, None, 1e-3) == 1  # at least one pass
    # the last two gaps fall by 5x in 4 passes: tol = 1e-3 is 2 passes away, not 10
    rate = gap_rate((36, 1e-2), (40, 2e-3), None)
    assert rate == pytest.approx(np.log(0.2) / 4, rel=1e-14)
    assert passes_to_next_check(40, 2e-3, rate, 1e-3) == 2
    assert gap_rate(None, (40, 2e-3), None) is None
    # no progress: the last rate at which the gap fell stands
    assert gap_rate((40, 2e-3), (41, 2.2e-3), rate) == rate
    assert passes_to_next_check(41, 2.2e-3, rate, 1e-3) == 2
    assert passes_to_next_check(41, 2.2e-3, None, 1e-3) == 10
    X, y = make_chains(n=20, seed=17)
    # a fixed rate: one step per visit, so that effective passes are whole numbers
    # (uniform orders: gap sampling draws from the gaps of the last evaluation); the
    # hinge, whose visits do not give their gaps (see test_lagged_gaps_schedule_...)
    crf = EGStructuredSVM(C=1.0, smoothing=False, annealing=False, learning_rate=0.3,
                          tol=1e-14, max_iter=40, order="shuffle", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        crf.fit(X, y)
    passes = crf.history_["passes"]
    assert passes[:8].tolist() == [1, 2, 3, 4, 5, 6, 7, 8]
    assert np.all(np.diff(passes) <= np.maximum(1, np.floor(passes[:-1] / 4)))
    assert len(passes) < 25 and passes[-1] == 40  # the last pass is always evaluated
    trace = clone(crf).set_params(tol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        trace.fit(X, y)
    np.testing.assert_array_equal(trace.history_["passes"], np.arange(1, 41))
    # the schedule only decides when to look: the steps are those of the traced fit
    np.testing.assert_allclose(trace.history_["dual"][passes.astype(int) - 1],
                               crf.history_["dual"], rtol=1e-12)


@pytest.mark.parametrize("n, min_gap_visits", [(30, 1000), (400, 100)])
@pytest.mark.parametrize("start", ["uniform", "truth"])
def test_lagged_gaps_schedule_the_evaluations_of_the_log_loss(monkeypatch, start, n,
                                                              min_gap_visits):
    """Where the visits give their examples' gaps (log loss, a chain, a uniform order), the
    gap is evaluated once they add up to about ``tol``: the fit certifies ``tol`` at the
    first pass whose exact gap is below it, or the pass after, with three evaluations or
    fewer, and the evaluations do not steer the passes.  So too when only a quarter of the
    visits give theirs (100 of 400 examples)."""
    monkeypatch.setattr(eg_module, "MIN_GAP_VISITS", min_gap_visits)
    X, y = make_chains(n=n, seed=12)
    structure = ChainStructure()
    batch = structure.make_batch(X, n_states=3)
    Y = np.concatenate(y).astype(np.int64)

    def fit(tol, max_iter):
        return eg_solve(structure, batch, Y, C=2.0, tol=tol, max_iter=max_iter,
                        order="shuffle", start=start, dual_dtype=np.float64,
                        random_state=np.random.RandomState(0))

    certified = fit(1e-6, 500)
    assert certified.converged and len(certified.history["passes"]) <= 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        curve = fit(0, certified.history["passes"][-1])  # evaluated after every pass
    below = curve.history["gap"] <= 1e-6 * np.abs(curve.history["primal"])
    first = int(np.argmax(below)) + 1  # (passes counted from 1)
    assert below.any() and first <= certified.n_iter <= first + 1
    assert certified.history["dual"][-1] == curve.history["dual"][certified.n_iter - 1]


def test_the_lagged_gap_is_estimated_from_the_first_quarter_of_a_pass(monkeypatch):
    """A random order's first quarter of visits (at least ``MIN_GAP_VISITS``) is asked for
    its gaps, a cyclic order's every visit; the lagged gap scales the asked examples' gaps
    to all the examples, a zero-weight example's (left negative) counting 0."""
    n = 4 * eg_module.MIN_GAP_VISITS + 2
    visits = np.random.RandomState(0).permutation(n)
    gaps = np.zeros(n)
    eg_module._ask_gaps(gaps, visits, "shuffle")
    asked = eg_module.MIN_GAP_VISITS + 1  # ceil(n / 4)
    assert np.all(gaps[visits[:asked]] == -1.0) and np.isnan(gaps[visits[asked:]]).all()
    eg_module._ask_gaps(gaps, visits, "cyclic")
    assert np.all(gaps == -1.0)
    few = np.zeros(10)
    eg_module._ask_gaps(few, np.array([3, 3, 1, 0, 2, 5, 4, 9, 8, 7]), "random")
    # fewer examples than MIN_GAP_VISITS: every visit asks (6, drawn by none, is not asked)
    assert np.isnan(few[6]) and np.all(np.delete(few, 6) == -1.0)
    monkeypatch.setattr(eg_module, "l2_dual", lambda *args: 10.0)
    gaps = np.full(8, np.nan)
    gaps[[1, 4, 6]] = [0.5, 1.5, -1.0]
    estimate = 2.0 * 8 / 3
    state = eg_module.EGState(theta=None, mu=None, terms=None, etas=None, eta=0.5,
                              part_offsets=None)
    assert eg_module._lagged_relative_gap(None, state, gaps) == pytest.approx(
        estimate / (10.0 + estimate), rel=1e-15)


def test_gap_evaluations_come_after_whole_scheduled_passes(monkeypatch):
    """The schedule counts steps tried, exactly: counted in fractional passes (here
    1/11 of a pass more from the first pass), rounding put some evaluations a pass late."""
    X, y = make_chains(n=11, seed=3)
    original, calls = eg_module.OnlineEpoch.run, []

    def run(self, *args):  # the first pass reports one step more (as a retry would)
        calls.append(None)
        return original(self, *args) + (len(calls) == 1)

    monkeypatch.setattr(eg_module.OnlineEpoch, "run", run)
    monkeypatch.setattr(eg_module, "passes_to_next_check", lambda *args: 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        crf = EGStructuredSVM(C=1.0, smoothing=False, annealing=False, learning_rate=0.3,
                              tol=1e-14, max_iter=40, order="shuffle", random_state=0).fit(X, y)
    passes = crf.history_["passes"]
    np.testing.assert_allclose(passes, np.r_[np.arange(1, 40) + 1 / 11, 40], rtol=1e-12)


def test_annealing_reaches_a_large_C_faster():
    X, y = make_chains(n=40, n_features=6, max_len=6, seed=16, signal=2.0)
    C = 50.0
    plain = EGCRF(C=C, annealing=False, tol=1e-6, max_iter=3000, random_state=0).fit(X, y)
    annealed = EGCRF(C=C, tol=1e-6, max_iter=3000, random_state=0).fit(X, y)
    assert annealed.history_["C"][0] < C / 10
    assert annealed.primal_objective_ == pytest.approx(plain.primal_objective_, rel=1e-5)
    assert annealed.history_["passes"][-1] < plain.history_["passes"][-1]


# --------------------------------------------------------- scikit-learn LR
@pytest.mark.parametrize("sparse", [False, True])
def test_multiclass_crf_is_multinomial_logistic_regression(sparse):
    X, y = make_flat(n=150, n_features=6, n_classes=4, seed=7, sparse=sparse)
    for C in (0.1, 1.0):
        lr = LogisticRegression(C=C, fit_intercept=False, tol=1e-12, max_iter=10000).fit(X, y)
        crf = EGCRF(C=C, structure="multiclass", tol=1e-10, max_iter=2000, random_state=0)
        crf.fit(X, y)
        rel = np.abs(crf.coef_ - lr.coef_).max() / np.abs(lr.coef_).max()
        assert rel < 1e-3
        np.testing.assert_array_equal(crf.predict(X), lr.predict(X))
        np.testing.assert_allclose(crf.predict_proba(X), lr.predict_proba(X), atol=1e-4)
        np.testing.assert_allclose(crf.decision_function(X), X @ crf.coef_.T)


def test_fast_kernel_and_python_path_take_identical_steps():
    class PythonChain(ChainStructure):  # a subclass runs the generic (Python) epoch
        pass

    X, y = make_chains(n=15, seed=8, max_len=4)
    fast = EGCRF(C=1.0, tol=0, max_iter=5, random_state=3).fit(X, y)
    slow = EGCRF(C=1.0, structure=PythonChain(), tol=0, max_iter=5, random_state=3).fit(X, y)
    np.testing.assert_allclose(slow.history_["dual"], fast.history_["dual"], rtol=1e-10)
    np.testing.assert_allclose(slow.coef_, fast.coef_, atol=1e-10)
    Xf, yf = make_flat(seed=8)
    fast = EGStructuredSVM(tol=0, max_iter=4, random_state=1).fit(Xf, yf)

    class PythonMulticlass(MulticlassStructure):
        pass

    slow = EGStructuredSVM(structure=PythonMulticlass(), tol=0, max_iter=4,
                           random_state=1).fit(Xf, yf)
    np.testing.assert_allclose(slow.history_["dual"], fast.history_["dual"], rtol=1e-10)


def test_dense_and_sparse_tokens_give_the_same_model():
    X, y = make_chains(n=20, seed=9)
    dense = EGCRF(tol=0, max_iter=6, random_state=0).fit(X, y)
    sparse = EGCRF(tol=0, max_iter=6, random_state=0).fit([sp.csr_matrix(x) for x in X], y)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sparse.transition_, dense.transition_, rtol=1e-12, atol=1e-12)


def test_predict_marginals_match_enumeration():
    X, y = make_chains(n=4, seed=10, max_len=3)
    crf = EGCRF(C=1.0, random_state=0).fit(X, y)
    w = crf.weights_
    for x, marg, predicted in zip(X, crf.predict_marginals(X), crf.predict(X)):
        outputs = list(itertools.product(range(3), repeat=len(x)))
        scores = np.array([joint_features(x, out, 3, True) @ w for out in outputs])
        p = np.exp(scores - logsumexp(scores))
        expected = np.zeros((len(x), 3))
        for out, prob in zip(outputs, p):
            expected[np.arange(len(x)), out] += prob
        np.testing.assert_allclose(marg, expected, atol=1e-10)
        assert list(outputs[np.argmax(scores)]) == predicted.tolist()


def test_sample_weight_equals_repeating_examples():
    X, y = make_chains(n=10, seed=11)
    weights = np.array([1, 2, 1, 3, 1, 1, 2, 1, 1, 1])
    Xr = [x for x, k in zip(X, weights) for _ in range(k)]
    yr = [t for t, k in zip(y, weights) for _ in range(k)]
    weighted = EGCRF(tol=1e-10, max_iter=3000, random_state=0).fit(X, y, sample_weight=weights)
    repeated = EGCRF(tol=1e-10, max_iter=3000, random_state=0).fit(Xr, yr)
    assert weighted.primal_objective_ == pytest.approx(repeated.primal_objective_, rel=1e-8)
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, atol=1e-4)


# ------------------------------------------------------ warm start and path
def test_warm_start_path_needs_fewer_passes():
    X, y = make_chains(n=30, seed=12, max_len=5)
    Cs = [0.1, 0.2, 0.4, 0.8]
    # the paper's sampling with replacement (section 7.1.2); with the default
    # permutations, cold fits of this 30-sentence problem take about as many passes
    kw = {"tol": 1e-6, "max_iter": 500, "order": "random", "random_state": 0}
    path = eg_path(EGCRF(**kw), X, y, Cs, X_val=X, y_val=y)
    assert path["C"].tolist() == Cs
    assert path["converged"].all()
    cold = [EGCRF(C=C, **kw).fit(X, y) for C in Cs]
    for k, model in enumerate(cold):
        assert path["primal"][k] == pytest.approx(model.primal_objective_, rel=1e-5)
    cold_passes = np.array([m.history_["passes"][-1] for m in cold])
    assert path["passes"][1:].sum() < cold_passes[1:].sum()
    np.testing.assert_allclose(path["total_passes"], np.cumsum(path["passes"]))
    assert np.all((path["validation_score"] >= 0) & (path["validation_score"] <= 1))
    assert path["estimator"].C == Cs[-1]


def test_path_scoring_callable():
    from sklearn.metrics import accuracy_score, make_scorer

    X, y = make_chains(n=20, seed=3, max_len=4)
    calls = []

    def first_token_accuracy(estimator, X_val, y_val):
        calls.append(estimator.C)
        return np.mean([p[0] == t[0] for p, t in zip(estimator.predict(X_val), y_val)])

    template = EGCRF(tol=1e-4, random_state=0)
    path = eg_path(template, X, y, [0.5, 0.1], X_val=X, y_val=y, scoring=first_token_accuracy)
    assert calls == [0.1, 0.5]
    final = path["estimator"]
    assert path["validation_score"][-1] == first_token_accuracy(final, X, y)
    flat_X, flat_y = np.eye(4).repeat(3, axis=0), np.arange(12) % 4
    scorer = make_scorer(accuracy_score)
    flat = eg_path(template, flat_X, flat_y, [1.0], X_val=flat_X, y_val=flat_y, scoring=scorer)
    assert flat["validation_score"][0] == flat["estimator"].score(flat_X, flat_y)
    with pytest.raises(TypeError, match="scoring must be a callable"):
        eg_path(template, flat_X, flat_y, [1.0], X_val=flat_X, y_val=flat_y, scoring="uas")


def test_one_pass_warm_fits_retrace_one_annealed_fit():
    X, y = make_chains(n=40, n_features=6, max_len=6, seed=16, signal=2.0)
    long = EGCRF(C=50.0, tol=0, max_iter=40, random_state=np.random.RandomState(1)).fit(X, y)
    short = EGCRF(C=50.0, tol=0, max_iter=1, warm_start=True,
                  random_state=np.random.RandomState(1))
    Cs, duals = [], []
    for _ in range(40):
        short.fit(X, y)
        Cs.append(short.history_["C"][-1])
        duals.append(short.dual_objective_)
    assert long.history_["C"][0] < long.history_["C"][-1] == 50.0
    np.testing.assert_array_equal(Cs, long.history_["C"])
    # a warm start rebuilds w(alpha) from the marginals instead of updating it
    # incrementally: rounding differences then grow slowly along the trajectory
    np.testing.assert_allclose(duals[:20], long.history_["dual"][:20], rtol=1e-9)
    np.testing.assert_allclose(duals, long.history_["dual"], rtol=2e-2)


def test_batch_warm_fits_continue_one_fit(monkeypatch):
    # batch EG's chunks take a warm state's dual variables and give them back
    X, y = make_chains(n=30, n_features=5, max_len=5, seed=23)
    params = dict(C=2.0, solver="batch", annealing=False, learning_rate=0.3, tol=0)
    long = EGCRF(max_iter=6, warm_start=True, **params).fit(X, y)
    short = EGCRF(max_iter=3, warm_start=True, **params)
    duals = [short.fit(X, y).history_["dual"] for _ in range(2)]
    np.testing.assert_allclose(np.concatenate(duals), long.history_["dual"], rtol=1e-10)
    np.testing.assert_allclose(short.weights_, long.weights_, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(short._dual_state.theta, long._dual_state.theta, rtol=1e-8,
                               atol=1e-12)
    assert np.abs(long._dual_state.theta).max() > 0.1  # the steps moved away from theta = 0
    # without warm_start they stay on the chunks
    monkeypatch.setattr(eg_module.BatchPasses, "store",
                        lambda self, state: pytest.fail("dual variables brought back"))
    cold = EGCRF(max_iter=6, **params).fit(X, y)
    np.testing.assert_array_equal(cold.weights_, long.weights_)


def test_batch_solves_the_rescaled_problem_as_online_eg():
    # feature_scale (the adaptive M3N's beta, zeros included) in batch EG's chunks
    from sklearn_struct.solvers.eg import eg_solve

    X, y = make_chains(n=15, seed=24)
    structure = ChainStructure()
    batch = structure.make_batch(X, n_states=3)
    Y = np.concatenate(y).astype(np.int64)
    rng = np.random.RandomState(0)
    scale = rng.uniform(0.2, 2.0, batch.n_weights)
    scale[rng.rand(batch.n_weights) < 0.2] = 0.0
    online, batch_two_chunks = (
        eg_solve(structure, batch, Y, C=2.0, feature_scale=scale, tol=1e-9, max_iter=5000,
                 annealing=True, solver=solver, n_jobs=n_jobs)
        for solver, n_jobs in (("online", None), ("batch", 2)))
    assert online.converged and batch_two_chunks.converged
    assert batch_two_chunks.history["primal"][-1] == pytest.approx(online.history["primal"][-1],
                                                                   rel=1e-7)
    np.testing.assert_allclose(batch_two_chunks.state.w, online.state.w, atol=1e-4)
    assert np.all(batch_two_chunks.state.w[scale == 0.0] == 0.0)


def test_warm_start_on_other_examples_is_refused():
    X, y = make_chains(n=10, seed=13)
    crf = EGCRF(warm_start=True, max_iter=3, tol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        crf.fit(X, y)
        with pytest.raises(ValueError, match="warm start"):
            crf.fit(X[:5], y[:5])


# ------------------------------------------------- scikit-learn integration
def test_labels_of_any_hashable_type_round_trip():
    X, y = make_chains(n=12, seed=14)
    names = np.array(["B-NP", "I-NP", "O"])
    tuples = [("a", 1), ("b", 2), ("c", 3)]
    # whole floats: other floats are continuous targets, refused as in scikit-learn
    for mapping in (lambda t: names[t], lambda t: [tuples[k] for k in t],
                    lambda t: [float(k) + 1.0 for k in t]):
        ys = [mapping(labels) for labels in y]
        crf = EGCRF(tol=1e-6, random_state=0).fit(X, ys)
        reference = EGCRF(tol=1e-6, random_state=0).fit(X, y)
        predicted = crf.predict(X)
        for p, r in zip(predicted, reference.predict(X)):
            assert list(p) == list(mapping(r))
        assert crf.score(X, ys) == reference.score(X, y)


def test_clone_pickle_joblib_round_trip(tmp_path):
    X, y = make_chains(n=15, seed=15)
    crf = EGCRF(C=3.0, random_state=0).fit(X, y)
    expected = crf.predict(X)
    again = pickle.loads(pickle.dumps(crf))
    joblib.dump(crf, tmp_path / "crf.joblib")
    loaded = joblib.load(tmp_path / "crf.joblib")
    refit = clone(crf).fit(X, y)
    for model in (again, loaded, refit):
        for a, b in zip(model.predict(X), expected):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(refit.coef_, crf.coef_)
    Xf, yf = make_flat()
    svm = EGStructuredSVM(random_state=0).fit(Xf, yf)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(svm)).predict(Xf), svm.predict(Xf))


@pytest.mark.parametrize("estimator", [EGCRF, EGStructuredSVM])
def test_random_state_reproducible_bit_for_bit(estimator):
    X, y = make_chains(n=20, seed=16)
    a = estimator(random_state=7, max_iter=5, tol=0).fit(X, y)
    b = estimator(random_state=7, max_iter=5, tol=0).fit(X, y)
    c = estimator(random_state=8, max_iter=5, tol=0).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.transition_, b.transition_)
    np.testing.assert_array_equal(a.history_["dual"], b.history_["dual"])
    assert not np.array_equal(a.coef_, c.coef_)


@pytest.mark.parametrize("order", ["shuffle", "random", "gap"])
def test_online_threads_reach_the_same_optimum_with_exact_weights(order):
    """Online passes on two threads share w without locks: not bit for bit the
    serial fit, but the same optimum, and the weights reported are exactly
    w(alpha) of the final dual variables (rebuilt after the racy passes)."""
    X, y = make_chains(n=300, seed=17, max_len=6)
    one = EGCRF(random_state=0, tol=1e-11, max_iter=3000, order=order).fit(X, y)
    two = EGCRF(random_state=0, tol=1e-11, max_iter=3000, order=order, n_jobs=2).fit(X, y)
    assert one.history_["gap"][-1] <= 1e-11 * one.primal_objective_
    assert two.history_["gap"][-1] <= 1e-11 * two.primal_objective_
    assert two.primal_objective_ == pytest.approx(one.primal_objective_, rel=1e-10)
    # strong convexity: ||w - w*||^2 <= 2 (P(w) - P(w*)) <= 2 gap
    assert np.linalg.norm(two.coef_ - one.coef_) <= 2 * np.sqrt(2e-11 * one.primal_objective_)
    for a, b in zip(two.predict(X), one.predict(X)):
        np.testing.assert_array_equal(a, b)

    structure = ChainStructure()
    batch = structure.make_batch(X, n_states=3)
    absolute = structure.make_batch([np.abs(x) for x in X], n_states=3)
    Y = np.concatenate(y).astype(np.int64)
    scale = np.random.RandomState(1).uniform(0.5, 2.0, batch.n_weights)
    for feature_scale in (None, scale):  # (the rebuild rescales the features too)
        result = eg_solve(structure, batch, Y, C=1.0, tol=0, max_iter=5, n_jobs=2, order=order,
                          feature_scale=feature_scale)
        problem = StructuredLoss(structure, batch, Y, "log", None, feature_scale)
        # the threads sum the same terms in another order: the two results differ by
        # rounding alone, at most (number of terms) * eps * (sum of the terms' magnitudes),
        # where the racy w drifts by up to 0.5%
        magnitude = StructuredLoss(structure, absolute, Y, "log", None, feature_scale)
        summed = magnitude.observed + magnitude.features(absolute, result.state.mu)
        rounding = batch.part_offsets[-1] * np.finfo(float).eps * summed
        assert np.all(np.abs(result.state.w - dual_weights(problem, result.state.mu, 1.0))
                      <= rounding)
        assert result.history["dual"][-1] == pytest.approx(
            l2_dual(problem, result.state.terms, result.state.w, 1.0), rel=1e-12)


def test_n_jobs_gives_the_same_model():
    X, y = make_chains(n=20, seed=17)
    batch = EGCRF(solver="batch", max_iter=4, tol=0, n_jobs=2).fit(X, y)
    ref = EGCRF(solver="batch", max_iter=4, tol=0).fit(X, y)
    np.testing.assert_allclose(batch.coef_, ref.coef_, rtol=1e-12, atol=1e-14)


@pytest.fixture(scope="module")
def process_cluster():
    """A dask cluster of two worker processes, as users run one (not threads in this process)."""
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            yield client


@pytest.fixture
def every_job_on_the_cluster(monkeypatch):
    """Small test jobs go to the cluster too (real ones below the threshold stay here)."""
    monkeypatch.setattr(_chunks, "MIN_PARTS_PER_REMOTE_CHUNK", 0)


@pytest.mark.parametrize("loss", ["log", "hinge"])
def test_dask_process_cluster_gives_the_same_fit_and_predictions(process_cluster, loss,
                                                                 every_job_on_the_cluster):
    X, y = make_chains(n=20, seed=18)
    Model = EGCRF if loss == "log" else EGStructuredSVM
    # batch EG: steps, objective and gap all run on the cluster's chunks
    local = Model(solver="batch", max_iter=3, tol=0, n_jobs=2).fit(X, y)
    with joblib.parallel_config(backend="dask"):
        remote = Model(solver="batch", max_iter=3, tol=0, n_jobs=2).fit(X, y)
        remote_pred = remote.predict(X)
    np.testing.assert_allclose(remote.coef_, local.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(remote.history_["gap"], local.history_["gap"], rtol=1e-10)
    for a, b in zip(remote_pred, local.predict(X)):
        np.testing.assert_array_equal(a, b)


def test_dask_process_cluster_fits_dependency_trees(process_cluster, every_job_on_the_cluster):
    # the sub-batches of another structure (hashed arc features) go to the workers too
    rng = np.random.RandomState(3)
    X = [rng.randint(4, 40, size=(n, 3)) for n in (3, 5, 4, 6, 2, 7)]
    y = [np.arange(len(x)) for x in X]  # every word headed by the one before: projective
    model = EGCRF(C=1.0, solver="batch", structure=DependencyTreeStructure(hash_bits=10),
                  max_iter=3, tol=0, n_jobs=2)
    local = clone(model).fit(X, y)
    with joblib.parallel_config(backend="dask"):
        remote = clone(model).fit(X, y)
        remote_pred = remote.predict(X)
    np.testing.assert_allclose(remote.coef_, local.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(remote.history_["gap"], local.history_["gap"], rtol=1e-10)
    for a, b in zip(remote_pred, local.predict(X)):
        np.testing.assert_array_equal(a, b)


def _weights_of_every_pass(model, X, y):
    seen = []
    model.fit(X, y, callback=lambda _, estimator: seen.append(estimator.weights_.copy()))
    return seen


@pytest.mark.parametrize("where", ["this process", "cluster"])
@pytest.mark.parametrize("loss", ["log", "hinge"])
def test_batch_gap_is_the_exact_gap_of_every_pass(request, where, loss):
    """Batch EG evaluates the primal on the part scores kept by its chunks (and steps
    from them): every recorded primal is the enumerated primal of that pass's weights
    at that pass's C, in this process and on a process cluster."""
    X, y = make_chains(n=8, n_states=3, max_len=3, seed=21)
    problem = enumerated_problem(X, y, 3, False)
    Model = EGCRF if loss == "log" else EGStructuredSVM
    model = Model(C=5.0, solver="batch", structure=ChainStructure(start_end=False), tol=0,
                  max_iter=14, n_jobs=2)
    if where == "cluster":
        request.getfixturevalue("process_cluster")
        request.getfixturevalue("every_job_on_the_cluster")
        with joblib.parallel_config(backend="dask"):
            weights = _weights_of_every_pass(model, X, y)
    else:
        weights = _weights_of_every_pass(model, X, y)
    h = model.history_
    assert len(np.unique(h["C"])) > 2  # C annealed: the steps rescale the kept scores
    if loss == "log":
        expected = [primal_log(w, problem, C, np.ones(len(X)))[0] for w, C in zip(weights, h["C"])]
    else:
        expected = [primal_hinge(w, problem, C, np.ones(len(X))) for w, C in zip(weights, h["C"])]
    np.testing.assert_allclose(h["primal"], expected, rtol=1e-10)
    np.testing.assert_allclose(h["gap"], h["primal"] - h["dual"], rtol=1e-12)


class _CountingChain(ChainStructure):
    calls = 0

    def part_scores(self, batch, w):
        _CountingChain.calls += 1
        return super().part_scores(batch, w)


@pytest.mark.parametrize("loss", ["log", "hinge"])
def test_batch_steps_from_the_kept_scores_as_from_fresh_ones(monkeypatch, loss):
    X, y = make_chains(n=20, seed=22)
    Model = EGCRF if loss == "log" else EGStructuredSVM
    # a fixed rate: one step per pass; C annealed: kept scores are rescaled
    params = dict(C=5.0, solver="batch", learning_rate=0.3, tol=0, max_iter=10)
    _CountingChain.calls = 0
    kept = Model(structure=_CountingChain(), **params).fit(X, y)
    # one scoring per pass (the evaluation's) and the first step's
    assert _CountingChain.calls == 10 + 1
    real_run = eg_module.BatchPasses.run

    def run_from_fresh_scores(self, state, *args):
        # w of the current C shared anew, no kept scores: the step scores the parts itself
        self.duals = [replace(dual, scores=None) for dual in self.duals]
        self.share(state.w, state.C)
        return real_run(self, state, *args)

    monkeypatch.setattr(eg_module.BatchPasses, "run", run_from_fresh_scores)
    _CountingChain.calls = 0
    fresh = Model(structure=_CountingChain(), **params).fit(X, y)
    assert _CountingChain.calls == 2 * 10
    assert len(np.unique(kept.history_["C"])) > 2
    np.testing.assert_allclose(kept.history_["dual"], fresh.history_["dual"], rtol=1e-12)
    np.testing.assert_allclose(kept.history_["primal"], fresh.history_["primal"], rtol=1e-12)
    np.testing.assert_allclose(kept.weights_, fresh.weights_, rtol=1e-10, atol=1e-14)


def test_chunks_ship_the_data_once_and_keep_resident_values_on_the_workers(
        process_cluster, every_job_on_the_cluster):
    client = process_cluster
    X, y = make_chains(n=12, seed=3)
    structure = ChainStructure()
    batch = structure.make_batch(X, n_states=3)
    chunks = _chunks.ExampleChunks(structure, batch, n_jobs=2)
    scattered = []
    real_scatter = client.scatter

    def counting_scatter(data, **kwargs):
        scattered.append(data)
        return real_scatter(data, **kwargs)

    client.scatter = counting_scatter
    try:
        with joblib.parallel_config(backend="dask"):
            sizes = [chunks.map(_chunk_size) for _ in range(3)]
            values, summaries = chunks.resident(_chunk_size_pair)
            increment = chunks.share(np.ones(1))
            for _ in range(3):
                values, summaries = chunks.advance(_increment_pair, values, shared=(increment,))
            # every chunk's values live on the worker that holds its sub-batch, and on no
            # other (dask may not move a chunk's task, and its data, to an idle worker)
            where = client.who_has(values)
            assert [list(where[value.key]) for value in values] == [[w] for w in chunks._remote[2]]
            assert len(set(chunks._remote[2])) == 2
            collected = chunks.collect(values)
            halves = chunks.collect(values, _half)
    finally:
        del client.scatter
    assert sizes == [[a.n_samples for a in chunks._batches]] * 3
    # the sub-batches went out once, for all the calls
    assert sum(data is chunks._batches for data in scattered) == 1
    assert len(scattered) == 2  # and the shared increment once, for the three calls
    assert all(hasattr(value, "key") for value in values)  # futures: the values stayed remote
    assert collected == [a.n_samples + 3 for a in chunks._batches]
    assert summaries == collected
    assert halves == [value / 2 for value in collected]


def test_a_large_shared_array_reaches_the_chunk_tasks_in_memory_of_its_own(
        process_cluster, every_job_on_the_cluster):
    """A worker deserializes a shared weight vector into a buffer the array does not own,
    without the huge pages of numpy's own allocations: each chunk task gets a copy (equal
    to what was sent) that owns its memory; small arguments arrive as they are."""
    X, y = make_chains(n=12, seed=3)
    structure = ChainStructure()
    chunks = _chunks.ExampleChunks(structure, structure.make_batch(X, n_states=3), n_jobs=2)
    large = np.random.RandomState(0).normal(size=_chunks.LARGE_ARGUMENT_BYTES // 8 + 1)
    with joblib.parallel_config(backend="dask"):
        seen = chunks.map(_shared_arrays_seen, shared=(chunks.share(large), np.ones(3)))
    assert seen == [(True, float(large.sum()), 3.0)] * 2


def test_small_jobs_stay_in_this_process_on_a_cluster(process_cluster):
    # a round trip to the workers per call costs more than the inference of a
    # small batch: below the threshold nothing is submitted
    X, y = make_chains(n=20, seed=18)
    client = process_cluster
    submitted = []
    real_submit = client.submit

    def counting_submit(*args, **kwargs):
        submitted.append(args)
        return real_submit(*args, **kwargs)

    client.submit = counting_submit
    try:
        with joblib.parallel_config(backend="dask"):
            remote = EGCRF(solver="batch", max_iter=3, tol=0, n_jobs=2).fit(X, y)
    finally:
        del client.submit
    assert submitted == []
    local = EGCRF(solver="batch", max_iter=3, tol=0).fit(X, y)
    np.testing.assert_allclose(remote.coef_, local.coef_, rtol=1e-12, atol=1e-14)


def test_summed_chunk_arrays_meet_on_the_workers_and_one_sum_comes_back(
        process_cluster, every_job_on_the_cluster, monkeypatch):
    X, y = make_chains(n=12, seed=3)
    structure = ChainStructure()
    batch = structure.make_batch(X, n_states=3)
    chunks = _chunks.ExampleChunks(structure, batch, n_jobs=2)
    local_values, local_sizes, local_total = _chunks.ExampleChunks(
        structure, batch, n_jobs=2).resident(_chunk_size_and_vector, summed=True)
    gathered = []
    real_gathered = _chunks._gathered

    def counting_gathered(client, futures):
        results = real_gathered(client, futures)
        gathered.extend(results)
        return results

    monkeypatch.setattr(_chunks, "_gathered", counting_gathered)
    with joblib.parallel_config(backend="dask"):
        values, sizes, total = chunks.resident(_chunk_size_and_vector, summed=True)
        values, sizes, total_after = chunks.advance(_doubled_vector, values, summed=True)
    assert sizes == local_sizes == [a.n_samples for a in chunks._batches]
    np.testing.assert_array_equal(total, local_total)
    np.testing.assert_array_equal(total, np.full(1000, batch.n_samples, dtype=float))
    np.testing.assert_array_equal(total_after, 2 * total)
    # the chunks' vectors were added on the workers: two sums came back, no chunk's own vector
    assert sum(isinstance(result, np.ndarray) for result in gathered) == 2


def test_chunks_balance_parts_not_examples():
    # one long example and many short ones: the long one is a chunk of its own
    X, _ = make_chains(n=12, seed=3)
    X = [np.repeat(X[0], 40, axis=0)] + list(X[1:])
    structure = ChainStructure()
    batch = structure.make_batch(X, n_states=3)
    chunks = _chunks.ExampleChunks(structure, batch, n_jobs=2)
    parts = [int(batch.part_offsets[b] - batch.part_offsets[a]) for a, b in chunks.bounds]
    assert chunks.bounds[0] == (0, 1)
    assert max(parts) < 0.75 * batch.part_offsets[-1]
    # and every chunk has an example, however the parts fall
    bounds = _chunks._balanced_bounds(np.array([0, 1, 2, 3, 4, 1000]), 4)
    assert len(bounds) == 5 and np.all(np.diff(bounds) >= 1) and bounds[-2:] == [4, 5]


def test_batch_eg_keeps_no_part_vectors_here_until_asked(monkeypatch):
    from sklearn_struct.solvers import _eg_execution

    X, y = make_chains(n=20, seed=18)
    seen = []
    real_store = _eg_execution.BatchPasses.store

    def store(self, state):
        seen.append((state.theta, state.mu))
        real_store(self, state)

    monkeypatch.setattr(_eg_execution.BatchPasses, "store", store)
    model = EGCRF(solver="batch", C=1.0, max_iter=3, tol=0, warm_start=True,
                  structure=ChainStructure()).fit(X, y)
    # the state had no theta and mu until the fit ended and brought them back
    assert seen == [(None, None)]
    state = model._dual_state  # the marginals were recomputed from theta where it lived
    batch = model.structure_.make_batch(X, n_states=len(model.classes_))
    np.testing.assert_array_equal(state.mu, model.structure_.marginals(batch, state.theta)[0])


def _chunk_size_and_vector(sub):
    return sub.n_samples, (sub.n_samples, np.full(1000, float(sub.n_samples)))


def _doubled_vector(value):
    return value, (value, np.full(1000, 2.0 * value))


def _chunk_size(sub):
    return sub.n_samples


def _shared_arrays_seen(sub, large, small):
    return large.flags.owndata, float(large.sum()), float(small.sum())


def _chunk_size_pair(sub):
    return sub.n_samples, sub.n_samples


def _increment_pair(value, increment):
    return value + increment[0], value + increment[0]


def _half(value):
    return value / 2


def test_flat_estimators_are_classifiers():
    from sklearn.base import is_classifier

    assert is_classifier(EGCRF(structure="multiclass"))
    assert is_classifier(EGStructuredSVM(structure=MulticlassStructure()))
    assert is_classifier(EGCRF())  # None: multiclass for a 2-D X
    assert not is_classifier(EGCRF(structure="chain"))  # y is a list of sequences
    assert not is_classifier(EGStructuredSVM(structure=ChainStructure()))


def test_flat_grid_search_and_cross_val_score():
    X, y = make_flat(n=90, seed=19)
    scores = cross_val_score(EGCRF(random_state=0), X, y, cv=3)
    assert scores.shape == (3,) and np.all(scores > 0.5)
    search = GridSearchCV(EGStructuredSVM(random_state=0), {"C": [0.1, 1.0]}, cv=3).fit(X, y)
    assert search.best_params_["C"] in (0.1, 1.0)


def test_convergence_warning_and_verbose(capsys):
    X, y = make_chains(n=10, seed=20)
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        EGCRF(max_iter=1, tol=1e-12, verbose=1).fit(X, y)
    assert "[EG] pass" in capsys.readouterr().out


def test_verbose_says_when_C_is_annealed(capsys):
    X, y = make_chains(n=20, seed=20)
    crf = EGCRF(C=50.0, tol=1e-6, max_iter=200, verbose=1).fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    Cs = crf.history_["C"]
    assert len(lines) == len(Cs) and Cs[0] < 50.0 == Cs[-1]  # annealed, then at the target
    for line, C in zip(lines, Cs):
        if C < 50.0:
            assert f"C={C:.4g} (annealing towards C=50)  primal=" in line
        else:
            assert "C=50  primal=" in line and "annealing" not in line
    EGCRF(C=50.0, annealing=False, max_iter=3, tol=1e-2, verbose=1).fit(X, y)
    assert "annealing" not in capsys.readouterr().out


# ------------------------------------------------------------------ errors
def test_bad_inputs_raise_clear_errors():
    X, y = make_chains(n=4, seed=21)
    crf = EGCRF()
    with pytest.raises(ValueError, match="X has 4 examples but y has 3"):
        crf.fit(X, y[:3])
    with pytest.raises(ValueError, match=r"y\[2\]: expected 2 labels \(one per token\), got 3"):
        crf.fit(X, y[:2] + [np.append(y[2], 0)] + y[3:])
    with pytest.raises(ValueError, match="sequence 1 has 4 feature columns"):
        crf.fit([X[0], np.ones((2, 4))] + X[2:], y)
    bad = [x.copy() for x in X]
    bad[3][0, 0] = np.nan
    with pytest.raises(ValueError, match="sequence 3: features contain NaN"):
        crf.fit(bad, y)
    bad[3][0, 0] = np.inf
    with pytest.raises(ValueError, match="NaN or infinity"):
        crf.fit(bad, y)
    with pytest.raises(TypeError, match="labels mix types: example 1"):
        crf.fit(X, [y[0], ["a"] * len(y[1])] + y[2:])
    with pytest.raises(TypeError, match="labels mix types"):
        crf.fit(X, [list(y[0][:-1]) + ["a"]] + y[1:])
    for C in (0, -1.0):
        with pytest.raises(ValueError, match="'C' parameter"):
            EGCRF(C=C).fit(X, y)
    Xf, yf = make_flat(n=10)
    with pytest.raises(ValueError, match=r"inconsistent numbers of samples: \[10, 9\]"):
        crf.fit(Xf, yf[:9])
    fitted = EGCRF(max_iter=2, tol=0).fit(Xf, yf)
    with pytest.raises(ValueError, match="X has 4 features, but EGCRF is expecting 5"):
        fitted.predict(np.ones((2, 4)))
    with pytest.raises(ValueError, match="fitted on a 2-D array"):
        fitted.predict(X)
    assert fitted.score(Xf, yf + 10) == 0.0  # unseen labels are simply wrong


def test_structure_without_marginals_is_refused():
    class NoMarginals(MulticlassStructure):
        marginals = None
        kernel_ops = MulticlassStructure.kernel_ops.without("marginals")

    X, y = make_flat(n=10)
    with pytest.raises(UnsupportedOperation, match="NoMarginals does not support marginals"):
        EGCRF(structure=NoMarginals()).fit(X, y)
    with pytest.raises(ValueError, match="structure"):
        EGCRF(structure="hypergraph").fit(X, y)


def test_a_worker_lost_during_a_fit_stops_it_cleanly(every_job_on_the_cluster):
    """A worker process killed in the middle of a batch fit on a cluster takes its chunk
    (scattered there alone) and that chunk's dual variables with it: the fit stops with a
    WorkerLostError that says so, and the estimator keeps no partial model (not the
    weights of the passes before, which a callback saw), only what it had before fit."""
    distributed = pytest.importorskip("dask.distributed")
    X, y = make_chains(n=20, seed=18)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        victim = next(iter(client.run(os.getpid).values()))
        seen = []

        def kill_after_the_second_pass(epoch, estimator):
            seen.append(estimator.coef_.copy())
            if epoch == 2:
                os.kill(victim, signal.SIGKILL)

        model = EGCRF(solver="batch", max_iter=6, tol=0, n_jobs=2, C=0.5)
        with joblib.parallel_config(backend="dask"), \
                pytest.raises(WorkerLostError, match="a dask worker was lost during the fit"):
            model.fit(X, y, callback=kill_after_the_second_pass)
    assert len(seen) >= 2  # the passes before did run and showed their weights
    assert not hasattr(model, "coef_") and not hasattr(model, "classes_")
    assert model.get_params()["C"] == 0.5
