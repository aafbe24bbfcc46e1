"""predict_k_best and sample_y of fitted estimators, against enumeration of every output."""

import itertools
import re
import warnings

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import power_divergence
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import EGCRF, EGStructuredSVM, StructuredPerceptron
from sklearn_struct.datasets import Tree
from sklearn_struct.structures import (ChainStructure, DependencyTreeStructure, Grammar,
                                       SemiMarkovStructure, TreeStructure, UnsupportedOperation,
                                       WeightedCFGStructure)

from _trees import dependency_trees


def _fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X, y)


# ------------------------------------------------------------------- tiny data sets
def _sequences(rng, labels, lengths=(1, 2, 3, 3)):
    X = [rng.randn(n, 2) for n in lengths]
    y = [np.array(labels)[rng.randint(len(labels), size=n)] for n in lengths]
    return X, y


def _iob2(rng, lengths=(1, 2, 3, 3)):
    X, y = [], []
    for n in lengths:
        tags = ["O"] * n
        start = rng.randint(n)
        tags[start] = "B-A"
        if start + 1 < n:
            tags[start + 1] = "I-A"
        X.append(rng.randn(n, 2))
        y.append(np.array(tags))
    return X, y


def _trees(rng):
    X, y = [], []
    for parents in ([-1, 0, 0], [-1, 0], [-1, 0, 1]):
        n = len(parents)
        X.append((rng.randn(n, 2), np.array(parents), np.zeros(n, dtype=np.int64)))
        y.append(np.array(["u", "v"])[rng.randint(2, size=n)])
    return X, y


def _dependency(rng):
    X = [rng.randint(4, 9, size=(n, 3)) for n in (1, 3, 3)]
    y = [np.array(next(iter(dependency_trees(len(x), True, True)))) for x in X]
    return X, y


# an ambiguous toy grammar (that of tests/structures/test_cfg_structure.py)
GRAMMAR = Grammar(["A", "B", "S"], ["a", "b"],
                  binary_rules=[[2, 0, 1], [2, 1, 0], [0, 0, 1], [1, 0, 0], [2, 2, 0], [0, 2, 1]],
                  lexical_rules=[[0, 0], [1, 1], [2, 0], [1, 0]], roots=[2, 0])


def _derivations(words, tags, symbol=None):
    """Every binary tree of the grammar over the words (rooted at ``symbol`` or a root)."""
    names, n = GRAMMAR.nonterminals, len(words)
    for label in [symbol] if symbol is not None else [names[r] for r in GRAMMAR.roots]:
        if n == 1:
            for a, t in GRAMMAR.lexical_rules:
                if names[a] == label and GRAMMAR.terminals[t] == tags[0]:
                    yield Tree(label, [words[0]])
            continue
        for a, b, c in GRAMMAR.binary_rules:
            for m in range(1, n) if names[a] == label else ():
                for left in _derivations(words[:m], tags[:m], names[b]):
                    for right in _derivations(words[m:], tags[m:], names[c]):
                        yield Tree(label, [left, right])


def _cfg(rng):
    X, y = [], []
    for n in (1, 2, 3, 3):
        trees = []
        while not trees:
            tags = list(rng.choice(["a", "b"], size=n))
            words = [f"w{rng.randint(3)}" for _ in range(n)]
            trees = list(_derivations(words, tags))
        X.append(list(zip(words, tags)))
        y.append(trees[rng.randint(len(trees))])
    return X, y


def _multiclass(rng):
    X = rng.randn(12, 3)
    return X, np.array(["x", "y", "z"])[rng.randint(3, size=12)]


CASES = {
    "chain": (lambda: ChainStructure(), lambda rng: _sequences(rng, ["a", "b", "c"])),
    "chain-iob2": (lambda: ChainStructure(allowed_transitions="IOB2"), _iob2),
    "semimarkov": (lambda: SemiMarkovStructure(), _iob2),
    "tree": (lambda: TreeStructure(), _trees),
    "dependency": (lambda: DependencyTreeStructure(projective=True, hash_bits=8), _dependency),
    "multiclass": (lambda: "multiclass", _multiclass),
    "cfg": (lambda: WeightedCFGStructure(GRAMMAR, hash_bits=9), _cfg),
}


