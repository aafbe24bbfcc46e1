import gzip
import itertools
import string
from collections import Counter

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_struct.datasets import (
    chunk_spans,
    iob1_to_iob2,
    iob2_to_iob1,
    load_cachopo_text,
    load_conll,
    load_conllu,
    load_hansards_alignments,
    load_hansards_sentence_pairs,
    load_mnist_idx,
    load_ocr_default,
    load_ocr_letters,
    load_ptb,
    make_correlated_chains,
    read_idx,
)
from sklearn_struct.datasets._ocr import _DEFAULT_FILE
from sklearn_struct.datasets._synthetic import gibbs_sample_chains


# ----------------------------------------------------------------------------------- OCR
@pytest.fixture(scope="module")
def ocr_shared(shared_data):
    return load_ocr_letters(shared_data / "ocr_letters_taskar" / "letters_flat.npz")


def test_ocr_shared_counts_match_readme(ocr_shared):
    data = ocr_shared
    assert len(data.X) == len(data.y) == len(data.words) == data.folds.shape[0] == 6877
    assert sum(x.shape[0] for x in data.X) == 52152
    assert all(x.shape[1] == 128 and x.dtype == np.float64 for x in data.X)
    assert np.bincount(data.folds).tolist() == [626, 704, 684, 698, 693, 651, 739, 717, 690, 675]
    letters_per_fold = np.bincount(data.folds, weights=[len(y) for y in data.y])
    assert letters_per_fold.tolist() == [4617, 5375, 5110, 5353, 5270, 5001, 5583, 5370, 5331, 5142]
    pixels = np.concatenate(data.X)
    assert set(np.unique(pixels)) == {0.0, 1.0}
    assert pixels.mean() == pytest.approx(0.2197, abs=5e-5)
    lengths = [len(y) for y in data.y]
    assert (min(lengths), max(lengths)) == (3, 14)
    assert len(set(data.words)) == 55 and data.words[0] == "ommanding"
    assert all(w == "".join(data.target_names[y]) for w, y in zip(data.words, data.y))


def test_ocr_default_is_folds_0_and_1_of_the_shared_file(ocr_shared):
    default = load_ocr_default()
    keep = np.flatnonzero(np.isin(ocr_shared.folds, [0, 1]))
    assert len(default.X) == keep.shape[0] == 1330
    assert sum(len(y) for y in default.y) == 9992
    np.testing.assert_array_equal(default.folds, ocr_shared.folds[keep])
    for i, j in zip(range(len(default.X)), keep):
        np.testing.assert_array_equal(default.X[i], ocr_shared.X[j])
        np.testing.assert_array_equal(default.y[i], ocr_shared.y[j])


def test_ocr_default_is_small_and_documented():
    assert _DEFAULT_FILE.stat().st_size < 150_000
    data = load_ocr_default()
    assert "letters_flat.npz" in data.DESCR and "folds 0 and 1" in data.DESCR
    assert np.bincount(data.folds).tolist() == [626, 704]


def _letter_data_lines(words, folds, first_id=1):
    """Taskar's letter.data layout for the given (labels, pixels) words."""
    lines, letter_id = [], first_id
    for word_index, ((labels, pixels), fold) in enumerate(zip(words, folds)):
        for position, (label, row) in enumerate(zip(labels, pixels)):
            next_id = -1 if position == len(labels) - 1 else letter_id + 1
            fields = [letter_id, string.ascii_lowercase[label], next_id, word_index, position + 1]
            fields += [fold] + [int(p) for p in row]
            lines.append("\t".join(map(str, fields)))
            letter_id += 1
    return lines


@pytest.mark.parametrize("compress", [False, True])
def test_ocr_letter_data_layout_round_trip(tmp_path, compress):
    source = load_ocr_default()
    words = [(source.y[i], source.X[i]) for i in range(5)]
    folds = [3, 3, 7, 0, 9]
    text = "\n".join(_letter_data_lines(words, folds)) + "\n"
    path = tmp_path / ("letter.data.gz" if compress else "letter.data")
    path.write_bytes(gzip.compress(text.encode()) if compress else text.encode())
    data = load_ocr_letters(path)
    assert data.folds.tolist() == folds
    assert data.words == source.words[:5]
    for i in range(5):
        np.testing.assert_array_equal(data.X[i], source.X[i])
        np.testing.assert_array_equal(data.y[i], source.y[i])


