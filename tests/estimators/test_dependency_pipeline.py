"""DependencyPipeline: taggers, then a parser on jackknifed tags, against a hand-built one."""

import copy
import gzip
import json

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

from sklearn_struct import EGCRF, StructuredPerceptron
from sklearn_struct.datasets import filter_projective, load_conllu
from sklearn_struct.metrics import attachment_score
from sklearn_struct.parsing import (DependencyPipeline, pos_token_features, relation_features,
                                    relation_inputs)
from sklearn_struct.persistence import dump, load
from sklearn_struct.preprocessing import (DependencyTokenEncoder, SequenceDictVectorizer,
                                          conll_token_features)
from sklearn_struct.structures import DependencyTreeStructure, TreeStructure

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def ewt(shared_data, tmp_path_factory):
    """The first 120 EWT training sentences: forms and annotations."""
    path = tmp_path_factory.mktemp("ewt") / "train.conllu"
    with gzip.open(shared_data / "ud_en_ewt_r2.16" / "en_ewt-ud-train.conllu.gz", "rt",
                   encoding="utf-8") as source:
        blocks = source.read().split("\n\n")[:120]
    path.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    data = load_conllu(path)
    X = [list(form) for form in data.form]
    y = [{"upos": u, "xpos": x, "feats": f, "head": h, "deprel": d}
         for u, x, f, h, d in zip(data.upos, data.xpos, data.feats, data.head, data.deprel)]
    return X, y


def _small(**params):
    model = StructuredPerceptron(max_iter=2, random_state=0)
    return DependencyPipeline(tagger=model, parser=model, labeller=model, hash_bits=14,
                              n_folds=3, random_state=0, **params)


#: Each ``tag_features`` by hand.
TOKEN_FEATURES = {"conll": lambda words: conll_token_features(words, window=2),
                  "pos": pos_token_features}


def _tagger(forms, tags, features):
    vectorizer = SequenceDictVectorizer()
    X = vectorizer.fit_transform([features(f) for f in forms])
    model = StructuredPerceptron(max_iter=2, random_state=0).fit(
        X, [np.asarray(t, dtype=str) for t in tags])
    return vectorizer, model, features


def _tag(tagger, forms):
    vectorizer, model, features = tagger
    return model.predict(vectorizer.transform([features(f) for f in forms]))


def test_pos_token_features_add_the_cues_of_part_of_speech_taggers():
    words = ["Well-Known", "dogs", "bark", "at", "3pm"]
    features = pos_token_features(words)
    for conll, pos in zip(conll_token_features(words, window=2), features):
        assert conll.items() <= pos.items()
    assert {key: features[0][key] for key in features[0].keys()
            - conll_token_features(words, window=2)[0].keys()} == {
        "prefix1": "w", "prefix2": "we", "prefix3": "wel", "suffix1": "n", "suffix4": "nown",
        "hyphen": True, "digit": False, "word|+1:word": "well-known|dogs"}
    assert {key: features[2][key] for key in features[2].keys()
            - conll_token_features(words, window=2)[2].keys()} == {
        "prefix1": "b", "prefix2": "ba", "prefix3": "bar", "suffix1": "k", "suffix4": "bark",
        "hyphen": False, "digit": False, "-1:word|word": "dogs|bark",
        "word|+1:word": "bark|at"}
    assert features[4]["digit"] and "word|+1:word" not in features[4]
    assert pos_token_features([]) == []