def _fitted(case, Model=EGCRF, **params):
    make_structure, make_data = CASES[case]
    X, y = make_data(np.random.RandomState(0))
    params = {"C": 1.0, "max_iter": 30, **params}
    params = {name: value for name, value in params.items() if value is not None}
    model = _fit(Model(structure=make_structure(), random_state=0, **params), X, y)
    return model, X


# ----------------------------------------------------------------------- enumeration
def _enumerated(model, X):
    """Per example: ``{part vector: score}`` over every output the structure allows.

    Outputs are keyed by their part vector: a semi-Markov chain reads an ``I-`` tag that
    starts a chunk as ``B-``, so two tag sequences can be one output (one segmentation).
    """
    structure = model.structure_
    batch = model._validate_predict_data(X)
    theta = model._part_scores(batch)
    result = []
    for i in range(batch.n_samples):
        sub = structure.take(batch, np.array([i]))
        n_units = int(sub.unit_offsets[-1])
        if isinstance(structure, DependencyTreeStructure):
            candidates = dependency_trees(n_units, True, True)
        elif isinstance(structure, WeightedCFGStructure):
            words, tags = zip(*X[i])
            candidates = [model._codec.encode(sub, [tree]) for tree in _derivations(words, tags)]
        else:
            candidates = itertools.product(range(len(model.classes_)), repeat=n_units)
        theta_i = theta[batch.part_offsets[i]:batch.part_offsets[i + 1]]
        outputs = {}
        for Y in candidates:
            Y = np.array(Y, dtype=np.int64)
            try:
                structure.check_outputs(sub, Y)
            except ValueError:
                continue
            z = structure.encode(sub, Y)
            outputs[tuple(np.round(z, 9).tolist())] = float(z @ theta_i)
        result.append(outputs)
    return batch, result


def _encoded(model, batch, i, output):
    sub = model.structure_.take(batch, np.array([i]))
    target = np.array([output]) if model.structure_.output_space().flat else [output]
    z = model.structure_.encode(sub, model._codec.encode(sub, target))
    return tuple(np.round(z, 9).tolist())


def _same(a, b):
    """Two outputs in predict's form are equal (label arrays, head arrays, trees)."""
    return a == b if isinstance(a, Tree) else np.array_equal(a, b)


def _check_against_enumeration(model, X, k):
    batch, enumerated = _enumerated(model, X)
    y_k, scores = model.predict_k_best(X, k)
    for i, outputs in enumerate(enumerated):
        expected = np.sort(list(outputs.values()))[::-1][:k]
        assert len(y_k[i]) == len(scores[i]) == min(k, len(outputs))
        np.testing.assert_allclose(scores[i], expected, atol=1e-9)
        codes = [_encoded(model, batch, i, output) for output in y_k[i]]
        assert len(set(codes)) == len(codes), "an output repeats among the k best"
        for code, score in zip(codes, scores[i]):
            assert code in outputs, f"example {i}: {code} is not an allowed output"
            assert outputs[code] == pytest.approx(score, abs=1e-9)
    return enumerated


@pytest.mark.parametrize("case", sorted(CASES))
def test_k_best_matches_enumeration(case):
    model, X = _fitted(case)
    n_outputs = max(len(outputs) for outputs in _enumerated(model, X)[1])
    for k in (1, 2, 5, n_outputs + 2):
        _check_against_enumeration(model, X, k)


@pytest.mark.parametrize("k", [10 ** 5, 2 ** 40])
@pytest.mark.parametrize("case", ["chain", "multiclass", "dependency"])
def test_any_k_gives_every_output(case, k):
    """A k far beyond the outputs (3-token sequences have 27): each example gets all of them,
    in the time and memory of those (k rows used to be allocated up front)."""
    model, X = _fitted(case)
    _check_against_enumeration(model, X, k)


@pytest.mark.parametrize("case", sorted(CASES))
def test_k_best_with_ties(case):
    """Zero weights: every output ties at 0; still k distinct allowed ones, the same each call."""
    model, X = _fitted(case)
    model.weights_ = np.zeros_like(model.weights_)
    enumerated = _check_against_enumeration(model, X, 4)
    first, _ = model.predict_k_best(X, 4)
    again, scores = model.predict_k_best(X, 4)
    for i in range(len(enumerated)):
        assert all(_same(a, b) for a, b in zip(first[i], again[i]))
        np.testing.assert_array_equal(scores[i], 0.0)


