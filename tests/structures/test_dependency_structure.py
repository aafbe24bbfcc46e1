"""DependencyTreeStructure: conformance, hashed arc features, and learning on UD sentences."""

import itertools
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import EGCRF, EGStructuredSVM
from sklearn_struct.datasets import is_projective, load_conllu
from sklearn_struct.metrics import attachment_score
from sklearn_struct.preprocessing import DependencyTokenEncoder
from sklearn_struct.structures import DependencyTreeStructure
from sklearn_struct.structures.dependency._arc_features import (
    BOUNDARY, NO_PREFIX, POS, PREFIX, ROOT, SECOND_POS, WORD, arc_feature_ids, distance_bin,
    feature_hash, max_arc_features)
from sklearn_struct.utils import check_structure

from _trees import assert_cached_route_matches, dependency_trees


def _instances(rng):
    X = [rng.randint(4, 9, size=(n, 3)) for n in (1, 3, 4)]
    y = [next(dependency_trees(len(x), True, True)) for x in X]
    return X, y


def test_training_feature_cache_gives_the_hashed_features():
    """The ids a fit caches (distinct per sentence, localised) give the same scores, feature
    sums and squared norms as hashing every arc again, on sentences long enough to repeat
    in-between templates within an arc and ids across arcs."""
    rng = np.random.default_rng(3)
    X = [np.column_stack([rng.integers(4, 12, size=(n, 3)), np.zeros(n, dtype=np.int64),
                          rng.integers(4, 9, size=n)]) for n in (1, 2, 7, 40)]
    structure = DependencyTreeStructure(hash_bits=10)
    batch = structure.make_batch(X)
    hashed, cached = structure.kernel_data(batch), structure.kernel_data(batch, training=True)
    assert hashed.local_ids.size == 0 and cached.local_ids.size > 0
    assert cached.distinct_ids.size < cached.local_ids.size  # ids repeat within a sentence
    for a in range(cached.id_offsets.size - 1):  # each arc's positions in order
        assert np.all(np.diff(cached.local_ids[cached.id_offsets[a]:cached.id_offsets[a + 1]]) >= 0)
    ops = structure.kernel_ops.functions
    w = rng.normal(size=batch.n_weights)
    for scale in (np.empty(0), rng.uniform(0.5, 2.0, size=batch.n_weights)):
        for i in range(len(X)):
            n_parts = batch.part_offsets[i + 1] - batch.part_offsets[i]
            one_arc = np.zeros(n_parts)  # (added id by id, not through the distinct ids)
            one_arc[rng.integers(n_parts)] = 1.5
            for coef in (rng.normal(size=n_parts) * (rng.random(n_parts) < 0.7), one_arc):
                assert_cached_route_matches(ops, hashed, cached, i, w, scale, coef)


@pytest.mark.parametrize("projective", [True, False])
@pytest.mark.parametrize("single_root", [True, False])
def test_conforms(projective, single_root):
    structure = DependencyTreeStructure(projective=projective, single_root=single_root,
                                        hash_bits=8)

    def enumerate_outputs(batch, i):
        n = int(batch.unit_offsets[i + 1] - batch.unit_offsets[i])
        return np.array(list(dependency_trees(n, projective, single_root)))

    report = check_structure(structure, _instances, enumerate_outputs=enumerate_outputs)
    assert report["check_argmax"] == "passed" and report["check_marginals"] == "passed"
    assert report["check_kernel_ops"] == "passed"
    assert report["check_dynamic_program"] == ("passed" if projective else
                                               "no dynamic program")


