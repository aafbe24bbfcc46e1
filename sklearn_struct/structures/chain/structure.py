"""First-order linear-chain structure: node parts and tied label-transition parts.

A sequence ``x`` of ``T`` tokens (one feature row per token) gets labels
``y = (y_0, ..., y_{T-1})`` in ``{0, ..., K-1}``.  Its parts are

* node parts ``(t, k)``: feature vector ``e_k (x) x_t`` (token features times label);
* transition parts ``(a, b)``: label ``a`` followed by ``b`` anywhere in the
  sequence.  They are *tied over positions*: one score per pair, and the
  encoding / marginal of ``(a, b)`` is the number / expected number of
  positions where ``a`` is followed by ``b``;
* optionally (``start_end=True``) start parts ``k`` (``y_0 = k``) and end parts
  ``k`` (``y_{T-1} = k``).

Tying makes the part vector of a sequence ``T*K + K*K (+ 2K)`` long instead of
``T*K + (T-1)*K*K``, while ``phi`` and ``w . phi`` are exactly those of the usual
chain CRF / M3N, because transition features do not depend on the position.

Constraints (allowed transitions, first and last labels) restrict the output
set: inference adds a score of ``-inf`` to every forbidden transition, start and
end, so that forbidden labellings have probability exactly 0 and are never
decoded, and ``check_outputs`` rejects them.
"""

from dataclasses import dataclass

import numpy as np

from . import _kernels as kernels
from .._output_space import LabelledUnits
from .._token_kernels import CHAIN_KERNEL_OPS, kernel_rows, token_kernel_data
from .._batch import (
    Batch,
    example_column_norms,
    check_encoded_states,
    check_part_vector,
    offsets_from_lengths,
    ragged_positions,
)
from ..._chunk_tags import chunk_constraints
from .._node_labels import NodeLabels, NodeWeights
from .._sequences import SequenceInputs

__all__ = ["ChainBatch", "ChainStructure"]


@dataclass(frozen=True)
class ChainBatch(Batch):
    """A set of sequences in the form :class:`ChainStructure`'s operations use.

    Parameters
    ----------
    X : ndarray of shape (n_tokens, n_features) or scipy.sparse.csr_matrix
        Token features of all sequences stacked (float64; C-contiguous when
        dense; CSR as soon as one input sequence was sparse).
    n_states : int
        Number of labels ``K``.
    start_end : bool
        Whether the parts include start and end parts.
    n_samples : int
        Number of sequences.
    n_features : int
        Number of features per token.
    unit_offsets : ndarray of int64 of shape (n_samples + 1,)
        Token offsets: sequence ``i`` is ``X[unit_offsets[i]:unit_offsets[i + 1]]``.
    part_offsets : ndarray of int64 of shape (n_samples + 1,)
        Sequence ``i`` owns parts ``part_offsets[i]:part_offsets[i + 1]``:
        ``T_i * K`` node parts (``(t, k)`` at ``t * K + k``), ``K * K``
        transition parts (``(a, b)`` at ``T_i * K + a * K + b``), then, if
        ``start_end``, ``K`` start parts and ``K`` end parts.
    n_weights : int
        ``K * n_features + K * K (+ 2 * K)``; see :meth:`ChainStructure.split_weights`.
    node_part_starts : ndarray of int64 of shape (n_tokens,)
        Index of part ``(t, 0)`` of every token.
    transition_part_starts : ndarray of int64 of shape (n_samples,)
        Index of transition part ``(0, 0)`` of every sequence.

    Attributes
    ----------
    lengths : ndarray of int64 of shape (n_samples,)
        Number of tokens of every sequence.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures import ChainStructure
    >>> X = [np.ones((3, 4)), np.ones((2, 4))]
    >>> batch = ChainStructure(start_end=False).make_batch(X, n_states=2)
    >>> batch.lengths, batch.unit_offsets
    (array([3, 2]), array([0, 3, 5]))
    >>> batch.part_offsets  # T * K node parts + K * K transitions per sequence
    array([ 0, 10, 18])
    >>> batch.n_weights  # W (2, 4), transition (2, 2)
    12
    """

    X: object
    n_states: int
    start_end: bool
    node_part_starts: np.ndarray
    transition_part_starts: np.ndarray

    ragged = {"X": "unit_offsets"}
    shared = ("n_states", "start_end")

    @property
    def lengths(self):
        """Number of tokens of every sequence."""
        return np.diff(self.unit_offsets)


