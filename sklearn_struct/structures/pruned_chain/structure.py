"""A first-order chain over candidate labels from a tag dictionary, for large label sets.

An exact chain costs ``O(T L^2)`` per sentence, and EG keeps one dual value per part: with
``L = 321`` labels that is 103k tied transition parts per sentence.  The pruned chain lets
token ``t`` take only its *candidates* ``C_t``: the labels the training data saw with its
word; a word seen fewer than ``min_count`` times (rare) or not at all also takes the
*fallback*, the most frequent labels of the rare words of the training data, as many as
cover ``fallback_coverage`` of their tokens.  Its parts are the candidates'
node parts and, per position, the pairs of adjacent candidate sets, so that inference
and the dual cost ``O(sum_t |C_{t-1}| |C_t|)``.  Its features are the chain's, and so
are its weights but for the (feature, label) pairs that no training token's features and
candidates make, which a fit would leave at 0 and which it drops (``weight_support``);
with every label a candidate it is the exact chain.  A training token's label is always
among its candidates (every label seen with a word is kept), so that a fit needs no
other labels.
"""

from dataclasses import dataclass
import types

import numpy as np
import scipy.sparse as sp

from . import _kernels as kernels
from .._node_labels import LabelledParts
from .._sequences import SequenceInputs
from .._output_space import LabelledUnits
from .._token_kernels import token_features
from .._batch import (Batch, check_encoded_states, example_column_norms, example_of_unit,
                      offsets_from_lengths, stack_ragged_rows)

__all__ = ["PrunedChainBatch", "PrunedChainStructure"]


@dataclass(frozen=True)
class PrunedChainBatch(Batch):
    """Sequences and their candidate labels (the part layout: see ``_kernels``).

    Parameters
    ----------
    n_samples, n_features, unit_offsets, part_offsets, n_weights
        As in every batch (:class:`~sklearn_struct.structures.ChainBatch`).
    X : ndarray or scipy.sparse.csr_matrix of shape (n_tokens, n_features)
        Token features of all sequences stacked.
    n_states : int
        Number of labels ``L``.
    start_end : bool
        Whether the parts include start and end parts.
    candidate_offsets : ndarray of int64 of shape (n_tokens + 1,)
        Token ``u``'s candidates are ``labels[candidate_offsets[u]:candidate_offsets[u + 1]]``.
    labels : ndarray of int64 of shape (n_candidates,)
        The candidates of every token, sorted per token.
    pair_offsets : ndarray of int64 of shape (n_tokens + 1,)
        Cumulated numbers of transition parts into each token.
    support, support_offsets : ndarray of int64
        The keys ``j * L + label`` of the node weights, sorted, and where each feature's
        start.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures import PrunedChainStructure
    >>> structure = PrunedChainStructure(word_features=[0], allowed_labels=np.array(
    ...     [[True, False], [True, True]]))
    >>> batch = structure.make_batch([np.array([[1.0], [0.0]])], n_states=2)
    >>> batch.candidate_offsets, batch.pair_offsets   # 1 then 2 candidates: 2 pairs
    (array([0, 1, 3]), array([0, 0, 2]))
    """

    X: object
    n_states: int
    start_end: bool
    candidate_offsets: np.ndarray
    labels: np.ndarray
    pair_offsets: np.ndarray
    support: np.ndarray
    support_offsets: np.ndarray

    ragged = {"X": "unit_offsets"}
    shared = ("n_states",)


