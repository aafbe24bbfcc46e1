"""Chunk metrics against seqeval: strict reading by scheme, conlleval's reading, averages."""

import numpy as np
import pytest
from seqeval.metrics import classification_report as seqeval_report
from seqeval.metrics.sequence_labeling import precision_recall_fscore_support as seqeval_prfs_v0
from seqeval.metrics.v1 import precision_recall_fscore_support as seqeval_strict_prfs
from seqeval.scheme import BILOU, IOB2, IOBES, IOE2, Tokens
from sklearn.base import BaseEstimator
from sklearn.model_selection import GridSearchCV, cross_val_score

from sklearn_struct._chunk_tags import STRICT_SCHEMES, strict_chunk_spans
from sklearn_struct.metrics import (chunk_classification_report, chunk_f1_score,
                                    chunk_precision_recall_fscore_support, get_scorer,
                                    get_scorer_names, token_accuracy_score)


def seqeval_prfs(y_true, y_pred, average, scheme=None):
    """seqeval's scores: its strict mode with a scheme, its default mode without."""
    if scheme is None:
        return seqeval_prfs_v0(y_true, y_pred, average=average, zero_division=0)
    return seqeval_strict_prfs(y_true, y_pred, average=average, scheme=scheme,
                               zero_division=0)


SEQEVAL_SCHEMES = {"IOB2": IOB2, "IOE2": IOE2, "BIOES": IOBES, "BILOU": BILOU}
#: Every scheme's prefixes besides O; IOB1's are IOB2's.
PREFIXES = {"IOB1": "BI", "IOB2": "BI", "IOE2": "IE", "BIOES": "BIES", "BILOU": "BILU"}


def random_sequences(rng, prefixes, n_sequences, types="XYZ", max_length=9):
    """Random tags of a scheme's prefixes, well- and ill-formed alike."""
    tags = ["O"] + [f"{p}-{t}" for p in prefixes for t in types]
    return [list(rng.choice(tags, size=rng.integers(0, max_length + 1)))
            for _ in range(n_sequences)]


def test_strict_schemes_are_those_of_seqeval():
    assert set(STRICT_SCHEMES) == set(SEQEVAL_SCHEMES)


@pytest.mark.parametrize("scheme", sorted(SEQEVAL_SCHEMES))
def test_strict_spans_equal_seqeval_entities(scheme):
    rng = np.random.default_rng(0)
    for tags in random_sequences(rng, PREFIXES[scheme], 3000):
        expected = sorted((e.tag, e.start, e.end)
                          for e in Tokens(tags, SEQEVAL_SCHEMES[scheme]).entities)
        assert sorted(strict_chunk_spans(tags, scheme)) == expected, tags


def _pair(rng, prefixes, n):
    """True and predicted sequences of equal lengths (a prediction: the truth with noise)."""
    y_true = random_sequences(rng, prefixes, n)
    tags = ["O"] + [f"{p}-{t}" for p in prefixes for t in "XYZ"]
    y_pred = [[tag if rng.random() < 0.7 else str(rng.choice(tags)) for tag in seq]
              for seq in y_true]
    return y_true, y_pred


def _assert_equal_scores(ours, theirs):
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(mine, reference, rtol=0, atol=1e-12)


@pytest.mark.parametrize("scheme", sorted(SEQEVAL_SCHEMES))
@pytest.mark.parametrize("average", ["micro", "macro", "weighted", None])
def test_strict_scores_equal_seqeval_on_10000_sequences(scheme, average):
    rng = np.random.default_rng([1, len(scheme)])
    y_true, y_pred = _pair(rng, PREFIXES[scheme], 10000)
    ours = chunk_precision_recall_fscore_support(y_true, y_pred, average, mode="strict",
                                                 scheme=scheme)
    theirs = seqeval_prfs(y_true, y_pred, average, SEQEVAL_SCHEMES[scheme])
    _assert_equal_scores(ours[:4], theirs)
    if average == "micro":
        assert chunk_f1_score(y_true, y_pred, mode="strict", scheme=scheme) == \
            pytest.approx(theirs[2], abs=1e-12)


@pytest.mark.parametrize("scheme", ["IOB1", "IOB2"])
@pytest.mark.parametrize("average", ["micro", "macro", "weighted", None])
def test_conlleval_scores_equal_seqeval_default_mode_on_10000_sequences(scheme, average):
    """seqeval's default mode is conlleval's reading; for B-, I- and O tags the two agree
    on every sequence, well-formed or not."""
    rng = np.random.default_rng([2, len(scheme)])
    y_true, y_pred = _pair(rng, PREFIXES[scheme], 10000)
    ours = chunk_precision_recall_fscore_support(y_true, y_pred, average)
    theirs = seqeval_prfs(y_true, y_pred, average)
    _assert_equal_scores(ours[:4], theirs)


