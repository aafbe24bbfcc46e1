"""Binary Markov networks with submodular (Potts) edges: inference by min-cut."""

from dataclasses import dataclass
from functools import partial

import numpy as np
import scipy.sparse as sp

from ._maxflow import mincut_argmax_batch
from ._projection import mincut_project_batch
from .._base import BaseStructure
from .._batch import (
    check_binary_outputs, check_example_tuples, check_feature_rows, check_part_vector,
    check_sample_weight, example_column_norms, ragged_positions)
from .._graph import (
    MAX_NEWTON_ITER, PROJECTION_TOL, check_edge_list, check_geometry, newton_projection,
    stack_graphs)
from ._kernels import MINCUT_KERNEL_OPS, mincut_kernel_data
from .._output_space import OutputSpace
from .._targets import BinaryUnitCodec

__all__ = ["MinCutBatch", "MinCutStructure"]


@dataclass(frozen=True)
class MinCutBatch:
    """A set of graphs in the form :class:`MinCutStructure`'s operations use.

    Parameters
    ----------
    node_X : ndarray of shape (n_nodes_total, n_node_features) or scipy.sparse.csr_matrix
        Node features of all graphs stacked (float64; CSR as soon as one
        input graph's node features were sparse).
    edge_X : ndarray of shape (n_edges_total, n_edge_features) or scipy.sparse.csr_matrix
        Non-negative edge features of all graphs stacked.
    edges : ndarray of int64 of shape (n_edges_total, 2)
        Endpoints of every edge, as node indices local to its own graph.
    unit_offsets : ndarray of int64 of shape (n_samples + 1,)
        Node offsets: graph ``i`` owns nodes ``unit_offsets[i]:unit_offsets[i + 1]``
        (a node is an output unit).
    edge_offsets : ndarray of int64 of shape (n_samples + 1,)
        Edge offsets: graph ``i`` owns edges ``edge_offsets[i]:edge_offsets[i + 1]``.
    part_offsets : ndarray of int64 of shape (n_samples + 1,)
        ``unit_offsets + edge_offsets``: graph ``i`` owns its ``N_i`` node
        parts then its ``E_i`` edge parts.
    n_samples : int
        Number of graphs.
    n_node_features : int
        Number of features per node.
    n_edge_features : int
        Number of features per edge.
    n_weights : int
        ``n_node_features + n_edge_features``; ``w = concat(w_node, w_edge)``.

    Attributes
    ----------
    n_features : int
        Equal to ``n_weights`` (the input width an estimator checks).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures import MinCutStructure
    >>> X = [(np.ones((3, 2)), np.array([[0, 1], [1, 2]]), np.ones((2, 1))),
    ...      (np.ones((2, 2)), np.array([[0, 1]]), np.ones((1, 1)))]
    >>> batch = MinCutStructure().make_batch(X)
    >>> batch.unit_offsets, batch.edge_offsets
    (array([0, 3, 5]), array([0, 2, 3]))
    >>> batch.part_offsets  # N_i node parts then E_i edge parts per graph
    array([0, 5, 8])
    >>> batch.n_weights  # w_node (2), w_edge (1)
    3
    """

    node_X: object
    edge_X: object
    edges: np.ndarray
    unit_offsets: np.ndarray
    edge_offsets: np.ndarray
    part_offsets: np.ndarray
    n_samples: int
    n_node_features: int
    n_edge_features: int
    n_weights: int

    ragged = {"node_X": "unit_offsets", "edge_X": "edge_offsets", "edges": "edge_offsets"}

    @property
    def n_features(self):
        """Equal to ``n_weights`` (the input width an estimator checks)."""
        return self.n_weights


