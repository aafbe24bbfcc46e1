"""``tag --allowed-labels LEXICON`` and the TagDictionary behind it."""

import numpy as np
import pytest

from sklearn_struct.cli import main, token_features
from sklearn_struct.persistence import load_model
from sklearn_struct.preprocessing import TagDictionary

from test_cli import TRAIN

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
PLAIN = "-DOCSTART- -X-\n\nThe DT\ndog NN\nsat VBD\n\nran VBD\n"
SENTENCES = [[["The", "dog", "sat"], ["DT", "NN", "VBD"]], [["ran"], ["VBD"]]]


@pytest.fixture
def tagger(tmp_path):
    (tmp_path / "train.txt").write_text(TRAIN)
    (tmp_path / "plain.txt").write_text(PLAIN)
    model = tmp_path / "model.npz"
    assert main(["learn", str(tmp_path / "train.txt"), "-o", str(model)]) == 0
    _, settings, objects = load_model(model)
    X = objects["vectorizer"].transform([
        token_features(columns, settings["input"]["names"], settings["template"],
                       settings["window"]) for columns in SENTENCES])
    return model, objects["estimator"], X


def _tag(model, tmp_path, capsys, *options):
    capsys.readouterr()
    status = main(["tag", str(model), str(tmp_path / "plain.txt"), *options])
    out, err = capsys.readouterr()
    return status, out.splitlines(), err


def test_the_lexicon_constrains_labels_marginals_and_nbest(tagger, tmp_path, capsys):
    model, estimator, X = tagger
    (tmp_path / "lexicon.txt").write_text("# word labels\ndog B-NP B-VP\nsat O\n")
    allowed = [[None, {"B-NP", "B-VP"}, {"O"}], [None]]
    status, lines, _ = _tag(model, tmp_path, capsys, "--allowed-labels",
                            str(tmp_path / "lexicon.txt"))
    assert status == 0
    expected = estimator.predict(X, allowed_labels=allowed)
    assert [line.split()[-1] for line in lines[2:5]] == list(expected[0])
    assert lines[4].split()[-1] == "O" and lines[3].split()[-1] in ("B-NP", "B-VP")
    assert lines[4].split()[-1] != estimator.predict(X)[0][2]  # the constraint changed it
    status, lines, _ = _tag(model, tmp_path, capsys, "--allowed-labels",
                            str(tmp_path / "lexicon.txt"), "--marginals", "all")
    marginals = estimator.predict_marginals(X, allowed_labels=allowed)[0]
    fields = lines[4].split()[3:]
    np.testing.assert_allclose([float(f.rsplit(":", 1)[1]) for f in fields], marginals[2],
                               atol=5e-5)
    assert marginals[2][list(estimator.classes_).index("O")] == pytest.approx(1)
    status, lines, _ = _tag(model, tmp_path, capsys, "--allowed-labels",
                            str(tmp_path / "lexicon.txt"), "--nbest", "2")
    _, _, proba = estimator.predict_k_best(X[:1], 2, return_proba=True,
                                           allowed_labels=allowed[:1])
    headers = [line for line in lines if line.startswith("#")]
    np.testing.assert_allclose([float(line.split()[2]) for line in headers[:2]], proba[0],
                               atol=5e-7)
    assert all(line.split()[-1] == "O" for line in lines if line.startswith("sat"))