def test_ocr_letter_data_malformed_lines_name_file_and_line(tmp_path):
    source = load_ocr_default()
    lines = _letter_data_lines([(source.y[0], source.X[0]), (source.y[1], source.X[1])], [0, 0])
    path = tmp_path / "letter.data"

    def load_with(line_index, new_line):
        broken = list(lines)
        broken[line_index] = new_line
        path.write_text("\n".join(broken) + "\n")
        return load_ocr_letters(path)

    fields = lines[1].split("\t")
    with pytest.raises(ValueError, match=r"letter\.data, line 2: expected 6 fields"):
        load_with(1, "\t".join(fields[:-1]))
    with pytest.raises(ValueError, match=r"letter\.data, line 3: expected 6 fields"):
        load_with(2, "\t".join(lines[2].split("\t")[:-1] + ["2"]))
    with pytest.raises(ValueError, match=r"line 2: letter must be one of a-z"):
        load_with(1, "\t".join(fields[:1] + ["A"] + fields[2:]))
    with pytest.raises(ValueError, match=r"line 2: id, next_id and fold must be integers"):
        load_with(1, "\t".join(fields[:2] + ["x"] + fields[3:]))
    with pytest.raises(ValueError, match=r"line 2: the previous letter continues with id 2"):
        load_with(1, "\t".join(["99"] + fields[1:]))
    path.write_text("\n".join(lines[:3]) + "\n")  # the first word is longer than 3 letters
    with pytest.raises(ValueError, match=r"letter\.data, line 3: file ends inside a word"):
        load_ocr_letters(path)


def test_ocr_npz_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no-such-file.npz"):
        load_ocr_letters(tmp_path / "no-such-file.npz")
    missing_key = tmp_path / "missing.npz"
    np.savez(missing_key, X=np.zeros((2, 128), np.uint8), y=np.zeros(2, np.int8))
    with pytest.raises(ValueError, match=r"missing\.npz: expected arrays 'y', 'word_offsets'"):
        load_ocr_letters(missing_key)
    bad_offsets = tmp_path / "offsets.npz"
    np.savez(
        bad_offsets,
        X=np.zeros((3, 128), np.uint8),
        y=np.zeros(3, np.int8),
        word_offsets=np.array([0, 2]),
        word_fold=np.zeros(1, np.int8),
    )
    with pytest.raises(ValueError, match=r"offsets\.npz: 'word_offsets' must increase"):
        load_ocr_letters(bad_offsets)
    bad_codes = tmp_path / "codes.npz"
    np.savez(
        bad_codes,
        X=np.zeros((2, 128), np.uint8),
        y=np.array([0, 26]),
        word_offsets=np.array([0, 2]),
        word_fold=np.zeros(1, np.int8),
    )
    with pytest.raises(ValueError, match=r"codes\.npz: 'y' must be a 1-D array of letter codes"):
        load_ocr_letters(bad_codes)


def test_ocr_npz_with_pickled_objects_is_refused(tmp_path):
    path = tmp_path / "objects.npz"
    np.savez(
        path,
        X=np.array([object()], dtype=object),
        y=np.zeros(1, np.int8),
        word_offsets=np.array([0, 1]),
        word_fold=np.zeros(1, np.int8),
    )
    with pytest.raises(ValueError, match=r"objects\.npz: .*pickle"):
        load_ocr_letters(path)


# ---------------------------------------------------------------------------------- CoNLL
CONLL_FILES = {
    # file: (sentences, tokens) from the READMEs
    "conll2000_chunking/train.txt.gz": (8936, 211727),
    "conll2000_chunking/test.txt.gz": (2012, 47377),
    "conll2003_ner_en/eng.train.gz": (14041, 203621),
    "conll2003_ner_en/eng.testa.gz": (3250, 51362),
    "conll2003_ner_en/eng.testb.gz": (3453, 46435),
}
NER_ENTITIES = {
    "eng.train.gz": {"LOC": 7140, "PER": 6600, "ORG": 6321, "MISC": 3438},
    "eng.testa.gz": {"LOC": 1837, "PER": 1842, "ORG": 1341, "MISC": 922},
    "eng.testb.gz": {"LOC": 1668, "PER": 1617, "ORG": 1661, "MISC": 702},
}


@pytest.fixture(scope="module")
def conll_shared(shared_data):
    return {name: load_conll(shared_data / name) for name in CONLL_FILES}


