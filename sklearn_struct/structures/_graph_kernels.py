"""Per-example numba operations of the graph structures (matchings and min-cuts): their
layout, and the feature-row helpers they share.

The operations themselves live with their structures (``matching/_kernels.py``,
``mincut/_kernels.py``).

The operations of :class:`._kernel.KernelOps` (signatures in :mod:`._kernel`)
for :class:`~sklearn_struct.structures.MatchingStructure` and
:class:`~sklearn_struct.structures.MinCutStructure`, so that the generic numba
loops (batch operations, online EG and subgradient epochs) run them with no
Python call per example.  Their kernel weight layout is the public one.

Feature rows arrive as CSR arrays (``values``, ``indices``, ``indptr``) or as
a dense C-contiguous matrix flattened into ``values`` with ``width``
columns (``indices``/``indptr`` unused); ``width == 0`` means CSR (see
:func:`._graph.feature_arrays`).

Kernel data of a matching batch (:func:`matching_kernel_data`, a ``MatchingData``)::

    (values, indices, indptr, width, edge_offsets, sources, targets,
     node_counts, projection_tol, max_newton_iter)

one part (and one output unit) per edge, ``part_scores`` is ``X_i @ w``.

Kernel data of a min-cut batch (:func:`mincut_kernel_data`, a ``MinCutData``)::

    (node_values, node_indices, node_indptr, node_width,
     edge_values, edge_indices, edge_indptr, edge_width, n_node_features,
     node_offsets, edge_offsets, tails, heads, projection_tol, max_newton_iter)

the ``N_i`` node parts then the ``E_i`` edge parts of example ``i``; node parts
score ``w_node . x_j`` and edge parts ``-(w_edge . x_jk)``, with
``w = concat(w_node, w_edge)``.

The projections start cold (zero duals) and stop at the KKT residual
``projection_tol * max(1, max |v|)`` or after ``max_newton_iter`` Newton
iterations, silently (the batch ``project`` methods warn).
"""

from numba import njit

# --------------------------------------------------------------------------
# Feature rows
# --------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _row_dot(values, indices, indptr, width, row, w, w0, scale):
    """``x_row . (scale * w)[w0:w0 + n_features]`` (``scale`` of length 0: none)."""
    if width > 0:
        start, stop = row * width, (row + 1) * width
    else:
        start, stop = indptr[row], indptr[row + 1]
    scaled = scale.shape[0] > 0
    total = 0.0
    for p in range(start, stop):
        j = w0 + (p - start if width > 0 else indices[p])
        if scaled:
            total += values[p] * w[j] * scale[j]
        else:
            total += values[p] * w[j]
    return total


@njit(cache=True, nogil=True)
def _row_add(values, indices, indptr, width, row, coef, w, w0, scale):
    """``w[w0:w0 + n_features] += coef * scale * x_row`` (``scale`` of length 0: none)."""
    if coef == 0.0:
        return
    if width > 0:
        start, stop = row * width, (row + 1) * width
    else:
        start, stop = indptr[row], indptr[row + 1]
    scaled = scale.shape[0] > 0
    for p in range(start, stop):
        j = w0 + (p - start if width > 0 else indices[p])
        if scaled:
            w[j] += coef * values[p] * scale[j]
        else:
            w[j] += coef * values[p]
