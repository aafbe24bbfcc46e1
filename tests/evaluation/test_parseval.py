"""metrics.parseval: labelled brackets with the evalb (COLLINS.prm) conventions, by hand."""

import pytest

from sklearn_struct.datasets import Tree
from sklearn_struct.metrics import parseval


def T(text):
    return Tree.fromstring(text)


def test_identical_trees_score_one():
    tree = T("(TOP (S (NP (DT The) (NN dog)) (VP (VBZ barks) (ADVP (RB loudly))) (. .)))")
    scores = parseval([tree, tree], [tree, tree])
    assert scores["f1"] == scores["precision"] == scores["recall"] == 1.0
    assert scores["n_true"] == 2 * 4 and scores["exact_match"] == 1.0


def test_counts_by_hand():
    gold = T("(TOP (S (NP (DT The) (NN dog)) (VP (VBZ barks) (PP (IN at) (NP (NNS cats))))))")
    pred = T("(TOP (S (NP (DT The) (NN dog)) (VP (VBZ barks) (IN at) (NP (NNS cats)))))")
    # gold: S, NP, VP, PP, NP(cats) = 5; predicted: S, NP, VP, NP(cats) = 4, all correct
    scores = parseval([gold], [pred])
    assert (scores["n_correct"], scores["n_true"], scores["n_pred"]) == (4, 5, 4)
    assert scores["precision"] == 1.0 and scores["recall"] == pytest.approx(0.8)
    assert scores["f1"] == pytest.approx(2 * 0.8 / 1.8)
    assert scores["exact_match"] == 0.0


def test_punctuation_is_deleted_before_the_spans():
    # the comma and the period are not words for evalb: (NP dog ,) and (NP dog) coincide
    gold = T("(TOP (S (NP (NP (NN dog)) (, ,)) (VP (VBZ barks)) (. .)))")
    pred = T("(TOP (S (NP (NP (NN dog))) (, ,) (VP (VBZ barks) (. .))))")
    scores = parseval([gold], [pred])
    assert scores["f1"] == 1.0
    # a constituent made only of punctuation disappears
    only_punct = T("(TOP (S (NP (NN dog)) (X (, ,)) (VP (VBZ barks))))")
    assert parseval([only_punct], [only_punct])["n_true"] == 3


def test_duplicates_are_matched_as_multisets_and_labels_can_be_equivalent():
    gold = T("(TOP (S (VP (VP (VB go)) (PRT (RP up)))))")
    pred = T("(TOP (S (VP (VB go) (ADVP (RP up)))))")
    # gold VP(0,2), VP(0,1), PRT(1,2), S(0,2); predicted VP(0,2), ADVP=PRT(1,2), S(0,2)
    scores = parseval([gold], [pred])
    assert (scores["n_correct"], scores["n_true"], scores["n_pred"]) == (3, 4, 3)
    strict = parseval([gold], [pred], equivalent_labels=())
    assert strict["n_correct"] == 2
    scored_top = parseval([gold], [pred], ignore_labels=())
    assert scored_top["n_true"] == 5 and scored_top["n_correct"] == 4


def test_errors():
    gold = T("(TOP (S (NN a) (NN b)))")
    with pytest.raises(ValueError, match="1 trees but y_pred has 2"):
        parseval([gold], [gold, gold])
    with pytest.raises(ValueError, match="sentence 0: the predicted tree has other words"):
        parseval([gold], [T("(TOP (S (NN a) (NN c)))")])