@pytest.mark.parametrize("tag_features", ["pos", "conll"])
def test_the_parser_learns_from_jackknifed_tags_as_built_by_hand(ewt, tag_features):
    X, y = ewt
    pipeline = _small(tag_features=tag_features).fit(X, y)
    features = TOKEN_FEATURES[tag_features]

    # by hand: each fold's tags from taggers fitted on the other folds
    folds = KFold(3, shuffle=True, random_state=0).split(np.arange(len(X)))
    tagged = {tag: [None] * len(X) for tag in ("upos", "xpos")}
    for train, test in folds:
        for tag in tagged:
            tagger = _tagger([X[i] for i in train], [y[i][tag] for i in train], features)
            for i, labels in zip(test, _tag(tagger, [X[i] for i in test])):
                tagged[tag][i] = labels
    assert sum(np.sum(tagged["upos"][i] != y[i]["upos"]) for i in range(len(X))) > 0
    sentences = [{"form": X[i], "upos": tagged["upos"][i], "xpos": tagged["xpos"][i]}
                 for i in range(len(X))]
    encoder = DependencyTokenEncoder(pos="both").fit(sentences)
    heads = [a["head"] for a in y]
    kept, kept_heads, _ = filter_projective(encoder.transform(sentences), heads)
    parser = StructuredPerceptron(structure=DependencyTreeStructure(hash_bits=14), max_iter=2,
                                  random_state=0).fit(kept, kept_heads)
    np.testing.assert_array_equal(pipeline.parser_.weights_, parser.weights_)
    names = ["form", "upos", "xpos"]
    columns = [[s[name] for name in names] for s in sentences]
    vectorizer = SequenceDictVectorizer().fit(
        [relation_features(c, names, h) for c, h in zip(columns, heads)])
    labeller = StructuredPerceptron(structure=TreeStructure(n_edge_types=2), max_iter=2,
                                    random_state=0).fit(
        relation_inputs(columns, names, heads, vectorizer), [a["deprel"] for a in y])
    np.testing.assert_array_equal(pipeline.labeller_.weights_, labeller.weights_)

    # the taggers kept are fitted on every sentence; prediction chains the four models
    final = {tag: _tagger(X, [a[tag] for a in y], features) for tag in ("upos", "xpos")}
    test = X[:20]
    predicted = pipeline.predict(test)
    tags = {tag: _tag(final[tag], test) for tag in final}
    for tag in final:
        for ours, theirs in zip(predicted, tags[tag]):
            np.testing.assert_array_equal(ours[tag], theirs)
    test_columns = [[f, u, x] for f, u, x in zip(test, tags["upos"], tags["xpos"])]
    test_heads = parser.predict(encoder.transform(
        [dict(zip(names, c)) for c in test_columns]))
    relations = labeller.predict(relation_inputs(test_columns, names, test_heads, vectorizer))
    for ours, h, r in zip(predicted, test_heads, relations):
        np.testing.assert_array_equal(ours["head"], h)
        np.testing.assert_array_equal(ours["deprel"], r)


def test_score_is_las_as_conll_2018_and_works_in_scikit_learn_tools(ewt):
    X, y = ewt
    pipeline = _small(tags=("upos",)).fit(X[:80], y[:80])
    predicted = pipeline.predict(X[80:])
    universal = [[[r.split(":")[0] for r in s] for s in deprels]
                 for deprels in ([a["deprel"] for a in y[80:]], [p["deprel"] for p in predicted])]
    las = attachment_score([a["head"] for a in y[80:]], [p["head"] for p in predicted],
                           labels_true=universal[0], labels_pred=universal[1])
    assert pipeline.score(X[80:], y[80:]) == las
    assert 0.3 < las < 0.9
    assert set(predicted[0]) == {"upos", "head", "deprel"}

    scores = cross_val_score(_small(tags=("upos",)), X, y, cv=2)
    assert scores.shape == (2,) and np.all((0.2 < scores) & (scores < 0.9))
    search = GridSearchCV(_small(tags=("upos",)), {"parser__max_iter": [1, 2]}, cv=2).fit(X, y)
    assert search.best_params_["parser__max_iter"] in (1, 2)


def test_processes_give_the_same_pipeline(ewt):
    X, y = ewt
    one = _small(tags=("upos", "feats")).fit(X[:60], y[:60])
    two = clone(one).set_params(n_jobs=2).fit(X[:60], y[:60])
    for tag in ("upos", "feats"):
        np.testing.assert_array_equal(one.taggers_[tag].weights_, two.taggers_[tag].weights_)
    np.testing.assert_array_equal(one.parser_.weights_, two.parser_.weights_)


def test_random_state_seeds_the_models_without_a_seed_of_their_own(ewt):
    X, y = ewt
    default = DependencyPipeline(tags=("upos",), hash_bits=14, n_folds=2, random_state=0)
    one = default.fit(X[:40], y[:40])
    seeds = [model.random_state for model in (one.taggers_["upos"], one.parser_, one.labeller_)]
    assert all(isinstance(seed, int) for seed in seeds) and len(set(seeds)) == 3
    assert default.tagger is None  # (clones were seeded)
    two = clone(default).set_params(n_jobs=2).fit(X[:40], y[:40])
    for ours, theirs in [(one.taggers_["upos"], two.taggers_["upos"]),
                         (one.parser_, two.parser_), (one.labeller_, two.labeller_)]:
        np.testing.assert_array_equal(ours.weights_, theirs.weights_)

    own = StructuredPerceptron(random_state=7)
    seeded = clone(default).set_params(tagger=own).fit(X[:40], y[:40])
    assert seeded.taggers_["upos"].random_state == 7 and own.random_state == 7
    assert [seeded.parser_.random_state, seeded.labeller_.random_state] == seeds[1:]
    unseeded = clone(default).set_params(random_state=None).fit(X[:40], y[:40])
    assert unseeded.parser_.random_state is None


def test_dump_and_load_predict_the_same(ewt, tmp_path):
    X, y = ewt
    pipeline = _small(tags=("xpos",)).set_params(tagger=EGCRF(max_iter=2)).fit(X[:60], y[:60])
    dump(pipeline, tmp_path / "pipeline.npz")
    loaded = load(tmp_path / "pipeline.npz")
    assert loaded.get_params()["tagger"].get_params() == EGCRF(max_iter=2).get_params()
    for ours, theirs in zip(pipeline.predict(X[60:]), loaded.predict(X[60:])):
        for key in ours:
            np.testing.assert_array_equal(ours[key], theirs[key])


