"""Parsing from the command line: CoNLL-U written back, UAS and LAS, the Python API's numbers."""

import gzip

import numpy as np
import pytest

from sklearn_struct import StructuredPerceptron
from sklearn_struct.cli import main, relation_features
from sklearn_struct.datasets import filter_projective, load_conllu
from sklearn_struct.metrics import attachment_score
from sklearn_struct.preprocessing import DependencyTokenEncoder, SequenceDictVectorizer
from sklearn_struct.structures import (
    DependencyTreeStructure, SiblingDependencyStructure, TreeStructure)

GOLD = """\
# sent_id = a
# text = I can't go.
1\tI\tI\tPRON\tPRP\t_\t4\tnsubj\t_\t_
2-3\tcan't\t_\t_\t_\t_\t_\t_\t_\t_
2\tca\tcan\tAUX\tMD\t_\t4\taux\t_\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_
4\tgo\tgo\tVERB\tVB\t_\t0\troot\t_\t_
4.1\twent\t_\t_\t_\t_\t_\t_\t4:conj\t_
5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\tSpaceAfter=No

# sent_id = b
1\tYes\tyes\tINTJ\tUH\t_\t2\tdiscourse\t_\t_
2\t!\t!\tPUNCT\t.\t_\t0\troot\t_\t_

"""
#: GOLD with n't and . attached wrongly, nsubj:pass for nsubj (the same universal
#: relation) and obj for discourse.
SYSTEM = (GOLD.replace("1\tI\tI\tPRON\tPRP\t_\t4\tnsubj", "1\tI\tI\tPRON\tPRP\t_\t4\tnsubj:pass")
          .replace("not\tPART\tRB\t_\t4", "not\tPART\tRB\t_\t2")
          .replace("PUNCT\t.\t_\t4", "PUNCT\t.\t_\t1")
          .replace("2\tdiscourse", "2\tobj"))


def test_eval_counts_uas_and_las_as_conll_2018(tmp_path, capsys):
    (tmp_path / "gold.conllu").write_text(GOLD)
    (tmp_path / "system.conllu").write_text(SYSTEM)
    assert main(["eval", str(tmp_path / "gold.conllu"), str(tmp_path / "system.conllu"),
                 "--label", "head"]) == 0
    # 7 words (the multiword token and the empty node are not words): heads right for
    # I, ca, go, Yes, ! (5); with their universal relation for I, ca, go, ! (4).
    # Without the punctuation (. and !): 5 words, heads 4, labelled 3.
    assert capsys.readouterr().out.splitlines() == [
        "7 words in 2 sentences (syntactic words: multiword tokens and empty nodes are not "
        "scored)",
        "UAS:     71.43%  LAS:  57.14%  (every word, as CoNLL 2018)",
        # content words: gold I, n't, go, Yes, ! (not ca: aux, nor .: punct); system I,
        # n't, go, Yes (obj), !; right I, go, ! (n't's head and Yes's relation are wrong)
        "CLAS:    60.00%  (F1 of the content words' labelled attachments, as CoNLL 2018)",
        "UAS:     80.00%  LAS:  60.00%  (punctuation excluded: words of punctuation "
        "characters only, CoNLL-X)"]
    assert main(["eval", str(tmp_path / "gold.conllu"), str(tmp_path / "system.conllu")]) == 0
    report = capsys.readouterr().out
    assert "UPOS:   100.00%" in report and "DEPREL:  71.43%" in report
    assert "AllTags:100.00%" in report


def test_eval_refuses_another_tokenisation(tmp_path, capsys):
    (tmp_path / "gold.conllu").write_text(GOLD)
    (tmp_path / "system.conllu").write_text(GOLD.replace("\tgo\tgo\t", "\tgone\tgo\t"))
    assert main(["eval", str(tmp_path / "gold.conllu"), str(tmp_path / "system.conllu")]) == 2
    assert capsys.readouterr().err == (
        f"sklearn-struct eval: error: {tmp_path / 'system.conllu'}, line 7: word 'gone' where "
        f"{tmp_path / 'gold.conllu'}, line 7 has 'go'; eval scores the gold tokenisation only\n")
    assert main(["eval", str(tmp_path / "gold.conllu")]) == 2
    assert capsys.readouterr().err == (
        "sklearn-struct eval: error: CoNLL-U is scored against its gold file: give the gold "
        "file and the system's (the output of 'tag')\n")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("label", ["head", "upos"])
