"""Constraints and confidence at prediction, against enumeration of every output.

``allowed_labels`` restrict ``predict``, ``predict_marginals``, ``predict_k_best`` and
``sample_y`` to the outputs that obey them; ``predict_chunks`` gives each predicted chunk
the probability of the outputs that contain it.  The references enumerate every
labelling of short sequences and score it with the structure's ``encode`` and part
scores, so that they share no dynamic program with the estimator.
"""

import itertools
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import EGCRF, EGStructuredSVM
from sklearn_struct._chunk_tags import strict_chunk_spans
from sklearn_struct.structures import ChainStructure, MulticlassStructure, SemiMarkovStructure

SCHEME_TAGS = {
    "IOB2": ["B-A", "I-A", "B-B", "I-B", "O"],
    "IOE2": ["I-A", "E-A", "I-B", "E-B", "O"],
    "BIOES": ["B-A", "I-A", "E-A", "S-A", "O"],
    "BILOU": ["B-A", "I-A", "L-A", "U-A", "O"],
}


def _valid_iob2(tags):
    """``tags`` with every ``I-X`` that does not continue an ``X`` chunk made ``B-X``."""
    out = list(tags)
    for t, tag in enumerate(out):
        if tag.startswith("I-") and (t == 0 or out[t - 1] == "O" or out[t - 1][2:] != tag[2:]):
            out[t] = "B-" + tag[2:]
    return np.array(out)


def _fitted(labels, structure=None, n=12, T=4, seed=0, estimator=EGCRF, valid=False):
    """A CRF on random sequences over ``labels``, with random features: a model whose
    distributions spread over many outputs (``valid``: IOB2 sequences only)."""
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(T, 3)) for _ in range(n)]
    y = [rng.choice(labels, size=T) for _ in range(n)]
    if valid:
        y = [_valid_iob2(tags) for tags in y]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = estimator(C=1.0, max_iter=20, structure=structure or ChainStructure())
        return model.fit(X, y), X


def _enumerated(model, x):
    """Every labelling of ``x`` with its log-probability under ``model`` (exact)."""
    structure, classes = model.structure_, model.classes_
    batch = structure.make_batch([x], n_states=len(classes))
    scores = structure.part_scores(batch, model.weights_)
    outputs, totals = [], []
    for codes in itertools.product(range(len(classes)), repeat=len(x)):
        Y = np.array(codes, dtype=np.int64)
        try:
            structure.check_outputs(batch, Y)
        except ValueError:  # not an output of the structure (a segmentation's tags)
            continue
        outputs.append(classes[Y])
        totals.append(float(structure.encode(batch, Y) @ scores))
    totals = np.array(totals)
    log_z = np.logaddexp.reduce(totals)
    return outputs, totals - log_z


def _obeys(labels, allowed):
    return all(a is None or (label in a if isinstance(a, set) else label == a)
               for label, a in zip(labels, allowed))


ALLOWED = [None, {"B-A", "I-A"}, None, {"O", "B-B", "I-B"}]


def test_constrained_argmax_marginals_and_k_best_equal_enumeration():
    model, X = _fitted(SCHEME_TAGS["IOB2"])
    x = X[0]
    outputs, log_p = _enumerated(model, x)
    kept = [k for k, labels in enumerate(outputs) if _obeys(labels, ALLOWED)]
    conditional = np.exp(log_p[kept] - np.logaddexp.reduce(log_p[kept]))
    best = kept[int(np.argmax(log_p[kept]))]
    assert model.predict([x], allowed_labels=[ALLOWED])[0].tolist() == outputs[best].tolist()
    # the constraint changes the answer here, so the test can fail
    assert model.predict([x])[0].tolist() != outputs[best].tolist()

    marginals = model.predict_marginals([x], allowed_labels=[ALLOWED])[0]
    expected = np.zeros_like(marginals)
    index = {label: k for k, label in enumerate(model.classes_)}
    for weight, k in zip(conditional, kept):
        for t, label in enumerate(outputs[k]):
            expected[t, index[label]] += weight
    np.testing.assert_allclose(marginals, expected, atol=1e-10)

    y_k, scores, proba = model.predict_k_best([x], 5, return_proba=True,
                                              allowed_labels=[ALLOWED])
    order = np.argsort(-conditional, kind="stable")[:5]
    np.testing.assert_allclose(proba[0], conditional[order], rtol=1e-9)
    assert [labels.tolist() for labels in y_k[0]][0] == outputs[best].tolist()
    assert all(_obeys(labels, ALLOWED) for labels in y_k[0])


def test_constrained_samples_obey_the_constraints():
    model, X = _fitted(SCHEME_TAGS["IOB2"])
    draws = model.sample_y(X[:2], n_samples=50, random_state=0,
                           allowed_labels=[ALLOWED, [None] * 4])
    assert all(_obeys(labels, ALLOWED) for labels in draws[0])
    assert not all(_obeys(labels, ALLOWED) for labels in draws[1])


