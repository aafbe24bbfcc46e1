"""The online projected subgradient epoch (L1-M3N, Algorithm 2), for any structure.

A template for :func:`sklearn_struct.structures._kernel.specialize`: it calls
the structure's kernel operations ``part_scores_op``, ``argmax_op``,
``encode_op`` and ``add_features_op`` for one example at a time, so the whole
epoch runs inside numba.  Weights are in the structure's kernel layout (the L1
ball and the non-negative orthant are invariant under its permutation).
"""

import numpy as np

from .l1_projection import l1_ball_threshold

# The ``*_op`` names are bound by ``specialize``; flake8 cannot see them.
# flake8: noqa: F821


def online_epoch(order, data, part_offsets, unit_offsets, true_parts, part_losses, w,
                 nonnegative, radius, eta0, squared_norms):
    """Per-example steps ``w <- Proj(w - eta0 radius / sqrt(sum ||g||^2) g_i)``.

    ``g_i = f(x_i, y*_i) - f(x_i, y_i)`` with ``y*_i`` the loss-augmented
    prediction at the current ``w``; ``Proj`` projects onto ``{||w||_1 <=
    radius, w_j >= 0 where nonnegative}``.  Updates ``w`` in place and returns
    the AdaGrad-norm accumulator ``squared_norms``.
    """
    max_parts = 0
    max_units = 0
    for i in range(part_offsets.shape[0] - 1):
        max_parts = max(max_parts, part_offsets[i + 1] - part_offsets[i])
        max_units = max(max_units, unit_offsets[i + 1] - unit_offsets[i])
    scores_buf = np.empty(max_parts)
    z_buf = np.empty(max_parts)
    y_buf = np.empty(max_units, dtype=np.int64)
    no_scale = np.zeros(0)
    g = np.zeros(w.shape[0])
    for i in order:
        p0 = part_offsets[i]
        n_parts = part_offsets[i + 1] - p0
        scores = scores_buf[:n_parts]
        z = z_buf[:n_parts]
        y_hat = y_buf[:unit_offsets[i + 1] - unit_offsets[i]]
        part_scores_op(data, i, w, no_scale, scores)
        for r in range(n_parts):
            scores[r] += part_losses[p0 + r]
        argmax_op(data, i, scores, y_hat)
        encode_op(data, i, y_hat, z)
        differs = False
        for r in range(n_parts):
            z[r] -= true_parts[p0 + r]
            differs = differs or z[r] != 0.0
        if not differs:
            continue  # y_i itself is the most violated output: zero subgradient
        g[:] = 0.0
        add_features_op(data, i, z, no_scale, g)
        g_norm2 = 0.0
        for j in range(g.shape[0]):
            g_norm2 += g[j] * g[j]
        if g_norm2 == 0.0:
            continue
        squared_norms += g_norm2
        step = eta0 * radius / np.sqrt(squared_norms)
        for j in range(w.shape[0]):
            w[j] -= step * g[j]
            if nonnegative[j] and w[j] < 0.0:
                w[j] = 0.0
        theta = l1_ball_threshold(w, radius)
        if theta > 0.0:
            for j in range(w.shape[0]):
                magnitude = abs(w[j]) - theta
                w[j] = (magnitude if w[j] > 0.0 else -magnitude) if magnitude > 0.0 else 0.0
    return squared_norms
