"""Monotone alignment: the worked example of a dynamic-programming structure.

A sequence of ``T`` frames is aligned, in order, to ``L`` ordered states: frame ``t`` takes
state ``y_t``, and the states never go back (``y_t <= y_{t+1}``), as the stages of a
process, or the sections of a document, follow each other.  The parts are one per frame
and state, scored ``w[l] . x_t``; the recursion, written once as a hypergraph in
``_kernels.py``, gives the generic dynamic program of ``structures/_semiring.py`` and with
it the argmax, marginals, log-partition, k-best outputs and samples.  Everything else
(batch operations, decoding, Hamming losses) comes from the base classes.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._batch import Batch, check_encoded_states, example_column_norms, offsets_from_lengths
from .._kernel import KernelOps
from .._node_labels import NodeLabels
from .._output_space import OutputSpace
from .._sequences import SequenceInputs
from . import _kernels as kernels

__all__ = ["MonotoneBatch", "MonotoneAlignmentStructure"]


@dataclass(frozen=True)
class MonotoneBatch(Batch):
    """Sequences as :class:`MonotoneAlignmentStructure` reads them.

    Parameters
    ----------
    n_samples, n_features, unit_offsets, part_offsets, n_weights
        As every batch (:class:`~sklearn_struct.structures.BaseStructure`); a sequence of
        ``T`` frames owns ``T * n_states`` parts.
    X : ndarray of shape (n_frames, n_features)
        The frames' features, stacked (dense float64).
    n_states : int
        The number of states.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures import MonotoneAlignmentStructure
    >>> batch = MonotoneAlignmentStructure().make_batch([np.ones((3, 2))], n_states=2)
    >>> batch.part_offsets
    array([0, 6])
    """

    X: np.ndarray
    n_states: int

    ragged = {"X": "unit_offsets"}
    shared = ("n_states",)


class MonotoneAlignmentStructure(SequenceInputs, NodeLabels):
    """Monotone alignment of a sequence's frames to ordered states (``y_t <= y_{t+1}``).

    Inputs are one ``(T, n_features)`` array per sequence, targets one state per frame;
    the states' order is that of the sorted labels (``classes_``).  Inference is a
    dynamic program over ``O(T L)`` hyperedges.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures import MonotoneAlignmentStructure
    >>> structure = MonotoneAlignmentStructure()
    >>> batch = structure.make_batch([np.eye(3)], n_states=2)
    >>> structure.argmax(batch, np.array([0.0, 1.0, 5.0, 0.0, 0.0, 1.0]))
    array([0, 0, 1])
    """

    kernel_ops = KernelOps(
        part_scores=kernels.monotone_part_scores, add_features=kernels.monotone_add_features,
        encode=kernels.monotone_encode, decode=kernels.monotone_decode,
        hypergraph_size=kernels.monotone_hypergraph_size, hypergraph=kernels.monotone_hypergraph)
    loss_weights = None

    def output_space(self):
        return OutputSpace(self, unit="frame")

    def _batch(self, X, unit_offsets, n_states):
        X = X.toarray() if sp.issparse(X) else X  # the kernels read dense frames
        return MonotoneBatch(
            n_samples=len(unit_offsets) - 1, n_features=X.shape[1],
            unit_offsets=unit_offsets,
            part_offsets=offsets_from_lengths(np.diff(unit_offsets) * n_states),
            n_weights=n_states * X.shape[1], X=X, n_states=n_states)

    def kernel_data(self, batch, training=False):
        return kernels.MonotoneData(batch.X, batch.unit_offsets, batch.n_states)

    def check_outputs(self, batch, Y):
        # states in range, and never going back (naming the sequence and the frame)
        Y = check_encoded_states(Y, batch.unit_offsets, batch.n_states, type(self).__name__)
        back = np.flatnonzero(np.diff(Y) < 0) + 1
        back = back[np.isin(back, batch.unit_offsets, invert=True)]  # not at a new sequence
        if back.size:
            i = int(np.searchsorted(batch.unit_offsets, back[0], side="right") - 1)
            t = int(back[0] - batch.unit_offsets[i])
            raise ValueError(f"{type(self).__name__}: sequence {i}, frame {t}: state "
                             f"{Y[back[0]]} after state {Y[back[0] - 1]}; the states of a "
                             "monotone alignment never go back.")
        return Y

    def feature_bounds(self, batch, geometry):
        # ||f_i(y)||_inf: a weight (l, k) sums x_tk over the frames at state l, at most all
        if geometry != "entropic":
            self._unsupported("feature_bounds")
        return example_column_norms(batch.X, batch.unit_offsets, 1)

    def _check_batch(self, batch):
        if not isinstance(batch, MonotoneBatch):
            raise TypeError(f"{type(self).__name__}: expected a MonotoneBatch from make_batch, "
                            f"got {type(batch).__name__}.")

    @staticmethod
    def _node_index(batch):
        starts = batch.part_offsets[:-1].repeat(np.diff(batch.unit_offsets))
        frames = np.arange(batch.unit_offsets[-1]) - batch.unit_offsets[:-1].repeat(
            np.diff(batch.unit_offsets))
        return (starts + frames * batch.n_states)[:, None] + np.arange(batch.n_states)
