import numpy as np
import pytest

from sklearn_struct.datasets._alignment_features import (
    BASE_FEATURES,
    AlignmentFeatureExtractor,
    alignment_targets,
    edges_to_links,
)
from sklearn_struct.metrics import alignment_error_rate
from sklearn_struct.structures.matching.structure import MatchingStructure

CORPUS = [
    (["the", "house"], ["la", "maison"]),
    (["the", "cat"], ["le", "chat"]),
    (["the", "house", "."], ["la", "maison", "."]),
    (["a", "cat"], ["un", "chat"]),
]


def column(extractor, features, name):
    return features[:, extractor.feature_names_.index(name)]


def test_dice_counts_by_hand():
    extractor = AlignmentFeatureExtractor(n_frequent_words=0).fit(CORPUS)
    # the: 3 pairs, la: 2 pairs, together 2 -> 2*2/(3+2)
    assert extractor.dice("the", "la") == pytest.approx(0.8)
    # cat: 2, chat: 2, together 2 -> 1
    assert extractor.dice("cat", "chat") == pytest.approx(1.0)
    # the: 3, chat: 2, together 1 -> 2/5
    assert extractor.dice("the", "chat") == pytest.approx(0.4)
    assert extractor.dice("the", "unseen") == 0.0
    assert extractor.dice("unseen", "unknown") == 0.0


