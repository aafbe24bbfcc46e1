"""The three L1-M3N solvers against the full LP with every output enumerated."""

import itertools

import numpy as np
import pytest
from _qp_reference import enumerated_l1_lp

from sklearn_struct.solvers.adaptive_m3n import adaptive_m3n
from sklearn_struct.solvers.cutting_plane import LPSolverError, l1_cutting_plane
from sklearn_struct.solvers.loss import StructuredLoss
from sklearn_struct.solvers.subgradient import (
    aggregated_lower_bound,
    l1_hinge_lower_bound,
    l1_proximal_subgradient,
)
from sklearn_struct.structures import MulticlassStructure, UnsupportedOperation
from sklearn_struct.structures.chain.structure import ChainStructure


def multiclass_problem(seed=0, n=40, d=6, K=3):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, d))
    W = rng.standard_normal((K, d))
    W[:, d // 2:] = 0.0  # half the features are irrelevant
    Y = (X @ W.T + 0.8 * rng.standard_normal((n, K))).argmax(axis=1)
    structure = MulticlassStructure()
    batch = structure.make_batch(X, K)
    outputs = [[np.array([k]) for k in range(K)]] * n
    return structure, batch, Y, [Y[i:i + 1] for i in range(n)], outputs


def chain_problem(seed=1, n=12, d=4, K=2):
    rng = np.random.RandomState(seed)
    lengths = rng.randint(2, 5, size=n)
    X = [rng.standard_normal((T, d)) for T in lengths]
    Ys = [(x[:, 0] + 0.5 * rng.standard_normal(len(x)) > 0).astype(np.int64) for x in X]
    structure = ChainStructure(start_end=True)
    batch = structure.make_batch(X, K)
    outputs = [[np.array(y) for y in itertools.product(range(K), repeat=T)] for T in lengths]
    return structure, batch, np.concatenate(Ys), Ys, outputs


def enumerated_lp(problem, C=None, radius=None):
    """P1 (with C) or P1' (with radius) written out over every output, dense, solved by HiGHS."""
    structure, batch, _, Ys, outputs = problem
    rows, losses, owners = [], [], []
    for i, (y_true, candidates) in enumerate(zip(Ys, outputs)):
        sub = structure.take(batch, [i])
        z_true = structure.encode(sub, y_true)
        part_losses = structure.part_losses(sub, y_true)
        for y in candidates:
            z = structure.encode(sub, y)
            rows.append(structure.expected_features(sub, z_true - z))
            losses.append(z @ part_losses)
            owners.append(i)
    return enumerated_l1_lp(rows, losses, owners, batch.n_samples, C=C, radius=radius)


@pytest.fixture(scope="module", params=["multiclass", "chain"])
def problem(request):
    return multiclass_problem() if request.param == "multiclass" else chain_problem()


@pytest.mark.parametrize("C", [0.05, 0.5, 5.0])
def test_cutting_plane_matches_full_lp(problem, C):
    structure, batch, Y, _, _ = problem
    result = l1_cutting_plane(StructuredLoss(structure, batch, Y, "hinge"), C, epsilon=1e-8)
    optimum, w_full = enumerated_lp(problem, C=C)
    assert result.converged
    assert abs(result.objective - optimum) <= 1e-4 * optimum
    assert result.lower_bound <= optimum * (1 + 1e-9)
    # Sparse solution with exact zeros, supported where the full LP is.
    assert np.count_nonzero(result.coef) == np.count_nonzero(np.abs(w_full) > 1e-9)
    assert np.count_nonzero(result.coef) < batch.n_weights


@pytest.mark.parametrize("C", [0.05, 0.5])
def test_batch_subgradient_is_certified_against_full_lp(problem, C):
    structure, batch, Y, _, _ = problem
    result = l1_proximal_subgradient(StructuredLoss(structure, batch, Y, "hinge"), C, max_iter=2000,
                                     tol=1e-3)
    optimum, _ = enumerated_lp(problem, C=C)
    assert result.converged  # measured: 260-560 steps at C=0.5, 1-2 at C=0.05 (w = 0)
    # the certificate is valid and the objective is within tol of the optimum
    assert result.lower_bound <= optimum * (1 + 1e-9)
    assert optimum * (1 - 1e-9) <= result.objective <= optimum * (1 + 1e-3) / (1 - 1e-3)
    assert np.count_nonzero(result.coef) < batch.n_weights


def test_online_subgradient_within_one_percent(problem):
    structure, batch, Y, _, _ = problem
    result = l1_proximal_subgradient(
        StructuredLoss(structure, batch, Y, "hinge"), 0.5, max_iter=200, tol=1e-4, online=True,
        random_state=np.random.RandomState(0),
    )
    optimum, _ = enumerated_lp(problem, C=0.5)
    # measured: 0.47% (multiclass) and 0.29% (chain) above the optimum after 200 epochs
    assert optimum * (1 - 1e-9) <= result.objective <= 1.01 * optimum
    assert result.lower_bound <= optimum * (1 + 1e-9)


@pytest.mark.parametrize("C", [0.05, 0.5, 5.0])
def test_em_is_certified_against_full_lp(problem, C):
    structure, batch, Y, _, _ = problem
    hinge = StructuredLoss(structure, batch, Y, "hinge")
    result = adaptive_m3n(hinge, C, tol=1e-3)
    optimum, _ = enumerated_lp(problem, C=C)
    assert result.converged  # measured: 9-19 EM iterations, 0 when w = 0 is optimal
    assert result.lower_bound <= optimum * (1 + 1e-9)
    assert optimum * (1 - 1e-9) <= result.objective <= optimum * (1 + 1e-3) / (1 - 1e-3)
    assert result.objective == pytest.approx(
        np.abs(result.coef).sum() + C * hinge.evaluate(result.coef)[0].sum())


def test_em_threshold_discards_weights_exactly():
    structure, batch, Y, _, _ = multiclass_problem()
    result = adaptive_m3n(StructuredLoss(structure, batch, Y, "hinge"), 0.5, max_em_iter=40,
                          tol=0.0,
                          inner_max_iter=30, tau_threshold=1e-2)
    discarded = result.tau == 0.0
    assert discarded.any()
    np.testing.assert_array_equal(result.coef[discarded], 0.0)


def test_em_certifies_zero_weights_without_any_m3n_step():
    problem = multiclass_problem()
    structure, batch, Y, _, _ = problem
    hinge = StructuredLoss(structure, batch, Y, "hinge")
    g0 = hinge.evaluate(np.zeros(batch.n_weights))[1]
    C_min = 1.0 / np.abs(g0).max()
    below = adaptive_m3n(hinge, 0.99 * C_min)
    # one pass over the data, at w = 0, certifies it
    assert below.converged and below.n_iter == 1 and not below.coef.any()
    assert enumerated_lp(problem, C=0.99 * C_min)[0] == pytest.approx(below.objective)
    # three classes tie at w = 0, so the exact threshold is above C_min: go well past it
    assert np.abs(enumerated_lp(problem, C=10.0 * C_min)[1]).sum() > 0.0
    above = adaptive_m3n(hinge, 10.0 * C_min)
    assert above.converged and above.n_iter > 0 and above.coef.any()


def test_dual_certificates_are_lower_bounds(problem):
    """Random dual points (marginals of random scores) never bound above the LP optimum."""
    structure, batch, Y, _, _ = problem
    hinge = StructuredLoss(structure, batch, Y, "hinge")
    rng = np.random.RandomState(0)
    for C in (0.05, 0.5, 5.0):
        optimum, w_opt = enumerated_lp(problem, C=C)
        pairs = []
        for _ in range(6):
            scores = structure.part_scores(batch, rng.standard_normal(batch.n_weights))
            pairs.append(hinge.dual_pair(structure.marginals(batch, scores)[0]))
            loss, G = pairs[-1]
            # sum_i H_i(w) >= L + w . G at every w
            assert hinge.evaluate(w_opt)[0].sum() >= loss + w_opt @ G - 1e-9
            assert l1_hinge_lower_bound(C, loss, G, hinge.nonnegative, optimum) <= optimum + 1e-9
        combined = aggregated_lower_bound(C, [p[0] for p in pairs], [p[1] for p in pairs],
                                          hinge.nonnegative)
        assert combined <= optimum + 1e-9
        assert combined >= max(l1_hinge_lower_bound(C, loss, G, hinge.nonnegative)
                               for loss, G in pairs) - 1e-9


def test_hinge_matches_enumeration(problem):
    structure, batch, Y, Ys, outputs = problem
    w = np.random.RandomState(3).standard_normal(batch.n_weights)
    hinge, subgradient, _ = StructuredLoss(structure, batch, Y, "hinge").evaluate(w)
    parallel = StructuredLoss(structure, batch, Y, "hinge", n_jobs=2).evaluate(w)
    np.testing.assert_allclose(parallel[0], hinge)
    np.testing.assert_allclose(parallel[1], subgradient)
    for i, (y_true, candidates) in enumerate(zip(Ys, outputs)):
        sub = structure.take(batch, [i])
        scores = structure.part_scores(sub, w)
        z_true = structure.encode(sub, y_true)
        best = max(
            structure.encode(sub, y) @ (scores + structure.part_losses(sub, y_true))
            for y in candidates
        )
        assert hinge[i] == pytest.approx(best - z_true @ scores)


def test_lp_failure_is_reported(monkeypatch):
    from sklearn_struct.solvers import cutting_plane

    class Failed:
        status, x, message, fun = 4, None, "Numerical difficulties encountered", None

    monkeypatch.setattr(cutting_plane, "linprog", lambda *a, **k: Failed())
    structure, batch, Y, _, _ = multiclass_problem()
    with pytest.raises(LPSolverError, match="status 4.*Numerical difficulties"):
        l1_cutting_plane(StructuredLoss(structure, batch, Y, "hinge"), 1.0)


def test_structure_without_loss_augmented_inference():
    class NoInference(MulticlassStructure):
        argmax = marginals = project = None
        kernel_ops = None

    structure = NoInference()
    batch = structure.make_batch(np.eye(3), 2)
    with pytest.raises(UnsupportedOperation, match="loss_augmented_argmax"):
        StructuredLoss(structure, batch, np.array([0, 1, 0]), "hinge")


def test_bad_C():
    structure, batch, Y, _, _ = multiclass_problem(n=5)
    hinge = StructuredLoss(structure, batch, Y, "hinge")
    with pytest.raises(ValueError, match="C must be > 0"):
        l1_proximal_subgradient(hinge, 0.0)
    with pytest.raises(ValueError, match="C must be > 0"):
        adaptive_m3n(hinge, -1.0)


@pytest.mark.parametrize("C", [0.5, 5.0])
def test_p1_solution_solves_the_ball_form_at_its_norm(problem, C):
    """The user guide's mapping: P1 at C solves P1' (the paper's L1 ball) at ||w*_C||_1."""
    structure, batch, Y, _, _ = problem
    hinge = StructuredLoss(structure, batch, Y, "hinge")
    _, w = enumerated_lp(problem, C=C)
    radius = np.abs(w).sum()
    ball_optimum, _ = enumerated_lp(problem, radius=radius)
    assert hinge.evaluate(w)[0].mean() == pytest.approx(ball_optimum, rel=1e-6, abs=1e-9)
