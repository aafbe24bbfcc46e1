"""SMLogisticRegression, SMAdaBoostClassifier, fit_log_linear and the Cachopo text loader."""

import gzip
import warnings

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
from scipy.special import logsumexp
from sklearn.datasets import load_breast_cancer, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import Normalizer, StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_struct.datasets._cachopo import load_cachopo_text
from sklearn_struct.sm import SMAdaBoostClassifier, SMLogisticRegression, fit_log_linear
from sklearn_struct.solvers.sm import METHODS

# ----------------------------------------------------------------- scikit-learn contract


@parametrize_with_checks(
    [SMLogisticRegression(method=method) for method in METHODS]
    + [SMAdaBoostClassifier(), SMAdaBoostClassifier(multi_class="mh")]
)
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


# ----------------------------------------------------------------- same optimum as scikit-learn


def _objective(clf, X, y, C):
    """The scikit-learn objective divided by C, for any fitted linear classifier."""
    F = np.asarray(X @ clf.coef_.T) + clf.intercept_
    if F.shape[1] == 1:
        signs = np.where(y == clf.classes_[1], 1.0, -1.0)
        loss = np.logaddexp(0, -signs * F[:, 0]).sum()
    else:
        codes = np.searchsorted(clf.classes_, y)
        loss = (logsumexp(F, axis=1) - F[np.arange(len(y)), codes]).sum()
    return loss + (0.0 if np.isinf(C) else (clf.coef_**2).sum() / (2 * C))


def _ovr_objective(clf, X, y, C):
    """Sum over classes of the binary class-vs-rest objectives (one-vs-rest fits)."""
    total = 0.0
    for k, label in enumerate(clf.classes_):
        F = np.asarray(X @ clf.coef_[k]) + clf.intercept_[k]
        signs = np.where(y == label, 1.0, -1.0)
        total += np.logaddexp(0, -signs * F).sum() + clf.coef_[k] @ clf.coef_[k] / (2 * C)
    return total


def _counts(seed, n, d, n_classes):
    rng = np.random.RandomState(seed)
    X = sp.csr_matrix(rng.poisson(0.3, size=(n, d)).astype(float))
    scores = X @ rng.randn(d, n_classes) + 0.4 * rng.randn(n, n_classes)
    y = np.argmax(scores, axis=1) if n_classes > 2 else (scores[:, 0] > 0.2).astype(int)
    return X, y


def _cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _wine():
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X), y


DATASETS = {
    "cancer_dense_binary": (_cancer, 0.1),
    "counts_sparse_binary": (lambda: _counts(0, 300, 40, 2), 1.0),
    "wine_dense_3_classes": (_wine, 0.1),
    "counts_sparse_4_classes": (lambda: _counts(1, 200, 30, 4), 0.5),
}


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dataset", DATASETS)
def test_same_optimum_as_logistic_regression(dataset, method):
    make, C = DATASETS[dataset]
    X, y = make()
    clf = SMLogisticRegression(method=method, C=C, objective_tol=1e-12, max_iter=100000).fit(X, y)
    reference = LogisticRegression(C=C, solver="newton-cg", tol=1e-12, max_iter=1000)
    objective = _objective
    if len(np.unique(y)) > 2 and method in ("sm1", "sm2"):  # "auto" is one-vs-rest for these
        reference = OneVsRestClassifier(reference)
        objective = _ovr_objective
    reference.fit(X, y)
    if isinstance(reference, OneVsRestClassifier):
        reference.coef_ = np.vstack([e.coef_ for e in reference.estimators_])
        reference.intercept_ = np.concatenate([e.intercept_ for e in reference.estimators_])
    ours, theirs = objective(clf, X, y, C), objective(reference, X, y, C)
    assert abs(ours - theirs) <= 1e-6 * theirs
    assert ours == pytest.approx(clf.loss_history_[-1], rel=1e-10)
    np.testing.assert_array_equal(clf.predict(X), reference.predict(X))
    np.testing.assert_allclose(clf.predict_proba(X), reference.predict_proba(X), atol=1e-4)
    assert clf.coef_.shape == reference.coef_.shape
    assert clf.intercept_.shape == reference.intercept_.shape


