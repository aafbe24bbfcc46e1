"""Penn Treebank bracketed trees: reading, cleaning, binarising and back.

A :class:`Tree` is a label and a list of children; a preterminal's only child
is its word (a ``str``).  :func:`load_ptb` reads ``.mrg`` files (trees split
by bracket balance, not by blank lines), :func:`clean_tree` applies the usual
parsing conventions (function tags, indices and ``-NONE-`` elements removed),
:func:`binarize` makes a tree binary with horizontal markovisation and
collapsed unary chains (what a grammar in Chomsky normal form needs), and
:func:`unbinarize` undoes it.
"""

import re
from pathlib import Path

from sklearn.utils import Bunch

from ..structures.grammar import UNARY_JOIN, Tree, read_bracketed
from ._io import read_text

__all__ = ["Tree", "binarize", "clean_tree", "load_ptb", "unbinarize"]

#: Label given to the unlabelled outermost bracket of a treebank tree.
TOP = "TOP"
#: Separator of the intermediate labels that :func:`binarize` creates.
INTERMEDIATE = "|"


def load_ptb(path, *, clean=True):
    """Read a Penn Treebank ``.mrg`` file (plain or gzip) into trees.

    Trees are split by bracket balance, so any layout of lines and blank
    lines works.  The unlabelled outermost bracket becomes the label ``TOP``.

    Parameters
    ----------
    path : str or path-like
        The file (plain text or gzip), UTF-8 (a byte-order mark at its start is
        dropped).
    clean : bool, default=True
        Apply :func:`clean_tree` (function tags, indices, ``-NONE-``).

    Returns
    -------
    data : Bunch
        ``trees`` (list of :class:`Tree`), ``words`` and ``tags`` (lists of
        lists of str, one per tree) and ``lines`` (the line each tree starts on).

    Raises
    ------
    ValueError
        Unbalanced brackets, a malformed tree or bytes that are not UTF-8 text,
        naming the file and line.

    Examples
    --------
    >>> from sklearn_struct.datasets import load_ptb
    >>> data = load_ptb("wsj_sample.mrg.gz")  # doctest: +SKIP
    >>> len(data.trees), data.words[0][:3]  # doctest: +SKIP
    (3914, ['Pierre', 'Vinken', ','])
    """
    path = Path(path)
    text = read_text(path)
    trees, lines = [], []
    depth, start, line = 0, None, 1
    for match in re.finditer(r"\(|\)|\n", text):
        token = match.group()
        if token == "\n":
            line += 1
            continue
        if token == "(":
            if depth == 0:
                start, start_line = match.start(), line
            depth += 1
            continue
        depth -= 1
        if depth < 0:
            raise ValueError(f"{path}: line {line}: ')' without a matching '('.")
        if depth == 0:
            try:
                tree, _ = read_bracketed(text[start:match.end()], f"{path}: line {start_line}",
                                         len(trees) + 1)
            except ValueError as error:
                raise ValueError(str(error)) from None
            if tree.label == "":
                tree.label = TOP
            trees.append(clean_tree(tree) if clean else tree)
            lines.append(start_line)
    if depth != 0:
        raise ValueError(f"{path}: line {start_line}: unbalanced brackets: the tree starting "
                         "here is not closed.")
    if start is None:
        raise ValueError(f"{path}: no tree found.")
    return Bunch(trees=trees, words=[t.leaves() for t in trees], tags=[t.tags() for t in trees],
                 lines=lines)


def _bare_label(label):
    """``NP-SBJ-1`` -> ``NP``, ``PP-LOC=2`` -> ``PP``; ``-NONE-``, ``-LRB-`` kept.

    An annotator's alternative (``ADVP|PRT``) keeps its first label, and ``+``
    becomes ``&``: both characters are the separators of :func:`binarize`.
    """
    if label.startswith("-") and label.endswith("-"):
        return label
    label = re.split(r"[-=|]", label, maxsplit=1)[0] or label
    return label.replace(UNARY_JOIN, "&")


def clean_tree(tree):
    """The tree without function tags, indices and empty elements.

    Drops ``-NONE-`` preterminals and the constituents left empty by that,
    and strips function tags and co-indexing from labels (``NP-SBJ-1`` ->
    ``NP``).  Returns a new tree.

    Parameters
    ----------
    tree : Tree
        A treebank tree.

    Returns
    -------
    tree : Tree
        The cleaned copy.

    Examples
    --------
    >>> from sklearn_struct.datasets import Tree, clean_tree
    >>> print(clean_tree(Tree.fromstring("(S (NP-SBJ-1 (-NONE- *)) (VP-TMP (VB go)))")))
    (S (VP (VB go)))
    """
    cleaned = _clean(tree)
    if cleaned is None:
        raise ValueError(f"the tree has no words once -NONE- elements are removed: {tree}")
    return cleaned


