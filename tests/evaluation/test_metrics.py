from collections import Counter

import numpy as np
import pytest

from sklearn_struct.metrics import (
    alignment_error_rate,
    alignment_precision_recall,
    chunk_classification_report,
    chunk_f1_score,
    chunk_precision_recall_fscore_support,
    sequence_accuracy_score,
    token_accuracy_score,
)


# ---------------------------------------------------------------------- token / sequence
def test_token_and_sequence_accuracy():
    y_true = [["a", "b", "c"], ["a"], ["b", "b"]]
    y_pred = [["a", "c", "c"], ["a"], ["b", "b"]]
    assert token_accuracy_score(y_true, y_pred) == 5 / 6  # one wrong token out of 6
    assert sequence_accuracy_score(y_true, y_pred) == 2 / 3  # sequence 0 has an error
    # arrays, integer labels, length-0 sequences
    y_true = [np.array([0, 1, 1]), np.array([], dtype=int), np.array([2])]
    y_pred = [np.array([0, 1, 0]), np.array([], dtype=int), np.array([2])]
    assert token_accuracy_score(y_true, y_pred) == 3 / 4
    assert sequence_accuracy_score(y_true, y_pred) == 2 / 3
    assert token_accuracy_score([[1, 2]], [["1", "2"]]) == 0.0  # labels compared as values


def test_sequence_metrics_input_errors():
    with pytest.raises(ValueError, match="y_true has 2 sequences but y_pred has 1"):
        token_accuracy_score([["a"], ["b"]], [["a"]])
    with pytest.raises(ValueError, match="sequence 1: y_true has 2 labels but y_pred has 1"):
        sequence_accuracy_score([["a"], ["b", "c"]], [["a"], ["b"]])
    with pytest.raises(ValueError, match="no sequence"):
        token_accuracy_score([], [])
    with pytest.raises(ValueError, match="no token"):
        token_accuracy_score([[]], [[]])
    with pytest.raises(TypeError, match=r"y_pred\[0\] must be a sequence of labels, got a string"):
        token_accuracy_score([["a", "b"]], ["ab"])
    with pytest.raises(ValueError, match=r"y_true\[0\] must be a 1-D sequence"):
        token_accuracy_score([np.zeros((2, 2))], [np.zeros((2, 2))])
    with pytest.raises(TypeError, match="y_true must be a list of label sequences"):
        token_accuracy_score("abc", ["abc"])


# --------------------------------------------------------------------- chunks (conlleval)
def _micro(y_true, y_pred):
    return chunk_precision_recall_fscore_support(y_true, y_pred)


def test_conlleval_iob2_basic_with_per_type_counts():
    y_true = [["B-NP", "I-NP", "B-VP", "B-PP", "B-NP", "I-NP", "O"]]
    y_pred = [["B-NP", "I-NP", "B-VP", "B-PP", "B-NP", "O", "O"]]
    # true: NP[0,2) VP[2,3) PP[3,4) NP[4,6) = 4; predicted: same but NP[4,5) = 4;
    # correct: NP[0,2), VP, PP = 3 -> precision = recall = F1 = 3/4
    assert _micro(y_true, y_pred) == (0.75, 0.75, 0.75, 4)
    precision, recall, f1, support, types = chunk_precision_recall_fscore_support(
        y_true, y_pred, average=None
    )
    assert types.tolist() == ["NP", "PP", "VP"]
    # NP: 1 correct of 2 true and 2 predicted
    np.testing.assert_allclose(precision, [0.5, 1, 1])
    np.testing.assert_allclose(recall, [0.5, 1, 1])
    np.testing.assert_allclose(f1, [0.5, 1, 1])
    assert support.tolist() == [2, 1, 1]
    report = chunk_classification_report(y_true, y_pred, output_dict=True)
    assert report["NP"] == {
        "precision": 0.5, "recall": 0.5, "f1-score": 0.5, "support": 2, "predicted": 2
    }
    assert report["overall"]["f1-score"] == 0.75 and report["overall"]["predicted"] == 4
    text = chunk_classification_report(y_true, y_pred, digits=3)
    assert "precision" in text and "predicted" in text
    assert "     NP     0.500     0.500     0.500         2         2" in text
    assert "overall     0.750     0.750     0.750         4         4" in text


