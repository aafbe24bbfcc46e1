"""Weighted context-free grammars: parts are anchored rules (Bartlett et al. 2004, Example 2)."""

import zlib
from dataclasses import dataclass

import numpy as np

from .._base import BaseStructure
from .._output_space import OutputSpace
from .._batch import offsets_from_lengths
from ._kernels import (
    GrammarData,
    cfg_add_features, cfg_argmax, cfg_decode, cfg_encode, cfg_hypergraph, cfg_hypergraph_size,
    cfg_marginals, cfg_part_losses, cfg_part_scores, n_binary_parts)
from ._grammar import Grammar
from ._tree import Tree, tree_problem
from .._kernel import KernelOps

__all__ = ["ParseBatch", "TreeCodec", "WeightedCFGStructure"]


@dataclass(frozen=True)
class ParseBatch:
    """Sentences in the form :class:`WeightedCFGStructure`'s operations use.

    Parameters
    ----------
    tokens : ndarray of int64 of shape (n_words, 2)
        ``(word id, tag id)`` of the words of all sentences, stacked.
    words : list of list of str
        The words of each sentence (the leaves of decoded trees).
    n_samples : int
        Number of sentences.
    n_features : int
        Number of token columns (2).
    token_offsets : ndarray of int64 of shape (n_samples + 1,)
        Sentence ``i`` owns words ``token_offsets[i]:token_offsets[i + 1]``.
    unit_offsets : ndarray of int64 of shape (n_samples + 1,)
        Output units: ``2 n - 1`` per sentence of ``n`` words.
    part_offsets : ndarray of int64 of shape (n_samples + 1,)
        Anchored rules per sentence.
    n_weights : int
        ``2 ** hash_bits``.

    Examples
    --------
    >>> from sklearn_struct.structures import Grammar, WeightedCFGStructure
    >>> grammar = Grammar(["X"], ["t"], [[0, 0, 0]], [[0, 0]], [0])
    >>> batch = WeightedCFGStructure(grammar).make_batch([[("a", "t"), ("b", "t"), ("c", "t")]])
    >>> batch.unit_offsets, batch.part_offsets  # 2n - 1 constituents; 4 binary + 3 lexical rules
    (array([0, 5]), array([0, 7]))
    """

    tokens: np.ndarray
    words: list
    n_samples: int
    n_features: int
    token_offsets: np.ndarray
    unit_offsets: np.ndarray
    part_offsets: np.ndarray
    n_weights: int

    ragged = {"tokens": "token_offsets"}
    per_example = ("words",)


