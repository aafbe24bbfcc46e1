"""SequenceDictVectorizer on every value sklearn-crfsuite accepts, dense blocks, min_freq."""

import copy

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction import DictVectorizer, FeatureHasher

from sklearn_struct.preprocessing import SequenceDictVectorizer


def _flat(token):
    """A token dict in DictVectorizer's terms: nested names joined by ':', dense blocks
    spread over ``name[k]``, bytes decoded, lists of str as indicators."""
    out = {}
    for name, value in token.items():
        if isinstance(value, dict):
            out.update(_flat({f"{name}:{key}": inner for key, inner in value.items()}))
        elif isinstance(value, bytes):
            out[f"{name}={value.decode()}"] = 1.0
        elif isinstance(value, str):
            out[f"{name}={value}"] = 1.0
        elif isinstance(value, (list, np.ndarray)) and len(value) and isinstance(value[0], str):
            out.update({f"{name}={v}": 1.0 for v in value})
        elif isinstance(value, (list, tuple, np.ndarray)):
            out.update({f"{name}[{k}]": float(v) for k, v in enumerate(value)})
        else:
            out[name] = float(value)
    return out


def _sequences(rng, n=40, width=3):
    words = ["the", "cat", "sat", "on", "mat"]
    X = []
    for _ in range(n):
        sequence = []
        for _ in range(rng.integers(1, 6)):
            word = str(rng.choice(words))
            token = {"w": word, "len": len(word), "cap": bool(rng.integers(2)),
                     "emb": list(rng.normal(size=width)), "raw": word.encode(),
                     "ctx": {"prev": str(rng.choice(words)), "n": int(rng.integers(3))},
                     "tags": ["a", str(rng.choice(["b", "c"]))]}
            if rng.random() < 0.3:
                del token["emb"]  # a block is optional per token
            sequence.append(token)
        X.append(sequence)
    return X


def test_every_value_kind_equals_dictvectorizer_on_flattened_tokens():
    X = _sequences(np.random.default_rng(0))
    before = copy.deepcopy(X)
    vec = SequenceDictVectorizer()
    ours = sp.vstack(vec.fit_transform(X)).toarray()
    reference = DictVectorizer(sort=True)
    expected = reference.fit_transform([_flat(t) for s in X for t in s]).toarray()
    assert vec.get_feature_names_out().tolist() == reference.get_feature_names_out().tolist()
    np.testing.assert_array_equal(ours, expected)
    assert vec.dense_widths_ == {"emb": 3}
    assert X == before  # the input is not modified


def test_numpy_blocks_and_transform_of_new_data():
    vec = SequenceDictVectorizer().fit([[{"emb": np.array([1.0, 2.0]), "w": "a"}]])
    out = vec.transform([[{"emb": (3, 4.5)}, {"w": "a", "unseen": [1.0]}]])[0].toarray()
    np.testing.assert_array_equal(out, [[3.0, 4.5, 0.0], [0.0, 0.0, 1.0]])


def test_hashed_blocks_equal_hashing_the_spread_pairs():
    X = _sequences(np.random.default_rng(1), n=10)
    ours = sp.vstack(SequenceDictVectorizer(n_features=64).fit_transform(X)).toarray()
    hasher = FeatureHasher(n_features=64, input_type="pair")
    expected = hasher.transform([list(_flat(t).items()) for s in X for t in s]).toarray()
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-12)


def test_min_freq_keeps_the_features_seen_on_enough_tokens():
    X = _sequences(np.random.default_rng(2))
    full = SequenceDictVectorizer().fit(X)
    counts = (sp.vstack(full.transform(X)) != 0).sum(axis=0).A1
    for min_freq in (2, 20):
        vec = SequenceDictVectorizer(min_freq=min_freq)
        kept = full.get_feature_names_out()[counts >= min_freq].tolist()
        out = sp.vstack(vec.fit_transform(X))
        assert vec.get_feature_names_out().tolist() == kept
        expected = sp.vstack(full.transform(X))[:, counts >= min_freq]
        np.testing.assert_array_equal(out.toarray(), expected.toarray())
        np.testing.assert_array_equal(sp.vstack(vec.transform(X)).toarray(), out.toarray())


