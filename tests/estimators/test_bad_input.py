"""The bad-input catalogue of issue 16: every class of bad or edge input, for every estimator.

Each case is a data set, built from a tiny valid one of a structure, that every
estimator taking that structure must refuse with a ``ValueError`` or
``TypeError`` whose message names the example (and row) and what was expected
-- before any work: the solvers are replaced by functions that fail the test
when entered.  The edge inputs that are accepted have a documented behaviour,
tested in the second half (0 feature columns, graphs without edges, unseen
labels at scoring, all-zero binary targets).  Inputs that could crash the
interpreter in the numba kernels run in a subprocess.  Invalid structure
settings are refused by every estimator in the same way; grammars and trees
when they are built; malformed files by every loader, naming the file and the
line; gold that a structure's decoder could never give (semi-Markov tags its
scheme cannot write, a constrained chain's forbidden labels, second-order trees
that are none); and bad files, paths and model files (truncated, damaged,
hostile, incomplete, of another layout) by every ``sklearn-struct`` command, in
one line on standard error before any work.

The classes of input and how each is handled are summarised by
``catalogue_summary()`` (printed by ``python tests/estimators/test_bad_input.py``).
"""

import collections
import json
import re
import subprocess
import sys
import textwrap
import warnings

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import sklearn_struct
from sklearn_struct import EGCRF, DualExtragradientMatcher, eg_path
from sklearn_struct.cli import MODEL_FORMAT
from sklearn_struct.cli import main as cli_main
from sklearn_struct.datasets import Tree, load_cachopo_text, load_conll, load_conllu, load_ptb
from sklearn_struct.structures import (
    ChainStructure,
    DependencyTreeStructure,
    Grammar,
    SemiMarkovStructure,
    SiblingDependencyStructure,
    UnsupportedOperation,
    WeightedCFGStructure,
)

ones = np.ones
GRAMMAR = Grammar(["A", "B", "S"], ["a", "b"],
                  binary_rules=[[2, 0, 1], [2, 1, 0], [0, 0, 1], [1, 0, 0], [2, 2, 0], [0, 2, 1]],
                  lexical_rules=[[0, 0], [1, 1], [2, 0], [1, 0]], roots=[2, 0])
STRUCTURES = {  # the value of the ``structure`` parameter
    "multiclass": lambda: "multiclass",
    "chain": lambda: "chain",
    "matching": lambda: "matching",
    "mincut": lambda: "mincut",
    "tree": lambda: "tree",
    "dependency": lambda: DependencyTreeStructure(hash_bits=8),
    "sibling_dependency": lambda: SiblingDependencyStructure(hash_bits=8),
    "cfg": lambda: WeightedCFGStructure(GRAMMAR, hash_bits=8),
    "semimarkov": lambda: SemiMarkovStructure(),
}


def make_estimator(name, structure):
    """A few iterations of every estimator (the DEM's entropic setting for chains and trees)."""
    structure = STRUCTURES[structure]()
    if name == "DualExtragradientMatcher":
        if structure in ("matching", "mincut"):
            return DualExtragradientMatcher(structure=structure, max_iter=2)
        return DualExtragradientMatcher(structure=structure, geometry="entropic", radius=1.0,
                                        max_iter=2)
    if name in ("SMLogisticRegression", "SMAdaBoostClassifier"):
        return getattr(sklearn_struct, name)(max_iter=2)
    return getattr(sklearn_struct, name)(structure=structure, max_iter=2)


STRUCTURED = ("EGCRF", "EGStructuredSVM", "L1M3N", "DualExtragradientMatcher",
              "StructuredPerceptron")
#: which estimators take which structure (the other pairs are refused, see below)
SUPPORTED = {
    "multiclass": STRUCTURED + ("SMLogisticRegression", "SMAdaBoostClassifier"),
    "chain": STRUCTURED,
    "tree": STRUCTURED,
    "matching": ("L1M3N", "DualExtragradientMatcher", "StructuredPerceptron"),
    "mincut": ("L1M3N", "DualExtragradientMatcher"),
    "dependency": ("EGCRF", "EGStructuredSVM", "L1M3N", "StructuredPerceptron"),
    "sibling_dependency": ("EGCRF", "EGStructuredSVM", "L1M3N", "StructuredPerceptron"),
    "cfg": ("EGCRF", "EGStructuredSVM", "L1M3N", "StructuredPerceptron"),
}

FULL = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
PATH = np.array([[0, 1], [1, 2]])


def valid(structure):
    """A tiny valid training set of each structure (two examples, every class present)."""
    rng = np.random.RandomState(0)
    if structure == "multiclass":
        return rng.randn(6, 3), np.array([0, 1, 2, 0, 1, 2])
    if structure == "chain":
        return [rng.randn(3, 2), rng.randn(2, 2)], [np.array([0, 1, 0]), np.array([1, 1])]
    if structure == "matching":
        return ([(rng.randn(4, 2), FULL), (rng.randn(4, 2), FULL)],
                [np.array([1, 0, 0, 1]), np.array([0, 1, 1, 0])])
    if structure == "mincut":
        return ([(rng.randn(3, 2), PATH, rng.rand(2, 1)) for _ in range(2)],
                [np.array([0, 1, 1]), np.array([1, 0, 0])])
    if structure == "tree":
        return ([(rng.randn(3, 2), np.array([-1, 0, 0])), (rng.randn(2, 2), np.array([-1, 0]))],
                [np.array([0, 1, 0]), np.array([1, 1])])
    if structure == "semimarkov":
        return [rng.randn(3, 2), rng.randn(2, 2)], [["B-X", "I-X", "O"], ["O", "B-X"]]
    if structure in ("dependency", "sibling_dependency"):
        return ([rng.randint(4, 9, size=(3, 3)), rng.randint(4, 9, size=(2, 3))],
                [np.array([0, 1, 1]), np.array([2, 0])])
    return ([[("w1", "a"), ("w2", "b")], [("w3", "b"), ("w2", "a")]],
            [Tree("S", [Tree("A", ["w1"]), Tree("B", ["w2"])]),
             Tree("S", [Tree("B", ["w3"]), Tree("A", ["w2"])])])


def _replace(X, i, item):
    X = list(X)
    X[i] = item
    return X


def _graph(X, i, position, value):
    graph = list(X[i])
    graph[position] = value
    return _replace(X, i, tuple(graph))


def _with_child(tree, k, child):
    """A copy of ``tree`` whose child ``k`` is replaced after construction."""
    tree = Tree(tree.label, tree.children)
    tree.children[k] = child
    return tree


Case = collections.namedtuple("Case", "structure kind build error match")
E = r"(EGCRF|EGStructuredSVM|L1M3N|DualExtragradientMatcher|StructuredPerceptron|SM\w+)"
EXPECTED_DATA = "must be a 2-D array or sparse matrix"

