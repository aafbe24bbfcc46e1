"""CoNLL-U loading, tree helpers and the attachment score."""

import gzip
import itertools

import numpy as np
import pytest

from sklearn_struct.datasets import (
    check_heads,
    filter_projective,
    is_projective,
    load_conllu,
    projectivize,
)
from sklearn_struct.datasets._conllu import read_conllu_sentences
from sklearn_struct.metrics import attachment_score

LINE = "{id}\t{form}\t{form}\tX\tXX\t_\t{head}\tdep\t_\t_"


def _write(path, text, compress=False):
    data = text.encode()
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


@pytest.mark.parametrize("compress", [False, True])
def test_small_file(tmp_path, compress):
    text = "\n".join([
        "# newdoc id = d1", "# sent_id = a", "# text = I don't",
        LINE.format(id=1, form="I", head=2),
        "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_",
        LINE.format(id=2, form="do", head=0),
        LINE.format(id=3, form="n't", head=2),
        "3.1\tgone\t_\t_\t_\t_\t_\t_\t_\t_",
        "",
        LINE.format(id=1, form="Hi", head=0),
        "",
    ])
    data = load_conllu(_write(tmp_path / "x.conllu", text, compress))
    assert data.form == [["I", "do", "n't"], ["Hi"]]
    assert [h.tolist() for h in data.head] == [[2, 0, 2], [0]]
    assert data.sent_id == ["a", None] and data.text == ["I don't", None]
    assert data.upos[0] == ["X", "X", "X"] and data.deprel[1] == ["dep"]


@pytest.mark.parametrize("lines, message", [
    ([LINE.format(id=1, form="a", head=0).replace("\t", " ")], "expected 10 tab-separated"),
    ([LINE.format(id=2, form="a", head=0)], "word id '2' where 1 was expected"),
    ([LINE.format(id=1, form="a", head="_")], "is not an integer"),
    ([LINE.format(id=1, form="a", head=3)], "head 3 is outside 0..1"),
    ([LINE.format(id=1, form="a", head=2), LINE.format(id=2, form="b", head=1)], "cycle"),
    # superscript digits pass str.isdigit but are no integers
    ([LINE.format(id=1, form="a", head="\u00b2")], r"line 2: head '\u00b2' is not an integer"),
    ([LINE.format(id="\u00b9", form="a", head=0)],
     r"line 2: word id '\u00b9' where 1 was expected"),
    # a negative id is no multiword range: refused on its own line, not skipped
    ([LINE.format(id=1, form="a", head=0), LINE.format(id=-3, form="b", head=1),
      LINE.format(id=2, form="c", head=1)], r"line 3: word id '-3' where 2 was expected"),
    ([LINE.format(id="1-", form="a", head=0)], r"line 2: word id '1-' where 1 was expected"),
])
def test_malformed_files_name_the_line(tmp_path, lines, message):
    path = _write(tmp_path / "bad.conllu", "\n".join(["# c"] + lines + [""]))
    with pytest.raises(ValueError, match=rf"bad.conllu.*line \d+.*{message}|{message}"):
        load_conllu(path)


def _crossing(heads):
    arcs = [(min(h, m), max(h, m)) for m, h in enumerate(heads, start=1)]
    return any(a < c < b < d for a, b in arcs for c, d in arcs)


def _trees(n):
    for heads in itertools.product(range(n + 1), repeat=n):
        try:
            yield check_heads(heads)
        except ValueError:
            continue


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_projectivity_against_crossing_arcs_on_every_tree(n):
    for heads in _trees(n):
        assert is_projective(heads) == (not _crossing(heads))
        lifted = projectivize(heads)
        assert is_projective(lifted)
        if is_projective(heads):
            assert np.array_equal(lifted, heads)


def test_check_heads_errors():
    with pytest.raises(ValueError, match="word 2 has head 2"):
        check_heads([0, 2])
    with pytest.raises(ValueError, match="cycle through word"):
        check_heads([2, 1])
    with pytest.raises(ValueError, match="word 1 has head 5"):
        check_heads([5])


def test_filter_projective_counts():
    X, y, dropped = filter_projective(["a", "b", "c"], [[2, 0, 2], [3, 4, 0, 3], [0]])
    assert X == ["a", "c"] and dropped == 1


def test_attachment_score_conventions():
    y_true = [[2, 0, 2], [0, 1]]
    y_pred = [[2, 0, 1], [0, 0]]
    assert attachment_score(y_true, y_pred) == pytest.approx(3 / 5)
    forms = [["It", "rains", "."], ["Yes", "!?"]]
    assert attachment_score(y_true, y_pred, forms=forms) == pytest.approx(3 / 3)
    with pytest.raises(ValueError, match="sequence 1: y_true has 2 labels but y_pred has 1"):
        attachment_score(y_true, [[2, 0, 2], [0]])
    with pytest.raises(ValueError, match="sentence 1: 1 forms but 2 heads"):
        attachment_score(y_true, y_pred, forms=[forms[0], ["Yes"]])


