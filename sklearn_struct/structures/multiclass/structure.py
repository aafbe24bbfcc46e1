"""Flat multiclass classification as a structure: one part per class.

With this structure every structured learner of the package becomes a flat
linear classifier (comparable with ``LogisticRegression`` / ``LinearSVC``):
the output of sample ``i`` is one class ``k`` and its only part is ``(i, k)``
with feature vector ``phi(x_i, (i, k)) = e_k (x) x_i``.
"""

from dataclasses import dataclass

import numpy as np

from .._node_labels import NodeLabels, NodeWeights
from .._output_space import LabelledUnits
from .._token_kernels import MULTICLASS_KERNEL_OPS, kernel_rows, token_kernel_data
from .._batch import (
    Batch,
    example_column_norms,
    check_encoded_states,
    check_feature_rows,
    check_n_states,
)

__all__ = [
    "MulticlassBatch",
    "MulticlassStructure",
]


@dataclass(frozen=True)
class MulticlassBatch(Batch):
    """A multiclass data set in the form :class:`MulticlassStructure`'s operations use.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features) or scipy.sparse.csr_matrix
        Features, float64 (C-contiguous when dense).
    n_states : int
        Number of classes ``K``.
    n_samples : int
        Number of samples.
    n_features : int
        Number of features per sample.
    unit_offsets : ndarray of int64 of shape (n_samples + 1,)
        ``arange(n_samples + 1)``: one output unit per sample.
    part_offsets : ndarray of int64 of shape (n_samples + 1,)
        ``K * arange(n_samples + 1)``: part ``k`` of sample ``i`` is at ``i * K + k``.
    n_weights : int
        ``K * n_features``; ``w = W.ravel()`` with ``W`` of shape (K, n_features).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures import MulticlassStructure
    >>> batch = MulticlassStructure().make_batch(np.ones((2, 5)), n_states=3)
    >>> batch.unit_offsets, batch.part_offsets, batch.n_weights
    (array([0, 1, 2]), array([0, 3, 6]), 15)
    """

    X: object
    n_states: int

    ragged = {}  # a sample is one unit: X has a row per example
    per_example = ("X",)
    shared = ("n_states",)


class MulticlassStructure(NodeLabels, NodeWeights):
    """One part per class: a flat ``K``-class linear classifier as a structure.

    Parts of sample ``i`` are the ``K`` pairs ``(i, k)``, laid out at
    ``i * K + k``; the part feature map is ``phi(x, (i, k)) = e_k (x) x`` so
    that the score of part ``(i, k)`` is ``W[k] . x_i`` with
    ``w = W.ravel()`` and ``W`` of shape ``(K, n_features)``.  The loss is the
    (optionally class-weighted) 0/1 loss; the relaxed output polytope is the
    probability simplex of each sample.  Read more in the
    :ref:`User Guide <structures>`.

    Parameters
    ----------
    loss_weights : array-like of shape (n_states,), default=None
        Cost of misclassifying a sample whose *true* class is ``k``
        (``loss(y, y') = loss_weights[y] * [y != y']``).  ``None`` means the
        plain 0/1 loss.

    See Also
    --------
    MulticlassBatch : The batch of a multiclass data set.
    ChainStructure : One label per token of a sequence.

    Notes
    -----
    How the parts operations of :class:`BaseStructure` specialise to flat
    classification: ``encode`` is one-hot, ``argmax`` and ``decode`` take the
    part of largest value (the lowest class index on ties), ``part_losses`` is
    ``loss_weights[y_i] * [k != y_i]`` on part ``(i, k)``, ``marginals`` is the
    softmax of each sample's scores with their log-sum-exp as log-partition,
    and ``project`` is the exact (sort-based) Euclidean projection of each
    sample's ``K`` values onto the probability simplex.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures import MulticlassStructure
    >>> structure = MulticlassStructure()
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> batch = structure.make_batch(X, n_states=3)
    >>> W = np.array([[1.0, 0.0], [0.0, 2.0], [0.5, 0.5]])
    >>> scores = structure.part_scores(batch, W.ravel())
    >>> structure.argmax(batch, scores)
    array([0, 1])
    >>> scores.reshape(2, 3)
    array([[1. , 0. , 0.5],
           [0. , 2. , 0.5]])

    With true classes ``[0, 1]``, class 2 beats class 0 on the first sample by
    less than the loss of 1, so it is the most violated class:

    >>> structure.loss_augmented_argmax(batch, scores, [0, 1])
    array([2, 1])
    >>> structure.project(batch, np.array([2.0, 0.0, 0.0, 0.75, 0.75, 0.25]))
    array([1. , 0. , 0. , 0.5, 0.5, 0. ])
    """

    kernel_ops = MULTICLASS_KERNEL_OPS
    accepts_forbidden_parts = False

    def __init__(self, loss_weights=None):
        self.loss_weights = loss_weights

    # ------------------------------------------------------------------ data
    def make_batch(self, X, n_states=None):
        """Validate a feature matrix, dense or sparse, and build its batch.

        The input is never modified; it is converted (copied) only when it is
        not already a C-contiguous float64 array or a float64 CSR matrix.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Finite real features, at least one sample; sparse input is kept
            sparse (CSR).
        n_states : int
            Number of classes ``K`` (required despite the default).

        Returns
        -------
        batch : MulticlassBatch
            The features with their (trivial) unit and part offsets.

        Raises
        ------
        ValueError
            If ``X`` is not 2-D, has no rows or holds NaN or infinity, or if
            ``n_states`` is missing or below 1.
        TypeError
            If ``X`` is not numeric or ``n_states`` not an integer.
        """
        n_states = check_n_states(n_states, type(self).__name__)
        X = check_feature_rows(X, where="X")
        return self._batch(X, n_states)

    @staticmethod
    def _batch(X, n_states):
        n_samples, n_features = X.shape
        units = np.arange(n_samples + 1, dtype=np.int64)
        return MulticlassBatch(
            X=kernel_rows(X),
            n_states=n_states,
            n_samples=n_samples,
            n_features=n_features,
            unit_offsets=units,
            part_offsets=units * n_states,
            n_weights=n_states * n_features,
        )

    def check_outputs(self, batch, Y):
        return check_encoded_states(Y, batch.unit_offsets, batch.n_states, type(self).__name__)

    # ------------------------------------------------------------ parts
    def feature_bounds(self, batch, geometry):
        if geometry != "entropic":
            self._unsupported("feature_bounds")
        return example_column_norms(batch.X, batch.unit_offsets, 1)

    # ---------------------------------------------------------------- outputs
    def output_space(self):
        return LabelledUnits(self, _sample_parts, unit="sample", flat=True)

    # --------------------------------------------------------------- kernels
    def kernel_data(self, batch, training=False):
        return token_kernel_data(batch.X, batch.unit_offsets, batch.n_states, chain=False,
                                 start_end=False, training=training)

    # --------------------------------------------------------------- helpers
    def _check_batch(self, batch):
        if not isinstance(batch, MulticlassBatch):
            raise TypeError(f"{type(self).__name__}: expected a MulticlassBatch from "
                            f"make_batch, got {type(batch).__name__}.")

    _node_index = staticmethod(lambda batch: _sample_parts(batch))


def _sample_parts(batch):
    """The part of every sample and label: an ``(n_samples, n_states)`` index."""
    return np.arange(batch.n_samples * batch.n_states).reshape(batch.n_samples, batch.n_states)