def _clean(tree):
    if tree.is_preterminal():
        return None if tree.label == "-NONE-" else Tree(tree.label, tree.children)
    children = [c for c in (_clean(child) for child in tree.children) if c is not None]
    if not children:
        return None
    return Tree(_bare_label(tree.label), children)


def binarize(tree, markov_order=1, collapse_unary=True):
    """Right-factored binary tree with horizontal markovisation and collapsed unary chains.

    A constituent ``A -> B1 ... Bk`` (``k > 2``) becomes ``A -> B1 A|<B1>``,
    ``A|<B1> -> B2 A|<B1-B2>``, ...: each intermediate label keeps the parent
    and the last ``markov_order`` siblings generated to its left (all of them
    for ``markov_order=None``), so that rules generalise across rare flat
    constituents (Klein & Manning 2003).  A chain of unary constituents above a constituent or a
    preterminal, ``A -> B -> ...``, becomes one label ``A+B``.  Every rule of
    the result is then binary or lexical (a preterminal, possibly collapsed).

    Parameters
    ----------
    tree : Tree
        A (cleaned) tree.
    markov_order : int or None, default=1
        Siblings kept in an intermediate label; ``None`` keeps them all.
    collapse_unary : bool, default=True
        Join unary chains into one label.

    Returns
    -------
    tree : Tree
        The binary copy.

    Examples
    --------
    >>> from sklearn_struct.datasets import Tree, binarize, unbinarize
    >>> tree = Tree.fromstring("(S (NP (DT a) (JJ big) (NN dog)) (VP (VBZ barks)))")
    >>> print(binarize(tree))
    (S (NP (DT a) (NP|<DT> (JJ big) (NN dog))) (VP+VBZ barks))
    >>> unbinarize(binarize(tree)) == tree
    True
    """
    if markov_order is not None and markov_order < 0:
        raise ValueError(f"markov_order must be None or >= 0, got {markov_order}.")
    if tree.is_preterminal():
        return Tree(tree.label, tree.children)
    if len(tree.children) == 1 and collapse_unary:
        child = binarize(tree.children[0], markov_order, collapse_unary)
        return Tree(tree.label + UNARY_JOIN + child.label, child.children)
    children = [binarize(child, markov_order, collapse_unary) for child in tree.children]
    return Tree(tree.label, _factor(tree.label, children, markov_order))


def _factor(parent, children, markov_order, generated=()):
    """Right-factor ``children``; ``generated`` holds the labels of the siblings to the left."""
    if len(children) <= 2:
        return children
    generated = generated + (children[0].label,)
    context = generated if markov_order is None else generated[len(generated) - markov_order:]
    label = f"{parent}{INTERMEDIATE}<{'-'.join(context) if markov_order != 0 else ''}>"
    return [children[0], Tree(label, _factor(parent, children[1:], markov_order, generated))]


def unbinarize(tree):
    """Undo :func:`binarize`: expand ``A+B`` chains, splice intermediate ``A|<...>`` nodes.

    Parameters
    ----------
    tree : Tree
        A tree made by :func:`binarize` (or predicted in its labels).

    Returns
    -------
    tree : Tree
        The n-ary tree.

    Examples
    --------
    >>> from sklearn_struct.datasets import Tree, unbinarize
    >>> print(unbinarize(Tree.fromstring("(S (NP (DT a) (NP|<DT> (JJ big) (NN dog))) (VP+VBZ v))")))
    (S (NP (DT a) (JJ big) (NN dog)) (VP (VBZ v)))
    """
    (node,) = _unbinarize(tree)
    return node


def _unbinarize(tree):
    """The constituents ``tree`` stands for: one, or the spliced children of an intermediate."""
    if tree.is_preterminal():
        children = tree.children
    else:
        children = [node for child in tree.children for node in _unbinarize(child)]
        if _is_intermediate(tree.label):
            return children
    labels = tree.label.split(UNARY_JOIN)
    node = Tree(labels[-1], children)
    for label in reversed(labels[:-1]):
        node = Tree(label, [node])
    return [node]


def _is_intermediate(label):
    return INTERMEDIATE + "<" in label
