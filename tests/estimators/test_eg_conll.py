"""EGCRF in a scikit-learn pipeline on CoNLL-2000 sentences (small subset)."""

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline

from sklearn_struct.datasets import load_conll
from sklearn_struct.eg import EGCRF
from sklearn_struct.metrics import chunk_f1_score
from sklearn_struct.preprocessing import SequenceDictVectorizer, conll_token_features

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def conll_subset(shared_data):
    data = load_conll(shared_data / "conll2000_chunking" / "train.txt.gz")
    sentences = [conll_token_features(w, p) for w, p in zip(data.word[:160], data.pos[:160])]
    return sentences, data.tags[:160]


def test_grid_search_over_C_in_a_pipeline(conll_subset):
    X, y = conll_subset
    pipeline = Pipeline([("vec", SequenceDictVectorizer()),
                         ("egcrf", EGCRF(tol=1e-3, max_iter=30, random_state=0))])
    search = GridSearchCV(pipeline, {"egcrf__C": [0.01, 1.0]}, cv=2).fit(X[:120], y[:120])
    assert search.best_params_["egcrf__C"] in (0.01, 1.0)
    scores = search.cv_results_["mean_test_score"]
    assert np.all((scores > 0.5) & (scores <= 1.0))
    predicted = search.predict(X[120:])
    assert [len(p) for p in predicted] == [len(t) for t in y[120:]]
    assert chunk_f1_score(y[120:], predicted) > 0.5


def test_cross_val_score_on_sentences(conll_subset):
    X, y = conll_subset
    pipeline = Pipeline([("vec", SequenceDictVectorizer()),
                         ("egcrf", EGCRF(C=0.1, tol=1e-3, max_iter=20, random_state=0))])
    scores = cross_val_score(pipeline, X[:90], y[:90], cv=3)
    assert scores.shape == (3,) and np.all(scores > 0.6)
