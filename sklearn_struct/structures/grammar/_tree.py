"""Constituency trees: the outputs of :class:`~sklearn_struct.structures.WeightedCFGStructure`.

A :class:`Tree` is a label and a list of children; a preterminal's only child
is its word (a ``str``).  Reading, cleaning and binarising treebank trees is
the job of :mod:`sklearn_struct.datasets` (``load_ptb``, ``binarize``).
"""

import re

__all__ = ["MAX_DEPTH", "UNARY_JOIN", "Tree", "read_bracketed", "tree_problem"]

#: Separator of the labels of a unary chain that ``binarize`` collapses (``VP+VBZ``).
UNARY_JOIN = "+"
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
        tree, rest = read_bracketed(text, "<string>", 1)
        if rest:
            raise ValueError(f"text after the end of the tree: {' '.join(rest[:5])!r}")
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


def read_bracketed(text, source, tree_number):
    """The tree written in brackets at the start of ``text``, and the tokens after it.

    Parameters
    ----------
    text : str
        Bracketed text starting with ``(``, e.g. ``"(S (NP (DT the) (NN dog)))"``.
    source : str
        Where the text comes from, for the error messages (a file and line).
    tree_number : int
        The tree's number in its source, for the error messages.

    Returns
    -------
    tree : Tree
        The first tree, labels as written.
    rest : list of str
        The tokens (brackets, labels, words) after it.

    Raises
    ------
    ValueError
        If the brackets do not make a tree, or nest deeper than ``MAX_DEPTH``.
    """
    tokens = _TOKEN.findall(text)
    tree, end = _parse(tokens, 0, source, tree_number)
    return tree, tokens[end:]


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