@pytest.mark.parametrize("case", sorted(CASES))
def test_k_equal_one_is_predict(case):
    model, X = _fitted(case)
    y_1, _ = model.predict_k_best(X, 1)
    predicted = model.predict(X)
    if model.structure_.output_space().flat:
        np.testing.assert_array_equal(y_1[:, 0], predicted)
    else:
        for best, prediction in zip(y_1, predicted):
            assert len(best) == 1 and _same(best[0], prediction)


@pytest.mark.parametrize("case", sorted(CASES))
def test_k_best_probabilities_match_enumeration(case):
    model, X = _fitted(case)
    _, enumerated = _enumerated(model, X)
    y_k, scores, proba = model.predict_k_best(X, 3, return_proba=True)
    for i, outputs in enumerate(enumerated):
        log_z = logsumexp(list(outputs.values()))
        np.testing.assert_allclose(proba[i], np.exp(np.asarray(scores[i]) - log_z), rtol=1e-9)
        assert np.sum(proba[i]) <= 1.0 + 1e-12
        if len(outputs) <= 3:  # every output is among the k best: they sum to 1
            assert np.sum(proba[i]) == pytest.approx(1.0)


def test_iob2_constraints_hold_for_every_one_of_the_k():
    model, X = _fitted("chain-iob2")
    y_k, _ = model.predict_k_best(X, 50)
    draws = model.sample_y(X, n_samples=200, random_state=0)
    for outputs in list(y_k) + list(draws):
        for tags in outputs:
            for previous, tag in zip(["O"] + list(tags), tags):
                assert tag != "I-A" or previous in ("B-A", "I-A"), tags
    # a sentence of 3 tokens has 13 IOB2 labellings over {B-A, I-A, O}: no more are returned
    assert [len(outputs) for outputs in y_k] == [2, 5, 13, 13]


def test_other_learners_give_scores_without_probabilities():
    model, X = _fitted("chain", EGStructuredSVM)
    _check_against_enumeration(model, X, 4)
    with pytest.raises(ValueError, match="return_proba=True needs a probabilistic model"):
        model.predict_k_best(X, 2, return_proba=True)
    assert not hasattr(model, "sample_y")  # sampling is for the log-linear model only
    perceptron, X = _fitted("chain", StructuredPerceptron, C=None)
    _check_against_enumeration(perceptron, X, 3)


# ------------------------------------------------------------------------- sampling
def test_samples_follow_the_enumerated_distribution():
    """G-test of 20000 draws of a fitted CRF against the enumerated p(y | x) (27 outputs)."""
    model, _ = _fitted("chain")
    x = [np.array([[0.3, -0.2], [0.1, 0.4], [-0.5, 0.2]])]
    batch, (outputs,) = _enumerated(model, x)
    codes = sorted(outputs)
    log_z = logsumexp(list(outputs.values()))
    expected_p = np.exp([outputs[c] - log_z for c in codes])
    n_draws = 20000
    (draws,) = model.sample_y(x, n_samples=n_draws, random_state=0)
    index = {c: j for j, c in enumerate(codes)}
    observed = np.bincount([index[_encoded(model, batch, 0, d)] for d in draws],
                           minlength=len(codes))
    assert expected_p.min() * n_draws > 5, "the test needs every cell expected often enough"
    _, p_value = power_divergence(observed, n_draws * expected_p, lambda_="log-likelihood")
    assert p_value > 1e-6, p_value
    # the test has the power to tell: the same counts against the uniform distribution fail it
    _, p_uniform = power_divergence(observed, np.full(len(codes), n_draws / len(codes)),
                                    lambda_="log-likelihood")
    assert p_uniform < 1e-6, p_uniform
    # a seed gives the same draws; the draws are not all the MAP output
    (again,) = model.sample_y(x, n_samples=n_draws, random_state=0)
    np.testing.assert_array_equal(np.array(draws), np.array(again))
    assert np.count_nonzero(observed) > 20


@pytest.mark.parametrize("case", ["semimarkov", "tree", "dependency", "multiclass", "cfg"])
def test_samples_are_allowed_outputs(case):
    model, X = _fitted(case)
    batch, enumerated = _enumerated(model, X)
    draws = model.sample_y(X, n_samples=30, random_state=1)
    assert len(draws) == len(enumerated)
    for i, outputs in enumerate(enumerated):
        assert len(draws[i]) == 30
        assert all(_encoded(model, batch, i, d) in outputs for d in draws[i])