def _reference_features(attrs, h, c, hash_bits):
    """The templates of the module docstring, written out directly."""
    n = attrs.shape[0]

    def at(position, column):
        if position == 0:
            return ROOT
        if position < 0 or position > n:
            return BOUNDARY
        return attrs[position - 1, column]

    hw, hx, cw, cx = at(h, WORD), at(h, PREFIX), at(c, WORD), at(c, PREFIX)
    instances = []
    for offset, column in [(0, POS), (100, SECOND_POS)][:2 if attrs.shape[1] == 5 else 1]:
        hp, cp = at(h, column), at(c, column)
        word_templates = lambda a, b: [  # noqa: E731
            (1, a, hp), (2, a), (4, b, cp), (5, b), (7, a, hp, b, cp), (8, hp, b, cp),
            (9, a, b, cp), (10, a, hp, cp), (11, a, hp, b), (12, a, b)]
        words = word_templates(hw, cw)
        if hx != NO_PREFIX or cx != NO_PREFIX:
            prefixed = word_templates(hx if hx != NO_PREFIX else hw,
                                      cx if cx != NO_PREFIX else cw)
            words += [(t + 20, *rest) for t, *rest in prefixed]
        if offset:  # the templates without a POS only once
            words = [instance for instance in words if instance[0] % 20 not in (2, 5, 12)]
        tagged = words + [(3, hp), (6, cp), (13, hp, cp)]
        tagged += [(50, hp, at(b, column), cp) for b in range(min(h, c) + 1, max(h, c))]
        for shape in range(4):
            h_side = at(h + (1 if shape % 2 == 0 else -1), column)
            c_side = at(c + (-1 if shape < 2 else 1), column)
            tagged += [(60 + shape, hp, h_side, c_side, cp), (70 + shape, hp, c_side, cp),
                       (80 + shape, hp, h_side, cp)]
        instances += [(t + offset, *rest) for t, *rest in tagged]
    conjunction = 1 + (8 if h < c else 0) + distance_bin(h, c)
    ids = []
    for template, *values in instances:
        for code in (0, conjunction):
            ids.append(feature_hash(np.array([template, code] + list(values)), 2 + len(values),
                                    hash_bits))
    return sorted(ids)


@pytest.mark.parametrize("n_columns", [4, 5])
def test_arc_features_match_the_written_out_templates(n_columns):
    rng = np.random.RandomState(0)
    attrs = rng.randint(4, 12, size=(13, n_columns))
    attrs[rng.rand(13) < 0.5, PREFIX] = NO_PREFIX
    values = np.zeros(8, dtype=np.int64)
    out = np.empty(max_arc_features(13), dtype=np.int64)
    for h, c in [(0, 1), (0, 13), (1, 2), (2, 1), (3, 12), (12, 2), (7, 13), (13, 6)]:
        count = arc_feature_ids(attrs, 0, 13, h, c, 16, values, out)
        assert sorted(out[:count]) == _reference_features(attrs, h, c, 16), (h, c)


def test_distance_bins():
    assert [distance_bin(0, d) for d in (1, 2, 3, 4, 5, 6, 10, 11, 40)] == [
        0, 1, 2, 3, 4, 5, 5, 6, 6]


def _ud_sentences(shared_data, name, n, max_len):
    """The first ``n`` projective sentences of at most ``max_len`` words, encoded."""
    data = load_conllu(shared_data / name)
    keep = [i for i, heads in enumerate(data.head)
            if len(heads) <= max_len and is_projective(heads)][:n]
    sentences = [{"form": data.form[i], "upos": data.upos[i]} for i in keep]
    X = DependencyTokenEncoder().fit(sentences).transform(sentences)
    return X, [data.head[i] for i in keep], [data.form[i] for i in keep]


def test_token_encoder():
    sentences = [{"form": ["Dogs", "bark", "loudly"], "upos": ["NOUN", "VERB", "ADV"],
                  "xpos": ["NNS", "VBP", "RB"]}]
    encoder = DependencyTokenEncoder(pos="both").fit(sentences)
    X = encoder.transform(sentences + [{"form": ["Cats"], "upos": ["NOUN"], "xpos": ["NNS"]}])
    assert X[0].shape == (3, 5) and X[0][2, PREFIX] == encoder.vocabulary_["x:loudl"]
    assert [X[0][0, POS], X[0][0, SECOND_POS]] == [encoder.vocabulary_["p:NOUN"],
                                                   encoder.vocabulary_["p:NNS"]]
    assert X[0][0, PREFIX] == NO_PREFIX and X[1][0, WORD] == 0  # short word; unknown word
    assert X[1][0, POS] == X[0][0, POS]
    with pytest.raises(ValueError, match="sentence 0: no 'xpos' list"):
        DependencyTokenEncoder(pos="xpos").fit([{"form": ["a"], "upos": ["X"]}])
    with pytest.raises(ValueError, match="sentence 1: 1 forms but tag lists"):
        encoder.transform(sentences + [{"form": ["a"], "upos": [], "xpos": []}])