def test_conlleval_iob1_rules():
    # true (IOB1): I-PER I-PER | B-PER starts a new PER chunk | O | I-LOC after O starts one
    #   -> PER[0,2) PER[2,3) LOC[4,5) = 3 chunks
    # pred: I-PER x3 -> PER[0,3); B-LOC after O -> LOC[4,5) = 2 chunks
    # correct: LOC only (PER[0,2) != PER[0,3)) -> P = 1/2, R = 1/3, F1 = 2 PR / (P + R) = 0.4
    y_true = [["I-PER", "I-PER", "B-PER", "O", "I-LOC"]]
    y_pred = [["I-PER", "I-PER", "I-PER", "O", "B-LOC"]]
    precision, recall, f1, support = _micro(y_true, y_pred)
    assert (precision, recall, support) == (0.5, 1 / 3, 3)
    assert f1 == pytest.approx(0.4)


def test_conlleval_type_change_starts_a_chunk():
    # I-ORG I-ORG I-LOC: the type change ends ORG[0,2) and starts LOC[2,3) -- the same
    # chunks as the IOB2 tags B-ORG I-ORG B-LOC, so everything is correct even though
    # only one tag of three is equal.
    y_true = [["I-ORG", "I-ORG", "I-LOC"]]
    y_pred = [["B-ORG", "I-ORG", "B-LOC"]]
    assert _micro(y_true, y_pred) == (1.0, 1.0, 1.0, 2)
    assert token_accuracy_score(y_true, y_pred) == 1 / 3
    # B-NP I-VP I-NP: three chunks NP[0,1) VP[1,2) NP[2,3); the truth is NP[0,3) -> 0 correct
    assert _micro([["B-NP", "I-NP", "I-NP"]], [["B-NP", "I-VP", "I-NP"]]) == (0.0, 0.0, 0.0, 1)


def test_conlleval_b_inside_same_type_and_sentence_boundaries():
    # true: LOC[0,1) LOC[1,2) (B- splits); pred: LOC[0,2) -> 0 correct of 2 true, 1 predicted
    assert _micro([["I-LOC", "B-LOC"]], [["I-LOC", "I-LOC"]]) == (0.0, 0.0, 0.0, 2)
    # a sentence boundary ends chunks: the true MISC chunks are [1,2) in sentence 0 and
    # [0,1) in sentence 1 (2 chunks); the prediction finds the first one only -> P = 1,
    # R = 1/2. Read as one stream, the truth would be a single chunk and nothing correct.
    y_true = [["O", "I-MISC"], ["I-MISC", "O"]]
    y_pred = [["O", "I-MISC"], ["O", "O"]]
    precision, recall, f1, support = _micro(y_true, y_pred)
    assert (precision, recall, support) == (1.0, 0.5, 2)
    assert f1 == pytest.approx(2 / 3)
    # nothing predicted: precision is 0 (conlleval prints 0.00), not an error
    assert _micro([["B-NP"]], [["O"]]) == (0.0, 0.0, 0.0, 1)
    assert chunk_f1_score([["O"]], [["O"]]) == 0.0


def test_conlleval_types_with_hyphens_and_accepts_arrays():
    # conlleval splits a tag at its first hyphen: the type of "B-A-B" is "A-B"
    y_true = [np.array(["B-A-B", "I-A-B", "O"])]
    y_pred = [np.array(["B-A-B", "I-A-B", "B-A"])]
    assert _micro(y_true, y_pred) == (0.5, 1.0, pytest.approx(2 / 3), 1)
    types = chunk_precision_recall_fscore_support(y_true, y_pred, average=None)[4]
    assert types.tolist() == ["A", "A-B"]


def _reference_chunks(tags):
    """Chunks from the CoNLL definition of IOB: a chunk starts at B-X, or at an I-X that
    does not continue an X chunk; it goes on over the following I-X tags."""
    chunks, current = set(), None
    for position, tag in enumerate(list(tags) + ["O"]):
        prefix, _, chunk_type = tag.partition("-")
        if current is not None and (tag == "O" or prefix == "B" or chunk_type != current[0]):
            chunks.add((current[0], current[1], position))
            current = None
        if tag != "O" and current is None:
            current = (chunk_type, position)
    return chunks