# ------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("k, error, message", [
    (0, ValueError, "k must be at least 1, got 0"),
    (-2, ValueError, "k must be at least 1"),
    ("a", TypeError, "k must be an integer, got 'a'"),
    (2.0, TypeError, "k must be an integer"),
    (True, TypeError, "k must be an integer"),
])
def test_bad_k(k, error, message):
    model, X = _fitted("chain")
    with pytest.raises(error, match=message):
        model.predict_k_best(X, k)


@pytest.mark.parametrize("case", ["chain", "multiclass", "cfg"])
@pytest.mark.parametrize("k", [17, 10**6, 10**30, np.int64(2**62)])
def test_a_k_beyond_the_outputs_gives_every_output(case, k):
    """A k larger than the outputs there are is all of them (was: MemoryError, or numpy's
    'Maximum allowed dimension exceeded', from buffers of k rows)."""
    model, X = _fitted(case)
    _, enumerated = _enumerated(model, X)
    y_all, scores = model.predict_k_best(X, k)
    counts = [min(k, len(outputs)) for outputs in enumerated]
    if model.structure_.output_space().flat:
        assert y_all.shape == (len(counts), max(counts)) and scores.shape == y_all.shape
    else:
        assert [len(outputs) for outputs in y_all] == counts
        assert [len(s) for s in scores] == counts
    for i, outputs in enumerate(enumerated):
        np.testing.assert_allclose(np.sort(list(outputs.values()))[::-1][:k], scores[i],
                                   atol=1e-9)
    batch = model.structure_.make_batch(X, n_states=model._codec.n_states)
    Y, best = model.structure_.k_best(batch, model._part_scores(batch), k)
    assert Y.shape[0] == best.shape[1] == max(counts)


@pytest.mark.parametrize("n, error", [(0, ValueError), ("3", TypeError), (1.5, TypeError)])
def test_bad_n_samples(n, error):
    model, X = _fitted("chain")
    with pytest.raises(error, match="n_samples must be"):
        model.sample_y(X, n_samples=n)


@pytest.mark.parametrize("random_state", ["a", -1, 2.5, 2**40])
def test_bad_random_state_of_sample_y_names_the_method(random_state):
    """Was numpy's or scikit-learn's message ('Seed must be between 0 and 2**32 - 1'), which
    names neither the method nor the parameter."""
    model, X = _fitted("chain")
    with pytest.raises(ValueError, match=r"EGCRF.sample_y: random_state must be None, an int "
                                         r"in \[0, 2\*\*32 - 1\] or a numpy RandomState, got "
                                         + re.escape(repr(random_state))):
        model.sample_y(X, n_samples=2, random_state=random_state)


def test_unfitted_and_unsupported_structures():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        EGCRF().predict_k_best([np.zeros((2, 1))], 2)
    rng = np.random.RandomState(0)
    X = [(rng.randn(3, 2), np.array([[0, 0], [0, 1], [1, 1]])) for _ in range(3)]
    y = [np.array([1, 0, 1]) for _ in range(3)]
    model = _fit(StructuredPerceptron(structure="matching", max_iter=2, random_state=0), X, y)
    with pytest.raises(UnsupportedOperation, match="does not support k_best .needed by "
                       "StructuredPerceptron.predict_k_best"):
        model.predict_k_best(X, 2)
    # non-projective trees: a CRF (Matrix-Tree marginals) but no dynamic program
    X, y = _dependency(np.random.RandomState(0))
    crf = _fit(EGCRF(structure=DependencyTreeStructure(projective=False, hash_bits=8),
                     max_iter=5, random_state=0), X, y)
    with pytest.raises(UnsupportedOperation, match="does not support sample .needed by "
                       "EGCRF.sample_y"):
        crf.sample_y(X, n_samples=2)
    with pytest.raises(UnsupportedOperation, match="does not support k_best"):
        crf.predict_k_best(X, 2, return_proba=True)


def test_inputs_are_not_modified():
    model, X = _fitted("chain")
    copies = [x.copy() for x in X]
    model.predict_k_best(X, 3, return_proba=True)
    model.sample_y(X, n_samples=3, random_state=0)
    for x, copy in zip(X, copies):
        np.testing.assert_array_equal(x, copy)
