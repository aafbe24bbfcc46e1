"""The online proximal subgradient epoch of the L1-M3N, for any structure.

A template for :func:`sklearn_struct.structures._kernel.specialize`: it calls
the structure's kernel operations ``part_scores_op``, ``argmax_op``,
``encode_op`` and ``add_features_op`` for one example at a time, so the whole
epoch runs inside numba.  Weights are in the structure's kernel layout (the L1
norm and the non-negative orthant are invariant under its permutation).
"""

import numpy as np

from ..structures._kernel import example_buffers, example_views
from .l1_projection import soft_threshold_inplace

# The ``*_op`` names are bound by ``specialize``; flake8 cannot see them.
# flake8: noqa: F821


def online_epoch(order, data, part_offsets, unit_offsets, true_parts, part_losses, w, w0,
                 nonnegative, hinge_weight, eta0, distance, squared_norms):
    """Per-example steps ``w <- prox_{eta ||.||_1}(w - eta hinge_weight g_i)``.

    ``g_i = f(x_i, y*_i) - f(x_i, y_i)`` with ``y*_i`` the loss-augmented
    prediction at the current ``w``; ``hinge_weight = C N`` makes ``||w||_1 +
    C N H_i`` an unbiased estimate of the objective; the prox keeps ``w_j >= 0``
    where ``nonnegative``.  Step ``eta = eta0 distance / sqrt(sum ||hinge_weight
    g||^2)`` with ``distance`` the largest ``||w - w0||`` so far (distance over
    gradients).  Updates ``w`` in place and returns ``(squared_norms, distance)``.
    """
    scores_buf, z_buf, y_buf = example_buffers(part_offsets, unit_offsets)
    no_scale = np.zeros(0)
    g = np.zeros(w.shape[0])
    for i in order:
        p0, scores, z, y_hat = example_views(i, part_offsets, unit_offsets, scores_buf, z_buf,
                                             y_buf)
        part_scores_op(data, i, w, no_scale, scores)
        for r in range(scores.shape[0]):
            scores[r] += part_losses[p0 + r]
        argmax_op(data, i, scores, y_hat)
        encode_op(data, i, y_hat, z)
        for r in range(scores.shape[0]):
            z[r] -= true_parts[p0 + r]
        g[:] = 0.0
        add_features_op(data, i, z, no_scale, g)
        g_norm2 = 0.0
        for j in range(g.shape[0]):
            g_norm2 += g[j] * g[j]
        # a zero hinge subgradient still leaves the L1 term's prox step
        squared_norms += hinge_weight * hinge_weight * g_norm2
        if squared_norms == 0.0:
            continue
        step = eta0 * distance / np.sqrt(squared_norms)
        moved = 0.0
        for j in range(w.shape[0]):
            w[j] -= step * hinge_weight * g[j]
        soft_threshold_inplace(w, step, nonnegative)
        for j in range(w.shape[0]):
            moved += (w[j] - w0[j]) ** 2
        distance = max(distance, np.sqrt(moved))
    return squared_norms, distance