#: every bad input: (structure, class of input, build(X, y) -> (X, y), error, message)
CASES = {
    # ------------------------------------------------------------ every structure
    **{f"{s}: empty X and y": Case(s, "empty lists", lambda X, y: ([], []), ValueError,
                                   f"{E}: X is an empty list; expected")
       for s in SUPPORTED},
    **{f"{s}: X a dict": Case(s, "wrong container", lambda X, y: ({"x": X}, y), TypeError,
                              f"{E}: X {EXPECTED_DATA}.*; got dict")
       for s in SUPPORTED},
    **{f"{s}: X a string": Case(s, "wrong container", lambda X, y: ("X", y), TypeError,
                                f"{E}: X {EXPECTED_DATA}.*; got str")
       for s in SUPPORTED},
    **{f"{s}: X a number": Case(s, "wrong container", lambda X, y: (3.0, y), TypeError,
                                f"{E}: X {EXPECTED_DATA}.*; got float")
       for s in SUPPORTED},
    **{f"{s}: one 3-D array": Case(s, "wrong dimensionality",
                                   lambda X, y: (ones((2, 3, 4)), y), ValueError,
                                   r"X is a 3-D array of shape \(2, 3, 4\); pass sequences as "
                                   "a list") for s in SUPPORTED},
    # ------------------------------------------------------------------ flat tables
    "multiclass: 0 rows": Case("multiclass", "0 rows / units / tokens",
                               lambda X, y: (ones((0, 3)), []), ValueError,
                               r"Found array with 0 sample\(s\) \(shape=\(0, 3\)\)"),
    "multiclass: 0 columns": Case("multiclass", "0 feature columns",
                                  lambda X, y: (ones((6, 0)), y), ValueError,
                                  r"0 feature\(s\) \(shape=\(6, 0\)\) while a minimum of 1"),
    "multiclass: 0 columns, CSR": Case("multiclass", "0 feature columns",
                                       lambda X, y: (sp.csr_matrix((6, 0)), y), ValueError,
                                       r"0 feature\(s\) \(shape=\(6, 0\)\)"),
    "multiclass: 1-D X": Case("multiclass", "wrong dimensionality",
                              lambda X, y: (X[:, 0], y), ValueError,
                              r"(?s)Expected 2D array, got 1D array.*reshape\(-1, 1\)"),
    "multiclass: 2-D y": Case("multiclass", "wrong dimensionality",
                              lambda X, y: (X, np.c_[y, y]), ValueError,
                              r"y should be a 1d array, got an array of shape \(6, 2\)"),
    "multiclass: y a string": Case("multiclass", "labels given as a string",
                                   lambda X, y: (X, "abcabc"), ValueError,
                                   r"y should be a 1d array, got an array of shape \(\)"),
    "multiclass: y of the wrong length": Case(
        "multiclass", "lengths that disagree", lambda X, y: (X, y[:5]), ValueError,
        r"inconsistent numbers of samples: \[6, 5\]"),
    "multiclass: mixed str/int labels": Case(
        "multiclass", "mixed label types",
        lambda X, y: (X, np.array(["a", 1, "a", 1, "b", 2], dtype=object)), TypeError,
        r"labels mix types: y\[1\] = 1 is of type number but y\[0\] = 'a' is of type str"),
    "multiclass: continuous y": Case(
        "multiclass", "continuous targets",
        lambda X, y: (np.random.RandomState(0).randn(40, 3), np.random.RandomState(1).randn(40)),
        ValueError, "Unknown label type: continuous"),
    "multiclass: a single class": Case("multiclass", "a single class",
                                       lambda X, y: (X, np.zeros(6, int)), ValueError,
                                       "one class only|at least 2 classes"),
    "multiclass: NaN in a row": Case(
        "multiclass", "NaN or infinity", lambda X, y: (np.r_[X[:3], [[0, np.nan, 0]], X[4:]], y),
        ValueError, r"X row 3 contains NaN or infinity|example 3, feature 1 is nan"),
    "multiclass: infinity in a CSR row": Case(
        "multiclass", "NaN or infinity",
        lambda X, y: (sp.csr_matrix(np.r_[X[:2], [[0, 0, np.inf]], X[3:]]), y), ValueError,
        r"X row 2 contains NaN or infinity|example 2, feature 2 is inf"),
    # --------------------------------------------------------------------- sequences
    "chain: a sequence of 0 tokens": Case(
        "chain", "0 rows / units / tokens", lambda X, y: ([X[0], ones((0, 2))], [y[0], []]),
        ValueError, r"sequence 1: has no rows \(shape \(0, 2\)\)"),
    "chain: a CSR sequence of 0 tokens": Case(
        "chain", "0 rows / units / tokens",
        lambda X, y: ([sp.csr_matrix(X[0]), sp.csr_matrix((0, 2))], [y[0], []]),
        ValueError, r"sequence 1: has no rows"),
    "chain: 1-D sequences": Case(
        "chain", "wrong dimensionality", lambda X, y: ([x[:, 0] for x in X], y), ValueError,
        r"sequence 0: expected a 2-D array .* shape \(3,\) .*reshape\(-1, 1\)"),
    "chain: 3-D sequences": Case(
        "chain", "wrong dimensionality", lambda X, y: ([x[:, :, None] for x in X], y),
        ValueError, r"sequence 0: expected a 2-D array .* shape \(3, 2, 1\)"),
    "chain: ragged rows": Case(
        "chain", "wrong dimensionality", lambda X, y: ([[[1.0, 2.0], [1.0]], X[1]], y),
        TypeError, "sequence 0: could not convert the features to an array"),
    "chain: string features": Case(
        "chain", "wrong container", lambda X, y: ([x.astype(str) for x in X], y), TypeError,
        "sequence 0: expected real numeric features, got dtype <U"),
    "chain: feature widths that differ": Case(
        "chain", "feature-count mismatch", lambda X, y: ([X[0], ones((2, 3))], y), ValueError,
        "sequence 1 has 3 feature columns but sequence 0 has 2"),
    "chain: NaN in a sequence": Case(
        "chain", "NaN or infinity", lambda X, y: ([X[0], np.array([[1.0, np.nan]] * 2)], y),
        ValueError, "sequence 1: features contain NaN or infinity"),
    "chain: infinity in a CSR sequence": Case(
        "chain", "NaN or infinity",
        lambda X, y: ([X[0], sp.csr_matrix(np.array([[1.0, np.inf], [0, 1]]))], y),
        ValueError, "sequence 1: features contain NaN or infinity"),
    "chain: y of the wrong length": Case(
        "chain", "lengths that disagree", lambda X, y: (X, y[:1]), ValueError,
        "X has 2 examples but y has 1"),
    "chain: y_i of the wrong length": Case(
        "chain", "lengths that disagree", lambda X, y: (X, [y[0], [1, 1, 1]]), ValueError,
        r"y\[1\]: expected 2 labels \(one per token\), got 3"),
    "chain: y_i a string": Case(
        "chain", "labels given as a string", lambda X, y: (X, ["aba", "ab"]), TypeError,
        r"y\[0\]: expected a 1-D sequence of labels, got str"),
    "chain: y_i a scalar": Case(
        "chain", "wrong dimensionality", lambda X, y: (X, [0, 1]), TypeError,
        r"y\[0\]: expected a 1-D sequence of labels, got int"),
    "chain: y_i 2-D": Case(
        "chain", "wrong dimensionality", lambda X, y: (X, [y[0][:, None], y[1][:, None]]),
        ValueError, r"y\[0\]: expected a 1-D sequence of labels, got shape \(3, 1\)"),
    "chain: mixed label types in a sequence": Case(
        "chain", "mixed label types",
        lambda X, y: (X, [np.array(["a", 1, "a"], dtype=object), ["b", "a"]]), TypeError,
        "example 0 has labels of types number and str"),
    "chain: label types differing between sequences": Case(
        "chain", "mixed label types", lambda X, y: (X, [["a", "b", "a"], [1, 0]]), TypeError,
        "example 1 has labels of type number but earlier labels are of type str"),
    "chain: continuous labels": Case(
        "chain", "continuous targets", lambda X, y: (X, [np.array([0.5, 1.25, 2.0]), y[1]]),
        ValueError, r"y\[0\] holds continuous values \(label 0.5 at position 0\)"),
    "chain: a single class": Case(
        "chain", "a single class", lambda X, y: (X, [[0, 0, 0], [0, 0]]), ValueError,
        r"y has a single class \(0\); at least two are needed"),
    # ------------------------------------------------------------------------ trees
    "tree: a forest of 0 nodes": Case(
        "tree", "0 rows / units / tokens",
        lambda X, y: ([X[0], (ones((0, 2)), np.zeros(0, int))], [y[0], []]), ValueError,
        r"TreeStructure: example 1 node_features: has no rows"),
    "tree: parent out of range": Case(
        "tree", "graph of the wrong shape", lambda X, y: (_graph(X, 0, 1, [-1, 0, 7]), y),
        ValueError, r"example 0: node 2 has parent 7, out of range"),
    "tree: a cycle": Case(
        "tree", "graph of the wrong shape", lambda X, y: (_graph(X, 0, 1, [-1, 2, 1]), y),
        ValueError, r"example 0: node 2 lies on a cycle of the parent array \(2 -> 1 -> 2"),
    "tree: parents of the wrong length": Case(
        "tree", "graph of the wrong shape", lambda X, y: (_graph(X, 0, 1, [-1, 0]), y),
        ValueError, r"example 0: parents must hold one integer per node \(3 nodes\)"),
    "tree: float parents": Case(
        "tree", "graph of the wrong shape", lambda X, y: (_graph(X, 0, 1, [-1, 0, 0.5]), y),
        TypeError, "example 0: parents must be integers"),
    "tree: edge type out of range": Case(
        "tree", "graph of the wrong shape",
        lambda X, y: (_replace(X, 0, X[0] + (np.array([0, 0, 3]),)), y), ValueError,
        r"example 0: node 2 has edge type 3, expected an integer in \[0, 1\)"),
    "tree: a tuple of 1 item": Case(
        "tree", "graph of the wrong shape", lambda X, y: (_replace(X, 0, X[0][:1]), y),
        TypeError, r"example 0: expected a tuple \(node_features, parents\)"),
    "tree: NaN in node features": Case(
        "tree", "NaN or infinity", lambda X, y: (_graph(X, 1, 0, np.array([[0, np.nan]] * 2)), y),
        ValueError, "example 1 node_features: features contain NaN or infinity"),
    "tree: feature widths that differ": Case(
        "tree", "feature-count mismatch", lambda X, y: (_graph(X, 1, 0, ones((2, 3))), y),
        ValueError, "example 1: 3 node features but example 0 has 2"),
    "tree: y_i a string": Case(
        "tree", "labels given as a string", lambda X, y: (X, ["aba", "ab"]), TypeError,
        r"y\[0\]: expected a 1-D sequence of labels, got str"),
    "tree: mixed label types": Case(
        "tree", "mixed label types",
        lambda X, y: (X, [np.array(["a", 1, "a"], dtype=object), ["b", "a"]]), TypeError,
        "example 0 has labels of types number and str"),
    "tree: continuous labels": Case(
        "tree", "continuous targets", lambda X, y: (X, [y[0], np.array([0.1, 0.2])]),
        ValueError, r"y\[1\] holds continuous values"),
    "tree: a single class": Case(
        "tree", "a single class", lambda X, y: (X, [[1, 1, 1], [1, 1]]), ValueError,
        "y has a single class"),
    "tree: y_i of the wrong length": Case(
        "tree", "lengths that disagree", lambda X, y: (X, [y[0], [1, 1, 1]]), ValueError,
        r"y\[1\]: expected 2 labels \(one per node\), got 3"),
    # -------------------------------------------------------------------- matchings
    "matching: node counts of length 1": Case(
        "matching", "graph of the wrong shape",
        lambda X, y: (_replace(X, 0, X[0] + ((2,),)), y), ValueError,
        r"example 0: the node counts must be a pair \(n_sources, n_targets\) of non-negative "
        r"integers, got \(2,\)"),
    "matching: node counts of length 3": Case(
        "matching", "graph of the wrong shape",
        lambda X, y: (_replace(X, 0, X[0] + ((2, 2, 2),)), y), ValueError,
        r"example 0: the node counts must be a pair .*got \(2, 2, 2\)"),
    "matching: node counts a number": Case(
        "matching", "graph of the wrong shape", lambda X, y: (_replace(X, 0, X[0] + (2,)), y),
        ValueError, "example 0: the node counts must be a pair .*got 2"),
    "matching: node counts not integers": Case(
        "matching", "graph of the wrong shape",
        lambda X, y: (_replace(X, 1, X[1] + ((2.5, 2),)), y), ValueError,
        r"example 1: the node counts must be a pair .*got \(2.5, 2\)"),
    "matching: negative node counts": Case(
        "matching", "graph of the wrong shape",
        lambda X, y: (_replace(X, 0, X[0] + ((-1, 2),)), y), ValueError,
        r"example 0: the node counts must be a pair .*non-negative"),
    "matching: an edge beyond the node counts": Case(
        "matching", "graph of the wrong shape",
        lambda X, y: (_replace(X, 0, X[0] + ((1, 2),)), y), ValueError,
        "example 0: an edge endpoint is out of range for 1 source and 2 target nodes"),
    "matching: a negative edge endpoint": Case(
        "matching", "graph of the wrong shape", lambda X, y: (_graph(X, 0, 1, FULL - 1), y),
        ValueError, "example 0: edge endpoints must be non-negative node indices"),
    "matching: edges of shape (E, 1)": Case(
        "matching", "graph of the wrong shape", lambda X, y: (_graph(X, 0, 1, FULL[:, :1]), y),
        ValueError, r"example 0: edges must be an \(n_edges, 2\) integer array .*\(4, 1\)"),
    "matching: fewer edges than feature rows": Case(
        "matching", "graph of the wrong shape", lambda X, y: (_graph(X, 0, 1, FULL[:3]), y),
        ValueError, "example 0: 3 edges but 4 rows of edge features"),
    "matching: non-integer edge endpoints": Case(
        "matching", "graph of the wrong shape", lambda X, y: (_graph(X, 0, 1, FULL + 0.5), y),
        TypeError, "example 0: edge endpoints must be integers"),
    "matching: duplicate edges": Case(
        "matching", "graph of the wrong shape",
        lambda X, y: (_graph(X, 1, 1, np.array([[0, 0], [0, 0], [1, 0], [1, 1]])), y),
        ValueError, r"example 1: duplicate \(source, target\) edges"),
    "matching: a tuple of 1 item": Case(
        "matching", "graph of the wrong shape", lambda X, y: (_replace(X, 0, X[0][:1]), y),
        TypeError, r"example 0: expected a tuple \(edge_features, edges\)"),
    "matching: one graph instead of a list": Case(
        "matching", "wrong container", lambda X, y: (X[0], y[0]), TypeError,
        "y must be a list with one label array per graph|got a single tuple"),
    "matching: 1-D edge features": Case(
        "matching", "wrong dimensionality", lambda X, y: (_graph(X, 0, 0, X[0][0][:, 0]), y),
        ValueError, r"example 0 edge_features: expected a 2-D array .*reshape\(-1, 1\)"),
    "matching: NaN in edge features": Case(
        "matching", "NaN or infinity",
        lambda X, y: (_graph(X, 0, 0, np.r_[X[0][0][:3], [[np.nan, 0]]]), y), ValueError,
        "example 0 edge_features: features contain NaN or infinity"),
    "matching: feature widths that differ": Case(
        "matching", "feature-count mismatch", lambda X, y: (_graph(X, 0, 0, ones((4, 3))), y),
        ValueError, "example 1: 2 edge features but example 0 has 3"),
    "matching: a target that is not 0/1": Case(
        "matching", "invalid outputs", lambda X, y: (X, [[2, 0, 0, 1], y[1]]), ValueError,
        r"y\[0\]: value 2 at edge 0; labels must be 0 or 1"),
    "matching: a target that is not a matching": Case(
        "matching", "invalid outputs", lambda X, y: (X, [[1, 1, 0, 0], y[1]]), ValueError,
        "example 0: source node 0 is matched by 2 edges; a matching gives every node one"),
    "matching: continuous targets": Case(
        "matching", "continuous targets", lambda X, y: (X, [np.full(4, 0.5), y[1]]), ValueError,
        r"y\[0\]: value 0.5 at edge 0; labels must be 0 or 1"),
    "matching: y_i a string": Case(
        "matching", "labels given as a string", lambda X, y: (X, ["1001", "0110"]), TypeError,
        r"y\[0\]: expected a 1-D sequence of labels, got str"),
    "matching: y_i of the wrong length": Case(
        "matching", "lengths that disagree", lambda X, y: (X, [y[0][:3], y[1]]), ValueError,
        r"y\[0\]: expected 4 labels \(one per edge\), got 3"),
    # ---------------------------------------------------------------------- min-cuts
    "mincut: a graph of 0 nodes": Case(
        "mincut", "0 rows / units / tokens",
        lambda X, y: ([X[0], (ones((0, 2)), np.zeros((0, 2), int), ones((0, 1)))], [y[0], []]),
        ValueError, "example 1 node_features: has no rows"),
    "mincut: an edge out of range": Case(
        "mincut", "graph of the wrong shape", lambda X, y: (_graph(X, 0, 1, [[0, 1], [1, 5]]), y),
        ValueError, "example 0: edge endpoint 5 is out of range for 3 nodes"),
    "mincut: a self-loop": Case(
        "mincut", "graph of the wrong shape", lambda X, y: (_graph(X, 0, 1, [[0, 1], [1, 1]]), y),
        ValueError, "example 0: self-loop edges are not allowed"),
    "mincut: edge features for fewer edges": Case(
        "mincut", "graph of the wrong shape", lambda X, y: (_graph(X, 0, 2, X[0][2][:1]), y),
        ValueError, "example 0: 2 edges but 1 rows of edge features"),
    "mincut: negative edge features": Case(
        "mincut", "graph of the wrong shape", lambda X, y: (_graph(X, 0, 2, -X[0][2]), y),
        ValueError, "example 0: edge features must be non-negative"),
    "mincut: a tuple of 2 items": Case(
        "mincut", "graph of the wrong shape", lambda X, y: (_replace(X, 0, X[0][:2]), y),
        TypeError, r"example 0: expected a tuple \(node_features, edges, edge_features\)"),
    "mincut: NaN in edge features": Case(
        "mincut", "NaN or infinity", lambda X, y: (_graph(X, 0, 2, np.array([[np.nan], [1]])), y),
        ValueError, "example 0 edge_features: features contain NaN or infinity"),
    "mincut: a target that is not 0/1": Case(
        "mincut", "invalid outputs", lambda X, y: (X, [[2, 0, 1], y[1]]), ValueError,
        r"y\[0\]: value 2 at node 0; labels must be 0 or 1"),
    "mincut: y_i a string": Case(
        "mincut", "labels given as a string", lambda X, y: (X, ["011", "100"]), TypeError,
        r"y\[0\]: expected a 1-D sequence of labels, got str"),
    # -------------------------------------------------------------- dependency trees
    "dependency: a sentence of 0 words": Case(
        "dependency", "0 rows / units / tokens",
        lambda X, y: ([X[0], np.zeros((0, 3), int)], [y[0], []]), ValueError,
        r"sentence 1: expected an \(n_words, 3\).*n_words >= 1, got int64 of shape \(0, 3\)"),
    "dependency: 2 attribute columns": Case(
        "dependency", "wrong dimensionality", lambda X, y: ([x[:, :2] for x in X], y),
        ValueError, r"sentence 0: expected an \(n_words, 3\).* shape \(3, 2\)"),
    "dependency: 1-D sentences": Case(
        "dependency", "wrong dimensionality", lambda X, y: ([x[:, 0] for x in X], y),
        ValueError, r"sentence 0: expected an \(n_words, 3\).* shape \(3,\)"),
    "dependency: float attribute ids": Case(
        "dependency", "wrong container", lambda X, y: ([X[0] + 0.5, X[1]], y), ValueError,
        r"sentence 0: expected .*integer token attribute ids.*float64"),
    "dependency: a negative attribute id": Case(
        "dependency", "wrong container", lambda X, y: ([X[0], -1 - X[1]], y), ValueError,
        r"sentence 1: attribute ids must be non-negative"),
    "dependency: a punctuation flag of 2": Case(
        "dependency", "wrong container",
        lambda X, y: ([np.column_stack([X[0], np.full(len(X[0]), 2)]),
                       np.column_stack([X[1], np.zeros(len(X[1]), int)])], y), ValueError,
        r"sentence 0: the fourth column flags punctuation with 0 or 1"),
    "dependency: a head out of range": Case(
        "dependency", "invalid outputs", lambda X, y: (X, [[0, 1, 9], y[1]]), ValueError,
        r"sentence 0: word 3 has head 9; expected a head in 0..3"),
    "dependency: y_i a string": Case(
        "dependency", "labels given as a string", lambda X, y: (X, ["011", "20"]), ValueError,
        r"y\[0\]: expected a 1-D array of integer heads, got '011'"),
    "dependency: continuous heads": Case(
        "dependency", "continuous targets", lambda X, y: (X, [[0.5, 1.0, 1.0], y[1]]),
        ValueError, r"y\[0\]: expected a 1-D array of integer heads"),
    "dependency: gold heads with a cycle": Case(
        "dependency", "invalid outputs", lambda X, y: (X, [[0, 3, 2], y[1]]), ValueError,
        r"sentence 0: the heads form a cycle through word 2; expected a tree"),
    "dependency: two roots under single_root=True": Case(
        "dependency", "invalid outputs", lambda X, y: (X, [[0, 0, 1], y[1]]), ValueError,
        r"sentence 0: words 1 and 2 both have head 0; single_root=True expects exactly one"),
    "dependency: crossing arcs under projective=True": Case(
        "dependency", "invalid outputs", lambda X, y: (X, [[2, 0, 1], y[1]]), ValueError,
        r"sentence 0: the arcs 0 -> 2 and 1 -> 3 cross; projective=True expects projective "
        r"trees \(sklearn_struct.datasets.projectivize lifts crossing arcs, filter_projective"),
    "dependency: y_i of the wrong length": Case(
        "dependency", "lengths that disagree", lambda X, y: (X, [[0, 1], y[1]]), ValueError,
        r"y\[0\]: expected 3 heads \(one per token\), got 2"),
    # ------------------------------------------------------------- weighted CFGs
    "cfg: a sentence of 0 words": Case(
        "cfg", "0 rows / units / tokens", lambda X, y: ([X[0], []], y), ValueError,
        r"sentence 1: expected a non-empty sequence of \(word, tag\) pairs, got \[\]"),
    "cfg: a tag outside the grammar": Case(
        "cfg", "graph of the wrong shape", lambda X, y: ([[("w1", "z"), ("w2", "b")], X[1]], y),
        ValueError, r"sentence 0, word 0 \('w1'\): the tag 'z' is not a terminal"),
    "cfg: a word without a tag": Case(
        "cfg", "wrong dimensionality", lambda X, y: ([[("w1",), ("w2", "b")], X[1]], y),
        ValueError, r"sentence 0, word 0: expected a \(word, tag\) pair of strings"),
    "cfg: a sentence given as a string": Case(
        "cfg", "wrong container", lambda X, y: (["w1 w2", X[1]], y), ValueError,
        "sentence 0: expected a non-empty sequence of .* got 'w1 w2'"),
    "cfg: y_i a string": Case(
        "cfg", "labels given as a string", lambda X, y: (X, ["(S (A w1) (B w2))", y[1]]),
        TypeError, r"y\[0\]: expected a Tree, got str"),
    "cfg: a tree over other words": Case(
        "cfg", "invalid outputs", lambda X, y: (X, [y[1], y[1]]), ValueError,
        r"y\[0\]: the tree's words \['w3', 'w2'\] are not those of sentence 0"),
    "cfg: a tree with an int child": Case(
        "cfg", "invalid outputs", lambda X, y: (X, [_with_child(y[0], 1, 3), y[1]]), ValueError,
        r"y\[0\]: not a well-formed tree: 'S': child 1 is of type int; expected a Tree or a "
        r"word \(str\)"),
    "cfg: a rule outside the grammar": Case(
        "cfg", "invalid outputs",
        lambda X, y: (X, [Tree("S", [Tree("B", ["w1"]), Tree("B", ["w2"])]), y[1]]),
        ValueError, r"y\[0\]: the rule S -> B B is not in the grammar"),
}

