"""Per-example losses of a weight vector: the one evaluation every solver shares.

``loss="log"``: ``log Z_i(w) - w . phi(x_i, y_i)`` (negative log-likelihood).
``loss="hinge"``: ``max_y [loss(y_i, y) + w . phi(x_i, y)] - w . phi(x_i, y_i)``
(structured hinge), through one loss-augmented inference per example.
"""

import numpy as np

__all__ = ["example_losses", "score_losses", "segment_sums"]


def segment_sums(values, offsets):
    """Sum of a flat vector over each example's segment ``offsets[i]:offsets[i + 1]``.

    Each segment is summed on its own, so a sum does not depend on where the
    example sits in the batch; an empty segment (a graph without edges) sums to 0.
    """
    starts, ends = offsets[:-1], offsets[1:]
    sums = np.zeros(len(starts), dtype=np.result_type(values, np.float64))
    nonempty = starts < ends
    if nonempty.any():  # reduceat reads one element for an empty segment
        sums[nonempty] = np.add.reduceat(values, starts[nonempty])
    return sums


#: Parts per block of :func:`segment_dots`: its products are made a block at a time, so
#: that no temporary vector over all the parts joins the fit's part vectors at its peak.
DOT_BLOCK_PARTS = 1 << 20


def segment_dots(a, b, offsets):
    """``segment_sums(a * b, offsets)``, without a product vector over all the parts."""
    sums = np.zeros(len(offsets) - 1)
    first = 0
    while first < len(offsets) - 1:
        last = int(np.searchsorted(offsets, offsets[first] + DOT_BLOCK_PARTS, side="right")) - 1
        last = min(max(last, first + 1), len(offsets) - 1)
        start, stop = int(offsets[first]), int(offsets[last])
        sums[first:last] = segment_sums(a[start:stop] * b[start:stop],
                                        offsets[first:last + 1] - start)
        first = last
    return sums


def example_losses(structure, chunks, w, Y, loss="hinge", scale=None, return_worst=False,
                   margins_of=None):
    """Loss of every example at ``w``, chunk by chunk (in parallel).

    Encodings, part losses and loss offsets of the truth are rebuilt chunk by
    chunk, so that no vector over all parts is needed (the low-memory dual
    extragradient relies on it).

    Parameters
    ----------
    structure : BaseStructure
    chunks : ExampleChunks
        Chunks of the batch of ``Y``.
    w : ndarray of shape (n_weights,)
    Y : ndarray of int64 of shape (n_units_total,)
        True encoded outputs.
    loss : {"hinge", "log"}
    scale : ndarray of shape (n_weights,) or None
        Features rescaled weight-wise: scores are ``F^T (scale * w)``.
    return_worst : bool
        Also return the part encoding of the loss-augmented outputs (hinge).
    margins_of : ndarray of shape (n_parts_total,), optional
        Part marginals ``mu`` of one distribution per example: also return each
        example's expected margin ``E_{mu_i} w . (phi(x_i, y_i) - phi(x_i, y))``
        (from the same scores), what per-example duality gaps need.

    Returns
    -------
    losses : ndarray of shape (n_samples,)
        Hinge losses are clipped at 0 (exact inference makes them >= 0; the
        clip removes rounding noise).
    worst : ndarray of shape (n_parts_total,)
        Only with ``return_worst``.
    margins : ndarray of shape (n_samples,)
        Only with ``margins_of``.
    """
    w_eff = w if scale is None else scale * w
    shared = (structure, w_eff, loss, return_worst)
    if margins_of is None:
        out = chunks.map(_chunk_losses, unit_arrays=(Y,), shared=shared)
    else:
        out = chunks.map(_chunk_losses_and_margins, part_arrays=(margins_of,), unit_arrays=(Y,),
                         shared=shared)
    returned = (np.concatenate([value[0] for value in out]),)
    if return_worst:
        returned += (np.concatenate([value[1] for value in out]),)
    if margins_of is not None:
        returned += (np.concatenate([value[2] for value in out]),)
    return returned if len(returned) > 1 else returned[0]


def _chunk_losses(sub, y, structure, w, loss, return_worst):
    """:func:`example_losses` on one chunk (and its loss-augmented encoding)."""
    return score_losses(structure, sub, structure.part_scores(sub, w), y, loss, return_worst)


def _chunk_losses_and_margins(sub, mu, y, structure, w, loss, return_worst):
    """:func:`_chunk_losses` and the chunk's expected margins under ``mu``."""
    scores = structure.part_scores(sub, w)
    truth = structure.encode(sub, y)
    losses, worst = score_losses(structure, sub, scores, y, loss, return_worst, truth)
    margins = segment_dots(scores, truth - mu, sub.part_offsets)
    return losses, worst, margins


def score_losses(structure, batch, scores, y, loss, return_worst=False, truth=None):
    """Loss of every example of ``batch`` from its part scores ``scores = F^T w``.

    Batch EG calls it on the scores its next step needs anyway (see
    :mod:`.eg`); :func:`example_losses` on the scores of ``w``.  ``truth``:
    the part encoding of ``y``, when the caller has it.  Returns ``(losses,
    worst)``, ``worst`` the loss-augmented encoding with ``return_worst``
    (hinge), else None.
    """
    if truth is None:
        truth = structure.encode(batch, y)
    true_scores = segment_dots(scores, truth, batch.part_offsets)
    if loss == "log":
        return structure.log_partition(batch, scores) - true_scores, None
    worst = structure.encode(batch, structure.loss_augmented_argmax(batch, scores, y))
    augmented = scores + structure.part_losses(batch, y)
    value = (segment_dots(worst, augmented, batch.part_offsets) - true_scores
             + structure.loss_offsets(batch, y))
    return np.maximum(value, 0.0), worst if return_worst else None
