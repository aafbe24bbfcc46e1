"""First-order dependency trees: parts are head-modifier arcs (Collins et al. 2008, section 7.2)."""

from dataclasses import dataclass

import numpy as np
from numba import njit

from ._arc_features import (
    PUNCTUATION, ArcData, arc_add_features, arc_add_features_at, arc_add_features_norm,
    arc_feature_cache, arc_index, arc_part_scores, arc_part_scores_at, no_feature_cache)
from .._node_labels import LabelledParts
from .._output_space import OutputSpace
from .._targets import check_lengths
from .._batch import Batch, offsets_from_lengths, ragged_positions
from .._kernel import KernelOps
from ._projective import heads_decode, projective_hypergraph, projective_hypergraph_size
from ._inference import (
    chu_liu_edmonds, eisner, matrix_tree_marginals, projective_log_partition,
    projective_marginals)

__all__ = ["DependencyBatch", "DependencyTreeStructure", "HeadsCodec"]


@dataclass(frozen=True)
class DependencyBatch(Batch):
    """Sentences in the form :class:`DependencyTreeStructure`'s operations use.

    Parameters
    ----------
    attrs : ndarray of int64 of shape (n_tokens, 4)
        Token attribute ids ``(WORD, POS, PREFIX)`` and the punctuation flag of
        all sentences, stacked.
    n_samples : int
        Number of sentences.
    n_features : int
        Number of attribute columns (4).
    unit_offsets : ndarray of int64 of shape (n_samples + 1,)
        Sentence ``i`` owns tokens ``unit_offsets[i]:unit_offsets[i + 1]``: one
        output unit (its head) per token.
    part_offsets : ndarray of int64 of shape (n_samples + 1,)
        Sentence ``i`` of ``n`` tokens owns ``n * n`` parts: arc ``(h, m)``,
        ``h`` in ``0..n`` (0 the root), ``m`` in ``1..n``, ``h != m``, at
        ``(m - 1) * n + (h if h < m else h - 1)``.
    n_weights : int
        ``2 ** hash_bits``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures import DependencyTreeStructure
    >>> batch = DependencyTreeStructure(hash_bits=8).make_batch([np.full((3, 3), 5)])
    >>> batch.unit_offsets, batch.part_offsets  # 3 words: 3 heads, 3 * 3 arcs
    (array([0, 3]), array([0, 9]))
    """

    attrs: np.ndarray

    ragged = {"attrs": "unit_offsets"}


class HeadsCodec:
    """One head array per sentence: ``y[i][m - 1]`` is the head of token ``m``, 0 the root.

    Parameters
    ----------
    y : list of array-like of int of shape (n_i,)
        Training head arrays.

    Attributes
    ----------
    classes_ : None
        Heads are positions, not classes.
    n_states : None

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures.dependency import DependencyTreeStructure, HeadsCodec
    >>> batch = DependencyTreeStructure().make_batch([np.full((3, 3), 5)])
    >>> HeadsCodec([[2, 0, 2]]).encode(batch, [[2, 0, 2]])
    array([2, 0, 2])
    """

    classes_ = None
    n_states = None

    def __init__(self, y):
        self._check(y)

    @staticmethod
    def _check(y):
        if isinstance(y, (str, bytes)) or not hasattr(y, "__len__"):
            raise TypeError(f"y must be a list with one head array per sentence, got "
                            f"{type(y).__name__}.")
        heads = []
        for i, yi in enumerate(y):
            array = np.asarray(yi)
            if array.ndim != 1 or not (np.issubdtype(array.dtype, np.integer) or array.size == 0):
                raise ValueError(f"y[{i}]: expected a 1-D array of integer heads, got {yi!r}.")
            heads.append(array.astype(np.int64))
        return heads

    def encode(self, batch, y):
        """Flat heads over the tokens of a batch, checked against each sentence's length.

        Parameters
        ----------
        batch : DependencyBatch
            The sentences the heads belong to.
        y : list of array-like of int of shape (n_i,)
            Head arrays.

        Returns
        -------
        Y : ndarray of int64 of shape (n_tokens,)
            The heads, flat.
        """
        heads = self._check(y)
        check_lengths(batch, heads, "token", examples="sentences", values="heads")
        return np.concatenate(heads) if heads else np.zeros(0, dtype=np.int64)

    def decode(self, batch, Y):
        """One head array per sentence.

        Parameters
        ----------
        batch : DependencyBatch
            The sentences the heads belong to.
        Y : ndarray of int of shape (n_tokens,)
            Heads, flat.

        Returns
        -------
        y : list of ndarray of shape (n_i,)
            One head array per sentence.
        """
        return np.split(np.asarray(Y, dtype=np.int64), batch.unit_offsets[1:-1])


