"""The pruned chain against enumeration, against the exact chain, and fitted by the estimators."""

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_struct import EGCRF, StructuredPerceptron
from sklearn_struct.structures import ChainStructure, PrunedChainStructure
from sklearn_struct.utils import check_structure

#: Words 0..2 are feature columns 0..2; column 3 is a shape feature; a token without a word
#: column is unknown.  Word 0 takes label a, word 1 labels b or c, the others any label.
ALLOWED = np.array([[True, False, False], [False, True, True], [True, True, True],
                    [True, True, True]])


def _sentence(rng, words):
    x = np.zeros((len(words), 4))
    for t, word in enumerate(words):
        if word >= 0:
            x[t, word] = 1.0
        x[t, 3] = rng.randn()
    return x


def _instances(rng):
    sentences = [[0, 1, -1], [1, 2], [-1]]
    X = [_sentence(rng, words) for words in sentences]
    y = [np.array(["a", "b", "c"]), np.array(["c", "a"]), np.array(["b"])]
    return X, y


@pytest.mark.parametrize("start_end", [True, False])
def test_conforms_against_enumeration(start_end):
    structure = PrunedChainStructure(word_features=[0, 1, 2], allowed_labels=ALLOWED,
                                     start_end=start_end, loss_weights=[1.0, 2.0, 0.5])
    weights = np.array([1.0, 2.0, 0.5])

    def loss(Y_true, Y):
        return float(np.sum(weights[Y_true] * (Y != Y_true)))
    report = check_structure(structure, _instances, loss=loss)
    for check in ("check_argmax", "check_marginals", "check_dynamic_program",
                  "check_kernel_ops", "check_part_losses", "check_take", "check_input_variants"):
        assert report[check] == "passed", (check, report[check])


def test_candidates_and_parts():
    structure = PrunedChainStructure(word_features=[0, 1, 2], allowed_labels=ALLOWED,
                                     start_end=False)
    batch = structure.make_batch([_sentence(np.random.RandomState(0), [0, 1, -1])], n_states=3)
    assert batch.labels.tolist() == [0, 1, 2, 0, 1, 2]
    # nodes 1 + 2 + 3, pairs 1 * 2 + 2 * 3: not 3 * 3 per position
    assert batch.part_offsets.tolist() == [0, 14]


def _random_chain_data(rng, n_sentences=6, n_states=3, n_features=4):
    X = [rng.randn(rng.randint(1, 5), n_features) for _ in range(n_sentences)]
    Y = np.concatenate([rng.randint(n_states, size=len(x)) for x in X])
    return X, Y


@pytest.mark.parametrize("start_end", [True, False])
def test_every_label_a_candidate_is_the_exact_chain(start_end):
    rng = np.random.RandomState(1)
    X, Y = _random_chain_data(rng)
    chain = ChainStructure(start_end=start_end)
    pruned = PrunedChainStructure(start_end=start_end, fallback_coverage=1.0).fit_dictionary(
        np.vstack(X), Y, 3)
    a, b = chain.make_batch(X, n_states=3), pruned.make_batch(X, n_states=3)
    w = rng.randn(a.n_weights)
    W = w[:12].reshape(3, 4)
    w_pruned = np.concatenate([W.T.ravel(), w[12:]])  # every pair in the support, by feature
    mu_a, log_z_a = chain.marginals(a, chain.part_scores(a, w))
    mu_b, log_z_b = pruned.marginals(b, pruned.part_scores(b, w_pruned))
    np.testing.assert_allclose(log_z_b, log_z_a, rtol=1e-10)
    node_a = np.concatenate(chain.output_space().unit_values(a, mu_a))
    node_b = np.concatenate(pruned.output_space().unit_values(b, mu_b))
    np.testing.assert_allclose(node_b, node_a, atol=1e-12)
    np.testing.assert_array_equal(pruned.argmax(b, pruned.part_scores(b, w_pruned)),
                                  chain.argmax(a, chain.part_scores(a, w)))
    F_a, F_b = chain.expected_features(a, mu_a), pruned.expected_features(b, mu_b)
    np.testing.assert_allclose(F_b[:12], F_a[:12].reshape(3, 4).T.ravel(), atol=1e-10)
    np.testing.assert_allclose(F_b[12:], F_a[12:], atol=1e-10)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_fit_equals_exact_chain_with_every_label_a_candidate():
    rng = np.random.RandomState(2)
    X, Y = _random_chain_data(rng, n_sentences=12)
    y = np.split(np.array(list("abc"))[Y], np.cumsum([len(x) for x in X])[:-1])
    # the same optimum; the duals differ (tied transitions against one per position)
    options = dict(C=1.0, max_iter=300, tol=1e-12, random_state=0)
    exact = EGCRF(structure=ChainStructure(), **options).fit(X, y)
    pruned = EGCRF(structure=PrunedChainStructure(fallback_coverage=1.0), **options).fit(X, y)
    np.testing.assert_allclose(pruned.coef_, exact.coef_.T.ravel(), atol=1e-5)  # by feature
    np.testing.assert_allclose(pruned.transition_, exact.transition_, atol=1e-5)