def test_min_freq_needs_the_vocabulary():
    with pytest.raises(ValueError, match="min_freq needs the vocabulary"):
        SequenceDictVectorizer(n_features=8, min_freq=2).fit([[{"w": "a"}]])
    with pytest.raises(ValueError, match="min_freq"):
        SequenceDictVectorizer(min_freq=0).fit([[{"w": "a"}]])


@pytest.mark.parametrize("X, match", [
    ([[{"emb": [1.0, 2.0]}], [{"emb": [1.0]}, {"emb": [1.0, 2.0, 3.0]}]],
     r"X\[1\]\[0\]: feature 'emb' is a dense block of 1 values; earlier tokens gave 2"),
    ([[{"emb": [1.0, float("nan")]}]], r"X\[0\]\[0\]: feature 'emb' has non-finite values"),
    ([[{"emb": np.ones((2, 2))}]], r"dense block of shape \(2, 2\)"),
    ([[{"raw": b"\xff"}]], r"X\[0\]\[0\]: feature 'raw' holds bytes that are not UTF-8"),
])
def test_bad_values_name_the_token(X, match):
    with pytest.raises(ValueError, match=match):
        SequenceDictVectorizer().fit(X)


def test_a_block_of_another_width_at_transform_names_the_token():
    vec = SequenceDictVectorizer().fit([[{"emb": [1.0, 2.0]}]])
    with pytest.raises(ValueError, match=r"X\[0\]\[1\]: feature 'emb' is a dense block of 3 "
                                         r"values; the vectorizer was fitted with 2"):
        vec.transform([[{"emb": [1.0, 2.0]}, {"emb": [1.0, 2.0, 3.0]}]])


@pytest.mark.parametrize("value, kind", [(object(), "object"), ([1.0, "a"], "list"),
                                         ({"k": object()}, "object")])
def test_other_types_are_refused(value, kind):
    with pytest.raises(TypeError, match=f"has a value of type {kind}; expected str, bytes"):
        SequenceDictVectorizer().fit([[{"f": value}]])


@pytest.mark.parametrize("n_features", [None, 64])
def test_numpy_strings_and_lists_of_words_are_read_as_str(n_features):
    """numpy.str_ values (labels taken from an array) and lists of words take the fast path;
    they give the features of the same values as str, and of a tuple of words."""
    plain = [[{"tag": "NOUN", "ch": ["L:a", "R:b"], "x": 1.5}, {"tag": "VERB", "ch": []}],
             [{"tag": "DET", "ch": ["R:c"]}]]
    numpy = [[{"tag": np.str_(t["tag"]), "ch": tuple(t["ch"]),
               **({"x": t["x"]} if "x" in t else {})} for t in s] for s in plain]
    first = SequenceDictVectorizer(n_features=n_features).fit(plain)
    second = SequenceDictVectorizer(n_features=n_features).fit(numpy)
    if n_features is None:
        assert first.vocabulary_ == second.vocabulary_
    for a, b in zip(first.transform(plain), second.transform(numpy)):
        assert a.shape == b.shape and (a != b).nnz == 0
        assert a.has_canonical_format


def test_sequences_are_cut_from_the_stacked_rows():
    rng = np.random.RandomState(0)
    X = [[{f"w={rng.randint(20)}": 1.0, "v": float(rng.randn())}
          for _ in range(rng.randint(0, 6))] for _ in range(30)]
    vectorizer = SequenceDictVectorizer().fit(X)
    blocks = vectorizer.transform(X)
    stacked = sp.vstack(blocks).tocsr()
    assert [b.shape[0] for b in blocks] == [len(s) for s in X]
    offsets = np.cumsum([0] + [len(s) for s in X])
    for block, start, stop in zip(blocks, offsets[:-1], offsets[1:]):
        assert sp.isspmatrix_csr(block) and block.dtype == np.float64
        assert (block != stacked[start:stop]).nnz == 0
