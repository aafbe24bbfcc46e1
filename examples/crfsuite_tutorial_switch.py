"""
=====================================================================
sklearn-crfsuite's tutorial with the import changed (CoNLL-2003 NER)
=====================================================================

sklearn-crfsuite's tutorial, as its users run it: the token feature dicts of
``word2features`` (lower case, last three and two letters, ``isupper``,
``istitle``, ``isdigit``, the part of speech and its first two letters, the
same of the previous and next words, ``BOS`` and ``EOS``), then
``CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=100,
all_possible_transitions=True)``, ``fit``, ``predict`` and the tutorial's
weighted flat F1 over the labels other than ``O``.  The only change is the
import: ``from sklearn_struct import CRF`` in place of ``from sklearn_crfsuite
import CRF``.  Here on CoNLL-2003 English (train on ``eng.train``, test on
``eng.testb``), side by side with sklearn-crfsuite itself when it is
installed, with the entity F1 of conlleval
(:func:`sklearn_struct.metrics.chunk_f1_score`) and the training time of each.

It trains two CRFs on 204k tokens for a few minutes, so it is not run when the
documentation is built.  Run ``python crfsuite_tutorial_switch.py [data_dir]``;
``data_dir`` defaults to ``$SKLEARN_STRUCT_SHARED_DATA`` or ``../shared/data``
next to the repository.  ``benchmarks/bench_crfsuite_tutorial_switch.py`` runs
it and records the numbers.
"""

import os
import sys
import time
from pathlib import Path

from sklearn_struct.datasets import load_conll
from sklearn_struct.metrics import chunk_f1_score


def word2features(sent, i):
    """The tutorial's token features (sklearn-crfsuite's docs, "Tutorial")."""
    word, postag = sent[i][0], sent[i][1]
    features = {
        "bias": 1.0,
        "word.lower()": word.lower(),
        "word[-3:]": word[-3:],
        "word[-2:]": word[-2:],
        "word.isupper()": word.isupper(),
        "word.istitle()": word.istitle(),
        "word.isdigit()": word.isdigit(),
        "postag": postag,
        "postag[:2]": postag[:2],
    }
    if i > 0:
        word1, postag1 = sent[i - 1][0], sent[i - 1][1]
        features.update({
            "-1:word.lower()": word1.lower(),
            "-1:word.istitle()": word1.istitle(),
            "-1:word.isupper()": word1.isupper(),
            "-1:postag": postag1,
            "-1:postag[:2]": postag1[:2],
        })
    else:
        features["BOS"] = True
    if i < len(sent) - 1:
        word1, postag1 = sent[i + 1][0], sent[i + 1][1]
        features.update({
            "+1:word.lower()": word1.lower(),
            "+1:word.istitle()": word1.istitle(),
            "+1:word.isupper()": word1.isupper(),
            "+1:postag": postag1,
            "+1:postag[:2]": postag1[:2],
        })
    else:
        features["EOS"] = True
    return features


def sent2features(sent):
    return [word2features(sent, i) for i in range(len(sent))]


def sent2labels(sent):
    return [label for token, postag, label in sent]


def flat_f1(y_true, y_pred, labels):
    """The tutorial's ``metrics.flat_f1_score(..., average="weighted", labels=labels)``."""
    from sklearn.metrics import f1_score
    return f1_score([t for s in y_true for t in s], [t for s in y_pred for t in s],
                    average="weighted", labels=labels)


def tutorial(CRF, X_train, y_train, X_test, y_test):
    """The tutorial's training and evaluation, for a ``CRF`` class."""
    crf = CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=100,
              all_possible_transitions=True)
    start = time.perf_counter()
    crf.fit(X_train, y_train)
    seconds = time.perf_counter() - start
    labels = list(crf.classes_)
    labels.remove("O")
    y_pred = crf.predict(X_test)
    return {"flat F1": flat_f1(y_test, y_pred, labels),
            "entity F1": chunk_f1_score(y_test, [list(p) for p in y_pred]),
            "fit seconds": seconds, "non-zero state features": len(crf.state_features_)}


def load(data_dir):
    """CoNLL-2003 English as the tutorial's (word, postag, label) sentences."""
    def sentences(name):
        data = load_conll(Path(data_dir) / "conll2003_ner_en" / name)
        return [list(zip(w, p, t)) for w, p, t in zip(data.word, data.pos, data.tags)]
    train, test = sentences("eng.train.gz"), sentences("eng.testb.gz")
    return ([sent2features(s) for s in train], [sent2labels(s) for s in train],
            [sent2features(s) for s in test], [sent2labels(s) for s in test])


def run(data_dir):
    """Both CRFs on the same dicts: ``{name: results}``."""
    X_train, y_train, X_test, y_test = load(data_dir)
    results = {}
    from sklearn_struct import CRF  # the switch: was "from sklearn_crfsuite import CRF"
    results["sklearn_struct"] = tutorial(CRF, X_train, y_train, X_test, y_test)
    try:
        from sklearn_crfsuite import CRF
    except ImportError:
        print("sklearn-crfsuite is not installed: sklearn_struct alone")
    else:
        results["sklearn-crfsuite"] = tutorial(CRF, X_train, y_train, X_test, y_test)
    return results


if __name__ == "__main__":
    default_dir = os.environ.get(
        "SKLEARN_STRUCT_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
    for name, numbers in run(sys.argv[1] if len(sys.argv) > 1 else default_dir).items():
        shown = [f"{key} {value:.4f}" if isinstance(value, float) else f"{key} {value}"
                 for key, value in numbers.items()]
        print(f"{name:18s} " + "  ".join(shown))