def test_conll_shared_counts_match_readme(conll_shared):
    for name, (n_sentences, n_tokens) in CONLL_FILES.items():
        data = conll_shared[name]
        assert len(data.tags) == n_sentences, name
        assert sum(map(len, data.tags)) == n_tokens, name
        assert all(len(w) == len(t) for w, t in zip(data.word, data.tags))
        assert not any("-DOCSTART-" in sentence for sentence in data.word)
    chunking = conll_shared["conll2000_chunking/train.txt.gz"]
    assert chunking.column_names == ("word", "pos", "chunk") and chunking.target_name == "chunk"
    assert list(zip(chunking.word[0], chunking.pos[0], chunking.tags[0]))[:3] == [
        ("Confidence", "NN", "B-NP"),
        ("in", "IN", "B-PP"),
        ("the", "DT", "B-NP"),
    ]
    tag_counts = Counter(tag for sentence in chunking.tags for tag in sentence)
    assert len(tag_counts) == 22 and tag_counts["I-NP"] == 63307 and tag_counts["B-UCP"] == 2
    assert len({tag for sentence in chunking.pos for tag in sentence}) == 44
    ner = conll_shared["conll2003_ner_en/eng.train.gz"]
    # the published document counts (Tjong Kim Sang and De Meulder 2003, table 1)
    assert [conll_shared[f"conll2003_ner_en/eng.{part}.gz"].document.max() + 1
            for part in ("train", "testa", "testb")] == [946, 216, 231]
    assert np.all(np.diff(ner.document) >= 0)
    assert ner.column_names == ("word", "pos", "chunk", "ne") and ner.tags is ner.ne
    assert (ner.word[0][0], ner.pos[0][0], ner.chunk[0][0], ner.ne[0][0]) == (
        "EU",
        "NNP",
        "I-NP",
        "I-ORG",
    )


def test_conll_shared_entity_counts_match_readme(conll_shared):
    for short, expected in NER_ENTITIES.items():
        data = conll_shared[f"conll2003_ner_en/{short}"]
        counts = Counter(t for tags in data.tags for t, _, _ in chunk_spans(tags))
        assert counts == expected, short


def test_conll_shared_scheme_conversion(shared_data, conll_shared):
    iob1 = _lists(conll_shared["conll2003_ner_en/eng.testa.gz"].tags)
    iob2 = _lists(load_conll(shared_data / "conll2003_ner_en/eng.testa.gz",
                             tag_scheme="iob2").tags)
    pairs = [(prev, tag) for s in iob2 for prev, tag in zip(["O"] + s, s)]
    assert all(tag[0] != "I" or prev[2:] == tag[2:] for prev, tag in pairs)
    assert [chunk_spans(s) for s in iob2] == [chunk_spans(s) for s in iob1]
    assert [iob2_to_iob1(s) for s in iob2] == iob1  # the file is canonical IOB1
    chunking = _lists(conll_shared["conll2000_chunking/test.txt.gz"].tags)
    assert [iob1_to_iob2(s) for s in chunking] == chunking  # the file is IOB2


def _lists(label_arrays):
    """The loaders' per-sentence label arrays as lists of str, for comparisons."""
    return [labels.tolist() for labels in label_arrays]


def test_conll_small_file(tmp_path):
    text = (
        "-DOCSTART- -X- -X- O\n"
        "\n"
        "EU NNP I-NP I-ORG\n"
        "rejects VBZ I-VP O\n"
        "German JJ I-NP I-MISC\n"
        "\n"
        "\n"
        "Peter NNP I-NP I-PER\n"
        "Blackburn NNP I-NP I-PER\n"
        "-DOCSTART- -X- O O\n"
        "Bonn NNP I-NP I-LOC\n"
        "Paris NNP I-NP B-LOC"  # no trailing newline
    )
    contents = [("plain.txt", text.encode()), ("packed.gz", gzip.compress(text.encode()))]
    for name, content in contents:
        path = tmp_path / name
        path.write_bytes(content)
        data = load_conll(path)
        assert data.word == [["EU", "rejects", "German"], ["Peter", "Blackburn"], ["Bonn", "Paris"]]
        assert data.pos[1] == ["NNP", "NNP"]
        # the leading -DOCSTART- opens document 0; the one after "Blackburn" starts 1
        assert data.document.tolist() == [0, 0, 1]
        assert _lists(data.tags) == [
            ["I-ORG", "O", "I-MISC"], ["I-PER", "I-PER"], ["I-LOC", "B-LOC"]]
    iob2 = load_conll(tmp_path / "plain.txt", tag_scheme="iob2")
    assert _lists(iob2.tags) == [["B-ORG", "O", "B-MISC"], ["B-PER", "I-PER"], ["B-LOC", "B-LOC"]]
    assert iob2.chunk == [["I-NP", "I-VP", "I-NP"], ["I-NP", "I-NP"], ["I-NP", "I-NP"]]
    chunks = load_conll(tmp_path / "plain.txt", target="chunk", tag_scheme="iob2")
    assert _lists(chunks.tags) == [["B-NP", "B-VP", "B-NP"], ["B-NP", "I-NP"], ["B-NP", "I-NP"]]
    named = load_conll(tmp_path / "plain.txt", columns=["w", "p", "c", "n"], target="p")
    assert named.tags == named.p and named.w[2] == ["Bonn", "Paris"]


