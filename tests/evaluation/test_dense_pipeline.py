"""The user guide's pipeline that joins dict features with a matrix of word vectors."""

import numpy as np
from sklearn.model_selection import KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from sklearn_struct import EGCRF
from sklearn_struct.preprocessing import SequenceDictVectorizer


def _data(rng, words, n):
    """Sentences of token dicts and labels: a word's label is the sign of its vector's
    first value."""
    X, y = [], []
    for _ in range(n):
        chosen = rng.choice(len(words), rng.randint(2, 6))
        X.append([{"w": words[i]} for i in chosen])
        y.append(["POS" if i % 2 == 0 else "NEG" for i in chosen])
    return X, y


def test_word_vectors_join_the_dict_features_in_a_pipeline():
    rng = np.random.RandomState(0)
    vocabulary = [f"word{i}" for i in range(40)]
    embeddings = rng.randn(40, 3) * 0.3
    embeddings[:, 0] += np.where(np.arange(40) % 2 == 0, 1.0, -1.0)
    row = {word: i for i, word in enumerate(vocabulary)}

    def add_vectors(X):  # as in the user guide ("Dense blocks")
        zero = np.zeros(embeddings.shape[1])
        return [[{**token, "emb": embeddings[row[token["w"]]] if token["w"] in row else zero}
                 for token in sentence] for sentence in X]

    X_train, y_train = _data(rng, vocabulary[:20], 60)   # the test words are never seen
    X_test, y_test = _data(rng, vocabulary[20:], 30)
    model = make_pipeline(FunctionTransformer(add_vectors), SequenceDictVectorizer(),
                          EGCRF(C=1.0, random_state=0))
    model.fit(X_train, y_train)
    names = model[1].feature_names_
    assert [name for name in names if name.startswith("emb")] == ["emb[0]", "emb[1]", "emb[2]"]
    coef = model[-1].coef_[:, [names.index("emb[0]")]]
    assert abs(coef).max() > 0.5
    with_vectors = model.score(X_test, y_test)
    without = make_pipeline(SequenceDictVectorizer(), EGCRF(C=1.0, random_state=0))
    without = without.fit(X_train, y_train).score(X_test, y_test)
    assert with_vectors > 0.95 and without < 0.7   # only the vectors reach unseen words
    assert X_train[0][0] == {"w": X_train[0][0]["w"]}   # the user's dicts are untouched
    scores = cross_val_score(model, X_train, y_train, cv=KFold(3))
    assert scores.min() > 0.9