CATALOGUE = [(case, name) for case, spec in CASES.items() for name in SUPPORTED[spec.structure]]

#: gold outside the output set of structures with settings: (structure, data, error, message)
SEQUENCES = [np.ones((3, 2)), np.ones((2, 2))]
GOLD_CASES = {
    "semimarkov: I-X with no B-X under IOB2": (
        lambda: SemiMarkovStructure(), SEQUENCES, [["I-X", "I-X", "O"], ["O", "O"]],
        r"SemiMarkovStructure: sequence 0, token 0: the IOB2 scheme cannot write the tag "
        r"'I-X' there"),
    "semimarkov: B-X first under IOB1": (
        lambda: SemiMarkovStructure(scheme="IOB1"), SEQUENCES,
        [["B-X", "I-X", "O"], ["I-X", "O"]],
        r"sequence 0, token 0: the IOB1 scheme cannot write the tag 'B-X' there \(it writes "
        r"'I-X'"),
    "semimarkov: B-X not closed under BIOES": (
        lambda: SemiMarkovStructure(scheme="BIOES"), SEQUENCES,
        [["B-X", "I-X", "O"], ["S-X", "O"]],
        r"sequence 0, token 1: the BIOES scheme cannot write the tag 'I-X' there"),
    "semimarkov: a segment longer than max_length": (
        lambda: SemiMarkovStructure(max_length=2), SEQUENCES,
        [["B-X", "I-X", "I-X"], ["B-X", "O"]],
        r"sequence 0, tokens 0 to 2: a segment of 3 tokens \(B-X...\), longer than "
        r"max_length=2"),
    "chain IOB2: I-X first": (
        lambda: ChainStructure(allowed_transitions="IOB2"), SEQUENCES,
        [["O", "B-X", "I-X"], ["I-X", "O"]],
        r"ChainStructure: sequence 1, position 0: label 1 cannot come first"),
    "sibling_dependency: two roots": (
        lambda: SiblingDependencyStructure(hash_bits=8), None, [[0, 0, 1], [2, 0]],
        r"sentence 0: words 1 and 2 both have head 0"),
    "sibling_dependency: crossing arcs": (
        lambda: SiblingDependencyStructure(hash_bits=8), None,
        [[3, 4, 0, 3], [2, 0]], r"sentence 0: the arcs .* cross"),
    "sibling_dependency: a cycle": (
        lambda: SiblingDependencyStructure(hash_bits=8), None, [[0, 3, 2], [2, 0]],
        r"sentence 0: the heads form a cycle through word 2"),
}
GOLD_LEARNERS = ("EGCRF", "EGStructuredSVM", "L1M3N", "StructuredPerceptron")
GOLD_CATALOGUE = [(case, name) for case in GOLD_CASES for name in GOLD_LEARNERS] + [
    (case, "DualExtragradientMatcher") for case in GOLD_CASES if case.startswith("chain")]


@pytest.fixture
def no_solver(monkeypatch):
    """Every solver fails the test when entered: refusals must come before any work."""

    def entered(*args, **kwargs):
        raise AssertionError("a solver was entered: the input was not refused before any work")

    for module, name in [(sklearn_struct._eg_base, "eg_solve"),
                         (sklearn_struct._eg_base, "latent_solve"),
                         (sklearn_struct.l1m3n, "l1_cutting_plane"),
                         (sklearn_struct.l1m3n, "l1_proximal_subgradient"),
                         (sklearn_struct.l1m3n, "adaptive_m3n"),
                         (sklearn_struct.extragradient, "dual_extragradient"),
                         (sklearn_struct.perceptron, "perceptron_solve"),
                         (sklearn_struct.sm, "sm_minimize")]:
        monkeypatch.setattr(module, name, entered)
    return monkeypatch


@pytest.mark.parametrize("case, name", CATALOGUE)
def test_bad_input_is_refused_before_any_work(case, name, no_solver):
    spec = CASES[case]
    X, y = spec.build(*valid(spec.structure))
    with pytest.raises(spec.error, match=spec.match):
        make_estimator(name, spec.structure).fit(X, y)


@pytest.mark.parametrize("case, name", GOLD_CATALOGUE)
def test_gold_outside_the_output_set_is_refused_before_any_work(case, name, no_solver):
    make_structure, X, y, match = GOLD_CASES[case]
    if X is None:  # sentences of as many words as the heads
        X = [np.random.RandomState(0).randint(4, 9, size=(len(heads), 3)) for heads in y]
    model = getattr(sklearn_struct, name)(structure=make_structure(), max_iter=2)
    if name == "DualExtragradientMatcher":  # chains: the entropic setting
        model.set_params(geometry="entropic", radius=1.0)
    with pytest.raises(ValueError, match=match):
        model.fit(X, y)


