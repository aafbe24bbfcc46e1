"""Early stopping: the model of every pass scored on a validation set, the best kept.

The references are the estimator's own models of every pass, recorded by a ``fit``
callback (the weights and ``score`` on the validation set), and the same fit run with the
held-out examples given as ``X_val``, ``y_val``.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import EGCRF, EGStructuredSVM, StructuredPerceptron


def _sequences(n=60, T=5, seed=0):
    """Noisy two-label sequences: the validation score moves from pass to pass."""
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(T, 4)) for _ in range(n)]
    y = [np.where(x[:, 0] + 0.8 * rng.normal(size=T) > 0, "a", "b") for x in X]
    return X, y


ESTIMATORS = {
    "crf-online": lambda: EGCRF(C=100.0, tol=0.0, max_iter=30),
    "crf-batch": lambda: EGCRF(C=100.0, tol=0.0, max_iter=60, solver="batch"),
    "svm-online": lambda: EGStructuredSVM(C=100.0, tol=0.0, max_iter=30),
    "svm-working-set": lambda: EGStructuredSVM(C=100.0, tol=0.0, max_iter=30,
                                               solver="working_set"),
    "perceptron": lambda: StructuredPerceptron(max_iter=30),
}


def _fit_recording(model, X, y, **fit_params):
    """Fit, recording the weights and the model of every pass."""
    weights, models = {}, {}

    def record(pass_number, estimator):
        weights[pass_number] = estimator.weights_.copy()
        models[pass_number] = estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y, callback=record, **fit_params)
    return weights


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_the_best_pass_is_kept_exactly(name):
    X, y = _sequences()
    X_val, y_val = _sequences(30, seed=1)
    model = ESTIMATORS[name]().set_params(early_stopping=True, n_iter_no_change=3,
                                          random_state=0)
    scores = []

    def record(pass_number, estimator):
        scores.append(estimator.score(X_val, y_val))
        weights[pass_number] = estimator.weights_.copy()

    weights = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y, callback=record, X_val=X_val, y_val=y_val)
    np.testing.assert_allclose(model.validation_scores_, scores, rtol=0, atol=1e-12)
    assert len(model.validation_scores_) == model.n_iter_
    best = int(np.argmax(scores)) + 1  # the first of the best
    assert model.best_iteration_ == best
    np.testing.assert_array_equal(model.weights_, weights[best])
    assert model.score(X_val, y_val) == pytest.approx(max(scores), abs=1e-12)
    # it stopped at most n_iter_no_change passes after the best
    assert model.n_iter_ <= best + 3


@pytest.mark.parametrize("name", ["crf-online", "perceptron"])
def test_validation_fraction_holds_out_the_examples_it_names(name):
    """Holding out ``validation_fraction`` equals giving those examples as ``X_val``."""
    X, y = _sequences()
    held = np.sort(np.random.RandomState(0).permutation(len(X))[:int(np.ceil(0.2 * len(X)))])
    kept = np.setdiff1d(np.arange(len(X)), held)
    params = dict(early_stopping=True, validation_fraction=0.2, n_iter_no_change=3,
                  random_state=0)
    held_out = ESTIMATORS[name]().set_params(**params)
    _fit_recording(held_out, X, y)
    given = ESTIMATORS[name]().set_params(**params)
    _fit_recording(given, [X[i] for i in kept], [y[i] for i in kept],
                   X_val=[X[i] for i in held], y_val=[y[i] for i in held])
    np.testing.assert_array_equal(held_out.validation_scores_, given.validation_scores_)
    np.testing.assert_array_equal(held_out.weights_, given.weights_)
    assert held_out.best_iteration_ == given.best_iteration_


def test_without_early_stopping_nothing_changes():
    X, y = _sequences()
    plain = _fit_recording(EGCRF(C=100.0, tol=0.0, max_iter=5, random_state=0), X, y)
    model = EGCRF(C=100.0, tol=0.0, max_iter=5, random_state=0, early_stopping=True,
                  n_iter_no_change=10)
    _fit_recording(model, X, y)
    refit = EGCRF(C=100.0, tol=0.0, max_iter=5, random_state=0)
    _fit_recording(refit, X, y)
    np.testing.assert_array_equal(refit.weights_, plain[5])
    assert not hasattr(refit, "best_iteration_")
    # a later fit without early stopping drops the attributes of an earlier one
    model.set_params(early_stopping=False)
    _fit_recording(model, X, y)
    assert not hasattr(model, "best_iteration_") and not hasattr(model, "validation_scores_")


def test_labels_unseen_in_training_count_as_wrong_in_validation():
    X, y = _sequences()
    y_val = [np.where(labels == "a", "a", "z") for labels in y[:10]]
    model = StructuredPerceptron(max_iter=5, early_stopping=True, n_iter_no_change=5)
    _fit_recording(model, X, y, X_val=X[:10], y_val=y_val)
    assert model.validation_scores_.max() <= np.mean(np.concatenate(y_val) == "a") + 1e-12


# ----------------------------------------------------------------------- refusals
@pytest.mark.parametrize("make", [ESTIMATORS["crf-online"], ESTIMATORS["perceptron"]])
def test_bad_early_stopping_input_is_refused_before_any_work(make):
    X, y = _sequences(4)
    with pytest.raises(ValueError, match=r"validation_fraction=0\.8 of 4 examples leaves 0 to "
                                         r"train on"):
        make().set_params(early_stopping=True, validation_fraction=0.8).fit(X, y)
    with pytest.raises(ValueError, match="give both X_val and y_val"):
        make().set_params(early_stopping=True).fit(X, y, X_val=X)
    with pytest.raises(ValueError, match="set early_stopping=True to use them"):
        make().fit(X, y, X_val=X, y_val=y)
    partial = [np.array([None, *labels[1:]], dtype=object) for labels in y]
    with pytest.raises(ValueError, match="partial labels .* are learnt without it"):
        make().set_params(early_stopping=True).fit(X, partial)
    with pytest.raises(ValueError, match=r"expected 5 labels \(one per token\), got 4"):
        make().set_params(early_stopping=True).fit(X, y, X_val=X[:1], y_val=[y[0][:4]])
    with pytest.raises(ValueError, match="n_iter_no_change"):
        make().set_params(early_stopping=True, n_iter_no_change=0).fit(X, y)
