"""``learn --label head --tags``: taggers and a parser from word forms, in two commands."""

import gzip

import numpy as np
import pytest

from sklearn_struct import StructuredPerceptron
from sklearn_struct.cli import main
from sklearn_struct.datasets import load_conllu
from sklearn_struct.parsing import DependencyPipeline
from sklearn_struct.persistence import load_model

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _first_sentences(source, path, n):
    with gzip.open(source, "rt", encoding="utf-8") as handle:
        blocks = handle.read().split("\n\n")[:n]
    path.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")


def _forms_only(gold, path):
    """``gold`` with every column but ID and FORM emptied, as a tokenizer writes it."""
    lines = []
    for line in gold.read_text(encoding="utf-8").splitlines():
        fields = line.split("\t")
        if len(fields) == 10:
            line = "\t".join(fields[:2] + ["_"] * 8)
        lines.append(line)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def treebank(shared_data, tmp_path_factory):
    folder = tmp_path_factory.mktemp("pipeline")
    corpus = shared_data / "ud_en_ewt_r2.16"
    _first_sentences(corpus / "en_ewt-ud-train.conllu.gz", folder / "train.conllu", 150)
    _first_sentences(corpus / "en_ewt-ud-test.conllu.gz", folder / "test.conllu", 60)
    _forms_only(folder / "test.conllu", folder / "forms.conllu")
    return folder


def test_two_commands_tag_and_parse_word_forms_as_the_python_api(treebank, capsys):
    model = treebank / "pipeline.npz"
    assert main(["learn", str(treebank / "train.conllu"), "--format", "conllu", "--label",
                 "head", "--tags", "upos,xpos,feats", "--folds", "3", "--estimator",
                 "perceptron", "--max-iter", "2", "--hash-bits", "14", "--dev",
                 str(treebank / "test.conllu"), "-o", str(model)]) == 0
    learnt = capsys.readouterr().out
    train, test = load_conllu(treebank / "train.conllu"), load_conllu(treebank / "test.conllu")
    assert learnt.startswith(
        f"150 sentences, {sum(len(f) for f in train.form)} words; taggers of UPOS, XPOS, FEATS "
        "from the forms, then a first-order parser on their 3-fold jackknifed tags (read in ")
    parsed = treebank / "parsed.conllu"
    assert main(["tag", str(model), str(treebank / "forms.conllu"), "-o", str(parsed)]) == 0
    assert main(["eval", str(treebank / "test.conllu"), str(parsed)]) == 0
    report = capsys.readouterr().out.splitlines()

    # the Python API: the same pipeline on the same forms and annotations
    perceptron = StructuredPerceptron(max_iter=2, random_state=0)
    pipeline = DependencyPipeline(("upos", "xpos", "feats"), tagger=perceptron,
                                  parser=perceptron, labeller=perceptron, hash_bits=14,
                                  n_folds=3, random_state=0)
    pipeline.fit([list(f) for f in train.form],
                 [{"upos": u, "xpos": x, "feats": f, "head": h, "deprel": d} for u, x, f, h, d
                  in zip(train.upos, train.xpos, train.feats, train.head, train.deprel)])
    predicted = pipeline.predict([list(f) for f in test.form])
    written = load_conllu(parsed)
    for column in ("upos", "xpos", "feats", "head", "deprel"):
        for ours, api in zip(getattr(written, column), predicted):
            np.testing.assert_array_equal(np.asarray(ours), api[column])
    assert written.lemma == [["_"] * len(f) for f in test.form]  # what was empty stays so

    n_words = sum(len(f) for f in test.form)

    def accuracy(column):
        return 100 * sum(int(np.sum(np.asarray(t) == p[column]))
                         for t, p in zip(getattr(test, column), predicted)) / n_words

    las = 100 * pipeline.score([list(f) for f in test.form],
                               [{"head": h, "deprel": d} for h, d in zip(test.head, test.deprel)])
    assert report[1:4] == [f"UPOS:   {accuracy('upos'):6.2f}%", f"XPOS:   {accuracy('xpos'):6.2f}%",
                           f"UFeats: {accuracy('feats'):6.2f}%"]
    all_tags = 100 * sum(int(np.sum((np.asarray(u) == p["upos"]) & (np.asarray(x) == p["xpos"])
                                    & (np.asarray(f) == p["feats"])))
                         for u, x, f, p in zip(test.upos, test.xpos, test.feats, predicted))
    assert report[5] == f"AllTags:{all_tags / n_words:6.2f}%"
    assert report[6].startswith("UAS:") and report[6].endswith(
        f"LAS: {las:6.2f}%  (every word, as CoNLL 2018)")
    assert f"LAS {las:.2f}; model written to" in learnt  # --dev scores the same way
    assert 70 < accuracy("upos") < 100 and 40 < las < 90

    assert main(["dump", str(model), "--top", "1"]) == 0
    described = capsys.readouterr().out
    assert described.splitlines()[1] == (
        "input: CoNLL-U columns form; predicts UPOS, XPOS, FEATS, HEAD and DEPREL")
    assert f"UPOS tagger: StructuredPerceptron: {len(pipeline.taggers_['upos'].classes_)} " \
        "labels" in described
    assert "relation labeller: StructuredPerceptron" in described
    _, settings, objects = load_model(model)
    assert settings["tags"] == ["upos", "xpos", "feats"] and set(objects) == {"pipeline"}