# ----------------------------------------------------------- structure settings
#: (structure, the structure object, error, message): refused when fitting begins
SETTING_CASES = {
    "dependency: projective='no'": (
        "dependency", lambda: DependencyTreeStructure(projective="no", hash_bits=8), TypeError,
        "projective must be True or False, got 'no'"),
    "dependency: single_root=None": (
        "dependency", lambda: DependencyTreeStructure(single_root=None, hash_bits=8), TypeError,
        "single_root must be True or False, got None"),
    "dependency: punctuation_weight=-1": (
        "dependency", lambda: DependencyTreeStructure(punctuation_weight=-1, hash_bits=8),
        ValueError, "punctuation_weight must be a finite number >= 0, got -1"),
    "dependency: punctuation_weight=nan": (
        "dependency", lambda: DependencyTreeStructure(punctuation_weight=np.nan, hash_bits=8),
        ValueError, "punctuation_weight must be a finite number >= 0, got nan"),
    "cfg: rules given as text": (
        "cfg", lambda: WeightedCFGStructure("S -> NP VP", hash_bits=8), TypeError,
        r"grammar must be a Grammar, got str \(build one with Grammar\(...\) or "
        "Grammar.from_trees"),
}
SETTING_CATALOGUE = [(case, name) for case, spec in SETTING_CASES.items()
                     for name in SUPPORTED[spec[0]]]


@pytest.mark.parametrize("case, name", SETTING_CATALOGUE)
def test_bad_structure_settings_are_refused_before_any_work(case, name, no_solver):
    structure, make_structure, error, match = SETTING_CASES[case]
    X, y = valid(structure)
    model = getattr(sklearn_struct, name)(structure=make_structure(), max_iter=2)
    with pytest.raises(error, match=match):
        model.fit(X, y)


# ------------------------------------------------------------ at predict and score
PREDICT_CASES = {
    "multiclass: more feature columns": ("multiclass", "feature-count mismatch",
                                         lambda X: ones((2, 4)), ValueError,
                                         "X has 4 features, but .* is expecting 3 features"),
    "multiclass: NaN in a row": ("multiclass", "NaN or infinity",
                                 lambda X: np.array([[0, 0, 0], [np.nan, 0, 0.0]]), ValueError,
                                 r"X row 1 contains NaN or infinity|example 1, feature 0 is nan"),
    "multiclass: an empty list": ("multiclass", "empty lists", lambda X: [], ValueError,
                                  "X is an empty list"),
    "multiclass: sequences": ("multiclass", "wrong container", lambda X: [ones((2, 3))],
                              (ValueError, TypeError),
                              "was fitted on a 2-D array|learns from flat samples"),
    "chain: more feature columns": ("chain", "feature-count mismatch", lambda X: [ones((2, 3))],
                                    ValueError, "X has 3 features, but .* is expecting 2"),
    "chain: 0 feature columns": ("chain", "feature-count mismatch", lambda X: [ones((2, 0))],
                                 ValueError, "X has 0 features, but .* is expecting 2"),
    "chain: a sequence of 0 tokens": ("chain", "0 rows / units / tokens",
                                      lambda X: [X[0], ones((0, 2))], ValueError,
                                      "sequence 1: has no rows"),
    "chain: infinity in a sequence": ("chain", "NaN or infinity",
                                      lambda X: [np.array([[0, np.inf]])], ValueError,
                                      "sequence 0: features contain NaN or infinity"),
    "chain: an empty list": ("chain", "empty lists", lambda X: [], ValueError,
                             "X is an empty list"),
    "chain: one table": ("chain", "wrong container", lambda X: ones((2, 2)), ValueError,
                         "was fitted on a list with one input per example"),
    "matching: more edge features": ("matching", "feature-count mismatch",
                                     lambda X: [(ones((4, 3)), FULL)], ValueError,
                                     "X has 3 features, but .* is expecting 2"),
    "dependency: a second tag set at predict": (
        "dependency", "feature-count mismatch",
        lambda X: [np.column_stack([x, np.zeros((len(x), 2), int)]) for x in X], ValueError,
        r"X has 5 attribute columns per word \(a second tag set\), but .* was fitted on 3 or "
        r"4 attribute columns per word \(no second tag set\)"),
    "tree: more node features": ("tree", "feature-count mismatch",
                                 lambda X: [(ones((2, 3)), np.array([-1, 0]))], ValueError,
                                 "X has 3 features, but .* is expecting 2"),
}
PREDICT_CATALOGUE = [(case, name) for case, spec in PREDICT_CASES.items()
                     for name in SUPPORTED[spec[0]]]


@pytest.fixture(scope="module")
def fitted():
    """Every estimator fitted once on every structure it takes (a few iterations)."""
    models = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for structure, names in SUPPORTED.items():
            X, y = valid(structure)
            for name in names:
                models[structure, name] = make_estimator(name, structure).fit(X, y)
    return models


@pytest.mark.parametrize("case, name", PREDICT_CATALOGUE)
def test_bad_input_at_predict(case, name, fitted):
    structure, _, build, error, match = PREDICT_CASES[case]
    X, _ = valid(structure)
    with pytest.raises(error, match=match):
        fitted[structure, name].predict(build(X))


# ----------------------------------------------------------- refused combinations
UNSUPPORTED = {  # (estimator, structure): why it cannot learn it
    ("EGCRF", "matching"): (UnsupportedOperation, "MatchingStructure does not support marginals"),
    ("EGStructuredSVM", "matching"): (UnsupportedOperation, "does not support marginals"),
    ("EGCRF", "mincut"): (UnsupportedOperation, "MinCutStructure does not support marginals"),
    ("EGStructuredSVM", "mincut"): (UnsupportedOperation, "does not support marginals"),
    ("DualExtragradientMatcher", "dependency"): (
        UnsupportedOperation, "DependencyTreeStructure does not support feature_bounds"),
    ("DualExtragradientMatcher", "sibling_dependency"): (
        UnsupportedOperation, "SiblingDependencyStructure does not support feature_bounds"),
    ("DualExtragradientMatcher", "cfg"): (
        UnsupportedOperation, "WeightedCFGStructure does not support feature_bounds"),
    ("DualExtragradientMatcher", "semimarkov"): (
        UnsupportedOperation, "SemiMarkovStructure does not support feature_bounds"),
    ("StructuredPerceptron", "mincut"): (
        ValueError, "MinCutStructure needs some weights non-negative .* cannot keep; use L1M3N"),
}


@pytest.mark.parametrize("name, structure", list(UNSUPPORTED))
def test_unsupported_structures_are_refused_before_any_work(name, structure, no_solver):
    error, match = UNSUPPORTED[name, structure]
    with pytest.raises(error, match=match):
        make_estimator(name, structure).fit(*valid(structure))


def test_chains_in_the_euclidean_extragradient_name_the_setting_that_works(no_solver):
    with pytest.raises(ValueError, match="use geometry='entropic' with a finite radius"):
        DualExtragradientMatcher(structure="chain", geometry="euclidean").fit(*valid("chain"))
    with pytest.raises(ValueError, match="geometry='auto' takes 'entropic' for ChainStructure"):
        DualExtragradientMatcher(structure="chain").fit(*valid("chain"))
    with pytest.raises(ValueError, match="geometry='entropic' needs a finite radius"):
        DualExtragradientMatcher(structure="chain", geometry="entropic").fit(*valid("chain"))


def test_eg_path_without_values_of_C(no_solver):
    with pytest.raises(ValueError, match="eg_path: Cs holds no value of C; pass at least one"):
        eg_path(EGCRF(), *valid("multiclass"), [])


# ------------------------------------------------------------ documented behaviour
@pytest.mark.parametrize("name", STRUCTURED)
@pytest.mark.parametrize("sparse", [False, True])
def test_sequences_without_feature_columns_train_the_transitions(name, sparse):
    """0 token features: the chain learns its transitions only (every estimator alike)."""
    empty = sp.csr_matrix if sparse else np.zeros
    X = [empty((3, 0)), empty((2, 0)), empty((4, 0))]
    y = [np.array([0, 1, 0]), np.array([0, 1]), np.array([0, 1, 0, 1])]
    model = make_estimator(name, "chain").set_params(max_iter=30)
    if name == "StructuredPerceptron":  # the last iterate of a converged run fits the data
        model.set_params(average=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    assert model.coef_.shape == (2, 0) and model.n_features_in_ == 0
    assert np.isfinite(model.weights_).all()
    # start with 0, then alternate: all there is to learn, and the transitions learn it
    assert model.transition_[0, 1] > model.transition_[0, 0]
    assert [p.tolist() for p in model.predict(X)] == [p.tolist() for p in y]


@pytest.mark.parametrize("name", STRUCTURED)
def test_trees_without_feature_columns_train_the_transitions(name):
    X = [(np.zeros((3, 0)), np.array([-1, 0, 0])), (np.zeros((2, 0)), np.array([-1, 0]))]
    y = [np.array([0, 1, 1]), np.array([0, 1])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = make_estimator(name, "tree").set_params(max_iter=30).fit(X, y)
    assert model.n_features_in_ == 0 and np.isfinite(model.weights_).all()
    assert [p.tolist() for p in model.predict(X)] == [p.tolist() for p in y]


@pytest.mark.parametrize("name", SUPPORTED["matching"])
@pytest.mark.parametrize("sparse", [False, True])
def test_matchings_without_edge_features_have_no_weights(name, sparse):
    """0 edge features: nothing to learn; empty weights, every edge scores 0 (no NaN)."""
    empty = sp.csr_matrix if sparse else np.zeros
    X = [(empty((4, 0)), FULL), (empty((4, 0)), FULL)]
    y = [np.array([1, 0, 0, 1]), np.array([0, 1, 1, 0])]
    model = make_estimator(name, "matching").fit(X, y)
    assert model.weights_.shape == (0,)
    assert np.all(model.decision_function(X)[0] == 0.0)
    assert 0.0 <= model.score(X, y) <= 1.0


@pytest.mark.parametrize("name", SUPPORTED["mincut"])
def test_mincuts_without_node_or_edge_features(name):
    X, y = valid("mincut")
    for graphs in ([(np.zeros((3, 0)), PATH, g[2]) for g in X],
                   [(g[0], PATH, np.zeros((2, 0))) for g in X]):
        model = make_estimator(name, "mincut").fit(graphs, y)
        assert np.isfinite(model.weights_).all()


@pytest.mark.parametrize("name", SUPPORTED["matching"])
def test_graphs_without_edges_are_accepted(name):
    """A graph with no candidate edge has one output, the empty matching (loss 0)."""
    X, y = valid("matching")
    X = X + [(np.zeros((0, 2)), np.zeros((0, 2), dtype=int))]
    y = y + [np.zeros(0, dtype=int)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = make_estimator(name, "matching").fit(X, y)
    assert np.isfinite(model.weights_).all()
    assert model.predict(X)[-1].shape == (0,)


@pytest.mark.parametrize("structure", ["matching", "mincut"])
def test_binary_targets_of_one_value_are_valid_outputs(structure):
    """All-zero targets are an output like any other (the empty matching, one side of a cut)."""
    X, y = valid(structure)
    for name in SUPPORTED[structure]:
        model = make_estimator(name, structure).fit(X, [np.zeros_like(t) for t in y])
        assert np.isfinite(model.weights_).all()


@pytest.mark.parametrize("structure", ["multiclass", "chain", "tree"])
def test_labels_unseen_in_training_count_as_wrong(structure, fitted):
    X, y = valid(structure)
    if structure == "multiclass":
        y_new, n_units, n_unseen = np.r_[y[:-1], 7], 6, 1
    else:
        y_new, n_units, n_unseen = [np.r_[y[0][:-1], 9], y[1]], 5, 1
    for name in SUPPORTED[structure]:
        model = fitted[structure, name]
        predicted = model.predict(X)
        correct = (np.asarray(predicted) == np.asarray(y_new)).sum() if structure == "multiclass" \
            else sum(int((p == t).sum()) for p, t in zip(predicted, y_new))
        assert model.score(X, y_new) == pytest.approx(correct / n_units)
        assert correct <= n_units - n_unseen


# ------------------------------------------------------- no crash of the interpreter
RISKY = """
import warnings
import numpy as np, scipy.sparse as sp
warnings.simplefilter("ignore")
from test_bad_input import STRUCTURED, SUPPORTED, FULL, PATH, make_estimator
from sklearn_struct.structures.chain import _kernels as k

zeros, csr = np.zeros, sp.csr_matrix
chain_y = [np.array([0, 1, 0]), np.array([1, 0])]
inputs = {
    "chain": [[zeros((3, 0)), zeros((2, 0))], [csr((3, 0)), csr((2, 0))],
              [csr((3, 2)), csr(np.eye(2))], [zeros((3, 0)), csr((2, 0))]],
    "tree": [[(zeros((3, 0)), np.array([-1, 0, 0])), (csr((2, 0)), np.array([-1, 0]))]],
    "matching": [[(zeros((4, 0)), FULL), (csr((4, 0)), FULL)],
                 [(csr((4, 2)), FULL), (zeros((0, 2)), zeros((0, 2), dtype=int))]],
    "mincut": [[(zeros((3, 0)), PATH, zeros((2, 0))), (csr((3, 0)), PATH, csr((2, 0)))]],
}
targets = {"chain": chain_y, "tree": [np.array([0, 1, 1]), np.array([0, 1])],
           "matching": [np.array([1, 0, 0, 1]), np.array([0, 1, 1, 0])],
           "mincut": [np.array([0, 1, 1]), np.array([1, 0, 0])]}
n_fits = 0
for structure, data_sets in inputs.items():
    for X in data_sets:
        y = targets[structure][:len(X)]
        if structure == "matching" and X[1][0].shape[0] == 0:  # a graph without edges
            y = [targets[structure][0], np.zeros(0, dtype=int)]
        for name in SUPPORTED[structure]:
            model = make_estimator(name, structure).fit(X, y)
            model.predict(X)
            assert np.isfinite(model.weights_).all(), (structure, name)
            n_fits += 1
# the numba chain kernels on sequences of 0 tokens
K = 3
for T in (0, 1):
    node = np.zeros((T, K))
    log_z = k.chain_forward_backward(node, zeros((K, K)), zeros(K), zeros(K), zeros((T, K)),
                                     zeros((K, K)))
    best = k.chain_viterbi(node, zeros((K, K)), zeros(K), zeros(K), zeros(T, dtype=np.int64))
    assert np.isfinite(log_z) and np.isfinite(best)
print("clean exit after", n_fits, "fits")
"""


def test_risky_inputs_do_not_crash_the_interpreter():
    """0 columns, empty CSR matrices and graphs without edges, through every numba kernel."""
    import os

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(sklearn_struct.__file__)), os.path.dirname(__file__)]))
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(RISKY)], capture_output=True,
                         text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "clean exit after" in run.stdout


