import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.utils import murmurhash3_32
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_struct.datasets import load_conll
from sklearn_struct.preprocessing import SequenceDictVectorizer, conll_token_features

X_TOY = [
    [{"w": "the", "len": 3, "cap": False}, {"w": "cat", "len": 3, "cap": True, "tags": ["n", "s"]}],
    [{"w": "sat", "len": 3.5}],
]


def test_vocabulary_values_and_layout():
    vec = SequenceDictVectorizer()
    Xt = vec.fit_transform(X_TOY)
    names = ["cap", "len", "tags=n", "tags=s", "w=cat", "w=sat", "w=the"]
    assert vec.get_feature_names_out().tolist() == names
    assert vec.vocabulary_ == {name: i for i, name in enumerate(names)}
    assert [type(m) for m in Xt] == [sp.csr_matrix, sp.csr_matrix]
    assert all(m.dtype == np.float64 for m in Xt)
    # strings -> "name=value" indicators, numbers -> values, booleans -> 1/0, lists -> indicators
    np.testing.assert_array_equal(
        Xt[0].toarray(), [[0, 3, 0, 0, 0, 0, 1], [1, 3, 1, 1, 1, 0, 0]]
    )
    np.testing.assert_array_equal(Xt[1].toarray(), [[0, 3.5, 0, 0, 0, 1, 0]])
    assert Xt[0].nnz == 2 + 5  # the False value is not stored
    for fitted_then_transformed, at_once in zip(vec.fit(X_TOY).transform(X_TOY), Xt):
        assert (fitted_then_transformed != at_once).nnz == 0


def test_vocabulary_does_not_depend_on_data_order():
    rng = np.random.RandomState(0)
    words = ["a", "b", "c", "d", "e", "f"]
    X = [[{"w": rng.choice(words), "x": float(rng.rand())} for _ in range(rng.randint(1, 6))]
         for _ in range(30)]
    order = rng.permutation(len(X))
    reordered = [list(reversed(X[i])) for i in order]
    vec_a, vec_b = SequenceDictVectorizer(), SequenceDictVectorizer()
    Xa, Xb = vec_a.fit_transform(X), vec_b.fit_transform(reordered)
    assert vec_a.vocabulary_ == vec_b.vocabulary_
    assert vec_a.feature_names_ == sorted(vec_a.feature_names_)
    for position, i in enumerate(order):
        np.testing.assert_array_equal(Xb[position].toarray()[::-1], Xa[i].toarray())
        assert Xa[i].has_sorted_indices


def test_unknown_features_are_ignored_at_transform():
    vec = SequenceDictVectorizer().fit(X_TOY)
    Xt = vec.transform([[{"w": "dog", "len": 2, "new": 1.0}], [], [{"w": "cat"}]])
    assert [m.shape for m in Xt] == [(1, 7), (0, 7), (1, 7)]
    np.testing.assert_array_equal(Xt[0].toarray(), [[0, 2, 0, 0, 0, 0, 0]])
    np.testing.assert_array_equal(Xt[2].toarray(), [[0, 0, 0, 0, 1, 0, 0]])


def test_unknown_features_anywhere_leave_each_row_its_known_ones():
    """Unseen names dropped from any place in any row: every row equals the transform of
    its token with only the fitted names (the rows' bounds move with what is dropped)."""
    rng = np.random.RandomState(0)
    known = [{"w": str(w), "n": float(rng.randint(1, 4)), "f": bool(rng.randint(2))}
             for w in rng.randint(0, 5, size=40)]
    vec = SequenceDictVectorizer().fit([known])
    noisy = []
    for token in known:
        items = list(token.items()) + [(f"new{k}", "x") for k in range(rng.randint(0, 3))]
        items += [("w2", "y")] * rng.randint(0, 2) + [("tags", ["a", str(rng.randint(3))])]
        rng.shuffle(items)
        noisy.append(dict(items))
    sequences = [noisy[:7], [], noisy[7:8], noisy[8:]]
    for rows, sequence in zip(vec.transform(sequences), sequences):
        assert rows.shape == (len(sequence), len(vec.vocabulary_))
        for row, token in zip(rows.toarray(), sequence):
            alone = {name: value for name, value in token.items() if name in ("w", "n", "f")}
            np.testing.assert_array_equal(row, vec.transform([[alone]])[0].toarray()[0])
        assert rows.nnz == sum(2 + bool(token["f"]) for token in sequence)


