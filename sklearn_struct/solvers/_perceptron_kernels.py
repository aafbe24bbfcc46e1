"""The structured perceptron epoch (Collins 2002), for any structure with kernel operations.

A template for :func:`sklearn_struct.structures._kernel.specialize`: it calls
the structure's kernel operations ``part_scores_op``, ``argmax_op``,
``encode_op`` and ``add_features_op`` one example at a time, so the whole
epoch runs inside numba.  Weights are in the structure's kernel layout.
"""

import numpy as np

from ..structures._kernel import example_buffers, example_views

# The ``*_op`` names are bound by ``specialize``; flake8 cannot see them.
# flake8: noqa: F821


def perceptron_epoch(order, data, part_offsets, unit_offsets, true_parts, constraint_scores,
                     sample_weight, w, w_sum, n_steps):
    """Visit the examples of ``order``: on a wrong prediction, ``w += s_i (f(x_i, y_i) - f(x_i, y^))``.

    ``w_sum`` accumulates ``(t - 1) * update`` for the update at visit ``t``
    (counted from the start of training), so that the average of the weights
    after each of the ``n_steps`` visits so far is ``w - w_sum / n_steps``
    (Daume's trick: O(n_weights) memory).  Both
    are updated in place; returns ``(n_steps, number of wrong predictions)``.

    With partial labels (the latent perceptron, Sun et al. 2009),
    ``constraint_scores`` is 0 on the parts consistent with what is known and
    ``-inf`` on the others (empty: every label known, ``true_parts`` the truth).
    A prediction that uses no forbidden part is then no mistake; otherwise the
    target of the update is the best consistent output under the current
    weights (the constrained argmax) in place of ``y_i``.
    """
    scores_buf, z_buf, y_buf = example_buffers(part_offsets, unit_offsets)
    target_buf = np.empty_like(z_buf)
    latent = constraint_scores.shape[0] > 0
    no_scale = np.zeros(0)
    mistakes = 0
    for i in order:
        n_steps += 1
        if sample_weight[i] == 0.0:
            continue
        p0, scores, z, y_hat = example_views(i, part_offsets, unit_offsets, scores_buf, z_buf,
                                             y_buf)
        part_scores_op(data, i, w, no_scale, scores)
        argmax_op(data, i, scores, y_hat)
        encode_op(data, i, y_hat, z)
        target = target_buf[:scores.shape[0]]
        if latent:
            consistent = True
            for r in range(scores.shape[0]):
                consistent = consistent and not (z[r] != 0.0 and constraint_scores[p0 + r] < 0.0)
                scores[r] += constraint_scores[p0 + r]
            if consistent:
                continue
            argmax_op(data, i, scores, y_hat)
            encode_op(data, i, y_hat, target)
        else:
            target[:] = true_parts[p0:p0 + scores.shape[0]]
        differs = False
        for r in range(scores.shape[0]):
            z[r] = sample_weight[i] * (target[r] - z[r])
            differs = differs or z[r] != 0.0
        if not differs:
            continue
        mistakes += 1
        add_features_op(data, i, z, no_scale, w)
        for r in range(scores.shape[0]):
            z[r] *= n_steps - 1
        add_features_op(data, i, z, no_scale, w_sum)
    return n_steps, mistakes