@pytest.mark.parametrize("Model", [EGCRF, EGStructuredSVM])
def test_learns_to_parse_english(shared_data, Model):
    X, y, forms = _ud_sentences(shared_data, "ud_en_ewt_r2.16/en_ewt-ud-train.conllu.gz",
                                n=400, max_len=15)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = Model(C=1.0, structure="dependency", max_iter=8, random_state=0).fit(
            X[:300], y[:300])
    predicted = model.predict(X[300:])
    assert all(is_projective(heads) and (heads == 0).sum() == 1 for heads in predicted)
    uas = attachment_score(y[300:], predicted, forms=forms[300:])
    # a first-order parser on 300 short sentences: far above the 30% of attaching every
    # word to its neighbour
    assert uas > 0.65, uas


def test_marginals_matrices_and_the_l1_solvers(shared_data):
    from sklearn_struct import L1M3N

    X, y, _ = _ud_sentences(shared_data, "ud_en_ewt_r2.16/en_ewt-ud-dev.conllu.gz",
                            n=60, max_len=10)
    structure = DependencyTreeStructure(hash_bits=14)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        crf = EGCRF(C=1.0, structure=structure, max_iter=3, random_state=0).fit(X, y)
        for solver in ("subgradient", "cutting_plane"):
            sparse = L1M3N(structure=structure, solver=solver, max_iter=5, random_state=0)
            assert sparse.fit(X[:20], y[:20]).score(X[:20], y[:20]) > 0.3
    marginals = crf.predict_marginals(X[:5])
    for matrix, x in zip(marginals, X[:5]):
        n = len(x)
        assert matrix.shape == (n + 1, n)
        np.testing.assert_allclose(matrix.sum(axis=0), 1.0, atol=1e-9)  # one head per word
        assert np.all(matrix[np.arange(1, n + 1), np.arange(n)] == 0.0)  # no self-loop
    assert structure.__dict__ == DependencyTreeStructure(hash_bits=14).__dict__


def test_punctuation_weight_in_the_loss():
    sentence = np.array([[5, 6, NO_PREFIX, 0], [7, 8, NO_PREFIX, 0], [9, 10, NO_PREFIX, 1]])
    truth = np.array([2, 0, 2])
    for weight in (1.0, 0.0, 0.5):
        structure = DependencyTreeStructure(hash_bits=8, punctuation_weight=weight)
        batch = structure.make_batch([sentence])
        losses = structure.part_losses(batch, truth)
        for heads in dependency_trees(3, True, True):
            expected = float(np.sum((heads != truth) * np.array([1.0, 1.0, weight])))
            assert structure.encode(batch, heads) @ losses == pytest.approx(expected)
    with pytest.raises(ValueError, match="sentence 0: the fourth column flags punctuation"):
        DependencyTreeStructure().make_batch([np.array([[5, 6, 3, 2]])])


@pytest.mark.parametrize("Model", [EGCRF, EGStructuredSVM])
def test_warm_start_continues_on_head_arrays(Model):
    # heads are not labels (classes_ is None): a warm start must still keep the duals
    rng = np.random.RandomState(0)
    X = [rng.randint(4, 40, size=(n, 3)) for n in (3, 5, 4, 6, 2)]
    y = [next(dependency_trees(len(x), True, True)) for x in X]
    structure = DependencyTreeStructure(hash_bits=10)
    plain = {"smoothing": False} if Model is EGStructuredSVM else {}
    stepwise = Model(C=1.0, structure=structure, max_iter=1, warm_start=True, order="cyclic",
                     annealing=False, tol=0.0, **plain)
    whole = Model(C=1.0, structure=structure, max_iter=2, order="cyclic", annealing=False,
                  tol=0.0, **plain)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        stepwise.fit(X, y).fit(X, y)
        whole.fit(X, y)
    np.testing.assert_allclose(stepwise.weights_, whole.weights_, rtol=1e-12, atol=1e-12)


def test_a_second_tag_set_is_given_for_every_sentence_or_none():
    structure = DependencyTreeStructure(hash_bits=10)
    with pytest.raises(ValueError, match="sentence 1: 4 columns where sentence 0 has 5"):
        first, second = np.full((2, 5), 4), np.full((3, 4), 4)
        first[:, 3] = second[:, 3] = 0  # the punctuation flags are valid
        structure.make_batch([first, second])