@pytest.mark.parametrize("method", METHODS)
def test_unpenalised_matches_logistic_regression(method):
    X, y = _counts(2, 300, 10, 2)
    y[::5] = 1 - y[::5]  # label noise: the unpenalised optimum exists
    clf = SMLogisticRegression(method=method, penalty=None, objective_tol=1e-11,
                               max_iter=100000).fit(X, y)
    reference = LogisticRegression(C=np.inf, solver="newton-cg", tol=1e-12, max_iter=1000).fit(X, y)
    ours, theirs = _objective(clf, X, y, np.inf), _objective(reference, X, y, np.inf)
    assert abs(ours - theirs) <= 1e-6 * theirs
    np.testing.assert_array_equal(clf.predict(X), reference.predict(X))
    same = SMLogisticRegression(method=method, C=np.inf, objective_tol=1e-11,
                                max_iter=100000).fit(X, y)
    np.testing.assert_array_equal(same.coef_, clf.coef_)


# ----------------------------------------------------------------- behaviour


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("method", ["sm2", "sm3", "sm4", "sm5"])
def test_loss_history_decreases_monotonically(method):
    X, y = _counts(3, 150, 25, 3)
    for multi_class in ("multinomial", "ovr") if method != "sm2" else ("ovr",):
        clf = SMLogisticRegression(method=method, multi_class=multi_class, C=2.0,
                                   objective_tol=1e-9)
        clf.fit(X, y)
        history = clf.loss_history_
        assert len(history) == clf.n_iter_.max() + 1
        assert np.all(np.diff(history) <= 1e-12 * history[0])
        assert history[-1] < history[0]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_sparse_and_dense_inputs_give_the_same_model():
    X, y = _counts(4, 120, 15, 3)
    for method in METHODS:
        sparse = SMLogisticRegression(method=method, max_iter=200).fit(X, y)
        dense = SMLogisticRegression(method=method, max_iter=200).fit(X.toarray(), y)
        np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(sparse.loss_history_, dense.loss_history_, rtol=1e-12)