# ------------------------------------------------------- grammars and trees, when built
G = {"nonterminals": ["A", "B", "S"], "terminals": ["a", "b"], "binary_rules": [[2, 0, 1]],
     "lexical_rules": [[0, 0], [1, 1]], "roots": [2]}
#: what is built: (class of input, build, error, message)
BUILD_CASES = {
    "Grammar: a binary rule of 2 ids": (
        "grammar rules of the wrong shape", lambda: Grammar(**{**G, "binary_rules": [[0, 0]]}),
        ValueError, r"binary_rules: expected an \(n, 3\) array of \(A, B, C\) of integer "
        r"ids, got shape \(1, 2\)"),
    "Grammar: binary rules given flat": (  # not reshaped behind the user's back
        "grammar rules of the wrong shape",
        lambda: Grammar(**{**G, "binary_rules": [2, 0, 1, 2, 1, 0]}), ValueError,
        r"binary_rules: expected an \(n, 3\) .* got shape \(6,\)"),
    "Grammar: a lexical rule of 3 ids": (
        "grammar rules of the wrong shape", lambda: Grammar(**{**G, "lexical_rules": [[0, 0, 0]]}),
        ValueError, r"lexical_rules: expected an \(n, 2\)"),
    "Grammar: roots as a table": (
        "grammar rules of the wrong shape", lambda: Grammar(**{**G, "roots": [[2]]}), ValueError,
        "roots: expected a 1-D array of integer ids"),
    "Grammar: float symbol ids": (
        "grammar ids that are not integers",
        lambda: Grammar(**{**G, "binary_rules": [[2.0, 0, 1]]}), TypeError,
        "binary_rules: expected .* got float64"),
    "Grammar: a root out of range": (
        "grammar ids out of range", lambda: Grammar(**{**G, "roots": [5]}), ValueError,
        r"roots: 5 is not a symbol id in 0..2"),
    "Grammar: a negative root": (
        "grammar ids out of range", lambda: Grammar(**{**G, "roots": [-1]}), ValueError,
        r"roots: -1 is not a symbol id in 0..2"),
    "Grammar: a tag out of range": (
        "grammar ids out of range", lambda: Grammar(**{**G, "lexical_rules": [[0, 2]]}),
        ValueError, r"lexical_rules row 0: a = 2 is not a tag id in 0..1"),
    "Grammar: a symbol out of range": (
        "grammar ids out of range", lambda: Grammar(**{**G, "binary_rules": [[2, 0, 3]]}),
        ValueError, r"binary_rules row 0: C = 3 is not a symbol id in 0..2"),
    "Grammar: duplicate nonterminal names": (
        "duplicate names", lambda: Grammar(**{**G, "nonterminals": ["A", "A", "S"]}),
        ValueError, "nonterminals: 'A' is both 0 and 1; names must be distinct"),
    "Grammar: duplicate tag names": (
        "duplicate names", lambda: Grammar(**{**G, "terminals": ["a", "a"]}), ValueError,
        "terminals: 'a' is both 0 and 1"),
    "Grammar: names given as one string": (
        "wrong container", lambda: Grammar(**{**G, "nonterminals": "ABS"}), TypeError,
        "nonterminals must be a sequence of names"),
    "Grammar: a tag that is not a str": (
        "wrong container", lambda: Grammar(**{**G, "terminals": ["a", 1]}), TypeError,
        r"terminals\[1\]: expected a name \(str\), got int"),
    "Tree: an int child": (
        "malformed trees", lambda: Tree("S", [Tree("A", ["w1"]), 3]), TypeError,
        r"Tree 'S': child 1 is of type int; expected a Tree or a word \(str\)"),
    "Tree: an int word": (
        "malformed trees", lambda: Tree("A", [1]), TypeError, "Tree 'A': child 0 is of type int"),
    "Tree: words and constituents mixed": (
        "malformed trees", lambda: Tree("S", ["w1", Tree("A", ["w2"])]), ValueError,
        "Tree 'S' mixes words and constituents"),
    "Tree: an int label": (
        "malformed trees", lambda: Tree(1, ["w"]), TypeError, "the label must be a str, got int"),
    "Tree: children given as one string": (
        "malformed trees", lambda: Tree("A", "w"), TypeError,
        "children must be a list of Trees or one word"),
    "Tree.fromstring: 3,000 nested brackets": (
        "nesting too deep", lambda: Tree.fromstring("(S " * 3000 + "(A a)" + ")" * 3000),
        ValueError, "<string>: tree 1: brackets nested deeper than 300 levels"),
}


@pytest.mark.parametrize("case", list(BUILD_CASES))
def test_bad_grammars_and_trees_are_refused_when_built(case):
    _, build, error, match = BUILD_CASES[case]
    with pytest.raises(error, match=match):
        build()


# ------------------------------------------------------------------- files and commands
LINE = "{}\t{}\t_\t_\t_\t_\t{}\tdep\t_\t_\n"
#: (loader, class of input, file content, error, message after the file's path)
FILE_CASES = {
    "load_conll: a token line with a column less": (
        load_conll, "malformed lines", b"EU NNP B-ORG\nrejects VBZ\n", ValueError,
        r", line 2: expected 3 columns, got 2: 'rejects VBZ'"),
    "load_conll: bytes that are not UTF-8": (
        load_conll, "undecodable bytes", b"EU NNP B-ORG\n\xff\xfe x y\n", ValueError,
        ", line 2: not valid utf-8 text"),
    "load_conllu: 9 columns": (
        load_conllu, "malformed lines", LINE.format(1, "He", 0)[:-3].encode() + b"\n",
        ValueError, ", line 1: expected 10 tab-separated columns, got 9"),
    "load_conllu: a superscript head": (
        load_conllu, "malformed lines",
        (LINE.format(1, "He", 0) + LINE.format(2, "runs", "\u00b2")).encode(), ValueError,
        ", line 2: head '\u00b2' is not an integer"),
    "load_conllu: a superscript id": (
        load_conllu, "malformed lines", LINE.format("\u00b9", "He", 0).encode(), ValueError,
        ", line 1: word id '\u00b9' where 1 was expected"),
    "load_conllu: a negative id": (
        load_conllu, "malformed lines",
        (LINE.format(1, "He", 0) + LINE.format(-3, "x", 1) + LINE.format(2, "runs", 1)).encode(),
        ValueError, ", line 2: word id '-3' where 2 was expected"),
    "load_conllu: heads with a cycle": (
        load_conllu, "invalid outputs", (LINE.format(1, "a", 2) + LINE.format(2, "b", 1)).encode(),
        ValueError, ", line 1: the heads form a cycle through word 1"),
    "load_ptb: binary garbage": (
        load_ptb, "undecodable bytes", b"( (S (NN a)) )\n\x89PNG\r\n\x1a\n\xff\xfe", ValueError,
        ", line 2: not valid utf-8 text"),
    "load_ptb: an unclosed tree": (
        load_ptb, "malformed lines", b"( (S (NN a)) )\n(S (NP (DT a))\n", ValueError,
        ": line 2: unbalanced brackets"),
    "load_ptb: 3,000 nested brackets": (
        load_ptb, "nesting too deep", b"(S " * 3000 + b"(A a)" + b")" * 3000, ValueError,
        ": line 1: tree 1: brackets nested deeper than 300 levels"),
    "load_cachopo_text: a line without a tab": (
        load_cachopo_text, "malformed lines", b"course\tlectur\nfaculty professor\n",
        ValueError, ", line 2: expected 'LABEL<TAB>text' \\(exactly one tab\\), found 0 tabs"),
}


@pytest.mark.parametrize("case", list(FILE_CASES))
def test_bad_files_name_the_file_and_line(case, tmp_path):
    load, _, content, error, match = FILE_CASES[case]
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    with pytest.raises(error, match=re.escape(str(path)) + match):
        load(path)


