"""What the structures whose parts label output units share: Hamming losses (the chains,
multiclass, the label tree, the monotone alignment, the pruned chain, dependency trees),
with a part per unit and label, decoding (:class:`NodeLabels`), and the token kernels'
weight layout (:class:`NodeWeights`)."""

import numpy as np

from ._base import BaseStructure
from ._batch import check_part_vector, check_state_weights
from ._token_kernels import feature_major, label_major

__all__ = ["LabelledParts", "NodeLabels", "NodeWeights"]


class LabelledParts(BaseStructure):
    """Base of structures whose loss-bearing parts each give one output unit one label.

    Their ``part_losses`` is derived, the weighted Hamming loss: a part costs its unit's
    weight (:meth:`_unit_loss_weights`) unless its label is the unit's true one.  A
    subclass gives ``_labelled_parts(batch)``: the index of those parts, the unit each
    labels and the label it gives, three integer arrays that broadcast together (every
    other part costs nothing).
    """

    def part_losses(self, batch, Y):
        Y = self.check_outputs(batch, Y)
        parts, units, labels = self._labelled_parts(batch)
        losses = np.zeros(int(batch.part_offsets[-1]))
        losses[parts] = self._unit_loss_weights(batch, Y)[units] * (labels != Y[units])
        return losses

    def _unit_loss_weights(self, batch, Y):
        """Cost of a mistake on every unit: the ``loss_weights`` of its true state."""
        return check_state_weights(self.loss_weights, batch.n_states, type(self).__name__)[Y]


class NodeLabels(LabelledParts):
    """Base of structures with a part per node and label (chains, label trees): their
    decoding and Hamming losses.  A subclass gives ``_check_batch(batch)`` and
    ``_node_index(batch)``, the ``(n_units_total, n_states)`` index of those parts."""

    accepts_forbidden_parts = True  # a chain's constraints, partial labels

    def decode(self, batch, z):
        self._check_batch(batch)
        z = check_part_vector(z, batch.part_offsets[-1], type(self).__name__, "z")
        return z[self._node_index(batch)].argmax(axis=1)

    def _labelled_parts(self, batch):
        index = self._node_index(batch)  # (unit, label): broadcast, not repeated
        return index, np.arange(index.shape[0])[:, None], np.arange(index.shape[1])

    def _check_scores(self, batch, scores):
        self._check_batch(batch)
        return super()._check_scores(batch, scores)


class NodeWeights(BaseStructure):
    """Base of structures scored by the token kernels (chains, label trees, multiclass):
    their node weights ``W`` (K, d), stored label-major, are read feature-major (d, K) by
    the kernels, so that a token's features visit contiguous rows of ``K`` weights."""

    def kernel_weights(self, batch, w):
        return feature_major(w, batch.n_states, batch.n_features)

    def contract_weights(self, batch, w_kernel):
        return label_major(w_kernel, batch.n_states, batch.n_features)