def test_coef_is_in_the_units_of_the_input_features():
    # X -> 10 X with C -> C / 100 has the optimum W / 10: the internal normalisation is undone
    X, y = _wine()
    small = SMLogisticRegression(method="sm4", C=1.0, objective_tol=1e-12, max_iter=50000).fit(X, y)
    large = SMLogisticRegression(method="sm4", C=0.01, objective_tol=1e-12,
                                 max_iter=50000).fit(10 * X, y)
    np.testing.assert_allclose(large.coef_, small.coef_ / 10.0, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(large.intercept_, small.intercept_, rtol=1e-5)


def test_warm_start_continues_from_the_previous_solution():
    X, y = _cancer()
    cold = SMLogisticRegression(method="sm3", C=0.5, objective_tol=1e-8, max_iter=20000).fit(X, y)
    warm = SMLogisticRegression(method="sm3", C=0.5, objective_tol=1e-8, warm_start=True,
                                max_iter=20000)
    warm.fit(X, y)
    first = warm.n_iter_[0]
    warm.fit(X, y)
    assert warm.n_iter_[0] < first
    assert warm.loss_history_[0] == pytest.approx(cold.loss_history_[-1], rel=1e-12)
    warm.set_params(C=1.0).fit(X, y)  # a path over C starts from the previous coefficients
    cold_path = SMLogisticRegression(method="sm3", C=1.0).fit(X, y)
    assert warm.loss_history_[0] < cold_path.loss_history_[0]


def test_multi_class_options():
    X, y = _wine()
    with pytest.raises(ValueError, match="sm1.*no multinomial form"):
        SMLogisticRegression(method="sm1", multi_class="multinomial").fit(X, y)
    ovr = SMLogisticRegression(method="sm3", multi_class="ovr", C=0.1, objective_tol=1e-10,
                               max_iter=10000)
    ovr.fit(X, y)
    assert ovr.n_iter_.shape == (3,)
    multinomial = SMLogisticRegression(method="sm3", C=0.1, objective_tol=1e-10).fit(X, y)
    assert multinomial.n_iter_.shape == (1,)
    reference = OneVsRestClassifier(LogisticRegression(C=0.1, tol=1e-12, max_iter=1000)).fit(X, y)
    np.testing.assert_allclose(ovr.predict_proba(X), reference.predict_proba(X), atol=1e-4)


def test_convergence_warning_and_verbose(capsys):
    X, y = _cancer()
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        SMLogisticRegression(method="sm5", max_iter=3, verbose=2).fit(X, y)
    out = capsys.readouterr().out
    assert "iteration 3" in out and "stopped at max_iter" in out


# ----------------------------------------------------------------- bad input


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_bad_input_errors():
    X, y = _cancer()
    with pytest.raises(ValueError, match="at least 2 classes.*got 1 class"):
        SMLogisticRegression().fit(X[:20], np.zeros(20))
    with pytest.raises(ValueError, match="at least 2 classes with positive sample_weight"):
        SMLogisticRegression().fit(X, y, sample_weight=(y == 1).astype(float))
    bad = X.copy()
    bad[7, 3] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity: example 7, feature 3"):
        SMLogisticRegression().fit(bad, y)
    bad[7, 3] = np.inf
    with pytest.raises(ValueError, match="example 7, feature 3 is inf"):
        SMLogisticRegression().fit(sp.csr_matrix(bad), y)
    fitted = SMLogisticRegression(max_iter=5).fit(X, y)
    with pytest.raises(ValueError, match="example 7"):
        fitted.predict(bad)
    with pytest.raises(TypeError, match=r"labels mix types: y\[1\] = 'a' is of type str"):
        SMLogisticRegression().fit(X[:20], [0, "a"] * 10)
    with pytest.raises(TypeError, match="labels mix types"):
        SMLogisticRegression().fit(X[:20], np.array([0, "a"] * 10, dtype=object))
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        SMLogisticRegression().fit(X[:20], np.linspace(0, 1, 20))
    with pytest.raises(ValueError, match="'C' parameter"):
        SMLogisticRegression(C=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="'method' parameter"):
        SMLogisticRegression(method="sm6").fit(X, y)
    with pytest.raises(ValueError, match="Negative values"):
        SMLogisticRegression().fit(X, y, sample_weight=-np.ones(len(y)))


# ----------------------------------------------------------------- exponential loss


def test_binary_adaboost_minimises_the_exponential_loss():
    rng = np.random.RandomState(0)
    X = np.sign(rng.randn(150, 6))  # +-1 weak hypotheses
    y = np.where(X @ rng.randn(6) + rng.randn(150) > 0, 1, -1)
    C = 2.0
    clf = SMAdaBoostClassifier(C=C, objective_tol=1e-12, max_iter=100000).fit(X, y)

    def objective(theta):
        return np.exp(-y * (X @ theta[:-1] + theta[-1])).sum() + theta[:-1] @ theta[:-1] / (2 * C)

    best = scipy.optimize.minimize(objective, np.zeros(7), method="BFGS", options={"gtol": 1e-10})
    assert clf.loss_history_[-1] == pytest.approx(best.fun, rel=1e-8)
    np.testing.assert_allclose(np.append(clf.coef_, clf.intercept_), best.x, rtol=1e-4, atol=1e-6)
    assert np.all(np.diff(clf.loss_history_) <= 1e-12 * clf.loss_history_[0])
    np.testing.assert_allclose(
        clf.predict_proba(X)[:, 1], 1 / (1 + np.exp(-2 * clf.decision_function(X)))
    )


@pytest.mark.parametrize("multi_class", ["m2", "mh"])
def test_multiclass_adaboost(multi_class):
    X, y = _wine()
    clf = SMAdaBoostClassifier(multi_class=multi_class, C=1.0, objective_tol=1e-8,
                               max_iter=5000).fit(X, y)
    assert clf.coef_.shape == (3, X.shape[1])
    assert np.all(np.diff(clf.loss_history_) <= 1e-12 * clf.loss_history_[0])
    assert clf.score(X, y) > 0.95
    np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0)
    np.testing.assert_array_equal(
        np.argmax(clf.predict_proba(X), axis=1), np.argmax(clf.decision_function(X), axis=1)
    )


# ----------------------------------------------------------------- section 8: GIS


