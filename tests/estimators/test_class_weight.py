"""``class_weight`` of the EG estimators: label weights in the CRF's likelihood and the hinge.

An example's loss term is weighted by the mean class weight of its units' true labels.  Where
that weight is an integer shared by every unit of an example, a fit equals the fit on the
data with the example repeated; with flat inputs it is scikit-learn's ``class_weight``.
"""

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.utils.class_weight import compute_class_weight

from sklearn_struct import EGCRF, EGStructuredSVM
from sklearn_struct.persistence import dump, load

ESTIMATORS = [EGCRF, EGStructuredSVM]
#: Fits certified to a relative gap of 1e-10: two fits of one objective then agree in it to
#: 2e-10 (the hinge's EG converges slowly that far; its working-set solver does not).
TIGHT = {EGCRF: dict(tol=1e-10, max_iter=5000, random_state=0),
         EGStructuredSVM: dict(solver="working_set", tol=1e-10, max_iter=500, random_state=0)}


def _flat(n=90, seed=0):
    rng = np.random.RandomState(seed)
    y = rng.randint(0, 3, n)
    X = rng.randn(n, 4)
    X[np.arange(n), y] += 1.0
    return X, y


def _chains(n=24, seed=1):
    """Sequences of labels 0 and 1 only, and sequences of label 2 only."""
    rng = np.random.RandomState(seed)
    X, y = [], []
    for i in range(n):
        T = rng.randint(1, 5)
        labels = np.full(T, 2) if i % 3 == 0 else rng.randint(0, 2, T)
        x = rng.randn(T, 3)
        x[np.arange(T), labels] += 1.0
        X.append(x)
        y.append(labels)
    return X, y


def _assert_same_optimum(weighted, repeated):
    """Two fits of one objective: equal primal values to 1e-8, and weights within what their
    certified gaps allow (the objective is 1-strongly convex in ``w``)."""
    for fit in (weighted, repeated):
        assert fit.duality_gap_ <= 1e-10 * abs(fit.primal_objective_)
    rel = abs(weighted.primal_objective_ - repeated.primal_objective_)
    assert rel <= 1e-8 * abs(repeated.primal_objective_)
    bound = np.sqrt(2 * weighted.duality_gap_) + np.sqrt(2 * repeated.duality_gap_)
    assert np.linalg.norm(weighted.weights_ - repeated.weights_) <= bound + 1e-12


@pytest.mark.parametrize("Estimator", ESTIMATORS)
def test_flat_class_weights_equal_repeated_samples(Estimator):
    X, y = _flat()
    weights = {0: 1, 1: 3, 2: 2}
    repeats = np.array([weights[label] for label in y])
    weighted = Estimator(C=0.5, class_weight=weights, **TIGHT[Estimator]).fit(X, y)
    repeated = Estimator(C=0.5, **TIGHT[Estimator]).fit(np.repeat(X, repeats, axis=0),
                                                        np.repeat(y, repeats))
    _assert_same_optimum(weighted, repeated)


@pytest.mark.parametrize("Estimator", ESTIMATORS)
def test_chain_class_weights_equal_repeated_sequences(Estimator):
    """Sequences all of label 2 weigh 3: three copies of each."""
    X, y = _chains()
    weighted = Estimator(C=0.5, class_weight={2: 3}, **TIGHT[Estimator]).fit(X, y)
    copies = [3 if (labels == 2).all() else 1 for labels in y]
    X_rep = [x for x, k in zip(X, copies) for _ in range(k)]
    y_rep = [labels for labels, k in zip(y, copies) for _ in range(k)]
    repeated = Estimator(C=0.5, **TIGHT[Estimator]).fit(X_rep, y_rep)
    _assert_same_optimum(weighted, repeated)


def test_flat_class_weights_are_scikit_learn_s():
    X, y = _flat(n=150, seed=3)
    for class_weight in ({0: 0.5, 1: 2.0, 2: 1.0}, "balanced"):
        lr = LogisticRegression(C=0.3, fit_intercept=False, class_weight=class_weight,
                                tol=1e-12, max_iter=10000).fit(X, y)
        crf = EGCRF(C=0.3, class_weight=class_weight, tol=1e-10, max_iter=3000,
                    random_state=0).fit(X, y)
        assert np.abs(crf.coef_ - lr.coef_).max() / np.abs(lr.coef_).max() < 1e-3
        np.testing.assert_allclose(crf.predict_proba(X), lr.predict_proba(X), atol=1e-4)