class PrunedChainStructure(SequenceInputs, LabelledParts):
    """First-order chain whose tokens take only the candidate labels of a tag dictionary.

    The model (features, weights, score of a labelling) is that of
    :class:`ChainStructure`; the output set is restricted: token ``t`` takes a label
    among its candidates, which come from ``allowed_labels``, a row per word (see the
    module docstring).  Estimators fit the dictionary from the training data
    (:meth:`PrunedChainOutputs.for_training_data`) and predict with it.  Read more in
    the :ref:`User Guide <large_label_sets>`.

    Parameters
    ----------
    word_features : array-like of int, default=None
        The columns of ``X`` that name a token's word (e.g. the ``w[0]=...`` columns of
        a :class:`~sklearn_struct.preprocessing.SequenceDictVectorizer`): a token's word
        is its first non-zero one.  ``None``: no word is known, every token takes the
        fallback (every training label: the exact chain).
    min_count : int, default=5
        A word seen fewer times in training is rare: it also takes the fallback.
    fallback_coverage : float in (0, 1], default=0.99
        The fallback is the fewest most frequent labels of the rare words' training tokens
        that cover this share of them (1: every label seen on a rare word).
    allowed_labels : array-like of bool of shape (len(word_features) + 1, n_states), \
            default=None
        The dictionary: row ``j`` the candidates of word ``word_features[j]``, the last
        row those of any other token.  ``None``: fitted by the estimator.
    weight_support : array-like of int of shape (n_support,), default=None
        The (feature ``j``, label) pairs that have a weight, as sorted keys
        ``j * n_states + label``; fitted with ``allowed_labels`` (the pairs of the
        training tokens' features and candidates).  ``None``: every pair.
    start_end : bool, default=True
        Add start and end parts.
    loss_weights : array-like of shape (n_states,), default=None
        Cost of mislabelling a token of each true label (``None``: Hamming loss).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures import PrunedChainStructure
    >>> X = [np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])]   # words: 0, 1, unknown
    >>> structure = PrunedChainStructure(word_features=[0, 1], start_end=False,
    ...     allowed_labels=[[True, False, False], [False, True, True], [True, True, True]])
    >>> batch = structure.make_batch(X, n_states=3)
    >>> batch.labels, batch.part_offsets   # candidates; 1 + 2 + 3 nodes, 2 + 6 pairs
    (array([0, 1, 2, 0, 1, 2]), array([ 0, 14]))
    >>> structure.argmax(batch, np.zeros(batch.part_offsets[-1]))
    array([0, 1, 0])
    """

    kernel_ops = kernels.KERNEL_OPS

    def __init__(self, word_features=None, min_count=5, fallback_coverage=0.99,
                 allowed_labels=None, weight_support=None, start_end=True, loss_weights=None):
        self.word_features = word_features
        self.min_count = min_count
        self.fallback_coverage = fallback_coverage
        self.allowed_labels = allowed_labels
        self.weight_support = weight_support
        self.start_end = start_end
        self.loss_weights = loss_weights

    # ------------------------------------------------------------ dictionary
    def word_index(self, X):
        """Every token's row of ``allowed_labels``: its word's, else the last one.

        Parameters
        ----------
        X : ndarray or scipy.sparse matrix of shape (n_tokens, n_features)
            Stacked token features.

        Returns
        -------
        rows : ndarray of int64 of shape (n_tokens,)
            The row of every token.
        """
        name = type(self).__name__
        columns = np.zeros(0, dtype=np.int64) if self.word_features is None else \
            np.asarray(self.word_features)
        if columns.ndim != 1 or (columns.size and not np.issubdtype(columns.dtype, np.integer)):
            raise TypeError(f"{name}: word_features must be a 1-D array of column indices, got "
                            f"{self.word_features!r}.")
        bad = np.flatnonzero((columns < 0) | (columns >= X.shape[1]))
        if bad.size:
            raise ValueError(f"{name}: word_features[{bad[0]}] = {columns[bad[0]]} is not a "
                             f"column of X, which has {X.shape[1]}.")
        row_of = np.full(X.shape[1], columns.size, dtype=np.int64)
        row_of[columns[::-1]] = np.arange(columns.size)[::-1]  # a repeated column: its first
        X = sp.csr_matrix(X)
        entry_rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        word = (row_of[X.indices] < columns.size) & (X.data != 0)
        rows = np.full(X.shape[0], columns.size, dtype=np.int64)
        first = np.full(X.shape[0], X.shape[1], dtype=np.int64)  # the first word column
        np.minimum.at(first, entry_rows[word], X.indices[word])
        known = first < X.shape[1]
        rows[known] = row_of[first[known]]
        return rows

    def fit_dictionary(self, X, Y, n_states):
        """This structure with ``allowed_labels`` fitted on stacked tokens and their labels.

        Parameters
        ----------
        X : ndarray or scipy.sparse matrix of shape (n_tokens, n_features)
            Stacked token features of the training sequences.
        Y : ndarray of int64 of shape (n_tokens,)
            Encoded labels.
        n_states : int
            Number of labels.

        Returns
        -------
        structure : PrunedChainStructure
            A new structure with ``allowed_labels`` and ``weight_support`` fitted.
        """
        name, min_count, share = type(self).__name__, self.min_count, self.fallback_coverage
        if isinstance(min_count, bool) or not isinstance(min_count, (int, np.integer)) \
                or min_count < 1:
            raise ValueError(f"{name}: min_count must be a positive integer, got {min_count!r}.")
        if isinstance(share, bool) or not isinstance(share, (float, int)) or not 0 < share <= 1:
            raise ValueError(f"{name}: fallback_coverage must be a number in (0, 1], got "
                             f"{share!r}.")
        rows = self.word_index(X)
        n_rows = (0 if self.word_features is None else len(self.word_features)) + 1
        seen = np.zeros((n_rows, n_states), dtype=bool)
        seen[rows, Y] = True
        rare = np.bincount(rows, minlength=n_rows) < min_count
        rare[-1] = True
        counts = np.bincount(Y[rare[rows]], minlength=n_states)
        if not counts.any():  # every training word frequent: the most frequent labels
            counts = np.bincount(Y, minlength=n_states)
        order = np.argsort(-counts, kind="stable")
        covered = np.cumsum(counts[order])
        fallback = np.zeros(n_states, dtype=bool)
        fallback[order[:np.searchsorted(covered, share * covered[-1] * (1 - 1e-12)) + 1]] = True
        seen[rare] |= fallback
        fitted = type(self)(**{**self._params(), "allowed_labels": seen, "weight_support": None})
        return type(self)(**{**fitted._params(), "weight_support": fitted._support(X, n_states)})

    def _support(self, X, n_states, chunk=50000):
        """The sorted keys of the (feature, candidate label) pairs of the tokens of ``X``."""
        X = sp.csr_matrix(X)
        candidates = self._allowed(n_states)[self.word_index(X)]
        keys = []
        for start in range(0, X.shape[0], chunk):
            block = X[start:start + chunk]
            tokens, labels = np.nonzero(candidates[start:start + chunk])
            per_token = np.diff(block.indptr)
            # every (feature of the token, candidate of the token)
            first = np.repeat(np.searchsorted(tokens, np.arange(block.shape[0])), per_token)
            count = np.repeat(np.bincount(tokens, minlength=block.shape[0]), per_token)
            entry = np.repeat(np.arange(block.nnz), count)
            within = np.arange(entry.size) - np.repeat(np.cumsum(count) - count, count)
            keys.append(_distinct(block.indices[entry].astype(np.int64) * n_states
                                  + labels[first[entry] + within]))
        return _distinct(np.concatenate(keys))

    def _allowed(self, n_states):
        name = type(self).__name__
        if self.allowed_labels is None:
            raise ValueError(f"{name}: allowed_labels is unset; estimators fit it; called "
                             "directly, use fit_dictionary(X, Y, n_states) first.")
        allowed = np.asarray(self.allowed_labels)
        n_rows = (0 if self.word_features is None else len(self.word_features)) + 1
        if allowed.dtype != bool or allowed.shape != (n_rows, n_states):
            raise ValueError(f"{name}: allowed_labels must be a boolean array of shape "
                             f"({n_rows}, {n_states}) (a row per word feature and one for the "
                             f"other tokens, a column per label), got {allowed.dtype} "
                             f"{allowed.shape}.")
        empty = np.flatnonzero(~allowed.any(axis=1))
        if empty.size:
            raise ValueError(f"{name}: row {empty[0]} of allowed_labels allows no label.")
        return allowed

    # ------------------------------------------------------------------ data
    def _batch(self, X, unit_offsets, n_states):
        if not isinstance(self.start_end, (bool, np.bool_)):
            raise TypeError(f"{type(self).__name__}: start_end must be a bool, got "
                            f"{self.start_end!r}.")
        allowed = self._allowed(n_states)
        candidates = allowed[self.word_index(X)]
        sizes = candidates.sum(axis=1)
        candidate_offsets = offsets_from_lengths(sizes)
        pairs = np.zeros(len(sizes), dtype=np.int64)
        pairs[1:] = sizes[1:] * sizes[:-1]
        pairs[unit_offsets[:-1]] = 0  # a sentence's first token has no transition
        pair_offsets = offsets_from_lengths(pairs)
        first, last = unit_offsets[:-1], unit_offsets[1:] - 1
        n_parts = (np.diff(candidate_offsets[unit_offsets]) + np.diff(pair_offsets[unit_offsets])
                   + (sizes[first] + sizes[last] if self.start_end else 0))
        L, d = n_states, X.shape[1]
        support = self._weight_keys(L, d)
        return PrunedChainBatch(
            n_samples=len(unit_offsets) - 1, n_features=d, unit_offsets=unit_offsets,
            part_offsets=offsets_from_lengths(n_parts),
            n_weights=len(support) + L * L + (2 * L if self.start_end else 0), X=X,
            n_states=L, start_end=bool(self.start_end), candidate_offsets=candidate_offsets,
            labels=np.nonzero(candidates)[1].astype(np.int64), pair_offsets=pair_offsets,
            support=support, support_offsets=np.searchsorted(support, np.arange(d + 1) * L))

    def _weight_keys(self, n_states, n_features):
        name = type(self).__name__
        if self.weight_support is None:
            return np.arange(n_states * n_features, dtype=np.int64)
        keys = np.asarray(self.weight_support)
        if keys.ndim != 1 or (keys.size and not np.issubdtype(keys.dtype, np.integer)):
            raise TypeError(f"{name}: weight_support must be a 1-D array of integer keys.")
        if keys.size and (keys[0] < 0 or keys[-1] >= n_states * n_features
                          or np.any(np.diff(keys) <= 0)):
            raise ValueError(f"{name}: weight_support must hold increasing keys "
                             f"feature * n_states + label below {n_states * n_features}.")
        return keys.astype(np.int64, copy=False)

    def check_outputs(self, batch, Y):
        name = type(self).__name__
        Y = check_encoded_states(Y, batch.unit_offsets, batch.n_states, name)
        allowed = self._allowed(batch.n_states)
        words = self.word_index(batch.X)
        bad = np.flatnonzero(~allowed[words, Y])
        if bad.size:
            u = int(bad[0])
            i = example_of_unit(batch.unit_offsets, u)
            raise ValueError(
                f"{name}: sequence {i}, position {u - batch.unit_offsets[i]}: label {Y[u]} is "
                f"not among the token's candidates (row {words[u]} of allowed_labels, labels "
                f"{np.flatnonzero(allowed[words[u]]).tolist()}); labels are state indices "
                "(positions in classes_).")
        return Y

    def _labelled_parts(self, batch):
        """The part index of every candidate of every token, its token and its label."""
        tokens = np.repeat(np.arange(batch.unit_offsets[-1]), np.diff(batch.candidate_offsets))
        owner = np.repeat(np.arange(batch.n_samples), np.diff(batch.unit_offsets))[tokens]
        first = batch.candidate_offsets[batch.unit_offsets[:-1]]
        return (batch.part_offsets[owner] + np.arange(len(tokens)) - first[owner], tokens,
                batch.labels)

    def feature_bounds(self, batch, geometry):
        if geometry != "entropic":
            self._unsupported("feature_bounds")
        lengths = np.diff(batch.unit_offsets)
        transitions = np.maximum(lengths - 1, 1 if batch.start_end else 0)
        return np.maximum(example_column_norms(batch.X, batch.unit_offsets, 1), transitions)

    # --------------------------------------------------------------- kernels
    def kernel_data(self, batch, training=False):
        return kernels.PrunedChainData(
            *token_features(batch.X), batch.n_features, batch.unit_offsets, batch.n_states,
            batch.start_end, batch.candidate_offsets, batch.labels, batch.pair_offsets,
            batch.support, batch.support_offsets)

    def output_space(self):
        return PrunedChainOutputs(self, None, unit="token")