def test_features_of_a_sentence_by_hand():
    extractor = AlignmentFeatureExtractor(n_frequent_words=1).fit(CORPUS)
    names = extractor.feature_names_
    assert names[:-2] == list(BASE_FEATURES) and names[-2] == "english_is_the"
    assert names[-1] in ("french_is_la", "french_is_maison", "french_is_chat")  # tied at 2
    (features, edges, shape), = extractor.transform([(["The", "cat", "."], ["le", "chat", "."])])
    assert shape == (3, 3)
    assert edges.tolist() == [[j, k] for j in range(3) for k in range(3)]
    assert features.shape == (9, len(extractor.feature_names_))
    dice = column(extractor, features, "dice").reshape(3, 3)
    # lower-cased "the": 3 pairs; le: 1 pair, together 1 -> 2/4; chat 2, together 1 -> 2/5;
    # ".": 1 pair, together 1 -> 2/4.  cat: 2 pairs, with le 1 -> 2/3, with "." never.
    expected = np.array([[0.5, 0.4, 0.5], [2 / 3, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert np.allclose(dice, expected)
    rank_english = column(extractor, features, "dice_inverse_rank_english").reshape(3, 3)
    # row "the": 0.5, 0.4, 0.5 -> ranks 1, 3, 1
    assert np.allclose(rank_english[0], [1, 1 / 3, 1])
    mutual = column(extractor, features, "dice_mutual_best").reshape(3, 3)
    assert np.array_equal(mutual, [[0, 0, 0], [0, 1, 0], [0, 0, 1]])
    diagonal = column(extractor, features, "dice_diagonal_neighbours").reshape(3, 3)
    assert diagonal[1, 1] == pytest.approx(0.5 * (0.5 + 1.0))
    assert diagonal[0, 0] == pytest.approx(0.5 * (0 + 1.0))
    relative = column(extractor, features, "relative_position_difference").reshape(3, 3)
    assert relative[0, 2] == pytest.approx(abs(0.5 / 3 - 2.5 / 3))
    assert np.array_equal(column(extractor, features, "exact_match").reshape(3, 3),
                          [[0, 0, 0], [0, 0, 0], [0, 0, 1]])
    assert np.array_equal(column(extractor, features, "both_punctuation").reshape(3, 3),
                          [[0, 0, 0], [0, 0, 0], [0, 0, 1]])
    assert column(extractor, features, "one_punctuation").sum() == 4
    edit = column(extractor, features, "edit_similarity").reshape(3, 3)
    # cat / chat: one insertion over 4 characters
    assert edit[1, 1] == pytest.approx(0.75)
    assert column(extractor, features, "english_is_the").reshape(3, 3)[0].tolist() == [1, 1, 1]


def _reference_ibm1(pairs, n_iterations):
    """Textbook IBM Model 1 EM with dictionaries (Brown et al. 1993), NULL = None."""
    table = {}
    for source, target in pairs:
        for s in [None] + source:
            for t in target:
                table[(s, t)] = 1.0
    for _ in range(n_iterations):
        counts, totals = {}, {}
        for source, target in pairs:
            for t in target:
                normaliser = sum(table[(s, t)] for s in [None] + source)
                for s in [None] + source:
                    share = table[(s, t)] / normaliser
                    counts[(s, t)] = counts.get((s, t), 0.0) + share
                    totals[s] = totals.get(s, 0.0) + share
        table = {key: value / totals[key[0]] for key, value in counts.items()}
    return table


def test_ibm1_matches_textbook_em():
    extractor = AlignmentFeatureExtractor(n_ibm1_iterations=4).fit(CORPUS)
    reference = _reference_ibm1([(e, f) for e, f in CORPUS], 4)
    assert extractor.translation_english_to_french_.keys() == reference.keys()
    for key, value in reference.items():
        assert extractor.translation_english_to_french_[key] == pytest.approx(value)
    backward = _reference_ibm1([(f, e) for e, f in CORPUS], 4)
    assert extractor.translation_french_to_english_[("chat", "cat")] == pytest.approx(
        backward[("chat", "cat")])
    (features, _, _), = extractor.transform([(["the", "cat"], ["le", "chat"])])
    forward = column(extractor, features, "ibm1_english_to_french").reshape(2, 2)
    t = reference
    expected = t[("cat", "chat")] / (t[(None, "chat")] + t[("the", "chat")] + t[("cat", "chat")])
    assert forward[1, 1] == pytest.approx(expected)
    back = column(extractor, features, "ibm1_french_to_english").reshape(2, 2)
    b = backward
    assert back[0, 0] == pytest.approx(  # edge (the, le): P(le generated the)
        b[("le", "the")] / (b[(None, "the")] + b[("le", "the")] + b[("chat", "the")]))
    assert back[0, 1] == pytest.approx(
        b[("chat", "the")] / (b[(None, "the")] + b[("le", "the")] + b[("chat", "the")]))
    # one sentence, one word each side: t = 1 for both sources, posterior 1 / 2
    single = AlignmentFeatureExtractor(n_ibm1_iterations=3).fit([(["a"], ["x"])])
    (features, _, _), = single.transform([(["a"], ["x"])])
    assert column(single, features, "ibm1_english_to_french")[0] == pytest.approx(0.5)
    off = AlignmentFeatureExtractor(n_ibm1_iterations=0).fit(CORPUS)
    (features, _, _), = off.transform(CORPUS[:1])
    assert not column(off, features, "ibm1_french_to_english").any()


def test_orthographic_features():
    extractor = AlignmentFeatureExtractor(n_frequent_words=0).fit(
        [(["government"], ["gouvernement"]), (["1999"], ["1999"])])
    (features, _, _), (numbers, _, _) = extractor.transform(
        [(["government"], ["gouvernement"]), (["1,999"], ["1999"])])
    assert column(extractor, features, "common_prefix_ratio")[0] == pytest.approx(2 / 12)
    assert column(extractor, features, "common_prefix_4")[0] == 0
    assert column(extractor, features, "edit_similarity")[0] == pytest.approx(
        1 - _reference_levenshtein("government", "gouvernement") / 12)
    assert column(extractor, numbers, "both_numbers")[0] == 1
    assert column(extractor, numbers, "exact_match")[0] == 0


def _reference_levenshtein(a, b):
    import itertools

    table = np.zeros((len(a) + 1, len(b) + 1), dtype=int)
    table[:, 0] = np.arange(len(a) + 1)
    table[0, :] = np.arange(len(b) + 1)
    for i, j in itertools.product(range(1, len(a) + 1), range(1, len(b) + 1)):
        table[i, j] = min(table[i - 1, j] + 1, table[i, j - 1] + 1,
                          table[i - 1, j - 1] + (a[i - 1] != b[j - 1]))
    return table[-1, -1]


def test_targets_links_round_trip_and_matching_input():
    extractor = AlignmentFeatureExtractor().fit(CORPUS)
    X = extractor.transform(CORPUS[:2])
    sure = [np.array([[0, 0], [1, 1]]), np.array([[1, 1]])]
    y = alignment_targets(X, sure)
    assert y[0].tolist() == [1, 0, 0, 1] and y[1].tolist() == [0, 0, 0, 1]
    links = edges_to_links(X, y)
    assert alignment_error_rate(sure, sure, links) == 0.0
    batch = MatchingStructure().make_batch(X)
    assert batch.n_weights == len(extractor.feature_names_)
    assert batch.node_counts.tolist() == [[2, 2], [2, 2]]


def test_empty_sentence_gives_no_edges():
    extractor = AlignmentFeatureExtractor().fit(CORPUS)
    (features, edges, shape), = extractor.transform([([], ["la"])])
    assert features.shape == (0, len(extractor.feature_names_)) and edges.shape == (0, 2)
    assert shape == (0, 1)


def test_bad_inputs():
    with pytest.raises(ValueError, match="non-empty"):
        AlignmentFeatureExtractor().fit([])
    with pytest.raises(TypeError, match="pair 1"):
        AlignmentFeatureExtractor().fit([(["a"], ["b"]), "ab"])
    with pytest.raises(TypeError, match="french side"):
        AlignmentFeatureExtractor().fit([(["a"], "b c")])
    with pytest.raises(ValueError, match="n_frequent_words"):
        AlignmentFeatureExtractor(n_frequent_words=-1).fit(CORPUS)
    with pytest.raises(ValueError, match="n_ibm1_iterations"):
        AlignmentFeatureExtractor(n_ibm1_iterations=1.5).fit(CORPUS)
    extractor = AlignmentFeatureExtractor().fit(CORPUS)
    X = extractor.transform(CORPUS[:1])
    with pytest.raises(ValueError, match=r"example 0: link \(5, 0\)"):
        alignment_targets(X, [np.array([[5, 0]])])
    with pytest.raises(ValueError, match="1 examples but links has 2"):
        alignment_targets(X, [[], []])


def test_hansards_features(shared_data):
    from sklearn_struct.datasets import load_hansards_alignments

    folder = shared_data / "wpt03_hansards_en_fr_alignment" / "uva-slpl_embedalign"
    trial = load_hansards_alignments(folder / "trial.en-fr.naacl")
    test = load_hansards_alignments(folder / "test.en-fr.naacl")
    pairs = list(zip(trial.english, trial.french))
    # Dice counted without labels over the 484 gold sentence pairs
    extractor = AlignmentFeatureExtractor().fit(pairs + list(zip(test.english, test.french)))
    X = extractor.transform(pairs)
    y = alignment_targets(X, trial.sure)
    assert sum(len(e) for _, e, _ in X) == sum(len(a) * len(b) for a, b in pairs)
    assert sum(int(v.sum()) for v in y) == 338  # the trial sure links (README)
    features = np.vstack([x[0] for x in X])
    labels = np.concatenate(y).astype(bool)
    dice = features[:, extractor.feature_names_.index("dice")]
    assert dice[labels].mean() > 3 * dice[~labels].mean()