class ChainStructure(SequenceInputs, NodeLabels, NodeWeights):
    """First-order linear chain with per-token features and label transitions.

    The score of a labelling ``y`` of a sequence ``x`` is::

        sum_t W[y_t] . x_t + sum_{t>=1} transition[y_{t-1}, y_t]
            + start[y_0] + end[y_{T-1}]

    with the weight vector laid out as
    ``w = concat(W.ravel(), transition.ravel(), start, end)`` (``W`` of shape
    ``(K, n_features)``, ``transition`` ``(K, K)`` indexed (previous, next);
    ``start``/``end`` only when ``start_end=True``).  Transition parts are tied
    over positions (see the module docstring and :class:`ChainBatch` for the
    part layout).  The loss is the Hamming loss, optionally weighted by the
    true label of each token.  Inference (forward-backward, Viterbi) runs in
    numba, in log space, over a whole batch per call.  Read more in the
    :ref:`User Guide <structures>`.

    The labellings can be constrained (for example to valid IOB chunk tags):
    a forbidden transition, first or last label gets the score ``-inf``, so
    that Viterbi never outputs it and its probability is exactly 0 in the
    marginals and the log-partition.

    Parameters
    ----------
    start_end : bool, default=True
        Add start and end parts (scores of the first and of the last label).
    loss_weights : array-like of shape (n_states,), default=None
        Cost of mislabelling a token whose *true* label is ``k``; ``None`` is
        the plain Hamming loss (number of wrong tokens).
    allowed_transitions : None, {"IOB1", "IOB2", "BIO", "BIOES"} or array-like of bool \
            of shape (n_states, n_states), default=None
        Which label may follow which: entry ``[a, b]`` true when label ``b``
        may follow label ``a``, indexed like the estimator's ``classes_``
        (the sorted distinct training labels).  A scheme name derives the
        transitions, first and last labels from the label names when the
        estimator is fitted (:func:`~sklearn_struct.datasets.chunk_constraints`;
        ``allowed_start`` and ``allowed_end`` must then be ``None``).
        ``None``: every transition is allowed.
    allowed_start, allowed_end : None or array-like of bool of shape (n_states,), \
            default=None
        Labels allowed first / last in a sequence (``None``: all).  They
        apply with or without ``start_end`` parts.
    constrain_training : bool, default=False
        Whether learning runs its inference under the constraints too (a CRF
        of the constrained output set, whose training labels must then obey
        the constraints), or only decoding and the marginals of the fitted
        model do (as CRFsuite users usually do; the model is trained as an
        unconstrained chain).  Estimators ask the output space's
        ``training_structure``.

    See Also
    --------
    ChainBatch : The batch of a set of sequences (part layout).
    MulticlassStructure : One label per sample instead of per token.

    Notes
    -----
    How the parts operations of :class:`BaseStructure` specialise to chains:

    * ``encode`` gives node indicators, the *number* of times each label pair
      follows each other in a sequence (tied transition parts), and start/end
      indicators; ``marginals`` returns the expected values of the same
      entries, i.e. expected transition counts.
    * ``decode`` reads the labels from the node parts only (largest node part
      of every token).
    * ``part_losses`` is ``loss_weights[y_t] * [k != y_t]`` on node part
      ``(t, k)`` and 0 on transition, start and end parts.
    * ``argmax`` and ``loss_augmented_argmax`` run Viterbi; ``marginals``
      runs forward-backward.  ``project`` is not supported.
    * With constraints, ``check_outputs`` rejects labellings they forbid
      (naming the sequence and position); ``for_classes`` resolves a scheme
      name into masks, and its ``training_structure`` drops the constraints
      unless ``constrain_training``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures import ChainStructure
    >>> structure = ChainStructure(start_end=False)
    >>> X = [np.array([[1.0], [0.0], [1.0]]), np.array([[0.0]])]
    >>> batch = structure.make_batch(X, n_states=2)
    >>> w = np.array([1.0, -1.0, 0, 0, 0, 0])  # W (2, 1), transition (2, 2)
    >>> scores = structure.part_scores(batch, w)
    >>> structure.argmax(batch, scores)
    array([0, 0, 0, 0])

    A transition bonus for "0 then 1" makes the first sequence alternate:

    >>> w[2:] = [0.0, 3.0, 0.0, 0.0]
    >>> structure.argmax(batch, structure.part_scores(batch, w))
    array([0, 1, 0, 0])
    >>> mu, log_z = structure.marginals(batch, structure.part_scores(batch, w))
    >>> np.round(mu[:6].reshape(3, 2), 3)  # p(y_t = k) of the first sequence
    array([[0.976, 0.024],
           [0.155, 0.845],
           [0.786, 0.214]])

    Forbidding "1 then 1" and a last label 1 changes the labelling of the first
    sequence and leaves the forbidden labellings no probability:

    >>> w = np.array([-1.0, 1.0, 0, 0, 0, 2.0])  # x = 1 favours label 1; bonus for (1, 1)
    >>> structure.argmax(batch, structure.part_scores(batch, w))
    array([1, 1, 1, 0])
    >>> constrained = ChainStructure(
    ...     start_end=False, allowed_transitions=[[True, True], [True, False]],
    ...     allowed_end=[True, False])
    >>> scores = constrained.part_scores(batch, w)
    >>> constrained.argmax(batch, scores)
    array([1, 0, 0, 0])
    >>> mu, _ = constrained.marginals(batch, scores)
    >>> mu[4:6], float(mu[9])  # p(y_2 = k), expected count of the transition (1, 1)
    (array([1., 0.]), 0.0)

    Constraints by label names, with a tagging scheme:

    >>> chain = ChainStructure(allowed_transitions="IOB2")
    >>> chain.output_space().for_classes(["B-PER", "I-PER", "O"])
    ChainStructure(allowed_transitions=array(...), allowed_start=array([ True, False,  True]), \
allowed_end=array([ True,  True,  True]))
    """

    kernel_ops = CHAIN_KERNEL_OPS

    def __init__(self, start_end=True, loss_weights=None, allowed_transitions=None,
                 allowed_start=None, allowed_end=None, constrain_training=False):
        self.start_end = start_end
        self.loss_weights = loss_weights
        self.allowed_transitions = allowed_transitions
        self.allowed_start = allowed_start
        self.allowed_end = allowed_end
        self.constrain_training = constrain_training

    # ---------------------------------------------------------- constraints
    def _has_constraints(self):
        return any(mask is not None for mask in
                   (self.allowed_transitions, self.allowed_start, self.allowed_end))

    def _constraint_masks(self, n_states):
        """``(transitions, start, end)`` boolean masks, or None without constraints."""
        if not self._has_constraints():
            return None
        given = (self.allowed_transitions, self.allowed_start, self.allowed_end)
        name = type(self).__name__
        if isinstance(self.allowed_transitions, str):
            raise ValueError(
                f"{name}: allowed_transitions={self.allowed_transitions!r} names a tagging "
                "scheme, which needs the label names: estimators resolve it when fitting; "
                "called directly, use structure.output_space().for_classes(labels) first.")
        if not isinstance(self.constrain_training, (bool, np.bool_)):
            raise TypeError(f"{name}: constrain_training must be a bool, got "
                            f"{self.constrain_training!r}.")
        shapes = {"allowed_transitions": (n_states, n_states), "allowed_start": (n_states,),
                  "allowed_end": (n_states,)}
        masks = []
        for (parameter, shape), mask in zip(shapes.items(), given):
            if mask is None:
                masks.append(np.ones(shape, dtype=bool))
                continue
            array = np.asarray(mask)
            if array.dtype != bool:
                raise TypeError(f"{name}: {parameter} must be an array of booleans, got dtype "
                                f"{array.dtype}.")
            if array.shape != shape:
                raise ValueError(
                    f"{name}: {parameter} has shape {array.shape} but there are {n_states} "
                    f"labels; expected shape {shape}, indexed like the estimator's classes_ "
                    "(the sorted distinct training labels).")
            masks.append(array)
        return tuple(masks)

    def _constraint_bias(self, n_states):
        """The kernels' ``bias``: 0 for allowed, -inf for forbidden (empty: unconstrained)."""
        masks = self._constraint_masks(n_states)
        if masks is None:
            return np.zeros(0)
        allowed = np.concatenate([mask.ravel() for mask in masks])
        return np.where(allowed, 0.0, -np.inf)

    def _check_feasible(self, lengths, n_states):
        """Every sequence length must have a labelling that the constraints allow."""
        masks = self._constraint_masks(n_states)
        if masks is None:
            return
        transitions, start, end = masks
        reachable = start.copy()  # labels that an allowed prefix of length t can end with
        feasible = np.zeros(int(lengths.max()) + 1, dtype=bool)
        for t in range(1, len(feasible)):
            feasible[t] = np.any(reachable & end)
            reachable = (reachable.astype(int) @ transitions) > 0
        bad = np.flatnonzero(~feasible[lengths])
        if bad.size:
            raise ValueError(
                f"{type(self).__name__}: sequence {bad[0]} has {lengths[bad[0]]} tokens, and no "
                "labelling of that length obeys allowed_transitions, allowed_start and "
                "allowed_end.")

    # ------------------------------------------------------------------ data
    def _batch(self, X, unit_offsets, n_states, start_end=None):
        """The batch of the stacked token rows (``make_batch`` checks the settings and
        that the constraints allow every length; ``take`` passes the batch's ``start_end``).
        """
        if start_end is None:
            if not isinstance(self.start_end, (bool, np.bool_)):
                raise TypeError(f"{type(self).__name__}: start_end must be a bool, got "
                                f"{self.start_end!r}.")
            start_end = bool(self.start_end)
            self._check_feasible(np.diff(unit_offsets), n_states)
        K = n_states
        lengths = np.diff(unit_offsets)
        extra = K * K + (2 * K if start_end else 0)
        part_offsets = offsets_from_lengths(lengths * K + extra)
        owner, positions = ragged_positions(unit_offsets)
        n_features = X.shape[1]
        return ChainBatch(
            X=kernel_rows(X),
            n_states=K,
            start_end=start_end,
            n_samples=len(lengths),
            n_features=n_features,
            unit_offsets=unit_offsets,
            part_offsets=part_offsets,
            n_weights=K * n_features + extra,
            node_part_starts=part_offsets[owner] + positions * K,
            transition_part_starts=part_offsets[:-1] + lengths * K,
        )

    # ------------------------------------------------------- weight layout
    def split_weights(self, batch, w):
        """Split a weight vector into its node, transition, start and end blocks.

        Parameters
        ----------
        batch : ChainBatch
            A batch returned by :meth:`make_batch` (it fixes ``K`` and
            ``n_features``).
        w : array-like of shape (batch.n_weights,)
            Weight vector ``concat(W.ravel(), transition.ravel(), start, end)``.

        Returns
        -------
        W : ndarray of shape (K, n_features)
            Node weights; row ``k`` scores tokens labelled ``k``.
        transition : ndarray of shape (K, K)
            ``transition[a, b]`` scores label ``a`` followed by ``b``.
        start : ndarray of shape (K,)
            Scores of the first label (zeros when ``start_end=False``).
        end : ndarray of shape (K,)
            Scores of the last label (zeros when ``start_end=False``).
            All four are views of ``w`` when ``w`` is a float64 array, except
            the zero blocks.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_struct.structures import ChainStructure
        >>> structure = ChainStructure()
        >>> batch = structure.make_batch([np.zeros((2, 3))], n_states=2)
        >>> W, transition, start, end = structure.split_weights(
        ...     batch, np.arange(batch.n_weights, dtype=float))
        >>> W.shape, transition.shape, start, end
        ((2, 3), (2, 2), array([10., 11.]), array([12., 13.]))
        """
        self._check_batch(batch)
        w = check_part_vector(w, batch.n_weights, type(self).__name__, "weights w")
        K, d = batch.n_states, batch.n_features
        W = w[:K * d].reshape(K, d)
        transition = w[K * d:K * d + K * K].reshape(K, K)
        if batch.start_end:
            p = K * d + K * K
            return W, transition, w[p:p + K], w[p + K:p + 2 * K]
        return W, transition, np.zeros(K), np.zeros(K)

    def check_outputs(self, batch, Y):
        self._check_batch(batch)
        name = type(self).__name__
        Y = check_encoded_states(Y, batch.unit_offsets, batch.n_states, name)
        masks = self._constraint_masks(batch.n_states)
        if masks is None:
            return Y
        transitions, start, end = masks
        first, last = batch.unit_offsets[:-1], batch.unit_offsets[1:] - 1
        owner, positions = ragged_positions(batch.unit_offsets)
        inner = np.flatnonzero(positions > 0)  # tokens with a predecessor
        found = []
        for units, describe in (
            (first[~start[Y[first]]], lambda u: f"label {Y[u]} cannot come first (allowed_start)"),
            (inner[~transitions[Y[inner - 1], Y[inner]]],
             lambda u: f"label {Y[u]} cannot follow label {Y[u - 1]} (allowed_transitions)"),
            (last[~end[Y[last]]], lambda u: f"label {Y[u]} cannot come last (allowed_end)"),
        ):
            if units.size:
                found.append((units[0], describe(units[0])))
        if found:
            unit, what = min(found)
            raise ValueError(f"{name}: sequence {owner[unit]}, position {positions[unit]}: {what}; "
                             "labels are state indices (positions in classes_).")
        return Y

    def edge_marginals(self, batch, scores):
        """Per-position edge marginals ``p(y_t = a, y_{t+1} = b)`` of every sequence.

        Their sum over positions is the transition part of :meth:`marginals`.

        Parameters
        ----------
        batch, scores
            The batch and its part scores, as for :meth:`marginals`.

        Returns
        -------
        edges : list of ndarray of shape (T_i - 1, K, K)
            One array per sequence; ``edges[i][t, a, b]`` is
            ``p(y_t = a, y_{t+1} = b)`` in sequence ``i`` (empty for a
            sequence of one token).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_struct.structures import ChainStructure
        >>> structure = ChainStructure(start_end=False)
        >>> batch = structure.make_batch([np.zeros((3, 1))], n_states=2)
        >>> scores = np.zeros(batch.part_offsets[-1])
        >>> edges = structure.edge_marginals(batch, scores)
        >>> edges[0].shape
        (2, 2, 2)
        >>> edges[0][1].round(6)  # uniform: every label pair has probability 1/4
        array([[0.25, 0.25],
               [0.25, 0.25]])
        """
        scores = self._check_scores(batch, scores)
        K = batch.n_states
        edge_offsets = offsets_from_lengths((batch.lengths - 1) * K * K)
        flat = np.empty(edge_offsets[-1])
        log_z = np.empty(batch.n_samples)
        kernels.chain_edge_marginals_batch(scores, batch.unit_offsets, batch.part_offsets, K,
                                           batch.start_end, self._constraint_bias(K),
                                           edge_offsets, flat, log_z)
        return [
            flat[edge_offsets[i]:edge_offsets[i + 1]].reshape(-1, K, K)
            for i in range(batch.n_samples)
        ]

    def feature_bounds(self, batch, geometry):
        self._check_batch(batch)
        if geometry != "entropic":
            self._unsupported("feature_bounds")
        transitions = np.maximum(batch.lengths - 1, 1 if batch.start_end else 0)
        return np.maximum(example_column_norms(batch.X, batch.unit_offsets, 1), transitions)

    # ---------------------------------------------------------------- outputs
    def output_space(self):
        return ChainOutputs(self, self._node_index, unit="token")

    # --------------------------------------------------------------- kernels
    def kernel_data(self, batch, training=False):
        self._check_batch(batch)
        return token_kernel_data(batch.X, batch.unit_offsets, batch.n_states, chain=True,
                                 start_end=batch.start_end, training=training,
                                 bias=self._constraint_bias(batch.n_states))

    # --------------------------------------------------------------- helpers
    def _check_batch(self, batch):
        if not isinstance(batch, ChainBatch):
            raise TypeError(
                f"{type(self).__name__}: expected a ChainBatch from make_batch, "
                f"got {type(batch).__name__}."
            )
        if batch.start_end != bool(self.start_end):
            raise ValueError(
                f"{type(self).__name__}(start_end={self.start_end}) got a batch built with "
                f"start_end={batch.start_end}; rebuild it with make_batch."
            )

    @staticmethod
    def _node_index(batch):
        return batch.node_part_starts[:, None] + np.arange(batch.n_states)


