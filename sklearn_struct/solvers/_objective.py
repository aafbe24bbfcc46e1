"""Per-example losses of a weight vector: the one evaluation every solver shares.

``loss="log"``: ``log Z_i(w) - w . phi(x_i, y_i)`` (negative log-likelihood).
``loss="hinge"``: ``max_y [loss(y_i, y) + w . phi(x_i, y)] - w . phi(x_i, y_i)``
(structured hinge), through one loss-augmented inference per example.
"""

import numpy as np

__all__ = ["example_losses", "segment_sums"]


def segment_sums(values, offsets):
    """Sum of a flat vector over each example's segment ``offsets[i]:offsets[i + 1]``."""
    cumulative = np.concatenate([[0.0], np.cumsum(values)])
    return cumulative[offsets[1:]] - cumulative[offsets[:-1]]


def example_losses(structure, chunks, w, Y, truth, part_losses, loss_offsets, loss="hinge",
                   scale=None, return_worst=False):
    """Loss of every example at ``w``, chunk by chunk (in parallel).

    Parameters
    ----------
    structure : BaseStructure
    chunks : ExampleChunks
        Chunks of the batch of ``Y``.
    w : ndarray of shape (n_weights,)
    Y : ndarray of int64 of shape (n_units_total,)
        True encoded outputs.
    truth, part_losses : ndarray of shape (n_parts_total,)
        ``encode(Y)`` and ``part_losses(Y)``.
    loss_offsets : ndarray of shape (n_samples,)
        Per-example loss constants (hinge only).
    loss : {"hinge", "log"}
    scale : ndarray of shape (n_weights,) or None
        Features rescaled weight-wise: scores are ``F^T (scale * w)``.
    return_worst : bool
        Also return the part encoding of the loss-augmented outputs (hinge).

    Returns
    -------
    losses : ndarray of shape (n_samples,)
        Hinge losses are clipped at 0 (exact inference makes them >= 0; the
        clip removes rounding noise).
    worst : ndarray of shape (n_parts_total,)
        Only with ``return_worst``.
    """
    w_eff = w if scale is None else scale * w

    def chunk(sub, truth_c, losses_c, y_c):
        scores = structure.part_scores(sub, w_eff)
        true_scores = segment_sums(scores * truth_c, sub.part_offsets)
        if loss == "log":
            return structure.log_partition(sub, scores) - true_scores, None
        worst = structure.encode(sub, structure.loss_augmented_argmax(sub, scores, y_c))
        return segment_sums(worst * (scores + losses_c), sub.part_offsets) - true_scores, worst

    out = chunks.map(chunk, (truth, part_losses), (Y,))
    losses = np.concatenate([value for value, _ in out])
    if loss == "hinge":
        losses = np.maximum(losses + loss_offsets, 0.0)
    if return_worst:
        return losses, np.concatenate([worst for _, worst in out])
    return losses