def _expected_hash(name, n_features, alternate_sign):
    h = murmurhash3_32(name, seed=0)
    sign = (1.0 if h >= 0 else -1.0) if alternate_sign else 1.0
    return abs(h) % n_features, sign


@pytest.mark.parametrize("alternate_sign", [True, False])
def test_hashing(alternate_sign):
    vec = SequenceDictVectorizer(n_features=64, alternate_sign=alternate_sign)
    Xt = vec.transform(X_TOY)  # nothing to learn: usable without fit
    assert [m.shape for m in Xt] == [(2, 64), (1, 64)]
    expected = np.zeros(64)
    token = [("w=cat", 1.0), ("len", 3.0), ("cap", 1.0), ("tags=n", 1.0), ("tags=s", 1.0)]
    for name, value in token:
        column, sign = _expected_hash(name, 64, alternate_sign)
        expected[column] += sign * value
    np.testing.assert_allclose(Xt[0].toarray()[1], expected)
    if not alternate_sign:
        assert all(m.data.min() > 0 for m in Xt)
    for a, b in zip(vec.fit_transform(X_TOY), Xt):
        assert (a != b).nnz == 0
    with pytest.raises(AttributeError, match="hashing"):
        vec.get_feature_names_out()
    assert vec.transform([[]])[0].shape == (0, 64)


def test_input_errors_name_the_token():
    vec = SequenceDictVectorizer()
    with pytest.raises(TypeError, match=r"X\[1\]\[0\] must be a dict of token features, got str"):
        vec.fit([[{"a": 1}], ["word"]])
    with pytest.raises(TypeError, match=r"X\[0\]\[1\]: feature 'a' has a value of type NoneType"):
        vec.fit([[{"a": 1}, {"a": None}]])
    with pytest.raises(ValueError, match=r"X\[0\]\[0\]: feature 'a' has the non-finite value nan"):
        vec.fit([[{"a": float("nan")}]])
    with pytest.raises(TypeError, match=r"X\[0\]\[0\]: feature names must be str, got 3"):
        vec.fit([[{3: "a"}]])
    with pytest.raises(TypeError, match=r"X\[0\] must be a list of token feature dicts, got dict"):
        vec.fit([{"a": 1}])
    with pytest.raises(TypeError, match="X must be a list of sequences"):
        vec.fit("text")
    with pytest.raises(NotFittedError):
        SequenceDictVectorizer().transform(X_TOY)
    with pytest.raises(InvalidParameterError):
        SequenceDictVectorizer(n_features=0).fit(X_TOY)
    # numpy scalars are numbers too
    Xt = SequenceDictVectorizer().fit_transform([[{"a": np.float32(2.5), "b": np.int64(2)}]])
    np.testing.assert_array_equal(Xt[0].toarray(), [[2.5, 2]])


class _TokenLogisticRegression(ClassifierMixin, BaseEstimator):
    """A stand-in chain estimator: classifies the tokens of a list of CSR matrices."""

    def __init__(self, C=1.0):
        self.C = C

    def fit(self, X, y):
        self.model_ = LogisticRegression(C=self.C).fit(sp.vstack(X), np.concatenate(y))
        self.classes_ = self.model_.classes_
        return self

    def predict(self, X):
        lengths = np.cumsum([m.shape[0] for m in X])[:-1]
        return np.split(self.model_.predict(sp.vstack(X)), lengths)

    def score(self, X, y):
        return float(np.mean(np.concatenate(self.predict(X)) == np.concatenate(y)))