#: (command line, class of input, message after "sklearn-struct COMMAND: error: ")
COMMAND_CASES = {
    "learn: a model in a missing folder": (
        ["learn", "{train}", "-o", "{tmp}/missing/m.joblib"], "unwritable output",
        "-o {tmp}/missing/m.joblib: the folder '{tmp}/missing' does not exist"),
    "learn: a folder as the model": (
        ["learn", "{train}", "-o", "{tmp}"], "unwritable output",
        "-o {tmp}: is a folder; expected a model file name"),
    "learn: binary garbage": (
        ["learn", "{garbage}", "-o", "{tmp}/m.joblib"], "undecodable bytes",
        "{garbage}, line 1: not valid utf-8 text"),
    "learn: a line with a column less": (
        ["learn", "{ragged}", "-o", "{tmp}/m.npz"], "malformed lines",
        "{ragged}, line 2: expected 3 columns like the first token line, got 2"),
    "learn --format conllu: a label missing ('_')": (
        ["learn", "{no_upos}", "--format", "conllu", "-o", "{tmp}/m.npz"],
        "missing annotations (CoNLL-U)", "{no_upos}, line 2: no UPOS ('_') to learn from"),
    "learn --label head: two roots": (
        ["learn", "{two_roots}", "--format", "conllu", "--label", "head", "-o", "{tmp}/m.npz"],
        "invalid trees (CoNLL-U)",
        "{two_roots}, line 3: words 1 and 3 both have head 0; a dependency tree has one root"),
    "learn --label head: a cycle": (
        ["learn", "{cycle}", "--format", "conllu", "--label", "head", "-o", "{tmp}/m.npz"],
        "invalid trees (CoNLL-U)", "{cycle}, line 1: HEAD: the heads form a cycle through "
        "word 1"),
    "learn --label head: no projective sentence": (
        ["learn", "{crossing}", "--format", "conllu", "--label", "head", "-o", "{tmp}/m.npz"],
        "invalid trees (CoNLL-U)",
        "{crossing}: no projective sentence to learn from (none of its 1 sentences is "
        "projective, and the parser learns projective trees only); add --non-projective"),
    "tag: a pickled model file": (
        ["tag", "{incomplete}", "{train}"], "pickles are never opened",
        "{incomplete}: not a model file written by 'sklearn-struct learn' (a pickle"),
    "dump: a pickled model file": (
        ["dump", "{incomplete}"], "pickles are never opened",
        "{incomplete}: not a model file written by 'sklearn-struct learn' (a pickle"),
    "tag: a file that is no model": (
        ["tag", "{train}", "{train}"], "not a model file",
        "{train}: not a model file written by 'sklearn-struct learn'"),
    "tag: a truncated model file": (
        ["tag", "{truncated}", "{train}"], "model files: truncated",
        "{truncated}: not a model file written by 'sklearn-struct learn'"),
    "dump: a model file of another layout": (
        ["dump", "{other_layout}"], "model files: of another version",
        "{other_layout}: a model file of layout 99"),
    "dump: a class outside the allowed ones": (
        ["dump", "{foreign_class}"], "model files: damaged",
        "{foreign_class}: a damaged model file (it names the class 'Popen'"),
    "tag: a header nested 100,000 deep": (
        ["tag", "{deep}", "{train}"], "model files: hostile",
        "{deep}: a damaged model file (its header is nested deeper than 32 levels)"),
    "tag: a state key that shadows a method": (
        ["tag", "{shadow}", "{train}"], "model files: hostile",
        "{shadow}: a damaged model file (the state of a EGCRF holds 'predict'"),
    "tag: an estimator's state {}": (
        ["tag", "{empty_state}", "{train}"], "model files: incomplete",
        "{empty_state}: a damaged model file (the state of a EGCRF has no "),
    "dump: a structure without a parameter": (
        ["dump", "{no_parameter}"], "model files: incomplete",
        "{no_parameter}: a damaged model file (the state of a ChainStructure has no start_end"),
    "tag: a file with a column less than the model's": (
        ["tag", "{model}", "{one_column}"], "malformed lines",
        "{one_column}, line 1: 1 column, but the model was learnt on 2 attribute columns"),
    "eval: another tokenisation": (
        ["eval", "{conllu}", "{retokenised}"], "malformed lines",
        "{retokenised}, line 1: word 'A' where {conllu}, line 1 has 'The'"),
    "eval: one CoNLL-U file": (
        ["eval", "{conllu}"], "missing files",
        "CoNLL-U is scored against its gold file: give the gold file and the system's"),
}

CONLLU_LINE = "{}\t{}\t{}\t{}\t_\t_\t{}\tdep\t_\t_\n"


def _conllu(*words):
    return "".join(CONLLU_LINE.format(k + 1, form, form.lower(), upos, head)
                   for k, (form, upos, head) in enumerate(words)) + "\n"


@pytest.fixture(scope="module")
def command_files(tmp_path_factory):
    """The files the command cases read: inputs, and a model with damaged copies."""
    tmp = tmp_path_factory.mktemp("commands")
    files = {"tmp": tmp}
    texts = {
        "train": "The DT B-NP\ncat NN I-NP\n\nA DT B-NP\n",
        "ragged": "The DT B-NP\ncat NN\n", "one_column": "The\ncat\n",
        "conllu": _conllu(("The", "DET", 2), ("cat", "NOUN", 0)),
        "retokenised": _conllu(("A", "DET", 2), ("cat", "NOUN", 0)),
        "no_upos": _conllu(("The", "DET", 2), ("cat", "_", 0)),
        "two_roots": _conllu(("a", "X", 0), ("b", "X", 1), ("c", "X", 0)),
        "cycle": _conllu(("a", "X", 2), ("b", "X", 1)),
        "crossing": _conllu(("a", "X", 3), ("b", "X", 4), ("c", "X", 0), ("d", "X", 3))}
    for name, text in texts.items():
        files[name] = tmp / (f"{name}.txt" if name in ("train", "ragged", "one_column")
                             else f"{name}.conllu")
        files[name].write_text(text)
    files["garbage"] = tmp / "garbage.txt"
    files["garbage"].write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    files["incomplete"] = tmp / "m.joblib"
    joblib.dump({"sklearn_struct_model": MODEL_FORMAT, "version": "0", "input": {},
                 "template": "window", "window": 2, "label_kind": "tokens"},
                files["incomplete"])
    files["model"] = tmp / "model.npz"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cli_main(["learn", str(files["train"]), "-o", str(files["model"]),
                         "--max-iter", "1"]) == 0
    with np.load(files["model"], allow_pickle=False) as archive:
        arrays = dict(archive)
    header_text = str(arrays.pop("header"))
    state = ("objects", "estimator", "state")
    edits = {"other_layout": (("sklearn_struct_model",), 99),
             "foreign_class": (("objects", "estimator", "__object__"), "Popen"),
             "shadow": (state + ("predict",), 1), "empty_state": (state, {})}
    for name, (path, value) in edits.items():
        header = json.loads(header_text)
        parent = header
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = value
        files[name] = _model_copy(tmp / f"{name}.npz", json.dumps(header), arrays)
    header = json.loads(header_text)
    del header["objects"]["estimator"]["state"]["structure_"]["state"]["start_end"]
    files["no_parameter"] = _model_copy(tmp / "no_parameter.npz", json.dumps(header), arrays)
    files["deep"] = _model_copy(tmp / "deep.npz", '{"sklearn_struct_model": 2, "objects": '
                                + "[" * 100_000 + "]" * 100_000 + "}", {})
    files["truncated"] = tmp / "truncated.npz"
    files["truncated"].write_bytes(files["model"].read_bytes()[:200])
    return files


def _model_copy(path, header_text, arrays):
    with open(path, "wb") as handle:
        np.savez(handle, header=np.array(header_text), **arrays)
    return path


@pytest.mark.parametrize("case", list(COMMAND_CASES))
def test_bad_command_inputs_are_one_line_errors(case, command_files, capsys):
    args, _, message = COMMAND_CASES[case]
    capsys.readouterr()
    status = cli_main([arg.format(**command_files) for arg in args])
    captured = capsys.readouterr()
    assert status == 2 and captured.out == ""  # nothing read, trained or written first
    command = args[0]
    assert captured.err.startswith(f"sklearn-struct {command}: error: "
                                   f"{message.format(**command_files)}")
    assert captured.err.count("\n") == 1


# ------------------------------------------------------------ k-best outputs and samples
#: the structures with a dynamic program (k-best outputs, and samples of a CRF)
DRAW_STRUCTURES = ("multiclass", "chain", "tree", "dependency", "sibling_dependency", "cfg")
#: every output of each example of ``valid(structure)``: (2 labels) ** units, 3 classes,
#: 7 and 2 projective trees (first or second order), the grammar's 3 and 1 parses
ALL_OUTPUTS = {"multiclass": [3] * 6, "chain": [8, 4], "tree": [8, 4], "dependency": [7, 2],
               "sibling_dependency": [7, 2], "cfg": [3, 1]}
#: (method, arguments, class of input, error, message); error None: accepted, result checked
DRAW_CASES = {
    "predict_k_best: k=0": ("predict_k_best", dict(k=0), "k or n_samples below 1", ValueError,
                            r"\.predict_k_best: k must be at least 1, got 0\."),
    "predict_k_best: k=-1": ("predict_k_best", dict(k=-1), "k or n_samples below 1", ValueError,
                             r"\.predict_k_best: k must be at least 1, got -1\."),
    "predict_k_best: k=2.0": ("predict_k_best", dict(k=2.0), "k or n_samples not an integer",
                              TypeError, r"\.predict_k_best: k must be an integer, got 2\.0\."),
    "predict_k_best: k=True": ("predict_k_best", dict(k=True), "k or n_samples not an integer",
                               TypeError, r"\.predict_k_best: k must be an integer, got True"),
    "predict_k_best: k='2'": ("predict_k_best", dict(k="2"), "k or n_samples not an integer",
                              TypeError, r"\.predict_k_best: k must be an integer, got '2'"),
    "predict_k_best: k=None": ("predict_k_best", dict(k=None), "k or n_samples not an integer",
                               TypeError, r"\.predict_k_best: k must be an integer, got None"),
    "predict_k_best: k=np.int64(2)": ("predict_k_best", dict(k=np.int64(2)),
                                      "numpy integers", None, 2),
    "predict_k_best: k=10**6": ("predict_k_best", dict(k=10**6), "k beyond the outputs", None,
                                "all"),
    "predict_k_best: k=10**30": ("predict_k_best", dict(k=10**30), "k beyond the outputs",
                                 None, "all"),
    "sample_y: n_samples=0": ("sample_y", dict(n_samples=0), "k or n_samples below 1",
                              ValueError, r"EGCRF\.sample_y: n_samples must be at least 1, got 0"),
    "sample_y: n_samples=-3": ("sample_y", dict(n_samples=-3), "k or n_samples below 1",
                               ValueError, r"EGCRF\.sample_y: n_samples must be at least 1"),
    "sample_y: n_samples=2.0": ("sample_y", dict(n_samples=2.0), "k or n_samples not an integer",
                                TypeError, r"EGCRF\.sample_y: n_samples must be an integer, "
                                r"got 2\.0"),
    "sample_y: n_samples=True": ("sample_y", dict(n_samples=True),
                                 "k or n_samples not an integer", TypeError,
                                 r"EGCRF\.sample_y: n_samples must be an integer, got True"),
    "sample_y: n_samples='2'": ("sample_y", dict(n_samples="2"), "k or n_samples not an integer",
                                TypeError, r"EGCRF\.sample_y: n_samples must be an integer, "
                                r"got '2'"),
    "sample_y: n_samples=None": ("sample_y", dict(n_samples=None),
                                 "k or n_samples not an integer", TypeError,
                                 r"EGCRF\.sample_y: n_samples must be an integer, got None"),
    "sample_y: random_state='a'": ("sample_y", dict(n_samples=2, random_state="a"),
                                   "bad random_state", ValueError,
                                   r"EGCRF\.sample_y: random_state must be None, an int in "
                                   r"\[0, 2\*\*32 - 1\] or a numpy RandomState, got 'a'"),
    "sample_y: random_state=-1": ("sample_y", dict(n_samples=2, random_state=-1),
                                  "bad random_state", ValueError,
                                  r"EGCRF\.sample_y: random_state must be .*, got -1 \(Seed"),
    "sample_y: random_state=2.5": ("sample_y", dict(n_samples=2, random_state=2.5),
                                   "bad random_state", ValueError,
                                   r"EGCRF\.sample_y: random_state must be .*, got 2\.5"),
    "sample_y: n_samples=np.int32(2)": ("sample_y", dict(n_samples=np.int32(2)),
                                        "numpy integers", None, 2),
    "sample_y: random_state=RandomState(0)": (
        "sample_y", dict(n_samples=3, random_state=np.random.RandomState(0)),
        "a RandomState as random_state", None, 3),
}
DRAW_CATALOGUE = [(case, structure, name) for case, spec in DRAW_CASES.items()
                  for structure in DRAW_STRUCTURES for name in SUPPORTED[structure]
                  if name in STRUCTURED and (spec[0] == "predict_k_best" or name == "EGCRF")]
#: the other pairs: (method, estimator, structure, error, message)
DRAW_REFUSED = [
    *[("predict_k_best", name, structure, UnsupportedOperation,
       rf"\w+Structure does not support k_best \(needed by {name}\.predict_k_best\)")
      for structure in ("matching", "mincut") for name in SUPPORTED[structure]],
    *[("predict_k_best(return_proba=True)", name, "chain", ValueError,
       rf"{name}\.predict_k_best: return_proba=True needs a probabilistic model")
      for name in STRUCTURED if name != "EGCRF"],
    *[("sample_y", name, "chain", AttributeError, f"'{name}' has no attribute 'sample_y'")
      for name in STRUCTURED if name != "EGCRF"],
]


def _entered(*args, **kwargs):
    raise AssertionError("part scores were computed: the argument was not refused before any "
                         "work")


