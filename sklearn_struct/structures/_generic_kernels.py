"""Batch operations of any structure, from its per-example numba operations.

Templates for :func:`._kernel.specialize`: each loops over the examples of a
batch inside numba and calls the structure's per-example operation on the
slices of example ``i`` (parts ``part_offsets[i]:part_offsets[i + 1]``,
output units ``unit_offsets[i]:unit_offsets[i + 1]``).
:class:`~sklearn_struct.structures.BaseStructure` uses them as the default
``part_scores``, ``expected_features``, ``marginals``, ``log_partition``, ``argmax``,
``encode``, ``decode``, ``project`` and ``part_losses`` of a structure that gives :class:`._kernel.KernelOps`.
"""

import numpy as np
from numba import njit
from numba.typed import List

# The ``*_op`` names are bound by ``specialize``; flake8 cannot see them.
# flake8: noqa: F821


@njit(cache=True, nogil=True, inline="always")
def _max_parts(part_offsets):
    """The largest example's number of parts (the size of per-example scratch)."""
    largest = 0
    for i in range(part_offsets.shape[0] - 1):
        largest = max(largest, part_offsets[i + 1] - part_offsets[i])
    return largest


def batch_part_scores(data, part_offsets, w, scale, out):
    for i in range(part_offsets.shape[0] - 1):
        part_scores_op(data, i, w, scale, out[part_offsets[i]:part_offsets[i + 1]])


def batch_add_features(data, part_offsets, z, sample_weight, scale, w):
    """``w += scale * sum_i s_i F_i z_i`` (``sample_weight`` of length 0: all ones)."""
    weighted = sample_weight.shape[0] > 0
    coef = np.empty(_max_parts(part_offsets))
    for i in range(part_offsets.shape[0] - 1):
        p0, p1 = part_offsets[i], part_offsets[i + 1]
        s = sample_weight[i] if weighted else 1.0
        if s == 0.0:
            continue
        for r in range(p1 - p0):
            coef[r] = s * z[p0 + r]
        add_features_op(data, i, coef[:p1 - p0], scale, w)


def batch_marginals(data, part_offsets, theta, mu, log_partition):
    for i in range(part_offsets.shape[0] - 1):
        p0, p1 = part_offsets[i], part_offsets[i + 1]
        log_partition[i] = marginals_op(data, i, theta[p0:p1], mu[p0:p1])


def batch_log_partition(data, part_offsets, theta, log_partition):
    scratch = np.empty(_max_parts(part_offsets))
    for i in range(part_offsets.shape[0] - 1):
        p0, p1 = part_offsets[i], part_offsets[i + 1]
        log_partition[i] = log_partition_op(data, i, theta[p0:p1], scratch[:p1 - p0])


def batch_argmax(data, part_offsets, unit_offsets, scores, Y):
    for i in range(part_offsets.shape[0] - 1):
        argmax_op(data, i, scores[part_offsets[i]:part_offsets[i + 1]],
                  Y[unit_offsets[i]:unit_offsets[i + 1]])


def batch_part_losses(data, part_offsets, unit_offsets, Y, losses):
    for i in range(part_offsets.shape[0] - 1):
        part_losses_op(data, i, Y[unit_offsets[i]:unit_offsets[i + 1]],
                       losses[part_offsets[i]:part_offsets[i + 1]])


def batch_encode(data, part_offsets, unit_offsets, Y, z):
    for i in range(part_offsets.shape[0] - 1):
        encode_op(data, i, Y[unit_offsets[i]:unit_offsets[i + 1]],
                  z[part_offsets[i]:part_offsets[i + 1]])


def batch_decode(data, part_offsets, unit_offsets, z, Y):
    for i in range(part_offsets.shape[0] - 1):
        decode_op(data, i, z[part_offsets[i]:part_offsets[i + 1]],
                  Y[unit_offsets[i]:unit_offsets[i + 1]])


def batch_project(data, part_offsets, v, out):
    for i in range(part_offsets.shape[0] - 1):
        p0, p1 = part_offsets[i], part_offsets[i + 1]
        project_op(data, i, v[p0:p1], out[p0:p1])


def batch_k_best(data, part_offsets, unit_offsets, scores, k):
    """``(Y, best_scores)``: ``Y[j, units of i]`` the ``j``-th best output of example ``i``
    and ``best_scores[i, j]`` its score (``-inf`` past the example's outputs), for ``j``
    below ``min(k, the most outputs of an example)`` (at least 1)."""
    n_samples = part_offsets.shape[0] - 1
    found = List()
    n_best = 1
    for i in range(n_samples):
        rows, best = k_best_op(data, i, scores[part_offsets[i]:part_offsets[i + 1]], k,
                               unit_offsets[i + 1] - unit_offsets[i])
        found.append((rows, best))
        n_best = max(n_best, best.shape[0])
    Y = np.zeros((n_best, unit_offsets[n_samples]), dtype=np.int64)
    best_scores = np.full((n_samples, n_best), -np.inf)
    for i in range(n_samples):
        rows, best = found[i]
        Y[:rows.shape[0], unit_offsets[i]:unit_offsets[i + 1]] = rows
        best_scores[i, :best.shape[0]] = best
    return Y, best_scores


def batch_sample(data, part_offsets, unit_offsets, theta, seed, Y):
    """``Y[j, units of i]``: sample ``j`` of example ``i``, from numba's generator seeded here."""
    np.random.seed(seed)
    for i in range(part_offsets.shape[0] - 1):
        u0, u1 = unit_offsets[i], unit_offsets[i + 1]
        rows = np.empty((Y.shape[0], u1 - u0), dtype=np.int64)
        sample_op(data, i, theta[part_offsets[i]:part_offsets[i + 1]], rows)
        Y[:, u0:u1] = rows
