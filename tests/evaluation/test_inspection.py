"""Models read by name: named weights, explain_weights, pruning and the compact pickle."""

import pickle

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline

from sklearn_struct import L1M3N, EGCRF, EGStructuredSVM, StructuredPerceptron
from sklearn_struct.inspection import explain_weights
from sklearn_struct.preprocessing import SequenceDictVectorizer

WORDS = [["the", "cat", "sat"], ["a", "dog", "ran", "home"], ["the", "dog", "sat"],
         ["a", "cat", "ran"]]
TAGS = [["D", "N", "V"], ["D", "N", "V", "N"], ["D", "N", "V"], ["D", "N", "V"]]


def _tokens(words):
    return [[{"w": word, "suffix": word[-1:], "len": len(word)} for word in sentence]
            for sentence in words]


@pytest.fixture(scope="module")
def pipe():
    return make_pipeline(SequenceDictVectorizer(), EGCRF(C=5.0, random_state=0)).fit(
        _tokens(WORDS), [np.array(t) for t in TAGS])


def test_named_weights_match_the_matrices_by_vocabulary(pipe):
    vec, crf = pipe[0], pipe[-1]
    named = crf.named_weights(pipe[:-1].get_feature_names_out())
    labels = crf.classes_.tolist()
    expected = {(name, label): crf.coef_[labels.index(label), column]
                for name, column in vec.vocabulary_.items() for label in labels
                if crf.coef_[labels.index(label), column] != 0}
    assert named["state_features_"] == expected
    assert len(expected) == np.count_nonzero(crf.coef_) > 0
    assert named["transition_features_"] == {
        (a, b): crf.transition_[i, j] for i, a in enumerate(labels) for j, b in enumerate(labels)}
    # the attributes name unnamed columns as scikit-learn does
    assert crf.transition_features_ == named["transition_features_"]
    assert set(crf.state_features_) == {(f"x{vec.vocabulary_[name]}", label)
                                        for name, label in expected}


def test_named_weights_bad_names(pipe):
    with pytest.raises(ValueError, match="feature_names holds 2 names but the model has"):
        pipe[-1].named_weights(["a", "b"])


def test_multiclass_has_state_features_only():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.2], [0.1, 1.0]])
    clf = EGCRF(C=10.0, random_state=0).fit(X, ["u", "v", "u", "v"])
    assert clf.state_features_[("x0", "u")] == clf.coef_[0, 0]
    assert not hasattr(clf, "transition_features_")
    with pytest.raises(AttributeError, match="has no transition_features_"):
        clf.transition_features_


@pytest.mark.parametrize("top", [1, 2, 50])
def test_explain_weights_against_sorting(pipe, top):
    explanation = explain_weights(pipe, top=top)
    named = pipe[-1].named_weights(pipe[:-1].get_feature_names_out())
    expected = []
    for label in pipe[-1].classes_:
        weights = {f: w for (f, lab), w in named["state_features_"].items() if lab == label}
        expected += [(label, f, weights[f]) for f in sorted(weights, key=lambda f: -weights[f])
                     if weights[f] > 0][:top]
        expected += [(label, f, weights[f]) for f in sorted(weights, key=weights.get)
                     if weights[f] < 0][:top]
    assert explanation.state == expected
    transitions = named["transition_features_"]
    descending = sorted(transitions.items(), key=lambda item: -item[1])
    ascending = sorted(transitions.items(), key=lambda item: item[1])
    assert explanation.transition == (
        [(a, b, w) for (a, b), w in descending if w > 0][:top]
        + [(a, b, w) for (a, b), w in ascending if w < 0][:top])
    for label, feature, weight in explanation.state:
        assert f"{weight:+10.4f}  {feature}" in explanation.text
    assert explanation.text.startswith("Transitions")


def test_explain_weights_bad_top(pipe):
    with pytest.raises(ValueError, match="top must be a positive int"):
        explain_weights(pipe, top=0)


def _chain_data(seed=0, n=30, n_features=400):
    rng = np.random.RandomState(seed)
    X = [rng.rand(4, n_features) for _ in range(n)]
    y = [rng.randint(0, 3, 4) for _ in range(n)]
    return X, y


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("Estimator", [EGCRF, EGStructuredSVM, StructuredPerceptron])
def test_pickle_holds_the_weights_once(Estimator):
    X, y = _chain_data()
    params = {"max_iter": 3}
    model = Estimator(**params).fit(X, y)
    size = len(pickle.dumps(model))
    assert model.weights_.nbytes < size < model.weights_.nbytes + 6000
    loaded = pickle.loads(pickle.dumps(model))
    for name in ("coef_", "transition_", "start_transition_", "end_transition_"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(model, name))
        assert np.shares_memory(getattr(loaded, name), loaded.weights_)
    for a, b in zip(loaded.predict(X), model.predict(X)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_prune_weights_and_sparse_pickle():
    X, y = _chain_data(n_features=4000)
    crf = EGCRF(max_iter=3, random_state=0).fit(X, y)
    before = crf.weights_.copy()
    full_size = len(pickle.dumps(crf))
    threshold = np.quantile(np.abs(before), 0.9)
    assert crf.prune_weights(threshold) is crf
    np.testing.assert_array_equal(crf.weights_, np.where(np.abs(before) < threshold, 0, before))
    assert np.count_nonzero(crf.coef_) == np.count_nonzero(crf.weights_[:crf.coef_.size])
    size = len(pickle.dumps(crf))
    assert size < 0.2 * full_size  # 10% of the weights, 12 bytes each instead of 8
    loaded = pickle.loads(pickle.dumps(crf))
    np.testing.assert_array_equal(loaded.weights_, crf.weights_)
    assert np.shares_memory(loaded.coef_, loaded.weights_)
    assert crf.prune_weights(0.0).weights_.tolist() == loaded.weights_.tolist()
    with pytest.raises(ValueError, match="threshold must be a non-negative number"):
        crf.prune_weights(-1.0)


def test_l1m3n_is_not_pruned():
    assert not hasattr(L1M3N(), "prune_weights")