def test_lexicon_errors_are_one_line_naming_the_file_and_line(tagger, tmp_path, capsys):
    model, _, _ = tagger
    lexicon = tmp_path / "lexicon.txt"
    cases = {
        "dog B-NP\ncat B-XYZ\n": "line 2: label 'B-XYZ' of word 'cat' is not one of the "
                                 "model's labels ['B-NP', 'B-VP', 'I-NP', 'O']",
        "dog\n": "line 1: word 'dog' has no label; expected 'word label [label ...]'",
        "dog B-NP\ndog O\n": "line 2: word 'dog' is listed twice",
    }
    for text, message in cases.items():
        lexicon.write_text(text)
        status, _, err = _tag(model, tmp_path, capsys, "--allowed-labels", str(lexicon))
        assert status == 2
        assert err == f"sklearn-struct tag: error: {lexicon}, {message}\n"
    # (the command line's chains allow every transition: a lexicon of the model's labels
    # always leaves an output; constraints that leave none are refused in Python)
    status, _, err = _tag(model, tmp_path, capsys, "--allowed-labels",
                          str(tmp_path / "missing.txt"))
    assert status == 2 and "missing.txt" in err and err.count("\n") == 1


def test_parsers_refuse_the_lexicon(tmp_path, capsys):
    conllu = ("# text = a b\n1\ta\t_\tX\tX\t_\t0\troot\t_\t_\n"
              "2\tb\t_\tY\tY\t_\t1\tdep\t_\t_\n\n")
    (tmp_path / "t.conllu").write_text(conllu * 3)
    model = tmp_path / "parser.npz"
    assert main(["learn", str(tmp_path / "t.conllu"), "--format", "conllu", "--label", "head",
                 "--inputs", "form,upos", "-o", str(model)]) == 0
    (tmp_path / "lexicon.txt").write_text("a X\n")
    capsys.readouterr()
    assert main(["tag", str(model), str(tmp_path / "t.conllu"), "--allowed-labels",
                 str(tmp_path / "lexicon.txt")]) == 2
    assert "--allowed-labels are for taggers; this model parses" in capsys.readouterr().err


def test_tag_dictionary_against_counting_by_hand(tmp_path):
    rng = np.random.RandomState(0)
    vocabulary, tags = ["a", "b", "c", "d", "e"], ["X", "Y", "Z"]
    words = [[vocabulary[i] for i in rng.randint(0, 5, rng.randint(1, 6))] for _ in range(40)]
    labels = [[tags[i] for i in rng.randint(0, 3, len(sentence))] for sentence in words]
    for min_count in (1, 10, 30):
        dictionary = TagDictionary(min_count=min_count).fit(words, labels)
        flat = [(w, t) for ws, ts in zip(words, labels) for w, t in zip(ws, ts)]
        for word in vocabulary:
            seen = sorted({t for w, t in flat if w == word})
            frequent = sum(w == word for w, _ in flat) >= min_count
            assert dictionary.labels_.get(word) == (seen if frequent else None)
        allowed = dictionary.allowed_labels(words)
        assert [len(a) for a in allowed] == [len(w) for w in words]
    dictionary.write(tmp_path / "lexicon.txt")
    assert TagDictionary.read(tmp_path / "lexicon.txt").labels_ == dictionary.labels_
    lower = TagDictionary(min_count=1, lowercase=True).fit([["The", "the"]], [["DT", "DT"]])
    assert lower.labels_ == {"the": ["DT"]}
    assert lower.allowed_labels([["THE"]]) == [[{"DT"}]]


def test_tag_dictionary_bad_input():
    with pytest.raises(ValueError, match="sequence 1 has 2 words but 1 labels"):
        TagDictionary().fit([["a"], ["a", "b"]], [["X"], ["X"]])
    with pytest.raises(TypeError, match="labels of sequence 0 must be a list, one per word; "
                       "got the string 'X'"):
        TagDictionary().fit([["a"]], ["X"])
    with pytest.raises(TypeError, match="sequence 0 of X must be a list of str words"):
        TagDictionary().fit(["a b"], [["X"]])
    with pytest.raises(ValueError, match="y must be a list of 1 label sequences"):
        TagDictionary().fit([["a"]], [["X"], ["Y"]])
    dictionary = TagDictionary(min_count=1).fit([["a b"]], [["X"]])
    with pytest.raises(ValueError, match="word 'a b' or one of its labels"):
        dictionary.write("unused.txt")