def test_conll_errors_name_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    with pytest.raises(FileNotFoundError, match="bad.txt"):
        load_conll(path)
    path.write_text("a DT B-NP\nb NN I-NP\n\nc VB\n")
    with pytest.raises(ValueError, match=r"bad\.txt, line 4: expected 3 columns, got 2"):
        load_conll(path)
    path.write_text("a DT B-NP x y\n")
    with pytest.raises(ValueError, match=r"bad\.txt, line 1: 5 columns; pass `columns`"):
        load_conll(path)
    with pytest.raises(ValueError, match=r"line 1: 5 columns but `columns` names 3"):
        load_conll(path, columns=["a", "b", "c"])
    path.write_text("a DT B-NP\n\nb NN X-NP\n")
    assert load_conll(path).tags == [["B-NP"], ["X-NP"]]
    with pytest.raises(ValueError, match=r"bad\.txt, line 3: column 'chunk' holds 'X-NP'"):
        load_conll(path, tag_scheme="iob2")
    with pytest.raises(ValueError, match="tag_scheme"):
        load_conll(path, tag_scheme="bio")
    with pytest.raises(ValueError, match="target 'ne' is not one of the columns"):
        load_conll(path, target="ne")
    path.write_bytes(b"a DT B-NP\n\n\xff NN B-NP\n")
    with pytest.raises(ValueError, match=r"bad\.txt, line 3: not valid utf-8"):
        load_conll(path)


# ------------------------------------------------------------------------------ IOB tags
def test_iob_conversions_hand_made():
    iob1 = ["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG", "B-ORG", "I-ORG"]
    iob2 = ["B-PER", "I-PER", "B-PER", "O", "B-LOC", "B-ORG", "B-ORG", "I-ORG"]
    assert iob1_to_iob2(iob1) == iob2
    assert iob2_to_iob1(iob2) == iob1
    assert chunk_spans(iob1) == [
        ("PER", 0, 2), ("PER", 2, 3), ("LOC", 4, 5), ("ORG", 5, 6), ("ORG", 6, 8)
    ]
    assert iob1_to_iob2([]) == [] and chunk_spans([]) == []
    # a B- inside an IOB1 chunk starts a new chunk; types may contain hyphens
    assert chunk_spans(["B-X-Y", "I-X-Y", "I-X"]) == [("X-Y", 0, 2), ("X", 2, 3)]
    with pytest.raises(ValueError, match="tag 1 is 'E-PER'"):
        iob1_to_iob2(["B-PER", "E-PER"])
    with pytest.raises(TypeError, match="tag 0 must be a str"):
        iob2_to_iob1([3])


def test_iob_conversions_round_trip_all_short_sequences():
    alphabet = ["O", "B-X", "I-X", "B-Y", "I-Y"]
    for length in range(5):
        for tags in itertools.product(alphabet, repeat=length):
            iob2 = iob1_to_iob2(tags)
            iob1 = iob2_to_iob1(tags)
            assert chunk_spans(iob2) == chunk_spans(tags) == chunk_spans(iob1)
            assert iob2_to_iob1(iob2) == iob1 and iob1_to_iob2(iob1) == iob2
            # IOB2: every chunk begins with B-; IOB1: B- only right after a same-type chunk
            for chunk_type, start, _ in chunk_spans(tags):
                assert iob2[start] == f"B-{chunk_type}"
                previous = iob1[start - 1] if start > 0 else "O"
                follows_same = previous != "O" and previous[2:] == chunk_type
                assert iob1[start] == f"{'B' if follows_same else 'I'}-{chunk_type}"


# ------------------------------------------------------------------------------ Hansards
HANSARDS = "wpt03_hansards_en_fr_alignment"


def test_hansards_shared_counts_and_copies_agree(shared_data):
    root = shared_data / HANSARDS
    for split, n_sentences, n_en, n_fr, n_sure, n_links in [
        ("test", 447, 7020, 7761, 4038, 17438),
        ("trial", 37, 661, 721, 338, 1784),
    ]:
        naacl = load_hansards_alignments(root / "uva-slpl_embedalign" / f"{split}.en-fr.naacl")
        berkeley = load_hansards_alignments(root / "berkeleyaligner" / split / f"{split}.align")
        for data in (naacl, berkeley):
            assert len(data.english) == len(data.french) == len(data.sure) == n_sentences
            assert sum(map(len, data.english)) == n_en and sum(map(len, data.french)) == n_fr
            assert sum(map(len, data.sure)) == n_sure
            # sure and possible labels are disjoint in the files; possible includes sure
            assert sum(map(len, data.possible)) == n_links
        assert naacl.french == berkeley.french
        assert [len(s) for s in naacl.english] == [len(s) for s in berkeley.english]
        for a, b in zip(naacl.sure + naacl.possible, berkeley.sure + berkeley.possible):
            np.testing.assert_array_equal(a, b)
    assert naacl.sentence_ids.tolist() == list(range(1, 38))
    assert berkeley.sentence_ids.tolist() == [i for i in range(1001, 1040) if i not in (1009, 1010)]
    test = load_hansards_alignments(root / "uva-slpl_embedalign" / "test.en-fr.naacl")
    # sentence 6: "let us remember ..." / "souvenons - nous ..."; link "6 2 3 S" = us-nous
    assert test.english[5][1] == "us" and test.french[5][2] == "nous"
    assert [1, 2] in test.sure[5].tolist()