def _tagging_data(rng, n_sentences):
    """Words 0..5 (columns 0..5), word w tagged w % 3 or, for word 5, label 3 or 4 by the
    sign of column 6; word 6 (column 7) is seen once: rare."""
    X, y = [], []
    for _ in range(n_sentences):
        words = rng.randint(6, size=rng.randint(2, 6))
        x = np.zeros((len(words), 8))
        x[np.arange(len(words)), words] = 1.0
        x[:, 6] = rng.randn(len(words))
        labels = np.where(words == 5, np.where(x[:, 6] > 0, 3, 4), words % 3)
        X.append(sp.csr_matrix(x))
        y.append(labels)
    x = np.zeros((1, 8))
    x[0, 7] = 1.0
    return X + [sp.csr_matrix(x)], y + [np.array([2])]


@pytest.mark.parametrize("estimator", [EGCRF(C=10.0, max_iter=50, random_state=0),
                                       StructuredPerceptron(max_iter=10, random_state=0)])
def test_estimators_fit_the_dictionary_and_predict_with_it(estimator):
    X, y = _tagging_data(np.random.RandomState(3), 40)
    estimator.set_params(structure=PrunedChainStructure(word_features=list(range(6)) + [7],
                                                        min_count=2))
    estimator.fit(X, y)
    allowed = estimator.structure_.allowed_labels
    assert allowed[0].tolist() == [True, False, False, False, False]
    assert allowed[5].tolist() == [False, False, False, True, True]
    assert allowed[6].tolist() == allowed[7].tolist() == [False, False, True, False, False]
    assert estimator.structure.allowed_labels is None  # the parameter is left as given
    # weights only for the (feature, label) pairs of the training tokens' candidates
    support = estimator.structure_.weight_support
    assert estimator.coef_.shape == (len(support),) and len(support) < 5 * 8
    assert estimator.score(X, y) > 0.95
    # an unknown word takes the fallback: the labels seen on rare words
    unknown = sp.csr_matrix(np.array([[0, 0, 0, 0, 0, 0, 1.0, 0]]))
    assert estimator.predict([unknown])[0].tolist() == [2]
    marginals = estimator.predict_marginals(X[:1])[0] if hasattr(
        estimator, "predict_marginals") else None
    if marginals is not None:
        np.testing.assert_allclose(marginals.sum(axis=1), 1.0)


def test_bad_input_is_refused_before_any_work():
    X = [np.eye(3)]
    with pytest.raises(ValueError, match="word_features\\[1\\] = 7 is not a column"):
        PrunedChainStructure(word_features=[0, 7]).fit_dictionary(X[0], np.zeros(3, int), 2)
    with pytest.raises(TypeError, match="word_features must be a 1-D array"):
        PrunedChainStructure(word_features=[[0]]).fit_dictionary(X[0], np.zeros(3, int), 2)
    with pytest.raises(ValueError, match="min_count must be a positive integer"):
        PrunedChainStructure(min_count=0).fit_dictionary(X[0], np.zeros(3, int), 2)
    with pytest.raises(ValueError, match="fallback_coverage must be a number in"):
        PrunedChainStructure(fallback_coverage=0).fit_dictionary(X[0], np.zeros(3, int), 2)
    with pytest.raises(ValueError, match="allowed_labels is unset"):
        PrunedChainStructure().make_batch(X, n_states=2)
    with pytest.raises(ValueError, match="boolean array of shape \\(2, 2\\)"):
        PrunedChainStructure(word_features=[0], allowed_labels=np.ones((3, 2), bool)
                             ).make_batch(X, n_states=2)
    structure = PrunedChainStructure(word_features=[0],
                                     allowed_labels=np.array([[True, False], [True, True]]))
    batch = structure.make_batch(X, n_states=2)
    with pytest.raises(ValueError, match="sequence 0, position 0: label 1 is not among"):
        structure.check_outputs(batch, np.array([1, 0, 0]))


def test_weight_support_is_the_pairs_of_features_and_candidates():
    X = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0]]))
    structure = PrunedChainStructure(word_features=[0, 1], min_count=1).fit_dictionary(
        X, np.array([0, 2]), 3)
    # token 0: features 0 and 2, candidate 0; token 1: feature 1, candidate 2
    assert structure.weight_support.tolist() == [0 * 3 + 0, 1 * 3 + 2, 2 * 3 + 0]
    batch = structure.make_batch([X], n_states=3)
    assert batch.n_weights == 3 + 9 + 6
    # a test token with feature 2 and word 1 has no weight for (2, label 2): it scores 0
    test = structure.make_batch([sp.csr_matrix(np.array([[0.0, 1.0, 5.0]]))], n_states=3)
    w = np.zeros(test.n_weights)
    w[:3] = [1.0, 10.0, 100.0]
    assert structure.part_scores(test, w)[0] == 10.0
