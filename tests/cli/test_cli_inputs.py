"""CoNLL-U inputs are the columns named by --inputs; options agree with the model."""

import pytest

from sklearn_struct.cli import main
from sklearn_struct.persistence import load_model

TREEBANK = """\
# sent_id = 1
1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_
2\tcat\tcat\tNOUN\tNN\t_\t3\tnsubj\t_\t_
3\tsat\tsit\tVERB\tVBD\t_\t0\troot\t_\t_

# sent_id = 2
1\tA\ta\tDET\tDT\t_\t2\tdet\t_\t_
2\tdog\tdog\tNOUN\tNN\t_\t3\tnsubj\t_\t_
3\tran\trun\tVERB\tVBD\t_\t0\troot\t_\t_

"""


@pytest.fixture
def treebank(tmp_path):
    path = tmp_path / "train.conllu"
    path.write_text(TREEBANK)
    return path


def test_the_default_input_is_the_form_alone(treebank, tmp_path, capsys):
    model = tmp_path / "xpos.npz"
    assert main(["learn", str(treebank), "--format", "conllu", "--label", "xpos",
                 "-o", str(model), "--max-iter", "2"]) == 0
    assert "gold annotation" not in capsys.readouterr().out
    _, settings, objects = load_model(model)
    assert settings["input"]["columns"] == ["form"]
    names = objects["vectorizer"].get_feature_names_out()
    assert not any("upos" in name for name in names) and any("form" in n for n in names)
    # the UPOS column is not read: a file without it is tagged
    (tmp_path / "raw.conllu").write_text(TREEBANK.replace("DET", "_").replace("NOUN", "_"))
    assert main(["tag", str(model), str(tmp_path / "raw.conllu")]) == 0