def test_a_form_only_file_and_a_gold_tag_parser_say_what_to_do(treebank, capsys):
    model = treebank / "gold_tags.npz"
    assert main(["learn", str(treebank / "train.conllu"), "--format", "conllu", "--label",
                 "head", "--inputs", "form,upos", "--estimator", "perceptron", "--max-iter",
                 "1", "--hash-bits", "12", "-o", str(model)]) == 0
    capsys.readouterr()
    forms = treebank / "forms.conllu"
    assert main(["tag", str(model), str(forms)]) == 2
    assert capsys.readouterr().err == (
        f"sklearn-struct tag: error: {forms}, line 5: no UPOS ('_'), but the model reads it "
        "(inputs: form, upos); fill that column first, or learn a parser that tags the word "
        "forms itself (learn --label head --tags upos,xpos)\n")


def test_a_pipeline_model_refuses_a_column_file(treebank, tmp_path, capsys):
    model = tmp_path / "pipeline.npz"
    assert main(["learn", str(treebank / "train.conllu"), "--format", "conllu", "--label",
                 "head", "--tags", "upos", "--folds", "2", "--estimator", "perceptron",
                 "--max-iter", "1", "--hash-bits", "12", "-o", str(model)]) == 0
    capsys.readouterr()
    columns = tmp_path / "chunks.txt"
    columns.write_text("The DT B-NP\ncat NN I-NP\n\n")
    assert main(["tag", str(model), str(columns)]) == 2
    assert capsys.readouterr().err == (
        f"sklearn-struct tag: error: {columns}, line 1: expected 10 tab-separated columns, "
        "got 1\n")


@pytest.mark.parametrize("options, message", [
    (["--tags", "upos", "--folds", "5"], "{train}: 3 sentences, too few for --folds 5 (the "
     "parser's training tags come from taggers trained on all folds but one): give a larger "
     "treebank or a smaller --folds"),
    (["--tags", "upos,lemma"], "--tags upos,lemma: 'lemma' is not a column the pipeline tags; "
     "expected some of upos, xpos, feats, comma-separated"),
    (["--tags", "upos,upos"], "--tags upos,upos: a column is named twice"),
    (["--folds", "2"], "--folds jackknifes the tags that --tags predicts: give --tags"),
    (["--tags", "upos", "--inputs", "form,xpos"], "--inputs form,xpos: with --tags, the model "
     "reads the word forms alone and predicts its tags (drop --inputs)"),
    (["--tags", "upos", "--template", "words"], "--template and --window choose the features "
     "of the command's taggers; the pipeline's are fixed (see 'From word forms to trees' in "
     "the command-line guide)"),
])
def test_bad_pipeline_options_are_refused(treebank, tmp_path, capsys, options, message):
    train = tmp_path / "three.conllu"
    blocks = (treebank / "train.conllu").read_text(encoding="utf-8").split("\n\n")[:3]
    train.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    assert main(["learn", str(train), "--format", "conllu", "--label", "head",
                 "-o", str(tmp_path / "m.npz")] + options) == 2
    assert capsys.readouterr().err == (
        f"sklearn-struct learn: error: {message.format(train=train)}\n")
    assert not (tmp_path / "m.npz").exists()


def test_tags_need_the_parser(treebank, tmp_path, capsys):
    assert main(["learn", str(treebank / "train.conllu"), "--format", "conllu", "--label",
                 "upos", "--tags", "xpos", "-o", str(tmp_path / "m.npz")]) == 2
    assert capsys.readouterr().err == (
        "sklearn-struct learn: error: --tags and --folds train taggers for a parser from "
        "word forms: add --label head\n")
