"""Per-example numba operations of the min-cut structure (layout in :mod:`.._graph_kernels`)."""

from collections import namedtuple

import numpy as np
from numba import njit

from .._graph import feature_arrays
from .._graph_kernels import _row_add, _row_dot
from .._kernel import KernelOps
from ._maxflow import mincut_argmax
from ._projection import mincut_project

__all__ = ["MINCUT_KERNEL_OPS", "mincut_kernel_data"]


#: Kernel data of a min-cut batch (see :mod:`.._graph_kernels`).
MinCutData = namedtuple("MinCutData", (
    "node_values", "node_indices", "node_indptr", "node_width", "edge_values", "edge_indices",
    "edge_indptr", "edge_width", "n_node_features", "node_offsets", "edge_offsets", "tails",
    "heads", "projection_tol", "max_newton_iter"))


# --------------------------------------------------------------------------
# Min-cut operations
# --------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def mincut_example_part_scores(data, i, w, scale, out):
    n0, e0 = data.node_offsets[i], data.edge_offsets[i]
    n = data.node_offsets[i + 1] - n0
    for j in range(n):
        out[j] = _row_dot(data.node_values, data.node_indices, data.node_indptr,
                          data.node_width, n0 + j, w, 0, scale)
    for e in range(data.edge_offsets[i + 1] - e0):  # edge parts score -(w_edge . x_jk)
        out[n + e] = -_row_dot(data.edge_values, data.edge_indices, data.edge_indptr,
                               data.edge_width, e0 + e, w, data.n_node_features, scale)


@njit(cache=True, nogil=True)
def mincut_example_add_features(data, i, coef, scale, w):
    n0, e0 = data.node_offsets[i], data.edge_offsets[i]
    n = data.node_offsets[i + 1] - n0
    for j in range(n):
        _row_add(data.node_values, data.node_indices, data.node_indptr, data.node_width,
                 n0 + j, coef[j], w, 0, scale)
    for e in range(data.edge_offsets[i + 1] - e0):
        _row_add(data.edge_values, data.edge_indices, data.edge_indptr, data.edge_width,
                 e0 + e, -coef[n + e], w, data.n_node_features, scale)


@njit(cache=True, nogil=True, inline="always")
def _example_graph(data, i):
    """``(nodes, first edge, end of the edges)`` of example ``i``."""
    return (data.node_offsets[i + 1] - data.node_offsets[i], data.edge_offsets[i],
            data.edge_offsets[i + 1])


@njit(cache=True, nogil=True)
def mincut_example_argmax(data, i, scores, y_out):
    n, e0, e1 = _example_graph(data, i)
    tails, heads = data.tails, data.heads
    weights = np.empty(e1 - e0)
    for e in range(e1 - e0):
        weights[e] = max(-scores[n + e], 0.0)  # a positive edge score is clipped to 0
    mincut_argmax(scores[:n], weights, tails[e0:e1], heads[e0:e1], y_out)


@njit(cache=True, nogil=True)
def mincut_example_encode(data, i, y, z_out):
    n, e0, e1 = _example_graph(data, i)
    tails, heads = data.tails, data.heads
    for j in range(n):
        z_out[j] = float(y[j])
    for e in range(e1 - e0):
        z_out[n + e] = float(abs(y[tails[e0 + e]] - y[heads[e0 + e]]))


@njit(cache=True, nogil=True)
def mincut_example_project(data, i, v, out):
    n, e0, e1 = _example_graph(data, i)
    tails, heads = data.tails, data.heads
    tol, max_iter = data.projection_tol, data.max_newton_iter
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
