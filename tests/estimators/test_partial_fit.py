"""partial_fit of EGCRF, EGStructuredSVM and StructuredPerceptron.

EG: each call is the proximal step ``argmin_w 1/2 ||w - v||^2 + C sum loss`` over the new
(and kept) examples, checked against scipy's L-BFGS on the multinomial log loss written
out in numpy; with every example kept, the calls over chunks give ``fit``'s solution.
Perceptron: one epoch per call, the calls over consecutive chunks one ``fit`` epoch.
"""

import warnings

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_struct import EGCRF, EGStructuredSVM, StructuredPerceptron
from sklearn_struct.structures import SemiMarkovStructure

C = 2.0
CLASSES = [0, 1, 2]


def _flat_data(seed=0, n=40, n_features=4):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, n_features))
    y = rng.randint(0, 3, size=n)
    return X, y


def _chain_data(seed=0, n=24, n_features=3):
    rng = np.random.RandomState(seed)
    X = [rng.standard_normal((rng.randint(1, 6), n_features)) for _ in range(n)]
    y = [rng.randint(0, 3, size=len(x)) for x in X]
    return X, y


def _chunks(X, y, n_chunks):
    bounds = np.linspace(0, len(y), n_chunks + 1).astype(int)
    return [(X[a:b], y[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


def _proximal_reference(X, y, center, C, sample_weight=None):
    """``argmin_W 1/2 ||W - center||^2 + C sum_i s_i (-log softmax(W x_i)[y_i])`` by L-BFGS."""
    n_classes, n_features = center.shape
    sample_weight = np.ones(len(y)) if sample_weight is None else sample_weight

    def objective(flat):
        W = flat.reshape(n_classes, n_features)
        scores = X @ W.T
        log_z = np.logaddexp.reduce(scores, axis=1)
        losses = log_z - scores[np.arange(len(y)), y]
        residual = np.exp(scores - log_z[:, None])
        residual[np.arange(len(y)), y] -= 1.0
        gradient = (W - center) + C * (sample_weight[:, None] * residual).T @ X
        return (0.5 * np.sum((W - center) ** 2) + C * sample_weight @ losses,
                gradient.ravel())

    result = scipy.optimize.minimize(objective, center.ravel(), jac=True, method="L-BFGS-B",
                                     options=dict(gtol=1e-12, ftol=1e-16, maxiter=10000))
    return result.x.reshape(n_classes, n_features), result.fun


def _tight(estimator=EGCRF, **params):
    return estimator(C=C, tol=1e-10, max_iter=5000, random_state=0, **params)


# ----------------------------------------------------------------- EG: the proximal step
def test_memory_zero_is_the_proximal_step():
    X, y = _flat_data()
    model = _tight(partial_fit_memory=0).partial_fit(X[:20], y[:20], classes=CLASSES)
    center = model.coef_.copy()
    W, objective = _proximal_reference(X[:20], y[:20], np.zeros_like(center), C)
    np.testing.assert_allclose(center, W, atol=1e-5)
    assert model.partial_fit(X[20:], y[20:]) is model
    W, objective = _proximal_reference(X[20:], y[20:], center, C)
    np.testing.assert_allclose(model.coef_, W, atol=1e-5)
    # the objectives and the gap reported are the proximal problem's
    assert model.primal_objective_ == pytest.approx(objective, rel=1e-8)
    assert 0 <= model.duality_gap_ <= 1e-10 * model.primal_objective_


def test_duality_gap_of_the_proximal_problem_goes_to_zero():
    X, y = _flat_data()
    model = EGCRF(C=C, tol=0, max_iter=60, partial_fit_memory=0, random_state=0)
    model.partial_fit(X[:20], y[:20], classes=CLASSES).partial_fit(X[20:], y[20:])
    gaps = model.history_["gap"]
    # tol=0: a gap after every pass, until one rounds to 0 (converged at tol=0)
    np.testing.assert_array_equal(model.history_["passes"], np.arange(1, len(gaps) + 1))
    assert len(gaps) == 60 or (len(gaps) > 50 and gaps[-1] <= 0)
    assert np.all(gaps >= -1e-12 * model.history_["primal"])
    assert gaps[-1] < 1e-6 * gaps[0]


def test_partial_fit_after_fit_continues_from_its_weights():
    X, y = _flat_data()
    model = _tight(partial_fit_memory=0).fit(X[:20], y[:20])
    center = model.coef_.copy()
    model.partial_fit(X[20:], y[20:])  # classes fixed by fit
    W, _ = _proximal_reference(X[20:], y[20:], center, C)
    np.testing.assert_allclose(model.coef_, W, atol=1e-5)


def test_sample_weight_counts_as_repeated_examples():
    X, y = _flat_data()
    weight = np.ones(20)
    weight[:5] = 2.0
    weighted = _tight(partial_fit_memory=0).partial_fit(X[:20], y[:20], classes=CLASSES,
                                                        sample_weight=weight)
    repeated = _tight(partial_fit_memory=0).partial_fit(
        np.vstack([X[:20], X[:5]]), np.concatenate([y[:20], y[:5]]), classes=CLASSES)
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, atol=1e-5)
    W, _ = _proximal_reference(X[:20], y[:20], np.zeros((3, 4)), C, weight)
    np.testing.assert_allclose(weighted.coef_, W, atol=1e-5)


@pytest.mark.parametrize("data", [_flat_data, _chain_data])
@pytest.mark.parametrize("estimator", [EGCRF, EGStructuredSVM])
def test_unbounded_memory_over_chunks_is_the_full_fit(estimator, data):
    X, y = data()
    tol = 1e-8 if estimator is EGCRF else 1e-5
    full = estimator(C=1.0, tol=tol, max_iter=5000, random_state=0).fit(X, y)
    model = estimator(C=1.0, tol=tol, max_iter=5000, partial_fit_memory=None, random_state=0)
    for X_chunk, y_chunk in _chunks(X, y, 3):
        model.partial_fit(X_chunk, y_chunk, classes=CLASSES)
    # the last call's problem is the full one: objectives within the certified gaps
    assert model.primal_objective_ == pytest.approx(
        full.primal_objective_, abs=2 * (model.duality_gap_ + full.duality_gap_) + 1e-9)
    if estimator is EGCRF:  # 1-strongly convex: ||w - w*||^2 / 2 <= gap for both
        bound = np.sqrt(2 * model.duality_gap_) + np.sqrt(2 * full.duality_gap_)
        assert np.linalg.norm(model.weights_ - full.weights_) <= bound < 1e-2


def _segment_data(seed=0, n=15):
    """IOB2 sequences of one chunk each (for semi-Markov chains)."""
    rng = np.random.RandomState(seed)
    X, y = [], []
    for length in rng.randint(1, 5, size=n):
        tags = np.array(["O"] * length, dtype=object)
        start = rng.randint(length)
        tags[start:start + rng.randint(1, 3)] = "I-A"
        tags[start] = "B-A"
        X.append(rng.standard_normal((length, 3)))
        y.append(tags.astype(str))
    return X, y


PARTIAL_FIT_DATA = {
    "chain": lambda: (*_chain_data(n=15), None, CLASSES),
    "multiclass": lambda: (*_flat_data(n=15), None, CLASSES),
    "semimarkov": lambda: (*_segment_data(), SemiMarkovStructure(), ["B-A", "I-A", "O"]),
}
EG_SOLVERS = {
    "crf-online": (EGCRF, {}),
    "crf-batch": (EGCRF, {"solver": "batch"}),
    "svm-online": (EGStructuredSVM, {}),
    "svm-online-plain": (EGStructuredSVM, {"smoothing": False}),
    "svm-batch": (EGStructuredSVM, {"solver": "batch"}),
}


@pytest.mark.parametrize("data", sorted(PARTIAL_FIT_DATA))
@pytest.mark.parametrize("solver", sorted(EG_SOLVERS))
def test_partial_fit_equals_fit(solver, data):
    """Issue 47: with every example kept, the calls over three chunks reach ``fit``'s
    objective, each run converged to ``tol`` (the plain hinge, batch EG's or online EG's
    without smoothing, used to crawl from the kept examples' saturated duals)."""
    estimator, params = EG_SOLVERS[solver]
    X, y, structure, classes = PARTIAL_FIT_DATA[data]()
    tol = 1e-4
    params = dict(C=0.1, tol=tol, max_iter=1000, random_state=0, structure=structure, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # fit converges to tol
        full = estimator(**params).fit(X, y)
    model = estimator(partial_fit_memory=None, **params)
    for X_chunk, y_chunk in _chunks(X, y, 3):
        model.partial_fit(X_chunk, y_chunk, classes=classes)
    assert model.duality_gap_ <= tol * abs(model.primal_objective_), model.n_iter_
    # both primals bound the optimum from above and both duals from below
    assert abs(model.primal_objective_ - full.primal_objective_) <= (
        max(model.duality_gap_, full.duality_gap_) + 1e-12 * abs(full.primal_objective_))


def test_bounded_memory_keeps_the_last_examples():
    X, y = _chain_data()
    unbounded = _tight(partial_fit_memory=None)
    large = _tight(partial_fit_memory=len(X))
    small = _tight(partial_fit_memory=5)
    for X_chunk, y_chunk in _chunks(X, y, 3):
        for model in (unbounded, large, small):
            model.partial_fit(X_chunk, y_chunk, classes=CLASSES)
    # a memory as large as the data keeps everything
    np.testing.assert_allclose(large.weights_, unbounded.weights_, atol=1e-10)
    # a small one solves a different (block-coordinate) problem, close to it
    assert not np.allclose(small.weights_, unbounded.weights_, atol=1e-6)
    assert np.abs(small.weights_ - unbounded.weights_).max() < 0.5
    # the objective of its last call is over the new chunk and the 5 kept examples
    assert small.history_["primal"][-1] < unbounded.history_["primal"][-1]


def test_chain_memory_zero_stays_near_the_full_fit():
    X, y = _chain_data()
    model = EGCRF(C=1.0, tol=1e-8, max_iter=2000, partial_fit_memory=0, random_state=0)
    full = EGCRF(C=1.0, tol=1e-8, max_iter=2000, random_state=0).fit(X, y)
    for X_chunk, y_chunk in _chunks(X, y, 3):
        model.partial_fit(X_chunk, y_chunk, classes=CLASSES)
    assert model.score(X, y) == pytest.approx(full.score(X, y), abs=0.15)
    np.testing.assert_allclose(np.concatenate(model.predict_marginals(X)).sum(axis=1), 1.0)


def test_working_set_solver_has_no_partial_fit():
    assert not hasattr(EGStructuredSVM(solver="working_set"), "partial_fit")
    assert hasattr(EGStructuredSVM(solver="batch"), "partial_fit")


def test_partial_fit_memory_is_validated():
    X, y = _flat_data()
    with pytest.raises(InvalidParameterError, match="partial_fit_memory"):
        EGCRF(partial_fit_memory=-1).partial_fit(X, y, classes=CLASSES)


def test_fit_after_partial_fit_starts_afresh():
    X, y = _flat_data()
    model = _tight().partial_fit(X[:20], y[:20], classes=CLASSES).fit(X, y)
    np.testing.assert_allclose(model.coef_, _tight().fit(X, y).coef_, atol=1e-8)


# ------------------------------------------------------------------------ classes, shapes
ESTIMATORS = [EGCRF, EGStructuredSVM, StructuredPerceptron]


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_first_call_needs_classes(estimator):
    X, y = _flat_data()
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        estimator().partial_fit(X, y)
    Xs, ys = _chain_data()
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        estimator().partial_fit(Xs, ys)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_classes_are_fixed_by_the_first_call(estimator):
    X, y = _flat_data()
    model = estimator().partial_fit(X[:10], np.zeros(10, dtype=int), classes=[0, 1, 2, 7])
    np.testing.assert_array_equal(model.classes_, [0, 1, 2, 7])  # one class seen is enough
    model.partial_fit(X[10:20], y[10:20])  # omitted later
    model.partial_fit(X[20:], y[20:], classes=[7, 2, 1, 0])  # or the same labels
    with pytest.raises(ValueError, match=r"sample 3 has label 5, which is not among"):
        model.partial_fit(X[:4], [0, 1, 2, 5])
    with pytest.raises(ValueError, match="is not the same as the classes_"):
        model.partial_fit(X[:4], y[:4], classes=[0, 1, 2])
    Xs, ys = _chain_data()
    chain = estimator().partial_fit(Xs[:5], ys[:5], classes=CLASSES)
    bad = [labels.copy() for labels in ys[5:8]]
    bad[1][0] = 9
    with pytest.raises(ValueError, match=r"example 1 \(position 0\) has label 9"):
        chain.partial_fit(Xs[5:8], bad)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_features_and_input_form_must_match(estimator):
    X, y = _flat_data()
    model = estimator().partial_fit(X[:20], y[:20], classes=CLASSES)
    with pytest.raises(ValueError, match="X has 3 features, but"):
        model.partial_fit(X[20:, :3], y[20:])
    Xs, ys = _chain_data()
    with pytest.raises(ValueError, match="was fitted on a 2-D array"):
        model.partial_fit(Xs, ys)
    chain = estimator().partial_fit(Xs[:5], ys[:5], classes=CLASSES)
    with pytest.raises(ValueError, match="X has 4 features, but .* is expecting 3"):
        chain.partial_fit([np.ones((2, 4))], [np.array([0, 1])])


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_a_structure_set_between_calls_is_refused(estimator):
    """set_params(structure=...) between calls was ignored: the calls went on training the
    first call's chain."""
    Xs, ys = _chain_data()
    model = estimator().partial_fit(Xs[:5], ys[:5], classes=CLASSES)
    weights = model.weights_.copy()
    model.set_params(structure="tree")
    with pytest.raises(ValueError, match=r"partial_fit: structure='tree' is not the structure "
                                         r"of the first call \(ChainStructure"):
        model.partial_fit(Xs[5:8], ys[5:8])
    np.testing.assert_array_equal(model.weights_, weights)
    model.set_params(structure="chain")  # the same kind of structure: goes on
    model.partial_fit(Xs[5:8], ys[5:8])


# -------------------------------------------------------------------------- perceptron
@pytest.mark.parametrize("data", sorted(PARTIAL_FIT_DATA))
@pytest.mark.parametrize("average", [True, False])
def test_perceptron_chunks_are_one_fit_epoch(data, average):
    X, y, structure, classes = PARTIAL_FIT_DATA[data]()
    params = dict(shuffle=False, average=average, structure=structure)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        full = StructuredPerceptron(max_iter=1, **params).fit(X, y)
    model = StructuredPerceptron(**params)
    for X_chunk, y_chunk in _chunks(X, y, 4):
        assert model.partial_fit(X_chunk, y_chunk, classes=classes) is model
    np.testing.assert_array_equal(model.weights_, full.weights_)
    assert model.n_iter_ == 1


def test_perceptron_partial_fit_after_warm_fit_is_the_next_epoch():
    X, y = _chain_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        two = StructuredPerceptron(max_iter=2, shuffle=False).fit(X, y)
        model = StructuredPerceptron(max_iter=1, shuffle=False, warm_start=True).fit(X, y)
    assert two.n_iter_ == 2  # the data are not separated after one epoch
    model.partial_fit(X, y)
    np.testing.assert_allclose(model.weights_, two.weights_, atol=1e-12)


def test_perceptron_partial_fit_after_fit_starts_from_its_weights():
    X, y = _chain_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = StructuredPerceptron(max_iter=1, shuffle=False, average=False).fit(X, y)
        two = StructuredPerceptron(max_iter=2, shuffle=False, average=False).fit(X, y)
    model.partial_fit(X, y)  # the last weights carry on (no average to restart)
    np.testing.assert_allclose(model.weights_, two.weights_, atol=1e-12)


def test_perceptron_sample_weight_scales_the_updates():
    X, y = _flat_data()
    weight = np.linspace(0.5, 2.0, len(y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        full = StructuredPerceptron(max_iter=1, shuffle=False).fit(X, y, sample_weight=weight)
    model = StructuredPerceptron(shuffle=False)
    for (X_chunk, y_chunk), w_chunk in zip(_chunks(X, y, 2), np.split(weight, 2)):
        model.partial_fit(X_chunk, y_chunk, classes=CLASSES, sample_weight=w_chunk)
    np.testing.assert_allclose(model.weights_, full.weights_, atol=1e-12)


def test_sparse_and_dense_tables_give_the_same_model():
    X, y = _flat_data()
    dense = _tight(partial_fit_memory=None)
    sparse = _tight(partial_fit_memory=None)
    for X_chunk, y_chunk in _chunks(X, y, 3):
        dense.partial_fit(X_chunk, y_chunk, classes=CLASSES)
        sparse.partial_fit(scipy.sparse.csr_matrix(X_chunk), y_chunk, classes=CLASSES)
    np.testing.assert_allclose(sparse.weights_, dense.weights_, atol=1e-12)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_first_call_labels_must_be_among_its_classes(estimator):
    X, y = _flat_data()
    with pytest.raises(ValueError, match=r"sample 1 has label 'z', which is not among"):
        estimator().partial_fit(X[:3], ["a", "z", "b"], classes=["a", "b"])