@njit(cache=True, nogil=True)
def _first_invalid_tree(Y, unit_offsets, single_root, projective):
    """The first sentence whose heads leave the output space: ``(i, kind, word, other)``.

    ``kind`` 1: ``word`` lies on a cycle; 2: ``other`` and ``word`` both hang
    from the root (``single_root``); 3: the arcs into ``other`` and ``word``
    cross (``projective``).  ``i = -1`` when every sentence is a tree of the
    space.  Heads are in range (checked before).
    """
    for i in range(unit_offsets.shape[0] - 1):
        heads = Y[unit_offsets[i]:unit_offsets[i + 1]]
        n = heads.shape[0]
        state = np.zeros(n + 1, dtype=np.int64)  # 0 unseen, walk start + 1 on a walk, -1 done
        state[0] = -1
        for start in range(1, n + 1):
            node = start
            while state[node] == 0:
                state[node] = start + 1
                node = heads[node - 1]
            if state[node] == start + 1:  # the walk came back to itself
                return i, 1, node, 0
            node = start
            while state[node] == start + 1:
                state[node] = -1
                node = heads[node - 1]
        first_root_child = 0
        for m in range(1, n + 1):
            if heads[m - 1] == 0:
                if single_root and first_root_child:
                    return i, 2, m, first_root_child
                first_root_child = m
        if projective:
            for m in range(1, n + 1):
                a, b = min(heads[m - 1], m), max(heads[m - 1], m)
                for k in range(m + 1, n + 1):
                    c, d = min(heads[k - 1], k), max(heads[k - 1], k)
                    if a < c < b < d or c < a < d < b:
                        return i, 3, k, m
    return -1, 0, 0, 0


@njit(cache=True, nogil=True)
def _score_matrix(data, i, scores):
    """Sentence ``i``'s arc scores as an ``(n + 1, n + 1)`` head-by-word matrix."""
    n = data.unit_offsets[i + 1] - data.unit_offsets[i]
    S = np.full((n + 1, n + 1), -np.inf)
    for c in range(1, n + 1):
        for h in range(n + 1):
            if h != c:
                S[h, c] = scores[arc_index(h, c, n)]
    return S


@njit(cache=True, nogil=True, inline="always")
def _arc_marginals(log_z, marginals, mu):
    """The arc marginals of an ``(n + 1, n + 1)`` head-by-word matrix, as part values;
    returns ``log_z``."""
    n = marginals.shape[0] - 1
    for c in range(1, n + 1):
        for h in range(n + 1):
            if h != c:
                mu[arc_index(h, c, n)] = marginals[h, c]
    return log_z


# One function per algorithm (not a branch on data.projective): a kernel then compiles the
# inference of its own trees only.
@njit(cache=True, nogil=True)
def projective_arc_marginals(data, i, theta, mu):
    S = _score_matrix(data, i, theta)
    m = np.empty_like(S)
    return _arc_marginals(projective_marginals(S, data.single_root, m), m, mu)


@njit(cache=True, nogil=True)
def projective_arc_log_partition(data, i, theta, scratch):
    """``log Z`` alone (a gap evaluation's need): the inside pass without the outside."""
    return projective_log_partition(_score_matrix(data, i, theta), data.single_root)


@njit(cache=True, nogil=True)
def matrix_tree_arc_marginals(data, i, theta, mu):
    S = _score_matrix(data, i, theta)
    m = np.empty_like(S)
    return _arc_marginals(matrix_tree_marginals(S, data.single_root, m), m, mu)


@njit(cache=True, nogil=True)
def eisner_argmax(data, i, scores, y_out):
    eisner(_score_matrix(data, i, scores), data.single_root, y_out)


