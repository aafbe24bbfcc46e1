"""StructuredPerceptron: against a plain-Python averaged perceptron, on every kind of structure."""

import numpy as np
import pytest

from sklearn_struct import ChainStructure, MulticlassStructure, StructuredPerceptron
from sklearn_struct.structures import DependencyTreeStructure, UnsupportedOperation


def _reference_weights(structure, X, y, orders, sample_weight=None):
    """The averaged perceptron written out: every iterate stored, then averaged."""
    codec = structure.output_space().codec(y)
    batch = structure.make_batch(X, n_states=codec.n_states)
    Y = codec.encode(batch, y)
    n = batch.n_samples
    sample_weight = np.ones(n) if sample_weight is None else sample_weight
    w = np.zeros(batch.n_weights)
    iterates, mistakes = [], []
    for order in orders:
        mistakes.append(0)
        for i in order:
            one = structure.take(batch, np.array([i]))
            units = slice(batch.unit_offsets[i], batch.unit_offsets[i + 1])
            predicted = structure.argmax(one, structure.part_scores(one, w))
            if not np.array_equal(predicted, Y[units]):
                mistakes[-1] += 1
                difference = structure.encode(one, Y[units]) - structure.encode(one, predicted)
                w = w + sample_weight[i] * structure.expected_features(one, difference)
            iterates.append(w)
    return w, np.mean(iterates, axis=0), mistakes


def _chain_data(rng, n_sequences=12, n_labels=3, n_features=5):
    X = [rng.standard_normal((rng.randint(1, 6), n_features)) for _ in range(n_sequences)]
    y = [rng.randint(0, n_labels, size=len(x)) for x in X]
    return X, y


def _dependency_data(rng):
    X = [rng.randint(4, 30, size=(n, 3)) for n in (1, 2, 4, 5, 3, 6)]
    y = [np.array([0]), np.array([0, 1]), np.array([2, 0, 2, 3]), np.array([0, 1, 2, 3, 3]),
         np.array([3, 3, 0]), np.array([2, 0, 2, 5, 2, 5])]
    return X, y


CASES = {
    "chain": (ChainStructure(), _chain_data),
    "dependency-projective": (DependencyTreeStructure(hash_bits=10), _dependency_data),
    "dependency-non-projective": (DependencyTreeStructure(projective=False, hash_bits=10),
                                  _dependency_data),
}


@pytest.mark.parametrize("average", [True, False])
@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_reference(case, average):
    structure, make_data = CASES[case]
    X, y = make_data(np.random.RandomState(0))
    model = StructuredPerceptron(structure=structure, max_iter=3, shuffle=False,
                                 average=average).fit(X, y)
    orders = [np.arange(len(X))] * model.n_iter_
    last, averaged, mistakes = _reference_weights(structure, X, y, orders)
    np.testing.assert_allclose(model.weights_, averaged if average else last,
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(model.history_["mistakes"], mistakes)
    assert mistakes[0] > 0


def test_multiclass_matches_reference_with_shuffling_and_sample_weight():
    rng = np.random.RandomState(1)
    X = rng.standard_normal((30, 4))
    y = rng.randint(0, 3, size=30)
    weights = rng.uniform(0.5, 2.0, size=30)
    model = StructuredPerceptron(max_iter=4, random_state=7).fit(X, y, sample_weight=weights)
    draws = np.random.RandomState(7)
    orders = [draws.permutation(30) for _ in range(4)]
    _, averaged, _ = _reference_weights(MulticlassStructure(), list(X), y, orders, weights)
    np.testing.assert_allclose(model.weights_, averaged, rtol=1e-12, atol=1e-12)


def test_separable_data_stop_after_an_epoch_without_mistakes():
    rng = np.random.RandomState(0)
    X = rng.standard_normal((60, 3))
    y = np.where(X[:, 0] - X[:, 1] > 0, "yes", "no")
    model = StructuredPerceptron(max_iter=100, random_state=0).fit(X, y)
    assert model.n_iter_ < 100
    assert model.history_["mistakes"][-1] == 0
    assert model.score(X, y) == 1.0


def test_warm_start_continues_the_average():
    X, y = _chain_data(np.random.RandomState(2))
    whole = StructuredPerceptron(max_iter=3, shuffle=False).fit(X, y)
    stepwise = StructuredPerceptron(max_iter=1, shuffle=False, warm_start=True)
    for _ in range(3):
        stepwise.fit(X, y)
    np.testing.assert_array_equal(stepwise.weights_, whole.weights_)
    # another training set starts afresh
    X2, y2 = _chain_data(np.random.RandomState(3))
    np.testing.assert_array_equal(
        stepwise.set_params(max_iter=2).fit(X2, y2).weights_,
        StructuredPerceptron(max_iter=2, shuffle=False).fit(X2, y2).weights_)


def test_scaled_sample_weight_scales_the_weights():
    X, y = _chain_data(np.random.RandomState(4))
    plain = StructuredPerceptron(max_iter=3, random_state=0).fit(X, y)
    doubled = StructuredPerceptron(max_iter=3, random_state=0).fit(
        X, y, sample_weight=np.full(len(X), 2.0))
    np.testing.assert_allclose(doubled.weights_, 2 * plain.weights_, rtol=1e-12)


def test_learns_dependency_trees():
    X, y = _dependency_data(np.random.RandomState(5))
    model = StructuredPerceptron(structure="dependency", max_iter=50, random_state=0).fit(X, y)
    assert model.history_["mistakes"][-1] == 0
    for heads, predicted in zip(y, model.predict(X)):
        np.testing.assert_array_equal(predicted, heads)


def test_needs_the_kernel_operations():
    structure = ChainStructure()
    structure.kernel_ops = structure.kernel_ops.without("argmax")
    X, y = _chain_data(np.random.RandomState(6))
    with pytest.raises(UnsupportedOperation, match="argmax"):
        StructuredPerceptron(structure=structure).fit(X, y)
