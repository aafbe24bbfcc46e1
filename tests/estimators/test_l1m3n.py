"""The L1M3N estimator: scikit-learn contract, feature selection, chains, bad input."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_selection import SelectFromModel
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.svm import LinearSVC
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_struct.datasets import make_correlated_chains
from sklearn_struct.eg import EGStructuredSVM
from sklearn_struct.l1m3n import L1M3N
from sklearn_struct.solvers.cutting_plane import LPSolverError, l1_cutting_plane
from sklearn_struct.solvers.loss import StructuredLoss
from sklearn_struct.structures import MulticlassStructure, UnsupportedOperation
from sklearn_struct.structures.chain.structure import ChainStructure


def sparse_flat(n=120, d=12, n_relevant=3, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X[:, :n_relevant].sum(axis=1) + 0.3 * rng.standard_normal(n) > 0, "pos", "neg")
    return X, y


def sparse_chains(n=40, d=10, n_relevant=2, seed=0):
    rng = np.random.RandomState(seed)
    X, y = [], []
    for _ in range(n):
        T = rng.randint(3, 7)
        x = rng.standard_normal((T, d))
        X.append(x)
        y.append(np.where(x[:, :n_relevant].sum(axis=1) > 0, "B", "A"))
    return X, y


@pytest.mark.parametrize(
    "params",
    [dict(solver="cutting_plane", C=0.05), dict(solver="subgradient", C=0.05, max_iter=300),
     dict(solver="em", C=0.05, max_em_iter=20)],
    ids=["cutting_plane", "subgradient", "em"],
)
def test_flat_l1m3n_discards_irrelevant_features_where_l2_svm_does_not(params):
    X, y = sparse_flat()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = L1M3N(**params).fit(X, y)
    assert model.classes_.tolist() == ["neg", "pos"]
    assert model.coef_.shape == (2, 12)
    assert model.support_[:3].all()
    assert model.support_[3:].sum() <= 2
    np.testing.assert_array_equal(model.get_support(indices=True), np.flatnonzero(model.support_))
    assert model.score(X, y) >= 0.8
    # An L2 SVM keeps every feature.
    assert np.count_nonzero(LinearSVC(C=1.0).fit(X, y).coef_) == 12


def test_cutting_plane_estimator_solves_p1():
    X, y = sparse_flat(n=60)
    model = L1M3N(C=0.5, epsilon=1e-8).fit(X, y)
    structure = MulticlassStructure()
    batch = structure.make_batch(X, 2)
    reference = l1_cutting_plane(
        StructuredLoss(structure, batch, (y == "pos").astype(np.int64), "hinge"), 0.5, epsilon=1e-8
    )
    np.testing.assert_allclose(model.weights_, reference.coef)
    assert model.objective_ == pytest.approx(reference.objective)
    hinge = StructuredLoss(structure, batch, (y == "pos").astype(np.int64), "hinge").evaluate(
        model.weights_)[0]
    assert model.objective_ == pytest.approx(np.abs(model.weights_).sum() + 0.5 * hinge.sum())


def test_select_from_model_keeps_the_support():
    X, y = sparse_flat()
    selector = SelectFromModel(L1M3N(C=0.05)).fit(X, y)
    np.testing.assert_array_equal(selector.get_support(), selector.estimator_.support_)
    assert selector.transform(X).shape[1] == selector.estimator_.support_.sum()
    pipeline = make_pipeline(SelectFromModel(L1M3N(C=0.05)), LinearSVC()).fit(X, y)
    assert pipeline.score(X, y) >= 0.9


@pytest.mark.parametrize("solver", ["cutting_plane", "subgradient", "em"])
def test_grid_search_over_C_means_the_same_for_every_solver(solver):
    X, y = sparse_flat(n=80)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        search = GridSearchCV(L1M3N(solver=solver, max_iter=200), {"C": [0.01, 0.3]},
                              cv=3).fit(X, y)
    assert search.best_params_["C"] == 0.3  # C = 0.01 empties the model
    assert not search.best_estimator_.set_params(C=0.01).fit(X, y).weights_.any()


def test_regularisation_path_is_monotone_in_sparsity():
    X, y = sparse_flat()
    counts = [np.count_nonzero(L1M3N(C=C).fit(X, y).weights_) for C in (0.01, 0.1, 1.0, 10.0)]
    assert counts[0] == 0
    assert counts == sorted(counts)


@pytest.mark.parametrize("solver", ["cutting_plane", "subgradient", "em"])
def test_chains(solver):
    X, y = sparse_chains()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = L1M3N(solver=solver, C=0.02, max_iter=300 if solver == "subgradient" else None
                      ).fit(X, y)
    assert isinstance(model.structure_, ChainStructure)
    predictions = model.predict(X[:3])
    assert [p.shape for p in predictions] == [x.shape[:1] for x in X[:3]]
    assert model.score(X, y) >= 0.9
    assert model.transition_.shape == (2, 2)
    assert model.support_[:2].all()
    assert model.support_[2:].sum() <= 2


def test_em_tau_threshold_removes_irrelevant_features_of_the_synthetic_chains():
    # Section 5.1 data (30 relevant of 100 features).  With the threshold, the
    # irrelevant features leave the model within the paper's 15 EM iterations;
    # without it their variances only fade geometrically (measured at C=0.02: 1 vs
    # 70 irrelevant features left) for the same objective, and the L2 M3N uses
    # every feature.
    X, y = make_correlated_chains(n_samples=80, random_state=0)
    fits = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for tau_threshold in (1e-3, 0.0):
            fits[tau_threshold] = L1M3N(solver="em", C=0.02, max_em_iter=15,
                                        tau_threshold=tau_threshold, random_state=0).fit(X, y)
        l2 = EGStructuredSVM(C=0.1, random_state=0).fit(X, y)
    pruned, unpruned = fits[1e-3], fits[0.0]
    assert pruned.support_[30:].sum() <= 2
    assert pruned.support_[:30].sum() >= 5
    assert unpruned.support_[30:].sum() >= 20
    assert pruned.objective_ == pytest.approx(unpruned.objective_, rel=3e-3)
    assert np.all(pruned.weights_[pruned.tau_ == 0.0] == 0.0)
    assert np.any(l2.coef_ != 0.0, axis=0)[30:].all()


def test_warm_start_reuses_the_solution():
    X, y = sparse_flat(n=60)
    model = L1M3N(C=0.5, epsilon=1e-8, warm_start=True).fit(X, y)
    cold_objective = model.objective_
    # The cutting plane restarts its working sets (they belong to the old examples)
    # but separates first at the previous weights; the optimum is the same.
    model.fit(X, y)
    assert model.objective_ == pytest.approx(cold_objective, rel=1e-8)
    em = L1M3N(solver="em", C=0.5, max_em_iter=3, warm_start=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        em.fit(X, y)
        first = em.objective_
        em.fit(X, y)  # continues from the previous variances
    assert em.objective_ <= first * (1 + 1e-3)
    with pytest.raises(ValueError, match="warm_start"):
        model.fit(X[:, :5], y)


def test_parallel_inference_and_determinism():
    X, y = sparse_chains(n=20)
    one = L1M3N(solver="subgradient", C=0.5, online=True, max_iter=5, random_state=3)
    two = L1M3N(solver="subgradient", C=0.5, online=True, max_iter=5, random_state=3, n_jobs=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        np.testing.assert_allclose(one.fit(X, y).weights_, two.fit(X, y).weights_)
        again = L1M3N(solver="subgradient", C=0.5, online=True, max_iter=5, random_state=3)
        np.testing.assert_array_equal(again.fit(X, y).weights_, one.weights_)


def test_convergence_warning():
    X, y = sparse_flat(n=60)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        L1M3N(C=10.0, max_iter=1).fit(X, y)
    with pytest.warns(ConvergenceWarning, match="duality gap"):
        L1M3N(solver="subgradient", max_iter=2).fit(X, y)


@pytest.mark.parametrize("C", [0.0, -1.0])
def test_bad_C(C):
    X, y = sparse_flat(n=20)
    with pytest.raises(InvalidParameterError, match="C"):
        L1M3N(solver="subgradient", C=C).fit(X, y)


def test_structure_without_loss_augmented_inference():
    class NoLossAugmented(MulticlassStructure):
        # loss-augmented inference follows from argmax and part_losses: leave argmax out
        argmax = project = None
        kernel_ops = None

    X, y = sparse_flat(n=20)
    with pytest.raises(UnsupportedOperation, match="loss_augmented_argmax.*L1M3N"):
        L1M3N(structure=NoLossAugmented()).fit(X, y)

    class NoMarginals(MulticlassStructure):
        marginals = project = None
        kernel_ops = MulticlassStructure.kernel_ops.without("marginals")

    L1M3N(structure=NoMarginals(), C=0.1).fit(X, y)  # the cutting plane needs no marginals
    with pytest.raises(UnsupportedOperation, match="marginals"):
        L1M3N(structure=NoMarginals(), solver="em").fit(X, y)


def test_highs_failure_is_a_clear_error(monkeypatch):
    from sklearn_struct.solvers import cutting_plane

    class Infeasible:
        status, x, fun, message = 2, None, None, "The problem is infeasible."

    monkeypatch.setattr(cutting_plane, "linprog", lambda *a, **k: Infeasible())
    X, y = sparse_flat(n=20)
    with pytest.raises(LPSolverError, match="status 2.*infeasible"):
        L1M3N().fit(X, y)


def test_bad_input_names_the_example():
    X, y = sparse_chains(n=5)
    y[3] = y[3][:-1]
    with pytest.raises(ValueError, match=r"y\[3\]"):
        L1M3N().fit(X, y)
    X, y = sparse_flat(n=20)
    model = L1M3N(C=0.3).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :4])