def test_hansards_shared_sentence_pairs(shared_data):
    sample = shared_data / HANSARDS / "berkeleyaligner" / "train_sample"
    pairs = load_hansards_sentence_pairs(sample)
    assert len(pairs.english) == len(pairs.french) == 2383
    assert [p[0].name for p in pairs.files] == [
        f"hansard.36.1.house.debates.00{i}.e" for i in (1, 2, 3)
    ]
    one = load_hansards_sentence_pairs(sample / "hansard.36.1.house.debates.001.e")
    assert len(one.english) == 176 and one.french[2][0] == "PREMIÈRE"


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_hansards_naacl_small(tmp_path):
    _write(tmp_path / "toy.en-fr.en", "the house\nhear hear !\n")
    _write(tmp_path / "toy.en-fr.fr", "la chambre\nbravo !\n")
    links = _write(
        tmp_path / "toy.en-fr.naacl",
        "1 1 1 S\n1 2 2\n1 1 2 P\n1 0 1 S\n2 1 1 P\n2 2 1 P 0.5\n2 3 2 S\n2 1 1 S\n",
    )
    data = load_hansards_alignments(links)
    assert data.english == [["the", "house"], ["hear", "hear", "!"]]
    assert data.french[1] == ["bravo", "!"]
    # 1-based -> 0-based; a missing label is S; the NULL link (position 0) is dropped
    assert data.sure[0].tolist() == [[0, 0], [1, 1]]
    assert data.possible[0].tolist() == [[0, 0], [0, 1], [1, 1]]
    # (1, 1) is listed as P and as S: it is sure (and possible)
    assert data.sure[1].tolist() == [[0, 0], [2, 1]]
    assert data.possible[1].tolist() == [[0, 0], [1, 0], [2, 1]]
    assert data.sure[0].dtype == np.int64 and data.sentence_ids.tolist() == [1, 2]


def test_hansards_berkeley_small_is_french_first_and_snum_markup(tmp_path):
    _write(tmp_path / "toy.e", "<s snum=0007> the house </s>\n<s snum=0009> hear hear ! </s>\n")
    _write(tmp_path / "toy.f", "<s snum=0007> la chambre </s>\n<s snum=0009> bravo ! </s>\n")
    _write(tmp_path / "toy.align", "0-0 1-1 0-1-P\n0-0 0-1-P 1-2\n")
    data = load_hansards_alignments(tmp_path / "toy.align")
    assert data.english[0] == ["the", "house"] and data.french[1] == ["bravo", "!"]
    assert data.sentence_ids.tolist() == [7, 9]
    # "f-e": French position first; returned as (english, french)
    assert data.sure[0].tolist() == [[0, 0], [1, 1]]
    assert data.possible[0].tolist() == [[0, 0], [1, 0], [1, 1]]
    assert data.sure[1].tolist() == [[0, 0], [2, 1]]
    assert data.possible[1].tolist() == [[0, 0], [1, 0], [2, 1]]


def test_hansards_errors_name_file_and_line(tmp_path):
    _write(tmp_path / "toy.en", "the house\n")
    _write(tmp_path / "toy.fr", "la chambre\n")
    links = tmp_path / "toy.naacl"
    for text, message in [
        ("1 1 1 S\n1 3 1 S\n", r"toy\.naacl, line 2: link \(english 2, french 0\)"),
        ("1 1 1 S\n2 1 1 S\n", r"toy\.naacl, line 2: sentence 2 is not in the texts"),
        ("1 1 1 X\n", r"toy\.naacl, line 1: expected 'sentence english_position"),
        ("1 a 1 S\n", r"toy\.naacl, line 1: positions must be integers"),
    ]:
        _write(links, text)
        with pytest.raises(ValueError, match=message):
            load_hansards_alignments(links)
    _write(tmp_path / "toy.align", "0-0\n1-1\n")
    with pytest.raises(ValueError, match=r"toy\.align, line 2: more lines than the 1 sentences"):
        load_hansards_alignments(tmp_path / "toy.align")
    _write(tmp_path / "toy.align", "0:0\n")
    with pytest.raises(ValueError, match=r"toy\.align, line 1: expected links 'f-e'"):
        load_hansards_alignments(tmp_path / "toy.align", tmp_path / "toy.en", tmp_path / "toy.fr")
    _write(tmp_path / "lonely.naacl", "1 1 1 S\n")
    with pytest.raises(FileNotFoundError, match="no sentence files next to"):
        load_hansards_alignments(tmp_path / "lonely.naacl")
    with pytest.raises(FileNotFoundError, match="absent.naacl"):
        load_hansards_alignments(tmp_path / "absent.naacl")
    with pytest.raises(ValueError, match="unknown alignment format '.txt'"):
        load_hansards_alignments(_write(tmp_path / "links.txt", ""))
    _write(tmp_path / "pair.e", "a\nb\n")
    _write(tmp_path / "pair.f", "a\n")
    with pytest.raises(ValueError, match=r"pair\.e has 2 lines but .*pair\.f has 1"):
        load_hansards_sentence_pairs(tmp_path / "pair.e")


