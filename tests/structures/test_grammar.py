"""Grammar: rules read off binarised trees, pruning, and the relative-frequency PCFG."""

import numpy as np
import pytest

from sklearn_struct.datasets import Tree, binarize, clean_tree, load_ptb
from sklearn_struct.structures.grammar._tree import MAX_DEPTH
from sklearn_struct.structures import Grammar

TREES = [binarize(Tree.fromstring(text)) for text in (
    "(TOP (S (NP (DT the) (NN dog)) (VP (VBZ barks))))",
    "(TOP (S (NP (DT a) (NN cat)) (VP (VBZ sees) (NP (DT the) (NN dog)))))",
    "(TOP (NP (DT the) (NN dog)))",
)]


def test_rules_and_counts():
    grammar = Grammar.from_trees(TREES)
    names = grammar.rule_names()
    assert set(names) == {"TOP+S -> NP VP+VBZ", "TOP+S -> NP VP", "VP -> VBZ NP",
                          "NP -> DT NN", "TOP+NP -> DT NN", "DT -> DT", "NN -> NN",
                          "VBZ -> VBZ", "VP+VBZ -> VBZ"}
    counts = dict(zip(names, np.r_[grammar.counts["binary"], grammar.counts["lexical"]]))
    assert counts["NP -> DT NN"] == 3 and counts["DT -> DT"] == 4
    assert sorted(grammar.nonterminals[r] for r in grammar.roots) == ["TOP+NP", "TOP+S"]
    # the lexical rules of each tag are contiguous
    for tag, name in enumerate(grammar.terminals):
        rows = grammar.lexical_rules[grammar.lexical_offsets[tag]:grammar.lexical_offsets[tag + 1]]
        assert (rows[:, 1] == tag).all() and len(rows) >= 1, name


def test_pcfg_probabilities_sum_to_one_per_left_hand_side():
    grammar = Grammar.from_trees(TREES)
    binary, lexical, roots = grammar.log_probabilities()
    totals = np.zeros(len(grammar.nonterminals))
    np.add.at(totals, grammar.binary_rules[:, 0], np.exp(binary))
    np.add.at(totals, grammar.lexical_rules[:, 0], np.exp(lexical))
    used = np.unique(np.r_[grammar.binary_rules[:, 0], grammar.lexical_rules[:, 0]])
    np.testing.assert_allclose(totals[used], 1.0)
    assert np.exp(roots[np.isfinite(roots)]).sum() == pytest.approx(1.0)
    top_s = grammar.nonterminals.index("TOP+S")
    assert np.exp(roots[top_s]) == pytest.approx(2 / 3)


def test_min_count_prunes_binary_rules_only():
    grammar = Grammar.from_trees(TREES, min_count=2)
    assert grammar.rule_names()[:1] == ["NP -> DT NN"] and len(grammar.binary_rules) == 1
    assert len(grammar.lexical_rules) == 4
    assert [grammar.covers(tree) for tree in TREES] == [False, False, False]
    twice = Grammar.from_trees(TREES + TREES[2:], min_count=2)
    assert [twice.covers(tree) for tree in TREES] == [False, False, True]
    assert all(Grammar.from_trees(TREES).covers(tree) for tree in TREES)
    assert not grammar.covers(Tree.fromstring("(S (DT a))"))  # not a root


def test_errors():
    with pytest.raises(ValueError, match="tree 0: 'S' has 3 children; binarise"):
        Grammar.from_trees([Tree.fromstring("(S (A a) (B b) (C c))")])
    with pytest.raises(ValueError, match="min_count"):
        Grammar.from_trees(TREES, min_count=0)
    with pytest.raises(ValueError, match=r"binary_rules row 0: C = 1 is not a symbol id in 0..0"):
        Grammar(["A"], ["a"], [[0, 0, 1]], [[0, 0]], [0])
    with pytest.raises(ValueError, match="roots"):
        Grammar(["A"], ["a"], [], [[0, 0]], [])
    with pytest.raises(ValueError, match="no treebank counts"):
        Grammar(["A"], ["a"], [], [[0, 0]], [0]).log_probabilities()


def test_penn_treebank_grammar(shared_data):
    data = load_ptb(shared_data / "ptb_wsj_nltk_sample" / "wsj_sample.mrg.gz")
    grammar = Grammar.from_trees([binarize(t) for t in data.trees[:1000]])
    pruned = Grammar.from_trees([binarize(t) for t in data.trees[:1000]], min_count=3)
    assert len(pruned.binary_rules) < len(grammar.binary_rules) / 2
    assert len(grammar.terminals) > 40  # the PTB tag set, punctuation included
    assert "Grammar(" in repr(grammar)


def test_bracket_nesting_is_limited_with_a_clear_error():
    deepest = "(S " * (MAX_DEPTH - 1) + "(A a)" + ")" * (MAX_DEPTH - 1)
    tree = Tree.fromstring(deepest)
    # every method recurses per level: the deepest tree read is still usable
    assert tree.leaves() == ["a"] and str(tree) == deepest.replace(") )", "))")
    assert binarize(tree).leaves() == ["a"] and tree.brackets()[-1] == ("S", 0, 1)
    assert clean_tree(tree) == tree and tree.tags() == ["A"]
    with pytest.raises(ValueError, match=f"<string>: tree 1: brackets nested deeper than "
                                         f"{MAX_DEPTH} levels"):
        Tree.fromstring("(S " * 3000 + "(A a)" + ")" * 3000)
