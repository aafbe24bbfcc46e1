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

from ._io import read_text

__all__ = ["Tree", "binarize", "clean_tree", "load_ptb", "unbinarize"]

#: Label given to the unlabelled outermost bracket of a treebank tree.
TOP = "TOP"
#: Separators of the labels that :func:`binarize` creates.
UNARY_JOIN = "+"
INTERMEDIATE = "|"
_TOKEN = re.compile(r"\(|\)|[^\s()]+")
#: Deepest nesting read or accepted: the tree methods recurse once or twice per level, and
#: Python stops at 1000 frames (treebank trees stay below 100).
MAX_DEPTH = 300


class Tree:
    """A constituent: a label and its children (``Tree`` objects, or one word for a preterminal).

    Parameters
    ----------
    label : str
        The constituent's label (a part-of-speech tag for a preterminal).
    children : list of Tree or str
        Sub-constituents, or the single word of a preterminal.

    Examples
    --------
    >>> from sklearn_struct.datasets import Tree
    >>> tree = Tree.fromstring("(S (NP (DT the) (NN dog)) (VP (VBZ barks)))")
    >>> tree.leaves(), tree.tags()
    (['the', 'dog', 'barks'], ['DT', 'NN', 'VBZ'])
    >>> sorted(tree.brackets())
    [('NP', 0, 2), ('S', 0, 3), ('VP', 2, 3)]
    """

    __slots__ = ("label", "children")

    def __init__(self, label, children):
        if not isinstance(label, str):
            raise TypeError(f"Tree: the label must be a str, got {type(label).__name__}.")
        if isinstance(children, (str, Tree)) or not hasattr(children, "__iter__"):
            raise TypeError(f"Tree {label!r}: children must be a list of Trees or one word, "
                            f"got {type(children).__name__}.")
        self.label = label
        self.children = list(children)
        error, problem = _children_problem(self)
        if problem:
            raise error(f"Tree {problem}.")

    @classmethod
    def fromstring(cls, text):
        """Parse one bracketed tree.

        Parameters
        ----------
        text : str
            E.g. ``"(S (NP (DT the) (NN dog)) (VP (VBZ barks)))"``.

        Returns
        -------
        tree : Tree
            The tree, labels as written.
        """
        tokens = _TOKEN.findall(text)
        tree, end = _parse(tokens, 0, "<string>", 1)
        if end != len(tokens):
            raise ValueError(f"text after the end of the tree: {' '.join(tokens[end:end + 5])!r}")
        return tree

    def is_preterminal(self):
        """Whether the only child is a word.

        Returns
        -------
        preterminal : bool
            True for a part-of-speech node.
        """
        return len(self.children) == 1 and isinstance(self.children[0], str)

    def leaves(self):
        """The words, left to right.

        Returns
        -------
        words : list of str
            One per preterminal.
        """
        if self.is_preterminal():
            return [self.children[0]]
        return [word for child in self.children for word in child.leaves()]

    def tags(self):
        """The part-of-speech tags, left to right.

        The preterminal labels, or for a unary chain collapsed by
        :func:`binarize` (``VP+VBZ``) its last label.

        Returns
        -------
        tags : list of str
            One per word.
        """
        if self.is_preterminal():
            return [self.label.split(UNARY_JOIN)[-1]]
        return [tag for child in self.children for tag in child.tags()]

    def pos(self):
        """The ``(word, tag)`` pairs, left to right: a parser's input.

        Returns
        -------
        pairs : list of tuple (str, str)
            One per word.
        """
        return list(zip(self.leaves(), self.tags()))

    def brackets(self, start=0):
        """Labelled spans of the constituents above the preterminals.

        Parameters
        ----------
        start : int, default=0
            Position of the tree's first word.

        Returns
        -------
        spans : list of tuple (str, int, int)
            ``(label, start, end)``, words ``start`` to ``end - 1``, children
            before parents.
        """
        if self.is_preterminal():
            return []
        spans, position = [], start
        for child in self.children:
            spans.extend(child.brackets(position))
            position += len(child.leaves())
        spans.append((self.label, start, position))
        return spans

    def __eq__(self, other):
        return (isinstance(other, Tree) and self.label == other.label
                and self.children == other.children)

    def __repr__(self):
        return f"Tree.fromstring({str(self)!r})"

    def __str__(self):
        parts, stack = [], [self]  # no recursion: three frames per level would be too many
        while stack:
            item = stack.pop()
            if isinstance(item, Tree):
                parts.append(f"({item.label}")
                stack.append(")")
                for child in reversed(item.children):
                    stack += [child, " "]
            else:  # a word, a space or a closing bracket
                parts.append(item)
        return "".join(parts)


def _children_problem(node):
    """``(exception class, what is wrong)`` with a node's children (``""`` when nothing)."""
    for k, child in enumerate(node.children):
        if not isinstance(child, (Tree, str)):
            return TypeError, (f"{node.label!r}: child {k} is of type {type(child).__name__}; "
                               "expected a Tree or a word (str)")
    if len(node.children) > 1 and any(isinstance(child, str) for child in node.children):
        return ValueError, f"{node.label!r} mixes words and constituents"
    return None, ""


def tree_problem(tree):
    """What keeps ``tree`` from being a well-formed tree (empty string when nothing).

    Checked without recursion: a node's children (changed since it was built?),
    an empty constituent, nesting beyond ``MAX_DEPTH``.
    """
    if not isinstance(tree, Tree):
        return f"expected a Tree, got {type(tree).__name__}"
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH} levels"
        if not isinstance(node, Tree) or not isinstance(node.label, str):
            return f"a node is a {type(node).__name__}; expected a Tree with a str label"
        if not node.children:
            return f"the constituent {node.label!r} is empty"
        problem = _children_problem(node)[1]
        if problem:
            return problem
        stack.extend((child, depth + 1) for child in node.children if isinstance(child, Tree))
    return ""


def _parse(tokens, i, source, tree_number, depth=1):
    """Parse the tree starting at ``tokens[i] == "("``; returns it and the index after it."""
    if i >= len(tokens) or tokens[i] != "(":
        raise ValueError(f"{source}: tree {tree_number}: expected '(' but found "
                         f"{tokens[i] if i < len(tokens) else 'the end'!r}.")
    if depth > MAX_DEPTH:
        raise ValueError(f"{source}: tree {tree_number}: brackets nested deeper than "
                         f"{MAX_DEPTH} levels.")
    i += 1
    label = ""
    if i < len(tokens) and tokens[i] not in "()":
        label = tokens[i]
        i += 1
    children = []
    while i < len(tokens) and tokens[i] != ")":
        if tokens[i] == "(":
            child, i = _parse(tokens, i, source, tree_number, depth + 1)
            children.append(child)
        else:
            children.append(tokens[i])
            i += 1
    if i >= len(tokens):
        raise ValueError(f"{source}: tree {tree_number}: unbalanced brackets (a ')' is missing).")
    if not children:
        raise ValueError(f"{source}: tree {tree_number}: the constituent {label!r} is empty.")
    if any(isinstance(c, str) for c in children) and len(children) > 1:
        raise ValueError(f"{source}: tree {tree_number}: {label!r} mixes words and constituents.")
    return Tree(label, children), i + 1


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
            tokens = _TOKEN.findall(text[start:match.end()])
            try:
                tree, _ = _parse(tokens, 0, f"{path}: line {start_line}", len(trees) + 1)
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
