"""The sklearn-struct command line, run as a user runs it (subprocess) and in-process."""

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sklearn_struct import EGCRF, StructuredPerceptron, __version__
from sklearn_struct.cli import main
from sklearn_struct.persistence import load_model
from sklearn_struct.datasets import load_conll
from sklearn_struct.metrics import chunk_precision_recall_fscore_support
from sklearn_struct.preprocessing import SequenceDictVectorizer, column_window_features

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args, cwd):
    """``sklearn-struct ARGS`` in a new process (this checkout's package); the result."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "sklearn_struct.cli", *map(str, args)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _first_sentences(source, target, n):
    """Write the first ``n`` sentences of a gzip CoNLL file to ``target``."""
    lines, count = [], 0
    with gzip.open(source, "rt", encoding="utf-8") as handle:
        for line in handle:
            lines.append(line)
            if not line.strip():
                count += 1
                if count == n:
                    break
    target.write_text("".join(lines), encoding="utf-8")


def _window_features(data):
    return [column_window_features([w, p], ["w", "pos"], window=2)
            for w, p in zip(data.word, data.pos)]


def _api_model(path, Estimator, dev=None, **params):
    """The Python API on a column file: CRFsuite window features, vectorizer, estimator
    (with a ``dev`` file, early stopping on it that runs every pass, as ``--dev``)."""
    data = load_conll(path)
    vectorizer = SequenceDictVectorizer()
    X = vectorizer.fit_transform(_window_features(data))
    if dev is None:
        return vectorizer, Estimator(random_state=0, **params).fit(X, data.tags)
    dev = load_conll(dev)
    estimator = Estimator(random_state=0, early_stopping=True, n_iter_no_change=10 ** 9,
                          **params).fit(X, data.tags,
                                        X_val=vectorizer.transform(_window_features(dev)),
                                        y_val=dev.tags)
    return vectorizer, estimator


def _api_predict(vectorizer, estimator, path):
    data = load_conll(path)
    X = [column_window_features([w, p], ["w", "pos"], window=2)
         for w, p in zip(data.word, data.pos)]
    return data.tags, estimator.predict(vectorizer.transform(X))


def _column(path, index):
    sentences, current = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            current.append(line.split()[index])
        elif current:
            sentences.append(current)
            current = []
    return sentences + ([current] if current else [])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_learn_tag_eval_reproduce_the_api(shared_data, tmp_path, capsys):
    corpus = shared_data / "conll2000_chunking"
    train, test = tmp_path / "train.txt", tmp_path / "test.txt"
    _first_sentences(corpus / "train.txt.gz", train, 300)
    _first_sentences(corpus / "test.txt.gz", test, 100)

    learnt = run_cli("learn", train, "-o", "model.npz", "--C", 2, "--max-iter", 4,
                     "--dev", test, "--dev-every", 2, cwd=tmp_path)
    assert learnt.returncode == 0, learnt.stderr
    assert "pass 2: dev F1" in learnt.stdout and "pass 4: dev F1" in learnt.stdout
    tagged = run_cli("tag", "model.npz", test, "-o", "tagged.txt", cwd=tmp_path)
    assert tagged.returncode == 0, tagged.stderr
    scored = run_cli("eval", "tagged.txt", cwd=tmp_path)
    assert scored.returncode == 0, scored.stderr

    vectorizer, crf = _api_model(train, EGCRF, dev=test, C=2.0, max_iter=4)
    y_test, predicted = _api_predict(vectorizer, crf, test)
    assert f"kept pass {crf.best_iteration_} (the best dev token accuracy" in learnt.stdout
    assert _column(tmp_path / "tagged.txt", -1) == [p.tolist() for p in predicted]
    assert _column(tmp_path / "tagged.txt", -2) == [t.tolist() for t in y_test]
    precision, recall, f1, support = chunk_precision_recall_fscore_support(y_test, predicted)
    n_predicted = sum(1 for p in predicted for tag in p if tag.startswith("B-"))
    head, overall = scored.stdout.splitlines()[:2]
    assert head.startswith(f"processed {sum(map(len, y_test))} tokens with {support} phrases; "
                           f"found: {n_predicted} phrases;")
    assert overall.endswith(f"precision: {100 * precision:6.2f}%; recall: {100 * recall:6.2f}%; "
                            f"FB1: {100 * f1:6.2f}")
    assert f"dev F1 {100 * f1:.2f}" in learnt.stdout.splitlines()[-1]

    capsys.readouterr()
    assert main(["dump", str(tmp_path / "model.npz"), "--top", "2"]) == 0
    dumped = capsys.readouterr().out
    top = max(crf.transition_features_.items(), key=lambda item: item[1])
    assert f"{top[1]:+10.4f}  {top[0][0]} -> {top[0][1]}" in dumped
    assert "pos[0]=" in dumped


def test_help_of_every_command(tmp_path, capsys):
    result = run_cli("--help", cwd=tmp_path)
    assert result.returncode == 0 and "sklearn-struct learn train.txt" in result.stdout
    for command in ("learn", "tag", "eval", "dump"):
        with pytest.raises(SystemExit) as exit_:
            main([command, "--help"])
        assert exit_.value.code == 0
        assert f"usage: sklearn-struct {command}" in capsys.readouterr().out
    main_help = run_cli("learn", "--help", cwd=tmp_path).stdout
    assert "CRFsuite's chunking templates" in main_help


def test_errors_are_one_line_naming_file_and_line(tmp_path, capsys):
    (tmp_path / "bad.txt").write_text("He PRP B-NP\nran VBD\n")
    cases = [
        (["learn", "missing.txt", "-o", "m.joblib"], "no such file: 'missing.txt'"),
        (["learn", "bad.txt", "-o", "m.joblib"],
         "bad.txt, line 2: expected 3 columns like the first token line, got 2: 'ran VBD'"),
    ]
    for args, message in cases:
        result = run_cli(*args, cwd=tmp_path)
        assert result.returncode == 2
        assert result.stderr == f"sklearn-struct {args[0]}: error: {message}\n"
    assert not (tmp_path / "m.joblib").exists()
    bad = str(tmp_path / "bad.txt")
    assert main(["tag", bad, bad]) == 2
    assert capsys.readouterr().err == (
        f"sklearn-struct tag: error: {bad}: not a model file written by 'sklearn-struct "
        "learn' (expected an .npz archive of arrays and a JSON header)\n")


TRAIN = """\
The DT B-NP
cat NN I-NP
sat VBD B-VP
. . O