# --------------------------------------------------------------------------------- MNIST
def test_mnist_shared_counts_match_readme(shared_data):
    root = shared_data / "mnist_partial"
    mnist = load_mnist_idx(root / "t10k-images-idx3-ubyte.gz", root / "t10k-labels-idx1-ubyte.gz")
    assert mnist.data.shape == (10000, 784) and mnist.images.shape == (10000, 28, 28)
    assert mnist.data.dtype == np.uint8 and mnist.data.mean() == pytest.approx(33.791, abs=5e-4)
    per_class = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    assert np.bincount(mnist.target).tolist() == per_class
    train_labels = read_idx(root / "train-labels-idx1-ubyte.gz")
    per_class = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    assert np.bincount(train_labels).tolist() == per_class


def _idx_bytes(array, type_code):
    header = bytes([0, 0, type_code, array.ndim]) + np.array(array.shape, ">u4").tobytes()
    return header + array.tobytes()


def test_mnist_small_files_and_header_errors(tmp_path):
    images = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    labels = np.array([7, 1], dtype=np.uint8)
    (tmp_path / "images.idx").write_bytes(_idx_bytes(images, 0x08))
    (tmp_path / "labels.idx.gz").write_bytes(gzip.compress(_idx_bytes(labels, 0x08)))
    data = load_mnist_idx(tmp_path / "images.idx", tmp_path / "labels.idx.gz")
    np.testing.assert_array_equal(data.images, images)
    np.testing.assert_array_equal(data.data, images.reshape(2, 12))
    assert data.target.tolist() == [7, 1]
    # other IDX types, big-endian on disk
    values = np.array([[1.5, -2.0], [3.25, 0.0]], dtype=">f8")
    (tmp_path / "doubles.idx").write_bytes(_idx_bytes(values, 0x0E))
    np.testing.assert_array_equal(read_idx(tmp_path / "doubles.idx"), values.astype(np.float64))
    ints = np.array([-5, 70000], dtype=">i4")
    (tmp_path / "ints.idx").write_bytes(_idx_bytes(ints, 0x0C))
    assert read_idx(tmp_path / "ints.idx").tolist() == [-5, 70000]

    bad = tmp_path / "bad.idx"
    bad.write_bytes(b"\x00\x01\x08\x01" + bytes(8))
    with pytest.raises(ValueError, match=r"bad\.idx: not an IDX file \(magic number 00010801"):
        read_idx(bad)
    bad.write_bytes(_idx_bytes(labels, 0x08)[:-1])
    with pytest.raises(ValueError, match=r"announces shape \(2,\) .* file has 9 bytes"):
        read_idx(bad)
    bad.write_bytes(b"\x00\x00\x08\x03\x00\x00")
    with pytest.raises(ValueError, match="announces 3 dimensions but the file ends"):
        read_idx(bad)
    with pytest.raises(ValueError, match=r"images\.idx: expected unsigned-byte labels"):
        load_mnist_idx(tmp_path / "images.idx", tmp_path / "images.idx")
    with pytest.raises(ValueError, match=r"labels\.idx\.gz: expected unsigned-byte images"):
        load_mnist_idx(tmp_path / "labels.idx.gz", tmp_path / "labels.idx.gz")
    (tmp_path / "three.idx").write_bytes(_idx_bytes(np.zeros(3, np.uint8), 0x08))
    with pytest.raises(ValueError, match="holds 2 images but .*three.idx holds 3 labels"):
        load_mnist_idx(tmp_path / "images.idx", tmp_path / "three.idx")
    with pytest.raises(FileNotFoundError, match="nothing.idx"):
        read_idx(tmp_path / "nothing.idx")
    bad.write_bytes(b"\x1f\x8b" + b"garbage")
    with pytest.raises(ValueError, match="cannot decompress"):
        read_idx(bad)