class TreeCodec:
    """Binarised parse trees (:class:`~sklearn_struct.datasets.Tree`) to derivation units and back.

    Parameters
    ----------
    grammar : Grammar
        Every rule of a tree must be a rule of the grammar.

    Examples
    --------
    >>> from sklearn_struct.datasets import Tree
    >>> from sklearn_struct.structures import Grammar, WeightedCFGStructure
    >>> grammar = Grammar(["X"], ["t"], [[0, 0, 0]], [[0, 0]], [0])
    >>> structure = WeightedCFGStructure(grammar)
    >>> batch = structure.make_batch([[("a", "t"), ("b", "t")]])
    >>> tree = Tree.fromstring("(X (X a) (X b))")
    >>> codec = structure.output_space().codec([tree])
    >>> codec.encode(batch, [tree])  # lexical parts 1 and 2, binary part 0
    array([1, 2, 0])
    >>> codec.decode(batch, codec.encode(batch, [tree])) == [tree]
    True
    """

    classes_ = None
    n_states = None

    def __init__(self, grammar):
        self.grammar = grammar
        names = grammar.nonterminals
        self._binary = {(names[a], names[b], names[c]): r
                        for r, (a, b, c) in enumerate(grammar.binary_rules)}
        self._lexical = {(names[a], grammar.terminals[t]): k
                         for k, (a, t) in enumerate(grammar.lexical_rules)}

    def encode(self, batch, y):
        """Units of the derivation of each tree.

        Parameters
        ----------
        batch : ParseBatch
            The sentences of the trees.
        y : list of Tree
            Binarised trees over the words of the batch's sentences.

        Returns
        -------
        Y : ndarray of int64 of shape (n_units_total,)
            The local part index of each constituent (see :mod:`._kernels`).
        """
        if isinstance(y, Tree) or not hasattr(y, "__len__"):
            raise TypeError("y must be a list with one parse tree (Tree) per sentence.")
        if len(y) != batch.n_samples:
            raise ValueError(f"X has {batch.n_samples} sentences but y has {len(y)} trees.")
        grammar, n_rules = self.grammar, len(self.grammar.binary_rules)
        units = []
        for i, tree in enumerate(y):
            if not isinstance(tree, Tree):
                raise TypeError(f"y[{i}]: expected a Tree, got {type(tree).__name__}.")
            problem = tree_problem(tree)
            if problem:
                raise ValueError(f"y[{i}]: not a well-formed tree: {problem}.")
            words = batch.words[i]
            n = len(words)
            if tree.leaves() != words:
                raise ValueError(f"y[{i}]: the tree's words {tree.leaves()[:6]} are not those of "
                                 f"sentence {i} {words[:6]}.")
            if tree.label not in {grammar.nonterminals[r] for r in grammar.roots}:
                raise ValueError(f"y[{i}]: {tree.label!r} is not a root symbol of the grammar.")
            tags = batch.tokens[batch.token_offsets[i]:batch.token_offsets[i + 1], 1]
            lexical_base = n_binary_parts(n, n_rules) + np.concatenate(
                [[0], np.cumsum(np.diff(grammar.lexical_offsets)[tags])])
            lexical_units = np.empty(n, dtype=np.int64)
            binary_units = []
            for label, start, end, node in _constituents(tree):
                if node.is_preterminal():
                    k = self._lexical.get((label, grammar.terminals[tags[start]]))
                    if k is None:
                        raise ValueError(f"y[{i}]: the rule {label} -> "
                                         f"{grammar.terminals[tags[start]]} is not in the grammar.")
                    lexical_units[start] = (lexical_base[start] + k
                                            - grammar.lexical_offsets[tags[start]])
                    continue
                if len(node.children) != 2:
                    raise ValueError(f"y[{i}]: {label!r} has {len(node.children)} children; "
                                     "binarise the trees (sklearn_struct.datasets.binarize).")
                left, right = node.children
                rule = self._binary.get((label, left.label, right.label))
                if rule is None:
                    raise ValueError(f"y[{i}]: the rule {label} -> {left.label} {right.label} is "
                                     "not in the grammar (pruned by min_count?).")
                split = start + len(left.leaves())
                binary_units.append((end - start, start, _binary_part(start, split, end, rule, n,
                                                                      n_rules)))
            binary_units.sort()
            units.append(np.r_[lexical_units, [p for _, _, p in binary_units]].astype(np.int64))
        return np.concatenate(units)

    def decode(self, batch, Y):
        """Binarised trees from derivation units.

        Parameters
        ----------
        batch : ParseBatch
            The sentences.
        Y : ndarray of int of shape (n_units_total,)
            Units, flat.

        Returns
        -------
        y : list of Tree
            One binarised tree per sentence (see
            :func:`~sklearn_struct.datasets.unbinarize`).
        """
        grammar, n_rules = self.grammar, len(self.grammar.binary_rules)
        names = grammar.nonterminals
        trees = []
        for i in range(batch.n_samples):
            words = batch.words[i]
            n = len(words)
            units = np.asarray(Y[batch.unit_offsets[i]:batch.unit_offsets[i + 1]])
            tags = batch.tokens[batch.token_offsets[i]:batch.token_offsets[i + 1], 1]
            n_bin = n_binary_parts(n, n_rules)
            nodes = {}
            counts = np.diff(grammar.lexical_offsets)[tags]
            for position in range(n):
                k = units[position] - n_bin - counts[:position].sum() + \
                    grammar.lexical_offsets[tags[position]]
                nodes[position, position + 1] = Tree(names[grammar.lexical_rules[k, 0]],
                                                     [words[position]])
            for p in units[n:]:  # by span length: children exist before their parent
                s, m, e, rule = _binary_anchor(int(p), n, n_rules)
                nodes[s, e] = Tree(names[grammar.binary_rules[rule, 0]],
                                   [nodes[s, m], nodes[m, e]])
            trees.append(nodes[0, n])
        return trees