A DT B-NP
dog NN I-NP
ran VBD B-VP
home NN B-NP
. . O
"""


def test_tag_input_checks_and_marginals(tmp_path, capsys):
    (tmp_path / "train.txt").write_text(TRAIN)
    model = tmp_path / "model.npz"
    assert main(["learn", str(tmp_path / "train.txt"), "-o", str(model)]) == 0
    # without the label column, separators and -DOCSTART- written back
    (tmp_path / "plain.txt").write_text("-DOCSTART- -X-\n\nThe DT\ndog NN\nsat VBD\n")
    capsys.readouterr()
    assert main(["tag", str(model), str(tmp_path / "plain.txt"), "--marginals", "label"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["-DOCSTART- -X-", ""]
    assert [line.split()[:3] for line in lines[2:]] == [
        ["The", "DT", "B-NP"], ["dog", "NN", "I-NP"], ["sat", "VBD", "B-VP"]]
    assert all(0.5 < float(line.split()[3]) <= 1 for line in lines[2:])
    assert main(["tag", str(model), str(tmp_path / "plain.txt"), "--marginals", "all"]) == 0
    first = capsys.readouterr().out.splitlines()[2].split()
    probabilities = [float(field.rsplit(":", 1)[1]) for field in first[3:]]
    assert [field.rsplit(":", 1)[0] for field in first[3:]] == ["B-NP", "B-VP", "I-NP", "O"]
    assert sum(probabilities) == pytest.approx(1, abs=1e-3)
    # the probability of the predicted chunk each token is in: the Python API's
    assert main(["tag", str(model), str(tmp_path / "plain.txt"), "--marginals", "chunk"]) == 0
    fields = [line.split()[3] for line in capsys.readouterr().out.splitlines()[2:]]
    objects = load_model(model)[2]
    X = objects["vectorizer"].transform([column_window_features(
        [["The", "dog", "sat"], ["DT", "NN", "VBD"]], ["w", "pos"], window=2)])
    chunks = objects["estimator"].predict_chunks(X)[0]
    assert [(kind, start, end) for kind, start, end, _ in chunks] == [("NP", 0, 2), ("VP", 2, 3)]
    assert fields == [f"{chunks[0][3]:.4f}"] * 2 + [f"{chunks[1][3]:.4f}"]
    (tmp_path / "wide.txt").write_text("a b c d\n")
    assert main(["tag", str(model), str(tmp_path / "wide.txt")]) == 2
    assert capsys.readouterr().err == (
        f"sklearn-struct tag: error: {tmp_path / 'wide.txt'}, line 1: 4 columns, but the model "
        "was learnt on 2 attribute columns: expected 2, or 3 with the label last\n")


def test_eval_token_accuracy_and_chunks(tmp_path, capsys):
    (tmp_path / "pos.txt").write_text("a DT DT\nb NN VB\n\nc NN NN\n")
    assert main(["eval", str(tmp_path / "pos.txt")]) == 0
    assert capsys.readouterr().out == "processed 3 tokens in 2 sentences; accuracy:  66.67%\n"
    # conlleval's own example logic: I-NP after O starts a chunk
    (tmp_path / "np.txt").write_text("a x B-NP B-NP\nb x I-NP O\nc x O I-NP\n")
    assert main(["eval", str(tmp_path / "np.txt")]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "processed 3 tokens with 1 phrases; found: 2 phrases; correct: 0.",
        "accuracy:  33.33%; precision:   0.00%; recall:   0.00%; FB1:   0.00",
        "               NP: precision:   0.00%; recall:   0.00%; FB1:   0.00  2",
    ]


def test_conllu_upos_with_the_perceptron(tmp_path, capsys):
    rows = [("The", "DET"), ("cat", "NOUN"), ("sat", "VERB"), ("A", "DET"), ("dog", "NOUN")]
    text = "".join(f"{i + 1}\t{form}\t_\t{upos}\t_\t_\t0\troot\t_\t_\n" if i == 0 else
                   f"{i + 1}\t{form}\t_\t{upos}\t_\t_\t1\tdep\t_\t_\n"
                   for i, (form, upos) in enumerate(rows[:3]))
    text += "\n1\tA\t_\tDET\t_\t_\t0\troot\t_\t_\n2\tdog\t_\tNOUN\t_\t_\t1\tdep\t_\t_\n\n"
    path = tmp_path / "tiny.conllu"
    path.write_text("# sent_id = 1\n" + text)
    model = tmp_path / "model.npz"
    assert main(["learn", str(path), "--format", "conllu", "--estimator", "perceptron",
                 "-o", str(model)]) == 0
    vectorizer = SequenceDictVectorizer()
    api = StructuredPerceptron(random_state=0).fit(
        vectorizer.fit_transform(
            [column_window_features([["The", "cat", "sat"]], ["form"]),
             column_window_features([["A", "dog"]], ["form"])]),
        [np.array(["DET", "NOUN", "VERB"]), np.array(["DET", "NOUN"])])
    named = api.named_weights(vectorizer.get_feature_names_out())["state_features_"]
    capsys.readouterr()
    tagged = tmp_path / "tagged.conllu"
    assert main(["tag", str(model), str(path), "-o", str(tagged), "--format", "conllu"]) == 0
    assert tagged.read_text() == path.read_text()  # every UPOS right: the file as read
    assert main(["dump", str(model)]) == 0
    best = max(w for (f, label), w in named.items() if label == "NOUN")
    dumped = capsys.readouterr().out
    assert dumped.startswith(f"model written by sklearn-struct {__version__}, --estimator "
                             "perceptron\ninput: CoNLL-U columns form; predicts UPOS\n")
    assert f"  NOUN\n    {best:+10.4f}  form[" in dumped
    assert main(["eval", str(path), str(tagged), "--label", "upos"]) == 0
    assert "UPOS:   100.00%" in capsys.readouterr().out


def test_learn_option_errors(tmp_path, capsys):
    (tmp_path / "train.txt").write_text(TRAIN)
    train = str(tmp_path / "train.txt")
    assert main(["learn", train, "-o", "m", "--label", "xpos"]) == 2
    assert "--label picks CoNLL-U columns" in capsys.readouterr().err
    assert main(["learn", train, "-o", "m", "--estimator", "perceptron", "--C", "2"]) == 2
    assert "--C and --tol are for crf and svm" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["learn", train, "-o", "m", "--window", "-1"])
    assert "expected a non-negative integer, got -1" in capsys.readouterr().err


def test_a_byte_order_mark_is_dropped_by_every_command(tmp_path, capsys):
    plain, marked = tmp_path / "plain.txt", tmp_path / "marked.txt"
    plain.write_text("-DOCSTART- -X- O\n\n" + TRAIN, encoding="utf-8")
    marked.write_text("\ufeff-DOCSTART- -X- O\n\n" + TRAIN, encoding="utf-8")
    weights = []
    for path in (plain, marked):
        model = tmp_path / f"{path.stem}.joblib"
        assert main(["learn", str(path), "-o", str(model), "--max-iter", "3"]) == 0
        assert capsys.readouterr().out.startswith("2 sentences, 9 tokens,")
        weights.append(load_model(model)[2]["estimator"].weights_)
        assert main(["tag", str(model), str(path), "-o", str(tmp_path / "tagged.txt")]) == 0
        assert (tmp_path / "tagged.txt").read_text().splitlines()[:3] == [
            "-DOCSTART- -X- O", "", "The DT B-NP B-NP"]
    np.testing.assert_array_equal(weights[0], weights[1])
    (tmp_path / "scored.txt").write_text("\ufeffa DT DT\nb NN VB\n", encoding="utf-8")
    assert main(["eval", str(tmp_path / "scored.txt")]) == 0
    assert capsys.readouterr().out == "processed 2 tokens in 1 sentences; accuracy:  50.00%\n"


def test_unwritable_model_paths_are_refused_before_training(tmp_path, capsys):
    (tmp_path / "train.txt").write_text(TRAIN)
    train = str(tmp_path / "train.txt")
    cases = [(str(tmp_path / "missing" / "m.joblib"),
              f"the folder '{tmp_path / 'missing'}' does not exist (nothing trained)"),
             (str(tmp_path), "is a folder; expected a model file name")]
    for output, message in cases:
        assert main(["learn", train, "-o", output]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""  # refused before reading or training
        assert captured.err == f"sklearn-struct learn: error: -o {output}: {message}\n"


def _no_vectorizer(header):
    del header["objects"]["vectorizer"]


def _input_as_text(header):
    header["settings"]["input"] = "columns"


def _no_template(header):
    del header["settings"]["template"]


def _encoder_as_estimator(header):
    header["objects"]["estimator"] = header["objects"]["vectorizer"]


@pytest.mark.parametrize("command", ["tag", "dump"])
@pytest.mark.parametrize("edit, missing", [
    (_no_vectorizer, "vectorizer"), (_input_as_text, "input format"),
    (_no_template, "template"), (_encoder_as_estimator, "estimator")])
def test_model_files_without_their_parts_are_refused(tmp_path, capsys, command, edit, missing):
    (tmp_path / "train.txt").write_text(TRAIN)
    model = tmp_path / "model.npz"
    assert main(["learn", str(tmp_path / "train.txt"), "-o", str(model), "--max-iter", "2"]) == 0
    with np.load(model, allow_pickle=False) as archive:
        arrays = dict(archive)
    header = json.loads(str(arrays.pop("header")))
    edit(header)
    broken = tmp_path / "broken.npz"
    with open(broken, "wb") as handle:
        np.savez(handle, header=np.array(json.dumps(header)), **arrays)
    args = [str(broken)] + ([str(tmp_path / "train.txt")] if command == "tag" else [])
    capsys.readouterr()
    assert main([command] + args) == 2
    assert capsys.readouterr().err == (
        f"sklearn-struct {command}: error: {broken}: an incomplete model file (no valid "
        f"{missing})\n")


def test_tag_nbest_writes_crfpp_blocks(tmp_path, capsys):
    (tmp_path / "train.txt").write_text(TRAIN)
    model = tmp_path / "model.npz"
    assert main(["learn", str(tmp_path / "train.txt"), "-o", str(model)]) == 0
    (tmp_path / "plain.txt").write_text("-DOCSTART- -X-\n\nThe DT\ndog NN\nsat VBD\n\nran VBD\n")
    capsys.readouterr()
    assert main(["tag", str(model), str(tmp_path / "plain.txt"), "--nbest", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["-DOCSTART- -X-", ""]
    # 3 labellings of the first sentence, then 3 of the second: '# rank p', tokens, blank
    headers = [n for n, line in enumerate(lines) if line.startswith("#")]
    assert headers == [2, 7, 12, 17, 20, 23] and lines[-1] == ""
    assert [lines[n].split()[1] for n in headers] == ["0", "1", "2"] * 2
    p = [float(lines[n].split()[2]) for n in headers]
    assert p[:3] == sorted(p[:3], reverse=True) and p[3:] == sorted(p[3:], reverse=True)
    assert 0 < sum(p[:3]) <= 1 and 0 < sum(p[3:]) <= 1
    tokens = [["The", "DT"], ["dog", "NN"], ["sat", "VBD"]]
    assert [line.split()[:2] for line in lines[3:6]] == tokens
    assert all(lines[n + 4] == "" for n in headers[:3])
    # rank 0 is 'tag''s labelling; the probabilities are the API's
    assert main(["tag", str(model), str(tmp_path / "plain.txt")]) == 0
    best = [line.split()[-1] for line in capsys.readouterr().out.splitlines()[2:] if line]
    assert [line.split()[-1] for line in lines[3:6] + lines[18:19]] == best
    from sklearn_struct.cli import token_features

    _, settings, objects = load_model(model)
    X = objects["vectorizer"].transform([token_features(
        [["The", "dog", "sat"], ["DT", "NN", "VBD"]], settings["input"]["names"],
        settings["template"], settings["window"])])
    _, _, proba = objects["estimator"].predict_k_best(X, 3, return_proba=True)
    np.testing.assert_allclose(p[:3], proba[0], atol=5e-7)
    # labellings distinct within a sentence
    labellings = [tuple(line.split()[-1] for line in lines[n + 1:n + 4]) for n in headers[:3]]
    assert len(set(labellings)) == 3


def test_tag_nbest_beyond_every_labelling(tmp_path, capsys):
    """A K far beyond the labellings (2**40): each sentence gets all of them, once, in the
    memory of its own labellings (it used to allocate K rows up front)."""
    (tmp_path / "train.txt").write_text(TRAIN)
    model = tmp_path / "model.npz"
    assert main(["learn", str(tmp_path / "train.txt"), "-o", str(model)]) == 0
    (tmp_path / "plain.txt").write_text("The DT\ndog NN\nsat VBD\n\nran VBD\n")
    capsys.readouterr()
    assert main(["tag", str(model), str(tmp_path / "plain.txt"), "--nbest", str(2 ** 40)]) == 0
    lines = capsys.readouterr().out.splitlines()
    headers = [n for n, line in enumerate(lines) if line.startswith("#")]
    first = [n for n in headers if lines[n + 2]]  # the 3-token sentence's blocks
    assert [int(lines[n].split()[1]) for n in first] == list(range(len(first)))
    assert len(headers) - len(first) == 4  # one token: every label
    for blocks in (first, headers[len(first):]):  # all labellings: probabilities sum to 1
        assert sum(float(lines[n].split()[2]) for n in blocks) == pytest.approx(1.0, abs=1e-4)
    labellings = {tuple(line.split()[-1] for line in lines[n + 1:n + 4]) for n in first}
    assert len(labellings) == len(first) > 4


@pytest.mark.parametrize("estimator", ["crf", "perceptron"])
def test_tag_nbest_wapiti_layout(tmp_path, capsys, estimator):
    """Wapiti's ``label -n K -s``: per labelling '# RANK SCORE', then per token the line,
    a tab, the label, a tab and LABEL/SCORE (the token's share), then a blank line."""
    (tmp_path / "train.txt").write_text(TRAIN)
    model = tmp_path / "model.joblib"
    assert main(["learn", str(tmp_path / "train.txt"), "-o", str(model),
                 "--estimator", estimator]) == 0
    (tmp_path / "plain.txt").write_text("-DOCSTART- -X-\n\nThe DT\ndog NN\nsat VBD\n\nran VBD\n")
    capsys.readouterr()
    assert main(["tag", str(model), str(tmp_path / "plain.txt"), "--nbest", "2",
                 "--nbest-layout", "wapiti"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["-DOCSTART- -X-", ""]
    headers = [n for n, line in enumerate(lines) if line.startswith("#")]
    assert headers == [2, 7, 12, 15] and lines[-1] == ""
    _, settings, objects = load_model(model)
    from sklearn_struct.cli import token_features

    X = objects["vectorizer"].transform([token_features(
        [["The", "dog", "sat"], ["DT", "NN", "VBD"]], settings["input"]["names"],
        settings["template"], settings["window"])])
    labellings, scores = objects["estimator"].predict_k_best(X, 2)
    for rank, n in enumerate(headers[:2]):
        hash_, r, score = lines[n].split(" ")
        assert (hash_, r) == ("#", str(rank))
        assert float(score) == pytest.approx(scores[0][rank], abs=5e-6)
        shares = []
        for line, word, label in zip(lines[n + 1:n + 4], ["The DT", "dog NN", "sat VBD"],
                                     labellings[0][rank]):
            fields = line.split("\t")
            assert fields[:2] == [word, label]
            name, share = fields[2].rsplit("/", 1)
            assert name == label
            shares.append(float(share))
        assert sum(shares) == pytest.approx(float(score), abs=2e-5)
        assert lines[n + 4] == ""
    assert lines[12].split(" ")[1] == "0" and lines[13].split("\t")[0] == "ran VBD"


def test_tag_nbest_errors(tmp_path, capsys):
    (tmp_path / "train.txt").write_text(TRAIN)
    crf, perceptron = tmp_path / "crf.joblib", tmp_path / "perceptron.joblib"
    assert main(["learn", str(tmp_path / "train.txt"), "-o", str(crf)]) == 0
    assert main(["learn", str(tmp_path / "train.txt"), "-o", str(perceptron),
                 "--estimator", "perceptron"]) == 0
    plain = tmp_path / "plain.txt"
    plain.write_text("The DT\n")
    capsys.readouterr()
    assert main(["tag", str(perceptron), str(plain), "--nbest", "2"]) == 2
    assert capsys.readouterr().err == (
        "sklearn-struct tag: error: --nbest writes each labelling's probability and needs a "
        "probabilistic model (crf); this one is StructuredPerceptron (--nbest-layout wapiti "
        "writes scores instead)\n")
    assert main(["tag", str(crf), str(plain), "--nbest", "2", "--marginals", "all"]) == 2
    assert "does not combine with --marginals" in capsys.readouterr().err
    for bad in ("0", "x"):
        with pytest.raises(SystemExit):
            main(["tag", str(crf), str(plain), "--nbest", bad])
        assert "--nbest" in capsys.readouterr().err