def test_end_tags_are_read_as_conlleval_reads_them_not_as_seqeval_default():
    """conlleval knows no S- tag: ``S-X S-X`` is one chunk to it (and to this package's
    default reading), two to seqeval's default mode; the strict BIOES reading has two."""
    y = [["S-X", "S-X"]]
    assert chunk_precision_recall_fscore_support(y, y)[3] == 1
    assert seqeval_prfs(y, y, "micro")[3] == 2
    assert chunk_precision_recall_fscore_support(y, y, mode="strict", scheme="BIOES")[3] == 2


@pytest.mark.parametrize("scheme", sorted(SEQEVAL_SCHEMES))
def test_strict_report_equals_seqeval_report(scheme):
    rng = np.random.default_rng([3, len(scheme)])
    y_true, y_pred = _pair(rng, PREFIXES[scheme], 2000)
    ours = chunk_classification_report(y_true, y_pred, output_dict=True, mode="strict",
                                       scheme=scheme)
    theirs = seqeval_report(y_true, y_pred, output_dict=True, mode="strict",
                            scheme=SEQEVAL_SCHEMES[scheme], zero_division=0)
    for chunk_type in "XYZ":
        for key in ("precision", "recall", "f1-score", "support"):
            assert ours[chunk_type][key] == pytest.approx(theirs[chunk_type][key], abs=1e-12)
    for key in ("precision", "recall", "f1-score", "support"):
        assert ours["overall"][key] == pytest.approx(theirs["micro avg"][key], abs=1e-12)


def test_aliases_read_as_their_schemes():
    tags = ["B-X", "E-X", "S-Y", "B-X", "I-X"]
    assert strict_chunk_spans(tags, "IOBES") == strict_chunk_spans(tags, "BIOES") == \
        [("X", 0, 2), ("Y", 2, 3)]
    assert strict_chunk_spans(["B-X", "I-X"], "BIO") == [("X", 0, 2)]


@pytest.mark.parametrize("kwargs, match", [
    ({"mode": "strict"}, "needs the tagging scheme"),
    ({"mode": "strict", "scheme": "IOB1"}, "must be one of"),
    ({"scheme": "IOB2"}, "only with mode='strict'"),
    ({"mode": "lenient"}, "mode must be one of"),
    ({"average": "samples"}, "average must be one of"),
])
def test_bad_settings_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        chunk_precision_recall_fscore_support([["B-X"]], [["B-X"]], **kwargs)


def test_a_tag_outside_the_scheme_names_the_sequence_and_position():
    with pytest.raises(ValueError, match=r"y_pred\[1\]: tag 2 is 'E-X'; IOB2 tags are"):
        chunk_f1_score([["O"], ["B-X", "I-X", "O"]], [["O"], ["B-X", "I-X", "E-X"]],
                       mode="strict", scheme="IOB2")
    with pytest.raises(ValueError, match=r"y_true\[0\]: tag 0 is 'X'"):
        chunk_f1_score([["X"]], [["O"]], mode="strict", scheme="BILOU")


def test_f1_refuses_per_type_scores():
    with pytest.raises(ValueError, match="gives one number"):
        chunk_f1_score([["B-X"]], [["B-X"]], average=None)


class _Memorizer(BaseEstimator):
    """An estimator that predicts the tags it saw, with its first ``noise`` tags made O."""

    def __init__(self, noise=0):
        self.noise = noise

    def fit(self, X, y):
        self.truth_ = {tuple(x): list(t) for x, t in zip(X, y)}
        return self

    def predict(self, X):
        out = []
        for x in X:
            tags = list(self.truth_.get(tuple(x), ["O"] * len(x)))
            out.append(["O" if k < self.noise else t for k, t in enumerate(tags)])
        return out


def test_scorers_work_in_model_selection():
    X = [(k, k + 1, k + 2) for k in range(12)]
    y = [["B-X", "I-X", "O"] if k % 2 else ["O", "B-Y", "B-X"] for k in range(12)]
    model = _Memorizer().fit(X, y)
    scorer = get_scorer("chunk_f1")
    assert scorer(model, X, y) == 1.0
    assert get_scorer("token_accuracy")(model.set_params(noise=1), X, y) == \
        pytest.approx(token_accuracy_score(y, model.predict(X)))
    everything = [(np.arange(12), np.arange(12))]
    scoring = {"f1": scorer, "acc": get_scorer("token_accuracy")}
    search = GridSearchCV(_Memorizer(), {"noise": [2, 0, 1]}, cv=everything, scoring=scoring,
                          refit="f1").fit(X, y)
    assert search.best_params_ == {"noise": 0}
    scores = cross_val_score(_Memorizer(noise=1), X, y, cv=[(np.arange(12), np.arange(6))],
                             scoring=get_scorer("chunk_recall"))
    assert scores[0] == pytest.approx(chunk_precision_recall_fscore_support(
        y[:6], _Memorizer(noise=1).fit(X, y).predict(X[:6]))[1])


def test_scorer_names():
    assert get_scorer_names() == ["attachment_score", "chunk_f1", "chunk_precision",
                                  "chunk_recall", "sequence_accuracy", "token_accuracy"]
    with pytest.raises(ValueError, match="not a scorer of sklearn_struct"):
        get_scorer("accuracy")
