"""Helpers shared by the graph structures (bipartite matchings and min-cuts).

Both structures take graphs as edge lists with feature rows, and both project
onto their polytopes with a semismooth Newton method on a small dual
(:mod:`._flow_kernels`): the tolerance rule, the iteration cap, the warm
start of the duals and the convergence warning are the same, and live here.
Nothing here knows about a particular structure.
"""

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from ._base import UnsupportedOperation
from ._batch import check_same_width, stack_rows

__all__ = [
    "MAX_NEWTON_ITER",
    "PROJECTION_TOL",
    "check_edge_list",
    "check_geometry",
    "feature_arrays",
    "newton_projection",
    "projection_tolerance",
    "stack_graphs",
]

#: KKT residual the projections reach, relative to max(1, max |v|) (see
#: :func:`newton_projection`).
PROJECTION_TOL = 1e-12
#: Cap on the Newton iterations of one projection (a handful are typical).
MAX_NEWTON_ITER = 500


def projection_tolerance(v):
    """The KKT residual a projection of ``v`` must reach: ``PROJECTION_TOL * max(1, max |v|)``."""
    return PROJECTION_TOL * max(1.0, float(np.abs(v).max(initial=0.0)))


def newton_projection(owner, kernel, v, graph, n_duals, warm_start, max_iter):
    """Run a semismooth Newton projection kernel over a batch of graphs.

    ``kernel(v, *graph, z, duals, tol, max_iter)`` fills the projection ``z``
    and the dual variables ``duals`` and returns its KKT residual; ``tol`` is
    :func:`projection_tolerance` of ``v``.  The duals start from
    ``warm_start["duals"]`` when the caller's dict holds duals of the right
    size (zeros otherwise: a cold start); the final duals are stored back
    there and the KKT residual in ``warm_start["residual"]``.  Nothing else
    is kept anywhere.  Warns with a ConvergenceWarning when the residual
    stayed above ``tol``.

    Returns
    -------
    z : ndarray
        The projection of ``v``, the same shape.
    """
    z = np.empty_like(v)
    duals = None if warm_start is None else warm_start.get("duals")
    if not isinstance(duals, np.ndarray) or duals.shape != (n_duals,) or \
            duals.dtype != np.float64 or not duals.flags.writeable:
        duals = np.zeros(n_duals)
    tol = projection_tolerance(v)
    residual = float(kernel(v, *graph, z, duals, tol, max_iter))
    if residual > tol:
        warnings.warn(
            f"{owner}: the projection stopped after {max_iter} Newton iterations at "
            f"KKT residual {residual:.2e} > {tol:.2e}.", ConvergenceWarning, stacklevel=3,
        )
    if warm_start is not None:
        warm_start["duals"] = duals
        warm_start["residual"] = residual
    return z


def check_edge_list(edges, n_edges, where):
    """Validate an ``(n_edges, 2)`` array of non-negative integer node indices."""
    edges = np.asarray(edges)
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise ValueError(
            f"{where}: edges must be an (n_edges, 2) integer array of (source, target) "
            f"node indices, got shape {edges.shape}."
        )
    if edges.shape[0] != n_edges:
        raise ValueError(
            f"{where}: {edges.shape[0]} edges but {n_edges} rows of edge features."
        )
    if edges.size and not np.issubdtype(edges.dtype, np.integer):
        if not (np.issubdtype(edges.dtype, np.floating) and np.all(edges == np.round(edges))):
            raise TypeError(f"{where}: edge endpoints must be integers, got dtype {edges.dtype}.")
    edges = edges.astype(np.int64)
    if edges.size and edges.min() < 0:
        raise ValueError(f"{where}: edge endpoints must be non-negative node indices.")
    return edges


def stack_graphs(graphs):
    """Stack validated graphs, each ``(where, node_rows, edges, edge_rows)``.

    Refuses node or edge features of another width than graph 0's (naming the graph by
    ``where``), then returns ``(node_X, edge_X, edges, node_offsets, edge_offsets)``.
    """
    for where, node_rows, _, edge_rows in graphs[1:]:
        check_same_width(node_rows, graphs[0][1], where, "node features")
        check_same_width(edge_rows, graphs[0][3], where, "edge features")
    node_X, node_offsets = stack_rows([graph[1] for graph in graphs])
    edge_X, edge_offsets = stack_rows([graph[3] for graph in graphs])
    edges = np.concatenate([graph[2] for graph in graphs]).reshape(-1, 2)
    return node_X, edge_X, edges, node_offsets, edge_offsets


def feature_arrays(X):
    """Feature rows as the arrays the graph kernels read.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features) or scipy.sparse.csr_matrix
        Stacked feature rows of a batch.

    Returns
    -------
    values, indices, indptr : ndarray
        The CSR arrays of ``X``; for dense ``X``, its C-contiguous values
        flattened, with empty ``indices`` and ``indptr``.
    dense_width : int
        ``n_features`` for dense ``X``, 0 for CSR (and for dense ``X``
        without columns, given as an empty CSR matrix).
    """
    if sp.issparse(X):
        return X.data, X.indices, X.indptr, 0
    empty = np.zeros(0, dtype=np.int32)
    if X.shape[1] == 0:
        return np.zeros(0), empty, np.zeros(X.shape[0] + 1, dtype=np.int32), 0
    return np.ascontiguousarray(X, dtype=np.float64).reshape(-1), empty, empty, int(X.shape[1])


def check_geometry(structure, geometry):
    """Accept the Euclidean geometry of ``feature_bounds``; graph structures have no other.

    Raises
    ------
    UnsupportedOperation
        For ``geometry="entropic"`` (matchings and min-cuts have no marginals).
    ValueError
        For an unknown geometry.
    """
    if geometry == "euclidean":
        return
    if geometry == "entropic":
        raise UnsupportedOperation(
            f"{type(structure).__name__} cannot compute 'feature_bounds' for "
            "geometry='entropic' (its outputs have no marginals); it has Euclidean bounds "
            "(geometry='euclidean')."
        )
    raise ValueError(
        f"{type(structure).__name__}: geometry must be 'euclidean' or 'entropic', "
        f"got {geometry!r}."
    )
