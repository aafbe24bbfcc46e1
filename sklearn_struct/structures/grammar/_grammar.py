"""Context-free grammars in Chomsky normal form, read off binarised treebank trees."""

from collections import Counter

import numpy as np

__all__ = ["Grammar"]


class Grammar:
    """A grammar in Chomsky normal form over part-of-speech terminals.

    Rules are binary, ``A -> B C``, or lexical, ``A -> a`` with ``a`` a
    part-of-speech tag (the tags are the terminals: words enter a parser's
    features, not its grammar).  Symbols are numbered: ``nonterminals[k]``
    is symbol ``k``, ``terminals[t]`` tag ``t``.  Build one from binarised
    trees with :meth:`from_trees`.

    Parameters
    ----------
    nonterminals : sequence of str
        Symbol names.
    terminals : sequence of str
        Tag names.
    binary_rules : array-like of int of shape (n_binary, 3)
        ``(A, B, C)`` per rule.
    lexical_rules : array-like of int of shape (n_lexical, 2)
        ``(A, a)`` per rule.
    roots : array-like of int
        Symbols allowed over a whole sentence.
    counts : dict, optional
        Treebank counts ``binary``, ``lexical`` (per rule) and ``roots`` (per
        root symbol), for :meth:`log_probabilities`.

    Attributes
    ----------
    binary_rules, lexical_rules, roots : ndarray of int64
        As given, lexical rules sorted by terminal.
    lexical_offsets : ndarray of int64 of shape (n_terminals + 1,)
        The lexical rules of tag ``a`` are rows ``lexical_offsets[a]:lexical_offsets[a + 1]``.

    Examples
    --------
    >>> from sklearn_struct.datasets import Tree, binarize
    >>> from sklearn_struct.structures import Grammar
    >>> tree = binarize(Tree.fromstring("(S (NP (DT a) (NN dog)) (VP (VBZ barks)))"))
    >>> grammar = Grammar.from_trees([tree])
    >>> grammar.rule_names()
    ['S -> NP VP+VBZ', 'NP -> DT NN', 'DT -> DT', 'NN -> NN', 'VP+VBZ -> VBZ']
    """

    def __init__(self, nonterminals, terminals, binary_rules, lexical_rules, roots,
                 counts=None):
        self.nonterminals = _names(nonterminals, "nonterminals")
        self.terminals = _names(terminals, "terminals")
        n_symbols, n_tags = len(self.nonterminals), len(self.terminals)
        binary = _id_table(binary_rules, "binary_rules", ("A", "B", "C"),
                           (n_symbols, n_symbols, n_symbols))
        lexical = _id_table(lexical_rules, "lexical_rules", ("A", "a"), (n_symbols, n_tags))
        order = np.argsort(lexical[:, 1], kind="stable")
        self.binary_rules = binary
        self.lexical_rules = lexical[order]
        self.lexical_offsets = np.searchsorted(self.lexical_rules[:, 1],
                                               np.arange(n_tags + 1)).astype(np.int64)
        self.roots = np.unique(_id_table(roots, "roots", ("A",), (n_symbols,), rows=False))
        if self.roots.size == 0:
            raise ValueError("roots: at least one symbol must be allowed over a sentence.")
        self.counts = None
        if counts is not None:
            self.counts = {"binary": np.asarray(counts["binary"], dtype=np.float64),
                           "lexical": np.asarray(counts["lexical"], dtype=np.float64)[order],
                           "roots": dict(counts["roots"])}

    @classmethod
    def from_trees(cls, trees, min_count=1):
        """Read the rules off binarised trees (see :func:`~sklearn_struct.datasets.binarize`).

        Parameters
        ----------
        trees : list of Tree
            Binary trees: every constituent has two children or is a
            (possibly collapsed) preterminal.
        min_count : int, default=1
            Keep the binary rules seen at least this often (every lexical rule
            is kept, so that every tag of the training trees can be parsed).

        Returns
        -------
        grammar : Grammar
            Symbols and tags numbered in sorted order, with the treebank counts.
        """
        if min_count < 1:
            raise ValueError(f"min_count must be >= 1, got {min_count}.")
        binary, lexical, roots = Counter(), Counter(), Counter()
        for index, tree in enumerate(trees):
            roots[tree.label] += 1
            for node in _constituents(tree):
                if node.is_preterminal():
                    lexical[node.label, node.label.split("+")[-1]] += 1
                elif len(node.children) == 2:
                    binary[node.label, node.children[0].label, node.children[1].label] += 1
                else:
                    raise ValueError(f"tree {index}: {node.label!r} has {len(node.children)} "
                                     "children; binarise the trees first (binarize).")
        binary = {rule: n for rule, n in binary.items() if n >= min_count}
        symbols = sorted({label for rule in binary for label in rule}
                         | {label for label, _ in lexical} | set(roots))
        tags = sorted({tag for _, tag in lexical})
        symbol_id = {label: k for k, label in enumerate(symbols)}
        tag_id = {tag: k for k, tag in enumerate(tags)}
        binary_rules = [[symbol_id[a], symbol_id[b], symbol_id[c]] for a, b, c in binary]
        lexical_rules = [[symbol_id[a], tag_id[t]] for a, t in lexical]
        counts = {"binary": list(binary.values()), "lexical": list(lexical.values()),
                  "roots": {symbol_id[label]: n for label, n in roots.items()}}
        return cls(symbols, tags, binary_rules, lexical_rules,
                   [symbol_id[label] for label in roots], counts)

    def covers(self, tree):
        """Whether the grammar derives a binarised tree (its root and every rule are in it).

        Parameters
        ----------
        tree : Tree
            A binarised tree.

        Returns
        -------
        covered : bool
            False when a rule was pruned (``min_count``) or never seen.
        """
        if not hasattr(self, "_rule_sets"):
            names, tags = self.nonterminals, self.terminals
            self._rule_sets = (
                {(names[a], names[b], names[c]) for a, b, c in self.binary_rules},
                {(names[a], tags[t]) for a, t in self.lexical_rules},
                {names[r] for r in self.roots})
        binary, lexical, roots = self._rule_sets
        if tree.label not in roots:
            return False
        for node in _constituents(tree):
            if node.is_preterminal():
                if (node.label, node.label.split("+")[-1]) not in lexical:
                    return False
            elif len(node.children) != 2 or (node.label, node.children[0].label,
                                             node.children[1].label) not in binary:
                return False
        return True

    def rule_names(self):
        """Readable rules: binary ones first, then lexical ones (``A -> tag``).

        Returns
        -------
        names : list of str
            One per rule, in the order of ``binary_rules`` then ``lexical_rules``.
        """
        names = [f"{self.nonterminals[a]} -> {self.nonterminals[b]} {self.nonterminals[c]}"
                 for a, b, c in self.binary_rules]
        names += [f"{self.nonterminals[a]} -> {self.terminals[t]}" for a, t in self.lexical_rules]
        return names

    def log_probabilities(self):
        """The relative-frequency PCFG of the treebank counts.

        ``log P(A -> rhs | A)`` for every rule (counts of the kept rules,
        normalised per left-hand side) and ``log P(root = A)``.

        Returns
        -------
        binary : ndarray of shape (n_binary,)
            Log-probability of each binary rule.
        lexical : ndarray of shape (n_lexical,)
            Log-probability of each lexical rule.
        roots : ndarray of shape (n_nonterminals,)
            Log-probability of each symbol at the root, ``-inf`` for symbols
            never seen there.
        """
        if self.counts is None:
            raise ValueError("this grammar has no treebank counts (build it with from_trees).")
        totals = np.zeros(len(self.nonterminals))
        np.add.at(totals, self.binary_rules[:, 0], self.counts["binary"])
        np.add.at(totals, self.lexical_rules[:, 0], self.counts["lexical"])
        binary = np.log(self.counts["binary"] / totals[self.binary_rules[:, 0]])
        lexical = np.log(self.counts["lexical"] / totals[self.lexical_rules[:, 0]])
        roots = np.full(len(self.nonterminals), -np.inf)
        n_trees = sum(self.counts["roots"].values())
        for symbol, n in self.counts["roots"].items():
            roots[symbol] = np.log(n / n_trees)
        return binary, lexical, roots

    def __repr__(self):
        return (f"Grammar({len(self.nonterminals)} nonterminals, {len(self.terminals)} "
                f"terminals, {len(self.binary_rules)} binary and {len(self.lexical_rules)} lexical "
                f"rules)")