@njit(cache=True, nogil=True)
def chu_liu_edmonds_argmax(data, i, scores, y_out):
    chu_liu_edmonds(_score_matrix(data, i, scores), data.single_root, y_out)


@njit(cache=True, nogil=True)
def dependency_encode(data, i, y, z_out):
    n = y.shape[0]
    z_out[:] = 0.0
    for c in range(1, n + 1):
        z_out[arc_index(y[c - 1], c, n)] = 1.0


_ARC_OPS = dict(
    part_scores=arc_part_scores, add_features=arc_add_features, encode=dependency_encode,
    add_features_norm=arc_add_features_norm, part_scores_at=arc_part_scores_at,
    add_features_at=arc_add_features_at)
_NON_PROJECTIVE_OPS = KernelOps(**_ARC_OPS, marginals=matrix_tree_arc_marginals,
                                argmax=chu_liu_edmonds_argmax, decode=heads_decode)
# The hand-written Eisner and inside-outside stay as overrides: the generic program gives
# k-best outputs and samples, and check_structure holds the two against each other.
_PROJECTIVE_OPS = KernelOps(**_ARC_OPS, marginals=projective_arc_marginals,
                            log_partition=projective_arc_log_partition, argmax=eisner_argmax,
                            hypergraph_size=projective_hypergraph_size,
                            hypergraph=projective_hypergraph, decode=heads_decode)