def test_fit_log_linear():
    rng = np.random.RandomState(0)
    A = rng.rand(3, 8)
    A /= A.sum(axis=0)
    h = A @ rng.dirichlet(np.ones(8))
    result = fit_log_linear(A, h)
    np.testing.assert_allclose(A @ result.probabilities, h, atol=1e-10)
    assert result.converged and np.all(np.diff(result.dual_objective) >= -1e-14)
    with pytest.warns(ConvergenceWarning):
        fit_log_linear(A, h, method="gis", max_iter=2)
    with pytest.raises(ValueError, match="column 0 of A"):
        fit_log_linear(2 * A, h)
    with pytest.raises(ValueError, match="h must be positive"):
        fit_log_linear(A, h * 2)
    with pytest.raises(ValueError, match="prior"):
        fit_log_linear(A, h, prior=-np.ones(8))


# ----------------------------------------------------------------- text: loader and pipeline


def test_load_cachopo_text(tmp_path):
    path = tmp_path / "docs.txt.gz"
    with gzip.open(path, "wt") as handle:
        handle.write("course\tlectur homework exam\nfaculty\t\nstudent\thome page\n")
    docs = load_cachopo_text(path)
    assert docs.data == ["lectur homework exam", "", "home page"]
    assert list(docs.target) == ["course", "faculty", "student"]
    assert docs.target_names == ["course", "faculty", "student"]
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        load_cachopo_text(tmp_path / "missing.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text("course\tok\nno tab here\n")
    with pytest.raises(ValueError, match=r"bad.txt, line 2: expected 'LABEL<TAB>text'"):
        load_cachopo_text(bad)
    bad.write_text("course\tok\n\tno label\n")
    with pytest.raises(ValueError, match="line 2: empty label"):
        load_cachopo_text(bad)


def test_load_cachopo_text_on_the_shared_corpora(shared_data):
    train = load_cachopo_text(shared_data / "webkb_4univ_cachopo" / "webkb-train-stemmed.txt.gz")
    test = load_cachopo_text(shared_data / "webkb_4univ_cachopo" / "webkb-test-stemmed.txt.gz")
    assert len(train.data) == 1747 and len(test.data) == 1396  # README counts
    assert sum(label == "faculty" for label in test.target) == 374
    r8 = load_cachopo_text(shared_data / "reuters21578_r8_cachopo" / "r8-test-all-terms.txt.gz")
    assert len(r8.data) == 2189 and len(r8.target_names) == 8


def test_grid_search_over_c_and_method_in_a_text_pipeline(shared_data):
    docs = load_cachopo_text(shared_data / "webkb_4univ_cachopo" / "webkb-train-stemmed.txt.gz")
    keep = np.flatnonzero(np.isin(docs.target, ["faculty", "course"]))[::4]  # ~220 pages
    texts, labels = [docs.data[i] for i in keep], docs.target[keep]
    pipeline = Pipeline([
        ("counts", CountVectorizer(max_features=300)),
        ("frequencies", Normalizer(norm="l1")),  # h_j = N_j / N of section 4.6
        ("clf", SMLogisticRegression(objective_tol=1e-4)),
    ])
    search = GridSearchCV(
        pipeline, {"clf__C": [1.0, 100.0], "clf__method": ["sm3", "sm4", "sm5"]}, cv=3
    )
    search.fit(texts, labels)
    assert set(search.cv_results_["param_clf__method"]) == {"sm3", "sm4", "sm5"}
    assert search.best_score_ > 0.85
    assert set(search.predict(texts[:10])) <= {"faculty", "course"}


@pytest.mark.parametrize("make", [lambda: SMLogisticRegression(tol=1e-6),
                                  lambda: SMAdaBoostClassifier(tol=1e-6)])
def test_old_tol_name_is_refused_naming_objective_tol(make):
    with pytest.raises(TypeError, match="'tol' was renamed 'objective_tol'.*no duality gap"):
        make()


def test_fit_log_linear_old_tol_name_is_refused_naming_moment_tol():
    with pytest.raises(TypeError, match="'tol' was renamed 'moment_tol'"):
        fit_log_linear(np.eye(2), np.array([0.5, 0.5]), tol=1e-8)
