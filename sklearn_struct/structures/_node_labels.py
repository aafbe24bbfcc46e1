"""What the structures with a label per node share: decoding and Hamming losses (the chain
and the label tree subclass :class:`NodeLabels`, the multiclass structure uses its losses)."""

import numpy as np

from ._base import BaseStructure
from ._batch import check_part_vector, check_state_weights

__all__ = ["NodeLabels", "weighted_zero_one_losses"]


class NodeLabels(BaseStructure):
    """Base of structures with a part per node and label (chains, label trees): their
    decoding and Hamming losses.  A subclass gives ``_check_batch(batch)`` and
    ``_node_index(batch)``, the ``(n_units_total, n_states)`` index of those parts."""

    def decode(self, batch, z):
        self._check_batch(batch)
        z = check_part_vector(z, batch.part_offsets[-1], type(self).__name__, "z")
        return z[self._node_index(batch)].argmax(axis=1)

    def part_losses(self, batch, Y):
        Y = self.check_outputs(batch, Y)
        losses = np.zeros(batch.part_offsets[-1])
        losses[self._node_index(batch)] = weighted_zero_one_losses(
            Y, self.loss_weights, batch.n_states, type(self).__name__
        )
        return losses

    def _check_scores(self, batch, scores):
        self._check_batch(batch)
        # -inf: a forbidden part (constraints, partial labels)
        return check_part_vector(scores, batch.part_offsets[-1], type(self).__name__,
                                 forbidden=True)


def weighted_zero_one_losses(Y, loss_weights, n_states, owner):
    """Loss ``loss_weights[Y[i]] * [k != Y[i]]`` of giving unit ``i`` state ``k``.

    Parameters
    ----------
    Y : ndarray of int64 of shape (n_units,)
        True states, already validated.
    loss_weights : array-like of shape (n_states,) or None
        Cost of a mistake on a unit of each true state; ``None`` is the 0/1 loss.
    n_states : int
        Number of states ``K``.
    owner : str
        Name of the structure, quoted in error messages.

    Returns
    -------
    losses : ndarray of shape (n_units, n_states)
        One row of part losses per unit.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures._node_labels import weighted_zero_one_losses
    >>> weighted_zero_one_losses(np.array([0, 2]), [1.0, 1.0, 3.0], 3, "example")
    array([[0., 1., 1.],
           [3., 3., 0.]])
    """
    weights = check_state_weights(loss_weights, n_states, owner)
    losses = np.repeat(weights[Y][:, None], n_states, axis=1)
    losses[np.arange(len(Y)), Y] = 0.0
    return losses