@pytest.mark.parametrize("projective", [True, False])
@pytest.mark.parametrize("single_root", [True, False])
def test_check_outputs_accepts_exactly_the_output_space(projective, single_root):
    # every head array of 1..4 words with heads in range: accepted iff enumerated as a tree
    structure = DependencyTreeStructure(projective=projective, single_root=single_root,
                                        hash_bits=8)
    for n in range(1, 5):
        batch = structure.make_batch([np.full((n, 3), 5)])
        trees = {tuple(t) for t in dependency_trees(n, projective, single_root)}
        for heads in itertools.product(range(n + 1), repeat=n):
            if any(h == m for m, h in enumerate(heads, start=1)):
                continue
            if heads in trees:
                assert structure.check_outputs(batch, np.array(heads)).tolist() == list(heads)
            else:
                with pytest.raises(ValueError, match="sentence 0: "):
                    structure.check_outputs(batch, np.array(heads))


@pytest.mark.parametrize("heads, settings, match", [
    ([0, 3, 4, 2], {}, r"sentence 1: the heads form a cycle through word 2; expected a tree"),
    ([2, 0, 4, 0], {}, r"sentence 1: words 2 and 4 both have head 0; single_root=True expects "
                       r"exactly one word under the root \(single_root=False admits several"),
    ([3, 4, 0, 3], {}, r"sentence 1: the arcs 3 -> 1 and 4 -> 2 cross; projective=True "
                       r"expects projective trees \(sklearn_struct.datasets.projectivize"),
    ([2, 0, 1, 3], {"projective": False, "single_root": False}, None),
    ([3, 4, 0, 3], {"projective": False}, None),
    ([2, 0, 4, 0], {"single_root": False}, None),
])
def test_gold_trees_outside_the_output_space_name_sentence_and_word(heads, settings, match):
    structure = DependencyTreeStructure(hash_bits=8, **settings)
    batch = structure.make_batch([np.full((2, 3), 5), np.full((4, 3), 6)])
    Y = np.array([2, 0] + heads)
    if match is None:
        assert structure.check_outputs(batch, Y).tolist() == Y.tolist()
    else:
        with pytest.raises(ValueError, match=match):
            structure.check_outputs(batch, Y)


def test_punctuation_flags_at_predict_only_are_accepted():
    # a fourth column (punctuation flags) weighs the loss, not the features: same layout
    X = [np.array([[5, 6, 3], [7, 8, 3]]), np.array([[5, 6, 3]])]
    model = EGCRF(structure=DependencyTreeStructure(hash_bits=8), max_iter=2).fit(
        X, [np.array([0, 1]), np.array([0])])
    flagged = [np.column_stack([x, np.zeros(len(x), dtype=int)]) for x in X]
    assert [p.tolist() for p in model.predict(flagged)] == [p.tolist() for p in model.predict(X)]


@pytest.mark.parametrize("projective", [True, False])
@pytest.mark.parametrize("scale", [1e3, 1e6])
def test_marginals_of_confident_part_scores_match_enumeration(projective, scale):
    # finite part scores of 1e3 and more (once a ZeroDivisionError inside the package)
    structure = DependencyTreeStructure(projective=projective, hash_bits=8)
    batch = structure.make_batch([np.full((n, 3), 5) for n in (1, 3, 4)])
    scores = scale * np.random.RandomState(0).randn(batch.part_offsets[-1])
    mu, log_z = structure.marginals(batch, scores)
    for i, n in enumerate(np.diff(batch.unit_offsets)):
        trees = np.array(list(dependency_trees(n, projective, True)))
        block = scores[batch.part_offsets[i]:batch.part_offsets[i + 1]]
        Z = np.array([structure.encode(structure.make_batch([np.full((n, 3), 5)]), heads)
                      for heads in trees])
        tree_scores = Z @ block
        assert log_z[i] == pytest.approx(np.logaddexp.reduce(tree_scores), rel=1e-12)
        p = np.exp(tree_scores - log_z[i])
        np.testing.assert_allclose(mu[batch.part_offsets[i]:batch.part_offsets[i + 1]], p @ Z,
                                   atol=1e-10)


def test_localize_numbers_distinct_ids_in_order_of_appearance():
    from sklearn_struct.structures.dependency._arc_features import localize
    rng = np.random.RandomState(0)
    for n, high in ((0, 5), (1, 5), (7, 3), (1000, 50), (4096, 1 << 23), (5000, 1 << 31)):
        ids = rng.randint(0, high, size=n).astype(np.int32)
        local = np.full(n, -1, dtype=np.int32)
        distinct = localize(ids, local)
        _, first = np.unique(ids, return_index=True)
        np.testing.assert_array_equal(distinct, ids[np.sort(first)])
        np.testing.assert_array_equal(distinct[local], ids)