def test_tag_writes_conllu_back_byte_for_byte(tmp_path, capsys, label):
    (tmp_path / "gold.conllu").write_text(GOLD)
    inputs, parser = ("form,upos", ["--hash-bits", "12"]) if label == "head" else ("form", [])
    assert main(["learn", str(tmp_path / "gold.conllu"), "--format", "conllu", "--label", label,
                 "--inputs", inputs, "--estimator", "perceptron", "-o",
                 str(tmp_path / "m.npz")] + parser) == 0
    # the file to tag has the predicted columns blank ('_'): tag fills them in
    predicted = {"head": (6, 7), "upos": (3,)}[label]
    plain = "".join("\t".join("_" if i in predicted else field
                              for i, field in enumerate(line.split("\t")))
                    + "\n" if line[:1].isdigit() else line + "\n"
                    for line in GOLD.splitlines())
    (tmp_path / "plain.conllu").write_text(plain)
    assert main(["tag", str(tmp_path / "m.npz"), str(tmp_path / "plain.conllu"), "-o",
                 str(tmp_path / "tagged.conllu")]) == 0
    written = (tmp_path / "tagged.conllu").read_bytes().split(b"\n")
    read = plain.encode().split(b"\n")
    assert len(written) == len(read)
    for line, original in zip(written, read):
        fields, original_fields = line.split(b"\t"), original.split(b"\t")
        is_word = original[:1].isdigit() and b"-" not in original_fields[0] \
            and b"." not in original_fields[0]
        if is_word:
            assert [f for i, f in enumerate(fields) if i not in predicted] == \
                [f for i, f in enumerate(original_fields) if i not in predicted]
            assert all(fields[i] != b"_" for i in predicted)
        else:  # comments, multiword tokens, empty nodes, blank lines
            assert line == original
    if label == "head":
        data = load_conllu(tmp_path / "tagged.conllu")
        assert [len(h) for h in data.head] == [5, 2]
        capsys.readouterr()
        assert main(["dump", str(tmp_path / "m.npz"), "--top", "1"]) == 0
        dumped = capsys.readouterr().out.splitlines()
        assert dumped[0].endswith(", --estimator perceptron")
        assert dumped[1] == "input: CoNLL-U columns form, upos; predicts HEAD and DEPREL"
        assert dumped[2].startswith("parser: StructuredPerceptron over DependencyTreeStructure(")
        assert dumped[3].startswith("relation labeller: StructuredPerceptron: 6 labels,")
        assert any(line.endswith("of its head)") for line in dumped)  # typed transitions