def test_a_file_of_layout_6_is_read_with_the_conll_tag_features(ewt, tmp_path):
    X, y = ewt
    pipeline = _small(tags=("upos",), tag_features="conll").fit(X[:60], y[:60])
    dump(pipeline, tmp_path / "pipeline.npz")
    with np.load(tmp_path / "pipeline.npz", allow_pickle=False) as archive:
        arrays = dict(archive)
    header = json.loads(str(arrays.pop("header")))
    header["sklearn_struct_model"] = 6  # written before tag_features was a parameter
    del header["objects"]["estimator"]["state"]["tag_features"]
    with open(tmp_path / "layout6.npz", "wb") as handle:
        np.savez(handle, header=np.array(json.dumps(header)), **arrays)
    loaded = load(tmp_path / "layout6.npz")
    assert loaded.tag_features == "conll"
    for ours, theirs in zip(pipeline.predict(X[60:]), loaded.predict(X[60:])):
        np.testing.assert_array_equal(ours["upos"], theirs["upos"])


def test_fit_leaves_the_input_alone_and_warns_naming_the_model(ewt):
    X, y = ewt
    X_before, y_before = copy.deepcopy(X[:40]), copy.deepcopy(y[:40])
    with pytest.warns(ConvergenceWarning, match="DependencyPipeline, the UPOS tagger: "):
        _small(tags=("upos",)).fit(X[:40], y[:40])
    assert X[:40] == X_before
    for ours, theirs in zip(y[:40], y_before):
        for key in ours:
            np.testing.assert_array_equal(ours[key], theirs[key])


SENTENCE = {"upos": ["NOUN", "VERB"], "head": [2, 0], "deprel": ["nsubj", "root"]}


@pytest.mark.parametrize("X, y, error, match", [
    ([["Dogs", "bark"]] * 2, [SENTENCE] * 2, ValueError,
     r"n_folds=3: jackknifing cuts the training set into 3 folds, but it has 2 sentences"),
    ("Dogs bark", [SENTENCE], TypeError, r"X: expected a list of sentences"),
    ([["Dogs", "bark"], "Cats sleep", ["a", "b"]], [SENTENCE] * 3, TypeError,
     r"X\[1\]: expected a list of word forms \(str\); got str"),
    ([["Dogs", "bark"], ["Cats", 3], ["a", "b"]], [SENTENCE] * 3, TypeError,
     r"X\[1\]\[1\]: expected a word form \(a non-empty str\); got 3"),
    ([["Dogs", "bark"], [], ["a", "b"]], [SENTENCE] * 3, ValueError,
     r"X\[1\]: an empty sentence"),
    ([["Dogs", "bark"]] * 3, [SENTENCE] * 2, ValueError, r"y: 2 annotations for 3 sentences"),
    ([["Dogs", "bark"]] * 3, [SENTENCE, SENTENCE, {**SENTENCE, "head": [2, 1]}], ValueError,
     r"y\[2\]\['head'\]"),
    ([["Dogs", "bark"]] * 3, [SENTENCE, SENTENCE, {**SENTENCE, "head": [0, 0]}], ValueError,
     r"y\[2\]\['head'\]: more than one word of head 0"),
    ([["Dogs", "bark"]] * 3, [SENTENCE, {"head": [2, 0], "deprel": ["a", "b"]}, SENTENCE],
     ValueError, r"y\[1\]: no 'upos'; expected the columns upos, head, deprel"),
    ([["Dogs", "bark"]] * 3, [SENTENCE, {**SENTENCE, "upos": ["NOUN"]}, SENTENCE], ValueError,
     r"y\[1\]\['upos'\]: 1 values for 2 words"),
    ([["Dogs", "bark"]] * 3, [SENTENCE, ("NOUN", "VERB"), SENTENCE], TypeError,
     r"y\[1\]: expected a dict of columns"),
])
def test_bad_input_is_refused_naming_the_sentence(X, y, error, match):
    with pytest.raises(error, match=match):
        _small(tags=("upos",)).fit(X, y)


@pytest.mark.parametrize("params, match", [
    ({"tags": ("upos", "lemma")}, r"tags=\('upos', 'lemma'\): expected distinct columns among "
                                  r"upos, xpos, feats; 'lemma' is not one"),
    ({"tags": ("upos", "upos")}, r"expected distinct columns"),
    ({"second_order": True, "non_projective": True}, r"set non_projective=False"),
    ({"tag_features": "words"}, r"'tag_features' parameter of DependencyPipeline must be a "
                                r"str among \{.*'conll'.*\}\. Got 'words' instead"),
])
def test_bad_parameters_are_refused(params, match):
    with pytest.raises(ValueError, match=match):
        _small(**params).fit([["Dogs", "bark"]] * 3, [SENTENCE] * 3)