def _constituents(tree, start=0):
    """``(label, start, end, node)`` of every node, preterminals included."""
    end = start + len(tree.leaves())
    yield tree.label, start, end, tree
    if not tree.is_preterminal():
        position = start
        for child in tree.children:
            yield from _constituents(child, position)
            position += len(child.leaves())


def _span_blocks(n, n_rules):
    """``(s, e, first part)`` of every span of two words or more, in part order."""
    blocks, offset = [], 0
    for length in range(2, n + 1):
        for s in range(n - length + 1):
            blocks.append((s, s + length, offset))
            offset += (length - 1) * n_rules
    return blocks


def _binary_part(s, m, e, rule, n, n_rules):
    for start, end, offset in _span_blocks(n, n_rules):
        if (start, end) == (s, e):
            return offset + (m - s - 1) * n_rules + rule
    raise AssertionError("span out of the sentence")


def _binary_anchor(p, n, n_rules):
    for s, e, offset in _span_blocks(n, n_rules):
        if offset <= p < offset + (e - s - 1) * n_rules:
            local = p - offset
            return s, s + 1 + local // n_rules, e, local % n_rules
    raise ValueError(f"part {p} is not a binary part of a sentence of {n} words.")


class WeightedCFGStructure(BaseStructure):
    """Parse trees of a weighted context-free grammar in Chomsky normal form.

    The parts of a sentence are its anchored rules: ``<A -> B C, s, m, e>``
    (``A`` over words ``s..e-1``, split before word ``m``) and ``<A -> t, i>``
    (``A`` over word ``i`` of tag ``t``) -- Example 2 of Bartlett, Collins,
    Taskar & McAllester (NIPS 2004) and section 4 of Collins et al. (JMLR
    2008).  Inference is exact, per sentence, in numba and in log space: CKY
    for the best tree, inside-outside for the marginals of every anchored
    rule and ``log Z``.  The loss of a tree is the paper's: one for each of
    its labelled constituents that is not in the gold tree.  (Counting the
    gold constituents it misses as well gives twice that: a binary tree over
    ``n`` words always has ``2n - 1`` constituents.)

    Part features are built on the fly from the rule crossed with its span's
    first and last words and tags, the tags around the split point and a
    span-length bucket, hashed into ``2 ** hash_bits`` weights: memory grows
    with the words, not with the anchored rules.

    Parameters
    ----------
    grammar : Grammar
        The rules (:meth:`Grammar.from_trees` on binarised training trees).
    hash_bits : int, default=18
        The weight vector has ``2 ** hash_bits`` entries.

    Notes
    -----
    Inputs are sentences as sequences of ``(word, tag)`` pairs (``tree.pos()``
    style; the tags are the grammar's terminals), outputs binarised
    :class:`~sklearn_struct.datasets.Tree` objects over the same words.
    A sentence of ``n`` words has ``R n (n^2 - 1) / 6`` binary parts for
    ``R`` binary rules, which bounds the sentence length and grammar size a
    dual method can store (the online EG keeps two numbers per part).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.datasets import Tree, binarize
    >>> from sklearn_struct.structures import Grammar, WeightedCFGStructure
    >>> tree = binarize(Tree.fromstring("(S (NP (DT a) (NN dog)) (VP (VBZ barks)))"))
    >>> structure = WeightedCFGStructure(Grammar.from_trees([tree]), hash_bits=10)
    >>> batch = structure.make_batch([[("a", "DT"), ("dog", "NN"), ("barks", "VBZ")]])
    >>> scores = structure.part_scores(batch, np.zeros(batch.n_weights))
    >>> codec = structure.output_space().codec([tree])
    >>> print(codec.decode(batch, structure.argmax(batch, scores))[0])
    (S (NP (DT a) (NN dog)) (VP+VBZ barks))
    """

    kernel_ops = KernelOps(part_scores=cfg_part_scores, add_features=cfg_add_features,
                           marginals=cfg_marginals, argmax=cfg_argmax, encode=cfg_encode,
                           part_losses=cfg_part_losses,
                           hypergraph_size=cfg_hypergraph_size, hypergraph=cfg_hypergraph,
                           decode=cfg_decode)

    def __init__(self, grammar, hash_bits=18):
        self.grammar = grammar
        self.hash_bits = hash_bits

    # ------------------------------------------------------------------ data
    def make_batch(self, X, n_states=None):
        """Sentences of ``(word, tag)`` pairs to a batch.

        Parameters
        ----------
        X : list of sequence of (str, str)
            One sentence per example; the tags must be terminals of the grammar.
        n_states : None
            Ignored.

        Returns
        -------
        batch : ParseBatch
            Word ids (a stable hash of the word) and tag ids with their offsets.

        Raises
        ------
        ValueError or TypeError
            Naming the offending sentence and word.
        """
        self._check_settings()
        if isinstance(X, (str, np.ndarray)) or not hasattr(X, "__len__") or len(X) == 0:
            raise TypeError("X must be a non-empty list of sentences, each a sequence of "
                            "(word, tag) pairs.")
        tag_id = {tag: t for t, tag in enumerate(self.grammar.terminals)}
        rows, words = [], []
        for i, sentence in enumerate(X):
            if isinstance(sentence, str) or not hasattr(sentence, "__len__") or not sentence:
                raise ValueError(f"sentence {i}: expected a non-empty sequence of (word, tag) "
                                 f"pairs, got {sentence!r:.60}.")
            row = []
            for j, pair in enumerate(sentence):
                if (isinstance(pair, str) or len(pair) != 2
                        or not all(isinstance(v, str) for v in pair)):
                    raise ValueError(f"sentence {i}, word {j}: expected a (word, tag) pair of "
                                     f"strings, got {pair!r:.60}.")
                word, tag = pair
                if tag not in tag_id:
                    raise ValueError(f"sentence {i}, word {j} ({word!r}): the tag {tag!r} is not "
                                     "a terminal of the grammar.")
                row.append((zlib.crc32(word.encode("utf-8")), tag_id[tag]))
            rows.append(np.array(row, dtype=np.int64))
            words.append([word for word, _ in sentence])
        return self._batch(np.concatenate(rows), offsets_from_lengths([len(r) for r in rows]),
                           words)

    def _batch(self, tokens, token_offsets, words):
        lengths = np.diff(token_offsets)
        n_rules = len(self.grammar.binary_rules)
        # a word has a lexical part per rule of its tag (every sentence has a word)
        lexical = np.add.reduceat(np.diff(self.grammar.lexical_offsets)[tokens[:, 1]],
                                  token_offsets[:-1])
        n_parts = np.array([n_binary_parts(int(n), n_rules) for n in lengths]) + lexical
        return ParseBatch(tokens=np.ascontiguousarray(tokens), words=words,
                          n_samples=len(lengths), n_features=2, token_offsets=token_offsets,
                          unit_offsets=offsets_from_lengths(2 * lengths - 1),
                          part_offsets=offsets_from_lengths(n_parts),
                          n_weights=2 ** int(self.hash_bits))

    def check_outputs(self, batch, Y):
        Y = super().check_outputs(batch, Y)
        n_parts = np.diff(batch.part_offsets)
        for i in range(batch.n_samples):
            units = Y[batch.unit_offsets[i]:batch.unit_offsets[i + 1]]
            if units.size and (units.min() < 0 or units.max() >= n_parts[i]):
                raise ValueError(f"sentence {i}: output units must be part indices in "
                                 f"0..{n_parts[i] - 1}.")
        return Y

    def output_space(self):
        self._check_settings()  # learners ask for the codec before the batch
        return OutputSpace(self, codec=lambda y: TreeCodec(self.grammar))

    def kernel_data(self, batch, training=False):
        g = self.grammar
        is_root = np.zeros(len(g.nonterminals), dtype=np.bool_)
        is_root[g.roots] = True
        return GrammarData(batch.tokens, batch.token_offsets, int(self.hash_bits),
                           g.binary_rules, g.lexical_rules, g.lexical_offsets, is_root,
                           len(g.nonterminals))

    # ----------------------------------------------------------------- parts
    def rule_scores(self, batch, binary, lexical, root=None):
        """Part scores that give every anchored copy of a rule that rule's score.

        With the log-probabilities of a PCFG (:meth:`Grammar.log_probabilities`)
        the argmax is the Viterbi parse and ``log Z`` the log-probability of
        the tag sequence: the generative baseline of a discriminative parser.

        Parameters
        ----------
        batch : ParseBatch
            A batch returned by :meth:`make_batch`.
        binary : array-like of shape (n_binary,)
            Score of each binary rule.
        lexical : array-like of shape (n_lexical,)
            Score of each lexical rule.
        root : array-like of shape (n_nonterminals,), default=None
            Added to the parts over a whole sentence, by their symbol (read
            for the grammar's root symbols only).

        Returns
        -------
        scores : ndarray of shape (n_parts_total,)
            Flat part scores.
        """
        g = self.grammar
        binary = np.asarray(binary, dtype=np.float64)
        lexical = np.asarray(lexical, dtype=np.float64)
        if binary.shape != (len(g.binary_rules),) or lexical.shape != (len(g.lexical_rules),):
            raise ValueError(f"expected {len(g.binary_rules)} binary and {len(g.lexical_rules)} "
                             f"lexical rule scores, got {binary.shape} and {lexical.shape}.")
        n_rules = len(g.binary_rules)
        scores = []
        for i in range(batch.n_samples):
            tags = batch.tokens[batch.token_offsets[i]:batch.token_offsets[i + 1], 1]
            n = len(tags)
            block = np.tile(binary, n_binary_parts(n, n_rules) // max(n_rules, 1))
            lexical_part = np.concatenate(
                [lexical[g.lexical_offsets[t]:g.lexical_offsets[t + 1]] for t in tags])
            if root is not None:
                # only root symbols can span a sentence: the others' entries are unused
                root = np.where(np.isin(np.arange(len(g.nonterminals)), g.roots),
                                np.asarray(root, dtype=np.float64), 0.0)
                if n == 1:
                    lexical_part = lexical_part + root[g.lexical_rules[
                        g.lexical_offsets[tags[0]]:g.lexical_offsets[tags[0] + 1], 0]]
                else:
                    # the whole sentence is the last span block: (n - 1) splits of every rule
                    whole = (n - 1) * n_rules
                    block[-whole:] += np.tile(root[g.binary_rules[:, 0]], n - 1)
            scores.append(np.concatenate([block, lexical_part]))
        return np.concatenate(scores)

    def _check_settings(self):
        if not isinstance(self.grammar, Grammar):
            hint = (" (build one with Grammar(...) or Grammar.from_trees; rules are not read "
                    "from text)" if isinstance(self.grammar, str) else "")
            raise TypeError(f"grammar must be a Grammar, got {type(self.grammar).__name__}"
                            f"{hint}.")
        if not isinstance(self.hash_bits, (int, np.integer)) or not 1 <= self.hash_bits <= 30:
            raise ValueError(f"hash_bits must be an integer in 1..30, got {self.hash_bits!r}.")