def test_gold_inputs_are_said_recorded_and_required(treebank, tmp_path, capsys):
    model = tmp_path / "xpos.npz"
    assert main(["learn", str(treebank), "--format", "conllu", "--label", "xpos",
                 "--inputs", "form,upos", "-o", str(model), "--max-iter", "2"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == (
        f"inputs: form, upos; the UPOS of {treebank} is gold annotation: every file to tag "
        "needs that column filled (gold, or predicted by a tagger first)")
    assert main(["dump", str(model), "--top", "1"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == (
        "input: CoNLL-U columns form, upos; predicts XPOS")
    untagged = tmp_path / "untagged.conllu"
    untagged.write_text(TREEBANK.replace("\tNOUN\t", "\t_\t"))
    assert main(["tag", str(model), str(untagged)]) == 2
    assert capsys.readouterr().err == (
        f"sklearn-struct tag: error: {untagged}, line 3: no UPOS ('_'), but the model reads it "
        "(inputs: form, upos); fill that column first\n")


@pytest.mark.parametrize("options, message", [
    (["--inputs", "form,xpos"], "--inputs form,xpos: xpos is the label (--label xpos); a "
     "model cannot read what it predicts"),
    (["--inputs", "form,deps"], "--inputs form,deps: 'deps' is not a CoNLL-U input column; "
     "expected some of form, lemma, upos, xpos, feats, comma-separated"),
    (["--template", "words", "--inputs", "form,upos,lemma"], "--template words reads a word "
     "and its tag: give at most two --inputs (e.g. form,upos), or use --template window"),
    (["--hash-bits", "12"], "--hash-bits is for the parser (--label head)"),
    (["--patience", "3"], "--patience stops training on the development file's score: give "
     "--dev too"),
])
def test_learn_refuses_inconsistent_inputs(treebank, tmp_path, capsys, options, message):
    assert main(["learn", str(treebank), "--format", "conllu", "--label", "xpos",
                 "-o", str(tmp_path / "m.npz")] + options) == 2
    assert capsys.readouterr().err == f"sklearn-struct learn: error: {message}\n"


def test_parser_options_are_checked(treebank, tmp_path, capsys):
    base = ["learn", str(treebank), "--format", "conllu", "--label", "head",
            "-o", str(tmp_path / "m.npz")]
    assert main(base + ["--inputs", "form,lemma"]) == 2
    assert "the parser reads the form and the tags (upos, xpos)" in capsys.readouterr().err
    assert main(base + ["--estimator", "perceptron", "--C", "1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "--C and --tol are for crf and svm" in captured.err
    assert main(base + ["--dev", str(tmp_path / "missing.conllu")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == (
        f"sklearn-struct learn: error: no such file: '{tmp_path / 'missing.conllu'}'\n")
    assert main(base + ["--window", "1"]) == 2
    assert "--template and --window choose the features of taggers" in \
        capsys.readouterr().err
    assert main(["learn", str(treebank), "--label", "head", "-o", str(tmp_path / "m.npz")]) == 2
    assert "--label picks CoNLL-U columns: add --format conllu" in capsys.readouterr().err


def test_model_options_are_accepted_when_they_agree(treebank, tmp_path, capsys):
    model = tmp_path / "upos.npz"
    assert main(["learn", str(treebank), "--format", "conllu", "-o", str(model),
                 "--max-iter", "2"]) == 0
    assert main(["tag", str(model), str(treebank), "--format", "conllu", "--label", "upos",
                 "--inputs", "form"]) == 0
    capsys.readouterr()
    assert main(["tag", str(model), str(treebank), "--format", "columns"]) == 2
    assert capsys.readouterr().err == (
        f"sklearn-struct tag: error: --format columns, but {model} was learnt with --format "
        "conllu; the model fixes it (omit --format)\n")
    assert main(["dump", str(model), "--label", "xpos"]) == 2
    assert "was learnt with --label upos" in capsys.readouterr().err
    assert main(["tag", str(model), str(treebank), "--marginals", "label"]) == 2
    assert "CoNLL-U has ten: it is for column files" in capsys.readouterr().err


@pytest.mark.parametrize("command, why", [
    (["tag", "{model}", "{treebank}", "--estimator", "svm"],
     "--estimator is an option of 'learn'; the model file fixes it (learn again to change it)"),
    (["dump", "{model}", "--C=2"],
     "--C is an option of 'learn'; the model file fixes it (learn again to change it)"),
    (["eval", "{treebank}", "{treebank}", "--hash-bits", "8"],
     "--hash-bits is an option of 'learn'; eval compares files and reads no model")])
def test_training_options_elsewhere_say_why_they_are_refused(
        treebank, tmp_path, capsys, command, why):
    files = {"model": tmp_path / "m.npz", "treebank": treebank}
    with pytest.raises(SystemExit) as exit_:
        main([arg.format(**files) for arg in command])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == f"sklearn-struct {command[0]}: error: {why}\n"


def test_two_roots_name_the_file_and_line(tmp_path, capsys):
    path = tmp_path / "train.conllu"
    path.write_text(TREEBANK.replace("1\tA\ta\tDET\tDT\t_\t2\tdet", "1\tA\ta\tDET\tDT\t_\t0\tdet"))
    assert main(["learn", str(path), "--format", "conllu", "--label", "head",
                 "-o", str(tmp_path / "m.npz")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == (
        f"sklearn-struct learn: error: {path}, line 9: words 1 and 3 both have head 0; a "
        "dependency tree has one root (exactly one word of head 0)\n")


NON_PROJECTIVE = """\
1\ta\ta\tX\tX\t_\t3\tdep\t_\t_
2\tb\tb\tX\tX\t_\t4\tdep\t_\t_
3\tc\tc\tX\tX\t_\t0\troot\t_\t_
4\td\td\tX\tX\t_\t3\tdep\t_\t_

"""


@pytest.mark.parametrize("extra, advice", [
    ([], "add --non-projective"),
    (["--second-order"], "drop --second-order and add --non-projective")])
def test_no_projective_sentence_says_so(tmp_path, capsys, extra, advice):
    path = tmp_path / "train.conllu"
    path.write_text(NON_PROJECTIVE * 2)
    assert main(["learn", str(path), "--format", "conllu", "--label", "head",
                 "-o", str(tmp_path / "m.npz")] + extra) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == (
        f"sklearn-struct learn: error: {path}: no projective sentence to learn from (none of "
        "its 2 sentences is projective, and the parser learns projective trees only); "
        f"{advice} to learn from every tree\n")


def test_feats_underscore_is_the_empty_bundle(tmp_path, capsys):
    """In CoNLL-U, '_' in FEATS is a word without features: a label and an input value."""
    path = tmp_path / "train.conllu"
    path.write_text(TREEBANK.replace("DET\tDT\t_", "DET\tDT\tDefinite=Def")
                    .replace("NOUN\tNN\t_", "NOUN\tNN\tNumber=Sing"))
    model = tmp_path / "feats.npz"
    assert main(["learn", str(path), "--format", "conllu", "--label", "feats",
                 "--estimator", "perceptron", "-o", str(model)]) == 0
    assert main(["tag", str(model), str(path), "-o", str(tmp_path / "tagged.conllu")]) == 0
    # learnt, and written back as '_', the verbs' empty bundle
    assert (tmp_path / "tagged.conllu").read_text() == path.read_text()
    assert main(["learn", str(path), "--format", "conllu", "--inputs", "form,feats",
                 "--estimator", "perceptron", "-o", str(tmp_path / "upos.npz")]) == 0
    capsys.readouterr()
    # UPOS, XPOS and DEPREL '_' are annotations missing, still refused
    for column, text in [("upos", "\tVERB\t"), ("deprel", "\troot\t")]:
        path.write_text(TREEBANK.replace(text, "\t_\t", 1))
        assert main(["learn", str(path), "--format", "conllu", "--label", column,
                     "-o", str(model)]) == 2
        assert capsys.readouterr().err == (
            f"sklearn-struct learn: error: {path}, line 4: no {column.upper()} ('_') to learn "
            "from\n")
    assert main(["learn", str(path), "--format", "conllu", "--label", "head",
                 "-o", str(model)]) == 2
    assert capsys.readouterr().err == (
        f"sklearn-struct learn: error: {path}, line 4: no DEPREL ('_'): the relation labeller "
        "learns from every word's relation\n")