# ----------------------------------------------------------------------------- synthetic
def test_correlated_chains_shapes_and_reproducibility():
    X, y, model = make_correlated_chains(n_samples=50, random_state=0, return_model=True)
    assert len(X) == len(y) == 50
    assert all(x.shape == (8, 100) and x.dtype == np.float64 for x in X)
    assert all(labels.shape == (8,) and labels.dtype == np.int64 for labels in y)
    assert set(np.concatenate(y)) == {0, 1}
    X2, y2 = make_correlated_chains(n_samples=50, random_state=0)
    X3, y3 = make_correlated_chains(n_samples=50, random_state=1)
    assert all(np.array_equal(a, b) for a, b in zip(X, X2))
    assert all(np.array_equal(a, b) for a, b in zip(y, y2))
    assert not np.array_equal(X[0], X3[0])
    assert model.coef.shape == (2, 100) and model.transition.shape == (2, 2)


def test_correlated_chains_relevant_structure():
    X, y, model = make_correlated_chains(n_samples=400, random_state=3, return_model=True)
    tokens = np.concatenate(X)  # (3200, 100)
    # 30 relevant features in 10 consecutive groups of 3; the others have no weight
    assert model.relevant.tolist() == [True] * 30 + [False] * 70
    assert model.groups.tolist() == [g for g in range(10) for _ in range(3)] + [-1] * 70
    assert np.all(model.coef[:, 30:] == 0) and np.all(model.coef[:, :30] > 0)
    assert model.coef.max() <= 1 and 0 <= model.transition.min() <= model.transition.max() <= 1
    corr = np.corrcoef(tokens, rowvar=False)
    same_group = model.groups[:, None] == model.groups[None, :]
    off_diagonal = ~np.eye(100, dtype=bool)
    # within a group: z + N(0, 0.05^2) noise -> correlation 1 / (1 + 0.05^2) ~ 0.9975
    assert corr[same_group & off_diagonal & model.relevant[:, None]].min() > 0.99
    assert np.abs(corr[~same_group]).max() < 0.1
    assert tokens.std(axis=0) == pytest.approx(np.ones(100), abs=0.06)
    # labels follow the relevant features: the node score margin predicts the label
    margin = tokens @ (model.coef[1] - model.coef[0])
    assert np.corrcoef(margin, np.concatenate(y))[0, 1] > 0.4
    # n_groups = n_relevant: the i.i.d. variant
    X_iid, _, iid = make_correlated_chains(
        n_samples=200, n_groups=30, random_state=0, return_model=True
    )
    corr_iid = np.corrcoef(np.concatenate(X_iid)[:, :30], rowvar=False)
    assert np.abs(corr_iid[~np.eye(30, dtype=bool)]).max() < 0.15
    assert iid.groups[:30].tolist() == list(range(30))


def _exact_chain_distribution(node_scores, transition):
    """p(y | x) of one chain by enumerating all label sequences."""
    length, n_states = node_scores.shape
    sequences = list(itertools.product(range(n_states), repeat=length))
    scores = np.array(
        [
            node_scores[np.arange(length), list(seq)].sum()
            + sum(transition[a, b] for a, b in zip(seq[:-1], seq[1:]))
            for seq in sequences
        ]
    )
    probabilities = np.exp(scores - scores.max())
    return sequences, probabilities / probabilities.sum()


def test_gibbs_sampler_matches_enumeration():
    rng = np.random.RandomState(0)
    length, n_states, n_draws = 4, 3, 40000
    node_scores = rng.normal(scale=1.5, size=(length, n_states))
    transition = rng.normal(scale=1.5, size=(n_states, n_states))
    sequences, exact = _exact_chain_distribution(node_scores, transition)
    index = {seq: i for i, seq in enumerate(sequences)}

    def total_variation(n_sweeps):
        draws = gibbs_sample_chains(
            np.broadcast_to(node_scores, (n_draws, length, n_states)), transition, n_sweeps, rng
        )
        counts = np.bincount([index[tuple(row)] for row in draws.tolist()], minlength=len(exact))
        return 0.5 * np.abs(counts / n_draws - exact).sum()

    # sampling noise alone gives about 0.5 * sum sqrt(2 p / (pi n)) ~ 0.015 here
    assert total_variation(n_sweeps=30) < 0.03
    assert total_variation(n_sweeps=0) > 0.3  # uniform initial labels: far from p(y | x)


def test_correlated_chains_parameter_errors():
    with pytest.raises(ValueError, match="n_relevant=30 exceeds n_features=20"):
        make_correlated_chains(n_features=20)
    with pytest.raises(ValueError, match="n_groups=10 exceeds n_relevant=5"):
        make_correlated_chains(n_relevant=5)
    with pytest.raises(InvalidParameterError):
        make_correlated_chains(n_samples=0)
    X, y, model = make_correlated_chains(n_samples=3, n_relevant=0, length=1, return_model=True)
    assert not model.relevant.any() and X[0].shape == (1, 100) and y[0].shape == (1,)