@pytest.mark.parametrize("case, structure, name", DRAW_CATALOGUE)
def test_k_best_and_samples(case, structure, name, fitted, monkeypatch):
    method, arguments, _, error, expected = DRAW_CASES[case]
    model = fitted[structure, name]
    X, _ = valid(structure)
    flat = structure == "multiclass"
    if error is not None:
        monkeypatch.setattr(model, "_part_scores", _entered)
        with pytest.raises(error, match=expected):
            getattr(model, method)(X, **arguments)
        return
    if "random_state" in arguments:  # a generator of its own
        arguments = dict(arguments, random_state=np.random.RandomState(0))
    result = getattr(model, method)(X, **arguments)
    outputs = result[0] if method == "predict_k_best" else result
    counts = [outputs.shape[1]] * len(X) if flat else [len(o) for o in outputs]
    if expected == "all":  # every output of every example, best first, each once
        assert counts == ALL_OUTPUTS[structure]
        scores = result[1]
        assert all(np.all(np.diff(s) <= 1e-12) for s in scores)
        if not flat:
            assert all(len({str(o) if isinstance(o, Tree) else repr(np.asarray(o).tolist())
                            for o in example}) == len(example) for example in outputs)
    else:
        assert counts == [min(expected, n) if method == "predict_k_best" else expected
                          for n in ALL_OUTPUTS[structure]]
    predicted = model.predict(X)
    if method == "predict_k_best":  # the first is predict's
        firsts = outputs[:, 0] if flat else [o[0] for o in outputs]
        for first, prediction in zip(firsts, predicted):
            assert str(first) == str(prediction) if not hasattr(first, "shape") \
                else np.array_equal(first, prediction)
    elif "random_state" in arguments:  # the same draws from the same seed
        again = model.sample_y(X, n_samples=3, random_state=np.random.RandomState(0))
        assert str(again) == str(outputs) if flat else all(
            str(a) == str(b) for a, b in zip(again, outputs))


@pytest.mark.parametrize("method, name, structure, error, match", DRAW_REFUSED)
def test_k_best_and_samples_refused(method, name, structure, error, match, fitted,
                                    monkeypatch):
    model = fitted[structure, name]
    monkeypatch.setattr(model, "_part_scores", _entered)
    X, _ = valid(structure)
    with pytest.raises(error, match=match):
        if method == "predict_k_best(return_proba=True)":
            model.predict_k_best(X, 2, return_proba=True)
        elif method == "predict_k_best":
            model.predict_k_best(X, 2)
        else:
            model.sample_y(X, n_samples=2)


# --------------------------------------------------------------------- partial labels
PARTIAL = "partial labels are learnt by the fit of EGCRF, EGStructuredSVM and StructuredPerceptron"
LEARNERS = ("EGCRF", "EGStructuredSVM", "StructuredPerceptron")
SEMIMARKOV_Y = [["B-X", "I-X", "O"], ["O", "B-X"]]
#: (structure, y, estimators (name, parameters), error, message); error None: accepted
PARTIAL_LABEL_CASES = {
    "chain: an empty set": (
        None, [[0, set(), 0], [1, 1]], LEARNERS, ValueError,
        r"y\[0\]: token 1 has an empty set of allowed labels; give at least one label, or "
        "None"),
    "chain: a set mixing types": (
        None, [[0, {0, "b"}, 0], [1, 1]], LEARNERS, TypeError,
        "labels mix types: example 0 has labels of types number and str"),
    "chain: every token unknown in every sequence": (
        None, [[None] * 3, [None] * 2], LEARNERS, ValueError,
        r"y holds no label: every entry of every example is None \(unknown\)"),
    "chain: a set naming a label never seen": (
        None, [[0, {0, 2}, 0], [1, 1]], LEARNERS, None, [0, 1, 2]),
    "chain: a set of one label": (
        None, [[0, {1}, 0], [1, frozenset([1])]], LEARNERS, None, [0, 1]),
    "chain: partial labels to solver='batch'": (
        None, [[0, None, 0], [1, 1]], (("EGCRF", {"solver": "batch"}),
                                       ("EGStructuredSVM", {"solver": "batch"}),
                                       ("EGStructuredSVM", {"solver": "working_set"})),
        ValueError, r"partial labels \(None or sets of labels in y\) are learnt with "
        r"solver='online' only; got solver='(batch|working_set)'"),
    "chain: partial labels to a learner of whole outputs": (
        None, [[0, None, 0], [1, 1]], ("L1M3N", "DualExtragradientMatcher"), ValueError,
        rf"y\[0\]: token 1 has no single label \(unknown: None\); {PARTIAL} only"),
    "chain: a set to a learner of whole outputs": (
        None, [[0, {0, 1}, 0], [1, 1]], ("L1M3N", "DualExtragradientMatcher"), ValueError,
        r"y\[0\]: token 1 has no single label \(a set of allowed labels: \{0, 1\}\)"),
    "chain: an empty set to a learner of whole outputs": (
        None, [[0, set(), 0], [1, 1]], ("L1M3N", "DualExtragradientMatcher"), ValueError,
        r"y\[0\]: token 1 has (an empty set of allowed labels|no single label \(an empty set)"),
    "chain: labels no output of a constrained chain obeys": (
        lambda: ChainStructure(allowed_transitions="IOB2", constrain_training=True),
        [["O", "I-X", None], ["B-X", "O"]], LEARNERS, ValueError,
        r"y\[0\]: no output of example 0 is consistent with its labels: those known up to "
        r"token 1"),
    "tree: a node unknown": (
        "tree", [[0, None, 0], [1, 1]], STRUCTURED, ValueError,
        r"y\[0\]: node 1 has no single label"),
    "dependency: a head unknown": (
        "dependency", [[0, None, 1], [2, 0]], ("EGCRF", "EGStructuredSVM", "L1M3N",
                                               "StructuredPerceptron"), ValueError,
        r"y\[0\]: expected a 1-D array of integer heads, got \[0, None, 1\]"),
    "sibling_dependency: a set of heads": (
        "sibling_dependency", [[0, {1, 3}, 1], [2, 0]], ("EGCRF", "EGStructuredSVM", "L1M3N",
                                                         "StructuredPerceptron"), ValueError,
        r"y\[0\]: expected a 1-D array of integer heads, got \[0, \{1, 3\}, 1\]"),
    "multiclass: a sample unknown": (
        "multiclass", np.array([0, None, 2, 0, 1, 2], dtype=object), STRUCTURED, TypeError,
        r"labels mix types: y\[1\] = None is of type NoneType but y\[0\] = 0 is of type number"),
    "semimarkov: an empty set": (
        lambda: SemiMarkovStructure(), [["B-X", set(), "O"], ["O", "O"]], LEARNERS, ValueError,
        r"y\[0\]: token 1 has an empty set of allowed labels"),
    "semimarkov: every token unknown in every sequence": (
        lambda: SemiMarkovStructure(), [[None] * 3, [None] * 2], LEARNERS, ValueError,
        r"y holds no label: every entry of every example is None"),
    "semimarkov: partial tags under IOB1": (
        lambda: SemiMarkovStructure(scheme="IOB1"), [["I-X", None, "O"], ["O", "O"]], LEARNERS,
        ValueError, r"SemiMarkovStructure\(scheme='IOB1'\): partial labels \(None or sets of "
        r"tags in y\) are not learnt under IOB1.*convert the tags to IOB2"),
}
PARTIAL_LABEL_CATALOGUE = [
    (case, learner if isinstance(learner, str) else learner[0],
     {} if isinstance(learner, str) else learner[1])
    for case, spec in PARTIAL_LABEL_CASES.items() for learner in spec[2]]


def _partial_label_data(structure, y):
    if structure in (None, "tree", "dependency", "sibling_dependency", "multiclass"):
        return valid(structure or "chain")[0], (structure or "chain")
    return [np.ones((len(labels), 2)) for labels in y], structure


@pytest.mark.parametrize("case, name, parameters",
                         [pytest.param(*row, id=f"{row[0]}-{row[1]}-{row[2]}")
                          for row in PARTIAL_LABEL_CATALOGUE])
def test_partial_labels(case, name, parameters, no_solver):
    structure, y, _, error, expected = PARTIAL_LABEL_CASES[case]
    X, structure = _partial_label_data(structure, y)
    if callable(structure):
        model = getattr(sklearn_struct, name)(structure=structure(), max_iter=2)
        if name == "DualExtragradientMatcher":
            model.set_params(geometry="entropic", radius=1.0)
    else:
        model = make_estimator(name, structure)
    model.set_params(**parameters)
    if error is not None:
        with pytest.raises(error, match=expected):
            model.fit(X, y)
        return
    no_solver.undo()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    assert model.classes_.tolist() == expected
    assert all(set(p.tolist()) <= set(expected) for p in model.predict(X))
    assert np.isfinite(model.weights_).all()


# ------------------------------------------------------------------------ partial_fit
#: every estimator with partial_fit, every solver that has it and every memory setting
PARTIAL_FIT_LEARNERS = {
    **{f"{name}(solver={solver!r}, partial_fit_memory={memory!r})":
       (name, dict(solver=solver, partial_fit_memory=memory))
       for name in ("EGCRF", "EGStructuredSVM") for solver in ("online", "batch")
       for memory in (None, 0, 1, 1000)},
    "StructuredPerceptron": ("StructuredPerceptron", {}),
}
CHAIN_X, CHAIN_Y = valid("chain")
CLASSES = [0, 1]
#: (a later call's (X, y, classes) after a first call on the valid chains with CLASSES --
#: None: the first call itself --, class of input, error, message); error None: accepted
PARTIAL_FIT_CASES = {
    "first call without classes": (
        None, (CHAIN_X, CHAIN_Y, None), "partial_fit: classes", ValueError,
        r"\.partial_fit: classes must be passed on the first call to partial_fit"),
    "first call: a label outside classes": (
        None, (CHAIN_X, [[0, 2, 0], [1, 1]], CLASSES), "partial_fit: labels outside classes",
        ValueError, r"\.partial_fit: example 0 \(position 1\) has label 2, which is not among "
        r"the classes \[0, 1\] fixed by the first call"),
    "later call: other classes": (
        "later", (CHAIN_X, CHAIN_Y, [0, 1, 2]), "partial_fit: classes", ValueError,
        r"\.partial_fit: classes=\[0, 1, 2\] is not the same as the classes_ fixed by the "
        r"first call, \[0, 1\]"),
    "later call: a label outside classes": (
        "later", (CHAIN_X, [[0, 1, 0], [1, 5]], None), "partial_fit: labels outside classes",
        ValueError, r"\.partial_fit: example 1 \(position 1\) has label 5, which is not among "
        r"the classes \[0, 1\]"),
    "later call: another feature width": (
        "later", ([np.ones((2, 3))], [[0, 1]], None), "partial_fit: feature-count mismatch",
        ValueError, r"X has 3 features, but .*partial_fit is expecting 2"),
    "later call: an empty chunk": (
        "later", ([], [], None), "partial_fit: empty chunks", ValueError,
        r"\.partial_fit: X is an empty list"),
    "later call: a sequence of 0 tokens": (
        "later", ([np.ones((0, 2))], [[]], None), "partial_fit: empty chunks", ValueError,
        r"sequence 0: has no rows"),
    "later call: a table after sequences": (
        "later", (np.ones((2, 2)), [0, 1], None), "partial_fit: structure change",
        TypeError, r"expected a list of 2-D arrays or sparse matrices \(one per sequence, one "
        r"row per unit\), got a single ndarray of shape \(2, 2\)"),
    "later call: another structure": (
        "structure", (CHAIN_X, CHAIN_Y, None), "partial_fit: structure change", ValueError,
        r"\.partial_fit: structure='tree' is not the structure of the first call "
        r"\(ChainStructure"),
    "later call: partial labels": (
        "later", (CHAIN_X, [[0, None, 0], [1, 1]], None), "partial_fit: partial labels",
        ValueError, rf"y\[0\]: token 1 has no single label \(unknown: None\); {PARTIAL}"),
    "later call: the same classes in another order": (
        "later", (CHAIN_X, CHAIN_Y, [1, 0]), "partial_fit: classes", None, None),
    "later call: a set of one label": (
        "later", (CHAIN_X, [[0, {1}, 0], [1, 1]], None), "partial_fit: partial labels", None,
        None),
}
PARTIAL_FIT_CATALOGUE = [(case, learner) for case in PARTIAL_FIT_CASES
                         for learner in PARTIAL_FIT_LEARNERS]