def test_conlleval_equals_chunk_set_matching_on_random_iob_sequences():
    rng = np.random.RandomState(0)
    alphabet = np.array(["O", "B-X", "I-X", "B-Y", "I-Y"])
    for _ in range(200):
        lengths = rng.randint(0, 9, size=rng.randint(1, 5))
        y_true = [list(rng.choice(alphabet, n)) for n in lengths]
        # predictions close to the truth, so that many chunks match
        y_pred = [
            [t if rng.rand() < 0.7 else rng.choice(alphabet) for t in seq] for seq in y_true
        ]
        correct, n_true, n_pred = Counter(), Counter(), Counter()
        for t, p in zip(y_true, y_pred):
            true_chunks, pred_chunks = _reference_chunks(t), _reference_chunks(p)
            n_true.update(c[0] for c in true_chunks)
            n_pred.update(c[0] for c in pred_chunks)
            correct.update(c[0] for c in true_chunks & pred_chunks)
        report = chunk_classification_report(y_true, y_pred, output_dict=True)
        for chunk_type in set(n_true) | set(n_pred):
            row = report[chunk_type]
            assert (row["support"], row["predicted"]) == (n_true[chunk_type], n_pred[chunk_type])
            expected_recall = correct[chunk_type] / n_true[chunk_type] if n_true[chunk_type] else 0
            assert row["recall"] == pytest.approx(expected_recall)
        total = sum(correct.values())
        n_t, n_p = sum(n_true.values()), sum(n_pred.values())
        precision, recall, f1, support = _micro(y_true, y_pred)
        assert support == n_t
        assert precision == pytest.approx(total / n_p if n_p else 0.0)
        assert recall == pytest.approx(total / n_t if n_t else 0.0)


def test_chunk_metrics_input_errors():
    with pytest.raises(TypeError, match=r"y_pred\[0\] holds 1; chunk metrics need string tags"):
        chunk_f1_score([["B-NP"]], [[1]])
    with pytest.raises(ValueError, match="average must be one of"):
        chunk_precision_recall_fscore_support([["O"]], [["O"]], average="binary")


# ----------------------------------------------------------------------------- alignment
def test_alignment_error_rate_hand_made():
    sure = [[(0, 0), (1, 1)]]
    possible = [[(0, 0), (1, 1), (2, 1)]]
    predicted = [[(0, 0), (2, 1), (2, 2)]]
    # |A & S| = 1 ((0,0)), |A & P| = 2 ((0,0), (2,1)), |A| = 3, |S| = 2
    # AER = 1 - (1 + 2) / (3 + 2) = 0.4; precision = 2/3; recall = 1/2
    assert alignment_error_rate(sure, possible, predicted) == pytest.approx(0.4)
    assert alignment_precision_recall(sure, possible, predicted) == (2 / 3, 0.5)
    # P given without the sure links is completed with them (S is a subset of P)
    assert alignment_error_rate(sure, [[(2, 1)]], predicted) == pytest.approx(0.4)
    # predicting exactly S or exactly P gives AER 0
    assert alignment_error_rate(sure, possible, sure) == 0.0
    assert alignment_error_rate(sure, possible, possible) == 0.0
    assert alignment_error_rate(sure, possible, [[]]) == 1.0


def test_alignment_error_rate_sums_over_sentences_and_accepts_arrays():
    sure = [np.array([[0, 0]]), np.zeros((0, 2), dtype=np.int64)]
    possible = [np.array([[0, 0], [0, 1]]), np.array([[1, 1]])]
    predicted = [{(0, 1)}, [(1, 1), (0, 0)]]
    # sentence 0: A & S = 0, A & P = 1 ((0,1)); sentence 1: A & S = 0, A & P = 1 ((1,1))
    # |A| = 3, |S| = 1 -> AER = 1 - (0 + 2) / (3 + 1) = 0.5; precision 2/3, recall 0
    assert alignment_error_rate(sure, possible, predicted) == pytest.approx(0.5)
    assert alignment_precision_recall(sure, possible, predicted) == (2 / 3, 0.0)
    # a per-sentence average would give (1 - 1/2 + 1 - 1/2) / 2 = 0.5 too; make them differ
    predicted = [[(0, 0)], [(0, 0), (1, 0), (2, 2)]]
    # corpus: A & S = 1, A & P = 1, |A| = 4, |S| = 1 -> 1 - 2/5 = 0.6
    assert alignment_error_rate(sure, possible, predicted) == pytest.approx(0.6)
    assert alignment_error_rate([[]], [[]], [[]]) == 0.0


def test_alignment_input_errors():
    with pytest.raises(ValueError, match="possible has 2 sentence pairs, expected 1"):
        alignment_error_rate([[(0, 0)]], [[], []], [[]])
    with pytest.raises(ValueError, match=r"predicted\[0\] must hold \(english, french\) pairs"):
        alignment_error_rate([[(0, 0)]], [[]], [[(0, 0, 1)]])
    with pytest.raises(ValueError, match=r"sure\[0\] must hold .* dtype float64"):
        alignment_error_rate([[(0.5, 1.0)]], [[]], [[]])
    with pytest.raises(TypeError, match="sure must be a list"):
        alignment_error_rate(None, [[]], [[]])