class DependencyTreeStructure(LabelledParts):
    """First-order dependency trees over the words of a sentence.

    The parts of a sentence of ``n`` words are its arcs ``(h, m)``: head ``h``
    in ``0..n`` (0 the root), modifier ``m`` in ``1..n``.  An arc is scored by
    the hashed first-order templates of McDonald, Crammer & Pereira (2005)
    (:mod:`sklearn_struct.structures.dependency._arc_features`); the loss is the number of
    words given a wrong head (Hamming over heads).

    With ``projective=True`` (the paper's setting) the outputs are the
    projective trees: Eisner's algorithm for the argmax, inside-outside for the
    marginals.  With ``projective=False`` every tree: Chu-Liu-Edmonds and the
    Matrix-Tree theorem.  Everything runs per sentence in numba, so every
    learner runs on it at full speed (online EG epochs included).

    A fit hashes the training sentences' arc features once and keeps their
    ids: about 5 to 6 bytes per id, 0.96 GB for 1,534 AnCora sentences of 32
    words and 4.5 GB for EWT's 12,256 training sentences with two tag sets
    (``benchmarks/results/parsing_speed.md``).  Prediction hashes on the fly.

    Parameters
    ----------
    projective : bool, default=True
        Restrict the outputs to projective trees.
    single_root : bool, default=True
        Exactly one word hangs from the root (the Universal Dependencies
        convention).
    hash_bits : int, default=20
        The weight vector has ``2 ** hash_bits`` entries.
    punctuation_weight : float, default=1.0
        Loss of a wrong head on a word flagged as punctuation (the optional
        fourth input column); 0 trains with the CoNLL-X convention of
        evaluation, punctuation excluded.

    See Also
    --------
    sklearn_struct.preprocessing.DependencyTokenEncoder : Builds the inputs.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures.dependency import DependencyTreeStructure
    >>> structure = DependencyTreeStructure(hash_bits=12)
    >>> batch = structure.make_batch([np.array([[5, 6, 3], [7, 8, 3]])])
    >>> batch.part_offsets, batch.n_weights
    (array([0, 4]), 4096)
    >>> scores = structure.part_scores(batch, np.ones(batch.n_weights))
    >>> structure.argmax(batch, scores).tolist() in ([0, 1], [2, 0])
    True
    """

    @property
    def kernel_ops(self):
        """Per-example numba operations; projective trees have Eisner's dynamic program."""
        return _PROJECTIVE_OPS if self.projective else _NON_PROJECTIVE_OPS

    def __init__(self, projective=True, single_root=True, hash_bits=20, punctuation_weight=1.0):
        self.projective = projective
        self.single_root = single_root
        self.hash_bits = hash_bits
        self.punctuation_weight = punctuation_weight

    # ------------------------------------------------------------------ data
    def make_batch(self, X, n_states=None):
        """Validate the token attribute arrays of sentences and stack them.

        Parameters
        ----------
        X : list of array-like of int of shape (n_i, 3), (n_i, 4) or (n_i, 5)
            One array per sentence with the ``(WORD, POS, PREFIX)`` ids of its
            words, optionally a 0/1 punctuation flag, and optionally the tag
            of a second tag set (every POS template then also uses it;
            :class:`~sklearn_struct.preprocessing.DependencyTokenEncoder`
            with ``pos="both"``).  All sentences have the same columns.
        n_states : None
            Ignored (heads are positions).

        Returns
        -------
        batch : DependencyBatch
            The stacked attribute rows with their word and arc offsets.

        Raises
        ------
        ValueError or TypeError
            Naming the offending sentence.
        """
        if not isinstance(self.hash_bits, (int, np.integer)) or not 1 <= self.hash_bits <= 30:
            raise ValueError(f"hash_bits must be an integer in 1..30, got {self.hash_bits!r}.")
        for name in ("projective", "single_root"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise TypeError(f"{name} must be True or False, got {getattr(self, name)!r}.")
        weight = self.punctuation_weight
        if isinstance(weight, (bool, np.bool_)) or not isinstance(
                weight, (int, float, np.integer, np.floating)) or not 0 <= weight < np.inf:
            raise ValueError(f"punctuation_weight must be a finite number >= 0, got {weight!r}.")
        if isinstance(X, np.ndarray) or not hasattr(X, "__len__") or len(X) == 0:
            raise TypeError("X must be a non-empty list with one (n_words, 3), (n_words, 4) or "
                            "(n_words, 5) array of token attribute ids per sentence.")
        rows = []
        for i, x in enumerate(X):
            array = np.asarray(x)
            if array.ndim != 2 or array.shape[1] not in (3, 4, 5) or array.shape[0] == 0 or not (
                    np.issubdtype(array.dtype, np.integer)):
                raise ValueError(
                    f"sentence {i}: expected an (n_words, 3), (n_words, 4) or (n_words, 5) "
                    f"array of integer token attribute ids with n_words >= 1, got "
                    f"{array.dtype} of shape {array.shape}.")
            if (array < 0).any():
                raise ValueError(f"sentence {i}: attribute ids must be non-negative.")
            if array.shape[1] == 3:  # no punctuation flags
                array = np.column_stack([array, np.zeros(len(array), dtype=np.int64)])
            elif ((array[:, PUNCTUATION] != 0) & (array[:, PUNCTUATION] != 1)).any():
                raise ValueError(f"sentence {i}: the fourth column flags punctuation with 0 or "
                                 "1.")
            if rows and array.shape[1] != rows[0].shape[1]:
                raise ValueError(
                    f"sentence {i}: {array.shape[1]} columns where sentence 0 has "
                    f"{rows[0].shape[1]} (a second tag set must be given for every sentence).")
            rows.append(array.astype(np.int64))
        return self._batch(np.concatenate(rows), offsets_from_lengths([len(r) for r in rows]))

    def _batch(self, attrs, unit_offsets):
        lengths = np.diff(unit_offsets)
        return DependencyBatch(
            attrs=np.ascontiguousarray(attrs), n_samples=len(lengths), n_features=attrs.shape[1],
            unit_offsets=unit_offsets, part_offsets=offsets_from_lengths(lengths * lengths),
            n_weights=2 ** int(self.hash_bits))

    def check_outputs(self, batch, Y):
        Y = super().check_outputs(batch, Y)
        for i in range(batch.n_samples):
            heads = Y[batch.unit_offsets[i]:batch.unit_offsets[i + 1]]
            n = heads.shape[0]
            bad = np.flatnonzero((heads < 0) | (heads > n) | (heads == np.arange(1, n + 1)))
            if bad.size:
                raise ValueError(f"sentence {i}: word {bad[0] + 1} has head {heads[bad[0]]}; "
                                 f"expected a head in 0..{n} other than itself.")
        i, kind, word, other = _first_invalid_tree(Y, batch.unit_offsets, bool(self.single_root),
                                                   bool(self.projective))
        if kind == 1:
            raise ValueError(f"sentence {i}: the heads form a cycle through word {word}; "
                             "expected a tree (every word reaching the root 0).")
        if kind == 2:
            raise ValueError(
                f"sentence {i}: words {other} and {word} both have head 0; single_root=True "
                "expects exactly one word under the root (single_root=False admits several).")
        if kind == 3:
            heads = Y[batch.unit_offsets[i]:batch.unit_offsets[i + 1]]
            raise ValueError(
                f"sentence {i}: the arcs {heads[other - 1]} -> {other} and {heads[word - 1]} -> "
                f"{word} cross; projective=True expects projective trees "
                "(sklearn_struct.datasets.projectivize lifts crossing arcs, filter_projective "
                "drops such sentences; projective=False admits every tree).")
        return Y

    def output_space(self):
        return ArcOutputs(self, codec=HeadsCodec, unit="word")

    def kernel_data(self, batch, training=False):
        cache = (arc_feature_cache(batch.attrs, batch.unit_offsets, int(self.hash_bits))
                 if training else no_feature_cache())
        return ArcData(batch.attrs, batch.unit_offsets, int(self.hash_bits),
                       bool(self.single_root), *cache)

    # ----------------------------------------------------------------- parts
    def _arcs(self, batch):
        """The first-order batch of the same sentences, and where their arcs are among the
        parts of ``batch`` (here all of them: a subclass adds parts after the arcs)."""
        return batch, np.arange(int(batch.part_offsets[-1]))

    def _labelled_parts(self, batch):
        """Every arc, the word it heads (its unit) and its head (its label)."""
        arc_batch, arcs = self._arcs(batch)
        _, position = ragged_positions(arc_batch.unit_offsets)
        lengths = np.diff(arc_batch.unit_offsets)
        arcs_per_word = np.repeat(lengths, lengths)
        words = np.repeat(np.arange(len(position)), arcs_per_word)
        # word m (from 1) has the arcs of the heads 0..n other than itself, in that order
        j = np.arange(len(words)) - np.repeat(offsets_from_lengths(arcs_per_word)[:-1],
                                              arcs_per_word)
        return arcs, words, j + (j > position[words])

    def _unit_loss_weights(self, batch, Y):
        return np.where(batch.attrs[:, PUNCTUATION] == 1, float(self.punctuation_weight), 1.0)


class ArcOutputs(OutputSpace):
    """Output space of dependency trees: heads, per-sentence arc matrices, the tag columns."""

    def input_layout(self, batch):
        """Whether the sentences carry a second tag set: it changes every POS template.

        Parameters
        ----------
        batch : DependencyBatch
            A batch returned by :meth:`make_batch`.

        Returns
        -------
        layout : str
            ``"5 attribute columns per word (a second tag set)"`` or ``"3 or 4
            attribute columns per word (no second tag set)"``.
        """
        if batch.n_features == 5:
            return "5 attribute columns per word (a second tag set)"
        return "3 or 4 attribute columns per word (no second tag set)"

    def unit_values(self, batch, v):
        """Per-sentence ``(n + 1, n)`` arc matrices: ``values[i][h, m - 1]`` for arc ``(h, m)``.

        Parameters
        ----------
        batch : DependencyBatch
            A batch returned by :meth:`make_batch`.
        v : ndarray of shape (n_parts_total,)
            A value for every part (scores, marginals); only the arcs' are shown (not
            the sibling parts of a second-order tree).

        Returns
        -------
        values : list of ndarray of shape (n_i + 1, n_i)
            Zero where ``h == m``.
        """
        batch, arcs = self.structure._arcs(batch)
        v = np.asarray(v)[arcs]
        out = []
        for i in range(batch.n_samples):
            n = batch.unit_offsets[i + 1] - batch.unit_offsets[i]
            block = v[batch.part_offsets[i]:batch.part_offsets[i + 1]].reshape(n, n)
            matrix = np.zeros((n + 1, n))
            for m in range(1, n + 1):
                heads = [h for h in range(n + 1) if h != m]
                matrix[heads, m - 1] = block[m - 1]
            out.append(matrix)
        return out