def test_labelled_attachment_score_hand_counted():
    forms = [["The", "dog", "barks", "."], ["Yes", "!"]]
    heads_true, heads_pred = [[2, 3, 0, 3], [0, 1]], [[2, 3, 0, 2], [0, 1]]
    labels_true = [["det", "nsubj", "root", "punct"], ["root", "punct"]]
    labels_pred = [["det", "obj", "root", "punct"], ["discourse", "punct"]]
    labels = dict(labels_true=labels_true, labels_pred=labels_pred)
    # head and label right: The, barks, "!" of 6 words; without punctuation The, barks of 4
    assert attachment_score(heads_true, heads_pred, **labels) == pytest.approx(3 / 6)
    assert attachment_score(heads_true, heads_pred, forms=forms, **labels) == pytest.approx(2 / 4)
    # unlabelled: only "." has a wrong head
    assert attachment_score(heads_true, heads_pred) == pytest.approx(5 / 6)
    assert attachment_score(heads_true, heads_pred, forms=forms) == pytest.approx(4 / 4)
    with pytest.raises(ValueError, match="labels_true and labels_pred must be given together"):
        attachment_score(heads_true, heads_pred, labels_true=labels_true)
    with pytest.raises(ValueError, match="sentence 1: labels_true has 1 labels but there are 2"):
        attachment_score(heads_true, heads_pred, labels_true=[labels_true[0], ["root"]],
                         labels_pred=labels_pred)
    with pytest.raises(ValueError, match="sentence 1: labels_pred has 1 labels but there are 2"):
        attachment_score(heads_true, heads_pred, labels_true=labels_true,
                         labels_pred=[labels_pred[0], ["root"]])
    with pytest.raises(TypeError, match="labels_pred must be a list of label sequences"):
        attachment_score(heads_true, heads_pred, labels_true=labels_true, labels_pred="root")
    with pytest.raises(ValueError, match="labels_true has 1 sentences but y_true has 2"):
        attachment_score(heads_true, heads_pred, labels_true=labels_true[:1],
                         labels_pred=labels_pred[:1])


SHARED = {
    # file: (sentences, words, projective), from each folder's README
    "ud_en_ewt_r2.16/en_ewt-ud-train.conllu.gz": (12544, 204577, 12256),
    "ud_en_ewt_r2.16/en_ewt-ud-dev.conllu.gz": (2001, 25147, 1970),
    "ud_en_ewt_r2.16/en_ewt-ud-test.conllu.gz": (2077, 25094, 2051),
    "ud_es_ancora_r2.8_devtest/es_ancora-ud-dev.conllu.gz": (1654, 53423, 1534),
    "ud_es_ancora_r2.8_devtest/es_ancora-ud-test.conllu.gz": (1721, 53599, 1625),
    "ud_es_gsd_r2.16_devtest/es_gsd-ud-dev.conllu.gz": (1400, 37154, 1294),
    "ud_es_gsd_r2.16_devtest/es_gsd-ud-test.conllu.gz": (427, 12002, 387),
}


@pytest.mark.parametrize("name", SHARED)
def test_shared_treebanks_match_their_readme(shared_data, name):
    data = load_conllu(shared_data / name)
    n_sentences, n_words, n_projective = SHARED[name]
    assert len(data.head) == n_sentences
    assert sum(len(heads) for heads in data.head) == n_words
    assert sum(is_projective(heads) for heads in data.head) == n_projective
    assert all(len(f) == len(h) for f, h in zip(data.form, data.head))


def test_sentences_are_written_back_as_read(tmp_path):
    text = ("# newdoc id = d1\n\n# sent_id = a\n1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
            + LINE.format(id=1, form="do", head=0) + "\n"
            + LINE.format(id=2, form="n't", head=1) + "\n"
            + "1.1\tgo\t_\t_\t_\t_\t_\t_\t1:dep\tSpaceAfter=No\n\n")
    sentences = read_conllu_sentences(_write(tmp_path / "a.conllu", text))
    # a block of comments without words is kept, to be written back; load_conllu skips it
    assert [len(s.words) for s in sentences] == [0, 2]
    assert "".join(s.text() for s in sentences) == text
    assert sentences[1].comments == {"sent_id": "a"} and sentences[1].column("form") == [
        "do", "n't"]
    replaced = sentences[1].text({"upos": ["AUX", "PART"], "head": [0, 1]}).split("\n")
    assert replaced[1] == "1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_"
    assert replaced[2] == "1\tdo\tdo\tAUX\tXX\t_\t0\tdep\t_\t_"
    assert replaced[4] == "1.1\tgo\t_\t_\t_\t_\t_\t_\t1:dep\tSpaceAfter=No"
    with pytest.raises(ValueError, match="1 values of upos for a sentence of 2 words"):
        sentences[1].text({"upos": ["AUX"]})
    assert len(load_conllu(tmp_path / "a.conllu").form) == 1


def test_a_treebank_is_written_back_byte_for_byte(shared_data):
    path = shared_data / "ud_en_ewt_r2.16" / "en_ewt-ud-dev.conllu.gz"
    sentences = read_conllu_sentences(path)
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        assert "".join(s.text() for s in sentences) == handle.read()
