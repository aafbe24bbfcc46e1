"""Per-example numba operations of the graph structures (matchings and min-cuts).

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

from collections import namedtuple

import numpy as np
from numba import njit

from ._flow_kernels import matching_project, mincut_argmax, mincut_project
from ._graph import feature_arrays
from ._kernel import KernelOps

__all__ = [
    "MATCHING_KERNEL_OPS",
    "MINCUT_KERNEL_OPS",
    "matching_kernel_data",
    "max_weight_matching",
    "mincut_kernel_data",
]


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


# --------------------------------------------------------------------------
# Maximum-weight bipartite matching (shortest augmenting paths)
# --------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _min_cost_assignment(cost, assignment):
    """Assign every row of ``cost`` (n x m, n <= m) a distinct column at least total cost.

    The Hungarian method in its shortest-augmenting-path form: rows enter one
    at a time; a Dijkstra-like scan over reduced costs (``cost - u_row -
    v_col``, kept non-negative on the scanned tree by the dual potentials
    ``u``, ``v``) finds the cheapest alternating path from the new row to a
    free column, the potentials are updated and the path is flipped.
    O(n^2 m).  Fills ``assignment[r]`` with the column of row ``r``; returns
    False (and leaves ``assignment`` unspecified) only when a cost is NaN.
    """
    n, m = cost.shape
    u = np.zeros(n + 1)  # index 0 unused: rows and columns are numbered from 1
    v = np.zeros(m + 1)
    owner = np.zeros(m + 1, dtype=np.int64)  # row holding each column (0: free)
    via = np.zeros(m + 1, dtype=np.int64)  # previous column on the shortest path
    slack = np.empty(m + 1)
    done = np.empty(m + 1, dtype=np.bool_)
    for row in range(1, n + 1):
        owner[0] = row  # column 0 is the root of the new row's search tree
        column = 0
        slack[:] = np.inf
        done[:] = False
        while True:
            done[column] = True
            current = owner[column]
            delta = np.inf
            nearest = 0
            for j in range(1, m + 1):
                if done[j]:
                    continue
                reduced = cost[current - 1, j - 1] - u[current] - v[j]
                if reduced < slack[j]:
                    slack[j] = reduced
                    via[j] = column
                if slack[j] < delta:
                    delta = slack[j]
                    nearest = j
            if nearest == 0:
                return False  # only NaN costs leave every column unreachable
            for j in range(m + 1):
                if done[j]:
                    u[owner[j]] += delta
                    v[j] -= delta
                else:
                    slack[j] -= delta
            column = nearest
            if owner[column] == 0:
                break
        while column != 0:  # flip the path back to the root
            previous = via[column]
            owner[column] = owner[previous]
            column = previous
    for j in range(1, m + 1):
        if owner[j] != 0:
            assignment[owner[j] - 1] = j - 1
    return True


@njit(cache=True, nogil=True)
def max_weight_matching(scores, sources, targets, n_sources, n_targets, y_out):
    """Maximum-weight matching of one bipartite graph.

    Only edges of positive score can help, so the problem is an assignment
    problem over the nodes they touch, absent pairs weighing 0: solved by
    :func:`_min_cost_assignment` on the negated weights, on the transpose
    when there are more sources than targets.

    Parameters
    ----------
    scores : (E,) float64 edge scores.
    sources, targets : (E,) int64 local source / target node of each edge
        (distinct pairs).
    n_sources, n_targets : node counts.
    y_out : (E,) int64, receives the 0/1 indicators of the matched edges.

    Returns
    -------
    best : float, the score of the matching.
    """
    n_edges = scores.shape[0]
    for e in range(n_edges):
        y_out[e] = 0
    row_of = np.full(n_sources, -1, dtype=np.int64)
    col_of = np.full(n_targets, -1, dtype=np.int64)
    n_rows = 0
    n_cols = 0
    for e in range(n_edges):
        if scores[e] > 0.0:
            if row_of[sources[e]] < 0:
                row_of[sources[e]] = n_rows
                n_rows += 1
            if col_of[targets[e]] < 0:
                col_of[targets[e]] = n_cols
                n_cols += 1
    if n_rows == 0:
        return 0.0
    transpose = n_rows > n_cols
    n, m = (n_cols, n_rows) if transpose else (n_rows, n_cols)
    cost = np.zeros((n, m))
    edge_of = np.full((n, m), -1, dtype=np.int64)
    for e in range(n_edges):
        if scores[e] > 0.0:
            r, c = row_of[sources[e]], col_of[targets[e]]
            if transpose:
                r, c = c, r
            cost[r, c] = -scores[e]
            edge_of[r, c] = e
    assignment = np.empty(n, dtype=np.int64)
    if not _min_cost_assignment(cost, assignment):
        return 0.0
    best = 0.0
    for r in range(n):
        e = edge_of[r, assignment[r]]
        if e >= 0:
            y_out[e] = 1
            best += scores[e]
    return best


#: Kernel data of a matching batch and of a min-cut batch (see the module docstring).
MatchingData = namedtuple("MatchingData", (
    "values", "indices", "indptr", "width", "edge_offsets", "sources", "targets", "node_counts",
    "projection_tol", "max_newton_iter"))
MinCutData = namedtuple("MinCutData", (
    "node_values", "node_indices", "node_indptr", "node_width", "edge_values", "edge_indices",
    "edge_indptr", "edge_width", "n_node_features", "node_offsets", "edge_offsets", "tails",
    "heads", "projection_tol", "max_newton_iter"))


# --------------------------------------------------------------------------
# Matching operations
# --------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def matching_example_part_scores(data, i, w, scale, out):
    values, indices = data.values, data.indices
    indptr, width = data.indptr, data.width
    offsets = data.edge_offsets
    lo = offsets[i]
    for e in range(out.shape[0]):
        out[e] = _row_dot(values, indices, indptr, width, lo + e, w, 0, scale)


@njit(cache=True, nogil=True)
def matching_example_add_features(data, i, coef, scale, w):
    values, indices = data.values, data.indices
    indptr, width = data.indptr, data.width
    offsets = data.edge_offsets
    lo = offsets[i]
    for e in range(coef.shape[0]):
        _row_add(values, indices, indptr, width, lo + e, coef[e], w, 0, scale)


@njit(cache=True, nogil=True)
def matching_example_argmax(data, i, scores, y_out):
    offsets, sources = data.edge_offsets, data.sources
    targets, node_counts = data.targets, data.node_counts
    lo, hi = offsets[i], offsets[i + 1]
    max_weight_matching(scores, sources[lo:hi], targets[lo:hi], node_counts[i, 0],
                        node_counts[i, 1], y_out)


@njit(cache=True, nogil=True)
def matching_example_encode(data, i, y, z_out):
    for e in range(y.shape[0]):
        z_out[e] = float(y[e])


@njit(cache=True, nogil=True)
def matching_example_project(data, i, v, out):
    offsets, sources = data.edge_offsets, data.sources
    targets, node_counts = data.targets, data.node_counts
    tol, max_iter = data.projection_tol, data.max_newton_iter
    lo, hi = offsets[i], offsets[i + 1]
    n_sources, n_targets = node_counts[i, 0], node_counts[i, 1]
    bound = 1.0
    for e in range(v.shape[0]):
        bound = max(bound, abs(v[e]))
    prices = np.zeros(n_sources + n_targets)
    matching_project(v, sources[lo:hi], targets[lo:hi], n_sources, n_targets, out, prices,
                     tol * bound, max_iter)


MATCHING_KERNEL_OPS = KernelOps(
    part_scores=matching_example_part_scores, add_features=matching_example_add_features,
    argmax=matching_example_argmax, encode=matching_example_encode,
    project=matching_example_project,
)


def matching_kernel_data(X, edges, edge_offsets, node_counts, tol, max_iter):
    """Kernel data of a matching batch (layout in the module docstring)."""
    values, indices, indptr, width = feature_arrays(X)
    return MatchingData(
            values, indices, indptr, width, np.ascontiguousarray(edge_offsets, dtype=np.int64),
            np.ascontiguousarray(edges[:, 0], dtype=np.int64),
            np.ascontiguousarray(edges[:, 1], dtype=np.int64),
            np.ascontiguousarray(node_counts, dtype=np.int64).reshape(-1, 2),
            float(tol), int(max_iter))


# --------------------------------------------------------------------------
# Min-cut operations
# --------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def mincut_example_part_scores(data, i, w, scale, out):
    node_values, node_indices = data.node_values, data.node_indices
    node_indptr, node_width = data.node_indptr, data.node_width
    edge_values, edge_indices = data.edge_values, data.edge_indices
    edge_indptr, edge_width = data.edge_indptr, data.edge_width
    n_node_features, node_offsets = data.n_node_features, data.node_offsets
    edge_offsets = data.edge_offsets
    n0, e0 = node_offsets[i], edge_offsets[i]
    n = node_offsets[i + 1] - n0
    for j in range(n):
        out[j] = _row_dot(node_values, node_indices, node_indptr, node_width, n0 + j, w, 0,
                          scale)
    for e in range(edge_offsets[i + 1] - e0):
        out[n + e] = -_row_dot(edge_values, edge_indices, edge_indptr, edge_width, e0 + e, w,
                               n_node_features, scale)


@njit(cache=True, nogil=True)
def mincut_example_add_features(data, i, coef, scale, w):
    node_values, node_indices = data.node_values, data.node_indices
    node_indptr, node_width = data.node_indptr, data.node_width
    edge_values, edge_indices = data.edge_values, data.edge_indices
    edge_indptr, edge_width = data.edge_indptr, data.edge_width
    n_node_features, node_offsets = data.n_node_features, data.node_offsets
    edge_offsets = data.edge_offsets
    n0, e0 = node_offsets[i], edge_offsets[i]
    n = node_offsets[i + 1] - n0
    for j in range(n):
        _row_add(node_values, node_indices, node_indptr, node_width, n0 + j, coef[j], w, 0,
                 scale)
    for e in range(edge_offsets[i + 1] - e0):
        _row_add(edge_values, edge_indices, edge_indptr, edge_width, e0 + e, -coef[n + e], w,
                 n_node_features, scale)


@njit(cache=True, nogil=True)
def mincut_example_argmax(data, i, scores, y_out):
    node_offsets, edge_offsets = data.node_offsets, data.edge_offsets
    tails, heads = data.tails, data.heads
    n = node_offsets[i + 1] - node_offsets[i]
    e0, e1 = edge_offsets[i], edge_offsets[i + 1]
    weights = np.empty(e1 - e0)
    for e in range(e1 - e0):
        weights[e] = max(-scores[n + e], 0.0)  # a positive edge score is clipped to 0
    mincut_argmax(scores[:n], weights, tails[e0:e1], heads[e0:e1], y_out)


@njit(cache=True, nogil=True)
def mincut_example_encode(data, i, y, z_out):
    node_offsets, edge_offsets = data.node_offsets, data.edge_offsets
    tails, heads = data.tails, data.heads
    n = node_offsets[i + 1] - node_offsets[i]
    e0, e1 = edge_offsets[i], edge_offsets[i + 1]
    for j in range(n):
        z_out[j] = float(y[j])
    for e in range(e1 - e0):
        z_out[n + e] = float(abs(y[tails[e0 + e]] - y[heads[e0 + e]]))


@njit(cache=True, nogil=True)
def mincut_example_project(data, i, v, out):
    node_offsets, edge_offsets = data.node_offsets, data.edge_offsets
    tails, heads = data.tails, data.heads
    tol, max_iter = data.projection_tol, data.max_newton_iter
    n = node_offsets[i + 1] - node_offsets[i]
    e0, e1 = edge_offsets[i], edge_offsets[i + 1]
    bound = 1.0
    for r in range(v.shape[0]):
        bound = max(bound, abs(v[r]))
    flows = np.zeros(e1 - e0)
    mincut_project(v[:n], v[n:], tails[e0:e1], heads[e0:e1], out[:n], out[n:], flows,
                   tol * bound, max_iter)


MINCUT_KERNEL_OPS = KernelOps(
    part_scores=mincut_example_part_scores, add_features=mincut_example_add_features,
    argmax=mincut_example_argmax, encode=mincut_example_encode,
    project=mincut_example_project,
)


def mincut_kernel_data(node_X, edge_X, edges, node_offsets, edge_offsets, tol, max_iter):
    """Kernel data of a min-cut batch (layout in the module docstring)."""
    node_values, node_indices, node_indptr, node_width = feature_arrays(node_X)
    edge_values, edge_indices, edge_indptr, edge_width = feature_arrays(edge_X)
    return MinCutData(
            node_values, node_indices, node_indptr, node_width,
            edge_values, edge_indices, edge_indptr, edge_width, int(node_X.shape[1]),
            np.ascontiguousarray(node_offsets, dtype=np.int64),
            np.ascontiguousarray(edge_offsets, dtype=np.int64),
            np.ascontiguousarray(edges[:, 0], dtype=np.int64),
            np.ascontiguousarray(edges[:, 1], dtype=np.int64),
            float(tol), int(max_iter))