def test_a_max_margin_model_takes_constraints_too():
    model, X = _fitted(SCHEME_TAGS["IOB2"], estimator=EGStructuredSVM)
    allowed = [["O", None, None, "B-B"]]
    predicted = model.predict(X[:1], allowed_labels=allowed)[0]
    assert predicted[0] == "O" and predicted[3] == "B-B"


@pytest.mark.parametrize("scheme", sorted(SCHEME_TAGS))
@pytest.mark.parametrize("constrained", [False, True])
def test_chunk_probabilities_equal_enumeration(scheme, constrained):
    model, X = _fitted(SCHEME_TAGS[scheme], seed=1)
    allowed = [[None, None, {"O", SCHEME_TAGS[scheme][0], SCHEME_TAGS[scheme][1]}, None]]
    checked = 0
    for x in X:
        outputs, log_p = _enumerated(model, x)
        if constrained:
            kept = [k for k, labels in enumerate(outputs) if _obeys(labels, allowed[0])]
            outputs = [outputs[k] for k in kept]
            log_p = log_p[kept] - np.logaddexp.reduce(log_p[kept])
        p = np.exp(log_p)
        spans = [set(strict_chunk_spans(labels.tolist(), scheme)) for labels in outputs]
        found = model.predict_chunks([x], scheme=scheme,
                                     allowed_labels=allowed if constrained else None)[0]
        assert [c[:3] for c in found] == strict_chunk_spans(
            outputs[int(np.argmax(p))].tolist(), scheme)
        for chunk_type, start, end, probability in found:
            expected = sum(w for w, s in zip(p, spans) if (chunk_type, start, end) in s)
            assert probability == pytest.approx(expected, rel=1e-9, abs=1e-12)
            checked += 1
    assert checked >= 3


def test_segment_probabilities_of_a_semi_markov_chain_equal_enumeration():
    model, X = _fitted(SCHEME_TAGS["IOB2"], structure=SemiMarkovStructure(max_length=3),
                       seed=2, valid=True)
    checked = 0
    for x in X:
        outputs, log_p = _enumerated(model, x)
        p = np.exp(log_p)
        spans = [set(strict_chunk_spans(labels.tolist(), "IOB2")) for labels in outputs]
        for chunk_type, start, end, probability in model.predict_chunks([x])[0]:
            expected = sum(w for w, s in zip(p, spans) if (chunk_type, start, end) in s)
            assert probability == pytest.approx(expected, rel=1e-9, abs=1e-12)
            checked += 1
    assert checked >= 3


# ----------------------------------------------------------------------- refusals
@pytest.mark.parametrize("allowed, match", [
    ([[None, set(), None, None]], r"predict: allowed_labels\[0\]: token 1 has an empty set"),
    ([[None, "Z", None, None]], r"allowed_labels\[0\]: label 'Z' at position 1 is not among"),
    ([[None, None, None]], r"allowed_labels\[0\]: expected 4 labels \(one per token\), got 3"),
    ([[None] * 4, [None] * 4], r"X has 1 examples but allowed_labels has 2"),
])
def test_bad_allowed_labels_name_the_example_and_token(allowed, match):
    model, X = _fitted(SCHEME_TAGS["IOB2"])
    with pytest.raises(ValueError, match=match):
        model.predict(X[:1], allowed_labels=allowed)


def test_constraints_that_no_output_satisfies_are_refused():
    model, X = _fitted(SCHEME_TAGS["IOB2"],
                       structure=ChainStructure(allowed_transitions="IOB2"), valid=True)
    with pytest.raises(ValueError, match=r"predict_marginals: allowed_labels leave no output"
                                         r".*example 0"):
        model.predict_marginals(X[:1], allowed_labels=[["O", "I-A", None, None]])


def test_flat_outputs_and_non_chunk_labels_are_refused_before_any_work():
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        flat = EGCRF(structure=MulticlassStructure(), max_iter=3).fit(
            rng.normal(size=(6, 2)), [0, 1, 2, 0, 1, 2])
    with pytest.raises(ValueError, match="outputs take no such constraints"):
        flat.predict(rng.normal(size=(2, 2)), allowed_labels=[[0], [1]])
    model, X = _fitted(["NN", "VB", "DT"])
    with pytest.raises(ValueError, match=r"predict_chunks: classes_ are not 'IOB2' chunk tags"):
        model.predict_chunks(X[:1])
    with pytest.raises(ValueError, match="scheme must be one of"):
        _fitted(SCHEME_TAGS["IOB2"])[0].predict_chunks(X[:1], scheme="IOB9")


def test_the_allowed_labels_are_not_modified():
    model, X = _fitted(SCHEME_TAGS["IOB2"])
    allowed = [[None, {"B-A", "I-A"}, "O", None]]
    before = [list(a) if isinstance(a, set) else a for a in allowed[0]]
    model.predict_chunks(X[:1], allowed_labels=allowed)
    assert [list(a) if isinstance(a, set) else a for a in allowed[0]] == before