def _first_sentences(source, target, n):
    lines, count = [], 0
    with gzip.open(source, "rt", encoding="utf-8") as handle:
        for line in handle:
            lines.append(line)
            if not line.strip():
                count += 1
                if count == n:
                    break
    target.write_text("".join(lines), encoding="utf-8")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_parsing_ewt_equals_the_python_api(shared_data, tmp_path, capsys):
    corpus = shared_data / "ud_en_ewt_r2.16"
    train, test = tmp_path / "train.conllu", tmp_path / "test.conllu"
    _first_sentences(corpus / "en_ewt-ud-train.conllu.gz", train, 200)
    _first_sentences(corpus / "en_ewt-ud-test.conllu.gz", test, 100)
    assert main(["learn", str(train), "--format", "conllu", "--label", "head", "--inputs",
                 "form,upos,xpos", "--estimator", "perceptron", "--max-iter", "3",
                 "--hash-bits", "16", "--dev", str(test), "--dev-every", "3",
                 "-o", str(tmp_path / "parser.npz")]) == 0
    learnt = capsys.readouterr().out
    assert "the UPOS, XPOS of" in learnt and "are gold annotation" in learnt
    dev_scores = learnt.split("; dev ")[-1].split(";")[0]  # "UAS x, LAS y"
    assert main(["tag", str(tmp_path / "parser.npz"), str(test), "-o",
                 str(tmp_path / "parsed.conllu")]) == 0
    assert main(["eval", str(test), str(tmp_path / "parsed.conllu"), "--label", "head"]) == 0
    report = capsys.readouterr().out.splitlines()

    # the Python API: the same encoder, parser, features and relation labeller
    def sentences(data):
        return [{"form": f, "upos": u, "xpos": x}
                for f, u, x in zip(data.form, data.upos, data.xpos)]

    names = ["form", "upos", "xpos"]
    gold, evaluated = load_conllu(train), load_conllu(test)
    encoder = DependencyTokenEncoder(pos="both").fit(sentences(gold))
    X, heads, _ = filter_projective(encoder.transform(sentences(gold)), gold.head)
    parser = StructuredPerceptron(structure=DependencyTreeStructure(hash_bits=16), max_iter=3,
                                  random_state=0).fit(X, heads)
    columns = [[s[name] for name in names] for s in sentences(gold)]
    vectorizer = SequenceDictVectorizer().fit(
        [relation_features(c, names, h) for c, h in zip(columns, gold.head)])

    def trees(columns, heads):
        X = vectorizer.transform([relation_features(c, names, h)
                                  for c, h in zip(columns, heads)])
        return [(x, np.asarray(h) - 1, (np.arange(len(h)) > np.asarray(h) - 1).astype(int))
                for x, h in zip(X, heads)]

    labeller = StructuredPerceptron(structure=TreeStructure(n_edge_types=2), max_iter=3,
                                    random_state=0).fit(trees(columns, gold.head), gold.deprel)
    predicted = parser.predict(encoder.transform(sentences(evaluated)))
    test_columns = [[s[name] for name in names] for s in sentences(evaluated)]
    relations = labeller.predict(trees(test_columns, predicted))
    parsed = load_conllu(tmp_path / "parsed.conllu")
    for ours, api in zip(parsed.head, predicted):
        np.testing.assert_array_equal(ours, api)
    assert parsed.deprel == [list(r) for r in relations]
    universal = [[[r.split(":")[0] for r in s] for s in deprel]
                 for deprel in (evaluated.deprel, relations)]
    uas = 100 * attachment_score(evaluated.head, predicted)
    las = 100 * attachment_score(evaluated.head, predicted, labels_true=universal[0],
                                 labels_pred=universal[1])
    assert report[1] == (f"UAS:    {uas:6.2f}%  LAS: {las:6.2f}%  (every word, as CoNLL 2018)")
    assert dev_scores == f"UAS {uas:.2f}, LAS {las:.2f}"  # --dev scores the same way
    assert f"parser pass 3: dev UAS {uas:.2f}" in learnt
    assert 60 < uas < 90 and 50 < las < uas


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_second_order_parsing_equals_the_python_api(shared_data, tmp_path, capsys):
    corpus = shared_data / "ud_en_ewt_r2.16"
    train, test = tmp_path / "train.conllu", tmp_path / "test.conllu"
    _first_sentences(corpus / "en_ewt-ud-train.conllu.gz", train, 80)
    _first_sentences(corpus / "en_ewt-ud-test.conllu.gz", test, 30)
    model = str(tmp_path / "parser.npz")
    assert main(["learn", str(train), "--format", "conllu", "--label", "head", "--inputs",
                 "form,upos,xpos", "--estimator", "perceptron", "--max-iter", "2",
                 "--hash-bits", "14", "--second-order", "-o", model]) == 0
    assert "second-order (arcs and siblings)" in capsys.readouterr().out
    assert main(["tag", model, str(test), "-o", str(tmp_path / "parsed.conllu")]) == 0

    def sentences(data):
        return [{"form": f, "upos": u, "xpos": x}
                for f, u, x in zip(data.form, data.upos, data.xpos)]

    gold, evaluated = load_conllu(train), load_conllu(test)
    encoder = DependencyTokenEncoder(pos="both").fit(sentences(gold))
    X, heads, _ = filter_projective(encoder.transform(sentences(gold)), gold.head)
    parser = StructuredPerceptron(structure=SiblingDependencyStructure(hash_bits=14),
                                  max_iter=2, random_state=0).fit(X, heads)
    predicted = parser.predict(encoder.transform(sentences(evaluated)))
    for ours, api in zip(load_conllu(tmp_path / "parsed.conllu").head, predicted):
        np.testing.assert_array_equal(ours, api)


@pytest.mark.parametrize("extra, message", [
    (["--label", "head", "--non-projective"], "drop --non-projective"),
    (["--label", "upos"], "--second-order is for the parser"),
])
def test_second_order_option_is_refused_where_it_has_no_meaning(tmp_path, capsys, extra,
                                                                message):
    train = tmp_path / "train.conllu"
    train.write_text(GOLD, encoding="utf-8")
    assert main(["learn", str(train), "--format", "conllu", "--second-order", *extra,
                 "-o", str(tmp_path / "model.npz")]) == 2
    assert message in capsys.readouterr().err
