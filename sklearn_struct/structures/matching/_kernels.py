"""Per-example numba operations of the matching structure (layout in :mod:`.._graph_kernels`)."""

from collections import namedtuple

import numpy as np
from numba import njit

from .._graph import feature_arrays
from .._graph_kernels import _row_add, _row_dot
from .._kernel import KernelOps
from ._projection import matching_project

__all__ = ["MATCHING_KERNEL_OPS", "matching_kernel_data", "max_weight_matching"]


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


#: Kernel data of a matching batch (see :mod:`.._graph_kernels`).
MatchingData = namedtuple("MatchingData", (
    "values", "indices", "indptr", "width", "edge_offsets", "sources", "targets", "node_counts",
    "projection_tol", "max_newton_iter"))


# --------------------------------------------------------------------------
# Matching operations
# --------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def matching_example_part_scores(data, i, w, scale, out):
    lo = data.edge_offsets[i]
    for e in range(out.shape[0]):
        out[e] = _row_dot(data.values, data.indices, data.indptr, data.width, lo + e, w, 0,
                          scale)


@njit(cache=True, nogil=True)
def matching_example_add_features(data, i, coef, scale, w):
    lo = data.edge_offsets[i]
    for e in range(coef.shape[0]):
        _row_add(data.values, data.indices, data.indptr, data.width, lo + e, coef[e], w, 0,
                 scale)


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