def _partial_fit_learner(learner):
    name, parameters = PARTIAL_FIT_LEARNERS[learner]
    return getattr(sklearn_struct, name)(max_iter=2, random_state=0, **parameters)


@pytest.mark.parametrize("case, learner", PARTIAL_FIT_CATALOGUE)
def test_partial_fit(case, learner, no_solver):
    when, (X, y, classes), _, error, match = PARTIAL_FIT_CASES[case]
    model = _partial_fit_learner(learner)
    if when is not None:  # a first call that works, then the call of the case
        no_solver.undo()
        model.partial_fit(CHAIN_X, CHAIN_Y, classes=CLASSES)
        weights = model.weights_.copy()
        if when == "structure":
            model.set_params(structure="tree")
    if error is None:  # the same model as the call with the whole labels, the classes omitted
        model.partial_fit(X, y, classes=classes)
        reference = _partial_fit_learner(learner)
        reference.partial_fit(CHAIN_X, CHAIN_Y, classes=CLASSES)
        reference.partial_fit(CHAIN_X, [[0, 1, 0], [1, 1]] if "one label" in case else CHAIN_Y)
        np.testing.assert_array_equal(model.weights_, reference.weights_)
        assert model.classes_.tolist() == CLASSES
        return
    if when is not None:
        no_solver.setattr(sklearn_struct._eg_base, "eg_solve", _entered)
        no_solver.setattr(sklearn_struct.perceptron, "perceptron_solve", _entered)
    with pytest.raises(error, match=match):
        model.partial_fit(X, y, classes=classes)
    if when is not None:  # the model is the first call's
        np.testing.assert_array_equal(model.weights_, weights)
        assert model.classes_.tolist() == CLASSES and model.n_features_in_ == 2


def test_partial_fit_of_the_working_set_solver_is_refused():
    with pytest.raises(AttributeError, match="has no attribute 'partial_fit'"):
        sklearn_struct.EGStructuredSVM(solver="working_set").partial_fit(
            CHAIN_X, CHAIN_Y, classes=CLASSES)


# ------------------------------------------------------- the training cache (EG estimators)
#: (parameters, class of input, error, message): refused by fit before any work
CACHE_CASES = {
    "cache_size=-1": (dict(cache_size=-1), "cache_size out of range", ValueError,
                      r"The 'cache_size' parameter of \w+ must be None or a float in the range "
                      r"\(0.0, inf\). Got -1 instead"),
    "cache_size=0": (dict(cache_size=0), "cache_size out of range", ValueError,
                     r"The 'cache_size' parameter of \w+ must be .* Got 0 instead"),
    "cache_size='big'": (dict(cache_size="big"), "cache_size not a number", ValueError,
                         r"The 'cache_size' parameter of \w+ must be .* Got 'big' instead"),
    "cache_dir=3": (dict(cache_dir=3), "cache_dir not a path", TypeError,
                    r"The 'cache_dir' parameter of \w+ must be None, an instance of 'str' or "
                    r"an instance of 'os.PathLike'. Got 3 instead"),
    "cache_dir a file": (dict(cache_size=1.0, cache_dir="{file}"), "cache_dir not a folder",
                         ValueError, r"cache_dir='.*file' is not a writable folder"),
    "cache_dir a missing folder": (dict(cache_dir="{missing}"), "cache_dir not a folder",
                                   ValueError, r"cache_dir='.*missing' is not a writable "
                                   r"folder \(No such file or directory\)"),
    "cache_size with solver='working_set'": (
        dict(cache_size=10.0, solver="working_set"), "cache_size the solver cannot keep",
        ValueError, r"EGStructuredSVM: cache_size bounds the online solver's feature cache; "
        r"solver='working_set' keeps its whole cache in memory"),
}
CACHE_CATALOGUE = [(case, name, method) for case in CACHE_CASES
                   for name in ("EGCRF", "EGStructuredSVM") for method in ("fit", "partial_fit")
                   if "working_set" not in case or (name, method) == ("EGStructuredSVM", "fit")]


@pytest.mark.parametrize("case, name, method", CACHE_CATALOGUE)
def test_cache_settings(case, name, method, no_solver, tmp_path):
    parameters, _, error, match = CACHE_CASES[case]
    (tmp_path / "file").write_text("")
    parameters = {key: value.format(file=tmp_path / "file", missing=tmp_path / "missing")
                  if isinstance(value, str) and "{" in value else value
                  for key, value in parameters.items()}
    model = getattr(sklearn_struct, name)(max_iter=2, **parameters)
    with pytest.raises(error, match=match):
        if method == "fit":
            model.fit(CHAIN_X, CHAIN_Y)
        else:
            model.partial_fit(CHAIN_X, CHAIN_Y, classes=CLASSES)
    assert not hasattr(model, "weights_")


@pytest.mark.parametrize("name", ["EGCRF", "EGStructuredSVM"])
def test_a_cache_size_too_small_for_one_example_names_it(name, tmp_path):
    """Refused when the cache is built, before the first pass; the scratch folder is gone."""
    X = [np.random.RandomState(0).randint(4, 9, size=(n, 3)) for n in (2, 12, 3)]
    y = [np.arange(len(x)) for x in X]  # every word the head of the next
    structure = DependencyTreeStructure(hash_bits=8)
    one = structure.kernel_data(structure.make_batch(X[1:2]), training=True)
    size = sum(getattr(one, field).nbytes for field in one._fields
               if isinstance(getattr(one, field), np.ndarray)) / 2 ** 20
    model = getattr(sklearn_struct, name)(structure=structure, cache_size=size,
                                          cache_dir=tmp_path, max_iter=2)
    with pytest.raises(ValueError, match=r"cache_size=.* MB is too small for example 1: its "
                                         r"feature cache alone takes"):
        model.fit(X, y)
    assert not hasattr(model, "weights_") and list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------- the summary
def catalogue_summary():
    """Number of cases per class of input and how they are handled (for the issue's note)."""
    rows = collections.Counter()
    for case, name in CATALOGUE:
        rows[CASES[case].kind, f"{CASES[case].error.__name__} before any work"] += 1
    for case, name in PREDICT_CATALOGUE:
        spec = PREDICT_CASES[case]
        error = spec[3] if isinstance(spec[3], type) else spec[3][0]
        rows[spec[1] + " (predict)", f"{error.__name__} before any work"] += 1
    for case, name in GOLD_CATALOGUE:
        rows["invalid outputs (semi-Markov, second order, chain schemes)",
             "ValueError before any work"] += 1
    for case, name in SETTING_CATALOGUE:
        rows["invalid structure settings", f"{SETTING_CASES[case][2].__name__} before any "
             "work"] += 1
    for kind, _, error, _ in BUILD_CASES.values():
        rows[kind + " (built)", f"{error.__name__} when built"] += 1
    for load, kind, _, error, _ in FILE_CASES.values():
        rows[f"{kind} ({load.__name__})", f"{error.__name__} naming file and line"] += 1
    for args, kind, _ in COMMAND_CASES.values():
        rows[f"{kind} (sklearn-struct {args[0]})", "one-line error and exit 2 before any "
             "work"] += 1
    for name, structure in UNSUPPORTED:
        rows["unsupported estimator/structure", f"{UNSUPPORTED[name, structure][0].__name__} "
             "before any work"] += 1
    accepted = "accepted and result checked"
    for case, structure, name in DRAW_CATALOGUE:
        method, _, kind, error, _ = DRAW_CASES[case]
        rows[f"{kind} ({method})",
             accepted if error is None else f"{error.__name__} before any work"] += 1
    for method, _, _, error, _ in DRAW_REFUSED:
        rows["k-best or samples the model cannot give", f"{error.__name__} before any "
             "work"] += 1
    for case, name, _ in PARTIAL_LABEL_CATALOGUE:
        error = PARTIAL_LABEL_CASES[case][3]
        rows["partial labels: " + case.split(": ", 1)[1],
             accepted if error is None else f"{error.__name__} before any work"] += 1
    for case, learner in PARTIAL_FIT_CATALOGUE:
        _, _, kind, error, _ = PARTIAL_FIT_CASES[case]
        rows[kind, accepted if error is None else f"{error.__name__} before any work"] += 1
    rows["partial_fit: the working-set solver", "AttributeError before any work"] += 1
    for case, name, method in CACHE_CATALOGUE:
        _, kind, error, _ = CACHE_CASES[case]
        rows[f"{kind} ({method})", f"{error.__name__} before any work"] += 1
    rows["cache_size too small for one example (fit)", "ValueError before the first "
         "pass"] += 2
    return rows


def outcome_counts():
    """The catalogue's cases by outcome, most first: what the changelog gives."""
    counts = collections.Counter()
    for (_, handling), count in catalogue_summary().items():
        counts[handling] += count
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def test_the_documented_counts_are_the_catalogue_s():
    import pathlib

    changelog = (pathlib.Path(__file__).parents[2] / "doc" / "changelog.rst").read_text()
    text = " ".join(changelog.split())
    total = re.search(r"a catalogue of (\d+) bad inputs", text)
    outcomes = re.search(r"by outcome: ([^)]*)\)", text)
    assert total and outcomes, "the changelog no longer gives the catalogue's counts"
    assert int(total.group(1)) == sum(catalogue_summary().values())
    assert outcomes.group(1).split(", ") == [f"{count} {handling}"
                                             for handling, count in outcome_counts()]


if __name__ == "__main__":
    for (kind, handling), count in sorted(catalogue_summary().items()):
        print(f"| {kind} | {handling} | {count} |")
    print("total", sum(catalogue_summary().values()))
    print("by outcome:", ", ".join(f"{count} {handling}" for handling, count in outcome_counts()))


# ------------------------------------------------ token dicts (sklearn-crfsuite's input)
TOKEN_DICTS = [[{"w": "the", "bias": 1.0}, {"w": "cat", "bias": 1.0}], [{"w": "sat"}]]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", STRUCTURED)
def test_token_dicts_point_to_the_vectorizer(name):
    # sklearn-crfsuite's input format: numpy alone fails with "inhomogeneous shape"
    message = (r"X\[1\] is a sequence of dicts \(token features, the sklearn-crfsuite format\)"
               r".*SequenceDictVectorizer, e.g. make_pipeline\(SequenceDictVectorizer\(\), "
               + name + r"\(\)\)")
    X = [ones((2, 1)), TOKEN_DICTS[1]]
    with pytest.raises(TypeError, match=message):
        make_estimator(name, "chain").fit(X, [["a", "b"], ["a"]])
    estimator = make_estimator(name, "chain")
    with pytest.raises(TypeError, match=r"X\[0\] is a sequence of dicts"):
        estimator.fit(TOKEN_DICTS, [["a", "b"], ["a"]])
    with pytest.raises(TypeError, match=r"X\[0\] is a dict; "):
        estimator.fit(TOKEN_DICTS[0], ["a", "b"])
    fitted = make_estimator(name, "chain").fit([ones((2, 1)), ones((1, 1))], [["a", "b"], ["a"]])
    for method in ("predict", "score"):
        args = (TOKEN_DICTS,) if method == "predict" else (TOKEN_DICTS, [["a", "b"], ["a"]])
        with pytest.raises(TypeError, match=r"X\[0\] is a sequence of dicts"):
            getattr(fitted, method)(*args)


@pytest.mark.parametrize("Estimator", [sklearn_struct.EGCRF, sklearn_struct.EGStructuredSVM,
                                       sklearn_struct.L1M3N, sklearn_struct.StructuredPerceptron])
def test_structure_name_that_needs_arguments_says_how_to_build_it(Estimator):
    with pytest.raises(ValueError, match=r"structure='cfg' cannot be built from its name; "
                                         r"pass WeightedCFGStructure\(Grammar.from_trees"):
        Estimator(structure="cfg").fit([np.ones((2, 2))], [np.array(["a", "b"])])