class ChainOutputs(LabelledUnits):
    """Output space of a chain: token labels, a tagging scheme given by name, its weight blocks,
    partial labels."""

    partial_labels = True

    def for_classes(self, classes, y=None):
        """This chain for outputs labelled ``classes``, with a scheme name resolved.

        Parameters
        ----------
        classes : array-like of shape (n_states,)
            The label of every state (the estimator's ``classes_``).
        y : object, default=None
            The training targets (unused).

        Returns
        -------
        structure : ChainStructure
            The chain itself unless ``allowed_transitions`` names a tagging scheme; then
            a new chain with the scheme's masks over ``classes``
            (:func:`~sklearn_struct.datasets.chunk_constraints`).

        Raises
        ------
        ValueError or TypeError
            If a label does not fit the scheme, or the scheme is given with
            ``allowed_start`` or ``allowed_end``.
        """
        chain = self.structure
        scheme = chain.allowed_transitions
        if not isinstance(scheme, str):
            return chain
        name = type(chain).__name__
        if chain.allowed_start is not None or chain.allowed_end is not None:
            raise ValueError(
                f"{name}: allowed_transitions={scheme!r} fixes the allowed first and last labels "
                "too; leave allowed_start and allowed_end as None (or give all three as masks, "
                "e.g. from sklearn_struct.datasets.chunk_constraints).")
        try:
            masks = chunk_constraints(np.asarray(classes).tolist(), scheme)
        except (TypeError, ValueError) as error:
            raise type(error)(f"{name}(allowed_transitions={scheme!r}): {error}") from None
        return type(chain)(**{**chain._params(), **masks})

    def training_structure(self):
        """The chain that learning runs its inference on: without the constraints
        unless ``constrain_training``.

        Returns
        -------
        structure : ChainStructure
            The chain itself when unconstrained or with ``constrain_training=True``,
            else a new chain without constraints.
        """
        chain = self.structure
        if chain.constrain_training or not chain._has_constraints():
            return chain
        return type(chain)(start_end=chain.start_end, loss_weights=chain.loss_weights)

    def weight_attributes(self, batch, w):
        W, transition, start, end = self.structure.split_weights(batch, w)
        attributes = {"coef_": W, "transition_": transition}
        if batch.start_end:
            attributes.update(start_transition_=start, end_transition_=end)
        return attributes