class MinCutStructure(BaseStructure):
    """Binary labels on a graph with attractive Potts edges (section 2.2).

    Example ``i`` is a tuple ``(node_features, edges, edge_features)``: node
    features ``(N_i, d_node)``, an ``(E_i, 2)`` integer array of node pairs
    and **non-negative** edge features ``(E_i, d_edge)`` (dense or sparse).
    Its output is a 0/1 label per node.  The score of a labelling is
    ``sum_j (w_node . x_j) y_j - sum_jk (w_edge . x_jk) [y_j != y_k]``; the
    edge weights ``w_edge`` must be non-negative (:meth:`nonnegative_weights`
    tells a solver which), which makes the potentials submodular and the
    argmax a minimum cut.

    Parts of a graph: ``N_i`` node parts ``z_j`` then ``E_i`` edge parts
    ``z_jk`` (``= |y_j - y_k|`` for an integral labelling); edge parts score
    ``-(w_edge . x_jk)`` and have zero loss; node parts carry Hamming loss.

    See Also
    --------
    MinCutBatch : The batch of a set of graphs (part layout).
    MatchingStructure : Bipartite matchings over candidate edges.

    Notes
    -----
    How the parts operations of :class:`BaseStructure` specialise to min-cut:

    * ``part_scores`` gives node parts ``w_node . x_j`` and edge parts
      ``-(w_edge . x_jk)``; ``expected_features`` is its adjoint
      ``sum_i s_i (sum_j z_j x_j, -sum_jk z_jk x_jk)``.
    * ``encode`` gives the node labels and the cut indicators
      ``|y_j - y_k|``; ``decode`` thresholds the node parts at 1/2.
    * Hamming loss is linear in ``y'`` up to a constant:
      ``sum_j [y_j != y'_j] = sum_j y_j + sum_j (1 - 2 y_j) y'_j`` --
      ``part_losses`` returns ``1 - 2 y_j`` on node parts (0 on edge parts)
      and :meth:`loss_offsets` the constants.
    * ``argmax`` computes a minimum cut per graph (max-flow with float
      capacities) and raises ``ValueError`` for a positive edge score (a
      negative edge weight); ``loss_augmented_argmax`` runs it on
      ``scores + part_losses``.
    * :meth:`project` solves the quadratic flow problem of Appendix A,
      warm-started from the caller's ``warm_start`` dict.
    * Marginals are #P-hard: ``marginals`` is unsupported, and so is the
      entropic geometry of :meth:`feature_bounds`.
    * ``kernel_ops`` gives the same operations one graph at a time in numba
      (the argmax clips positive edge scores to 0 instead of raising, the
      projection is cold-started), for the online solvers and the generic
      batch loops.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_struct.structures.mincut import MinCutStructure
    >>> node_features = np.array([[1.0], [-1.0], [0.2]])
    >>> edges = np.array([[0, 1], [1, 2]])
    >>> structure = MinCutStructure()
    >>> batch = structure.make_batch([(node_features, edges, np.ones((2, 1)))])
    >>> structure.argmax(batch, structure.part_scores(batch, np.array([1.0, 0.5])))
    array([1, 0, 0])
    """

    # marginals of min-cut models are #P-hard and there is no dynamic program: no k-best, no samples
    kernel_ops = MINCUT_KERNEL_OPS

    # ------------------------------------------------------------------ data
    def make_batch(self, X, n_states=None):
        """Validate a list of graphs and stack their nodes and edges into a batch.

        Dense features are stacked into C-contiguous float64 arrays; node
        (edge) features are stacked as one CSR matrix as soon as one graph's
        node (edge) features are sparse.  The inputs are never modified.

        Parameters
        ----------
        X : list of tuple
            One tuple ``(node_features, edges, edge_features)`` per graph:
            ``node_features`` an array or sparse matrix of shape
            ``(N_i, n_node_features)`` with ``N_i >= 1``, ``edges`` an
            ``(E_i, 2)`` integer array of node pairs (no self-loops) and
            ``edge_features`` a non-negative array or sparse matrix of shape
            ``(E_i, n_edge_features)`` (``E_i`` may be 0).  Every graph has
            the same feature widths.
        n_states : int, default=None
            Ignored (the outputs are binary).

        Returns
        -------
        batch : MinCutBatch
            The stacked nodes and edges with their features and offsets.

        Raises
        ------
        ValueError
            If ``X`` is empty, or if a graph (named in the message) has no
            node, an edge array of the wrong shape or length, negative or
            out-of-range endpoints, a self-loop, negative or non-finite
            features, or feature widths different from the first graph.
        TypeError
            If ``X`` is a single tuple instead of a list of them, or a graph is
            not a tuple of three items or has non-numeric features or
            non-integer endpoints.
        """
        check_example_tuples(X, "MinCutStructure", {3: "(node_features, edges, edge_features)"})
        graphs = []
        for i, example in enumerate(X):
            where = f"MinCutStructure: example {i}"
            node_rows = check_feature_rows(example[0], where=f"{where} node_features")
            features = check_feature_rows(example[2], where=f"{where} edge_features",
                                          allow_empty=True)
            edges = check_edge_list(example[1], features.shape[0], where)
            if edges.size:
                if edges.max() >= node_rows.shape[0]:
                    raise ValueError(
                        f"{where}: edge endpoint {edges.max()} is out of range for "
                        f"{node_rows.shape[0]} nodes."
                    )
                if np.any(edges[:, 0] == edges[:, 1]):
                    raise ValueError(f"{where}: self-loop edges are not allowed.")
            values = features.data if sp.issparse(features) else features
            if np.any(values < 0):
                raise ValueError(
                    f"{where}: edge features must be non-negative (they keep the edge "
                    "potentials submodular)."
                )
            graphs.append((where, node_rows, edges, features))
        return self._batch(*stack_graphs(graphs))

    @staticmethod
    def _batch(node_X, edge_X, edges, unit_offsets, edge_offsets):
        return MinCutBatch(
            node_X=node_X, edge_X=edge_X, edges=np.ascontiguousarray(edges, dtype=np.int64),
            unit_offsets=unit_offsets, edge_offsets=edge_offsets,
            part_offsets=unit_offsets + edge_offsets, n_samples=len(unit_offsets) - 1,
            n_node_features=node_X.shape[1], n_edge_features=edge_X.shape[1],
            n_weights=node_X.shape[1] + edge_X.shape[1],
        )

    def check_outputs(self, batch, Y):
        return check_binary_outputs(super().check_outputs(batch, Y), batch.unit_offsets,
                                    "MinCutStructure", "node labels must be 0 or 1.")

    def nonnegative_weights(self, batch):
        """Mask of the weights constrained to be non-negative (the edge weights).

        Non-negative edge weights keep the potentials submodular, so that
        :meth:`argmax` is a minimum cut; solvers keep these weights in the
        non-negative orthant.

        Parameters
        ----------
        batch : MinCutBatch
            A batch returned by :meth:`make_batch`.

        Returns
        -------
        mask : ndarray of bool of shape (batch.n_weights,)
            ``False`` for the ``n_node_features`` node weights, ``True`` for
            the edge weights that follow them.
        """
        mask = np.zeros(batch.n_weights, dtype=bool)
        mask[batch.n_node_features:] = True
        return mask

    # -------------------------------------------------------- index helpers
    @staticmethod
    def _node_parts(batch):
        owner, position = ragged_positions(batch.unit_offsets)
        return batch.part_offsets[owner] + position

    @staticmethod
    def _edge_parts(batch):
        owner, position = ragged_positions(batch.edge_offsets)
        n_nodes = np.diff(batch.unit_offsets)
        return batch.part_offsets[owner] + n_nodes[owner] + position

    # ------------------------------------------------------- parts operations
    def part_scores(self, batch, w):
        w = check_part_vector(w, batch.n_weights, "MinCutStructure", "weights w")
        d = batch.n_node_features
        scores = np.empty(batch.part_offsets[-1])
        scores[self._node_parts(batch)] = np.asarray(batch.node_X @ w[:d]).ravel()
        scores[self._edge_parts(batch)] = -np.asarray(batch.edge_X @ w[d:]).ravel()
        return scores

    def expected_features(self, batch, z, sample_weight=None):
        z = check_part_vector(z, batch.part_offsets[-1], "MinCutStructure", "z")
        sample_weight = check_sample_weight(sample_weight, batch.n_samples, "MinCutStructure")
        z_nodes, z_edges = z[self._node_parts(batch)], z[self._edge_parts(batch)]
        if sample_weight is not None:
            z_nodes = z_nodes * np.repeat(sample_weight, np.diff(batch.unit_offsets))
            z_edges = z_edges * np.repeat(sample_weight, np.diff(batch.edge_offsets))
        return np.concatenate([np.asarray(batch.node_X.T @ z_nodes).ravel(),
                               -np.asarray(batch.edge_X.T @ z_edges).ravel()])

    def encode(self, batch, Y):
        Y = self.check_outputs(batch, Y)
        z = np.empty(batch.part_offsets[-1])
        z[self._node_parts(batch)] = Y
        owner, _ = ragged_positions(batch.edge_offsets)
        ends = batch.edges + batch.unit_offsets[owner][:, None]
        z[self._edge_parts(batch)] = np.abs(Y[ends[:, 0]] - Y[ends[:, 1]])
        return z

    def decode(self, batch, z):
        z = check_part_vector(z, batch.part_offsets[-1], "MinCutStructure", "z")
        return (z[self._node_parts(batch)] > 0.5).astype(np.int64)

    def part_losses(self, batch, Y):
        Y = self.check_outputs(batch, Y)
        losses = np.zeros(batch.part_offsets[-1])
        losses[self._node_parts(batch)] = 1.0 - 2.0 * Y
        return losses

    def loss_offsets(self, batch, Y):
        """Per-example constants ``sum_j y_j`` completing :meth:`part_losses`.

        The Hamming loss of an output ``y`` of example ``i`` is
        ``loss_offsets(batch, Y)[i]`` plus the part losses of ``i`` dotted with
        ``encode(batch, y)``.

        Parameters
        ----------
        batch : MinCutBatch
            A batch returned by :meth:`make_batch`.
        Y : array-like of int of shape (n_nodes_total,)
            True 0/1 node labels of all graphs, flat.

        Returns
        -------
        offsets : ndarray of shape (n_samples,)
            Number of nodes labelled 1 in every graph.
        """
        Y = self.check_outputs(batch, Y)
        owner, _ = ragged_positions(batch.unit_offsets)
        return np.bincount(owner, weights=Y, minlength=batch.n_samples)

    def argmax(self, batch, scores):
        scores = check_part_vector(scores, batch.part_offsets[-1], "MinCutStructure")
        edge_scores = scores[self._edge_parts(batch)]
        if edge_scores.size and edge_scores.max() > 1e-12 * max(1.0, np.abs(scores).max()):
            raise ValueError(
                "MinCutStructure: edge parts must score <= 0 (non-negative edge weights keep "
                "the potentials submodular); got a positive edge score."
            )
        scores = scores.copy()
        scores[self._edge_parts(batch)] = np.minimum(edge_scores, 0.0)
        Y = np.empty(batch.unit_offsets[-1], dtype=np.int64)
        mincut_argmax_batch(scores, batch.part_offsets, batch.unit_offsets, batch.edges,
                            batch.edge_offsets, Y)
        return Y

    def project(self, batch, v, warm_start=None):
        # warm_start keeps the node prices ("duals") and the KKT residual reached
        v = check_part_vector(v, batch.part_offsets[-1], "MinCutStructure", "v")
        return newton_projection(
            "MinCutStructure", mincut_project_batch, v,
            (batch.part_offsets, batch.unit_offsets, batch.edges, batch.edge_offsets),
            int(batch.edge_offsets[-1]), warm_start, MAX_NEWTON_ITER,
        )

    # Euclidean steps only (projections): a min-cut model's marginals are #P-hard. B_i
    # is the largest 2-norm of a feature column over the node rows or over the edge rows
    # of graph i (node and edge weights are distinct columns).
    def feature_bounds(self, batch, geometry):
        check_geometry(self, geometry)
        return np.maximum(example_column_norms(batch.node_X, batch.unit_offsets, 2),
                          example_column_norms(batch.edge_X, batch.edge_offsets, 2))

    # ---------------------------------------------------------------- outputs
    def output_space(self):
        return OutputSpace(self, codec=partial(BinaryUnitCodec, unit="node"))

    # --------------------------------------------------------------- kernels
    # The node and edge features (dense or CSR), node and edge offsets, edge endpoints,
    # and the projection's tolerance and Newton cap (layout in _graph_kernels.py).
    def kernel_data(self, batch, training=False):
        return mincut_kernel_data(batch.node_X, batch.edge_X, batch.edges, batch.unit_offsets,
                                  batch.edge_offsets, PROJECTION_TOL, MAX_NEWTON_ITER)