def test_pipeline_and_grid_search():
    rng = np.random.RandomState(0)
    # label = the word's first letter; the word also carries a noise feature
    words = ["apple", "avocado", "banana", "blueberry", "cherry"]
    X = [[{"w": w, "noise": float(rng.rand())} for w in rng.choice(words, 4)] for _ in range(40)]
    y = [np.array([token["w"][0] for token in seq]) for seq in X]
    pipe = Pipeline([("vec", SequenceDictVectorizer()), ("clf", _TokenLogisticRegression(C=10.0))])
    pipe.fit(X, y)
    predictions = pipe.predict(X)
    assert [len(p) for p in predictions] == [4] * 40
    assert pipe.score(X, y) == 1.0
    assert pipe.named_steps["vec"].get_feature_names_out().tolist() == ["noise"] + [
        f"w={w}" for w in words
    ]
    search = GridSearchCV(
        Pipeline([("vec", SequenceDictVectorizer()), ("clf", _TokenLogisticRegression())]),
        {"vec__n_features": [None, 32], "clf__C": [0.01, 10.0]},
        cv=2,
    ).fit(X, y)
    assert search.best_params_["clf__C"] == 10.0 and search.best_score_ == 1.0
    assert clone(pipe).get_params()["vec__alternate_sign"] is True


def test_conll_token_features():
    features = conll_token_features(["McDonald's", "sold", "1,000.5"], ["NNP", "VBD", "CD"])
    first, middle, last = features
    assert first == {
        "bias": 1.0,
        "word": "McDonald's",
        "suffix3": "d's",
        "suffix2": "'s",
        "shape": "XxXx'x",
        "word.isdigit": False,
        "word.lower": "mcdonald's",
        "word.istitle": False,
        "word.isupper": False,
        "pos": "NNP",
        "pos[:2]": "NN",
        "+1:word.lower": "sold",
        "+1:word.istitle": False,
        "+1:word.isupper": False,
        "+1:pos": "VBD",
        "+1:pos[:2]": "VB",
        "BOS": True,
    }
    assert middle["-1:pos"] == "NNP" and middle["+1:word.lower"] == "1,000.5"
    assert "BOS" not in middle and "EOS" not in middle
    assert last["shape"] == "d,d.d" and last["EOS"] and "+1:word.lower" not in last
    no_pos = conll_token_features(["A", "b"], window=0)
    assert "pos" not in no_pos[0] and "+1:word.lower" not in no_pos[0]
    assert no_pos[0]["word.isupper"] and no_pos[0]["BOS"] and "EOS" not in no_pos[0]
    wide = conll_token_features(list("abcde"), window=2)
    assert wide[2]["-2:word.lower"] == "a" and wide[2]["+2:word.lower"] == "e"
    assert conll_token_features([]) == []
    with pytest.raises(ValueError, match="2 words but 1 POS tags"):
        conll_token_features(["a", "b"], ["DT"])
    with pytest.raises(ValueError, match="window"):
        conll_token_features(["a"], window=-1)


def test_conll_features_vectorized_on_shared_chunking(shared_data):
    data = load_conll(shared_data / "conll2000_chunking" / "test.txt.gz")
    sentences = [conll_token_features(w, p) for w, p in zip(data.word[:300], data.pos[:300])]
    vec = SequenceDictVectorizer()
    Xt = vec.fit_transform(sentences)
    assert [m.shape[0] for m in Xt] == [len(w) for w in data.word[:300]]
    # every token has its bias, word, suffixes, shape, lower case and POS indicators set
    assert all(m[:, vec.vocabulary_["bias"]].toarray().min() == 1 for m in Xt)
    assert all(m.getnnz(axis=1).min() >= 10 for m in Xt)
    first = data.word[0][0]
    assert Xt[0][0, vec.vocabulary_[f"word={first}"]] == 1