def _names(names, what):
    """Distinct symbol or tag names as a list."""
    if isinstance(names, str) or not hasattr(names, "__iter__"):
        raise TypeError(f"{what} must be a sequence of names (str), got "
                        f"{type(names).__name__}.")
    names = list(names)
    first = {}
    for k, name in enumerate(names):
        if not isinstance(name, str):
            raise TypeError(f"{what}[{k}]: expected a name (str), got {type(name).__name__}.")
        if name in first:
            raise ValueError(f"{what}: {name!r} is both {first[name]} and {k}; names must be "
                             "distinct (a rule could not say which one it means).")
        first[name] = k
    return names


def _id_table(values, what, fields, sizes, rows=True):
    """Integer ids as an ``(n, len(fields))`` table (or a vector), each field in range."""
    array = np.asarray(values)
    shape = f"(n, {len(fields)}) array of ({', '.join(fields)})" if rows else "1-D array"
    shape = ("an " if rows else "a ") + shape
    if array.size == 0:
        return np.zeros((0, len(fields)) if rows else 0, dtype=np.int64)
    if array.dtype == object or not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"{what}: expected {shape} of integer ids, got {array.dtype} "
                        "values.")
    if (array.ndim != 2 or array.shape[1] != len(fields)) if rows else array.ndim != 1:
        raise ValueError(f"{what}: expected {shape} of integer ids, got shape "
                         f"{array.shape}.")
    table = array.astype(np.int64).reshape(len(array), -1)
    for column, (field, size) in enumerate(zip(fields, sizes)):
        bad = np.flatnonzero((table[:, column] < 0) | (table[:, column] >= size))
        if bad.size:
            kind = "tag" if field.islower() else "symbol"
            where = f"{what} row {bad[0]}: {field} =" if rows else f"{what}:"
            raise ValueError(f"{where} {table[bad[0], column]} is not a {kind} id in "
                             f"0..{size - 1}.")
    return table if rows else table[:, 0]


def _constituents(tree):
    """Every node of ``tree`` above the words, parents first (no recursion)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if not node.is_preterminal():
            stack.extend(reversed(node.children))
