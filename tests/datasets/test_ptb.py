"""Penn Treebank trees: reading (split by bracket balance), cleaning, binarising and back."""

import gzip

import pytest

from sklearn_struct.datasets import Tree, binarize, clean_tree, load_ptb, unbinarize

SMALL = """
( (S (NP-SBJ-1 (DT The) (NN dog) )
     (VP (VBZ barks) (NP (-NONE- *-1) ))
     (. .) ))
( (FRAG (NP (NNP Nov.) (CD 29)) (. .) ))"""


@pytest.mark.parametrize("compress", [False, True])
def test_small_file(tmp_path, compress):
    path = tmp_path / ("small.mrg.gz" if compress else "small.mrg")
    with (gzip.open(path, "wt") if compress else open(path, "w")) as fh:
        fh.write(SMALL)
    data = load_ptb(path)
    assert [str(t) for t in data.trees] == [
        "(TOP (S (NP (DT The) (NN dog)) (VP (VBZ barks)) (. .)))",
        "(TOP (FRAG (NP (NNP Nov.) (CD 29)) (. .)))"]
    assert data.words == [["The", "dog", "barks", "."], ["Nov.", "29", "."]]
    assert data.tags[1] == ["NNP", "CD", "."]
    assert data.lines == [2, 5]
    raw = load_ptb(path, clean=False)
    assert raw.words[0] == ["The", "dog", "barks", "*-1", "."]
    assert raw.trees[0].children[0].children[0].label == "NP-SBJ-1"


@pytest.mark.parametrize("text, message", [
    ("(S (NP (DT a)))\n(VP (VB b)))", r"line 2: '\)' without a matching '\('"),
    ("(S (NN a))\n(S (NP (DT a))\n\n(VP (VB b)", "line 2: unbalanced brackets"),
    ("(S (NP))", "line 1.*the constituent 'NP' is empty"),
    ("(S (NP a (DT b)))", "line 1.*'NP' mixes words and constituents"),
    ("no trees here", "no tree found"),
])
def test_malformed_files_name_file_and_line(tmp_path, text, message):
    path = tmp_path / "bad.mrg"
    path.write_text(text)
    with pytest.raises(ValueError, match=f"bad.mrg.*{message}"):
        load_ptb(path)


def test_labels_and_brackets():
    tree = Tree.fromstring("(S (NP-SBJ=2 (PRP It)) (ADVP|PRT (RB up)) (VP (VBD rose)))")
    assert str(clean_tree(tree)) == "(S (NP (PRP It)) (ADVP (RB up)) (VP (VBD rose)))"
    assert sorted(clean_tree(tree).brackets()) == [("ADVP", 1, 2), ("NP", 0, 1), ("S", 0, 3),
                                                   ("VP", 2, 3)]
    with pytest.raises(ValueError, match="no words once -NONE- elements are removed"):
        clean_tree(Tree.fromstring("(S (NP (-NONE- *)))"))
    with pytest.raises(ValueError, match="text after the end"):
        Tree.fromstring("(S (NN a)) (S (NN b))")


def test_binarize_markovisation_and_unary_chains():
    tree = Tree.fromstring("(S (NP (A a) (B b) (C c) (D d)) (VP (VP (V v))))")
    assert str(binarize(tree, 1)) == (
        "(S (NP (A a) (NP|<A> (B b) (NP|<B> (C c) (D d)))) (VP+VP+V v))")
    assert str(binarize(tree, 2)).startswith("(S (NP (A a) (NP|<A> (B b) (NP|<A-B> (C c)")
    assert str(binarize(tree, 0)).startswith("(S (NP (A a) (NP|<> (B b) (NP|<> (C c)")
    assert str(binarize(tree, collapse_unary=False)).endswith("(VP (VP (V v))))")
    with pytest.raises(ValueError, match="markov_order"):
        binarize(tree, -1)


def test_penn_treebank_sample(shared_data):
    data = load_ptb(shared_data / "ptb_wsj_nltk_sample" / "wsj_sample.mrg.gz")
    # the README: 3,914 trees in 199 files; words without -NONE- per file sum to 94,084
    assert len(data.trees) == 3914
    assert sum(map(len, data.words)) == 94084
    for order in (0, 1, 2, None):
        for tree in data.trees:
            binary = binarize(tree, order)
            assert unbinarize(binary) == tree
            assert binary.leaves() == tree.leaves()
    rules = {len(node.children) for tree in data.trees[:200] for node in _nodes(binarize(tree))}
    assert rules == {1, 2}  # preterminals (possibly collapsed) and binary rules only


def _nodes(tree):
    yield tree
    if not tree.is_preterminal():
        for child in tree.children:
            yield from _nodes(child)


def test_bytes_that_are_not_utf8_name_file_and_line(tmp_path):
    path = tmp_path / "garbage.mrg"
    path.write_bytes(b"( (S (NN a)) )\n\x89PNG\r\n\x1a\n\xff\xfe\x00")
    with pytest.raises(ValueError, match=r"garbage.mrg, line 2: not valid utf-8 text"):
        load_ptb(path)