def _distinct(keys):
    """The distinct values of an int64 array, sorted (by a sort: faster here than a hash)."""
    keys = np.sort(keys)
    return keys[np.concatenate([[True], keys[1:] != keys[:-1]])] if keys.size else keys


class PrunedChainOutputs(LabelledUnits):
    """Output space of a pruned chain: the chain's weight blocks, per-token views over all
    labels (0 on the labels a token cannot take), and the dictionary fitted at ``fit``."""

    def for_training_data(self, X, y, codec):
        """The structure with its dictionary fitted on the training data (kept if given).

        Parameters
        ----------
        X : list of array-like of shape (T_i, n_features)
        y : list of array-like of shape (T_i,)
        codec : UnitLabelCodec
            The fitted target codec.

        Returns
        -------
        structure : PrunedChainStructure
        """
        structure = self.structure
        if structure.allowed_labels is not None:
            return structure
        rows, unit_offsets = stack_ragged_rows(X, what="sequence")
        shape = types.SimpleNamespace(n_samples=len(unit_offsets) - 1, unit_offsets=unit_offsets)
        return structure.fit_dictionary(rows, codec.encode(shape, y), codec.n_states)

    def weight_attributes(self, batch, w):
        """``coef_`` the weights of the pairs of ``weight_support`` (1-D, in its order: key
        ``j * n_states + label``); ``transition_``, ``start_transition_`` and
        ``end_transition_`` as a chain's.  All are views of ``w``."""
        L, S = batch.n_states, len(batch.support)
        w = np.asarray(w)
        attributes = {"coef_": w[:S], "transition_": w[S:S + L * L].reshape(L, L)}
        if batch.start_end:
            p = S + L * L
            attributes.update(start_transition_=w[p:p + L], end_transition_=w[p + L:p + 2 * L])
        return attributes

    def feature_support(self, batch, w):
        used = batch.support[np.asarray(w)[:len(batch.support)] != 0] // batch.n_states
        support = np.zeros(batch.n_features, dtype=bool)
        support[used] = True
        return support

    def named_weights(self, attributes, feature_names, classes):
        named = super().named_weights({**attributes, "coef_": np.zeros((0, 0))}, [], classes)
        L = len(classes)
        keys = self.structure._weight_keys(L, len(feature_names))
        coef = np.asarray(attributes["coef_"])
        labels, names = np.asarray(classes).tolist(), np.asarray(feature_names).tolist()
        named["state_features_"] = {(names[key // L], labels[key % L]): float(value)
                                    for key, value in zip(keys.tolist(), coef.tolist())
                                    if value != 0.0}
        return named

    def unit_values(self, batch, v):
        parts, tokens, labels = self.structure._labelled_parts(batch)
        values = np.zeros((int(batch.unit_offsets[-1]), batch.n_states))
        values[tokens, labels] = np.asarray(v)[parts]
        return np.split(values, batch.unit_offsets[1:-1])