def test_correlated_chains_model_uses_the_chain_structure_layout():
    from sklearn_struct.structures import ChainStructure

    X, _, model = make_correlated_chains(
        n_samples=1, length=6, n_relevant=6, n_groups=2, random_state=0, return_model=True
    )
    structure = ChainStructure(start_end=False)
    batch = structure.make_batch(X, n_states=2)
    w = np.concatenate([model.coef.ravel(), model.transition.ravel()])
    mu, _ = structure.marginals(batch, structure.part_scores(batch, w))
    # Gibbs samples of p(y | x) under (coef, transition) reproduce the structure's node
    # marginals and expected transition counts (row = previous label) for that w
    n_draws = 20000
    node_scores = np.broadcast_to(X[0] @ model.coef.T, (n_draws, 6, 2))
    draws = gibbs_sample_chains(node_scores, model.transition, 30, np.random.RandomState(1))
    node_frequencies = np.stack([(draws == k).mean(axis=0) for k in (0, 1)], axis=1)
    np.testing.assert_allclose(node_frequencies.ravel(), mu[:12], atol=0.02)
    transitions = np.zeros((2, 2))
    np.add.at(transitions, (draws[:, :-1], draws[:, 1:]), 1.0)
    np.testing.assert_allclose(transitions.ravel() / n_draws, mu[12:16], atol=0.05)
    assert not np.allclose(model.transition, model.transition.T, atol=0.05)


# ----------------------------------------------------------------- byte-order marks
BOM = "\ufeff"
CONLLU_TEXT = ("# sent_id = 1\n1\tHe\the\tPRON\tPRP\t_\t2\tnsubj\t_\t_\n"
               "2\truns\trun\tVERB\tVBZ\t_\t0\troot\t_\t_\n\n")


def _letter_data_text():
    source = load_ocr_default()
    return "\n".join(_letter_data_lines([(source.y[0], source.X[0])], [0])) + "\n"


def _read_naacl(root):
    _write(root / "toy.en-fr.fr", "la chambre\n")
    return load_hansards_alignments(root / "toy.en-fr.naacl")


#: loader: (file name, text, how to read it, what to compare)
BOM_LOADERS = {
    "load_conll": ("a.txt", "-DOCSTART- -X- O\n\nEU NNP B-ORG\nrejects VBZ O\n", load_conll,
                   lambda data: (data.word, data.pos, _lists(data.tags))),
    "load_conllu": ("a.conllu", CONLLU_TEXT, load_conllu,
                    lambda data: (data.form, [h.tolist() for h in data.head], data.sent_id)),
    "load_ptb": ("a.mrg", "( (S (NP (DT The) (NN dog)) (VP (VBZ barks))) )\n", load_ptb,
                 lambda data: ([str(t) for t in data.trees], data.lines)),
    "load_cachopo_text": ("a.txt", "course\tlectur homework\nfaculty\tprofessor\n",
                          load_cachopo_text, lambda data: (data.data, list(data.target))),
    "load_hansards_alignments": ("toy.en-fr.en", "the house\n",
                                 lambda path: _read_naacl(path.parent),
                                 lambda data: (data.english, data.french,
                                               data.sure[0].tolist())),
    "load_ocr_letters": ("letter.data", None, load_ocr_letters,
                         lambda data: (data.words, data.X[0].tolist())),
}


@pytest.mark.parametrize("loader", sorted(BOM_LOADERS))
@pytest.mark.parametrize("compress", [False, True])
def test_a_byte_order_mark_at_the_start_of_a_file_is_dropped(tmp_path, loader, compress):
    name, text, read, content = BOM_LOADERS[loader]
    text = _letter_data_text() if text is None else text
    (tmp_path / "toy.en-fr.naacl").write_text("1 1 1 S\n1 2 2 S\n")
    path = tmp_path / name
    path.write_bytes(text.encode())
    expected = content(read(path))
    encoded = (BOM + text).encode("utf-8")
    path.write_bytes(gzip.compress(encoded) if compress else encoded)
    assert content(read(path)) == expected


def test_a_byte_order_mark_inside_a_file_is_data(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text(f"EU NNP B-ORG\n\n{BOM}Peter NNP B-PER\n", encoding="utf-8")
    assert load_conll(path).word == [["EU"], [f"{BOM}Peter"]]
    path.write_text(f"{BOM}{BOM}EU NNP B-ORG\n", encoding="utf-8")  # only the first is a mark
    assert load_conll(path).word == [[f"{BOM}EU"]]
    # in a latin-1 file these three bytes are three characters
    path.write_bytes(BOM.encode("utf-8") + b"EU NNP B-ORG\n")
    assert load_conll(path, encoding="latin-1").word == [["\xef\xbb\xbfEU"]]