@pytest.mark.parametrize("Estimator", ESTIMATORS)
def test_scikit_learn_s_class_weight_check_with_a_constant_feature(Estimator):
    """check_class_weight_classifiers' data and weights, with a column of ones standing
    for the intercept that these models do not have."""
    for n_centers in (2, 3):
        X, y = make_blobs(centers=n_centers, random_state=0, cluster_std=20)
        X = np.column_stack([X, np.full(len(X), 10.0)])
        X_train, X_test, y_train, _ = train_test_split(X, y, test_size=0.5, random_state=0)
        class_weight = {0: 1000, **{k: 0.0001 for k in range(1, n_centers)}}
        model = Estimator(class_weight=class_weight, max_iter=1000, random_state=0)
        assert np.mean(model.fit(X_train, y_train).predict(X_test) == 0) > 0.87
        unweighted = Estimator(max_iter=1000, random_state=0).fit(X_train, y_train)
        assert np.mean(unweighted.predict(X_test) == 0) < 0.7


@pytest.mark.parametrize("Estimator", ESTIMATORS)
def test_a_sequence_weighs_the_mean_of_its_labels_weights(Estimator):
    """Mixed sequences take the mean of their tokens' weights, times sample_weight;
    ``"balanced"`` counts tokens, as scikit-learn counts samples."""
    X, y = _chains(seed=4)
    sample_weight = np.linspace(0.5, 2.0, len(X))
    tokens = np.concatenate(y)
    for class_weight in ({0: 1.0, 1: 4.0, 2: 0.5}, "balanced"):
        per_class = compute_class_weight(class_weight, classes=np.arange(3), y=tokens)
        means = np.array([per_class[labels].mean() for labels in y])
        ours = Estimator(C=0.5, class_weight=class_weight, tol=0, max_iter=3,
                         random_state=0).fit(X, y, sample_weight=sample_weight)
        by_hand = Estimator(C=0.5, tol=0, max_iter=3, random_state=0).fit(
            X, y, sample_weight=means * sample_weight)
        np.testing.assert_array_equal(ours.weights_, by_hand.weights_)


def test_class_weights_by_label_name_and_partial_fit():
    X, y = _chains(seed=5)
    names = np.array(["B", "I", "O"])
    y_named = [names[labels] for labels in y]
    class_weight = {"B": 2.0, "O": 0.5}
    named = EGCRF(C=0.5, class_weight=class_weight, tol=0, max_iter=3, random_state=0)
    indexed = EGCRF(C=0.5, class_weight={0: 2.0, 2: 0.5}, tol=0, max_iter=3, random_state=0)
    np.testing.assert_array_equal(named.fit(X, y_named).weights_, indexed.fit(X, y).weights_)
    first = EGCRF(C=0.5, class_weight=class_weight, tol=0, max_iter=3, random_state=0)
    first.partial_fit(X, y_named, classes=names)
    by_hand = EGCRF(C=0.5, tol=0, max_iter=3, random_state=0).partial_fit(
        X, y_named, classes=names,
        sample_weight=[np.mean([{"B": 2.0, "I": 1.0, "O": 0.5}[t] for t in labels])
                       for labels in y_named])
    np.testing.assert_array_equal(first.weights_, by_hand.weights_)


def test_class_weights_round_trip(tmp_path):
    X, y = _chains(seed=6)
    model = EGCRF(C=0.5, class_weight={0: 1.5, 2: 0.25}, tol=0, max_iter=2,
                  random_state=0).fit(X, y)
    dump(model, tmp_path / "model.npz")
    loaded = load(tmp_path / "model.npz")
    assert loaded.get_params()["class_weight"] == {0: 1.5, 2: 0.25}
    np.testing.assert_array_equal(loaded.predict(X)[0], model.predict(X)[0])


def test_bad_class_weights_are_refused_before_any_work():
    X, y = _chains(seed=7)
    with pytest.raises(ValueError, match=r"class_weight names labels \[5\] that are not among "
                                         r"the classes \[0, 1, 2\]"):
        EGCRF(class_weight={5: 2.0}).fit(X, y)
    with pytest.raises(ValueError, match="class_weight must be non-negative and finite; "
                                         "label 1 has weight -1.0"):
        EGCRF(class_weight={1: -1.0}).fit(X, y)
    with pytest.raises(ValueError, match="the outputs of DependencyTreeStructure are not "
                                         "labels; weigh examples with sample_weight"):
        EGCRF(structure="dependency", class_weight="balanced").fit(
            [np.array([[4, 5, 6], [5, 6, 7]])], [np.array([0, 1])])
    with pytest.raises(ValueError, match="partial labels .* leave unknown"):
        EGCRF(class_weight={0: 2.0}).fit(X, [[None] + list(labels[1:]) for labels in y])
    with pytest.raises(ValueError, match="'balanced' needs the label counts of the whole "
                                         "training set, which partial_fit does not see"):
        EGCRF(class_weight="balanced").partial_fit(X, y, classes=[0, 1, 2])
    with pytest.raises(ValueError, match="class_weight is zero for every example"):
        EGCRF(class_weight={0: 0.0, 1: 0.0, 2: 0.0}).fit(X, y)
    with pytest.raises(ValueError, match="'class_weight' parameter of EGCRF must be"):
        EGCRF(class_weight="equal").fit(X, y)
